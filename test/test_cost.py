"""Tests of rbd_estimator.model.cost against Featherstone (2005), IJRR 24(6), "Efficient
factorization of the joint space inertia matrix for branched kinematic trees".

Oracles: the numbers printed in §§2, 4.2 and 6 (hand-checked), Table 2's closed forms, the
sparsity pattern of eq. 6 built from ancestor sets, and instrumented copies of the paper's
factorisation and multiply/solve listings (§2, Appendix A) that count their own operations.
"""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest

from rbd_estimator.model import cost as C
from trees import (balanced_binary_tree, floating_chain_30dof, humanoid_30dof, random_tree,
                   serial_chain, short_side_branches, square_grid_spanning_tree)


def one_based(lam):
    """0-based parent array (−1 = root) → the paper's 1-based λ (0 = root)."""
    return tuple(int(p) + 1 for p in lam)


def zero_based(lam):
    return [p - 1 for p in lam]


# ------------------------------------------------------------------------------------ oracles
def ancestors(parents, i):
    """Proper ancestors of i, walking the parent array (independent of the module)."""
    out = set()
    j = parents[i]
    while j != -1:
        out.add(j)
        j = parents[j]
    return out


def jsim_pattern(parents):
    """Eq. 6: H_ij may be nonzero iff i ∈ ν(j) or j ∈ ν(i), i.e. one is an ancestor-or-self of the other."""
    n = len(parents)
    anc = [ancestors(parents, i) | {i} for i in range(n)]
    P = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            P[i, j] = i in anc[j] or j in anc[i]
    return P


class Ops:
    def __init__(self):
        self.sqrt = self.div = self.m = self.a = 0

    def as_opcount(self):
        return C.OpCount(self.sqrt, self.div, self.m, self.a)


def ltl_factorize(H, lam, ops):
    """§2 listing, 0-based; in situ, L left in the lower triangle."""
    H = H.copy()
    for k in range(len(lam) - 1, -1, -1):
        H[k, k] = np.sqrt(H[k, k]); ops.sqrt += 1
        j = lam[k]
        while j != -1:
            H[k, j] /= H[k, k]; ops.div += 1
            j = lam[j]
        i = lam[k]
        while i != -1:
            j = i
            while j != -1:
                H[i, j] -= H[k, i] * H[k, j]; ops.m += 1; ops.a += 1
                j = lam[j]
            i = lam[i]
    return np.tril(H)


def ltdl_factorize(A, lam, ops):
    """Appendix A listing, 0-based; returns (unit L, diag D)."""
    A = A.copy()
    for k in range(len(lam) - 1, -1, -1):
        i = lam[k]
        while i != -1:
            a = A[k, i] / A[k, k]; ops.div += 1
            j = i
            while j != -1:
                A[i, j] -= A[k, j] * a; ops.m += 1; ops.a += 1
                j = lam[j]
            A[k, i] = a
            i = lam[i]
    L = np.tril(A, -1) + np.eye(len(lam))
    return L, np.diag(A).copy()


def mul_L(L, x, lam, ops, unit):
    y = np.empty_like(x)
    for i in range(len(lam) - 1, -1, -1):
        if unit:
            y[i] = x[i]
        else:
            y[i] = L[i, i] * x[i]; ops.m += 1
        j = lam[i]
        while j != -1:
            y[i] += L[i, j] * x[j]; ops.m += 1; ops.a += 1
            j = lam[j]
    return y


def mul_LT(L, x, lam, ops, unit):
    y = np.empty_like(x)
    for i in range(len(lam)):
        if unit:
            y[i] = x[i]
        else:
            y[i] = L[i, i] * x[i]; ops.m += 1
    for i in range(len(lam)):
        j = lam[i]
        while j != -1:
            y[j] += L[i, j] * x[i]; ops.m += 1; ops.a += 1
            j = lam[j]
    return y


def solve_L(L, x, lam, ops, unit):
    x = x.copy()
    for i in range(len(lam)):
        j = lam[i]
        while j != -1:
            x[i] -= L[i, j] * x[j]; ops.m += 1; ops.a += 1
            j = lam[j]
        if not unit:
            x[i] /= L[i, i]; ops.div += 1
    return x


