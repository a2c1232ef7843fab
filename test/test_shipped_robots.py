"""The shipped real-robot configurations (issue 10) against a pinocchio ground truth.

Talos (IMU, force-torque sensors at ankles and wrists, two full-wrench soles), Unitree Go2 (IMU, the
12 motor torques, four point-force feet) and Unitree G1 (IMU, the 29 motor torques, two feet): the
parameter files of config/ with the URDFs of example-robot-data, as ``robot:=NAME`` launches them.
Ground truth from ``groundtruth.GroundTruth`` (pinocchio rnea with random contact wrenches and the
base acceleration that makes them consistent; the base linear velocity is random and never given to
the estimator); noise free; 20 random states each.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from groundtruth import GroundTruth

from rbd_estimator import SensorConfig, estimator_for, robots
from rbd_estimator.runtime.oracle import PinocchioOracle

REAL = ["talos", "go2", "g1"]


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture(scope="module", params=REAL)
def shipped(request):
    name = request.param
    xml, cfg = _read(robots.urdf_file(name)), SensorConfig.from_yaml(robots.params_file(name))
    est = estimator_for(xml, cfg)
    return name, xml, cfg, est, GroundTruth(xml, est)


def test_shipped_robot_estimates_torques_and_contact_wrenches(shipped):
    name, xml, cfg, est, gt = shipped
    assert cfg.floating_base and est.report.solver == "structured", est.report.summary()
    rng = np.random.default_rng(zlib.crc32(name.encode()))     # not hash(): salted per process
    worst_tau = worst_w = 0.0
    for _ in range(20):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        worst_tau = max(worst_tau, np.max(np.abs(r.tau - truth["tau"])) / np.max(np.abs(truth["tau"])))
        worst_w = max(worst_w, np.max(np.abs(r.contact_wrenches - truth["wrenches"])) /
                      np.max(np.abs(truth["wrenches"])))
    assert worst_tau <= 1e-9, f"{name}: joint torques off by {worst_tau:.3g} (relative)"
    assert worst_w <= 1e-9, f"{name}: contact wrenches off by {worst_w:.3g} (relative)"


def test_pinocchio_cross_check_agrees_on_shipped_robot(shipped):
    """The node's cross-check (runtime/oracle.py) recomputes the torques with pinocchio from the
    estimate: its residual is round-off on a noise-free sample."""
    name, xml, cfg, est, gt = shipped
    oracle = PinocchioOracle(xml, cfg.floating_base, est.joint_names, est.contact_frames, cfg.imu.frame)
    inputs, truth = gt.sample(np.random.default_rng(3))
    r = est.estimate(**inputs)
    joint, base = oracle.check(inputs["q"], inputs["dq"], inputs["ddq"], inputs["imu"], r.base_acceleration,
                               r.contact_wrenches, r.tau)
    scale = np.max(np.abs(truth["tau"]))
    assert joint <= 1e-9 * scale and base <= 1e-9 * scale, (name, joint, base)
    # and it sees a wrong estimate
    joint, _ = oracle.check(inputs["q"], inputs["dq"], inputs["ddq"], inputs["imu"], r.base_acceleration,
                            r.contact_wrenches, r.tau + 0.01)
    assert joint == pytest.approx(0.01, rel=1e-6)


@pytest.mark.parametrize("name", ["go2", "g1"])
def test_replay_of_shipped_robot_matches_truth(name):
    """The replay's tick logic (the node's) on the serialized messages of a time-consistent
    trajectory (``groundtruth.Trajectory``): motor torques in the joint states' effort field."""
    pytest.importorskip("rosbags")
    from groundtruth import Serializer, Trajectory

    from rbd_estimator.replay import Replayer
    xml, cfg = _read(robots.urdf_file(name)), SensorConfig.from_yaml(robots.params_file(name))
    est = estimator_for(xml, cfg)
    traj = Trajectory(est, seed=5)
    rep = Replayer(xml, cfg, collect=True)
    ser = Serializer()
    wire = list(reversed(est.joint_names))                  # not the model's order on the wire
    order = [est.joint_names.index(j) for j in wire]
    n = 20
    for k in range(n):
        f = traj.frame(k)
        t = f["stamp"]
        rep.feed("/imu", ser.imu(t, f["readings"].imu), t)
        motor = dict(zip(cfg.joint_torque_sensors, f["readings"].joint_torques))   # the actuator model's readings
        rep.feed("/joint_states", ser.joint_state(t, wire, f["q"][order], f["dq"][order], [motor[j] for j in wire]),
                 t + 1000)
    assert len(rep.tau) == n - 1                              # the first joint state starts the filter
    for stamp, tau, w in zip(rep.stamps, rep.tau, rep.wrenches):
        k = (stamp - traj.t0_ns) // traj.dt_ns
        truth = traj.frame(k)
        assert np.max(np.abs(tau - truth["tau"])) <= 1e-9 * np.max(np.abs(truth["tau"]))
        assert np.max(np.abs(w - truth["wrenches"])) <= 1e-9 * np.max(np.abs(truth["wrenches"]))
