"""Joint accelerations from encoders in simulation: the node's causal filters against the zero-phase
filter a post-processing user would run, on a Go2 simulated in MuJoCo (test/mujoco_go2.py: armature,
dry friction and damping, the shipped actuator model in the estimator), with known true q̈ and contact
forces.

The joint states carry the encoder positions quantised to ``2π / 2^14`` rad and velocities with white
noise (0.05 rad/s), at 500 Hz. Each variant runs through the replay's tick logic (the node's
input handling, filter and estimate; joint torques from the motor torques, IMU with its own noise),
except the zero-phase one (``scipy.signal.filtfilt``, 2nd-order Butterworth on the positions, then
central differences; the library's ``estimate``). Printed: the RMS error of q̈ (rad/s²) and of the
contact forces (N), and for the Kalman filter its steady-state σ_a next to its actual q̈ error.

    .venv/bin/python benchmarks/bench_joint_acceleration.py [--seconds 4]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE = 500.0
QUANTUM = 2 * np.pi / 2 ** 14
VELOCITY_NOISE = 0.05
ZERO_PHASE_HZ = 10.0
AMPLITUDE = 0.3        # of the simulated stance motion: larger ones make the front feet slip (q̈ jumps)
KALMAN = dict(acceleration_filter="kalman", kalman_model="constant_jerk", kalman_process_noise=1.0e5,
              kalman_position_stddev=QUANTUM / np.sqrt(12), kalman_nominal_rate_hz=RATE)
VARIANTS = [
    ("finite difference of the velocities", dict(acceleration_cutoff_hz=0.0)),
    ("low-pass 10 Hz (first order)", dict(acceleration_cutoff_hz=10.0)),
    ("Kalman, positions only", dict(KALMAN, kalman_velocity_stddev=0.0)),
    ("Kalman, positions and velocities", dict(KALMAN, kalman_velocity_stddev=VELOCITY_NOISE)),
    ("Kalman, positions and velocities, σ_a to the estimator",
     dict(KALMAN, kalman_velocity_stddev=VELOCITY_NOISE, joint_acceleration_stddev_from_filter=True)),
]


def parameters(extra: dict) -> dict:
    import yaml

    from rbd_estimator import robots
    with open(robots.params_file("go2"), encoding="utf-8") as fh:
        p = yaml.safe_load(fh)["rbd_estimator"]["ros__parameters"]
    p.update(oracle_every_n=0, fault_false_alarm_rate=0.0, contact_prior_stddev=1.0, **extra)
    return p


def measurements(d: dict, seed: int = 1) -> dict:
    rng = np.random.default_rng(seed)
    n = len(d["q"])
    return dict(q=np.round(d["q"] / QUANTUM) * QUANTUM, dq=d["dq"] + rng.normal(0, VELOCITY_NOISE, d["dq"].shape),
                gyro=d["gyro"] + rng.normal(0, 0.005, (n, 3)), acc=d["acc"] + rng.normal(0, 0.05, (n, 3)))


def causal(urdf, names, d, m, extra):
    """Through the replay's tick logic: (q̈ per estimate, contact forces in the world, sample index)."""
    sys.path.insert(0, os.path.join(ROOT, "test"))
    from groundtruth import Serializer

    from rbd_estimator import ImuSample, SensorConfig
    from rbd_estimator.replay import Replayer
    from rbd_estimator.runtime.params import NODE_KEYS
    rep = Replayer(urdf, SensorConfig.from_dict(parameters(extra), node_keys=NODE_KEYS), collect=True)
    s = Serializer()
    order = [names.index(j) for j in rep.inputs.joint_names]
    ddq, idx = [], []
    t0, dt = 1_700_000_000_000_000_000, int(1e9 / RATE)
    for k in range(len(d["q"])):
        t = t0 + k * dt
        rep.feed("/imu", s.imu(t, ImuSample(d["quat"][k], m["gyro"][k], m["acc"][k])), t - 100_000)
        n = len(rep.stamps)
        rep.feed("/joint_states", s.joint_state(t, names, m["q"][k], m["dq"][k], d["motor"][k]), t)
        if len(rep.stamps) > n:
            ddq.append(rep.inputs.ddq[np.argsort(order)].copy())
            idx.append(k)
    res = rep.results()
    idx = np.array(idx)
    f = np.einsum("kcij,kcj->kci", d["R_foot"][idx], res["wrenches"][:, :, :3])
    return np.array(ddq), f, idx, rep.session.config.joint_acceleration_stddev


def zero_phase(urdf, names, d, m):
    from scipy.signal import butter, filtfilt

    from rbd_estimator import ImuSample, SensorConfig, estimator_for
    est = estimator_for(urdf, SensorConfig.from_dict(parameters({})))
    order = [names.index(j) for j in est.joint_names]
    dt = 1.0 / RATE
    b, a = butter(2, ZERO_PHASE_HZ, fs=RATE)
    q = filtfilt(b, a, m["q"], axis=0)
    dq = np.gradient(q, dt, axis=0)
    ddq = np.gradient(dq, dt, axis=0)
    alpha = np.gradient(filtfilt(b, a, m["gyro"], axis=0), dt, axis=0)
    f = np.zeros((len(q), 4, 3))
    for k in range(len(q)):
        r = est.estimate(q[k][order], dq[k][order], ddq[k][order],
                         imu=ImuSample(d["quat"][k], m["gyro"][k], m["acc"][k], alpha[k]), joint_torques=d["motor"][k])
        f[k] = np.einsum("cij,cj->ci", d["R_foot"][k], r.contact_wrenches[:, :3])
    return ddq, f, np.arange(len(q))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args(argv)
    sys.path.insert(0, os.path.join(ROOT, "test"))
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import mujoco_go2 as sim
    from common import machine

    from rbd_estimator import SensorConfig, robots
    urdf = open(robots.urdf_file("go2"), encoding="utf-8").read()
    names = list(SensorConfig.from_dict(parameters({})).joint_torque_sensors)
    d = sim.simulate(urdf, names, seconds=args.seconds, rate_hz=RATE, amplitude=AMPLITUDE)
    m = measurements(d)
    skip = int(0.2 * RATE)
    print(machine())
    print(f"Go2 in MuJoCo, {args.seconds:g} s at {RATE:g} Hz; encoders quantised to 2π/2^14 rad, velocity noise "
          f"{VELOCITY_NOISE} rad/s; true q̈ RMS {np.sqrt(np.mean(d['ddq'] ** 2)):.1f} rad/s²")
    print("| q̈ from | causal | q̈ RMS error (rad/s²) | contact-force RMS error (N) | σ_a handed to the estimator |")
    print("| --- | --- | --- | --- | --- |")
    rows = [(label, True, *causal(urdf, names, d, m, extra)) for label, extra in VARIANTS]
    rows.append((f"zero-phase Butterworth {ZERO_PHASE_HZ:g} Hz (filtfilt)", False, *zero_phase(urdf, names, d, m), 0.0))
    for label, is_causal, ddq, f, idx, sigma in rows:
        keep = idx >= skip
        e_a = np.sqrt(np.mean((ddq[keep] - d["ddq"][idx[keep]]) ** 2))
        e_f = np.sqrt(np.mean(((f[keep] - d["force"][idx[keep]]) ** 2).sum(axis=-1)))
        print(f"| {label} | {'yes' if is_causal else 'no'} | {e_a:.2f} | {e_f:.2f} | "
              f"{f'{sigma:.2f}' if sigma else '— (exact inputs)'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
