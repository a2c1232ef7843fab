"""Force-torque offset calibration against the pinocchio ground truth (test/groundtruth.py).

iCub with its six FT sensors. Random offsets (≈ 20 N, 1 N·m per axis) are added to every sensor at
once, in the three contact situations: both feet on the ground, one foot (the right one lifted),
and hanging with no contact — a floating-base robot held by a fixture at its root link (an unknown
wrench on the base, generated here as a contact on ``root_link``), and a fixed-base robot (root
bolted to a stand). The ground-truth states are varied postures with random joint velocities and
accelerations (and a base motion consistent with the wrenches), which makes every offset
identifiable; a single repeated posture is not, and the tests check that this is reported.

Expected statistical error with noise σ per axis over N samples: a "direct" sensor (fixed base,
no contact in its sub-tree) is the plain mean of N residuals, standard error exactly σ/√N
(0.5 N/√200 = 0.035 N, 0.02 N·m/√200 = 0.0014 N·m); a "joint" one is at best that and inflated by
the per-sample contact-wrench and base-acceleration unknowns it shares: here ≤ 1.3 σ/√N for the
forces and up to ≈ 4.3 σ/√N for the torques of the leg and foot sensors, whose torque rows see those
unknowns through lever arms of ~0.1 m (0.5 N × 0.1 m = 2.5 × 0.02 N·m); the arms stay at σ/√N. The
fit reports this standard error per axis (from its information matrix); the errors must stay within
4 of them, their RMS in units of them must be ≈ 1, and none may exceed 5 σ/√N.
"""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from groundtruth import GroundTruth
from oracle import urdf_xml
from test_estimator import FEET, ICUB_FT

from rbd_estimator import ConfigError, IllPosedError
from rbd_estimator.estimation import ContactConfig, SensorConfig, estimator_for
from rbd_estimator.estimation.calibration import CalibrationResult, apply_offsets, calibrate_ft_offsets

SIGMA_F, SIGMA_T, SIGMA_IMU = 0.5, 0.02, 0.05
FT_NOISE = {n: dict(force_stddev=SIGMA_F, torque_stddev=SIGMA_T) for n in ICUB_FT}
SITUATIONS = {                      # contacts declared to the calibration, contacts of the ground truth
    "both_feet": (("l_foot", "r_foot"), ("l_foot", "r_foot")),
    "one_foot": (("l_foot",), ("l_foot",)),
    "hanging": ((), ("fixture",)),
}


@pytest.fixture(scope="module")
def icub():
    cfg = SensorConfig.from_dict(dict(floating_base=True, imu=dict(frame="root_link",
                                                                    linear_acceleration_stddev=SIGMA_IMU),
                                      ft_sensors=ICUB_FT, ft=FT_NOISE, **FEET))
    return estimator_for(urdf_xml("icub"), cfg)


@pytest.fixture(scope="module")
def icub_fixed():
    cfg = SensorConfig.from_dict(dict(floating_base=False, ft_sensors=ICUB_FT, ft=FT_NOISE))
    return estimator_for(urdf_xml("icub"), cfg)


def truth(est, contacts=None, angular_acceleration=False):
    """Ground truth for ``est`` with the given contacts (``fixture``: a wrench on the root link)."""
    cfg = est.config
    if contacts is not None:
        cs = [ContactConfig("fixture", frame="root_link") if c == "fixture" else cfg.contact(c) for c in contacts]
        cfg = replace(cfg, contacts=tuple(cs))
    if angular_acceleration:
        cfg = cfg.with_sensor(replace(cfg.imu, use_angular_acceleration=True))
    return GroundTruth(urdf_xml("icub"), SimpleNamespace(model=est.model, config=cfg))


def random_offsets(rng):
    return np.column_stack([rng.normal(0.0, 20.0, (6, 3)), rng.normal(0.0, 1.0, (6, 3))])


def draw(gt, rng, offsets, n, noise=False):
    """``n`` samples with the offsets added to the FT readings (and noise as configured)."""
    out = []
    for _ in range(n):
        inputs, tr = gt.sample(rng)
        ft = inputs["ft"] + offsets
        if noise:
            ft = ft + np.column_stack([rng.normal(0, SIGMA_F, (6, 3)), rng.normal(0, SIGMA_T, (6, 3))])
            if "imu" in inputs:
                imu = inputs["imu"]
                inputs["imu"] = imu._replace(linear_acceleration=imu.linear_acceleration + rng.normal(0, SIGMA_IMU, 3))
        out.append((dict(inputs, ft=ft), tr))
    return out


