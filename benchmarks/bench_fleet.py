#!/usr/bin/env python3
"""Fleet replay throughput (``rbd-estimator replay-fleet``; not a test).

    python benchmarks/bench_fleet.py [--seconds 10] [--recordings 4] [--repeat 3] [--ray] [--no-compress]

Recordings: the shipped one (``test/data/demo_humanoid``: the demo humanoid at 1 kHz, IMU + six
force-torque sensors + joint states, 8 messages per tick) repeated to ``--seconds`` (as
``bench_replay.py`` builds it), ``--recordings`` copies. Parameters: ``config/humanoid.yaml`` with
the fault monitor off (the repeated recording jumps back every second; as in ``bench_replay.py``),
once as shipped (``covariance: true``) and once with ``covariance: false``. Every task is the fleet's
whole task: estimates-only bag (zstd MCAP; uncompressed with ``--no-compress``, as ``replay-fleet
--no-compress``), Parquet tick table, marker.

Prints, medians of ``--repeat`` interleaved rounds:

1. per core: one worker in this process (no pool), recorded seconds per CPU second of the process
   (what a task costs a core, whatever share of the machine other jobs take) and per wall second,
   the replay loop's own speed (wall) and the rest of a task (reading the description, planning,
   opening the bags, the table's last row group, flushing, the marker); and the CPU split into a
   cost per recorded second (what long recordings approach) and a cost per task, from the same
   tasks on 1 s copies of the recording;
2. scaling: the local engine with 1 and 2 worker processes over the recordings (wall time of the
   whole run, pool start included; and on a pool already started and warm), and the ratio, next to
   the ratio of a pure-Python loop on the same pool sizes (the control: on a machine shared with
   other jobs, what its two cores give at that moment);
3. Ray (``--ray``): ``ray.init`` time, the cost of an empty Ray task, and the same run as 2. on a
   local Ray with 2 CPUs: the overhead per task against the local engine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
PARAMS = os.path.join(ROOT, "config", "humanoid.yaml")


def params_file(path: str, **override) -> str:
    with open(PARAMS, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    doc["rbd_estimator"]["ros__parameters"].update(override)
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh)
    return path


def one_core(tasks) -> dict:
    """The tasks one after the other in this process: wall and CPU seconds (this process's: what the
    tasks cost a core, whatever share of it other jobs took), recorded seconds, the replay loops'
    seconds and the rest per task."""
    from rbd_estimator.fleet import run_task
    t0, c0 = time.perf_counter(), time.process_time()
    rows = [run_task(t) for t in tasks]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert all(r["status"] == "done" for r in rows), rows
    rec = sum(r["duration_s"] for r in rows)
    loop = sum(r["duration_s"] / r["speed"] for r in rows)
    return dict(wall=wall, cpu=cpu, recorded=rec, loop=loop, per_task=(wall - loop) / len(rows))


#: the tasks' options (``--no-compress``: ``compress=False``)
OPTIONS = {}


def fleet(inputs, out, params, engine, workers=None) -> float:
    from rbd_estimator.fleet import run_fleet
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    rows = run_fleet(inputs, out, [params], engine=engine, workers=workers, progress=False, report=False, **OPTIONS)
    wall = time.perf_counter() - t0
    assert all(r["status"] == "done" for r in rows), rows
    return wall


def spin(n: int) -> int:
    """Pure CPU work (the control of the scaling: what the machine's cores give right now)."""
    s = 0
    for i in range(n):
        s += i * i
    return s


def control(workers: int, jobs: int = 4, n: int = 4_000_000) -> float:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        list(pool.map(spin, [10] * workers))
        t0 = time.perf_counter()
        list(pool.map(spin, [n] * jobs))
        return time.perf_counter() - t0


def steady(tasks, warm, workers: int) -> float:
    """Wall seconds of ``tasks`` on a pool of ``workers`` processes already started and warm (each ran
    a task of ``warm``): the scaling without the one-time start of the workers."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    from rbd_estimator.fleet import run_task
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn")) as pool:
        list(pool.map(run_task, warm[:workers]))
        t0 = time.perf_counter()
        rows = list(pool.map(run_task, tasks))
        wall = time.perf_counter() - t0
    assert all(r["status"] == "done" for r in rows), rows
    return wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--recordings", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ray", action="store_true", help="also measure --engine ray")
    ap.add_argument("--no-compress", action="store_true", help="uncompressed estimate bags (replay-fleet --no-compress)")
    args = ap.parse_args(argv)
    if args.no_compress:
        OPTIONS.update(compress=False)
    from bench_replay import long_bag
    from rbd_estimator.fleet import make_tasks
    print(f"load average: {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    tmp = tempfile.mkdtemp(prefix="bench_fleet_")
    try:
        src = os.path.join(tmp, "recordings")
        long_bag(os.path.join(src, "r0"), args.seconds)
        for k in range(1, args.recordings):
            shutil.copytree(os.path.join(src, "r0"), os.path.join(src, f"r{k}"))
        recs = sorted(os.path.join(src, f) for f in os.listdir(src))
        short = os.path.join(tmp, "short")             # 1 s copies: the fixed cost of a task (split below)
        long_bag(os.path.join(short, "s0"), 1)
        for k in range(1, args.recordings):
            shutil.copytree(os.path.join(short, "s0"), os.path.join(short, f"s{k}"))
        shorts = sorted(os.path.join(short, f) for f in os.listdir(short))
        configs = {"covariance: true (shipped)": params_file(os.path.join(tmp, "cov.yaml"), fault_false_alarm_rate=0.0),
                   "covariance: false": params_file(os.path.join(tmp, "mean.yaml"), fault_false_alarm_rate=0.0,
                                                    covariance=False)}
        print(f"{args.recordings} recordings of {args.seconds} s, the demo humanoid at 1 kHz (8 messages per tick); "
              f"tasks: estimates-only bag ({'uncompressed' if args.no_compress else 'zstd'} MCAP) + Parquet table + marker")
        res = {label: [] for label in configs}
        res_short = {label: [] for label in configs}
        for label, p in configs.items():          # warm-up: this process loads the compiled code once
            one_core(make_tasks(recs[:1], os.path.join(tmp, f"warm{len(p)}"), {"": p}, **OPTIONS)[0])
        for k in range(args.repeat):
            for label, p in configs.items():
                for runs, inputs in ((res, recs), (res_short, shorts)):
                    out = os.path.join(tmp, f"one{k}")
                    shutil.rmtree(out, ignore_errors=True)
                    tasks, _ = make_tasks(inputs, out, {"": p}, **OPTIONS)
                    runs[label].append(one_core(tasks))
        print("1. one core (tasks in turn in this process; per CPU second of this process, and per wall second):")
        for label, rs in res.items():
            speed = np.median([r["recorded"] / r["cpu"] for r in rs])
            wall = np.median([r["recorded"] / r["wall"] for r in rs])
            loop = np.median([r["recorded"] / r["loop"] for r in rs])
            per_task = np.median([r["per_task"] for r in rs])
            print(f"   {label:<28} {speed:5.1f}x real time per CPU second ({1e3 / speed:.0f} µs per 1 ms tick); "
                  f"wall: {wall:5.1f}x, the replay loop alone {loop:5.1f}x, {per_task:.2f} s per task besides the loop")
        print(f"   split (CPU seconds of {args.seconds} s and of 1 s recordings): the cost per recorded second, what a "
              f"long recording approaches, and per task")
        for label in configs:
            c_long = np.median([r["cpu"] for r in res[label]]) / args.recordings
            c_short = np.median([r["cpu"] for r in res_short[label]]) / args.recordings
            per_s = (c_long - c_short) / (args.seconds - 1)
            print(f"   {label:<28} {1e3 * per_s:5.1f} ms per recorded second ({1 / per_s:5.1f}x real time), "
                  f"{1e3 * (c_short - per_s):4.0f} ms per task")
        p = configs["covariance: true (shipped)"]
        cold = fleet(recs[:1], os.path.join(tmp, "cold"), p, "local", 1) - res[next(iter(res))][0]["wall"] / len(recs)
        print(f"   a worker process's start (spawn, imports, compiled-code cache; once per worker): {cold:.1f} s")
        walls, warm, spins = {1: [], 2: []}, {1: [], 2: []}, {1: [], 2: []}
        for k in range(args.repeat):
            for w in (1, 2):
                spins[w].append(control(w))
                walls[w].append(fleet(recs, os.path.join(tmp, "pool"), p, "local", w))
                out = os.path.join(tmp, f"steady{k}{w}")
                warm[w].append(steady(make_tasks(recs, out, {"": p}, **OPTIONS)[0],
                                      make_tasks(recs, out + "warm", {"": p}, **OPTIONS)[0], w))
        total = args.recordings * args.seconds
        print(f"2. local engine, {total} s of recordings (shipped parameters):")
        for label, t in (("run_fleet, worker start included", walls), ("workers started and warm", warm),
                         ("control: pure-Python loop, 4 jobs", spins)):
            t1, t2 = np.median(t[1]), np.median(t[2])
            print(f"   {label:<34} 1 worker {t1:6.2f} s ({total / t1:5.1f}x real time), 2 workers {t2:6.2f} s "
                  f"({total / t2:5.1f}x): scaling {t1 / t2:.2f}x")
        t2 = np.median(warm[2])
        if args.ray:
            ray_figures(recs, tmp, p, t2, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def ray_figures(recs, tmp, params, local_warm, args) -> None:
    """Ray's start, an empty task, and the fleet on a local Ray (2 CPUs): the first run (Ray's workers
    import the package and load the compiled code) and the next ones (Ray reuses its worker
    processes), against the local engine's warm pool."""
    import ray
    t0 = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    t_init = time.perf_counter() - t0

    @ray.remote(num_cpus=1)
    def empty(x):
        return x
    ray.get([empty.remote(i) for i in range(20)])           # workers started
    n = 500
    t0 = time.perf_counter()
    ray.get([empty.remote(i) for i in range(n)])
    per_empty = (time.perf_counter() - t0) / n
    walls = [fleet(recs, os.path.join(tmp, "ray"), params, "ray") for _ in range(1 + args.repeat)]
    ray.shutdown()
    t = float(np.median(walls[1:]))
    total = args.recordings * args.seconds
    print(f"3. Ray (local, 2 CPUs): ray.init {t_init:.1f} s; an empty task {per_empty * 1e3:.2f} ms ({n} in flight)")
    print(f"   the fleet run: first {walls[0]:.2f} s (workers load the package), then {t:.2f} s ({total / t:.1f}x "
          f"real time) against {local_warm:.2f} s on the local engine's warm pool: "
          f"{(t - local_warm) / len(recs):+.3f} s per task")


if __name__ == "__main__":
    sys.exit(main())
