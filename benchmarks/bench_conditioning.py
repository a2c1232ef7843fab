#!/usr/bin/env python3
"""The structured tick's accuracy against its condition estimate, and how often real ticks are ill-conditioned.

    python benchmarks/bench_conditioning.py accuracy [-v] [--real-only] [--qr-threshold T] [--limb-threshold T]
                                                     [--refine-threshold T]
    python benchmarks/bench_conditioning.py ratios [--calls 3000] [--poses 200] [--timing-only] [same overrides]

``accuracy``: the random configurations of test/test_limbs_random.py (its seeds and helpers) plus a
sweep (one force-torque sensor's noise scaled by 10^0 … 10^8 and the contact prior by 10^2 … 10^8 on
iCub, Talos and the humanoid, measured joint accelerations), each tick compared with the generic path
(``solver="generic"``) on noisy readings and, noise-free, with the pinocchio ground truth
(test/groundtruth.py); the largest relative error of the torques, the contact wrenches and the
variances per decade of ``Estimate.condition`` (the Cholesky ratio ``min L_kk² / N_kk``) and path
(by limbs, dense); then the real iCub recording's ticks against the generic path. ``--qr-threshold``,
``--limb-threshold``, ``--refine-threshold`` override the thresholds of structured/layout.py for this
run (compiled into a private cache, ≈ 1.5 min): ``--qr-threshold 1 --limb-threshold 1`` sends every
tick to QR, the reference that tells which path is wrong; ``--refine-threshold 0 --limb-threshold
1e-6`` is the code before the refinement (docs/probabilistic_model.md, 'Accuracy').

``ratios``: the distribution of the condition over the shipped robots (exact and measured joint
accelerations), random ground-truth poses, and over the real iCub recording
(/work/shared/data/icub-com-sinusoid, replayed as test/test_real_icub.py does); how many ticks lie
below 1e-6 … 1e-2; and the cost of one tick per configuration beside pinocchio's ``rnea`` in the same
process (paired medians): with ``--limb-threshold 1`` and ``--refine-threshold 0``, ``1`` or
``--qr-threshold 1`` that of the dense Cholesky, Cholesky with the refinement, and QR. A benchmark,
not a test.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import warnings

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test"), os.path.join(REPO, "benchmarks")]


def _override(args) -> None:
    """Set the thresholds before anything is compiled, and compile into a private cache (the package's
    cache is keyed by the sources, which do not change)."""
    qr, limb, refine = args.qr_threshold, args.limb_threshold, args.refine_threshold
    if qr is None and limb is None and refine is None:
        return
    os.environ["RBD_ESTIMATOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="rbd_cond_")
    from rbd_estimator.estimation.structured import layout, limbs, tick
    if qr is not None:
        layout._QR_THRESHOLD = tick._QR_THRESHOLD = limbs._QR_THRESHOLD = qr
    if limb is not None:
        layout._LIMB_THRESHOLD = limbs._LIMB_THRESHOLD = limb
    if refine is not None:
        layout._REFINE_THRESHOLD = limbs._REFINE_THRESHOLD = refine


def _thresholds(args) -> str:
    return (f"thresholds: QR {args.qr_threshold or 'default'}, limbs {args.limb_threshold or 'default'}, "
            f"refinement {args.refine_threshold if args.refine_threshold is not None else 'default'}")


def _rel(a, b, scale):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / scale, initial=0.0))


def _errors(r, ref_tau, ref_w, ref_tv=None, ref_cc=None):
    """Relative errors of ``r`` against a reference: torques and wrenches to the largest entry (≥ 1)
    or their own standard deviation, variances to themselves (plus 1e-3 of the largest, as the test)."""
    scale = max(1.0, np.abs(ref_tau).max())
    e = {"tau": _rel(r.tau, ref_tau, np.maximum(scale, np.sqrt(r.tau_variance)))}
    if r.contact_wrenches.size:
        sd = np.sqrt(np.stack([np.diag(C) for C in r.contact_covariance]))
        e["wrench"] = _rel(r.contact_wrenches, ref_w, np.maximum(max(1.0, np.abs(ref_w).max()), sd))
    if ref_tv is not None:
        e["var"] = _rel(r.tau_variance, ref_tv, ref_tv + 1e-3 * ref_tv.max())
        d = np.sqrt(np.diagonal(ref_cc, axis1=1, axis2=2))
        e["cov"] = _rel(r.contact_covariance, ref_cc, d[:, :, None] * d[:, None, :] + 1e-300)
    return e


def _sweep():
    """(label, xml, params): one FT sensor's noise × 10^k and the prior, on three shipped robots."""
    from test_uncertainty import _read
    from rbd_estimator import SensorConfig, robots
    for name, ft in (("icub", "r_foot_ft_sensor"), ("talos", "right_ankle_ft"), ("humanoid", None)):
        xml = _read(robots.urdf_file(name))
        base = SensorConfig.from_yaml(robots.params_file(name)).to_parameters()
        fts = base.get("ft_sensors", [])
        weak = ft if ft in fts else (fts[-1] if fts else None)
        if weak is None:
            continue
        for k in range(0, 9):
            for prior in (1e2, 1e5, 1e8):
                p = dict(base)
                p[f"ft.{weak}.force_stddev"] = p.get(f"ft.{weak}.force_stddev", 1.0) * 10.0 ** k
                p[f"ft.{weak}.torque_stddev"] = p.get(f"ft.{weak}.torque_stddev", 0.05) * 10.0 ** k
                p["joint_acceleration_stddev"] = 0.1
                p["contact_prior_stddev"] = prior
                p["covariance"] = True
                yield f"{name} {weak} ×1e{k} prior {prior:g}", xml, p


