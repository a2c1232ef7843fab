#!/usr/bin/env python3
"""Per-call medians of the compiled dynamics functions beside pinocchio's, in one process.

    python benchmarks/bench_algorithms.py [--robot icub|talos|g1 ...] [--base fixed|floating ...]
                                          [--calls 2000] [--reference]

For every robot (iCub, Talos ``talos_reduced.urdf``, G1; built with ``test/oracle.py``'s
:class:`Pair`) and base, one random state; each of our public functions (numpy arrays in, with a
``DynamicsData`` made once and passed as ``data=``, as pinocchio's ``Data``) is timed beside its
pinocchio counterpart with ``common.paired_median_us``
(interleaved rounds, so a burst of load on a shared machine shifts both sides of a ratio), after
warm-up. ``ratio`` = ours / pinocchio's; the issue's target is ≤ 2 for every row.

* ``rnea``, ``aba``, ``crba``, ``minverse``: pinocchio's ``rnea``, ``aba``, ``crba``, ``computeMinverse``;
* ``forward_dynamics_ltdl`` (RNEA for the bias + CRBA + sparse LTDL + solves): pinocchio's ``crba`` +
  ``cholesky.decompose`` + ``cholesky.solve`` (the target's counterpart, which leaves out the bias
  term), and, as a like-for-like row, the same with ``nonLinearEffects`` first;
* ``SparseForwardDynamics.compute`` (Nori's sparse LU of eq. 15) beside pinocchio's ``aba``.

``--reference`` adds the readable reference versions (slow; fewer calls). ``--papers DIR`` instead
measures the papers' headline results in time and saves their figures under ``DIR`` (the numbers
of ``docs/papers_in_time.md``):

* Featherstone §6: CRBA + LTDL forward dynamics over ABA on the 30-DoF humanoid and on the
  equivalent chain (paper: 1.15 and 2.6), beside ``cost()``'s prediction and pinocchio's ratio;
* Carpentier: ``minverse`` against CRBA + LTDL + inversion (ours) and ``computeMinverse`` against
  ``crba`` + ``cholesky.decompose`` + ``cholesky.computeMinv`` (pinocchio), iCub, Talos, G1;
* Nori Fig. 1 in time: ``SparseForwardDynamics`` and the ABA on fixed-base serial chains of N_B links.

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
from common import machine, median_us, paired_median_us  # noqa: E402

from oracle import Pair, urdf_xml  # noqa: E402
from trees import serial_chain, tree_urdf  # noqa: E402

from rbd_estimator import dynamics as dyn  # noqa: E402
from rbd_estimator.dynamics.ltl_jit import ltdl_kernel, solve_L_kernel, solve_Lt_kernel  # noqa: E402
from rbd_estimator.model.cost import cost  # noqa: E402
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

    d = dyn.DynamicsData(m)                  # ours, as pinocchio's pd: made once, passed to every call
    return [
        ("rnea", lambda: dyn.rnea(m, q, v, a, data=d), "rnea", lambda: pin.rnea(pm, pd, qp, vp, ap_)),
        ("aba", lambda: dyn.aba(m, q, v, tau, data=d), "aba", lambda: pin.aba(pm, pd, qp, vp, taup)),
        ("crba", lambda: dyn.crba(m, q, data=d), "crba", lambda: pin.crba(pm, pd, qp)),
        ("minverse", lambda: dyn.minverse(m, q, data=d), "computeMinverse",
         lambda: pin.computeMinverse(pm, pd, qp)),
        ("forward_dynamics_ltdl", lambda: dyn.forward_dynamics_ltdl(m, q, v, tau, data=d), "crba+cholesky", pin_chol),
        ("forward_dynamics_ltdl", lambda: dyn.forward_dynamics_ltdl(m, q, v, tau, data=d), "nle+crba+cholesky",
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
    ap.add_argument("--papers", metavar="DIR", help="measure the papers' headline results; figures into DIR")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    if args.papers:
        papers(args.papers, args.calls)
        return
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


# --------------------------------------------------------------------------- the papers in time
def _pair(xml: str, floating_base: bool) -> Pair:
    return Pair(xml, floating_base)


def featherstone(calls: int) -> list[dict]:
    """§6: forward dynamics via CRBA + LTDL over the ABA, humanoid (4 limbs of 6 on a floating torso)
    and the equivalent chain (24 revolute joints in series on a floating body), both 30 DoF."""
    limbs = [p for k in range(4) for p in ([-1] + list(range(6 * k, 6 * k + 5)))]
    out = []
    for name, parents in (("humanoid", limbs), ("chain", serial_chain(24))):
        p = _pair(tree_urdf(parents, seed=6)[0], True)
        m, pm, pd = p.model, p.pin_model, p.pin_data
        rng = np.random.default_rng(1)
        q, v, _ = p.random_state(rng)
        tau = rng.normal(size=m.nv)
        qp, vp, taup = p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(tau)
        d = dyn.DynamicsData(m)
        t_aba, t_fd = paired_median_us(lambda: dyn.aba(m, q, v, tau, data=d),
                                       lambda: dyn.forward_dynamics_ltdl(m, q, v, tau, data=d), calls)

        def pin_fd():
            pin.nonLinearEffects(pm, pd, qp, vp)
            pin.crba(pm, pd, qp)
            pin.cholesky.decompose(pm, pd)
            return pin.cholesky.solve(pm, pd, taup - pd.nle)
        t_paba, t_pfd = paired_median_us(lambda: pin.aba(pm, pd, qp, vp, taup), pin_fd, calls)
        c = cost(m)
        out.append(dict(model=name, nv=m.nv, aba=t_aba, fd=t_fd, pin_aba=t_paba, pin_fd=t_pfd, fd_ops=sum(c.fd_crba),
                        cost=sum(c.fd_crba) / sum(c.aba), paper={"humanoid": 1.15, "chain": 2.6}[name]))
    return out


def carpentier(calls: int) -> list[dict]:
    """M⁻¹ by Algorithm 1 against CRBA + factorisation + inversion, ours and pinocchio's."""
    out = []
    for robot in ("icub", "talos", "g1"):
        p = _pair(urdf_xml(robot), True)
        m, pm, pd = p.model, p.pin_model, p.pin_data
        d = dyn.DynamicsData(m)
        q, *_ = p.random_state(np.random.default_rng(2))
        qp = p.q_to_pin(q)
        A, X, eye = np.zeros((m.nv, m.nv)), np.zeros((m.nv, m.nv)), np.eye(m.nv)

        def crba_ltdl_inverse():
            A[:] = d.crba(q)                                       # H
            ltdl_kernel(A, d.lam)                                  # H = LᵀDL
            X[:] = eye
            solve_Lt_kernel(A, d.lam, X, True)                     # H⁻¹ = L⁻¹ D⁻¹ L⁻ᵀ
            np.divide(X, np.diag(A)[:, None], out=X)
            solve_L_kernel(A, d.lam, X, True)
            return X

        def pin_chol_inverse():
            pin.crba(pm, pd, qp)
            pin.cholesky.decompose(pm, pd)
            return pin.cholesky.computeMinv(pm, pd)
        assert np.allclose(crba_ltdl_inverse(), d.minverse(q), rtol=1e-6, atol=1e-6 * np.abs(d.Minv).max())
        t_chol, t_minv = paired_median_us(crba_ltdl_inverse, lambda: d.minverse(q), calls)
        t_pchol, t_pminv = paired_median_us(pin_chol_inverse, lambda: pin.computeMinverse(pm, pd, qp), calls)
        out.append(dict(robot=robot, nv=m.nv, minverse=t_minv, chol=t_chol, pin_minverse=t_pminv, pin_chol=t_pchol))
    return out


