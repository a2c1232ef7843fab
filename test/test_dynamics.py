"""Reference dynamics algorithms against pinocchio (the oracle) and against dense linear algebra.

iCub, Talos and G1, fixed and floating base, 50 random states each with a fixed seed. Vectors and
matrices are compared through :class:`oracle.Pair`'s name-based maps.

Tolerances. Algorithms that only multiply (RNEA, CRBA) must agree to 1e-9 relative. Algorithms
that invert ``H`` (ABA, M⁻¹, the LTDL forward dynamics, the LTL/LTDL solves) cannot be compared
more tightly than the conditioning of ``H`` allows: a backward-stable method has a forward error
of about ``κ(H)·ε``, and so do the references themselves. Talos and G1 have ``κ(H) < 2e5`` and
are held to the plain 1e-9 / 1e-10; iCub's head is a point mass (zero rotational inertia) on
massless neck links, so ``H`` is nearly singular in the neck-yaw direction (``κ(H)`` up to 1e12
on random states) and pinocchio's own ``computeMinverse`` is off from an extended-precision
inverse by up to ~4e-6 relative there. :func:`inv_tol` therefore widens the bound to
``10·κ(H)·ε`` when that is larger, and every inverting algorithm is also checked with a
conditioning-free *backward* error: the residual of pinocchio's equation of motion
``M q̈ + C − τ`` (or of ``H x − b``, ``M X − I``), relative to ``‖M‖‖q̈‖ + ‖τ − C‖``.
"""
from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg as sla

from oracle import Pair, rel_err, urdf_xml
from rbd_estimator.dynamics import (aba, crba, forward_dynamics_ltdl, ltdl, ltdl_inplace, ltl,
                                    ltl_inplace, minverse, mul_L, mul_Lt, rnea, solve_L, solve_Lt)

ROBOTS = ("icub", "talos", "g1")
CASES = [(r, fb) for r in ROBOTS for fb in (False, True)]
IDS = [f"{r}-{'floating' if fb else 'fixed'}" for r, fb in CASES]
N_STATES = 50
EPS = np.finfo(float).eps
TOL = 1e-9            # relative, against pinocchio
TOL_SOLVE = 1e-10     # relative, against a dense Cholesky solve
TOL_BACKWARD = 1e-13  # backward error (conditioning-free)

# Links that carry an external wrench in the f_ext tests (besides a few movable-joint children).
MERGED_LINK = {"icub": "l_sole", "talos": "left_sole_link", "g1": "left_rubber_hand"}


@functools.lru_cache(maxsize=None)
def pair(robot: str, floating_base: bool) -> Pair:
    return Pair(urdf_xml(robot), floating_base)


@functools.lru_cache(maxsize=None)
def states(robot: str, floating_base: bool):
    """50 random ``(q, q̇, q̈, τ)`` with a seed fixed per case."""
    p = pair(robot, floating_base)
    rng = np.random.default_rng([ROBOTS.index(robot), int(floating_base), 2024])
    return tuple((*p.random_state(rng), rng.normal(size=p.model.nv)) for _ in range(N_STATES))


def pin_sym(M) -> np.ndarray:
    """Pinocchio fills the upper triangle of M and M⁻¹: mirror it."""
    M = np.asarray(M)
    return np.triu(M) + np.triu(M, 1).T


def inv_tol(H, base: float = TOL) -> float:
    """Forward-error bound for a quantity obtained by inverting ``H``: ``max(base, 10 κ(H) ε)``."""
    return max(base, 10.0 * np.linalg.cond(H) * EPS)


def backward_err(M, x, b) -> float:
    """``‖M x − b‖ / (‖M‖ ‖x‖ + ‖b‖)`` (∞-norms; the columns of a matrix ``x`` together)."""
    M, x, b = (np.asarray(a, dtype=float) for a in (M, x, b))
    nM = np.linalg.norm(M, np.inf)
    return float(np.max(np.abs(M @ x - b)) / (nM * np.max(np.abs(x)) + np.max(np.abs(b))))


def ancestor_or_self(lam) -> np.ndarray:
    """``A[i, j]`` true iff ``j`` is ``i`` or an ancestor of ``i`` in the parent array ``lam``."""
    n = len(lam)
    A = np.zeros((n, n), dtype=bool)
    for i in range(n):
        j = i
        while j >= 0:
            A[i, j] = True
            j = lam[j]
    return A


