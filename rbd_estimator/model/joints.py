"""Joint models of the kinematic tree (Featherstone ch. 4): motion subspaces and joint transforms.

Everything here is in body coordinates; ``Xup[i] = ⁱX_λ(i) = X_J(q_i) X_T(i)`` (motion transform).
"""
from __future__ import annotations

import numpy as np

from ..spatial import axis_angle_to_R, plux, quat_to_R
from .robot_model import FREE, PRISMATIC, REVOLUTE, RobotModel

# Free-flyer motion subspace: Featherstone motion [ω; v] from pinocchio's velocity [v_lin; ω].
S_FREE = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])


def motion_subspace(model: RobotModel, i: int) -> np.ndarray:
    """``S_i`` (6 × n_i) in body-i coordinates; constant for every supported joint type."""
    t = model.joint_types[i]
    S = np.zeros((6, model.joint_dofs[i]))
    if t == REVOLUTE:
        S[:3, 0] = model.axes[i]
    elif t == PRISMATIC:
        S[3:, 0] = model.axes[i]
    elif t == FREE:
        S[:] = S_FREE
    return S


def joint_transform(model: RobotModel, i: int, q: np.ndarray) -> np.ndarray:
    """``ⁱX_λ(i) = X_J(q_i) X_T(i)``, the transform in Nori eqs. (2)–(3a)."""
    t, k = model.joint_types[i], model.q_idx[i]
    XT = plux(model.E_tree[i], model.r_tree[i])
    if t == REVOLUTE:
        XJ = plux(axis_angle_to_R(model.axes[i], q[k]).T, np.zeros(3))
    elif t == PRISMATIC:
        XJ = plux(np.eye(3), model.axes[i] * q[k])
    elif t == FREE:
        XJ = plux(quat_to_R(q[k + 3:k + 7]).T, q[k:k + 3])
    else:
        return XT
    return XJ @ XT


def joint_values(model: RobotModel, i: int, x: np.ndarray) -> np.ndarray:
    """The n_i entries of a velocity-sized vector ``x`` belonging to joint i."""
    k = model.v_idx[i]
    return x[k:k + model.joint_dofs[i]]
