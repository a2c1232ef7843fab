"""The four-bar closure compiled (Chignoli et al. §II-C), as :func:`.loop_closure._close` and
:func:`.loop_closure._four_bar_explicit` (same equations, same numbers): a four-bar closed by
continuation and Gauss–Newton on its closure ``φ(q) = 0`` from a reference assembly; its explicit
constraint ``G_l = −K_d⁺ K_i``, ``g_l = K_d⁺ k`` (eqs. 2–4). Scratch space: the ``WFB`` block of the
packed cluster tree (:data:`~.cluster_packing.FOUR_BAR`). Units rad, m, s."""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit
from .cluster_packing import (
    CLOSED, CLOSURE_FAILED, F_BODY, F_GL, F_JA, F_JB, F_KEY, F_LS, F_NA, F_NB, F_PHI, F_SMALL_P, F_T, F_VA,
    F_gl, FS_J, FS_X, FS_XUP, H_FBP, H_LD0, H_LDX, H_LFB, H_LI0, H_LIX, H_LJ0, H_LQ, H_LR, H_LVX, H_QI, H_RB, H_SC,
    H_VI, H_WFB, SINGULAR, X_E, X_R, XF, joint_transform)
from ..kernels.spatial import add6, compose, mcross, mx, mx_col


@fast_njit
def _point_motion(w, xo, p0, p1, p2, u, uo, y, yo):
    """``y = Φ u = [Eᵀ ω; Eᵀ (v − p × ω)]``: body motion ``u`` as the motion of the body point ``p``,
    in root orientation (``ᵇX_root = plux(E, r)`` at ``xo``; ``Φ = plux(Eᵀ, p)``)."""
    e = xo + X_E
    o0, o1, o2 = u[uo], u[uo + 1], u[uo + 2]
    l0 = u[uo + 3] - (p1 * o2 - p2 * o1)
    l1 = u[uo + 4] - (p2 * o0 - p0 * o2)
    l2 = u[uo + 5] - (p0 * o1 - p1 * o0)
    for k in range(3):
        e0, e1, e2 = w[e + k], w[e + 3 + k], w[e + 6 + k]         # column k of E = row k of Eᵀ
        y[yo + k] = e0 * o0 + e1 * o1 + e2 * o2
        y[yo + 3 + k] = e0 * l0 + e1 * l1 + e2 * l2


@fast_njit
def _point_position(w, xo, p0, p1, p2, y, yo):
    """Position of the body point ``p`` in root coordinates, ``r + Eᵀ p`` for
    ``ᵇX_root = plux(E, r)`` at ``xo`` (``r``: the body origin in root coordinates)."""
    e, r = xo + X_E, xo + X_R
    for k in range(3):
        y[yo + k] = w[r + k] + w[e + k] * p0 + w[e + 3 + k] * p1 + w[e + 6 + k] * p2


