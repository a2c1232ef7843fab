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
from dataclasses import dataclass, replace

from ..errors import ModelError
from ..schema import CONFIGURE, Field, Group, Schema
from ..yaml_file import name_list
from .mechanisms import (BeltTransmission, ExplicitLoop, ExtraBody, FourBar, LinearTransmission, LinkAndRotor,  # noqa: F401
                         Loop, inertia_matrix, vector)  # the classes are re-exported: every import path stays

__all__ = ["ExtraBody", "LinkAndRotor", "BeltTransmission", "LinearTransmission", "FourBar", "ExplicitLoop",
           "LoopConfig", "LOOP_TYPES", "LOOP_KEYS", "loop_schema"]

LOOP_TYPES = ("link_and_rotor", "belt_transmission", "four_bar", "linear_transmission")
def _field(kind, description, default=..., **kw) -> Field:
    """A loop parameter: every change of one takes effect at the next configure."""
    return Field(kind, description, **({} if default is ... else {"default": default}), change=CONFIGURE, **kw)


_NAMES = "string_array"
#: The parameters of an extra body (``body.<name>.<field>``)
BODY_FIELDS = {
    "parent": _field("string", "URDF link (or earlier extra body) carrying the body's joint"),
    "xyz": _field("double_array", "joint origin in the parent link frame (m)", (0.0,) * 3, size=3),
    "rpy": _field("double_array", "joint orientation (rad, URDF roll-pitch-yaw)", (0.0,) * 3, size=3),
    "axis": _field("double_array", "revolute axis in the body frame", size=3),
    "mass": _field("double", "kg (may be 0 if the inertia is given)", 0.0, ge=0.0),
    "com": _field("double_array", "centre of mass in the body frame (m)", (0.0,) * 3, size=3),
    "inertia": _field("double_array", "`[ixx, ixy, ixz, iyy, iyz, izz]` about the centre of mass (kg·m²)",
                      (0.0,) * 6, size=6),
}
#: The parameters of a loop by type (``loop.<name>.<field>``; ``type`` selects the table). An array
#: whose default is empty is optional (an alternative to another field, or the default in words).
LOOP_FIELDS = {
    "link_and_rotor": {
        "joint": _field("string", "the link's joint"),
        "rotor": _field("string", "the rotor's joint (an extra body, or a URDF joint whose child link is the rotor)"),
        "gear_ratio": _field("double", "`q_rotor = gear_ratio · q_joint`"),
    },
    "belt_transmission": {
        "joints": _field(_NAMES, "link joints, each the child of the previous one"),
        "rotors": _field(_NAMES, "rotors, rotor i driving joint i"),
        "gear_ratios": _field("double_array", "one gear ratio per rotor (with `belt_ratios`; or `ratio_matrix`)", ()),
        "belt_ratios": _field("double_array", "belt stage ratios, rotor 1: b11; rotor 2: b21 b22; … (n(n+1)/2 "
                              "numbers)", ()),
        "ratio_matrix": _field("double_array", "`q_rotors = R q_joints`, R row-major n×n, lower triangular "
                               "(instead of `gear_ratios` and `belt_ratios`)", ()),
    },
    "four_bar": {
        "input": _field("string", "tree joint of the input link"),
        "coupler": _field("string", "tree joint of the coupler, carried by the input link"),
        "output": _field("string", "tree joint of the output link"),
        "closure_coupler_xyz": _field("double_array", "the loop-closing revolute joint on the coupler (m)", size=3),
        "closure_output_xyz": _field("double_array", "the same joint on the output link (m)", size=3),
        "closure_axis": _field("double_array", "its axis in the coupler frame; empty: the coupler joint's axis", ()),
        "closure_output_axis": _field("double_array", "its axis in the output link frame; empty: the output "
                                      "joint's axis", ()),
        "independent": _field("string", "the independent coordinate: the input joint (empty) or the output joint",
                              ""),
    },
    "linear_transmission": {
        "independent": _field(_NAMES, "independent joints"),
        "dependent": _field(_NAMES, "dependent joints: `q_dependent = R q_independent`"),
        "ratio_matrix": _field("double_array", "R, row-major (n_dependent × n_independent)"),
    },
}


