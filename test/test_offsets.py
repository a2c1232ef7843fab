"""Issue 21 item 1: online offset tracking (rbd_estimator/estimation/offsets.py, docs/offsets.md).

Simulated gaits with the project's simulator: the shipped humanoid walking (``demo.simulate``:
PD-tracked joints, the gait's swing legs, its readings from ``synthetic.measure``) and Go2 trotting
(``groundtruth.Trajectory``, pinocchio truth). Offsets are added to the readings — a 20 N step and a
10 N/min ramp — and must be tracked within 1 N after 10 s of gait; torques with tracking within
1.2 × the offset-free estimate's RMS error. With no offset, 5 min standing (1 kHz, 300,000 ticks)
and 5 min walking (25 Hz, 7,500 ticks: the gait's reference motion prescribed, no integration —
the simulator's PD servo needs 500 Hz and costs 2.3 ms a step; the prescribed states cost 7 ms a
tick) leave the tracked offsets
within three posterior standard deviations. A sensor alone in seeing a contact wrench keeps its
offset and its prior variance. Figures print with ``-s``.
"""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
from groundtruth import Trajectory

from rbd_estimator import SensorConfig, estimator_for, robots
from rbd_estimator.demo import _support_wrenches, _swing_offsets, gait, nominal_pose, simulate
from rbd_estimator.estimation.measurements import ImuSample
from rbd_estimator.estimation.offsets import OffsetTracker
from rbd_estimator.estimation.synthetic import consistent_base_acceleration, measure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUMANOID = os.path.join(ROOT, "urdf", "humanoid.urdf")
RHO = 0.1                  # N/√s: each tracked force's drift rate (torques: RHO / 20 N·m/√s)
STEP, RAMP = 20.0, 10.0 / 60.0          # N, N/s
GAIT_RATE = 500.0          # Hz of the humanoid's 11 s walk (the simulator's cost; the filter is in continuous time)
TROT_RATE = 250.0          # Hz of Go2's 11 s trot (the pinocchio trajectory costs 17 ms a frame)


def _read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def with_drift(cfg, names, rho=RHO):
    """``cfg`` with the force-torque sensors ``names`` tracking their offsets."""
    return replace(cfg, sensors=tuple(replace(s, force_offset_drift=rho, torque_offset_drift=rho / 20)
                                      if s.name in names else s for s in cfg.sensors))


def commanded(cfg):
    return replace(cfg, contacts=tuple(replace(c, mode="commanded") for c in cfg.contacts))


@pytest.fixture(scope="module")
def humanoid():
    xml = _read(HUMANOID)
    cfg = commanded(SensorConfig.from_yaml(os.path.join(ROOT, "config", "humanoid.yaml")))
    return xml, cfg


@pytest.fixture(scope="module")
def walk(humanoid):
    xml, cfg = humanoid
    return simulate(xml, cfg, 11.0, GAIT_RATE, 1.0, seed=0, log=lambda *a: None)


def _offset(t):
    """The injected offsets at time ``t``: a 20 N step at 0.5 s, a 10 N/min ramp from 0."""
    return (STEP if t >= 0.5 else 0.0), RAMP * t


def _rms(e, start):
    return float(np.sqrt(np.mean(np.asarray(e)[start:] ** 2)))


