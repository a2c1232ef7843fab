"""Sparse LTL and LTDL factorisations of a JSIM and their four kernels (Featherstone 2005, §2, App. A).

``H = LᵀL`` (LTL) or ``H = LᵀDL`` (LTDL) with ``L`` lower triangular. Processing rows from ``n`` down
to 1 and walking only the ancestors ``λ(k), λ(λ(k)), …`` of each row, the factorisation touches
only the branch-induced nonzeros of eq. 6 and produces no fill-in: ``L_ij = 0`` whenever
``j ∉ anc(i) ∪ {i}``.

Conventions: indices are 0-based and the parent array ``lam`` uses ``-1`` for "no parent" (the
paper's ``0``); it must satisfy ``-1 ≤ lam[i] < i`` (eq. 2). For a :class:`RobotModel` use
``model.expanded_parents``. Matrices are dense numpy arrays; only their lower triangle is read or
written. ``x`` in the kernels is a vector (n,) or a matrix whose *rows* are indexed by the
tree (n, m); kernels return a new array and never modify ``L`` or ``x``.

The ``*_inplace`` functions overwrite their argument; :func:`ltl` and :func:`ltdl` work on a copy.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ltl_inplace", "ltdl_inplace", "ltl", "ltdl", "mul_L", "mul_Lt", "solve_L", "solve_Lt"]


def ltl_inplace(A: np.ndarray, lam) -> np.ndarray:
    """Sparse LTL factorisation ``A = LᵀL`` in situ (Featherstone §2 listing).

    ``A``: n × n symmetric positive-definite float array with the pattern of eq. 6 for ``lam``;
    only its lower triangle is read. On return the lower triangle (diagonal included) holds ``L``;
    the strict upper triangle is untouched. Returns ``A``. Raises ``numpy.linalg.LinAlgError`` if a
    pivot is not positive (``A`` is not positive definite).
    """
    lam = _parent_array(lam, A)
    _check_pivot(A, ltl_loops(A, lam))
    return A


def ltl_loops(A: np.ndarray, lam: np.ndarray) -> int:
    """The loops of :func:`ltl_inplace` on a checked parent array (compiled as they stand by
    :mod:`.ltl_jit`). Returns −1, or the row ``k`` of the first pivot that is not positive."""
    for k in range(A.shape[0] - 1, -1, -1):                         # k = n … 1
        if not A[k, k] > 0.0:
            return k
        A[k, k] = np.sqrt(A[k, k])                                  # H_kk = √H_kk
        j = lam[k]
        while j >= 0:
            A[k, j] /= A[k, k]                                      # H_kj = H_kj / H_kk
            j = lam[j]
        i = lam[k]
        while i >= 0:
            j = i
            while j >= 0:
                A[i, j] -= A[k, i] * A[k, j]                        # H_ij = H_ij − H_ki H_kj
                j = lam[j]
            i = lam[i]
    return -1


def ltdl_inplace(A: np.ndarray, lam) -> np.ndarray:
    """Sparse LTDL factorisation ``A = LᵀDL`` in situ (Featherstone App. A).

    Same inputs and conditions as :func:`ltl_inplace`. On return the diagonal of ``A`` holds ``D``
    and the strict lower triangle holds the off-diagonal elements of the unit factor ``L`` (its
    unit diagonal is implicit: use the kernels with ``unit=True``). Returns ``A``.
    """
    lam = _parent_array(lam, A)
    _check_pivot(A, ltdl_loops(A, lam))
    return A


def ltdl_loops(A: np.ndarray, lam: np.ndarray) -> int:
    """The loops of :func:`ltdl_inplace` on a checked parent array (compiled as they stand by
    :mod:`.ltl_jit`). Returns −1, or the row ``k`` of the first pivot that is not positive."""
    for k in range(A.shape[0] - 1, -1, -1):                         # k = n … 1
        if not A[k, k] > 0.0:
            return k
        i = lam[k]
        while i >= 0:
            a = A[k, i] / A[k, k]                                   # a = A_ki / A_kk
            j = i
            while j >= 0:
                A[i, j] -= A[k, j] * a                              # A_ij = A_ij − A_kj a
                j = lam[j]
            A[k, i] = a                                             # A_ki = a
            i = lam[i]
    return -1


def ltl(H: np.ndarray, parents) -> np.ndarray:
    """``L`` with ``H = LᵀL`` (lower triangular, zeros above the diagonal); ``H`` is not modified."""
    A = np.array(H, dtype=float)
    return np.tril(ltl_inplace(A, parents))


def ltdl(H: np.ndarray, parents) -> tuple[np.ndarray, np.ndarray]:
    """``(L, d)`` with ``H = Lᵀ diag(d) L``, ``L`` unit lower triangular (explicit ones on the
    diagonal, zeros above) and ``d`` the 1-D array of ``D``'s diagonal; ``H`` is not modified."""
    A = ltdl_inplace(np.array(H, dtype=float), parents)
    d = np.diag(A).copy()
    return np.tril(A, -1) + np.eye(A.shape[0]), d


