"""Issue 21: the actuator model runs inside the compiled ticks (docs/actuator_model.md).

The joint-torque readings of current-sensed joints become ``y' = y − (f_c tanh(q̇/v_s) + b q̇ +
I_a q̈) / (k_t N)`` in the generic and the structured tick (``estimation/actuators.py``). The oracle
is the previous arrangement, written out here in numpy: that correction applied to ``y`` in Python,
then the estimate of the same configuration without an actuator model (with ``σ_a > 0`` its rows'
noise set to what the model adds, ``hypot(σ, I_a σ_a)``). Pinocchio's ground truth with the
model's readings is ``test_shipped_robots.py`` (library and replay) and ``test_actuator_model.py``
(MuJoCo: library, replay, node); the replay's compiled batch loop with the model is tested here.
"""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from rbd_estimator import SensorConfig, estimator_for, robots
from rbd_estimator.sensors import JointTorque

ROBOTS = ["go2", "g1"]


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def shipped_parameters(name: str) -> dict:
    with open(robots.params_file(name), encoding="utf-8") as fh:
        return yaml.safe_load(fh)["rbd_estimator"]["ros__parameters"]


def with_and_without(name: str, acceleration_stddev: float, scaled: bool):
    """``(with_model, without)``: the shipped configuration of ``name`` (its actuator model; with
    ``scaled``, readings in amperes: k_t = 0.25, N = 8) and the same without friction and armature,
    its joint-torque rows' noise that of the model's rows."""
    p = shipped_parameters(name)
    p["joint_acceleration_stddev"] = acceleration_stddev
    assert p["joint_torque"], f"{name}.yaml ships no actuator model"
    if scaled:
        for j in p["joint_torque"]:
            p["joint_torque"][j].update(torque_constant=0.25, gear_ratio=8.0)
    model = SensorConfig.from_dict(p)
    plain = dict(p, joint_torque={})
    for s in model.of_kind(JointTorque):
        plain["joint_torque"][s.name] = dict(torque_constant=s.torque_constant, gear_ratio=s.gear_ratio,
                                             stddev=float(np.hypot(s.stddev, s.armature * acceleration_stddev)))
    return model, SensorConfig.from_dict(plain)


def corrected_in_python(est, y, dq, ddq) -> np.ndarray:
    """The previous Python correction: ``y'`` of every joint-torque sensor with a model (numpy)."""
    y = y.copy()
    for s in est.config.of_kind(JointTorque):
        k, j = est.measurements.slice(s.name).start, est.joint_names.index(s.name)
        y[k] -= (s.coulomb_friction * np.tanh(dq[j] / s.friction_velocity) + s.viscous_friction * dq[j]
                 + s.armature * ddq[j]) / (s.torque_constant * s.gear_ratio)
    return y


def random_inputs(est, rng):
    """A random joint state (velocities up to a few rad/s, so both friction regimes occur) and a
    random measurement vector with a unit quaternion and a plausible gyro and accelerometer."""
    nj = est.model.n_joints
    q, dq, ddq = rng.uniform(-1.0, 1.0, nj), rng.normal(size=nj) * 2.0, rng.normal(size=nj) * 5.0
    dq[:3] = [0.0, 0.003, -0.02]                       # within and around v_s = 0.01 rad/s
    y = rng.normal(size=est.layout.n_y) * 10.0
    k = est.measurements.slice(est.config.imu.name).start
    quat = rng.normal(size=4)
    y[k:k + 4] = quat / np.linalg.norm(quat)
    y[k + 4:k + 7] = rng.normal(size=3)
    y[k + 7:k + 10] = rng.normal(size=3) + [0.0, 0.0, 9.81]
    return q, dq, ddq, y


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("solver", ["structured", "generic"])
@pytest.mark.parametrize("acceleration_stddev,scaled", [(0.0, False), (0.5, True)])
def test_the_compiled_correction_equals_the_python_one(name, solver, acceleration_stddev, scaled):
    """Both ticks, exact and measured accelerations, readings in N·m and in amperes: torques,
    wrenches, their covariance and χ² equal the Python-corrected estimate's to 1e-12 (relative to
    the largest value), and the caller's ``y`` is unchanged."""
    xml = _read(robots.urdf_file(name))
    cfg, plain_cfg = with_and_without(name, acceleration_stddev, scaled)
    est, plain = estimator_for(xml, cfg, solver=solver), estimator_for(xml, plain_cfg, solver=solver)
    assert (est.report.solver == "structured") == (solver == "structured")
    assert plain.layout.n_y == est.layout.n_y
    rng = np.random.default_rng(21)
    for _ in range(5):
        q, dq, ddq, y = random_inputs(est, rng)
        y0 = y.copy()
        r = est.estimate(q, dq, ddq, y=y)
        got = np.concatenate([r.tau, r.contact_wrenches.ravel(), est.data.cov, est.data.info[3:4]])
        assert np.array_equal(y, y0)
        p = plain.estimate(q, dq, ddq, y=corrected_in_python(est, y, dq, ddq))
        want = np.concatenate([p.tau, p.contact_wrenches.ravel(), plain.data.cov, plain.data.info[3:4]])
        scale = max(1.0, float(np.abs(want).max()))
        assert np.abs(got - want).max() <= 1e-12 * scale, (name, solver, np.abs(got - want).max(), scale)
        # and the model matters: without the correction the estimate is another one
        assert np.abs(plain.estimate(q, dq, ddq, y=y).tau - r.tau).max() > 1e-3


