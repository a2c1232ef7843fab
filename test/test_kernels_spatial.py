"""The compiled kernel library (:mod:`rbd_estimator.kernels.spatial`, :mod:`rbd_estimator.kernels.joints`)
against the readable 6 × 6 algebra of :mod:`rbd_estimator.spatial` and :mod:`rbd_estimator.model.joints`
(Featherstone's equations written as matrices): every primitive the compiled RNEA/ABA/CRBA, the
forward kinematics and the cluster kernels share, on random operands at non-zero offsets."""
from __future__ import annotations

import numpy as np
import pytest

from rbd_estimator.kernels.joints import FIXED, FREE, J_SIZE, PRISMATIC, REVOLUTE, joint_record, joint_transforms
from rbd_estimator.kernels.spatial import (add6, add_congruence, compose, fcross, fx, fxT_add, fxT_col_add, mcross, mv6,
                                           mx, mx_col, mx_inv, plux_into, rbi_apply, rbi_compact, rbi_xT_add, set6,
                                           solve_rbi)
from rbd_estimator.model.joints import joint_transform
from rbd_estimator.model.robot_model import RobotModel
from rbd_estimator.spatial import axis_angle_to_R, crf, crm, mcI, plux

TOL = dict(rtol=0, atol=1e-12)


def _pose(rng):
    axis = rng.normal(size=3)
    return axis_angle_to_R(axis / np.linalg.norm(axis), rng.uniform(-3, 3)), rng.normal(size=3)


def _at(x, o):
    """``x`` flattened at offset ``o`` of a random array (the kernels read operands at offsets)."""
    x = np.ascontiguousarray(x, dtype=float).reshape(-1)
    return np.concatenate([np.random.default_rng(0).normal(size=o), x, [7.0]])


def test_transforms_compose_and_the_6x6_form():
    """``plux_into`` writes eq. 2.24's matrix; ``compose`` is the product of two transforms."""
    rng = np.random.default_rng(1)
    for _ in range(10):
        (E1, r1), (E2, r2) = _pose(rng), _pose(rng)
        X = np.zeros(40)
        plux_into(_at(E1, 3), 3, _at(r1, 5), 5, X, 2)
        np.testing.assert_allclose(X[2:38].reshape(6, 6), plux(E1, r1), **TOL)
        E, r = np.zeros(9), np.zeros(3)
        compose(_at(E1, 1), 1, _at(r1, 2), 2, _at(E2, 3), 3, _at(r2, 4), 4, E, 0, r, 0)
        np.testing.assert_allclose(plux(E.reshape(3, 3), r), plux(E1, r1) @ plux(E2, r2), **TOL)


def test_transform_applications():
    """``mx`` = X m, ``mx_inv`` = X⁻¹ m, ``fx`` = X⁻ᵀ f, ``fxT_add`` += Xᵀ f (eqs. 2.24–2.25), and
    their column forms on strided columns of row-major 6 × n blocks (``mx_col``: X M, column by
    column; ``fxT_col_add``: += Xᵀ F), the other entries of the output untouched."""
    rng = np.random.default_rng(4)
    for _ in range(10):
        E, r = _pose(rng)
        X = plux(E, r)
        x, y0 = rng.normal(size=6), rng.normal(size=8)
        for fn, want in ((mx, X @ x), (mx_inv, np.linalg.solve(X, x))):
            y = y0.copy()
            fn(_at(E, 1), 1, _at(r, 2), 2, _at(x, 3), 3, y, 1)
            np.testing.assert_allclose(y[1:7], want, rtol=0, atol=1e-11)
            assert y[0] == y0[0] and y[7] == y0[7]
        y = y0.copy()
        fx(_at(E, 1), 1, _at(r, 2), 2, _at(x, 3), 3, y, 1, -2.0)
        np.testing.assert_allclose(y[1:7], -2.0 * np.linalg.solve(X.T, x), rtol=0, atol=1e-11)
        y = y0.copy()
        fxT_add(_at(E, 1), 1, _at(r, 2), 2, _at(x, 3), 3, y, 1, 0.5)
        np.testing.assert_allclose(y[1:7], y0[1:7] + 0.5 * X.T @ x, rtol=0, atol=1e-11)
        n = 3
        M, Y0 = rng.normal(size=(6, n)), rng.normal(size=(6, n))
        Y = Y0.copy().reshape(-1)
        for c in range(n):                           # Y[:, c] = X M[:, c], stride n
            mx_col(_at(E, 1), 1, _at(r, 2), 2, _at(M, 2), 2 + c, n, Y, c, n)
        np.testing.assert_allclose(Y.reshape(6, n), X @ M, rtol=0, atol=1e-11)
        Y = Y0.copy().reshape(-1)
        fxT_col_add(_at(E, 1), 1, _at(r, 2), 2, _at(M, 2), 2 + 1, n, Y, 1, n, -1.0)   # column 1 only
        want = Y0.copy()
        want[:, 1] -= X.T @ M[:, 1]
        np.testing.assert_allclose(Y.reshape(6, n), want, rtol=0, atol=1e-11)


