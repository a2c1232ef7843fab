"""Loop constraints in explicit form (Chignoli et al. §II-C, eqs. 2–4) for every cluster.

Each loop ``l`` of a cluster relates its dependent joints to its independent ones::

    q_dep = γ_l(q_ind),   q̇_dep = G_l q̇_ind,   q̈_dep = G_l q̈_ind + g_l               (3)

* rotor, belt and linear transmissions: ``G_l = R`` constant, ``g_l = 0``;
* a four-bar is implicit, ``φ(q) = 0``, ``K q̇ = 0``, ``K q̈ = k`` (2). It is made explicit
  numerically at each state: Newton on ``φ`` for the dependent angles, then, splitting the columns
  of ``K`` into dependent and independent joints, ``q̇_dep = −K_d⁺ K_i q̇_ind`` and
  ``q̈_dep = −K_d⁺ K_i q̈_ind + K_d⁺ k``: ``G_l = −K_d⁺ K_i``, ``g_l = K_d⁺ k`` (``K_d⁺`` is a
  pseudo-inverse because a planar four-bar closed by a spatial revolute joint has 5 rows of
  rank 2; the rows are consistent, so the solution is exact);
* :class:`~rbd_estimator.model.loops.ExplicitLoop`: the user's callables.

A cluster's ``G_k``, ``g_k`` (eq. 6) are composed by substitution in the loop order of
:class:`~rbd_estimator.model.clusters.Cluster` (a loop after those that make its independent
joints dependent)::

    G_k[dep_l] = G_l G_k[ind_l],   g_k[dep_l] = G_l g_k[ind_l] + g_l,

starting from the identity rows of the cluster's independent coordinates. Velocities are
spanning ``q̇`` (rad/s, m/s); ``G`` is dimensionless (or m/rad), ``g`` in rad/s² or m/s².
"""
from __future__ import annotations

import numpy as np

from typing import TYPE_CHECKING

from ..errors import ModelError
from ..spatial import crm, rot, xlt
from .joints import joint_transform, motion_subspace

if TYPE_CHECKING:   # annotations only: the import goes one way, clusters.py → this module (no circle)
    from .clusters import ClusterTree, ResolvedLoop

__all__ = ["LoopClosureError", "cluster_constraint", "cluster_position", "loop_position", "loop_explicit",
           "closure_residual", "reference_configuration", "spanning_state"]


class LoopClosureError(ValueError):
    """An implicit loop cannot be closed at the given independent coordinates (out of reach, or a
    singular configuration where the dependent joints are not determined)."""


# ---------------------------------------------------------------------------- one loop
def loop_position(tree: ClusterTree, r: ResolvedLoop, q: np.ndarray, max_iter: int = 50) -> None:
    """``q_dep = γ_l(q_ind)`` written into the spanning configuration ``q`` (in place). A four-bar
    is closed numerically on the assembly branch of :attr:`ClusterTree.q_reference`."""
    if r.R is not None:
        q[r.q[r.dep]] = r.R @ q[r.q[r.ind]] + getattr(r.decl, "offset", 0.0)
    elif r.closure is not None:
        _close(tree, r, q, max_iter)
    else:
        if r.decl.gamma is None:
            raise ValueError(f"loop '{r.name}' has no gamma: pass a spanning-tree configuration q instead of y")
        q[r.q] = np.asarray(r.decl.gamma(q[r.q[r.ind]]), dtype=float)


def loop_explicit(tree: ClusterTree, r: ResolvedLoop, q: np.ndarray, dq: np.ndarray | None):
    """``(G_l, g_l)`` of eq. (3) at ``q`` (``g_l`` is ``None`` when ``dq`` is ``None``).

    ``dq`` is the spanning velocity; its dependent entries are *overwritten* with ``G_l q̇_ind``
    (they are needed for ``g_l``, and are thus computed even when the caller gave only ``ẏ``)."""
    if r.R is not None:
        if dq is not None:
            dq[r.v[r.dep]] = r.R @ dq[r.v[r.ind]]
        return r.R, (None if dq is None else np.zeros(len(r.dep)))
    if r.closure is not None:
        return _four_bar_explicit(tree, r, q, dq)
    ql = q[r.q]
    G = np.asarray(r.decl.G(ql), dtype=float)
    if dq is None:
        return G[r.dep], None
    dq[r.v[r.dep]] = G[r.dep] @ dq[r.v[r.ind]]
    g = np.zeros(len(r.bodies)) if r.decl.g is None else np.asarray(r.decl.g(ql, dq[r.v]), dtype=float)
    return G[r.dep], g[r.dep]


