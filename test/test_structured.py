"""The structured solver (rbd_estimator/estimation/structured.py) against the generic KKT path and
against the pinocchio ground truth.

The generic path defines the problem (weighted least squares of the whitened sensor rows subject to
the Newton–Euler rows); the structured one must give the same solution to rounding on random
states with noisy, inconsistent readings (so that the weighting matters), and the exact ground
truth when the readings are consistent.
"""
from __future__ import annotations

import sys
import tracemalloc

import numpy as np
import pytest
from groundtruth import GroundTruth
from oracle import urdf_xml
from test_estimator import icub_config, talos_config
from trees import tree_urdf

from rbd_estimator import ConfigError, RobotModel
from rbd_estimator.estimation import Estimator, ImuSample, SensorConfig, estimator_for

CELLS = dict(positions_x=[0.05, 0.05, -0.03, -0.03], positions_y=[0.02, -0.02, 0.02, -0.02])
BIPED = [-1, 0, 1, -1, 3, 4, -1, 6]          # two 3-link legs (FT sensor and sole on each foot), one 2-link arm


def biped_slippery_config():
    """Nori eq. 23 on a small biped: slippery feet, four load cells under each, one foot FT sensor,
    two joint-torque sensors."""
    return SensorConfig.from_dict(dict(
        floating_base=True, imu=dict(frame="root"), ft_sensors=["ft0"],
        contacts=["left", "right"],
        contact=dict(left=dict(frame="sole0", type="slippery"), right=dict(frame="sole1", type="slippery")),
        load_cells=["lc", "rc"], load_cell=dict(lc=dict(contact="left", **CELLS), rc=dict(contact="right", **CELLS)),
        joint_torque_sensors=["j1", "j4"]))


def fixed_arm_config():
    """Fixed base: an unknown full wrench at one foot (the 'tool'), its FT sensor and three
    joint-torque sensors: a redundant least-squares problem in the six contact components."""
    return SensorConfig.from_dict(dict(
        floating_base=False, ft_sensors=["ft0"], contacts=["tool"], contact=dict(tool=dict(frame="sole0")),
        joint_torque_sensors=["j0", "j1", "j2"], joint_torque_stddev=0.5))


def pair(xml, cfg):
    """A structured and a generic estimator on the same model, and the ground-truth generator."""
    joints = [ft.joint for ft in cfg.ft_sensors if ft.joint]
    model = RobotModel.from_urdf(xml, floating_base=cfg.floating_base, keep_fixed=joints)
    fast = Estimator(model, cfg, solver="structured")
    ref = Estimator(model, cfg, solver="generic")
    assert fast._structured is not None and ref._structured is None
    return fast, ref, GroundTruth(xml, fast)


def noisy(inputs, rng, scale=1.0):
    """The readings with Gaussian noise: inconsistent with any state, so the weighting matters."""
    out = dict(inputs)
    if "imu" in out:
        imu = out["imu"]
        out["imu"] = imu._replace(
            linear_acceleration=imu.linear_acceleration + rng.normal(0, 0.3 * scale, 3),
            angular_acceleration=None if imu.angular_acceleration is None
            else imu.angular_acceleration + rng.normal(0, 0.5 * scale, 3))
    if "ft" in out:
        out["ft"] = out["ft"] + rng.normal(0, 2.0 * scale, out["ft"].shape)
    if "load_cells" in out:
        out["load_cells"] = [c + rng.normal(0, 3.0 * scale, c.shape) for c in out["load_cells"]]
    if "joint_torques" in out:
        out["joint_torques"] = out["joint_torques"] + rng.normal(0, 0.3 * scale, out["joint_torques"].shape)
    return out


