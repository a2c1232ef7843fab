"""Fuzzing ``robot_description``: mutated iCub, Talos and G1 URDFs either build a valid
:class:`RobotModel` or raise :class:`ModelError` — never any other exception, never a numpy
warning (a sign that garbage reached the arithmetic unchecked).

Every mutant is reproducible from the robot name and its seed (drawn from
``numpy.random.default_rng(2026)``); a failure lists them with the mutations applied. To replay
one: ``run(robot, seed)`` (or ``mutant(robot, seed)`` for the XML).
"""
from __future__ import annotations

import copy
import functools
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from oracle import urdf_xml
from rbd_estimator import ModelError, ModelWarning, RobotModel
from rbd_estimator.model.robot_model import FIXED, FREE, PRISMATIC, REVOLUTE

ROBOTS = ("icub", "talos", "g1")
MUTANTS_PER_ROBOT = 200                       # 600 in all
_ALL_SEEDS = [int(s) for s in np.random.default_rng(2026).integers(0, 2**63, MUTANTS_PER_ROBOT * len(ROBOTS))]
SEEDS = {r: _ALL_SEEDS[k * MUTANTS_PER_ROBOT:(k + 1) * MUTANTS_PER_ROBOT] for k, r in enumerate(ROBOTS)}

GARBAGE = ["abc", "nan", "NaN NaN NaN", "inf", "-inf", "", " ", "1e400", "-1e400", "1e308", "1e308 1e308 1e308",
           "-1e308 1e308 0", "1 2", "1 2 3 4", "0x10", "1,2,3", "\u221e", "-0", "nan 0 0", "0 0 inf", "1e-320",
           "12345678901234567890", "--1", "1e", "None", "true", "0 0 0", "\x7f", "\u00e9\u00e8", "<", "&amp;"]
BAD_MASS = ["nan", "-1", "-1e-9", "inf", "-inf", "0", "-0", "1e308", "1e400", "1e-300", "abc", ""]
BAD_INERTIA = ["nan", "-1", "-1e-3", "inf", "1e308", "1e400", "0", "abc", "", "1e10"]
JOINT_TYPES = ["planar", "floating", "spherical", "ball", "", "REVOLUTE", "fixed", "revolute", "prismatic",
               "continuous", "screw", "universal"]
INTERESTING = {"link", "joint", "inertial", "mass", "inertia", "origin", "axis", "parent", "child", "limit",
               "mimic", "gazebo", "sensor", "force_torque", "frame", "measure_direction", "pose"}


@functools.lru_cache(maxsize=None)
def base_tree(robot: str) -> ET.Element:
    """The robot's URDF parsed once; mutants are deep copies."""
    return ET.fromstring(urdf_xml(robot))


# ----------------------------------------------------------------------------- mutation operators
# Each takes (root, rng) and returns a description; text operators return (xml, description).
def pick(rng, seq, n=None):
    """Uniform choice from a list (numpy's choice would turn XML elements into arrays)."""
    if n is None:
        return seq[int(rng.integers(len(seq)))]
    return [seq[int(k)] for k in rng.choice(len(seq), n, replace=False)]


def _elements(root, rng, interesting=0.8):
    elems = [e for e in root.iter() if e is not root]
    if rng.random() < interesting:
        chosen = [e for e in elems if e.tag in INTERESTING]
        elems = chosen or elems
    return elems


def _parent_map(root):
    return {c: p for p in root.iter() for c in p}


def _joints(root):
    return root.findall("joint")


def _tree(root):
    """child link → (joint, parent link) of the original tree."""
    return {j.find("child").get("link"): (j, j.find("parent").get("link"))
            for j in _joints(root) if j.find("child") is not None and j.find("parent") is not None}


def op_delete_tag(root, rng):
    parents = _parent_map(root)
    e = pick(rng, _elements(root, rng))
    parents[e].remove(e)
    return f"delete <{e.tag} {dict(e.attrib)}>"


def op_duplicate_tag(root, rng):
    parents = _parent_map(root)
    e = pick(rng, _elements(root, rng))
    p = parents[e]
    p.insert(list(p).index(e) + 1, copy.deepcopy(e))
    return f"duplicate <{e.tag} {dict(e.attrib)}>"


def op_garbage_attribute(root, rng):
    elems = [e for e in _elements(root, rng) if e.attrib]
    e = pick(rng, elems)
    key = str(rng.choice(sorted(e.attrib)))
    value = str(rng.choice(GARBAGE)) if rng.random() < 0.8 else repr(float(rng.normal()) * float(f"1e{int(rng.integers(-5, 310))}"))
    e.set(key, value)
    return f"<{e.tag}> {key}={value!r}"


