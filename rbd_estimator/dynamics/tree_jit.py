"""Compiled RNEA, ABA and CRBA (and forward dynamics by CRBA + LTDL) on flat preallocated arrays.

The same equations as the readable references (:mod:`.rnea`, :mod:`.aba`, :mod:`.crba`,
:mod:`.forward_dynamics`; equation numbers in the comments are those of the references), in
compiled loops over the bodies, allocating nothing. :class:`~.data.DynamicsData` owns the arrays:

* ``MI`` (NB × ``MI_SIZE``, int64), per body: parent λ(i) (−1: fixed base), joint type, index in
  ``q``, index in ``v``, n_i (0, 1 or 6), first and end ``v`` index of the subtree ν(i), the first
  column of body i's rows in the upper triangle of M⁻¹, whether it is a leaf, the body whose
  motion set it shares (itself, or for a 0-DoF body its parent's; see :mod:`.minverse_jit`), and
  whether ``I_i`` has the rigid-body form of Featherstone eq. 2.63 (then ``MASS``, ``COM``, ``ICOM``
  hold ``m``, ``c`` and ``Ī_c``, and moving it to world coordinates needs no 6 × 6 congruence);
* ``MF`` (flat, ``MF_SIZE`` floats per body from ``i · MF_SIZE``): ``S_i`` (6 × 6, column-major,
  n_i columns used), the joint record (:data:`~rbd_estimator.kernels.joints.JOINT`: axis,
  ``X_T(i) = plux(E_T, r_T)``, the revolute factors) and the spatial inertia ``I_i``
  (6 × 6, kg, kg·m, kg·m²);
* ``W`` (flat, ``W_SIZE`` floats per body from ``i · W_SIZE``), per body work: ``ⁱX_λ = plux(E, r)``,
  ``v_i``, ``a_i``, ``f_i``, ``c_i``, ``I_iᴬ`` (or ``I_iᶜ``), ``p_iᴬ``, ``U_i`` (or ``F``;
  column-major), ``D_i⁻¹``, ``u_i``, scratch; for the passes in world coordinates (CRBA, M⁻¹)
  ``ⁱX_0`` and ``S_i`` in world coordinates.

Operands are ``(array, offset)`` pairs (see :mod:`rbd_estimator.kernels.spatial`); ``wi``/``wp``
are the offsets of body i's and its parent's work, ``mi`` that of body i's constants.

Body coordinates, Featherstone order (motion ``[ω; v]``, force ``[n; f]``); ``a0 = −a_g``.
"""
from __future__ import annotations

from ..jit import fast_njit as kernel
from ..kernels.joints import J_SIZE, joint_transforms
from ..kernels.layout import Layout
from ..kernels.spatial import (add6, add_congruence, compose, fcross, fxT_add, mcross, mv6, mx, mx_inv, rotate_block,
                               set6, spd_inverse)
from ..kernels.spatial import primitive as inline
from .ltl_jit import ltdl_kernel, solve_L_kernel, solve_Lt_kernel

# columns of MI
BODY_INTS = Layout("PARENT JTYPE QIDX VIDX DOFS SUB_LO SUB_HI COL0 LEAF PBLK RIGID")
PARENT, JTYPE, QIDX, VIDX, DOFS, SUB_LO, SUB_HI, COL0, LEAF, PBLK, RIGID = BODY_INTS.slots
MI_SIZE = BODY_INTS.size
# offsets in a body's MF block (Ī_c: stride 6)
BODY_FLOATS = Layout([("S_", 36), ("JNT", J_SIZE), ("INERTIA", 36), ("MASS", 1), ("COM", 3), ("ICOM", 15)])
S_, JNT, INERTIA, MASS, COM, ICOM = BODY_FLOATS.slots
MF_SIZE = BODY_FLOATS.size
# offsets in a body's W block (X_ holds E then r)
BODY_WORK = Layout([("X_", 12), ("V_", 6), ("A_", 6), ("F_", 6), ("C_", 6), ("IA_", 36), ("PA_", 6), ("U_", 36),
                    ("DINV", 36), ("UU", 6), ("TMP", 36), ("TMP2", 36), ("SW_", 36)])
X_, V_, A_, F_, C_, IA_, PA_, U_, DINV, UU, TMP, TMP2, SW_ = BODY_WORK.slots
W_SIZE = BODY_WORK.size
for _layout in (BODY_INTS, BODY_FLOATS, BODY_WORK):
    _layout.check(globals())
