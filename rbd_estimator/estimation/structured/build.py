"""Plan-time build: the structured layout of one estimator packed into ``ip``/``fp``/``w`` from the
:class:`~..layout.SystemLayout`, the off-line compression of sensor rows, and the self-check
against the generic solver."""
from __future__ import annotations

import warnings
from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse as sp

from ...errors import ConfigError
from ...model.robot_model import FIXED, FREE, PRISMATIC, REVOLUTE
from ...model.forward_kinematics import KinematicTree, motion_axes
from ...kernels.spatial import rbi_compact
from .layout import _OBS_A, _OBS_F, _OBS_FP, HEADER, Packer
from .limbs import WSC_SIZE, plan as limb_plan
from .solver import StructuredSolver

# ---------------------------------------------------------------------------- build
class _NotApplicable(Exception):
    pass


class TreeProblem(NamedTuple):
    """What the structured solver is built from: the plan of one fixed-contact estimator
    (:class:`~..estimator.Estimator`) and the hooks into its per-tick data.

    ``layout``: the :class:`~..layout.SystemLayout`; ``joint_of_body``: the joint (index in
    ``q``) of every body, -1 for none; ``imu``: ``(body, E, r)`` of the IMU frame; ``sol_col``:
    where unknown ``j`` of the layout sits in the generic solution vector; ``n_out``: outputs
    (with the residual when ``redundant``); ``offsets``: the state buffer's offsets (``SX``,
    ``SIMU``, ``SOUT``, ``SINFO``, ``STAIL``); ``imu_y``/``n_imu``: the IMU's slice of ``y``;
    ``actuators``: the :class:`~..actuators.ActuatorModel` of the joint-torque readings;
    ``install(tail)``: makes the estimator's state buffer with ``tail`` appended and returns it;
    ``convert(q, dq, ddq, y)``: the inputs as float64 vectors (``ValueError`` naming a bad one);
    ``reference(q, dq, ddq, y)``: the generic path's outputs (the self-check's definition)."""
    model: object
    config: object
    layout: object
    joint_of_body: np.ndarray
    imu: tuple
    sol_col: np.ndarray
    n_out: int
    redundant: bool
    offsets: dict
    imu_y: int
    n_imu: int
    actuators: object
    install: Callable
    convert: Callable
    reference: Callable


def build(problem: TreeProblem, mode: str = "auto", check: bool = True):
    """The structured solver for ``problem``, or ``None`` when the generic path is to be used:
    ``mode == 'generic'``, or the layout has a form this solver does not cover, or the
    self-check fails (with a warning). With ``'structured'`` these raise :class:`ConfigError`."""
    est = problem
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


#: The least squares by limbs (:mod:`.limbs`) is planned from this many unknowns ``x`` up: below it
#: the dense path was faster (Go2, ``n_x = 24``, four 6-wide blocks: 7.4 µs per estimate against 6.8).
_LIMBS_MIN_NX = 32


#: A wrench observed by at most this many sensor rows is observed as one projection ``sᵀ f`` per row
#: (two transforms per row) instead of as six components (six inertia products and transforms).
_PROJECT_ROWS = 2


def _observation_layout(groups, entries):
    """Where each observed quantity sits in ``u = v⁰ + D z``: ``obs_off[key]``, six components of
    the IMU body's acceleration or of a body's wrench observed by several rows; ``proj[(key, row)] =
    (offset, s)``, one component ``sᵀ f_b`` for a wrench that few rows observe (a joint-torque sensor:
    ``s`` its weighted motion axis, filled by the caller); then the ``h`` block at ``obs_h``."""
    rows = {key: sorted({r for r, k, _, _ in entries if k == key}) for key in groups}
    full = [key for key in groups if key[0] == "a" or len(rows[key]) > _PROJECT_ROWS]
    obs_off = {key: 6 * g for g, key in enumerate(full)}
    o = 6 * len(full)
    proj = {}
    for key in groups:
        if key not in obs_off:
            for r in rows[key]:
                proj[(key, r)] = (o, np.zeros(6))
                o += 1
    return obs_off, proj, o


def _csr_lists(lists):
    """``(pointers, indices)`` of a list of int lists."""
    return (np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int64),
            np.array([v for x in lists for v in x], dtype=np.int64))


