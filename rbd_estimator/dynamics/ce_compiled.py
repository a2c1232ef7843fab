"""Constraint-embedding ABA and RNEA compiled (Chignoli et al. Algorithm 1 and §V, eqs. 62–65).

The same passes as the readable :mod:`.ce_aba` and :mod:`.ce_rnea`, line for line, as numba kernels
over a :class:`~rbd_estimator.model.cluster_packing.PackedClusterTree`: no Python loop over
clusters or bodies, and no allocation per call (every intermediate lives in the packed work array).
:class:`~.ce_data.ClusterDynamics` binds a cluster tree to its work buffers, as pinocchio's ``Data``
does; :func:`~.ce_data.ce_aba` and :func:`~.ce_data.ce_rnea` keep the reference functions'
signatures and use one per tree. A tree with an :class:`~rbd_estimator.model.loops.ExplicitLoop`
(Python callables for ``G``, ``g``, ``γ``) has no compiled form: the functions fall back to the
reference algorithms for it.

Per cluster k (bodies ``C_k``, ``n_b`` of them, ``n_f`` spanning and ``n_y`` independent
coordinates): ``SJ = 𝒥ₖX_Jₖ diag(S_i)`` (eq. 13, 15) is propagated body by body
(``SJ_i = ⁱX_λ(i) SJ_λ(i) + S_i``, eq. 12), ``S_k = SJ G_k``; ``ᵏX_λC(k)`` (eq. 35) is stored as
the transforms ``ⁱX_Λ(k)`` of the cluster's bodies (its only non-zero block column), so
``ᵏX_λ v_λ = stack(ⁱX_Λ v_Λ)`` and ``ˡX*_k f = Σᵢ (ⁱX_Λ)ᵀ fᵢ`` on the output body. Every transform
(``ⁱX_λ(i)`` in ``WXUP``, ``ⁱX_Λ`` in ``WXOUT``) is the kernel library's ``plux(E, r)``, 12 floats
(:data:`~rbd_estimator.model.cluster_packing.XF`), composed with ``compose`` and applied with ``mx``,
``mx_col``, ``fxT_add``, ``fxT_col_add`` and ``add_congruence`` (:mod:`rbd_estimator.kernels.spatial`);
the general 6 × 6 matrices (inertias, the blocks of ``I_kᴬ``) are 36 floats, row-major.
Units: rad, m, s, N, N·m; spatial vectors in body coordinates, Featherstone order.
"""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit
from ..model.cluster_kernels import cluster_constraint, cluster_position
from ..model.cluster_packing import (
    CLOSURE_FAILED, NOT_FINITE, H_A0, H_CB, H_CB0, H_CBV, H_CI0, H_CIND, H_CNB, H_CNV, H_CNY, H_CPAR, H_CSLOT, H_CV, H_CV0,
    H_CW, H_CYV, H_IN, H_NC, H_NQ, H_NV, H_NVY, H_PM, H_QREF, H_SC, H_VI, H_ND, H_WDQ, H_WQ, H_WT,
    H_WXOUT, H_WXUP, H_YQ, H_YV, NW, SINGULAR, W_DINV, W_G, W_IA, W_S, W_SJ, W_Sdy, W_U, W_a, W_g, W_p,
    W_u, W_v, X_E, X_R, XF, joint_transform)
from ..kernels.spatial import (add6, add_congruence, compose, fcross, fxT_add, fxT_col_add, mcross, mv6, mx, mx_col,
                               set6)

__all__ = ["ce_aba_kernel", "ce_rnea_kernel", "M_INDEPENDENT", "M_EFFORT_SPANNING", "M_OUTPUT_SPANNING"]

#: mode bits of the kernels: independent state ``(y, ẏ)``, spanning efforts ``τ_tree``, spanning output
M_INDEPENDENT, M_EFFORT_SPANNING, M_OUTPUT_SPANNING = 1, 2, 4


# ---------------------------------------------------------------------------- small dense algebra
@fast_njit
def _matmul(A, ao, B, bo, C, co, n, m, p, transpose_a=False):
    """``C = Â B`` (row-major; ``Â`` is n × m, ``B`` m × p): ``Â = A``, or with ``transpose_a``
    ``Â = Aᵀ`` of an ``A`` stored m × n."""
    rs, cs = (1, n) if transpose_a else (m, 1)
    for r in range(n):
        for c in range(p):
            s = 0.0
            for k in range(m):
                s += A[ao + rs * r + cs * k] * B[bo + p * k + c]
            C[co + p * r + c] = s


