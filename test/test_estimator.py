"""The estimator (Nori's sparse formulation with sensors) against an independent ground truth.

Ground truth comes from pinocchio (test/groundtruth.py): random floating-base states including a
base linear velocity the estimator never sees, contact wrenches that satisfy the floating-base
equations, torques from pinocchio's rnea, force-torque readings from pinocchio's internal joint
wrenches, IMU readings from pinocchio's frame kinematics.
"""
from __future__ import annotations

import numpy as np
import pytest
from groundtruth import GroundTruth
from oracle import Pair, rel_err, urdf_xml

from rbd_estimator import ConfigError, IllPosedError, RobotModel
from rbd_estimator.dynamics import aba, rnea
from rbd_estimator.estimation import Estimator, ImuSample, SensorConfig, estimator_for
from rbd_estimator.estimation.forward import SparseForwardDynamics

ICUB_FT = ["l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor",
           "l_arm_ft_sensor", "r_arm_ft_sensor"]
FEET = dict(contacts=["l_foot", "r_foot"],
            contact=dict(l_foot=dict(frame="l_sole"), r_foot=dict(frame="r_sole")))
FOUR_CELLS = dict(positions_x=[0.05, 0.05, -0.03, -0.03], positions_y=[0.02, -0.02, 0.02, -0.02])


def icub_config(**over):
    params = dict(floating_base=True, imu=dict(frame="root_link"), ft_sensors=ICUB_FT, **FEET)
    params.update(over)
    return SensorConfig.from_dict(params)


def talos_config():
    ft = {"l_ankle_ft": "leg_left_sole_fix_joint", "r_ankle_ft": "leg_right_sole_fix_joint",
          "l_wrist_ft": "wrist_left_ft_joint", "r_wrist_ft": "wrist_right_ft_joint"}
    return SensorConfig.from_dict(dict(
        floating_base=True, imu=dict(frame="imu_link", use_angular_acceleration=True),
        ft_sensors=list(ft), ft={k: dict(joint=j) for k, j in ft.items()},
        contacts=["l_foot", "r_foot"],
        contact=dict(l_foot=dict(frame="left_sole_link"), r_foot=dict(frame="right_sole_link"))))


@pytest.fixture(scope="module")
def icub():
    est = estimator_for(urdf_xml("icub"), icub_config())
    return est, GroundTruth(urdf_xml("icub"), est)


def _check_against_truth(est, gt, n, seed, tol=1e-8):
    rng = np.random.default_rng(seed)
    worst_tau = worst_w = 0.0
    for _ in range(n):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        worst_tau = max(worst_tau, np.max(np.abs(r.tau - truth["tau"])))
        worst_w = max(worst_w, np.max(np.abs(r.contact_wrenches - truth["wrenches"])))
    assert worst_tau <= tol, f"joint torques off by {worst_tau:.3g} N·m"
    assert worst_w <= tol, f"contact wrenches off by {worst_w:.3g}"


def test_icub_six_ft_sensors_imu_two_feet_matches_truth(icub):
    est, gt = icub
    assert est.report.redundant          # six FT sensors over-determine the two feet
    _check_against_truth(est, gt, 50, seed=1)


def test_talos_declared_ft_sensors_matches_truth():
    est = estimator_for(urdf_xml("talos"), talos_config())
    _check_against_truth(est, GroundTruth(urdf_xml("talos"), est), 50, seed=2)


def test_imu_on_a_link_other_than_the_base():
    cfg = icub_config(imu=dict(frame="imu_frame"))           # iCub's IMU sits on the head
    est = estimator_for(urdf_xml("icub"), cfg)
    assert est.model.frame("imu_frame").body != 0
    _check_against_truth(est, GroundTruth(urdf_xml("icub"), est), 10, seed=3)


