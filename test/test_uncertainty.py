"""The estimate with its uncertainty (issue 20): the maximum a posteriori estimate, its posterior
covariance, joint accelerations as a measurement, and the prior that keeps every pose finite.

Oracles: pinocchio ground truth (``groundtruth.GroundTruth``: rnea with random contact wrenches) with
Gaussian noise drawn from each sensor's configured standard deviation; the covariance is checked by
its normalised estimation error squared (NEES) over Monte-Carlo draws, and the structured solver's
covariance against the generic path's (the whole KKT system, a different computation).
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from groundtruth import GroundTruth

from rbd_estimator import SensorConfig, estimator_for, robots
from rbd_estimator.errors import ConditioningWarning, ConfigError
from rbd_estimator.estimation.measurements import ImuSample
from rbd_estimator.estimation.nominal import nominal_inputs
from rbd_estimator.estimation.synthetic import consistent_base_acceleration, measure
from rbd_estimator.sensors import JointTorque

ROBOTS = ["icub", "talos", "go2", "g1"]
DRAWS, STATES = 1000, 50                       # Monte-Carlo draws, over this many random states
ACC_STDDEV = 0.5                               # rad/s², the joint accelerations' noise when measured


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _setup(name, acc_stddev=0.0, solver="auto"):
    xml = _read(robots.urdf_file(name))
    params = SensorConfig.from_yaml(robots.params_file(name)).to_parameters()
    params["joint_acceleration_stddev"] = acc_stddev
    cfg = SensorConfig.from_parameters(params)
    est = estimator_for(xml, cfg, solver=solver)
    return xml, cfg, est


def _noisy(inputs: dict, cfg: SensorConfig, rng, acc_stddev: float) -> dict:
    """The readings with Gaussian noise of each sensor's configured standard deviation (the IMU's
    orientation and gyro, kinematic inputs, and the joint positions and velocities stay exact)."""
    out = dict(inputs)
    imu = cfg.imu
    if imu is not None:
        s = inputs["imu"]
        lin = s.linear_acceleration + rng.normal(0.0, imu.linear_acceleration_stddev, 3)
        ang = (None if s.angular_acceleration is None
               else s.angular_acceleration + rng.normal(0.0, imu.angular_acceleration_stddev, 3))
        out["imu"] = ImuSample(s.orientation, s.angular_velocity, lin, ang)
    if cfg.ft_sensors:
        sd = np.array([[f.force_stddev] * 3 + [f.torque_stddev] * 3 for f in cfg.ft_sensors])
        out["ft"] = inputs["ft"] + rng.normal(size=sd.shape) * sd
    jts = cfg.of_kind(JointTorque)
    if jts:
        out["joint_torques"] = inputs["joint_torques"] + rng.normal(size=len(jts)) * [s.stddev for s in jts]
    if acc_stddev:
        out["ddq"] = inputs["ddq"] + rng.normal(0.0, acc_stddev, inputs["ddq"].shape)
    return out


def _noisy_samples(xml, est, cfg: SensorConfig, acc_stddev: float, seed: int, n: int):
    """``n`` ground-truth states of ``est`` (pinocchio), each with its readings made noisy (:func:`_noisy`)."""
    gt = GroundTruth(xml, est)
    rng = np.random.default_rng(seed)
    for _ in range(n):
        inputs, _ = gt.sample(rng)
        yield _noisy(inputs, cfg, rng, acc_stddev)


def _nees(name, acc_stddev, seed=3):
    """Mean NEES over the draws: per joint torque ``e²/σ²`` (expected 1) and per contact wrench
    ``eᵀ C⁺ e`` (expected the rank of ``C``, the contact's free components)."""
    xml, cfg, est = _setup(name, acc_stddev)
    gt = GroundTruth(xml, est)
    rng = np.random.default_rng(seed)
    samples = [gt.sample(rng) for _ in range(STATES)]
    tau_n, wrench_n, dims = [], [], []
    for k in range(DRAWS):
        inputs, truth = samples[k % STATES]
        r = est.estimate(**_noisy(inputs, cfg, rng, acc_stddev))
        tau_n.append(np.mean((r.tau - truth["tau"]) ** 2 / r.tau_variance))
        for c in range(len(est.contact_names)):
            C = r.contact_covariance[c]
            e = r.contact_wrenches[c] - truth["wrenches"][c]
            wrench_n.append(e @ np.linalg.pinv(C, rcond=1e-12, hermitian=True) @ e)
            dims.append(np.linalg.matrix_rank(C, tol=1e-12 * np.abs(C).max(), hermitian=True))
    return float(np.mean(tau_n)), float(np.mean(wrench_n) / np.mean(dims)), est


@pytest.mark.parametrize("acc_stddev", [0.0, ACC_STDDEV], ids=["exact-accelerations", "measured-accelerations"])
@pytest.mark.parametrize("name", ROBOTS)
def test_covariance_is_calibrated_nees_within_15_percent(name, acc_stddev):
    """Issue 20: with the configured noise, over 1000 Monte-Carlo ticks, the NEES of the torques
    and of the contact wrenches is within ±15 % of its expected value (normalised to 1 here)."""
    tau_nees, wrench_nees, est = _nees(name, acc_stddev)
    print(f"\n{name} ({est.report.solver} tick, joint accelerations "
          f"{'measured, σ = %g rad/s²' % acc_stddev if acc_stddev else 'exact'}): "
          f"NEES / expected: torques {tau_nees:.3f}, contact wrenches {wrench_nees:.3f} over {DRAWS} draws")
    assert abs(tau_nees - 1.0) <= 0.15, tau_nees
    assert abs(wrench_nees - 1.0) <= 0.15, wrench_nees


@pytest.mark.parametrize("acc_stddev", [0.0, ACC_STDDEV], ids=["exact-accelerations", "measured-accelerations"])
@pytest.mark.parametrize("name", ROBOTS + ["humanoid", "arm"])
def test_structured_covariance_equals_the_generic_paths(name, acc_stddev):
    """The tree reduction's estimate, residual and covariance (``t_o N⁻¹ t_oᵀ`` from the Cholesky
    factor; with measured accelerations in ``x = (h, δ)``) equal the generic path's (the whole KKT
    system with the q̈ unknowns; one substitution per soft row for the covariance). The arm: a fixed
    base, whose measured accelerations the tree reduction covers too (no base equation)."""
    xml, cfg, fast = _setup(name, acc_stddev)
    ref = estimator_for(xml, cfg, solver="generic")
    assert fast.report.solver == "structured" and ref.report.solver == "generic"
    assert fast._structured.n_qdd == (fast.model.n_joints if acc_stddev else 0)
    for inputs in _noisy_samples(xml, fast, cfg, acc_stddev, seed=8, n=5):
        a = fast.estimate(**inputs)
        tv, cc, tau = a.tau_variance.copy(), a.contact_covariance.copy(), a.tau.copy()
        res = None if a.residual is None else a.residual.copy()      # None: no redundant row (the arm)
        b = ref.estimate(**inputs)
        assert (res is None) == (b.residual is None)
        if res is not None:
            np.testing.assert_allclose(res, b.residual, rtol=0, atol=1e-8 * max(1.0, np.abs(b.residual).max()))
        np.testing.assert_allclose(tau, b.tau, rtol=0, atol=1e-8 * max(1.0, np.abs(b.tau).max()))
        np.testing.assert_allclose(tv, b.tau_variance, rtol=1e-9, atol=1e-12 * b.tau_variance.max())
        np.testing.assert_allclose(cc, b.contact_covariance, rtol=1e-9, atol=1e-12 * np.abs(b.contact_covariance).max())
        assert np.all(tv > 0.0)


def test_measured_accelerations_noise_free_equal_the_truth():
    """Joint accelerations as a measurement, noise free: the estimate is today's (≤ 1e-9 of the
    pinocchio ground truth) — the prior and the acceleration rows move nothing that is determined."""
    for solver in ("structured", "generic"):
        xml, cfg, est = _setup("talos", ACC_STDDEV, solver)
        assert est.report.solver == solver and est.layout.measured_acceleration
        gt = GroundTruth(xml, est)
        rng = np.random.default_rng(2)
        for _ in range(5):
            inputs, truth = gt.sample(rng)
            r = est.estimate(**inputs)
            scale = max(1.0, np.abs(truth["tau"]).max())
            assert np.abs(r.tau - truth["tau"]).max() <= 1e-9 * scale
            wscale = max(1.0, np.abs(truth["wrenches"]).max())
            assert np.abs(r.contact_wrenches - truth["wrenches"]).max() <= 1e-9 * wscale


def test_acceleration_noise_raises_the_torque_variance():
    """The torque variance with measured accelerations exceeds the exact-acceleration one by about
    ``σ_a²`` times the squared inertia the joint moves (at least for the joints the sensors do not
    pin down): the acceleration noise is in the covariance, not ignored."""
    xml, _, exact = _setup("talos", 0.0)
    _, _, noisy = _setup("talos", ACC_STDDEV)
    inputs, _ = GroundTruth(xml, exact).sample(np.random.default_rng(1))
    v0 = exact.estimate(**inputs).tau_variance.copy()
    v1 = noisy.estimate(**inputs).tau_variance.copy()
    assert np.all(v1 >= v0 * (1 - 1e-9)) and np.any(v1 > 1.01 * v0)


# ---------------------------------------------------------------------------- no singular stance
def _standing(est, wrenches):
    """Readings of the robot standing with all joints at zero, at rest, under ``wrenches``."""
    m = est.model
    q = np.zeros(7 + m.n_joints)
    q[6] = 1.0
    v, a = np.zeros(6 + m.n_joints), np.zeros(6 + m.n_joints)
    a[:6] = consistent_base_acceleration(est, q, v, a, wrenches)
    z = np.zeros(m.n_joints)
    return measure(est, q, v, a, wrenches), (z, z, z)


def test_loadcell_humanoid_standing_straight_is_finite_with_the_yaw_split_as_variance():
    """Issue 20: config/loadcell_humanoid.yaml, the humanoid standing straight (parallel soles):
    how the yaw torque splits between the feet is undetermined (only the sum is). The estimate is
    finite, right where the sensors determine it, splits the yaw torque evenly (the prior's
    minimum-norm choice) and shows the undetermined direction as the prior's variance."""
    xml = _read(robots.urdf_file("humanoid"))
    cfg = SensorConfig.from_yaml(os.path.join(robots.share_dir(), "config", "loadcell_humanoid.yaml"))
    est = estimator_for(xml, cfg)
    weight = sum(I[5, 5] for I in est.model.inertias) * 9.81
    W = np.zeros((2, 6))
    W[:, 2] = weight / 2
    W[0, 3], W[1, 4], W[0, 5], W[1, 5] = 1.5, -2.0, 3.0, 1.0
    readings, (q, dq, ddq) = _standing(est, W)
    r = est.estimate(q, dq, ddq, imu=readings.imu, load_cells=readings.load_cells)
    assert np.all(np.isfinite(r.contact_wrenches)) and np.all(np.isfinite(r.tau))
    np.testing.assert_allclose(r.contact_wrenches[:, :5], W[:, :5], atol=1e-6)
    np.testing.assert_allclose(r.contact_wrenches[:, 5], [2.0, 2.0], atol=1e-6)   # the sum, split evenly
    sd = np.sqrt(np.diagonal(r.contact_covariance, axis1=1, axis2=2))
    prior = cfg.contact_prior_stddev * weight
    assert np.all(sd[:, 5] > 0.5 * prior)                  # tz: the prior's, the sensors add nothing
    assert np.all(sd[:, 2:5] < 10.0)                       # fz, tx, ty: determined by the cells (σ = 1 N)


# ---------------------------------------------------------------------------- conditioning watched
SHIPPED_CONFIGS = ["humanoid", "loadcell_humanoid", "fixed_arm", "icub", "talos", "go2", "g1"]


def _shipped(name: str, **overrides):
    path = os.path.join(robots.share_dir(), "config", f"{name}.yaml")
    robot = {"loadcell_humanoid": "humanoid", "fixed_arm": "arm"}.get(name, name)
    params = SensorConfig.from_yaml(path).to_parameters()
    params.update(overrides)
    return _read(robots.urdf_file(robot)), SensorConfig.from_parameters(params)


def _neutral_estimates(est):
    """The estimate at the neutral stance (joints at zero, at rest, IMU level) of every contact
    subset of ``est``: ``[(subset label, Estimate)]``."""
    sw = est.switching()
    subsets = [(None, est)] if sw is None else [(m, e) for m, e in enumerate(sw.subsets) if e is not None]
    out = []
    for mask, e in subsets:
        y = np.zeros(e.measurements.size)
        if e.config.imu is not None:
            y[e.measurements.slice("imu").start + 3] = 1.0
        z = np.zeros(e.model.n_joints)
        r = e.estimate(z, z, z, y=y)
        out.append(("+".join(e.contact_names), r))
    return out


@pytest.mark.parametrize("name", SHIPPED_CONFIGS)
def test_every_shipped_configuration_is_finite_at_its_neutral_stance_in_every_contact_subset(name):
    """Issue 20: each shipped parameter file (and, for the legged robots, the same sensors with
    commanded contacts: every subset of the feet) estimates finitely at the neutral stance, with a
    finite, positive covariance; planning names the components it leaves to the prior."""
    variants = [{}]
    xml, cfg = _shipped(name)
    if cfg.floating_base and len(cfg.contacts) > 1:
        variants.append({f"contact.{c.name}.mode": "commanded" for c in cfg.contacts})
    for extra in variants:
        xml, cfg = _shipped(name, **extra)
        est = estimator_for(xml, cfg)
        for label, r in _neutral_estimates(est):
            assert np.all(np.isfinite(r.tau)) and np.all(np.isfinite(r.contact_wrenches)), (name, label)
            assert np.all(np.isfinite(r.tau_variance)) and np.all(r.tau_variance >= 0.0), (name, label)
            assert np.all(np.isfinite(r.contact_covariance)), (name, label)
        weak = est.weak_directions()
        assert not any("singular" in w for ws in weak.values() for w in ws), weak
        if name == "loadcell_humanoid" and not extra:
            assert weak == {"l_foot+r_foot": ("l_foot tz", "r_foot tz")}


@pytest.mark.parametrize("name", SHIPPED_CONFIGS)
def test_the_generic_tick_at_the_nominal_stance_keeps_its_planned_pivots(name):
    """Issue 20: the static pivots planned at a random state vanished at the joints-at-zero stance
    (every shipped robot), where the generic tick fell back to SuperLU (allocating). Planning now
    checks the nominal stance: there, and at random states, the generic tick keeps its pivots; with a
    ``nominal_pose`` too (the knees bent). Not where the sensors leave a direction to the prior (the
    loadcell humanoid's parallel soles: pivots planned there are poor elsewhere, so the random
    state's stay and that stance takes the fallback, as the self-check of the structured path requires)."""
    poses = [{}]
    _, cfg = _shipped(name)
    knees = [j for j in ("l_knee", "r_knee", "FL_calf_joint", "RR_calf_joint") if j in _robot_joints(name)]
    if knees:
        poses.append(dict(nominal_pose_joints=knees, **{f"nominal_pose.{j}": -0.6 for j in knees}))
    for pose in poses:
        xml, cfg = _shipped(name, **pose)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConditioningWarning)
            est = estimator_for(xml, cfg, solver="generic")
        e = getattr(est, "estimator", est)          # a loop estimator's tree estimator
        q, dq, ddq, y = nominal_inputs(e)
        assert np.array_equal(q, np.array([dict(cfg.nominal_pose).get(j, 0.0) for j in e.joint_names]))
        r = e.estimate(q, dq, ddq, y=y)
        assert np.all(np.isfinite(r.tau)) and np.all(np.isfinite(r.contact_wrenches)), (name, pose)
        if e.weak:
            assert name == "loadcell_humanoid" and e.weak == ("l_foot tz", "r_foot tz"), (name, pose, e.weak)
            continue
        rng = np.random.default_rng(5)
        for _ in range(5):
            e.estimate(rng.uniform(-np.pi, np.pi, q.size), rng.normal(size=q.size), rng.normal(size=q.size), y=y)
        assert e.pivot_fallbacks == 0, (name, pose)


