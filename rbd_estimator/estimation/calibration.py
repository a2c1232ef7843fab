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

from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

from ..errors import ConfigError, IllPosedError
from .config import ContactConfig
from .estimator import Estimator
from .layout import SystemLayout
from .measurements import Measurements, vector

__all__ = ["SensorOffset", "CalibrationResult", "calibrate_ft_offsets", "apply_offsets"]

AXES = ("fx", "fy", "fz", "tx", "ty", "tz")
_FIXTURE = "<fixture>"             # contact name of the fixture inside the calibration layout
_SAMPLE_KEYS = ("q", "dq", "ddq", "imu", "ft", "load_cells", "joint_torques", "external_wrenches")


@dataclass(frozen=True, eq=False)
class SensorOffset:
    """The calibrated offset of one force-torque sensor.

    * ``offset``: ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) in the sensor's frame and measure direction,
      ``reading = true + offset``; NaN for a component the samples do not identify;
    * ``stddev``: its standard error (same units) if the configured standard deviations are right;
    * ``residual_rms``: RMS over the samples of the fitted residual ``measured − offset − expected``
      per axis (N, N·m): at most ≈ the sensor noise when the declared situation is right (less on
      rows that also determine the per-sample contact wrenches), far more when it is wrong;
    * ``identified``: per axis, whether the samples determine it;
    * ``method``: ``"direct"`` (mean of measured − expected, nothing else unknown) or ``"joint"``
      (least squares with the other sensors and the per-sample contact wrenches);
    * ``n_samples``: samples used.
    """
    name: str
    offset: np.ndarray
    stddev: np.ndarray
    residual_rms: np.ndarray
    identified: np.ndarray
    method: str
    n_samples: int

    @property
    def ok(self) -> bool:
        """True when all six components were identified."""
        return bool(np.all(self.identified))


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """Result of :func:`calibrate_ft_offsets`: one :class:`SensorOffset` per calibrated sensor.

    ``contacts`` and ``fixture`` record the declared situation; ``rank`` of the ``n_unknowns``
    offset components are identified; ``unidentifiable`` describes every unidentifiable direction
    (largest components first); ``chi2`` is the whitened residual per degree of freedom (≈ 1 when the
    model, the configured noise and the declared situation are right)."""
    sensors: tuple[SensorOffset, ...]
    contacts: tuple[str, ...]
    fixture: str | None
    n_samples: int
    rank: int
    n_unknowns: int
    unidentifiable: tuple[str, ...]
    chi2: float
    dof: int
    _by_name: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self._by_name.update({s.name: s for s in self.sensors})

    def __getitem__(self, name: str) -> SensorOffset:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no calibrated force-torque sensor '{name}' (calibrated: "
                           f"{', '.join(self._by_name)})") from None

    @property
    def identified(self) -> bool:
        """True when every offset component was identified."""
        return self.rank == self.n_unknowns

    @property
    def offsets(self) -> dict[str, np.ndarray]:
        """``{sensor: offset (6,)}`` (NaN where unidentified): what :func:`apply_offsets` takes."""
        return {s.name: s.offset for s in self.sensors}

    def check(self) -> "CalibrationResult":
        """Raise :class:`IllPosedError` if some offset component was not identified; else self."""
        if not self.identified:
            raise IllPosedError(self.summary())
        return self

    def summary(self) -> str:
        """Human-readable report: situation, per-sensor offsets, errors, residuals, identifiability."""
        situation = ", ".join(self.contacts) if self.contacts else "no contact"
        if self.fixture:
            situation += f", held at '{self.fixture}'"
        lines = [f"force-torque offset calibration ({situation}; {self.n_samples} samples): "
                 f"{self.rank} of {self.n_unknowns} offset components identified, "
                 f"chi2/dof = {self.chi2:.3g} ({self.dof} dof)"]
        for s in self.sensors:
            vals = " ".join(f"{a}={o:+.4g}±{e:.2g}" for a, o, e in zip(AXES, s.offset, s.stddev))
            rms = " ".join(f"{r:.2g}" for r in s.residual_rms)
            lines.append(f"  {s.name} [{s.method}]: {vals}; residual rms {rms}")
        if self.unidentifiable:
            lines.append(f"  {len(self.unidentifiable)} unidentifiable direction(s) in this contact situation "
                         f"(NaN above); use samples in more varied postures, another contact situation "
                         f"(hanging, one foot), or angular-acceleration rows of the IMU:")
            lines += [f"    {d}" for d in self.unidentifiable]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """Plain-Python form (lists, floats, NaN kept) for a service response or a YAML file."""
        return {"contacts": list(self.contacts), "fixture": self.fixture, "n_samples": self.n_samples,
                "rank": self.rank, "n_unknowns": self.n_unknowns, "chi2": self.chi2,
                "unidentifiable": list(self.unidentifiable),
                "sensors": {s.name: {"offset": s.offset.tolist(), "stddev": s.stddev.tolist(),
                                     "residual_rms": s.residual_rms.tolist(),
                                     "identified": s.identified.tolist(), "method": s.method,
                                     "n_samples": s.n_samples} for s in self.sensors}}


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
    problem = _Problem(_tree_estimator(estimator), contacts, fixture, sensors, imu_angular_acceleration)
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
        by_name = {n: _wrench(o, f"offsets['{n}']") for n, o in offsets.items()}
        for n, o in by_name.items():
            if not np.all(np.isfinite(o)):
                bad = [a for a, x in zip(AXES, o) if not np.isfinite(x)]
                raise ValueError(f"offset of '{n}' is not identified ({', '.join(bad)}): calibrate it in another "
                                 f"contact situation or leave it out of the offsets")
        if isinstance(ft, dict):
            unknown = set(by_name) - set(ft)
            if unknown:
                raise ValueError(f"offsets for sensors without a reading: {sorted(unknown)}")
            return {n: _wrench(w, f"ft['{n}']") - by_name.get(n, 0.0) for n, w in ft.items()}
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


