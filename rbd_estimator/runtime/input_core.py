"""The node's input handling, compiled: CDR bytes → validated latest samples, filters, freshness.

Every input message reaches the estimator as its serialized bytes (CDR, little endian, as ROS 2
sends and rosbag2 stores them): the live node takes them raw from the middleware, the offline
replay reads them from the bag. The functions here decode, validate and store them with no
Python in the loop and no allocation, into two flat arrays that hold the whole input state:

* ``I`` (int64): sizes, offsets, and one record per *slot* (slot 0 the joint states, then every
  sensor of the configuration): header stamp and receipt time of its latest accepted sample (ns,
  :data:`NONE` before the first), samples accepted, readiness, timeout (ns), kind, where its value
  lives in ``F``, its size, and one rejection counter per reason of :data:`REASONS`;
* ``F`` (float64): q, q̇ (model order), the joints' filter (the low-pass derivative of q̇ → q̈, or
  the Kalman filter of :mod:`~rbd_estimator.runtime.kalman` that gives q̇ and q̈), the IMU's ω → ω̇,
  the IMU sample (orientation x, y, z, w; ω in rad/s; specific force in m/s², IMU frame), the
  force-torque readings as received and corrected (``reading − ft_offsets.<sensor>``, N and N·m in
  the sensor frame), the offsets, the load-cell forces (N), the joint-torque readings (taken from the
  joint states' ``effort`` when they come in them, ``H_JTJS``) and scratch space.

:class:`~rbd_estimator.runtime.inputs.SensorInputs` builds the arrays and reads them; the functions
return a code: ``1`` accepted and ready, ``0`` accepted (not ready yet: a filter needs a second
sample), ``-1`` rejected (counted in ``I``), ``CDR_ERROR`` (the bytes do not decode as the type,
nothing counted) or ``NEED_LAYOUT`` (a joint state whose name list differs from the cached one:
Python reads the names, stores the layout with :func:`store_layout`, and calls again).

Decoding follows the OMG CDR rules ROS 2 uses (rosbags' and rclpy's serializers are the reference
in the tests): a 4-byte encapsulation header, then fields aligned to
their size relative to the end of that header; strings ``uint32`` length (with the NUL) + bytes;
sequences ``uint32`` count + elements.
"""
from __future__ import annotations

import numpy as np

from ..jit import njit
from ..kernels.layout import Layout
from .kalman import kalman_step

#: Reasons a sample can be rejected for (diagnostics keys), in counter order.
REASONS = ("non_finite", "wrong_length", "unknown_joint", "missing_joint", "stamp_not_increasing",
           "bad_orientation")
NON_FINITE, WRONG_LENGTH, UNKNOWN_JOINT, MISSING_JOINT, STAMP_NOT_INCREASING, BAD_ORIENTATION = range(6)

NONE = np.iinfo(np.int64).min          # "no sample yet" (stamps, receipt times)
CDR_ERROR, NEED_LAYOUT = -2, -3

# slot kinds
JOINT_STATES, IMU, WRENCH, FLOAT64_ARRAY, JOINT_EFFORT = range(5)

# ---- the record of a slot in I (SLOT_W integers from I[H_SLOTS] + SLOT_W * slot)
# (S_JOINT: a joint-effort slot's joint, index in q; S_REJ: one counter per reason)
SLOT = Layout(("S_STAMP S_RECEIPT S_RECEIVED S_READY S_TIMEOUT S_KIND S_VALUE S_SIZE S_RAW S_OFFSET S_JOINT".split()
               + [("S_REJ", len(REASONS))]))
S_STAMP, S_RECEIPT, S_RECEIVED, S_READY, S_TIMEOUT, S_KIND, S_VALUE, S_SIZE, S_RAW, S_OFFSET, S_JOINT, S_REJ = \
    SLOT.slots
SLOT_W = SLOT.size

# ---- header of I: sizes and offsets (into I for H_SLOTS/H_NAMES/H_GATHER; the F_ entries hold
# offsets into F; F[I[F_PAR]] is the filters' low-pass time constant T_c (s), F[I[F_PAR] + 1] their
# max_gap (s); H_KF the joints' Kalman filter's order (0: the low-pass), F_KF its block; H_JTJS 1 when
# the joint-effort slots are read from the joint states' effort field)
INPUT_HEADER = Layout("H_NJ H_NSLOTS H_SLOTS H_NAMES H_NAMES_CAP H_NAMES_LEN H_GATHER H_ACC_T H_ACC_READY H_GYRO_T "
                      "H_GYRO_READY H_ALPHA F_Q F_DQ F_ACC F_ACC_PREV F_GYRO F_GYRO_PREV F_IMU F_SCR F_PAR H_NMSG "
                      "H_KF F_KF H_JTJS")