@fast_njit
def _inverse(A, ao, n, X, xo, T, to):
    """``X = A⁻¹`` (n × n) by Gauss–Jordan elimination with partial pivoting (``T[to:to+n²]``:
    scratch). ``A`` is a joint-space inertia, symmetric positive definite."""
    for k in range(n * n):
        T[to + k] = A[ao + k]
        X[xo + k] = 0.0
    for k in range(n):
        X[xo + (n + 1) * k] = 1.0
    for c in range(n):
        p, big = c, abs(T[to + n * c + c])
        for r in range(c + 1, n):
            if abs(T[to + n * r + c]) > big:
                p, big = r, abs(T[to + n * r + c])
        if p != c:
            for k in range(n):
                T[to + n * c + k], T[to + n * p + k] = T[to + n * p + k], T[to + n * c + k]
                X[xo + n * c + k], X[xo + n * p + k] = X[xo + n * p + k], X[xo + n * c + k]
        d = 1.0 / T[to + n * c + c]
        for k in range(n):
            T[to + n * c + k] *= d
            X[xo + n * c + k] *= d
        for r in range(n):
            if r != c:
                f = T[to + n * r + c]
                if f != 0.0:
                    for k in range(n):
                        T[to + n * r + k] -= f * T[to + n * c + k]
                        X[xo + n * r + k] -= f * X[xo + n * c + k]


@fast_njit
def _bias_force(fp, io, v, vo, y, yo, T, to):
    """``y (+)= v ×* I v`` (eq. 58; ``T[to:to+6]``: scratch)."""
    set6(T, to, mv6(fp, io, v, vo))                                 # I v
    add6(y, yo, fcross(v, vo, T, to))                               # v ×* (I v)


@fast_njit
def _finite(x):
    for k in range(x.size):
        if not np.isfinite(x[k]):
            return False
    return True


# ---------------------------------------------------------------------------- cluster joint
@fast_njit
def _parent_vector(ip, w, k, item):
    """Offset of the parent's output-body entry of stacked vector ``item`` (``-1``: the fixed base)."""
    par = ip[ip[H_CPAR] + k]
    if par < 0:
        return -1
    return ip[ip[H_CW] + NW * par + item] + 6 * ip[ip[H_CSLOT] + k]


