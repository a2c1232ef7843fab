"""The measurement vector ``y`` of one estimator: every sensor's slice, in configuration order.

Both ticks take ``y`` as one float64 vector (the right-hand side of Nori's eq. 16 reads it through
the plan's constant maps). :class:`Measurements` says where each sensor's slice is and fills ``y``
from the per-kind forms of :meth:`~.estimator.Estimator.estimate` (``imu=``, ``ft=``, … and
``readings={sensor: value}``), converting each reading with its kind's :meth:`Sensor.write`.
"""
from __future__ import annotations

import struct

import numpy as np

from typing import NamedTuple

from ..sensors import KINDS
from ..sensors.base import packer, slices, vector, vector_into

__all__ = ["Measurements", "ImuSample", "JointState", "vector", "keywords"]


class JointState:
    """``q``, ``dq``, ``ddq`` converted to float64 (rad, m, s) into preallocated rows when they come
    in another form than float64 vectors: arrays of any numeric dtype or layout with no allocation,
    three lists of numbers packed at once by :mod:`struct` (a third faster than numpy's conversion
    of a list)."""

    def __init__(self, n_joints: int):
        self.buffer = np.zeros((3, n_joints))
        self.rows = tuple(self.buffer)
        self._lists = packer(self.buffer.size)

    def fill(self, q, dq, ddq) -> tuple:
        """The three rows, filled (``ValueError`` naming a bad input)."""
        q_, dq_, ddq_ = rows = self.rows
        n = q_.shape[0]
        if type(q) is list and type(dq) is list and type(ddq) is list and len(q) == len(dq) == len(ddq) == n:
            try:
                self._lists.pack_into(self.buffer, 0, *q, *dq, *ddq)
                return rows
            except struct.error:                # not numbers: converted or named one by one below
                pass
        return vector_into(q, q_, "q"), vector_into(dq, dq_, "dq"), vector_into(ddq, ddq_, "ddq")


class _ImuFields(NamedTuple):
    orientation: np.ndarray
    angular_velocity: np.ndarray
    linear_acceleration: np.ndarray
    angular_acceleration: np.ndarray | None = None


class ImuSample(_ImuFields):
    """One IMU reading (``sensor_msgs/Imu`` conventions): orientation of the IMU frame in a z-up
    world ``[x, y, z, w]``; angular velocity (rad/s) and proper linear acceleration (m/s², reads
    +g upward at rest) in the IMU frame; optional angular acceleration (rad/s²).

    The fields are made float64 arrays of those sizes (4, 3, 3, 3) when the sample is built (lists,
    other dtypes and strided views are converted; float64 contiguous arrays are kept as they are,
    not copied; another size is a ``ValueError`` naming the field), so that the estimator copies
    them into ``y`` without a per-tick check."""
    __slots__ = ()

    def __new__(cls, orientation, angular_velocity, linear_acceleration, angular_acceleration=None):
        return super().__new__(cls, _field(orientation, "orientation", 4),
                               _field(angular_velocity, "angular_velocity", 3),
                               _field(linear_acceleration, "linear_acceleration", 3),
                               None if angular_acceleration is None else
                               _field(angular_acceleration, "angular_acceleration", 3))

    @classmethod
    def _make(cls, iterable):
        return cls(*iterable)


def _field(x, name: str, n: int) -> np.ndarray:
    """``n`` float64 values, contiguous (a contiguous float64 array is kept as it is)."""
    return np.ascontiguousarray(vector(x, n, f"imu.{name}"))


def keywords() -> tuple[str, ...]:
    """The ``estimate()`` keywords of the registered kinds."""
    return tuple(k.KEYWORD for k in KINDS.values() if k.KEYWORD)



_F64 = np.dtype(np.float64)

#: the keywords :meth:`Measurements.fill` takes positionally (the package's documented forms)
_POSITIONAL = ("imu", "ft", "load_cells", "joint_torques", "external_wrenches")


class _Group:
    """The sensors of one kind: their slices are contiguous in ``y``. ``shape`` is the shape of
    an array of all their readings (``(n, size)``, or ``(n,)`` for one value each, or the block's
    size when the sizes differ), ``dest`` the view of ``y`` it is copied to; ``parts`` are the
    views of the IMU's fields in ``y`` (orientation, ω, specific force[, ω̇])."""
    __slots__ = ("keyword", "single", "members", "names", "views", "block", "start", "size", "uniform", "matrix",
                 "shape", "dest", "arg", "parts")

    def __init__(self, kind, members, y, offsets):
        self.keyword = kind.KEYWORD or kind.LIST
        self.single = kind.SINGLE
        self.members = members
        self.names = tuple(s.name for s in members)
        self.views = [y[offsets[s.name]:offsets[s.name] + s.size] for s in members]
        self.start = offsets[members[0].name]
        self.size = sum(s.size for s in members)
        self.block = y[self.start:self.start + self.size]
        sizes = {s.size for s in members}
        self.uniform = sizes.pop() if len(sizes) == 1 else 0
        self.matrix = self.block.reshape(len(members), self.uniform) if self.uniform else None
        self.dest = self.matrix if self.uniform > 1 else self.block
        self.shape = self.dest.shape
        self.arg = _POSITIONAL.index(self.keyword) if self.keyword in _POSITIONAL else -1
        v = self.views[0]
        self.parts = (tuple(v[a:b] for a, b in ((0, 4), (4, 7), (7, 10), (10, 13)) if b <= v.size)
                      if kind.BASE_MOTION else None)


