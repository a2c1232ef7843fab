#!/usr/bin/env python3
"""The latency floor under the node: the middleware and two Python processes, no estimator (not a test).

    PYTHONPATH=. python benchmarks/bench_middleware.py [--duration 20] [--rate 1000 2000]
                                                       [--variant all|msg|raw|bare] [--no-micro]

A two-process ping-pong with the traffic of ``benchmarks/bench_node.py``. This process (the
client) publishes per period an IMU sample, six force-torque readings and a 30-joint
``JointState`` (names, positions, velocities), on the topics and with the QoS of
:class:`rbd_estimator.ros.demo_runner.Client` (reliable, depth 100). A child process (the echo,
standing in for the node) subscribes to them with the node's QoS (joint states ``TRIGGER_QOS``:
best effort, depth 10; sensors ``INPUT_QOS``: best effort, depth 1), spins them with the node's
:class:`~rbd_estimator.ros.fast_spin.WaitSetSpinner`, keeps the latest sensor samples and, on each
joint state, publishes what the node publishes (``~/joint_torques``: 30 names and efforts; two
``~/contact_wrenches/*``; ``OUTPUT_QOS``) with the joint state's stamp and no work in between.
The client receives ``~/joint_torques`` in a wait-set thread, as ``bench_node.py`` does (which
does not subscribe to the wrenches either). Latency: arrival there minus the time just before the
joint state with that stamp was published.

Variants (``--variant``; the default runs all three):

* ``msg``  (a) rclpy message objects on both sides; the echo answers with the node's
  ``convert.fill_joint_torques`` / ``fill_wrench``.
* ``raw``  (b) ``raw=True`` subscriptions (serialized bytes) and pre-serialized bytes published
  (``Publisher.publish(bytes)`` calls ``publish_raw``); only the stamp is patched per message.
* ``bare`` (c) as ``raw``, joint states alone: no IMU, force-torque or wrench traffic, one
  message each way.

Each run starts with one second of warm-up that is not counted. Per variant and rate it prints the
joint states published, taken by the echo, answered (answer received here) and missed, the sensor
messages the echo took (7 per period at most: their queues are one deep), the latency median, p99
and max, and the CPU time of each process over the measured window (% of one core, all threads).
A second table splits the latency with the middleware's timestamps (``source_timestamp``,
``received_timestamp``: the writer's publish and the reader's receipt, same clock): DDS out
(client writer -> echo reader), echo wake+take (receipt -> callback), sent -> answer written
(client publish -> echo's ``joint_torques`` writer), DDS back, client wake+take.

Then, in this process alone (medians, µs): ``take_message`` deserialized vs raw for the 30-joint
``JointState`` and for ``WrenchStamped``; ``publish(msg)`` vs ``publish(bytes)`` of the 30-effort
``JointState`` to a subscriber in another process; ``serialize_message`` of both joint states.
"""
from __future__ import annotations

import argparse
import array
import json
import os
import struct
import subprocess
import sys
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

import rclpy  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.qos import QoSProfile, QoSReliabilityPolicy  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402

from common import machine, median_us  # noqa: E402
from rbd_estimator.node import OUTPUT_QOS  # noqa: E402
from rbd_estimator.ros.tick_thread import INPUT_QOS, TRIGGER_QOS  # noqa: E402
from rbd_estimator.ros.convert import (fill_joint_torques, fill_wrench, joint_state_msg, time_msg,  # noqa: E402
                                       wrench_msg)
from rbd_estimator.ros.fast_spin import WaitSetSpinner  # noqa: E402

#: the client's publishers and its subscription to the outputs (as rbd_estimator.ros.demo_runner.Client)
CLIENT_QOS = QoSProfile(depth=100, reliability=QoSReliabilityPolicy.RELIABLE)
JOINTS = tuple(f"{side}_{j}" for side in ("l", "r") for j in (
    "hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle_pitch", "ankle_roll",
    "shoulder_pitch", "shoulder_roll", "shoulder_yaw", "elbow", "wrist_prosup", "wrist_pitch",
    "wrist_yaw")) + ("torso_yaw", "torso_roll", "torso_pitch", "neck_yaw")