# ---------------------------------------------------------------------------- the fit
class _Problem:
    """The estimator's least-squares problem over a window, reduced sample by sample onto the offsets."""

    def __init__(self, est: Estimator, contacts, fixture, sensors, imu_angular_acceleration=None):
        cfg, m = est.config, est.model
        if imu_angular_acceleration is not None:
            if cfg.imu is None:
                raise ConfigError("calibration: imu_angular_acceleration needs an IMU in the configuration")
            cfg = cfg.with_sensor(replace(cfg.imu, use_angular_acceleration=bool(imu_angular_acceleration)))
        contacts = _configured(contacts, est.contact_names, "contact", "contact", "contacts")
        if len(set(contacts)) != len(contacts):
            raise ConfigError(f"calibration contacts list a contact twice: {list(contacts)}")
        if fixture == "auto":
            fixture = m.root_link if (m.floating_base and not contacts) else None
        self.contacts, self.fixture = contacts, fixture
        sensors = _configured(est.ft_names if sensors is None else sensors, est.ft_names, "sensor",
                              "force-torque sensor", "ft_sensors")
        if not sensors:
            raise ConfigError("calibration: no force-torque sensor to calibrate")
        self.sensors = sensors

        # the estimator's layout, plus the fixture as one more (full-wrench) contact
        extra = (ContactConfig(name=_FIXTURE, frame=fixture),) if fixture else ()
        try:
            lay = SystemLayout(m, replace(cfg, contacts=cfg.contacts + extra))
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(f"contact.{_FIXTURE}.frame", "fixture")) from None
        ref = est.layout
        assert (lay.r_c, lay.r_nu, lay.r_xa0, lay.r_imu_wv, lay.r_qdd) == \
               (ref.r_c, ref.r_nu, ref.r_xa0, ref.r_imu_wv, ref.r_qdd), "calibration layout differs in its sources"
        self.lay = lay
        t = np.array(lay.triplets)
        self.t_row, self.t_col = t[:, 0].astype(np.int64), t[:, 1].astype(np.int64)
        self.t_src, self.t_coef = t[:, 2].astype(np.int64), t[:, 3]

        # unknowns: z = free components of the active contacts and the fixture; the wrenches of
        # configured contacts in the air are zero (their columns dropped); x = everything else
        z, dropped = [], []
        for col in lay.columns:
            if col.kind == "h":
                idx = list(range(col.start, col.start + col.size))
                (z if (col.owner in contacts or col.owner == _FIXTURE) else dropped).extend(idx)
        x = sorted(set(range(lay.n)) - set(z) - set(dropped))
        if len(x) != lay.m_hard:
            raise AssertionError(f"calibration: {lay.m_hard} Newton-Euler rows for {len(x)} unknowns")
        self.x, self.z = np.array(x, dtype=np.int64), np.array(z, dtype=np.int64)

        # G: whitened map of the FT readings (columns in est.ft_names × [fx..tz]); the offsets enter
        # the soft rows as + G o. Each column has one entry 1/σ: σ per offset component.
        R = lay.rhs_map().tocsc()
        r_ft = lay.r_y + lay.y_offsets[cfg.ft_sensors[0].name] if cfg.ft_sensors else lay.r_y
        G = R[:, r_ft:r_ft + 6 * len(cfg.ft_sensors)].toarray()
        if np.any(G[:lay.m_hard]):
            raise AssertionError("calibration: force-torque readings in a Newton-Euler row")
        G = G[lay.m_hard:]
        nnz = np.count_nonzero(G, axis=0)
        if np.any(nnz != 1):
            raise AssertionError("calibration: a force-torque component is not exactly one sensor row")
        self.ft_row = np.argmax(np.abs(G), axis=0)                 # soft row of each reading component
        self.sigma = 1.0 / G[self.ft_row, np.arange(G.shape[1])]
        self.R = R.tocsr()
        cols = [6 * est.ft_names.index(s) + a for s in sensors for a in range(6)]
        self.cols = np.array(cols, dtype=np.int64)
        self.E = np.zeros((lay.m_soft, len(cols)))                  # E = G diag(σ): unit selection
        self.E[self.ft_row[self.cols], np.arange(len(cols))] = 1.0

        self.est = est                          # its kinematics (Estimator.system_at: buffers untouched)
        self.measurements = Measurements(cfg)   # y of cfg (with the angular acceleration if asked for)
        self.N = np.zeros((len(cols), len(cols)))
        self.b = np.zeros(len(cols))
        self.Q, self.c = [], []
        self.z_rank = 0
        self.coupled = np.zeros(len(sensors), dtype=bool)

    # ------------------------------------------------------------------ one sample
    def _sources(self, k, sample):
        lay, meas = self.lay, self.measurements
        if not isinstance(sample, dict):
            raise ValueError(f"samples[{k}]: expected a dictionary of estimate() inputs, got {type(sample).__name__}")
        unknown = set(sample) - set(_SAMPLE_KEYS)
        if unknown:
            raise ValueError(f"samples[{k}]: unknown input(s) {sorted(unknown)} (known: {', '.join(_SAMPLE_KEYS)})")
        nj = len(self.est.joint_names)
        try:
            q, dq, ddq, *readings = (sample.get(key) for key in _SAMPLE_KEYS)
            q, dq, ddq = (vector(x, nj, name) for x, name in ((q, "q"), (dq, "dq"), (ddq, "ddq")))
            y = meas.fill(*readings)                # the estimator's own conversions and checks
            for name, buf in (("q", q), ("dq", dq), ("ddq", ddq), ("y", y)):
                if not np.all(np.isfinite(buf)):
                    i = int(np.argmin(np.isfinite(buf)))
                    what = meas.describe(i) if name == "y" else f"{name}[{i}]"
                    raise ValueError(f"{what} is not finite")
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"samples[{k}]: {exc}") from None
        return self.est.system_at(q, dq, ddq, y, lay)   # as the tick places them

    def add(self, k, sample):
        lay = self.lay
        src, rsrc = self._sources(k, sample)
        A = sp.csr_matrix((self.t_coef * src[self.t_src], (self.t_row, self.t_col)), shape=(lay.m, lay.n))
        r = self.R @ rsrc
        mh = lay.m_hard
        Ah, As = A[:mh], A[mh:]
        try:
            lu = splu(Ah[:, self.x].tocsc())
        except RuntimeError:
            raise ValueError(f"samples[{k}]: the Newton-Euler equations are singular at this state") from None
        X = lu.solve(np.column_stack([Ah[:, self.z].toarray(), r[:mh]]))   # x = X_r − X_z z
        Asx = As[:, self.x]
        nz = len(self.z)
        B = As[:, self.z].toarray() - Asx @ X[:, :nz]                     # soft rows: B z + G o ≈ c
        c = r[mh:] - Asx @ X[:, nz]
        if not (np.all(np.isfinite(B)) and np.all(np.isfinite(c))):
            raise ValueError(f"samples[{k}]: the Newton-Euler equations are singular at this state")
        Q = np.zeros((lay.m_soft, 0))
        if nz:
            U, s, _ = np.linalg.svd(B, full_matrices=False)
            Q = U[:, :int(np.sum(s > 1e-10 * s[0]))] if s[0] > 0 else Q
            rows = np.abs(B[self.ft_row[self.cols]]).reshape(len(self.sensors), 6, nz)
            self.coupled |= np.any(rows > 1e-12 * max(1.0, np.abs(B).max()), axis=(1, 2))
        PE = self.E - Q @ (Q.T @ self.E)                                  # P_s E, P_s = I − Q Qᵀ
        Pc = c - Q @ (Q.T @ c)
        self.N += self.E.T @ PE
        self.b += PE.T @ c
        self.Q.append(Q)
        self.c.append(Pc)
        self.z_rank += Q.shape[1]

    # ------------------------------------------------------------------ the offsets
    def solve(self, rcond) -> CalibrationResult:
        n_s, n_u = len(self.c), len(self.cols)
        lam, V = np.linalg.eigh(0.5 * (self.N + self.N.T))
        keep = lam > rcond * n_s
        Vk, Vn = V[:, keep], V[:, ~keep]
        cov = (Vk / lam[keep]) @ Vk.T
        u = cov @ self.b
        identified = np.linalg.norm(Vn, axis=1) < 1e-6 if Vn.size else np.ones(n_u, dtype=bool)
        sig = self.sigma[self.cols]
        offset = np.where(identified, sig * u, np.nan)
        stddev = np.where(identified, sig * np.sqrt(np.clip(np.diag(cov), 0.0, None)), np.nan)

        # residuals P_s (c_s − E u) (whitened), per FT row; χ² over all sensor rows
        e_ft = np.zeros((n_s, len(self.sigma)))
        chi = 0.0
        Eu = self.E @ u
        for s, (Q, Pc) in enumerate(zip(self.Q, self.c)):
            res = Pc - (Eu - Q @ (Q.T @ Eu))
            chi += float(res @ res)
            e_ft[s] = res[self.ft_row]
        rms = np.sqrt(np.mean(e_ft ** 2, axis=0)) * self.sigma
        dof = n_s * self.lay.m_soft - self.z_rank - int(keep.sum())

        labels = [f"{s} {a}" for s in self.sensors for a in AXES]
        directions = []
        for j in range(Vn.shape[1]):
            v = Vn[:, j] * sig                                    # in N, N·m
            v = v / np.abs(v).max()
            order = [i for i in np.argsort(-np.abs(v)) if abs(v[i]) > 0.05][:8]
            directions.append(" + ".join(f"{v[i]:+.2f}·{labels[i]}" for i in order))
        out = []
        for k, name in enumerate(self.sensors):
            sl = slice(6 * k, 6 * k + 6)
            out.append(SensorOffset(name=name, offset=offset[sl], stddev=stddev[sl],
                                    residual_rms=rms[self.cols[sl]], identified=identified[sl].copy(),
                                    method="joint" if self.coupled[k] else "direct", n_samples=n_s))
        return CalibrationResult(sensors=tuple(out), contacts=self.contacts, fixture=self.fixture,
                                 n_samples=n_s, rank=int(keep.sum()), n_unknowns=n_u,
                                 unidentifiable=tuple(directions), chi2=chi / dof if dof > 0 else float("nan"),
                                 dof=dof)


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


def _wrench(w, name) -> np.ndarray:
    a = np.asarray(w, dtype=float)
    if a.shape != (6,):
        raise ValueError(f"{name}: expected 6 values [fx, fy, fz, tx, ty, tz], got shape {a.shape}")
    return a


def _configured(given, configured, what: str, kind: str, parameter: str) -> tuple:
    """``given`` (one name or several) as a tuple of names, each among ``configured``, else
    ``ConfigError`` naming it and listing the ``parameter`` it must come from."""
    names = (given,) if isinstance(given, str) else tuple(given)
    for n in names:
        if n not in configured:
            raise ConfigError(f"calibration {what} '{n}' is not a configured {kind} "
                              f"({parameter}: {', '.join(configured) or 'none'})")
    return names
