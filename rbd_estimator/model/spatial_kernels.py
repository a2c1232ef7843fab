"""Featherstone's spatial arithmetic on flat arrays, compiled (RBDA §2.8): motion and force
transforms ``plux(E, r)`` and their transposes, the cross products, and the 10-number rigid-body
inertia applied, transformed and solved. The allocation-free counterparts of :mod:`rbd_estimator.spatial`
for the per-tick kernels of every layer (estimation now, compiled dynamics later).

Every operand is an array and an offset (``E, eo``: the 3×3 rotation ``E[eo:eo + 9]``, row-major;
``r, ro``: a 3-vector; ``x, xo``: a 6-vector, motion ``[ω; v]`` or force ``[n; f]``; ``I, io``: a
rigid-body inertia as :func:`rbi_compact` packs it), so that kernels work on slices of packed
buffers without creating views."""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit as njit, uidx as _u


def rbi_compact(I6: np.ndarray) -> np.ndarray:
    """Spatial inertia (6×6, body coordinates) → ``[m, h (3), Jxx, Jyy, Jzz, Jxy, Jxz, Jyz]`` with
    ``h = m c`` (kg·m) and ``J`` the rotational inertia about the body origin (kg·m²)."""
    m = I6[3, 3]
    C = I6[0:3, 3:6]                       # h×
    J = I6[0:3, 0:3]
    return np.array([m, C[2, 1], C[0, 2], C[1, 0], J[0, 0], J[1, 1], J[2, 2], J[0, 1], J[0, 2], J[1, 2]])


@njit
def plux_into(E, eo, r, ro, X, xo):
    """Write ``plux(E, r) = [[E, 0], [−E r×, E]]`` (RBDA eq. 2.24) row-major into ``X[xo:xo + 36]``."""
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    for a in range(3):
        e0, e1, e2 = E[_u(eo + 3 * a)], E[_u(eo + 3 * a + 1)], E[_u(eo + 3 * a + 2)]
        top, bottom = xo + 6 * a, xo + 6 * (a + 3)
        X[_u(top)], X[_u(top + 1)], X[_u(top + 2)] = e0, e1, e2
        X[_u(top + 3)], X[_u(top + 4)], X[_u(top + 5)] = 0.0, 0.0, 0.0
        X[_u(bottom)] = -(e1 * r2 - e2 * r1)            # −E r×: column b of r× is r × e_b
        X[_u(bottom + 1)] = -(e2 * r0 - e0 * r2)
        X[_u(bottom + 2)] = -(e0 * r1 - e1 * r0)
        X[_u(bottom + 3)], X[_u(bottom + 4)], X[_u(bottom + 5)] = e0, e1, e2


@njit
def fcross(v, vo, f, fo, y, yo):
    """``y = v ×* f`` for a motion vector ``v`` and a force vector ``f`` (RBDA eq. 2.32); ``y`` may
    be ``f`` itself."""
    w0, w1, w2, u0, u1, u2 = v[_u(vo)], v[_u(vo + 1)], v[_u(vo + 2)], v[_u(vo + 3)], v[_u(vo + 4)], v[_u(vo + 5)]
    n0, n1, n2, f0, f1, f2 = f[_u(fo)], f[_u(fo + 1)], f[_u(fo + 2)], f[_u(fo + 3)], f[_u(fo + 4)], f[_u(fo + 5)]
    y[_u(yo)] = w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1
    y[_u(yo + 1)] = w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2
    y[_u(yo + 2)] = w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0
    y[_u(yo + 3)] = w1 * f2 - w2 * f1
    y[_u(yo + 4)] = w2 * f0 - w0 * f2
    y[_u(yo + 5)] = w0 * f1 - w1 * f0


