"""The flop counter behind Nori's Figs. 1 and 2 (``estimation/sparse_lu.flops``, ``StaticLU.flops``).

Oracles: counts done by hand on small matrices (in the docstrings), and on the plans of small trees
(a chain of 1, 2 and 3 bodies, a branch) a dense elimination written here, independently of the
symbolic factorisation, that performs the planned LU on the permuted matrix and counts each
operation it does on a structural nonzero.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from trees import serial_chain, tree_urdf
from rbd_estimator import RobotModel
from rbd_estimator.estimation.forward import SparseForwardDynamics
from rbd_estimator.estimation.sparse_lu import flops, symbolic_lu

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
from papers_figures import dense_lu_flops, fig2_estimator  # noqa: E402


def lu_pattern_flops(A: np.ndarray) -> int:
    """Row-oriented (IKJ) LU of ``A`` with its pivots in place, then one solve, counted on the
    pattern: for each ``L[i, k]`` one division and a multiply–subtract per ``U[k, j > k]`` (the
    pattern of row ``i`` grows by those ``j``: fill-in); two flops per off-diagonal entry of ``L``
    and ``U`` in the substitutions; one division per row."""
    P = np.asarray(A) != 0
    n = P.shape[0]
    ops = 0
    for i in range(n):
        for k in range(i):
            if P[i, k]:
                upper_k = [j for j in range(k + 1, n) if P[k, j]]
                ops += 1 + 2 * len(upper_k)
                P[i, upper_k] = True
    return ops + 2 * int(np.count_nonzero(np.tril(P, -1))) + 2 * int(np.count_nonzero(np.triu(P, 1))) + n


def flops_of(A) -> int:
    """:func:`flops` of the symbolic LU of a dense array's pattern."""
    C = sp.csr_matrix(np.asarray(A, dtype=float))
    C.sort_indices()
    Lp, Li, Up, Ui = symbolic_lu(C.indptr, C.indices, C.shape[0])
    return flops(Lp, Li, Up)


def test_hand_count_dense_2x2():
    """[[a, b], [c, d]]: l = c/a (1); u = d − l b (2); y₁ = r₁ − l y₀ (2); x₁ = y₁/u (1);
    x₀ = (y₀ − b x₁)/a (3). Total 9."""
    assert flops_of([[1, 2], [3, 4]]) == 9
    assert dense_lu_flops(2) == 9


def test_hand_count_triangular_and_arrow():
    """Lower triangular [[a,0,0],[b,c,0],[d,0,e]]: two divisions l = b/a, d/a; forward 2 + 2;
    backward three divisions: 9 (= 3 nnz(L) + n: the static LU normalises L even when the matrix
    is already triangular). Arrow [[a,b,c],[d,e,0],[f,0,g]]: l₁₀ = d/a (1) and e −= l₁₀ b,
    fill (1,2) −= l₁₀ c (4); l₂₀ = f/a (1), g −= l₂₀ c, fill (2,1) −= l₂₀ b (4); l₂₁ = (2,1)/u₁₁ (1),
    g −= l₂₁ u₁₂ (2): 13; solves 2·3 + 2·3 + 3 = 15. Total 28 = the dense 3 × 3 count."""
    assert flops_of([[1, 0, 0], [2, 3, 0], [4, 0, 5]]) == 9
    assert flops_of([[1, 2, 3], [4, 5, 0], [6, 0, 7]]) == 28 == dense_lu_flops(3)
    assert flops_of(np.diag([1.0, 2, 3])) == 3                      # diagonal: three divisions


@pytest.mark.parametrize("n", range(1, 9))
def test_dense_closed_form_is_the_counter_on_full_patterns(n):
    assert dense_lu_flops(n) == flops_of(np.ones((n, n))) == lu_pattern_flops(np.ones((n, n)))


TREES = {"chain 1": [-1], "chain 2": [-1, 0], "chain 3": [-1, 0, 1], "branch": [-1, 0, 0, 1]}


def permuted_matrix(lu, values) -> np.ndarray:
    """``P K Q`` of a planned LU (CSR pattern ``lu.Ap, lu.Ai``) with the given values."""
    return sp.csr_matrix((values, lu.Ai, lu.Ap), shape=(lu.N, lu.N)).toarray()


@pytest.mark.parametrize("name", TREES)
def test_forward_dynamics_plan_count_matches_counted_elimination(name):
    """Nori eq. (15) on small trees: the plan's count equals the counted elimination of its own
    permuted matrix, plus two flops per term of the gather that forms the matrix values."""
    m = RobotModel.from_urdf(tree_urdf(TREES[name], seed=1)[0])
    f = SparseForwardDynamics(m)
    rng = np.random.default_rng(0)
    f.compute(m.random_configuration(rng), rng.normal(size=m.nv), rng.normal(size=m.nv))
    lu = f.lu
    A = permuted_matrix(lu, np.ones(lu.nnz))                          # the pattern: all planned entries
    assert lu.flops == lu_pattern_flops(A) + 2 * len(lu.G[1])
    assert flops(lu.Lp, lu.Li, lu.Up) == lu_pattern_flops(A)


@pytest.mark.parametrize("n", [3, 4, 6])
def test_estimation_plan_count_matches_counted_elimination(n):
    """Fig. 2's setting (a chain with load cells under both end links, KKT system): the same."""
    est = fig2_estimator(n)
    lu = est.factorisation
    A = permuted_matrix(lu, np.ones(lu.nnz))
    assert est.report.flops == lu_pattern_flops(A) + 2 * len(lu.G[1])
    assert est.model.NB == n


def test_chain_of_one_body_count_by_parts():
    """One revolute body on a fixed base: the system (15) has 6 + 6 + 1 = 13 unknowns (a, f, q̈);
    the count is Σ_L (1 + 2 |U(k, k+1:)|) + 2 nnz(L) + 2 (nnz(U) − n) + n + 2 |G|, each part
    read off the planned patterns."""
    m = RobotModel.from_urdf(tree_urdf([-1], seed=1)[0])
    lu = SparseForwardDynamics(m).lu
    assert lu.N == 13
    urow = np.diff(lu.Up) - 1
    by_parts = (sum(1 + 2 * int(urow[k]) for k in lu.Li) + 2 * len(lu.Li) + 2 * int(urow.sum()) + lu.N
                + 2 * len(lu.G[1]))
    assert lu.flops == by_parts
