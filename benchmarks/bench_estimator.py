#!/usr/bin/env python3
"""Per-estimate medians of the structured and the generic solver beside pinocchio's rnea, in one process.

    python benchmarks/bench_estimator.py [--calls 5000] [--memory-calls 10000]

Then the shipped real robots (config/talos.yaml, go2.yaml, g1.yaml with example-robot-data's URDFs,
as ``robot:=NAME`` launches them): ``estimate()`` beside ``pinocchio.rnea`` of the same robot.

The configuration is the acceptance one: iCub on a floating base, the IMU on root_link, the six
force-torque sensors, full-wrench contacts on l_sole and r_sole; inputs are numpy arrays (``ft``
an ``(n_ft, 6)`` array) from one ground-truth sample (test/groundtruth.py). Every function is
warmed up, then each call is timed with ``time.perf_counter``; the medians are printed in µs with
the ratio to ``pinocchio.rnea`` on the same robot (free flyer, neutral configuration). Then
``tracemalloc`` traces 10,000 structured estimates and prints the memory they leave behind.
A benchmark, not a test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import os
import sys
import tracemalloc

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test")]

from common import machine, median_us, paired_median_us, rnea_at_neutral  # noqa: E402

from groundtruth import GroundTruth  # noqa: E402
from oracle import urdf_xml  # noqa: E402
from rbd_estimator import RobotModel  # noqa: E402
from rbd_estimator.estimation import Estimator, ImuSample, SensorConfig, estimator_for  # noqa: E402

ICUB_FT = ["l_leg_ft_sensor", "r_leg_ft_sensor", "l_foot_ft_sensor", "r_foot_ft_sensor",
           "l_arm_ft_sensor", "r_arm_ft_sensor"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=5000, help="timed calls per function (default 5000)")
    ap.add_argument("--memory-calls", type=int, default=10000, help="estimates traced by tracemalloc")
    args = ap.parse_args()

    xml = urdf_xml("icub")
    cfg = SensorConfig.from_dict(dict(
        floating_base=True, imu=dict(frame="root_link"), ft_sensors=ICUB_FT, contacts=["l_foot", "r_foot"],
        contact=dict(l_foot=dict(frame="l_sole"), r_foot=dict(frame="r_sole"))))
    model = RobotModel.from_urdf(xml, floating_base=True)
    structured = Estimator(model, cfg, solver="structured")
    generic = Estimator(model, cfg, solver="generic")
    inputs, _ = GroundTruth(xml, structured).sample(np.random.default_rng(0))
    q, dq, ddq, imu, ft = inputs["q"], inputs["dq"], inputs["ddq"], inputs["imu"], np.asarray(inputs["ft"])
    assert isinstance(ft, np.ndarray) and ft.shape == (len(ICUB_FT), 6)

    rnea = rnea_at_neutral(xml, floating_base=True)

    print(f"machine: {machine()}")
    print(f"robot: iCub, {model.NB} bodies, {model.n_joints} joints, floating base; {generic.report.summary()}")
    print(structured._structured.summary())
    t_pin, t_str = paired_median_us(rnea, lambda: structured.estimate(q, dq, ddq, imu=imu, ft=ft), args.calls)
    t_gen = median_us(lambda: generic.estimate(q, dq, ddq, imu=imu, ft=ft), max(500, args.calls // 5))
    diff = np.max(np.abs(structured.estimate(q, dq, ddq, imu=imu, ft=ft).tau
                         - generic.estimate(q, dq, ddq, imu=imu, ft=ft).tau))
    print(f"{'':28s} {'median µs':>10s} {'/ rnea':>8s}")
    print(f"{'pinocchio.rnea':28s} {t_pin:10.2f} {1.0:8.2f}")
    print(f"{'estimate() structured':28s} {t_str:10.2f} {t_str / t_pin:8.2f}")
    print(f"{'estimate() generic (KKT LU)':28s} {t_gen:10.2f} {t_gen / t_pin:8.2f}")
    print(f"structured vs generic: {t_gen / t_str:.1f}× faster; max |Δτ| = {diff:.2g} N·m")

    input_forms(structured, inputs, t_pin, args.calls)
    shipped_robots(args.calls)

    tracemalloc.start()
    for _ in range(100):                   # tracemalloc's own first-call bookkeeping
        structured.estimate(q, dq, ddq, imu=imu, ft=ft)
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(args.memory_calls):
        structured.estimate(q, dq, ddq, imu=imu, ft=ft)
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"memory: {args.memory_calls} structured estimates under tracemalloc: {after - before:+d} bytes retained "
          f"(traced {before} → {after} bytes, peak {peak} bytes)")


def input_forms(est, inputs, t_pin: float, calls: int) -> None:
    """``estimate()`` with each input form the README documents (same values): arrays go straight
    to the compiled kernel, every other form is converted into the estimator's buffers first."""
    q, dq, ddq, imu, ft = inputs["q"], inputs["dq"], inputs["ddq"], inputs["imu"], np.asarray(inputs["ft"])
    names = est.ft_names
    y = est.measurements.fill(imu=imu, ft=ft).copy()
    t_y = median_us(lambda: est.estimate(q, dq, ddq, y=y), calls)
    d_y = np.max(np.abs(est.estimate(q, dq, ddq, y=y).tau - est.estimate(q, dq, ddq, imu=imu, ft=ft).tau))
    forms = {
        "float64 arrays": (q, dq, ddq, imu, ft),
        "ft as {sensor: wrench}": (q, dq, ddq, imu, {n: ft[k] for k, n in enumerate(names)}),
        "lists": (q.tolist(), dq.tolist(), ddq.tolist(), imu, ft.tolist()),
        "float32 arrays": (q.astype(np.float32), dq.astype(np.float32), ddq.astype(np.float32), imu,
                           ft.astype(np.float32)),
        "strided views": (np.repeat(q, 2)[::2], np.repeat(dq, 2)[::2], np.repeat(ddq, 2)[::2], imu,
                          np.repeat(ft, 2, axis=1)[:, ::2]),
        "imu as a plain tuple": (q, dq, ddq, tuple(imu), ft),
        "ImuSample from lists": (q, dq, ddq, ImuSample(*[None if x is None else list(x) for x in imu]), ft),
    }
    ref = est.estimate(*forms["float64 arrays"][:3], imu=imu, ft=ft).tau.copy()
    print(f"{'input form (iCub)':28s} {'median µs':>10s} {'/ rnea':>8s}  max |Δτ| vs arrays")
    print(f"{'measurement vector y':28s} {t_y:10.2f} {t_y / t_pin:8.2f}  {d_y:.1e}")
    for label, (a, b, c, i, f) in forms.items():
        t = median_us(lambda: est.estimate(a, b, c, imu=i, ft=f), calls)
        d = np.max(np.abs(est.estimate(a, b, c, imu=i, ft=f).tau - ref))
        print(f"{label:28s} {t:10.2f} {t / t_pin:8.2f}  {d:.1e}  (y + {t - t_y:.2f})")


