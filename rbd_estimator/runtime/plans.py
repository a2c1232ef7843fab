"""The estimators a node holds: one for the full sensor set, one per prepared sensor loss.

Planning is off-line work (seconds for a humanoid), so only the full set is planned where a
decision depends on it (configure, reconfiguration); the plans for losing one sensor
(``config.without(name)``) are prepared by a background :class:`PlanWorker` right after, and a
loss of several sensors at once is planned on demand. A loss whose remaining set is ill-posed is
recorded as *unavailable* with the planner's reason. No ROS import.
"""
from __future__ import annotations

import contextlib
import json
import queue
import sys
import threading
import time
import warnings
from collections import OrderedDict

import numpy as np

from ..errors import ConfigError, IllPosedError, ModelError, ModelWarning
from ..estimation import Estimator
from ..estimation.loops import estimator_for


_GIL = threading.Lock()
_GIL_USERS = [0, 0.0]          # planning threads inside gil_yielding, the switch interval to restore


@contextlib.contextmanager
def gil_yielding(interval: float = 1e-4):
    """Planning beside a running tick: the interpreter's switch interval lowered to ``interval`` (s)
    meanwhile, so the tick thread waits at most that long for the GIL each time it wakes for a
    message (with 0.5 ms and a planning thread holding the GIL, a 2 kHz tick falls behind)."""
    with _GIL:
        if _GIL_USERS[0] == 0:
            _GIL_USERS[1] = sys.getswitchinterval()
            sys.setswitchinterval(min(interval, _GIL_USERS[1]))
        _GIL_USERS[0] += 1
    try:
        yield
    finally:
        with _GIL:
            _GIL_USERS[0] -= 1
            if _GIL_USERS[0] == 0:
                sys.setswitchinterval(_GIL_USERS[1])


class Plan:
    """An estimator plus where its measurement vector comes from in the inputs, computed once per
    input layout."""
    __slots__ = ("estimator", "sensors", "missing", "_for", "index", "y")

    def __init__(self, estimator: Estimator, missing: frozenset):
        self.estimator = estimator
        self.sensors = estimator.config.sensors
        self.missing = missing
        self._for = self.index = None      # the inputs' F the gather index ``index`` was made for
        self.y = np.zeros(estimator.measurements.size)

    def measurement(self, inputs) -> np.ndarray:
        """The estimator's measurement vector ``y`` from the latest samples of ``inputs`` (one
        gather; the index is computed when the inputs' layout changes)."""
        if self._for is not inputs.F:
            self.index, self._for = inputs.y_index(self.sensors), inputs.F
        np.take(inputs.F, self.index, out=self.y)
        return self.y


def without(config, missing) -> object:
    """The configuration without the sensors in ``missing``."""
    for name in sorted(missing):
        config = config.without(name)
    return config


