"""Compiled RNEA, ABA and CRBA (and forward dynamics by CRBA + LTDL) on flat preallocated arrays.

The same equations as the readable references (:mod:`.rnea`, :mod:`.aba`, :mod:`.crba`,
:mod:`.forward_dynamics`; equation numbers in the comments are those of the references), in
compiled loops over the bodies, allocating nothing. :class:`~.data.DynamicsData` owns the arrays:

* ``MI`` (NB × 8, int64), per body: parent λ(i) (−1: fixed base), joint type, index in ``q``,
  index in ``v``, n_i (0, 1 or 6), first and end ``v`` index of the subtree ν(i), and the first
  column of body i's rows in the upper triangle of M⁻¹ (see :mod:`.minverse`);
* ``MF`` (NB × 87, float), per body: ``S_i`` (6 × 6, column-major, n_i columns used), joint axis,
  ``X_T(i) = plux(E_T, r_T)`` and the spatial inertia ``I_i`` (6 × 6, kg, kg·m, kg·m²);
* ``W`` (NB × 228, float), per body work: ``ⁱX_λ = plux(E, r)``, ``v_i``, ``a_i``, ``f_i``, ``c_i``,
  ``I_iᴬ`` (or ``I_iᶜ``), ``p_iᴬ``, ``U_i`` (or ``F``; column-major), ``D_i⁻¹``, ``u_i`` and scratch.

Body coordinates, Featherstone order (motion ``[ω; v]``, force ``[n; f]``); ``a0 = −a_g``.
"""
from __future__ import annotations

from .ltl_jit import ltdl_kernel, solve_L_kernel, solve_Lt_kernel
from .spatial_jit import (inline, kernel, X_motion, add_congruence, add_force_cross, add_XT_force, joint_transform, matvec6,
                          motion_cross, spd_inverse)

# columns of MI
PARENT, JTYPE, QIDX, VIDX, DOFS, SUB_LO, SUB_HI, COL0 = range(8)
# columns of MF
S_, AXIS, ET, RT, INERTIA, MF_SIZE = 0, 36, 39, 48, 51, 87
# columns of W
E_, R_, V_, A_, F_, C_, IA_, PA_, U_, DINV, UU, TMP, TMP2, W_SIZE = (0, 9, 12, 18, 24, 30, 36, 72, 78, 114, 150, 156,
                                                                    192, 228)


