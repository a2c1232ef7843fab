"""Force-torque sensor offset calibration in a declared contact situation.

A six-axis force-torque sensor reads ``reading = true + offset`` with an offset that drifts (with
temperature, after mounting, after a fall). With the robot in a known *contact situation* — standing
on both feet, on one foot, hanging from a fixture — the model predicts what every sensor should
read, and the offsets are what is left over, averaged over a window of samples.

Conventions
===========
Offsets are in each sensor's own frame and measure direction, ``[fx, fy, fz, tx, ty, tz]`` (N, N·m),
exactly like the readings given to :meth:`Estimator.estimate` (SDF ``frame`` and
``measure_direction``; torque about the sensor joint's origin): ``reading = true + offset``, and
:func:`apply_offsets` returns ``reading − offset``. That one function is what the node, the replay
tools and the tests use to correct readings.

The problem solved
==================
The estimator's own least-squares problem, over a window of samples, with the offsets as extra
unknowns shared by every sample. Nothing is re-derived: the Newton–Euler rows (3a), (3f), (3τ), the
whitened sensor rows (eq. 16: IMU, force-torque with their rotations and signs, load cells, joint
torques) and the known external wrenches all come from :class:`~.layout.SystemLayout`, and the
kinematics from the estimator, so the calibration cannot disagree with the estimate about a frame
or a sign. For sample ``s``:

* unknowns ``d_s`` — accelerations, joint wrenches, torques (determined by the hard rows once the
  external wrenches are fixed) and ``z_s``: the free components of the *active* contacts'
  wrenches, plus the wrench of the *fixture* if there is one (below). Contacts configured but not
  active are in the air: their wrench is zero;
* hard rows ``A_h d_s = r_h``; soft (whitened) rows ``A_s d_s + G o = r_s`` where ``G`` is the
  whitened map of the force-torque readings in the right-hand side (``reading − offset`` replaces
  ``reading``).

Eliminating the hard rows (a sparse LU of the square inverse-dynamics part) leaves
``B_s z_s + G o ≈ c_s``. Eliminating ``z_s`` (projection ``P_s`` onto the orthogonal complement of
``range B_s``) leaves the normal equations of the offsets alone, in whitened units ``o = σ u``::

    (Σ_s Eᵀ P_s E) u = Σ_s Eᵀ P_s c_s,        E = G diag(σ)

The matrix ``N = Σ Eᵀ P_s E`` is the information: ``N⁻¹`` is the covariance of ``u`` when the
configured standard deviations are right, so every offset comes with its standard error
(:attr:`SensorOffset.stddev`), and the whitened residual gives a ``χ²`` per degree of freedom that
is ≈ 1 when the model, the noise levels and the declared contact situation are right (a contact that
was declared absent but is touching shows up as a large ``χ²`` and large residuals).

Per sensor, the *method* is

* ``"direct"`` when no per-sample unknown enters the sensor's predicted reading (a fixed base and no
  contact or fixture in its sub-tree): ``B_s`` has zero rows there, ``P_s`` is the identity on them,
  and the offset is exactly ``mean(measured − expected)`` over the samples, with standard error
  ``σ/√N`` per axis;
* ``"joint"`` otherwise: determined jointly with the other sensors, the IMU and the per-sample
  contact wrenches by the least-squares fit above.

Contact situations and the fixture
==================================
``contacts`` names the configured contacts that touch the environment during the window (their
wrenches are unknown: nothing needs to be given for them); every other configured contact is in the
air. A *floating-base* robot with no active contact would be in free fall, which is never a
calibration situation: "hanging" means held by a fixture (a crane, a harness, a stand) attached to a
link. By default (``fixture="auto"``) a floating-base robot with no active contact is held at its root
link by an unknown wrench — a 6-component per-sample unknown on the base body, like a contact. Pass
``fixture=<link or frame>`` for another attachment (also together with contacts), or ``None`` for none.
A *fixed-base* estimator (``floating_base: false``: the root link bolted to a stand) needs no fixture:
with no contact every sensor's sub-tree is free and every sensor is calibrated ``"direct"``.

What can be calibrated (identifiability)
========================================
The force-torque sensors cut the tree into sub-trees. A sensor's true reading is the wrench
transmitted through its cut: the sum, over the sub-tree away from the root, of ``I a + v ×* I v``
minus the external wrenches in that sub-tree. With a floating base the base's spatial acceleration
``a_0`` enters every sub-tree's prediction; the estimator does not use the IMU orientation for
gravity, so ``a_0`` is known only through the IMU rows (3 linear, + 3 angular with
``imu.use_angular_acceleration``) and through the base's Newton–Euler equation, i.e. through the
contact wrenches. Counting per sample (``n_z`` = free contact/fixture components, ``m_s`` = sensor
rows): the fit has ``N m_s`` equations for ``N n_z + 6 n_ft`` unknowns, and what matters is whether
the offsets can be traded against per-sample wrenches *consistently over all samples*:

* **fixed base, no contact** — every sub-tree is predicted from the joint state alone: all offsets,
  ``"direct"``, from any samples (one posture suffices).
* **floating base, hanging from the fixture at the root link** — the fixture's wrench enters no
  sensor, but it frees ``a_0``: the IMU's linear rows pin 3 of its 6 components. The base's angular
  acceleration about the IMU's origin is then a per-sample unknown, and the offset pattern that a
  constant angular acceleration ``δ`` would add to every sensor at once (through the composite
  inertias of their sub-trees, ``I^c_k ᵏX_F [δ; 0]``) is indistinguishable from it: **3 directions
  are unidentifiable with a single posture**. Samples in varied postures, or the IMU's
  angular-acceleration rows (``imu_angular_acceleration=True`` with ``ImuSample.angular_acceleration``
  zero for a robot held still, or the gyro's derivative), make all offsets identifiable.
* **one foot in contact** — that contact's 6 components are per-sample unknowns. A constant shift of
  the stance foot's sensor offset is absorbed by the contact wrench (the sole is rigid to the foot
  sensor) unless another sensor sees the same contact through a posture-dependent transform (the
  leg sensor above it) and the base balance, which ties the contact to ``a_0`` and hence to the IMU
  and to the sensors of the free sub-trees (the lifted leg, the arms). With a single posture
  **3 directions are unidentifiable** (6 contact unknowns vs. 3 IMU rows; none with the IMU's
  angular-acceleration rows); varied postures make all identifiable.
* **both feet in contact** — 12 per-sample contact unknowns, 3 of which the IMU and the base
  balance tie down: with a single posture **9 directions are unidentifiable** (6 with the IMU's
  angular-acceleration rows), mixing the foot and leg sensors' offsets (with small arm
  components); varied postures of both legs make all identifiable.
* the fewer sensors see a contact, the weaker: with only the two foot sensors, both feet down, the
  offsets are identified only through the base balance and the IMU as the posture varies —
  standard errors ≈ 15 σ/√N on iCub instead of σ/√N. The reported standard errors say so.

The counts above are those found for iCub with its six sensors and an IMU on the root link (see
``test/test_calibration.py``); for another robot or sensor set the fit finds its own.

Rather than guessing, the fit decides numerically: an eigen-direction of ``N`` with eigenvalue below
``rcond × N_samples`` (``N_samples`` being the eigenvalue of a component measured directly in every
sample) is unidentifiable; every offset component with a non-negligible share in such a direction is
reported as NaN (``SensorOffset.identified`` is False there) and the directions are described in
:attr:`CalibrationResult.unidentifiable`; the other components are still exact (they are orthogonal
to the null space). ``strict=True`` raises :class:`~rbd_estimator.errors.IllPosedError` instead.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .calibration_fit import AXES, CalibrationResult, SensorOffset, OffsetProblem, as_wrench
from .estimator import Estimator

__all__ = ["SensorOffset", "CalibrationResult", "calibrate_ft_offsets", "apply_offsets"]


# ---------------------------------------------------------------------------- public functions
def calibrate_ft_offsets(estimator: Estimator, samples, contacts, *, fixture="auto", sensors=None,
                         imu_angular_acceleration: bool | None = None, rcond: float = 1e-8,
                         strict: bool = False) -> CalibrationResult:
    """Offsets of the force-torque sensors from ``samples`` taken in a declared contact situation.

    ``samples``: a sequence of dictionaries with the keyword inputs of :meth:`Estimator.estimate`
    (``q``, ``dq``, ``ddq``, ``imu``, ``ft`` as an ``(n_ft, 6)`` array or a dict, ``load_cells``,
    ``joint_torques``, ``external_wrenches``), the ``ft`` readings *uncorrected*. Postures that vary
    over the window make more offsets identifiable (see the module documentation).

    ``contacts``: names of the configured contacts touching the environment (their wrenches are
    unknown per sample); the other configured contacts are in the air (zero wrench). A single name
    may be given as a string; ``()`` means no contact.

    ``fixture``: ``"auto"`` (a floating-base robot with no active contact hangs from a fixture at its
    root link; otherwise no fixture), a link or frame name where an unknown wrench holds the robot,
    or ``None``.

    ``sensors``: names of the sensors to calibrate (default: all configured); the readings of the
    others are taken as offset-free.

    ``imu_angular_acceleration``: ``True`` adds the IMU's angular-acceleration rows for the
    calibration even if the estimator's configuration does not use them (every sample's
    ``ImuSample.angular_acceleration`` is then required: zeros for a robot held still, or the gyro's
    derivative); this makes a single posture enough while hanging and on one foot. ``None``: as
    configured.

    ``rcond``: eigenvalues of the information matrix below ``rcond × len(samples)`` count as
    unidentifiable. ``strict``: raise :class:`IllPosedError` if any component is unidentifiable.

    Raises ``ConfigError`` for an unknown contact, sensor or fixture frame and ``ValueError`` naming
    the sample and input for a missing, misshapen or non-finite input.
    """
    problem = OffsetProblem(_tree_estimator(estimator), contacts, fixture, sensors, imu_angular_acceleration)
    samples = list(samples)
    if not samples:
        raise ValueError("samples: at least one sample is needed")
    for k, sample in enumerate(samples):
        problem.add(k, sample)
    result = problem.solve(rcond)
    return result.check() if strict else result


def apply_offsets(ft, offsets, names=None):
    """Readings corrected for their offsets: ``ft − offset`` per sensor (a new array or dict).

    ``ft``: ``{sensor: [fx..tz]}`` or an ``(n, 6)`` array. ``offsets``: a :class:`CalibrationResult`,
    ``{sensor: offset (6,)}`` (sensors absent are left as they are) or an ``(n, 6)`` array matching
    ``ft``. With an array ``ft`` and offsets by name, ``names`` gives the sensor of each row
    (``estimator.ft_names``). An offset with a NaN (not identified by the calibration) raises
    ``ValueError`` naming the sensor rather than turning the reading into NaN.
    """
    if isinstance(offsets, CalibrationResult):
        offsets = offsets.offsets
    if isinstance(offsets, dict):
        by_name = {n: as_wrench(o, f"offsets['{n}']") for n, o in offsets.items()}
        for n, o in by_name.items():
            if not np.all(np.isfinite(o)):
                bad = [a for a, x in zip(AXES, o) if not np.isfinite(x)]
                raise ValueError(f"offset of '{n}' is not identified ({', '.join(bad)}): calibrate it in another "
                                 f"contact situation or leave it out of the offsets")
        if isinstance(ft, dict):
            unknown = set(by_name) - set(ft)
            if unknown:
                raise ValueError(f"offsets for sensors without a reading: {sorted(unknown)}")
            return {n: as_wrench(w, f"ft['{n}']") - by_name.get(n, 0.0) for n, w in ft.items()}
        arr = np.array(ft, dtype=float)
        if names is None:
            raise ValueError("apply_offsets: ft is an array and the offsets are by sensor name: pass "
                             "names=estimator.ft_names (the sensor of each row)")
        names = list(names)
        if arr.shape != (len(names), 6):
            raise ValueError(f"ft: expected shape ({len(names)}, 6) in the order {names}, got {arr.shape}")
        unknown = set(by_name) - set(names)
        if unknown:
            raise ValueError(f"offsets for sensors not in names: {sorted(unknown)}")
        for n, o in by_name.items():
            arr[names.index(n)] -= o
        return arr
    off = np.asarray(offsets, dtype=float)
    if not np.all(np.isfinite(off)):
        raise ValueError("offsets: non-finite entries (components the calibration did not identify)")
    if isinstance(ft, dict):
        if names is None or off.shape != (len(names), 6):
            raise ValueError("apply_offsets: ft is a dict and the offsets an array: pass names (the sensor of "
                             "each row of offsets)")
        return apply_offsets(ft, dict(zip(names, off)))
    arr = np.array(ft, dtype=float)
    if arr.shape != off.shape or arr.ndim != 2 or arr.shape[1] != 6:
        raise ValueError(f"ft and offsets must both be (n, 6) arrays, got {arr.shape} and {off.shape}")
    return arr - off


def _tree_estimator(estimator) -> Estimator:
    """The fixed-contact tree estimator the calibration works with: ``estimator`` itself, or the
    all-contacts subset of a switching one (the calibration says itself which contacts are on)."""
    if isinstance(estimator, Estimator):
        return estimator
    switching = estimator.switching()
    full = switching.subsets[-1] if switching is not None and not estimator.has_loops else None
    if full is None:
        raise ConfigError("calibration works on a kinematic tree with its full contact set: not available for "
                          "loops or mimic joints, nor when the full contact set is ill-posed")
    return full


