"""Compiled spatial primitives of the dynamics kernels (Featherstone ch. 2), allocation-free.

A Plücker transform ``ᴮX_A = plux(E, r) = rot(E) xlt(r)`` (eq. 2.24) is held as its rotation ``E``
(3 × 3, row-major in 9 floats) and translation ``r`` (3,), never as a 6 × 6 matrix: ``X m``,
``Xᵀ f`` and ``Xᵀ I X`` are written out in those 12 numbers, as pinocchio's ``SE3`` does.
Motion vectors are ``[ω; v]``, force vectors ``[n; f]``; a 6 × 6 matrix is 36 floats, row-major.
Outputs never alias inputs. The joint models are those of :mod:`rbd_estimator.model.joints`.
"""
from __future__ import annotations

import numpy as np

from ..jit import njit
from ..model.robot_model import FREE, PRISMATIC, REVOLUTE

#: Floating-point licences of the dynamics kernels: FMA contraction and reassociation (so that the
#: 6-vector loops vectorise), never ``nnan``/``ninf`` (a NaN input stays visible).
FAST = {"contract", "reassoc", "nsz", "arcp"}


def kernel(fn):
    """A compiled dynamics kernel (:func:`rbd_estimator.jit.njit` with :data:`FAST`)."""
    return njit(fn, fastmath=FAST)


def inline(fn):
    """A small compiled primitive, inlined into its callers (a call costs as much as its body)."""
    return njit(fn, fastmath=FAST, inline="always")


