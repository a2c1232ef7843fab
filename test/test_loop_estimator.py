"""The estimator on robots with actuation loops (LoopEstimator) against a pinocchio ground truth.

The truth is built on the spanning tree *with* the rotors (the URDF text plus the rotor links and
joints, ``loops_oracle.with_extra_bodies``): the independent state ``(y, ẏ, ÿ)`` is mapped to the
spanning state with the oracle's ``G`` — the null-space basis of the oracle's constraint rows
``K`` (written from the declarations, ``LoopPair.constraint_rows``), identity on the independent
joints — and the actuator efforts are ``τ_y = Gᵀ τ_q`` with ``τ_q`` from pinocchio's ``rnea``
(``K G = 0``, so any loop-closure force drops out). Contact wrenches, the consistent base
acceleration, IMU and force-torque readings come from ``groundtruth.GroundTruth`` on that model.
"""
from __future__ import annotations

import os

import numpy as np
import pinocchio as pin
import pytest
from groundtruth import GroundTruth
from loops_oracle import LoopPair, with_extra_bodies

from rbd_estimator import ConfigError
from rbd_estimator.dynamics.ce_rnea import ce_rnea
from rbd_estimator.estimation import Estimator, SensorConfig
from rbd_estimator.estimation.loops import LoopEstimator
from rbd_estimator.model.loops import FourBar, LoopConfig

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FT = ["l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor",
      "l_arm_ft_sensor", "r_arm_ft_sensor"]
N_STATES = 20


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def humanoid_config(**over):
    """The sensor part of config/humanoid.yaml: IMU on imu_link, six FT sensors, two full-wrench feet."""
    params = dict(floating_base=True, imu=dict(frame="imu_link"), ft_sensors=FT,
                  contacts=["l_foot", "r_foot"],
                  contact=dict(l_foot=dict(frame="l_sole", type="full_wrench"),
                               r_foot=dict(frame="r_sole", type="full_wrench")))
    params.update(over)
    return SensorConfig.from_dict(params)


XML = _read(os.path.join(REPO, "urdf", "humanoid.urdf"))
LOOPS = LoopConfig.from_yaml(os.path.join(REPO, "config", "humanoid_loops.yaml"))


class LoopTruth(GroundTruth):
    """:class:`GroundTruth` on the spanning tree with rotors; states satisfy the loops."""

    def __init__(self, xml, loops, est: LoopEstimator):
        super().__init__(with_extra_bodies(xml, loops.bodies), est.estimator)
        self.indep = est.joint_names
        pair = LoopPair(xml, loops, floating_base=True)             # the oracle's constraint rows K
        m = pair.tree.model
        K, _ = pair.constraint_rows(pair.tree.q_reference, np.zeros(m.nv))
        col = {n: int(m.v_idx[m.body_joint_names.index(n)]) for n in m.joint_names}
        tree_cols = [col[n] for n in self.model.joint_names]        # the tree estimator's joint order
        ind = [col[n] for n in self.indep]
        dep = [c for c in tree_cols if c not in ind]
        Kd, Ki = K[:, dep], K[:, ind]
        assert Kd.shape[0] == Kd.shape[1] and np.linalg.matrix_rank(Kd) == len(dep)
        G = np.zeros((m.nv, len(ind)))
        G[ind, np.arange(len(ind))] = 1.0
        G[dep] = -np.linalg.solve(Kd, Ki)                            # K G = 0
        self.G = G[tree_cols]                                        # rows: tree joints; cols: y

    def sample(self, rng, wrench_scale=50.0):
        cfg, ny = self.cfg, len(self.indep)
        y, dy, ddy = rng.uniform(-1.2, 1.2, ny), rng.normal(size=ny), rng.normal(size=ny)
        qj, vj, aj = self.G @ y, self.G @ dy, self.G @ ddy
        quat = rng.normal(size=4)
        q_base = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
        v_base = rng.normal(size=6)
        q, v, a = self._to_pin(self.pm, q_base, v_base, np.zeros(6), qj, vj, aj)
        wrenches = self._random_wrenches(rng, wrench_scale)
        a_base = self._consistent_base_acceleration(q, v, a, wrenches)
        a[:6] = a_base
        tau_full = pin.rnea(self.pm, self.pd, q, v, a, self._fext(self.pm, wrenches))
        assert np.max(np.abs(tau_full[:6])) < 1e-8 * max(1.0, np.max(np.abs(tau_full)))
        tau_q = np.array([tau_full[self.pm.idx_vs[self.pm.getJointId(n)]] for n in self.model.joint_names])
        inputs = dict(q=y, dq=dy, ddq=ddy, imu=self._imu(q, v, a),
                      ft=self._ft(q_base, v_base, a_base, qj, vj, aj, wrenches))
        truth = dict(tau=self.G.T @ tau_q, tau_q=tau_q, wrenches=np.array(wrenches).reshape(-1, 6),
                     base=(q_base, v_base, a_base))
        return inputs, truth


