"""Contacts that come and go: one plan per contact subset, chosen per tick; contact detection.

A walking robot's contact set changes every step. Nori's system (eq. 16) has the wrench of every
active contact among its unknowns, so each contact subset is its own system, with its own
well-posedness and its own plan (§IV-D). :class:`SwitchingEstimator` plans every subset of the
switchable contacts once (at most ``2^6``), records the ill-posed ones with the planner's reason, and
per tick runs the plan of the active subset, writing the wrenches of the contacts not in contact
as zero. :class:`ContactDetector` decides the state of ``detected`` contacts from the normal force
the robot's own sensors measure, with hysteresis and a dwell time.

Subsets are numbered by a bit mask over :attr:`SwitchingEstimator.switchable` (bit ``k`` set:
switchable contact ``k`` is active); ``always`` contacts are active in every subset.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError, IllPosedError
from .config import SensorConfig
from .estimator import Estimator
from .interface import EstimatorInterface
from .measurements import Measurements, vector

__all__ = ["SwitchingEstimator", "SwitchingEstimate", "ContactDetector", "subset_label", "make_estimator"]


def make_estimator(model, config: SensorConfig, seed: int = 0, solver: str = "auto") -> EstimatorInterface:
    """The estimator of a configuration on a tree model: an :class:`~.estimator.Estimator` for fixed
    contacts, a :class:`SwitchingEstimator` of them (one per contact subset) when contacts switch."""
    if config.switchable_contacts:
        return SwitchingEstimator(model, config, lambda cfg: Estimator(model, cfg, seed=seed, solver=solver))
    return Estimator(model, config, seed=seed, solver=solver)


def subset_label(names) -> str:
    """``'l_foot+r_foot'``, or ``'none'`` for the empty subset."""
    return "+".join(names) if names else "none"


class SwitchingEstimate:
    """Result of :meth:`SwitchingEstimator.estimate`: as :class:`~.estimator.Estimate`, over *every*
    configured contact (``contact_wrenches`` is zero for a contact not in contact) plus ``active``
    (bool per contact, ``contact_names`` order). ``tau_variance`` and ``contact_covariance`` are the
    subset's (zero for a contact not in contact, whose wrench is known to be zero), ``None`` with
    ``covariance: false``. Arrays are reused buffers: copy what you keep."""

    def __init__(self, est: "SwitchingEstimator"):
        nc = len(est.contact_names)
        self.tau = np.zeros(len(est.joint_names))
        on = est.config.covariance
        self.tau_variance = np.zeros(len(est.joint_names)) if on else None
        self.contact_covariance = np.zeros((nc, 6, 6)) if on else None
        self.contact_wrenches = np.zeros((nc, 6))
        self.active = np.zeros(nc, dtype=bool)
        self.joint_wrenches = np.zeros((len(est.kept_joints), 6))
        self.residual = None
        self.subset = None                       # the fixed-set Estimate of the subset that ran
        self._names = est.contact_names

    def clear(self) -> None:
        """Back to no estimate yet: zeros, no subset."""
        for a in (self.tau, self.tau_variance, self.contact_covariance, self.contact_wrenches, self.active,
                  self.joint_wrenches):
            if a is not None:
                a.fill(0)
        self.residual = self.subset = None

    def contact(self, name: str) -> np.ndarray:
        """The wrench of one contact by name (zeros when it is not in contact)."""
        return self.contact_wrenches[self._names.index(name)]

    @property
    def base_acceleration(self) -> np.ndarray:
        return self.subset.base_acceleration

    def joint_acceleration(self, ddq: np.ndarray) -> np.ndarray:
        """The subset's :meth:`~.estimate.Estimate.joint_acceleration`."""
        return self.subset.joint_acceleration(ddq)

    chi2 = property(lambda self: self.subset.chi2, doc="the subset's whitened residual's squared norm")
    dof = property(lambda self: self.subset.dof, doc="its degrees of freedom")
    condition = property(lambda self: self.subset.condition, doc="the subset's condition estimate")