def _robot_joints(name: str) -> list:
    xml, cfg = _shipped(name)
    return list(estimator_for(xml, cfg).joint_names)


def test_nominal_pose_sets_the_stance_planning_checks():
    """Issue 20 item 3: ``nominal_pose`` gives the checked stance's joints by name (the others at
    zero). The loadcell humanoid leaves the feet's yaw-torque split to the prior while the soles are
    parallel (at zero, and with a hip yawed: still parallel), and not once an ankle tilts one sole
    (the two normals then differ, so the cells' moments see the split). A position for a joint not
    listed, or a listed name that is no joint of the robot, is an error naming it."""
    xml, _ = _shipped("loadcell_humanoid")

    def weak(**pose):
        _, cfg = _shipped("loadcell_humanoid", nominal_pose_joints=list(pose),
                          **{f"nominal_pose.{j}": v for j, v in pose.items()})
        assert cfg.nominal_pose == tuple(pose.items())
        assert SensorConfig.from_parameters(cfg.to_parameters()).nominal_pose == cfg.nominal_pose
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConditioningWarning)
            return estimator_for(xml, cfg).weak_directions()
    split = {"l_foot+r_foot": ("l_foot tz", "r_foot tz")}
    assert weak() == split
    assert weak(l_hip_yaw=0.3) == split
    assert weak(l_ankle_roll=0.2) == {} and weak(r_ankle_pitch=-0.2, l_knee=0.4) == {}
    with pytest.warns(ConditioningWarning, match="l_hip_yaw = 0.3, other joints at zero.*r_foot tz"):
        estimator_for(xml, _shipped("loadcell_humanoid", nominal_pose_joints=["l_hip_yaw"],
                                    **{"nominal_pose.l_hip_yaw": 0.3})[1])
    with pytest.raises(ConfigError, match="'l_ankle_rol'.*did you mean 'l_ankle_roll'"):
        estimator_for(xml, _shipped("loadcell_humanoid", nominal_pose_joints=["l_ankle_rol"])[1])
    with pytest.raises(ConfigError, match="'nominal_pose.l_knee'.*not listed in 'nominal_pose_joints'"):
        _shipped("loadcell_humanoid", nominal_pose_joints=["l_knee_x"], **{"nominal_pose.l_knee": 0.1})
    with pytest.raises(ConfigError, match="'nominal_pose.l_knee' must be a number"):
        _shipped("loadcell_humanoid", nominal_pose_joints=["l_knee"], **{"nominal_pose.l_knee": "bent"})


