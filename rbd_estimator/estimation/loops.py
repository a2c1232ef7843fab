"""Estimation on robots with actuation loops (rotors, belts, differentials; Chignoli et al.).

A loop declaration (:mod:`rbd_estimator.model.loops`) adds bodies to the URDF tree (rotors) and
explicit constraints between its joint angles (eq. 3)::

    q = γ(y),   q̇ = G ẏ,   q̈ = G ÿ + g,

``y`` being the independent coordinates (:attr:`ClusterTree.independent_joint_names`: the link
joints of rotor and belt drives). On the spanning tree the motion obeys
``M q̈ + h = τ_q + Kᵀλ − Σ J_cᵀ f_c`` with ``λ`` the loop-closure forces and ``K G = 0``, so the
actuator efforts (the generalised forces of ``y``, N·m at the link side of the gearbox) are

    τ_y = Gᵀ τ_q          for any λ,

in particular for the ``τ_q`` that the tree estimator finds when it charges the closure forces to
the spanning-tree joints (λ = 0). :class:`LoopEstimator` therefore plans Nori's estimator
(:class:`~.estimator.Estimator`) once on the spanning tree *with* the extra bodies, and every tick
maps ``(y, ẏ, ÿ)`` to ``(q, q̇, q̈)`` and ``τ_q`` back to ``τ_y``.

Transmissions — ``link_and_rotor``, ``belt_transmission``, ``linear_transmission`` — have a
constant ``G``, ``g = 0`` and a linear ``γ``: ``G`` (joint rows and columns only) is precomputed
as a dense matrix, and with such loops only the tick is the tree estimate plus one small matrix
product in (``[y ẏ ÿ]ᵀ Gᵀ``) and one matrix-vector product out (``Gᵀ τ_q``), in preallocated
buffers, with no Python loop over bodies or clusters.

Four-bars and :class:`~rbd_estimator.model.loops.ExplicitLoop` (with ``gamma``) are supported at a
per-tick cost: for every cluster holding such a loop (and only those), the tick closes the loop
(``γ`` by Newton with continuation as in
:func:`~rbd_estimator.model.loop_closure.spanning_state`, but from the previous tick's
assembly rather than the reference one; from the reference again if that fails), evaluates
``G_k(q)``, ``g_k(q, q̇)``, patches those blocks of ``G`` and adds ``g_k`` to ``q̈``. For four-bars
(every loop but :class:`ExplicitLoop`) this runs in one compiled kernel
(:func:`~.loop_state.loop_state` on :class:`~rbd_estimator.model.cluster_packing.PackedClusterTree`, the same
equations as :mod:`~rbd_estimator.model.loop_closure`) that also forms ``[q q̇ q̈]`` and checks the
input, in preallocated buffers: a few µs per four-bar cluster between nearby ticks
(``benchmarks/bench_loops.py --estimator``). An :class:`ExplicitLoop`'s ``G``, ``g``, ``γ`` are the
user's Python callables: a tree with one keeps the Python path
(:func:`~rbd_estimator.model.loop_closure.cluster_constraint`, ~0.5 ms per four-bar cluster).
:attr:`LoopEstimator.state_dependent` names these loops. An explicit loop without ``gamma`` is
refused (``y`` would not give ``q``).

Sensors: force-torque readings stay valid when no loop closes across the sensor joint — then the
closure forces of every loop act on bodies that are all inside, or all outside, the sensor's
sub-tree and cancel in the wrench it transmits. A sensor joint inside a cluster (§II-D; e.g. a
knee rotor carried by the link above the leg's force-torque sensor) is refused with a
:class:`ConfigError` naming the loop and the sensor, and so is a joint-torque sensor on a joint of
a loop (its reading would include closure forces that the spanning-tree torque does not separate).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import ConfigError, ModelError
from ..model.cluster_packing import CLOSURE_FAILED, NOT_FINITE, PackedClusterTree, packable
from ..model.clusters import ClusterTree
from ..model.loops import BeltTransmission, ExplicitLoop, LinearTransmission, LinkAndRotor, LoopConfig
from ..model.robot_model import RobotModel
from .config import SensorConfig
from .contacts import make_estimator
from .estimate import Estimate
from .measurements import ImuSample
from .interface import EstimatorInterface
from .loop_state import index_table, loop_state

__all__ = ["LoopEstimator", "LoopEstimate", "ImuSample", "estimator_for", "model_for"]

_CONSTANT = (LinkAndRotor, BeltTransmission, LinearTransmission)


class LoopEstimate:
    """Result of :meth:`LoopEstimator.estimate`, with the interface of :class:`~.estimator.Estimate`.
    Arrays are views into buffers that the next call overwrites: copy what you keep.

    * ``tau``: actuator efforts ``τ_y = Gᵀ τ_q`` (N·m or N), in ``estimator.joint_names`` order
      (the independent coordinates);
    * ``contact_wrenches``, ``joint_wrenches``, ``residual``, ``contact_covariance``, :meth:`contact`,
      :attr:`base_acceleration`: as in :class:`~.estimator.Estimate`;
    * ``tree``: the spanning-tree :class:`~.estimator.Estimate`; its ``tau`` (``tau_tree``) holds
      the efforts of every spanning-tree joint with the loop-closure forces charged to them — not
      a physical quantity on the joints of a loop, only its projection ``Gᵀ τ_q`` is;
    * ``tau_variance``: ``None`` (the spanning tree's torque variances are ``tree.tau_variance``).
    """

    def __init__(self, tau: np.ndarray, tree: Estimate):
        self.tau = tau
        self.tree = tree

    @property
    def tau_tree(self) -> np.ndarray:
        return self.tree.tau

    @property
    def contact_wrenches(self) -> np.ndarray:
        return self.tree.contact_wrenches

    @property
    def joint_wrenches(self) -> np.ndarray:
        return self.tree.joint_wrenches

    @property
    def residual(self):
        return self.tree.residual

    @property
    def contact_covariance(self):
        return self.tree.contact_covariance

    chi2 = property(lambda self: self.tree.chi2, doc="the spanning tree's whitened residual's squared norm")
    dof = property(lambda self: self.tree.dof, doc="its degrees of freedom")
    condition = property(lambda self: self.tree.condition, doc="the spanning tree's condition estimate")

    #: the actuator efforts' variance needs the spanning-tree torques' covariance, which the tick does
    #: not form (only their variances): not given for a robot with loops
    tau_variance = None

    def contact(self, name: str) -> np.ndarray:
        return self.tree.contact(name)

    @property
    def base_acceleration(self) -> np.ndarray:
        return self.tree.base_acceleration


def _of_estimator(name: str, doc: str) -> property:
    """A read-only property: the spanning-tree estimator's attribute ``name``."""
    return property(lambda self: getattr(self.estimator, name), doc=doc)


class LoopEstimator(EstimatorInterface):
    """Joint-torque and contact-wrench estimator for a robot with actuation loops (see the module
    docstring for what each loop type costs per tick).

    ``model``: the URDF model (built with the sensor joints kept; :meth:`from_urdf` does it);
    ``config``: the sensor configuration of the URDF (frames, sensors, contacts unchanged);
    ``loops``: a :class:`LoopConfig`, a mapping for :meth:`LoopConfig.from_dict`, or ``None`` to
    read them from the node parameters of ``config`` (inline or ``loops_file``, relative paths
    from ``base_dir``). Raises :class:`~rbd_estimator.errors.ModelError` for a bad loop
    declaration, :class:`ConfigError` for a sensor inside a loop (or an explicit loop without ``gamma``), and
    whatever :class:`~.estimator.Estimator` raises for the sensor set.
    """

    def __init__(self, model: RobotModel, config: SensorConfig, loops=None, seed: int = 0, solver: str = "auto",
                 base_dir: str | None = None):
        if loops is None:
            loops = LoopConfig.from_sensor_parameters(dict(config.node), base_dir)
        self.tree = tree = ClusterTree.build(model, loops)
        _check_supported(tree)
        _check_sensors(tree, config)
        self.estimator = make_estimator(tree.model, config, seed=seed, solver=solver)
        self.G = _joint_G(tree, self.estimator.joint_names)          # (n_tree_joints, n_y), constant
        self._GT = np.ascontiguousarray(self.G.T)
        ny = self.G.shape[1]
        self._Y = np.zeros((3, ny))                                   # rows: y, ẏ, ÿ
        self._Q = np.zeros((3, self.G.shape[0]))                      # rows: q, q̇, q̈ (tree joints)
        self._tau = np.zeros(ny)
        self.result = LoopEstimate(self._tau, self.estimator.result)
        self._q_offset = _joint_offset(tree, self.estimator.joint_names)   # γ(0): mimic offsets
        self._init_state_dependent()
        self._planned = [a.copy() for a in self._tick_arrays()]      # as planning leaves them (:meth:`reset`)

    def _tick_arrays(self) -> tuple:
        """The arrays a tick writes: ``[y ẏ ÿ]``, ``[q q̇ q̈]``, ``τ_y``, the spanning buffers with the
        four-bars' warm start ``q_warm``, the state-dependent ``G`` and ``Gᵀ``; when the tick is
        compiled all but ``τ_y`` are views of its one array ``E``, which goes with its work space."""
        if self._packed is not None:
            return self._tau, self._E, self._packed.w
        return self._Y, self._Q, self._tau, self._qs, self._dqs, self._q_warm, self.G, self._GT

    def reset(self) -> None:
        """:meth:`EstimatorInterface.reset`: the spanning-tree estimator's, then this one's arrays (the
        warm start among them) as planning left them."""
        self.estimator.reset()
        for a, v in zip(self._tick_arrays(), self._planned):
            np.copyto(a, v)

    def _init_state_dependent(self):
        """Per-tick data of the clusters whose ``G`` depends on the state (four-bars, explicit loops):
        their rows (tree-joint positions) and columns (independent-joint positions) in ``G``; for a
        tree without :class:`ExplicitLoop` the packed tree and index table of :func:`~.loop_state.loop_state`."""
        tree, m = self.tree, self.tree.model
        row = {int(m.v_idx[m.body_joint_names.index(j)]): k for k, j in enumerate(self.tree_joint_names)}
        ypos = {int(v): k for k, v in enumerate(tree.y_v_idx)}
        col = {ypos[int(m.v_idx[m.body_joint_names.index(j)])]: k for k, j in enumerate(self.joint_names)}
        self._nonlinear = []
        for c in tree.clusters:
            if any(not isinstance(r.decl, _CONSTANT) for r in c.loops):
                rows = np.array([row[int(v)] for v in c.v_idx], dtype=np.int64)
                cols = np.array([col[int(k)] for k in c.y_v], dtype=np.int64)
                self._nonlinear.append((c.index, rows, cols, np.ix_(rows, cols), c.q_idx))
        self._qs = tree.q_reference.copy()                            # spanning buffers (state-dependent path)
        # Newton on a four-bar continues from the previous tick's assembly (``_close`` starts from
        # ``tree.q_reference``): a view of the tree whose reference is that buffer
        self._q_warm = tree.q_reference.copy()
        self._dqs = np.zeros(tree.nv)
        ind = [m.body_joint_names.index(j) for j in self.joint_names]
        self._y_q, self._y_v = m.q_idx[ind], m.v_idx[ind]
        self._packed = PackedClusterTree(tree) if packable(tree) is None else None
        if self._packed is not None:                                  # compiled tick: its buffers in one array
            parts = dict(Y=self._Y, qs=self._qs, dqs=self._dqs, q_warm=self._q_warm, G=self.G, GT=self._GT,
                         q_offset=self._q_offset, Q=self._Q)
            self._E = np.concatenate([a.ravel() for a in parts.values()])
            start = 0
            for name, a in parts.items():                             # the attributes become views of it
                setattr(self, "_" + name if name != "G" else name, self._E[start:start + a.size].reshape(a.shape))
                start += a.size
            self._nl = index_table(self._nonlinear, self._y_q, self._y_v, len(self.tree_joint_names), m.nq, m.nv)
            self._Y[0] = self._qs[self._y_q]                          # one call at the reference state: the
            p = self._packed                                          # kernel is compiled (or loaded) when
            loop_state(p.ip, p.fp, p.w, self._nl, self._E)           # planning, not at the first tick
            self._Y[:] = 0.0
        self._warm_tree = replace(tree, q_reference=self._q_warm)

    @property
    def state_dependent(self) -> tuple[str, ...]:
        """Loops evaluated at every tick (four-bars, explicit loops); empty: constant ``G``."""
        return tuple(r.name for k, *_ in self._nonlinear for r in self.tree.clusters[k].loops
                     if not isinstance(r.decl, _CONSTANT))

    @classmethod
    def from_urdf(cls, xml: str, config: SensorConfig, loops=None, seed: int = 0, solver: str = "auto",
                  base_dir: str | None = None, strict: bool = False) -> "LoopEstimator":
        """Build the URDF model as :func:`estimator_for` does (floating base per the
        configuration, every configured force-torque joint kept), add the loops (and the URDF's
        mimic joints), plan."""
        model = model_for(xml, config, strict)
        return cls(model, config, loops, seed=seed, solver=solver, base_dir=base_dir)

    # ------------------------------------------------------------------ names and plan
    @property
    def joint_names(self) -> tuple[str, ...]:
        """The independent coordinates (actuated joints): order of ``q``, ``dq``, ``ddq`` and ``tau``."""
        return self.tree.independent_joint_names

    tree_joint_names = _of_estimator("joint_names", "Joints of the spanning tree (URDF joints, then the extra "
                                                    "bodies' joints).")

    @property
    def model(self) -> RobotModel:
        """The spanning-tree model (URDF plus extra bodies)."""
        return self.tree.model

    config = _of_estimator("config", "The sensor configuration (:class:`SensorConfig`).")
    report = _of_estimator("report", "The spanning-tree estimator's plan report.")
    contact_names = _of_estimator("contact_names", "Names of the contacts, in the order of ``contact_wrenches``.")
    contact_frames = _of_estimator("contact_frames", "Frames of the contacts.")
    ft_names = _of_estimator("ft_names", "Names of the force-torque sensors, in the order of an ``ft`` array.")
    measurements = _of_estimator("measurements", "Where each sensor's slice sits in the measurement vector ``y``.")

    def subset_reason(self, mask: int) -> str | None:
        return self.estimator.subset_reason(mask)

    def switching(self):
        return self.estimator.switching()

    def weak_directions(self) -> dict:
        return self.estimator.weak_directions()

    @property
    def has_loops(self) -> bool:
        return True
    kept_joints = _of_estimator("kept_joints", "Fixed joints whose wrench is estimated (``joint_wrenches``).")

    # ------------------------------------------------------------------ tick
    def estimate(self, q, dq, ddq, imu: ImuSample | None = None, ft=None, load_cells=None,
                 joint_torques=None, external_wrenches=None, contacts=None, *, y=None, readings=None,
                 **by_kind) -> LoopEstimate:
        """As :meth:`Estimator.estimate`, with ``q``, ``dq``, ``ddq`` the independent coordinates
        (:attr:`joint_names` order: the actuated joints, rad, m) and ``tau`` of the result the
        actuator efforts. The rotors' angles, rates and accelerations follow from the loops."""
        Y = self._Y
        for k, (x, name) in enumerate(((q, "q"), (dq, "dq"), (ddq, "ddq"))):
            a = np.asarray(x, dtype=np.float64)
            if a.shape != (Y.shape[1],):
                raise ValueError(f"{name}: expected {Y.shape[1]} values (the independent joints), got shape {a.shape}")
            Y[k] = a
        if self._packed is not None:                                  # checks, closes, forms [q q̇ q̈] (compiled)
            p = self._packed
            if loop_state(p.ip, p.fp, p.w, self._nl, self._E):
                self._raise(*self._nl[-2:])
        else:
            self._python_state()
        r = self.estimator.estimate(self._Q[0], self._Q[1], self._Q[2], imu=imu, ft=ft, load_cells=load_cells,
                                    joint_torques=joint_torques, external_wrenches=external_wrenches,
                                    contacts=contacts, y=y, readings=readings, **by_kind)
        np.dot(self._GT, r.tau, out=self._tau)                        # τ_y = Gᵀ τ_q
        return self.result

    def _raise(self, kind: int, index: int):
        """The error of a failed :func:`~.loop_state.loop_state`: a non-finite input or a loop that cannot be
        closed."""
        from ..model.loop_closure import LoopClosureError
        if kind == NOT_FINITE:
            k, i = divmod(int(index), self._Y.shape[1])
            raise ValueError(f"{('q', 'dq', 'ddq')[k]}[{i}] ({self.joint_names[i]}) is not finite; "
                             f"the sample was rejected")
        r = self.tree.loops[int(index)]
        y = {j: float(self._qs[r.q[p]]) for j, p in zip(r.decl.independent, r.ind)}
        if kind == CLOSURE_FAILED:
            raise LoopClosureError(f"loop '{r.name}' cannot be closed at {y}")
        raise LoopClosureError(f"loop '{r.name}' is at a singular configuration at {y} (the closure does not "
                               f"determine its dependent joints)")

    def _python_state(self):
        """``[q q̇ q̈]`` of the tick with the state-dependent loops evaluated in Python (trees with an
        :class:`ExplicitLoop`, whose ``G``, ``g``, ``γ`` are Python callables)."""
        Y = self._Y
        if not np.isfinite(Y).all():
            k, i = np.argwhere(~np.isfinite(Y))[0]
            self._raise(NOT_FINITE, k * Y.shape[1] + i)
        if self._nonlinear:
            self._update_state_dependent()
        np.dot(Y, self._GT, out=self._Q)                              # [q q̇ q̈] = G [y ẏ ÿ] (γ linear, g = 0)
        self._Q[0] += self._q_offset                                  # q = G y + γ(0) (mimic offsets)
        for k, rows, cols, block, q_idx in self._nonlinear:
            self._Q[0, rows] = self._qs[q_idx]                        # q_k = γ_k(y_k)
            self._Q[2, rows] += self._g[k]                            # q̈_k = G_k ÿ_k + g_k

    def _update_state_dependent(self):
        """Close the state-dependent loops at ``(y, ẏ)`` and write their ``G_k`` into ``G`` (Python)."""
        from ..model.loop_closure import LoopClosureError, cluster_constraint, cluster_position
        qs, dqs = self._qs, self._dqs
        qs[self._y_q], dqs[self._y_v] = self._Y[0], self._Y[1]
        self._g = {}
        for k, rows, cols, block, q_idx in self._nonlinear:
            try:
                cluster_position(self._warm_tree, k, qs)
            except LoopClosureError:                                  # e.g. lost the branch: from the reference
                cluster_position(self.tree, k, qs)
            self._q_warm[q_idx] = qs[q_idx]
            Gk, self._g[k] = cluster_constraint(self.tree, k, qs, dqs)
            self.G[block] = Gk
            self._GT[block[1].T, block[0].T] = Gk.T

    def base_state(self, result: LoopEstimate | None = None):
        """:meth:`Estimator.base_state` of the last (or the given) estimate."""
        return self.estimator.base_state(None if result is None else result.tree)


# ---------------------------------------------------------------------------- plan-time checks
def _check_supported(tree: ClusterTree) -> None:
    for r in tree.loops:
        if isinstance(r.decl, ExplicitLoop) and r.decl.gamma is None:
            raise ConfigError(f"{r.decl.describe()}: the estimator needs 'gamma' (q = γ(y)) to turn the "
                              f"independent joint positions into the spanning tree's")


def _check_sensors(tree: ClusterTree, config: SensorConfig) -> None:
    m = tree.model
    for ft in config.ft_sensors:
        if ft.joint:
            if ft.joint not in m.body_joint_names:
                continue                                              # the Estimator reports it
            body = m.body_joint_names.index(ft.joint)
        else:
            try:
                body = m.ft_sensor(ft.name).body
            except ValueError:
                continue
        c = tree.cluster_of(body)
        if c.loops:
            raise ConfigError(
                f"force-torque sensor '{ft.name}' (joint '{m.body_joint_names[body]}') lies inside the cluster of "
                f"loop(s) {', '.join(repr(r.name) for r in c.loops)} (bodies "
                f"{[m.body_names[i] for i in c.bodies]}): the loop closes across the sensor, whose reading then "
                f"includes closure forces; attach the loop's extra bodies on one side of the sensor")
    looped = {}
    for c in tree.clusters:
        for r in c.loops:
            for i in c.bodies:
                looped.setdefault(m.body_joint_names[i], r.name)
    for j in config.joint_torque_sensors:
        if j in looped:
            raise ConfigError(f"joint-torque sensor on joint '{j}': the joint belongs to the cluster of loop "
                              f"'{looped[j]}', where a joint torque is not separated from the closure forces")


def _joint_G(tree: ClusterTree, tree_joints) -> np.ndarray:
    """Constant ``G`` restricted to joints: rows in ``tree_joints`` order, columns in
    ``tree.independent_joint_names`` order (rows of the independent joints are the identity)."""
    from ..model.loop_closure import cluster_constraint
    m = tree.model
    Gfull = np.zeros((tree.nv, tree.nvy))
    for c in tree.clusters:
        Gfull[np.ix_(c.v_idx, c.y_v)] = cluster_constraint(tree, c.index, tree.q_reference.copy())[0]
    rows = [int(m.v_idx[m.body_joint_names.index(j)]) for j in tree_joints]
    ypos = {int(v): k for k, v in enumerate(tree.y_v_idx)}
    cols = [ypos[int(m.v_idx[m.body_joint_names.index(j)])] for j in tree.independent_joint_names]
    return np.ascontiguousarray(Gfull[np.ix_(rows, cols)])


def _joint_offset(tree: ClusterTree, tree_joints) -> np.ndarray:
    """``γ(0)`` of the constant loops on ``tree_joints`` (the offsets of mimic joints; zero for
    rotors and transmissions without offset): ``q = G y + γ(0)``."""
    from ..model.loop_closure import loop_position
    m = tree.model
    q = np.zeros(m.nq)
    for r in tree.loops:
        if isinstance(r.decl, _CONSTANT):
            loop_position(tree, r, q)
    return q[[int(m.q_idx[m.body_joint_names.index(j)]) for j in tree_joints]]


def model_for(xml: str, config: SensorConfig, strict: bool = False) -> RobotModel:
    """The URDF model an estimator of ``config`` needs: floating base per the configuration, every
    configured force-torque joint kept (``strict``: see :meth:`RobotModel.from_urdf`)."""
    joints = {ft.joint: ft.name for ft in config.ft_sensors if ft.joint}
    try:
        return RobotModel.from_urdf(xml, floating_base=config.floating_base, keep_fixed=list(joints), strict=strict)
    except ModelError as exc:
        joint = getattr(exc, "joint", None)
        if joint not in joints:
            raise
        raise ConfigError(f"parameter 'ft.{joints[joint]}.joint': {exc}") from None


def estimator_for(xml: str, config: SensorConfig, base_dir: str | None = None, strict: bool = False, seed: int = 0,
                  solver: str = "auto") -> EstimatorInterface:
    """The estimator a robot description and a sensor configuration ask for, planned: the model
    built from the URDF (floating base per the configuration, every configured force-torque joint
    kept; ``strict``: see :meth:`RobotModel.from_urdf`), then a :class:`LoopEstimator` when the
    configuration declares loops (``loops`` / ``bodies`` / ``loops_file``, relative paths from
    ``base_dir``) or the URDF has mimic joints (its joints are then the independent ones, and the
    effort of a driving joint is the actuator effort ``τ_driver + Σ multiplier · τ_mimic``), else
    :func:`~.contacts.make_estimator`'s (fixed or switching contacts). The node and the replay
    plan through this; ``seed`` and ``solver``: see :class:`~.estimator.Estimator`."""
    loops = LoopConfig.from_sensor_parameters(config.node, base_dir)
    model = model_for(xml, config, strict)
    if loops.loops or loops.bodies or model.mimic_joints:
        return LoopEstimator(model, config, loops, seed=seed, solver=solver, base_dir=base_dir)
    return make_estimator(model, config, seed=seed, solver=solver)
