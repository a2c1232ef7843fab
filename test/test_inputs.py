"""The node's compiled input handling (rbd_estimator.runtime.input_core via SensorInputs), without ROS.

Messages are serialized by rosbags' typestore (an independent CDR implementation); the expected
values are the ones put in. Checks: decoding and gathering by name, the derivative filter, the
offsets, every rejection reason (counted, state unchanged), undecodable bytes, reconfiguration
keeping the samples, and a fuzz of truncated and corrupted messages run with numba's bounds
checking on (an out-of-bounds read raises there instead of reading memory).
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("rosbags")
from rosbags.typesys import Stores, get_typestore  # noqa: E402

from rbd_estimator.estimation import SensorConfig  # noqa: E402
from rbd_estimator.model.robot_model import RobotModel  # noqa: E402
from rbd_estimator.runtime import input_core as core  # noqa: E402
from rbd_estimator.runtime.inputs import SensorInputs  # noqa: E402
from rbd_estimator.runtime.params import NodeSettings  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
URDF = os.path.join(ROOT, "urdf", "humanoid.urdf")
TS = get_typestore(Stores.ROS2_JAZZY)
T = TS.types
MS = 1_000_000


def _inputs(params="humanoid.yaml", offsets=None):
    config = SensorConfig.from_yaml(os.path.join(ROOT, "config", params))
    node = dict(config.node)
    for name, off in (offsets or {}).items():
        node[f"ft_offsets.{name}"] = list(off)
    settings = NodeSettings.from_parameters(node)
    with open(URDF) as f:
        joints = RobotModel.from_urdf(f.read()).joint_names
    return SensorInputs(joints, config, settings), config, settings


def _header(t_ns, frame="base"):
    return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=t_ns // 10**9,
                                                                             nanosec=t_ns % 10**9), frame_id=frame)


def joint_state(t_ns, names, pos, vel, eff=()):
    m = T["sensor_msgs/msg/JointState"](header=_header(t_ns), name=list(names), position=np.asarray(pos, float),
                                        velocity=np.asarray(vel, float), effort=np.asarray(eff, float))
    return bytes(TS.serialize_cdr(m, "sensor_msgs/msg/JointState"))


def imu(t_ns, quat, w, a):
    V, Q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    m = T["sensor_msgs/msg/Imu"](header=_header(t_ns, "imu_link"), orientation=Q(*map(float, quat)),
                                 orientation_covariance=np.arange(9.0), angular_velocity=V(*map(float, w)),
                                 angular_velocity_covariance=np.arange(9.0) + 10, linear_acceleration=V(*map(float, a)),
                                 linear_acceleration_covariance=np.arange(9.0) + 20)
    return bytes(TS.serialize_cdr(m, "sensor_msgs/msg/Imu"))


def wrench(t_ns, w, frame="sensor"):
    V = T["geometry_msgs/msg/Vector3"]
    m = T["geometry_msgs/msg/WrenchStamped"](header=_header(t_ns, frame), wrench=T["geometry_msgs/msg/Wrench"](
        force=V(*map(float, w[:3])), torque=V(*map(float, w[3:]))))
    return bytes(TS.serialize_cdr(m, "geometry_msgs/msg/WrenchStamped"))


def cells(values, dims=("cells",)):
    D = T["std_msgs/msg/MultiArrayDimension"]
    layout = T["std_msgs/msg/MultiArrayLayout"](dim=[D(label=d, size=len(values), stride=1) for d in dims],
                                                data_offset=0)
    m = T["std_msgs/msg/Float64MultiArray"](layout=layout, data=np.asarray(values, float))
    return bytes(TS.serialize_cdr(m, "std_msgs/msg/Float64MultiArray"))


def _state(inp):
    return inp.F.copy(), inp.I.copy()


def test_joint_states_by_name_and_the_derivative_filter():
    inp, _, settings = _inputs()
    names = list(inp.joint_names)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(names))
    q, dq1, dq2 = rng.normal(size=(3, len(names)))
    msg_names = [names[k] for k in perm]
    assert inp.on_message(0, joint_state(10 * MS, msg_names, q[perm], dq1[perm]), 5) == 0   # first: filter starts
    assert np.array_equal(inp.q, q) and np.array_equal(inp.dq, dq1)
    js = inp.joint_states
    assert (js.stamp_ns, js.receipt_ns, js.received, js.ready) == (10 * MS, 5, 1, False)
    assert inp.on_message(0, joint_state(11 * MS, msg_names, q[perm], dq2[perm]), 6) == 1
    assert np.allclose(inp.ddq, (dq2 - dq1) / 1e-3, rtol=1e-14, atol=0)                      # y_1 = a_1
    dq3 = dq2 + 1.0
    inp.on_message(0, joint_state(13 * MS, msg_names, q[perm], dq3[perm]), 7)              # Δt = 2 ms
    Tc = 1 / (2 * np.pi * settings.acceleration_cutoff_hz)
    alpha = 2e-3 / (2e-3 + Tc)
    y1 = (dq2 - dq1) / 1e-3
    assert np.allclose(inp.ddq, y1 + alpha * ((dq3 - dq2) / 2e-3 - y1), rtol=1e-13, atol=1e-9)
    # the model's order given directly hits the cached-layout path after one new layout
    assert inp.on_message(0, joint_state(14 * MS, names, q, dq3), 8) == 1
    assert np.array_equal(inp.dq, dq3) and js.received == 4


def test_every_rejection_reason_is_counted_and_changes_nothing():
    inp, _, _ = _inputs()
    names = list(inp.joint_names)
    n = len(names)
    z = np.zeros(n)
    inp.on_message(0, joint_state(10 * MS, names, z, z), 1)
    before = _state(inp)
    cases = [
        (joint_state(11 * MS, names[:-1] + ["no_such_joint"], z, z), "unknown_joint"),
        (joint_state(11 * MS, names[:-1], z[:-1], z[:-1]), "missing_joint"),
        (joint_state(11 * MS, names, z[:-1], z), "wrong_length"),
        (joint_state(11 * MS, names, z, np.r_[z[:-1], np.nan]), "non_finite"),
        (joint_state(11 * MS, names, np.r_[np.inf, z[1:]], z), "non_finite"),
        (joint_state(10 * MS, names, z, z), "stamp_not_increasing"),
        (joint_state(9 * MS, names, z, z), "stamp_not_increasing"),
    ]
    for raw, reason in cases:
        counts = dict(inp.joint_states.rejected)
        assert inp.on_message(0, raw, 2) == -1, reason
        assert inp.joint_states.rejected[reason] == counts.get(reason, 0) + 1, reason
        F, I = _state(inp)
        rej = slice(inp.I[core.H_SLOTS] + core.S_REJ, inp.I[core.H_SLOTS] + core.SLOT_W)
        I[rej] = before[1][rej]
        assert np.array_equal(F[:-2 * n - 10], before[0][:-2 * n - 10]), reason          # all but scratch
    inp, _, _ = _inputs("loadcell_humanoid.yaml")                                        # ω̇ from the gyro
    assert inp.use_angular_acceleration
    s = inp.slot_index("imu")
    imu_slot = inp.slots["imu"]
    assert inp.on_message(s, imu(10 * MS, [0, 0, 0, 1.005], [1, 2, 3], [0, 0, 9.81]), 3) == 0   # ω̇ filter starts
    assert np.allclose(inp.imu.orientation, [0, 0, 0, 1], rtol=0, atol=1e-15)            # normalised
    for raw, reason in ((imu(11 * MS, [0, 0, 0, 1.02], [0, 0, 0], [0, 0, 0]), "bad_orientation"),
                        (imu(11 * MS, [0, 0, 0, 1], [np.nan, 0, 0], [0, 0, 0]), "non_finite"),
                        (imu(10 * MS, [0, 0, 0, 1], [0, 0, 0], [0, 0, 0]), "stamp_not_increasing")):
        assert inp.on_message(s, raw, 4) == -1 and imu_slot.rejected[reason] == 1, reason
    assert np.array_equal(inp.imu.angular_velocity, [1, 2, 3])
    assert inp.on_message(s, imu(11 * MS, [0, 0, 0, 1], [1, 2, 4], [0, 0, 9.81]), 5) == 1
    assert np.allclose(inp.imu.angular_acceleration, [0, 0, 1e3], rtol=1e-12)


def test_wrench_offsets_and_load_cells():
    inp0, config, _ = _inputs()
    ft = config.ft_sensors[1].name
    off = [1.0, -2.0, 3.0, 0.5, -0.25, 0.125]
    inp, _, _ = _inputs(offsets={ft: off})
    w = np.array([10.0, 20.0, -30.0, 1.0, 2.0, 3.0])
    s = inp.slot_index(ft)
    assert inp.on_message(s, wrench(5 * MS, w), 9) == 1
    k = inp.ft_names.index(ft)
    assert np.array_equal(inp.ft_raw_matrix[k], w) and np.array_equal(inp.ft_matrix[k], w - off)
    assert np.array_equal(inp.slots[ft].value, w - off)
    assert inp.on_message(s, wrench(5 * MS, w), 10) == -1 and inp.slots[ft].rejected["stamp_not_increasing"] == 1
    assert inp.on_message(s, wrench(6 * MS, np.r_[w[:5], -np.inf]), 10) == -1
    # load cells: no stamp, receipt time is the freshness
    lc, lconfig, _ = _inputs("loadcell_humanoid.yaml")
    name = lconfig.load_cells[1].name
    s = lc.slot_index(name)
    for dims in ((), ("cells",), ("a", "bb")):
        v = np.arange(4.0) + len(dims)
        assert lc.on_message(s, cells(v, dims), 100) == 1
        assert np.array_equal(lc.slots[name].value, v) and lc.slots[name].receipt_ns == 100
    assert np.array_equal(lc.cells_vector[4:], v)
    assert lc.on_message(s, cells(np.arange(3.0)), 101) == -1 and lc.slots[name].rejected["wrong_length"] == 1
    assert lc.on_message(s, cells([1, 2, np.nan, 4]), 101) == -1 and lc.slots[name].rejected["non_finite"] == 1
    assert lc.missing(100 + 10**6) == frozenset(set(lc.sensor_names) - {name})
    assert name in lc.missing(100 + int(0.06e9))                                           # timeout 0.05 s


def test_undecodable_bytes_change_nothing():
    inp, config, _ = _inputs()
    names = list(inp.joint_names)
    z = np.ones(len(names))
    raw = joint_state(10 * MS, names, z, z)
    inp.on_message(0, raw, 1)
    before = _state(inp)
    ft = inp.slot_index(config.ft_sensors[0].name)
    for slot, good in ((0, joint_state(11 * MS, names, z, z)), (inp.slot_index("imu"), imu(11 * MS, [0, 0, 0, 1], [0] * 3, [0] * 3)),
                       (ft, wrench(11 * MS, np.ones(6)))):
        for cut in (0, 3, 15, len(good) // 2, len(good) - 1):
            assert inp.on_message(slot, good[:cut], 2) == core.CDR_ERROR
        bad = bytearray(good)
        bad[1] = 0                                                   # big endian: not what ROS 2 writes
        assert inp.on_message(slot, bytes(bad), 2) == core.CDR_ERROR
    F, I = _state(inp)
    assert np.array_equal(I, before[1])


def test_reconfiguration_keeps_the_samples_of_the_sensors_that_stay():
    inp, config, settings = _inputs()
    names = list(inp.joint_names)
    z = np.full(len(names), 0.5)
    inp.on_message(0, joint_state(10 * MS, names, z, z), 1)
    keep, drop = config.ft_sensors[0].name, config.ft_sensors[1].name
    inp.on_message(inp.slot_index(keep), wrench(10 * MS, np.arange(6.0)), 2)
    inp.on_message(inp.slot_index(drop), wrench(10 * MS, -np.arange(6.0)), 2)
    inp.on_message(inp.slot_index(keep), wrench(10 * MS, np.arange(6.0)), 3)             # one rejection
    import dataclasses
    smaller = config.without(drop)
    inp.configure(smaller, settings)
    assert drop not in inp.slots and np.array_equal(inp.q, z)
    assert inp.slots[keep].received == 1 and inp.slots[keep].rejected["stamp_not_increasing"] == 1
    assert np.array_equal(inp.ft_matrix[inp.ft_names.index(keep)], np.arange(6.0))
    assert inp.joint_states.stamp_ns == 10 * MS
    assert inp.on_message(0, joint_state(11 * MS, names, z, z), 4) == 1                # the filter went on


def test_messages_serialized_by_rclpy():
    """The bytes the node takes from the middleware: rclpy's own serialization."""
    ser = pytest.importorskip("rclpy.serialization")
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import Imu, JointState
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension
    inp, _, _ = _inputs("loadcell_humanoid.yaml")
    names = list(inp.joint_names)[::-1]
    rng = np.random.default_rng(5)
    js = JointState(name=names, position=rng.normal(size=len(names)).tolist(),
                    velocity=rng.normal(size=len(names)).tolist())
    js.header.stamp.sec, js.header.stamp.nanosec, js.header.frame_id = 3, 4, "x"
    assert inp.on_message(0, ser.serialize_message(js), 1) == 0
    assert np.array_equal(inp.q[::-1], js.position) and np.array_equal(inp.dq[::-1], js.velocity)
    assert inp.joint_states.stamp_ns == 3 * 10**9 + 4
    m = Imu()
    m.header.frame_id = "imu_link"
    m.orientation.x, m.orientation.w = 0.6, 0.8
    m.angular_velocity.y, m.linear_acceleration.z = -1.25, 9.81
    m.orientation_covariance = rng.normal(size=9).tolist()
    assert inp.on_message(inp.slot_index("imu"), ser.serialize_message(m), 2) == 0
    assert np.array_equal(inp.imu.orientation, [0.6, 0, 0, 0.8])
    assert np.array_equal(inp.imu.angular_velocity, [0, -1.25, 0])
    assert np.array_equal(inp.imu.linear_acceleration, [0, 0, 9.81])
    fa = Float64MultiArray(data=[1.0, 2.0, 3.0, 4.5])
    fa.layout.dim = [MultiArrayDimension(label="cells", size=4, stride=4)]
    name = inp.config.load_cells[0].name
    assert inp.on_message(inp.slot_index(name), ser.serialize_message(fa), 3) == 1
    assert np.array_equal(inp.slots[name].value, [1.0, 2.0, 3.0, 4.5])
    ft_inp, config, _ = _inputs()
    w = WrenchStamped()
    w.header.frame_id = "a_frame_id_of_odd_length"
    w.wrench.force.x, w.wrench.torque.z = 12.5, -0.5
    s = ft_inp.slot_index(config.ft_sensors[2].name)
    assert ft_inp.on_message(s, ser.serialize_message(w), 4) == 1
    assert np.array_equal(ft_inp.slots[config.ft_sensors[2].name].value, [12.5, 0, 0, 0, 0, -0.5])