def op_delete_attribute(root, rng):
    elems = [e for e in _elements(root, rng) if e.attrib]
    e = pick(rng, elems)
    key = str(rng.choice(sorted(e.attrib)))
    del e.attrib[key]
    return f"<{e.tag}> delete attribute {key}"


def op_bad_mass(root, rng):
    masses = root.findall("link/inertial/mass")
    e = pick(rng, masses)
    value = str(rng.choice(BAD_MASS))
    e.set("value", value)
    return f"mass {value!r}"


def op_massless(root, rng):
    inertials = root.findall("link/inertial")
    e = pick(rng, inertials)
    e.find("mass").set("value", "0")
    for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        e.find("inertia").set(k, "0")
    return "massless link"


def op_bad_inertia(root, rng):
    e = pick(rng, root.findall("link/inertial/inertia"))
    kind = rng.integers(3)
    if kind == 0:
        key, value = str(rng.choice(["ixx", "ixy", "ixz", "iyy", "iyz", "izz"])), str(rng.choice(BAD_INERTIA))
        e.set(key, value)
        return f"inertia {key}={value!r}"
    if kind == 1:   # triangle inequality violated
        e.set("izz", repr(abs(float(e.get("ixx"))) + abs(float(e.get("iyy"))) + 1.0))
        for k in ("ixy", "ixz", "iyz"):
            e.set(k, "0")
        return "inertia violating the triangle inequality"
    e.set("ixy", repr(10.0 * (abs(float(e.get("ixx"))) + abs(float(e.get("iyy"))) + 1e-3)))  # indefinite
    return "indefinite inertia"


def op_extreme_scale(root, rng):
    """A valid but enormous (or tiny) link: mass and inertia scaled by 10^±k, k up to 320."""
    e = pick(rng, root.findall("link/inertial"))
    factor = float(f"1e{int(rng.integers(100, 320)) * (1 if rng.random() < 0.8 else -1)}")  # may be inf
    e.find("mass").set("value", repr(float(e.find("mass").get("value")) * factor))
    for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
        e.find("inertia").set(k, repr(float(e.find("inertia").get(k)) * factor))
    return f"link scaled by {factor:g}"


def op_far_origin(root, rng):
    """A joint or inertial origin far away (finite, but squares overflow)."""
    e = pick(rng, root.findall("joint/origin") + root.findall("link/inertial/origin"))
    xyz = " ".join(repr(float(v)) for v in rng.normal(size=3) * 10.0 ** int(rng.integers(100, 309)))
    e.set("xyz", xyz)
    return f"origin xyz={xyz}"


def op_cycle(root, rng):
    """Rewire a joint's child to an ancestor of its parent (or the root): two parents or a cycle."""
    tree = _tree(root)
    j = pick(rng, _joints(root))
    parent = j.find("parent").get("link")
    ancestors = [parent]
    while ancestors[-1] in tree and tree[ancestors[-1]][1] not in ancestors:   # stop at an earlier cycle
        ancestors.append(tree[ancestors[-1]][1])
    target = str(rng.choice(ancestors))
    j.find("child").set("link", target)
    return f"joint {j.get('name')} child -> ancestor {target}"


def op_two_parents(root, rng):
    j, k = pick(rng, _joints(root), 2)
    target = k.find("child").get("link")
    j.find("child").set("link", target)
    return f"joint {j.get('name')} child -> {target} (child of {k.get('name')})"


def op_swap_parent_child(root, rng):
    j = pick(rng, _joints(root))
    p, c = j.find("parent"), j.find("child")
    a, b = p.get("link"), c.get("link")
    p.set("link", b)
    c.set("link", a)
    return f"joint {j.get('name')} parent <-> child"


def op_missing_link(root, rng):
    j = pick(rng, _joints(root))
    role = str(rng.choice(["parent", "child"]))
    j.find(role).set("link", "no_such_link")
    return f"joint {j.get('name')} {role} -> missing link"


def op_delete_link(root, rng):
    links = root.findall("link")
    e = pick(rng, links)
    root.remove(e)
    return f"delete link {e.get('name')}"


def op_joint_type(root, rng):
    j = pick(rng, _joints(root))
    t = str(rng.choice(JOINT_TYPES))
    j.set("type", t)
    return f"joint {j.get('name')} type={t!r}"


def op_mimic(root, rng):
    j, k = pick(rng, _joints(root), 2)
    ET.SubElement(j, "mimic", {"joint": k.get("name"), "multiplier": "1"})
    return f"joint {j.get('name')} mimics {k.get('name')}"