def _csr(M):
    A = sp.csr_matrix(M)
    A.eliminate_zeros()
    A.sort_indices()
    return A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data.astype(np.float64)


def _subtrees(par: np.ndarray) -> np.ndarray:
    """``sub[i, j]``: body ``j`` is in the subtree of body ``i`` (``i`` included), from the parent
    array in regular numbering (a child after its parent), leaves first: ``NB`` row operations."""
    sub = np.eye(par.size, dtype=bool)
    for b in range(par.size - 1, 0, -1):
        if par[b] >= 0:
            sub[par[b]] |= sub[b]
    return sub


def _pair_index(anc, dsc_mask: np.ndarray, dscp: np.ndarray) -> np.ndarray:
    """For each pair ``(i, j)``, ``j`` in ``anc[i]`` (in that order), the index of the pair ``(j, i)``
    in the CSR lists of ``dsc`` (``dsc[j]`` = the ascending ``flatnonzero(dsc_mask[j])``, starting at
    ``dscp[j]``), or -1 when ``i`` is not in ``dsc[j]``."""
    i = np.repeat(np.arange(len(anc), dtype=np.int64), [len(a) for a in anc])
    j = np.array([k for a in anc for k in a], dtype=np.int64)
    rank = np.cumsum(dsc_mask, axis=1) - 1               # rank[j, i]: i's position in dsc[j]
    return np.where(dsc_mask[j, i], dscp[j] + rank[j, i], -1).astype(np.int64)