_FUZZ = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/test")
from test_inputs import _inputs, joint_state, imu, wrench, cells
from rbd_estimator.runtime import input_core as core
rng = np.random.default_rng(11)
inp, config, _ = _inputs("loadcell_humanoid.yaml")
names = list(inp.joint_names)
z = np.zeros(len(names))
msgs = [(0, joint_state(10**6, names, z, z, z)), (inp.slot_index("imu"), imu(10**6, [0, 0, 0, 1], [0] * 3, [0] * 3)),
        (inp.slot_index(config.load_cells[0].name), cells(np.ones(4), ("a", "b")))]
ft_inp, ft_config, _ = _inputs()
msgs = [(inp, s, m) for s, m in msgs] + [(ft_inp, ft_inp.slot_index(ft_config.ft_sensors[0].name), wrench(10**6, np.ones(6)))]
n = 0
for inp, slot, good in msgs:
    variants = [good[:k] for k in range(len(good))]
    for _ in range(300):
        b = bytearray(good)
        for _ in range(rng.integers(1, 4)):
            b[rng.integers(len(b))] = rng.integers(256)
        variants.append(bytes(b))
    for v in variants:
        code = inp.on_message(slot, v, 5)
        assert code in (-3, -2, -1, 0, 1), code
        n += 1
