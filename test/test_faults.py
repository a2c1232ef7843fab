"""Issue 20: a lying sensor is found, isolated, excluded and let back in (runtime/faults.py).

The shipped iCub sensor set (config/icub.yaml: IMU, six force-torque sensors, both soles) on a
trajectory of :class:`groundtruth.Trajectory` (constant joint accelerations: the node's finite
difference is exact; readings with each sensor's configured noise), fed message by message to the
:class:`~rbd_estimator.replay.Replayer` — the :class:`~rbd_estimator.runtime.session.Session` the
node runs. Faults injected into one force-torque sensor's messages: an offset ramping to 30 N over
2 s, a clip at ±200 N in single support. Truth: pinocchio's ``rnea`` of each frame.
"""
from __future__ import annotations

import numpy as np
import pytest
from groundtruth import Serializer, Trajectory
from kinds_truth import PinTruth

from rbd_estimator import SensorConfig, estimator_for, robots
from rbd_estimator.replay import Replayer
from rbd_estimator.runtime.params import NODE_KEYS

DT = 1_000_000                          # 1 kHz
SECONDS = 4.0
RECOVERY = 0.3                          # s: shorter than a step, so that a sensor can come back


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _walk(k: int):
    """Double support for 1 s, then 0.5 s on each foot in turn."""
    t = k * DT * 1e-9
    if t < 1.0:
        return np.array([True, True])
    left = int((t - 1.0) / 0.5) % 2 == 0
    return np.array([left, not left])


def parameters(params: dict, alpha: float) -> dict:
    return {**params, "fault_false_alarm_rate": alpha, "fault_recovery_time": RECOVERY}


def recorded(setup, fault=None, seconds: float = SECONDS):
    """The trajectory's messages, ``[[(topic, time, serialized), ...]]`` per tick (the sensors 0.1 ms
    before the joint state), on the topics of the configuration; ``fault(sensor, k, reading) →
    reading`` alters a force-torque sensor's."""
    xml, params, traj, _ = setup
    cfg = SensorConfig.from_parameters(params, node_keys=NODE_KEYS)
    topic = {s.name: s.topic for s in cfg.sensors}
    s, est = Serializer(), traj.est
    steps = []
    for k in range(int(seconds / (DT * 1e-9))):
        f = traj.frame(k)
        t, r = f["stamp"], f["readings"]
        step = [(topic["imu"], t - 100_000, s.imu(t, r.imu))]
        for i, n in enumerate(est.ft_names):
            w = r.ft[i] if fault is None else fault(n, k, r.ft[i].copy())
            step.append((topic[n], t - 100_000, s.wrench(t, w)))
        step.append((cfg.node.get("joint_states_topic", "/joint_states"), t,
                     s.joint_state(t, est.joint_names, f["q"], f["dq"])))
        steps.append(step)
    return steps


class Run:
    """One replay of the trajectory with a fault ``fault(sensor, k, reading) → reading``."""

    def __init__(self, setup, alpha: float, fault=None, seconds: float = SECONDS):
        xml, params, traj, truth = setup
        cfg = SensorConfig.from_parameters(parameters(params, alpha), node_keys=NODE_KEYS)
        self.rep = rep = Replayer(xml, cfg, collect=True)
        self.alarm_ticks, self.excluded = [], {}
        faults = rep.core.faults
        for k, step in enumerate(recorded(setup, fault, seconds)):
            alarms = faults.alarms
            for topic, t, raw in step:
                rep.feed(topic, raw, t)
            if faults.alarms > alarms:
                self.alarm_ticks.append(k)
            for n in faults.flagged:
                self.excluded.setdefault(n, []).append(k)
        res = rep.results()
        by_stamp = {traj.stamp(k): k for k in range(int(seconds / (DT * 1e-9)))}
        self.k = np.array([by_stamp[int(st)] for st in res["stamps"]])
        self.err = np.array([tau - truth.tau(traj.frame(k)) for k, tau in zip(self.k, res["tau"])])

    def rms(self, k0: int, k1: int) -> float:
        sel = (self.k >= k0) & (self.k < k1)
        return float(np.sqrt(np.mean(self.err[sel] ** 2)))