@kernel
def transforms(MI, MF, W, q):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i)`` of every body into ``W[:, E_]``, ``W[:, R_]``."""
    for i in range(MI.shape[0]):
        joint_transform(MI[i, JTYPE], MF[i, AXIS:AXIS + 3], MF[i, ET:ET + 9], MF[i, RT:RT + 3], q, MI[i, QIDX],
                        W[i, E_:E_ + 9], W[i, R_:R_ + 3])


@inline
def _S_times(MF, i, n, x, k, out):
    """``out = S_i x[k:k+n]`` (6,)."""
    if n == 1:                                                      # the common 1-DoF joint
        for a in range(6):
            out[a] = MF[i, S_ + a] * x[k]
        return
    for a in range(6):
        s = 0.0
        for j in range(n):
            s += MF[i, S_ + 6 * j + a] * x[k + j]
        out[a] = s


@inline
def _St_times(MF, i, n, f, out, k):
    """``out[k:k+n] = S_iᵀ f`` for a 6-vector ``f``."""
    for j in range(n):
        s = 0.0
        for b in range(6):
            s += MF[i, S_ + 6 * j + b] * f[b]
        out[k + j] = s


@inline
def _velocity(MI, MF, W, i, dq):
    """(2) ``v_i = ⁱX_λ v_λ + S_i q̇_i`` and ``c_i = v_i × S_i q̇_i``; ``S_i q̇_i`` left in TMP2."""
    p, n = MI[i, PARENT], MI[i, DOFS]
    vJ, v = W[i, TMP2:TMP2 + 6], W[i, V_:V_ + 6]
    _S_times(MF, i, n, dq, MI[i, VIDX], vJ)
    if p >= 0:
        X_motion(W[i, E_:E_ + 9], W[i, R_:R_ + 3], W[p, V_:V_ + 6], v)
        for a in range(6):
            v[a] += vJ[a]
    else:
        v[:] = vJ
    motion_cross(v, vJ, W[i, C_:C_ + 6])


@inline
def _parent_motion(MI, W, i, col, a0, out):
    """``out = ⁱX_λ m_λ`` for the motion in column ``col`` of the parent's work row (``ⁱX_λ a0``
    for a body on the fixed base)."""
    p = MI[i, PARENT]
    X_motion(W[i, E_:E_ + 9], W[i, R_:R_ + 3], W[p, col:col + 6] if p >= 0 else a0, out)


@kernel
def rnea_kernel(MI, MF, W, q, dq, ddq, fx, a0, tau):
    """``τ = InvD(q, q̇, q̈, f^x)`` (Nori eq. 6) into ``tau`` (nv,)."""
    NB = MI.shape[0]
    transforms(MI, MF, W, q)
    rnea_passes(MI, MF, W, dq, ddq, fx, a0, tau)


@kernel
def rnea_passes(MI, MF, W, dq, ddq, fx, a0, tau):
    """The two passes of the RNEA on the transforms already in ``W``."""
    NB = MI.shape[0]
    for i in range(NB):                                             # forward pass, i = 1 … N_B
        n, k = MI[i, DOFS], MI[i, VIDX]
        _velocity(MI, MF, W, i, dq)                                 # (2), c_i = v_i × S_i q̇_i
        a, f, Sa = W[i, A_:A_ + 6], W[i, F_:F_ + 6], W[i, TMP:TMP + 6]
        _parent_motion(MI, W, i, A_, a0, a)
        _S_times(MF, i, n, ddq, k, Sa)
        for b in range(6):
            a[b] += Sa[b] + W[i, C_ + b]                            # (3a)
        Iv = W[i, TMP:TMP + 6]
        I = MF[i, INERTIA:INERTIA + 36]
        v = W[i, V_:V_ + 6]
        matvec6(I, v, Iv)
        matvec6(I, a, f)
        add_force_cross(v, Iv, f)                                   # (3f): I_i a_i + v_i ×* I_i v_i
        for b in range(6):
            f[b] -= fx[i, b]                                        #        − f_i^x
    for i in range(NB - 1, -1, -1):                                 # backward pass, i = N_B … 1
        n, k, p = MI[i, DOFS], MI[i, VIDX], MI[i, PARENT]
        f = W[i, F_:F_ + 6]
        _St_times(MF, i, n, f, tau, k)                              # (3τ) τ_i = S_iᵀ f_i
        if p >= 0:
            add_XT_force(W[i, E_:E_ + 9], W[i, R_:R_ + 3], f, W[p, F_:F_ + 6])   # f_λ += ᵖX*_i f_i


@kernel
def aba_kernel(MI, MF, W, q, dq, tau, fx, a0, ddq):
    """``q̈ = FwdD(q, q̇, τ, f^x)`` (Nori eqs. 12–13) into ``ddq`` (nv,). Returns the first body whose
    ``D_i`` is not positive definite, or −1."""
    NB = MI.shape[0]
    transforms(MI, MF, W, q)
    for i in range(NB):                                             # first forward pass
        _velocity(MI, MF, W, i, dq)                                 # (2), c_i
        v, pA, IA = W[i, V_:V_ + 6], W[i, PA_:PA_ + 6], W[i, IA_:IA_ + 36]
        IA[:] = MF[i, INERTIA:INERTIA + 36]                         # I_iᴬ = I_i
        Iv = W[i, TMP:TMP + 6]
        matvec6(IA, v, Iv)
        for b in range(6):
            pA[b] = -fx[i, b]
        add_force_cross(v, Iv, pA)                                  # p_iᴬ = v_i ×* I_i v_i − f_i^x
    for i in range(NB - 1, -1, -1):                                 # backward pass, i = N_B … 1
        if MI[i, DOFS] and not _articulate(MI, MF, W, i, tau):
            return i
        p = MI[i, PARENT]
        if p >= 0:
            E, r = W[i, E_:E_ + 9], W[i, R_:R_ + 3]
            add_congruence(E, r, W[i, IA_:IA_ + 36], W[p, IA_:IA_ + 36], W[i, TMP:TMP + 45])   # (12Iᴬ)
            add_XT_force(E, r, W[i, PA_:PA_ + 6], W[p, PA_:PA_ + 6])                         # (12p)
    for i in range(NB):                                             # second forward pass
        n, k = MI[i, DOFS], MI[i, VIDX]
        a = W[i, A_:A_ + 6]
        _parent_motion(MI, W, i, A_, a0, a)
        for b in range(6):
            a[b] += W[i, C_ + b]                                    # ⁱX_λ a_λ + c_i
        if n:
            for j in range(n):                                      # u_i − U_iᵀ a_i
                s = W[i, UU + j]
                for b in range(6):
                    s -= W[i, U_ + 6 * j + b] * a[b]
                W[i, TMP + j] = s
            for j in range(n):                                      # (13q̈)
                s = 0.0
                for l in range(n):
                    s += W[i, DINV + n * j + l] * W[i, TMP + l]
                ddq[k + j] = s
            for b in range(6):                                      # (3a) a_i += S_i q̈_i
                for j in range(n):
                    a[b] += MF[i, S_ + 6 * j + b] * ddq[k + j]
    return -1


@inline
def _articulate(MI, MF, W, i, tau):
    """Body i of the ABA's backward pass: ``U_i``, ``D_i⁻¹``, ``u_i``, then ``I_iᵃ`` (12Iᵃ) and the
    braces of (12p) in place of ``I_iᴬ``, ``p_iᴬ``. False when ``D_i`` is not positive definite."""
    n, k = MI[i, DOFS], MI[i, VIDX]
    IA, pA = W[i, IA_:IA_ + 36], W[i, PA_:PA_ + 6]
    D, UD = W[i, TMP:TMP + 36], W[i, TMP2:TMP2 + 36]
    for j in range(n):
        matvec6(IA, MF[i, S_ + 6 * j:S_ + 6 * j + 6], W[i, U_ + 6 * j:U_ + 6 * j + 6])   # U_i = I_iᴬ S_i
    for j in range(n):
        s = tau[k + j]
        for b in range(6):
            s -= MF[i, S_ + 6 * j + b] * pA[b]
        W[i, UU + j] = s                                            # u_i = τ_i − S_iᵀ p_iᴬ
        for l in range(n):
            s = 0.0
            for b in range(6):
                s += MF[i, S_ + 6 * j + b] * W[i, U_ + 6 * l + b]
            D[n * j + l] = s                                        # D_i = S_iᵀ U_i
    if not spd_inverse(D, n, W[i, DINV:DINV + n * n]):
        return False
    for b in range(6):                                              # UD = U_i D_i⁻¹
        for j in range(n):
            s = 0.0
            for l in range(n):
                s += W[i, U_ + 6 * l + b] * W[i, DINV + n * l + j]
            UD[6 * j + b] = s
    for a in range(6):
        for b in range(6):
            s = 0.0
            for j in range(n):
                s += UD[6 * j + a] * W[i, U_ + 6 * j + b]
            IA[6 * a + b] -= s                                      # (12Iᵃ) I_iᴬ − U_i D_i⁻¹ U_iᵀ
    c = W[i, C_:C_ + 6]
    for a in range(6):
        s = 0.0
        for b in range(6):
            s += IA[6 * a + b] * c[b]
        for j in range(n):
            s += UD[6 * j + a] * W[i, UU + j]
        pA[a] += s                                                  # (12p) p_iᴬ + I_iᵃ c_i + U_i D_i⁻¹ u_i
    return True


@kernel
def crba_kernel(MI, MF, W, q, H):
    """``H(q)`` (Featherstone eq. 5) into ``H`` (nv × nv): only the blocks ``H_ji``, ``j ∈ anc(i)``,
    are written (both triangles); the branch-induced zeros of ``H`` are never touched."""
    transforms(MI, MF, W, q)
    crba_passes(MI, MF, W, H)


@kernel
def crba_passes(MI, MF, W, H):
    """The CRBA's pass on the transforms already in ``W`` (``W[:, IA_]`` holds ``I_iᶜ``)."""
    NB = MI.shape[0]
    for i in range(NB):
        W[i, IA_:IA_ + 36] = MF[i, INERTIA:INERTIA + 36]            # I_iᶜ = I_i
    for i in range(NB - 1, -1, -1):                                 # i = n … 1
        p, n, k = MI[i, PARENT], MI[i, DOFS], MI[i, VIDX]
        Ic = W[i, IA_:IA_ + 36]
        if p >= 0:                                                  # I_λᶜ += ᵖX*_i I_iᶜ ⁱX_λ
            add_congruence(W[i, E_:E_ + 9], W[i, R_:R_ + 3], Ic, W[p, IA_:IA_ + 36], W[i, TMP:TMP + 45])
        F = W[i, U_:U_ + 36]
        for j in range(n):
            matvec6(Ic, MF[i, S_ + 6 * j:S_ + 6 * j + 6], F[6 * j:6 * j + 6])   # F = I_iᶜ S_i
        _H_block(MF, i, n, k, F, n, k, H)                           # H_ii = S_iᵀ F
        j = i
        while n and MI[j, PARENT] >= 0:
            f6 = W[i, TMP:TMP + 6]
            for l in range(n):                                      # F = ᵖX*_j F
                f6[:] = 0.0
                add_XT_force(W[j, E_:E_ + 9], W[j, R_:R_ + 3], F[6 * l:6 * l + 6], f6)
                F[6 * l:6 * l + 6] = f6
            j = MI[j, PARENT]
            if MI[j, DOFS]:
                _H_block(MF, j, MI[j, DOFS], MI[j, VIDX], F, n, k, H)   # H_ji = S_jᵀ F, H_ij = H_jiᵀ


