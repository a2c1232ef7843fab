"""The compiled spatial algebra (Featherstone, RBDA ch. 2): the one set of allocation-free
primitives that every compiled kernel uses (forward kinematics and the estimator's ticks, the
compiled RNEA/ABA/CRBA/M⁻¹, the cluster and four-bar kernels). :mod:`rbd_estimator.spatial` is its
readable counterpart (6 × 6 numpy matrices), which the tests use as the oracle.

One representation: a Plücker transform ``ᴮX_A = plux(E, r) = rot(E) xlt(r)`` (eq. 2.24) is its
rotation ``E`` (3 × 3, row-major in 9 floats) and its translation ``r`` (3 floats, the position of
B's origin in A coordinates), never a 6 × 6 matrix in any kernel: ``X m``, ``X⁻¹ m``, ``Xᵀ f``,
``X⁻ᵀ f``, ``X₁ X₂`` and ``Xᵀ I X`` are written out in those 12 numbers, as pinocchio's ``SE3``
(:func:`mx_col` and :func:`fxT_col_add` apply a transform to the columns of a row-major 6 × n block,
as the cluster kernels' ``𝒥X S`` and ``Xᵀ U``). :func:`plux_into` writes the matrix's entries only
where a sparse system holds them as its coefficients (the generic tick's ``D``, Nori eqs. 4a, 4d).
Motion vectors are ``[ω; v]``, force vectors ``[n; f]``; a rigid-body inertia is 10 numbers
(:func:`rbi_compact`); a general 6 × 6 matrix that is not a transform (an inertia, an articulated
inertia) is 36 floats, row-major.

Every operand is ``(array, offset)`` into a flat float array (``E, eo``: ``E[eo:eo + 9]``; ``r, ro``;
``x, xo``; …), so that kernels work on slices of packed buffers without creating views (in a
compiled loop over bodies a view costs as much as a 6-vector operation). Offsets must be ≥ 0 (they
index through :data:`~rbd_estimator.jit.uidx`). Every primitive is inlined into its caller
(``inline='always'``: a call would cost as much as the body); a primitive reads all its inputs
before it writes, so an output may alias an input unless the docstring says otherwise. Primitives
do not branch (the cross products and :func:`mv6` return six numbers, which :func:`set6` or
:func:`add6` store: ``y = …`` and ``y += …`` without a flag): numba counts the references
of the arrays an inlined function receives, and only where the function is one straight path can it
prune those counts again (a branching primitive cost the joint transforms 5× on iCub).
"""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit, uidx as _u

__all__ = ["primitive", "rbi_compact", "plux_into", "mx", "mx_inv", "fx", "fxT_add", "compose", "mx_col", "fxT_col_add",
           "mcross", "fcross",
           "set6", "add6", "rbi_apply", "rbi_xT_add", "solve_rbi", "mv6", "rotate_block",
           "add_congruence", "spd_inverse"]


def primitive(fn):
    """A compiled spatial primitive: :func:`rbd_estimator.jit.fast_njit` (the package's fast-math
    licences, never ``nnan``/``ninf``) inlined into every caller."""
    return fast_njit(fn, inline="always")


def rbi_compact(I6: np.ndarray) -> np.ndarray:
    """Spatial inertia (6×6, body coordinates) → ``[m, h (3), Jxx, Jyy, Jzz, Jxy, Jxz, Jyz]`` with
    ``h = m c`` (kg·m) and ``J`` the rotational inertia about the body origin (kg·m²)."""
    m = I6[3, 3]
    C = I6[0:3, 3:6]                       # h×
    J = I6[0:3, 0:3]
    return np.array([m, C[2, 1], C[0, 2], C[1, 0], J[0, 0], J[1, 1], J[2, 2], J[0, 1], J[0, 2], J[1, 2]])


# ---------------------------------------------------------------------------- transforms plux(E, r)
@primitive
def plux_into(E, eo, r, ro, X, xo):
    """Write ``plux(E, r) = [[E, 0], [−E r×, E]]`` (RBDA eq. 2.24) row-major into ``X[xo:xo + 36]``
    (``X`` must not overlap ``E`` or ``r``)."""
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


