"""robot_description (URDF) → the fields of a :class:`~rbd_estimator.model.robot_model.RobotModel`,
read with ``urdf_parser_py``: :meth:`RobotModel.from_urdf` builds the model from them (this module
imports the model's elements, not the model: the dependency goes one way).

Force-torque sensors are read from ``<gazebo reference="JOINT"><sensor type="force_torque">`` and
from top-level ``<sensor type="force_torque"><parent joint="JOINT"/>`` elements, which
``urdf_parser_py`` does not model, so those two tags are read with ElementTree.
"""
from __future__ import annotations

import difflib
import math
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import ModelError, ModelWarning
from ..spatial import mcI, plux, rpy_to_E
from .elements import FIXED, FREE, PRISMATIC, REVOLUTE, Frame, FTSensor, MimicJoint
from .urdf_sensors import ft_sensor_tags, imu_frames

_MOVABLE = {"revolute": REVOLUTE, "continuous": REVOLUTE, "prismatic": PRISMATIC}


def read_urdf(xml: str, floating_base: bool = False, keep_fixed=(), strict: bool = False) -> dict:
    """Parse, validate and number a URDF: the keyword arguments of ``RobotModel`` (see
    :meth:`RobotModel.from_urdf`, which calls it)."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected and reported by name
        return _build(xml, floating_base, keep_fixed, strict)


def _check_kept(name: str, joints: dict, fixed) -> None:
    """A joint to keep (``keep_fixed``, a force-torque sensor's) must be a fixed joint of the URDF
    (``fixed``, their names); else a :class:`ModelError` whose ``joint`` is ``name`` (the sensor
    configuration names its parameter) and which suggests the closest fixed joint."""
    if name in joints and joints[name].type == "fixed":
        return
    close = difflib.get_close_matches(name, fixed, n=1)
    if name not in joints:
        err = ModelError(f"joint '{name}' is not in the robot description"
                         + (f" (did you mean the fixed joint '{close[0]}'?)" if close else ""))
    else:
        err = ModelError(f"joint '{name}' is {joints[name].type}: only fixed joints can be kept "
                         f"(force-torque sensors must sit on fixed joints"
                         + (f"; the closest fixed joint is '{close[0]}')" if close else ")"))
    err.joint = name
    raise err


def _build(xml: str, floating_base: bool, keep_fixed, strict: bool) -> dict:
    if not isinstance(xml, str) or not xml.strip():
        raise ModelError("robot_description is empty: expected the URDF XML text")
    tree = _parse_xml(xml)
    robot = _parse_urdf(_kinematic_part(tree))
    links = _unique({l.name: l for l in robot.links}, robot.links, "link")
    joints = _unique({j.name: j for j in robot.joints}, robot.joints, "joint")
    for link in robot.links:
        _physical(_check_inertial(link), strict)
    for joint in robot.joints:
        _check_joint(joint, links)
    root, child_joints = _tree_structure(robot, links)
    mimic = _mimic_joints(joints, strict)
    sensors = ft_sensor_tags(tree, joints)
    keep = set(keep_fixed) | set(sensors)
    fixed = tuple(n for n, j in joints.items() if j.type == "fixed")
    for name in keep:
        _check_kept(name, joints, fixed)
    for m in mimic:
        if m.joint in sensors or m.driver in sensors:
            raise ModelError(f"mimic joint '{m.joint}' cannot carry a force-torque sensor")
    model = dict(_number(robot.name or "robot", root, links, child_joints, keep, sensors, floating_base),
                 mimic_joints=mimic, fixed_joints=fixed)
    model["imu_sensors"] = imu_frames(model["frames"], tree)
    _physical(_massless_subtree(model), strict)
    return model


def _physical(defect: str | None, strict: bool) -> None:
    """A physical defect (computable numbers, doubtful physics): ModelError when ``strict``,
    else one :class:`ModelWarning`."""
    if defect and strict:
        raise ModelError(defect)
    if defect:
        warnings.warn(f"{defect}; loaded as given (strict=True refuses it)", ModelWarning, stacklevel=5)


# ---------------------------------------------------------------------------- parsing
def _parse_xml(xml: str) -> ET.Element:
    try:
        tree = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ModelError(f"robot_description is not well-formed XML: {exc}{_near(xml, exc)}") from None
    if tree.tag != "robot":
        raise ModelError(f"robot_description root element is <{tree.tag}>, expected <robot>")
    return tree


def _near(xml: str, exc: ET.ParseError) -> str:
    """An excerpt of the line the XML parser stopped at, so the message shows the link or joint."""
    line, col = getattr(exc, "position", (0, 0))
    lines = xml.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1]
    start = max(0, min(col, len(text)) - 60)
    excerpt = text[start:start + 120].strip()
    return f" near {excerpt!r}" if excerpt else ""


def _kinematic_part(tree: ET.Element) -> str:
    """The URDF without the parts dynamics does not use (geometry, materials, plugins), whose
    variants urdf_parser_py rejects although they are harmless here."""
    kept = ET.Element(tree.tag, tree.attrib)
    for elem in tree:
        if elem.tag == "joint":
            kept.append(elem)
        elif elem.tag == "link":
            link = ET.SubElement(kept, "link", elem.attrib)
            link.extend(e for e in elem if e.tag == "inertial")
    return ET.tostring(kept, encoding="unicode")


def _parse_urdf(xml: str):
    from urdf_parser_py import urdf as U
    from urdf_parser_py.xml_reflection import core

    messages = []
    previous = core.on_error
    core.on_error = messages.append
    try:
        robot = U.URDF.from_xml_string(xml)
    except Exception as exc:  # urdf_parser_py raises assorted types on bad attributes
        detail = f"{type(exc).__name__}: {exc}"
        where = "" if isinstance(exc, core.ParseError) else _locate(xml, U.URDF.from_xml_string)
        raise ModelError(f"robot_description is not a valid URDF{where} ({detail})") from None
    finally:
        core.on_error = previous
    if not robot.links:
        raise ModelError("robot_description has no <link>")
    return robot


def _locate(xml: str, parse) -> str:
    """' in link/joint NAME': the first element urdf_parser_py rejects on its own (its errors from
    bad numbers carry no path), or '' if none does alone."""
    root = ET.fromstring(xml)
    for elem in root:
        try:
            parse(f'<robot name="probe">{ET.tostring(elem, encoding="unicode")}</robot>')
        except Exception:
            return f" in {elem.tag} '{elem.get('name')}'"
    return ""


def _unique(by_name: dict, items, kind: str) -> dict:
    if len(by_name) != len(items):
        seen = set()
        for it in items:
            if it.name in seen:
                raise ModelError(f"{kind} '{it.name}' is defined more than once")
            seen.add(it.name)
    if None in by_name:
        raise ModelError(f"a <{kind}> has no name attribute")
    return by_name


def _check_inertial(link) -> str | None:
    """Refuse (``ModelError``) what makes the numbers meaningless — a mass that is negative or not
    finite, an inertia that is not finite — and return the description of a physical defect
    (an inertia that is not positive semi-definite, that violates the triangle inequality
    I1 + I2 >= I3 of the principal moments, or that belongs to a massless link), or None.

    Round-off is no defect: principal moments are compared with a tolerance of 1e-9 times the
    link's largest moment (at least 1e-12 kg·m²)."""
    ine = link.inertial
    if ine is None:
        return None
    m = ine.mass
    if m is None or not isinstance(m, (int, float)) or not math.isfinite(m) or m < 0.0:
        raise ModelError(f"link '{link.name}' has an invalid mass {m!r}: expected a finite value >= 0 kg")
    J = _inertia_tensor(link)
    if not np.all(np.isfinite(J)):
        raise ModelError(f"link '{link.name}' has a non-finite inertia tensor")
    ev = np.linalg.eigvalsh(J)
    if not np.all(np.isfinite(ev)):
        raise ModelError(f"link '{link.name}' has an inertia tensor too large to represent (overflow)")
    scale = float(np.max(np.abs(ev)))
    tol = max(1e-9 * scale, 1e-12)
    if ev[0] < -tol:
        return (f"link '{link.name}' has an inertia tensor that is not positive semi-definite "
                f"(principal moments {ev.tolist()} kg·m²)")
    if ev[0] + ev[1] < ev[2] - tol:
        return (f"link '{link.name}' has principal moments {ev.tolist()} kg·m² that violate the "
                f"triangle inequality (I1 + I2 >= I3): not a physical rigid body")
    if m == 0.0 and scale > 1e-12:
        return f"link '{link.name}' has zero mass but a non-zero rotational inertia"
    return None


def _inertia_tensor(link) -> np.ndarray:
    i = link.inertial.inertia
    if i is None:
        return np.zeros((3, 3))
    vals = [i.ixx, i.ixy, i.ixz, i.iyy, i.iyz, i.izz]
    if any(not isinstance(v, (int, float)) for v in vals):
        raise ModelError(f"link '{link.name}' has an incomplete <inertia>")
    ixx, ixy, ixz, iyy, iyz, izz = (float(v) for v in vals)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def _pose(origin, what: str):
    """(R, p) of a URDF <origin>: R maps child to parent coordinates, p is the child origin."""
    if origin is None:
        return np.eye(3), np.zeros(3)
    xyz = origin.xyz if origin.xyz is not None else [0.0, 0.0, 0.0]
    rpy = origin.rpy if origin.rpy is not None else [0.0, 0.0, 0.0]
    vals = np.asarray(list(xyz) + list(rpy), dtype=float) if len(xyz) == 3 and len(rpy) == 3 else None
    if vals is None or not np.all(np.isfinite(vals)):
        raise ModelError(f"{what} has an invalid <origin> (xyz={xyz}, rpy={rpy})")
    return rpy_to_E(vals[3:]), vals[:3]


def _check_joint(joint, links: dict) -> None:
    name = joint.name
    if joint.type in ("planar", "floating"):
        raise ModelError(f"joint '{name}' has type '{joint.type}', which is not supported inside the tree "
                         f"(use floating_base=True for a free-flying root)")
    if joint.type not in ("fixed", "revolute", "continuous", "prismatic"):
        raise ModelError(f"joint '{name}' has unknown type '{joint.type}'")
    for role, link in (("parent", joint.parent), ("child", joint.child)):
        if link not in links:
            raise ModelError(f"joint '{name}' refers to {role} link '{link}', which does not exist")
    if joint.parent == joint.child:
        raise ModelError(f"joint '{name}' connects link '{joint.parent}' to itself")
    _pose(joint.origin, f"joint '{name}'")
    if joint.type in _MOVABLE:
        axis = np.asarray(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], dtype=float)
        if axis.shape != (3,) or not np.all(np.isfinite(axis)) or np.linalg.norm(axis) < 1e-9:
            raise ModelError(f"joint '{name}' has an invalid axis {joint.axis}")


