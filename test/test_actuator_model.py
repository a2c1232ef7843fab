"""Issue 21, item 3: the actuator model of current-sensed joints (docs/actuator_model.md).

The acceptance test runs a Go2 in MuJoCo (an independent simulator, ``test/mujoco_go2.py``) with
MuJoCo Menagerie's armature, dry friction and damping on every joint and torque-controlled motors; the
joint-torque sensors read the motor torques. The contact forces estimated with the actuator model
(the same values as parameters) are compared with MuJoCo's, and with those of the shipped model that
takes the motor torque as the joint torque: RMS error with the model ≤ 0.3 × without.
"""
from __future__ import annotations

import numpy as np
import pytest
import yaml

mujoco = pytest.importorskip("mujoco")

import mujoco_go2 as sim  # noqa: E402

from rbd_estimator import ImuSample, SensorConfig, estimator_for, robots  # noqa: E402
from rbd_estimator.runtime.params import NODE_KEYS  # noqa: E402


def go2_parameters(actuator: bool, **extra) -> dict:
    """The shipped go2.yaml's parameters, its actuator values replaced by the simulator's (``actuator``)
    or removed (the motor torque taken as the joint torque)."""
    with open(robots.params_file("go2"), encoding="utf-8") as fh:
        p = yaml.safe_load(fh)["rbd_estimator"]["ros__parameters"]
    p.pop("joint_torque", None)
    if actuator:
        p["joint_torque"] = {j: dict(armature=sim.ARMATURE, coulomb_friction=sim.FRICTIONLOSS,
                                     viscous_friction=sim.DAMPING) for j in p["joint_torque_sensors"]}
    p.update(extra)
    return p


@pytest.fixture(scope="module")
def run():
    urdf = open(robots.urdf_file("go2"), encoding="utf-8").read()
    names = list(SensorConfig.from_dict(go2_parameters(False)).joint_torque_sensors)
    return urdf, names, sim.simulate(urdf, names, seconds=2.0, rate_hz=500.0)


def force_errors(est, names, d) -> np.ndarray:
    """World-frame contact-force errors (every foot, every sample) of the library's estimates from
    MuJoCo's joint states, true accelerations, IMU and motor torques."""
    order = [names.index(j) for j in est.joint_names]
    err = np.zeros((len(d["q"]), 4, 3))
    for k in range(len(d["q"])):
        imu = ImuSample(d["quat"][k], d["gyro"][k], d["acc"][k], d["alpha"][k])
        r = est.estimate(d["q"][k][order], d["dq"][k][order], d["ddq"][k][order], imu=imu,
                         joint_torques=d["motor"][k])
        for c in range(4):
            err[k, c] = d["R_foot"][k][c] @ r.contact_wrenches[c][:3] - d["force"][k][c]
    return err


def rms(err) -> float:
    return float(np.sqrt((err ** 2).sum(axis=-1).mean()))


@pytest.mark.parametrize("acceleration_stddev", [0.0, 0.5])
def test_the_actuator_model_brings_the_contact_forces_of_a_simulated_go2_to_mujocos(run, acceleration_stddev):
    """Acceptance (issue 21): RMS contact-force error with the actuator model ≤ 0.3 × without, with
    the accelerations as exact inputs and as a measurement (σ_a = 0.5 rad/s²)."""
    urdf, names, d = run
    with_model, without = (rms(force_errors(estimator_for(urdf, SensorConfig.from_dict(
        go2_parameters(a, joint_acceleration_stddev=acceleration_stddev))), names, d)) for a in (True, False))
    weight = float(np.linalg.norm(d["force"][:, :, :].sum(axis=1), axis=1).mean())
    print(f"\nGo2 in MuJoCo (armature {sim.ARMATURE}, frictionloss {sim.FRICTIONLOSS}, damping {sim.DAMPING}), "
          f"σ_a = {acceleration_stddev}: contact-force RMS error {with_model:.3f} N with the actuator model, "
          f"{without:.3f} N without (ratio {with_model / without:.3f}; total normal force ≈ {weight:.0f} N)")
    assert with_model <= 0.3 * without


def test_structured_and_generic_paths_agree_with_the_actuator_model(run):
    """The armature's right-hand side and the friction correction reach both solvers alike."""
    urdf, names, d = run
    cfg = SensorConfig.from_dict(go2_parameters(True))
    a, b = estimator_for(urdf, cfg), estimator_for(urdf, cfg, solver="generic")
    assert a.report.solver == "structured" and b.report.solver != "structured"
    order = [names.index(j) for j in a.joint_names]
    for k in (0, 200, 700):
        imu = ImuSample(d["quat"][k], d["gyro"][k], d["acc"][k], d["alpha"][k])
        args = (d["q"][k][order], d["dq"][k][order], d["ddq"][k][order])
        ra = a.estimate(*args, imu=imu, joint_torques=d["motor"][k])
        wa, ta = ra.contact_wrenches.copy(), ra.tau.copy()
        rb = b.estimate(*args, imu=imu, joint_torques=d["motor"][k])
        assert np.allclose(wa, rb.contact_wrenches, atol=1e-8) and np.allclose(ta, rb.tau, atol=1e-8)


