"""The measurement vector ``y`` of one estimator: every sensor's slice, in configuration order.

Both ticks take ``y`` as one float64 vector (the right-hand side of Nori's eq. 16 reads it through
the plan's constant maps). :class:`Measurements` says where each sensor's slice is and fills ``y``
from the per-kind forms of :meth:`~.estimator.Estimator.estimate` (``imu=``, ``ft=``, … and
``readings={sensor: value}``), converting each reading with its kind's :meth:`Sensor.write`.
"""
from __future__ import annotations

import numpy as np

from typing import NamedTuple

from ..sensors import KINDS
from ..sensors.base import slices, vector

__all__ = ["Measurements", "ImuSample", "vector", "keywords"]


class _ImuFields(NamedTuple):
    orientation: np.ndarray
    angular_velocity: np.ndarray
    linear_acceleration: np.ndarray
    angular_acceleration: np.ndarray | None = None


class ImuSample(_ImuFields):
    """One IMU reading (``sensor_msgs/Imu`` conventions): orientation of the IMU frame in a z-up
    world ``[x, y, z, w]``; angular velocity (rad/s) and proper linear acceleration (m/s², reads
    +g upward at rest) in the IMU frame; optional angular acceleration (rad/s²).

    The fields are made float64 arrays when the sample is built (lists, other dtypes and strided
    views are converted; float64 contiguous arrays are kept as they are, not copied), so that
    the estimator hands them to its kernel without a per-tick check."""
    __slots__ = ()

    def __new__(cls, orientation, angular_velocity, linear_acceleration, angular_acceleration=None):
        return super().__new__(cls, _field(orientation, "orientation"), _field(angular_velocity, "angular_velocity"),
                               _field(linear_acceleration, "linear_acceleration"),
                               None if angular_acceleration is None else
                               _field(angular_acceleration, "angular_acceleration"))

    @classmethod
    def _make(cls, iterable):
        return cls(*iterable)


def _field(x, name) -> np.ndarray:
    try:
        return np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"imu.{name}: not an array of numbers ({exc})") from None


def keywords() -> tuple[str, ...]:
    """The ``estimate()`` keywords of the registered kinds."""
    return tuple(k.KEYWORD for k in KINDS.values() if k.KEYWORD)



_F64 = np.dtype(np.float64)

#: the keywords :meth:`Measurements.fill` takes positionally (the package's documented forms)
_POSITIONAL = ("imu", "ft", "load_cells", "joint_torques", "external_wrenches")


class _Group:
    """The sensors of one kind: their slices are contiguous in ``y``."""
    __slots__ = ("keyword", "single", "members", "views", "block", "start", "size", "uniform", "matrix", "arg",
                 "parts")

    def __init__(self, kind, members, y, offsets):
        self.keyword = kind.KEYWORD or kind.LIST
        self.single = kind.SINGLE
        self.members = members
        self.views = [y[offsets[s.name]:offsets[s.name] + s.size] for s in members]
        self.start = offsets[members[0].name]
        self.size = sum(s.size for s in members)
        self.block = y[self.start:self.start + self.size]
        sizes = {s.size for s in members}
        self.uniform = sizes.pop() if len(sizes) == 1 else 0
        self.matrix = self.block.reshape(len(members), self.uniform) if self.uniform else None
        self.arg = _POSITIONAL.index(self.keyword) if self.keyword in _POSITIONAL else -1
        # the IMU's fields, for an ImuSample copied field by field (orientation, ω, specific force, ω̇)
        v = self.views[0]
        self.parts = (v[0:4], v[4:7], v[7:10], v[10:13]) if kind.BASE_MOTION else None


