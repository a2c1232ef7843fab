"""Structured solver of Nori's estimation problem: the tree eliminates all unknowns but a few.

The generic tick (:mod:`.estimator`) factorises the whole system ``D d + b = 0`` with the whitened
sensor rows (Nori eq. 16) — the KKT system of the weighted least-squares problem when the sensors
are redundant — with a static sparse LU. This module solves the *same* problem (minimise the sum
of squared whitened sensor residuals subject to the Newton–Euler rows (3a), (3f), (3τ)) the way
the RNEA solves inverse dynamics (Nori §IV-A), by exploiting the tree:

* rows (3a), (3f), (3τ) are triangular once ``z = (a_0, h)`` is fixed — ``a_0`` the floating
  base's acceleration (6; a fixed base has ``a_0 = -a_g`` known and no such unknown) and ``h`` the
  free contact components. Every other unknown is affine in ``z``:

  - forward (3a): ``a_i = a⁰_i + ⁱX_0 a_0``, ``a⁰`` the RNEA forward pass with ``a_0 = 0``;
  - backward (3f): ``f_i = f⁰_i + I^c_i ⁱX_0 a_0 − Σ_{c below i} ⁱX*_{F_c} B_c h_c``, ``I^c`` the
    composite-rigid-body inertias (CRBA), ``f⁰`` the RNEA backward pass without contacts;
  - (3τ): ``τ_i = S_iᵀ f_i``;

* what is left are the floating base's Newton–Euler rows ``f_0 = 0`` (6, hard) and the sensor rows
  (soft), all affine in ``z``. ``I^c_0`` is positive definite, so the hard rows give
  ``a_0 = a⁰⁰ + P h`` with ``P = (I^c_0)⁻¹ [⁰X*_{F_c} B_c]_c`` and ``a⁰⁰ = −(I^c_0)⁻¹ f⁰_0`` (the
  null-space method with an explicit basis), and the rest is an unconstrained linear least-squares
  problem ``min |J_h h + J_a (a⁰⁰ + P h) − r|²`` in ``h`` alone (an exact solve when square);
* its normal equations are assembled block-wise, ``N = N_hh + Pᵀ N_ah + N_ahᵀ P + Pᵀ N_aa P``,
  using the sparsity of ``J_h`` (a sensor sees only the contacts below it), and solved by Cholesky;
  an ill-conditioned instance (a Cholesky pivot ``L_kk² / N_kk`` below 1e-6) is re-solved by
  Householder QR of ``J``;
* the outputs come from one more pass: ``α_i = ⁱX_0 a_0`` forward, the contact wrenches
  ``g_i`` backward along the paths from the contacts to the root, ``f_i = f⁰_i + I^c_i α_i − g_i``,
  ``τ_i = S_iᵀ f_i``; the residual is the whitened sensor residual in the layout's row order.

The sensor rows are not re-derived: their coefficients and right-hand sides are read from the
:class:`~.layout.SystemLayout` (whitening, FT rotations and signs, load-cell combinations), the
single definition of the conventions; joint-torque rows ``τ_j`` become ``S_jᵀ f_j``. Rows that
share unknowns are compressed off-line by a QR factorisation (``|G u − r|² = |R u − Qᵀ r|² +
const``), which turns an FT sensor's six rotated rows into six diagonal ones. Only the
Newton–Euler recursions live here, and :func:`build` checks them: it solves random, noisy
instances with both paths and keeps the generic one if they disagree.

The tick is one compiled function (numba) with no allocation: constant integers and floats are
packed into one ``int64`` and one ``float64`` array, all work space into one ``float64`` array, the
inputs are taken as the caller's arrays (checked for shape and finiteness in compiled code).
Transforms use Featherstone's rotation + translation arithmetic (RBDA §2.8), inertias the
10-number rigid-body form, revolute joint rotations the precomputed ``E = cos q A + sin q B + C``.
"""
from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from numba import types as nbt

from ..errors import ConfigError
from ..model.robot_model import FIXED, FREE, PRISMATIC, REVOLUTE
from .checks import first_non_finite
from .layout import motion_axes
from ..jit import njit as _njit

_FAST = {'contract', 'reassoc', 'nsz', 'arcp'}


def njit(first=None, **options):
    return _njit(first, fastmath=_FAST, **options)


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
    "WR WA WF WIC WRP WP WPHI WD WV0 WK WA00 WJ WRR WNAA WNAH WNHH WBA WBH WH WA0 WAL WG WMS WSEL WTMP WQR WU"
).split()
(H_NB, H_FLOAT, H_NJ, H_NH, H_NC, H_MS, H_MSC, H_NOBS, H_NGRP, H_NPAIR, H_NCP, H_NPOSE, H_NCHAIN, H_IMUB, H_RED,
 H_NOUTM, H_NMSRC, H_NSEL, H_NFT, H_NCELLS, H_NJT, H_SX, H_SIMU, H_SOUT, H_SINFO,
 H_PAR, H_JT, H_QIX, H_CHAIN, H_POSE, H_CBODY, H_CK, H_CHOFF, H_CXB, H_GRP, H_PAIR, H_CPATH, H_GP, H_GI, H_RP,
 H_RI, H_CP, H_CI, H_CRP, H_CRI, H_CLO, H_CHI, H_OLO, H_OHI, H_OP, H_OI, H_TSEL, H_KSEL, H_SOLC, H_EYET,
 H_ET, H_RT, H_AX, H_S, H_I, H_ABC, H_XB, H_GX, H_RX, H_CX, H_CRX, H_OX, H_IMUE, H_IMUR, H_AG,
 H_WR, H_WA, H_WF, H_WIC, H_WRP, H_WP, H_WPHI, H_WD, H_WV0, H_WK, H_WA00, H_WJ, H_WRR, H_WNAA, H_WNAH, H_WNHH,
 H_WBA, H_WBH, H_WH, H_WA0, H_WAL, H_WG, H_WMS, H_WSEL, H_WTMP, H_WQR, H_WU) = range(len(_NAMES))
_H = {name: k for k, name in enumerate(_NAMES)}
assert all(globals()[f"H_{name}"] == k for k, name in enumerate(_NAMES))

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


def rbi_compact(I6: np.ndarray) -> np.ndarray:
    """Spatial inertia (6×6, body coordinates) → ``[m, h (3), Jxx, Jyy, Jzz, Jxy, Jxz, Jyz]`` with
    ``h = m c`` and ``J`` the rotational inertia about the body origin."""
    m = I6[3, 3]
    C = I6[0:3, 3:6]                       # h×
    J = I6[0:3, 0:3]
    return np.array([m, C[2, 1], C[0, 2], C[1, 0], J[0, 0], J[1, 1], J[2, 2], J[0, 1], J[0, 2], J[1, 2]])


def revolute_abc(axis: np.ndarray, E_tree: np.ndarray) -> np.ndarray:
    """``(A, B, C)`` with ``R(axis, q)ᵀ E_tree = cos q A + sin q B + C`` (Rodrigues)."""
    a = np.asarray(axis, dtype=float)
    aa = np.outer(a, a)
    ax = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.concatenate([((np.eye(3) - aa) @ E_tree).ravel(), (-ax @ E_tree).ravel(), (aa @ E_tree).ravel()])


def _as_float64(x) -> np.ndarray:
    """``x`` itself when it is a float64 array (any layout), else converted."""
    return x if type(x) is np.ndarray and x.dtype == np.float64 else np.asarray(x, dtype=np.float64)


