"""A randomized check of the least squares by limbs (``structured/limbs.py``, docs/probabilistic_model.md
P4–P5) on odd sensor sets and topologies.

With measured joint accelerations and the covariance on, the structured estimator (by limbs when the
plan has blocks and the tick finds them well conditioned, else the dense normal equations) must give
the generic path's estimate, torque variances and contact covariances (the whole KKT system with the
q̈ unknowns, a different computation) to rounding, and on noise-free readings the pinocchio ground
truth (``groundtruth.GroundTruth``) of every output the sensors determine. Drawn with fixed seeds:

* the shipped iCub, Talos, G1 and humanoid configurations with random force-torque sensors dropped
  (sometimes all of one limb's, sometimes all), joint-torque sensors added on random joints (or a random
  subset of G1's), every sensor's noise scaled over orders of magnitude (one limb's sometimes 1e5 ×:
  its contact barely sensed, what ``limbs._sensed`` guards), random contact types, one contact only (a
  foot off the ground), random ``joint_acceleration_stddev`` (1e-3 … 10) and ``contact_prior_stddev``;
* random floating-base trees (``trees.random_tree``) of 26–36 joints with force-torque sensors on
  fixed joints inserted at random bodies and under random feet, contacts at random leaves.

Each tick's path is read from the plan (``NLB = 0``: planned dense) and the flag ``WLB`` (1: by limbs,
0: fell back to the dense path); the counts are printed and a good share must go by limbs. Checked
to fail: with ``_signed_dot`` one term short (27 % wrong variances by limbs), with the blocks planned
from the sensor rows alone (the planning self-check then refuses the structured solver in 29 draws),
and with the thresholds before the refinement (``solve._refine`` off, limbs down to a pivot ratio of
1e-6: 1.3e-9 off the generic path on Talos #9). A ``_sensed`` that never refuses passes here (these
draws' barely-sensed limbs still agree to 1e-9); test_uncertainty.py catches it.
"""
from __future__ import annotations

import collections
import re
import warnings

import numpy as np
from groundtruth import GroundTruth
from test_uncertainty import _noisy, _read
from trees import random_tree, tree_urdf

from rbd_estimator import ConfigError, RobotModel, SensorConfig, estimator_for, robots
from rbd_estimator.errors import ConditioningWarning, IllPosedError
from rbd_estimator.estimation.structured.layout import H_NLB, H_SW, H_WLB

SHIPPED = {"icub": 16, "talos": 16, "g1": 12, "humanoid": 16}     # random configurations per robot
TREES = 40                                                    # random trees
NOISY, EXACT = 2, 1                                           # ticks per configuration
CONTACT_TYPES = ("full_wrench", "point_force", "slippery")


def _scale(rng, lo=-2.0, hi=2.0) -> float:
    return float(10.0 ** rng.uniform(lo, hi))


def _drop_ft(params: dict, drop) -> dict:
    """``params`` without the force-torque sensors ``drop`` (and their ``ft.<name>.*`` keys)."""
    params = dict(params)
    params["ft_sensors"] = [s for s in params["ft_sensors"] if s not in drop]
    return {k: v for k, v in params.items() if not k.startswith(tuple(f"ft.{s}." for s in drop))}