def check_equal_to_generic(fast, ref, gt, n, seed, tol=1e-9):
    """Structured and generic solutions of noisy samples agree to ``tol`` relative (all outputs:
    torques, contact and joint wrenches, whitened residuals; and the base acceleration)."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(n):
        inputs, _ = gt.sample(rng)
        inputs = noisy(inputs, rng)
        a = fast.estimate(**inputs)
        out_a, base_a = fast.data.out.copy(), a.base_acceleration.copy()
        b = ref.estimate(**inputs)
        out_b, base_b = ref.data.out.copy(), b.base_acceleration.copy()
        scale = max(1.0, np.max(np.abs(out_b)))
        worst = max(worst, np.max(np.abs(out_a - out_b)) / scale,
                    np.max(np.abs(base_a - base_b), initial=0.0) / max(1.0, np.max(np.abs(base_b), initial=0.0)))
        if ref.report.redundant:
            assert np.max(np.abs(a.residual)) > 1e-3            # the noise is seen: the data are inconsistent
    assert worst <= tol, f"structured and generic solutions differ by {worst:.3g} (relative)"


def check_against_truth(est, gt, n, seed, tol=1e-8):
    """Noise-free samples: the estimate is the truth to ``tol`` relative to the largest value (the
    prior moves a determined estimate by a relative ~σ²/σ_prior², below 1e-9)."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        inputs, truth = gt.sample(rng)
        r = est.estimate(**inputs)
        scale = max(1.0, np.abs(truth["tau"]).max(), np.abs(truth["wrenches"]).max(initial=0.0))
        np.testing.assert_allclose(r.tau, truth["tau"], rtol=0, atol=tol * scale)
        np.testing.assert_allclose(r.contact_wrenches, truth["wrenches"], rtol=0, atol=tol * scale)


@pytest.fixture(scope="module")
def icub():
    return pair(urdf_xml("icub"), icub_config())


# ---------------------------------------------------------------------------- same solution
def test_icub_structured_equals_generic_with_noise(icub):
    fast, ref, gt = icub
    assert ref.report.redundant and fast._structured.n_z == 18
    check_equal_to_generic(fast, ref, gt, 30, seed=1)


def test_icub_structured_matches_ground_truth(icub):
    fast, _, gt = icub
    check_against_truth(fast, gt, 30, seed=2)


def test_icub_with_imu_angular_acceleration():
    fast, ref, gt = pair(urdf_xml("icub"), icub_config(imu=dict(frame="root_link", use_angular_acceleration=True)))
    check_equal_to_generic(fast, ref, gt, 15, seed=3)
    check_against_truth(fast, gt, 10, seed=4)


def test_icub_imu_on_the_head():
    """The IMU on a body other than the base: the base's angular velocity through the neck chain,
    and IMU rows on ``a_head = a⁰_head + ʰX_0 a_0``."""
    fast, ref, gt = pair(urdf_xml("icub"), icub_config(imu=dict(frame="imu_frame", use_angular_acceleration=True)))
    assert fast.model.frame("imu_frame").body != 0
    check_equal_to_generic(fast, ref, gt, 10, seed=5)
    check_against_truth(fast, gt, 10, seed=6)


def test_square_system_is_an_exact_solve():
    """IMU, load cells under the left foot, an FT sensor above the right one, two full-wrench
    contacts: as many sensor rows as contact components (12), no redundancy (the weak prior makes it
    a least-squares problem whose solution is the exact one to 1e-9 relative)."""
    cfg = icub_config(ft_sensors=["r_foot_ft_sensor"], load_cells=["lc"], load_cell=dict(lc=dict(contact="l_foot", **CELLS)))
    fast, ref, gt = pair(urdf_xml("icub"), cfg)
    assert not ref.report.redundant and fast._structured.m_soft == fast._structured.n_h == 12
    check_equal_to_generic(fast, ref, gt, 10, seed=20)
    check_against_truth(fast, gt, 10, seed=21, tol=1e-9)
    assert fast.estimate(**gt.sample(np.random.default_rng(22))[0]).residual is None


def test_slippery_contacts_with_load_cells_and_torque_sensors():
    xml, _ = tree_urdf(BIPED, seed=3, ft_leaves=2, name="biped")
    fast, ref, gt = pair(xml, biped_slippery_config())
    assert fast._structured.n_h == 8 and ref.report.redundant
    check_equal_to_generic(fast, ref, gt, 30, seed=7)
    check_against_truth(fast, gt, 20, seed=8)


def test_talos_declared_ft_sensors_on_fixed_joints():
    fast, ref, gt = pair(urdf_xml("talos"), talos_config())
    assert {"leg_left_sole_fix_joint", "wrist_right_ft_joint"} <= set(fast.kept_joints)
    check_equal_to_generic(fast, ref, gt, 15, seed=9)
    check_against_truth(fast, gt, 15, seed=10)