def recovered(result):
    return np.array([result[n].offset for n in ICUB_FT])


def check_estimates(est, samples, result, tol=1e-6):
    """Estimates from the corrected readings match the truth and the sensors agree (zero residual);
    from the raw readings they do not (with a fixed base and no contact the torques do not depend
    on the FT readings, only the residual shows the offsets)."""
    worst, worst_raw = 0.0, 0.0
    for inputs, tr in samples:
        w = tr["wrenches"]
        if len(w) < len(est.contact_names):      # contacts in the air carry a zero wrench
            w = np.vstack([w, np.zeros((len(est.contact_names) - len(w), 6))])
        r = est.estimate(**dict(inputs, ft=apply_offsets(inputs["ft"], result, names=est.ft_names)))
        worst = max(worst, np.abs(r.tau - tr["tau"]).max(), np.abs(r.contact_wrenches - w).max(initial=0.0),
                    np.abs(r.residual).max() * SIGMA_T)
        r = est.estimate(**inputs)
        worst_raw = max(worst_raw, np.abs(r.tau - tr["tau"]).max(), np.abs(r.residual).max() * SIGMA_T)
    assert worst <= tol, f"estimates after calibration off by {worst:.3g}"
    assert worst_raw > 0.1                       # the offsets mattered

# ---------------------------------------------------------------------------- noiseless recovery
@pytest.mark.parametrize("situation", list(SITUATIONS))
def test_offsets_of_all_six_sensors_recovered_in_each_contact_situation(icub, situation):
    declared, actual = SITUATIONS[situation]
    rng = np.random.default_rng(list(SITUATIONS).index(situation))
    offsets = random_offsets(rng)
    samples = draw(truth(icub, actual), rng, offsets, 30)
    result = calibrate_ft_offsets(icub, [s for s, _ in samples], declared, strict=True)
    assert result.identified and result.rank == 36 and not result.unidentifiable
    assert result.fixture == ("base_link" if situation == "hanging" else None)
    assert np.abs(recovered(result) - offsets).max() <= 1e-6
    for s in result.sensors:
        assert s.method == "joint" and s.n_samples == 30 and s.ok
        assert s.residual_rms.max() <= 1e-6
    assert result.chi2 < 1e-12
    # after calibration the estimator (configured for both feet) matches the truth in fresh
    # double-support samples with the same offsets, and in the calibration samples themselves
    check_estimates(icub, draw(truth(icub), rng, offsets, 5), result)
    if situation != "hanging":                   # (the fixture is not in the estimator's configuration)
        check_estimates(icub, samples[:5], result)


def test_fixed_base_robot_calibrates_every_sensor_directly(icub_fixed):
    """Root bolted to a stand, no contact: every sub-tree is predicted by the model alone, each
    offset is the mean of measured − expected, from any posture (even a single one)."""
    rng = np.random.default_rng(10)
    offsets = random_offsets(rng)
    samples = draw(GroundTruth(urdf_xml("icub"), icub_fixed), rng, offsets, 10)
    for window in ([s for s, _ in samples], [samples[0][0]] * 3):
        result = calibrate_ft_offsets(icub_fixed, window, ())
        assert result.fixture is None and result.identified
        assert all(s.method == "direct" for s in result.sensors)
        assert np.abs(recovered(result) - offsets).max() <= 1e-6
    check_estimates(icub_fixed, samples, result)


# ---------------------------------------------------------------------------- noise
@pytest.mark.parametrize("situation", ["both_feet", "hanging"])
def test_noisy_offsets_within_their_statistical_error(icub, situation):
    declared, actual = SITUATIONS[situation]
    n = 200
    rng = np.random.default_rng(20)
    offsets = random_offsets(rng)
    samples = [s for s, _ in draw(truth(icub, actual), rng, offsets, n, noise=True)]
    result = calibrate_ft_offsets(icub, samples, declared)
    direct = np.array([SIGMA_F] * 3 + [SIGMA_T] * 3) / np.sqrt(n)      # σ/√N: 0.035 N, 0.0014 N·m
    std = np.array([result[s].stddev for s in ICUB_FT])
    assert np.all(std >= direct * (1 - 1e-9)) and np.all(std <= 5.0 * direct), std / direct
    err = recovered(result) - offsets
    assert np.all(np.abs(err) <= 4.0 * std), np.abs(err) / std
    z = err / std                                   # the reported errors are the actual ones
    assert 0.6 < np.sqrt(np.mean(z ** 2)) < 1.5
    assert 0.9 < result.chi2 < 1.1                  # the configured noise explains the residuals
    rms = np.array([result[s].residual_rms for s in ICUB_FT])
    assert np.all(rms < 1.2 * direct * np.sqrt(n))  # ≤ σ: part of the noise is fitted by the contact wrenches