def test_flat_ground_mixed_contacts_are_finite_with_the_undetermined_split_as_variance():
    """Issue 20: a set that plans as well-posed (left foot a full wrench under three load cells, right
    foot a point force, the IMU) degenerates on flat ground: how the horizontal forces split between
    the feet is undetermined (only their sum is). Finite estimates; the split shows as the prior's
    variance, the vertical forces and the tilting torques the cells measure stay determined; the
    tick's condition estimate says it (below the node's WARN threshold)."""
    xml = _read(robots.urdf_file("humanoid"))
    cfg = SensorConfig.from_dict(dict(
        floating_base=True, imu=dict(frame="imu_link", use_angular_acceleration=True), contacts=["l_foot", "r_foot"],
        contact=dict(l_foot=dict(frame="l_sole", type="full_wrench"), r_foot=dict(frame="r_sole", type="point_force")),
        load_cells=["lc"], load_cell=dict(lc=dict(contact="l_foot", positions_x=[0.1, 0.1, -0.1],
                                                  positions_y=[0.045, -0.045, 0.0], stddev=1.0))))
    est = estimator_for(xml, cfg)
    weight = sum(I[5, 5] for I in est.model.inertias) * 9.81
    W = np.zeros((2, 6))
    W[:, 2] = weight / 2
    W[0, 3], W[0, 0], W[1, 0] = 1.0, 5.0, -5.0
    readings, (q, dq, ddq) = _standing(est, W)
    r = est.estimate(q, dq, ddq, imu=readings.imu, load_cells=readings.load_cells)
    assert np.all(np.isfinite(r.contact_wrenches)) and np.all(np.isfinite(r.tau))
    sd = np.sqrt(np.diagonal(r.contact_covariance, axis1=1, axis2=2))
    prior = cfg.contact_prior_stddev * weight
    assert np.all(sd[:, :2] > 0.5 * prior)                             # fx, fy of both feet: the split
    assert np.all(sd[0, 2:5] < 10.0) and sd[1, 2] < 10.0               # fz, tx, ty: measured
    np.testing.assert_allclose(r.contact_wrenches[:, 2], W[:, 2], atol=1e-6)
    np.testing.assert_allclose(r.contact_wrenches[:, 0].sum(), W[:, 0].sum(), atol=1e-6)   # the sum is determined
    assert r.condition < 1e-10


