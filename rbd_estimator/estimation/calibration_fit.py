"""The least-squares fit of force-torque offsets behind :func:`~.calibration.calibrate_ft_offsets`
(the method is described there): the estimator's problem over a window of samples, reduced sample by
sample onto the offsets, and the results it returns."""
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


# ---------------------------------------------------------------------------- the fit
class OffsetProblem:
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
            lay = SystemLayout(m, replace(cfg, contacts=cfg.contacts + extra, joint_acceleration_stddev=0.0),
                               prior=False)
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


def as_wrench(w, name) -> np.ndarray:
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
