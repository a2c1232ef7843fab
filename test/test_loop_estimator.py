"""The estimator on robots with actuation loops (LoopEstimator) against a pinocchio ground truth.

The truth is built on the spanning tree *with* the rotors (the URDF text plus the rotor links and
joints, ``loops_oracle.with_extra_bodies``): the independent state ``(y, ẏ, ÿ)`` is mapped to the
spanning state with the oracle's ``G`` — the null-space basis of the oracle's constraint rows
``K`` (written from the declarations, ``LoopPair.constraint_rows``), identity on the independent
joints — and the actuator efforts are ``τ_y = Gᵀ τ_q`` with ``τ_q`` from pinocchio's ``rnea``
(``K G = 0``, so any loop-closure force drops out). Contact wrenches, the consistent base
acceleration, IMU and force-torque readings come from ``groundtruth.GroundTruth`` on that model.
"""
from __future__ import annotations

import os

import numpy as np
import pinocchio as pin
import pytest
from groundtruth import GroundTruth
from loops_oracle import LoopPair, with_extra_bodies

from rbd_estimator import ConfigError
from rbd_estimator.dynamics.ce_rnea import ce_rnea
from rbd_estimator.estimation import SensorConfig, estimator_for
from rbd_estimator.estimation.loops import LoopEstimator
from rbd_estimator.model.loop_closure import spanning_state
from rbd_estimator.model.loops import ExplicitLoop, FourBar, LoopConfig

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FT = ["l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor",
      "l_arm_ft_sensor", "r_arm_ft_sensor"]
N_STATES = 20


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def humanoid_config(**over):
    """The sensor part of config/humanoid.yaml: IMU on imu_link, six FT sensors, two full-wrench feet."""
    params = dict(floating_base=True, imu=dict(frame="imu_link"), ft_sensors=FT,
                  contacts=["l_foot", "r_foot"],
                  contact=dict(l_foot=dict(frame="l_sole", type="full_wrench"),
                               r_foot=dict(frame="r_sole", type="full_wrench")))
    params.update(over)
    return SensorConfig.from_dict(params)


XML = _read(os.path.join(REPO, "urdf", "humanoid.urdf"))
LOOPS = LoopConfig.from_yaml(os.path.join(REPO, "config", "humanoid_loops.yaml"))


def oracle_G(pair: LoopPair, rows, cols) -> np.ndarray:
    """``G`` from the oracle's constraint rows ``K`` (declarations only): identity on the independent
    joints ``cols``, ``G_dep = −K_dep⁻¹ K_ind`` (so ``K G = 0``); rows in the order of the joint
    names ``rows``."""
    m = pair.tree.model
    K, _ = pair.constraint_rows(pair.tree.q_reference, np.zeros(m.nv))
    col = {n: int(m.v_idx[m.body_joint_names.index(n)]) for n in m.joint_names}
    ind = [col[n] for n in cols]
    dep = [col[n] for n in rows if col[n] not in ind]
    Kd, Ki = K[:, dep], K[:, ind]
    assert Kd.shape[0] == Kd.shape[1] and np.linalg.matrix_rank(Kd) == len(dep)
    G = np.zeros((m.nv, len(ind)))
    G[ind, np.arange(len(ind))] = 1.0
    G[dep] = -np.linalg.solve(Kd, Ki)
    return G[[col[n] for n in rows]]


