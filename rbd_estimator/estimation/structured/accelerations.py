"""Joint accelerations as a measurement in the tree reduction (``joint_acceleration_stddev > 0``).

The least-squares unknowns become ``x = (δ, h)``, ``δ = q̈ − q̈ᵐ`` the deviation of the joint
accelerations from the measured ones, whose rows ``δ_j / σ_a = 0`` add ``1 / σ_a²`` to the diagonal of
``N`` like the prior's. Everything the tick computes with ``q̈ᵐ`` (``a⁰``, ``f⁰``) stays; ``δ`` enters
linearly (Nori eqs. 3a, 3f):

* a body's acceleration gains ``ᵇX_j S_j δ_j`` for every joint ``j`` on its path from the root: in the
  observations ``D_a ⁰S_j`` (``D_a = ᵇX_0`` for the IMU body's acceleration, ``I^c_b ᵇX_0`` for a
  body's wrench), ``⁰S_j = ⁰X_j S_j`` the joint's axis in base coordinates;
* a body's wrench gains ``ᵇX*_j I^c_j S_j δ_j = ᵇX*_0 F_j`` for every joint ``j`` in its subtree,
  ``F_j = ⁰X*_j I^c_j S_j`` (the base–joint column of the joint-space inertia, base coordinates);
* the base equation ``f_0 = 0`` gains ``Σ_j F_j δ_j``: ``a_0 = a⁰⁰ + P x`` with Φ's columns
  ``[Φ_h, −F]`` (:func:`~.reduction._base_equation` solves them all).

The outputs add ``S_i δ_i`` to the forward pass of ``α`` and the subtree sums ``Ψ_i = Σ ⁱX*_j I^c_j S_j
δ_j`` (``j`` strictly below ``i``) to ``f_i`` (:mod:`.outputs`); a torque's covariance row gains the
joint-space inertia ``M_ij`` (:mod:`.covariance`).
"""
from __future__ import annotations

from ...kernels.spatial import fx, fxT_add, mx_inv, rbi_apply
from .layout import (H_ANCI, H_ANCP, H_DSCI, H_DSCP, H_FLOAT, H_GRP, H_NB, H_NGRP, H_NH, H_NX, H_S, H_TSEL, H_WD,
    H_WF0, H_WIC, H_WP, H_WPHI, H_WRP, H_WS0, H_WTMP, _OBS_A, _OBS_FP, _u, njit)


@njit
def joint_columns(ip, fp, w):
    """``⁰S_j`` (``WS0``) and, floating, ``F_j = ⁰X*_j I^c_j S_j`` (``WF0``) of every joint's body
    ``j`` from its pose ``ʲX_0``; with measured accelerations ``−F_j`` is Φ's column ``j`` (``x = (δ, h)``)."""
    NB, floating, NH, NX = ip[H_NB], ip[H_FLOAT], ip[H_NH], ip[H_NX]
    i_tsel, f_S, w_R, w_p, w_Ic = ip[H_TSEL], ip[H_S], ip[H_WRP], ip[H_WP], ip[H_WIC]
    w_s0, w_F, w_Phi, u = ip[H_WS0], ip[H_WF0], ip[H_WPHI], ip[H_WTMP]
    for i in range(NB):
        ts = ip[_u(i_tsel + i)]
        if ts < 0:
            continue
        mx_inv(w, w_R + 9 * i, w, w_p + 3 * i, fp, f_S + 6 * i, w, w_s0 + 6 * i)
        if not (floating or NX > NH):            # F_j: the base equation's, and M_ij's
            continue
        F = w_F + 6 * i
        for k in range(6):
            w[_u(u + k)] = 0.0
            w[_u(F + k)] = 0.0
        rbi_apply(w, w_Ic + 10 * i, fp, f_S + 6 * i, w, u, 1.0)
        fxT_add(w, w_R + 9 * i, w, w_p + 3 * i, w, u, w, F, 1.0)
        if floating and NX > NH:
            for k in range(6):
                w[_u(w_Phi + 6 * ts + k)] = -w[_u(F + k)]


@njit
def _ancestors_into(ip, w, b, o, n, NZ, col0):
    """``D[o:o + n, δ_j] = D_a[o:o + n] ⁰S_j`` for the strict ancestors ``j`` of ``b`` with a joint."""
    i_tsel, w_D, w_s0 = ip[H_TSEL], ip[H_WD], ip[H_WS0]
    for pq in range(ip[_u(ip[H_ANCP] + b)], ip[_u(ip[H_ANCP] + b + 1)]):
        j = ip[_u(ip[H_ANCI] + pq)]
        _through_axis(w, w_D, o, n, NZ, col0 + ip[_u(i_tsel + j)], w_s0 + 6 * j)


@njit(inline="always")
def _through_axis(w, w_D, o, n, NZ, col, s):
    for a in range(n):
        d = w_D + (o + a) * NZ
        acc = 0.0
        for k in range(6):
            acc += w[_u(d + k)] * w[_u(s + k)]
        w[_u(d + col)] = acc


@njit
def acceleration_columns(ip, fp, w):
    """The ``δ`` columns of the observations ``D`` (module docstring), after
    :func:`~.reduction._observations` (their ``D_a``) and :func:`joint_columns`."""
    NH, NX = ip[H_NH], ip[H_NX]
    NZ = 6 + NX
    col0 = 6                                      # x = (δ, h): δ_j is x's column j
    i_grp, i_tsel, w_D, w_F, w_R, w_p = ip[H_GRP], ip[H_TSEL], ip[H_WD], ip[H_WF0], ip[H_WRP], ip[H_WP]
    t = ip[H_WTMP] + 24
    for gk in range(ip[H_NGRP]):
        kind, b, o, sx = ip[_u(i_grp + 4 * gk)], ip[_u(i_grp + 4 * gk + 1)], ip[_u(i_grp + 4 * gk + 2)], \
            ip[_u(i_grp + 4 * gk + 3)]
        n = 1 if kind == _OBS_FP else 6
        _ancestors_into(ip, w, b, o, n, NZ, col0)
        if kind == _OBS_A:                              # the body's own joint moves it too
            if ip[_u(i_tsel + b)] >= 0:
                _through_axis(w, w_D, o, 6, NZ, col0 + ip[_u(i_tsel + b)], ip[H_WS0] + 6 * b)
            continue
        if kind == _OBS_FP:                              # sᵀ ᵇX*_0 F_j = (⁰X_b s) · F_j
            mx_inv(w, w_R + 9 * b, w, w_p + 3 * b, fp, sx, w, t)
        for pq in range(ip[_u(ip[H_DSCP] + b)], ip[_u(ip[H_DSCP] + b + 1)]):
            j = ip[_u(ip[H_DSCI] + pq)]
            col = col0 + ip[_u(i_tsel + j)]
            if kind == _OBS_FP:
                acc = 0.0
                for k in range(6):
                    acc += w[_u(t + k)] * w[_u(w_F + 6 * j + k)]
                w[_u(w_D + o * NZ + col)] = acc
            else:                                        # ᵇX*_0 F_j, six rows
                fx(w, w_R + 9 * b, w, w_p + 3 * b, w, w_F + 6 * j, w, t, 1.0)
                for a in range(6):
                    w[_u(w_D + (o + a) * NZ + col)] = w[_u(t + a)]
