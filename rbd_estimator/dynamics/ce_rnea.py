"""Constraint-embedding recursive Newton–Euler algorithm (Chignoli et al. §V, eqs. 62–65) and
composite-rigid-body algorithm on the cluster tree.

Both are the tree algorithms with bodies replaced by clusters, joints by cluster joints and
transforms by cluster transforms (:mod:`.clusters`). The inward pass of the RNEA yields the force
transmitted across every cluster joint, ``f_kᴶ`` (one spatial force per body of the cluster, from
the output body, eq. 21), and ``τ_k = S_kᵀ f_kᴶ`` (eq. 23): the actuator efforts when ``y_k`` are
the actuated joints.
"""
from __future__ import annotations

import numpy as np

from ..model.clusters import ClusterTree
from .ce_aba import _check, _spanning_state
from .clusters import bias_force, cluster_inertia, cluster_joint, stack_external_forces
from .kinematics import external_forces, gravity_acceleration
from ..model.loop_closure import cluster_position

__all__ = ["ce_rnea", "ce_rnea_full", "ce_crba"]


def ce_rnea(tree: ClusterTree, q, dq, ddq, f_ext=None, *, state: str = "independent",
            output: str = "independent") -> np.ndarray:
    """Inverse dynamics of a robot with loops (§V).

    ``state='independent'``: ``(y, ẏ, ÿ)``; ``'spanning'``: spanning ``(q, q̇, q̈)`` (consistent
    with the loops; only the independent entries of ``q̇``, ``q̈`` are used). ``f_ext`` as for
    :func:`rbd_estimator.dynamics.rnea`. Returns ``τ`` (``tree.nvy``): the generalised forces of the
    independent coordinates (N·m or N; for a floating base the first six entries are the base
    wrench ``[f; n]``, zero for a consistent motion). ``output='spanning'`` returns instead a
    dynamically equivalent ``τ_tree = P_k τ_k`` (``tree.nv``) with ``P_k = (G_kᵀ)⁺`` (eq. 31).
    """
    tau, _, _, _, J = ce_rnea_full(tree, q, dq, ddq, f_ext, state=state)
    if output == "independent":
        return tau
    if output != "spanning":
        raise ValueError(f"output must be 'independent' or 'spanning', got {output!r}")
    tau_tree = np.zeros(tree.nv)
    for c in tree.clusters:
        tau_tree[c.v_idx] = np.linalg.pinv(J[c.index].G.T) @ tau[c.y_v]   # (31): P_k τ_k
    return tau_tree


def ce_rnea_full(tree: ClusterTree, q, dq, ddq, f_ext=None, *, state: str = "independent"):
    """:func:`ce_rnea` returning ``(τ, v, a, fᴶ, J)``: per cluster the stacked body velocities and
    accelerations (with ``−a_g``) and the cluster joint forces ``f_kᴶ`` (eq. 65), body coordinates,
    and the :class:`~.clusters.ClusterJoint` of every cluster."""
    q, dq, solve_positions = _spanning_state(tree, q, dq, state)
    ddy = _check(ddq, tree.nvy if state == "independent" else tree.nv, "ddq", state)
    if state == "spanning":
        ddy = ddy[tree.y_v_idx]
    fx = external_forces(tree.model, f_ext)
    NC = tree.NC
    J, v, a, fJ = [None] * NC, [None] * NC, [None] * NC, [None] * NC
    a0 = gravity_acceleration(tree.model)
    for c in tree.clusters:                                         # outward pass (62)–(63)
        k = c.index
        if solve_positions:
            cluster_position(tree, k, q)
        J[k] = cluster_joint(tree, k, q, dq, v[c.parent] if c.parent >= 0 else np.zeros(6))
        v[k] = J[k].v                                               # (62) v_k = ᵏX_λ v_λ + S_k ẏ_k
        a[k] = J[k].Xc @ (a[c.parent] if c.parent >= 0 else a0) + J[k].Sdy + J[k].S @ ddy[c.y_v]   # (62)
        fJ[k] = (cluster_inertia(tree, k) @ a[k] + bias_force(tree, k, v[k])
                 - stack_external_forces(tree, k, fx))              # (63) f_k^net
    tau = np.zeros(tree.nvy)
    for c in reversed(tree.clusters):                               # inward pass (65)
        k = c.index
        tau[c.y_v] = J[k].S.T @ fJ[k]                               # (23) τ_k = S_kᵀ f_kᴶ
        if c.parent >= 0:
            fJ[c.parent] += J[k].Xc.T @ fJ[k]                       # (65) f_λᴶ += ˡX*_k f_kᴶ
    return tau, v, a, fJ, J


def ce_crba(tree: ClusterTree, q, *, state: str = "independent") -> np.ndarray:
    """Mass matrix in independent coordinates ``H_y = Gᵀ H G`` (``tree.nvy`` square, symmetric) by
    the composite-rigid-body algorithm on the cluster tree: composite cluster inertias
    ``I_ℓᶜ += ˡX*_k I_kᶜ ᵏX_ℓ``, ``H_kk = S_kᵀ I_kᶜ S_k``, ``H_jk = S_jᵀ (ʲX*_… F)`` up the ancestors.
    ``q`` is ``y`` or the spanning ``q`` according to ``state``."""
    if state == "independent":
        qs = tree.q_reference.copy()
        qs[tree.y_q_idx] = _check(q, tree.ny, "y", state)
    else:
        qs = _check(q, tree.nq, "q", state).copy()
    J, Ic = [None] * tree.NC, [None] * tree.NC
    for c in tree.clusters:
        if state == "independent":
            cluster_position(tree, c.index, qs)
        J[c.index] = cluster_joint(tree, c.index, qs)
        Ic[c.index] = cluster_inertia(tree, c.index)
    H = np.zeros((tree.nvy, tree.nvy))
    for c in reversed(tree.clusters):
        k = c.index
        if c.parent >= 0:
            Ic[c.parent] += J[k].Xc.T @ Ic[k] @ J[k].Xc             # I_λᶜ += ˡX*_k I_kᶜ ᵏX_λ
        F = Ic[k] @ J[k].S                                          # F = I_kᶜ S_k
        H[np.ix_(c.y_v, c.y_v)] = J[k].S.T @ F                      # H_kk = S_kᵀ F
        j = k
        while tree.clusters[j].parent >= 0:
            F = J[j].Xc.T @ F                                       # F = ^λ(j)X*_j F
            j = tree.clusters[j].parent
            H[np.ix_(tree.clusters[j].y_v, c.y_v)] = J[j].S.T @ F   # H_jk = S_jᵀ F
            H[np.ix_(c.y_v, tree.clusters[j].y_v)] = H[np.ix_(tree.clusters[j].y_v, c.y_v)].T
    return H