def test_fixed_base_noisy_offsets_are_means_with_error_sigma_over_root_n(icub_fixed):
    n = 200
    rng = np.random.default_rng(21)
    offsets = random_offsets(rng)
    samples = [s for s, _ in draw(GroundTruth(urdf_xml("icub"), icub_fixed), rng, offsets, n, noise=True)]
    result = calibrate_ft_offsets(icub_fixed, samples, ())
    direct = np.array([SIGMA_F] * 3 + [SIGMA_T] * 3) / np.sqrt(n)
    for s in ICUB_FT:
        np.testing.assert_allclose(result[s].stddev, direct, rtol=1e-9)
    assert np.all(np.abs(recovered(result) - offsets) <= 4.0 * direct)


# ---------------------------------------------------------------------------- identifiability
def test_single_posture_leaves_directions_unidentifiable_and_says_so(icub):
    """One posture repeated: per sample the 12 contact components of the two feet are unknown and
    the IMU's 3 rows tie down 3 of them: 9 offset directions cannot be told from contact wrenches."""
    rng = np.random.default_rng(30)
    offsets = random_offsets(rng)
    (sample, _), = draw(truth(icub), rng, offsets, 1)
    result = calibrate_ft_offsets(icub, [sample] * 10, ("l_foot", "r_foot"))
    assert result.rank == 27 and len(result.unidentifiable) == 9
    assert not result.identified
    off = recovered(result)
    ids = np.array([result[s].identified for s in ICUB_FT])
    assert np.all(np.isnan(off[~ids])) and np.all(np.isnan(np.array([result[s].stddev for s in ICUB_FT])[~ids]))
    assert np.abs(off[ids] - offsets[ids]).max(initial=0.0) <= 1e-6
    assert "unidentifiable" in result.summary() and "foot_ft_sensor" in result.summary()
    with pytest.raises(IllPosedError, match="27 of 36"):
        calibrate_ft_offsets(icub, [sample] * 10, ("l_foot", "r_foot"), strict=True)
    with pytest.raises(ValueError, match="not identified"):
        apply_offsets(sample["ft"], result, names=icub.ft_names)
    # hanging or on one foot, one posture suffices with the IMU's angular-acceleration rows
    for situation in ("hanging", "one_foot"):
        declared, actual = SITUATIONS[situation]
        (sample, _), = draw(truth(icub, actual, angular_acceleration=True), rng, offsets, 1)
        assert calibrate_ft_offsets(icub, [sample] * 3, declared).rank == 33       # 3 for ω̇ of the base
        result = calibrate_ft_offsets(icub, [sample] * 3, declared, imu_angular_acceleration=True, strict=True)
        assert np.abs(recovered(result) - offsets).max() <= 1e-6


def test_wrong_contact_situation_shows_in_the_residuals(icub):
    rng = np.random.default_rng(40)
    offsets = random_offsets(rng)
    samples = [s for s, _ in draw(truth(icub), rng, offsets, 20)]       # standing on both feet
    right = calibrate_ft_offsets(icub, samples, ("l_foot", "r_foot"))
    wrong = calibrate_ft_offsets(icub, samples, ("l_foot",))            # "the right foot is lifted"
    assert right.chi2 < 1e-12 and wrong.chi2 > 100.0
    assert wrong["r_foot_ft_sensor"].residual_rms[:3].max() > 10 * SIGMA_F


def test_calibrating_a_subset_takes_the_other_readings_as_offset_free(icub):
    rng = np.random.default_rng(50)
    offsets = random_offsets(rng)
    offsets[:4] = 0.0                                                    # legs and feet already calibrated
    samples = [s for s, _ in draw(truth(icub), rng, offsets, 10)]
    result = calibrate_ft_offsets(icub, samples, ["l_foot", "r_foot"], sensors=["l_arm_ft_sensor", "r_arm_ft_sensor"])
    assert [s.name for s in result.sensors] == ["l_arm_ft_sensor", "r_arm_ft_sensor"] and result.n_unknowns == 12
    np.testing.assert_allclose(result["l_arm_ft_sensor"].offset, offsets[4], atol=1e-6)
    np.testing.assert_allclose(result["r_arm_ft_sensor"].offset, offsets[5], atol=1e-6)
    assert isinstance(result, CalibrationResult) and set(result.to_dict()["sensors"]) == set(result.offsets)
    corrected = apply_offsets(samples[0]["ft"], result, names=icub.ft_names)
    np.testing.assert_allclose(corrected[:4], samples[0]["ft"][:4])


