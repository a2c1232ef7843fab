#!/usr/bin/env python3
"""Every number of ``docs/papers_in_time.md``, regenerated from the code as it is.

    python benchmarks/papers_figures.py              # the operation counts and accuracy figures (≈ 10 s)
    python benchmarks/papers_figures.py --timings    # and every timing (5–15 min)
    python benchmarks/papers_figures.py --chignoli   # the counts and Chignoli's Figs. 10 and 12 (time) only
    python benchmarks/papers_figures.py --check      # exit 1 when a documented count differs from the code

The page holds generated blocks between ``<!-- BEGIN generated:NAME -->`` and
``<!-- END generated:NAME -->``; this script rewrites them (the prose around them is written by
hand and quotes no generated figure). The blocks of :func:`count_blocks` are deterministic (fixed
seeds, operation counts, torques): ``test/test_papers_figures.py`` recomputes them and fails when
the page and the code disagree. :func:`timing_blocks` measures time (medians of interleaved rounds
beside pinocchio, ``benchmarks/common.py``), which no test checks. Figures saved under ``--out``
(default ``docs/``): ``nori_fig1_fig2.png`` (counts) and, with ``--timings``, ``papers_nori.png``,
``papers_featherstone.png``, ``papers_carpentier.png`` and ``chignoli_time.png``.

Counting rule (every curve of Nori's Figs. 1 and 2): a flop is one multiplication, division or
addition on a structurally nonzero operand. The planned sparse LU (:attr:`StaticLU.flops`, the
kernels of ``estimation/sparse_lu.py``): one division per entry of L, a multiply–subtract per
entry of U it updates, two per off-diagonal entry in the solves, one division per row, and two per
term of the gather that forms the matrix values. The ABA and its matrix form:
:func:`rbd_estimator.dynamics.aba_factorization.aba_flops` and ``matrix_form_flops``.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")       # pinocchio on one thread, as bench_loops.py (before its import)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test"), os.path.join(REPO, "benchmarks")]
DOC = os.path.join(REPO, "docs", "papers_in_time.md")
SIZES = (5, 10, 20, 30, 50, 75, 100)

from trees import serial_chain, tree_urdf  # noqa: E402

from rbd_estimator import RobotModel  # noqa: E402
from rbd_estimator.dynamics.aba_factorization import aba_flops, matrix_form_flops  # noqa: E402
from rbd_estimator.estimation.forward import SparseForwardDynamics  # noqa: E402
from rbd_estimator.estimation.sparse_lu import flops as lu_flops  # noqa: E402
from rbd_estimator.model.cost import cost  # noqa: E402


# ------------------------------------------------------------------------------ generated blocks
def _block_re(name: str):
    return re.compile(rf"(<!-- BEGIN generated:{re.escape(name)} -->\n)(.*?)(<!-- END generated:{re.escape(name)} -->)",
                      re.S)


def read_blocks(text: str) -> dict:
    """``{name: body}`` of every generated block of a page."""
    return {m.group(1): m.group(2) for m in
            re.finditer(r"<!-- BEGIN generated:([\w-]+) -->\n(.*?)<!-- END generated:\1 -->", text, re.S)}


def write_blocks(text: str, blocks: dict) -> str:
    """``text`` with the body of each named block replaced; a block missing from the page is an error."""
    for name, body in blocks.items():
        pat = _block_re(name)
        if not pat.search(text):
            raise KeyError(f"docs/papers_in_time.md has no block 'generated:{name}'")
        text = pat.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(3), text)
    return text


def table(header, rows) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def n_(x: int) -> str:
    """12 345 (thin groups, as the page writes large counts)."""
    return f"{int(x):,}".replace(",", " ")


# ------------------------------------------------------------------------------ Nori Fig. 1
def chain(n: int, floating_base: bool = False) -> RobotModel:
    """The fixed-base serial chain of N_B = ``n`` links of Figs. 1 (random axes and inertias)."""
    return RobotModel.from_urdf(tree_urdf(serial_chain(n), seed=n)[0], floating_base=floating_base)


def dense_lu_flops(N: int) -> int:
    """Flops of a dense LU of an ``N × N`` matrix plus one solve, by the rule of :func:`lu_flops`
    (its value on full patterns): Σ_k m_k (1 + 2 m_k) with m_k = N − 1 − k for the factorisation,
    2 N (N − 1) + N for the two substitutions."""
    m = np.arange(N)
    return int(np.sum(m * (1 + 2 * m)) + 2 * N * (N - 1) + N)


def fig1_rows(sizes=SIZES) -> list[dict]:
    out = []
    for n in sizes:
        m = chain(n)
        rng = np.random.default_rng(n)
        q, dq, tau = m.random_configuration(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
        mf = matrix_form_flops(m, q, dq, tau)
        out.append(dict(n=n, lu=SparseForwardDynamics(m).lu.flops, matrix=mf["total"], matrix_solve=mf["solve"],
                        aba=aba_flops(m, q, dq, tau), formula=sum(cost(m).aba)))
    return out


def fig1_block(rows) -> str:
    body = table(["N_B", "sparse LU (planned)", "matrix-form ABA (Property 2)", "… of which the triangular solve",
                  "ABA, counted", "ABA, formula (224n − 165)m + (205n − 203)a", "LU / ABA counted",
                  "LU / formula", "matrix form / ABA counted"],
                 [(r["n"], n_(r["lu"]), n_(r["matrix"]), n_(r["matrix_solve"]), n_(r["aba"]), n_(r["formula"]),
                   f"{r['lu'] / r['aba']:.2f}", f"{r['lu'] / r['formula']:.2f}", f"{r['matrix'] / r['aba']:.2f}")
                  for r in rows])
    a, b = rows[-1], rows[-2]
    per = {k: (a[k] - b[k]) / (a["n"] - b["n"]) for k in ("lu", "matrix", "aba", "formula")}
    return body + (f"\nPer added link (N_B {b['n']} → {a['n']}): sparse LU {per['lu']:.0f}, matrix form "
                   f"{per['matrix']:.0f}, ABA counted {per['aba']:.0f}, ABA formula {per['formula']:.0f} flops.\n")


# ------------------------------------------------------------------------------ Nori Fig. 2
def fig2_estimator(n: int):
    """The paper's setting (§VI, eqs. 17–23): a serial chain of N_B = ``n`` links on a floating
    base, load cells under both end links (the base link and the last one), slippery contacts."""
    from bench_scaling import config
    from rbd_estimator.estimation import make_estimator
    from rbd_estimator.estimation.loops import model_for
    xml, soles = tree_urdf(serial_chain(n - 2), seed=n, ft_leaves=1)   # root, n − 2 links, the foot
    cfg = config(["root", soles[0]], load_cells=True)
    return make_estimator(model_for(xml, cfg), cfg)


def fig2_rows(sizes=SIZES) -> list[dict]:
    out = []
    for n in sizes:
        est = fig2_estimator(n)
        r = est.report
        out.append(dict(n=est.model.NB, unknowns=r.n_unknowns, N=r.system_size, sparse=r.flops,
                        dense=dense_lu_flops(r.system_size), rnea=sum(cost(est.model).rnea)))
    return out


def fig2_block(rows) -> str:
    return table(["N_B", "unknowns", "system (KKT) size", "sparse LU (planned)", "dense LU", "dense / sparse",
                  "RNEA formula (no sensors)"],
                 [(r["n"], r["unknowns"], r["N"], n_(r["sparse"]), n_(r["dense"]), f"{r['dense'] / r['sparse']:.0f}",
                   n_(r["rnea"])) for r in rows])


# ------------------------------------------------------------------------------ Featherstone §6 counts
def featherstone_block() -> str:
    """cost()'s §6 ratios beside the paper's: forward dynamics via CRBA + LTDL over ABA, a = m."""
    from trees import floating_chain_30dof, humanoid_30dof
    from rbd_estimator.model.cost import tree_cost
    h, c = tree_cost(*humanoid_30dof(), True), tree_cost(*floating_chain_30dof(), True)
    rows = [("humanoid", f"{sum(h.fd_crba) / sum(h.aba):.2f}", "1.15"),
            ("equivalent chain", f"{sum(c.fd_crba) / sum(c.aba):.2f}", "2.6"),
            ("chain / humanoid (CRBA + LTDL)", f"{sum(c.fd_crba) / sum(h.fd_crba):.2f}", "2.18")]
    f, b = c.ltdl.factorize.ma(), h.ltdl.factorize.ma()
    return table(["ratio", "`cost()`", "paper"], rows) + (
        f"\nLTDL factorisation: chain (dense 30 × 30) {f[0]}m + {f[1]}a, humanoid {b[0]}m + {b[1]}a.\n")


# ------------------------------------------------------------------------------ Chignoli Fig. 13
def chignoli_fig13_block() -> str:
    """§VI-C per joint: RMS torque error of the tree without rotors and of the diagonal reflected
    inertia, and what the reflected-inertia matrix alone predicts (``|Σ_k R_jk|`` and
    ``|Σ_k≠j R_jk|`` times the RMS of q̈, every joint on the same sinusoid)."""
    from loop_mechanisms import mit_leg, reflected_inertia_matrix, rotor_torque_errors
    from rbd_estimator.model.clusters import ClusterTree
    from rbd_estimator.model.loops import LoopConfig
    xml, loops = mit_leg()
    tree = ClusterTree.build(RobotModel.from_urdf(xml), LoopConfig.from_dict(loops))
    r = rotor_torque_errors(tree)
    R = reflected_inertia_matrix(tree)
    w = 2 * np.pi * 1.5
    rms_qdd = 0.5 * w * w / np.sqrt(2)
    rows = []
    for k, j in enumerate(r["joints"]):
        pred_u = abs(R[k].sum()) * rms_qdd
        pred_a = abs(R[k].sum() - R[k, k]) * rms_qdd
        rows.append((j, f"{r['rms_unconstrained'][k]:.2f}", f"{r['rms_approximate'][k]:.2f}", f"{r['peak'][k]:.2f}",
                     f"{100 * r['rms_unconstrained'][k] / r['peak'][k]:.1f} %",
                     f"{100 * r['rms_approximate'][k] / r['peak'][k]:.1f} %", f"{pred_u:.2f}", f"{pred_a:.2f}"))
    k, a = r["joints"].index("knee"), r["joints"].index("ankle")
    return table(["joint", "RMS, no rotors (N·m)", "RMS, diagonal reflected inertia", "peak", "% of peak",
                  "% of peak (approx.)", "predicted by R: no rotors", "predicted by R: approx."], rows) + (
        f"\nRow sums of R (kg·m²): knee {R[k].sum():.3f}, ankle {R[a].sum():.3f}; RMS(q̈) {rms_qdd:.1f} rad/s²; "
        f"an ankle row giving the paper's 4.31 N·m would be {4.31 / rms_qdd:.3f}.\n")


def count_blocks() -> dict:
    """Every deterministic block of the page (what the drift test recomputes)."""
    f1, f2 = fig1_rows(), fig2_rows()
    return {"nori-fig1-counts": fig1_block(f1), "nori-fig2-counts": fig2_block(f2),
            "featherstone-counts": featherstone_block(), "chignoli-fig13": chignoli_fig13_block(),
            "_rows": (f1, f2)}


def plot_counts(f1, f2, out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.6))
    ns = [r["n"] for r in f1]
    ax[0].plot(ns, [r["lu"] for r in f1], "o-", label="sparse LU (planned)")
    ax[0].plot(ns, [r["matrix"] for r in f1], "d-", label=r"ABA as $W^L D W^R$ (Property 2)")
    ax[0].plot(ns, [r["aba"] for r in f1], "s-", label="ABA (counted)")
    ax[0].plot(ns, [r["formula"] for r in f1], "k--", lw=0.8, label="ABA (formula)")
    ax[0].set(title="Fig. 1: forward dynamics, serial chain", xlabel="N_B", ylabel="flops")
    ns2 = [r["n"] for r in f2]
    ax[1].semilogy(ns2, [r["dense"] for r in f2], "o-", label="dense LU")
    ax[1].semilogy(ns2, [r["sparse"] for r in f2], "s-", label="sparse LU (planned)")
    ax[1].set(title="Fig. 2: load cells at both end links", xlabel="N_B", ylabel="flops")
    for a in ax:
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    fig.tight_layout()
    path = os.path.join(out, "nori_fig1_fig2.png")
    fig.savefig(path, dpi=80)
    print("saved", path)


# ------------------------------------------------------------------------------ timings
def timing_blocks(calls: int, seconds: float, out: str) -> dict:
    """The measured tables (bench_algorithms.py and bench_loops.py functions), and their figures."""
    import bench_algorithms as ba
    from common import machine
    blocks = {"machine": f"Measured on: {machine()}; load average {os.getloadavg()[0]:.1f} at the start.\n"}
    blocks["algorithms-time"] = _algorithms_table(ba, calls)
    F, C, N = ba.featherstone(calls), ba.carpentier(calls), ba.nori(calls)
    blocks["featherstone-time"] = table(
        ["model", "ABA µs", "CRBA + LTDL µs", "ratio", "pinocchio nle+crba+cholesky / aba"],
        [(r["model"], f"{r['aba']:.2f}", f"{r['fd']:.2f}", f"{r['fd'] / r['aba']:.2f}",
          f"{r['pin_fd']:.2f} / {r['pin_aba']:.2f} = {r['pin_fd'] / r['pin_aba']:.2f}") for r in F]) + (
        f"\nCRBA + LTDL, chain over humanoid: ours {F[1]['fd'] / F[0]['fd']:.2f}, pinocchio "
        f"{F[1]['pin_fd'] / F[0]['pin_fd']:.2f} (paper 2.18).\n")
    blocks["carpentier-time"] = table(
        ["robot", "nv", "`minverse`", "CRBA + LTDL + inversion", "ratio", "pinocchio `computeMinverse`",
         "pinocchio crba + cholesky + computeMinv", "ratio"],
        [(r["robot"], r["nv"], f"{r['minverse']:.2f}", f"{r['chol']:.2f}", f"{r['minverse'] / r['chol']:.2f}",
          f"{r['pin_minverse']:.2f}", f"{r['pin_chol']:.2f}", f"{r['pin_minverse'] / r['pin_chol']:.2f}") for r in C])
    blocks["nori-fig1-time"] = table(
        ["N_B", "sparse LU µs", "ABA µs", "pinocchio ABA µs", "time ratio LU / ABA", "flop ratio LU / ABA counted"],
        [(r["n"], f"{r['lu']:.2f}", f"{r['aba']:.2f}", f"{r['pin_aba']:.2f}", f"{r['lu'] / r['aba']:.1f}",
          f"{r['lu_flops'] / r['aba_flops']:.1f}") for r in N])
    ba.plot_papers(F, C, N, out)
    blocks["chignoli-time"] = _chignoli_tables(seconds, out)
    blocks["chignoli-fig12-time"] = fig12_block(seconds)
    blocks["chignoli-fig10-time"] = fig10_block(seconds)
    return blocks


def _algorithms_table(ba, calls: int) -> str:
    """The compiled functions beside pinocchio (bench_algorithms.rows), one row per robot and base."""
    from oracle import Pair, urdf_xml
    from common import paired_median_us
    names = {"icub": "iCub", "talos": "Talos", "g1": "G1"}
    header, rows, worst = None, [], {}
    for robot in ("icub", "talos", "g1"):
        for fb in (False, True):
            p = Pair(urdf_xml(robot), floating_base=fb)
            ours, _ = ba.rows(p, np.random.default_rng(0))
            row = [f"{names[robot]} {'floating' if fb else 'fixed'} ({p.model.NB}, {p.model.nv})"]
            for name, fn, pname, pfn in ours:
                t_pin, t = paired_median_us(pfn, fn, calls)
                row.append(f"{t:.2f} / {t_pin:.2f} = {t / t_pin:.2f}")
                worst[(name, pname)] = max(worst.get((name, pname), 0.0), t / t_pin)
            header = header or ["robot (NB, nv)"] + [f"`{n}` vs {pn}" for n, _f, pn, _pf in ours]
            rows.append(row)
    return table(header, rows) + "\nLargest ratio per column: " + ", ".join(
        f"`{n}` vs {pn} {r:.2f}" for (n, pn), r in worst.items()) + ".\n"


def _chignoli_tables(seconds: float, out: str) -> str:
    import bench_loops as bl
    rng = np.random.default_rng(0)
    rows = [bl.run(kind, d, b, seconds, 8, rng) for kind in bl.KINDS for b in (1, 4)
            for d in ((1, 2, 4, 8, 16, 32) if b == 1 else (16, 32))]
    bl.plot(rows, list(bl.KINDS), [1, 4], os.path.join(out, "chignoli_time.png"))
    body = table(["mechanism", "b", "N_C", "CE-ABA µs", "pinocchio µs", "ratio", "pinocchio algorithm"],
                 [(r["kind"], r["branches"], r["clusters"], f"{r['ce_aba']:.1f}", f"{r['pin']:.1f}",
                   f"{r['ce_aba'] / r['pin']:.2f}", r["pin_name"]) for r in rows])
    fits = []
    for kind in bl.KINDS:
        sel = [r for r in rows if r["kind"] == kind]
        x = np.array([r["clusters"] for r in sel], float)
        for key in ("ce_aba", "pin"):
            y = np.array([r[key] for r in sel])
            a, s, r2 = bl.fit(x, y)
            big = x >= 8
            p = np.polyfit(np.log(x[big]), np.log(y[big]), 1)[0]
            fits.append((kind, key, f"{s:.2f}", f"{r2:.4f}", f"{p:.2f}"))
    est = bl.estimator_rows(2 * seconds)
    return (body + "\n" + table(["mechanism", "series", "µs per cluster (fit)", "r²", "exponent (N_C ≥ 8)"], fits)
            + "\n" + table(["robot", "loops evaluated per tick", "LoopEstimator tick µs", "tree estimate µs", "ratio",
                            "loops closed in Python µs"],
                           [(r["name"], r["loops"], f"{r['loop']:.1f}", f"{r['tree']:.1f}",
                             f"{r['loop'] / r['tree']:.2f}", "—" if np.isnan(r["python"]) else f"{r['python']:.0f}")
                            for r in est]))


# ------------------------------------------------------------------------------ Chignoli Fig. 10
def fig10_block(seconds: float, depths=(5, 10, 20), localities=(1, 2, 3, 5, 8, 10, 15, 20)) -> str:
    """Loop locality (Fig. 10, transmission systems of Fig. 11a): CE-ABA against pinocchio's
    ``forwardDynamics(J)`` as the loop moves outward (d_l) on branches of depth d_t."""
    import bench_loops as bl
    from loop_mechanisms import transmission_branches
    from loops_oracle import LoopPair
    from rbd_estimator.dynamics import ClusterDynamics
    from rbd_estimator.model.loop_closure import spanning_state
    rows, ends, rng = [], {}, np.random.default_rng(10)
    for dt in depths:
        for dl in (x for x in localities if x <= dt):
            pair = LoopPair(*transmission_branches(dt, dl))
            t = pair.tree
            y, dy, _ = pair.random_state(rng, scale=0.3)
            q, v, _ = spanning_state(t, y, dy)
            tau = rng.normal(size=t.nv)
            solve, _name = bl.pin_solver(pair)
            qp, vp, taup = pair.q_pin(q), pair.v_pin(v), pair.v_pin(tau)
            d = ClusterDynamics(t)
            t_pin, t_ce = bl.timed_pair(lambda: solve(qp, vp, taup), lambda: d.aba(q, v, tau, state="spanning"), seconds)
            rows.append((dt, dl, t.NC, 2 * dl, f"{t_ce:.1f}", f"{t_pin:.1f}", f"{t_ce / t_pin:.2f}"))
            ends.setdefault(dt, []).append(t_ce / t_pin)
    return table(["d_t", "d_l", "clusters", "bodies in the loop's cluster", "CE-ABA µs", "pinocchio forwardDynamics(J) µs",
                  "ratio"], rows) + "\nCE-ABA / pinocchio from d_l = 1 to d_l = d_t: " + ", ".join(
        f"{r[0]:.2f} → {r[-1]:.2f} (d_t = {dt})" for dt, r in ends.items()) + ".\n"


# ------------------------------------------------------------------------------ Chignoli Fig. 12
#: a clone (or bare mirror) of github.com/jrl-umi3218/jvrc_description (BSD-2), not shipped with the package
JVRC_DESCRIPTION = os.environ.get("JVRC_DESCRIPTION", "")
JVRC_ROTORS = ("HIP", "KNEE", "ANKLE", "WAIST", "SHOULDER", "ELBOW")   # 25 major joints (legs, waist, arms)


def _with_rotors(xml: str, keep=lambda name: True) -> dict:
    """``humanoid_rotors(xml)`` restricted to the joints ``keep`` accepts."""
    from loop_mechanisms import humanoid_rotors
    d = humanoid_rotors(xml)
    loops = [n for n in d["loops"] if keep(d["loop"][n]["joint"])]
    rotors = [d["loop"][n]["rotor"] for n in loops]
    return dict(bodies=rotors, body={b: d["body"][b] for b in rotors}, loops=loops,
                loop={n: d["loop"][n] for n in loops})


def _tello_like(xml: str) -> dict:
    """The shipped humanoid with Tello's leg transmissions (Chignoli Fig. 1b): hip roll and pitch
    driven together by two rotors through a differential, knee and ankle pitch likewise; a geared
    rotor on every other joint (``linear_transmission``, ratios ±6 and ±9)."""
    d = _with_rotors(xml)
    for side in ("l", "r"):
        for (a, b), g in (((f"{side}_hip_roll", f"{side}_hip_pitch"), 6.0), ((f"{side}_knee", f"{side}_ankle_pitch"), 9.0)):
            for j in (a, b):
                d["loops"].remove(f"{j}_drive")
                del d["loop"][f"{j}_drive"]
            name = f"{a}_{b.split('_', 1)[1]}_differential"
            d["loops"].append(name)
            d["loop"][name] = dict(type="linear_transmission", independent=[a, b], dependent=[f"{a}_rotor", f"{b}_rotor"],
                                   ratio_matrix=[g, g, g, -g])
    return d


def _jvrc_urdf() -> str | None:
    """``urdf/jvrc1.urdf`` from a work tree or a bare git mirror at :data:`JVRC_DESCRIPTION`."""
    import subprocess
    if not JVRC_DESCRIPTION:
        return None
    path = os.path.join(JVRC_DESCRIPTION, "urdf", "jvrc1.urdf")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    if os.path.isdir(JVRC_DESCRIPTION):
        r = subprocess.run(["git", "-C", JVRC_DESCRIPTION, "show", "HEAD:urdf/jvrc1.urdf"], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout
    return None


def fig12_systems() -> list:
    """``(label, xml, loops dict, floating_base)`` of Fig. 12's robots or their stated stand-ins."""
    from loop_mechanisms import mit_leg
    from rbd_estimator import robots
    with open(robots.urdf_file("go2"), encoding="utf-8") as fh:
        go2 = fh.read()
    with open(os.path.join(REPO, "urdf", "humanoid.urdf"), encoding="utf-8") as fh:
        humanoid = fh.read()
    out = [("Mini Cheetah-like: Go2, a geared rotor on each of its 12 joints", go2, _with_rotors(go2), True),
           ("MIT Humanoid: one leg (3 rotors, knee/ankle belt), fixed pelvis", *mit_leg(), False),
           ("Tello-like: shipped humanoid, hip and knee/ankle differentials", humanoid, _tello_like(humanoid), True)]
    xml = _jvrc_urdf()
    if xml is None:
        print(f"no JVRC-1 URDF under {JVRC_DESCRIPTION} (set JVRC_DESCRIPTION to a clone of "
              "github.com/jrl-umi3218/jvrc_description): its row is left out")
    else:
        for finger in ("UTHUMB", "LTHUMB", "UINDEX", "LINDEX", "ULITTLE", "LLITTLE"):     # 32 DoF, as the paper's
            xml = re.sub(rf'(<joint name="[LR]_{finger}" type=")revolute', r"\1fixed", xml)
        out.append(("JVRC-1 (jrl-umi3218/jvrc_description), rotors on 25 major joints", xml,
                    _with_rotors(xml, lambda j: any(k in j for k in JVRC_ROTORS)), True))
    return out