def solve_LT(L, x, lam, ops, unit):
    x = x.copy()
    for i in range(len(lam) - 1, -1, -1):
        if not unit:
            x[i] /= L[i, i]; ops.div += 1
        j = lam[i]
        while j != -1:
            x[j] -= L[i, j] * x[i]; ops.m += 1; ops.a += 1
            j = lam[j]
    return x


def random_jsim(lam, rng):
    """A random SPD matrix with exactly the pattern of eq. 6: H = Lᵀ D L with L of the optimal
    pattern (L_ij ≠ 0 only for j an ancestor of i)."""
    n = len(lam)
    L = np.eye(n)
    for i in range(n):
        for j in ancestors(lam, i):
            L[i, j] = rng.uniform(0.5, 1.5) * rng.choice([-1, 1])
    d = rng.uniform(1.0, 2.0, n)
    return L.T @ np.diag(d) @ L, L, d


# --------------------------------------------------------------------------------- §2, Fig. 2
def test_expand_parents_fig2():
    lam = zero_based([0, 1, 1, 2, 2, 3, 3])
    dofs = [2, 2, 1, 1, 1, 3, 1]
    expanded = C.expand_parents(lam, dofs)
    assert one_based(expanded) == (0, 1, 2, 3, 2, 4, 4, 5, 8, 9, 5)
    assert len(expanded) == sum(dofs) == 11


def test_expand_parents_all_single_dof_is_identity():
    lam = zero_based([0, 1, 1, 2, 2, 3, 3])
    assert one_based(C.expand_parents(lam, [1] * 7)) == (0, 1, 1, 2, 2, 3, 3)


def test_tree1_patterns():
    """Tree 1 (Fig. 1): the L pattern printed in §2 and the H pattern of eq. 4.

    The copy of eq. 4 in shared/papers shows row 6 as columns (1, 3, 5); eq. 6 and the printed
    L pattern give (1, 3, 6) — node 6 hangs from 3, node 5 from 2 — so the printed row is a
    transcription slip, and the expected pattern below uses (1, 3, 6)."""
    lam = zero_based([0, 1, 1, 2, 2, 3, 3])
    rows_L = [(1,), (1, 2), (1, 3), (1, 2, 4), (1, 2, 5), (1, 3, 6), (1, 3, 7)]  # §2, 1-based
    L = np.zeros((7, 7), dtype=bool)
    for i, cols in enumerate(rows_L):
        L[i, [c - 1 for c in cols]] = True
    assert np.array_equal(jsim_pattern(lam), L | L.T)
    assert C.D1(lam) == np.count_nonzero(np.tril(L, -1)) == 10
    assert list(C.depths(lam)) == [1, 2, 2, 3, 3, 3, 3]
    assert list(C.subtree_sizes(lam)) == [7, 3, 3, 1, 1, 1, 1]
    assert C.non_dh_count(lam) == 3          # §5: Tree 1 has three non-DH nodes


def test_invalid_parent_arrays_are_rejected():
    with pytest.raises(ValueError, match="regular numbering"):
        C.depths([0])
    with pytest.raises(ValueError, match="regular numbering"):
        C.D1([-1, 2, 0])
    with pytest.raises(ValueError, match="one per body"):
        C.expand_parents([-1, 0], [1])


# ------------------------------------------------------------------------------ §6 humanoid
def test_humanoid_graphs():
    parents, dofs = humanoid_30dof()
    assert len(parents) == 25 and sum(dofs) == 30
    d = C.depths(parents)
    assert d[0] == 1 and sorted(d[1:]) == sorted(list(range(2, 8)) * 4)
    expanded = C.expand_parents(parents, dofs)
    de = C.depths(expanded)
    # §6: one expanded body at each d = 1 … 6 (the torso at 6), then four at each d = 7 … 12.
    assert sorted(de) == list(range(1, 7)) + sorted(list(range(7, 13)) * 4)
    assert C.D1(expanded) == 219
    assert C.D2(expanded) == 1039
    assert C.D0(parents) == 24
    assert C.D1(parents) == 84
    assert C.non_dh_count(parents) == 3


