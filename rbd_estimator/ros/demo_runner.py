"""The ROS side of :mod:`rbd_estimator.demo` (and of ``benchmarks/bench_node.py``).

Starts the estimator node in a subprocess (``python -m rbd_estimator.node``) under a private
namespace, drives its lifecycle through ``change_state`` from a client node, publishes recorded
sensor readings at a fixed rate from this process and records the node's outputs with their
receipt times. Inputs are published and outputs taken as serialized bytes (each input message is
serialized once by rclpy as a template; per step only its stamp and values are written into it):
a client that builds and deserializes message objects spends ~20 µs of Python per message, which
on 2 cores delays the node it measures.
"""
from __future__ import annotations

import gc
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile, QoSReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message
from sensor_msgs.msg import Imu, JointState

from .fast_spin import WaitSetSpinner

_STAMP = struct.Struct("<iI")
#: the client's inputs and output subscriptions: reliable, deep enough for a burst
CLIENT_QOS = QoSProfile(depth=100, reliability=QoSReliabilityPolicy.RELIABLE)      # builtin_interfaces/Time right after the 4-byte CDR header


class NodeProcess:
    """``python -m rbd_estimator.node`` with a parameter file, in its own namespace."""

    def __init__(self, xml: str, params_file: str, namespace: str, overrides: dict | None = None,
                 log_path: str | None = None, node_name: str = "rbd_estimator", ros_args=(), cpus=None):
        """``node_name``: the node's name (a ``__node`` remap when not the default); ``ros_args``:
        more ``--ros-args`` arguments (remaps); ``cpus``: the CPUs the node process (every thread)
        may run on (``taskset``), default: as this process."""
        with open(params_file, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        params = dict(doc["rbd_estimator"]["ros__parameters"])
        params["robot_description"] = xml
        # topics relative to the namespace, so several demos never meet
        params["joint_states_topic"] = "joint_states"
        if "imu" in params:
            params["imu"]["topic"] = "imu"
        for name in params.get("ft_sensors", []):
            params.setdefault("ft", {}).setdefault(name, {})["topic"] = f"ft/{name}"
        params.update(overrides or {})
        self.params = params
        fd, self.params_path = tempfile.mkstemp(prefix="rbd_estimator_", suffix=".yaml")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            # the section key is the node's fully qualified name (a bare name matches only in '/')
            yaml.safe_dump({f"{namespace}/{node_name}": {"ros__parameters": params}}, fh)
        self.log_path = log_path or self.params_path.replace(".yaml", ".log")
        self._log = open(self.log_path, "w", encoding="utf-8")
        cmd = [sys.executable, "-m", "rbd_estimator.node", "--ros-args", "-r", f"__ns:={namespace}",
               *(["-r", f"__node:={node_name}"] if node_name != "rbd_estimator" else []), *ros_args,
               "--params-file", self.params_path]
        env = dict(os.environ)
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = here + os.pathsep + env.get("PYTHONPATH", "")
        pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))    # before exec: all threads inherit
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, preexec_fn=pin)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(2)              # SIGINT: the node shuts down cleanly
            try:
                self.proc.wait(10.0)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5.0)
        self._log.close()
        os.unlink(self.params_path)

    def log_tail(self, n: int = 20) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as fh:
            return "".join(fh.readlines()[-n:])


class InputPublishers:
    """The node's inputs published from ``node`` (relative topics: its namespace): joint states,
    IMU, one wrench per force-torque sensor, contact commands (what :func:`publish_loop` uses)."""

    def __init__(self, node: Node, ft_names):
        qos = CLIENT_QOS
        self.js = node.create_publisher(JointState, "joint_states", qos)
        self.imu = node.create_publisher(Imu, "imu", qos)
        self.ft = [node.create_publisher(WrenchStamped, f"ft/{n}", qos) for n in ft_names]
        self.contact_command = node.create_publisher(JointState, "contact_command", qos)

    def wait_matched(self, timeout=10.0) -> bool:
        """Whether the node's subscriptions matched the joint-state, IMU and wrench publishers in time."""
        end = time.monotonic() + timeout
        pubs = [self.js, self.imu, *self.ft]
        while time.monotonic() < end:
            if all(p.get_subscription_count() > 0 for p in pubs):
                return True
            time.sleep(0.02)
        return False