@primitive
def mx(E, eo, r, ro, x, xo, y, yo):
    """``y = plux(E, r) x`` for a motion vector (eq. 2.24): ``ω' = E ω``, ``v' = E (v − r × ω)``."""
    mx_col(E, eo, r, ro, x, xo, 1, y, yo, 1)


@primitive
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


@primitive
def fxT_add(E, eo, r, ro, f, fo, y, yo, s):
    """``y += s · plux(E, r)ᵀ f = s · ᵖX*_i f`` for a force vector (child to parent coordinates,
    ``X* = X⁻ᵀ``, eq. 2.25): ``f' = Eᵀ f``, ``n' = Eᵀ n + r × f'``."""
    fxT_col_add(E, eo, r, ro, f, fo, 1, y, yo, 1, s)


@primitive
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


@primitive
def compose(E1, e1, r1, q1, E2, e2, r2, q2, E, eo, r, ro):
    """``plux(E, r) = plux(E₁, r₁) plux(E₂, r₂) = plux(E₁ E₂, r₂ + E₂ᵀ r₁)`` (the output must not
    overlap the inputs)."""
    for a in range(3):
        for b in range(3):
            E[_u(eo + 3 * a + b)] = (E1[_u(e1 + 3 * a)] * E2[_u(e2 + b)] + E1[_u(e1 + 3 * a + 1)] * E2[_u(e2 + 3 + b)]
                                     + E1[_u(e1 + 3 * a + 2)] * E2[_u(e2 + 6 + b)])
        r[_u(ro + a)] = (r2[_u(q2 + a)] + E2[_u(e2 + a)] * r1[_u(q1)] + E2[_u(e2 + 3 + a)] * r1[_u(q1 + 1)]
                         + E2[_u(e2 + 6 + a)] * r1[_u(q1 + 2)])


# ---------------------------------------------------------------------------- transforms on columns
# (the cluster kernels: a transform applied to a column of a row-major 6 × n block, stride n)
@primitive
def mx_col(E, eo, r, ro, x, xo, xs, y, yo, ys):
    """``y = plux(E, r) x`` (:func:`mx`) for a motion vector ``x`` whose entries are ``xs`` apart,
    into ``y`` with stride ``ys`` (a column of a row-major 6 × n block: stride n)."""
    w0, w1, w2 = x[_u(xo)], x[_u(xo + xs)], x[_u(xo + 2 * xs)]
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    u0 = x[_u(xo + 3 * xs)] - (r1 * w2 - r2 * w1)
    u1 = x[_u(xo + 4 * xs)] - (r2 * w0 - r0 * w2)
    u2 = x[_u(xo + 5 * xs)] - (r0 * w1 - r1 * w0)
    y[_u(yo)] = E[_u(eo)] * w0 + E[_u(eo + 1)] * w1 + E[_u(eo + 2)] * w2
    y[_u(yo + ys)] = E[_u(eo + 3)] * w0 + E[_u(eo + 4)] * w1 + E[_u(eo + 5)] * w2
    y[_u(yo + 2 * ys)] = E[_u(eo + 6)] * w0 + E[_u(eo + 7)] * w1 + E[_u(eo + 8)] * w2
    y[_u(yo + 3 * ys)] = E[_u(eo)] * u0 + E[_u(eo + 1)] * u1 + E[_u(eo + 2)] * u2
    y[_u(yo + 4 * ys)] = E[_u(eo + 3)] * u0 + E[_u(eo + 4)] * u1 + E[_u(eo + 5)] * u2
    y[_u(yo + 5 * ys)] = E[_u(eo + 6)] * u0 + E[_u(eo + 7)] * u1 + E[_u(eo + 8)] * u2


