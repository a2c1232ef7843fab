"""Compiled M⁻¹ without factorising H (Carpentier 2018, Algorithm 1), allocation-free.

The passes of the readable :mod:`.minverse` (same readings of lines 14/19 and of the second
forward pass), on the arrays of :mod:`.tree_jit`, with every spatial quantity in world (root)
coordinates, as pinocchio's ``computeMinverse`` does: the force set ``F_i`` then moves to the
parent unchanged (15: ``ᵖX*_i`` is the identity between world coordinates), so one 6 × nv array
holds all of them (body i's on the columns ``[SUB_LO, SUB_HI)`` of its subtree, contiguous since
the numbering is depth-first), and the motion set is ``P_i = P_λ + S_i M⁻¹[i]`` (34) without a
transform. ``F`` and ``P`` are row-major (entry ``(b, col)`` at ``b nv + col``; ``P`` one 6 × nv
block per body, a 0-DoF body sharing its parent's), so that the loops over columns vectorise.
"""
from __future__ import annotations

from ..jit import uidx
from ..jit import fast_njit as kernel
from ..kernels.spatial import primitive as inline
from .tree_jit import (COL0, C_, DINV, DOFS, IA_, LEAF, PA_, PARENT, PBLK, SUB_HI, SUB_LO, SW_, U_, VIDX, W_SIZE,
                       _articulate, transforms, world_quantities)

#: Column indices are unsigned in the loops over columns (:data:`rbd_estimator.jit.uidx`): numba then
#: skips its negative-index wrap-around, which otherwise keeps those loops from vectorising (about 6× slower).
U64 = uidx


@kernel
def minverse_kernel(MI, MF, W, q, F, P, zero, Minv):
    """``Minv = H(q)⁻¹`` (nv × nv, both triangles). ``zero``: nv zeros (the bias-free ``τ``);
    ``F``: 6 · nv floats, ``P``: 6 · NB · nv floats. Returns the first body whose ``D_i`` is not
    positive definite, or −1."""
    NB, nv = MI.shape[0], Minv.shape[0]
    transforms(MI, MF, W, q)                                        # first forward pass (lines 2–6)
    for i in range(NB):
        world_quantities(MI, MF, W, i)
        for b in range(6):
            W[i * W_SIZE + C_ + b] = 0.0                            # no bias: c_i = p_iᴬ = 0
            W[i * W_SIZE + PA_ + b] = 0.0
    for c in range(6 * nv):
        F[c] = 0.0
    for i in range(NB - 1, -1, -1):                                 # backward pass (lines 8–26)
        p, wi = MI[i, PARENT], i * W_SIZE
        if MI[i, DOFS]:
            if not _articulate(MI, W, wi + SW_, W, i, zero):        # (9), (10), (23)
                return i
            _minv_rows(MI, W, i, F, Minv)                           # (12), (21), (14), (19)
        if p >= 0:                                                  # (15) is the identity; (24)
            for b in range(36):
                W[p * W_SIZE + IA_ + b] += W[wi + IA_ + b]
    for i in range(NB):                                             # second forward pass (lines 28–36)
        _minv_forward(MI, W, i, P, Minv)
    for a in range(U64(nv)):                                        # mirror the upper triangle
        for b in range(a):
            Minv[a, b] = Minv[b, a]
    return -1


