"""Constraint-embedding articulated-body algorithm (Chignoli et al. §IV-D, Algorithm 1).

The three passes of the ABA run on the cluster tree 𝒢_C with the cluster joint model of
:mod:`.clusters`: the articulated inertia ``I_kᴬ`` of a cluster is ``6 n_b × 6 n_b`` and block
diagonal (§IV-B), ``D_k = S_kᵀ I_kᴬ S_k`` is ``n_y × n_y``. With one body per cluster and no loop it
is Featherstone's ABA (:func:`rbd_estimator.dynamics.aba`). Cost: linear in the number of clusters
for bounded cluster sizes (§IV-D, §VI-A).
"""
from __future__ import annotations

import numpy as np

from ..model.clusters import ClusterTree
from .clusters import bias_force, cluster_inertia, cluster_joint, stack_external_forces
from .kinematics import external_forces, gravity_acceleration
from ..model.loop_closure import cluster_position

__all__ = ["ce_aba", "STATES"]

STATES = ("independent", "spanning")


def ce_aba(tree: ClusterTree, q, dq, tau, f_ext=None, *, state: str = "independent",
           effort: str | None = None, output: str | None = None) -> np.ndarray:
    """Forward dynamics of a robot with loops (Algorithm 1).

    ``state='independent'``: ``q`` is ``y`` (``tree.ny``) and ``dq`` is ``ẏ`` (``tree.nvy``);
    ``'spanning'``: ``q`` (``tree.nq``) and ``q̇`` (``tree.nv``) of the spanning tree (the
    dependent velocities are recomputed from the independent ones). ``effort`` (default: as
    ``state``): ``'independent'``, ``τ`` — the actuator efforts, one per entry of ``ẏ`` (N·m or N at
    the independent joints; for a floating base the first six are the base wrench ``[f; n]``,
    normally zero) —, or ``'spanning'``, ``τ_tree`` (one per entry of ``q̇``; ``τ = G_kᵀ τ_tree``).
    ``output`` (default: as ``state``): ``'independent'`` returns ``ÿ`` (``tree.nvy``),
    ``'spanning'`` returns ``q̈ = G ÿ + g`` (``tree.nv``). ``f_ext``: ``{link or frame:
    [fx, fy, fz, tx, ty, tz]}`` in that frame, as for :func:`rbd_estimator.dynamics.aba`.
    Layouts follow pinocchio's (see :class:`~rbd_estimator.model.clusters.ClusterTree`).
    """
    q, dq, solve_positions = _spanning_state(tree, q, dq, state)
    effort, output = effort or state, output or state
    tau = _check(tau, tree.nvy if effort == "independent" else tree.nv, "tau", effort)
    fx = external_forces(tree.model, f_ext)
    NC = tree.NC
    J, v = [None] * NC, [None] * NC
    IA, pA = [None] * NC, [None] * NC
    for c in tree.clusters:                                         # outward pass 1 (ascending)
        k = c.index
        if solve_positions:
            cluster_position(tree, k, q)                            # line 3: q_k = γ(y_k)
        v_parent = v[c.parent] if c.parent >= 0 else np.zeros(6)    # v_0 = 0
        J[k] = cluster_joint(tree, k, q, dq, v_parent)              # lines 4–16, (57), (19)
        v[k] = J[k].v
        IA[k] = cluster_inertia(tree, k)                            # line 17: I_kᴬ = I_k
        pA[k] = bias_force(tree, k, v[k]) - stack_external_forces(tree, k, fx)   # line 18, (58)

    U, Dinv, u = [None] * NC, [None] * NC, [None] * NC
    for c in reversed(tree.clusters):                               # inward pass (descending)
        k, Jk = c.index, J[c.index]
        t = Jk.G.T @ tau[c.v_idx] if effort == "spanning" else tau[c.y_v]   # line 2: t_k = G_kᵀ τ_tree
        U[k] = IA[k] @ Jk.S                                         # line 3
        Dinv[k] = _inv(Jk.S.T @ U[k])                               # line 4: D_k⁻¹
        u[k] = t - Jk.S.T @ pA[k]                                   # line 5
        if c.parent >= 0:                                           # line 6
            Ia = IA[k] - U[k] @ Dinv[k] @ U[k].T                    # line 7, (60)
            pa = pA[k] + Ia @ Jk.Sdy + U[k] @ Dinv[k] @ u[k]        # line 8, (60)
            IA[c.parent] += _symmetric(Jk.Xc.T @ Ia @ Jk.Xc)        # line 9, (59): ˡX*_k Iᵃ ᵏX_ℓ
            pA[c.parent] += Jk.Xc.T @ pa                            # line 10, (59)

    a = [None] * NC
    a0 = gravity_acceleration(tree.model)                           # a_0 = −a_g
    ddy = np.zeros(tree.nvy)
    ddq = np.zeros(tree.nv)
    for c in tree.clusters:                                         # outward pass 2 (ascending)
        k, Jk = c.index, J[c.index]
        a_prime = Jk.Xc @ (a[c.parent] if c.parent >= 0 else a0) + Jk.Sdy   # line 3
        ddy_k = Dinv[k] @ (u[k] - U[k].T @ a_prime)                 # line 4, (53)
        a[k] = a_prime + Jk.S @ ddy_k                               # line 5, (61)
        ddy[c.y_v] = ddy_k
        ddq[c.v_idx] = Jk.G @ ddy_k + Jk.g                          # conversion: q̈_k = G_k ÿ_k + g_k
    return ddq if output == "spanning" else ddy


def _spanning_state(tree: ClusterTree, q, dq, state: str):
    """Copies of the spanning ``q`` and ``q̇`` (dependent entries to be filled cluster by cluster)
    and whether the dependent positions must be solved (``state='independent'``)."""
    if state not in STATES:
        raise ValueError(f"state must be one of {STATES}, got {state!r}")
    if state == "independent":
        y, dy = _check(q, tree.ny, "y", state), _check(dq, tree.nvy, "dy", state)
        qs = tree.q_reference.copy()
        qs[tree.y_q_idx] = y
        dqs = np.zeros(tree.nv)
        dqs[tree.y_v_idx] = dy
        return qs, dqs, True
    return _check(q, tree.nq, "q", state).copy(), _check(dq, tree.nv, "dq", state).copy(), False


def _check(x, n: int, name: str, kind: str) -> np.ndarray:
    if kind not in STATES:
        raise ValueError(f"expected one of {STATES} for {name}, got {kind!r}")
    x = np.asarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{name} has shape {x.shape}, expected ({n},) for {kind} coordinates")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} has non-finite entries")
    return x


def _symmetric(A: np.ndarray) -> np.ndarray:
    """``(A + Aᵀ)/2``. Articulated inertias are symmetric; without this, the round-off asymmetry of
    ``U D⁻¹ Uᵀ`` is amplified from cluster to cluster (by ~3× per belt cluster in a deep chain,
    1e-3 relative error in ``ÿ`` after 32 clusters; 1e-11 with it)."""
    return 0.5 * (A + A.T)


def _inv(D: np.ndarray) -> np.ndarray:
    """``D⁻¹`` (a cluster with no independent coordinate, e.g. a kept fixed joint, has 0 × 0)."""
    return np.linalg.inv(D) if D.size else np.zeros((0, 0))
