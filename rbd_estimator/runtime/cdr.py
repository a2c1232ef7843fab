"""CDR (XCDR1, as ROS 2 writes it): the output messages as rosbags serializes them, a joint-state decoder.

Encoding. The node and the replay publish/write their outputs with :class:`JointTorquesEncoder`,
:class:`WrenchStampedEncoder` and :class:`ContactStateEncoder`: each is a :class:`MessageTemplate`,
a message serialized once by rosbags' serializer (``Typestore.serialize_cdr``) when the outputs are
created, whose header stamp and float64 values are then written in place per tick. No CDR is
written by hand; where the stamp and the values lie is found by serializing sentinel values.

Decoding. The input messages are decoded by the compiled :mod:`~rbd_estimator.runtime.input_core`.
:func:`decode` reads the ``sensor_msgs/JointState`` messages that take the Python path (the name
list of a joint state with a new layout, the joint-torque topic, the contact commands) into light
objects with the ROS field names (``msg.header.stamp.sec``, ``msg.name``, ``msg.effort``). This
decoder stays hand-written: rosbags' ``deserialize_cdr`` refuses a message with more than 3 bytes
after its last field, and rclpy's ``serialize_message`` (what a node publishing serialized messages
sends) leaves 8 there; on well-formed messages the two cost about the same (13.6 µs against
15.6 µs for a 29-joint ``JointState`` here). Both directions are checked against rclpy's and
rosbags' serializers in the tests. No ROS import (rosbags is a pure-Python library).

Layout rules of the decoder (OMG CDR): the 4-byte encapsulation header ``00 01 00 00``, then the
fields in order, each primitive aligned to its size relative to the start of the body; strings are a
``uint32`` length including the terminating NUL, then the bytes; sequences a ``uint32`` count, then
the elements (aligned only when there is at least one).
"""
from __future__ import annotations

import functools
import struct

import numpy as np

_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")

JOINT_STATE = "sensor_msgs/msg/JointState"
IMU = "sensor_msgs/msg/Imu"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
FLOAT64_MULTI_ARRAY = "std_msgs/msg/Float64MultiArray"
STRING = "std_msgs/msg/String"


class CdrError(ValueError):
    """A message's bytes do not decode as its type."""


# ============================================================================ light message objects
class Time:
    __slots__ = ("sec", "nanosec")

    def __init__(self, sec=0, nanosec=0):
        self.sec, self.nanosec = sec, nanosec


class Header:
    __slots__ = ("stamp", "frame_id")

    def __init__(self, stamp, frame_id=""):
        self.stamp, self.frame_id = stamp, frame_id


class JointStateMsg:
    __slots__ = ("header", "name", "position", "velocity", "effort")


# ============================================================================ decoding
def _align(o: int, n: int) -> int:
    r = (o - 4) % n
    return o + (n - r) if r else o


def _string(buf, o: int):
    o = _align(o, 4)
    (n,) = _U32.unpack_from(buf, o)
    o += 4
    if n == 0 or o + n > len(buf):
        raise CdrError("string runs past the end of the message")
    return bytes(buf[o:o + n - 1]).decode("utf-8"), o + n


def _doubles(buf, o: int):
    o = _align(o, 4)
    (n,) = _U32.unpack_from(buf, o)
    o += 4
    if n == 0:
        return _EMPTY, o
    o = _align(o, 8)
    end = o + 8 * n
    if end > len(buf):
        raise CdrError("float64 sequence runs past the end of the message")
    return np.frombuffer(buf, dtype="<f8", count=n, offset=o), end


_EMPTY = np.zeros(0)


def _header(buf):
    if len(buf) < 16 or buf[1] != 1:
        raise CdrError("not a little-endian CDR message")
    sec, nsec = _STAMP.unpack_from(buf, 4)
    frame, o = _string(buf, 12)
    return Header(Time(sec, nsec), frame), o


def decode_joint_state(buf) -> JointStateMsg:
    m = JointStateMsg()
    m.header, o = _header(buf)
    o = _align(o, 4)
    (n,) = _U32.unpack_from(buf, o)
    o += 4
    if n > len(buf):
        raise CdrError("name sequence longer than the message")
    m.name = []
    for _ in range(n):
        name, o = _string(buf, o)
        m.name.append(name)
    m.position, o = _doubles(buf, o)
    m.velocity, o = _doubles(buf, o)
    m.effort, o = _doubles(buf, o)
    return m