def test_fixed_base_contact_ft_and_joint_torque_sensors():
    xml, _ = tree_urdf(BIPED, seed=4, ft_leaves=2, name="arm")
    fast, ref, gt = pair(xml, fixed_arm_config())
    assert not fast._structured.floating and fast._structured.n_z == 6
    check_equal_to_generic(fast, ref, gt, 30, seed=11)
    check_against_truth(fast, gt, 20, seed=12)


def test_fixed_base_inverse_dynamics_without_sensors():
    fast, ref, gt = pair(urdf_xml("talos"), SensorConfig.from_dict(dict(floating_base=False)))
    assert fast._structured.n_z == 0 and fast._structured.m_soft == 0
    check_equal_to_generic(fast, ref, gt, 10, seed=13)
    check_against_truth(fast, gt, 10, seed=14)


def test_base_state_is_the_same_on_both_paths(icub):
    fast, ref, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(15))
    fast.estimate(**inputs)
    ref.estimate(**inputs)
    for x, y in zip(fast.base_state(), ref.base_state()):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-9)


def test_qr_fallback_gives_the_normal_equations_solution(icub):
    """The Householder-QR solve (used when the normal equations are ill-conditioned) on the rows
    the tick leaves in its work space gives the Cholesky solution."""
    from rbd_estimator.estimation import structured as st
    fast, _, gt = icub
    s = fast._structured
    h = slice(s.ip[st.H_WH], s.ip[st.H_WH] + s.n_h)
    rng = np.random.default_rng(19)
    for _ in range(5):
        inputs, _ = gt.sample(rng)
        fast.estimate(**noisy(inputs, rng))
        by_cholesky = s.w[h].copy()
        assert st._qr_solve(s.ip, s.fp, s.w) > 1e-3
        np.testing.assert_allclose(s.w[h], by_cholesky, rtol=1e-12, atol=1e-12 * np.abs(by_cholesky).max())


# ---------------------------------------------------------------------------- inputs
def _exceptions_raised(fn):
    """The exceptions raised (and maybe caught) while ``fn()`` runs, in the package's code or by a
    failed compiled call (numba's dispatcher raises ``TypeError``); numba's own cache misses
    (``KeyError`` inside its typing of a strided array) are its business, not a failed call."""
    seen = []

    def tracer(frame, event, arg):
        if event == "exception" and (arg[0] is TypeError or "rbd_estimator" in frame.f_code.co_filename):
            seen.append(arg[0])
        return tracer
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return seen


def _read_only(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


def test_every_documented_input_form_gives_the_same_estimate_through_the_kernel(icub):
    """Issue 12: arrays of any float dtype or layout (read-only too), lists, dicts by sensor name,
    ``ImuSample`` from lists or a plain tuple: the same numbers in, bitwise the same numbers out, all through
    the compiled kernel, which takes the joint state and the measurement vector ``y`` (the per-kind
    forms fill ``y``; ``conversions`` counts the calls whose q, dq, ddq were not float64 vectors) and
    never by a failed call (no exception is raised on the way, not even a caught one)."""
    fast, _, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(16))
    q, dq, ddq, imu, ft = inputs["q"], inputs["dq"], inputs["ddq"], inputs["imu"], inputs["ft"]
    fast.estimate(**inputs)
    direct = fast.data.out.copy()
    names = fast.ft_names
    forms = {
        "lists": dict(q=list(q), dq=list(dq), ddq=ddq.tolist(), imu=imu, ft=[list(w) for w in ft]),
        "ft dict": dict(inputs, ft={name: list(v) for name, v in zip(names, ft)}),
        "strided": dict(inputs, q=np.stack([q, q], axis=1)[:, 0], ft=np.repeat(ft, 2, axis=1)[:, ::2]),
        "Fortran ft": dict(inputs, ft=np.asfortranarray(ft)),
        "imu tuple": dict(inputs, imu=tuple(imu)),
        "ImuSample from lists": dict(inputs, imu=ImuSample(*[None if x is None else list(x) for x in imu])),
        "read-only": dict(inputs, q=_read_only(q), dq=_read_only(dq), ft=_read_only(ft)),   # np.frombuffer's
    }
    n0 = fast._structured.conversions
    for label, kw in forms.items():
        raised = _exceptions_raised(lambda: fast.estimate(**kw))
        assert raised == [], f"{label}: {raised}"
        np.testing.assert_array_equal(fast.data.out, direct, err_msg=label)
    # float32 arrays: the estimate of the float64 values they hold
    f32 = {k: np.asarray(v, dtype=np.float32) for k, v in dict(q=q, dq=dq, ddq=ddq, ft=ft).items()}
    fast.estimate(**{k: v.astype(np.float64) for k, v in f32.items()}, imu=imu)
    expected = fast.data.out.copy()
    assert _exceptions_raised(lambda: fast.estimate(**f32, imu=imu)) == []
    np.testing.assert_array_equal(fast.data.out, expected)
    assert fast._structured.conversions == n0 + 2          # the lists and the float32 joint state only


