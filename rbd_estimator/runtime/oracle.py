"""The node's cross-check: joint torques recomputed by pinocchio's RNEA from the same inputs.

Pinocchio builds its own model from the same URDF at configure (free-flyer root if the estimate is
floating-base). For a tick it is given

* the joint positions, velocities and (filtered) accelerations the estimator used (a continuous
  joint's position as pinocchio's ``(cos q, sin q)``);
* the base orientation and angular velocity from the IMU (pinocchio's own kinematics places the
  IMU frame on the base), base position 0 and base linear velocity 0 — the estimate does not
  depend on them;
* the estimated base acceleration ``[a_lin; ω̇]`` (free-flyer layout, base frame);
* the estimated contact wrenches as ``fext`` on the joints carrying the contact frames
  (``jMf.act`` of each wrench, pinocchio frame placements).

It returns the largest difference between pinocchio's joint torques and the estimate, and the
largest component of pinocchio's base wrench (zero for a dynamically consistent estimate).
"""
from __future__ import annotations

import numpy as np


class PinocchioOracle:
    def __init__(self, xml: str, floating_base: bool, joint_names, contact_frames, imu_frame: str | None):
        import pinocchio as pin

        self.pin = pin
        self.model = (pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating_base
                      else pin.buildModelFromXML(xml))
        self.data = self.model.createData()
        m = self.model
        self.floating_base = floating_base
        ids = [m.getJointId(n) for n in joint_names]
        bounded = [m.nqs[j] == 1 for j in ids]
        #: our joint index → pinocchio q index, for one-coordinate joints and for continuous ones
        #: (``nq = 2``: ``cos q`` at the index, ``sin q`` after it)
        self.k_bounded = np.array([k for k, b in enumerate(bounded) if b], dtype=np.int64)
        self.k_unbounded = np.array([k for k, b in enumerate(bounded) if not b], dtype=np.int64)
        self.q_idx = np.array([m.idx_qs[ids[k]] for k in self.k_bounded], dtype=np.int64)
        self.q_cos = np.array([m.idx_qs[ids[k]] for k in self.k_unbounded], dtype=np.int64)
        self.v_idx = np.array([m.idx_vs[j] for j in ids], dtype=np.int64)
        self.contacts = [self._frame(f) for f in contact_frames]
        self.imu = self._frame(imu_frame)[2] if (imu_frame and floating_base) else None
        self.q = pin.neutral(m)
        self.v = np.zeros(m.nv)
        self.a = np.zeros(m.nv)
        self.fext = pin.StdVec_Force()
        for _ in range(m.njoints):
            self.fext.append(pin.Force.Zero())

    def _frame(self, name):
        m = self.model
        if not m.existFrame(name):
            raise ValueError(f"pinocchio model has no frame '{name}'")
        fid = m.getFrameId(name)
        f = m.frames[fid]
        return f.parentJoint, f.placement, fid

    def _joint_positions(self, q):
        """Our joint positions into pinocchio's configuration vector."""
        q = np.asarray(q)
        self.q[self.q_idx] = q[self.k_bounded]
        self.q[self.q_cos] = np.cos(q[self.k_unbounded])
        self.q[self.q_cos + 1] = np.sin(q[self.k_unbounded])

    def base_state(self, q, dq, imu):
        """Free-flyer ``q`` orientation and ``v`` angular velocity of the base from an IMU sample
        (orientation ``[x, y, z, w]`` of the IMU frame in the world, gyro in the IMU frame)."""
        pin, m, d = self.pin, self.model, self.data
        self.q[:7] = [0, 0, 0, 0, 0, 0, 1]
        self._joint_positions(q)
        self.v[:] = 0.0
        self.v[self.v_idx] = dq
        pin.forwardKinematics(m, d, self.q, self.v)
        pin.updateFramePlacements(m, d)
        R_b_imu = d.oMf[self.imu].rotation                   # IMU frame in base coordinates
        w_rel = pin.getFrameVelocity(m, d, self.imu, pin.LOCAL).angular   # joints' share, IMU frame
        x, y, z, w = imu.orientation
        R_w_imu = pin.Quaternion(w, x, y, z).toRotationMatrix()
        R_w_b = R_w_imu @ R_b_imu.T
        quat = pin.Quaternion(R_w_b)
        self.q[3:7] = [quat.x, quat.y, quat.z, quat.w]
        self.v[3:6] = R_b_imu @ (np.asarray(imu.angular_velocity) - w_rel)

    def check(self, q, dq, ddq, imu, base_acceleration, contact_wrenches, tau):
        """``(max |τ_pin − τ|, max |base wrench|)`` in N·m / N."""
        pin, m, d = self.pin, self.model, self.data
        if self.floating_base:
            self.base_state(q, dq, imu)
            self.a[:6] = base_acceleration
        else:
            self._joint_positions(q)
            self.v[self.v_idx] = dq
        self.a[self.v_idx] = ddq
        for k in range(m.njoints):
            self.fext[k] = pin.Force.Zero()
        for (joint, placement, _), w in zip(self.contacts, contact_wrenches):
            self.fext[joint] = self.fext[joint] + placement.act(pin.Force(np.asarray(w[:3]), np.asarray(w[3:])))
        tau_pin = pin.rnea(m, d, self.q, self.v, self.a, self.fext)
        joint = float(np.max(np.abs(tau_pin[self.v_idx] - tau))) if len(tau) else 0.0
        base = float(np.max(np.abs(tau_pin[:6]))) if self.floating_base else 0.0
        return joint, base