class SwitchingEstimator(EstimatorInterface):
    """An estimator whose contacts switch per tick (``contact.<name>.mode: commanded|detected``).

    Built by :func:`make_estimator` (and :func:`~.loops.estimator_for`) when the configuration has
    switchable contacts. ``make(config)`` plans one fixed-set estimator; it is
    called for every subset. Raises :class:`IllPosedError` only when *no* subset is well-posed.
    """

    def __init__(self, model, config: SensorConfig, make):
        self.model, self.config = model, config
        self.switchable = config.switchable_contacts
        names = tuple(c.name for c in config.contacts)
        self._index = {n: k for k, n in enumerate(names)}
        self._bit = {n: 1 << k for k, n in enumerate(self.switchable)}
        self._always = tuple(n for n in names if n not in self._bit)
        n_sub = 1 << len(self.switchable)
        self.subsets: list = [None] * n_sub         # subset mask → fixed-set estimator, or None
        self.reasons: list = [None] * n_sub         # subset mask → why it is ill-posed
        self._rows: list = [None] * n_sub           # subset mask → rows of its contacts in contact_names
        self._measurements = Measurements(config)   # the full set's measurement vector
        self._ysel: list = [None] * n_sub           # subset mask → its measurement vector's entries in y
        self._ysub: list = [None] * n_sub
        for mask in range(n_sub):
            active = self.subset_names(mask)
            self._rows[mask] = np.array([self._index[n] for n in active], dtype=np.int64)
            sub = config.with_active_contacts(active)
            self._ysel[mask] = self._measurements.gather_index(sub.sensors)
            self._ysub[mask] = np.zeros(self._ysel[mask].size)
            try:
                self.subsets[mask] = make(sub)
            except IllPosedError as exc:
                self.reasons[mask] = str(exc)
        ok = [p for p in self.subsets if p is not None]
        if not ok:
            raise IllPosedError("no contact subset is well-posed with these sensors: "
                                + "; ".join(f"{subset_label(self.subset_names(m))}: {r}"
                                            for m, r in enumerate(self.reasons)))
        self._any = ok[-1]
        self.result = SwitchingEstimate(self)
        self._all = n_sub - 1
        self._mask = np.zeros(len(names), dtype=bool)

    # ------------------------------------------------------------------ names, plans
    def subset_names(self, mask: int) -> tuple[str, ...]:
        """The active contacts of subset ``mask`` (configuration order, ``always`` contacts included)."""
        return tuple(c.name for c in self.config.contacts if c.name not in self._bit or mask & self._bit[c.name])

    def weak_directions(self) -> dict:
        return {subset_label(self.subset_names(m)): est.weak for m, est in enumerate(self.subsets)
                if est is not None and est.weak}

    def coverage(self) -> dict:
        """``{'l_foot+r_foot': None or reason}``: every subset, and why it is ill-posed if it is."""
        return {subset_label(self.subset_names(m)): r for m, r in enumerate(self.reasons)}

    @property
    def kept_joints(self) -> tuple[str, ...]:
        return self._any.kept_joints

    @property
    def report(self):
        """The plan report of the full contact set if it is well-posed, else of the largest one that is."""
        return next(p for p in reversed(self.subsets) if p is not None).report

    @property
    def measurements(self) -> Measurements:
        return self._measurements

    def subset_reason(self, mask: int) -> str | None:
        return self.reasons[mask]

    def switching(self) -> "SwitchingEstimator":
        return self

    def reset(self) -> None:
        """:meth:`EstimatorInterface.reset`: every subset's estimator, the subsets' measurement vectors
        and the result (no estimate yet)."""
        for est in self.subsets:
            if est is not None:
                est.reset()
        for a in self._ysub:
            a.fill(0.0)
        self._mask.fill(False)
        self.result.clear()

    # ------------------------------------------------------------------ tick
    def mask_of(self, contacts) -> int:
        """The subset mask of ``contacts``: ``None`` (all in contact), active contact names, or a
        boolean sequence over :attr:`contact_names`. ``always`` contacts must be active."""
        if contacts is None:
            return self._all
        mask = 0
        if not len(contacts) or isinstance(next(iter(contacts)), str):      # names (possibly none)
            for n in contacts:
                bit = self._bit.get(n)
                if bit is None and n not in self._index:
                    raise ValueError(f"contacts: '{n}' is not a configured contact {self.contact_names}")
                mask |= bit or 0
            given = contacts
        else:
            if len(contacts) != len(self._index):
                raise ValueError(f"contacts: expected {len(self._index)} booleans in the order {self.contact_names}, "
                                 f"got {len(contacts)}")
            for n, on in zip(self.contact_names, contacts):
                if on:
                    mask |= self._bit.get(n, 0)
            given = [n for n, on in zip(self.contact_names, contacts) if on]
        for n in self._always:
            if n not in given:
                raise ValueError(f"contacts: '{n}' is declared 'always' in contact (contact.{n}.mode) and cannot be "
                                 f"inactive")
        return mask

    def estimate(self, q, dq, ddq, imu=None, ft=None, load_cells=None, joint_torques=None,
                 external_wrenches=None, contacts=None, *, y=None, readings=None, **by_kind) -> SwitchingEstimate:
        """:meth:`Estimator.estimate` with the contacts in ``contacts`` active (see :meth:`mask_of`;
        an ``int`` is taken as the subset mask itself, as :meth:`mask_of` returns it);
        raises :class:`IllPosedError` naming the subset when its sensors do not determine it.
        ``load_cells`` by group name (a dict) or in configuration order; the groups of contacts
        not in contact are ignored."""
        mask = contacts if isinstance(contacts, (int, np.integer)) and not isinstance(contacts, bool) \
            else self.mask_of(contacts)
        est = self.subsets[mask]
        if est is None:
            raise IllPosedError(f"contact subset {subset_label(self.subset_names(mask))}: {self.reasons[mask]}")
        if y is None:                           # the full set's measurement vector, then the subset's
            y = self._measurements.fill(imu, ft, load_cells, joint_torques, external_wrenches, readings, **by_kind)
        else:
            y = vector(y, self._measurements.size, "y")
        sub = self._ysub[mask]
        np.take(y, self._ysel[mask], out=sub)
        r = est.estimate(q, dq, ddq, y=sub)
        out, rows = self.result, self._rows[mask]
        out.tau[:] = r.tau
        out.contact_wrenches[:] = 0.0
        out.contact_wrenches[rows] = r.contact_wrenches
        out.active[:] = False
        out.active[rows] = True
        out.joint_wrenches[:] = r.joint_wrenches
        if out.tau_variance is not None:
            out.tau_variance[:] = r.tau_variance
            out.contact_covariance[:] = 0.0
            out.contact_covariance[rows] = r.contact_covariance
        out.residual, out.subset = r.residual, r
        return out

    def detector(self) -> "ContactDetector":
        """A :class:`ContactDetector` for the ``detected`` contacts of this configuration."""
        return ContactDetector(self._any.model, self.config)

    def base_state(self, result: SwitchingEstimate | None = None):
        """:meth:`Estimator.base_state` of the last (or the given) estimate."""
        r = (result or self.result).subset
        return next(p for p in self.subsets if p is not None and p.result is r).base_state(r)


