"""One tick of the estimator node, without ROS: the code path the live node and the offline replay share.

A tick takes the latest accepted samples (:class:`~rbd_estimator.runtime.inputs.SensorInputs`), decides
which sensors are fresh at ``now`` (the receipt time on the node's clock, compared with each
sensor's ``timeout``), looks up the plan for the sensors that are missing
(:class:`~rbd_estimator.runtime.plans.PlanSet`), runs the estimate and checks that its result is
finite. Publishing, diagnostics and the pinocchio cross-check stay with the caller:

* :class:`rbd_estimator.node.EstimatorNode` calls :meth:`TickCore.tick` from its joint-state
  callback (or timer) and publishes the result;
* :mod:`rbd_estimator.replay` calls it for the messages of a rosbag2 recording, with the recording's
  receive times as ``now``, and writes the result to a new bag.

So both run literally the same validation, filters, freshness rules and estimate.
"""
from __future__ import annotations

import numpy as np


class StartDelay:
    """A wait in data time after the first estimate since activation (the joint states' stamps, ns):
    the derivative filter's start-up, before the χ² test (``fault_start_delay``) or the offsets'
    updates (``offset_start_delay``) take in the estimates."""

    __slots__ = ("delay_ns", "started")

    def __init__(self, seconds: float = 0.0):
        self.started = None              # the stamp of the first estimate since activation
        self.set(seconds)

    def set(self, seconds: float) -> None:
        self.delay_ns = int(round(seconds * 1e9))

    def restart(self) -> None:
        """Count again from the next estimate (activation: the derivative filter starts again)."""
        self.started = None

    def start(self, stamp_ns: int) -> None:
        """An estimate at ``stamp_ns``: the first since activation starts the count."""
        if self.started is None:
            self.started = stamp_ns

    def passed(self, stamp_ns: int) -> bool:
        """Whether ``stamp_ns`` is the delay or more after the first estimate (:meth:`start` first)."""
        return stamp_ns - self.started >= self.delay_ns


