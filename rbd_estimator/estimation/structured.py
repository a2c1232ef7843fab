"""Structured solver of Nori's estimation problem: the tree eliminates every unknown but a few.

The generic tick (:mod:`.estimator`) factorises the whole system ``D d + b = 0`` plus the whitened
sensor rows (Nori eq. 16), or the KKT system of the weighted least-squares problem when the
sensors are redundant. This module solves the *same* problem — minimise the sum of squared
whitened sensor residuals subject to the Newton–Euler rows (3a), (3f), (3τ) — by exploiting the
tree, as the RNEA exploits it for inverse dynamics (Nori §IV-A):

* the hard rows (3a) and (3f) are triangular once the few unknowns
  ``z = (a_0, h)`` are fixed — ``a_0`` the floating base's acceleration (6, absent for a fixed
  base, where ``a_0 = -a_g`` is known) and ``h`` the free contact components. Everything else is
  affine in ``z``:

  - forward (3a): ``a_i = a⁰_i + ⁱX_0 a_0``, ``a⁰`` the RNEA forward pass with ``a_0 = 0``;
  - backward (3f): ``f_i = f⁰_i + I^c_i ⁱX_0 a_0 − Σ_{c below i} ⁱX*_{F_c} B_c h_c`` with ``I^c``
    the composite-rigid-body inertias (CRBA) and ``f⁰`` the RNEA backward pass without contacts;
  - (3τ): ``τ_i = S_iᵀ f_i``;

* the rows left are the floating base's Newton–Euler equation ``f_0 = 0`` (6 hard rows, none
  for a fixed base) and the sensor rows, affine in ``z``. Since ``I^c_0`` is positive definite,
  the hard rows give ``a_0 = (I^c_0)⁻¹ (Σ_c ⁰X*_{F_c} B_c h_c − f⁰_0)`` (the null-space method
  with an explicit basis), and what is left is an unconstrained linear least-squares problem in
  ``h`` alone, solved by Householder QR (an exact solve when it is square);
* one more pass gives the outputs: ``α_i = ⁱX_0 a_0`` forward, the contact wrenches backward
  along the paths from the contacts to the root, ``f_i = f⁰_i + I^c_i α_i − g_i``, ``τ_i``.

The sensor rows are not re-derived: their coefficients and right-hand sides are read from the
:class:`~.layout.SystemLayout` (whitening, FT rotations and signs, load-cell combinations), which
is the single definition of the conventions; only the Newton–Euler recursions live here.
:func:`build` also solves one random, noisy instance with both paths and falls back to the
generic path if they disagree, so a change of the layout cannot silently change the answer.

The tick is one compiled function (numba) with no loop over bodies in Python and no allocation:
constant integers and floats are packed into one ``int64`` and one ``float64`` array, all work
space into one preallocated ``float64`` array. Transforms use Featherstone's structured
rotation + translation arithmetic (RBDA §2.8), inertias the 10-number rigid-body form.
"""
from __future__ import annotations

import warnings

import numba as nb
import numpy as np

from ..errors import ConfigError
from ..model.robot_model import FIXED, FREE, PRISMATIC, REVOLUTE
from .layout import motion_axes

_JIT = dict(cache=True, nogil=True, error_model="numpy")

# ---------------------------------------------------------------------------- packed layout
# Header of the int pack: sizes, then offsets of the int arrays (into ip), of the float arrays
# (into fp) and of the work arrays (into w).
_HEADER = (
    # sizes and flags
    "NB", "FLOAT", "NJ", "NH", "NC", "MS", "NOBS", "IMUB", "NCHAIN", "RED", "NOUTM", "NMSRC", "NSEL",
    "NPAIR", "NGRP", "NCP", "QR",
    # int arrays
    "i_par", "i_jt", "i_qix", "i_chain", "i_pose", "i_cbody", "i_ck", "i_choff", "i_cxb", "i_grp",
    "i_pair", "i_cpath", "i_Gp", "i_Gi", "i_Rp", "i_Ri", "i_Op", "i_Oi", "i_tsel", "i_ksel", "i_solc",
    "i_eyeT", "NPOSE",
    # float arrays
    "f_Et", "f_rt", "f_ax", "f_S", "f_I", "f_XB", "f_Gx", "f_Rx", "f_Ox", "f_imuE", "f_imur", "f_ag",
    # work arrays
    "w_r", "w_a", "w_f", "w_nu", "w_Ic", "w_R", "w_p", "w_Phi", "w_D", "w_v0", "w_K", "w_a00", "w_J",
    "w_rr", "w_h", "w_a0", "w_al", "w_g", "w_e", "w_ms", "w_sel", "w_tmp", "w_qr",
)
_H = {name: k for k, name in enumerate(_HEADER)}
(H_NB, H_FLOAT, H_NJ, H_NH, H_NC, H_MS, H_NOBS, H_IMUB, H_NCHAIN, H_RED, H_NOUTM, H_NMSRC, H_NSEL, H_NPAIR,
 H_NGRP, H_NCP, H_QR,
 H_PAR, H_JT, H_QIX, H_CHAIN, H_POSE, H_CBODY, H_CK, H_CHOFF, H_CXB, H_GRP, H_PAIR, H_CPATH, H_GP, H_GI, H_RP,
 H_RI, H_OP, H_OI, H_TSEL, H_KSEL, H_SOLC, H_EYET, H_NPOSE,
 H_ET, H_RT, H_AX, H_S, H_I, H_XB, H_GX, H_RX, H_OX, H_IMUE, H_IMUR, H_AG,
 W_R, W_A, W_F, W_NU, W_IC, W_RP, W_P, W_PHI, W_D, W_V0, W_K, W_A00, W_J, W_RR, W_H, W_A0, W_AL, W_G, W_E,
 W_MS, W_SEL, W_TMP, W_QR) = range(len(_HEADER))

# observation groups: kind codes
_OBS_A, _OBS_F, _OBS_H = 0, 1, 2


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

    def reserve(self, size: int) -> int:
        return self.add(np.zeros(size))

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


class StructuredSolver:
    """The structured solver of one :class:`~.estimator.Estimator` (see the module docstring).

    ``ip``/``fp``: packed constant data; ``w``: work space. ``n_z`` unknowns remain after the
    tree elimination (``a_0`` and ``h``), of which ``n_h`` after the base equation; ``m_soft``
    sensor rows. :meth:`tick` runs one estimate on the estimator's packed input buffers."""

    def __init__(self, est, ip, fp, w, n_h, m_soft, floating):
        self._est = est
        self.ip, self.fp, self.w = ip, fp, w
        self.n_h, self.m_soft, self.floating = n_h, m_soft, floating
        self.n_z = n_h + (6 if floating else 0)

    def tick(self) -> int:
        """One estimate from ``est._q, _dq, _ddq, _imu_buf, _ft_buf, _cells_buf, _jt_buf`` into
        ``est._out``; returns the generic tick's status codes (0, 1 bad input, 2 singular)."""
        e = self._est
        return structured_tick(self.ip, self.fp, self.w, e._E, e._v, e._x, e._q, e._dq, e._ddq, e._imu_buf,
                               e._ft_buf, e._cells_buf, e._jt_buf, e._out, e._info)

    def summary(self) -> str:
        return (f"structured solver: {self.n_z} unknowns after the tree elimination "
                f"({'a_0 (6) + ' if self.floating else ''}{self.n_h} contact components), "
                f"{6 if self.floating else 0} base rows, {self.m_soft} sensor rows")


