"""Sensor configuration: which sensors and contacts enter Nori's measurement equation (16).

One schema serves the library and the node. It is written as ROS 2 parameters (``<node>:
ros__parameters:``) and parsed from their flat, dotted form, so a YAML file, a launch file and
``ros2 param set`` all go through :meth:`SensorConfig.from_parameters`. ROS parameters cannot
hold lists of dictionaries, so every group is a list of names plus one sub-dictionary per name::

    floating_base: true
    imu: {frame: root_link, use_angular_acceleration: false}
    ft_sensors: [l_leg_ft_sensor, r_leg_ft_sensor]          # names, aliases or joints in the URDF
    ft: {l_leg_ft_sensor: {topic: /ft/l_leg, force_stddev: 1.0}}
    contacts: [l_foot, r_foot]
    contact: {l_foot: {frame: l_sole, type: full_wrench}}
    load_cells: [l_cells]
    load_cell: {l_cells: {contact: l_foot, positions_x: [...], positions_y: [...]}}
    joint_torque_sensors: [l_knee]
    external_wrenches: [payload]                            # known wrenches, given to every estimate
    external_wrench: {payload: {frame: l_hand}}

Every key is checked: a key under a group must be a field of that group's kind (``contact.FL.mdoe``
is a :class:`ConfigError` naming ``contact.FL.mode``), under a name its list parameter lists.
Top-level keys the sensor schema does not own (the node's parameters, the loop declarations of
:mod:`rbd_estimator.model.loops`) are kept in :attr:`SensorConfig.node`; the reader of those passes
their names as ``node_keys`` (the node and the replay pass ``rbd_estimator.runtime.params.NODE_KEYS``)
and any other top-level key is refused too.

Units: SI. Standard deviations are per axis (N, N·m, m/s², rad/s², N·m or N for joint torques).
Joint positions, velocities and accelerations are inputs, not noisy sensors: they enter the
kinematics and the right-hand side exactly (Nori's inverse-dynamics rows 7q̈).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..errors import ConfigError
from ..model.loops import LOOP_KEYS
from ..schema import Field, Group, Schema, fields_of, parameter, read_fields
from ..sensors import KINDS, ExternalWrench, ForceTorque, Imu, JointTorque, LoadCells, Sensor, unknown_key
from ..yaml_file import name_list, read_yaml

CONTACT_TYPES = ("full_wrench", "point_force", "slippery")
CONTACT_MODES = ("always", "commanded", "detected")
MAX_SWITCHABLE_CONTACTS = 6           # 64 contact subsets, each planned at configure

# The configuration names of the package's sensor kinds (each is one module of rbd_estimator.sensors)
ImuConfig, FTConfig, LoadCellConfig, ExternalWrenchConfig = Imu, ForceTorque, LoadCells, ExternalWrench


@dataclass(frozen=True)
class ContactConfig:
    """A contact on a link or frame: ``full_wrench`` (6 unknowns), ``point_force`` (force at the
    frame origin, 3 unknowns) or ``slippery`` (Nori eq. 23: tangential forces zero; normal force,
    tilting torques and the torque about the normal unknown). The frame's z axis is the normal.

    ``mode`` says when the contact is active: ``always`` (a fixed contact), ``commanded`` (the
    walking controller says so, per tick) or ``detected`` (the normal force that the robot's own
    sensors measure there, ``detect_from``: a sensor under this contact or a force-torque sensor
    above it, crosses ``force_on`` upward / ``force_off`` downward (N) and stays across it for
    ``dwell`` seconds). A contact that is not active has a zero wrench.
    """
    name: str
    frame: str = parameter("link or frame in contact (merged frames such as iCub's `l_sole` too); its z axis is "
                           "the normal")
    type: str = parameter("`full_wrench` (6 unknowns), `point_force` (3: the force at the frame origin) or "
                          "`slippery` (fz, tx, ty, tz; Nori eq. 23)", "full_wrench", choices=CONTACT_TYPES)
    mode: str = parameter("when it is in contact: `always`, `commanded` (the walking controller's contact_command) "
                          "or `detected` (from the normal force its sensors measure), see walking.md", "always",
                          choices=CONTACT_MODES)
    detect_from: str = parameter("with mode `detected`: the sensor under this contact or the force-torque sensor "
                                 "above it that measures its normal force; empty: the nearest", "")
    force_on: float = parameter("with mode `detected`: normal force (N) above which it comes into contact", 40.0,
                                ge=0.0)
    force_off: float = parameter("with mode `detected`: normal force (N) below which it leaves contact "
                                 "(< `force_on`)", 20.0, ge=0.0)
    dwell: float = parameter("with mode `detected`: seconds the force must stay across a threshold", 0.01, ge=0.0)

    @property
    def switchable(self) -> bool:
        return self.mode != "always"


@dataclass(frozen=True, eq=False)
class SensorConfig:
    """The complete sensor and contact set: the floating-base flag, the contacts and a tuple of
    sensors (:class:`~rbd_estimator.sensors.Sensor`, in the order of their slices of the
    measurement vector ``y``: kinds in registry order, then as listed). ``node`` holds node-only
    parameters (topics, filter, timing); the library ignores it. ``joint_acceleration_stddev``,
    ``contact_prior_stddev`` and ``covariance``: the probabilistic model (:data:`LIBRARY`,
    docs/probabilistic_model.md); ``nominal_pose``: ``((joint, position), ...)``, the joints of the
    nominal stance that planning checks which are not at the model's neutral (zero)."""
    floating_base: bool = True
    contacts: tuple[ContactConfig, ...] = ()
    sensors: tuple[Sensor, ...] = ()
    node: dict = field(default_factory=dict)
    joint_acceleration_stddev: float = 0.0
    contact_prior_stddev: float = 1.0e4
    covariance: bool = True
    nominal_pose: tuple = ()

    def __post_init__(self):
        # the measurement vector holds each kind's sensors together, kinds in registry order
        object.__setattr__(self, "sensors", _in_kind_order(tuple(self.sensors)))

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_yaml(cls, path, node_name: str | None = None, node_keys=None) -> "SensorConfig":
        """Read a ROS 2 parameter file (``<node>: ros__parameters: ...``). With several nodes in
        the file, ``node_name`` picks one (``/**`` wildcard sections are merged first).
        ``node_keys``: see :meth:`from_parameters`."""
        doc = read_yaml(path, ConfigError, "parameter file")
        return cls.from_parameters(flatten(ros_parameters(doc, node_name, str(path))), node_keys)

    @classmethod
    def from_dict(cls, params: dict, node_keys=None) -> "SensorConfig":
        """From a nested dictionary (the ``ros__parameters`` content). ``node_keys``: see
        :meth:`from_parameters`."""
        return cls.from_parameters(flatten(params), node_keys)

    @classmethod
    def from_parameters(cls, flat: dict, node_keys=None) -> "SensorConfig":
        """From flat, dotted ROS parameter names (``contact.l_foot.frame`` …).

        Args:
            flat: parameter name → value.
            node_keys: the top-level parameters that belong to the caller, which reads them from
                :attr:`node` (a name ending in ``.`` admits every key under it, e.g. ``ft_offsets.``);
                the node and the replay pass ``rbd_estimator.runtime.params.NODE_KEYS``. A top-level key
                that is neither a sensor kind's, the contacts', a loop declaration's nor one of these
                is a :class:`ConfigError` naming the closest valid key. ``None`` (a library user reading
                the node's parameter file): such keys are kept in :attr:`node` unchecked, for their
                reader to check. Keys under a sensor group or a contact are checked either way.

        Raises:
            ConfigError: naming the offending parameter (and the closest valid one for an unknown key).
        """
        return _Parser(flat, node_keys).config()

    # ------------------------------------------------------------------ sensors by kind
    def of_kind(self, kind: type) -> tuple:
        """The sensors of one kind, in configuration order."""
        return tuple(s for s in self.sensors if type(s) is kind)

    @property
    def imu(self) -> Imu | None:
        return next((s for s in self.sensors if type(s) is Imu), None)

    @property
    def ft_sensors(self) -> tuple[ForceTorque, ...]:
        return self.of_kind(ForceTorque)

    @property
    def load_cells(self) -> tuple[LoadCells, ...]:
        return self.of_kind(LoadCells)

    @property
    def joint_torque_sensors(self) -> tuple[str, ...]:
        """Joint names of the joint-torque sensors."""
        return tuple(s.name for s in self.of_kind(JointTorque))

    @property
    def external_wrenches(self) -> tuple[ExternalWrench, ...]:
        return self.of_kind(ExternalWrench)

    def sensor(self, name: str) -> Sensor:
        for s in self.sensors:
            if s.name == name:
                return s
        raise ConfigError(f"no sensor named '{name}' in the configuration "
                          f"(sensors: {', '.join(s.name for s in self.sensors) or 'none'})")

    def ft(self, name: str) -> ForceTorque:
        s = self.sensor(name)
        if type(s) is not ForceTorque:
            raise ConfigError(f"no force-torque sensor named '{name}' in the configuration")
        return s

    def contact(self, name: str) -> ContactConfig:
        for c in self.contacts:
            if c.name == name:
                return c
        raise ConfigError(f"no contact named '{name}' in the configuration")

    # ------------------------------------------------------------------ variants
    def with_sensor(self, sensor: Sensor) -> "SensorConfig":
        """The same configuration with ``sensor`` replacing the one of the same name (or added,
        after the other sensors of its kind)."""
        if any(s.name == sensor.name for s in self.sensors):
            return replace(self, sensors=tuple(sensor if s.name == sensor.name else s for s in self.sensors))
        return replace(self, sensors=self.sensors + (sensor,))

    def without(self, sensor: str) -> "SensorConfig":
        """The same configuration without one sensor (by name; ``imu`` for the IMU): used to
        prepare plans for sensor dropouts."""
        return replace(self, sensors=tuple(s for s in self.sensors if s.name != sensor))

    def without_kind(self, *kinds) -> "SensorConfig":
        """The same configuration without every sensor of the given kinds."""
        return replace(self, sensors=tuple(s for s in self.sensors if type(s) not in kinds))

    @property
    def switchable_contacts(self) -> tuple[str, ...]:
        """Contacts whose state changes per tick (``commanded`` or ``detected``), in configuration order."""
        return tuple(c.name for c in self.contacts if c.switchable)

    def with_active_contacts(self, active) -> "SensorConfig":
        """The fixed-contact configuration of one contact subset: the contacts in ``active`` (names),
        all ``always``; the sensors under the others are dropped (their contact has no wrench)."""
        active = set(active)
        keep = tuple(replace(c, mode="always") for c in self.contacts if c.name in active)
        names = {c.name for c in keep}
        return replace(self, contacts=keep,
                       sensors=tuple(s for s in self.sensors if getattr(s, "contact", None) in (None, *names)))

    @property
    def sensor_names(self) -> tuple[str, ...]:
        """Every sensor, by name (``imu`` for the IMU), in configuration order."""
        return tuple(s.name for s in self.sensors)

    def to_parameters(self) -> dict:
        """Flat, dotted ROS parameters that :meth:`from_parameters` reads back to this object."""
        out = {"floating_base": self.floating_base, "contacts": [c.name for c in self.contacts],
               "joint_acceleration_stddev": self.joint_acceleration_stddev,
               "contact_prior_stddev": self.contact_prior_stddev, "covariance": self.covariance,
               NOMINAL_JOINTS: [n for n, _ in self.nominal_pose]}
        out.update({f"{NOMINAL_POSE}.{n}": v for n, v in self.nominal_pose})
        for kind in KINDS.values():
            members = self.of_kind(kind)
            if not kind.SINGLE:
                out[kind.LIST] = [s.name for s in members]
            for s in members:
                out.update(s.to_parameters())
        for c in self.contacts:
            out.update({f"contact.{c.name}.{f.name}": getattr(c, f.name) for f in fields(ContactConfig)
                        if f.name != "name"})
        out.update(self.node)
        return out


