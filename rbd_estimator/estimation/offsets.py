"""Online offset tracking: slowly varying sensor offsets as random-walk states, estimated from the
redundancy by a Kalman filter around the estimator's MAP solution (docs/offsets.md).

Model. A tracked entry ``j`` of the measurement vector reads ``y_j = ŷ_j(d) + o_j + n_j`` with the
offset a random walk, ``o_j(t + Δt) = o_j(t) + w_j``, ``w_j ~ N(0, ρ_j² Δt)`` (``ρ_j`` the sensor's
``offset_drift``, units/√s). The estimator is given ``y − ô`` (the tracked offsets subtracted). Its
whitened residual (``Estimate.residual``) is then

    ``e = Q W (y − ô − ŷ⁰) = C (o − ô) + ν``,   ``C = Q W E``,   ``ν ~ N(0, Q)``,

``W`` the whitening of the measurement rows, ``E`` the columns of the tracked entries and ``Q`` the
projector onto the orthogonal complement of the unknowns' whitened columns (the part of the
measurement space the unknowns cannot explain; the contact prior makes it ``I − A N⁻¹ Aᵀ``).
``C`` is the part of each offset that the residual sees: its **observability**. A contact wrench
that only this sensor measures explains its offset exactly: that offset's column of ``C`` is zero.

The Kalman update in information form (``Cᵀ Q⁺ C = Cᵀ C``, ``Cᵀ Q⁺ e = Cᵀ e``):

    ``P⁺ = (P⁻¹ + Cᵀ C)⁻¹ = (I + P Cᵀ C)⁻¹ P``,    ``ô⁺ = ô + P⁺ Cᵀ e``.

So ``ô`` moves only along ``P⁺ range(Cᵀ)``: an offset component ``v`` with ``C v = 0`` (the other
sensors do not determine it) gets no information, keeps its prior variance plus the drift's, and
does not move as long as its prior is not correlated with observed directions (a prior that starts
diagonal stays block-diagonal for an offset that is never observable). ``C`` is truncated to its
singular directions above :data:`OBSERVABLE` (relative to a whitened unit offset), so that the
contact prior's ``σ²/σ_p² ≈ 1e-13`` leak and rounding give exactly no information either.

``C`` comes from the estimator's linearity in ``y`` (for a given state and contact subset): one
estimate per tracked entry with that entry moved by its standard deviation. It depends on the pose
and the contact subset; it is made again when the subset or the plan changes, and every ``period``
seconds of data time (default 10 ms), not every tick. Between, a tick is one estimate plus the
compiled update :func:`kalman_update` (no allocation). With the tracked offsets explained, the
χ² test (:mod:`rbd_estimator.runtime.faults`) sees ``|e|² − |U_kᵀ e|²`` with ``dof − k`` degrees of
freedom (``U_k`` the observable directions of ``C``): an inconsistency an offset explains is the
tracker's, not a fault.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..jit import njit

#: singular value of the scaled observability ``C diag(σ)`` below which a direction is unobservable
OBSERVABLE = 1e-6


@njit
def kalman_update(P, o, C, e, m, qdt, S, M, g):
    """One predict + update of the offsets ``o`` and their covariance ``P`` (n × n) from the
    residual ``e[:m]`` with observability ``C[:m]`` (m × n) (module docstring); ``qdt``: the random
    walk's variance over the tick; ``S``, ``M`` (n × n), ``g`` (n) work space. Allocates nothing."""
    n = o.shape[0]
    for j in range(n):                                   # predict: P += diag(ρ² Δt)
        P[j, j] += qdt[j]
    for j in range(n):                                   # S = Cᵀ C, g = Cᵀ e
        s = 0.0
        for i in range(m):
            s += C[i, j] * e[i]
        g[j] = s
        for k in range(j + 1):
            s = 0.0
            for i in range(m):
                s += C[i, j] * C[i, k]
            S[j, k] = s
            S[k, j] = s
    for j in range(n):                                   # M = I + P S
        for k in range(n):
            s = 1.0 if j == k else 0.0
            for i in range(n):
                s += P[j, i] * S[i, k]
            M[j, k] = s
    _solve_in_place(M, P)                                # P ← (I + P S)⁻¹ P
    for j in range(n):                                   # symmetric (rounding)
        for k in range(j):
            s = 0.5 * (P[j, k] + P[k, j])
            P[j, k] = s
            P[k, j] = s
    for j in range(n):                                   # ô += P⁺ Cᵀ e
        s = 0.0
        for k in range(n):
            s += P[j, k] * g[k]
        o[j] += s