def _randomize(params: dict, joints, rng, label: list) -> dict:
    """Random sensor subset, noise levels, contacts and priors on a configuration (``label``: what
    was drawn, for the printout)."""
    fts = list(params.get("ft_sensors", []))
    if fts:
        r = rng.random()
        if r < 0.1:
            drop, what = fts, "no FT"
        elif r < 0.4:                               # one limb's sensors: those sharing a side prefix
            side = rng.choice(sorted({s.split("_")[0] for s in fts}))
            drop, what = [s for s in fts if s.split("_")[0] == side], f"no {side}* FT"
        else:
            drop = [s for s in fts if rng.random() < 0.3]
            what = f"{len(fts) - len(drop)}/{len(fts)} FT"
        params = _drop_ft(params, drop)
        label.append(what)
    weak = ()
    if params.get("ft_sensors") and rng.random() < 0.15:   # one limb barely sensed: its contact's pivots
        side = rng.choice(sorted({s.split("_")[0] for s in params["ft_sensors"]}))   # near the prior's
        weak = [s for s in params["ft_sensors"] if s.split("_")[0] == side]
        label.append(f"{side}* FT × 1e5")
    for s in params.get("ft_sensors", []):
        f = 1e5 if s in weak else 1.0
        params[f"ft.{s}.force_stddev"] = params.get(f"ft.{s}.force_stddev", 1.0) * _scale(rng) * f
        params[f"ft.{s}.torque_stddev"] = params.get(f"ft.{s}.torque_stddev", 0.05) * _scale(rng) * f
    if params.get("joint_torque_sensors"):
        keep = [j for j in params["joint_torque_sensors"] if rng.random() < 0.8]
    else:
        keep = sorted(rng.choice(joints, size=int(rng.integers(0, len(joints) // 3 + 1)), replace=False).tolist())
    keep = sorted(set(keep) | set(params.pop("joint_torque_sensors_needed", ())))
    params = {k: v for k, v in params.items() if not k.startswith("joint_torque.")}
    params["joint_torque_sensors"] = keep
    for j in keep:
        params[f"joint_torque.{j}.stddev"] = 0.1 * _scale(rng)
    label.append(f"{len(keep)} JT")
    params["imu.linear_acceleration_stddev"] = 0.05 * _scale(rng, -1, 1)
    contacts = list(params["contacts"])
    if len(contacts) > 1 and rng.random() < 0.25:   # one foot off the ground
        off = contacts.pop(int(rng.integers(len(contacts))))
        params = {k: v for k, v in params.items() if not k.startswith(f"contact.{off}.")}
        params["contacts"] = contacts
    for c in contacts:
        params[f"contact.{c}.type"] = CONTACT_TYPES[int(rng.integers(3))] if rng.random() < 0.5 else "full_wrench"
    label.append("contacts " + ",".join(params[f"contact.{c}.type"][:2] for c in contacts))
    params["joint_acceleration_stddev"] = _scale(rng, -3, 1)
    params["contact_prior_stddev"] = _scale(rng, 1, 5)
    params["covariance"] = True
    label.append(f"σ_q̈ {params['joint_acceleration_stddev']:.2g}, prior {params['contact_prior_stddev']:.2g}")
    return params


def _with_ft_bodies(xml: str, bodies) -> str:
    """``tree_urdf``'s URDF with a force-torque sensor inserted above each body ``l{i}`` of ``bodies``:
    its joint moves a small link ``s{i}``, fixed (the sensor ``fts{i}``, a 90° turn) to ``l{i}``."""
    extra = []
    for i in bodies:
        xml, n = re.subn(rf'(<joint name="j{i}" type="revolute"><parent link="[^"]+"/><child link=")l{i}"',
                         rf'\1s{i}"', xml)
        assert n == 1, i
        extra.append(f'<link name="s{i}"><inertial><mass value="0.1"/><inertia ixx="0.001" ixy="0" ixz="0" '
                     f'iyy="0.001" iyz="0" izz="0.001"/></inertial></link>'
                     f'<joint name="fts{i}" type="fixed"><parent link="s{i}"/><child link="l{i}"/>'
                     f'<origin xyz="0 0 0.01" rpy="0 0 1.5708"/></joint>'
                     f'<gazebo reference="fts{i}"><sensor name="fts{i}" type="force_torque"/></gazebo>')
    return xml.replace("</robot>", "".join(extra) + "</robot>")


def _tree_case(k: int, rng, label: list):
    """A random floating-base tree, its FT sensors (at random bodies and under ``ft_leaves`` feet),
    its contacts (the soles and random bare leaves) and a randomized configuration."""
    n = int(rng.integers(26, 37))
    parents = random_tree(n, rng, branchiness=float(rng.uniform(0.2, 0.6)))
    leaves = [i for i in range(n) if i not in set(parents)]
    n_feet = int(rng.integers(1, min(4, len(leaves)) + 1))
    xml, soles = tree_urdf(parents, seed=100 + k, ft_leaves=n_feet)
    bodies = sorted(rng.choice(n, size=int(rng.integers(0, 5)), replace=False).tolist())
    xml = _with_ft_bodies(xml, bodies)
    bare = [i for i in leaves[n_feet:] if rng.random() < 0.3][:2]
    chains = []                                     # a bare contact's wrench: from torque sensors on its
    for i in bare:                                  # leaf's six nearest joints
        chain = [i]
        while len(chain) < 6 and parents[chain[-1]] >= 0:
            chain.append(parents[chain[-1]])
        chains += [f"j{j}" for j in chain]
    params = {"floating_base": True, "imu.frame": "root",
              "ft_sensors": [f"ft{f}" for f in range(n_feet)] + [f"fts{i}" for i in bodies],
              "contacts": [f"c{c}" for c in range(len(soles) + len(bare))], "joint_torque_sensors_needed": chains}
    for c, frame in enumerate(soles + [f"l{i}" for i in bare]):
        params[f"contact.c{c}.frame"] = frame
    label.append(f"{n} joints, {len(soles)} feet with FT + {len(bare)} bare contacts, FT at bodies {bodies}")
    return xml, _randomize(params, [f"j{i}" for i in range(n)], rng, label)


def _shipped_case(name: str, rng, label: list):
    xml = _read(robots.urdf_file(name))
    params = SensorConfig.from_yaml(robots.params_file(name)).to_parameters()
    joints = list(RobotModel.from_urdf(xml).joint_names)
    return xml, _randomize(params, joints, rng, label)


def _path(est) -> str:
    ip, S = est.kernel()
    if not ip[H_NLB]:
        return "planned dense"
    return "by limbs" if S[ip[H_SW] + ip[H_WLB]] == 1.0 else "fell back"


def _compare(a, b, condition: float, path: str, where: str) -> float:
    """Structured ``a = (τ, σ², C)`` (copies) against the generic estimate ``b``: each torque and wrench
    to 1e-9 of the largest torque or of its own standard deviation if larger (a prior-dominated output
    of 10³ N·m ± 10⁵ has no 1e-9 relative precision to give), the torque variances and the contacts'
    variances to 1e-9 relative (plus 1e-12 of the largest torque variance, as test_uncertainty: the
    generic path's rounding on a variance 10⁻⁴ of the largest, where by limbs and dense structured
    agree to 1e-15) and their covariances to 1e-9 of ``√(C_ii C_kk)`` (a correlation's 1e-9: an entry
    that cancels to nearly 0 has no relative precision). The estimate is held to 1e-9 at every pivot
    ratio: below 1e-3 the dense normal equations' solution is refined with the sensor rows
    (``solve._refine``; without it 3.8e-9 off the truth at a ratio of 6e-5 and 1.5e-8 off the generic
    path), below 1e-5 the limbs hand over to the dense path (by limbs 4.4e-9 at 1.1e-6), below 1e-6
    QR re-solves (docs/probabilistic_model.md, 'Accuracy'). The variances come from the Cholesky
    factor of the normal equations, whose own error the refinement does not touch: on the dense path
    between pivot ratios 1e-6 and 1e-3 they are held to 1e-7 (measured ≤ 1.4e-8;
    ``benchmarks/bench_conditioning.py accuracy``). Returns the tolerances of the estimate and of the
    variances."""
    cholesky = path != "by limbs" and 1e-6 <= condition < 1e-3
    tol, tol_var = 1e-9, (1e-7 if cholesky else 1e-9)
    tau, tv, cc = a
    scale = max(1.0, np.abs(b.tau).max())
    err = np.abs(tau - b.tau) / np.maximum(scale, np.sqrt(b.tau_variance))
    assert err.max() <= tol, (where, "τ", err.max())
    err = np.abs(tv - b.tau_variance) / (b.tau_variance + 1e-3 * b.tau_variance.max())
    assert err.max() <= tol_var, (where, "σ²(τ)", err.max())
    sd = np.sqrt(np.diagonal(b.contact_covariance, axis1=1, axis2=2))
    err = np.abs(cc - b.contact_covariance)
    assert np.all(err <= tol_var * sd[:, :, None] * sd[:, None, :]), (where, "contact covariance", err.max())
    return tol, tol_var


def _against_truth(r, truth, prior: float, tol: float, where: str) -> int:
    """Noise-free: each output equals the ground truth up to 1e-9 plus the prior's pull. With consistent
    readings ``x̂ − x* = −Σ Λ x*`` (``Σ`` the posterior covariance, ``Λ = 1/σ_p²`` on the contact
    components ``h``), so an output ``o`` is off by ``|Σ_oh h*|/σ_p² ≤ σ_o max_k σ_hk |h*|₁/σ_p²``
    (Cauchy–Schwarz), plus rounding (``tol`` of the largest
    entry or of the output's standard deviation, as :func:`_compare`). Outputs for which that bound exceeds
    1e-7 (the prior decides them) are left out; returns how many were compared."""
    h = np.abs(truth["wrenches"]).sum()
    sd_h = np.sqrt(np.stack([np.diag(C) for C in r.contact_covariance]))
    pull = sd_h.max(initial=0.0) * h / prior ** 2
    count = 0
    for est, ref, sd in ((r.tau, truth["tau"], np.sqrt(r.tau_variance)), (r.contact_wrenches, truth["wrenches"], sd_h)):
        scale = max(1.0, np.abs(ref).max())
        bound = sd * pull
        tested = bound <= 1e-7 * scale
        err = np.abs(est - ref)
        assert np.all(err[tested] <= tol * np.maximum(scale, sd[tested]) + bound[tested]), \
            (where, err[tested].max(), bound[tested].max())
        count += int(tested.sum())
    return count


def _cases():
    rng = np.random.default_rng(20)
    for name, count in SHIPPED.items():
        for k in range(count):
            label = [f"{name} #{k}"]
            yield label, (lambda name=name, label=label: _shipped_case(name, rng, label))
    for k in range(TREES):
        label = [f"tree #{k}"]
        yield label, (lambda k=k, label=label: _tree_case(k, rng, label))


def test_limbs_on_random_sensor_sets_equal_the_generic_path_and_the_truth():
    """Every drawn configuration: the structured tick (by limbs, fallen back or planned dense) equals
    the generic path on noisy readings and the ground truth on exact ones; a good share by limbs; a
    refused draw (structurally ill-posed) names what is undetermined, promptly."""
    paths, strict, refused, generic, compared = collections.Counter(), collections.Counter(), [], [], 0
    for case, (label, make) in enumerate(_cases()):
        xml, params = make()
        cfg = SensorConfig.from_parameters(params)
        name = " · ".join(label)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConditioningWarning)
                warnings.simplefilter("error", RuntimeWarning)
                fast = estimator_for(xml, cfg)
        except (ConfigError, IllPosedError) as e:   # an ill-posed draw: the planner says why
            assert "undetermined" in str(e) and any(c.name in str(e) for c in cfg.contacts), e
            refused.append(f"{name}: {str(e)[:90]}…")
            continue
        except RuntimeWarning as e:                 # the structured solver's self-check at planning
            generic.append(f"{name}: {e}")          # (1e-8) refused it: the generic one runs instead
            continue
        ref = estimator_for(xml, cfg, solver="generic")
        assert fast.report.solver == "structured" and ref.report.solver == "generic", label
        assert fast.layout.measured_acceleration
        gt = GroundTruth(xml, fast)
        rng = np.random.default_rng(case)
        ticks = []
        for t in range(NOISY + EXACT):
            inputs, truth = gt.sample(rng)
            if t < NOISY:
                inputs = _noisy(inputs, cfg, rng, cfg.joint_acceleration_stddev)
            r = fast.estimate(**inputs)
            path = _path(fast)
            a = (r.tau.copy(), r.tau_variance.copy(), r.contact_covariance.copy())
            where = f"{name}, tick {t} ({path})"
            tol, tol_var = _compare(a, ref.estimate(**inputs), r.condition, path, where)
            if t >= NOISY:
                compared += _against_truth(r, truth, fast.layout.prior_stddev, tol, where)
            paths[path] += 1
            strict[path] += tol_var == 1e-9
            ticks.append(path)
        print(f"  {name}: {', '.join(ticks)}")
    total = sum(paths.values())
    print(f"\n{total // (NOISY + EXACT)} configurations, {total} ticks by path: {dict(paths)}, of which with "
          f"the variances at 1e-9 (the estimate always; variances 1e-7 dense between pivot ratios 1e-6 and 1e-3): "
          f"{dict(strict)}; "
          f"outputs compared with the truth: {compared}; "
          f"refused as ill-posed: {len(refused)}; structured refused by its self-check: {len(generic)}")
    for line in refused + generic:
        print("  ", line)
    assert len(generic) <= 8, generic
    assert paths["by limbs"] >= 0.15 * total and paths["fell back"] and paths["planned dense"], paths
    assert sum(strict.values()) >= 0.4 * total, strict
    assert len(refused) <= 0.25 * (total // (NOISY + EXACT) + len(refused)), refused


def test_a_cancelled_limb_variance_is_solved_densely():
    """Talos's right-ankle force-torque sensor 10⁵ and 10⁷ × noisier under a contact prior 10⁴ × weaker
    than the default: the right foot's contact is then determined by the base's equation (the left
    foot's sensor), not by its own block, yet its pivots pass ``limbs._sensed``, and the variance by
    limbs ``|y|² + |v₁|² − |v₂|²`` cancels (1.5e-6 and 1.1e-2 relative off the generic path before
    ``limbs._variance`` checked it). The tick must then go dense and agree with the generic path to
    1e-9 relative, variance by variance; at the configured noise it stays by limbs."""
    xml = _read(robots.urdf_file("talos"))
    base = SensorConfig.from_yaml(robots.params_file("talos")).to_parameters()
    for k, expected in ((0, "by limbs"), (5, "fell back"), (7, "fell back")):
        params = dict(base, joint_acceleration_stddev=0.1, contact_prior_stddev=1e8, covariance=True)
        for what, default in (("force", 1.0), ("torque", 0.05)):
            key = f"ft.right_ankle_ft.{what}_stddev"
            params[key] = params.get(key, default) * 10.0 ** k
        cfg = SensorConfig.from_parameters(params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConditioningWarning)
            fast, ref = estimator_for(xml, cfg), estimator_for(xml, cfg, solver="generic")
        gt, rng = GroundTruth(xml, fast), np.random.default_rng(k)
        for t in range(4):
            inputs = _noisy(gt.sample(rng)[0], cfg, rng, cfg.joint_acceleration_stddev)
            r = fast.estimate(**inputs)
            a, path = (r.tau.copy(), r.tau_variance.copy(), r.contact_covariance.copy()), _path(fast)
            b = ref.estimate(**inputs)
            where = f"right ankle × 1e{k}, tick {t} ({path})"
            assert path == expected, where
            _compare(a, b, r.condition, path, where)
            err = np.abs(a[1] - b.tau_variance) / b.tau_variance
            assert err.max() <= 1e-9, (where, err.max())
            d = np.diagonal(b.contact_covariance, axis1=1, axis2=2)
            err = np.abs(np.diagonal(a[2], axis1=1, axis2=2) - d) / d
            assert err.max() <= 1e-9, (where, err.max())