def test_cross_products_and_6x6_products():
    """``mcross`` = ``crm(v) m`` (eq. 2.31), ``fcross`` = ``crf(v) f`` (eq. 2.32), ``mv6`` = ``M x``
    (a general 6 × 6, as an articulated inertia); ``set6`` stores, ``add6`` accumulates, an operand
    may be the output."""
    rng = np.random.default_rng(2)
    v, m, M = rng.normal(size=6), rng.normal(size=6), rng.normal(size=(6, 6))
    y0 = rng.normal(size=8)
    for value, want in ((mcross(_at(v, 1), 1, _at(m, 2), 2), crm(v) @ m),
                        (fcross(_at(v, 1), 1, _at(m, 2), 2), crf(v) @ m),
                        (mv6(_at(M, 3), 3, _at(v, 1), 1), M @ v)):
        y = y0.copy()
        set6(y, 1, value)
        np.testing.assert_allclose(y[1:7], want, **TOL)
        assert y[0] == y0[0] and y[7] == y0[7]
        add6(y, 1, value)
        np.testing.assert_allclose(y[1:7], 2 * want, **TOL)
    w = np.concatenate([v, m])                       # y = v ×* y, in place
    set6(w, 6, fcross(w, 0, w, 6))
    np.testing.assert_allclose(w[6:], crf(v) @ m, **TOL)


def test_inertia_primitives():
    """The 10-number rigid-body inertia: ``rbi_apply`` = I x, ``rbi_xT_add`` = Xᵀ I X,
    ``solve_rbi`` = I⁻¹ x (eq. 2.63), and ``add_congruence`` = Xᵀ I X for a general symmetric 6 × 6."""
    rng = np.random.default_rng(3)
    for _ in range(10):
        A = rng.normal(size=(3, 3))
        Ic, c, mass = A @ A.T + np.eye(3), rng.normal(size=3), rng.uniform(0.5, 3)
        I6 = mcI(mass, c, Ic)
        Ik, x, (E, r) = rbi_compact(I6), rng.normal(size=6), _pose(rng)
        X = plux(E, r)
        y = np.ones(6)
        rbi_apply(_at(Ik, 2), 2, _at(x, 1), 1, y, 0, -2.0)
        np.testing.assert_allclose(y, 1 - 2 * I6 @ x, rtol=0, atol=1e-11)
        P = rbi_compact(I6) * 0.5
        rbi_xT_add(_at(E, 1), 1, _at(r, 3), 3, Ik, 0, P, 0)
        Pc = rbi_compact(I6) * 0.5                   # the sum of two rigid-body inertias is one
        want = I6 * 0.5 + X.T @ I6 @ X
        np.testing.assert_allclose(P - Pc, rbi_compact(want) - Pc, rtol=0, atol=1e-10)
        L = np.linalg.cholesky(Ic)
        y = np.zeros(6)
        solve_rbi(Ik, 0, _at(L[np.tril_indices(3)], 1), 1, _at(x, 2), 2, y, 0, 3.0)
        np.testing.assert_allclose(y, 3.0 * np.linalg.solve(I6, x), rtol=0, atol=1e-10)
        S = rng.normal(size=(6, 6))
        S = S + S.T
        out, tmp = np.ones(36), np.zeros(60)
        add_congruence(_at(E, 1), 1, _at(r, 2), 2, _at(S, 3), 3, out, 0, tmp, 5)
        np.testing.assert_allclose(out.reshape(6, 6), 1 + X.T @ S @ X, rtol=0, atol=1e-10)


def _model_with_every_joint_type() -> RobotModel:
    urdf = """<robot name="kinds">
      <link name="base"><inertial><mass value="2"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="ja" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.5"/>
        <axis xyz="0.3 -0.5 0.8"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <joint name="jb" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="-0.2 0.1 0.4" rpy="-0.4 0.1 0.2"/>
        <axis xyz="0.6 0.0 -0.8"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
    </robot>"""
    return RobotModel.from_urdf(urdf, floating_base=True)


@pytest.mark.parametrize("free_as_fixed", [False, True])
def test_the_one_joint_transform_against_the_readable_one(free_as_fixed):
    """``joint_transforms`` on the packed joint records equals ``model.joints.joint_transform`` (6 × 6,
    Nori eqs. 2–3a) for a free, revolute and prismatic joint, and ``X_T`` for a fixed one (the last
    body's record read as a fixed joint's), records and outputs at strides and offsets as the kernels
    lay them out; ``free_as_fixed`` gives the free flyer's ``X_T``."""
    m = _model_with_every_joint_type()
    assert list(m.joint_types) == [FREE, REVOLUTE, PRISMATIC]
    rng = np.random.default_rng(5)
    q = rng.normal(size=m.nq)
    q[3:7] /= np.linalg.norm(q[3:7]) * 0.8          # the kernel normalises the quaternion
    NB, js, es = m.NB, J_SIZE + 2, 14
    types, qidx = list(m.joint_types) + [FIXED], list(m.q_idx) + [-1]
    J = np.zeros(3 + js * (NB + 1))
    for i in range(NB + 1):
        b = min(i, NB - 1)
        J[3 + js * i:3 + js * i + J_SIZE] = joint_record(types[i], m.axes[b], m.E_tree[b], m.r_tree[b])
    ints = np.zeros(1 + 3 * (NB + 1), dtype=np.int64)   # type and q index of body i at 1 + 3 i, 2 + 3 i
    ints[1::3], ints[2::3] = types, qidx
    W = np.full(2 + es * (NB + 1), np.nan)
    joint_transforms(0, NB + 1, ints, 1, 2, 3, J, 3, js, q, W, 2, es, W, 11, es, free_as_fixed)
    qn = q.copy()
    qn[3:7] /= np.linalg.norm(q[3:7])
    for i in range(NB + 1):
        b = min(i, NB - 1)
        E, r = W[2 + es * i:11 + es * i].reshape(3, 3), W[11 + es * i:14 + es * i]
        fixed = types[i] == FIXED or (free_as_fixed and types[i] == FREE)
        want = plux(m.E_tree[b], m.r_tree[b]) if fixed else joint_transform(m, i, qn)
        np.testing.assert_allclose(plux(E, r), want, rtol=0, atol=1e-12)
