"""Sensors in the feet that measure a contact's wrench directly (Nori §VI): a group of single-axis
load cells (eq. 18), a single normal-force sensor, and a 3-axis force sensor. Each names the
contact it sits under; its rows are on that contact's free components ``h_c`` (contact frame,
z the normal)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ConfigError
from ..schema import parameter
from .base import ARRAY_MESSAGE, Sensor, drift_parameter, register, timeout_parameter

_FZ, _NX, _NY = 5, 0, 1           # Featherstone indices of fz, nx, ny in [n; f]


class _ContactSensor(Sensor):
    """A sensor under the contact ``contact`` (fields of every subclass: ``contact``, ``stddev``,
    ``offset_drift``)."""

    def drift_rates(self) -> np.ndarray:
        return np.full(self.size, self.offset_drift)

    def entry_stddevs(self) -> np.ndarray:
        return np.full(self.size, self.stddev)

    def on_contact(self, w) -> tuple:
        """``(ContactConfig, column of h_c, B_c)`` of the sensor's contact."""
        c, _frame, B = w.contact(self.contact, f"{self.prefix}contact")
        return c, w.col("h", c.name), B

    def free(self, c, M, what: str) -> None:
        """:class:`ConfigError` when the contact model leaves the measured components ``M h_c`` no
        free direction each (a slippery contact has no tangential force)."""
        if np.linalg.matrix_rank(M) < M.shape[0]:
            raise ConfigError(f"parameter '{self.prefix}contact': contact '{c.name}' of type {c.type} has no free "
                              f"{what} for sensor '{self.name}' to measure")


@dataclass(frozen=True)
class _ForceComponents(_ContactSensor):
    """A sensor of some components of its contact's force, each with standard deviation
    ``stddev`` (N): ``COMPONENTS`` (Featherstone indices in ``[n; f]``) named ``AXES``; a
    ``std_msgs/Float64MultiArray`` with one element per component."""
    contact: str = parameter("the contact whose force it measures (a name in `contacts`)", "", required=True)
    topic: str = parameter("input topic of the node (std_msgs/Float64MultiArray, one element per measured "
                           "component); empty: `<group>/<name>`, relative to the node's namespace", "")
    stddev: float = parameter("standard deviation of each measured component (N)", 2.0, gt=0.0)
    offset_drift: float = drift_parameter("N")
    timeout: float = timeout_parameter()

    COMPONENTS: ClassVar[tuple] = ()
    AXES: ClassVar[tuple] = ()

    @property
    def size(self) -> int:
        return len(self.COMPONENTS)

    def labels(self) -> tuple[str, ...]:
        return tuple(f"{self.name} {a}" for a in self.AXES)

    def rows(self, w) -> None:
        """``y = P (B_c h_c)`` (the selected components of the contact wrench), whitened by ``σ``."""
        c, col, B = self.on_contact(w)
        M = B[list(self.COMPONENTS), :]
        self.free(c, M, ", ".join(self.AXES))
        r0 = w.soft(self.name, list(self.AXES))
        w.block(r0, col, M, 1.0 / self.stddev)
        for a in range(self.size):
            w.measured(r0 + a, a, 1.0 / self.stddev)

    def contact_normal_force(self, contact: str):
        return np.array([float(k == _FZ) for k in self.COMPONENTS]) if contact == self.contact else None