def _in_kind_order(sensors) -> tuple:
    order = {k: n for n, k in enumerate(KINDS.values())}
    return tuple(sorted(sensors, key=lambda s: order.get(type(s), len(order))))


# ---------------------------------------------------------------------------- parameter files
def ros_parameters(doc, node_name: str | None, source: str) -> dict:
    """The ``ros__parameters`` dictionary of a ROS 2 parameter file's document."""
    if not isinstance(doc, dict) or not doc:
        raise ConfigError(f"parameter file '{source}' must map a node name to 'ros__parameters'")
    merged: dict = {}
    sections = [k for k in doc if isinstance(doc[k], dict) and "ros__parameters" in doc[k]]
    if not sections:
        raise ConfigError(f"parameter file '{source}' has no '<node>: ros__parameters:' section")
    wild = [k for k in sections if k in ("/**", "**")]
    named = [k for k in sections if k not in wild]
    if node_name is not None:
        named = [k for k in named if k.lstrip("/").split("/")[-1] == node_name.lstrip("/").split("/")[-1]]
        if not named and not wild:
            raise ConfigError(f"parameter file '{source}' has no section for node '{node_name}' "
                              f"(sections: {', '.join(sections)})")
    elif len(named) > 1:
        raise ConfigError(f"parameter file '{source}' has sections for several nodes ({', '.join(named)}); "
                          f"pass node_name")
    for k in wild + named:
        merged.update(doc[k]["ros__parameters"] or {})
    return merged


