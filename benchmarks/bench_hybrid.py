#!/usr/bin/env python3
"""Forward and hybrid dynamics through the estimator's plan (:mod:`rbd_estimator.estimation.hybrid`):
accuracy against pinocchio and time beside the ``SparseForwardDynamics`` of an earlier revision.

    python benchmarks/bench_hybrid.py [--robot icub talos go2] [--calls 2100] [--before REV]

For every robot (``test/oracle.py``'s :class:`Pair`; Go2 from ``robots.urdf_file``) and base:

* accuracy: the largest relative error, over random states, of forward dynamics through the plan
  (``SparseForwardDynamics``, all accelerations unknown) against pinocchio's ``aba``, and of a random
  split (``HybridDynamics``, half the DoF with known accelerations) against pinocchio's reduced
  ``crba``/``rnea`` system (the oracle of ``test/test_hybrid_dynamics.py``);
* time, one process, interleaved rounds of medians (``common.median_us``): pinocchio's ``aba``,
  our ``aba``, ``SparseForwardDynamics.compute`` now, the same at revision ``--before`` (its source read
  with ``git show`` and loaded beside the package, compiled without numba's cache), and
  ``HybridDynamics.compute`` for the random split. ``now / before`` is the issue's ratio (≤ 1.5).

A benchmark, not a test: it asserts nothing about time. Prints ``uptime`` before and after.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test")]

import pinocchio as pin  # noqa: E402
from common import machine, median_us  # noqa: E402
from test_hybrid_dynamics import pair, pinocchio_hybrid  # noqa: E402
from oracle import rel_err  # noqa: E402

from rbd_estimator import dynamics as dyn  # noqa: E402
from rbd_estimator.estimation.forward import SparseForwardDynamics  # noqa: E402
from rbd_estimator.estimation.hybrid import HybridDynamics  # noqa: E402

#: the last revision with the separate builder of eq. (15)
BEFORE = "0f90f7f"


def forward_before(rev: str):
    """``SparseForwardDynamics`` as it was at ``rev`` (a module beside the package; no jit cache)."""
    src = subprocess.run(["git", "-C", REPO, "show", f"{rev}:rbd_estimator/estimation/forward.py"],
                         check=True, capture_output=True, text=True).stdout
    src = src.replace("from ..jit import njit", "from numba import njit")
    path = os.path.join(tempfile.mkdtemp(), "forward_before.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(src)
    spec = importlib.util.spec_from_file_location("rbd_estimator.estimation._forward_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SparseForwardDynamics


def interleaved(fns: dict, calls: int, rounds: int = 7) -> dict:
    """Median over ``rounds`` interleaved rounds of every function's median (µs)."""
    n = max(100, calls // rounds)
    t = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            t[k].append(median_us(fn, n))
    return {k: float(np.median(v)) for k, v in t.items()}


def accuracy(p, fd, old, hd, known, rng, states=10):
    """Largest relative errors against pinocchio: forward dynamics now, before and by our ``aba``,
    the split; and the largest ``10 κ(M) ε`` of the states (the bound of the tests)."""
    m = p.model
    e = np.zeros(5)
    for _ in range(states):
        q, v, ddq = p.random_state(rng)
        tau = rng.normal(size=m.nv)
        ref = p.v_from_pin(pin.aba(p.pin_model, p.pin_data, p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(tau)))
        _, _, bound = pinocchio_hybrid(p, q, v, tau, ddq, np.zeros(m.nv, bool))
        got = hd.compute(q, v, tau, ddq)
        r_ddq, r_tau, _ = pinocchio_hybrid(p, q, v, tau, ddq, known)
        e = np.maximum(e, [rel_err(fd.compute(q, v, tau), ref), rel_err(old.compute(q, v, tau), ref),
                           rel_err(dyn.aba(m, q, v, tau), ref), max(rel_err(got[0], r_ddq), rel_err(got[1], r_tau)),
                           bound])
    return e


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robot", nargs="+", default=["icub", "talos", "go2"])
    ap.add_argument("--calls", type=int, default=2100)
    ap.add_argument("--before", default=BEFORE, help="revision of the SparseForwardDynamics to compare with")
    a = ap.parse_args()
    print(machine())
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    Before = forward_before(a.before)
    print("| robot | base | nv | forward vs pinocchio aba: now | before | our aba | max(1e-9, 10 κ ε) "
          "| split vs pinocchio crba/rnea | pinocchio aba µs | our aba µs "
          f"| SparseForwardDynamics µs | at {a.before} µs | now / before | HybridDynamics (split) µs "
          "| flops now | flops before |")
    print("|---" * 16 + "|")
    for robot in a.robot:
        for fb in (False, True):
            p = pair(robot, fb)
            m, pm, pd = p.model, p.pin_model, p.pin_data
            rng = np.random.default_rng([11, len(robot), int(fb)])
            known = rng.random(m.nv) < 0.5
            fd, old, hd = SparseForwardDynamics(m), Before(m), HybridDynamics(m, known)
            e = accuracy(p, fd, old, hd, known, rng)
            q, v, ddq = p.random_state(rng)
            tau = rng.normal(size=m.nv)
            qp, vp, taup = p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(tau)
            d = dyn.DynamicsData(m)
            t = interleaved({"pin": lambda: pin.aba(pm, pd, qp, vp, taup),
                             "aba": lambda: dyn.aba(m, q, v, tau, data=d),
                             "now": lambda: fd.compute(q, v, tau),
                             "before": lambda: old.compute(q, v, tau),
                             "hybrid": lambda: hd.compute(q, v, tau, ddq)}, a.calls)
            print(f"| {robot} | {'floating' if fb else 'fixed'} | {m.nv} | {e[0]:.1e} | {e[1]:.1e} | {e[2]:.1e} "
                  f"| {e[4]:.1e} | {e[3]:.1e} | {t['pin']:.2f} "
                  f"| {t['aba']:.2f} | {t['now']:.2f} | {t['before']:.2f} | {t['now'] / t['before']:.2f} "
                  f"| {t['hybrid']:.2f} | {fd.lu.flops} | {old.lu.flops} |", flush=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
