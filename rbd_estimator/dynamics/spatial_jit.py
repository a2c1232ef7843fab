"""Compiled spatial primitives of the dynamics kernels (Featherstone ch. 2), allocation-free.

A Plücker transform ``ᴮX_A = plux(E, r) = rot(E) xlt(r)`` (eq. 2.24) is held as its rotation ``E``
(3 × 3, row-major in 9 floats) followed by its translation ``r`` (3 floats), never as a 6 × 6
matrix: ``X m``, ``Xᵀ f`` and ``Xᵀ I X`` are written out in those 12 numbers, as pinocchio's
``SE3`` does. Motion vectors are ``[ω; v]``, force vectors ``[n; f]``; a 6 × 6 matrix is 36 floats,
row-major. Every operand is ``(array, offset)`` into a flat float array (no array views: in a
compiled loop over bodies a view costs as much as a 6-vector operation). Outputs never alias
inputs. The joint models are those of :mod:`rbd_estimator.model.joints`.
"""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit
from ..model.robot_model import FREE, PRISMATIC, REVOLUTE

def kernel(fn):
    """A compiled dynamics kernel (:func:`rbd_estimator.jit.fast_njit`: the package's fast-math
    licences, never ``nnan``/``ninf``, so a NaN input stays visible)."""
    return fast_njit(fn)


def inline(fn):
    """A small compiled primitive, inlined into its callers (a call costs as much as its body)."""
    return fast_njit(fn, inline="always")


