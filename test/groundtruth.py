"""Sensor data generated from a known ground truth with pinocchio (independent of our estimator).

A random state (including a base linear velocity, which the estimator never sees), random contact
wrenches of each contact's model, and the base acceleration that makes the floating-base
equations hold; joint torques from
pinocchio's ``rnea`` with those wrenches; force-torque readings from pinocchio's internal joint
wrenches ``data.f`` of a second pinocchio model in which every sensor joint is turned into a
(motionless) revolute joint, converted to each sensor's frame and direction; the IMU from
pinocchio's frame kinematics.
"""
from __future__ import annotations

import re

import numpy as np
import pinocchio as pin

from rbd_estimator.dynamics import rnea
from rbd_estimator.estimation import ImuSample
from rbd_estimator.estimation.synthetic import measure

GRAVITY = np.array([0.0, 0.0, -9.81])


def motor_readings(cfg, joint_names, tau, dq, ddq) -> np.ndarray:
    """The joint-torque sensors' readings (``cfg.joint_torque_sensors`` order) for joint torques
    ``tau`` (``joint_names`` order): the motor torque ``τ + f_c tanh(q̇/v_s) + b q̇ + I_a q̈`` over
    ``k_t N`` (the actuator model of docs/actuator_model.md, written out here as the test's oracle)."""
    from rbd_estimator.sensors import JointTorque
    out = []
    for s in cfg.of_kind(JointTorque):
        k = list(joint_names).index(s.name)
        motor = tau[k] + s.coulomb_friction * np.tanh(dq[k] / s.friction_velocity) + s.viscous_friction * dq[k] \
            + s.armature * ddq[k]
        out.append(motor / (s.torque_constant * s.gear_ratio))
    return np.array(out)


def unfix_joints(xml: str, joints) -> str:
    """The URDF with the named fixed joints made revolute (about z), so pinocchio keeps them."""
    for j in joints:
        pat = re.compile(r'(<joint\s+name="%s"\s+type=")fixed(")' % re.escape(j))
        xml, n = pat.subn(r"\1revolute\2", xml)
        assert n == 1, j
        # [^>]*: attributes after the type too (Go2's dont_collapse)
        xml = re.sub(r'(<joint\s+name="%s"\s+type="revolute"[^>]*>)' % re.escape(j),
                     r'\1<axis xyz="0 0 1"/><limit effort="1" velocity="1" lower="-1" upper="1"/>', xml)
    return xml