(H_NJ, H_NSLOTS, H_SLOTS, H_NAMES, H_NAMES_CAP, H_NAMES_LEN, H_GATHER, H_ACC_T, H_ACC_READY, H_GYRO_T,
 H_GYRO_READY, H_ALPHA, F_Q, F_DQ, F_ACC, F_ACC_PREV, F_GYRO, F_GYRO_PREV, F_IMU, F_SCR, F_PAR,
 H_NMSG, H_KF, F_KF, H_JTJS) = INPUT_HEADER.slots
HEADER = INPUT_HEADER.size
for _layout in (SLOT, INPUT_HEADER):
    _layout.check(globals())
del _layout


# ============================================================================ byte reading
@njit
def _u32(b, o):
    return np.int64(b[o]) | (np.int64(b[o + 1]) << 8) | (np.int64(b[o + 2]) << 16) | (np.int64(b[o + 3]) << 24)


@njit
def _i32(b, o):
    v = _u32(b, o)
    return v - (np.int64(1) << 32) if v >= (np.int64(1) << 31) else v


@njit
def _align(o, n):
    """``o`` (absolute offset) aligned to ``n`` relative to the CDR body (offset 4)."""
    r = (o - 4) % n
    return o + (n - r) if r else o


@njit
def _copy_f64(b, o, F8, k, n):
    """``n`` little-endian doubles at byte ``o`` of ``b`` → ``F[k:k + n]`` (``F8``: F's bytes)."""
    d = 8 * k
    for j in range(8 * n):
        F8[d + j] = b[o + j]


@njit
def _header(b):
    """Stamp (ns) and the offset after ``std_msgs/Header``; offset -1 if the bytes are not one."""
    n = b.shape[0]
    if n < 16 or b[1] != 1:
        return 0, -1
    t = _i32(b, 4) * np.int64(1_000_000_000) + _u32(b, 8)
    flen = _u32(b, 12)
    o = 16 + flen
    if flen < 1 or o > n:
        return 0, -1
    return t, o


@njit
def _seq_f64(b, o):
    """A ``float64[]`` at ``o``: (count, offset of the data, offset after it); offset -1 if past the end."""
    n = b.shape[0]
    o = _align(o, 4)
    if o + 4 > n:
        return 0, -1, -1
    c = _u32(b, o)
    o += 4
    if c == 0:
        return 0, o, o
    o = _align(o, 8)
    end = o + 8 * c
    if end > n:
        return 0, -1, -1
    return c, o, end


# ============================================================================ slots
@njit
def _slot(I, s):
    return I[H_SLOTS] + SLOT_W * s


@njit
def _reject(I, r, reason):
    I[r + S_REJ + reason] += 1
    return -1


@njit
def _finite(F, k, n):
    for j in range(n):
        if not np.isfinite(F[k + j]):
            return False
    return True


@njit
def _stamp_increases(I, r, t):
    return I[r + S_STAMP] == NONE or t > I[r + S_STAMP]


@njit
def fresh(I, s, now):
    """Whether slot ``s`` has a usable sample no older than its timeout at ``now`` (ns, receipt clock)."""
    r = _slot(I, s)
    return I[r + S_READY] != 0 and I[r + S_RECEIPT] != NONE and now - I[r + S_RECEIPT] <= I[r + S_TIMEOUT]


@njit
def missing_mask(I, now):
    """Bit ``s − 1`` set for every sensor slot ``s ≥ 1`` without a fresh sample at ``now``."""
    m = np.int64(0)
    for s in range(1, I[H_NSLOTS]):
        if not fresh(I, s, now):
            m |= np.int64(1) << (s - 1)
    return m