def fig12_block(seconds: float) -> str:
    """Time of the constraint-embedding ABA on the system with rotors against the ABA on the
    approximate system (the URDF tree; the diagonal reflected inertia adds one addition per joint,
    left out), same independent state; the paper's instruction-count reduction beside."""
    import bench_loops as bl
    from rbd_estimator import dynamics as dyn
    from rbd_estimator.dynamics import ClusterDynamics
    from rbd_estimator.model.clusters import ClusterTree
    from rbd_estimator.model.loops import LoopConfig
    paper = {"Mini": "38.8 %", "MIT": "49.4 %", "Tello": "55.1 %", "JVRC": "31.5 %"}
    rows, rng = [], np.random.default_rng(4)
    for label, xml, loops, fb in fig12_systems():
        tree = ClusterTree.build(RobotModel.from_urdf(xml, floating_base=fb), LoopConfig.from_dict(loops))
        m = tree.urdf_model
        assert tuple(m.joint_names) == tree.independent_joint_names
        y, dy, tau = m.random_configuration(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)
        cd, data = ClusterDynamics(tree), dyn.DynamicsData(m)
        t_aba, t_ce = bl.timed_pair(lambda: dyn.aba(m, y, dy, tau, data=data), lambda: cd.aba(y, dy, tau), seconds)
        rows.append((label, tree.NC, tree.model.NB, f"{t_ce:.2f}", f"{t_aba:.2f}", f"{100 * (1 - t_aba / t_ce):.0f} %",
                     next(v for k, v in paper.items() if label.startswith(k))))
    return table(["system", "clusters", "bodies", "CE-ABA µs", "approximate ABA µs", "approximate: less time",
                  "paper: fewer instructions"], rows)