class StructuredSolver:
    """The structured solver of one :class:`~.estimator.Estimator` (see the module docstring).

    ``ip``/``fp``: packed constant data; ``w``: work space; ``n_z`` unknowns are left after the
    tree elimination (``a_0`` and ``h``), ``n_h`` after the base equation; ``m_soft`` sensor rows
    (``m_ls`` after compression)."""

    def __init__(self, est, ip, fp, w, n_h, m_soft, m_ls, floating):
        self._est = est
        self.ip, self.fp, self.w = ip, fp, w
        self.n_h, self.m_soft, self.m_ls, self.floating = n_h, m_soft, m_ls, floating
        self.n_z = n_h + (6 if floating else 0)
        cfg = est.config
        self._fast = not cfg.load_cells
        self._has_imu = cfg.imu is not None
        self._alpha = bool(cfg.imu is not None and cfg.imu.use_angular_acceleration)
        self._n_ft, self._n_jt = len(cfg.ft_sensors), len(cfg.joint_torque_sensors)
        self._z4, self._z3 = np.zeros(4), np.zeros(3)
        self._ft0, self._z0 = np.zeros((0, 6)), np.zeros(0)
        self.fallbacks = 0
        self._converting = False
        self._ft_in = np.zeros((self._n_ft, 6))
        b = est._imu_buf
        self._imu_views, self._ft_matrix = (b[0:4], b[4:7], b[7:10], b[10:13]), est._ft_buf.reshape(-1, 6)
        self.kernel = compiled_tick()
        self.estimate = self._direct_call()

    def packed(self, q, dq, ddq, imu, ft, load_cells, joint_torques) -> int:
        """The inputs the kernel does not take as they are: converted (:meth:`_convert`: lists,
        other dtypes, strided arrays, dicts by sensor name, IMU tuples; a few µs) and solved by
        the kernel; load cells, or inputs that do not convert or have the wrong shape, go through
        ``Estimator._pack``, which raises ``ValueError`` naming the wrong input. Returns the status."""
        if self._fast and load_cells is None and not self._converting:
            converted = self._convert(q, dq, ddq, imu, ft, joint_torques)
            if converted is not None:
                self._converting = True
                try:
                    return self.estimate(*converted)
                finally:
                    self._converting = False
        if self._fast:
            self.fallbacks += 1
        self._est._pack(q, dq, ddq, imu, ft, load_cells, joint_torques)
        return self.tick()

    def _convert(self, q, dq, ddq, imu, ft, jt):
        """The inputs as the kernel's types (float64 arrays, ``ft`` C-contiguous ``(n, 6)``, an
        :class:`~.estimator.ImuSample`), copied into preallocated buffers where a copy is needed;
        None when an input does not convert (its error is then reported by ``Estimator._pack``)."""
        from .estimator import ImuSample
        f = _as_float64
        try:
            q, dq, ddq = f(q), f(dq), f(ddq)
            if self._has_imu and type(imu) is not ImuSample and imu is not None:
                imu = ImuSample(*imu)
            if self._n_jt:
                cfg = self._est.config
                jt = f([jt[j] for j in cfg.joint_torque_sensors] if isinstance(jt, dict) else jt)
            if self._n_ft:
                if isinstance(ft, dict):
                    buf = self._ft_in
                    for k, name in enumerate(self._est.ft_names):
                        buf[k] = ft[name]
                    ft = buf
                else:
                    ft = np.ascontiguousarray(ft, dtype=np.float64)
        except (TypeError, ValueError, KeyError, IndexError):
            return None
        return q, dq, ddq, imu, ft, None, jt

    def arguments(self, q, dq, ddq, imu, ft, cells, joint_torques) -> tuple:
        """The kernel's arguments for these inputs (float64 arrays of the right shapes, ``ft``
        C-contiguous; ``imu`` an :class:`~.estimator.ImuSample` when the configuration has an IMU;
        ``ft``, ``cells``, ``joint_torques`` as the estimator's configuration orders them)."""
        e = self._est
        if self._has_imu:
            iq, iw, ia = imu[0], imu[1], imu[2]
            ial = imu[3] if self._alpha else self._z3
        else:
            iq, iw, ia, ial = self._z4, self._z3, self._z3, self._z3
        return (self.ip, self.fp, self.w, e._state, q, dq, ddq, iq, iw, ia, ial,
                ft if self._n_ft else self._ft0, cells, joint_torques if self._n_jt else self._z0)

    def _direct_call(self):
        """``estimate(q, dq, ddq, imu, ft, load_cells, joint_torques) → status``, the per-tick
        entry (see :meth:`Estimator.estimate`): inputs the kernel takes as they are — float64
        arrays of any layout (``ft`` C-contiguous), an :class:`~.estimator.ImuSample` (whose
        fields are float64 arrays) — go straight to the kernel with its constant arguments bound
        once; anything else is converted first (:meth:`packed`). The test is a few type checks in
        Python, never a failed call (numba's failed dispatch costs ~300 µs)."""
        from .estimator import ImuSample
        e, kernel, packed = self._est, self.kernel, self.packed
        ip, fp, w, S = self.ip, self.fp, self.w, e._state
        z0, z3, z4, ft0 = self._z0, self._z3, self._z4, self._ft0
        nd, f64 = np.ndarray, np.dtype(np.float64)
        fast, has_imu, alpha, has_ft, has_jt = self._fast, self._has_imu, self._alpha, self._n_ft > 0, self._n_jt > 0

        def estimate(q, dq, ddq, imu, ft, cells, jt):
            if (fast and cells is None and type(q) is nd and type(dq) is nd and type(ddq) is nd
                    and q.dtype is f64 and dq.dtype is f64 and ddq.dtype is f64
                    and (not has_imu or (type(imu) is ImuSample and (not alpha or imu[3] is not None)))
                    and (not has_jt or (type(jt) is nd and jt.dtype is f64))
                    and (not has_ft or (type(ft) is nd and ft.dtype is f64 and ft.flags.c_contiguous))):
                try:
                    if has_imu:
                        status = kernel(ip, fp, w, S, q, dq, ddq, imu[0], imu[1], imu[2], imu[3] if alpha else z3,
                                        ft if has_ft else ft0, z0, jt if has_jt else z0)
                    else:
                        status = kernel(ip, fp, w, S, q, dq, ddq, z4, z3, z3, z3, ft if has_ft else ft0, z0,
                                        jt if has_jt else z0)
                except TypeError:           # an array of the wrong dimension: packed() names it
                    status = 3
                if status != 3:
                    e._q, e._dq, e._ddq = q, dq, ddq
                    return status
            return packed(q, dq, ddq, imu, ft, cells, jt)
        return estimate

    def tick(self) -> int:
        """One estimate from the estimator's packed buffers (``_q, _dq, _ddq, _imu_buf, _ft_buf,
        _cells_buf, _jt_buf``) into ``_out``: 0, 1 (non-finite input), 2 (singular state)."""
        e = self._est
        b = self._imu_views                                   # (the kernel copies the sample onto itself)
        return self.kernel(self.ip, self.fp, self.w, e._state, e._q, e._dq, e._ddq, b[0], b[1], b[2], b[3],
                           self._ft_matrix, e._cells_buf, e._jt_buf)

    def summary(self) -> str:
        return (f"structured solver: {self.n_z} unknowns after the tree elimination "
                f"({'a_0 (6) + ' if self.floating else ''}{self.n_h} contact components), "
                f"{6 if self.floating else 0} base rows, {self.m_soft} sensor rows ({self.m_ls} after compression)")


# ---------------------------------------------------------------------------- build
class _NotApplicable(Exception):
    pass


def build(est, check: bool = True):
    """The structured solver for ``est``, or ``None`` when the generic path is to be used:
    ``est._solver_mode == 'generic'``, or the layout has a form this solver does not cover, or the
    self-check fails (with a warning). With ``'structured'`` these raise :class:`ConfigError`."""
    mode = getattr(est, "_solver_mode", "auto")
    if mode not in ("auto", "generic", "structured"):
        raise ConfigError(f"solver must be 'auto', 'generic' or 'structured', got {mode!r}")
    if mode == "generic":
        return None
    expected = True
    try:
        try:
            solver = _build(est)
        except _NotApplicable:
            raise
        except Exception as exc:           # noqa: BLE001  (a layout this module does not know: not fatal)
            expected = False
            raise _NotApplicable(f"{type(exc).__name__}: {exc}") from None
        if check:
            expected = False
            _self_check(est, solver)
    except _NotApplicable as exc:
        if mode == "structured":
            raise ConfigError(f"the structured solver does not apply to this configuration: {exc}") from None
        if not expected:
            warnings.warn(f"rbd_estimator: structured solver disabled, using the generic one: {exc}",
                          RuntimeWarning, stacklevel=3)
        return None
    return solver


def _compress_rows(G: np.ndarray, Rm: np.ndarray):
    """Rows that share columns are replaced by the triangular factor of their QR factorisation
    (and the right-hand side by ``Qᵀ r``) when that has fewer nonzeros: the least-squares
    solution is unchanged (``|G u − r|² = |R u − Qᵀ r|² + const``)."""
    ms = G.shape[0]
    parent = list(range(ms))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    owner = {}
    for r in range(ms):
        for c in np.flatnonzero(G[r]):
            if c in owner:
                parent[find(r)] = find(owner[c])
            else:
                owner[c] = r
    comps: dict[int, list[int]] = {}
    for r in range(ms):
        comps.setdefault(find(r), []).append(r)
    rows_G, rows_R = [], []
    for rows in comps.values():
        Gs, Rs = G[rows], Rm[rows]
        cols = np.flatnonzero(np.any(Gs != 0.0, axis=0))
        Q, R = np.linalg.qr(Gs[:, cols])
        R[np.abs(R) <= 1e-14 * np.abs(R).max()] = 0.0
        if np.count_nonzero(R) < np.count_nonzero(Gs):
            full = np.zeros((R.shape[0], G.shape[1]))
            full[:, cols] = R
            rows_G.append(full)
            rows_R.append(Q.T @ Rs)
        else:
            rows_G.append(Gs)
            rows_R.append(Rs)
    if not rows_G:
        return np.zeros((0, G.shape[1])), np.zeros((0, Rm.shape[1]))
    return np.vstack(rows_G), np.vstack(rows_R)


def _csr(M):
    A = sp.csr_matrix(M)
    A.eliminate_zeros()
    A.sort_indices()
    return A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data.astype(np.float64)


