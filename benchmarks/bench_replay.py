#!/usr/bin/env python3
"""Replay speed versus real time: the demo humanoid at 1 kHz (not a test).

    python benchmarks/bench_replay.py [--seconds 10] [--repeat 3]

Builds a ``--seconds`` long recording by repeating the shipped one (``test/data/demo_humanoid``:
1 s of the demo humanoid at 1 kHz, IMU + six force-torque sensors + joint states, 8 input messages
per millisecond) with shifted stamps and log times, then replays it with ``config/humanoid.yaml``
into MCAP (zstd chunks, the default), uncompressed MCAP and sqlite3, and prints the median speed
(recorded seconds per second of the replay's message loop; planning excluded, reported apart) and
the time per tick split into reading, the node's tick logic (compiled, over batches of messages) and
writing.
"""
from __future__ import annotations

import argparse
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
BAG = os.path.join(ROOT, "test", "data", "demo_humanoid")
PARAMS = os.path.join(ROOT, "config", "humanoid.yaml")


def long_bag(path: str, seconds: int) -> None:
    """The shipped recording repeated ``seconds`` times (header stamps and log times shifted by 1 s
    per copy; every message here starts with a std_msgs/Header except the robot description)."""
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, Reader, StoragePlugin, Writer
    with Reader(BAG) as r:
        conns = list(r.connections)
        msgs = [(c, t, bytes(raw)) for c, t, raw in r.messages()]
    w = Writer(path, version=9, storage_plugin=StoragePlugin.MCAP)
    w.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    w.open()
    out = {c.id: w.add_connection(c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest) for c in conns}
    for rep in range(seconds):
        for c, t, raw in msgs:
            if c.topic == "/robot_description":
                if rep == 0:
                    w.write(out[c.id], t, raw)
                continue
            sec, nsec = struct.unpack_from("<iI", raw, 4)
            raw = raw[:4] + struct.pack("<iI", sec + rep, nsec) + raw[12:]
            w.write(out[c.id], t + rep * 1_000_000_000, raw)
    w.close()


def breakdown(path: str, config, tmp: str) -> dict:
    """µs per tick: reading (rosbags' chunk index + our record scan), the node's tick logic over the
    batches (input handling, filters, freshness, estimate, encoding the outputs), writing (zstd MCAP)."""
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, Reader, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    from rbd_estimator.replay import Replayer, read_description
    from rbd_estimator.ros import bag_io
    with Reader(path) as r:
        xml = read_description(r, "/robot_description")
        rep = Replayer(xml, config)
        conns = [c for c in r.connections if c.topic in rep.handlers]
        t0 = time.perf_counter()
        batches = list(bag_io.iter_batches(r, conns, max_messages=8192))
        t1 = time.perf_counter()
    segments = []
    for b in batches:
        rep.feed_batch(b, [c.topic for c in conns], segments.append, lambda *a: None)
    t2 = time.perf_counter()
    ts = get_typestore(Stores.ROS2_JAZZY)
    w = Writer(os.path.join(tmp, "breakdown"), version=9, storage_plugin=StoragePlugin.MCAP)
    w.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
    w.open()
    out = [w.add_connection(c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest) for c in conns]
    out += [w.add_connection(rep.torque_topic, "sensor_msgs/msg/JointState", typestore=ts)]
    out += [w.add_connection(t, "geometry_msgs/msg/WrenchStamped", typestore=ts) for t in rep.wrench_topics]
    t3 = time.perf_counter()
    for seg in segments:
        bag_io.write_batch(w, out, seg)
    w.close()
    t4 = time.perf_counter()
    n = max(1, rep.core.ticks)
    return {"read": (t1 - t0) / n * 1e6, "tick logic": (t2 - t1) / n * 1e6, "write": (t4 - t3) / n * 1e6}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from rbd_estimator.replay import load_config, replay_bag
    config = load_config(PARAMS)
    tmp = tempfile.mkdtemp(prefix="bench_replay_")
    try:
        src = os.path.join(tmp, "input")
        long_bag(src, args.seconds)
        print(f"input: {args.seconds} s of the demo humanoid at 1 kHz (IMU, 6 force-torque sensors, joint states: "
              f"8 messages per tick)")
        for label, kw in (("mcap, zstd (default)", dict(storage="mcap")),
                          ("mcap, uncompressed", dict(storage="mcap", compress=False)),
                          ("sqlite3", dict(storage="sqlite3"))):
            speeds, walls = [], []
            for k in range(args.repeat):
                out = os.path.join(tmp, f"out{k}")
                s, _ = replay_bag(src, out, config, **kw)
                assert not s.error, s.error
                speeds.append(s.speed)
                walls.append(s.wall_seconds - s.loop_seconds)
                shutil.rmtree(out)
            per_tick = 1e6 / (1000.0 * float(np.median(speeds)))
            print(f"  {label:<22} {np.median(speeds):6.1f}x real time  ({per_tick:.0f} µs per 1 ms tick; "
                  f"start-up incl. planning {np.median(walls):.2f} s)")
        b = breakdown(src, config, tmp)
        print(f"  per tick (zstd MCAP): reading {b['read']:.1f} µs, the node's tick logic (decoding, validation, "
              f"filters, freshness, estimate, encoding) {b['tick logic']:.1f} µs, writing 11 messages "
              f"{b['write']:.1f} µs")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
