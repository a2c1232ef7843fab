"""The rbd_estimator lifecycle node with the real rclpy, real publishers and subscribers, no mocks.

Every test runs its own estimator node under a unique namespace, in a private rclpy context on a
ROS domain derived from the process id, spun by a multi-threaded executor in a background thread
(as the node's ``main`` does). A client node drives the lifecycle through the node's services and
publishes sensor data computed from a known ground truth (``rbd_estimator.estimation.synthetic``):
joints moving with constant accelerations, so the node's finite-difference accelerations are
exact; a floating base turning with a constant angular acceleration; contact wrenches that make
the floating-base equations hold. Sensors are published in lockstep — each sensor sample is
accepted by the node before the joint state that triggers the tick — so every estimate can be
compared with the truth of its stamp.

Robots: the shipped humanoid (``urdf/humanoid.urdf`` + ``config/humanoid.yaml``, six force-torque
sensors; and ``config/loadcell_humanoid.yaml``, load cells and slippery feet) and, where many
configurations are needed (200 lifecycle cycles, configure failures), the small fixed-base arm
(``urdf/arm.urdf`` + ``config/fixed_arm.yaml``), whose plan takes milliseconds.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import threading
import time

import numpy as np
import pytest
from groundtruth import Trajectory

rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
from lifecycle_msgs.srv import ChangeState, GetState  # noqa: E402
from rcl_interfaces.srv import SetParametersAtomically  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402

from rbd_estimator import SensorConfig, estimator_for  # noqa: E402
from rbd_estimator.node import EstimatorNode, spin_resuming  # noqa: E402
from rbd_estimator.ros.diagnostics import values_of  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOMAIN_ID = 1 + os.getpid() % 100          # one ROS domain per test session: no cross-talk
HUMANOID = os.path.join(ROOT, "urdf", "humanoid.urdf")
ARM = os.path.join(ROOT, "urdf", "arm.urdf")
HUMANOID_YAML = os.path.join(ROOT, "config", "humanoid.yaml")
LOADCELL_YAML = os.path.join(ROOT, "config", "loadcell_humanoid.yaml")
ARM_YAML = os.path.join(ROOT, "config", "fixed_arm.yaml")
TOL = 1e-6
_ns_counter = itertools.count()


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def unique_ns(tag):
    return f"/t{os.getpid()}_{next(_ns_counter)}_{tag}"


#: Sensor timeout (s) of the end-to-end tests that are not about timeouts: a lockstep frame on a loaded
#: 2-core CI machine can wait seconds for the test process (its publishers, numba loading kernels,
#: the garbage collector), which is scheduling, not what these tests measure.
STALL_TOLERANT = 5.0
#: Sensor timeout (s) of the dropout tests: long enough that a stalled lockstep frame keeps the other
#: sensors fresh, short enough to wait out.
DROPOUT_TIMEOUT = 3.0


def params_from_yaml(path, xml, timeout=STALL_TOLERANT, **overrides):
    """Flat parameters of a shipped YAML with the topics made relative (they follow the test's
    namespace), fast diagnostics, sensor timeouts of ``timeout`` (the test process also runs the
    publishers and the planner: a short timeout would measure the test's scheduling; the dropout
    tests pass their own) and the overrides."""
    cfg = SensorConfig.from_yaml(path)
    flat = cfg.to_parameters()
    flat.update({k: v for k, v in cfg.node.items()})
    for k in list(flat):
        if k.endswith(".topic"):
            flat[k] = ""                                    # default relative topics
        if k.endswith(".timeout"):
            flat[k] = timeout
    flat.update(robot_description=xml, joint_states_topic="joint_states", diagnostics_period=0.2,
                joint_torque_timeout=timeout,
                robot_description_topic="robot_description")
    if cfg.imu is not None:
        flat["imu.topic"] = "imu"
    flat.update(overrides)
    return flat


def to_parameters(flat):
    out = []
    for k, v in flat.items():
        if isinstance(v, (list, tuple)) and len(v) == 0:
            continue                                         # ROS cannot type an empty array
        if isinstance(v, (list, tuple)) and all(isinstance(x, (int, float)) for x in v):
            v = [float(x) for x in v]
        out.append(Parameter(k, value=v))
    return out


def time_msg(ns):
    from builtin_interfaces.msg import Time
    return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)


def stamp_of(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def wait_until(pred, timeout=10.0, period=0.002):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(period)
    return bool(pred())


def wait_taken(node, before: dict, expect, k) -> None:
    """Wait (10 s at most, returning as soon as it holds) until the node has taken one more sample
    of every sensor in ``expect`` than the ``before`` counts of ``node.input_counts()``."""
    assert wait_until(lambda: all(node.input_counts().get(n, 0) > before.get(n, 0) for n in expect), 10.0), (
        f"the node did not take the sensor samples of frame {k}: {before} -> {node.input_counts()}",
        {n: dict(s.rejected) for n, s in node.session.inputs.slots.items()})


def rss_kb():
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


class Ros:
    """A private context, a multi-threaded executor spinning in a thread, and a client node."""

    def __init__(self):
        self.context = Context()
        rclpy.init(context=self.context, domain_id=DOMAIN_ID)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.client = Node("test_client", namespace=f"/t{os.getpid()}", context=self.context)
        self.executor.add_node(self.client)
        self._clients = {}
        # resumed after rclpy's InvalidHandle race, as the node's main() does (see node.spin_resuming)
        self._thread = threading.Thread(target=spin_resuming, args=(self.executor,), daemon=True)
        self._thread.start()

    def close(self):
        self.executor.shutdown()
        self.client.destroy_node()
        rclpy.shutdown(context=self.context)
        self._thread.join(5.0)

    # ------------------------------------------------------------------ nodes
    def estimator(self, params: dict, ns: str, name="rbd_estimator") -> EstimatorNode:
        node = EstimatorNode(name, namespace=ns, context=self.context, parameter_overrides=to_parameters(params))
        self.executor.add_node(node)
        return node

    def destroy(self, node):
        self.executor.remove_node(node)
        node.destroy_node()

    # ------------------------------------------------------------------ services
    def _client(self, srv_type, name):
        key = (srv_type, name)
        if key not in self._clients:
            cli = self.client.create_client(srv_type, name)
            assert cli.wait_for_service(timeout_sec=10.0), name
            self._clients[key] = cli
        return self._clients[key]

    def call(self, srv_type, name, request, timeout=60.0):
        fut = self._client(srv_type, name).call_async(request)
        assert wait_until(fut.done, timeout), f"no answer from {name}"
        return fut.result()

    def transition(self, node, label) -> bool:
        req = ChangeState.Request()
        req.transition.label = label
        return self.call(ChangeState, node.get_fully_qualified_name() + "/change_state", req).success

    def state(self, node) -> str:
        return self.call(GetState, node.get_fully_qualified_name() + "/get_state", GetState.Request()).current_state.label

    def set_parameters_async(self, node, flat: dict):
        req = SetParametersAtomically.Request()
        req.parameters = [p.to_parameter_msg() for p in to_parameters(flat)]
        return self._client(SetParametersAtomically,
                            node.get_fully_qualified_name() + "/set_parameters_atomically").call_async(req)

    def set_parameters(self, node, flat: dict):
        fut = self.set_parameters_async(node, flat)
        assert wait_until(fut.done, 60.0)
        return fut.result().result


@pytest.fixture(scope="module")
def ros():
    # as the node's executable does: single-threaded BLAS, so planning does not spin threads
    # against the tick thread and the publishers of this process (restored afterwards)
    from rbd_estimator.ros.blas import limit_blas_threads, restore_blas_threads
    previous = limit_blas_threads(1)
    r = Ros()
    yield r
    r.close()
    restore_blas_threads(previous)


class Sim:
    """Publishes a trajectory's sensor readings into a namespace and records the node's outputs."""

    def __init__(self, ros: Ros, node: EstimatorNode, traj: Trajectory, ns: str):
        self.ros, self.node, self.traj, self.ns = ros, node, traj, ns
        c, cfg, est = ros.client, traj.cfg, traj.est
        qos = QoSProfile(depth=50, reliability=QoSReliabilityPolicy.RELIABLE)
        self.js = c.create_publisher(JointState, f"{ns}/joint_states", qos)
        self.imu = c.create_publisher(Imu, f"{ns}/imu", qos) if cfg.imu is not None else None
        self.ft = {n: c.create_publisher(WrenchStamped, f"{ns}/ft/{n}", qos) for n in est.ft_names}
        self.cells = {lc.name: c.create_publisher(Float64MultiArray, f"{ns}/load_cells/{lc.name}", qos)
                      for lc in cfg.load_cells}
        self.torques, self.wrenches, self.diagnostics = {}, {}, []
        self.all_values = []
        self._subs = [c.create_subscription(JointState, f"{ns}/rbd_estimator/joint_torques", self._on_tau, qos),
                      c.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, qos)]
        for name in est.contact_names:
            self.watch_contact(name)
        self.wait_contacts = list(est.contact_names)
        # the joint order on the wire is not the model's: reversed
        self.wire_order = list(reversed(range(len(est.joint_names))))
        self.wire_names = [est.joint_names[i] for i in self.wire_order]
        self._pubs = [self.js, self.imu, *self.ft.values(), *self.cells.values()]
        wait_until(lambda: all(p is None or p.get_subscription_count() > 0 for p in self._pubs), 10.0)

    def watch_contact(self, name):
        self.wrenches.setdefault(name, {})
        qos = QoSProfile(depth=50, reliability=QoSReliabilityPolicy.RELIABLE)
        self._subs.append(self.ros.client.create_subscription(
            WrenchStamped, f"{self.ns}/rbd_estimator/contact_wrenches/{name}",
            lambda m, n=name: self._on_wrench(n, m), qos))

    def close(self):
        for s in self._subs:
            self.ros.client.destroy_subscription(s)
        for p in self._pubs:
            if p is not None:
                self.ros.client.destroy_publisher(p)

    # ------------------------------------------------------------------ outputs
    def _on_tau(self, msg):
        self.count = getattr(self, "count", 0) + 1
        self.torques[stamp_of(msg)] = (list(msg.name), np.array(msg.effort))
        self.all_values.append(np.array(msg.effort))

    def _on_wrench(self, name, msg):
        f, t = msg.wrench.force, msg.wrench.torque
        w = np.array([f.x, f.y, f.z, t.x, t.y, t.z])
        self.wrenches[name][stamp_of(msg)] = (msg.header.frame_id, w)
        self.all_values.append(w)

    def _on_diag(self, msg):
        for st in msg.status:
            if st.name.endswith(self.node.get_fully_qualified_name()):
                self.diagnostics.append((st.level, st.message, values_of(st)))

    def latest_diagnostics(self, pred=lambda lvl, msg, v: True, timeout=10.0):
        start = len(self.diagnostics)
        found = []

        def ok():
            for d in self.diagnostics[start:]:
                if pred(*d):
                    found.append(d)
                    return True
            return False
        assert wait_until(ok, timeout), f"no matching diagnostics; last: {self.diagnostics[-1:]}"
        return found[0]

    # ------------------------------------------------------------------ inputs
    def publish_sensors(self, k, skip=(), wait=True):
        f = self.traj.frame(k)
        r, stamp = f["readings"], time_msg(f["stamp"])
        before = self.node.input_counts()
        expect = []
        if self.imu is not None and "imu" not in skip:
            m = Imu()
            m.header.stamp = stamp
            m.header.frame_id = self.traj.cfg.imu.frame
            o, w, a = r.imu.orientation, r.imu.angular_velocity, r.imu.linear_acceleration
            m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = (float(x) for x in o)
            m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = (float(x) for x in w)
            m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = (float(x) for x in a)
            self.imu.publish(m)
            expect.append("imu")
        for i, (name, pub) in enumerate(self.ft.items()):
            if name in skip:
                continue
            self.ft_msg(name, r.ft[i], f["stamp"])
            expect.append(name)
        for i, (name, pub) in enumerate(self.cells.items()):
            if name in skip:
                continue
            pub.publish(Float64MultiArray(data=[float(x) for x in r.load_cells[i]]))
            expect.append(name)
        if wait:
            wait_taken(self.node, before, expect, k)

    def ft_msg(self, name, w, stamp_ns):
        m = WrenchStamped()
        m.header.stamp = time_msg(stamp_ns)
        m.header.frame_id = name
        m.wrench.force.x, m.wrench.force.y, m.wrench.force.z = (float(x) for x in w[:3])
        m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z = (float(x) for x in w[3:])
        self.ft[name].publish(m)

    def joint_state(self, k, stamp_ns=None, q=None, dq=None, names=None):
        f = self.traj.frame(k)
        m = JointState()
        m.header.stamp = time_msg(f["stamp"] if stamp_ns is None else stamp_ns)
        m.name = self.wire_names if names is None else names
        q = f["q"] if q is None else q
        dq = f["dq"] if dq is None else dq
        m.position = [float(q[i]) for i in self.wire_order] if len(q) == len(self.wire_order) else list(q)
        m.velocity = [float(dq[i]) for i in self.wire_order] if len(dq) == len(self.wire_order) else list(dq)
        m.effort = [float(x) for x in np.array(f["effort"])[self.wire_order]]
        return m

    def step(self, k, skip=(), expect_output=True, timeout=10.0):
        """One lockstep frame: sensors (accepted), then the joint state; waits for the estimate."""
        self.publish_sensors(k, skip=skip)
        stamp = self.traj.stamp(k)
        self.js.publish(self.joint_state(k))
        if expect_output:
            assert wait_until(lambda: stamp in self.torques and all(stamp in self.wrenches[c] for c in self.wait_contacts),
                              timeout), f"no estimate for frame {k}"
        return stamp

    # ------------------------------------------------------------------ checks
    def error(self, k) -> float:
        """Largest difference between the estimate of frame ``k`` and the truth."""
        f = self.traj.frame(k)
        names, tau = self.torques[f["stamp"]]
        est = self.traj.est
        assert names == list(est.joint_names)
        err = float(np.max(np.abs(tau - f["tau"])))
        for c, w_true in zip(est.contact_names, f["wrenches"]):
            frame, w = self.wrenches[c][f["stamp"]]
            assert frame == est.config.contact(c).frame
            err = max(err, float(np.max(np.abs(w - w_true))))
        return err

    def all_finite(self) -> bool:
        return all(np.isfinite(v).all() for v in list(self.all_values))


@contextlib.contextmanager
def running(ros, params: dict, ns: str, traj, plans_timeout=None, sim_class=Sim):
    """An estimator node in ``ns`` with ``params``, configured and activated (and its single-loss
    plans awaited up to ``plans_timeout`` s when given), with a ``sim_class`` publishing ``traj`` to
    it; yields the simulation (``.node`` is the node) and destroys both on the way out."""
    node = ros.estimator(params, ns)
    sim = None
    try:
        assert ros.transition(node, "configure"), node.last_error
        assert ros.transition(node, "activate")
        if plans_timeout is not None:
            assert node.wait_for_plans(plans_timeout)
        sim = sim_class(ros, node, traj, ns)
        yield sim
    finally:
        if sim:
            sim.close()
        ros.destroy(node)


@pytest.fixture(scope="module")
def humanoid():
    xml = read(HUMANOID)
    return xml, estimator_for(xml, SensorConfig.from_yaml(HUMANOID_YAML))


@pytest.fixture(scope="module")
def arm():
    xml = read(ARM)
    return xml, estimator_for(xml, SensorConfig.from_yaml(ARM_YAML))


# ============================================================================ lifecycle
def test_lifecycle_with_description_parameter(ros, arm):
    xml, _ = arm
    ns = unique_ns("life")
    node = ros.estimator(params_from_yaml(ARM_YAML, xml), ns)
    try:
        assert ros.state(node) == "unconfigured"
        assert ros.transition(node, "configure")
        assert ros.state(node) == "inactive"
        topics = {p.topic_name for p in node.publishers}
        assert f"{ns}/rbd_estimator/joint_torques" in topics
        assert f"{ns}/rbd_estimator/contact_wrenches/tool" in topics
        assert not node.input_topics                      # inputs exist only while active
        assert ros.transition(node, "activate")
        assert ros.state(node) == "active"
        assert {f"{ns}/joint_states", f"{ns}/ft/wrist_ft_sensor"} <= node.input_topics
        assert ros.transition(node, "deactivate")
        assert ros.state(node) == "inactive"
        assert not node.input_topics
        assert ros.transition(node, "cleanup")
        assert ros.state(node) == "unconfigured"
        assert node.estimator is None                               # the plan is released
        topics = {p.topic_name for p in node.publishers}
        assert f"{ns}/rbd_estimator/joint_torques" not in topics
        assert ros.transition(node, "configure") and ros.transition(node, "activate")
        assert ros.transition(node, "shutdown")                     # from active
        assert ros.state(node) == "finalized"
        assert not node.input_topics and node.estimator is None
    finally:
        ros.destroy(node)


def test_description_from_transient_local_topic(ros, arm):
    xml, _ = arm
    ns = unique_ns("topic")
    qos = QoSProfile(depth=1, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=QoSReliabilityPolicy.RELIABLE)
    publisher_node = Node("fake_robot_state_publisher", namespace=ns, context=ros.context)
    pub = publisher_node.create_publisher(String, f"{ns}/robot_description", qos)
    pub.publish(String(data=xml))                       # published before the estimator exists: latched
    node = ros.estimator(params_from_yaml(ARM_YAML, "", robot_description_timeout=10.0), ns)
    try:
        assert ros.transition(node, "configure"), node.last_error
        assert node.estimator.model.name == "rbd_arm"
        assert ros.transition(node, "cleanup")
    finally:
        ros.destroy(node)
        publisher_node.destroy_node()
    # nothing on the topic: configure fails within the timeout, with what to do
    node = ros.estimator(params_from_yaml(ARM_YAML, "", robot_description_timeout=0.3), unique_ns("notopic"))
    try:
        t0 = time.monotonic()
        assert not ros.transition(node, "configure")
        assert time.monotonic() - t0 < 5.0
        assert "robot_description" in node.last_error and "robot_state_publisher" in node.last_error
        assert ros.state(node) == "unconfigured" and node.estimator is None
    finally:
        ros.destroy(node)


def test_configure_failures_report_and_recover(ros, arm, capfd):
    xml, _ = arm
    params = params_from_yaml(ARM_YAML, "<robot name='broken'><link name='a'>")
    node = ros.estimator(params, unique_ns("fail"))
    try:
        # 1. bad URDF
        assert not ros.transition(node, "configure")
        assert ros.state(node) == "unconfigured" and node.estimator is None
        assert "robot_description" in node.last_error and "XML" in node.last_error
        assert ros.set_parameters(node, {"robot_description": xml}).successful
        assert ros.transition(node, "configure"), node.last_error
        assert ros.transition(node, "cleanup")
        # 2. unknown sensor frame
        assert ros.set_parameters(node, {"contact.tool.frame": "no_such_link"}).successful
        assert not ros.transition(node, "configure")
        assert "no_such_link" in node.last_error
        # 3. ill-posed sensor set: the tool wrench with no force-torque sensor (the wrist sensor's
        # parameters go with it: parameters of a sensor that 'ft_sensors' does not list are refused)
        unset = {k: None for k in params if k.startswith("ft.wrist_ft_sensor.")}
        assert ros.set_parameters(node, {"contact.tool.frame": "tool0", "ft_sensors": ["none"], **unset}).successful
        assert not ros.transition(node, "configure")
        ok = ros.set_parameters(node, {"ft_sensors": ["wrist_ft_sensor"], "contacts": ["tool", "elbow_contact"],
                                       "contact.elbow_contact.frame": "forearm"})
        assert ok.successful
        assert not ros.transition(node, "configure")
        assert "ill-posed" in node.last_error and "elbow_contact" in node.last_error
        assert node.estimator is None and not {p.topic_name for p in node.publishers
                                               if "joint_torques" in p.topic_name}
        # ... and the node configures again once the parameters are fixed
        assert ros.set_parameters(node, {"contacts": ["tool"], "contact.elbow_contact.frame": None}).successful
        assert ros.transition(node, "configure"), node.last_error
        assert ros.transition(node, "activate")
        assert ros.state(node) == "active"
    finally:
        ros.destroy(node)
    err = capfd.readouterr().err
    assert "configure failed:" in err and "ill-posed" in err      # the one log line per failure


def test_a_misspelled_parameter_is_refused_naming_it_and_the_closest_key(ros, arm):
    """Issue 18: a key nobody reads is an error at configure and in a parameter change, naming the
    parameter and the closest valid one (the contact would otherwise silently stay 'always')."""
    xml, _ = arm
    node = ros.estimator(params_from_yaml(ARM_YAML, xml, **{"contact.tool.mdoe": "commanded"}), unique_ns("typo"))
    try:
        assert not ros.transition(node, "configure")
        assert ros.state(node) == "unconfigured" and node.estimator is None
        assert "unknown parameter 'contact.tool.mdoe' (did you mean 'contact.tool.mode'?)" in node.last_error
        # fixed in one atomic change (unset the typo), the node configures
        assert ros.set_parameters(node, {"contact.tool.mdoe": None, "contact.tool.mode": "always"}).successful
        assert ros.transition(node, "configure"), node.last_error
        # a misspelled node parameter, a sub-dictionary of a contact not listed: refused, naming them
        result = ros.set_parameters(node, {"acceleration_cutof_hz": 50.0})
        assert not result.successful
        assert "unknown parameter 'acceleration_cutof_hz' (did you mean 'acceleration_cutoff_hz'?)" in result.reason
        result = ros.set_parameters(node, {"contact.tol.frame": "tool0"})
        assert not result.successful and "'contact.tol.frame'" in result.reason and "'tool'" in result.reason
        assert not node.has_parameter("acceleration_cutof_hz") and not node.has_parameter("contact.tol.frame")
        assert ros.transition(node, "activate") and ros.state(node) == "active"
    finally:
        ros.destroy(node)


# ============================================================================ end to end
def test_end_to_end_humanoid_matches_truth(ros, humanoid):
    xml, est = humanoid
    ns = unique_ns("e2e")
    params = params_from_yaml(HUMANOID_YAML, xml, oracle_every_n=5, prepare_fallbacks=False)
    with running(ros, params, ns, Trajectory(est, seed=1)) as sim:
        n = 40
        for k in range(n):
            sim.step(k, expect_output=k > 0)          # the first joint state only starts the filter
        assert 0 not in [k for k in range(n) if sim.traj.stamp(k) in sim.torques]
        errors = [sim.error(k) for k in range(1, n)]
        assert max(errors) <= TOL, f"largest error {max(errors):.3g}"
        assert sim.all_finite()
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: int(v["oracle_checks"]) >= 5)
        assert float(v["oracle_residual"]) < 1e-6 and float(v["oracle_base_residual"]) < 1e-6
        assert msg == "OK" and lvl == b"\x00" and v["active_plan"] == "full"
        assert float(v["tick_latency_median_ms"]) > 0 and float(v["tick_latency_p99_ms"]) >= \
            float(v["tick_latency_median_ms"])
        assert int(v["plan_nnz"]) > 0 and int(v["plan_fill_in"]) >= 0
        assert int(v["joint_states/received"]) == n and v["l_foot_ft_sensor/fresh"] in ("true", "false")


def test_cross_check_with_measured_accelerations_uses_the_estimated_ones(ros, humanoid):
    """``joint_acceleration_stddev_from_filter``: the estimate corrects the filter's q̈, and the
    pinocchio cross-check compares at the estimate's q̈ (``Estimate.joint_acceleration``): its residual
    stays at round-off although the filtered q̈ differs from the estimate's."""
    xml, est = humanoid
    ns = unique_ns("e2e_kf")
    params = params_from_yaml(HUMANOID_YAML, xml, oracle_every_n=5, prepare_fallbacks=False,
                              acceleration_filter="kalman", joint_acceleration_stddev_from_filter=True)
    with running(ros, params, ns, Trajectory(est, seed=1)) as sim:
        for k in range(40):
            sim.step(k, expect_output=False)
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: int(v["oracle_checks"]) >= 5)
        assert float(v["oracle_residual"]) < 1e-6 and float(v["oracle_base_residual"]) < 1e-6, v
        assert sim.all_finite()