DECODERS = {JOINT_STATE: decode_joint_state}


def decode(msgtype: str, buf):
    """Decode ``buf`` as ``msgtype`` (one of :data:`DECODERS`); raises :class:`CdrError` on bad bytes."""
    try:
        return DECODERS[msgtype](buf)
    except CdrError:
        raise
    except (struct.error, UnicodeDecodeError, ValueError, IndexError) as exc:
        raise CdrError(f"cannot decode a {msgtype}: {exc}") from None


# ============================================================================ encoding
@functools.lru_cache(maxsize=1)
def _typestore():
    """rosbags' message types of ROS 2 Jazzy (the types used here are the same in every ROS 2 release)."""
    from rosbags.typesys import Stores, get_typestore
    return get_typestore(Stores.ROS2_JAZZY)


def _header_msg(ts, stamp, frame_id: str):
    time = ts.types["builtin_interfaces/msg/Time"](sec=stamp[0], nanosec=stamp[1])
    return ts.types["std_msgs/msg/Header"](stamp=time, frame_id=frame_id)


# (sec, nanosec) header stamps tried in turn as sentinels, each with float64 sentinels of its own: the
# first whose marks all occur exactly once in the serialized message is taken
_STAMP_SENTINELS = ((0x5A17C0DE, 0x03C0FFEE), (0x2BADF00D, 0x0DEFACED), (0x1337BEEF, 123456789))


class MessageTemplate:
    """A message serialized once by rosbags' CDR serializer, whose header stamp and blocks of
    contiguous float64 fields are then written in place per tick (:meth:`encode`).

    ``build(stamp, blocks)`` returns the rosbags message of ``typename`` with the header stamp
    ``(sec, nanosec)`` and the float64 arrays ``blocks``, one per entry of ``sizes``. The offsets of
    the stamp and the blocks in the serialized bytes are found by serializing sentinel values and
    locating them (each must occur exactly once), so they follow the library's layout whatever the
    names and frame ids before them. :attr:`buf` is the message with a zero stamp and zero values.
    """

    def __init__(self, typename: str, build, sizes, stamped: bool = True):
        ts = _typestore()
        self.typename, self.sizes = typename, tuple(int(n) for n in sizes)
        for attempt, stamp in enumerate(_STAMP_SENTINELS):
            blocks = [-(1.0 + np.arange(n) + 1000.0 * (k + 1)) * (1e-300 + attempt * 1e-250)
                      for k, n in enumerate(self.sizes)]
            buf = bytearray(ts.serialize_cdr(build(stamp, blocks), typename))
            marks = [_STAMP.pack(*stamp) if stamped else b""] + [np.asarray(b, "<f8").tobytes() for b in blocks]
            if all(buf.count(m) == 1 for m in marks if m):
                break
        else:
            raise CdrError(f"cannot locate the stamp and the values in a serialized {typename}")
        self.stamp_offset = buf.index(marks[0]) if stamped else -1       # -1: a message without a header
        self.offsets = tuple(buf.index(m) if m else len(buf) for m in marks[1:])
        ts.deserialize_cdr(bytes(buf), typename)       # the library reads back what it wrote
        self.buf = buf
        if stamped:
            _STAMP.pack_into(buf, self.stamp_offset, 0, 0)
        self._blocks = [np.frombuffer(buf, "<f8", n, o) for n, o in zip(self.sizes, self.offsets)]
        for view in self._blocks:
            view[:] = 0.0

    def encode(self, sec: int, nanosec: int, *values) -> bytes:
        """The message with the header stamp ``sec``, ``nanosec`` and one array of values per block
        (written into :attr:`buf`; the bytes returned are a copy, as rclpy's ``publish`` and
        rosbags' ``write`` take them)."""
        if self.stamp_offset >= 0:
            _STAMP.pack_into(self.buf, self.stamp_offset, sec, nanosec)
        for view, v in zip(self._blocks, values):
            view[:] = v
        return bytes(self.buf)


def _joint_state(names, frame_id: str, fields):
    """``build`` for a ``JointState`` with fixed ``names`` and the blocks in ``fields`` (position,
    velocity, effort; the others empty)."""
    def build(stamp, blocks):
        ts = _typestore()
        arrays = dict.fromkeys(("position", "velocity", "effort"), np.zeros(0))
        arrays.update(zip(fields, (np.asarray(b, np.float64) for b in blocks)))
        return ts.types[JOINT_STATE](header=_header_msg(ts, stamp, frame_id), name=list(names), **arrays)
    return build


