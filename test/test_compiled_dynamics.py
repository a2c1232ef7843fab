"""The compiled dynamics behind the public names against the readable references, and their promises.

The public ``rnea``, ``aba``, ``crba``, ``minverse``, ``forward_dynamics_ltdl``, ``ltl``/``ltdl`` and
the four kernels are compiled (:mod:`rbd_estimator.dynamics.data`); :mod:`test_dynamics` holds them
to pinocchio. Here they are held to the readable references of
:mod:`rbd_estimator.dynamics.reference` (the second oracle): 1e-12 relative for what only
multiplies; for what inverts ``H``, ``max(1e-12, 10 κ(H) ε)`` (the convention of
:mod:`test_dynamics`: iCub's ``κ(H)`` reaches 1e12, Talos and G1 stay below 2e5 and so at 1e-12).
Then: the model-bound :class:`DynamicsData`, mimic joints in both layouts, errors that name the
offending argument or joint, and no allocation in any compiled kernel (numba's statistics).
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from oracle import rel_err, urdf_xml
from test_dynamics import CASES, IDS, inv_tol, pair, states, wrench_links

from rbd_estimator import DynamicsData, ModelWarning, RobotModel
from rbd_estimator import dynamics as fast
from rbd_estimator.dynamics import reference as ref

TOL = 1e-12


@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_compiled_equals_reference(robot, fb):
    m = pair(robot, fb).model
    d = DynamicsData(m)
    for q, v, a, tau in states(robot, fb):
        H = ref.crba(m, q)
        assert np.array_equal(fast.crba(m, q, data=d), d.H.T)
        assert rel_err(fast.crba(m, q, data=d), H) <= TOL
        assert rel_err(fast.rnea(m, q, v, a, data=d), ref.rnea(m, q, v, a)) <= TOL
        tol = inv_tol(H, TOL)
        assert rel_err(fast.aba(m, q, v, tau, data=d), ref.aba(m, q, v, tau)) <= tol
        assert rel_err(fast.forward_dynamics_ltdl(m, q, v, tau, data=d), ref.forward_dynamics_ltdl(m, q, v, tau)) <= tol
        Minv = fast.minverse(m, q, data=d)
        assert np.array_equal(Minv, Minv.T)
        assert rel_err(Minv, ref.minverse(m, q)) <= tol


@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_external_wrenches_equal_reference(robot, fb):
    m = pair(robot, fb).model
    d = DynamicsData(m)
    links = wrench_links(robot, fb)
    rng = np.random.default_rng(8)
    for q, v, a, tau in states(robot, fb)[:20]:
        f_ext = {name: rng.normal(scale=10.0, size=6) for name in links}
        assert rel_err(fast.rnea(m, q, v, a, f_ext, data=d), ref.rnea(m, q, v, a, f_ext)) <= TOL
        tol = inv_tol(ref.crba(m, q), TOL)
        for name in ("aba", "forward_dynamics_ltdl"):
            assert rel_err(getattr(fast, name)(m, q, v, tau, f_ext, data=d),
                           getattr(ref, name)(m, q, v, tau, f_ext)) <= tol
        # the data's wrench buffer is cleared for the next call without wrenches
        assert rel_err(fast.rnea(m, q, v, a, data=d), ref.rnea(m, q, v, a)) <= TOL


@pytest.mark.parametrize("robot,fb", CASES, ids=IDS)
def test_compiled_factorisations_and_kernels_equal_reference(robot, fb):
    m = pair(robot, fb).model
    lam = m.expanded_parents
    rng = np.random.default_rng(9)
    for q, *_ in states(robot, fb)[:10]:
        H = ref.crba(m, q)
        tol = inv_tol(H, TOL)                                      # factors are as sensitive as solves
        assert rel_err(fast.ltl(H, lam), ref.ltl(H, lam)) <= tol
        for got, want in zip(fast.ltdl(H, lam), ref.ltdl(H, lam)):
            assert rel_err(got, want) <= tol
        A, B = H.copy(), H.copy()
        assert fast.ltdl_inplace(A, lam) is A
        assert rel_err(A, ref.ltdl_inplace(B, lam)) <= tol
        L = ref.ltl(H, lam)
        for x in (rng.normal(size=m.nv), rng.normal(size=(m.nv, 3))):
            x0 = x.copy()
            for F, unit in ((L, False), (A, True)):
                for name in ("mul_L", "mul_Lt", "solve_L", "solve_Lt"):
                    got = getattr(fast, name)(F, lam, x, unit=unit)
                    assert got.shape == x.shape
                    assert rel_err(got, getattr(ref, name)(F, lam, x, unit=unit)) <= tol
            assert np.array_equal(x, x0)


def test_dynamics_data_returns_its_buffers_and_the_functions_return_copies():
    p = pair("talos", True)
    m = p.model
    (q, v, a, tau), (q2, v2, a2, _) = states("talos", True)[:2]
    d = DynamicsData(m)
    t1 = d.rnea(q, v, a)
    assert t1 is d.rnea(q2, v2, a2) is d.tau                       # pinocchio's data.tau
    assert rel_err(d.tau, ref.rnea(m, q2, v2, a2)) <= TOL
    assert fast.rnea(m, q, v, a, data=d) is d.tau and fast.aba(m, q, v, tau, data=d) is d.ddq
    t1 = fast.rnea(m, q, v, a)
    fast.rnea(m, q2, v2, a2)
    assert rel_err(t1, ref.rnea(m, q, v, a)) <= TOL                # a new array: not overwritten
    assert rel_err(d.crba(q), ref.crba(m, q)) <= TOL and d.crba(q) is d.H
    assert rel_err(d.aba(q, v, tau), ref.aba(m, q, v, tau)) <= TOL
    assert rel_err(d.minverse(q), ref.minverse(m, q)) <= TOL
    # inputs of any layout and dtype are converted: lists, float32, strided views
    assert rel_err(fast.rnea(m, list(q), v.astype(np.float32), np.repeat(a, 2)[::2]),
                   ref.rnea(m, q, v.astype(np.float32), a)) <= TOL


def test_the_model_holds_no_buffers_the_caller_owns_the_data():
    """Issue 18, Model/Data: the public functions store nothing on the (frozen, shared) model; the
    buffers are a :class:`DynamicsData` the caller makes and passes, one per thread, as
    pinocchio's ``Data``; another model's data is refused."""
    m = pair("talos", True).model
    other = pair("icub", True).model
    (q, v, a, tau), (q2, v2, a2, _) = states("talos", True)[:2]
    before = dict(vars(m))
    t = fast.rnea(m, q, v, a, {m.body_names[-1]: np.ones(6)})
    fast.aba(m, q, v, tau)
    fast.crba(m, q)
    fast.minverse(m, q)
    fast.forward_dynamics_ltdl(m, q, v, tau)
    assert vars(m).keys() == before.keys() and all(vars(m)[k] is before[k] for k in before)
    assert rel_err(t, ref.rnea(m, q, v, a, {m.body_names[-1]: np.ones(6)})) <= TOL
    d1, d2 = DynamicsData(m), DynamicsData(m)                      # e.g. two threads: independent buffers
    t1 = fast.rnea(m, q, v, a, data=d1)
    fast.rnea(m, q2, v2, a2, data=d2)
    assert t1 is d1.tau and rel_err(d1.tau, ref.rnea(m, q, v, a)) <= TOL
    assert rel_err(d2.tau, ref.rnea(m, q2, v2, a2)) <= TOL
    with pytest.raises(ValueError, match="DynamicsData of model"):
        fast.rnea(other, np.zeros(other.nq), np.zeros(other.nv), np.zeros(other.nv), data=d1)


def test_mimic_layouts_equal_reference():
    xml = urdf_xml("talos_data/robots/talos_full_v2.urdf")
    m = RobotModel.from_urdf(xml, floating_base=True)
    assert m.mimic_joints
    from rbd_estimator.model.mimic import mimic_map
    mm = mimic_map(m)
    rng = np.random.default_rng(4)
    for _ in range(10):
        q = m.random_configuration(rng)
        v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
        assert rel_err(fast.rnea(m, q, v, a), ref.rnea(m, q, v, a)) <= TOL      # tree layout
        y = mm.y(q)
        dy, ddy, tau = (rng.normal(size=mm.nv) for _ in range(3))         # independent layout
        assert rel_err(fast.rnea(m, y, dy, ddy), ref.rnea(m, y, dy, ddy)) <= TOL
        Hy = ref.crba(m, y)
        assert Hy.shape == (mm.nv, mm.nv) and rel_err(fast.crba(m, y), Hy) <= TOL
        tol = inv_tol(Hy, TOL)
        assert rel_err(fast.minverse(m, y), ref.minverse(m, y)) <= tol
        for name in ("aba", "forward_dynamics_ltdl"):
            assert rel_err(getattr(fast, name)(m, y, dy, tau), getattr(ref, name)(m, y, dy, tau)) <= tol


def test_bad_input_names_the_argument_or_joint():
    m = pair("g1", False).model
    q, v, a, _ = states("g1", False)[0]
    with pytest.raises(ValueError, match=r"dq has shape \(3,\).*expects \(29,\)"):
        fast.rnea(m, q, v[:3], a)
    with pytest.raises(ValueError, match="external wrench on 'left_rubber_hand'"):
        fast.rnea(m, q, v, a, {"left_rubber_hand": [1.0, 2.0]})
    xml = """<robot name="r"><link name="base"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"
        ixy="0" ixz="0" iyz="0"/></inertial></link><link name="tip"/>
        <joint name="spin" type="revolute"><parent link="base"/><child link="tip"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""
    with pytest.warns(ModelWarning, match="joint 'spin'"):
        massless = RobotModel.from_urdf(xml)
    with pytest.raises(np.linalg.LinAlgError, match="joint 'spin'"):
        fast.aba(massless, [0.1], [0.0], [1.0])
    with pytest.raises(np.linalg.LinAlgError, match="joint 'spin'"):
        fast.minverse(massless, [0.1])
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        fast.forward_dynamics_ltdl(massless, [0.1], [0.0], [1.0])