def _build(est) -> StructuredSolver:
    m, lay, cfg = est.model, est._layout, est.config
    NB, nj = m.NB, m.n_joints
    jt = m.joint_types.astype(np.int64)
    par = m.parents.astype(np.int64)
    floating = bool(m.floating_base)
    # ---- applicability: a tree in regular numbering, the free flyer as body 0, else 0/1-DoF joints
    if floating and (jt[0] != FREE or par[0] != -1 or np.any(par[1:] < 0)):
        raise _NotApplicable("the floating base must be body 0 and the root of every other body")
    for i in range(1 if floating else 0, NB):
        if not ((jt[i] in (REVOLUTE, PRISMATIC) and m.joint_dofs[i] == 1) or (jt[i] == FIXED and m.joint_dofs[i] == 0)):
            raise _NotApplicable(f"the joint of body {m.body_names[i]} is neither 1-DoF nor fixed")
        if par[i] >= i:
            raise _NotApplicable("bodies are not in regular numbering")
    if lay.m_hard + lay.m_soft != lay.m:
        raise _NotApplicable("layout rows are not hard rows followed by sensor rows")
    if cfg.external_wrenches:
        raise _NotApplicable("known external wrenches are handled by the generic path")
    for name in ("_E", "_v", "_x", "_out", "_info", "_imu_buf", "_ft_buf", "_cells_buf", "_jt_buf", "_jofb",
                 "_a0", "_sol_col", "_imu_body", "_imu_E", "_imu_r", "_imu_chain", "plan"):
        if not hasattr(est, name):
            raise _NotApplicable(f"the estimator has no attribute {name}")

    # ---- unknowns left: z = (a_0 (floating), h)
    h_cols = [c for c in lay.columns if c.kind == "h"]
    h0 = h_cols[0].start if h_cols else lay.n
    NH = sum(c.size for c in h_cols)
    if h0 + NH != lay.n:
        raise _NotApplicable("the contact components are not the last unknowns of the layout")
    za = 6 if floating else 0
    NZ = za + NH
    contacts = lay.contacts
    NC = len(contacts)
    cbody = np.array([fr.body for _, fr, _ in contacts], dtype=np.int64)
    ck = np.array([B.shape[1] for _, _, B in contacts], dtype=np.int64)
    choff = np.array([lay.col("h", c.name) - h0 for c, _, _ in contacts], dtype=np.int64)
    XB = [fr.X.T @ B for _, fr, B in contacts]          # f^x = ⁱX*_F B_c h_c: the layout's (3f) block

    # ---- sensor rows from the layout, on observed quantities: a (IMU body), f (FT bodies; τ_j → S_jᵀ f_j), h
    ms, mh = lay.m_soft, lay.m_hard
    S = motion_axes(m)
    body_of_joint = {n: i for i, n in enumerate(m.body_joint_names)}
    body_of_name = {n: i for i, n in enumerate(m.body_names)}
    entries = []                                          # (soft row, group key, component, coefficient)
    for (r, c, s, v) in lay.triplets:
        if r < mh:
            continue
        if s != 0:
            raise _NotApplicable("a sensor row has a state-dependent coefficient")
        kind, owner, comp = lay.describe_column(c)
        if kind in ("a", "f"):
            entries.append((r - mh, (kind, body_of_name[owner]), comp, v))
        elif kind == "tau":
            b = body_of_joint[owner]
            entries += [(r - mh, ("f", b), a, v * S[b, a]) for a in range(6) if S[b, a] != 0.0]
        elif kind == "h":
            entries.append((r - mh, ("h", 0), c - h0, v))
        else:
            raise _NotApplicable(f"a sensor row on unknowns of kind {kind}")
    groups = sorted({key for _, key, _, _ in entries if key[0] != "h"}, key=lambda k: (k[0] != "a", k[1]))
    if floating and any(k == ("f", 0) for k in groups):
        raise _NotApplicable("a sensor on the floating base's (zero) joint wrench")
    obs_off = {key: 6 * g for g, key in enumerate(groups)}
    obs_h = 6 * len(groups)
    NOBS = obs_h + NH
    G = np.zeros((ms, NOBS))
    for r, key, comp, v in entries:
        G[r, obs_h + comp if key[0] == "h" else obs_off[key] + comp] += v
    # right-hand sides over msrc = [1, ω_F × v_F (3), IMU acc (3), IMU ω̇ (3), ft, cells, τ]
    n_ft, n_cells, n_jt = est._ft_buf.size, est._cells_buf.size, est._jt_buf.size
    NMSRC = 10 + n_ft + n_cells + n_jt
    rmap = {0: 0}
    for a in range(3):
        rmap[lay.r_imu_wv + a], rmap[lay.r_imu_acc + a], rmap[lay.r_imu_alpha + a] = 1 + a, 4 + a, 7 + a
    rmap.update({lay.r_ft + k: 10 + k for k in range(n_ft)})
    rmap.update({lay.r_cells + k: 10 + n_ft + k for k in range(n_cells)})
    rmap.update({lay.r_tau + k: 10 + n_ft + n_cells + k for k in range(n_jt)})
    Rm = np.zeros((ms, NMSRC))
    for (r, s, v) in lay.rhs:
        if r < mh:
            continue
        if s not in rmap:
            raise _NotApplicable("a sensor row's right-hand side has a state-dependent term")
        Rm[r - mh, rmap[s]] += v
    Gc, Rc = _compress_rows(G, Rm)
    MSC = Gc.shape[0]

    # ---- contacts below each observed wrench; h-column ranges of observations and LS rows
    def below(b, s):
        while b >= 0 and b != s:
            b = par[b]
        return b == s
    pairs, olo, ohi = [], np.zeros(NOBS, np.int64), np.zeros(NOBS, np.int64)
    for key in groups:
        if key[0] != "f":
            continue
        lo, hi = NH, 0
        for ci in range(NC):
            if below(int(cbody[ci]), key[1]):
                pairs.append((obs_off[key], ci, key[1]))
                lo, hi = min(lo, choff[ci]), max(hi, choff[ci] + ck[ci])
        if hi > lo:
            olo[obs_off[key]:obs_off[key] + 6], ohi[obs_off[key]:obs_off[key] + 6] = lo, hi
    olo[obs_h:], ohi[obs_h:] = np.arange(NH), np.arange(NH) + 1
    clo, chi = np.zeros(MSC, np.int64), np.zeros(MSC, np.int64)
    for r in range(MSC):
        cols = np.flatnonzero(Gc[r])
        spans = [(olo[c], ohi[c]) for c in cols if ohi[c] > olo[c]]
        if spans:
            clo[r], chi[r] = min(a for a, _ in spans), max(b for _, b in spans)

    # ---- outputs: out = O sel with sel = [τ (joint order), h, f of kept bodies]; the residual after
    O = lay.out_map.tocoo()
    kept_bodies = []
    for c in O.col:
        kind, owner, _ = lay.describe_column(int(c))
        if kind == "f" and body_of_name[owner] not in kept_bodies:
            kept_bodies.append(body_of_name[owner])
    jidx = {n: k for k, n in enumerate(m.joint_names)}
    NSEL = nj + NH + 6 * len(kept_bodies)
    Osel = np.zeros((O.shape[0], NSEL))
    for r, c, v in zip(O.row, O.col, O.data):
        kind, owner, comp = lay.describe_column(int(c))
        if kind == "tau":
            Osel[r, jidx[owner]] += v
        elif kind == "h":
            Osel[r, nj + int(c) - h0] += v
        elif kind == "f":
            Osel[r, nj + NH + 6 * kept_bodies.index(body_of_name[owner]) + comp] += v
        else:
            raise _NotApplicable(f"an output on unknowns of kind {kind}")
    redundant = bool(est.plan.redundant)
    if est._out.size != O.shape[0] + (ms if redundant else 0):
        raise _NotApplicable("the output buffer does not match the layout's outputs")
    if ms < NH:
        raise _NotApplicable("fewer sensor rows than contact components")
    tsel = np.full(NB, -1, dtype=np.int64)
    for i in range(NB):
        if m.joint_dofs[i] == 1 and not (floating and i == 0):
            tsel[i] = jidx[m.body_joint_names[i]]
    ksel = np.full(NB, -1, dtype=np.int64)
    for kk, b in enumerate(kept_bodies):
        ksel[b] = nj + NH + 6 * kk

    # ---- tree data
    qix = np.asarray(est._jofb, dtype=np.int64)
    imub = int(est._imu_body) if cfg.imu is not None else -1
    chain = np.asarray(est._imu_chain, dtype=np.int64) if cfg.imu is not None else np.zeros(0, np.int64)
    need = np.zeros(NB, dtype=bool)                 # poses ⁱX_0: observed, contact and IMU bodies, ancestors
    for b in [k[1] for k in groups] + list(cbody) + list(chain) + ([imub] if imub >= 0 else []):
        while b >= 0 and not need[b]:
            need[b] = True
            b = par[b]
    pose = np.flatnonzero(need).astype(np.int64)
    oncp = np.zeros(NB, dtype=bool)                 # bodies the contact wrenches flow through
    for b in cbody:
        while b >= 0 and not oncp[b]:
            oncp[b] = True
            b = par[b]
    cpath = np.flatnonzero(oncp)[::-1].astype(np.int64)
    grp = []
    for key in groups:
        grp += [_OBS_A if key[0] == "a" else _OBS_F, key[1], obs_off[key]]
    eyeT = np.array([int(np.array_equal(m.E_tree[i], np.eye(3))) for i in range(NB)], dtype=np.int64)
    solc = np.full(6, -1, dtype=np.int64)
    if floating:
        c0 = lay.col("a", m.body_names[0])
        solc[:] = est._sol_col[c0:c0 + 6]
    abc = np.array([revolute_abc(m.axes[i], m.E_tree[i]) if jt[i] == REVOLUTE else np.zeros(27) for i in range(NB)])

    # ---- floats
    fpk = _Packer(np.float64)
    f_off = dict(ET=fpk.add(m.E_tree), RT=fpk.add(m.r_tree), AX=fpk.add(m.axes), S=fpk.add(S),
                 I=fpk.add(np.array([rbi_compact(I) for I in m.inertias])), ABC=fpk.add(abc))
    f_off["XB"] = fpk.n
    xb_off = [fpk.add(X.T) - f_off["XB"] for X in XB]        # column j of X_Fᵀ B_c: 6 contiguous values
    Gp, Gi, Gx = _csr(G)
    Rp, Ri, Rx = _csr(Rm)
    Cp, Ci, Cx = _csr(Gc)
    CRp, CRi, CRx = _csr(Rc)
    Op, Oi, Ox = _csr(Osel)
    f_off.update(GX=fpk.add(Gx), RX=fpk.add(Rx), CX=fpk.add(Cx), CRX=fpk.add(CRx), OX=fpk.add(Ox),
                 IMUE=fpk.add(est._imu_E), IMUR=fpk.add(est._imu_r), AG=fpk.add(est._a0))
    fp = fpk.array()

    # ---- work
    sizes = dict(WR=3 * NB, WA=6 * NB, WF=6 * NB, WIC=10 * NB, WRP=9 * NB, WP=3 * NB, WPHI=6 * NH, WD=NOBS * NZ,
                 WV0=NOBS, WK=6 * NH, WA00=6, WJ=MSC * NZ, WRR=MSC, WNAA=36, WNAH=6 * NH, WNHH=NH * NH, WBA=6,
                 WBH=NH, WH=NH, WA0=6, WAL=6 * NB, WG=6 * NB, WMS=NMSRC, WSEL=NSEL, WTMP=64,
                 WQR=MSC * (NH + 1) + NH + 1, WU=max(NOBS, 6 * NH))
    w_off, o = {}, 0
    for name, size in sizes.items():
        w_off[name] = o
        o += size
    w = np.zeros(o)
    w[w_off["WMS"]] = 1.0
    for j in range(NH):                             # h observes itself: a constant identity block of D
        w[w_off["WD"] + (obs_h + j) * NZ + za + j] = 1.0
    for i in range(NB):                             # poses start at the identity (the floating base keeps it)
        w[w_off["WRP"] + 9 * i:w_off["WRP"] + 9 * i + 9] = np.eye(3).ravel()

    # ---- ints
    ipk = _Packer(np.int64)
    ipk.add(np.zeros(len(_NAMES)))
    i_off = dict(PAR=ipk.add(par), JT=ipk.add(jt), QIX=ipk.add(qix), CHAIN=ipk.add(chain), POSE=ipk.add(pose),
                 CBODY=ipk.add(cbody), CK=ipk.add(ck), CHOFF=ipk.add(choff), CXB=ipk.add(np.array(xb_off, np.int64)),
                 GRP=ipk.add(np.array(grp, np.int64)), PAIR=ipk.add(np.array(pairs, np.int64).reshape(-1)),
                 CPATH=ipk.add(cpath), GP=ipk.add(Gp), GI=ipk.add(Gi), RP=ipk.add(Rp), RI=ipk.add(Ri),
                 CP=ipk.add(Cp), CI=ipk.add(Ci), CRP=ipk.add(CRp), CRI=ipk.add(CRi), CLO=ipk.add(clo),
                 CHI=ipk.add(chi), OLO=ipk.add(olo), OHI=ipk.add(ohi), OP=ipk.add(Op), OI=ipk.add(Oi),
                 TSEL=ipk.add(tsel), KSEL=ipk.add(ksel), SOLC=ipk.add(solc), EYET=ipk.add(eyeT))
    ip = ipk.array()
    counts = dict(NB=NB, FLOAT=int(floating), NJ=nj, NH=NH, NC=NC, MS=ms, MSC=MSC, NOBS=NOBS, NGRP=len(groups),
                  NPAIR=len(pairs), NCP=len(cpath), NPOSE=len(pose), NCHAIN=len(chain), IMUB=imub,
                  RED=int(redundant), NOUTM=O.shape[0], NMSRC=NMSRC, NSEL=NSEL, NFT=len(cfg.ft_sensors),
                  NCELLS=n_cells, NJT=n_jt, **est.state_offsets())
    for d in (counts, i_off, f_off, w_off):
        for k, v in d.items():
            ip[_H[k]] = v
    return StructuredSolver(est, ip, fp, w, NH, ms, MSC, floating)


