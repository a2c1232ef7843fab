"""The forward kinematics of a tick, compiled: the one pass every estimator runs (Nori eqs. 2–3,
RBDA §4.4 and Table 4.1).

From the joint positions and rates, for a tree of 0/1-DoF joints (a free flyer as body 0 allowed),
in preallocated flat arrays (body after body; rotations row-major):

* :func:`joint_transforms`: ``ⁱX_λ(i) = X_J(q_i) X_T(i) = plux(E_i, r_i)``, the only
  state-dependent blocks of Nori's matrix ``D`` (eqs. 4a, 4d);
* :func:`poses`: ``ⁱX_0 = plux(R_i, p_i)`` of the bodies sensors and contacts need;
* :func:`base_velocity`: the floating base's velocity ``v_0 = [ω_0; 0]`` from the gyro;
* :func:`velocities_and_bias`: ``v_i`` (eq. 2) and the bias terms ``c_i = v_i × S_i q̇_i`` and
  ``ν_i = v_i ×* I_i v_i`` (eq. 3), in body coordinates;
* :func:`imu_velocity_product`: ``ω_F × v_F`` of the IMU frame, which its proper-acceleration
  row needs.

Floating base: the base's angular velocity comes from the IMU; its linear velocity is set to zero.
Forces do not depend on a uniform translational velocity (Galilean invariance), and the IMU's
proper-acceleration row is written so that it stays consistent with this choice, so no sensor of
the base's linear velocity is needed (DESIGN.md).

:class:`KinematicTree` holds the constant arrays (plan time); the generic tick
(:mod:`rbd_estimator.estimation.kinematics`) passes them as they are, the structured tick passes
the same arrays packed in its blob.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..jit import fast_njit as njit, uidx as _u
from .robot_model import FREE, PRISMATIC, REVOLUTE, RobotModel
from .spatial_kernels import fcross, mcross_add, mx, rbi_apply, rbi_compact


def motion_axes(model: RobotModel) -> np.ndarray:
    """``S_i`` of every body as an ``(NB, 6)`` array in body coordinates (``[axis; 0]`` revolute,
    ``[0; axis]`` prismatic; zero rows for fixed and free joints)."""
    S = np.zeros((model.NB, 6))
    for i in range(model.NB):
        if model.joint_dofs[i] == 1 and model.joint_types[i] == REVOLUTE:
            S[i, :3] = model.axes[i]
        elif model.joint_dofs[i] == 1 and model.joint_types[i] == PRISMATIC:
            S[i, 3:] = model.axes[i]
    return S


def revolute_abc(axis: np.ndarray, E_tree: np.ndarray) -> np.ndarray:
    """``(A, B, C)`` (27 values) with ``R(axis, q)ᵀ E_tree = cos q A + sin q B + C`` (Rodrigues,
    unit ``axis``): ``A = (1 − a aᵀ) E_T``, ``B = −a× E_T``, ``C = a aᵀ E_T``."""
    a = np.asarray(axis, dtype=float)
    aa = np.outer(a, a)
    ax = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.concatenate([((np.eye(3) - aa) @ E_tree).ravel(), (-ax @ E_tree).ravel(), (aa @ E_tree).ravel()])


class KinematicTree(NamedTuple):
    """The constant arrays of :func:`joint_transforms` and :func:`velocities_and_bias`, flat.

    ``jtype``, ``parents`` (NB); ``qidx``/``vidx``: index of body i's joint position/rate in the
    ``q``/``q̇`` the tick receives (-1 for fixed and free joints); ``E_tree`` (9 NB), ``r_tree``
    (3 NB): ``X_T(i) = plux(E_T, r_T)``; ``axes`` (3 NB); ``abc`` (27 NB, :func:`revolute_abc`, zero
    for other joints); ``S`` (6 NB, :func:`motion_axes`); ``I`` (10 NB, :func:`rbi_compact`)."""
    jtype: np.ndarray
    parents: np.ndarray
    qidx: np.ndarray
    vidx: np.ndarray
    E_tree: np.ndarray
    r_tree: np.ndarray
    axes: np.ndarray
    abc: np.ndarray
    S: np.ndarray
    I: np.ndarray

    @classmethod
    def of(cls, model: RobotModel, qidx, vidx) -> "KinematicTree":
        """The tree of ``model`` with the given position and rate indices of its 1-DoF joints."""
        jt = model.joint_types.astype(np.int64)
        abc = [revolute_abc(model.axes[i], model.E_tree[i]) if jt[i] == REVOLUTE else np.zeros(27)
               for i in range(model.NB)]
        flat = lambda x: np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(-1))  # noqa: E731
        return cls(jt, model.parents.astype(np.int64), np.asarray(qidx, dtype=np.int64),
                   np.asarray(vidx, dtype=np.int64), flat(model.E_tree), flat(model.r_tree), flat(model.axes),
                   flat(abc), flat(motion_axes(model)), flat([rbi_compact(I) for I in model.inertias]))


@njit
def joint_transforms(jtype, qidx, E_tree, r_tree, axes, abc, q, E, r):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i) = plux(E_i, r_i)`` for every body (RBDA Table 4.1, eq. 4.x):
    revolute ``E_i = R(a_i, q_i)ᵀ E_T = cos q_i A_i + sin q_i B_i + C_i``, ``r_i = r_T``; prismatic
    ``E_i = E_T``, ``r_i = r_T + E_Tᵀ a_i q_i``; fixed and free joints ``X_T`` (a free flyer's pose
    enters through the IMU). Rad, m."""
    for i in range(jtype.shape[0]):
        t = jtype[_u(i)]
        eo, ro = 9 * i, 3 * i
        if t == REVOLUTE:
            qi = q[_u(qidx[_u(i)])]
            c, s = np.cos(qi), np.sin(qi)
            ao = 27 * i
            for k in range(9):
                E[_u(eo + k)] = c * abc[_u(ao + k)] + s * abc[_u(ao + 9 + k)] + abc[_u(ao + 18 + k)]
        else:
            for k in range(9):
                E[_u(eo + k)] = E_tree[_u(eo + k)]
        for a in range(3):
            r[_u(ro + a)] = r_tree[_u(ro + a)]
        if t == PRISMATIC:
            qi = q[_u(qidx[_u(i)])]
            x0, x1, x2 = axes[_u(ro)] * qi, axes[_u(ro + 1)] * qi, axes[_u(ro + 2)] * qi
            for a in range(3):
                r[_u(ro + a)] += E_tree[_u(eo + a)] * x0 + E_tree[_u(eo + 3 + a)] * x1 + E_tree[_u(eo + 6 + a)] * x2


