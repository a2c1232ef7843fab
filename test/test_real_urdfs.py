"""Every robot description of example-robot-data that pinocchio loads, loads here (issue 10).

Physically doubtful inertias load with one ModelWarning per link (strict=True refuses them with the
messages of before), mimic joints are coupled coordinates, and rnea / crba / aba agree with
pinocchio — mimic models with pinocchio's mimic model where pinocchio builds one.
"""
from __future__ import annotations

import glob
import os
import re
import warnings

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from oracle import Pair, robots_dir  # noqa: E402
from rbd_estimator import DynamicsData, RobotModel, aba, crba, rnea  # noqa: E402
from rbd_estimator.errors import ModelError  # noqa: E402
from rbd_estimator.errors import ModelWarning  # noqa: E402
from rbd_estimator.model.mimic import mimic_map  # noqa: E402

TOL = 1e-9


def _urdfs():
    root = robots_dir()
    files = sorted(glob.glob(os.path.join(root, "*", "urdf", "*.urdf")) +
                   glob.glob(os.path.join(root, "*", "robots", "*.urdf")))
    loadable = []
    for f in files:
        try:
            pin.buildModelFromUrdf(f)
        except Exception:   # noqa: BLE001 — pinocchio's verdict decides what we must load
            continue
        loadable.append(os.path.relpath(f, root))
    return files, loadable


FILES, LOADABLE = _urdfs()


def _read(rel):
    with open(os.path.join(robots_dir(), rel), encoding="utf-8") as fh:
        return fh.read()


def _sym(M):
    M = np.asarray(M)
    return np.triu(M) + np.triu(M, 1).T


def _rel(x, ref):
    x, ref = np.asarray(x), np.asarray(ref)
    assert x.shape == ref.shape
    if not ref.size:
        return 0.0
    return float(np.max(np.abs(x - ref)) / max(1e-12, float(np.max(np.abs(ref)))))


def _check_tree(pair: Pair, rng, n=5) -> float:
    """Largest relative error of rnea, crba, aba against pinocchio on ``n`` random states
    (aba only where the joint-space inertia is invertible)."""
    m, pm, pd = pair.model, pair.pin_model, pair.pin_data
    d = DynamicsData(m)
    worst = 0.0
    for _ in range(n):
        q, v, a = pair.random_state(rng)
        qp, vp, ap = pair.q_to_pin(q), pair.v_to_pin(v), pair.v_to_pin(a)
        worst = max(worst, _rel(rnea(m, q, v, a, data=d), pair.v_from_pin(pin.rnea(pm, pd, qp, vp, ap))))
        M = pair.M_from_pin(_sym(pin.crba(pm, pd, qp)))
        worst = max(worst, _rel(crba(m, q, data=d), M))
        if M.size and np.linalg.cond(M) < 1e10:
            tau = rng.normal(size=m.nv)
            worst = max(worst, _rel(aba(m, q, v, tau, data=d),
                                    pair.v_from_pin(pin.aba(pm, pd, qp, vp, pair.v_to_pin(tau)))))
    return worst


def _check_mimic(model: RobotModel, xml: str, floating_base: bool, rng, n=5) -> float | None:
    """Against pinocchio's mimic model (independent layout); None where pinocchio cannot build one."""
    mm = mimic_map(model)
    try:
        pm = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer(), mimic=True) if floating_base
              else pin.buildModelFromXML(xml, mimic=True))
    except Exception:   # noqa: BLE001 — e.g. 'The parent joint of the mimic joint is not in the kinematic tree'
        return None
    pd = pm.createData()
    assert pm.nv == mm.nv
    base_q, base_v = (7, 6) if floating_base else (0, 0)
    qmap = np.r_[np.arange(base_q), [pm.idx_qs[pm.getJointId(j)] for j in mm.joint_names]].astype(int)
    vmap = np.r_[np.arange(base_v), [pm.idx_vs[pm.getJointId(j)] for j in mm.joint_names]].astype(int)
    unb = [(base_q + k, pm.idx_qs[pm.getJointId(j)]) for k, j in enumerate(mm.joint_names)
           if pm.nqs[pm.getJointId(j)] == 2]
    d = DynamicsData(model)
    worst = 0.0
    for _ in range(n):
        y = mm.y(model.random_configuration(rng))
        dy, ddy, tau = (rng.normal(size=mm.nv) for _ in range(3))
        yp = np.zeros(pm.nq)
        yp[qmap] = y
        for k, kp in unb:
            yp[kp:kp + 2] = np.cos(y[k]), np.sin(y[k])
        to_p = np.zeros(pm.nv)

        def P(x):
            out = to_p.copy()
            out[vmap] = x
            return out
        worst = max(worst, _rel(rnea(model, y, dy, ddy, data=d), pin.rnea(pm, pd, yp, P(dy), P(ddy))[vmap]))
        M = _sym(pin.crba(pm, pd, yp))[np.ix_(vmap, vmap)]
        worst = max(worst, _rel(crba(model, y, data=d), M))
        if M.size and np.linalg.cond(M) < 1e10:   # pinocchio's aba has no mimic joints: M⁻¹ (τ − h) from its crba and rnea
            h = pin.rnea(pm, pd, yp, P(dy), to_p)[vmap]
            worst = max(worst, _rel(aba(model, y, dy, tau, data=d), np.linalg.solve(M, tau - h)))
    return worst