def _self_check(est, solver: StructuredSolver, seed: int = 7, count: int = 2):
    """Solve random, noisy (inconsistent) instances with the generic path — the definition of
    the problem — and with this solver (slow and fast input paths); they must agree to 1e-8."""
    rng = np.random.default_rng(seed)
    m, cfg = est.model, est.config
    nj = m.n_joints
    saved = getattr(est, "_structured", None)
    for _ in range(count):
        args = dict(q=rng.uniform(-1.2, 1.2, nj), dq=rng.normal(size=nj), ddq=rng.normal(size=nj))
        if cfg.imu is not None:
            quat = rng.normal(size=4)
            args["imu"] = (quat / np.linalg.norm(quat), rng.normal(size=3), rng.normal(size=3) * 5,
                           rng.normal(size=3) if cfg.imu.use_angular_acceleration else None)
        if cfg.ft_sensors:
            args["ft"] = rng.normal(size=(len(cfg.ft_sensors), 6)) * 20
        if cfg.load_cells:
            args["load_cells"] = [rng.normal(size=len(lc.positions)) * 50 for lc in cfg.load_cells]
        if cfg.joint_torque_sensors:
            args["joint_torques"] = rng.normal(size=len(cfg.joint_torque_sensors)) * 5
        est._structured = None
        try:
            est.estimate(**args)
            ref = est._out.copy()
        except Exception as exc:               # noqa: BLE001  (the reference failed: nothing to compare with)
            warnings.warn(f"rbd_estimator: the structured solver could not be checked against the generic one, "
                          f"whose estimate failed ({type(exc).__name__}: {exc})", RuntimeWarning, stacklevel=4)
            return
        finally:
            est._structured = saved
        results = [(solver.tick(), est._out.copy())]
        results.append((solver.estimate(args["q"], args["dq"], args["ddq"], args.get("imu"), args.get("ft"),
                                        args.get("load_cells"), args.get("joint_torques")), est._out.copy()))
        scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
        for status, got in results:
            err = float(np.max(np.abs(got - ref))) if got.size else 0.0
            if status != 0 or not np.isfinite(err) or err > 1e-8 * scale:
                raise _NotApplicable(f"self-check: structured and generic solutions differ by {err:.3g} "
                                     f"(scale {scale:.3g}, status {status})")


# ---------------------------------------------------------------------------- compiled kernels
# Indices are cast to unsigned (``_u``): numba checks every signed index for a negative value to
# wrap around, which costs up to 2.7× in these short loops; all indices here are non-negative.
_u = np.uint64


@njit
def _mx(E, eo, r, ro, x, xo, y, yo):
    """``y = plux(E, r) x`` for a motion vector: ``ω' = E ω``, ``v' = E (v − r × ω)``."""
    w0, w1, w2 = x[_u(xo)], x[_u(xo + 1)], x[_u(xo + 2)]
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    u0 = x[_u(xo + 3)] - (r1 * w2 - r2 * w1)
    u1 = x[_u(xo + 4)] - (r2 * w0 - r0 * w2)
    u2 = x[_u(xo + 5)] - (r0 * w1 - r1 * w0)
    y[_u(yo)] = E[_u(eo)] * w0 + E[_u(eo + 1)] * w1 + E[_u(eo + 2)] * w2
    y[_u(yo + 1)] = E[_u(eo + 3)] * w0 + E[_u(eo + 4)] * w1 + E[_u(eo + 5)] * w2
    y[_u(yo + 2)] = E[_u(eo + 6)] * w0 + E[_u(eo + 7)] * w1 + E[_u(eo + 8)] * w2
    y[_u(yo + 3)] = E[_u(eo)] * u0 + E[_u(eo + 1)] * u1 + E[_u(eo + 2)] * u2
    y[_u(yo + 4)] = E[_u(eo + 3)] * u0 + E[_u(eo + 4)] * u1 + E[_u(eo + 5)] * u2
    y[_u(yo + 5)] = E[_u(eo + 6)] * u0 + E[_u(eo + 7)] * u1 + E[_u(eo + 8)] * u2


@njit
def _fxT_add(E, eo, r, ro, f, fo, y, yo, s):
    """``y += s · plux(E, r)ᵀ f`` for a force vector (child to parent): ``f' = Eᵀ f``,
    ``n' = Eᵀ n + r × f'``."""
    n0, n1, n2, f0, f1, f2 = f[_u(fo)], f[_u(fo + 1)], f[_u(fo + 2)], f[_u(fo + 3)], f[_u(fo + 4)], f[_u(fo + 5)]
    a0 = E[_u(eo)] * f0 + E[_u(eo + 3)] * f1 + E[_u(eo + 6)] * f2
    a1 = E[_u(eo + 1)] * f0 + E[_u(eo + 4)] * f1 + E[_u(eo + 7)] * f2
    a2 = E[_u(eo + 2)] * f0 + E[_u(eo + 5)] * f1 + E[_u(eo + 8)] * f2
    b0 = E[_u(eo)] * n0 + E[_u(eo + 3)] * n1 + E[_u(eo + 6)] * n2
    b1 = E[_u(eo + 1)] * n0 + E[_u(eo + 4)] * n1 + E[_u(eo + 7)] * n2
    b2 = E[_u(eo + 2)] * n0 + E[_u(eo + 5)] * n1 + E[_u(eo + 8)] * n2
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    y[_u(yo)] += s * (b0 + r1 * a2 - r2 * a1)
    y[_u(yo + 1)] += s * (b1 + r2 * a0 - r0 * a2)
    y[_u(yo + 2)] += s * (b2 + r0 * a1 - r1 * a0)
    y[_u(yo + 3)] += s * a0
    y[_u(yo + 4)] += s * a1
    y[_u(yo + 5)] += s * a2


@njit
def _fx(E, eo, r, ro, f, fo, y, yo, s):
    """``y = s · plux(E, r)⁻ᵀ f`` (force, parent to child coordinates): ``f' = E f``,
    ``n' = E (n − r × f)``."""
    f0, f1, f2 = f[_u(fo + 3)], f[_u(fo + 4)], f[_u(fo + 5)]
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    m0 = f[_u(fo)] - (r1 * f2 - r2 * f1)
    m1 = f[_u(fo + 1)] - (r2 * f0 - r0 * f2)
    m2 = f[_u(fo + 2)] - (r0 * f1 - r1 * f0)
    y[_u(yo)] = s * (E[_u(eo)] * m0 + E[_u(eo + 1)] * m1 + E[_u(eo + 2)] * m2)
    y[_u(yo + 1)] = s * (E[_u(eo + 3)] * m0 + E[_u(eo + 4)] * m1 + E[_u(eo + 5)] * m2)
    y[_u(yo + 2)] = s * (E[_u(eo + 6)] * m0 + E[_u(eo + 7)] * m1 + E[_u(eo + 8)] * m2)
    y[_u(yo + 3)] = s * (E[_u(eo)] * f0 + E[_u(eo + 1)] * f1 + E[_u(eo + 2)] * f2)
    y[_u(yo + 4)] = s * (E[_u(eo + 3)] * f0 + E[_u(eo + 4)] * f1 + E[_u(eo + 5)] * f2)
    y[_u(yo + 5)] = s * (E[_u(eo + 6)] * f0 + E[_u(eo + 7)] * f1 + E[_u(eo + 8)] * f2)


@njit
def _rbi_apply(I, io, x, xo, y, yo, s):
    """``y += s · I x`` with ``I = (m, h, J)``: ``[J ω + h × v; m v − h × ω]``."""
    m, h0, h1, h2 = I[_u(io)], I[_u(io + 1)], I[_u(io + 2)], I[_u(io + 3)]
    jxx, jyy, jzz = I[_u(io + 4)], I[_u(io + 5)], I[_u(io + 6)]
    jxy, jxz, jyz = I[_u(io + 7)], I[_u(io + 8)], I[_u(io + 9)]
    w0, w1, w2, v0, v1, v2 = x[_u(xo)], x[_u(xo + 1)], x[_u(xo + 2)], x[_u(xo + 3)], x[_u(xo + 4)], x[_u(xo + 5)]
    y[_u(yo)] += s * (jxx * w0 + jxy * w1 + jxz * w2 + h1 * v2 - h2 * v1)
    y[_u(yo + 1)] += s * (jxy * w0 + jyy * w1 + jyz * w2 + h2 * v0 - h0 * v2)
    y[_u(yo + 2)] += s * (jxz * w0 + jyz * w1 + jzz * w2 + h0 * v1 - h1 * v0)
    y[_u(yo + 3)] += s * (m * v0 - (h1 * w2 - h2 * w1))
    y[_u(yo + 4)] += s * (m * v1 - (h2 * w0 - h0 * w2))
    y[_u(yo + 5)] += s * (m * v2 - (h0 * w1 - h1 * w0))


