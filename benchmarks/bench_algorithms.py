#!/usr/bin/env python3
"""Per-call medians of the reference dynamics algorithms beside pinocchio's, in one process.

    python benchmarks/bench_algorithms.py [--robot icub|talos|g1] [--fixed] [--calls 200]

Builds the robot (default iCub, floating base) with ``test/oracle.py``'s :class:`Pair`, draws one
random state, warms every function up, then times each call with ``time.perf_counter`` and prints
the median in µs: ours over ``--calls`` calls (≥ 200), pinocchio's over 25× as many (≥ 5000).
``ratio`` is ours / pinocchio's. Our algorithms are readable Python references that loop over
bodies (not the per-tick path), so large ratios are expected; the numbers say how large.
A benchmark, not a test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test")]

import pinocchio as pin  # noqa: E402
from common import machine, median_us  # noqa: E402

from oracle import Pair, urdf_xml  # noqa: E402
from rbd_estimator.dynamics import (aba, crba, forward_dynamics_ltdl, ltdl, minverse,  # noqa: E402
                                    rnea)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", default="icub", choices=["icub", "talos", "g1"])
    ap.add_argument("--fixed", action="store_true", help="fixed base (default: floating base)")
    ap.add_argument("--calls", type=int, default=200, help="calls of each of our functions (≥ 200)")
    args = ap.parse_args()
    calls = max(200, args.calls)
    pin_calls = max(5000, 25 * calls)

    p = Pair(urdf_xml(args.robot), floating_base=not args.fixed)
    m, pm, pd = p.model, p.pin_model, p.pin_data
    rng = np.random.default_rng(0)
    q, v, a = p.random_state(rng)
    tau = rng.normal(size=m.nv)
    qp, vp, ap_, taup = p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(a), p.v_to_pin(tau)
    H, lam = crba(m, q), m.expanded_parents

    rows = [
        ("rnea", lambda: rnea(m, q, v, a), "rnea", lambda: pin.rnea(pm, pd, qp, vp, ap_)),
        ("aba", lambda: aba(m, q, v, tau), "aba", lambda: pin.aba(pm, pd, qp, vp, taup)),
        ("crba", lambda: crba(m, q), "crba", lambda: pin.crba(pm, pd, qp)),
        ("minverse", lambda: minverse(m, q), "computeMinverse", lambda: pin.computeMinverse(pm, pd, qp)),
        ("ltdl", lambda: ltdl(H, lam), None, None),
        ("forward_dynamics_ltdl", lambda: forward_dynamics_ltdl(m, q, v, tau),
         "aba", lambda: pin.aba(pm, pd, qp, vp, taup)),
    ]

    print(f"robot: {args.robot} ({'fixed' if args.fixed else 'floating'} base), "
          f"NB = {m.NB} bodies, nv = {m.nv}, {int(np.sum(m.joint_dofs == 0))} 0-DoF bodies")
    print(f"machine: {machine()}")
    print(f"medians of {calls} calls (ours) and {pin_calls} calls (pinocchio), after warm-up\n")
    print(f"{'ours':<24}{'µs':>10}   {'pinocchio':<18}{'µs':>8}{'ratio':>9}")
    print("-" * 71)
    for name, fn, pname, pfn in rows:
        ours = median_us(fn, calls, warmup=calls // 10)
        if pfn is None:
            print(f"{name:<24}{ours:>10.1f}   {'—':<18}{'':>8}{'':>9}")
            continue
        ref = median_us(pfn, pin_calls, warmup=pin_calls // 10)
        print(f"{name:<24}{ours:>10.1f}   {pname:<18}{ref:>8.2f}{ours / ref:>9.0f}")


if __name__ == "__main__":
    main()