@njit
def mx(E, eo, r, ro, x, xo, y, yo):
    """``y = plux(E, r) x`` for a motion vector: ``ω' = E ω``, ``v' = E (v − r × ω)``."""
    w0, w1, w2 = x[_u(xo)], x[_u(xo + 1)], x[_u(xo + 2)]
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    u0 = x[_u(xo + 3)] - (r1 * w2 - r2 * w1)
    u1 = x[_u(xo + 4)] - (r2 * w0 - r0 * w2)
    u2 = x[_u(xo + 5)] - (r0 * w1 - r1 * w0)
    y[_u(yo)] = E[_u(eo)] * w0 + E[_u(eo + 1)] * w1 + E[_u(eo + 2)] * w2
    y[_u(yo + 1)] = E[_u(eo + 3)] * w0 + E[_u(eo + 4)] * w1 + E[_u(eo + 5)] * w2
    y[_u(yo + 2)] = E[_u(eo + 6)] * w0 + E[_u(eo + 7)] * w1 + E[_u(eo + 8)] * w2
    y[_u(yo + 3)] = E[_u(eo)] * u0 + E[_u(eo + 1)] * u1 + E[_u(eo + 2)] * u2
    y[_u(yo + 4)] = E[_u(eo + 3)] * u0 + E[_u(eo + 4)] * u1 + E[_u(eo + 5)] * u2
    y[_u(yo + 5)] = E[_u(eo + 6)] * u0 + E[_u(eo + 7)] * u1 + E[_u(eo + 8)] * u2


@njit
def mx_inv(E, eo, r, ro, x, xo, y, yo):
    """``y = plux(E, r)⁻¹ x`` for a motion vector (child to parent coordinates): ``ω' = Eᵀ ω``,
    ``v' = Eᵀ v + r × ω'``."""
    w0, w1, w2, u0, u1, u2 = x[_u(xo)], x[_u(xo + 1)], x[_u(xo + 2)], x[_u(xo + 3)], x[_u(xo + 4)], x[_u(xo + 5)]
    a0 = E[_u(eo)] * w0 + E[_u(eo + 3)] * w1 + E[_u(eo + 6)] * w2
    a1 = E[_u(eo + 1)] * w0 + E[_u(eo + 4)] * w1 + E[_u(eo + 7)] * w2
    a2 = E[_u(eo + 2)] * w0 + E[_u(eo + 5)] * w1 + E[_u(eo + 8)] * w2
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    y[_u(yo)], y[_u(yo + 1)], y[_u(yo + 2)] = a0, a1, a2
    y[_u(yo + 3)] = E[_u(eo)] * u0 + E[_u(eo + 3)] * u1 + E[_u(eo + 6)] * u2 + r1 * a2 - r2 * a1
    y[_u(yo + 4)] = E[_u(eo + 1)] * u0 + E[_u(eo + 4)] * u1 + E[_u(eo + 7)] * u2 + r2 * a0 - r0 * a2
    y[_u(yo + 5)] = E[_u(eo + 2)] * u0 + E[_u(eo + 5)] * u1 + E[_u(eo + 8)] * u2 + r0 * a1 - r1 * a0


@njit
def fxT_add(E, eo, r, ro, f, fo, y, yo, s):
    """``y += s · plux(E, r)ᵀ f`` for a force vector (child to parent): ``f' = Eᵀ f``,
    ``n' = Eᵀ n + r × f'``."""
    n0, n1, n2, f0, f1, f2 = f[_u(fo)], f[_u(fo + 1)], f[_u(fo + 2)], f[_u(fo + 3)], f[_u(fo + 4)], f[_u(fo + 5)]
    a0 = E[_u(eo)] * f0 + E[_u(eo + 3)] * f1 + E[_u(eo + 6)] * f2
    a1 = E[_u(eo + 1)] * f0 + E[_u(eo + 4)] * f1 + E[_u(eo + 7)] * f2
    a2 = E[_u(eo + 2)] * f0 + E[_u(eo + 5)] * f1 + E[_u(eo + 8)] * f2
    b0 = E[_u(eo)] * n0 + E[_u(eo + 3)] * n1 + E[_u(eo + 6)] * n2
    b1 = E[_u(eo + 1)] * n0 + E[_u(eo + 4)] * n1 + E[_u(eo + 7)] * n2
    b2 = E[_u(eo + 2)] * n0 + E[_u(eo + 5)] * n1 + E[_u(eo + 8)] * n2
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    y[_u(yo)] += s * (b0 + r1 * a2 - r2 * a1)
    y[_u(yo + 1)] += s * (b1 + r2 * a0 - r0 * a2)
    y[_u(yo + 2)] += s * (b2 + r0 * a1 - r1 * a0)
    y[_u(yo + 3)] += s * a0
    y[_u(yo + 4)] += s * a1
    y[_u(yo + 5)] += s * a2


