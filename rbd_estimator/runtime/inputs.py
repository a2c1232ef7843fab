"""The latest accepted sample of every input, with validation and freshness (no ROS import).

Messages arrive as their serialized bytes (``sensor_msgs/JointState``, ``sensor_msgs/Imu``,
``geometry_msgs/WrenchStamped``, ``std_msgs/Float64MultiArray``; CDR as ROS 2 sends them and
rosbag2 records them) and are decoded, checked and stored by compiled code
(:mod:`rbd_estimator.runtime.input_core`) into one state that this class owns and exposes as arrays and
:class:`Slot` views. A sample is *rejected* — counted under a reason, nothing else changes — when it
has a non-finite value, arrays of the wrong length, a joint name the model does not have (or lacks
one of the model's joints), a header stamp that does not increase, or a quaternion that is not a
rotation. Force-torque readings are corrected by the ``ft_offsets.<sensor>`` parameters (reading −
offset, as :func:`~rbd_estimator.estimation.calibration.apply_offsets`); the raw readings stay in
:attr:`SensorInputs.ft_raw_matrix`. Freshness is the age of the latest accepted sample on the node's
clock (its receipt time), compared with the sensor's ``timeout`` at each tick.
"""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..errors import ConfigError
from ..estimation import ImuSample
from ..kernels.layout import Packer
from . import cdr
from . import input_core as core
from . import kalman
from .filters import time_constant
from .input_core import NONE, REASONS
from ..sensors.base import ARRAY_MESSAGE, IMU_MESSAGE, JOINT_EFFORT, WRENCH_MESSAGE

__all__ = ["SensorInputs", "Slot", "REASONS", "stamp_ns"]


