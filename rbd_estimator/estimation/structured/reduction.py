"""The tree reduction onto ``z = (a_0, h)``: the RNEA passes without contacts (``a⁰``, ``f⁰``,
Nori §IV-A, eqs. 3a, 3f), the composite inertias, the sensor observations affine in ``z`` and
the base equation ``f_0 = 0`` solved for ``a_0 = a⁰⁰ + P h`` (the null-space method)."""
from __future__ import annotations

import numpy as np

from .layout import (H_CBODY, H_CHOFF, H_CK, H_CXB, H_FLOAT, H_GRP, H_I, H_NB, H_NC, H_NGRP, H_NH, H_NX,
    H_NPAIR, H_PAIR, H_PAR, H_WA, H_WA00, H_WD, H_WF, H_WIC, H_WK, H_WP, H_WPHI, H_WR, H_WRP, H_WTMP,
    H_WV0, H_XB, _OBS_A, _OBS_FP, _u, _za, njit)
from ...kernels.spatial import fx, fxT_add, mx_inv, rbi_apply, rbi_xT_add, solve_rbi

@njit
def _backward_without_contacts(ip, fp, w, E):
    """Nori (3f) backward without contacts, ``f⁰_λ += X_iᵀ f⁰_i``, from the forward pass's ``f⁰``
    (:func:`~rbd_estimator.model.forward_kinematics.velocities_and_bias` with ``a_0 = 0``
    (floating) or ``−a_g`` (fixed)), and the CRBA's ``I^c_λ += X_iᵀ I^c_i X_i`` from
    ``I^c_i = I_i`` (floating base only)."""
    NB, floating = ip[H_NB], ip[H_FLOAT]
    i_par, f_I = ip[H_PAR], ip[H_I]
    w_r, w_f, w_Ic = ip[H_WR], ip[H_WF], ip[H_WIC]
    composite = floating or ip[H_NX] > ip[H_NH]       # I^c also for the δ columns of a fixed base
    if composite:
        for k in range(10 * NB):
            w[_u(w_Ic + k)] = fp[_u(f_I + k)]
    for i in range(NB - 1, -1, -1):
        p = ip[_u(i_par + i)]
        if p >= 0:
            fxT_add(E, 9 * i, w, w_r + 3 * i, w, w_f + 6 * i, w, w_f + 6 * p, 1.0)
            if composite:
                rbi_xT_add(E, 9 * i, w, w_r + 3 * i, w, w_Ic + 10 * i, w, w_Ic + 10 * p)