class Measurements:
    """Where each sensor's readings sit in ``y`` (:attr:`offsets`, :meth:`slice`) and the
    conversion of readings given per kind into ``y`` (:meth:`fill`, :attr:`fill_kinds`)."""

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
        #: ``fill_kinds(imu, ft, load_cells, joint_torques, external_wrenches) → y``: :meth:`fill`
        #: of the documented keywords, positionally (the per-tick entry of ``estimate()``)
        self.fill_kinds = self._positional()

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
            return self.fill_kinds(imu, ft, load_cells, joint_torques, external_wrenches)
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

    def _positional(self):
        """The function :attr:`fill_kinds`, made once for this configuration. The common forms are
        copied into ``y`` with no conversion, no check of their own and no allocation: an
        :class:`ImuSample` (float64 fields of the IMU's sizes by construction) into its views of
        ``y``, and per other kind an array of its shape
        (any numeric dtype and layout: numpy casts as it copies). Any other form (lists, dicts,
        tuples, a wrong shape, a missing reading) is converted by :meth:`_fill_single` or
        :meth:`_fill_kind`."""
        y, fill_group, groups = self.y, self._fill_group, tuple(self._groups)
        imu = next((g for g in groups if g.parts is not None), None)
        others = tuple((g.arg, g.shape, g.dest, g, self._fill_single if g.single else self._fill_kind)
                       for g in groups if g is not imu)
        if not others or any(g.arg < 0 for g in groups):
            def fill_each(*args):              # an IMU alone, no sensor, or a kind given only by name (then missing)
                for g in groups:
                    fill_group(g, args[g.arg] if g.arg >= 0 else None, None)
                return y
            return fill_each
        p0, p1, p2, p3 = (*imu.parts, None)[:4] if imu is not None else (None,) * 4
        (a0, shape0, dest0, g0, convert0), more = others[0], others[1:]    # the first kind unrolled: 0.1 µs
        nd, fill_imu = np.ndarray, self._fill_single

        def fill(*args):
            if imu is not None:
                s = args[0]
                if type(s) is ImuSample and (p3 is None or s[3] is not None):
                    p0[...] = s[0]                # (an Ellipsis copy is numpy's fastest)
                    p1[...] = s[1]
                    p2[...] = s[2]
                    if p3 is not None:
                        p3[...] = s[3]
                else:
                    fill_imu(imu, s)
            v = args[a0]
            if type(v) is nd and v.shape == shape0:
                dest0[...] = v                   # as _fill_kind copies an array of any dtype
            else:
                convert0(g0, v)
            for arg, shape, dest, g, convert in more:
                v = args[arg]
                if type(v) is nd and v.shape == shape:
                    dest[...] = v
                else:
                    convert(g, v)
            return y
        return fill

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
            self._fill_single(g, value)
        else:
            self._fill_kind(g, value)

    @staticmethod
    def _fill_single(g: _Group, value) -> None:
        """The reading of a kind of at most one sensor (the IMU: an :class:`ImuSample` or a tuple)."""
        if g.parts is not None and type(value) is ImuSample and (len(g.parts) < 4 or value[3] is not None):
            for part, field in zip(g.parts, value):     # float64 arrays of the right sizes: copied as they are
                part[...] = field
            return
        g.members[0].write(value, g.views[0])

    def _fill_kind(self, g: _Group, value) -> None:
        """The readings of the sensors of one kind, as one array (any numeric dtype, layout or
        nesting of lists: ``(n, size)``, or ``n`` values, or the block of every value in order), a
        ragged sequence of one reading per sensor in order, or ``{sensor: reading}``."""
        if type(value) is not np.ndarray:
            if value is None:
                raise ValueError(f"{g.keyword}: the configuration declares {', '.join(g.names)} but none were given")
            if isinstance(value, dict):
                self._by_name_dict(g, value)
                return
            try:
                value = np.array(value, _F64)
            except (TypeError, ValueError):            # ragged: one reading per sensor, in order
                if len(value) != len(g.members):
                    raise ValueError(f"{g.keyword}: expected {len(g.members)} readings in the order "
                                     f"{list(g.names)}, got {len(value)}") from None
                for s, v, item in zip(g.members, g.views, value):
                    s.write(item, v)
                return
        if value.shape == g.shape:
            g.dest[...] = value
        elif g.matrix is not None and value.shape == g.matrix.shape:
            g.matrix[...] = value
        elif value.size == g.size and value.ndim == 1:
            g.block[...] = value
        elif g.uniform:
            raise ValueError(f"{g.keyword}: expected shape ({len(g.members)}, {g.uniform}) in the order "
                             f"{list(g.names)}, got {value.shape}")
        else:
            raise ValueError(f"{g.keyword}: expected {g.size} values ({', '.join(f'{s.name}: {s.size}' for s in g.members)}),"
                             f" got shape {value.shape}")

    def _by_name_dict(self, g: _Group, value: dict) -> None:
        """The readings of a kind given as ``{sensor: reading}``: converted at once when they have
        one size, else (or when one is missing or not numbers) one by one, naming the sensor."""
        if g.matrix is not None:
            try:
                arr = np.array([value[name] for name in g.names], _F64)
            except (KeyError, TypeError, ValueError):  # a reading missing or not converting: named below
                arr = None
            if arr is not None and arr.shape == g.shape:          # (n, size) readings, or n numbers
                g.dest[...] = arr
                return
            if arr is not None and arr.shape == g.matrix.shape:   # n readings of one value each
                g.matrix[...] = arr
                return
        for s, v in zip(g.members, g.views):
            self._named(g, value, s, v)

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