class ContactDetector:
    """The state of the ``detected`` contacts from the normal force measured at each (N, along the
    contact frame's z axis, pushing the robot away from the ground), with hysteresis and dwell:
    a contact turns on once its force has stayed above ``force_on`` for ``dwell`` seconds and off
    once it has stayed below ``force_off`` for ``dwell`` seconds; in between it keeps its state.

    The force comes from a sensor under the contact that measures it (a load-cell group, a foot
    normal-force or 3-axis force sensor: :meth:`Sensor.contact_normal_force`) or from a six-axis
    force-torque sensor on the link that carries the contact frame (its force, rotated into the
    contact frame, with the sign of its measure direction). The mass of the foot below that sensor
    is not compensated: set the thresholds above its weight. ``sources``: ``(sensor, c)`` per
    contact, the normal force being ``c · reading``.
    """

    def __init__(self, model, config: SensorConfig):
        self.names = tuple(c.name for c in config.contacts if c.mode == "detected")
        cs = [config.contact(n) for n in self.names]
        self.force_on = np.array([c.force_on for c in cs])
        self.force_off = np.array([c.force_off for c in cs])
        self.dwell_ns = np.array([int(round(c.dwell * 1e9)) for c in cs], dtype=np.int64)
        self.sources = tuple(_source(model, config, c) for c in cs)
        self.state = np.zeros(len(cs), dtype=bool)
        self.force = np.zeros(len(cs))
        self._since = np.full(len(cs), -1, dtype=np.int64)    # when the force first crossed toward the other state

    def reset(self, state=False) -> None:
        self.state[:] = state
        self._since[:] = -1

    def normal_forces(self, readings) -> np.ndarray:
        """Normal force at each detected contact (N) from the latest readings, ``readings`` a
        mapping sensor name → its slice of the measurement vector."""
        for k, (name, c) in enumerate(self.sources):
            self.force[k] = float(np.dot(c, readings[name]))
        return self.force

    def update(self, force, now_ns: int) -> np.ndarray:
        """Advance the state machines with the normal forces ``force`` (N) measured at ``now_ns``."""
        f = np.asarray(force, dtype=float)
        toward = np.where(self.state, f < self.force_off, f > self.force_on)   # pushes toward the other state
        self._since[~toward] = -1
        start = toward & (self._since < 0)
        self._since[start] = now_ns
        flip = toward & (now_ns - self._since >= self.dwell_ns)
        self.state[flip] = ~self.state[flip]
        self._since[flip] = -1
        return self.state


