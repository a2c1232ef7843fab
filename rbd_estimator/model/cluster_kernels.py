"""The loop closure of one cluster compiled (Chignoli et al. §II-C), the compiled counterparts of
:mod:`.loop_closure` (same equations, same numbers):

* :func:`cluster_position`: ``q_k = γ_k(y_k)`` (Alg. 1, line 3) — transmissions
  ``q_dep = R q_ind + offset``; a four-bar closed by continuation and Gauss–Newton on its closure
  ``φ(q) = 0`` from a reference assembly (:mod:`.four_bar_kernels`);
* :func:`cluster_constraint`: ``G_k``, ``g_k`` of eq. (6) composed loop by loop
  (``G_k[dep] = G_l G_k[ind]``, ``g_k[dep] = G_l g_k[ind] + g_l``); a four-bar's
  ``G_l = −K_d⁺ K_i``, ``g_l = K_d⁺ k`` (eqs. 2–4).

The packed tree they read is :class:`~.cluster_packing.PackedClusterTree` (its names are
re-exported here for the dynamics and the estimator). User-written :class:`~.loops.ExplicitLoop`
callables are Python: a tree with one is not packed (:func:`packable` says so)."""
from __future__ import annotations

from ..jit import fast_njit
from .cluster_packing import (
    CLOSED, F_GL, F_gl, H_CI0, H_CIND, H_CL, H_CL0, H_CNL, H_CNV, H_CNY, H_LD0, H_LDP, H_LDX, H_LI0, H_LIP,
    H_LIX, H_LJ0, H_LND, H_LNI, H_LQ, H_LR, H_LT, H_LVX, H_RB, H_WFB, _FOUR_BAR)
from .four_bar_kernels import (
    _close_four_bar, _four_bar_explicit)


# ---------------------------------------------------------------------------- one cluster
@fast_njit
def cluster_position(ip, fp, w, k, q, qref):
    """``q_k = γ_k(y_k)`` (Alg. 1, line 3) in place in the spanning ``q``: every loop of cluster k
    in order, four-bars closed on the assembly branch of ``qref``. Returns ``-1`` or the index of
    the loop that failed to close."""
    lq, rb0 = ip[H_LQ], ip[H_RB]
    for n in range(ip[ip[H_CNL] + k]):
        l = ip[ip[H_CL] + ip[ip[H_CL0] + k] + n]
        if ip[ip[H_LT] + l] == _FOUR_BAR:
            if _close_four_bar(ip, fp, w, l, q, qref, 50, 0.2) != CLOSED:
                return l
            continue
        j0, ni, nd = ip[ip[H_LJ0] + l], ip[ip[H_LNI] + l], ip[ip[H_LND] + l]
        ix, dx, rb = ip[H_LIX] + ip[ip[H_LI0] + l], ip[H_LDX] + ip[ip[H_LD0] + l], rb0 + ip[ip[H_LR] + l]
        for a in range(nd):                                         # q_dep = R q_ind + offset
            s = fp[rb + nd * ni + a]
            for b in range(ni):
                s += fp[rb + ni * a + b] * q[ip[lq + j0 + ip[ix + b]]]
            q[ip[lq + j0 + ip[dx + a]]] = s
    return -1


@fast_njit
def cluster_constraint(ip, fp, w, k, q, dq, with_dq, G, go, g, gro):
    """``G_k`` (``n_f × n_y``, row-major at ``G[go]``) and ``g_k`` (``n_f`` at ``g[gro]``) of cluster k
    at ``q`` (eq. 6; Alg. 1, lines 4–6), composed loop by loop. ``with_dq``: the independent
    entries of the spanning ``dq`` are set, its dependent ones are overwritten with ``G_l q̇_ind``
    (Alg. 1, line 5); else ``g_k`` is left zero. Returns ``-1`` or the index of a four-bar at a
    singular configuration."""
    nv, ny = ip[ip[H_CNV] + k], ip[ip[H_CNY] + k]
    ci = ip[H_CIND] + ip[ip[H_CI0] + k]
    for a in range(nv * ny):
        G[go + a] = 0.0
    for a in range(nv):
        g[gro + a] = 0.0
    for j in range(ny):
        G[go + ny * ip[ci + j] + j] = 1.0
    lv, rb0, f = ip[H_LVX], ip[H_RB], ip[H_WFB]
    for n in range(ip[ip[H_CNL] + k]):
        l = ip[ip[H_CL] + ip[ip[H_CL0] + k] + n]
        j0, ni, nd = ip[ip[H_LJ0] + l], ip[ip[H_LNI] + l], ip[ip[H_LND] + l]
        ix, dx = ip[H_LIX] + ip[ip[H_LI0] + l], ip[H_LDX] + ip[ip[H_LD0] + l]
        ip_, dp = ip[H_LIP] + ip[ip[H_LI0] + l], ip[H_LDP] + ip[ip[H_LD0] + l]
        four_bar = ip[ip[H_LT] + l] == _FOUR_BAR
        if four_bar:
            if _four_bar_explicit(ip, fp, w, l, q, dq, with_dq) != CLOSED:
                return l
            Gl, Glo, gl, glo = w, f + F_GL, w, f + F_gl
        else:
            Gl, Glo = fp, rb0 + ip[ip[H_LR] + l]
            gl, glo = fp, Glo                                      # (unused: g_l = 0)
            if with_dq:
                for a in range(nd):                                 # q̇_dep = R q̇_ind
                    s = 0.0
                    for b in range(ni):
                        s += Gl[Glo + ni * a + b] * dq[ip[lv + j0 + ip[ix + b]]]
                    dq[ip[lv + j0 + ip[dx + a]]] = s
        for a in range(nd):                                         # G_k[dep] = G_l G_k[ind], g likewise
            ra = go + ny * ip[dp + a]
            for c in range(ny):
                s = 0.0
                for b in range(ni):
                    s += Gl[Glo + ni * a + b] * G[go + ny * ip[ip_ + b] + c]
                G[ra + c] = s
            s = gl[glo + a] if (four_bar and with_dq) else 0.0
            for b in range(ni):
                s += Gl[Glo + ni * a + b] * g[gro + ip[ip_ + b]]
            g[gro + ip[dp + a]] = s
    return -1
