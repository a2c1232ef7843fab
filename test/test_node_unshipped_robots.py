"""A new user's robot, end to end: four robots of example-robot-data that the package ships no
configuration for, each with the parameter file a user writes from docs/sensors.md
(``test/data/unshipped/<robot>.yaml``), brought up as docs/node.md and docs/replay.md say.

- Solo-12 (quadruped): IMU, the 12 motor torques in ``joint_states``' effort field, four point feet;
- Romeo (humanoid, 22 mimic finger joints): IMU, force-torque sensors declared on the soles' fixed
  joints (``ft.<name>.joint``), two full-wrench soles; the URDF from the transient-local
  ``robot_description`` topic, as robot_state_publisher publishes it;
- UR5 (fixed-base arm): a wrist force-torque sensor on the flange's fixed joint, the tool wrench;
- Kinova Jaco 2 (continuous joints 1, 4, 6): its six joint-torque sensors, the end effector's wrench;
  the URDF from the topic too.

Each is configured and activated in the live node (real rclpy, loopback, lockstep as in
``test_node.py``), fed the noise-free readings of a :class:`groundtruth.Trajectory`; the published
joint torques (actuator efforts for Romeo's hands) and contact wrenches equal pinocchio's ``rnea`` of
the frame's state and wrenches to 1e-9 (relative), the pinocchio cross-check agrees and
``/diagnostics`` says OK. The same messages, recorded as a rosbag2 on the topics of the user's file,
go through ``rbd-estimator replay`` (the CLI's ``main``): its estimates equal the node's.
"""
from __future__ import annotations

import os
import types

import numpy as np
import pinocchio as pin
import pytest
from groundtruth import GroundTruth, Serializer, Trajectory
from oracle import rel_err, robots_dir
from test_mimic_estimator import coupling
from test_node import (QoSDurabilityPolicy, QoSProfile, QoSReliabilityPolicy, String, params_from_yaml,  # noqa: F401
                       ros, running, unique_ns)
from test_replay_sensor_kinds import messages_of

from rbd_estimator import SensorConfig, estimator_for
from rbd_estimator.cli import main as cli_main
from rbd_estimator.estimation.loops import LoopEstimator
from rbd_estimator.runtime import cdr

HERE = os.path.dirname(os.path.abspath(__file__))
REL_TOL = 1e-9
FRAMES = 12
#: robot → (URDF under example-robot-data's robots/, where the node reads it from)
ROBOTS = {"solo12": ("solo_description/robots/solo12.urdf", "parameter"),
          "romeo": ("romeo_description/urdf/romeo.urdf", "topic"),
          "ur5": ("ur_description/urdf/ur5_robot.urdf", "parameter"),
          "kinova": ("kinova_description/robots/kinova.urdf", "topic")}


def yaml_of(robot: str) -> str:
    return os.path.join(HERE, "data", "unshipped", f"{robot}.yaml")


class CoupledTrajectory(Trajectory):
    """:class:`Trajectory` of a robot with mimic joints: the independent coordinates ``y`` move with
    constant acceleration, the spanning tree's joints follow ``q = G y + offset`` (the URDF's mimic
    tags, read by ``test_mimic_estimator.coupling``); frames carry ``y`` as the joint states and the
    actuator efforts ``Gᵀ τ`` as the torques."""

    def __init__(self, xml, est: LoopEstimator, seed=0):
        super().__init__(est.estimator, seed=seed)     # the spanning tree's readings (``measure``)
        self.tree_est, self.est = self.est, est
        self.loop_est = est          # the node's names: the independent coordinates
        self.G, off = coupling(xml, list(est.tree_joint_names), list(est.joint_names))
        rng = np.random.default_rng((seed, 1))
        ny = len(est.joint_names)
        self.y0, self.vy0, self.ay = rng.uniform(-0.4, 0.4, ny), rng.normal(0, 0.5, ny), rng.normal(0, 2.0, ny)
        self.q0, self.v0, self.a = self.G @ self.y0 + off, self.G @ self.vy0, self.G @ self.ay

    def frame(self, k):
        fresh = k not in self._cache
        self.est = self.tree_est
        try:
            f = super().frame(k)
        finally:
            self.est = self.loop_est
        if fresh:
            t = k * self.dt_ns * 1e-9
            f["q"], f["dq"] = self.y0 + self.vy0 * t + 0.5 * self.ay * t * t, self.vy0 + self.ay * t
            f["tau"] = f["effort"] = self.G.T @ f["tau"]
        return f