@fast_njit
def _cluster_joint(ip, fp, w, k, q, dq, solve):
    """Cluster joint k at the state (Alg. 1, outward pass 1, lines 3–16; :func:`.clusters.cluster_joint`):
    ``q_k = γ_k(y_k)`` when ``solve``, ``G_k``, ``g_k`` (dependent ``q̇`` overwritten), ``ⁱX_λ(i)``,
    ``ⁱX_Λ(k)``, ``SJ``, ``S_k`` (15), ``v_k = ᵏX_λ v_λ + SJ q̇_k`` (57) and
    ``Ṡ_k ẏ_k = SJ g_k + 𝒥X stack(v_i × S_i q̇_i)`` (19). Returns 0 or ``4 l + status``."""
    cw = ip[H_CW] + NW * k
    nb, nv, ny = ip[ip[H_CNB] + k], ip[ip[H_CNV] + k], ip[ip[H_CNY] + k]
    b0, v0 = ip[H_CB] + ip[ip[H_CB0] + k], ip[H_CV] + ip[ip[H_CV0] + k]
    if solve:
        bad = cluster_position(ip, fp, w, k, q, fp[ip[H_QREF]:ip[H_QREF] + ip[H_NQ]])    # line 3
        if bad >= 0:
            return 4 * bad + CLOSURE_FAILED
    bad = cluster_constraint(ip, fp, w, k, q, dq, True, w, ip[cw + W_G], w, ip[cw + W_g])   # lines 4–6
    if bad >= 0:
        return 4 * bad + SINGULAR
    SJ, S, v, Sdy = ip[cw + W_SJ], ip[cw + W_S], ip[cw + W_v], ip[cw + W_Sdy]
    prop = ip[cw + W_a]                                             # 𝒥X stack(v_i × S_i q̇_i), then a_k
    vpar = _parent_vector(ip, w, k, W_v)
    t0 = ip[H_WT]
    for m in range(nb):
        i = ip[b0 + m]
        pm = ip[ip[H_PM] + i]
        xu, xo = ip[H_WXUP] + XF * i, ip[H_WXOUT] + XF * i
        joint_transform(ip, fp, w, q, i, w, xu)                     # lines 7–10: ⁱX_λ(i)
        row = SJ + 6 * nv * m                                       # line 11, (12): SJ_i = ⁱX_λ(i) SJ_λ(i) + S_i
        if pm < 0:
            for e in range(XF):
                w[xo + e] = w[xu + e]                               # ⁱX_Λ = ⁱX_λ(i)
            for e in range(6 * nv):
                w[row + e] = 0.0
        else:
            xp = ip[H_WXOUT] + XF * ip[b0 + pm]                     # ⁱX_Λ = ⁱX_λ(i) ^λ(i)X_Λ
            compose(w, xu + X_E, w, xu + X_R, w, xp + X_E, w, xp + X_R, w, xo + X_E, w, xo + X_R)
            for c in range(nv):                                     # ⁱX_λ(i) SJ_λ(i), column by column
                mx_col(w, xu + X_E, w, xu + X_R, w, SJ + 6 * nv * pm + c, nv, w, row + c, nv)
        cb, vi = ip[ip[H_CBV] + ip[ip[H_CB0] + k] + m], ip[ip[H_VI] + i]
        for d in range(ip[ip[H_ND] + i]):
            for r in range(6):
                w[row + nv * r + cb + d] += fp[ip[H_SC] + 6 * (vi + d) + r]
    _matmul(w, SJ, w, ip[cw + W_G], w, S, 6 * nb, nv, ny)           # line 12, (15): S_k = SJ G_k
    for m in range(nb):                                             # line 14, (57)
        i = ip[b0 + m]
        o = v + 6 * m
        if vpar >= 0:
            xo = ip[H_WXOUT] + XF * i
            mx(w, xo + X_E, w, xo + X_R, w, vpar, w, o)
        else:
            for r in range(6):
                w[o + r] = 0.0
        for r in range(6):
            s = 0.0
            for c in range(nv):
                s += w[SJ + nv * (6 * m + r) + c] * dq[ip[v0 + c]]
            w[o + r] += s
    for m in range(nb):                                             # lines 15–16, (19)
        i = ip[b0 + m]
        pm = ip[ip[H_PM] + i]
        vi, o = ip[ip[H_VI] + i], prop + 6 * m
        for r in range(6):
            s = 0.0
            for d in range(ip[ip[H_ND] + i]):
                s += fp[ip[H_SC] + 6 * (vi + d) + r] * dq[vi + d]
            w[t0 + r] = s                                           # S_i q̇_i
        if pm < 0:
            for r in range(6):
                w[o + r] = 0.0
        else:
            xu = ip[H_WXUP] + XF * i
            mx(w, xu + X_E, w, xu + X_R, w, prop + 6 * pm, w, o)
        add6(w, o, mcross(w, v + 6 * m, w, t0))
        for r in range(6):
            s = w[o + r]
            for c in range(nv):
                s += w[SJ + nv * (6 * m + r) + c] * w[ip[cw + W_g] + c]
            w[Sdy + 6 * m + r] = s
    return 0


@fast_njit
def _parent_acceleration(ip, fp, w, k, m, a0, out):
    """``(ᵏX_λ a_λ)_m = ⁱX_Λ a_Λ`` of body m of cluster k into ``w[out:out+6]`` (``a_Λ = a_0`` on the base)."""
    xo = ip[H_WXOUT] + XF * ip[ip[H_CB] + ip[ip[H_CB0] + k] + m]
    apar = _parent_vector(ip, w, k, W_a)
    if apar >= 0:
        mx(w, xo + X_E, w, xo + X_R, w, apar, w, out)
    else:
        mx(w, xo + X_E, w, xo + X_R, fp, a0, w, out)


