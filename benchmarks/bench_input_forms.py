#!/usr/bin/env python3
"""``estimate()`` with every documented input form, against the measurement vector ``y``, per robot.

    python benchmarks/bench_input_forms.py [--robots icub,humanoid,go2] [--calls 20000] [--rounds 7]

For each shipped robot (its own parameter file and URDF, one ground-truth sample from
test/groundtruth.py) the forms are timed in interleaved rounds (``y``, then each form, ``--rounds``
times, ``--calls // --rounds`` calls each): a burst of load on a shared machine moves one round of
every form, so the difference to the ``y`` path of the same round is robust to load. Printed per
form: the median µs over the rounds and the median over the rounds of its difference to ``y``.

The forms (same values): ``y`` (the node's and the replay's form); per-kind float64 arrays (the IMU
an :class:`ImuSample`); the multi-sensor kind as ``{sensor: reading}``; float32 arrays; lists;
strided (non-contiguous) views; the IMU as a plain tuple. ``q``, ``dq``, ``ddq`` take the form
too (but for the dict and tuple forms). A benchmark, not a test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test")]

from common import machine, median_us  # noqa: E402

from groundtruth import GroundTruth  # noqa: E402
from rbd_estimator import robots  # noqa: E402
from rbd_estimator.estimation import SensorConfig, estimator_for  # noqa: E402

JOINT_STATE = ("q", "dq", "ddq")


def forms(est, inputs) -> dict:
    """Label → keyword arguments of ``estimate()``, every form of the same readings."""
    readings = {k: v for k, v in inputs.items() if k not in JOINT_STATE}
    imu = readings.get("imu")
    state = {k: inputs[k] for k in JOINT_STATE}
    y = est.measurements.fill(**readings).copy()

    def each(fn, with_imu_as_is=True):
        out = {k: fn(v) for k, v in state.items()}
        out.update({k: (v if k == "imu" and with_imu_as_is else fn(np.asarray(v))) for k, v in readings.items()})
        return out

    names = {}
    for s in est.config.sensors:
        names.setdefault(type(s).KEYWORD, []).append(s.name)
    multi = next((k for k in readings if k != "imu" and len(names.get(k, ())) > 1), None)
    out = {"y": dict(state, y=y), "float64 per-kind": dict(inputs)}
    if multi is not None:
        value = np.asarray(readings[multi])
        out[f"{multi} as a dict"] = dict(inputs, **{multi: {n: value[k] for k, n in enumerate(names[multi])}})
    out["float32"] = each(lambda a: np.asarray(a).astype(np.float32))
    out["lists"] = each(lambda a: np.asarray(a).tolist())
    out["strided"] = each(lambda a: np.repeat(np.asarray(a), 2, axis=-1)[..., ::2])
    if imu is not None:
        out["tuple IMU"] = dict(inputs, imu=tuple(imu))
    return out


def bench(name: str, calls: int, rounds: int) -> None:
    with open(robots.urdf_file(name), encoding="utf-8") as fh:
        xml = fh.read()
    est = estimator_for(xml, SensorConfig.from_yaml(robots.params_file(name)))
    inputs, _ = GroundTruth(xml, est).sample(np.random.default_rng(0))
    cases = forms(est, inputs)
    ref = est.estimate(**cases["y"]).tau.copy()
    dev = {label: float(np.max(np.abs(est.estimate(**kw).tau - ref))) for label, kw in cases.items()}
    n = max(100, calls // rounds)
    times = {label: [] for label in cases}
    for _ in range(rounds):
        for label, kw in cases.items():
            times[label].append(median_us(lambda: est.estimate(**kw), n))
    t_y = np.array(times["y"])
    print(f"{name}: {est.model.n_joints} joints, {len(est.config.sensors)} sensors "
          f"({', '.join(k for k in inputs if k not in JOINT_STATE)}), y of {est.measurements.size}")
    print(f"  {'form':24s} {'median µs':>10s} {'- y µs':>8s}  max |Δτ| vs y")
    for label, t in times.items():
        t = np.array(t)
        print(f"  {label:24s} {np.median(t):10.2f} {np.median(t - t_y):+8.2f}  {dev[label]:.1e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", default="icub,humanoid,go2", help="shipped robots, comma-separated")
    ap.add_argument("--calls", type=int, default=20000, help="timed calls per form, over all rounds")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    for name in args.robots.split(","):
        bench(name, args.calls, args.rounds)


if __name__ == "__main__":
    main()