class JointTorquesEncoder(MessageTemplate):
    """``sensor_msgs/JointState`` with fixed names, empty positions and velocities, efforts per tick
    (what the node publishes on ``~/joint_torques``): ``encode(sec, nanosec, tau)``."""

    def __init__(self, names, frame_id: str = ""):
        self.n = len(names)
        super().__init__(JOINT_STATE, _joint_state(names, frame_id, ("effort",)), (self.n,))


class ContactStateEncoder(MessageTemplate):
    """``sensor_msgs/JointState`` with fixed names (the contacts) and per tick ``position``,
    ``velocity`` and ``effort`` (what the node publishes on ``~/contact_state``, see
    :mod:`~rbd_estimator.runtime.contact_state`): ``encode(sec, nanosec, position, velocity, effort)``."""

    def __init__(self, names, frame_id: str = ""):
        n = len(names)
        super().__init__(JOINT_STATE, _joint_state(names, frame_id, ("position", "velocity", "effort")), (n, n, n))


class OffsetsEncoder(MessageTemplate):
    """``sensor_msgs/JointState`` with fixed names (the tracked sensor entries), per tick the offsets
    in ``position`` and their variances in ``effort`` (``~/sensor_offsets``, docs/offsets.md):
    ``encode(sec, nanosec, offsets, variances)``."""

    def __init__(self, names, frame_id: str = ""):
        n = len(names)
        super().__init__(JOINT_STATE, _joint_state(names, frame_id, ("position", "effort")), (n, n))


class WrenchStampedEncoder(MessageTemplate):
    """``geometry_msgs/WrenchStamped`` with a fixed frame id: ``encode(sec, nanosec, w)``,
    ``w = [fx, fy, fz, tx, ty, tz]`` (force and torque are contiguous in CDR: one block of 6)."""

    def __init__(self, frame_id: str):
        self.frame_id = frame_id

        def build(stamp, blocks):
            ts = _typestore()
            v3 = ts.types["geometry_msgs/msg/Vector3"]
            w = [float(x) for x in blocks[0]]
            wrench = ts.types["geometry_msgs/msg/Wrench"](force=v3(x=w[0], y=w[1], z=w[2]),
                                                          torque=v3(x=w[3], y=w[4], z=w[5]))
            return ts.types[WRENCH_STAMPED](header=_header_msg(ts, stamp, frame_id), wrench=wrench)

        super().__init__(WRENCH_STAMPED, build, (6,))


def encode_string(text: str) -> bytes:
    """A ``std_msgs/String`` serialized by rosbags (an event's message: not per tick)."""
    ts = _typestore()
    return bytes(ts.serialize_cdr(ts.types[STRING](data=text), STRING))


class CovarianceEncoder(MessageTemplate):
    """``std_msgs/Float64MultiArray`` holding one contact wrench's 6 × 6 covariance, row-major:
    two dimensions labelled ``fx fy fz tx ty tz`` (sizes 6, strides 36 and 6), units N², N²·m,
    N²·m² (what the node publishes on ``~/contact_wrenches/<contact>/covariance``; the type has no
    header: it follows the wrench of the same tick on its topic). ``encode(sec, nanosec, C)``
    (the stamp is not written)."""

    def __init__(self):
        from ..estimation.layout import BOUNDARY      # the components at the boundary, as the dimensions say
        label = " ".join(BOUNDARY)

        def build(stamp, blocks):
            ts = _typestore()
            dim = ts.types["std_msgs/msg/MultiArrayDimension"]
            layout = ts.types["std_msgs/msg/MultiArrayLayout"](
                dim=[dim(label=label, size=6, stride=36), dim(label=label, size=6, stride=6)], data_offset=0)
            return ts.types[FLOAT64_MULTI_ARRAY](layout=layout, data=np.asarray(blocks[0], np.float64))

        super().__init__(FLOAT64_MULTI_ARRAY, build, (36,), stamped=False)


__all__ = ["CdrError", "CovarianceEncoder", "encode_string", "decode", "DECODERS", "MessageTemplate", "JointTorquesEncoder", "ContactStateEncoder",
           "WrenchStampedEncoder", "JOINT_STATE", "IMU", "WRENCH_STAMPED", "FLOAT64_MULTI_ARRAY", "STRING"]