class GroundTruth:
    """Generates consistent states, wrenches and sensor readings for an estimator's configuration."""

    def __init__(self, xml: str, estimator):
        self.est = estimator
        self.model = estimator.model
        cfg = estimator.config
        self.cfg = cfg
        ft_joints = [s.bind(estimator.model).joint for s in cfg.ft_sensors]
        self.pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if cfg.floating_base else pin.buildModelFromXML(xml)
        self.pd = self.pm.createData()
        self.pm_ft = (pin.buildModelFromXML(unfix_joints(xml, ft_joints), pin.JointModelFreeFlyer())
                      if cfg.floating_base else pin.buildModelFromXML(unfix_joints(xml, ft_joints)))
        self.pd_ft = self.pm_ft.createData()
        self.ft_joints = ft_joints

    # ------------------------------------------------------------------ vector maps
    def _to_pin(self, pm, q_base, v_base, a_base, qj, vj, aj):
        q, v, a = pin.neutral(pm), np.zeros(pm.nv), np.zeros(pm.nv)
        o_q, o_v = (7, 6) if self.cfg.floating_base else (0, 0)
        if self.cfg.floating_base:
            q[:7], v[:6], a[:6] = q_base, v_base, a_base
        for k, name in enumerate(self.model.joint_names):
            jid = pm.getJointId(name)
            if pm.nqs[jid] == 2:                 # continuous joint: pinocchio's (cos q, sin q)
                q[pm.idx_qs[jid]:pm.idx_qs[jid] + 2] = np.cos(qj[k]), np.sin(qj[k])
            else:
                q[pm.idx_qs[jid]] = qj[k]
            v[pm.idx_vs[jid]] = vj[k]
            a[pm.idx_vs[jid]] = aj[k]
        return q, v, a

    def _fext(self, pm, wrenches):
        fext = [pin.Force.Zero() for _ in range(pm.njoints)]
        for (c, w) in zip(self.cfg.contacts, wrenches):
            fid = pm.getFrameId(c.frame)
            fr = pm.frames[fid]
            fext[fr.parentJoint] += fr.placement.act(pin.Force(w[:3], w[3:]))
        return fext

    # ------------------------------------------------------------------ sample
    def sample(self, rng, wrench_scale=50.0):
        """Random consistent sample: returns ``(inputs, truth)``; ``inputs`` are the estimator's
        keyword arguments, ``truth`` has ``tau`` (joint order) and ``wrenches`` (n_contacts, 6)."""
        m, cfg = self.model, self.cfg
        nj = m.n_joints
        qj, vj, aj = rng.uniform(-1.2, 1.2, nj), rng.normal(size=nj), rng.normal(size=nj)
        quat = rng.normal(size=4)
        q_base = np.concatenate([rng.normal(size=3), quat / np.linalg.norm(quat)])
        v_base, a_base = rng.normal(size=6), np.zeros(6)
        q, v, a = self._to_pin(self.pm, q_base, v_base, a_base, qj, vj, aj)
        wrenches = self._random_wrenches(rng, wrench_scale)
        if cfg.floating_base:
            a_base = self._consistent_base_acceleration(q, v, a, wrenches)
            a[:6] = a_base
        tau_full = pin.rnea(self.pm, self.pd, q, v, a, self._fext(self.pm, wrenches))
        if cfg.floating_base:
            assert np.max(np.abs(tau_full[:6])) < 1e-8 * max(1.0, np.max(np.abs(tau_full)))
        tau = np.array([tau_full[self.pm.idx_vs[self.pm.getJointId(n)]] for n in m.joint_names])
        inputs = dict(q=qj, dq=vj, ddq=aj)
        if cfg.imu is not None:
            inputs["imu"] = self._imu(q, v, a)
        if cfg.ft_sensors:
            inputs["ft"] = self._ft(q_base, v_base, a_base, qj, vj, aj, wrenches)
        if cfg.load_cells:
            inputs["load_cells"] = self._cells(wrenches)
        if cfg.joint_torque_sensors:
            inputs["joint_torques"] = motor_readings(cfg, m.joint_names, tau, vj, aj)
        return inputs, dict(tau=tau, wrenches=np.array(wrenches).reshape(-1, 6))

    def _random_wrenches(self, rng, scale):
        """Random wrenches with the free components of each contact model (zero elsewhere)."""
        comps = {"full_wrench": [0, 1, 2, 3, 4, 5], "point_force": [0, 1, 2], "slippery": [2, 3, 4, 5]}
        ws = []
        for c in self.cfg.contacts:
            w = np.zeros(6)
            w[comps[c.type]] = rng.normal(size=len(comps[c.type])) * scale
            ws.append(w)
        return ws

    def _consistent_base_acceleration(self, q, v, a, wrenches):
        """The base acceleration for which the floating-base equations hold (τ_base = 0) under the
        given joint accelerations and contact wrenches: τ_base is affine in it (M_bb a_b + c)."""
        fext = self._fext(self.pm, wrenches)
        a = a.copy()
        a[:6] = 0.0
        c = pin.rnea(self.pm, self.pd, q, v, a, fext)[:6].copy()
        M = pin.crba(self.pm, self.pd, q)
        Mbb = np.triu(M) + np.triu(M, 1).T
        return np.linalg.solve(Mbb[:6, :6], -c)

    def _imu(self, q, v, a):
        pm, pd = self.pm, self.pd
        fid = pm.getFrameId(self.cfg.imu.frame)
        pin.forwardKinematics(pm, pd, q, v, a)
        pin.updateFramePlacements(pm, pd)
        R = pd.oMf[fid].rotation
        omega = pin.getFrameVelocity(pm, pd, fid, pin.LOCAL).angular
        acc = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL).linear - R.T @ GRAVITY
        alpha = pin.getFrameAcceleration(pm, pd, fid, pin.LOCAL).angular
        quat = pin.Quaternion(R).coeffs()    # x, y, z, w
        return ImuSample(np.array(quat), np.array(omega), np.array(acc),
                         np.array(alpha) if self.cfg.imu.use_angular_acceleration else None)

    def _ft(self, q_base, v_base, a_base, qj, vj, aj, wrenches):
        pm, pd = self.pm_ft, self.pd_ft
        q, v, a = self._to_pin(pm, q_base, v_base, a_base, qj, vj, aj)
        pin.rnea(pm, pd, q, v, a, self._fext(pm, wrenches))
        out = []
        for s, joint in zip(self.cfg.ft_sensors, self.ft_joints):
            sensor = s.bind(self.model)         # metadata only: joint, frame, direction
            f = pd.f[pm.getJointId(joint)]          # parent → child, child frame, about the joint origin
            w = np.concatenate([f.linear, f.angular])
            frame = s.frame or sensor.frame
            direction = s.measure_direction or sensor.measure_direction
            if frame == "parent":
                jid = pm.getJointId(joint)
                R = pm.jointPlacements[jid].rotation                  # child axes in parent-joint axes
                parent_link = pm.frames[pm.getFrameId(sensor.parent_link)]
                Rp = parent_link.placement.rotation                    # parent link in its joint's axes
                Rc = Rp.T @ R
                w = np.concatenate([Rc @ w[:3], Rc @ w[3:]])
            elif frame == "sensor":
                w = np.concatenate([sensor.E_sensor @ w[:3], sensor.E_sensor @ w[3:]])
            out.append(-w if direction == "child_to_parent" else w)
        return np.array(out)

    def _cells(self, wrenches):
        """Cell forces reproducing fz, tx, ty of each group's contact (minimum-norm split)."""
        out = []
        for lc in self.cfg.load_cells:
            ci = [c.name for c in self.cfg.contacts].index(lc.contact)
            w = wrenches[ci]
            x, y = lc.positions[:, 0], lc.positions[:, 1]
            C = np.vstack([np.ones_like(x), y, -x])
            F, *_ = np.linalg.lstsq(C, np.array([w[2], w[3], w[4]]), rcond=None)
            out.append(F)
        return out


