"""The cluster tree packed for compiled code, and the loop closure compiled (Chignoli et al. §II-C).

:class:`PackedClusterTree` flattens a :class:`~.clusters.ClusterTree` once (the pinocchio ``Model``
counterpart) into an integer blob ``ip``, a float blob ``fp`` and a work array ``w``; header slot
``ip[H_x]`` (the header :data:`CLUSTER`) holds a size, or the offset of array ``x`` in ``ip``, ``fp``
or ``w``. The kernels here are the compiled counterparts of :mod:`.loop_closure` (same equations,
same numbers):

* :func:`joint_transform`: ``ⁱX_λ(i) = X_J(q_i) X_T(i)`` (Featherstone ch. 4);
* :func:`cluster_position`: ``q_k = γ_k(y_k)`` (Alg. 1, line 3) — transmissions
  ``q_dep = R q_ind + offset``; a four-bar closed by continuation and Gauss–Newton on its closure
  ``φ(q) = 0`` from a reference assembly, as :func:`.loop_closure._close`;
* :func:`cluster_constraint`: ``G_k``, ``g_k`` of eq. (6) composed loop by loop
  (``G_k[dep] = G_l G_k[ind]``, ``g_k[dep] = G_l g_k[ind] + g_l``); a four-bar's
  ``G_l = −K_d⁺ K_i``, ``g_l = K_d⁺ k`` (eqs. 2–4), as :func:`.loop_closure._four_bar_explicit`.

User-written :class:`~.loops.ExplicitLoop` callables are Python: a tree with one is not packed
(:func:`packable` says so). Matrices in the blobs are row-major; spatial vectors follow
Featherstone (motion ``[ω; v]``); units rad, m, s.
"""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit
from ..kernels.layout import Layout, Packer
from .clusters import ClusterTree
from .loops import ExplicitLoop
from .joints import motion_subspace
from .robot_model import FREE, PRISMATIC, REVOLUTE
from .spatial_kernels import plux_into

__all__ = ["PackedClusterTree", "packable", "joint_transform", "cluster_position", "cluster_constraint",
           "CLOSED", "CLOSURE_FAILED", "SINGULAR", "NOT_FINITE"]

#: kernel status: the loops closed; a four-bar out of reach; a four-bar at a singular configuration;
#: a non-finite input
CLOSED, CLOSURE_FAILED, SINGULAR, NOT_FINITE = 0, 1, 2, 3
_CONSTANT, _FOUR_BAR = 0, 1                   # loop kinds in the blob

CLUSTER = Layout(
    "NB NC NL NQ NV NY NVY NBMAX WORK "
    # bodies: parent, joint type, q and v index, dofs, parent's position in the cluster (-1: outside)
    "PAR JT QI VI ND PM "
    # clusters: bodies, parent, slot, q̇_k entries, independent coordinates, loops, work offsets
    "CNB CB0 CB CPAR CSLOT CNV CV0 CV CBV CNY CI0 CIND CYV CNL CL0 CL CW "
    # loops: kind, joints (spanning q and v), independent / dependent (positions in the joints and in
    # q̇_k), offset of R and offset (or the four-bar geometry) in RB, of the four-bar path in FBP
    "LT LNJ LJ0 LQ LVX LNI LI0 LIX LIP LND LD0 LDX LDP LR LFB FBP "
    # y: spanning q and v index of every entry
    "YQ YV "
    # floats: joint axes, tree transforms, inertias, motion subspace columns, reference q, a_0, loops
    "AX ET RT IN SC QREF A0 RB "
    # work: Xup, Xout (per body), q, q̇, four-bar scratch, temporaries
    "WXUP WXOUT WQ WDQ WFB WT")
(H_NB, H_NC, H_NL, H_NQ, H_NV, H_NY, H_NVY, H_NBMAX, H_WORK,
 H_PAR, H_JT, H_QI, H_VI, H_ND, H_PM,
 H_CNB, H_CB0, H_CB, H_CPAR, H_CSLOT, H_CNV, H_CV0, H_CV, H_CBV, H_CNY, H_CI0, H_CIND, H_CYV, H_CNL, H_CL0, H_CL,
 H_CW,
 H_LT, H_LNJ, H_LJ0, H_LQ, H_LVX, H_LNI, H_LI0, H_LIX, H_LIP, H_LND, H_LD0, H_LDX, H_LDP, H_LR, H_LFB, H_FBP,
 H_YQ, H_YV,
 H_AX, H_ET, H_RT, H_IN, H_SC, H_QREF, H_A0, H_RB,
 H_WXUP, H_WXOUT, H_WQ, H_WDQ, H_WFB, H_WT) = CLUSTER.slots
CLUSTER.check(globals(), "H_")
_SIZES = ("NB", "NC", "NL", "NQ", "NV", "NY", "NVY", "NBMAX")
_FLOATS = ("AX", "ET", "RT", "IN", "SC", "QREF", "A0", "RB")
_WORK = ("WXUP", "WXOUT", "WQ", "WDQ", "WFB", "WT")

#: per-cluster work items (offsets ``ip[ip[H_CW] + NW k + item]``): SJ = 𝒥X diag(S_i) (6n_b × n_f),
#: G_k (n_f × n_y), g_k (n_f), S_k (6n_b × n_y), U_k (6n_b × n_y), D_k⁻¹ (n_y²), u_k (n_y), the diagonal
#: blocks of I_kᴬ (block diagonal, §IV-B: 36 n_b),
#: and the stacked vectors v_k, Ṡ_k ẏ_k, p_k (bias force pᴬ_k, or f_kᴶ), a_k (6n_b each)
CLUSTER_WORK = Layout("SJ G g S U DINV u IA v Sdy p a")
W_SJ, W_G, W_g, W_S, W_U, W_DINV, W_u, W_IA, W_v, W_Sdy, W_p, W_a = CLUSTER_WORK.slots
CLUSTER_WORK.check(globals(), "W_")
NW = CLUSTER_WORK.size
_FB_SCRATCH = 512


