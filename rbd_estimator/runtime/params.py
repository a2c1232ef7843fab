"""Node-only parameters of the estimator node and when each of them may change.

The sensor and contact parameters are :class:`~rbd_estimator.estimation.config.SensorConfig`'s
schema; everything else the node reads lives in ``SensorConfig.node`` and is parsed here.
:data:`NODE_KEYS` names all of it: the node and the replay pass it to ``SensorConfig`` so that any
other key is refused, naming the closest valid one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError
from ..model.loops import LOOP_KEYS
from ..yaml_file import unknown_parameter

#: name → (default, description). Declared by the node when not given as an override.
NODE_PARAMETERS = {
    "robot_description": ("", "URDF XML. Empty: read it from robot_description_topic at configure."),
    "robot_description_topic": ("/robot_description",
                                "std_msgs/String topic (transient local, as robot_state_publisher publishes it) "
                                "read at configure when robot_description is empty."),
    "robot_description_timeout": (10.0, "Seconds configure waits for robot_description_topic."),
    "joint_states_topic": ("joint_states", "sensor_msgs/JointState input: positions and velocities."),
    "joint_states_timeout": (0.1, "Seconds; with tick: timer, no estimate is made from older joint states."),
    "joint_torque_topic": ("", "sensor_msgs/JointState whose effort field carries the joint-torque sensors "
                               "(joint_torque_sensors). Empty: the efforts of joint_states_topic."),
    "joint_torque_timeout": (0.05, "Seconds after which the joint-torque readings count as missing."),
    "acceleration_cutoff_hz": (100.0, "Cutoff of the first-order low-pass on finite-difference accelerations "
                                      "(joints, and the IMU angular acceleration). 0: no low-pass."),
    "max_sample_gap": (0.1, "Seconds; a larger gap between two velocity samples restarts the derivative filter."),
    "tick": ("joint_states", "'joint_states': estimate on every joint-state message; 'timer': at rate_hz."),
    "rate_hz": (1000.0, "Tick rate with tick: timer."),
    "oracle_every_n": (100, "Ticks between pinocchio cross-checks of the estimate (0: off)."),
    "oracle_tolerance": (1e-3, "N·m; the cross-check reports WARN when the largest torque difference is above."),
    "diagnostics_period": (1.0, "Seconds between /diagnostics messages."),
    "prepare_fallbacks": (True, "Plan every single-sensor loss in the background after configure (and after a "
                                "reconfiguration). False: plan a loss when it first happens (ERROR until ready)."),
    "contact_command_topic": ("contact_command", "sensor_msgs/JointState from the walking controller: name = contacts "
                                                 "with contact.<name>.mode 'commanded', position 1.0 in contact / 0.0 "
                                                 "in the air."),
    "contact_command_timeout": (0.5, "Seconds after which a contact command no longer counts (the commanded "
                                     "contacts are then taken as in contact); 0: a command never times out."),
    "strict_model": (False, "True: refuse a robot description with physically inconsistent inertias or massless "
                            "moving subtrees (ModelError) instead of loading it with a warning per link."),
}

#: Changing these while the node is configured needs cleanup + configure.
NEEDS_CONFIGURE = frozenset({"robot_description", "robot_description_topic", "robot_description_timeout",
                             "strict_model"})
#: Subscriptions and the tick source: refused while active (deactivate, change, activate).
NEEDS_REACTIVATE = frozenset({"joint_states_topic", "joint_torque_topic", "tick", "rate_hz", "contact_command_topic"})

TICK_SOURCES = ("joint_states", "timer")
#: Prefix of the force-torque offset parameters (``ft_offsets.<sensor>``: [fx, fy, fz, tx, ty, tz]).
FT_OFFSETS = "ft_offsets"
#: Parameters that rclpy declares on every node (``qos_overrides.<topic>.*`` when a parameter file
#: overrides a QoS): accepted, not read.
ROS_PARAMETERS = ("use_sim_time", "start_type_description_service", "qos_overrides.")
#: Every top-level parameter of the node's parameter file that is not the sensor schema's (a name
#: ending in ``.`` admits every key under it): pass as ``SensorConfig.from_parameters(..., node_keys=)``.
NODE_KEYS = tuple(NODE_PARAMETERS) + (FT_OFFSETS + ".",) + ROS_PARAMETERS


@dataclass(frozen=True)
class NodeSettings:
    """The parsed node-only parameters (see :data:`NODE_PARAMETERS`)."""
    robot_description: str
    robot_description_topic: str
    robot_description_timeout: float
    joint_states_topic: str
    joint_states_timeout: float
    joint_torque_topic: str
    joint_torque_timeout: float
    acceleration_cutoff_hz: float
    max_sample_gap: float
    tick: str
    rate_hz: float
    oracle_every_n: int
    oracle_tolerance: float
    diagnostics_period: float
    prepare_fallbacks: bool
    contact_command_topic: str = "contact_command"
    contact_command_timeout: float = 0.5
    strict_model: bool = False
    #: ``((sensor, (fx, fy, fz, tx, ty, tz)), ...)`` from the ``ft_offsets.<sensor>`` parameters:
    #: subtracted from every reading of that sensor (:func:`~rbd_estimator.estimation.calibration.apply_offsets`)
    ft_offsets: tuple = ()

    @classmethod
    def from_parameters(cls, node_params: dict) -> "NodeSettings":
        """From ``SensorConfig.node`` (flat names); raises :class:`ConfigError` naming the parameter,
        and the closest valid one for a parameter nobody reads."""
        for name in node_params:
            if not any(name == k or (k.endswith(".") and name.startswith(k)) for k in NODE_KEYS + LOOP_KEYS):
                rest = name.partition(".")[2]
                raise unknown_parameter(name, [k + rest if k.endswith(".") else k for k in NODE_KEYS + LOOP_KEYS],
                                        ConfigError)
        kw = {}
        for name, (default, _) in NODE_PARAMETERS.items():
            value = node_params.get(name, default)
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ConfigError(f"parameter '{name}' must be true or false, got {value!r}")
            elif isinstance(default, str):
                if not isinstance(value, str):
                    raise ConfigError(f"parameter '{name}' must be a string, got {value!r}")
            elif isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise ConfigError(f"parameter '{name}' must be an integer >= 0, got {value!r}")
            else:
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                        or value < 0:
                    raise ConfigError(f"parameter '{name}' must be a finite number >= 0, got {value!r}")
                value = float(value)
            kw[name] = value
        if kw["tick"] not in TICK_SOURCES:
            raise ConfigError(f"parameter 'tick' must be one of {TICK_SOURCES}, got {kw['tick']!r}")
        for name in ("rate_hz", "robot_description_timeout", "joint_states_timeout", "joint_torque_timeout",
                     "max_sample_gap", "diagnostics_period"):
            if kw[name] <= 0.0:
                raise ConfigError(f"parameter '{name}' must be > 0, got {kw[name]!r}")
        if not kw["joint_states_topic"]:
            raise ConfigError("parameter 'joint_states_topic' must name a topic")
        offsets = []
        for name, value in sorted(node_params.items()):
            if not name.startswith(FT_OFFSETS + "."):
                continue
            sensor = name[len(FT_OFFSETS) + 1:]
            try:
                vals = tuple(float(x) for x in value)
            except (TypeError, ValueError):
                vals = ()
            if not sensor or "." in sensor or len(vals) != 6 or not all(math.isfinite(x) for x in vals):
                raise ConfigError(f"parameter '{name}' must be six finite numbers [fx, fy, fz, tx, ty, tz] "
                                  f"(N, N·m; reading = true + offset), got {value!r}")
            offsets.append((sensor, vals))
        kw["ft_offsets"] = tuple(offsets)
        return cls(**kw)

    def check_ft_offsets(self, config) -> None:
        """ConfigError for an ``ft_offsets.<sensor>`` that names no configured force-torque sensor."""
        names = {s.name for s in config.ft_sensors}
        for sensor, _ in self.ft_offsets:
            if sensor not in names:
                raise ConfigError(f"parameter '{FT_OFFSETS}.{sensor}': no force-torque sensor '{sensor}' in "
                                  f"ft_sensors ({', '.join(sorted(names)) or 'none'})")

    def joint_torque_source(self) -> str:
        """The topic that carries the joint-torque sensors."""
        return self.joint_torque_topic or self.joint_states_topic


def parse_parameters(flat: dict):
    """``(SensorConfig, NodeSettings)`` of the node's flat parameters; ConfigError names the parameter."""
    from ..estimation import SensorConfig
    config = SensorConfig.from_parameters(flat, NODE_KEYS)
    settings = NodeSettings.from_parameters(config.node)
    settings.check_ft_offsets(config)
    return config, settings


def change_refusal(names, active: bool) -> str:
    """Why the parameters ``names`` cannot change now ('' if they can)."""
    if active and names & NEEDS_CONFIGURE:
        return (f"{', '.join(sorted(names & NEEDS_CONFIGURE))} can only change through cleanup and configure: "
                f"deactivate, cleanup, set it, then configure and activate again")
    if active and names & NEEDS_REACTIVATE:
        return f"{', '.join(sorted(names & NEEDS_REACTIVATE))} take effect on activate: deactivate, set, activate"
    return ""


def default_topic(kind: str, name: str) -> str:
    """Default input topic of a sensor whose ``topic`` parameter is empty (relative: follows the
    node's namespace)."""
    return {"ft": f"ft/{name}", "load_cell": f"load_cells/{name}", "imu": "imu"}.get(kind, f"{kind}/{name}")
