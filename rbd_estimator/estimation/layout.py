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
redundant sensors are combined by weighted least squares.

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
from .config import SensorConfig

# Contact models B_c (columns in Featherstone order [n; f] of the contact frame) and the names of
# their unknown components at the boundary ([fx, fy, fz, tx, ty, tz]).
CONTACT_COMPONENTS = {
    "full_wrench": (0, 1, 2, 3, 4, 5),
    "point_force": (3, 4, 5),
    "slippery": (0, 1, 2, 5),          # eq. 23: fx = fy = 0; nx, ny, nz, fz free
}
_AXIS = ("tx", "ty", "tz", "fx", "fy", "fz")   # Featherstone index → boundary name


def featherstone_to_boundary() -> np.ndarray:
    """Permutation P with ``wrench = P f`` for ``f = [n; f]`` and wrench ``[f; n]``."""
    return np.array([3, 4, 5, 0, 1, 2])


@dataclass
class Column:
    """A group of unknowns: ``kind`` in a, f, tau, qdd, h; ``owner`` is a body or contact name."""
    kind: str
    owner: str
    start: int
    size: int


@dataclass
class SoftRow:
    """A whitened measurement row: sensor name, component label."""
    sensor: str
    label: str


class SystemLayout:
    """Builds the sparse maps of Nori's system for one model and one sensor configuration.

    Attributes after construction: ``n`` (unknowns), ``m_hard``, ``m_soft``; ``A_map`` (m × n·|src|
    as COO triplets row, col, src index, coefficient), ``r_map`` (sparse m × |rsrc|), ``out_map``
    (sparse outputs × n), the offsets of every input in ``rsrc``, and labels for messages.
    """

    def __init__(self, model: RobotModel, config: SensorConfig):
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
        self.m = len(self.row_labels)
        self.m_soft = self.m - self.m_hard
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

    def _frame(self, name, parameter):
        try:
            return self.model.frame(name)
        except ModelError:
            raise ConfigError(f"parameter '{parameter}': '{name}' is not a link or frame of robot "
                              f"'{self.model.name}'") from None

    # ------------------------------------------------------------------ sources
    def _layout_sources(self):
        """``src``: [1, X_0 (36), X_1 (36), …]; ``rsrc``: [1, c (6NB), ν (6NB), X a_0 (6NB),
        ω_F × v_F (3), q̈ (nj), IMU acc (3), IMU ang. acc (3), FT (6 per sensor), cells, τ sensors]."""
        NB, nj = self.model.NB, self.model.n_joints
        self.n_src = 1 + 36 * NB
        o = 1
        self.r_c, o = o, o + 6 * NB
        self.r_nu, o = o, o + 6 * NB
        self.r_xa0, o = o, o + 6 * NB
        self.r_imu_wv, o = o, o + 3
        self.r_qdd, o = o, o + nj
        self.r_imu_acc, o = o, o + 3
        self.r_imu_alpha, o = o, o + 3
        self.r_ft, o = o, o + 6 * len(self.config.ft_sensors)
        self.r_cells = o
        self.cell_offsets = []
        for lc in self.config.load_cells:
            self.cell_offsets.append(o)
            o += len(lc.positions)
        self.r_tau, o = o, o + len(self.config.joint_torque_sensors)
        self.r_ext, o = o, o + 6 * len(self.config.external_wrenches)
        self.n_rsrc = o

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

    # ------------------------------------------------------------------ hard rows: eqs. (3a), (3f), (3τ)
    def _hard_rows(self):
        m = self.model
        self.external_frames = [self._frame(w.frame, f"external_wrench.{w.name}.frame")
                                for w in self.config.external_wrenches]
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
                for a in range(6):
                    self.rhs.append((r0 + a, self.r_c + 6 * i + a, 1.0))
                    if k >= 0 and S[a] != 0.0:                   # (7q̈_i) substituted
                        self.rhs.append((r0 + a, self.r_qdd + k, float(S[a])))
                    if p < 0:
                        self.rhs.append((r0 + a, self.r_xa0 + 6 * i + a, 1.0))
            # (3f_i): I_i a_i - f_i - f_i^x + Σ_j X_jᵀ f_j = -ν_i   (f_0 = 0 for a floating base)
            r0 = self._new_rows([f"(3f) Newton-Euler equation of {body}"] * 6,
                                self.col("a" if m.joint_types[i] == FREE else "f", body))
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
            for k, frame in enumerate(self.external_frames):    # known f_i^x = ⁱX*_F w (eqs. 7–8)
                if frame.body == i:
                    M = frame.X.T[:, featherstone_to_boundary()]  # boundary [f; n] → Featherstone, then to body i
                    for a in range(6):
                        for b in range(6):
                            if M[a, b]:
                                self.rhs.append((r0 + a, self.r_ext + 6 * k + b, float(M[a, b])))
            if m.joint_dofs[i] == 1:                             # (3τ_i): S_iᵀ f_i - τ_i = 0
                r0 = self._new_rows([f"(3τ) torque of {m.body_joint_names[i]}"],
                                    self.col("tau", m.body_joint_names[i]))
                self._block(r0, self.col("f", body), S[None, :])
                self._block(r0, self.col("tau", m.body_joint_names[i]), -np.ones((1, 1)))

    # ------------------------------------------------------------------ soft rows: sensors, eq. (16)
    def _soft(self, sensor, labels):
        self.soft_rows.extend(SoftRow(sensor, lab) for lab in labels)
        return self._new_rows([f"{sensor}: {lab}" for lab in labels])

    def _soft_rows(self):
        cfg, m = self.config, self.model
        if cfg.imu is not None:
            self._imu_rows(cfg.imu)
        for k, ft in enumerate(cfg.ft_sensors):
            self._ft_rows(k, ft)
        for k, lc in enumerate(cfg.load_cells):
            self._load_cell_rows(k, lc)
        for k, joint in enumerate(cfg.joint_torque_sensors):     # τ_i = y
            if joint not in m.joint_names:
                raise ConfigError(f"parameter 'joint_torque_sensors': '{joint}' is not an actuated joint of "
                                  f"robot '{m.name}'")
            r0 = self._soft(f"joint torque {joint}", ["τ"])
            self._block(r0, self.col("tau", joint), np.ones((1, 1)), 1.0 / cfg.joint_torque_stddev)
            self.rhs.append((r0, self.r_tau + k, 1.0 / cfg.joint_torque_stddev))

    def _imu_rows(self, imu):
        """Proper acceleration at the IMU origin, in IMU axes: ``[0 1] ᶠX_b a_b + ω_F × v_F = y``
        (a_b includes -a_g, so gravity needs no orientation); optionally ``[1 0] ᶠX_b a_b = ω̇``."""
        frame = self._frame(imu.frame, "imu.frame")
        if frame.body < 0:
            raise ConfigError(f"parameter 'imu.frame': '{imu.frame}' is attached to the fixed base")
        self.imu_frame = frame
        ca = self.col("a", self.model.body_names[frame.body])
        X = frame.X
        s = imu.linear_acceleration_stddev
        r0 = self._soft("imu", ["linear acceleration x", "linear acceleration y", "linear acceleration z"])
        self._block(r0, ca, X[3:, :], 1.0 / s)
        for a in range(3):
            self.rhs.append((r0 + a, self.r_imu_acc + a, 1.0 / s))
            self.rhs.append((r0 + a, self.r_imu_wv + a, -1.0 / s))
        if imu.use_angular_acceleration:
            s = imu.angular_acceleration_stddev
            r0 = self._soft("imu", ["angular acceleration x", "angular acceleration y", "angular acceleration z"])
            self._block(r0, ca, X[:3, :], 1.0 / s)
            for a in range(3):
                self.rhs.append((r0 + a, self.r_imu_alpha + a, 1.0 / s))

    def ft_sensor(self, ft):
        """The model's :class:`FTSensor` for a configured one: from the URDF, or declared on a kept
        fixed joint with ``ft.<name>.joint``."""
        try:
            if ft.joint:
                return self.model.kept_joint_sensor(ft.name, ft.joint, ft.frame or "child",
                                                    ft.measure_direction or "child_to_parent")
            return self.model.ft_sensor(ft.name)
        except ModelError as exc:
            hint = "" if ft.joint else "; declare it with ft.<name>.joint on a fixed joint"
            raise ConfigError(f"parameter 'ft_sensors': '{ft.name}': {exc}{hint}") from None

    def ft_rotation(self, ft, sensor) -> tuple[np.ndarray, float]:
        """(R, sign): the wrench is measured as ``sign · blockdiag(R, R) f_k`` in Featherstone order,
        ``R`` rotating child-link coordinates into the measurement axes (SDF ``frame``)."""
        m = self.model
        frame = ft.frame or sensor.frame
        direction = ft.measure_direction or sensor.measure_direction
        k = sensor.body
        if frame == "child":
            R = np.eye(3)
        elif frame == "parent":
            R = m.frame(sensor.parent_link).E @ m.E_tree[k].T
        else:
            R = sensor.E_sensor
        return R, (-1.0 if direction == "child_to_parent" else 1.0)

    def _ft_rows(self, k, ft):
        sensor = self.ft_sensor(ft)
        R, sign = self.ft_rotation(ft, sensor)
        Rb = np.zeros((6, 6))
        Rb[:3, :3] = R
        Rb[3:, 3:] = R
        w = np.array([1 / ft.torque_stddev] * 3 + [1 / ft.force_stddev] * 3)
        r0 = self._soft(ft.name, [f"{_AXIS[a]}" for a in range(6)])
        cf = self.col("f", self.model.body_names[sensor.body])
        self._block(r0, cf, (sign * w[:, None]) * Rb)
        P = featherstone_to_boundary()
        for a in range(6):                       # y is [fx..tz]; row a is Featherstone component a
            self.rhs.append((r0 + a, self.r_ft + 6 * k + int(np.where(P == a)[0][0]), w[a]))

    def _load_cell_rows(self, k, lc):
        """Eq. (18): the cells give ``[fz, tx, ty] = C y`` of their contact's wrench, whitened by
        the covariance ``σ² C Cᵀ`` of the combination."""
        c, frame, B = next(x for x in self.contacts if x[0].name == lc.contact)
        x, y = lc.positions[:, 0], lc.positions[:, 1]
        C = np.vstack([np.ones_like(x), y, -x])
        G = C @ C.T
        if np.linalg.matrix_rank(G) < 3:
            raise ConfigError(f"parameter 'load_cell.{lc.name}.positions_x/_y': at least three non-collinear "
                              f"cells are needed to measure fz, tx and ty")
        L = np.linalg.cholesky(G) * lc.stddev
        Linv = np.linalg.inv(L)
        P3 = np.zeros((3, 6))
        P3[0, 5] = P3[1, 0] = P3[2, 1] = 1.0          # fz, nx, ny of [n; f]
        M = P3 @ B
        if np.linalg.matrix_rank(M) < 3:
            raise ConfigError(f"load cells '{lc.name}': contact '{c.name}' of type {c.type} has no free fz, tx, ty "
                              f"for the cells to measure")
        r0 = self._soft(lc.name, ["fz", "tx", "ty"])
        self._block(r0, self.col("h", c.name), Linv @ M)
        W = Linv @ C
        for a in range(3):
            for j in range(len(x)):
                self.rhs.append((r0 + a, self.cell_offsets[k] + j, float(W[a, j])))

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