def packable(tree: ClusterTree) -> str | None:
    """``None`` when every loop of ``tree`` has a compiled form, else the name of the first that has
    not (an :class:`ExplicitLoop`: its ``G``, ``g``, ``γ`` are the user's Python callables)."""
    for r in tree.loops:
        if isinstance(r.decl, ExplicitLoop):
            return r.name
    return None


class PackedClusterTree:
    """The constant data of a cluster tree in ``ip``/``fp`` and its work array ``w`` (see the module
    docstring). Raises ``ValueError`` naming the loop for a tree :func:`packable` refuses."""

    def __init__(self, tree: ClusterTree):
        bad = packable(tree)
        if bad is not None:
            raise ValueError(f"loop '{bad}' is an ExplicitLoop (Python callables): it has no compiled form; "
                             f"use the reference algorithms (rbd_estimator.dynamics.ce_aba module)")
        self.tree = tree
        m = tree.model
        cs = tree.clusters
        pm = np.full(m.NB, -1, dtype=np.int64)
        for c in cs:
            for i in c.bodies:
                p = int(m.parents[i])
                pm[i] = c.bodies.index(p) if p in c.bodies else -1
        loop_index = {id(r): n for n, r in enumerate(tree.loops)}
        a = dict(NB=m.NB, NC=tree.NC, NL=len(tree.loops), NQ=m.nq, NV=m.nv, NY=tree.ny, NVY=tree.nvy,
                 NBMAX=max(c.nb for c in cs),
                 PAR=m.parents, JT=m.joint_types, QI=m.q_idx, VI=m.v_idx, ND=m.joint_dofs, PM=pm,
                 CNB=[c.nb for c in cs], CB0=_starts([c.nb for c in cs]), CB=[i for c in cs for i in c.bodies],
                 CPAR=[c.parent for c in cs], CSLOT=[c.parent_slot for c in cs],
                 CNV=[c.nv for c in cs], CV0=_starts([c.nv for c in cs]), CV=[v for c in cs for v in c.v_idx],
                 CBV=[s.start for c in cs for s in c.body_v],
                 CNY=[c.ny for c in cs], CI0=_starts([c.ny for c in cs]), CIND=[p for c in cs for p in c.indep],
                 CYV=[p for c in cs for p in c.y_v],
                 CNL=[len(c.loops) for c in cs], CL0=_starts([len(c.loops) for c in cs]),
                 CL=[loop_index[id(r)] for c in cs for r in c.loops],
                 YQ=tree.y_q_idx, YV=tree.y_v_idx)
        wk, cw = Packer(np.float64), []                             # work of every cluster (W_* items) first
        for c in cs:
            n6 = 6 * c.nb
            cw += [wk.reserve(size) for size in (n6 * c.nv, c.nv * c.ny, c.nv, n6 * c.ny, n6 * c.ny, c.ny * c.ny,
                                                 c.ny, 36 * c.nb, n6, n6, n6, n6)]
        a["CW"] = cw
        a.update(_pack_loops(tree))
        Sc = np.zeros((m.nv, 6))                                    # S_i column of every spanning dof
        for i in range(m.NB):
            n = int(m.joint_dofs[i])
            if n:
                Sc[m.v_idx[i]:m.v_idx[i] + n] = motion_subspace(m, i).T
        a.update(AX=m.axes, ET=m.E_tree, RT=m.r_tree, IN=m.inertias, SC=Sc, QREF=tree.q_reference,
                 A0=np.concatenate([np.zeros(3), -m.gravity]))
        nymax = max(c.ny for c in cs)
        work = dict(WXUP=36 * m.NB, WXOUT=36 * m.NB, WQ=m.nq, WDQ=m.nv, WFB=_FB_SCRATCH,
                    WT=T_MAT + 3 * (6 * a["NBMAX"]) ** 2 + 48 * a["NBMAX"] + 4 * nymax * nymax + 4 * nymax + 64)
        ipk, fpk = Packer(np.int64, header=CLUSTER), Packer(np.float64)
        header = {}
        for name in CLUSTER.names:
            if name in _SIZES:
                header[name] = a[name]
            elif name in _FLOATS:
                header[name] = fpk.add(a[name])
            elif name in _WORK:
                header[name] = wk.reserve(work[name])
            elif name != "WORK":
                header[name] = ipk.add(a[name])
        header["WORK"] = wk.n
        self.ip, self.fp, self.w = ipk.array(header), fpk.array(), wk.array()
        self.w[header["WFB"] + F_KEY] = -1.0                        # the four-bar scratch holds no state


def _starts(sizes) -> np.ndarray:
    """Offsets of consecutive blocks of the given sizes."""
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) else np.zeros(0, np.int64)


