"""Sensor faults: found by a χ² test, isolated, excluded through the lost-sensor path, let back in.

Every estimate of a redundant sensor set has a whitened residual ``e`` (one entry per measurement
row, :attr:`~rbd_estimator.estimation.estimator.Estimate.residual`); when every measurement follows
its noise model, ``|e|²`` is χ²-distributed with the residual's degrees of freedom (measurement rows
minus the unknowns they determine). Per tick:

1. **Detection**: ``|e|² > χ²_dof⁻¹(1 − α)``, ``α`` the false-alarm rate (``fault_false_alarm_rate``).
2. **Isolation**: the estimate is made again without each sensor in turn, with the plans of a single
   sensor's loss (:class:`~rbd_estimator.runtime.plans.PlanSet`); the sensor whose exclusion gives a
   consistent estimate (its own test passed, the smallest ``|e|² / limit``) is the faulty one. None:
   the inconsistency is not one sensor's, and nothing is published this tick.
   The test starts ``fault_start_delay`` seconds after the first estimate (default 0.1 s): the
   joint accelerations the node differentiates from the encoders are wrong while the derivative
   filter starts, and so is every estimate then (on the shipped humanoid's recording the residual
   is 30–400 times its limit for the first 15 ms).
3. **Exclusion**: the sensor counts as missing (:meth:`SensorInputs.exclude`): the tick takes the
   lost-sensor plan (``DEGRADED``, the sensor named in ``/diagnostics`` and on ``~/sensor_faults``).
   The estimate published on the alarm tick is already the one without it: no estimate from a flagged
   sensor is published.
4. **Return**: while excluded, the estimate *with* the sensor is made every tick (one more estimate
   per excluded sensor); when it has passed the test for ``fault_recovery_time`` seconds in a row, the
   sensor is back.

The monitor is ROS-free: the node and the replay run it through the same
:class:`~rbd_estimator.runtime.session.Session`.
"""
from __future__ import annotations

from dataclasses import dataclass

from scipy.stats import chi2 as _chi2

from .tick import StartDelay, estimate_with


@dataclass
class Flagged:
    """An excluded sensor: when (ns), its test statistic then, since when it has been consistent."""
    since: int
    chi2: float
    limit: float
    consistent_since: int | None = None


