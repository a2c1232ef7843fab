"""The cost of online offset tracking (issue 21, docs/offsets.md) beside pinocchio's rnea, in one process.

Per shipped robot, with the offsets of some sensors tracked (humanoid and iCub: both foot
force-torque sensors, 12 entries; Go2: its 12 joint torques), at a 1 kHz tick
(``python benchmarks/bench_offsets.py [--calls N]``):

* ``estimate`` — ``estimate(y)`` alone (the tick without tracking);
* ``tracked`` — :meth:`OffsetTracker.estimate`: the readings corrected, the estimate, the compiled
  Schmidt–Kalman update; its median is a tick without an observability update, its mean includes
  the observability made again every 10 ms (one estimate per tracked entry and an SVD);
* ``observability`` — one observability update alone;
* allocations over 10,000 tracked ticks without an observability update (tracemalloc).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test")]

from common import machine, median_us, paired_median_us, rnea_at_neutral  # noqa: E402
from groundtruth import GroundTruth  # noqa: E402
from rbd_estimator import robots  # noqa: E402
from rbd_estimator.estimation import SensorConfig, estimator_for  # noqa: E402
from rbd_estimator.estimation.offsets import OffsetTracker  # noqa: E402

TRACKED = {"humanoid": ("ft", ("l_foot_ft_sensor", "r_foot_ft_sensor")),
           "icub": ("ft", ("l_foot_ft_sensor", "r_foot_ft_sensor")),
           "go2": ("joint_torque", None)}


def tracked_config(name: str) -> SensorConfig:
    params = SensorConfig.from_yaml(robots.params_file(name)).to_parameters()
    kind, sensors = TRACKED[name]
    if kind == "ft":
        for s in sensors:
            params.update({f"ft.{s}.force_offset_drift": 0.1, f"ft.{s}.torque_offset_drift": 0.005})
    else:
        for j in params["joint_torque_sensors"]:
            params[f"joint_torque.{j}.offset_drift"] = 0.01
    return SensorConfig.from_parameters(params)


def mean_us(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=10000)
    calls = ap.parse_args().calls
    print(machine())
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(f"{'robot':9s} {'entries':>7s} {'rnea µs':>8s} {'estimate':>16s} {'tracked (median)':>18s} "
          f"{'tracked (mean)':>18s} {'observability':>16s} {'bytes/10k ticks':>16s}")
    for name in TRACKED:
        with open(robots.urdf_file(name), encoding="utf-8") as fh:
            xml = fh.read()
        cfg = tracked_config(name)
        est = estimator_for(xml, cfg)
        inputs, _ = GroundTruth(xml, est).sample(np.random.default_rng(0))
        q, dq, ddq = inputs["q"], inputs["dq"], inputs["ddq"]
        y = est.measurements.fill(**{k: v for k, v in inputs.items() if k not in ("q", "dq", "ddq")}).copy()
        rnea = rnea_at_neutral(xml, floating_base=True)
        tr = OffsetTracker(cfg)
        tick = lambda: tr.estimate(est, q, dq, ddq, y, 1e-3)  # noqa: E731
        t_pin, t_est = paired_median_us(rnea, lambda: est.estimate(q, dq, ddq, y=y), calls)
        _, t_med = paired_median_us(rnea, tick, calls)
        t_mean = mean_us(tick, calls)
        still = OffsetTracker(cfg, period=np.inf)
        still.estimate(est, q, dq, ddq, y, 1e-3)

        def refresh():
            tr.observe(est, q, dq, ddq, None, np.inf)
        t_obs = median_us(refresh, max(200, calls // 20))
        for _ in range(1000):
            still.estimate(est, q, dq, ddq, y, 1e-3)
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for _ in range(10000):
            still.estimate(est, q, dq, ddq, y, 1e-3)
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
        tracemalloc.stop()
        print(f"{name:9s} {tr.n:7d} {t_pin:8.2f} {t_est:7.2f} µs {t_est / t_pin:5.2f} × {t_med:8.2f} µs "
              f"{t_med / t_pin:5.2f} × {t_mean:8.2f} µs {t_mean / t_pin:5.2f} × {t_obs:7.1f} µs "
              f"{t_obs / t_pin:5.1f} × "
              f"{grown:16d}")


if __name__ == "__main__":
    main()