def _pack_loops(tree: ClusterTree) -> dict:
    """The loops' integer tables and their float blob ``RB``: ``R`` (row-major) and ``offset`` of a
    transmission; ``p_a, p_b, n_a, n_b`` of a four-bar, whose path ``FBP`` holds the root, then per
    path body (ascending) the body, its joint's position in the loop and its parent's position in
    the path (-1: the root), then the coupler's and the output link's positions in the path."""
    m = tree.model
    L = {k: [] for k in ("LT", "LNJ", "LJ0", "LQ", "LVX", "LNI", "LI0", "LIX", "LIP", "LND", "LD0", "LDX", "LDP",
                         "LR", "LFB", "FBP", "RB")}
    for r in tree.loops:
        L["LNJ"].append(len(r.bodies))
        L["LJ0"].append(len(L["LQ"]))
        L["LQ"] += list(r.q)
        L["LVX"] += list(r.v)
        L["LNI"].append(len(r.ind))
        L["LI0"].append(len(L["LIX"]))
        L["LIX"] += list(r.ind)
        L["LIP"] += list(r.ind_pos)
        L["LND"].append(len(r.dep))
        L["LD0"].append(len(L["LDX"]))
        L["LDX"] += list(r.dep)
        L["LDP"] += list(r.dep_pos)
        L["LR"].append(len(L["RB"]))
        if r.closure is not None:
            cl = r.closure
            assert len(r.ind) == 1 and len(r.dep) == 2
            path = sorted(cl["path"])
            L["LT"].append(_FOUR_BAR)
            L["LFB"].append(len(L["FBP"]))
            L["FBP"].append(cl["root"])
            for i in path:
                p = int(m.parents[i])
                L["FBP"] += [i, r.bodies.index(i), path.index(p) if p in path else -1]
            L["FBP"] += [path.index(cl["a"]), path.index(cl["b"])]
            L["RB"] += list(np.concatenate([cl["pa"], cl["pb"], cl["na"], cl["nb"]]))
        else:
            L["LT"].append(_CONSTANT)
            L["LFB"].append(-1)
            offset = getattr(r.decl, "offset", None)
            L["RB"] += list(np.asarray(r.R, dtype=float).ravel())
            L["RB"] += list(np.zeros(len(r.dep)) if offset is None else np.asarray(offset, dtype=float).ravel())
    return L


# ---------------------------------------------------------------------------- spatial helpers
# Offsets inside the temporaries WT: joint transform factors, then small and stacked matrices.
TEMP = Layout([("EJ", 9), ("RJ", 3), ("E", 9), ("R", 3), ("SMALL", 48), ("MAT", 0)])      # MAT: the rest
T_EJ, T_RJ, T_E, T_R, T_SMALL, T_MAT = TEMP.slots


@fast_njit
def mul66(A, ao, B, bo, C, co):
    """``C = A B`` for row-major 6 × 6 blocks (C must not overlap A or B)."""
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += A[ao + 6 * r + k] * B[bo + 6 * k + c]
            C[co + 6 * r + c] = s


@fast_njit
def mv6(A, ao, x, xo, y, yo, accumulate, transpose=False):
    """``y (+)= A x`` (or ``Aᵀ x``) for a row-major 6 × 6 block (``Aᵀ`` of a motion transform: the
    force transform ``ˡX*_k = (ᵏX_ℓ)ᵀ``)."""
    rs, cs = (1, 6) if transpose else (6, 1)
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += A[ao + rs * r + cs * k] * x[xo + k]
        y[yo + r] = y[yo + r] + s if accumulate else s


@fast_njit
def mtv6(A, ao, x, xo, y, yo, accumulate):
    """``y (+)= Aᵀ x`` (:func:`mv6` transposed)."""
    mv6(A, ao, x, xo, y, yo, accumulate, True)


@fast_njit
def crm_apply(v, vo, u, uo, y, yo, accumulate):
    """``y (+)= v × u`` (motion cross product, Featherstone eq. 2.31)."""
    w0, w1, w2, l0, l1, l2 = v[vo], v[vo + 1], v[vo + 2], v[vo + 3], v[vo + 4], v[vo + 5]
    a0, a1, a2, b0, b1, b2 = u[uo], u[uo + 1], u[uo + 2], u[uo + 3], u[uo + 4], u[uo + 5]
    r = (w1 * a2 - w2 * a1, w2 * a0 - w0 * a2, w0 * a1 - w1 * a0,
         w1 * b2 - w2 * b1 + l1 * a2 - l2 * a1, w2 * b0 - w0 * b2 + l2 * a0 - l0 * a2,
         w0 * b1 - w1 * b0 + l0 * a1 - l1 * a0)
    for k in range(6):
        y[yo + k] = y[yo + k] + r[k] if accumulate else r[k]


