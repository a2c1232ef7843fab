"""Hybrid dynamics through Nori's one system (``dynamics.nori_system.hybrid_dynamics``) against
pinocchio: each DoF's acceleration or torque given, the other computed.

Both the readable reference and the fast path, ``estimation.hybrid.HybridDynamics`` (the split as a
configuration of the estimator's layout, plan and compiled tick; ``SparseForwardDynamics`` is its
all-unknown split), are held to the same oracle.

Oracle: pinocchio's ``crba`` and ``rnea`` on the reduced system. With ``K`` the DoF of known
acceleration and ``U`` the others, ``M_UU q̈_U = τ_U − rnea(q, q̇, q̈⁰)_U`` with ``q̈⁰`` the known
accelerations and zeros elsewhere, then ``τ_K = rnea(q, q̇, q̈)_K``. Random splits on iCub, Talos
and Go2, fixed and floating base (the base's six DoF split too).
"""
from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest

from oracle import Pair, rel_err, urdf_xml
from rbd_estimator import robots
from rbd_estimator.dynamics import aba, rnea
from rbd_estimator.dynamics.nori_system import hybrid_dynamics, nori_system
from rbd_estimator.estimation.forward import SparseForwardDynamics
from rbd_estimator.estimation.hybrid import HybridDynamics

TOL = 1e-9
EPS = np.finfo(float).eps


@functools.lru_cache(maxsize=None)
def pair(robot: str, fb: bool) -> Pair:
    if robot == "go2":
        with open(robots.urdf_file("go2"), encoding="utf-8") as fh:
            return Pair(fh.read(), fb)
    return Pair(urdf_xml(robot), fb)


def pinocchio_hybrid(p: Pair, q, v, tau, ddq, known):
    """``(q̈, τ)`` from pinocchio's mass matrix and RNEA on the reduced system (our ordering)."""
    pm, pd = p.pin_model, p.pin_data
    qp, vp = p.q_to_pin(q), p.v_to_pin(v)
    M = pin.crba(pm, pd, qp)
    M = p.M_from_pin(np.triu(M) + np.triu(M, 1).T)
    a0 = np.where(known, ddq, 0.0)
    h = p.v_from_pin(pin.rnea(pm, pd, qp, vp, p.v_to_pin(a0)))       # M q̈⁰ + C
    U = ~known
    out = a0.copy()
    out[U] = np.linalg.solve(M[np.ix_(U, U)], tau[U] - h[U])
    tau_all = p.v_from_pin(pin.rnea(pm, pd, qp, vp, p.v_to_pin(out)))
    cond = np.linalg.cond(M[np.ix_(U, U)]) if U.any() else 1.0
    return out, np.where(known, tau_all, tau), max(TOL, 10 * cond * EPS)


CASES = [(r, fb) for r in ("icub", "talos", "go2") for fb in (False, True)]


@pytest.mark.parametrize("robot,fb", CASES, ids=[f"{r}-{'floating' if fb else 'fixed'}" for r, fb in CASES])
def test_random_splits_match_pinocchio(robot, fb):
    p = pair(robot, fb)
    m = p.model
    rng = np.random.default_rng([len(robot), int(fb)])
    for _ in range(4):
        q, v, ddq = p.random_state(rng)
        tau = rng.normal(size=m.nv)
        known = rng.random(m.nv) < 0.5
        got_ddq, got_tau = hybrid_dynamics(m, q, v, tau, ddq, known)
        ref_ddq, ref_tau, tol = pinocchio_hybrid(p, q, v, tau, ddq, known)
        assert np.array_equal(got_ddq[known], ddq[known]) or rel_err(got_ddq[known], ddq[known]) <= 1e-12
        assert rel_err(got_ddq, ref_ddq) <= tol
        assert rel_err(got_tau, ref_tau) <= max(tol, TOL) * 10


def test_the_two_ends_are_forward_and_inverse_dynamics():
    """All accelerations unknown: our ``aba``; all known: our ``rnea`` (Talos, floating base)."""
    p = pair("talos", True)
    m = p.model
    rng = np.random.default_rng(3)
    q, v, ddq = p.random_state(rng)
    tau = rng.normal(size=m.nv)
    got, _ = hybrid_dynamics(m, q, v, tau, ddq, np.zeros(m.nv, bool))
    assert rel_err(got, aba(m, q, v, tau)) <= TOL
    _, got_tau = hybrid_dynamics(m, q, v, tau, ddq, np.ones(m.nv, bool))
    assert rel_err(got_tau, rnea(m, q, v, ddq)) <= TOL