def test_internal_wrench_at_a_kept_joint_equals_the_ft_reading(icub):
    est, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(4))
    r = est.estimate(**inputs)
    for k, name in enumerate(est.ft_names):
        joint = est.model.ft_sensor(name).joint          # child frame, child_to_parent in the URDF
        np.testing.assert_allclose(r.joint_wrenches[est.kept_joints.index(joint)], -inputs["ft"][k], atol=1e-8)


def test_fixed_base_inverse_dynamics_with_known_wrenches_is_triangular_and_equals_rnea():
    """Nori §IV-B–D: with q̈ and every external wrench known the plan finds a triangular ordering
    (Property 1): zero fill-in; the estimate is the RNEA's torque."""
    P = Pair(urdf_xml("talos"), floating_base=False)
    links = ["gripper_left_base_link", "left_sole_link", "head_2_link"]      # one of them merged
    est = Estimator(P.model, SensorConfig.from_dict(dict(
        floating_base=False, external_wrenches=["a", "b", "c"],
        external_wrench=dict(a=dict(frame=links[0]), b=dict(frame=links[1]), c=dict(frame=links[2])))))
    assert est.report.fill_in == 0 and not est.report.redundant
    assert est.report.largest_block == 1                    # triangular after permutation
    rng = np.random.default_rng(5)
    for _ in range(20):
        q, v, a = P.random_state(rng)
        w = rng.normal(size=(3, 6)) * 20
        r = est.estimate(q, v, a, external_wrenches=w)
        assert rel_err(r.tau, rnea(P.model, q, v, a, dict(zip(links, w)))) < 1e-12
    with pytest.raises(ValueError, match="external_wrenches"):
        est.estimate(q, v, a)


@pytest.mark.parametrize("robot,fb", [("talos", False), ("talos", True), ("g1", True), ("icub", True)])
def test_sparse_lu_forward_dynamics_equals_aba(robot, fb):
    P = Pair(urdf_xml(robot), floating_base=fb)
    fd = SparseForwardDynamics(P.model)
    assert fd.lu.blocks.size > 2 and np.diff(fd.lu.blocks).max() > 1   # not triangularisable (Nori §V-C)
    rng = np.random.default_rng(6)
    for _ in range(20):
        q, v, tau = P.random_state(rng)
        wrench = {P.model.body_names[-1]: rng.normal(size=6)}
        ref = aba(P.model, q, v, tau, wrench)
        tol = 1e-9 if robot != "icub" else 1e-6       # iCub's JSIM reaches cond 1e12 (point-mass head)
        assert rel_err(fd.compute(q, v, tau, wrench), ref) < tol
        if fb:                                         # a quaternion off unit length is normalised, as by aba
            q[3:7] *= 1.5
            assert rel_err(fd.compute(q, v, tau, wrench), aba(P.model, q, v, tau, wrench)) < tol


# ---------------------------------------------------------------------------- Nori §VI
def _loadcell_config(contact_type):
    return SensorConfig.from_dict(dict(
        floating_base=True, imu=dict(frame="root_link"),
        contacts=["l_foot", "r_foot"],
        contact=dict(l_foot=dict(frame="l_sole", type=contact_type), r_foot=dict(frame="r_sole", type=contact_type)),
        load_cells=["l_cells", "r_cells"],
        load_cell=dict(l_cells=dict(contact="l_foot", **FOUR_CELLS), r_cells=dict(contact="r_foot", **FOUR_CELLS))))


def test_double_support_with_load_cells_only_is_ill_posed():
    """Nori Remark 5: four load cells per foot cannot determine two full contact wrenches."""
    with pytest.raises(IllPosedError) as err:
        estimator_for(urdf_xml("icub"), _loadcell_config("full_wrench"))
    msg = str(err.value)
    assert "l_foot" in msg and "r_foot" in msg and "undetermined" in msg
    assert "3 directions" in msg            # fx, fy, tz of both feet minus the base's 3 equations