def test_malformed_inputs_of_every_form_raise_value_errors_naming_them(icub):
    """The conversions of the per-kind and list forms never broadcast or guess: a reading of the
    wrong shape, a list holding something else than numbers or a missing sensor is a ``ValueError``
    naming the input, and the estimator's buffers keep working afterwards."""
    fast, _, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(21))
    before = fast.estimate(**inputs).tau.copy()
    q, ft, imu, names = inputs["q"], inputs["ft"], inputs["imu"], fast.ft_names
    bad = {
        r"q: not an array of numbers": dict(q=["x"] * len(q)),
        r"dq: expected %d values, got shape \(%d, 1\)" % (len(q), len(q)): dict(dq=[[v] for v in q]),
        r"ddq: expected %d values" % len(q): dict(ddq=q[:-1].tolist()),
        r"ft: expected shape \(6, 6\)": dict(ft=ft[0].tolist()),             # one wrench: never broadcast
        r"ft: expected shape \(6, 6\) .* got \(6, 1\)": dict(ft=ft[:, :1].copy()),
        r"ft: no reading for 'r_arm_ft_sensor'": dict(ft={n: w for n, w in zip(names[:-1], ft)}),
        r"l_leg_ft_sensor: not an array of numbers": dict(ft={n: ("x" if k == 0 else w)
                                                              for k, (n, w) in enumerate(zip(names, ft))}),
        r"imu.angular_velocity: expected 3 values": dict(imu=(imu[0], imu[1][:2], imu[2])),
    }
    for message, change in bad.items():
        with pytest.raises(ValueError, match=message):
            fast.estimate(**dict(inputs, **change))
    with pytest.raises(ValueError, match=r"imu.orientation: expected 4 values, got shape \(3,\)"):
        ImuSample([0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 0.0, 9.81])       # refused when built
    np.testing.assert_array_equal(fast.estimate(**inputs).tau, before)


def test_array_inputs_of_any_dtype_or_layout_allocate_no_more_than_the_vector_y(icub):
    """float32 or strided arrays are copied into the estimator's buffers (``y``, the joint-state
    rows), not converted into new arrays: the memory peak of one estimate is the ``y`` path's
    (numba's boxing of the arguments), not a copy of ``q``, ``dq``, ``ddq`` (768 bytes) more."""
    fast, _, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(22))
    q, ft = inputs["q"], inputs["ft"]
    forms = {
        "y": dict(q=q, dq=inputs["dq"], ddq=inputs["ddq"], y=fast.measurements.fill(imu=inputs["imu"], ft=ft).copy()),
        "float64": inputs,
        "float32": dict(inputs, **{k: np.asarray(inputs[k], np.float32) for k in ("q", "dq", "ddq", "ft")}),
        "strided": dict(inputs, q=np.repeat(q, 2)[::2], ft=np.repeat(ft, 2, axis=1)[:, ::2]),
    }

    def peak(kw):
        for _ in range(50):
            fast.estimate(**kw)
        tracemalloc.start()
        try:
            fast.estimate(**kw)
            peaks = []
            for _ in range(30):
                base = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                fast.estimate(**kw)
                peaks.append(tracemalloc.get_traced_memory()[1] - base)
        finally:
            tracemalloc.stop()
        return float(np.median(peaks))
    of_y = peak(forms.pop("y"))
    for label, kw in forms.items():
        assert peak(kw) < of_y + 256, label


