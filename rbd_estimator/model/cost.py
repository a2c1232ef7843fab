"""Operation counts of the JSIM route to forward dynamics, from the topology of a kinematic tree.

Everything here follows R. Featherstone, *Efficient factorization of the joint space inertia matrix
for branched kinematic trees*, IJRR 24(6):487–500, 2005 (``shared/papers/
featherstone-branched-jsim-factorization.md``); "eq. N", "Table N" and "§N" refer to that paper.
The functions are pure: they need a parent array (and the DoF of each joint), not a robot model.

Conventions (0-based, unlike the paper's 1-based listings)
-----------------------------------------------------------
``parents`` is the parent array λ: ``parents[i]`` is the body that body ``i`` hangs from, and
``-1`` plays the part of the paper's 0, the root (the fixed base). Numbering must be *regular*,
``-1 <= parents[i] < i`` (eq. 2); every function raises :class:`ValueError` otherwise.

* d_i — distance of node ``i`` from the root in joints, so children of the root have ``d_i = 1``.
* ν(i) — the subtree of ``i``, body ``i`` included; ``|ν(i)|`` its size.
* n — number of joint variables, i.e. rows of H (eq. 3).
* The *original* graph has one node per mobile body; the *expanded* graph (§2, Fig. 2) replaces a
  joint with n_i DoF by a chain of n_i single-DoF joints and has one node per row of H. The paper
  marks quantities of the expanded graph with a superscript e (D₁ᵉ, D₂ᵉ); here they carry an ``e``
  suffix. The sparse factorisation costs (Table 1) use the expanded graph; the CRBA split
  (eqs. 19–21) uses the original graph (§6).

Costs are counts of square roots, divisions, multiplications (m) and additions (a; a subtraction
counts as an addition). Where a pair ``(m, a)`` is returned, divisions (and square roots) are
counted as multiplications, as §6 does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = [
    "depths", "subtree_sizes", "D0", "D1", "D2",
    "expand_parents", "contract_fixed_joints", "dh_nodes", "non_dh_count", "crba_split",
    "OpCount", "FactorizationCosts", "table1_costs",
    "crba_cost", "rnea_cost", "aba_cost",
    "TreeCost", "tree_cost", "cost",
]


# ---------------------------------------------------------------------------------- parent arrays
def _as_parents(parents: Sequence[int]) -> np.ndarray:
    """Validate a parent array (regular numbering, eq. 2) and return it as an int64 array."""
    lam = np.asarray(parents, dtype=np.int64).reshape(-1)
    if lam.size:
        bad = np.flatnonzero((lam < -1) | (lam >= np.arange(lam.size)))
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"parents[{i}] = {int(lam[i])} breaks regular numbering (eq. 2): need "
                f"-1 <= parents[i] < i; renumber the bodies so each comes after its parent")
    return lam


def _as_dofs(dofs: Sequence[int], n_bodies: int) -> np.ndarray:
    nd = np.asarray(dofs, dtype=np.int64).reshape(-1)
    if nd.size != n_bodies:
        raise ValueError(f"dofs has {nd.size} entries but parents has {n_bodies}; give one per body")
    if nd.size and nd.min() < 0:
        raise ValueError(f"dofs[{int(np.argmin(nd))}] = {int(nd.min())} is negative")
    return nd


def _children(lam: np.ndarray) -> tuple[list[int], list[list[int]]]:
    """Children of the root and of every node, in increasing index order."""
    root: list[int] = []
    kids: list[list[int]] = [[] for _ in range(lam.size)]
    for i, p in enumerate(lam):
        (root if p < 0 else kids[p]).append(i)
    return root, kids


def depths(parents: Sequence[int]) -> np.ndarray:
    """d_i: number of joints between node ``i`` and the root (§4.1); children of the root have 1."""
    lam = _as_parents(parents)
    d = np.zeros(lam.size, dtype=np.int64)
    for i, p in enumerate(lam):
        d[i] = 1 if p < 0 else d[p] + 1
    return d


def subtree_sizes(parents: Sequence[int]) -> np.ndarray:
    """|ν(i)|: number of bodies in the subtree rooted at ``i``, body ``i`` included (eq. 5)."""
    lam = _as_parents(parents)
    size = np.ones(lam.size, dtype=np.int64)
    for i in range(lam.size - 1, -1, -1):  # children come after parents: accumulate backwards
        if lam[i] >= 0:
            size[lam[i]] += size[i]
    return size


def D0(parents: Sequence[int]) -> int:
    """D₀ = Σ min(1, d_i − 1), the number of bodies not attached to the root (eq. 15)."""
    return int(np.count_nonzero(_as_parents(parents) >= 0))


def D1(parents: Sequence[int]) -> int:
    """D₁ = Σ (d_i − 1) (eq. 8): nonzeros of H (or L) strictly below the diagonal when
    ``parents`` is the expanded parent array; divisions of the factorisation step 2."""
    return int(np.sum(depths(parents) - 1))


def D2(parents: Sequence[int]) -> int:
    """D₂ = Σ d_i (d_i − 1) / 2 (eq. 9): multiply–subtract updates of the factorisation step 3."""
    d = depths(parents)
    return int(np.sum(d * (d - 1) // 2))


def expand_parents(parents: Sequence[int], dofs: Sequence[int]) -> np.ndarray:
    """Featherstone's expanded parent array (§2, Fig. 2): one entry per row of H.

    Each joint ``i`` with ``dofs[i] = n_i > 1`` becomes a chain of n_i single-DoF joints through
    n_i − 1 massless bodies, numbered consecutively; the bodies keep their order, so the result is
    regular again and has ``sum(dofs)`` entries. A body with ``dofs[i] == 0`` (a kept fixed joint)
    gets no row: its children hang from the last row of its nearest ancestor, i.e. it is contracted
    into its parent. Example (Fig. 2, 1-based): λ = (0,1,1,2,2,3,3) with joints 1, 2, 6 having
    2, 2, 3 DoF expands to λ = (0,1,2,3,2,4,4,5,8,9,5).
    """
    lam = _as_parents(parents)
    nd = _as_dofs(dofs, lam.size)
    last = np.full(lam.size, -1, dtype=np.int64)  # last expanded row of each body (-1: root)
    out = np.empty(int(nd.sum()), dtype=np.int64)
    row = 0
    for i, p in enumerate(lam):
        prev = last[p] if p >= 0 else -1
        for _ in range(nd[i]):
            out[row] = prev
            prev = row
            row += 1
        last[i] = prev
    return out


def contract_fixed_joints(parents: Sequence[int], dofs: Sequence[int]
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Remove 0-DoF bodies (kept fixed joints), re-attaching their children to their parent.

    A body welded to its parent is part of the parent's rigid body as far as H is concerned: it
    owns no row, and its children are moved to its nearest kept ancestor (or the root).
    Returns ``(parents_c, dofs_c, kept)``: the contracted parent array (regular numbering), the
    DoF of each kept body, and ``kept[k]``, the index in the input arrays of contracted body ``k``.
    """
    lam = _as_parents(parents)
    nd = _as_dofs(dofs, lam.size)
    new_index = np.full(lam.size, -1, dtype=np.int64)  # contracted index of the nearest kept self-or-ancestor
    kept: list[int] = []
    new_parents: list[int] = []
    for i, p in enumerate(lam):
        anchor = new_index[p] if p >= 0 else -1
        if nd[i] == 0:
            new_index[i] = anchor
        else:
            new_index[i] = len(kept)
            new_parents.append(int(anchor))
            kept.append(i)
    kept_arr = np.asarray(kept, dtype=np.int64)
    return np.asarray(new_parents, dtype=np.int64), nd[kept_arr], kept_arr