@njit
def _rbi_xT_add(E, eo, r, ro, I, io, P, po):
    """``P += Xᵀ I X`` for ``X = plux(E, r)`` (rigid-body inertia to parent coordinates, RBDA
    Table 2.5): ``m' = m``, ``h' = Eᵀh + m r``,
    ``J' = EᵀJE − (y rᵀ + r yᵀ) + 2 (r·y) 1 − m (r rᵀ − |r|² 1)``
    with ``y = Eᵀ h``."""
    m, h0, h1, h2 = I[_u(io)], I[_u(io + 1)], I[_u(io + 2)], I[_u(io + 3)]
    jxx, jyy, jzz = I[_u(io + 4)], I[_u(io + 5)], I[_u(io + 6)]
    jxy, jxz, jyz = I[_u(io + 7)], I[_u(io + 8)], I[_u(io + 9)]
    e00, e01, e02 = E[_u(eo)], E[_u(eo + 1)], E[_u(eo + 2)]
    e10, e11, e12 = E[_u(eo + 3)], E[_u(eo + 4)], E[_u(eo + 5)]
    e20, e21, e22 = E[_u(eo + 6)], E[_u(eo + 7)], E[_u(eo + 8)]
    r0, r1, r2 = r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)]
    y0 = e00 * h0 + e10 * h1 + e20 * h2
    y1 = e01 * h0 + e11 * h1 + e21 * h2
    y2 = e02 * h0 + e12 * h1 + e22 * h2
    # T = J E
    t00 = jxx * e00 + jxy * e10 + jxz * e20
    t01 = jxx * e01 + jxy * e11 + jxz * e21
    t02 = jxx * e02 + jxy * e12 + jxz * e22
    t10 = jxy * e00 + jyy * e10 + jyz * e20
    t11 = jxy * e01 + jyy * e11 + jyz * e21
    t12 = jxy * e02 + jyy * e12 + jyz * e22
    t20 = jxz * e00 + jyz * e10 + jzz * e20
    t21 = jxz * e01 + jyz * e11 + jzz * e21
    t22 = jxz * e02 + jyz * e12 + jzz * e22
    ry = r0 * y0 + r1 * y1 + r2 * y2
    rr = r0 * r0 + r1 * r1 + r2 * r2
    d = 2.0 * ry + m * rr
    P[_u(po)] += m
    P[_u(po + 1)] += y0 + m * r0
    P[_u(po + 2)] += y1 + m * r1
    P[_u(po + 3)] += y2 + m * r2
    P[_u(po + 4)] += e00 * t00 + e10 * t10 + e20 * t20 - 2.0 * y0 * r0 + d - m * r0 * r0
    P[_u(po + 5)] += e01 * t01 + e11 * t11 + e21 * t21 - 2.0 * y1 * r1 + d - m * r1 * r1
    P[_u(po + 6)] += e02 * t02 + e12 * t12 + e22 * t22 - 2.0 * y2 * r2 + d - m * r2 * r2
    P[_u(po + 7)] += e00 * t01 + e10 * t11 + e20 * t21 - (y0 * r1 + r0 * y1) - m * r0 * r1
    P[_u(po + 8)] += e00 * t02 + e10 * t12 + e20 * t22 - (y0 * r2 + r0 * y2) - m * r0 * r2
    P[_u(po + 9)] += e01 * t02 + e11 * t12 + e21 * t22 - (y1 * r2 + r1 * y2) - m * r1 * r2


@njit
def _householder_ls(A, n_rows, n_cols, ld, v, tmp):
    """In place Householder QR of the row-major ``n_rows × (n_cols + 1)`` matrix ``[J | r]``
    (leading dimension ``ld``); ``v`` receives the solution of ``min |J x − r|``, ``tmp`` the
    diagonal of ``R``. Returns the smallest ``|R_kk| / max_k |R_kk|`` (0: singular)."""
    rmax = 0.0
    rmin = np.inf
    for k in range(n_cols):
        # norm of column k below the diagonal
        s = 0.0
        for i in range(k, n_rows):
            a = A[_u(i * ld + k)]
            s += a * a
        nrm = np.sqrt(s)
        if nrm == 0.0:
            return 0.0
        akk = A[_u(k * ld + k)]
        alpha = -nrm if akk >= 0.0 else nrm
        # v = x - alpha e1 stored in column k (A[k,k] ← akk − alpha), R_kk = alpha
        vk = akk - alpha
        A[_u(k * ld + k)] = vk
        vnorm2 = s - akk * akk + vk * vk
        # apply H = 1 - 2 v vᵀ / (vᵀv) to the remaining columns (and the right-hand side)
        for j in range(k + 1, n_cols + 1):
            d = 0.0
            for i in range(k, n_rows):
                d += A[_u(i * ld + k)] * A[_u(i * ld + j)]
            d = 2.0 * d / vnorm2
            for i in range(k, n_rows):
                A[_u(i * ld + j)] -= d * A[_u(i * ld + k)]
        tmp[_u(k)] = alpha
        aa = abs(alpha)
        if aa > rmax:
            rmax = aa
        if aa < rmin:
            rmin = aa
    # back substitution R x = (Qᵀ r)[:n]
    for k in range(n_cols - 1, -1, -1):
        s = A[_u(k * ld + n_cols)]
        for j in range(k + 1, n_cols):
            s -= A[_u(k * ld + j)] * v[_u(j)]
        v[_u(k)] = s / tmp[_u(k)]
    if n_cols == 0:
        return 1.0
    return rmin / rmax


@njit
def _solve_rbi(I, io, L, lo, x, xo, y, yo, s):
    """``y = s · I⁻¹ x`` for a rigid-body inertia ``I = (m, h, J)`` with the Cholesky factor ``L``
    (6 values) of its rotational inertia about the centre of mass ``Ī_C = J + (h hᵀ − |h|² 1)/m``:
    ``ω = Ī_C⁻¹ (n − c × f)``, ``v = f / m + c × ω``."""
    m = I[_u(io)]
    c0, c1, c2 = I[_u(io + 1)] / m, I[_u(io + 2)] / m, I[_u(io + 3)] / m
    n0, n1, n2, f0, f1, f2 = x[_u(xo)], x[_u(xo + 1)], x[_u(xo + 2)], x[_u(xo + 3)], x[_u(xo + 4)], x[_u(xo + 5)]
    b0 = n0 - (c1 * f2 - c2 * f1)
    b1 = n1 - (c2 * f0 - c0 * f2)
    b2 = n2 - (c0 * f1 - c1 * f0)
    l00, l10, l11, l20, l21, l22 = L[_u(lo)], L[_u(lo + 1)], L[_u(lo + 2)], L[_u(lo + 3)], L[_u(lo + 4)], L[_u(lo + 5)]
    z0 = b0 / l00
    z1 = (b1 - l10 * z0) / l11
    z2 = (b2 - l20 * z0 - l21 * z1) / l22
    w2 = z2 / l22
    w1 = (z1 - l21 * w2) / l11
    w0 = (z0 - l10 * w1 - l20 * w2) / l00
    y[_u(yo)] = s * w0
    y[_u(yo + 1)] = s * w1
    y[_u(yo + 2)] = s * w2
    y[_u(yo + 3)] = s * (f0 / m + (c1 * w2 - c2 * w1))
    y[_u(yo + 4)] = s * (f1 / m + (c2 * w0 - c0 * w2))
    y[_u(yo + 5)] = s * (f2 / m + (c0 * w1 - c1 * w0))


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


@njit
def _rnea_without_contacts(ip, fp, w, E, V, dq, ddq):
    """Nori (2), (3a) forward with ``a_0 = 0`` (floating) or ``−a_g`` (fixed): ``v_i``, ``a⁰_i``,
    ``f⁰_i ← I_i a⁰_i + v_i ×* I_i v_i``; then (3f) backward without contacts,
    ``f⁰_λ += X_iᵀ f⁰_i``, and the CRBA's ``I^c_λ += X_iᵀ I^c_i X_i`` (floating base only)."""
    NB, floating = ip[H_NB], ip[H_FLOAT]
    i_par, i_jt, i_qix = ip[H_PAR], ip[H_JT], ip[H_QIX]
    f_S, f_I, f_ag = ip[H_S], ip[H_I], ip[H_AG]
    w_r, w_a, w_f, w_Ic, w_tmp = ip[H_WR], ip[H_WA], ip[H_WF], ip[H_WIC], ip[H_WTMP]
    Iv = w_tmp + 6
    for i in range(NB):
        p = ip[_u(i_par + i)]
        vo, ao, so, fo = 6 * i, w_a + 6 * i, f_S + 6 * i, w_f + 6 * i
        if floating and i == 0:
            for k in range(6):
                V[_u(k)] = w[_u(w_tmp + k)]                    # v_0 from _base_velocity
                w[_u(ao + k)] = 0.0
        else:
            t = ip[_u(i_jt + i)]
            k = ip[_u(i_qix + i)]
            qd = dq[_u(k)] if k >= 0 else 0.0
            qdd = ddq[_u(k)] if k >= 0 else 0.0
            if p >= 0:
                _mx(E, 9 * i, w, w_r + 3 * i, V, 6 * p, V, vo)
                _mx(E, 9 * i, w, w_r + 3 * i, w, w_a + 6 * p, w, ao)
            else:
                for k in range(6):
                    V[_u(vo + k)] = 0.0
                _mx(E, 9 * i, w, w_r + 3 * i, fp, f_ag, w, ao)
            if t == REVOLUTE:                          # v_J = [s q̇; 0]; c = v × v_J = [ω × s q̇; v × s q̇]
                s0, s1, s2 = fp[_u(so)], fp[_u(so + 1)], fp[_u(so + 2)]
                m0, m1, m2 = s0 * qd, s1 * qd, s2 * qd
                V[_u(vo)] += m0
                V[_u(vo + 1)] += m1
                V[_u(vo + 2)] += m2
                w0_, w1_, w2_ = V[_u(vo)], V[_u(vo + 1)], V[_u(vo + 2)]
                u0_, u1_, u2_ = V[_u(vo + 3)], V[_u(vo + 4)], V[_u(vo + 5)]
                w[_u(ao)] += s0 * qdd + (w1_ * m2 - w2_ * m1)
                w[_u(ao + 1)] += s1 * qdd + (w2_ * m0 - w0_ * m2)
                w[_u(ao + 2)] += s2 * qdd + (w0_ * m1 - w1_ * m0)
                w[_u(ao + 3)] += u1_ * m2 - u2_ * m1
                w[_u(ao + 4)] += u2_ * m0 - u0_ * m2
                w[_u(ao + 5)] += u0_ * m1 - u1_ * m0
            elif t == PRISMATIC:                       # v_J = [0; s q̇]; c = [0; ω × s q̇]
                s0, s1, s2 = fp[_u(so + 3)], fp[_u(so + 4)], fp[_u(so + 5)]
                m0, m1, m2 = s0 * qd, s1 * qd, s2 * qd
                V[_u(vo + 3)] += m0
                V[_u(vo + 4)] += m1
                V[_u(vo + 5)] += m2
                w0_, w1_, w2_ = V[_u(vo)], V[_u(vo + 1)], V[_u(vo + 2)]
                w[_u(ao + 3)] += s0 * qdd + (w1_ * m2 - w2_ * m1)
                w[_u(ao + 4)] += s1 * qdd + (w2_ * m0 - w0_ * m2)
                w[_u(ao + 5)] += s2 * qdd + (w0_ * m1 - w1_ * m0)
        # f⁰_i = I_i a⁰_i + v_i ×* I_i v_i
        for k in range(6):
            w[_u(Iv + k)] = 0.0
        _rbi_apply(fp, f_I + 10 * i, V, vo, w, Iv, 1.0)
        w0_, w1_, w2_ = V[_u(vo)], V[_u(vo + 1)], V[_u(vo + 2)]
        u0_, u1_, u2_ = V[_u(vo + 3)], V[_u(vo + 4)], V[_u(vo + 5)]
        n0, n1, n2, g0, g1, g2 = w[_u(Iv)], w[_u(Iv + 1)], w[_u(Iv + 2)], w[_u(Iv + 3)], w[_u(Iv + 4)], w[_u(Iv + 5)]
        w[_u(fo)] = w1_ * n2 - w2_ * n1 + u1_ * g2 - u2_ * g1
        w[_u(fo + 1)] = w2_ * n0 - w0_ * n2 + u2_ * g0 - u0_ * g2
        w[_u(fo + 2)] = w0_ * n1 - w1_ * n0 + u0_ * g1 - u1_ * g0
        w[_u(fo + 3)] = w1_ * g2 - w2_ * g1
        w[_u(fo + 4)] = w2_ * g0 - w0_ * g2
        w[_u(fo + 5)] = w0_ * g1 - w1_ * g0
        _rbi_apply(fp, f_I + 10 * i, w, ao, w, fo, 1.0)
        if floating:
            for k in range(10):
                w[_u(w_Ic + 10 * i + k)] = fp[_u(f_I + 10 * i + k)]
    for i in range(NB - 1, -1, -1):
        p = ip[_u(i_par + i)]
        if p >= 0:
            _fxT_add(E, 9 * i, w, w_r + 3 * i, w, w_f + 6 * i, w, w_f + 6 * p, 1.0)
            if floating:
                _rbi_xT_add(E, 9 * i, w, w_r + 3 * i, w, w_Ic + 10 * i, w, w_Ic + 10 * p)


