"""The least squares with measured joint accelerations by limbs (docs/probabilistic_model.md, P4–P5).

With ``x = (δ, h)`` the base acceleration ``a_0 = a⁰⁰ + u`` couples every limb: the reduced normal
equations ``N = H + Pᵀ U + Uᵀ P`` of :mod:`.solve` are dense. Kept as an unknown with the base
equation ``u = P x`` (Nori eq. 3f at the root, multiplier ``λ``), the problem is the KKT system

    [[H, G], [Gᵀ, C₀]] (x; u, λ) = (b_h; b_a, 0),   G = [N_ahᵀ, −Pᵀ],   C₀ = [[N_aa, 1], [1, 0]]     (P4)

with ``H = J_xᵀ J_x + Λ`` block-diagonal by limbs (:func:`plan`: the connected components of the
sensor rows' and the outputs' columns; made contiguous by the plan's permutation). ``H_b = L_b L_bᵀ``
block by block, ``G̃_b = L_b⁻¹ G_b`` and ``ỹ_b = L_b⁻¹ b_b``, the 12 × 12 Schur complement
``S = C₀ − Σ G̃_bᵀ G̃_b``, factorised through its λ block ``C = P H⁻¹ Pᵀ = L_C L_Cᵀ``,
``R = L_C⁻¹ S₂₁`` and ``M = S₁₁ + Rᵀ R = L_M L_Mᵀ`` (the posterior information of ``u``). An output
``o = o_x x + o_u u`` (a torque: ``s_i`` on its block and ``F_i``, no ``P``; a contact component: one
``h``) lies in one block and has the variance (P5)

    ``|y|² + |v₁|² − |v₂|²``,  ``y = L_b⁻¹ o_x``,  ``w = G̃_bᵀ y − (o_u, 0)``,
    ``v₂ = L_C⁻¹ w₂``,  ``v₁ = L_M⁻¹ (w₁ + Rᵀ v₂)``.

So ``(y, v₂, v₁)`` is one forward substitution with each block's ``(n_b + 12)``-square lower
triangular factor ``𝓛_b = [[L_b, 0], [−G̃'_bᵀ, D]]``, ``D = [[L_C, 0], [−Rᵀ, L_M]]`` (``G̃'``: the
λ columns first), of ``(o_x, 0, −o_u)``: the dense path's four-row kernel on rows of ``n_b + 12``.
Each block's ``𝓛_b`` is dense at its own offset (leading dimension ``n_b + 13``): ``L_b`` in its first
``n_b`` rows, ``−G̃'_bᵀ`` in the next twelve (the border rows) and ``ỹ_b`` in the last, made by one
Cholesky pass over all its rows, ``D`` copied in for the covariance.

Exact when every block and both 6 × 6 factors are well conditioned (Cholesky ratio at least
:data:`~.layout._LIMB_THRESHOLD`) and every block's sensors determine its contacts (:func:`_sensed`);
otherwise :func:`least_squares` solves the dense normal equations of :mod:`.solve` instead.
Substitutions are the dense path's kernels (:func:`~.solve._cholesky`,
:func:`~.covariance._substitute4`), four rows at a time.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .covariance import _joint_inertia, _joint_terms, _substitute4
from .layout import (H_FLOAT, H_HIX, H_IPM, H_JBD, H_LBK, H_LOUT, H_LOY, H_NH, H_NJ, H_NLB, H_NX, H_OI, H_OP,
    H_OX, H_PRI, H_PRM, H_WBA, H_WBH, H_WF0, H_WH, H_WHL, H_WK, H_WLB, H_WLY, H_WNAA, H_WNAH, H_WNHH, H_WSC, H_WZ,
    _LIMB_CANCEL, _LIMB_PRIOR, _LIMB_THRESHOLD, _QR_THRESHOLD, _REFINE_THRESHOLD, _u, njit)
from .solve import _add_prior, _back_substitute, _base_coupling, _cholesky, _cholesky_solve, _normal_equations, _refine

# the border system's work (WSC): S (13 × 12: row 12 is −Σ G̃ᵀ ỹ), L_C, Rᵀ, L_M, vectors
_S, _LC, _RT, _LM, _V, _UL = 0, 156, 192, 228, 264, 270
WSC_SIZE = 282
_REC = 6                        # a block's record in LBK: first position, size n_b, 𝓛_b's offset, outputs' range,
                                # its H's gather indices in HIX


@njit
def least_squares(ip, fp, w, dense=False):
    """The normal equations and their solution ``x`` (``WH``): by limbs (module docstring) when the
    plan has blocks, not ``dense``, and they are well conditioned (``WLB`` set to 1), else the dense Cholesky of
    :mod:`.solve` (``L`` in ``N_hh``). Returns the condition estimate: on the limbs' path the smallest
    Cholesky ratio ``L_kk² / H_kk`` of the blocks, ``C`` and ``M``; on the dense path that of ``N``
    (below ``_REFINE_THRESHOLD`` ``x`` is refined once, :func:`~.solve._refine`; below
    ``_QR_THRESHOLD`` the caller re-solves by QR instead)."""
    w[_u(ip[H_WLB])] = 0.0
    if ip[H_NLB] and not dense:
        _zero_blocks(ip, w)
        _normal_equations(ip, fp, w, False)
        _add_prior(ip, fp, w)
        ratio = _limb_solve(ip, fp, w)
        if ratio >= _LIMB_THRESHOLD:
            w[_u(ip[H_WLB])] = 1.0
            return ratio
    _normal_equations(ip, fp, w)            # (again after the limbs' path: N_hh whole)
    _add_prior(ip, fp, w)
    if ip[H_FLOAT]:
        _base_coupling(ip, w)
    ratio = _cholesky_solve(w, ip[H_WNHH], ip[H_NX], w, ip[H_WBH], w, ip[H_WH])
    if _QR_THRESHOLD <= ratio < _REFINE_THRESHOLD:      # (below _QR_THRESHOLD the caller re-solves by QR)
        _refine(ip, fp, w)
    return ratio


@njit(inline="always")
def _zero_blocks(ip, w):
    """The blocks' entries of ``N_hh`` (``HIX``) set to 0: all that :func:`_limb_solve` reads."""
    lbk, hix, Nhh = ip[H_LBK], ip[H_HIX], ip[H_WNHH]
    last = lbk + _REC * (ip[H_NLB] - 1)
    n = ip[_u(last + 1)]
    for k in range(ip[_u(last + 5)] + n * (n + 1) // 2):
        w[_u(Nhh + ip[_u(hix + k)])] = 0.0


@njit(inline="always")
def _border_row(n, c):
    """The row of ``𝓛_b`` (``n = n_b``) of ``G``'s column ``c`` (``u``: 0–5, ``λ``: 6–11)."""
    return n + 6 + c if c < 6 else n + c - 6


@njit
def _limb_solve(ip, fp, w):
    """(P4) by limbs after :func:`~.solve._normal_equations` and the prior: the blocks' factors,
    ``G̃``, the border's factors, ``x`` into ``WH``. Returns the smallest Cholesky ratio (below
    ``_LIMB_THRESHOLD`` it returns at once and ``WH`` is not written; 0 when a block's contacts are
    not :func:`_sensed`)."""
    NX, prm, lbk, y = ip[H_NX], ip[H_PRM], ip[H_LBK], ip[H_WLY]
    Nhh, Nah, K, bh = ip[H_WNHH], ip[H_WNAH], ip[H_WK], ip[H_WBH]
    sc = ip[H_WSC]
    S = sc + _S
    for k in range(156):
        w[_u(S + k)] = 0.0
    worst = 1.0
    for b in range(ip[H_NLB]):
        rec = lbk + _REC * b
        p0, n, L, h = ip[_u(rec)], ip[_u(rec + 1)], ip[H_WHL] + ip[_u(rec + 2)], ip[H_HIX] + ip[_u(rec + 5)]
        m, yb = n + 13, L + (n + 13) * (n + 12)
        for i in range(n):                      # H_b (lower triangle), −G_bᵀ = [−N_ah; P] and b_b, gathered
            hi = h + i * (i + 1) // 2
            for k in range(i + 1):
                w[_u(L + m * i + k)] = w[_u(Nhh + ip[_u(hi + k)])]
        for c in range(6):
            gu, gl, nc, kc = L + m * (n + 6 + c), L + m * (n + c), Nah + NX * c, K + c
            for i in range(n):
                a = ip[_u(prm + p0 + i)]
                w[_u(gu + i)] = -w[_u(nc + a)]
                w[_u(gl + i)] = w[_u(kc + 6 * a)]
        for i in range(n):
            w[_u(yb + i)] = w[_u(bh + ip[_u(prm + p0 + i)])]
        worst = min(worst, _cholesky(w, L, n, m, n + 13))   # and the border rows −G̃ = −L_b⁻¹ G_b, ỹ_b
        if worst < _LIMB_THRESHOLD or not _sensed(ip, fp, w, L, m, p0, n):
            return 0.0
        for c in range(13):                     # S −= G̃_bᵀ G̃_b (lower triangle), row 12 −= ỹ_bᵀ G̃_b
            _schur_row(w, L, m, n, S, c, yb)
    worst = min(worst, _border_factors(ip, w, sc))
    if worst < _LIMB_THRESHOLD:
        return worst
    _border_solve(ip, w, sc)
    ul, xh = sc + _UL, ip[H_WH]
    for b in range(ip[H_NLB]):                  # x_b = L_b⁻ᵀ (ỹ_b − G̃_b (u, λ)), scattered to x's order
        rec = lbk + _REC * b
        p0, n, L = ip[_u(rec)], ip[_u(rec + 1)], ip[H_WHL] + ip[_u(rec + 2)]
        m, yb = n + 13, y + p0
        for i in range(n):
            w[_u(yb + i)] = w[_u(L + m * (n + 12) + i)]
        for c in range(12):
            uc, gc = w[_u(ul + c)], L + m * _border_row(n, c)
            for i in range(n):
                w[_u(yb + i)] += w[_u(gc + i)] * uc
        _back_substitute(w, L, n, w, yb, m)
        for i in range(n):
            w[_u(xh + ip[_u(prm + p0 + i)])] = w[_u(yb + i)]
    return worst


@njit(inline="always")
def _sensed(ip, fp, w, L, m, p0, n):
    """Whether the block's sensors determine its contact components: each ``h`` pivot ``L_kk²`` (``h``
    comes last in a block) at least :data:`~.layout._LIMB_PRIOR` × its prior's information ``Λ_kk``.
    Else ``H_b⁻¹`` carries the prior's variance into ``C`` and into ``|y|² − |v₂|²``, differences of
    large terms (a foot without force-torque sensors: 4–13 % wrong variances on iCub)."""
    msa, prm, pri = ip[H_NX] - ip[H_NH], ip[H_PRM], ip[H_PRI]
    for i in range(n):
        col = ip[_u(prm + p0 + i)]
        if col >= msa:
            r, p = w[_u(L + m * i + i)], fp[_u(pri + col)]
            if r * r * p * p * _LIMB_PRIOR > 1.0:        # 1 / L_kk² < _LIMB_PRIOR Λ_kk
                return False
    return True


@njit(inline="always")
def _schur_row(w, L, m, n, S, c, yb):
    """Row ``c`` of ``S −= G̃_bᵀ G̃_b`` (its lower triangle; ``c = 12``: ``−= ỹ_bᵀ G̃_b``) from the
    border rows of ``𝓛_b`` at ``L``, four entries at a time (row ``c`` loaded once for them)."""
    gc = yb if c == 12 else L + m * _border_row(n, c)
    sign = -1.0 if c == 12 else 1.0             # the border rows hold −G̃
    e, ne = 0, min(c + 1, 12)
    while e < ne:
        g0 = L + m * _border_row(n, e)
        g1 = L + m * _border_row(n, e + 1) if e + 1 < ne else g0
        g2 = L + m * _border_row(n, e + 2) if e + 2 < ne else g0
        g3 = L + m * _border_row(n, e + 3) if e + 3 < ne else g0
        t0 = t1 = t2 = t3 = 0.0
        for i in range(n):
            g = w[_u(gc + i)]
            t0 += g * w[_u(g0 + i)]
            t1 += g * w[_u(g1 + i)]
            t2 += g * w[_u(g2 + i)]
            t3 += g * w[_u(g3 + i)]
        row = S + 12 * c + e
        w[_u(row)] -= sign * t0
        if e + 1 < ne:
            w[_u(row + 1)] -= sign * t1
        if e + 2 < ne:
            w[_u(row + 2)] -= sign * t2
        if e + 3 < ne:
            w[_u(row + 3)] -= sign * t3
        e += 4


@njit
def _border_factors(ip, w, sc):
    """``S = C₀ − Σ G̃ᵀ G̃`` completed, then ``C = −S₂₂ = L_C L_Cᵀ``, ``Rᵀ`` (rows ``L_C⁻¹ S₂₁``'s
    columns) and ``M = S₁₁ + Rᵀ R = L_M L_Mᵀ``. Returns the smaller Cholesky ratio."""
    S, LC, RT, LM, Naa = sc + _S, sc + _LC, sc + _RT, sc + _LM, ip[H_WNAA]
    for c in range(6):
        for e in range(c + 1):
            w[_u(S + 12 * c + e)] += w[_u(Naa + 6 * c + e)]
        w[_u(S + 12 * (6 + c) + c)] += 1.0
    for a in range(6):
        for e in range(a + 1):
            w[_u(LC + 6 * a + e)] = -w[_u(S + 12 * (6 + a) + 6 + e)]
    worst = _cholesky(w, LC, 6, 6, 6)
    if worst < _LIMB_THRESHOLD:
        return worst
    for a in range(6):
        for k in range(6):
            w[_u(RT + 6 * a + k)] = w[_u(S + 12 * (6 + k) + a)]
    _substitute4(w, LC, 6, RT, 0)
    _substitute4(w, LC, 6, RT + 24, 0, 1)
    _substitute4(w, LC, 6, RT + 30, 0, 1)
    for a in range(6):
        for e in range(a + 1):
            s = w[_u(S + 12 * a + e)]
            for k in range(6):
                s += w[_u(RT + 6 * a + k)] * w[_u(RT + 6 * e + k)]
            w[_u(LM + 6 * a + e)] = s
    return min(worst, _cholesky(w, LM, 6, 6, 6))


@njit
def _border_solve(ip, w, sc):
    """``S (u, λ) = c`` with ``c = (b_a, 0) − Σ G̃ᵀ ỹ`` (``S``'s row 12): ``v₂ = L_C⁻¹ c₂``,
    ``M u = c₁ + Rᵀ v₂``, ``λ = L_C⁻ᵀ (R u − v₂)``; ``(u, λ)`` at ``_UL``."""
    S, LC, RT, LM, v, ul, ba = sc + _S, sc + _LC, sc + _RT, sc + _LM, sc + _V, sc + _UL, ip[H_WBA]
    for k in range(6):
        w[_u(v + k)] = w[_u(S + 150 + k)]
    _substitute4(w, LC, 6, v, 0, 1)
    for a in range(6):
        s = w[_u(ba + a)] + w[_u(S + 144 + a)]
        for k in range(6):
            s += w[_u(RT + 6 * a + k)] * w[_u(v + k)]
        w[_u(ul + a)] = s
    _substitute4(w, LM, 6, ul, 0, 1)
    _back_substitute(w, LM, 6, w, ul, 6)
    for k in range(6):
        s = -w[_u(v + k)]
        for a in range(6):
            s += w[_u(RT + 6 * a + k)] * w[_u(ul + a)]
        w[_u(ul + 6 + k)] = s
    _back_substitute(w, LC, 6, w, ul + 6, 6)


@njit
def limb_covariance(ip, fp, w, cov):
    """``cov`` as :func:`~.covariance.covariance` fills it, from the factors of :func:`_limb_solve`
    (module docstring, P5), block by block: ``D`` into ``𝓛_b``, then each output's
    ``(o_x, 0, −o_u)`` (``WZ``, the block's outputs consecutive) through ``𝓛_b⁻¹``, four at a time,
    into ``(y, v₂, v₁)``. A variance is ``|y|² + |v₁|² − |v₂|²``, a contact's covariance the same
    products between its rows. Returns False, ``cov`` unfinished, when a variance has cancelled
    (:func:`_variance`): the caller solves densely instead."""
    NJ, sc = ip[H_NJ], ip[H_WSC]
    lbk, lout = ip[H_LBK], ip[H_LOUT]
    _joint_inertia(ip, w)
    for b in range(ip[H_NLB]):
        rec = lbk + _REC * b
        p0, n, L = ip[_u(rec)], ip[_u(rec + 1)], ip[H_WHL] + ip[_u(rec + 2)]
        o0, o1 = ip[_u(rec + 3)], ip[_u(rec + 4)]
        if o1 == o0:
            continue
        m = n + 13
        for k in range(6):                      # D = [[L_C, 0], [−Rᵀ, L_M]] (lower triangles)
            for e in range(k + 1):
                w[_u(L + m * (n + k) + n + e)] = w[_u(sc + _LC + 6 * k + e)]
                w[_u(L + m * (n + 6 + k) + n + 6 + e)] = w[_u(sc + _LM + 6 * k + e)]
            for e in range(6):
                w[_u(L + m * (n + 6 + k) + n + e)] = -w[_u(sc + _RT + 6 * k + e)]
        Y = ip[H_WZ] + ip[_u(ip[H_LOY] + ip[_u(lout + o0)])]
        a = o0
        while a < o1:
            q = min(4, o1 - a)
            first = m
            for k in range(q):
                first = min(first, _block_row(ip, fp, w, ip[_u(lout + a + k)], Y + (a - o0 + k) * m, p0, n))
            ya = Y + (a - o0) * m
            if q == 4:
                _substitute4(w, L, m, ya, first, 4, n + 12)
            else:
                for k in range(q):
                    _substitute4(w, L, m, ya + k * m, first, 1, n + 12)
            a += q
        for a in range(o0, o1):
            r, ya = ip[_u(lout + a)], Y + (a - o0) * m
            if r < NJ:
                s = _variance(w, ya, n)
                if s < 0.0:
                    return False
                cov[_u(r)] = s
            elif (r - NJ) % 6 == 0:             # a contact's six rows, consecutive in the block
                for i in range(6):
                    for k in range(i + 1):
                        if k < i:
                            s = _signed_dot(w, ya + i * m, ya + k * m, n)
                        else:
                            s = _variance(w, ya + i * m, n)
                            if s < 0.0:
                                return False
                        cov[_u(NJ + 6 * (r - NJ) + 6 * i + k)] = s
                        cov[_u(NJ + 6 * (r - NJ) + 6 * k + i)] = s
    return True


@njit(inline="always")
def _variance(w, ya, n):
    """``|y|² + |v₁|² − |v₂|²`` of a row ``(y, v₂, v₁)`` (:func:`_signed_dot` with itself), or −1 when
    the subtraction has cancelled: its positive terms over :data:`~.layout._LIMB_CANCEL` × the
    variance (rounding of that many ε). That happens where a block's own sensors barely see an output
    that the base's equation determines (``v₂`` takes back what ``|y|²`` carries): a force-torque
    sensor 10⁵ × noisier than configured under a prior 10⁴ × weaker than the default passes
    :func:`_sensed`, and gave variances 1e-2 off."""
    p = 0.0
    for i in range(n):
        p += w[_u(ya + i)] * w[_u(ya + i)]
    q = 0.0
    for k in range(n, n + 6):
        p += w[_u(ya + 6 + k)] * w[_u(ya + 6 + k)]
        q += w[_u(ya + k)] * w[_u(ya + k)]
    s = p - q
    return s if s * _LIMB_CANCEL >= p else -1.0        # (a zero row, p = 0: a variance of 0)


@njit(inline="always")
def _signed_dot(w, ya, yb, n):
    """``y_a · y_b − v₂ₐ · v₂ᵦ + v₁ₐ · v₁ᵦ`` of two rows ``(y, v₂, v₁)`` (``y`` of length ``n``)."""
    s = 0.0
    for i in range(n):
        s += w[_u(ya + i)] * w[_u(yb + i)]
    for k in range(n, n + 6):
        s += w[_u(ya + 6 + k)] * w[_u(yb + 6 + k)] - w[_u(ya + k)] * w[_u(yb + k)]
    return s


@njit(inline="always")
def _block_row(ip, fp, w, r, y, p0, n):
    """Output ``r``'s row ``(o_x, 0, −o_u)`` of its block (``n + 12`` entries at ``y``): its torques'
    ``s_i`` by :func:`~.covariance._joint_terms` in the limbs' order and ``o_u = Σ O_rj F_j``, its ``h``
    entries. Returns the index of its first nonzero."""
    NJ, NX, MSA, ipm, w_F = ip[H_NJ], ip[H_NX], ip[H_NX] - ip[H_NH], ip[H_IPM], ip[H_WF0]
    for i in range(n + 12):
        w[_u(y + i)] = 0.0
    first = n + 12                              # (entry n + 12, ỹ's column, is not read)
    for pq in range(ip[_u(ip[H_OP] + r)], ip[_u(ip[H_OP] + r + 1)]):
        sel, v = ip[_u(ip[H_OI] + pq)], fp[_u(ip[H_OX] + pq)]
        if sel < NJ:
            first = 0
            i = ip[_u(ip[H_JBD] + sel)]
            _joint_terms(ip, w, i, y - p0, ipm, v, True)
            for k in range(6):
                w[_u(y + n + 6 + k)] -= v * w[_u(w_F + 6 * i + k)]
        elif sel < NJ + NX - MSA:               # h_k is x's column MSA + k
            i = ip[_u(ipm + MSA + sel - NJ)] - p0
            w[_u(y + i)] += v
            first = min(first, i)
    return first


def plan(NX: int, row_cols, out_cols):
    """The limbs' blocks (module docstring), at planning: the connected components of ``x``'s columns
    that a sensor row (``row_cols``: each row's set of columns) or a covariance output (``out_cols``:
    output row ``r``'s columns, a torque's ``s_i``: the joints above and below ``i`` and the contacts
    below) joins, so that ``H`` is block-diagonal and each output lies in one block; a column joined
    by nothing is a block alone. Returns ``None`` when an output has no column, else:

    * ``prm``, position → column: the blocks in the order of their first column, each in increasing
      order (its joints' ``δ``, then its contacts' ``h``: a contact's rows start late), and its
      inverse ``ipm``;
    * ``lbk``, per block: first position, size, offset of its factor ``𝓛_b``, its outputs' range in
      ``lout``, its start in ``hix``;
    * ``lout``, the output rows by block, within one by their first nonzero then increasing (a
      contact's six rows together), and ``loy``, output row → offset of its row in ``WZ``;
    * ``hix``, each block's lower triangle row by row: the index in ``N_hh``;
    * the factors' total size and the output rows' (``n_b + 13`` each)."""
    if any(not cols for cols in out_cols):
        return None
    edges = []                                           # each row's columns joined to its first
    for cols in list(row_cols) + list(out_cols):
        if cols:
            lo = min(cols)
            edges += [(lo, c) for c in cols]
    a, b = np.array(edges, np.int64).reshape(-1, 2).T
    _, label = connected_components(sp.coo_matrix((np.ones(a.size), (a, b)), shape=(NX, NX)), directed=False)
    blocks = {}
    for c in range(NX):
        blocks.setdefault(label[c], []).append(c)
    first = [min(oc) for oc in out_cols]                 # an output's first column (its block's label)
    outs_of = {}
    for r, c in enumerate(first):
        outs_of.setdefault(label[c], []).append(r)
    prm, lbk, lout, loy, hix = [], [], [], np.zeros(len(out_cols), np.int64), []
    l_size = y_size = 0
    for cols in sorted(blocks.values()):
        pos = {c: k for k, c in enumerate(cols)}
        outs = sorted(outs_of.get(label[cols[0]], []), key=lambda r: (pos[first[r]], r))   # by their first nonzero
        lbk.append([len(prm), len(cols), l_size, len(lout), len(lout) + len(outs), len(hix)])
        hix += [NX * max(a, c) + min(a, c) for i, a in enumerate(cols) for c in cols[:i + 1]]   # N_hh's lower triangle
        for r in outs:
            loy[r] = y_size
            y_size += len(cols) + 13
        prm += cols
        lout += outs
        l_size += (len(cols) + 13) ** 2
    prm = np.array(prm, np.int64)
    return (prm, np.argsort(prm).astype(np.int64), np.array(lbk, np.int64).reshape(-1),
            np.array(lout, np.int64), loy, np.array(hix, np.int64), l_size, y_size)

