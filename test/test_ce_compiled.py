"""Compiled constraint embedding (``dynamics/ce_compiled.py``, ``model/cluster_kernels.py``) against
its two oracles: the readable reference algorithms (``dynamics/ce_aba.py``, ``ce_rnea.py``,
``model/loop_closure.py``), ≤ 1e-12 relative, and pinocchio on the spanning tree with the loops
written from the declarations (``loops_oracle.LoopPair``), ≤ 1e-9; 50 random states per robot,
fixed and floating base. The kernels allocate nothing per call (numba's allocation statistics)."""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest
from loop_mechanisms import four_bar_knee, mechanism_chains, mit_leg, rotor_chain
from loops_oracle import LoopPair

from rbd_estimator import ce_aba, ce_rnea
from rbd_estimator.dynamics import ClusterDynamics
from rbd_estimator.dynamics.ce_aba import ce_aba as ce_aba_reference
from rbd_estimator.dynamics.ce_rnea import ce_rnea as ce_rnea_reference
from rbd_estimator.model.cluster_kernels import cluster_constraint, cluster_position
from rbd_estimator.model.cluster_packing import PackedClusterTree
from rbd_estimator.model.loop_closure import LoopClosureError, spanning_state
from rbd_estimator.model.loop_closure import cluster_constraint as cluster_constraint_reference
from rbd_estimator.model.loop_closure import cluster_position as cluster_position_reference
from rbd_estimator.model.loops import ExplicitLoop, LoopConfig

N_STATES = 50
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def humanoid():
    """The shipped loop humanoid: urdf/humanoid.urdf with config/humanoid_loops.yaml (rotors)."""
    with open(os.path.join(REPO, "urdf", "humanoid.urdf"), encoding="utf-8") as fh:
        return fh.read(), LoopConfig.from_yaml(os.path.join(REPO, "config", "humanoid_loops.yaml"))


ROBOTS = {"humanoid": humanoid, "four_bar_knee": four_bar_knee, "mit_leg": mit_leg, "rotor_chain": rotor_chain,
          "belts_2x3": lambda: mechanism_chains("belt", 3, 2), "four_bars_2x3": lambda: mechanism_chains("four_bar", 3, 2)}


def rel(a, b) -> float:
    if np.size(b) == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


@pytest.fixture(scope="module", params=[(name, fb) for name in ROBOTS for fb in (False, True)],
                ids=lambda p: f"{p[0]}-{'floating' if p[1] else 'fixed'}")
def pair(request):
    name, floating = request.param
    return LoopPair(*ROBOTS[name](), floating_base=floating)


def states(pair: LoopPair, seed: int):
    """Random ``(y, ẏ, τ)``, the spanning ``(q, q̇)``, efforts on every tree joint and a wrench on
    the last link ``[fx, fy, fz, tx, ty, tz]`` in its frame."""
    rng = np.random.default_rng(seed)
    t = pair.tree
    for _ in range(N_STATES):
        y, dy, tau = pair.random_state(rng)
        q, v, _ = spanning_state(t, y, dy)
        yield y, dy, tau, q, v, rng.normal(size=t.nv), {t.model.body_names[-1]: rng.normal(size=6)}


def test_compiled_equals_reference(pair):
    """Every input/output option of CE-ABA and CE-RNEA, with and without external wrenches."""
    t = pair.tree
    d = ClusterDynamics(t)
    worst = 0.0
    for y, dy, tau, q, v, tau_tree, f in states(pair, 1):
        for args, kw in (((y, dy, tau, f), {}), ((q, v, tau_tree), dict(state="spanning")),
                         ((y, dy, tau_tree), dict(effort="spanning", output="spanning"))):
            worst = max(worst, rel(ce_aba(t, *args, **kw, data=d), ce_aba_reference(t, *args, **kw)))
        ddy = ce_aba_reference(t, y, dy, tau)
        for args, kw in (((y, dy, ddy, f), {}), ((q, v, tau_tree), dict(state="spanning", output="spanning"))):
            worst = max(worst, rel(ce_rnea(t, *args, **kw, data=d), ce_rnea_reference(t, *args, **kw)))
    assert worst <= 1e-12, worst


def explicit_constraint(pair: LoopPair, q, v):
    """``(G, g)`` with ``q̈ = G ÿ + g`` from the oracle's constraint rows ``K q̈ = k`` (written from
    the declarations with pinocchio's frames): identity on the independent coordinates."""
    t = pair.tree
    K, k = pair.constraint_rows(q, v)
    ind = t.y_v_idx
    dep = np.setdiff1d(np.arange(t.nv), ind)
    G, g = np.zeros((t.nv, t.nvy)), np.zeros(t.nv)
    G[ind, np.arange(t.nvy)] = 1.0
    if len(dep):
        G[dep] = -np.linalg.lstsq(K[:, dep], K[:, ind], rcond=None)[0]
        g[dep] = np.linalg.lstsq(K[:, dep], k, rcond=None)[0]
    assert np.max(np.abs(K @ G), initial=0.0) < 1e-9 and np.max(np.abs(K @ g - k), initial=0.0) < 1e-9
    return G, g