@fast_njit
def _four_bar_closure(ip, fp, w, l, q):
    """``φ(q)`` of four-bar ``l`` and its kinematics (:func:`.loop_closure._closure`): transforms and
    Jacobians of the path bodies (root fixed), ``φ = [p_a − p_b; n_a × n_b]``, ``n_a``, ``n_b`` and
    the point Jacobians ``J_a = Φ_a J_coupler``, ``J_b = Φ_b J_output``. They depend on the three
    path angles only: the scratch remembers the loop and angles it holds and is not recomputed
    for the same ones (the closure's last Newton state, then ``G_l`` at the same ``q``)."""
    f, fb, rb = ip[H_WFB], ip[H_FBP] + ip[ip[H_LFB] + l], ip[H_RB] + ip[ip[H_LR] + l]
    qi = ip[H_QI]
    q0, q1, q2 = q[ip[qi + ip[fb + 1]]], q[ip[qi + ip[fb + 4]]], q[ip[qi + ip[fb + 7]]]
    if w[f + F_KEY] == l and w[f + F_KEY + 1] == q0 and w[f + F_KEY + 2] == q1 and w[f + F_KEY + 3] == q2:
        return                                                      # the scratch holds this state already
    w[f + F_KEY], w[f + F_KEY + 1], w[f + F_KEY + 2], w[f + F_KEY + 3] = l, q0, q1, q2
    for s in range(3):
        i, col, ps = ip[fb + 1 + 3 * s], ip[fb + 2 + 3 * s], ip[fb + 3 + 3 * s]
        o = f + F_BODY * s
        xu, x, J = o + FS_XUP, o + FS_X, o + FS_J
        joint_transform(ip, fp, w, q, i, w, xu)                     # Xup_s
        if ps < 0:
            for k in range(XF):
                w[x + k] = w[xu + k]                                # X_s = Xup_s (root: identity)
            for k in range(18):
                w[J + k] = 0.0
        else:
            op = f + F_BODY * ps
            compose(w, xu + X_E, w, xu + X_R, w, op + FS_X + X_E, w, op + FS_X + X_R, w, x + X_E, w, x + X_R)
            for c in range(3):                                      # J_s = Xup_s J_λ, column by column
                mx_col(w, xu + X_E, w, xu + X_R, w, op + FS_J + c, 3, w, J + c, 3)
        sc = ip[H_SC] + 6 * ip[ip[H_VI] + i]
        for r in range(6):
            w[J + 3 * r + col] += fp[sc + r]                        # + S_i in the column of joint i
    sa, sb = ip[fb + 10], ip[fb + 11]
    oa, ob = f + F_BODY * sa + FS_X, f + F_BODY * sb + FS_X         # ᵃX_root, ᵇX_root
    ja, jb = f + F_BODY * sa + FS_J, f + F_BODY * sb + FS_J
    pa0, pa1, pa2, pb0, pb1, pb2 = fp[rb], fp[rb + 1], fp[rb + 2], fp[rb + 3], fp[rb + 4], fp[rb + 5]
    _point_position(w, oa, pa0, pa1, pa2, w, f + F_PHI)
    _point_position(w, ob, pb0, pb1, pb2, w, f + F_SMALL_P)
    for k in range(3):
        w[f + F_PHI + k] -= w[f + F_SMALL_P + k]
        sa_ = 0.0
        sb_ = 0.0
        for j in range(3):                                          # n = Eᵀ n_body
            sa_ += w[oa + X_E + 3 * j + k] * fp[rb + 6 + j]
            sb_ += w[ob + X_E + 3 * j + k] * fp[rb + 9 + j]
        w[f + F_NA + k], w[f + F_NB + k] = sa_, sb_
    na0, na1, na2, nb0, nb1, nb2 = (w[f + F_NA], w[f + F_NA + 1], w[f + F_NA + 2],
                                    w[f + F_NB], w[f + F_NB + 1], w[f + F_NB + 2])
    w[f + F_PHI + 3] = na1 * nb2 - na2 * nb1
    w[f + F_PHI + 4] = na2 * nb0 - na0 * nb2
    w[f + F_PHI + 5] = na0 * nb1 - na1 * nb0
    for c in range(3):                                              # J_a, J_b column by column
        for r in range(6):
            w[f + F_SMALL_P + r] = w[ja + 3 * r + c]
            w[f + F_SMALL_P + 6 + r] = w[jb + 3 * r + c]
        _point_motion(w, oa, pa0, pa1, pa2, w, f + F_SMALL_P, w, f + F_SMALL_P + 12)
        _point_motion(w, ob, pb0, pb1, pb2, w, f + F_SMALL_P + 6, w, f + F_SMALL_P + 18)
        for r in range(6):
            w[f + F_JA + 3 * r + c] = w[f + F_SMALL_P + 12 + r]
            w[f + F_JB + 3 * r + c] = w[f + F_SMALL_P + 18 + r]


