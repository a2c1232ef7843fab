"""Plan time per robot and per contact subset, plan time and per-estimate time versus the number of
bodies (serial chains, balanced trees).

Run: .venv/bin/python benchmarks/bench_scaling.py [--max-bodies 500] [--out docs/] [--plan-only]
[--acceleration-stddev 0.5] (the plan table with the joint accelerations as a measurement)
Prints the plan table (shipped robots with their parameter files, the 16 contact subsets of the
quadruped, generated trees), then the scaling table, and saves docs/scaling.png (not with
--plan-only). Nori's Figs. 1 and 2 (counts) are ``benchmarks/papers_figures.py``'s. A plan is ``make_estimator(model, config)`` with the
model built once (what a contact switch or a sensor fallback pays); the median of ``--reps`` plans.
Each generated estimator: floating base, IMU on the root, two feet with force-torque sensors in
full-wrench contact (the load-cell figure uses slippery feet with four cells each, Nori §VI).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test"))
sys.path.insert(0, os.path.dirname(__file__))
from common import machine  # noqa: E402
from trees import balanced_binary_tree, random_tree, serial_chain, tree_urdf  # noqa: E402

from rbd_estimator import IllPosedError, robots  # noqa: E402
from rbd_estimator.estimation.loops import model_for  # noqa: E402
from rbd_estimator.estimation import ImuSample, SensorConfig, estimator_for, make_estimator  # noqa: E402


def config(soles, load_cells=False):
    cells = dict(positions_x=[0.05, 0.05, -0.03, -0.03], positions_y=[0.02, -0.02, 0.02, -0.02])
    params = dict(floating_base=True, imu=dict(frame="root"),
                  contacts=[f"c{k}" for k in range(len(soles))],
                  contact={f"c{k}": dict(frame=s, type="slippery" if load_cells else "full_wrench")
                           for k, s in enumerate(soles)})
    if load_cells:
        params.update(load_cells=[f"cells{k}" for k in range(len(soles))],
                      load_cell={f"cells{k}": dict(contact=f"c{k}", **cells) for k in range(len(soles))})
    else:
        params.update(ft_sensors=[f"ft{k}" for k in range(len(soles))])
    return SensorConfig.from_dict(params)


def median_estimate_us(est, n=300):
    rng = np.random.default_rng(0)
    nj = est.model.n_joints
    q, dq, ddq = rng.normal(size=nj), rng.normal(size=nj), rng.normal(size=nj)
    imu = ImuSample(np.array([0, 0, 0, 1.0]), rng.normal(size=3), rng.normal(size=3))
    kw = dict(imu=imu)
    if est.config.ft_sensors:
        kw["ft"] = rng.normal(size=(len(est.config.ft_sensors), 6))
    if est.config.load_cells:
        kw["load_cells"] = [rng.normal(size=4) for _ in est.config.load_cells]
    for _ in range(20):
        est.estimate(q, dq, ddq, **kw)
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        est.estimate(q, dq, ddq, **kw)
        ts.append(time.perf_counter() - t)
    return 1e6 * float(np.median(ts))


def plan_seconds(model, cfg, reps: int) -> tuple[float, object]:
    """Median wall time (s) of ``make_estimator(model, cfg)`` over ``reps`` plans, and the last
    estimator (or the :class:`IllPosedError` the plan raised: it is planned too)."""
    ts, est = [], None
    for _ in range(reps):
        t = time.perf_counter()
        try:
            est = make_estimator(model, cfg)
        except IllPosedError as exc:
            est = exc
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), est


def plan_table(max_bodies: int, reps: int, acc_stddev: float = 0.0):
    """Print the plan time of the shipped robots, of every contact subset of the quadruped and of
    generated trees up to ``max_bodies`` bodies; with ``acc_stddev > 0`` the joint accelerations are a
    measurement (``joint_acceleration_stddev``)."""
    print(f"plan = make_estimator(model, config), median of {reps}")
    print(f"{'configuration':36s} {'bodies':>6s} {'unknowns':>8s} {'plan (s)':>9s}  tick")
    for name, label in (("icub", "iCub"), ("talos", "Talos"), ("g1", "G1"), ("go2", "Go2")):
        with open(robots.urdf_file(name), encoding="utf-8") as fh:
            xml = fh.read()
        cfg = replace(SensorConfig.from_yaml(robots.params_file(name)), joint_acceleration_stddev=acc_stddev)
        model = model_for(xml, cfg)
        t, est = plan_seconds(model, cfg, reps)
        print(f"{label + ' (config/' + name + '.yaml)':36s} {model.NB:6d} {est.report.n_unknowns:8d} {t:9.3f}  "
              f"{est.report.solver}", flush=True)
        if name == "go2":         # the feet switchable: one plan per subset (the SwitchingEstimator)
            walking = replace(cfg, contacts=tuple(replace(c, mode="commanded") for c in cfg.contacts))
            t, est = plan_seconds(model, walking, reps)
            ill = [k for k, why in est.coverage().items() if why is not None]
            print(f"{'Go2, all ' + str(len(est.subsets)) + ' contact subsets':36s} {model.NB:6d} {'':8s} "
                  f"{t:9.3f}  total ({t / len(est.subsets):.3f} s per plan; ill-posed: {', '.join(ill) or 'none'})",
                  flush=True)
    rng, seen = np.random.default_rng(11), set()
    for n in (50, 100, 200, 300, 500):
        if n > max_bodies:
            continue
        for topo, parents in (("serial chain", serial_chain(n)), ("balanced tree", balanced_binary_tree(
                int(round(np.log2(n + 1))))), ("random tree", random_tree(n, rng))):
            if (topo, len(parents)) in seen:
                continue
            seen.add((topo, len(parents)))
            xml, soles = tree_urdf(parents, seed=len(parents), ft_leaves=1 if topo == "serial chain" else 2)
            cfg = replace(config(soles), joint_acceleration_stddev=acc_stddev)
            model = model_for(xml, cfg)
            t, est = plan_seconds(model, cfg, reps)
            print(f"{topo + ' ' + str(len(parents)):36s} {model.NB:6d} {est.report.n_unknowns:8d} {t:9.3f}  "
                  f"{est.report.solver}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-bodies", type=int, default=500)
    ap.add_argument("--reps", type=int, default=5, help="plans per configuration (median)")
    ap.add_argument("--plan-only", action="store_true", help="only the plan table")
    ap.add_argument("--acceleration-stddev", type=float, default=0.0,
                    help="joint_acceleration_stddev of the plan table's configurations (0: exact)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs"))
    args = ap.parse_args()
    print("machine:", machine())
    estimator_for(*(lambda x: (x[0], config(x[1])))(tree_urdf(serial_chain(3), ft_leaves=1)))  # load kernels
    plan_table(args.max_bodies, args.reps, args.acceleration_stddev)
    if args.plan_only:
        return
    rows = []
    sizes = [n for n in (10, 20, 50, 100, 200, 300, 500) if n <= args.max_bodies]
    trees = {int(round(np.log2(n + 1))) for n in sizes}
    for topo in ("serial chain", "balanced tree"):
        for parents in ([serial_chain(n) for n in sizes] if topo == "serial chain"
                        else [balanced_binary_tree(m) for m in sorted(trees)]):
            xml, soles = tree_urdf(parents, seed=len(parents), ft_leaves=2 if topo == "balanced tree" else 1)
            plan_s, est = plan_seconds(model_for(xml, config(soles)), config(soles), 1)
            us = median_estimate_us(est)
            rows.append((topo, len(parents), est.model.NB, plan_s, us, est.report.flops, est.report.fill_in))
            print(f"{topo:14s} bodies {est.model.NB:4d}  plan {plan_s:7.2f} s  estimate {us:9.1f} µs  "
                  f"flops {est.report.flops:9d}  fill-in {est.report.fill_in:7d}", flush=True)
    plot_scaling(rows, args.out)


def plot_scaling(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for topo in ("serial chain", "balanced tree"):
        r = [x for x in rows if x[0] == topo]
        ax[0].plot([x[2] for x in r], [x[4] for x in r], "o-", label=topo)
        ax[1].plot([x[2] for x in r], [x[3] for x in r], "o-", label=topo)
    ax[0].set(xlabel="bodies", ylabel="estimate median (µs)", title="per-estimate time")
    ax[1].set(xlabel="bodies", ylabel="plan (s)", title="plan time")
    save(fig, ax, out, "scaling.png")


def save(fig, ax, out, name):
    """Grid, legends, layout, and save the figure under ``out``."""
    for a in ax:
        a.grid(True)
        a.legend()
    fig.tight_layout()
    path = os.path.join(out, name)
    fig.savefig(path, dpi=100)
    print("saved", path)


if __name__ == "__main__":
    main()