@pytest.fixture(scope="module")
def humanoid():
    est = LoopEstimator.from_urdf(XML, humanoid_config(), LOOPS)
    return est, LoopTruth(XML, LOOPS, est)


def test_rotor_humanoid_with_ft_sensors_matches_truth(humanoid):
    est, gt = humanoid
    assert est.joint_names == est.tree.independent_joint_names == est.tree.urdf_model.joint_names
    assert est.plan.redundant and len(est.tree_joint_names) == len(est.joint_names) + len(LOOPS.bodies)
    assert np.array_equal(est.G, gt.G) or np.max(np.abs(est.G - gt.G)) < 1e-14
    rng = np.random.default_rng(51)
    worst_tau = worst_w = 0.0
    for _ in range(N_STATES):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        assert r.tau.shape == (len(est.joint_names),)
        worst_tau = max(worst_tau, np.max(np.abs(r.tau - truth["tau"])))
        worst_w = max(worst_w, np.max(np.abs(r.contact_wrenches - truth["wrenches"])))
        assert np.max(np.abs(r.contact(est.contact_names[0]) - truth["wrenches"][0])) <= 1e-8
    assert worst_tau <= 1e-8, f"actuator efforts off by {worst_tau:.3g} N·m"
    assert worst_w <= 1e-8, f"contact wrenches off by {worst_w:.3g}"


def test_actuator_efforts_equal_constraint_embedding_rnea(humanoid):
    """The same efforts from Chignoli's CE-RNEA on the cluster tree with the estimated wrenches."""
    est, gt = humanoid
    rng = np.random.default_rng(52)
    for _ in range(3):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        q_base, v_base, a_base = truth["base"]
        y = np.concatenate([q_base, inputs["q"]])
        dy, ddy = np.concatenate([v_base, inputs["dq"]]), np.concatenate([a_base, inputs["ddq"]])
        f = {fr: w.copy() for fr, w in zip(est.contact_frames, r.contact_wrenches)}
        tau = ce_rnea(est.tree, y, dy, ddy, f)
        assert np.max(np.abs(tau[:6])) <= 1e-7
        assert np.max(np.abs(tau[6:] - r.tau)) <= 1e-8


def test_tree_estimator_without_rotors_gets_actuator_efforts_wrong(humanoid):
    """Same data, URDF alone (no rotors): contact wrenches still right (FT sensors), efforts not."""
    est, gt = humanoid
    plain = Estimator.from_urdf(XML, humanoid_config())
    assert plain.joint_names == est.joint_names
    rng = np.random.default_rng(53)
    worst = 0.0
    for _ in range(5):
        inputs, truth = gt.sample(rng)
        worst = max(worst, np.max(np.abs(plain.estimate(**inputs).tau - truth["tau"])))
    assert worst > 0.1, f"the rotors' inertia should show (worst difference {worst:.3g} N·m)"


def test_ft_sensor_inside_a_cluster_is_refused():
    """A knee rotor carried by the hip-pitch link: its cluster takes in l_thigh, the child of the
    l_leg force-torque joint, so the loop closes across the sensor."""
    bodies = tuple(b if b.name != "l_knee_rotor" else type(b)(
        b.name, "l_hip_pitch_link", b.axis, b.mass, np.array([0.0, 0.05, -0.1]), b.rpy, b.com, b.inertia)
        for b in LOOPS.bodies)
    loops = LoopConfig(bodies=bodies, loops=LOOPS.loops)
    with pytest.raises(ConfigError, match=r"l_leg_ft_sensor.*l_knee_drive|l_knee.*l_leg_ft_sensor") as exc:
        LoopEstimator.from_urdf(XML, humanoid_config(), loops)
    assert "l_leg_ft_sensor" in str(exc.value)
    # without that sensor the same loops are accepted
    est = LoopEstimator.from_urdf(XML, humanoid_config(ft_sensors=[s for s in FT if s != "l_leg_ft_sensor"]), loops)
    assert est.joint_names == est.tree.urdf_model.joint_names


def test_joint_torque_sensor_on_a_loop_joint_is_refused():
    with pytest.raises(ConfigError, match="l_knee"):
        LoopEstimator.from_urdf(XML, humanoid_config(joint_torque_sensors=["l_knee"]), LOOPS)


def test_four_bar_is_refused_with_a_clear_error():
    from loop_mechanisms import four_bar_knee
    xml, loops = four_bar_knee()
    cfg = SensorConfig.from_dict(dict(floating_base=False))
    lc = LoopConfig.from_dict(loops)
    assert any(isinstance(lp, FourBar) for lp in lc.loops)
    with pytest.raises(ConfigError, match="four_bar.*every tick"):
        LoopEstimator.from_urdf(xml, cfg, lc)


def test_bad_input_shape_names_the_input(humanoid):
    est, _ = humanoid
    n = len(est.joint_names)
    with pytest.raises(ValueError, match="dq"):
        est.estimate(np.zeros(n), np.zeros(n + 1), np.zeros(n))