def test_slippery_feet_with_load_cells_are_solvable_and_correct():
    """Nori eq. 23: with tangential forces zero the problem becomes solvable."""
    est = estimator_for(urdf_xml("icub"), _loadcell_config("slippery"))
    _check_against_truth(est, GroundTruth(urdf_xml("icub"), est), 20, seed=7)


# ---------------------------------------------------------------------------- weighting
def test_weighted_estimate_beats_unweighted_with_noisy_sensors():
    """Documented noise: foot FT sensors 4 N / 0.4 N·m, leg and arm FT 0.05 N / 0.005 N·m, IMU
    0.01 m/s². The weighted estimate uses these; the unweighted one uses 1 for every sensor."""
    sig = {"l_foot_ft_sensor": (4.0, 0.4), "r_foot_ft_sensor": (4.0, 0.4)}
    ft_cfg = {n: dict(force_stddev=sig.get(n, (0.05, 0.005))[0], torque_stddev=sig.get(n, (0.05, 0.005))[1])
              for n in ICUB_FT}
    weighted = estimator_for(urdf_xml("icub"), icub_config(
        ft=ft_cfg, imu=dict(frame="root_link", linear_acceleration_stddev=0.01)))
    flat = {n: dict(force_stddev=1.0, torque_stddev=1.0) for n in ICUB_FT}
    unweighted = estimator_for(urdf_xml("icub"), icub_config(
        ft=flat, imu=dict(frame="root_link", linear_acceleration_stddev=1.0)))
    gt = GroundTruth(urdf_xml("icub"), weighted)
    rng = np.random.default_rng(8)
    err_w, err_u = [], []
    for _ in range(200):
        inputs, truth = gt.sample(rng)
        noise = np.array([np.r_[rng.normal(0, s[0], 3), rng.normal(0, s[1], 3)]
                          for s in (sig.get(n, (0.05, 0.005)) for n in ICUB_FT)])
        imu = inputs["imu"]
        inputs["imu"] = imu._replace(linear_acceleration=imu.linear_acceleration + rng.normal(0, 0.01, 3))
        inputs["ft"] = inputs["ft"] + noise
        err_w.append(np.r_[weighted.estimate(**inputs).tau - truth["tau"]])
        err_u.append(np.r_[unweighted.estimate(**inputs).tau - truth["tau"]])
    rms_w, rms_u = np.sqrt(np.mean(np.square(err_w))), np.sqrt(np.mean(np.square(err_u)))
    assert rms_w < 0.8 * rms_u, (rms_w, rms_u)


# ---------------------------------------------------------------------------- bad input
def test_non_finite_input_raises_value_error_naming_it(icub):
    est, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(9))
    before = est.estimate(**inputs).tau.copy()
    bad = dict(inputs, dq=inputs["dq"].copy())
    bad["dq"][3] = np.nan
    with pytest.raises(ValueError, match=r"dq\[3\] \(" + est.joint_names[3]):
        est.estimate(**bad)
    ft = inputs["ft"].copy()
    ft[2, 4] = np.inf
    with pytest.raises(ValueError, match="ft"):
        est.estimate(**dict(inputs, ft=ft))
    with pytest.raises(ValueError, match="imu.linear_acceleration"):
        est.estimate(**dict(inputs, imu=inputs["imu"]._replace(linear_acceleration=[0.0, 1.0])))
    with pytest.raises(ValueError, match="q: expected"):
        est.estimate(**dict(inputs, q=inputs["q"][:-1]))
    np.testing.assert_array_equal(est.estimate(**inputs).tau, before)


def test_ill_posed_configuration_never_yields_an_estimator():
    no_ft = icub_config(ft_sensors=[])
    with pytest.raises(IllPosedError, match="contact wrenches of l_foot and r_foot"):
        estimator_for(urdf_xml("icub"), no_ft)
    with pytest.raises(ConfigError, match="imu.frame"):
        estimator_for(urdf_xml("icub"), icub_config(imu=dict(frame="no_such_link")))
    with pytest.raises(ConfigError, match="IMU"):
        estimator_for(urdf_xml("icub"), icub_config(imu={}) if False else SensorConfig.from_dict(
            dict(floating_base=True, ft_sensors=ICUB_FT, **FEET)))


