"""The least-squares problem in ``x = (δ, h)`` (Nori eq. 16 reduced; ``δ`` the joint accelerations'
deviation from the measured ones when they are a measurement, else empty): block-wise normal equations
``N = N_hh + Pᵀ N_ah + N_ahᵀ P + Pᵀ N_aa P + Λ`` (``Λ`` the prior's diagonal information),
Cholesky (its solution refined once with the sensor rows when the factor is poorly conditioned,
:func:`_refine`), and Householder QR when Cholesky is ill-conditioned. Either leaves the lower
triangular factor ``L`` of ``N = L Lᵀ`` in ``N_hh`` (``1 / L_jj`` on the diagonal) for the covariance."""
from __future__ import annotations

import numpy as np

from .layout import (H_BLK, H_CHI, H_CI, H_CLO, H_CP, H_CRI, H_CRP, H_CRX, H_CX, H_FLOAT, H_MSC, H_NBLK, H_NH,
    H_NX, H_WA00, H_WBA, H_WBH, H_PRI, H_WD, H_WH, H_WJ, H_WK, H_WKT, H_WMS, H_WNAA, H_WNAH, H_WNHH, H_WQR, H_WRR,
    H_WU, H_WV0, _u, _za, njit)

@njit
def _householder_ls(A, n_rows, n_cols, ld, v, tmp):
    """In place Householder QR of the row-major ``n_rows × (n_cols + 1)`` matrix ``[J | r]``
    (leading dimension ``ld``); ``v`` receives the solution of ``min |J x − r|``, ``tmp`` the
    diagonal of ``R``. Returns the smallest ``|R_kk| / max_k |R_kk|`` (0: singular)."""
    rmax = 0.0
    rmin = np.inf
    for k in range(n_cols):
        # norm of column k below the diagonal
        s = 0.0
        for i in range(k, n_rows):
            a = A[_u(i * ld + k)]
            s += a * a
        nrm = np.sqrt(s)
        if nrm == 0.0:
            return 0.0
        akk = A[_u(k * ld + k)]
        alpha = -nrm if akk >= 0.0 else nrm
        # v = x - alpha e1 stored in column k (A[k,k] ← akk − alpha), R_kk = alpha
        vk = akk - alpha
        A[_u(k * ld + k)] = vk
        vnorm2 = s - akk * akk + vk * vk
        # apply H = 1 - 2 v vᵀ / (vᵀv) to the remaining columns (and the right-hand side)
        for j in range(k + 1, n_cols + 1):
            d = 0.0
            for i in range(k, n_rows):
                d += A[_u(i * ld + k)] * A[_u(i * ld + j)]
            d = 2.0 * d / vnorm2
            for i in range(k, n_rows):
                A[_u(i * ld + j)] -= d * A[_u(i * ld + k)]
        tmp[_u(k)] = alpha
        aa = abs(alpha)
        if aa > rmax:
            rmax = aa
        if aa < rmin:
            rmin = aa
    # back substitution R x = (Qᵀ r)[:n]
    for k in range(n_cols - 1, -1, -1):
        s = A[_u(k * ld + n_cols)]
        for j in range(k + 1, n_cols):
            s -= A[_u(k * ld + j)] * v[_u(j)]
        v[_u(k)] = s / tmp[_u(k)]
    if n_cols == 0:
        return 1.0
    return rmin / rmax


@njit
def _normal_equations(ip, fp, w, zero_nhh=True):
    """Rows ``[j_a | j_h]`` and right-hand sides ``r − G v⁰ − j_a a⁰⁰`` of the (compressed) sensor
    rows, accumulated into ``N_aa``, ``N_ah``, ``N_hh``, ``b_a``, ``b_h`` over each row's two column
    ranges (its joints' ``δ``, its contacts' ``h``: another limb's columns in between are skipped),
    lower triangles. The floating base's coupling is added by :func:`_base_coupling` (the dense
    path); :mod:`.limbs` eliminates the limbs' blocks first instead, and zeroes only their entries of
    ``N_hh`` itself (not ``zero_nhh``: the entries between blocks are then not meaningful)."""
    NX = ip[H_NX]
    Naa, Nah, Nhh, ba, bh = ip[H_WNAA], ip[H_WNAH], ip[H_WNHH], ip[H_WBA], ip[H_WBH]
    for k in range(36):
        w[_u(Naa + k)] = 0.0
    for k in range(6 * NX):
        w[_u(Nah + k)] = 0.0
    if zero_nhh:                           # its lower triangle: what is read
        for j in range(NX):
            for k in range(j + 1):
                w[_u(Nhh + NX * j + k)] = 0.0
    for k in range(6):
        w[_u(ba + k)] = 0.0
    for k in range(NX):
        w[_u(bh + k)] = 0.0
    if NX == ip[H_NH]:                     # accelerations exact: one range per row, its contacts' h (the
        _sensor_rows(ip, fp, w, False)     # literal drops the second range's loops: the exact tick's code)
    else:
        _sensor_rows(ip, fp, w, True)


