"""Compiled M⁻¹ without factorising H (Carpentier 2018, Algorithm 1), allocation-free.

The passes of the readable :mod:`.minverse` (same readings of lines 14/19 and of the second
forward pass), on the arrays of :mod:`.tree_jit`. ``F`` holds the force set of every body (6 × nv,
column-major: column ``col`` of body i at ``6 (i nv + col)``), non-zero only in the columns
``[SUB_LO, SUB_HI)`` of its subtree (contiguous: the numbering is depth-first); ``P`` likewise the
motion sets, over the columns ``[COL0, nv)``.
"""
from __future__ import annotations

from .spatial_jit import X_motion, add_congruence, add_XT_force, kernel
from .tree_jit import (C_, COL0, DINV, DOFS, IA_, INERTIA, MF_SIZE, PA_, PARENT, S_, SUB_HI, SUB_LO, TMP, U_, VIDX,
                       W_SIZE, X_, _articulate, transforms)


@kernel
def minverse_kernel(MI, MF, W, q, F, P, zero, Minv):
    """``Minv = H(q)⁻¹`` (nv × nv, both triangles). ``zero``: nv zeros (the bias-free ``τ``);
    ``F``, ``P``: 6 · NB · nv floats each. Returns the first body whose ``D_i`` is not positive
    definite, or −1."""
    NB, nv = MI.shape[0], Minv.shape[0]
    transforms(MI, MF, W, q)                                        # first forward pass (lines 2–6)
    for i in range(NB):
        wi, mi = i * W_SIZE, i * MF_SIZE
        for b in range(36):
            W[wi + IA_ + b] = MF[mi + INERTIA + b]                  # I_iᴬ = I_i
        for b in range(6):
            W[wi + C_ + b] = 0.0                                    # c_i = 0, p_iᴬ = 0: no bias
            W[wi + PA_ + b] = 0.0
        for c in range(6 * (i * nv + MI[i, SUB_LO]), 6 * (i * nv + MI[i, SUB_HI])):
            F[c] = 0.0
        for j in range(MI[i, DOFS]):
            for col in range(MI[i, COL0], nv):
                Minv[MI[i, VIDX] + j, col] = 0.0
    for i in range(NB - 1, -1, -1):                                 # backward pass (lines 8–26)
        n, k, p, wi, mi = MI[i, DOFS], MI[i, VIDX], MI[i, PARENT], i * W_SIZE, i * MF_SIZE
        lo, hi = MI[i, SUB_LO], MI[i, SUB_HI]
        if n:
            if not _articulate(MI, MF, W, i, zero):                 # (9), (10), (23)
                return i
            for col in range(lo, hi):
                Fc = 6 * (i * nv + col)                             # F_i[:, col]
                for l in range(n):
                    t = 0.0
                    for b in range(6):
                        t += MF[mi + S_ + 6 * l + b] * F[Fc + b]
                    W[wi + TMP + l] = t                             # S_iᵀ F_i
                for j in range(n):
                    s = 0.0
                    for l in range(n):
                        s -= W[wi + DINV + n * j + l] * W[wi + TMP + l]
                    Minv[k + j, col] = s                            # (12) M⁻¹[i, ν(i)] = −D_i⁻¹ S_iᵀ F_i
                if k <= col < k + n:
                    for j in range(n):
                        Minv[k + j, col] = W[wi + DINV + n * j + col - k]   # (21) M⁻¹_ii = D_i⁻¹
                for b in range(6):                                  # (14), (19) F_i += U_i M⁻¹[i, ν(i)]
                    s = 0.0
                    for j in range(n):
                        s += W[wi + U_ + 6 * j + b] * Minv[k + j, col]
                    F[Fc + b] += s
        if p >= 0:
            for col in range(lo, hi):                               # (15) F_λ += ᵖX*_i F_i
                add_XT_force(W, wi + X_, F, 6 * (i * nv + col), F, 6 * (p * nv + col))
            add_congruence(W, wi + X_, W, wi + IA_, W, p * W_SIZE + IA_, W, wi + TMP)   # (24)
    for i in range(NB):                                             # second forward pass (lines 28–36)
        n, k, p, c0, wi, mi = MI[i, DOFS], MI[i, VIDX], MI[i, PARENT], MI[i, COL0], i * W_SIZE, i * MF_SIZE
        for col in range(c0, nv):
            Pc = 6 * (i * nv + col)                                 # P_i[:, col] = ⁱX_λ P_λ[:, col] first
            if p >= 0:
                X_motion(W, wi + X_, P, 6 * (p * nv + col), P, Pc)
            else:
                for b in range(6):
                    P[Pc + b] = 0.0
            for l in range(n):                                      # U_iᵀ ⁱX_λ P_λ
                t = 0.0
                for b in range(6):
                    t += W[wi + U_ + 6 * l + b] * P[Pc + b]
                W[wi + TMP + l] = t
            for j in range(n):                                      # (30) M⁻¹[i, j≥i] −= D_i⁻¹ U_iᵀ ⁱX_λ P_λ
                s = 0.0
                for l in range(n):
                    s += W[wi + DINV + n * j + l] * W[wi + TMP + l]
                Minv[k + j, col] -= s
            for b in range(6):                                      # (32), (34) P_i = S_i M⁻¹[i] + ⁱX_λ P_λ
                for j in range(n):
                    P[Pc + b] += MF[mi + S_ + 6 * j + b] * Minv[k + j, col]
    for a in range(nv):                                             # mirror the upper triangle
        for b in range(a):
            Minv[a, b] = Minv[b, a]
    return -1