del _layout
O_ = V_                     # ⁱX_0 (12 floats) in the v, a slots, for the world-coordinate passes
R_ = 9                      # r after E in a transform's 12 floats: plux(E, r) at W[o], r at W[o + R_]


@kernel
def transforms(MI, MF, W, q):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i)`` of every body into its ``W`` block."""
    joint_transforms(0, MI.shape[0], MI.reshape(MI.size), JTYPE, QIDX, MI_SIZE, MF, JNT, MF_SIZE, q, W, X_, W_SIZE,
                     W, X_ + R_, W_SIZE, False)


@inline
def _S_times(MF, mi, n, x, k, out, u):
    """``out[u:u+6] = S_i x[k:k+n]``."""
    if n == 1:                                                      # the common 1-DoF joint
        for a in range(6):
            out[u + a] = MF[mi + S_ + a] * x[k]
        return
    for a in range(6):
        s = 0.0
        for j in range(n):
            s += MF[mi + S_ + 6 * j + a] * x[k + j]
        out[u + a] = s


@inline
def _St_times(MF, mi, n, f, o, out, k):
    """``out[k:k+n] = S_iᵀ f`` for the 6-vector ``f[o:o+6]``."""
    for j in range(n):
        s = 0.0
        for b in range(6):
            s += MF[mi + S_ + 6 * j + b] * f[o + b]
        out[k + j] = s


@inline
def _velocity(MI, MF, W, i, dq):
    """(2) ``v_i = ⁱX_λ v_λ + S_i q̇_i`` and ``c_i = v_i × S_i q̇_i``; ``S_i q̇_i`` left in TMP2."""
    p, n, wi, mi = MI[i, PARENT], MI[i, DOFS], i * W_SIZE, i * MF_SIZE
    _S_times(MF, mi, n, dq, MI[i, VIDX], W, wi + TMP2)
    if p >= 0:
        mx(W, wi + X_, W, wi + X_ + R_, W, p * W_SIZE + V_, W, wi + V_)
        for a in range(6):
            W[wi + V_ + a] += W[wi + TMP2 + a]
    else:
        for a in range(6):
            W[wi + V_ + a] = W[wi + TMP2 + a]
    set6(W, wi + C_, mcross(W, wi + V_, W, wi + TMP2))


@inline
def _parent_motion(MI, W, i, col, a0):
    """``W[i, col] = ⁱX_λ m_λ`` for the motion at ``col`` of the parent's block (``ⁱX_λ a0`` for a
    body on the fixed base)."""
    p, wi = MI[i, PARENT], i * W_SIZE
    if p >= 0:
        mx(W, wi + X_, W, wi + X_ + R_, W, p * W_SIZE + col, W, wi + col)
    else:
        mx(W, wi + X_, W, wi + X_ + R_, a0, 0, W, wi + col)


@kernel
def rnea_kernel(MI, MF, W, q, dq, ddq, fx, a0, tau):
    """``τ = InvD(q, q̇, q̈, f^x)`` (Nori eq. 6) into ``tau`` (nv,); ``fx``: NB × 6, body coordinates."""
    transforms(MI, MF, W, q)
    rnea_passes(MI, MF, W, dq, ddq, fx, a0, tau)


@kernel
def rnea_passes(MI, MF, W, dq, ddq, fx, a0, tau):
    """The two passes of the RNEA on the transforms already in ``W``."""
    NB = MI.shape[0]
    for i in range(NB):                                             # forward pass, i = 1 … N_B
        n, k, wi, mi = MI[i, DOFS], MI[i, VIDX], i * W_SIZE, i * MF_SIZE
        _velocity(MI, MF, W, i, dq)                                 # (2), c_i = v_i × S_i q̇_i
        _parent_motion(MI, W, i, A_, a0)
        _S_times(MF, mi, n, ddq, k, W, wi + TMP)
        for b in range(6):
            W[wi + A_ + b] += W[wi + TMP + b] + W[wi + C_ + b]      # (3a)
        set6(W, wi + TMP, mv6(MF, mi + INERTIA, W, wi + V_))        # I_i v_i
        set6(W, wi + F_, mv6(MF, mi + INERTIA, W, wi + A_))
        add6(W, wi + F_, fcross(W, wi + V_, W, wi + TMP))           # (3f): I_i a_i + v_i ×* I_i v_i
        for b in range(6):
            W[wi + F_ + b] -= fx[i, b]                              #        − f_i^x
    for i in range(NB - 1, -1, -1):                                 # backward pass, i = N_B … 1
        p, wi = MI[i, PARENT], i * W_SIZE
        _St_times(MF, i * MF_SIZE, MI[i, DOFS], W, wi + F_, tau, MI[i, VIDX])   # (3τ) τ_i = S_iᵀ f_i
        if p >= 0:
            fxT_add(W, wi + X_, W, wi + X_ + R_, W, wi + F_, W, p * W_SIZE + F_, 1.0)  # f_λ += ᵖX*_i f_i


@kernel
def aba_kernel(MI, MF, W, q, dq, tau, fx, a0, ddq):
    """``q̈ = FwdD(q, q̇, τ, f^x)`` (Nori eqs. 12–13) into ``ddq`` (nv,). Returns the first body whose
    ``D_i`` is not positive definite, or −1."""
    NB = MI.shape[0]
    transforms(MI, MF, W, q)
    for i in range(NB):                                             # first forward pass
        wi, mi = i * W_SIZE, i * MF_SIZE
        _velocity(MI, MF, W, i, dq)                                 # (2), c_i
        for b in range(36):
            W[wi + IA_ + b] = MF[mi + INERTIA + b]                  # I_iᴬ = I_i
        set6(W, wi + TMP, mv6(MF, mi + INERTIA, W, wi + V_))
        for b in range(6):
            W[wi + PA_ + b] = -fx[i, b]
        add6(W, wi + PA_, fcross(W, wi + V_, W, wi + TMP))          # p_iᴬ = v_i ×* I_i v_i − f_i^x
    for i in range(NB - 1, -1, -1):                                 # backward pass, i = N_B … 1
        if MI[i, DOFS] and not _articulate(MI, MF, i * MF_SIZE + S_, W, i, tau):
            return i
        p, wi = MI[i, PARENT], i * W_SIZE
        if p >= 0:
            wp = p * W_SIZE
            add_congruence(W, wi + X_, W, wi + X_ + R_, W, wi + IA_, W, wp + IA_, W, wi + TMP)  # (12Iᴬ)
            fxT_add(W, wi + X_, W, wi + X_ + R_, W, wi + PA_, W, wp + PA_, 1.0)  # (12p)
    for i in range(NB):                                             # second forward pass
        n, k, wi, mi = MI[i, DOFS], MI[i, VIDX], i * W_SIZE, i * MF_SIZE
        _parent_motion(MI, W, i, A_, a0)
        for b in range(6):
            W[wi + A_ + b] += W[wi + C_ + b]                        # ⁱX_λ a_λ + c_i
        if n:
            for j in range(n):                                      # u_i − U_iᵀ a_i
                s = W[wi + UU + j]
                for b in range(6):
                    s -= W[wi + U_ + 6 * j + b] * W[wi + A_ + b]
                W[wi + TMP + j] = s
            for j in range(n):                                      # (13q̈)
                s = 0.0
                for l in range(n):
                    s += W[wi + DINV + n * j + l] * W[wi + TMP + l]
                ddq[k + j] = s
            for b in range(6):                                      # (3a) a_i += S_i q̈_i
                for j in range(n):
                    W[wi + A_ + b] += MF[mi + S_ + 6 * j + b] * ddq[k + j]
    return -1


@inline
def _articulate(MI, S, so, W, i, tau):
    """Body i of the ABA's backward pass: ``U_i``, ``D_i⁻¹``, ``u_i``, then ``I_iᵃ`` (12Iᵃ) and the
    braces of (12p) in place of ``I_iᴬ``, ``p_iᴬ``, with ``S_i = S[so:so+36]`` (column-major; in the
    coordinates of ``I_iᴬ``). False when ``D_i`` is not positive definite."""
    n, k, wi = MI[i, DOFS], MI[i, VIDX], i * W_SIZE
    if n == 1:
        return _articulate_1dof(S, so, W, wi, tau[k])
    D, UD = wi + TMP, wi + TMP2                                     # offsets of D_i and U_i D_i⁻¹
    for j in range(n):
        set6(W, wi + U_ + 6 * j, mv6(W, wi + IA_, S, so + 6 * j))  # U_i = I_iᴬ S_i
    for j in range(n):
        s = tau[k + j]
        for b in range(6):
            s -= S[so + 6 * j + b] * W[wi + PA_ + b]
        W[wi + UU + j] = s                                          # u_i = τ_i − S_iᵀ p_iᴬ
        for l in range(n):
            s = 0.0
            for b in range(6):
                s += S[so + 6 * j + b] * W[wi + U_ + 6 * l + b]
            W[D + n * j + l] = s                                    # D_i = S_iᵀ U_i
    if not spd_inverse(W, D, n, W, wi + DINV):
        return False
    for b in range(6):                                              # U_i D_i⁻¹
        for j in range(n):
            s = 0.0
            for l in range(n):
                s += W[wi + U_ + 6 * l + b] * W[wi + DINV + n * l + j]
            W[UD + 6 * j + b] = s
    for a in range(6):
        for b in range(6):
            s = 0.0
            for j in range(n):
                s += W[UD + 6 * j + a] * W[wi + U_ + 6 * j + b]
            W[wi + IA_ + 6 * a + b] -= s                            # (12Iᵃ) I_iᴬ − U_i D_i⁻¹ U_iᵀ
    for a in range(6):
        s = 0.0
        for b in range(6):
            s += W[wi + IA_ + 6 * a + b] * W[wi + C_ + b]
        for j in range(n):
            s += W[UD + 6 * j + a] * W[wi + UU + j]
        W[wi + PA_ + a] += s                                        # (12p) p_iᴬ + I_iᵃ c_i + U_i D_i⁻¹ u_i
    return True


@inline
def _articulate_1dof(S, so, W, wi, tau_i):
    """:func:`_articulate` for a 1-DoF joint: ``U_i`` a 6-vector, ``D_i`` a scalar."""
    set6(W, wi + U_, mv6(W, wi + IA_, S, so))                       # U_i = I_iᴬ s_i
    d, u = 0.0, tau_i
    for b in range(6):
        d += S[so + b] * W[wi + U_ + b]                             # D_i = s_iᵀ U_i
        u -= S[so + b] * W[wi + PA_ + b]                            # u_i = τ_i − s_iᵀ p_iᴬ
    if not d > 0.0:
        return False
    dinv = 1.0 / d
    W[wi + DINV] = dinv
    W[wi + UU] = u
    U0, U1, U2, U3, U4, U5 = W[wi + U_], W[wi + U_ + 1], W[wi + U_ + 2], W[wi + U_ + 3], W[wi + U_ + 4], W[wi + U_ + 5]
    c0, c1, c2, c3, c4, c5 = W[wi + C_], W[wi + C_ + 1], W[wi + C_ + 2], W[wi + C_ + 3], W[wi + C_ + 4], W[wi + C_ + 5]
    for a in range(6):
        g = W[wi + U_ + a] * dinv
        r = wi + IA_ + 6 * a
        W[r] -= g * U0                                              # (12Iᵃ) I_iᴬ − U_i D_i⁻¹ U_iᵀ
        W[r + 1] -= g * U1
        W[r + 2] -= g * U2
        W[r + 3] -= g * U3
        W[r + 4] -= g * U4
        W[r + 5] -= g * U5
        W[wi + PA_ + a] += (W[r] * c0 + W[r + 1] * c1 + W[r + 2] * c2 + W[r + 3] * c3 + W[r + 4] * c4
                            + W[r + 5] * c5 + g * u)                # (12p) p_iᴬ + I_iᵃ c_i + U_i D_i⁻¹ u_i
    return True


@inline
def world_quantities(MI, MF, W, i):
    """``ⁱX_0 = ⁱX_λ ᵖX_0`` (12 floats at ``O_``), ``S_i`` (at ``SW_``) and ``I_i`` (at ``IA_``) in
    world coordinates: ``⁰X_i S_i`` and ``ⁱX_0ᵀ I_i ⁱX_0``. Between world coordinates every spatial
    transform is the identity, as in pinocchio's ``crba`` and ``computeMinverse``."""
    p, n, wi, mi = MI[i, PARENT], MI[i, DOFS], i * W_SIZE, i * MF_SIZE
    if p >= 0:
        po = p * W_SIZE + O_
        compose(W, wi + X_, W, wi + X_ + R_, W, po, W, po + R_, W, wi + O_, W, wi + O_ + R_)
    else:
        for b in range(12):
            W[wi + O_ + b] = W[wi + X_ + b]
    for j in range(n):
        mx_inv(W, wi + O_, W, wi + O_ + R_, MF, mi + S_ + 6 * j, W, wi + SW_ + 6 * j)
    if MI[i, RIGID]:
        _rigid_inertia_world(MF, mi, W, wi + O_, wi + IA_, wi + TMP)
        return
    for b in range(36):
        W[wi + IA_ + b] = 0.0
    add_congruence(W, wi + O_, W, wi + O_ + R_, MF, mi + INERTIA, W, wi + IA_, W, wi + TMP)