def _configurations():
    from test_limbs_random import _cases
    for label, make in _cases():
        xml, params = make()
        yield " · ".join(label), xml, params
    yield from _sweep()


def accuracy(args) -> None:
    from groundtruth import GroundTruth
    from test_limbs_random import _path
    from test_uncertainty import _noisy
    from rbd_estimator import ConfigError, SensorConfig, estimator_for
    from rbd_estimator.errors import ConditioningWarning, IllPosedError
    worst = collections.defaultdict(lambda: collections.defaultdict(float))
    counts = collections.Counter()
    rows = []
    for case, (name, xml, params) in enumerate(_configurations()):
        cfg = SensorConfig.from_parameters(params)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConditioningWarning)
                warnings.simplefilter("error", RuntimeWarning)
                fast = estimator_for(xml, cfg)
        except (ConfigError, IllPosedError, RuntimeWarning):
            continue
        ref = estimator_for(xml, cfg, solver="generic")
        gt = GroundTruth(xml, fast)
        rng = np.random.default_rng(case)
        for t in range(3):
            inputs, truth = gt.sample(rng)
            noisy = t < 2
            if noisy:
                inputs = _noisy(inputs, cfg, rng, cfg.joint_acceleration_stddev)
            r = fast.estimate(**inputs)
            path = "limbs" if _path(fast) == "by limbs" else "dense"
            g = ref.estimate(**inputs)
            e = _errors(r, g.tau, g.contact_wrenches, g.tau_variance, g.contact_covariance)
            if not noisy:                       # the truth, where the prior's pull is negligible
                pull = np.sqrt(np.stack([np.diag(C) for C in r.contact_covariance])).max(initial=0.0) \
                    * np.abs(truth["wrenches"]).sum() / fast.layout.prior_stddev ** 2
                if pull * np.sqrt(r.tau_variance).max() <= 1e-12 * max(1.0, np.abs(truth["tau"]).max()):
                    et = _errors(r, truth["tau"], truth["wrenches"])
                    e["truth τ"] = et["tau"]
                    eg = _errors(g, truth["tau"], truth["wrenches"])
                    e["generic truth τ"] = eg["tau"]
            decade = int(np.floor(np.log10(max(r.condition, 1e-300))))
            key = (path, max(decade, -16))
            counts[key] += 1
            for k, v in e.items():
                worst[key][k] = max(worst[key][k], v)
            rows.append((name, t, path, r.condition, e))
    print(_thresholds(args))
    cols = ["tau", "wrench", "var", "cov", "truth τ", "generic truth τ"]
    print(f"{'path':6} {'condition':>10} {'ticks':>5} " + " ".join(f"{c:>16}" for c in cols))
    for key in sorted(counts, key=lambda k: (k[0], -k[1])):
        print(f"{key[0]:6} {'1e%d' % key[1]:>10} {counts[key]:5d} "
              + " ".join(f"{worst[key][c]:16.2e}" if c in worst[key] else f"{'':>16}" for c in cols))
    if args.verbose:                            # the worst ticks against the generic path
        for name, t, path, cond, e in sorted(rows, key=lambda r: -max(r[4]["tau"], r[4].get("var", 0.0)))[:25]:
            print(f"  {cond:9.2e} {path:6} {name}, tick {t}: " + ", ".join(f"{k} {v:.1e}" for k, v in e.items()))


