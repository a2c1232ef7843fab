"""Demo: the estimator node on a simulated humanoid, compared with the ground truth.

    python -m rbd_estimator.demo [--duration 5] [--rate 1000] [--noise 1] [--stand] [--plot rbd_estimator_demo.png]
    bash scripts/quickstart.sh demo

1. **Simulate** (before anything is published): the shipped humanoid (``urdf/humanoid.urdf``,
   ``config/humanoid.yaml``) *walks in place*: it alternates double support and single support on
   each foot (:func:`gait`), the swing leg lifting its foot, while the feet in contact are pushed
   by prescribed wrenches that carry its weight (shared between them, upward, with torques that
   cancel its moment about the centre of mass; the foot in the air carries nothing). The walking
   controller's contact state is published on ``contact_command`` (``contact.<name>.mode:
   commanded``, see :mod:`rbd_estimator.runtime.contact_state`); ``--stand`` keeps both feet down.
   PD controllers with an inverse-dynamics
   feedforward (:func:`rbd_estimator.dynamics.rnea`) track joint sinusoids. The motion is integrated at ``--rate``
   with the package's own articulated-body algorithm (:func:`rbd_estimator.dynamics.aba`, floating
   base, semi-implicit Euler). The sensor readings of every step — joint states, IMU, the six
   force-torque sensors — come from :func:`rbd_estimator.estimation.synthetic.measure`, with
   Gaussian noise scaled by ``--noise`` (0: exact readings). The truth is the applied torques and
   foot wrenches.
2. **Run**: starts the node (``python -m rbd_estimator.node`` in a subprocess, its own namespace),
   configures and activates it through its ``change_state`` service as a user would, publishes
   the readings at ``--rate`` and records ``~/joint_torques`` and ``~/contact_wrenches/*``.
3. **Report**: RMS errors per joint and per contact against the truth of each estimate's stamp over
   the steady part (after the first :data:`STEADY_AFTER` seconds, when the PD servos' start-up
   transient and the acceleration filter have settled), and a plot of estimated versus true torques,
   wrenches and the contact state (``--plot``; matplotlib, Agg).

The errors without noise come from the node's acceleration filter (finite differences of the
published velocities, low-pass at ``acceleration_cutoff_hz``), the only approximation in the chain.
This module imports no ROS package itself: the ROS side is :mod:`rbd_estimator.ros.demo_runner`.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .dynamics import DynamicsData, aba, crba, rnea
from .dynamics.kinematics import joint_transform
from .spatial import inertia_from_mcI, plux
from .estimation import SensorConfig, estimator_for
from .runtime.params import NODE_KEYS

HERE = os.path.dirname(os.path.abspath(__file__))

#: Seconds of start-up transient left out of the reported errors.
STEADY_AFTER = 0.3
#: The gait: stride period (s), double-support share of each half stride, swing-foot lift (rad of knee).
STRIDE, DOUBLE_SUPPORT, LIFT = 1.0, 0.3, 0.5

#: Standard deviations of the sensor noise at ``--noise 1``.
NOISE = {"q": 1e-4, "dq": 1e-3, "gyro": 2e-3, "acc": 0.02, "force": 0.3, "torque": 0.02}


def share_file(kind: str, name: str) -> str:
    """A file shipped with the package: the source tree, or ``share/rbd_estimator`` when installed."""
    candidates = [os.path.join(os.path.dirname(HERE), kind, name)]
    candidates.append(os.path.join(sys.prefix, "share", "rbd_estimator", kind, name))
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(os.path.join(get_package_share_directory("rbd_estimator"), kind, name))
    except Exception:  # noqa: BLE001 - ament_index is optional
        pass
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"cannot find {kind}/{name} (looked in {', '.join(candidates)})")


# ============================================================================ simulation
@dataclass
class Recording:
    """What the simulated robot publishes, step by step, and the truth."""
    dt: float
    joint_names: tuple
    contact_names: tuple
    contact_frames: tuple
    ft_names: tuple
    q: np.ndarray = None              # (steps, n) joint positions (published, with noise)
    dq: np.ndarray = None             # (steps, n) joint velocities (published)
    ddq: np.ndarray = None            # (steps, n) true joint accelerations (the library's input in tests)
    imu: list = field(default_factory=list)      # (orientation xyzw, gyro, accelerometer) per step
    ft: np.ndarray = None             # (steps, n_ft, 6)
    tau: np.ndarray = None            # (steps, n) true joint torques
    wrenches: np.ndarray = None       # (steps, n_contacts, 6) true contact wrenches, contact frames
    active: np.ndarray = None         # (steps, n_contacts) contact state (the walking controller's)


def _quat_mul(a, b):
    """Hamilton product of ``[x, y, z, w]`` quaternions."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def _world_poses(model, q):
    """``(E, r)`` of every body: ``E`` rotates world into body coordinates, ``r`` is the body origin
    in the world (from ``ⁱX_0 = plux(E, r)``)."""
    NB = model.NB
    E, r = np.zeros((NB, 3, 3)), np.zeros((NB, 3))
    for i in range(NB):
        X = joint_transform(model, i, q)
        p = model.parents[i]
        X0 = X if p < 0 else X @ plux(E[p], r[p])
        E[i] = X0[:3, :3]
        S = -E[i].T @ X0[3:, :3]
        r[i] = [S[2, 1], S[0, 2], S[1, 0]]
    return E, r