@fast_njit
def _to_parent(ip, w, k, x, accumulate_into):
    """``ˡX*_k x`` (eq. 36) added to the parent's output-body entry at ``accumulate_into``."""
    b0 = ip[H_CB] + ip[ip[H_CB0] + k]
    for m in range(ip[ip[H_CNB] + k]):
        xo = ip[H_WXOUT] + XF * ip[b0 + m]
        fxT_add(w, xo + X_E, w, xo + X_R, w, x + 6 * m, w, accumulate_into, 1.0)


@fast_njit
def _load_state(ip, fp, w, q, dq, x, fx, mode):
    """The spanning ``q``, ``q̇`` the passes work on (``w[WQ]``, ``w[WDQ]``): copies of the inputs, or
    the reference configuration with ``y`` and zero velocity with ``ẏ`` (independent state; the
    dependent entries are solved cluster by cluster). ``False`` when an input (``q``, ``dq``, the
    efforts or accelerations ``x``, the forces ``fx``) is not finite."""
    if not (_finite(q) and _finite(dq) and _finite(x) and _finite(fx)):
        return False
    wq, wdq, nq, nv = ip[H_WQ], ip[H_WDQ], ip[H_NQ], ip[H_NV]
    if mode & M_INDEPENDENT:
        for j in range(nq):
            w[wq + j] = fp[ip[H_QREF] + j]
        for j in range(nv):
            w[wdq + j] = 0.0
        for j in range(ip[H_NVY]):
            w[wdq + ip[ip[H_YV] + j]] = dq[j]
        for j in range(q.size):
            w[wq + ip[ip[H_YQ] + j]] = q[j]
    else:
        for j in range(nq):
            w[wq + j] = q[j]
        for j in range(nv):
            w[wdq + j] = dq[j]
    return True