@inline
def joint_transform(jtype, axis, ET, rT, q, k, E, r):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i) = plux(E, r)`` with ``E = E_J E_T``, ``r = r_T + E_Tᵀ r_J``.

    ``X_T = plux(ET, rT)`` (9 + 3 floats), the joint's position at ``q[k:]``. Revolute:
    ``E_J = R(axis, q_k)ᵀ`` (Rodrigues); prismatic: ``r_J = axis q_k`` (m); free: ``E_J = R(quat)ᵀ``,
    ``r_J = p`` with ``q[k:k+7] = [p, x, y, z, w]``; fixed: ``X_J = 1``.
    """
    e00, e01, e02, e10, e11, e12, e20, e21, e22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    p0 = p1 = p2 = 0.0
    if jtype == REVOLUTE:
        s, c = np.sin(q[k]), np.cos(q[k])
        x, y, z = axis[0], axis[1], axis[2]
        t = 1.0 - c
        e00, e01, e02 = c + x * x * t, x * y * t + z * s, x * z * t - y * s
        e10, e11, e12 = x * y * t - z * s, c + y * y * t, y * z * t + x * s
        e20, e21, e22 = x * z * t + y * s, y * z * t - x * s, c + z * z * t
    elif jtype == PRISMATIC:
        p0, p1, p2 = axis[0] * q[k], axis[1] * q[k], axis[2] * q[k]
    elif jtype == FREE:
        n = np.sqrt(q[k + 3] ** 2 + q[k + 4] ** 2 + q[k + 5] ** 2 + q[k + 6] ** 2)
        x, y, z, w = q[k + 3] / n, q[k + 4] / n, q[k + 5] / n, q[k + 6] / n
        e00, e10, e20 = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)   # E_J = R(quat)ᵀ
        e01, e11, e21 = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
        e02, e12, e22 = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
        p0, p1, p2 = q[k], q[k + 1], q[k + 2]
    for b in range(3):
        t0, t1, t2 = ET[b], ET[3 + b], ET[6 + b]
        E[b] = e00 * t0 + e01 * t1 + e02 * t2
        E[3 + b] = e10 * t0 + e11 * t1 + e12 * t2
        E[6 + b] = e20 * t0 + e21 * t1 + e22 * t2
        r[b] = rT[b] + ET[b] * p0 + ET[3 + b] * p1 + ET[6 + b] * p2


@inline
def X_motion(E, r, m, out):
    """``out = X m`` (eq. 2.24): ``ω' = E ω``, ``v' = E (v − r × ω)``."""
    w0, w1, w2 = m[0], m[1], m[2]
    u0 = m[3] - (r[1] * w2 - r[2] * w1)
    u1 = m[4] - (r[2] * w0 - r[0] * w2)
    u2 = m[5] - (r[0] * w1 - r[1] * w0)
    for a in range(3):
        out[a] = E[3 * a] * w0 + E[3 * a + 1] * w1 + E[3 * a + 2] * w2
        out[3 + a] = E[3 * a] * u0 + E[3 * a + 1] * u1 + E[3 * a + 2] * u2


@inline
def add_XT_force(E, r, f, out):
    """``out += Xᵀ f = ᵖX*_i f`` (force from child to parent coordinates, ``X* = X⁻ᵀ``):
    ``n_p = Eᵀ n + r × (Eᵀ f)``, ``f_p = Eᵀ f``."""
    n0 = E[0] * f[0] + E[3] * f[1] + E[6] * f[2]
    n1 = E[1] * f[0] + E[4] * f[1] + E[7] * f[2]
    n2 = E[2] * f[0] + E[5] * f[1] + E[8] * f[2]
    g0 = E[0] * f[3] + E[3] * f[4] + E[6] * f[5]
    g1 = E[1] * f[3] + E[4] * f[4] + E[7] * f[5]
    g2 = E[2] * f[3] + E[5] * f[4] + E[8] * f[5]
    out[0] += n0 + r[1] * g2 - r[2] * g1
    out[1] += n1 + r[2] * g0 - r[0] * g2
    out[2] += n2 + r[0] * g1 - r[1] * g0
    out[3] += g0
    out[4] += g1
    out[5] += g2


@inline
def motion_cross(v, m, out):
    """``out = v × m`` (eq. 2.31): ``[ω × μ; ω × m_v + v × μ]``."""
    out[0] = v[1] * m[2] - v[2] * m[1]
    out[1] = v[2] * m[0] - v[0] * m[2]
    out[2] = v[0] * m[1] - v[1] * m[0]
    out[3] = v[1] * m[5] - v[2] * m[4] + v[4] * m[2] - v[5] * m[1]
    out[4] = v[2] * m[3] - v[0] * m[5] + v[5] * m[0] - v[3] * m[2]
    out[5] = v[0] * m[4] - v[1] * m[3] + v[3] * m[1] - v[4] * m[0]


@inline
def add_force_cross(v, f, out):
    """``out += v ×* f`` (eq. 2.32): ``[ω × n + v × f; ω × f]``."""
    out[0] += v[1] * f[2] - v[2] * f[1] + v[4] * f[5] - v[5] * f[4]
    out[1] += v[2] * f[0] - v[0] * f[2] + v[5] * f[3] - v[3] * f[5]
    out[2] += v[0] * f[1] - v[1] * f[0] + v[3] * f[4] - v[4] * f[3]
    out[3] += v[1] * f[5] - v[2] * f[4]
    out[4] += v[2] * f[3] - v[0] * f[5]
    out[5] += v[0] * f[4] - v[1] * f[3]


@inline
def matvec6(M, x, out):
    """``out = M x`` for a 6 × 6 ``M`` (36 floats, row-major)."""
    for a in range(6):
        out[a] = (M[6 * a] * x[0] + M[6 * a + 1] * x[1] + M[6 * a + 2] * x[2]
                  + M[6 * a + 3] * x[3] + M[6 * a + 4] * x[4] + M[6 * a + 5] * x[5])


@inline
def _rotate_block(E, I, r0, c0, tmp, out, o):
    """``out[o:o+9] = Eᵀ Y E`` for the 3 × 3 block ``Y = I[r0:r0+3, c0:c0+3]``; ``tmp``: 9 floats."""
    for a in range(3):                                # tmp = Y E
        y0, y1, y2 = I[6 * (r0 + a) + c0], I[6 * (r0 + a) + c0 + 1], I[6 * (r0 + a) + c0 + 2]
        for b in range(3):
            tmp[3 * a + b] = y0 * E[b] + y1 * E[3 + b] + y2 * E[6 + b]
    for a in range(3):                                # out = Eᵀ tmp
        e0, e1, e2 = E[a], E[3 + a], E[6 + a]
        for b in range(3):
            out[o + 3 * a + b] = e0 * tmp[b] + e1 * tmp[3 + b] + e2 * tmp[6 + b]


@inline
def add_congruence(E, r, I, out, tmp):
    """``out += Xᵀ I X`` (Featherstone eq. 2.66 for any symmetric 6 × 6 ``I``, as the articulated
    inertias of the ABA): with ``rot(E)ᵀ I rot(E) = [[A, B], [Bᵀ, M]]`` and ``xlt(r)``,
    ``Xᵀ I X = [[A + r× Bᵀ − B' r×, B'], [B'ᵀ, M]]``, ``B' = B + r× M``. ``tmp``: 45 floats.
    Entry-wise, ``(r× Y)[:, b] = r × Y[:, b]`` and ``(Y r×)[a, :] = −r × Y[a, :]``."""
    r0, r1, r2 = r[0], r[1], r[2]
    _rotate_block(E, I, 0, 0, tmp[36:45], tmp, 0)    # A
    _rotate_block(E, I, 0, 3, tmp[36:45], tmp, 9)    # B
    _rotate_block(E, I, 3, 3, tmp[36:45], tmp, 18)   # M
    for b in range(3):                                # B' = B + r× M, column by column
        m0, m1, m2 = tmp[18 + b], tmp[21 + b], tmp[24 + b]
        tmp[27 + b] = tmp[9 + b] + r1 * m2 - r2 * m1
        tmp[30 + b] = tmp[12 + b] + r2 * m0 - r0 * m2
        tmp[33 + b] = tmp[15 + b] + r0 * m1 - r1 * m0
    for a in range(3):
        c0 = r1 * tmp[27 + 3 * a + 2] - r2 * tmp[27 + 3 * a + 1]     # c = r × B'[a, :]
        c1 = r2 * tmp[27 + 3 * a] - r0 * tmp[27 + 3 * a + 2]
        c2 = r0 * tmp[27 + 3 * a + 1] - r1 * tmp[27 + 3 * a]
        for b in range(3):
            d0 = r1 * tmp[9 + 3 * b + 2] - r2 * tmp[9 + 3 * b + 1]   # d = r × B[b, :]
            d1 = r2 * tmp[9 + 3 * b] - r0 * tmp[9 + 3 * b + 2]
            d2 = r0 * tmp[9 + 3 * b + 1] - r1 * tmp[9 + 3 * b]
            d = d0 if a == 0 else (d1 if a == 1 else d2)              # (r× Bᵀ)[a, b]
            c = c0 if b == 0 else (c1 if b == 1 else c2)              # −(B' r×)[a, b]
            out[6 * a + b] += tmp[3 * a + b] + d + c
            out[6 * a + 3 + b] += tmp[27 + 3 * a + b]
            out[6 * (3 + b) + a] += tmp[27 + 3 * a + b]
            out[6 * (3 + a) + 3 + b] += tmp[18 + 3 * a + b]


@inline
def spd_inverse(D, n, out):
    """``out = D⁻¹`` for a symmetric positive-definite ``n × n`` ``D`` (row-major, stride ``n``)
    by Gauss–Jordan elimination without pivoting (stable for SPD); ``D`` is overwritten.
    Returns False when a pivot is not positive."""
    for a in range(n * n):
        out[a] = 0.0
    for a in range(n):
        out[a * n + a] = 1.0
    for k in range(n):
        p = D[k * n + k]
        if not p > 0.0:
            return False
        for b in range(n):
            D[k * n + b] /= p
            out[k * n + b] /= p
        for a in range(n):
            if a != k:
                g = D[a * n + k]
                for b in range(n):
                    D[a * n + b] -= g * D[k * n + b]
                    out[a * n + b] -= g * out[k * n + b]
    return True