def stamp_ns(stamp) -> int:
    """``builtin_interfaces/Time`` → integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


class Slot:
    """One input (slot ``index`` of the state of ``inputs``): its latest accepted value (a view,
    updated in place), when it arrived, what was rejected."""
    __slots__ = ("name", "kind", "topic", "index", "value", "_inputs")

    def __init__(self, inputs, index: int, name: str, kind: str, topic: str, value: np.ndarray):
        self._inputs, self.index = inputs, index
        self.name, self.kind, self.topic, self.value = name, kind, topic, value

    def _get(self, field: int) -> int:
        I = self._inputs.I
        return int(I[I[core.H_SLOTS] + core.SLOT_W * self.index + field])

    def _set(self, field: int, v: int) -> None:
        I = self._inputs.I
        I[I[core.H_SLOTS] + core.SLOT_W * self.index + field] = v

    @property
    def stamp_ns(self):
        """Header stamp of the latest accepted sample (ns), None before the first."""
        t = self._get(core.S_STAMP)
        return None if t == NONE else t

    @property
    def receipt_ns(self):
        """Node clock when the latest sample was accepted and usable (ns), None before."""
        t = self._get(core.S_RECEIPT)
        return None if t == NONE else t

    @property
    def received(self) -> int:
        return self._get(core.S_RECEIVED)

    @property
    def ready(self) -> bool:
        return bool(self._get(core.S_READY))

    @property
    def timeout_ns(self) -> int:
        return self._get(core.S_TIMEOUT)

    @property
    def rejected(self) -> Counter:
        """Reason → rejected samples."""
        return Counter({r: n for r in REASONS if (n := self._get(core.S_REJ + REASONS.index(r)))})

    def reject(self, reason: str) -> bool:
        f = core.S_REJ + REASONS.index(reason)
        self._set(f, self._get(f) + 1)
        return False

    def accept(self, stamp: int | None, now: int) -> None:
        if stamp is not None:
            self._set(core.S_STAMP, stamp)
        self._set(core.S_RECEIPT, now)
        self._set(core.S_READY, 1)
        self._set(core.S_RECEIVED, self.received + 1)

    def check_stamp(self, t: int) -> bool:
        return self.stamp_ns is None or t > self.stamp_ns

    def fresh(self, now_ns: int) -> bool:
        return bool(core.fresh(self._inputs.I, self.index, now_ns))

    def age(self, now_ns: int) -> float:
        """Seconds since the latest accepted sample (inf if none)."""
        t = self.receipt_ns
        return math.inf if t is None else (now_ns - t) * 1e-9


class _Layouts:
    """Joint-name layout of incoming messages → gather indices into model order, computed once per
    layout (the result, with a rejected layout's joints at fault, is cached by the tuple of names)."""

    def __init__(self, model_joints, require_all: bool, ignored=()):
        self.index = {n: k for k, n in enumerate(model_joints)}
        self.ignored = frozenset(ignored)
        self.n = len(model_joints)
        self.require_all = require_all
        #: the joints at fault in the latest rejected layout ("" before any)
        self.problem = ""
        self._cache: dict = {}

    def lookup(self, names):
        """``(gather, positions)`` or a rejection reason string. ``gather[k]`` is the message
        index of model joint ``k`` (``require_all``); otherwise ``gather[i]`` is the message index
        of the model joint ``positions[i]`` (ignored joints skipped)."""
        key = tuple(names)
        entry = self._cache.get(key)
        if entry is None:
            hit = self._build(key)
            entry = (hit, self._why(key) if isinstance(hit, str) else "")
            if len(self._cache) > 16:
                self._cache.clear()
            self._cache[key] = entry
        hit, why = entry
        if isinstance(hit, str):
            self.problem = why
        return hit

    def _why(self, names) -> str:
        """The joints at fault in a rejected layout ``names``, named (at most five of each)."""
        def listed(xs):
            return ", ".join(f"'{x}'" for x in xs[:5]) + (f" and {len(xs) - 5} more" if len(xs) > 5 else "")
        unknown = [n for n in names if n not in self.index and n not in self.ignored]
        twice = sorted({n for n in names if names.count(n) > 1})
        missing = [n for n in self.index if n not in names] if self.require_all else []
        parts = [f"not in the robot description: {listed(unknown)}"] * bool(unknown)
        parts += [f"listed twice: {listed(twice)}"] * bool(twice)
        parts += [f"missing: {listed(missing)}"] * bool(missing)
        return "; ".join(parts)

    def _build(self, names):
        pos, at = [], []                 # model index and message index of each model joint named
        for i, n in enumerate(names):
            k = self.index.get(n)
            if k is None:
                if n in self.ignored:    # e.g. a mimic joint: known, and follows its driver
                    continue
                return "unknown_joint"
            pos.append(k)
            at.append(i)
        if len(set(pos)) != len(pos) or len(set(names)) != len(names):
            return "unknown_joint"     # a joint listed twice is not a layout we can read
        pos = np.array(pos, dtype=np.int64)
        if self.require_all:
            if len(pos) != self.n:
                return "missing_joint"
            gather = np.empty(self.n, dtype=np.int64)
            gather[pos] = np.array(at, dtype=np.int64)
            return gather, pos
        return np.array(at, dtype=np.int64), pos


#: a slot's kind is its sensor's decoder (:mod:`rbd_estimator.sensors.base`): its compiled code and the
#: order of its block in F
_KINDS = {"joint_states": core.JOINT_STATES, IMU_MESSAGE: core.IMU, WRENCH_MESSAGE: core.WRENCH,
          ARRAY_MESSAGE: core.FLOAT64_ARRAY, JOINT_EFFORT: core.JOINT_EFFORT}
_BLOCK_ORDER = {kind: k for k, kind in enumerate(_KINDS)}
#: most sensors a configuration can have (one bit each in the compiled freshness mask)
MAX_SENSORS = 62


class SensorInputs:
    """Latest samples of the joint states and of every sensor of a configuration.

    ``q``, ``dq``, ``ddq`` (model order) are valid once :attr:`joint_states` is ready (the second
    accepted joint state: the acceleration filter needs two samples). ``imu`` is an
    :class:`ImuSample` whose arrays are updated in place. ``I``/``F`` hold the whole state
    (:mod:`~rbd_estimator.runtime.input_core`); :meth:`on_message` feeds it.
    """

    def __init__(self, joint_names, config, settings, ignored_joints=()):
        """``ignored_joints``: joints a joint state may also carry that are not estimator inputs
        (the URDF's mimic joints, which follow their driving joints, and its fixed joints)."""
        self.joint_names = tuple(joint_names)
        self._js_layout = _Layouts(self.joint_names, require_all=True, ignored=ignored_joints)
        self._jt_layout = _Layouts(self.joint_names, require_all=False, ignored=ignored_joints)
        self.I = self.F = None
        self.slots: dict[str, Slot] = {}
        self.configure(config, settings)

    @property
    def joint_state_problem(self) -> str:
        """The joints at fault in the latest joint state rejected for its names (unknown, listed
        twice, missing), named; "" when none was."""
        return self._js_layout.problem

    @classmethod
    def for_estimator(cls, est, config, settings) -> "SensorInputs":
        """The inputs of an estimator (node and replay): its joints; the URDF's mimic joints (they follow
        their drivers) and fixed joints (a driver may publish a joint the description fixes, as
        robot_state_publisher takes it) ignored in a joint state."""
        m = est.model
        return cls(est.joint_names, config, settings, ignored_joints=[*(j.joint for j in m.mimic_joints), *m.fixed_joints])

    # ------------------------------------------------------------------ configuration
    def configure(self, config, settings) -> None:
        """Adopt a (new) sensor set: slots of sensors that stay keep their latest sample and counters,
        the joint states and filters keep theirs."""
        entries = [("joint_states", "joint_states", settings.joint_states_topic, settings.joint_states_timeout,
                    len(self.joint_names))]
        topics = self.topics(config, settings)
        for sensor in config.sensors:             # each kind's decoder reads its slice of y
            slot, topic = topics[sensor.name]
            if slot == JOINT_EFFORT:
                entries.append((sensor.name, slot, topic, settings.joint_torque_timeout, 1))
            else:
                entries.append((sensor.name, slot, topic, sensor.timeout, 0 if slot == IMU_MESSAGE else sensor.size))
        entries.sort(key=lambda e: _BLOCK_ORDER[e[1]])   # stable: kinds keep their registry order in a block
        if len(entries) - 1 > MAX_SENSORS:
            raise ConfigError(f"{len(entries) - 1} sensors configured: at most {MAX_SENSORS} are supported")
        old_I, old_F, old_slots = self.I, self.F, self.slots
        self._build(entries, config, settings)
        if old_I is not None:
            self._carry_over(old_I, old_F, old_slots)
        self.config, self.settings = config, settings

    @staticmethod
    def topics(config, settings) -> dict:
        """``{sensor: (decoder, topic)}``: the message decoder of each sensor's kind and the topic it
        is read from (as configured, unresolved)."""
        from .params import default_topic
        out = {}
        for sensor in config.sensors:
            if sensor.DECODER == JOINT_EFFORT:
                out[sensor.name] = (JOINT_EFFORT, settings.joint_torque_source())
            else:
                out[sensor.name] = (sensor.DECODER, sensor.topic or default_topic(sensor.GROUP, sensor.name))
        return out

    def take_over(self, old: "SensorInputs") -> None:
        """Continue from ``old`` (the input state of the set in use, same joints): its latest
        samples, counters and filter states, as :meth:`configure` keeps them (a reconfiguration
        whose new state was built off the tick thread)."""
        self._js_layout, self._jt_layout = old._js_layout, old._jt_layout
        self._carry_over(old.I, old.F, old.slots)

    def _build(self, entries, config, settings) -> None:
        nj = len(self.joint_names)
        n_ft = sum(1 for e in entries if e[1] == WRENCH_MESSAGE)         # every wrench-message sensor
        n_cells = sum(e[4] for e in entries if e[1] == ARRAY_MESSAGE)    # every float64-array sensor
        fa = Packer(np.float64)
        par, q, dq, acc, acc_prev = fa.reserve(2), fa.reserve(nj), fa.reserve(nj), fa.reserve(nj), fa.reserve(nj)
        gyro, gyro_prev, imu = fa.reserve(3), fa.reserve(3), fa.reserve(10)
        ft, ft_raw, ft_off = fa.reserve(6 * n_ft), fa.reserve(6 * n_ft), fa.reserve(6 * n_ft)
        cells, jt = fa.reserve(n_cells), fa.reserve(len(config.joint_torque_sensors))
        kf = fa.reserve(kalman.block_size(nj))
        scr = fa.reserve(max(2 * nj, 10, 6, max((e[4] for e in entries if e[1] == ARRAY_MESSAGE), default=0)))
        F = fa.array()
        F[par], F[par + 1] = time_constant(settings.acceleration_cutoff_hz), float(settings.max_sample_gap)
        order = 0
        if settings.acceleration_filter == "kalman":
            order = kalman.set_parameters(F, kf, settings.kalman_model, settings.kalman_process_noise,
                                          settings.kalman_position_stddev, settings.kalman_velocity_stddev)
        F[imu + 3] = 1.0                              # identity orientation until the first sample
        names_cap = 4 + sum(8 + len(n.encode("utf-8")) for n in self.joint_names + tuple(self._js_layout.ignored))
        jt_in_js = bool(config.joint_torque_sensors) and settings.joint_torque_source() == settings.joint_states_topic
        ia = Packer(np.int64, header=core.INPUT_HEADER)
        slots0, names0, gather0 = ia.reserve(core.SLOT_W * len(entries)), ia.reserve(names_cap), ia.reserve(nj)
        I = ia.array(dict(
            H_NJ=nj, H_NSLOTS=len(entries), H_SLOTS=slots0, H_NAMES=names0, H_NAMES_CAP=names_cap, H_NAMES_LEN=-1,
            H_GATHER=gather0, H_ACC_T=NONE, H_ACC_READY=0, H_GYRO_T=NONE, H_GYRO_READY=0,
            H_ALPHA=int(config.imu is not None and config.imu.use_angular_acceleration), F_Q=q, F_DQ=dq, F_ACC=acc,
            F_ACC_PREV=acc_prev, F_GYRO=gyro, F_GYRO_PREV=gyro_prev, F_IMU=imu, F_SCR=scr, F_PAR=par, H_NMSG=0,
            H_KF=order, F_KF=kf, H_JTJS=int(jt_in_js)))
        self.I, self.F = I, F
        rows = {WRENCH_MESSAGE: ft, ARRAY_MESSAGE: cells, JOINT_EFFORT: jt}
        offsets = dict(settings.ft_offsets)
        self.slots, self._index = {}, {}
        for s, (name, kind, topic, timeout, size) in enumerate(entries):
            r = slots0 + core.SLOT_W * s
            value = {"joint_states": q, IMU_MESSAGE: imu}.get(kind)
            if value is None:
                value = rows[kind]
                rows[kind] += size
            I[r + core.S_STAMP] = I[r + core.S_RECEIPT] = NONE
            I[r + core.S_TIMEOUT] = int(timeout * 1e9)
            I[r + core.S_KIND], I[r + core.S_VALUE], I[r + core.S_SIZE] = _KINDS[kind], value, size
            I[r + core.S_JOINT] = self.joint_names.index(name) if name in self.joint_names else -1
            if kind == WRENCH_MESSAGE:
                k = (value - ft) // 6
                I[r + core.S_RAW], I[r + core.S_OFFSET] = ft_raw + 6 * k, ft_off + 6 * k
                if name in offsets:
                    F[ft_off + 6 * k: ft_off + 6 * k + 6] = offsets[name]
            slot = Slot(self, s, name, kind, topic, F[value:value + max(size, 1)] if kind != IMU_MESSAGE else F[imu:imu + 10])
            self._index[name] = s
            if s == 0:
                self.joint_states = slot
            else:
                self.slots[name] = slot
        self._views(config, q, dq, acc, gyro, imu, ft, ft_raw, cells, jt)

    def _views(self, config, q, dq, acc, gyro, imu, ft, ft_raw, cells, jt) -> None:
        F, nj = self.F, len(self.joint_names)
        self.q, self.dq, self.ddq = F[q:q + nj], F[dq:dq + nj], F[acc:acc + nj]
        self.use_angular_acceleration = bool(self.I[core.H_ALPHA])
        self.imu = None
        if config.imu is not None:
            self.imu = ImuSample(F[imu:imu + 4], F[imu + 4:imu + 7], F[imu + 7:imu + 10],
                                 F[gyro:gyro + 3] if self.use_angular_acceleration else None)
        self._imu_at, self._alpha_at = imu, gyro
        self.ft_names = tuple(s.name for s in config.ft_sensors)       # the first rows of the wrench block
        n_ft = len(self.ft_names)
        self.ft_matrix = F[ft:ft + 6 * n_ft].reshape(n_ft, 6)
        self.ft_raw_matrix = F[ft_raw:ft_raw + 6 * n_ft].reshape(n_ft, 6)   # readings before the offsets
        self.cells_vector = F[cells:cells + sum(len(c.positions) for c in config.load_cells)]   # config order
        self.jt_names = tuple(config.joint_torque_sensors)
        self.jt_vector = F[jt:jt + len(self.jt_names)]
        self._jt_index = {j: self.joint_names.index(j) for j in self.jt_names if j in self.joint_names}
        self.sensor_names = tuple(self.slots)
        self._missing_sets = {0: _EMPTY}
        self.excluded = 0                  # bit mask over sensor_names: sensors the fault monitor excludes

    def exclude(self, name: str, on: bool = True) -> None:
        """Count ``name`` as missing (``on``) whatever its samples, or not any more: a sensor the fault
        monitor (:mod:`~rbd_estimator.runtime.faults`) found inconsistent takes the lost-sensor path."""
        bit = 1 << self.sensor_names.index(name)
        self.excluded = (self.excluded | bit) if on else (self.excluded & ~bit)

    def _carry_over(self, old_I, old_F, old_slots) -> None:
        """Copy what a reconfiguration keeps from the previous state (see :meth:`configure`)."""
        I, F = self.I, self.F
        nj = len(self.joint_names)
        for h, n in ((core.F_Q, nj), (core.F_DQ, nj), (core.F_ACC, nj), (core.F_ACC_PREV, nj), (core.F_GYRO, 3),
                     (core.F_GYRO_PREV, 3), (core.F_IMU, 10)):
            F[I[h]:I[h] + n] = old_F[old_I[h]:old_I[h] + n]
        for h in (core.H_ACC_T, core.H_ACC_READY, core.H_GYRO_T, core.H_GYRO_READY):
            I[h] = old_I[h]
        if I[core.H_KF] != old_I[core.H_KF]:              # another joint filter: it starts again
            I[core.H_ACC_T], I[core.H_ACC_READY] = NONE, 0
        elif I[core.H_KF]:                                # the Kalman filter's covariance and states
            k, ko = I[core.F_KF] + kalman.K_P, old_I[core.F_KF] + kalman.K_P
            n = kalman.block_size(nj) - kalman.K_P
            F[k:k + n] = old_F[ko:ko + n]
        L = old_I[core.H_NAMES_LEN]
        if L >= 0:
            I[I[core.H_NAMES]:I[core.H_NAMES] + L] = old_I[old_I[core.H_NAMES]:old_I[core.H_NAMES] + L]
            I[I[core.H_GATHER]:I[core.H_GATHER] + nj] = old_I[old_I[core.H_GATHER]:old_I[core.H_GATHER] + nj]
            I[core.H_NAMES_LEN], I[core.H_NMSG] = L, old_I[core.H_NMSG]
        pairs = [(0, 0)] + [(self._index[n], s.index) for n, s in old_slots.items()
                            if n in self.slots and self.slots[n].kind == s.kind and self.slots[n].topic == s.topic
                            and len(self.slots[n].value) == len(s.value)]
        w = core.SLOT_W
        for new, old in pairs:
            r, ro = I[core.H_SLOTS] + w * new, old_I[core.H_SLOTS] + w * old
            keep = [core.S_STAMP, core.S_RECEIPT, core.S_RECEIVED, core.S_READY] + list(range(core.S_REJ, w))
            I[[r + f for f in keep]] = old_I[[ro + f for f in keep]]
            if new == 0:
                continue
            size = I[r + core.S_SIZE]
            F[I[r + core.S_VALUE]:I[r + core.S_VALUE] + size] = old_F[old_I[ro + core.S_VALUE]:
                                                                      old_I[ro + core.S_VALUE] + size]
            if I[r + core.S_KIND] == core.WRENCH:
                raw, oraw = I[r + core.S_RAW], old_I[ro + core.S_RAW]
                F[raw:raw + 6] = old_F[oraw:oraw + 6]
                F[I[r + core.S_VALUE]:I[r + core.S_VALUE] + 6] = F[raw:raw + 6] - F[I[r + core.S_OFFSET]:
                                                                                    I[r + core.S_OFFSET] + 6]

    @property
    def filter_time_constant(self) -> float:
        """``T_c`` (s) of the q̈ and ω̇ low-pass filters in use (:mod:`~rbd_estimator.runtime.filters`)."""
        return float(self.F[self.I[core.F_PAR]])

    def warm_up(self) -> None:
        """Load the compiled input handling now (from numba's cache, or compile it), not at the first
        message: an undecodable empty message for every slot changes nothing."""
        empty = np.frombuffer(b"", dtype=np.uint8)
        for s in range(int(self.I[core.H_NSLOTS])):
            core.ingest(self.I, self.F, empty, s, 0)
        core.missing_mask(self.I, 0)
        core.names_region(empty)                   # the reader of a new joint-name layout

    def slot_index(self, name: str) -> int:
        """Index of an input in the state (0: the joint states)."""
        return self._index[name]

    def reset(self) -> None:
        """Forget every sample and the filter states (on activate); counters are kept."""
        I, w = self.I, core.SLOT_W
        for s in range(I[core.H_NSLOTS]):
            r = I[core.H_SLOTS] + w * s
            I[r + core.S_STAMP] = I[r + core.S_RECEIPT] = NONE
            I[r + core.S_READY] = 0
        I[core.H_ACC_T] = I[core.H_GYRO_T] = NONE
        I[core.H_ACC_READY] = I[core.H_GYRO_READY] = 0

    # ------------------------------------------------------------------ inputs
    def on_message(self, slot: int, buf, now_ns: int) -> int:
        """The serialized message ``buf`` (bytes-like) of input ``slot`` (:meth:`slot_index`) received at
        ``now_ns``: 1 accepted and ready, 0 accepted, -1 rejected, ``input_core.CDR_ERROR`` undecodable."""
        b = np.frombuffer(buf, dtype=np.uint8)
        code = core.ingest(self.I, self.F, b, slot, now_ns)
        if code == core.NEED_LAYOUT:
            code = self._new_layout(b, now_ns)
        return code

    def _new_layout(self, b, now_ns: int) -> int:
        """A joint state whose names are not the cached ones: read them, check them against the
        model, cache the layout and handle the message (or reject it)."""
        region = core.names_region(b)
        if region is None:
            return core.CDR_ERROR
        try:
            msg = cdr.decode(cdr.JOINT_STATE, b.tobytes())
        except cdr.CdrError:
            return core.CDR_ERROR
        hit = self._js_layout.lookup(msg.name)
        if isinstance(hit, str):
            return self._rejected_layout(msg, hit, now_ns)
        start, end = region
        if not core.store_layout(self.I, b[start:end].tobytes(), hit[0], len(msg.name)):
            return self._rejected_layout(msg, "unknown_joint", now_ns)
        return core.ingest(self.I, self.F, b, 0, now_ns)

    def _rejected_layout(self, msg, reason: str, now_ns: int) -> int:
        """A joint state whose names cannot be the cached layout (``reason``): rejected; the joint-torque
        sensors it carries (``H_JTJS``) are read by :meth:`on_joint_torques` (names looked up one by one)."""
        self.joint_states.reject(reason)
        if self.I[core.H_JTJS]:
            self.on_joint_torques(msg, now_ns)
        return -1

    def on_joint_torques(self, msg, now_ns: int) -> bool:
        """The ``effort`` field of a (decoded) ``JointState``: the joint-torque sensors it names (their own
        topic; in the joint states' messages the compiled :func:`~.input_core.joint_efforts` reads them)."""
        if not self._jt_index:
            return False
        first = self.slots[next(iter(self._jt_index))]
        hit = self._jt_layout.lookup(msg.name)
        if isinstance(hit, str):
            return first.reject(hit)
        eff = np.asarray(msg.effort, dtype=np.float64)
        if len(eff) != len(msg.name):
            return first.reject("wrong_length")
        t = stamp_ns(msg.header.stamp)
        at, pos = hit
        where = {int(k): int(i) for k, i in zip(pos, at)}
        found = [(self.slots[j], where[k]) for j, k in self._jt_index.items() if k in where]
        if not found:
            return first.reject("missing_joint")
        if not all(math.isfinite(eff[i]) for _, i in found):
            return first.reject("non_finite")
        if not all(s.check_stamp(t) for s, _ in found):
            return first.reject("stamp_not_increasing")
        for s, i in found:
            s.value[0] = eff[i]
            s.accept(t, now_ns)
        return True

    # ------------------------------------------------------------------ tick
    def missing(self, now_ns: int) -> frozenset:
        """Sensors of the configuration without a fresh sample at ``now_ns``, and those excluded
        (:meth:`exclude`)."""
        mask = core.missing_mask(self.I, now_ns) | self.excluded
        hit = self._missing_sets.get(mask)
        if hit is None:
            names = self.sensor_names
            hit = self._missing_sets[mask] = frozenset(n for k, n in enumerate(names) if mask >> k & 1)
        return hit

    def y_index(self, sensors) -> np.ndarray:
        """Indices into :attr:`F` of the measurement vector ``y`` of ``sensors`` (an estimator's
        ``config.sensors``): each sensor's latest value (the IMU's sample, then its angular
        acceleration from the gyro's derivative filter when it is used), in order."""
        parts = []
        for s in sensors:
            if s.BASE_MOTION:
                parts.append(np.arange(self._imu_at, self._imu_at + 10))
                if s.size > 10:
                    parts.append(np.arange(self._alpha_at, self._alpha_at + 3))
                continue
            r = self.I[core.H_SLOTS] + core.SLOT_W * self._index[s.name]
            v = int(self.I[r + core.S_VALUE])
            parts.append(np.arange(v, v + s.size))
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


_EMPTY = frozenset()