@njit
def poses(jtype, parents, bodies, E, r, R, p):
    """``ⁱX_0 = plux(R_i, p_i)`` for each body of ``bodies`` (ascending, every ancestor listed
    before): ``R_i = E_i R_λ``, ``p_i = p_λ + R_λᵀ r_i`` (RBDA eq. 2.25); a free flyer's is the
    identity (the base frame is frame 0), a root's on a fixed base ``X_λ`` itself."""
    for kk in range(bodies.shape[0]):
        i = bodies[_u(kk)]
        b = parents[_u(i)]
        Ro, po, eo, ro = 9 * i, 3 * i, 9 * i, 3 * i
        if jtype[_u(i)] == FREE:
            for k in range(9):
                R[_u(Ro + k)] = 1.0 if k % 4 == 0 else 0.0
            p[_u(po)], p[_u(po + 1)], p[_u(po + 2)] = 0.0, 0.0, 0.0
        elif b < 0:
            for k in range(9):
                R[_u(Ro + k)] = E[_u(eo + k)]
            p[_u(po)], p[_u(po + 1)], p[_u(po + 2)] = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
        else:
            Rb, pb = 9 * b, 3 * b
            for a in range(3):
                e0, e1, e2 = E[_u(eo + 3 * a)], E[_u(eo + 3 * a + 1)], E[_u(eo + 3 * a + 2)]
                R[_u(Ro + 3 * a)] = e0 * R[_u(Rb)] + e1 * R[_u(Rb + 3)] + e2 * R[_u(Rb + 6)]
                R[_u(Ro + 3 * a + 1)] = e0 * R[_u(Rb + 1)] + e1 * R[_u(Rb + 4)] + e2 * R[_u(Rb + 7)]
                R[_u(Ro + 3 * a + 2)] = e0 * R[_u(Rb + 2)] + e1 * R[_u(Rb + 5)] + e2 * R[_u(Rb + 8)]
            r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
            for a in range(3):
                p[_u(po + a)] = p[_u(pb + a)] + (R[_u(Rb + a)] * r0 + R[_u(Rb + 3 + a)] * r1 + R[_u(Rb + 6 + a)] * r2)