@primitive
def fxT_col_add(E, eo, r, ro, f, fo, fs, y, yo, ys, s):
    """``y += s · plux(E, r)ᵀ f`` (:func:`fxT_add`) for a force vector ``f`` whose entries are ``fs``
    apart, into ``y`` with stride ``ys`` (columns of row-major 6 × n blocks: ``Xᵀ U``)."""
    n0, n1, n2 = f[_u(fo)], f[_u(fo + fs)], f[_u(fo + 2 * fs)]
    f0, f1, f2 = f[_u(fo + 3 * fs)], f[_u(fo + 4 * fs)], f[_u(fo + 5 * fs)]
    a0 = E[_u(eo)] * f0 + E[_u(eo + 3)] * f1 + E[_u(eo + 6)] * f2
    a1 = E[_u(eo + 1)] * f0 + E[_u(eo + 4)] * f1 + E[_u(eo + 7)] * f2
    a2 = E[_u(eo + 2)] * f0 + E[_u(eo + 5)] * f1 + E[_u(eo + 8)] * f2
    b0 = E[_u(eo)] * n0 + E[_u(eo + 3)] * n1 + E[_u(eo + 6)] * n2
    b1 = E[_u(eo + 1)] * n0 + E[_u(eo + 4)] * n1 + E[_u(eo + 7)] * n2
    b2 = E[_u(eo + 2)] * n0 + E[_u(eo + 5)] * n1 + E[_u(eo + 8)] * n2
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    y[_u(yo)] += s * (b0 + r1 * a2 - r2 * a1)
    y[_u(yo + ys)] += s * (b1 + r2 * a0 - r0 * a2)
    y[_u(yo + 2 * ys)] += s * (b2 + r0 * a1 - r1 * a0)
    y[_u(yo + 3 * ys)] += s * a0
    y[_u(yo + 4 * ys)] += s * a1
    y[_u(yo + 5 * ys)] += s * a2


# ---------------------------------------------------------------------------- cross products
@primitive
def mcross(v, vo, m, mo):
    """``v × m`` for motion vectors (eq. 2.31): ``[ω × μ; ω × m_v + v × μ]``, as six numbers."""
    w0, w1, w2, v0, v1, v2 = v[_u(vo)], v[_u(vo + 1)], v[_u(vo + 2)], v[_u(vo + 3)], v[_u(vo + 4)], v[_u(vo + 5)]
    m0, m1, m2, m3, m4, m5 = m[_u(mo)], m[_u(mo + 1)], m[_u(mo + 2)], m[_u(mo + 3)], m[_u(mo + 4)], m[_u(mo + 5)]
    return (w1 * m2 - w2 * m1, w2 * m0 - w0 * m2, w0 * m1 - w1 * m0,
            w1 * m5 - w2 * m4 + v1 * m2 - v2 * m1, w2 * m3 - w0 * m5 + v2 * m0 - v0 * m2,
            w0 * m4 - w1 * m3 + v0 * m1 - v1 * m0)


@primitive
def fcross(v, vo, f, fo):
    """``v ×* f`` for a motion vector ``v`` and a force vector ``f`` (eq. 2.32):
    ``[ω × n + v × f; ω × f]``, as six numbers."""
    w0, w1, w2, u0, u1, u2 = v[_u(vo)], v[_u(vo + 1)], v[_u(vo + 2)], v[_u(vo + 3)], v[_u(vo + 4)], v[_u(vo + 5)]
    n0, n1, n2, f0, f1, f2 = f[_u(fo)], f[_u(fo + 1)], f[_u(fo + 2)], f[_u(fo + 3)], f[_u(fo + 4)], f[_u(fo + 5)]
    return (w1 * n2 - w2 * n1 + u1 * f2 - u2 * f1, w2 * n0 - w0 * n2 + u2 * f0 - u0 * f2,
            w0 * n1 - w1 * n0 + u0 * f1 - u1 * f0, w1 * f2 - w2 * f1, w2 * f0 - w0 * f2, w0 * f1 - w1 * f0)


