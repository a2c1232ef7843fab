#!/usr/bin/env python3
"""Replay speed versus real time: the demo humanoid at 1 kHz (not a test).

    python benchmarks/bench_replay.py [--seconds 10] [--repeat 3]

Builds a ``--seconds`` long recording by repeating the shipped one (``test/data/demo_humanoid``:
1 s of the demo humanoid at 1 kHz, IMU + six force-torque sensors + joint states, 8 input messages
per millisecond) with shifted stamps and log times, then replays it with ``config/humanoid.yaml``
into MCAP (zstd chunks, the default), uncompressed MCAP and sqlite3, and once more into zstd MCAP
reading through rosbags' ``Reader.messages`` instead of chunk by chunk; prints the median speed
(recorded seconds per second of the replay's message loop; planning excluded, reported apart) over
``--repeat`` interleaved rounds (every row once per round).
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


def interleaved(options: dict, repeat: int) -> dict:
    """``{name: median seconds of options[name]()}`` over ``repeat`` rounds, each round running every
    option once in turn (a burst of load on the shared machine then moves every option alike)."""
    times = {name: [] for name in options}
    for _ in range(repeat):
        for name, fn in options.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}


def breakdown(path: str, config, tmp: str, repeat: int) -> dict:
    """µs per tick of each option: reading, the node's tick logic over the batches (input handling,
    filters, freshness, estimate, encoding the outputs), writing (zstd MCAP)."""
    import mcap.reader
    import mcap.writer
    from rosbags.rosbag2 import CompressionFormat, CompressionMode, Reader, StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    from rbd_estimator.replay import Replayer, read_description
    from rbd_estimator.replay import bag_io
    r = Reader(path)
    r.open()
    xml = read_description(r, "/robot_description")
    rep = Replayer(xml, config)
    conns = [c for c in r.connections if c.topic in rep.handlers]
    topics = [c.topic for c in conns]
    batches = list(bag_io.iter_batches(r, conns, max_messages=8192))
    segments = []
    t0 = time.perf_counter()
    for b in batches:
        rep.feed_batch(b, topics, segments.append, lambda *a: None)
    ticks = max(1, rep.core.ticks)
    logic = time.perf_counter() - t0
    (mcap_file,) = [os.path.join(path, f) for f in os.listdir(path) if f.endswith(".mcap")]

    def read_chunks():
        return list(bag_io.iter_batches(r, conns, max_messages=8192))

    def read_rosbags():
        with mock.patch.object(bag_io, "_mcap_plan", lambda *a: None):
            return list(bag_io.iter_batches(r, conns, max_messages=8192))

    def read_mcap():
        with open(mcap_file, "rb") as fh:
            return [(c.id, m.log_time, m.data) for _, c, m in mcap.reader.make_reader(fh).iter_messages(topics)]

    ts = get_typestore(Stores.ROS2_JAZZY)
    est_types = [(mt, t) for t, mt in rep.outputs]

    def write_rosbags():
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

    def write_mcap():
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

    seconds = interleaved({"read: chunks (mcap summary + compiled scan)": read_chunks,
                           "read: rosbags Reader.messages": read_rosbags,
                           "read: mcap iter_messages": read_mcap,
                           "write: rosbags Writer.write": write_rosbags,
                           "write: mcap Writer.add_message": write_mcap}, repeat)
    r.close()
    return {"tick logic": logic / ticks * 1e6, **{k: v / ticks * 1e6 for k, v in seconds.items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from rbd_estimator.replay import load_config, replay_bag
    from rbd_estimator.replay import bag_io
    # the fault monitor off: the repeated recording jumps back every second, and the χ² test rightly
    # refuses the finite-difference accelerations of the jump (isolating, so planning the fallbacks)
    from rbd_estimator.estimation import SensorConfig
    from rbd_estimator.runtime.params import NODE_KEYS
    config = SensorConfig.from_parameters({**load_config(PARAMS).to_parameters(), "fault_false_alarm_rate": 0.0},
                                          node_keys=NODE_KEYS)
    tmp = tempfile.mkdtemp(prefix="bench_replay_")
    try:
        src = os.path.join(tmp, "input")
        long_bag(src, args.seconds)
        print(f"input: {args.seconds} s of the demo humanoid at 1 kHz (IMU, 6 force-torque sensors, joint states: "
              f"8 messages per tick)")
        rows = {"mcap, zstd (default)": (dict(storage="mcap"), nullcontext),
                "mcap, uncompressed": (dict(storage="mcap", compress=False), nullcontext),
                "sqlite3": (dict(storage="sqlite3"), nullcontext),
                "mcap, zstd, estimates only": (dict(storage="mcap", copy_inputs=False), nullcontext),
                "mcap, zstd, read by rosbags": (dict(storage="mcap"),
                                                lambda: mock.patch.object(bag_io, "_mcap_plan", lambda *a: None))}
        speeds = {label: [] for label in rows}
        startup = {label: [] for label in rows}
        for k in range(args.repeat):                    # interleaved rounds: every row once per round
            for label, (kw, reading) in rows.items():
                out = os.path.join(tmp, f"out{k}")
                with reading():
                    s, _ = replay_bag(src, out, config, **kw)
                assert not s.error, s.error
                speeds[label].append(s.speed)
                startup[label].append(s.wall_seconds - s.loop_seconds)
                shutil.rmtree(out)
        for label in rows:
            speed = float(np.median(speeds[label]))
            print(f"  {label:<30} {speed:6.1f}x real time  ({1e3 / speed:.0f} µs per 1 ms tick; "
                  f"start-up incl. planning {np.median(startup[label]):.2f} s)")
        print("  per tick, each option (8 input messages read; they and the tick's outputs written):")
        for what, us in breakdown(src, config, tmp, args.repeat).items():
            print(f"    {what:<46} {us:6.1f} µs")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