def test_every_urdf_pinocchio_loads_loads_and_matches_pinocchio():
    rng = np.random.default_rng(10)
    loaded, warned, mimic_checked, failures = 0, {}, [], []
    for rel in LOADABLE:
        xml = _read(rel)
        ok = True
        for fb in (True, False):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    pair = Pair(xml, floating_base=fb)
                except ModelError as exc:
                    failures.append(f"{rel} ({'floating' if fb else 'fixed'}): {exc}")
                    ok = False
                    continue
            model_warnings = [str(w.message) for w in caught if issubclass(w.category, ModelWarning)]
            warned.setdefault(rel, model_warnings)
            err = _check_tree(pair, rng)
            if not err <= TOL:
                failures.append(f"{rel} ({'floating' if fb else 'fixed'}): tree dynamics off by {err:.2e}")
            if pair.model.mimic_joints:
                err = _check_mimic(pair.model, xml, fb, rng)
                if err is not None:
                    mimic_checked.append(rel)
                    if not err <= TOL:
                        failures.append(f"{rel} ({'floating' if fb else 'fixed'}): mimic dynamics off by {err:.2e}")
        loaded += ok
    print(f"\n{loaded} of {len(LOADABLE)} URDFs that pinocchio loads load here "
          f"({len(FILES)} in example-robot-data); {sum(bool(w) for w in warned.values())} with model warnings; "
          f"mimic models compared with pinocchio's: {sorted(set(mimic_checked))}")
    assert not failures, "\n".join(failures)
    assert len(LOADABLE) >= 60
    # known defects are reported once per link, naming the link and the size of the defect
    for rel, link in [("go2_description/urdf/go2.urdf", None),
                      ("go1_description/urdf/go1.urdf", "'base'"),
                      ("pr2_description/urdf/pr2.urdf", "'sensor_mount_link'"),
                      ("bolt_description/robots/bolt.urdf", "'FL_FOOT'"),
                      ("anymal_c_simple_description/urdf/anymal.urdf", "'depth_camera_front_camera'")]:
        msgs = warned[rel]
        if link is None:
            assert not msgs, msgs
        else:
            mine = [w for w in msgs if link in w]
            assert len(mine) == 1, msgs
            assert "kg·m²" in mine[0] or "zero mass" in mine[0]
    assert {"panda_description/urdf/panda.urdf", "baxter_description/urdf/baxter.urdf"} <= set(mimic_checked)


# The refusals of before (messages as they were), each still given by strict=True.
STRICT = {
    "go1_description/urdf/go1.urdf": "link 'base' has principal moments",
    "pr2_description/urdf/pr2.urdf": "link 'sensor_mount_link' has principal moments",
    "tiago_description/robots/tiago.urdf": "link 'base_antenna_left_link' has an inertia tensor that is not positive",
    "bolt_description/robots/bolt.urdf": "link 'FL_FOOT' has zero mass but a non-zero rotational inertia",
    "allegro_hand_description/urdf/allegro_left_hand.urdf": "violate the triangle inequality (I1 + I2 >= I3): "
                                                            "not a physical rigid body",
}


@pytest.mark.parametrize("rel", sorted(STRICT))
def test_strict_refuses_what_it_refused_before(rel):
    xml = _read(rel)
    with pytest.raises(ModelError) as exc:
        RobotModel.from_urdf(xml, floating_base=True, strict=True)
    assert STRICT[rel] in str(exc.value)
    assert "loaded as given" not in str(exc.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelWarning)   # the default mode warns instead
        with pytest.raises(ModelWarning, match=re.escape(STRICT[rel])):
            RobotModel.from_urdf(xml, floating_base=True)


def test_round_off_is_silent_and_a_warning_is_issued_once_per_link():
    xml = _urdf_with_inertias({"a": "1e-3 0 0 1e-3 0 1e-3",            # fine
                               "b": "1e-3 0 0 1e-3 0 -1e-21",          # round-off below zero: silent
                               "c": "1e-3 0 0 1e-3 0 5e-3"})           # triangle inequality broken
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        RobotModel.from_urdf(xml)
    msgs = [str(w.message) for w in caught if issubclass(w.category, ModelWarning)]
    assert len(msgs) == 1 and "link 'c'" in msgs[0] and "triangle inequality" in msgs[0], msgs


def test_what_makes_numbers_meaningless_is_still_refused():
    for inertia, mass, match in [("1e-3 0 0 1e-3 0 nan", "1", "non-finite inertia"),
                                 ("1e-3 0 0 1e-3 0 1e-3", "-1", "invalid mass")]:
        with pytest.raises(ModelError, match=match):
            RobotModel.from_urdf(_urdf_with_inertias({"a": inertia}, mass=mass))


def _urdf_with_inertias(links: dict, mass="1") -> str:
    parts, parent = ['<robot name="r"><link name="base"/>'], "base"
    for name, inertia in links.items():
        ixx, ixy, ixz, iyy, iyz, izz = inertia.split()
        parts.append(f'<link name="{name}"><inertial><mass value="{mass}"/>'
                     f'<inertia ixx="{ixx}" ixy="{ixy}" ixz="{ixz}" iyy="{iyy}" iyz="{iyz}" izz="{izz}"/>'
                     f'</inertial></link><joint name="j_{name}" type="revolute"><parent link="{parent}"/>'
                     f'<child link="{name}"/><axis xyz="0 0 1"/></joint>')
        parent = name
    return "".join(parts) + "</robot>"
