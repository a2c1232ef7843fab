"""Arrays → output messages. Wrenches are ``[fx, fy, fz, tx, ty, tz]`` (``geometry_msgs/Wrench``)."""
from __future__ import annotations

import array

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
from sensor_msgs.msg import JointState


def time_msg(ns: int) -> Time:
    return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))


def joint_state_msg(names) -> JointState:
    """A reusable ``JointState`` with the names filled in (efforts set per tick)."""
    msg = JointState()
    msg.name = list(names)
    return msg


def fill_joint_torques(msg: JointState, stamp, tau: np.ndarray) -> None:
    msg.header.stamp = stamp
    eff = array.array("d")
    eff.frombytes(np.ascontiguousarray(tau, dtype=np.float64).tobytes())
    msg.effort = eff


def wrench_msg(frame_id: str) -> WrenchStamped:
    msg = WrenchStamped()
    msg.header.frame_id = frame_id
    return msg


def fill_wrench(msg: WrenchStamped, stamp, w) -> None:
    msg.header.stamp = stamp
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z, t.x, t.y, t.z = (float(v) for v in w)


def wrench_array(msg) -> np.ndarray:
    f, t = msg.wrench.force, msg.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z])