# ---------------------------------------------------------------------------- API
def test_calibration_leaves_the_estimator_untouched(icub):
    rng = np.random.default_rng(60)
    (inputs, _), (other, _) = draw(truth(icub), rng, np.zeros((6, 6)), 2)
    r = icub.estimate(**inputs)
    before = (r.tau.copy(), r.contact_wrenches.copy(), icub.base_state()[1].copy())
    calibrate_ft_offsets(icub, [other] * 3, ("l_foot", "r_foot"))
    np.testing.assert_array_equal(r.tau, before[0])
    np.testing.assert_array_equal(r.contact_wrenches, before[1])
    np.testing.assert_array_equal(icub.base_state()[1], before[2])


def test_samples_accept_ft_dicts_and_bad_input_names_the_sample(icub):
    rng = np.random.default_rng(70)
    offsets = random_offsets(rng)
    samples = [s for s, _ in draw(truth(icub), rng, offsets, 10)]
    as_dict = [dict(s, ft=dict(zip(icub.ft_names, s["ft"]))) for s in samples]
    result = calibrate_ft_offsets(icub, as_dict, "l_foot r_foot".split())
    assert np.abs(recovered(result) - offsets).max() <= 1e-6
    bad = [dict(s) for s in samples[:3]]
    bad[2]["ft"] = bad[2]["ft"].copy()
    bad[2]["ft"][1, 4] = np.nan
    with pytest.raises(ValueError, match=r"samples\[2\]: ft\[10\] \(r_leg_ft_sensor ty\)"):
        calibrate_ft_offsets(icub, bad, ("l_foot", "r_foot"))
    with pytest.raises(ValueError, match=r"samples\[0\]: unknown input"):
        calibrate_ft_offsets(icub, [dict(samples[0], torques=1.0)], ("l_foot", "r_foot"))
    with pytest.raises(ValueError, match=r"samples\[0\]: .*no IMU sample"):
        calibrate_ft_offsets(icub, [dict(samples[0], imu=None)], ("l_foot", "r_foot"))
    with pytest.raises(ValueError, match="at least one sample"):
        calibrate_ft_offsets(icub, [], ("l_foot",))
    with pytest.raises(ConfigError, match="'l_hand' is not a configured contact"):
        calibrate_ft_offsets(icub, samples, ("l_hand",))
    with pytest.raises(ConfigError, match="'l_wrist_ft' is not a configured force-torque sensor"):
        calibrate_ft_offsets(icub, samples, ("l_foot",), sensors=["l_wrist_ft"])
    with pytest.raises(ConfigError, match="fixture"):
        calibrate_ft_offsets(icub, samples, (), fixture="no_such_link")


def test_apply_offsets_forms():
    names = ("a", "b")
    ft = np.arange(12.0).reshape(2, 6)
    off = np.ones((2, 6))
    np.testing.assert_array_equal(apply_offsets(ft, off), ft - 1.0)
    np.testing.assert_array_equal(apply_offsets(ft, {"b": np.ones(6)}, names=names), ft - [[0.0], [1.0]])
    got = apply_offsets({"a": ft[0], "b": ft[1]}, {"a": np.full(6, 2.0)})
    np.testing.assert_array_equal(got["a"], ft[0] - 2.0)
    np.testing.assert_array_equal(got["b"], ft[1])
    np.testing.assert_array_equal(apply_offsets({"a": ft[0], "b": ft[1]}, off, names=names)["b"], ft[1] - 1.0)
    assert apply_offsets(ft, off) is not ft and np.all(ft == np.arange(12.0).reshape(2, 6))
    with pytest.raises(ValueError, match="names"):
        apply_offsets(ft, {"a": np.ones(6)})
    with pytest.raises(ValueError, match="without a reading"):
        apply_offsets({"a": ft[0]}, {"c": np.ones(6)})
    with pytest.raises(ValueError, match="'a' is not identified"):
        apply_offsets(ft, {"a": np.r_[np.nan, np.zeros(5)]}, names=names)
    with pytest.raises(ValueError, match="6 values"):
        apply_offsets(ft, {"a": np.ones(5)}, names=names)