def op_sensor(root, rng):
    """Force-torque sensor tags on random (possibly movable or missing) joints, with random fields."""
    names = [j.get("name") for j in _joints(root)] + ["no_such_joint"]
    target = str(rng.choice(names))
    host = ET.SubElement(root, "gazebo", {"reference": target}) if rng.random() < 0.5 else root
    s = ET.SubElement(host, "sensor", {"name": f"fuzz_ft_{rng.integers(100)}", "type": "force_torque"})
    if host is root:
        ET.SubElement(s, "parent", {"joint": target})
    ft = ET.SubElement(s, "force_torque")
    ET.SubElement(ft, "frame").text = str(rng.choice(["child", "parent", "sensor", "world", "", "CHILD"]))
    ET.SubElement(ft, "measure_direction").text = str(rng.choice(["child_to_parent", "parent_to_child", "x"]))
    if rng.random() < 0.5:
        ET.SubElement(s, "pose").text = str(rng.choice(["0 0 0 0.1 0.2 0.3", "0 0 0", "a b c d e f",
                                                        "0 0 0 nan 0 0", "", "1 2 3 4 5 6 7"]))
    return f"ft sensor on {target}"


def op_rename(root, rng):
    e = pick(rng, root.findall("link") + _joints(root))
    name = str(rng.choice(["", "base_link", e.get("name") + "_x", " ", "a b", "\u00e9"]))
    e.set("name", name)
    return f"<{e.tag}> {e.get('name')!r} renamed {name!r}"


def op_insert_junk(root, rng):
    parent = pick(rng, _elements(root, rng))
    junk = ET.SubElement(parent, str(rng.choice(["joint", "link", "inertial", "origin", "axis", "foo"])))
    if rng.random() < 0.5:
        junk.set("name", "junk")
    junk.text = str(rng.choice(["", "garbage", "1 2 3"]))
    return f"insert <{junk.tag}> in <{parent.tag}>"


def text_truncate(xml: str, rng):
    cut = int(rng.integers(0, len(xml)))
    return xml[:cut], f"truncate at {cut}/{len(xml)}"


def text_byte_flips(xml: str, rng):
    data = bytearray(xml.encode("utf-8"))
    n = int(rng.integers(1, 20))
    where = rng.integers(0, len(data), n)
    for k in where:
        data[k] ^= int(rng.integers(1, 256))
    return data.decode("utf-8", errors="replace"), f"{n} byte flips at {sorted(int(k) for k in where)[:5]}..."


def text_insert_nul(xml: str, rng):
    k = int(rng.integers(0, len(xml)))
    return xml[:k] + str(rng.choice(["\x00", "\ufffe", "]]>", "<!--", "&undefined;"])) + xml[k:], f"insert at {k}"


TREE_OPS = [op_delete_tag, op_duplicate_tag, op_garbage_attribute, op_delete_attribute, op_bad_mass, op_massless,
            op_bad_inertia, op_extreme_scale, op_far_origin, op_cycle, op_two_parents, op_swap_parent_child,
            op_missing_link, op_delete_link, op_joint_type, op_mimic, op_sensor, op_rename, op_insert_junk]
TEXT_OPS = [text_truncate, text_byte_flips, text_insert_nul]


def mutant(robot: str, seed: int):
    """``(xml, floating_base, description)`` of one mutant."""
    rng = np.random.default_rng(seed)
    root = copy.deepcopy(base_tree(robot))
    done = []
    for _ in range(int(rng.integers(1, 3))):
        op = TREE_OPS[int(rng.integers(len(TREE_OPS)))]
        try:
            done.append(f"{op.__name__}: {op(root, rng)}")
        except (AttributeError, IndexError, TypeError, ValueError, KeyError):
            done.append(f"{op.__name__}: not applicable after the previous mutation")
    xml = ET.tostring(root, encoding="unicode")
    if rng.random() < 0.2:
        op = TEXT_OPS[int(rng.integers(len(TEXT_OPS)))]
        xml, what = op(xml, rng)
        done.append(f"{op.__name__}: {what}")
    return xml, bool(rng.random() < 0.5), "; ".join(done)


