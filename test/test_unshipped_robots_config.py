"""What a new user of an unshipped robot met with the parameter files of ``test/data/unshipped``
(``test_node_unshipped_robots.py`` runs them end to end), without ROS:

- the node's pinocchio cross-check (``runtime/oracle.py``) on a robot with continuous joints:
  pinocchio stores such a joint as ``(cos q, sin q)``, so the joint positions cannot be copied slot
  for slot (the Kinova Jaco 2's joints 1, 4 and 6 gave an 8 N·m residual on exact estimates); the
  truth is :class:`groundtruth.GroundTruth` (pinocchio's ``rnea``);
- a force-torque sensor declared on a joint the URDF lacks or on a moving joint: the error names the
  parameter ``ft.<name>.joint`` (it said ``keep_fixed names joint ...``, an argument of the library
  the user never wrote) and the closest fixed joint;
- a driver's joint states with joints the model does not move, or without one: the replay's summary
  names them (it only counted ``unknown_joint`` / ``missing_joint``);
- the Kinova's weak tool directions are those of its stretched zero pose: a working ``nominal_pose``
  silences the warning.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from groundtruth import GroundTruth
from oracle import robots_dir

pytest.importorskip("pinocchio")

from rbd_estimator import SensorConfig, estimator_for  # noqa: E402
from rbd_estimator.errors import ConfigError  # noqa: E402
from rbd_estimator.runtime.oracle import PinocchioOracle  # noqa: E402
from rbd_estimator.runtime.params import NODE_KEYS  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _urdf(rel):
    with open(os.path.join(robots_dir(), rel), encoding="utf-8") as fh:
        return fh.read()


def _user_params(robot) -> dict:
    import yaml
    with open(os.path.join(HERE, "data", "unshipped", f"{robot}.yaml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)["rbd_estimator"]["ros__parameters"]


@pytest.mark.parametrize("joint, says", [
    ("l_sole_jnt", "joint 'l_sole_jnt' is not in the robot description (did you mean the fixed joint 'l_sole_joint'?)"),
    ("LAnkleRoll", "joint 'LAnkleRoll' is revolute: only fixed joints can be kept")])
def test_force_torque_sensor_on_a_wrong_joint_names_the_parameter(joint, says):
    params = _user_params("romeo")
    params["ft"]["l_foot_ft"]["joint"] = joint
    with pytest.raises(ConfigError) as err:
        estimator_for(_urdf("romeo_description/urdf/romeo.urdf"), SensorConfig.from_dict(params, node_keys=NODE_KEYS))
    assert str(err.value).startswith(f"parameter 'ft.l_foot_ft.joint': {says}"), str(err.value)


@pytest.mark.parametrize("floating_base", [False, True])
def test_cross_check_of_continuous_joints_is_round_off(floating_base):
    xml = _urdf("kinova_description/robots/kinova.urdf")
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


def test_joint_states_with_fixed_joints_are_read_and_unknown_ones_named(tmp_path):
    """A Kinova driver publishes the gripper's finger joints too, which this URDF fixes: they are
    ignored, as robot_state_publisher ignores them (every joint state was rejected as
    ``unknown_joint`` before). A joint the URDF does not have, or a missing one, rejects every joint
    state; the replay's summary (and the node's /diagnostics, ``joint_states/rejected_joints``: same
    code) names it."""
    pytest.importorskip("rosbags")
    from groundtruth import Serializer
    from rosbags.rosbag2 import Writer

    from rbd_estimator.replay import replay_bag
    from rbd_estimator.runtime import cdr
    xml = _urdf("kinova_description/robots/kinova.urdf")
    cfg = SensorConfig.from_dict(_user_params("kinova"), node_keys=NODE_KEYS)
    joints = [f"j2s6s200_joint_{k}" for k in range(1, 7)]
    fingers = ["j2s6s200_joint_finger_1", "j2s6s200_joint_finger_2"]
    s = Serializer()
    for case, (names, says) in enumerate([(joints + fingers, ""),
                                          (fingers + joints + ["camera_pan"],
                                           "not in the robot description: 'camera_pan'"),
                                          (joints[:5], "missing: 'j2s6s200_joint_6'")]):
        bag, out = str(tmp_path / f"in{case}"), str(tmp_path / f"out{case}")
        with Writer(bag, version=9) as w:
            js = w.add_connection("/joint_states", cdr.JOINT_STATE, typestore=s.ts)
            for k in range(5):
                t = 1_700_000_000_000_000_000 + k * 1_000_000
                n = len(names)
                w.write(js, t, s.joint_state(t, names, np.zeros(n), np.zeros(n), np.zeros(n)))
        summary, _ = replay_bag(bag, out, cfg, xml)
        assert summary.rejected_joints == says
        if says:
            assert summary.estimates == 0 and sum(summary.rejected["joint_states"].values()) == 5
            assert f"joint names: {says}" in summary.text()
        else:
            assert sum(summary.rejected["joint_states"].values()) == 0 and summary.estimates >= 4, summary.text()


def test_kinova_weak_tool_directions_are_those_of_the_stretched_pose():
    """The Kinova's warning at configure (tool fx, fy, tz left to the prior) is about its zero pose,
    where the arm is stretched; at a working pose given as ``nominal_pose`` (docs/robot_descriptions.md)
    the six joint torques determine the whole tool wrench."""
    import warnings

    from rbd_estimator.errors import ConditioningWarning
    xml = _urdf("kinova_description/robots/kinova.urdf")
    params = _user_params("kinova")
    with pytest.warns(ConditioningWarning, match="tool fx, tool fy, tool tz"):
        est = estimator_for(xml, SensorConfig.from_dict(params, node_keys=NODE_KEYS))
    assert est.weak_directions() == {"tool": ("tool fx", "tool fy", "tool tz")}
    pose = {"j2s6s200_joint_2": 2.9, "j2s6s200_joint_3": 1.3, "j2s6s200_joint_5": 1.0}
    params.update(nominal_pose_joints=list(pose), nominal_pose=pose)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConditioningWarning)
        est = estimator_for(xml, SensorConfig.from_dict(params, node_keys=NODE_KEYS))
    assert est.weak_directions() == {}