class Client(InputPublishers):
    """A client node: lifecycle service calls, sensor publishers and output recorders."""

    def __init__(self, namespace: str, joint_names, ft_names, contact_names, node_name="rbd_estimator"):
        self.node = Node("rbd_demo_client", namespace=namespace)
        self.fqn = f"{namespace}/{node_name}"
        super().__init__(self.node, ft_names)
        qos = CLIENT_QOS
        self.contact_names = tuple(contact_names)
        self.joint_names = list(joint_names)
        self._tau_raw, self._wrench_raw, self.arrival = {}, {c: {} for c in contact_names}, {}
        #: stamp → when the middleware received the joint torques (its ``received_timestamp``, wall clock
        #: ns): unlike :attr:`arrival` (this process's callback), not delayed by this process's other threads
        self.received = {}
        # the estimates arrive at the tick rate: a second node spun by the lean wait-set loop (an
        # rclpy executor costs ~160 µs per message, enough to delay what the benchmark measures)
        self.outputs = Node("rbd_demo_outputs", namespace=namespace)
        self.outputs.create_subscription(JointState, f"{self.fqn}/joint_torques", self._on_tau, qos, raw=True)
        for c in contact_names:
            self.outputs.create_subscription(WrenchStamped, f"{self.fqn}/contact_wrenches/{c}",
                                             lambda m, c=c: self._on_wrench(c, m), qos, raw=True)
        self._spinner = WaitSetSpinner(self.outputs)
        self._outputs_thread = threading.Thread(target=self._spinner.spin, daemon=True)
        self._outputs_thread.start()
        self.diagnostics = {}
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, 10)
        self.executor = SingleThreadedExecutor()     # service calls and diagnostics
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _on_tau(self, raw: bytes, info):
        t = time.time_ns()
        sec, nsec = _STAMP.unpack_from(raw, 4)
        s = sec * 1_000_000_000 + nsec
        self.arrival[s] = t
        self.received[s] = info.get("received_timestamp") or t
        self._tau_raw[s] = raw

    @property
    def torques(self) -> dict:
        """Stamp (ns) → joint torques received (decoded now)."""
        return {s: np.array(deserialize_message(raw, JointState).effort) for s, raw in list(self._tau_raw.items())}

    @property
    def wrenches(self) -> dict:
        """Contact → stamp (ns) → wrench ``[fx, fy, fz, tx, ty, tz]`` received (decoded now)."""
        out = {}
        for c, by_stamp in self._wrench_raw.items():
            out[c] = {}
            for s, raw in list(by_stamp.items()):
                w = deserialize_message(raw, WrenchStamped).wrench
                out[c][s] = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z])
        return out

    def _on_diag(self, msg):
        for st in msg.status:
            if st.name.endswith(self.fqn):
                self.diagnostics = dict({kv.key: kv.value for kv in st.values}, _message=st.message)

    def _on_wrench(self, c, raw: bytes):
        sec, nsec = _STAMP.unpack_from(raw, 4)
        self._wrench_raw[c][sec * 1_000_000_000 + nsec] = raw

    def call(self, srv, name, req, timeout=120.0):
        cli = self.node.create_client(srv, name)
        try:
            if not cli.wait_for_service(timeout_sec=30.0):
                raise RuntimeError(f"service {name} did not appear")
            fut = cli.call_async(req)
            end = time.monotonic() + timeout
            while not fut.done():
                if time.monotonic() > end:
                    raise RuntimeError(f"no answer from {name} within {timeout} s")
                time.sleep(0.01)
            return fut.result()
        finally:
            self.node.destroy_client(cli)

    def transition(self, label: str) -> bool:
        req = ChangeState.Request()
        req.transition.label = label
        return self.call(ChangeState, f"{self.fqn}/change_state", req).success

    def state(self) -> str:
        return self.call(GetState, f"{self.fqn}/get_state", GetState.Request()).current_state.label

    def close(self):
        self._spinner.stop()
        self._outputs_thread.join(2.0)
        self.executor.shutdown()
        self.outputs.destroy_node()
        self.node.destroy_node()