# ---------------------------------------------------------------------------- one cluster
def cluster_position(tree: ClusterTree, k: int, q: np.ndarray) -> None:
    """``q_k = γ_k(y_k)`` (Alg. 1, line 3): every loop of cluster k, in order, in place in ``q``."""
    for r in tree.clusters[k].loops:
        loop_position(tree, r, q)


def cluster_constraint(tree: ClusterTree, k: int, q: np.ndarray, dq: np.ndarray | None = None):
    """``(G_k, g_k)`` of cluster k (eq. 6 and Alg. 1, lines 4–6): ``q̇_k = G_k ẏ_k``,
    ``q̈_k = G_k ÿ_k + g_k``, rows in ``q̇_k`` order (stacked body by body, eq. 5).

    ``dq`` (spanning, optional): the independent entries must be set; the dependent entries of the
    cluster are overwritten with ``G_k ẏ_k`` (Alg. 1, line 5). ``g_k`` is ``None`` without ``dq``."""
    c = tree.clusters[k]
    G = np.zeros((c.nv, c.ny))
    G[c.indep, np.arange(c.ny)] = 1.0
    g = np.zeros(c.nv)
    for r in c.loops:
        Gl, gl = loop_explicit(tree, r, q, dq)
        G[r.dep_pos] = Gl @ G[r.ind_pos]                            # G_k[dep] = G_l G_k[ind]
        if gl is not None:
            g[r.dep_pos] = Gl @ g[r.ind_pos] + gl                   # g_k[dep] = G_l g_k[ind] + g_l
    return G, (g if dq is not None else None)


def spanning_state(tree: ClusterTree, y, dy=None, ddy=None):
    """Spanning ``(q, q̇, q̈)`` from independent ``(y, ẏ, ÿ)`` (eq. 3); entries not given are ``None``.
    Implicit loops are closed by Newton from :attr:`ClusterTree.q_reference`."""
    y = np.asarray(y, dtype=float)
    if y.shape != (tree.ny,):
        raise ValueError(f"y has shape {y.shape}, expected ({tree.ny},)")
    q = tree.q_reference.copy()
    q[tree.y_q_idx] = y
    dq = ddq = None
    if dy is not None:
        dq = np.zeros(tree.nv)
        dq[tree.y_v_idx] = np.asarray(dy, dtype=float)
    for c in tree.clusters:
        cluster_position(tree, c.index, q)
        if dq is not None:
            G, g = cluster_constraint(tree, c.index, q, dq)
            if ddy is not None:
                if ddq is None:
                    ddq = np.zeros(tree.nv)
                ddq[c.v_idx] = G @ np.asarray(ddy, dtype=float)[c.y_v] + g
    return q, dq, ddq


def reference_configuration(tree: ClusterTree) -> np.ndarray:
    """The spanning configuration at ``y = 0`` that closes every loop (raises :class:`ModelError`
    naming a loop that cannot be assembled there)."""
    q = tree.model.neutral_configuration()
    for c in tree.clusters:
        for r in c.loops:
            try:
                loop_position(tree, r, q)
                if r.closure is not None:
                    _four_bar_explicit(tree, r, q, None)             # rank check at the reference
            except (LoopClosureError, ValueError) as exc:
                if isinstance(exc, LoopClosureError) or r.closure is not None:
                    raise ModelError(f"{r.decl.describe()} cannot be assembled at zero input: {exc} "
                                     f"(check the closure positions and axis)") from None
                # an ExplicitLoop without gamma: its reference stays at zero
    return q


# ---------------------------------------------------------------------------- four-bar closure
def closure_residual(tree: ClusterTree, r: ResolvedLoop, q: np.ndarray) -> np.ndarray:
    """``φ(q)`` of a four-bar (m and dimensionless): the closure points' offset and ``n_a × n_b``,
    in the coordinates of the four-bar's ground link."""
    return _closure(tree, r, q)[0]


