"""The estimates from ``z``: ``α_i = ⁱX_0 a_0`` forward, contact wrenches backward,
``f_i = f⁰_i + I^c_i α_i − g_i`` and ``τ_i = S_iᵀ f_i`` (Nori eqs. 3f, 3τ), and the whitened
sensor residual."""
from __future__ import annotations

from ...model.robot_model import REVOLUTE
from .layout import (H_CBODY, H_CHOFF, H_CK, H_CPATH, H_CXB, H_FLOAT, H_GI, H_GP, H_GX, H_JT, H_KSEL, H_MS, H_NB,
    H_MSA, H_NC, H_NCP, H_NH, H_NX, H_NJ, H_NOBS, H_NOUTM, H_OHI, H_OI, H_OLO, H_OP, H_OX, H_PAR, H_PRI, H_RI, H_RP, H_RX, H_S, H_TSEL,
    H_WA0, H_WAL, H_WD, H_WF, H_WG, H_WH, H_WIC, H_WMS, H_WR, H_WSEL, H_WTMP, H_WU, H_WV0, H_XB, _u, _za, njit)
from ...kernels.spatial import fxT_add, mx, rbi_apply

@njit
def _outputs(ip, fp, w, E, V, out):
    """``α_i = ⁱX_0 a_0`` forward; contact wrenches ``g`` backward along their paths;
    ``f_i = f⁰_i + I^c_i α_i − g_i``, ``τ_i = S_iᵀ f_i``; ``out = O [τ, h, f_kept]``."""
    NB, floating, NJ, NH, NC = ip[H_NB], ip[H_FLOAT], ip[H_NJ], ip[H_NH], ip[H_NC]
    i_par, i_jt, f_S, f_XB = ip[H_PAR], ip[H_JT], ip[H_S], ip[H_XB]
    w_r, w_f, w_Ic, w_al, w_g, w_sel, w_h, w_a0 = (ip[H_WR], ip[H_WF], ip[H_WIC], ip[H_WAL], ip[H_WG], ip[H_WSEL],
                                                    ip[H_WH], ip[H_WA0])
    i_cbody, i_ck, i_choff, i_cxb = ip[H_CBODY], ip[H_CK], ip[H_CHOFF], ip[H_CXB]
    i_cpath, NCP = ip[H_CPATH], ip[H_NCP]
    measured = ip[H_NX] > NH                           # x = (δ, h): the joint accelerations are unknowns too
    for kk in range(NB if measured else NCP):          # g stays zero off the contact paths
        b = kk if measured else ip[_u(i_cpath + kk)]
        for k in range(6):
            w[_u(w_g + 6 * b + k)] = 0.0
    for c in range(NC):
        b = ip[_u(i_cbody + c)]
        for j in range(ip[_u(i_ck + c)]):
            hv = w[_u(w_h + ip[_u(i_choff + c)] + j)]
            xo = f_XB + ip[_u(i_cxb + c)] + 6 * j
            for k in range(6):
                w[_u(w_g + 6 * b + k)] += fp[_u(xo + k)] * hv
    i_tsel, i_ksel = ip[H_TSEL], ip[H_KSEL]
    if measured:
        _backward_with_accelerations(ip, fp, w, E)
    for kk in range(0 if measured else NCP):
        b = ip[_u(i_cpath + kk)]
        p = ip[_u(i_par + b)]
        if p >= 0:
            fxT_add(E, 9 * b, w, w_r + 3 * b, w, w_g + 6 * b, w, w_g + 6 * p, 1.0)
    fi = ip[H_WTMP] + 50
    for i in range(NB):
        ao = w_al + 6 * i
        if floating or measured:                       # a fixed root's α is its own S δ
            if ip[_u(i_par + i)] < 0:
                for k in range(6):
                    w[_u(ao + k)] = w[_u(w_a0 + k)] if floating else 0.0
            else:
                mx(E, 9 * i, w, w_r + 3 * i, w, w_al + 6 * ip[_u(i_par + i)], w, ao)
        ts, ks = ip[_u(i_tsel + i)], ip[_u(i_ksel + i)]
        if measured and ts >= 0:                       # α_i += S_i δ_i (3a)
            d = w[_u(w_h + ts)]
            for k in range(6):
                w[_u(ao + k)] += fp[_u(f_S + 6 * i + k)] * d
        if ts < 0 and ks < 0:
            continue
        fo, go, so = w_f + 6 * i, w_g + 6 * i, f_S + 6 * i
        if ks < 0 and ip[_u(i_jt + i)] == REVOLUTE:        # τ = sᵀ n, n = n⁰ + J ω + h × v − g_n
            n0, n1, n2 = w[_u(fo)] - w[_u(go)], w[_u(fo + 1)] - w[_u(go + 1)], w[_u(fo + 2)] - w[_u(go + 2)]
            if floating or measured:
                Io = w_Ic + 10 * i
                h0, h1, h2 = w[_u(Io + 1)], w[_u(Io + 2)], w[_u(Io + 3)]
                a0_, a1_, a2_ = w[_u(ao)], w[_u(ao + 1)], w[_u(ao + 2)]
                a3_, a4_, a5_ = w[_u(ao + 3)], w[_u(ao + 4)], w[_u(ao + 5)]
                n0 += w[_u(Io + 4)] * a0_ + w[_u(Io + 7)] * a1_ + w[_u(Io + 8)] * a2_ + h1 * a5_ - h2 * a4_
                n1 += w[_u(Io + 7)] * a0_ + w[_u(Io + 5)] * a1_ + w[_u(Io + 9)] * a2_ + h2 * a3_ - h0 * a5_
                n2 += w[_u(Io + 8)] * a0_ + w[_u(Io + 9)] * a1_ + w[_u(Io + 6)] * a2_ + h0 * a4_ - h1 * a3_
            w[_u(w_sel + ts)] = fp[_u(so)] * n0 + fp[_u(so + 1)] * n1 + fp[_u(so + 2)] * n2
            continue
        for k in range(6):
            w[_u(fi + k)] = w[_u(fo + k)] - w[_u(go + k)]
        if floating or measured:
            rbi_apply(w, w_Ic + 10 * i, w, ao, w, fi, 1.0)
        if ts >= 0:
            s = 0.0
            for k in range(6):
                s += fp[_u(so + k)] * w[_u(fi + k)]
            w[_u(w_sel + ts)] = s
        if ks >= 0:
            for k in range(6):
                w[_u(w_sel + ks + k)] = w[_u(fi + k)]
    MSA = ip[H_MSA]
    for j in range(NH):                                # x = (δ, h): h_j is x's column MSA + j
        w[_u(w_sel + NJ + j)] = w[_u(w_h + MSA + j)]
    i_Op, i_Oi, f_Ox = ip[H_OP], ip[H_OI], ip[H_OX]
    for r in range(ip[H_NOUTM]):
        s = 0.0
        for pq in range(ip[_u(i_Op + r)], ip[_u(i_Op + r + 1)]):
            s += fp[_u(f_Ox + pq)] * w[_u(w_sel + ip[_u(i_Oi + pq)])]
        out[_u(r)] = s


