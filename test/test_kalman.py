"""Issue 21, item 2: the joints' Kalman filter (rbd_estimator/runtime/kalman.py,
docs/joint_acceleration.md) — exact on its own model's noise-free trajectories for any sample
spacing, its steady state equal to the discrete algebraic Riccati equation's (scipy), its variance
calibrated by Monte Carlo, and the same filter in the node's input handling and the replay.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
from scipy.linalg import solve_discrete_are

from rbd_estimator import ConfigError, SensorConfig
from rbd_estimator.runtime import input_core as core
from rbd_estimator.runtime.kalman import KalmanDerivative, acceleration_stddev, steady_state
from rbd_estimator.runtime.params import NODE_KEYS, NodeSettings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ICUB = "/work/shared/data/icub-com-sinusoid"
if os.path.isdir(os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "icub-com-sinusoid"))):
    ICUB = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "icub-com-sinusoid"))


def _phi_q(n, dt, s):
    """Φ and Q of the integrator chain, written out independently of the module (n = 3, 4)."""
    Phi = np.array([[dt ** (b - a) / math.factorial(b - a) if b >= a else 0.0 for b in range(n)] for a in range(n)])
    # Q = s ∫_0^dt Φ(τ) e eᵀ Φ(τ)ᵀ dτ, e the last axis, by Gauss–Legendre quadrature (exact for polynomials)
    x, w = np.polynomial.legendre.leggauss(8)
    Q = np.zeros((n, n))
    for xi, wi in zip(x, w):
        tau = 0.5 * dt * (xi + 1.0)
        col = np.array([tau ** (n - 1 - a) / math.factorial(n - 1 - a) for a in range(n)])
        Q += 0.5 * dt * wi * s * np.outer(col, col)
    return Phi, Q


@pytest.mark.parametrize("model,n", [("constant_acceleration", 3), ("constant_jerk", 4)])
@pytest.mark.parametrize("use_v", [False, True])
def test_steady_state_is_the_riccati_equations(model, n, use_v):
    """The covariance the filter reaches at a constant rate is the posterior of scipy's DARE solution."""
    s, sq, sv, rate = 1.0e5, 2e-4, (0.05 if use_v else 0.0), 500.0
    Phi, Q = _phi_q(n, 1.0 / rate, s)
    H = np.eye(n)[:2 if use_v else 1]
    R = np.diag([sq ** 2, sv ** 2][:len(H)])
    P_prior = solve_discrete_are(Phi.T, H.T, Q, R)
    S = H @ P_prior @ H.T + R
    P_post = P_prior - P_prior @ H.T @ np.linalg.solve(S, H @ P_prior)
    P = steady_state(model, s, sq, sv, rate)
    assert np.allclose(P, P_post, rtol=1e-6, atol=1e-14), (P, P_post)
    assert acceleration_stddev(model, s, sq, sv, rate) == pytest.approx(math.sqrt(P_post[2, 2]), rel=1e-6)


def test_a_cubic_is_followed_exactly_whatever_the_sample_spacing():
    """Noise-free positions of a cubic (constant jerk: the model's own noise-free motion) stamped at
    irregular times: after the start-up the filter's q̇ and q̈ are the cubic's to 1e-6."""
    rng = np.random.default_rng(0)
    stamps = np.cumsum(rng.integers(500_000, 3_000_000, 1000))        # ns
    c = np.array([[0.1, -0.3, 0.7], [1.0, 0.2, -0.5], [-2.0, 3.0, 0.4], [4.0, -1.0, 0.9]])   # q = Σ c_k t^k
    f = KalmanDerivative(3, "constant_jerk", process_noise=1.0, position_stddev=1e-9)
    for ns in stamps:
        tk = ns * 1e-9
        f.update(int(ns), sum(c[k] * tk ** k for k in range(4)))
    dq = c[1] + 2 * c[2] * tk + 3 * c[3] * tk ** 2
    ddq = 2 * c[2] + 6 * c[3] * tk
    assert np.allclose(f.velocity, dq, atol=1e-6) and np.allclose(f.acceleration, ddq, atol=1e-6)


@pytest.mark.parametrize("use_v", [False, True])
def test_the_acceleration_variance_is_calibrated(use_v):
    """Monte Carlo on the filter's own model (white snap, noisy encoders): the mean squared error of
    q̈ over 40 joints × 1500 samples is the steady-state P_q̈q̈ within 10 %."""
    rng = np.random.default_rng(1)
    s, sq, sv, rate, nj = 1.0e6, 1e-4, (0.02 if use_v else 0.0), 1000.0, 40
    Phi, Q = _phi_q(4, 1.0 / rate, s)
    L = np.linalg.cholesky(Q + 1e-30 * np.eye(4))
    f = KalmanDerivative(nj, "constant_jerk", s, sq, sv)
    x = np.zeros((4, nj))
    err = []
    for k in range(2000):
        x = Phi @ x + L @ rng.normal(size=(4, nj))
        dq = x[1] + rng.normal(0, sv, nj) if use_v else None
        f.update(k * 1_000_000, x[0] + rng.normal(0, sq, nj), dq)
        if k >= 500:
            err.append(f.acceleration - x[2])
    mse = float(np.mean(np.square(err)))
    P = steady_state("constant_jerk", s, sq, sv, rate)[2, 2]
    print(f"\nq̈ error variance {mse:.4g} against the filter's {P:.4g} (ratio {mse / P:.3f})")
    assert abs(mse / P - 1.0) <= 0.10