class _Frame:
    """A message serialized once by rclpy, whose header stamp and blocks of float64 fields are then
    written in place per step (the block offsets are found by serializing sentinel values)."""

    def __init__(self, msg, blocks):
        """``blocks``: ``[(setter(msg, values), n)]`` for each block of ``n`` contiguous doubles."""
        k = 0
        sentinels = []
        for setter, n in blocks:
            vals = [(k + i + 1) * 1.0e-300 for i in range(n)]
            setter(msg, vals)
            sentinels.append(struct.pack("<d", vals[0]))
            k += n
        self.buf = bytearray(serialize_message(msg))
        self.offsets = [self.buf.index(p) for p in sentinels]
        self.sizes = [n for _, n in blocks]

    def bytes(self, stamp_ns: int, *values) -> bytes:
        b = self.buf
        _STAMP.pack_into(b, 4, stamp_ns // 1_000_000_000, stamp_ns % 1_000_000_000)
        for o, n, v in zip(self.offsets, self.sizes, values):
            b[o:o + 8 * n] = np.ascontiguousarray(v, dtype="<f8").tobytes()
        return bytes(b)


def _fields(*names):
    def setter(msg, vals):
        obj = msg
        for name in names[:-1]:
            obj = getattr(obj, name)
        setattr(obj, names[-1], vals)
    return setter


def _vector(*path):
    def setter(msg, vals):
        obj = msg
        for name in path:
            obj = getattr(obj, name)
        for axis, v in zip("xyzw", vals):
            setattr(obj, axis, v)
    return setter


def _wrench(msg, vals):
    _vector("wrench", "force")(msg, vals[:3])
    _vector("wrench", "torque")(msg, vals[3:])


def publish_loop(client: Client, rec, rate: float, wire_order=None, progress=None):
    """Publish every step of ``rec`` at ``rate`` (IMU and force-torque first, then the joint state,
    which ticks the node), serialized. Returns ``(stamps_ns, send_times_ns, late_steps)``."""
    steps = len(rec.q)
    period = 1.0 / rate
    n = len(rec.joint_names)
    order = np.arange(n) if wire_order is None else np.asarray(list(wire_order))
    js = JointState()
    js.name = [rec.joint_names[i] for i in order]
    js_frame = _Frame(js, [(_fields("position"), n), (_fields("velocity"), n)])
    imu_frame = _Frame(Imu(), [(_vector("orientation"), 4), (_vector("angular_velocity"), 3),
                               (_vector("linear_acceleration"), 3)])
    ft_frames = []
    for name in rec.ft_names:
        m = WrenchStamped()
        m.header.frame_id = name
        ft_frames.append(_Frame(m, [(_wrench, 6)]))
    cmd_frame = None
    if getattr(rec, "active", None) is not None:         # the walking controller's contact state
        cmd = JointState()
        cmd.name = list(rec.contact_names)
        cmd_frame = _Frame(cmd, [(_fields("position"), len(rec.contact_names))])
    stamps = np.zeros(steps, dtype=np.int64)
    sent = np.zeros(steps, dtype=np.int64)
    gc.collect()
    gc.freeze()                  # no full garbage collection (milliseconds holding the GIL) while publishing
    try:
        return _publish_steps(client, rec, period, order, js_frame, imu_frame, ft_frames, stamps, sent, progress,
                              cmd_frame)
    finally:
        gc.unfreeze()


def _publish_steps(client, rec, period, order, js_frame, imu_frame, ft_frames, stamps, sent, progress,
                   cmd_frame=None):
    """The publishing loop; with ``cmd_frame`` the contact command goes out when it changes and
    every 100 steps (well within the node's ``contact_command_timeout``), before the step's sensors."""
    late = 0
    t0 = time.perf_counter()
    stamp0 = time.time_ns()
    for k in range(len(stamps)):
        target = t0 + k * period
        now = time.perf_counter()         # sleep, not spin: a spinning loop holds the GIL that the
        if now < target:                  # thread receiving the estimates needs (switch interval 5 ms)
            time.sleep(target - now)
            now = time.perf_counter()
        if now - target > period:
            late += 1
        stamps[k] = stamp = stamp0 + int(k * period * 1e9)
        if cmd_frame is not None and (k % 100 == 0 or not np.array_equal(rec.active[k], rec.active[k - 1])):
            client.contact_command.publish(cmd_frame.bytes(stamp, rec.active[k].astype(float)))
        o, w, a = rec.imu[k]
        client.imu.publish(imu_frame.bytes(stamp, o, w, a))
        for pub, frame, wr in zip(client.ft, ft_frames, rec.ft[k]):
            pub.publish(frame.bytes(stamp, wr))
        raw = js_frame.bytes(stamp, rec.q[k, order], rec.dq[k, order])
        sent[k] = time.time_ns()
        client.js.publish(raw)
        if progress is not None and k % int(round(1.0 / period)) == 0:
            progress(k)
    return stamps, sent, late


def publish_process(namespace: str, recording: str, rate: float, seconds: float, out_path: str) -> int:
    """``python -m rbd_estimator.ros.demo_runner NS RECORDING RATE SECONDS OUT``: publish a recording
    (npz: ``joint_names``, ``ft_names``, ``q``, ``dq``, ``ft``, ``imu_orientation``,
    ``imu_angular_velocity``, ``imu_linear_acceleration``), cycled, at ``rate`` for ``seconds`` from a
    process of its own (so that the process that measures cannot delay it), after ``go`` on stdin;
    stamps and send times to ``OUT`` (npz)."""
    from types import SimpleNamespace
    rclpy.init()
    try:
        with np.load(recording) as r:
            idx = np.arange(int(seconds * rate)) % len(r["q"])
            base = SimpleNamespace(joint_names=[str(n) for n in r["joint_names"]],
                                   ft_names=[str(n) for n in r["ft_names"]], q=r["q"][idx], dq=r["dq"][idx],
                                   ft=r["ft"][idx], active=None,
                                   imu=list(zip(r["imu_orientation"][idx], r["imu_angular_velocity"][idx],
                                                r["imu_linear_acceleration"][idx])))
        node = Node("rbd_demo_publisher", namespace=namespace)
        pubs = InputPublishers(node, base.ft_names)
        pubs.wait_matched(30.0)                 # every input of the node matched (no sensor arrives late)
        time.sleep(0.3)
        print("ready", flush=True)
        sys.stdin.readline()
        stamps, sent, late = publish_loop(pubs, base, rate)
        np.savez(out_path, stamps=stamps, sent=sent, late=late)
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
    return 0


def run_node_and_publish(xml: str, params_file: str, rec, rate: float, overrides=None, out=print):
    """The demo's ROS part: returns ``(received, stamps, published, latency_stats)`` where
    ``received`` maps a stamp to ``(tau, wrenches)`` in the recording's joint and contact order."""
    rclpy.init()
    ns = f"/rbd_demo_{os.getpid()}"
    proc = NodeProcess(xml, params_file, ns, overrides)
    client = None
    try:
        client = Client(ns, rec.joint_names, rec.ft_names, rec.contact_names)
        out(f"starting the node ({ns}/rbd_estimator; log: {proc.log_path}) ...")
        t0 = time.monotonic()
        client.state()                                  # the node process is up and discovered
        out(f"  node up in {time.monotonic() - t0:.1f} s; configuring it ...")
        t0 = time.monotonic()
        if not client.transition("configure"):
            raise RuntimeError("configure failed:\n" + proc.log_tail())
        out(f"  configured in {time.monotonic() - t0:.1f} s; activating")
        if not client.transition("activate"):
            raise RuntimeError("activate failed:\n" + proc.log_tail())
        if not client.wait_matched():
            raise RuntimeError("the node's subscriptions did not appear:\n" + proc.log_tail())
        time.sleep(0.3)
        out(f"publishing {len(rec.q)} steps at {rate:g} Hz (joint states, IMU, {len(rec.ft_names)} "
            f"force-torque sensors) ...")
        wire = list(reversed(range(len(rec.joint_names))))     # not the model's order: mapped by name
        stamps, sent, late = publish_loop(client, rec, rate, wire_order=wire)
        time.sleep(1.2)                                # the last estimates and one /diagnostics
        d = dict(client.diagnostics)
        if d:
            out(f"  node diagnostics: {d.get('_message')}; tick latency median {float(d['tick_latency_median_ms']):.2f} "
                f"ms, p99 {float(d['tick_latency_p99_ms']):.2f} ms; pinocchio cross-check: largest torque "
                f"difference {float(d['oracle_residual']):.2e} N·m over {d['oracle_checks']} checks")
        for label in ("deactivate", "cleanup", "shutdown"):
            client.transition(label)
        out(f"  lifecycle: deactivate, cleanup, shutdown -> {client.state()}")
        received = {}
        wrenches = client.wrenches                      # decoded once
        for s, tau in client.torques.items():
            ws = [wrenches[c].get(s) for c in rec.contact_names]
            if all(w is not None for w in ws):
                received[s] = (tau, np.array(ws))
        sent_at = dict(zip(stamps.tolist(), sent.tolist()))
        lat = np.array([(client.arrival[s] - sent_at[s]) * 1e-9 for s in received if s in sent_at])
        stats = ({"median": float(np.median(lat)), "p99": float(np.percentile(lat, 99)), "max": float(lat.max())}
                 if len(lat) else {})
        if late:
            out(f"  (the publisher was late by more than one period on {late} steps)")
        return received, stamps, len(stamps), stats
    finally:
        if client is not None:
            client.close()
        proc.stop()
        rclpy.try_shutdown()


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(publish_process(a[0], a[1], float(a[2]), float(a[3]), a[4]))