@njit
def base_velocity(chain, vidx, S, E, R, imu_body, imu_E, gyro, dq, v0):
    """The floating base's velocity ``v_0 = [ω_0; 0]`` (rad/s, base coordinates): the gyro
    reading ``ω_F`` (IMU frame) in the IMU's body ``ω_b = E_Fᵀ ω_F``, minus the joint rates of
    ``chain`` (the bodies from the base's child to the IMU's body, ascending) carried to it,
    ``ω_rel``, rotated back: ``ω_0 = ᵇR_0ᵀ (ω_b − ω_rel)`` with the pose ``R`` of the IMU's body."""
    wb0 = imu_E[0] * gyro[0] + imu_E[3] * gyro[1] + imu_E[6] * gyro[2]
    wb1 = imu_E[1] * gyro[0] + imu_E[4] * gyro[1] + imu_E[7] * gyro[2]
    wb2 = imu_E[2] * gyro[0] + imu_E[5] * gyro[1] + imu_E[8] * gyro[2]
    x0, x1, x2 = 0.0, 0.0, 0.0
    for kk in range(chain.shape[0]):
        i = chain[_u(kk)]
        k = vidx[_u(i)]
        qd = dq[_u(k)] if k >= 0 else 0.0
        eo, so = 9 * i, 6 * i
        y0 = E[_u(eo)] * x0 + E[_u(eo + 1)] * x1 + E[_u(eo + 2)] * x2 + S[_u(so)] * qd
        y1 = E[_u(eo + 3)] * x0 + E[_u(eo + 4)] * x1 + E[_u(eo + 5)] * x2 + S[_u(so + 1)] * qd
        y2 = E[_u(eo + 6)] * x0 + E[_u(eo + 7)] * x1 + E[_u(eo + 8)] * x2 + S[_u(so + 2)] * qd
        x0, x1, x2 = y0, y1, y2
    d0, d1, d2 = wb0 - x0, wb1 - x1, wb2 - x2
    Rb = 9 * imu_body
    v0[0] = R[_u(Rb)] * d0 + R[_u(Rb + 3)] * d1 + R[_u(Rb + 6)] * d2
    v0[1] = R[_u(Rb + 1)] * d0 + R[_u(Rb + 4)] * d1 + R[_u(Rb + 7)] * d2
    v0[2] = R[_u(Rb + 2)] * d0 + R[_u(Rb + 5)] * d1 + R[_u(Rb + 8)] * d2
    v0[3], v0[4], v0[5] = 0.0, 0.0, 0.0


@njit
def velocities_and_bias(jtype, parents, vidx, S, I, E, r, dq, v0, v, c, nu):
    """Nori eq. (2) forward, ``v_i = ⁱX_λ v_λ + S_i q̇_i`` (a free flyer's ``v_0`` given, m/s and
    rad/s, body coordinates), and the bias terms of eq. (3): ``c_i = v_i × S_i q̇_i`` (zero for the
    free flyer) and ``ν_i = v_i ×* I_i v_i`` (N, N·m)."""
    for i in range(jtype.shape[0]):
        b = parents[_u(i)]
        vo, so = 6 * i, 6 * i
        for k in range(6):
            c[_u(vo + k)] = 0.0
        if jtype[_u(i)] == FREE:
            for k in range(6):
                v[_u(vo + k)] = v0[_u(k)]
        else:
            if b >= 0:
                mx(E, 9 * i, r, 3 * i, v, 6 * b, v, vo)
            else:
                for k in range(6):
                    v[_u(vo + k)] = 0.0
            k = vidx[_u(i)]
            if k >= 0:                                   # v_J = S q̇; c = v × v_J = q̇ (v × S)
                qd = dq[_u(k)]
                for a in range(6):
                    v[_u(vo + a)] += S[_u(so + a)] * qd
                mcross_add(v, vo, S, so, c, vo)
                for a in range(6):
                    c[_u(vo + a)] *= qd
        for k in range(6):
            nu[_u(vo + k)] = 0.0
        rbi_apply(I, 10 * i, v, vo, nu, vo, 1.0)        # I v, then v ×* (I v) in place
        fcross(v, vo, nu, vo, nu, vo)


@njit
def imu_velocity_product(imu_E, imu_r, v, imu_body, t, out, o):
    """``out[o:o + 3] = ω_F × v_F`` (m/s²) with ``t = [ω_F; v_F] = ᶠX_b v_b`` the IMU frame's
    velocity (``ᶠX_b = plux(E_F, r_F)``, the frame's pose on its body ``b``; ``t``: 6 values)."""
    mx(imu_E, 0, imu_r, 0, v, 6 * imu_body, t, 0)
    out[_u(o)] = t[1] * t[5] - t[2] * t[4]
    out[_u(o + 1)] = t[2] * t[3] - t[0] * t[5]
    out[_u(o + 2)] = t[0] * t[4] - t[1] * t[3]
