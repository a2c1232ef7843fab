"""The state-dependent entries of the generic system ``D d + b = 0`` (Nori eqs. 3–5, 16), from the
package's one forward kinematics pass (:mod:`rbd_estimator.model.forward_kinematics`, which the
structured tick runs too).

* ``src[1 + 36 i + 6 a + b] = ⁱX_λ(i)[a, b]``: the only state-dependent blocks of ``D`` (eqs. 4a, 4d);
* ``rsrc``: the bias terms ``c_i`` and ``ν_i`` of eq. (3), ``ⁱX_λ a_0`` for the bodies on a fixed
  base (eq. 5's ``b``) and the IMU's ``ω_F × v_F``, at the layout's offsets (:mod:`.layout`).

Compiled; ``E``, ``r``, ``R``, ``p``, ``v`` and ``work`` are preallocated: nothing is allocated here.
"""
from __future__ import annotations

from ..jit import fast_njit as njit
from ..model.forward_kinematics import (base_velocity, imu_velocity_product, joint_transforms, poses,
                                        velocities_and_bias)
from ..model.robot_model import FREE
from ..model.spatial_kernels import mx, plux_into


@njit
def sources(tree, a0, imu, imu_path, E, r, R, p, v, work, q, dq, gyro, src, rsrc, r_c, r_nu, r_xa0, r_imu_wv):
    """Fill ``src`` and the kinematic part of ``rsrc`` for the state ``(q, q̇)`` and the gyro
    reading ``gyro`` (rad/s, IMU frame). ``tree``: a :class:`~..model.forward_kinematics.KinematicTree`;
    ``a0``: ``−a_g`` (m/s², fixed base); ``imu``: ``(body, E_F (9), r_F (3))`` of the IMU frame
    (body −1: none); ``imu_path``: the bodies from the base (0) to the IMU's body, whose poses
    the base velocity needs; ``work``: ≥ 12 values, ``work[0:6]`` the free flyer's velocity
    ``v_0``, from the gyro when there is an IMU (else as the caller set it)."""
    NB = tree.jtype.shape[0]
    imu_body, imu_E, imu_r = imu
    v0, t = work[0:6], work[6:12]
    joint_transforms(tree.jtype, tree.qidx, tree.E_tree, tree.r_tree, tree.axes, tree.abc, q, E, r)
    for i in range(NB):
        plux_into(E, 9 * i, r, 3 * i, src, 1 + 36 * i)
    if imu_body >= 0 and tree.jtype[0] == FREE:
        poses(tree.jtype, tree.parents, imu_path, E, r, R, p)
        base_velocity(imu_path[1:], tree.vidx, tree.S, E, R, imu_body, imu_E, gyro, dq, v0)
    velocities_and_bias(tree.jtype, tree.parents, tree.vidx, tree.S, tree.I, E, r, dq, v0, v,
                        rsrc[r_c:r_c + 6 * NB], rsrc[r_nu:r_nu + 6 * NB])
    for i in range(NB):                              # ⁱX_λ a_0 for the bodies on a fixed base
        if tree.parents[i] < 0 and tree.jtype[i] != FREE:
            mx(E, 9 * i, r, 3 * i, a0, 0, rsrc, r_xa0 + 6 * i)
        else:
            rsrc[r_xa0 + 6 * i:r_xa0 + 6 * i + 6] = 0.0
    if imu_body >= 0:
        imu_velocity_product(imu_E, imu_r, v, imu_body, t, rsrc, r_imu_wv)