def _support_wrenches(model, q, frames, weight, share):
    """Wrenches on the sole frames (each in its own frame) that carry the weight with no moment
    about the centre of mass: upward forces ``share[i] · weight``, and torques cancelling their
    moment in the same shares."""
    E, r = _world_poses(model, q)
    mass, com = 0.0, np.zeros(3)
    for i in range(model.NB):
        m_i, c_i, _ = inertia_from_mcI(model.inertias[i])
        mass += m_i
        com += m_i * (r[i] + E[i].T @ c_i)
    com /= mass
    f = [np.array([0.0, 0.0, a * weight]) for a in share]
    poses = []
    for name in frames:
        fr = model.frame(name)
        poses.append((fr.E @ E[fr.body], r[fr.body] + E[fr.body].T @ fr.r))
    moment = sum(np.cross(p - com, fi) for (_, p), fi in zip(poses, f))
    return np.array([np.concatenate([Ef @ fi, -a * (Ef @ moment)]) for (Ef, _), fi, a in zip(poses, f, share)])


def gait(t: float, walk: bool = True):
    """``(active, share, swing)`` at time ``t``: the feet in contact (left, right), the share of the
    weight each carries, and in single support the swing foot's lift profile ``(side, s, ṡ, s̈)``
    with ``s = sin⁴(π τ/T)`` over the swing of duration ``T`` (zero rate and acceleration at lift-off
    and touchdown, so that the joint accelerations stay continuous).
    The first :data:`STEADY_AFTER` seconds are double support with equal shares. Then each half
    stride starts with ``DOUBLE_SUPPORT`` of it in double support, during which the weight moves
    smoothly (cosine ramp) onto the foot that stays, so that the foot lifts unloaded, as in walking;
    then that foot swings (the left foot first, then the right)."""
    both = np.array([True, True])
    if not walk or t < STEADY_AFTER:
        return both, np.array([0.5, 0.5]), None
    half = STRIDE / 2
    u = t - STEADY_AFTER
    side, tau = (0, u % STRIDE) if u % STRIDE < half else (1, u % STRIDE - half)   # the foot that swings
    ds = DOUBLE_SUPPORT * half
    share = np.zeros(2)
    if tau < ds:
        start = 0.5 if u < half else 1.0               # its share when this double support began
        share[side] = start * 0.5 * (1.0 + np.cos(np.pi * tau / ds))
        share[1 - side] = 1.0 - share[side]
        return both, share, None
    T, x = half - ds, tau - ds
    w = np.pi / T
    active = both.copy()
    active[side] = False
    share[1 - side] = 1.0
    sn, cs = np.sin(w * x), np.cos(w * x)
    return active, share, (side, sn ** 4, 4 * w * sn ** 3 * cs, w * w * (12 * sn ** 2 * cs ** 2 - 4 * sn ** 4))


def _swing_offsets(names, swing):
    """Reference offsets ``(Δq, Δq̇, Δq̈)`` that lift the swing foot: hip flexes, knee bends, ankle follows."""
    n = len(names)
    d = np.zeros((3, n))
    if swing is None:
        return d
    side, *s = swing
    prefix = "lr"[side] + "_"
    for k, name in enumerate(names):
        for key, gain in (("hip_pitch", -0.5 * LIFT), ("knee", LIFT), ("ankle_pitch", -0.5 * LIFT)):
            if name == prefix + key:
                d[:, k] = gain * np.array(s)
    return d