@inline
def _rigid_inertia_world(MF, mi, W, t, u, s):
    """``W[u:u+36] = Xᵀ I_i X`` for a rigid-body inertia (eq. 2.63) and ``X = ⁱX_0 = W[t:t+12]``:
    the same body with ``c_w = r + Eᵀ c`` and ``Ī_w = Eᵀ Ī_c E``, i.e.
    ``[[Ī_w + m c_w× c_w×ᵀ, m c_w×], [m c_w×ᵀ, m 1]]``. ``W[s:s+18]``: work."""
    m, c = MF[mi + MASS], mi + COM
    w0 = W[t + 9] + W[t] * MF[c] + W[t + 3] * MF[c + 1] + W[t + 6] * MF[c + 2]
    w1 = W[t + 10] + W[t + 1] * MF[c] + W[t + 4] * MF[c + 1] + W[t + 7] * MF[c + 2]
    w2 = W[t + 11] + W[t + 2] * MF[c] + W[t + 5] * MF[c + 1] + W[t + 8] * MF[c + 2]
    rotate_block(W, t, MF, mi + ICOM, W, s, s + 9)                 # Ī_w
    n2 = w0 * w0 + w1 * w1 + w2 * w2                                # c× c×ᵀ = |c|² 1 − c cᵀ
    for a in range(3):
        wa = w0 if a == 0 else (w1 if a == 1 else w2)
        for b in range(3):
            wb = w0 if b == 0 else (w1 if b == 1 else w2)
            W[u + 6 * a + b] = W[s + 3 * a + b] + m * ((n2 if a == b else 0.0) - wa * wb)
            W[u + 6 * (3 + a) + 3 + b] = m if a == b else 0.0
    h0, h1, h2 = m * w0, m * w1, m * w2                             # m c_w× and its transpose
    W[u + 3], W[u + 4], W[u + 5] = 0.0, -h2, h1
    W[u + 9], W[u + 10], W[u + 11] = h2, 0.0, -h0
    W[u + 15], W[u + 16], W[u + 17] = -h1, h0, 0.0
    W[u + 18], W[u + 19], W[u + 20] = 0.0, h2, -h1
    W[u + 24], W[u + 25], W[u + 26] = -h2, 0.0, h0
    W[u + 30], W[u + 31], W[u + 32] = h1, -h0, 0.0