class PinTorques:
    """Pinocchio's joint torques (``rnea``) of a trajectory frame's state under its contact wrenches,
    in the estimator's joint order (actuator efforts ``Gᵀ τ`` where joints are coupled)."""

    def __init__(self, xml, traj: Trajectory):
        self.gt = GroundTruth(xml, types.SimpleNamespace(model=traj.m, config=traj.cfg))
        self.G = getattr(traj, "G", None)

    def __call__(self, frame) -> np.ndarray:
        gt, fb = self.gt, self.gt.cfg.floating_base
        q, v, a = frame["state"]
        o_q, o_v = (7, 6) if fb else (0, 0)
        qp, vp, ap = gt._to_pin(gt.pm, q[:7] if fb else None, v[:6] if fb else None, a[:6] if fb else None,
                                q[o_q:], v[o_v:], a[o_v:])
        full = pin.rnea(gt.pm, gt.pd, qp, vp, ap, gt._fext(gt.pm, frame["wrenches"]))
        if fb:
            assert np.max(np.abs(full[:6])) <= 1e-8 * max(1.0, np.max(np.abs(full)))   # the base balances
        tau = np.array([full[gt.pm.idx_vs[gt.pm.getJointId(n)]] for n in gt.model.joint_names])
        return tau if self.G is None else self.G.T @ tau


def trajectory(xml, est, seed):
    return CoupledTrajectory(xml, est, seed) if isinstance(est, LoopEstimator) else Trajectory(est, seed=seed)


@pytest.fixture(scope="module", params=list(ROBOTS))
def robot(request):
    name = request.param
    rel, source = ROBOTS[name]
    with open(os.path.join(robots_dir(), rel), encoding="utf-8") as fh:
        xml = fh.read()
    est = estimator_for(xml, SensorConfig.from_yaml(yaml_of(name)))
    return types.SimpleNamespace(name=name, xml=xml, est=est, source=source,
                                 traj=trajectory(xml, est, seed=sum(map(ord, name))), node={})


def test_node_on_a_users_parameter_file_matches_pinocchio(ros, robot):
    """configure, activate, lockstep frames: torques and contact wrenches ≤ 1e-9 of pinocchio, the
    cross-check agrees, /diagnostics OK."""
    ns = unique_ns(robot.name)
    topic_pub = None
    params = params_from_yaml(yaml_of(robot.name), robot.xml if robot.source == "parameter" else "",
                              oracle_every_n=5, prepare_fallbacks=False)
    if robot.source == "topic":                    # robot_state_publisher's latched description
        qos = QoSProfile(depth=1, durability=QoSDurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=QoSReliabilityPolicy.RELIABLE)
        topic_pub = ros.client.create_publisher(String, f"{ns}/robot_description", qos)
        topic_pub.publish(String(data=robot.xml))
    truth = PinTorques(robot.xml, robot.traj)
    try:
        with running(ros, params, ns, robot.traj) as sim:
            est = sim.node.estimator
            assert list(est.joint_names) == list(robot.est.joint_names)
            for k in range(FRAMES):
                sim.step(k, expect_output=k > 0)
            errors = []
            for k in range(1, FRAMES):
                f = robot.traj.frame(k)
                names, tau = sim.torques[f["stamp"]]
                assert names == list(est.joint_names)
                errors.append(rel_err(tau, truth(f)))
                for c, w_true in zip(est.contact_names, f["wrenches"]):
                    frame, w = sim.wrenches[c][f["stamp"]]
                    assert frame == est.config.contact(c).frame
                    errors.append(rel_err(w, w_true))
            assert max(errors) <= REL_TOL, f"{robot.name}: largest relative error {max(errors):.3g}"
            assert sim.all_finite()
            coupled = isinstance(est, LoopEstimator)       # pinocchio's tree does not couple mimic joints
            lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: int(v["outputs"]) >= FRAMES - 1 and (
                coupled or int(v.get("oracle_checks", 0)) >= 2))
            assert msg == "OK" and lvl == b"\x00", (msg, v)
            assert v["active_plan"] == "full" and int(v["ticks_without_output"]) == 0
            if coupled:
                assert "mimic joints" in v["oracle_error"]
            else:
                assert float(v["oracle_residual"]) < 1e-6
            robot.node.update({s: (tau, {c: sim.wrenches[c][s][1] for c in est.contact_names})
                               for s, (_, tau) in sim.torques.items()})
            # a driver that also publishes a joint the model does not move: rejected, and named
            f = robot.traj.frame(FRAMES)
            extra = sim.joint_state(FRAMES, names=sim.wire_names + ["gripper_finger_joint"],
                                    q=[*(f["q"][i] for i in sim.wire_order), 0.0],
                                    dq=[*(f["dq"][i] for i in sim.wire_order), 0.0])
            extra.effort = [*extra.effort, 0.0]
            sim.js.publish(extra)
            lvl, msg, v = sim.latest_diagnostics(lambda lvl, m, v: "joint_states/rejected_joints" in v)
            assert v["joint_states/rejected_joints"] == "not in the robot description: 'gripper_finger_joint'"
            assert int(v["joint_states/rejected/unknown_joint"]) == 1
    finally:
        if topic_pub is not None:
            ros.client.destroy_publisher(topic_pub)