@fast_njit
def ce_aba_kernel(ip, fp, w, q, dq, tau, fx, mode, ddq, ddy):
    """Algorithm 1 (CE-ABA): ``ÿ`` into ``ddy`` and ``q̈ = G ÿ + g`` into ``ddq`` (spanning). ``q``,
    ``dq``: ``(y, ẏ)`` or spanning ``(q, q̇)`` (``mode``); ``tau``: ``τ`` (independent) or ``τ_tree``;
    ``fx``: per-body external forces ``f_iˣ`` (NB × 6, flattened, body coordinates). Returns 0,
    :data:`NOT_FINITE` for a non-finite input, or ``4 l + status`` for loop l that cannot be closed
    or is singular."""
    if not _load_state(ip, fp, w, q, dq, tau, fx, mode):
        return NOT_FINITE
    wq, wdq = ip[H_WQ], ip[H_WDQ]
    Q, DQ, NC = w[wq:wq + ip[H_NQ]], w[wdq:wdq + ip[H_NV]], ip[H_NC]
    t0 = ip[H_WT]
    for k in range(NC):                                             # outward pass 1 (ascending)
        status = _cluster_joint(ip, fp, w, k, Q, DQ, mode & M_INDEPENDENT)
        if status:
            return status
        cw = ip[H_CW] + NW * k
        nb = ip[ip[H_CNB] + k]
        IA, pA, v = ip[cw + W_IA], ip[cw + W_p], ip[cw + W_v]
        b0 = ip[H_CB] + ip[ip[H_CB0] + k]
        for m in range(nb):                                         # line 17: I_kᴬ = I_k; line 18: pᴬ_k
            i = ip[b0 + m]
            io = ip[H_IN] + 36 * i
            for e in range(36):
                w[IA + 36 * m + e] = fp[io + e]
            for r in range(6):
                w[pA + 6 * m + r] = -fx[6 * i + r]
            _bias_force(fp, io, w, v + 6 * m, w, pA + 6 * m, w, t0)
    for k in range(NC - 1, -1, -1):                                 # inward pass (descending)
        cw = ip[H_CW] + NW * k
        nb, nv_k, ny = ip[ip[H_CNB] + k], ip[ip[H_CNV] + k], ip[ip[H_CNY] + k]
        n6 = 6 * nb
        IA, pA, S, U, Dinv, u = ip[cw + W_IA], ip[cw + W_p], ip[cw + W_S], ip[cw + W_U], ip[cw + W_DINV], ip[cw + W_u]
        G, v0, y0 = ip[cw + W_G], ip[H_CV] + ip[ip[H_CV0] + k], ip[H_CYV] + ip[ip[H_CI0] + k]
        for j in range(ny):                                         # line 2: t_k (= G_kᵀ τ_tree)
            if mode & M_EFFORT_SPANNING:
                s = 0.0
                for r in range(nv_k):
                    s += w[G + ny * r + j] * tau[ip[v0 + r]]
            else:
                s = tau[ip[y0 + j]]
            w[u + j] = s
        for m in range(nb):                                         # line 3: U_k = I_kᴬ S_k (block diagonal I_kᴬ)
            _matmul(w, IA + 36 * m, w, S + 6 * ny * m, w, U + 6 * ny * m, 6, 6, ny)
        D = t0
        _matmul(w, S, w, U, w, D, ny, n6, ny, True)                      # line 4: D_k = S_kᵀ U_k
        _inverse(w, D, ny, w, Dinv, w, D + ny * ny)
        for j in range(ny):                                         # line 5: u_k = t_k − S_kᵀ pᴬ_k
            s = 0.0
            for r in range(n6):
                s += w[S + ny * r + j] * w[pA + r]
            w[u + j] -= s
        if ip[ip[H_CPAR] + k] >= 0:                                 # line 6
            _articulated_to_parent(ip, w, k, t0)                    # lines 7–10, (59)–(60)
    a0 = ip[H_A0]                                                   # a_0 = −a_g
    for k in range(NC):                                             # outward pass 2 (ascending)
        cw = ip[H_CW] + NW * k
        nb, nv_k, ny = ip[ip[H_CNB] + k], ip[ip[H_CNV] + k], ip[ip[H_CNY] + k]
        S, U, Dinv, u, a, Sdy = ip[cw + W_S], ip[cw + W_U], ip[cw + W_DINV], ip[cw + W_u], ip[cw + W_a], ip[cw + W_Sdy]
        for m in range(nb):                                         # line 3: a' = ᵏX_λ a_λ + Ṡẏ
            _parent_acceleration(ip, fp, w, k, m, a0, a + 6 * m)
            for r in range(6):
                w[a + 6 * m + r] += w[Sdy + 6 * m + r]
        x = t0
        for j in range(ny):                                         # line 4, (53): ÿ_k = D⁻¹ (u − Uᵀ a')
            s = w[u + j]
            for r in range(6 * nb):
                s -= w[U + ny * r + j] * w[a + r]
            w[x + j] = s
        y0 = ip[H_CYV] + ip[ip[H_CI0] + k]
        for j in range(ny):
            s = 0.0
            for c in range(ny):
                s += w[Dinv + ny * j + c] * w[x + c]
            ddy[ip[y0 + j]] = s
        for r in range(6 * nb):                                     # line 5, (61): a_k = a' + S ÿ
            s = 0.0
            for j in range(ny):
                s += w[S + ny * r + j] * ddy[ip[y0 + j]]
            w[a + r] += s
        G, g, v0 = ip[cw + W_G], ip[cw + W_g], ip[H_CV] + ip[ip[H_CV0] + k]
        for r in range(nv_k):                                       # q̈_k = G_k ÿ_k + g_k
            s = w[g + r]
            for j in range(ny):
                s += w[G + ny * r + j] * ddy[ip[y0 + j]]
            ddq[ip[v0 + r]] = s
    return 0


