"""Nori's linear system ``D d + b = 0`` (eqs. 3–5, 7–8, 16, 18, 23) as sparse linear maps.

Unknowns ``d`` (columns), per body i in regular numbering: spatial acceleration ``a_i`` (6), joint
wrench ``f_i`` (6, parent → child, body coordinates) and torque ``τ_i`` (one for a 1-DoF joint, none
for a kept fixed joint), then the free components ``h_c`` of every contact wrench. Known
quantities are substituted rather than carried as unknowns: the joint accelerations given by the
caller (rows 7q̈ of Nori's inverse dynamics, moved into the right-hand side of (3a)), the external
wrench of a body without contact is zero (eqs. 7–8), a contact's wrench is ``f_i^x = Σ_c ⁱX*_F B_c
h_c`` with ``B_c`` the contact model (full wrench, point force, slippery: eq. 23), and the
unactuated floating base has ``f_0 = 0`` (its ``τ_0 = 0``) while its acceleration ``a_0`` is free.

Equations (rows) ``A d = r`` with ``r = -b``: *hard* rows are the Newton–Euler equations (3a), (3f),
(3τ); *soft* rows are the sensors (16), each divided by its standard deviation (whitened), so that
redundant sensors are combined by weighted least squares. With ``joint_acceleration_stddev > 0`` the
joint accelerations are unknowns ``q̈`` (the last columns) and the given ones a measurement of them
(Nori's rows 7q̈ made soft, BERDY's ``DOF_ACCELERATION_SENSOR``); then come the *prior* rows, a
zero-mean Gaussian prior on every contact component ``h_c`` (standard deviation
``contact_prior_stddev`` × the robot's weight): the soft rows are the negative log-posterior of a
maximum a posteriori estimate, which exists at every pose (docs/probabilistic_model.md).

Matrix entries are ``A[k] = Σ coef · src[idx]`` over a source vector whose only state-dependent
part is the 36 entries of every ``ⁱX_λ(i)`` (filled by :mod:`.kinematics`); ``src[0] = 1`` carries
the constants. The right-hand side is likewise a sparse map of ``rsrc`` (bias terms and
measurements). Both maps are fixed at plan time, so the tick only gathers and solves.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError, ModelError
from ..model.forward_kinematics import motion_axes
from ..model.robot_model import FIXED, FREE, RobotModel
from ..sensors.base import featherstone_to_boundary, slices
from .config import SensorConfig

#: the names of a wrench's components at the boundary, ``[fx, fy, fz, tx, ty, tz]``
BOUNDARY = ("fx", "fy", "fz", "tx", "ty", "tz")


def featherstone_names() -> tuple[str, ...]:
    """Boundary names of the Featherstone components ``[n; f]`` of a wrench."""
    return BOUNDARY[3:] + BOUNDARY[:3]


# Contact models B_c (columns in Featherstone order [n; f] of the contact frame) and the names of
# their unknown components at the boundary ([fx, fy, fz, tx, ty, tz]).
CONTACT_COMPONENTS = {
    "full_wrench": (0, 1, 2, 3, 4, 5),
    "point_force": (3, 4, 5),
    "slippery": (0, 1, 2, 5),          # eq. 23: fx = fy = 0; nx, ny, nz, fz free
}


@dataclass
class Column:
    """A group of unknowns: ``kind`` in a, f, tau, qdd, h; ``owner`` is a body or contact name."""
    kind: str
    owner: str
    start: int
    size: int


@dataclass
class SoftRow:
    """A whitened measurement row (sensor name, component label): a sensor's, a joint acceleration's
    (sensor ``joint_acceleration``) or the prior's (sensor ``prior``, after every measurement)."""
    sensor: str
    label: str