@njit
def _base_coupling(ip, w):
    """The reduced ``N = N_hh + Pᵀ N_ah + N_ahᵀ P + Pᵀ N_aa P`` and ``b = b_h + Pᵀ b_a`` (in ``N_hh``,
    ``b_h``; lower triangle; floating base), after :func:`_normal_equations`: ``U = N_ah + ½ N_aa P``
    (6 × NX), ``N += Pᵀ U + Uᵀ P``, ``b += Pᵀ b_a``, over ``Pᵀ``'s rows (``WKT``, kept for the
    covariance's torque rows) and ``U``'s: contiguous in the column ``l``."""
    NX, w_K = ip[H_NX], ip[H_WK]
    Naa, Nah, Nhh, ba, bh = ip[H_WNAA], ip[H_WNAH], ip[H_WNHH], ip[H_WBA], ip[H_WBH]
    U, Kt = ip[H_WU], ip[H_WKT]
    for j in range(NX):
        for k in range(6):
            w[_u(Kt + NX * k + j)] = w[_u(w_K + 6 * j + k)]
    for k in range(6):
        for j in range(NX):
            s = w[_u(Nah + NX * k + j)]
            t = 0.0
            for m in range(6):
                nkm = w[_u(Naa + 6 * k + m)] if m <= k else w[_u(Naa + 6 * m + k)]
                t += nkm * w[_u(Kt + NX * m + j)]
            w[_u(U + NX * k + j)] = s + 0.5 * t
    for j in range(NX):
        p0, p1, p2 = w[_u(w_K + 6 * j)], w[_u(w_K + 6 * j + 1)], w[_u(w_K + 6 * j + 2)]
        p3, p4, p5 = w[_u(w_K + 6 * j + 3)], w[_u(w_K + 6 * j + 4)], w[_u(w_K + 6 * j + 5)]
        u0, u1, u2 = w[_u(U + j)], w[_u(U + NX + j)], w[_u(U + 2 * NX + j)]
        u3, u4, u5 = w[_u(U + 3 * NX + j)], w[_u(U + 4 * NX + j)], w[_u(U + 5 * NX + j)]
        nj = Nhh + NX * j
        for l in range(j + 1):
            w[_u(nj + l)] += (((p0 * w[_u(U + l)] + u0 * w[_u(Kt + l)])
                               + (p1 * w[_u(U + NX + l)] + u1 * w[_u(Kt + NX + l)]))
                              + ((p2 * w[_u(U + 2 * NX + l)] + u2 * w[_u(Kt + 2 * NX + l)])
                                 + (p3 * w[_u(U + 3 * NX + l)] + u3 * w[_u(Kt + 3 * NX + l)]))
                              + ((p4 * w[_u(U + 4 * NX + l)] + u4 * w[_u(Kt + 4 * NX + l)])
                                 + (p5 * w[_u(U + 5 * NX + l)] + u5 * w[_u(Kt + 5 * NX + l)])))
        w[_u(bh + j)] += (((p0 * w[_u(ba)] + p1 * w[_u(ba + 1)]) + (p2 * w[_u(ba + 2)] + p3 * w[_u(ba + 3)]))
                          + (p4 * w[_u(ba + 4)] + p5 * w[_u(ba + 5)]))


