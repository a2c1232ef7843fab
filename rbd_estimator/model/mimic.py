"""Mimic joints as a constant linear transmission between pinocchio's mimic layout and the tree.

A URDF ``<mimic>`` joint is a coupled coordinate, ``q_m = multiplier · q_d + offset``: the
independent coordinates ``y`` are the tree's coordinates without the mimic joints (pinocchio's
``buildModelFromUrdf(..., mimic=True)`` layout: free-flyer ``[p, quat_xyzw]`` first for a floating
base, then the independent joints in tree order). In Chignoli's terms it is an explicit constraint
``q = γ(y)`` with a constant ``G`` (eq. 3, ``g = 0``):

    q = γ(y) (positions, offsets included),   q̇ = G ẏ,   q̈ = G ÿ,   τ_y = Gᵀ τ,   H_y = Gᵀ H G.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .robot_model import RobotModel


@dataclass(frozen=True, eq=False)
class MimicMap:
    """The constant map of a model's mimic joints (see the module docstring). ``nq``/``nv`` and
    :attr:`joint_names` describe the independent (pinocchio mimic) layout."""
    model: RobotModel

    @cached_property
    def _mimic(self) -> dict:
        return {m.joint: m for m in self.model.mimic_joints}

    @cached_property
    def joint_names(self) -> tuple[str, ...]:
        """The independent joints, in tree order: the order of ``y``, ``ẏ``, ``ÿ`` and ``τ_y``."""
        return tuple(j for j in self.model.joint_names if j not in self._mimic)

    @cached_property
    def _layout(self):
        m = self.model
        base = 7 if m.floating_base else 0
        vbase = 6 if m.floating_base else 0
        y_q = {j: base + k for k, j in enumerate(self.joint_names)}
        y_v = {j: vbase + k for k, j in enumerate(self.joint_names)}
        tree_q = {j: int(m.q_idx[m.body_joint_names.index(j)]) for j in m.joint_names}
        tree_v = {j: int(m.v_idx[m.body_joint_names.index(j)]) for j in m.joint_names}
        # positions: q[copy_to] = y[copy_from]; q[mim_to] = mult · y[mim_from] + offset
        copy_to = np.r_[np.arange(base), [tree_q[j] for j in self.joint_names]].astype(np.int64)
        copy_from = np.r_[np.arange(base), [y_q[j] for j in self.joint_names]].astype(np.int64)
        mims = self.model.mimic_joints
        mim_to = np.array([tree_q[x.joint] for x in mims], dtype=np.int64)
        mim_from = np.array([y_q[x.driver] for x in mims], dtype=np.int64)
        mult = np.array([x.multiplier for x in mims])
        offset = np.array([x.offset for x in mims])
        G = np.zeros((m.nv, vbase + len(self.joint_names)))
        G[np.arange(vbase), np.arange(vbase)] = 1.0
        for j in self.joint_names:
            G[tree_v[j], y_v[j]] = 1.0
        for x in mims:
            G[tree_v[x.joint], y_v[x.driver]] = x.multiplier
        return copy_to, copy_from, mim_to, mim_from, mult, offset, G

    @property
    def nq(self) -> int:
        return (7 if self.model.floating_base else 0) + len(self.joint_names)

    @property
    def nv(self) -> int:
        return (6 if self.model.floating_base else 0) + len(self.joint_names)

    @property
    def G(self) -> np.ndarray:
        """``q̇ = G ẏ`` (model ``nv`` × :attr:`nv`), constant."""
        return self._layout[6]

    def q(self, y) -> np.ndarray:
        """``q = γ(y)``: the tree configuration of the independent configuration ``y``."""
        copy_to, copy_from, mim_to, mim_from, mult, offset, _ = self._layout
        q = np.empty(self.model.nq)
        y = np.asarray(y, dtype=float)
        q[copy_to] = y[copy_from]
        q[mim_to] = mult * y[mim_from] + offset
        return q

    def y(self, q) -> np.ndarray:
        """The independent part of a tree configuration ``q`` (inverse of :meth:`q` on its image)."""
        copy_to, copy_from, *_ = self._layout
        y = np.empty(self.nq)
        y[copy_from] = np.asarray(q, dtype=float)[copy_to]
        return y


def mimic_map(model: RobotModel) -> MimicMap | None:
    """The model's :class:`MimicMap`, or None when it has no mimic joint (cached on the model)."""
    if not model.mimic_joints:
        return None
    cached = model.__dict__.get("_mimic_map")
    if cached is None:
        cached = MimicMap(model)
        object.__setattr__(model, "_mimic_map", cached)
    return cached


def mimic_loops(model: RobotModel) -> tuple:
    """The mimic joints as :class:`~rbd_estimator.model.loops.LinearTransmission` loops (one per
    driving joint, named ``mimic_<driver>``), so that the cluster tree and the
    :class:`~rbd_estimator.estimation.loops.LoopEstimator` couple them as any transmission."""
    from .loops import LinearTransmission
    by_driver: dict[str, list] = {}
    for m in model.mimic_joints:
        by_driver.setdefault(m.driver, []).append(m)
    return tuple(LinearTransmission(f"mimic_{d}", (d,), tuple(m.joint for m in ms),
                                    np.array([[m.multiplier] for m in ms]), np.array([m.offset for m in ms]))
                 for d, ms in by_driver.items())
