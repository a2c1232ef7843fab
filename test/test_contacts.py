"""Contacts that come and go (walking): one plan per contact subset, chosen per tick; detection.

Ground truth: ``groundtruth.Trajectory`` with a gait schedule (pinocchio-independent reference
dynamics make the readings; the feet in the air carry no wrench) and ``groundtruth.GroundTruth``
(pinocchio) for random states per subset.
"""
from __future__ import annotations

import itertools
import re
import tracemalloc
from dataclasses import replace

import numpy as np
import pytest
from groundtruth import GroundTruth, Trajectory

from rbd_estimator import IllPosedError, SensorConfig, estimator_for, robots
from rbd_estimator.estimation import SwitchingEstimator
from rbd_estimator.estimation.config import FTConfig, LoadCellConfig
from rbd_estimator.estimation.config import ContactConfig


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def switchable(cfg: SensorConfig, mode="commanded", **kw) -> SensorConfig:
    return replace(cfg, contacts=tuple(replace(c, mode=mode, **kw) for c in cfg.contacts))


def _rel(a, b):
    return np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))


def biped_gait(k, period=40):
    """Double support, left single support, double support, right single support (``period`` ticks each)."""
    phase = (k // period) % 4
    return np.array([phase != 3, phase != 1])


def trot(k, period=30):
    """Trot: FL+RR in contact, all four, FR+RL in contact, all four (FL, FR, RL, RR order)."""
    phase = (k // period) % 4
    return np.array([phase != 2, phase != 0, phase != 0, phase != 2])


@pytest.fixture(scope="module")
def talos():
    xml = _read(robots.urdf_file("talos"))
    cfg = switchable(SensorConfig.from_yaml(robots.params_file("talos")))
    return xml, cfg, estimator_for(xml, cfg)


@pytest.fixture(scope="module")
def go2():
    xml = _read(robots.urdf_file("go2"))
    cfg = switchable(SensorConfig.from_yaml(robots.params_file("go2")))
    return xml, cfg, estimator_for(xml, cfg)


def test_switchable_contacts_give_one_plan_per_subset(talos, go2):
    for (_, cfg, est), n in ((talos, 4), (go2, 16)):
        assert isinstance(est, SwitchingEstimator)
        assert len(est.subsets) == n and all(p is not None for p in est.subsets), est.coverage()
        assert est.contact_names == tuple(c.name for c in cfg.contacts)
        for mask, p in enumerate(est.subsets):
            assert p.contact_names == est.subset_names(mask)


@pytest.mark.parametrize("robot", ["talos", "go2"])
def test_every_subset_matches_pinocchio_ground_truth(robot, talos, go2, request):
    """Random floating-base states (base velocity unknown to the estimator), noise free, every
    contact subset: the active contacts' wrenches and the joint torques ≤ 1e-9, the others zero."""
    xml, cfg, est = talos if robot == "talos" else go2
    gt = GroundTruth(xml, est)
    rng = np.random.default_rng(11)
    for active in itertools.product([False, True], repeat=len(cfg.contacts)):
        active = np.array(active)
        for _ in range(3):
            inputs, truth = _sample_with(gt, rng, active)      # the feet in the air carry no wrench
            r = est.estimate(**inputs, contacts=active)
            assert _rel(r.tau, truth["tau"]) <= 1e-9, (robot, active)
            assert _rel(r.contact_wrenches, truth["wrenches"]) <= 1e-9, (robot, active)
            assert np.array_equal(r.active, active)
            assert not r.contact_wrenches[~active].any()
            names = [n for n, on in zip(est.contact_names, active) if on]
            r2 = est.estimate(**inputs, contacts=names)          # names give the same subset
            assert _rel(r2.tau, truth["tau"]) <= 1e-9


def _sample_with(gt, rng, active):
    """``GroundTruth.sample`` with the wrenches of the inactive contacts zero."""
    orig = gt._random_wrenches
    gt._random_wrenches = lambda r, s: [w if on else np.zeros(6) for w, on in zip(orig(r, s), active)]
    try:
        return gt.sample(rng)
    finally:
        gt._random_wrenches = orig


@pytest.mark.parametrize("robot", ["humanoid", "go2"])
def test_walking_trajectory_with_commanded_contacts_is_exact_in_every_phase(robot, go2):
    """A time-consistent gait (the shipped humanoid alternating single and double support; Go2
    trotting): with the commanded contact state the estimate matches the truth in every phase."""
    if robot == "go2":
        est, schedule, n = go2[2], trot, 120
    else:
        cfg = switchable(SensorConfig.from_yaml(robots.params_file("humanoid")))
        est, schedule, n = estimator_for(_read(robots.urdf_file("humanoid")), cfg), biped_gait, 160
    traj = Trajectory(est, seed=3, schedule=schedule)
    worst = {}
    for k in range(0, n, 3):
        f = traj.frame(k)
        rd = f["readings"]
        r = est.estimate(f["q"], f["dq"], traj.a, imu=rd.imu, ft=rd.ft if len(rd.ft) else None,
                         joint_torques=rd.joint_torques if len(rd.joint_torques) else None, contacts=f["active"])
        key = tuple(f["active"])
        err = max(_rel(r.tau, f["tau"]), _rel(r.contact_wrenches, f["wrenches"]))
        worst[key] = max(worst.get(key, 0.0), err)
    assert len(worst) == 3, worst                    # every phase of the gait was visited
    assert max(worst.values()) <= 1e-9, worst


def test_ill_posed_full_set_is_accepted_when_single_supports_are_well_posed():
    """A biped with an IMU (with angular acceleration) and joint encoders only: double support is
    ill-posed (the split of the weight between the feet is undetermined), each single support is
    exact (6 base equations + 6 IMU rows determine the 6 base accelerations and the foot's wrench)."""
    xml = _read(robots.urdf_file("humanoid"))
    cfg = SensorConfig.from_yaml(robots.params_file("humanoid"))
    imu_only = cfg.without_kind(FTConfig, LoadCellConfig).with_sensor(replace(cfg.imu, use_angular_acceleration=True))
    with pytest.raises(IllPosedError):
        estimator_for(xml, imu_only)                         # fixed contacts: refused as before
    est = estimator_for(xml, switchable(imu_only))
    cov = est.coverage()
    names = est.contact_names
    assert "contact wrenches of" in cov["+".join(names)], cov        # double support: the reason
    assert cov[names[0]] is None and cov[names[1]] is None, cov      # single supports: planned
    with pytest.raises(IllPosedError, match=re.escape("+".join(names))):
        est.estimate(*(np.zeros(len(est.joint_names)),) * 3, imu=_still_imu(), contacts=names)
    assert est.subsets[0] is not None or cov["none"]
    traj = Trajectory(est, seed=4, schedule=biped_gait)
    checked = 0
    for k in range(40, 160, 7):
        f = traj.frame(k)
        if f["active"].all():
            continue
        rd = f["readings"]
        r = est.estimate(f["q"], f["dq"], traj.a, imu=rd.imu, contacts=f["active"])
        assert _rel(r.tau, f["tau"]) <= 1e-9 and _rel(r.contact_wrenches, f["wrenches"]) <= 1e-9
        checked += 1
    assert checked >= 8


def _still_imu():
    from rbd_estimator import ImuSample
    return ImuSample([0, 0, 0, 1], [0, 0, 0], [0, 0, 9.81], [0, 0, 0])


def test_contacts_argument_is_checked(talos):
    _, cfg, est = talos
    n = len(est.joint_names)
    with pytest.raises(ValueError, match="not a configured contact"):
        est.mask_of(["left_sole", "nose"])
    with pytest.raises(ValueError, match="expected 2 booleans"):
        est.mask_of([True, False, True])
    fixed = estimator_for(_read(robots.urdf_file("talos")), SensorConfig.from_yaml(robots.params_file("talos")))
    gt = GroundTruth(_read(robots.urdf_file("talos")), fixed)
    inputs, _ = gt.sample(np.random.default_rng(0))
    fixed.estimate(**inputs, contacts=[True, True])                # all active: fine
    with pytest.raises(ValueError, match="fixed"):
        fixed.estimate(**inputs, contacts=[True, False])
    assert n == len(fixed.joint_names)


def test_always_contact_cannot_be_switched_off():
    cfg = SensorConfig.from_yaml(robots.params_file("go2"))
    c = cfg.contacts
    cfg = replace(cfg, contacts=(c[0],) + tuple(replace(x, mode="commanded") for x in c[1:]))
    est = estimator_for(_read(robots.urdf_file("go2")), cfg)
    assert len(est.subsets) == 8
    with pytest.raises(ValueError, match="always"):
        est.mask_of([False, True, True, True])
    assert est.mask_of([True, False, True, True]) == 0b110


def test_switching_estimate_allocates_nothing_per_tick(go2):
    """Python-level allocation over many ticks that switch subsets (tracemalloc): nothing kept."""
    xml, cfg, est = go2
    traj = Trajectory(est, seed=1, schedule=trot)
    frames = [traj.frame(k) for k in (0, 31, 61, 91)]
    masks = [est.mask_of(f["active"]) for f in frames]
    args = [(f["q"], f["dq"], traj.a, f["readings"].imu, f["readings"].joint_torques, m) for f, m in zip(frames, masks)]
    for q, dq, a, imu, jt, m in args * 3:
        est.estimate(q, dq, a, imu=imu, joint_torques=jt, contacts=m)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(500):
        for q, dq, a, imu, jt, m in args:
            est.estimate(q, dq, a, imu=imu, joint_torques=jt, contacts=m)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert grown < 2048, grown


# ---------------------------------------------------------------------------- detection
def _detector(force_on=40.0, force_off=20.0, dwell=0.01):
    """A detector on one load-cell contact of the shipped humanoid."""
    cfg = SensorConfig.from_yaml(robots.params_file("humanoid"))
    contact = replace(cfg.contacts[0], mode="detected", force_on=force_on, force_off=force_off, dwell=dwell)
    cfg = replace(cfg, contacts=(contact,) + cfg.contacts[1:])
    est = estimator_for(_read(robots.urdf_file("humanoid")), cfg)
    return est, est.detector()


def test_detection_follows_touchdown_and_liftoff_within_the_dwell_time():
    """A step with the demo's sensor noise: the detected state equals the true one except within
    the dwell time after each touchdown and lift-off."""
    est, det = _detector(dwell=0.01)
    rng = np.random.default_rng(5)
    dt = 1_000_000
    true = np.r_[np.zeros(100), np.ones(300), np.zeros(200), np.ones(100)].astype(bool)
    mismatches = []
    for k, on in enumerate(true):
        force = (300.0 if on else 0.0) + rng.normal(0, 3.0)       # N; the force-torque noise of the demo
        state = det.update([force], k * dt)[0]
        if state != on:
            mismatches.append(k)
    edges = np.flatnonzero(np.diff(true.astype(int))) + 1
    for k in mismatches:
        assert any(0 <= k - e <= 10 for e in edges), (k, edges)   # within 10 ms (the dwell) of an edge
    assert mismatches                                               # the dwell did delay the switches


def test_detection_does_not_chatter_when_the_force_crosses_the_threshold_slowly():
    """The normal force ramps slowly through the thresholds with noise: one switch each way."""
    _, det = _detector(force_on=40.0, force_off=20.0, dwell=0.005)
    rng = np.random.default_rng(6)
    up = np.linspace(0.0, 80.0, 4000)
    f = np.r_[up, up[::-1]] + rng.normal(0, 3.0, 8000)
    states = np.array([det.update([x], k * 1_000_000)[0] for k, x in enumerate(f)])
    switches = np.flatnonzero(np.diff(states.astype(int)))
    assert len(switches) == 2, switches
    assert f[switches[0] - 5:switches[0]].min() > 20.0          # turned on above the band's lower edge
    assert np.mean(f[switches[1] - 5:switches[1] + 1]) < 40.0


def test_detection_force_from_ft_sensor_and_load_cells_equals_the_normal_force():
    """The normal force a detector reads from a foot's force-torque sensor (its link carries the
    sole frame) and from its load cells equals the true contact force's z component when the foot is
    massless... within the foot's weight: checked against the truth with the foot's gravity."""
    xml = _read(robots.urdf_file("talos"))
    cfg = SensorConfig.from_yaml(robots.params_file("talos"))
    cfg = switchable(cfg, mode="detected")
    est = estimator_for(xml, cfg)
    det = est.detector()
    assert [s[0] for s in det.sources] == ["left_ankle_ft", "right_ankle_ft"]     # the ankle sensors above the soles
    gt = GroundTruth(xml, est)
    rng = np.random.default_rng(2)
    inputs, truth = gt.sample(rng, wrench_scale=400.0)
    fn = det.normal_forces(dict(zip(est.ft_names, inputs["ft"])))
    # the sensor also carries the foot's weight and inertia: the difference is bounded by them
    assert np.all(np.abs(fn - truth["wrenches"][:, 2]) < 0.25 * np.abs(truth["wrenches"][:, 2]).max()), \
        (fn, truth["wrenches"][:, 2])


def test_contact_parameters_are_checked():
    from rbd_estimator import ConfigError
    base = {"floating_base": True, "imu": {"frame": "base"}, "contacts": ["a"], "contact": {"a": {"frame": "foot"}}}
    SensorConfig.from_dict(base)
    for extra, msg in [({"mode": "sometimes"}, "contact.a.mode"),
                       ({"mode": "detected", "force_on": 10.0, "force_off": 20.0}, "force_off"),
                       ({"mode": "detected", "dwell": -1.0}, "contact.a.dwell"),
                       ({"mode": "commanded", "detect_from": "x"}, "detect_from")]:
        p = {**base, "contact": {"a": {"frame": "foot", **extra}}}
        with pytest.raises(ConfigError, match=msg):
            SensorConfig.from_dict(p)
    many = {**base, "contacts": [f"c{k}" for k in range(7)],
            "contact": {f"c{k}": {"frame": "foot", "mode": "commanded"} for k in range(7)}}
    with pytest.raises(ConfigError, match="at most 6"):
        SensorConfig.from_dict(many)
    cfg = SensorConfig.from_dict({**base, "contact": {"a": {"frame": "foot", "mode": "detected", "dwell": 0.02}}})
    assert SensorConfig.from_parameters(cfg.to_parameters()).contacts == cfg.contacts
    assert isinstance(cfg.contacts[0], ContactConfig) and cfg.switchable_contacts == ("a",)


def test_replay_of_a_trotting_recording_follows_the_commanded_contacts(go2, tmp_path):
    """The replay (the node's tick logic) of a recorded trot with its contact commands: every
    estimate equals the truth of its phase, the feet in the air have zero wrenches, and the output
    bag's ``~/contact_state`` (read by rosbags) says which feet were down and that the command decided."""
    pytest.importorskip("rosbags")
    from groundtruth import Serializer
    from rosbags.rosbag2 import Reader, Writer

    from rbd_estimator.replay import replay_bag
    xml, cfg, est = go2
    traj = Trajectory(est, seed=7, schedule=lambda k: trot(k, period=8))
    ser = Serializer()
    bag, n, last = str(tmp_path / "trot"), 40, None
    with Writer(bag, version=9) as w:
        conn = {t: w.add_connection(t, m, typestore=ser.ts) for t, m in (
            ("/contact_command", "sensor_msgs/msg/JointState"), ("/imu", "sensor_msgs/msg/Imu"),
            ("/joint_states", "sensor_msgs/msg/JointState"))}
        for k in range(n):
            f = traj.frame(k)
            t = f["stamp"]
            if last is None or not np.array_equal(last, f["active"]):
                w.write(conn["/contact_command"], t,
                        ser.joint_state(t, est.contact_names, f["active"].astype(float)))
                last = f["active"]
            w.write(conn["/imu"], t, ser.imu(t, f["readings"].imu))
            w.write(conn["/joint_states"], t + 1000, ser.joint_state(t, est.joint_names, f["q"], f["dq"], f["effort"]))
    out = str(tmp_path / "out")
    summary, rep = replay_bag(bag, out, cfg, xml, collect=True)
    assert not summary.error and len(rep.tau) == n - 1 and rep.contacts.switches >= 3
    for stamp, tau, w in zip(rep.stamps, rep.tau, rep.wrenches):
        truth = traj.frame((stamp - traj.t0_ns) // traj.dt_ns)
        assert _rel(tau, truth["tau"]) <= 1e-9 and _rel(w, truth["wrenches"]) <= 1e-9
        assert not w[~truth["active"]].any()
    states = {}
    with Reader(out) as r:
        conns = [c for c in r.connections if c.topic == "/rbd_estimator/contact_state"]
        assert len(conns) == 1 and conns[0].msgtype == "sensor_msgs/msg/JointState"
        for c, _, raw in r.messages(connections=conns):
            m = ser.ts.deserialize_cdr(raw, c.msgtype)
            states[m.header.stamp.sec * 10**9 + m.header.stamp.nanosec] = m
    assert sorted(states) == list(rep.stamps)                      # one state per tick
    for stamp, m in states.items():
        truth = traj.frame((stamp - traj.t0_ns) // traj.dt_ns)
        assert list(m.name) == list(est.contact_names)
        assert np.array_equal(m.position > 0.5, truth["active"]) and np.all(m.velocity == 1.0)   # 1: commanded


def test_knowing_the_feet_in_the_air_lowers_the_error_with_noisy_sensors(go2):
    """Go2 with its 12 motor torques (redundant sensing), the demo's noise (each reading with its
    configured standard deviation), a trot: the switching estimator, told which feet are in the
    air, has a lower RMS error of the contact forces and of the joint torques than the fixed
    four-contact estimator, which spreads force onto the feet in the air."""
    xml, cfg, est = go2
    fixed = estimator_for(xml, SensorConfig.from_yaml(robots.params_file("go2")))
    traj = Trajectory(est, seed=9, schedule=trot, noise=1.0)
    err = {"switching": ([], []), "fixed": ([], [])}
    for k in range(0, 240, 2):
        f = traj.frame(k)
        rd = f["readings"]
        for name, e, kw in (("switching", est, {"contacts": f["active"]}), ("fixed", fixed, {})):
            r = e.estimate(f["q"], f["dq"], traj.a, imu=rd.imu, joint_torques=rd.joint_torques, **kw)
            err[name][0].append(r.contact_wrenches[:, :3] - f["wrenches"][:, :3])
            err[name][1].append(r.tau - f["tau"])
    rms = {n: (float(np.sqrt(np.mean(np.square(w)))), float(np.sqrt(np.mean(np.square(t)))))
           for n, (w, t) in err.items()}
    print(f"\nGo2 trot, noisy sensors: RMS contact-force error {rms['switching'][0]:.3f} N with the contact state vs "
          f"{rms['fixed'][0]:.3f} N with the fixed full set; joint torques {rms['switching'][1]:.4f} vs "
          f"{rms['fixed'][1]:.4f} N·m")
    assert rms["switching"][0] < rms["fixed"][0] and rms["switching"][1] < rms["fixed"][1], rms


def test_sensor_loss_during_walking_finds_the_plan_of_each_subset_or_says_why():
    """The node's tick logic (replay, per message) on the walking humanoid with commanded contacts
    (IMU with angular acceleration); the four leg force-torque sensors go silent. Then each single
    support is still exact with the IMU (the plan of that subset without those sensors); double
    support is ill-posed without them: no estimate, the reason recorded."""
    pytest.importorskip("rosbags")
    from groundtruth import Serializer

    from rbd_estimator.replay import Replayer
    xml = _read(robots.urdf_file("humanoid"))
    cfg = SensorConfig.from_yaml(robots.params_file("humanoid"))
    cfg = switchable(cfg.with_sensor(replace(cfg.imu, use_angular_acceleration=True)))
    est = estimator_for(xml, cfg)
    traj = Trajectory(est, seed=8, schedule=biped_gait)
    rep = Replayer(xml, cfg, collect=True)
    changes = []
    rep.core.on_subset_changed = lambda label, reason: changes.append((label, reason))
    ser = Serializer()
    lost, last = ("l_leg_ft_sensor", "l_foot_ft_sensor", "r_leg_ft_sensor", "r_foot_ft_sensor"), None
    for k in range(280):
        f = traj.frame(k)
        t, rd = f["stamp"], f["readings"]
        if last is None or not np.array_equal(last, f["active"]):
            rep.feed("/contact_command", ser.joint_state(t, est.contact_names, f["active"].astype(float)), t)
            last = f["active"]
        rep.feed("/imu", ser.imu(t, rd.imu), t)
        for name, w in zip(est.ft_names, rd.ft):
            if not (k >= 60 and name in lost):
                rep.feed(f"/ft/{name}", ser.wrench(t, w), t)
        rep.feed("/joint_states", ser.joint_state(t, est.joint_names, f["q"], f["dq"]), t + 1000)
    got = {(s - traj.t0_ns) // traj.dt_ns: (tau, w) for s, tau, w in zip(rep.stamps, rep.tau, rep.wrenches)}
    after = range(120, 280)                                               # the sensors are missing by then
    single = [k for k in after if not biped_gait(k).all()]
    double = [k for k in after if biped_gait(k).all()]
    assert single and all(k in got for k in single)
    for k in single:
        tau, w = got[k]
        truth = traj.frame(k)
        assert _rel(tau, truth["tau"]) <= 1e-9 and _rel(w, truth["wrenches"]) <= 1e-9
    assert double and not any(k in got for k in double)
    reasons = dict(changes)
    assert reasons.get("l_foot+r_foot") and "l_foot" in reasons["l_foot+r_foot"], changes
    assert rep.core.ill_posed_subset_ticks >= len(double)


def test_mimic_robot_with_switchable_contacts():
    """A URDF with mimic joints (Talos with its grippers, ``talos_full_v2``) gives a LoopEstimator
    whose tree estimator switches contacts; the node's contact state sees it as switchable."""
    import os

    from rbd_estimator.estimation import LoopEstimator
    from rbd_estimator.runtime.contact_state import ContactState
    path = os.path.join(os.path.dirname(robots.urdf_file("talos")), "talos_full_v2.urdf")
    cfg = switchable(SensorConfig.from_yaml(robots.params_file("talos")))
    est = estimator_for(_read(path), cfg)
    assert isinstance(est, LoopEstimator) and isinstance(est.estimator, SwitchingEstimator)
    assert ContactState(est).switchable
    assert all(r is None for r in est.estimator.coverage().values())
    n = len(est.joint_names)
    r = est.estimate(np.zeros(n), np.zeros(n), np.zeros(n), imu=_still_imu(),
                     ft=np.zeros((len(est.ft_names), 6)), contacts=est.contact_names[:1])
    assert not r.contact_wrenches[1].any() and np.isfinite(r.tau).all()


def test_contact_commands_hold_until_the_next_and_time_out(go2):
    """The node's contact state (``runtime/contact_state.py``): before any command every commanded
    contact is in contact; a command holds until the next; after ``contact_command_timeout`` the
    commanded contacts are taken as in contact again, with source 3 (timed out); unknown names are
    counted, not applied."""
    from rbd_estimator.runtime.contact_state import COMMAND_TIMED_OUT, COMMANDED, ContactState
    _, _, est = go2
    cs = ContactState(est, command_timeout=0.5)
    ms = 1_000_000
    assert cs.update(None, 0) == est.mask_of(None)                     # no command yet: all in contact
    cs.command(["FL", "RR", "nose"], [1.0, 0.0, 1.0], 10 * ms)
    assert cs.unknown_commands == 1
    m = cs.update(None, 11 * ms)
    assert est.subset_names(m) == ("FL", "FR", "RL") and np.all(cs.source == COMMANDED)
    assert cs.update(None, 400 * ms) == m and cs.switches == 1         # held
    assert cs.update(None, 511 * ms) == est.mask_of(None)              # timed out
    assert np.all(cs.source == COMMAND_TIMED_OUT) and cs.switches == 2
    assert cs.time_in["FL+FR+RL"] == pytest.approx(0.5)
