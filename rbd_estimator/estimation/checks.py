"""Compiled input checks shared by the generic and the structured tick."""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit, njit, uidx as _u


@njit(error_model="python")
def first_non_finite(inputs, info) -> int:
    """1 if a value of the tuple of 1-D ``inputs`` is not finite, with ``info[0]`` = which input
    (1-based) and ``info[1]`` = its index; 0 otherwise. Both ticks check their inputs with it."""
    for k in range(len(inputs)):
        x = inputs[k]
        for i in range(x.shape[0]):
            if not np.isfinite(x[i]):
                info[0] = k + 1
                info[1] = i
                return 1
    return 0


@fast_njit
def zero_if_finite(x) -> float:
    """``Σ x_i · 0`` over a 1-D array: 0 when every value is finite, NaN otherwise. A branch-free
    probe for the ticks' common case; :func:`first_non_finite` then names the culprit."""
    s = 0.0
    for i in range(x.shape[0]):
        s += x[_u(i)] * 0.0
    return s