# ============================================================================ the derivative filter
@njit
def derivative_update(I, F, it, iready, ky, kprev, kx, n, t, Tc, max_gap):
    """One sample of the filtered derivative (:mod:`rbd_estimator.runtime.filters`, whose docstring
    has the equations): ``x = F[kx:kx+n]`` stamped ``t`` (ns); state ``y = F[ky:]``,
    ``x_{k−1} = F[kprev:]``, ``t_{k−1} = I[it]`` and readiness ``I[iready]``. ``Tc`` (s) the
    low-pass time constant, ``max_gap`` (s). Returns whether ``y`` holds an output."""
    if I[it] != NONE:
        dt = (t - I[it]) * 1e-9
        if dt > 0.0 and dt <= max_gap:
            alpha = dt / (dt + Tc)
            for j in range(n):
                a = (F[kx + j] - F[kprev + j]) / dt
                if I[iready]:
                    F[ky + j] += alpha * (a - F[ky + j])
                else:
                    F[ky + j] = a
                F[kprev + j] = F[kx + j]
            I[iready] = 1
            I[it] = t
            return True
    for j in range(n):
        F[kprev + j] = F[kx + j]
    I[it] = t
    I[iready] = 0
    return False


# ============================================================================ messages
@njit
def _names_match(I, b, o):
    """Whether the joint-name sequence at ``o`` is byte for byte the cached one."""
    L = I[H_NAMES_LEN]
    if L < 0 or o + L > b.shape[0]:
        return False
    k = I[H_NAMES]
    for j in range(L):
        if I[k + j] != b[o + j]:
            return False
    return True


@njit
def joint_state(I, F, b, now):
    """``sensor_msgs/JointState``: names (cached layout), positions and velocities in message
    order (rad or m, rad/s or m/s) → q, q̇ in model order; the joints' filter advances. With the
    Kalman filter the velocities may be absent (an empty array) and q̇ is the filter's."""
    t, o = _header(b)
    if o < 0:
        return CDR_ERROR
    o = _align(o, 4)
    if not _names_match(I, b, o):
        return NEED_LAYOUT
    o += I[H_NAMES_LEN]
    npos, opos, o = _seq_f64(b, o)
    if o < 0:
        return CDR_ERROR
    nvel, ovel, o = _seq_f64(b, o)
    if o < 0:
        return CDR_ERROR
    neff, oeff, o = _seq_f64(b, o)
    if o < 0:
        return CDR_ERROR
    if I[H_JTJS]:                                # the joint-torque sensors, whatever becomes of q and q̇
        joint_efforts(I, F, b, neff, oeff, t, now)
    r = _slot(I, JOINT_STATES)
    nj = I[H_NJ]
    kf = I[H_KF]
    has_v = nvel == I[H_NMSG]
    if npos != I[H_NMSG] or not (has_v or (kf and nvel == 0)):   # the cached layout's length (mimic joints too)
        return _reject(I, r, WRONG_LENGTH)
    F8 = F.view(np.uint8)
    g = I[H_GATHER]
    ks = I[F_SCR]
    for k in range(nj):                          # gather into model order, in scratch first
        _copy_f64(b, opos + 8 * I[g + k], F8, ks + k, 1)
        if has_v:
            _copy_f64(b, ovel + 8 * I[g + k], F8, ks + nj + k, 1)
        else:
            F[ks + nj + k] = 0.0
    if not _finite(F, ks, 2 * nj):
        return _reject(I, r, NON_FINITE)
    if not _stamp_increases(I, r, t):
        return _reject(I, r, STAMP_NOT_INCREASING)
    kq, kdq = I[F_Q], I[F_DQ]
    for k in range(nj):
        F[kq + k] = F[ks + k]
        F[kdq + k] = F[ks + nj + k]
    I[r + S_STAMP], I[r + S_RECEIPT] = t, now
    I[r + S_RECEIVED] += 1
    if kf:
        ready = kalman_step(I, H_ACC_T, H_ACC_READY, F, I[F_KF], kf, nj, kq, kdq, has_v, kdq, I[F_ACC], t,
                            F[I[F_PAR] + 1])
    else:
        ready = derivative_update(I, F, H_ACC_T, H_ACC_READY, I[F_ACC], I[F_ACC_PREV], kdq, nj,
                                  t, F[I[F_PAR]], F[I[F_PAR] + 1])
    I[r + S_READY] = 1 if ready else 0
    return 1 if ready else 0