def test_end_to_end_load_cells_and_slippery_feet(ros):
    xml = read(HUMANOID)
    est = estimator_for(xml, SensorConfig.from_yaml(LOADCELL_YAML))
    ns = unique_ns("cells")
    params = params_from_yaml(LOADCELL_YAML, xml, oracle_every_n=0, prepare_fallbacks=False)
    with running(ros, params, ns, Trajectory(est, seed=2)) as sim:
        node = sim.node
        for k in range(12):
            sim.step(k, expect_output=k > 1)          # joints and gyro both need two samples
        errors = [sim.error(k) for k in range(2, 12)]
        assert max(errors) <= TOL, f"largest error {max(errors):.3g}"
        # a load-cell message with the wrong number of cells is rejected, counted, and ticks go on
        sim.cells["l_foot_cells"].publish(Float64MultiArray(data=[1.0, 2.0, 3.0]))
        assert wait_until(lambda: node.input_rejections()["l_foot_cells"] == 1, 10.0)
        sim.step(12)
        assert sim.error(12) <= TOL
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: int(v.get("l_foot_cells/rejected", 0)) >= 1)
        assert int(v["l_foot_cells/rejected/wrong_length"]) == 1


# ============================================================================ reconfiguration
def test_reconfiguration_while_active(ros, humanoid):
    xml, est = humanoid
    ns = unique_ns("reconf")
    # Planning holds the GIL for seconds at a time (dense SVDs), and this process also runs the
    # publishers: generous timeouts, so a pause of the publishers is not taken for a dropout.
    params = params_from_yaml(HUMANOID_YAML, xml, timeout=10.0, oracle_every_n=0, prepare_fallbacks=False)
    with running(ros, params, ns, Trajectory(est, seed=3)) as sim:
        node = sim.node
        sim.watch_contact("l_hand")
        k = 0
        for _ in range(5):
            sim.step(k, expect_output=k > 0)
            k += 1
        # a valid change: a third contact on the left hand (observed by the wrist sensor). Planning
        # runs in the set-parameters callback while ticks go on with the old plan.
        fut = ros.set_parameters_async(node, {"contacts": ["l_foot", "r_foot", "l_hand"],
                                              "contact.l_hand.frame": "l_hand",
                                              "contact.l_hand.type": "full_wrench"})
        first = k
        while not fut.done() or k < first + 5:
            sim.step(k)
            k += 1
            assert k < first + 5000
        result = fut.result().result
        assert result.successful, result.reason
        # the new plan comes into use between two ticks: the hand wrench appears (zero in the truth)
        for _ in range(500):
            if sim.wrenches["l_hand"]:
                break
            sim.step(k)
            k += 1
        assert sim.wrenches["l_hand"], "the new plan never came into use"
        sim.wait_contacts.append("l_hand")       # each tick now also publishes the hand's wrench
        for _ in range(3):
            sim.step(k)
            k += 1
        # no skipped output: every joint state got an estimate, from the old plan or the new one
        assert all(sim.traj.stamp(j) in sim.torques for j in range(1, k))
        assert max(sim.error(j) for j in range(1, k)) <= TOL
        for frame, w in sim.wrenches["l_hand"].values():
            assert frame == "l_hand" and np.max(np.abs(w)) <= TOL
        # an ill-posed set is refused with the reason; the old plan keeps publishing. (One unknown
        # wrench on the pelvis-torso-head subtree is observed through the four limb sensors; two are not.)
        result = ros.set_parameters(node, {"contacts": ["l_foot", "r_foot", "l_hand", "chest", "head"],
                                           "contact.chest.frame": "torso", "contact.head.frame": "head"})
        assert not result.successful and "ill-posed" in result.reason, result.reason
        result = ros.set_parameters(node, {"contacts": ["l_foot", "r_foot", "nose"], "contact.nose.frame": "nose",
                                           "contact.l_hand.frame": None, "contact.l_hand.type": None})
        assert not result.successful and "nose" in result.reason
        result = ros.set_parameters(node, {"robot_description": xml + " "})
        assert not result.successful and "cleanup" in result.reason
        result = ros.set_parameters(node, {"joint_states_topic": "other_joint_states"})
        assert not result.successful and "deactivate" in result.reason
        # node-only parameters that apply at once
        assert ros.set_parameters(node, {"acceleration_cutoff_hz": 50.0}).successful
        assert node.session.inputs.filter_time_constant == pytest.approx(1 / (2 * np.pi * 50.0), rel=1e-15)
        assert node.get_parameter("contacts").value == ["l_foot", "r_foot", "l_hand"]
        for _ in range(3):
            sim.step(k)
            k += 1
        assert sim.error(k - 1) <= TOL and sim.traj.stamp(k - 1) in sim.wrenches["l_hand"]