def test_the_session_reports_the_ill_conditioned_stance_in_diagnostics():
    """The loadcell humanoid standing straight through the runtime the node runs (messages fed to a
    :class:`~rbd_estimator.replay.Replayer`): estimates are published, and ``/diagnostics`` carries
    the tick's condition estimate and reports WARN below ``condition_warn_below``."""
    from groundtruth import Serializer
    from rbd_estimator.replay import Replayer
    from rbd_estimator.runtime.params import NODE_KEYS
    xml = _read(robots.urdf_file("humanoid"))
    path = os.path.join(robots.share_dir(), "config", "loadcell_humanoid.yaml")
    params = SensorConfig.from_yaml(path).to_parameters()
    params.update(oracle_every_n=0)
    cfg = SensorConfig.from_parameters(params, node_keys=NODE_KEYS)
    rep = Replayer(xml, cfg, collect=True)
    est = rep.session.estimator
    weight = sum(I[5, 5] for I in est.model.inertias) * 9.81
    W = np.zeros((2, 6))
    W[:, 2] = weight / 2
    readings, (q, dq, _) = _standing(est, W)
    s = Serializer()
    cells = s.T["std_msgs/msg/Float64MultiArray"]
    layout = s.T["std_msgs/msg/MultiArrayLayout"](dim=[], data_offset=0)
    t0 = 1_700_000_000_000_000_000
    for k in range(5):
        t = t0 + k * 1_000_000
        rep.feed("/imu", s.imu(t, readings.imu), t - 100_000)
        for name, f in zip(("l_foot", "r_foot"), readings.load_cells):
            raw = bytes(s.ts.serialize_cdr(cells(layout=layout, data=np.asarray(f, float)), "std_msgs/msg/Float64MultiArray"))
            rep.feed(f"/load_cells/{name}", raw, t - 100_000)
        rep.feed("/joint_states", s.joint_state(t, est.joint_names, q, dq), t)
    assert len(rep.results()["stamps"]) == 4                     # the first joint state starts the filter
    level, message, values = rep.session.diagnostics(t0 + 5_000_000)
    assert values["condition_last"] < values["condition_warn_below"] and level >= 1
    assert "ill-conditioned" in message


