"""One estimate: the compiled tick that chains the steps (kinematics, reduction, least squares,
outputs) on the packed layout, with its explicit signature."""
from __future__ import annotations

import numpy as np
from numba import types as nbt

from ..actuators import subtract_actuator_terms
from ..checks import first_non_finite, zero_if_finite
from ...model.forward_kinematics import forward_kinematics, imu_velocity_product
from .accelerations import acceleration_columns, joint_columns
from .covariance import covariance
from .layout import (H_ACTF, H_ACTI, H_COV, H_FLOAT, H_IMUB, H_IMUY, H_MS, H_NACT, H_NB, H_NH, H_NX, H_NIMU, H_NJ,
    H_NOUTM, H_NY, H_RED, H_SCOV,
    H_SIMU, H_SEND, H_SFP, H_SINFO, H_SOLC, H_SOUT, H_STAIL, H_SW, H_SX, H_WA0, H_WA00, H_WH, H_WK, H_WLB, H_WMS,
    _A1, _IN, _QR_THRESHOLD, _SINGULAR, _u, njit)
from .outputs import _outputs, _residual
from .reduction import _backward_without_contacts, _base_equation, _observations
from .limbs import least_squares, limb_covariance
from .solve import _qr_solve

_SIGNATURE = nbt.int64(nbt.int64[::1], _A1, _IN, _IN, _IN, _IN)


