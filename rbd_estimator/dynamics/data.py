"""The compiled dynamics behind the public names, and :class:`DynamicsData`, their buffers (pinocchio's Data).

:class:`DynamicsData` packs a :class:`RobotModel` into the flat arrays of :mod:`.tree_jit` once and
holds every work buffer, so a call converts and checks its arguments in a few attribute tests and
runs one compiled kernel that allocates nothing. Its methods return its own output buffers
(overwritten by the next call of the same method), as pinocchio's ``data.tau``. The module
functions :func:`rnea`, :func:`aba`, :func:`crba`, :func:`minverse` and
:func:`forward_dynamics_ltdl` take the model and, as pinocchio's algorithms, an optional ``data``
(``DynamicsData(model)``, made by the caller; without it each call makes its own): the model stays
constant and shared, the buffers are the caller's. Making one packs the model: about 0.7 ms for iCub,
160 times the RNEA itself, so hold one for repeated calls (the result of a call with ``data`` is its
buffer, as pinocchio's; without, a new array). One ``DynamicsData`` must not be used by two threads at
once: give each thread its own.
"""
from __future__ import annotations

import numpy as np

from ..kernels.joints import J_SIZE, joint_record
from ..model.mimic import mimic_map
from ..model.robot_model import RobotModel
from ..spatial import skew
from .kinematics import external_forces, gravity_acceleration, motion_subspace
from .mimic import crba_independent, forward_independent, minverse_independent, rnea_independent
from .minverse_jit import minverse_kernel
from .tree_jit import (COL0, COM, DOFS, ICOM, INERTIA, JNT, JTYPE, LEAF, MASS, MF_SIZE, MI_SIZE, PARENT, PBLK,
                       QIDX, RIGID, S_, SUB_HI, SUB_LO, VIDX, W_SIZE, aba_kernel, crba_kernel,
                       forward_dynamics_ltdl_kernel, rnea_kernel)

_F64 = np.dtype(np.float64)