@njit
def _observations(ip, fp, w):
    """Contact columns ``Φ_c = ⁰X*_{b_c} X_Fᵀ B_c`` (base coordinates), and every observed quantity
    as ``v⁰ + D z``: ``a_b = a⁰_b + ᵇX_0 a_0``; ``f_s = f⁰_s + I^c_s ˢX_0 a_0 − ˢX*_0 Φ h``."""
    floating, NC = ip[H_FLOAT], ip[H_NC]
    za = _za(ip)
    NZ = za + ip[H_NX]
    w_R, w_p, w_a, w_f, w_Ic, w_tmp = ip[H_WRP], ip[H_WP], ip[H_WA], ip[H_WF], ip[H_WIC], ip[H_WTMP]
    w_Phi, w_D, w_v0 = ip[H_WPHI], ip[H_WD], ip[H_WV0]
    i_cbody, i_ck, i_choff, i_cxb, f_XB = ip[H_CBODY], ip[H_CK], ip[H_CHOFF], ip[H_CXB], ip[H_XB]
    for c in range(NC):
        b = ip[_u(i_cbody + c)]
        for j in range(ip[_u(i_ck + c)]):
            col = ip[_u(i_choff + c)] + j
            for k in range(6):
                w[_u(w_Phi + 6 * col + k)] = 0.0
            fxT_add(w, w_R + 9 * b, w, w_p + 3 * b, fp, f_XB + ip[_u(i_cxb + c)] + 6 * j, w, w_Phi + 6 * col, 1.0)
    i_grp = ip[H_GRP]
    col6 = w_tmp + 24
    for gk in range(ip[H_NGRP]):
        kind, b, o = ip[_u(i_grp + 4 * gk)], ip[_u(i_grp + 4 * gk + 1)], ip[_u(i_grp + 4 * gk + 2)]
        Ro, po = w_R + 9 * b, w_p + 3 * b
        p0, p1, p2 = w[_u(po)], w[_u(po + 1)], w[_u(po + 2)]
        if kind == _OBS_FP:
            _projected_wrench(ip, fp, w, za, NZ, b, o, ip[_u(i_grp + 4 * gk + 3)], col6)
        elif kind == _OBS_A:
            for k in range(6):
                w[_u(w_v0 + o + k)] = w[_u(w_a + 6 * b + k)]
            if za:                                     # D_a = ᵇX_0 = [[R, 0], [−R p×, R]]
                for a in range(3):
                    ra0, ra1, ra2 = w[_u(Ro + 3 * a)], w[_u(Ro + 3 * a + 1)], w[_u(Ro + 3 * a + 2)]
                    d = w_D + (o + a) * NZ
                    w[_u(d)], w[_u(d + 1)], w[_u(d + 2)] = ra0, ra1, ra2
                    w[_u(d + 3)], w[_u(d + 4)], w[_u(d + 5)] = 0.0, 0.0, 0.0
                    d = w_D + (o + 3 + a) * NZ
                    w[_u(d)] = -(ra1 * p2 - ra2 * p1)
                    w[_u(d + 1)] = -(ra2 * p0 - ra0 * p2)
                    w[_u(d + 2)] = -(ra0 * p1 - ra1 * p0)
                    w[_u(d + 3)], w[_u(d + 4)], w[_u(d + 5)] = ra0, ra1, ra2
        else:
            for k in range(6):
                w[_u(w_v0 + o + k)] = w[_u(w_f + 6 * b + k)]
            if za:                                     # D_a = I^c_b ᵇX_0, column by column
                for k in range(6):
                    if k < 3:                          # [R e_k; −R (p × e_k)]
                        c0 = -p2 if k == 1 else (p1 if k == 2 else 0.0)
                        c1 = p2 if k == 0 else (-p0 if k == 2 else 0.0)
                        c2 = -p1 if k == 0 else (p0 if k == 1 else 0.0)
                        for a in range(3):
                            w[_u(col6 + a)] = w[_u(Ro + 3 * a + k)]
                            w[_u(col6 + 3 + a)] = -(w[_u(Ro + 3 * a)] * c0 + w[_u(Ro + 3 * a + 1)] * c1
                                                    + w[_u(Ro + 3 * a + 2)] * c2)
                    else:                              # [0; R e_k]
                        for a in range(3):
                            w[_u(col6 + a)] = 0.0
                            w[_u(col6 + 3 + a)] = w[_u(Ro + 3 * a + k - 3)]
                    for a in range(6):
                        w[_u(col6 + 6 + a)] = 0.0
                    rbi_apply(w, w_Ic + 10 * b, w, col6, w, col6 + 6, 1.0)
                    for a in range(6):
                        w[_u(w_D + (o + a) * NZ + k)] = w[_u(col6 + 6 + a)]
    i_pair = ip[H_PAIR]
    for pk in range(ip[H_NPAIR]):
        pr = i_pair + 4 * pk
        o, c, b, sx = ip[_u(pr)], ip[_u(pr + 1)], ip[_u(pr + 2)], ip[_u(pr + 3)]
        if sx >= 0:                                    # one row: sᵀ(−ᵇX*_0 Φ) = −(⁰X_b s)ᵀ Φ
            mx_inv(w, w_R + 9 * b, w, w_p + 3 * b, fp, sx, w, col6)
            for j in range(ip[_u(i_ck + c)]):
                col = ip[_u(i_choff + c)] + j
                d = 0.0
                for a in range(6):
                    d -= w[_u(col6 + a)] * w[_u(w_Phi + 6 * col + a)]
                w[_u(w_D + o * NZ + za + col)] = d
        else:                                          # six rows: −ᵇX*_0 Φ
            for j in range(ip[_u(i_ck + c)]):
                col = ip[_u(i_choff + c)] + j
                fx(w, w_R + 9 * b, w, w_p + 3 * b, w, w_Phi + 6 * col, w, col6, -1.0)
                for a in range(6):
                    w[_u(w_D + (o + a) * NZ + za + col)] = w[_u(col6 + a)]


