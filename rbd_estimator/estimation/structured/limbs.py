"""The least squares with measured joint accelerations by limbs (docs/probabilistic_model.md, P4–P5).

With ``x = (δ, h)`` the base acceleration ``a_0 = a⁰⁰ + u`` couples every limb: the reduced normal
equations ``N = H + Pᵀ U + Uᵀ P`` of :mod:`.solve` are dense. Kept as an unknown with the base
equation ``u = P x`` (Nori eq. 3f at the root, multiplier ``λ``), the problem is the KKT system

    [[H, G], [Gᵀ, C₀]] (x; u, λ) = (b_h; b_a, 0),   G = [N_ahᵀ, −Pᵀ],   C₀ = [[N_aa, 1], [1, 0]]     (P4)

with ``H = J_xᵀ J_x + Λ`` block-diagonal by limbs (:func:`~.build._limb_blocks`: a limb's joints' ``δ``
and its contacts' ``h``, made contiguous by the plan's permutation). ``H = L Lᵀ`` block by block,
``G̃ = L⁻¹ G`` (12 columns) and the 12 × 12 Schur complement ``S = C₀ − G̃ᵀ G̃``, factorised through
its λ block ``C = P H⁻¹ Pᵀ = L_C L_Cᵀ``, ``R = L_C⁻¹ S₂₁`` and ``M = S₁₁ + Rᵀ R = L_M L_Mᵀ`` (the
posterior information of ``u``). An output ``o = o_x x + o_u u`` (a torque: ``s_i`` and ``F_i``, no
``P``; a contact component: one ``h``) has the variance (P5)

    ``|g|² + |L_M⁻¹ (w₁ + Rᵀ v₂)|² − |v₂|²``,  ``g = L⁻¹ o_x`` (its limbs' blocks), ``w = G̃ᵀ g − (o_u, 0)``,
    ``v₂ = L_C⁻¹ w₂``.

Exact when every limb block is well conditioned (a limb's sensors determine its contact without the
base equation): otherwise (:data:`~.layout._LIMB_THRESHOLD`) :func:`least_squares` solves the dense
normal equations of :mod:`.solve` instead.
"""
from __future__ import annotations

import numpy as np

from .covariance import _output_row, _torque_rows
from .layout import (H_BEN, H_BST, H_FLOAT, H_NC, H_NH, H_NJ, H_NX, H_OI, H_OP, H_OX, H_PRM, H_WBA, H_WBH,
    H_WGT, H_WH, H_WHL, H_WK, H_WLB, H_WLY, H_WNAA, H_WNAH, H_WNHH, H_WSC, H_WTU, H_WZ, H_WZF, _LIMB_THRESHOLD,
    _u, njit)
from .solve import _add_prior, _base_coupling, _cholesky_solve, _normal_equations

# the 12 × 12 system's work (WSC): S, L_C, Rᵀ, L_M, then vectors
_S, _LC, _RT, _LM, _C, _V, _T, _UL = 0, 144, 180, 216, 252, 264, 270, 276


@njit
def least_squares(ip, fp, w):
    """The normal equations and their solution ``x`` (``WH``): by limbs (module docstring) with measured
    accelerations when the limbs' blocks are well conditioned (``WLB`` set to 1), else the dense
    Cholesky of :mod:`.solve` (``L`` in ``N_hh``). Returns the condition estimate (the smallest
    Cholesky ratio ``L_kk² / N_kk``; below ``_QR_THRESHOLD`` the caller re-solves by QR)."""
    _normal_equations(ip, fp, w)
    _add_prior(ip, fp, w)
    NX = ip[H_NX]
    w[_u(ip[H_WLB])] = 0.0
    if NX > ip[H_NH] and ip[H_FLOAT]:
        ratio = _limb_solve(ip, w)
        if ratio >= _LIMB_THRESHOLD:
            w[_u(ip[H_WLB])] = 1.0
            return ratio
    if ip[H_FLOAT]:
        _base_coupling(ip, w)
    return _cholesky_solve(w, ip[H_WNHH], NX, w, ip[H_WBH], w, ip[H_WH])


