"""Kinematic loops declared on top of the URDF's spanning tree (Chignoli et al. §II-C, §VI-A).

URDF describes trees only. The loops of actuation sub-mechanisms — geared rotors, belt
transmissions, differentials, four-bar linkages — are declared beside it, in the sensor
configuration or in a companion YAML file with the same keys (named by the parameter
``loops_file``, see :meth:`LoopConfig.from_sensor_parameters`), and :class:`ClusterTree` (in
:mod:`rbd_estimator.model.clusters`) turns the URDF tree plus these declarations into the cluster
tree of §II-D. ROS 2 parameters cannot hold lists of dictionaries, so, as in
:class:`~rbd_estimator.estimation.config.SensorConfig`, every group is a list of names plus one
sub-dictionary per name::

    bodies: [knee_rotor, ankle_rotor]        # bodies the URDF does not have (rotors, couplers)
    body:
      knee_rotor:
        parent: thigh                        # URDF link (or earlier extra body) carrying its joint
        xyz: [0.013, -0.0497, -0.0178]       # joint origin in the parent link frame (m)
        rpy: [0.0, 0.0, 0.0]                 # joint orientation (rad, URDF roll-pitch-yaw)
        axis: [0.0, 1.0, 0.0]                # revolute axis in the body frame
        mass: 0.1                            # kg (may be 0 if the inertia is given)
        com: [0.0, 0.0, 0.0]                 # centre of mass in the body frame (m)
        inertia: [3.443e-4, 0, 0, 5.548e-4, 0, 3.443e-4]   # ixx ixy ixz iyy iyz izz about the com (kg·m²)
    loops: [hip_drive, knee_ankle_belt, knee_linkage, hip_differential]
    loop:
      hip_drive: {type: link_and_rotor, joint: hip_pitch, rotor: hip_pitch_rotor, gear_ratio: 6.0}
      knee_ankle_belt:
        type: belt_transmission
        joints: [knee, ankle]                # link joints, each the child of the previous one
        rotors: [knee_rotor, ankle_rotor]    # rotor i drives joint i
        gear_ratios: [6.0, 6.0]
        belt_ratios: [2.0, 2.0, 1.0]         # rotor 1: b11; rotor 2: b21 b22; ... (n(n+1)/2 numbers)
        # or, instead of gear_ratios/belt_ratios: ratio_matrix: [12, 0, 12, 12]  (row-major n×n)
      knee_linkage:
        type: four_bar
        input: knee_crank                    # tree joint of the input link (the independent coordinate)
        coupler: knee_coupler                # tree joint of the coupler, carried by the input link
                                             # (a URDF joint, or an extra body on the input link)
        output: knee                         # tree joint of the output link
        closure_coupler_xyz: [0.01, 0.0, -0.25]   # loop-closing revolute joint on the coupler (m)
        closure_output_xyz: [0.05, 0.0, 0.0]      # the same joint on the output link (m)
        closure_axis: [0.0, 1.0, 0.0]        # its axis in the coupler frame (default: the coupler's joint axis)
        closure_output_axis: [0.0, 1.0, 0.0] # and in the output link frame (default: the output joint's axis)
        independent: knee_crank              # optional (default: input); may be the output joint
      hip_differential:
        type: linear_transmission            # q_dependent = ratio_matrix · q_independent
        independent: [hip_pitch, hip_roll]
        dependent: [rotor_a, rotor_b]
        ratio_matrix: [6.0, 6.0, 6.0, -6.0]  # row-major (n_dependent × n_independent)

Meaning of each type (every relation is between joint angles of the spanning tree, rad):

* ``link_and_rotor``: ``q_rotor = gear_ratio · q_joint``. The rotor is an extra body or a URDF
  joint whose child link is the rotor; its stator is the rotor joint's parent link.
* ``belt_transmission`` (the MIT Humanoid's knee/ankle, §VI-C and Fig. 9b): n link joints in a chain
  and n rotors, ``q_rotor_i = gear_i · Σ_{m≤i} (Π_{l≤m} b_{i,l}) q_joint_m``: rotor i drives link i
  through a belt that runs across the joints before it, ``b_{i,l}`` being the ratio of its l-th
  stage. ``ratio_matrix`` gives ``q_rotors = R q_joints`` directly (lower triangular).
* ``four_bar``: an implicit constraint (eq. 2): the loop-closing revolute joint makes the two
  closure points coincide and their axes parallel. It is made explicit numerically at each state
  (eqs. 3–4): Newton on the closure for the dependent angles, ``G = [1; -K_d⁺ K_i]``,
  ``g = [0; K_d⁺ k]``.
* ``linear_transmission``: any constant explicit constraint between joint angles (differentials).
* :class:`ExplicitLoop` (Python only): ``q = γ(y)``, ``G(q)``, ``g(q, q̇)`` as callables.

Independent coordinates are a subset of the spanning-tree joints (§III-A, as in the paper): the
link joints for rotor and belt drives, the input joint for a four-bar. The generalised force of an
independent coordinate is the actuator effort expressed at that joint (N·m at the link side of a
gearbox). Bad declarations raise :class:`ModelError` naming the loop (or the extra body).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import ModelError
from ..yaml_file import name_list

__all__ = ["ExtraBody", "LinkAndRotor", "BeltTransmission", "LinearTransmission", "FourBar", "ExplicitLoop",
           "LoopConfig", "LOOP_TYPES", "LOOP_KEYS"]

LOOP_TYPES = ("link_and_rotor", "belt_transmission", "four_bar", "linear_transmission")
#: The top-level parameters of the loop declarations (a name ending in ``.`` is a group: ``loop.<name>.*``);
#: the sensor configuration keeps them in ``SensorConfig.node``, :meth:`LoopConfig.from_sensor_parameters`
#: reads and checks them.
LOOP_KEYS = ("loops_file", "loops", "bodies", "loop.", "body.")


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
            object.__setattr__(self, attr, _vector(getattr(self, attr), n, f"{what}: '{attr}'"))
        object.__setattr__(self, "inertia", _inertia_matrix(self.inertia, what))
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
        gear = _vector(gear_ratios, n, f"loop '{name}': 'gear_ratios'")
        belts = _vector(belt_ratios, n * (n + 1) // 2, f"loop '{name}': 'belt_ratios' (n(n+1)/2 numbers)")
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
            object.__setattr__(self, attr, _vector(getattr(self, attr), 3, f"loop '{self.name}': '{attr}'"))
        for attr in ("closure_axis", "closure_output_axis"):
            if getattr(self, attr) is not None:
                axis = _vector(getattr(self, attr), 3, f"loop '{self.name}': '{attr}'")
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


# ---------------------------------------------------------------------------- the configuration
@dataclass(frozen=True)
class LoopConfig:
    """Extra bodies and loop declarations, in declaration order. Build with :meth:`from_dict`,
    :meth:`from_parameters` or :meth:`from_yaml`, or directly from the dataclasses above."""
    bodies: tuple[ExtraBody, ...] = ()
    loops: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "bodies", tuple(self.bodies))
        object.__setattr__(self, "loops", tuple(self.loops))
        for kind, items in (("extra body", self.bodies), ("loop", self.loops)):
            seen = set()
            for it in items:
                if it.name in seen:
                    raise ModelError(f"{kind} '{it.name}' is declared twice")
                seen.add(it.name)

    @classmethod
    def from_dict(cls, params: dict | None) -> "LoopConfig":
        """From a nested mapping with the keys of the module docstring (other keys are ignored, so
        the whole ``ros__parameters`` dictionary of the sensor configuration can be passed)."""
        return cls.from_parameters(_flatten(params or {}))

    @classmethod
    def from_parameters(cls, flat: dict) -> "LoopConfig":
        """From flat, dotted ROS parameter names (``loop.knee_drive.gear_ratio`` …)."""
        return _Parser(flat).config()

    @classmethod
    def from_sensor_parameters(cls, flat: dict, base_dir: str | None = None) -> "LoopConfig":
        """From the flat parameters of the sensor configuration (e.g. ``SensorConfig.node``, which
        keeps the keys it does not know): the loops inline, or ``loops_file: path/to/loops.yaml``
        (relative paths from ``base_dir``, normally the parameter file's folder), not both."""
        path = flat.get("loops_file", "")
        inline = any(k in flat for k in ("loops", "bodies")) or any(k.startswith(("loop.", "body.")) for k in flat)
        if not path:
            return cls.from_parameters(flat)
        if not isinstance(path, str):
            raise ModelError(f"parameter 'loops_file' must be a path, got {path!r}")
        if inline:
            raise ModelError("declare loops either inline ('loops', 'loop.*', 'bodies', 'body.*') or in "
                             "'loops_file', not both")
        import os
        if base_dir and not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        return cls.from_yaml(path)

    @classmethod
    def from_yaml(cls, path, node_name: str | None = None) -> "LoopConfig":
        """Read a YAML file: either a plain mapping with the keys above or a ROS 2 parameter file
        (``<node>: ros__parameters: ...``; ``node_name`` picks a node when there are several)."""
        from ..yaml_file import read_yaml
        doc = read_yaml(path, ModelError, "loop file")
        if not isinstance(doc, dict):
            raise ModelError(f"loop file '{path}' must hold a mapping with 'loops' (and 'bodies')")
        sections = [k for k, v in doc.items() if isinstance(v, dict) and "ros__parameters" in v]
        if sections:
            if node_name is not None:
                sections = [k for k in sections if k in ("/**", "**")
                            or k.lstrip("/").split("/")[-1] == node_name.lstrip("/").split("/")[-1]]
            elif len([k for k in sections if k not in ("/**", "**")]) > 1:
                raise ModelError(f"loop file '{path}' has sections for several nodes; pass node_name")
            merged: dict = {}
            for k in sections:
                merged.update(doc[k]["ros__parameters"] or {})
            doc = merged
        return cls.from_dict(doc)

    def to_parameters(self) -> dict:
        """Flat ROS parameters that :meth:`from_parameters` reads back (callable loops are skipped)."""
        out: dict = {"bodies": [b.name for b in self.bodies]}
        for b in self.bodies:
            I = b.inertia
            out.update({f"body.{b.name}.parent": b.parent, f"body.{b.name}.xyz": b.xyz.tolist(),
                        f"body.{b.name}.rpy": b.rpy.tolist(), f"body.{b.name}.axis": b.axis.tolist(),
                        f"body.{b.name}.mass": float(b.mass), f"body.{b.name}.com": b.com.tolist(),
                        f"body.{b.name}.inertia": [I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2]]})
        loops = [lp for lp in self.loops if not isinstance(lp, ExplicitLoop)]
        out["loops"] = [lp.name for lp in loops]
        for lp in loops:
            p = f"loop.{lp.name}."
            out[p + "type"] = lp.kind
            if isinstance(lp, LinkAndRotor):
                out.update({p + "joint": lp.joint, p + "rotor": lp.rotor, p + "gear_ratio": float(lp.gear_ratio)})
            elif isinstance(lp, BeltTransmission):
                out.update({p + "joints": list(lp.joints_), p + "rotors": list(lp.rotors),
                            p + "ratio_matrix": lp.R.reshape(-1).tolist()})
            elif isinstance(lp, LinearTransmission):
                out.update({p + "independent": list(lp.independent_), p + "dependent": list(lp.dependent_),
                            p + "ratio_matrix": lp.R.reshape(-1).tolist()})
            elif isinstance(lp, FourBar):
                out.update({p + "input": lp.input, p + "coupler": lp.coupler, p + "output": lp.output,
                            p + "closure_coupler_xyz": lp.closure_coupler_xyz.tolist(),
                            p + "closure_output_xyz": lp.closure_output_xyz.tolist(),
                            p + "independent": lp.independent_joint})
                for key in ("closure_axis", "closure_output_axis"):
                    if getattr(lp, key) is not None:
                        out[p + key] = getattr(lp, key).tolist()
        return out