KERNELS_SCRIPT = """
import numpy as np
from nrt_stats import extra_allocations
from oracle import Pair, urdf_xml
from rbd_estimator.dynamics import DynamicsData, tree_jit as T, minverse_jit as MJ, ltl_jit as LJ
from rbd_estimator.estimation import forward as FW, hybrid as HY

p = Pair(urdf_xml("icub"), True)
m = p.model
d = DynamicsData(m)
q, v, a = p.random_state(np.random.default_rng(0))
lam = d.lam
H = d.crba(q).copy()
x = np.ones((m.nv, 1))
fd = FW.SparseForwardDynamics(m)
fw_args = (*fd._tick_arguments(), q, v, a, fd._no_ddq)
hd = HY.HybridDynamics(m, np.arange(m.nv) % 2 == 0)
hd_args = (*hd._tick_arguments(), q, v, a, a.copy())
calls = {
    "rnea": (T.rnea_kernel, (d.MI, d.MF, d.W, q, v, a, d.fx, d.a0, d.tau)),
    "aba": (T.aba_kernel, (d.MI, d.MF, d.W, q, v, a, d.fx, d.a0, d.ddq)),
    "crba": (T.crba_kernel, (d.MI, d.MF, d.W, q, d.H)),
    "minverse": (MJ.minverse_kernel, (d.MI, d.MF, d.W, q, d.F, d.P, d.zero, d.Minv)),
    "forward_dynamics_ltdl": (T.forward_dynamics_ltdl_kernel,
                              (d.MI, d.MF, d.W, q, v, a, d.fx, d.a0, lam, d.A, d.zero, d.ddq)),
    "ltl": (LJ.ltl_kernel, (H.copy(), lam)),
    "ltdl": (LJ.ltdl_kernel, (H.copy(), lam)),
    "mul_L": (LJ.mul_L_kernel, (H, lam, x, False, x)),
    "mul_Lt": (LJ.mul_Lt_kernel, (H, lam, x, False, x.copy())),
    "solve_L": (LJ.solve_L_kernel, (H, lam, x, True)),
    "solve_Lt": (LJ.solve_Lt_kernel, (H, lam, x, True)),
    "SparseForwardDynamics": (HY._hybrid_tick, fw_args),
    "HybridDynamics": (HY._hybrid_tick, hd_args),
}

for name, (kernel, args) in calls.items():
    if name in ("ltl", "ltdl"):      # factorise the same matrix each time (a failed pivot returns early)
        A0 = args[0].copy()
        def run(A, lam, f=kernel, A0=A0):
            A[:] = A0
            return f(A, lam)
        print(name, extra_allocations(run, args, 50))
    else:
        print(name, extra_allocations(kernel, args, 50))
"""