@pytest.mark.parametrize("solver", ["structured", "generic"])
def test_the_estimated_joint_accelerations_are_what_the_estimate_satisfies(solver):
    """Measured (noisy) q̈: ``Estimate.joint_acceleration`` is the q̈ the estimated torques, contact
    wrenches and base acceleration satisfy — pinocchio's RNEA at it reproduces τ with a zero base
    wrench (the node's cross-check uses it), while at the noisy input q̈ it does not."""
    from rbd_estimator.runtime.oracle import PinocchioOracle
    xml, cfg, est = _setup("talos", ACC_STDDEV, solver)
    assert est.report.solver == solver and est.layout.measured_acceleration
    oracle = PinocchioOracle(xml, cfg.floating_base, est.joint_names, est.contact_frames, cfg.imu.frame)
    for noisy in _noisy_samples(xml, est, cfg, ACC_STDDEV, seed=5, n=3):
        r = est.estimate(**noisy)
        ddq = r.joint_acceleration(noisy["ddq"])
        scale = max(1.0, np.abs(r.tau).max(), np.abs(r.contact_wrenches).max())
        joint, base = oracle.check(noisy["q"], noisy["dq"], ddq, noisy["imu"], r.base_acceleration,
                                   r.contact_wrenches, r.tau)
        assert joint <= 1e-9 * scale and base <= 1e-9 * scale, (joint, base)
        joint_in, _ = oracle.check(noisy["q"], noisy["dq"], noisy["ddq"], noisy["imu"], r.base_acceleration,
                                   r.contact_wrenches, r.tau)
        assert joint_in > 1e-3 * scale, joint_in
        assert 0.0 < np.abs(ddq - noisy["ddq"]).max() < 10 * ACC_STDDEV


