"""The posterior covariance of the outputs, from the factor ``L`` of ``N = L Lᵀ`` that the least
squares leaves (:mod:`.solve`).

With the whitened measurement noise a unit normal and the prior's rows in ``N``, the posterior of
the contact components is ``h ~ N(ĥ, N⁻¹)``; every output is affine in ``h``. A joint torque is
(Nori eqs. 3f, 3τ; the tree reduction of the package docstring)

    ``τ_i = S_iᵀ f_i = τ⁰_i + t_i h``,  ``t_i = F_iᵀ P − ⁰S_iᵀ Φ_i``,

with ``F_i = ⁰X*_i I^c_i S_i`` (the base–joint column of the joint-space inertia, in base
coordinates; floating base only: ``a_0 = a⁰⁰ + P h``), ``⁰S_i = ⁰X_i S_i`` the joint's axis in base
coordinates and ``Φ_i`` the columns of the contacts below ``i``. A contact wrench is a selection of
``h``. So an output row ``o = O sel`` has the row ``t_o = O T`` and the variance
``t_o N⁻¹ t_oᵀ = |L⁻¹ t_oᵀ|²`` — one forward substitution per output row, no inverse. With the
joint accelerations measured the least squares is in ``x = (δ, h)`` and ``t_i`` has the ``δ`` part of
:mod:`.accelerations`.
"""
from __future__ import annotations

from .layout import (H_ANCI, H_ANCM, H_ANCP, H_CBI, H_CBP, H_CHOFF, H_CK, H_DSCI, H_DSCP, H_FLOAT, H_MSA, H_NB, H_NC, H_NH, H_NJ,
    H_NX, H_OI, H_OP, H_OX, H_TSEL, H_WF0, H_WKT, H_WNHH, H_WPHI, H_WS0, H_WM, H_WT, H_WZ, _u, njit)


@njit
def _torque_rows(ip, fp, w):
    """``t_i = F_iᵀ P − ⁰S_iᵀ Φ_i`` of every joint (module docstring), row ``τ`` index of ``T``, from
    :func:`~.accelerations.joint_columns`; with measured accelerations its ``δ`` part adds the
    joint-space inertia ``M_ij`` (:func:`_joint_inertia`; ``j`` in ``i``'s subtree, or above: ``M_ji``).
    ``F_iᵀ P`` runs over ``Pᵀ`` by rows (``WKT``, which :func:`~.solve._base_coupling` made); the other
    terms are :func:`_joint_terms`'s."""
    NB, floating, NH, NX = ip[H_NB], ip[H_FLOAT], ip[H_NH], ip[H_NX]
    i_tsel, w_T, w_F, Kt = ip[H_TSEL], ip[H_WT], ip[H_WF0], ip[H_WKT]
    if NX > NH:
        _joint_inertia(ip, w)
    for i in range(NB):
        ts = ip[_u(i_tsel + i)]
        if ts < 0:
            continue
        row, F = w_T + ts * NX, w_F + 6 * i
        if floating:
            f0, f1, f2 = w[_u(F)], w[_u(F + 1)], w[_u(F + 2)]
            f3, f4, f5 = w[_u(F + 3)], w[_u(F + 4)], w[_u(F + 5)]
            for j in range(NX):
                w[_u(row + j)] = ((f0 * w[_u(Kt + j)] + f1 * w[_u(Kt + NX + j)]) + (f2 * w[_u(Kt + 2 * NX + j)]
                                  + f3 * w[_u(Kt + 3 * NX + j)])) + (f4 * w[_u(Kt + 4 * NX + j)]
                                                                      + f5 * w[_u(Kt + 5 * NX + j)])
        else:
            for j in range(NX):
                w[_u(row + j)] = 0.0
        _joint_terms(ip, w, i, row, -1, 1.0, NX > NH)


@njit(inline="always")
def _joint_terms(ip, w, i, row, cmap, v, measured):
    """``row[c] += v t_ic`` for the terms of joint ``i``'s ``t_i`` after ``F_iᵀ P`` (:func:`_torque_rows`):
    ``−⁰S_iᵀ Φ_i`` and, ``measured``, the ``M_ij``. ``cmap < 0``: ``c`` is x's column; else ``c`` is
    ``ip[cmap + column]`` (:mod:`.limbs`: the position in the limbs' order)."""
    i_cbi, i_ck, i_choff, w_Phi, s0 = ip[H_CBI], ip[H_CK], ip[H_CHOFF], ip[H_WPHI], ip[H_WS0] + 6 * i
    for pq in range(ip[_u(ip[H_CBP] + i)], ip[_u(ip[H_CBP] + i + 1)]):
        c = ip[_u(i_cbi + pq)]
        for jj in range(ip[_u(i_ck + c)]):
            col = ip[_u(i_choff + c)] + jj
            s = 0.0
            for k in range(6):
                s += w[_u(s0 + k)] * w[_u(w_Phi + 6 * col + k)]
            w[_u(row + (col if cmap < 0 else ip[_u(cmap + col)]))] -= v * s
    if measured:
        _inertia_terms(ip, w, row, ip[H_DSCP] + i, ip[H_DSCI], -1, cmap, v)           # j in i's subtree
        _inertia_terms(ip, w, row, ip[H_ANCP] + i, ip[H_ANCI], ip[H_ANCM], cmap, v)   # j above i