@inline
def _H_block(MF, j, nj, kj, F, n, k, H):
    """``H[kj:kj+nj, k:k+n] = S_jᵀ F`` and its transpose."""
    for a in range(nj):
        for b in range(n):
            s = 0.0
            for c in range(6):
                s += MF[j, S_ + 6 * a + c] * F[6 * b + c]
            H[kj + a, k + b] = s
            H[k + b, kj + a] = s


@kernel
def forward_dynamics_ltdl_kernel(MI, MF, W, q, dq, tau, fx, a0, lam, A, zero, ddq):
    """``q̈`` from ``H q̈ = τ − C`` (Featherstone eq. 1) into ``ddq``: ``C`` by the RNEA at ``q̈ = 0``,
    ``H`` by the CRBA into ``A``, ``A = LᵀDL`` in place (App. A), ``q̈ = L⁻¹ D⁻¹ L⁻ᵀ (τ − C)``.
    ``zero``: nv zeros. Returns the row of a non-positive pivot, or −1."""
    transforms(MI, MF, W, q)
    rnea_passes(MI, MF, W, dq, zero, fx, a0, ddq)                   # C = InvD(q, q̇, 0, f^x)
    crba_passes(MI, MF, W, A)
    for k in range(ddq.shape[0]):
        ddq[k] = tau[k] - ddq[k]                                    # τ − C
    bad = ltdl_kernel(A, lam)
    if bad >= 0:
        return bad
    x = ddq.reshape((ddq.shape[0], 1))
    solve_Lt_kernel(A, lam, x, True)                                # L⁻ᵀ (τ − C)
    for k in range(ddq.shape[0]):
        ddq[k] /= A[k, k]                                           # D⁻¹
    solve_L_kernel(A, lam, x, True)                                 # L⁻¹
    return -1
