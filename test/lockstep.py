"""The estimator node (real rclpy, loopback) fed recorded messages in lockstep: each step's sensor
messages are published and counted in by the node before the joint state that ticks it, and the
step waits for the estimate. Waits return early and time out generously (a loaded CI machine stalls
for seconds); nothing depends on the machine's speed."""
from __future__ import annotations

import os
import threading
import time

import numpy as np


def stamp(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def wait(pred, timeout=10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.0005)
    return pred()


def parameters(flat: dict) -> list:
    """rclpy ``Parameter`` overrides from flat parameters (numbers in a list made floats; empty lists left out)."""
    from rclpy.parameter import Parameter
    return [Parameter(k, value=[float(x) for x in v] if isinstance(v, (list, tuple)) and v
                      and all(isinstance(x, (int, float)) for x in v) else v)
            for k, v in flat.items() if not (isinstance(v, (list, tuple)) and not v)]


class LockstepNode:
    """``with LockstepNode(flat_parameters, contacts, first_step) as n: n.step(messages)``: an
    active :class:`~rbd_estimator.node.EstimatorNode` named ``rbd_estimator``, publishers for the
    topics of ``first_step`` (``[(topic, message)]``), and what it publishes: ``tau``
    (``{stamp: efforts}``), ``wrenches`` (``{contact: {stamp: [fx..tz]}}``), ``faults`` (the
    ``~/sensor_faults`` strings received)."""

    def __init__(self, flat: dict, contacts, first_step, inputs: dict | None = None):
        """``inputs``: topic → the node's input name (default: ``imu`` for ``…/imu``, else the topic's
        last part, as the shipped humanoid's ``/ft/<sensor>``)."""
        self.flat, self.contacts, self.first_step = flat, list(contacts), first_step
        self.inputs = inputs or {}
        self.tau, self.wrenches, self.faults = {}, {c: {} for c in contacts}, []

    def __enter__(self):
        import rclpy
        from geometry_msgs.msg import WrenchStamped
        from rclpy.context import Context
        from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
        from rclpy.qos import QoSProfile, QoSReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        from rbd_estimator.node import EstimatorNode
        self._rclpy = rclpy
        self.ctx = Context()
        rclpy.init(context=self.ctx, domain_id=120 + os.getpid() % 100)
        self.ex = MultiThreadedExecutor(num_threads=4, context=self.ctx)
        self.node = node = EstimatorNode("rbd_estimator", context=self.ctx, parameter_overrides=parameters(self.flat))
        self.client = client = rclpy.create_node("lockstep_client", context=self.ctx)
        self.ex.add_node(node)
        self.client_ex = SingleThreadedExecutor(context=self.ctx)    # the client's callbacks on their own thread
        self.client_ex.add_node(client)
        self.th = threading.Thread(target=self.ex.spin, daemon=True)
        self.th.start()
        self.client_th = threading.Thread(target=self.client_ex.spin, daemon=True)
        self.client_th.start()
        node.trigger_configure()
        assert node.lifecycle_state == "inactive", node.last_error
        node.trigger_activate()
        assert node.lifecycle_state == "active"
        qos = QoSProfile(depth=50, reliability=QoSReliabilityPolicy.RELIABLE)
        self.pubs = {t: client.create_publisher(type(m), t, qos) for t, m in self.first_step}
        client.create_subscription(JointState, "/rbd_estimator/joint_torques",
                                   lambda m: self.tau.__setitem__(stamp(m), np.array(m.effort)), qos)
        client.create_subscription(String, "/rbd_estimator/sensor_faults", lambda m: self.faults.append(m.data), qos)
        for c in self.contacts:
            client.create_subscription(
                WrenchStamped, f"/rbd_estimator/contact_wrenches/{c}",
                lambda m, c=c: self.wrenches[c].__setitem__(stamp(m), np.array(
                    [m.wrench.force.x, m.wrench.force.y, m.wrench.force.z, m.wrench.torque.x, m.wrench.torque.y,
                     m.wrench.torque.z])), qos)
        wait(lambda: all(p.get_subscription_count() > 0 for p in self.pubs.values()))
        time.sleep(0.3)
        return self

    def step(self, step, expect_estimate: bool = True) -> bool:
        """Publish the sensor messages of ``step`` (each counted in by the node), then its joint
        state; with ``expect_estimate``, wait for the estimate of that stamp. Returns whether it came."""
        node = self.node
        before = node.input_counts()
        for topic, msg in step[:-1]:
            self.pubs[topic].publish(msg)
        names = [self.inputs.get(t, "imu" if t.endswith("/imu") else t.rsplit("/", 1)[1]) for t, _ in step[:-1]]
        assert wait(lambda: all(node.input_counts()[n] > before[n] for n in names))
        topic, js = step[-1]
        self.pubs[topic].publish(js)
        if not expect_estimate:
            return False
        s = stamp(js)
        return wait(lambda: s in self.tau and all(s in self.wrenches[c] for c in self.contacts))

    def __exit__(self, *exc):
        self.client_ex.shutdown()
        self.ex.shutdown()
        self.node.destroy_node()
        self.client.destroy_node()
        self._rclpy.shutdown(context=self.ctx)
        self.th.join(5.0)
        self.client_th.join(5.0)
        return False
