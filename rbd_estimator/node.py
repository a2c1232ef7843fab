"""The ``rbd_estimator`` lifecycle node: rclpy wiring around one :class:`~rbd_estimator.runtime.session.Session`.

*configure* reads the robot description and the parameters and plans a new session (outputs and
``/diagnostics`` created; single-sensor fallbacks planned in the background); *activate* subscribes
to the session's inputs on the tick thread (:mod:`rbd_estimator.ros.tick_thread`); *deactivate*
unsubscribes; *cleanup* and *shutdown* release everything. A failure returns FAILURE with one log
line saying what to change and leaves nothing built. Lifecycle, parameter and calibration services,
``/diagnostics`` and the log lines the tick thread queues run in the caller's executor. A new sensor
set is planned in the set-parameters callback while ticks go on and swapped in between two ticks
(docs/node.md, "Reconfiguration without a gap").
"""
from __future__ import annotations

import collections
import gc
import sys
import threading
import time
import warnings
from functools import partial

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNodeMixin, LifecycleState, TransitionCallbackReturn
from rclpy.node import Node
from rclpy.qos import QoSProfile

from .errors import ConditioningWarning, ConfigError, ModelWarning
from .jit import compile_timer
from .ros import diagnostics as diag
from .ros.blas import limit_blas_threads
from .ros.calibration_service import CalibrationService
from .ros.tick_thread import MESSAGES, TickThread
from .ros.declare import DeclaredParameters
from .runtime.params import NEEDS_CONFIGURE, change_refusal, parse_parameters
from .runtime.plans import PlanWorker
from .ros.description import read_description
from .runtime.sensor_sets import advice
from .runtime.session import ERROR, OK, WARN, Session

SUCCESS, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE
OUTPUT_QOS = QoSProfile(depth=10)
#: after a reconfiguration, the new set's fallbacks are planned from DELAY seconds on, the planning
#: thread resting PACE times as long as each plan took (the swap and its fallbacks never pile up)
PACE, DELAY = 3.0, 0.5