class DynamicsData:
    """Work buffers of the compiled RNEA, ABA, CRBA, M⁻¹ and CRBA + LTDL forward dynamics of one model.

    Same inputs, units and results as the module functions (pinocchio's layout, see
    :class:`RobotModel`; ``f_ext``: link or frame name → ``[fx, fy, fz, tx, ty, tz]`` in that
    frame, N and N·m), but each method returns this object's buffer (``tau``, ``ddq``, ``H``,
    ``Minv``), overwritten by the next call. Mimic joints: the tree's layout only (every joint a
    coordinate); the module functions also take pinocchio's mimic layout.
    """

    def __init__(self, model: RobotModel):
        self.model = m = model
        NB, nv = m.NB, m.nv
        self.MI = np.zeros((NB, MI_SIZE), dtype=np.int64)
        self.MF = np.zeros(NB * MF_SIZE)
        MF = self.MF.reshape(NB, MF_SIZE)
        lo, hi, col0, self.depth_first = _column_ranges(m)
        parents = np.asarray(m.parents)
        leaf = np.ones(NB, dtype=bool)
        leaf[parents[parents >= 0]] = False
        for i in range(NB):
            p = m.parents[i]
            self.MI[i, [PARENT, JTYPE, QIDX, VIDX, DOFS, SUB_LO, SUB_HI, COL0, LEAF]] = (
                p, m.joint_types[i], m.q_idx[i], m.v_idx[i], m.joint_dofs[i], lo[i], hi[i], col0[i], leaf[i])
            self.MI[i, PBLK] = i if m.joint_dofs[i] or p < 0 else self.MI[p, PBLK]
            S = np.zeros((6, 6))
            S[:, :m.joint_dofs[i]] = motion_subspace(m, i)
            MF[i, S_:S_ + 36] = S.T.reshape(-1)                 # column-major
            MF[i, JNT:JNT + J_SIZE] = joint_record(m.joint_types[i], m.axes[i], m.E_tree[i], m.r_tree[i])
            MF[i, INERTIA:INERTIA + 36] = np.asarray(m.inertias[i]).reshape(-1)
            self.MI[i, RIGID] = _rigid_body_form(np.asarray(m.inertias[i], dtype=float), MF[i])
        self.mimic = mimic_map(m)
        self._nq, self._nv = (m.nq,), (nv,)
        self.a0 = gravity_acceleration(m)
        self.lam = np.ascontiguousarray(m.expanded_parents, dtype=np.int64)
        self.W = np.zeros(NB * W_SIZE)
        self.F, self.P = np.zeros(6 * nv), np.zeros(6 * NB * nv)
        self.fx = np.zeros((NB, 6))
        self._fx_set = False
        self.zero = np.zeros(nv)
        self.tau, self.ddq = np.zeros(nv), np.zeros(nv)
        self.H, self.A, self.Minv = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))

    # ------------------------------------------------------------------ the algorithms
    def rnea(self, q, dq, ddq, f_ext=None) -> np.ndarray:
        """``τ = InvD(q, q̇, q̈, f^x)`` (Nori eq. 6) into ``self.tau`` (nv,): N·m or N per joint;
        for a floating base the first six entries are the base wrench ``[f; n]``."""
        rnea_kernel(self.MI, self.MF, self.W, self._q(q), self._v(dq, "dq"), self._v(ddq, "ddq"),
                    self._forces(f_ext), self.a0, self.tau)
        return self.tau

    def aba(self, q, dq, tau, f_ext=None) -> np.ndarray:
        """``q̈ = FwdD(q, q̇, τ, f^x)`` (Nori eqs. 12–13) into ``self.ddq`` (nv,)."""
        bad = aba_kernel(self.MI, self.MF, self.W, self._q(q), self._v(dq, "dq"), self._v(tau, "tau"),
                         self._forces(f_ext), self.a0, self.ddq)
        self._raise_if_singular(bad)
        return self.ddq

    def crba(self, q) -> np.ndarray:
        """``H(q)`` (Featherstone eq. 5) into ``self.H`` (nv × nv, exactly symmetric)."""
        crba_kernel(self.MI, self.MF, self.W, self._q(q), self.H)
        return self.H

    def minverse(self, q) -> np.ndarray:
        """``H(q)⁻¹`` by Carpentier's Algorithm 1 into ``self.Minv`` (nv × nv, exactly symmetric).
        The compiled kernel needs the velocity indices of every subtree contiguous (a depth-first
        numbering, as URDF models have); a model numbered otherwise (a spanning tree with extra
        bodies appended, :class:`~rbd_estimator.model.clusters.ClusterTree`) takes the readable
        :func:`.reference.minverse` (same result, allocates)."""
        if not self.depth_first:
            from .minverse import minverse as readable
            self.Minv[:] = readable(self.model, self._q(q))
            return self.Minv
        self._raise_if_singular(minverse_kernel(self.MI, self.MF, self.W, self._q(q), self.F, self.P, self.zero,
                                                self.Minv))
        return self.Minv

    def forward_dynamics_ltdl(self, q, dq, tau, f_ext=None) -> np.ndarray:
        """``q̈`` from ``H q̈ = τ − C`` by CRBA + sparse LTDL (Featherstone eq. 1, App. A) into
        ``self.ddq``; ``self.A`` holds the factors (``D`` on the diagonal, unit ``L`` below it)."""
        bad = forward_dynamics_ltdl_kernel(self.MI, self.MF, self.W, self._q(q), self._v(dq, "dq"),
                                           self._v(tau, "tau"), self._forces(f_ext), self.a0, self.lam, self.A,
                                           self.zero, self.ddq)
        if bad >= 0:
            raise np.linalg.LinAlgError(f"H(q) is not positive definite: pivot of row {bad} (v index) is "
                                        f"{self.A[bad, bad]!r}")
        return self.ddq

    # ------------------------------------------------------------------ argument checks
    def _q(self, q) -> np.ndarray:
        if type(q) is np.ndarray and q.shape == self._nq and q.dtype == _F64 and q.flags.c_contiguous:
            return q
        return _vector(q, self.model.nq, "q", self.model)

    def _v(self, x, what: str) -> np.ndarray:
        if type(x) is np.ndarray and x.shape == self._nv and x.dtype == _F64 and x.flags.c_contiguous:
            return x
        return _vector(x, self.model.nv, what, self.model)

    def _forces(self, f_ext) -> np.ndarray:
        """``f_i^x`` (NB × 6, body coordinates) in ``self.fx``; zeroed once after a call with wrenches."""
        if f_ext:
            external_forces(self.model, f_ext, out=self.fx)
            self._fx_set = True
        elif self._fx_set:
            self.fx[:] = 0.0
            self._fx_set = False
        return self.fx

    def _raise_if_singular(self, body: int) -> None:
        if body >= 0:
            raise np.linalg.LinAlgError(
                f"joint '{self.model.body_joint_names[body]}': S_iᵀ I_iᴬ S_i is not positive definite "
                "(the subtree below it has no inertia along the joint's motion)")