def test_compiled_matches_pinocchio(pair):
    """CE-ABA against the constrained dynamics on pinocchio's ``M`` and ``b`` projected on the
    oracle's constraints (``GᵀMG ÿ = Gᵀ(τ − b − M g)``, ``q̈ = G ÿ + g``) and, on a fixed base,
    pinocchio's own KKT ``forwardDynamics(q, v, τ, J, γ)`` (on these floating-base leg models it
    returns motions that violate the constraints, so there the projection is the oracle); CE-RNEA
    against ``Gᵀ`` pinocchio's ``rnea`` at that motion."""
    t = pair.tree
    d = ClusterDynamics(t)
    worst_fd = worst_id = 0.0
    for y, dy, tau, q, v, tau_tree, _ in states(pair, 2):
        M, b = pair.mass_and_bias(q, v)
        G, g = explicit_constraint(pair, q, v)
        ddy = np.linalg.solve(G.T @ M @ G, G.T @ (tau_tree - b - M @ g))
        ddq = G @ ddy + g
        ours = ce_aba(t, q, v, tau_tree, state="spanning", data=d)
        worst_fd = max(worst_fd, rel(ours, ddq))
        if not t.floating_base:
            worst_fd = max(worst_fd, rel(ours, pair.kkt_forward_dynamics(q, v, tau_tree)))
        tau_q = pair.v_ours(pin.rnea(pair.pm, pair.pd, pair.q_pin(q), pair.v_pin(v), pair.v_pin(ddq)))
        worst_id = max(worst_id, rel(ce_rnea(t, q, v, ddq, state="spanning", data=d), G.T @ tau_q))
    assert worst_fd <= 1e-9, worst_fd
    assert worst_id <= 1e-9, worst_id


def test_compiled_loop_closure_equals_reference(pair):
    """``q_k = γ_k(y_k)``, ``G_k``, ``g_k`` and the dependent ``q̇`` of every cluster."""
    t = pair.tree
    P = PackedClusterTree(t)
    worst = 0.0
    for y, dy, *_ in states(pair, 3):
        q1 = t.q_reference.copy()
        q1[t.y_q_idx] = y
        dq1 = np.zeros(t.nv)
        dq1[t.y_v_idx] = dy
        q2, dq2 = q1.copy(), dq1.copy()
        for c in t.clusters:
            cluster_position_reference(t, c.index, q1)
            assert cluster_position(P.ip, P.fp, P.w, c.index, q2, t.q_reference) == -1
            G1, g1 = cluster_constraint_reference(t, c.index, q1, dq1)
            G2, g2 = np.zeros(c.nv * c.ny), np.zeros(c.nv)
            assert cluster_constraint(P.ip, P.fp, P.w, c.index, q2, dq2, True, G2, 0, g2, 0) == -1
            worst = max(worst, rel(G2.reshape(G1.shape), G1), rel(g2, g1))
        worst = max(worst, rel(q2, q1), rel(dq2, dq1))
    assert worst <= 1e-12, worst


def test_model_bound_object_reuses_its_buffers():
    """:class:`ClusterDynamics` returns views of its buffers (no allocation), so do the public
    functions given one as ``data``; without, they return new arrays and keep nothing on the
    (frozen, shared) tree (issue 18, Model/Data)."""
    p = LoopPair(*four_bar_knee())
    before = dict(vars(p.tree))
    d = ClusterDynamics(p.tree)
    y, dy, tau = p.random_state(np.random.default_rng(4))
    a = d.aba(y, dy, tau)
    assert a is d.ddy and d.rnea(y, dy, a) is d.tau
    np.testing.assert_allclose(d.tau, tau, rtol=0, atol=1e-9 * max(1.0, np.max(np.abs(tau))))
    assert ce_aba(p.tree, y, dy, tau, data=d) is d.ddy and ce_rnea(p.tree, y, dy, a, data=d) is d.tau
    assert ce_aba(p.tree, y, dy, tau) is not ce_aba(p.tree, y, dy, tau)
    assert vars(p.tree).keys() == before.keys()
    with pytest.raises(ValueError, match="another cluster tree"):
        ce_aba(LoopPair(*four_bar_knee()).tree, y, dy, tau, data=d)