# ------------------------------------------------------------------------------ command line
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare the count blocks with the page; change nothing")
    ap.add_argument("--timings", action="store_true", help="also measure and rewrite the timing blocks")
    ap.add_argument("--calls", type=int, default=2100, help="calls per timing (7 interleaved rounds)")
    ap.add_argument("--seconds", type=float, default=0.5, help="time per Chignoli measurement")
    ap.add_argument("--chignoli", action="store_true", help="only Chignoli's Figs. 10 and 12 (time) and the counts")
    ap.add_argument("--out", default=os.path.join(REPO, "docs"))
    args = ap.parse_args()
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    blocks = count_blocks()
    f1, f2 = blocks.pop("_rows")
    if args.check:
        have = read_blocks(text)
        bad = [k for k, v in blocks.items() if have.get(k, "").strip() != v.strip()]
        for k in bad:
            print(f"docs/papers_in_time.md: block '{k}' differs from the code:\n{blocks[k]}")
        return 1 if bad else 0
    os.makedirs(args.out, exist_ok=True)
    plot_counts(f1, f2, args.out)
    if args.timings:
        blocks.update(timing_blocks(args.calls, args.seconds, args.out))
    elif args.chignoli:
        blocks["chignoli-fig12-time"] = fig12_block(args.seconds)
        blocks["chignoli-fig10-time"] = fig10_block(args.seconds)
    with open(DOC, "w", encoding="utf-8") as fh:
        fh.write(write_blocks(text, blocks))
    print("rewrote", ", ".join(blocks), "in", DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main())