@njit
def _backward_with_accelerations(ip, fp, w, E):
    """``g`` of every body with the joint accelerations' deviations ``δ`` (:mod:`.accelerations`):
    ``g_λ += ˡX*_i (g_i − I^c_i S_i δ_i)`` from the leaves (the contacts' wrenches already at their
    bodies), so that ``f_i = f⁰_i + I^c_i α_i − g_i`` holds ``Σ ⁱX*_j I^c_j S_j δ_j`` over the joints
    ``j`` strictly below ``i`` (``i``'s own is in ``α_i``)."""
    NB, NH = ip[H_NB], ip[H_NH]
    i_par, i_tsel, f_S, w_r, w_g, w_Ic, w_h = ip[H_PAR], ip[H_TSEL], ip[H_S], ip[H_WR], ip[H_WG], ip[H_WIC], ip[H_WH]
    t = ip[H_WTMP] + 56
    for i in range(NB - 1, 0, -1):
        p = ip[_u(i_par + i)]
        for k in range(6):
            w[_u(t + k)] = w[_u(w_g + 6 * i + k)]
        ts = ip[_u(i_tsel + i)]
        if ts >= 0:
            rbi_apply(w, w_Ic + 10 * i, fp, f_S + 6 * i, w, t, -w[_u(w_h + ts)])
        if p >= 0:
            fxT_add(E, 9 * i, w, w_r + 3 * i, w, t, w, w_g + 6 * p, 1.0)


@njit
def _residual(ip, fp, w, out):
    """Whitened sensor residuals in the layout's row order: ``e = G u − R msrc`` with the observed
    values ``u = v⁰ + D_a a_0 + D_h h``."""
    floating, NX, NOBS, MS = ip[H_FLOAT], ip[H_NX], ip[H_NOBS], ip[H_MS]
    za = _za(ip)
    NZ = za + NX
    w_D, w_v0, w_u, w_h, w_a0, w_ms = ip[H_WD], ip[H_WV0], ip[H_WU], ip[H_WH], ip[H_WA0], ip[H_WMS]
    i_olo, i_ohi = ip[H_OLO], ip[H_OHI]
    for ob in range(NOBS):
        do = w_D + ob * NZ
        s = w[_u(w_v0 + ob)]
        for k in range(za):
            s += w[_u(do + k)] * w[_u(w_a0 + k)]
        for j in range(ip[_u(i_olo + ob)], ip[_u(i_ohi + ob)]):
            s += w[_u(do + za + j)] * w[_u(w_h + j)]
        w[_u(w_u + ob)] = s
    i_Gp, i_Gi, f_Gx, i_Rp, i_Ri, f_Rx = ip[H_GP], ip[H_GI], ip[H_GX], ip[H_RP], ip[H_RI], ip[H_RX]
    o, MSA, NH = ip[H_NOUTM], ip[H_MSA], ip[H_NH]
    for r in range(MS - MSA):
        s = 0.0
        for pq in range(ip[_u(i_Gp + r)], ip[_u(i_Gp + r + 1)]):
            s += fp[_u(f_Gx + pq)] * w[_u(w_u + ip[_u(i_Gi + pq)])]
        for pq in range(ip[_u(i_Rp + r)], ip[_u(i_Rp + r + 1)]):
            s -= fp[_u(f_Rx + pq)] * w[_u(w_ms + ip[_u(i_Ri + pq)])]
        out[_u(o + r)] = s
    f_pri = ip[H_PRI]
    for j in range(MSA):                               # the joint accelerations': (q̈ᵐ + δ − q̈ᵐ) / σ_a
        out[_u(o + MS - MSA + j)] = fp[_u(f_pri + j)] * w[_u(w_h + j)]