# ============================================================================ bad input, dropouts
def test_bad_input_is_rejected_counted_and_ticks_go_on(ros, humanoid):
    xml, est = humanoid
    ns = unique_ns("bad")
    params = params_from_yaml(HUMANOID_YAML, xml, oracle_every_n=0, prepare_fallbacks=False)
    with running(ros, params, ns, Trajectory(est, seed=4)) as sim:
        node = sim.node
        k = 0
        for _ in range(3):
            sim.step(k, expect_output=k > 0)
            k += 1
        bad = []
        q_nan = sim.traj.frame(k)["q"].copy()
        q_nan[3] = float("nan")
        bad.append(("non_finite", sim.joint_state(k, q=q_nan)))
        dq_inf = sim.traj.frame(k)["dq"].copy()
        dq_inf[0] = float("inf")
        bad.append(("non_finite", sim.joint_state(k, dq=dq_inf)))
        short = sim.joint_state(k)
        short.velocity = list(short.velocity)[:-1]
        bad.append(("wrong_length", short))
        unknown = sim.joint_state(k)
        unknown.name = list(unknown.name[:-1]) + ["no_such_joint"]
        bad.append(("unknown_joint", unknown))
        bad.append(("stamp_not_increasing", sim.joint_state(k, stamp_ns=sim.traj.stamp(k - 2))))
        for reason, msg in bad:
            before = node.input_counts()["joint_states"]
            rejected_after_js = node.input_rejections()["joint_states"] + 1
            sim.js.publish(msg)
            assert wait_until(lambda: node.input_rejections()["joint_states"] == rejected_after_js, 10.0), reason
            assert node.input_counts()["joint_states"] == before     # rejected
            sim.step(k)                                                # the node keeps ticking
            assert sim.error(k) <= TOL
            k += 1
        # bad sensor samples: NaN IMU, infinite force, zero quaternion, stamp going back
        f = sim.traj.frame(k)
        # (inputs keep only the latest sample: wait until each bad one has been taken and rejected)
        def rejected_after(name, publish):
            before = node.input_rejections()[name]
            publish()
            assert wait_until(lambda: node.input_rejections()[name] == before + 1, 10.0), name

        imu = Imu()
        imu.header.stamp = time_msg(f["stamp"])
        imu.orientation.w = 1.0
        imu.angular_velocity.x = float("nan")
        rejected_after("imu", lambda: sim.imu.publish(imu))
        imu2 = Imu()
        imu2.header.stamp = time_msg(f["stamp"])
        imu2.orientation.w = 0.0
        rejected_after("imu", lambda: sim.imu.publish(imu2))          # quaternion (0, 0, 0, 0)
        w = f["readings"].ft[0].copy()
        w[2] = float("inf")
        rejected_after(est.ft_names[0], lambda: sim.ft_msg(est.ft_names[0], w, f["stamp"]))
        rejected_after(est.ft_names[1],                                  # older than the accepted one
                       lambda: sim.ft_msg(est.ft_names[1], f["readings"].ft[1], sim.traj.stamp(0)))
        sim.step(k)
        assert sim.error(k) <= TOL
        lvl, msg, v = sim.latest_diagnostics(
            lambda lvl, m, v: int(v.get("joint_states/rejected", 0)) >= 5 and int(v.get("imu/rejected", 0)) >= 2
            and int(v.get(f"{est.ft_names[1]}/rejected", 0)) >= 1)
        assert int(v["joint_states/rejected/non_finite"]) == 2
        assert int(v["joint_states/rejected/wrong_length"]) == 1
        assert int(v["joint_states/rejected/unknown_joint"]) == 1
        assert int(v["joint_states/rejected/stamp_not_increasing"]) == 1
        assert int(v["imu/rejected/non_finite"]) == 1 and int(v["imu/rejected/bad_orientation"]) == 1
        assert int(v[f"{est.ft_names[0]}/rejected/non_finite"]) == 1
        assert int(v[f"{est.ft_names[1]}/rejected/stamp_not_increasing"]) == 1
        assert sim.all_finite()                                        # never a NaN on the outputs
        assert int(v["nonfinite_outputs"]) == 0


