"""The output messages' templates and the decoder of :mod:`rbd_estimator.runtime.cdr` against the
libraries: every encoded message is byte for byte what rosbags' ``serialize_cdr`` makes of the same
message built here, reads back with the stamp and the values set through rclpy's
``deserialize_message`` and rosbags' ``deserialize_cdr``, and :func:`cdr.decode` reads what rclpy's
``serialize_message`` writes. (rclpy's own bytes are no reference for equality: its serializer
leaves the alignment padding and a few bytes past the end uninitialised.)"""
from __future__ import annotations

import struct

import numpy as np
import pytest

pytest.importorskip("rosbags")
rclpy_ser = pytest.importorskip("rclpy.serialization")

from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from rbd_estimator.runtime import cdr  # noqa: E402

TS = get_typestore(Stores.ROS2_HUMBLE)          # another store than the module's: the layout is ROS 2's
NAMES = ([], ["a"], ["ab", "c", "def"], [f"joint_{i}" for i in range(29)], ["épaule", "коленo", "足首"])
FRAMES = ("", "x", "base_link", "l_sole_ü")


def rb_joint_state(names, frame, sec, nanosec, position=(), velocity=(), effort=()) -> bytes:
    """The ``JointState`` serialized by rosbags (built from its own types, not the module's)."""
    t = TS.types
    header = t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id=frame)
    f64 = lambda a: np.asarray(a, np.float64)  # noqa: E731
    return bytes(TS.serialize_cdr(t[cdr.JOINT_STATE](header=header, name=list(names), position=f64(position),
                                                     velocity=f64(velocity), effort=f64(effort)), cdr.JOINT_STATE))


def joint_state(names, frame, sec, nanosec, position=(), velocity=(), effort=()):
    js = JointState()
    js.header.stamp.sec, js.header.stamp.nanosec, js.header.frame_id = sec, nanosec, frame
    js.name = list(names)
    js.position, js.velocity, js.effort = list(position), list(velocity), list(effort)
    return js


def rb_wrench_stamped(frame, sec, nanosec, w) -> bytes:
    t = TS.types
    header = t["std_msgs/msg/Header"](stamp=t["builtin_interfaces/msg/Time"](sec=sec, nanosec=nanosec), frame_id=frame)
    v3 = t["geometry_msgs/msg/Vector3"]
    wrench = t["geometry_msgs/msg/Wrench"](force=v3(x=w[0], y=w[1], z=w[2]), torque=v3(x=w[3], y=w[4], z=w[5]))
    return bytes(TS.serialize_cdr(t[cdr.WRENCH_STAMPED](header=header, wrench=wrench), cdr.WRENCH_STAMPED))


def test_joint_torques_are_what_the_libraries_read():
    rng = np.random.default_rng(1)
    for names in NAMES:
        for frame in FRAMES:
            enc = cdr.JointTorquesEncoder(names, frame)
            for sec, nanosec in ((0, 0), (12, 345), (-3, 999_999_999), (2**31 - 1, 1)):
                tau = rng.normal(size=len(names))
                raw = enc.encode(sec, nanosec, tau)
                assert raw == rb_joint_state(names, frame, sec, nanosec, effort=tau)
                m = rclpy_ser.deserialize_message(raw, JointState)
                assert (m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id) == (sec, nanosec, frame)
                assert list(m.name) == names and list(m.effort) == tau.tolist()
                assert len(m.position) == 0 and len(m.velocity) == 0


def test_contact_state_is_what_the_libraries_read():
    rng = np.random.default_rng(2)
    for names in NAMES:
        enc = cdr.ContactStateEncoder(names)
        n = len(names)
        position, source, force = rng.integers(0, 2, n), rng.integers(0, 3, n), rng.normal(size=n)
        raw = enc.encode(7, 8, position, source, force)
        assert raw == rb_joint_state(names, "", 7, 8, position, source, force)
        back = rclpy_ser.deserialize_message(raw, JointState)
        assert list(back.name) == names and list(back.effort) == force.tolist()
        assert list(back.position) == position.tolist() and list(back.velocity) == source.tolist()