# --------------------------------------------------------------------------- pinocchio oracle
@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_rnea_matches_pinocchio(robot, fb):
    p = pair(robot, fb)
    for q, v, a, _ in states(robot, fb):
        ref = pin.rnea(p.pin_model, p.pin_data, p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(a))
        assert rel_err(rnea(p.model, q, v, a), p.v_from_pin(ref)) <= TOL


@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_crba_matches_pinocchio(robot, fb):
    p = pair(robot, fb)
    for q, *_ in states(robot, fb):
        H = crba(p.model, q)
        assert np.array_equal(H, H.T)
        ref = p.M_from_pin(pin_sym(pin.crba(p.pin_model, p.pin_data, p.q_to_pin(q))))
        assert rel_err(H, ref) <= TOL


@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
@pytest.mark.parametrize("algorithm", [aba, forward_dynamics_ltdl], ids=["aba", "fd_ltdl"])
def test_forward_dynamics_matches_pinocchio(robot, fb, algorithm):
    p = pair(robot, fb)
    pm, pd = p.pin_model, p.pin_data
    for q, v, _, tau in states(robot, fb):
        qp, vp = p.q_to_pin(q), p.v_to_pin(v)
        ddq = algorithm(p.model, q, v, tau)
        M = p.M_from_pin(pin_sym(pin.crba(pm, pd, qp)))
        C = p.v_from_pin(pin.rnea(pm, pd, qp, vp, np.zeros(pm.nv)))
        assert backward_err(M, ddq, tau - C) <= TOL_BACKWARD        # M q̈ + C = τ
        ref = p.v_from_pin(pin.aba(pm, pd, qp, vp, p.v_to_pin(tau)))
        assert rel_err(ddq, ref) <= inv_tol(M)


@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_minverse_matches_pinocchio(robot, fb):
    p = pair(robot, fb)
    for q, *_ in states(robot, fb):
        Minv = minverse(p.model, q)
        assert np.array_equal(Minv, Minv.T)
        qp = p.q_to_pin(q)
        M = p.M_from_pin(pin_sym(pin.crba(p.pin_model, p.pin_data, qp)))
        assert backward_err(M, Minv, np.eye(p.model.nv)) <= TOL_BACKWARD   # M M⁻¹ = 1
        ref = p.M_from_pin(pin_sym(pin.computeMinverse(p.pin_model, p.pin_data, qp)))
        assert rel_err(Minv, ref) <= inv_tol(M)


def wrench_links(robot: str, fb: bool) -> list[str]:
    """Links for the f_ext tests: children of movable joints (pinocchio joint frame = link frame),
    the floating base, 0-DoF bodies (kept fixed joints, merged in pinocchio) and a merged link."""
    m = pair(robot, fb).model
    movable = [m.body_names[i] for i in range(m.NB) if m.joint_dofs[i] == 1]
    fixed = [m.body_names[i] for i in range(m.NB) if m.joint_dofs[i] == 0]
    return movable[1::7] + ([m.body_names[0]] if fb else []) + fixed[:2] + [MERGED_LINK[robot]]


def pin_fext(p: Pair, f_ext: dict) -> list:
    """``{link: [fx, fy, fz, tx, ty, tz] in the link frame}`` → pinocchio's per-joint local forces.
    A force ``f`` in frame F acts on F's parent joint as ``placement.act(f)``."""
    pm = p.pin_model
    out = [pin.Force.Zero() for _ in range(pm.njoints)]
    for name, w in f_ext.items():
        frame = pm.frames[pm.getFrameId(name, pin.FrameType.BODY)]
        out[frame.parentJoint] += frame.placement.act(pin.Force(np.asarray(w[:3]), np.asarray(w[3:])))
    return out


@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_external_wrenches_match_pinocchio(robot, fb):
    p = pair(robot, fb)
    pm, pd = p.pin_model, p.pin_data
    links = wrench_links(robot, fb)
    assert MERGED_LINK[robot] not in p.model.body_names
    rng = np.random.default_rng(7)
    for q, v, a, tau in states(robot, fb)[:20]:
        f_ext = {name: rng.normal(scale=10.0, size=6) for name in links}
        fe = pin_fext(p, f_ext)
        qp, vp = p.q_to_pin(q), p.v_to_pin(v)
        ref = pin.rnea(pm, pd, qp, vp, p.v_to_pin(a), fe)
        assert rel_err(rnea(p.model, q, v, a, f_ext), p.v_from_pin(ref)) <= TOL
        M = p.M_from_pin(pin_sym(pin.crba(pm, pd, qp)))
        ref = p.v_from_pin(pin.aba(pm, pd, qp, vp, p.v_to_pin(tau), fe))
        for algorithm in (aba, forward_dynamics_ltdl):
            assert rel_err(algorithm(p.model, q, v, tau, f_ext), ref) <= inv_tol(M)