@njit(inline="always")
def _sensor_rows(ip, fp, w, two):
    """The sensor rows' part of :func:`_normal_equations`: each row ``j = G D`` over its column ranges,
    the first (its joints' ``δ``, or its contacts' ``h`` when the accelerations are exact) and,
    ``two``, the second (its contacts' ``h``), and its right-hand side; then their products into ``N``
    (:func:`_products`; another limb's columns in between are skipped). Inlined with a literal
    ``two``, whose branches the compiler removes."""
    floating, NX, MSC = ip[H_FLOAT], ip[H_NX], ip[H_MSC]
    za = _za(ip)
    NZ = za + NX
    w_D, w_v0, w_J, w_rr, w_ms, w_a00 = ip[H_WD], ip[H_WV0], ip[H_WJ], ip[H_WRR], ip[H_WMS], ip[H_WA00]
    i_Cp, i_Ci, f_Cx, i_CRp, i_CRi, f_CRx = ip[H_CP], ip[H_CI], ip[H_CX], ip[H_CRP], ip[H_CRI], ip[H_CRX]
    i_clo, i_chi = ip[H_CLO], ip[H_CHI]
    for r in range(MSC):                   # a row's columns: two ranges, the first before the second
        lo0, hi0 = ip[_u(i_clo + 2 * r)], ip[_u(i_chi + 2 * r)]
        lo1, hi1 = ip[_u(i_clo + 2 * r + 1)], ip[_u(i_chi + 2 * r + 1)]     # (empty if not two)
        jr = w_J + r * NZ
        jx = jr + za
        if floating:
            for k in range(6):
                w[_u(jr + k)] = 0.0
        for j in range(lo0, hi0):
            w[_u(jx + j)] = 0.0
        if two:
            for j in range(lo1, hi1):
                w[_u(jx + j)] = 0.0
        s = 0.0
        for pq in range(ip[_u(i_CRp + r)], ip[_u(i_CRp + r + 1)]):
            s += fp[_u(f_CRx + pq)] * w[_u(w_ms + ip[_u(i_CRi + pq)])]
        for pq in range(ip[_u(i_Cp + r)], ip[_u(i_Cp + r + 1)]):
            g = fp[_u(f_Cx + pq)]
            ob = ip[_u(i_Ci + pq)]
            s -= g * w[_u(w_v0 + ob)]
            do = w_D + ob * NZ
            dx = do + za
            if floating:
                for k in range(6):
                    w[_u(jr + k)] += g * w[_u(do + k)]
            for j in range(lo0, hi0):
                w[_u(jx + j)] += g * w[_u(dx + j)]
            if two:
                for j in range(lo1, hi1):
                    w[_u(jx + j)] += g * w[_u(dx + j)]
        if floating:                       # r − G v⁰ − j_a · a⁰⁰
            for k in range(6):
                s -= w[_u(jr + k)] * w[_u(w_a00 + k)]
        w[_u(w_rr + r)] = s
    _products(ip, w, two)


@njit(inline="always")
def _products(ip, w, two):
    """The rows' products into ``N`` and ``b``, a block of up to three rows with the same column ranges
    at a time (:func:`_three_rows`; the blocks are made at planning, ``build._row_blocks``)."""
    za = _za(ip)
    NZ = za + ip[H_NX]
    i_blk = ip[H_BLK]
    for k in range(ip[H_NBLK]):
        b = i_blk + 3 * k
        _three_rows(ip, w, ip[_u(b)], ip[_u(b + 1)], ip[_u(b + 2)], NZ, za, two)