# ---------------------------------------------------------------------------- DH / non-DH split
def dh_nodes(parents: Sequence[int]) -> np.ndarray:
    """Boolean mask of DH nodes (§5): of the children of every node (the root included), one may
    use DH parameters. We pick the child with the largest subtree |ν|, the lowest index on ties;
    this maximises D₁ₐ (eq. 19), as §5 requires, because each node's choice adds its own term."""
    lam = _as_parents(parents)
    size = subtree_sizes(lam)
    root, kids = _children(lam)
    dh = np.zeros(lam.size, dtype=bool)
    for group in [root, *kids]:
        if group:
            dh[max(group, key=lambda c: (size[c], -c))] = True
    return dh


def non_dh_count(parents: Sequence[int]) -> int:
    """Number of non-DH nodes, Σ_{i=0..N} max(0, c(i) − 1) over all nodes, the root included (eq. 17)."""
    return int(np.count_nonzero(~dh_nodes(parents)))


def crba_split(parents: Sequence[int], floating_base: bool) -> dict[str, int]:
    """D₀ₐ, D₁ₐ, D₀ᵦ, D₁ᵦ (eq. 19) and D₀꜀, D₁꜀ (§5, before eq. 21) on the *original* graph.

    π_a, π_b: DH and non-DH nodes not directly connected to the root (d_i > 1); DH nodes are
    chosen by :func:`dh_nodes`. D₀ₓ = |π_x|, D₁ₓ = Σ_{i∈π_x} |ν(i)|. With a floating base, the
    body on the 6-DoF joint is a child of the root (d = 1, as the torso in §6) and π_c is the set
    of DH nodes that are its children; with a fixed base π_c is empty. By construction
    D₀ₐ + D₀ᵦ = D₀ and D₁ₐ + D₁ᵦ = D₁ (§5). §6 humanoid: 21, 66, 3, 18, 1, 6.
    """
    lam = _as_parents(parents)
    size = subtree_sizes(lam)
    dh = dh_nodes(lam)
    inner = lam >= 0                                  # not directly connected to the root
    pi_a, pi_b = inner & dh, inner & ~dh
    if floating_base:
        parent_is_floating = np.zeros(lam.size, dtype=bool)
        parent_is_floating[inner] = lam[lam[inner]] < 0  # parent is a child of the root
        pi_c = pi_a & parent_is_floating
    else:
        pi_c = np.zeros(lam.size, dtype=bool)
    return {
        "D0a": int(pi_a.sum()), "D1a": int(size[pi_a].sum()),
        "D0b": int(pi_b.sum()), "D1b": int(size[pi_b].sum()),
        "D0c": int(pi_c.sum()), "D1c": int(size[pi_c].sum()),
    }