@njit
def fx(E, eo, r, ro, f, fo, y, yo, s):
    """``y = s · plux(E, r)⁻ᵀ f`` (force, parent to child coordinates): ``f' = E f``,
    ``n' = E (n − r × f)``."""
    f0, f1, f2 = f[_u(fo + 3)], f[_u(fo + 4)], f[_u(fo + 5)]
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    m0 = f[_u(fo)] - (r1 * f2 - r2 * f1)
    m1 = f[_u(fo + 1)] - (r2 * f0 - r0 * f2)
    m2 = f[_u(fo + 2)] - (r0 * f1 - r1 * f0)
    y[_u(yo)] = s * (E[_u(eo)] * m0 + E[_u(eo + 1)] * m1 + E[_u(eo + 2)] * m2)
    y[_u(yo + 1)] = s * (E[_u(eo + 3)] * m0 + E[_u(eo + 4)] * m1 + E[_u(eo + 5)] * m2)
    y[_u(yo + 2)] = s * (E[_u(eo + 6)] * m0 + E[_u(eo + 7)] * m1 + E[_u(eo + 8)] * m2)
    y[_u(yo + 3)] = s * (E[_u(eo)] * f0 + E[_u(eo + 1)] * f1 + E[_u(eo + 2)] * f2)
    y[_u(yo + 4)] = s * (E[_u(eo + 3)] * f0 + E[_u(eo + 4)] * f1 + E[_u(eo + 5)] * f2)
    y[_u(yo + 5)] = s * (E[_u(eo + 6)] * f0 + E[_u(eo + 7)] * f1 + E[_u(eo + 8)] * f2)


@njit
def rbi_apply(I, io, x, xo, y, yo, s):
    """``y += s · I x`` with ``I = (m, h, J)``: ``[J ω + h × v; m v − h × ω]``."""
    m, h0, h1, h2 = I[_u(io)], I[_u(io + 1)], I[_u(io + 2)], I[_u(io + 3)]
    jxx, jyy, jzz = I[_u(io + 4)], I[_u(io + 5)], I[_u(io + 6)]
    jxy, jxz, jyz = I[_u(io + 7)], I[_u(io + 8)], I[_u(io + 9)]
    w0, w1, w2, v0, v1, v2 = x[_u(xo)], x[_u(xo + 1)], x[_u(xo + 2)], x[_u(xo + 3)], x[_u(xo + 4)], x[_u(xo + 5)]
    y[_u(yo)] += s * (jxx * w0 + jxy * w1 + jxz * w2 + h1 * v2 - h2 * v1)
    y[_u(yo + 1)] += s * (jxy * w0 + jyy * w1 + jyz * w2 + h2 * v0 - h0 * v2)
    y[_u(yo + 2)] += s * (jxz * w0 + jyz * w1 + jzz * w2 + h0 * v1 - h1 * v0)
    y[_u(yo + 3)] += s * (m * v0 - (h1 * w2 - h2 * w1))
    y[_u(yo + 4)] += s * (m * v1 - (h2 * w0 - h0 * w2))
    y[_u(yo + 5)] += s * (m * v2 - (h0 * w1 - h1 * w0))


