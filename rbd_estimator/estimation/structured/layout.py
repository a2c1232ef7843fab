"""Packed layout of the structured solver: header slots ``H_*`` of the integer blob ``ip`` (sizes,
flags and offsets into ``ip``, ``fp`` and the work array ``w``) and the compiled-kernel decorator.
The compact forms of inertias and revolute rotations the kernels read are
:func:`~rbd_estimator.model.spatial_kernels.rbi_compact` and
:func:`~rbd_estimator.model.forward_kinematics.revolute_abc`."""
from __future__ import annotations

from numba import types as nbt

from ...jit import fast_njit as njit, uidx as _u
from ...model.forward_kinematics import KIN_NAMES, Packer as _Packer


# ---------------------------------------------------------------------------- packed layout
# ip[H_x] holds a size, or the offset of array x in ip (ints), fp (floats) or w (work). The header
# starts with the forward kinematics' slots (KIN_NAMES: H_x == K_x), which its kernels read.
_NAMES = KIN_NAMES + (
    # sizes and flags
    "NJ NH NC MS MSC NOBS NGRP NPAIR NCP RED NOUTM NMSRC NSEL NY IMUY NIMU "
    # offsets in the estimator's state buffer S = [E, V, x, IMU sample, out, info, fp, w]
    "SX SIMU SOUT SINFO STAIL SFP SW SEND "
    # int arrays
    "CBODY CK CHOFF CXB GRP PAIR CPATH GP GI RP RI CP CI CRP CRI CLO CHI OLO OHI OP OI TSEL KSEL SOLC EYET "
    # float arrays
    "XB GX RX CX CRX OX "
    # work arrays
    "WIC WPHI WD WV0 WK WA00 WJ WRR WNAA WNAH WNHH WBA WBH WH WA0 WAL WG WMS WSEL WQR WU"
).split()


_H = {name: k for k, name in enumerate(_NAMES)}
globals().update({f"H_{name}": k for name, k in _H.items()})          # H_NB, H_FLOAT, …: the slots


_OBS_A, _OBS_F, _OBS_FP = 0, 1, 2  # observation groups: acceleration of a body, wrench into a body, sᵀ f_b


_QR_THRESHOLD = 1e-6             # Cholesky min L_kk²/N_kk below which the LS is re-solved by QR


_SINGULAR = 1e-13                # QR diagonal ratio below which the state is declared singular


# ---------------------------------------------------------------------------- compiled kernels
# Indices are cast to unsigned (``_u``, :data:`rbd_estimator.jit.uidx`): all indices are non-negative.
_A1, _A2, _A3 = nbt.float64[::1], nbt.float64[:, ::1], nbt.float64[:, :, ::1]


_IN = nbt.float64[:]            # inputs: float64 vectors of any layout


assert len(set(_NAMES)) == len(_NAMES) and all(_H[name] == k for k, name in enumerate(KIN_NAMES))