def _source(model, config: SensorConfig, c):
    """``(sensor, coefficients)``: the normal force of contact ``c`` is ``coefficients · reading``."""
    under = {s.name: s.contact_normal_force(c.name) for s in config.sensors}
    under = {n: v for n, v in under.items() if v is not None}
    fts = {s.name: s for s in config.ft_sensors}
    name = c.detect_from or next(iter(under), "")
    if name in under:
        return (name, under[name])
    if not name:
        name = _ft_above(model, config, c)
    if name not in fts:
        raise ConfigError(f"parameter 'contact.{c.name}.detect_from': '{name}' is neither a sensor under contact "
                          f"'{c.name}' nor a configured force-torque sensor")
    sensor = fts[name].bind(model)
    R, sign = fts[name].rotation(model, sensor)
    frame = model.frame(c.frame)
    if frame.body != sensor.body:
        raise ConfigError(f"parameter 'contact.{c.name}.detect_from': contact frame '{c.frame}' is not on the link "
                          f"right below force-torque sensor '{name}' (joints in between): detect from a sensor "
                          f"under the contact or use mode 'commanded'")
    # measured force = sign · R f_k (f_k: parent → child, child coordinates); the ground pushes the
    # foot with ≈ −f_k, whose normal component in contact coordinates is −(E_c f_k)_z
    return (name, np.concatenate([-sign * (frame.E @ R.T)[2], np.zeros(3)]))


def _ft_above(model, config: SensorConfig, c) -> str:
    """The configured force-torque sensor whose child link carries the contact frame."""
    body = model.frame(c.frame).body
    for s in config.ft_sensors:
        try:
            b = model.ft_sensor(s.name).body if not s.joint else model.body_joint_names.index(s.joint)
        except Exception:  # noqa: BLE001 - an unknown sensor is the layout's error to report
            continue
        if b == body:
            return s.name
    raise ConfigError(f"parameter 'contact.{c.name}.mode' is 'detected' but no load-cell group of the contact and "
                      f"no force-torque sensor on its link '{c.frame}' measures its force: set "
                      f"'contact.{c.name}.detect_from'")
