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

The update itself is compiled (:func:`rbd_estimator.runtime.input_core.derivative_update`) and runs
inside the input handling of every joint state and IMU sample; :class:`DerivativeFilter` is the
same update on its own arrays.
"""
from __future__ import annotations

import math

import numpy as np

from .input_core import NONE, derivative_update


def time_constant(cutoff_hz: float) -> float:
    """``T_c = 1 / (2π f_c)`` in seconds (0 for ``f_c = 0``: no low-pass)."""
    if not (math.isfinite(cutoff_hz) and cutoff_hz >= 0.0):
        raise ValueError(f"cutoff must be a finite frequency >= 0 Hz, got {cutoff_hz!r}")
    return 1.0 / (2.0 * math.pi * cutoff_hz) if cutoff_hz > 0.0 else 0.0


class DerivativeFilter:
    """Filtered time derivative of an ``n``-vector signal (see the module docstring)."""

    def __init__(self, n: int, cutoff_hz: float, max_gap: float = 0.1):
        self.n = n
        self._F = np.zeros(3 * n)                  # y_k, x_{k−1}, the new sample
        self._I = np.array([NONE, 0], dtype=np.int64)   # t_{k−1} (ns), ready
        self.value = self._F[:n]
        self.set_cutoff(cutoff_hz)
        self.max_gap = float(max_gap)

    def set_cutoff(self, cutoff_hz: float) -> None:
        self._Tc = time_constant(cutoff_hz)
        self.cutoff_hz = float(cutoff_hz)

    @property
    def ready(self) -> bool:
        return bool(self._I[1])

    def reset(self) -> None:
        self._I[:] = (NONE, 0)

    def update(self, stamp_ns: int, x: np.ndarray) -> bool:
        """Add sample ``x`` stamped ``stamp_ns``; returns whether :attr:`value` holds an output."""
        n = self.n
        self._F[2 * n:] = x
        return derivative_update(self._I, self._F, 0, 1, 0, n, 2 * n, n, stamp_ns, self._Tc, self.max_gap)
