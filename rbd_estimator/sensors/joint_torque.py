"""Joint-torque sensors (motor currents × torque constant × gear ratio): ``τ_j = y`` (Nori eq. 16)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ConfigError
from ..schema import parameter
from .base import JOINT_EFFORT, Sensor, drift_parameter, register


@register
@dataclass(frozen=True)
class JointTorque(Sensor):
    """The torque (N·m, or N for a prismatic joint) of the actuated joint ``name``, read from the
    ``effort`` of a ``sensor_msgs/JointState``. Listed in ``joint_torque_sensors``; the standard
    deviation is ``joint_torque.<joint>.stddev``, by default the top-level ``joint_torque_stddev``."""
    stddev: float = parameter("standard deviation (N·m, N for a prismatic joint); when not given: "
                              "`joint_torque_stddev`", 0.1, gt=0.0)
    offset_drift: float = drift_parameter("N·m")

    LIST: ClassVar[str] = "joint_torque_sensors"
    LIST_DESCRIPTION: ClassVar[str] = "actuated joints with a torque sensor (the `effort` of `joint_torque_topic`)"
    GROUP: ClassVar[str] = "joint_torque"
    KEYWORD: ClassVar[str] = "joint_torques"
    MESSAGE: ClassVar[str] = "sensor_msgs/msg/JointState"
    DECODER: ClassVar[str] = JOINT_EFFORT

    @property
    def size(self) -> int:
        return 1

    def labels(self) -> tuple[str, ...]:
        return (self.name,)

    def drift_rates(self) -> np.ndarray:
        return np.array([self.offset_drift])

    def entry_stddevs(self) -> np.ndarray:
        return np.array([self.stddev])

    def rows(self, w) -> None:
        if self.name not in w.model.joint_names:
            raise ConfigError(f"parameter 'joint_torque_sensors': '{self.name}' is not an actuated joint of "
                              f"robot '{w.model.name}'")
        r0 = w.soft(f"joint torque {self.name}", ["τ"])
        w.block(r0, w.col("tau", self.name), np.ones((1, 1)), 1.0 / self.stddev)
        w.measured(r0, 0, 1.0 / self.stddev)
