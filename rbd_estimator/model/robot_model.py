"""The robot model: a kinematic tree in Featherstone's form, built once from ``robot_description``.

Numbering is *regular* (Featherstone §2; Nori §II): bodies are ``0 … NB-1`` in depth-first order,
every body after its parent; ``parents[i] == -1`` means body ``i`` hangs from the fixed base
(the world, or the URDF root link for a fixed-base robot). Joint ``i`` connects body ``i`` to
its parent. For body ``i`` the joint transform is ``ⁱX_λ(i) = X_J(q_i) X_T(i)`` with
``X_T(i) = plux(E_tree[i], r_tree[i])`` constant (the URDF joint origin).

Configuration and velocity follow pinocchio's layout: for a floating base
``q = [p (world, m), quat_xyzw, joints]`` and ``v = [v_lin, ω (base frame), joint rates]``;
for a fixed base ``q``/``v`` are the joints only, in :attr:`RobotModel.joint_names` order.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..spatial import plux
from .elements import FIXED, FREE, JOINT_TYPE_NAMES, PRISMATIC, REVOLUTE, Frame, FTSensor, MimicJoint  # noqa: F401
from .urdf import read_urdf

@dataclass(frozen=True, eq=False)
class RobotModel:
    """Constant description of a kinematic tree (the pinocchio ``Model`` counterpart).

    Per-body arrays have ``NB`` entries in regular numbering. Spatial inertias are 6×6 in body
    coordinates (kg, kg·m). Use :meth:`from_urdf` / :meth:`from_urdf_file` to build one.
    """
    name: str
    floating_base: bool
    root_link: str
    body_names: tuple[str, ...]
    body_joint_names: tuple[str, ...]
    parents: np.ndarray
    joint_types: np.ndarray
    joint_dofs: np.ndarray
    axes: np.ndarray
    E_tree: np.ndarray
    r_tree: np.ndarray
    inertias: np.ndarray
    q_idx: np.ndarray
    v_idx: np.ndarray
    nq: int
    nv: int
    joint_names: tuple[str, ...]
    frames: dict
    ft_sensors: tuple[FTSensor, ...]
    body_parent_links: tuple[str, ...] = ()
    mimic_joints: tuple[MimicJoint, ...] = ()
    #: the URDF's fixed joints (merged or kept as bodies): a joint state may list them (ignored)
    fixed_joints: tuple[str, ...] = ()
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    #: IMU sensors the URDF declares (``<sensor type="imu">``, in ``<gazebo reference="LINK">`` or
    #: top level with ``<parent link="LINK"/>``): name → :class:`Frame`
    imu_sensors: dict = field(default_factory=dict)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_urdf(cls, xml: str, floating_base: bool = False, keep_fixed=(), strict: bool = False) -> "RobotModel":
        """Build a model from a URDF string.

        Fixed joints are merged into their parent (mass, centre of mass and inertia combined
        exactly), except those carrying a force-torque sensor and those named in ``keep_fixed``.
        Raises :class:`ModelError` naming the offending link or joint for what makes the numbers
        meaningless (malformed XML, a broken tree, a negative or non-finite mass, a non-finite
        inertia). An inertia that no rigid body has (not positive semi-definite, violating the
        triangle inequality, rotational inertia on a massless link: common in CAD exports) is
        used as given, with one :class:`~rbd_estimator.errors.ModelWarning` per link naming the
        defect and its size; ``strict=True`` refuses it with :class:`ModelError` instead.
        """
        return cls(**read_urdf(xml, floating_base=floating_base, keep_fixed=keep_fixed, strict=strict))

    @classmethod
    def from_urdf_file(cls, path, floating_base: bool = False, keep_fixed=(), strict: bool = False) -> "RobotModel":
        """Like :meth:`from_urdf`, reading the file at ``path``."""
        try:
            with open(path, encoding="utf-8") as fh:
                xml = fh.read()
        except OSError as exc:
            raise ModelError(f"cannot read robot description file '{path}': {exc}") from exc
        return cls.from_urdf(xml, floating_base=floating_base, keep_fixed=keep_fixed, strict=strict)

    # ------------------------------------------------------------------ sizes and names
    @property
    def NB(self) -> int:
        """Number of bodies (Featherstone's N_B)."""
        return len(self.parents)

    @property
    def n_joints(self) -> int:
        """Number of actuated joints (entries of a joint-space vector)."""
        return len(self.joint_names)

    @property
    def X_tree(self) -> np.ndarray:
        """``X_T(i)`` as an ``(NB, 6, 6)`` array of Plücker transforms."""
        return np.array([plux(E, r) for E, r in zip(self.E_tree, self.r_tree)]).reshape(-1, 6, 6)

    def supports(self, bodies) -> np.ndarray:
        """The bodies of ``bodies`` and all their ancestors, ascending (the union of their
        supports κ(i), Featherstone §4.1.2)."""
        mark = np.zeros(self.NB, dtype=bool)
        for b in bodies:
            while b >= 0 and not mark[b]:
                mark[b] = True
                b = self.parents[b]
        return np.flatnonzero(mark).astype(np.int64)

    @property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """μ(i): children of every body."""
        kids = [[] for _ in range(self.NB)]
        for i, p in enumerate(self.parents):
            if p >= 0:
                kids[p].append(i)
        return tuple(tuple(k) for k in kids)

    @property
    def expanded_parents(self) -> np.ndarray:
        """Featherstone's expanded parent array (§2): one entry per row of H (length ``nv``),
        ``-1`` for a row whose joint hangs from the fixed base. Multi-DoF joints become chains;
        0-DoF (kept fixed) bodies are contracted into their parent."""
        last_row = np.full(self.NB, -1, dtype=np.int64)  # last H row of each body's ancestry
        lam = np.full(self.nv, -1, dtype=np.int64)
        for i in range(self.NB):
            p = self.parents[i]
            prev = last_row[p] if p >= 0 else -1
            for k in range(self.joint_dofs[i]):
                row = self.v_idx[i] + k
                lam[row] = prev
                prev = row
            last_row[i] = prev
        return lam

    @property
    def joint_v_index(self) -> np.ndarray:
        """Index in ``v`` of each actuated joint, in :attr:`joint_names` order."""
        return np.array([self.v_idx[self.body_joint_names.index(n)] for n in self.joint_names],
                        dtype=np.int64)

    def body_index(self, link: str) -> int:
        """Body index of a link that is a body of the model; ``ModelError`` otherwise."""
        try:
            return self.body_names.index(link)
        except ValueError:
            raise ModelError(f"link '{link}' is not a body of model '{self.name}' "
                             f"(it may have been merged into its parent; use frame('{link}'))") from None

    def frame(self, name: str) -> Frame:
        """The frame of a link (merged or not) or of a kept frame; ``ModelError`` if unknown."""
        try:
            return self.frames[name]
        except KeyError:
            raise ModelError(f"unknown frame or link '{name}' in model '{self.name}'"
                             f"{self.closest_frame(name)}") from None

    def closest_frame(self, name: str, also=()) -> str:
        """`` (did you mean 'X'?)`` with the link, frame (or ``also``) closest to the unknown ``name``,
        or ""."""
        close = difflib.get_close_matches(name, [*self.frames, *also], n=1)
        return f" (did you mean '{close[0]}'?)" if close else ""

    def imu_frame(self, name: str) -> Frame:
        """The frame of a link, a kept frame or a URDF IMU sensor; ``ModelError`` if unknown."""
        if name in self.frames:
            return self.frames[name]
        if name in self.imu_sensors:
            return self.imu_sensors[name]
        raise ModelError(f"unknown frame, link or IMU sensor '{name}' in model '{self.name}'"
                         + (f" (IMU sensors: {', '.join(self.imu_sensors)})" if self.imu_sensors else "")
                         + self.closest_frame(name, self.imu_sensors))

    def kept_joint_sensor(self, name: str, joint: str, frame: str = "child",
                          measure_direction: str = "child_to_parent") -> FTSensor:
        """An :class:`FTSensor` declared outside the URDF on kept fixed joint ``joint``."""
        if joint not in self.body_joint_names or self.joint_dofs[self.body_joint_names.index(joint)] != 0:
            raise ModelError(f"force-torque sensor '{name}': joint '{joint}' is not a kept fixed joint of model "
                             f"'{self.name}' (build the model with keep_fixed=['{joint}'])")
        i = self.body_joint_names.index(joint)
        return FTSensor(name=name, joint=joint, parent_link=self.body_parent_links[i], child_link=self.body_names[i],
                        frame=frame, measure_direction=measure_direction, body=i)

    def ft_sensor(self, name: str) -> FTSensor:
        """A force-torque sensor by its name, one of its aliases, or its joint name."""
        for s in self.ft_sensors:
            if name == s.name or name == s.joint or name in s.aliases:
                return s
        raise ModelError(f"unknown force-torque sensor '{name}' in model '{self.name}' "
                         f"(known: {', '.join(s.name for s in self.ft_sensors) or 'none'})")

    # ------------------------------------------------------------------ configurations
    def neutral_configuration(self) -> np.ndarray:
        """Zero joint positions; identity base orientation at the origin for a floating base."""
        q = np.zeros(self.nq)
        if self.floating_base:
            q[6] = 1.0
        return q

    def random_configuration(self, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
        """A random configuration: joints uniform in ``[-scale, scale]`` (rad or m), random base pose."""
        q = rng.uniform(-scale, scale, self.nq)
        if self.floating_base:
            quat = rng.normal(size=4)
            q[3:7] = quat / np.linalg.norm(quat)
        return q