def record(path, robot):
    """The lockstep frames as a rosbag2 (MCAP, rosbags' writer and serializer) on the topics of the
    user's parameter file: each sensor 100 µs before the joint state; the URDF on /robot_description."""
    s, traj, cfg = Serializer(), robot.traj, robot.est.config
    from rosbags.rosbag2 import Writer
    with Writer(path, version=9) as w:
        desc = w.add_connection("/robot_description", "std_msgs/msg/String", typestore=s.ts)
        js = w.add_connection(cfg.node.get("joint_states_topic", "/joint_states"), cdr.JOINT_STATE, typestore=s.ts)
        imu = w.add_connection(cfg.imu.topic, cdr.IMU, typestore=s.ts) if cfg.imu is not None else None
        ft = [w.add_connection(x.topic, cdr.WRENCH_STAMPED, typestore=s.ts) for x in cfg.ft_sensors]
        t0 = traj.stamp(0) - 1_000_000
        w.write(desc, t0, bytes(s.ts.serialize_cdr(s.T["std_msgs/msg/String"](data=robot.xml), "std_msgs/msg/String")))
        for k in range(FRAMES):
            f = traj.frame(k)
            t, r = f["stamp"], f["readings"]
            if imu is not None:
                w.write(imu, t - 100_000, s.imu(t, r.imu))
            for c, reading in zip(ft, r.ft):
                w.write(c, t - 100_000, s.wrench(t, reading))
            w.write(js, t, s.joint_state(t, robot.est.joint_names, f["q"], f["dq"], f["effort"]))


def test_replay_of_the_recording_equals_the_node(robot, tmp_path):
    """``rbd-estimator replay IN OUT --params <user's file>`` (URDF from the recording's
    /robot_description): the same estimates as the node published, stamp for stamp."""
    if not robot.node:
        pytest.skip("the node test did not run")
    bag, out = str(tmp_path / "in"), str(tmp_path / "out")
    record(bag, robot)
    assert cli_main(["replay", bag, out, "--params", yaml_of(robot.name), "-q"]) == 0
    tau = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec: np.array(m.effort)
           for m in messages_of(out, "/rbd_estimator/joint_torques")}
    assert sorted(tau) == sorted(robot.node)
    for c in robot.est.contact_names:
        wrenches = {m.header.stamp.sec * 10**9 + m.header.stamp.nanosec:
                    np.array([m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                              m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z])
                    for m in messages_of(out, f"/rbd_estimator/contact_wrenches/{c}")}
        assert sorted(wrenches) == sorted(robot.node)
        for st, w in wrenches.items():
            assert rel_err(w, robot.node[st][1][c]) <= 1e-12
    for st, t in tau.items():
        assert rel_err(t, robot.node[st][0]) <= 1e-12


def test_configure_says_a_weak_contact_direction_once_and_not_as_a_description_fault(ros, capfd):
    """The Kinova's wrist is stretched at the nominal stance (joints at zero): the sensors leave tool
    directions to the prior there. configure says so once, as the contacts' line with the parameter
    to set (``nominal_pose``); it used to log it a second time as ``robot_description: ...``, which
    points the user at the URDF."""
    rel, _ = ROBOTS["kinova"]
    with open(os.path.join(robots_dir(), rel), encoding="utf-8") as fh:
        xml = fh.read()
    node = ros.estimator(params_from_yaml(yaml_of("kinova"), xml, prepare_fallbacks=False), unique_ns("weak"))
    try:
        capfd.readouterr()
        assert ros.transition(node, "configure"), node.last_error
        err = ""
        for _ in range(200):          # log lines queued by the node are written by its executor
            err += capfd.readouterr().err
            if "do not determine" in err:
                break
            ros.state(node)
        lines = [x for x in err.splitlines() if "do not determine" in x]
        assert len(lines) == 1 and "contacts tool:" in lines[0] and "nominal_pose" in lines[0], lines
        assert "robot_description:" not in err, err
    finally:
        ros.destroy(node)


def test_configure_with_a_wrong_sensor_joint_names_the_parameter(ros):
    """A force-torque sensor declared on a joint the URDF lacks: configure fails with the parameter
    and the closest fixed joint; the node can be configured again once it is fixed."""
    rel, _ = ROBOTS["romeo"]
    with open(os.path.join(robots_dir(), rel), encoding="utf-8") as fh:
        xml = fh.read()
    params = params_from_yaml(yaml_of("romeo"), xml, prepare_fallbacks=False, oracle_every_n=0)
    params["ft.l_foot_ft.joint"] = "l_sole_jnt"
    node = ros.estimator(params, unique_ns("ftjoint"))
    try:
        assert not ros.transition(node, "configure")
        assert ("invalid parameters: parameter 'ft.l_foot_ft.joint': joint 'l_sole_jnt' is not in the robot "
                "description (did you mean the fixed joint 'l_sole_joint'?)") in node.last_error, node.last_error
        assert ros.set_parameters(node, {"ft.l_foot_ft.joint": "l_sole_joint"}).successful
        assert ros.transition(node, "configure"), node.last_error
    finally:
        ros.destroy(node)