def flatten(params: dict, prefix: str = "") -> dict:
    """Nested parameter dictionary → flat dotted names (ROS 2's own representation)."""
    flat = {}
    for key, value in (params or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


# ---------------------------------------------------------------------------- the schema
#: The library's parameters besides the sensor kinds' and the contacts' fields
LIBRARY = {
    "floating_base": Field("bool", "free-flyer base (needs an IMU) or fixed base", True),
    "contacts": Field("string_array", "contact names, each described by `contact.<name>.*`", ()),
    "joint_torque_stddev": Field("double", "standard deviation (N·m) of every joint-torque sensor without its own "
                                 "`joint_torque.<name>.stddev`", 0.1, gt=0.0),
    "joint_acceleration_stddev": Field("double", "standard deviation (rad/s², m/s²) of the joint accelerations "
                                       "given to the estimator: 0 takes them as exact inputs (the fastest tick); "
                                       "above 0 they are a measurement, estimated with the other unknowns "
                                       "(docs/probabilistic_model.md)", 0.0, ge=0.0),
    "contact_prior_stddev": Field("double", "standard deviation of the zero-mean prior on every contact-wrench "
                                  "component, in units of the robot's weight (force: N per m·g, torque: N·m "
                                  "per m·g·1 m): weak, it keeps every pose finite (docs/probabilistic_model.md)",
                                  1.0e4, gt=0.0),
    "covariance": Field("bool", "compute the posterior covariance of the torques and contact wrenches every "
                        "tick (false: the mean alone)", True),
    "nominal_pose_joints": Field("string_array", "joints of the nominal stance that are not at the model's neutral "
                                 "(zero), each positioned by `nominal_pose.<joint>`; planning checks which contact "
                                 "components the sensors leave to the prior at that stance "
                                 "(docs/probabilistic_model.md)", ()),
}
#: The nominal stance's joint positions: ``nominal_pose.<joint>`` for every joint ``nominal_pose_joints`` lists
NOMINAL_POSE, NOMINAL_JOINTS = "nominal_pose", "nominal_pose_joints"
NOMINAL_POSITION = Field("double", "position (rad, m) of the joint in the nominal stance", 0.0)


def sensor_schema() -> Schema:
    """The parameters :meth:`SensorConfig.from_parameters` reads: :data:`LIBRARY`, the contacts'
    fields (:class:`ContactConfig`) per name in ``contacts``, and every registered kind's (its
    list parameter and its fields per listed name; a single sensor's, the IMU's, when any
    ``imu.*`` is given), in registry order."""
    entries = [("floating_base", LIBRARY["floating_base"]), ("contacts", LIBRARY["contacts"]),
               ("joint_acceleration_stddev", LIBRARY["joint_acceleration_stddev"]),
               ("contact_prior_stddev", LIBRARY["contact_prior_stddev"]), ("covariance", LIBRARY["covariance"]),
               (NOMINAL_JOINTS, LIBRARY[NOMINAL_JOINTS]),
               Group(NOMINAL_POSE, {"": NOMINAL_POSITION}, names=NOMINAL_JOINTS, placeholder="joint"),
               Group("contact", fields_of(ContactConfig), names="contacts")]
    for kind in KINDS.values():
        if kind.SINGLE:
            entries.append(Group(kind.GROUP, kind.parameters()))
            continue
        described = f"{kind.LIST_DESCRIPTION}; each described by `{kind.GROUP}.<name>.*`"
        entries += [(kind.LIST, Field("string_array", described, ())),
                    Group(kind.GROUP, kind.parameters(), names=kind.LIST)]
        if kind is JointTorque:
            entries.append(("joint_torque_stddev", LIBRARY["joint_torque_stddev"]))
    return Schema(tuple(entries))


def library_keys() -> set[str]:
    """Top-level names of the library's parameters: these, and every registered kind's."""
    return (set(LIBRARY) | {"contact", NOMINAL_POSE} | {k.LIST for k in KINDS.values()}
            | {k.GROUP for k in KINDS.values()})


# ---------------------------------------------------------------------------- parsing
def _admits(keys, key: str) -> bool:
    """``key`` is one of ``keys`` or under one of them that ends in ``.``."""
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in keys)