@njit
def _limb_solve(ip, w):
    """(P4) by limbs, after :func:`~.solve._normal_equations` and the prior: ``L``, ``G̃``, the 12 × 12
    factors, ``x`` into ``WH``. Returns the smallest Cholesky ratio (0: a factor is not positive
    definite; below ``_LIMB_THRESHOLD`` nothing is written to ``WH``)."""
    NX, prm, bst = ip[H_NX], ip[H_PRM], ip[H_BST]
    Nhh, L, Gt, Nah, K, sc = ip[H_WNHH], ip[H_WHL], ip[H_WGT], ip[H_WNAH], ip[H_WK], ip[H_WSC]
    for i in range(NX):                         # H in the limbs' order (lower triangle of each block)
        a = ip[_u(prm + i)]
        for k in range(ip[_u(bst + i)], i + 1):
            b = ip[_u(prm + k)]
            w[_u(L + NX * i + k)] = w[_u(Nhh + NX * a + b)] if b <= a else w[_u(Nhh + NX * b + a)]
    worst = _block_cholesky(ip, w, L, NX)
    if worst < _LIMB_THRESHOLD:
        return worst
    S = sc + _S
    for k in range(144):
        w[_u(S + k)] = 0.0
    for i in range(NX):                         # G = [N_ahᵀ, −Pᵀ] row by row, G̃ = L⁻¹ G; S = −G̃ᵀ G̃
        a, gi, ri = ip[_u(prm + i)], Gt + 12 * i, L + NX * i
        for c in range(6):
            w[_u(gi + c)] = w[_u(Nah + NX * c + a)]
            w[_u(gi + 6 + c)] = -w[_u(K + 6 * a + c)]
        for k in range(ip[_u(bst + i)], i):
            l, gk = w[_u(ri + k)], Gt + 12 * k
            for c in range(12):
                w[_u(gi + c)] -= l * w[_u(gk + c)]
        d = w[_u(ri + i)]
        for c in range(12):
            w[_u(gi + c)] *= d
        for c in range(12):
            gc = w[_u(gi + c)]
            for e in range(c + 1):
                w[_u(S + 12 * c + e)] -= gc * w[_u(gi + e)]
    for c in range(12):                         # S = C₀ − G̃ᵀ G̃ (both triangles)
        for e in range(c + 1):
            c0 = 0.0
            if c < 6:
                c0 = w[_u(ip[H_WNAA] + 6 * c + e)]
            elif e == c - 6:
                c0 = 1.0
            s = w[_u(S + 12 * c + e)] + c0
            w[_u(S + 12 * c + e)] = s
            w[_u(S + 12 * e + c)] = s
    LC, RT, LM, cv = sc + _LC, sc + _RT, sc + _LM, sc + _C
    for a in range(6):                          # C = −S₂₂ = L_C L_Cᵀ
        for b in range(6):
            w[_u(LC + 6 * a + b)] = -w[_u(S + 12 * (6 + a) + 6 + b)]
    worst = min(worst, _cholesky_solve(w, LC, 6, w, cv, w, sc + _T))
    if worst < _LIMB_THRESHOLD:
        return worst
    for a in range(6):                          # Rᵀ's rows: L_C⁻¹ S₂₁'s columns (S₂₁[:, a] = S[a, 6:])
        for k in range(6):
            w[_u(RT + 6 * a + k)] = w[_u(S + 12 * a + 6 + k)]
        _forward6(w, LC, RT + 6 * a)
    for a in range(6):                          # M = S₁₁ + Rᵀ R
        for b in range(6):
            s = w[_u(S + 12 * a + b)]
            for k in range(6):
                s += w[_u(RT + 6 * a + k)] * w[_u(RT + 6 * b + k)]
            w[_u(LM + 6 * a + b)] = s
    # the mean: ỹ = L⁻¹ b_h; c = (b_a, 0) − G̃ ỹ; S (u, λ) = c; x = L⁻ᵀ (ỹ − G̃ᵀ (u, λ))
    y, bh = ip[H_WLY], ip[H_WBH]
    for i in range(NX):
        w[_u(y + i)] = w[_u(bh + ip[_u(prm + i)])]
    _block_forward(ip, w, L, NX, y, 0, NX)
    for c in range(12):
        w[_u(cv + c)] = w[_u(ip[H_WBA] + c)] if c < 6 else 0.0
    for i in range(NX):
        yi = w[_u(y + i)]
        for c in range(12):
            w[_u(cv + c)] -= yi * w[_u(Gt + 12 * i + c)]
    v, rhs, ul = sc + _V, sc + _T, sc + _UL
    for k in range(6):
        w[_u(v + k)] = w[_u(cv + 6 + k)]
    _forward6(w, LC, v)                         # v₂ = L_C⁻¹ c₂
    for a in range(6):                          # M u = c₁ + Rᵀ v₂
        s = w[_u(cv + a)]
        for k in range(6):
            s += w[_u(RT + 6 * a + k)] * w[_u(v + k)]
        w[_u(rhs + a)] = s
    worst = min(worst, _cholesky_solve(w, LM, 6, w, rhs, w, ul))
    if worst < _LIMB_THRESHOLD:
        return worst
    for k in range(6):                          # λ = L_C⁻ᵀ (R u − v₂)
        s = -w[_u(v + k)]
        for a in range(6):
            s += w[_u(RT + 6 * a + k)] * w[_u(ul + a)]
        w[_u(ul + 6 + k)] = s
    _backward6(w, LC, ul + 6)
    for i in range(NX):
        s = w[_u(y + i)]
        for c in range(12):
            s -= w[_u(Gt + 12 * i + c)] * w[_u(ul + c)]
        w[_u(y + i)] = s
    ben, xh = ip[H_BEN], ip[H_WH]
    for i in range(NX - 1, -1, -1):             # x = L⁻ᵀ (…), block by block
        s = w[_u(y + i)]
        for k in range(i + 1, ip[_u(ben + i)]):
            s -= w[_u(L + NX * k + i)] * w[_u(y + k)]
        w[_u(y + i)] = s * w[_u(L + NX * i + i)]
        w[_u(xh + ip[_u(prm + i)])] = w[_u(y + i)]
    return worst