def loop_schema() -> Schema:
    """The loop declarations' parameters (every change takes effect at the next configure)."""
    top = {"loops_file": _field("string", "YAML file with the loop declarations (relative paths from the parameter "
                                "file's folder), instead of declaring them inline", ""),
           "bodies": _field(_NAMES, "extra bodies the URDF does not have (rotors, couplers), each described by "
                            "`body.<name>.*`", ()),
           "loops": _field(_NAMES, "loops of actuation sub-mechanisms, each described by `loop.<name>.*` "
                           "(see loops.md)", ())}
    kind = _field("string", "the mechanism", choices=LOOP_TYPES)
    per_type = tuple(Group("loop", {k: replace(f, description=f"{t}: {f.description}") for k, f in fields.items()},
                           names="loops", when=("type", t)) for t, fields in LOOP_FIELDS.items())
    return Schema((("loops_file", top["loops_file"]), ("bodies", top["bodies"]),
                   Group("body", BODY_FIELDS, names="bodies"), ("loops", top["loops"]),
                   Group("loop", {"type": kind}, names="loops")) + per_type)


#: The top-level parameters of the loop declarations (a name ending in ``.`` is a group: ``loop.<name>.*``);
#: the sensor configuration keeps them in ``SensorConfig.node``, :meth:`LoopConfig.from_sensor_parameters`
#: reads and checks them.
LOOP_KEYS = tuple(loop_schema().top) + tuple(dict.fromkeys(g.prefix + "." for g in loop_schema().groups))


# ---------------------------------------------------------------------------- the configuration
@dataclass(frozen=True)
class LoopConfig:
    """Extra bodies and loop declarations, in declaration order. Build with :meth:`from_dict`,
    :meth:`from_parameters` or :meth:`from_yaml`, or directly from the classes of
    :mod:`rbd_estimator.model.mechanisms` (re-exported here)."""
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
        kw = self.fields(f"body.{n}.", set(BODY_FIELDS), what)
        for req in ("parent", "axis"):
            if req not in kw:
                raise ModelError(f"{what}: '{req}' is required")
        if not isinstance(kw["parent"], str) or not kw["parent"]:
            raise ModelError(f"{what}: 'parent' must be a link name, got {kw['parent']!r}")
        inertia = kw.get("inertia", [0.0] * 6)
        return ExtraBody(name=n, parent=kw["parent"], axis=kw["axis"], mass=_number(kw.get("mass", 0.0), what, "mass"),
                         xyz=kw.get("xyz", [0.0] * 3), rpy=kw.get("rpy", [0.0] * 3), com=kw.get("com", [0.0] * 3),
                         inertia=inertia_matrix(inertia, what))

    def loop(self, n: str):
        kind = self.flat.get(f"loop.{n}.type")
        if kind not in LOOP_FIELDS:
            raise ModelError(f"loop '{n}': 'type' is {kind!r}, expected one of {list(LOOP_TYPES)}")
        what = f"{kind} loop '{n}'"
        kw = self.fields(f"loop.{n}.", set(LOOP_FIELDS[kind]), what)

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
                R = vector(kw["ratio_matrix"], m * m, f"{what}: 'ratio_matrix' ({m}×{m}, row-major)")
                return BeltTransmission(n, joints, rotors, R.reshape(m, m))
            if len(rotors) != len(joints):
                raise ModelError(f"{what}: 'joints' and 'rotors' must have the same length")
            return BeltTransmission.from_ratios(n, joints, rotors, need("gear_ratios", _raw), need("belt_ratios", _raw))
        if kind == "linear_transmission":
            return LinearTransmission(n, need("independent", _name_list), need("dependent", _name_list),
                                      vector(need("ratio_matrix", _raw), None, f"{what}: 'ratio_matrix'"))
        axes = {key: None if kw.get(key) is None else vector(kw[key], 3, f"{what}: '{key}'")
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
