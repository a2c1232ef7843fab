"""The compiled per-tick state of an estimator on a robot with four-bars (:class:`~.loops.LoopEstimator`).

:func:`loop_state` closes every state-dependent cluster at ``(y, ẏ)`` (Chignoli et al., Alg. 1,
eq. 3: the same equations as :mod:`~rbd_estimator.model.loop_closure`) on the
:class:`~rbd_estimator.model.cluster_packing.PackedClusterTree` and forms ``[q q̇ q̈]``, in
preallocated buffers; :func:`index_table` packs the integers it needs.
"""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit
from ..kernels.layout import Layout, Packer
from ..model.cluster_kernels import cluster_constraint, cluster_position
from ..model.cluster_packing import CLOSURE_FAILED, NOT_FINITE, H_CNY, H_CW, H_QREF, NW, SINGULAR, W_G, W_g

__all__ = ["LOOP_TABLE", "index_table", "loop_state"]

# index table of :func:`loop_state`: header (sizes _N_*, offsets _O_* of the blocks it names), then the blocks
LOOP_TABLE = Layout("N_NL N_Y N_J N_Q N_V O_K O_R0 O_C0 O_ROWS O_COLS O_QIX O_YQ O_YV")
(_N_NL, _N_Y, _N_J, _N_Q, _N_V, _O_K, _O_R0, _O_C0, _O_ROWS, _O_COLS, _O_QIX, _O_YQ, _O_YV) = LOOP_TABLE.slots
LOOP_TABLE.check(globals(), "_")


def index_table(nonlinear, y_q, y_v, n_joints: int, nq: int, nv: int) -> np.ndarray:
    """The integers :func:`loop_state` needs, in one array: sizes, then the state-dependent
    clusters, the start of each one's rows (and spanning ``q`` indices) and columns, the rows (tree
    joints), columns (independent joints) and ``q`` indices, and the spanning ``q``/``q̇`` index of
    every independent joint; its last two entries receive a failure's status and index."""
    ks = [k for k, *_ in nonlinear]
    rows = [r for _, r, *_ in nonlinear]
    cols = [c for _, _, c, *_ in nonlinear]
    qix = [q for *_, q in nonlinear]
    blocks = [ks, _starts(rows), _starts(cols), _cat(rows), _cat(cols), _cat(qix), y_q, y_v]
    table = Packer(np.int64, header=LOOP_TABLE)
    header = dict(N_NL=len(ks), N_Y=len(y_q), N_J=n_joints, N_Q=nq, N_V=nv)
    header.update(zip(("O_K", "O_R0", "O_C0", "O_ROWS", "O_COLS", "O_QIX", "O_YQ", "O_YV"), map(table.add, blocks)))
    table.reserve(2)
    return table.array(header)


def _starts(parts) -> list:
    out = [0]
    for p in parts:
        out.append(out[-1] + len(p))
    return out


def _cat(parts) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)


@fast_njit
def loop_state(ip, fp, w, nl, E):
    """One tick's spanning state ``[q q̇ q̈]`` (rows of ``Q``, tree joints) from ``[y ẏ ÿ]`` (rows of
    ``Y``): checks ``Y`` is finite, closes every state-dependent cluster at ``(y, ẏ)`` from the
    previous assembly ``q_warm`` (from the reference when that fails; Alg. 1, line 3), writes its
    ``G_k`` into ``G`` and ``Gᵀ`` (lines 4–6), then ``[q q̇ q̈] = G [y ẏ ÿ]`` with ``q += γ(0)``
    (constant loops), ``q_k = γ_k(y_k)`` and ``q̈_k += g_k`` (eq. 3). ``E`` holds, row-major,
    ``Y`` (3 × n_y), the spanning ``q``, ``q̇``, ``q_warm``, ``G`` (n_j × n_y), ``Gᵀ``, ``γ(0)``
    (n_j) and ``Q`` (3 × n_j). Returns 0, or a status that it also writes with the failing loop
    (or flat input) index into the last two entries of ``nl``."""
    ny, nj, nq, nv = nl[_N_Y], nl[_N_J], nl[_N_Q], nl[_N_V]
    eY = 0
    eq = eY + 3 * ny
    edq = eq + nq
    ew = edq + nv
    eG = ew + nq
    eGT = eG + nj * ny
    eo = eGT + ny * nj
    eQ = eo + nj
    n_info = nl.size - 2
    for x in range(3 * ny):
        if not np.isfinite(E[eY + x]):
            nl[n_info], nl[n_info + 1] = NOT_FINITE, x
            return NOT_FINITE
    qs, dqs, q_warm = E[eq:eq + nq], E[edq:edq + nv], E[ew:ew + nq]
    for j in range(ny):
        qs[nl[nl[_O_YQ] + j]] = E[eY + j]
        dqs[nl[nl[_O_YV] + j]] = E[eY + ny + j]
    qref = fp[ip[H_QREF]:ip[H_QREF] + nq]
    for n in range(nl[_N_NL]):
        k = nl[nl[_O_K] + n]
        r0, r1 = nl[nl[_O_R0] + n], nl[nl[_O_R0] + n + 1]
        c0 = nl[nl[_O_C0] + n]
        bad = cluster_position(ip, fp, w, k, qs, q_warm)
        if bad >= 0:                                                # lost the branch: from the reference
            bad = cluster_position(ip, fp, w, k, qs, qref)
            if bad >= 0:
                nl[n_info], nl[n_info + 1] = CLOSURE_FAILED, bad
                return CLOSURE_FAILED
        for a in range(r1 - r0):
            x = nl[nl[_O_QIX] + r0 + a]
            q_warm[x] = qs[x]
        cw = ip[H_CW] + NW * k
        go, gro = ip[cw + W_G], ip[cw + W_g]
        bad = cluster_constraint(ip, fp, w, k, qs, dqs, True, w, go, w, gro)
        if bad >= 0:
            nl[n_info], nl[n_info + 1] = SINGULAR, bad
            return SINGULAR
        nyk = ip[ip[H_CNY] + k]
        for a in range(r1 - r0):
            row = nl[nl[_O_ROWS] + r0 + a]
            for b in range(nyk):
                col = nl[nl[_O_COLS] + c0 + b]
                E[eG + ny * row + col] = w[go + nyk * a + b]
                E[eGT + nj * col + row] = w[go + nyk * a + b]
    for r in range(3):                                              # [q q̇ q̈] = G [y ẏ ÿ]
        for j in range(nj):
            s = E[eo + j] if r == 0 else 0.0
            for b in range(ny):
                s += E[eY + ny * r + b] * E[eGT + nj * b + j]
            E[eQ + nj * r + j] = s
    for n in range(nl[_N_NL]):                                      # q_k = γ_k(y_k), q̈_k += g_k
        k = nl[nl[_O_K] + n]
        r0, r1 = nl[nl[_O_R0] + n], nl[nl[_O_R0] + n + 1]
        gro = ip[ip[H_CW] + NW * k + W_g]
        for a in range(r1 - r0):
            row = nl[nl[_O_ROWS] + r0 + a]
            E[eQ + row] = qs[nl[nl[_O_QIX] + r0 + a]]
            E[eQ + 2 * nj + row] += w[gro + a]
    return 0