@njit(inline="always")
def _inertia_terms(ip, w, row, p, idx, mix, cmap, v):
    """``row[c_j] += v M_ij`` for the joints' bodies ``j`` listed at ``idx[ip[p]:ip[p + 1]]`` (``c_j``
    as :func:`_joint_terms`), ``M_ij`` from :func:`_joint_inertia` at the same index (``mix < 0``:
    ``j`` in ``i``'s subtree) or at ``ip[mix + index]`` (``j`` above ``i``: ``M_ij = M_ji``)."""
    i_tsel, w_M = ip[H_TSEL], ip[H_WM]
    for pq in range(ip[_u(p)], ip[_u(p + 1)]):
        col = ip[_u(i_tsel + ip[_u(idx + pq)])]
        m = w[_u(w_M + (pq if mix < 0 else ip[_u(mix + pq)]))]
        w[_u(row + (col if cmap < 0 else ip[_u(cmap + col)]))] += v * m


@njit
def _joint_inertia(ip, w):
    """The joint-space inertia's ``M_ij = ⁰S_i · F_j`` of each joint ``i`` and each joint ``j`` in its
    subtree (the pairs of ``DSCP``/``DSCI``, into ``WM`` at the pair's index), from
    :func:`~.accelerations.joint_columns`: computed once for the torque rows of ``i`` and of ``j``."""
    i_tsel, w_s0, w_F, i_dsci, w_M = ip[H_TSEL], ip[H_WS0], ip[H_WF0], ip[H_DSCI], ip[H_WM]
    for i in range(ip[H_NB]):
        if ip[_u(i_tsel + i)] < 0:
            continue
        s0 = w_s0 + 6 * i
        for pq in range(ip[_u(ip[H_DSCP] + i)], ip[_u(ip[H_DSCP] + i + 1)]):
            F = w_F + 6 * ip[_u(i_dsci + pq)]
            s = 0.0
            for k in range(6):
                s += w[_u(s0 + k)] * w[_u(F + k)]
            w[_u(w_M + pq)] = s


@njit
def covariance(ip, fp, w, cov):
    """``cov``: the variance of every joint torque (``NJ``), then the 6 × 6 covariance of every
    contact wrench (``[fx..tz]``, contact frame), from ``L`` in ``N_hh`` (module docstring). The
    substitutions ``z_r = L⁻¹ t_rᵀ`` run four output rows at a time (:func:`_substitute4`: each
    entry of ``L`` loaded once for four rows)."""
    NJ, NH, NX, NC = ip[H_NJ], ip[H_NH], ip[H_NX], ip[H_NC]
    _torque_rows(ip, fp, w)
    w_Z, L = ip[H_WZ], ip[H_WNHH]
    NR = NJ + 6 * NC
    r = 0
    while r < NR:                              # z_r = L⁻¹ t_rᵀ, t_r = O_r T
        n = min(4, NR - r)
        first = NX
        for a in range(n):
            first = min(first, _output_row(ip, fp, w, r + a))
        if n == 4:
            _substitute4(w, L, NX, w_Z + r * NX, first)
        else:
            for a in range(n):
                _substitute4(w, L, NX, w_Z + (r + a) * NX, first, 1)
        r += n
    for r in range(NJ):
        s = 0.0
        for j in range(NX):
            s += w[_u(w_Z + r * NX + j)] * w[_u(w_Z + r * NX + j)]
        cov[_u(r)] = s
    for c in range(NC):
        for a in range(6):
            za = w_Z + (NJ + 6 * c + a) * NX
            for b in range(a + 1):
                zb = w_Z + (NJ + 6 * c + b) * NX
                s = 0.0
                for j in range(NX):
                    s += w[_u(za + j)] * w[_u(zb + j)]
                cov[_u(NJ + 36 * c + 6 * a + b)] = s
                cov[_u(NJ + 36 * c + 6 * b + a)] = s


