"""The elements a :class:`~rbd_estimator.model.robot_model.RobotModel` is made of: joint type
codes, frames, force-torque sensors and mimic joints.

They live below both the model and the URDF reader (:mod:`rbd_estimator.model.urdf`), so that the
reader imports them and the model imports the reader, one way (no import circle).
:mod:`rbd_estimator.model.robot_model` re-exports every name.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..kernels.joints import FIXED, FREE, PRISMATIC, REVOLUTE
from ..spatial import plux

__all__ = ["FIXED", "REVOLUTE", "PRISMATIC", "FREE", "JOINT_TYPE_NAMES", "Frame", "FTSensor", "MimicJoint"]

# Joint type codes: those of the compiled joint transform (kernels/joints.py).
JOINT_TYPE_NAMES = {FIXED: "fixed", REVOLUTE: "revolute", PRISMATIC: "prismatic", FREE: "free"}


@dataclass(frozen=True)
class Frame:
    """A named frame rigidly attached to body ``body`` (``-1``: the fixed base).

    ``ᶠX_body = plux(E, r)``: ``E`` rotates body coordinates into frame coordinates and ``r`` is
    the frame origin in body coordinates (m).
    """
    name: str
    body: int
    E: np.ndarray
    r: np.ndarray

    @property
    def X(self) -> np.ndarray:
        """Plücker motion transform from body to frame coordinates."""
        return plux(self.E, self.r)


@dataclass(frozen=True)
class FTSensor:
    """A six-axis force-torque sensor on a kept fixed joint (SDF ``force_torque`` conventions).

    ``frame``: ``'child'`` (default), ``'parent'`` or ``'sensor'`` — the axes the wrench is expressed
    in; the torque is always about the joint origin. ``measure_direction``: ``'child_to_parent'``
    (default; the wrench the child exerts on the parent) or ``'parent_to_child'``.
    ``E_sensor`` rotates child-link coordinates into sensor coordinates (identity unless the
    sensor has a ``<pose>``). ``body`` is the model body of the child link.
    """
    name: str
    joint: str
    parent_link: str
    child_link: str
    frame: str = "child"
    measure_direction: str = "child_to_parent"
    body: int = -1
    E_sensor: np.ndarray = field(default_factory=lambda: np.eye(3))
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class MimicJoint:
    """A URDF ``<mimic>`` joint: ``q_joint = multiplier · q_driver + offset`` (rad or m).

    ``driver`` is always an independent joint (chains of mimic joints are resolved when the URDF
    is read). The coupling is a constant linear transmission (Chignoli §III, explicit constraint
    ``q = γ(y)`` with ``G`` constant): velocities and accelerations follow with ``multiplier``,
    and the effort of the driver is the actuator effort ``τ_driver + Σ multiplier · τ_mimic``.
    """
    joint: str
    driver: str
    multiplier: float = 1.0
    offset: float = 0.0