def test_a_split_of_the_wrong_size_is_refused():
    p = pair("talos", False)
    m = p.model
    with pytest.raises(ValueError, match="one flag per DoF"):
        nori_system(m, np.zeros(m.nq), np.zeros(m.nv), np.zeros(m.nv), known_acceleration=np.zeros(3, bool))


# ---------------------------------------------------------------------------- through the estimator's plan
@functools.lru_cache(maxsize=None)
def planned(robot: str, fb: bool, split: int):
    """``HybridDynamics`` (the estimator's layout, plan and compiled tick) for a random split."""
    m = pair(robot, fb).model
    known = np.random.default_rng([split, len(robot), int(fb)]).random(m.nv) < 0.5
    return HybridDynamics(m, known), known


@pytest.mark.parametrize("robot,fb", CASES, ids=[f"{r}-{'floating' if fb else 'fixed'}" for r, fb in CASES])
def test_the_estimators_plan_solves_random_splits_as_pinocchio(robot, fb):
    p = pair(robot, fb)
    m = p.model
    rng = np.random.default_rng([7, len(robot), int(fb)])
    for split in range(3):
        hd, known = planned(robot, fb, split)
        for _ in range(3):
            q, v, ddq = p.random_state(rng)
            tau = rng.normal(size=m.nv)
            got_ddq, got_tau = hd.compute(q, v, tau, ddq)
            ref_ddq, ref_tau, tol = pinocchio_hybrid(p, q, v, tau, ddq, known)
            assert np.array_equal(got_ddq[known], ddq[known]) and np.array_equal(got_tau[~known], tau[~known])
            assert rel_err(got_ddq, ref_ddq) <= tol
            assert rel_err(got_tau, ref_tau) <= max(tol, TOL) * 10


@pytest.mark.parametrize("robot,fb", CASES, ids=[f"{r}-{'floating' if fb else 'fixed'}" for r, fb in CASES])
def test_forward_dynamics_through_the_plan_is_pinocchios_aba(robot, fb):
    """All accelerations unknown (``SparseForwardDynamics``): pinocchio's ``aba`` ≤ max(1e-9, 10 κ ε)."""
    p = pair(robot, fb)
    m = p.model
    fd = SparseForwardDynamics(m)
    rng = np.random.default_rng([8, len(robot), int(fb)])
    for _ in range(4):
        q, v, _ = p.random_state(rng)
        tau = rng.normal(size=m.nv)
        ref = p.v_from_pin(pin.aba(p.pin_model, p.pin_data, p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(tau)))
        _, _, tol = pinocchio_hybrid(p, q, v, tau, np.zeros(m.nv), np.zeros(m.nv, bool))
        assert rel_err(fd.compute(q, v, tau), ref) <= tol


def _neutral_matches_pinocchio(p: Pair, fd: SparseForwardDynamics, hd: HybridDynamics, rng) -> None:
    m = p.model
    q = m.neutral_configuration()
    for v in (np.zeros(m.nv), rng.normal(size=m.nv)):
        tau, ddq = rng.normal(size=m.nv), rng.normal(size=m.nv)
        ref = p.v_from_pin(pin.aba(p.pin_model, p.pin_data, p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(tau)))
        _, _, tol = pinocchio_hybrid(p, q, v, tau, np.zeros(m.nv), np.zeros(m.nv, bool))
        assert rel_err(fd.compute(q, v, tau), ref) <= tol
        known = hd.known_acceleration
        got_ddq, got_tau = hd.compute(q, v, tau, ddq)
        ref_ddq, ref_tau, tol = pinocchio_hybrid(p, q, v, tau, ddq, known)
        assert np.array_equal(got_ddq[known], ddq[known]) and np.array_equal(got_tau[~known], tau[~known])
        assert rel_err(got_ddq, ref_ddq) <= tol and rel_err(got_tau, ref_tau) <= max(tol, TOL) * 10


@pytest.mark.parametrize("robot,fb", CASES, ids=[f"{r}-{'floating' if fb else 'fixed'}" for r, fb in CASES])
def test_the_neutral_configuration_is_solved(robot, fb):
    """At the neutral configuration (every joint at zero: where a user starts) entries such as
    ``sin q`` that random planning states make pivots vanish; forward dynamics and a split are still
    pinocchio's (they raised FloatingPointError on every shipped robot), on pivots planned there
    (no fallback)."""
    p = pair(robot, fb)
    fd, hd = SparseForwardDynamics(p.model), HybridDynamics(p.model, planned(robot, fb, 0)[1])
    _neutral_matches_pinocchio(p, fd, hd, np.random.default_rng([9, len(robot), int(fb)]))
    assert fd.pivot_fallbacks == hd.pivot_fallbacks == 0


