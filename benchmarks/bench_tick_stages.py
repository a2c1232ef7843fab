#!/usr/bin/env python3
"""Where the structured tick's time goes, stage by stage, on the shipped robots.

    python benchmarks/bench_tick_stages.py [--robots icub,g1] [--variant measured] [--reps 200] [--rounds 40]

Each prefix of the tick's steps (``structured/tick.py``: forward kinematics, backward pass, …,
covariance) is compiled into one function that runs it ``--reps`` times in a loop; a stage is the
difference of two successive prefixes' times (minimum over ``--rounds`` rounds), so that the
Python call is paid once per loop, not per stage. The step list mirrors ``structured_tick``: a
change to the tick's steps is made here too. Then the compiled kernel alone (``est.kernel()``'s
arguments) and ``estimate(q, dq, ddq, y=y)``, each the best of ``--rounds`` × ``--reps`` calls.
Variants: ``measured`` (``joint_acceleration_stddev: 0.5``, mean and covariance), ``mean-measured``,
``covariance`` (the shipped configuration), ``mean``. Where the plan has limb blocks (measured
accelerations, ``structured/limbs.py``) the solve stage is the solve by limbs (no rank-12 term in the
normal equations) and the torque rows are made inside the covariance (their stage is empty); on the
dense path the solve is refined once below ``_REFINE_THRESHOLD``, as the tick does. Not mirrored: the
tick's fallbacks (by limbs to dense, Cholesky to QR), which the benchmark's one state does not take
(its solve stage would show them). A benchmark, not a test: it asserts nothing.
"""
from __future__ import annotations

import argparse
import os
import sys
import timeit

import numpy as np
from numba import njit

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [REPO, os.path.join(REPO, "test")]

from common import machine  # noqa: E402
from groundtruth import GroundTruth  # noqa: E402
from rbd_estimator import robots  # noqa: E402
from rbd_estimator.estimation import SensorConfig, estimator_for  # noqa: E402
from rbd_estimator.estimation.structured import tick as T  # noqa: E402
from rbd_estimator.estimation.structured.covariance import _torque_rows  # noqa: E402
from rbd_estimator.estimation.structured.layout import (H_ACTF, H_ACTI, H_COV, H_FLOAT, H_IMUB, H_IMUY,  # noqa: E402
    H_NACT, H_NB, H_NH, H_NLB, H_NIMU, H_NX, H_RED, H_SCOV, H_SEND, H_SFP, H_SIMU, H_SINFO, H_SOUT, H_STAIL, H_SW, H_WBH,
    H_WH, H_WMS, H_WNHH, _QR_THRESHOLD, _REFINE_THRESHOLD)
from rbd_estimator.estimation.structured.limbs import _limb_solve, _zero_blocks  # noqa: E402
from rbd_estimator.estimation.structured.solve import (_add_prior, _base_coupling, _cholesky_solve,  # noqa: E402
    _normal_equations, _refine)
from rbd_estimator.estimation.structured.solver import SIGNATURE  # noqa: E402

VARIANTS = {"measured": dict(joint_acceleration_stddev=0.5), "mean-measured": dict(joint_acceleration_stddev=0.5,
            covariance=False), "covariance": {}, "mean": dict(covariance=False)}
STAGES = ["IMU sample copy", "finite checks", "forward kinematics", "backward pass, sources", "observations",
          "joint columns ⁰S_j, F_j", "δ columns", "base equation", "normal equations: sensor rows and products",
          "normal equations: prior, base coupling", "solve (by limbs, or Cholesky)", "outputs and residual", "covariance: torque rows",
          "covariance: substitutions (by limbs: all of it)"]


@njit
def _rows_alone(ip, fp, w):
    """The normal equations' sensor rows and their products, as the tick makes them (by limbs: only
    the blocks' entries of ``N_hh`` zeroed), without the prior and the base coupling."""
    if ip[H_NLB] > 0:
        _zero_blocks(ip, w)
        _normal_equations(ip, fp, w, False)
    else:
        _normal_equations(ip, fp, w)