def test_wrench_stamped_is_what_the_libraries_read():
    rng = np.random.default_rng(3)
    for frame in FRAMES:
        enc = cdr.WrenchStampedEncoder(frame)
        assert enc.offsets[0] % 8 == 4                  # the doubles aligned to 8 in the body (after 4 bytes)
        w = rng.normal(size=6)
        raw = enc.encode(7, 8, w)
        assert raw == rb_wrench_stamped(frame, 7, 8, w)
        m = rclpy_ser.deserialize_message(raw, WrenchStamped)
        f, t = m.wrench.force, m.wrench.torque
        assert [f.x, f.y, f.z, t.x, t.y, t.z] == w.tolist() and m.header.frame_id == frame
        assert (m.header.stamp.sec, m.header.stamp.nanosec) == (7, 8)


def test_a_template_is_patched_in_place():
    """One buffer per encoder, made at construction: each encode writes the stamp and the values
    into it (the buffer starts as the zero message), and the bytes returned do not change later."""
    enc = cdr.JointTorquesEncoder(["a", "b"])
    buf = enc.buf
    assert bytes(buf) == rb_joint_state(["a", "b"], "", 0, 0, effort=[0.0, 0.0])
    assert enc.stamp_offset == 4 and enc.offsets == (len(buf) - 16,)
    first = enc.encode(1, 2, np.array([1.0, 2.0]))
    second = enc.encode(3, 4, [5.0, 6.0])
    assert enc.buf is buf and bytes(buf) == second
    assert list(rclpy_ser.deserialize_message(first, JointState).effort) == [1.0, 2.0]
    assert struct.unpack_from("<iI", second, enc.stamp_offset) == (3, 4)


def test_sentinels_that_occur_twice_are_not_taken(monkeypatch):
    """A stamp sentinel whose bytes also stand in a name is passed over for the next one."""
    clash = (0x61616161, 0x61616161)                    # the bytes of "aaaaaaaa"
    monkeypatch.setattr(cdr, "_STAMP_SENTINELS", (clash,) + cdr._STAMP_SENTINELS)
    names = ["aaaaaaaa", "b"]
    raw = cdr.JointTorquesEncoder(names).encode(1, 2, [3.0, 4.0])
    assert raw == rb_joint_state(names, "", 1, 2, effort=[3.0, 4.0])
    monkeypatch.setattr(cdr, "_STAMP_SENTINELS", (clash,))
    with pytest.raises(cdr.CdrError, match="cannot locate"):
        cdr.JointTorquesEncoder(names)


def test_decode_reads_what_rclpy_serializes_and_refuses_bad_bytes():
    """rclpy's bytes carry a few bytes past the last field, which the decoder leaves alone (rosbags'
    deserializer refuses them: the reason it stays hand-written)."""
    rng = np.random.default_rng(4)
    for names in NAMES:
        for frame in FRAMES:
            js = joint_state(names, frame, 12, 345, rng.normal(size=len(names)),
                             [] if len(names) == 1 else rng.normal(size=len(names)))
            raw = rclpy_ser.serialize_message(js)
            m = cdr.decode(cdr.JOINT_STATE, raw)
            assert list(m.name) == names and m.header.frame_id == frame
            assert (m.header.stamp.sec, m.header.stamp.nanosec) == (12, 345)
            assert np.array_equal(m.position, js.position) and np.array_equal(m.velocity, js.velocity)
            assert len(m.effort) == 0
    raw = rb_joint_state(["a", "b"], "x", 1, 2, effort=[1.0, 2.0])
    for cut in range(len(raw)):                         # every truncation
        with pytest.raises(cdr.CdrError):
            cdr.decode(cdr.JOINT_STATE, raw[:cut])
    huge = bytearray(raw)
    assert struct.unpack_from("<I", huge, 20) == (2,)   # the name count: after the stamp, "x" and padding
    huge[20:24] = struct.pack("<I", 10**8)
    with pytest.raises(cdr.CdrError, match="name sequence longer than the message"):
        cdr.decode(cdr.JOINT_STATE, bytes(huge))