def test_sensor_dropout_degrades_and_recovers(ros, humanoid):
    xml, est = humanoid
    ns = unique_ns("drop")
    params = params_from_yaml(HUMANOID_YAML, xml, timeout=DROPOUT_TIMEOUT, oracle_every_n=0)
    with running(ros, params, ns, Trajectory(est, seed=5), plans_timeout=120.0) as sim:
        node = sim.node
        k = 0
        for _ in range(3):
            sim.step(k, expect_output=k > 0)
            k += 1
        lost = "l_foot_ft_sensor"
        time.sleep(DROPOUT_TIMEOUT + 0.2)                         # its last sample is now older than the timeout
        degraded = []
        for _ in range(5):
            sim.step(k, skip=(lost,))
            degraded.append(k)
            k += 1
        assert max(sim.error(j) for j in degraded) <= TOL       # the remaining set is still well-posed
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: m.startswith("DEGRADED"))
        assert msg == f"DEGRADED: missing {lost}" and lvl == b"\x01"
        assert v["active_plan"] == f"without {lost}" and v[f"{lost}/fresh"] == "false"
        for _ in range(3):
            sim.step(k)
            k += 1
        assert sim.error(k - 1) <= TOL
        sim.latest_diagnostics(lambda lvl, m, v: m == "OK" and v["active_plan"] == "full")
        assert node.status == (b"\x00", "OK")


