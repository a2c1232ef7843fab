#!/usr/bin/env python3
"""Replay speed versus real time: the demo humanoid at 1 kHz (not a test).

    python benchmarks/bench_replay.py [--seconds 10] [--repeat 3]

Builds a ``--seconds`` long recording by repeating the shipped one (``test/data/demo_humanoid``:
1 s of the demo humanoid at 1 kHz, IMU + six force-torque sensors + joint states, 8 input messages
per millisecond) with shifted stamps and log times, then replays it with ``config/humanoid.yaml``
into MCAP (zstd chunks, the default), uncompressed MCAP and sqlite3, and once more into zstd MCAP
reading through rosbags' ``Reader.messages`` instead of chunk by chunk; prints the median speed
(recorded seconds per second of the replay's message loop; planning excluded, reported apart).
Then the time per tick of each public-API option for each part: reading (chunk by chunk through
the ``mcap`` package's summary, rosbags' ``Reader.messages``, ``mcap``'s ``iter_messages``), the
node's tick logic (compiled, over batches of messages), writing 11 messages (rosbags'
``Writer.write``, ``mcap``'s ``Writer.add_message``; zstd chunks).
"""
from __future__ import annotations

import argparse
import os
import shutil
import struct
import sys
import tempfile
import time
from contextlib import nullcontext
from unittest import mock

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


def _per_tick(fn, ticks: int, repeat: int) -> float:
    """Median over ``repeat`` runs of ``fn()``, in µs per tick."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) / ticks * 1e6


def breakdown(path: str, config, tmp: str, repeat: int) -> dict:
    """µs per tick of each option: reading, the node's tick logic over the batches (input handling,
    filters, freshness, estimate, encoding the outputs), writing (zstd MCAP)."""
    import mcap.reader
    import mcap.writer
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, Reader, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    from rbd_estimator.replay import Replayer, read_description
    from rbd_estimator.ros import bag_io
    out = {}
    with Reader(path) as r:
        xml = read_description(r, "/robot_description")
        rep = Replayer(xml, config)
        conns = [c for c in r.connections if c.topic in rep.handlers]
        batches = list(bag_io.iter_batches(r, conns, max_messages=8192))
        segments = []
        t0 = time.perf_counter()
        for b in batches:
            rep.feed_batch(b, [c.topic for c in conns], segments.append, lambda *a: None)
        ticks = max(1, rep.core.ticks)
        out["tick logic"] = (time.perf_counter() - t0) / ticks * 1e6
        out["read: chunks (mcap summary + compiled scan)"] = _per_tick(
            lambda: list(bag_io.iter_batches(r, conns, max_messages=8192)), ticks, repeat)
        with mock.patch.object(bag_io, "_mcap_plan", lambda *a: None):
            out["read: rosbags Reader.messages"] = _per_tick(
                lambda: list(bag_io.iter_batches(r, conns, max_messages=8192)), ticks, repeat)
    (mcap_file,) = [os.path.join(path, f) for f in os.listdir(path) if f.endswith(".mcap")]
    topics = [c.topic for c in conns]

    def mcap_iter():
        with open(mcap_file, "rb") as fh:
            return [(c.id, m.log_time, m.data) for _, c, m in mcap.reader.make_reader(fh).iter_messages(topics)]
    out["read: mcap iter_messages"] = _per_tick(mcap_iter, ticks, repeat)
    ts = get_typestore(Stores.ROS2_JAZZY)
    est_types = [("sensor_msgs/msg/JointState", rep.torque_topic)]
    est_types += [("geometry_msgs/msg/WrenchStamped", t) for t in rep.wrench_topics]

    def rosbags_write():
        dst = os.path.join(tmp, "breakdown")
        shutil.rmtree(dst, ignore_errors=True)
        w = Writer(dst, version=9, storage_plugin=StoragePlugin.MCAP)
        w.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        w.open()
        cs = [w.add_connection(c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest) for c in conns]
        cs += [w.add_connection(t, mt, typestore=ts) for mt, t in est_types]
        for seg in segments:
            bag_io.write_batch(w, cs, seg)
        w.close()

    def mcap_write():
        with open(os.path.join(tmp, "breakdown.mcap"), "wb") as fh:
            w = mcap.writer.Writer(fh, compression=mcap.writer.CompressionType.ZSTD)
            w.start("ros2", "bench_replay")
            ids = []
            for topic, mt, text in ([(c.topic, c.msgtype, c.msgdef.data) for c in conns]
                                    + [(t, mt, ts.generate_msgdef(mt)[0]) for mt, t in est_types]):
                ids.append(w.register_channel(topic, "cdr", w.register_schema(mt, "ros2msg", text.encode())))
            add = w.add_message
            for seg in segments:
                data = memoryview(seg.data)
                for c, t, a, n in zip(seg.conn.tolist(), seg.time.tolist(), seg.start.tolist(), seg.length.tolist()):
                    add(ids[c], t, data[a:a + n], t)
            w.finish()
    out["write: rosbags Writer.write"] = _per_tick(rosbags_write, ticks, repeat)
    out["write: mcap Writer.add_message"] = _per_tick(mcap_write, ticks, repeat)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from rbd_estimator.replay import load_config, replay_bag
    from rbd_estimator.ros import bag_io
    config = load_config(PARAMS)
    tmp = tempfile.mkdtemp(prefix="bench_replay_")
    try:
        src = os.path.join(tmp, "input")
        long_bag(src, args.seconds)
        print(f"input: {args.seconds} s of the demo humanoid at 1 kHz (IMU, 6 force-torque sensors, joint states: "
              f"8 messages per tick)")
        rosbags_reading = mock.patch.object(bag_io, "_mcap_plan", lambda *a: None)
        for label, kw, reading in (("mcap, zstd (default)", dict(storage="mcap"), nullcontext()),
                                   ("mcap, uncompressed", dict(storage="mcap", compress=False), nullcontext()),
                                   ("sqlite3", dict(storage="sqlite3"), nullcontext()),
                                   ("mcap, zstd, read by rosbags", dict(storage="mcap"), rosbags_reading)):
            speeds, walls = [], []
            for k in range(args.repeat):
                out = os.path.join(tmp, f"out{k}")
                with reading:
                    s, _ = replay_bag(src, out, config, **kw)
                assert not s.error, s.error
                speeds.append(s.speed)
                walls.append(s.wall_seconds - s.loop_seconds)
                shutil.rmtree(out)
            per_tick = 1e6 / (1000.0 * float(np.median(speeds)))
            print(f"  {label:<30} {np.median(speeds):6.1f}x real time  ({per_tick:.0f} µs per 1 ms tick; "
                  f"start-up incl. planning {np.median(walls):.2f} s)")
        print("  per tick, each option (8 input messages read, 11 written):")
        for what, us in breakdown(src, config, tmp, args.repeat).items():
            print(f"    {what:<46} {us:6.1f} µs")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
