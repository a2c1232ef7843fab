"""Pinocchio oracles for robots with loops (tests and benchmarks; not a test module).

:class:`LoopPair` builds our :class:`ClusterTree` and, independently, pinocchio's model of the same
spanning tree: the URDF with the extra bodies (rotors) written into it as ``<link>``/``<joint>``
elements, through pinocchio's parser (pinocchio's CRBA needs joints in depth-first order, so they
cannot be appended with ``Model.addJoint``). The loop constraints of the oracle are written from the
declarations, not from our constraint code:

* transmissions (link and rotor, belts, linear): the rows ``q_dep − R q_ind = 0`` of ``K``;
* four-bars: pinocchio frames at the two closure points; ``K`` rows from
  ``getFrameJacobian`` (their relative linear velocity) and ``k`` from their classical
  accelerations at ``q̈ = 0`` (``forwardKinematics(q, v, 0)``). For a four-bar alone,
  :meth:`LoopPair.pin_constraint_dynamics` also runs pinocchio's own ``constraintDynamics`` with a
  ``CONTACT_3D`` ``RigidConstraintModel`` per loop.

Constrained forward dynamics of the oracle is pinocchio's ``forwardDynamics(q, v, τ, J, γ)``, the
KKT system ``[M Jᵀ; J 0] [q̈; −λ] = [τ − b; −γ]`` on its own ``M`` and ``b``, with ``J``, ``γ = −k``
the independent rows of ``K``, ``k`` (a planar four-bar closed by a 3-D point constraint has rank 2).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from rbd_estimator import RobotModel
from rbd_estimator.model.clusters import ClusterTree
from rbd_estimator.model.loops import BeltTransmission, FourBar, LinearTransmission, LinkAndRotor, LoopConfig


def with_extra_bodies(xml: str, bodies) -> str:
    """The URDF text plus one revolute ``<joint>`` and ``<link>`` per :class:`ExtraBody`."""
    def f(v):
        return " ".join(repr(float(x)) for x in v)
    parts = []
    for b in bodies:
        I = [[repr(float(x)) for x in row] for row in b.inertia]
        parts.append(f'''  <link name="{b.name}"><inertial><origin xyz="{f(b.com)}" rpy="0 0 0"/>
    <mass value="{float(b.mass)!r}"/>
    <inertia ixx="{I[0][0]}" ixy="{I[0][1]}" ixz="{I[0][2]}" iyy="{I[1][1]}" iyz="{I[1][2]}" izz="{I[2][2]}"/>
  </inertial></link>
  <joint name="{b.name}" type="revolute"><parent link="{b.parent}"/><child link="{b.name}"/>
    <origin xyz="{f(b.xyz)}" rpy="{f(b.rpy)}"/><axis xyz="{f(b.axis)}"/>
    <limit lower="-1e6" upper="1e6" effort="1e3" velocity="1e3"/></joint>
''')
    i = xml.rindex("</robot>")
    return xml[:i] + "".join(parts) + xml[i:]


class LoopPair:
    """Our cluster tree and pinocchio's spanning-tree model, with index maps by joint name."""

    def __init__(self, xml: str, loops, floating_base: bool = False):
        self.config = loops if isinstance(loops, LoopConfig) else LoopConfig.from_dict(loops)
        self.urdf_model = RobotModel.from_urdf(xml, floating_base=floating_base)
        self.tree = ClusterTree.build(self.urdf_model, self.config)
        xml_span = with_extra_bodies(xml, self.config.bodies)
        pm = (pin.buildModelFromXML(xml_span, pin.JointModelFreeFlyer()) if floating_base
              else pin.buildModelFromXML(xml_span))
        self.pm, self.pd = pm, pm.createData()
        m = self.tree.model
        self.v_map = np.zeros(m.nv, dtype=int)
        self.q_map = np.zeros(m.nq, dtype=int)
        if floating_base:
            self.v_map[:6], self.q_map[:7] = np.arange(6), np.arange(7)
        for name in m.joint_names:
            b = m.body_joint_names.index(name)
            jid = pm.getJointId(name)
            self.v_map[m.v_idx[b]], self.q_map[m.q_idx[b]] = pm.idx_vs[jid], pm.idx_qs[jid]
        self._closures = []
        for lp in self.config.loops:
            if isinstance(lp, FourBar):
                ja, jb = pm.getJointId(lp.coupler), pm.getJointId(lp.output)
                self._closures.append((lp, ja, pin.SE3(np.eye(3), lp.closure_coupler_xyz),
                                       jb, pin.SE3(np.eye(3), lp.closure_output_xyz)))
        for k, (lp, ja, Pa, jb, Pb) in enumerate(self._closures):
            pm.addFrame(pin.Frame(f"{lp.name}_a", ja, 0, Pa, pin.FrameType.OP_FRAME))
            pm.addFrame(pin.Frame(f"{lp.name}_b", jb, 0, Pb, pin.FrameType.OP_FRAME))
        self.pd = pm.createData()

    # ------------------------------------------------------------------ conversions
    def q_pin(self, q):
        out = np.zeros(self.pm.nq)
        out[self.q_map] = q
        return out

    def v_pin(self, v):
        out = np.zeros(self.pm.nv)
        out[self.v_map] = v
        return out

    def v_ours(self, vp):
        return np.asarray(vp)[self.v_map]

    def random_state(self, rng, scale: float = 0.5):
        """``(y, ẏ, τ)`` at random: independent coordinates, velocities and actuator efforts."""
        t = self.tree
        return t.random_independent_configuration(rng, scale), rng.normal(size=t.nvy), rng.normal(size=t.nvy) * 5

    def tau_tree(self, tau_y):
        """A spanning-tree effort with ``Gᵀ τ_tree = τ``: ``τ`` on the independent joints (their rows of
        ``G`` are the identity), zero on the dependent ones."""
        out = np.zeros(self.tree.nv)
        out[self.tree.y_v_idx] = tau_y
        return out

    # ------------------------------------------------------------------ the oracle's constraints
    def constraint_rows(self, q, v):
        """``(K, k)`` of all loops at the spanning state, in our ``v`` order, from the declarations
        and pinocchio's frames (see the module docstring)."""
        m, pm, pd = self.tree.model, self.pm, self.pd
        col = {name: m.v_idx[m.body_joint_names.index(name)] for name in m.joint_names}
        K, k = [], []
        for lp in self.config.loops:
            if isinstance(lp, (LinkAndRotor, BeltTransmission, LinearTransmission)):
                R = lp.ratio_matrix()
                for r, dep in enumerate(lp.dependent):
                    row = np.zeros(m.nv)
                    row[col[dep]] = 1.0
                    for c, ind in enumerate(lp.independent):
                        row[col[ind]] -= R[r, c]
                    K.append(row)
                    k.append(0.0)
        if self._closures:
            qp, vp = self.q_pin(q), self.v_pin(v)
            pin.forwardKinematics(pm, pd, qp, vp, np.zeros(pm.nv))
            pin.computeJointJacobians(pm, pd, qp)
            pin.updateFramePlacements(pm, pd)
            W = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
            for lp, *_ in self._closures:
                fa, fb = pm.getFrameId(f"{lp.name}_a"), pm.getFrameId(f"{lp.name}_b")
                Ja = pin.getFrameJacobian(pm, pd, fa, W)[:3]
                Jb = pin.getFrameJacobian(pm, pd, fb, W)[:3]
                acc = (pin.getFrameClassicalAcceleration(pm, pd, fa, W).linear
                       - pin.getFrameClassicalAcceleration(pm, pd, fb, W).linear)
                for r in range(3):
                    K.append(self.v_ours(Ja[r] - Jb[r]))
                    k.append(-acc[r])
        return np.array(K).reshape(-1, m.nv), np.array(k)

    def closure_gap(self, q) -> float:
        """Largest distance (m) between the two closure points of any four-bar (pinocchio's kinematics)."""
        if not self._closures:
            return 0.0
        pin.framesForwardKinematics(self.pm, self.pd, self.q_pin(q))
        return max(float(np.linalg.norm(self.pd.oMf[self.pm.getFrameId(f"{lp.name}_a")].translation
                                        - self.pd.oMf[self.pm.getFrameId(f"{lp.name}_b")].translation))
                   for lp, *_ in self._closures)

    # ------------------------------------------------------------------ forward dynamics
    def mass_and_bias(self, q, v):
        """Pinocchio's ``M`` and ``b`` in our ``v`` order."""
        qp, vp = self.q_pin(q), self.v_pin(v)
        M = pin.crba(self.pm, self.pd, qp)
        M = np.triu(M) + np.triu(M, 1).T
        b = pin.rnea(self.pm, self.pd, qp, vp, np.zeros(self.pm.nv))
        return M[np.ix_(self.v_map, self.v_map)], np.asarray(b)[self.v_map]

    def kkt_forward_dynamics(self, q, v, tau_tree):
        """Constrained ``q̈`` by pinocchio's ``forwardDynamics(model, data, q, v, τ, J, γ)`` (the KKT
        system on its own ``M`` and ``b``) with ``J``, ``γ = −k`` the oracle's independent rows."""
        K, k = self.independent_rows(q, v)
        J = np.zeros((K.shape[0], self.pm.nv))
        J[:, self.v_map] = K
        ddq = pin.forwardDynamics(self.pm, self.pd, self.q_pin(q), self.v_pin(v), self.v_pin(tau_tree), J, -k, 0.0)
        return self.v_ours(ddq)

    def independent_rows(self, q, v):
        """``(U_rᵀ K, U_rᵀ k)`` with ``U_r`` the left singular vectors of ``K`` of non-zero singular
        value: the same constraints without the redundant rows of planar closures."""
        K, k = self.constraint_rows(q, v)
        if not len(K):
            return K, k
        U, s, Vt = np.linalg.svd(K, full_matrices=False)
        r = int(np.sum(s > 1e-10 * s[0]))
        return Vt[:r] * s[:r, None], U[:, :r].T @ k

    def pin_constraint_dynamics(self, q, v, tau_tree, mu: float = 1e-12, iters: int = 200):
        """``q̈`` from pinocchio's ``constraintDynamics`` (proximal, tight settings) with one
        ``CONTACT_3D`` ``RigidConstraintModel`` per four-bar; valid only when every loop is a four-bar."""
        if any(not isinstance(lp, FourBar) for lp in self.config.loops):
            raise ValueError("pinocchio's RigidConstraintModel cannot express gear constraints")
        models = pin.StdVec_RigidConstraintModel()
        for lp, ja, Pa, jb, Pb in self._closures:
            models.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, self.pm, ja, Pa, jb, Pb,
                                                   pin.ReferenceFrame.LOCAL))
        datas = pin.StdVec_RigidConstraintData()
        for cm in models:
            datas.append(cm.createData())
        data = self.pm.createData()
        pin.initConstraintDynamics(self.pm, data, models, datas)
        settings = pin.ProximalSettings(1e-14, mu, iters)
        ddq = pin.constraintDynamics(self.pm, data, self.q_pin(q), self.v_pin(v), self.v_pin(tau_tree),
                                     models, datas, settings)
        return self.v_ours(ddq)