def test_sensor_dropout_without_well_posed_set_is_an_error(ros, arm):
    xml, est = arm
    ns = unique_ns("dropall")
    params = params_from_yaml(ARM_YAML, xml, timeout=DROPOUT_TIMEOUT, oracle_every_n=0)
    with running(ros, params, ns, Trajectory(est, seed=6), plans_timeout=60.0) as sim:
        for k in range(3):
            sim.step(k, expect_output=k > 0)
        time.sleep(DROPOUT_TIMEOUT + 0.2)
        silent = []
        for k in range(3, 6):
            sim.publish_sensors(k, skip=("wrist_ft_sensor",))
            sim.js.publish(sim.joint_state(k))
            silent.append(sim.traj.stamp(k))
        time.sleep(0.1)
        assert not any(s in sim.torques for s in silent)          # nothing published without the sensor
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: lvl == b"\x02")
        assert msg.startswith("ERROR: missing wrist_ft_sensor") and "ill-posed" in v["fallback/wrist_ft_sensor"]
        for k in range(6, 9):
            sim.step(k)                                            # the sensor returns: estimates resume
        assert sim.error(8) <= TOL
        sim.latest_diagnostics(lambda lvl, m, v: m == "OK")


def test_tick_thread_log_lines_wake_the_executor_without_a_periodic_timer(ros, arm, capfd):
    """Issue 19 (the 1 kHz p99): the tick thread's log lines are written by the executor when the tick
    thread queues one (a guard condition), not polled by a fast timer (ticks that overlapped a 20 Hz
    one's executor Python made most of the p99): while active, the node's only timer is the diagnostics', and a
    sensor loss detected on the tick thread still reaches the log."""
    xml, est = arm
    ns = unique_ns("logwake")
    params = params_from_yaml(ARM_YAML, xml, timeout=DROPOUT_TIMEOUT, oracle_every_n=0)
    with running(ros, params, ns, Trajectory(est, seed=6), plans_timeout=60.0) as sim:
        node = sim.node
        periods = sorted(t.timer_period_ns for t in node.timers)
        assert periods == [int(node.session.settings.diagnostics_period * 1e9)], periods
        for k in range(3):
            sim.step(k, expect_output=k > 0)
        time.sleep(DROPOUT_TIMEOUT + 0.2)
        capfd.readouterr()
        sim.publish_sensors(3, skip=("wrist_ft_sensor",))
        sim.js.publish(sim.joint_state(3))                  # this tick finds the sensor missing and logs it
        err = []
        assert wait_until(lambda: err.append(capfd.readouterr().err) or "missing wrist_ft_sensor" in "".join(err),
                          10.0), "".join(err)


