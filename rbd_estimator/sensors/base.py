"""The one interface every sensor kind implements, and the registry that lists the kinds.

A sensor kind is a frozen dataclass deriving from :class:`Sensor`: its fields are its parameters
(``<group>.<name>.<field>`` in the parameter files), each declared with
:func:`~rbd_estimator.schema.parameter` (description, range, allowed values: the one schema that the
parser, the node's declared ROS parameters and the docs' tables read), and its methods are
everything the package needs to know about it (iDynTree's ``Sensor`` plays this role for BERDY):

* :meth:`Sensor.check` validates what the schema cannot: required fields, consistency between
  fields (errors name the parameter);
* :meth:`Sensor.rows` writes its measurement rows of Nori's eq. (16) on the unknowns of the
  system, whitened by its noise, through a :class:`RowWriter` that the estimation layer provides;
* :attr:`Sensor.size` and :meth:`Sensor.labels` describe its slice of the **one measurement
  vector** ``y`` that both ticks take: the slices of all sensors, in configuration order;
* :meth:`Sensor.write` turns one reading (any documented form) into that slice;
* :attr:`Sensor.MESSAGE` and :attr:`Sensor.DECODER` name its ROS message and how its bytes are
  decoded into the slice;
* :meth:`Sensor.contact_normal_force` (optional) says how it measures a contact's normal force,
  for contact detection.

A new kind is one module: subclass :class:`Sensor` and decorate it with :func:`register` (a test
or a user package may do so too). This module imports nothing from the estimation layer.
"""
from __future__ import annotations

import functools
import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar, Protocol

import numpy as np

from ..errors import ConfigError
from ..schema import Field, fields_of, parameter, read_fields, undescribed
from ..yaml_file import unknown_parameter

# ROS message decoders the runtime knows (the CDR layout a slice is read from)
IMU_MESSAGE = "imu"                 # sensor_msgs/Imu: [quat xyzw, ω, specific force]
WRENCH_MESSAGE = "wrench"           # geometry_msgs/WrenchStamped: [fx, fy, fz, tx, ty, tz]
ARRAY_MESSAGE = "float64_array"     # std_msgs/Float64MultiArray: the slice's values in order
JOINT_EFFORT = "joint_effort"       # sensor_msgs/JointState effort of the sensor's joint


class RowWriter(Protocol):
    """What a sensor writes its rows with (the estimation layer's :class:`~rbd_estimator.estimation.
    layout.SystemLayout`). Columns are unknowns of Nori's ``d``: ``col('a', body)`` the spatial
    acceleration of a body (6, Featherstone ``[ω̇; v̇]``, body coordinates), ``col('f', body)`` the
    wrench its joint transmits (6, ``[n; f]``, parent → child, body coordinates), ``col('tau',
    joint)`` a joint torque, ``col('h', contact)`` the free components of a contact wrench."""

    model: Any

    def frame(self, name: str, parameter: str): ...
    def col(self, kind: str, owner: str) -> int: ...
    def contact(self, name: str, parameter: str): ...
    def soft(self, sensor: str, labels) -> int: ...
    def block(self, row0: int, col0: int, M: np.ndarray, scale: float = 1.0) -> None: ...
    def measured(self, row: int, entry: int, coef: float) -> None: ...
    def bias(self, row: int, source: str, entry: int, coef: float) -> None: ...
    acceleration_stddev: float
    def known_wrench(self, frame, entry: int) -> None: ...


