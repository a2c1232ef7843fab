"""Compiled sparse LTL / LTDL factorisations and the four kernels (Featherstone 2005, §2, App. A).

The loops of the readable :mod:`.ltl`, in place and allocation-free: the factorisations are the
reference's own loops compiled; the kernels run over the columns of a 2-D ``x``. ``lam`` is the
0-based (expanded) parent array (``-1``: no parent); ``x`` is always 2-D here (a vector is passed
as an ``(n, 1)`` view), its rows indexed by the tree. The factorisations return ``-1`` or the row
of the first pivot that is not positive; :func:`bad_parent` checks eq. 2 beforehand.
"""
from __future__ import annotations

import numpy as np

from . import ltl as _ref
from ..jit import fast_njit as kernel


@kernel
def bad_parent(lam, n):
    """The first ``i`` with ``lam[i] ∉ [-1, i)`` (eq. 2), ``n`` if ``lam`` has not ``n`` entries, or −1."""
    if lam.shape[0] != n:
        return n
    for i in range(n):
        if lam[i] < -1 or lam[i] >= i:
            return i
    return -1


#: ``A = LᵀL`` and ``A = LᵀDL`` in situ: the reference's loops (§2 listing, App. A), compiled.
ltl_kernel = kernel(_ref.ltl_loops)
ltdl_kernel = kernel(_ref.ltdl_loops)


@kernel
def mul_L_kernel(L, lam, x, unit, y):
    """``y = L x`` (App. A); ``y`` may be ``x``."""
    for c in range(x.shape[1]):
        for i in range(L.shape[0] - 1, -1, -1):                     # i = n … 1
            s = x[i, c] if unit else L[i, i] * x[i, c]              # y_i = L_ii x_i
            j = lam[i]
            while j >= 0:
                s += L[i, j] * x[j, c]                              # y_i = y_i + L_ij x_j
                j = lam[j]
            y[i, c] = s


@kernel
def mul_Lt_kernel(L, lam, x, unit, y):
    """``y = Lᵀ x`` (App. A); ``y`` must not be ``x``."""
    for c in range(x.shape[1]):
        for i in range(L.shape[0]):                                 # i = 1 … n
            y[i, c] = x[i, c] if unit else L[i, i] * x[i, c]        # y_i = L_ii x_i
        for i in range(L.shape[0]):
            j = lam[i]
            while j >= 0:
                y[j, c] += L[i, j] * x[i, c]                        # y_j = y_j + L_ij x_i
                j = lam[j]


@kernel
def solve_L_kernel(L, lam, x, unit):
    """``x = L⁻¹ x`` in place (App. A)."""
    for c in range(x.shape[1]):
        for i in range(L.shape[0]):                                 # i = 1 … n
            j = lam[i]
            while j >= 0:
                x[i, c] -= L[i, j] * x[j, c]                        # x_i = x_i − L_ij x_j
                j = lam[j]
            if not unit:
                x[i, c] /= L[i, i]                                  # x_i = x_i / L_ii


@kernel
def solve_Lt_kernel(L, lam, x, unit):
    """``x = L⁻ᵀ x`` in place (App. A)."""
    for c in range(x.shape[1]):
        for i in range(L.shape[0] - 1, -1, -1):                     # i = n … 1
            if not unit:
                x[i, c] /= L[i, i]                                  # x_i = x_i / L_ii
            j = lam[i]
            while j >= 0:
                x[j, c] -= L[i, j] * x[i, c]                        # x_j = x_j − L_ij x_i
                j = lam[j]


# --------------------------------------------------------------------------- public functions
# Same names, signatures and results as the readable :mod:`.ltl` (their docstrings apply); the
# checks are compiled too, and a failed one re-runs the reference's check for its message.

def _factor_args(A, lam):
    if not (type(A) is np.ndarray and A.dtype == np.float64 and A.ndim == 2 and A.shape[0] == A.shape[1]):
        raise ValueError("expected a square float64 numpy array, got "
                         f"{type(A).__name__} {getattr(A, 'dtype', '')} of shape {np.shape(A)}")
    lam = np.asarray(lam, dtype=np.int64)
    if lam.ndim != 1 or bad_parent(lam, A.shape[0]) >= 0:
        _ref._parent_array(lam, A)                                  # raises with the reference's message
    return lam


def _factor(kernel, A, lam):
    lam = _factor_args(A, lam)
    k = kernel(A, lam)
    if k >= 0:
        _ref._check_pivot(A, k)                                     # raises LinAlgError naming pivot k
    return A


def ltl_inplace(A: np.ndarray, lam) -> np.ndarray:
    return _factor(ltl_kernel, A, lam)


def ltdl_inplace(A: np.ndarray, lam) -> np.ndarray:
    return _factor(ltdl_kernel, A, lam)


def ltl(H: np.ndarray, parents) -> np.ndarray:
    return np.tril(ltl_inplace(np.array(H, dtype=float), parents))


def ltdl(H: np.ndarray, parents) -> tuple[np.ndarray, np.ndarray]:
    A = ltdl_inplace(np.array(H, dtype=float), parents)
    d = np.diag(A).copy()
    return np.tril(A, -1) + np.eye(A.shape[0]), d


def _kernel_args(L, lam, x):
    """``(lam, y)``: the checked parent array and a new float array holding ``x``, its 2-D view."""
    lam = _factor_args(L, lam)
    y = np.array(x, dtype=float)
    if y.shape[:1] != (L.shape[0],) or y.ndim > 2:
        raise ValueError(f"x has shape {y.shape}; expected ({L.shape[0]},) or ({L.shape[0]}, m)")
    return lam, y, y.reshape(L.shape[0], -1)


def mul_L(L: np.ndarray, lam, x, unit: bool = False) -> np.ndarray:
    lam, y, y2 = _kernel_args(L, lam, x)
    mul_L_kernel(L, lam, y2, unit, y2)
    return y


def mul_Lt(L: np.ndarray, lam, x, unit: bool = False) -> np.ndarray:
    lam, x, x2 = _kernel_args(L, lam, x)
    y = np.empty_like(x)
    mul_Lt_kernel(L, lam, x2, unit, y.reshape(x2.shape))
    return y


def solve_L(L: np.ndarray, lam, x, unit: bool = False) -> np.ndarray:
    lam, y, y2 = _kernel_args(L, lam, x)
    solve_L_kernel(L, lam, y2, unit)
    return y


def solve_Lt(L: np.ndarray, lam, x, unit: bool = False) -> np.ndarray:
    lam, y, y2 = _kernel_args(L, lam, x)
    solve_Lt_kernel(L, lam, y2, unit)
    return y


for _f in (ltl_inplace, ltdl_inplace, ltl, ltdl, mul_L, mul_Lt, solve_L, solve_Lt):
    _f.__doc__ = (getattr(_ref, _f.__name__).__doc__
                  + "\n\n    Compiled; reference: :mod:`rbd_estimator.dynamics.reference`.")
