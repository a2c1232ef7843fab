"""The latest accepted sample of every input, with validation and freshness (no ROS import).

Messages are read by field name (``sensor_msgs/JointState``, ``sensor_msgs/Imu``,
``geometry_msgs/WrenchStamped``, ``std_msgs/Float64MultiArray``), so this module runs without
the message packages too. A sample is *rejected* — counted under a reason, nothing else changes —
when it has a non-finite value, arrays of the wrong length, a joint name the model does not
have (or lacks one of the model's joints), a header stamp that does not increase, or a
quaternion that is not a rotation. Force-torque readings are corrected by the ``ft_offsets.<sensor>``
parameters (reading − offset, :func:`~rbd_estimator.estimation.calibration.apply_offsets`); the raw
readings stay in :attr:`SensorInputs.ft_raw_matrix`. Freshness is the age of the latest accepted sample on the
node's clock (its receipt time), compared with the sensor's ``timeout`` at each tick.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..estimation import ImuSample
from ..estimation.calibration import apply_offsets
from .filters import DerivativeFilter

#: Reasons a sample can be rejected for (diagnostics keys).
REASONS = ("non_finite", "wrong_length", "unknown_joint", "missing_joint", "stamp_not_increasing",
           "bad_orientation")


def stamp_ns(stamp) -> int:
    """``builtin_interfaces/Time`` → integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class Slot:
    """One input: the latest accepted value, when it arrived, what was rejected."""
    __slots__ = ("name", "kind", "topic", "timeout_ns", "value", "stamp_ns", "receipt_ns", "received",
                 "rejected", "ready")

    def __init__(self, name: str, kind: str, topic: str, timeout: float, size: int = 0):
        self.name, self.kind, self.topic = name, kind, topic
        self.timeout_ns = int(timeout * 1e9)
        self.value = np.zeros(size)
        self.stamp_ns = None       # header stamp of the latest accepted sample
        self.receipt_ns = None     # node clock when it was accepted (and usable)
        self.received = 0          # accepted samples
        self.rejected = Counter()  # reason → count
        self.ready = False

    def reject(self, reason: str) -> bool:
        self.rejected[reason] += 1
        return False

    def check_stamp(self, t: int) -> bool:
        return self.stamp_ns is None or t > self.stamp_ns

    def fresh(self, now_ns: int) -> bool:
        return self.ready and self.receipt_ns is not None and now_ns - self.receipt_ns <= self.timeout_ns

    def age(self, now_ns: int) -> float:
        """Seconds since the latest accepted sample (inf if none)."""
        return math.inf if self.receipt_ns is None else (now_ns - self.receipt_ns) * 1e-9

    def clear(self) -> None:
        self.stamp_ns = self.receipt_ns = None
        self.ready = False


class _Layouts:
    """Joint-name layout of incoming messages → gather indices into model order, computed once per
    layout (the result is cached by the tuple of names; the common case compares one list)."""

    def __init__(self, model_joints, require_all: bool):
        self.index = {n: k for k, n in enumerate(model_joints)}
        self.n = len(model_joints)
        self.require_all = require_all
        self._last_names = None
        self._last = None
        self._cache: dict = {}

    def lookup(self, names):
        """``(gather, positions)`` or a rejection reason string. ``gather[k]`` is the message
        index of model joint ``k`` (``require_all``); otherwise ``positions`` are the model
        indices of the message entries."""
        if names == self._last_names:
            return self._last
        key = tuple(names)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._build(key)
            if len(self._cache) > 16:
                self._cache.clear()
            self._cache[key] = hit
        self._last_names, self._last = list(names), hit
        return hit

    def _build(self, names):
        pos = []
        for n in names:
            k = self.index.get(n)
            if k is None:
                return "unknown_joint"
            pos.append(k)
        if len(set(pos)) != len(pos):
            return "unknown_joint"     # a joint listed twice is not a layout we can read
        pos = np.array(pos, dtype=np.int64)
        if self.require_all:
            if len(pos) != self.n:
                return "missing_joint"
            gather = np.empty(self.n, dtype=np.int64)
            gather[pos] = np.arange(self.n)
            return gather, pos
        return None, pos


def _array(seq) -> np.ndarray:
    try:
        return np.frombuffer(seq, dtype=np.float64)     # array.array('d') from rclpy: no copy
    except (TypeError, ValueError):
        return np.asarray(seq, dtype=np.float64)