@njit
def _solve_in_place(M, B):
    """``B ← M⁻¹ B`` by Gaussian elimination with partial pivoting (``M`` destroyed). ``M = I + P S``
    has eigenvalues ≥ 1 (``P``, ``S`` positive semi-definite): never singular."""
    n = M.shape[0]
    nb = B.shape[1]
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if abs(M[i, k]) > abs(M[p, k]):
                p = i
        if p != k:
            for j in range(n):
                M[k, j], M[p, j] = M[p, j], M[k, j]
            for j in range(nb):
                B[k, j], B[p, j] = B[p, j], B[k, j]
        d = 1.0 / M[k, k]
        for i in range(k + 1, n):
            f = M[i, k] * d
            if f != 0.0:
                for j in range(k, n):
                    M[i, j] -= f * M[k, j]
                for j in range(nb):
                    B[i, j] -= f * B[k, j]
    for k in range(n - 1, -1, -1):
        d = 1.0 / M[k, k]
        for j in range(nb):
            s = B[k, j]
            for i in range(k + 1, n):
                s -= M[k, i] * B[i, j]
            B[k, j] = s * d


class _View:
    """The tracked entries in one estimator's measurement vector: positions (-1: the sensor is not
    in its set), the corrected vector, and the observability of its last contact subset."""
    __slots__ = ("pos", "yc", "C", "U", "m", "key")

    def __init__(self, est, names, entries, n):
        meas = est.measurements
        present = {s.name for s in est.config.sensors}
        self.pos = np.array([meas.slice(nm).start + k if nm in present else -1 for nm, k in zip(names, entries)],
                            dtype=np.int64)
        self.yc = np.zeros(meas.size)
        self.C = np.zeros((0, n))
        self.U = np.zeros((0, 0))
        self.m, self.key = 0, None