# ------------------------------------------------------------------------------------- Table 1
@dataclass(frozen=True)
class OpCount:
    """Counts of square roots, divisions, multiplications and additions (subtractions included)."""
    sqrt: int = 0
    div: int = 0
    m: int = 0
    a: int = 0

    def ma(self) -> tuple[int, int]:
        """``(m, a)`` with divisions counted as multiplications, as §6 does. Square roots are also
        counted as multiplications; §6 never needs this (its figures use LTDL, which has none)."""
        return (self.m + self.div + self.sqrt, self.a)

    def __add__(self, other: "OpCount") -> "OpCount":
        return OpCount(self.sqrt + other.sqrt, self.div + other.div, self.m + other.m, self.a + other.a)


@dataclass(frozen=True)
class FactorizationCosts:
    """One column of Table 1: factorise H; back-substitute one vector (solve H x = b with the
    factors); ``multiply`` = y = L x or Lᵀ x; ``solve`` = L⁻¹ x or L⁻ᵀ x."""
    factorize: OpCount
    back_substitute: OpCount
    multiply: OpCount
    solve: OpCount


def table1_costs(n: int, D1: int, D2: int) -> dict[str, FactorizationCosts]:
    """Table 1 for the sparse LTL (H = LᵀL) and LTDL (H = LᵀDL) algorithms, keys ``'LTL'``, ``'LTDL'``.

    ``n``, ``D1``, ``D2`` are those of the matrix, i.e. of the *expanded* graph (§4.1, §6):

    ===============  ===============================  ==========================
    operation        LTL                              LTDL
    ===============  ===============================  ==========================
    factorise        n √ + D₁ div + D₂ (m + a)        D₁ div + D₂ (m + a)
    back-substitute  2n div + 2D₁ (m + a)             n div + 2D₁ (m + a)
    Lx, Lᵀx          n m + D₁ (m + a)                 D₁ (m + a)
    L⁻¹x, L⁻ᵀx       n div + D₁ (m + a)               D₁ (m + a)
    ===============  ===============================  ==========================
    """
    n, D1, D2 = int(n), int(D1), int(D2)
    return {
        "LTL": FactorizationCosts(
            factorize=OpCount(sqrt=n, div=D1, m=D2, a=D2),
            back_substitute=OpCount(div=2 * n, m=2 * D1, a=2 * D1),
            multiply=OpCount(m=n + D1, a=D1),
            solve=OpCount(div=n, m=D1, a=D1)),
        "LTDL": FactorizationCosts(
            factorize=OpCount(div=D1, m=D2, a=D2),
            back_substitute=OpCount(div=n, m=2 * D1, a=2 * D1),
            multiply=OpCount(m=D1, a=D1),
            solve=OpCount(m=D1, a=D1)),
    }


