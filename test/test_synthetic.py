"""Synthetic readings (used by the demo and the node tests) agree with pinocchio's ground truth."""
from __future__ import annotations

import numpy as np
from groundtruth import GroundTruth
from oracle import urdf_xml
from test_estimator import icub_config, talos_config

from rbd_estimator.estimation import estimator_for
from rbd_estimator.estimation.synthetic import consistent_base_acceleration, measure


def _full_state(est, gt, rng):
    """A full pinocchio-layout state in model order and consistent wrenches from the oracle."""
    inputs, truth = gt.sample(rng)
    m = est.model
    q = m.random_configuration(rng)
    v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
    jq = [m.q_idx[m.body_joint_names.index(n)] for n in m.joint_names]
    q[jq], v[m.joint_v_index], a[m.joint_v_index] = inputs["q"], inputs["dq"], inputs["ddq"]
    a[:6] = consistent_base_acceleration(est, q, v, a, truth["wrenches"])
    return q, v, a, truth["wrenches"]


def test_measure_feeds_the_estimator_its_truth():
    for config, robot in ((icub_config(), "icub"), (talos_config(), "talos")):
        est = estimator_for(urdf_xml(robot), config)
        gt = GroundTruth(urdf_xml(robot), est)
        rng = np.random.default_rng(11)
        for _ in range(5):
            q, v, a, w = _full_state(est, gt, rng)
            s = measure(est, q, v, a, w)
            jq = [est.model.q_idx[est.model.body_joint_names.index(n)] for n in est.joint_names]
            jv = est.model.joint_v_index
            r = est.estimate(q[jq], v[jv], a[jv], imu=s.imu, ft=s.ft)
            np.testing.assert_allclose(r.tau, s.tau, atol=1e-8)
            np.testing.assert_allclose(r.contact_wrenches, w, atol=1e-8)


def test_measured_ft_matches_pinocchio_internal_wrenches():
    est = estimator_for(urdf_xml("icub"), icub_config())
    gt = GroundTruth(urdf_xml("icub"), est)
    rng = np.random.default_rng(12)
    inputs, truth = gt.sample(rng)
    # rebuild the same state in model order from the oracle's sample is not possible; compare via
    # the estimator instead: its estimate from the oracle's readings reproduces measure()'s
    r = est.estimate(**inputs)
    m = est.model
    q = m.neutral_configuration()
    v, a = np.zeros(m.nv), np.zeros(m.nv)
    jq = [m.q_idx[m.body_joint_names.index(n)] for n in m.joint_names]
    q[jq], v[m.joint_v_index], a[m.joint_v_index] = inputs["q"], inputs["dq"], inputs["ddq"]
    # base orientation and angular velocity of the oracle's IMU (IMU on the base here)
    q[3:7] = inputs["imu"].orientation
    v[3:6] = inputs["imu"].angular_velocity
    a[:6] = consistent_base_acceleration(est, q, v, a, truth["wrenches"])
    s = measure(est, q, v, a, truth["wrenches"])
    np.testing.assert_allclose(s.ft, inputs["ft"], atol=1e-8)
    np.testing.assert_allclose(s.tau, truth["tau"], atol=1e-8)
    np.testing.assert_allclose(s.imu.linear_acceleration, inputs["imu"].linear_acceleration, atol=1e-8)
    np.testing.assert_allclose(r.tau, truth["tau"], atol=1e-8)