@njit
def _block_cholesky(ip, w, L, n):
    """``H = L Lᵀ`` in place, block by block (``n × n`` row-major at ``L``, ``1 / L_jj`` on the
    diagonal). Returns ``min L_kk² / H_kk`` (0 if a block is not positive definite)."""
    bst, ben = ip[H_BST], ip[H_BEN]
    worst = 1.0
    for j in range(n):
        s0, rj = ip[_u(bst + j)], L + n * j
        hjj = w[_u(rj + j)]
        s = hjj
        for k in range(s0, j):
            s -= w[_u(rj + k)] * w[_u(rj + k)]
        if not (s > 0.0):
            return 0.0
        if s < worst * hjj:
            worst = s / hjj
        r = 1.0 / np.sqrt(s)
        w[_u(rj + j)] = r
        for i in range(j + 1, ip[_u(ben + j)]):
            ri = L + n * i
            t = w[_u(ri + j)]
            for k in range(s0, j):
                t -= w[_u(ri + k)] * w[_u(rj + k)]
            w[_u(ri + j)] = t * r
    return worst


@njit(inline="always")
def _block_forward(ip, w, L, n, v, lo, hi):
    """``v[lo:hi] ← L⁻¹ v[lo:hi]`` with the block-diagonal ``L`` of :func:`_block_cholesky` (``lo`` a
    block's start, ``hi`` a block's end)."""
    bst = ip[H_BST]
    for i in range(lo, hi):
        ri = L + n * i
        s = w[_u(v + i)]
        for k in range(ip[_u(bst + i)], i):
            s -= w[_u(ri + k)] * w[_u(v + k)]
        w[_u(v + i)] = s * w[_u(ri + i)]


@njit(inline="always")
def _forward6(w, L, v):
    """``v ← L⁻¹ v``, ``L`` 6 × 6 row-major with ``1 / L_jj`` on its diagonal."""
    for j in range(6):
        s = w[_u(v + j)]
        for k in range(j):
            s -= w[_u(L + 6 * j + k)] * w[_u(v + k)]
        w[_u(v + j)] = s * w[_u(L + 6 * j + j)]


@njit(inline="always")
def _backward6(w, L, v):
    """``v ← L⁻ᵀ v`` (:func:`_forward6`'s ``L``)."""
    for j in range(5, -1, -1):
        s = w[_u(v + j)]
        for k in range(j + 1, 6):
            s -= w[_u(L + 6 * k + j)] * w[_u(v + k)]
        w[_u(v + j)] = s * w[_u(L + 6 * j + j)]