@fast_njit
def _articulated_to_parent(ip, w, k, T):
    """Alg. 1 lines 7–10 (eqs. 59–60) for cluster k, on the parent's output-body entries:
    ``I_λᴬ += sym(ˡX*_k Iᵃ ᵏX_λ)`` and ``p_λᴬ += ˡX*_k pᵃ`` with ``Iᵃ = Iᴬ − U D⁻¹ Uᵀ`` and
    ``pᵃ = pᴬ + Iᵃ Ṡẏ + U D⁻¹ u``. ``I_kᴬ`` is block diagonal (§IV-B: children add to the diagonal
    block of their output body) and ``ᵏX_λ`` has one block column, the ``X_m = ⁱX_Λ``; so with
    ``W = ˡX*_k U = Σ_m X_mᵀ U_m`` (6 × n_y), without forming the dense ``Iᵃ``::

        ˡX*_k Iᵃ ᵏX_λ = Σ_m X_mᵀ Iᴬ_mm X_m − W D⁻¹ Wᵀ,
        ˡX*_k pᵃ      = Σ_m X_mᵀ (pᴬ_m + Iᴬ_mm (Ṡẏ)_m) + W D⁻¹ (u − Uᵀ Ṡẏ).

    The symmetrisation keeps round-off from growing from cluster to cluster (see
    :func:`.ce_aba._symmetric`). ``T``: scratch of ``13 n_y + 93`` entries."""
    cw = ip[H_CW] + NW * k
    nb, ny = ip[ip[H_CNB] + k], ip[ip[H_CNY] + k]
    IA, pA, U, Dinv, u, Sdy = (ip[cw + W_IA], ip[cw + W_p], ip[cw + W_U], ip[cw + W_DINV], ip[cw + W_u],
                               ip[cw + W_Sdy])
    b0 = ip[H_CB] + ip[ip[H_CB0] + k]
    Wm, WD, C, z, y, r_, tmp = T, T + 6 * ny, T + 12 * ny, T + 12 * ny + 36, T + 12 * ny + 42, T + 12 * ny + 48, \
        T + 13 * ny + 48
    for e in range(6 * ny):
        w[Wm + e] = 0.0
    for e in range(36):
        w[C + e] = 0.0
    for e in range(6):
        w[y + e] = 0.0
    for j in range(ny):
        w[r_ + j] = w[u + j]
    for m in range(nb):
        xo, ia = ip[H_WXOUT] + XF * ip[b0 + m], IA + 36 * m
        xe, xr = xo + X_E, xo + X_R
        add_congruence(w, xe, w, xr, w, ia, w, C, w, tmp)           # C += X_mᵀ Iᴬ_mm X_m (eq. 2.66)
        set6(w, z, mv6(w, ia, w, Sdy + 6 * m))                      # z = pᴬ_m + Iᴬ_mm (Ṡẏ)_m
        for e in range(6):
            w[z + e] += w[pA + 6 * m + e]
        fxT_add(w, xe, w, xr, w, z, w, y, 1.0)                      # y += X_mᵀ z
        for j in range(ny):                                         # W += X_mᵀ U_m, r = u − Uᵀ Ṡẏ
            s = 0.0
            for e in range(6):
                s += w[U + ny * (6 * m + e) + j] * w[Sdy + 6 * m + e]
            w[r_ + j] -= s
            fxT_col_add(w, xe, w, xr, w, U + 6 * ny * m + j, ny, w, Wm + j, ny, 1.0)
    _matmul(w, Wm, w, Dinv, w, WD, 6, ny, ny)                       # W D⁻¹
    for a in range(6):
        s = 0.0
        for j in range(ny):
            s += w[WD + ny * a + j] * w[r_ + j]
        w[y + a] += s                                               # + W D⁻¹ (u − Uᵀ Ṡẏ)
        for c in range(6):
            x = 0.0
            for j in range(ny):
                x += w[WD + ny * a + j] * w[Wm + ny * c + j]
            w[C + 6 * a + c] -= x                                   # − W D⁻¹ Wᵀ
    par = ip[ip[H_CPAR] + k]
    slot = ip[ip[H_CSLOT] + k]
    P = ip[ip[H_CW] + NW * par + W_IA] + 36 * slot
    for a in range(6):
        for c in range(6):
            w[P + 6 * a + c] += 0.5 * (w[C + 6 * a + c] + w[C + 6 * c + a])
    pp = ip[ip[H_CW] + NW * par + W_p] + 6 * slot
    for a in range(6):
        w[pp + a] += w[y + a]


