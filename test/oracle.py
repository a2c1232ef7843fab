"""Pinocchio as an independent oracle: robot files, model pairs and vector conversions for tests.

Our vectors follow pinocchio's free-flyer layout but our joint order is our own regular numbering,
so every comparison goes through the name-based maps below.
"""
from __future__ import annotations

import functools
import os

import numpy as np

ROBOTS = {
    "icub": "icub_description/robots/icub.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
}


@functools.lru_cache(maxsize=None)
def robots_dir() -> str:
    """The ``robots/`` folder of example-robot-data (see :func:`rbd_estimator.robots.robot_data_dir`)."""
    from rbd_estimator.robots import robot_data_dir
    return robot_data_dir()


@functools.lru_cache(maxsize=None)
def urdf_xml(robot: str) -> str:
    """URDF text of a named robot from :data:`ROBOTS` (or a path relative to ``robots/``)."""
    rel = ROBOTS.get(robot, robot)
    with open(os.path.join(robots_dir(), rel), encoding="utf-8") as fh:
        return fh.read()


class Pair:
    """Our model and pinocchio's, built from the same URDF string, with vector conversions."""

    def __init__(self, xml: str, floating_base: bool, **kw):
        import pinocchio as pin

        from rbd_estimator import RobotModel
        self.model = RobotModel.from_urdf(xml, floating_base=floating_base, **kw)
        self.pin_model = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating_base
                          else pin.buildModelFromXML(xml))
        self.pin_data = self.pin_model.createData()
        m, pm = self.model, self.pin_model
        self.fb = floating_base
        # our v index → pinocchio v index; our q index → pinocchio q index
        self.v_map = np.zeros(m.nv, dtype=int)
        self.q_map = np.zeros(m.nq, dtype=int)
        self.unbounded = []   # (our q index, pinocchio q index) of continuous joints: [cos q, sin q] there
        if floating_base:
            self.v_map[:6] = np.arange(6)
            self.q_map[:7] = np.arange(7)
        for name in m.joint_names:
            b = m.body_joint_names.index(name)
            jid = pm.getJointId(name)
            assert pm.nqs[jid] in (1, 2), f"joint {name} has nq={pm.nqs[jid]} in pinocchio"
            self.v_map[m.v_idx[b]] = pm.idx_vs[jid]
            self.q_map[m.q_idx[b]] = pm.idx_qs[jid]
            if pm.nqs[jid] == 2:
                self.unbounded.append((m.q_idx[b], pm.idx_qs[jid]))

    def q_to_pin(self, q):
        out = np.zeros(self.pin_model.nq)
        out[self.q_map] = q
        for k, kp in self.unbounded:
            out[kp:kp + 2] = np.cos(q[k]), np.sin(q[k])
        return out

    def v_to_pin(self, v):
        out = np.zeros(self.pin_model.nv)
        out[self.v_map] = v
        return out

    def v_from_pin(self, vp):
        return np.asarray(vp)[self.v_map]

    def M_from_pin(self, Mp):
        Mp = np.asarray(Mp)
        return Mp[np.ix_(self.v_map, self.v_map)]

    def random_state(self, rng):
        m = self.model
        return m.random_configuration(rng), rng.normal(size=m.nv), rng.normal(size=m.nv)


def rel_err(x, ref) -> float:
    """Relative error ``max|x − ref| / max(1, max|ref|)`` (0 for empty arrays: a robot without joints)."""
    x, ref = np.asarray(x), np.asarray(ref)
    if not ref.size:
        return 0.0
    return float(np.max(np.abs(x - ref)) / max(1.0, float(np.max(np.abs(ref)))))