class LoopTruth(GroundTruth):
    """:class:`GroundTruth` on the spanning tree with rotors; states satisfy the loops."""

    def __init__(self, xml, loops, est: LoopEstimator):
        super().__init__(with_extra_bodies(xml, loops.bodies), est.estimator)
        self.indep = est.joint_names
        self.G = oracle_G(LoopPair(xml, loops, floating_base=True), self.model.joint_names, self.indep)

    def sample(self, rng, wrench_scale=50.0):
        ny = len(self.indep)
        y, dy, ddy = rng.uniform(-1.2, 1.2, ny), rng.normal(size=ny), rng.normal(size=ny)
        qj, vj, aj = self.G @ y, self.G @ dy, self.G @ ddy
        quat = rng.normal(size=4)
        q_base = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
        v_base = rng.normal(size=6)
        q, v, a = self._to_pin(self.pm, q_base, v_base, np.zeros(6), qj, vj, aj)
        wrenches = self._random_wrenches(rng, wrench_scale)
        a_base = self._consistent_base_acceleration(q, v, a, wrenches)
        a[:6] = a_base
        tau_full = pin.rnea(self.pm, self.pd, q, v, a, self._fext(self.pm, wrenches))
        assert np.max(np.abs(tau_full[:6])) < 1e-8 * max(1.0, np.max(np.abs(tau_full)))
        tau_q = np.array([tau_full[self.pm.idx_vs[self.pm.getJointId(n)]] for n in self.model.joint_names])
        inputs = dict(q=y, dq=dy, ddq=ddy, imu=self._imu(q, v, a),
                      ft=self._ft(q_base, v_base, a_base, qj, vj, aj, wrenches))
        truth = dict(tau=self.G.T @ tau_q, tau_q=tau_q, wrenches=np.array(wrenches).reshape(-1, 6),
                     base=(q_base, v_base, a_base))
        return inputs, truth


@pytest.fixture(scope="module")
def humanoid():
    est = LoopEstimator.from_urdf(XML, humanoid_config(), LOOPS)
    return est, LoopTruth(XML, LOOPS, est)


def test_rotor_humanoid_with_ft_sensors_matches_truth(humanoid):
    est, gt = humanoid
    assert est.joint_names == est.tree.independent_joint_names == est.tree.urdf_model.joint_names
    assert est.report.redundant and len(est.tree_joint_names) == len(est.joint_names) + len(LOOPS.bodies)
    assert np.array_equal(est.G, gt.G) or np.max(np.abs(est.G - gt.G)) < 1e-14
    rng = np.random.default_rng(51)
    worst_tau = worst_w = 0.0
    for _ in range(N_STATES):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        assert r.tau.shape == (len(est.joint_names),)
        worst_tau = max(worst_tau, np.max(np.abs(r.tau - truth["tau"])))
        worst_w = max(worst_w, np.max(np.abs(r.contact_wrenches - truth["wrenches"])))
        assert np.max(np.abs(r.contact(est.contact_names[0]) - truth["wrenches"][0])) <= 1e-8
    assert worst_tau <= 1e-8, f"actuator efforts off by {worst_tau:.3g} N·m"
    assert worst_w <= 1e-8, f"contact wrenches off by {worst_w:.3g}"


def test_actuator_efforts_equal_constraint_embedding_rnea(humanoid):
    """The same efforts from Chignoli's CE-RNEA on the cluster tree with the estimated wrenches."""
    est, gt = humanoid
    rng = np.random.default_rng(52)
    for _ in range(3):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        q_base, v_base, a_base = truth["base"]
        y = np.concatenate([q_base, inputs["q"]])
        dy, ddy = np.concatenate([v_base, inputs["dq"]]), np.concatenate([a_base, inputs["ddq"]])
        f = {fr: w.copy() for fr, w in zip(est.contact_frames, r.contact_wrenches)}
        tau = ce_rnea(est.tree, y, dy, ddy, f)
        assert np.max(np.abs(tau[:6])) <= 1e-7
        assert np.max(np.abs(tau[6:] - r.tau)) <= 1e-8


def test_tree_estimator_without_rotors_gets_actuator_efforts_wrong(humanoid):
    """Same data, URDF alone (no rotors): contact wrenches still right (FT sensors), efforts not."""
    est, gt = humanoid
    plain = estimator_for(XML, humanoid_config())
    assert plain.joint_names == est.joint_names
    rng = np.random.default_rng(53)
    worst = 0.0
    for _ in range(5):
        inputs, truth = gt.sample(rng)
        worst = max(worst, np.max(np.abs(plain.estimate(**inputs).tau - truth["tau"])))
    assert worst > 0.1, f"the rotors' inertia should show (worst difference {worst:.3g} N·m)"