def _path_kinematics(tree: ClusterTree, r: ResolvedLoop, q):
    """For the bodies of the loop below its ground link (the root, held fixed): ``ⁱX_λ(i)``,
    ``ⁱX_root`` and the Jacobians ``J_i`` (6 × n_loop, body coordinates, ``v_i = J_i q̇_loop``)."""
    m, cl = tree.model, r.closure
    root = cl["root"]
    Xup, X, J = {}, {root: np.eye(6)}, {root: np.zeros((6, len(r.bodies)))}
    for i in sorted(cl["path"]):
        p = int(m.parents[i])
        Xup[i] = joint_transform(m, i, q)
        X[i] = Xup[i] @ X[p]
        J[i] = Xup[i] @ J[p]
        J[i][:, r.bodies.index(i)] += motion_subspace(m, i)[:, 0]
    return Xup, X, J


def _path_velocities(tree: ClusterTree, r: ResolvedLoop, Xup: dict, dq):
    """``v_i`` and the velocity-product accelerations ``a_i`` at ``q̈ = 0`` of the loop's bodies,
    root fixed (Featherstone eq. 3a: ``a_i = ⁱX_λ a_λ + v_i × S_i q̇_i``)."""
    m, cl = tree.model, r.closure
    root = cl["root"]
    v, a = {root: np.zeros(6)}, {root: np.zeros(6)}
    for i in sorted(cl["path"]):
        p = int(m.parents[i])
        vJ = motion_subspace(m, i)[:, 0] * dq[r.v[r.bodies.index(i)]]
        v[i] = Xup[i] @ v[p] + vJ
        a[i] = Xup[i] @ a[p] + crm(v[i]) @ vJ
    return v, a