def test_humanoid_tree_cost():
    parents, dofs = humanoid_30dof()
    tc = C.tree_cost(parents, dofs, floating_base=True)
    assert (tc.n, tc.n_bodies) == (30, 25)
    assert (tc.D1e, tc.D2e, tc.nnz_H) == (219, 1039, 468)
    assert tc.n * tc.n - tc.nnz_H == 432                      # "48% ... are branch-induced zeros"
    assert round(100 * (1 - tc.density)) == 48
    assert (tc.D0, tc.D1) == (24, 84)
    assert tc.split == dict(D0a=21, D1a=66, D0b=3, D1b=18, D0c=1, D1c=6)
    assert tc.crba == (2475, 2124)
    assert tc.ltdl.factorize == C.OpCount(div=219, m=1039, a=1039)
    assert tc.ltdl.factorize.ma() == (1258, 1039)
    assert tc.ltdl.back_substitute.ma() == (468, 438)
    assert tc.rnea == (2275, 1996)
    assert tc.aba == (5544, 5054)
    assert tc.fd_crba == (6476, 5597)


def test_equivalent_chain_tree_cost():
    parents, dofs = floating_chain_30dof()
    tc = C.tree_cost(parents, dofs, floating_base=True)
    assert tc.split == dict(D0a=24, D1a=300, D0b=0, D1b=0, D0c=1, D1c=24)
    assert tc.crba == (6462, 4419)
    assert tc.rnea == (2263, 1972)
    assert tc.aba == (5346, 4883)
    # The expanded chain is a 30-chain: H is dense, and sparse LTDL costs what dense LDLᵀ does.
    assert (tc.D1e, tc.D2e, tc.nnz_H) == (435, 4495, 900)
    assert tc.ltdl.factorize.ma() == (4930, 4495)
    assert tc.ltdl.back_substitute.ma() == (900, 870)
    assert tc.fd_crba == (14555, 11756)


def test_section6_ratios():
    """The ratios quoted in §6 for a = m and a = 0."""
    hum = C.tree_cost(*humanoid_30dof(), floating_base=True)
    chain = C.tree_cost(*floating_chain_30dof(), floating_base=True)
    both = lambda p: p[0] + p[1]  # noqa: E731   a = m
    assert round(both(chain.crba) / both(hum.crba), 2) == 2.37
    assert round(chain.crba[0] / hum.crba[0], 2) == 2.61
    assert round(both(chain.fd_crba) / both(hum.fd_crba), 2) == 2.18
    assert round(chain.fd_crba[0] / hum.fd_crba[0], 2) == 2.25
    assert round(100 * (both(hum.fd_crba) / both(hum.aba) - 1)) == 14     # "about 14% slower"
    assert round(100 * (hum.fd_crba[0] / hum.aba[0] - 1)) == 17           # "17% slower"
    assert round(both(chain.fd_crba) / both(chain.aba), 1) == 2.6         # "factor of 2.6"


def test_formulas_directly():
    assert C.crba_cost(dict(D0a=21, D1a=66, D0b=3, D1b=18, D0c=1, D1c=6)) == (2475, 2124)
    assert C.rnea_cost(25, True, 0) == (2263, 1972)
    assert C.rnea_cost(25, True, 3) == (2275, 1996)
    assert C.rnea_cost(6, False) == (93 * 6 - 69, 81 * 6 - 66)
    assert C.aba_cost(25, True, 0) == (5346, 4883)
    assert C.aba_cost(25, True, 3) == (5544, 5054)
    assert C.aba_cost(6, False) == (224 * 6 - 165, 205 * 6 - 203)
    with pytest.raises(ValueError):
        C.aba_cost(1, True)


def test_fixed_base_aba_formula_has_the_floating_base_slope():
    """The fixed-base ABA formula (quoted, its source not at hand) adds per body what the
    floating-base one that §6 quotes adds per revolute joint: 224m + 205a."""
    for n in (2, 5, 30):
        fixed = np.subtract(C.aba_cost(n + 1, False), C.aba_cost(n, False))
        floating = np.subtract(C.aba_cost(n + 2, True), C.aba_cost(n + 1, True))
        assert tuple(fixed) == tuple(floating) == (224, 205)


def test_fixed_base_crba_matches_unbranched_closed_form():
    """Eq. 20 on an unbranched fixed-base chain is (10n² + 22n − 32)m + (6n² + 37n − 43)a."""
    for n in range(1, 30):
        m, a = C.crba_cost(C.crba_split(serial_chain(n), floating_base=False))
        assert (m, a) == (10 * n * n + 22 * n - 32, 6 * n * n + 37 * n - 43)