def test_bad_input_and_unreachable_loop_are_named():
    p = LoopPair(*four_bar_knee())
    t = p.tree
    with pytest.raises(ValueError, match=r"tau has shape \(2,\)"):
        ce_aba(t, np.zeros(t.ny), np.zeros(t.nvy), np.zeros(2))
    with pytest.raises(ValueError, match="dy has non-finite"):
        ce_rnea(t, np.zeros(t.ny), np.full(t.nvy, np.nan), np.zeros(t.nvy))
    with pytest.raises(ValueError, match="state must be one of"):
        ce_aba(t, np.zeros(t.ny), np.zeros(t.nvy), np.zeros(t.nvy), state="dependent")
    # the knee (the four-bar's rocker, ±1.2 rad) as the independent joint: 2 rad is out of reach
    xml, loops = four_bar_knee()
    cfg = LoopConfig.from_dict(loops)
    cfg = LoopConfig(bodies=cfg.bodies, loops=tuple(
        replace(lp, independent_joint="knee") if lp.name == "knee_linkage" else lp for lp in cfg.loops))
    rocker = LoopPair(xml, cfg).tree
    y = rocker.y_from_q(rocker.q_reference)
    y[rocker.independent_joint_names.index("knee")] = 0.5
    assert rel(ce_aba(rocker, y, np.ones(rocker.nvy), np.ones(rocker.nvy)),
               ce_aba_reference(rocker, y, np.ones(rocker.nvy), np.ones(rocker.nvy))) <= 1e-12
    y[rocker.independent_joint_names.index("knee")] = 2.0
    with pytest.raises(LoopClosureError, match="knee_linkage"):
        ce_aba_reference(rocker, y, np.zeros(rocker.nvy), np.zeros(rocker.nvy))
    with pytest.raises(LoopClosureError, match="knee_linkage"):
        ce_aba(rocker, y, np.zeros(rocker.nvy), np.zeros(rocker.nvy))


def test_explicit_loops_fall_back_to_the_reference():
    """An :class:`ExplicitLoop` (Python callables) has no compiled form: the public functions run the
    reference algorithms for that tree."""
    xml, loops = rotor_chain()
    base = LoopConfig.from_dict(loops)
    N = 9.0
    cam = ExplicitLoop("j2_cam", ("j2", "j2_rotor"), ("j2",), G=lambda q: np.array([[1.0], [N]]),
                       gamma=lambda y: np.array([y[0], N * y[0]]))
    cfg = LoopConfig(bodies=base.bodies, loops=tuple(lp for lp in base.loops if lp.name != "j2_drive") + (cam,))
    p = LoopPair(xml, base)
    from rbd_estimator.model.clusters import ClusterTree
    t = ClusterTree.build(p.tree.urdf_model, cfg)
    with pytest.raises(ValueError, match="j2_cam"):
        ClusterDynamics(t)
    rng = np.random.default_rng(5)
    y, dy, tau = rng.normal(size=t.ny), rng.normal(size=t.nvy), rng.normal(size=t.nvy)
    assert rel(ce_aba(t, y, dy, tau), ce_aba_reference(t, y, dy, tau)) == 0.0


def test_kernels_allocate_nothing():
    """With numba's allocation statistics on, 100 calls of the CE-ABA kernel, the CE-RNEA kernel and
    the LoopEstimator's state kernel (four-bar knee: closure, ``G``, ``g``) make no runtime
    allocation beyond what a do-nothing compiled function with the same arguments makes (numba's
    boxing of the array arguments)."""
    import nrt_stats
    aba, rnea, tick = map(int, nrt_stats.run("""
        import numpy as np
        from loop_mechanisms import four_bar_knee
        from loops_oracle import LoopPair
        from nrt_stats import extra_allocations
        from rbd_estimator.dynamics.ce_compiled import ce_aba_kernel, ce_rnea_kernel
        from rbd_estimator.dynamics.ce_data import ClusterDynamics
        from rbd_estimator.estimation import SensorConfig
        from rbd_estimator.estimation.loops import LoopEstimator
        from rbd_estimator.estimation.loop_state import loop_state
        from rbd_estimator.model.loops import LoopConfig
        xml, loops = four_bar_knee()
        p = LoopPair(xml, loops, floating_base=True)
        d = ClusterDynamics(p.tree)
        y, dy, tau = p.random_state(np.random.default_rng(0))
        P = d.packed
        fx = np.zeros(6 * p.tree.model.NB)
        est = LoopEstimator.from_urdf(xml, SensorConfig.from_dict(dict(floating_base=False)), LoopConfig.from_dict(loops))
        n = len(est.joint_names)
        est.estimate(np.full(n, 0.3), np.ones(n), np.ones(n))
        e = est._packed
        runs = [(ce_aba_kernel, (P.ip, P.fp, P.w, y, dy, tau, fx, 1, d.ddq, d.ddy)),
                (ce_rnea_kernel, (P.ip, P.fp, P.w, y, dy, tau, fx, 5, d.tau, d.tau_tree)),
                (loop_state, (e.ip, e.fp, e.w, est._nl, est._E))]
        out = []
        for f, args in runs:
            assert f(*args) == 0
            out.append(extra_allocations(f, args))
        print(*out)
    """)[-1].split())
    assert (aba, rnea, tick) == (0, 0, 0)
