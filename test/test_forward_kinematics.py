"""The one compiled forward kinematics pass (``rbd_estimator.model.forward_kinematics``) against
pinocchio on real robots: joint transforms, poses, the floating base's velocity recovered from a
gyro reading generated from a known state, velocities, the bias terms, and the RNEA's forward pass."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from oracle import urdf_xml

from rbd_estimator import RobotModel
from rbd_estimator.model.forward_kinematics import (K_WA, K_WC, K_WF, K_WNU, K_WP, K_WR, K_WRP, K_WTMP,
                                                    KinematicTree, forward_kinematics, imu_velocity_product)
from rbd_estimator.model.joints import motion_subspace
from rbd_estimator.spatial import axis_angle_to_R, crf, crm, plux


def _setup(robot, floating, rng, imu_joint=None, rnea=False):
    """Our model and pinocchio's; a random state in pinocchio's layout (identity base pose; base
    linear velocity zero, as the estimator assumes); the packed tree with every pose wanted."""
    xml = urdf_xml(robot)
    m = RobotModel.from_urdf(xml, floating_base=floating)
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromXML(xml)
    pd = pm.createData()
    q, v, a = pin.neutral(pm), rng.normal(size=pm.nv), rng.normal(size=pm.nv)
    jids = {}                                             # our body → pinocchio joint
    for i, name in enumerate(m.body_joint_names):
        if m.joint_dofs[i] == 1:
            jid = pm.getJointId(name)
            jids[i] = jid
            q[pm.idx_qs[jid]] = rng.uniform(-1.2, 1.2)
    if floating:
        v[0:3] = 0.0
        a[0:6] = 0.0                                      # the structured reduction's a_0 = 0
        jids[0] = 1
    one = m.joint_dofs == 1
    qidx = np.array([pm.idx_qs[jids[i]] if one[i] else -1 for i in range(m.NB)], dtype=np.int64)
    vidx = np.array([pm.idx_vs[jids[i]] if one[i] else -1 for i in range(m.NB)], dtype=np.int64)
    imu = (-1, np.eye(3), np.zeros(3))
    if imu_joint is not None:
        axis = rng.normal(size=3)
        imu = (m.body_joint_names.index(imu_joint), axis_angle_to_R(axis / np.linalg.norm(axis), 0.7),
               rng.normal(size=3))
    tree = KinematicTree(m, qidx, vidx, imu=imu, poses=tuple(range(m.NB)), rnea=rnea)
    return m, pm, pd, q, v, a, jids, tree


def _run(tree, q, v, a, gyro, v0=None):
    ip, fp, w = tree.packed()
    NB = tree.model.NB
    E, V = np.zeros(9 * NB), np.zeros(6 * NB)
    if v0 is not None:
        w[ip[K_WTMP]:ip[K_WTMP] + 6] = v0
    forward_kinematics(ip, fp, w, E, V, q, v, a, gyro)
    return ip, fp, w, E.reshape(NB, 3, 3), V.reshape(NB, 6)


def _motion(m):
    """pinocchio Motion [linear; angular] → Featherstone [ω; v]."""
    return np.concatenate([m.angular, m.linear])


@pytest.mark.parametrize("robot", ["icub", "talos"])
def test_floating_base_against_pinocchio(robot):
    rng = np.random.default_rng(3)
    imu_joint = "torso_yaw" if robot == "icub" else "torso_2_joint"
    m, pm, pd, q, v, a, jids, tree = _setup(robot, True, rng, imu_joint=imu_joint)
    pin.forwardKinematics(pm, pd, q, v, a)
    b, E_F, r_F = tree.imu
    gyro = E_F @ pd.v[jids[b]].angular                    # what an IMU on body b reads
    ip, fp, w, E, V = _run(tree, q, v, a, gyro)
    R = w[ip[K_WRP]:ip[K_WRP] + 9 * m.NB].reshape(m.NB, 3, 3)
    p = w[ip[K_WP]:ip[K_WP] + 3 * m.NB].reshape(m.NB, 3)
    r = w[ip[K_WR]:ip[K_WR] + 3 * m.NB].reshape(m.NB, 3)
    c = w[ip[K_WC]:ip[K_WC] + 6 * m.NB].reshape(m.NB, 6)
    nu = w[ip[K_WNU]:ip[K_WNU] + 6 * m.NB].reshape(m.NB, 6)
    np.testing.assert_allclose(w[ip[K_WTMP]:ip[K_WTMP] + 6], np.concatenate([v[3:6], np.zeros(3)]), atol=1e-12)
    same_parent = 0
    for i, jid in jids.items():
        if i > 0 and pm.parents[jid] == jids.get(m.parents[i]):
            lMi = pd.liMi[jid]                            # ⁱX_λ = plux(E, r): E = Rᵀ, r = the joint's origin
            np.testing.assert_allclose(E[i], lMi.rotation.T, atol=1e-12)
            np.testing.assert_allclose(r[i], lMi.translation, atol=1e-12)
            same_parent += 1
        if i > 0:
            np.testing.assert_allclose(R[i], pd.oMi[jid].rotation.T, atol=1e-12)
            np.testing.assert_allclose(p[i], pd.oMi[jid].translation, atol=1e-12)
        np.testing.assert_allclose(V[i], _motion(pd.v[jid]), atol=1e-11)
    assert same_parent > m.NB // 2
    for i in range(m.NB):                                 # eq. (3) from the velocities
        S = motion_subspace(m, i)
        qd = v[tree.vidx[i]:tree.vidx[i] + 1] if tree.vidx[i] >= 0 else np.zeros(S.shape[1])
        np.testing.assert_allclose(c[i], crm(V[i]) @ S @ qd if i > 0 else np.zeros(6), atol=1e-11)
        np.testing.assert_allclose(nu[i], crf(V[i]) @ m.inertias[i] @ V[i], atol=1e-10)
    out = np.zeros(3)
    imu_velocity_product(ip, fp, w, V.reshape(-1), out, 0)
    vF = plux(E_F, r_F) @ V[b]                            # ω_F × v_F of the IMU frame
    np.testing.assert_allclose(out, np.cross(vF[:3], vF[3:]), atol=1e-11)


def test_rnea_forward_pass_against_pinocchio():
    """With ``rnea``: ``a_i`` is pinocchio's spatial acceleration (free flyer's ``a_0 = 0``) and
    ``f_i = I_i a_i + v_i ×* I_i v_i``."""
    rng = np.random.default_rng(5)
    m, pm, pd, q, v, a, jids, tree = _setup("icub", True, rng, imu_joint="neck_pitch", rnea=True)
    pin.forwardKinematics(pm, pd, q, v, a)
    b, E_F, _ = tree.imu
    ip, fp, w, E, V = _run(tree, q, v, a, E_F @ pd.v[jids[b]].angular)
    A = w[ip[K_WA]:ip[K_WA] + 6 * m.NB].reshape(m.NB, 6)
    F = w[ip[K_WF]:ip[K_WF] + 6 * m.NB].reshape(m.NB, 6)
    for i, jid in jids.items():
        np.testing.assert_allclose(A[i], _motion(pd.a[jid]), atol=1e-10)
    for i in range(m.NB):
        np.testing.assert_allclose(F[i], m.inertias[i] @ A[i] + crf(V[i]) @ m.inertias[i] @ V[i], atol=1e-9)


def test_fixed_base_gravity_as_root_acceleration():
    """Fixed base: ``a_i`` is pinocchio's acceleration plus ``ⁱX_0 (−a_g)`` (gravity as the root's
    acceleration), velocities are pinocchio's."""
    rng = np.random.default_rng(7)
    m, pm, pd, q, v, a, jids, tree = _setup("icub", False, rng, rnea=True)
    pin.forwardKinematics(pm, pd, q, v, a)
    ip, fp, w, E, V = _run(tree, q, v, a, np.zeros(3))
    A = w[ip[K_WA]:ip[K_WA] + 6 * m.NB].reshape(m.NB, 6)
    g = np.concatenate([np.zeros(3), -m.gravity])
    for i, jid in jids.items():
        X0 = pin.SE3(pd.oMi[jid]).inverse().action        # ⁱX_0 in pinocchio's [linear; angular] order
        P = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])
        np.testing.assert_allclose(V[i], _motion(pd.v[jid]), atol=1e-11)
        np.testing.assert_allclose(A[i], _motion(pd.a[jid]) + P @ X0 @ P @ g, atol=1e-10)


