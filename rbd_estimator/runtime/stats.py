"""Rolling statistics of the last samples (tick latency, condition estimates): median, 99th percentile, extremes."""
from __future__ import annotations

import numpy as np


class RollingStats:
    """The last ``capacity`` values in a ring buffer; :meth:`summary` sorts a copy (off the tick path)."""

    def __init__(self, capacity: int = 4096):
        self._buf = np.zeros(capacity)
        self._n = 0          # total values added
        self.capacity = capacity

    def add(self, value: float) -> None:
        self._buf[self._n % self.capacity] = value
        self._n += 1

    def clear(self) -> None:
        self._n = 0

    @property
    def count(self) -> int:
        return self._n

    def last(self) -> float:
        """The value added last (NaN when none)."""
        return float(self._buf[(self._n - 1) % self.capacity]) if self._n else float("nan")

    def summary(self) -> dict:
        """``{'median', 'p99', 'max', 'min', 'count'}`` over the values in the buffer (NaN when empty)."""
        k = min(self._n, self.capacity)
        if k == 0:
            return {"median": float("nan"), "p99": float("nan"), "max": float("nan"), "min": float("nan"), "count": 0}
        vals = np.sort(self._buf[:k])
        return {"median": float(np.median(vals)), "p99": float(vals[min(k - 1, int(np.ceil(0.99 * k)) - 1)]),
                "max": float(vals[-1]), "min": float(vals[0]), "count": self._n}