# ----------------------------------------------------------------------------- invariants
def check_invariants(m: RobotModel, physical: bool = True) -> None:
    """``physical``: also require positive semi-definite inertias (a model built without a
    ModelWarning, or with strict=True)."""
    NB = m.NB
    assert NB >= 1
    assert m.parents.shape == (NB,) and all(-1 <= m.parents[i] < i for i in range(NB)), "not regular numbering"
    dof_of = {FIXED: 0, REVOLUTE: 1, PRISMATIC: 1, FREE: 6}
    assert [dof_of[int(t)] for t in m.joint_types] == list(m.joint_dofs)
    assert m.nv == int(m.joint_dofs.sum())
    assert m.nq == m.nv + (1 if m.floating_base else 0)
    assert (m.joint_types == FREE).sum() == (1 if m.floating_base else 0)
    if m.floating_base:
        assert m.joint_types[0] == FREE and m.parents[0] == -1
    assert len(m.joint_names) == int((m.joint_dofs == 1).sum()) == m.n_joints
    assert len(set(m.body_joint_names)) == NB and len(set(m.body_names)) == NB
    moving = m.joint_dofs > 0
    assert sorted(m.v_idx[moving]) == list(m.v_idx[moving]) and m.v_idx[moving][0] == 0
    assert np.all(m.v_idx[~moving] == -1)
    lam = m.expanded_parents
    assert lam.shape == (m.nv,) and all(-1 <= lam[k] < k for k in range(m.nv))
    assert np.all(np.isfinite(m.inertias)), "non-finite inertia"
    for i, I in enumerate(m.inertias):
        scale = max(1.0, float(np.max(np.abs(I))))
        assert np.max(np.abs(I - I.T)) <= 1e-12 * scale, f"inertia of body {m.body_names[i]} not symmetric"
        assert not physical or np.linalg.eigvalsh(I)[0] >= -1e-9 * scale, f"inertia of body {m.body_names[i]} not PSD"
    assert np.all(np.isfinite(m.E_tree)) and np.all(np.isfinite(m.r_tree))
    for E in m.E_tree:
        np.testing.assert_allclose(E @ E.T, np.eye(3), atol=1e-9)
    for i in np.flatnonzero((m.joint_types == REVOLUTE) | (m.joint_types == PRISMATIC)):
        assert abs(np.linalg.norm(m.axes[i]) - 1.0) < 1e-12
    for name, f in m.frames.items():
        assert -1 <= f.body < NB and np.all(np.isfinite(f.E)) and np.all(np.isfinite(f.r)), name
    for s in m.ft_sensors:
        assert m.joint_types[s.body] == FIXED and m.body_joint_names[s.body] == s.joint
        assert s.frame in ("child", "parent", "sensor")
        assert s.measure_direction in ("child_to_parent", "parent_to_child")
        assert np.all(np.isfinite(s.E_sensor))


def run(robot: str, seed: int):
    """``(outcome, description)``: outcome is 'ok', 'error' or a failure report."""
    xml, floating_base, what = mutant(robot, seed)
    return _outcome(robot, seed, xml, floating_base, what), what


def _outcome(robot, seed, xml, floating_base, what) -> str:
    """Both modes: the default (physically doubtful inertias load with a ModelWarning) and
    ``strict=True`` (they raise ModelError); only ModelError may escape either."""
    outcomes = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for strict in (False, True):
            mode = " strict" if strict else ""
            n_before = len(caught)
            try:
                model = RobotModel.from_urdf(xml, floating_base=floating_base, strict=strict)
            except ModelError as exc:
                if not str(exc).strip():
                    return f"{robot} seed={seed} [{what}]{mode}: empty ModelError message"
                outcomes.append("error")
            except Exception as exc:  # noqa: BLE001 - exactly what the fuzzer hunts for
                return f"{robot} seed={seed} [{what}]{mode}: {type(exc).__name__}: {exc}"
            else:
                warned = any(issubclass(w.category, ModelWarning) for w in caught[n_before:])
                if strict and warned:
                    return f"{robot} seed={seed} [{what}]{mode}: a ModelWarning instead of a ModelError"
                try:
                    check_invariants(model, physical=not warned)
                except AssertionError as exc:
                    return f"{robot} seed={seed} [{what}]{mode}: invariant violated: {exc}"
                outcomes.append("ok")
    outcome = outcomes[0]
    numeric = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    if numeric:
        return f"{robot} seed={seed} [{what}]: numpy warning {numeric[0].message}"
    return outcome


@pytest.mark.parametrize("robot", ROBOTS)
def test_unmutated_robot_builds(robot):
    for floating_base in (False, True):
        check_invariants(RobotModel.from_urdf(ET.tostring(base_tree(robot), encoding="unicode"),
                                              floating_base=floating_base))


@pytest.mark.parametrize("robot", ROBOTS)
def test_mutants_build_or_raise_model_error(robot):
    outcomes = {"ok": 0, "error": 0}
    failures, used = [], set()
    for seed in SEEDS[robot]:
        result, what = run(robot, seed)
        used.update(p.split(":")[0] for p in what.split("; ") if "not applicable" not in p)
        if result in outcomes:
            outcomes[result] += 1
        else:
            failures.append(result)
    assert not failures, f"{len(failures)} of {len(SEEDS[robot])} mutants failed:\n" + "\n".join(failures[:20])
    # the fuzzer must exercise every operator and both outcomes, or it tests little
    assert used == {op.__name__ for op in TREE_OPS + TEXT_OPS}, used
    assert outcomes["ok"] >= 10 and outcomes["error"] >= 50, outcomes
    assert sum(len(s) for s in SEEDS.values()) >= 500