@inline
def _minv_rows(MI, W, i, F, Minv):
    """Body i's rows on its subtree's columns ``c``: (12) ``M⁻¹[i, c] = −D_i⁻¹ S_iᵀ F[:, c]``,
    (21) ``M⁻¹_ii = D_i⁻¹``, then (14), (19) ``F[:, c] += U_i M⁻¹[i, c]``."""
    n, k, wi, nv = MI[i, DOFS], MI[i, VIDX], i * W_SIZE, Minv.shape[0]
    lo, hi, S = U64(MI[i, SUB_LO]), U64(MI[i, SUB_HI]), wi + SW_
    r0, r1, r2, r3, r4, r5 = _rows(nv)
    for j in range(n):
        row = U64(k + j)
        for col in range(lo, U64(nv)):                              # the upper triangle of row k + j
            Minv[row, col] = 0.0
        for l in range(n):                                          # −D_i⁻¹ S_iᵀ, row j
            g = -W[wi + DINV + n * j + l]
            s0, s1, s2 = W[S + 6 * l], W[S + 6 * l + 1], W[S + 6 * l + 2]
            s3, s4, s5 = W[S + 6 * l + 3], W[S + 6 * l + 4], W[S + 6 * l + 5]
            for col in range(lo, hi):
                Minv[row, col] += g * (s0 * F[r0 + col] + s1 * F[r1 + col] + s2 * F[r2 + col]
                                       + s3 * F[r3 + col] + s4 * F[r4 + col] + s5 * F[r5 + col])
        for l in range(n):
            Minv[k + j, k + l] = W[wi + DINV + n * j + l]
    for j in range(n):
        row = U64(k + j)
        u0, u1, u2 = W[wi + U_ + 6 * j], W[wi + U_ + 6 * j + 1], W[wi + U_ + 6 * j + 2]
        u3, u4, u5 = W[wi + U_ + 6 * j + 3], W[wi + U_ + 6 * j + 4], W[wi + U_ + 6 * j + 5]
        for col in range(lo, hi):
            m = Minv[row, col]
            F[r0 + col] += u0 * m
            F[r1 + col] += u1 * m
            F[r2 + col] += u2 * m
            F[r3 + col] += u3 * m
            F[r4 + col] += u4 * m
            F[r5 + col] += u5 * m


@inline
def _rows(nv):
    """Offsets of the six rows of a row-major 6 × nv block, unsigned (see :data:`U64`)."""
    r = U64(nv)
    return U64(0), r, r + r, r + r + r, r + r + r + r, r + r + r + r + r


@inline
def _minv_forward(MI, W, i, P, Minv):
    """Body i of the second forward pass over the columns ``col ≥ COL0``: (30)
    ``M⁻¹[i, col] −= D_i⁻¹ U_iᵀ P_λ[:, col]``, then (32), (34) ``P_i = P_λ + S_i M⁻¹[i]`` (not for a
    leaf, whose motion set nobody reads)."""
    n, k, p, wi, nv = MI[i, DOFS], MI[i, VIDX], MI[i, PARENT], i * W_SIZE, Minv.shape[0]
    c0, cn, d = U64(MI[i, COL0]), U64(nv), U64(6 * i * nv)
    r0, r1, r2, r3, r4, r5 = _rows(nv)
    if n == 0:
        if p < 0:
            for c in range(d, d + U64(6 * nv)):
                P[c] = 0.0
        return                                                      # else P_i is P_λ (shared block)
    sp = U64(6 * MI[max(p, 0), PBLK] * nv)
    if p >= 0:
        for j in range(n):                                          # (30)
            row = U64(k + j)
            for l in range(n):
                g = W[wi + DINV + n * j + l]
                u0, u1, u2 = W[wi + U_ + 6 * l], W[wi + U_ + 6 * l + 1], W[wi + U_ + 6 * l + 2]
                u3, u4, u5 = W[wi + U_ + 6 * l + 3], W[wi + U_ + 6 * l + 4], W[wi + U_ + 6 * l + 5]
                for col in range(c0, cn):
                    Minv[row, col] -= g * (u0 * P[sp + r0 + col] + u1 * P[sp + r1 + col] + u2 * P[sp + r2 + col]
                                           + u3 * P[sp + r3 + col] + u4 * P[sp + r4 + col] + u5 * P[sp + r5 + col])
    if MI[i, LEAF]:
        return
    if n == 1 and p >= 0:                                           # (32), (34) for a 1-DoF joint
        row = U64(k)
        for b in range(6):
            rb, sb = U64(b) * U64(nv), W[wi + SW_ + b]
            for col in range(c0, cn):
                P[d + rb + col] = P[sp + rb + col] + sb * Minv[row, col]
        return
    for b in range(6):                                              # (32), (34)
        rb = U64(b) * U64(nv)
        if p >= 0:
            for col in range(c0, cn):
                P[d + rb + col] = P[sp + rb + col]
        else:
            for col in range(c0, cn):
                P[d + rb + col] = 0.0
        for j in range(n):
            sb, row = W[wi + SW_ + 6 * j + b], U64(k + j)
            for col in range(c0, cn):
                P[d + rb + col] += sb * Minv[row, col]
