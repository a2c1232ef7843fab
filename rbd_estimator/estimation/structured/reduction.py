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
    as ``v⁰ + D z``: ``a_b = a⁰_b + ᵇX_0 a_0``; ``f_s = f⁰_s + I^c_s ˢX_0 a_0 − ˢX*_0 Φ h``, each row a
    projection ``sᵀ`` of one of them (``D_a``'s row through the library's ``rbi_apply`` and ``fxT_add``)."""
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
    i_grp, col6, w_one = ip[H_GRP], w_tmp + 24, w_Ic + 10 * ip[H_NB]
    for gk in range(ip[H_NGRP]):
        kind, b, o, sx = ip[_u(i_grp + 4 * gk)], ip[_u(i_grp + 4 * gk + 1)], ip[_u(i_grp + 4 * gk + 2)], \
            ip[_u(i_grp + 4 * gk + 3)]
        # n projections sᵀ u_b of the body's u_b = a_b (through M = 1) or f_b (through M = I^c_b): a full
        # observation is s = e_0 … e_5 (sx: the identity), a joint-torque sensor one s (its motion axis)
        n = 1 if kind == _OBS_FP else 6
        u0 = (w_a if kind == _OBS_A else w_f) + 6 * b
        M = w_one if kind == _OBS_A else w_Ic + 10 * b
        for a in range(n):                             # v⁰ = sᵀ u⁰_b
            v = 0.0
            for k in range(6):
                v += fp[_u(sx + 6 * a + k)] * w[_u(u0 + k)]
            w[_u(w_v0 + o + a)] = v
        if za:                                         # D_a = sᵀ M ᵇX_0 = (ᵇX_0ᵀ (M s))ᵀ, M symmetric
            for a in range(n):
                d = w_D + (o + a) * NZ
                for k in range(6):
                    w[_u(col6 + k)] = 0.0
                    w[_u(d + k)] = 0.0
                rbi_apply(w, M, fp, sx + 6 * a, w, col6, 1.0)
                fxT_add(w, w_R + 9 * b, w, w_p + 3 * b, w, col6, w, d, 1.0)
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
