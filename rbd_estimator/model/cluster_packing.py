"""The cluster tree packed for compiled code (Chignoli et al. §II-C): the blob layouts and
:class:`PackedClusterTree`, which flattens a :class:`~.clusters.ClusterTree` once (the pinocchio
``Model`` counterpart) into an integer blob ``ip``, a float blob ``fp`` and a work array ``w``; header
slot ``ip[H_x]`` (the header :data:`CLUSTER`) holds a size, or the offset of array ``x`` in ``ip``,
``fp`` or ``w``. Also :func:`joint_transform`: ``ⁱX_λ(i) = X_J(q_i) X_T(i)`` (Featherstone ch. 4),
the library's :func:`~rbd_estimator.kernels.joints.joint_transforms` for one body.
Every Plücker transform in the work array is the library's one representation
(:mod:`rbd_estimator.kernels.spatial`): ``plux(E, r)`` (RBDA eq. 2.24) as :data:`XF` = 12 floats,
``E`` (row-major) at ``+X_E`` then ``r`` (m) at ``+X_R``. Other matrices in the blobs are row-major;
spatial vectors follow Featherstone (motion ``[ω; v]``); units rad, m, s. The kernels are
:mod:`.four_bar_kernels` and :mod:`.cluster_kernels`."""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit
from ..kernels.joints import J_SIZE, joint_record, joint_transforms
from ..kernels.layout import Layout, Packer
from .clusters import ClusterTree
from .loops import ExplicitLoop
from .joints import motion_subspace

__all__ = ["PackedClusterTree", "packable", "joint_transform", "CLUSTER", "CLUSTER_WORK", "FOUR_BAR", "XF",
           "CLOSED", "CLOSURE_FAILED", "SINGULAR", "NOT_FINITE"]

#: kernel status: the loops closed; a four-bar out of reach; a four-bar at a singular configuration;
#: a non-finite input
CLOSED, CLOSURE_FAILED, SINGULAR, NOT_FINITE = 0, 1, 2, 3
_CONSTANT, _FOUR_BAR = 0, 1                   # loop kinds in the blob

#: a Plücker transform ``plux(E, r)`` in the work array: ``E`` (9, row-major), then ``r`` (3, m)
TRANSFORM = Layout([("E", 9), ("R", 3)])
X_E, X_R = TRANSFORM.slots
XF = TRANSFORM.size

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
    # floats: joint records (kernels.joints.JOINT), inertias, motion subspace columns, reference q, a_0, loops
    "JNT IN SC QREF A0 RB "
    # work: Xup = ⁱX_λ(i), Xout = ⁱX_Λ (per body, XF floats each), q, q̇, four-bar scratch, temporaries
    "WXUP WXOUT WQ WDQ WFB WT")
(H_NB, H_NC, H_NL, H_NQ, H_NV, H_NY, H_NVY, H_NBMAX, H_WORK,
 H_PAR, H_JT, H_QI, H_VI, H_ND, H_PM,
 H_CNB, H_CB0, H_CB, H_CPAR, H_CSLOT, H_CNV, H_CV0, H_CV, H_CBV, H_CNY, H_CI0, H_CIND, H_CYV, H_CNL, H_CL0, H_CL,
 H_CW,
 H_LT, H_LNJ, H_LJ0, H_LQ, H_LVX, H_LNI, H_LI0, H_LIX, H_LIP, H_LND, H_LD0, H_LDX, H_LDP, H_LR, H_LFB, H_FBP,
 H_YQ, H_YV,
 H_JNT, H_IN, H_SC, H_QREF, H_A0, H_RB,
 H_WXUP, H_WXOUT, H_WQ, H_WDQ, H_WFB, H_WT) = CLUSTER.slots
CLUSTER.check(globals(), "H_")
_SIZES = ("NB", "NC", "NL", "NQ", "NV", "NY", "NVY", "NBMAX")
_FLOATS = ("JNT", "IN", "SC", "QREF", "A0", "RB")
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
        a.update(JNT=[joint_record(m.joint_types[i], m.axes[i], m.E_tree[i], m.r_tree[i]) for i in range(m.NB)],
                 IN=m.inertias, SC=Sc, QREF=tree.q_reference,
                 A0=np.concatenate([np.zeros(3), -m.gravity]))
        nymax = max(c.ny for c in cs)
        work = dict(WXUP=XF * m.NB, WXOUT=XF * m.NB, WQ=m.nq, WDQ=m.nv, WFB=_FB_SCRATCH,
                    WT=3 * (6 * a["NBMAX"]) ** 2 + 48 * a["NBMAX"] + 4 * nymax * nymax + 4 * nymax + 64)
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


# ---------------------------------------------------------------------------- joint transform
@fast_njit
def joint_transform(ip, fp, w, q, i, X, xo):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i) = plux(E, r)`` (Nori eqs. 2–3a; the library's
    :func:`rbd_estimator.kernels.joints.joint_transforms` on body i's joint record) into
    ``X[xo:xo + XF]`` (``E`` at ``xo + X_E``, ``r`` at ``xo + X_R``)."""
    joint_transforms(i, i + 1, ip, ip[H_JT], ip[H_QI], 1, fp, ip[H_JNT], J_SIZE, q, X, xo + X_E, 0, X, xo + X_R, 0,
                     False)


# ---------------------------------------------------------------------------- four-bar closure
# Four-bar scratch (WFB): per path body s (ascending) Xup_s, X_s = ˢX_root (XF each), J_s (6 × 3);
# then φ, n_a, n_b, the point Jacobians J_a, J_b (6 × 3, [ω; v_point], root coordinates), v_s, a_s, …
F_PATH = Layout([("XUP", XF), ("X", XF), ("J", 18)])               # per path body (3 at most)
FS_XUP, FS_X, FS_J = F_PATH.slots
F_BODY = F_PATH.size
FOUR_BAR = Layout([("BODY", 3 * F_BODY), ("PHI", 6), ("NA", 3), ("NB", 3), ("JA", 18), ("JB", 18), ("VA", 42),
                   ("LS", 60), ("GL", 4), ("gl", 4), ("T", 22), ("SMALL_P", 30), ("KEY", 4)])
_, F_PHI, F_NA, F_NB, F_JA, F_JB, F_VA, F_LS, F_GL, F_gl, F_T, F_SMALL_P, F_KEY = FOUR_BAR.slots
assert FOUR_BAR.size <= _FB_SCRATCH
