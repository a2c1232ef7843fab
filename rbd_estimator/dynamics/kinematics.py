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


def external_forces(model: RobotModel, f_ext, out: np.ndarray | None = None) -> np.ndarray:
    """Map ``{link or frame: [fx, fy, fz, tx, ty, tz] in that frame}`` to body-coordinate spatial
    forces ``f_i^x`` (NB × 6), into ``out`` when given. Wrenches on frames of the fixed base are
    ignored (they do no work). Raises ``ValueError`` naming the frame of a wrench that is not six
    numbers, :class:`~rbd_estimator.errors.ModelError` for an unknown frame."""
    fx = np.zeros((model.NB, 6)) if out is None else out
    if out is not None:
        fx[:] = 0.0
    for name, w in (f_ext or {}).items():
        body, XT = _force_transform(model, name)
        w = np.asarray(w, dtype=float)
        if w.shape != (6,):
            raise ValueError(f"external wrench on '{name}' has shape {w.shape}; expected [fx, fy, fz, tx, ty, tz]")
        if body >= 0:
            fx[body] += XT @ wrench_to_force(w)
    return fx


def _force_transform(model: RobotModel, name: str):
    """``(body, ᵇX*_f = (ᶠX_b)ᵀ)`` of a frame, cached on the model."""
    cache = model.__dict__.get("_force_transforms")
    if cache is None:
        cache = {}
        object.__setattr__(model, "_force_transforms", cache)
    if name not in cache:
        frame = model.frame(name)
        cache[name] = (frame.body, frame.X.T.copy())
    return cache[name]
