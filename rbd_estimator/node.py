"""The ``rbd_estimator`` lifecycle node: joint torques and contact wrenches every control tick.

Lifecycle (``rclpy`` managed node; drive it with ``ros2 lifecycle set`` or a launch file):

* **configure** reads ``robot_description`` (parameter, or when empty the transient-local topic
  ``robot_description_topic`` within ``robot_description_timeout``), parses the sensor parameters
  with :meth:`SensorConfig.from_parameters`, plans the estimator (the off-line work), builds the
  pinocchio cross-check and creates the output publishers (lifecycle publishers: they publish
  only while active) and ``/diagnostics``. Plans for the loss of any single sensor are then
  prepared by a background thread (``prepare_fallbacks``). Any failure returns FAILURE with one
  log line saying what is wrong and what to change, and leaves nothing built.
* **activate** creates the input subscriptions (and the tick timer with ``tick: timer``);
  **deactivate** destroys them; **cleanup** releases plans, publishers and the cross-check;
  **shutdown** does whatever of this is needed from any state.

Threads: the input subscriptions and the tick timer live on a hidden helper node
(``_<name>_io``, same namespace) spun in a dedicated thread — the *tick thread* — by
:class:`~rbd_estimator.ros.fast_spin.WaitSetSpinner`, which takes messages straight from an rcl
wait set (≈20 µs per message instead of ≈160 µs through an rclpy executor). The lifecycle and parameter services and ``/diagnostics`` belong to the
node itself, spun by the caller's executor (:func:`main` uses a multi-threaded one). So a
reconfiguration — validated and planned inside the set-parameters callback, which must answer
synchronously — runs while ticks go on with the old plan; the new plan is swapped in at the start
of the next tick. (Why not one executor: rclpy's executors cost 160 µs or more per callback, too much for 1 kHz
joint states plus one message per sensor. Planning code that holds the GIL still pauses the tick
thread.)

No mathematics here: see :mod:`rbd_estimator.ros` for the helpers and
:mod:`rbd_estimator.estimation` for the estimate.
"""
from __future__ import annotations

import gc
import json
import sys
import threading
import time
import warnings
from functools import partial

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rcl_interfaces.srv import SetParameters as CalibrateFtOffsets
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.lifecycle import LifecycleNodeMixin, LifecycleState, TransitionCallbackReturn
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (QoSDurabilityPolicy, QoSHistoryPolicy, QoSProfile, QoSReliabilityPolicy)
from rclpy.wait_for_message import wait_for_message
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String

from .errors import ConfigError, IllPosedError, ModelError, ModelWarning
from .estimation import SensorConfig
from .ros import cdr
from .ros.blas import limit_blas_threads
from .ros.calibration import SampleCollector, parse_request
from .ros.fast_spin import WaitSetSpinner
from .ros import diagnostics as diag
from .jit import compile_timer
from .ros.inputs import SensorInputs
from .ros.params import NEEDS_CONFIGURE, NEEDS_REACTIVATE, NODE_KEYS, NODE_PARAMETERS, ROS_PARAMETERS, NodeSettings
from .ros.plans import PlanSet, PlanWorker
from .ros.stats import RollingStats
from .ros.tick import TickCore
from .ros.contact_state import ContactState
from .sensors.base import ARRAY_MESSAGE, IMU_MESSAGE, WRENCH_MESSAGE

SUCCESS, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE

#: Inputs: best effort, so both best-effort (sensor-data) and reliable publishers connect; depth 1:
#: a tick uses the latest sample of each input, and a node that falls behind drops ticks instead of
#: queueing them (a queue of 10 joint states at 1 kHz adds 10 ms of latency).
INPUT_QOS = QoSProfile(depth=1, history=QoSHistoryPolicy.KEEP_LAST, reliability=QoSReliabilityPolicy.BEST_EFFORT)
# joint states tick the node: a short queue, so that a burst from the middleware is ticked through
# instead of overwritten (the tick thread drains it in one wait; sensors keep only their latest)
TRIGGER_QOS = QoSProfile(depth=10, history=QoSHistoryPolicy.KEEP_LAST, reliability=QoSReliabilityPolicy.BEST_EFFORT)
OUTPUT_QOS = QoSProfile(depth=10)
DESCRIPTION_QOS = QoSProfile(depth=1, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=QoSReliabilityPolicy.RELIABLE)


class DescriptionUnavailable(RuntimeError):
    """No robot description in the parameter nor on the topic."""


def advice(exc: BaseException) -> str:
    """One line: what is wrong and what to change."""
    if isinstance(exc, IllPosedError):
        return (f"the sensor set is ill-posed: {exc}. Add sensors (force-torque, load cells, joint torques) or "
                f"constrain the contacts (contact.<name>.type), then configure again")
    if isinstance(exc, ModelError):
        return (f"robot model error: {exc}. Fix robot_description, or the frame and sensor names in the "
                f"parameters, then configure again")
    if isinstance(exc, ConfigError):
        return f"invalid parameters: {exc}. Fix the parameter named above, then configure again"
    if isinstance(exc, DescriptionUnavailable):
        return str(exc)
    return f"unexpected {type(exc).__name__}: {exc}"