@njit
def _prefix(ip, S, q, dq, ddq, y, upto, reps):
    """The tick's steps up to stage ``upto`` (``STAGES``), ``reps`` times."""
    acc = 0.0
    NB, NX = ip[H_NB], ip[H_NX]
    fp, w = S[ip[H_SFP]:ip[H_SW]], S[ip[H_SW]:ip[H_SEND]]
    E, V = S[0:9 * NB], S[9 * NB:15 * NB]
    imu_buf, out = S[ip[H_SIMU]:ip[H_SIMU] + 13], S[ip[H_SOUT]:ip[H_SINFO]]
    for _ in range(reps):
        for k in range(ip[H_NIMU]):
            imu_buf[k] = y[ip[H_IMUY] + k]
        if upto < 1:
            continue
        acc += T.zero_if_finite(q) + T.zero_if_finite(dq) + T.zero_if_finite(ddq) + T.zero_if_finite(y)
        if upto < 2:
            continue
        T.forward_kinematics(ip, fp, w, E, V, q, dq, ddq, imu_buf[4:7])
        if upto < 3:
            continue
        T._backward_without_contacts(ip, fp, w, E)
        w_ms = ip[H_WMS]
        if ip[H_IMUB] >= 0:
            T.imu_velocity_product(ip, fp, w, V, w, w_ms + 1)
        for k in range(y.shape[0]):
            w[w_ms + 4 + k] = y[k]
        T.subtract_actuator_terms(ip[H_NACT], ip, ip[H_ACTI], fp, ip[H_ACTF], dq, ddq, w, w_ms + 4)
        if upto < 4:
            continue
        T._observations(ip, fp, w)
        if upto < 5:
            continue
        if ip[H_COV] or NX > ip[H_NH]:
            T.joint_columns(ip, fp, w)
        if upto < 6:
            continue
        if NX > ip[H_NH]:
            T.acceleration_columns(ip, fp, w)
        if upto < 7:
            continue
        if ip[H_FLOAT]:
            T._base_equation(ip, w)
        if upto < 8:
            continue
        _rows_alone(ip, fp, w)                        # (by limbs: limbs.least_squares's parts)
        if upto < 9:
            continue
        limbs = ip[H_NLB] > 0
        _add_prior(ip, fp, w)
        if limbs:
            if upto < 10:
                continue
            acc += _limb_solve(ip, fp, w)
        else:
            if ip[H_FLOAT]:
                _base_coupling(ip, w)
            if upto < 10:
                continue
            ratio = _cholesky_solve(w, ip[H_WNHH], NX, w, ip[H_WBH], w, ip[H_WH])
            if _QR_THRESHOLD <= ratio < _REFINE_THRESHOLD:       # as limbs.least_squares: refined once
                _refine(ip, fp, w)
            acc += ratio
        if upto < 11:
            continue
        T._outputs(ip, fp, w, E, V, out)
        if ip[H_RED]:
            T._residual(ip, fp, w, out)
        if upto < 12 or not ip[H_COV]:
            continue
        if upto < 13:                                 # the torque rows alone (by limbs each output's row is
            if not limbs:                             # made in its block): the covariance makes them again
                _torque_rows(ip, fp, w)
            continue
        if limbs:
            T.limb_covariance(ip, fp, w, S[ip[H_SCOV]:ip[H_STAIL]])
        else:
            T.covariance(ip, fp, w, S[ip[H_SCOV]:ip[H_STAIL]])
    return acc


def best_us(fn, reps: int, rounds: int) -> float:
    return min(timeit.repeat(fn, number=1, repeat=rounds)) / reps * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", default="icub,g1")
    ap.add_argument("--variant", default="measured", choices=sorted(VARIANTS))
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    print(f"machine: {machine()}")
    for name in args.robots.split(","):
        with open(robots.urdf_file(name), encoding="utf-8") as fh:
            xml = fh.read()
        params = SensorConfig.from_yaml(robots.params_file(name)).to_parameters()
        est = estimator_for(xml, SensorConfig.from_parameters({**params, **VARIANTS[args.variant]}))
        if est.report.solver != "structured":
            print(f"{name}: {est.report.solver} solver, no structured tick")
            continue
        inputs, _ = GroundTruth(xml, est).sample(np.random.default_rng(0))
        q, dq, ddq = inputs["q"], inputs["dq"], inputs["ddq"]
        y = est.measurements.fill(**{k: v for k, v in inputs.items() if k not in ("q", "dq", "ddq")}).copy()
        ip, S = est.kernel()
        _prefix(ip, S, q, dq, ddq, y, len(STAGES), 2)
        cum = [best_us(lambda: _prefix(ip, S, q, dq, ddq, y, k, args.reps), args.reps, args.rounds)
               for k in range(len(STAGES))]
        print(f"{name} ({args.variant}): n_x = {ip[H_NX]}, n_h = {ip[H_NH]}; µs per tick")
        for k, label in enumerate(STAGES):
            print(f"  {label:48s} {cum[k] - (cum[k - 1] if k else 0.0):6.2f}")
        kernel = T.compiled_tick().get_overload(SIGNATURE)
        for label, fn in (("compiled kernel, one call", lambda: kernel(ip, S, q, dq, ddq, y)),
                          ("estimate(q, dq, ddq, y=y)", lambda: est.estimate(q, dq, ddq, y=y))):
            t = min(timeit.repeat(fn, number=args.reps, repeat=args.rounds)) / args.reps * 1e6
            print(f"  {label:48s} {t:6.2f}")


if __name__ == "__main__":
    main()