@pytest.fixture(scope="module")
def icub():
    xml = _read(robots.urdf_file("icub"))
    params = SensorConfig.from_yaml(robots.params_file("icub")).to_parameters()
    params.update(acceleration_cutoff_hz=0.0, oracle_every_n=0, fault_start_delay=0.0)
    cfg = SensorConfig.from_parameters(params, node_keys=NODE_KEYS)
    est = estimator_for(xml, cfg)
    traj = Trajectory(est, seed=5, noise=1.0, schedule=_walk)
    return xml, params, traj, PinTruth(xml, est, cfg)


def _drift(name, k, w):
    """l_leg_ft_sensor's force z offset ramping from 0 to 30 N over 2 s from t = 1 s."""
    if name == "l_leg_ft_sensor" and k >= 1000:
        w[2] += 30.0 * min(1.0, (k - 1000) / 2000)
    return w


def _clip(name, k, w):
    """r_foot_ft_sensor clipping its forces at ±200 N."""
    if name == "r_foot_ft_sensor":
        w[:3] = np.clip(w[:3], -200.0, 200.0)
    return w


@pytest.fixture(scope="module")
def clean(icub):
    return Run(icub, alpha=1e-6)


def test_on_clean_data_the_false_alarm_rate_is_at_most_the_configured_one(icub, clean):
    """With α = 1 % the per-tick alarm rate over 4000 ticks is α within its binomial spread (the
    residual's χ² has the right distribution, so the limit is right); with the default 1e-6 no tick
    alarms and no sensor is ever excluded."""
    loose = Run(icub, alpha=0.01, seconds=2.0)
    n = len(loose.k)
    rate = len(loose.alarm_ticks) / n
    print(f"\nclean data: {len(loose.alarm_ticks)} alarms in {n} ticks at α = 0.01 (rate {rate:.4f}); "
          f"α = 1e-6: {len(clean.alarm_ticks)} alarms in {len(clean.k)} ticks")
    assert rate <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / n)
    assert not clean.alarm_ticks and not clean.excluded and len(clean.k) == 3999     # the first starts the filter


def _check_isolated(run: Run, clean: Run, sensor: str, k_fault: int, what: str):
    ticks = run.excluded.get(sensor)
    assert ticks, f"{what}: {sensor} never excluded (excluded: {sorted(run.excluded)})"
    assert set(run.excluded) == {sensor}, run.excluded
    k_detect = ticks[0]
    after = run.rms(k_detect, 4000)
    base = clean.rms(k_detect, 4000)
    print(f"\n{what}: {sensor} excluded {(k_detect - k_fault) * DT * 1e-6:.0f} ms after the fault began; torque RMS "
          f"error after exclusion {after:.4f} N·m against {base:.4f} fault free ({after / base:.2f} ×)")
    assert k_detect >= k_fault
    assert after <= 2.0 * base
    return k_detect


def test_a_drifting_force_torque_sensor_is_flagged_and_excluded(icub, clean):
    """l_leg_ft_sensor's force z offset ramps from 0 to 30 N over 2 s from t = 1 s: flagged,
    excluded, and the torques after its exclusion as good as the fault-free ones (≤ 2 × their RMS
    error). No estimate is published from it after the alarm tick."""
    k0 = 1000
    run = Run(icub, alpha=1e-6, fault=_drift)
    k_detect = _check_isolated(run, clean, "l_leg_ft_sensor", k0, "offset ramp to 30 N over 2 s")
    assert run.excluded["l_leg_ft_sensor"] == list(range(k_detect, 4000))       # it never comes back
    est = run.rep.session.plans.lookup(frozenset({"l_leg_ft_sensor"}))[0]
    assert run.rep.core.plan_in_use is est                                     # the lost-sensor plan
    level, message, values = run.rep.session.diagnostics(4_000_000_000 + icub[2].stamp(0))
    assert "excluded as inconsistent l_leg_ft_sensor" in message and level >= 1
    assert values["faults/excluded"] == "l_leg_ft_sensor"


def test_a_clipping_force_torque_sensor_is_flagged_excluded_and_let_back(icub, clean):
    """r_foot_ft_sensor clips at ±200 N: in single support on the right foot its normal force is
    above that. Flagged when it clips, back in once it has been consistent for the recovery time."""
    first = next(k for k in range(4000) if abs(icub[2].frame(k)["readings"].ft[3][:3]).max() > 200.0)
    run = Run(icub, alpha=1e-6, fault=_clip)
    _check_isolated(run, clean, "r_foot_ft_sensor", first, "clipping at ±200 N")
    assert run.rep.core.faults.returns >= 1               # it came back when the foot unloaded