def shipped_robots(calls: int) -> None:
    """``estimate()`` of each shipped real-robot configuration against pinocchio's rnea of that robot,
    through the measurement vector ``y``: the mean alone (``covariance: false``), the mean and its
    covariance (the default), and both with the joint accelerations as a measurement
    (``joint_acceleration_stddev: 0.5``, issue 20)."""
    from rbd_estimator import robots
    variants = [("mean", dict(covariance=False)), ("mean+cov", {}),
                ("mean+cov, q̈ measured", dict(joint_acceleration_stddev=0.5))]
    print(f"{'shipped robot':12s} {'rnea µs':>8s}  " + "  ".join(f"{v:>30s}" for v, _ in variants))
    for name in robots.SHIPPED:
        with open(robots.urdf_file(name), encoding="utf-8") as fh:
            xml = fh.read()
        params = SensorConfig.from_yaml(robots.params_file(name)).to_parameters()
        rnea = None
        cells, t_pins = [], []
        for label, extra in variants:
            est = estimator_for(xml, SensorConfig.from_parameters({**params, **extra}))
            inputs, _ = GroundTruth(xml, est).sample(np.random.default_rng(0))
            rnea = rnea or rnea_at_neutral(xml, est.config.floating_base)
            q, dq, ddq = inputs["q"], inputs["dq"], inputs["ddq"]
            y = est.measurements.fill(**{k: v for k, v in inputs.items() if k not in ("q", "dq", "ddq")}).copy()
            n = calls if est.report.solver == "structured" else max(200, calls // 20)
            t_pin, t_y = paired_median_us(rnea, lambda: est.estimate(q, dq, ddq, y=y), n)
            t_pins.append(t_pin)
            cells.append(f"{t_y:8.2f} µs {t_y / t_pin:6.2f} × {est.report.solver:>10s}")
        print(f"{name:12s} {np.median(t_pins):8.2f}  " + "  ".join(f"{c:>30s}" for c in cells))


if __name__ == "__main__":
    main()
