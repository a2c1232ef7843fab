"""The off-line plan (Nori §IV-D, Remark 4): worst-case pattern, well-posedness, permutations and
the symbolic factorisation, computed once per model and sensor set.

* Worst-case sparsity pattern: the only state-dependent blocks are the ``ⁱX_λ(i)``; their
  entries are trigonometric in ``q`` and vanish only on a set of measure zero, so the union of
  the patterns at a few random states is the worst-case pattern.
* Well-posedness: structural rank first (a maximum bipartite matching), then numerical rank at
  random states; an ill-posed set raises :class:`IllPosedError` naming the undetermined
  quantities in the words of the configuration.
* The system to factorise is ``A`` itself when the sensors determine the unknowns exactly, or
  the augmented (KKT) system of the weighted least-squares problem when they are redundant
  (more rows than unknowns): minimise ``|A_s d − r_s|²`` (whitened sensor rows) subject to the
  Newton–Euler rows ``A_h d = r_h``.
* Permutations: a maximum-product matching puts large, state-independent entries on the
  diagonal, Tarjan's strongly connected components give the block triangular form (a
  triangularisable matrix comes out triangular: zero fill-in, Nori Remark 2), and inside each
  irreducible block SuperLU's COLAMD ordering and partial pivoting on a random instance fix a
  fill-reducing, stable static pivot sequence.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse.linalg import splu

from ..errors import IllPosedError
from ..model.cost import cost
from .layout import SystemLayout
from .sparse_lu import flops, symbolic_lu

_KIND_WORDS = {"a": "acceleration of", "f": "joint wrench into", "tau": "torque of joint",
               "qdd": "acceleration of joint", "h": "contact wrench of"}


@dataclass(frozen=True)
class PlanReport:
    """What the plan costs (``estimator.plan``). Operation counts are multiplications plus
    additions; RNEA and ABA counts use the formulas quoted in Featherstone §6."""
    n_unknowns: int
    n_equations: int
    n_sensor_rows: int
    redundant: bool
    system_size: int
    nnz: int
    nnz_factors: int
    fill_in: int
    n_blocks: int
    largest_block: int
    flops: int
    rnea_ops: int
    aba_ops: int

    def summary(self) -> str:
        kind = "weighted least squares (KKT)" if self.redundant else "square"
        return (f"{self.n_unknowns} unknowns, {self.n_equations} equations ({self.n_sensor_rows} sensor rows), "
                f"{kind} system {self.system_size}×{self.system_size} with {self.nnz} nonzeros, fill-in "
                f"{self.fill_in}, {self.n_blocks} diagonal blocks (largest {self.largest_block}), "
                f"{self.flops} flops per estimate (RNEA {self.rnea_ops}, ABA {self.aba_ops})")


def random_states(layout: SystemLayout, rng: np.random.Generator, count: int):
    """Random ``(q, dq, ω_IMU)`` with joint angles over a full turn."""
    m = layout.model
    for _ in range(count):
        yield (rng.uniform(-np.pi, np.pi, m.n_joints), rng.normal(size=m.n_joints), rng.normal(size=3))


def check_well_posed(layout: SystemLayout, A_pattern: sp.csr_matrix, A_numeric: list[sp.csr_matrix]) -> None:
    """Raise :class:`IllPosedError` unless ``[A_h; A_s]`` has full column rank (structurally,
    then numerically at every random state given)."""
    n = layout.n
    if A_pattern.shape[0] < n:
        raise IllPosedError(f"ill-posed sensor set: {A_pattern.shape[0]} equations for {n} unknowns; "
                            f"add sensors (force-torque, load cells, IMU) or change contact types")
    match = csgraph.maximum_bipartite_matching(A_pattern.tocsr(), perm_type="row")
    unmatched = np.flatnonzero(match < 0)
    if unmatched.size:
        raise IllPosedError(_undetermined_message(layout, unmatched, np.ones(unmatched.size), unmatched.size,
                                                  structural=True))
    for A in A_numeric:
        dense = A.toarray()
        _, s, Vt = la.svd(dense, full_matrices=False, lapack_driver="gesvd")
        tol = max(dense.shape) * np.finfo(float).eps * s[0] * 1e3
        null = Vt[s <= tol]
        if null.shape[0]:
            weight = np.sum(null ** 2, axis=0)
            cols = np.flatnonzero(weight > 1e-6 * weight.max())
            raise IllPosedError(_undetermined_message(layout, cols, weight[cols], null.shape[0], structural=False))


def _undetermined_message(layout, cols, weight, ndir, structural) -> str:
    groups: dict[tuple[str, str], float] = {}
    for j, w in zip(cols, weight):
        kind, owner, _ = layout.describe_column(int(j))
        groups[(kind, owner)] = groups.get((kind, owner), 0.0) + float(w)
    ranked = sorted(groups, key=lambda k: -groups[k])
    contacts = [o for k, o in ranked if k == "h"]
    others = [f"{_KIND_WORDS[k]} {o}" for k, o in ranked if k != "h"]
    parts = []
    if contacts:
        parts.append("contact wrenches of " + " and ".join(contacts))
    parts.extend(others[:6 if contacts else 8])
    what = "; ".join(parts) + ("; …" if len(others) > 6 else "")
    hint = ("add force-torque sensors or load cells on the contacts, declare fewer contacts, or use a "
            "reduced contact model (point_force, slippery)" if contacts else
            "add the sensors that observe them (IMU on the base, joint accelerations, force-torque sensors)")
    kind = "structurally" if structural else "numerically"
    return f"ill-posed sensor set ({kind}): {what}: {ndir} direction{'s' * (ndir != 1)} undetermined; {hint}"


def block_triangular_order(K: sp.csr_matrix, weights: sp.csr_matrix):
    """Row and column orders putting ``K`` in block lower triangular form with a
    maximum-product diagonal. Returns ``(row_order, col_order, blocks)`` with ``blocks`` the
    start offsets of the diagonal blocks (plus the end)."""
    N = K.shape[0]
    W = weights.tocsr().copy()
    logs = np.log(np.abs(W.data))
    W.data = logs.max() - logs + 1.0                           # min Σ -log|a| ⇔ max Π |a| (MC64-like)
    row_ind, col_ind = csgraph.min_weight_full_bipartite_matching(W)
    row_of_col = np.empty(N, dtype=np.int64)
    row_of_col[col_ind] = row_ind
    # directed graph on columns: c → c' when the row matched to c has an entry in column c'
    Km = K.tocsr()[row_of_col, :]                               # row k is the row matched to column k
    G = sp.csr_matrix((np.ones(Km.nnz), Km.indices, Km.indptr), shape=(N, N))
    ncomp, label = csgraph.connected_components(G, directed=True, connection="strong")
    # condensation DAG: dependencies must come first (lower triangular)
    C = sp.csr_matrix((np.ones(G.nnz), (label[np.repeat(np.arange(N), np.diff(G.indptr))], label[G.indices])),
                      shape=(ncomp, ncomp))
    C.setdiag(0)
    C.eliminate_zeros()
    order = _topological(C)                                    # component u needs components it points to
    rank = np.empty(ncomp, dtype=np.int64)
    rank[order] = np.arange(ncomp)
    cols = np.argsort(rank[label], kind="stable")
    sizes = np.bincount(rank[label], minlength=ncomp)
    blocks = np.concatenate([[0], np.cumsum(sizes)])
    return row_of_col[cols], cols, blocks


def _topological(C: sp.csr_matrix) -> np.ndarray:
    """Order with every component after the components it depends on (points to)."""
    n = C.shape[0]
    indeg = np.diff(C.tocsr().indptr)          # out-degree: number of dependencies
    CT = C.T.tocsr()
    ready = list(np.flatnonzero(indeg == 0))
    out = []
    remaining = indeg.copy()
    while ready:
        u = ready.pop()
        out.append(u)
        for w in CT.indices[CT.indptr[u]:CT.indptr[u + 1]]:
            remaining[w] -= 1
            if remaining[w] == 0:
                ready.append(w)
    if len(out) != n:
        raise RuntimeError("condensation graph is not acyclic")
    return np.asarray(out, dtype=np.int64)


def refine_blocks(K_numeric: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray, blocks: np.ndarray):
    """Inside every irreducible diagonal block, reorder columns with COLAMD and rows with
    SuperLU's partial pivoting on a random numeric instance (static pivots)."""
    rows, cols = rows.copy(), cols.copy()
    Kp = K_numeric.tocsr()[rows][:, cols].tocsc()
    for b0, b1 in zip(blocks[:-1], blocks[1:]):
        if b1 - b0 <= 1:
            continue
        B = Kp[b0:b1, b0:b1].tocsc()
        lu = splu(B, permc_spec="COLAMD", diag_pivot_thresh=1.0,
                  options=dict(SymmetricMode=False))
        pr, pc = np.empty(b1 - b0, dtype=np.int64), np.empty(b1 - b0, dtype=np.int64)
        pr[lu.perm_r] = np.arange(b1 - b0)      # Pr B Pc = L U  ⇔  B[pr][:, pc] = L U
        pc[lu.perm_c] = np.arange(b1 - b0)
        rows[b0:b1] = rows[b0:b1][pr]
        cols[b0:b1] = cols[b0:b1][pc]
    return rows, cols


def costs_of(layout: SystemLayout) -> tuple[int, int]:
    """RNEA and ABA operation counts (m + a) for the same robot (Featherstone §6 formulas)."""
    tc = cost(layout.model)
    return int(sum(tc.rnea)), int(sum(tc.aba))
