"""The estimator on robots with URDF mimic joints (issue 10) against a pinocchio ground truth.

Mimic joints are coupled coordinates: the estimator's joints are the independent ones and the
effort of a driving joint is the actuator effort ``τ_driver + Σ multiplier · τ_mimic``. The
oracle's coupling ``G`` (and offsets) is read from the URDF text with ElementTree, independently of
the package's parser; the truth comes from pinocchio's ``rnea`` on the full tree
(``groundtruth.GroundTruth``) at states that satisfy the coupling, ``τ_y = Gᵀ τ``.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from groundtruth import GroundTruth
from oracle import robots_dir

from rbd_estimator import SensorConfig, estimator_for
from rbd_estimator.estimation.loops import LoopEstimator

TALOS_FULL = "talos_data/robots/talos_full_v2.urdf"
PANDA = "panda_description/urdf/panda.urdf"


def _xml(rel):
    with open(os.path.join(robots_dir(), rel), encoding="utf-8") as fh:
        return fh.read()


def _compose(xml):
    """Mimic chains resolved by hand: joint → (driver, multiplier, offset)."""
    raw = {}
    for j in ET.fromstring(xml).iter("joint"):
        m = j.find("mimic")
        if m is not None:
            raw[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1.0)), float(m.get("offset", 0.0)))

    def resolve(name):
        if name not in raw:
            return name, 1.0, 0.0
        d, m1, o1 = raw[name]
        root, m2, o2 = resolve(d)                  # q = m1 (m2 q_root + o2) + o1
        return root, m1 * m2, m1 * o2 + o1
    return {n: resolve(n) for n in raw}


def coupling(xml, joints, independent):
    rel = _compose(xml)
    G, off = np.zeros((len(joints), len(independent))), np.zeros(len(joints))
    for r, name in enumerate(joints):
        d, m, o = rel.get(name, (name, 1.0, 0.0))
        G[r, independent.index(d)] = m
        off[r] = o
    return G, off


class MimicTruth(GroundTruth):
    def __init__(self, xml, est: LoopEstimator):
        super().__init__(xml, est.estimator)
        self.indep = list(est.joint_names)
        self.G, self.off = coupling(xml, list(self.model.joint_names), self.indep)

    def sample(self, rng, wrench_scale=50.0):
        ny = len(self.indep)
        y, dy, ddy = rng.uniform(-1.2, 1.2, ny), rng.normal(size=ny), rng.normal(size=ny)
        qj, vj, aj = self.G @ y + self.off, self.G @ dy, self.G @ ddy
        fb = self.cfg.floating_base
        quat = rng.normal(size=4)
        q_base = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
        v_base = rng.normal(size=6)
        q, v, a = self._to_pin(self.pm, q_base, v_base, np.zeros(6), qj, vj, aj)
        wrenches = self._random_wrenches(rng, wrench_scale)
        a_base = np.zeros(6)
        if fb:
            a_base = self._consistent_base_acceleration(q, v, a, wrenches)
            a[:6] = a_base
        tau_full = pin.rnea(self.pm, self.pd, q, v, a, self._fext(self.pm, wrenches))
        tau_q = np.array([tau_full[self.pm.idx_vs[self.pm.getJointId(n)]] for n in self.model.joint_names])
        inputs = dict(q=y, dq=dy, ddq=ddy)
        if self.cfg.imu is not None:
            inputs["imu"] = self._imu(q, v, a)
        if self.cfg.ft_sensors:
            inputs["ft"] = self._ft(q_base, v_base, a_base, qj, vj, aj, wrenches)
        return inputs, dict(tau=self.G.T @ tau_q, wrenches=np.array(wrenches).reshape(-1, 6))


def talos_config():
    ft = {"l_wrist": "wrist_left_ft_joint", "r_wrist": "wrist_right_ft_joint",
          "l_ankle": "leg_left_sole_fix_joint", "r_ankle": "leg_right_sole_fix_joint"}
    return SensorConfig.from_dict(dict(
        floating_base=True, imu=dict(frame="imu_link"), ft_sensors=list(ft),
        ft={k: dict(joint=j) for k, j in ft.items()}, contacts=["l_foot", "r_foot"],
        contact=dict(l_foot=dict(frame="left_sole_link", type="full_wrench"),
                     r_foot=dict(frame="right_sole_link", type="full_wrench"))))


@pytest.mark.parametrize("rel, config", [(TALOS_FULL, talos_config),
                                         (PANDA, lambda: SensorConfig.from_dict(dict(floating_base=False)))])
def test_mimic_robot_estimates_actuator_efforts_and_wrenches(rel, config):
    xml = _xml(rel)
    est = estimator_for(xml, config())
    assert isinstance(est, LoopEstimator)
    mimics = {m.joint for m in est.model.mimic_joints}
    assert mimics and not mimics & set(est.joint_names)
    gt = MimicTruth(xml, est)
    rng = np.random.default_rng(101)
    worst_tau = worst_w = 0.0
    for _ in range(20):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        scale = max(1.0, np.max(np.abs(truth["tau"])))
        worst_tau = max(worst_tau, np.max(np.abs(r.tau - truth["tau"])) / scale)
        if len(truth["wrenches"]):
            worst_w = max(worst_w, np.max(np.abs(r.contact_wrenches - truth["wrenches"])) /
                          max(1.0, np.max(np.abs(truth["wrenches"]))))
    assert worst_tau <= 1e-9, f"actuator efforts off by {worst_tau:.3g} (relative)"
    assert worst_w <= 1e-9, f"contact wrenches off by {worst_w:.3g} (relative)"


def test_fixed_base_panda_matches_pinocchio_mimic_model():
    xml = _xml(PANDA)
    est = estimator_for(xml, SensorConfig.from_dict(dict(floating_base=False)))
    pm = pin.buildModelFromXML(xml, mimic=True)
    pd = pm.createData()
    idx = [pm.idx_vs[pm.getJointId(j)] for j in est.joint_names]
    rng = np.random.default_rng(7)
    for _ in range(10):
        y, dy, ddy = (rng.normal(size=pm.nv) for _ in range(3))
        r = est.estimate(y[idx], dy[idx], ddy[idx])
        ref = pin.rnea(pm, pd, y, dy, ddy)[idx]
        assert np.max(np.abs(r.tau - ref)) <= 1e-9 * max(1.0, np.max(np.abs(ref)))


@pytest.mark.parametrize("rel", [TALOS_FULL, PANDA])
def test_mimic_layout_dynamics_match_pinocchio_full_tree_projected(rel):
    """rnea, crba and aba in the independent (pinocchio mimic) layout against pinocchio on the full
    tree projected with the URDF text's coupling: ``τ_y = Gᵀ τ(γ(y), G ẏ, G ÿ)``, ``H_y = Gᵀ H G``,
    ``ÿ = H_y⁻¹ (τ_y − Gᵀ h)`` — pinocchio's mimic model, for Talos full too, whose mimic model
    pinocchio itself refuses to build. Floating base, 5 random states, ≤ 1e-9 relative."""
    import warnings
    from rbd_estimator import RobotModel, aba, crba, rnea
    from rbd_estimator.model.mimic import mimic_map
    xml = _xml(rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                   # CAD inertias: tested in test_real_urdfs
        model = RobotModel.from_urdf(xml, floating_base=True)
    indep = list(mimic_map(model).joint_names)
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    pd = pm.createData()
    full = [pm.names[i] for i in range(2, pm.njoints)]
    assert all(pm.joints[i].nq == pm.joints[i].nv == 1 for i in range(2, pm.njoints))
    assert len(indep) < len(full)                        # the robot has mimic joints
    G, off = coupling(xml, full, indep)
    Gb = np.zeros((pm.nv, 6 + len(indep)))
    Gb[:6, :6] = np.eye(6)
    Gb[6:, 6:] = G
    rng = np.random.default_rng(3)
    for _ in range(5):
        y, dy, ddy = rng.uniform(-1.0, 1.0, len(indep)), rng.normal(size=len(indep)), rng.normal(size=len(indep))
        quat = rng.normal(size=4)
        base = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
        vb, ab = rng.normal(size=6), rng.normal(size=6)
        q_pin, q = np.concatenate([base, G @ y + off]), np.concatenate([base, y])
        v, a = np.concatenate([vb, dy]), np.concatenate([ab, ddy])
        tau_ref = Gb.T @ pin.rnea(pm, pd, q_pin, Gb @ v, Gb @ a)
        H_full = pin.crba(pm, pd, q_pin).copy()
        H_full = np.triu(H_full) + np.triu(H_full, 1).T
        H_ref = Gb.T @ H_full @ Gb
        h_ref = Gb.T @ pin.rnea(pm, pd, q_pin, Gb @ v, np.zeros(pm.nv))
        tau = rnea(model, q, v, a)
        assert np.max(np.abs(tau - tau_ref)) <= 1e-9 * np.max(np.abs(tau_ref))
        H = crba(model, q)
        assert np.max(np.abs(H - H_ref)) <= 1e-9 * np.max(np.abs(H_ref))
        acc = aba(model, q, v, tau_ref)
        acc_ref = np.linalg.solve(H_ref, tau_ref - h_ref)
        assert np.max(np.abs(acc - acc_ref)) <= 1e-9 * max(1.0, np.max(np.abs(acc_ref)))