@njit(inline="always")
def _three_rows(ip, w, r, r1, r2, NZ, za, two):
    """``N_aa += Σ j_a j_aᵀ``, ``N_ah += Σ j_a j_xᵀ``, ``N_hh += Σ j_x j_xᵀ`` (lower triangles),
    ``b_a += Σ j_a s``, ``b_h += Σ j_x s`` over the rows ``r, r1, r2`` that share ``r``'s column
    ranges (``MSC``: the zero row after the last, a block of fewer than three): each entry of ``N``
    loaded and stored once for the three."""
    floating, NX = ip[H_FLOAT], ip[H_NX]
    w_J, w_rr = ip[H_WJ], ip[H_WRR]
    Naa, Nah, Nhh, ba, bh = ip[H_WNAA], ip[H_WNAH], ip[H_WNHH], ip[H_WBA], ip[H_WBH]
    lo0, hi0 = ip[_u(ip[H_CLO] + 2 * r)], ip[_u(ip[H_CHI] + 2 * r)]
    lo1, hi1 = ip[_u(ip[H_CLO] + 2 * r + 1)], ip[_u(ip[H_CHI] + 2 * r + 1)]
    j0, j1, j2 = w_J + r * NZ, w_J + r1 * NZ, w_J + r2 * NZ
    x0, x1, x2 = j0 + za, j1 + za, j2 + za
    s0, s1, s2 = w[_u(w_rr + r)], w[_u(w_rr + r1)], w[_u(w_rr + r2)]
    if floating:                           # j_a's six entries: the loops below unroll
        for k in range(6):
            a0, a1, a2 = w[_u(j0 + k)], w[_u(j1 + k)], w[_u(j2 + k)]
            for m in range(k + 1):
                w[_u(Naa + 6 * k + m)] += a0 * w[_u(j0 + m)] + a1 * w[_u(j1 + m)] + a2 * w[_u(j2 + m)]
            w[_u(ba + k)] += a0 * s0 + a1 * s1 + a2 * s2
            nk = Nah + NX * k
            for j in range(lo0, hi0):
                w[_u(nk + j)] += a0 * w[_u(x0 + j)] + a1 * w[_u(x1 + j)] + a2 * w[_u(x2 + j)]
            if two:
                for j in range(lo1, hi1):
                    w[_u(nk + j)] += a0 * w[_u(x0 + j)] + a1 * w[_u(x1 + j)] + a2 * w[_u(x2 + j)]
    for j in range(lo0, hi0):              # N_hh += j jᵀ (lower triangle)
        c0, c1, c2 = w[_u(x0 + j)], w[_u(x1 + j)], w[_u(x2 + j)]
        nj = Nhh + NX * j
        for m in range(lo0, j + 1):
            w[_u(nj + m)] += c0 * w[_u(x0 + m)] + c1 * w[_u(x1 + m)] + c2 * w[_u(x2 + m)]
        w[_u(bh + j)] += c0 * s0 + c1 * s1 + c2 * s2
    for j in range(lo1, hi1 if two else lo1):
        c0, c1, c2 = w[_u(x0 + j)], w[_u(x1 + j)], w[_u(x2 + j)]
        nj = Nhh + NX * j
        for m in range(lo0, hi0):
            w[_u(nj + m)] += c0 * w[_u(x0 + m)] + c1 * w[_u(x1 + m)] + c2 * w[_u(x2 + m)]
        for m in range(lo1, j + 1):
            w[_u(nj + m)] += c0 * w[_u(x0 + m)] + c1 * w[_u(x1 + m)] + c2 * w[_u(x2 + m)]
        w[_u(bh + j)] += c0 * s0 + c1 * s1 + c2 * s2


@njit
def _add_prior(ip, fp, w):
    """``N += Λ``: the prior's rows ``h_j / σ_j = 0`` (:meth:`~..layout.SystemLayout._prior_rows`)
    add ``1 / σ_j²`` to the diagonal and nothing to ``b``."""
    NX, Nhh, f_pri = ip[H_NX], ip[H_WNHH], ip[H_PRI]
    for j in range(NX):
        p = fp[_u(f_pri + j)]
        w[_u(Nhh + NX * j + j)] += p * p


@njit
def _cholesky_solve(N, no, n, b, bo, x, xo):
    """Solve ``N x = b`` (lower triangle of the row-major ``n × n`` ``N`` factorised in place:
    ``L`` below the diagonal, ``1 / L_jj`` on it).
    Returns :func:`_cholesky`'s ratio."""
    worst = _cholesky(N, no, n, n, n)
    if worst == 0.0:
        return 0.0
    _substitute(N, no, n, b, bo, x, xo)
    return worst


@njit(inline="always")
def _substitute(N, no, n, b, bo, x, xo):
    """``x = L⁻ᵀ L⁻¹ b`` with :func:`_cholesky`'s factor of the ``n × n`` ``N`` at ``no``
    (``x`` may be ``b``)."""
    for j in range(n):
        s = b[_u(bo + j)]
        for k in range(j):
            s -= N[_u(no + n * j + k)] * x[_u(xo + k)]
        x[_u(xo + j)] = s * N[_u(no + n * j + j)]
    _back_substitute(N, no, n, x, xo, n)


