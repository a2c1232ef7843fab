"""The per-estimator object: constant blobs, work space, and the Python entry of a tick (inputs
converted before the kernel when they are not its types)."""
from __future__ import annotations

import numpy as np

from .tick import _SIGNATURE as SIGNATURE, compiled_tick


class StructuredSolver:
    """The structured solver of one :class:`~.estimator.Estimator` (see the module docstring).

    ``ip``/``fp``: packed constant data; ``state``: the estimator's state buffer (``fp`` and ``w``
    are views of its tail); ``w``: work space; ``n_z`` unknowns are left after the
    tree elimination (``a_0``, ``h`` and, measured, the ``n_qdd`` joint accelerations' ``δ``), ``n_h``
    contact components; ``m_soft`` sensor rows
    (``m_ls`` after compression)."""

    def __init__(self, ip, state, fp, w, n_h, m_soft, m_ls, floating, convert, n_qdd=0):
        self.ip, self.state, self.fp, self.w = ip, state, fp, w
        self._convert = convert
        self.n_h, self.m_soft, self.m_ls, self.floating, self.n_qdd = n_h, m_soft, m_ls, floating, n_qdd
        self.n_z = n_h + n_qdd + (6 if floating else 0)
        self.conversions = 0            # calls whose q, dq, ddq or y were converted before the kernel
        self.kernel = compiled_tick()
        self.estimate = self._direct_call()

    def _direct_call(self):
        """``estimate(q, dq, ddq, y) → status``, the per-tick entry (see :meth:`Estimator.estimate`):
        float64 arrays (any layout) go straight to the kernel with its constant arguments bound
        once; anything else is converted first (``convert``, which raises ``ValueError`` naming a
        bad input). The test is a few type checks in Python, never a failed call (numba's failed
        dispatch costs ~300 µs). Having made them, the call goes to the kernel compiled for its
        signature (``Dispatcher.get_overload``), skipping the dispatcher's own typing of the
        arguments (0.1–0.2 µs)."""
        convert, compiled = self._convert, self.kernel.get_overload(SIGNATURE)
        ip, S = self.ip, self.state
        nd, f64 = np.ndarray, np.dtype(np.float64)

        def estimate(q, dq, ddq, y):
            if (type(q) is nd and type(dq) is nd and type(ddq) is nd and type(y) is nd and q.dtype is f64
                    and dq.dtype is f64 and ddq.dtype is f64 and y.dtype is f64 and y.ndim == 1 and q.ndim == 1
                    and dq.ndim == 1 and ddq.ndim == 1):
                status = compiled(ip, S, q, dq, ddq, y)
                if status != 3:
                    return status
            self.conversions += 1
            return compiled(ip, S, *convert(q, dq, ddq, y))      # float64 vectors, checked
        return estimate

    def summary(self) -> str:
        return (f"structured solver: {self.n_z} unknowns after the tree elimination "
                f"({'a_0 (6) + ' if self.floating else ''}{self.n_h} contact components"
                f"{f' + {self.n_qdd} joint accelerations' if self.n_qdd else ''}), "
                f"{6 if self.floating else 0} base rows, {self.m_soft} sensor rows ({self.m_ls} after compression)")