@njit
def _observations(ip, fp, w):
    """Contact columns ``Φ_c = ⁰X*_{b_c} X_Fᵀ B_c`` (base coordinates), and every observed quantity
    as ``v⁰ + D z``: ``a_b = a⁰_b + ᵇX_0 a_0``; ``f_s = f⁰_s + I^c_s ˢX_0 a_0 − ˢX*_0 Φ h``."""
    floating, NH, NC = ip[H_FLOAT], ip[H_NH], ip[H_NC]
    za = 6 if floating else 0
    NZ = za + NH
    w_R, w_p, w_a, w_f, w_Ic, w_tmp = ip[H_WRP], ip[H_WP], ip[H_WA], ip[H_WF], ip[H_WIC], ip[H_WTMP]
    w_Phi, w_D, w_v0 = ip[H_WPHI], ip[H_WD], ip[H_WV0]
    i_cbody, i_ck, i_choff, i_cxb, f_XB = ip[H_CBODY], ip[H_CK], ip[H_CHOFF], ip[H_CXB], ip[H_XB]
    for c in range(NC):
        b = ip[_u(i_cbody + c)]
        for j in range(ip[_u(i_ck + c)]):
            col = ip[_u(i_choff + c)] + j
            for k in range(6):
                w[_u(w_Phi + 6 * col + k)] = 0.0
            _fxT_add(w, w_R + 9 * b, w, w_p + 3 * b, fp, f_XB + ip[_u(i_cxb + c)] + 6 * j, w, w_Phi + 6 * col, 1.0)
    i_grp = ip[H_GRP]
    col6 = w_tmp + 24
    for gk in range(ip[H_NGRP]):
        kind, b, o = ip[_u(i_grp + 3 * gk)], ip[_u(i_grp + 3 * gk + 1)], ip[_u(i_grp + 3 * gk + 2)]
        Ro, po = w_R + 9 * b, w_p + 3 * b
        p0, p1, p2 = w[_u(po)], w[_u(po + 1)], w[_u(po + 2)]
        if kind == _OBS_A:
            for k in range(6):
                w[_u(w_v0 + o + k)] = w[_u(w_a + 6 * b + k)]
            if floating:                               # D_a = ᵇX_0 = [[R, 0], [−R p×, R]]
                for a in range(3):
                    ra0, ra1, ra2 = w[_u(Ro + 3 * a)], w[_u(Ro + 3 * a + 1)], w[_u(Ro + 3 * a + 2)]
                    d = w_D + (o + a) * NZ
                    w[_u(d)], w[_u(d + 1)], w[_u(d + 2)] = ra0, ra1, ra2
                    w[_u(d + 3)], w[_u(d + 4)], w[_u(d + 5)] = 0.0, 0.0, 0.0
                    d = w_D + (o + 3 + a) * NZ
                    w[_u(d)] = -(ra1 * p2 - ra2 * p1)
                    w[_u(d + 1)] = -(ra2 * p0 - ra0 * p2)
                    w[_u(d + 2)] = -(ra0 * p1 - ra1 * p0)
                    w[_u(d + 3)], w[_u(d + 4)], w[_u(d + 5)] = ra0, ra1, ra2
        else:
            for k in range(6):
                w[_u(w_v0 + o + k)] = w[_u(w_f + 6 * b + k)]
            if floating:                               # D_a = I^c_b ᵇX_0, column by column
                for k in range(6):
                    if k < 3:                          # [R e_k; −R (p × e_k)]
                        c0 = -p2 if k == 1 else (p1 if k == 2 else 0.0)
                        c1 = p2 if k == 0 else (-p0 if k == 2 else 0.0)
                        c2 = -p1 if k == 0 else (p0 if k == 1 else 0.0)
                        for a in range(3):
                            w[_u(col6 + a)] = w[_u(Ro + 3 * a + k)]
                            w[_u(col6 + 3 + a)] = -(w[_u(Ro + 3 * a)] * c0 + w[_u(Ro + 3 * a + 1)] * c1
                                                    + w[_u(Ro + 3 * a + 2)] * c2)
                    else:                              # [0; R e_k]
                        for a in range(3):
                            w[_u(col6 + a)] = 0.0
                            w[_u(col6 + 3 + a)] = w[_u(Ro + 3 * a + k - 3)]
                    for a in range(6):
                        w[_u(col6 + 6 + a)] = 0.0
                    _rbi_apply(w, w_Ic + 10 * b, w, col6, w, col6 + 6, 1.0)
                    for a in range(6):
                        w[_u(w_D + (o + a) * NZ + k)] = w[_u(col6 + 6 + a)]
    i_pair = ip[H_PAIR]
    for pk in range(ip[H_NPAIR]):
        o, c, b = ip[_u(i_pair + 3 * pk)], ip[_u(i_pair + 3 * pk + 1)], ip[_u(i_pair + 3 * pk + 2)]
        for j in range(ip[_u(i_ck + c)]):
            col = ip[_u(i_choff + c)] + j
            _fx(w, w_R + 9 * b, w, w_p + 3 * b, w, w_Phi + 6 * col, w, col6, -1.0)
            for a in range(6):
                w[_u(w_D + (o + a) * NZ + za + col)] = w[_u(col6 + a)]


@njit
def _base_equation(ip, w):
    """``f_0 = 0``: ``a_0 = a⁰⁰ + P h`` with ``a⁰⁰ = −(I^c_0)⁻¹ f⁰_0`` and ``P = (I^c_0)⁻¹ Φ``.
    Returns False when ``I^c_0`` is not positive definite."""
    NH = ip[H_NH]
    Ic0, w_f, w_Phi, w_K, w_a00, L = ip[H_WIC], ip[H_WF], ip[H_WPHI], ip[H_WK], ip[H_WA00], ip[H_WTMP] + 40
    m = w[_u(Ic0)]
    if not (m > 0.0):
        return False
    h0, h1, h2 = w[_u(Ic0 + 1)], w[_u(Ic0 + 2)], w[_u(Ic0 + 3)]
    hh = (h0 * h0 + h1 * h1 + h2 * h2) / m
    c00 = w[_u(Ic0 + 4)] + h0 * h0 / m - hh              # Ī_C = J + (h hᵀ − |h|² 1) / m
    c11 = w[_u(Ic0 + 5)] + h1 * h1 / m - hh
    c22 = w[_u(Ic0 + 6)] + h2 * h2 / m - hh
    c01 = w[_u(Ic0 + 7)] + h0 * h1 / m
    c02 = w[_u(Ic0 + 8)] + h0 * h2 / m
    c12 = w[_u(Ic0 + 9)] + h1 * h2 / m
    if not (c00 > 0.0):
        return False
    l00 = np.sqrt(c00)
    l10 = c01 / l00
    l20 = c02 / l00
    d11 = c11 - l10 * l10
    if not (d11 > 0.0):
        return False
    l11 = np.sqrt(d11)
    l21 = (c12 - l20 * l10) / l11
    d22 = c22 - l20 * l20 - l21 * l21
    if not (d22 > 0.0):
        return False
    w[_u(L)], w[_u(L + 1)], w[_u(L + 2)] = l00, l10, l11
    w[_u(L + 3)], w[_u(L + 4)], w[_u(L + 5)] = l20, l21, np.sqrt(d22)
    _solve_rbi(w, Ic0, w, L, w, w_f, w, w_a00, -1.0)
    for j in range(NH):
        _solve_rbi(w, Ic0, w, L, w, w_Phi + 6 * j, w, w_K + 6 * j, 1.0)
    return True