def _rigid_body_form(I: np.ndarray, mf: np.ndarray) -> bool:
    """Write ``m``, ``c`` and ``Ī_c`` of a spatial inertia of the rigid-body form of Featherstone
    eq. 2.63, ``I = [[Ī_c + m c× c×ᵀ, m c×], [m c×ᵀ, m 1]]``, into the body's ``MF`` block; False
    (and nothing written) when ``I`` does not have that form to 1e-12 relative."""
    m = I[3, 3]
    h = np.array([I[2, 4], I[0, 5], I[1, 3]])                       # m c from m c×
    c = h / m if m > 0 else np.zeros(3)
    cx = skew(c)
    mcc = m * cx @ cx.T
    Ic = I[:3, :3] - mcc
    back = np.empty((6, 6))                                          # (np.block costs 10 µs more)
    back[:3, :3], back[:3, 3:], back[3:, :3], back[3:, 3:] = Ic + mcc, m * cx, m * cx.T, m * np.eye(3)
    if not abs(back - I).max() <= 1e-12 * max(1.0, abs(I).max()):
        return False
    mf[MASS], mf[COM:COM + 3] = m, c
    for a in range(3):
        mf[ICOM + 6 * a:ICOM + 6 * a + 3] = Ic[a]
    return True


def _vector(x, n: int, what: str, model: RobotModel) -> np.ndarray:
    """``x`` as a contiguous float64 (n,) array (no copy when it already is one)."""
    if type(x) is not np.ndarray or x.dtype != _F64 or not x.flags.c_contiguous:
        x = np.ascontiguousarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"{what} has shape {x.shape}; model '{model.name}' expects ({n},) "
                         "(pinocchio's layout, see RobotModel)")
    return x


def _column_ranges(model: RobotModel):
    """Per body: ``[lo, hi)``, the ``v`` indices of its subtree ν(i) (contiguous because the numbering
    is depth-first), and the first column of its rows in the upper triangle of M⁻¹ (that of its
    nearest ancestor with a row for a 0-DoF body)."""
    NB, nv = model.NB, model.nv
    lo = np.full(NB, nv, dtype=np.int64)
    hi = np.zeros(NB, dtype=np.int64)
    count = np.zeros(NB, dtype=np.int64)
    col0 = np.zeros(NB, dtype=np.int64)
    for i in range(NB - 1, -1, -1):
        n = model.joint_dofs[i]
        if n:
            lo[i], hi[i] = min(lo[i], model.v_idx[i]), max(hi[i], model.v_idx[i] + n)
        count[i] += n
        p = model.parents[i]
        if p >= 0:
            lo[p], hi[p], count[p] = min(lo[p], lo[i]), max(hi[p], hi[i]), count[p] + count[i]
    lo = np.minimum(lo, hi)
    depth_first = bool(np.all(hi - lo == count))
    for i in range(NB):
        p = model.parents[i]
        col0[i] = model.v_idx[i] if model.joint_dofs[i] else (col0[p] if p >= 0 else 0)
    return lo, hi, col0, depth_first


def _data_for(model: RobotModel, data: DynamicsData | None) -> DynamicsData:
    """``data`` (checked to be ``model``'s), or a new :class:`DynamicsData` of ``model``."""
    if data is None:
        return DynamicsData(model)
    if data.model is not model:
        raise ValueError(f"data is the DynamicsData of model '{data.model.name}', not of the model given "
                         f"('{model.name}'): make one with DynamicsData(model)")
    return data


def _independent(d: DynamicsData, q):
    """The model's mimic map when ``q`` is in its independent layout (see :mod:`.mimic`), else None."""
    return d.mimic if d.mimic is not None and np.shape(q) == (d.mimic.nq,) else None


