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
    Lp, Li, Up, Ui = [0], [], [0], []
    urows: list[list[int]] = []
    for i in range(n):
        cols = set(indices[indptr[i]:indptr[i + 1]].tolist())
        heap = [c for c in cols if c < i]
        heapq.heapify(heap)
        lower = []
        seen = set(heap)
        while heap:
            k = heapq.heappop(heap)
            lower.append(k)
            for c in urows[k][1:]:           # U(k, k+1:)
                if c not in cols:
                    cols.add(c)
                if c < i and c not in seen:
                    seen.add(c)
                    heapq.heappush(heap, c)
        upper = sorted(c for c in cols if c >= i)
        if not upper or upper[0] != i:
            raise ValueError(f"structurally zero pivot in row {i}")
        urows.append(upper)
        Li.extend(lower)
        Lp.append(len(Li))
        Ui.extend(upper)
        Up.append(len(Ui))
    as_int = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
    return as_int(Lp), as_int(Li), as_int(Up), as_int(Ui)


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
    f = 0
    for i in range(len(Lp) - 1):
        ks = Li[Lp[i]:Lp[i + 1]]
        f += int(np.sum(1 + 2 * urow[ks]))          # division + multiply-subtract per U entry
    f += 2 * len(Li) + 2 * int(np.sum(urow)) + (len(Lp) - 1)
    return f