# ------------------------------------------------------------------------- CRBA, RNEA and ABA
def crba_cost(split: dict[str, int]) -> tuple[int, int]:
    """``(m, a)`` of the CRBA, eq. 21:

    D₀ₐ(32m+43a) + D₁ₐ(20m+12a) + D₀ᵦ(47m+58a) + D₁ᵦ(24m+18a) − D₀꜀(18m+21a) − D₁꜀(12m+8a).

    Assumes 1-DoF joints with axes along a coordinate axis, general geometry and inertia, DH
    frames where possible (§5); with D₀꜀ = D₁꜀ = 0 it is eq. 20 (fixed base). ``split`` is the
    dict of :func:`crba_split`. §6: humanoid 2475m + 2124a, equivalent chain 6462m + 4419a.
    """
    s = split
    m = 32 * s["D0a"] + 20 * s["D1a"] + 47 * s["D0b"] + 24 * s["D1b"] - 18 * s["D0c"] - 12 * s["D1c"]
    a = 43 * s["D0a"] + 12 * s["D1a"] + 58 * s["D0b"] + 18 * s["D1b"] - 21 * s["D0c"] - 8 * s["D1c"]
    return (int(m), int(a))


def rnea_cost(n_bodies: int, floating_base: bool, non_dh: int = 0) -> tuple[int, int]:
    """``(m, a)`` of inverse dynamics (the bias vector C of eq. 1) by the RNEA, as costed in §6.

    Base formula ``(93n − 69)m + (81n − 66)a``: Balafoutis, Patel & Misra 1988, Algorithm 3 (the
    paper's [3]), for an unbranched fixed-base chain of n revolute joints. §6 extends it, and so
    do we:

    * ``n = n_bodies``, the number of mobile bodies (= joints of the original graph). With a
      floating base the 6-DoF joint is first costed as a revolute one (n = 25 for the humanoid),
      then ``7m + 13a`` is added, the difference between a 6-DoF and a revolute joint on the root.
    * ``4m + 8a`` per non-DH node (eq. 17) for its general coordinate transform.

    Prismatic joints are costed as revolute ones (the formula does not distinguish them), so the
    figure is an estimate for them. §6: chain 2263m + 1972a, humanoid (3 non-DH) 2275m + 1996a.
    """
    n = int(n_bodies)
    if n < 1:
        raise ValueError(f"rnea_cost needs at least one body, got n_bodies = {n}")
    m, a = 93 * n - 69, 81 * n - 66
    if floating_base:
        m, a = m + 7, a + 13
    return (m + 4 * int(non_dh), a + 8 * int(non_dh))


