"""Packed layout of the structured solver: header slots ``H_*`` of the integer blob ``ip`` (sizes,
flags and offsets into ``ip``, ``fp`` and the work array ``w``) and the compiled-kernel decorator.
The compact forms of inertias and revolute rotations the kernels read are
:func:`~rbd_estimator.kernels.spatial.rbi_compact` and the joint records of
:func:`~rbd_estimator.kernels.joints.joint_record`."""
from __future__ import annotations

from numba import types as nbt

from ...jit import fast_njit as njit, uidx as _u
from ...kernels.layout import Packer
from ...model.forward_kinematics import KIN


# ---------------------------------------------------------------------------- packed layout
# ip[H_x] holds a size, or the offset of array x in ip (ints), fp (floats) or w (work). The header
# starts with the forward kinematics' slots (KIN: H_x == K_x), which its kernels read.
HEADER = KIN.extend(
    # sizes and flags
    "NJ NH NX MSA NC MS MSC NBLK NOBS NGRP NPAIR NCP RED NOUTM NMSRC NSEL NY IMUY NIMU COV "
    # offsets in the estimator's state buffer S = [E, V, x, IMU sample, out, info, fp, w]
    "SX SIMU SOUT SINFO SCOV STAIL SFP SW SEND "
    # int arrays
    "CBODY CK CHOFF CXB GRP PAIR CPATH GP GI RP RI CP CI CRP CRI CLO CHI BLK OLO OHI OP OI TSEL KSEL SOLC EYET CBP CBI ANCP ANCI DSCP DSCI "
    # float arrays
    "XB GX RX CX CRX OX PRI "
    # work arrays
    "WIC WPHI WD WV0 WK WA00 WJ WRR WNAA WNAH WNHH WBA WBH WH WA0 WAL WG WMS WSEL WQR WU WT WZ WS0 WF0 WKT "
    # the actuator model (..actuators): its count, its ACT_INTS records in ip, its ACT_FLOATS records in fp
    "NACT ACTI ACTF "
    # the least squares by limbs (.limbs): block count, block records, the permutation of x (position →
    # column, column → position), the covariance's output rows by block and their rows' offsets in WZ,
    # the blocks' gather indices into N_hh, each joint's body; its work: the blocks' factors 𝓛_b, the
    # 13 × 12 border system, ỹ and x by blocks, the flag 'solved by limbs'
    "NLB LBK PRM IPM LOUT LOY HIX JBD WHL WSC WLY WLB "
    # the joint-space inertia M_ij of the pairs (i, j in i's subtree) (.covariance._joint_inertia), the
    # index of the pair (j, i) for each (i, j above i)
    "WM ANCM")


(H_NB, H_FLOAT, H_IMUB, H_NPOSE, H_NCHAIN, H_RNEA, H_JT, H_PAR, H_QIX, H_VIX, H_POSE, H_CHAIN, H_JNT, H_S, H_I, H_AG, H_IMUE, H_IMUR, H_WR, H_WRP, H_WP, H_WC, H_WNU, H_WA, H_WF, H_WTMP, H_NJ, H_NH, H_NX, H_MSA,
 H_NC, H_MS, H_MSC, H_NBLK, H_NOBS, H_NGRP, H_NPAIR, H_NCP, H_RED, H_NOUTM, H_NMSRC, H_NSEL, H_NY, H_IMUY, H_NIMU, H_COV, H_SX,
 H_SIMU, H_SOUT, H_SINFO, H_SCOV, H_STAIL, H_SFP, H_SW, H_SEND, H_CBODY, H_CK, H_CHOFF, H_CXB, H_GRP, H_PAIR, H_CPATH,
 H_GP, H_GI, H_RP, H_RI, H_CP, H_CI, H_CRP, H_CRI, H_CLO, H_CHI, H_BLK, H_OLO, H_OHI, H_OP, H_OI, H_TSEL, H_KSEL, H_SOLC,
 H_EYET, H_CBP, H_CBI, H_ANCP, H_ANCI, H_DSCP, H_DSCI, H_XB, H_GX, H_RX, H_CX, H_CRX, H_OX, H_PRI, H_WIC, H_WPHI, H_WD,
 H_WV0, H_WK, H_WA00, H_WJ, H_WRR, H_WNAA, H_WNAH, H_WNHH, H_WBA, H_WBH, H_WH, H_WA0, H_WAL, H_WG, H_WMS, H_WSEL, H_WQR,
 H_WU, H_WT, H_WZ, H_WS0, H_WF0, H_WKT, H_NACT, H_ACTI, H_ACTF, H_NLB, H_LBK, H_PRM, H_IPM, H_LOUT, H_LOY, H_HIX, H_JBD,
 H_WHL, H_WSC, H_WLY, H_WLB, H_WM, H_ANCM) = HEADER.slots
HEADER.check(globals(), "H_")


_OBS_A, _OBS_F, _OBS_FP = 0, 1, 2  # observation groups: acceleration of a body, wrench into a body, sᵀ f_b


_QR_THRESHOLD = 1e-6             # Cholesky min L_kk²/N_kk below which the LS is re-solved by QR


_REFINE_THRESHOLD = 1e-3         # Cholesky ratio below which the dense LS's solution is refined (solve._refine)


_LIMB_THRESHOLD = 1e-5           # limb blocks' (and the 6 × 6 factors') Cholesky ratio below which the dense LS is solved


_LIMB_PRIOR = 1e6                # a limb block's contact pivots must exceed this × their prior's information (.limbs)


_LIMB_CANCEL = 1e6               # a variance by limbs whose positive terms exceed this × it has cancelled: dense (.limbs)


_SINGULAR = 1e-13                # QR diagonal ratio below which the state is declared singular


# ---------------------------------------------------------------------------- compiled kernels
# Indices are cast to unsigned (``_u``, :data:`rbd_estimator.jit.uidx`): all indices are non-negative.
_A1, _A2, _A3 = nbt.float64[::1], nbt.float64[:, ::1], nbt.float64[:, :, ::1]


_IN = nbt.float64[:]            # inputs: float64 vectors of any layout



@njit(inline="always")
def _za(ip):
    """The ``a_0`` columns of a row of ``D`` and ``J`` (before ``x``): 6 on a floating base, and on a
    fixed base with measured joint accelerations, where they hold the observations' ``D_a`` (``ᵇX_0``,
    ``I^c_b ᵇX_0``) that the ``δ`` columns are made from (:mod:`.accelerations`); else 0."""
    return 6 if ip[H_FLOAT] or ip[H_NX] > ip[H_NH] else 0
