"""The estimator at run time, without ROS: one :class:`Session` that the node and the replay drive.

A session holds everything a configured estimator needs between two messages: the plans
(:class:`~rbd_estimator.runtime.plans.PlanSet`), the input state
(:class:`~rbd_estimator.runtime.inputs.SensorInputs`), the contact state, the tick
(:class:`~rbd_estimator.runtime.tick.TickCore`), the output encoders, the pinocchio cross-check, an
offset calibration being collected, the status and the diagnostics snapshot. Its drivers only move
bytes:

* :class:`rbd_estimator.node.EstimatorNode` subscribes to :meth:`Session.inputs` (each an
  :class:`Input`: topic, ROS type, handler), calls the handler with the serialized message and its
  receipt time, and publishes what the session emits (:attr:`Session.emit`: output topic, time,
  serialized message);
* :class:`rbd_estimator.replay.Replayer` does the same with a recording's messages and writes what
  is emitted to a bag.

So a message goes through literally the same code in both. Threads: the handlers and :meth:`tick`
run on one thread (the node's tick thread); :meth:`prepare` (planning a new sensor set) runs on
any other thread while ticks go on, and :meth:`swap` puts its result in use between two ticks
(references and the carried-over input samples: no planning).
Events worth a log line are handed to :attr:`log` (the node queues them for its executor thread:
the tick thread never waits for logging).

Times are nanoseconds on the receiving clock (``now``) or header stamps (``stamp``).
"""
from __future__ import annotations

import time
from functools import partial

from ..errors import ConfigError
from . import cdr
from .calibration import SampleCollector, fit_request, parse_request
from .contact_state import ContactState
from .input_core import CDR_ERROR
from .inputs import SensorInputs
from .params import NodeSettings
from .plans import PlanSet, gil_yielding, without
from .stats import RollingStats
from .faults import FaultMonitor
from . import offsets
from .reporting import ERROR, OK, WARN, coverage_lines, diagnostics
from .tick import TickCore
from .sensor_sets import (FAULTS_TOPIC, MESSAGE_OF, VARIANCE_TOPIC, Input, Output, Pending, encoders_for,
                          make_oracle, plan_set, problem_key, uncertainty_of)

#: estimators kept for later sensor sets (:meth:`Session.prepare`)
LIBRARY = 64