LEVELS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


def _distribution(label: str, conds) -> None:
    c = np.asarray(conds)
    print(f"{label:46s} {c.size:6d} {c.min():9.2e} {np.percentile(c, 1):9.2e} {np.median(c):9.2e} "
          + " ".join(f"{int((c < t).sum()):6d}" for t in LEVELS))


def _shipped(args):
    """(label, xml, estimator, list of inputs): the shipped robots, exact and measured q̈ (their
    ``joint_acceleration_stddev`` or 0.5), random ground-truth states and poses near the neutral one."""
    from groundtruth import GroundTruth
    from test_uncertainty import _read
    from rbd_estimator import SensorConfig, estimator_for, robots
    for name in robots.SHIPPED:
        xml = _read(robots.urdf_file(name))
        params = SensorConfig.from_yaml(robots.params_file(name)).to_parameters()
        measured = params.get("joint_acceleration_stddev") or 0.5
        for label, sa in (("exact q̈", 0.0), (f"q̈ measured, σ {measured:g}", measured)):
            est = estimator_for(xml, SensorConfig.from_parameters({**params, "joint_acceleration_stddev": sa}))
            gt, rng = GroundTruth(xml, est), np.random.default_rng(7)
            samples = [gt.sample(rng)[0] for _ in range(args.poses)]
            for k in range(args.poses // 2):           # poses near the neutral one (the trajectories' ±0.4)
                samples[k] = dict(samples[k], q=rng.uniform(-0.4, 0.4, samples[k]["q"].size))
            yield f"{name}, {label}", xml, est, samples


def _real_icub():
    """(label, estimator, list of inputs): the recording's samples (zero-phase filtered as
    bench_real_icub.zero_phase), one or both feet's normal force, exact and measured q̈."""
    import bench_real_icub as bench
    from scipy.signal import butter, filtfilt
    from rbd_estimator import ImuSample, estimator_for
    if not os.path.isdir(os.path.join(bench.DATA, "com_sinusoid")):
        return
    xml, rec = bench.icub_xml(bench.DATA), bench.read_recording(bench.DATA)
    for measured in (("l_foot_force",), ("l_foot_force", "r_foot_force")):
        for sa in (0.0, 1.0):
            est = estimator_for(xml, bench.config(measured, dict(joint_acceleration_stddev=sa)))
            t = (rec["t"] - rec["t"][0]) * 1e-9
            dt = float(np.mean(np.diff(t)))
            b, a = butter(2, bench.ZERO_PHASE_HZ, fs=1.0 / dt)
            order = [rec["names"].index(j) for j in est.joint_names]
            q = filtfilt(b, a, rec["q"][:, order], axis=0)
            dq = np.gradient(q, dt, axis=0)
            ddq = np.gradient(dq, dt, axis=0)
            alpha = np.gradient(filtfilt(b, a, rec["gyro"], axis=0), dt, axis=0)
            samples = [dict(q=q[k], dq=dq[k], ddq=ddq[k], imu=ImuSample(rec["quat"][k], rec["gyro"][k], rec["acc"][k],
                                                                     alpha[k]),
                            readings={f: [rec["left" if f[0] == "l" else "right"][k]] for f in measured})
                       for k in range(len(t))]
            yield f"real iCub, {'+'.join(f[0] for f in measured)} foot force, σ_q̈ {sa:g}", xml, est, samples


def ratios(args) -> None:
    _override(args)
    from common import machine, paired_median_us, rnea_at_neutral
    from test_limbs_random import _path
    print(machine())
    print(f"load: {os.getloadavg()[0]:.2f}; {_thresholds(args)}")
    print(f"{'configuration':46s} {'ticks':>6s} {'min':>9s} {'1 %':>9s} {'median':>9s} "
          + " ".join(f"{'<%g' % t:>6s}" for t in LEVELS))
    timing = []
    for label, xml, est, samples in _shipped(args):
        if not args.timing_only:
            _distribution(label, [est.estimate(**inputs).condition for inputs in samples])
        if est.report.solver == "structured":
            timing.append((label, xml, est, samples[0]))
    for label, xml, est, samples in _real_icub():
        if not args.timing_only:
            _distribution(label, [est.estimate(**inputs).condition for inputs in samples])
        timing.append((label, xml, est, samples[len(samples) // 2]))
    print(f"\n{'tick (one sample)':46s} {'rnea µs':>8s} {'tick µs':>8s} {'/ rnea':>7s} {'condition':>10s} path")
    for label, xml, est, inputs in timing:
        q, dq, ddq = inputs["q"], inputs["dq"], inputs["ddq"]
        y = est.measurements.fill(**{k: v for k, v in inputs.items() if k not in ("q", "dq", "ddq")}).copy()
        if est.report.solver != "structured":
            continue
        t_pin, t = paired_median_us(rnea_at_neutral(xml, est.config.floating_base),
                                    lambda: est.estimate(q, dq, ddq, y=y), args.calls)
        r = est.estimate(q, dq, ddq, y=y)
        print(f"{label:46s} {t_pin:8.2f} {t:8.2f} {t / t_pin:7.2f} {r.condition:10.2e} {_path(est)}")


def real_accuracy(args) -> None:
    """The real iCub recording's ticks (every ``args.every``-th sample): structured against generic."""
    from rbd_estimator import estimator_for
    for label, xml, est, samples in _real_icub():
        ref = estimator_for(xml, est.config, solver="generic")
        worst, conds = collections.defaultdict(float), []
        for inputs in samples[::args.every]:
            r, g = est.estimate(**inputs), ref.estimate(**inputs)
            conds.append(r.condition)
            for k, v in _errors(r, g.tau, g.contact_wrenches, g.tau_variance, g.contact_covariance).items():
                worst[k] = max(worst[k], v)
        print(f"{label:46s} {len(conds):5d} ticks, condition {min(conds):.2e}–{max(conds):.2e}: "
              + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    a = sub.add_parser("accuracy")
    a.add_argument("--qr-threshold", type=float)
    a.add_argument("--limb-threshold", type=float)
    a.add_argument("--refine-threshold", type=float)
    a.add_argument("-v", "--verbose", action="store_true")
    a.add_argument("--real-only", action="store_true", help="only the real iCub recording's ticks")
    a.add_argument("--every", type=int, default=5, help="the recording's samples compared: every n-th")
    r = sub.add_parser("ratios")
    r.add_argument("--calls", type=int, default=3000)
    r.add_argument("--poses", type=int, default=200, help="random states per shipped configuration")
    r.add_argument("--timing-only", action="store_true", help="only the ticks' cost")
    r.add_argument("--qr-threshold", type=float)
    r.add_argument("--limb-threshold", type=float)
    r.add_argument("--refine-threshold", type=float)
    args = ap.parse_args()
    if args.what == "accuracy":
        _override(args)
        if not args.real_only:
            accuracy(args)
        real_accuracy(args)
    else:
        ratios(args)


if __name__ == "__main__":
    main()