def mul_L(L: np.ndarray, lam, x, unit: bool = False) -> np.ndarray:
    """``y = L x`` (App. A); ``unit=True`` takes ``L_ii = 1`` (LTDL factors)."""
    lam = _parent_array(lam, L)
    y = np.array(x, dtype=float)
    for i in range(L.shape[0] - 1, -1, -1):                         # i = n … 1
        y[i] = y[i] if unit else L[i, i] * y[i]                     # y_i = L_ii x_i
        j = lam[i]
        while j >= 0:
            y[i] += L[i, j] * y[j]                                  # y_i = y_i + L_ij x_j (y_j, j < i, is still x_j)
            j = lam[j]
    return y


def mul_Lt(L: np.ndarray, lam, x, unit: bool = False) -> np.ndarray:
    """``y = Lᵀ x`` (App. A); ``unit=True`` takes ``L_ii = 1``."""
    lam = _parent_array(lam, L)
    x = np.asarray(x, dtype=float)
    y = np.empty_like(x)
    for i in range(L.shape[0]):                                     # i = 1 … n
        y[i] = x[i] if unit else L[i, i] * x[i]                     # y_i = L_ii x_i
        j = lam[i]
        while j >= 0:
            y[j] += L[i, j] * x[i]                                  # y_j = y_j + L_ij x_i
            j = lam[j]
    return y


def solve_L(L: np.ndarray, lam, x, unit: bool = False) -> np.ndarray:
    """``L⁻¹ x`` (App. A); ``unit=True`` takes ``L_ii = 1``."""
    lam = _parent_array(lam, L)
    x = np.array(x, dtype=float)
    for i in range(L.shape[0]):                                     # i = 1 … n
        j = lam[i]
        while j >= 0:
            x[i] -= L[i, j] * x[j]                                  # x_i = x_i − L_ij x_j
            j = lam[j]
        if not unit:
            x[i] /= L[i, i]                                         # x_i = x_i / L_ii
    return x


def solve_Lt(L: np.ndarray, lam, x, unit: bool = False) -> np.ndarray:
    """``L⁻ᵀ x`` (App. A); ``unit=True`` takes ``L_ii = 1``."""
    lam = _parent_array(lam, L)
    x = np.array(x, dtype=float)
    for i in range(L.shape[0] - 1, -1, -1):                         # i = n … 1
        if not unit:
            x[i] /= L[i, i]                                         # x_i = x_i / L_ii
        j = lam[i]
        while j >= 0:
            x[j] -= L[i, j] * x[i]                                  # x_j = x_j − L_ij x_i
            j = lam[j]
    return x


def _parent_array(lam, A: np.ndarray) -> np.ndarray:
    """Validate ``lam`` against eq. 2 and the size of ``A``; return it as an int array."""
    lam = np.asarray(lam, dtype=np.int64)
    n = A.shape[0]
    if A.ndim != 2 or A.shape[1] != n:
        raise ValueError(f"expected a square matrix, got shape {A.shape}")
    if lam.shape != (n,):
        raise ValueError(f"parent array has {lam.size} entries but the matrix is {n}×{n}; "
                         "pass the expanded parent array (RobotModel.expanded_parents)")
    bad = np.flatnonzero((lam < -1) | (lam >= np.arange(n)))
    if bad.size:
        raise ValueError(f"parent array violates -1 <= lam[i] < i (eq. 2) at i = {bad[0]}: "
                         "number the tree regularly, every body after its parent")
    return lam


def _check_pivot(A: np.ndarray, k: int) -> None:
    """Raise if row ``k`` (−1: none) has a pivot that is not positive."""
    if k >= 0 and not A[k, k] > 0.0:
        raise np.linalg.LinAlgError(f"pivot {k} is {A[k, k]!r}: the matrix is not positive definite")