def _tree_structure(robot, links: dict):
    parent_of = {}
    child_joints = {name: [] for name in links}
    for joint in robot.joints:
        if joint.child in parent_of:
            raise ModelError(f"link '{joint.child}' has two parents: joints '{parent_of[joint.child].name}' "
                             f"and '{joint.name}'")
        parent_of[joint.child] = joint
        child_joints[joint.parent].append(joint)
    roots = [name for name in links if name not in parent_of]
    if not roots:
        link, seen = next(iter(links)), []
        while link not in seen:
            seen.append(link)
            link = parent_of[link].parent
        cycle = seen[seen.index(link):]
        raise ModelError(f"the links form a cycle (joints {', '.join(parent_of[l].name for l in cycle)} "
                         f"through links {', '.join(cycle)}): there is no root link")
    if len(roots) > 1:
        raise ModelError(f"the robot has several root links ({', '.join(roots)}); a URDF tree has exactly one")
    reached, stack = {roots[0]}, [roots[0]]
    while stack:
        for joint in child_joints[stack.pop()]:
            if joint.child in reached:
                raise ModelError(f"joint '{joint.name}' closes a cycle at link '{joint.child}'")
            reached.add(joint.child)
            stack.append(joint.child)
    missing = [n for n in links if n not in reached]
    if missing:
        raise ModelError(f"links {', '.join(missing)} are not connected to the root '{roots[0]}' "
                         f"(their joints form a cycle)")
    for joints in child_joints.values():
        joints.sort(key=lambda j: j.name)  # the order urdfdom (hence pinocchio) visits children
    return roots[0], child_joints