@njit
def _effort_slot(I, s):
    """Slot ``s``'s record in ``I`` when it is a joint-effort slot read from the joint states (its
    joint known), else -1."""
    r = _slot(I, s)
    return r if I[r + S_KIND] == JOINT_EFFORT and I[r + S_JOINT] >= 0 else -1


@njit
def joint_efforts(I, F, b, n, o, t, now):
    """The joint-effort slots (joint-torque sensors, N·m or the reading's unit) from the ``n`` efforts
    at byte ``o`` of a joint state stamped ``t`` with the cached name layout: all of them, or none,
    the rejection counted on the first slot (as many efforts as names, finite, stamps increasing)."""
    first = -1
    for s in range(1, I[H_NSLOTS]):
        first = _effort_slot(I, s)
        if first >= 0:
            break
    if first < 0:
        return
    if n != I[H_NMSG]:
        _reject(I, first, WRONG_LENGTH)
        return
    F8, g, ks, m = F.view(np.uint8), I[H_GATHER], I[F_SCR], 0
    for s in range(1, I[H_NSLOTS]):              # the efforts, in scratch first
        r = _effort_slot(I, s)
        if r >= 0:
            _copy_f64(b, o + 8 * I[g + I[r + S_JOINT]], F8, ks + m, 1)
            m += 1
    if not _finite(F, ks, m):
        _reject(I, first, NON_FINITE)
        return
    for s in range(1, I[H_NSLOTS]):
        r = _effort_slot(I, s)
        if r >= 0 and not _stamp_increases(I, r, t):
            _reject(I, first, STAMP_NOT_INCREASING)
            return
    m = 0
    for s in range(1, I[H_NSLOTS]):
        r = _effort_slot(I, s)
        if r >= 0:
            F[I[r + S_VALUE]] = F[ks + m]
            I[r + S_STAMP], I[r + S_RECEIPT], I[r + S_READY] = t, now, 1
            I[r + S_RECEIVED] += 1
            m += 1


@njit
def imu(I, F, b, s, now):
    """``sensor_msgs/Imu`` into slot ``s``: orientation (normalised; rejected unless its norm is
    within 1e-2 of 1), angular velocity (rad/s) and linear acceleration (m/s²), IMU frame; the ω̇
    filter advances when the configuration uses it (the sample is ready from its second one)."""
    t, o = _header(b)
    if o < 0:
        return CDR_ERROR
    o = _align(o, 8)
    if o + 37 * 8 > b.shape[0]:                 # orientation 4, cov 9, ω 3, cov 9, a 3, cov 9
        return CDR_ERROR
    r = _slot(I, s)
    F8 = F.view(np.uint8)
    ks = I[F_SCR]
    _copy_f64(b, o, F8, ks, 4)
    _copy_f64(b, o + 13 * 8, F8, ks + 4, 3)
    _copy_f64(b, o + 25 * 8, F8, ks + 7, 3)
    if not _finite(F, ks, 10):
        return _reject(I, r, NON_FINITE)
    norm = np.sqrt(F[ks] * F[ks] + F[ks + 1] * F[ks + 1] + F[ks + 2] * F[ks + 2] + F[ks + 3] * F[ks + 3])
    if abs(norm - 1.0) > 1e-2:
        return _reject(I, r, BAD_ORIENTATION)
    if not _stamp_increases(I, r, t):
        return _reject(I, r, STAMP_NOT_INCREASING)
    ki = I[F_IMU]
    for j in range(4):
        F[ki + j] = F[ks + j] / norm
    for j in range(6):
        F[ki + 4 + j] = F[ks + 4 + j]
    I[r + S_STAMP] = t
    I[r + S_RECEIVED] += 1
    ready = True
    if I[H_ALPHA]:
        ready = derivative_update(I, F, H_GYRO_T, H_GYRO_READY, I[F_GYRO], I[F_GYRO_PREV],
                                  ki + 4, 3, t, F[I[F_PAR]], F[I[F_PAR] + 1])
    I[r + S_READY] = 1 if ready else 0
    if ready:
        I[r + S_RECEIPT] = now
    return 1 if ready else 0