class OffsetTracker:
    """The tracked offsets of a configuration's sensors (those with ``offset_drift > 0``, or
    ``force_offset_drift``/``torque_offset_drift`` for a force-torque sensor) and the filter
    around an estimator (module docstring).

    Args:
        config: the :class:`~rbd_estimator.estimation.config.SensorConfig`.
        initial: ``{sensor: offsets of its slice}`` to start from (the calibrated offsets,
            ``reading = true + offset``; default: ``applied``, else zero).
        applied: ``{sensor: offsets}`` already subtracted from the readings given to :meth:`estimate`
            (the node's ``ft_offsets.<sensor>``); the tracker subtracts only ``ô − applied``.
        initial_stddev: the initial standard deviation of each tracked offset, in units of the
            entry's noise standard deviation.
        period: seconds (data time) between two computations of the observability in one contact
            subset.
    """

    def __init__(self, config, initial: dict | None = None, applied: dict | None = None,
                 initial_stddev: float = 10.0, period: float = 0.01):
        names, entries, drift, sigma = [], [], [], []
        for s in config.sensors:
            d, sd = np.asarray(s.drift_rates(), float), np.asarray(s.entry_stddevs(), float)
            for k in np.flatnonzero(d > 0):
                names.append(s.name)
                entries.append(int(k))
                drift.append(d[k])
                sigma.append(sd[k])
        labels = {s.name: s.labels() for s in config.sensors}
        self.sensors = tuple(dict.fromkeys(names))
        self.names, self.entries = tuple(names), tuple(entries)
        self.labels = tuple(labels[nm][k] for nm, k in zip(names, entries))
        self.drift, self.sigma = np.array(drift), np.array(sigma)
        n = self.n = len(names)
        self.applied = self._vector(applied, config, "applied")
        self.offsets = self._vector(initial, config, "initial") if initial is not None else self.applied.copy()
        self.P = np.diag((initial_stddev * self.sigma) ** 2) if n else np.zeros((0, 0))
        self.period = float(period)
        self.updates = self.refreshes = 0
        self._since = np.inf
        self._S, self._M, self._g, self._qdt = np.zeros((n, n)), np.zeros((n, n)), np.zeros(n), np.zeros(n)
        self._dt = None
        self._views: dict = {}
        self.last = None                   # the view of the last estimate (for :meth:`explained`)

    def _vector(self, given, config, what) -> np.ndarray:
        out = np.zeros(self.n)
        for name, value in (given or {}).items():
            s = next((s for s in config.sensors if s.name == name), None)
            if s is None:
                raise ConfigError(f"offset tracking: {what} offsets for '{name}', which is not a configured sensor")
            v = np.asarray(value, float).reshape(-1)
            if v.size != s.size:
                raise ConfigError(f"offset tracking: {what} offsets of '{name}' need {s.size} values, got {v.size}")
            for j, (nm, k) in enumerate(zip(self.names, self.entries)):
                if nm == name:
                    out[j] = v[k]
        return out

    # ------------------------------------------------------------------ per estimator
    def view(self, est) -> _View:
        """The tracked entries' places in ``est``'s measurement vector (made once per estimator)."""
        v = self._views.get(id(est))
        if v is None:
            v = self._views[id(est)] = _View(est, self.names, self.entries, self.n)
        return v

    def corrected(self, est, y) -> np.ndarray:
        """``y − (ô − applied)`` at the tracked entries of ``est``'s measurement vector ``y`` (a
        buffer of the view, overwritten by the next call)."""
        v = self.view(est)
        v.yc[:] = y
        _subtract(v.yc, v.pos, self.offsets, self.applied)
        return v.yc

    # ------------------------------------------------------------------ the tick
    def estimate(self, est, q, dq, ddq, y, dt: float, contacts=None):
        """The estimate of ``est`` from the readings ``y`` (its measurement vector) with the tracked
        offsets subtracted, then the offsets' predict + update over ``dt`` seconds. Returns the
        estimate (made with the offsets before the update, as a causal filter publishes)."""
        yc = self.corrected(est, y)
        self.observe(est, q, dq, ddq, contacts, dt)
        r = est.estimate(q, dq, ddq, y=yc, contacts=contacts)
        self.update(est, r, dt)
        return r

    def observe(self, est, q, dq, ddq, contacts, dt: float) -> None:
        """Make the observability ``C`` of ``est`` in this subset again when the subset or plan
        changed or ``period`` has passed: one estimate per tracked entry (overwrites ``est``'s
        result: call before the tick's estimate)."""
        v = self.view(est)
        key = contacts if isinstance(contacts, (int, np.integer)) or contacts is None else tuple(contacts)
        self._since += dt
        if v.key == key and self.last is v and self._since < self.period:
            return
        self._since, v.key = 0.0, key
        yc, r0 = v.yc, est.estimate(q, dq, ddq, y=v.yc, contacts=contacts).residual
        if r0 is None:
            v.m = 0
            return
        r0 = r0.copy()
        C = np.zeros((r0.size, self.n))
        for j in np.flatnonzero(v.pos >= 0):
            p, s = v.pos[j], self.sigma[j]
            yc[p] -= s                                   # ô_j + σ_j
            C[:, j] = (r0 - est.estimate(q, dq, ddq, y=yc, contacts=contacts).residual) / s
            yc[p] += s
        u, sv, vt = np.linalg.svd(C * self.sigma, full_matrices=False)
        k = int(np.sum(sv > OBSERVABLE))
        v.U = np.ascontiguousarray(u[:, :k])
        v.C = np.ascontiguousarray((u[:, :k] * sv[:k]) @ vt[:k] / self.sigma) if k else np.zeros((r0.size, self.n))
        v.m = r0.size
        self.refreshes += 1
        self.last = v

    def update(self, est, r, dt: float) -> None:
        """Predict + update with the residual of ``r``, the estimate of ``est`` with the corrected
        readings (:meth:`corrected`) in the subset of the last :meth:`observe`."""
        v = self.view(est)
        self.last = v
        if dt != self._dt:
            self._dt = dt
            np.multiply(self.drift, self.drift * dt, out=self._qdt)
        e = r.residual
        if e is None or v.m == 0 or e.shape[0] != v.m:
            _predict(self.P, self._qdt)
            return
        kalman_update(self.P, self.offsets, v.C, e, v.m, self._qdt, self._S, self._M, self._g)
        self.updates += 1

    def explained(self, r) -> tuple[float, int]:
        """``(χ², dof)`` of the estimate ``r`` with the tracked offsets' observable directions
        explained (``|e|² − |U_kᵀ e|²``, ``dof − k``), when ``r`` is the last tick's; else ``r``'s own."""
        v, e = self.last, r.residual
        if v is None or e is None or e.shape[0] != v.m or v.U.shape[1] == 0:
            return r.chi2, r.dof
        return _explained_chi2(e, v.U), r.dof - v.U.shape[1]

    # ------------------------------------------------------------------ results
    @property
    def variance(self) -> np.ndarray:
        """The posterior variance of each tracked offset (``labels`` order; units²)."""
        return np.diag(self.P)

    def by_sensor(self) -> dict:
        """``{sensor: (entries, offsets, standard deviations)}`` of the tracked entries."""
        sd = np.sqrt(np.maximum(self.variance, 0.0))
        out = {}
        for name in self.sensors:
            idx = [j for j, nm in enumerate(self.names) if nm == name]
            out[name] = (tuple(self.labels[j] for j in idx), self.offsets[idx].copy(), sd[idx])
        return out


@njit
def _subtract(yc, pos, o, applied):
    for j in range(pos.shape[0]):
        if pos[j] >= 0:
            yc[pos[j]] -= o[j] - applied[j]


@njit
def _predict(P, qdt):
    for j in range(qdt.shape[0]):
        P[j, j] += qdt[j]


@njit
def _explained_chi2(e, U):
    s = 0.0
    for i in range(e.shape[0]):
        s += e[i] * e[i]
    for k in range(U.shape[1]):
        t = 0.0
        for i in range(e.shape[0]):
            t += U[i, k] * e[i]
        s -= t * t
    return max(s, 0.0)


__all__ = ["OffsetTracker", "kalman_update", "OBSERVABLE"]