def test_joint_torques_by_name_or_sequence():
    """Joint-torque readings as an array, a list or ``{joint: τ}`` give the same estimate."""
    xml = urdf_xml("talos")
    model = RobotModel.from_urdf(xml, floating_base=False)
    joints = model.joint_names[:4]
    est = Estimator(model, SensorConfig.from_dict(dict(floating_base=False, joint_torque_sensors=joints)))
    assert est._structured is not None
    rng = np.random.default_rng(3)
    n = model.n_joints
    q, dq, ddq, tau = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n), rng.normal(size=4)
    ref = est.estimate(q, dq, ddq, joint_torques=tau).tau.copy()
    n0 = est._structured.conversions
    for jt in (list(tau), {j: t for j, t in zip(joints, tau)}, tau.astype(np.float32).astype(np.float64)):
        assert _exceptions_raised(lambda: est.estimate(q, dq, ddq, joint_torques=jt)) == []
        np.testing.assert_array_equal(est.result.tau, ref)
    assert est._structured.conversions == n0
    with pytest.raises(ValueError, match="joint_torques"):
        est.estimate(q, dq, ddq, joint_torques=tau[:3])


def test_bad_inputs_raise_the_generic_errors(icub):
    fast, ref, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(17))
    before = fast.estimate(**inputs).tau.copy()
    ft = inputs["ft"].copy()
    ft[2, 4] = np.inf
    with pytest.raises(ValueError, match=r"ft\[16\] \(l_foot_ft_sensor ty\) is not finite"):
        fast.estimate(**dict(inputs, ft=ft))
    for est in (fast, ref):
        q = inputs["q"].copy()
        q[5] = np.nan
        with pytest.raises(ValueError, match=r"q\[5\] \(" + est.joint_names[5]):
            est.estimate(**dict(inputs, q=q))
        with pytest.raises(ValueError, match="ddq: expected"):
            est.estimate(**dict(inputs, ddq=inputs["ddq"][:-1]))
        with pytest.raises(ValueError, match=r"ft: expected shape \(6, 6\)"):
            est.estimate(**dict(inputs, ft=inputs["ft"][:5]))
        with pytest.raises(ValueError, match="no IMU sample"):
            est.estimate(**dict(inputs, imu=None))
        imu = inputs["imu"]
        bad = imu._replace(orientation=np.array([0.0, 0.0, np.nan, 1.0]))
        with pytest.raises(ValueError, match=r"imu\[2\] \(orientation\) is not finite"):
            est.estimate(**dict(inputs, imu=bad))
    np.testing.assert_array_equal(fast.estimate(**inputs).tau, before)


def test_solver_keyword():
    model = RobotModel.from_urdf(urdf_xml("talos"), floating_base=False)
    cfg = SensorConfig.from_dict(dict(floating_base=False))
    assert Estimator(model, cfg)._structured is not None                # 'auto' picks the structured solver
    assert Estimator(model, cfg, solver="generic")._structured is None
    with pytest.raises(ConfigError, match="solver"):
        Estimator(model, cfg, solver="fastest")


# ---------------------------------------------------------------------------- memory
def test_estimates_do_not_grow_python_memory(icub):
    fast, _, gt = icub
    inputs, _ = gt.sample(np.random.default_rng(18))
    for _ in range(200):
        fast.estimate(**inputs)
    tracemalloc.start()
    try:
        fast.estimate(**inputs)
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(3000):
            fast.estimate(**inputs)
        growth = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert growth < 2048, f"{growth} bytes retained over 3000 estimates"


def test_compiled_tick_allocates_nothing_but_argument_boxing():
    """With numba's allocation statistics on, one estimate makes exactly as many runtime
    allocations as a do-nothing compiled function given the same arguments (numba's boxing of the
    array arguments): the tick itself allocates nothing."""
    import nrt_stats
    out = nrt_stats.run("""
        import numpy as np
        from nrt_stats import extra_allocations
        from test_structured import GroundTruth, icub_config, urdf_xml, estimator_for
        from rbd_estimator.estimation import structured as st
        est = estimator_for(urdf_xml("icub"), icub_config())
        inputs, _ = GroundTruth(urdf_xml("icub"), est).sample(np.random.default_rng(0))
        s = est._structured
        y = est.measurements.fill(imu=inputs["imu"], ft=inputs["ft"]).copy()
        args = (s.ip, est.data.state, inputs["q"], inputs["dq"], inputs["ddq"], y)
        real = s.kernel
        def tick(*a):
            assert real(*a) == 0
        print(extra_allocations(tick, args, 100, [st._SIGNATURE]))
    """)
    assert int(out[-1]) == 0, out