# ============================================================================ memory
def test_200_lifecycle_cycles_do_not_leak(ros, arm):
    """configure/activate/deactivate/cleanup 200 times on the fixed arm (its plan takes ms)."""
    xml, _ = arm
    node = ros.estimator(params_from_yaml(ARM_YAML, xml), unique_ns("cycles"))
    try:
        def cycle():
            for label in ("configure", "activate", "deactivate", "cleanup"):
                assert ros.transition(node, label), (label, node.last_error)

        for _ in range(10):
            cycle()
        node.wait_for_plans(30.0)
        before = rss_kb()
        for _ in range(190):
            cycle()
        node.wait_for_plans(30.0)
        after = rss_kb()
        assert ros.state(node) == "unconfigured"
        print(f"RSS after 10 cycles {before} kB, after 200 cycles {after} kB ({100.0 * (after / before - 1):+.1f} %)")
        assert after < 1.10 * before, f"RSS grew from {before} kB to {after} kB"
    finally:
        ros.destroy(node)


# ============================================================================ tick on a timer
def test_timer_tick_uses_latest_samples_until_joint_states_time_out(ros, arm):
    xml, est = arm
    ns = unique_ns("timer")
    # the joint-state timeout is stall-tolerant too: five timer ticks must fit in it even when the loaded
    # CI machine stalls the node's process (0.3 s did not: the ticks found the joint states stale)
    params = params_from_yaml(ARM_YAML, xml, tick="timer", rate_hz=100.0, joint_states_timeout=STALL_TOLERANT,
                              oracle_every_n=0)
    with running(ros, params, ns, Trajectory(est, seed=7)) as sim:
        node = sim.node
        for k in range(2):
            sim.publish_sensors(k)
            sim.js.publish(sim.joint_state(k))
            assert wait_until(lambda: node.input_counts()["joint_states"] == k + 1, 10.0)
        stamp = sim.traj.stamp(1)
        assert wait_until(lambda: getattr(sim, "count", 0) >= 5, 10.0)   # ticks without new joint states
        assert set(sim.torques) == {stamp}                               # stamped with the joint state's stamp
        assert sim.error(1) <= TOL
        time.sleep(STALL_TOLERANT + 0.5)                                 # joint states now older than the timeout
        # counted where the node publishes (delivery to this process's subscriber may lag on a loaded machine)
        n = node.session.core.outputs
        time.sleep(0.2)
        assert node.session.core.outputs == n                                   # no estimate from stale joint states
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: int(v["stale_timer_ticks"]) > 0)