@pytest.mark.parametrize("name", ["icub", "talos", "g1", "humanoid", "go2"])
def test_measured_accelerations_by_limbs_equal_the_dense_least_squares(name):
    """With measured accelerations the structured tick solves the least squares by limbs (P4–P5,
    ``structured/limbs.py``: the flag ``WLB`` set) on the robots with at least 32 unknowns, and gives
    the dense path's estimate, variances and contact covariances (the same estimator with the plan's
    blocks removed, ``NLB = 0``: the dense Cholesky of the reduced normal equations) to rounding. Go2
    (24 unknowns, where the dense path is faster) plans no blocks."""
    from rbd_estimator.estimation.structured.layout import H_NLB, H_SW, H_WLB
    xml, cfg, est = _setup(name, ACC_STDDEV)
    _, _, dense = _setup(name, ACC_STDDEV)
    ip, S = est.kernel()
    ip_d, S_d = dense.kernel()
    assert (ip[H_NLB] > 0) == (name != "go2")
    ip_d[H_NLB] = 0
    for inputs in _noisy_samples(xml, est, cfg, ACC_STDDEV, seed=11, n=5):
        a = est.estimate(**inputs)
        tau, tv, cc = a.tau.copy(), a.tau_variance.copy(), a.contact_covariance.copy()
        assert S[ip[H_SW] + ip[H_WLB]] == float(name != "go2")
        b = dense.estimate(**inputs)
        assert S_d[ip_d[H_SW] + ip_d[H_WLB]] == 0.0
        np.testing.assert_allclose(tau, b.tau, rtol=0, atol=1e-9 * max(1.0, np.abs(b.tau).max()))
        np.testing.assert_allclose(tv, b.tau_variance, rtol=1e-9, atol=1e-12 * b.tau_variance.max())
        np.testing.assert_allclose(cc, b.contact_covariance, rtol=1e-9, atol=1e-12 * np.abs(b.contact_covariance).max())