def test_ft_sensor_inside_a_cluster_is_refused():
    """A knee rotor carried by the hip-pitch link: its cluster takes in l_thigh, the child of the
    l_leg force-torque joint, so the loop closes across the sensor."""
    bodies = tuple(b if b.name != "l_knee_rotor" else type(b)(
        b.name, "l_hip_pitch_link", b.axis, b.mass, np.array([0.0, 0.05, -0.1]), b.rpy, b.com, b.inertia)
        for b in LOOPS.bodies)
    loops = LoopConfig(bodies=bodies, loops=LOOPS.loops)
    with pytest.raises(ConfigError, match=r"l_leg_ft_sensor.*l_knee_drive|l_knee.*l_leg_ft_sensor") as exc:
        LoopEstimator.from_urdf(XML, humanoid_config(), loops)
    assert "l_leg_ft_sensor" in str(exc.value)
    # without that sensor the same loops are accepted
    est = LoopEstimator.from_urdf(XML, humanoid_config(ft_sensors=[s for s in FT if s != "l_leg_ft_sensor"]), loops)
    assert est.joint_names == est.tree.urdf_model.joint_names


def test_joint_torque_sensor_on_a_loop_joint_is_refused():
    with pytest.raises(ConfigError, match="l_knee"):
        LoopEstimator.from_urdf(XML, humanoid_config(joint_torque_sensors=["l_knee"]), LOOPS)


def test_four_bar_knee_matches_pinocchio_with_state_dependent_G():
    """A four-bar knee (crank geared to a rotor) plus rotors, fixed base: the four-bar's cluster is
    closed and its G(q), g(q, q̇) evaluated every tick. Truth: the spanning state closed by our
    Newton (checked with pinocchio's frames), G and g from the oracle's constraint rows (pinocchio
    frame Jacobians and classical accelerations), τ_q from pinocchio's rnea."""
    xml = _read(os.path.join(REPO, "test", "data", "loops", "four_bar_knee.urdf"))
    loops = LoopConfig.from_yaml(os.path.join(REPO, "test", "data", "loops", "four_bar_knee.yaml"))
    assert any(isinstance(lp, FourBar) for lp in loops.loops)
    est = LoopEstimator.from_urdf(xml, SensorConfig.from_dict(dict(floating_base=False)), loops)
    assert est.state_dependent == ("knee_linkage",)
    pair = LoopPair(xml, loops)
    m = pair.tree.model
    col = {n: int(m.v_idx[m.body_joint_names.index(n)]) for n in m.joint_names}
    rows = [col[n] for n in est.tree_joint_names]
    ind = [col[n] for n in est.joint_names]
    dep = [c for c in rows if c not in ind]
    rng = np.random.default_rng(55)
    n = len(est.joint_names)
    for _ in range(N_STATES):
        y, dy, ddy = rng.uniform(-1.2, 1.2, n), rng.normal(size=n), rng.normal(size=n)
        q, _, _ = spanning_state(pair.tree, y)
        assert pair.closure_gap(q) < 1e-10
        v = np.zeros(m.nv)
        v[ind] = dy
        K, k = pair.constraint_rows(q, v)
        Kd_pinv = np.linalg.pinv(K[:, dep])
        v[dep] = -Kd_pinv @ K[:, ind] @ dy
        K, k = pair.constraint_rows(q, v)                            # k needs the full q̇
        assert np.max(np.abs(K @ v)) < 1e-10
        G = np.zeros((m.nv, n))
        G[ind, np.arange(n)] = 1.0
        G[dep] = -Kd_pinv @ K[:, ind]
        a = G @ ddy
        a[dep] += Kd_pinv @ k
        assert np.max(np.abs(K @ a - k)) < 1e-9
        tau_q = pair.v_ours(pin.rnea(pair.pm, pair.pd, pair.q_pin(q), pair.v_pin(v), pair.v_pin(a)))
        r = est.estimate(y, dy, ddy)
        assert np.max(np.abs(r.tau - G[rows].T @ tau_q[rows])) <= 1e-8
        assert np.max(np.abs(r.tau - ce_rnea(pair.tree, y, dy, ddy))) <= 1e-8