@inline
def joint_transform(jtype, J, j, q, k, T, t):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i) = plux(E, r)`` into ``T[t:t+12]``, with ``E = E_J E_T``,
    ``r = r_T + E_Tᵀ r_J``. ``J[j:j+15]``: the joint axis, then ``X_T = plux(E_T, r_T)``; the
    joint's position is ``q[k:]``. Revolute: ``E_J = R(axis, q_k)ᵀ`` (Rodrigues); prismatic:
    ``r_J = axis q_k`` (m); free: ``E_J = R(quat)ᵀ``, ``r_J = p`` with ``q[k:k+7] = [p, x, y, z, w]``;
    fixed: ``X_J = 1``.
    """
    e00, e01, e02, e10, e11, e12, e20, e21, e22 = 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0
    p0 = p1 = p2 = 0.0
    if jtype == REVOLUTE:
        s, c = np.sin(q[k]), np.cos(q[k])
        x, y, z = J[j], J[j + 1], J[j + 2]
        u = 1.0 - c
        e00, e01, e02 = c + x * x * u, x * y * u + z * s, x * z * u - y * s
        e10, e11, e12 = x * y * u - z * s, c + y * y * u, y * z * u + x * s
        e20, e21, e22 = x * z * u + y * s, y * z * u - x * s, c + z * z * u
    elif jtype == PRISMATIC:
        p0, p1, p2 = J[j] * q[k], J[j + 1] * q[k], J[j + 2] * q[k]
    elif jtype == FREE:
        n = np.sqrt(q[k + 3] ** 2 + q[k + 4] ** 2 + q[k + 5] ** 2 + q[k + 6] ** 2)
        x, y, z, w = q[k + 3] / n, q[k + 4] / n, q[k + 5] / n, q[k + 6] / n
        e00, e10, e20 = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)   # E_J = R(quat)ᵀ
        e01, e11, e21 = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
        e02, e12, e22 = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
        p0, p1, p2 = q[k], q[k + 1], q[k + 2]
    e = j + 3
    for b in range(3):
        t0, t1, t2 = J[e + b], J[e + 3 + b], J[e + 6 + b]
        T[t + b] = e00 * t0 + e01 * t1 + e02 * t2
        T[t + 3 + b] = e10 * t0 + e11 * t1 + e12 * t2
        T[t + 6 + b] = e20 * t0 + e21 * t1 + e22 * t2
        T[t + 9 + b] = J[e + 9 + b] + t0 * p0 + t1 * p1 + t2 * p2


@inline
def X_motion(T, t, m, o, out, u):
    """``out[u:u+6] = X m`` (eq. 2.24) for ``X = T[t:t+12]``: ``ω' = E ω``, ``v' = E (v − r × ω)``."""
    w0, w1, w2 = m[o], m[o + 1], m[o + 2]
    r0, r1, r2 = T[t + 9], T[t + 10], T[t + 11]
    v0 = m[o + 3] - (r1 * w2 - r2 * w1)
    v1 = m[o + 4] - (r2 * w0 - r0 * w2)
    v2 = m[o + 5] - (r0 * w1 - r1 * w0)
    for a in range(3):
        e0, e1, e2 = T[t + 3 * a], T[t + 3 * a + 1], T[t + 3 * a + 2]
        out[u + a] = e0 * w0 + e1 * w1 + e2 * w2
        out[u + 3 + a] = e0 * v0 + e1 * v1 + e2 * v2


@inline
def Xinv_motion(T, t, m, o, out, u):
    """``out[u:u+6] = X⁻¹ m`` for ``X = T[t:t+12]``: ``ω = Eᵀ ω'``, ``v = Eᵀ v' + r × ω``."""
    w0 = T[t] * m[o] + T[t + 3] * m[o + 1] + T[t + 6] * m[o + 2]
    w1 = T[t + 1] * m[o] + T[t + 4] * m[o + 1] + T[t + 7] * m[o + 2]
    w2 = T[t + 2] * m[o] + T[t + 5] * m[o + 1] + T[t + 8] * m[o + 2]
    r0, r1, r2 = T[t + 9], T[t + 10], T[t + 11]
    out[u] = w0
    out[u + 1] = w1
    out[u + 2] = w2
    out[u + 3] = T[t] * m[o + 3] + T[t + 3] * m[o + 4] + T[t + 6] * m[o + 5] + r1 * w2 - r2 * w1
    out[u + 4] = T[t + 1] * m[o + 3] + T[t + 4] * m[o + 4] + T[t + 7] * m[o + 5] + r2 * w0 - r0 * w2
    out[u + 5] = T[t + 2] * m[o + 3] + T[t + 5] * m[o + 4] + T[t + 8] * m[o + 5] + r0 * w1 - r1 * w0


@inline
def compose(T, t, U, v, out, u):
    """``out[u:u+12] = X₁ X₂`` for ``X₁ = T[t:t+12]``, ``X₂ = U[v:v+12]``:
    ``plux(E₁, r₁) plux(E₂, r₂) = plux(E₁ E₂, r₂ + E₂ᵀ r₁)``."""
    for a in range(3):
        for b in range(3):
            out[u + 3 * a + b] = (T[t + 3 * a] * U[v + b] + T[t + 3 * a + 1] * U[v + 3 + b]
                                  + T[t + 3 * a + 2] * U[v + 6 + b])
        out[u + 9 + a] = U[v + 9 + a] + U[v + a] * T[t + 9] + U[v + 3 + a] * T[t + 10] + U[v + 6 + a] * T[t + 11]


@inline
def add_XT_force(T, t, f, o, out, u):
    """``out[u:u+6] += Xᵀ f = ᵖX*_i f`` (force from child to parent coordinates, ``X* = X⁻ᵀ``):
    ``n_p = Eᵀ n + r × (Eᵀ f)``, ``f_p = Eᵀ f``."""
    n0 = T[t] * f[o] + T[t + 3] * f[o + 1] + T[t + 6] * f[o + 2]
    n1 = T[t + 1] * f[o] + T[t + 4] * f[o + 1] + T[t + 7] * f[o + 2]
    n2 = T[t + 2] * f[o] + T[t + 5] * f[o + 1] + T[t + 8] * f[o + 2]
    g0 = T[t] * f[o + 3] + T[t + 3] * f[o + 4] + T[t + 6] * f[o + 5]
    g1 = T[t + 1] * f[o + 3] + T[t + 4] * f[o + 4] + T[t + 7] * f[o + 5]
    g2 = T[t + 2] * f[o + 3] + T[t + 5] * f[o + 4] + T[t + 8] * f[o + 5]
    r0, r1, r2 = T[t + 9], T[t + 10], T[t + 11]
    out[u] += n0 + r1 * g2 - r2 * g1
    out[u + 1] += n1 + r2 * g0 - r0 * g2
    out[u + 2] += n2 + r0 * g1 - r1 * g0
    out[u + 3] += g0
    out[u + 4] += g1
    out[u + 5] += g2


@inline
def motion_cross(v, o, m, p, out, u):
    """``out[u:u+6] = v × m`` (eq. 2.31): ``[ω × μ; ω × m_v + v × μ]``."""
    w0, w1, w2, v0, v1, v2 = v[o], v[o + 1], v[o + 2], v[o + 3], v[o + 4], v[o + 5]
    m0, m1, m2, m3, m4, m5 = m[p], m[p + 1], m[p + 2], m[p + 3], m[p + 4], m[p + 5]
    out[u] = w1 * m2 - w2 * m1
    out[u + 1] = w2 * m0 - w0 * m2
    out[u + 2] = w0 * m1 - w1 * m0
    out[u + 3] = w1 * m5 - w2 * m4 + v1 * m2 - v2 * m1
    out[u + 4] = w2 * m3 - w0 * m5 + v2 * m0 - v0 * m2
    out[u + 5] = w0 * m4 - w1 * m3 + v0 * m1 - v1 * m0


@inline
def add_force_cross(v, o, f, p, out, u):
    """``out[u:u+6] += v ×* f`` (eq. 2.32): ``[ω × n + v × f; ω × f]``."""
    w0, w1, w2, v0, v1, v2 = v[o], v[o + 1], v[o + 2], v[o + 3], v[o + 4], v[o + 5]
    n0, n1, n2, f0, f1, f2 = f[p], f[p + 1], f[p + 2], f[p + 3], f[p + 4], f[p + 5]
    out[u] += w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[u + 1] += w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[u + 2] += w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    out[u + 3] += w1 * f2 - w2 * f1
    out[u + 4] += w2 * f0 - w0 * f2
    out[u + 5] += w0 * f1 - w1 * f0


@inline
def matvec6(M, o, x, p, out, u):
    """``out[u:u+6] = M x`` for a 6 × 6 ``M = M[o:o+36]`` (row-major)."""
    x0, x1, x2, x3, x4, x5 = x[p], x[p + 1], x[p + 2], x[p + 3], x[p + 4], x[p + 5]
    for a in range(6):
        r = o + 6 * a
        out[u + a] = M[r] * x0 + M[r + 1] * x1 + M[r + 2] * x2 + M[r + 3] * x3 + M[r + 4] * x4 + M[r + 5] * x5


@inline
def rotate_block(T, t, I, o, tmp, u, s):
    """``tmp[u:u+9] = Eᵀ Y E`` for the 3 × 3 block ``Y`` of the 6 × 6 ``I`` at ``I[o]`` (stride 6);
    ``tmp[s:s+9]``: work."""
    for a in range(3):                                # Y E
        y0, y1, y2 = I[o + 6 * a], I[o + 6 * a + 1], I[o + 6 * a + 2]
        for b in range(3):
            tmp[s + 3 * a + b] = y0 * T[t + b] + y1 * T[t + 3 + b] + y2 * T[t + 6 + b]
    for a in range(3):                                # Eᵀ (Y E)
        e0, e1, e2 = T[t + a], T[t + 3 + a], T[t + 6 + a]
        for b in range(3):
            tmp[u + 3 * a + b] = e0 * tmp[s + b] + e1 * tmp[s + 3 + b] + e2 * tmp[s + 6 + b]


@inline
def add_congruence(T, t, I, o, out, u, tmp, w):
    """``out[u:u+36] += Xᵀ I X`` (Featherstone eq. 2.66 for any symmetric 6 × 6 ``I = I[o:o+36]``, as
    the articulated inertias of the ABA): with ``rot(E)ᵀ I rot(E) = [[A, B], [Bᵀ, M]]`` and
    ``xlt(r)``, ``Xᵀ I X = [[A + r× Bᵀ − B' r×, B'], [B'ᵀ, M]]``, ``B' = B + r× M``. Entry-wise,
    ``(r× Y)[:, b] = r × Y[:, b]`` and ``(Y r×)[a, :] = −r × Y[a, :]``. ``tmp[w:w+45]``: work."""
    r0, r1, r2 = T[t + 9], T[t + 10], T[t + 11]
    A, B, M, Bp = w, w + 9, w + 18, w + 27
    rotate_block(T, t, I, o, tmp, A, w + 36)         # A (upper left block)
    rotate_block(T, t, I, o + 3, tmp, B, w + 36)     # B (upper right)
    rotate_block(T, t, I, o + 21, tmp, M, w + 36)    # M (lower right)
    for b in range(3):                                # B' = B + r× M, column by column
        m0, m1, m2 = tmp[M + b], tmp[M + 3 + b], tmp[M + 6 + b]
        tmp[Bp + b] = tmp[B + b] + r1 * m2 - r2 * m1
        tmp[Bp + 3 + b] = tmp[B + 3 + b] + r2 * m0 - r0 * m2
        tmp[Bp + 6 + b] = tmp[B + 6 + b] + r0 * m1 - r1 * m0
    for a in range(3):
        c0 = r1 * tmp[Bp + 3 * a + 2] - r2 * tmp[Bp + 3 * a + 1]      # c = r × B'[a, :]
        c1 = r2 * tmp[Bp + 3 * a] - r0 * tmp[Bp + 3 * a + 2]
        c2 = r0 * tmp[Bp + 3 * a + 1] - r1 * tmp[Bp + 3 * a]
        for b in range(3):
            d0 = r1 * tmp[B + 3 * b + 2] - r2 * tmp[B + 3 * b + 1]    # d = r × B[b, :]
            d1 = r2 * tmp[B + 3 * b] - r0 * tmp[B + 3 * b + 2]
            d2 = r0 * tmp[B + 3 * b + 1] - r1 * tmp[B + 3 * b]
            d = d0 if a == 0 else (d1 if a == 1 else d2)              # (r× Bᵀ)[a, b]
            c = c0 if b == 0 else (c1 if b == 1 else c2)              # −(B' r×)[a, b]
            out[u + 6 * a + b] += tmp[A + 3 * a + b] + d + c
            out[u + 6 * a + 3 + b] += tmp[Bp + 3 * a + b]
            out[u + 6 * (3 + b) + a] += tmp[Bp + 3 * a + b]
            out[u + 6 * (3 + a) + 3 + b] += tmp[M + 3 * a + b]


@inline
def spd_inverse(D, o, n, out, u):
    """``out[u:u+n²] = D⁻¹`` for a symmetric positive-definite ``n × n`` ``D = D[o:o+n²]``
    (row-major) by Gauss–Jordan elimination without pivoting (stable for SPD); ``D`` is
    overwritten. Returns False when a pivot is not positive."""
    for a in range(n * n):
        out[u + a] = 0.0
    for a in range(n):
        out[u + a * n + a] = 1.0
    for k in range(n):
        p = D[o + k * n + k]
        if not p > 0.0:
            return False
        for b in range(n):
            D[o + k * n + b] /= p
            out[u + k * n + b] /= p
        for a in range(n):
            if a != k:
                g = D[o + a * n + k]
                for b in range(n):
                    D[o + a * n + b] -= g * D[o + k * n + b]
                    out[u + a * n + b] -= g * out[u + k * n + b]
    return True