# ---------------------------------------------------------------------------- build
def build(est, check: bool = True):
    """The structured solver for ``est``, or ``None`` when the generic path must be used
    (``est._solver_mode == 'generic'``, or the layout has a form this solver does not cover).

    With ``est._solver_mode == 'structured'`` a non-applicable layout raises :class:`ConfigError`."""
    mode = getattr(est, "_solver_mode", "auto")
    if mode not in ("auto", "generic", "structured"):
        raise ConfigError(f"solver must be 'auto', 'generic' or 'structured', got {mode!r}")
    if mode == "generic":
        return None
    try:
        solver = _build(est)
        if check:
            _self_check(est, solver)
    except _NotApplicable as exc:
        if mode == "structured":
            raise ConfigError(f"the structured solver does not apply to this configuration: {exc}") from None
        if str(exc).startswith("self-check"):
            warnings.warn(f"rbd_estimator: structured solver disabled, generic solver used: {exc}", RuntimeWarning,
                          stacklevel=3)
        return None
    return solver


class _NotApplicable(Exception):
    pass


def _build(est) -> StructuredSolver:
    m, lay, cfg = est.model, est._layout, est.config
    NB, nj = m.NB, m.n_joints
    jt = m.joint_types.astype(np.int64)
    par = m.parents.astype(np.int64)
    floating = bool(m.floating_base)
    # ---- applicability: one tree, a free-flyer only as body 0, 0- and 1-DoF joints elsewhere
    if floating:
        if jt[0] != FREE or par[0] != -1 or np.any(par[1:] < 0):
            raise _NotApplicable("the floating base must be body 0 and the root of every other body")
    if np.any(jt[1 if floating else 0:] == FREE):
        raise _NotApplicable("a free joint other than the floating base")
    for i in range(NB):
        if i == 0 and floating:
            continue
        if not ((jt[i] in (REVOLUTE, PRISMATIC) and m.joint_dofs[i] == 1) or (jt[i] == FIXED and m.joint_dofs[i] == 0)):
            raise _NotApplicable(f"joint of body {m.body_names[i]} is neither 1-DoF nor fixed")
        if par[i] >= i:
            raise _NotApplicable("bodies are not in regular numbering")
    if lay.m_hard + lay.m_soft != lay.m:
        raise _NotApplicable("layout rows are not hard rows followed by sensor rows")
    for name in ("_E", "_v", "_x", "_out", "_info", "_imu_buf", "_ft_buf", "_cells_buf", "_jt_buf", "_jofb",
                 "_a0", "_sol_col"):
        if not hasattr(est, name):
            raise _NotApplicable(f"estimator has no buffer {name}")

    # ---- unknowns left: z = (a_0 (floating), h)
    h_cols = [c for c in lay.columns if c.kind == "h"]
    h0 = h_cols[0].start if h_cols else lay.n
    NH = sum(c.size for c in h_cols)
    if h0 + NH != lay.n:
        raise _NotApplicable("contact components are not the last unknowns of the layout")
    za = 6 if floating else 0
    NZ = za + NH
    contacts = lay.contacts
    NC = len(contacts)
    cbody = np.array([fr.body for _, fr, _ in contacts], dtype=np.int64)
    ck = np.array([B.shape[1] for _, _, B in contacts], dtype=np.int64)
    choff = np.array([lay.col("h", c.name) - h0 for c, _, _ in contacts], dtype=np.int64)
    XB = [fr.X.T @ B for _, fr, B in contacts]          # f^x in body coordinates per unit h (layout's block)

    # ---- sensor rows from the layout: coefficients on a (IMU body), f (FT bodies), τ (→ S_jᵀ f_j), h
    ms, mh = lay.m_soft, lay.m_hard
    S = motion_axes(m)
    body_of_joint = {n: i for i, n in enumerate(m.body_joint_names)}
    body_of_name = {n: i for i, n in enumerate(m.body_names)}
    soft_entries = []                                     # (soft row, ('a'|'f', body, comp) or ('h', idx), coef)
    for (r, c, s, v) in lay.triplets:
        if r < mh:
            continue
        if s != 0:
            raise _NotApplicable("a sensor row has a state-dependent coefficient")
        kind, owner, comp = lay.describe_column(c)
        if kind == "a":
            soft_entries.append((r - mh, ("a", body_of_name[owner]), comp, v))
        elif kind == "f":
            soft_entries.append((r - mh, ("f", body_of_name[owner]), comp, v))
        elif kind == "tau":
            b = body_of_joint[owner]
            for a in range(6):
                if S[b, a] != 0.0:
                    soft_entries.append((r - mh, ("f", b), a, v * S[b, a]))
        elif kind == "h":
            soft_entries.append((r - mh, ("h",), c - h0, v))
        else:
            raise _NotApplicable(f"a sensor row on unknowns of kind {kind}")
    # observation groups: a/f bodies (6 values each), then h (NH values)
    groups = []
    for _, key, _, _ in soft_entries:
        if key[0] != "h" and key not in groups:
            groups.append(key)
    groups.sort(key=lambda k: (k[0] != "a", k[1]))
    obs_off, o = {}, 0
    for key in groups:
        obs_off[key] = o
        o += 6
    obs_h = o
    NOBS = o + NH
    G = np.zeros((ms, NOBS))
    for r, key, comp, v in soft_entries:
        col = obs_h + comp if key[0] == "h" else obs_off[key] + comp
        G[r, col] += v
    # right-hand side of the sensor rows over msrc = [1, ω_F×v_F (3), IMU acc (3), IMU ω̇ (3), ft, cells, τ]
    n_ft, n_cells, n_jt = est._ft_buf.size, est._cells_buf.size, est._jt_buf.size
    NMSRC = 10 + n_ft + n_cells + n_jt
    rmap = {0: 0}
    for a in range(3):
        rmap[lay.r_imu_wv + a] = 1 + a
        rmap[lay.r_imu_acc + a] = 4 + a
        rmap[lay.r_imu_alpha + a] = 7 + a
    for k in range(n_ft):
        rmap[lay.r_ft + k] = 10 + k
    for k in range(n_cells):
        rmap[lay.r_cells + k] = 10 + n_ft + k
    for k in range(n_jt):
        rmap[lay.r_tau + k] = 10 + n_ft + n_cells + k
    Rm = np.zeros((ms, NMSRC))
    for (r, s, v) in lay.rhs:
        if r < mh:
            continue
        if s not in rmap:
            raise _NotApplicable("a sensor row's right-hand side uses a state-dependent source")
        Rm[r - mh, rmap[s]] += v

    # ---- outputs: out = O sel with sel = [τ (joint order), h, f of kept bodies]; residual after
    O = lay.out_map.tocoo()
    kept_bodies = []
    for c in O.col:
        kind, owner, comp = lay.describe_column(int(c))
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
        raise _NotApplicable("output buffer does not match the layout's outputs")
    if redundant != (ms > NH):
        raise _NotApplicable("redundancy of the reduced problem differs from the plan's")
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
    qix = est._jofb.astype(np.int64)
    imub = int(est._imu_body) if cfg.imu is not None else -1
    chain = np.asarray(est._imu_chain, dtype=np.int64) if cfg.imu is not None else np.zeros(0, np.int64)
    # bodies whose pose ⁱX_0 is needed: observed a/f bodies, contact bodies, IMU chain, and ancestors
    need = np.zeros(NB, dtype=bool)
    for b in [k[1] for k in groups] + list(cbody) + list(chain) + ([imub] if imub >= 0 else []):
        while b >= 0 and not need[b]:
            need[b] = True
            b = par[b]
    pose = np.flatnonzero(need).astype(np.int64)
    # bodies on a path from a contact to the root (the contact wrenches flow through them)
    oncp = np.zeros(NB, dtype=bool)
    for b in cbody:
        while b >= 0 and not oncp[b]:
            oncp[b] = True
            b = par[b]
    cpath = np.flatnonzero(oncp)[::-1].astype(np.int64)       # leaves first
    # (observed f body, contact below it) pairs
    pairs = []
    for key in groups:
        if key[0] != "f":
            continue
        for ci, b in enumerate(cbody):
            x = int(b)
            while x >= 0 and x != key[1]:
                x = par[x]
            if x == key[1]:
                pairs.append((obs_off[key], ci, key[1]))
    grp = []
    for key in groups:
        grp += [_OBS_A if key[0] == "a" else _OBS_F, key[1], obs_off[key], 0]
    eyeT = np.array([int(np.allclose(m.E_tree[i], np.eye(3), atol=0.0, rtol=0.0)) for i in range(NB)], dtype=np.int64)
    solc = np.full(6, -1, dtype=np.int64)
    if floating:
        c0 = lay.col("a", m.body_names[0])
        solc[:] = est._sol_col[c0:c0 + 6]

    # ---- floats
    fpk = _Packer(np.float64)
    f_off = {}
    f_off["f_Et"] = fpk.add(m.E_tree)
    f_off["f_rt"] = fpk.add(m.r_tree)
    f_off["f_ax"] = fpk.add(m.axes)
    f_off["f_S"] = fpk.add(S)
    f_off["f_I"] = fpk.add(np.array([rbi_compact(I) for I in m.inertias]))
    xb_off = []
    base = fpk.n
    for X in XB:                                    # column-major: column j is 6 contiguous values
        xb_off.append(fpk.add(X.T) - base)
    f_off["f_XB"] = base if XB else fpk.n
    Gp, Gi, Gx = _csr(G)
    Rp, Ri, Rx = _csr(Rm)
    Op, Oi, Ox = _csr(Osel)
    f_off["f_Gx"] = fpk.add(Gx)
    f_off["f_Rx"] = fpk.add(Rx)
    f_off["f_Ox"] = fpk.add(Ox)
    f_off["f_imuE"] = fpk.add(est._imu_E)
    f_off["f_imur"] = fpk.add(est._imu_r)
    f_off["f_ag"] = fpk.add(est._a0)
    fp = fpk.array()

    # ---- work
    wpk = _Packer(np.float64)
    w_off = {}
    for name, size in (("w_r", 3 * NB), ("w_a", 6 * NB), ("w_f", 6 * NB), ("w_nu", 6 * NB), ("w_Ic", 10 * NB),
                       ("w_R", 9 * NB), ("w_p", 3 * NB), ("w_Phi", 6 * NH), ("w_D", NOBS * NZ), ("w_v0", NOBS),
                       ("w_K", 6 * NH), ("w_a00", 6), ("w_J", ms * (NH + 1)), ("w_rr", ms), ("w_h", NH),
                       ("w_a0", 6), ("w_al", 6 * NB), ("w_g", 6 * NB), ("w_e", ms), ("w_ms", NMSRC),
                       ("w_sel", NSEL), ("w_tmp", 64), ("w_qr", NH + 1)):
        w_off[name] = wpk.reserve(size)
    w = wpk.array()
    w[w_off["w_ms"]] = 1.0
    D = w[w_off["w_D"]:w_off["w_D"] + NOBS * NZ].reshape(NOBS, NZ)
    for j in range(NH):                             # h observes itself: constant identity block
        D[obs_h + j, za + j] = 1.0
    for i in range(NB):                             # poses start at identity (the floating base keeps it)
        w[w_off["w_R"] + 9 * i:w_off["w_R"] + 9 * i + 9] = np.eye(3).reshape(-1)

    # ---- ints
    ipk = _Packer(np.int64)
    ipk.add(np.zeros(len(_HEADER)))
    i_off = {}
    i_off["i_par"] = ipk.add(par)
    i_off["i_jt"] = ipk.add(jt)
    i_off["i_qix"] = ipk.add(qix)
    i_off["i_chain"] = ipk.add(chain)
    i_off["i_pose"] = ipk.add(pose)
    i_off["i_cbody"] = ipk.add(cbody)
    i_off["i_ck"] = ipk.add(ck)
    i_off["i_choff"] = ipk.add(choff)
    i_off["i_cxb"] = ipk.add(np.array(xb_off, dtype=np.int64))
    i_off["i_grp"] = ipk.add(np.array(grp, dtype=np.int64))
    i_off["i_pair"] = ipk.add(np.array(pairs, dtype=np.int64).reshape(-1))
    i_off["i_cpath"] = ipk.add(cpath)
    i_off["i_Gp"], i_off["i_Gi"] = ipk.add(Gp), ipk.add(Gi)
    i_off["i_Rp"], i_off["i_Ri"] = ipk.add(Rp), ipk.add(Ri)
    i_off["i_Op"], i_off["i_Oi"] = ipk.add(Op), ipk.add(Oi)
    i_off["i_tsel"] = ipk.add(tsel)
    i_off["i_ksel"] = ipk.add(ksel)
    i_off["i_solc"] = ipk.add(solc)
    i_off["i_eyeT"] = ipk.add(eyeT)
    ip = ipk.array()
    sizes = dict(NB=NB, FLOAT=int(floating), NJ=nj, NH=NH, NC=NC, MS=ms, NOBS=NOBS, IMUB=imub,
                 NCHAIN=len(chain), RED=int(redundant), NOUTM=O.shape[0], NMSRC=NMSRC, NSEL=NSEL,
                 NPAIR=len(pairs), NGRP=len(groups), NCP=len(cpath), QR=1, NPOSE=len(pose))
    for d in (sizes, i_off, f_off, w_off):
        for k, v in d.items():
            ip[_H[k]] = v
    return StructuredSolver(est, ip, fp, w, NH, ms, floating)


