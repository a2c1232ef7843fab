"""Compiled M⁻¹ without factorising H (Carpentier 2018, Algorithm 1), allocation-free.

The passes of the readable :mod:`.minverse` (same readings of lines 14/19 and of the second
forward pass), on the arrays of :mod:`.tree_jit`. ``F[i]`` (6 × nv) is the force set of body i,
non-zero only in the columns ``[SUB_LO, SUB_HI)`` of its subtree (contiguous: the numbering is
depth-first); ``P[i]`` (6 × nv) is its motion set over the columns ``[COL0, nv)``.
"""
from __future__ import annotations

from .spatial_jit import X_motion, add_congruence, add_XT_force, inline, kernel
from .tree_jit import (C_, COL0, DINV, DOFS, E_, IA_, INERTIA, PA_, PARENT, R_, S_, SUB_HI, SUB_LO, TMP, U_, VIDX,
                       _articulate, transforms)


@kernel
def minverse_kernel(MI, MF, W, q, F, P, zero, Minv):
    """``Minv = H(q)⁻¹`` (nv × nv, both triangles). ``zero``: nv zeros (the bias-free ``τ``).
    Returns the first body whose ``D_i`` is not positive definite, or −1."""
    NB, nv = MI.shape[0], Minv.shape[0]
    transforms(MI, MF, W, q)                                        # first forward pass (lines 2–6)
    for i in range(NB):
        W[i, IA_:IA_ + 36] = MF[i, INERTIA:INERTIA + 36]            # I_iᴬ = I_i
        W[i, C_:C_ + 6] = 0.0                                       # c_i = 0, p_iᴬ = 0: no bias
        W[i, PA_:PA_ + 6] = 0.0
        F[i, :, MI[i, SUB_LO]:MI[i, SUB_HI]] = 0.0
        Minv[MI[i, VIDX]:MI[i, VIDX] + MI[i, DOFS], MI[i, COL0]:] = 0.0
    for i in range(NB - 1, -1, -1):                                 # backward pass (lines 8–26)
        n, k, p = MI[i, DOFS], MI[i, VIDX], MI[i, PARENT]
        lo, hi = MI[i, SUB_LO], MI[i, SUB_HI]
        if n:
            if not _articulate(MI, MF, W, i, zero):                 # (9), (10), (23)
                return i
            for j in range(n):                                      # (12) M⁻¹[i, ν(i)] = −D_i⁻¹ S_iᵀ F_i
                for col in range(lo, hi):
                    s = 0.0
                    for l in range(n):
                        t = 0.0
                        for b in range(6):
                            t += MF[i, S_ + 6 * l + b] * F[i, b, col]
                        s -= W[i, DINV + n * j + l] * t
                    Minv[k + j, col] = s
            for j in range(n):
                for l in range(n):
                    Minv[k + j, k + l] = W[i, DINV + n * j + l]     # (21) M⁻¹_ii = D_i⁻¹
            for b in range(6):                                      # (14), (19) F_i += U_i M⁻¹[i, ν(i)]
                for col in range(lo, hi):
                    s = 0.0
                    for j in range(n):
                        s += W[i, U_ + 6 * j + b] * Minv[k + j, col]
                    F[i, b, col] += s
        if p >= 0:
            E, r = W[i, E_:E_ + 9], W[i, R_:R_ + 3]
            f6 = W[i, TMP:TMP + 6]
            for col in range(lo, hi):                               # (15) F_λ += ᵖX*_i F_i
                for b in range(6):
                    f6[b] = F[i, b, col]
                _add_column(E, r, f6, F, p, col, W[i, TMP + 6:TMP + 12])
            add_congruence(E, r, W[i, IA_:IA_ + 36], W[p, IA_:IA_ + 36], W[i, TMP:TMP + 45])   # (24)
    for i in range(NB):                                             # second forward pass (lines 28–36)
        n, k, p, c0 = MI[i, DOFS], MI[i, VIDX], MI[i, PARENT], MI[i, COL0]
        m6, XP = W[i, TMP:TMP + 6], W[i, TMP + 6:TMP + 12]
        for col in range(c0, nv):
            if p >= 0:                                              # ⁱX_λ P_λ
                for b in range(6):
                    m6[b] = P[p, b, col]
                X_motion(W[i, E_:E_ + 9], W[i, R_:R_ + 3], m6, XP)
            else:
                XP[:] = 0.0
            for j in range(n):                                      # (30) M⁻¹[i, j≥i] −= D_i⁻¹ U_iᵀ ⁱX_λ P_λ
                s = 0.0
                for l in range(n):
                    t = 0.0
                    for b in range(6):
                        t += W[i, U_ + 6 * l + b] * XP[b]
                    s += W[i, DINV + n * j + l] * t
                Minv[k + j, col] -= s
            for b in range(6):                                      # (32), (34) P_i = S_i M⁻¹[i] + ⁱX_λ P_λ
                s = XP[b]
                for j in range(n):
                    s += MF[i, S_ + 6 * j + b] * Minv[k + j, col]
                P[i, b, col] = s
    for a in range(nv):                                             # mirror the upper triangle
        for b in range(a):
            Minv[a, b] = Minv[b, a]
    return -1


@inline
def _add_column(E, r, f, F, p, col, out):
    """``F[p][:, col] += Xᵀ f``."""
    out[:] = 0.0
    add_XT_force(E, r, f, out)
    for b in range(6):
        F[p, b, col] += out[b]
