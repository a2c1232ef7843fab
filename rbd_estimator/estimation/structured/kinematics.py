"""The forward kinematics of a tick (Nori eqs. 2–3a): joint transforms ``ⁱX_λ(i)``, the poses
``ⁱX_0`` the sensors and contacts need, and the floating base's angular velocity from the gyro."""
from __future__ import annotations

import numpy as np

from ...model.robot_model import PRISMATIC, REVOLUTE
from .layout import (H_ABC, H_AX, H_CHAIN, H_ET, H_FLOAT, H_IMUB, H_IMUE, H_JT, H_NB, H_NCHAIN, H_NPOSE, H_PAR,
    H_POSE, H_QIX, H_RT, H_S, H_WP, H_WR, H_WRP, _u, njit)

@njit
def _joint_transforms_and_poses(ip, fp, w, E, q):
    """``ⁱX_λ(i) = plux(E_i, r_i)`` for every body (revolute: ``E = cos q A + sin q B + C``), then the
    poses ``ⁱX_0 = plux(R_i, p_i)`` of the bodies that need one: ``R_i = E_i R_λ``,
    ``p_i = p_λ + R_λᵀ r_i``."""
    NB, floating = ip[H_NB], ip[H_FLOAT]
    i_jt, i_qix = ip[H_JT], ip[H_QIX]
    f_Et, f_rt, f_ax, f_abc = ip[H_ET], ip[H_RT], ip[H_AX], ip[H_ABC]
    w_r, w_R, w_p = ip[H_WR], ip[H_WRP], ip[H_WP]
    for i in range(NB):
        t = ip[_u(i_jt + i)]
        eo, ro, to = 9 * i, w_r + 3 * i, f_rt + 3 * i
        if t == REVOLUTE:
            qi = q[_u(ip[_u(i_qix + i)])]
            c, s = np.cos(qi), np.sin(qi)
            ao = f_abc + 27 * i
            for k in range(9):
                E[_u(eo + k)] = c * fp[_u(ao + k)] + s * fp[_u(ao + 9 + k)] + fp[_u(ao + 18 + k)]
            w[_u(ro)], w[_u(ro + 1)], w[_u(ro + 2)] = fp[_u(to)], fp[_u(to + 1)], fp[_u(to + 2)]
        else:
            eto = f_Et + 9 * i
            for k in range(9):
                E[_u(eo + k)] = fp[_u(eto + k)]
            if t == PRISMATIC:
                qi = q[_u(ip[_u(i_qix + i)])]
                x0, x1, x2 = fp[_u(f_ax + 3 * i)] * qi, fp[_u(f_ax + 3 * i + 1)] * qi, fp[_u(f_ax + 3 * i + 2)] * qi
                for a in range(3):
                    w[_u(ro + a)] = fp[_u(to + a)] + (fp[_u(eto + a)] * x0 + fp[_u(eto + 3 + a)] * x1
                                                      + fp[_u(eto + 6 + a)] * x2)
            else:
                w[_u(ro)], w[_u(ro + 1)], w[_u(ro + 2)] = fp[_u(to)], fp[_u(to + 1)], fp[_u(to + 2)]
    i_par, i_pose = ip[H_PAR], ip[H_POSE]
    for kk in range(ip[H_NPOSE]):
        i = ip[_u(i_pose + kk)]
        if floating and i == 0:
            continue                                   # the base's pose is the identity
        p = ip[_u(i_par + i)]
        Ro, po, eo, ro = w_R + 9 * i, w_p + 3 * i, 9 * i, w_r + 3 * i
        if p < 0:
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
def _base_velocity(ip, fp, w, E, dq, iw, v0):
    """The floating base's velocity ``[ω_0; 0]``: the gyro reading rotated into the IMU body, minus
    the joint rates between the base and that body, in base coordinates (kinematics.py)."""
    for k in range(6):
        v0[_u(k)] = 0.0
    imub = ip[H_IMUB]
    if imub < 0 or not ip[H_FLOAT]:
        return
    ie, i_qix, f_S = ip[H_IMUE], ip[H_QIX], ip[H_S]
    wb0 = fp[_u(ie)] * iw[0] + fp[_u(ie + 3)] * iw[1] + fp[_u(ie + 6)] * iw[2]
    wb1 = fp[_u(ie + 1)] * iw[0] + fp[_u(ie + 4)] * iw[1] + fp[_u(ie + 7)] * iw[2]
    wb2 = fp[_u(ie + 2)] * iw[0] + fp[_u(ie + 5)] * iw[1] + fp[_u(ie + 8)] * iw[2]
    x0, x1, x2 = 0.0, 0.0, 0.0
    i_chain = ip[H_CHAIN]
    for kk in range(ip[H_NCHAIN]):
        i = ip[_u(i_chain + kk)]
        k = ip[_u(i_qix + i)]
        qd = dq[_u(k)] if k >= 0 else 0.0
        eo, so = 9 * i, f_S + 6 * i
        y0 = E[_u(eo)] * x0 + E[_u(eo + 1)] * x1 + E[_u(eo + 2)] * x2 + fp[_u(so)] * qd
        y1 = E[_u(eo + 3)] * x0 + E[_u(eo + 4)] * x1 + E[_u(eo + 5)] * x2 + fp[_u(so + 1)] * qd
        y2 = E[_u(eo + 6)] * x0 + E[_u(eo + 7)] * x1 + E[_u(eo + 8)] * x2 + fp[_u(so + 2)] * qd
        x0, x1, x2 = y0, y1, y2
    d0, d1, d2 = wb0 - x0, wb1 - x1, wb2 - x2
    Rb = ip[H_WRP] + 9 * imub                          # ᵇE_0: the product of the chain's rotations
    v0[0] = w[_u(Rb)] * d0 + w[_u(Rb + 3)] * d1 + w[_u(Rb + 6)] * d2
    v0[1] = w[_u(Rb + 1)] * d0 + w[_u(Rb + 4)] * d1 + w[_u(Rb + 7)] * d2
    v0[2] = w[_u(Rb + 2)] * d0 + w[_u(Rb + 5)] * d1 + w[_u(Rb + 8)] * d2