def _csr(M):
    import scipy.sparse as sp
    A = sp.csr_matrix(M)
    A.eliminate_zeros()
    A.sort_indices()
    return A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data.astype(np.float64)


def _self_check(est, solver: StructuredSolver, rng_seed: int = 7):
    """Solve one random, noisy (inconsistent) instance with both paths; the structured solution
    must match the generic one (the definition of the problem) to 1e-8 relative."""
    rng = np.random.default_rng(rng_seed)
    m, cfg = est.model, est.config
    nj = m.n_joints
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
    saved = getattr(est, "_structured", None)
    est._structured = None
    try:
        ref = est.estimate(**args)
        ref_out = est._out.copy()
        status = solver.tick()
    except Exception as exc:               # noqa: BLE001  (a generic failure: keep the generic path)
        raise _NotApplicable(f"self-check could not run: {exc}") from None
    finally:
        est._structured = saved
    del ref
    got = est._out.copy()
    scale = max(1.0, float(np.max(np.abs(ref_out))))
    err = float(np.max(np.abs(got - ref_out))) if got.size else 0.0
    if status != 0 or not np.isfinite(err) or err > 1e-8 * scale:
        raise _NotApplicable(f"self-check: structured and generic solutions differ by {err:.3g} "
                             f"(scale {scale:.3g}, status {status})")


# ---------------------------------------------------------------------------- compiled kernels
@nb.njit(**_JIT)
def _first_bad(x):
    for k in range(x.shape[0]):
        if not np.isfinite(x[k]):
            return k
    return -1