@pytest.mark.parametrize("name", ROBOTS)
def test_kernel_is_available_with_an_actuator_model(name):
    """``Estimator.kernel()`` (what the replay's batch loop calls) is the structured kernel with
    the model packed in its blobs: called directly, it gives the estimate of ``estimate()``."""
    from rbd_estimator.estimation.structured import H_SINFO, H_SOUT, compiled_tick
    xml = _read(robots.urdf_file(name))
    est = estimator_for(xml, SensorConfig.from_yaml(robots.params_file(name)))
    ip, S = est.kernel()
    q, dq, ddq, y = random_inputs(est, np.random.default_rng(3))
    want = est.estimate(q, dq, ddq, y=y).tau.copy()
    S[ip[H_SOUT]:ip[H_SINFO]] = 0.0
    assert compiled_tick()(ip, S, q, dq, ddq, y) == 0
    assert np.array_equal(S[ip[H_SOUT]:ip[H_SOUT] + len(want)], want)


@pytest.mark.parametrize("solver", ["structured", "generic"])
def test_ticks_with_the_actuator_model_allocate_nothing_but_argument_boxing(solver):
    """numba's allocation statistics: the Go2's tick with its shipped actuator model makes as
    many runtime allocations as a do-nothing compiled function of the same arguments."""
    import nrt_stats
    out = nrt_stats.run(f"""
        import numpy as np
        from nrt_stats import extra_allocations
        from test_actuator_kernel import random_inputs
        from rbd_estimator import SensorConfig, estimator_for, robots
        from rbd_estimator.estimation import estimator as E, structured as st
        est = estimator_for(open(robots.urdf_file("go2")).read(), SensorConfig.from_yaml(robots.params_file("go2")),
                            solver="{solver}")
        q, dq, ddq, y = random_inputs(est, np.random.default_rng(0))
        if est.report.solver == "structured":
            real, signatures = est._structured.kernel, [st._SIGNATURE]
            args = (est._structured.ip, est.data.state, q, dq, ddq, y)
        else:
            real, signatures, args = E.generic_tick, None, None
            def capture(*a):
                global args
                args = a
                return real(*a)
            E.generic_tick = capture
            est.estimate(q, dq, ddq, y=y)
            E.generic_tick = real
            assert args[20] > 0                        # the actuators' count
        def tick(*a):
            assert real(*a) == 0
        print(extra_allocations(tick, args, 100, signatures))
    """)
    assert int(out[-1]) == 0, out


@pytest.mark.parametrize("name", ROBOTS)
def test_the_replays_compiled_batch_loop_runs_the_actuator_model(name, tmp_path, monkeypatch):
    """A time-consistent trajectory (``groundtruth.Trajectory``, the motor torques' readings in the
    joint states' effort field, the shipped configuration with its actuator model) recorded as a
    rosbag2 and replayed by ``replay_bag``: the estimates come from the compiled batch loop
    (``runtime.batch.run``, which now reads the efforts too), equal the ground truth (1e-9
    relative) and the per-message path's (1e-12)."""
    pytest.importorskip("rosbags")
    from groundtruth import Serializer, Trajectory
    from rosbags.rosbag2 import Writer

    from rbd_estimator.replay import Replayer, replay_bag
    from rbd_estimator.runtime import batch, cdr
    from rbd_estimator.runtime.params import NODE_KEYS
    xml = _read(robots.urdf_file(name))
    p = dict(shipped_parameters(name), oracle_every_n=0, fault_false_alarm_rate=0.0)
    cfg = SensorConfig.from_dict(p, node_keys=NODE_KEYS)
    est = estimator_for(xml, cfg)
    traj, ser, n = Trajectory(est, seed=5), Serializer(), 40
    wire = list(reversed(est.joint_names))                  # not the model's order on the wire
    order = [est.joint_names.index(j) for j in wire]
    bag = tmp_path / "in"
    with Writer(bag, version=9) as w:
        js = w.add_connection("/joint_states", cdr.JOINT_STATE, typestore=ser.ts)
        imu = w.add_connection("/imu", cdr.IMU, typestore=ser.ts)
        for k in range(n):
            f = traj.frame(k)
            t = f["stamp"]
            w.write(imu, t, ser.imu(t, f["readings"].imu))
            w.write(js, t + 1000, ser.joint_state(t, wire, f["q"][order], f["dq"][order], f["effort"][order]))
    batched = []
    real_run = batch.run

    def counting_run(*args):
        i, k, code = real_run(*args)
        batched.append(k)
        return i, k, code
    monkeypatch.setattr(batch, "run", counting_run)
    summary, rep = replay_bag(str(bag), str(tmp_path / "fast"), cfg, xml, collect=True, copy_inputs=False)
    assert not summary.error and summary.estimates == n - 1, summary
    assert sum(batched) >= n - 2, f"{sum(batched)} of {n - 1} estimates in the compiled loop"
    fast = rep.results()
    for stamp, tau, wr in zip(fast["stamps"], fast["tau"], fast["wrenches"]):
        truth = traj.frame((stamp - traj.t0_ns) // traj.dt_ns)
        assert np.abs(tau - truth["tau"]).max() <= 1e-9 * np.abs(truth["tau"]).max()
        assert np.abs(wr - truth["wrenches"]).max() <= 1e-9 * np.abs(truth["wrenches"]).max()
    monkeypatch.setattr(Replayer, "_batch_ok", lambda self: False)
    batched.clear()
    summary, rep = replay_bag(str(bag), str(tmp_path / "slow"), cfg, xml, collect=True, copy_inputs=False)
    slow = rep.results()
    assert not batched and summary.estimates == n - 1
    assert np.array_equal(fast["stamps"], slow["stamps"])
    assert np.abs(fast["tau"] - slow["tau"]).max() <= 1e-12
    assert np.abs(fast["wrenches"] - slow["wrenches"]).max() <= 1e-12