def test_spatial_transform_kernels_against_plux():
    """The compiled 6-vector transforms the kernels chain, against the 6×6 Plücker matrix
    ``X = plux(E, r)`` (RBDA eq. 2.24): ``mx`` = X m, ``mx_inv`` = X⁻¹ m, ``fx`` = X⁻ᵀ f,
    ``fxT_add`` += Xᵀ f."""
    from rbd_estimator.kernels.spatial import fx, fxT_add, mx, mx_inv
    rng = np.random.default_rng(4)
    for _ in range(20):
        axis = rng.normal(size=3)
        E, r = axis_angle_to_R(axis / np.linalg.norm(axis), rng.uniform(-3, 3)), rng.normal(size=3)
        X, x, y0 = plux(E, r), rng.normal(size=6), rng.normal(size=6)
        e = np.ascontiguousarray(E).reshape(-1)
        for kernel, want in ((mx, X @ x), (mx_inv, np.linalg.solve(X, x))):
            y = np.zeros(6)
            kernel(e, 0, r, 0, x, 0, y, 0)
            assert np.allclose(y, want, rtol=0, atol=1e-12)
        y = np.zeros(6)
        fx(e, 0, r, 0, x, 0, y, 0, 2.0)
        assert np.allclose(y, 2.0 * np.linalg.solve(X.T, x), rtol=0, atol=1e-12)
        y = y0.copy()
        fxT_add(e, 0, r, 0, x, 0, y, 0, -1.0)
        assert np.allclose(y, y0 - X.T @ x, rtol=0, atol=1e-12)