def _frame(X: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(E, position of point p, Φ)`` for body transform ``X = ⁱX_root``: ``E`` rotates root into
    body coordinates, and ``Φ = rot(Eᵀ) xlt(p)`` maps a body motion vector to the motion of the
    point p in root orientation."""
    E = X[:3, :3]
    r = -E.T @ X[3:, :3]                                            # skew(r) from plux: X₂₁ = −E r×
    origin = np.array([r[2, 1], r[0, 2], r[1, 0]])
    return E, origin + E.T @ p, rot(E.T) @ xlt(p)


def _closure(tree, r, q):
    """``φ(q)`` and the closure kinematics: axes ``na``, ``nb`` and point Jacobians ``Ja``, ``Jb``
    (6 × n_loop, ``[ω; v_point]`` in root coordinates), with ``Φ_a``, ``Φ_b`` and ``ⁱX_λ(i)``."""
    cl = r.closure
    Xup, X, J = _path_kinematics(tree, r, q)
    Ea, pa, Pa = _frame(X[cl["a"]], cl["pa"])
    Eb, pb, Pb = _frame(X[cl["b"]], cl["pb"])
    na, nb = Ea.T @ cl["na"], Eb.T @ cl["nb"]                        # closure axis, both sides
    phi = np.concatenate([pa - pb, _cross(na, nb)])
    return phi, dict(na=na, nb=nb, Ja=Pa @ J[cl["a"]], Jb=Pb @ J[cl["b"]], Pa=Pa, Pb=Pb, Xup=Xup)


def _close(tree, r, q, max_iter: int, max_step: float = 0.2) -> None:
    """Dependent angles of a four-bar at the independent ones in ``q``, on the assembly branch of
    :attr:`ClusterTree.q_reference`: continuation from the reference in steps of at most
    ``max_step`` (rad or m) of the independent coordinates, each finished by Gauss–Newton on
    ``φ(q_ind, q_dep) = 0`` (steps of the dependent angles limited to 0.5 rad)."""
    ind, dep = r.q[r.ind], r.q[r.dep]
    target = q[ind].copy()
    start = tree.q_reference[ind]
    q[dep] = tree.q_reference[dep]
    n = max(1, int(np.ceil(np.max(np.abs(target - start)) / max_step)))
    for s in range(1, n + 1):
        q[ind] = start + (target - start) * (s / n)
        for _ in range(max_iter):
            phi, kin = _closure(tree, r, q)
            if np.max(np.abs(phi)) < 1e-15:
                break
            step = np.linalg.lstsq(_closure_jacobian(kin)[:, r.dep], -phi, rcond=None)[0]
            step *= min(1.0, 0.5 / max(np.max(np.abs(step)), 1e-300))
            q[dep] += step
            if np.max(np.abs(step)) < 1e-15:
                break
    q[ind] = target
    phi = closure_residual(tree, r, q)
    if not np.max(np.abs(phi)) < 1e-10:
        raise LoopClosureError(f"loop '{r.name}' cannot be closed at {dict(zip(r.decl.independent, target))} "
                               f"(closure residual {np.max(np.abs(phi)):.3g})")


def _closure_jacobian(kin) -> np.ndarray:
    """∂φ/∂q: point velocities, and ``d(n_a × n_b) = (ω_a × n_a) × n_b + n_a × (ω_b × n_b)``."""
    na, nb, Ja, Jb = kin["na"], kin["nb"], kin["Ja"], kin["Jb"]
    lin = Ja[3:] - Jb[3:]
    ang = np.column_stack([_cross(_cross(Ja[:3, j], na), nb) + _cross(na, _cross(Jb[:3, j], nb))
                           for j in range(Ja.shape[1])])
    return np.vstack([lin, ang])


def _four_bar_explicit(tree, r, q, dq):
    """``G_l = −K_d⁺ K_i`` and ``g_l = K_d⁺ k`` from the implicit closure ``K q̈ = k`` (eqs. 2–4).

    Rows of ``K``: the closure points' relative velocity (3) and the relative angular velocity
    across the two directions ``t₁, t₂ ⊥ n_a`` (2), in the ground link's coordinates. With
    ``q̈ = 0``: ``k = −[(a'_a + ω_a × v_a) − (a'_b + ω_b × v_b); T(ω̇_a − ω̇_b) + (ω_a × tᵢ)·(ω_a − ω_b)]``
    (classical accelerations of the points; ``tᵢ`` turn with the coupler)."""
    _, kin = _closure(tree, r, q)
    T = _perpendicular(kin["na"])
    K = np.vstack([kin["Ja"][3:] - kin["Jb"][3:], T @ (kin["Ja"][:3] - kin["Jb"][:3])])
    Kd, Ki = K[:, r.dep], K[:, r.ind]
    sv = np.linalg.svd(Kd, compute_uv=False)
    if sv[-1] < 1e-8 * max(sv[0], 1e-300):
        raise LoopClosureError(f"loop '{r.name}' is at a singular configuration (the closure does not determine "
                               f"its dependent joints: singular values {sv.tolist()})")
    Kd_pinv = np.linalg.pinv(Kd)
    Gl = -Kd_pinv @ Ki
    if dq is None:
        return Gl, None
    dq[r.v[r.dep]] = Gl @ dq[r.v[r.ind]]
    v, a = _path_velocities(tree, r, kin["Xup"], dq)
    cl = r.closure
    Va, Vb = kin["Pa"] @ v[cl["a"]], kin["Pb"] @ v[cl["b"]]        # [ω; v_point], root coordinates
    Aa, Ab = kin["Pa"] @ a[cl["a"]], kin["Pb"] @ a[cl["b"]]        # [ω̇; a'_point] at q̈ = 0
    wa, wb = Va[:3], Vb[:3]
    acc_a = Aa[3:] + _cross(wa, Va[3:])                             # classical point accelerations
    acc_b = Ab[3:] + _cross(wb, Vb[3:])
    k = -np.concatenate([acc_a - acc_b,
                         T @ (Aa[:3] - Ab[:3]) + np.array([_cross(wa, t) for t in T]) @ (wa - wb)])
    return Gl, Kd_pinv @ k


def _perpendicular(n: np.ndarray) -> np.ndarray:
    """2 × 3: two unit rows orthogonal to the unit vector ``n`` and to each other."""
    e = np.eye(3)[int(np.argmin(np.abs(n)))]
    t1 = _cross(n, e)
    t1 /= np.linalg.norm(t1)
    return np.vstack([t1, _cross(n, t1)])


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a × b`` for 3-vectors (numpy's ``cross`` costs ~10× more on such small arrays)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])

