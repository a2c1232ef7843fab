"""RobotModel built from URDF: inertias, frames, numbering, sensors and input validation.

Pinocchio is the oracle (it parses the same URDF string with urdfdom and merges fixed joints the
same way); small hand-written URDFs are also checked against values derived by hand (parallel-axis
theorem, statics).

Decisions on link masses, tested below:

* ``<mass value="0"/>`` with an all-zero ``<inertia>`` (or a link without ``<inertial>``) is a
  *massless link*. It is allowed wherever physics permits: merged into its parent through a
  fixed joint, or on a movable joint whose subtree still has inertia. A movable joint whose whole
  subtree is massless has an undetermined acceleration, so it is rejected, naming the joint.
* A negative or non-finite mass (NaN, ±inf, or a value that overflows to inf such as ``1e400``)
  is an error naming the link; so is a zero mass with a non-zero rotational inertia.
* A rotational inertia must be finite, symmetric positive semi-definite and satisfy the triangle
  inequality on its principal moments (I1 + I2 >= I3); otherwise an error names the link.

Every invalid input raises :class:`ModelError` (a ``ValueError``) and nothing else; the message
names the offending link or joint.
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from oracle import Pair, rel_err, urdf_xml
from rbd_estimator import ModelError, ModelWarning, RobotModel
from rbd_estimator.dynamics import rnea
from rbd_estimator.dynamics.kinematics import joint_transform
from rbd_estimator.model.robot_model import FIXED, FREE, PRISMATIC, REVOLUTE
from rbd_estimator.spatial import inertia_from_mcI, rpy_to_E

ROBOTS = ["icub", "talos", "g1"]
TOL = 1e-9


# ----------------------------------------------------------------------------- helpers
def strip_sensors(xml: str) -> str:
    """The URDF without its force-torque sensor tags: every fixed joint is then merged."""
    xml = re.sub(r"<gazebo\b[^>]*>(?:(?!</gazebo>).)*?force_torque.*?</gazebo>", "", xml, flags=re.S)
    return re.sub(r"<sensor\b[^>]*force_torque[^>]*>.*?</sensor>", "", xml, flags=re.S)


def body_world_X(model: RobotModel, q) -> list:
    """``ⁱX_0`` (world → body i motion transform) for every body."""
    X0 = []
    for i in range(model.NB):
        Xi = joint_transform(model, i, q)
        p = model.parents[i]
        X0.append(Xi @ X0[p] if p >= 0 else Xi)
    return X0


def X_to_pose(X):
    """``(R, p)`` of a frame from its ``ᶠX_0 = plux(E, r)``: R = Eᵀ (frame → world), p = r."""
    E = X[:3, :3]
    S = -E.T @ X[3:, :3]
    return E.T, np.array([S[2, 1], S[0, 2], S[1, 0]])


def frame_world_X(model: RobotModel, X0: list, name: str):
    f = model.frame(name)
    return f.X @ X0[f.body] if f.body >= 0 else f.X


def folded_inertias(model: RobotModel) -> dict:
    """Movable joint name → spatial inertia of its body plus every body hanging from it through
    kept fixed joints (FT sensors, keep_fixed), in the body's coordinates: what pinocchio, which
    merges every fixed joint, stores as ``model.inertias[joint]``."""
    I = model.inertias.copy()
    XT = model.X_tree
    for i in range(model.NB - 1, -1, -1):
        p = model.parents[i]
        if model.joint_types[i] == FIXED and p >= 0:
            I[p] += XT[i].T @ I[i] @ XT[i]
    return {model.body_joint_names[i]: I[i] for i in range(model.NB) if model.joint_types[i] != FIXED}


def assert_inertia_equal(I_ours, pin_inertia, what):
    m, c, Ic = inertia_from_mcI(I_ours)
    assert abs(m - pin_inertia.mass) <= TOL * max(1.0, pin_inertia.mass), what
    if pin_inertia.mass > 0:
        np.testing.assert_allclose(c, pin_inertia.lever, atol=1e-9, err_msg=what)
    np.testing.assert_allclose(Ic, pin_inertia.inertia, atol=1e-9, err_msg=what)


def hand_combine(parts):
    """Mass, centre of mass and rotational inertia about it of rigid parts ``(m, c, Ic)`` (all in
    one frame): the parallel-axis theorem, ``Ic = Σ Ic_k + m_k (|d_k|² 1 − d_k d_kᵀ)``."""
    m = sum(p[0] for p in parts)
    c = sum(p[0] * np.asarray(p[1]) for p in parts) / m
    Ic = np.zeros((3, 3))
    for mk, ck, Ik in parts:
        d = np.asarray(ck) - c
        Ic += Ik + mk * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, Ic


def inertia_tag(I):
    return (f'<inertia ixx="{float(I[0, 0])!r}" ixy="{float(I[0, 1])!r}" ixz="{float(I[0, 2])!r}" '
            f'iyy="{float(I[1, 1])!r}" iyz="{float(I[1, 2])!r}" izz="{float(I[2, 2])!r}"/>')


# ----------------------------------------------------------------------------- (a) inertias vs pinocchio
@pytest.mark.parametrize("robot", ROBOTS)
def test_total_mass_com_and_centroidal_inertia_match_pinocchio(robot):
    p = Pair(urdf_xml(robot), floating_base=True)
    m, pm, pd = p.model, p.pin_model, p.pin_data
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = m.random_configuration(rng)
        qp = p.q_to_pin(q)
        X0 = body_world_X(m, q)
        I_world = sum(X.T @ I @ X for X, I in zip(X0, m.inertias))
        mass, com, Ic = inertia_from_mcI(I_world)
        assert abs(mass - pin.computeTotalMass(pm)) < 1e-9 * mass
        np.testing.assert_allclose(com, pin.centerOfMass(pm, pd, qp), atol=1e-9)
        pin.ccrba(pm, pd, qp, np.zeros(pm.nv))
        np.testing.assert_allclose(Ic, pd.Ig.inertia, atol=1e-9)


@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("floating_base", [False, True])
def test_body_inertias_match_pinocchio(robot, floating_base):
    """Pinocchio merges every fixed joint; we keep FT-sensor joints. Compare both the sensor-free
    model body by body and the full model with kept bodies folded into their movable ancestor."""
    xml = urdf_xml(robot)
    for source in (xml, strip_sensors(xml)):
        p = Pair(source, floating_base=floating_base)
        m, pm = p.model, p.pin_model
        ours = folded_inertias(m)
        for jid in range(1, pm.njoints):
            assert_inertia_equal(ours[pm.names[jid]], pm.inertias[jid], f"{robot}: joint {pm.names[jid]}")
    stripped = RobotModel.from_urdf(strip_sensors(xml), floating_base=floating_base)
    assert stripped.ft_sensors == ()
    assert np.all(stripped.joint_types != FIXED)  # nothing kept: one body per movable joint
    if robot == "icub":
        assert RobotModel.from_urdf(xml).NB == stripped.NB + 6 - (1 if floating_base else 0)


# ----------------------------------------------------------------------------- (b) frames vs pinocchio
@pytest.mark.parametrize("robot", ROBOTS)
@pytest.mark.parametrize("floating_base", [False, True])
def test_link_frame_placements_match_pinocchio(robot, floating_base):
    xml = urdf_xml(robot)
    p = Pair(xml, floating_base=floating_base)
    m, pm, pd = p.model, p.pin_model, p.pin_data
    links = {e.get("name") for e in ET.fromstring(xml).findall("link")}
    assert set(m.frames) == links
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = m.random_configuration(rng)
        pin.framesForwardKinematics(pm, pd, p.q_to_pin(q))
        X0 = body_world_X(m, q)
        for name in m.frames:
            assert pm.existFrame(name, pin.FrameType.BODY), name
            oMf = pd.oMf[pm.getFrameId(name, pin.FrameType.BODY)]
            R, pos = X_to_pose(frame_world_X(m, X0, name))
            np.testing.assert_allclose(R, oMf.rotation, atol=1e-9, err_msg=name)
            np.testing.assert_allclose(pos, oMf.translation, atol=1e-9, err_msg=name)


# ----------------------------------------------------------------------------- (c) small hand-written robot
SMALL = dict(
    base=(3.0, [0.01, 0.02, -0.03], [0.1, 0.2, 0.3], [[0.03, 0.001, -0.002], [0.001, 0.04, 0.003], [-0.002, 0.003, 0.05]]),
    carriage=(1.5, [0.0, 0.05, 0.0], [0.3, -0.2, 0.1], [[0.01, 0.0, 0.001], [0.0, 0.02, 0.0], [0.001, 0.0, 0.015]]),
    arm=(0.8, [0.2, 0.0, 0.0], [0.0, 0.0, 0.7], [[0.002, 0.0, 0.0], [0.0, 0.012, 0.0005], [0.0, 0.0005, 0.011]]),
    tool=(0.3, [0.05, 0.01, 0.0], [0.0, 0.3, 0.0], [[0.001, 0.0001, 0.0], [0.0001, 0.0008, 0.0], [0.0, 0.0, 0.0012]]),
    hand=(0.2, [0.0, 0.02, 0.01], [0.2, 0.0, -0.4], [[0.0004, 0.0, 0.0], [0.0, 0.0003, 0.0], [0.0, 0.0, 0.0005]]),
    finger=(0.05, [0.0, 0.0, 0.03], [0.0, 0.0, 0.0], [[2e-5, 0.0, 0.0], [0.0, 2e-5, 0.0], [0.0, 0.0, 1e-5]]),
    head=(1.2, [0.0, 0.0, 0.1], [0.5, 0.5, 0.0], [[0.006, 0.0, 0.0], [0.0, 0.005, 0.0], [0.0, 0.0, 0.004]]),
)
# joint: (type, parent, child, xyz, rpy, axis)
SMALL_JOINTS = dict(
    slide=("prismatic", "base", "carriage", [0.1, 0.0, 0.2], [0.0, 0.0, 0.5], "0 0 1"),
    mount_fixed=("fixed", "carriage", "mount", [0.0, 0.1, 0.05], [0.2, 0.0, 0.0], None),
    spin=("continuous", "mount", "arm", [0.0, 0.0, 0.1], [0.0, 0.4, 0.0], "1 1 0"),
    tool_fixed=("fixed", "arm", "tool", [0.4, 0.0, 0.0], [0.5, 0.0, 0.0], None),
    wrist_kept=("fixed", "arm", "hand", [0.4, 0.05, 0.0], [0.0, 0.0, -0.3], None),
    finger_joint=("revolute", "hand", "finger", [0.0, 0.03, 0.0], [0.0, 0.0, 0.0], "0 1 0"),
    yaw=("revolute", "base", "yaw_link", [0.0, 0.0, 0.4], [0.0, 0.0, 0.0], "0 0 1"),
    pitch=("revolute", "yaw_link", "head", [0.0, 0.0, 0.05], [0.0, 0.0, 0.0], "0 1 0"),
)


def small_urdf() -> str:
    """Prismatic and continuous joints, inertial origins with rpy, a link without <inertial>
    ('mount') merged through a fixed joint, an explicitly massless link (mass 0, zero inertia:
    'yaw_link') on a revolute joint whose child has mass, a merged fixed joint ('tool_fixed') and
    a fixed joint to keep ('wrist_kept')."""
    out = ['<?xml version="1.0"?>', '<robot name="small">']
    for name, (mass, xyz, rpy, I) in SMALL.items():
        out.append(f'<link name="{name}"><inertial><origin xyz="{" ".join(map(repr, xyz))}" '
                   f'rpy="{" ".join(map(repr, rpy))}"/><mass value="{mass!r}"/>{inertia_tag(np.array(I))}'
                   f'</inertial><visual><geometry><box size="0.1 0.1 0.1"/></geometry></visual></link>')
    out.append('<link name="mount"/>')
    out.append('<link name="yaw_link"><inertial><mass value="0"/>'
               '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>')
    for name, (jtype, parent, child, xyz, rpy, axis) in SMALL_JOINTS.items():
        out.append(f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
                   f'<origin xyz="{" ".join(map(repr, xyz))}" rpy="{" ".join(map(repr, rpy))}"/>'
                   + (f'<axis xyz="{axis}"/><limit effort="10" velocity="1" lower="-1" upper="1"/>' if axis else "")
                   + '</joint>')
    out.append("</robot>")
    return "\n".join(out)


def part(link, R=np.eye(3), p=np.zeros(3)):
    """``(m, c, Ic)`` of a SMALL link's inertial, expressed in a frame where the link frame has
    rotation R and origin p (inertial-origin rpy rotates the tensor: Ic = R_o I R_oᵀ)."""
    mass, xyz, rpy, I = SMALL[link]
    Ro = rpy_to_E(rpy)
    return mass, p + R @ np.asarray(xyz), R @ Ro @ np.asarray(I) @ Ro.T @ R.T


def test_small_robot_structure_and_hand_derived_inertias():
    m = RobotModel.from_urdf(small_urdf(), keep_fixed=["wrist_kept"])
    assert m.name == "small" and m.root_link == "base" and not m.floating_base
    assert set(m.body_names) == {"carriage", "arm", "hand", "finger", "yaw_link", "head"}
    assert set(m.joint_names) == {"slide", "spin", "finger_joint", "yaw", "pitch"}
    assert set(m.body_joint_names) == set(m.joint_names) | {"wrist_kept"}
    assert (m.nq, m.nv, m.n_joints) == (5, 5, 5)
    b = {name: m.body_index(name) for name in m.body_names}
    J = dict(zip(m.body_joint_names, range(m.NB)))
    assert m.joint_types[J["slide"]] == PRISMATIC
    assert m.joint_types[J["spin"]] == REVOLUTE and m.joint_types[J["yaw"]] == REVOLUTE
    assert m.joint_types[J["wrist_kept"]] == FIXED and m.joint_dofs[J["wrist_kept"]] == 0
    np.testing.assert_allclose(m.axes[b["arm"]], np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0))
    assert [m.body_names[p] if p >= 0 else None for p in m.parents] == [
        {"carriage": None, "arm": "carriage", "hand": "arm", "finger": "hand",
         "yaw_link": None, "head": "yaw_link"}[n] for n in m.body_names]
    with pytest.raises(ModelError, match="mount"):
        m.body_index("mount")            # merged: a frame, not a body
    with pytest.raises(ModelError, match="nowhere"):
        m.frame("nowhere")
    assert set(m.frames) == set(SMALL) | {"mount", "yaw_link"}

    # Frames of merged links: ˡX_body = plux(E, r), E = Rᵀ, r = origin (chained through 'mount').
    R_mount, p_mount = rpy_to_E(SMALL_JOINTS["mount_fixed"][4]), np.array(SMALL_JOINTS["mount_fixed"][3])
    f = m.frame("mount")
    assert f.body == b["carriage"]
    np.testing.assert_allclose(f.E, R_mount.T, atol=1e-15)
    np.testing.assert_allclose(f.r, p_mount, atol=1e-15)
    R_tool, p_tool = rpy_to_E(SMALL_JOINTS["tool_fixed"][4]), np.array(SMALL_JOINTS["tool_fixed"][3])
    assert m.frame("tool").body == b["arm"]
    np.testing.assert_allclose(m.frame("tool").E, R_tool.T, atol=1e-15)
    np.testing.assert_allclose(m.frame("tool").r, p_tool, atol=1e-15)
    assert m.frame("base").body == -1
    # The spin joint hangs from 'mount': X_T composes the two origins.
    R_spin, p_spin = rpy_to_E(SMALL_JOINTS["spin"][4]), np.array(SMALL_JOINTS["spin"][3])
    np.testing.assert_allclose(m.E_tree[b["arm"]], (R_mount @ R_spin).T, atol=1e-15)
    np.testing.assert_allclose(m.r_tree[b["arm"]], p_mount + R_mount @ p_spin, atol=1e-15)

    # Inertias by hand: arm + tool merged (parallel-axis theorem); others alone, rpy-rotated.
    expected = {
        "arm": hand_combine([part("arm"), part("tool", R_tool, p_tool)]),
        "carriage": part("carriage"),
        "hand": part("hand"), "finger": part("finger"), "head": part("head"),
        "yaw_link": (0.0, np.zeros(3), np.zeros((3, 3))),
    }
    for name, (mass, c, Ic) in expected.items():
        mm, cc, II = inertia_from_mcI(m.inertias[b[name]])
        assert mm == pytest.approx(mass, abs=1e-14), name
        np.testing.assert_allclose(cc, c, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(II, Ic, atol=1e-14, err_msg=name)
        np.testing.assert_allclose(m.inertias[b[name]], m.inertias[b[name]].T, atol=1e-15, err_msg=name)
    assert inertia_from_mcI(m.inertias[b["arm"]])[0] == pytest.approx(1.1)

    # Floating base: the root link's own inertia (inertial origin with rpy) is body 0.
    mf = RobotModel.from_urdf(small_urdf(), floating_base=True, keep_fixed=["wrist_kept"])
    assert mf.joint_types[0] == FREE and mf.body_names[0] == "base" and mf.body_joint_names[0] == "root_joint"
    mass, c, Ic = inertia_from_mcI(mf.inertias[0])
    ref = part("base")
    assert mass == ref[0]
    np.testing.assert_allclose(c, ref[1], atol=1e-15)
    np.testing.assert_allclose(Ic, ref[2], atol=1e-15)


def test_small_robot_statics_by_hand():
    """At rest, the prismatic joint (vertical axis) carries the weight of everything above it."""
    m = RobotModel.from_urdf(small_urdf(), keep_fixed=["wrist_kept"])
    q = m.neutral_configuration()
    tau = rnea(m, q, np.zeros(m.nv), np.zeros(m.nv))
    lifted = sum(SMALL[k][0] for k in ("carriage", "arm", "tool", "hand", "finger"))
    assert tau[m.v_idx[m.body_joint_names.index("slide")]] == pytest.approx(lifted * 9.81, rel=1e-14)
    # The yaw axis is vertical: gravity exerts no torque about it in any posture.
    rng = np.random.default_rng(3)
    for _ in range(3):
        tau = rnea(m, m.random_configuration(rng), np.zeros(m.nv), np.zeros(m.nv))
        assert abs(tau[m.v_idx[m.body_joint_names.index("yaw")]]) < 1e-12


class SmallPair(Pair):
    """:class:`oracle.Pair` (which maps a continuous joint's ``θ`` to pinocchio's ``(cos θ, sin θ)``)
    with joint angles drawn over ±3 rad, beyond a half turn."""

    def random_state(self, rng):
        m = self.model
        return m.random_configuration(rng, scale=3.0), rng.normal(size=m.nv), rng.normal(size=m.nv)


@pytest.mark.parametrize("floating_base", [False, True])
@pytest.mark.parametrize("keep", [(), ("wrist_kept",), ("wrist_kept", "tool_fixed", "mount_fixed")])
def test_small_robot_dynamics_match_pinocchio(floating_base, keep):
    p = SmallPair(small_urdf(), floating_base=floating_base, keep_fixed=keep)
    m, pm, pd = p.model, p.pin_model, p.pin_data
    assert pm.nqs[pm.getJointId("spin")] == 2 and m.joint_dofs[m.body_joint_names.index("spin")] == 1
    assert m.NB == 5 + len(keep) + (1 if floating_base else 0)   # one body per movable or kept joint
    assert pin.computeTotalMass(pm) == pytest.approx(
        sum(v[0] for v in SMALL.values()) - (0.0 if floating_base else SMALL["base"][0]), rel=1e-14)
    rng = np.random.default_rng(4)
    for _ in range(5):
        q, dq, ddq = p.random_state(rng)
        qp, dqp, ddqp = p.q_to_pin(q), p.v_to_pin(dq), p.v_to_pin(ddq)
        tau = rnea(m, q, dq, ddq)
        assert rel_err(tau, p.v_from_pin(pin.rnea(pm, pd, qp, dqp, ddqp))) < 1e-12
        # M column by column from RNEA (zero velocity, gravity cancelled by the bias term).
        zero = np.zeros(m.nv)
        bias = rnea(m, q, zero, zero)
        M = np.column_stack([rnea(m, q, zero, e) - bias for e in np.eye(m.nv)])
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert rel_err(M, p.M_from_pin(Mp)) < 1e-12
        assert np.all(np.linalg.eigvalsh(M) > 0)


# ----------------------------------------------------------------------------- (d) numbering
def test_icub_regular_numbering_and_expanded_parents():
    p = Pair(urdf_xml("icub"), floating_base=True)
    m, pm = p.model, p.pin_model
    lam = m.parents
    assert lam[0] == -1 and m.joint_types[0] == FREE
    assert all(-1 <= lam[i] < i for i in range(m.NB))
    assert all(lam[i] >= 0 for i in range(1, m.NB))    # one tree: everything hangs from the base
    # depth-first: every subtree is a contiguous range of bodies
    for i in range(m.NB):
        sub = [j for j in range(m.NB) if i in ancestors(lam, j) or j == i]
        assert sub == list(range(i, i + len(sub)))
    assert list(m.joint_names) == list(pm.names[2:])  # same order as urdfdom / pinocchio
    assert m.nq == 7 + m.n_joints and m.nv == 6 + m.n_joints == pm.nv and m.nq == pm.nq
    assert list(m.q_idx[m.joint_dofs > 0]) == [0] + list(range(7, m.nq))
    assert list(m.v_idx[m.joint_dofs > 0]) == [0] + list(range(6, m.nv))

    lam_x = m.expanded_parents
    assert lam_x.shape == (m.nv,)
    assert list(lam_x[:6]) == [-1, 0, 1, 2, 3, 4]   # the free joint: a chain of six rows
    assert all(lam_x[k] < k for k in range(m.nv)) and all(lam_x[6:] >= 0)
    row_body = np.repeat(np.arange(m.NB), m.joint_dofs)
    for i in range(1, m.NB):
        if m.joint_dofs[i] == 0:
            continue
        a = lam[i]
        while m.joint_dofs[a] == 0:                   # kept FT bodies are contracted
            a = lam[a]
        parent_row = lam_x[m.v_idx[i]]
        assert row_body[parent_row] == a and parent_row == m.v_idx[a] + m.joint_dofs[a] - 1
        assert row_body[parent_row] in ancestors(lam, i)
        # pinocchio's parent joint is the same body
        assert pm.names[pm.parents[pm.getJointId(m.body_joint_names[i])]] == m.body_joint_names[a]

    # fixed base: the same arrays minus the base
    mf = RobotModel.from_urdf(urdf_xml("icub"))
    assert list(mf.joint_names) == list(m.joint_names)
    assert list(mf.expanded_parents) == [k - 6 if k >= 6 else -1 for k in lam_x[6:]]


def ancestors(lam, i) -> set:
    out = set()
    while lam[i] >= 0:
        i = lam[i]
        out.add(i)
    return out


# ----------------------------------------------------------------------------- (e) iCub FT sensors
ICUB_FT = {  # name: (alias from <gazebo>, parent link, child link)
    "l_leg_ft_sensor": ("left_leg_ft", "l_hip_2", "l_hip_3"),
    "r_leg_ft_sensor": ("right_leg_ft", "r_hip_2", "r_hip_3"),
    "l_foot_ft_sensor": ("left_foot_ft", "l_ankle_2", "l_foot"),
    "r_foot_ft_sensor": ("right_foot_ft", "r_ankle_2", "r_foot"),
    "l_arm_ft_sensor": ("left_arm_ft", "l_shoulder_3", "l_upper_arm"),
    "r_arm_ft_sensor": ("right_arm_ft", "r_shoulder_3", "r_upper_arm"),
}


@pytest.mark.parametrize("floating_base", [False, True])
def test_icub_force_torque_sensors(floating_base):
    m = RobotModel.from_urdf(urdf_xml("icub"), floating_base=floating_base)
    assert {s.name for s in m.ft_sensors} == set(ICUB_FT)
    assert [s.body for s in m.ft_sensors] == sorted(s.body for s in m.ft_sensors)
    for s in m.ft_sensors:
        alias, parent, child = ICUB_FT[s.name]
        assert s.joint == s.name
        assert (s.parent_link, s.child_link) == (parent, child)
        assert s.frame == "child" and s.measure_direction == "child_to_parent"
        assert s.aliases == (alias,)
        np.testing.assert_array_equal(s.E_sensor, np.eye(3))
        assert m.body_names[s.body] == child and m.body_joint_names[s.body] == s.joint
        assert m.joint_types[s.body] == FIXED and m.joint_dofs[s.body] == 0
        assert m.frame(parent).body == m.parents[s.body]
        assert m.ft_sensor(alias) is s and m.ft_sensor(s.name) is s and m.ft_sensor(s.joint) is s
        assert s.joint not in m.joint_names
    with pytest.raises(ModelError, match="no_such_ft"):
        m.ft_sensor("no_such_ft")


# ----------------------------------------------------------------------------- (f) sensor tags
def two_links(joint_type="fixed", extra="", jname="sensor_joint"):
    return f"""<robot name="ft">
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="b"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="c"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
    <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  <joint name="{jname}" type="{joint_type}"><parent link="b"/><child link="c"/><origin xyz="0 0 0.1" rpy="0.1 0 0"/>
    <axis xyz="1 0 0"/><limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
  {extra}
