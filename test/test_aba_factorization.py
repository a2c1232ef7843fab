"""Nori's Property 2 (Appendix B): the matrix-form ABA ``Wᴸ D Wᴿ`` against the ABA and pinocchio.

Oracles: pinocchio's ``aba`` and ``rnea`` (independent code), our compiled ``aba``; the structure
claims of the proof (lower triangular in the orderings (33)–(34), unit diagonal blocks) checked on
the assembled matrices; the flop rule on a product counted by hand.
"""
from __future__ import annotations

import functools

import numpy as np
import pinocchio as pin
import pytest
import scipy.sparse as sp

from oracle import Pair, rel_err, urdf_xml
from trees import random_tree, serial_chain, tree_urdf
from rbd_estimator.dynamics import aba
from rbd_estimator.dynamics.aba_factorization import aba_matrix_form, forward_system, spgemm_flops
from rbd_estimator.dynamics.rnea import rnea_full

TOL = 1e-9
EPS = np.finfo(float).eps


@functools.lru_cache(maxsize=None)
def pair(key, floating_base: bool) -> Pair:
    if isinstance(key, tuple):                        # ("tree", seed): a random tree of 15 bodies
        parents = random_tree(15, np.random.default_rng(key[1]))
        xml, _ = tree_urdf(parents, seed=key[1], ft_leaves=2)      # two feet on fixed joints (0-DoF bodies)
        return Pair(xml, floating_base, keep_fixed=("ft0", "ft1"))
    return Pair(urdf_xml(key), floating_base)


def inv_tol(p: Pair, qp) -> float:
    """As test_dynamics: an inverting algorithm is held to ``max(1e-9, 10 κ(M) ε)`` (iCub's neck)."""
    M = pin.crba(p.pin_model, p.pin_data, qp)
    M = np.triu(M) + np.triu(M, 1).T
    return max(TOL, 10 * np.linalg.cond(M) * EPS)


CASES = [(("tree", s), fb) for s in (1, 2, 3) for fb in (False, True)] + \
        [(r, fb) for r in ("talos", "g1", "icub") for fb in (False, True)]
IDS = [f"{k if isinstance(k, str) else 'tree%d' % k[1]}-{'floating' if fb else 'fixed'}" for k, fb in CASES]


@pytest.mark.parametrize("key,fb", CASES, ids=IDS)
def test_matrix_form_equals_aba_and_pinocchio(key, fb):
    """q̈ from one forward substitution on Wᴸ D Wᴿ equals our ABA and pinocchio's, with external
    forces; the joint wrenches in ``d = Wᴿ d'`` are pinocchio's RNEA wrenches at that q̈."""
    p = pair(key, fb)
    m, pm, pd = p.model, p.pin_model, p.pin_data
    rng = np.random.default_rng(5)
    links = [m.body_names[i] for i in range(0, m.NB, 3)]
    for _ in range(3):
        q, v, _a = p.random_state(rng)
        tau = rng.normal(size=m.nv)
        f_ext = {name: rng.normal(scale=5.0, size=6) for name in links}
        ddq, (sys, T, WR, WL) = aba_matrix_form(m, q, v, tau, f_ext, return_parts=True)
        qp, vp = p.q_to_pin(q), p.v_to_pin(v)
        fe = pin.StdVec_Force()
        for _j in range(pm.njoints):
            fe.append(pin.Force.Zero())
        for name, w in f_ext.items():                 # wrench in the link frame → its parent joint
            fr = pm.frames[pm.getFrameId(name)]
            fe[fr.parentJoint] += fr.placement.act(pin.Force(w[:3], w[3:]))
        ref = p.v_from_pin(pin.aba(pm, pd, qp, vp, p.v_to_pin(tau), fe))
        tol = inv_tol(p, qp)
        assert rel_err(ddq, ref) <= tol
        assert rel_err(ddq, aba(m, q, v, tau, f_ext)) <= tol
        # the joint wrenches f_i of the solution d (columns 'f'): RNEA's at the same q̈ (independent)
        d = WR @ sp.linalg.spsolve_triangular(sp.tril(T).tocsr(), -(WL @ sys.b), lower=True)
        _tau, _v, _acc, f = rnea_full(m, q, v, ddq, f_ext)
        F = np.array([d[sys.col[("f", i)]] for i in range(m.NB)])
        assert rel_err(F, f) <= max(1e-8, 100 * tol)