def test_external_wrench_is_not_ignored():
    """Guard against a vacuous f_ext test: the wrenches change the result."""
    p = pair("icub", True)
    q, v, a, tau = states("icub", True)[0]
    f_ext = {"l_sole": [0.0, 0.0, 100.0, 1.0, 2.0, 3.0]}
    assert rel_err(rnea(p.model, q, v, a, f_ext), rnea(p.model, q, v, a)) > 1e-3
    assert rel_err(aba(p.model, q, v, tau, f_ext), aba(p.model, q, v, tau)) > 1e-6


# --------------------------------------------------------------------------- LTL / LTDL on robots
@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_ltl_ltdl_no_fill_in_and_dense_cholesky(robot, fb):
    p = pair(robot, fb)
    lam = p.model.expanded_parents
    anc = ancestor_or_self(lam)
    zero = ~anc                                    # i ∉ ν(j): L[i, j] must stay exactly 0
    rng = np.random.default_rng(3)
    for q, *_ in states(robot, fb)[:10]:
        H_pin = p.M_from_pin(pin_sym(pin.crba(p.pin_model, p.pin_data, p.q_to_pin(q))))
        for H in (crba(p.model, q), H_pin):
            H0 = H.copy()
            assert np.all(H[~(anc | anc.T)] == 0.0)   # eq. 6 holds for the expanded parent array
            L = ltl(H, lam)
            Lu, d = ltdl(H, lam)
            assert np.array_equal(H, H0)           # the convenience functions copy
            assert np.all(L[zero] == 0.0) and np.all(Lu[zero] == 0.0)
            assert np.all(np.diag(L) > 0) and np.array_equal(np.diag(Lu), np.ones(len(d)))
            assert rel_err(L.T @ L, H) <= 1e-13
            assert rel_err(Lu.T @ (d[:, None] * Lu), H) <= 1e-13
            b = rng.normal(size=(len(H), 3))
            x_ref = sla.cho_solve(sla.cho_factor(H), b)
            x_ltl = solve_L(L, lam, solve_Lt(L, lam, b))                          # H⁻¹ = L⁻¹L⁻ᵀ
            x_ltdl = solve_L(Lu, lam, solve_Lt(Lu, lam, b, unit=True) / d[:, None], unit=True)
            for x in (x_ltl, x_ltdl):
                assert backward_err(H, x, b) <= TOL_BACKWARD
                assert rel_err(x, x_ref) <= inv_tol(H, TOL_SOLVE)


@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_kernels_against_dense(robot, fb):
    p = pair(robot, fb)
    lam = p.model.expanded_parents
    H = crba(p.model, states(robot, fb)[0][0])
    _check_kernels(H, lam, np.random.default_rng(5))


def _check_kernels(H, lam, rng):
    n = len(H)
    L = ltl(H, lam)
    packed = ltdl_inplace(H.copy(), lam)           # D on the diagonal, unit L below it
    Lu = np.tril(packed, -1) + np.eye(n)
    for x in (rng.normal(size=n), rng.normal(size=(n, 4))):
        x0 = x.copy()
        for F, unit, Fd in ((L, False, L), (packed, True, Lu), (Lu, True, Lu)):
            assert rel_err(mul_L(F, lam, x, unit=unit), Fd @ x) <= 1e-14
            assert rel_err(mul_Lt(F, lam, x, unit=unit), Fd.T @ x) <= 1e-14
            y = solve_L(F, lam, x, unit=unit)
            assert rel_err(y, sla.solve_triangular(Fd, x, lower=True)) <= 1e-12
            assert rel_err(Fd @ y, x) <= 1e-12
            y = solve_Lt(F, lam, x, unit=unit)
            assert rel_err(y, sla.solve_triangular(Fd.T, x, lower=False)) <= 1e-12
            assert rel_err(Fd.T @ y, x) <= 1e-12
        assert np.array_equal(x, x0)               # kernels return new arrays