def aba_cost(n_bodies: int, floating_base: bool, non_dh: int = 0) -> tuple[int, int]:
    """``(m, a)`` of forward dynamics by the articulated-body algorithm (ABA).

    * Floating base: ``(224n − 30)m + (205n − 37)a`` with n the number of revolute joints besides
      the 6-DoF one, ``n = n_bodies − 1``: McMillan & Orin 1995 (the paper's [15]), Table II, for
      an unbranched chain on a floating base, as quoted in §6 (n = 24 gives 5346m + 4883a).
    * Fixed base: this paper gives no figure, and no paper in this repository does. We use
      ``(224n − 165)m + (205n − 203)a`` with ``n = n_bodies``: the fixed-base cost of the same
      McMillan–Orin ABA as tabulated in Featherstone & Orin's surveys (the paper's [10]; also the
      *Springer Handbook of Robotics*, ch. 2; the figure Nori's Fig. 1 plots, "[1, p. 202]").
      Its source is not available here. What is checked: its per-body slope (224m + 205a) is
      the floating-base formula's, which §6 quotes (tested); the CRBA entry of the same table,
      ``(10n² + 22n − 32)m + (6n² + 37n − 43)a``, is exactly eq. 20 for an unbranched fixed-base
      chain (tested). It counts a hand-optimised recursion (DH frames, axes along z): the ABA we
      run, counted on its generic 6-D blocks, costs more than twice as much per body
      (:func:`rbd_estimator.dynamics.aba_factorization.aba_flops`, the counted baseline of Nori's
      Fig. 1 in ``docs/papers_in_time.md``). Why not the floating-base formula: its constant
      includes the 6-DoF base body, which a fixed base does not have.
    * Either base: ``66m + 57a`` per non-DH node (eq. 17), §6's correction for the extra
      transformation costs, which the paper obtained from Table II of McMillan & Orin's [14].

    Revolute joints are assumed; prismatic ones are costed the same. §6: humanoid 5544m + 5054a.
    """
    N = int(n_bodies)
    if floating_base:
        n = N - 1
        if n < 1:
            raise ValueError("the floating-base ABA formula (224n − 30)m + (205n − 37)a needs at "
                             f"least one joint besides the floating one, got n_bodies = {N}")
        m, a = 224 * n - 30, 205 * n - 37
    else:
        n = N
        if n < 1:
            raise ValueError(f"aba_cost needs at least one body, got n_bodies = {N}")
        m, a = 224 * n - 165, 205 * n - 203
    return (m + 66 * int(non_dh), a + 57 * int(non_dh))


# ------------------------------------------------------------------------------------ together
def _add(*pairs: tuple[int, int]) -> tuple[int, int]:
    return (sum(p[0] for p in pairs), sum(p[1] for p in pairs))


@dataclass(frozen=True)
class TreeCost:
    """Every count of the paper for one tree (see :func:`tree_cost`). Pairs are ``(m, a)``."""
    n: int                            # rows of H: Σ n_i over kept bodies (eq. 3)
    n_bodies: int                     # N: mobile bodies after contracting 0-DoF bodies
    floating_base: bool
    parents: tuple[int, ...]          # original graph, 0-DoF bodies contracted
    dofs: tuple[int, ...]             # n_i of each of those bodies
    bodies: tuple[int, ...]           # index in the input arrays of each contracted body
    expanded_parents: tuple[int, ...]  # expanded graph (§2), one entry per row of H
    nnz_H: int                        # nonzeros of H: 2 D₁ᵉ + n (§6)
    D0: int                           # eq. 15, original graph
    D1: int                           # eq. 8, original graph
    D2: int                           # eq. 9, original graph
    D0e: int                          # eq. 15, expanded graph
    D1e: int                          # eq. 8, expanded graph: nonzeros of L below the diagonal
    D2e: int                          # eq. 9, expanded graph
    non_dh: int                       # eq. 17, original graph
    split: dict                       # D0a … D1c, eq. 19 and §5
    ltl: FactorizationCosts           # Table 1 with n, D₁ᵉ, D₂ᵉ
    ltdl: FactorizationCosts
    crba: tuple[int, int]             # eq. 21
    rnea: tuple[int, int]             # §6, see rnea_cost
    aba: tuple[int, int]              # §6, see aba_cost
    fd_crba: tuple[int, int]          # CRBA + RNEA + LTDL factorise + one back-substitution (§6)

    @property
    def density(self) -> float:
        """Fraction of the n × n entries of H that are not branch-induced zeros (§4.1's α)."""
        return self.nnz_H / float(self.n * self.n) if self.n else 0.0

    def summary(self) -> str:
        """A few lines for logs and benchmarks."""
        f, b = self.ltdl.factorize.ma(), self.ltdl.back_substitute.ma()
        return "\n".join([
            f"n = {self.n} DoF, N = {self.n_bodies} bodies, floating base: {self.floating_base}",
            f"H: {self.nnz_H} nonzeros of {self.n * self.n} ({100 * self.density:.0f}%), "
            f"D1e = {self.D1e}, D2e = {self.D2e}",
            f"D0 = {self.D0}, D1 = {self.D1}, non-DH = {self.non_dh}, split = {self.split}",
            f"CRBA {self.crba[0]}m+{self.crba[1]}a, RNEA {self.rnea[0]}m+{self.rnea[1]}a, "
            f"LTDL factorise {f[0]}m+{f[1]}a, back-subst {b[0]}m+{b[1]}a",
            f"forward dynamics: via CRBA {self.fd_crba[0]}m+{self.fd_crba[1]}a, "
            f"ABA {self.aba[0]}m+{self.aba[1]}a",
        ])


