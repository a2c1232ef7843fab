"""Joint-torque sensors (motor currents × torque constant × gear ratio), with an actuator model:
``τ_j + I_a q̈_j = k_t N y − τ_f(q̇_j)`` (Nori eq. 16; ``τ_j = y`` without one). The friction ``τ_f`` is
applied to the reading before the estimate (:mod:`rbd_estimator.estimation.actuators`, whose
docstring has the model); docs/actuator_model.md."""
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
    stddev: float = parameter("standard deviation (N·m, N for a prismatic joint) of the motor torque k_t·N·reading; "
                              "when not given: `joint_torque_stddev`", 0.1, gt=0.0)
    torque_constant: float = parameter("k_t: motor torque per unit of the reading (N·m/A for a current); 1 with "
                                       "`gear_ratio` 1: the reading is the torque", 1.0, gt=0.0)
    gear_ratio: float = parameter("N: joint torque per motor torque (the motor torque reaches the joint × N)", 1.0,
                                  gt=0.0)
    coulomb_friction: float = parameter("f_c (N·m): Coulomb friction of the actuator, f_c·tanh(q̇/v_s) subtracted "
                                        "(MuJoCo's `frictionloss`)", 0.0, ge=0.0)
    friction_velocity: float = parameter("v_s (rad/s, m/s): the velocity over which the Coulomb friction "
                                         "changes sign", 0.01, gt=0.0)
    viscous_friction: float = parameter("b (N·m·s/rad): viscous friction of the actuator, b·q̇ subtracted "
                                        "(MuJoCo's `damping`)", 0.0, ge=0.0)
    armature: float = parameter("I_a (kg·m²): the rotor's inertia reflected to the joint (N² × rotor inertia), "
                                "I_a·q̈ subtracted (MuJoCo's `armature`)", 0.0, ge=0.0)
    offset_drift: float = drift_parameter("units of the reading")

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

    @property
    def scale(self) -> float:
        """``k_t N``: joint-side motor torque per unit of the reading."""
        return self.torque_constant * self.gear_ratio

    @property
    def has_actuator_model(self) -> bool:
        return self.coulomb_friction > 0.0 or self.viscous_friction > 0.0 or self.armature > 0.0

    def reading(self, tau: float, dq: float, ddq: float) -> float:
        """What the sensor reads when the joint torque is ``tau`` at velocity ``dq`` and acceleration
        ``ddq``: ``(τ + f_c tanh(q̇/v_s) + b q̇ + I_a q̈) / (k_t N)`` (simulated readings)."""
        motor = tau + self.coulomb_friction * np.tanh(dq / self.friction_velocity) + self.viscous_friction * dq \
            + self.armature * ddq
        return motor / self.scale

    def drift_rates(self) -> np.ndarray:
        return np.array([self.offset_drift])

    def entry_stddevs(self) -> np.ndarray:
        """The reading's noise (``stddev`` is the motor torque's: divided by ``k_t N``)."""
        return np.array([self.stddev / self.scale])

    def rows(self, w) -> None:
        """``τ_j / σ = k_t N y' / σ``, ``y'`` the reading less friction and armature
        (:mod:`~rbd_estimator.estimation.actuators`). When the accelerations are a measurement (σ_a > 0)
        ``y'`` takes that measurement, and the row's variance gains ``(I_a σ_a)²`` (its correlation
        with the acceleration's own row neglected)."""
        if self.name not in w.model.joint_names:
            raise ConfigError(f"parameter 'joint_torque_sensors': '{self.name}' is not an actuated joint of "
                              f"robot '{w.model.name}'")
        sigma = float(np.hypot(self.stddev, self.armature * w.acceleration_stddev))
        r0 = w.soft(f"joint torque {self.name}", ["τ"])
        w.block(r0, w.col("tau", self.name), np.ones((1, 1)), 1.0 / sigma)
        w.measured(r0, 0, self.scale / sigma)