@njit
def limb_covariance(ip, fp, w, cov):
    """``cov`` as :func:`~.covariance.covariance` fills it, from the factors of :func:`_limb_solve`
    (module docstring, P5): each output's ``(g, v₁, v₂)`` in a row of ``WZF``; a variance is
    ``|g|² + |v₁|² − |v₂|²``, a contact's covariance the same products between its six rows."""
    NJ, NX, NC = ip[H_NJ], ip[H_NX], ip[H_NC]
    _torque_rows(ip, fp, w, False)
    NR, ld, zf = NJ + 6 * NC, NX + 12, ip[H_WZF]
    for r in range(NR):
        _output_row(ip, fp, w, r)
        _limb_output(ip, fp, w, r)
    for r in range(NJ):
        cov[_u(r)] = _signed_dot(w, zf + r * ld, zf + r * ld, NX)
    for c in range(NC):
        for a in range(6):
            za = zf + (NJ + 6 * c + a) * ld
            for b in range(a + 1):
                s = _signed_dot(w, za, zf + (NJ + 6 * c + b) * ld, NX)
                cov[_u(NJ + 36 * c + 6 * a + b)] = s
                cov[_u(NJ + 36 * c + 6 * b + a)] = s


@njit(inline="always")
def _signed_dot(w, za, zb, NX):
    """``g_a · g_b + v₁ₐ · v₁ᵦ − v₂ₐ · v₂ᵦ`` of two rows of ``WZF``."""
    s = 0.0
    for j in range(NX + 6):
        s += w[_u(za + j)] * w[_u(zb + j)]
    t = 0.0
    for j in range(NX + 6, NX + 12):
        t += w[_u(za + j)] * w[_u(zb + j)]
    return s - t


@njit(inline="always")       # inlined: a call per output row would count the arrays' references
def _limb_output(ip, fp, w, r):
    """Row ``r`` of ``WZF``: ``(g, v₁, v₂)`` of output ``r`` (module docstring) from its ``o_x`` that
    :func:`~.covariance._output_row` put in ``WZ`` and its ``o_u = O_r F`` (``WTU``)."""
    NJ, NX, prm, bst, ben = ip[H_NJ], ip[H_NX], ip[H_PRM], ip[H_BST], ip[H_BEN]
    L, Gt, sc, tu = ip[H_WHL], ip[H_WGT], ip[H_WSC], ip[H_WTU]
    z, g = ip[H_WZ] + r * NX, ip[H_WZF] + r * (NX + 12)
    lo, hi = NX, 0
    for i in range(NX):                         # o_x in the limbs' order; its blocks' range
        v = w[_u(z + ip[_u(prm + i)])]
        w[_u(g + i)] = v
        if v != 0.0:
            lo = min(lo, i)
            hi = i + 1
    if hi > lo:
        lo, hi = ip[_u(bst + lo)], ip[_u(ben + hi - 1)]
        _block_forward(ip, w, L, NX, g, lo, hi)
    cw = sc + _C
    for c in range(12):                         # w = G̃ᵀ g − (o_u, 0)
        w[_u(cw + c)] = 0.0
    for i in range(lo, hi):
        gi = w[_u(g + i)]
        for c in range(12):
            w[_u(cw + c)] += gi * w[_u(Gt + 12 * i + c)]
    for pq in range(ip[_u(ip[H_OP] + r)], ip[_u(ip[H_OP] + r + 1)]):
        sel = ip[_u(ip[H_OI] + pq)]
        if sel < NJ:
            v = fp[_u(ip[H_OX] + pq)]
            for k in range(6):
                w[_u(cw + k)] -= v * w[_u(tu + 6 * sel + k)]
    v1, v2 = g + NX, g + NX + 6
    for k in range(6):
        w[_u(v2 + k)] = w[_u(cw + 6 + k)]
    _forward6(w, sc + _LC, v2)
    for a in range(6):
        s = w[_u(cw + a)]
        for k in range(6):
            s += w[_u(sc + _RT + 6 * a + k)] * w[_u(v2 + k)]
        w[_u(v1 + a)] = s
    _forward6(w, sc + _LM, v1)