# ---------------------------------------------------------------------------- the node, end to end
@pytest.mark.parametrize("fault, sensor", [(_drift, "l_leg_ft_sensor"), (_clip, "r_foot_ft_sensor")],
                         ids=["drift", "clip"])
def test_the_node_flags_excludes_and_publishes_the_faulty_sensor(icub, fault, sensor):
    """The same through the live node (real rclpy, lockstep, iCub's shipped set): the node names the
    sensor on ``~/sensor_faults`` and in ``/diagnostics`` (DEGRADED), publishes every tick, and every
    estimate it publishes — from the sensor's exclusion on, the plan without it — equals the replay's
    of the same messages (the same Session)."""
    pytest.importorskip("rclpy")
    from lockstep import LockstepNode, wait
    from rclpy.serialization import deserialize_message
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import Imu, JointState
    xml, params, traj, _ = icub
    seconds = 1.7                                              # both faults are found before
    steps = recorded(icub, fault, seconds)
    types = {"Imu": Imu, "WrenchStamped": WrenchStamped, "JointState": JointState}
    cfg = SensorConfig.from_parameters(params, node_keys=NODE_KEYS)
    kind = {s.topic: ("Imu" if s.name == "imu" else "WrenchStamped") for s in cfg.sensors}
    msgs = [[(topic, deserialize_message(raw, types[kind.get(topic, "JointState")])) for topic, _, raw in step]
            for step in steps]
    flat = dict(parameters(params, 1e-6), robot_description=xml, prepare_fallbacks=True)
    for k in list(flat):
        if k.endswith(".timeout"):
            flat[k] = 5.0                                      # a test process's scheduling: no sensor goes stale
    with LockstepNode(flat, ["l_foot", "r_foot"], msgs[0], {s.topic: s.name for s in cfg.sensors}) as n:
        session = n.node.session
        assert wait(lambda: session.plans.single_losses_done, 60.0)     # the fallbacks, planned in the background
        for k, step in enumerate(msgs):
            assert n.step(step, expect_estimate=k > 0) or k == 0, f"no estimate at step {k}"
        assert wait(lambda: sensor in ", ".join(n.faults)), n.faults
        level, message, values = session.diagnostics(0)
        flagged = dict(session.core.faults.flagged)
        node_tau = dict(n.tau)
    run = Run(icub, alpha=1e-6, fault=fault, seconds=seconds)
    res = run.rep.results()
    assert sensor in flagged and set(run.excluded) == {sensor}
    print(f"\nnode: {sensor} excluded, ~/sensor_faults {n.faults}; {len(node_tau)} of {len(steps) - 1} ticks "
          f"published; /diagnostics: {message}")
    assert values["faults/exclusions"] >= 1 and level >= 1 and f"excluded as inconsistent {sensor}" in message
    assert len(node_tau) == len(steps) - 1 == len(res["stamps"])
    worst = max(float(np.abs(node_tau[int(st)] - tau).max()) for st, tau in zip(res["stamps"], res["tau"]))
    assert worst <= 1e-12, worst


def test_the_test_waits_for_the_derivative_filter_after_the_start():
    """The χ² test is off for ``fault_start_delay`` after the first estimate (data time: the joint
    states' stamps): the derivative filter's first accelerations are model error, not a sensor's
    fault; then an inconsistent estimate that no sensor's exclusion explains publishes nothing."""
    from types import SimpleNamespace as NS
    from rbd_estimator.runtime.faults import FaultMonitor
    events = []
    mon = FaultMonitor(1e-6, 1.0, lambda level, text: events.append(text), start_delay_s=0.1)
    plan = NS(missing=frozenset(), estimator=NS(config=NS(sensors=())))      # no sensor to exclude
    plans = NS(lookup=lambda missing: (None, "none"))
    bad = NS(chi2=1e6, dof=10)
    js = NS(stamp_ns=0)
    inputs = NS(joint_states=js)

    def screen(t_ms):
        js.stamp_ns = int(t_ms * 1e6)
        return mon.screen(NS(request_plan=None), inputs, plans, plan, bad, 0, None)
    assert screen(0) is not None and screen(99) is not None          # the start: no test yet
    assert screen(101) is None and mon.unexplained == 1               # then the test, and no single sensor
    mon.restart()                                                     # an activation: the delay again
    assert screen(300) is not None and screen(401) is None
    assert mon.alarms == 2 and "no single sensor explains it" in events[-1]