@primitive
def set6(y, yo, c):
    """``y[yo:yo + 6] = c`` for six numbers ``c`` (a primitive's result: ``set6(y, yo, fcross(v, vo, f, fo))``
    is ``y = v ×* f``; ``c`` is computed before ``y`` is written, so ``y`` may be an operand)."""
    y[_u(yo)], y[_u(yo + 1)], y[_u(yo + 2)], y[_u(yo + 3)], y[_u(yo + 4)], y[_u(yo + 5)] = c


@primitive
def add6(y, yo, c):
    """``y[yo:yo + 6] += c`` for six numbers ``c``."""
    y[_u(yo)] += c[0]
    y[_u(yo + 1)] += c[1]
    y[_u(yo + 2)] += c[2]
    y[_u(yo + 3)] += c[3]
    y[_u(yo + 4)] += c[4]
    y[_u(yo + 5)] += c[5]


# ---------------------------------------------------------------------------- rigid-body inertia (m, h, J)
@primitive
def rbi_apply(I, io, x, xo, y, yo, s):
    """``y += s · I x`` with ``I = (m, h, J)`` (eq. 2.63): ``[J ω + h × v; m v − h × ω]``."""
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


@primitive
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


@primitive
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


# ---------------------------------------------------------------------------- 6 × 6 matrices (row-major)
@primitive
def mv6(M, mo, x, xo):
    """``M x`` for a general 6 × 6 ``M = M[mo:mo + 36]`` (an inertia, not a transform), as six numbers."""
    x0, x1, x2, x3, x4, x5 = x[_u(xo)], x[_u(xo + 1)], x[_u(xo + 2)], x[_u(xo + 3)], x[_u(xo + 4)], x[_u(xo + 5)]
    return (_row6(M, mo, x0, x1, x2, x3, x4, x5), _row6(M, mo + 6, x0, x1, x2, x3, x4, x5),
            _row6(M, mo + 12, x0, x1, x2, x3, x4, x5), _row6(M, mo + 18, x0, x1, x2, x3, x4, x5),
            _row6(M, mo + 24, x0, x1, x2, x3, x4, x5), _row6(M, mo + 30, x0, x1, x2, x3, x4, x5))


@primitive
def _row6(M, o, x0, x1, x2, x3, x4, x5):
    """One row of :func:`mv6`."""
    return (M[_u(o)] * x0 + M[_u(o + 1)] * x1 + M[_u(o + 2)] * x2 + M[_u(o + 3)] * x3 + M[_u(o + 4)] * x4
            + M[_u(o + 5)] * x5)


@primitive
def rotate_block(E, eo, I, o, tmp, u, s):
    """``tmp[u:u+9] = Eᵀ Y E`` for the 3 × 3 block ``Y`` of the 6 × 6 ``I`` at ``I[o]`` (stride 6);
    ``tmp[s:s+9]``: work."""
    for a in range(3):                                # Y E
        y0, y1, y2 = I[_u(o + 6 * a)], I[_u(o + 6 * a + 1)], I[_u(o + 6 * a + 2)]
        for b in range(3):
            tmp[_u(s + 3 * a + b)] = y0 * E[_u(eo + b)] + y1 * E[_u(eo + 3 + b)] + y2 * E[_u(eo + 6 + b)]
    for a in range(3):                                # Eᵀ (Y E)
        e0, e1, e2 = E[_u(eo + a)], E[_u(eo + 3 + a)], E[_u(eo + 6 + a)]
        for b in range(3):
            tmp[_u(u + 3 * a + b)] = e0 * tmp[_u(s + b)] + e1 * tmp[_u(s + 3 + b)] + e2 * tmp[_u(s + 6 + b)]


