"""The kinematic quantities shared by the reference algorithms (Featherstone ch. 4, Nori §IV-A).

The joint models (``motion_subspace``, ``joint_transform``, ``joint_values``, ``S_FREE``) belong
to the model layer (:mod:`rbd_estimator.model.joints`) and are re-exported here for the
algorithms; everything is in body coordinates.
"""
from __future__ import annotations

import numpy as np

from ..model.joints import S_FREE, joint_transform, joint_values, motion_subspace  # noqa: F401 (re-exported)
from ..model.robot_model import RobotModel
from ..spatial import wrench_to_force


def gravity_acceleration(model: RobotModel) -> np.ndarray:
    """``a_0 = -a_g``: the fictitious base acceleration that accounts for gravity (Nori §IV-A)."""
    return np.concatenate([np.zeros(3), -model.gravity])


def external_forces(model: RobotModel, f_ext) -> np.ndarray:
    """Map ``{link or frame: [fx, fy, fz, tx, ty, tz] in that frame}`` to body-coordinate spatial
    forces ``f_i^x`` (NB × 6). Wrenches on frames of the fixed base are ignored (they do no work)."""
    fx = np.zeros((model.NB, 6))
    for name, w in (f_ext or {}).items():
        frame = model.frame(name)
        if frame.body < 0:
            continue
        fx[frame.body] += frame.X.T @ wrench_to_force(w)   # ᵇX*_f = (ᶠX_b)ᵀ
    return fx
