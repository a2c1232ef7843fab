"""Recursive Newton–Euler algorithm (Nori §IV-A; Featherstone Table 5.1)."""
from __future__ import annotations

import numpy as np

from ..model.robot_model import RobotModel
from ..spatial import crf, crm
from .kinematics import external_forces, gravity_acceleration, joint_transform, joint_values, motion_subspace


def rnea(model: RobotModel, q, dq, ddq, f_ext=None) -> np.ndarray:
    """Inverse dynamics ``τ = InvD(model, q, q̇, q̈, f^x)`` (Nori eq. 6).

    ``q``, ``dq``, ``ddq`` in pinocchio's layout (see :class:`RobotModel`); ``f_ext`` maps a link or
    frame name to the wrench ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) acting on it, expressed in that
    frame. Returns ``τ`` (nv,): N·m or N per joint; for a floating base the first six entries are
    the base wrench ``[f; n]`` in base coordinates (zero when the motion is consistent).

    :func:`rnea_full` also returns the body quantities ``(τ, v, a, f)`` in body coordinates
    (Featherstone order; ``a`` includes ``-a_g``; ``f_i`` is the wrench from the parent on body i).
    """
    return rnea_full(model, q, dq, ddq, f_ext)[0]


def rnea_full(model: RobotModel, q, dq, ddq, f_ext=None):
    """:func:`rnea` returning ``(τ, v, a, f)``: the body velocities, accelerations (with ``-a_g``)
    and joint wrenches (parent → body i), body coordinates, Featherstone order."""
    q, dq, ddq = (np.asarray(x, dtype=float) for x in (q, dq, ddq))
    fx = external_forces(model, f_ext)
    NB = model.NB
    v, a, f = np.zeros((NB, 6)), np.zeros((NB, 6)), np.zeros((NB, 6))
    Xup = [joint_transform(model, i, q) for i in range(NB)]
    a0 = gravity_acceleration(model)
    for i in range(NB):                                             # forward pass, i = 1 … N_B
        S = motion_subspace(model, i)
        vJ = S @ joint_values(model, i, dq)
        p = model.parents[i]
        v[i] = Xup[i] @ (v[p] if p >= 0 else np.zeros(6)) + vJ     # (2)
        c = crm(v[i]) @ vJ                                          # c_i = v_i × S_i q̇_i
        a[i] = Xup[i] @ (a[p] if p >= 0 else a0) + S @ joint_values(model, i, ddq) + c   # (3a)
        I = model.inertias[i]
        f[i] = I @ a[i] + crf(v[i]) @ I @ v[i] - fx[i]             # (3f), ν_i = v_i ×* I_i v_i
    tau = np.zeros(model.nv)
    for i in range(NB - 1, -1, -1):                                 # backward pass, i = N_B … 1
        k, n = model.v_idx[i], model.joint_dofs[i]
        if n:
            tau[k:k + n] = motion_subspace(model, i).T @ f[i]       # (3τ)
        p = model.parents[i]
        if p >= 0:
            f[p] += Xup[i].T @ f[i]                                 # Σ_j ⁱX*_j f_j in (3f)
    return tau, v, a, f
