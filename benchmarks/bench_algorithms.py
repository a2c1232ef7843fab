#!/usr/bin/env python3
"""Per-call medians of the compiled dynamics functions beside pinocchio's, in one process.

    python benchmarks/bench_algorithms.py [--robot icub|talos|g1 ...] [--base fixed|floating ...]
                                          [--calls 2000] [--reference]

For every robot (iCub, Talos ``talos_reduced.urdf``, G1; built with ``test/oracle.py``'s
:class:`Pair`) and base, one random state; each of our public functions (numpy arrays in, a new
numpy array out) is timed beside its pinocchio counterpart with ``common.paired_median_us``
(interleaved rounds, so a burst of load on a shared machine shifts both sides of a ratio), after
warm-up. ``ratio`` = ours / pinocchio's; the issue's target is ≤ 2 for every row.

* ``rnea``, ``aba``, ``crba``, ``minverse``: pinocchio's ``rnea``, ``aba``, ``crba``, ``computeMinverse``;
* ``forward_dynamics_ltdl`` (RNEA for the bias + CRBA + sparse LTDL + solves): pinocchio's ``crba`` +
  ``cholesky.decompose`` + ``cholesky.solve`` (the target's counterpart, which leaves out the bias
  term), and, as a like-for-like row, the same with ``nonLinearEffects`` first;
* ``SparseForwardDynamics.compute`` (Nori's sparse LU of eq. 15) beside pinocchio's ``aba``.

``--reference`` adds the readable reference versions (slow; fewer calls). A benchmark, not a test:
it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test")]

import pinocchio as pin  # noqa: E402
from common import machine, median_us, paired_median_us  # noqa: E402

from oracle import Pair, urdf_xml  # noqa: E402
from rbd_estimator import dynamics as dyn  # noqa: E402
from rbd_estimator.dynamics import reference as ref  # noqa: E402
from rbd_estimator.estimation.forward import SparseForwardDynamics  # noqa: E402


def rows(p: Pair, rng):
    """``(ours, fn, pinocchio's, pfn)`` for one model and one random state."""
    m, pm, pd = p.model, p.pin_model, p.pin_data
    q, v, a = p.random_state(rng)
    tau = rng.normal(size=m.nv)
    qp, vp, ap_, taup = p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(a), p.v_to_pin(tau)
    sfd = SparseForwardDynamics(m)

    def pin_chol():
        pin.crba(pm, pd, qp)
        pin.cholesky.decompose(pm, pd)
        return pin.cholesky.solve(pm, pd, taup)

    def pin_nle_chol():
        pin.nonLinearEffects(pm, pd, qp, vp)
        pin.crba(pm, pd, qp)
        pin.cholesky.decompose(pm, pd)
        return pin.cholesky.solve(pm, pd, taup - pd.nle)

    return [
        ("rnea", lambda: dyn.rnea(m, q, v, a), "rnea", lambda: pin.rnea(pm, pd, qp, vp, ap_)),
        ("aba", lambda: dyn.aba(m, q, v, tau), "aba", lambda: pin.aba(pm, pd, qp, vp, taup)),
        ("crba", lambda: dyn.crba(m, q), "crba", lambda: pin.crba(pm, pd, qp)),
        ("minverse", lambda: dyn.minverse(m, q), "computeMinverse", lambda: pin.computeMinverse(pm, pd, qp)),
        ("forward_dynamics_ltdl", lambda: dyn.forward_dynamics_ltdl(m, q, v, tau), "crba+cholesky", pin_chol),
        ("forward_dynamics_ltdl", lambda: dyn.forward_dynamics_ltdl(m, q, v, tau), "nle+crba+cholesky",
         pin_nle_chol),
        ("SparseForwardDynamics", lambda: sfd.compute(q, v, tau), "aba", lambda: pin.aba(pm, pd, qp, vp, taup)),
    ], [
        ("reference.rnea", lambda: ref.rnea(m, q, v, a)),
        ("reference.aba", lambda: ref.aba(m, q, v, tau)),
        ("reference.crba", lambda: ref.crba(m, q)),
        ("reference.minverse", lambda: ref.minverse(m, q)),
        ("reference.forward_dynamics_ltdl", lambda: ref.forward_dynamics_ltdl(m, q, v, tau)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", nargs="+", default=["icub", "talos", "g1"], choices=["icub", "talos", "g1"])
    ap.add_argument("--base", nargs="+", default=["fixed", "floating"], choices=["fixed", "floating"])
    ap.add_argument("--calls", type=int, default=2000, help="calls of each function, over 7 interleaved rounds")
    ap.add_argument("--reference", action="store_true", help="also time the readable reference versions")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    print(f"medians over 7 interleaved rounds of {args.calls // 7} calls each, after warm-up (µs)\n")
    print(f"{'robot':<16}{'ours':<24}{'µs':>8}   {'pinocchio':<19}{'µs':>8}{'ratio':>8}")
    print("-" * 83)
    worst = {}
    for robot in args.robot:
        for base in args.base:
            p = Pair(urdf_xml(robot), floating_base=base == "floating")
            ours, refs = rows(p, np.random.default_rng(0))
            label = f"{robot}-{base}"
            for name, fn, pname, pfn in ours:
                t_pin, t = paired_median_us(pfn, fn, args.calls)
                worst[name, pname] = max(worst.get((name, pname), 0.0), t / t_pin)
                print(f"{label:<16}{name:<24}{t:>8.2f}   {pname:<19}{t_pin:>8.2f}{t / t_pin:>8.2f}")
            if args.reference:
                for name, fn in refs:
                    print(f"{label:<16}{name:<24}{median_us(fn, 50, warmup=5):>8.0f}")
            print(f"{'':<16}(NB = {p.model.NB}, nv = {p.model.nv})")
    print("\nlargest ratio per row:")
    for (name, pname), r in worst.items():
        print(f"  {name:<24} / {pname:<19} {r:5.2f}")


if __name__ == "__main__":
    main()
