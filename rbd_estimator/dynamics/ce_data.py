"""The compiled constraint-embedding dynamics bound to a cluster tree (Chignoli et al. Algorithm 1
and §V; kernels in :mod:`.ce_compiled`): :class:`ClusterDynamics` holds the packed tree (constant)
and the work buffers (overwritten per call), as pinocchio's ``Model``/``Data``; :func:`ce_aba` and
:func:`ce_rnea` keep the reference functions' signatures, with an optional ``data`` (a
:class:`ClusterDynamics` the caller makes; nothing is kept on the tree), falling back to the
readable algorithms for a tree with an explicit loop. Units: rad, m, s, N, N·m."""
from __future__ import annotations

import numpy as np

from ..model.cluster_packing import CLOSURE_FAILED, NOT_FINITE, PackedClusterTree, packable
from ..model.clusters import ClusterTree
from ..model.loop_closure import LoopClosureError
from .ce_compiled import M_EFFORT_SPANNING, M_INDEPENDENT, M_OUTPUT_SPANNING, ce_aba_kernel, ce_rnea_kernel
from .kinematics import external_forces

__all__ = ["ClusterDynamics", "ce_aba", "ce_rnea"]


# ---------------------------------------------------------------------------- model-bound API
class ClusterDynamics:
    """CE-ABA and CE-RNEA of one cluster tree, compiled, with their work buffers (pinocchio's
    ``Model``/``Data`` split: the packed tree is constant, the buffers are overwritten per call).

    ``aba``/``rnea`` take the arguments of :func:`ce_aba` / :func:`ce_rnea` (``f_ext`` also as a
    per-body ``NB × 6`` array of body-coordinate spatial forces ``[n; f]``) and return views of
    the buffers: copy what you keep. Raises ``ValueError`` naming the loop for a tree with an
    :class:`~rbd_estimator.model.loops.ExplicitLoop`."""

    def __init__(self, tree: ClusterTree):
        self.tree = tree
        self.packed = PackedClusterTree(tree)
        self.ddq = np.zeros(tree.nv)                                # q̈ (spanning)
        self.ddy = np.zeros(tree.nvy)                               # ÿ
        self.tau = np.zeros(tree.nvy)                               # τ
        self.tau_tree = np.zeros(tree.nv)                           # τ_tree
        self._fx = np.zeros(tree.model.NB * 6)
        self._zero_fx = np.zeros(tree.model.NB * 6)

    def aba(self, q, dq, tau, f_ext=None, *, state: str = "independent", effort: str | None = None,
            output: str | None = None) -> np.ndarray:
        """Forward dynamics (Algorithm 1): :func:`rbd_estimator.dynamics.ce_aba.ce_aba`'s arguments;
        returns ``ÿ`` (``self.ddy``) or ``q̈`` (``self.ddq``) per ``output``."""
        t = self.tree
        effort, output = effort or state, output or state
        mode = _mode(state) | (M_EFFORT_SPANNING if _kind(effort, "effort") == "spanning" else 0) \
            | (M_OUTPUT_SPANNING if _kind(output, "output") == "spanning" else 0)
        q, dq = self._state(q, dq, state)
        tau = _vector(tau, t.nvy if effort == "independent" else t.nv, "tau", effort)
        fx = self._forces(f_ext)
        status = ce_aba_kernel(self.packed.ip, self.packed.fp, self.packed.w, q, dq, tau, fx, mode, self.ddq, self.ddy)
        if status:
            self._raise(status, self._inputs(state, q, dq, tau, fx))
        return self.ddq if output == "spanning" else self.ddy

    def rnea(self, q, dq, ddq, f_ext=None, *, state: str = "independent", output: str = "independent") -> np.ndarray:
        """Inverse dynamics (§V): :func:`rbd_estimator.dynamics.ce_rnea.ce_rnea`'s arguments; returns
        ``τ`` (``self.tau``) or ``τ_tree`` (``self.tau_tree``) per ``output``."""
        t = self.tree
        mode = _mode(state) | (M_OUTPUT_SPANNING if _kind(output, "output") == "spanning" else 0)
        q, dq = self._state(q, dq, state)
        ddq = _vector(ddq, t.nvy if state == "independent" else t.nv, "ddq", state)
        fx = self._forces(f_ext)
        status = ce_rnea_kernel(self.packed.ip, self.packed.fp, self.packed.w, q, dq, ddq, fx, mode, self.tau,
                                self.tau_tree)
        if status:
            self._raise(status, self._inputs(state, q, dq, ddq, fx, "ddq"))
        return self.tau_tree if output == "spanning" else self.tau

    # ------------------------------------------------------------------ input conversion (plain code)
    def _state(self, q, dq, state):
        t = self.tree
        if state == "independent":
            return _vector(q, t.ny, "y", state), _vector(dq, t.nvy, "dy", state)
        return _vector(q, t.nq, "q", state), _vector(dq, t.nv, "dq", state)

    @staticmethod
    def _inputs(state, q, dq, x, fx, x_name="tau") -> dict:
        names = ("y", "dy") if state == "independent" else ("q", "dq")
        return {names[0]: q, names[1]: dq, x_name: x, "f_ext": fx}

    def _forces(self, f_ext):
        if f_ext is None:
            return self._zero_fx
        if isinstance(f_ext, np.ndarray) and f_ext.shape == (self.tree.model.NB, 6):
            self._fx[:] = f_ext.ravel()
        else:
            external_forces(self.tree.model, f_ext, out=self._fx.reshape(-1, 6))
        return self._fx

    def _raise(self, status: int, inputs: dict) -> None:
        """The error of a kernel's non-zero status: the non-finite input, or the loop (named)."""
        if status == NOT_FINITE:
            for name, x in inputs.items():
                if not np.isfinite(x).all():
                    raise ValueError(f"{name} has non-finite entries")
        if status:
            r = self.tree.loops[status // 4]
            if status % 4 == CLOSURE_FAILED:
                raise LoopClosureError(f"loop '{r.name}' cannot be closed at the given independent coordinates")
            raise LoopClosureError(f"loop '{r.name}' is at a singular configuration (the closure does not "
                                   f"determine its dependent joints)")


_STATES = ("independent", "spanning")


def _kind(kind: str, name: str) -> str:
    if kind not in _STATES:
        raise ValueError(f"{name} must be one of {_STATES}, got {kind!r}")
    return kind


def _mode(state: str) -> int:
    return M_INDEPENDENT if _kind(state, "state") == "independent" else 0


def _vector(x, n: int, name: str, kind: str) -> np.ndarray:
    """``x`` as a float64 vector of length ``n`` (errors name the argument; the kernels check that
    it is finite)."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (n,):
        raise ValueError(f"{name} has shape {x.shape}, expected ({n},) for {kind} coordinates")
    return x


def _data_for(tree: ClusterTree, data: ClusterDynamics | None) -> ClusterDynamics | None:
    """``data`` (checked to be ``tree``'s), or a new :class:`ClusterDynamics` of ``tree``, or
    ``None`` when the tree has no compiled form (an :class:`ExplicitLoop`: the readable algorithm)."""
    if data is not None:
        if data.tree is not tree:
            raise ValueError("data is the ClusterDynamics of another cluster tree: make one with ClusterDynamics(tree)")
        return data
    return ClusterDynamics(tree) if packable(tree) is None else None


def ce_aba(tree: ClusterTree, q, dq, tau, f_ext=None, *, state: str = "independent", effort: str | None = None,
           output: str | None = None, data: ClusterDynamics | None = None) -> np.ndarray:
    """Forward dynamics of a robot with loops (Algorithm 1), compiled: the signature, conventions
    and result of :func:`rbd_estimator.dynamics.ce_aba.ce_aba`. ``data``: a :class:`ClusterDynamics`
    of ``tree`` to work in (pinocchio's ``Data``; the result is then its buffer, overwritten by its
    next call); without it the call makes its own (packing the tree: hold one for repeated calls)
    and the result is a new array."""
    d = _data_for(tree, data)
    if d is None:
        from .ce_aba import ce_aba as reference
        return reference(tree, q, dq, tau, f_ext, state=state, effort=effort, output=output)
    return d.aba(q, dq, tau, f_ext, state=state, effort=effort, output=output)


def ce_rnea(tree: ClusterTree, q, dq, ddq, f_ext=None, *, state: str = "independent",
            output: str = "independent", data: ClusterDynamics | None = None) -> np.ndarray:
    """Inverse dynamics of a robot with loops (§V), compiled: the signature, conventions and result
    of :func:`rbd_estimator.dynamics.ce_rnea.ce_rnea`; ``data`` as for :func:`ce_aba`."""
    d = _data_for(tree, data)
    if d is None:
        from .ce_rnea import ce_rnea as reference
        return reference(tree, q, dq, ddq, f_ext, state=state, output=output)
    return d.rnea(q, dq, ddq, f_ext, state=state, output=output)