class _Parser:
    """Reads the flat parameters, naming the offending parameter in every error."""

    def __init__(self, flat: dict, node_keys=None):
        self.flat = dict(flat)
        self.top = library_keys()
        self.node_keys = None if node_keys is None else tuple(node_keys)

    def check_top_level(self) -> None:
        """A dotted key under a list or scalar parameter (``contacts.FL.mode``) is unknown; with
        ``node_keys``, so is a top-level key that no one reads."""
        groups = {k.GROUP for k in KINDS.values()} | {"contact", NOMINAL_POSE}
        for key, value in self.flat.items():
            head, _, rest = key.partition(".")
            if head in self.top:
                if (rest and head not in groups) or (not rest and head in groups and value is not None):
                    raise unknown_key(key, self.valid_keys(key))   # contacts.FL.mode; contact: [FL]
                continue
            if self.node_keys is not None and not _admits(LOOP_KEYS + self.node_keys, key):
                raise unknown_key(key, self.valid_keys(key))

    def valid_keys(self, key: str) -> list[str]:
        """Concrete keys that would be accepted, for the closest-match hint (prefixes completed
        with the rest of ``key``)."""
        valid = [k for k in self.top if k not in {kd.GROUP for kd in KINDS.values()} | {"contact", NOMINAL_POSE}]
        valid += [f"{kd.GROUP}.{f}" for kd in KINDS.values() if kd.SINGLE for f in kd.parameters()]
        rest = key.partition(".")[2]
        for k in LOOP_KEYS + (self.node_keys or ()):
            valid.append(k + rest if k.endswith(".") else k)
        return valid

    def get(self, name):
        """A :data:`LIBRARY` parameter's value (its default when not given), or None for an
        optional one not given."""
        value = self.flat.get(name)
        return LIBRARY[name].default if value is None else LIBRARY[name].value(name, value)

    def groups(self, group: str, listed: tuple, list_key: str) -> dict:
        """``{name: {field: value}}`` of the ``<group>.<name>.<field>`` parameters; a name not in
        ``listed`` (the ``list_key`` parameter) is an error naming it."""
        out: dict = {n: {} for n in listed}
        for key, value in self.flat.items():
            parts = key.split(".")
            if parts[0] != group:
                continue
            if len(parts) != 3:
                raise unknown_key(key, [f"{group}.{n}.{f}" for n in listed for f in ("frame", "topic")])
            if parts[1] not in out:
                close = difflib.get_close_matches(parts[1], listed, n=1)
                raise ConfigError(f"parameter '{key}': '{parts[1]}' is not listed in '{list_key}' "
                                  f"({', '.join(listed) or 'empty'}" + (f"; did you mean '{close[0]}'?" if close else "")
                                  + f"): add it to '{list_key}' or remove the parameters under '{group}.{parts[1]}'")
            out[parts[1]][parts[2]] = value
        return out

    def config(self) -> SensorConfig:
        self.check_top_level()
        fb = self.get("floating_base")
        contacts = self.contacts()
        names = {c.name for c in contacts}
        sensors = []
        jt_stddev = self.flat.get("joint_torque_stddev")
        if jt_stddev is not None:
            jt_stddev = self.get("joint_torque_stddev")
        for kind in KINDS.values():
            if kind.SINGLE:                       # ``imu: {...}``; an empty ``imu:`` is no IMU
                values = {k[len(kind.GROUP) + 1:]: v for k, v in self.flat.items() if k.startswith(kind.GROUP + ".")}
                if values:
                    sensors.append(kind.parse(kind.GROUP, values))
                continue
            listed = self.names(kind.LIST)
            for n, values in self.groups(kind.GROUP, listed, kind.LIST).items():
                if kind is JointTorque and jt_stddev is not None:
                    values.setdefault("stddev", jt_stddev)
                sensor = kind.parse(n, values)
                contact = getattr(sensor, "contact", None)
                if contact is not None and contact not in names:
                    raise ConfigError(f"parameter '{sensor.prefix}contact': '{contact}' is not a configured contact "
                                      f"(contacts: {sorted(names)})")
                sensors.append(sensor)
        taken = [s.name for s in sensors]
        twice = sorted({n for n in taken if taken.count(n) > 1})
        if twice:
            raise ConfigError(f"sensor name(s) {twice} used by two sensors; every sensor needs its own name")
        return SensorConfig(floating_base=fb, contacts=contacts, sensors=tuple(sensors),
                            node={k: v for k, v in self.flat.items() if k.split(".")[0] not in self.top},
                            joint_acceleration_stddev=float(self.get("joint_acceleration_stddev")),
                            contact_prior_stddev=float(self.get("contact_prior_stddev")),
                            covariance=bool(self.get("covariance")), nominal_pose=self.nominal_pose())

    def nominal_pose(self) -> tuple:
        """``((joint, position), ...)`` of ``nominal_pose_joints`` and their ``nominal_pose.<joint>``
        (default 0); a position of a joint not listed is an error naming it. Whether the joints are
        the robot's is checked at planning (:func:`nominal_positions`)."""
        listed = self.names(NOMINAL_JOINTS)
        values = {n: NOMINAL_POSITION.default for n in listed}
        for key, value in self.flat.items():
            if not key.startswith(NOMINAL_POSE + "."):
                continue
            joint = key[len(NOMINAL_POSE) + 1:]
            if joint not in values:
                close = difflib.get_close_matches(joint, listed, n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise ConfigError(f"parameter '{key}': joint '{joint}' is not listed in '{NOMINAL_JOINTS}' "
                                  f"({', '.join(listed) or 'empty'}{hint}): add it to '{NOMINAL_JOINTS}' or remove '{key}'")
            values[joint] = NOMINAL_POSITION.value(key, value)
        return tuple(values.items())

    def contacts(self) -> tuple[ContactConfig, ...]:
        out = []
        known = fields_of(ContactConfig)
        for n, values in self.groups("contact", self.names("contacts"), "contacts").items():
            out.append(self.check_contact(ContactConfig(name=n, **read_fields(known, values, f"contact.{n}."))))
        switchable = [c.name for c in out if c.switchable]
        if len(switchable) > MAX_SWITCHABLE_CONTACTS:
            raise ConfigError(f"parameter 'contacts': {len(switchable)} switchable contacts ({', '.join(switchable)}); "
                              f"at most {MAX_SWITCHABLE_CONTACTS} (each of their subsets is planned at configure)")
        return tuple(out)

    def names(self, key: str) -> tuple[str, ...]:
        return name_list(self.flat.get(key, []), key, ConfigError)

    @staticmethod
    def check_contact(c: ContactConfig) -> ContactConfig:
        """The detection thresholds and the mode of one contact (each value's type and range are
        the schema's, checked before)."""
        p = f"parameter 'contact.{c.name}."
        if not c.force_off < c.force_on:
            raise ConfigError(f"{p}force_on' and '.force_off' must be finite with 0 <= force_off < force_on (N, "
                              f"the hysteresis band), got {c.force_on!r} and {c.force_off!r}")
        if c.detect_from and c.mode != "detected":
            raise ConfigError(f"{p}detect_from' is set but 'contact.{c.name}.mode' is '{c.mode}', not 'detected'")
        return c


def nominal_positions(config: SensorConfig, joint_names) -> np.ndarray:
    """The nominal stance's joint positions in the order of ``joint_names`` (``q``): the model's
    neutral (zero) but for :attr:`SensorConfig.nominal_pose`. Raises :class:`ConfigError` naming a
    joint that is not among ``joint_names`` (and the closest that is)."""
    index = {n: k for k, n in enumerate(joint_names)}
    q = np.zeros(len(index))
    for joint, value in config.nominal_pose:
        if joint not in index:
            close = difflib.get_close_matches(joint, list(index), n=1)
            raise ConfigError(f"parameter '{NOMINAL_JOINTS}': '{joint}' is not a moving joint of the robot"
                              + (f" (did you mean '{close[0]}'?)" if close else ""))
        q[index[joint]] = value
    return q