# ============================================================================ the derivative filter
def test_derivative_filter_equations():
    from rbd_estimator.runtime.filters import DerivativeFilter
    f = DerivativeFilter(2, cutoff_hz=20.0, max_gap=0.1)
    a = np.array([1.5, -2.0])
    t = np.cumsum([0, 1_000_000, 1_300_000, 700_000, 1_000_000])          # irregular stamps, ns
    assert not f.update(int(t[0]), a * 0)                                  # the first sample only starts it
    for tk in t[1:]:
        assert f.update(int(tk), a * tk * 1e-9)
        assert np.allclose(f.value, a, rtol=0, atol=1e-9)                  # a constant acceleration is exact
    # a step in the finite difference: y_k = y_{k-1} + α (a_k − y_{k-1}), α = Δt / (Δt + 1/(2π f_c))
    g = DerivativeFilter(1, cutoff_hz=20.0)
    g.update(0, np.zeros(1))
    g.update(1_000_000, np.zeros(1))                                       # y_1 = 0
    g.update(2_000_000, np.array([1e-3]))                                  # a_2 = 1
    alpha = 1e-3 / (1e-3 + 1 / (2 * np.pi * 20.0))
    assert g.value[0] == pytest.approx(alpha)
    assert not g.update(200_000_000, np.zeros(1))                          # a gap > max_gap restarts it
    h = DerivativeFilter(1, cutoff_hz=0.0)                                 # 0 Hz: no low-pass
    h.update(0, np.zeros(1))
    h.update(1_000_000, np.array([2e-3]))
    h.update(2_000_000, np.array([7e-3]))
    assert h.value[0] == pytest.approx(5.0)


# ============================================================================ shipped models
def test_shipped_models_load_in_both_libraries_and_are_up_to_date():
    import subprocess
    import sys

    import pinocchio as pin

    from rbd_estimator import RobotModel
    gen = os.path.join(ROOT, "scripts", "make_humanoid_urdf.py")
    assert subprocess.run([sys.executable, gen, "--check"], capture_output=True).returncode == 0, \
        "urdf/*.urdf differ from scripts/make_humanoid_urdf.py: run it"
    for path, floating, n_joints, n_ft in ((HUMANOID, True, 22, 6), (ARM, False, 6, 1)):
        xml = read(path)
        m = RobotModel.from_urdf(xml, floating_base=floating)    # validates masses and inertias
        assert len(m.joint_names) == n_joints and len(m.ft_sensors) == n_ft
        pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromXML(xml)
        assert pm.nv == m.nv
        if floating:                                             # (a fixed base's own mass is no body)
            mass = sum(i.mass for i in pm.inertias)
            assert abs(mass - sum(float(I[5, 5]) for I in m.inertias)) < 1e-9
    assert 30.0 <= sum(i.mass for i in pin.buildModelFromXML(read(HUMANOID)).inertias) <= 40.0
    m = RobotModel.from_urdf(read(HUMANOID), floating_base=True)
    assert {"imu_link", "l_sole", "r_sole"} <= set(m.frames)
    assert {s.name for s in m.ft_sensors} == {"l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor",
                                               "r_foot_ft_sensor", "l_arm_ft_sensor", "r_arm_ft_sensor"}