def _mimic_joints(joints: dict, strict: bool) -> tuple[MimicJoint, ...]:
    """The ``<mimic>`` couplings, each resolved to an independent driving joint (a mimic of a
    mimic composes: ``q = m₂ (m₁ q_d + o₁) + o₂``). A ``<mimic>`` that names no usable driver
    (a joint that does not exist or is fixed, or a circle of mimics) leaves its joint independent,
    with a warning, as pinocchio's loader without ``mimic=True`` does (``strict``: ModelError)."""
    def driver_of(name):
        mim = joints[name].mimic
        return None if mim is None or joints[name].type not in _MOVABLE else mim.joint

    def broken(name):
        seen, j = [name], driver_of(name)
        while j is not None:
            if j not in joints:
                return f"follows joint '{j}', which does not exist"
            if joints[j].type not in _MOVABLE:
                return f"follows joint '{j}', which is {joints[j].type}"
            if j in seen:
                return f"belongs to a circle of mimic joints ({', '.join(seen)})"
            seen.append(j)
            j = driver_of(j)
        return None

    usable = {}
    for name in joints:
        if driver_of(name) is not None:
            why = broken(name)
            _physical(why and f"mimic joint '{name}' {why}: treated as an independent joint", strict)
            usable[name] = why is None

    def resolve(name):
        mim = joints[name].mimic
        if not usable.get(name):
            return name, 1.0, 0.0
        mult = 1.0 if mim.multiplier is None else float(mim.multiplier)
        off = 0.0 if mim.offset is None else float(mim.offset)
        if not (math.isfinite(mult) and math.isfinite(off)):
            raise ModelError(f"mimic joint '{name}' has a non-finite multiplier or offset ({mult}, {off})")
        root, m, o = resolve(mim.joint)
        return root, mult * m, mult * o + off

    return tuple(MimicJoint(name, *resolve(name)) for name in joints if usable.get(name))