class FaultMonitor:
    """The per-tick test (module docstring). ``alpha``: false-alarm rate per tick; ``recovery_s``:
    seconds of consistency before an excluded sensor is let back; ``on_event(level, text)``: the
    session's log (0 OK, 1 WARN)."""

    def __init__(self, alpha: float, recovery_s: float, on_event=None, start_delay_s: float = 0.1):
        self.alpha, self.recovery_ns = float(alpha), int(round(recovery_s * 1e9))
        self.delay = StartDelay(start_delay_s)      # fault_start_delay
        self.on_event = on_event or (lambda level, text: None)
        self.flagged: dict[str, Flagged] = {}
        self.alarms = self.unexplained = self.exclusions = self.returns = 0
        self._limits: dict[int, float] = {}
        self._turn = 0
        self.explain = None        # r → (χ², dof) with the tracked offsets explained (the session sets it)

    def limit(self, dof: int) -> float:
        """``χ²_dof⁻¹(1 − α)``: the statistic above which the residual is declared inconsistent."""
        x = self._limits.get(dof)
        if x is None:
            x = self._limits[dof] = float(_chi2.isf(self.alpha, dof))
        return x

    def statistic(self, r) -> tuple[float, int]:
        """``(χ², dof)`` of the estimate ``r``: its own, or with the tracked offsets explained
        (:meth:`~rbd_estimator.estimation.offsets.OffsetTracker.explained`) when tracking is on."""
        return (r.chi2, r.dof) if self.explain is None else self.explain(r)

    def consistent(self, r) -> bool:
        """Whether an estimate passes the test (an estimate without redundancy cannot fail it)."""
        chi2, dof = self.statistic(r)
        return dof <= 0 or chi2 <= self.limit(dof)

    def restart(self) -> None:
        """The inputs start again (activation): no test for the start delay."""
        self.delay.restart()

    def reset(self, inputs) -> None:
        """Forget the flags (a new sensor set): every sensor is in again."""
        for name in list(self.flagged):
            if name in inputs.sensor_names:
                inputs.exclude(name, False)
        self.flagged.clear()

    # ------------------------------------------------------------------ the tick
    def screen(self, core, inputs, plans, plan, r, now: int, mask):
        """The estimate ``r`` of ``plan``: ``(plan, r)`` to publish — ``r`` itself, or the estimate
        without the sensor just found faulty — or None (inconsistent, not isolated). Times are the
        joint states' stamps (data time: the node and the replay of its recording agree), not
        ``now``."""
        now = inputs.joint_states.stamp_ns
        self.delay.start(now)
        if self.flagged:
            self._recheck(core, inputs, plans, plan, now, mask)
        if not self.delay.passed(now) or self.consistent(r):
            return plan, r
        self.alarms += 1
        chi2, dof = self.statistic(r)
        found = self._isolate(core, inputs, plans, plan, mask)
        if found is None:
            self.unexplained += 1
            self.on_event(1, f"inconsistent sensors (χ² {chi2:.3g} > {self.limit(dof):.3g}, {dof} degrees of "
                             f"freedom) and no single sensor explains it: nothing published this tick")
            return None
        name, plan2, r2 = found
        inputs.exclude(name)
        self.flagged[name] = Flagged(now, chi2, self.limit(dof))
        self.exclusions += 1
        self.on_event(1, f"FAULT: {name} is inconsistent with the other sensors (χ² {chi2:.3g} > "
                         f"{self.limit(dof):.3g}, {dof} degrees of freedom; without it {r2.chi2:.3g}): excluded, "
                         f"estimating without it until it is consistent for {self.recovery_ns / 1e9:g} s")
        return plan2, r2

    def _estimate(self, core, inputs, plans, missing, mask):
        """The estimate of the plan without ``missing`` (planned now or in the background when
        new), or None when there is none (yet) or it fails."""
        p, _ = core.plan_for(plans, missing)
        if p is None:
            return None
        try:
            return p, estimate_with(p, inputs, mask, core.offsets)
        except Exception:  # noqa: BLE001 - a candidate that cannot estimate is not the answer
            return None

    def _isolate(self, core, inputs, plans, plan, mask):
        """``(sensor, plan, estimate)`` of the exclusion that restores consistency best, or None."""
        best = None
        for s in plan.estimator.config.sensors:
            if not s.DROPPABLE:
                continue
            got = self._estimate(core, inputs, plans, plan.missing | {s.name}, mask)
            if got is None or got[1].dof <= 0:
                continue
            p2, r2 = got
            score = r2.chi2 / self.limit(r2.dof)
            if score <= 1.0 and (best is None or score < best[0]):
                best = (score, s.name, p2, r2)
        return None if best is None else best[1:]

    def _recheck(self, core, inputs, plans, plan, now: int, mask) -> None:
        """One excluded sensor (in turn): the estimate with it back; back in after
        ``recovery_ns`` of consistency."""
        names = sorted(self.flagged)
        name = names[self._turn % len(names)]
        self._turn += 1
        f = self.flagged[name]
        got = self._estimate(core, inputs, plans, plan.missing - {name}, mask)
        if got is None or not self.consistent(got[1]):
            f.consistent_since = None
            return
        if f.consistent_since is None:
            f.consistent_since = now
        elif now - f.consistent_since >= self.recovery_ns:
            inputs.exclude(name, False)
            del self.flagged[name]
            self.returns += 1
            self.on_event(0, f"{name} consistent with the other sensors for {self.recovery_ns / 1e9:g} s: back in the "
                             f"estimate")

    def summary(self) -> dict:
        """``/diagnostics`` values (``faults/…``)."""
        out = {"faults/false_alarm_rate": self.alpha, "faults/excluded": ", ".join(sorted(self.flagged)) or "none",
               "faults/alarms": self.alarms, "faults/unexplained_ticks": self.unexplained,
               "faults/exclusions": self.exclusions, "faults/returns": self.returns}
        for name, f in sorted(self.flagged.items()):
            out[f"faults/{name}/chi2"] = f.chi2
            out[f"faults/{name}/limit"] = f.limit
        return out


__all__ = ["FaultMonitor", "Flagged"]
