"""The node's tick thread: a helper node with the input subscriptions and the tick timer, spun by
:class:`~rbd_estimator.ros.fast_spin.WaitSetSpinner` (≈20 µs per message instead of ≈160 µs
through an rclpy executor), and the lock that keeps transitions and reconfigurations between two
ticks.

The helper (``_<node>_io``: hidden, as rclpy hides names starting with ``_``) is created with
``use_global_arguments=False``: the process's remapping arguments (``-r __node:=…``, topic remaps)
apply to the owning node only, which resolves every input topic before subscribing here. So a
remap renames one node, and a topic remap is applied once.
"""
from __future__ import annotations

import threading
import time
from functools import partial

from geometry_msgs.msg import WrenchStamped
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import QoSHistoryPolicy, QoSProfile, QoSReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String

from ..runtime import cdr
from .fast_spin import WaitSetSpinner

#: Sensors: best effort (both best-effort and reliable publishers connect), depth 1: a tick uses the latest sample.
INPUT_QOS = QoSProfile(depth=1, history=QoSHistoryPolicy.KEEP_LAST, reliability=QoSReliabilityPolicy.BEST_EFFORT)
#: Joint states tick the node: a queue, so that a burst (16 ms at 2 kHz) is ticked through, not overwritten
#: (depth 10 dropped 3–6 of 120,000 joint states in bench_node.py at 2 kHz; 32 none but the first).
TRIGGER_QOS = QoSProfile(depth=32, history=QoSHistoryPolicy.KEEP_LAST, reliability=QoSReliabilityPolicy.BEST_EFFORT)
#: The ROS message class of each type a session reads or writes.
MESSAGES = {cdr.JOINT_STATE: JointState, cdr.IMU: Imu, cdr.WRENCH_STAMPED: WrenchStamped,
            cdr.FLOAT64_MULTI_ARRAY: Float64MultiArray, cdr.STRING: String}


class TickThread:
    """Subscriptions of ``owner`` (an rclpy node) served on their own thread (see the module docstring).

    Handlers run with :attr:`lock` held and only while :attr:`active`; ``on_error(text)`` gets an
    exception that escaped a handler (the thread goes on)."""

    def __init__(self, owner: Node, on_error):
        self.owner, self.on_error = owner, on_error
        self.lock = threading.Lock()
        self.active = False
        self.node = Node(f"_{owner.get_name()}_io", namespace=owner.get_namespace(), context=owner.context,
                         use_global_arguments=False, start_parameter_services=False, enable_logger_service=False,
                         enable_rosout=False)
        self._spinner = WaitSetSpinner(self.node)
        self._subs: dict = {}
        self._timer = None
        self._thread = threading.Thread(target=self._spin, name=f"{owner.get_name()}_ticks", daemon=True)
        self._thread.start()

    @property
    def topics(self) -> set:
        """Topics subscribed to right now."""
        return {s.topic_name for s in self.node.subscriptions}

    def subscribe(self, inputs, keep_others: bool = False) -> None:
        """Subscribe to ``inputs`` (:class:`~rbd_estimator.runtime.session.Input`, topics resolved by the
        owner); unsubscribe the others unless ``keep_others``."""
        wanted = {i.key: i for i in inputs}
        for key in [k for k in self._subs if k not in wanted and not keep_others]:
            self.node.destroy_subscription(self._subs.pop(key))
        for key, i in wanted.items():
            if key not in self._subs:
                self._subs[key] = self.node.create_subscription(
                    MESSAGES[i.message], self.owner.resolve_topic_name(i.topic), partial(self._on_input, i.handler),
                    TRIGGER_QOS if i.trigger else INPUT_QOS, raw=True)
        js = self._subs.get(("joint_states",))
        self._spinner.last_topics = {js.topic_name} if js is not None else set()   # ticks see their sensors
        self._spinner.wake()

    def start_timer(self, period: float, callback) -> None:
        """``callback(now_ns)`` every ``period`` seconds on the tick thread (``tick: timer``)."""
        self._timer = self.node.create_timer(period, partial(self._on_timer, callback))
        self._spinner.wake()

    def stop(self) -> None:
        """No more handlers: unsubscribe everything, stop the timer (waits for a running tick)."""
        with self.lock:
            self.active = False
            self.subscribe([])
            if self._timer is not None:
                self.node.destroy_timer(self._timer)
                self._timer = None

    def close(self) -> None:
        self.stop()
        self._spinner.stop()
        self._thread.join(5.0)
        self.node.destroy_node()

    @staticmethod
    def received(info) -> int:
        """When the middleware received the message (wall clock, ns): freshness does not depend on
        how long the message then waited."""
        t = info.get("received_timestamp", 0) if info else 0
        return t if t > 0 else time.time_ns()

    def _on_input(self, handler, raw: bytes, info) -> None:
        with self.lock:
            if self.active:
                handler(raw, self.received(info))

    def _on_timer(self, callback) -> None:
        with self.lock:
            if self.active:
                callback(time.time_ns())

    def _spin(self) -> None:
        while True:
            try:
                self._spinner.spin()
                return
            except ExternalShutdownException:
                return
            except Exception as exc:  # noqa: BLE001 - the node must keep ticking
                if not self.owner.context.ok():
                    return
                self.on_error(f"tick thread: unexpected {type(exc).__name__}: {exc}")