def nominal_pose(names) -> np.ndarray:
    """A slightly crouched stance with bent elbows."""
    pose = {"hip_pitch": -0.35, "knee": 0.7, "ankle_pitch": -0.35, "elbow": -0.6, "shoulder_roll": 0.15}
    q = np.zeros(len(names))
    for k, n in enumerate(names):
        for key, val in pose.items():
            if n.endswith(key):
                q[k] = -val if (key == "shoulder_roll" and n.startswith("r_")) else val
    return q


def simulate(xml: str, config, duration: float, rate: float, noise: float, seed: int = 0, log=print,
             walk: bool = True) -> Recording:
    """Integrate the humanoid (PD-tracked joint sinusoids, the gait's swing legs, prescribed wrenches on
    the feet in contact) and record readings."""
    from .estimation.synthetic import measure

    est = estimator_for(xml, config)
    m = est.model
    rng = np.random.default_rng(seed)
    n, dt = m.n_joints, 1.0 / rate
    steps = int(round(duration * rate)) + 1
    jv = m.joint_v_index                        # joint k → index in v (and q − 1 for a floating base)
    jq = jv + 1
    q = m.neutral_configuration()
    q[jq] = q_nom = nominal_pose(m.joint_names)
    q[2] = 0.95
    v = np.zeros(m.nv)
    # PD gains from the joint-space inertia: a critically damped 4 Hz joint servo for every joint
    dyn = DynamicsData(m)                       # the buffers of rnea, aba, crba (pinocchio's Data)
    H = crba(m, q, data=dyn)
    h = np.diag(H)[jv]
    wn = 2 * np.pi * 4.0
    Kp, Kd = wn ** 2 * h, 2.0 * wn * h
    amp = rng.uniform(0.05, 0.25, n)
    freq = rng.uniform(0.3, 1.0, n)
    phase = rng.uniform(0, 2 * np.pi, n)
    weight = sum(float(I[5, 5]) for I in m.inertias) * 9.81
    soles = est.contact_frames
    rec = Recording(dt=dt, joint_names=est.joint_names, contact_names=est.contact_names,
                    contact_frames=soles, ft_names=est.ft_names)
    rec.q, rec.dq, rec.ddq, rec.tau = (np.zeros((steps, n)) for _ in range(4))
    rec.ft = np.zeros((steps, len(est.ft_names), 6))
    rec.wrenches = np.zeros((steps, len(soles), 6))
    rec.active = np.zeros((steps, len(soles)), dtype=bool)
    t_start, last = time.monotonic(), time.monotonic()
    tau_full = np.zeros(m.nv)
    for k in range(steps):
        t = k * dt
        s = np.sin(2 * np.pi * freq * t + phase)
        c = np.cos(2 * np.pi * freq * t + phase)
        w2 = (2 * np.pi * freq) ** 2
        active, share, swing = gait(t, walk)
        lift = _swing_offsets(m.joint_names, swing)
        q_ref, dq_ref, ddq_ref = q_nom + amp * s + lift[0], amp * 2 * np.pi * freq * c + lift[1], -amp * w2 * s + lift[2]
        # the soles in contact carry the weight with no moment about the centre of mass (no tumbling);
        # every step, so that the load moves smoothly from one foot to the other
        W = _support_wrenches(m, q, soles, weight, share)
        f_ext = {f: W[i] for i, f in enumerate(soles) if active[i]}
        # inverse-dynamics feedforward of the reference acceleration and of the foot wrenches
        # (computed as if the base did not accelerate), every step: the torques stay smooth
        a_ff = np.zeros(m.nv)
        a_ff[jv] = ddq_ref
        tau_ff = rnea(m, q, v, a_ff, f_ext, data=dyn)[jv]
        tau = Kp * (q_ref - q[jq]) + Kd * (dq_ref - v[jv]) + tau_ff
        tau_full[jv] = tau
        a = aba(m, q, v, tau_full, f_ext, data=dyn)
        r = measure(est, q, v, a, W)
        rec.q[k] = q[jq] + noise * NOISE["q"] * rng.normal(size=n)
        rec.dq[k] = v[jv] + noise * NOISE["dq"] * rng.normal(size=n)
        imu = r.imu
        rec.imu.append((np.array(imu.orientation),
                        np.array(imu.angular_velocity) + noise * NOISE["gyro"] * rng.normal(size=3),
                        np.array(imu.linear_acceleration) + noise * NOISE["acc"] * rng.normal(size=3)))
        ft = np.array(r.ft, dtype=float).reshape(-1, 6)
        ft[:, :3] += noise * NOISE["force"] * rng.normal(size=(len(ft), 3))
        ft[:, 3:] += noise * NOISE["torque"] * rng.normal(size=(len(ft), 3))
        rec.ft[k] = ft
        rec.tau[k] = tau
        rec.ddq[k] = a[jv]
        rec.wrenches[k] = W
        rec.active[k] = active
        # semi-implicit Euler; the base integrates its body velocity on SE(3) to first order
        v += a * dt
        q[jq] += v[jv] * dt
        x, y, z, w = q[3:7]
        R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                      [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                      [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
        q[0:3] += R @ v[0:3] * dt
        om = v[3:6] * dt
        angle = np.linalg.norm(om)
        dqt = np.concatenate([np.sin(angle / 2) * om / angle, [np.cos(angle / 2)]]) if angle > 1e-12 \
            else np.array([om[0] / 2, om[1] / 2, om[2] / 2, 1.0])
        qq = _quat_mul(q[3:7], dqt)
        q[3:7] = qq / np.linalg.norm(qq)
        if time.monotonic() - last > 5.0:
            last = time.monotonic()
            log(f"  simulated {k + 1}/{steps} steps ({time.monotonic() - t_start:.0f} s)")
    return rec


# ============================================================================ report
def rms_errors(rec: Recording, received: dict, stamps: np.ndarray, steady_after: float = STEADY_AFTER):
    """Per-joint and per-contact RMS errors over the estimates received after ``steady_after``
    seconds. ``received`` maps a stamp (ns) to ``(tau, wrenches)``; ``stamps[k]`` is the stamp of step ``k``."""
    index = {int(s): k for k, s in enumerate(stamps)}
    first = int(round(steady_after / rec.dt))
    ks = sorted(index[s] for s in received if s in index and index[s] >= first)
    if not ks:
        return None
    tau_est = np.array([received[int(stamps[k])][0] for k in ks])
    w_est = np.array([received[int(stamps[k])][1] for k in ks])
    tau_err = np.sqrt(np.mean((tau_est - rec.tau[ks]) ** 2, axis=0))
    w_err = np.sqrt(np.mean((w_est - rec.wrenches[ks]) ** 2, axis=0))
    return dict(steps=np.array(ks), tau_est=tau_est, w_est=w_est, tau_rms=tau_err, wrench_rms=w_err)


def print_report(rec: Recording, res, published: int, stats: dict, out=print, received: int | None = None) -> None:
    out("")
    n = len(res["steps"]) if received is None else received
    out(f"estimates received: {n} for {published} joint states published ({100.0 * n / max(1, published):.0f} %; "
        f"the first joint state only starts the acceleration filter)")
    if stats:
        out(f"input-to-output latency: median {stats['median'] * 1e3:.2f} ms, p99 {stats['p99'] * 1e3:.2f} ms, "
            f"max {stats['max'] * 1e3:.2f} ms")
    out("")
    if rec.active is not None and not rec.active.all():
        ds = rec.active.all(axis=1)[res["steps"]]
        out(f"walking: {int(ds.sum())} estimates in double support, {int((~ds).sum())} in single support "
            f"(contact state commanded by the simulated walking controller)")
    out(f"errors over the steady part (after the first {STEADY_AFTER:g} s of start-up transient):")
    out(f"{'joint':<22}{'RMS error (N·m)':>16}{'RMS torque (N·m)':>18}")
    true_rms = np.sqrt(np.mean(rec.tau[res['steps']] ** 2, axis=0))
    for name, e, r in zip(rec.joint_names, res["tau_rms"], true_rms):
        out(f"{name:<22}{e:>16.4f}{r:>18.3f}")
    out("")
    out(f"{'contact':<10}" + "".join(f"{c:>10}" for c in ("fx (N)", "fy", "fz", "tx (N·m)", "ty", "tz")))
    for name, e in zip(rec.contact_names, res["wrench_rms"]):
        out(f"{name:<10}" + "".join(f"{x:>10.4f}" for x in e))


def plot(rec: Recording, res, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t_all = np.arange(len(rec.tau)) * rec.dt
    t = res["steps"] * rec.dt
    joints = [j for j in ("l_hip_pitch", "l_knee", "r_ankle_pitch", "l_shoulder_pitch") if j in rec.joint_names]
    joints = joints or list(rec.joint_names[:4])
    fig, axes = plt.subplots(4, 2, figsize=(12, 12), sharex=True)
    for ax, j in zip(axes[:2].flat, joints):
        k = rec.joint_names.index(j)
        ax.plot(t_all, rec.tau[:, k], "k-", lw=1.5, label="true")
        ax.plot(t, res["tau_est"][:, k], "r.", ms=1.5, label="estimate")
        ax.set_title(f"{j} torque (N·m)")
        ax.legend(loc="upper right", fontsize=8)
    for c, name in enumerate(rec.contact_names[:2]):
        ax = axes[2, c]
        for comp, style in ((2, "fz"), (0, "fx"), (1, "fy")):
            ax.plot(t_all, rec.wrenches[:, c, comp], "k-", lw=1.0)
            ax.plot(t, res["w_est"][:, c, comp], ".", ms=1.5, label=f"{style} estimate")
        ax.set_title(f"{name} contact force (N, sole frame; black: true)")
        ax.legend(loc="upper right", fontsize=8)
        if rec.active is not None:
            ax = axes[3, c]
            ax.step(t_all, rec.active[:, c].astype(float), "k-", where="post", label="in contact (commanded)")
            ax.plot(t, res["w_est"][:, c, 2] > 1e-9, "g.", ms=1.0, label="estimate has a wrench")
            ax.set_ylim(-0.2, 1.2)
            ax.set_title(f"{name} contact state")
            ax.legend(loc="upper right", fontsize=8)
        ax.set_xlabel("time (s)")
    fig.suptitle("rbd_estimator demo: estimated versus true joint torques and contact wrenches")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ============================================================================ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rbd_estimator.demo", description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=5.0, help="seconds of simulated motion (default 5)")
    ap.add_argument("--rate", type=float, default=1000.0, help="publishing rate in Hz (default 1000)")
    ap.add_argument("--noise", type=float, default=1.0,
                    help="sensor noise scale (0: exact readings; 1: the standard deviations in NOISE)")
    ap.add_argument("--plot", default="rbd_estimator_demo.png", help="output image (default %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stand", action="store_true", help="both feet stay in contact (no walking)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    xml = open(share_file("urdf", "humanoid.urdf"), encoding="utf-8").read()
    params_file = share_file("config", "humanoid.yaml")
    config = SensorConfig.from_yaml(params_file, node_keys=NODE_KEYS)
    print(f"simulating {args.duration:g} s of the humanoid {'standing' if args.stand else 'walking'} at "
          f"{args.rate:g} Hz (aba, PD joint sinusoids, noise x{args.noise:g}) ...", flush=True)
    rec = simulate(xml, config, args.duration, args.rate, args.noise, args.seed,
                   log=lambda s: print(s, flush=True), walk=not args.stand)
    print(f"  done in {time.monotonic() - t0:.1f} s", flush=True)

    from .ros.demo_runner import run_node_and_publish   # the ROS side (rclpy, messages)
    # the demo loses no sensor: skip the background plans for sensor losses
    overrides = {"prepare_fallbacks": False}
    if not args.stand:      # the walking controller commands the contact state
        overrides.update({f"contact.{c}.mode": "commanded" for c in rec.contact_names})
    received, stamps, published, stats = run_node_and_publish(xml, params_file, rec, args.rate, overrides=overrides)
    res = rms_errors(rec, received, stamps)
    if res is None:
        print("no estimate was received: see the node's log above", file=sys.stderr)
        return 1
    print_report(rec, res, published, stats, received=len(received))
    if args.plot:
        plot(rec, res, args.plot)
        print(f"\nplot saved to {os.path.abspath(args.plot)}")
    print(f"demo finished in {time.monotonic() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