class Trajectory:
    """Noise-free, time-consistent sensor readings for an estimator's configuration.

    Joints: ``q(t) = q0 + v0 t + a t²/2`` (constant acceleration: the node's finite difference is
    exact). Floating base: orientation turning about a fixed axis, body angular velocity
    ``ω0 + α t`` (so the derivative of the gyro is exactly α), an arbitrary linear velocity (the
    estimate must not depend on it), and the base linear acceleration and contact wrenches solved
    (minimum-norm change from a nominal stance) so that the floating-base equations hold.
    """

    def __init__(self, est, seed=0, dt_ns=1_000_000, t0_ns=1_700_000_000_000_000_000, schedule=None, noise=0.0):
        """``schedule(k)``: the contacts in contact at step ``k`` (bool per contact; default all):
        the others carry no wrench (a walking gait). ``noise``: readings with Gaussian noise of
        ``noise ×`` each sensor's configured standard deviation (``synthetic.measure``)."""
        self.noise, self._noise_seed = noise, seed
        self.est, self.m, self.cfg = est, est.model, est.config
        self.schedule = schedule or (lambda k: np.ones(len(self.cfg.contacts), dtype=bool))
        rng = np.random.default_rng(seed)
        nj = self.m.n_joints
        self.q0, self.v0, self.a = rng.uniform(-0.4, 0.4, nj), rng.normal(0, 0.5, nj), rng.normal(0, 2.0, nj)
        self.w0, self.alpha = rng.normal(0, 0.3, 3), rng.normal(0, 1.0, 3)
        self.dt_ns, self.t0_ns = dt_ns, t0_ns
        mass = sum(float(I[5, 5]) for I in self.m.inertias)
        self.W0 = []
        for c in self.cfg.contacts:
            w = np.zeros(6)
            w[2] = mass * 9.81 / max(1, len(self.cfg.contacts))
            if not self.m.floating_base:
                w = rng.normal(0, 5.0, 6)
            self.W0.append(w)
        free = {"full_wrench": [0, 1, 2, 3, 4, 5], "point_force": [0, 1, 2], "slippery": [2, 3, 4, 5]}
        self.free = [(k, i) for k, c in enumerate(self.cfg.contacts) for i in free[c.type]]
        self._cache = {}

    def stamp(self, k):
        return self.t0_ns + k * self.dt_ns

    def _base_wrench(self, q, v, a, W):
        f_ext = {c.frame: w for c, w in zip(self.cfg.contacts, W)}
        return rnea(self.m, q, v, a, f_ext)[:6]

    def frame(self, k):
        if k in self._cache:
            return self._cache[k]
        t = k * self.dt_ns * 1e-9
        qj = self.q0 + self.v0 * t + 0.5 * self.a * t * t
        vj = self.v0 + self.a * t
        active = np.asarray(self.schedule(k), dtype=bool)
        share = len(self.cfg.contacts) / max(1, int(active.sum()))
        W0 = [w * share if on else np.zeros(6) for w, on in zip(self.W0, active)]
        free = [(c, i) for c, i in self.free if active[c]]
        W = [w.copy() for w in W0]
        if self.m.floating_base:
            ang = 0.3 + 0.5 * t
            axis = np.array([0.2, -0.3, 1.0]) / np.linalg.norm([0.2, -0.3, 1.0])
            quat = np.concatenate([np.sin(ang / 2) * axis, [np.cos(ang / 2)]])
            q = np.concatenate([[0.1, -0.2, 0.9], quat, qj])
            v = np.concatenate([[0.3, -0.1, 0.05], self.w0 + self.alpha * t, vj])
            a = np.concatenate([np.zeros(3), self.alpha, self.a])
            # unknowns x = [a_lin (3), free wrench components]: base wrench affine in x, solve min-norm
            n = 3 + len(free)

            def apply(x):
                aa = a.copy()
                aa[:3] = x[:3]
                WW = [w.copy() for w in W0]
                for j, (c, i) in enumerate(free):
                    WW[c][i] += x[3 + j]
                return aa, WW

            c0 = self._base_wrench(q, v, *apply(np.zeros(n)))
            B = np.column_stack([self._base_wrench(q, v, *apply(np.eye(n)[j])) - c0 for j in range(n)])
            x = np.linalg.lstsq(B, -c0, rcond=None)[0]
            a, W = apply(x)
            assert np.max(np.abs(self._base_wrench(q, v, a, W))) < 1e-8
        else:
            q, v, a = qj, vj, self.a.copy()
        readings = measure(self.est, q, v, a, np.array(W), rng=np.random.default_rng((self._noise_seed, k)),
                           noise=self.noise)
        effort = np.array(readings.tau)          # the joint states' effort: the motor torques' readings
        for j, y in zip(self.cfg.joint_torque_sensors, readings.joint_torques):
            effort[self.est.joint_names.index(j)] = y
        out = dict(stamp=self.stamp(k), q=qj, dq=vj, readings=readings, tau=np.array(readings.tau),
                   effort=effort, wrenches=np.array(W), active=active, state=(q, v, a))   # state: pinocchio layout
        self._cache[k] = out
        return out