class SystemLayout:
    """Builds the sparse maps of Nori's system for one model and one sensor configuration; the
    :class:`~rbd_estimator.sensors.RowWriter` the sensors write their rows with.

    Attributes after construction: ``n`` (unknowns), ``m_hard``, ``m_soft`` (= ``m_sensor``
    measurement rows + ``m_prior`` prior rows; ``prior=False`` leaves the prior out, for the
    calibration's fit of offsets); ``A_map`` (m × n·|src|
    as COO triplets row, col, src index, coefficient), ``r_map`` (sparse m × |rsrc|), ``out_map``
    (sparse outputs × n), the offsets of every input in ``rsrc``, and labels for messages.
    """

    def __init__(self, model: RobotModel, config: SensorConfig, prior: bool = True):
        if model.floating_base != config.floating_base:
            raise ConfigError(f"parameter 'floating_base' is {config.floating_base} but the model was built "
                              f"with floating_base={model.floating_base}")
        self.model, self.config = model, config
        self.columns: list[Column] = []
        self._starts: list[int] = []                             # first unknown of every column group
        self.n = 0
        self._col = {}
        self._layout_unknowns()
        self.triplets: list[tuple[int, int, int, float]] = []   # (row, col, src, coef)
        self.rhs: list[tuple[int, int, float]] = []              # (row, rsrc, coef)
        self.row_labels: list[str] = []
        self.row_pivot: list[int] = []                           # natural unknown of each hard row (Nori (10)–(11))
        self.soft_rows: list[SoftRow] = []
        self._layout_sources()
        self._hard_rows()
        self.m_hard = len(self.row_labels)
        self._soft_rows()
        self._acceleration_rows()
        self.m_sensor = len(self.row_labels) - self.m_hard      # measurement rows: sensors, q̈
        if prior:
            self._prior_rows()
        self.m = len(self.row_labels)
        self.m_soft = self.m - self.m_hard
        self.m_prior = self.m_soft - self.m_sensor
        self._outputs()

    # ------------------------------------------------------------------ unknowns
    def _add_column(self, kind, owner, size):
        self.columns.append(Column(kind, owner, self.n, size))
        self._starts.append(self.n)
        self._col[(kind, owner)] = self.n
        self.n += size

    def col(self, kind: str, owner: str) -> int:
        return self._col[(kind, owner)]

    def _layout_unknowns(self):
        m = self.model
        for i, body in enumerate(m.body_names):
            self._add_column("a", body, 6)
            if m.joint_types[i] != FREE:
                self._add_column("f", body, 6)
            if m.joint_dofs[i] == 1:
                self._add_column("tau", m.body_joint_names[i], 1)
        self.contacts = []
        for c in self.config.contacts:
            frame = self._frame(c.frame, f"contact.{c.name}.frame")
            if frame.body < 0:
                raise ConfigError(f"parameter 'contact.{c.name}.frame': '{c.frame}' is attached to the fixed "
                                  f"base, where a contact wrench does no work; choose a link of the robot")
            comps = CONTACT_COMPONENTS[c.type]
            B = np.zeros((6, len(comps)))
            B[list(comps), range(len(comps))] = 1.0
            self.contacts.append((c, frame, B))
            self._add_column("h", c.name, len(comps))
        self.measured_acceleration = self.config.joint_acceleration_stddev > 0.0
        if self.measured_acceleration:
            for joint in m.joint_names:
                self._add_column("qdd", joint, 1)

    def _frame(self, name, parameter):
        try:
            return self.model.frame(name)
        except ModelError:
            raise ConfigError(f"parameter '{parameter}': '{name}' is not a link or frame of robot "
                              f"'{self.model.name}'{self.model.closest_frame(name)}") from None

    # ------------------------------------------------------------------ sources
    def _layout_sources(self):
        """``src``: [1, X_0 (36), X_1 (36), …]; ``rsrc``: [1, c (6NB), ν (6NB), X a_0 (6NB),
        ω_F × v_F (3), q̈ (nj), y], ``y`` the measurement vector: the slice of every sensor in
        configuration order (:attr:`y_offsets`)."""
        NB, nj = self.model.NB, self.model.n_joints
        self.n_src = 1 + 36 * NB
        o = 1
        self.r_c, o = o, o + 6 * NB
        self.r_nu, o = o, o + 6 * NB
        self.r_xa0, o = o, o + 6 * NB
        self.r_imu_wv, o = o, o + 3
        self.r_qdd, o = o, o + nj
        self.r_y = o
        self.y_offsets, self.y_labels = slices(self.config.sensors)
        self.n_y = len(self.y_labels)
        self.n_rsrc = o + self.n_y

    @staticmethod
    def x_src(body: int, a: int, b: int) -> int:
        """Index in ``src`` of entry (a, b) of ``X[body] = ⁱX_λ(i)``."""
        return 1 + 36 * body + 6 * a + b

    def _block(self, row0, col0, M, scale=1.0):
        """Constant block ``M`` at (row0, col0)."""
        a, b = np.nonzero(M)
        self.triplets.extend(zip((row0 + a).tolist(), (col0 + b).tolist(), [0] * len(a),
                                 (scale * M[a, b]).tolist()))

    def _transform_block(self, row0, col0, body, coef, transpose=False):
        """State-dependent block ``coef · X[body]`` (``coef · X[body]ᵀ``) at (row0, col0), read from ``src``."""
        a, b = np.divmod(np.arange(36), 6)
        src = self.x_src(body, b, a) if transpose else self.x_src(body, a, b)
        self.triplets.extend(zip((row0 + a).tolist(), (col0 + b).tolist(), src.tolist(), [coef] * 36))

    def _new_rows(self, labels, pivot: int = -1):
        """Append rows; ``pivot`` is the first column of the unknowns they naturally determine
        (the pairing of Nori's permutations (10)–(11)), or -1 for sensor rows."""
        r0 = len(self.row_labels)
        self.row_labels.extend(labels)
        self.row_pivot.extend([pivot + k if pivot >= 0 else -1 for k in range(len(labels))])
        return r0

    def newton_euler_row(self, body: int) -> int:
        """The first of the six rows of body ``body``'s Newton–Euler equation (3f) (its order: ``[n; f]``)."""
        return self._f_rows[body]

    # ------------------------------------------------------------------ hard rows: eqs. (3a), (3f), (3τ)
    def _hard_rows(self):
        m = self.model
        self._f_rows = {}                                        # body → first (3f) row
        self._joint_index = {name: k for k, name in enumerate(m.joint_names)}
        children = m.children
        eye = np.eye(6)
        S_all = motion_axes(m)
        for i, body in enumerate(m.body_names):
            p, S = m.parents[i], S_all[i]
            if m.joint_types[i] != FREE:                        # (3a_i): a_i - X_i a_λ = S_i q̈_i + c_i (+ X_i a_0)
                r0 = self._new_rows([f"(3a) acceleration of {body}"] * 6, self.col("a", body))
                self._block(r0, self.col("a", body), eye)
                if p >= 0:
                    self._transform_block(r0, self.col("a", m.body_names[p]), i, -1.0)
                k = self._joint_index.get(m.body_joint_names[i], -1)
                if k >= 0 and self.measured_acceleration:       # - S_i q̈_i with q̈_i unknown
                    self._block(r0, self.col("qdd", m.joint_names[k]), S[:, None], -1.0)
                for a in range(6):
                    self.rhs.append((r0 + a, self.r_c + 6 * i + a, 1.0))
                    if k >= 0 and S[a] != 0.0 and not self.measured_acceleration:   # (7q̈_i) substituted
                        self.rhs.append((r0 + a, self.r_qdd + k, float(S[a])))
                    if p < 0:
                        self.rhs.append((r0 + a, self.r_xa0 + 6 * i + a, 1.0))
            # (3f_i): I_i a_i - f_i - f_i^x + Σ_j X_jᵀ f_j = -ν_i   (f_0 = 0 for a floating base)
            r0 = self._new_rows([f"(3f) Newton-Euler equation of {body}"] * 6,
                                self.col("a" if m.joint_types[i] == FREE else "f", body))
            self._f_rows[i] = r0
            self._block(r0, self.col("a", body), m.inertias[i])
            if m.joint_types[i] != FREE:
                self._block(r0, self.col("f", body), -eye)
            for j in children[i]:                                # ⁱX*_j = (ʲX_i)ᵀ
                self._transform_block(r0, self.col("f", m.body_names[j]), j, 1.0, transpose=True)
            for c, frame, B in self.contacts:
                if frame.body == i:                              # f_i^x = ⁱX*_F B_c h_c
                    self._block(r0, self.col("h", c.name), -(frame.X.T @ B))
            for a in range(6):
                self.rhs.append((r0 + a, self.r_nu + 6 * i + a, -1.0))
            if m.joint_dofs[i] == 1:                             # (3τ_i): S_iᵀ f_i - τ_i = 0
                r0 = self._new_rows([f"(3τ) torque of {m.body_joint_names[i]}"],
                                    self.col("tau", m.body_joint_names[i]))
                self._block(r0, self.col("f", body), S[None, :])
                self._block(r0, self.col("tau", m.body_joint_names[i]), -np.ones((1, 1)))

    # ------------------------------------------------------------------ soft rows: sensors, eq. (16)
    def _soft_rows(self):
        for sensor in self.config.sensors:
            self._writing = sensor
            sensor.rows(self)
        self._writing = None

    def _acceleration_rows(self):
        """``q̈_j / σ_a = q̈ᵐ_j / σ_a``: the given joint accelerations as a measurement (σ_a the
        ``joint_acceleration_stddev``), when they are unknowns."""
        if not self.measured_acceleration:
            return
        w = 1.0 / self.config.joint_acceleration_stddev
        for k, joint in enumerate(self.model.joint_names):
            self.soft_rows.append(SoftRow("joint_acceleration", joint))
            r = self._new_rows([f"joint acceleration: {joint}"])
            self.triplets.append((r, self.col("qdd", joint), 0, w))
            self.rhs.append((r, self.r_qdd + k, w))

    @property
    def prior_stddev(self) -> float:
        """The prior's standard deviation of a contact force (N) and torque (N·m): ``contact_prior_stddev``
        times the robot's weight (at least 1 N)."""
        m = self.model
        weight = float(sum(I[5, 5] for I in m.inertias)) * float(np.linalg.norm(m.gravity))
        return self.config.contact_prior_stddev * max(weight, 1.0)

    @property
    def residual_dof(self) -> int:
        """Degrees of freedom of the whitened measurement residual: Newton–Euler and measurement rows
        minus unknowns (the prior's rows left out); 0 when the measurements are not redundant."""
        return max(0, self.m_hard + self.m_sensor - self.n)

    def _prior_rows(self):
        """``h_c,k / σ_k = 0``: the zero-mean prior on every contact component, ``σ_k`` the
        ``contact_prior_stddev`` times the robot's weight (N) for a force, times the weight and
        1 m (N·m) for a torque."""
        sigma = self.prior_stddev
        names = featherstone_names()
        for c, _, B in self.contacts:
            col = self.col("h", c.name)
            for b, comp in enumerate(CONTACT_COMPONENTS[c.type]):
                self.soft_rows.append(SoftRow("prior", f"{c.name} {names[comp]}"))
                r = self._new_rows([f"prior: {c.name} {names[comp]}"])
                self.triplets.append((r, col + b, 0, 1.0 / sigma))

    # ------------------------------------------------------------------ the RowWriter of the sensors
    def frame(self, name, parameter):
        """The model frame ``name``; :class:`ConfigError` naming ``parameter`` if unknown."""
        return self._frame(name, parameter)

    def contact(self, name, parameter):
        """``(ContactConfig, Frame, B_c)`` of a configured contact."""
        for entry in self.contacts:
            if entry[0].name == name:
                return entry
        raise ConfigError(f"parameter '{parameter}': '{name}' is not a configured contact "
                          f"(contacts: {[c.name for c, _, _ in self.contacts]})")

    def soft(self, sensor, labels) -> int:
        """Append whitened sensor rows labelled ``labels``; returns the first."""
        self.soft_rows.extend(SoftRow(sensor, lab) for lab in labels)
        return self._new_rows([f"{sensor}: {lab}" for lab in labels])

    def block(self, row0, col0, M, scale=1.0):
        self._block(row0, col0, M, scale)

    def measured(self, row: int, entry: int, coef: float) -> None:
        """Right-hand side ``coef · y[k]``, ``k`` entry ``entry`` of the writing sensor's slice."""
        self.rhs.append((row, self.r_y + self.y_offsets[self._writing.name] + entry, float(coef)))

    def bias(self, row: int, source: str, entry: int, coef: float) -> None:
        """Right-hand side ``coef · b[entry]`` of a state-dependent term the kinematics computes:
        ``'imu_wv'``, the IMU origin's ``ω_F × v_F`` (3, IMU axes)."""
        if source != "imu_wv":
            raise ValueError(f"unknown bias term {source!r}")
        self.rhs.append((row, self.r_imu_wv + entry, float(coef)))

    @property
    def acceleration_stddev(self) -> float:
        """σ_a of the given joint accelerations (``joint_acceleration_stddev``; 0: exact inputs)."""
        return self.config.joint_acceleration_stddev

    def known_wrench(self, frame, entry: int) -> None:
        """A known external wrench ``[fx..tz]`` in ``frame`` at entries ``entry…entry+5`` of the
        writing sensor's slice: ``f_i^x = ⁱX*_F w`` on the right-hand side of (3f) (eqs. 7–8)."""
        if frame.body < 0:
            raise ConfigError(f"sensor '{self._writing.name}': frame '{frame.name}' is attached to the fixed base")
        r0 = self._f_rows[frame.body]
        M = frame.X.T[:, featherstone_to_boundary()]      # boundary [f; n] → Featherstone, then to body i
        y0 = self.r_y + self.y_offsets[self._writing.name] + entry
        for a in range(6):
            for b in range(6):
                if M[a, b]:
                    self.rhs.append((r0 + a, y0 + b, float(M[a, b])))

    # ------------------------------------------------------------------ outputs
    def _outputs(self):
        """out = O d: τ (joint order), contact wrenches [fx..tz] (contact frame), joint wrenches
        [fx..tz] at every kept fixed joint (parent → child, child frame, torque about the joint)."""
        m = self.model
        rows, cols, vals = [], [], []
        nj = m.n_joints
        for k, joint in enumerate(m.joint_names):
            rows.append(k), cols.append(self.col("tau", joint)), vals.append(1.0)
        P = featherstone_to_boundary()
        o = nj
        for c, frame, B in self.contacts:         # Featherstone wrench B h, reordered to [f; n]
            for a in range(6):
                for b in range(B.shape[1]):
                    if B[P[a], b]:
                        rows.append(o + a), cols.append(self.col("h", c.name) + b), vals.append(B[P[a], b])
            o += 6
        self.kept_joints = [m.body_joint_names[i] for i in range(m.NB) if m.joint_types[i] == FIXED]
        for joint in self.kept_joints:
            cf = self.col("f", m.body_names[m.body_joint_names.index(joint)])
            for a in range(6):
                rows.append(o + a), cols.append(cf + P[a]), vals.append(1.0)
            o += 6
        self.n_out = o
        self.out_map = sp.csr_matrix((vals, (rows, cols)), shape=(o, self.n))

    # ------------------------------------------------------------------ assembled maps
    def rhs_map(self) -> sp.csr_matrix:
        r, c, v = zip(*self.rhs) if self.rhs else ((), (), ())
        return sp.csr_matrix((v, (r, c)), shape=(self.m, self.n_rsrc))

    def describe_column(self, j: int) -> tuple[str, str, int]:
        """(kind, owner, component) of unknown ``j``."""
        if not 0 <= j < self.n:
            raise IndexError(j)
        col = self.columns[bisect.bisect_right(self._starts, j) - 1]
        return col.kind, col.owner, j - col.start