# ---------------------------------------------------------------------------- parsing
_BODY_FIELDS = {"parent", "xyz", "rpy", "axis", "mass", "com", "inertia"}
_LOOP_FIELDS = {
    "link_and_rotor": {"joint", "rotor", "gear_ratio"},
    "belt_transmission": {"joints", "rotors", "gear_ratios", "belt_ratios", "ratio_matrix"},
    "four_bar": {"input", "coupler", "output", "closure_coupler_xyz", "closure_output_xyz", "closure_axis",
                 "closure_output_axis", "independent"},
    "linear_transmission": {"independent", "dependent", "ratio_matrix"},
}


class _Parser:
    """Reads the flat parameters; every error names the loop or extra body and the field."""

    def __init__(self, flat: dict):
        self.flat = dict(flat)

    def config(self) -> LoopConfig:
        bodies = tuple(self.body(n) for n in self.names("bodies"))
        loops = tuple(self.loop(n) for n in self.names("loops"))
        for prefix, names, what in (("body.", {b.name for b in bodies}, "bodies"),
                                    ("loop.", {lp.name for lp in loops}, "loops")):
            stray = sorted({k.split(".")[1] for k in self.flat if k.startswith(prefix) and k.count(".") >= 2}
                           - names)
            if stray:
                raise ModelError(f"parameters under '{prefix}{stray[0]}' describe something not listed in '{what}' "
                                 f"(add '{stray[0]}' to '{what}' or remove them)")
        return LoopConfig(bodies=bodies, loops=loops)

    def names(self, key: str) -> tuple[str, ...]:
        return name_list(self.flat.get(key, []), key, ModelError)

    def fields(self, prefix: str, allowed: set, what: str) -> dict:
        kw = {k[len(prefix):]: v for k, v in self.flat.items() if k.startswith(prefix)}
        unknown = sorted(set(kw) - allowed - {"type"})
        if unknown:
            raise ModelError(f"{what}: unknown field '{unknown[0]}' (expected some of {sorted(allowed)})")
        return kw

    def body(self, n: str) -> ExtraBody:
        what = f"extra body '{n}'"
        kw = self.fields(f"body.{n}.", _BODY_FIELDS, what)
        for req in ("parent", "axis"):
            if req not in kw:
                raise ModelError(f"{what}: '{req}' is required")
        if not isinstance(kw["parent"], str) or not kw["parent"]:
            raise ModelError(f"{what}: 'parent' must be a link name, got {kw['parent']!r}")
        inertia = kw.get("inertia", [0.0] * 6)
        return ExtraBody(name=n, parent=kw["parent"], axis=kw["axis"], mass=_number(kw.get("mass", 0.0), what, "mass"),
                         xyz=kw.get("xyz", [0.0] * 3), rpy=kw.get("rpy", [0.0] * 3), com=kw.get("com", [0.0] * 3),
                         inertia=_inertia_matrix(inertia, what))

    def loop(self, n: str):
        kind = self.flat.get(f"loop.{n}.type")
        if kind not in _LOOP_FIELDS:
            raise ModelError(f"loop '{n}': 'type' is {kind!r}, expected one of {list(LOOP_TYPES)}")
        what = f"{kind} loop '{n}'"
        kw = self.fields(f"loop.{n}.", _LOOP_FIELDS[kind], what)

        def need(key, conv):
            if key not in kw:
                raise ModelError(f"{what}: '{key}' is required")
            return conv(kw[key], what, key)

        if kind == "link_and_rotor":
            return LinkAndRotor(n, need("joint", _name), need("rotor", _name), need("gear_ratio", _number))
        if kind == "belt_transmission":
            joints, rotors = need("joints", _name_list), need("rotors", _name_list)
            if "ratio_matrix" in kw:
                if "gear_ratios" in kw or "belt_ratios" in kw:
                    raise ModelError(f"{what}: give either 'ratio_matrix' or 'gear_ratios' + 'belt_ratios', not both")
                m = len(joints)
                R = _vector(kw["ratio_matrix"], m * m, f"{what}: 'ratio_matrix' ({m}×{m}, row-major)")
                return BeltTransmission(n, joints, rotors, R.reshape(m, m))
            if len(rotors) != len(joints):
                raise ModelError(f"{what}: 'joints' and 'rotors' must have the same length")
            return BeltTransmission.from_ratios(n, joints, rotors, need("gear_ratios", _raw), need("belt_ratios", _raw))
        if kind == "linear_transmission":
            return LinearTransmission(n, need("independent", _name_list), need("dependent", _name_list),
                                      _vector(need("ratio_matrix", _raw), None, f"{what}: 'ratio_matrix'"))
        axes = {key: None if kw.get(key) is None else _vector(kw[key], 3, f"{what}: '{key}'")
                for key in ("closure_axis", "closure_output_axis")}
        return FourBar(n, need("input", _name), need("coupler", _name), need("output", _name),
                       need("closure_coupler_xyz", _raw), need("closure_output_xyz", _raw), **axes,
                       independent_joint=_name(kw["independent"], what, "independent") if "independent" in kw else "")


# ---------------------------------------------------------------------------- helpers
def _flatten(params: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in params.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _raw(value, what, key):
    return value


def _name(value, what, key) -> str:
    if not isinstance(value, str) or not value:
        raise ModelError(f"{what}: '{key}' must be a joint name, got {value!r}")
    return value


def _name_list(value, what, key) -> tuple[str, ...]:
    if isinstance(value, str) or not hasattr(value, "__len__") or not value \
            or not all(isinstance(v, str) and v for v in value):
        raise ModelError(f"{what}: '{key}' must be a non-empty list of joint names, got {value!r}")
    return tuple(value)


def _number(value, what, key) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ModelError(f"{what}: '{key}' must be a finite number, got {value!r}")
    return float(value)


def _vector(value, n, what) -> np.ndarray:
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


def _inertia_matrix(value, what) -> np.ndarray:
    arr = np.asarray(value, dtype=float) if not isinstance(value, (str, bytes)) else None
    if arr is not None and arr.shape == (3, 3):
        J = arr
    else:
        v = _vector(value, 6, f"{what}: 'inertia' ([ixx, ixy, ixz, iyy, iyz, izz])")
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
