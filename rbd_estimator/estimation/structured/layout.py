"""Packed layout of the structured solver: header slots ``H_*`` of the integer blob ``ip`` (sizes,
flags and offsets into ``ip``, ``fp`` and the work array ``w``) and the compiled-kernel decorator.
The compact forms of inertias and revolute rotations the kernels read are
:func:`~rbd_estimator.model.spatial_kernels.rbi_compact` and
:func:`~rbd_estimator.model.forward_kinematics.revolute_abc`."""
from __future__ import annotations

import numpy as np
from numba import types as nbt

from ...jit import fast_njit as njit, uidx as _u


# ---------------------------------------------------------------------------- packed layout
# ip[H_x] holds a size, or the offset of array x in ip (ints), fp (floats) or w (work).
_NAMES = (
    # sizes and flags
    "NB FLOAT NJ NH NC MS MSC NOBS NGRP NPAIR NCP NPOSE NCHAIN IMUB RED NOUTM NMSRC NSEL NFT NCELLS NJT "
    # offsets in the estimator's state buffer S = [E, V, x, IMU sample, out, info]
    "SX SIMU SOUT SINFO "
    # int arrays
    "PAR JT QIX CHAIN POSE CBODY CK CHOFF CXB GRP PAIR CPATH GP GI RP RI CP CI CRP CRI CLO CHI OLO OHI OP OI "
    "TSEL KSEL SOLC EYET "
    # float arrays
    "ET RT AX S I ABC XB GX RX CX CRX OX IMUE IMUR AG "
    # work arrays
    "WR WA WF WC WNU WIC WRP WP WPHI WD WV0 WK WA00 WJ WRR WNAA WNAH WNHH WBA WBH WH WA0 WAL WG WMS WSEL WTMP WQR WU"
).split()


(H_NB, H_FLOAT, H_NJ, H_NH, H_NC, H_MS, H_MSC, H_NOBS, H_NGRP, H_NPAIR, H_NCP, H_NPOSE, H_NCHAIN, H_IMUB, H_RED,
 H_NOUTM, H_NMSRC, H_NSEL, H_NFT, H_NCELLS, H_NJT, H_SX, H_SIMU, H_SOUT, H_SINFO,
 H_PAR, H_JT, H_QIX, H_CHAIN, H_POSE, H_CBODY, H_CK, H_CHOFF, H_CXB, H_GRP, H_PAIR, H_CPATH, H_GP, H_GI, H_RP,
 H_RI, H_CP, H_CI, H_CRP, H_CRI, H_CLO, H_CHI, H_OLO, H_OHI, H_OP, H_OI, H_TSEL, H_KSEL, H_SOLC, H_EYET,
 H_ET, H_RT, H_AX, H_S, H_I, H_ABC, H_XB, H_GX, H_RX, H_CX, H_CRX, H_OX, H_IMUE, H_IMUR, H_AG,
 H_WR, H_WA, H_WF, H_WC, H_WNU, H_WIC, H_WRP, H_WP, H_WPHI, H_WD, H_WV0, H_WK, H_WA00, H_WJ, H_WRR, H_WNAA, H_WNAH, H_WNHH,
 H_WBA, H_WBH, H_WH, H_WA0, H_WAL, H_WG, H_WMS, H_WSEL, H_WTMP, H_WQR, H_WU) = range(len(_NAMES))


_H = {name: k for k, name in enumerate(_NAMES)}


_OBS_A, _OBS_F = 0, 1            # observation groups: acceleration of a body, wrench into a body


_QR_THRESHOLD = 1e-6             # Cholesky min L_kk²/N_kk below which the LS is re-solved by QR


_SINGULAR = 1e-13                # QR diagonal ratio below which the state is declared singular


class _Packer:
    """Concatenates arrays and remembers their offsets."""

    def __init__(self, dtype):
        self.dtype, self.parts, self.n = dtype, [], 0

    def add(self, arr) -> int:
        a = np.ascontiguousarray(np.asarray(arr, dtype=self.dtype).reshape(-1))
        off = self.n
        self.parts.append(a)
        self.n += a.size
        return off

    def array(self) -> np.ndarray:
        out = np.concatenate(self.parts) if self.parts else np.zeros(0, self.dtype)
        return np.ascontiguousarray(out.astype(self.dtype))


# ---------------------------------------------------------------------------- compiled kernels
# Indices are cast to unsigned (``_u``, :data:`rbd_estimator.jit.uidx`): all indices are non-negative.
_A1, _A2, _A3 = nbt.float64[::1], nbt.float64[:, ::1], nbt.float64[:, :, ::1]


_IN = nbt.float64[:]            # inputs: float64 vectors of any layout


assert all(globals()[f"H_{name}"] == k for k, name in enumerate(_NAMES))