# --------------------------------------------------------------------------- Table 2, §4.2
def test_table2_unbranched():
    for n in range(1, 41):
        lam = serial_chain(n)
        assert C.D1(lam) == (n * n - n) // 2
        assert C.D2(lam) == (n ** 3 - n) // 6


def test_table2_short_side_branches():
    for m in range(1, 41):
        lam = short_side_branches(m)
        assert len(lam) == 2 * m
        assert C.D1(lam) == m * m
        assert C.D2(lam) == (2 * m ** 3 + 3 * m ** 2 + m) // 6


def test_table2_balanced_binary_tree():
    for m in range(1, 9):
        lam = balanced_binary_tree(m)
        assert len(lam) == 2 ** m - 1
        d = C.depths(lam)
        assert all(np.count_nonzero(d == k) == 2 ** (k - 1) for k in range(1, m + 1))
        assert C.D1(lam) == sum(i * 2 ** i for i in range(1, m))
        assert C.D2(lam) == sum(i * (i + 1) * 2 ** (i - 1) for i in range(1, m))


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_table2_square_grid_spanning_tree(seed):
    for m in range(1, 13):
        lam = square_grid_spanning_tree(m, seed=seed)
        assert len(lam) == m * m
        # minimum-depth spanning tree of the grid: each body's parent is a grid neighbour one
        # step closer to the corner, so d = r + c + 1
        for i, p in enumerate(lam):
            r, c = divmod(i, m)
            if i == 0:
                assert p == -1
            else:
                assert p in {(r - 1) * m + c if r else None, r * m + c - 1 if c else None}
        assert C.D1(lam) == m ** 3 - m ** 2
        assert C.D2(lam) == (7 * m ** 4 - 6 * m ** 3 - m ** 2) // 12


def test_section42_speedups_over_dense():
    """§4.2's simple operation count D₁ + 2D₂ for LTDL, against a dense matrix of the same n."""
    def ops(lam):
        return C.D1(lam) + 2 * C.D2(lam)

    def ratio(lam):
        return ops(serial_chain(len(lam))) / ops(lam)

    assert round(ratio(balanced_binary_tree(4)), 1) == 7.8          # n = 15
    assert round(ratio(balanced_binary_tree(8)), -1) == 430         # n = 255
    assert round(ratio(square_grid_spanning_tree(4)), 1) == 5.3     # n = 16
    assert round(ratio(square_grid_spanning_tree(16))) == 74        # n = 256


def test_side_branch_ratios_converge():
    """§4.2: one-body side branches → D₁, D₂ tend to 1/2, 1/4 of the unbranched values;
    two-body side branches → 1/3, 1/9."""
    m = 400
    lam = short_side_branches(m)
    n = len(lam)
    assert C.D1(lam) / C.D1(serial_chain(n)) == pytest.approx(1 / 2, rel=0.01)
    assert C.D2(lam) / C.D2(serial_chain(n)) == pytest.approx(1 / 4, rel=0.01)
    lam2 = []
    prev = -1
    for _ in range(m):
        main = len(lam2)
        lam2 += [prev, main, main + 1]
        prev = main
    n2 = len(lam2)
    assert C.D1(lam2) / C.D1(serial_chain(n2)) == pytest.approx(1 / 3, rel=0.01)
    assert C.D2(lam2) / C.D2(serial_chain(n2)) == pytest.approx(1 / 9, rel=0.01)