# ============================================================================ recordings
class Serializer:
    """A trajectory frame's messages as CDR bytes (rosbags' serializer, independent of ours)."""

    def __init__(self):
        from rosbags.typesys import Stores, get_typestore
        self.ts = get_typestore(Stores.ROS2_JAZZY)
        self.T = self.ts.types

    def header(self, t):
        T = self.T
        return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=t // 10**9, nanosec=t % 10**9),
                                        frame_id="")

    def imu(self, t, imu) -> bytes:
        T = self.T
        V3 = T["geometry_msgs/msg/Vector3"]
        m = T["sensor_msgs/msg/Imu"](
            header=self.header(t), orientation=T["geometry_msgs/msg/Quaternion"](*map(float, imu.orientation)),
            orientation_covariance=np.zeros(9), angular_velocity=V3(*map(float, imu.angular_velocity)),
            angular_velocity_covariance=np.zeros(9), linear_acceleration=V3(*map(float, imu.linear_acceleration)),
            linear_acceleration_covariance=np.zeros(9))
        return bytes(self.ts.serialize_cdr(m, "sensor_msgs/msg/Imu"))

    def joint_state(self, t, names, position, velocity=(), effort=()) -> bytes:
        m = self.T["sensor_msgs/msg/JointState"](header=self.header(t), name=list(names),
                                                 position=np.asarray(position, dtype=float),
                                                 velocity=np.asarray(velocity, dtype=float),
                                                 effort=np.asarray(effort, dtype=float))
        return bytes(self.ts.serialize_cdr(m, "sensor_msgs/msg/JointState"))

    def wrench(self, t, w) -> bytes:
        T = self.T
        V3 = T["geometry_msgs/msg/Vector3"]
        m = T["geometry_msgs/msg/WrenchStamped"](header=self.header(t), wrench=T["geometry_msgs/msg/Wrench"](
            force=V3(*map(float, w[:3])), torque=V3(*map(float, w[3:]))))
        return bytes(self.ts.serialize_cdr(m, "geometry_msgs/msg/WrenchStamped"))
