"""Articulated-body algorithm (Nori §V-A, eqs. 12–13; Featherstone Table 7.1).

Multi-DoF joints use ``D_i = S_iᵀ I_iᴬ S_i`` as an ``n_i × n_i`` matrix; a 0-DoF body (a kept
fixed joint, e.g. a force-torque sensor) has no ``D_i`` and passes ``I_iᴬ`` and ``p_iᴬ`` to its
parent unchanged (with ``S_i`` empty, eq. 12Iᵃ gives ``I_iᵃ = I_iᴬ`` and ``c_i = 0``).
"""
from __future__ import annotations

import numpy as np

from ..model.robot_model import RobotModel
from ..spatial import crf, crm
from .kinematics import external_forces, gravity_acceleration, joint_transform, joint_values, motion_subspace


def aba(model: RobotModel, q, dq, tau, f_ext=None) -> np.ndarray:
    """Forward dynamics ``q̈ = FwdD(model, q, q̇, τ, f^x)`` (Nori eq. 12) in O(N_B).

    ``q``, ``dq``, ``tau`` in pinocchio's layout (see :class:`RobotModel`); for a floating base
    ``tau[:6]`` is the base wrench ``[f; n]`` in base coordinates (normally zero). ``f_ext`` maps a
    link or frame name to the wrench ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) acting on it, expressed
    in that frame. Returns ``q̈`` (nv,): rad/s² or m/s²; for a floating base the first six entries
    are ``[v̇_lin; ω̇]`` in base coordinates, as pinocchio's ``aba``.
    """
    q, dq, tau = (np.asarray(x, dtype=float) for x in (q, dq, tau))
    fx = external_forces(model, f_ext)
    NB = model.NB
    Xup = [joint_transform(model, i, q) for i in range(NB)]
    S = [motion_subspace(model, i) for i in range(NB)]
    v, c = np.zeros((NB, 6)), np.zeros((NB, 6))
    IA, pA = model.inertias.astype(float), np.zeros((NB, 6))
    for i in range(NB):                                             # first forward pass
        vJ = S[i] @ joint_values(model, i, dq)
        p = model.parents[i]
        v[i] = Xup[i] @ (v[p] if p >= 0 else np.zeros(6)) + vJ     # (2)
        c[i] = crm(v[i]) @ vJ                                       # c_i = v_i × S_i q̇_i
        pA[i] = crf(v[i]) @ model.inertias[i] @ v[i] - fx[i]        # ν_i − f_i^x in (12p)

    U, Dinv, u = [None] * NB, [None] * NB, [None] * NB
    for i in range(NB - 1, -1, -1):                                 # backward pass, i = N_B … 1
        Ia, pa = IA[i], pA[i]                                       # 0-DoF: pass through
        if model.joint_dofs[i]:
            U[i] = IA[i] @ S[i]                                     # I_iᴬ S_i
            Dinv[i] = np.linalg.inv(S[i].T @ U[i])                  # (S_iᵀ I_iᴬ S_i)⁻¹
            u[i] = joint_values(model, i, tau) - S[i].T @ pA[i]     # τ_i − S_iᵀ p_iᴬ
            Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T                    # (12Iᵃ)
            pa = pA[i] + Ia @ c[i] + U[i] @ Dinv[i] @ u[i]          # braces of (12p)
        p = model.parents[i]
        if p >= 0:
            IA[p] += Xup[i].T @ Ia @ Xup[i]                         # (12Iᴬ), ᵖX*_i = (ⁱX_p)ᵀ
            pA[p] += Xup[i].T @ pa                                  # (12p)

    ddq = np.zeros(model.nv)
    a = np.zeros((NB, 6))
    a0 = gravity_acceleration(model)
    for i in range(NB):                                             # second forward pass
        p = model.parents[i]
        a[i] = Xup[i] @ (a[p] if p >= 0 else a0) + c[i]             # ⁱX_λ a_λ + c_i
        if model.joint_dofs[i]:
            qdd = Dinv[i] @ (u[i] - U[i].T @ a[i])                  # (13q̈)
            k, n = model.v_idx[i], model.joint_dofs[i]
            ddq[k:k + n] = qdd
            a[i] += S[i] @ qdd                                      # (3a)
    return ddq