# ------------------------------------------------- eq. 6, Table 1 against instrumented listings
RNG_SEEDS = range(12)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_D1_counts_nonzeros_of_eq6_pattern(seed):
    rng = np.random.default_rng(seed)
    lam = random_tree(int(rng.integers(1, 40)), rng, branchiness=rng.uniform(0.1, 0.9))
    P = jsim_pattern(lam)
    n = len(lam)
    assert C.D1(lam) == np.count_nonzero(np.tril(P, -1))
    assert 2 * C.D1(lam) + n == np.count_nonzero(P)
    # §5's identity Σ(d_i − 1) = Σ(|ν(i)| − 1), and D₀ = bodies not on the root
    assert C.D1(lam) == int(np.sum(C.subtree_sizes(lam) - 1))
    assert C.D0(lam) == sum(1 for p in lam if p != -1)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_table1_matches_instrumented_listings(seed):
    rng = np.random.default_rng(100 + seed)
    n_bodies = int(rng.integers(1, 15))
    parents = random_tree(n_bodies, rng, branchiness=rng.uniform(0.1, 0.9))
    dofs = rng.integers(1, 4, n_bodies)                         # multi-DoF joints → expanded graph
    lam = list(C.expand_parents(parents, dofs))
    n, D1, D2 = len(lam), C.D1(lam), C.D2(lam)
    t1 = C.table1_costs(n, D1, D2)
    H, L_true, d_true = random_jsim(lam, rng)
    P = jsim_pattern(lam)
    assert np.all(H[~P] == 0)
    x = rng.normal(size=n)

    # LTDL: factorise, then the four kernels on the unit factor, then back-substitution.
    ops = Ops()
    L, d = ltdl_factorize(H, lam, ops)
    assert ops.as_opcount() == t1["LTDL"].factorize
    np.testing.assert_allclose(L.T @ np.diag(d) @ L, H, atol=1e-9)
    np.testing.assert_allclose(L, L_true, atol=1e-9)          # LᵀDL is unique: no fill-in
    assert np.all(L[~P] == 0)
    for kernel, want in [(mul_L, L @ x), (mul_LT, L.T @ x),
                         (solve_L, np.linalg.solve(L, x)), (solve_LT, np.linalg.solve(L.T, x))]:
        ops = Ops()
        np.testing.assert_allclose(kernel(L, x, lam, ops, unit=True), want, atol=1e-8)
        expected = t1["LTDL"].multiply if kernel in (mul_L, mul_LT) else t1["LTDL"].solve
        assert ops.as_opcount() == expected, kernel.__name__
    ops = Ops()
    y = solve_LT(L, x, lam, ops, unit=True)
    y = y / d; ops.div += n
    y = solve_L(L, y, lam, ops, unit=True)
    np.testing.assert_allclose(H @ y, x, atol=1e-8)
    assert ops.as_opcount() == t1["LTDL"].back_substitute

    # LTL
    ops = Ops()
    L = ltl_factorize(H, lam, ops)
    assert ops.as_opcount() == t1["LTL"].factorize
    np.testing.assert_allclose(L.T @ L, H, atol=1e-9)
    assert np.all(L[~P] == 0)
    for kernel, want in [(mul_L, L @ x), (mul_LT, L.T @ x),
                         (solve_L, np.linalg.solve(L, x)), (solve_LT, np.linalg.solve(L.T, x))]:
        ops = Ops()
        np.testing.assert_allclose(kernel(L, x, lam, ops, unit=False), want, atol=1e-8)
        expected = t1["LTL"].multiply if kernel in (mul_L, mul_LT) else t1["LTL"].solve
        assert ops.as_opcount() == expected, kernel.__name__
    ops = Ops()
    y = solve_L(L, solve_LT(L, x, lam, ops, unit=False), lam, ops, unit=False)
    np.testing.assert_allclose(H @ y, x, atol=1e-8)
    assert ops.as_opcount() == t1["LTL"].back_substitute


# ------------------------------------------------------------------------- §5 DH / non-DH split
def split_for_choice(parents, dh, floating_base):
    """Eq. 19 and π_c for a given DH mask, from first principles."""
    n = len(parents)
    nu = [1 + sum(1 for k in range(n) if i in ancestors(parents, k)) for i in range(n)]
    out = dict(D0a=0, D1a=0, D0b=0, D1b=0, D0c=0, D1c=0)
    for i, p in enumerate(parents):
        if p == -1:
            continue
        key = "a" if dh[i] else "b"
        out["D0" + key] += 1
        out["D1" + key] += nu[i]
        if floating_base and dh[i] and parents[p] == -1:
            out["D0c"] += 1
            out["D1c"] += nu[i]
    return out


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_dh_choice_maximises_D1a(seed):
    rng = np.random.default_rng(200 + seed)
    parents = random_tree(int(rng.integers(2, 13)), rng, branchiness=0.6)
    n = len(parents)
    groups = [[i for i in range(n) if parents[i] == g] for g in range(-1, n)]
    groups = [g for g in groups if g]
    best = max(
        split_for_choice(parents, [any(i == c for c in choice) for i in range(n)], False)["D1a"]
        for choice in itertools.product(*groups))
    split = C.crba_split(parents, floating_base=False)
    assert split["D1a"] == best
    assert split == split_for_choice(parents, list(C.dh_nodes(parents)), False)
    assert split["D0a"] + split["D0b"] == C.D0(parents)
    assert split["D1a"] + split["D1b"] == C.D1(parents)
    assert split["D0c"] == split["D1c"] == 0
    assert C.non_dh_count(parents) == sum(max(0, len(g) - 1) for g in groups)   # eq. 17


