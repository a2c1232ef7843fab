"""Sensors in the feet that measure a contact's wrench directly (Nori §VI): a group of single-axis
load cells (eq. 18), a single normal-force sensor, and a 3-axis force sensor. Each names the
contact it sits under; its rows are on that contact's free components ``h_c`` (contact frame,
z the normal)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import ConfigError
from .base import ARRAY_MESSAGE, Sensor, register

_FZ, _NX, _NY = 5, 0, 1           # Featherstone indices of fz, nx, ny in [n; f]


class _ContactSensor(Sensor):
    """A sensor under the contact ``contact`` (a field of every subclass)."""

    def on_contact(self, w) -> tuple:
        """``(column of h_c, B_c)`` of the sensor's contact."""
        c, _frame, B = w.contact(self.contact, f"{self.prefix}contact")
        return w.col("h", c.name), B

    def measured_components(self, w, comps, labels, stddev, what):
        """Rows ``y = (P B_c h_c) / σ`` for the Featherstone components ``comps`` of the contact wrench."""
        col, B = self.on_contact(w)
        M = B[list(comps), :]
        if np.linalg.matrix_rank(M) < len(comps):
            c = w.contact(self.contact, f"{self.prefix}contact")[0]
            raise ConfigError(f"parameter '{self.prefix}contact': contact '{c.name}' of type {c.type} has no free "
                              f"{what} for sensor '{self.name}' to measure")
        r0 = w.soft(self.name, labels)
        w.block(r0, col, M, 1.0 / stddev)
        for a in range(len(comps)):
            w.measured(r0 + a, a, 1.0 / stddev)


@register
@dataclass(frozen=True)
class LoadCells(_ContactSensor):
    """N single-axis load cells under a contact frame, measuring force along the frame's z axis at
    ``positions_x``/``positions_y`` (m, in the contact frame): they give ``fz, tx, ty`` (Nori eq. 18).
    Slice: the N cell forces (N), ``std_msgs/Float64MultiArray``."""
    contact: str = ""
    positions_x: tuple = ()
    positions_y: tuple = ()
    topic: str = ""
    stddev: float = 1.0
    timeout: float = 0.05

    LIST: ClassVar[str] = "load_cells"
    GROUP: ClassVar[str] = "load_cell"
    KEYWORD: ClassVar[str] = "load_cells"
    DECODER: ClassVar[str] = ARRAY_MESSAGE

    @property
    def positions(self) -> np.ndarray:
        """``(N, 2)`` cell positions (m, contact frame)."""
        return np.column_stack([self.positions_x, self.positions_y]).astype(float).reshape(-1, 2)

    def check(self) -> None:
        if not self.contact:
            raise ConfigError(f"parameter 'load_cell.{self.name}.contact' is required (the contact the cells are under)")
        if not self.positions_x or len(self.positions_x) != len(self.positions_y):
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
        col, B = self.on_contact(w)
        M = B[[_FZ, _NX, _NY], :]
        if np.linalg.matrix_rank(M) < 3:
            c = w.contact(self.contact, f"{self.prefix}contact")[0]
            raise ConfigError(f"load cells '{self.name}': contact '{c.name}' of type {c.type} has no free fz, tx, ty "
                              f"for the cells to measure")
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
class FootForce(_ContactSensor):
    """One sensor of a contact's whole normal force ``fz`` (N, along the contact frame's z, positive
    when the ground pushes): a Unitree foot sensor, or the logged normal force of a foot's
    force-torque sensor compensated for the foot below it. Slice: ``[fz]``,
    ``std_msgs/Float64MultiArray`` with one element."""
    contact: str = ""
    topic: str = ""
    stddev: float = 2.0
    timeout: float = 0.05

    LIST: ClassVar[str] = "foot_force_sensors"
    GROUP: ClassVar[str] = "foot_force"
    KEYWORD: ClassVar[str] = "foot_forces"

    def check(self) -> None:
        if not self.contact:
            raise ConfigError(f"parameter 'foot_force.{self.name}.contact' is required (the contact it measures)")
        super().check()

    @property
    def size(self) -> int:
        return 1

    def labels(self) -> tuple[str, ...]:
        return (f"{self.name} fz",)

    def rows(self, w) -> None:
        """``y = fz = e_zᵀ (B_c h_c)_f``, whitened by ``σ``."""
        self.measured_components(w, (_FZ,), ["fz"], self.stddev, "normal force")

    def contact_normal_force(self, contact: str):
        return np.ones(1) if contact == self.contact else None


@register
@dataclass(frozen=True)
class ContactForce(_ContactSensor):
    """A 3-axis force sensor at a contact (a quadruped's or a humanoid's foot): the contact force
    ``[fx, fy, fz]`` (N) in the contact frame. Slice: ``[fx, fy, fz]``,
    ``std_msgs/Float64MultiArray`` with three elements. The contact must have free tangential
    forces (``full_wrench`` or ``point_force``)."""
    contact: str = ""
    topic: str = ""
    stddev: float = 2.0
    timeout: float = 0.05

    LIST: ClassVar[str] = "contact_force_sensors"
    GROUP: ClassVar[str] = "contact_force"
    KEYWORD: ClassVar[str] = "contact_forces"

    def check(self) -> None:
        if not self.contact:
            raise ConfigError(f"parameter 'contact_force.{self.name}.contact' is required (the contact it measures)")
        super().check()

    @property
    def size(self) -> int:
        return 3

    def labels(self) -> tuple[str, ...]:
        return tuple(f"{self.name} {a}" for a in ("fx", "fy", "fz"))

    def rows(self, w) -> None:
        """``y = (B_c h_c)_f`` (the force part of the contact wrench), whitened by ``σ``."""
        self.measured_components(w, (3, 4, 5), ["fx", "fy", "fz"], self.stddev, "fx, fy, fz")

    def contact_normal_force(self, contact: str):
        return np.array([0.0, 0.0, 1.0]) if contact == self.contact else None