class Measurements:
    """Where each sensor's readings sit in ``y`` (:attr:`offsets`, :meth:`slice`) and the
    conversion of readings given per kind into ``y`` (:meth:`fill`)."""

    def __init__(self, config, y: np.ndarray | None = None):
        self.offsets, labels = slices(config.sensors)
        self.labels = tuple(labels)
        self.y = np.zeros(len(labels)) if y is None else y
        y = self.y
        self.sensors = config.sensors
        self._groups = []
        for kind in KINDS.values():
            members = [s for s in config.sensors if type(s) is kind]
            if members:
                self._groups.append(_Group(kind, members, y, self.offsets))
        self._by_name = {s.name: (s, v) for g in self._groups for s, v in zip(g.members, g.views)}
        self._spec = tuple((g.arg, (len(g.views[0]) > 10) or None, g.parts) if g.parts is not None
                           else (g.arg, g.matrix.shape, g.matrix) if g.uniform > 1     # (n, size) readings
                           else (g.arg, (g.size,), g.block) for g in self._groups)     # one value each: (n,)
        if any(arg < 0 for arg, _, _ in self._spec):  # a kind without a positional keyword: never this path
            self._spec = ((0, "never", None),)

    @property
    def size(self) -> int:
        return self.y.size

    def gather_index(self, sensors) -> np.ndarray:
        """Indices into this ``y`` of the measurement vector of ``sensors`` (a subset, same names)."""
        return np.concatenate([np.arange(self.offsets[s.name], self.offsets[s.name] + s.size, dtype=np.int64)
                               for s in sensors] or [np.zeros(0, np.int64)])

    def slice(self, name: str) -> slice:
        """The slice of sensor ``name`` in ``y``."""
        s, _ = self._by_name[name]
        o = self.offsets[name]
        return slice(o, o + s.size)

    def fill(self, imu=None, ft=None, load_cells=None, joint_torques=None, external_wrenches=None,
             readings=None, **by_kind) -> np.ndarray:
        """``y`` (the estimator's buffer, overwritten) from readings given per kind (the keywords
        of :meth:`Estimator.estimate`) and per sensor (``readings``, which take precedence)."""
        if not (readings or by_kind):                 # the documented forms: per kind, positionally
            args = (imu, ft, load_cells, joint_torques, external_wrenches)
            if self._copy_arrays(args):
                return self.y
            for g in self._groups:
                self._fill_group(g, args[g.arg] if g.arg >= 0 else None, None)
            return self.y
        given = {"imu": imu, "ft": ft, "load_cells": load_cells, "joint_torques": joint_torques,
                 "external_wrenches": external_wrenches}
        if by_kind:
            unknown = set(by_kind) - set(keywords())
            if unknown:
                raise TypeError(f"estimate() got unexpected keyword(s) {sorted(unknown)}; sensor-kind keywords: "
                                f"{', '.join(keywords())}")
            given.update(by_kind)
        if readings:
            for name in readings:
                if name not in self._by_name:
                    raise ValueError(f"readings: '{name}' is not a sensor of this configuration "
                                     f"({', '.join(self._by_name) or 'none'})")
        for g in self._groups:
            self._fill_group(g, given.get(g.keyword), readings)
        return self.y

    def _copy_arrays(self, args) -> bool:
        """The common case, copied with no conversion: every kind's readings already float64 arrays
        of its shape (an :class:`ImuSample` of the IMU's sizes, an ``(n, size)`` array per kind).
        False, nothing written, for any other form. ``_spec``: per kind, the argument it reads, the
        shape it wants (``None``: an IMU sample, ``True`` with ω̇) and the views it is copied to."""
        for arg, shape, _ in self._spec:
            v = args[arg]
            if shape is None or shape is True:
                if type(v) is not ImuSample or not _imu_fits(v, shape is True):
                    return False
            elif not (type(v) is np.ndarray and v.dtype is _F64 and v.shape == shape):
                return False
        for arg, shape, views in self._spec:
            v = args[arg]
            if shape is None or shape is True:
                _copy_imu(views, v, shape is True)
            else:
                views[:] = v
        return True

    def _fill_group(self, g: _Group, value, readings) -> None:
        if readings:
            rest = [(s, v) for s, v in zip(g.members, g.views) if s.name not in readings]
            for s, v in zip(g.members, g.views):
                if s.name in readings:
                    s.write(readings[s.name], v)
            if not rest:
                return
            if value is None or len(rest) < len(g.members):
                if value is None:
                    raise ValueError(f"{g.keyword}: no reading for {', '.join(s.name for s, _ in rest)}")
                if not isinstance(value, dict):
                    raise ValueError(f"{g.keyword}: give the readings of {', '.join(s.name for s, _ in rest)} by name "
                                     f"when others come through 'readings'")
                for s, v in rest:
                    self._named(g, value, s, v)
                return
        if g.single:
            alpha = len(g.views[0]) > 10
            if g.parts is not None and type(value) is ImuSample and _imu_fits(value, alpha):
                _copy_imu(g.parts, value, alpha)        # float64 arrays of the right sizes: copied as they are
                return
            g.members[0].write(value, g.views[0])
            return
        if value is None:
            raise ValueError(f"{g.keyword}: the configuration declares {', '.join(s.name for s in g.members)} "
                             f"but none were given")
        if isinstance(value, dict):
            if g.matrix is not None and all(s.name in value for s in g.members):
                try:                                  # every reading converted at once
                    arr = np.array([value[s.name] for s in g.members], dtype=np.float64)
                except (TypeError, ValueError):       # a reading that does not convert: named below
                    arr = None
                if arr is not None and arr.shape == g.matrix.shape:
                    g.matrix[:] = arr
                    return
            for s, v in zip(g.members, g.views):
                self._named(g, value, s, v)
            return
        if type(value) is not np.ndarray:
            try:
                value = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):            # ragged: one reading per sensor, in order
                if len(value) != len(g.members):
                    raise ValueError(f"{g.keyword}: expected {len(g.members)} readings in the order "
                                     f"{[s.name for s in g.members]}, got {len(value)}") from None
                for s, v, item in zip(g.members, g.views, value):
                    s.write(item, v)
                return
            if value.dtype == object:
                raise ValueError(f"{g.keyword}: not an array of numbers")
        if g.matrix is not None and value.shape == g.matrix.shape:
            g.matrix[:] = value
        elif value.size == g.size and value.ndim == 1:
            g.block[:] = value
        elif g.uniform:
            raise ValueError(f"{g.keyword}: expected shape ({len(g.members)}, {g.uniform}) in the order "
                             f"{[s.name for s in g.members]}, got {value.shape}")
        else:
            raise ValueError(f"{g.keyword}: expected {g.size} values ({', '.join(f'{s.name}: {s.size}' for s in g.members)}),"
                             f" got shape {value.shape}")

    @staticmethod
    def _named(g: _Group, value: dict, s, view) -> None:
        if s.name not in value:
            raise ValueError(f"{g.keyword}: no reading for '{s.name}'")
        s.write(value[s.name], view)

    def describe(self, index: int) -> str:
        """``keyword[k] (label)`` of entry ``index`` of ``y`` (``k`` counted within its kind)."""
        for g in self._groups:
            if g.start <= index < g.start + g.size:
                return f"{g.keyword}[{index - g.start}] ({self.labels[index]})"
        return f"y[{index}]"


def _copy_imu(views, sample, alpha: bool) -> None:
    """An :class:`ImuSample` into the IMU's views of ``y`` (orientation, ω, specific force, ω̇)."""
    views[0][:] = sample[0]
    views[1][:] = sample[1]
    views[2][:] = sample[2]
    if alpha:
        views[3][:] = sample[3]


def _imu_fits(sample, alpha: bool) -> bool:
    """The fields of an :class:`ImuSample` (float64 arrays by construction) have the IMU's sizes."""
    return (sample[0].shape == (4,) and sample[1].shape == (3,) and sample[2].shape == (3,)
            and (not alpha or (sample[3] is not None and sample[3].shape == (3,))))