@dataclass(frozen=True)
class Sensor(ABC):
    """A sensor of one kind (a frozen dataclass; ``name`` first). Class attributes declare the kind:

    ``LIST`` the list parameter naming the sensors (``ft_sensors``) and ``LIST_DESCRIPTION`` its
    description, ``GROUP`` the per-sensor sub-dictionary (``ft``), ``KEYWORD`` the keyword of :meth:`Estimator.estimate` that takes the
    readings of all sensors of the kind (None: only through ``readings=`` or the vector ``y``),
    ``SINGLE`` at most one of the kind, given as one reading rather than a list (the IMU),
    ``MESSAGE``/``DECODER`` the ROS message type and its decoder, ``DROPPABLE`` whether an
    estimate may go on without it when it stops arriving, ``BASE_MOTION`` whether its slice starts
    with the base orientation quaternion and angular velocity (the IMU: the kinematics reads it)."""

    name: str

    LIST: ClassVar[str] = ""
    LIST_DESCRIPTION: ClassVar[str] = ""
    GROUP: ClassVar[str] = ""
    KEYWORD: ClassVar[str | None] = None
    SINGLE: ClassVar[bool] = False
    MESSAGE: ClassVar[str] = "std_msgs/msg/Float64MultiArray"
    DECODER: ClassVar[str] = ARRAY_MESSAGE
    DROPPABLE: ClassVar[bool] = True
    BASE_MOTION: ClassVar[bool] = False

    # ------------------------------------------------------------------ parameters
    @classmethod
    def parameters(cls) -> dict[str, Field]:
        """The kind's parameters (its fields declared with :func:`~rbd_estimator.schema.parameter`),
        by field name; ``<group>`` in a description reads as the kind's ``GROUP``."""
        return {k: replace(f, description=f.description.replace("<group>", cls.GROUP))
                for k, f in fields_of(cls).items()}

    @classmethod
    def parse(cls, name: str, values: dict) -> "Sensor":
        """The sensor ``name`` from its sub-dictionary ``values`` (field → value, as given): every
        key must be a field (else :class:`ConfigError` naming it and the closest field), every
        value of the field's type and range (:meth:`~rbd_estimator.schema.Field.value`)."""
        sensor = cls(name=name, **read_fields(cls.parameters(), values, cls.prefix_of(name)))
        sensor.check()
        return sensor

    @classmethod
    def prefix_of(cls, name: str) -> str:
        """``<group>.<name>.`` (``imu.`` for a single sensor)."""
        return f"{cls.GROUP}." if cls.SINGLE else f"{cls.GROUP}.{name}."

    @property
    def prefix(self) -> str:
        return self.prefix_of(self.name)

    def check(self) -> None:
        """Validate what the schema does not (each value's type and range are checked before):
        :class:`ConfigError` naming the parameter. Default: nothing."""

    def to_parameters(self) -> dict:
        """Flat, dotted parameters that :meth:`parse` reads back."""
        return {f"{self.prefix}{f.name}": _plain(getattr(self, f.name)) for f in fields(self) if f.name != "name"}

    # ------------------------------------------------------------------ the measurement
    @property
    @abstractmethod
    def size(self) -> int:
        """Entries of the sensor's slice of the measurement vector ``y``."""

    def labels(self) -> tuple[str, ...]:
        """A label per entry of the slice (errors and residual names)."""
        return tuple(f"{self.name}[{k}]" for k in range(self.size))

    @abstractmethod
    def rows(self, w: RowWriter) -> None:
        """Write the sensor's rows (Nori eq. 16), whitened: ``(y − model) / σ``."""

    def write(self, value, out: np.ndarray) -> None:
        """One reading in any documented form → ``out`` (the slice), ``ValueError`` naming the
        sensor when it does not fit. Default: ``size`` numbers."""
        vector_into(value, out, self.name)

    def drift_rates(self) -> np.ndarray:
        """The random-walk rate of each entry's offset (the slice's units per √s,
        docs/offsets.md): 0 for an entry whose offset is not tracked. Default: none tracked."""
        return np.zeros(self.size)

    def entry_stddevs(self) -> np.ndarray:
        """The noise standard deviation of each entry of the slice (its units), the scale of a
        tracked offset's initial uncertainty. Default: 1."""
        return np.ones(self.size)

    def contact_normal_force(self, contact: str):
        """``coefficients`` such that the normal force (N, along the contact frame's z) of
        ``contact`` is ``coefficients · slice`` when this sensor measures it directly, or None."""
        return None


def drift_parameter(units: str):
    """The field ``offset_drift`` of a kind whose offsets can be tracked (docs/offsets.md)."""
    return parameter(f"random-walk rate of the reading's offset ({units}/√s): > 0 tracks the offset online from the "
                     f"other sensors (docs/offsets.md); 0: not tracked", 0.0, ge=0.0)


def timeout_parameter(default: float = 0.05):
    """The ``timeout`` field of a kind that the node reads from a topic (s, > 0)."""
    return parameter("s; a sensor with no sample younger than this is missing (node only)", default, gt=0.0)


# ---------------------------------------------------------------------------- the registry
#: kind class by ``LIST`` parameter name, in registration order (the order of ``y``'s slices)
KINDS: dict[str, type[Sensor]] = {}