def test_a_misspelt_frame_is_refused_naming_the_parameter_and_the_closest_frame():
    with pytest.raises(ConfigError, match=r"parameter 'imu.frame': 'root_lnk' is not .* \(did you mean 'root_link'\?\)"):
        estimator_for(urdf_xml("icub"), icub_config(imu=dict(frame="root_lnk")))
    feet = dict(contacts=["l_foot", "r_foot"], contact=dict(l_foot=dict(frame="l_sole"), r_foot=dict(frame="rsole")))
    with pytest.raises(ConfigError, match=r"parameter 'contact.r_foot.frame': 'rsole' .* \(did you mean 'r_sole'\?\)"):
        estimator_for(urdf_xml("icub"), icub_config(**feet))
    with pytest.raises(ConfigError) as refused:                   # nothing close: no guess
        estimator_for(urdf_xml("icub"), icub_config(imu=dict(frame="xyzzy_qwerty")))
    assert "did you mean" not in str(refused.value)


def test_plan_reports_its_size_and_costs(icub):
    est, _ = icub
    p = est.report
    assert p.n_unknowns > 0 and p.n_equations > p.n_unknowns and p.nnz > 0 and p.flops > 0
    assert p.rnea_ops > 0 and p.aba_ops > p.rnea_ops
    assert "unknowns" in p.summary()


def test_imu_sample_shapes_are_checked(icub):
    est, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(10))
    with pytest.raises(ValueError, match="no IMU sample"):
        est.estimate(**dict(inputs, imu=None))
    assert isinstance(inputs["imu"], ImuSample)


def test_model_floating_base_must_match_config():
    m = RobotModel.from_urdf(urdf_xml("g1"), floating_base=False)
    with pytest.raises(ConfigError, match="floating_base"):
        Estimator(m, SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="pelvis"))))


def test_pivot_fallback_reproduces_the_planned_solve():
    """If a planned pivot vanished at some state, the generic path re-solves that tick with
    partial pivoting; on a regular state both give the same estimate."""
    cfg = icub_config()
    est = Estimator(RobotModel.from_urdf(urdf_xml("icub"), floating_base=True), cfg, solver="generic")
    inputs, truth = GroundTruth(urdf_xml("icub"), est).sample(np.random.default_rng(13))
    planned = est.estimate(**inputs).tau.copy()
    assert est._robust_solve() == 0 and est.pivot_fallbacks == 1
    np.testing.assert_allclose(est.result.tau, planned, atol=1e-9)
    np.testing.assert_allclose(est.result.tau, truth["tau"], atol=1e-8)


def test_generic_tick_allocates_nothing_but_argument_boxing():
    """The generic compiled tick (kinematics, gather, LU, solve) makes exactly as many numba
    runtime allocations per call as a do-nothing compiled function given the same arguments."""
    import nrt_stats
    out = nrt_stats.run("""
        import numpy as np
        from groundtruth import GroundTruth
        from nrt_stats import extra_allocations
        from oracle import urdf_xml
        from test_estimator import icub_config
        from rbd_estimator import RobotModel
        from rbd_estimator.estimation import Estimator
        from rbd_estimator.estimation import estimator as E
        est = Estimator(RobotModel.from_urdf(urdf_xml("icub"), floating_base=True), icub_config(),
                        solver="generic")
        inputs, _ = GroundTruth(urdf_xml("icub"), est).sample(np.random.default_rng(0))
        args = None
        real = E.generic_tick
        def capture(*a):
            global args
            args = a
            return real(*a)
        E.generic_tick = capture
        est.estimate(**inputs)
        E.generic_tick = real
        print(extra_allocations(real, args, 50))
    """)
    assert int(out[-1]) == 0, out