@nb.njit(**_JIT)
def _mx(E, eo, r, ro, x, xo, y, yo):
    """``y = plux(E, r) x`` for a motion vector: ``ω' = E ω``, ``v' = E (v − r × ω)``."""
    w0, w1, w2 = x[xo], x[xo + 1], x[xo + 2]
    r0, r1, r2 = r[ro], r[ro + 1], r[ro + 2]
    u0 = x[xo + 3] - (r1 * w2 - r2 * w1)
    u1 = x[xo + 4] - (r2 * w0 - r0 * w2)
    u2 = x[xo + 5] - (r0 * w1 - r1 * w0)
    y[yo] = E[eo] * w0 + E[eo + 1] * w1 + E[eo + 2] * w2
    y[yo + 1] = E[eo + 3] * w0 + E[eo + 4] * w1 + E[eo + 5] * w2
    y[yo + 2] = E[eo + 6] * w0 + E[eo + 7] * w1 + E[eo + 8] * w2
    y[yo + 3] = E[eo] * u0 + E[eo + 1] * u1 + E[eo + 2] * u2
    y[yo + 4] = E[eo + 3] * u0 + E[eo + 4] * u1 + E[eo + 5] * u2
    y[yo + 5] = E[eo + 6] * u0 + E[eo + 7] * u1 + E[eo + 8] * u2


@nb.njit(**_JIT)
def _fxT_add(E, eo, r, ro, f, fo, y, yo, s):
    """``y += s · plux(E, r)ᵀ f`` for a force vector (child to parent): ``f' = Eᵀ f``,
    ``n' = Eᵀ n + r × f'``."""
    n0, n1, n2, f0, f1, f2 = f[fo], f[fo + 1], f[fo + 2], f[fo + 3], f[fo + 4], f[fo + 5]
    a0 = E[eo] * f0 + E[eo + 3] * f1 + E[eo + 6] * f2
    a1 = E[eo + 1] * f0 + E[eo + 4] * f1 + E[eo + 7] * f2
    a2 = E[eo + 2] * f0 + E[eo + 5] * f1 + E[eo + 8] * f2
    b0 = E[eo] * n0 + E[eo + 3] * n1 + E[eo + 6] * n2
    b1 = E[eo + 1] * n0 + E[eo + 4] * n1 + E[eo + 7] * n2
    b2 = E[eo + 2] * n0 + E[eo + 5] * n1 + E[eo + 8] * n2
    r0, r1, r2 = r[ro], r[ro + 1], r[ro + 2]
    y[yo] += s * (b0 + r1 * a2 - r2 * a1)
    y[yo + 1] += s * (b1 + r2 * a0 - r0 * a2)
    y[yo + 2] += s * (b2 + r0 * a1 - r1 * a0)
    y[yo + 3] += s * a0
    y[yo + 4] += s * a1
    y[yo + 5] += s * a2


@nb.njit(**_JIT)
def _fx(E, eo, r, ro, f, fo, y, yo, s):
    """``y = s · plux(E, r)⁻ᵀ f`` (force, parent to child coordinates): ``f' = E f``,
    ``n' = E (n − r × f)``."""
    f0, f1, f2 = f[fo + 3], f[fo + 4], f[fo + 5]
    r0, r1, r2 = r[ro], r[ro + 1], r[ro + 2]
    m0 = f[fo] - (r1 * f2 - r2 * f1)
    m1 = f[fo + 1] - (r2 * f0 - r0 * f2)
    m2 = f[fo + 2] - (r0 * f1 - r1 * f0)
    y[yo] = s * (E[eo] * m0 + E[eo + 1] * m1 + E[eo + 2] * m2)
    y[yo + 1] = s * (E[eo + 3] * m0 + E[eo + 4] * m1 + E[eo + 5] * m2)
    y[yo + 2] = s * (E[eo + 6] * m0 + E[eo + 7] * m1 + E[eo + 8] * m2)
    y[yo + 3] = s * (E[eo] * f0 + E[eo + 1] * f1 + E[eo + 2] * f2)
    y[yo + 4] = s * (E[eo + 3] * f0 + E[eo + 4] * f1 + E[eo + 5] * f2)
    y[yo + 5] = s * (E[eo + 6] * f0 + E[eo + 7] * f1 + E[eo + 8] * f2)


@nb.njit(**_JIT)
def _rbi_apply(I, io, x, xo, y, yo, s):
    """``y += s · I x`` with ``I = (m, h, J)``: ``[J ω + h × v; m v − h × ω]``."""
    m, h0, h1, h2 = I[io], I[io + 1], I[io + 2], I[io + 3]
    jxx, jyy, jzz, jxy, jxz, jyz = I[io + 4], I[io + 5], I[io + 6], I[io + 7], I[io + 8], I[io + 9]
    w0, w1, w2, v0, v1, v2 = x[xo], x[xo + 1], x[xo + 2], x[xo + 3], x[xo + 4], x[xo + 5]
    y[yo] += s * (jxx * w0 + jxy * w1 + jxz * w2 + h1 * v2 - h2 * v1)
    y[yo + 1] += s * (jxy * w0 + jyy * w1 + jyz * w2 + h2 * v0 - h0 * v2)
    y[yo + 2] += s * (jxz * w0 + jyz * w1 + jzz * w2 + h0 * v1 - h1 * v0)
    y[yo + 3] += s * (m * v0 - (h1 * w2 - h2 * w1))
    y[yo + 4] += s * (m * v1 - (h2 * w0 - h0 * w2))
    y[yo + 5] += s * (m * v2 - (h0 * w1 - h1 * w0))


@nb.njit(**_JIT)
def _rbi_xT_add(E, eo, r, ro, I, io, P, po):
    """``P += Xᵀ I X`` for ``X = plux(E, r)`` (rigid-body inertia to parent coordinates, RBDA
    Table 2.5): ``m' = m``, ``h' = Eᵀh + m r``, ``J' = EᵀJE − (y rᵀ + r yᵀ) + 2 (r·y) 1 − m (r rᵀ − |r|² 1)``
    with ``y = Eᵀ h``."""
    m, h0, h1, h2 = I[io], I[io + 1], I[io + 2], I[io + 3]
    jxx, jyy, jzz, jxy, jxz, jyz = I[io + 4], I[io + 5], I[io + 6], I[io + 7], I[io + 8], I[io + 9]
    e00, e01, e02 = E[eo], E[eo + 1], E[eo + 2]
    e10, e11, e12 = E[eo + 3], E[eo + 4], E[eo + 5]
    e20, e21, e22 = E[eo + 6], E[eo + 7], E[eo + 8]
    r0, r1, r2 = r[ro], r[ro + 1], r[ro + 2]
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
    P[po] += m
    P[po + 1] += y0 + m * r0
    P[po + 2] += y1 + m * r1
    P[po + 3] += y2 + m * r2
    P[po + 4] += e00 * t00 + e10 * t10 + e20 * t20 - 2.0 * y0 * r0 + d - m * r0 * r0
    P[po + 5] += e01 * t01 + e11 * t11 + e21 * t21 - 2.0 * y1 * r1 + d - m * r1 * r1
    P[po + 6] += e02 * t02 + e12 * t12 + e22 * t22 - 2.0 * y2 * r2 + d - m * r2 * r2
    P[po + 7] += e00 * t01 + e10 * t11 + e20 * t21 - (y0 * r1 + r0 * y1) - m * r0 * r1
    P[po + 8] += e00 * t02 + e10 * t12 + e20 * t22 - (y0 * r2 + r0 * y2) - m * r0 * r2
    P[po + 9] += e01 * t02 + e11 * t12 + e21 * t22 - (y1 * r2 + r1 * y2) - m * r1 * r2