def test_compiled_kernels_allocate_nothing_but_argument_boxing():
    """With numba's allocation statistics on, each kernel makes exactly as many runtime allocations
    as a do-nothing compiled function given the same arguments (numba's boxing of the arguments)."""
    import nrt_stats
    rows = [line.split() for line in nrt_stats.run(KERNELS_SCRIPT)]
    assert len(rows) == 13, rows
    for name, extra in rows:
        assert int(extra) == 0, (name, extra)


def test_inertias_without_the_rigid_body_form_take_the_general_congruence():
    """A spatial inertia that no rigid body has (lower-right block not ``m 1``) is moved to world
    coordinates by the general 6 × 6 congruence: CRBA and M⁻¹ still equal the references."""
    from rbd_estimator.dynamics.tree_jit import RIGID
    m = RobotModel.from_urdf(urdf_xml("g1"), floating_base=True)
    rng = np.random.default_rng(3)
    for i in (3, 10):
        P = rng.normal(scale=0.05, size=(6, 6))
        m.inertias[i] += P @ P.T                                    # still SPD, no longer rigid
    d = DynamicsData(m)
    assert list(np.flatnonzero(d.MI[:, RIGID] == 0)) == [3, 10]
    for _ in range(5):
        q = m.random_configuration(rng)
        H = ref.crba(m, q)
        assert rel_err(d.crba(q), H) <= TOL
        assert rel_err(d.minverse(q), ref.minverse(m, q)) <= inv_tol(H, TOL)


