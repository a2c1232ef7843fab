"""Inverse of the joint-space inertia matrix without forming it (Carpentier 2018, Algorithm 1).

Three passes like the ABA with the bias terms removed: ``M⁻¹τ`` is the ABA's ``q̈`` at zero
velocity and zero gravity, and each quantity that the ABA computes for one ``τ`` is computed here
for all ``τ = e_j`` at once, as a matrix with one column per entry of ``v``:

* ``F_i`` (6 × nv, force set): the articulated bias force ``p_iᴬ`` of body i as a function of τ;
  only the columns of ``subtree(i)`` — the ``v`` indices of ν(i) — can be nonzero;
* ``P_i`` (6 × nv, motion set): the acceleration ``a_i`` of body i as a function of τ.

Two readings of the listing, both as in pinocchio's implementation: lines 14/19 accumulate
``F_i + U_i M⁻¹[i, subtree(i)]`` (the listing overwrites ``F_i`` on line 14, which would drop the
descendants' contribution), and the second forward pass runs over all columns ``j ≥ i`` (the upper
triangle; M⁻¹ is dense, not only on ``subtree(i)``), mirrored at the end. A 0-DoF body (kept fixed
joint) has no row: it passes ``Iᴬ``, ``F`` and ``P`` through. The 6-DoF free joint is a block row
with a 6 × 6 ``D_i``.
"""
from __future__ import annotations

import numpy as np

from ..model.robot_model import RobotModel
from .kinematics import joint_transform, motion_subspace


def minverse(model: RobotModel, q) -> np.ndarray:
    """``H(q)⁻¹`` (nv × nv, symmetric) by Carpentier's Algorithm 1, in ``v`` order.

    ``q`` in pinocchio's layout. Equals ``inv(crba(model, q))`` (units 1/(kg·m²), 1/kg) and
    pinocchio's ``computeMinverse`` once its lower triangle is filled from the upper one.
    Relies on the regular numbering of ``v`` that :class:`RobotModel` guarantees: the rows of a
    body come after those of its ancestors.
    """
    q = np.asarray(q, dtype=float)
    NB, nv = model.NB, model.nv
    Xup = [joint_transform(model, i, q) for i in range(NB)]          # first forward pass (lines 2–6)
    S = [motion_subspace(model, i) for i in range(NB)]
    IA = model.inertias.astype(float)                               # I_iᴬ = I_i
    sub = _subtree_columns(model)
    F = np.zeros((NB, 6, nv))
    U, Dinv = [None] * NB, [None] * NB
    Minv = np.zeros((nv, nv))

    for i in range(NB - 1, -1, -1):                                 # backward pass (lines 8–26)
        cols, Fi, Ia = sub[i], F[i][:, sub[i]], IA[i]               # 0-DoF: pass through
        if model.joint_dofs[i]:
            r = _rows(model, i)
            U[i] = IA[i] @ S[i]                                     # (9)  U_i = I_iᴬ S_i
            Dinv[i] = np.linalg.inv(S[i].T @ U[i])                  # (10) D_i = S_iᵀ U_i
            Minv[r, cols] = -Dinv[i] @ S[i].T @ Fi                  # (12)
            Minv[r, r] = Dinv[i]                                    # (21)
            Fi = Fi + U[i] @ Minv[r, cols]                          # (14), (19)
            Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T                    # (23)
        p = model.parents[i]
        if p >= 0:
            F[p][:, cols] += Xup[i].T @ Fi                          # (15) ^λX*_i = (ⁱX_λ)ᵀ
            IA[p] += Xup[i].T @ Ia @ Xup[i]                         # (24)

    P = np.zeros((NB, 6, nv))
    col0 = np.zeros(NB, dtype=np.int64)                             # first column of row block i
    for i in range(NB):                                             # second forward pass (lines 28–36)
        p = model.parents[i]
        col0[i] = model.v_idx[i] if model.joint_dofs[i] else (col0[p] if p >= 0 else 0)
        c = slice(col0[i], nv)
        XP = Xup[i] @ P[p][:, c] if p >= 0 else np.zeros((6, nv - col0[i]))   # ⁱX_λ P_λ
        if model.joint_dofs[i]:
            r = _rows(model, i)
            Minv[r, c] -= Dinv[i] @ U[i].T @ XP                     # (30)
            P[i][:, c] = S[i] @ Minv[r, c] + XP                     # (32), (34)
        else:
            P[i][:, c] = XP
    return np.triu(Minv) + np.triu(Minv, 1).T


def _rows(model: RobotModel, i: int) -> slice:
    """The rows of H (entries of v) that belong to joint i."""
    return slice(model.v_idx[i], model.v_idx[i] + model.joint_dofs[i])


def _subtree_columns(model: RobotModel) -> list[np.ndarray]:
    """``subtree(i)``: the ``v`` indices of ν(i) (body i and its descendants), sorted."""
    cols = [list(range(model.v_idx[i], model.v_idx[i] + model.joint_dofs[i]))
            for i in range(model.NB)]
    for i in range(model.NB - 1, -1, -1):
        if model.parents[i] >= 0:
            cols[model.parents[i]] += cols[i]
    return [np.array(sorted(c), dtype=np.int64) for c in cols]