class Session:
    """One configured estimator at run time (see the module docstring)."""

    def __init__(self, xml: str, config, settings: NodeSettings | None = None, cross_check: bool = False,
                 log=None, planner=None):
        """Plan ``config`` for the robot description ``xml`` (raises ModelError / ConfigError /
        IllPosedError); ``settings``: the node-only parameters (default: from ``config.node``);
        ``cross_check``: build the pinocchio cross-check (``oracle_every_n`` > 0); ``log(level,
        text)``: where events go (default: nowhere); ``planner``: see :func:`.sensor_sets.plan_set`."""
        settings = settings if settings is not None else NodeSettings.from_parameters(config.node)
        settings.check_ft_offsets(config)
        config = settings.estimator_config(config)
        self.xml = xml
        self.log = log or (lambda level, text: None)
        self.emit = None                    # emit(output topic, now, bytes), set by the driver
        self.config, self.settings = config, settings
        self.plans = plan_set(xml, config, settings, planner=planner)
        est = self.plans.main.estimator
        self.inputs = SensorInputs.for_estimator(est, config, settings)
        self.inputs.warm_up()
        #: runs a planning job (a sensor loss without a plan yet): at once by default (the replay);
        #: the node hands it to its planning thread
        self.run_job = lambda job: job()
        self.core = TickCore(self._on_missing_changed, lambda plans, missing: self.run_job(partial(plans.prepare, missing)),
                             self._on_estimate_failure, self._on_subset_changed)
        self._faults_shown = ()               # the excluded sensors last emitted on ~/sensor_faults
        self.offsets_encoder, self._offsets_key = None, None
        self._sync_faults()
        self.latency = RollingStats(4096)
        self.condition = RollingStats(4096)   # the ticks' condition estimates (Estimate.condition)
        self.oracle, self.oracle_error = make_oracle(xml, config, est, settings) if cross_check else (None, "")
        self.oracle_checks = 0
        self.oracle_residual = self.oracle_base_residual = float("nan")
        self.collector = None                # an offset calibration collecting samples
        self.stale_timer_ticks = 0
        self.swaps = 0
        self._library: dict = {}            # problem_key(config) → an estimator planned before
        self._throttle: dict = {}
        contacts = ContactState(est, settings.contact_command_timeout)
        self._adopt(config, settings, self.plans, contacts, encoders_for(est, contacts))
        self.reset()

    # ------------------------------------------------------------------ configuration
    def _adopt(self, config, settings, plans, contacts, encoders) -> None:
        est = plans.main.estimator
        self.config, self.settings, self.plans, self.contacts = config, settings, plans, contacts
        self.joint_names, self.contact_names = est.joint_names, est.contact_names
        self.tick_on_js = settings.tick == "joint_states"
        (self.torque_encoder, self.wrench_encoders, self.state_encoder, self.variance_encoder,
         self.covariance_encoders) = encoders
        self.wrench_topics = [f"~/contact_wrenches/{c}" for c in est.contact_names]
        self.covariance_topics = [f"{t}/covariance" for t in self.wrench_topics][:len(self.covariance_encoders)]

    def reset(self) -> None:
        """Forget every sample (activate); the counters stay."""
        self.inputs.reset()
        if self.core.faults is not None:
            self.core.faults.restart()
        self.core.offset_delay.restart()
        self.core.last_missing = self.core.last_subset = None
        self.status = (OK, "active, waiting for joint states")
        self.subset_status = None
        self.contacts = ContactState(self.plans.main.estimator, self.settings.contact_command_timeout)

    def summary(self) -> str:
        """One line on the estimator in use (robot, joints, contacts, plan)."""
        est = self.estimator
        return (f"'{est.model.name}' ({len(est.joint_names)} joints, contacts {', '.join(est.contact_names) or 'none'}):"
                f" {est.report.summary()}")

    @property
    def estimator(self):
        """The estimator of the full sensor set."""
        return self.plans.main.estimator

    def inputs_needed(self, config=None, settings=None) -> list:
        """The subscriptions of the sensor set in use (or of ``config``/``settings``, planned but not
        yet in use: a sensor's handler takes its messages once its set is swapped in)."""
        config, s = config or self.config, settings or self.settings
        out = [Input(("joint_states",), s.joint_states_topic, cdr.JOINT_STATE, self.on_joint_state, True)]
        if config.joint_torque_sensors and s.joint_torque_source() != s.joint_states_topic:
            out.append(Input(("joint_torques",), s.joint_torque_source(), cdr.JOINT_STATE, self.on_joint_torques))
        if any(c.mode == "commanded" for c in config.contacts):
            out.append(Input(("contact_command",), s.contact_command_topic, cdr.JOINT_STATE, self.on_contact_command,
                             True))
        for name, (decoder, topic) in SensorInputs.topics(config, s).items():
            if decoder in MESSAGE_OF:
                out.append(Input(("sensor", name, decoder, topic), topic, MESSAGE_OF[decoder],
                                 partial(self.on_sensor, name)))
        return out

    def outputs(self, plans=None) -> list:
        """The topics the session emits on with the set in use (or with ``plans``)."""
        est = (plans or self.plans).main.estimator
        out = [Output("~/joint_torques", cdr.JOINT_STATE), Output("~/contact_state", cdr.JOINT_STATE)]
        out += [Output(f"~/contact_wrenches/{c}", cdr.WRENCH_STAMPED) for c in est.contact_names]
        variance, covariance = uncertainty_of(est)
        if variance:
            out.append(Output(VARIANCE_TOPIC, cdr.JOINT_STATE))
        if covariance:
            out += [Output(f"~/contact_wrenches/{c}/covariance", cdr.FLOAT64_MULTI_ARRAY) for c in est.contact_names]
        if offsets.tracks(est.config):
            out.append(Output(offsets.OFFSETS_TOPIC, cdr.JOINT_STATE))
        return out + [Output(FAULTS_TOPIC, cdr.STRING)]

    def check(self, config, settings) -> bool:
        """Whether ``config`` changes the estimation problem (a new plan is needed); if it changes
        only node-only parameters, they are applied now (filter cutoff, timeouts, cross-check
        period: call on the tick thread or with it held)."""
        config = settings.estimator_config(config)
        if problem_key(config) != problem_key(self.config):
            return True
        old = self.settings
        self.config, self.settings = config, settings
        self.inputs.configure(config, settings)
        self._sync_faults()
        if settings.oracle_every_n and self.oracle is None and not old.oracle_every_n:
            self.oracle, self.oracle_error = make_oracle(self.xml, config, self.estimator, settings)
        return False

    def prepare(self, config, settings) -> Pending:
        """Plan ``config`` beside the running plan (any thread but the tick's); raises ModelError /
        ConfigError / IllPosedError. Every estimator planned so far for this robot description (the
        sets in use before, their fallbacks) is reused where its sensor set comes back: dropping a
        sensor takes its prepared fallback, restoring it takes the set it left. A sensor added to the
        set in use gets, until its first sample, the plan in use (the estimate goes on while it joins)."""
        self._remember(self.plans)
        config = settings.estimator_config(config)
        est = self._library.get(problem_key(config))
        with gil_yielding():
            plans = PlanSet(self.xml, config, est) if est is not None else plan_set(self.xml, config, settings, True)
        added = frozenset(config.sensor_names) - frozenset(self.config.sensor_names)
        losses = {frozenset((name,)) for name in config.sensor_names} | ({added} if added else set())
        for missing in losses:                  # single losses, and the added sensors (the set in use)
            known = self._library.get(problem_key(without(config, missing)))
            if known is not None:
                plans.adopt(missing, known)
        est = plans.main.estimator
        oracle, why = make_oracle(self.xml, config, est, settings)
        contacts = ContactState(est, settings.contact_command_timeout)
        inputs = SensorInputs.for_estimator(est, config, settings)
        return Pending(config, settings, plans, oracle, why, inputs, contacts, encoders_for(est, contacts))

    def _remember(self, plans: PlanSet) -> None:
        """Keep the estimators of ``plans`` for later sets (at most :data:`LIBRARY` of them)."""
        for est in plans.estimators():
            self._library[problem_key(est.config)] = est
        while len(self._library) > LIBRARY:
            self._library.pop(next(iter(self._library)))

    def swap(self, pending: Pending) -> None:
        """Use the set ``pending`` from the next tick on: references, and the latest samples of the
        sensors that stay carried over (between two ticks: on the tick thread, or with it held)."""
        old = self.plans
        before = frozenset(self.config.sensor_names)
        self._adopt(pending.config, pending.settings, pending.plans, pending.contacts, pending.encoders)
        self.oracle, self.oracle_error = pending.oracle, pending.oracle_error
        pending.inputs.take_over(self.inputs)
        self.inputs = pending.inputs
        self.core.joining(frozenset(pending.config.sensor_names) - before, self.inputs)
        self.core.last_missing = self.core.last_subset = None
        if self.core.faults is not None:           # a new sensor set: every sensor is in again
            self.core.faults.reset(self.inputs)
        self._sync_faults()
        self.swaps += 1
        if old is not pending.plans:
            old.close()
        self.log(OK, "reconfigured: the new sensor set is in use")

    def _sync_faults(self) -> None:
        """The fault monitor of the settings (``fault_false_alarm_rate``; 0: none), its exclusions
        applied to the inputs (which a reconfiguration of the inputs clears)."""
        s, core = self.settings, self.core
        if not s.fault_false_alarm_rate:
            if core.faults is not None:
                core.faults.reset(self.inputs)
            core.faults = None
            self._sync_offsets()
            return
        if core.faults is None or core.faults.alpha != s.fault_false_alarm_rate:
            flagged = core.faults.flagged if core.faults is not None else {}
            core.faults = FaultMonitor(s.fault_false_alarm_rate, s.fault_recovery_time, self._say, s.fault_start_delay)
            core.faults.flagged.update(flagged)
        core.faults.recovery_ns = int(round(s.fault_recovery_time * 1e9))
        core.faults.delay.set(s.fault_start_delay)
        for name in core.faults.flagged:
            self.inputs.exclude(name)
        self._sync_offsets()

    def _sync_offsets(self) -> None:
        """The offset tracker of the set in use (:mod:`.offsets`: state kept across reconfigurations; the
        same tracker while the estimation problem and the calibrated offsets stay), its start delay, and
        the fault monitor's χ² with the tracked offsets explained."""
        core, key = self.core, (problem_key(self.config), self.settings.ft_offsets)
        core.offset_delay.set(self.settings.offset_start_delay)
        if key != self._offsets_key:
            self._offsets_key = key
            core.offsets = offsets.tracker_for(self.config, self.settings, core.offsets)
            self.offsets_encoder = offsets.encoder_for(core.offsets)
        if core.faults is not None:
            core.faults.explain = core.offsets.explained if core.offsets is not None else None

    # ------------------------------------------------------------------ input handlers
    def on_joint_state(self, raw, now: int) -> int:
        """A serialized ``JointState`` (the tick trigger with ``tick: joint_states``)."""
        t_in = time.perf_counter()
        code = self.inputs.on_message(0, raw, now)
        if code == 1 and self.collector is not None:
            self.collector.add(self.inputs)
        if code == 1 and self.tick_on_js:
            self.tick(now, self.inputs.joint_states.stamp_ns, t_in)
        return code

    def on_joint_torques(self, raw, now: int) -> int:
        """The ``effort`` field of a serialized ``JointState``: the joint-torque sensors."""
        msg = _joint_state(raw)
        return CDR_ERROR if msg is None else int(self.inputs.on_joint_torques(msg, now))

    def on_contact_command(self, raw, now: int) -> int:
        """A serialized contact command (``JointState``: contact names, position 1 / 0)."""
        msg = _joint_state(raw)
        if msg is None:
            return CDR_ERROR
        self.contacts.command(msg.name, msg.position, now)
        return 1

    def on_sensor(self, name: str, raw, now: int) -> int:
        """A serialized IMU, wrench or float64-array message of sensor ``name`` (ignored while the
        sensor's set is not in use yet)."""
        slot = self.inputs.slots.get(name)
        return 0 if slot is None else self.inputs.on_message(slot.index, raw, now)

    def on_timer(self, now: int) -> None:
        """A timer tick (``tick: timer``) at ``now``: estimates from fresh joint states only."""
        js = self.inputs.joint_states
        if not js.ready or not js.fresh(now):
            self.stale_timer_ticks += 1
            return
        self.tick(now, js.stamp_ns)

    # ------------------------------------------------------------------ the tick
    def tick(self, now: int, stamp: int, t_in: float | None = None):
        """Estimate (:meth:`TickCore.tick`), emit ``~/contact_state`` (every
        tick, switchable contacts), the joint torques and the contact wrenches (stamped ``stamp``),
        cross-check. Returns ``(plan, result)`` or None."""
        out = self.core.tick(self.inputs, self.plans, now, self.contacts)
        emit = self.emit
        sec, nsec = divmod(stamp, 1_000_000_000)
        faults = self.core.faults
        if faults is not None and emit is not None and tuple(faults.flagged) != self._faults_shown:
            self._faults_shown = tuple(faults.flagged)
            emit(FAULTS_TOPIC, now, cdr.encode_string(", ".join(sorted(faults.flagged))))
        if self.state_encoder is not None and emit is not None:
            c = self.contacts
            emit("~/contact_state", now, self.state_encoder.encode(sec, nsec, c.position, c.source, c.force))
        if out is None:
            return None
        plan, r = out
        self.condition.add(r.condition)
        if emit is not None:
            emit("~/joint_torques", now, self.torque_encoder.encode(sec, nsec, r.tau))
            for topic, enc, w in zip(self.wrench_topics, self.wrench_encoders, r.contact_wrenches):
                emit(topic, now, enc.encode(sec, nsec, w))
            if self.variance_encoder is not None:
                emit(VARIANCE_TOPIC, now, self.variance_encoder.encode(sec, nsec, r.tau_variance))
            for topic, enc, C in zip(self.covariance_topics, self.covariance_encoders,
                                     r.contact_covariance if self.covariance_encoders else ()):
                emit(topic, now, enc.encode(sec, nsec, C.reshape(36)))
            if self.offsets_encoder is not None:
                tr = self.core.offsets
                emit(offsets.OFFSETS_TOPIC, now, self.offsets_encoder.encode(sec, nsec, tr.offsets, tr.variance))
        n = self.settings.oracle_every_n
        if self.oracle is not None and n and self.core.outputs % n == 0:
            self._cross_check(plan, r)
        if t_in is not None:
            self.latency.add(time.perf_counter() - t_in)
        return out

    def _cross_check(self, plan, r) -> None:
        inp = self.inputs
        try:
            base_acc = r.base_acceleration if plan.estimator.model.floating_base else None
            ddq = r.joint_acceleration(inp.ddq)     # the estimated q̈ when they are measured
            joint, base = self.oracle.check(inp.q, inp.dq, ddq, inp.imu, base_acc, r.contact_wrenches, r.tau)
        except Exception as exc:  # noqa: BLE001 - the cross-check must never stop the tick
            self.oracle_error = f"{type(exc).__name__}: {exc}"
            return
        self.oracle_checks += 1
        self.oracle_residual, self.oracle_base_residual = joint, base

    # ------------------------------------------------------------------ offset calibration
    def start_calibration(self, values: dict) -> tuple:
        """A force-torque offset calibration request (:func:`~.calibration.parse_request`):
        ``(collector, arguments)`` (the tick hands it samples from now on), or ``(None, why not)``.
        Call with the tick thread held."""
        try:
            args = parse_request(values)
        except ConfigError as exc:
            return None, str(exc)
        if self.collector is not None:
            return None, "a calibration is already running"
        refusal = SampleCollector.refusal(self.config)
        if refusal:
            return None, refusal
        self.collector = SampleCollector.for_inputs(args, self.inputs, self.config)
        return self.collector, args

    def finish_calibration(self, collector, args: dict) -> tuple:
        """``(ok, why not, CalibrationResult)`` from what ``collector`` gathered."""
        return fit_request(self.estimator, collector, args)

    # ------------------------------------------------------------------ events (tick thread)
    def _say(self, level: int, text: str, key=None, every: float = 0.0) -> None:
        if every:
            t = time.monotonic()
            if t - self._throttle.get(key, -1e9) < every:
                return
            self._throttle[key] = t
        self.log(level, text)

    def _on_estimate_failure(self, exc) -> None:
        self._say(WARN, f"estimate failed ({type(exc).__name__}: {exc}); nothing published this tick",
                  "estimate", 1.0)

    def _on_missing_changed(self, missing, plan, reason) -> None:
        faulty = sorted(missing.intersection(self.core.faults.flagged)) if self.core.faults is not None else []
        lost = sorted(missing.difference(faulty))
        names = ", ".join(["missing " + ", ".join(lost)] * bool(lost)
                          + ["excluded as inconsistent " + ", ".join(faulty)] * bool(faulty))
        if not missing:
            self.status = (OK, "OK")
            self._say(OK, "all sensors fresh: full sensor set")
        elif plan is not None:
            self.status = (WARN, f"DEGRADED: {names}")
            self._say(WARN, f"DEGRADED: {names}; estimating with the remaining sensors")
        else:
            why = reason or "preparing a plan for the remaining sensors"
            self.status = (ERROR, f"ERROR: {names}: no well-posed sensor set ({why})")
            self._say(ERROR, f"{names}: publishing nothing until they return ({why})")

    def _on_subset_changed(self, label, reason) -> None:
        if reason is None:
            if self.subset_status is not None:
                self._say(OK, f"contacts {label}: well-posed again, publishing")
            self.subset_status = None
        else:
            self.subset_status = (ERROR, f"ERROR: contact subset {label} is ill-posed with these sensors")
            self._say(ERROR, f"contacts {label}: ill-posed with these sensors, publishing nothing until the "
                             f"contacts change ({reason})")

    def coverage_lines(self) -> list:
        """:func:`.reporting.coverage_lines` of this session."""
        return coverage_lines(self)

    # ------------------------------------------------------------------ reporting
    def input_counts(self) -> tuple:
        """``({input: accepted}, {input: {reason: rejected}})`` for the joint states and every sensor."""
        inp = self.inputs
        pairs = [("joint_states", inp.joint_states)] + list(inp.slots.items())
        return {k: s.received for k, s in pairs}, {k: dict(s.rejected) for k, s in pairs}

    def diagnostics(self, now: int) -> tuple:
        """:func:`.reporting.diagnostics` of this session at ``now`` (ns)."""
        return diagnostics(self, now)

    def close(self) -> None:
        """Release the plans."""
        self.plans.close()


def _joint_state(raw):
    """A decoded ``JointState`` (names and arrays), or None for bytes that do not decode."""
    try:
        return cdr.decode(cdr.JOINT_STATE, raw)
    except cdr.CdrError:
        return None


__all__ = ["Input", "Output", "Pending", "Session", "make_oracle", "plan_set", "OK", "WARN", "ERROR"]
