"""The off-line plan (Nori §IV-D, Remark 4): worst-case pattern, well-posedness, permutations and
the symbolic factorisation, computed once per model and sensor set.

* Worst-case sparsity pattern: the only state-dependent blocks are the ``ⁱX_λ(i)``; their
  entries are trigonometric in ``q`` and vanish only on a set of measure zero, so the union of
  the patterns at a few random states is the worst-case pattern (:func:`numeric_A`,
  :func:`prune_to_worst_case`).
* Well-posedness: structural rank first (a maximum bipartite matching), then numerical rank at
  random states — the Newton–Euler rows solved on their natural pivots leave only the contact
  unknowns, so the numerical test is an SVD of sensor rows × contact unknowns; an ill-posed set
  raises :class:`IllPosedError` naming the undetermined quantities in the words of the
  configuration.
* The system to factorise is ``A`` itself when the sensors determine the unknowns exactly, or
  the augmented (KKT) system of the weighted least-squares problem when they are redundant
  (more rows than unknowns): minimise ``|A_s d − r_s|²`` (whitened sensor rows) subject to the
  Newton–Euler rows ``A_h d = r_h`` (:func:`system_triplets`).
* Permutations: a maximum-product matching puts large, state-independent entries on the
  diagonal, Tarjan's strongly connected components give the block triangular form (a
  triangularisable matrix comes out triangular: zero fill-in, Nori Remark 2), and inside each
  irreducible block SuperLU's COLAMD ordering and partial pivoting on a random instance fix a
  fill-reducing, stable static pivot sequence; the blocks that follow the largest one go first,
  where they cause no fill-in.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import compress

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse import csgraph
from scipy.sparse.linalg import splu

from ..errors import IllPosedError
from ..model.cost import cost
from .layout import SystemLayout
from .sparse_lu import flops, symbolic_lu
from ..jit import njit

_KIND_WORDS = {"a": "acceleration of", "f": "joint wrench into", "tau": "torque of joint",
               "h": "contact wrench of"}


@dataclass(frozen=True)
class PlanReport:
    """What the plan costs (``estimator.report``). ``nnz``, ``fill_in`` and ``flops`` describe the
    planned sparse LU of the generic path; when ``solver`` is ``'structured'`` the tick solves the
    same problem by the tree reduction instead (see :mod:`.structured`). Operation counts are
    multiplications plus additions; RNEA and ABA counts use the formulas quoted in Featherstone §6."""
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
    rnea_ops: int | None          # None: a lone floating body, where §6's formulas do not apply
    aba_ops: int | None
    solver: str = "generic"   # the tick path: 'generic' (this factorisation) or 'structured'

    def summary(self) -> str:
        kind = "weighted least squares (KKT)" if self.system_size > self.n_unknowns else "square"
        return (f"[{self.solver} tick] {self.n_unknowns} unknowns, {self.n_equations} equations ({self.n_sensor_rows} sensor rows), "
                f"{kind} system {self.system_size}×{self.system_size} with {self.nnz} nonzeros, fill-in "
                f"{self.fill_in}, {self.n_blocks} diagonal blocks (largest {self.largest_block}), "
                f"{self.flops} flops per estimate" + ("" if self.rnea_ops is None else
                                                      f" (RNEA {self.rnea_ops}, ABA {self.aba_ops})"))


def random_states(layout: SystemLayout, rng: np.random.Generator, count: int):
    """Random ``(q, dq, ω_IMU)`` with joint angles over a full turn."""
    m = layout.model
    for _ in range(count):
        yield (rng.uniform(-np.pi, np.pi, m.n_joints), rng.normal(size=m.n_joints), rng.normal(size=3))


def check_well_posed(layout: SystemLayout, A_pattern: sp.csr_matrix, A_numeric: list[sp.csr_matrix]) -> None:
    """Raise :class:`IllPosedError` unless ``[A_h; A_s]`` has full column rank: structurally (a
    maximum bipartite matching), then numerically at every random state given. The message names
    the quantities that carry the null space, weighted by their share of it.

    The numerical test is the reduced one of :func:`_null_space_reduced` (a sparse LU of the
    Newton–Euler rows and an SVD of sensor rows × contact unknowns); the dense SVD of ``A`` is
    only the fallback for a system whose Newton–Euler rows it cannot certify."""
    n = layout.n
    # a maximum matching, the row matched to each column: greedy over the entries in column order,
    # then Kuhn's augmenting paths for the columns left (scipy's maximum_bipartite_matching took 75 s
    # on iCub's 531 × 538 system without force-torque sensors)
    C = A_pattern.tocsc()
    indptr, rows = C.indptr.astype(np.int64), C.indices.astype(np.int64)
    cols = np.repeat(np.arange(C.shape[1], dtype=np.int64), np.diff(indptr))
    match = _augmenting_matching(indptr, rows, cols, rows, C.shape[0])
    unmatched = np.flatnonzero(match < 0)
    for A in A_numeric:
        null = _null_space_reduced(layout, A)
        if null is None:                   # Newton–Euler rows not certified nonsingular: dense fallback
            if n > DENSE_RANK_LIMIT and not unmatched.size and _full_column_rank_sparse(A):
                continue                   # large system: sparse test first, SVD only to explain a failure
            null = _null_space(A)
        if null.shape[0]:
            weight = np.sum(null ** 2, axis=0)
            cols = np.flatnonzero(weight > 1e-6 * weight.max())
            raise IllPosedError(_undetermined_message(layout, cols, weight[cols], null.shape[0],
                                                      structural=unmatched.size > 0))
    if unmatched.size:   # only reached when the numeric check was skipped (very large systems)
        raise IllPosedError(_undetermined_message(layout, unmatched, np.ones(unmatched.size), unmatched.size,
                                                  structural=True))


DENSE_RANK_LIMIT = 1500
#: smallest ``|pivot| / max|pivot|`` of the LU of ``A_hp`` that certifies it nonsingular
PIVOT_RATIO_BOUND = 1e-10


def _full_column_rank_sparse(A: sp.csr_matrix) -> bool:
    """``A`` (m × n, m ≥ n) has full column rank iff the augmented system ``[[0, Aᵀ], [A, -1]]``
    of its least-squares problem is nonsingular; tested with SuperLU and a pivot-ratio bound."""
    m, n = A.shape
    if m < n:
        return False
    K = sp.bmat([[None, A.T], [A, -sp.eye(m)]], format="csc")
    try:
        lu = splu(K, permc_spec="COLAMD")
    except RuntimeError:
        return False
    d = np.abs(lu.U.diagonal())
    return bool(d.min() > 1e-13 * d.max())


def _null_space_reduced(layout: SystemLayout, A: sp.csr_matrix) -> np.ndarray | None:
    """Orthonormal rows spanning the null space of ``A = [A_h; A_s]``, or ``None`` when the
    Newton–Euler rows cannot be certified.

    Every hard row has its natural unknown (the pairing of Nori's permutations (10)–(11)):
    ``A_h = [A_hp A_hf]`` in those pivot columns and the remaining ones (the contact unknowns
    ``h``). ``A_hp`` is square and nonsingular for a tree — identity blocks for ``a_i``, ``f_i``
    and ``τ_i``, and the composite rigid-body inertia for a floating base's ``a_0`` — which a
    sparse LU with a pivot-ratio bound certifies. Then ``A_h d = 0 ⇔ d = Z y`` with
    ``Z = [-A_hp⁻¹ A_hf; 1]``, and ``A d = 0 ⇔ (A_s Z) y = 0``: the rank test is the SVD of
    the small dense ``A_s Z`` (sensor rows × contact unknowns) and ``null(A) = Z null(A_s Z)``,
    exactly; only the tolerance is that of :func:`_null_space`."""
    mh, n = layout.m_hard, layout.n
    P = np.asarray(layout.row_pivot[:mh], dtype=np.int64)
    free = np.ones(n, dtype=bool)
    free[P] = False
    if np.any(P < 0) or np.count_nonzero(free) != n - mh:
        return None
    F = np.flatnonzero(free)
    Ah = A[:mh].tocsc()
    try:
        lu = splu(Ah[:, P], permc_spec="COLAMD")
    except RuntimeError:                   # exactly singular
        return None
    d = np.abs(lu.U.diagonal())
    if not d.size or d.min() < PIVOT_RATIO_BOUND * d.max():
        return None
    if not F.size:                         # A = [A_hp; A_s] with A_hp nonsingular
        return np.zeros((0, n))
    Z = np.zeros((n, F.size))
    Z[F, np.arange(F.size)] = 1.0
    Z[P] = -lu.solve(Ah[:, F].toarray())
    M = A[mh:] @ Z                                             # A_s Z (sensor rows × contact unknowns)
    if not M.shape[0]:
        N = np.eye(F.size)
    else:
        _, s, Vt = la.svd(M, full_matrices=True, lapack_driver="gesdd", check_finite=False)
        N = Vt[int(np.sum(s > _rank_tolerance(A.shape, s))):].T
    if not N.shape[1]:
        return np.zeros((0, n))
    Q, _ = la.qr(Z @ N, mode="economic", check_finite=False)
    return Q.T


def _rank_tolerance(shape, s: np.ndarray) -> float:
    """Singular values of ``A`` (shape ``shape``) at or below this are zero: ``max(m, n) · ε ·
    σ_max`` with a margin of 10³ for the round-off of the random states."""
    return max(shape) * np.finfo(float).eps * (s[0] if s.size else 0.0) * 1e3


def _null_space(A: sp.csr_matrix) -> np.ndarray:
    """Rows spanning the numerical null space of ``A`` (dense SVD, tolerance :func:`_rank_tolerance`)."""
    dense = A.toarray()
    _, s, Vt = la.svd(dense, full_matrices=True, lapack_driver="gesdd", check_finite=False)
    return Vt[int(np.sum(s > _rank_tolerance(dense.shape, s))):]


def _undetermined_message(layout, cols, weight, ndir, structural) -> str:
    """Name the configured quantities that carry the null space: contact wrenches first (in
    configuration order), then the most involved accelerations; internal wrenches and torques
    only when nothing else is involved (they follow from the others)."""
    groups: dict[tuple[str, str], float] = {}
    for j, w in zip(cols, weight):
        kind, owner, _ = layout.describe_column(int(j))
        groups[(kind, owner)] = groups.get((kind, owner), 0.0) + float(w)
    contacts = [c.name for c, _, _ in layout.contacts if ("h", c.name) in groups]
    ranked = sorted((k for k in groups if k[0] != "h"), key=lambda k: -groups[k])
    body_order = {b: i for i, b in enumerate(layout.model.body_names)}
    top = max((groups[k] for k in ranked if k[0] == "a"), default=0.0)
    accels = sorted((k for k in ranked if k[0] == "a" and groups[k] > 1e-2 * top), key=lambda k: body_order[k[1]])
    primary = accels or ranked                  # the acceleration closest to the root is the cause
    parts = (["contact wrenches of " + " and ".join(contacts)] if contacts else [])
    parts += [f"{_KIND_WORDS[k]} {o}" for k, o in primary[:2 if contacts else 4]]
    hint = ("add joint-torque sensors on the joints above the contacts (joint_torque_sensors), force-torque "
            "sensors, contact force sensors or load cells on the contacts, declare fewer contacts, or use a "
            "reduced contact model (point_force, slippery)" if contacts else
            "add the sensors that observe them (IMU on the base, force-torque sensors)")
    kind = "structurally" if structural else "numerically"
    return (f"ill-posed sensor set ({kind}): {'; '.join(parts)}: {ndir} direction{'s' * (ndir != 1)} "
            f"undetermined; {hint}")


def block_triangular_order(K: sp.csr_matrix, weights: sp.csr_matrix, pivots=()):
    """Row and column orders putting ``K`` in block lower triangular form with large entries on
    the diagonal. Returns ``(row_order, col_order, blocks)`` with ``blocks`` the
    start offsets of the diagonal blocks (plus the end)."""
    N = K.shape[0]
    row_of_col = _large_entry_matching(weights.tocsr(), pivots)
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


def _large_entry_matching(W: sp.csr_matrix, pivots=()) -> np.ndarray:
    """A perfect matching (the row matched to each column) that prefers the given ``pivots``
    (column, row), then large entries: greedy in decreasing ``|a| / max|column|``, completed by
    augmenting paths. A cheap stand-in for MC64's
    maximum-product matching that puts the constant unit entries of Nori's blocks on the
    diagonal. (scipy's ``maximum_bipartite_matching`` stalls on these graphs.)"""
    C = abs(W).tocsc()
    C.eliminate_zeros()
    C.sort_indices()
    colmax = np.zeros(C.shape[1])
    nz = np.diff(C.indptr) > 0
    colmax[nz] = np.maximum.reduceat(C.data, C.indptr[:-1][nz])
    cols = np.repeat(np.arange(C.shape[1]), np.diff(C.indptr))
    score = C.data / colmax[cols]
    order = np.argsort(-score, kind="stable")
    pc = np.array([c for c, _ in pivots], dtype=np.int64)
    pr = np.array([r for _, r in pivots], dtype=np.int64)
    row_of_col = _augmenting_matching(C.indptr.astype(np.int64), C.indices.astype(np.int64),
                                      np.concatenate([pc, cols[order]]).astype(np.int64),
                                      np.concatenate([pr, C.indices[order]]).astype(np.int64), C.shape[0])
    if np.any(row_of_col < 0):
        raise ValueError("the system matrix is structurally singular")
    return row_of_col


@njit(nogil=False, error_model="python")
def _augmenting_matching(indptr, indices, greedy_cols, greedy_rows, n_rows):
    """Greedy matching over the (column, row) pairs in the given order, then Kuhn's augmenting
    paths (iterative depth-first search) for the columns left unmatched."""
    n_cols = indptr.shape[0] - 1
    row_of_col = np.full(n_cols, -1, np.int64)
    col_of_row = np.full(n_rows, -1, np.int64)
    for k in range(greedy_cols.shape[0]):
        c, r = greedy_cols[k], greedy_rows[k]
        if row_of_col[c] < 0 and col_of_row[r] < 0:
            row_of_col[c], col_of_row[r] = r, c
    visited = np.full(n_rows, -1, np.int64)
    stack_c = np.empty(n_cols + 1, np.int64)
    stack_p = np.empty(n_cols + 1, np.int64)
    via = np.full(n_rows, -1, np.int64)
    for c0 in range(n_cols):
        if row_of_col[c0] >= 0:
            continue
        top = 0
        stack_c[0], stack_p[0] = c0, indptr[c0]
        found = -1
        while top >= 0 and found < 0:
            c, p = stack_c[top], stack_p[top]
            if p == indptr[c + 1]:
                top -= 1
                continue
            stack_p[top] = p + 1
            r = indices[p]
            if visited[r] == c0:
                continue
            visited[r] = c0
            via[r] = c
            if col_of_row[r] < 0:
                found = r
            else:
                top += 1
                stack_c[top], stack_p[top] = col_of_row[r], indptr[col_of_row[r]]
        r = found
        while r >= 0:                        # flip the path
            c = via[r]
            prev = row_of_col[c]
            row_of_col[c], col_of_row[r] = r, c
            r = prev
    return row_of_col


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


def dependents_first(rows: np.ndarray, cols: np.ndarray, blocks: np.ndarray):
    """Move the diagonal blocks that follow the largest one in front of all others, in reverse
    order; returns the new ``(rows, cols, blocks)``.

    In block lower triangular form a row of a block after the largest one has an ``L`` part
    ``A₂₁ U₁₁⁻¹``, dense over the largest block (a fill-in quadratic in the number of bodies of a
    serial chain: the torque rows (3τ) read the joint wrenches of the coupled core). Placed
    first, in reverse order, every entry of those rows lies in ``U`` and they cause no fill-in;
    the rows of the other blocks have no entry in their columns. Any block order of a block
    triangular matrix keeps the planned pivots: the Schur complement of a diagonal block over the
    blocks before it is the block itself (an update would need a cycle through it)."""
    sizes = np.diff(blocks)
    big = int(np.argmax(sizes))
    order = np.r_[np.arange(len(sizes) - 1, big, -1), np.arange(big + 1)]
    starts = np.concatenate([[0], np.cumsum(sizes[order])])
    idx = np.arange(len(rows)) - np.repeat(starts[:-1] - blocks[order], sizes[order])   # new → old position
    return rows[idx], cols[idx], starts


def numeric_A(lay: SystemLayout, sources, t: np.ndarray) -> sp.csr_matrix:
    """``A`` of the layout ``lay`` at a state (its ``(src, rsrc)``) from the triplet array ``t``
    (rows of ``lay.triplets``)."""
    src = sources[0]
    r, c, idx, coef = t[:, 0].astype(int), t[:, 1].astype(int), t[:, 2].astype(int), t[:, 3]
    return sp.csr_matrix((coef * src[idx], (r, c)), shape=(lay.m, lay.n))


def prune_to_worst_case(lay: SystemLayout, A_states, t: np.ndarray) -> np.ndarray:
    """Drop from ``lay.triplets`` the triplets at positions that are zero in every matrix of
    ``A_states`` (``A`` at random states): identically zero. Returns the kept rows of ``t``."""
    keys = []
    for A in A_states:
        coo = A.tocoo()
        keys.append(coo.row[coo.data != 0].astype(np.int64) * lay.n + coo.col[coo.data != 0])
    keep = np.isin(t[:, 0].astype(np.int64) * lay.n + t[:, 1].astype(np.int64), np.concatenate(keys))
    lay.triplets = list(compress(lay.triplets, keep.tolist()))
    return t[keep]


def system_triplets(lay: SystemLayout, t: np.ndarray):
    """Triplets (rows of an array) of the matrix to factorise, from those of ``A`` (``t``):
    ``A`` (square) or the KKT matrix ``[[0, A_hᵀ, A_sᵀ], [A_h, 0, 0], [A_s, 0, -1]]`` of the
    weighted least-squares problem. Returns ``(triplets, N, redundant, pivots)``."""
    hard = [(c, r) for r, c in enumerate(lay.row_pivot) if c >= 0]     # (column, row) pivots
    if lay.m == lay.n:
        return t, lay.n, False, hard
    n, N = lay.n, lay.n + lay.m
    r, c, s, v = t.T
    k = n + lay.m_hard + np.arange(lay.m_soft)
    trip = np.vstack([np.c_[n + r, c, s, v], np.c_[c, n + r, s, v],
                      np.c_[k, k, np.zeros(lay.m_soft), -np.ones(lay.m_soft)]])
    pivots = ([(c, n + r) for c, r in hard] + [(n + r, c) for c, r in hard]
              + [(n + lay.m_hard + k, n + lay.m_hard + k) for k in range(lay.m_soft)])
    return trip, N, True, pivots


def costs_of(layout: SystemLayout) -> tuple[int | None, int | None]:
    """RNEA and ABA operation counts (m + a) for the same robot (Featherstone §6 formulas);
    ``(None, None)`` for a floating body without joints (a drone's frame), which the floating-base
    formulas, counted from one joint besides the base, do not cover."""
    if layout.model.floating_base and layout.model.n_joints == 0:
        return None, None
    tc = cost(layout.model)
    return int(sum(tc.rnea)), int(sum(tc.aba))


@dataclass
class StaticLU:
    """A planned factorisation of ``K`` whose values are ``G src`` for a fixed sparse map ``G``:
    ``P K Q = L U`` with ``P``, ``Q`` and the patterns of ``L`` and ``U`` fixed (Nori §IV-D)."""
    N: int
    rows: np.ndarray          # P: row k of P K Q is row rows[k] of K
    cols: np.ndarray          # Q: column k of P K Q is column cols[k] of K
    blocks: np.ndarray        # diagonal block offsets of the block triangular form
    Ap: np.ndarray
    Ai: np.ndarray
    G: tuple                  # CSR (indptr, indices, data) of the map src → values of P K Q (CSR order)
    Lp: np.ndarray
    Li: np.ndarray
    Up: np.ndarray
    Ui: np.ndarray

    @property
    def nnz(self) -> int:
        return len(self.Ai)

    @property
    def fill_in(self) -> int:
        return len(self.Li) + len(self.Ui) - len(self.Ai)

    @property
    def flops(self) -> int:
        return flops(self.Lp, self.Li, self.Up) + 2 * len(self.G[1])

    def superlu(self, Ax: np.ndarray):
        """SuperLU's factorisation, partial pivoting, of ``P K Q`` with the values ``Ax`` (its CSR
        order): the fallback of a tick whose static pivot vanished (allocates)."""
        from scipy.sparse.linalg import splu
        return splu(sp.csr_matrix((Ax, self.Ai, self.Ap), shape=(self.N, self.N)).tocsc())

    def solves_as_superlu(self, Ax: np.ndarray, rhs: np.ndarray, x: np.ndarray) -> bool:
        """Whether ``x``, the static pivots' solution with the values ``Ax`` and the right-hand side
        ``rhs``, is SuperLU's partial-pivoting one to 1e-9 of the solution's size (plan time: a plan's
        pivots hold at a state)."""
        ref = self.superlu(Ax).solve(rhs)
        return bool(np.max(np.abs(x - ref), initial=0.0) <= 1e-9 * max(1.0, np.max(np.abs(ref), initial=0.0)))

    def permute_rows(self, R: sp.spmatrix) -> tuple:
        """CSR triple of ``P R`` (right-hand-side maps)."""
        Rp = R.tocsr()[self.rows].tocsr()
        return Rp.indptr.astype(np.int64), Rp.indices.astype(np.int64), Rp.data.copy()

    def permute_cols(self, O: sp.spmatrix) -> tuple:
        """CSR triple of ``O Q`` (output maps reading the permuted solution)."""
        Op = O.tocsc()[:, self.cols].tocsr()
        return Op.indptr.astype(np.int64), Op.indices.astype(np.int64), Op.data.copy()


def plan_static_lu(triplets, N: int, n_src: int, src_sample: np.ndarray, pivots=()) -> StaticLU:
    """Block triangular form, pivots and symbolic factorisation of the ``N × N`` matrix with
    entries ``K[r, c] = Σ coef · src[idx]`` over ``triplets`` (r, c, idx, coef), planned on the
    numeric instance ``src_sample`` (a random state: every worst-case nonzero is nonzero there).

    ``pivots`` lists preferred (column, row) pairs: the natural pairing of each Newton–Euler row
    with its unknown, which makes inverse dynamics triangular (Nori Property 1)."""
    t = np.asarray(triplets, dtype=float)
    tr, tc, ts, tv = t[:, 0].astype(np.int64), t[:, 1].astype(np.int64), t[:, 2].astype(np.int64), t[:, 3]
    K0 = sp.csr_matrix((tv * src_sample[ts], (tr, tc)), shape=(N, N))
    K0.sum_duplicates()
    rows, cols, blocks = block_triangular_order(K0, K0, pivots)
    rows, cols = refine_blocks(K0, rows, cols, blocks)
    rows, cols, blocks = dependents_first(rows, cols, blocks)
    rpos, cpos = np.empty(N, np.int64), np.empty(N, np.int64)
    rpos[rows], cpos[cols] = np.arange(N), np.arange(N)
    keys = rpos[tr] * N + cpos[tc]
    ukeys, pos = np.unique(keys, return_inverse=True)
    Ap = np.searchsorted(ukeys // N, np.arange(N + 1)).astype(np.int64)
    Ai = (ukeys % N).astype(np.int64)
    G = sp.csr_matrix((tv, (pos, ts)), shape=(len(ukeys), n_src))
    Lp, Li, Up, Ui = symbolic_lu(Ap, Ai, N)
    return StaticLU(N, rows, cols, blocks, Ap, Ai, (G.indptr.astype(np.int64), G.indices.astype(np.int64),
                                                     G.data.copy()), Lp, Li, Up, Ui)