def test_explicit_loop_cam_and_refusal_without_gamma():
    """A nonlinear explicit constraint (a cam, q_r = N q + c sin q) is evaluated every tick and
    agrees with CE-RNEA; the same loop without gamma is refused (y would not give q)."""
    xml = _read(os.path.join(REPO, "test", "data", "loops", "rotor_chain.urdf"))
    base = LoopConfig.from_yaml(os.path.join(REPO, "test", "data", "loops", "rotor_chain.yaml"))
    N, c = 9.0, 0.3
    kw = dict(G=lambda q: np.array([[1.0], [N + c * np.cos(q[0])]]),
              g=lambda q, dq: np.array([0.0, -c * np.sin(q[0]) * dq[0] ** 2]))
    cfg = SensorConfig.from_dict(dict(floating_base=False))
    rest = tuple(lp for lp in base.loops if lp.name != "j2_drive")
    cam = ExplicitLoop("j2_cam", ("j2", "j2_rotor"), ("j2",),
                       gamma=lambda y: np.array([y[0], N * y[0] + c * np.sin(y[0])]), **kw)
    est = LoopEstimator.from_urdf(xml, cfg, LoopConfig(bodies=base.bodies, loops=rest + (cam,)))
    assert est.state_dependent == ("j2_cam",)
    rng = np.random.default_rng(56)
    n = len(est.joint_names)
    for _ in range(5):
        y, dy, ddy = rng.uniform(-1.2, 1.2, n), rng.normal(size=n), rng.normal(size=n)
        assert np.max(np.abs(est.estimate(y, dy, ddy).tau - ce_rnea(est.tree, y, dy, ddy))) <= 1e-9
    nogamma = ExplicitLoop("j2_cam", ("j2", "j2_rotor"), ("j2",), **kw)
    with pytest.raises(ConfigError, match="j2_cam.*gamma"):
        LoopEstimator.from_urdf(xml, cfg, LoopConfig(bodies=base.bodies, loops=rest + (nogamma,)))


def test_bad_input_shape_names_the_input(humanoid):
    est, _ = humanoid
    n = len(est.joint_names)
    with pytest.raises(ValueError, match="dq"):
        est.estimate(np.zeros(n), np.zeros(n + 1), np.zeros(n))
    q = np.zeros(n)
    q[3] = np.nan
    with pytest.raises(ValueError, match=r"q\[3\] \(%s\) is not finite" % est.joint_names[3]):
        est.estimate(q, np.zeros(n), np.zeros(n))


def test_fixed_base_belt_transmission_matches_pinocchio():
    """The MIT leg (hip rotors, a nested knee/ankle belt: a lower-triangular ratio matrix), fixed
    base and no sensors: the estimate is inverse dynamics, τ_y = Gᵀ τ_q with pinocchio's rnea on
    the spanning tree with rotors."""
    xml = _read(os.path.join(REPO, "test", "data", "loops", "mit_leg.urdf"))
    loops = LoopConfig.from_yaml(os.path.join(REPO, "test", "data", "loops", "mit_leg.yaml"))
    est = LoopEstimator.from_urdf(xml, SensorConfig.from_dict(dict(floating_base=False)), loops)
    pair = LoopPair(xml, loops)
    G = oracle_G(pair, est.tree_joint_names, est.joint_names)
    assert np.max(np.abs(est.G - G)) < 1e-14 and np.count_nonzero(np.tril(G[len(est.joint_names):], -1))
    m = pair.tree.model
    col = [int(m.v_idx[m.body_joint_names.index(n)]) for n in est.tree_joint_names]
    rng = np.random.default_rng(54)
    n = len(est.joint_names)
    for _ in range(N_STATES):
        y, dy, ddy = rng.uniform(-1.2, 1.2, n), rng.normal(size=n), rng.normal(size=n)
        q, v, a = np.zeros(m.nq), np.zeros(m.nv), np.zeros(m.nv)
        q[col], v[col], a[col] = G @ y, G @ dy, G @ ddy
        tau_q = pair.v_ours(pin.rnea(pair.pm, pair.pd, pair.q_pin(q), pair.v_pin(v), pair.v_pin(a)))[col]
        assert np.max(np.abs(est.estimate(y, dy, ddy).tau - G.T @ tau_q)) <= 1e-8


