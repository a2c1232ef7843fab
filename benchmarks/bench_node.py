#!/usr/bin/env python3
"""Throughput and latency of the estimator node with the shipped humanoid (not a test).

    python benchmarks/bench_node.py [--duration 60] [--rates 1000 2000] [--executor multi_threaded]

Starts the node (``python -m rbd_estimator.node``, a separate process, as deployed) with
``urdf/humanoid.urdf`` and ``config/humanoid.yaml``, configures and activates it through its
lifecycle services, waits for the fallback plans, then publishes from this process, at each rate:
an IMU sample, the six force-torque readings and a joint state per period (0.5 s of the demo's
simulated humanoid, noise-free, repeated; stamps increasing). It reports

* ticks missed: joint states published that got no ``~/joint_torques`` message (the node drops
  what it cannot process: its inputs are best-effort, queue depth 32);
* input-to-output latency: from just before the joint state is published to the arrival of the
  estimate with its stamp here (median, p99, max);
* the node's own tick latency (callback entry to publish) from its ``/diagnostics``.
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
    args = ap.parse_args(argv)

    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray

    from rbd_estimator.estimation import SensorConfig
    from rbd_estimator.ros.demo_runner import Client, NodeProcess, publish_loop

    xml = open(os.path.join(ROOT, "urdf", "humanoid.urdf"), encoding="utf-8").read()
    params_file = os.path.join(ROOT, "config", "humanoid.yaml")
    config = SensorConfig.from_yaml(params_file)
    print("preparing readings ...", flush=True)
    base = readings(xml, config)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; node: python -m rbd_estimator.node "
          f"(tick thread: WaitSetSpinner)")
    print(f"{'rate (Hz)':>10}{'published':>11}{'estimates':>11}{'missed':>9}{'missed %':>10}"
          f"{'median ms':>11}{'p99 ms':>9}{'max ms':>9}{'node tick med/p99 ms':>22}")
    rclpy.init()
    try:
        for rate in args.rates:
            ns = f"/rbd_bench_{os.getpid()}_{int(rate)}"
            # the fault monitor off: the cycled recording jumps back every 0.5 s, and the χ² test rightly
            # flags the finite-difference accelerations of the jump (no estimate at those ticks)
            proc = NodeProcess(xml, params_file, ns, overrides={"oracle_every_n": 0, "diagnostics_period": 0.5,
                                                                 "fault_false_alarm_rate": 0.0})
            client = Client(ns, base.joint_names, base.ft_names, ())
            diag = []
            client.node.create_subscription(
                DiagnosticArray, "/diagnostics",
                lambda m: diag.extend(s for s in m.status if s.name.endswith(f"{ns}/rbd_estimator")), 10)
            try:
                if not (client.transition("configure") and client.transition("activate") and client.wait_matched()):
                    print(proc.log_tail(), file=sys.stderr)
                    return 1
                n_fallbacks = len(config.sensor_names)
                end = time.monotonic() + 300.0          # wait for the background fallback planning
                while time.monotonic() < end and not (
                        diag and sum(kv.key.startswith("fallback/") for kv in diag[-1].values) >= n_fallbacks):
                    time.sleep(0.1)
                time.sleep(0.5)
                rec = cycle(base, int(args.duration * rate))
                stamps, sent, late = publish_loop(client, rec, rate)
                time.sleep(1.0)
                arrival = dict(client.arrival)
                sent_at = dict(zip(stamps.tolist(), sent.tolist()))
                lat = np.array([(arrival[s] - sent_at[s]) * 1e-6 for s in arrival if s in sent_at])
                got = len(lat)
                node_lat = ""
                if diag:
                    v = {kv.key: kv.value for kv in diag[-1].values}
                    node_lat = f"{float(v['tick_latency_median_ms']):.3f} / {float(v['tick_latency_p99_ms']):.3f}"
                missed = len(stamps) - got
                med, p99, mx = ((np.median(lat), np.percentile(lat, 99), lat.max()) if got else (np.nan,) * 3)
                print(f"{rate:>10.0f}{len(stamps):>11}{got:>11}{missed:>9}{100.0 * missed / len(stamps):>9.1f}%"
                      f"{med:>11.3f}{p99:>9.3f}{mx:>9.3f}{node_lat:>22}", flush=True)
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
