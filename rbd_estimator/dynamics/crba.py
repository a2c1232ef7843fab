"""Composite-rigid-body algorithm (Featherstone 2005, §5 listing; Featherstone Table 6.2).

The listing of §5 is written for 1-DoF joints; here ``s_i`` becomes the 6 × n_i matrix ``S_i``,
``f`` the 6 × n_i matrix ``F``, and ``H_ij`` the n_i × n_j block of rows ``v_idx[i] …`` and columns
``v_idx[j] …``. A 0-DoF body (kept fixed joint) adds its inertia to the composite of its parent
but has no row: the upward walk carries ``F`` through it without writing a block.
"""
from __future__ import annotations

import numpy as np

from ..model.robot_model import RobotModel
from .kinematics import joint_transform, motion_subspace


def crba(model: RobotModel, q) -> np.ndarray:
    """Joint-space inertia matrix ``H(q)`` (Featherstone eq. 5), nv × nv, symmetric, kg·m² / kg.

    ``q`` in pinocchio's layout; rows and columns in ``v`` order (for a floating base the first six
    are ``[v_lin; ω]`` in base coordinates, as pinocchio's ``crba``). Only the nonzero blocks of
    eq. 5 are computed, in the upper triangle (``j ∈ anc(i)``), then mirrored so that ``H`` is
    exactly symmetric; branch-induced zeros (eq. 6) are exact zeros.
    """
    q = np.asarray(q, dtype=float)
    NB = model.NB
    Xup = [joint_transform(model, i, q) for i in range(NB)]
    Ic = model.inertias.astype(float)                               # I_i^c = I_i
    H = np.zeros((model.nv, model.nv))
    for i in range(NB - 1, -1, -1):                                 # i = n … 1
        p = model.parents[i]
        if p >= 0:
            Ic[p] += Xup[i].T @ Ic[i] @ Xup[i]                      # I_λ^c += ^λX_i^F I_i^c ⁱX_λ^M
        if model.joint_dofs[i] == 0:
            continue
        Si = motion_subspace(model, i)
        F = Ic[i] @ Si                                              # f = I_i^c s_i
        ri = _rows(model, i)
        H[ri, ri] = Si.T @ F                                        # H_ii = s_iᵀ f
        j = i
        while model.parents[j] >= 0:
            F = Xup[j].T @ F                                        # f = ^λ(j)X_j^F f
            j = model.parents[j]
            if model.joint_dofs[j]:
                H[_rows(model, j), ri] = motion_subspace(model, j).T @ F   # H_ji = s_jᵀ f
    return np.triu(H) + np.triu(H, 1).T                             # H_ij = H_jiᵀ


def _rows(model: RobotModel, i: int) -> slice:
    """The rows of H (entries of v) that belong to joint i."""
    return slice(model.v_idx[i], model.v_idx[i] + model.joint_dofs[i])