</robot>"""


def test_sensor_frame_and_pose_rotation():
    rpy = [0.3, -0.2, 1.1]
    gz = f"""<gazebo reference="sensor_joint"><sensor name="wrist_ft" type="force_torque">
      <pose>0.01 0.02 0.03 {rpy[0]} {rpy[1]} {rpy[2]}</pose>
      <force_torque><frame>sensor</frame><measure_direction>parent_to_child</measure_direction></force_torque>
    </sensor></gazebo>"""
    m = RobotModel.from_urdf(two_links(extra=gz))
    (s,) = m.ft_sensors
    assert (s.name, s.joint, s.parent_link, s.child_link) == ("wrist_ft", "sensor_joint", "b", "c")
    assert (s.frame, s.measure_direction, s.aliases) == ("sensor", "parent_to_child", ())
    np.testing.assert_allclose(s.E_sensor, rpy_to_E(rpy).T, atol=1e-15)   # child → sensor coordinates
    assert m.ft_sensor("sensor_joint") is s

    # A top-level <sensor> with <origin rpy> and frame 'parent'; the gazebo name becomes an alias.
    top = """<sensor name="top_ft" type="force_torque"><parent joint="sensor_joint"/><origin rpy="0 0 0.5"/>
      <force_torque><frame>parent</frame></force_torque></sensor>"""
    m = RobotModel.from_urdf(two_links(extra=gz + top))
    (s,) = m.ft_sensors
    assert s.name == "top_ft" and s.aliases == ("wrist_ft",) and s.frame == "parent"
    assert s.measure_direction == "child_to_parent"
    np.testing.assert_allclose(s.E_sensor, rpy_to_E([0, 0, 0.5]).T, atol=1e-15)


@pytest.mark.parametrize("extra, match", [
    ('<gazebo reference="j1"><sensor name="bad_ft" type="force_torque"/></gazebo>', "j1"),
    ('<sensor name="bad_ft" type="force_torque"><parent joint="j1"/></sensor>', "j1"),
    ('<gazebo reference="ghost_joint"><sensor name="bad_ft" type="force_torque"/></gazebo>', "ghost_joint"),
    ('<sensor name="bad_ft" type="force_torque"><parent joint="ghost_joint"/></sensor>', "ghost_joint"),
    ('<sensor name="bad_ft" type="force_torque"/>', "bad_ft"),
    ('<gazebo reference="sensor_joint"><sensor name="bad_ft" type="force_torque">'
     '<force_torque><frame>world</frame></force_torque></sensor></gazebo>', "bad_ft"),
    ('<gazebo reference="sensor_joint"><sensor name="bad_ft" type="force_torque">'
     '<force_torque><measure_direction>up</measure_direction></force_torque></sensor></gazebo>', "bad_ft"),
    ('<gazebo reference="sensor_joint"><sensor name="bad_ft" type="force_torque">'
     '<pose>0 0 0 nan 0 0</pose></sensor></gazebo>', "bad_ft"),
    ('<gazebo reference="sensor_joint"><sensor name="bad_ft" type="force_torque">'
     '<pose>0 0 0</pose></sensor></gazebo>', "bad_ft"),
])
def test_bad_sensor_tags(extra, match):
    with pytest.raises(ModelError, match=match):
        RobotModel.from_urdf(two_links(extra=extra))


def test_sensor_on_movable_joint_is_an_error():
    gz = '<gazebo reference="sensor_joint"><sensor name="ft" type="force_torque"/></gazebo>'
    with pytest.raises(ModelError, match="sensor_joint"):
        RobotModel.from_urdf(two_links("revolute", gz))
    with pytest.raises(ModelError, match="j1"):
        RobotModel.from_urdf(two_links(), keep_fixed=["j1"])
    with pytest.raises(ModelError, match="not_a_joint"):
        RobotModel.from_urdf(two_links(), keep_fixed=["not_a_joint"])
    # non-force-torque sensors are ignored
    imu = '<gazebo reference="sensor_joint"><sensor name="imu" type="imu"/></gazebo>'
    assert RobotModel.from_urdf(two_links(extra=imu)).ft_sensors == ()


# ----------------------------------------------------------------------------- (g) bad input
INERTIA = '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/>'


def link(name, mass="1", inertia=INERTIA, origin=""):
    return f'<link name="{name}"><inertial>{origin}<mass value="{mass}"/>{inertia}</inertial></link>'


def joint(name, parent, child, jtype="revolute", extra=""):
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/><child link="{child}"/>'
            f'<axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/>{extra}</joint>')


def robot(*parts):
    return '<robot name="bad">\n' + "\n".join(parts) + "\n</robot>"


def chain(bad_link="", bad_joint=""):
    """base — j_ok → upper — (bad_joint) …: a valid two-link robot with one part replaced."""
    return robot(link("base"), link("upper"), joint("j_ok", "base", "upper"), bad_link, bad_joint)


BAD = {
    # malformed XML: the message shows the offending line
    "malformed_xml": ('<robot name="bad">\n<link name="base"/>\n<link name="broken_link" <inertial/></link>\n</robot>',
                      "broken_link"),
    "truncated_xml": (chain(link("cut_link"), joint("cut_joint", "upper", "cut_link"))[:-40], "line"),
    "not_robot": ("<model name='x'/>", "<model>"),
    "empty": ("   ", "empty"),
    "two_parents": (chain(link("orphan"), joint("j_a", "base", "orphan") + joint("j_b", "upper", "orphan")), "orphan"),
    "cycle": (robot(link("base"), link("loop_a"), link("loop_b"),
                    joint("j_ab", "loop_a", "loop_b"), joint("j_ba", "loop_b", "loop_a"),
                    joint("j_root", "base", "loop_a")), "loop_a"),
    "pure_cycle": (robot(link("ring_a"), link("ring_b"), joint("ring_ab", "ring_a", "ring_b"),
                         joint("ring_ba", "ring_b", "ring_a")), "ring_"),
    "cycle_island": (chain(link("ring_a"), link("ring_b")).replace("</robot>", joint("ring_ab", "ring_a", "ring_b")
                                                                     + joint("ring_ba", "ring_b", "ring_a") + "</robot>"),
                     "ring_a, ring_b"),
    "self_loop": (chain(bad_joint=joint("j_self", "upper", "upper")), "j_self"),
    "missing_child": (chain(bad_joint=joint("j_missing", "upper", "ghost_link")), "j_missing.*ghost_link"),
    "missing_parent": (chain(link("hanging"), joint("j_hang", "ghost_link", "hanging")), "j_hang.*ghost_link"),
    "two_roots": (chain(link("island")), "island"),
    "duplicate_link": (chain(link("upper")), "upper"),
    "duplicate_joint": (chain(link("tip"), joint("j_ok", "upper", "tip")), "j_ok"),
    "mass_nan": (chain(link("nan_link", "nan"), joint("j", "upper", "nan_link")), "nan_link"),
    "mass_inf": (chain(link("inf_link", "inf"), joint("j", "upper", "inf_link")), "inf_link"),
    "mass_overflow": (chain(link("huge_link", "1e400"), joint("j", "upper", "huge_link")), "huge_link"),
    "mass_negative": (chain(link("neg_link", "-2"), joint("j", "upper", "neg_link")), "neg_link"),
    "mass_tiny_negative": (chain(link("neg_link", "-1e-12"), joint("j", "upper", "neg_link")), "neg_link"),
    "mass_letters": (chain(link("word_link", "heavy"), joint("j", "upper", "word_link")), "word_link"),
    "mass_empty": (chain(link("blank_link", ""), joint("j", "upper", "blank_link")), "blank_link"),
    "inertia_nan": (chain(link("nan_I", inertia=INERTIA.replace('iyy="0.1"', 'iyy="nan"')),
                          joint("j", "upper", "nan_I")), "nan_I"),
    "inertia_huge": (chain(link("big_I", inertia=INERTIA.replace('0.1', '1e308').replace('ixy="0"', 'ixy="1e308"')),
                           joint("j", "upper", "big_I")), "big_I"),
    "inertia_missing_attribute": (chain(link("short_I", inertia='<inertia ixx="1"/>'),
                                        joint("j", "upper", "short_I")), "short_I"),
    "inertia_letters": (chain(link("word_I", inertia=INERTIA.replace('izz="0.1"', 'izz="big"')),
                              joint("j", "upper", "word_I")), "word_I"),
    "inertial_origin_nan": (chain(link("off_link", origin='<origin xyz="nan 0 0"/>'), joint("j", "upper", "off_link")),
                            "off_link"),
    "planar_joint": (chain(link("tip"), joint("j_planar", "upper", "tip", "planar")), "j_planar"),
    "floating_joint": (chain(link("tip"), joint("j_float", "upper", "tip", "floating")), "j_float"),
    "unknown_joint_type": (chain(link("tip"), joint("j_ball", "upper", "tip", "ball")), "j_ball"),
    "axis_zero": (chain(link("tip"), joint("j_axis", "upper", "tip").replace('"0 0 1"', '"0 0 0"')), "j_axis"),
    "axis_nan": (chain(link("tip"), joint("j_axis", "upper", "tip").replace('"0 0 1"', '"nan 0 1"')), "j_axis"),
    "axis_letters": (chain(link("tip"), joint("j_axis", "upper", "tip").replace('"0 0 1"', '"x y z"')), "j_axis"),
    "axis_empty": (chain(link("tip"), joint("j_axis", "upper", "tip").replace('"0 0 1"', '""')), "j_axis"),
    "origin_inf": (chain(link("tip"), joint("j_origin", "upper", "tip", extra='<origin xyz="inf 0 0"/>')), "j_origin"),
    "origin_letters": (chain(link("tip"), joint("j_origin", "upper", "tip", extra='<origin rpy="a b c"/>')),
                       "j_origin"),
    "merged_inertia_overflow": (chain(link("far_tip"), joint("j_far", "upper", "far_tip", "fixed",
                                                            '<origin xyz="1e300 0 0"/>')), "far_tip"),
    "joint_without_child": (chain(bad_joint='<joint name="j_nochild" type="fixed"><parent link="upper"/></joint>'),
                            "j_nochild"),
    "link_without_name": (chain('<link/>'), "link"),
}


# Physically doubtful but computable (issue 10): a ModelWarning by default, ModelError with strict=True.
PHYSICAL = {
    "zero_mass_with_inertia": (chain(link("ghost_mass", "0"), joint("j", "upper", "ghost_mass")), "ghost_mass"),
    "inertia_negative": (chain(link("neg_I", inertia=INERTIA.replace('ixx="0.1"', 'ixx="-0.1"')),
                               joint("j", "upper", "neg_I")), "neg_I"),
    "inertia_not_psd": (chain(link("odd_I", inertia=INERTIA.replace('ixy="0"', 'ixy="0.5"')),
                              joint("j", "upper", "odd_I")), "odd_I"),
    "inertia_triangle": (chain(link("flat_I", inertia=INERTIA.replace('izz="0.1"', 'izz="0.3"')),
                               joint("j", "upper", "flat_I")), "flat_I"),
}


@pytest.mark.parametrize("case", sorted(PHYSICAL))
def test_doubtful_physics_warns_or_with_strict_raises_naming_the_culprit(case):
    xml, pattern = PHYSICAL[case]
    with pytest.raises(ModelError, match=pattern):
        RobotModel.from_urdf(xml, strict=True)
    with pytest.warns(ModelWarning, match=pattern):
        m = RobotModel.from_urdf(xml)
    assert np.all(np.isfinite(m.inertias))


@pytest.mark.parametrize("extra, mult, offset", [('<mimic joint="j_ok"/>', 1.0, 0.0),
                                                 ('<mimic joint="j_ok" multiplier="-2" offset="0.1"/>', -2.0, 0.1)])
def test_mimic_joint_is_a_coupled_coordinate(extra, mult, offset):
    xml = chain(link("tip"), joint("j_mimic", "upper", "tip", extra=extra))
    m = RobotModel.from_urdf(xml)
    assert [(x.joint, x.driver, x.multiplier, x.offset) for x in m.mimic_joints] == [("j_mimic", "j_ok", mult, offset)]
    from rbd_estimator.model.mimic import mimic_map
    mm = mimic_map(m)
    assert "j_mimic" not in mm.joint_names and mm.nv == m.nv - 1
    q = mm.q(np.arange(1.0, mm.nq + 1))
    k = mm.joint_names.index("j_ok")
    assert q[m.q_idx[m.body_joint_names.index("j_mimic")]] == pytest.approx(mult * (k + 1) + offset)


def test_mimic_of_a_missing_joint_is_independent_with_a_warning():
    xml = chain(link("tip"), joint("j_mimic", "upper", "tip", extra='<mimic joint="nowhere"/>'))
    with pytest.warns(ModelWarning, match="j_mimic.*nowhere"):
        m = RobotModel.from_urdf(xml)
    assert not m.mimic_joints and "j_mimic" in m.joint_names
    with pytest.raises(ModelError, match="j_mimic"):
        RobotModel.from_urdf(xml, strict=True)


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_raises_model_error_naming_the_culprit(case):
    xml, pattern = BAD[case]
    with pytest.raises(ModelError, match=pattern) as info:
        RobotModel.from_urdf(xml)
    assert type(info.value) is ModelError and isinstance(info.value, ValueError)
    assert not isinstance(info.value.__cause__, ModelError)


def test_massless_link_decisions():
    """Mass exactly 0 with a zero inertia is a massless link: allowed on a fixed joint (merged) and
    on a movable joint whose subtree has mass; rejected on a movable joint whose subtree is massless."""
    zero = '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>'
    ok = robot(link("base"), link("hub", "0", zero), link("tip"), link("label", "0", zero),
               joint("j_hub", "base", "hub"), joint("j_tip", "hub", "tip"), joint("j_label", "tip", "label", "fixed"))
    m = RobotModel.from_urdf(ok)
    assert m.joint_names == ("j_hub", "j_tip")
    assert np.all(m.inertias[m.body_index("hub")] == 0.0)
    assert m.frame("label").body == m.body_index("tip")
    # negative zero is still zero
    assert RobotModel.from_urdf(ok.replace('<mass value="0"/>', '<mass value="-0"/>')).NB == 2


@pytest.mark.parametrize("xml", [
    robot(link("base"), link("leaf_link", "0", '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>'),
          joint("leaf_joint", "base", "leaf_link")),
    robot(link("base"), '<link name="leaf_link"/>', joint("leaf_joint", "base", "leaf_link", "prismatic")),
    robot(link("base"), '<link name="leaf_link"/>', '<link name="leaf_tip"/>', joint("leaf_joint", "base", "leaf_link"),
          joint("leaf_fix", "leaf_link", "leaf_tip", "fixed")),
])
def test_massless_subtree_on_movable_joint_warns_or_with_strict_raises(xml):
    with pytest.raises(ModelError, match="leaf_joint"):
        RobotModel.from_urdf(xml, strict=True)
    with pytest.warns(ModelWarning, match="leaf_joint"):
        RobotModel.from_urdf(xml)


def test_no_movable_joint_gives_an_empty_fixed_model_as_pinocchio_does():
    xml = robot(link("base"), link("plate"), joint("weld", "base", "plate", "fixed"))
    with pytest.warns(ModelWarning, match="no degree of freedom"):
        fixed = RobotModel.from_urdf(xml)
    assert (fixed.NB, fixed.nq, fixed.nv) == (0, 0, 0)
    m = RobotModel.from_urdf(xml, floating_base=True)
    assert (m.NB, m.nq, m.nv, m.joint_names) == (1, 7, 6, ())
    assert inertia_from_mcI(m.inertias[0])[0] == pytest.approx(2.0)


# ----------------------------------------------------------------------------- (i) files
def test_from_urdf_file(tmp_path):
    missing = tmp_path / "nowhere" / "robot.urdf"
    with pytest.raises(ModelError, match="robot.urdf"):
        RobotModel.from_urdf_file(missing)
    with pytest.raises(ModelError):
        RobotModel.from_urdf_file(tmp_path)          # a directory
    path = tmp_path / "small.urdf"
    path.write_text(small_urdf(), encoding="utf-8")
    m = RobotModel.from_urdf_file(path, floating_base=True, keep_fixed=["wrist_kept"])
    assert m.floating_base and "hand" in m.body_names
    assert RobotModel.from_urdf_file(os.fspath(path)).nv == 5   # str paths work as well