def _build(est: TreeProblem) -> StructuredSolver:
    m, lay, cfg = est.model, est.layout, est.config
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

    # ---- unknowns left: z = (a_0 (floating), h)
    h_cols = [c for c in lay.columns if c.kind == "h"]
    NH = sum(c.size for c in h_cols)
    msa = nj if lay.measured_acceleration else 0           # δ = q̈ − q̈ᵐ after h (accelerations.py)
    h0 = h_cols[0].start if h_cols else lay.n - msa
    if h0 + NH + msa != lay.n or (msa and lay.col("qdd", m.joint_names[0]) != h0 + NH):
        raise _NotApplicable("the contact components (and the joint accelerations) are not the last unknowns")
    NX = NH + msa
    za = 6 if floating or msa else 0                      # layout._za
    NZ = za + NX
    contacts = lay.contacts
    NC = len(contacts)
    cbody = np.array([fr.body for _, fr, _ in contacts], dtype=np.int64)
    ck = np.array([B.shape[1] for _, _, B in contacts], dtype=np.int64)
    # x = (δ, h): the joint accelerations' deviations first, the contact components last (the
    # covariance's substitutions for a contact wrench then start at its own columns)
    choff = np.array([lay.col("h", c.name) - h0 + msa for c, _, _ in contacts], dtype=np.int64)
    XB = [fr.X.T @ B for _, fr, B in contacts]          # f^x = ⁱX*_F B_c h_c: the layout's (3f) block

    # ---- sensor rows from the layout, on observed quantities: a (IMU body), f (FT bodies; τ_j → S_jᵀ f_j), h
    mh = lay.m_hard
    ms = lay.m_sensor - msa            # sensor rows; the joint accelerations' and the prior's add to N's diagonal
    prior = np.zeros(NX)
    S = motion_axes(m)
    body_of_joint = {n: i for i, n in enumerate(m.body_joint_names)}
    body_of_name = {n: i for i, n in enumerate(m.body_names)}
    entries = []                                          # (soft row, group key, component, coefficient)
    for (r, c, s, v) in lay.triplets:
        if r < mh:
            continue
        if r >= mh + ms:                                  # prior h_j / σ_j = 0, accelerations δ_j / σ_a = 0
            prior[c - h0 + msa if c - h0 < NH else c - h0 - NH] = v
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
    obs_off, proj, obs_h = _observation_layout(groups, entries)
    NOBS = obs_h + NH
    G = np.zeros((ms, NOBS))
    for r, key, comp, v in entries:
        if key[0] == "h":
            G[r, obs_h + comp] += v
        elif key in obs_off:
            G[r, obs_off[key] + comp] += v
        else:                                             # the row observes sᵀ f_b, s its coefficients
            proj[(key, r)][1][comp] += v
            G[r, proj[(key, r)][0]] = 1.0
    # right-hand sides over msrc = [1, ω_F × v_F (3), y]
    NMSRC = 4 + lay.n_y
    rmap = {0: 0}
    for a in range(3):
        rmap[lay.r_imu_wv + a] = 1 + a
    rmap.update({lay.r_y + k: 4 + k for k in range(lay.n_y)})
    Rm = np.zeros((ms, NMSRC))
    for (r, s, v) in lay.rhs:
        if r < mh or r >= mh + ms:
            continue
        if s not in rmap:
            raise _NotApplicable("a sensor row's right-hand side has a state-dependent term")
        Rm[r - mh, rmap[s]] += v
    Gc, Rc = _compress_rows(G, Rm)
    MSC = Gc.shape[0]

    # ---- contacts below each observed wrench; h-column ranges of observations and LS rows
    sub = _subtrees(par)                                 # sub[i, j]: j in i's subtree
    ipk, fpk = Packer(np.int64, header=HEADER), Packer(np.float64)
    observed = [(key, obs_off[key], 6, -1) for key in groups if key in obs_off]
    observed += [(key, o, 1, fpk.add(s_)) for (key, _), (o, s_) in proj.items()]   # (fp offset of s)
    jidx = {n: k for k, n in enumerate(m.joint_names)}
    tsel = np.full(NB, -1, dtype=np.int64)                # the joint (index in q) of each body, -1 for none
    for i in range(NB):
        if m.joint_dofs[i] == 1 and not (floating and i == 0):
            tsel[i] = jidx[m.body_joint_names[i]]
    jointed = tsel >= 0
    above = sub & jointed[:, None]                        # above[j, i]: j a joint body with i in its subtree
    np.fill_diagonal(above, False)
    below_joints = sub & jointed                          # below_joints[i, j]: j a joint body in i's subtree
    anc = [np.flatnonzero(above[:, i]).tolist() for i in range(NB)]                 # joints above i
    dsc = [np.flatnonzero(below_joints[i]).tolist() for i in range(NB)]             # i's subtree's joints
    jbd = np.argsort(np.where(jointed, tsel, nj + np.arange(NB)))[:nj].astype(np.int64)  # each joint's body
    pairs, olo, ohi, grp = [], np.zeros(NOBS, np.int64), np.zeros(NOBS, np.int64), []
    seg = np.zeros((NOBS, 2, 2), np.int64)               # per observation: its δ span and its h span
    xcols = [{msa + j - obs_h} if j >= obs_h else set() for j in range(NOBS)]   # per observation: x's columns
    units = fpk.add(np.eye(6))                            # e_0 … e_5: a full observation's six projections
    for key, o, n, sx in observed:
        grp += [_OBS_A if key[0] == "a" else (_OBS_F if sx < 0 else _OBS_FP), key[1], o, units if sx < 0 else sx]
        lo, hi = NX, 0
        if key[0] == "f":
            for ci in range(NC):
                if sub[key[1], cbody[ci]]:
                    pairs.append((o, ci, key[1], sx))
                    lo, hi = min(lo, choff[ci]), max(hi, choff[ci] + ck[ci])
                    for a in range(n):
                        xcols[o + a].update(range(choff[ci], choff[ci] + ck[ci]))
        if hi > lo:
            seg[o:o + n, 1] = lo, hi
        if msa:                                           # the δ of the joints that move or load it
            b = key[1]
            moving = anc[b] + ([b] if key[0] == "a" and tsel[b] >= 0 else []) + (dsc[b] if key[0] == "f" else [])
            for a in range(n):
                xcols[o + a].update(int(tsel[j]) for j in moving)
            if moving:
                dlo, dhi = min(int(tsel[j]) for j in moving), max(int(tsel[j]) for j in moving) + 1
                seg[o:o + n, 0] = dlo, dhi
                lo, hi = min(lo, dlo), max(hi, dhi)
        if hi > lo:
            olo[o:o + n], ohi[o:o + n] = lo, hi
    olo[obs_h:], ohi[obs_h:] = msa + np.arange(NH), msa + np.arange(NH) + 1
    seg[obs_h:, 1, 0], seg[obs_h:, 1, 1] = msa + np.arange(NH), msa + np.arange(NH) + 1
    # each LS row's two column ranges in x = (δ, h): [lo_δ, hi_δ) in δ, then [lo_h, hi_h) in h (empty: lo = hi;
    # a row without δ has its h range first, so that the exact-acceleration rows run the first loops only)
    clo, chi = np.zeros(2 * MSC, np.int64), np.zeros(2 * MSC, np.int64)
    for r in range(MSC):
        cols = np.flatnonzero(Gc[r])
        for part in range(2):
            spans = [tuple(seg[c, part]) for c in cols if seg[c, part, 1] > seg[c, part, 0]]
            if spans:
                clo[2 * r + part], chi[2 * r + part] = min(a for a, _ in spans), max(b for _, b in spans)
        if chi[2 * r] == clo[2 * r]:                      # no δ (exact accelerations): h is the first range
            clo[2 * r:2 * r + 2], chi[2 * r:2 * r + 2] = (clo[2 * r + 1], 0), (chi[2 * r + 1], 0)
    blocks = _row_blocks(clo, chi, MSC)

    # ---- outputs: out = O sel with sel = [τ (joint order), h, f of kept bodies]; the residual after
    O = lay.out_map.tocoo()
    kept_bodies = []
    for c in O.col:
        kind, owner, _ = lay.describe_column(int(c))
        if kind == "f" and body_of_name[owner] not in kept_bodies:
            kept_bodies.append(body_of_name[owner])
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
    redundant = bool(est.redundant)
    if est.n_out != O.shape[0] + (lay.m_sensor if redundant else 0):
        raise _NotApplicable("the output buffer does not match the layout's outputs")
    if ms < NH:
        raise _NotApplicable("fewer sensor rows than contact components")
    ksel = np.full(NB, -1, dtype=np.int64)
    for kk, b in enumerate(kept_bodies):
        ksel[b] = nj + NH + 6 * kk
    below_body = [np.flatnonzero(sub[i, cbody]).tolist() if jointed[i] else [] for i in range(NB)]
    cbp = np.concatenate([[0], np.cumsum([len(b) for b in below_body])]).astype(np.int64)
    cbi = np.array([ci for b in below_body for ci in b], dtype=np.int64)
    ancp, anci = _csr_lists(anc)
    dscp, dsci = _csr_lists(dsc)
    ancm = _pair_index(anc, below_joints, dscp)          # (i, j above i) → the pair (j, i) of dsc
    NCOV = nj + 6 * NC                                   # output rows of τ and of the contact wrenches
    limbs = None                                         # the least squares by limbs (.limbs, P4–P5)
    if msa and floating and NX >= _LIMBS_MIN_NX:
        s_cols = {j: {int(tsel[k]) for k in anc[i] + dsc[i]}
                  | {c for ci in below_body[i] for c in range(choff[ci], choff[ci] + ck[ci])}
                  for j, i in enumerate(jbd)}             # a torque's columns: joints above, below, contacts below
        out_cols = [set().union(*([s_cols[c] for c in np.flatnonzero(Osel[r, :nj])]
                                  + [{msa + c - nj} for c in np.flatnonzero(Osel[r, nj:nj + NH]) + nj]))
                    for r in range(NCOV)]
        for ci in range(NC):                              # a contact's six rows together (a zero row too)
            for r in range(nj + 6 * ci, nj + 6 * ci + 6):
                out_cols[r] |= set(range(choff[ci], choff[ci] + ck[ci]))
        row_cols = [set().union(*(xcols[c] for c in np.flatnonzero(Gc[r]))) for r in range(MSC)]
        if set(range(msa, NX)) <= set().union(*row_cols):  # no block whose contacts only the prior sees
            limbs = limb_plan(NX, row_cols, out_cols)
    prm, ipm, lbk, lout, loy, hix, l_size, y_size = limbs or (np.zeros(0, np.int64),) * 6 + (0, 0)
    nlb = len(lbk) // 6

    # ---- tree data: the forward kinematics with the RNEA's forward pass; poses ⁱX_0 of the observed
    # and contact bodies (and the IMU's path)
    qix = np.asarray(est.joint_of_body, dtype=np.int64)
    tree = KinematicTree(m, qix, qix, imu=(int(est.imu[0]), est.imu[1], est.imu[2]),
                         poses=tuple(int(k[1]) for k in groups) + tuple(int(b) for b in cbody)
                         + tuple(int(i) for i in np.flatnonzero(tsel >= 0)) * bool(cfg.covariance or msa), rnea=True)
    cpath = m.supports(cbody)[::-1].copy()         # bodies the contact wrenches flow through, leaves first
    eyeT = np.array([int(np.array_equal(m.E_tree[i], np.eye(3))) for i in range(NB)], dtype=np.int64)
    solc = np.full(6, -1, dtype=np.int64)
    if floating:
        c0 = lay.col("a", m.body_names[0])
        solc[:] = est.sol_col[c0:c0 + 6]

    # ---- floats (and the forward kinematics' ints and floats at the head of the blobs)
    k_off = tree.pack(ipk, fpk)
    f_off = dict(XB=fpk.n)
    xb_off = [fpk.add(X.T) - f_off["XB"] for X in XB]        # column j of X_Fᵀ B_c: 6 contiguous values
    Gp, Gi, Gx = _csr(G)
    Rp, Ri, Rx = _csr(Rm)
    Cp, Ci, Cx = _csr(Gc)
    CRp, CRi, CRx = _csr(Rc)
    Op, Oi, Ox = _csr(Osel)
    f_off.update(GX=fpk.add(Gx), RX=fpk.add(Rx), CX=fpk.add(Cx), CRX=fpk.add(CRx), OX=fpk.add(Ox),
                 PRI=fpk.add(prior), ACTF=fpk.add(est.actuators.floats))
    fp = fpk.array()

    # ---- work
    sizes = dict(tree.work_sizes(), WIC=10 * NB + 10, WPHI=6 * NX, WD=NOBS * NZ,
                 WV0=NOBS, WK=6 * NX, WA00=6, WJ=(MSC + 1) * NZ, WRR=MSC + 1,  # + a zero row (solve._three_rows)
                 WNAA=36, WNAH=6 * NX, WNHH=NX * NX, WBA=6,
                 WBH=NX, WH=NX, WA0=6, WAL=6 * NB, WG=6 * NB, WMS=NMSRC, WSEL=NSEL, WTMP=64,
                 WQR=(MSC + NX) * (NX + 1) + NX + 1, WU=max(NOBS, 6 * NX), WT=nj * NX, WZ=max(NCOV * NX, y_size),
                 WS0=6 * NB, WF0=6 * NB, WKT=6 * NX, WHL=l_size, WM=max(1, len(dsci)),
                 WSC=WSC_SIZE * bool(nlb), WLY=NX * bool(nlb), WLB=1)
    wk = Packer(np.float64)
    w_off = {name: wk.reserve(size) for name, size in sizes.items()}
    w = wk.array()
    w[w_off["WIC"] + 10 * NB:w_off["WIC"] + 10 * NB + 10] = rbi_compact(np.eye(6))   # after the I^c_b: M = 1
    w[w_off["WMS"]] = 1.0
    for j in range(NH):                             # h observes itself: a constant identity block of D
        w[w_off["WD"] + (obs_h + j) * NZ + za + msa + j] = 1.0

    # ---- ints
    i_off = dict(CBODY=ipk.add(cbody), CK=ipk.add(ck), CHOFF=ipk.add(choff), CXB=ipk.add(np.array(xb_off, np.int64)),
                 GRP=ipk.add(np.array(grp, np.int64)), PAIR=ipk.add(np.array(pairs, np.int64).reshape(-1)),
                 CPATH=ipk.add(cpath), GP=ipk.add(Gp), GI=ipk.add(Gi), RP=ipk.add(Rp), RI=ipk.add(Ri),
                 CP=ipk.add(Cp), CI=ipk.add(Ci), CRP=ipk.add(CRp), CRI=ipk.add(CRi), CLO=ipk.add(clo),
                 CHI=ipk.add(chi), BLK=ipk.add(blocks.reshape(-1)), OLO=ipk.add(olo), OHI=ipk.add(ohi), OP=ipk.add(Op), OI=ipk.add(Oi),
                 TSEL=ipk.add(tsel), KSEL=ipk.add(ksel), SOLC=ipk.add(solc), EYET=ipk.add(eyeT),
                 CBP=ipk.add(cbp), CBI=ipk.add(cbi), ANCP=ipk.add(ancp), ANCI=ipk.add(anci), DSCP=ipk.add(dscp),
                 DSCI=ipk.add(dsci), ACTI=ipk.add(est.actuators.ints), LBK=ipk.add(lbk), PRM=ipk.add(prm),
                 IPM=ipk.add(ipm), LOUT=ipk.add(lout), LOY=ipk.add(loy), HIX=ipk.add(hix), ANCM=ipk.add(ancm),
                 JBD=ipk.add(jbd))
    counts = dict(NJ=nj, NH=NH, NX=NX, MSA=msa, NC=NC, MS=lay.m_sensor, MSC=MSC, NBLK=len(blocks), NLB=nlb, NOBS=NOBS, NGRP=len(observed), NPAIR=len(pairs), NCP=len(cpath),
                  RED=int(redundant), NOUTM=O.shape[0], NMSRC=NMSRC, NSEL=NSEL, NY=lay.n_y, IMUY=est.imu_y,
                  NIMU=est.n_imu, COV=int(cfg.covariance), NACT=est.actuators.count, **est.offsets)
    tail = counts["STAIL"]
    counts.update(SFP=tail, SW=tail + fp.size, SEND=tail + fp.size + w.size)
    ip = ipk.array({**k_off, **counts, **i_off, **f_off, **w_off})
    S = est.install(np.concatenate([fp, w]))                  # fp and w travel in the state buffer
    tail = S[counts["STAIL"]:]
    return StructuredSolver(ip, S, tail[:fp.size], tail[fp.size:], NH, ms, MSC, floating, est.convert, msa)