def nori(calls: int, sizes=(5, 10, 20, 30, 50, 75, 100)) -> list[dict]:
    """Fig. 1 in time: forward dynamics of fixed-base serial chains of N_B links."""
    from rbd_estimator.dynamics.aba_factorization import aba_flops
    out = []
    for n in sizes:
        p = _pair(tree_urdf(serial_chain(n), seed=n)[0], False)     # the chains of bench_scaling's Fig. 1
        m, pm, pd = p.model, p.pin_model, p.pin_data
        rng = np.random.default_rng(3)
        q, v, _ = p.random_state(rng)
        tau = rng.normal(size=m.nv)
        qp, vp, taup = p.q_to_pin(q), p.v_to_pin(v), p.v_to_pin(tau)
        sfd = SparseForwardDynamics(m)
        d = dyn.DynamicsData(m)
        t_aba, t_lu = paired_median_us(lambda: dyn.aba(m, q, v, tau, data=d), lambda: sfd.compute(q, v, tau), calls)
        t_pin = median_us(lambda: pin.aba(pm, pd, qp, vp, taup), calls)
        out.append(dict(n=n, aba=t_aba, lu=t_lu, pin_aba=t_pin, lu_flops=sfd.lu.flops,
                        aba_flops=aba_flops(m, q, v, tau), aba_formula=sum(cost(m).aba)))
    return out