@njit(inline="always")       # inlined: a call per joint would increment and decrement the arrays' counts
def _projected_wrench(ip, fp, w, za, NZ, b, o, sx, t):
    """One projection ``sᵀ f_b`` of a body's wrench (a joint-torque sensor: ``s`` its motion axis):
    ``v⁰ = sᵀ f⁰_b`` and ``D_a = sᵀ I^c_b ᵇX_0``, computed as ``(ᵇX_0ᵀ (I^c_b s))ᵀ`` (two
    transforms instead of the six columns of :func:`_observations`' full wrench); ``w[t:t + 6]``
    is scratch."""
    w_f, w_D = ip[H_WF] + 6 * b, ip[H_WD] + o * NZ
    v = 0.0
    for k in range(6):
        v += fp[_u(sx + k)] * w[_u(w_f + k)]
    w[_u(ip[H_WV0] + o)] = v
    if za:
        for k in range(6):
            w[_u(t + k)] = 0.0
            w[_u(w_D + k)] = 0.0
        rbi_apply(w, ip[H_WIC] + 10 * b, fp, sx, w, t, 1.0)
        fxT_add(w, ip[H_WRP] + 9 * b, w, ip[H_WP] + 3 * b, w, t, w, w_D, 1.0)


@njit
def _base_equation(ip, w):
    """``f_0 = 0``: ``a_0 = a⁰⁰ + P h`` with ``a⁰⁰ = −(I^c_0)⁻¹ f⁰_0`` and ``P = (I^c_0)⁻¹ Φ``.
    Returns False when ``I^c_0`` is not positive definite."""
    NX = ip[H_NX]
    Ic0, w_f, w_Phi, w_K, w_a00, L = ip[H_WIC], ip[H_WF], ip[H_WPHI], ip[H_WK], ip[H_WA00], ip[H_WTMP] + 40
    m = w[_u(Ic0)]
    if not (m > 0.0):
        return False
    h0, h1, h2 = w[_u(Ic0 + 1)], w[_u(Ic0 + 2)], w[_u(Ic0 + 3)]
    hh = (h0 * h0 + h1 * h1 + h2 * h2) / m
    c00 = w[_u(Ic0 + 4)] + h0 * h0 / m - hh              # Ī_C = J + (h hᵀ − |h|² 1) / m
    c11 = w[_u(Ic0 + 5)] + h1 * h1 / m - hh
    c22 = w[_u(Ic0 + 6)] + h2 * h2 / m - hh
    c01 = w[_u(Ic0 + 7)] + h0 * h1 / m
    c02 = w[_u(Ic0 + 8)] + h0 * h2 / m
    c12 = w[_u(Ic0 + 9)] + h1 * h2 / m
    if not (c00 > 0.0):
        return False
    l00 = np.sqrt(c00)
    l10 = c01 / l00
    l20 = c02 / l00
    d11 = c11 - l10 * l10
    if not (d11 > 0.0):
        return False
    l11 = np.sqrt(d11)
    l21 = (c12 - l20 * l10) / l11
    d22 = c22 - l20 * l20 - l21 * l21
    if not (d22 > 0.0):
        return False
    w[_u(L)], w[_u(L + 1)], w[_u(L + 2)] = l00, l10, l11
    w[_u(L + 3)], w[_u(L + 4)], w[_u(L + 5)] = l20, l21, np.sqrt(d22)
    solve_rbi(w, Ic0, w, L, w, w_f, w, w_a00, -1.0)
    for j in range(NX):                  # Φ's columns: the contacts', then −F_j of each δ_j
        solve_rbi(w, Ic0, w, L, w, w_Phi + 6 * j, w, w_K + 6 * j, 1.0)
    return True