# --------------------------------------------------------------------------- hand-made trees
TREE1 = [-1, 0, 0, 1, 1, 2, 2]                                  # λ = (0, 1, 1, 2, 2, 3, 3), 1-based
TREE1_L_PATTERN = np.array([                                    # the L of §2, below eq. 6
    [1, 0, 0, 0, 0, 0, 0],
    [1, 1, 0, 0, 0, 0, 0],
    [1, 0, 1, 0, 0, 0, 0],
    [1, 1, 0, 1, 0, 0, 0],
    [1, 1, 0, 0, 1, 0, 0],
    [1, 0, 1, 0, 0, 1, 0],
    [1, 0, 1, 0, 0, 0, 1]], dtype=bool)
FIG2 = [i - 1 for i in (0, 1, 2, 3, 2, 4, 4, 5, 8, 9, 5)]       # expanded parent array of Fig. 2


def random_tree_spd(lam, rng):
    """``H = LᵀL`` for a random ``L`` with the optimal pattern (positive diagonal): SPD, eq. 6."""
    L = np.where(ancestor_or_self(lam), rng.normal(size=(len(lam), len(lam))), 0.0)
    L[np.diag_indices(len(lam))] = rng.uniform(0.5, 2.0, len(lam))
    return L, L.T @ L


def test_tree1_pattern_and_factors():
    assert np.array_equal(ancestor_or_self(TREE1), TREE1_L_PATTERN)
    rng = np.random.default_rng(11)
    for _ in range(20):
        L_true, H = random_tree_spd(TREE1, rng)
        assert np.all(H[~(TREE1_L_PATTERN | TREE1_L_PATTERN.T)] == 0.0)   # pattern of eq. 4
        L = ltl(H, TREE1)
        assert np.all(L[~TREE1_L_PATTERN] == 0.0)
        assert rel_err(L, L_true) <= 1e-13                      # LTL with L_ii > 0 is unique
        Lu, d = ltdl(H, TREE1)
        assert rel_err(Lu, L_true / np.diag(L_true)[:, None]) <= 1e-13
        assert rel_err(d, np.diag(L_true) ** 2) <= 1e-13
        _check_kernels(H, TREE1, rng)


def test_fig2_expanded_tree_and_dense_chain():
    rng = np.random.default_rng(12)
    for lam in (FIG2, list(range(-1, 9))):                      # Fig. 2; λ(i) = i − 1 is dense
        _, H = random_tree_spd(lam, rng)
        L = ltl(H, lam)
        assert np.all(L[~ancestor_or_self(lam)] == 0.0)
        assert rel_err(L.T @ L, H) <= 1e-13
        b = rng.normal(size=len(lam))
        assert rel_err(solve_L(L, lam, solve_Lt(L, lam, b)), np.linalg.solve(H, b)) <= 1e-10
        _check_kernels(H, lam, rng)


def test_inplace_factorisations_work_in_situ():
    _, H = random_tree_spd(TREE1, np.random.default_rng(13))
    A = H.copy()
    assert ltl_inplace(A, TREE1) is A
    assert np.array_equal(np.triu(A, 1), np.triu(H, 1))        # upper triangle untouched
    assert np.array_equal(np.tril(A), ltl(H, TREE1))
    B = H.copy()
    assert ltdl_inplace(B, TREE1) is B
    Lu, d = ltdl(H, TREE1)
    assert np.array_equal(np.diag(B), d)
    assert np.array_equal(np.tril(B, -1), np.tril(Lu, -1))


def test_factorisation_errors_say_what_is_wrong():
    _, H = random_tree_spd(TREE1, np.random.default_rng(14))
    with pytest.raises(ValueError, match="eq. 2"):
        ltl(H, [-1, 0, 3, 1, 1, 2, 2])                          # λ(3) = 4 > 3: not regular
    with pytest.raises(ValueError, match="expanded parent array"):
        ltdl(H, TREE1[:-1])
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        ltl(-H, TREE1)
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        ltdl(-H, TREE1)


def test_robot_parent_arrays_are_regular_and_match_crba_pattern():
    """Branch-induced zeros of H (eq. 6) follow the expanded parent array (iCub: 6 0-DoF bodies)."""
    p = pair("icub", True)
    m = p.model
    assert list(m.joint_dofs).count(0) == 6
    lam = m.expanded_parents
    assert np.all(lam < np.arange(m.nv))
    H = crba(m, states("icub", True)[0][0])
    pattern = ancestor_or_self(lam)
    assert np.all(H[~(pattern | pattern.T)] == 0.0)
    assert np.count_nonzero(H) > 0.9 * np.count_nonzero(pattern | pattern.T)
