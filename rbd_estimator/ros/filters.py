"""Accelerations from velocities: finite difference over the stamp difference + first-order low-pass.

For samples ``x_k`` stamped ``t_k`` (seconds, from the message headers):

    Δt_k = t_k − t_{k−1}
    a_k  = (x_k − x_{k−1}) / Δt_k                       backward finite difference
    α_k  = Δt_k / (Δt_k + T_c),   T_c = 1 / (2π f_c)    (α_k = 1 when f_c = 0: no low-pass)
    y_k  = y_{k−1} + α_k (a_k − y_{k−1})                first-order low-pass (RC, backward Euler)
    y_1  = a_1                                           initialised with the first difference

The first sample only initialises ``x_{k−1}``: an output exists from the second sample on. A
sample whose stamp does not increase is refused (the caller counts it); a gap ``Δt_k`` longer than
``max_gap`` restarts the filter (that sample becomes the first one again). A constant acceleration
is reproduced exactly from the first output on, whatever ``f_c``.
"""
from __future__ import annotations

import math

import numpy as np


class DerivativeFilter:
    """Filtered time derivative of an ``n``-vector signal (see the module docstring)."""

    def __init__(self, n: int, cutoff_hz: float, max_gap: float = 0.1):
        self.n = n
        self.value = np.zeros(n)          # y_k, valid when self.ready
        self._prev = np.zeros(n)          # x_{k−1}
        self._raw = np.zeros(n)           # a_k
        self._t_prev = None               # t_{k−1}, ns
        self.ready = False
        self.set_cutoff(cutoff_hz)
        self.max_gap = float(max_gap)

    def set_cutoff(self, cutoff_hz: float) -> None:
        if not (math.isfinite(cutoff_hz) and cutoff_hz >= 0.0):
            raise ValueError(f"cutoff must be a finite frequency >= 0 Hz, got {cutoff_hz!r}")
        self.cutoff_hz = float(cutoff_hz)
        self._Tc = 1.0 / (2.0 * math.pi * cutoff_hz) if cutoff_hz > 0.0 else 0.0

    def reset(self) -> None:
        self._t_prev = None
        self.ready = False

    def update(self, stamp_ns: int, x: np.ndarray) -> bool:
        """Add sample ``x`` stamped ``stamp_ns``; returns whether :attr:`value` holds an output.
        The caller guarantees increasing stamps."""
        if self._t_prev is None:
            self._prev[:] = x
            self._t_prev = stamp_ns
            self.ready = False
            return False
        dt = (stamp_ns - self._t_prev) * 1e-9
        if dt <= 0.0 or dt > self.max_gap:
            self._prev[:] = x
            self._t_prev = stamp_ns
            self.ready = False
            return False
        np.subtract(x, self._prev, out=self._raw)
        self._raw /= dt
        if self.ready:
            alpha = dt / (dt + self._Tc)
            self.value += alpha * (self._raw - self.value)
        else:
            self.value[:] = self._raw
            self.ready = True
        self._prev[:] = x
        self._t_prev = stamp_ns
        return True
