"""The state-dependent entries of the generic system ``D d + b = 0`` (Nori eqs. 3–5, 16), from the
package's one forward kinematics pass (:func:`rbd_estimator.model.forward_kinematics.forward_kinematics`,
which the structured tick runs too).

* ``src[1 + 36 i + 6 a + b] = ⁱX_λ(i)[a, b]``: the only state-dependent blocks of ``D`` (eqs. 4a, 4d);
* ``rsrc``: the bias terms ``c_i`` and ``ν_i`` of eq. (3), ``ⁱX_λ a_0`` for the bodies on a fixed
  base (eq. 5's ``b``) and the IMU's ``ω_F × v_F``, at the layout's offsets (:mod:`.layout`).

Compiled; ``ip``, ``fp``, ``w`` are a :class:`~rbd_estimator.model.forward_kinematics.KinematicTree`
packed without the RNEA part (:meth:`~rbd_estimator.model.forward_kinematics.KinematicTree.packed`):
nothing is allocated here.
"""
from __future__ import annotations

from ..jit import fast_njit as njit, uidx as _u
from ..model.forward_kinematics import (K_AG, K_IMUB, K_JT, K_NB, K_PAR, K_WC, K_WNU, K_WR, forward_kinematics,
                                        imu_velocity_product)
from ..model.robot_model import FREE
from ..kernels.spatial import mx, plux_into


@njit
def sources(ip, fp, w, E, V, q, dq, gyro, src, rsrc, r_c, r_nu, r_xa0, r_imu_wv):
    """Fill ``src`` and the kinematic part of ``rsrc`` for the state ``(q, q̇)`` and the gyro
    reading ``gyro`` (rad/s, IMU frame); ``E`` (9 NB) and ``V`` (6 NB) receive the rotations and
    velocities. A free flyer without IMU takes ``v_0`` from ``w[WTMP:WTMP + 6]``."""
    NB, w_r = ip[K_NB], ip[K_WR]
    forward_kinematics(ip, fp, w, E, V, q, dq, dq, gyro)
    for i in range(NB):
        plux_into(E, 9 * i, w, w_r + 3 * i, src, 1 + 36 * i)
    w_c, w_nu = ip[K_WC], ip[K_WNU]
    for k in range(6 * NB):
        rsrc[_u(r_c + k)] = w[_u(w_c + k)]
        rsrc[_u(r_nu + k)] = w[_u(w_nu + k)]
    for i in range(NB):                              # ⁱX_λ a_0 for the bodies on a fixed base
        if ip[_u(ip[K_PAR] + i)] < 0 and ip[_u(ip[K_JT] + i)] != FREE:
            mx(E, 9 * i, w, w_r + 3 * i, fp, ip[K_AG], rsrc, r_xa0 + 6 * i)
        else:
            for k in range(6):
                rsrc[_u(r_xa0 + 6 * i + k)] = 0.0
    if ip[K_IMUB] >= 0:
        imu_velocity_product(ip, fp, w, V, rsrc, r_imu_wv)
