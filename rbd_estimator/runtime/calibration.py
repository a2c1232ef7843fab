"""The node's force-torque offset calibration: samples collected at ticks, refused while moving (no ROS import).

The service ``~/calibrate_ft_offsets`` (see :mod:`rbd_estimator.node`) creates a
:class:`SampleCollector`; the tick thread hands it the latest inputs after every accepted joint
state; when it has ``n`` samples the service thread solves
:func:`rbd_estimator.estimation.calibration.calibrate_ft_offsets` with them. A joint velocity above
``max_joint_velocity`` (or an IMU angular velocity above it, in rad/s) ends the collection with a refusal that names the joint: the calibration
assumes the declared contact situation and a robot held still.

Request and response of the service. There is no custom interface generation in the standalone
setup (no rosidl build), so the service reuses ``rcl_interfaces/srv/SetParameters``: the request's
``parameters`` are the calibration's arguments by name —

* ``contacts`` (string array, required; ``[""]`` or ``["none"]`` for no contact: hanging),
* ``samples`` (integer, default 200),
* ``max_joint_velocity`` (double, rad/s, default 0.05),
* ``timeout`` (double, s, default ``samples / 100 + 5``),
* ``imu_angular_acceleration`` (bool, default true): add the IMU's angular-acceleration rows with
  a zero angular acceleration (the robot is held still), which makes one posture enough while hanging
  or on one foot (see :func:`~rbd_estimator.estimation.calibration.calibrate_ft_offsets`);

and the response's single ``results[0]`` carries ``successful`` and, in ``reason``, either why the
calibration was refused or failed, or the result as JSON: :meth:`CalibrationResult.to_dict` (offsets,
standard errors, residual RMS, identifiability, χ²) plus ``applied`` (the sensors whose offsets were
stored in the ``ft_offsets.<sensor>`` parameters: all six components identified).
"""
from __future__ import annotations

import math
import threading

import numpy as np

from ..errors import ConfigError

DEFAULTS = {"samples": 200, "max_joint_velocity": 0.05}


def parse_request(values: dict) -> dict:
    """``{name: value}`` of the request's parameters → validated arguments (ConfigError names the problem)."""
    unknown = set(values) - {"contacts", "samples", "max_joint_velocity", "timeout", "imu_angular_acceleration"}
    if unknown:
        raise ConfigError(f"unknown calibration argument(s) {sorted(unknown)}: use contacts, samples, "
                          f"max_joint_velocity, timeout, imu_angular_acceleration")
    alpha = values.get("imu_angular_acceleration", True)
    if not isinstance(alpha, bool):
        raise ConfigError(f"'imu_angular_acceleration' must be true or false, got {alpha!r}")
    if "contacts" not in values:
        raise ConfigError("the request must name the contact situation: parameter 'contacts' (string array; "
                          "['none'] for hanging)")
    contacts = values["contacts"]
    if isinstance(contacts, str):
        contacts = [contacts]
    contacts = tuple(c for c in contacts if c not in ("", "none"))
    n = values.get("samples", DEFAULTS["samples"])
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"'samples' must be an integer >= 1, got {n!r}")
    vmax = values.get("max_joint_velocity", DEFAULTS["max_joint_velocity"])
    if isinstance(vmax, bool) or not isinstance(vmax, (int, float)) or not (vmax > 0 and math.isfinite(vmax)):
        raise ConfigError(f"'max_joint_velocity' must be a number > 0, got {vmax!r}")
    timeout = values.get("timeout", n / 100.0 + 5.0)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError(f"'timeout' must be a number of seconds > 0, got {timeout!r}")
    return {"contacts": contacts, "samples": n, "max_joint_velocity": float(vmax), "timeout": float(timeout),
            "imu_angular_acceleration": alpha}


class SampleCollector:
    """Samples for :func:`calibrate_ft_offsets` taken from the node's inputs at each tick."""

    def __init__(self, n: int, max_joint_velocity: float, joint_names, imu_angular_acceleration: bool = False):
        self.n, self.vmax, self.joint_names = n, max_joint_velocity, tuple(joint_names)
        self.zero_alpha = imu_angular_acceleration
        self.samples: list = []
        self.refusal = ""
        self.done = threading.Event()

    @staticmethod
    def refusal(config) -> str:
        """Why a configuration cannot be calibrated ('' if it can)."""
        return "" if config.ft_sensors else "no force-torque sensor is configured: nothing to calibrate"

    @classmethod
    def for_inputs(cls, args: dict, inputs, config) -> "SampleCollector":
        """The collector of a request (:func:`parse_request`) over the session's inputs."""
        return cls(args["samples"], args["max_joint_velocity"], inputs.joint_names,
                   args["imu_angular_acceleration"] and config.imu is not None)

    def add(self, inputs) -> None:
        """Called by the tick thread after an accepted joint state (q, dq, ddq ready)."""
        if self.done.is_set():
            return
        k = int(np.argmax(np.abs(inputs.dq)))
        if abs(inputs.dq[k]) > self.vmax:
            self.refusal = (f"the robot moves: joint '{self.joint_names[k]}' at {inputs.dq[k]:+.3g} rad/s, above "
                            f"max_joint_velocity {self.vmax:g} rad/s; hold it still and call again")
            self.done.set()
            return
        missing = [n for n, s in inputs.slots.items() if not s.ready]
        if missing:
            return                                   # not every sensor has a sample yet
        imu = inputs.imu
        if imu is not None:
            from ..estimation import ImuSample
            w = float(np.linalg.norm(imu.angular_velocity))
            if w > self.vmax:
                self.refusal = (f"the robot moves: the IMU turns at {w:.3g} rad/s, above max_joint_velocity "
                                f"{self.vmax:g} rad/s; hold it still and call again")
                self.done.set()
                return
            alpha = (np.zeros(3) if self.zero_alpha else
                     None if imu.angular_acceleration is None else np.array(imu.angular_acceleration))
            imu = ImuSample(np.array(imu.orientation), np.array(imu.angular_velocity),
                            np.array(imu.linear_acceleration), alpha)
        sample = {"q": inputs.q.copy(), "dq": inputs.dq.copy(), "ddq": inputs.ddq.copy(), "imu": imu,
                  "ft": inputs.ft_raw_matrix.copy()}
        if inputs.config.load_cells:
            sample["load_cells"] = {c.name: inputs.slots[c.name].value.copy() for c in inputs.config.load_cells}
        if inputs.jt_names:
            sample["joint_torques"] = inputs.jt_vector.copy()
        self.samples.append(sample)
        if len(self.samples) >= self.n:
            self.done.set()


def fit_request(estimator, collector: SampleCollector, args: dict):
    """``(ok, text, result)``: the offsets fitted to what ``collector`` gathered, or why not."""
    from ..estimation.calibration import calibrate_ft_offsets
    if collector.refusal:
        return False, collector.refusal, None
    if not collector.done.is_set():
        return False, (f"only {len(collector.samples)} of {args['samples']} samples within {args['timeout']:g} s: "
                       f"are the joint states and every sensor being published?"), None
    try:
        result = calibrate_ft_offsets(estimator, collector.samples, args["contacts"],
                                      imu_angular_acceleration=True if collector.zero_alpha else None)
    except Exception as exc:  # noqa: BLE001 - unknown contact, bad samples: say so
        return False, f"calibration failed: {type(exc).__name__}: {exc}", None
    return True, "", result