def register(cls: type[Sensor]) -> type[Sensor]:
    """Add a kind (a class decorator). Its ``LIST`` and ``GROUP`` names must be new, every field
    but ``name`` a parameter declared with :func:`~rbd_estimator.schema.parameter`, and a kind read
    from its own topic (every ``DECODER`` but the joint states' efforts) has ``topic`` and ``timeout``."""
    if not (cls.LIST and cls.GROUP):
        raise TypeError(f"sensor kind {cls.__name__} must set LIST and GROUP")
    if not (cls.SINGLE or cls.LIST_DESCRIPTION):
        raise TypeError(f"sensor kind {cls.__name__} must describe its list parameter '{cls.LIST}' (LIST_DESCRIPTION)")
    bare = undescribed(cls)
    if bare:
        raise TypeError(f"sensor kind {cls.__name__}: field(s) {', '.join(bare)} must be declared with "
                        f"rbd_estimator.schema.parameter(description, default, ...)")
    cls.parameters()                      # every annotation has a parameter type
    if cls.DECODER != JOINT_EFFORT:       # the node and the replay read it from its own topic
        lacking = [f for f in ("topic", "timeout") if f not in fields_of(cls)]
        if lacking:
            raise TypeError(f"sensor kind {cls.__name__}: the node and the replay read it from its own topic "
                            f"and need the parameter(s) {', '.join(lacking)} (topic: a str parameter, empty for "
                            f"'{cls.GROUP}/<name>'; timeout: timeout_parameter())")
    for other in KINDS.values():
        if other is not cls and (cls.LIST in (other.LIST, other.GROUP) or cls.GROUP in (other.LIST, other.GROUP)):
            raise TypeError(f"sensor kind {cls.__name__}: parameter names '{cls.LIST}'/'{cls.GROUP}' are taken "
                            f"by {other.__name__}")
    KINDS[cls.LIST] = cls
    return cls


def unregister(cls: type[Sensor]) -> None:
    """Remove a kind (tests that register one of their own)."""
    KINDS.pop(cls.LIST, None)


def slices(sensors) -> tuple[dict, list]:
    """``({sensor name: offset}, labels)`` of the measurement vector of ``sensors``: their slices
    one after the other, in the given (configuration) order."""
    offsets, labels = {}, []
    for s in sensors:
        offsets[s.name] = len(labels)
        labels.extend(s.labels())
    return offsets, labels


# ---------------------------------------------------------------------------- helpers for kinds
def unknown_key(key: str, valid) -> ConfigError:
    """The error for a parameter nobody reads, naming the closest valid one."""
    return unknown_parameter(key, valid, ConfigError)


def vector(x, n: int, name: str) -> np.ndarray:
    """``x`` as ``n`` float64 values (a number for ``n == 1``), or ``ValueError`` naming the input."""
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: not an array of numbers ({exc})") from None
    if a.shape != (n,):
        if n == 1 and a.shape == ():            # a one-value reading given as a number
            return a.reshape(1)
        raise ValueError(f"{name}: expected {n} values, got shape {a.shape}")
    return a


def vector_into(x, out: np.ndarray, name: str) -> np.ndarray:
    """``x`` copied into ``out`` (a contiguous float64 vector of ``n`` values) and ``out``
    returned: what :func:`vector` accepts, with no allocation for an array of ``out``'s shape (any
    numeric dtype and layout: numpy casts as it copies) and none for a list of ``n`` numbers
    (packed by :mod:`struct`, which takes exactly ``n`` numbers: a third faster than numpy's
    conversion of a list). ``ValueError`` naming the input."""
    if type(x) is np.ndarray:
        if x.shape == out.shape and x.dtype.kind in "fiub":
            out[...] = x
            return out
    elif type(x) is list:
        try:
            packer(out.shape[0]).pack_into(out, 0, *x)
            return out
        except struct.error:                    # not n numbers: vector() converts or names the input
            pass
    out[...] = vector(x, out.shape[0], name)
    return out


@functools.lru_cache(maxsize=None)
def packer(n: int) -> struct.Struct:
    """The :class:`struct.Struct` of ``n`` native float64 values (``pack_into`` a float64 array
    takes exactly ``n`` numbers, else raises ``struct.error``)."""
    return struct.Struct(f"{n}d")


def _plain(v):
    if isinstance(v, tuple):
        return [float(x) for x in v]
    return v


def featherstone_to_boundary() -> np.ndarray:
    """Permutation P with ``wrench = P f`` for ``f = [n; f]`` (Featherstone) and wrench ``[f; n]``
    (the boundary order of ``geometry_msgs/Wrench``)."""
    return np.array([3, 4, 5, 0, 1, 2])


#: Featherstone index → boundary component name
AXIS = ("tx", "ty", "tz", "fx", "fy", "fz")