def _sensor_part(config) -> dict:
    """The parameters that define the estimation problem (everything but the node-only ones)."""
    flat = config.to_parameters()
    for k in config.node:
        flat.pop(k, None)
    return flat


class _Pending:
    """A validated reconfiguration waiting to be swapped in at the start of a tick."""
    __slots__ = ("gen", "config", "settings", "plans", "oracle")

    def __init__(self, gen, config, settings, plans, oracle):
        self.gen, self.config, self.settings, self.plans, self.oracle = gen, config, settings, plans, oracle


class EstimatorNode(LifecycleNodeMixin, Node):
    """The estimator as a ROS 2 managed node (see the module docstring)."""

    def __init__(self, node_name: str = "rbd_estimator", **kwargs):
        kwargs.setdefault("allow_undeclared_parameters", True)
        kwargs.setdefault("automatically_declare_parameters_from_overrides", True)
        Node.__init__(self, node_name, **kwargs)
        # The parameters given at start-up (file, launch, command line) are dynamically typed, as those
        # set later are: a misspelled one, or the parameters of a sensor or contact dropped from its
        # list (both refused), can be deleted without a restart (``ros2 param delete``).
        for name, p in self.get_parameters_by_prefix("").items():
            if name not in ROS_PARAMETERS and p.type_ != Parameter.Type.NOT_SET:
                self.set_descriptor(name, ParameterDescriptor(dynamic_typing=True))
        for name, (default, description) in NODE_PARAMETERS.items():
            if not self.has_parameter(name):
                self.declare_parameter(name, default, ParameterDescriptor(description=description,
                                                                          dynamic_typing=True))
        self._diag_group = MutuallyExclusiveCallbackGroup()
        LifecycleNodeMixin.__init__(self)      # lifecycle services: default group, with the parameter services
        self._lock = threading.RLock()         # transitions and reconfigurations
        self._tick_lock = threading.Lock()     # the tick thread against transitions
        self._io = Node(f"_{node_name}_io", namespace=self.get_namespace(), context=self.context,
                        start_parameter_services=False, enable_logger_service=False)
        self._io_spinner = WaitSetSpinner(self._io)
        self._io_thread = threading.Thread(target=self._spin_io, name=f"{node_name}_ticks", daemon=True)
        self._io_thread.start()
        self._worker = PlanWorker(on_error=lambda e: self.get_logger().error(f"planning failed: {e}"))
        self._state = "unconfigured"
        self._gen = 0
        self.last_error = ""
        self._subs: dict = {}
        self._collector = None                 # a running offset calibration (SampleCollector)
        self._clear()
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._calib_group = MutuallyExclusiveCallbackGroup()
        self._calib_srv = self.create_service(CalibrateFtOffsets, "~/calibrate_ft_offsets", self._on_calibrate,
                                              callback_group=self._calib_group)

    # ================================================================== public helpers
    @property
    def lifecycle_state(self) -> str:
        """'unconfigured', 'inactive', 'active' or 'finalized'."""
        return self._state

    @property
    def status(self) -> tuple:
        """(diagnostic level, message) of the latest tick (an ill-posed contact subset first)."""
        if self._subset_status is not None and self._state == "active":
            return self._subset_status
        return self._status

    def input_counts(self) -> dict:
        """Accepted samples per input (``joint_states`` and every sensor)."""
        inp = self._inputs
        if inp is None:
            return {}
        out = {"joint_states": inp.joint_states.received}
        out.update({k: s.received for k, s in inp.slots.items()})
        return out

    def input_rejections(self) -> dict:
        """Rejected samples per input (``joint_states`` and every sensor)."""
        inp = self._inputs
        if inp is None:
            return {}
        out = {"joint_states": sum(inp.joint_states.rejected.values())}
        out.update({k: sum(s.rejected.values()) for k, s in inp.slots.items()})
        return out

    def wait_for_plans(self, timeout: float = 60.0) -> bool:
        """Wait until the background planner is idle (fallback plans prepared)."""
        return self._worker.wait_idle(timeout)

    @property
    def input_topics(self) -> set:
        """Topics the node subscribes to right now (only while active)."""
        return {s.topic_name for s in self._io.subscriptions}

    @property
    def estimator(self):
        """The estimator of the full sensor set (None unless configured)."""
        return self._plans.main.estimator if self._plans is not None else None

    # ================================================================== lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock:
            self._release()
            try:
                config = SensorConfig.from_parameters(self._flat_parameters(), NODE_KEYS)
                settings = NodeSettings.from_parameters(config.node)
                settings.check_ft_offsets(config)
                xml = self._robot_description(settings)
                t0 = time.monotonic()
                with compile_timer() as compiled:
                    with warnings.catch_warnings(record=True) as caught:   # logged once, here
                        warnings.simplefilter("always", ModelWarning)
                        plans = PlanSet(xml, config, PlanSet.plan(xml, config, strict=settings.strict_model))
                    for w in caught:
                        if issubclass(w.category, ModelWarning):
                            self.get_logger().warning(f"robot_description: {w.message}")
                    oracle = self._make_oracle(xml, config, plans, settings)
                    inputs = SensorInputs.for_estimator(plans.main.estimator, config, settings)
                    inputs.warm_up()
                    contacts = ContactState(plans.main.estimator, settings.contact_command_timeout)
            except Exception as exc:  # every failure is reported the same way; nothing was kept
                self.last_error = advice(exc)
                self.get_logger().error(f"configure failed: {self.last_error}")
                return FAILURE
            self._xml, self._config, self._settings = xml, config, settings
            self._plans, self._oracle, self._inputs, self._contacts = plans, oracle, inputs, contacts
            try:
                self._create_publishers()
            except Exception as exc:
                self._release()
                self.last_error = advice(exc)
                self.get_logger().error(f"configure failed: {self.last_error}")
                return FAILURE
            if settings.prepare_fallbacks:
                self._worker.submit(plans.prepare_single_losses)
            self.last_error = ""
            self._state = "inactive"
            est = plans.main.estimator
            seconds = time.monotonic() - t0
            self._configure_time = (seconds, compiled.seconds)      # reported once on /diagnostics
            self.get_logger().info(
                f"configured for '{est.model.name}' ({len(est.joint_names)} joints, contacts "
                f"{', '.join(est.contact_names) or 'none'}) in {seconds:.2f} s ({compiled.seconds:.2f} s compiling "
                f"kernels{'' if compiled.seconds < 1.0 else ': run `rbd-estimator warm-cache` once to avoid it'}): "
                f"{est.report.summary()}" + (f"; preparing plans for {len(config.sensor_names)} single-sensor losses"
                                            if settings.prepare_fallbacks else ""))
            self._log_contact_coverage(plans.main.estimator)
            return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock, self._tick_lock:
            self._inputs.reset()
            self._core.last_missing = self._core.last_subset = None
            self._subset_status = None
            self._contacts = ContactState(self._plans.main.estimator, self._settings.contact_command_timeout)
            self._status = (diag.OK, "active, waiting for joint states")
            self._create_subscriptions()
            if self._settings.tick == "timer":
                self._tick_timer = self._io.create_timer(1.0 / self._settings.rate_hz, self._on_timer)
                self._io_spinner.wake()
            self._active = True
            self._state = "active"
            # what exists now (plans, models, rclpy) lives until deactivate: out of the cyclic garbage
            # collector's way, so that its full collections, which walk every tracked object and hold
            # the GIL for milliseconds, do not stall ticks (undone on deactivate)
            gc.collect()
            gc.freeze()
            return LifecycleNodeMixin.on_activate(self, state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock, self._tick_lock:
            self._active = False
            gc.unfreeze()
            self._destroy_subscriptions()
            self._state = "inactive"
            self._status = (diag.OK, "inactive")
            return LifecycleNodeMixin.on_deactivate(self, state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock:
            self._release()
            self._state = "unconfigured"
            return SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock:
            self._release()
            self._state = "finalized"
            return SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        with self._lock:
            self._release()
            self._state = "unconfigured"
            self.get_logger().error("error during a transition: everything released, back to unconfigured")
            return SUCCESS

    def destroy_node(self) -> None:
        with self._lock:
            self._release()
        self._worker.stop()
        self._io_spinner.stop()
        self._io_thread.join(5.0)
        self._io.destroy_node()
        super().destroy_node()

    def _spin_io(self) -> None:
        """The tick thread. An exception escaping a callback is logged and the thread goes on."""
        while True:
            try:
                self._io_spinner.spin()
                return
            except ExternalShutdownException:
                return
            except Exception as exc:  # noqa: BLE001 - the node must keep ticking
                if not self.context.ok():
                    return
                self.get_logger().error(f"tick thread: unexpected {type(exc).__name__}: {exc}",
                                        throttle_duration_sec=1.0)

    # ================================================================== configure helpers
    def _clear(self) -> None:
        """Forget everything configure built (the objects themselves were destroyed by _release)."""
        self._active = False
        self._xml = self._config = self._settings = self._plans = self._oracle = self._inputs = None
        self._contacts = self._contact_pub = self._contact_enc = None
        self._subset_status = None
        self._pending = None
        self._torque_pub = self._torque_enc = None
        self._wrench_pubs: dict = {}
        self._diag_pub = self._diag_timer = self._tick_timer = None
        self._latency = RollingStats(4096)
        self._core = TickCore(self._on_missing_changed, self._request_plan, self._on_estimate_failure,
                              self._on_subset_changed)
        self._stale_ticks = 0
        self._oracle_checks = 0
        self._oracle_residual = self._oracle_base_residual = float("nan")
        self._oracle_error = ""
        self._configure_time = None        # (seconds, of which compiling) of the last configure
        self._status = (diag.OK, "unconfigured")
        self._missing = frozenset()
        self._tick_on_js = True
        self._jt_from_js = False

    def _release(self) -> None:
        """Destroy every entity configure/activate created and drop the plans (idempotent)."""
        with self._tick_lock:
            self._active = False
            gc.unfreeze()
            self._destroy_subscriptions()
        self._gen += 1
        if self._torque_pub is not None:
            self.destroy_lifecycle_publisher(self._torque_pub)
        for pub, _ in self._wrench_pubs.values():
            self.destroy_lifecycle_publisher(pub)
        if self._contact_pub is not None:
            self.destroy_lifecycle_publisher(self._contact_pub)
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
        if self._diag_pub is not None:
            self.destroy_publisher(self._diag_pub)
        if self._plans is not None:
            self._plans.close()
        if self._pending is not None:
            self._pending.plans.close()
        self._clear()

    def _flat_parameters(self) -> dict:
        return {name: p.value for name, p in self.get_parameters_by_prefix("").items() if p.value is not None}

    def _robot_description(self, settings: NodeSettings) -> str:
        if settings.robot_description.strip():
            return settings.robot_description
        # A private helper node, in no executor, so no executor thread can take the message first.
        reader = rclpy.create_node(f"{self.get_name()}_description_reader", namespace=self.get_namespace(),
                                   context=self.context, start_parameter_services=False,
                                   enable_logger_service=False)
        try:
            ok, msg = wait_for_message(String, reader, settings.robot_description_topic,
                                       qos_profile=DESCRIPTION_QOS, time_to_wait=settings.robot_description_timeout)
        finally:
            reader.destroy_node()
        if not ok or not msg.data.strip():
            raise DescriptionUnavailable(
                f"no robot description: parameter 'robot_description' is empty and nothing arrived on "
                f"'{settings.robot_description_topic}' within {settings.robot_description_timeout:g} s. Set the "
                f"parameter, or start robot_state_publisher (or change 'robot_description_topic'), then "
                f"configure again")
        return msg.data

    def _make_oracle(self, xml, config, plans, settings):
        if settings.oracle_every_n == 0:
            return None
        if plans.main.estimator.has_loops:            # actuator efforts: the URDF alone has no rotors
            self._oracle_error = ("pinocchio cross-check off: the configuration declares loops or the URDF has "
                                  "mimic joints (actuator efforts), which pinocchio's tree model does not couple")
            self.get_logger().info(self._oracle_error)
            return None
        try:
            from .ros.oracle import PinocchioOracle
            est = plans.main.estimator
            return PinocchioOracle(xml, config.floating_base, est.joint_names, est.contact_frames,
                                   config.imu.frame if config.imu else None)
        except Exception as exc:  # noqa: BLE001 - the cross-check is diagnostics: never a reason to fail
            self._oracle_error = f"pinocchio cross-check off: {type(exc).__name__}: {exc}"
            self.get_logger().warning(self._oracle_error)
            return None

    def _create_publishers(self) -> None:
        est = self._plans.main.estimator
        self._torque_pub = self.create_lifecycle_publisher(JointState, "~/joint_torques", OUTPUT_QOS)
        self._torque_enc = cdr.JointTorquesEncoder(est.joint_names)
        self._sync_contact_publishers()
        self._contact_pub = self.create_lifecycle_publisher(JointState, "~/contact_state", OUTPUT_QOS)
        self._diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", OUTPUT_QOS)
        self._diag_timer = self.create_timer(self._settings.diagnostics_period, self._publish_diagnostics,
                                             callback_group=self._diag_group)

    def _sync_contact_publishers(self) -> None:
        est = self._plans.main.estimator
        wanted = dict(zip(est.contact_names, est.contact_frames))
        for name in list(self._wrench_pubs):
            pub, enc = self._wrench_pubs[name]
            if wanted.get(name) != enc.frame_id:
                self.destroy_lifecycle_publisher(pub)
                del self._wrench_pubs[name]
        for name, frame in wanted.items():
            if name not in self._wrench_pubs:
                pub = self.create_lifecycle_publisher(WrenchStamped, f"~/contact_wrenches/{name}", OUTPUT_QOS)
                if self._active:
                    pub.on_activate(None)
                self._wrench_pubs[name] = (pub, cdr.WrenchStampedEncoder(frame))
        self._wrench_list = [self._wrench_pubs[n] for n in est.contact_names]
        self._contact_enc = cdr.ContactStateEncoder(est.contact_names)

    # ================================================================== subscriptions
    def _create_subscriptions(self) -> None:
        s, cfg = self._settings, self._config
        self._subs["joint_states"] = self._io.create_subscription(
            JointState, s.joint_states_topic, self._on_joint_state, TRIGGER_QOS, raw=True)
        self._io_spinner.last_topics = {self._subs["joint_states"].topic_name}   # ticks see their sensors
        self._tick_on_js = s.tick == "joint_states"
        self._jt_from_js = bool(cfg.joint_torque_sensors) and s.joint_torque_source() == s.joint_states_topic
        if cfg.joint_torque_sensors and not self._jt_from_js:
            self._subs["joint_torques"] = self._io.create_subscription(
                JointState, s.joint_torque_source(), self._on_joint_torques, INPUT_QOS, raw=True)
        if any(c.mode == "commanded" for c in cfg.contacts):
            self._subs["contact_command"] = self._io.create_subscription(
                JointState, s.contact_command_topic, self._on_contact_command, TRIGGER_QOS, raw=True)
        self._sync_sensor_subscriptions()

    def _sync_sensor_subscriptions(self) -> None:
        wanted = {("sensor", name, slot.kind, slot.topic): slot for name, slot in self._inputs.slots.items()
                  if slot.kind in (IMU_MESSAGE, WRENCH_MESSAGE, ARRAY_MESSAGE)}
        for key in [k for k in self._subs if k[0] == "sensor" and k not in wanted]:
            self._io.destroy_subscription(self._subs.pop(key))
        for key, slot in wanted.items():
            if key in self._subs:
                continue
            _, name, kind, topic = key
            msg_type = {IMU_MESSAGE: Imu, WRENCH_MESSAGE: WrenchStamped, ARRAY_MESSAGE: Float64MultiArray}[kind]
            self._subs[key] = self._io.create_subscription(msg_type, topic, partial(self._on_sensor, name), INPUT_QOS,
                                                           raw=True)
        self._io_spinner.wake()

    def _destroy_subscriptions(self) -> None:
        for sub in self._subs.values():
            self._io.destroy_subscription(sub)
        self._subs = {}
        if self._tick_timer is not None:
            self._io.destroy_timer(self._tick_timer)
            self._tick_timer = None
        self._io_spinner.wake()

    # ================================================================== input callbacks
    @staticmethod
    def _received(info) -> int:
        """When the middleware received the message (wall clock, ns): freshness does not depend on how
        long the message then waited for the executor."""
        t = info.get("received_timestamp", 0) if info else 0
        return t if t > 0 else time.time_ns()

    def _on_joint_state(self, raw: bytes, info) -> None:
        """A serialized ``JointState`` (the tick trigger by default)."""
        t_in = time.perf_counter()
        with self._tick_lock:
            if not self._active:
                return
            now = self._received(info)
            ready = self._inputs.on_message(0, raw, now) == 1
            if self._jt_from_js:
                self._take_joint_torques(raw, now)
            if ready and self._collector is not None:
                self._collector.add(self._inputs)
            if ready and self._tick_on_js:
                self._tick(now, self._inputs.joint_states.stamp_ns, t_in)

    def _on_joint_torques(self, raw: bytes, info) -> None:
        with self._tick_lock:
            if self._active:
                self._take_joint_torques(raw, self._received(info))

    def _take_joint_torques(self, raw: bytes, now: int) -> None:
        try:
            msg = cdr.decode(cdr.JOINT_STATE, raw)
        except cdr.CdrError:
            return
        self._inputs.on_joint_torques(msg, now)

    def _on_contact_command(self, raw: bytes, info) -> None:
        """A serialized contact command (``JointState``: contact names, position 1 / 0)."""
        try:
            msg = cdr.decode(cdr.JOINT_STATE, raw)
        except cdr.CdrError:
            return
        with self._tick_lock:
            if self._active and self._contacts is not None:
                self._contacts.command(msg.name, msg.position, self._received(info))

    def _on_sensor(self, name: str, raw: bytes, info) -> None:
        """A serialized IMU, wrench or load-cell message of sensor ``name``."""
        with self._tick_lock:
            if self._active and name in self._inputs.slots:
                self._inputs.on_message(self._inputs.slot_index(name), raw, self._received(info))

    def _on_timer(self) -> None:
        t_in = time.perf_counter()
        with self._tick_lock:
            if not self._active:
                return
            now = time.time_ns()
            js = self._inputs.joint_states
            if not js.ready or not js.fresh(now):
                self._stale_ticks += 1
                return
            self._tick(now, js.stamp_ns, t_in)

    # ================================================================== the tick
    def _tick(self, now: int, stamp: int, t_in: float) -> None:
        """The shared tick (:class:`~rbd_estimator.ros.tick.TickCore`, also run by the offline replay),
        then publishing (serialized by :mod:`~rbd_estimator.ros.cdr`, stamped with the joint state's
        header stamp ``stamp``, ns) and the cross-check."""
        if self._pending is not None:
            self._try_swap()
        out = self._core.tick(self._inputs, self._plans, now, self._contacts)
        sec, nsec = divmod(stamp, 1_000_000_000)
        c = self._contacts
        if c is not None and c.names:
            self._contact_pub.publish(self._contact_enc.encode(sec, nsec, c.position, c.source, c.force))
        if out is None:
            return
        plan, r = out
        self._torque_pub.publish(self._torque_enc.encode(sec, nsec, r.tau))
        for (pub, enc), w in zip(self._wrench_list, r.contact_wrenches):
            pub.publish(enc.encode(sec, nsec, w))
        n = self._settings.oracle_every_n
        if self._oracle is not None and n and self._core.outputs % n == 0:
            self._cross_check(plan, r, self._inputs)
        self._latency.add(time.perf_counter() - t_in)

    def _request_plan(self, plans, missing) -> None:
        self._worker.submit(partial(plans.prepare, missing))

    def _on_estimate_failure(self, exc) -> None:
        self.get_logger().warning(f"estimate failed ({type(exc).__name__}: {exc}); nothing published "
                                  f"this tick", throttle_duration_sec=1.0)

    def _on_missing_changed(self, missing, plan, reason) -> None:
        self._missing = missing
        names = ", ".join(sorted(missing))
        if not missing:
            self._status = (diag.OK, "OK")
            self.get_logger().info("all sensors fresh: full sensor set")
        elif plan is not None:
            self._status = (diag.WARN, f"DEGRADED: missing {names}")
            self.get_logger().warning(f"DEGRADED: missing {names}; estimating with the remaining sensors")
        else:
            why = reason or "preparing a plan for the remaining sensors"
            self._status = (diag.ERROR, f"ERROR: missing {names}: no well-posed sensor set ({why})")
            self.get_logger().error(f"missing {names}: publishing nothing until they return ({why})")

    def _on_subset_changed(self, label, reason) -> None:
        if reason is None:
            if self._subset_status is not None:
                self.get_logger().info(f"contacts {label}: well-posed again, publishing")
            self._subset_status = None
        else:
            self._subset_status = (diag.ERROR, f"ERROR: contact subset {label} is ill-posed with these sensors")
            self.get_logger().error(f"contacts {label}: ill-posed with these sensors, publishing nothing until the "
                                    f"contacts change ({reason})")

    def _log_contact_coverage(self, est) -> None:
        """List, at configure, which contact subsets have a plan and why the others do not."""
        if est.switching() is None:
            return
        cov = est.switching().coverage()
        ok = [k for k, r in cov.items() if r is None]
        self.get_logger().info(f"contact subsets planned ({len(ok)} of {len(cov)}): {', '.join(ok)}")
        for k, r in cov.items():
            if r is not None:
                self.get_logger().warning(f"contact subset {k} is ill-posed with these sensors (ERROR, no output, "
                                          f"while it lasts): {r}")

    def _cross_check(self, plan, r, inp) -> None:
        try:
            est = plan.estimator
            base_acc = r.base_acceleration if est.model.floating_base else None
            joint, base = self._oracle.check(inp.q, inp.dq, inp.ddq, inp.imu, base_acc,
                                             r.contact_wrenches, r.tau)
        except Exception as exc:  # the cross-check must never stop the tick
            self._oracle_error = f"{type(exc).__name__}: {exc}"
            return
        self._oracle_checks += 1
        self._oracle_residual, self._oracle_base_residual = joint, base

    # ================================================================== reconfiguration
    def _on_set_parameters(self, params) -> SetParametersResult:
        with self._lock:
            try:
                return self._check_parameters(params)
            except Exception as exc:  # noqa: BLE001 - a refusal, never an exception into rclpy
                return SetParametersResult(successful=False, reason=f"unexpected {type(exc).__name__}: {exc}")

    def _check_parameters(self, params) -> SetParametersResult:
        names = {p.name for p in params}
        active = self._state == "active"
        if active and names & NEEDS_CONFIGURE:
            return _refuse(f"{', '.join(sorted(names & NEEDS_CONFIGURE))} can only change through cleanup and "
                           f"configure: deactivate, cleanup, set it, then configure and activate again")
        if active and names & NEEDS_REACTIVATE:
            return _refuse(f"{', '.join(sorted(names & NEEDS_REACTIVATE))} take effect on activate: "
                           f"deactivate, set, activate")
        flat = self._flat_parameters()
        for p in params:
            if p.type_ == Parameter.Type.NOT_SET:
                flat.pop(p.name, None)
            else:
                flat[p.name] = p.value
        try:
            config = SensorConfig.from_parameters(flat, NODE_KEYS)
            settings = NodeSettings.from_parameters(config.node)
            settings.check_ft_offsets(config)
        except ConfigError as exc:
            return _refuse(str(exc))
        if self._plans is None:           # unconfigured: takes effect at configure
            return SetParametersResult(successful=True)
        if names & NEEDS_CONFIGURE:
            self.get_logger().info(f"{', '.join(sorted(names & NEEDS_CONFIGURE))} changed: takes effect at "
                                   f"the next configure (cleanup, then configure)")
        if _sensor_part(config) == _sensor_part(self._config):
            self._apply_live(config, settings)
            return SetParametersResult(successful=True)
        try:
            t0 = time.monotonic()
            with warnings.catch_warnings():   # the model's warnings were logged at configure
                warnings.simplefilter("ignore", ModelWarning)
                plans = PlanSet(self._xml, config, PlanSet.plan(self._xml, config, strict=settings.strict_model))
            oracle = self._make_oracle(self._xml, config, plans, settings)
        except Exception as exc:
            return _refuse(f"{advice(exc)}; the current sensor set stays in use")
        self._gen += 1
        pending = _Pending(self._gen, config, settings, plans, oracle)
        if self._pending is not None:
            self._pending.plans.close()
        self.get_logger().info(f"new sensor set planned in {time.monotonic() - t0:.2f} s: "
                               f"{plans.main.estimator.report.summary()}")
        if active:
            self._pending = pending            # swapped in at the start of the next tick
        else:
            self._apply(pending)
        if settings.prepare_fallbacks:
            self._worker.submit(plans.prepare_single_losses)
        return SetParametersResult(successful=True)

    def _apply_live(self, config, settings) -> None:
        """Node-only parameters that apply at once (filter cutoff, timeouts, cross-check)."""
        old = self._settings
        with self._tick_lock:
            self._config, self._settings = config, settings
            self._inputs.configure(config, settings)
        if settings.oracle_every_n and self._oracle is None and not old.oracle_every_n:
            self._oracle = self._make_oracle(self._xml, config, self._plans, settings)
        if settings.diagnostics_period != old.diagnostics_period and self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = self.create_timer(settings.diagnostics_period, self._publish_diagnostics,
                                                 callback_group=self._diag_group)

    def _try_swap(self) -> None:
        if not self._lock.acquire(blocking=False):
            return                              # a reconfiguration is being validated: next tick
        try:
            pending, self._pending = self._pending, None
            if pending is not None and pending.gen == self._gen:
                self._apply(pending)
        finally:
            self._lock.release()

    def _apply(self, pending: _Pending) -> None:
        old = self._plans
        self._config, self._settings = pending.config, pending.settings
        self._plans, self._oracle = pending.plans, pending.oracle
        self._inputs.configure(pending.config, pending.settings)
        self._contacts = ContactState(pending.plans.main.estimator, pending.settings.contact_command_timeout)
        self._core.last_subset = None
        self._log_contact_coverage(pending.plans.main.estimator)
        self._sync_contact_publishers()
        if self._active:
            self._sync_sensor_subscriptions()
        self._core.last_missing = None
        if old is not None and old is not pending.plans:
            old.close()
        self.get_logger().info("reconfigured: the new sensor set is in use")

    # ================================================================== offset calibration
    def _on_calibrate(self, request, response):
        """``~/calibrate_ft_offsets`` (see :mod:`rbd_estimator.ros.calibration` for the request and
        response): collect samples at the next ticks, refuse if a joint moves, fit the offsets, store
        the identified ones in the ``ft_offsets.<sensor>`` parameters (applied from the next sample on)."""
        try:
            ok, text = self._calibrate(request)
        except Exception as exc:  # noqa: BLE001 - an answer, never an exception into rclpy
            ok, text = False, f"unexpected {type(exc).__name__}: {exc}"
        if not ok:
            self.get_logger().warning(f"calibrate_ft_offsets refused: {text}")
        response.results = [SetParametersResult(successful=ok, reason=text)]
        return response

    def _calibrate(self, request):
        from .estimation.calibration import calibrate_ft_offsets
        try:
            args = parse_request({p.name: Parameter.from_parameter_msg(p).value for p in request.parameters})
        except ConfigError as exc:
            return False, str(exc)
        with self._tick_lock:
            if self._state != "active":
                return False, f"the node is {self._state}: calibrate while it is active (receiving sensor data)"
            if not self._config.ft_sensors:
                return False, "no force-torque sensor is configured: nothing to calibrate"
            if self._collector is not None:
                return False, "a calibration is already running"
            col = SampleCollector(args["samples"], args["max_joint_velocity"], self._inputs.joint_names,
                                  args["imu_angular_acceleration"] and self._config.imu is not None)
            self._collector = col
            est = self._plans.main.estimator
        try:
            finished = col.done.wait(args["timeout"])
        finally:
            with self._tick_lock:
                self._collector = None
        if col.refusal:
            return False, col.refusal
        if not finished:
            return False, (f"only {len(col.samples)} of {args['samples']} samples within {args['timeout']:g} s: are "
                           f"the joint states and every sensor being published?")
        try:
            result = calibrate_ft_offsets(est, col.samples, args["contacts"],
                                          imu_angular_acceleration=True if col.zero_alpha else None)
        except Exception as exc:  # noqa: BLE001 - unknown contact, bad samples: say so
            return False, f"calibration failed: {type(exc).__name__}: {exc}"
        applied = [s.name for s in result.sensors if s.ok]
        if applied:
            params = [Parameter(f"ft_offsets.{n}", value=[float(x) for x in result[n].offset]) for n in applied]
            res = self.set_parameters_atomically(params)
            if not res.successful:
                return False, f"offsets computed but not stored: {res.reason}"
        out = result.to_dict()
        out["applied"] = applied
        self.get_logger().info(f"force-torque offsets calibrated; stored for {', '.join(applied) or 'no sensor'}:\n"
                               f"{result.summary()}")
        return True, json.dumps(out)

    # ================================================================== diagnostics
    def _publish_diagnostics(self) -> None:
        pub = self._diag_pub
        if pub is None:
            return
        level, message = self._status if self._state == "active" else (diag.OK, self._state)
        if self._state == "active" and self._subset_status is not None:
            level, message = max(level, self._subset_status[0]), self._subset_status[1] + "; " + message
        values = {"state": self._state, "status": message}
        plans, inp = self._plans, self._inputs
        if plans is not None:
            plan = self._core.plan_in_use or plans.main
            values["active_plan"] = "full" if not plan.missing else "without " + ", ".join(sorted(plan.missing))
        core = self._core
        values.update(ticks=core.ticks, outputs=core.outputs, ticks_without_output=core.no_output,
                      estimate_failures=core.estimate_failures, nonfinite_outputs=core.nonfinite_outputs,
                      stale_timer_ticks=self._stale_ticks)
        lat = self._latency.summary()
        values.update(tick_latency_median_ms=lat["median"] * 1e3, tick_latency_p99_ms=lat["p99"] * 1e3,
                      tick_latency_max_ms=lat["max"] * 1e3)
        if plans is not None:
            rep = plans.main.estimator.report
            values.update(plan=rep.summary(), plan_unknowns=rep.n_unknowns, plan_equations=rep.n_equations,
                          plan_nnz=rep.nnz, plan_fill_in=rep.fill_in, plan_flops=rep.flops)
            values.update({f"fallback/{k}": v for k, v in plans.fallback_summary().items()})
        tol = self._settings.oracle_tolerance if self._settings is not None else float("nan")
        values.update(oracle_residual=self._oracle_residual, oracle_base_residual=self._oracle_base_residual,
                      oracle_checks=self._oracle_checks, oracle_tolerance=tol)
        if self._oracle_error:
            values["oracle_error"] = self._oracle_error
        c = self._contacts
        if c is not None and c.switchable:
            values.update({"contacts/subset": c.label(c.mask), "contacts/switches": c.switches,
                           "contacts/ill_posed_ticks": core.ill_posed_subset_ticks,
                           "contacts/unknown_commands": c.unknown_commands})
            values.update({f"contacts/time_s/{k}": v for k, v in sorted(c.time_in.items())})
            values.update({f"contacts/ill_posed/{k}": r for k, r in c.est.coverage().items() if r is not None})
        if self._configure_time is not None:                       # once after each configure
            values["configure_seconds"], values["configure_compile_seconds"] = self._configure_time
            self._configure_time = None
        if self._state == "active" and self._oracle_residual > tol:
            level = max(level, diag.WARN)
            message += f"; oracle residual {self._oracle_residual:.3g} N·m above tolerance {tol:g}"
        if inp is not None:
            now = time.time_ns()
            for name, slot in [("joint_states", inp.joint_states)] + list(inp.slots.items()):
                values[f"{name}/fresh"] = slot.fresh(now)
                values[f"{name}/age_ms"] = slot.age(now) * 1e3
                values[f"{name}/received"] = slot.received
                values[f"{name}/rejected"] = sum(slot.rejected.values())
                for reason, count in sorted(slot.rejected.items()):
                    values[f"{name}/rejected/{reason}"] = count
        hw = plans.main.estimator.model.name if plans is not None else ""
        name = f"rbd_estimator: {self.get_fully_qualified_name()}"
        try:
            pub.publish(diag.diagnostic_array(self.get_clock().now().to_msg(), name, hw, level, message, values))
        except Exception:  # noqa: BLE001 - publisher destroyed by a concurrent cleanup
            pass


def _refuse(reason: str) -> SetParametersResult:
    return SetParametersResult(successful=False, reason=reason)


def spin_resuming(executor) -> None:
    """``executor.spin()``, resumed when a lifecycle transition destroyed a publisher while another
    executor thread was putting its events into a wait set (rclpy raises ``InvalidHandle`` from the
    wait-set construction then; the next wait set no longer has the publisher). Returns when the
    executor's context shuts down. Used by :func:`main`, the demo client and the tests' executors."""
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