class TickCore:
    """Counters and the tick itself (see the module docstring).

    ``on_missing_changed(missing, plan, reason)`` is called when the set of missing sensors (or the
    availability of its plan) changes; ``request_plan(plans, missing)`` when a sensor loss has no
    plan yet (the node plans it in the background; the replay plans it at once);
    ``on_estimate_failure(exc)`` when an estimate raises.
    """

    __slots__ = ("ticks", "outputs", "no_output", "estimate_failures", "nonfinite_outputs", "last_missing",
                 "plan_in_use", "on_missing_changed", "request_plan", "on_estimate_failure", "on_subset_changed",
                 "last_subset", "ill_posed_subset_ticks", "_joining", "last_result", "faults", "offsets", "_stamp",
                 "offset_delay")

    def __init__(self, on_missing_changed=None, request_plan=None, on_estimate_failure=None, on_subset_changed=None):
        """``on_subset_changed(label, reason)``: the contact subset changed (``reason``: why it has
        no plan, or None)."""
        self.on_missing_changed = on_missing_changed
        self.request_plan = request_plan
        self.on_estimate_failure = on_estimate_failure
        self.on_subset_changed = on_subset_changed
        self.faults = None               # a FaultMonitor (runtime/faults.py) screening every estimate, or None
        self.offsets = None              # an OffsetTracker (estimation/offsets.py) of the tracked offsets, or None
        self._stamp = None               # the last tick's joint-state stamp (ns): the tracker's Δt
        self.offset_delay = StartDelay()  # data time after the first estimate before the tracker updates
        self._joining: dict = {}
        self.reset_counters()

    def joining(self, names, inputs) -> None:
        """Sensors just added to the set in use (a reconfiguration): not reported missing until
        their first sample, or until their timeout has passed without one (the plan without them
        estimates meanwhile)."""
        self._joining = {n: [inputs.slots[n].timeout_ns, None] for n in names if n in inputs.slots}

    def _reported(self, missing: frozenset, now: int) -> frozenset:
        """``missing`` without the sensors still joining (see :meth:`joining`)."""
        j = self._joining
        for n in list(j):
            timeout, deadline = j[n]
            if n not in missing:
                del j[n]                     # its first sample arrived
            elif deadline is None:
                j[n][1] = now + timeout      # its timeout after the first tick that wants it
            elif now > deadline:
                del j[n]
        return missing.difference(j) if j else missing

    def reset_counters(self) -> None:
        self.ticks = self.outputs = self.no_output = self.estimate_failures = self.nonfinite_outputs = 0
        self.ill_posed_subset_ticks = 0
        self.last_missing = self.last_subset = None
        self.plan_in_use = None
        self.last_result = None

    def tick(self, inputs, plans, now: int, contacts=None):
        """Estimate from the latest samples at node time ``now`` (ns). Returns ``(plan, result)``
        (``result.tau``, ``result.contact_wrenches`` in the plan's joint and contact order), or
        None when nothing is to be published this tick (no plan for the missing sensors or for the
        contact subset, a failed estimate, a non-finite result). ``contacts``: the
        :class:`~rbd_estimator.runtime.contact_state.ContactState` (switchable contacts)."""
        self.ticks += 1
        mask = contacts.update(inputs, now) if contacts is not None and contacts.switchable else None
        missing = inputs.missing(now)
        plan, reason = self.plan_for(plans, missing)
        shown = self._reported(missing, now) if self._joining else missing
        key = (shown, plan is None, reason)
        if key != self.last_missing:
            self.last_missing = key
            if self.on_missing_changed is not None:
                self.on_missing_changed(shown, plan, reason)
        if plan is None:
            self.no_output += 1
            return None
        if mask is not None and self._subset_unavailable(plan, contacts, mask):
            return None
        self.plan_in_use = plan
        tracker, dt = self.offsets, self._dt(inputs)
        try:
            if tracker is not None:           # the observability of this plan and subset (before the estimate)
                tracker.corrected(plan.estimator, plan.measurement(inputs))
                tracker.observe(plan.estimator, inputs.q, inputs.dq, inputs.ddq, mask, dt)
            r = estimate_with(plan, inputs, mask, tracker)
            if tracker is not None:
                tracker.current = r
                self.offset_delay.start(self._stamp)
        except Exception as exc:  # noqa: BLE001 - bad input or a singular state: no output this tick
            self.estimate_failures += 1
            self.no_output += 1
            if self.on_estimate_failure is not None:
                self.on_estimate_failure(exc)
            return None
        tau, wrenches = r.tau, r.contact_wrenches
        if not (_finite(tau) and _finite(wrenches)):
            self.nonfinite_outputs += 1
            self.no_output += 1
            return None
        first = plan
        if self.faults is not None:          # the χ² test; a faulty sensor's estimate is replaced or dropped
            screened = self.faults.screen(self, inputs, plans, plan, r, now, mask)
            if screened is None:
                self.no_output += 1
                if tracker is not None:
                    tracker.predict(dt)
                return None
            plan, r = screened
            self.plan_in_use = plan
        if tracker is not None:              # the offsets' update from the published estimate's residual
            if plan is first and self.offset_delay.passed(self._stamp):
                tracker.update(plan.estimator, r, dt)
            else:
                tracker.predict(dt)
        self.outputs += 1
        self.last_result = r
        return plan, r

    def _dt(self, inputs) -> float:
        """Seconds of data time since the last tick (the joint states' stamps; 0 at the first)."""
        stamp = inputs.joint_states.stamp_ns
        dt = 0.0 if self._stamp is None else max(0.0, (stamp - self._stamp) * 1e-9)
        self._stamp = stamp
        return dt

    def plan_for(self, plans, missing: frozenset):
        """``(plan, None)`` for the sensors ``missing``, or ``(None, reason)`` (``reason`` None while
        it is being planned: a new loss is requested here, planned at once or in the background)."""
        plan, reason = plans.lookup(missing)
        if plan is None and reason is None and plans.request(missing):
            if self.request_plan is not None:
                self.request_plan(plans, missing)
            plan, reason = plans.lookup(missing)
        return plan, reason

    def _subset_unavailable(self, plan, contacts, mask) -> bool:
        """Report a change of contact subset; True (no output this tick) when the plan of the
        missing sensors has no well-posed estimate for it."""
        reason = plan.estimator.subset_reason(mask)
        key = (mask, reason)
        if key != self.last_subset:
            self.last_subset = key
            if self.on_subset_changed is not None:
                self.on_subset_changed(contacts.label(mask), reason)
        if reason is not None:
            self.ill_posed_subset_ticks += 1
            self.no_output += 1
            return True
        return False


def estimate_with(plan, inputs, mask, offsets=None):
    """The estimate of ``plan`` from the latest samples of ``inputs`` (``mask``: the contact subset),
    with the tracked ``offsets`` (an :class:`~rbd_estimator.estimation.offsets.OffsetTracker`)
    subtracted from the readings."""
    y = plan.measurement(inputs)
    if offsets is not None:
        y = offsets.corrected(plan.estimator, y)
    return plan.estimator.estimate(inputs.q, inputs.dq, inputs.ddq, y=y, contacts=mask)


def _finite(a) -> bool:
    return bool(np.isfinite(a).all())


__all__ = ["StartDelay", "TickCore", "estimate_with"]