def structured_tick(ip, S, q, dq, ddq, y):
    """One estimate (module docstring) from the joint state and the measurement vector ``y``
    (the IMU's slice, ``NIMU`` values from ``IMUY``, copied to the state's IMU sample).
    ``S``: the estimator's state buffer (``EstimatorData.state``),
    which holds its ``(NB, 3, 3)`` rotations ``E`` and ``(NB, 6)`` velocities ``V`` (filled as its
    kinematics fills them), the generic solution vector ``xsol`` (whose ``a_0`` entries are set for
    ``Estimate.base_acceleration``), the IMU sample ``imu_buf``, the outputs ``out`` and ``info``,
    then the packed constants ``fp`` and the work space ``w`` (one array instead of eight: numba
    wraps each array argument in an allocated, atomically counted reference, ~80 ns). Returns 0; 1
    for a non-finite input (``info[0]`` which, ``info[1]`` index, as the generic tick); 2 for a singular state (``info[2]`` the pivot ratio,
    ``info[3]`` the whitened residual's squared norm ``χ²``); 3 for an
    input of the wrong size (nothing computed). Where a variance by limbs cancels (:func:`~.limbs._variance`)
    the least squares is solved again, densely. Compiled by :func:`compiled_tick`. Its steps are
    mirrored, stage by stage, by ``benchmarks/bench_tick_stages.py``: change both together."""
    NB, NJ, NX, MS = ip[H_NB], ip[H_NJ], ip[H_NX], ip[H_MS]
    fp, w = S[ip[H_SFP]:ip[H_SW]], S[ip[H_SW]:ip[H_SEND]]
    E, V = S[0:9 * NB], S[9 * NB:15 * NB]
    imu_buf, info = S[ip[H_SIMU]:ip[H_SIMU] + 13], S[ip[H_SINFO]:ip[H_SINFO] + 4]
    if q.shape[0] != NJ or dq.shape[0] != NJ or ddq.shape[0] != NJ or y.shape[0] != ip[H_NY]:
        return 3
    imu_y = ip[H_IMUY]
    for k in range(ip[H_NIMU]):
        imu_buf[_u(k)] = y[_u(imu_y + k)]
    # ---- inputs must be finite (same codes as the generic tick: q, dq, ddq, y → info[0] = 1…4)
    if zero_if_finite(q) + zero_if_finite(dq) + zero_if_finite(ddq) + zero_if_finite(y) != 0.0:
        first_non_finite((q, dq, ddq, y), info)
        return 1
    floating = ip[H_FLOAT]
    w_ms = ip[H_WMS]

    # ---- the forward kinematics (the package's one pass) with the RNEA's forward pass, then backward
    forward_kinematics(ip, fp, w, E, V, q, dq, ddq, imu_buf[4:7])
    _backward_without_contacts(ip, fp, w, E)
    # ---- sensor sources msrc = [1, ω_F × v_F, y'] (y' = y less the actuators' friction and armature)
    if ip[H_IMUB] >= 0:
        imu_velocity_product(ip, fp, w, V, w, w_ms + 1)
    for k in range(y.shape[0]):
        w[_u(w_ms + 4 + k)] = y[_u(k)]
    subtract_actuator_terms(ip[H_NACT], ip, ip[H_ACTI], fp, ip[H_ACTF], dq, ddq, w, w_ms + 4)   # y → y'

    # ---- observations, the base equation, the least-squares problem in x = (δ, h)
    _observations(ip, fp, w)
    measured = NX > ip[H_NH]
    if ip[H_COV] or measured:
        joint_columns(ip, fp, w)
    if measured:
        acceleration_columns(ip, fp, w)
    if floating and not _base_equation(ip, w):
        info[2] = 0.0
        return 2
    xsol, out = S[ip[H_SX]:ip[H_SIMU]], S[ip[H_SOUT]:ip[H_SINFO]]
    for attempt in range(2):                        # by limbs (P4) or dense (condition estimate: limbs.py);
        dense = attempt == 1                        # densely again where a variance by limbs cancels
        ratio = least_squares(ip, fp, w, dense)
        w_h = ip[H_WH]
        if ratio < _QR_THRESHOLD:
            ratio = _qr_solve(ip, fp, w)
            if not (ratio > _SINGULAR):
                info[2] = ratio
                return 2
            ratio *= ratio                           # on the Cholesky ratio's scale: a squared sine
        info[2] = ratio
        w_a0, w_K, w_a00 = ip[H_WA0], ip[H_WK], ip[H_WA00]
        if floating:
            i_solc = ip[H_SOLC]
            for k in range(6):
                s = w[_u(w_a00 + k)]
                for j in range(NX):
                    s += w[_u(w_K + 6 * j + k)] * w[_u(w_h + j)]
                w[_u(w_a0 + k)] = s
                if ip[_u(i_solc + k)] >= 0:
                    xsol[_u(ip[_u(i_solc + k)])] = s

        # ---- outputs and residual
        _outputs(ip, fp, w, E, V, out)
        n_out = ip[H_NOUTM]
        info[3] = 0.0
        if ip[H_RED]:
            _residual(ip, fp, w, out)
            chi2 = 0.0                               # the whitened residual's squared norm
            for k in range(n_out, n_out + MS):
                chi2 += out[_u(k)] * out[_u(k)]
            info[3] = chi2
            n_out += MS
        for k in range(n_out):
            if not np.isfinite(out[_u(k)]):
                return 2
        if ip[H_COV]:
            cov = S[ip[H_SCOV]:ip[H_STAIL]]
            if w[_u(ip[H_WLB])]:                    # the least squares went by limbs (P5)
                if not limb_covariance(ip, fp, w, cov):
                    continue                        # a variance has cancelled (limbs._variance): densely
            else:
                covariance(ip, fp, w, cov)
            for k in range(cov.shape[0]):
                if not np.isfinite(cov[_u(k)]):
                    return 2
        return 0
    return 2


_compiled = []


def compiled_tick():
    """:func:`structured_tick` compiled for :data:`_SIGNATURE` (on first use, from numba's cache when
    there is one, so that importing the package compiles nothing). With an explicit signature, any
    other argument type raises ``TypeError`` instead of compiling a new version: the cue for
    :meth:`StructuredSolver.estimate` to pack the inputs first."""
    if not _compiled:
        _compiled.append(njit([_SIGNATURE])(structured_tick))
    return _compiled[0]
