"""Fast CDR (little-endian, XCDR1 as ROS 2 writes it) codecs for the messages the estimator reads and writes.

The offline replay (:mod:`rbd_estimator.replay`) reads thousands of messages per second of
recording; a generic deserializer costs ~10 µs per message, these codecs a fraction of that. The
decoders return light objects with the ROS field names (``msg.header.stamp.sec``,
``msg.position``, ``msg.wrench.force.x`` ...) that :class:`~rbd_estimator.ros.inputs.SensorInputs`
reads exactly as it reads rclpy messages. The encoders produce the bytes rclpy would publish for
the node's outputs. Both are checked against rclpy's and rosbags' serializers in the tests. No ROS
import.

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


class Vector3:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z


class Quaternion:
    __slots__ = ("x", "y", "z", "w")

    def __init__(self, x, y, z, w):
        self.x, self.y, self.z, self.w = x, y, z, w


class JointStateMsg:
    __slots__ = ("header", "name", "position", "velocity", "effort")


class ImuMsg:
    __slots__ = ("header", "orientation", "angular_velocity", "linear_acceleration")


class Wrench:
    __slots__ = ("force", "torque")

    def __init__(self, force, torque):
        self.force, self.torque = force, torque


class WrenchStampedMsg:
    __slots__ = ("header", "wrench")


class Float64MultiArrayMsg:
    __slots__ = ("data",)


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


class _NameCache:
    """The name sequence of the latest joint state, as bytes and as a list: consecutive messages
    nearly always carry the same names, so one bytes comparison replaces decoding them."""
    __slots__ = ("raw", "names")

    def __init__(self):
        self.raw, self.names = b"", []


_names = _NameCache()


def decode_joint_state(buf) -> JointStateMsg:
    m = JointStateMsg()
    m.header, o = _header(buf)
    o = _align(o, 4)
    cache = _names
    raw = cache.raw
    if raw and buf[o:o + len(raw)] == raw:
        m.name = list(cache.names)
        o += len(raw)
    else:
        start = o
        (n,) = _U32.unpack_from(buf, o)
        o += 4
        if n > len(buf):
            raise CdrError("name sequence longer than the message")
        names = []
        for _ in range(n):
            s, o = _string(buf, o)
            names.append(s)
        m.name = names
        cache.raw, cache.names = bytes(buf[start:o]), list(names)
    m.position, o = _doubles(buf, o)
    m.velocity, o = _doubles(buf, o)
    m.effort, o = _doubles(buf, o)
    return m


def _fixed(cache: dict, buf, tail: str):
    """``(sec, nanosec, frame bytes + NUL, *tail values)`` of a stamped message whose body after the
    header is the fixed ``tail`` (a struct format of doubles, aligned to 8)."""
    (n,) = _U32.unpack_from(buf, 12)
    st = cache.get(n)
    if st is None:
        pad = _align(16 + n, 8) - (16 + n)
        st = cache[n] = struct.Struct(f"<iII{n}s{pad}x{tail}")
    if n == 0 or len(buf) < 4 + st.size:
        raise CdrError("message too short for its type")
    return st.unpack_from(buf, 4)


_IMU_CACHE: dict = {}
_WRENCH_CACHE: dict = {}


def decode_imu(buf) -> ImuMsg:
    v = _fixed(_IMU_CACHE, buf, "37d")
    m = ImuMsg()
    m.header = Header(Time(v[0], v[1]), v[3][:-1].decode("utf-8"))
    m.orientation = Quaternion(v[4], v[5], v[6], v[7])
    m.angular_velocity = Vector3(v[17], v[18], v[19])
    m.linear_acceleration = Vector3(v[29], v[30], v[31])
    return m


def decode_wrench_stamped(buf) -> WrenchStampedMsg:
    v = _fixed(_WRENCH_CACHE, buf, "6d")
    m = WrenchStampedMsg()
    m.header = Header(Time(v[0], v[1]), v[3][:-1].decode("utf-8"))
    m.wrench = Wrench(Vector3(v[4], v[5], v[6]), Vector3(v[7], v[8], v[9]))
    return m


def decode_float64_multi_array(buf) -> Float64MultiArrayMsg:
    if len(buf) < 12 or buf[1] != 1:
        raise CdrError("not a little-endian CDR message")
    o = 4
    (ndim,) = _U32.unpack_from(buf, o)
    o += 4
    if ndim > len(buf):
        raise CdrError("layout longer than the message")
    for _ in range(ndim):                     # MultiArrayDimension: label, size, stride
        _, o = _string(buf, o)
        o = _align(o, 4) + 8
    o = _align(o, 4) + 4                       # data_offset
    m = Float64MultiArrayMsg()
    m.data, _ = _doubles(buf, o)
    return m


def decode_string(buf) -> StringMsg:
    m = StringMsg()
    m.data, _ = _string(buf, 4)
    return m


DECODERS = {JOINT_STATE: decode_joint_state, IMU: decode_imu, WRENCH_STAMPED: decode_wrench_stamped,
            FLOAT64_MULTI_ARRAY: decode_float64_multi_array, STRING: decode_string}


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

    def doubles(self, arr):
        self.u32(len(arr))
        if len(arr):
            self.align(8)
            self.b += np.ascontiguousarray(arr, dtype="<f8").tobytes()


class JointTorquesEncoder:
    """``sensor_msgs/JointState`` with fixed names, empty positions and velocities, efforts per tick
    (what the node publishes on ``~/joint_torques``)."""

    def __init__(self, names, frame_id: str = ""):
        self.n = len(names)
        b = _Builder()
        b.b += _STAMP.pack(0, 0)
        b.string(frame_id)
        b.u32(len(names))
        for s in names:
            b.string(s)
        b.doubles(())
        b.doubles(())
        b.u32(self.n)
        if self.n:
            b.align(8)
        self._middle = bytes(b.b[12:])

    def encode(self, sec: int, nanosec: int, tau: np.ndarray) -> bytes:
        return b"".join((CDR_LE, _STAMP.pack(sec, nanosec), self._middle,
                         np.ascontiguousarray(tau, dtype="<f8").tobytes()))


class WrenchStampedEncoder:
    """``geometry_msgs/WrenchStamped`` with a fixed frame id, ``[fx, fy, fz, tx, ty, tz]``."""

    def __init__(self, frame_id: str):
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


__all__ = ["CdrError", "decode", "DECODERS", "JointTorquesEncoder", "WrenchStampedEncoder", "encode_string",
           "JOINT_STATE", "IMU", "WRENCH_STAMPED", "FLOAT64_MULTI_ARRAY", "STRING"]