@njit
def _refine(ip, fp, w):
    """One step of iterative refinement of :func:`_cholesky_solve`'s ``x`` (``WH``) with the sensor
    rows themselves, the corrected semi-normal equations (Björck, *Numerical Methods for Least Squares
    Problems*, 1996): the residual ``s = r − J_x x − J_a u`` of the compressed rows (``u = P x``, the
    base acceleration's part) and ``−Λ x`` of the prior's rows, ``g = J_xᵀ s + Pᵀ J_aᵀ s − Λ x``,
    ``N Δx = g`` with the factor already in ``N_hh``, ``x += Δx``. Forming ``N = Jᵀ J`` costs
    ``x`` a relative error of order ``κ(J)² ε``; the step takes it to that of QR (docs/probabilistic_model.md,
    'Accuracy'). ``O(MSC · NX + NX²)``: the rows' products only, no factorisation. Work: ``J_aᵀ s`` and
    ``u`` at ``WQR``, ``g`` and ``Δx`` in ``b_h`` (read by nothing after the solve)."""
    floating, NX, MSC = ip[H_FLOAT], ip[H_NX], ip[H_MSC]
    two = NX != ip[H_NH]
    za = _za(ip)
    NZ = za + NX
    w_J, w_rr, w_K, w_h, g, f_pri = ip[H_WJ], ip[H_WRR], ip[H_WK], ip[H_WH], ip[H_WBH], ip[H_PRI]
    u, t = ip[H_WQR], ip[H_WQR] + 6
    i_clo, i_chi = ip[H_CLO], ip[H_CHI]
    for k in range(6):                          # u = P x (floating base)
        a = 0.0
        if floating:
            for j in range(NX):
                a += w[_u(w_K + 6 * j + k)] * w[_u(w_h + j)]
        w[_u(u + k)] = a
        w[_u(t + k)] = 0.0
    for j in range(NX):                         # the prior's rows: residual −σ⁻¹ x_j, g_j = −Λ_j x_j
        p = fp[_u(f_pri + j)]
        w[_u(g + j)] = -p * p * w[_u(w_h + j)]
    for r in range(MSC):
        lo0, hi0 = ip[_u(i_clo + 2 * r)], ip[_u(i_chi + 2 * r)]
        lo1, hi1 = (ip[_u(i_clo + 2 * r + 1)], ip[_u(i_chi + 2 * r + 1)]) if two else (0, 0)
        jr = w_J + r * NZ
        jx = jr + za
        s = w[_u(w_rr + r)]
        if floating:
            for k in range(6):
                s -= w[_u(jr + k)] * w[_u(u + k)]
        for j in range(lo0, hi0):
            s -= w[_u(jx + j)] * w[_u(w_h + j)]
        for j in range(lo1, hi1):
            s -= w[_u(jx + j)] * w[_u(w_h + j)]
        if floating:
            for k in range(6):
                w[_u(t + k)] += w[_u(jr + k)] * s
        for j in range(lo0, hi0):
            w[_u(g + j)] += w[_u(jx + j)] * s
        for j in range(lo1, hi1):
            w[_u(g + j)] += w[_u(jx + j)] * s
    if floating:                                # g += Pᵀ J_aᵀ s
        for j in range(NX):
            a = 0.0
            for k in range(6):
                a += w[_u(w_K + 6 * j + k)] * w[_u(t + k)]
            w[_u(g + j)] += a
    _substitute(w, ip[H_WNHH], NX, w, g, w, g)
    for j in range(NX):
        w[_u(w_h + j)] += w[_u(g + j)]