def _self_check(est: TreeProblem, solver: StructuredSolver, seed: int = 7, count: int = 2):
    """Solve random, noisy (inconsistent) instances with the generic path — the definition of
    the problem — and with this solver (float64 arrays, and lists converted first); they must
    agree to 1e-8."""
    rng = np.random.default_rng(seed)
    nj = est.model.n_joints
    o = est.offsets
    out = solver.state[o["SOUT"]:o["SINFO"]]
    for _ in range(count):
        q, dq, ddq = rng.uniform(-1.2, 1.2, nj), rng.normal(size=nj), rng.normal(size=nj)
        y = rng.normal(size=est.layout.n_y) * 20
        if est.imu_y >= 0:                      # a unit quaternion, a plausible gyro and accelerometer
            k = est.imu_y
            quat = rng.normal(size=4)
            y[k:k + 4] = quat / np.linalg.norm(quat)
            y[k + 4:k + 7] = rng.normal(size=3)
            y[k + 7:k + 10] = rng.normal(size=3) * 5
        try:
            ref = est.reference(q, dq, ddq, y)
        except Exception as exc:               # noqa: BLE001  (the reference failed: nothing to compare with)
            warnings.warn(f"rbd_estimator: the structured solver could not be checked against the generic one, "
                          f"whose estimate failed ({type(exc).__name__}: {exc})", RuntimeWarning, stacklevel=4)
            return
        results = [(solver.estimate(q, dq, ddq, y), out.copy())]
        results.append((solver.estimate(list(q), dq, ddq, list(y)), out.copy()))
        scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
        for status, got in results:
            err = float(np.max(np.abs(got - ref))) if got.size else 0.0
            if status != 0 or not np.isfinite(err) or err > 1e-8 * scale:
                raise _NotApplicable(f"self-check: structured and generic solutions differ by {err:.3g} "
                                     f"(scale {scale:.3g}, status {status})")


def _row_blocks(clo: np.ndarray, chi: np.ndarray, MSC: int) -> np.ndarray:
    """The sensor rows as blocks of up to three consecutive rows with the same column ranges
    (``clo``/``chi``: two ranges per row), ``(n_blocks, 3)``; a block of fewer rows is padded with
    ``MSC``, the zero row after the last (:func:`.solve._three_rows` takes a block at a time)."""
    def same(r: int, q: int) -> bool:
        return bool((clo[2 * r:2 * r + 2] == clo[2 * q:2 * q + 2]).all()
                    and (chi[2 * r:2 * r + 2] == chi[2 * q:2 * q + 2]).all())

    out, r = [], 0
    while r < MSC:
        n = 1
        while n < 3 and r + n < MSC and same(r, r + n):
            n += 1
        out.append([r + k if k < n else MSC for k in range(3)])
        r += n
    return np.array(out, np.int64).reshape(-1, 3)