@njit
def rbi_xT_add(E, eo, r, ro, I, io, P, po):
    """``P += Xᵀ I X`` for ``X = plux(E, r)`` (rigid-body inertia to parent coordinates, RBDA
    Table 2.5): ``m' = m``, ``h' = Eᵀh + m r``,
    ``J' = EᵀJE − (y rᵀ + r yᵀ) + 2 (r·y) 1 − m (r rᵀ − |r|² 1)``
    with ``y = Eᵀ h``."""
    m, h0, h1, h2 = I[_u(io)], I[_u(io + 1)], I[_u(io + 2)], I[_u(io + 3)]
    jxx, jyy, jzz = I[_u(io + 4)], I[_u(io + 5)], I[_u(io + 6)]
    jxy, jxz, jyz = I[_u(io + 7)], I[_u(io + 8)], I[_u(io + 9)]
    e00, e01, e02 = E[_u(eo)], E[_u(eo + 1)], E[_u(eo + 2)]
    e10, e11, e12 = E[_u(eo + 3)], E[_u(eo + 4)], E[_u(eo + 5)]
    e20, e21, e22 = E[_u(eo + 6)], E[_u(eo + 7)], E[_u(eo + 8)]
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    y0 = e00 * h0 + e10 * h1 + e20 * h2
    y1 = e01 * h0 + e11 * h1 + e21 * h2
    y2 = e02 * h0 + e12 * h1 + e22 * h2
    # T = J E
    t00 = jxx * e00 + jxy * e10 + jxz * e20
    t01 = jxx * e01 + jxy * e11 + jxz * e21
    t02 = jxx * e02 + jxy * e12 + jxz * e22
    t10 = jxy * e00 + jyy * e10 + jyz * e20
    t11 = jxy * e01 + jyy * e11 + jyz * e21
    t12 = jxy * e02 + jyy * e12 + jyz * e22
    t20 = jxz * e00 + jyz * e10 + jzz * e20
    t21 = jxz * e01 + jyz * e11 + jzz * e21
    t22 = jxz * e02 + jyz * e12 + jzz * e22
    ry = r0 * y0 + r1 * y1 + r2 * y2
    rr = r0 * r0 + r1 * r1 + r2 * r2
    d = 2.0 * ry + m * rr
    P[_u(po)] += m
    P[_u(po + 1)] += y0 + m * r0
    P[_u(po + 2)] += y1 + m * r1
    P[_u(po + 3)] += y2 + m * r2
    P[_u(po + 4)] += e00 * t00 + e10 * t10 + e20 * t20 - 2.0 * y0 * r0 + d - m * r0 * r0
    P[_u(po + 5)] += e01 * t01 + e11 * t11 + e21 * t21 - 2.0 * y1 * r1 + d - m * r1 * r1
    P[_u(po + 6)] += e02 * t02 + e12 * t12 + e22 * t22 - 2.0 * y2 * r2 + d - m * r2 * r2
    P[_u(po + 7)] += e00 * t01 + e10 * t11 + e20 * t21 - (y0 * r1 + r0 * y1) - m * r0 * r1
    P[_u(po + 8)] += e00 * t02 + e10 * t12 + e20 * t22 - (y0 * r2 + r0 * y2) - m * r0 * r2
    P[_u(po + 9)] += e01 * t02 + e11 * t12 + e21 * t22 - (y1 * r2 + r1 * y2) - m * r1 * r2


@njit
def solve_rbi(I, io, L, lo, x, xo, y, yo, s):
    """``y = s · I⁻¹ x`` for a rigid-body inertia ``I = (m, h, J)`` with the Cholesky factor ``L``
    (6 values) of its rotational inertia about the centre of mass ``Ī_C = J + (h hᵀ − |h|² 1)/m``:
    ``ω = Ī_C⁻¹ (n − c × f)``, ``v = f / m + c × ω``."""
    m = I[_u(io)]
    c0, c1, c2 = I[_u(io + 1)] / m, I[_u(io + 2)] / m, I[_u(io + 3)] / m
    n0, n1, n2, f0, f1, f2 = x[_u(xo)], x[_u(xo + 1)], x[_u(xo + 2)], x[_u(xo + 3)], x[_u(xo + 4)], x[_u(xo + 5)]
    b0 = n0 - (c1 * f2 - c2 * f1)
    b1 = n1 - (c2 * f0 - c0 * f2)
    b2 = n2 - (c0 * f1 - c1 * f0)
    l00, l10, l11, l20, l21, l22 = L[_u(lo)], L[_u(lo + 1)], L[_u(lo + 2)], L[_u(lo + 3)], L[_u(lo + 4)], L[_u(lo + 5)]
    z0 = b0 / l00
    z1 = (b1 - l10 * z0) / l11
    z2 = (b2 - l20 * z0 - l21 * z1) / l22
    w2 = z2 / l22
    w1 = (z1 - l21 * w2) / l11
    w0 = (z0 - l10 * w1 - l20 * w2) / l00
    y[_u(yo)] = s * w0
    y[_u(yo + 1)] = s * w1
    y[_u(yo + 2)] = s * w2
    y[_u(yo + 3)] = s * (f0 / m + (c1 * w2 - c2 * w1))
    y[_u(yo + 4)] = s * (f1 / m + (c2 * w0 - c0 * w2))
    y[_u(yo + 5)] = s * (f2 / m + (c0 * w1 - c1 * w0))
