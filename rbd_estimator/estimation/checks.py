"""Compiled input checks shared by the generic and the structured tick."""
from __future__ import annotations

import numpy as np

from ..jit import njit


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
