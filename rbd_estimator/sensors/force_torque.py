"""Six-axis force-torque sensors inside the limbs (``geometry_msgs/WrenchStamped``): they measure
the wrench transmitted by a kept fixed joint (Nori eq. 16 on ``f_i``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ConfigError, ModelError
from ..schema import parameter
from .base import AXIS, WRENCH_MESSAGE, Sensor, featherstone_to_boundary, register, timeout_parameter

FT_FRAMES = ("child", "parent", "sensor")
FT_DIRECTIONS = ("child_to_parent", "parent_to_child")
WRENCH_LABELS = ("fx", "fy", "fz", "tx", "ty", "tz")


class WrenchReading(Sensor):
    """A kind whose slice is one wrench ``[fx, fy, fz, tx, ty, tz]`` (N, N·m), read from a
    ``geometry_msgs/WrenchStamped``."""
    MESSAGE: ClassVar[str] = "geometry_msgs/msg/WrenchStamped"
    DECODER: ClassVar[str] = WRENCH_MESSAGE

    @property
    def size(self) -> int:
        return 6

    def labels(self) -> tuple[str, ...]:
        return tuple(f"{self.name} {a}" for a in WRENCH_LABELS)


@register
@dataclass(frozen=True)
class ForceTorque(WrenchReading):
    """A six-axis force-torque sensor. ``name`` is a sensor name, alias or joint of the URDF;
    ``joint`` declares a sensor the URDF does not describe (on a fixed joint), with ``frame`` and
    ``measure_direction`` following the SDF ``force_torque`` element. Its slice is
    ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) in the sensor's frame and measure direction."""
    topic: str = parameter("input topic of the node (geometry_msgs/WrenchStamped in the sensor's frame and measure "
                           "direction); empty: `ft/<name>`, relative to the node's namespace", "")
    joint: str = parameter("declares a sensor the URDF lacks, on this fixed joint (kept in the model); empty: the "
                           "URDF's sensor named (or aliased) `<name>`", "")
    frame: str = parameter("SDF convention: the frame the wrench is expressed in; empty: the URDF's, else `child`", "",
                           choices=("",) + FT_FRAMES)
    measure_direction: str = parameter("SDF convention: which body's wrench on the other it measures; empty: the "
                                       "URDF's, else `child_to_parent`", "", choices=("",) + FT_DIRECTIONS)
    force_stddev: float = parameter("standard deviation of each force axis (N)", 1.0, gt=0.0)
    torque_stddev: float = parameter("standard deviation of each torque axis (N·m)", 0.05, gt=0.0)
    force_offset_drift: float = parameter("random-walk rate of each force axis' offset (N/√s): > 0 tracks the "
                                          "offsets online from the other sensors (docs/offsets.md); 0: not tracked",
                                          0.0, ge=0.0)
    torque_offset_drift: float = parameter("random-walk rate of each torque axis' offset (N·m/√s), as "
                                           "`force_offset_drift`", 0.0, ge=0.0)
    timeout: float = timeout_parameter()

    LIST: ClassVar[str] = "ft_sensors"
    LIST_DESCRIPTION: ClassVar[str] = "six-axis force-torque sensors: URDF sensor names, gazebo names or joints"
    GROUP: ClassVar[str] = "ft"
    KEYWORD: ClassVar[str] = "ft"

    def drift_rates(self) -> np.ndarray:
        return np.array([self.force_offset_drift] * 3 + [self.torque_offset_drift] * 3)

    def entry_stddevs(self) -> np.ndarray:
        return np.array([self.force_stddev] * 3 + [self.torque_stddev] * 3)

    def bind(self, model):
        """The model's :class:`~rbd_estimator.model.robot_model.FTSensor`: from the URDF, or
        declared on a kept fixed joint with ``ft.<name>.joint``."""
        try:
            if self.joint:
                return model.kept_joint_sensor(self.name, self.joint, self.frame or "child",
                                               self.measure_direction or "child_to_parent")
            return model.ft_sensor(self.name)
        except ModelError as exc:
            hint = "" if self.joint else "; declare it with ft.<name>.joint on a fixed joint"
            raise ConfigError(f"parameter 'ft_sensors': '{self.name}': {exc}{hint}") from None

    def rotation(self, model, sensor=None) -> tuple[np.ndarray, float]:
        """(R, sign): the wrench is measured as ``sign · blockdiag(R, R) f_k`` in Featherstone order,
        ``R`` rotating child-link coordinates into the measurement axes (SDF ``frame``)."""
        sensor = sensor or self.bind(model)
        frame = self.frame or sensor.frame
        direction = self.measure_direction or sensor.measure_direction
        if frame == "child":
            R = np.eye(3)
        elif frame == "parent":
            R = model.frame(sensor.parent_link).E @ model.E_tree[sensor.body].T
        else:
            R = sensor.E_sensor
        return R, (-1.0 if direction == "child_to_parent" else 1.0)

    def rows(self, w) -> None:
        """``y = sign · blockdiag(R, R) f_k`` reordered to ``[f; n]``, whitened per axis."""
        sensor = self.bind(w.model)
        R, sign = self.rotation(w.model, sensor)
        Rb = np.zeros((6, 6))
        Rb[:3, :3] = R
        Rb[3:, 3:] = R
        wt = np.array([1 / self.torque_stddev] * 3 + [1 / self.force_stddev] * 3)
        r0 = w.soft(self.name, list(AXIS))
        w.block(r0, w.col("f", w.model.body_names[sensor.body]), (sign * wt[:, None]) * Rb)
        P = featherstone_to_boundary()
        for a in range(6):                       # y is [fx..tz]; row a is Featherstone component a
            w.measured(r0 + a, int(np.flatnonzero(P == a)[0]), wt[a])