@njit
def _normal_equations(ip, fp, w):
    """Rows ``[j_a | j_h]`` and right-hand sides ``r − G v⁰ − j_a a⁰⁰`` of the (compressed) sensor
    rows, accumulated into ``N_aa``, ``N_ah``, ``N_hh``, ``b_a``, ``b_h`` over each row's h range;
    then the reduced ``N = N_hh + Pᵀ N_ah + N_ahᵀ P + Pᵀ N_aa P`` and ``b = b_h + Pᵀ b_a`` (in
    ``N_hh``, ``b_h``; lower triangle)."""
    floating, NH, MSC = ip[H_FLOAT], ip[H_NH], ip[H_MSC]
    za = 6 if floating else 0
    NZ = za + NH
    w_D, w_v0, w_J, w_rr, w_ms = ip[H_WD], ip[H_WV0], ip[H_WJ], ip[H_WRR], ip[H_WMS]
    Naa, Nah, Nhh, ba, bh, w_K, w_a00 = ip[H_WNAA], ip[H_WNAH], ip[H_WNHH], ip[H_WBA], ip[H_WBH], ip[H_WK], ip[H_WA00]
    i_Cp, i_Ci, f_Cx, i_CRp, i_CRi, f_CRx = ip[H_CP], ip[H_CI], ip[H_CX], ip[H_CRP], ip[H_CRI], ip[H_CRX]
    i_clo, i_chi = ip[H_CLO], ip[H_CHI]
    for k in range(36):
        w[_u(Naa + k)] = 0.0
    for k in range(6 * NH):
        w[_u(Nah + k)] = 0.0
    for k in range(NH * NH):
        w[_u(Nhh + k)] = 0.0
    for k in range(6):
        w[_u(ba + k)] = 0.0
    for k in range(NH):
        w[_u(bh + k)] = 0.0
    for r in range(MSC):
        lo, hi = ip[_u(i_clo + r)], ip[_u(i_chi + r)]
        jr = w_J + r * NZ
        for k in range(za):
            w[_u(jr + k)] = 0.0
        for j in range(lo, hi):
            w[_u(jr + za + j)] = 0.0
        s = 0.0
        for pq in range(ip[_u(i_CRp + r)], ip[_u(i_CRp + r + 1)]):
            s += fp[_u(f_CRx + pq)] * w[_u(w_ms + ip[_u(i_CRi + pq)])]
        for pq in range(ip[_u(i_Cp + r)], ip[_u(i_Cp + r + 1)]):
            g = fp[_u(f_Cx + pq)]
            ob = ip[_u(i_Ci + pq)]
            s -= g * w[_u(w_v0 + ob)]
            do = w_D + ob * NZ
            for k in range(za):
                w[_u(jr + k)] += g * w[_u(do + k)]
            for j in range(lo, hi):
                w[_u(jr + za + j)] += g * w[_u(do + za + j)]
        for k in range(za):
            s -= w[_u(jr + k)] * w[_u(w_a00 + k)]
        w[_u(w_rr + r)] = s
        for k in range(za):
            ak = w[_u(jr + k)]
            for m in range(k + 1):
                w[_u(Naa + 6 * k + m)] += ak * w[_u(jr + m)]
            for j in range(lo, hi):
                w[_u(Nah + NH * k + j)] += ak * w[_u(jr + za + j)]
            w[_u(ba + k)] += ak * s
        for j in range(lo, hi):
            hj = w[_u(jr + za + j)]
            for m in range(lo, j + 1):
                w[_u(Nhh + NH * j + m)] += hj * w[_u(jr + za + m)]
            w[_u(bh + j)] += hj * s
    if not floating:
        return
    # U = N_ah + ½ N_aa P (6 × NH); N += Pᵀ U + Uᵀ P; b += Pᵀ b_a
    U = ip[H_WU]
    for k in range(6):
        for j in range(NH):
            s = w[_u(Nah + NH * k + j)]
            t = 0.0
            for m in range(6):
                nkm = w[_u(Naa + 6 * k + m)] if m <= k else w[_u(Naa + 6 * m + k)]
                t += nkm * w[_u(w_K + 6 * j + m)]
            w[_u(U + NH * k + j)] = s + 0.5 * t
    for j in range(NH):
        for l in range(j + 1):
            s = 0.0
            for m in range(6):
                s += w[_u(w_K + 6 * j + m)] * w[_u(U + NH * m + l)] + w[_u(U + NH * m + j)] * w[_u(w_K + 6 * l + m)]
            w[_u(Nhh + NH * j + l)] += s
        s = 0.0
        for m in range(6):
            s += w[_u(w_K + 6 * j + m)] * w[_u(ba + m)]
        w[_u(bh + j)] += s


@njit
def _cholesky_solve(N, no, n, b, bo, x, xo):
    """Solve ``N x = b`` (lower triangle of the row-major ``n × n`` ``N`` factorised in place).
    Returns ``min_k L_kk² / N_kk``, the smallest squared sine between a column of ``J`` and the
    span of the previous ones (scale-invariant; 0 if ``N`` is not positive definite)."""
    if n == 0:
        return 1.0
    worst = 1.0
    for j in range(n):
        njj = N[_u(no + n * j + j)]
        s = njj
        for k in range(j):
            s -= N[_u(no + n * j + k)] * N[_u(no + n * j + k)]
        if not (s > 0.0):
            return 0.0
        if s < worst * njj:
            worst = s / njj
        d = np.sqrt(s)
        N[_u(no + n * j + j)] = d
        for i in range(j + 1, n):
            s = N[_u(no + n * i + j)]
            for k in range(j):
                s -= N[_u(no + n * i + k)] * N[_u(no + n * j + k)]
            N[_u(no + n * i + j)] = s / d
    for j in range(n):
        s = b[_u(bo + j)]
        for k in range(j):
            s -= N[_u(no + n * j + k)] * x[_u(xo + k)]
        x[_u(xo + j)] = s / N[_u(no + n * j + j)]
    for j in range(n - 1, -1, -1):
        s = x[_u(xo + j)]
        for k in range(j + 1, n):
            s -= N[_u(no + n * k + j)] * x[_u(xo + k)]
        x[_u(xo + j)] = s / N[_u(no + n * j + j)]
    return worst


@njit
def _qr_solve(ip, w):
    """Fallback for ill-conditioned normal equations: Householder QR of ``J = J_h + J_a P`` with
    the right-hand side, into ``h``. Returns the diagonal ratio of ``R``."""
    floating, NH, MSC = ip[H_FLOAT], ip[H_NH], ip[H_MSC]
    za = 6 if floating else 0
    NZ = za + NH
    w_J, w_rr, w_K, Q, w_h = ip[H_WJ], ip[H_WRR], ip[H_WK], ip[H_WQR], ip[H_WH]
    ld = NH + 1
    for r in range(MSC):
        jr = w_J + r * NZ
        for j in range(NH):
            s = w[_u(jr + za + j)]
            for m in range(za):
                s += w[_u(jr + m)] * w[_u(w_K + 6 * j + m)]
            w[_u(Q + r * ld + j)] = s
        w[_u(Q + r * ld + NH)] = w[_u(w_rr + r)]
    tau = Q + MSC * ld
    return _householder_ls(w[Q:Q + MSC * ld], MSC, NH, ld, w[w_h:w_h + NH], w[tau:tau + NH + 1])


@njit
def _outputs(ip, fp, w, E, V, out):
    """``α_i = ⁱX_0 a_0`` forward; contact wrenches ``g`` backward along their paths;
    ``f_i = f⁰_i + I^c_i α_i − g_i``, ``τ_i = S_iᵀ f_i``; ``out = O [τ, h, f_kept]``."""
    NB, floating, NJ, NH, NC = ip[H_NB], ip[H_FLOAT], ip[H_NJ], ip[H_NH], ip[H_NC]
    i_par, i_jt, f_S, f_XB = ip[H_PAR], ip[H_JT], ip[H_S], ip[H_XB]
    w_r, w_f, w_Ic, w_al, w_g, w_sel, w_h, w_a0 = (ip[H_WR], ip[H_WF], ip[H_WIC], ip[H_WAL], ip[H_WG], ip[H_WSEL],
                                                    ip[H_WH], ip[H_WA0])
    i_cbody, i_ck, i_choff, i_cxb = ip[H_CBODY], ip[H_CK], ip[H_CHOFF], ip[H_CXB]
    i_cpath, NCP = ip[H_CPATH], ip[H_NCP]
    for kk in range(NCP):                              # g stays zero off the contact paths
        b = ip[_u(i_cpath + kk)]
        for k in range(6):
            w[_u(w_g + 6 * b + k)] = 0.0
    for c in range(NC):
        b = ip[_u(i_cbody + c)]
        for j in range(ip[_u(i_ck + c)]):
            hv = w[_u(w_h + ip[_u(i_choff + c)] + j)]
            xo = f_XB + ip[_u(i_cxb + c)] + 6 * j
            for k in range(6):
                w[_u(w_g + 6 * b + k)] += fp[_u(xo + k)] * hv
    for kk in range(NCP):
        b = ip[_u(i_cpath + kk)]
        p = ip[_u(i_par + b)]
        if p >= 0:
            _fxT_add(E, 9 * b, w, w_r + 3 * b, w, w_g + 6 * b, w, w_g + 6 * p, 1.0)
    i_tsel, i_ksel = ip[H_TSEL], ip[H_KSEL]
    fi = ip[H_WTMP] + 50
    for i in range(NB):
        ao = w_al + 6 * i
        if floating:
            if i == 0:
                for k in range(6):
                    w[_u(ao + k)] = w[_u(w_a0 + k)]
            else:
                _mx(E, 9 * i, w, w_r + 3 * i, w, w_al + 6 * ip[_u(i_par + i)], w, ao)
        ts, ks = ip[_u(i_tsel + i)], ip[_u(i_ksel + i)]
        if ts < 0 and ks < 0:
            continue
        fo, go, so = w_f + 6 * i, w_g + 6 * i, f_S + 6 * i
        if ks < 0 and ip[_u(i_jt + i)] == REVOLUTE:        # τ = sᵀ n, n = n⁰ + J ω + h × v − g_n
            n0, n1, n2 = w[_u(fo)] - w[_u(go)], w[_u(fo + 1)] - w[_u(go + 1)], w[_u(fo + 2)] - w[_u(go + 2)]
            if floating:
                Io = w_Ic + 10 * i
                h0, h1, h2 = w[_u(Io + 1)], w[_u(Io + 2)], w[_u(Io + 3)]
                a0_, a1_, a2_ = w[_u(ao)], w[_u(ao + 1)], w[_u(ao + 2)]
                a3_, a4_, a5_ = w[_u(ao + 3)], w[_u(ao + 4)], w[_u(ao + 5)]
                n0 += w[_u(Io + 4)] * a0_ + w[_u(Io + 7)] * a1_ + w[_u(Io + 8)] * a2_ + h1 * a5_ - h2 * a4_
                n1 += w[_u(Io + 7)] * a0_ + w[_u(Io + 5)] * a1_ + w[_u(Io + 9)] * a2_ + h2 * a3_ - h0 * a5_
                n2 += w[_u(Io + 8)] * a0_ + w[_u(Io + 9)] * a1_ + w[_u(Io + 6)] * a2_ + h0 * a4_ - h1 * a3_
            w[_u(w_sel + ts)] = fp[_u(so)] * n0 + fp[_u(so + 1)] * n1 + fp[_u(so + 2)] * n2
            continue
        for k in range(6):
            w[_u(fi + k)] = w[_u(fo + k)] - w[_u(go + k)]
        if floating:
            _rbi_apply(w, w_Ic + 10 * i, w, ao, w, fi, 1.0)
        if ts >= 0:
            s = 0.0
            for k in range(6):
                s += fp[_u(so + k)] * w[_u(fi + k)]
            w[_u(w_sel + ts)] = s
        if ks >= 0:
            for k in range(6):
                w[_u(w_sel + ks + k)] = w[_u(fi + k)]
    for j in range(NH):
        w[_u(w_sel + NJ + j)] = w[_u(w_h + j)]
    i_Op, i_Oi, f_Ox = ip[H_OP], ip[H_OI], ip[H_OX]
    for r in range(ip[H_NOUTM]):
        s = 0.0
        for pq in range(ip[_u(i_Op + r)], ip[_u(i_Op + r + 1)]):
            s += fp[_u(f_Ox + pq)] * w[_u(w_sel + ip[_u(i_Oi + pq)])]
        out[_u(r)] = s