@register
@dataclass(frozen=True)
class LoadCells(_ContactSensor):
    """N single-axis load cells under a contact frame, measuring force along the frame's z axis at
    ``positions_x``/``positions_y`` (m, in the contact frame): they give ``fz, tx, ty`` (Nori eq. 18).
    Slice: the N cell forces (N), ``std_msgs/Float64MultiArray``."""
    contact: str = parameter("the contact they measure (a name in `contacts`)", "", required=True)
    positions_x: tuple = parameter("cell x positions in the contact frame (m); at least three cells, not collinear",
                                   (), required=True)
    positions_y: tuple = parameter("cell y positions in the contact frame (m), as many as `positions_x`", (),
                                   required=True)
    topic: str = parameter("input topic of the node (std_msgs/Float64MultiArray, one force per cell in "
                           "`positions_x` order); empty: `load_cells/<name>`, relative to the node's namespace", "")
    stddev: float = parameter("standard deviation of each cell's force (N)", 1.0, gt=0.0)
    offset_drift: float = drift_parameter("N")
    timeout: float = timeout_parameter()

    LIST: ClassVar[str] = "load_cells"
    LIST_DESCRIPTION: ClassVar[str] = "groups of single-axis load cells under a contact"
    GROUP: ClassVar[str] = "load_cell"
    KEYWORD: ClassVar[str] = "load_cells"
    DECODER: ClassVar[str] = ARRAY_MESSAGE

    @property
    def positions(self) -> np.ndarray:
        """``(N, 2)`` cell positions (m, contact frame)."""
        return np.column_stack([self.positions_x, self.positions_y]).astype(float).reshape(-1, 2)

    def check(self) -> None:
        if len(self.positions_x) != len(self.positions_y):
            raise ConfigError(f"parameters 'load_cell.{self.name}.positions_x' and '.positions_y' must be two lists "
                              f"of the same, non-zero length (metres, in the contact frame)")
        super().check()

    @property
    def size(self) -> int:
        return len(self.positions_x)

    def labels(self) -> tuple[str, ...]:
        return tuple(f"{self.name} cell {k}" for k in range(self.size))

    def rows(self, w) -> None:
        """Eq. (18): the cells give ``[fz, tx, ty] = C y`` of their contact's wrench, whitened by the
        covariance ``σ² C Cᵀ`` of the combination."""
        x, y = np.asarray(self.positions_x, float), np.asarray(self.positions_y, float)
        C = np.vstack([np.ones_like(x), y, -x])
        G = C @ C.T
        if np.linalg.matrix_rank(G) < 3:
            raise ConfigError(f"parameter 'load_cell.{self.name}.positions_x/_y': at least three non-collinear "
                              f"cells are needed to measure fz, tx and ty (one sensor of the whole normal force "
                              f"is a 'foot_force_sensors' entry)")
        Linv = np.linalg.inv(np.linalg.cholesky(G) * self.stddev)
        c, col, B = self.on_contact(w)
        M = B[[_FZ, _NX, _NY], :]
        self.free(c, M, "fz, tx, ty")
        r0 = w.soft(self.name, ["fz", "tx", "ty"])
        w.block(r0, col, Linv @ M)
        W = Linv @ C
        for a in range(3):
            for j in range(len(x)):
                w.measured(r0 + a, j, float(W[a, j]))

    def write(self, value, out: np.ndarray) -> None:
        from .base import vector
        out[:] = vector(value, self.size, f"load_cells['{self.name}']")

    def contact_normal_force(self, contact: str):
        return np.ones(self.size) if contact == self.contact else None


@register
@dataclass(frozen=True)
class FootForce(_ForceComponents):
    """One sensor of a contact's whole normal force ``fz`` (N, along the contact frame's z, positive
    when the ground pushes): a Unitree foot sensor, or the logged normal force of a foot's
    force-torque sensor compensated for the foot below it. Slice: ``[fz]``,
    ``std_msgs/Float64MultiArray`` with one element."""
    LIST: ClassVar[str] = "foot_force_sensors"
    LIST_DESCRIPTION: ClassVar[str] = ("sensors of a contact's whole normal force `fz` (a Unitree foot sensor, or the "
                                       "logged `fz` of a foot's force-torque sensor compensated for the foot)")
    GROUP: ClassVar[str] = "foot_force"
    KEYWORD: ClassVar[str] = "foot_forces"
    COMPONENTS: ClassVar[tuple] = (_FZ,)
    AXES: ClassVar[tuple] = ("fz",)


@register
@dataclass(frozen=True)
class ContactForce(_ForceComponents):
    """A 3-axis force sensor at a contact (a quadruped's or a humanoid's foot): the contact force
    ``[fx, fy, fz]`` (N) in the contact frame. Slice: ``[fx, fy, fz]``,
    ``std_msgs/Float64MultiArray`` with three elements. The contact must have free tangential
    forces (``full_wrench`` or ``point_force``)."""
    LIST: ClassVar[str] = "contact_force_sensors"
    LIST_DESCRIPTION: ClassVar[str] = "3-axis force sensors at a `full_wrench` or `point_force` contact (`fx, fy, fz`)"
    GROUP: ClassVar[str] = "contact_force"
    KEYWORD: ClassVar[str] = "contact_forces"
    COMPONENTS: ClassVar[tuple] = (3, 4, 5)
    AXES: ClassVar[tuple] = ("fx", "fy", "fz")