# ------------------------------------------------------------------------- 0-DoF contraction
def test_fixed_joint_in_middle_of_chain_is_contracted():
    parents = serial_chain(6)
    dofs = [1, 1, 0, 1, 1, 1]                                  # body 2 welded to body 1
    lam, nd, kept = C.contract_fixed_joints(parents, dofs)
    assert list(lam) == serial_chain(5) and list(nd) == [1] * 5 and list(kept) == [0, 1, 3, 4, 5]
    assert one_based(C.expand_parents(parents, dofs)) == (0, 1, 2, 3, 4)
    tc = C.tree_cost(parents, dofs, floating_base=False)
    ref = C.tree_cost(serial_chain(5), [1] * 5, floating_base=False)
    assert tc.n == tc.n_bodies == 5 and tc.bodies == (0, 1, 3, 4, 5)
    for name in ["n", "nnz_H", "D0", "D1", "D2", "D1e", "D2e", "non_dh", "split",
                 "ltl", "ltdl", "crba", "rnea", "aba", "fd_crba", "parents", "expanded_parents"]:
        assert getattr(tc, name) == getattr(ref, name), name
    assert tc.crba == (10 * 25 + 22 * 5 - 32, 6 * 25 + 37 * 5 - 43)


def test_fixed_joint_branch_point_and_humanoid_sensor_link():
    # A welded body with two children: they become siblings under its parent.
    lam, nd, kept = C.contract_fixed_joints([-1, 0, 1, 1], [1, 0, 1, 1])
    assert list(lam) == [-1, 0, 0] and list(kept) == [0, 2, 3]
    # Humanoid with a welded force-torque sensor link between torso and every limb, and a
    # welded root link (a fixed-base URDF root kept as a body): same costs as §6.
    parents, dofs = humanoid_30dof()
    p2, d2 = [-1, 0], [0, 6]
    old_to_new = {0: 1}
    for i in range(1, 25):
        if parents[i] == 0:
            p2.append(1); d2.append(0)                      # the sensor link
            p2.append(len(p2) - 1); d2.append(1)
        else:
            p2.append(old_to_new[parents[i]]); d2.append(1)
        old_to_new[i] = len(p2) - 1
    tc = C.tree_cost(p2, d2, floating_base=True)
    ref = C.tree_cost(parents, dofs, floating_base=True)
    assert tc.n == 30 and tc.n_bodies == 25
    assert (tc.split, tc.crba, tc.rnea, tc.aba, tc.fd_crba, tc.nnz_H) == \
        (ref.split, ref.crba, ref.rnea, ref.aba, ref.fd_crba, ref.nnz_H)


def test_tree_cost_rejects_inconsistent_dofs():
    with pytest.raises(ValueError, match="floating_base=True"):
        C.tree_cost(*humanoid_30dof(), floating_base=False)
    with pytest.raises(ValueError, match="6-DoF joint on the root"):
        C.tree_cost(serial_chain(3), [1, 1, 1], floating_base=True)
    with pytest.raises(ValueError, match="3-DoF joint"):
        C.tree_cost(serial_chain(3), [1, 3, 1], floating_base=False)


# ------------------------------------------------------------------------------ cost(model)
def test_cost_duck_types_a_model():
    parents, dofs = humanoid_30dof()
    model = SimpleNamespace(parents=np.array(parents), joint_dofs=np.array(dofs), floating_base=True)
    tc = C.cost(model)
    assert tc.fd_crba == (6476, 5597) and tc.aba == (5544, 5054)
    assert "30 DoF" in tc.summary()
    fixed = SimpleNamespace(parents=np.array(serial_chain(7)), joint_dofs=np.ones(7, int),
                            floating_base=False)
    tf = C.cost(fixed)
    assert tf.n == 7 and tf.split["D0c"] == 0
    assert tf.rnea == (93 * 7 - 69, 81 * 7 - 66)
    assert tf.aba == (224 * 7 - 165, 205 * 7 - 203)