def tree_cost(parents: Sequence[int], dofs: Sequence[int], floating_base: bool) -> TreeCost:
    """All the counts of the paper for a tree given by its parent array and joint DoF.

    ``dofs[i]`` is the DoF of the joint between body ``i`` and its parent: 6 for the floating
    base (which must then be the only child of the root), 1 for revolute and prismatic joints,
    0 for a kept fixed joint. 0-DoF bodies are contracted into their parent first
    (:func:`contract_fixed_joints`); they add no row to H and no body to the cost formulas.
    Then, on the contracted *original* graph: D₀, D₁, D₂, the non-DH count and the CRBA split;
    on the *expanded* graph (:func:`expand_parents`): D₀ᵉ, D₁ᵉ, D₂ᵉ, nnz(H) = 2D₁ᵉ + n and the
    Table 1 counts. The CRBA (eq. 21), RNEA and ABA costs (§6, :func:`rnea_cost`,
    :func:`aba_cost`) assume 1-DoF joints besides the floating base. ``fd_crba`` is §6's forward
    dynamics via the JSIM: CRBA + RNEA (for C) + LTDL factorise + one back-substitution, with
    divisions counted as multiplications.
    """
    lam_in = _as_parents(parents)
    nd_in = _as_dofs(dofs, lam_in.size)
    lam, nd, kept = contract_fixed_joints(lam_in, nd_in)
    if lam.size == 0:
        raise ValueError("the tree has no body with a DoF; nothing to cost")
    roots = np.flatnonzero(lam < 0)
    if floating_base:
        if roots.size != 1 or nd[roots[0]] != 6:
            raise ValueError(
                "floating_base=True needs exactly one body with a 6-DoF joint on the root (after "
                f"contracting 0-DoF bodies); found root children {kept[roots].tolist()} with "
                f"DoF {nd[roots].tolist()}")
        others = np.ones(lam.size, dtype=bool)
        others[roots[0]] = False
    else:
        others = np.ones(lam.size, dtype=bool)
    if np.any(nd[others] != 1):
        i = int(np.flatnonzero(others & (nd != 1))[0])
        hint = " (a 6-DoF joint on the root means floating_base=True)" if nd[i] == 6 else ""
        raise ValueError(
            f"body {int(kept[i])} has a {int(nd[i])}-DoF joint; the CRBA/RNEA/ABA formulas of §5–6 "
            f"assume 1-DoF joints besides the floating base{hint}")

    lam_e = expand_parents(lam, nd)
    n = int(lam_e.size)
    D1e, D2e = D1(lam_e), D2(lam_e)
    split = crba_split(lam, floating_base)
    non_dh = non_dh_count(lam)
    t1 = table1_costs(n, D1e, D2e)
    crba = crba_cost(split)
    rnea = rnea_cost(lam.size, floating_base, non_dh)
    aba = aba_cost(lam.size, floating_base, non_dh)
    fd = _add(crba, rnea, t1["LTDL"].factorize.ma(), t1["LTDL"].back_substitute.ma())
    return TreeCost(
        n=n, n_bodies=int(lam.size), floating_base=bool(floating_base),
        parents=tuple(int(p) for p in lam), dofs=tuple(int(k) for k in nd),
        bodies=tuple(int(k) for k in kept), expanded_parents=tuple(int(p) for p in lam_e),
        nnz_H=2 * D1e + n,
        D0=D0(lam), D1=D1(lam), D2=D2(lam), D0e=D0(lam_e), D1e=D1e, D2e=D2e,
        non_dh=non_dh, split=split, ltl=t1["LTL"], ltdl=t1["LTDL"],
        crba=crba, rnea=rnea, aba=aba, fd_crba=fd)


def cost(model) -> TreeCost:
    """:func:`tree_cost` of a robot model: anything with ``parents`` (−1 for the root, regular
    numbering), ``joint_dofs`` (6 floating base, 1 revolute/prismatic, 0 kept fixed joint) and
    ``floating_base`` attributes, such as :class:`~rbd_estimator.model.robot_model.RobotModel`."""
    return tree_cost(model.parents, model.joint_dofs, bool(model.floating_base))