def papers(out_dir: str, calls: int) -> None:
    """Measure and print the three sections, then save their figures under ``out_dir``."""
    F = featherstone(calls)
    print("Featherstone §6: forward dynamics via CRBA + LTDL over ABA (30 DoF, floating base)")
    print(f"{'model':<10}{'ABA µs':>8}{'CRBA+LTDL µs':>14}{'ratio':>7}{'cost()':>8}{'paper':>7}"
          f"{'pin ABA':>9}{'pin CRBA+chol':>15}{'pin ratio':>10}")
    for r in F:
        print(f"{r['model']:<10}{r['aba']:>8.2f}{r['fd']:>14.2f}{r['fd'] / r['aba']:>7.2f}{r['cost']:>8.2f}"
              f"{r['paper']:>7.2f}{r['pin_aba']:>9.2f}{r['pin_fd']:>15.2f}{r['pin_fd'] / r['pin_aba']:>10.2f}")
    hum, chain = F
    print(f"CRBA + LTDL, chain over humanoid: ours {chain['fd'] / hum['fd']:.2f}, pinocchio "
          f"{chain['pin_fd'] / hum['pin_fd']:.2f}, cost() {chain['fd_ops'] / hum['fd_ops']:.2f}, paper 2.18 (a = m)")
    Cp = carpentier(calls)
    print("\nCarpentier: M⁻¹ by Algorithm 1 against CRBA + factorisation + inversion (floating base, µs)")
    print(f"{'robot':<7}{'nv':>4}{'minverse':>10}{'CRBA+LTDL+inv':>15}{'ratio':>7}"
          f"{'pin Minverse':>14}{'pin CRBA+chol+inv':>19}{'pin ratio':>10}")
    for r in Cp:
        print(f"{r['robot']:<7}{r['nv']:>4}{r['minverse']:>10.2f}{r['chol']:>15.2f}{r['minverse'] / r['chol']:>7.2f}"
              f"{r['pin_minverse']:>14.2f}{r['pin_chol']:>19.2f}{r['pin_minverse'] / r['pin_chol']:>10.2f}")
    N = nori(calls)
    print("\nNori Fig. 1 in time: forward dynamics of a fixed-base serial chain (µs; flops as in Fig. 1)")
    print(f"{'N_B':>5}{'sparse LU':>11}{'ABA':>9}{'pin ABA':>9}{'LU/ABA':>8}{'LU flops':>10}{'ABA flops':>11}")
    for r in N:
        print(f"{r['n']:>5}{r['lu']:>11.2f}{r['aba']:>9.2f}{r['pin_aba']:>9.2f}{r['lu'] / r['aba']:>8.2f}"
              f"{r['lu_flops']:>10d}{r['aba_flops']:>11d}")
    plot_papers(F, Cp, N, out_dir)


def plot_papers(F, Cp, N, out_dir: str) -> None:
    """``papers_featherstone.png``, ``papers_carpentier.png``, ``papers_nori.png`` from the rows of
    :func:`featherstone`, :func:`carpentier` and :func:`nori`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = ["paper (ops)", "cost() (ops)", "ours (time)", "pinocchio (time)"]
    for k, r in enumerate(F):
        vals = [r["paper"], r["cost"], r["fd"] / r["aba"], r["pin_fd"] / r["pin_aba"]]
        ax.bar(np.arange(4) + 0.4 * k, vals, 0.38, label=r["model"])
    ax.set_xticks(np.arange(4) + 0.2, labels)
    ax.axhline(1.0, color="k", lw=0.5)
    ax.set(ylabel="CRBA + LTDL / ABA", title="Featherstone §6: forward dynamics, 30 DoF")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "papers_featherstone.png"), dpi=100)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    x = np.arange(len(Cp))
    for k, (key, label) in enumerate((("minverse", "ours: minverse"), ("chol", "ours: CRBA+LTDL+inv"),
                                      ("pin_minverse", "pinocchio: computeMinverse"),
                                      ("pin_chol", "pinocchio: crba+cholesky+inv"))):
        ax.bar(x + 0.2 * k, [r[key] for r in Cp], 0.19, label=label)
    ax.set_xticks(x + 0.3, [r["robot"] for r in Cp])
    ax.set(ylabel="µs (median)", title="Carpentier: M⁻¹ (floating base)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "papers_carpentier.png"), dpi=100)
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ns = [r["n"] for r in N]
    ax[0].plot(ns, [r["lu"] for r in N], "o-", label="SparseForwardDynamics (sparse LU)")
    ax[0].plot(ns, [r["aba"] for r in N], "s-", label="aba (ours, compiled)")
    ax[0].plot(ns, [r["pin_aba"] for r in N], "^-", label="pinocchio aba")
    ax[0].set(title="Forward dynamics, serial chain: time", xlabel="N_B", ylabel="µs (median)")
    ax[1].plot(ns, [r["lu_flops"] for r in N], "o-", label="sparse LU (planned)")
    ax[1].plot(ns, [r["aba_flops"] for r in N], "s-", label="ABA (counted)")
    ax[1].plot(ns, [r["aba_formula"] for r in N], "k--", lw=0.8, label="ABA (McMillan-Orin formula)")
    ax[1].set(title="… and operation counts (cf. Nori Fig. 1)", xlabel="N_B", ylabel="flops")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "papers_nori.png"), dpi=100)

if __name__ == "__main__":
    main()