def test_the_reading_is_scaled_by_torque_constant_and_gear_ratio(run):
    """A reading in amperes with ``torque_constant`` × ``gear_ratio`` estimates as the torque itself."""
    urdf, names, d = run
    p = go2_parameters(True)
    for j in p["joint_torque"]:
        p["joint_torque"][j].update(torque_constant=0.25, gear_ratio=8.0)        # 2 N·m per A
    scaled, plain = estimator_for(urdf, SensorConfig.from_dict(p)), estimator_for(urdf, SensorConfig.from_dict(
        go2_parameters(True)))
    order = [names.index(j) for j in plain.joint_names]
    k = 300
    imu = ImuSample(d["quat"][k], d["gyro"][k], d["acc"][k], d["alpha"][k])
    args = (d["q"][k][order], d["dq"][k][order], d["ddq"][k][order])
    w = plain.estimate(*args, imu=imu, joint_torques=d["motor"][k]).contact_wrenches.copy()
    assert np.allclose(scaled.estimate(*args, imu=imu, joint_torques=d["motor"][k] / 2.0).contact_wrenches, w,
                       atol=1e-9)


def test_replay_with_the_actuator_model(run, tmp_path):
    """The MuJoCo run recorded as a rosbag2 (motor torques in the joint states' effort) through
    ``replay_bag``: the replay's estimates with the actuator model equal the library's on the same
    inputs (its own filtered accelerations) and beat the replay without the model ≤ 0.3 ×."""
    from groundtruth import Serializer
    from rosbags.rosbag2 import Writer

    from rbd_estimator.replay import replay_bag
    from rbd_estimator.runtime import cdr
    urdf, names, d = run
    s = Serializer()
    bag = tmp_path / "go2"
    t0 = 1_700_000_000_000_000_000
    stamps = t0 + np.arange(len(d["q"])) * 2_000_000
    with Writer(bag, version=9) as w:
        js = w.add_connection("/joint_states", cdr.JOINT_STATE, typestore=s.ts)
        imu = w.add_connection("/imu", cdr.IMU, typestore=s.ts)
        for k, t in enumerate(stamps):
            w.write(imu, int(t) - 100_000, s.imu(int(t), ImuSample(d["quat"][k], d["gyro"][k], d["acc"][k])))
            w.write(js, int(t), s.joint_state(int(t), names, d["q"][k], d["dq"][k], d["motor"][k]))
    out = {}
    for a in (True, False):
        cfg = SensorConfig.from_dict(go2_parameters(a, acceleration_cutoff_hz=0.0, oracle_every_n=0,
                                                    fault_false_alarm_rate=0.0), node_keys=NODE_KEYS)
        summary, rep = replay_bag(str(bag), str(tmp_path / f"out{a}"), cfg, urdf, collect=True, copy_inputs=False)
        assert not summary.error and summary.estimates == len(stamps) - 1, summary
        res = rep.results()
        k = np.searchsorted(stamps, res["stamps"])
        f = np.einsum("kcij,kcj->kci", d["R_foot"][k], res["wrenches"][:, :, :3])
        out[a] = rms(f[5:] - d["force"][k][5:])                 # after the derivative filter's start
    print(f"\nreplay of the MuJoCo Go2: contact-force RMS {out[True]:.3f} N with the actuator model, "
          f"{out[False]:.3f} N without")
    assert out[True] <= 0.3 * out[False]


def test_the_node_with_the_actuator_model_and_the_kalman_filter_equals_the_replay(run):
    """The live node (real rclpy, lockstep) on 60 samples of the MuJoCo run — the shipped go2.yaml with
    its actuator model, the Kalman filter on the joints — publishes for every tick the joint torques
    and contact forces that the replay computes from the same messages (≤ 1e-12 N·m, N)."""
    pytest.importorskip("rclpy")
    from groundtruth import Serializer
    from lockstep import LockstepNode
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Imu, JointState

    from rbd_estimator.estimation.config import flatten
    from rbd_estimator.replay import Replayer
    urdf, names, d = run
    params = go2_parameters(True)
    params.update(acceleration_filter="kalman", kalman_process_noise=1.0e5, kalman_position_stddev=1e-4,
                  oracle_every_n=0, fault_false_alarm_rate=0.0, joint_torque_timeout=5.0)
    params["imu"]["timeout"] = 5.0                       # a test process's scheduling: nothing goes stale
    s, t0 = Serializer(), 1_700_000_000_000_000_000
    raw = [[("/imu", s.imu(t0 + k * 2_000_000, ImuSample(d["quat"][k], d["gyro"][k], d["acc"][k]))),
            ("/joint_states", s.joint_state(t0 + k * 2_000_000, names, d["q"][k], d["dq"][k], d["motor"][k]))]
           for k in range(60)]
    rep = Replayer(urdf, SensorConfig.from_dict(params, node_keys=NODE_KEYS), collect=True)
    for k, step in enumerate(raw):
        for topic, b in step:
            rep.feed(topic, b, t0 + k * 2_000_000)
    res = rep.results()
    msgs = [[(t, deserialize_message(b, Imu if t == "/imu" else JointState)) for t, b in step] for step in raw]
    flat = dict(flatten(params), robot_description=urdf)
    with LockstepNode(flat, ["FL", "FR", "RL", "RR"], msgs[0]) as n:
        for k, step in enumerate(msgs):
            assert n.step(step, expect_estimate=k > 0) or k == 0, f"no estimate at step {k}"
        tau, wrenches = dict(n.tau), {c: dict(w) for c, w in n.wrenches.items()}
    assert len(tau) == len(res["stamps"]) == len(raw) - 1
    for st, t_rep, w_rep in zip(res["stamps"], res["tau"], res["wrenches"]):
        assert np.abs(tau[int(st)] - t_rep).max() <= 1e-12
        for c, name in enumerate(["FL", "FR", "RL", "RR"]):
            assert np.abs(wrenches[name][int(st)] - w_rep[c]).max() <= 1e-12
