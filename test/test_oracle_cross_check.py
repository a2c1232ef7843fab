"""The node's pinocchio cross-check (``runtime/oracle.py``) on a robot with continuous joints:
pinocchio stores such a joint as ``(cos q, sin q)``, so the joint positions cannot be copied slot
for slot (the Kinova Jaco 2's joints 1, 4 and 6 reported an 8 N·m residual on exact estimates).
The truth is :class:`groundtruth.GroundTruth` (pinocchio's ``rnea``)."""
from __future__ import annotations

import os

import numpy as np
import pytest
from groundtruth import GroundTruth
from oracle import robots_dir

pytest.importorskip("pinocchio")

from rbd_estimator import SensorConfig, estimator_for  # noqa: E402
from rbd_estimator.runtime.oracle import PinocchioOracle  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("floating_base", [False, True])
def test_cross_check_of_continuous_joints_is_round_off(floating_base):
    with open(os.path.join(robots_dir(), "kinova_description/robots/kinova.urdf"), encoding="utf-8") as fh:
        xml = fh.read()
    cfg = SensorConfig.from_yaml(os.path.join(HERE, "data", "unshipped", "kinova.yaml"))
    if floating_base:                     # the arm on a moving base with an IMU: the base_state path
        cfg = SensorConfig.from_dict(dict(cfg.to_parameters(), floating_base=True,
                                          imu=dict(frame="j2s6s200_link_base")))
    est = estimator_for(xml, cfg)
    oracle = PinocchioOracle(xml, cfg.floating_base, est.joint_names, est.contact_frames,
                             cfg.imu.frame if cfg.imu else None)
    assert len(oracle.q) > len(est.joint_names) + (7 if floating_base else 0)    # (cos, sin) slots
    inputs, truth = GroundTruth(xml, est).sample(np.random.default_rng(5))
    assert np.abs(inputs["q"]).max() > 0.5
    r = est.estimate(**inputs)
    scale = max(1.0, np.max(np.abs(truth["tau"])))
    assert np.max(np.abs(r.tau - truth["tau"])) <= 1e-9 * scale
    joint, base = oracle.check(inputs["q"], inputs["dq"], inputs["ddq"], inputs.get("imu"),
                               r.base_acceleration, r.contact_wrenches, r.tau)
    assert joint <= 1e-9 * scale and base <= 1e-9 * scale, (joint, base)