@fast_njit
def _ls2(w, ao, bo, m, xo):
    """Least squares ``min |A x − b|`` for ``A`` with two columns (``m`` rows each, column-major at
    ``ao``) by Gram–Schmidt QR; writes ``x`` (2) at ``xo`` and returns ``σ_min/σ_max`` of ``A``."""
    r11 = 0.0
    for k in range(m):
        r11 += w[ao + k] * w[ao + k]
    r11 = np.sqrt(r11)
    if r11 == 0.0:
        w[xo] = w[xo + 1] = 0.0
        return 0.0
    r12 = 0.0
    for k in range(m):
        r12 += w[ao + k] / r11 * w[ao + m + k]
    r22 = 0.0
    for k in range(m):
        d = w[ao + m + k] - r12 * w[ao + k] / r11
        r22 += d * d
    r22 = np.sqrt(r22)
    s = r11 * r11 + r12 * r12 + r22 * r22                          # σ₁² + σ₂², σ₁σ₂ = r11 r22
    p = r11 * r22
    s1 = np.sqrt(0.5 * (s + np.sqrt(max(s * s - 4.0 * p * p, 0.0))))
    ratio = p / s1 / s1 if s1 > 0.0 else 0.0
    if r22 == 0.0:
        w[xo] = w[xo + 1] = 0.0
        return 0.0
    qb1 = qb2 = 0.0                                                 # Qᵀ b
    for k in range(m):
        q1 = w[ao + k] / r11
        q2 = (w[ao + m + k] - r12 * q1) / r22
        qb1 += q1 * w[bo + k]
        qb2 += q2 * w[bo + k]
    x2 = qb2 / r22
    w[xo + 1] = x2
    w[xo] = (qb1 - r12 * x2) / r11
    return ratio


@fast_njit
def _closure_jacobian_columns(w, f, jd0, jd1, out):
    """Columns ``jd0``, ``jd1`` of ``∂φ/∂q`` (:func:`.loop_closure._closure_jacobian`) into
    ``w[out:out+12]`` (column-major): point velocities, and
    ``d(n_a × n_b) = (ω_a × n_a) × n_b + n_a × (ω_b × n_b)``."""
    na0, na1, na2 = w[f + F_NA], w[f + F_NA + 1], w[f + F_NA + 2]
    nb0, nb1, nb2 = w[f + F_NB], w[f + F_NB + 1], w[f + F_NB + 2]
    for n in range(2):
        j = jd0 if n == 0 else jd1
        o = out + 6 * n
        for r in range(3):
            w[o + r] = w[f + F_JA + 3 * (3 + r) + j] - w[f + F_JB + 3 * (3 + r) + j]
        a0, a1, a2 = w[f + F_JA + j], w[f + F_JA + 3 + j], w[f + F_JA + 6 + j]
        b0, b1, b2 = w[f + F_JB + j], w[f + F_JB + 3 + j], w[f + F_JB + 6 + j]
        c0, c1, c2 = a1 * na2 - a2 * na1, a2 * na0 - a0 * na2, a0 * na1 - a1 * na0     # ω_a × n_a
        d0, d1, d2 = b1 * nb2 - b2 * nb1, b2 * nb0 - b0 * nb2, b0 * nb1 - b1 * nb0     # ω_b × n_b
        w[o + 3] = c1 * nb2 - c2 * nb1 + na1 * d2 - na2 * d1
        w[o + 4] = c2 * nb0 - c0 * nb2 + na2 * d0 - na0 * d2
        w[o + 5] = c0 * nb1 - c1 * nb0 + na0 * d1 - na1 * d0


@fast_njit
def _max_abs(w, o, n):
    m = 0.0
    for k in range(n):
        m = max(m, abs(w[o + k]))
    return m


@fast_njit
def _close_four_bar(ip, fp, w, l, q, qref, max_iter, max_step):
    """Dependent angles of four-bar ``l`` at the independent one in ``q``, on the assembly branch of
    ``qref`` (:func:`.loop_closure._close`): continuation from ``qref`` in steps of at most
    ``max_step`` of the independent coordinate, each finished by Gauss–Newton on ``φ = 0`` (steps
    of the dependent angles limited to 0.5 rad). Returns :data:`CLOSED` or :data:`CLOSURE_FAILED`."""
    f, j0 = ip[H_WFB], ip[ip[H_LJ0] + l]
    ji, jd0, jd1 = ip[ip[H_LIX] + ip[ip[H_LI0] + l]], ip[ip[H_LDX] + ip[ip[H_LD0] + l]], \
        ip[ip[H_LDX] + ip[ip[H_LD0] + l] + 1]
    qi, qd0, qd1 = ip[ip[H_LQ] + j0 + ji], ip[ip[H_LQ] + j0 + jd0], ip[ip[H_LQ] + j0 + jd1]
    target, start = q[qi], qref[qi]
    q[qd0], q[qd1] = qref[qd0], qref[qd1]
    n = max(1, int(np.ceil(abs(target - start) / max_step)))
    for s in range(1, n + 1):
        q[qi] = start + (target - start) * (s / n)
        for _ in range(max_iter):
            _four_bar_closure(ip, fp, w, l, q)
            if _max_abs(w, f + F_PHI, 6) < 1e-15:
                break
            _closure_jacobian_columns(w, f, jd0, jd1, f + F_LS)
            for k in range(6):
                w[f + F_LS + 12 + k] = -w[f + F_PHI + k]
            _ls2(w, f + F_LS, f + F_LS + 12, 6, f + F_LS + 18)
            big = max(abs(w[f + F_LS + 18]), abs(w[f + F_LS + 19]))
            scale = min(1.0, 0.5 / max(big, 1e-300))
            q[qd0] += w[f + F_LS + 18] * scale
            q[qd1] += w[f + F_LS + 19] * scale
            if big * scale < 1e-15:
                break
    q[qi] = target
    _four_bar_closure(ip, fp, w, l, q)
    return CLOSED if _max_abs(w, f + F_PHI, 6) < 1e-10 else CLOSURE_FAILED