print("ok", n)
"""


def test_fuzzed_messages_never_read_out_of_bounds(tmp_path):
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    r = subprocess.run([sys.executable, "-c", _FUZZ, ROOT], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ok")


def test_joint_states_that_also_carry_mimic_joints_are_accepted():
    """A robot_state_publisher-style joint state lists every joint, mimic joints too (issue 10):
    those are known and ignored; an unknown joint is still rejected, the joint-torque path too."""
    from oracle import robots_dir
    from rbd_estimator import estimator_for
    with open(os.path.join(robots_dir(), "panda_description/urdf/panda.urdf")) as f:
        xml = f.read()
    config = SensorConfig.from_dict(dict(floating_base=False, joint_torque_sensors=["panda_joint1"]))
    est = estimator_for(xml, config)
    settings = NodeSettings.from_parameters(dict(config.node))
    inp = SensorInputs.for_estimator(est, config, settings)
    names = list(est.joint_names)
    full = ["panda_finger_joint2"] + names                          # the mimic joint first
    pos = np.r_[0.04, np.arange(8.0)]                               # its entry must be skipped
    vel = pos / 10
    assert inp.on_message(0, joint_state(10 * MS, full, pos, vel), 1) == 0
    assert np.array_equal(inp.q, np.arange(8.0))
    assert np.array_equal(inp.dq, np.arange(8.0) / 10)
    assert inp.joint_states.rejected.get("unknown_joint", 0) == 0
    inp.on_message(0, joint_state(11 * MS, full[:-1] + ["not_a_joint"], pos, vel), 2)
    assert inp.joint_states.rejected["unknown_joint"] == 1
    inp.on_message(0, joint_state(12 * MS, full, pos[:-1], vel[:-1]), 3)      # lengths must match the names
    assert inp.joint_states.rejected["wrong_length"] == 1
    msg = T["sensor_msgs/msg/JointState"](header=_header(13 * MS), name=full, position=pos, velocity=vel,
                                          effort=np.r_[9.0, 2.5, np.zeros(7)])
    assert inp.on_joint_torques(msg, 4)
    assert inp.slots["panda_joint1"].value[0] == 2.5