def test_every_loadable_urdf_compiled_equals_reference():
    """The robots of :mod:`test_real_urdfs` (every URDF of example-robot-data that pinocchio loads:
    prismatic and continuous joints, kept fixed joints, single-body models, mimic joints), floating
    base, 3 random states each: compiled and reference agree (inverting ones where H is invertible)."""
    import warnings

    from test_real_urdfs import LOADABLE, _read
    rng = np.random.default_rng(12)
    failures = []
    for rel in LOADABLE:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = RobotModel.from_urdf(_read(rel), floating_base=True)
        for _ in range(3):
            q = m.random_configuration(rng)
            v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
            H = ref.crba(m, q)
            errs = {"rnea": rel_err(fast.rnea(m, q, v, a), ref.rnea(m, q, v, a)),
                    "crba": rel_err(fast.crba(m, q), H)}
            tol = {"rnea": TOL, "crba": TOL}
            if np.linalg.cond(H) < 1e10:
                for name in ("aba", "forward_dynamics_ltdl"):
                    errs[name] = rel_err(getattr(fast, name)(m, q, v, a), getattr(ref, name)(m, q, v, a))
                    tol[name] = inv_tol(H, TOL)
                errs["minverse"], tol["minverse"] = rel_err(fast.minverse(m, q), ref.minverse(m, q)), inv_tol(H, TOL)
            failures += [f"{rel} {k}: {e:.1e}" for k, e in errs.items() if not e <= tol[k]]
    assert len(LOADABLE) > 20 and not failures, failures


def test_spanning_tree_with_appended_bodies_keeps_every_public_function():
    """A cluster tree's spanning model (the shipped humanoid's rotor bodies appended after the URDF's:
    its subtrees are not numbered depth-first) still gets rnea, aba, crba and M⁻¹ equal to the
    references (M⁻¹ through the readable algorithm there)."""
    from rbd_estimator.model.clusters import ClusterTree
    from rbd_estimator.model.loops import LoopConfig
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "urdf", "humanoid.urdf"), encoding="utf-8") as fh:
        urdf = RobotModel.from_urdf(fh.read(), floating_base=True)
    tree = ClusterTree.build(urdf, LoopConfig.from_yaml(os.path.join(root, "config", "humanoid_loops.yaml")))
    m = tree.model
    d = DynamicsData(m)
    assert not d.depth_first
    rng = np.random.default_rng(4)
    q = m.neutral_configuration()
    q[7:] = rng.uniform(-1, 1, m.nq - 7)
    v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
    assert rel_err(d.rnea(q, v, a), ref.rnea(m, q, v, a)) <= 1e-12
    assert rel_err(d.crba(q), ref.crba(m, q)) <= 1e-12
    assert rel_err(d.minverse(q), ref.minverse(m, q)) <= 1e-12
    assert rel_err(d.aba(q, v, a), ref.aba(m, q, v, a)) <= 1e-9