@primitive
def add_congruence(E, eo, r, ro, I, o, out, u, tmp, w):
    """``out[u:u+36] += Xᵀ I X`` for ``X = plux(E, r)`` (eq. 2.66, for any symmetric 6 × 6
    ``I = I[o:o+36]``, as the articulated inertias of the ABA): with
    ``rot(E)ᵀ I rot(E) = [[A, B], [Bᵀ, M]]`` and ``xlt(r)``,
    ``Xᵀ I X = [[A + r× Bᵀ − B' r×, B'], [B'ᵀ, M]]``, ``B' = B + r× M``. Entry-wise,
    ``(r× Y)[:, b] = r × Y[:, b]`` and ``(Y r×)[a, :] = −r × Y[a, :]``. ``tmp[w:w+45]``: work."""
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    A, B, M, Bp = w, w + 9, w + 18, w + 27
    rotate_block(E, eo, I, o, tmp, A, w + 36)         # A (upper left block)
    rotate_block(E, eo, I, o + 3, tmp, B, w + 36)     # B (upper right)
    rotate_block(E, eo, I, o + 21, tmp, M, w + 36)    # M (lower right)
    for b in range(3):                                # B' = B + r× M, column by column
        m0, m1, m2 = tmp[_u(M + b)], tmp[_u(M + 3 + b)], tmp[_u(M + 6 + b)]
        tmp[_u(Bp + b)] = tmp[_u(B + b)] + r1 * m2 - r2 * m1
        tmp[_u(Bp + 3 + b)] = tmp[_u(B + 3 + b)] + r2 * m0 - r0 * m2
        tmp[_u(Bp + 6 + b)] = tmp[_u(B + 6 + b)] + r0 * m1 - r1 * m0
    for a in range(3):
        c0 = r1 * tmp[_u(Bp + 3 * a + 2)] - r2 * tmp[_u(Bp + 3 * a + 1)]      # c = r × B'[a, :]
        c1 = r2 * tmp[_u(Bp + 3 * a)] - r0 * tmp[_u(Bp + 3 * a + 2)]
        c2 = r0 * tmp[_u(Bp + 3 * a + 1)] - r1 * tmp[_u(Bp + 3 * a)]
        for b in range(3):
            d0 = r1 * tmp[_u(B + 3 * b + 2)] - r2 * tmp[_u(B + 3 * b + 1)]    # d = r × B[b, :]
            d1 = r2 * tmp[_u(B + 3 * b)] - r0 * tmp[_u(B + 3 * b + 2)]
            d2 = r0 * tmp[_u(B + 3 * b + 1)] - r1 * tmp[_u(B + 3 * b)]
            d = d0 if a == 0 else (d1 if a == 1 else d2)                      # (r× Bᵀ)[a, b]
            c = c0 if b == 0 else (c1 if b == 1 else c2)                      # −(B' r×)[a, b]
            out[_u(u + 6 * a + b)] += tmp[_u(A + 3 * a + b)] + d + c
            out[_u(u + 6 * a + 3 + b)] += tmp[_u(Bp + 3 * a + b)]
            out[_u(u + 6 * (3 + b) + a)] += tmp[_u(Bp + 3 * a + b)]
            out[_u(u + 6 * (3 + a) + 3 + b)] += tmp[_u(M + 3 * a + b)]


@primitive
def spd_inverse(D, o, n, out, u):
    """``out[u:u+n²] = D⁻¹`` for a symmetric positive-definite ``n × n`` ``D = D[o:o+n²]``
    (row-major) by Gauss–Jordan elimination without pivoting (stable for SPD); ``D`` is
    overwritten. Returns False when a pivot is not positive."""
    for a in range(n * n):
        out[_u(u + a)] = 0.0
    for a in range(n):
        out[_u(u + a * n + a)] = 1.0
    for k in range(n):
        p = D[_u(o + k * n + k)]
        if not p > 0.0:
            return False
        for b in range(n):
            D[_u(o + k * n + b)] /= p
            out[_u(u + k * n + b)] /= p
        for a in range(n):
            if a != k:
                g = D[_u(o + a * n + k)]
                for b in range(n):
                    D[_u(o + a * n + b)] -= g * D[_u(o + k * n + b)]
                    out[_u(u + a * n + b)] -= g * out[_u(u + k * n + b)]
    return True