class SensorInputs:
    """Latest samples of the joint states and of every sensor of a configuration.

    ``q``, ``dq``, ``ddq`` (model order) are valid once :attr:`joint_states` is ready (the second
    accepted joint state: the acceleration filter needs two samples). ``imu`` is an
    :class:`ImuSample` whose arrays are updated in place.
    """

    def __init__(self, joint_names, config, settings):
        self.joint_names = tuple(joint_names)
        n = len(self.joint_names)
        self.q, self.dq = np.zeros(n), np.zeros(n)
        self.acc = DerivativeFilter(n, settings.acceleration_cutoff_hz, settings.max_sample_gap)
        self.gyro = DerivativeFilter(3, settings.acceleration_cutoff_hz, settings.max_sample_gap)
        self.joint_states = Slot("joint_states", "joint_states", settings.joint_states_topic,
                                 settings.joint_states_timeout)
        self._js_layout = _Layouts(self.joint_names, require_all=True)
        self._jt_layout = _Layouts(self.joint_names, require_all=False)
        self._orientation, self._w, self._acc_lin = np.zeros(4), np.zeros(3), np.zeros(3)
        self.imu = None
        self.slots: dict[str, Slot] = {}
        self.configure(config, settings)

    # ------------------------------------------------------------------ configuration
    def configure(self, config, settings) -> None:
        """Adopt a (new) sensor set: slots of sensors that stay keep their latest sample."""
        from .params import default_topic
        self.config, self.settings = config, settings
        self.acc.set_cutoff(settings.acceleration_cutoff_hz)
        self.gyro.set_cutoff(settings.acceleration_cutoff_hz)
        self.acc.max_gap = self.gyro.max_gap = settings.max_sample_gap
        self.joint_states.timeout_ns = int(settings.joint_states_timeout * 1e9)
        old, slots = self.slots, {}

        def slot(name, kind, topic, timeout, size):
            s = old.get(name)
            if s is None or s.kind != kind or s.topic != topic or len(s.value) != size:
                s = Slot(name, kind, topic, timeout, size)
            s.timeout_ns = int(timeout * 1e9)
            slots[name] = s

        if config.imu is not None:
            slot("imu", "imu", config.imu.topic or default_topic("imu", "imu"), config.imu.timeout, 0)
        for s in config.ft_sensors:
            slot(s.name, "ft", s.topic or default_topic("ft", s.name), s.timeout, 6)
        for c in config.load_cells:
            slot(c.name, "load_cell", c.topic or default_topic("load_cell", c.name), c.timeout, len(c.positions))
        for j in config.joint_torque_sensors:
            slot(j, "joint_torque", settings.joint_torque_source(), settings.joint_torque_timeout, 1)
        # force-torque readings and joint torques as rows of one array each, in configuration order,
        # so a tick hands the estimator contiguous arrays without copying (its fast path)
        self.ft_names = tuple(s.name for s in config.ft_sensors)
        self.ft_matrix = np.zeros((len(self.ft_names), 6))
        for i, n in enumerate(self.ft_names):
            self.ft_matrix[i] = slots[n].value
            slots[n].value = self.ft_matrix[i]
        # the readings as received (before the offsets): what an offset calibration needs
        self.ft_raw_matrix = self.ft_matrix.copy()
        self._ft_row = {n: i for i, n in enumerate(self.ft_names)}
        self._ft_offsets = {n: np.array([o], dtype=float) for n, o in getattr(settings, "ft_offsets", ())
                            if n in self._ft_row}
        self.jt_names = tuple(config.joint_torque_sensors)
        self.jt_vector = np.zeros(len(self.jt_names))
        for i, n in enumerate(self.jt_names):
            self.jt_vector[i] = slots[n].value[0]
            slots[n].value = self.jt_vector[i:i + 1]
        self.slots = slots
        self.use_angular_acceleration = bool(config.imu is not None and config.imu.use_angular_acceleration)
        self._jt_index = {j: self.joint_names.index(j) for j in config.joint_torque_sensors
                          if j in self.joint_names}
        self.sensor_names = tuple(self.slots)

    def reset(self) -> None:
        """Forget every sample and the filter states (on activate); counters are kept."""
        self.joint_states.clear()
        self.acc.reset()
        self.gyro.reset()
        for s in self.slots.values():
            s.clear()

    # ------------------------------------------------------------------ inputs
    def on_joint_state(self, msg, now_ns: int) -> bool:
        """Validate and store a ``JointState``; returns whether q, dq, ddq are ready for a tick."""
        slot = self.joint_states
        hit = self._js_layout.lookup(msg.name)
        if isinstance(hit, str):
            return slot.reject(hit)
        gather, _ = hit
        pos, vel = _array(msg.position), _array(msg.velocity)
        n = len(msg.name)
        if len(pos) != n or len(vel) != n:
            return slot.reject("wrong_length")
        q, dq = pos[gather], vel[gather]
        if not (np.isfinite(q).all() and np.isfinite(dq).all()):
            return slot.reject("non_finite")
        t = stamp_ns(msg.header.stamp)
        if not slot.check_stamp(t):
            return slot.reject("stamp_not_increasing")
        self.q[:] = q
        self.dq[:] = dq
        slot.stamp_ns, slot.receipt_ns = t, now_ns
        slot.received += 1
        slot.ready = self.acc.update(t, dq)
        return slot.ready

    def on_joint_torques(self, msg, now_ns: int) -> bool:
        """The ``effort`` field of a ``JointState``: the joint-torque sensors it names."""
        if not self._jt_index:
            return False
        first = self.slots[next(iter(self._jt_index))]
        hit = self._jt_layout.lookup(msg.name)
        if isinstance(hit, str):
            return first.reject(hit)
        eff = _array(msg.effort)
        if len(eff) != len(msg.name):
            return first.reject("wrong_length")
        t = stamp_ns(msg.header.stamp)
        _, pos = hit
        where = {int(k): i for i, k in enumerate(pos)}
        found = [(self.slots[j], where[k]) for j, k in self._jt_index.items() if k in where]
        if not found:
            return first.reject("missing_joint")
        if not all(math.isfinite(eff[i]) for _, i in found):
            return first.reject("non_finite")
        if not all(s.check_stamp(t) for s, _ in found):
            return first.reject("stamp_not_increasing")
        for s, i in found:
            s.value[0] = eff[i]
            s.stamp_ns, s.receipt_ns, s.ready = t, now_ns, True
            s.received += 1
        return True

    def on_imu(self, msg, now_ns: int) -> bool:
        slot = self.slots.get("imu")
        if slot is None:
            return False
        o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
        quat = (o.x, o.y, o.z, o.w)
        vals = quat + (w.x, w.y, w.z, a.x, a.y, a.z)
        if not math.isfinite(sum(vals)) and not all(math.isfinite(v) for v in vals):   # see on_wrench
            return slot.reject("non_finite")
        norm = math.sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3])
        if abs(norm - 1.0) > 1e-2:
            return slot.reject("bad_orientation")
        t = stamp_ns(msg.header.stamp)
        if not slot.check_stamp(t):
            return slot.reject("stamp_not_increasing")
        self._orientation[:] = quat
        self._orientation /= norm
        self._w[:] = vals[4:7]
        self._acc_lin[:] = vals[7:10]
        slot.stamp_ns = t
        slot.received += 1
        if self.use_angular_acceleration:
            ready = self.gyro.update(t, self._w)
            alpha = self.gyro.value
        else:
            ready, alpha = True, None
        if self.imu is None or self.imu.angular_acceleration is not alpha:
            self.imu = ImuSample(self._orientation, self._w, self._acc_lin, alpha)
        slot.ready = ready
        if ready:
            slot.receipt_ns = now_ns
        return ready

    def on_wrench(self, name: str, msg, now_ns: int) -> bool:
        slot = self.slots.get(name)
        if slot is None:
            return False
        f, m = msg.wrench.force, msg.wrench.torque
        vals = (f.x, f.y, f.z, m.x, m.y, m.z)
        # a finite sum means finite terms (an inf or nan term makes the sum inf or nan): one test
        # for the common case, the exact one only when the sum is not finite
        if not math.isfinite(sum(vals)) and not all(math.isfinite(v) for v in vals):
            return slot.reject("non_finite")
        t = stamp_ns(msg.header.stamp)
        if not slot.check_stamp(t):
            return slot.reject("stamp_not_increasing")
        raw = self.ft_raw_matrix[self._ft_row[name]]
        raw[:] = vals
        off = self._ft_offsets.get(name) if self._ft_offsets else None
        if off is None:
            slot.value[:] = raw
        else:                                   # ft_offsets.<name>: reading − offset
            slot.value[:] = apply_offsets(raw[None, :], off)[0]
        slot.stamp_ns, slot.receipt_ns, slot.ready = t, now_ns, True
        slot.received += 1
        return True

    def on_load_cells(self, name: str, msg, now_ns: int) -> bool:
        """``Float64MultiArray``: one force per cell (N), in the configured cell order. The
        message has no stamp: freshness is its receipt time."""
        slot = self.slots.get(name)
        if slot is None:
            return False
        data = _array(msg.data)
        if len(data) != len(slot.value):
            return slot.reject("wrong_length")
        if not np.isfinite(data).all():
            return slot.reject("non_finite")
        slot.value[:] = data
        slot.receipt_ns, slot.ready = now_ns, True
        slot.received += 1
        return True

    # ------------------------------------------------------------------ tick
    def missing(self, now_ns: int) -> frozenset:
        """Sensors of the configuration without a fresh sample at ``now_ns``."""
        out = [name for name, s in self.slots.items() if not s.fresh(now_ns)]
        return frozenset(out) if out else _EMPTY

    def ddq(self) -> np.ndarray:
        return self.acc.value

    def ft_for(self, names) -> np.ndarray | None:
        """``(len(names), 6)`` readings in ``names`` order (no copy for the full set)."""
        if not names:
            return None
        if names == self.ft_names:
            return self.ft_matrix
        return np.stack([self.slots[n].value for n in names])

    def joint_torques_for(self, names) -> np.ndarray | None:
        if not names:
            return None
        if names == self.jt_names:
            return self.jt_vector
        return np.array([self.slots[n].value[0] for n in names])


_EMPTY = frozenset()
