"""CDR (little-endian, XCDR1 as ROS 2 writes it) codecs in Python for what is not on the tick path.

The node and the replay publish/write their outputs with :class:`JointTorquesEncoder` and
:class:`WrenchStampedEncoder` (templates with the stamp and values set per tick); the input
messages are decoded by the compiled :mod:`~rbd_estimator.runtime.input_core`. The decoders here return
light objects with the ROS field names (``msg.header.stamp.sec``, ``msg.name``, ``msg.effort``)
for the rest: the name list of a joint state with a new layout, the joint-torque sensors, the
robot description in a recording. Checked against rclpy's and rosbags' serializers in the tests.
No ROS import.

Layout rules (OMG CDR): the 4-byte encapsulation header ``00 01 00 00`` (CDR_LE), then the fields
in order, each primitive aligned to its size relative to the start of the body; strings are a
``uint32`` length including the terminating NUL, then the bytes; sequences a ``uint32`` count, then
the elements (aligned only when there is at least one).
"""
from __future__ import annotations

import struct

import numpy as np

_U32 = struct.Struct("<I")
_STAMP = struct.Struct("<iI")
_D3 = struct.Struct("<3d")
_D4 = struct.Struct("<4d")
_D6 = struct.Struct("<6d")
CDR_LE = b"\x00\x01\x00\x00"

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


class StringMsg:
    __slots__ = ("data",)


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


def decode_string(buf) -> StringMsg:
    m = StringMsg()
    m.data, _ = _string(buf, 4)
    return m


DECODERS = {JOINT_STATE: decode_joint_state, STRING: decode_string}


def decode(msgtype: str, buf):
    """Decode ``buf`` as ``msgtype`` (one of :data:`DECODERS`); raises :class:`CdrError` on bad bytes."""
    try:
        return DECODERS[msgtype](buf)
    except CdrError:
        raise
    except (struct.error, UnicodeDecodeError, ValueError, IndexError) as exc:
        raise CdrError(f"cannot decode a {msgtype}: {exc}") from None


# ============================================================================ encoding
class _Builder:
    def __init__(self):
        self.b = bytearray(CDR_LE)

    def align(self, n):
        r = (len(self.b) - 4) % n
        if r:
            self.b += bytes(n - r)

    def u32(self, v):
        self.align(4)
        self.b += _U32.pack(v)

    def string(self, s):
        data = s.encode("utf-8") + b"\x00"
        self.u32(len(data))
        self.b += data

    def doubles_header(self, n):
        """The length of a ``float64[]`` of ``n`` and the padding before its first element."""
        self.u32(n)
        if n:
            self.align(8)

    def doubles(self, arr):
        self.doubles_header(len(arr))
        self.b += np.ascontiguousarray(arr, dtype="<f8").tobytes()


def _joint_state_head(names, frame_id: str) -> _Builder:
    """A ``JointState`` serialized up to its names (stamp zero), to append the sequences to."""
    b = _Builder()
    b.b += _STAMP.pack(0, 0)
    b.string(frame_id)
    b.u32(len(names))
    for s in names:
        b.string(s)
    return b


class JointTorquesEncoder:
    """``sensor_msgs/JointState`` with fixed names, empty positions and velocities, efforts per tick
    (what the node publishes on ``~/joint_torques``)."""

    def __init__(self, names, frame_id: str = ""):
        self.n = len(names)
        b = _joint_state_head(names, frame_id)
        b.doubles(())
        b.doubles(())
        b.doubles_header(self.n)
        self._middle = bytes(b.b[12:])

    def encode(self, sec: int, nanosec: int, tau: np.ndarray) -> bytes:
        return b"".join((CDR_LE, _STAMP.pack(sec, nanosec), self._middle,
                         np.ascontiguousarray(tau, dtype="<f8").tobytes()))


class ContactStateEncoder:
    """``sensor_msgs/JointState`` with fixed names (the contacts) and per tick ``position``,
    ``velocity`` and ``effort`` (what the node publishes on ``~/contact_state``, see
    :mod:`~rbd_estimator.runtime.contact_state`)."""

    def __init__(self, names, frame_id: str = ""):
        b = _joint_state_head(names, frame_id)
        b.doubles_header(len(names))
        self._middle = bytes(b.b[12:])                 # up to the first position
        # n doubles end 8-aligned: each next sequence starts with the same length and padding
        nxt = _Builder()
        nxt.doubles_header(len(names))
        self._next = bytes(nxt.b[4:])

    def encode(self, sec: int, nanosec: int, position, velocity, effort) -> bytes:
        f64 = lambda a: np.ascontiguousarray(a, dtype="<f8").tobytes()  # noqa: E731
        return b"".join((CDR_LE, _STAMP.pack(sec, nanosec), self._middle, f64(position), self._next, f64(velocity),
                         self._next, f64(effort)))


class WrenchStampedEncoder:
    """``geometry_msgs/WrenchStamped`` with a fixed frame id, ``[fx, fy, fz, tx, ty, tz]``."""

    def __init__(self, frame_id: str):
        self.frame_id = frame_id
        b = _Builder()
        b.b += _STAMP.pack(0, 0)
        b.string(frame_id)
        b.align(8)
        self._middle = bytes(b.b[12:])

    def encode(self, sec: int, nanosec: int, w) -> bytes:
        return b"".join((CDR_LE, _STAMP.pack(sec, nanosec), self._middle, _D6.pack(*w)))


def encode_string(s: str) -> bytes:
    b = _Builder()
    b.string(s)
    return bytes(b.b)


__all__ = ["CdrError", "decode", "DECODERS", "JointTorquesEncoder", "ContactStateEncoder", "WrenchStampedEncoder", "encode_string",
           "JOINT_STATE", "IMU", "WRENCH_STAMPED", "FLOAT64_MULTI_ARRAY", "STRING"]
