#!/usr/bin/env python3
"""Throughput and latency of the estimator node with the shipped humanoid (not a test).

    python benchmarks/bench_node.py [--duration 60] [--rates 1000 2000] [--node-cpus 1 --publisher-cpus 0]

Starts the node (``python -m rbd_estimator.node``, a separate process, as deployed) with
``urdf/humanoid.urdf`` and ``config/humanoid.yaml``, configures and activates it through its
lifecycle services, waits for the fallback plans, then publishes from this process, at each rate:
an IMU sample, the six force-torque readings and a joint state per period (0.5 s of the demo's
simulated humanoid, noise-free, repeated; stamps increasing). It reports

* ticks missed: joint states published that got no ``~/joint_torques`` message (the node drops
  what it cannot process: its inputs are best-effort, queue depth 32);
* input-to-output latency: from just before the joint state is published to the receipt of the
  estimate with its stamp by this process's middleware (the reader's ``received_timestamp``, same
  clock; median, p99, max), and the p99 to the callback in this process that takes it: that one adds
  the wait of the receiving thread for this process's GIL (the publishing loop, the /diagnostics
  callbacks), a cost of the benchmark's Python, not of the node;
* the node's own tick latency (callback entry to publish) from its ``/diagnostics``.

The node runs with its default ``diagnostics_period`` (1 s): a /diagnostics message is ~0.15 ms of
Python in one process, 1–1.7 ms of wall time in the running node, and the ticks it overlaps wait for
the GIL (docs/benchmarks.md, issue 19's 1 kHz tail). ``--node-cpus`` and
``--publisher-cpus`` pin the node process and this process (every thread) to CPUs, as a robot pins
its control nodes; by default neither is pinned.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def readings(xml, config, seconds=0.5, rate=1000.0):
    """A short recording of the demo's simulated humanoid (noise-free), to be cycled."""
    from rbd_estimator.demo import simulate
    return simulate(xml, config, seconds, rate, noise=0.0, log=lambda s: None)


def cycle(rec, steps):
    """The recording repeated to ``steps`` steps."""
    from copy import copy
    out = copy(rec)
    idx = np.arange(steps) % len(rec.q)
    out.q, out.dq, out.ft = rec.q[idx], rec.dq[idx], rec.ft[idx]
    out.imu = [rec.imu[i] for i in idx]
    if getattr(rec, "active", None) is not None:         # the walking controller's contact state, cycled too
        out.active = rec.active[idx]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of publishing per rate (default 60)")
    ap.add_argument("--rates", type=float, nargs="+", default=[1000.0, 2000.0], help="publishing rates (Hz)")
    ap.add_argument("--node-cpus", type=int, nargs="+", help="CPUs of the node process (default: any)")
    ap.add_argument("--publisher-cpus", type=int, nargs="+", help="CPUs of this process (default: any)")
    args = ap.parse_args(argv)
    node_cpus = set(args.node_cpus or os.sched_getaffinity(0))

    import rclpy

    from rbd_estimator.estimation import SensorConfig
    from rbd_estimator.ros.demo_runner import Client, NodeProcess, publish_loop

    xml = open(os.path.join(ROOT, "urdf", "humanoid.urdf"), encoding="utf-8").read()
    params_file = os.path.join(ROOT, "config", "humanoid.yaml")
    config = SensorConfig.from_yaml(params_file)
    print("preparing readings ...", flush=True)
    base = readings(xml, config)
    if args.publisher_cpus:
        os.sched_setaffinity(0, args.publisher_cpus)     # before rclpy.init: the middleware's threads inherit it
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; node: python -m rbd_estimator.node "
          f"(tick thread: WaitSetSpinner) on CPUs {sorted(node_cpus)}, publisher on CPUs "
          f"{sorted(os.sched_getaffinity(0))}")
    print(f"{'rate (Hz)':>10}{'published':>11}{'estimates':>11}{'missed':>9}{'missed %':>10}"
          f"{'median ms':>11}{'p99 ms':>9}{'max ms':>9}{'callback p99 ms':>17}{'node tick med/p99 ms':>22}")
    rclpy.init()
    try:
        for rate in args.rates:
            ns = f"/rbd_bench_{os.getpid()}_{int(rate)}"
            # the fault monitor off: the cycled recording jumps back every 0.5 s, and the χ² test rightly
            # flags the finite-difference accelerations of the jump (no estimate at those ticks)
            proc = NodeProcess(xml, params_file, ns, overrides={"oracle_every_n": 0, "fault_false_alarm_rate": 0.0},
                               cpus=node_cpus)
            client = Client(ns, base.joint_names, base.ft_names, ())     # its /diagnostics: client.diagnostics
            try:
                if not (client.transition("configure") and client.transition("activate") and client.wait_matched()):
                    print(proc.log_tail(), file=sys.stderr)
                    return 1
                n_fallbacks = len(config.sensor_names)
                end = time.monotonic() + 300.0          # wait for the background fallback planning
                while time.monotonic() < end and sum(k.startswith("fallback/")
                                                     for k in dict(client.diagnostics)) < n_fallbacks:
                    time.sleep(0.1)
                time.sleep(0.5)
                rec = cycle(base, int(args.duration * rate))
                stamps, sent, late = publish_loop(client, rec, rate)
                time.sleep(1.2)                     # the last estimates and a /diagnostics after them
                sent_at = dict(zip(stamps.tolist(), sent.tolist()))
                received, arrival = dict(client.received), dict(client.arrival)
                lat = np.array([(received[s] - sent_at[s]) * 1e-6 for s in received if s in sent_at])
                lat_cb = np.array([(arrival[s] - sent_at[s]) * 1e-6 for s in arrival if s in sent_at])
                got = len(lat)
                v = dict(client.diagnostics)
                node_lat = (f"{float(v['tick_latency_median_ms']):.3f} / {float(v['tick_latency_p99_ms']):.3f}"
                            if v else "")
                missed = len(stamps) - got
                med, p99, mx, p99_cb = ((np.median(lat), np.percentile(lat, 99), lat.max(), np.percentile(lat_cb, 99))
                                        if got else (np.nan,) * 4)
                print(f"{rate:>10.0f}{len(stamps):>11}{got:>11}{missed:>9}{100.0 * missed / len(stamps):>9.1f}%"
                      f"{med:>11.3f}{p99:>9.3f}{mx:>9.3f}{p99_cb:>17.3f}{node_lat:>22}", flush=True)
                if late:
                    print(f"{'':>10}(publisher behind schedule by more than a period on {late} steps)")
                client.transition("deactivate")
                client.transition("cleanup")
                client.transition("shutdown")
            finally:
                client.close()
                proc.stop()
    finally:
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