class PlanSet:
    """``missing sensors → Plan`` for one robot description and sensor configuration."""

    MAX_PLANS = 64

    def __init__(self, xml: str, config, main: Estimator):
        self.xml, self.config = xml, config
        self.main = Plan(main, frozenset())
        self._plans: dict[frozenset, Plan] = {frozenset(): self.main}
        self.unavailable: dict[frozenset, str] = {}
        self._requested: set = set()
        self._lock = threading.Lock()
        self.closed = False
        self.single_losses_done = False

    @classmethod
    def plan(cls, xml: str, config, strict: bool = False) -> Estimator:
        """Plan the full set; raises ModelError / ConfigError / IllPosedError with the reason.
        A configuration that declares loops, or a URDF with mimic joints, gets a
        :class:`LoopEstimator` (actuator efforts). ``strict``: see ``RobotModel.from_urdf``."""
        return estimator_for(xml, config, strict=strict)

    # ------------------------------------------------------------------ lookup (tick path)
    def lookup(self, missing: frozenset):
        """``(plan, None)``, or ``(None, reason)``: ``reason`` is None while the plan is not known yet."""
        p = self._plans.get(missing)
        if p is not None:
            return p, None
        return None, self.unavailable.get(missing)

    def known(self, missing: frozenset) -> bool:
        return missing in self._plans or missing in self.unavailable

    def request(self, missing: frozenset) -> bool:
        """Mark a loss for planning; False if it is already known or requested."""
        with self._lock:
            if self.known(missing) or missing in self._requested or len(self._requested) > self.MAX_PLANS:
                return False
            self._requested.add(missing)
            return True

    # ------------------------------------------------------------------ planning (worker)
    def prepare(self, missing: frozenset) -> None:
        """Plan the set without ``missing`` (worker thread)."""
        if self.closed or self.known(missing):
            return
        needed = sorted(n for n in missing if not self.config.sensor(n).DROPPABLE)
        if needed:                               # a known input, not a redundant measurement
            self.unavailable[missing] = (f"{', '.join(needed)} cannot be left out (a known input of the "
                                         f"equations, not a redundant measurement)")
            return
        cfg = without(self.config, missing)
        try:
            with warnings.catch_warnings(), gil_yielding():   # the model's warnings were reported already
                warnings.simplefilter("ignore", ModelWarning)
                est = estimator_for(self.xml, cfg)
        except (ModelError, ConfigError, IllPosedError) as exc:
            self.unavailable[missing] = str(exc)
            return
        except Exception as exc:  # a planner failure must not kill the worker
            self.unavailable[missing] = f"{type(exc).__name__}: {exc}"
            return
        if not self.closed:
            self._plans[missing] = Plan(est, missing)

    def adopt(self, missing: frozenset, estimator: Estimator) -> None:
        """Use ``estimator`` (planned elsewhere, e.g. the set in use before a sensor was added) as
        the plan without ``missing``."""
        self._plans[missing] = Plan(estimator, missing)

    def estimators(self) -> list:
        """The estimators planned in this set (the main one and the prepared losses)."""
        return [p.estimator for p in list(self._plans.values())]

    def prepare_single_losses(self, pace: float = 0.0, delay: float = 0.0) -> None:
        """Plan the loss of each single sensor not planned yet, starting after ``delay`` seconds;
        ``pace``: after each plan, rest ``pace`` times as long as it took (the tick thread catches up
        between plans)."""
        time.sleep(delay)
        for name in self.config.sensor_names:
            if self.closed:
                return
            t0 = time.monotonic()
            if not self.known(frozenset((name,))):
                self.prepare(frozenset((name,)))
                time.sleep(pace * (time.monotonic() - t0))
        self.single_losses_done = True

    def close(self) -> None:
        """Release the plans (cleanup); a worker still planning for this set discards its result."""
        self.closed = True
        self._plans = {}
        self.unavailable = {}

    # ------------------------------------------------------------------ reporting
    def fallback_summary(self) -> dict:
        """Sensor losses → 'ready' or the reason they are unavailable (single losses first)."""
        out = {}
        for k in sorted(self._plans, key=lambda s: (len(s), sorted(s))):
            if k:
                out["+".join(sorted(k))] = "ready"
        for k, why in sorted(self.unavailable.items(), key=lambda kv: (len(kv[0]), sorted(kv[0]))):
            out["+".join(sorted(k))] = "unavailable: " + why
        return out


class PlanCache:
    """The full set's estimator for the recordings a process replays one after another (a fleet
    worker): planned once per robot description and parameters, handed to each later recording
    with the same ones as planning left it (:meth:`~rbd_estimator.estimation.interface.EstimatorInterface.reset`:
    each estimator restores its own per-tick data, warm starts and counters).

    The key is the URDF text and every parameter (``SensorConfig.to_parameters()``, the node's
    included) with ``strict``. Only one session at a time may use an estimator of the cache (a fleet
    worker replays one recording at a time). At most ``size`` keys are kept, the least recently used
    dropped."""

    def __init__(self, size: int = 4):
        self.size = size
        self._entries: OrderedDict = OrderedDict()     # key → estimator
        self.hits = self.misses = 0

    @staticmethod
    def key(xml: str, config, strict: bool) -> tuple:
        return xml, json.dumps(config.to_parameters(), sort_keys=True, default=repr), bool(strict)

    def plan(self, xml: str, config, strict: bool = False) -> Estimator:
        """:meth:`PlanSet.plan`, or the estimator planned before for the same key, reset."""
        k = self.key(xml, config, strict)
        est = self._entries.get(k)
        if est is None:
            self.misses += 1
            est = self._entries[k] = PlanSet.plan(xml, config, strict=strict)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        else:
            self.hits += 1
            self._entries.move_to_end(k)
            est.reset()
        return est

    def clear(self) -> None:
        """Forget every estimator and the counts."""
        self._entries.clear()
        self.hits = self.misses = 0


class PlanWorker:
    """One background thread that runs planning jobs in order (daemon; stopped by :meth:`stop`)."""

    def __init__(self, on_error=None):
        self._q: queue.Queue = queue.Queue()
        self._thread = None
        self._on_error = on_error
        self._busy = threading.Event()

    def submit(self, job) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="rbd_estimator_planner", daemon=True)
            self._thread.start()
        self._q.put(job)

    def _run(self) -> None:
        while True:
            job = self._q.get()
            try:
                if job is None:
                    return
                job()
            except Exception as exc:  # noqa: BLE001 - reported, the worker keeps serving
                if self._on_error is not None:
                    self._on_error(exc)
            finally:
                self._q.task_done()

    def idle(self) -> bool:
        return self._q.unfinished_tasks == 0

    def wait_idle(self, timeout: float) -> bool:
        import time
        end = time.monotonic() + timeout
        while not self.idle():
            if time.monotonic() > end:
                return False
            time.sleep(0.01)
        return True

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is not None and self._thread.is_alive():
            self._q.put(None)
            self._thread.join(timeout)
        self._thread = None


__all__ = ["Plan", "PlanCache", "PlanSet", "PlanWorker", "gil_yielding", "without"]