def _settings(**kw):
    cfg = SensorConfig.from_dict(dict(floating_base=False, acceleration_filter="kalman", **kw), node_keys=NODE_KEYS)
    return cfg, NodeSettings.from_parameters(cfg.node)


def test_joint_states_without_velocities_need_the_kalman_filter():
    """An empty velocity array: taken (q̇ from the filter) with the Kalman filter, ``wrong_length``
    with the low-pass, which differentiates the received velocities."""
    from groundtruth import Serializer

    from rbd_estimator.runtime.inputs import SensorInputs
    names = ["a", "b"]
    s = Serializer()
    for filt, code in (("kalman", 1), ("lowpass", -1)):
        cfg = SensorConfig.from_dict(dict(floating_base=False, acceleration_filter=filt), node_keys=NODE_KEYS)
        inp = SensorInputs(names, cfg, NodeSettings.from_parameters(cfg.node))
        out = [inp.on_message(0, s.joint_state(k * 10_000_000 + 1, names, [0.1 * k, -0.2 * k]), k) for k in range(3)]
        assert out[-1] == code, (filt, out)
        if code == 1:
            assert inp.I[core.H_KF] == 4 and np.allclose(inp.dq, [10.0, -20.0], rtol=0.2)
        else:
            assert inp.joint_states.rejected == {"wrong_length": 3}


def test_the_filters_acceleration_stddev_goes_to_the_estimator():
    """``joint_acceleration_stddev_from_filter``: the session plans with the filter's steady-state σ_a
    (the accelerations a measurement); refused without the Kalman filter."""
    cfg, settings = _settings(joint_acceleration_stddev_from_filter=True, kalman_nominal_rate_hz=200.0,
                              kalman_process_noise=3.0e4, kalman_position_stddev=1e-3)
    out = settings.estimator_config(cfg)
    assert out.joint_acceleration_stddev == pytest.approx(
        acceleration_stddev("constant_jerk", 3.0e4, 1e-3, 0.0, 200.0)) and out.joint_acceleration_stddev > 0
    cfg = SensorConfig.from_dict(dict(floating_base=False, joint_acceleration_stddev_from_filter=True),
                                 node_keys=NODE_KEYS)
    with pytest.raises(ConfigError, match="needs 'acceleration_filter: kalman'"):
        NodeSettings.from_parameters(cfg.node).estimator_config(cfg)


@pytest.mark.skipif(not os.path.isdir(os.path.join(ICUB, "com_sinusoid")), reason="no iCub recording")
def test_replay_of_the_real_recording_runs_the_same_filter(tmp_path):
    """The real iCub recording through ``replay_bag`` with ``acceleration_filter: kalman`` and its σ_a
    handed to the estimator: every estimate finite, the estimator planned with the filter's σ_a, and
    the replay's q̈ at the last tick equal to :class:`KalmanDerivative` run on the logged positions."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_real_icub as bench

    from rbd_estimator.replay import Replayer
    extra = dict(bench.KALMAN, joint_acceleration_stddev_from_filter=True)
    xml, rec = bench.icub_xml(ICUB), bench.read_recording(ICUB)
    rep = Replayer(xml, bench.config("r_foot_force", extra), collect=True)
    sigma = acceleration_stddev("constant_jerk", extra["kalman_process_noise"], extra["kalman_position_stddev"], 0.0,
                                extra["kalman_nominal_rate_hz"])
    assert rep.session.config.joint_acceleration_stddev == pytest.approx(sigma)
    f = KalmanDerivative(len(rec["names"]), "constant_jerk", extra["kalman_process_noise"],
                         extra["kalman_position_stddev"])
    order = [rec["names"].index(j) for j in rep.inputs.joint_names]
    k = 0
    for topic, t, b in rec["raw"]:
        rep.feed(topic, b, t)
        if topic == "/joint_states":
            f.update(t, rec["q"][k])
            k += 1
            if k > 1:
                assert np.allclose(rep.inputs.ddq, f.acceleration[order], rtol=1e-12, atol=1e-12)
                assert np.allclose(rep.inputs.dq, f.velocity[order], rtol=1e-12, atol=1e-12)
    res = rep.results()
    assert len(res["stamps"]) >= len(rec["t"]) - 2 and np.isfinite(res["wrenches"]).all()   # filters start (q̈, ω̇)


@pytest.mark.skipif(not os.path.isdir(os.path.join(ICUB, "com_sinusoid")), reason="no iCub recording")
def test_the_replays_batch_loop_runs_the_kalman_filter_as_the_per_message_path(tmp_path):
    """``replay_bag`` (its compiled batch loop over the recording) with the Kalman filter gives the
    estimates of the per-message path (``Replayer.feed``) to 1e-12."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_real_icub as bench

    from rbd_estimator.replay import Replayer, replay_bag
    xml, rec = bench.icub_xml(ICUB), bench.read_recording(ICUB)
    cfg = bench.config("l_foot_force", bench.KALMAN)
    summary, batch = replay_bag(os.path.join(ICUB, "com_sinusoid"), str(tmp_path / "out"), cfg, xml, collect=True,
                                copy_inputs=False)
    assert not summary.error
    one = Replayer(xml, cfg, collect=True)
    for topic, t, b in rec["raw"]:
        one.feed(topic, b, t)
    a, b = batch.results(), one.results()
    assert np.array_equal(a["stamps"], b["stamps"]) and len(a["stamps"]) >= len(rec["t"]) - 2
    assert np.abs(a["tau"] - b["tau"]).max() <= 1e-12 and np.abs(a["wrenches"] - b["wrenches"]).max() <= 1e-12