@njit
def _residual(ip, fp, w, out):
    """Whitened sensor residuals in the layout's row order: ``e = G u − R msrc`` with the observed
    values ``u = v⁰ + D_a a_0 + D_h h``."""
    floating, NH, NOBS, MS = ip[H_FLOAT], ip[H_NH], ip[H_NOBS], ip[H_MS]
    za = 6 if floating else 0
    NZ = za + NH
    w_D, w_v0, w_u, w_h, w_a0, w_ms = ip[H_WD], ip[H_WV0], ip[H_WU], ip[H_WH], ip[H_WA0], ip[H_WMS]
    i_olo, i_ohi = ip[H_OLO], ip[H_OHI]
    for ob in range(NOBS):
        do = w_D + ob * NZ
        s = w[_u(w_v0 + ob)]
        for k in range(za):
            s += w[_u(do + k)] * w[_u(w_a0 + k)]
        for j in range(ip[_u(i_olo + ob)], ip[_u(i_ohi + ob)]):
            s += w[_u(do + za + j)] * w[_u(w_h + j)]
        w[_u(w_u + ob)] = s
    i_Gp, i_Gi, f_Gx, i_Rp, i_Ri, f_Rx = ip[H_GP], ip[H_GI], ip[H_GX], ip[H_RP], ip[H_RI], ip[H_RX]
    o = ip[H_NOUTM]
    for r in range(MS):
        s = 0.0
        for pq in range(ip[_u(i_Gp + r)], ip[_u(i_Gp + r + 1)]):
            s += fp[_u(f_Gx + pq)] * w[_u(w_u + ip[_u(i_Gi + pq)])]
        for pq in range(ip[_u(i_Rp + r)], ip[_u(i_Rp + r + 1)]):
            s -= fp[_u(f_Rx + pq)] * w[_u(w_ms + ip[_u(i_Ri + pq)])]
        out[_u(o + r)] = s


_A1, _A2, _A3 = nbt.float64[::1], nbt.float64[:, ::1], nbt.float64[:, :, ::1]
_IN = nbt.float64[:]            # inputs: float64 vectors of any layout
_SIGNATURE = nbt.int64(nbt.int64[::1], _A1, _A1, _A1, _IN, _IN, _IN, _IN, _IN, _IN, _IN, _A2, _IN, _IN)


def structured_tick(ip, fp, w, S, q, dq, ddq, imu_q, imu_w, imu_a, imu_al, ft, cells, jtau):
    """One estimate (module docstring). ``S``: the estimator's state buffer (``Estimator._state``),
    which holds its ``(NB, 3, 3)`` rotations ``E`` and ``(NB, 6)`` velocities ``V`` (filled as its
    kinematics fills them), the generic solution vector ``xsol`` (whose ``a_0`` entries are set for
    ``Estimate.base_acceleration``), the IMU sample ``imu_buf``, the outputs ``out`` and ``info``
    (one array instead of six: each array argument costs the call ~50 ns). Returns 0; 1 for a non-finite input (``info[0]`` which, ``info[1]``
    index, as the generic tick); 2 for a singular state (``info[2]`` the pivot ratio); 3 for an
    input of the wrong size (nothing computed). Compiled by :func:`compiled_tick`."""
    NB, NJ, NH, MS = ip[H_NB], ip[H_NJ], ip[H_NH], ip[H_MS]
    E, V = S[0:9 * NB], S[9 * NB:15 * NB]
    xsol, imu_buf = S[ip[H_SX]:ip[H_SIMU]], S[ip[H_SIMU]:ip[H_SIMU] + 13]
    out, info = S[ip[H_SOUT]:ip[H_SINFO]], S[ip[H_SINFO]:ip[H_SINFO] + 4]
    if (q.shape[0] != NJ or dq.shape[0] != NJ or ddq.shape[0] != NJ or imu_q.shape[0] != 4 or imu_w.shape[0] != 3
            or imu_a.shape[0] != 3 or imu_al.shape[0] != 3 or ft.shape[0] != ip[H_NFT] or ft.shape[1] != 6
            or cells.shape[0] != ip[H_NCELLS] or jtau.shape[0] != ip[H_NJT]):
        return 3
    for k in range(4):
        imu_buf[_u(k)] = imu_q[_u(k)]
    for k in range(3):
        imu_buf[_u(4 + k)] = imu_w[_u(k)]
        imu_buf[_u(7 + k)] = imu_a[_u(k)]
        imu_buf[_u(10 + k)] = imu_al[_u(k)]
    # ---- inputs must be finite (same codes as the generic tick)
    # (the generic tick's numbering of the inputs: q, dq, ddq, imu, ft, cells, τ → info[0] = 1…7)
    if first_non_finite((q, dq, ddq), info):
        return 1
    if first_non_finite((imu_buf, ft.reshape(ft.shape[0] * 6)), info):
        info[0] += 3
        return 1
    if first_non_finite((cells, jtau), info):
        info[0] += 5
        return 1
    floating = ip[H_FLOAT]
    w_tmp, w_ms = ip[H_WTMP], ip[H_WMS]

    # ---- kinematics and the RNEA / CRBA passes
    _joint_transforms_and_poses(ip, fp, w, E, q)
    _base_velocity(ip, fp, w, E, dq, imu_w, w[w_tmp:w_tmp + 6])
    _rnea_without_contacts(ip, fp, w, E, V, dq, ddq)
    # ---- sensor sources msrc = [1, ω_F × v_F, IMU acc, IMU ω̇, ft, cells, τ]
    imub = ip[H_IMUB]
    if imub >= 0:
        ie, ir = ip[H_IMUE], ip[H_IMUR]
        vo = 6 * imub
        wx, wy, wz = V[_u(vo)], V[_u(vo + 1)], V[_u(vo + 2)]
        ux = V[_u(vo + 3)] - (fp[_u(ir + 1)] * wz - fp[_u(ir + 2)] * wy)
        uy = V[_u(vo + 4)] - (fp[_u(ir + 2)] * wx - fp[_u(ir)] * wz)
        uz = V[_u(vo + 5)] - (fp[_u(ir)] * wy - fp[_u(ir + 1)] * wx)
        wF0 = fp[_u(ie)] * wx + fp[_u(ie + 1)] * wy + fp[_u(ie + 2)] * wz
        wF1 = fp[_u(ie + 3)] * wx + fp[_u(ie + 4)] * wy + fp[_u(ie + 5)] * wz
        wF2 = fp[_u(ie + 6)] * wx + fp[_u(ie + 7)] * wy + fp[_u(ie + 8)] * wz
        vF0 = fp[_u(ie)] * ux + fp[_u(ie + 1)] * uy + fp[_u(ie + 2)] * uz
        vF1 = fp[_u(ie + 3)] * ux + fp[_u(ie + 4)] * uy + fp[_u(ie + 5)] * uz
        vF2 = fp[_u(ie + 6)] * ux + fp[_u(ie + 7)] * uy + fp[_u(ie + 8)] * uz
        w[_u(w_ms + 1)] = wF1 * vF2 - wF2 * vF1
        w[_u(w_ms + 2)] = wF2 * vF0 - wF0 * vF2
        w[_u(w_ms + 3)] = wF0 * vF1 - wF1 * vF0
    for k in range(6):
        w[_u(w_ms + 4 + k)] = imu_buf[_u(7 + k)]
    o = w_ms + 10
    for k in range(ft.shape[0]):
        for a in range(6):
            w[_u(o + 6 * k + a)] = ft[k, a]
    o += 6 * ft.shape[0]
    for k in range(cells.shape[0]):
        w[_u(o + k)] = cells[_u(k)]
    o += cells.shape[0]
    for k in range(jtau.shape[0]):
        w[_u(o + k)] = jtau[_u(k)]

    # ---- observations, the base equation, the least-squares problem in h
    _observations(ip, fp, w)
    if floating and not _base_equation(ip, w):
        info[2] = 0.0
        return 2
    _normal_equations(ip, fp, w)
    w_h, Nhh, bh = ip[H_WH], ip[H_WNHH], ip[H_WBH]
    ratio = _cholesky_solve(w, Nhh, NH, w, bh, w, w_h)
    if ratio < _QR_THRESHOLD:
        ratio = _qr_solve(ip, w)
        if not (ratio > _SINGULAR):
            info[2] = ratio
            return 2
    info[2] = ratio
    w_a0, w_K, w_a00 = ip[H_WA0], ip[H_WK], ip[H_WA00]
    if floating:
        i_solc = ip[H_SOLC]
        for k in range(6):
            s = w[_u(w_a00 + k)]
            for j in range(NH):
                s += w[_u(w_K + 6 * j + k)] * w[_u(w_h + j)]
            w[_u(w_a0 + k)] = s
            if ip[_u(i_solc + k)] >= 0:
                xsol[_u(ip[_u(i_solc + k)])] = s

    # ---- outputs and residual
    _outputs(ip, fp, w, E, V, out)
    n_out = ip[H_NOUTM]
    if ip[H_RED]:
        _residual(ip, fp, w, out)
        n_out += MS
    for k in range(n_out):
        if not np.isfinite(out[_u(k)]):
            return 2
    return 0


_compiled = []


def compiled_tick():
    """:func:`structured_tick` compiled for :data:`_SIGNATURE` (on first use, from numba's cache when
    there is one, so that importing the package compiles nothing). With an explicit signature, any
    other argument type raises ``TypeError`` instead of compiling a new version: the cue for
    :meth:`StructuredSolver.estimate` to pack the inputs first."""
    if not _compiled:
        _compiled.append(njit([_SIGNATURE])(structured_tick))
    return _compiled[0]