def test_humanoid_walking_tracks_a_step_and_a_ramp(humanoid, walk):
    """l_foot_ft_sensor fz steps by 20 N at 0.5 s, r_foot_ft_sensor fx drifts 10 N/min: both tracked
    within 1 N over the last second (10–11 s of gait), the other components stay near 0; torques
    with tracking within 1.2 × the offset-free estimate's RMS error."""
    xml, cfg = humanoid
    rec = walk
    tracked = with_drift(cfg, ("l_foot_ft_sensor", "r_foot_ft_sensor"))
    est, plain = estimator_for(xml, tracked), estimator_for(xml, cfg)
    tr = OffsetTracker(tracked)
    il, ir = est.ft_names.index("l_foot_ft_sensor"), est.ft_names.index("r_foot_ft_sensor")
    jl, jr = tr.labels.index("l_foot_ft_sensor fz"), tr.labels.index("r_foot_ft_sensor fx")
    n, dt = len(rec.q), rec.dt
    err_tracked, err_free, err_untracked, track = [], [], [], []
    for k in range(n):
        t = k * dt
        imu = ImuSample(*rec.imu[k])
        F = rec.ft[k].copy()
        step, ramp = _offset(t)
        F[il, 2] += step
        F[ir, 0] += ramp
        y = est.measurements.fill(imu=imu, ft=F).copy()
        r = tr.estimate(est, rec.q[k], rec.dq[k], rec.ddq[k], y, dt, contacts=rec.active[k])
        err_tracked.append(r.tau - rec.tau[k])
        r0 = plain.estimate(rec.q[k], rec.dq[k], rec.ddq[k], imu=imu, ft=rec.ft[k], contacts=rec.active[k])
        err_free.append(r0.tau - rec.tau[k])
        r1 = plain.estimate(rec.q[k], rec.dq[k], rec.ddq[k], imu=imu, ft=F, contacts=rec.active[k])
        err_untracked.append(r1.tau - rec.tau[k])
        track.append((t, tr.offsets[jl] - step, tr.offsets[jr] - ramp, np.abs(np.delete(tr.offsets, [jl, jr])).max()))
    track = np.array(track)
    last = track[track[:, 0] >= 10.0]
    start = int(2.0 / dt)
    rms_t, rms_0, rms_u = _rms(err_tracked, start), _rms(err_free, start), _rms(err_untracked, start)
    print(f"\nhumanoid walking ({GAIT_RATE:g} Hz, {n} ticks): over 10–11 s, |tracked − true| step "
          f"{np.abs(last[:, 1]).max():.3f} N, ramp {np.abs(last[:, 2]).max():.3f} N, other components "
          f"≤ {last[:, 3].max():.3f}; torque RMS after 2 s: tracked {rms_t:.4f}, offset-free {rms_0:.4f} "
          f"({rms_t / rms_0:.3f} ×), offsets untracked {rms_u:.4f} N·m; "
          f"{tr.refreshes} observability updates, {tr.updates} filter updates")
    assert np.abs(last[:, 1]).max() < 1.0 and np.abs(last[:, 2]).max() < 1.0
    assert last[:, 3].max() < 1.0
    assert rms_t <= 1.2 * rms_0
    assert rms_u > 3 * rms_0                   # the offsets matter: untracked they spoil the torques


def go2_config(drift: dict):
    """Go2 (IMU, 12 joint torques) with a normal-force sensor under each foot (``<foot>_fz``,
    σ 1 N), commanded contacts; ``drift``: ``{sensor: ρ}``."""
    p = SensorConfig.from_yaml(robots.params_file("go2")).to_parameters()
    feet = ("FL", "FR", "RL", "RR")
    p["foot_force_sensors"] = [f"{f}_fz" for f in feet]
    for f in feet:
        p[f"foot_force.{f}_fz.contact"] = f
        p[f"foot_force.{f}_fz.stddev"] = 1.0
        p[f"contact.{f}.mode"] = "commanded"
    for name, rho in drift.items():
        p[f"foot_force.{name}.offset_drift"] = rho
    return SensorConfig.from_parameters(p)