# ============================================================================ loops (issue 5)
class LoopTrajectory:
    """A :class:`Trajectory` of the spanning tree with rotors whose joints follow the loops
    (``q = G y``): the node sees the actuated joints ``y`` and must publish ``τ_y = Gᵀ τ_q``."""

    def __init__(self, lest, seed=0):
        self.est, self.cfg, self.G = lest, lest.config, lest.G
        self.tree = Trajectory(lest.estimator, seed=seed)
        rng = np.random.default_rng(seed + 100)
        ny = len(lest.joint_names)
        self.y0, self.vy, self.ay = rng.uniform(-0.4, 0.4, ny), rng.normal(0, 0.5, ny), rng.normal(0, 2.0, ny)
        self.tree.q0, self.tree.v0, self.tree.a = self.G @ self.y0, self.G @ self.vy, self.G @ self.ay

    def stamp(self, k):
        return self.tree.stamp(k)

    def frame(self, k):
        f = dict(self.tree.frame(k))
        t = k * self.tree.dt_ns * 1e-9
        f.update(q=self.y0 + self.vy * t + 0.5 * self.ay * t * t, dq=self.vy + self.ay * t,
                 tau=self.G.T @ f["tau"])
        return f


def test_end_to_end_rotor_humanoid_publishes_actuator_efforts(ros, humanoid):
    """With loops declared (a rotor geared to every joint), the node plans a LoopEstimator and
    publishes the actuator efforts, named by the actuated joints, equal to the truth."""
    from rbd_estimator.estimation.loops import estimator_for
    xml, _ = humanoid
    loops_file = os.path.join(ROOT, "config", "humanoid_loops.yaml")
    params = params_from_yaml(HUMANOID_YAML, xml, prepare_fallbacks=False,
                              loops_file=loops_file)
    lest = estimator_for(xml, SensorConfig.from_parameters(params))
    assert hasattr(lest, "tree") and lest.G.shape == (len(lest.estimator.joint_names), len(lest.joint_names))
    ns = unique_ns("loops")
    with running(ros, params, ns, LoopTrajectory(lest, seed=3)) as sim:
        n = 20
        for k in range(n):
            sim.step(k, expect_output=k > 0)
        assert max(sim.error(k) for k in range(1, n)) <= TOL
        assert sim.all_finite()
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: "oracle_error" in v)
        assert "loops" in v["oracle_error"]


def test_doubtful_inertia_warns_once_at_configure_or_is_refused_with_strict_model(ros, arm, capfd):
    """Issue 10: a CAD inertia that breaks the triangle inequality loads with one warning naming the
    link (logged at configure); strict_model turns it into a configure failure naming the link."""
    xml, _ = arm
    bad = xml.replace('<inertia ixx="0.00351667" ixy="0" ixz="0" iyy="0.00351667" iyz="0" izz="0.0049"/>',
                      '<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.0049"/>', 1)
    assert bad != xml
    link = re.search(r'<link name="([^"]+)">\s*<inertial>\s*<origin[^>]*/>\s*<mass[^>]*/>\s*<inertia ixx="0.001"',
                     bad).group(1)
    node = ros.estimator(params_from_yaml(ARM_YAML, bad), unique_ns("inertia"))
    try:
        assert ros.transition(node, "configure"), node.last_error
        assert ros.transition(node, "cleanup")
        err = capfd.readouterr().err
        assert err.count("triangle inequality") == 1 and f"link '{link}'" in err
        assert ros.set_parameters(node, {"strict_model": True}).successful
        assert not ros.transition(node, "configure")
        assert f"link '{link}'" in node.last_error and "triangle inequality" in node.last_error
        assert node.estimator is None
    finally:
        ros.destroy(node)


@pytest.mark.parametrize("robot", ["talos", "go2"])
def test_end_to_end_shipped_real_robot(ros, robot):
    """Issue 10: the shipped configurations of real robots configure, estimate and cross-check in the
    node (Talos: four force-torque sensors; Go2: motor torques in the joint states' effort field)."""
    from rbd_estimator import robots
    xml, params = read(robots.urdf_file(robot)), robots.params_file(robot)
    est = estimator_for(xml, SensorConfig.from_yaml(params))
    ns = unique_ns(robot)
    params = params_from_yaml(params, xml, oracle_every_n=5, prepare_fallbacks=False)
    with running(ros, params, ns, Trajectory(est, seed=3)) as sim:
        n = 30
        for k in range(n):
            sim.step(k, expect_output=k > 0)
        scale = max(1.0, max(float(np.max(np.abs(sim.traj.frame(k)["tau"]))) for k in range(1, n)))
        errors = [sim.error(k) for k in range(1, n)]
        assert max(errors) <= 1e-9 * scale * 100, f"{robot}: largest error {max(errors):.3g}"
        lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: int(v["oracle_checks"]) >= 5)
        assert float(v["oracle_residual"]) < 1e-6 and msg == "OK"


def test_configure_time_is_logged_and_reported_once_on_diagnostics(ros, arm, capfd):
    """Issue 14: configure logs its duration and the part spent compiling kernels; /diagnostics
    carries both in the first message after configure only."""
    xml, _ = arm
    ns = unique_ns("cfgtime")
    node = ros.estimator(params_from_yaml(ARM_YAML, xml), ns)
    seen = []
    sub = ros.client.create_subscription(
        DiagnosticArray, "/diagnostics",
        lambda m: seen.extend(values_of(s) for s in m.status if s.name.endswith(node.get_fully_qualified_name())),
        QoSProfile(depth=50, reliability=QoSReliabilityPolicy.RELIABLE))
    try:
        assert ros.transition(node, "configure"), node.last_error
        assert wait_until(lambda: len(seen) >= 3, 10.0)
        with_time = [v for v in seen if "configure_seconds" in v]
        assert len(with_time) == 1 and with_time[0] is seen[0]
        total, compiling = float(with_time[0]["configure_seconds"]), float(with_time[0]["configure_compile_seconds"])
        assert 0.0 < total and 0.0 <= compiling <= total
        assert re.search(r"configured for 'rbd_arm' .* in \d+\.\d\d s \(\d+\.\d\d s compiling", capfd.readouterr().err)
    finally:
        ros.client.destroy_subscription(sub)
        ros.destroy(node)