@fast_njit
def joint_transform(ip, fp, w, q, i, X, xo):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i)`` (Nori eqs. 2–3a; :func:`.joints.joint_transform`) into
    ``X[xo:xo+36]``: with ``X_J = plux(E_J, r_J)`` and ``X_T = plux(E_T, r_T)``, the product is
    ``plux(E_J E_T, r_T + E_Tᵀ r_J)``."""
    t, qi = ip[ip[H_JT] + i], ip[ip[H_QI] + i]
    t0 = ip[H_WT]
    ej, rj, e, r = t0 + T_EJ, t0 + T_RJ, t0 + T_E, t0 + T_R
    for k in range(9):
        w[ej + k] = 1.0 if k % 4 == 0 else 0.0
    for k in range(3):
        w[rj + k] = 0.0
    if t == REVOLUTE:                                               # E_J = R(a, q)ᵀ = 1 − sin q a× + (1 − cos q) a×a×
        ao = ip[H_AX] + 3 * i
        a0, a1, a2 = fp[ao], fp[ao + 1], fp[ao + 2]
        s, c1 = np.sin(q[qi]), 1.0 - np.cos(q[qi])
        n2 = a0 * a0 + a1 * a1 + a2 * a2
        K = (0.0, -a2, a1, a2, 0.0, -a0, -a1, a0, 0.0)
        A = (a0, a1, a2)
        for r_ in range(3):
            for c_ in range(3):
                kk = A[r_] * A[c_] - (n2 if r_ == c_ else 0.0)     # (a×)² = a aᵀ − |a|² 1
                w[ej + 3 * r_ + c_] += -s * K[3 * r_ + c_] + c1 * kk
    elif t == PRISMATIC:
        ao = ip[H_AX] + 3 * i
        for k in range(3):
            w[rj + k] = fp[ao + k] * q[qi]
    elif t == FREE:                                                 # E_J = R(quat)ᵀ, r_J = p
        x, y, z, qw = q[qi + 3], q[qi + 4], q[qi + 5], q[qi + 6]
        n = np.sqrt(x * x + y * y + z * z + qw * qw)
        x, y, z, qw = x / n, y / n, z / n, qw / n
        R = (1 - 2 * (y * y + z * z), 2 * (x * y - z * qw), 2 * (x * z + y * qw),
             2 * (x * y + z * qw), 1 - 2 * (x * x + z * z), 2 * (y * z - x * qw),
             2 * (x * z - y * qw), 2 * (y * z + x * qw), 1 - 2 * (x * x + y * y))
        for r_ in range(3):
            for c_ in range(3):
                w[ej + 3 * r_ + c_] = R[3 * c_ + r_]
            w[rj + r_] = q[qi + r_]
    eo, ro = ip[H_ET] + 9 * i, ip[H_RT] + 3 * i
    for r_ in range(3):
        for c_ in range(3):
            w[e + 3 * r_ + c_] = (w[ej + 3 * r_] * fp[eo + c_] + w[ej + 3 * r_ + 1] * fp[eo + 3 + c_]
                                  + w[ej + 3 * r_ + 2] * fp[eo + 6 + c_])
        w[r + r_] = fp[ro + r_] + fp[eo + r_] * w[rj] + fp[eo + 3 + r_] * w[rj + 1] + fp[eo + 6 + r_] * w[rj + 2]
    plux_into(w, e, w, r, X, xo)


# ---------------------------------------------------------------------------- four-bar closure
# Four-bar scratch (WFB): per path body s (ascending) Xup_s, X_s = ˢX_root, J_s (6 × 3); then
# φ, n_a, n_b, the point Jacobians J_a, J_b (6 × 3, [ω; v_point], root coordinates), v_s, a_s, …
F_BODY = Layout([("XUP", 36), ("X", 36), ("J", 18)]).size          # per path body (3 at most)
FOUR_BAR = Layout([("BODY", 3 * F_BODY), ("PHI", 6), ("NA", 3), ("NB", 3), ("JA", 18), ("JB", 18), ("VA", 42),
                   ("LS", 60), ("GL", 4), ("gl", 4), ("T", 22), ("SMALL_P", 30), ("KEY", 4)])
_, F_PHI, F_NA, F_NB, F_JA, F_JB, F_VA, F_LS, F_GL, F_gl, F_T, F_SMALL_P, F_KEY = FOUR_BAR.slots
assert FOUR_BAR.size <= _FB_SCRATCH


@fast_njit
def _point_motion(w, xo, p0, p1, p2, u, uo, y, yo):
    """``y = Φ u = [Eᵀ ω; Eᵀ (v − p × ω)]``: body motion ``u`` as the motion of the body point ``p``,
    in root orientation (``E`` = top-left block of ``X = ᵇX_root`` at ``xo``)."""
    o0, o1, o2 = u[uo], u[uo + 1], u[uo + 2]
    l0 = u[uo + 3] - (p1 * o2 - p2 * o1)
    l1 = u[uo + 4] - (p2 * o0 - p0 * o2)
    l2 = u[uo + 5] - (p0 * o1 - p1 * o0)
    for k in range(3):
        e0, e1, e2 = w[xo + k], w[xo + 6 + k], w[xo + 12 + k]      # column k of E = row k of Eᵀ
        y[yo + k] = e0 * o0 + e1 * o1 + e2 * o2
        y[yo + 3 + k] = e0 * l0 + e1 * l1 + e2 * l2


@fast_njit
def _point_position(w, xo, p0, p1, p2, y, yo):
    """Position of the body point ``p`` in root coordinates: ``r + Eᵀ p`` with ``r×`` from
    ``X₂₁ = −E r×`` (plux), ``X = ᵇX_root`` at ``xo``."""
    for k in range(3):
        s = 0.0
        for j in range(3):
            s += w[xo + 6 * j + k] * (p0, p1, p2)[j]
        y[yo + k] = s
    # r×  = −Eᵀ X₂₁: r = (s21, s02, s10)
    s21 = s02 = s10 = 0.0
    for j in range(3):
        s21 -= w[xo + 6 * j + 2] * w[xo + 18 + 6 * j + 1]
        s02 -= w[xo + 6 * j + 0] * w[xo + 18 + 6 * j + 2]
        s10 -= w[xo + 6 * j + 1] * w[xo + 18 + 6 * j + 0]
    y[yo] += s21
    y[yo + 1] += s02
    y[yo + 2] += s10


@fast_njit
def _four_bar_closure(ip, fp, w, l, q):
    """``φ(q)`` of four-bar ``l`` and its kinematics (:func:`.loop_closure._closure`): transforms and
    Jacobians of the path bodies (root fixed), ``φ = [p_a − p_b; n_a × n_b]``, ``n_a``, ``n_b`` and
    the point Jacobians ``J_a = Φ_a J_coupler``, ``J_b = Φ_b J_output``. They depend on the three
    path angles only: the scratch remembers the loop and angles it holds and is not recomputed
    for the same ones (the closure's last Newton state, then ``G_l`` at the same ``q``)."""
    f, fb, rb = ip[H_WFB], ip[H_FBP] + ip[ip[H_LFB] + l], ip[H_RB] + ip[ip[H_LR] + l]
    qi = ip[H_QI]
    q0, q1, q2 = q[ip[qi + ip[fb + 1]]], q[ip[qi + ip[fb + 4]]], q[ip[qi + ip[fb + 7]]]
    if w[f + F_KEY] == l and w[f + F_KEY + 1] == q0 and w[f + F_KEY + 2] == q1 and w[f + F_KEY + 3] == q2:
        return                                                      # the scratch holds this state already
    w[f + F_KEY], w[f + F_KEY + 1], w[f + F_KEY + 2], w[f + F_KEY + 3] = l, q0, q1, q2
    for s in range(3):
        i, col, ps = ip[fb + 1 + 3 * s], ip[fb + 2 + 3 * s], ip[fb + 3 + 3 * s]
        o = f + F_BODY * s
        joint_transform(ip, fp, w, q, i, w, o)                      # Xup_s
        if ps < 0:
            for k in range(36):
                w[o + 36 + k] = w[o + k]                            # X_s = Xup_s (root: identity)
            for k in range(18):
                w[o + 72 + k] = 0.0
        else:
            op = f + F_BODY * ps
            mul66(w, o, w, op + 36, w, o + 36)                      # X_s = Xup_s X_λ
            for c in range(3):                                      # J_s = Xup_s J_λ
                for r in range(6):
                    acc = 0.0
                    for k in range(6):
                        acc += w[o + 6 * r + k] * w[op + 72 + 3 * k + c]
                    w[o + 72 + 3 * r + c] = acc
        sc = ip[H_SC] + 6 * ip[ip[H_VI] + i]
        for r in range(6):
            w[o + 72 + 3 * r + col] += fp[sc + r]                  # + S_i in the column of joint i
    sa, sb = ip[fb + 10], ip[fb + 11]
    oa, ob = f + F_BODY * sa, f + F_BODY * sb
    pa0, pa1, pa2, pb0, pb1, pb2 = fp[rb], fp[rb + 1], fp[rb + 2], fp[rb + 3], fp[rb + 4], fp[rb + 5]
    _point_position(w, oa + 36, pa0, pa1, pa2, w, f + F_PHI)
    _point_position(w, ob + 36, pb0, pb1, pb2, w, f + F_SMALL_P)
    for k in range(3):
        w[f + F_PHI + k] -= w[f + F_SMALL_P + k]
        sa_ = 0.0
        sb_ = 0.0
        for j in range(3):                                          # n = Eᵀ n_body
            sa_ += w[oa + 36 + 6 * j + k] * fp[rb + 6 + j]
            sb_ += w[ob + 36 + 6 * j + k] * fp[rb + 9 + j]
        w[f + F_NA + k], w[f + F_NB + k] = sa_, sb_
    na0, na1, na2, nb0, nb1, nb2 = (w[f + F_NA], w[f + F_NA + 1], w[f + F_NA + 2],
                                    w[f + F_NB], w[f + F_NB + 1], w[f + F_NB + 2])
    w[f + F_PHI + 3] = na1 * nb2 - na2 * nb1
    w[f + F_PHI + 4] = na2 * nb0 - na0 * nb2
    w[f + F_PHI + 5] = na0 * nb1 - na1 * nb0
    for c in range(3):                                              # J_a, J_b column by column
        for r in range(6):
            w[f + F_SMALL_P + r] = w[oa + 72 + 3 * r + c]
            w[f + F_SMALL_P + 6 + r] = w[ob + 72 + 3 * r + c]
        _point_motion(w, oa + 36, pa0, pa1, pa2, w, f + F_SMALL_P, w, f + F_SMALL_P + 12)
        _point_motion(w, ob + 36, pb0, pb1, pb2, w, f + F_SMALL_P + 6, w, f + F_SMALL_P + 18)
        for r in range(6):
            w[f + F_JA + 3 * r + c] = w[f + F_SMALL_P + 12 + r]
            w[f + F_JB + 3 * r + c] = w[f + F_SMALL_P + 18 + r]


@fast_njit
def _ls2(w, ao, bo, m, xo):
    """Least squares ``min |A x − b|`` for ``A`` with two columns (``m`` rows each, column-major at
    ``ao``) by Gram–Schmidt QR; writes ``x`` (2) at ``xo`` and returns ``σ_min/σ_max`` of ``A``."""
    r11 = 0.0
    for k in range(m):
        r11 += w[ao + k] * w[ao + k]
    r11 = np.sqrt(r11)
    if r11 == 0.0:
        w[xo] = w[xo + 1] = 0.0
        return 0.0
    r12 = 0.0
    for k in range(m):
        r12 += w[ao + k] / r11 * w[ao + m + k]
    r22 = 0.0
    for k in range(m):
        d = w[ao + m + k] - r12 * w[ao + k] / r11
        r22 += d * d
    r22 = np.sqrt(r22)
    s = r11 * r11 + r12 * r12 + r22 * r22                          # σ₁² + σ₂², σ₁σ₂ = r11 r22
    p = r11 * r22
    s1 = np.sqrt(0.5 * (s + np.sqrt(max(s * s - 4.0 * p * p, 0.0))))
    ratio = p / s1 / s1 if s1 > 0.0 else 0.0
    if r22 == 0.0:
        w[xo] = w[xo + 1] = 0.0
        return 0.0
    qb1 = qb2 = 0.0                                                 # Qᵀ b
    for k in range(m):
        q1 = w[ao + k] / r11
        q2 = (w[ao + m + k] - r12 * q1) / r22
        qb1 += q1 * w[bo + k]
        qb2 += q2 * w[bo + k]
    x2 = qb2 / r22
    w[xo + 1] = x2
    w[xo] = (qb1 - r12 * x2) / r11
    return ratio


@fast_njit
def _closure_jacobian_columns(w, f, jd0, jd1, out):
    """Columns ``jd0``, ``jd1`` of ``∂φ/∂q`` (:func:`.loop_closure._closure_jacobian`) into
    ``w[out:out+12]`` (column-major): point velocities, and
    ``d(n_a × n_b) = (ω_a × n_a) × n_b + n_a × (ω_b × n_b)``."""
    na0, na1, na2 = w[f + F_NA], w[f + F_NA + 1], w[f + F_NA + 2]
    nb0, nb1, nb2 = w[f + F_NB], w[f + F_NB + 1], w[f + F_NB + 2]
    for n in range(2):
        j = jd0 if n == 0 else jd1
        o = out + 6 * n
        for r in range(3):
            w[o + r] = w[f + F_JA + 3 * (3 + r) + j] - w[f + F_JB + 3 * (3 + r) + j]
        a0, a1, a2 = w[f + F_JA + j], w[f + F_JA + 3 + j], w[f + F_JA + 6 + j]
        b0, b1, b2 = w[f + F_JB + j], w[f + F_JB + 3 + j], w[f + F_JB + 6 + j]
        c0, c1, c2 = a1 * na2 - a2 * na1, a2 * na0 - a0 * na2, a0 * na1 - a1 * na0     # ω_a × n_a
        d0, d1, d2 = b1 * nb2 - b2 * nb1, b2 * nb0 - b0 * nb2, b0 * nb1 - b1 * nb0     # ω_b × n_b
        w[o + 3] = c1 * nb2 - c2 * nb1 + na1 * d2 - na2 * d1
        w[o + 4] = c2 * nb0 - c0 * nb2 + na2 * d0 - na0 * d2
        w[o + 5] = c0 * nb1 - c1 * nb0 + na0 * d1 - na1 * d0


@fast_njit
def _max_abs(w, o, n):
    m = 0.0
    for k in range(n):
        m = max(m, abs(w[o + k]))
    return m


@fast_njit
def _close_four_bar(ip, fp, w, l, q, qref, max_iter, max_step):
    """Dependent angles of four-bar ``l`` at the independent one in ``q``, on the assembly branch of
    ``qref`` (:func:`.loop_closure._close`): continuation from ``qref`` in steps of at most
    ``max_step`` of the independent coordinate, each finished by Gauss–Newton on ``φ = 0`` (steps
    of the dependent angles limited to 0.5 rad). Returns :data:`CLOSED` or :data:`CLOSURE_FAILED`."""
    f, j0 = ip[H_WFB], ip[ip[H_LJ0] + l]
    ji, jd0, jd1 = ip[ip[H_LIX] + ip[ip[H_LI0] + l]], ip[ip[H_LDX] + ip[ip[H_LD0] + l]], \
        ip[ip[H_LDX] + ip[ip[H_LD0] + l] + 1]
    qi, qd0, qd1 = ip[ip[H_LQ] + j0 + ji], ip[ip[H_LQ] + j0 + jd0], ip[ip[H_LQ] + j0 + jd1]
    target, start = q[qi], qref[qi]
    q[qd0], q[qd1] = qref[qd0], qref[qd1]
    n = max(1, int(np.ceil(abs(target - start) / max_step)))
    for s in range(1, n + 1):
        q[qi] = start + (target - start) * (s / n)
        for _ in range(max_iter):
            _four_bar_closure(ip, fp, w, l, q)
            if _max_abs(w, f + F_PHI, 6) < 1e-15:
                break
            _closure_jacobian_columns(w, f, jd0, jd1, f + F_LS)
            for k in range(6):
                w[f + F_LS + 12 + k] = -w[f + F_PHI + k]
            _ls2(w, f + F_LS, f + F_LS + 12, 6, f + F_LS + 18)
            big = max(abs(w[f + F_LS + 18]), abs(w[f + F_LS + 19]))
            scale = min(1.0, 0.5 / max(big, 1e-300))
            q[qd0] += w[f + F_LS + 18] * scale
            q[qd1] += w[f + F_LS + 19] * scale
            if big * scale < 1e-15:
                break
    q[qi] = target
    _four_bar_closure(ip, fp, w, l, q)
    return CLOSED if _max_abs(w, f + F_PHI, 6) < 1e-10 else CLOSURE_FAILED


@fast_njit
def _four_bar_explicit(ip, fp, w, l, q, dq, with_dq):
    """``G_l = −K_d⁺ K_i`` and ``g_l = K_d⁺ k`` (eqs. 2–4; :func:`.loop_closure._four_bar_explicit`)
    into ``w[WFB + F_GL]`` and ``w[WFB + F_gl]`` (2 each); with ``dq``, its dependent entries are
    overwritten with ``G_l q̇_ind``. ``K``: the closure points' relative velocity (3 rows) and the
    relative angular velocity across ``t₁, t₂ ⊥ n_a`` (2 rows). Returns :data:`SINGULAR` when
    ``σ_min(K_d) < 10⁻⁸ σ_max(K_d)``."""
    f, j0, fb = ip[H_WFB], ip[ip[H_LJ0] + l], ip[H_FBP] + ip[ip[H_LFB] + l]
    ji, jd0, jd1 = ip[ip[H_LIX] + ip[ip[H_LI0] + l]], ip[ip[H_LDX] + ip[ip[H_LD0] + l]], \
        ip[ip[H_LDX] + ip[ip[H_LD0] + l] + 1]
    _four_bar_closure(ip, fp, w, l, q)
    n0, n1, n2 = w[f + F_NA], w[f + F_NA + 1], w[f + F_NA + 2]
    a = 0                                                           # t₁ = n × e_argmin|n|, t₂ = n × t₁
    if abs(n1) < abs(n0):
        a = 1
    if abs(n2) < abs((n0, n1)[a]):
        a = 2
    e0, e1, e2 = (1.0 if a == 0 else 0.0), (1.0 if a == 1 else 0.0), (1.0 if a == 2 else 0.0)
    t0, t1_, t2 = n1 * e2 - n2 * e1, n2 * e0 - n0 * e2, n0 * e1 - n1 * e0
    nt = np.sqrt(t0 * t0 + t1_ * t1_ + t2 * t2)
    t0, t1_, t2 = t0 / nt, t1_ / nt, t2 / nt
    u0, u1, u2 = n1 * t2 - n2 * t1_, n2 * t0 - n0 * t2, n0 * t1_ - n1 * t0
    T = w[f + F_T:f + F_T + 6]
    T[0], T[1], T[2], T[3], T[4], T[5] = t0, t1_, t2, u0, u1, u2
    ls = f + F_LS                                                   # K_d (column-major 5 × 2), K_i, k
    for n in range(3):
        j = jd0 if n == 0 else (jd1 if n == 1 else ji)
        o = ls + 5 * n
        for r in range(3):
            w[o + r] = w[f + F_JA + 3 * (3 + r) + j] - w[f + F_JB + 3 * (3 + r) + j]
        for r in range(2):
            s = 0.0
            for c in range(3):
                s += T[3 * r + c] * (w[f + F_JA + 3 * c + j] - w[f + F_JB + 3 * c + j])
            w[o + 3 + r] = s
    ratio = _ls2(w, ls, ls + 10, 5, f + F_GL)                      # K_d x = K_i
    if not ratio >= 1e-8:
        return SINGULAR
    w[f + F_GL] = -w[f + F_GL]
    w[f + F_GL + 1] = -w[f + F_GL + 1]
    if not with_dq:
        return CLOSED
    lv = ip[H_LVX]
    dq[ip[lv + j0 + jd0]] = w[f + F_GL] * dq[ip[lv + j0 + ji]]
    dq[ip[lv + j0 + jd1]] = w[f + F_GL + 1] * dq[ip[lv + j0 + ji]]
    for s in range(3):                                              # v_s, a_s (q̈ = 0), root fixed
        i, ps = ip[fb + 1 + 3 * s], ip[fb + 3 + 3 * s]
        o, vs = f + F_BODY * s, f + F_VA + 12 * s
        sc, qd = ip[H_SC] + 6 * ip[ip[H_VI] + i], dq[ip[ip[H_VI] + i]]
        if ps < 0:
            for k in range(12):
                w[vs + k] = 0.0
        else:
            mv6(w, o, w, f + F_VA + 12 * ps, w, vs, False)
            mv6(w, o, w, f + F_VA + 12 * ps + 6, w, vs + 6, False)
        for k in range(6):
            w[f + F_SMALL_P + k] = fp[sc + k] * qd                  # v_J = S_i q̇_i
            w[vs + k] += w[f + F_SMALL_P + k]
        crm_apply(w, vs, w, f + F_SMALL_P, w, vs + 6, True)         # a_s += v_s × v_J
    rb = ip[H_RB] + ip[ip[H_LR] + l]
    sa, sb = ip[fb + 10], ip[fb + 11]
    P = f + F_SMALL_P                                               # Va, Vb, Aa, Ab (6 each)
    _point_motion(w, f + F_BODY * sa + 36, fp[rb], fp[rb + 1], fp[rb + 2], w, f + F_VA + 12 * sa, w, P)
    _point_motion(w, f + F_BODY * sb + 36, fp[rb + 3], fp[rb + 4], fp[rb + 5], w, f + F_VA + 12 * sb, w, P + 6)
    _point_motion(w, f + F_BODY * sa + 36, fp[rb], fp[rb + 1], fp[rb + 2], w, f + F_VA + 12 * sa + 6, w, P + 12)
    _point_motion(w, f + F_BODY * sb + 36, fp[rb + 3], fp[rb + 4], fp[rb + 5], w, f + F_VA + 12 * sb + 6, w,
                  P + 18)
    wa0, wa1, wa2, wb0, wb1, wb2 = w[P], w[P + 1], w[P + 2], w[P + 6], w[P + 7], w[P + 8]
    va0, va1, va2, vb0, vb1, vb2 = w[P + 3], w[P + 4], w[P + 5], w[P + 9], w[P + 10], w[P + 11]
    kk = ls + 15                                                    # k (5)
    w[kk] = -((w[P + 15] + wa1 * va2 - wa2 * va1) - (w[P + 21] + wb1 * vb2 - wb2 * vb1))
    w[kk + 1] = -((w[P + 16] + wa2 * va0 - wa0 * va2) - (w[P + 22] + wb2 * vb0 - wb0 * vb2))
    w[kk + 2] = -((w[P + 17] + wa0 * va1 - wa1 * va0) - (w[P + 23] + wb0 * vb1 - wb1 * vb0))
    dw0, dw1, dw2 = wa0 - wb0, wa1 - wb1, wa2 - wb2
    for r in range(2):
        x0, x1, x2 = T[3 * r], T[3 * r + 1], T[3 * r + 2]
        c0, c1, c2 = wa1 * x2 - wa2 * x1, wa2 * x0 - wa0 * x2, wa0 * x1 - wa1 * x0     # ω_a × t_r
        w[kk + 3 + r] = -(x0 * (w[P + 12] - w[P + 18]) + x1 * (w[P + 13] - w[P + 19]) + x2 * (w[P + 14] - w[P + 20])
                          + c0 * dw0 + c1 * dw1 + c2 * dw2)
    _ls2(w, ls, kk, 5, f + F_gl)                                    # g_l = K_d⁺ k
    return CLOSED


# ---------------------------------------------------------------------------- one cluster
@fast_njit
def cluster_position(ip, fp, w, k, q, qref):
    """``q_k = γ_k(y_k)`` (Alg. 1, line 3) in place in the spanning ``q``: every loop of cluster k
    in order, four-bars closed on the assembly branch of ``qref``. Returns ``-1`` or the index of
    the loop that failed to close."""
    lq, rb0 = ip[H_LQ], ip[H_RB]
    for n in range(ip[ip[H_CNL] + k]):
        l = ip[ip[H_CL] + ip[ip[H_CL0] + k] + n]
        if ip[ip[H_LT] + l] == _FOUR_BAR:
            if _close_four_bar(ip, fp, w, l, q, qref, 50, 0.2) != CLOSED:
                return l
            continue
        j0, ni, nd = ip[ip[H_LJ0] + l], ip[ip[H_LNI] + l], ip[ip[H_LND] + l]
        ix, dx, rb = ip[H_LIX] + ip[ip[H_LI0] + l], ip[H_LDX] + ip[ip[H_LD0] + l], rb0 + ip[ip[H_LR] + l]
        for a in range(nd):                                         # q_dep = R q_ind + offset
            s = fp[rb + nd * ni + a]
            for b in range(ni):
                s += fp[rb + ni * a + b] * q[ip[lq + j0 + ip[ix + b]]]
            q[ip[lq + j0 + ip[dx + a]]] = s
    return -1


@fast_njit
def cluster_constraint(ip, fp, w, k, q, dq, with_dq, G, go, g, gro):
    """``G_k`` (``n_f × n_y``, row-major at ``G[go]``) and ``g_k`` (``n_f`` at ``g[gro]``) of cluster k
    at ``q`` (eq. 6; Alg. 1, lines 4–6), composed loop by loop. ``with_dq``: the independent
    entries of the spanning ``dq`` are set, its dependent ones are overwritten with ``G_l q̇_ind``
    (Alg. 1, line 5); else ``g_k`` is left zero. Returns ``-1`` or the index of a four-bar at a
    singular configuration."""
    nv, ny = ip[ip[H_CNV] + k], ip[ip[H_CNY] + k]
    ci = ip[H_CIND] + ip[ip[H_CI0] + k]
    for a in range(nv * ny):
        G[go + a] = 0.0
    for a in range(nv):
        g[gro + a] = 0.0
    for j in range(ny):
        G[go + ny * ip[ci + j] + j] = 1.0
    lv, rb0, f = ip[H_LVX], ip[H_RB], ip[H_WFB]
    for n in range(ip[ip[H_CNL] + k]):
        l = ip[ip[H_CL] + ip[ip[H_CL0] + k] + n]
        j0, ni, nd = ip[ip[H_LJ0] + l], ip[ip[H_LNI] + l], ip[ip[H_LND] + l]
        ix, dx = ip[H_LIX] + ip[ip[H_LI0] + l], ip[H_LDX] + ip[ip[H_LD0] + l]
        ip_, dp = ip[H_LIP] + ip[ip[H_LI0] + l], ip[H_LDP] + ip[ip[H_LD0] + l]
        four_bar = ip[ip[H_LT] + l] == _FOUR_BAR
        if four_bar:
            if _four_bar_explicit(ip, fp, w, l, q, dq, with_dq) != CLOSED:
                return l
            Gl, Glo, gl, glo = w, f + F_GL, w, f + F_gl
        else:
            Gl, Glo = fp, rb0 + ip[ip[H_LR] + l]
            gl, glo = fp, Glo                                      # (unused: g_l = 0)
            if with_dq:
                for a in range(nd):                                 # q̇_dep = R q̇_ind
                    s = 0.0
                    for b in range(ni):
                        s += Gl[Glo + ni * a + b] * dq[ip[lv + j0 + ip[ix + b]]]
                    dq[ip[lv + j0 + ip[dx + a]]] = s
        for a in range(nd):                                         # G_k[dep] = G_l G_k[ind], g likewise
            ra = go + ny * ip[dp + a]
            for c in range(ny):
                s = 0.0
                for b in range(ni):
                    s += Gl[Glo + ni * a + b] * G[go + ny * ip[ip_ + b] + c]
                G[ra + c] = s
            s = gl[glo + a] if (four_bar and with_dq) else 0.0
            for b in range(ni):
                s += Gl[Glo + ni * a + b] * g[gro + ip[ip_ + b]]
            g[gro + ip[dp + a]] = s
    return -1
