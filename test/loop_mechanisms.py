"""Robots with actuation loops for tests and benchmarks (Chignoli et al. §VI, Figs. 9 and 13).

Not a test module. Every generator returns ``(urdf_xml, loops)`` where ``loops`` is the nested
mapping read by :meth:`rbd_estimator.model.loops.LoopConfig.from_dict` (the schema of
``config/*_loops.yaml``). Rotors are extra bodies declared in ``loops`` (they are not in the URDF:
the URDF is the "unconstrained" system of §VI-C and the loops add the rotors back).

* :func:`mechanism_chains`: ``b`` branches of ``d`` sub-mechanisms in series (Fig. 9): link and
  rotor (2 bodies per cluster), parallel belt transmission (4) or four-bar (3).
* :func:`mit_leg`: the MIT Humanoid leg of §VI-C (hip yaw, roll, pitch with rotors; knee and ankle
  through a two-stage belt transmission), with the inertial parameters published with the
  paper's open-source library (generalized_rbda, ``MIT_Humanoid.hpp``).
* :func:`four_bar_knee`: a hip-roll joint, a knee driven by a crank-rocker four-bar whose crank is
  geared to a rotor, and an ankle with its own rotor.
* :func:`rotor_chain`: a spatial chain, each joint driven by a rotor on the previous link.
* :func:`humanoid_rotors`: a rotor geared to every revolute joint of a URDF (``urdf/humanoid.urdf``).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

SMALL_ROTOR = dict(mass=0.05, axial=1.6841e-4, radial=1.084e-4)   # MIT Humanoid rotors (kg, kg·m²)
LARGE_ROTOR = dict(mass=0.1, axial=5.548e-4, radial=3.443e-4)


# ---------------------------------------------------------------------------- URDF text
def _fmt(v) -> str:
    return " ".join(f"{float(x):.10g}" for x in np.atleast_1d(v))


def link(name: str, mass: float = 0.0, com=(0, 0, 0), inertia=None) -> str:
    """A URDF link; ``inertia`` is a 3 × 3 tensor about the com (or ``None`` for a massless link)."""
    if mass == 0.0 and inertia is None:
        return f'  <link name="{name}"/>\n'
    I = np.asarray(inertia, dtype=float)
    return (f'  <link name="{name}">\n    <inertial>\n      <origin xyz="{_fmt(com)}" rpy="0 0 0"/>\n'
            f'      <mass value="{mass:.10g}"/>\n'
            f'      <inertia ixx="{I[0, 0]:.10g}" ixy="{I[0, 1]:.10g}" ixz="{I[0, 2]:.10g}" '
            f'iyy="{I[1, 1]:.10g}" iyz="{I[1, 2]:.10g}" izz="{I[2, 2]:.10g}"/>\n    </inertial>\n  </link>\n')


def joint(name: str, parent: str, child: str, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=(0, 0, 1),
          kind: str = "revolute") -> str:
    limit = '\n    <limit lower="-3.14" upper="3.14" effort="100" velocity="30"/>' if kind == "revolute" else ""
    ax = f'\n    <axis xyz="{_fmt(axis)}"/>' if kind != "fixed" else ""
    return (f'  <joint name="{name}" type="{kind}">\n    <parent link="{parent}"/>\n    <child link="{child}"/>\n'
            f'    <origin xyz="{_fmt(xyz)}" rpy="{_fmt(rpy)}"/>{ax}{limit}\n  </joint>\n')


def robot(name: str, parts: list[str]) -> str:
    return f'<?xml version="1.0"?>\n<robot name="{name}">\n' + "".join(parts) + "</robot>\n"


def box_inertia(mass: float, sx: float, sy: float, sz: float) -> np.ndarray:
    return mass / 12.0 * np.diag([sy * sy + sz * sz, sx * sx + sz * sz, sx * sx + sy * sy])


def rotor_inertia(axis, axial: float, radial: float) -> np.ndarray:
    """Inertia of a rotor symmetric about ``axis``: ``radial (1 − a aᵀ) + axial a aᵀ``."""
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return radial * (np.eye(3) - np.outer(a, a)) + axial * np.outer(a, a)


def rotor_body(parent: str, xyz, axis, rotor=SMALL_ROTOR, rpy=(0, 0, 0)) -> dict:
    """The ``body.<name>`` entry of an extra rotor body."""
    I = rotor_inertia(axis, rotor["axial"], rotor["radial"])
    return dict(parent=parent, xyz=[float(x) for x in xyz], rpy=[float(x) for x in rpy],
                axis=[float(x) for x in axis], mass=rotor["mass"], com=[0.0, 0.0, 0.0],
                inertia=[float(I[a, b]) for a, b in ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))])


def loops_dict(bodies: dict, loops: dict) -> dict:
    return {"bodies": list(bodies), "body": bodies, "loops": list(loops), "loop": loops}


# ---------------------------------------------------------------------------- §VI-A chains
def mechanism_chains(kind: str, depth: int, branches: int = 1):
    """``branches`` chains of ``depth`` sub-mechanisms in series on a fixed base (Fig. 9).

    ``kind``: ``'link_and_rotor'`` (link L, rotor R on the previous link), ``'belt'`` (links L1, L2
    in series, rotors R1, R2 on the previous link, nested belt ratios) or ``'four_bar'`` (input
    link I and output link O on the previous output link, coupler C on I; the next sub-mechanism
    hangs from O). Joint axes alternate so the chains are spatial.
    """
    parts, bodies, loops = [link("base")], {}, {}
    axes = [(0, 1, 0), (1, 0, 0), (0, 0, 1)]
    for b in range(branches):
        prev = "base"
        for d in range(depth):
            ax = axes[(d + b) % 3] if kind != "four_bar" else (0, 1, 0)
            tag = f"b{b}_d{d}"
            off = (0.05 * (b - (branches - 1) / 2), 0.0, -0.05) if d == 0 else (0.0, 0.0, -0.3)
            if kind == "link_and_rotor":
                parts += [link(f"L_{tag}", 1.0, (0, 0, -0.15), box_inertia(1.0, 0.04, 0.04, 0.3)),
                          joint(f"j_{tag}", prev, f"L_{tag}", off, axis=ax)]
                bodies[f"R_{tag}"] = rotor_body(prev, np.add(off, (0.0, 0.0, 0.02)), ax)
                loops[f"drive_{tag}"] = dict(type="link_and_rotor", joint=f"j_{tag}", rotor=f"R_{tag}",
                                             gear_ratio=6.0 + d % 3)
                prev = f"L_{tag}"
            elif kind == "belt":
                ax2 = axes[(d + b + 1) % 3]
                parts += [link(f"L1_{tag}", 1.0, (0, 0, -0.15), box_inertia(1.0, 0.04, 0.04, 0.3)),
                          joint(f"j1_{tag}", prev, f"L1_{tag}", off, axis=ax),
                          link(f"L2_{tag}", 0.8, (0, 0, -0.12), box_inertia(0.8, 0.04, 0.04, 0.25)),
                          joint(f"j2_{tag}", f"L1_{tag}", f"L2_{tag}", (0, 0, -0.3), axis=ax2)]
                bodies[f"R1_{tag}"] = rotor_body(prev, np.add(off, (0.0, 0.03, 0.0)), ax)
                bodies[f"R2_{tag}"] = rotor_body(prev, np.add(off, (0.0, -0.03, 0.0)), ax2)
                loops[f"belt_{tag}"] = dict(type="belt_transmission", joints=[f"j1_{tag}", f"j2_{tag}"],
                                            rotors=[f"R1_{tag}", f"R2_{tag}"], gear_ratios=[6.0, 6.0],
                                            belt_ratios=[2.0, 2.0, 1.0])
                prev = f"L2_{tag}"
            elif kind == "four_bar":
                parts += [link(f"I_{tag}", 0.2, (0.02, 0, 0), box_inertia(0.2, 0.04, 0.02, 0.02)),
                          joint(f"ji_{tag}", prev, f"I_{tag}", np.add(off, (0, 0, 0.25 if d else 0.0)), axis=ax),
                          link(f"C_{tag}", 0.1, (0.005, 0, -0.125), box_inertia(0.1, 0.01, 0.01, 0.25)),
                          joint(f"jc_{tag}", f"I_{tag}", f"C_{tag}", (0.04, 0, 0), axis=ax),
                          link(f"O_{tag}", 1.0, (0.0, 0, -0.15), box_inertia(1.0, 0.04, 0.04, 0.3)),
                          joint(f"jo_{tag}", prev, f"O_{tag}", np.add(off, (0, 0, -0.25 if d == 0 else 0.0)),
                                axis=ax)]
                loops[f"fourbar_{tag}"] = dict(type="four_bar", input=f"ji_{tag}", coupler=f"jc_{tag}",
                                               output=f"jo_{tag}", closure_coupler_xyz=[0.01, 0.0, -0.25],
                                               closure_output_xyz=[0.05, 0.0, 0.0])
                prev = f"O_{tag}"
            else:
                raise ValueError(f"unknown sub-mechanism {kind!r}")
    return robot(f"{kind}_chains_{depth}x{branches}", parts), loops_dict(bodies, loops)


def transmission_branches(depth: int, locality: int, eta: float = 2.0):
    """Chignoli Fig. 11a: two branches of ``depth`` links on a fixed base and one transmission
    constraint at depth ``locality`` = d_l, eq. (66): ``Σ_{i≤d_l} q_{1,i} = η Σ_{i≤d_l} q_{2,i}``,
    explicit with ``q_{2,1}`` dependent (a ``linear_transmission``); the loop has 2 d_l bodies."""
    parts = [link("base")]
    axes = [(0, 1, 0), (1, 0, 0), (0, 0, 1)]
    for b in range(2):
        prev = "base"
        for d in range(depth):
            off = (0.1 * (2 * b - 1), 0.0, -0.05) if d == 0 else (0.0, 0.0, -0.3)
            parts += [link(f"L{b}_{d}", 1.0, (0, 0, -0.15), box_inertia(1.0, 0.04, 0.04, 0.3)),
                      joint(f"j{b}_{d}", prev, f"L{b}_{d}", off, axis=axes[(d + b) % 3])]
            prev = f"L{b}_{d}"
    independent = [f"j0_{i}" for i in range(locality)] + [f"j1_{i}" for i in range(1, locality)]
    ratios = [1.0 / eta] * locality + [-1.0] * (locality - 1)     # q_{2,1} = Σ q_{1,i} / η − Σ_{i≥2} q_{2,i}
    loops = {"transmission": dict(type="linear_transmission", independent=independent, dependent=["j1_0"],
                                  ratio_matrix=ratios)}
    return robot(f"transmission_{depth}_{locality}", parts), loops_dict({}, loops)


# ---------------------------------------------------------------------------- §VI-C MIT Humanoid leg
def _sym(xx, xy, xz, yy, yz, zz) -> np.ndarray:
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def mit_leg():
    """The MIT Humanoid leg on a fixed pelvis (§VI-C): numbers from generalized_rbda's
    ``MIT_Humanoid.hpp`` (masses in kg, positions in m, inertias about the com in kg·m²).
    The URDF has no rotors: it is the "unconstrained" system; ``loops`` adds the five rotors with
    three link-and-rotor pairs (hip yaw, roll, pitch; gear 6) and the knee/ankle belt transmission
    (gear 6, belt ratios 2 and (2, 1): ``q_knee_rotor = 12 q_knee``, ``q_ankle_rotor = 12 (q_knee + q_ankle)``)."""
    pitch_rz, pitch_rx = -0.174533, 0.436332
    pitch_ry = -(pitch_rx + pitch_rz)
    parts = [
        link("pelvis"),
        link("hip_rz_link", 0.84563, (-0.064842, -0.000036, -0.063090),
             _sym(0.0015373, 0.0000011, 0.0005578, 0.0014252, 0.0000024, 0.0012028)),
        joint("hip_rz", "pelvis", "hip_rz_link", (-0.00565, -0.082, -0.05735), (0, pitch_rz, 0), (0, 0, 1)),
        link("hip_rx_link", 1.20868, (0.067232, -0.013018, 0.0001831),
             _sym(0.0017535, -0.0000063, -0.000080, 0.003338, -0.000013, 0.0019927)),
        joint("hip_rx", "hip_rz_link", "hip_rx_link", (-0.06435, 0.0, -0.07499), (0, pitch_rx, 0), (1, 0, 0)),
        link("thigh", 2.64093, (0.0132054, 0.0269864, -0.096021),
             _sym(0.0243761, 0.0000996, 0.0006548, 0.0259015, 0.0026713, 0.0038929)),
        joint("hip_ry", "hip_rx_link", "thigh", (0.071, 0.0018375, 0.0), (0, pitch_ry, 0), (0, 1, 0)),
        link("shank", 0.35435, (0.00528, 0.0014762, -0.13201),
             _sym(0.003051, 0.0, 0.0000873, 0.003033, 0.0000393, 0.0002529)),
        joint("knee", "thigh", "shank", (0.0, 0.0, -0.267), axis=(0, 1, 0)),
        link("foot", 0.280951, (0.022623, 0.0, -0.012826),
             _sym(0.0000842, 0.0, -0.0000488, 0.0007959, 0.0, 0.0007681)),
        joint("ankle", "shank", "foot", (0.0, 0.0, -0.2785), axis=(0, 1, 0)),
    ]
    bodies = {
        "hip_rz_rotor": rotor_body("pelvis", (-0.00842837, -0.082, -0.041593), (0, 0, 1), SMALL_ROTOR,
                                   (0, pitch_rz, 0)),
        "hip_rx_rotor": rotor_body("hip_rz_link", (-0.0827, 0.0, -0.066436), (1, 0, 0), SMALL_ROTOR, (0, pitch_rx, 0)),
        "hip_ry_rotor": rotor_body("hip_rx_link", (0.071, 0.024, 0.0), (0, 1, 0), LARGE_ROTOR, (0, pitch_ry, 0)),
        "knee_rotor": rotor_body("thigh", (0.013, -0.0497, -0.0178), (0, 1, 0), LARGE_ROTOR),
        "ankle_rotor": rotor_body("thigh", (0.0, 0.0, 0.0), (0, 1, 0), SMALL_ROTOR),
    }
    loops = {
        "hip_rz_drive": dict(type="link_and_rotor", joint="hip_rz", rotor="hip_rz_rotor", gear_ratio=6.0),
        "hip_rx_drive": dict(type="link_and_rotor", joint="hip_rx", rotor="hip_rx_rotor", gear_ratio=6.0),
        "hip_ry_drive": dict(type="link_and_rotor", joint="hip_ry", rotor="hip_ry_rotor", gear_ratio=6.0),
        "knee_ankle_belt": dict(type="belt_transmission", joints=["knee", "ankle"],
                                rotors=["knee_rotor", "ankle_rotor"], gear_ratios=[6.0, 6.0],
                                belt_ratios=[2.0, 2.0, 1.0]),
    }
    return robot("mit_humanoid_leg", parts), loops_dict(bodies, loops)


# ---------------------------------------------------------------------------- four-bar knee
def four_bar_knee():
    """Hip roll (rotor, gear 6) → thigh; knee by a crank-rocker four-bar (crank 0.04 m geared 10:1
    to a rotor on the thigh, coupler 0.2502 m, rocker 0.05 m on the shank, ground 0.25 m: Grashof,
    the crank turns fully); ankle with its own rotor (gear 6) on the shank."""
    parts = [
        link("pelvis"),
        link("thigh", 2.0, (0.0, 0.0, -0.15), box_inertia(2.0, 0.08, 0.08, 0.3)),
        joint("hip_roll", "pelvis", "thigh", (0.0, 0.0, -0.1), axis=(1, 0, 0)),
        link("crank", 0.2, (0.02, 0.0, 0.0), box_inertia(0.2, 0.05, 0.02, 0.02)),
        joint("knee_crank", "thigh", "crank", (0.0, 0.0, -0.05), axis=(0, 1, 0)),
        link("coupler", 0.1, (0.005, 0.0, -0.125), box_inertia(0.1, 0.01, 0.01, 0.25)),
        joint("knee_coupler", "crank", "coupler", (0.04, 0.0, 0.0), axis=(0, 1, 0)),
        link("shank", 1.0, (0.0, 0.0, -0.15), box_inertia(1.0, 0.05, 0.05, 0.3)),
        joint("knee", "thigh", "shank", (0.0, 0.0, -0.3), axis=(0, 1, 0)),
        link("foot", 0.5, (0.03, 0.0, -0.03), box_inertia(0.5, 0.2, 0.08, 0.05)),
        joint("ankle", "shank", "foot", (0.0, 0.0, -0.3), axis=(0, 1, 0)),
    ]
    bodies = {
        "hip_roll_rotor": rotor_body("pelvis", (0.0, 0.0, -0.1), (1, 0, 0), LARGE_ROTOR),
        "knee_crank_rotor": rotor_body("thigh", (0.0, 0.02, -0.05), (0, 1, 0), LARGE_ROTOR),
        "ankle_rotor": rotor_body("shank", (0.0, 0.0, -0.25), (0, 1, 0), SMALL_ROTOR),
    }
    loops = {
        "hip_drive": dict(type="link_and_rotor", joint="hip_roll", rotor="hip_roll_rotor", gear_ratio=6.0),
        "crank_drive": dict(type="link_and_rotor", joint="knee_crank", rotor="knee_crank_rotor", gear_ratio=10.0),
        "knee_linkage": dict(type="four_bar", input="knee_crank", coupler="knee_coupler", output="knee",
                             closure_coupler_xyz=[0.01, 0.0, -0.25], closure_output_xyz=[0.05, 0.0, 0.0]),
        "ankle_drive": dict(type="link_and_rotor", joint="ankle", rotor="ankle_rotor", gear_ratio=6.0),
    }
    return robot("four_bar_knee", parts), loops_dict(bodies, loops)


# ---------------------------------------------------------------------------- rotor chain
def rotor_chain():
    """Four links on a fixed base with axes z, y, x, y, each driven by a rotor on the previous
    link; the third rotor drives its joint through a bevel gear (rotor axis ⊥ joint axis) and the
    second turns the other way (negative ratio)."""
    specs = [("j1", (0, 0, 1), (0, 0, 0.05), 6.0, (0, 0, 1)),
             ("j2", (0, 1, 0), (0.0, 0.0, 0.3), -9.0, (0, 1, 0)),
             ("j3", (1, 0, 0), (0.0, 0.05, 0.3), 7.5, (0, 0, 1)),
             ("j4", (0, 1, 0), (0.0, 0.0, 0.25), 12.0, (0, 1, 0))]
    parts, bodies, loops, prev = [link("base")], {}, {}, "base"
    for k, (name, axis, xyz, ratio, rotor_axis) in enumerate(specs):
        child = f"link{k + 1}"
        parts += [link(child, 1.5 - 0.3 * k, (0.01, 0.0, 0.12), box_inertia(1.5 - 0.3 * k, 0.05, 0.06, 0.25)),
                  joint(name, prev, child, xyz, axis=axis)]
        bodies[f"{name}_rotor"] = rotor_body(prev, np.add(xyz, (0.02, 0.0, -0.03)), rotor_axis,
                                             LARGE_ROTOR if k < 2 else SMALL_ROTOR)
        loops[f"{name}_drive"] = dict(type="link_and_rotor", joint=name, rotor=f"{name}_rotor", gear_ratio=ratio)
        prev = child
    return robot("rotor_chain", parts), loops_dict(bodies, loops)


# ---------------------------------------------------------------------------- rotors on a URDF
def humanoid_rotors(xml: str, gear: dict | None = None, default_gear: float = 6.0) -> dict:
    """A rotor on every revolute joint of ``xml``: on the joint's parent link, at the joint origin,
    coaxial with the joint (large rotors on hips, knees and shoulders, small elsewhere)."""
    gear = gear or {}
    bodies, loops = {}, {}
    for j in ET.fromstring(xml).findall("joint"):
        if j.get("type") not in ("revolute", "continuous"):
            continue
        name = j.get("name")
        origin = j.find("origin")
        xyz = [float(x) for x in (origin.get("xyz", "0 0 0") if origin is not None else "0 0 0").split()]
        rpy = [float(x) for x in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
        axis = [float(x) for x in j.find("axis").get("xyz").split()] if j.find("axis") is not None else [1, 0, 0]
        big = any(s in name for s in ("hip", "knee", "shoulder"))
        bodies[f"{name}_rotor"] = rotor_body(j.find("parent").get("link"), xyz, axis,
                                             LARGE_ROTOR if big else SMALL_ROTOR, rpy)
        loops[f"{name}_drive"] = dict(type="link_and_rotor", joint=name, rotor=f"{name}_rotor",
                                      gear_ratio=float(gear.get(name, 9.0 if ("knee" in name or "elbow" in name)
                                                                else default_gear)))
    return loops_dict(bodies, loops)


# ---------------------------------------------------------------------------- §VI-C experiment
def reflected_inertia_matrix(tree) -> np.ndarray:
    """The rotors' inertia reflected to the independent coordinates, ``Σ_rotors S_rᵀ I_r S_r``
    (nvy × nvy) at the reference configuration, ``S_r`` being the rotor's rows of the cluster's
    ``S_k`` (eq. 15). A rotor turning at ``Σ_j G_rj ẏ_j`` contributes ``G_rj G_rk I_r,axis`` to
    entry (j, k): off the diagonal where one rotor is driven by two joints (the belt's ankle rotor)."""
    from rbd_estimator.dynamics.clusters import cluster_joint
    urdf_bodies = tree.urdf_model.NB
    out = np.zeros((tree.nvy, tree.nvy))
    q = tree.q_reference.copy()
    for c in tree.clusters:
        S = cluster_joint(tree, c.index, q).S
        for m, i in enumerate(c.bodies):
            if i >= urdf_bodies:                                    # an extra body: a rotor
                Sr = S[6 * m:6 * m + 6]
                out[np.ix_(c.y_v, c.y_v)] += Sr.T @ tree.model.inertias[i] @ Sr
    return out


def reflected_inertia(tree) -> np.ndarray:
    """Diagonal "armature" of the approximate system (§VI-C, MuJoCo's armature): the diagonal of
    :func:`reflected_inertia_matrix`, ``Σ_r G_rj² I_r,axis`` for every independent coordinate j."""
    return np.diag(reflected_inertia_matrix(tree)).copy()


def rotor_torque_errors(tree, A: float = 0.5, omega: float = 1.5, samples: int = 400) -> dict:
    """§VI-C: every joint follows ``q = A sin(2π ω t)`` (rad, ω in Hz as in the paper's formula)
    over one period; torques from the constraint-embedding RNEA on the original system (rotors and
    loops), the tree RNEA on the unconstrained system (the URDF without rotors) and the tree RNEA
    plus the diagonal reflected inertia (the approximate system). Returns, per independent joint,
    the RMS of the two errors and the peak torque (N·m), and the torque histories."""
    from rbd_estimator.dynamics import rnea
    from rbd_estimator.dynamics.ce_rnea import ce_rnea
    urdf = tree.urdf_model
    assert not urdf.floating_base and tuple(urdf.joint_names) == tree.independent_joint_names
    arm = reflected_inertia(tree)
    t = np.arange(samples) / (samples * omega)
    w = 2 * np.pi * omega
    tau = {"original": [], "unconstrained": [], "approximate": []}
    for tk in t:
        y = np.full(tree.ny, A * np.sin(w * tk))
        dy = np.full(tree.nvy, A * w * np.cos(w * tk))
        ddy = np.full(tree.nvy, -A * w * w * np.sin(w * tk))
        tau["original"].append(ce_rnea(tree, y, dy, ddy))
        t_tree = rnea(urdf, y, dy, ddy)
        tau["unconstrained"].append(t_tree)
        tau["approximate"].append(t_tree + arm * ddy)
    tau = {k: np.array(v) for k, v in tau.items()}
    rms = {k: np.sqrt(np.mean((tau[k] - tau["original"]) ** 2, axis=0)) for k in ("unconstrained", "approximate")}
    return dict(joints=tree.independent_joint_names, rms_unconstrained=rms["unconstrained"],
                rms_approximate=rms["approximate"], peak=np.max(np.abs(tau["original"]), axis=0),
                armature=arm, t=t, tau=tau)