@njit
def wrench(I, F, b, s, now):
    """``geometry_msgs/WrenchStamped`` into force-torque slot ``s``: ``[fx, fy, fz, tx, ty, tz]``
    (N, N·m, sensor frame) as received, and corrected by the sensor's offset (reading − offset)."""
    t, o = _header(b)
    if o < 0:
        return CDR_ERROR
    o = _align(o, 8)
    if o + 48 > b.shape[0]:
        return CDR_ERROR
    r = _slot(I, s)
    ks = I[F_SCR]
    _copy_f64(b, o, F.view(np.uint8), ks, 6)
    if not _finite(F, ks, 6):
        return _reject(I, r, NON_FINITE)
    if not _stamp_increases(I, r, t):
        return _reject(I, r, STAMP_NOT_INCREASING)
    kv, kraw, koff = I[r + S_VALUE], I[r + S_RAW], I[r + S_OFFSET]
    for j in range(6):
        F[kraw + j] = F[ks + j]
        F[kv + j] = F[kraw + j] - F[koff + j]
    I[r + S_STAMP], I[r + S_RECEIPT], I[r + S_READY] = t, now, 1
    I[r + S_RECEIVED] += 1
    return 1


@njit
def load_cells(I, F, b, s, now):
    """``std_msgs/Float64MultiArray`` into load-cell slot ``s``: one force per cell (N), in the
    configured cell order. No stamp: freshness is the receipt time ``now``."""
    n = b.shape[0]
    if n < 12 or b[1] != 1:
        return CDR_ERROR
    ndim = _u32(b, 4)
    o = 8
    for _ in range(ndim):                        # MultiArrayDimension: label, size, stride
        o = _align(o, 4)
        if o + 4 > n:
            return CDR_ERROR
        o += 4 + _u32(b, o)
        o = _align(o, 4) + 8
        if o > n:
            return CDR_ERROR
    o = _align(o, 4) + 4                         # data_offset
    c, od, end = _seq_f64(b, o)
    if end < 0:
        return CDR_ERROR
    r = _slot(I, s)
    if c != I[r + S_SIZE]:
        return _reject(I, r, WRONG_LENGTH)
    ks = I[F_SCR]
    _copy_f64(b, od, F.view(np.uint8), ks, c)
    if not _finite(F, ks, c):
        return _reject(I, r, NON_FINITE)
    kv = I[r + S_VALUE]
    for j in range(c):
        F[kv + j] = F[ks + j]
    I[r + S_RECEIPT], I[r + S_READY] = now, 1
    I[r + S_RECEIVED] += 1
    return 1


@njit
def ingest(I, F, b, s, now):
    """The message ``b`` (bytes of slot ``s``'s type) received at ``now`` (ns): see the module docstring."""
    kind = I[_slot(I, s) + S_KIND]
    if kind == JOINT_STATES:
        return joint_state(I, F, b, now)
    if kind == IMU:
        return imu(I, F, b, s, now)
    if kind == WRENCH:
        return wrench(I, F, b, s, now)
    if kind == FLOAT64_ARRAY:
        return load_cells(I, F, b, s, now)
    return CDR_ERROR


def store_layout(I, names_bytes: bytes, gather, n_names: int) -> bool:
    """Cache a joint-state name sequence (its CDR bytes, ``n_names`` names: the model joints and
    any ignored ones such as mimic joints) and its gather indices (message index of each model
    joint); False if it does not fit the space reserved at configure."""
    n = len(names_bytes)
    if n > I[H_NAMES_CAP]:
        return False
    k = I[H_NAMES]
    I[k:k + n] = np.frombuffer(names_bytes, dtype=np.uint8)
    I[H_NAMES_LEN] = n
    I[H_NMSG] = n_names
    g = I[H_GATHER]
    I[g:g + len(gather)] = gather
    return True


def names_region(b) -> tuple[int, int] | None:
    """Byte range of the name sequence of a joint state (None if the bytes are not one)."""
    start, end = _names_region(b)
    return None if start < 0 else (int(start), int(end))


@njit
def _names_region(b):
    """:func:`names_region` compiled as one kernel (``(-1, -1)``: not a joint state), so that a new
    joint-name layout compiles nothing at its first message (``SensorInputs.warm_up`` loads it)."""
    t, o = _header(b)
    n = b.shape[0]
    if o < 0:
        return -1, -1
    start = o = _align(o, 4)
    if o + 4 > n:
        return -1, -1
    count = _u32(b, o)
    o += 4
    for _ in range(count):
        o = _align(o, 4)
        if o + 4 > n:
            return -1, -1
        o += 4 + _u32(b, o)
        if o > n:
            return -1, -1
    return start, o
