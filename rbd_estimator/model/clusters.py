"""The cluster tree of a robot with kinematic loops (Chignoli et al. §II-D, Fig. 4).

:meth:`ClusterTree.build` takes the :class:`RobotModel` of the URDF (its spanning tree 𝒢_t) and a
:class:`~rbd_estimator.model.loops.LoopConfig`, and

1. adds the extra bodies (rotors, couplers given by inertia and axis) to the spanning tree with
   :func:`add_bodies` — appended after the URDF bodies, so numbering stays regular and every URDF
   body, joint and frame keeps its index;
2. resolves every loop's joints to bodies and validates the declaration (errors name the loop);
3. groups the bodies of loops that share a body into one cluster (parallel and nested loops),
   then adds the fewest bodies needed for the cluster to have a single output body Λ(k) (§II-D,
   footnote 2): the tree path from every base body's parent up to their lowest common ancestor;
4. numbers the clusters regularly: a cluster is identified by its lowest body number, clusters are
   sorted by it, and every cluster comes after its parent λ_C(k).

Independent coordinates ``y`` are a subset of the spanning-tree coordinates ``q`` (§III-A): every
joint that no loop makes dependent, in spanning-tree order. With rotors only (every actuated joint
a link-and-rotor pair), ``y`` has exactly the layout of the URDF model's ``q``. The layouts follow
pinocchio's (see :class:`RobotModel`): a floating base puts ``[p, quat_xyzw]`` first in ``y`` and
``[v_lin, ω]`` first in ``ẏ``.

Everything here is constant (the pinocchio ``Model`` counterpart); per-state quantities live in
:mod:`rbd_estimator.dynamics.clusters`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import ModelError
from ..spatial import mcI, rpy_to_E
from .loop_closure import reference_configuration
from .loops import BeltTransmission, ExplicitLoop, ExtraBody, FourBar, LinearTransmission, LinkAndRotor, LoopConfig
from .robot_model import PRISMATIC, REVOLUTE, Frame, RobotModel
from .mimic import mimic_loops

__all__ = ["add_bodies", "ClusterTree", "Cluster", "ResolvedLoop"]


# ---------------------------------------------------------------------------- extra bodies
def add_bodies(model: RobotModel, bodies) -> RobotModel:
    """The spanning tree ``model`` plus ``bodies`` (:class:`ExtraBody`), each on a revolute joint of
    the same name, appended in order (a body may hang from an earlier one). Raises
    :class:`ModelError` naming the body for an unknown parent or a name already in use."""
    bodies = tuple(bodies)
    if not bodies:
        return model
    frames = dict(model.frames)
    used = set(model.body_names) | set(model.body_joint_names) | set(frames)
    new = dict(names=[], joints=[], parents=[], axes=[], E=[], r=[], I=[], parent_links=[])
    for b in bodies:
        if not isinstance(b, ExtraBody):
            raise ModelError(f"extra body {b!r} is not an ExtraBody")
        if b.name in used:
            raise ModelError(f"extra body '{b.name}': the name is already used by a link or joint of '{model.name}'")
        if b.parent not in frames:
            raise ModelError(f"extra body '{b.name}': parent '{b.parent}' is not a link of '{model.name}' "
                             f"(nor an earlier extra body)")
        pf = frames[b.parent]
        R = rpy_to_E(b.rpy)                                         # joint frame → parent link coordinates
        E, r = R.T @ pf.E, pf.r + pf.E.T @ b.xyz                    # ʲX_body(parent) = ʲX_link ˡX_body
        index = model.NB + len(new["names"])
        new["names"].append(b.name)
        new["joints"].append(b.name)
        new["parents"].append(pf.body)
        new["axes"].append(b.axis)
        new["E"].append(E)
        new["r"].append(r)
        new["I"].append(mcI(b.mass, b.com, b.inertia))
        new["parent_links"].append(b.parent)
        frames[b.name] = Frame(b.name, index, np.eye(3), np.zeros(3))
        used.add(b.name)
    n = len(bodies)
    q_new = model.nq + np.arange(n, dtype=np.int64)
    v_new = model.nv + np.arange(n, dtype=np.int64)
    return replace(
        model,
        body_names=model.body_names + tuple(new["names"]),
        body_joint_names=model.body_joint_names + tuple(new["joints"]),
        parents=np.concatenate([model.parents, np.array(new["parents"], dtype=np.int64)]),
        joint_types=np.concatenate([model.joint_types, np.full(n, REVOLUTE, dtype=np.int64)]),
        joint_dofs=np.concatenate([model.joint_dofs, np.ones(n, dtype=np.int64)]),
        axes=np.concatenate([model.axes.reshape(-1, 3), np.array(new["axes"])]),
        E_tree=np.concatenate([model.E_tree.reshape(-1, 3, 3), np.array(new["E"])]),
        r_tree=np.concatenate([model.r_tree.reshape(-1, 3), np.array(new["r"])]),
        inertias=np.concatenate([model.inertias.reshape(-1, 6, 6), np.array(new["I"])]),
        q_idx=np.concatenate([model.q_idx, q_new]), v_idx=np.concatenate([model.v_idx, v_new]),
        nq=model.nq + n, nv=model.nv + n,
        joint_names=model.joint_names + tuple(new["joints"]),
        frames=frames,
        body_parent_links=model.body_parent_links + tuple(new["parent_links"]),
    )


# ---------------------------------------------------------------------------- constant structure
@dataclass(frozen=True, eq=False)
class ResolvedLoop:
    """A loop declaration bound to the spanning tree.

    ``bodies[j]`` is the body moved by the loop's j-th joint (``decl.joints`` order) and ``v[j]`` its
    spanning ``v`` (= ``q``) index. ``ind``/``dep`` are positions in ``decl.joints`` of the
    independent and dependent joints; ``ind_pos``/``dep_pos`` the same joints' positions in the
    cluster's stacked velocity ``q̇_k`` (eq. 5). Linear loops carry ``R`` (``q_dep = R q_ind``);
    a four-bar carries its closure: bodies ``a`` (coupler) and ``b`` (output link), the points
    ``pa``, ``pb`` and the axes ``na``, ``nb`` in their frames, the common ancestor
    ``root`` and the ``path`` of bodies below it (ascending).
    """
    decl: object
    bodies: tuple[int, ...]
    v: np.ndarray
    q: np.ndarray
    ind: np.ndarray
    dep: np.ndarray
    ind_pos: np.ndarray
    dep_pos: np.ndarray
    R: np.ndarray | None = None
    closure: dict | None = None

    @property
    def name(self) -> str:
        return self.decl.name

    @property
    def kind(self) -> str:
        return self.decl.kind


@dataclass(frozen=True, eq=False)
class Cluster:
    """Cluster k (§II-D): bodies ``C_k`` (ascending), parent cluster ``λ_C(k)`` (``-1``: the fixed
    base), output body ``Λ(k)`` (``-1``: the fixed base) at position ``parent_slot`` in
    ``C_λC(k)``.

    ``q_idx``/``v_idx``: spanning ``q``/``v`` entries of its joints, stacked body by body (eq. 5);
    ``body_v[m]``: the slice of ``q̇_k`` of body ``C_k(m)``; ``indep``: positions in ``q̇_k`` of its
    independent coordinates ``ẏ_k``, which are entries ``y_v`` of ``ẏ`` (``y_q`` of ``y``).
    ``loops``: its loops in evaluation order (a loop after those that make its independent
    joints dependent).
    """
    index: int
    bodies: tuple[int, ...]
    parent: int
    output_body: int
    parent_slot: int
    q_idx: np.ndarray
    v_idx: np.ndarray
    body_v: tuple[slice, ...]
    indep: np.ndarray
    y_q: np.ndarray
    y_v: np.ndarray
    loops: tuple[ResolvedLoop, ...]

    @property
    def nb(self) -> int:
        """Number of bodies n_b."""
        return len(self.bodies)

    @property
    def nv(self) -> int:
        """Spanning-tree degrees of freedom n_f (length of ``q̇_k``)."""
        return len(self.v_idx)

    @property
    def ny(self) -> int:
        """Independent degrees of freedom n_f − n_l (length of ``ẏ_k``)."""
        return len(self.indep)


@dataclass(frozen=True, eq=False)
class ClusterTree:
    """The cluster tree 𝒢_C of a robot with loops; see the module docstring.

    ``model``: the spanning tree (URDF + extra bodies); ``urdf_model``: the URDF model alone.
    ``clusters`` in regular order; ``body_cluster[i]``: the cluster of body i. ``y_q_idx`` /
    ``y_v_idx``: spanning ``q``/``v`` index of every entry of ``y``/``ẏ``. ``q_reference``: a
    spanning configuration at ``y = 0`` (identity base) that closes every loop, the starting point
    of the numerical closure of implicit loops.
    """
    model: RobotModel
    urdf_model: RobotModel
    clusters: tuple[Cluster, ...]
    body_cluster: np.ndarray
    loops: tuple[ResolvedLoop, ...]
    y_q_idx: np.ndarray
    y_v_idx: np.ndarray
    independent_joint_names: tuple[str, ...]
    q_reference: np.ndarray

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(cls, model: RobotModel, loops=None) -> "ClusterTree":
        """Cluster tree of ``model`` (built from the URDF) with ``loops``: a :class:`LoopConfig`,
        a mapping accepted by :meth:`LoopConfig.from_dict`, or ``None`` (no loops: one cluster per
        body, and the cluster algorithms reduce to the tree algorithms)."""
        if loops is None:
            loops = LoopConfig()
        elif isinstance(loops, dict):
            loops = LoopConfig.from_dict(loops)
        elif not isinstance(loops, LoopConfig):
            raise ModelError(f"loops must be a LoopConfig or a mapping, got {type(loops).__name__}")
        span = add_bodies(model, loops.bodies)
        resolved = [_resolve(span, lp) for lp in loops.loops + mimic_loops(model)]   # URDF <mimic> joints too
        _check_dependents(span, resolved)
        groups = _clusters(span.parents, [set(r.bodies) for r in resolved], span.NB)
        tree = _assemble(model, span, groups, resolved)
        return replace(tree, q_reference=reference_configuration(tree))

    # ------------------------------------------------------------------ sizes and conversions
    @property
    def NC(self) -> int:
        """Number of clusters."""
        return len(self.clusters)

    @property
    def nq(self) -> int:
        """Size of the spanning configuration ``q``."""
        return self.model.nq

    @property
    def nv(self) -> int:
        """Size of the spanning velocity ``q̇``."""
        return self.model.nv

    @property
    def ny(self) -> int:
        """Size of the independent configuration ``y``."""
        return len(self.y_q_idx)

    def jsim_order(self) -> tuple[np.ndarray, np.ndarray]:
        """``(perm, λ)`` for Featherstone's sparse factorisation of ``H_y`` on the cluster tree:
        ``H_y[perm][:, perm]`` has its rows in regular cluster order, and ``λ`` is the expanded
        parent array of the cluster tree (§2: a cluster with n_k independent coordinates is a chain
        of n_k rows hanging from the last row of its parent cluster), so :func:`ltdl` factorises it
        with no fill-in."""
        perm, lam, last = [], [], {}
        for c in self.clusters:
            prev = last.get(c.parent, -1)
            for v in c.y_v:
                lam.append(prev)
                prev = len(perm)
                perm.append(int(v))
            last[c.index] = prev
        return np.asarray(perm, dtype=np.int64), np.asarray(lam, dtype=np.int64)

    @property
    def nvy(self) -> int:
        """Size of the independent velocity ``ẏ`` (and of ``ÿ`` and ``τ``)."""
        return len(self.y_v_idx)

    @property
    def floating_base(self) -> bool:
        return self.model.floating_base

    def cluster_of(self, body: int) -> Cluster:
        return self.clusters[self.body_cluster[body]]

    def y_from_q(self, q) -> np.ndarray:
        """``y``: the independent entries of a spanning configuration."""
        return np.asarray(q, dtype=float)[self.y_q_idx]

    def dy_from_dq(self, dq) -> np.ndarray:
        """``ẏ`` (or ``ÿ``): the independent entries of a spanning velocity (or acceleration)."""
        return np.asarray(dq, dtype=float)[self.y_v_idx]

    def random_independent_configuration(self, rng: np.random.Generator, scale: float = 0.5) -> np.ndarray:
        """Random ``y``: joints uniform in ``[-scale, scale]`` (rad or m) around the reference, random base."""
        y = self.y_from_q(self.q_reference) + rng.uniform(-scale, scale, self.ny)
        if self.floating_base:
            quat = rng.normal(size=4)
            y[3:7] = quat / np.linalg.norm(quat)
        return y

    def summary(self) -> str:
        """One line per cluster with a loop: its bodies, output body and loops."""
        m = self.model
        lines = [f"{self.NC} clusters, {m.NB} bodies, spanning nv={m.nv}, independent nv={self.nvy}"]
        for c in self.clusters:
            if c.loops:
                out = "base" if c.output_body < 0 else m.body_names[c.output_body]
                lines.append(f"  cluster {c.index}: {[m.body_names[i] for i in c.bodies]} on {out}, "
                             f"loops {[r.name for r in c.loops]}, n_f={c.nv}, n_y={c.ny}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------- resolution
def _joint_body(model: RobotModel, joint: str, loop) -> int:
    if joint not in model.body_joint_names:
        raise ModelError(f"{loop.describe()}: joint '{joint}' is not a joint of '{model.name}' "
                         f"(nor an extra body; declare rotors under 'bodies')")
    i = model.body_joint_names.index(joint)
    if model.joint_types[i] not in (REVOLUTE, PRISMATIC):
        raise ModelError(f"{loop.describe()}: joint '{joint}' is not a 1-DoF (revolute or prismatic) joint")
    return i


def _resolve(model: RobotModel, loop) -> ResolvedLoop:
    if not isinstance(loop, (LinkAndRotor, BeltTransmission, LinearTransmission, FourBar, ExplicitLoop)):
        raise ModelError(f"loop {loop!r} is not a loop declaration")
    joints = loop.joints
    bodies = tuple(_joint_body(model, j, loop) for j in joints)
    ind = np.array([joints.index(j) for j in loop.independent], dtype=np.int64)
    dep = np.array([joints.index(j) for j in loop.dependent], dtype=np.int64)
    kw = {}
    if isinstance(loop, (LinkAndRotor, BeltTransmission, LinearTransmission)):
        kw["R"] = loop.ratio_matrix()
    if isinstance(loop, BeltTransmission):
        chain = [bodies[joints.index(j)] for j in loop.joints_]
        for a, b in zip(chain, chain[1:]):
            if model.parents[b] != a:
                raise ModelError(f"{loop.describe()}: joint '{model.body_joint_names[b]}' does not move a child of "
                                 f"the link of joint '{model.body_joint_names[a]}': 'joints' must form a chain")
    if isinstance(loop, FourBar):
        kw["closure"] = _four_bar_closure(model, loop, bodies)
    if isinstance(loop, ExplicitLoop):
        _check_explicit(loop)
    return ResolvedLoop(decl=loop, bodies=bodies, v=model.v_idx[list(bodies)], q=model.q_idx[list(bodies)],
                        ind=ind, dep=dep, ind_pos=np.zeros(0, np.int64), dep_pos=np.zeros(0, np.int64), **kw)


def _four_bar_closure(model: RobotModel, loop: FourBar, bodies) -> dict:
    i_in, i_cp, i_out = bodies
    P = model.parents
    if P[i_cp] != i_in:
        raise ModelError(f"{loop.describe()}: the coupler joint '{loop.coupler}' must be carried by the input link "
                         f"(the child of joint '{loop.input}')")
    if P[i_out] != P[i_in]:
        raise ModelError(f"{loop.describe()}: the input joint '{loop.input}' and the output joint '{loop.output}' "
                         f"must hang from the same link (the ground link of the four-bar)")
    for key, i, joint in (("closure_axis", i_cp, loop.coupler), ("closure_output_axis", i_out, loop.output)):
        if model.joint_types[i] != REVOLUTE and getattr(loop, key) is None:
            raise ModelError(f"{loop.describe()}: give '{key}' (joint '{joint}' is not revolute)")
    na = loop.closure_axis if loop.closure_axis is not None else model.axes[i_cp]
    nb = loop.closure_output_axis if loop.closure_output_axis is not None else model.axes[i_out]
    return dict(a=i_cp, b=i_out, pa=loop.closure_coupler_xyz, pb=loop.closure_output_xyz, na=na, nb=nb,
                root=int(P[i_in]), path=(i_in, i_cp, i_out))


def _check_explicit(loop: ExplicitLoop) -> None:
    n, m = len(loop.joints), len(loop.independent)
    try:
        G = np.asarray(loop.G(np.zeros(n)), dtype=float)
        g = np.zeros(n) if loop.g is None else np.asarray(loop.g(np.zeros(n), np.zeros(n)), dtype=float)
        q = np.zeros(n) if loop.gamma is None else np.asarray(loop.gamma(np.zeros(m)), dtype=float)
    except Exception as exc:  # a user callable: report which loop failed and why
        raise ModelError(f"{loop.describe()}: evaluating G, g or gamma at zero failed: {exc!r}") from exc
    if G.shape != (n, m) or g.shape != (n,) or q.shape != (n,):
        raise ModelError(f"{loop.describe()}: G must return {n}×{m}, g and gamma {n} values "
                         f"(got {G.shape}, {g.shape}, {q.shape})")
    ind = [loop.joints.index(j) for j in loop.independent]
    if not np.allclose(G[ind], np.eye(m)):
        raise ModelError(f"{loop.describe()}: the rows of G of the independent joints must be the identity")


def _check_dependents(model: RobotModel, loops) -> None:
    owner: dict[str, str] = {}
    for r in loops:
        for j in r.decl.dependent:
            if j in owner:
                raise ModelError(f"joint '{j}' is made dependent by two loops, '{owner[j]}' and '{r.name}': "
                                 f"each joint may be the dependent coordinate of one loop only")
            owner[j] = r.name


# ---------------------------------------------------------------------------- clustering
def _ancestors(parents, i: int) -> list[int]:
    """``[i, λ(i), λ(λ(i)), …, -1]``."""
    out = [i]
    while i >= 0:
        i = int(parents[i])
        out.append(i)
    return out


def _clusters(parents, groups: list[set], NB: int) -> list[set]:
    """Merge loop body sets that share a body, then close each under the single-output-body rule."""
    sets: list[set] = []
    for g in groups:
        g = set(g)
        for s in [s for s in sets if s & g]:
            g |= s
            sets.remove(s)
        sets.append(g)
    changed = True
    while changed:
        changed = False
        for s in list(sets):
            heads = {int(parents[i]) for i in s if int(parents[i]) not in s}
            if len(heads) <= 1:
                continue
            chains = [_ancestors(parents, h) for h in heads]
            common = next(a for a in chains[0] if all(a in c for c in chains[1:]))   # lowest common ancestor
            for c in chains:
                s |= set(c[:c.index(common)])                       # the path up to (not incl.) it
            for t in [t for t in sets if t is not s and t & s]:
                s |= t
                sets.remove(t)
            changed = True
            break
    inside = set().union(*sets) if sets else set()
    sets += [{i} for i in range(NB) if i not in inside]
    return sorted((s for s in sets), key=min)


def _loop_order(loops: list[ResolvedLoop]) -> list[ResolvedLoop]:
    """Loops in an order where each comes after the loops that make its independent joints dependent."""
    made_by = {j: r for r in loops for j in r.decl.dependent}
    order, done, pending = [], set(), list(loops)
    while pending:
        ready = [r for r in pending if all(made_by.get(j, r) is r or made_by[j].name in done
                                           for j in r.decl.independent)]
        if not ready:
            raise ModelError(f"loops {', '.join(repr(r.name) for r in pending)} depend on each other in a cycle "
                             f"(a joint independent in one is dependent in another and vice versa)")
        order.append(ready[0])
        done.add(ready[0].name)
        pending.remove(ready[0])
    return order


def _assemble(urdf_model, model, groups, resolved) -> ClusterTree:
    P, NB = model.parents, model.NB
    body_cluster = np.full(NB, -1, dtype=np.int64)
    for k, s in enumerate(groups):
        body_cluster[list(s)] = k
    dependent_v = {int(r.v[j]) for r in resolved for j in r.dep}
    # y ⊂ q: every spanning coordinate not made dependent by a loop, in spanning order (§III-A)
    y_v_idx, y_q_idx = [], []
    for i in range(NB):
        n = int(model.joint_dofs[i])
        if n == 0 or int(model.v_idx[i]) in dependent_v:
            continue
        y_v_idx += range(model.v_idx[i], model.v_idx[i] + n)
        y_q_idx += range(model.q_idx[i], model.q_idx[i] + (7 if n == 6 else n))
    y_pos_v = {v: k for k, v in enumerate(y_v_idx)}
    y_pos_q = {q: k for k, q in enumerate(y_q_idx)}
    clusters = []
    for k, s in enumerate(groups):
        bodies = tuple(sorted(s))
        heads = {int(P[i]) for i in bodies if int(P[i]) not in s}
        out = heads.pop()
        parent = int(body_cluster[out]) if out >= 0 else -1
        assert parent < k, "cluster numbering is not regular"
        slot = clusters[parent].bodies.index(out) if parent >= 0 else 0
        q_idx, v_idx, body_v = [], [], []
        for i in bodies:
            n = int(model.joint_dofs[i])
            body_v.append(slice(len(v_idx), len(v_idx) + n))
            v_idx += range(model.v_idx[i], model.v_idx[i] + n) if n else []
            q_idx += range(model.q_idx[i], model.q_idx[i] + (7 if n == 6 else n)) if n else []
        pos = {v: m for m, v in enumerate(v_idx)}
        indep = np.array([m for m, v in enumerate(v_idx) if v in y_pos_v], dtype=np.int64)
        mine = [replace(r, ind_pos=np.array([pos[int(r.v[j])] for j in r.ind], dtype=np.int64),
                        dep_pos=np.array([pos[int(r.v[j])] for j in r.dep], dtype=np.int64))
                for r in resolved if r.bodies[0] in s]
        clusters.append(Cluster(
            index=k, bodies=bodies, parent=parent, output_body=out, parent_slot=slot,
            q_idx=np.array(q_idx, dtype=np.int64), v_idx=np.array(v_idx, dtype=np.int64), body_v=tuple(body_v),
            indep=indep, y_v=np.array([y_pos_v[v_idx[m]] for m in indep], dtype=np.int64),
            y_q=np.array([y_pos_q[q] for q in q_idx if q in y_pos_q], dtype=np.int64),
            loops=tuple(_loop_order(mine))))
    loops = tuple(r for c in clusters for r in c.loops)
    names = tuple(model.body_joint_names[i] for i in range(NB)
                  if model.joint_dofs[i] == 1 and int(model.v_idx[i]) in y_pos_v)
    return ClusterTree(model=model, urdf_model=urdf_model, clusters=tuple(clusters), body_cluster=body_cluster,
                       loops=loops, y_q_idx=np.array(y_q_idx, dtype=np.int64),
                       y_v_idx=np.array(y_v_idx, dtype=np.int64), independent_joint_names=names,
                       q_reference=model.neutral_configuration())