@fast_njit
def _four_bar_explicit(ip, fp, w, l, q, dq, with_dq):
    """``G_l = −K_d⁺ K_i`` and ``g_l = K_d⁺ k`` (eqs. 2–4; :func:`.loop_closure._four_bar_explicit`)
    into ``w[WFB + F_GL]`` and ``w[WFB + F_gl]`` (2 each); with ``dq``, its dependent entries are
    overwritten with ``G_l q̇_ind``. ``K``: the closure points' relative velocity (3 rows) and the
    relative angular velocity across ``t₁, t₂ ⊥ n_a`` (2 rows). Returns :data:`SINGULAR` when
    ``σ_min(K_d) < 10⁻⁸ σ_max(K_d)``."""
    f, j0, fb = ip[H_WFB], ip[ip[H_LJ0] + l], ip[H_FBP] + ip[ip[H_LFB] + l]
    ji, jd0, jd1 = ip[ip[H_LIX] + ip[ip[H_LI0] + l]], ip[ip[H_LDX] + ip[ip[H_LD0] + l]], \
        ip[ip[H_LDX] + ip[ip[H_LD0] + l] + 1]
    _four_bar_closure(ip, fp, w, l, q)
    n0, n1, n2 = w[f + F_NA], w[f + F_NA + 1], w[f + F_NA + 2]
    a = 0                                                           # t₁ = n × e_argmin|n|, t₂ = n × t₁
    if abs(n1) < abs(n0):
        a = 1
    if abs(n2) < abs((n0, n1)[a]):
        a = 2
    e0, e1, e2 = (1.0 if a == 0 else 0.0), (1.0 if a == 1 else 0.0), (1.0 if a == 2 else 0.0)
    t0, t1_, t2 = n1 * e2 - n2 * e1, n2 * e0 - n0 * e2, n0 * e1 - n1 * e0
    nt = np.sqrt(t0 * t0 + t1_ * t1_ + t2 * t2)
    t0, t1_, t2 = t0 / nt, t1_ / nt, t2 / nt
    u0, u1, u2 = n1 * t2 - n2 * t1_, n2 * t0 - n0 * t2, n0 * t1_ - n1 * t0
    T = w[f + F_T:f + F_T + 6]
    T[0], T[1], T[2], T[3], T[4], T[5] = t0, t1_, t2, u0, u1, u2
    ls = f + F_LS                                                   # K_d (column-major 5 × 2), K_i, k
    for n in range(3):
        j = jd0 if n == 0 else (jd1 if n == 1 else ji)
        o = ls + 5 * n
        for r in range(3):
            w[o + r] = w[f + F_JA + 3 * (3 + r) + j] - w[f + F_JB + 3 * (3 + r) + j]
        for r in range(2):
            s = 0.0
            for c in range(3):
                s += T[3 * r + c] * (w[f + F_JA + 3 * c + j] - w[f + F_JB + 3 * c + j])
            w[o + 3 + r] = s
    ratio = _ls2(w, ls, ls + 10, 5, f + F_GL)                      # K_d x = K_i
    if not ratio >= 1e-8:
        return SINGULAR
    w[f + F_GL] = -w[f + F_GL]
    w[f + F_GL + 1] = -w[f + F_GL + 1]
    if not with_dq:
        return CLOSED
    lv = ip[H_LVX]
    dq[ip[lv + j0 + jd0]] = w[f + F_GL] * dq[ip[lv + j0 + ji]]
    dq[ip[lv + j0 + jd1]] = w[f + F_GL + 1] * dq[ip[lv + j0 + ji]]
    for s in range(3):                                              # v_s, a_s (q̈ = 0), root fixed
        i, ps = ip[fb + 1 + 3 * s], ip[fb + 3 + 3 * s]
        o, vs = f + F_BODY * s, f + F_VA + 12 * s
        sc, qd = ip[H_SC] + 6 * ip[ip[H_VI] + i], dq[ip[ip[H_VI] + i]]
        if ps < 0:
            for k in range(12):
                w[vs + k] = 0.0
        else:
            mx(w, o + FS_XUP + X_E, w, o + FS_XUP + X_R, w, f + F_VA + 12 * ps, w, vs)
            mx(w, o + FS_XUP + X_E, w, o + FS_XUP + X_R, w, f + F_VA + 12 * ps + 6, w, vs + 6)
        for k in range(6):
            w[f + F_SMALL_P + k] = fp[sc + k] * qd                  # v_J = S_i q̇_i
            w[vs + k] += w[f + F_SMALL_P + k]
        add6(w, vs + 6, mcross(w, vs, w, f + F_SMALL_P))            # a_s += v_s × v_J
    rb = ip[H_RB] + ip[ip[H_LR] + l]
    sa, sb = ip[fb + 10], ip[fb + 11]
    P = f + F_SMALL_P                                               # Va, Vb, Aa, Ab (6 each)
    xa, xb = f + F_BODY * sa + FS_X, f + F_BODY * sb + FS_X
    _point_motion(w, xa, fp[rb], fp[rb + 1], fp[rb + 2], w, f + F_VA + 12 * sa, w, P)
    _point_motion(w, xb, fp[rb + 3], fp[rb + 4], fp[rb + 5], w, f + F_VA + 12 * sb, w, P + 6)
    _point_motion(w, xa, fp[rb], fp[rb + 1], fp[rb + 2], w, f + F_VA + 12 * sa + 6, w, P + 12)
    _point_motion(w, xb, fp[rb + 3], fp[rb + 4], fp[rb + 5], w, f + F_VA + 12 * sb + 6, w, P + 18)
    wa0, wa1, wa2, wb0, wb1, wb2 = w[P], w[P + 1], w[P + 2], w[P + 6], w[P + 7], w[P + 8]
    va0, va1, va2, vb0, vb1, vb2 = w[P + 3], w[P + 4], w[P + 5], w[P + 9], w[P + 10], w[P + 11]
    kk = ls + 15                                                    # k (5)
    w[kk] = -((w[P + 15] + wa1 * va2 - wa2 * va1) - (w[P + 21] + wb1 * vb2 - wb2 * vb1))
    w[kk + 1] = -((w[P + 16] + wa2 * va0 - wa0 * va2) - (w[P + 22] + wb2 * vb0 - wb0 * vb2))
    w[kk + 2] = -((w[P + 17] + wa0 * va1 - wa1 * va0) - (w[P + 23] + wb0 * vb1 - wb1 * vb0))
    dw0, dw1, dw2 = wa0 - wb0, wa1 - wb1, wa2 - wb2
    for r in range(2):
        x0, x1, x2 = T[3 * r], T[3 * r + 1], T[3 * r + 2]
        c0, c1, c2 = wa1 * x2 - wa2 * x1, wa2 * x0 - wa0 * x2, wa0 * x1 - wa1 * x0     # ω_a × t_r
        w[kk + 3 + r] = -(x0 * (w[P + 12] - w[P + 18]) + x1 * (w[P + 13] - w[P + 19]) + x2 * (w[P + 14] - w[P + 20])
                          + c0 * dw0 + c1 * dw1 + c2 * dw2)
    _ls2(w, ls, kk, 5, f + F_gl)                                    # g_l = K_d⁺ k
    return CLOSED
