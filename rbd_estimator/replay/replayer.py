"""The replay's tick machinery: :class:`Replayer` feeds a recording's messages, in order, to the
node's own input handling and tick (:mod:`rbd_estimator.replay` describes the replay)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..estimation import SensorConfig
from ..estimation.contacts import subset_label
from ..runtime.input_core import CDR_ERROR
from ..runtime.offsets import OFFSETS_TOPIC
from ..runtime.session import FAULTS_TOPIC, VARIANCE_TOPIC, Session
from .segments import COV, TAU, WRENCH, EstimateSegments
from .ticklog import TickLog


class ReplayError(RuntimeError):
    """The replay cannot start (input bag unreadable, parameters, robot description)."""


@dataclass
class ReplaySummary:
    """What a replay did (see :meth:`text`)."""
    input: str
    output: str
    messages_read: int = 0
    messages_written: int = 0
    ticks: int = 0
    estimates: int = 0
    stale_timer_ticks: int = 0
    received: dict = field(default_factory=dict)      # input → accepted samples
    rejected: dict = field(default_factory=dict)      # input → {reason: count}
    rejected_joints: str = ""                          # the joints at fault in the latest rejected joint state
    undecodable: dict = field(default_factory=dict)   # topic → messages whose bytes did not decode
    bag_seconds: float = 0.0
    wall_seconds: float = 0.0
    loop_seconds: float = 0.0                          # the message loop only (without planning)
    salvage: str = ""                                  # set when the input was read by the salvage scanner
    error: str = ""

    @property
    def speed(self) -> float:
        """Recorded seconds replayed per wall-clock second of the message loop (reading, ticks, writing;
        without the planning at start)."""
        return self.bag_seconds / self.loop_seconds if self.loop_seconds > 0 else float("nan")

    def text(self) -> str:
        lines = [f"replayed {self.input} -> {self.output}",
                 f"  messages read: {self.messages_read}, written: {self.messages_written}",
                 f"  ticks: {self.ticks}, estimates written: {self.estimates}"
                 + (f", stale timer ticks: {self.stale_timer_ticks}" if self.stale_timer_ticks else ""),
                 f"  {self.bag_seconds:.3f} s of recording replayed in {self.loop_seconds:.2f} s "
                 f"({self.speed:.1f}x real time; {self.wall_seconds:.2f} s in all, with planning)"]
        lines.append("  samples accepted / rejected per input:")
        for name in self.received:
            rej = self.rejected.get(name, {})
            total = sum(rej.values())
            why = " (" + ", ".join(f"{k}: {v}" for k, v in sorted(rej.items())) + ")" if total else ""
            lines.append(f"    {name:<24}{self.received[name]:>8} / {total}{why}")
            if name == "joint_states" and self.rejected_joints:
                lines.append(f"      joint names: {self.rejected_joints}")
        for topic, n in self.undecodable.items():
            lines.append(f"  {topic}: {n} messages could not be decoded (skipped)")
        if self.salvage:
            lines.append(f"  NOTE: {self.salvage}")
        if self.error:
            lines.append(f"  ERROR: {self.error}")
        return "\n".join(lines)


def resolve(topic: str, namespace: str, node_name: str) -> str:
    """A topic name as the node would resolve it in ``namespace`` (``~`` is the node's private one)."""
    ns = "/" + namespace.strip("/") if namespace.strip("/") else ""
    if topic.startswith("~"):
        return f"{ns}/{node_name}" + topic[1:]
    if topic.startswith("/"):
        return topic
    return f"{ns}/{topic}"


class Replayer:
    """The node's session over recorded messages (see the module docstring).

    ``config`` is a :class:`SensorConfig` whose ``node`` part holds the node parameters (as
    :meth:`SensorConfig.from_yaml` reads them from the node's parameter file). Every message goes
    through the :class:`~rbd_estimator.runtime.session.Session` handlers the node calls; the
    steady state of a recording runs in the session's compiled batch loop
    (:mod:`~rbd_estimator.runtime.batch`). ``planner``: where the estimator comes from
    (:func:`~rbd_estimator.runtime.sensor_sets.plan_set`).
    """

    def __init__(self, xml: str, config: SensorConfig, namespace: str = "/", node_name: str = "rbd_estimator",
                 collect: bool = False, flush=None, planner=None):
        self.session = s = Session(xml, config, planner=planner)
        self.config, self.settings = config, s.settings
        self.joint_names, self.contact_names = s.joint_names, s.contact_names
        self.namespace, self.node_name = namespace, node_name
        r = lambda t: resolve(t, namespace, node_name)  # noqa: E731
        #: resolved topic → :class:`~rbd_estimator.runtime.session.Input` (type, handler)
        self.handlers = {r(i.topic): i for i in s.inputs_needed()}
        self.js_topic = r(s.settings.joint_states_topic)
        self._sensor_slots = {r(i.topic): s.inputs.slot_index(i.key[1]) for i in self.handlers.values()
                              if i.key[0] == "sensor"}          # topic → input slot (read by the compiled loop)
        # the output connections after the inputs': joint torques, contact wrenches, their uncertainty
        # (covariance: true), contact state (switchable), faults, tracked offsets (docs/offsets.md)
        variance = [VARIANCE_TOPIC] if s.variance_encoder is not None else []
        outputs = (["~/joint_torques", *s.wrench_topics] + variance + s.covariance_topics
                   + ["~/contact_state"] * s.contacts.switchable + [FAULTS_TOPIC]
                   + [OFFSETS_TOPIC] * (s.offsets_encoder is not None))
        self._output_index = {o: k for k, o in enumerate(outputs)}
        self.torque_topic = r("~/joint_torques")
        self.wrench_topics = [r(t) for t in s.wrench_topics]
        self.variance_topic = r(VARIANCE_TOPIC) if variance else None
        self.covariance_topics = [r(t) for t in s.covariance_topics]
        self.state_topic = r("~/contact_state") if s.contacts.switchable else None
        self.faults_topic = r(FAULTS_TOPIC)
        types = {o.topic: o.message for o in s.outputs()}
        #: ``[(resolved topic, ROS type)]`` of the output connections, in their order after the inputs'
        self.outputs = [(r(t), types[t]) for t in outputs]
        # the estimate messages of the compiled loop: the output templates, where their values come from
        nj = len(self.joint_names)
        self._segments = EstimateSegments(
            [(s.torque_encoder, TAU, 0)] + [(e, WRENCH, 6 * c) for c, e in enumerate(s.wrench_encoders)]
            + [(s.variance_encoder, COV, 0)] * len(variance)
            + [(e, COV, nj + 36 * c) for c, e in enumerate(s.covariance_encoders)])
        self.tick_on_js = s.tick_on_js
        self.period_ns = int(round(1e9 / s.settings.rate_hz))
        self._next_timer = None
        #: every tick as a row (``collect``; :mod:`~rbd_estimator.replay.ticklog`), handed in chunks to
        #: ``flush(columns, joint_names, contact_names)`` when given, else kept for :meth:`results`
        #: the tracked offset entries (``~/sensor_offsets``' names; the set of the parameters at start)
        self.offset_names = tuple(s.core.offsets.labels) if s.core.offsets is not None else ()
        self.log = TickLog(self.joint_names, self.contact_names, flush, offset_names=self.offset_names) \
            if collect else None
        self._all_contacts = subset_label(self.contact_names)      # the subset of fixed contacts
        self._results = None                                       # (rows logged, results()) once asked

    inputs = property(lambda self: self.session.inputs, doc="the session's input state")
    plans = property(lambda self: self.session.plans, doc="the session's plans")
    core = property(lambda self: self.session.core, doc="the session's tick and its counters")
    contacts = property(lambda self: self.session.contacts, doc="the session's contact state")
    stale_timer_ticks = property(lambda self: self.session.stale_timer_ticks)

    def sink(self, write_one, n_inputs: int) -> None:
        """Write what the session emits through ``write_one(connection index, log time, bytes)``; the
        estimate outputs come after the ``n_inputs`` input connections."""
        index = self._output_index

        def emit(topic, now, data):
            write_one(n_inputs + index[topic], now, data)
        self.session.emit = emit

    def _timer_until(self, now: int) -> None:
        """Timer ticks (``tick: timer``) due before ``now``, as the node's timer at ``rate_hz``."""
        if self._next_timer is None:
            self._next_timer = now
        while self._next_timer < now:
            t = self._next_timer
            self._next_timer += self.period_ns
            self._tick_at(t)

    def _tick_at(self, t: int) -> None:
        self._collecting(t, lambda: self.session.on_timer(t))

    def _tick(self, now: int, stamp: int) -> None:
        self._collecting(now, lambda: self.session.tick(now, stamp))

    def _collecting(self, now: int, call):
        """``call()`` (a handler or a tick at ``now``), logging the tick it made (``collect``)."""
        if self.log is None:
            return call()
        core = self.core
        before = (core.ticks, core.outputs, core.estimate_failures, core.nonfinite_outputs,
                  core.ill_posed_subset_ticks)
        out = call()
        if core.ticks > before[0]:
            self._log_tick(now, before)
        return out

    def _log_tick(self, now: int, before: tuple) -> None:
        """The tick just made, as a row of :attr:`log` (why it has no estimate, from the counters)."""
        core, c = self.core, self.contacts
        done = core.outputs > before[1]
        plan = core.plan_in_use
        missing = plan.missing if done and plan is not None else core.last_missing[0]
        excluded = core.faults.flagged if core.faults is not None else ()
        reason = ""
        if not done:
            if core.estimate_failures > before[2]:
                reason = "estimate failed"
            elif core.nonfinite_outputs > before[3]:
                reason = "non-finite estimate"
            elif core.ill_posed_subset_ticks > before[4]:
                reason = f"ill-posed contact subset {c.label(c.mask)}"
            elif core.last_missing[1]:
                reason = "no plan without " + ", ".join(sorted(core.last_missing[0]))
            else:
                reason = "inconsistent sensors (fault monitor)"
        self.log.add_tick(now, self.inputs.joint_states.stamp_ns, core.last_result if done else None, reason,
                          c.active, c.label(c.mask) if c.switchable else self._all_contacts, missing, excluded,
                          self._offsets() if done else None)

    def _offsets(self):
        """The tracked ``(offsets, variances)`` as ``~/sensor_offsets`` publishes them now, in the order
        of :attr:`offset_names` (NaN for an entry the tracker in use does not have); None: none tracked."""
        tr = self.core.offsets
        if tr is None or not self.offset_names:
            return None
        if tr.labels == self.offset_names:
            return tr.offsets.copy(), tr.variance.copy()
        where = {lab: j for j, lab in enumerate(tr.labels)}
        pick = np.array([where.get(lab, -1) for lab in self.offset_names])
        o, v = np.append(tr.offsets, np.nan)[pick], np.append(tr.variance, np.nan)[pick]
        return o, v

    def feed(self, topic: str, raw, now: int) -> int:
        """One serialized message received at ``now`` (ns) on ``topic`` (resolved name); returns
        the input handling's code (:data:`~rbd_estimator.runtime.input_core.CDR_ERROR` for bytes that do
        not decode as the topic's type)."""
        if not self.tick_on_js:
            self._timer_until(now)
        h = self.handlers.get(topic)
        return 0 if h is None else self._collecting(now, lambda: h.handler(raw, now))

    # ------------------------------------------------------------------ batches (the fast path)
    def feed_batch(self, batch, topics, write_batch, write_one, copy_inputs: bool = True) -> dict:
        """The messages of ``batch`` (:class:`~rbd_estimator.replay.bag_io.RawBatch`; ``topics[c]`` the
        resolved topic of connection index ``c``) in order, each as :meth:`feed` takes it, with the
        output in order: every input message, each followed by the estimates it triggered
        (connection indices ``len(topics)`` for the joint torques, then one per contact), through
        ``write_batch(RawBatch)`` or ``write_one(connection index, log time, bytes)`` (the batches hold
        no input message unless ``copy_inputs``). The steady state runs in
        :func:`rbd_estimator.runtime.batch.run`, whatever else through :meth:`feed`.
        Returns ``{topic: messages that did not decode}``."""
        from ..runtime import batch as fast
        n_in = len(topics)
        self.sink(write_one, n_in)
        K = fast.kernel_args(self.inputs, self.plans.main) if self._batch_ok() else None
        if K is None:
            return self._feed_each(batch, range(len(batch)), topics, write_one)
        slot_of, res = self._slot_of(topics, fast), self._results_for(len(batch))
        undecodable, i, n = {}, 0, len(batch)
        while i < n:
            i_stop, k, code = fast.run(self.inputs.I, self.inputs.F, batch.conn, batch.time, batch.data, batch.start,
                                       batch.length, slot_of, i, self._main_ok(), self._chi2_max(), K, *res, 0)
            self.core.ticks += k
            self.core.outputs += k
            if k:
                self.core.plan_in_use = self.plans.main
            taken = i_stop if code == fast.TICK_PENDING else i_stop - 1     # messages taken in by run
            tau, w, cov, _, times, stamps, msg = (x[:k] for x in res)
            write_batch(self._segments.segment(batch, n_in, i, min(taken, n - 1), tau, w, cov, times, stamps, msg,
                                               copy_inputs))
            self._collect_rows(res, k)
            if code == fast.TICK_PENDING:
                self._tick(int(batch.time[i_stop]), self.inputs.joint_states.stamp_ns)
            elif code != fast.DONE:
                for topic, m in self._feed_each(batch, (i_stop,), topics, write_one).items():
                    undecodable[topic] = undecodable.get(topic, 0) + m
            i = i_stop + 1
        return undecodable

    def _feed_each(self, batch, rows, topics, write_one) -> dict:
        """Messages ``rows`` of ``batch`` one by one: copied, then :meth:`feed`."""
        undecodable = {}
        for i in rows:
            topic, t, raw = topics[batch.conn[i]], int(batch.time[i]), batch.payload(i)
            write_one(int(batch.conn[i]), t, raw)
            if topic in self.handlers and self.feed(topic, raw, t) == CDR_ERROR:
                undecodable[topic] = undecodable.get(topic, 0) + 1
        return undecodable

    def _batch_ok(self) -> bool:
        """Whether the compiled loop applies: ticks on joint states, fixed contacts, no tracked offsets
        (their filter runs in :class:`~rbd_estimator.runtime.tick.TickCore`)."""
        return self.tick_on_js and not self.contacts.switchable and self.core.offsets is None

    def _main_ok(self) -> bool:
        """The tick state is "all sensors fresh, main plan in use": what :func:`~rbd_estimator.runtime.batch.run`
        continues without Python."""
        none = frozenset()
        return self.plans.lookup(none)[0] is self.plans.main and self.core.last_missing == (none, False, None)

    def _chi2_max(self) -> float:
        """The fault monitor's limit for the main plan's residual (inf without a monitor); the main
        plan is a structured :class:`~rbd_estimator.estimation.Estimator` (its ``kernel()`` runs)."""
        faults, dof = self.core.faults, self.plans.main.estimator.residual_dof
        return faults.limit(dof) if faults is not None and dof > 0 else np.inf

    def _slot_of(self, topics, fast) -> np.ndarray:
        slot_of = np.full(len(topics), fast.NOT_INPUT, dtype=np.int64)
        for c, topic in enumerate(topics):
            h = self.handlers.get(topic)
            if h is None:
                continue
            if topic == self.js_topic:
                slot_of[c] = 0
            elif topic in self._sensor_slots:
                slot_of[c] = self._sensor_slots[topic]
            else:
                slot_of[c] = fast.IN_PYTHON
        return slot_of

    def _results_for(self, n: int):
        """Result rows of the compiled loop: torques, wrenches, the covariance buffer (empty when
        not published), condition estimate and χ², log times, stamps, triggering messages."""
        nj, nc = len(self.joint_names), len(self.contact_names)
        m = max(1, n)
        ncov = (nj + 36 * nc) if self.covariance_topics else 0
        return (np.zeros((m, nj)), np.zeros((m, 6 * nc)), np.zeros((m, ncov)), np.zeros((m, 2)), np.zeros(m, np.int64),
                np.zeros(m, np.int64), np.zeros(m, np.int64))

    def _collect_rows(self, res, nt: int) -> None:
        if self.log is None or not nt:
            return
        tau, w, cov, info, times, stamps, _ = (x[:nt] for x in res)
        self.log.add_block(times, stamps, tau, w, cov, info, self.plans.main.estimator.residual_dof,
                           self._all_contacts)

    def finish(self, now: int) -> None:
        """The end of the recording (timer ticks up to its last message)."""
        if not self.tick_on_js:
            self._timer_until(now + 1)

    # ------------------------------------------------------------------ results
    def results(self) -> dict:
        """The estimates collected (``collect=True``, no ``flush``): ``times`` (log time, ns),
        ``stamps`` (header stamps, ns), ``tau`` (estimates × joints), ``wrenches`` (estimates ×
        contacts × 6); every tick's row, with or without estimate, is in :attr:`log`. Made once per
        number of rows logged (the properties below read it)."""
        if self._results is None or self._results[0] != self.log.count:
            cols = self.log.columns()
            ok = cols["estimated"]
            self._results = (self.log.count, dict(
                times=cols["time_ns"][ok], stamps=cols["stamp_ns"][ok], tau=cols["tau"][ok],
                wrenches=cols["wrench"][ok], joint_names=self.joint_names, contact_names=self.contact_names))
        return self._results[1]

    times = property(lambda self: self.results()["times"], doc="log times of the estimates (ns), as results()")
    stamps = property(lambda self: self.results()["stamps"], doc="header stamps of the estimates (ns)")
    tau = property(lambda self: self.results()["tau"], doc="joint torques of the estimates (estimates × joints)")
    wrenches = property(lambda self: self.results()["wrenches"], doc="contact wrenches (estimates × contacts × 6)")