@kernel
def crba_kernel(MI, MF, W, q, H):
    """``H(q)`` (Featherstone eq. 5) into ``H`` (nv × nv): only the blocks ``H_ji``, ``j ∈ anc(i)``,
    are written (both triangles); the branch-induced zeros of ``H`` are never touched."""
    transforms(MI, MF, W, q)
    crba_passes(MI, MF, W, H)


@kernel
def crba_passes(MI, MF, W, H):
    """The CRBA on the transforms already in ``W``, in world coordinates: ``I_iᶜ`` accumulates
    without transforms (``I_λᶜ += I_iᶜ``) and ``H_ji = S_jᵀ F`` with ``F = I_iᶜ S_i`` for every
    ancestor j, ``F`` unchanged along the walk (``ᵖX*_j`` is the identity)."""
    NB = MI.shape[0]
    for i in range(NB):
        world_quantities(MI, MF, W, i)                              # I_iᶜ = I_i (world coordinates)
    for i in range(NB - 1, -1, -1):                                 # i = n … 1
        p, n, k, wi = MI[i, PARENT], MI[i, DOFS], MI[i, VIDX], i * W_SIZE
        if p >= 0:                                                  # I_λᶜ += I_iᶜ
            for b in range(36):
                W[p * W_SIZE + IA_ + b] += W[wi + IA_ + b]
        F = wi + U_                                                 # F (6 × n, column-major)
        for j in range(n):
            set6(W, F + 6 * j, mv6(W, wi + IA_, W, wi + SW_ + 6 * j))  # F = I_iᶜ S_i
        j = i
        while n and j >= 0:
            if MI[j, DOFS]:                                         # H_ji = S_jᵀ F, H_ij = H_jiᵀ
                _H_block(W, j * W_SIZE + SW_, MI[j, DOFS], MI[j, VIDX], W, F, n, k, H)
            j = MI[j, PARENT]


@inline
def _H_block(S, so, nj, kj, W, F, n, k, H):
    """``H[kj:kj+nj, k:k+n] = S_jᵀ F`` and its transpose (``S_j = S[so:]``, ``F = W[F:F+6n]``,
    both column-major)."""
    for a in range(nj):
        for b in range(n):
            s = 0.0
            for c in range(6):
                s += S[so + 6 * a + c] * W[F + 6 * b + c]
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