@nb.njit(**_JIT)
def _joint_transform(jt, Et, eto, rt, rto, ax, axo, qi, eyeT, E, eo, r, ro):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i)`` as ``(E, r)`` (the generic kernel's formulas)."""
    if jt == REVOLUTE:
        s, c = np.sin(qi), np.cos(qi)
        x, y, z = ax[axo], ax[axo + 1], ax[axo + 2]
        t = 1.0 - c
        j00 = c + x * x * t
        j11 = c + y * y * t
        j22 = c + z * z * t
        j01 = x * y * t + z * s
        j10 = x * y * t - z * s
        j02 = x * z * t - y * s
        j20 = x * z * t + y * s
        j12 = y * z * t + x * s
        j21 = y * z * t - x * s
        if eyeT:
            E[eo], E[eo + 1], E[eo + 2] = j00, j01, j02
            E[eo + 3], E[eo + 4], E[eo + 5] = j10, j11, j12
            E[eo + 6], E[eo + 7], E[eo + 8] = j20, j21, j22
        else:
            for b in range(3):
                E[eo + b] = j00 * Et[eto + b] + j01 * Et[eto + 3 + b] + j02 * Et[eto + 6 + b]
                E[eo + 3 + b] = j10 * Et[eto + b] + j11 * Et[eto + 3 + b] + j12 * Et[eto + 6 + b]
                E[eo + 6 + b] = j20 * Et[eto + b] + j21 * Et[eto + 3 + b] + j22 * Et[eto + 6 + b]
        r[ro], r[ro + 1], r[ro + 2] = rt[rto], rt[rto + 1], rt[rto + 2]
    else:
        for k in range(9):
            E[eo + k] = Et[eto + k]
        if jt == PRISMATIC:
            for a in range(3):
                r[ro + a] = rt[rto + a] + qi * (Et[eto + a] * ax[axo] + Et[eto + 3 + a] * ax[axo + 1]
                                                + Et[eto + 6 + a] * ax[axo + 2])
        else:
            r[ro], r[ro + 1], r[ro + 2] = rt[rto], rt[rto + 1], rt[rto + 2]


@nb.njit(**_JIT)
def _householder_ls(A, n_rows, n_cols, ld, v, tmp):
    """In place Householder QR of the row-major ``n_rows × (n_cols + 1)`` matrix ``[J | r]``
    (leading dimension ``ld``); on return ``A[:n_cols, n_cols]`` holds the solution of
    ``min |J x − r|`` in ``v``. Returns the smallest ``|R_kk| / max_k |R_kk|`` (0: singular)."""
    rmax = 0.0
    rmin = np.inf
    for k in range(n_cols):
        # norm of column k below the diagonal
        s = 0.0
        for i in range(k, n_rows):
            a = A[i * ld + k]
            s += a * a
        nrm = np.sqrt(s)
        if nrm == 0.0:
            return 0.0
        akk = A[k * ld + k]
        alpha = -nrm if akk >= 0.0 else nrm
        # v = x - alpha e1 stored in column k (A[k,k] ← akk − alpha), R_kk = alpha
        vk = akk - alpha
        A[k * ld + k] = vk
        vnorm2 = s - akk * akk + vk * vk
        # apply H = 1 - 2 v vᵀ / (vᵀv) to the remaining columns (and the right-hand side)
        for j in range(k + 1, n_cols + 1):
            d = 0.0
            for i in range(k, n_rows):
                d += A[i * ld + k] * A[i * ld + j]
            d = 2.0 * d / vnorm2
            for i in range(k, n_rows):
                A[i * ld + j] -= d * A[i * ld + k]
        tmp[k] = alpha
        aa = abs(alpha)
        if aa > rmax:
            rmax = aa
        if aa < rmin:
            rmin = aa
    # back substitution R x = (Qᵀ r)[:n]
    for k in range(n_cols - 1, -1, -1):
        s = A[k * ld + n_cols]
        for j in range(k + 1, n_cols):
            s -= A[k * ld + j] * v[j]
        v[k] = s / tmp[k]
    if n_cols == 0:
        return 1.0
    return rmin / rmax


@nb.njit(**_JIT)
def _solve_rbi(I, io, L, lo, x, xo, y, yo, s):
    """``y = s · I⁻¹ x`` for a rigid-body inertia ``I = (m, h, J)`` with the Cholesky factor ``L``
    (6 values) of its rotational inertia about the centre of mass ``Ī_C = J + (h hᵀ − |h|² 1)/m``:
    ``ω = Ī_C⁻¹ (n − c × f)``, ``v = f / m + c × ω``."""
    m = I[io]
    c0, c1, c2 = I[io + 1] / m, I[io + 2] / m, I[io + 3] / m
    n0, n1, n2, f0, f1, f2 = x[xo], x[xo + 1], x[xo + 2], x[xo + 3], x[xo + 4], x[xo + 5]
    b0 = n0 - (c1 * f2 - c2 * f1)
    b1 = n1 - (c2 * f0 - c0 * f2)
    b2 = n2 - (c0 * f1 - c1 * f0)
    l00, l10, l11, l20, l21, l22 = L[lo], L[lo + 1], L[lo + 2], L[lo + 3], L[lo + 4], L[lo + 5]
    z0 = b0 / l00
    z1 = (b1 - l10 * z0) / l11
    z2 = (b2 - l20 * z0 - l21 * z1) / l22
    w2 = z2 / l22
    w1 = (z1 - l21 * w2) / l11
    w0 = (z0 - l10 * w1 - l20 * w2) / l00
    y[yo] = s * w0
    y[yo + 1] = s * w1
    y[yo + 2] = s * w2
    y[yo + 3] = s * (f0 / m + (c1 * w2 - c2 * w1))
    y[yo + 4] = s * (f1 / m + (c2 * w0 - c0 * w2))
    y[yo + 5] = s * (f2 / m + (c0 * w1 - c1 * w0))


@nb.njit(**_JIT)
def structured_tick(ip, fp, w, E3, v2, xsol, q, dq, ddq, imu, ft, cells, jtau, out, info):
    """One estimate (see the module docstring). ``E3``/``v2``: the estimator's ``(NB, 3, 3)``
    rotations and ``(NB, 6)`` velocities (filled as the generic kinematics fills them);
    ``xsol``: the generic solution vector, whose ``a_0`` entries are set for
    ``Estimate.base_acceleration``. Returns 0, 1 (non-finite input: ``info[0]`` which,
    ``info[1]`` index) or 2 (singular state: ``info[2]`` the pivot ratio)."""
    # ---- inputs must be finite (same codes as the generic tick)
    bad = _first_bad(q)
    if bad >= 0:
        info[0], info[1] = 1, bad
        return 1
    bad = _first_bad(dq)
    if bad >= 0:
        info[0], info[1] = 2, bad
        return 1
    bad = _first_bad(ddq)
    if bad >= 0:
        info[0], info[1] = 3, bad
        return 1
    bad = _first_bad(imu)
    if bad >= 0:
        info[0], info[1] = 4, bad
        return 1
    bad = _first_bad(ft)
    if bad >= 0:
        info[0], info[1] = 5, bad
        return 1
    bad = _first_bad(cells)
    if bad >= 0:
        info[0], info[1] = 6, bad
        return 1
    bad = _first_bad(jtau)
    if bad >= 0:
        info[0], info[1] = 7, bad
        return 1

    NB, floating, NJ, NH, NC, MS = ip[H_NB], ip[H_FLOAT], ip[H_NJ], ip[H_NH], ip[H_NC], ip[H_MS]
    NOBS, imub, NOUTM, NSEL = ip[H_NOBS], ip[H_IMUB], ip[H_NOUTM], ip[H_NSEL]
    za = 6 if floating else 0
    NZ = za + NH
    i_par, i_jt, i_qix, i_eyeT = ip[H_PAR], ip[H_JT], ip[H_QIX], ip[H_EYET]
    f_Et, f_rt, f_ax, f_S, f_I = ip[H_ET], ip[H_RT], ip[H_AX], ip[H_S], ip[H_I]
    w_r, w_a, w_f, w_nu, w_Ic = ip[W_R], ip[W_A], ip[W_F], ip[W_NU], ip[W_IC]
    w_R, w_p, w_tmp = ip[W_RP], ip[W_P], ip[W_TMP]
    E = E3.reshape(NB * 9)
    V = v2.reshape(NB * 6)

    # ---- joint transforms ⁱX_λ(i) = plux(E_i, r_i) and poses ⁱX_0 = plux(R_i, p_i) where needed
    for i in range(NB):
        k = ip[i_qix + i]
        qi = q[k] if k >= 0 else 0.0
        _joint_transform(ip[i_jt + i], fp, f_Et + 9 * i, fp, f_rt + 3 * i, fp, f_ax + 3 * i, qi, ip[i_eyeT + i],
                         E, 9 * i, w, w_r + 3 * i)
    i_pose = ip[H_POSE]
    for kk in range(ip[H_NPOSE]):
        i = ip[i_pose + kk]
        p = ip[i_par + i]
        if floating and i == 0:
            continue                                   # identity
        Ro, po = w_R + 9 * i, w_p + 3 * i
        if p < 0:
            for k in range(9):
                w[Ro + k] = E[9 * i + k]
            w[po], w[po + 1], w[po + 2] = w[w_r + 3 * i], w[w_r + 3 * i + 1], w[w_r + 3 * i + 2]
        else:
            Rp, pp = w_R + 9 * p, w_p + 3 * p
            for a in range(3):                         # R_i = E_i R_p
                for b in range(3):
                    w[Ro + 3 * a + b] = (E[9 * i + 3 * a] * w[Rp + b] + E[9 * i + 3 * a + 1] * w[Rp + 3 + b]
                                         + E[9 * i + 3 * a + 2] * w[Rp + 6 + b])
            for a in range(3):                         # p_i = p_p + R_pᵀ r_i
                w[po + a] = w[pp + a] + (w[Rp + a] * w[w_r + 3 * i] + w[Rp + 3 + a] * w[w_r + 3 * i + 1]
                                         + w[Rp + 6 + a] * w[w_r + 3 * i + 2])

    # ---- base velocity from the gyro (linear part zero, see kinematics.py)
    t = w_tmp
    for k in range(6):
        w[t + k] = 0.0
    if imub >= 0 and floating:
        ie = ip[H_IMUE]
        wb0 = fp[ie] * imu[4] + fp[ie + 3] * imu[5] + fp[ie + 6] * imu[6]
        wb1 = fp[ie + 1] * imu[4] + fp[ie + 4] * imu[5] + fp[ie + 7] * imu[6]
        wb2 = fp[ie + 2] * imu[4] + fp[ie + 5] * imu[5] + fp[ie + 8] * imu[6]
        x0, x1, x2 = 0.0, 0.0, 0.0
        i_chain = ip[H_CHAIN]
        for kk in range(ip[H_NCHAIN]):
            i = ip[i_chain + kk]
            k = ip[i_qix + i]
            qd = dq[k] if k >= 0 else 0.0
            eo, so = 9 * i, f_S + 6 * i
            y0 = E[eo] * x0 + E[eo + 1] * x1 + E[eo + 2] * x2 + fp[so] * qd
            y1 = E[eo + 3] * x0 + E[eo + 4] * x1 + E[eo + 5] * x2 + fp[so + 1] * qd
            y2 = E[eo + 6] * x0 + E[eo + 7] * x1 + E[eo + 8] * x2 + fp[so + 2] * qd
            x0, x1, x2 = y0, y1, y2
        d0, d1, d2 = wb0 - x0, wb1 - x1, wb2 - x2
        Rb = w_R + 9 * imub                            # ᵇE_0 = product of the chain's E
        w[t] = w[Rb] * d0 + w[Rb + 3] * d1 + w[Rb + 6] * d2
        w[t + 1] = w[Rb + 1] * d0 + w[Rb + 4] * d1 + w[Rb + 7] * d2
        w[t + 2] = w[Rb + 2] * d0 + w[Rb + 5] * d1 + w[Rb + 8] * d2

    # ---- forward pass (Nori 2, 3a with a_0 = 0): v_i, a⁰_i, ν_i; f⁰_i ← I_i a⁰_i + ν_i; I^c_i ← I_i
    vJ = w_tmp + 6
    cc = w_tmp + 12
    Iv = w_tmp + 18
    for i in range(NB):
        p = ip[i_par + i]
        vo, ao, so = 6 * i, w_a + 6 * i, f_S + 6 * i
        if floating and i == 0:
            for k in range(6):
                V[k] = w[t + k]
                w[ao + k] = 0.0
        else:
            k = ip[i_qix + i]
            qd = dq[k] if k >= 0 else 0.0
            qdd = ddq[k] if k >= 0 else 0.0
            for k in range(6):
                w[vJ + k] = fp[so + k] * qd
            if p >= 0:
                _mx(E, 9 * i, w, w_r + 3 * i, V, 6 * p, V, vo)
                _mx(E, 9 * i, w, w_r + 3 * i, w, w_a + 6 * p, w, ao)
                for k in range(6):
                    V[vo + k] += w[vJ + k]
            else:
                for k in range(6):
                    V[vo + k] = w[vJ + k]
                _mx(E, 9 * i, w, w_r + 3 * i, fp, ip[H_AG], w, ao)
            # c_i = v_i × vJ
            a0_, a1_, a2_ = V[vo], V[vo + 1], V[vo + 2]
            b0_, b1_, b2_ = V[vo + 3], V[vo + 4], V[vo + 5]
            m0, m1, m2, m3, m4, m5 = w[vJ], w[vJ + 1], w[vJ + 2], w[vJ + 3], w[vJ + 4], w[vJ + 5]
            w[ao] += fp[so] * qdd + (a1_ * m2 - a2_ * m1)
            w[ao + 1] += fp[so + 1] * qdd + (a2_ * m0 - a0_ * m2)
            w[ao + 2] += fp[so + 2] * qdd + (a0_ * m1 - a1_ * m0)
            w[ao + 3] += fp[so + 3] * qdd + (a1_ * m5 - a2_ * m4 + b1_ * m2 - b2_ * m1)
            w[ao + 4] += fp[so + 4] * qdd + (a2_ * m3 - a0_ * m5 + b2_ * m0 - b0_ * m2)
            w[ao + 5] += fp[so + 5] * qdd + (a0_ * m4 - a1_ * m3 + b0_ * m1 - b1_ * m0)
        # ν_i = v_i ×* I_i v_i
        for k in range(6):
            w[Iv + k] = 0.0
        _rbi_apply(fp, f_I + 10 * i, V, vo, w, Iv, 1.0)
        fo = w_f + 6 * i
        w0_, w1_, w2_, u0_, u1_, u2_ = V[vo], V[vo + 1], V[vo + 2], V[vo + 3], V[vo + 4], V[vo + 5]
        n0, n1, n2, g0, g1, g2 = w[Iv], w[Iv + 1], w[Iv + 2], w[Iv + 3], w[Iv + 4], w[Iv + 5]
        w[fo] = w1_ * n2 - w2_ * n1 + u1_ * g2 - u2_ * g1
        w[fo + 1] = w2_ * n0 - w0_ * n2 + u2_ * g0 - u0_ * g2
        w[fo + 2] = w0_ * n1 - w1_ * n0 + u0_ * g1 - u1_ * g0
        w[fo + 3] = w1_ * g2 - w2_ * g1
        w[fo + 4] = w2_ * g0 - w0_ * g2
        w[fo + 5] = w0_ * g1 - w1_ * g0
        _rbi_apply(fp, f_I + 10 * i, w, ao, w, fo, 1.0)
        if floating:
            for k in range(10):
                w[w_Ic + 10 * i + k] = fp[f_I + 10 * i + k]

    # ---- backward pass (Nori 3f without contacts): f⁰_λ += X_iᵀ f⁰_i; CRBA: I^c_λ += X_iᵀ I^c_i X_i
    for i in range(NB - 1, -1, -1):
        p = ip[i_par + i]
        if p >= 0:
            _fxT_add(E, 9 * i, w, w_r + 3 * i, w, w_f + 6 * i, w, w_f + 6 * p, 1.0)
            if floating:
                _rbi_xT_add(E, 9 * i, w, w_r + 3 * i, w, w_Ic + 10 * i, w, w_Ic + 10 * p)

    # ---- contact columns in base coordinates: Φ_c = ⁰X*_{b_c} (X_Fᵀ B_c)
    w_Phi = ip[W_PHI]
    i_cbody, i_ck, i_choff, i_cxb, f_XB = ip[H_CBODY], ip[H_CK], ip[H_CHOFF], ip[H_CXB], ip[H_XB]
    for c in range(NC):
        b = ip[i_cbody + c]
        for j in range(ip[i_ck + c]):
            col = ip[i_choff + c] + j
            xo = f_XB + ip[i_cxb + c] + 6 * j
            for k in range(6):
                w[w_Phi + 6 * col + k] = 0.0
            _fxT_add(w, w_R + 9 * b, w, w_p + 3 * b, fp, xo, w, w_Phi + 6 * col, 1.0)

    # ---- observations: value = v⁰ + D z for a (IMU body), f (FT and torque-sensor bodies)
    w_D, w_v0 = ip[W_D], ip[W_V0]
    i_grp = ip[H_GRP]
    for gk in range(ip[H_NGRP]):
        kind, b, o = ip[i_grp + 4 * gk], ip[i_grp + 4 * gk + 1], ip[i_grp + 4 * gk + 2]
        Ro, po = w_R + 9 * b, w_p + 3 * b
        if kind == _OBS_A:
            for k in range(6):
                w[w_v0 + o + k] = w[w_a + 6 * b + k]
            if floating:                               # D = ᵇX_0 = plux(R, p)
                for a in range(3):
                    for k in range(3):
                        Rak = w[Ro + 3 * a + k]
                        w[w_D + (o + a) * NZ + k] = Rak
                        w[w_D + (o + a) * NZ + 3 + k] = 0.0
                        w[w_D + (o + 3 + a) * NZ + 3 + k] = Rak
                p0_, p1_, p2_ = w[po], w[po + 1], w[po + 2]
                for a in range(3):                     # −R p×, with p× = [[0, −p2, p1], [p2, 0, −p0], [−p1, p0, 0]]
                    ra0, ra1, ra2 = w[Ro + 3 * a], w[Ro + 3 * a + 1], w[Ro + 3 * a + 2]
                    w[w_D + (o + 3 + a) * NZ] = -(ra1 * p2_ - ra2 * p1_)
                    w[w_D + (o + 3 + a) * NZ + 1] = -(-ra0 * p2_ + ra2 * p0_)
                    w[w_D + (o + 3 + a) * NZ + 2] = -(ra0 * p1_ - ra1 * p0_)
        else:
            for k in range(6):
                w[w_v0 + o + k] = w[w_f + 6 * b + k]
            if floating:                               # D_a = I^c_b ᵇX_0 (columns: I^c times columns of X)
                col6 = w_tmp + 24
                for k in range(6):
                    if k < 3:
                        ex0, ex1, ex2 = (1.0 if k == 0 else 0.0), (1.0 if k == 1 else 0.0), (1.0 if k == 2 else 0.0)
                        # ω = R e_k; v = −R (p × e_k)
                        c0 = w[po + 1] * ex2 - w[po + 2] * ex1
                        c1 = w[po + 2] * ex0 - w[po] * ex2
                        c2 = w[po] * ex1 - w[po + 1] * ex0
                        for a in range(3):
                            w[col6 + a] = w[Ro + 3 * a + k]
                            w[col6 + 3 + a] = -(w[Ro + 3 * a] * c0 + w[Ro + 3 * a + 1] * c1 + w[Ro + 3 * a + 2] * c2)
                    else:
                        for a in range(3):
                            w[col6 + a] = 0.0
                            w[col6 + 3 + a] = w[Ro + 3 * a + k - 3]
                    for a in range(6):
                        w[col6 + 6 + a] = 0.0
                    _rbi_apply(w, w_Ic + 10 * b, w, col6, w, col6 + 6, 1.0)
                    for a in range(6):
                        w[w_D + (o + a) * NZ + k] = w[col6 + 6 + a]
    for r in range(6 * ip[H_NGRP]):                    # D_h of the a/f rows: rewritten below every tick
        for j in range(NH):
            w[w_D + r * NZ + za + j] = 0.0
    i_pair = ip[H_PAIR]
    col6 = w_tmp + 24
    for pk in range(ip[H_NPAIR]):
        o, c, b = ip[i_pair + 3 * pk], ip[i_pair + 3 * pk + 1], ip[i_pair + 3 * pk + 2]
        for j in range(ip[i_ck + c]):
            col = ip[i_choff + c] + j
            _fx(w, w_R + 9 * b, w, w_p + 3 * b, w, w_Phi + 6 * col, w, col6, -1.0)
            for a in range(6):
                w[w_D + (o + a) * NZ + za + col] = w[col6 + a]

    # ---- the base's Newton–Euler equation f_0 = 0 gives a_0 = a⁰⁰ + K h (floating)
    w_K, w_a00 = ip[W_K], ip[W_A00]
    ngrp_rows = 6 * ip[H_NGRP]
    if floating:
        Ic0 = w_Ic
        m = w[Ic0]
        if not (m > 0.0):
            info[2] = 0.0
            return 2
        h0, h1, h2 = w[Ic0 + 1], w[Ic0 + 2], w[Ic0 + 3]
        hh = (h0 * h0 + h1 * h1 + h2 * h2) / m
        c00 = w[Ic0 + 4] + h0 * h0 / m - hh
        c11 = w[Ic0 + 5] + h1 * h1 / m - hh
        c22 = w[Ic0 + 6] + h2 * h2 / m - hh
        c01 = w[Ic0 + 7] + h0 * h1 / m
        c02 = w[Ic0 + 8] + h0 * h2 / m
        c12 = w[Ic0 + 9] + h1 * h2 / m
        L = w_tmp + 40
        if not (c00 > 0.0):
            info[2] = 0.0
            return 2
        l00 = np.sqrt(c00)
        l10 = c01 / l00
        l20 = c02 / l00
        d11 = c11 - l10 * l10
        if not (d11 > 0.0):
            info[2] = 0.0
            return 2
        l11 = np.sqrt(d11)
        l21 = (c12 - l20 * l10) / l11
        d22 = c22 - l20 * l20 - l21 * l21
        if not (d22 > 0.0):
            info[2] = 0.0
            return 2
        l22 = np.sqrt(d22)
        w[L], w[L + 1], w[L + 2], w[L + 3], w[L + 4], w[L + 5] = l00, l10, l11, l20, l21, l22
        _solve_rbi(w, Ic0, w, L, w, w_f, w, w_a00, -1.0)
        for j in range(NH):
            _solve_rbi(w, Ic0, w, L, w, w_Phi + 6 * j, w, w_K + 6 * j, 1.0)
        # reduced observations: v⁰ += D_a a⁰⁰, D_h += D_a K (rows of the a/f groups)
        for r in range(ngrp_rows):
            ro = w_D + r * NZ
            s = 0.0
            for k in range(6):
                s += w[ro + k] * w[w_a00 + k]
            w[w_v0 + r] += s
            for j in range(NH):
                s = 0.0
                for k in range(6):
                    s += w[ro + k] * w[w_K + 6 * j + k]
                w[ro + 6 + j] += s

    # ---- sensor rows: J = G D_h, rr = R msrc − G v⁰ (row-major [J | rr], leading dim NH + 1)
    w_ms, w_J, w_rr = ip[W_MS], ip[W_J], ip[W_RR]
    ms_o = w_ms
    imu_w = w_tmp + 46
    if imub >= 0:                                      # ω_F × v_F of the IMU frame
        ie, ir = ip[H_IMUE], ip[H_IMUR]
        vo = 6 * imub
        wx, wy, wz = V[vo], V[vo + 1], V[vo + 2]
        ux = V[vo + 3] - (fp[ir + 1] * wz - fp[ir + 2] * wy)
        uy = V[vo + 4] - (fp[ir + 2] * wx - fp[ir] * wz)
        uz = V[vo + 5] - (fp[ir] * wy - fp[ir + 1] * wx)
        wF0 = fp[ie] * wx + fp[ie + 1] * wy + fp[ie + 2] * wz
        wF1 = fp[ie + 3] * wx + fp[ie + 4] * wy + fp[ie + 5] * wz
        wF2 = fp[ie + 6] * wx + fp[ie + 7] * wy + fp[ie + 8] * wz
        vF0 = fp[ie] * ux + fp[ie + 1] * uy + fp[ie + 2] * uz
        vF1 = fp[ie + 3] * ux + fp[ie + 4] * uy + fp[ie + 5] * uz
        vF2 = fp[ie + 6] * ux + fp[ie + 7] * uy + fp[ie + 8] * uz
        w[ms_o + 1] = wF1 * vF2 - wF2 * vF1
        w[ms_o + 2] = wF2 * vF0 - wF0 * vF2
        w[ms_o + 3] = wF0 * vF1 - wF1 * vF0
    for k in range(6):
        w[ms_o + 4 + k] = imu[7 + k]
    o = ms_o + 10
    for k in range(ft.shape[0]):
        w[o + k] = ft[k]
    o += ft.shape[0]
    for k in range(cells.shape[0]):
        w[o + k] = cells[k]
    o += cells.shape[0]
    for k in range(jtau.shape[0]):
        w[o + k] = jtau[k]
    i_Gp, i_Gi, f_Gx = ip[H_GP], ip[H_GI], ip[H_GX]
    i_Rp, i_Ri, f_Rx = ip[H_RP], ip[H_RI], ip[H_RX]
    ld = NH + 1
    for r in range(MS):
        ro = w_J + r * ld
        for j in range(NH):
            w[ro + j] = 0.0
        s = 0.0
        for pq in range(ip[i_Rp + r], ip[i_Rp + r + 1]):
            s += fp[f_Rx + pq - 0] * w[ms_o + ip[i_Ri + pq]]
        for pq in range(ip[i_Gp + r], ip[i_Gp + r + 1]):
            g = fp[f_Gx + pq]
            ob = ip[i_Gi + pq]
            s -= g * w[w_v0 + ob]
            do = w_D + ob * NZ + za
            for j in range(NH):
                w[ro + j] += g * w[do + j]
        w[ro + NH] = s
        w[w_rr + r] = s

    # ---- least squares in h (Householder QR of [J | rr]; exact solve when square)
    w_h = ip[W_H]
    ratio = _householder_ls(w[w_J:w_J + MS * ld], MS, NH, ld, w[w_h:w_h + NH], w[ip[W_QR]:ip[W_QR] + NH + 1])
    info[2] = ratio
    if not (ratio > 1e-14):
        return 2

    # ---- a_0, residual e = G (v⁰ + D z) − R msrc (recomputed from D: J was overwritten by QR)
    w_a0 = ip[W_A0]
    if floating:
        for k in range(6):
            s = w[w_a00 + k]
            for j in range(NH):
                s += w[w_K + 6 * j + k] * w[w_h + j]
            w[w_a0 + k] = s
            xs = ip[ip[H_SOLC] + k]
            if xs >= 0:
                xsol[xs] = s
    RED = ip[H_RED]
    if RED:
        for r in range(MS):
            s = -w[w_rr + r]
            for pq in range(ip[i_Gp + r], ip[i_Gp + r + 1]):
                do = w_D + ip[i_Gi + pq] * NZ + za
                t2 = 0.0
                for j in range(NH):
                    t2 += w[do + j] * w[w_h + j]
                s += fp[f_Gx + pq] * t2
            out[NOUTM + r] = s

    # ---- outputs: α_i = ⁱX_0 a_0 forward; contact wrenches g backward on their paths;
    #      f_i = f⁰_i + I^c_i α_i − g_i; τ_i = S_iᵀ f_i
    w_al, w_g, w_sel = ip[W_AL], ip[W_G], ip[W_SEL]
    i_cpath, NCP = ip[H_CPATH], ip[H_NCP]
    for kk in range(NCP):
        b = ip[i_cpath + kk]
        for k in range(6):
            w[w_g + 6 * b + k] = 0.0
    for c in range(NC):
        b = ip[i_cbody + c]
        for j in range(ip[i_ck + c]):
            hv = w[w_h + ip[i_choff + c] + j]
            xo = f_XB + ip[i_cxb + c] + 6 * j
            for k in range(6):
                w[w_g + 6 * b + k] += fp[xo + k] * hv
    for kk in range(NCP):
        b = ip[i_cpath + kk]
        p = ip[i_par + b]
        if p >= 0:
            _fxT_add(E, 9 * b, w, w_r + 3 * b, w, w_g + 6 * b, w, w_g + 6 * p, 1.0)
    i_tsel, i_ksel = ip[H_TSEL], ip[H_KSEL]
    fi = w_tmp + 50
    for i in range(NB):
        if floating:
            if i == 0:
                for k in range(6):
                    w[w_al + k] = w[w_a0 + k]
            else:
                _mx(E, 9 * i, w, w_r + 3 * i, w, w_al + 6 * ip[i_par + i], w, w_al + 6 * i)
        ts, ks = ip[i_tsel + i], ip[i_ksel + i]
        if ts < 0 and ks < 0:
            continue
        for k in range(6):
            w[fi + k] = w[w_f + 6 * i + k]
        if floating:
            _rbi_apply(w, w_Ic + 10 * i, w, w_al + 6 * i, w, fi, 1.0)
        for k in range(6):                             # g_i stays zero off the contact paths
            w[fi + k] -= w[w_g + 6 * i + k]
        if ts >= 0:
            s = 0.0
            for k in range(6):
                s += fp[f_S + 6 * i + k] * w[fi + k]
            w[w_sel + ts] = s
        if ks >= 0:
            for k in range(6):
                w[w_sel + ks + k] = w[fi + k]
    for j in range(NH):
        w[w_sel + NJ + j] = w[w_h + j]
    i_Op, i_Oi, f_Ox = ip[H_OP], ip[H_OI], ip[H_OX]
    for r in range(NOUTM):
        s = 0.0
        for pq in range(ip[i_Op + r], ip[i_Op + r + 1]):
            s += fp[f_Ox + pq] * w[w_sel + ip[i_Oi + pq]]
        out[r] = s
    for k in range(NOUTM + (MS if RED else 0)):
        if not np.isfinite(out[k]):
            return 2
    return 0
