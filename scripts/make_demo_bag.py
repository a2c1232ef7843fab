#!/usr/bin/env python3
"""Record the demo humanoid into a small rosbag2 (MCAP, zstd) with its ground truth: test/data/demo_humanoid.

    python scripts/make_demo_bag.py [--duration 1.0] [--rate 1000] [--noise 1] [--out test/data/demo_humanoid]

The motion and the readings are those of :func:`rbd_estimator.demo.simulate` (the shipped humanoid,
``urdf/humanoid.urdf`` + ``config/humanoid.yaml``). Topics, as the node subscribes to them with
``config/humanoid.yaml``:

* ``/robot_description`` (std_msgs/String, once, first);
* per step ``k`` (stamp ``T0 + k/rate``): ``/imu``, ``/ft/<sensor>`` (six), then ``/joint_states``
  (joint order reversed on the wire: the node maps by name), logged (received) 100–300 µs after
  their stamp, the joint state last, as a live publisher would send them;
* the ground truth: ``/truth/joint_torques`` (sensor_msgs/JointState, effort, model joint order)
  and ``/truth/contact_wrenches/<contact>`` (geometry_msgs/WrenchStamped in the sole frame), same
  stamps.

Deterministic for a given seed (the simulation's noise generator).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

T0_NS = 1_700_000_000_000_000_000


def main(argv=None) -> int:
    from rbd_estimator.demo import share_file, simulate
    from rbd_estimator.estimation import SensorConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--noise", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(ROOT, "test", "data", "demo_humanoid"))
    ap.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    args = ap.parse_args(argv)

    xml = open(share_file("urdf", "humanoid.urdf"), encoding="utf-8").read()
    config = SensorConfig.from_yaml(share_file("config", "humanoid.yaml"))
    rec = simulate(xml, config, args.duration, args.rate, args.noise, args.seed)
    write_bag(args.out, xml, rec, args.rate, storage=args.storage)
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"wrote {args.out}: {len(rec.q)} steps, {size / 1e6:.2f} MB")
    return 0


def write_bag(path, xml, rec, rate, storage="mcap"):
    """Write ``rec`` (a :class:`rbd_estimator.demo.Recording`) as described in the module docstring."""
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    from rbd_estimator.runtime import cdr

    ts = get_typestore(Stores.ROS2_JAZZY)
    Time = ts.types["builtin_interfaces/msg/Time"]
    Header = ts.types["std_msgs/msg/Header"]
    Vector3 = ts.types["geometry_msgs/msg/Vector3"]
    Quaternion = ts.types["geometry_msgs/msg/Quaternion"]
    Imu = ts.types[cdr.IMU]
    JointState = ts.types[cdr.JOINT_STATE]
    Wrench = ts.types["geometry_msgs/msg/Wrench"]
    WrenchStamped = ts.types[cdr.WRENCH_STAMPED]
    String = ts.types[cdr.STRING]

    def wrench_msg(stamp, frame, w):
        return WrenchStamped(header=Header(stamp=stamp, frame_id=frame),
                             wrench=Wrench(force=Vector3(*map(float, w[:3])), torque=Vector3(*map(float, w[3:]))))

    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    w = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3)
    if storage == "mcap":
        w.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    w.open()
    try:
        c_desc = w.add_connection("/robot_description", cdr.STRING, typestore=ts)
        c_imu = w.add_connection("/imu", cdr.IMU, typestore=ts)
        c_ft = [w.add_connection(f"/ft/{n}", cdr.WRENCH_STAMPED, typestore=ts) for n in rec.ft_names]
        c_js = w.add_connection("/joint_states", cdr.JOINT_STATE, typestore=ts)
        c_tau = w.add_connection("/truth/joint_torques", cdr.JOINT_STATE, typestore=ts)
        c_w = [w.add_connection(f"/truth/contact_wrenches/{c}", cdr.WRENCH_STAMPED, typestore=ts)
               for c in rec.contact_names]
        w.write(c_desc, T0_NS - 1_000_000, ts.serialize_cdr(String(data=xml), cdr.STRING))
        n = len(rec.joint_names)
        wire = list(reversed(range(n)))
        wire_names = [rec.joint_names[i] for i in wire]
        period = int(round(1e9 / rate))
        empty = np.zeros(0)
        cov = np.zeros(9)
        for k in range(len(rec.q)):
            s_ns = T0_NS + k * period
            stamp = Time(sec=s_ns // 1_000_000_000, nanosec=s_ns % 1_000_000_000)
            o, g, a = rec.imu[k]
            imu = Imu(header=Header(stamp=stamp, frame_id="imu_link"),
                      orientation=Quaternion(*map(float, o)), orientation_covariance=cov,
                      angular_velocity=Vector3(*map(float, g)), angular_velocity_covariance=cov,
                      linear_acceleration=Vector3(*map(float, a)), linear_acceleration_covariance=cov)
            w.write(c_imu, s_ns + 100_000, ts.serialize_cdr(imu, cdr.IMU))
            for i, (c, name) in enumerate(zip(c_ft, rec.ft_names)):
                w.write(c, s_ns + 120_000 + 10_000 * i,
                        ts.serialize_cdr(wrench_msg(stamp, name, rec.ft[k, i]), cdr.WRENCH_STAMPED))
            js = JointState(header=Header(stamp=stamp, frame_id=""), name=wire_names,
                            position=np.ascontiguousarray(rec.q[k, wire]), velocity=np.ascontiguousarray(rec.dq[k, wire]),
                            effort=empty)
            w.write(c_js, s_ns + 300_000, ts.serialize_cdr(js, cdr.JOINT_STATE))
            truth = JointState(header=Header(stamp=stamp, frame_id=""), name=list(rec.joint_names),
                               position=empty, velocity=empty, effort=np.ascontiguousarray(rec.tau[k]))
            w.write(c_tau, s_ns + 300_000, ts.serialize_cdr(truth, cdr.JOINT_STATE))
            for c, frame, wr in zip(c_w, rec.contact_frames, rec.wrenches[k]):
                w.write(c, s_ns + 300_000, ts.serialize_cdr(wrench_msg(stamp, frame, wr), cdr.WRENCH_STAMPED))
    finally:
        w.close()


if __name__ == "__main__":
    sys.exit(main())