def test_a_vanished_pivot_falls_back_to_partial_pivoting(monkeypatch):
    """Pivots planned at random states only: at the neutral configuration SuperLU's partial
    pivoting solves the same system, counted."""
    monkeypatch.setattr(HybridDynamics, "_plan_pivots_for_the_neutral_configuration", lambda *args: None)
    p = pair("icub", True)
    fd, hd = SparseForwardDynamics(p.model), HybridDynamics(p.model, planned("icub", True, 0)[1])
    _neutral_matches_pinocchio(p, fd, hd, np.random.default_rng(10))
    assert fd.pivot_fallbacks == hd.pivot_fallbacks == 2          # one per solve


def test_inverse_dynamics_through_the_plan_is_triangular():
    """All accelerations known: the plan's pivots make the system triangular (Nori Property 1:
    zero fill-in, every diagonal block 1 × 1) and the torques are the RNEA's."""
    p = pair("talos", True)
    m = p.model
    hd = HybridDynamics(m, np.ones(m.nv, bool))
    assert hd.lu.fill_in == 0 and np.all(np.diff(hd.lu.blocks) == 1)
    rng = np.random.default_rng(4)
    q, v, ddq = p.random_state(rng)
    f_ext = {m.body_names[-1]: rng.normal(size=6)}
    _, tau = hd.compute(q, v, None, ddq, f_ext)
    assert rel_err(tau, rnea(m, q, v, ddq, f_ext)) <= TOL


def test_known_external_wrenches_enter_every_split():
    """With external wrenches: the reference's one sparse system (``hybrid_dynamics``) for a random
    split, our ``aba`` for forward dynamics (Go2, floating base)."""
    p = pair("go2", True)
    m = p.model
    rng = np.random.default_rng(5)
    q, v, ddq = p.random_state(rng)
    tau = rng.normal(size=m.nv)
    f_ext = {name: rng.normal(scale=10.0, size=6) for name in m.body_names[-3:]}
    hd, known = planned("go2", True, 0)
    got = hd.compute(q, v, tau, ddq, f_ext)
    ref = hybrid_dynamics(m, q, v, tau, ddq, known, f_ext)
    assert rel_err(got[0], ref[0]) <= TOL and rel_err(got[1], ref[1]) <= TOL
    assert rel_err(SparseForwardDynamics(m).compute(q, v, tau, f_ext), aba(m, q, v, tau, f_ext)) <= TOL


def test_bad_splits_and_inputs_are_refused_by_name():
    m = pair("go2", False).model
    with pytest.raises(ValueError, match="one flag per DoF"):
        HybridDynamics(m, np.zeros(3, bool))
    hd, _ = planned("go2", False, 0)
    with pytest.raises(ValueError, match=r"ddq has shape \(2,\)"):
        hd.compute(np.zeros(m.nq), np.zeros(m.nv), np.zeros(m.nv), np.zeros(2))
    q = np.zeros(m.nq)
    q[0] = np.nan
    with pytest.raises(FloatingPointError, match="an input is not finite"):
        hd.compute(q, np.zeros(m.nv))


def test_kept_fixed_joints_are_carried():
    """Bodies behind kept fixed joints (0 DoF: a joint wrench, no torque, no acceleration) take part
    in the split as in the reference's system (Talos' sensor frames kept, floating base)."""
    from rbd_estimator import RobotModel
    kept = ("imu_joint", "rgbd_joint", "rgbd_optical_joint")
    m = RobotModel.from_urdf(urdf_xml("talos"), floating_base=True, keep_fixed=kept)
    assert m.NB == pair("talos", True).model.NB + len(kept)
    rng = np.random.default_rng(9)
    known = rng.random(m.nv) < 0.5
    q, v, ddq, tau = m.random_configuration(rng), *rng.normal(size=(3, m.nv))
    got = HybridDynamics(m, known).compute(q, v, tau, ddq)
    ref = hybrid_dynamics(m, q, v, tau, ddq, known)
    assert rel_err(got[0], ref[0]) <= TOL and rel_err(got[1], ref[1]) <= TOL