FT_SENSORS = ("l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor",
              "l_arm_ft_sensor", "r_arm_ft_sensor")
CONTACTS = ("l_foot", "r_foot")
VARIANTS = {"msg": "(a) messages", "raw": "(b) raw bytes", "bare": "(c) raw, js only",
            "events": "(d) raw, EventsExecutor"}
WARMUP_S = 1.0
_STAMP = struct.Struct("<iI")          # header.stamp: bytes 4-12 of the CDR (after the encapsulation)
assert len(JOINTS) == 30


# ============================================================================ messages
class Recording:
    """Random sensor readings to cycle (values do not matter, sizes do)."""

    def __init__(self, steps: int = 500, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.q = rng.standard_normal((steps, len(JOINTS)))
        self.dq = rng.standard_normal((steps, len(JOINTS)))
        self.ft = rng.standard_normal((steps, len(FT_SENSORS), 6))
        self.imu = rng.standard_normal((steps, 10))          # orientation (4), gyro (3), accel (3)

    def __len__(self) -> int:
        return len(self.q)


def joint_state_in(rec: Recording, k: int = 0) -> JointState:
    """The client's joint state: 30 names, positions and velocities."""
    js = JointState()
    js.name = list(JOINTS)
    js.position = [float(x) for x in rec.q[k]]
    js.velocity = [float(x) for x in rec.dq[k]]
    return js


def imu_msg(rec: Recording, k: int = 0, msg: Imu | None = None) -> Imu:
    """``msg`` (or a new ``Imu``) filled with step ``k`` (field by field, floats)."""
    msg = msg or Imu()
    o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
    v = rec.imu[k]
    o.x, o.y, o.z, o.w = (float(x) for x in v[:4])
    w.x, w.y, w.z = (float(x) for x in v[4:7])
    a.x, a.y, a.z = (float(x) for x in v[7:])
    return msg


def ft_msgs(rec: Recording, k: int = 0) -> list:
    msgs = [wrench_msg(name) for name in FT_SENSORS]
    for m, w in zip(msgs, rec.ft[k]):
        fill_wrench(m, m.header.stamp, w)
    return msgs


def torques_msg() -> JointState:
    """What the node publishes on ``~/joint_torques``: 30 names, 30 efforts."""
    msg = joint_state_msg(JOINTS)
    fill_joint_torques(msg, msg.header.stamp, np.linspace(-1.0, 1.0, len(JOINTS)))
    return msg


class Serialized:
    """A message serialized once; :meth:`stamped` patches ``header.stamp`` (the first field)."""
    __slots__ = ("head", "tail")

    def __init__(self, msg):
        data = serialize_message(msg)
        self.head, self.tail = data[:4], data[12:]

    def stamped(self, stamp: bytes) -> bytes:
        return self.head + stamp + self.tail


def stamp_bytes(ns: int) -> bytes:
    return _STAMP.pack(ns // 1_000_000_000, ns % 1_000_000_000)


# ============================================================================ the echo process
class Echo:
    """The node's subscriptions and publishers and nothing else: one answer per joint state."""

    def __init__(self, variant: str, namespace: str):
        self.node = Node("rbd_estimator", namespace=namespace)
        raw, bare = variant != "msg", variant == "bare"
        self.tau_pub = self.node.create_publisher(JointState, "~/joint_torques", OUTPUT_QOS)
        self.wrench_pubs = [] if bare else [
            self.node.create_publisher(WrenchStamped, f"~/contact_wrenches/{c}", OUTPUT_QOS) for c in CONTACTS]
        self.tau_msg, self.tau = torques_msg(), np.linspace(-1.0, 1.0, len(JOINTS))
        self.wrench_msgs = [wrench_msg(c) for c in CONTACTS]
        self.wrenches = np.ones((len(CONTACTS), 6))
        self.tau_raw = Serialized(self.tau_msg)
        self.wrench_raw = [Serialized(m) for m in self.wrench_msgs]
        self.latest, self.sensor_count = {}, 0
        # per joint state (ns): its stamp, DDS receipt - DDS source, callback entry - DDS receipt
        self.stamp, self.wire, self.wake = array.array("q"), array.array("q"), array.array("q")
        self.marks = {}
        on_js = self._on_js_raw if raw else self._on_js_msg
        self.node.create_subscription(JointState, "joint_states", on_js, TRIGGER_QOS, raw=raw)
        if not bare:
            self.node.create_subscription(Imu, "imu", lambda m: self._store("imu", m), INPUT_QOS, raw=raw)
            for name in FT_SENSORS:
                self.node.create_subscription(WrenchStamped, f"ft/{name}", lambda m, n=name: self._store(n, m),
                                              INPUT_QOS, raw=raw)

    def _store(self, name, msg) -> None:
        self.latest[name] = msg
        self.sensor_count += 1

    def _note(self, sec: int, nsec: int, info, t_cb: int) -> None:
        self.stamp.append(sec * 1_000_000_000 + nsec)
        self.wire.append(info["received_timestamp"] - info["source_timestamp"])
        self.wake.append(t_cb - info["received_timestamp"])

    def _on_js_msg(self, msg: JointState, info) -> None:
        t_cb = time.time_ns()
        stamp = msg.header.stamp
        fill_joint_torques(self.tau_msg, stamp, self.tau)
        self.tau_pub.publish(self.tau_msg)
        for pub, m, w in zip(self.wrench_pubs, self.wrench_msgs, self.wrenches):
            fill_wrench(m, stamp, w)
            pub.publish(m)
        self._note(stamp.sec, stamp.nanosec, info, t_cb)

    def _on_js_raw(self, data: bytes, info) -> None:
        t_cb = time.time_ns()
        stamp = data[4:12]
        self.tau_pub.publish(self.tau_raw.stamped(stamp))
        for pub, s in zip(self.wrench_pubs, self.wrench_raw):
            pub.publish(s.stamped(stamp))
        self._note(*_STAMP.unpack(stamp), info, t_cb)

    def control(self, spinner: WaitSetSpinner) -> None:
        """Read ``start <first stamp>`` / ``stop <last stamp>`` from stdin (the measured window);
        stop spinning at EOF."""
        for line in sys.stdin:
            word, stamp = line.split()
            self.marks[word] = (int(stamp), time.monotonic(), time.process_time(), self.sensor_count)
        spinner.stop()

    def summary(self) -> dict:
        """Counts, CPU and the echo's latency parts over the measured window."""
        (first, w0, c0, s0), (last, w1, c1, s1) = self.marks["start"], self.marks["stop"]
        stamp = np.array(self.stamp, dtype=np.int64)
        inside = (stamp >= first) & (stamp <= last)
        wire, wake = (np.array(a, dtype=np.int64)[inside] * 1e-6 for a in (self.wire, self.wake))
        return {"joint_states": int(inside.sum()), "sensors": s1 - s0, "cpu": (c1 - c0) / (w1 - w0),
                "wire": _med_p99(wire), "wake": _med_p99(wake)}


class EventsSpinner:
    """rclpy's ``EventsExecutor`` (``rclpy.experimental``) behind the spinner's ``spin``/``stop``.
    With the rclpy 9.1.2 wheels and ``raw=True`` subscriptions its ``spin_once`` raises
    ``SystemError: null argument to internal routine`` at the first message, and ``spin()`` then
    ``shutdown()`` from another thread never returns (one core at 100 %): the comparison of issue 19."""

    def __init__(self, node):
        from rclpy.experimental import EventsExecutor
        self.executor, self._stop, self._context = EventsExecutor(), False, node.context
        self.executor.add_node(node)

    def spin(self) -> None:
        while not self._stop and self._context.ok():
            self.executor.spin_once(0.1)

    def stop(self) -> None:
        self._stop = True


def run_echo(variant: str, namespace: str) -> int:
    """The child process: echo until stdin closes, then print the summary as one JSON line."""
    rclpy.init()
    try:
        echo = Echo(variant, namespace)
        if variant == "events":            # rclpy's C++ events executor in place of the wait-set loop
            spinner = EventsSpinner(echo.node)
        else:
            spinner = WaitSetSpinner(echo.node)
        threading.Thread(target=echo.control, args=(spinner,), daemon=True).start()
        print("ready", flush=True)
        spinner.spin()
        print(json.dumps(echo.summary()), flush=True)
        echo.node.destroy_node()
    finally:
        rclpy.try_shutdown()
    return 0


def run_sink(namespace: str) -> int:
    """The child process of the micro-measurements: a subscriber to ``torques`` that never takes."""
    rclpy.init()
    try:
        node = Node("rbd_mw_sink", namespace=namespace)
        node.create_subscription(JointState, "torques", lambda m: None, CLIENT_QOS, raw=True)
        print("ready", flush=True)
        sys.stdin.read()
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
    return 0


def spawn(*args: str) -> subprocess.Popen:
    """This script in a child process (stdin: control, stdout: ``ready`` then results)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env=env)


# ============================================================================ the client
class Client:
    """Publishers of the node's inputs and a wait-set thread that receives ``~/joint_torques``."""

    def __init__(self, variant: str, namespace: str):
        self.node = Node("rbd_mw_client", namespace=namespace)
        raw, bare = variant != "msg", variant == "bare"
        self.js = self.node.create_publisher(JointState, "joint_states", CLIENT_QOS)
        self.imu = None if bare else self.node.create_publisher(Imu, "imu", CLIENT_QOS)
        self.ft = [] if bare else [self.node.create_publisher(WrenchStamped, f"ft/{n}", CLIENT_QOS)
                                   for n in FT_SENSORS]
        # stamp, arrival (Python), source_timestamp (echo's writer), received_timestamp (our reader)
        self.got = tuple(array.array("q") for _ in range(4))
        self.outputs = Node("rbd_mw_outputs", namespace=namespace)
        self.sub = self.outputs.create_subscription(JointState, f"{namespace}/rbd_estimator/joint_torques",
                                                    self._on_raw if raw else self._on_msg, CLIENT_QOS, raw=raw)
        self._spinner = WaitSetSpinner(self.outputs)
        self._thread = threading.Thread(target=self._spinner.spin, daemon=True)
        self._thread.start()

    def _record(self, stamp: int, t: int, info) -> None:
        for a, v in zip(self.got, (stamp, t, info["source_timestamp"], info["received_timestamp"])):
            a.append(v)

    def _on_msg(self, msg: JointState, info) -> None:
        t = time.time_ns()
        s = msg.header.stamp
        self._record(s.sec * 1_000_000_000 + s.nanosec, t, info)

    def _on_raw(self, data: bytes, info) -> None:
        t = time.time_ns()
        sec, nsec = _STAMP.unpack_from(data, 4)
        self._record(sec * 1_000_000_000 + nsec, t, info)

    def wait_matched(self, timeout: float = 10.0) -> bool:
        pubs = [self.js, *([self.imu] if self.imu else []), *self.ft]
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if all(p.get_subscription_count() > 0 for p in pubs) and self.sub.get_publisher_count() > 0:
                return True
            time.sleep(0.02)
        return False

    def received(self) -> dict:
        """Stamp -> (arrival, source_timestamp, received_timestamp), ns."""
        stamp, t, src, recv = (np.array(a, dtype=np.int64) for a in self.got)
        return {int(s): (int(a), int(b), int(c)) for s, a, b, c in zip(stamp, t, src, recv)}

    def close(self) -> None:
        self._spinner.stop()
        self._thread.join(2.0)
        self.outputs.destroy_node()
        self.node.destroy_node()


class MsgInputs:
    """Variant (a): rclpy messages filled field by field per step (as the demo client did before it
    published serialized templates), then published."""

    def __init__(self, client: Client, rec: Recording):
        self.c, self.rec = client, rec
        self.js, self.imu, self.fts = joint_state_in(rec), imu_msg(rec), ft_msgs(rec)

    def publish(self, k: int, stamp_ns: int) -> int:
        """IMU, force-torque, then the joint state; returns the time just before the joint state."""
        rec, i = self.rec, k % len(self.rec)
        stamp = time_msg(stamp_ns)
        self.imu.header.stamp = stamp
        self.c.imu.publish(imu_msg(rec, i, self.imu))
        for pub, m, w in zip(self.c.ft, self.fts, rec.ft[i]):
            fill_wrench(m, stamp, w)
            pub.publish(m)
        self.js.header.stamp = stamp
        self.js.position = [float(x) for x in rec.q[i]]
        self.js.velocity = [float(x) for x in rec.dq[i]]
        t = time.time_ns()
        self.c.js.publish(self.js)
        return t


class RawInputs:
    """Variants (b, c): pre-serialized messages, the stamp patched per step."""

    def __init__(self, client: Client, rec: Recording):
        self.c = client
        self.js = Serialized(joint_state_in(rec))
        sensors = ([(client.imu, imu_msg(rec))] if client.imu else []) + list(zip(client.ft, ft_msgs(rec)))
        self.sensors = [(pub, Serialized(m)) for pub, m in sensors]

    def publish(self, k: int, stamp_ns: int) -> int:
        stamp = stamp_bytes(stamp_ns)
        for pub, s in self.sensors:
            pub.publish(s.stamped(stamp))
        data = self.js.stamped(stamp)
        t = time.time_ns()
        self.c.js.publish(data)
        return t


def publish_at(rate: float, steps: int, warm: int, publish, start) -> tuple:
    """Call ``publish(k, stamp_ns)`` at ``rate`` (sleeping, not spinning, in between, as
    ``publish_loop``) for ``warm + steps`` steps, ``start(first, last)`` with the first and last
    measured stamps before step ``warm``. Returns the
    stamps and send times of the last ``steps`` steps and how many of them were more than a period
    late."""
    period, period_ns = 1.0 / rate, round(1e9 / rate)
    total = warm + steps
    stamps = time.time_ns() + period_ns * np.arange(total, dtype=np.int64)
    sent = np.zeros(total, dtype=np.int64)
    late = 0
    t0 = time.perf_counter()
    for k in range(total):
        if k == warm:
            start(int(stamps[warm]), int(stamps[-1]))
        target = t0 + k * period
        now = time.perf_counter()
        if now < target:
            time.sleep(target - now)
            now = time.perf_counter()
        late += k >= warm and now - target > period
        sent[k] = publish(k, int(stamps[k]))
    return stamps[warm:], sent[warm:], late


# ============================================================================ one run
def run_variant(variant: str, rate: float, duration: float) -> dict:
    """Echo process, client, warm-up, measured window; the figures of one table row."""
    ns = f"/rbd_mw_{os.getpid()}_{variant}_{int(rate)}"
    echo = spawn("--role", "echo", "--variant", variant, "--ns", ns)
    client = Client(variant, ns)
    try:
        if echo.stdout.readline().strip() != "ready" or not client.wait_matched():
            raise RuntimeError(f"the echo process ({variant}) did not come up or match")
        inputs = (MsgInputs if variant == "msg" else RawInputs)(client, Recording())
        window = {}

        def start(first: int, last: int):
            _tell(echo, f"start {first}")
            window.update(last=last, wall=time.monotonic(), cpu=time.process_time())

        stamps, sent, late = publish_at(rate, int(duration * rate), int(WARMUP_S * rate), inputs.publish, start)
        cpu = (time.process_time() - window["cpu"]) / (time.monotonic() - window["wall"])
        _tell(echo, f"stop {window['last']}")
        time.sleep(0.5)                       # the last answers
        echo.stdin.close()
        line = echo.stdout.readline()
        echo.wait(10.0)
        if not line:
            raise RuntimeError(f"the echo process ({variant}) exited with {echo.returncode}")
        return figures(stamps, sent, client.received(), late, cpu, json.loads(line))
    finally:
        client.close()
        if echo.poll() is None:
            echo.kill()
            echo.wait()


def _tell(proc: subprocess.Popen, word: str) -> None:
    proc.stdin.write(word + "\n")
    proc.stdin.flush()


def _med_p99(x: np.ndarray) -> list:
    return [float(np.median(x)), float(np.percentile(x, 99))] if len(x) else [np.nan, np.nan]


def figures(stamps, sent, received: dict, late: int, cpu: float, echo: dict) -> dict:
    """Latency (ms) of every joint state that was answered, and its parts."""
    rows = [(*received[s], t) for s, t in zip(stamps.tolist(), sent.tolist()) if s in received]
    arrival, src, recv, t_sent = np.array(rows, dtype=np.int64).reshape(-1, 4).T
    lat = (arrival - t_sent) * 1e-6
    return {"published": len(stamps), "answered": len(rows), "echo_in": echo["joint_states"],
            "sensors_in": echo["sensors"], "late": late,
            "median": float(np.median(lat)) if len(lat) else np.nan,
            "p99": float(np.percentile(lat, 99)) if len(lat) else np.nan,
            "max": float(lat.max()) if len(lat) else np.nan,
            "cpu_client": cpu, "cpu_echo": echo["cpu"],
            "dds_out": echo["wire"], "echo_wake": echo["wake"],
            "to_answer": _med_p99((src - t_sent) * 1e-6), "dds_back": _med_p99((recv - src) * 1e-6),
            "client_wake": _med_p99((arrival - recv) * 1e-6)}


def print_tables(results: list) -> None:
    """The main table, then the latency parts (median / p99, ms)."""
    print(f"\n{'variant':<18}{'Hz':>6}{'published':>11}{'echo took':>11}{'answered':>10}{'missed':>8}"
          f"{'sensors':>9}{'median ms':>11}{'p99 ms':>9}{'max ms':>9}{'CPU client':>12}{'CPU echo':>10}")
    for v, rate, r in results:
        print(f"{VARIANTS[v]:<18}{rate:>6.0f}{r['published']:>11}{r['echo_in']:>11}{r['answered']:>10}"
              f"{r['published'] - r['answered']:>8}{r['sensors_in']:>9}"
              f"{r['median']:>11.3f}{r['p99']:>9.3f}{r['max']:>9.3f}"
              f"{100 * r['cpu_client']:>11.0f}%{100 * r['cpu_echo']:>9.0f}%"
              + (f"   ({r['late']} steps published > 1 period late)" if r["late"] else ""))
    parts = ("dds_out", "echo_wake", "to_answer", "dds_back", "client_wake")
    heads = ("DDS out", "echo wake+take", "sent->answer", "DDS back", "client wake+take")
    print(f"\nlatency parts, median / p99 (ms)\n{'variant':<18}{'Hz':>6}" + "".join(f"{h:>18}" for h in heads))
    for v, rate, r in results:
        print(f"{VARIANTS[v]:<18}{rate:>6.0f}" + "".join(f"{r[p][0]:>9.3f} /{r[p][1]:>6.3f}" for p in parts))


# ============================================================================ micro-measurements
def time_takes(node: Node, msg, n: int = 2000) -> tuple:
    """Median µs of ``take_message`` deserialized and raw: ``n`` copies of ``msg`` queued in two
    subscriptions (same process), then each take timed."""
    qos = QoSProfile(depth=n, reliability=QoSReliabilityPolicy.RELIABLE)
    topic = f"micro_take_{type(msg).__name__}"
    pub = node.create_publisher(type(msg), topic, qos)
    subs = [node.create_subscription(type(msg), topic, lambda m: None, qos, raw=raw) for raw in (False, True)]
    time.sleep(0.3)
    for _ in range(n):
        pub.publish(msg)
    time.sleep(0.5)
    medians = []
    for sub in subs:
        t = []
        while True:
            t0 = time.perf_counter()
            taken = sub.handle.take_message(sub.msg_type, sub.raw)
            if taken is None:
                break
            t.append(time.perf_counter() - t0)
        medians.append((float(np.median(t)) * 1e6, len(t)))
    for s in subs:
        node.destroy_subscription(s)
    node.destroy_publisher(pub)
    return tuple(medians)


def micro(calls: int = 5000) -> None:
    """The per-message costs, in this process (publishing to a subscriber in a child process)."""
    rec = Recording()
    node = Node("rbd_mw_micro")
    js_in, tau, wrench = joint_state_in(rec), torques_msg(), ft_msgs(rec)[0]
    print("\nper-message costs in one process (medians, µs)")
    for label, m in (("JointState (30 names, positions, velocities)", js_in), ("WrenchStamped", wrench)):
        (d, nd), (r, nr) = time_takes(node, m)
        print(f"  take_message {label}: deserialized {d:.1f}, raw {r:.1f}  ({nd}/{nr} takes)")
    ns = f"/rbd_mw_micro_{os.getpid()}"
    sink = spawn("--role", "sink", "--ns", ns)
    try:
        pub = node.create_publisher(JointState, f"{ns}/torques", OUTPUT_QOS)
        if sink.stdout.readline().strip() != "ready":
            raise RuntimeError("the sink process did not come up")
        end = time.monotonic() + 10.0
        while pub.get_subscription_count() == 0 and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.3)
        raw, stamp, values = Serialized(tau), tau.header.stamp, np.linspace(-1.0, 1.0, len(JOINTS))
        data = raw.stamped(stamp_bytes(123))
        print(f"  JointState (30 names, 30 efforts), to a subscriber in another process: "
              f"publish(msg) {median_us(lambda: pub.publish(tau), calls):.1f}, "
              f"publish(bytes) {median_us(lambda: pub.publish(data), calls):.1f}; as the echo answers: "
              f"fill_joint_torques + publish(msg) "
              f"{median_us(lambda: (fill_joint_torques(tau, stamp, values), pub.publish(tau)), calls):.1f}, "
              f"patch stamp + publish(bytes) {median_us(lambda: pub.publish(raw.stamped(b'01234567')), calls):.1f}")
    finally:
        sink.stdin.close()
        sink.wait(10.0)
    print(f"  serialize_message JointState: 30 names, positions, velocities "
          f"{median_us(lambda: serialize_message(js_in), calls):.1f}; 30 names, 30 efforts "
          f"{median_us(lambda: serialize_message(tau), calls):.1f}")
    node.destroy_node()


# ============================================================================ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=20.0, help="measured seconds per variant and rate (default 20)")
    ap.add_argument("--rate", type=float, nargs="+", default=[1000.0], help="publishing rates, Hz (default 1000)")
    ap.add_argument("--variant", choices=["all", *VARIANTS], default="all", help="default: all three")
    ap.add_argument("--no-micro", action="store_true", help="skip the one-process micro-measurements")
    ap.add_argument("--role", choices=["client", "echo", "sink"], default="client", help=argparse.SUPPRESS)
    ap.add_argument("--ns", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.role == "echo":
        return run_echo(args.variant, args.ns)
    if args.role == "sink":
        return run_sink(args.ns)
    variants = list(VARIANTS) if args.variant == "all" else [args.variant]
    print(f"{machine()}; rclpy {_version('rclpy')}, {os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')}")
    print(f"{args.duration:g} s per run after {WARMUP_S:g} s of warm-up; variants {', '.join(variants)}; "
          f"rates {', '.join(f'{r:g}' for r in args.rate)} Hz", flush=True)
    rclpy.init()
    try:
        results = []
        for v in variants:
            for rate in args.rate:
                results.append((v, rate, run_variant(v, rate, args.duration)))
                print(f"  done: {VARIANTS[v]} at {rate:g} Hz", flush=True)
        print_tables(results)
        if not args.no_micro:
            micro()
    finally:
        rclpy.try_shutdown()
    return 0


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
