"""The forward kinematics of a tick, compiled: the one pass every estimator runs (Nori eqs. 2–3,
RBDA §4.4 and Table 4.1).

From the joint positions and rates, for a tree of 0/1-DoF joints (a free flyer as body 0 allowed),
in preallocated flat arrays (body after body; rotations row-major):

* :func:`joint_transforms`: ``ⁱX_λ(i) = X_J(q_i) X_T(i) = plux(E_i, r_i)``, the only
  state-dependent blocks of Nori's matrix ``D`` (eqs. 4a, 4d);
* :func:`poses`: ``ⁱX_0 = plux(R_i, p_i)`` of the bodies sensors and contacts need;
* :func:`base_velocity`: the floating base's velocity ``v_0 = [ω_0; 0]`` from the gyro;
* :func:`velocities_and_bias`: ``v_i`` (eq. 2) and the bias terms ``c_i = v_i × S_i q̇_i`` and
  ``ν_i = v_i ×* I_i v_i`` (eq. 3), in body coordinates; with a known ``q̈`` also the RNEA's
  forward pass (the structured tick's ``a⁰``, ``f⁰``);
* :func:`imu_velocity_product`: ``ω_F × v_F`` of the IMU frame, which its proper-acceleration
  row needs.

:func:`forward_kinematics` runs them in order; both ticks call it. The kernels read a packed
form (as :mod:`~rbd_estimator.estimation.structured` does): ``ip[K_x]`` holds a size, a flag or the
offset of array ``x`` in the integer blob ``ip``, the float blob ``fp`` or the work array ``w``
(the header :data:`KIN`, a :class:`~rbd_estimator.kernels.layout.Layout`; :meth:`KinematicTree.pack`
writes them). Rotations ``E`` and velocities ``V``
are arrays of their own. Packed arrays with offsets, not views, because every array view a kernel
creates costs it a reference count.

Floating base: the base's angular velocity comes from the IMU; its linear velocity is set to zero.
Forces do not depend on a uniform translational velocity (Galilean invariance), and the IMU's
proper-acceleration row is written so that it stays consistent with this choice, so no sensor of
the base's linear velocity is needed (DESIGN.md).

:class:`KinematicTree` packs the constants at plan time: alone for the generic tick
(:mod:`rbd_estimator.estimation.kinematics`), at the head of its blobs for the structured tick.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..jit import fast_njit as njit, uidx as _u
from ..kernels.joints import J_SIZE, joint_record, joint_transforms as joint_transforms_of
from ..kernels.layout import Layout, Packer
from ..kernels.spatial import fcross, mx, rbi_apply, rbi_compact, set6
from .robot_model import FREE, PRISMATIC, REVOLUTE, RobotModel


def motion_axes(model: RobotModel) -> np.ndarray:
    """``S_i`` of every body as an ``(NB, 6)`` array in body coordinates (``[axis; 0]`` revolute,
    ``[0; axis]`` prismatic; zero rows for fixed and free joints)."""
    S = np.zeros((model.NB, 6))
    for i in range(model.NB):
        if model.joint_dofs[i] == 1 and model.joint_types[i] == REVOLUTE:
            S[i, :3] = model.axes[i]
        elif model.joint_dofs[i] == 1 and model.joint_types[i] == PRISMATIC:
            S[i, 3:] = model.axes[i]
    return S


#: Header slots of the packed form: sizes and flags; offsets of int arrays in ``ip``, of float arrays
#: in ``fp``, of work arrays in ``w``. ``RNEA``: 1 when :func:`velocities_and_bias` also runs the
#: RNEA's forward pass (writing ``a``, ``f`` at ``WA``, ``WF``), 0 when it writes ``c``, ``ν`` at ``WC``,
#: ``WNU``. ``WTMP``: ≥ 12 values, ``v_0`` first.
KIN = Layout("NB FLOAT IMUB NPOSE NCHAIN RNEA "
             "JT PAR QIX VIX POSE CHAIN "
             "JNT S I AG IMUE IMUR "
             "WR WRP WP WC WNU WA WF WTMP")
KIN_NAMES = KIN.names
(K_NB, K_FLOAT, K_IMUB, K_NPOSE, K_NCHAIN, K_RNEA, K_JT, K_PAR, K_QIX, K_VIX, K_POSE, K_CHAIN, K_JNT, K_S, K_I, K_AG,
 K_IMUE, K_IMUR, K_WR, K_WRP, K_WP, K_WC, K_WNU, K_WA, K_WF, K_WTMP) = KIN.slots
KIN.check(globals(), "K_")


@dataclass(frozen=True)
class KinematicTree:
    """The constants of the forward kinematics of ``model``, to pack (:meth:`pack`).

    ``qidx``/``vidx``: index of body i's joint position/rate in the ``q``/``q̇`` the tick receives
    (-1 for fixed and free joints); ``imu``: ``(body, E_F, r_F)`` of the IMU frame (body -1: none);
    ``a_root``: ``−a_g`` (m/s², the parent acceleration of a root on a fixed base); ``poses``: the
    bodies whose pose ``ⁱX_0`` is wanted, ascending, ancestors included (the IMU's path is added);
    ``rnea``: see :data:`KIN`."""
    model: RobotModel
    qidx: np.ndarray
    vidx: np.ndarray
    imu: tuple = (-1, np.eye(3), np.zeros(3))
    poses: tuple = ()
    rnea: bool = False

    def imu_chain(self) -> np.ndarray:
        """The bodies from the base's child to the IMU's body (ascending)."""
        chain, b = [], self.imu[0]
        while b > 0:
            chain.append(b)
            b = self.model.parents[b]
        return np.array(chain[::-1], dtype=np.int64)

    def pack(self, ipk: Packer, fpk: Packer) -> dict:
        """Add the constant arrays to ``ipk``/``fpk``; return the header entries (name → value) but
        the work offsets (:meth:`work_sizes`)."""
        m = self.model
        NB = m.NB
        jt = m.joint_types.astype(np.int64)
        joints = [joint_record(jt[i], m.axes[i], m.E_tree[i], m.r_tree[i]) for i in range(NB)]
        chain = self.imu_chain()
        pose = m.supports(list(self.poses) + ([self.imu[0]] if self.imu[0] >= 0 else []))
        return dict(
            NB=NB, FLOAT=int(m.floating_base), IMUB=int(self.imu[0]), NPOSE=len(pose), NCHAIN=len(chain),
            RNEA=int(self.rnea), JT=ipk.add(jt), PAR=ipk.add(m.parents), QIX=ipk.add(self.qidx),
            VIX=ipk.add(self.vidx), POSE=ipk.add(pose), CHAIN=ipk.add(chain), JNT=fpk.add(joints),
            S=fpk.add(motion_axes(m)),
            I=fpk.add([rbi_compact(I) for I in m.inertias]), AG=fpk.add(self.a_root), IMUE=fpk.add(self.imu[1]),
            IMUR=fpk.add(self.imu[2]))

    @property
    def a_root(self) -> np.ndarray:
        return np.concatenate([np.zeros(3), -self.model.gravity])

    def work_sizes(self) -> dict:
        """Sizes of the work arrays (name → size) for the caller to lay out in ``w``."""
        NB = self.model.NB
        per_body = 6 * NB
        return dict(WR=3 * NB, WRP=9 * NB, WP=3 * NB, WC=0 if self.rnea else per_body,
                    WNU=0 if self.rnea else per_body, WA=per_body if self.rnea else 0,
                    WF=per_body if self.rnea else 0, WTMP=12)

    def packed(self) -> tuple:
        """``(ip, fp, w)`` holding this tree alone (the generic tick's blobs)."""
        ipk, fpk, wk = Packer(np.int64, header=KIN), Packer(np.float64), Packer(np.float64)
        header = self.pack(ipk, fpk)
        header.update({name: wk.reserve(size) for name, size in self.work_sizes().items()})
        return ipk.array(header), fpk.array(), wk.array()


@njit
def forward_kinematics(ip, fp, w, E, V, q, dq, ddq, gyro):
    """The pass: :func:`joint_transforms`, :func:`poses`, :func:`base_velocity` (floating base
    with an IMU; else ``v_0`` is ``w[WTMP:WTMP + 6]`` as the caller left it) and
    :func:`velocities_and_bias`. ``q`` (rad, m), ``q̇``, ``q̈`` (used when ``RNEA``), the gyro
    reading (rad/s, IMU frame)."""
    joint_transforms(ip, fp, w, E, q)
    poses(ip, w, E)
    if ip[K_FLOAT] and ip[K_IMUB] >= 0:
        base_velocity(ip, fp, w, E, dq, gyro)
    velocities_and_bias(ip, fp, w, E, V, dq, ddq)


@njit
def joint_transforms(ip, fp, w, E, q):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i) = plux(E_i, r_i)`` for every body (RBDA Table 4.1,
    :func:`~rbd_estimator.kernels.joints.joint_transforms` on the joint records at ``JNT``); a free
    flyer's is its ``X_T`` (its pose enters through the IMU). ``E`` (9 NB), ``r`` at ``WR`` (3 NB)."""
    joint_transforms_of(0, ip[K_NB], ip, ip[K_JT], ip[K_QIX], 1, fp, ip[K_JNT], J_SIZE, q, E, 0, 9, w, ip[K_WR], 3,
                        True)


@njit
def poses(ip, w, E):
    """``ⁱX_0 = plux(R_i, p_i)`` (``R`` at ``WRP``, ``p`` at ``WP``) for the bodies at ``POSE``
    (ascending, ancestors first): ``R_i = E_i R_λ``, ``p_i = p_λ + R_λᵀ r_i`` (RBDA eq. 2.25); a free
    flyer's is the identity (the base frame is frame 0), a fixed-base root's ``X_λ`` itself."""
    i_par, i_jt, i_pose = ip[K_PAR], ip[K_JT], ip[K_POSE]
    w_r, w_R, w_p = ip[K_WR], ip[K_WRP], ip[K_WP]
    for kk in range(ip[K_NPOSE]):
        i = ip[_u(i_pose + kk)]
        p = ip[_u(i_par + i)]
        Ro, po, eo, ro = w_R + 9 * i, w_p + 3 * i, 9 * i, w_r + 3 * i
        if ip[_u(i_jt + i)] == FREE:
            for k in range(9):
                w[_u(Ro + k)] = 1.0 if k % 4 == 0 else 0.0
            w[_u(po)], w[_u(po + 1)], w[_u(po + 2)] = 0.0, 0.0, 0.0
        elif p < 0:
            for k in range(9):
                w[_u(Ro + k)] = E[_u(eo + k)]
            w[_u(po)], w[_u(po + 1)], w[_u(po + 2)] = w[_u(ro)], w[_u(ro + 1)], w[_u(ro + 2)]
        else:
            Rp, pp = w_R + 9 * p, w_p + 3 * p
            for a in range(3):
                e0, e1, e2 = E[_u(eo + 3 * a)], E[_u(eo + 3 * a + 1)], E[_u(eo + 3 * a + 2)]
                w[_u(Ro + 3 * a)] = e0 * w[_u(Rp)] + e1 * w[_u(Rp + 3)] + e2 * w[_u(Rp + 6)]
                w[_u(Ro + 3 * a + 1)] = e0 * w[_u(Rp + 1)] + e1 * w[_u(Rp + 4)] + e2 * w[_u(Rp + 7)]
                w[_u(Ro + 3 * a + 2)] = e0 * w[_u(Rp + 2)] + e1 * w[_u(Rp + 5)] + e2 * w[_u(Rp + 8)]
            r0, r1, r2 = w[_u(ro)], w[_u(ro + 1)], w[_u(ro + 2)]
            for a in range(3):
                w[_u(po + a)] = w[_u(pp + a)] + (w[_u(Rp + a)] * r0 + w[_u(Rp + 3 + a)] * r1 + w[_u(Rp + 6 + a)] * r2)


@njit
def base_velocity(ip, fp, w, E, dq, gyro):
    """The floating base's velocity ``v_0 = [ω_0; 0]`` (rad/s, base coordinates) into
    ``w[WTMP:WTMP + 6]``: the gyro reading ``ω_F`` (IMU frame) in the IMU's body
    ``ω_b = E_Fᵀ ω_F``, minus the joint rates of the chain from the base to that body carried to
    it, ``ω_rel``, rotated back: ``ω_0 = ᵇR_0ᵀ (ω_b − ω_rel)`` with the pose ``R`` of the IMU's body."""
    ie, i_vix, f_S, i_chain, v0 = ip[K_IMUE], ip[K_VIX], ip[K_S], ip[K_CHAIN], ip[K_WTMP]
    wb0 = fp[_u(ie)] * gyro[0] + fp[_u(ie + 3)] * gyro[1] + fp[_u(ie + 6)] * gyro[2]
    wb1 = fp[_u(ie + 1)] * gyro[0] + fp[_u(ie + 4)] * gyro[1] + fp[_u(ie + 7)] * gyro[2]
    wb2 = fp[_u(ie + 2)] * gyro[0] + fp[_u(ie + 5)] * gyro[1] + fp[_u(ie + 8)] * gyro[2]
    x0, x1, x2 = 0.0, 0.0, 0.0
    for kk in range(ip[K_NCHAIN]):
        i = ip[_u(i_chain + kk)]
        k = ip[_u(i_vix + i)]
        qd = dq[_u(k)] if k >= 0 else 0.0
        eo, so = 9 * i, f_S + 6 * i
        y0 = E[_u(eo)] * x0 + E[_u(eo + 1)] * x1 + E[_u(eo + 2)] * x2 + fp[_u(so)] * qd
        y1 = E[_u(eo + 3)] * x0 + E[_u(eo + 4)] * x1 + E[_u(eo + 5)] * x2 + fp[_u(so + 1)] * qd
        y2 = E[_u(eo + 6)] * x0 + E[_u(eo + 7)] * x1 + E[_u(eo + 8)] * x2 + fp[_u(so + 2)] * qd
        x0, x1, x2 = y0, y1, y2
    d0, d1, d2 = wb0 - x0, wb1 - x1, wb2 - x2
    Rb = ip[K_WRP] + 9 * ip[K_IMUB]
    w[_u(v0)] = w[_u(Rb)] * d0 + w[_u(Rb + 3)] * d1 + w[_u(Rb + 6)] * d2
    w[_u(v0 + 1)] = w[_u(Rb + 1)] * d0 + w[_u(Rb + 4)] * d1 + w[_u(Rb + 7)] * d2
    w[_u(v0 + 2)] = w[_u(Rb + 2)] * d0 + w[_u(Rb + 5)] * d1 + w[_u(Rb + 8)] * d2
    w[_u(v0 + 3)], w[_u(v0 + 4)], w[_u(v0 + 5)] = 0.0, 0.0, 0.0


@njit
def velocities_and_bias(ip, fp, w, E, V, dq, ddq):
    """Nori eq. (2) forward, ``v_i = ⁱX_λ v_λ + S_i q̇_i`` into ``V`` (6 NB; a free flyer's ``v_0``
    from ``w[WTMP:WTMP + 6]``; m/s and rad/s, body coordinates), and the bias terms of eq. (3):
    ``c_i = v_i × S_i q̇_i`` (zero for the free flyer) and ``ν_i = v_i ×* I_i v_i`` (N, N·m).

    ``RNEA`` 0: ``c`` and ``ν`` are written at ``WC``, ``WNU`` (the generic system's right-hand
    side). ``RNEA`` 1: the RNEA's forward pass with the known ``q̈`` (eqs. 3a, 3f without contacts)
    uses them in the same loop instead, ``a_i = ⁱX_λ a_λ + S_i q̈_i + c_i`` (``−a_g`` at ``AG`` for
    the parent of a root on a fixed base; zero for a free flyer) and ``f_i = I_i a_i + ν_i``, at
    ``WA``, ``WF``."""
    i_par, i_jt, i_vix, f_S, f_I, f_ag = ip[K_PAR], ip[K_JT], ip[K_VIX], ip[K_S], ip[K_I], ip[K_AG]
    w_r, w_v0, rnea = ip[K_WR], ip[K_WTMP], ip[K_RNEA]
    w_c, w_a = ip[K_WC], ip[K_WA]
    w_y = ip[K_WF] if rnea else ip[K_WNU]                # where ν_i goes: f_i, or ν_i
    for i in range(ip[K_NB]):
        p = ip[_u(i_par + i)]
        t = ip[_u(i_jt + i)]
        vo, so, yo, ao = 6 * i, f_S + 6 * i, w_y + 6 * i, w_a + 6 * i
        c0, c1, c2, c3, c4, c5 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        if t == FREE:
            for k in range(6):
                V[_u(vo + k)] = w[_u(w_v0 + k)]
        else:
            if p >= 0:
                mx(E, 9 * i, w, w_r + 3 * i, V, 6 * p, V, vo)
            else:
                for k in range(6):
                    V[_u(vo + k)] = 0.0
            k = ip[_u(i_vix + i)]
            qd = dq[_u(k)] if k >= 0 else 0.0
            w0, w1, w2 = V[_u(vo)], V[_u(vo + 1)], V[_u(vo + 2)]
            if t == REVOLUTE:                            # v_J = [s q̇; 0]; c = v × v_J = [ω × s q̇; u × s q̇]
                m0, m1, m2 = fp[_u(so)] * qd, fp[_u(so + 1)] * qd, fp[_u(so + 2)] * qd
                V[_u(vo)], V[_u(vo + 1)], V[_u(vo + 2)] = w0 + m0, w1 + m1, w2 + m2
                u0, u1, u2 = V[_u(vo + 3)], V[_u(vo + 4)], V[_u(vo + 5)]
                c0, c1, c2 = w1 * m2 - w2 * m1, w2 * m0 - w0 * m2, w0 * m1 - w1 * m0   # (ω + m) × m = ω × m
                c3, c4, c5 = u1 * m2 - u2 * m1, u2 * m0 - u0 * m2, u0 * m1 - u1 * m0
            elif t == PRISMATIC:                         # v_J = [0; s q̇]; c = v × v_J = [0; ω × s q̇]
                m0, m1, m2 = fp[_u(so + 3)] * qd, fp[_u(so + 4)] * qd, fp[_u(so + 5)] * qd
                V[_u(vo + 3)] += m0
                V[_u(vo + 4)] += m1
                V[_u(vo + 5)] += m2
                c3, c4, c5 = w1 * m2 - w2 * m1, w2 * m0 - w0 * m2, w0 * m1 - w1 * m0
        for k in range(6):                               # ν_i = v_i ×* (I_i v_i), in place
            w[_u(yo + k)] = 0.0
        rbi_apply(fp, f_I + 10 * i, V, vo, w, yo, 1.0)
        set6(w, yo, fcross(V, vo, w, yo))
        if not rnea:
            co = w_c + 6 * i
            w[_u(co)], w[_u(co + 1)], w[_u(co + 2)] = c0, c1, c2
            w[_u(co + 3)], w[_u(co + 4)], w[_u(co + 5)] = c3, c4, c5
            continue
        if t == FREE:                                    # a_i = ⁱX_λ a_λ + S_i q̈_i + c_i
            for k in range(6):
                w[_u(ao + k)] = 0.0
        else:
            if p >= 0:
                mx(E, 9 * i, w, w_r + 3 * i, w, w_a + 6 * p, w, ao)
            else:
                mx(E, 9 * i, w, w_r + 3 * i, fp, f_ag, w, ao)
            k = ip[_u(i_vix + i)]
            qdd = ddq[_u(k)] if k >= 0 else 0.0
            if t == REVOLUTE:
                c0, c1, c2 = c0 + fp[_u(so)] * qdd, c1 + fp[_u(so + 1)] * qdd, c2 + fp[_u(so + 2)] * qdd
            elif t == PRISMATIC:
                c3, c4, c5 = c3 + fp[_u(so + 3)] * qdd, c4 + fp[_u(so + 4)] * qdd, c5 + fp[_u(so + 5)] * qdd
            w[_u(ao)] += c0
            w[_u(ao + 1)] += c1
            w[_u(ao + 2)] += c2
            w[_u(ao + 3)] += c3
            w[_u(ao + 4)] += c4
            w[_u(ao + 5)] += c5
        rbi_apply(fp, f_I + 10 * i, w, ao, w, yo, 1.0)   # f_i = ν_i + I_i a_i


@njit
def imu_velocity_product(ip, fp, w, V, out, o):
    """``out[o:o + 3] = ω_F × v_F`` (m/s²) with ``[ω_F; v_F] = ᶠX_b v_b`` the IMU frame's velocity
    (``ᶠX_b = plux(E_F, r_F)``, the frame's pose on its body ``b``), in ``w[WTMP + 6:WTMP + 12]``."""
    t = ip[K_WTMP] + 6
    mx(fp, ip[K_IMUE], fp, ip[K_IMUR], V, 6 * ip[K_IMUB], w, t)
    out[_u(o)] = w[_u(t + 1)] * w[_u(t + 5)] - w[_u(t + 2)] * w[_u(t + 4)]
    out[_u(o + 1)] = w[_u(t + 2)] * w[_u(t + 3)] - w[_u(t)] * w[_u(t + 5)]
    out[_u(o + 2)] = w[_u(t)] * w[_u(t + 4)] - w[_u(t + 1)] * w[_u(t + 3)]