class EstimatorNode(LifecycleNodeMixin, Node):
    """The estimator as a ROS 2 managed node (see the module docstring)."""

    def __init__(self, node_name: str = "rbd_estimator", **kwargs):
        kwargs.setdefault("allow_undeclared_parameters", True)
        kwargs.setdefault("automatically_declare_parameters_from_overrides", True)
        Node.__init__(self, node_name, **kwargs)
        LifecycleNodeMixin.__init__(self)
        self._lock = threading.RLock()         # transitions and reconfigurations
        self._events: collections.deque = collections.deque()   # (level, text) queued by the tick thread
        self._group = MutuallyExclusiveCallbackGroup()
        # the tick thread's log lines wake the executor when there are some: no periodic wake-up (ticks that
        # overlapped the executor Python of a 20 Hz timer here made most of the 1 kHz p99, issue 19)
        self._log_wake = self.create_guard_condition(self._flush_log, callback_group=self._group)
        self._ticks = TickThread(self, lambda text: self._queue_log(ERROR, text))
        self._worker = PlanWorker(on_error=lambda e: self.get_logger().error(f"planning failed: {e}"))
        self._state, self.last_error = "unconfigured", ""
        self.session = None
        self._pubs = {}
        self._diag_pub = self._diag_timer = None
        self._configure_time = None
        # declares every parameter of the schema that applies (ros/declare.py), then validates changes
        self._declared = DeclaredParameters(self, self._on_set_parameters)
        self._calibration = CalibrationService(self)

    # ================================================================== for tools and tests
    @property
    def lifecycle_state(self) -> str:
        """'unconfigured', 'inactive', 'active' or 'finalized'."""
        return self._state

    @property
    def status(self) -> tuple:
        """(diagnostic level as ``DiagnosticStatus.level``, message) of the latest tick (an ill-posed
        contact subset first)."""
        s = self.session
        level, message = (OK, self._state) if s is None or self._state != "active" else s.subset_status or s.status
        return bytes([level]), message

    def input_counts(self) -> dict:
        """Accepted samples per input (``joint_states`` and every sensor)."""
        return self.session.input_counts()[0] if self.session is not None else {}

    def input_rejections(self) -> dict:
        """Rejected samples per input (``joint_states`` and every sensor)."""
        return {k: sum(v.values()) for k, v in self.session.input_counts()[1].items()} if self.session else {}

    def wait_for_plans(self, timeout: float = 60.0) -> bool:
        """Wait until the planning thread is idle (fallback plans prepared)."""
        return self._worker.wait_idle(timeout)

    @property
    def input_topics(self) -> set:
        """Topics the node subscribes to right now (only while active)."""
        return self._ticks.topics

    @property
    def tick_lock(self):
        """Held by the tick thread while it handles a message: hold it to act between two ticks."""
        return self._ticks.lock

    @property
    def estimator(self):
        """The estimator of the full sensor set (None unless configured)."""
        return self.session.estimator if self.session is not None else None

    # ================================================================== lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock:
            self._release()
            t0 = time.monotonic()
            try:
                config, settings = parse_parameters(self._flat_parameters())
                xml = read_description(self, settings)
                with compile_timer() as compiled, warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ModelWarning)
                    self.session = session = Session(xml, config, settings, cross_check=True, log=self._queue_log)
                self._sync_publishers(session.outputs())
            except Exception as exc:  # every failure is reported the same way; nothing is kept
                self._release()
                self.last_error = advice(exc)
                self.get_logger().error(f"configure failed: {self.last_error}")
                return FAILURE
            for w in caught:      # weak contact directions: said once below (coverage_lines), with what to set
                if not issubclass(w.category, ConditioningWarning):
                    prefix = "robot_description: " * issubclass(w.category, ModelWarning)
                    self.get_logger().warning(f"{prefix}{w.message}")
            session.run_job = self._worker.submit
            self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", OUTPUT_QOS)
            self._diag_timer = self.create_timer(settings.diagnostics_period, self._publish_diagnostics,
                                                 callback_group=self._group)
            if settings.prepare_fallbacks:
                self._worker.submit(session.plans.prepare_single_losses)
            self.last_error, self._state = "", "inactive"
            self._configure_time = (time.monotonic() - t0, compiled.seconds)
            self.get_logger().info(
                f"configured for {session.summary()} in {self._configure_time[0]:.2f} s ({compiled.seconds:.2f} s "
                f"compiling kernels{': run `rbd-estimator warm-cache` once to avoid it' * (compiled.seconds >= 1.0)})")
            for level, text in [(WARN, session.oracle_error)] * bool(session.oracle_error) + session.coverage_lines():
                self._log(level, text)
            return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock, self._ticks.lock:
            s = self.session
            s.reset()
            self._ticks.subscribe(s.inputs_needed())
            if not s.tick_on_js:
                self._ticks.start_timer(1.0 / s.settings.rate_hz, s.on_timer)
            self._ticks.active, self._state = True, "active"
            gc.collect()
            gc.freeze()      # what exists now stays: out of the cyclic collector's way (no ms-long pauses)
            return LifecycleNodeMixin.on_activate(self, state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock:
            self._ticks.stop()
            gc.unfreeze()
            self._state = "inactive"
            return LifecycleNodeMixin.on_deactivate(self, state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._end("unconfigured")

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        return self._end("finalized")

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        self.get_logger().error("error during a transition: everything released, back to unconfigured")
        return self._end("unconfigured")

    def _end(self, state: str) -> TransitionCallbackReturn:
        with self._lock:
            self._release()
            self._state = state
            return SUCCESS

    def destroy_node(self) -> None:
        with self._lock:
            self._release()
        self._worker.stop()
        self._ticks.close()
        super().destroy_node()

    def _release(self) -> None:
        """Destroy everything configure and activate created (idempotent)."""
        self._ticks.stop()
        gc.unfreeze()
        self._sync_publishers([])
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
        if self._diag_pub is not None:
            self.destroy_publisher(self._diag_pub)
        self._diag_pub = self._diag_timer = None
        if self.session is not None:
            self.session.close()
        self.session = None

    # ================================================================== entities
    def _sync_publishers(self, outputs, keep_others: bool = False) -> None:
        wanted = {o.topic: o for o in outputs}
        for topic in [t for t in self._pubs if t not in wanted and not keep_others]:
            self.destroy_lifecycle_publisher(self._pubs.pop(topic))
        for topic, o in wanted.items():
            if topic not in self._pubs:
                self._pubs[topic] = pub = self.create_lifecycle_publisher(MESSAGES[o.message], topic, OUTPUT_QOS)
                if self._state == "active":
                    pub.on_activate(None)
        if self.session is not None:
            self.session.emit = self._emit

    def _emit(self, topic: str, now: int, data: bytes) -> None:
        pub = self._pubs[topic]
        if pub.get_subscription_count():     # nobody listening (the uncertainty's topics, often): no send
            pub.publish(data)

    # ================================================================== log lines
    def _queue_log(self, level: int, text: str) -> None:
        self._events.append((level, text))
        self._log_wake.trigger()

    def _flush_log(self) -> None:
        while self._events:
            self._log(*self._events.popleft())

    def _log(self, level: int, text: str) -> None:
        log = self.get_logger()      # one call site per severity (rclpy keys its logging calls by site)
        if level == OK:
            log.info(text)
        elif level == WARN:
            log.warning(text)
        else:
            log.error(text)

    # ================================================================== parameters
    def _flat_parameters(self) -> dict:
        return self._declared.values()

    def _on_set_parameters(self, params) -> SetParametersResult:
        with self._lock:
            try:
                reason = self._reconfigure(params)
            except Exception as exc:  # noqa: BLE001 - a refusal, never an exception into rclpy
                reason = f"unexpected {type(exc).__name__}: {exc}"
            return SetParametersResult(successful=not reason, reason=reason or "")

    def _reconfigure(self, params) -> str:
        """'' when ``params`` are accepted (and applied or planned), else why not."""
        names, active = {p.name for p in params}, self._state == "active"
        refusal = change_refusal(names, active)
        if refusal:
            return refusal
        flat = self._declared.after(params)
        try:
            config, settings = parse_parameters(flat)
        except ConfigError as exc:
            return str(exc)
        s = self.session
        if s is None:                       # unconfigured: takes effect at configure
            return ""
        if names & NEEDS_CONFIGURE:
            self.get_logger().info(f"{', '.join(sorted(names & NEEDS_CONFIGURE))} changed: takes effect at the "
                                   f"next configure (cleanup, then configure)")
        old_period = s.settings.diagnostics_period
        with self._ticks.lock:
            replan = s.check(config, settings)
        if not replan:
            if settings.diagnostics_period != old_period and self._diag_timer is not None:
                self.destroy_timer(self._diag_timer)
                self._diag_timer = self.create_timer(settings.diagnostics_period, self._publish_diagnostics,
                                                     callback_group=self._group)
            return ""
        t0 = time.monotonic()
        try:
            pending = s.prepare(config, settings)      # planned here: the tick thread goes on with the old set
        except Exception as exc:  # noqa: BLE001 - ill-posed, bad frame: refused, the set in use stays
            return f"{advice(exc)}; the current sensor set stays in use"
        self.get_logger().info(f"new sensor set planned in {time.monotonic() - t0:.2f} s: "
                               f"{pending.plans.main.estimator.report.summary()}")
        self._sync_publishers(s.outputs(pending.plans), keep_others=True)    # beside the running ones
        if active:
            self._ticks.subscribe(s.inputs_needed(config, settings), keep_others=True)
        with self._ticks.lock:                 # between two ticks
            s.swap(pending)
        self._sync_publishers(s.outputs())
        if active:                             # the spinner holds what its wait set uses
            self._ticks.subscribe(s.inputs_needed())
        for level, text in s.coverage_lines():
            self._log(level, text)
        if settings.prepare_fallbacks:
            self._worker.submit(partial(pending.plans.prepare_single_losses, PACE, DELAY))   # paced: ticks go on
        return ""

    # ================================================================== diagnostics
    def _publish_diagnostics(self) -> None:
        pub, s = self._diag_pub, self.session
        if pub is None or s is None:
            return
        level, message, values = s.diagnostics(time.time_ns())
        if self._state != "active":
            level, message = OK, self._state
        values = dict(state=self._state, **values)
        if self._configure_time is not None:                       # once after each configure
            values["configure_seconds"], values["configure_compile_seconds"] = self._configure_time
            self._configure_time = None
        try:
            pub.publish(diag.diagnostic_array(self.get_clock().now().to_msg(), f"rbd_estimator: "
                                              f"{self.get_fully_qualified_name()}", s.estimator.model.name,
                                              bytes([level]), message, values))
        except Exception:  # noqa: BLE001 - publisher destroyed by a concurrent cleanup
            pass


def spin_resuming(executor) -> None:
    """``executor.spin()``, resumed when a lifecycle transition destroyed a publisher while another
    executor thread was putting its events into a wait set (rclpy raises ``InvalidHandle``)."""
    from rclpy.impl.implementation_singleton import rclpy_implementation
    while executor.context.ok():
        try:
            executor.spin()
            return
        except rclpy_implementation.InvalidHandle:
            continue


def main(args=None) -> None:
    """Console script ``estimator_node``: the node's services in a multi-threaded executor; its tick
    thread runs on its own (see the module docstring)."""
    rclpy.init(args=args)
    sys.setswitchinterval(0.0005)   # short GIL hand-overs: the tick thread interleaves with the others
    limit_blas_threads(1)           # planning's dense LAPACK must not spin threads against the ticks
    node = EstimatorNode()
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    try:
        spin_resuming(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
