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
``t_o N⁻¹ t_oᵀ = |L⁻¹ t_oᵀ|²`` — one forward substitution per output row, no inverse.
"""
from __future__ import annotations

from ...model.spatial_kernels import fxT_add, mx_inv, rbi_apply
from .layout import (H_CBI, H_CBP, H_CHOFF, H_CK, H_FLOAT, H_NB, H_NC, H_NH, H_NJ, H_OI, H_OP, H_OX, H_S, H_TSEL,
    H_WIC, H_WK, H_WNHH, H_WP, H_WPHI, H_WRP, H_WT, H_WTMP, H_WZ, _u, njit)


@njit
def _torque_rows(ip, fp, w):
    """``t_i = F_iᵀ P − ⁰S_iᵀ Φ_i`` of every joint (module docstring), row ``τ`` index of ``T``."""
    NB, floating, NH = ip[H_NB], ip[H_FLOAT], ip[H_NH]
    i_tsel, i_cbp, i_cbi, i_ck, i_choff = ip[H_TSEL], ip[H_CBP], ip[H_CBI], ip[H_CK], ip[H_CHOFF]
    f_S, w_R, w_p, w_Ic, w_K, w_Phi, w_T = ip[H_S], ip[H_WRP], ip[H_WP], ip[H_WIC], ip[H_WK], ip[H_WPHI], ip[H_WT]
    s0, u, F = ip[H_WTMP], ip[H_WTMP] + 6, ip[H_WTMP] + 12
    for i in range(NB):
        ts = ip[_u(i_tsel + i)]
        if ts < 0:
            continue
        row = w_T + ts * NH
        for j in range(NH):
            w[_u(row + j)] = 0.0
        mx_inv(w, w_R + 9 * i, w, w_p + 3 * i, fp, f_S + 6 * i, w, s0)          # ⁰S_i = ⁰X_i S_i
        if floating:                                                             # F_i = ⁰X*_i I^c_i S_i
            for k in range(6):
                w[_u(u + k)] = 0.0
                w[_u(F + k)] = 0.0
            rbi_apply(w, w_Ic + 10 * i, fp, f_S + 6 * i, w, u, 1.0)
            fxT_add(w, w_R + 9 * i, w, w_p + 3 * i, w, u, w, F, 1.0)
            for j in range(NH):
                s = 0.0
                for k in range(6):
                    s += w[_u(F + k)] * w[_u(w_K + 6 * j + k)]
                w[_u(row + j)] = s
        for pq in range(ip[_u(i_cbp + i)], ip[_u(i_cbp + i + 1)]):
            c = ip[_u(i_cbi + pq)]
            for jj in range(ip[_u(i_ck + c)]):
                col = ip[_u(i_choff + c)] + jj
                s = 0.0
                for k in range(6):
                    s += w[_u(s0 + k)] * w[_u(w_Phi + 6 * col + k)]
                w[_u(row + col)] -= s


@njit
def covariance(ip, fp, w, cov):
    """``cov``: the variance of every joint torque (``NJ``), then the 6 × 6 covariance of every
    contact wrench (``[fx..tz]``, contact frame), from ``L`` in ``N_hh`` (module docstring)."""
    NJ, NH, NC = ip[H_NJ], ip[H_NH], ip[H_NC]
    _torque_rows(ip, fp, w)
    i_Op, i_Oi, f_Ox, w_T, w_Z, L = ip[H_OP], ip[H_OI], ip[H_OX], ip[H_WT], ip[H_WZ], ip[H_WNHH]
    for r in range(NJ + 6 * NC):               # z_r = L⁻¹ t_rᵀ, t_r = O_r T
        z = w_Z + r * NH
        for j in range(NH):
            w[_u(z + j)] = 0.0
        first = NH                             # t_r is zero before its first nonzero: so is z_r
        for pq in range(ip[_u(i_Op + r)], ip[_u(i_Op + r + 1)]):
            sel, v = ip[_u(i_Oi + pq)], fp[_u(f_Ox + pq)]
            if sel < NJ:
                first = 0
                for j in range(NH):
                    w[_u(z + j)] += v * w[_u(w_T + sel * NH + j)]
            elif sel < NJ + NH:
                w[_u(z + sel - NJ)] += v
                first = min(first, sel - NJ)
        for j in range(first, NH):
            s = w[_u(z + j)]
            for k in range(first, j):
                s -= w[_u(L + NH * j + k)] * w[_u(z + k)]
            w[_u(z + j)] = s * w[_u(L + NH * j + j)]
    for r in range(NJ):
        s = 0.0
        for j in range(NH):
            s += w[_u(w_Z + r * NH + j)] * w[_u(w_Z + r * NH + j)]
        cov[_u(r)] = s
    for c in range(NC):
        for a in range(6):
            za = w_Z + (NJ + 6 * c + a) * NH
            for b in range(a + 1):
                zb = w_Z + (NJ + 6 * c + b) * NH
                s = 0.0
                for j in range(NH):
                    s += w[_u(za + j)] * w[_u(zb + j)]
                cov[_u(NJ + 36 * c + 6 * a + b)] = s
                cov[_u(NJ + 36 * c + 6 * b + a)] = s
