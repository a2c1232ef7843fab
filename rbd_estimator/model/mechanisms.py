"""The loop declarations of :mod:`rbd_estimator.model.loops`, one class per mechanism: extra
bodies (rotors, couplers) and the loops that constrain spanning-tree joints (Chignoli et al.
§II-C, Fig. 9b): :class:`LinkAndRotor`, :class:`BeltTransmission`, :class:`LinearTransmission`,
:class:`FourBar`, :class:`ExplicitLoop`. Each checks its own numbers when built and raises
:class:`~rbd_estimator.errors.ModelError` naming the loop or the body.

The meaning of each type and the parameter schema that declares them are in
:mod:`rbd_estimator.model.loops` (which re-exports every name here); this module imports nothing
else from the model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import ModelError

__all__ = ["ExtraBody", "LinkAndRotor", "BeltTransmission", "LinearTransmission", "FourBar", "ExplicitLoop", "Loop",
           "vector", "inertia_matrix"]


# ---------------------------------------------------------------------------- declarations
@dataclass(frozen=True, eq=False)
class ExtraBody:
    """A rigid body the URDF does not describe (a rotor, a coupler), attached by a revolute joint.

    The joint and the body are both called ``name``. ``xyz``/``rpy`` place the joint frame in the
    ``parent`` link frame (URDF ``<origin>`` convention); ``axis`` is the revolute axis in the body
    frame; ``com`` (m) and ``inertia`` (3 × 3, kg·m², about the centre of mass, body axes) describe
    the body, with ``mass`` in kg.
    """
    name: str
    parent: str
    axis: np.ndarray
    mass: float = 0.0
    xyz: np.ndarray = field(default_factory=lambda: np.zeros(3))
    rpy: np.ndarray = field(default_factory=lambda: np.zeros(3))
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))

    def __post_init__(self):
        what = f"extra body '{self.name}'"
        for attr, n in (("axis", 3), ("xyz", 3), ("rpy", 3), ("com", 3)):
            object.__setattr__(self, attr, vector(getattr(self, attr), n, f"{what}: '{attr}'"))
        object.__setattr__(self, "inertia", inertia_matrix(self.inertia, what))
        if np.linalg.norm(self.axis) < 1e-9:
            raise ModelError(f"{what}: 'axis' must be a non-zero vector")
        object.__setattr__(self, "axis", self.axis / np.linalg.norm(self.axis))
        if not (isinstance(self.mass, (int, float)) and math.isfinite(self.mass) and self.mass >= 0.0):
            raise ModelError(f"{what}: 'mass' must be a finite number >= 0 kg, got {self.mass!r}")
        ev = np.linalg.eigvalsh(self.inertia)
        tol = max(1e-9 * float(np.max(np.abs(ev))), 1e-15)
        if ev[0] < -tol or ev[0] + ev[1] < ev[2] - tol:
            raise ModelError(f"{what}: inertia with principal moments {ev.tolist()} kg·m² is not that of a "
                             f"rigid body (positive semi-definite, I1 + I2 >= I3)")
        if self.mass == 0.0 and ev[2] <= 0.0:
            raise ModelError(f"{what}: no mass and no inertia: the body would have no dynamics")


class _Loop:
    """Common interface: ``name``, ``kind``, ``joints`` (every spanning-tree joint the loop
    constrains), ``independent`` (a subset: the loop's independent coordinates, §III-A) and
    ``dependent`` (the others, in ``joints`` order)."""
    name: str
    kind: str = ""

    @property
    def dependent(self) -> tuple[str, ...]:
        return tuple(j for j in self.joints if j not in self.independent)

    def describe(self) -> str:
        return f"{self.kind} loop '{self.name}'"


@dataclass(frozen=True)
class LinkAndRotor(_Loop):
    """A rotor geared to a link: ``q_rotor = gear_ratio · q_joint`` (Fig. 9b, "Link and Rotor")."""
    name: str
    joint: str
    rotor: str
    gear_ratio: float
    kind = "link_and_rotor"

    def __post_init__(self):
        _nonzero_ratio(self.gear_ratio, self.name, "gear_ratio")
        if self.joint == self.rotor:
            raise ModelError(f"loop '{self.name}': 'joint' and 'rotor' are the same joint '{self.joint}'")

    @property
    def joints(self) -> tuple[str, ...]:
        return (self.joint, self.rotor)

    @property
    def independent(self) -> tuple[str, ...]:
        return (self.joint,)

    def ratio_matrix(self) -> np.ndarray:
        """``R`` with ``q_dependent = R q_independent`` (1 × 1)."""
        return np.array([[float(self.gear_ratio)]])


@dataclass(frozen=True, eq=False)
class BeltTransmission(_Loop):
    """n link joints in a chain driven by n rotors through nested belts (MIT Humanoid, Fig. 1a):
    ``q_rotors = R q_joints`` with ``R`` lower triangular (see the module docstring)."""
    name: str
    joints_: tuple[str, ...]
    rotors: tuple[str, ...]
    R: np.ndarray
    kind = "belt_transmission"

    def __post_init__(self):
        n = len(self.joints_)
        if n == 0 or len(self.rotors) != n:
            raise ModelError(f"loop '{self.name}': 'joints' and 'rotors' must be two non-empty lists of the "
                             f"same length (got {len(self.joints_)} joints and {len(self.rotors)} rotors)")
        _distinct(self.joints_ + self.rotors, self.name)
        R = np.asarray(self.R, dtype=float)
        if R.shape != (n, n) or not np.all(np.isfinite(R)):
            raise ModelError(f"loop '{self.name}': the ratio matrix must be {n}×{n} finite numbers")
        if np.any(np.triu(R, 1) != 0.0):
            raise ModelError(f"loop '{self.name}': the ratio matrix must be lower triangular (rotor i turns "
                             f"with joints 1..i only)")
        if np.any(np.diag(R) == 0.0):
            raise ModelError(f"loop '{self.name}': rotor i must drive joint i (zero diagonal ratio)")
        object.__setattr__(self, "R", R)

    @classmethod
    def from_ratios(cls, name, joints, rotors, gear_ratios, belt_ratios) -> "BeltTransmission":
        """From per-rotor gear ratios and belt-stage ratios (listed rotor by rotor, i for rotor i):
        ``R[i, m] = gear_i · Π_{l≤m} b_{i,l}`` for ``m ≤ i``."""
        n = len(joints)
        gear = vector(gear_ratios, n, f"loop '{name}': 'gear_ratios'")
        belts = vector(belt_ratios, n * (n + 1) // 2, f"loop '{name}': 'belt_ratios' (n(n+1)/2 numbers)")
        R, k = np.zeros((n, n)), 0
        for i in range(n):
            R[i, :i + 1] = gear[i] * np.cumprod(belts[k:k + i + 1])
            k += i + 1
        return cls(name, tuple(joints), tuple(rotors), R)

    @property
    def joints(self) -> tuple[str, ...]:
        return self.joints_ + self.rotors

    @property
    def independent(self) -> tuple[str, ...]:
        return self.joints_

    def ratio_matrix(self) -> np.ndarray:
        return self.R


@dataclass(frozen=True, eq=False)
class LinearTransmission(_Loop):
    """A constant explicit constraint ``q_dependent = R q_independent + offset`` (differential
    drives, URDF mimic joints; ``offset`` in rad or m, default zero)."""
    name: str
    independent_: tuple[str, ...]
    dependent_: tuple[str, ...]
    R: np.ndarray
    offset: np.ndarray | None = None
    kind = "linear_transmission"

    def __post_init__(self):
        if not self.independent_ or not self.dependent_:
            raise ModelError(f"loop '{self.name}': 'independent' and 'dependent' must be non-empty lists of joints")
        _distinct(self.independent_ + self.dependent_, self.name)
        R = np.asarray(self.R, dtype=float).reshape(-1)
        shape = (len(self.dependent_), len(self.independent_))
        if R.size != shape[0] * shape[1] or not np.all(np.isfinite(R)):
            raise ModelError(f"loop '{self.name}': 'ratio_matrix' must hold {shape[0]}×{shape[1]} finite numbers "
                             f"(row-major, one row per dependent joint)")
        object.__setattr__(self, "R", R.reshape(shape))
        offset = np.zeros(shape[0]) if self.offset is None else np.asarray(self.offset, dtype=float).reshape(-1)
        if offset.shape != (shape[0],) or not np.all(np.isfinite(offset)):
            raise ModelError(f"loop '{self.name}': 'offset' must hold {shape[0]} finite numbers (one per dependent joint)")
        object.__setattr__(self, "offset", offset)

    @property
    def joints(self) -> tuple[str, ...]:
        return self.independent_ + self.dependent_

    @property
    def independent(self) -> tuple[str, ...]:
        return self.independent_

    def ratio_matrix(self) -> np.ndarray:
        return self.R


@dataclass(frozen=True, eq=False)
class FourBar(_Loop):
    """A four-bar linkage: input link, coupler (a child of the input link) and output link in the
    spanning tree, closed by a revolute joint between the coupler and the output link at
    ``closure_coupler_xyz`` (coupler frame) ≡ ``closure_output_xyz`` (output link frame), axis
    ``closure_axis`` in the coupler frame (``None``: the coupler joint's axis) and
    ``closure_output_axis`` in the output link frame (``None``: the output joint's axis)."""
    name: str
    input: str
    coupler: str
    output: str
    closure_coupler_xyz: np.ndarray
    closure_output_xyz: np.ndarray
    closure_axis: np.ndarray | None = None
    independent_joint: str = ""
    closure_output_axis: np.ndarray | None = None
    kind = "four_bar"

    def __post_init__(self):
        _distinct((self.input, self.coupler, self.output), self.name)
        for attr in ("closure_coupler_xyz", "closure_output_xyz"):
            object.__setattr__(self, attr, vector(getattr(self, attr), 3, f"loop '{self.name}': '{attr}'"))
        for attr in ("closure_axis", "closure_output_axis"):
            if getattr(self, attr) is not None:
                axis = vector(getattr(self, attr), 3, f"loop '{self.name}': '{attr}'")
                if np.linalg.norm(axis) < 1e-9:
                    raise ModelError(f"loop '{self.name}': '{attr}' must be a non-zero vector")
                object.__setattr__(self, attr, axis / np.linalg.norm(axis))
        if not self.independent_joint:
            object.__setattr__(self, "independent_joint", self.input)
        if self.independent_joint not in self.joints:
            raise ModelError(f"loop '{self.name}': 'independent' is '{self.independent_joint}', which is not one of "
                             f"its joints {list(self.joints)}")

    @property
    def joints(self) -> tuple[str, ...]:
        return (self.input, self.coupler, self.output)

    @property
    def independent(self) -> tuple[str, ...]:
        return (self.independent_joint,)


@dataclass(frozen=True, eq=False)
class ExplicitLoop(_Loop):
    """A generic explicit constraint (eq. 3) for library users, over ``joints`` (spanning-tree joint
    names, all 1-DoF) with ``independent ⊂ joints``:

    * ``G(q) -> (len(joints), len(independent))`` with ``q̇ = G(q) ẏ`` (rows of the independent
      joints must be the identity);
    * ``g(q, dq) -> (len(joints),)`` with ``q̈ = G ÿ + g`` (``None``: zero, i.e. constant ``G``);
    * ``gamma(y) -> (len(joints),)`` with ``q = γ(y)`` (``None``: only spanning-tree states can be
      given to the algorithms).

    ``q`` and ``dq`` passed to the callables are the loop's joints, in ``joints`` order.
    """
    name: str
    joints_: tuple[str, ...]
    independent_: tuple[str, ...]
    G: Callable[[np.ndarray], np.ndarray]
    g: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    gamma: Callable[[np.ndarray], np.ndarray] | None = None
    kind = "explicit"

    def __post_init__(self):
        _distinct(tuple(self.joints_), self.name)
        object.__setattr__(self, "joints_", tuple(self.joints_))
        object.__setattr__(self, "independent_", tuple(self.independent_))
        missing = [j for j in self.independent_ if j not in self.joints_]
        if missing or not self.independent_:
            raise ModelError(f"loop '{self.name}': independent joints {missing or '[]'} must be a non-empty subset "
                             f"of its joints {list(self.joints_)}")
        if not callable(self.G) or (self.g is not None and not callable(self.g)) or \
                (self.gamma is not None and not callable(self.gamma)):
            raise ModelError(f"loop '{self.name}': G, g and gamma must be callables (g and gamma may be None)")

    @property
    def joints(self) -> tuple[str, ...]:
        return self.joints_

    @property
    def independent(self) -> tuple[str, ...]:
        return self.independent_


Loop = LinkAndRotor | BeltTransmission | LinearTransmission | FourBar | ExplicitLoop


# ---------------------------------------------------------------------------- helpers (shared with the parser)
def vector(value, n, what) -> np.ndarray:
    """``value`` as a finite float vector (of ``n`` numbers unless ``None``); :class:`ModelError` naming ``what``."""
    try:
        if isinstance(value, (str, bytes)):
            raise TypeError
        arr = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ModelError(f"{what} must be a list of numbers, got {value!r}") from None
    if n is not None and arr.size != n:
        raise ModelError(f"{what} must have {n} numbers, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ModelError(f"{what} has a non-finite value")
    return arr


def inertia_matrix(value, what) -> np.ndarray:
    """A 3×3 tensor or ``[ixx, ixy, ixz, iyy, iyz, izz]`` as a finite symmetric 3×3 matrix (kg·m²)."""
    arr = np.asarray(value, dtype=float) if not isinstance(value, (str, bytes)) else None
    if arr is not None and arr.shape == (3, 3):
        J = arr
    else:
        v = vector(value, 6, f"{what}: 'inertia' ([ixx, ixy, ixz, iyy, iyz, izz])")
        J = np.array([[v[0], v[1], v[2]], [v[1], v[3], v[4]], [v[2], v[4], v[5]]])
    if not np.all(np.isfinite(J)) or np.max(np.abs(J - J.T)) > 1e-12 * max(1.0, np.max(np.abs(J))):
        raise ModelError(f"{what}: 'inertia' must be a finite symmetric 3×3 tensor")
    return J


def _nonzero_ratio(value, name, key) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value == 0.0:
        raise ModelError(f"loop '{name}': '{key}' must be a finite non-zero number, got {value!r}")


def _distinct(names, loop: str) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise ModelError(f"loop '{loop}': joint '{n}' appears twice")
        seen.add(n)
