"""Node-only parameters of the estimator node and when each of them may change.

:class:`NodeSettings`' fields are the node-only parameters (declared with
:func:`~rbd_estimator.schema.parameter`: type, description, range, when a change takes effect);
:func:`node_schema` adds them, the force-torque offsets and the loop declarations to the sensor
schema (:func:`~rbd_estimator.estimation.config.sensor_schema`): every parameter of the node, which
:mod:`rbd_estimator.ros.declare` declares and the docs' tables show (``python -m
rbd_estimator.runtime.params --write-docs``). :data:`NODE_KEYS` names the node's part: the node and
the replay pass it to ``SensorConfig`` so that any other key is refused, naming the closest valid
one.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from ..errors import ConfigError
from ..estimation.config import sensor_schema
from ..model.loops import LOOP_KEYS, loop_schema
from ..schema import CONFIGURE, LIVE, REACTIVATE, Field, Group, Schema, fields_of, parameter
from ..sensors import KINDS
from ..yaml_file import unknown_parameter
from .kalman import MODELS, acceleration_stddev

TICK_SOURCES = ("joint_states", "timer")
ACCELERATION_FILTERS = ("lowpass", "kalman")
#: Prefix of the force-torque offset parameters (``ft_offsets.<sensor>``: [fx, fy, fz, tx, ty, tz]).
FT_OFFSETS = "ft_offsets"
#: The offset of one force-torque sensor (``ft_offsets.<sensor>``)
FT_OFFSET = Field("double_array", "`[fx, fy, fz, tx, ty, tz]` (N, N·m) subtracted from every reading of the "
                  "force-torque sensor (reading = true + offset, `apply_offsets`); set by `~/calibrate_ft_offsets`",
                  (0.0,) * 6, size=6, change=LIVE)


@dataclass(frozen=True)
class NodeSettings:
    """The parsed node-only parameters: each field but ``ft_offsets`` is one (see :data:`NODE_PARAMETERS`)."""
    robot_description: str = parameter("URDF XML; empty: read `robot_description_topic` at configure", "",
                                       change=CONFIGURE)
    robot_description_topic: str = parameter(
        "std_msgs/String topic (transient local, as robot_state_publisher publishes it) read at configure when "
        "`robot_description` is empty", "/robot_description", change=CONFIGURE)
    robot_description_timeout: float = parameter("seconds configure waits for `robot_description_topic`", 10.0,
                                                 gt=0.0, change=CONFIGURE)
    joint_states_topic: str = parameter("sensor_msgs/JointState input: positions and velocities, matched by joint "
                                        "name; triggers the tick", "joint_states", change=REACTIVATE)
    joint_states_timeout: float = parameter("seconds; with `tick: timer`, no estimate is made from older joint "
                                            "states", 0.1, gt=0.0, change=LIVE)
    joint_torque_topic: str = parameter("sensor_msgs/JointState whose `effort` carries the joint-torque sensors "
                                        "(`joint_torque_sensors`); empty: `joint_states_topic`", "",
                                        change=REACTIVATE)
    joint_torque_timeout: float = parameter("seconds after which the joint-torque readings count as missing", 0.05,
                                            gt=0.0, change=LIVE)
    acceleration_cutoff_hz: float = parameter("cutoff (Hz) of the first-order low-pass on the finite-difference "
                                              "accelerations (joints, and the IMU angular acceleration); 0: none",
                                              100.0, ge=0.0, change=LIVE)
    acceleration_filter: str = parameter(
        "the joints' velocities and accelerations: `lowpass`: the velocities as received, accelerations their "
        "finite difference low-passed at `acceleration_cutoff_hz`; `kalman`: a causal Kalman filter per joint on "
        "the positions (and velocities) gives both (runtime/kalman.py, docs/joint_acceleration.md)", "lowpass",
        choices=ACCELERATION_FILTERS, change=LIVE)
    kalman_model: str = parameter("the Kalman filter's motion model: `constant_acceleration` (white jerk) or "
                                  "`constant_jerk` (white snap)", "constant_jerk", choices=tuple(MODELS),
                                  change=LIVE)
    kalman_process_noise: float = parameter("spectral density of the Kalman filter's white noise: jerk "
                                            "(rad²/s⁵) or snap (rad²/s⁷) for `kalman_model`", 1.0e4, gt=0.0,
                                            change=LIVE)
    kalman_position_stddev: float = parameter("standard deviation (rad, m) of the encoder positions in the "
                                              "Kalman filter", 1.0e-4, gt=0.0, change=LIVE)
    kalman_velocity_stddev: float = parameter("standard deviation (rad/s, m/s) of the received velocities in the "
                                              "Kalman filter; 0: velocities not used (positions only)", 0.0,
                                              ge=0.0, change=LIVE)
    joint_acceleration_stddev_from_filter: bool = parameter(
        "with `acceleration_filter: kalman`: set `joint_acceleration_stddev` to the filter's steady-state "
        "acceleration standard deviation at `kalman_nominal_rate_hz` (the accelerations become a measurement)",
        False)
    kalman_nominal_rate_hz: float = parameter("joint-state rate (Hz) at which the Kalman filter's steady-state "
                                              "acceleration variance is computed for "
                                              "`joint_acceleration_stddev_from_filter`", 1000.0, gt=0.0)
    max_sample_gap: float = parameter("seconds; a larger gap between two velocity samples restarts the derivative "
                                      "filter", 0.1, gt=0.0, change=LIVE)
    tick: str = parameter("`joint_states`: an estimate per joint-state message; `timer`: at `rate_hz`",
                          "joint_states", choices=TICK_SOURCES, change=REACTIVATE)
    rate_hz: float = parameter("tick rate (Hz) with `tick: timer`", 1000.0, gt=0.0, change=REACTIVATE)
    oracle_every_n: int = parameter("estimates between two pinocchio cross-checks of the estimate; 0: off", 100,
                                    ge=0, change=LIVE)
    oracle_tolerance: float = parameter("N·m; the cross-check reports WARN when the largest torque difference is "
                                        "above", 1e-3, ge=0.0, change=LIVE)
    diagnostics_period: float = parameter("seconds between /diagnostics messages", 1.0, gt=0.0, change=LIVE)
    prepare_fallbacks: bool = parameter("plan every single-sensor loss in the background after configure (and "
                                        "after a reconfiguration); false: plan a loss when it first happens (ERROR "
                                        "until ready)", True, change=LIVE)
    contact_command_topic: str = parameter("sensor_msgs/JointState from the walking controller: name = contacts "
                                           "with `contact.<name>.mode: commanded`, position 1.0 in contact, 0.0 in "
                                           "the air", "contact_command", change=REACTIVATE)
    contact_command_timeout: float = parameter("seconds after which a contact command no longer counts (the "
                                               "commanded contacts are then taken as in contact); 0: never", 0.5,
                                               ge=0.0, change=LIVE)
    fault_false_alarm_rate: float = parameter(
        "per-tick false-alarm rate of the χ² test on the whitened residual that finds an inconsistent sensor, "
        "isolates and excludes it (runtime/faults.py); 0: off (the default: it flags model error such as "
        "accelerations differentiated from encoders or unmodelled offsets; 1e-6 where the noise model covers them)",
        0.0, ge=0.0, le=0.5, change=LIVE)
    fault_start_delay: float = parameter("seconds after the first estimate (activation) before the χ² test starts: "
                                         "the derivative filter's start-up", 0.1, ge=0.0, change=LIVE)
    offset_start_delay: float = parameter("seconds of data time after the first estimate (activation) before the "
                                          "tracked offsets take in residuals (they only predict until then): the "
                                          "derivative filter's start-up", 0.1, ge=0.0, change=LIVE)
    fault_recovery_time: float = parameter("seconds an excluded sensor must stay consistent with the others before "
                                           "it is used again", 1.0, ge=0.0, change=LIVE)
    condition_warn_below: float = parameter("/diagnostics reports WARN when the tick's condition estimate (the "
                                            "smallest pivot ratio of its factorisation) falls below this", 1e-10,
                                            ge=0.0, change=LIVE)
    strict_model: bool = parameter("true: refuse a robot description with physically inconsistent inertias or "
                                   "massless moving subtrees (ModelError) instead of loading it with a warning per "
                                   "link", False, change=CONFIGURE)
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
        kw = {name: f.value(name, node_params[name]) for name, f in NODE_PARAMETERS.items() if name in node_params}
        if not kw.get("joint_states_topic", "joint_states"):
            raise ConfigError("parameter 'joint_states_topic' must name a topic")
        offsets = []
        for name, value in sorted(node_params.items()):
            if not name.startswith(FT_OFFSETS + "."):
                continue
            sensor = name[len(FT_OFFSETS) + 1:]
            try:
                vals = FT_OFFSET.value(name, value)
            except ConfigError:
                vals = ()
            if not sensor or "." in sensor or not vals:
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

    def estimator_config(self, config):
        """``config`` as the estimator takes it: with ``joint_acceleration_stddev_from_filter``, its
        ``joint_acceleration_stddev`` is the Kalman filter's steady-state acceleration standard
        deviation at ``kalman_nominal_rate_hz`` (:func:`~rbd_estimator.runtime.kalman.acceleration_stddev`)."""
        if not self.joint_acceleration_stddev_from_filter:
            return config
        if self.acceleration_filter != "kalman":
            raise ConfigError("parameter 'joint_acceleration_stddev_from_filter' needs 'acceleration_filter: kalman'")
        sigma = acceleration_stddev(self.kalman_model, self.kalman_process_noise, self.kalman_position_stddev,
                                    self.kalman_velocity_stddev, self.kalman_nominal_rate_hz)
        return replace(config, joint_acceleration_stddev=sigma)

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
    """Why the parameters ``names`` cannot change now ('' if they can): while active, those whose
    change needs a new configure (:data:`NEEDS_CONFIGURE`, and the loop declarations) or a new
    activation (:data:`NEEDS_REACTIVATE`)."""
    configure = sorted(n for n in names if n in NEEDS_CONFIGURE
                       or any(n == k or (k.endswith(".") and n.startswith(k)) for k in LOOP_KEYS))
    if active and configure:
        return (f"{', '.join(configure)} can only change through cleanup and configure: "
                f"deactivate, cleanup, set it, then configure and activate again")
    if active and names & NEEDS_REACTIVATE:
        return f"{', '.join(sorted(names & NEEDS_REACTIVATE))} take effect on activate: deactivate, set, activate"
    return ""


def default_topic(kind: str, name: str) -> str:
    """Default input topic of a sensor whose ``topic`` parameter is empty (relative: follows the
    node's namespace)."""
    return {"ft": f"ft/{name}", "load_cell": f"load_cells/{name}", "imu": "imu"}.get(kind, f"{kind}/{name}")


#: The node-only parameters, by name.
NODE_PARAMETERS: dict[str, Field] = fields_of(NodeSettings)
#: Changing these while the node is active is refused; they take effect at the next configure.
NEEDS_CONFIGURE = frozenset(k for k, f in NODE_PARAMETERS.items() if f.change == CONFIGURE)
#: Subscriptions and the tick source: refused while active (deactivate, change, activate).
NEEDS_REACTIVATE = frozenset(k for k, f in NODE_PARAMETERS.items() if f.change == REACTIVATE)
#: Parameters that rclpy declares on every node (``qos_overrides.<topic>.*`` when a parameter file
#: overrides a QoS): accepted, not read.
ROS_PARAMETERS = ("use_sim_time", "start_type_description_service", "qos_overrides.")
#: Every top-level parameter of the node's parameter file that is not the sensor schema's (a name
#: ending in ``.`` admits every key under it): pass as ``SensorConfig.from_parameters(..., node_keys=)``.
NODE_KEYS = tuple(NODE_PARAMETERS) + (FT_OFFSETS + ".",) + ROS_PARAMETERS


def node_only_schema() -> Schema:
    """The node-only parameters and the force-torque offsets (one per sensor that ``ft_sensors`` lists)."""
    return Schema.of(NODE_PARAMETERS, Group(FT_OFFSETS, {"": FT_OFFSET}, names="ft_sensors", placeholder="sensor"))


def node_schema() -> Schema:
    """Every parameter of the node: :func:`node_only_schema`, the sensor schema (contacts and every
    registered kind) and the loop declarations (made once per set of registered kinds)."""
    return _node_schema(tuple(KINDS.values()))


@functools.lru_cache(maxsize=8)
def _node_schema(kinds: tuple) -> Schema:
    return node_only_schema() + sensor_schema() + loop_schema()


# ---------------------------------------------------------------------------- the docs' tables
#: The parameter table of each page: ``docs/<page>`` → (its schema, whether rows say when a change
#: takes effect; every loop parameter's needs a new configure, which the page says once). Generated
#: between the lines :data:`BEGIN` and :data:`END` by ``python -m rbd_estimator.runtime.params --write-docs``.
DOC_TABLES = {
    "node.md": (node_only_schema, True),
    "sensors.md": (sensor_schema, True),
    "loops.md": (loop_schema, False),
}
BEGIN = "<!-- parameter table: generated from the schema by `python -m rbd_estimator.runtime.params --write-docs` -->"
END = "<!-- end of the parameter table -->"


def docs_with_tables(text: str, page: str) -> str:
    """``text`` (the page ``page``) with its generated table replaced by the schema's."""
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise ValueError(f"docs/{page} has no '{BEGIN}' … '{END}' block")
    schema, change = DOC_TABLES[page]
    return f"{head}{BEGIN}\n\n{schema().markdown(change=change)}\n{END}{tail}"


def main(argv=None) -> int:
    """``python -m rbd_estimator.runtime.params [--write-docs [DOCS_DIR] | --check-docs [DOCS_DIR]]``: print
    the parameter tables, write them into the docs, or check that the docs hold them (exit 1 if not)."""
    import argparse
    import os
    ap = argparse.ArgumentParser(prog="python -m rbd_estimator.runtime.params", description=main.__doc__)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write-docs", metavar="DOCS_DIR", nargs="?", const="docs")
    mode.add_argument("--check-docs", metavar="DOCS_DIR", nargs="?", const="docs")
    args = ap.parse_args(argv)
    folder = args.write_docs or args.check_docs
    if folder is None:
        for page, (schema, change) in DOC_TABLES.items():
            print(f"## docs/{page}\n\n{schema().markdown(change=change)}")
        return 0
    stale = []
    for page in DOC_TABLES:
        path = os.path.join(folder, page)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        new = docs_with_tables(text, page)
        if new != text:
            stale.append(path)
            if args.write_docs:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(new)
    verb = "rewrote" if args.write_docs else "out of date:"
    print(f"{verb} {', '.join(stale)}" if stale else "the parameter tables are up to date")
    return 1 if stale and args.check_docs else 0


if __name__ == "__main__":
    raise SystemExit(main())