@njit
def _cholesky(N, no, n, ld, rows):
    """``N = L Lᵀ`` in place (lower triangle of the row-major ``n × n`` ``N`` at ``no``, leading
    dimension ``ld``: ``L`` below the diagonal, ``1 / L_jj`` on it); the ``rows − n`` rows after it
    (their first ``n`` entries, ``B``) become ``(L⁻¹ Bᵀ)ᵀ`` on the way. Returns ``min_k L_kk² / N_kk``,
    the smallest squared sine between a column of ``J`` and the span of the previous ones
    (scale-invariant; 0 if ``N`` is not positive definite)."""
    worst = 1.0
    for j in range(n):
        rj = no + ld * j
        njj = N[_u(rj + j)]
        s = njj
        for k in range(j):
            s -= N[_u(rj + k)] * N[_u(rj + k)]
        if not (s > 0.0):
            return 0.0
        if s < worst * njj:
            worst = s / njj
        r = 1.0 / np.sqrt(s)
        N[_u(rj + j)] = r                         # the diagonal keeps 1 / L_jj: no division below
        i = j + 1
        while i + 4 <= rows:                      # four rows at a time: L_jk loaded once for them
            r0, r1, r2, r3 = no + ld * i, no + ld * (i + 1), no + ld * (i + 2), no + ld * (i + 3)
            s0, s1, s2, s3 = N[_u(r0 + j)], N[_u(r1 + j)], N[_u(r2 + j)], N[_u(r3 + j)]
            for k in range(j):
                lk = N[_u(rj + k)]
                s0 -= N[_u(r0 + k)] * lk
                s1 -= N[_u(r1 + k)] * lk
                s2 -= N[_u(r2 + k)] * lk
                s3 -= N[_u(r3 + k)] * lk
            N[_u(r0 + j)], N[_u(r1 + j)], N[_u(r2 + j)], N[_u(r3 + j)] = s0 * r, s1 * r, s2 * r, s3 * r
            i += 4
        for i in range(i, rows):
            ri = no + ld * i
            s = N[_u(ri + j)]
            for k in range(j):
                s -= N[_u(ri + k)] * N[_u(rj + k)]
            N[_u(ri + j)] = s * r
    return worst


@njit(inline="always")
def _back_substitute(N, no, n, x, xo, ld):
    """``x ← L⁻ᵀ x`` with :func:`_cholesky`'s factor ``L`` (``n × n`` at ``no``, leading dimension ``ld``),
    by ``L``'s rows: ``x_j`` final, then subtracted from the entries before it (a contiguous loop)."""
    for j in range(n - 1, -1, -1):
        rj = no + ld * j
        xj = x[_u(xo + j)] * N[_u(rj + j)]
        x[_u(xo + j)] = xj
        for k in range(j):
            x[_u(xo + k)] -= N[_u(rj + k)] * xj


@njit
def _qr_solve(ip, fp, w):
    """Fallback for ill-conditioned normal equations: Householder QR of ``J = J_h + J_a P`` with
    the right-hand side and the prior's rows, into ``h``; ``Rᵀ`` goes to ``N_hh`` as its Cholesky
    factor. Returns the diagonal ratio of ``R``."""
    floating, NX, MSC = ip[H_FLOAT], ip[H_NX], ip[H_MSC]
    za = _za(ip)
    NZ = za + NX
    w_J, w_rr, w_K, Q, w_h = ip[H_WJ], ip[H_WRR], ip[H_WK], ip[H_WQR], ip[H_WH]
    ld = NX + 1
    for r in range(MSC):
        jr = w_J + r * NZ
        for j in range(NX):
            s = w[_u(jr + za + j)]
            for m in range(za):
                s += w[_u(jr + m)] * w[_u(w_K + 6 * j + m)]
            w[_u(Q + r * ld + j)] = s
        w[_u(Q + r * ld + NX)] = w[_u(w_rr + r)]
    f_pri = ip[H_PRI]
    for j in range(NX):                          # the prior: h_j / σ_j = 0
        o = Q + (MSC + j) * ld
        for k in range(NX + 1):
            w[_u(o + k)] = 0.0
        w[_u(o + j)] = fp[_u(f_pri + j)]
    m = MSC + NX
    tau = Q + m * ld
    ratio = _householder_ls(w[Q:Q + m * ld], m, NX, ld, w[w_h:w_h + NX], w[tau:tau + NX + 1])
    Nhh = ip[H_WNHH]
    for j in range(NX):                          # N = Rᵀ R: L = Rᵀ, 1 / L_jj on the diagonal
        w[_u(Nhh + NX * j + j)] = 1.0 / w[_u(tau + j)]
        for k in range(j):
            w[_u(Nhh + NX * j + k)] = w[_u(Q + k * ld + j)]
    return ratio
