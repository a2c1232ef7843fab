#!/usr/bin/env python3
"""Chignoli et al. §VI-A in time: the constraint-embedding ABA versus pinocchio's constrained forward
dynamics against the number of clusters, in one process; and the LoopEstimator's tick against the
tree estimate (issue 13).

    python benchmarks/bench_loops.py [--depths 1 2 4 8 16 32] [--branches 1 4] [--seconds 1] [--out docs/]
    python benchmarks/bench_loops.py --estimator

Systems (``test/loop_mechanisms.py``, Fig. 9): ``b`` branches of ``d`` sub-mechanisms in series on a
fixed base — link and rotor (2 bodies per cluster), parallel belt transmission (4) and four-bar
(3) —, so ``d·b`` clusters. Inputs are spanning-tree positions, velocities and efforts for every
algorithm, as in the paper. Per call, in µs (medians of interleaved rounds,
``benchmarks/common.paired_median_us``):

* ``ce_aba``: the compiled constraint-embedding ABA (:class:`rbd_estimator.dynamics.ClusterDynamics`,
  arrays in and out, no allocation; for four-bars it includes the extraction of G and g);
* ``ce_aba_py``: the readable reference (:mod:`rbd_estimator.dynamics.ce_aba`, Python looping over
  clusters), up to ``--reference-max`` clusters;
* ``pin``: pinocchio's constrained dynamics — ``constraintDynamics`` (proximal and sparse, the
  algorithm of the paper's benchmark) with a ``CONTACT_3D`` ``RigidConstraintModel`` per four-bar;
  ``forwardDynamics(q, v, τ, J, γ)`` (KKT on M and J) for gears, which ``RigidConstraintModel``
  cannot express;
* ``pin_aba``: pinocchio's unconstrained ABA on the spanning tree, as a floor.

Everything runs on one thread (``OMP_NUM_THREADS=1`` unless set).

A least-squares line ``t = a + b·N_C`` is fitted to each series (``r2`` near 1 means linear cost),
and the exponent ``p`` of ``t ∝ N_C^p`` over ``N_C ≥ 8`` (log-log slope). ``--out`` saves
``chignoli_time.png``. ``--estimator``: per tick, the :class:`LoopEstimator` (closure of its
four-bars, ``[q q̇ q̈] = G [y ẏ ÿ]``, tree estimate, ``τ_y = Gᵀ τ_q``) against the
:class:`Estimator` on the spanning tree with the same sensors and the same spanning state, on the
shipped loop humanoid (``config/humanoid.yaml`` sensors, ``config/humanoid_loops.yaml`` rotors) and
the four-bar knee (``test/data/loops/four_bar_knee.*``, fixed base); last column: the same tick
with the loops closed in Python (the path kept for :class:`ExplicitLoop`). A benchmark, not a
test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

# One thread for pinocchio (Eigen's OpenMP), as our kernels: on a loaded 2-core machine its threads
# otherwise wait for each other (34 ms instead of 0.26 ms for 64 link-and-rotor clusters, measured)
os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test"), os.path.join(REPO, "benchmarks")]

import pinocchio as pin  # noqa: E402
from loop_mechanisms import mechanism_chains  # noqa: E402
from loops_oracle import LoopPair  # noqa: E402

from common import machine, median_us, paired_median_us  # noqa: E402

from rbd_estimator.dynamics import ClusterDynamics  # noqa: E402
from rbd_estimator.dynamics.ce_aba import ce_aba as ce_aba_reference  # noqa: E402
from rbd_estimator.model.loop_closure import spanning_state  # noqa: E402
from rbd_estimator.model.loops import FourBar  # noqa: E402

KINDS = ("link_and_rotor", "belt", "four_bar")


def calls_for(fn, seconds: float) -> int:
    """How many calls of ``fn`` fill about ``seconds`` (at least 100)."""
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < 0.05:
        fn()
        n += 1
    return max(100, int(seconds * n / (time.perf_counter() - t0)))   # (callers of the slow reference divide)


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


def timed_pair(fn_ref, fn, seconds: float) -> tuple[float, float]:
    """Medians in µs of interleaved rounds (``paired_median_us``); for calls over a millisecond, the
    medians of a few calls each, so that a row takes about ``seconds``."""
    n = calls_for(lambda: (fn_ref(), fn()), seconds)
    if n > 100 * 7:
        return paired_median_us(fn_ref, fn, n)
    k = max(3, n // 2)
    return median_us(fn_ref, k, warmup=1), median_us(fn, k, warmup=1)


def run(kind: str, depth: int, branches: int, seconds: float, reference_max: int, rng) -> dict:
    pair = LoopPair(*mechanism_chains(kind, depth, branches))
    t = pair.tree
    y, dy, _ = pair.random_state(rng, scale=0.3)
    q, v, _ = spanning_state(t, y, dy)
    tau = rng.normal(size=t.nv)
    solve, name = pin_solver(pair)
    qp, vp, taup = pair.q_pin(q), pair.v_pin(v), pair.v_pin(tau)
    d = ClusterDynamics(t)
    ours = lambda: d.aba(q, v, tau, state="spanning")            # noqa: E731
    pins = lambda: solve(qp, vp, taup)                            # noqa: E731
    theirs = pair.v_ours(pins())
    err = float(np.max(np.abs(ours() - theirs)) / max(1.0, np.max(np.abs(theirs))))
    err_ref = float(np.max(np.abs(ours() - ce_aba_reference(t, q, v, tau, state="spanning"))
                        / max(1.0, np.max(np.abs(theirs)))))
    t_pin, t_ce = timed_pair(pins, ours, seconds)
    pd = pair.pm.createData()
    aba = lambda: pin.aba(pair.pm, pd, qp, vp, taup)              # noqa: E731
    t_aba = timed_pair(aba, aba, seconds / 4)[0]
    t_py = float("nan")
    if t.NC <= reference_max:
        py = lambda: ce_aba_reference(t, q, v, tau, state="spanning")   # noqa: E731
        t_py = median_us(py, max(5, calls_for(py, seconds / 4) // 100), warmup=2)
    return dict(kind=kind, depth=depth, branches=branches, clusters=t.NC, bodies=t.model.NB, nv=t.nv, ny=t.nvy,
                ce_aba=t_ce, ce_aba_py=t_py, pin=t_pin, pin_name=name, pin_aba=t_aba, agreement=err,
                agreement_ref=err_ref)


def fit(x, y):
    """Least-squares ``y = a + b x`` and its coefficient of determination."""
    A = np.column_stack([np.ones(len(x)), x])
    (a, b), *_ = np.linalg.lstsq(A, y, rcond=None)
    r2 = 1.0 - np.sum((y - A @ [a, b]) ** 2) / max(np.sum((y - np.mean(y)) ** 2), 1e-300)
    return a, b, r2


def estimator_rows(seconds: float) -> list[dict]:
    """LoopEstimator tick versus the tree estimate (see the module docstring); prints and returns
    the rows (``name, loops, loop, tree, python``: µs)."""
    from test_loop_estimator import LOOPS, XML, LoopTruth, _read

    from rbd_estimator.estimation import SensorConfig
    from rbd_estimator.estimation.loops import LoopEstimator
    from rbd_estimator.model.loops import LoopConfig
    rng = np.random.default_rng(7)
    cases = []
    est = LoopEstimator.from_urdf(XML, SensorConfig.from_yaml(os.path.join(REPO, "config", "humanoid.yaml")), LOOPS)
    inputs, _ = LoopTruth(XML, LOOPS, est).sample(rng)
    cases.append(("humanoid + rotors (IMU, 6 F/T, 2 feet)", est, inputs))
    data = os.path.join(REPO, "test", "data", "loops")
    est = LoopEstimator.from_urdf(_read(os.path.join(data, "four_bar_knee.urdf")),
                                  SensorConfig.from_dict(dict(floating_base=False)),
                                  LoopConfig.from_yaml(os.path.join(data, "four_bar_knee.yaml")))
    n = len(est.joint_names)
    cases.append(("four-bar knee + rotors (fixed base)", est,
                  dict(q=rng.uniform(-1, 1, n), dq=rng.normal(size=n), ddq=rng.normal(size=n))))
    rows = []
    print(f"\n{'robot':40s} {'loops per tick':>15s} {'LoopEstimator µs':>17s} {'tree estimate µs':>17s} {'ratio':>6s} {'Python loops µs':>15s}")
    for name, est, inputs in cases:
        sensors = {k: v for k, v in inputs.items() if k not in ("q", "dq", "ddq")}
        est.estimate(**inputs)
        Q = est._Q.copy()                                          # the same spanning state for the tree
        tree = est.estimator
        loop = lambda: est.estimate(**inputs)                       # noqa: E731
        plain = lambda: tree.estimate(Q[0], Q[1], Q[2], **sensors)   # noqa: E731
        t_tree, t_loop = paired_median_us(plain, loop, calls_for(lambda: (plain(), loop()), seconds))
        state = ", ".join(est.state_dependent) or "none (constant G)"
        packed, est._packed = est._packed, None                    # the Python closure, for comparison
        t_python = median_us(loop, max(20, calls_for(loop, seconds / 4) // 100), warmup=5) if est.state_dependent \
            else float("nan")
        est._packed = packed
        print(f"{name:40s} {state:>15s} {t_loop:17.1f} {t_tree:17.1f} {t_loop / t_tree:6.2f} {t_python:15.0f}",
              flush=True)
        rows.append(dict(name=name, loops=state, loop=t_loop, tree=t_tree, python=t_python))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depths", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    ap.add_argument("--branches", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--seconds", type=float, default=1.0, help="time per measurement (about)")
    ap.add_argument("--reference-max", type=int, default=32, help="largest N_C timed with the Python reference")
    ap.add_argument("--estimator", action="store_true", help="only the LoopEstimator tick against the tree estimate")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    print(f"# {machine()}")
    if args.estimator:
        estimator_rows(args.seconds)
        return
    rng = np.random.default_rng(0)
    print(f"{'mechanism':15s} {'b':>2s} {'d':>3s} {'N_C':>4s} {'N_B':>4s} {'ce_aba µs':>10s} {'pin µs':>9s} "
          f"{'ce/pin':>7s} {'pin_aba µs':>10s} {'ce_aba_py µs':>12s}  pin algorithm        rel diff pin, ref")
    rows = []
    for kind in args.kinds:
        for b in args.branches:
            for d in args.depths:
                r = run(kind, d, b, args.seconds, args.reference_max, rng)
                rows.append(r)
                print(f"{kind:15s} {b:2d} {d:3d} {r['clusters']:4d} {r['bodies']:4d} {r['ce_aba']:10.2f} "
                      f"{r['pin']:9.2f} {r['ce_aba'] / r['pin']:7.3f} {r['pin_aba']:10.2f} {r['ce_aba_py']:12.0f}  "
                      f"{r['pin_name']:20s} {r['agreement']:.1e}, {r['agreement_ref']:.1e}", flush=True)
    print("\nlinear fits t = a + b·N_C (µs):")
    for kind in args.kinds:
        for b in args.branches:
            sel = [r for r in rows if r["kind"] == kind and r["branches"] == b]
            x = np.array([r["clusters"] for r in sel], dtype=float)
            for key in ("ce_aba", "pin", "ce_aba_py"):
                y = np.array([r[key] for r in sel])
                ok = np.isfinite(y)
                if ok.sum() < 2:
                    continue
                a, s, r2 = fit(x[ok], y[ok])
                big = ok & (x >= 8)
                p = np.polyfit(np.log(x[big]), np.log(y[big]), 1)[0] if big.sum() >= 2 else float("nan")
                print(f"  {kind:15s} b={b}  {key:9s} a={a:9.2f}  b={s:8.3f} µs/cluster  r²={r2:.4f}  "
                      f"t ∝ N_C^{p:.2f} (N_C ≥ 8)")
    if args.out:
        plot(rows, args.kinds, args.branches, os.path.join(args.out, "chignoli_time.png"))


def plot(rows, kinds, branches, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(kinds), figsize=(4.2 * len(kinds), 3.6), squeeze=False)
    for ax, kind in zip(axes[0], kinds):
        for b, style in zip(branches, ("o-", "s--", "^:")):
            sel = [r for r in rows if r["kind"] == kind and r["branches"] == b]
            x = [r["clusters"] for r in sel]
            ax.plot(x, [r["ce_aba"] for r in sel], style, color="C0", label=f"CE-ABA compiled, b={b}")
            ax.plot(x, [r["pin"] for r in sel], style, color="C1", label=f"pinocchio {sel[0]['pin_name']}, b={b}")
            ax.plot(x, [r["ce_aba_py"] for r in sel], style, color="C2", alpha=0.5, label=f"CE-ABA Python, b={b}")
            ax.plot(x, [r["pin_aba"] for r in sel], style, color="0.6", alpha=0.6, label=f"pinocchio ABA (tree), b={b}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(kind.replace("_", " "))
        ax.set_xlabel("number of clusters")
        ax.set_ylabel("µs per call")
        ax.legend(fontsize=5)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, dpi=130)
    print(f"saved {path}")


if __name__ == "__main__":
    main()
