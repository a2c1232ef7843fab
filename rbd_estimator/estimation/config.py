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

Every key is checked: a key under a group must be a field of that group (``contact.FL.mdoe`` is a
:class:`ConfigError` naming ``contact.FL.mode``), under a name its list parameter lists. Top-level
keys the sensor schema does not own (the node's parameters, the loop declarations of
:mod:`rbd_estimator.model.loops`) are kept in :attr:`SensorConfig.node`; the reader of those passes
their names as ``node_keys`` (the node and the replay pass ``rbd_estimator.ros.params.NODE_KEYS``)
and any other top-level key is refused too.

Units: SI. Standard deviations are per axis (N, N·m, m/s², rad/s², N·m or N for joint torques).
Joint positions, velocities and accelerations are inputs, not noisy sensors: they enter the
kinematics and the right-hand side exactly (Nori's inverse-dynamics rows 7q̈).
"""
from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from ..errors import ConfigError
from ..model.loops import LOOP_KEYS
from ..yaml_file import name_list, read_yaml, unknown_parameter

CONTACT_TYPES = ("full_wrench", "point_force", "slippery")
CONTACT_MODES = ("always", "commanded", "detected")
MAX_SWITCHABLE_CONTACTS = 6           # 64 contact subsets, each planned at configure
FT_FRAMES = ("child", "parent", "sensor")
FT_DIRECTIONS = ("child_to_parent", "parent_to_child")


@dataclass(frozen=True)
class ImuConfig:
    """An IMU rigidly attached to ``frame`` (``sensor_msgs/Imu`` conventions: proper linear
    acceleration and angular velocity in the IMU frame, orientation of the IMU frame in a z-up
    world). ``use_angular_acceleration`` adds the angular-acceleration rows (the node derives it
    from the gyro with the same filter as the joint accelerations)."""
    frame: str
    topic: str = "imu"
    use_angular_acceleration: bool = False
    linear_acceleration_stddev: float = 0.05
    angular_acceleration_stddev: float = 0.5
    timeout: float = 0.05


@dataclass(frozen=True)
class FTConfig:
    """A six-axis force-torque sensor. ``name`` is a sensor name, alias or joint of the URDF;
    ``joint`` declares a sensor the URDF does not describe (on a fixed joint), with ``frame`` and
    ``measure_direction`` following the SDF ``force_torque`` element."""
    name: str
    topic: str = ""
    joint: str = ""
    frame: str = ""
    measure_direction: str = ""
    force_stddev: float = 1.0
    torque_stddev: float = 0.05
    timeout: float = 0.05


@dataclass(frozen=True)
class ContactConfig:
    """A contact on a link or frame: ``full_wrench`` (6 unknowns), ``point_force`` (force at the
    frame origin, 3 unknowns) or ``slippery`` (Nori eq. 23: tangential forces zero; normal force,
    tilting torques and the torque about the normal unknown). The frame's z axis is the normal.

    ``mode`` says when the contact is active: ``always`` (a fixed contact), ``commanded`` (the
    walking controller says so, per tick) or ``detected`` (the normal force that the robot's own
    sensors measure there, ``detect_from``: a load-cell group of this contact or a force-torque
    sensor above it, crosses ``force_on`` upward / ``force_off`` downward (N) and stays across it
    for ``dwell`` seconds). A contact that is not active has a zero wrench.
    """
    name: str
    frame: str
    type: str = "full_wrench"
    mode: str = "always"
    detect_from: str = ""
    force_on: float = 40.0
    force_off: float = 20.0
    dwell: float = 0.01

    @property
    def switchable(self) -> bool:
        return self.mode != "always"


@dataclass(frozen=True, eq=False)
class LoadCellConfig:
    """N single-axis load cells under a contact frame, measuring force along the frame's z axis at
    ``positions`` (N × 2, metres, in the contact frame): they give fz, tx, ty (Nori eq. 18)."""
    name: str
    contact: str
    positions: np.ndarray
    topic: str = ""
    stddev: float = 1.0
    timeout: float = 0.05


@dataclass(frozen=True)
class ExternalWrenchConfig:
    """A known external wrench on a link or frame (Nori eqs. 7–8 with a nonzero ``y``: a payload,
    a tool, a measured interaction), given to every estimate in that frame, torque about its origin."""
    name: str
    frame: str
    topic: str = ""


@dataclass(frozen=True, eq=False)
class SensorConfig:
    """The complete sensor and contact set. ``node`` holds the top-level parameters the sensor
    schema does not own: the node's (topics, filter, timing) and the loop declarations
    (:data:`~rbd_estimator.model.loops.LOOP_KEYS`, read by the loop estimator)."""
    floating_base: bool = True
    imu: ImuConfig | None = None
    ft_sensors: tuple[FTConfig, ...] = ()
    contacts: tuple[ContactConfig, ...] = ()
    load_cells: tuple[LoadCellConfig, ...] = ()
    joint_torque_sensors: tuple[str, ...] = ()
    joint_torque_stddev: float = 0.1
    external_wrenches: tuple[ExternalWrenchConfig, ...] = ()
    node: dict = field(default_factory=dict)

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
                the node and the replay pass ``rbd_estimator.ros.params.NODE_KEYS``. A top-level key
                that is neither the sensor schema's, a loop declaration's nor one of these is a
                :class:`ConfigError` naming the closest valid key. ``None`` (a library user reading
                the node's parameter file): such keys are kept in :attr:`node` unchecked, for their
                reader to check. Keys under a sensor group are checked either way.

        Raises:
            ConfigError: naming the offending parameter (and the closest valid one for an unknown key).
        """
        return _Parser(flat, node_keys).config()

    # ------------------------------------------------------------------ queries
    def ft(self, name: str) -> FTConfig:
        for s in self.ft_sensors:
            if s.name == name:
                return s
        raise ConfigError(f"no force-torque sensor named '{name}' in the configuration")

    def contact(self, name: str) -> ContactConfig:
        for c in self.contacts:
            if c.name == name:
                return c
        raise ConfigError(f"no contact named '{name}' in the configuration")

    def without(self, sensor: str) -> "SensorConfig":
        """The same configuration without one sensor (``imu``, an FT sensor, a load-cell group or
        a joint-torque sensor): used to prepare plans for sensor dropouts."""
        if sensor == "imu":
            return replace(self, imu=None)
        return replace(self,
                       ft_sensors=tuple(s for s in self.ft_sensors if s.name != sensor),
                       load_cells=tuple(c for c in self.load_cells if c.name != sensor),
                       joint_torque_sensors=tuple(j for j in self.joint_torque_sensors if j != sensor))

    @property
    def switchable_contacts(self) -> tuple[str, ...]:
        """Contacts whose state changes per tick (``commanded`` or ``detected``), in configuration order."""
        return tuple(c.name for c in self.contacts if c.switchable)

    def with_active_contacts(self, active) -> "SensorConfig":
        """The fixed-contact configuration of one contact subset: the contacts in ``active`` (names),
        all ``always``; the load cells of the others are dropped (their contact has no wrench)."""
        active = set(active)
        keep = tuple(replace(c, mode="always") for c in self.contacts if c.name in active)
        names = {c.name for c in keep}
        return replace(self, contacts=keep, load_cells=tuple(lc for lc in self.load_cells if lc.contact in names))

    @property
    def sensor_names(self) -> tuple[str, ...]:
        """Every sensor that can go missing, by name (``imu`` for the IMU)."""
        return ((("imu",) if self.imu else ()) + tuple(s.name for s in self.ft_sensors)
                + tuple(c.name for c in self.load_cells) + tuple(self.joint_torque_sensors))

    def to_parameters(self) -> dict:
        """Flat, dotted ROS parameters that :meth:`from_parameters` reads back to this object."""
        out = {"floating_base": self.floating_base,
               "ft_sensors": [s.name for s in self.ft_sensors],
               "contacts": [c.name for c in self.contacts],
               "load_cells": [c.name for c in self.load_cells],
               "joint_torque_sensors": list(self.joint_torque_sensors),
               "joint_torque_stddev": self.joint_torque_stddev}
        if self.imu is not None:
            out.update({f"imu.{f.name}": getattr(self.imu, f.name) for f in fields(ImuConfig)})
        for s in self.ft_sensors:
            out.update({f"ft.{s.name}.{f.name}": getattr(s, f.name) for f in fields(FTConfig) if f.name != "name"})
        for c in self.contacts:
            out.update({f"contact.{c.name}.{f.name}": getattr(c, f.name) for f in fields(ContactConfig)
                        if f.name != "name"})
        if self.external_wrenches:
            out["external_wrenches"] = [w.name for w in self.external_wrenches]
        for w in self.external_wrenches:
            out.update({f"external_wrench.{w.name}.frame": w.frame, f"external_wrench.{w.name}.topic": w.topic})
        for c in self.load_cells:
            out.update({f"load_cell.{c.name}.contact": c.contact, f"load_cell.{c.name}.topic": c.topic,
                        f"load_cell.{c.name}.stddev": c.stddev, f"load_cell.{c.name}.timeout": c.timeout,
                        f"load_cell.{c.name}.positions_x": [float(x) for x in c.positions[:, 0]],
                        f"load_cell.{c.name}.positions_y": [float(y) for y in c.positions[:, 1]]})
        out.update(self.node)
        return out


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


# ---------------------------------------------------------------------------- parsing
#: list parameter → (group of its per-name sub-dictionaries, their dataclass, what a name is)
_GROUPS = {"ft_sensors": ("ft", FTConfig, "force-torque sensor"),
           "contacts": ("contact", ContactConfig, "contact"),
           "load_cells": ("load_cell", LoadCellConfig, "load-cell group"),
           "external_wrenches": ("external_wrench", ExternalWrenchConfig, "external wrench")}
#: top-level keys that hold a value (not a group)
_SCALARS = ("floating_base", "joint_torque_sensors", "joint_torque_stddev") + tuple(_GROUPS)
_TOP = set(_SCALARS) | {"imu"} | {g[0] for g in _GROUPS.values()}


def _group_fields(cls) -> tuple[str, ...]:
    """The parameter names inside one sub-dictionary (a load-cell group gives ``positions`` as
    ``positions_x`` and ``positions_y``)."""
    names = tuple(f.name for f in fields(cls) if f.name not in ("name", "positions"))
    return names + (("positions_x", "positions_y") if cls is LoadCellConfig else ())


def _admits(keys, key: str) -> bool:
    """``key`` is one of ``keys`` or under one of them that ends in ``.``."""
    return any(key == k or (k.endswith(".") and key.startswith(k)) for k in keys)


class _Parser:
    """Reads the flat parameters, naming the offending parameter in every error."""

    def __init__(self, flat: dict, node_keys=None):
        self.flat = dict(flat)
        self.node_keys = None if node_keys is None else tuple(node_keys)
        self.used: set[str] = set()

    def check_keys(self) -> None:
        """Every key is read by someone: a field of its group under a listed name, a top-level key
        of the sensor schema or of the loop declarations, or one of ``node_keys``."""
        listed = {group: (key, self.names(key), what) for key, (group, _, what) in _GROUPS.items()}
        group_fields = {group: _group_fields(cls) for group, cls, _ in _GROUPS.values()}
        group_fields["imu"] = _group_fields(ImuConfig)
        for key, value in self.flat.items():
            head, _, rest = key.partition(".")
            if head == "imu" and rest:
                if rest not in group_fields["imu"]:
                    raise unknown_parameter(key, [f"imu.{f}" for f in group_fields["imu"]], ConfigError)
            elif head in listed and rest:
                list_key, names, what = listed[head]
                name, _, field_ = rest.rpartition(".")
                if not name:
                    raise unknown_parameter(key, [f"{head}.{n}.{f}" for n in names for f in group_fields[head]]
                                            + [f"{head}.{rest}.{f}" for f in group_fields[head]], ConfigError)
                if name not in names:
                    close = difflib.get_close_matches(name, names, n=1)
                    raise ConfigError(
                        f"parameter '{key}' describes the {what} '{name}', which '{list_key}' does not list "
                        f"({', '.join(names) or 'none'}" + (f"; did you mean '{close[0]}'?" if close else "")
                        + f"): add '{name}' to '{list_key}' or remove the parameters under '{head}.{name}'")
                if field_ not in group_fields[head]:
                    raise unknown_parameter(key, [f"{head}.{name}.{f}" for f in group_fields[head]], ConfigError)
            elif key in _SCALARS or (key in _TOP and value is None):     # ``imu:`` with nothing under it
                continue
            elif head in _TOP or (self.node_keys is not None and not _admits(LOOP_KEYS + self.node_keys, key)):
                raise unknown_parameter(key, self.valid_keys(key, listed, group_fields), ConfigError)

    def valid_keys(self, key: str, listed: dict, group_fields: dict) -> list[str]:
        """Every concrete key that would be accepted (prefixes completed with the rest of ``key``)."""
        valid = list(_SCALARS) + [f"imu.{f}" for f in group_fields["imu"]]
        valid += [f"{g}.{n}.{f}" for g, (_, names, _) in listed.items() for n in names for f in group_fields[g]]
        rest = key.partition(".")[2]
        for k in LOOP_KEYS + (self.node_keys or ()):
            valid.append(k + rest if k.endswith(".") else k)
        return valid

    def get(self, name, default=None, kind=None):
        self.used.add(name)
        value = self.flat.get(name, default)
        if kind is None or value is None:
            return value
        return _convert(name, value, kind)

    def group(self, prefix: str, cls) -> dict:
        """The fields of ``cls`` present under ``prefix.`` (e.g. ``contact.l_foot.``)."""
        kw = {}
        for f in fields(cls):
            key = f"{prefix}.{f.name}"
            if f.name != "name" and key in self.flat:
                kind = {"float": float, "bool": bool, "str": str}.get(str(f.type))
                kw[f.name] = self.get(key, kind=kind)
        return kw

    def config(self) -> SensorConfig:
        self.check_keys()
        fb = self.get("floating_base", True, bool)
        imu = None
        if any(k.startswith("imu.") for k in self.flat):
            kw = self.group("imu", ImuConfig)
            if not kw.get("frame"):
                raise ConfigError("parameter 'imu.frame' is required when an IMU is configured")
            imu = ImuConfig(**kw)
        ft = tuple(FTConfig(name=n, **self.group(f"ft.{n}", FTConfig)) for n in self.names("ft_sensors"))
        for s in ft:
            if s.frame and s.frame not in FT_FRAMES:
                raise ConfigError(f"parameter 'ft.{s.name}.frame': '{s.frame}' is not one of {FT_FRAMES}")
            if s.measure_direction and s.measure_direction not in FT_DIRECTIONS:
                raise ConfigError(f"parameter 'ft.{s.name}.measure_direction': '{s.measure_direction}' "
                                  f"is not one of {FT_DIRECTIONS}")
        contacts = []
        for n in self.names("contacts"):
            kw = self.group(f"contact.{n}", ContactConfig)
            if not kw.get("frame"):
                raise ConfigError(f"parameter 'contact.{n}.frame' is required (the link or frame in contact)")
            if kw.get("type", "full_wrench") not in CONTACT_TYPES:
                raise ConfigError(f"parameter 'contact.{n}.type': '{kw['type']}' is not one of {CONTACT_TYPES}")
            contacts.append(self.check_contact(ContactConfig(name=n, **kw)))
        switchable = [c.name for c in contacts if c.switchable]
        if len(switchable) > MAX_SWITCHABLE_CONTACTS:
            raise ConfigError(f"parameter 'contacts': {len(switchable)} switchable contacts ({', '.join(switchable)}); "
                              f"at most {MAX_SWITCHABLE_CONTACTS} (each of their subsets is planned at configure)")
        cells = tuple(self.load_cell(n, {c.name for c in contacts}) for n in self.names("load_cells"))
        external = []
        for n in self.names("external_wrenches"):
            kw = self.group(f"external_wrench.{n}", ExternalWrenchConfig)
            if not kw.get("frame"):
                raise ConfigError(f"parameter 'external_wrench.{n}.frame' is required (the link or frame it acts on)")
            external.append(ExternalWrenchConfig(name=n, **kw))
        cfg = SensorConfig(
            floating_base=fb, imu=imu, ft_sensors=ft, contacts=tuple(contacts), load_cells=cells,
            joint_torque_sensors=self.names("joint_torque_sensors"),
            joint_torque_stddev=self.get("joint_torque_stddev", 0.1, float),
            external_wrenches=tuple(external),
            node={k: v for k, v in self.flat.items() if k.split(".")[0] not in _TOP})
        self.check_stddevs(cfg)
        return cfg

    def names(self, key: str) -> tuple[str, ...]:
        return name_list(self.get(key, []), key, ConfigError)

    def load_cell(self, n: str, contacts: set) -> LoadCellConfig:
        kw = self.group(f"load_cell.{n}", LoadCellConfig)
        kw.pop("positions", None)
        contact = kw.get("contact")
        if contact not in contacts:
            raise ConfigError(f"parameter 'load_cell.{n}.contact': '{contact}' is not a configured contact "
                              f"(contacts: {sorted(contacts)})")
        xs = self.get(f"load_cell.{n}.positions_x", None, list)
        ys = self.get(f"load_cell.{n}.positions_y", None, list)
        if not xs or ys is None or len(xs) != len(ys):
            raise ConfigError(f"parameters 'load_cell.{n}.positions_x' and '.positions_y' must be two lists of "
                              f"the same, non-zero length (metres, in the contact frame)")
        return LoadCellConfig(name=n, positions=np.column_stack([xs, ys]).astype(float), **kw)

    @staticmethod
    def check_contact(c: ContactConfig) -> ContactConfig:
        """The mode and the detection thresholds of one contact (N, s)."""
        p = f"parameter 'contact.{c.name}."
        if c.mode not in CONTACT_MODES:
            raise ConfigError(f"{p}mode': '{c.mode}' is not one of {CONTACT_MODES}")
        if not (math.isfinite(c.force_off) and math.isfinite(c.force_on) and 0.0 <= c.force_off < c.force_on):
            raise ConfigError(f"{p}force_on' and '.force_off' must be finite with 0 <= force_off < force_on (N, "
                              f"the hysteresis band), got {c.force_on!r} and {c.force_off!r}")
        if not (math.isfinite(c.dwell) and c.dwell >= 0.0):
            raise ConfigError(f"{p}dwell' must be a finite number >= 0 (s), got {c.dwell!r}")
        if c.detect_from and c.mode != "detected":
            raise ConfigError(f"{p}detect_from' is set but 'contact.{c.name}.mode' is '{c.mode}', not 'detected'")
        return c

    @staticmethod
    def check_stddevs(cfg: SensorConfig) -> None:
        groups = [("", cfg)] + ([("imu.", cfg.imu)] if cfg.imu else [])
        groups += [(f"ft.{s.name}.", s) for s in cfg.ft_sensors]
        groups += [(f"load_cell.{c.name}.", c) for c in cfg.load_cells]
        for prefix, obj in groups:
            for f in fields(obj):
                if f.name.endswith("stddev") or f.name == "timeout":
                    v = getattr(obj, f.name)
                    if not (math.isfinite(v) and v > 0.0):
                        raise ConfigError(f"parameter '{prefix}{f.name}' must be a finite number > 0, got {v!r}")


def _convert(name: str, value, kind):
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"parameter '{name}' must be true or false, got {value!r}")
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"parameter '{name}' must be a number, got {value!r}")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"parameter '{name}' must be a string, got {value!r}")
        return value
    if kind is list:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise ConfigError(f"parameter '{name}' must be a list of numbers, got {value!r}")
        try:
            arr = [float(v) for v in value]
        except (TypeError, ValueError):
            raise ConfigError(f"parameter '{name}' must be a list of numbers, got {value!r}") from None
        if not all(math.isfinite(v) for v in arr):
            raise ConfigError(f"parameter '{name}' has a non-finite value")
        return arr
    return value