def trot(k, period):
    """FL+RR in contact, all four, FR+RL, all four (``period`` ticks each)."""
    phase = (k // period) % 4
    return np.array([phase != 2, phase != 0, phase != 0, phase != 2])


def test_go2_trotting_tracks_a_step_and_a_ramp():
    """Go2 trotting (0.4 s cycle): FL_fz steps by 20 N at 0.5 s, RR_fz drifts 10 N/min; both
    tracked within 1 N over 10–11 s; torques with tracking within 1.2 × offset-free."""
    xml = _read(robots.urdf_file("go2"))
    cfg = go2_config({"FL_fz": RHO, "RR_fz": RHO})
    est, plain = estimator_for(xml, cfg), estimator_for(xml, go2_config({}))
    dt = 1.0 / TROT_RATE
    traj = Trajectory(est, seed=3, dt_ns=int(round(dt * 1e9)), noise=1.0,
                      schedule=lambda k: trot(k, int(round(0.1 / dt))))
    traj.a *= 0.05                   # a gentle motion for 11 s (constant joint accelerations)
    traj.v0 *= 0.3
    traj.alpha *= 0.05
    traj.w0 *= 0.3
    tr = OffsetTracker(cfg)
    n = int(round(11.0 / dt)) + 1
    err = {"tracked": [], "free": []}
    track = []
    for k in range(n):
        t = k * dt
        f = traj.frame(k)
        r = f["readings"]
        step, ramp = _offset(t)
        other = {name: np.array(v, dtype=float) for name, v in r.readings.items()}
        other["FL_fz"] = other["FL_fz"] + step
        other["RR_fz"] = other["RR_fz"] + ramp
        ddq = f["state"][2][6:]
        y = est.measurements.fill(imu=r.imu, joint_torques=r.joint_torques, readings=other).copy()
        e = tr.estimate(est, f["q"], f["dq"], ddq, y, dt, contacts=f["active"])
        err["tracked"].append(e.tau - f["tau"])
        e0 = plain.estimate(f["q"], f["dq"], ddq, imu=r.imu, joint_torques=r.joint_torques, readings=r.readings,
                            contacts=f["active"])
        err["free"].append(e0.tau - f["tau"])
        track.append((t, tr.offsets[0] - step, tr.offsets[1] - ramp))
    track = np.array(track)
    last = track[track[:, 0] >= 10.0]
    start = int(2.0 / dt)
    rms_t, rms_0 = _rms(err["tracked"], start), _rms(err["free"], start)
    print(f"\nGo2 trotting ({TROT_RATE:g} Hz, {n} ticks): over 10–11 s |tracked − true| FL_fz step "
          f"{np.abs(last[:, 1]).max():.3f} N, RR_fz ramp {np.abs(last[:, 2]).max():.3f} N; torque RMS after 2 s: "
          f"tracked {rms_t:.4f}, offset-free {rms_0:.4f} N·m ({rms_t / rms_0:.3f} ×)")
    assert tr.labels == ("FL_fz fz", "RR_fz fz")
    assert np.abs(last[:, 1]).max() < 1.0 and np.abs(last[:, 2]).max() < 1.0
    assert rms_t <= 1.2 * rms_0


def _arm(torque_sensors: bool):
    """The shipped fixed-base arm (wrist force-torque sensor, tool contact) tracking the wrist
    sensor's offsets; with ``torque_sensors``, a joint-torque sensor on every joint (σ 0.1 N·m)."""
    p = SensorConfig.from_yaml(robots.params_file("arm")).to_parameters()
    p.update({"ft.wrist_ft_sensor.force_offset_drift": RHO, "ft.wrist_ft_sensor.torque_offset_drift": RHO / 20})
    xml = _read(robots.urdf_file("arm"))
    if torque_sensors:
        p["joint_torque_sensors"] = list(estimator_for(xml, SensorConfig.from_parameters(p)).joint_names)
    return xml, SensorConfig.from_parameters(p)


@pytest.mark.parametrize("torque_sensors", [False, True])
def test_an_offset_that_only_its_contact_explains_does_not_move(torque_sensors):
    """The arm's tool wrench is seen by the wrist force-torque sensor alone: the sensor's offset
    columns lie in the span of the tool wrench's (their projection onto its complement is zero),
    so a 10 N offset is absorbed by the tool wrench (nothing can tell them apart) and the tracked
    offset must not move: it stays at its start, its variance grows by the drift alone. With a
    joint-torque sensor on every joint the torques determine the tool wrench too: the same offset is
    then observable and tracked."""
    xml, cfg = _arm(torque_sensors)
    est = estimator_for(xml, cfg)
    m = est.model
    rng = np.random.default_rng(5)
    offset = np.array([10.0, -5.0, 8.0, 0.3, 0.2, -0.3])
    start = np.array([3.0, -2.0, 1.0, 0.1, 0.0, -0.1])
    tr = OffsetTracker(cfg, initial={"wrist_ft_sensor": start})
    P0 = tr.variance.copy()
    q0, dt, n = rng.uniform(-1, 1, m.nq), 1e-3, 2000
    for k in range(n):
        t = k * dt
        q = q0 + 0.3 * np.sin(2 * np.pi * 0.5 * t + np.arange(m.nq))
        v = 0.3 * 2 * np.pi * 0.5 * np.cos(2 * np.pi * 0.5 * t + np.arange(m.nq))
        a = -(2 * np.pi * 0.5) ** 2 * (q - q0)
        W = np.array([[5.0 * np.sin(t), 2.0, -20.0, 0.1, 0.5 * np.cos(t), 0.0]])
        r = measure(est, q, v, a, W, rng=rng, noise=1.0)
        y = est.measurements.fill(ft=r.ft + offset, joint_torques=r.joint_torques if torque_sensors else None).copy()
        tr.estimate(est, q, v, a, y, dt)
    moved = np.abs(tr.offsets - start).max()
    grown = tr.variance - P0
    expected = tr.drift ** 2 * dt * n
    err = np.abs(tr.offsets - offset)
    print(f"\narm, {'joint torques on every joint' if torque_sensors else 'the wrist sensor alone sees the tool'}: "
          f"{tr.last.k} of 6 directions observable; offset moved {moved:.3g} from its start, error "
          f"{err[:3].max():.3f} N, {err[3:].max():.4f} N·m; variance grew by {grown.max():.4g} "
          f"(the drift alone: {expected.max():.4g})")
    if not torque_sensors:
        assert tr.last.k == 0
        assert moved < 1e-12
        assert np.allclose(grown, expected, rtol=1e-9, atol=0)
    else:
        assert tr.last.k == 6
        assert err[:3].max() < 0.5 and err[3:].max() < 0.05


def _standing(est):
    """The humanoid standing still in its nominal pose on both feet: ``(q, v, a)`` (pinocchio
    layout) and the noise-free readings."""
    m = est.model
    q = m.neutral_configuration()
    q[m.joint_v_index + 1] = nominal_pose(m.joint_names)
    q[2] = 0.95
    v, a = np.zeros(m.nv), np.zeros(m.nv)
    weight = sum(float(I[5, 5]) for I in m.inertias) * 9.81
    W = _support_wrenches(m, q, est.contact_frames, weight, [0.5, 0.5])
    a[:6] = consistent_base_acceleration(est, q, v, a, W)
    return q, v, a, measure(est, q, v, a, W)


def _noise_scale(est) -> np.ndarray:
    """The configured standard deviation of every entry of ``y`` that has noise (force-torque
    readings, accelerometer), 0 elsewhere (orientation, gyro: kinematic inputs)."""
    s = np.zeros(est.measurements.size)
    for sensor in est.config.sensors:
        sl = est.measurements.slice(sensor.name)
        if sensor.name == "imu":
            s[sl.start + 7:sl.start + 10] = sensor.linear_acceleration_stddev
        else:
            s[sl] = sensor.entry_stddevs()
    return s


def test_five_minutes_standing_still_leave_no_false_drift(humanoid):
    """No offset, 5 min standing still at 1 kHz (300,000 ticks, readings with the configured noise):
    every tracked offset of the two foot sensors stays within 3 posterior standard deviations."""
    xml, cfg = humanoid
    cfg = with_drift(cfg, ("l_foot_ft_sensor", "r_foot_ft_sensor"))
    est = estimator_for(xml, cfg)
    q, v, a, r = _standing(est)
    y0 = est.measurements.fill(imu=r.imu, ft=r.ft).copy()
    scale = _noise_scale(est)
    rng = np.random.default_rng(11)
    tr = OffsetTracker(cfg)
    dt, n, chunk = 1e-3, 300_000, 10_000
    worst = 0.0
    active = np.array([True, True])
    for c in range(n // chunk):
        noise = rng.standard_normal((chunk, y0.size)) * scale
        for k in range(chunk):
            tr.estimate(est, q[7:], v[6:], a[6:], y0 + noise[k], dt, contacts=active)
        worst = max(worst, float(np.max(np.abs(tr.offsets) / np.sqrt(tr.variance))))
    sd = np.sqrt(tr.variance)
    z = np.abs(tr.offsets) / sd
    print(f"\nstanding still 5 min at 1 kHz: tracked offsets at the end ≤ {np.abs(tr.offsets[:3]).max():.3f} N "
          f"(force), {np.abs(tr.offsets[3:6]).max():.4f} N·m; posterior σ {sd[:3].max():.3f} N, "
          f"{sd[3:6].max():.4f} N·m; |offset|/σ ≤ {z.max():.2f} at the end, ≤ {worst:.2f} every 10 s")
    assert z.max() < 3.0
    assert worst < 4.5


def walking_states(est, seconds: float, rate: float, seed: int = 4):
    """The humanoid's walk (``demo.gait``: double and single support, the swing foot lifting; the
    demo's joint sinusoids) as prescribed motion: per tick the joints exactly on the reference
    ``(q, q̇, q̈)``, the base still in its pose with the acceleration that balances the support
    wrenches of the feet in contact (``synthetic.consistent_base_acceleration``). No integration, so
    any tick rate: each tick's readings are exact for its state. Yields ``(q, v, a, active, W)``
    (pinocchio layout)."""
    m = est.model
    rng = np.random.default_rng(seed)
    n = m.n_joints
    amp, freq, phase = rng.uniform(0.05, 0.25, n), rng.uniform(0.3, 1.0, n), rng.uniform(0, 2 * np.pi, n)
    q_nom = nominal_pose(m.joint_names)
    jq, jv = m.joint_v_index + 1, m.joint_v_index
    weight = sum(float(I[5, 5]) for I in m.inertias) * 9.81
    base = m.neutral_configuration()
    base[2] = 0.95
    for k in range(int(round(seconds * rate)) + 1):
        t = k / rate
        w = 2 * np.pi * freq
        active, share, swing = gait(t)
        lift = _swing_offsets(m.joint_names, swing)
        q, v, a = base.copy(), np.zeros(m.nv), np.zeros(m.nv)
        q[jq] = q_nom + amp * np.sin(w * t + phase) + lift[0]
        v[jv] = amp * w * np.cos(w * t + phase) + lift[1]
        a[jv] = -amp * w * w * np.sin(w * t + phase) + lift[2]
        W = _support_wrenches(m, q, est.contact_frames, weight, share) * active[:, None]
        a[:6] = consistent_base_acceleration(est, q, v, a, W)
        yield q, v, a, active, W


def test_five_minutes_walking_leave_no_false_drift(humanoid):
    """No offset, 5 min of the humanoid's walk at 25 Hz (7,500 ticks, :func:`walking_states`,
    readings with the configured noise): every tracked offset of the two foot sensors within 3
    posterior standard deviations at the end, within 4.5 at every 10 s."""
    xml, cfg = humanoid
    cfg = with_drift(cfg, ("l_foot_ft_sensor", "r_foot_ft_sensor"))
    est = estimator_for(xml, cfg)
    tr = OffsetTracker(cfg)
    rng, rate, worst = np.random.default_rng(12), 25.0, 0.0
    for k, (q, v, a, active, W) in enumerate(walking_states(est, 300.0, rate)):
        r = measure(est, q, v, a, W, rng=rng, noise=1.0)
        y = est.measurements.fill(imu=r.imu, ft=r.ft).copy()
        tr.estimate(est, q[7:], v[6:], a[6:], y, 1.0 / rate, contacts=active)
        if k % 250 == 249:
            worst = max(worst, float(np.max(np.abs(tr.offsets) / np.sqrt(tr.variance))))
    sd = np.sqrt(tr.variance)
    z = np.abs(tr.offsets) / sd
    forces = [0, 1, 2, 6, 7, 8]
    print(f"\nwalking 5 min at 25 Hz: tracked offsets at the end ≤ {np.abs(tr.offsets[forces]).max():.3f} N, "
          f"{np.abs(tr.offsets[[3, 4, 5, 9, 10, 11]]).max():.4f} N·m; posterior σ ≤ {sd[:3].max():.3f} N, "
          f"{sd[3:6].max():.4f} N·m; |offset|/σ ≤ {z.max():.2f} at the end, ≤ {worst:.2f} every 10 s; "
          f"{tr.refreshes} observability updates")
    assert z.max() < 3.0
    assert worst < 4.5


def test_a_non_finite_reading_leaves_the_offsets_unchanged(humanoid):
    """A NaN in a reading is refused by the estimate (ValueError naming the entry, before any
    update): the tracked offsets and their variances are unchanged, and the next good tick updates
    them again."""
    xml, cfg = humanoid
    cfg = with_drift(cfg, ("l_foot_ft_sensor",))
    est = estimator_for(xml, cfg)
    q, v, a, r = _standing(est)
    y = est.measurements.fill(imu=r.imu, ft=r.ft).copy()
    tr = OffsetTracker(cfg)
    tr.estimate(est, q[7:], v[6:], a[6:], y, 1e-3)
    bad = y.copy()
    bad[est.measurements.slice("l_leg_ft_sensor").start] = np.nan
    o, P, updates = tr.offsets.copy(), tr.variance.copy(), tr.updates
    with pytest.raises(ValueError, match="l_leg_ft_sensor fx"):
        tr.estimate(est, q[7:], v[6:], a[6:], bad, 1e-3)
    assert np.array_equal(tr.offsets, o) and np.array_equal(tr.variance, P) and tr.updates == updates
    tr.estimate(est, q[7:], v[6:], a[6:], y, 1e-3)
    assert tr.updates == updates + 1 and np.isfinite(tr.offsets).all() and tr.last.m > 0