@pytest.mark.parametrize("case", ["left leg unsensed", "left leg barely sensed"])
def test_limbs_fall_back_to_the_dense_path_where_a_block_leaves_its_contact_to_the_prior(case):
    """A limb block whose contact its own sensors do not determine (iCub without its left leg's
    force-torque sensors: the foot's wrench is known through the base's equation alone) would carry the
    contact prior's variance into differences of large terms (4–13 % wrong variances, measured): no
    blocks are planned then; and where they barely determine it (the left leg's sensors 10⁵ × noisier)
    the tick finds the contact pivots below 1e6 × the prior's information and solves the dense normal
    equations. Either way the structured estimate and covariance equal the generic path's."""
    from rbd_estimator.estimation.structured.layout import H_NLB, H_SW, H_WLB
    xml = _read(robots.urdf_file("icub"))
    params = SensorConfig.from_yaml(robots.params_file("icub")).to_parameters()
    params["joint_acceleration_stddev"] = ACC_STDDEV
    left = ("l_leg_ft_sensor", "l_foot_ft_sensor")
    if case == "left leg unsensed":
        params["ft_sensors"] = [s for s in params["ft_sensors"] if s not in left]
        params = {k: v for k, v in params.items() if not k.startswith(tuple(f"ft.{s}" for s in left))}
    else:
        for s in left:
            params[f"ft.{s}.force_stddev"], params[f"ft.{s}.torque_stddev"] = 1e5, 5e3
    cfg = SensorConfig.from_parameters(params)
    fast, ref = estimator_for(xml, cfg), estimator_for(xml, cfg, solver="generic")
    ip, S = fast.kernel()
    assert (ip[H_NLB] > 0) == (case == "left leg barely sensed")
    for inputs in _noisy_samples(xml, fast, cfg, ACC_STDDEV, seed=12, n=3):
        a = fast.estimate(**inputs)
        assert S[ip[H_SW] + ip[H_WLB]] == 0.0
        tau, tv, cc = a.tau.copy(), a.tau_variance.copy(), a.contact_covariance.copy()
        b = ref.estimate(**inputs)
        np.testing.assert_allclose(tau, b.tau, rtol=0, atol=1e-8 * max(1.0, np.abs(b.tau).max()))
        np.testing.assert_allclose(tv, b.tau_variance, rtol=1e-9, atol=1e-12 * b.tau_variance.max())
        np.testing.assert_allclose(cc, b.contact_covariance, rtol=1e-9, atol=1e-12 * np.abs(b.contact_covariance).max())
