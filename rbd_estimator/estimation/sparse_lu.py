"""Static-pivot sparse LU: symbolic factorisation once (plan), numeric factorisation every tick.

Nori §IV-D: the permutations ``P``, ``Q`` are chosen off-line on the worst-case sparsity pattern;
at run time ``P A Q = L U`` is refactorised with the same pivots and the same patterns, then
solved by forward and backward substitution. The kernels below are the row-oriented (IKJ,
Doolittle) algorithm: row ``i`` of ``L`` and ``U`` is computed from row ``i`` of ``P A Q`` and the
rows ``k < i`` of ``U`` named by the pattern of ``L[i, :]``. For a matrix that is triangular
after permutation ``L`` has the pattern of ``A`` and ``U`` is diagonal: zero fill-in, and the
factorisation plus solve is a plain forward substitution.
"""
from __future__ import annotations

import heapq

import numpy as np

from ..jit import njit


def symbolic_lu(indptr: np.ndarray, indices: np.ndarray, n: int):
    """Patterns of ``L`` (strictly lower) and ``U`` (upper, diagonal first) of a CSR pattern
    without pivoting. Returns CSR ``(Lp, Li, Up, Ui)`` with sorted column indices."""
    Lp, Li, Up, Ui, bad = _symbolic_lu(np.asarray(indptr, np.int64), np.asarray(indices, np.int64), n)
    if bad >= 0:
        raise ValueError(f"structurally zero pivot in row {bad}")
    return Lp, Li, Up, Ui


@njit
def _symbolic_lu(indptr, indices, n):
    """Row ``i`` of ``L`` and ``U`` is the pattern of row ``i`` of ``A`` merged with ``U(k, k+1:)``
    for every ``k`` of ``L(i, :)``, visited in increasing ``k`` (a heap, since the merge adds
    columns ``k < c < i`` still to visit). Returns ``(Lp, Li, Up, Ui, bad)`` with ``bad`` the
    first row without a diagonal entry in ``U`` (else -1)."""
    Lp, Up = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
    Li, Ui = np.empty(max(16, indices.shape[0]), np.int64), np.empty(max(16, indices.shape[0]), np.int64)
    mark = np.full(n, -1, np.int64)
    upper = np.empty(n, np.int64)
    heap = [np.int64(0)]
    heap.pop()
    nl = nu = 0
    for i in range(n):
        nup = 0
        for p in range(indptr[i], indptr[i + 1]):
            nup = _visit(indices[p], i, mark, heap, upper, nup)
        while len(heap) > 0:
            k = heapq.heappop(heap)
            Li = _room(Li, nl + 1)
            Li[nl] = k
            nl += 1
            for q in range(Up[k] + 1, Up[k + 1]):          # U(k, k+1:)
                nup = _visit(Ui[q], i, mark, heap, upper, nup)
        Lp[i + 1] = nl
        row = np.sort(upper[:nup])
        if nup == 0 or row[0] != i:
            return Lp, Li[:nl].copy(), Up, Ui[:nu].copy(), i
        Ui = _room(Ui, nu + nup)
        Ui[nu:nu + nup] = row
        nu += nup
        Up[i + 1] = nu
    return Lp, Li[:nl].copy(), Up, Ui[:nu].copy(), -1


@njit
def _visit(c, i, mark, heap, upper, nup):
    """Column ``c`` in row ``i``'s pattern, once: to the heap of ``L`` columns when ``c < i``, else
    appended to ``upper[:nup]``. Returns the new ``nup``."""
    if mark[c] != i:
        mark[c] = i
        if c < i:
            heapq.heappush(heap, c)
        else:
            upper[nup] = c
            nup += 1
    return nup


@njit
def _room(a, size):
    """``a``, or a copy of it twice as large when it has fewer than ``size`` entries."""
    if size <= a.shape[0]:
        return a
    b = np.empty(max(size, 2 * a.shape[0]), a.dtype)
    b[:a.shape[0]] = a
    return b


@njit
def gather(ptr, idx, coef, src, out):
    """``out = G src`` for a CSR matrix ``G = (ptr, idx, coef)``: the sparse linear maps that turn
    sources into matrix values, right-hand sides and outputs."""
    for k in range(out.shape[0]):
        s = 0.0
        for p in range(ptr[k], ptr[k + 1]):
            s += coef[p] * src[idx[p]]
        out[k] = s


@njit
def numeric_lu(Ap, Ai, Ax, Lp, Li, Lx, Up, Ui, Ux, w):
    """Row-oriented numeric LU of CSR ``A`` into the fixed patterns of ``L`` (unit lower) and
    ``U``. Returns the smallest ``|pivot| / max|row of A|`` (a cheap stability monitor)."""
    n = Ap.shape[0] - 1
    worst = np.inf
    for i in range(n):
        amax = 0.0
        for p in range(Ap[i], Ap[i + 1]):
            w[Ai[p]] = Ax[p]
            if abs(Ax[p]) > amax:
                amax = abs(Ax[p])
        for p in range(Lp[i], Lp[i + 1]):
            k = Li[p]
            lik = w[k] / Ux[Up[k]]
            Lx[p] = lik
            w[k] = 0.0
            if lik != 0.0:
                for q in range(Up[k] + 1, Up[k + 1]):
                    w[Ui[q]] -= lik * Ux[q]
        for q in range(Up[i], Up[i + 1]):
            Ux[q] = w[Ui[q]]
            w[Ui[q]] = 0.0
        piv = abs(Ux[Up[i]])
        if amax > 0.0 and piv / amax < worst:
            worst = piv / amax
    return worst


@njit
def lu_solve(Lp, Li, Lx, Up, Ui, Ux, x):
    """In place: ``x ← U⁻¹ L⁻¹ x`` (forward then backward substitution)."""
    n = x.shape[0]
    for i in range(n):
        s = x[i]
        for p in range(Lp[i], Lp[i + 1]):
            s -= Lx[p] * x[Li[p]]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        for q in range(Up[i] + 1, Up[i + 1]):
            s -= Ux[q] * x[Ui[q]]
        x[i] = s / Ux[Up[i]]


def flops(Lp, Li, Up) -> int:
    """Floating-point operations of one numeric factorisation plus one solve."""
    urow = np.diff(Up) - 1
    f = int(np.sum(1 + 2 * urow[Li]))               # per L entry: division + multiply-subtract per U entry
    f += 2 * len(Li) + 2 * int(np.sum(urow)) + (len(Lp) - 1)
    return f
