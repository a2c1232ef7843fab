"""The IMU (``sensor_msgs/Imu``): proper linear acceleration and, optionally, angular acceleration
rows; its orientation and angular velocity are the base's kinematic inputs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ConfigError, ModelError
from ..schema import parameter
from .base import IMU_MESSAGE, Sensor, register, timeout_parameter, vector

#: the IMU's slice of ``y``: orientation [x, y, z, w], ω (rad/s), specific force (m/s²), then ω̇ (rad/s²)
#: when ``use_angular_acceleration``
ORIENTATION, ANGULAR_VELOCITY, LINEAR_ACCELERATION, ANGULAR_ACCELERATION = 0, 4, 7, 10


@register
@dataclass(frozen=True)
class Imu(Sensor):
    """An IMU rigidly attached to ``frame`` (a link, a frame, or the name of a URDF ``<sensor
    type="imu">``), ``sensor_msgs/Imu`` conventions: orientation of the IMU frame in a z-up world,
    angular velocity and proper linear acceleration (reads +g upward at rest) in the IMU frame.
    ``use_angular_acceleration`` adds the angular-acceleration rows (the node derives ω̇ from the
    gyro with the same filter as the joint accelerations)."""
    name: str = "imu"
    frame: str = parameter("link, frame or URDF `<sensor type=\"imu\">` the IMU is rigidly attached to", "",
                           required=True)
    topic: str = parameter("input topic of the node (sensor_msgs/Imu), relative to the node's namespace unless it "
                           "starts with `/`", "imu")
    use_angular_acceleration: bool = parameter("add the angular-acceleration rows (the node derives ω̇ from the gyro "
                                               "with the joint accelerations' filter)", False)
    linear_acceleration_stddev: float = parameter("standard deviation of each linear-acceleration axis (m/s²)", 0.05,
                                                  gt=0.0)
    angular_acceleration_stddev: float = parameter("standard deviation of each angular-acceleration axis (rad/s²)",
                                                   0.5, gt=0.0)
    timeout: float = timeout_parameter()

    LIST: ClassVar[str] = "imu"
    GROUP: ClassVar[str] = "imu"
    KEYWORD: ClassVar[str] = "imu"
    SINGLE: ClassVar[bool] = True
    MESSAGE: ClassVar[str] = "sensor_msgs/msg/Imu"
    DECODER: ClassVar[str] = IMU_MESSAGE
    BASE_MOTION: ClassVar[bool] = True

    @property
    def size(self) -> int:
        return 13 if self.use_angular_acceleration else 10

    def labels(self) -> tuple[str, ...]:
        return (("orientation",) * 4 + ("angular_velocity",) * 3 + ("linear_acceleration",) * 3
                + ("angular_acceleration",) * (3 if self.use_angular_acceleration else 0))

    def bind(self, model):
        """The model frame of the IMU: a link, a frame or a URDF ``<sensor type="imu">``."""
        try:
            frame = model.imu_frame(self.frame)
        except ModelError:
            raise ConfigError(f"parameter 'imu.frame': '{self.frame}' is not a link, frame or IMU sensor of "
                              f"robot '{model.name}'{model.closest_frame(self.frame, model.imu_sensors)}") from None
        if frame.body < 0:
            raise ConfigError(f"parameter 'imu.frame': '{self.frame}' is attached to the fixed base")
        return frame

    def rows(self, w) -> None:
        """Proper acceleration at the IMU origin, in IMU axes: ``[0 1] ᶠX_b a_b + ω_F × v_F = y``
        (``a_b`` includes ``-a_g``, so gravity needs no orientation); optionally ``[1 0] ᶠX_b a_b = ω̇``."""
        frame = self.bind(w.model)
        ca = w.col("a", w.model.body_names[frame.body])
        X = frame.X
        s = self.linear_acceleration_stddev
        r0 = w.soft("imu", ["linear acceleration x", "linear acceleration y", "linear acceleration z"])
        w.block(r0, ca, X[3:, :], 1.0 / s)
        for a in range(3):
            w.measured(r0 + a, LINEAR_ACCELERATION + a, 1.0 / s)
            w.bias(r0 + a, "imu_wv", a, -1.0 / s)
        if self.use_angular_acceleration:
            s = self.angular_acceleration_stddev
            r0 = w.soft("imu", ["angular acceleration x", "angular acceleration y", "angular acceleration z"])
            w.block(r0, ca, X[:3, :], 1.0 / s)
            for a in range(3):
                w.measured(r0 + a, ANGULAR_ACCELERATION + a, 1.0 / s)

    def write(self, value, out: np.ndarray) -> None:
        """An :class:`~rbd_estimator.estimation.ImuSample` or a tuple ``(orientation, angular_velocity,
        linear_acceleration[, angular_acceleration])``."""
        if value is None:
            raise ValueError("imu: the configuration has an IMU but no IMU sample was given")
        out[0:4] = vector(value[0], 4, "imu.orientation")
        out[4:7] = vector(value[1], 3, "imu.angular_velocity")
        out[7:10] = vector(value[2], 3, "imu.linear_acceleration")
        if self.use_angular_acceleration:
            if len(value) < 4 or value[3] is None:
                raise ValueError("imu.angular_acceleration is required (imu.use_angular_acceleration is true)")
            out[10:13] = vector(value[3], 3, "imu.angular_acceleration")