# ---------------------------------------------------------------------------- numbering
def _link_inertia(link) -> np.ndarray:
    """Spatial inertia of a link in its own frame (inertial origin rpy rotates the tensor)."""
    if link.inertial is None:
        return np.zeros((6, 6))
    R, c = _pose(link.inertial.origin, f"link '{link.name}' <inertial>")
    return mcI(float(link.inertial.mass), c, R @ _inertia_tensor(link) @ R.T)


def _number(name, root, links, child_joints, keep, sensors, floating_base) -> dict:
    bodies = []   # dicts: link, joint, parent, type, axis, E, r, I
    frames = {}

    def attach(link_name, body, E, r):
        """Record link frame ``ˡX_body = plux(E, r)`` and add the link's inertia to its body."""
        frames[link_name] = Frame(link_name, body, E, r)
        if body >= 0:
            X = plux(E, r)
            bodies[body]["I"] += X.T @ _link_inertia(links[link_name]) @ X
        if not (np.all(np.isfinite(r)) and (body < 0 or np.all(np.isfinite(bodies[body]["I"])))):
            raise ModelError(f"link '{link_name}': its placement or merged inertia overflows "
                             f"(origins or inertias too large to represent)")

    def visit(link_name, body, E, r):
        for joint in child_joints[link_name]:
            R, p = _pose(joint.origin, f"joint '{joint.name}'")
            Ec, rc = R.T @ E, r + E.T @ p          # ᶜX_body = ᶜX_link ˡX_body
            if joint.type == "fixed" and joint.name not in keep:
                attach(joint.child, body, Ec, rc)
                visit(joint.child, body, Ec, rc)
                continue
            jtype = _MOVABLE.get(joint.type, FIXED)
            axis = np.asarray(joint.axis if joint.axis is not None else [1.0, 0.0, 0.0], dtype=float)
            bodies.append(dict(link=joint.child, joint=joint.name, parent=body, parent_link=link_name, type=jtype,
                               axis=axis / np.linalg.norm(axis) if jtype != FIXED else np.zeros(3),
                               E=Ec, r=rc, I=np.zeros((6, 6))))
            child = len(bodies) - 1
            attach(joint.child, child, np.eye(3), np.zeros(3))
            visit(joint.child, child, np.eye(3), np.zeros(3))

    if floating_base:
        bodies.append(dict(link=root, joint="root_joint", parent=-1, parent_link="world", type=FREE, axis=np.zeros(3),
                           E=np.eye(3), r=np.zeros(3), I=np.zeros((6, 6))))
        attach(root, 0, np.eye(3), np.zeros(3))
        visit(root, 0, np.eye(3), np.zeros(3))
    else:
        attach(root, -1, np.eye(3), np.zeros(3))
        visit(root, -1, np.eye(3), np.zeros(3))
    if not bodies:   # a rigid body bolted to the world, as pinocchio models it: nq = nv = 0
        warnings.warn(f"robot '{name}' has no movable joint and no floating base: its model has no degree of "
                      f"freedom", ModelWarning, stacklevel=4)
    return _assemble(name, root, bodies, frames, sensors, floating_base)


