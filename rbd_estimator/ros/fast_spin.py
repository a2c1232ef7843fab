"""A lean spin loop for the tick node's inputs: one rcl wait set per iteration, every ready
message taken and its callback called directly.

rclpy's executors wrap every callback in a task and rebuild their bookkeeping per message: about
160 µs per message measured here, so eight inputs at 1 kHz (joint states, IMU, six force-torque
sensors) need more than a core. Taking the messages straight from the wait set costs about 20 µs
each. Subscriptions and timers may be created and destroyed from other threads while this loop
runs: they are read under :attr:`WaitSetSpinner.lock`, their handles are held (rclpy's
``Destroyable`` protocol) while the wait set uses them, and :meth:`WaitSetSpinner.wake` interrupts
a wait so that changes are picked up at once.
"""
from __future__ import annotations

import contextlib
import threading

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.subscription import Subscription
from rclpy.timer import TimerInfo

_WAIT_NS = 100_000_000          # wake up at least every 0.1 s to notice a stop


class WaitSetSpinner:
    """Spins ``node``'s subscriptions and timers in the calling thread until :meth:`stop`.

    Within one iteration the messages of every subscription are handled before those whose
    topic is in ``last_topics`` (the tick trigger), so a tick sees the sensor samples that
    arrived with it.
    """

    def __init__(self, node: Node, last_topics=()):
        self.node = node
        self.lock = threading.RLock()
        self.last_topics = set(last_topics)
        self._guard = node.context and _rclpy.GuardCondition(node.context.handle)
        self._stop = False

    def wake(self) -> None:
        """Interrupt the current wait (call after adding or removing entities)."""
        self._guard.trigger_guard_condition()

    def stop(self) -> None:
        self._stop = True
        self.wake()

    def spin(self) -> None:
        context = self.node.context
        while not self._stop and context.ok():
            self.spin_once()

    def spin_once(self, timeout_ns: int = _WAIT_NS) -> None:
        """Wait once, then take every ready message and run every ready timer."""
        node = self.node
        with contextlib.ExitStack() as held:
            with self.lock:
                subs = sorted(node.subscriptions, key=lambda s: s.topic_name in self.last_topics)
                timers = list(node.timers)
                subs = [s for s in subs if _hold(held, s.handle)]
                timers = [t for t in timers if _hold(held, t.handle)]
                held.enter_context(node.context.handle)
                ws = _rclpy.WaitSet(len(subs), 1, len(timers), 0, 0, 0, node.context.handle)
                ws.clear_entities()
                for s in subs:
                    ws.add_subscription(s.handle)
                for t in timers:
                    ws.add_timer(t.handle)
                ws.add_guard_condition(self._guard)
            ws.wait(timeout_ns)
            ready_subs = set(ws.get_ready_entities("subscription"))
            ready_timers = set(ws.get_ready_entities("timer"))
            with self.lock:
                for s in subs:
                    if s.handle.pointer in ready_subs:
                        _drain(s)
                for t in timers:
                    if t.handle.pointer in ready_timers and t.handle.is_timer_ready():
                        _fire(t)


def _hold(stack: contextlib.ExitStack, handle) -> bool:
    """Keep an entity's handle alive for the wait; False if it was destroyed meanwhile."""
    try:
        stack.enter_context(handle)
        return True
    except Exception:  # noqa: BLE001  (rclpy's InvalidHandle: destroyed by another thread)
        return False


def _drain(sub) -> None:
    """Take every queued message of a subscription and call its callback with each (and the
    message info when the callback takes it, as rclpy's executors do)."""
    with_info = sub._callback_type is not Subscription.CallbackType.MessageOnly
    while True:
        taken = sub.handle.take_message(sub.msg_type, sub.raw)
        if taken is None:
            return
        if with_info:
            sub.callback(taken[0], taken[1])
        else:
            sub.callback(taken[0])


def _fire(timer) -> None:
    info = timer.handle.call_timer_with_info()
    try:
        timer.callback(TimerInfo(expected_call_time=info["expected_call_time"],
                                 actual_call_time=info["actual_call_time"], clock_type=timer.clock.clock_type))
    except TypeError:
        timer.callback()
