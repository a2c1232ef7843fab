#!/usr/bin/env python3
"""Cost of the constraint-embedding ABA versus the number of clusters (Chignoli et al. §VI-A, Fig. 8),
beside pinocchio's constrained forward dynamics on the same systems, in one process.

    python benchmarks/bench_loops.py [--depths 1 2 4 8 16 32] [--branches 1 4] [--calls 30] [--out docs/]

Systems (``test/loop_mechanisms.py``, Fig. 9): ``b`` branches of ``d`` sub-mechanisms in series on a
fixed base — link and rotor (2 bodies per cluster), parallel belt transmission (4) and four-bar
(3) —, so ``d·b`` clusters. Inputs are spanning-tree positions, velocities and efforts for every
algorithm, as in the paper. Timed per call in µs (the smallest of five block medians):

* ``ce_aba``: our constraint-embedding ABA (:func:`rbd_estimator.dynamics.ce_aba.ce_aba`, readable
  Python looping over clusters; for four-bars it includes the numerical extraction of G and g);
* ``pin``: pinocchio's constrained dynamics — ``constraintDynamics`` (proximal and sparse, the
  algorithm of the paper's benchmark) with a ``CONTACT_3D`` ``RigidConstraintModel`` per four-bar;
  ``forwardDynamics(q, v, τ, J, γ)`` (KKT on M and J) for gears, which ``RigidConstraintModel``
  cannot express;
* ``pin_aba``: pinocchio's unconstrained ABA on the spanning tree, as a floor.

A least-squares line ``t = a + b·N_C`` is fitted to each series (``r2`` near 1 means linear cost),
and the exponent ``p`` of ``t ∝ N_C^p`` over ``N_C ≥ 8`` (log-log slope).
A benchmark, not a test: it asserts nothing about time. ``--out`` saves ``loops_scaling.png``.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test")]

import pinocchio as pin  # noqa: E402
from loop_mechanisms import mechanism_chains  # noqa: E402
from loops_oracle import LoopPair  # noqa: E402

from rbd_estimator.dynamics.ce_aba import ce_aba  # noqa: E402
from rbd_estimator.model.loop_closure import spanning_state  # noqa: E402
from rbd_estimator.model.loops import FourBar  # noqa: E402

KINDS = ("link_and_rotor", "belt", "four_bar")


def median_us(fn, calls: int, blocks: int = 5) -> float:
    """Per-call time in µs: the smallest of ``blocks`` medians over ``calls`` calls each, after a
    warm-up (the smallest block resists other processes on a shared machine, like timeit's best-of)."""
    for _ in range(max(1, calls // 10)):
        fn()
    best = np.inf
    for _ in range(blocks):
        t = np.empty(calls)
        for k in range(calls):
            t0 = time.perf_counter()
            fn()
            t[k] = time.perf_counter() - t0
        best = min(best, float(np.median(t)))
    return best * 1e6


def pin_solver(pair: LoopPair):
    """A callable ``(q, v, τ_tree) -> q̈`` running pinocchio's constrained dynamics (see docstring)
    with everything that does not depend on the state prepared once, and its name."""
    pm = pair.pm
    if all(isinstance(lp, FourBar) for lp in pair.config.loops):
        models = pin.StdVec_RigidConstraintModel()
        for lp, ja, Pa, jb, Pb in pair._closures:
            models.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, ja, Pa, jb, Pb,
                                                   pin.ReferenceFrame.LOCAL))
        datas = pin.StdVec_RigidConstraintData()
        for cm in models:
            datas.append(cm.createData())
        data = pm.createData()
        pin.initConstraintDynamics(pm, data, models, datas)
        settings = pin.ProximalSettings(1e-12, 1e-10, 20)
        return (lambda q, v, tau: pin.constraintDynamics(pm, data, q, v, tau, models, datas, settings)), \
            "constraintDynamics"
    data = pm.createData()
    q0, v0, _ = spanning_state(pair.tree, pair.tree.y_from_q(pair.tree.q_reference), np.zeros(pair.tree.nvy))
    K, k = pair.independent_rows(q0, v0)                            # gear constraints: constant J, γ = 0
    J = np.zeros((K.shape[0], pm.nv))
    J[:, pair.v_map] = K
    gamma = np.zeros(K.shape[0])
    return (lambda q, v, tau: pin.forwardDynamics(pm, data, q, v, tau, J, gamma, 0.0)), "forwardDynamics(J)"


def run(kind: str, depth: int, branches: int, calls: int, rng) -> dict:
    pair = LoopPair(*mechanism_chains(kind, depth, branches))
    t = pair.tree
    y, dy, _ = pair.random_state(rng, scale=0.3)
    q, v, _ = spanning_state(t, y, dy)
    tau = rng.normal(size=t.nv)
    solve, name = pin_solver(pair)
    qp, vp, taup = pair.q_pin(q), pair.v_pin(v), pair.v_pin(tau)
    ours = ce_aba(t, q, v, tau, state="spanning")
    theirs = pair.v_ours(solve(qp, vp, taup))
    err = float(np.max(np.abs(ours - theirs)) / max(1.0, np.max(np.abs(theirs))))
    pd = pair.pm.createData()
    return dict(kind=kind, depth=depth, branches=branches, clusters=t.NC, bodies=t.model.NB, nv=t.nv, ny=t.nvy,
                ce_aba=median_us(lambda: ce_aba(t, q, v, tau, state="spanning"), calls),
                pin=median_us(lambda: solve(qp, vp, taup), calls * 20), pin_name=name,
                pin_aba=median_us(lambda: pin.aba(pair.pm, pd, qp, vp, taup), calls * 20), agreement=err)


def fit(x, y):
    """Least-squares ``y = a + b x`` and its coefficient of determination."""
    A = np.column_stack([np.ones(len(x)), x])
    (a, b), *_ = np.linalg.lstsq(A, y, rcond=None)
    r2 = 1.0 - np.sum((y - A @ [a, b]) ** 2) / max(np.sum((y - np.mean(y)) ** 2), 1e-300)
    return a, b, r2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--branches", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"# {platform.python_implementation()} {platform.python_version()}, numpy {np.__version__}, "
          f"pinocchio {pin.__version__}, {platform.machine()}")
    print(f"{'mechanism':15s} {'b':>2s} {'d':>3s} {'N_C':>4s} {'N_B':>4s} {'ce_aba µs':>10s} {'pin µs':>8s} "
          f"{'pin_aba µs':>10s} {'ratio':>6s}  pin algorithm        max rel diff")
    rows = []
    for kind in args.kinds:
        for b in args.branches:
            for d in args.depths:
                r = run(kind, d, b, args.calls, rng)
                rows.append(r)
                print(f"{kind:15s} {b:2d} {d:3d} {r['clusters']:4d} {r['bodies']:4d} {r['ce_aba']:10.0f} "
                      f"{r['pin']:8.1f} {r['pin_aba']:10.1f} {r['ce_aba'] / r['pin']:6.0f}  "
                      f"{r['pin_name']:20s} {r['agreement']:.1e}", flush=True)
    print("\nlinear fits t = a + b·N_C (µs):")
    for kind in args.kinds:
        for b in args.branches:
            sel = [r for r in rows if r["kind"] == kind and r["branches"] == b]
            x = np.array([r["clusters"] for r in sel], dtype=float)
            for key in ("ce_aba", "pin"):
                y = np.array([r[key] for r in sel])
                a, s, r2 = fit(x, y)
                big = x >= 8
                p = np.polyfit(np.log(x[big]), np.log(y[big]), 1)[0] if big.sum() >= 2 else float("nan")
                print(f"  {kind:15s} b={b}  {key:7s} a={a:9.1f}  b={s:8.2f} µs/cluster  r²={r2:.4f}  "
                      f"t ∝ N_C^{p:.2f} (N_C ≥ 8)")
    if args.out:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, len(args.kinds), figsize=(4.2 * len(args.kinds), 3.6), squeeze=False)
        for ax, kind in zip(axes[0], args.kinds):
            for b, style in zip(args.branches, ("o-", "s--", "^:")):
                sel = [r for r in rows if r["kind"] == kind and r["branches"] == b]
                x = [r["clusters"] for r in sel]
                ax.plot(x, [r["ce_aba"] for r in sel], style, color="C0", label=f"CE-ABA (Python), b={b}")
                ax.plot(x, [r["pin"] for r in sel], style, color="C1", label=f"pinocchio {sel[0]['pin_name']}, b={b}")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(kind.replace("_", " "))
            ax.set_xlabel("number of clusters")
            ax.set_ylabel("µs per call")
            ax.legend(fontsize=6)
        fig.tight_layout()
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "loops_scaling.png")
        fig.savefig(path, dpi=130)
        print(f"saved {path}")


if __name__ == "__main__":
    main()
