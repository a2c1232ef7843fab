"""The generic tick's compiled kernels (the whole of Nori's system by one static sparse LU, §IV-D).

:func:`generic_tick` makes one estimate (kinematics, sources, gathers of the matrix and right-hand
side, numeric LU with the planned pivots, substitution, outputs), :func:`generic_covariance` the
posterior covariance of its outputs with the same factors, :func:`chi2` the whitened residual's
squared norm; :class:`~.estimator.Estimator` plans their arguments and calls them. All write into
preallocated buffers and allocate nothing.
"""
from __future__ import annotations

import numpy as np

from ..jit import njit
from . import kinematics as kin
from .actuators import subtract_actuator_terms
from .checks import first_non_finite
from .sparse_lu import gather, lu_solve, numeric_lu

__all__ = ["chi2", "generic_covariance", "generic_tick"]


@njit
def generic_tick(kip, kfp, kw, E, V, src, rsrc, r_c, r_nu, r_xa0, r_imu_wv, r_qdd, r_y, imu_y, n_imu, q, dq, ddq, y,
                 imu, n_act, act_i, act_f, GKp, GKi, GKx, Ax, GRp, GRi, GRx, Ap, Ai, Lp, Li, Lx, Up, Ui, Ux, w, x,
                 GOp, GOi, GOx, out, info):
    """One estimate (``kip`` … ``V``: the packed tree and buffers of :func:`.kinematics.sources`;
    ``y`` the measurement vector, whose IMU slice, ``n_imu`` values from ``imu_y``, is copied to
    ``imu``; ``n_act`` actuators, whose packed records ``act_i``, ``act_f`` (:mod:`.actuators`) turn
    the readings of current-sensed joints into ``y'`` in ``rsrc``). Returns 0, or 1 for a non-finite
    input (``info[0]`` = 1…4 for q, dq, ddq, y, ``info[1]`` = index), or 2 for a non-finite result."""
    if first_non_finite((q, dq, ddq, y), info):
        return 1
    for k in range(n_imu):
        imu[k] = y[imu_y + k]
    kin.sources(kip, kfp, kw, E, V, q, dq, imu[4:7], src, rsrc, r_c, r_nu, r_xa0, r_imu_wv)
    rsrc[r_qdd:r_qdd + ddq.shape[0]] = ddq
    rsrc[r_y:r_y + y.shape[0]] = y
    subtract_actuator_terms(n_act, act_i, 0, act_f, 0, dq, ddq, rsrc, r_y)     # y → y' (friction, armature)
    gather(GKp, GKi, GKx, src, Ax)                  # values of P D Q (eqs. 4, 16)
    gather(GRp, GRi, GRx, rsrc, x)                  # right-hand side -P b
    info[2] = numeric_lu(Ap, Ai, Ax, Lp, Li, Lx, Up, Ui, Ux, w)
    lu_solve(Lp, Li, Lx, Up, Ui, Ux, x)
    gather(GOp, GOi, GOx, x, out)
    for k in range(out.shape[0]):
        if not np.isfinite(out[k]):
            return 2
    return 0


@njit
def generic_covariance(Lp, Li, Lx, Up, Ui, Ux, soft_pos, GOp, GOi, GOx, x, out, nj, nc, cov):
    """The posterior covariance of the outputs by the generic path: the whitened noise of every soft
    row is a unit normal, so ``cov(out) = Σ_k (O K⁻¹ e_k)(O K⁻¹ e_k)ᵀ`` over the soft rows ``k``
    (one substitution each with the tick's factors). ``cov``: the ``nj`` torque variances, then
    the 6 × 6 block of each of the ``nc`` contact wrenches. Returns 0, or 2 when one is not finite."""
    for k in range(cov.shape[0]):
        cov[k] = 0.0
    for s in range(soft_pos.shape[0]):
        for k in range(x.shape[0]):
            x[k] = 0.0
        x[soft_pos[s]] = 1.0
        lu_solve(Lp, Li, Lx, Up, Ui, Ux, x)
        gather(GOp, GOi, GOx, x, out)
        for k in range(nj):
            cov[k] += out[k] * out[k]
        for c in range(nc):
            o, b = nj + 6 * c, nj + 36 * c
            for a in range(6):
                for e in range(6):
                    cov[b + 6 * a + e] += out[o + a] * out[o + e]
    for k in range(cov.shape[0]):
        if not np.isfinite(cov[k]):
            return 2
    return 0


@njit
def chi2(out, start, info):
    """``info[3]``: the squared norm of the whitened residual ``out[start:]``."""
    s = 0.0
    for k in range(start, out.shape[0]):
        s += out[k] * out[k]
    info[3] = s
