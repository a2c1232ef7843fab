"""Cluster joint model (Chignoli et al. §III): ``jcalc`` for a cluster of the cluster tree.

For cluster k with bodies ``C_k`` (ascending) and output body ``Λ(k)``, at a state:

* ``ⁱX_λt(i) = X_J(q_i) X_T(i)`` for every body of the cluster (Alg. 1, lines 7–10);
* ``JX = 𝒥ₖX_Jₖ`` (eq. 13): block unit lower triangular, block ``(i, j) = ⁱX_j`` when
  ``j ∈ κ_t(i) ∩ C_k``, so that ``stack(v_i − ⁱv_Λ) = JX stack(v_i − ⁱv_λt(i))`` (eq. 11);
* ``JX* = 𝒥ₖX*_Jₖ`` (eq. 28): identity diagonal, ``−ⁱX*_j`` where ``i = λ_t(j)``; ``JXᵀ = (JX*)⁻¹`` (29);
* ``S_k = JX diag(S_i) G_k`` (eq. 15), ``6 n_b × n_y``;
* ``Ṡ_k ẏ_k = JX (diag(S_i) g_k + diag(v_i × S_i) q̇_k)`` (eq. 19; ``Ṡ_i = 0`` for revolute,
  prismatic and free joints, whose ``S_i`` is constant in body coordinates);
* ``ᵏX_λC(k)`` (eq. 35): ``6 n_b × 6 n_ℓ``, only the block column of ``Λ(k)`` in the parent cluster
  ℓ is non-zero and holds ``ⁱX_Λ(k)`` for every body i of the cluster; its transpose is the force
  transform ``ˡX*_k`` of eq. (36). A cluster on the fixed base has ``n_ℓ = 1`` (the base);
* ``Tᵃ_k``, ``Tᶜ_k`` (eq. 33), which satisfy ``S_kᵀ Tᵃ_k = 1``, ``S_kᵀ Tᶜ_k = 0`` (eq. 22).

Stacked vectors are 1-D arrays of length ``6 n_b`` (body by body, Featherstone order, each body in
its own coordinates); stacked matrices are dense. Units: rad/s, m/s, rad/s², m/s², N, N·m.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.clusters import ClusterTree
from ..spatial import crf, crm
from .kinematics import joint_transform, motion_subspace
from ..model.loop_closure import cluster_constraint

__all__ = ["ClusterJoint", "cluster_joint", "tree_transforms", "propagator", "force_propagator",
           "output_transforms", "cluster_transform", "stacked_subspace", "cluster_inertia", "bias_force",
           "force_subspaces", "stack_external_forces"]


@dataclass
class ClusterJoint:
    """The state-dependent quantities of cluster joint k (Alg. 1, outward pass 1, lines 4–16).

    ``G``, ``g``: explicit constraint (eq. 6); ``dq``: ``q̇_k``; ``Xup[m]``: ``ⁱX_λt(i)`` of body
    ``i = C_k(m)``; ``JX``: eq. (13); ``SJ = JX diag(S_i)``; ``S``: ``S_k`` (15); ``Xc``:
    ``ᵏX_λC(k)`` (35); ``v``: stacked body velocities ``v_k`` (57, with the parent's velocity);
    ``Sdy``: ``Ṡ_k ẏ_k`` (19). ``v`` and ``Sdy`` are ``None`` when no velocity was given.
    """
    k: int
    G: np.ndarray
    g: np.ndarray | None
    dq: np.ndarray | None
    Xup: list
    JX: np.ndarray
    SJ: np.ndarray
    S: np.ndarray
    Xc: np.ndarray
    v: np.ndarray | None = None
    Sdy: np.ndarray | None = None


def cluster_joint(tree: ClusterTree, k: int, q: np.ndarray, dq: np.ndarray | None = None,
                  v_parent: np.ndarray | None = None) -> ClusterJoint:
    """Cluster joint k at spanning ``q`` (positions of cluster k already closed). With spanning
    ``dq`` (its dependent entries in cluster k are overwritten with ``G_k ẏ_k``) and the stacked
    velocity of the parent cluster ``v_parent`` (zeros(6) on the fixed base), also ``v_k`` and
    ``Ṡ_k ẏ_k``."""
    c = tree.clusters[k]
    G, g = cluster_constraint(tree, k, q, dq)                       # lines 4–6
    Xup = tree_transforms(tree, k, q)                               # lines 7–10
    JX = propagator(tree, k, Xup)                                   # line 11, (13)
    SJ = JX @ stacked_subspace(tree, k)                             # 𝒥X diag(S_i)
    S = SJ @ G                                                      # line 12, (15)
    Xc = cluster_transform(tree, k, Xup)                            # line 13, (35)
    J = ClusterJoint(k=k, G=G, g=g, dq=None, Xup=Xup, JX=JX, SJ=SJ, S=S, Xc=Xc)
    if dq is not None and v_parent is not None:
        J.dq = dq[c.v_idx]
        J.v = Xc @ v_parent + SJ @ J.dq                             # line 14, (57)
        vxS = np.zeros(6 * c.nb)                                    # diag(v_i × S_i) q̇_k
        for m, i in enumerate(c.bodies):
            if c.body_v[m].stop > c.body_v[m].start:
                b = slice(6 * m, 6 * m + 6)
                vxS[b] = crm(J.v[b]) @ motion_subspace(tree.model, i) @ J.dq[c.body_v[m]]
        J.Sdy = SJ @ g + JX @ vxS                                   # lines 15–16, (19)
    return J


# ---------------------------------------------------------------------------- building blocks
def tree_transforms(tree: ClusterTree, k: int, q: np.ndarray) -> list:
    """``[ⁱX_λt(i) for i in C_k]`` (Alg. 1, line 9)."""
    return [joint_transform(tree.model, i, q) for i in tree.clusters[k].bodies]


def propagator(tree: ClusterTree, k: int, Xup: list) -> np.ndarray:
    """``𝒥ₖX_Jₖ`` (eq. 13): row of body i = ⁱX_λ(i) · (row of λ(i)) + identity, by eq. (12)."""
    c, P = tree.clusters[k], tree.model.parents
    n = c.nb
    JX = np.zeros((6 * n, 6 * n))
    for m, i in enumerate(c.bodies):
        JX[6 * m:6 * m + 6, 6 * m:6 * m + 6] = np.eye(6)
        p = int(P[i])
        if p in c.bodies:                                           # ⁱX_j = ⁱX_λ(i) ^λ(i)X_j, j ∈ κ_t(λ(i)) ∩ C_k
            mp = c.bodies.index(p)
            JX[6 * m:6 * m + 6, :6 * mp + 6] = Xup[m] @ JX[6 * mp:6 * mp + 6, :6 * mp + 6]
    return JX


def force_propagator(tree: ClusterTree, k: int, Xup: list) -> np.ndarray:
    """``𝒥ₖX*_Jₖ`` (eq. 28): identity diagonal and ``−ⁱX*_j = −(ʲX_i)ᵀ`` where ``i = λ_t(j)``."""
    c, P = tree.clusters[k], tree.model.parents
    n = c.nb
    JXf = np.eye(6 * n)
    for m, j in enumerate(c.bodies):
        i = int(P[j])
        if i in c.bodies:
            mi = c.bodies.index(i)
            JXf[6 * mi:6 * mi + 6, 6 * m:6 * m + 6] = -Xup[m].T     # ⁱX*_j = (ʲX_i)ᵀ
    return JXf


def output_transforms(tree: ClusterTree, k: int, Xup: list) -> list:
    """``[ⁱX_Λ(k) for i in C_k]``: from the output body to every body of the cluster."""
    c, P = tree.clusters[k], tree.model.parents
    out = []
    for m, i in enumerate(c.bodies):
        p = int(P[i])
        out.append(Xup[m] if p == c.output_body else Xup[m] @ out[c.bodies.index(p)])
    return out


def cluster_transform(tree: ClusterTree, k: int, Xup: list) -> np.ndarray:
    """``ᵏX_λC(k)`` (eq. 35): block ``(i, Λ(k)) = ⁱX_Λ(k)``, all other blocks zero (ε_k of eq. 34)."""
    c = tree.clusters[k]
    n_parent = tree.clusters[c.parent].nb if c.parent >= 0 else 1
    Xc = np.zeros((6 * c.nb, 6 * n_parent))
    s = 6 * c.parent_slot
    for m, X in enumerate(output_transforms(tree, k, Xup)):
        Xc[6 * m:6 * m + 6, s:s + 6] = X
    return Xc


def stacked_subspace(tree: ClusterTree, k: int) -> np.ndarray:
    """``diag({S_i}_{i ∈ C_k})``: ``6 n_b × n_f``."""
    c = tree.clusters[k]
    D = np.zeros((6 * c.nb, c.nv))
    for m, i in enumerate(c.bodies):
        D[6 * m:6 * m + 6, c.body_v[m]] = motion_subspace(tree.model, i)
    return D


def cluster_inertia(tree: ClusterTree, k: int) -> np.ndarray:
    """``I_k = diag({I_i}_{i ∈ C_k})`` (kg, kg·m, kg·m²)."""
    c = tree.clusters[k]
    I = np.zeros((6 * c.nb, 6 * c.nb))
    for m, i in enumerate(c.bodies):
        I[6 * m:6 * m + 6, 6 * m:6 * m + 6] = tree.model.inertias[i]
    return I


def bias_force(tree: ClusterTree, k: int, v: np.ndarray) -> np.ndarray:
    """``p_k = v_k ×* I_k v_k = stack(v_i ×* I_i v_i)`` (eq. 58)."""
    c = tree.clusters[k]
    p = np.zeros(6 * c.nb)
    for m, i in enumerate(c.bodies):
        b = slice(6 * m, 6 * m + 6)
        p[b] = crf(v[b]) @ tree.model.inertias[i] @ v[b]
    return p


def stack_external_forces(tree: ClusterTree, k: int, fx: np.ndarray) -> np.ndarray:
    """``stack(f_i^x)`` of cluster k from the per-body external forces ``fx`` (NB × 6)."""
    return fx[list(tree.clusters[k].bodies)].reshape(-1)


def force_subspaces(tree: ClusterTree, k: int, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Tᵃ_k, Tᶜ_k)`` of eq. (33) at ``q``.

    ``Tᵃ_k = JX* diag(Tᵃ_i) P_k`` with ``P_k = (G_kᵀ)⁺`` (a right inverse of ``G_kᵀ``, eq. 31).
    For ``Tᶜ_k`` the generalised constraint forces ``λᶜ_k`` of the cluster are read as the tree
    joints' own constraint forces plus the loop forces, which act on the spanning-tree joints
    through the null space ``N_k`` of ``G_kᵀ`` (self-equilibrated internal forces, §III-C):
    ``P_kᶜ = diag(1, N_k)`` and ``Tᶜ_k = JX* [diag(Tᶜ_i), diag(Tᵃ_i) N_k]``, with
    ``6 n_b − n_y`` columns (``n_c``). ``Tᵃ_i = S_i (S_iᵀS_i)⁻¹``; ``Tᶜ_i`` spans the null space
    of ``S_iᵀ``."""
    c = tree.clusters[k]
    G, _ = cluster_constraint(tree, k, q)
    JXf = force_propagator(tree, k, tree_transforms(tree, k, q))
    Ta_i = np.zeros((6 * c.nb, c.nv))
    Tc_blocks = []
    for m, i in enumerate(c.bodies):
        S = motion_subspace(tree.model, i)
        if S.shape[1]:
            Ta_i[6 * m:6 * m + 6, c.body_v[m]] = S @ np.linalg.inv(S.T @ S)
        Tc = np.zeros((6 * c.nb, 6 - S.shape[1]))
        Tc[6 * m:6 * m + 6] = _null_space(S.T)
        Tc_blocks.append(Tc)
    P = np.linalg.pinv(G.T)                                         # G_kᵀ P_k = 1
    N = _null_space(G.T)                                            # G_kᵀ N_k = 0
    Ta = JXf @ Ta_i @ P                                             # (33)
    Tc = JXf @ np.hstack(Tc_blocks + [Ta_i @ N])                    # (33) with P_kᶜ = diag(1, N_k)
    return Ta, Tc


def _null_space(A: np.ndarray) -> np.ndarray:
    """Orthonormal basis (columns) of the null space of ``A`` (m × n)."""
    n = A.shape[1]
    if A.shape[0] == 0:
        return np.eye(n)
    _, s, Vt = np.linalg.svd(A)
    rank = int(np.sum(s > 1e-12 * max(s[0], 1.0))) if s.size else 0
    return Vt[rank:].T.copy()