def rnea(model: RobotModel, q, dq, ddq, f_ext=None, data: DynamicsData | None = None) -> np.ndarray:
    """Inverse dynamics ``τ = InvD(model, q, q̇, q̈, f^x)`` (Nori eq. 6), compiled.

    ``q``, ``dq``, ``ddq`` in pinocchio's layout (see :class:`RobotModel`; with mimic joints also
    pinocchio's mimic layout, see :mod:`.mimic`); ``f_ext`` maps a link or frame name to the wrench
    ``[fx, fy, fz, tx, ty, tz]`` (N, N·m) acting on it, expressed in that frame. Returns ``τ``
    (nv,): N·m or N per joint; for a floating base the first six entries are the base wrench
    ``[f; n]`` in base coordinates. Reference: :func:`.reference.rnea`.

    ``data``: a :class:`DynamicsData` of ``model`` to work in, whose ``tau`` is then the
    result (overwritten by its next call); without it the call makes its own (see the module docstring).
    """
    d = _data_for(model, data)
    m = _independent(d, q)
    return d.rnea(q, dq, ddq, f_ext) if m is None else rnea_independent(m, d.rnea, q, dq, ddq, f_ext)


def aba(model: RobotModel, q, dq, tau, f_ext=None, data: DynamicsData | None = None) -> np.ndarray:
    """Forward dynamics ``q̈ = FwdD(model, q, q̇, τ, f^x)`` (Nori eq. 12) by the ABA, compiled.

    Inputs as :func:`rnea` with ``tau`` (nv,) in place of ``ddq``; returns ``q̈`` (nv,): rad/s²
    or m/s²; for a floating base the first six entries are ``[v̇_lin; ω̇]`` in base coordinates, as
    pinocchio's ``aba``. Reference: :func:`.reference.aba`.

    ``data``: a :class:`DynamicsData` of ``model`` to work in, whose ``ddq`` is then the
    result (overwritten by its next call); without it the call makes its own (see the module docstring).
    """
    d = _data_for(model, data)
    m = _independent(d, q)
    return d.aba(q, dq, tau, f_ext) if m is None else forward_independent(m, d.rnea, d.crba, q, dq, tau, f_ext)


def crba(model: RobotModel, q, data: DynamicsData | None = None) -> np.ndarray:
    """Joint-space inertia matrix ``H(q)`` (Featherstone eq. 5), compiled: nv × nv, exactly
    symmetric, kg·m² / kg, rows in ``v`` order; branch-induced zeros (eq. 6) are exact zeros.
    Reference: :func:`.reference.crba`.

    ``data``: a :class:`DynamicsData` of ``model`` to work in, whose ``H`` is then the
    result (overwritten by its next call); without it the call makes its own (see the module docstring).
    """
    d = _data_for(model, data)
    m = _independent(d, q)
    return d.crba(q) if m is None else crba_independent(m, d.crba, q)


def minverse(model: RobotModel, q, data: DynamicsData | None = None) -> np.ndarray:
    """``H(q)⁻¹`` (nv × nv, exactly symmetric) by Carpentier's Algorithm 1, compiled; equals
    pinocchio's ``computeMinverse`` with its lower triangle filled. Reference:
    :func:`.reference.minverse`.

    ``data``: a :class:`DynamicsData` of ``model`` to work in, whose ``Minv`` is then the
    result (overwritten by its next call); without it the call makes its own (see the module docstring).
    """
    d = _data_for(model, data)
    m = _independent(d, q)
    return d.minverse(q) if m is None else minverse_independent(m, d.crba, q)


def forward_dynamics_ltdl(model: RobotModel, q, dq, tau, f_ext=None, data: DynamicsData | None = None) -> np.ndarray:
    """``q̈`` (nv,) from ``H q̈ = τ − C`` by CRBA + RNEA + sparse LTDL (Featherstone eq. 1), compiled;
    same inputs, units and result as :func:`aba`. Reference: :func:`.reference.forward_dynamics_ltdl`.

    ``data``: a :class:`DynamicsData` of ``model`` to work in, whose ``ddq`` is then the
    result (overwritten by its next call); without it the call makes its own (see the module docstring).
    """
    d = _data_for(model, data)
    m = _independent(d, q)
    return (d.forward_dynamics_ltdl(q, dq, tau, f_ext) if m is None
            else forward_independent(m, d.rnea, d.crba, q, dq, tau, f_ext))