@fast_njit
def ce_rnea_kernel(ip, fp, w, q, dq, ddq, fx, mode, tau, tau_tree):
    """§V (CE-RNEA): ``τ = S_kᵀ f_kᴶ`` per cluster into ``tau`` (independent), and with
    :data:`M_OUTPUT_SPANNING` ``τ_tree = P_k τ_k``, ``P_k = G_k (G_kᵀ G_k)⁻¹ = (G_kᵀ)⁺`` (eq. 31)
    into ``tau_tree``. ``ddq``: ``ÿ``, or a spanning ``q̈`` whose independent entries are used.
    Returns 0, :data:`NOT_FINITE` or ``4 l + status``."""
    if not _load_state(ip, fp, w, q, dq, ddq, fx, mode):
        return NOT_FINITE
    wq, wdq = ip[H_WQ], ip[H_WDQ]
    Q, DQ, NC = w[wq:wq + ip[H_NQ]], w[wdq:wdq + ip[H_NV]], ip[H_NC]
    t0 = ip[H_WT]
    a0 = ip[H_A0]
    for k in range(NC):                                             # outward pass (62)–(63)
        status = _cluster_joint(ip, fp, w, k, Q, DQ, mode & M_INDEPENDENT)
        if status:
            return status
        cw = ip[H_CW] + NW * k
        nb, ny = ip[ip[H_CNB] + k], ip[ip[H_CNY] + k]
        S, a, v, f, Sdy = ip[cw + W_S], ip[cw + W_a], ip[cw + W_v], ip[cw + W_p], ip[cw + W_Sdy]
        y0, i0, v0 = ip[H_CYV] + ip[ip[H_CI0] + k], ip[H_CIND] + ip[ip[H_CI0] + k], ip[H_CV] + ip[ip[H_CV0] + k]
        for j in range(ny):                                         # ÿ_k
            w[t0 + j] = ddq[ip[y0 + j]] if mode & M_INDEPENDENT else ddq[ip[v0 + ip[i0 + j]]]
        b0 = ip[H_CB] + ip[ip[H_CB0] + k]
        for m in range(nb):                                         # (62) a_k = ᵏX_λ a_λ + Ṡẏ + S ÿ
            _parent_acceleration(ip, fp, w, k, m, a0, a + 6 * m)
            for r in range(6):
                s = w[Sdy + 6 * m + r]
                for j in range(ny):
                    s += w[S + ny * (6 * m + r) + j] * w[t0 + j]
                w[a + 6 * m + r] += s
            i = ip[b0 + m]                                          # (63) f = I a + v ×* I v − fˣ
            io = ip[H_IN] + 36 * i
            set6(w, f + 6 * m, mv6(fp, io, w, a + 6 * m))
            for r in range(6):
                w[f + 6 * m + r] -= fx[6 * i + r]
            _bias_force(fp, io, w, v + 6 * m, w, f + 6 * m, w, t0 + ny)
    for k in range(NC - 1, -1, -1):                                 # inward pass (65)
        cw = ip[H_CW] + NW * k
        nb, ny = ip[ip[H_CNB] + k], ip[ip[H_CNY] + k]
        S, f = ip[cw + W_S], ip[cw + W_p]
        y0 = ip[H_CYV] + ip[ip[H_CI0] + k]
        for j in range(ny):                                         # (23) τ_k = S_kᵀ f_kᴶ
            s = 0.0
            for r in range(6 * nb):
                s += w[S + ny * r + j] * w[f + r]
            tau[ip[y0 + j]] = s
        if mode & M_OUTPUT_SPANNING:
            _spanning_effort(ip, w, k, tau, tau_tree, t0)
        if ip[ip[H_CPAR] + k] >= 0:
            _to_parent(ip, w, k, f, _parent_vector(ip, w, k, W_p))  # (65) f_λᴶ += ˡX*_k f_kᴶ
    return 0


@fast_njit
def _spanning_effort(ip, w, k, tau, tau_tree, T):
    """``τ_tree,k = G_k (G_kᵀ G_k)⁻¹ τ_k`` (eq. 31; ``T``: scratch)."""
    cw = ip[H_CW] + NW * k
    nv, ny = ip[ip[H_CNV] + k], ip[ip[H_CNY] + k]
    G, y0, v0 = ip[cw + W_G], ip[H_CYV] + ip[ip[H_CI0] + k], ip[H_CV] + ip[ip[H_CV0] + k]
    GtG, inv, x = T, T + ny * ny, T + 2 * ny * ny
    _matmul(w, G, w, G, w, GtG, ny, nv, ny, True)
    _inverse(w, GtG, ny, w, inv, w, x + ny)
    for j in range(ny):
        s = 0.0
        for c in range(ny):
            s += w[inv + ny * j + c] * tau[ip[y0 + c]]
        w[x + j] = s
    for r in range(nv):
        s = 0.0
        for j in range(ny):
            s += w[G + ny * r + j] * w[x + j]
        tau_tree[ip[v0 + r]] = s