def _assemble(name, root, bodies, frames, sensors, floating_base) -> dict:
    NB = len(bodies)
    dofs = np.array([{FIXED: 0, REVOLUTE: 1, PRISMATIC: 1, FREE: 6}[b["type"]] for b in bodies], dtype=np.int64)
    q_idx = np.full(NB, -1, dtype=np.int64)
    v_idx = np.full(NB, -1, dtype=np.int64)
    nq = nv = 0
    for i, b in enumerate(bodies):
        if b["type"] == FREE:
            q_idx[i], v_idx[i] = nq, nv
            nq, nv = nq + 7, nv + 6
        elif dofs[i]:
            q_idx[i], v_idx[i] = nq, nv
            nq, nv = nq + 1, nv + 1
    body_names = tuple(b["link"] for b in bodies)
    ft = []
    for joint, s in sensors.items():
        i = next(k for k, b in enumerate(bodies) if b["joint"] == joint)
        names = tuple(dict.fromkeys(s["names"]))
        ft.append(FTSensor(name=names[0], joint=joint, parent_link=bodies[i]["parent_link"],
                           child_link=bodies[i]["link"], frame=s["frame"],
                           measure_direction=s["measure_direction"], body=i, E_sensor=s["E_sensor"],
                           aliases=names[1:]))
    ft.sort(key=lambda s: s.body)
    return dict(
        name=name, floating_base=floating_base, root_link=root, body_names=body_names,
        body_joint_names=tuple(b["joint"] for b in bodies),
        parents=np.array([b["parent"] for b in bodies], dtype=np.int64),
        joint_types=np.array([b["type"] for b in bodies], dtype=np.int64), joint_dofs=dofs,
        axes=np.array([b["axis"] for b in bodies]).reshape(-1, 3),
        E_tree=np.array([b["E"] for b in bodies]).reshape(-1, 3, 3),
        r_tree=np.array([b["r"] for b in bodies]).reshape(-1, 3),
        inertias=np.array([b["I"] for b in bodies]).reshape(-1, 6, 6),
        q_idx=q_idx, v_idx=v_idx, nq=nq, nv=nv,
        joint_names=tuple(b["joint"] for b, d in zip(bodies, dofs) if d == 1),
        frames=frames, ft_sensors=tuple(ft), body_parent_links=tuple(b["parent_link"] for b in bodies))


def _massless_subtree(model: dict) -> str | None:
    """Physics permits massless links only where the subtree below every joint still has inertia;
    otherwise the joint's acceleration is undetermined (H singular: inverse dynamics is still
    defined, forward dynamics is not). Mimic joints follow their driver and are exempt."""
    has_inertia = np.any(np.abs(model["inertias"]) > 0.0, axis=(1, 2))
    NB = len(model["parents"])
    for i in range(NB - 1, -1, -1):
        p = model["parents"][i]
        if p >= 0 and has_inertia[i]:
            has_inertia[p] = True
    mimic = {m.joint for m in model["mimic_joints"]}
    for i in range(NB):
        joint = model["body_joint_names"][i]
        if model["joint_dofs"][i] and not has_inertia[i] and joint not in mimic:
            return (f"joint '{joint}' moves link '{model['body_names'][i]}' and its descendants, "
                    f"which have no mass or inertia: its acceleration would be undetermined")
    return None
