"""Joint velocities and accelerations from encoders: a causal Kalman filter per joint.

Every joint ``j`` is an integrator chain of order ``n`` driven by white noise, the state
``x_j = [q, q̇, q̈]`` (``n = 3``, *constant acceleration*: white jerk) or ``[q, q̇, q̈, q⃛]`` (``n = 4``,
*constant jerk*: white snap), of spectral density ``s`` (rad²/s⁵ or rad²/s⁷; m for a prismatic
joint). Over ``Δt_k = t_k − t_{k−1}`` (the header stamps) the exact discretisation is

    Φ_ab = Δt^(b−a) / (b−a)!                                   (b ≥ a; 0 below the diagonal)
    Q_ab = s Δt^(p) / ((n−1−a)! (n−1−b)! p),   p = 2n − 1 − a − b

(the covariance of the integrated noise, Bar-Shalom, Li & Kirubarajan, *Estimation with
Applications to Tracking*, §6.2). A joint state measures ``z = H x + v``: the position (variance
``r_q``) and, when the message has velocities and ``kalman_velocity_stddev > 0``, the velocity
(variance ``r_v``). One step is the standard filter:

    x⁻ = Φ x,            P⁻ = Φ P Φᵀ + Q                       predict
    S = H P⁻ Hᵀ + R,     G = P⁻ Hᵀ S⁻¹                           gain
    x = x⁻ + G (z − H x⁻),   P = P⁻ − G S Gᵀ                     update

Every joint has the same model and the same noises, so ``P`` and ``G`` are the same for all joints:
one ``n × n`` covariance step per sample (exact for any ``Δt``, no steady-state approximation),
then ``x_j ← Φ x_j + G (z_j − H Φ x_j)`` for every joint, compiled, without allocation. The filter's
outputs are the posterior ``q̇`` and ``q̈`` (the positions stay the encoders'); ``P_{q̈q̈}`` is the
variance of its acceleration, which :func:`steady_state` gives at a nominal rate for the
estimator's ``joint_acceleration_stddev`` (``joint_acceleration_stddev_from_filter``).

A restart (the first sample, a stamp gap above ``max_gap``) sets ``x_j = [q, q̇ᵐ (or 0), 0, 0]`` and
``P = diag(r_q, r_v or V0², A0², J0²)`` (:data:`PRIOR`, wide); the output exists from the second
sample on, as with the low-pass (:mod:`.filters`). Docs: docs/joint_acceleration.md.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..jit import njit
from ..kernels.layout import Layout

#: the filter's block of floats: parameters (s, r_q, r_v, the restart's diagonal), the shared
#: covariance P, Φ, Q, the gain G (n × 2), scratch, then the joints' states (n per joint, stride 4)
KF = Layout([("K_S", 1), ("K_RQ", 1), ("K_RV", 1), ("K_P0", 4), ("K_P", 16), ("K_PHI", 16), ("K_Q", 16),
             ("K_G", 8), ("K_T", 16), ("K_X", 0)])
K_S, K_RQ, K_RV, K_P0, K_P, K_PHI, K_Q, K_G, K_T, K_X = KF.slots
NONE_T = np.iinfo(np.int64).min          # input_core.NONE: "no sample yet"
#: order of the chain by model name
MODELS = {"constant_acceleration": 3, "constant_jerk": 4}
#: standard deviations of the restart's velocity (without a measured one), acceleration and jerk
PRIOR = (10.0, 100.0, 1.0e4)


def block_size(nj: int) -> int:
    """Floats of the block for ``nj`` joints."""
    return KF.size + 4 * nj


def set_parameters(F, k: int, model: str, process_noise: float, position_stddev: float,
                   velocity_stddev: float) -> int:
    """Write the parameters into the block at ``F[k:]``; returns the order ``n``."""
    n = MODELS[model]
    F[k + K_S], F[k + K_RQ], F[k + K_RV] = process_noise, position_stddev ** 2, velocity_stddev ** 2
    F[k + K_P0:k + K_P0 + 4] = (position_stddev ** 2, (velocity_stddev or PRIOR[0]) ** 2, PRIOR[1] ** 2,
                                PRIOR[2] ** 2)
    return n


# ============================================================================ compiled
@njit
def _fact(m):
    f = 1.0
    for i in range(2, m + 1):
        f *= i
    return f


@njit
def _transition(F, k, n, dt):
    """Φ and Q of the chain of order ``n`` over ``dt`` (module docstring)."""
    s = F[k + K_S]
    for a in range(n):
        for b in range(n):
            F[k + K_PHI + 4 * a + b] = dt ** (b - a) / _fact(b - a) if b >= a else 0.0
            p = 2 * n - 1 - a - b
            F[k + K_Q + 4 * a + b] = s * dt ** p / (_fact(n - 1 - a) * _fact(n - 1 - b) * p)


@njit
def covariance_step(F, k, n, dt, use_v):
    """P ← Φ P Φᵀ + Q, then the update with the position (and velocity) rows: G and P (module
    docstring). ``use_v``: the sample has a velocity measurement."""
    _transition(F, k, n, dt)
    P, Phi, T = k + K_P, k + K_PHI, k + K_T
    for a in range(n):                                   # T = Φ P
        for b in range(n):
            acc = 0.0
            for c in range(a, n):
                acc += F[Phi + 4 * a + c] * F[P + 4 * c + b]
            F[T + 4 * a + b] = acc
    for a in range(n):                                   # P⁻ = T Φᵀ + Q
        for b in range(n):
            acc = F[k + K_Q + 4 * a + b]
            for c in range(b, n):
                acc += F[T + 4 * a + c] * F[Phi + 4 * b + c]
            F[P + 4 * a + b] = acc
    G = k + K_G
    s00 = F[P] + F[k + K_RQ]
    if use_v:                                            # S (2 × 2) and G = P⁻ Hᵀ S⁻¹
        s01, s11 = F[P + 1], F[P + 5] + F[k + K_RV]
        det = s00 * s11 - s01 * s01
        i00, i01, i11 = s11 / det, -s01 / det, s00 / det
        for a in range(n):
            pa0, pa1 = F[P + 4 * a], F[P + 4 * a + 1]
            F[G + 2 * a] = pa0 * i00 + pa1 * i01
            F[G + 2 * a + 1] = pa0 * i01 + pa1 * i11
    else:
        for a in range(n):
            F[G + 2 * a] = F[P + 4 * a] / s00
            F[G + 2 * a + 1] = 0.0
    for a in range(n):                                   # P = P⁻ − G (H P⁻) (= P⁻ − G S Gᵀ)
        for b in range(n):
            F[T + 4 * a + b] = F[G + 2 * a] * F[P + 4 * 0 + b] + F[G + 2 * a + 1] * F[P + 4 * 1 + b]
    for a in range(n * 4):
        F[P + a] -= F[T + a]
    for a in range(n):                                   # symmetric to rounding
        for b in range(a + 1, n):
            m = 0.5 * (F[P + 4 * a + b] + F[P + 4 * b + a])
            F[P + 4 * a + b] = F[P + 4 * b + a] = m


@njit
def _restart(F, k, n, nj, kq, kv, has_v):
    for a in range(16):
        F[k + K_P + a] = 0.0
    for a in range(n):
        F[k + K_P + 5 * a] = F[k + K_P0 + a]
    for j in range(nj):
        x = k + K_X + 4 * j
        F[x] = F[kq + j]
        F[x + 1] = F[kv + j] if has_v else 0.0
        F[x + 2] = 0.0
        F[x + 3] = 0.0


@njit
def kalman_step(I, it, iready, F, k, n, nj, kq, kv, has_v, kdq, kacc, t, max_gap):
    """One joint-state sample stamped ``t`` (ns): positions ``F[kq:kq+nj]``, velocities
    ``F[kv:kv+nj]`` (``has_v``: present and used); the filter's block at ``F[k:]`` of order ``n``;
    ``t_{k−1} = I[it]``, readiness ``I[iready]``. Writes the posterior q̇ to ``F[kdq:]`` and q̈ to
    ``F[kacc:]`` (``kdq`` may be ``kv``). Returns whether they hold an output."""
    use_v = has_v and F[k + K_RV] > 0.0
    if I[it] != NONE_T:
        dt = (t - I[it]) * 1e-9
        if dt > 0.0 and dt <= max_gap:
            covariance_step(F, k, n, dt, use_v)
            Phi, G = k + K_PHI, k + K_G
            for j in range(nj):
                x = k + K_X + 4 * j
                for a in range(n):                       # x⁻ = Φ x (upper triangular: in place, top down)
                    acc = 0.0
                    for c in range(a, n):
                        acc += F[Phi + 4 * a + c] * F[x + c]
                    F[x + a] = acc
                nu0 = F[kq + j] - F[x]
                nu1 = F[kv + j] - F[x + 1] if use_v else 0.0
                for a in range(n):
                    F[x + a] += F[G + 2 * a] * nu0 + F[G + 2 * a + 1] * nu1
                F[kdq + j] = F[x + 1]
                F[kacc + j] = F[x + 2]
            I[iready] = 1
            I[it] = t
            return True
    _restart(F, k, n, nj, kq, kv, use_v)
    for j in range(nj):
        F[kdq + j] = F[k + K_X + 4 * j + 1]
        F[kacc + j] = 0.0
    I[it] = t
    I[iready] = 0
    return False



# ============================================================================ Python
def steady_state(model: str, process_noise: float, position_stddev: float, velocity_stddev: float,
                 rate_hz: float, tol: float = 1e-12, max_iter: int = 100000) -> np.ndarray:
    """The filter's steady-state posterior covariance ``P`` (``n × n``; [q, q̇, q̈(, q⃛)]) at a
    constant sample rate, by iterating :func:`covariance_step` (the one the filter runs)."""
    F = np.zeros(KF.size)
    n = set_parameters(F, 0, model, process_noise, position_stddev, velocity_stddev)
    F[K_P:K_P + 16] = np.diag(np.r_[F[K_P0:K_P0 + n], np.zeros(4 - n)]).reshape(16)
    dt, use_v = 1.0 / rate_hz, velocity_stddev > 0.0
    for _ in range(max_iter):
        old = F[K_P:K_P + 16].copy()
        covariance_step(F, 0, n, dt, use_v)
        if np.max(np.abs(F[K_P:K_P + 16] - old)) <= tol * max(1.0, np.max(np.abs(old))):
            break
    return F[K_P:K_P + 16].reshape(4, 4)[:n, :n].copy()


@functools.lru_cache(maxsize=64)       # a steady state per setting: called on every parameter check
def acceleration_stddev(model: str, process_noise: float, position_stddev: float, velocity_stddev: float,
                        rate_hz: float) -> float:
    """``sqrt(P_q̈q̈)`` of :func:`steady_state` (rad/s²): what the filter hands the estimator."""
    return math.sqrt(steady_state(model, process_noise, position_stddev, velocity_stddev, rate_hz)[2, 2])


class KalmanDerivative:
    """The filter on its own arrays (``n_joints`` joints; see the module docstring): :meth:`update`
    with positions (and velocities), then :attr:`velocity`, :attr:`acceleration`."""

    def __init__(self, n_joints: int, model: str = "constant_jerk", process_noise: float = 1.0e6,
                 position_stddev: float = 1.0e-3, velocity_stddev: float = 0.0, max_gap: float = 0.1):
        nj = self.n_joints = int(n_joints)
        self._I = np.array([NONE_T, 0], dtype=np.int64)
        self._F = np.zeros(block_size(nj) + 4 * nj)
        self._n = set_parameters(self._F, 0, model, process_noise, position_stddev, velocity_stddev)
        b = block_size(nj)
        self._kq, self._kv, self._kdq, self._kacc = b, b + nj, b + 2 * nj, b + 3 * nj
        self.velocity, self.acceleration = self._F[self._kdq:self._kdq + nj], self._F[self._kacc:self._kacc + nj]
        self.max_gap = float(max_gap)

    @property
    def covariance(self) -> np.ndarray:
        """The shared posterior covariance ``P`` (``n × n``)."""
        return self._F[K_P:K_P + 16].reshape(4, 4)[:self._n, :self._n]

    def update(self, stamp_ns: int, q, dq=None) -> bool:
        """Add the sample (positions ``q``, velocities ``dq`` or None) stamped ``stamp_ns``; returns
        whether :attr:`velocity` and :attr:`acceleration` hold an output."""
        F, nj = self._F, self.n_joints
        F[self._kq:self._kq + nj] = q
        if dq is not None:
            F[self._kv:self._kv + nj] = dq
        return kalman_step(self._I, 0, 1, F, 0, self._n, nj, self._kq, self._kv, dq is not None, self._kdq,
                           self._kacc, int(stamp_ns), self.max_gap)
