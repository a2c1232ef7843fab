"""Compiled kinematic pass of the tick: transforms, velocities and the bias terms of Nori eq. (3).

Everything the linear system needs from ``q`` and ``q̇`` is computed here, in one loop over the
bodies in compiled code (numba), into preallocated arrays:

* ``X[i]``: ``ⁱX_λ(i) = X_J(q_i) X_T(i)`` (6×6 motion transform), the only state-dependent block
  of the matrix ``D`` (Nori eqs. 4a, 4d);
* ``c[i] = v_i × S_i q̇_i`` and ``nu[i] = v_i ×* I_i v_i`` (eq. 3), and ``X[i] a_0`` for bodies on
  the fixed base (eq. 5's ``b``), all in body coordinates.

Floating base: the base's angular velocity comes from the IMU; its linear velocity is set to zero.
Forces do not depend on a uniform translational velocity (Galilean invariance), and the IMU's
proper acceleration row (see :mod:`.layout`) is written so that it stays consistent with this
choice, so no sensor of the base's linear velocity is needed (DESIGN.md).
"""
from __future__ import annotations

import numpy as np

from ..model.robot_model import FREE, PRISMATIC, REVOLUTE
from ..jit import njit



@njit(error_model="python")
def _axis_rotation_T(axis, angle, E):
    """``E = R(axis, angle)ᵀ`` (Rodrigues): rotates parent-joint coordinates into body coordinates."""
    s, c = np.sin(angle), np.cos(angle)
    x, y, z = axis[0], axis[1], axis[2]
    t = 1.0 - c
    E[0, 0] = c + x * x * t
    E[1, 1] = c + y * y * t
    E[2, 2] = c + z * z * t
    E[0, 1] = x * y * t + z * s
    E[1, 0] = x * y * t - z * s
    E[0, 2] = x * z * t - y * s
    E[2, 0] = x * z * t + y * s
    E[1, 2] = y * z * t + x * s
    E[2, 1] = y * z * t - x * s


@njit(error_model="python")
def matvec_into(M, x, out):
    """``out = M x`` without allocating (numba's ``@`` allocates its result)."""
    for a in range(M.shape[0]):
        s = 0.0
        for b in range(M.shape[1]):
            s += M[a, b] * x[b]
        out[a] = s


@njit(error_model="python")
def joint_transforms(jtype, axes, E_tree, r_tree, q_of_body, q, E, r, EJ):
    """``ⁱX_λ(i) = plux(E[i], r[i]) = X_J(q_i) X_T(i)`` for every body, as rotation and translation.
    ``q_of_body[i]`` is the index of body i's joint position in ``q`` (joints only; -1 if none).
    The free-flyer body's transform is left as ``X_T`` (its pose enters through the IMU).
    ``EJ``: a 3×3 work array."""
    for i in range(jtype.shape[0]):
        t = jtype[i]
        E[i] = E_tree[i]
        r[i] = r_tree[i]
        if t == REVOLUTE:
            _axis_rotation_T(axes[i], q[q_of_body[i]], EJ)
            for a in range(3):
                for b in range(3):
                    E[i, a, b] = EJ[a, 0] * E_tree[i, 0, b] + EJ[a, 1] * E_tree[i, 1, b] + EJ[a, 2] * E_tree[i, 2, b]
        elif t == PRISMATIC:
            d = q[q_of_body[i]]
            for a in range(3):
                for b in range(3):
                    r[i, a] += E_tree[i, b, a] * axes[i, b] * d


@njit(error_model="python")
def plux_into(E, r, X):
    """Write ``plux(E, r) = [[E, 0], [-E r×, E]]`` into the 6×6 ``X``."""
    for a in range(3):
        for b in range(3):
            X[a, b] = E[a, b]
            X[a + 3, b + 3] = E[a, b]
            X[a, b + 3] = 0.0
    # -E r× : column b of r× is r × e_b
    for a in range(3):
        X[a + 3, 0] = -(E[a, 1] * r[2] - E[a, 2] * r[1])
        X[a + 3, 1] = -(E[a, 2] * r[0] - E[a, 0] * r[2])
        X[a + 3, 2] = -(E[a, 0] * r[1] - E[a, 1] * r[0])


@njit(error_model="python")
def motion_cross(v, m, out):
    """``out = v × m`` for motion vectors (Featherstone eq. 2.31)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] = w1 * m[2] - w2 * m[1]
    out[1] = w2 * m[0] - w0 * m[2]
    out[2] = w0 * m[1] - w1 * m[0]
    out[3] = w1 * m[5] - w2 * m[4] + u1 * m[2] - u2 * m[1]
    out[4] = w2 * m[3] - w0 * m[5] + u2 * m[0] - u0 * m[2]
    out[5] = w0 * m[4] - w1 * m[3] + u0 * m[1] - u1 * m[0]


@njit(error_model="python")
def force_cross(v, f, out):
    """``out = v ×* f`` for a force vector ``f`` (Featherstone eq. 2.32)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1
    out[1] = w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2
    out[2] = w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0
    out[3] = w1 * f2 - w2 * f1
    out[4] = w2 * f0 - w0 * f2
    out[5] = w0 * f1 - w1 * f0


@njit(error_model="python")
def velocity_pass(parents, jtype, S, v_of_body, X, dq, v0, a0, v, c, nu, Xa0, inertias, vJ, Iv):
    """Nori eq. (2) forward: ``v_i = X_i v_λ(i) + S_i q̇_i``; the bias terms ``c_i``, ``ν_i`` of
    eq. (3) and ``X_i a_0`` for bodies on the fixed base. ``v0`` is the floating base's velocity
    (ignored for a fixed base); ``S[i]`` is body i's 1-DoF motion axis (zero otherwise).
    ``vJ``, ``Iv``: 6-vector work arrays."""
    for i in range(parents.shape[0]):
        p = parents[i]
        if jtype[i] == FREE:
            v[i] = v0
            vJ[:] = v0
        else:
            qd = dq[v_of_body[i]] if v_of_body[i] >= 0 else 0.0
            for k in range(6):
                vJ[k] = S[i, k] * qd
            if p >= 0:
                matvec_into(X[i], v[p], v[i])
                for k in range(6):
                    v[i, k] += vJ[k]
            else:
                v[i] = vJ
        if p < 0 and jtype[i] != FREE:
            matvec_into(X[i], a0, Xa0[i])
        else:
            Xa0[i] = 0.0
        if jtype[i] == FREE:
            c[i] = 0.0
        else:
            motion_cross(v[i], vJ, c[i])
        matvec_into(inertias[i], v[i], Iv)
        force_cross(v[i], Iv, nu[i])