@pytest.mark.parametrize("key,fb", [(("tree", 1), False), (("tree", 2), True), ("talos", True)],
                         ids=["tree1-fixed", "tree2-floating", "talos-floating"])
def test_the_product_is_lower_triangular_with_unit_diagonal(key, fb):
    """The claim of Property 2 in the orderings (33)–(34): ``Wᴸ D Wᴿ`` has nothing above its
    diagonal but rounding, and ±1 on it; ``D`` alone in the same orderings is not triangular
    (so the factors do the work, not the permutation)."""
    p = pair(key, fb)
    rng = np.random.default_rng(11)
    q, v, _a = p.random_state(rng)
    tau = rng.normal(size=p.model.nv)
    _, (sys, T, _WR, _WL) = aba_matrix_form(p.model, q, v, tau, return_parts=True)
    scale = abs(T).max()
    upper = sp.triu(T, 1)
    assert (abs(upper).max() if upper.nnz else 0.0) <= 1e-12 * scale
    assert np.allclose(np.abs(T.diagonal()), 1.0, rtol=0, atol=1e-12)
    upper_D = abs(sp.triu(sys.D, 1))
    assert upper_D.max() > 0.1                    # e.g. (3f_i) on a_i: I_i sits above the diagonal


def test_a_mimic_model_is_refused_with_the_joint_named():
    xml = ('<robot name="m"><link name="b"/><link name="l1"><inertial><mass value="1"/>'
           '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
           '<link name="l2"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" '
           'izz="1"/></inertial></link>'
           '<joint name="j1" type="revolute"><parent link="b"/><child link="l1"/><axis xyz="0 0 1"/>'
           '<limit effort="1" velocity="1" lower="-1" upper="1"/></joint>'
           '<joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 1 0"/>'
           '<limit effort="1" velocity="1" lower="-1" upper="1"/><mimic joint="j1" multiplier="2"/></joint>'
           '</robot>')
    from rbd_estimator import RobotModel
    m = RobotModel.from_urdf(xml)
    with pytest.raises(ValueError, match="j2"):
        forward_system(m, np.zeros(m.nq), np.zeros(m.nv), np.zeros(m.nv))


def test_spgemm_flops_hand_count():
    """[[1,2],[0,3]] · [[4,0],[5,6]]: C00 = 1·4 + 2·5 (2 m, 1 a), C01 = 2·6, C10 = 3·5, C11 = 3·6
    (1 m each): 5 multiplications + 1 addition = 6."""
    A, B = np.array([[1.0, 2.0], [0.0, 3.0]]), np.array([[4.0, 0.0], [5.0, 6.0]])
    assert spgemm_flops(A, B) == 6
    assert spgemm_flops(np.eye(3), np.ones((3, 1))) == 3            # three products, no sum
    assert spgemm_flops(np.ones((1, 4)), np.ones((4, 1))) == 7      # a dot product of 4: 4 m + 3 a


def test_serial_chain_fixed_base_single_body():
    """The smallest case: one revolute body on the fixed base."""
    xml, _ = tree_urdf(serial_chain(1), seed=0)
    p = Pair(xml, False)
    rng = np.random.default_rng(0)
    q, v, _a = p.random_state(rng)
    tau = rng.normal(size=1)
    ref = pin.aba(p.pin_model, p.pin_data, p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(tau))
    assert rel_err(aba_matrix_form(p.model, q, v, tau), p.v_from_pin(ref)) <= TOL


def test_counted_aba_is_more_than_twice_the_formula_per_link():
    """The ABA we run, counted on generic 6-D blocks (random axes), against McMillan–Orin's
    hand-optimised figure (cost.aba_cost): more than twice per link, less than three times."""
    from rbd_estimator import RobotModel
    from rbd_estimator.dynamics.aba_factorization import aba_flops
    from rbd_estimator.model.cost import cost
    counts = []
    for n in (10, 20):
        m = RobotModel.from_urdf(tree_urdf(serial_chain(n), seed=n)[0])
        rng = np.random.default_rng(n)
        counts.append((aba_flops(m, m.random_configuration(rng), rng.normal(size=n), rng.normal(size=n)),
                       sum(cost(m).aba)))
    per_link = (counts[1][0] - counts[0][0]) / 10, (counts[1][1] - counts[0][1]) / 10
    assert per_link[1] == 429
    assert 2 * per_link[1] < per_link[0] < 3 * per_link[1]