@njit(inline="always")
def _output_row(ip, fp, w, r):
    """``z_r = t_r = O_r T`` (the output's row over ``x``) in ``Z``; returns the index of its first
    nonzero (``t_r`` is zero before it: so is ``z_r``)."""
    NJ, NH, NX, MSA = ip[H_NJ], ip[H_NH], ip[H_NX], ip[H_MSA]
    i_Op, i_Oi, f_Ox, w_T = ip[H_OP], ip[H_OI], ip[H_OX], ip[H_WT]
    z = ip[H_WZ] + r * NX
    for j in range(NX):
        w[_u(z + j)] = 0.0
    first = NX
    for pq in range(ip[_u(i_Op + r)], ip[_u(i_Op + r + 1)]):
        sel, v = ip[_u(i_Oi + pq)], fp[_u(f_Ox + pq)]
        if sel < NJ:
            first = 0
            for j in range(NX):
                w[_u(z + j)] += v * w[_u(w_T + sel * NX + j)]
        elif sel < NJ + NH:                    # h_k is x's column MSA + k, after the δ
            w[_u(z + MSA + sel - NJ)] += v
            first = min(first, MSA + sel - NJ)
    return first


@njit(inline="always")
def _substitute4(w, L, NX, z, first, rows=4, end=-1):
    """Forward substitution ``z_a ← L⁻¹ z_a`` of ``rows`` (4, or 1) consecutive rows ``z_a = w[z + a NX:
    …]`` of length ``NX`` whose entries before ``first`` are zero (``L`` row-major, leading dimension
    ``NX``, ``1 / L_jj`` on its diagonal); ``end ≥ 0``: of their first ``end`` entries only (with
    ``L``'s leading ``end × end`` block). Four rows go two entries at a time: each ``z_ak`` loaded once
    for ``j`` and ``j + 1`` (the second less the first's term ``L_{j+1,j} z_aj``)."""
    stop = NX if end < 0 else end
    if rows == 1:
        for j in range(first, stop):
            s = w[_u(z + j)]
            for k in range(first, j):
                s -= w[_u(L + NX * j + k)] * w[_u(z + k)]
            w[_u(z + j)] = s * w[_u(L + NX * j + j)]
        return
    z1, z2, z3 = z + NX, z + 2 * NX, z + 3 * NX
    j = first
    while j + 2 <= stop:                       # entries j and j + 1 together: z_k loaded once for both
        s0, s1, s2, s3 = w[_u(z + j)], w[_u(z1 + j)], w[_u(z2 + j)], w[_u(z3 + j)]
        t0, t1, t2, t3 = w[_u(z + j + 1)], w[_u(z1 + j + 1)], w[_u(z2 + j + 1)], w[_u(z3 + j + 1)]
        lj, lq = L + NX * j, L + NX * (j + 1)
        for k in range(first, j):
            l, m = w[_u(lj + k)], w[_u(lq + k)]
            x0, x1, x2, x3 = w[_u(z + k)], w[_u(z1 + k)], w[_u(z2 + k)], w[_u(z3 + k)]
            s0 -= l * x0
            s1 -= l * x1
            s2 -= l * x2
            s3 -= l * x3
            t0 -= m * x0
            t1 -= m * x1
            t2 -= m * x2
            t3 -= m * x3
        d = w[_u(lj + j)]
        s0, s1, s2, s3 = s0 * d, s1 * d, s2 * d, s3 * d
        m, e = w[_u(lq + j)], w[_u(lq + j + 1)]
        w[_u(z + j)], w[_u(z1 + j)], w[_u(z2 + j)], w[_u(z3 + j)] = s0, s1, s2, s3
        w[_u(z + j + 1)], w[_u(z1 + j + 1)] = (t0 - m * s0) * e, (t1 - m * s1) * e
        w[_u(z2 + j + 1)], w[_u(z3 + j + 1)] = (t2 - m * s2) * e, (t3 - m * s3) * e
        j += 2
    for j in range(j, stop):
        s0, s1, s2, s3 = w[_u(z + j)], w[_u(z1 + j)], w[_u(z2 + j)], w[_u(z3 + j)]
        lj = L + NX * j
        for k in range(first, j):
            l = w[_u(lj + k)]
            s0 -= l * w[_u(z + k)]
            s1 -= l * w[_u(z1 + k)]
            s2 -= l * w[_u(z2 + k)]
            s3 -= l * w[_u(z3 + k)]
        d = w[_u(lj + j)]
        w[_u(z + j)], w[_u(z1 + j)], w[_u(z2 + j)], w[_u(z3 + j)] = s0 * d, s1 * d, s2 * d, s3 * d
