"""The rclpy internals that the tick thread's :class:`~rbd_estimator.ros.fast_spin.WaitSetSpinner`
uses (issue 19: a hand-made part that stays for speed — docs/benchmarks.md has the figures — has
its internals pinned): rclpy's C extension ``WaitSet`` and ``GuardCondition``, a subscription
handle's ``take_message``, ``Subscription._callback_type``, a timer handle's
``call_timer_with_info``. An rclpy release that moves any of them fails here, by name, before the
node does."""
from __future__ import annotations

import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.impl.implementation_singleton import rclpy_implementation  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from rclpy.subscription import Subscription  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from rbd_estimator.ros.fast_spin import WaitSetSpinner  # noqa: E402


def test_the_internals_exist():
    for name in ("WaitSet", "GuardCondition", "InvalidHandle"):
        assert hasattr(rclpy_implementation, name), name
    for name in ("clear_entities", "add_subscription", "add_timer", "add_guard_condition", "wait",
                 "get_ready_entities"):
        assert hasattr(rclpy_implementation.WaitSet, name), name
    assert hasattr(rclpy_implementation.GuardCondition, "trigger_guard_condition")
    assert Subscription.CallbackType.MessageOnly is not None


def test_spinner_delivers_raw_messages_with_and_without_info_and_fires_timers():
    context = rclpy.context.Context()
    rclpy.init(context=context)
    try:
        node = Node("fast_spin_probe", context=context)
        got_info, got_plain, fired = [], [], []
        node.create_subscription(String, "probe", lambda raw, info: got_info.append((raw, info)), 10, raw=True)
        node.create_subscription(String, "probe", lambda raw: got_plain.append(raw), 10, raw=True)
        node.create_timer(0.01, lambda: fired.append(1))
        pub = node.create_publisher(String, "probe", 10)
        spinner = WaitSetSpinner(node)
        end = time.monotonic() + 10.0
        while time.monotonic() < end and not (got_info and got_plain and fired):
            pub.publish(String(data="x"))
            spinner.spin_once(50_000_000)
        assert got_info and got_plain and fired
        raw, info = got_info[0]
        assert isinstance(raw, bytes) and deserialize_message(raw, String).data == "x"
        assert deserialize_message(got_plain[0], String).data == "x"
        assert info.get("received_timestamp", 0) > 0
        spinner.stop()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