def test_loops_from_the_sensor_configuration():
    """``loops=None``: the loops come from the node parameters (``loops_file``, as the node reads them)."""
    cfg = humanoid_config(loops_file="humanoid_loops.yaml")
    est = LoopEstimator.from_urdf(XML, cfg, base_dir=os.path.join(REPO, "config"))
    assert len(est.tree_joint_names) == len(est.joint_names) + len(LOOPS.bodies) and est.state_dependent == ()


def test_compiled_four_bar_tick_equals_the_python_closure():
    """The compiled tick (closure, ``G``, ``g``, ``[q q̇ q̈]`` in one kernel) gives the estimate of the
    Python path (:mod:`rbd_estimator.model.loop_closure`) over a trajectory with jumps, the warm
    start carried from tick to tick on both; a non-finite input is named on both."""
    xml = _read(os.path.join(REPO, "test", "data", "loops", "four_bar_knee.urdf"))
    loops = LoopConfig.from_yaml(os.path.join(REPO, "test", "data", "loops", "four_bar_knee.yaml"))
    cfg = SensorConfig.from_dict(dict(floating_base=False))
    fast = LoopEstimator.from_urdf(xml, cfg, loops)
    slow = LoopEstimator.from_urdf(xml, cfg, loops)
    slow._packed = None
    assert fast._packed is not None
    rng = np.random.default_rng(57)
    n = len(fast.joint_names)
    y = np.zeros(n)
    for k in range(60):
        y = y + rng.normal(scale=0.05, size=n) if k % 10 else rng.uniform(-3, 3, n)   # small steps, and jumps
        dy, ddy = rng.normal(size=n), rng.normal(size=n)
        a, b = fast.estimate(y, dy, ddy), slow.estimate(y, dy, ddy)
        assert np.max(np.abs(a.tau - b.tau)) <= 1e-9 * max(1.0, np.max(np.abs(b.tau)))
        assert np.max(np.abs(fast.G - slow.G)) <= 1e-12 and np.max(np.abs(fast._Q - slow._Q)) <= 1e-10
    for est in (fast, slow):
        with pytest.raises(ValueError, match=r"ddq\[1\] \(%s\) is not finite" % est.joint_names[1]):
            est.estimate(y, dy, np.array([0.0, np.inf] + [0.0] * (n - 2)))


def test_four_bar_ticks_do_not_grow_python_memory():
    """The compiled tick keeps no Python object per estimate (buffers are reused)."""
    import tracemalloc
    xml = _read(os.path.join(REPO, "test", "data", "loops", "four_bar_knee.urdf"))
    loops = LoopConfig.from_yaml(os.path.join(REPO, "test", "data", "loops", "four_bar_knee.yaml"))
    est = LoopEstimator.from_urdf(xml, SensorConfig.from_dict(dict(floating_base=False)), loops)
    n = len(est.joint_names)
    y, dy, ddy = np.full(n, 0.4), np.ones(n), np.ones(n)
    for _ in range(200):
        est.estimate(y, dy, ddy)
    tracemalloc.start()
    try:
        est.estimate(y, dy, ddy)
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3000):
            est.estimate(y, dy, ddy)
        growth = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert growth < 2048, f"{growth} bytes retained over 3000 estimates"
