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

Only the observable subspace is updated. With ``D = diag(σ_j)`` (each entry's noise) and the
singular value decomposition ``C D = U Σ Vᵀ``, the first ``k`` right singular vectors (``Σ_kk`` above
:data:`OBSERVABLE`, relative to a whitened unit offset) span the offset directions the residual
sees, ``z = V_kᵀ D⁻¹ o``; the others, ``w``, are the directions the other sensors do not determine
(a contact wrench that only this sensor measures explains its offset exactly: ``C`` is zero there,
up to the contact prior's ``σ²/σ_p² ≈ 1e-13`` and rounding, which the threshold removes). The
update is a Schmidt–Kalman ("consider") update: with ``e = U_k Σ_k z + ν``,

    ``A = (I + P_zz Σ_k²)⁻¹``,  ``P_zz⁺ = A P_zz``,  ``P_zw⁺ = A P_zw``,  ``P_ww⁺ = P_ww``,
    ``z⁺ = z + P_zz⁺ Σ_k U_kᵀ e``,  ``w⁺ = w``

(the optimal gain for ``z``, zero gain for ``w``; ``A = P_zz⁺ P_zz⁻¹`` is the information form of
``I − K H``). So an offset moves only in the directions the other sensors determine at this tick,
and an unobservable direction keeps its prior variance plus the drift's: a real contact wrench is
never absorbed into an offset, even when earlier ticks correlated the two.

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
def kalman_update(P, o, sigma, Vt, k, sv, U, e, m, qdt, R, T, g):
    """One predict + update of the offsets ``o`` and their covariance ``P`` (n × n) from the
    residual ``e[:m]``, restricted to the observable subspace (a Schmidt–Kalman update: module
    docstring). In the coordinates ``z = Vt D⁻¹ o`` (``D = diag(sigma)``; ``Vt`` orthogonal, its
    first ``k`` rows the observable directions, ``C D = U_k diag(sv) Vt[:k]``):
    ``A = (I + P_zz Σ²)⁻¹``, ``P_zz ← A P_zz``, ``P_zw ← A P_zw``, ``P_ww`` unchanged,
    ``z ← z + P_zz Σ U_kᵀ e``; the unobservable ``w`` neither move nor lose variance.
    ``qdt``: the random walk's variance over the tick; ``R``, ``T`` (n × n), ``g`` (n) work space.
    Allocates nothing."""
    n = o.shape[0]
    for j in range(n):                                   # predict: P += diag(ρ² Δt)
        P[j, j] += qdt[j]
    if k == 0:
        return
    for a in range(n):                                   # T = Vt D⁻¹ P D⁻¹ (rows: z then w)
        for b in range(n):
            s = 0.0
            for i in range(n):
                s += Vt[a, i] * P[i, b] / sigma[i]
            T[a, b] = s / sigma[b]
    for a in range(n):                                   # R = T Vtᵀ: the covariance of (z, w)
        for b in range(n):
            s = 0.0
            for i in range(n):
                s += T[a, i] * Vt[b, i]
            R[a, b] = s
    for a in range(k):                                   # g_z = Σ U_kᵀ e
        s = 0.0
        for i in range(m):
            s += U[i, a] * e[i]
        g[a] = sv[a] * s
    for a in range(k):                                   # T[:k, :k] = I + P_zz Σ²
        for b in range(k):
            T[a, b] = (1.0 if a == b else 0.0) + R[a, b] * sv[b] * sv[b]
    _solve_in_place(T[:k, :k], R[:k, :])                 # [P_zz P_zw] ← A [P_zz P_zw]
    for a in range(k, n):                                # P_wz = P_zwᵀ
        for b in range(k):
            R[a, b] = R[b, a]
    for a in range(k):                                   # P_zz symmetric (rounding)
        for b in range(a):
            s = 0.5 * (R[a, b] + R[b, a])
            R[a, b] = s
            R[b, a] = s
    for a in range(k):                                   # Δz = P_zz⁺ g_z
        s = 0.0
        for b in range(k):
            s += R[a, b] * g[b]
        T[a, 0] = s
    for i in range(n):                                   # o += D Vt[:k]ᵀ Δz
        s = 0.0
        for a in range(k):
            s += Vt[a, i] * T[a, 0]
        o[i] += sigma[i] * s
    for a in range(n):                                   # P = D Vtᵀ R Vt D
        for b in range(n):
            s = 0.0
            for i in range(n):
                s += R[a, i] * Vt[i, b]
            T[a, b] = s
    for a in range(n):
        for b in range(n):
            s = 0.0
            for i in range(n):
                s += Vt[i, a] * T[i, b]
            P[a, b] = sigma[a] * s * sigma[b]


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
    __slots__ = ("est", "pos", "yc", "Vt", "sv", "U", "k", "m", "key")

    def __init__(self, est, names, entries, n):
        self.est = est
        meas = est.measurements
        present = {s.name for s in est.config.sensors}
        self.pos = np.array([meas.slice(nm).start + k if nm in present else -1 for nm, k in zip(names, entries)],
                            dtype=np.int64)
        self.yc = np.zeros(meas.size)
        self.Vt, self.sv, self.U = np.eye(n), np.zeros(n), np.zeros((0, 0))
        self.k = self.m = 0
        self.key = None


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
        self._R, self._T, self._g, self._qdt = np.zeros((n, n)), np.zeros((n, n)), np.zeros(n), np.zeros(n)
        self._dt = None
        self._views: dict = {}
        self.last = None                   # the view of the last observability or update
        self.current = None                # the tick's estimate (the one :meth:`explained` explains)

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
        if v is None or v.est is not est:
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
        r = self.current = est.estimate(q, dq, ddq, y=yc, contacts=contacts)
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
        self._since, v.key, v.m = 0.0, None, 0           # no update from this view until it is made
        yc, r0 = v.yc, est.estimate(q, dq, ddq, y=v.yc, contacts=contacts).residual
        if r0 is None:                                   # no redundancy in this subset: nothing observable
            v.key = key
            return
        r0 = r0.copy()
        C = np.zeros((r0.size, self.n))
        for j in np.flatnonzero(v.pos >= 0):
            p, s = v.pos[j], self.sigma[j]
            yc[p] -= s                                   # ô_j + σ_j
            C[:, j] = (r0 - est.estimate(q, dq, ddq, y=yc, contacts=contacts).residual) / s
            yc[p] += s
        if not np.isfinite(C).all():                     # a state the estimator cannot linearise: the next period
            v.key = key
            return
        u, sv, vt = np.linalg.svd(C * self.sigma, full_matrices=True)
        v.k = k = int(np.sum(sv > OBSERVABLE))
        v.U, v.Vt = np.ascontiguousarray(u[:, :k]), np.ascontiguousarray(vt)
        v.sv[:] = 0.0
        v.sv[:k] = sv[:k]
        v.m, v.key = r0.size, key
        self.refreshes += 1
        self.last = v

    def update(self, est, r, dt: float) -> None:
        """Predict + update with the residual of ``r``, the estimate of ``est`` with the corrected
        readings (:meth:`corrected`) in the subset of the last :meth:`observe`."""
        v = self.view(est)
        self.last = v
        e = r.residual
        if e is None or v.m == 0 or e.shape[0] != v.m or not np.isfinite(r.chi2):
            self.predict(dt)
            return
        kalman_update(self.P, self.offsets, self.sigma, v.Vt, v.k, v.sv, v.U, e, v.m, self._drift_variance(dt),
                      self._R, self._T, self._g)
        self.updates += 1

    def predict(self, dt: float) -> None:
        """The random walk over ``dt`` seconds without a measurement: ``P += diag(ρ² Δt)``."""
        _predict(self.P, self._drift_variance(dt))

    def _drift_variance(self, dt: float) -> np.ndarray:
        if dt != self._dt:
            self._dt = dt
            np.multiply(self.drift, self.drift * dt, out=self._qdt)
        return self._qdt

    def explained(self, r) -> tuple[float, int]:
        """``(χ², dof)`` of the estimate ``r`` with the tracked offsets' observable directions
        explained (``|e|² − |U_kᵀ e|²``, ``dof − k``), when ``r`` is the last tick's; else ``r``'s own."""
        v, e = self.last, r.residual
        if r is not self.current or v is None or e is None or e.shape[0] != v.m or v.k == 0:
            return r.chi2, r.dof
        return _explained_chi2(e, v.U), r.dof - v.k

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
