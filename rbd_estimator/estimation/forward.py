"""Forward dynamics through Nori's sparse machinery (§V-B, §V-D, eq. 15).

The unknowns are ``a_i``, ``f_i`` and ``q̈_i``; the known torques enter through the rows
``(14τ_i): S_iᵀ f_i = τ_i`` and the known external wrenches through the right-hand side of (3f).
Unlike inverse dynamics the matrix is not triangularisable (Nori §V-C: the ABA is more than a
permutation), so the plan yields irreducible blocks that are factorised with static pivots.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..dynamics.kinematics import S_FREE, external_forces
from ..dynamics.spatial_jit import joint_transform
from ..jit import njit
from ..model.robot_model import FREE, RobotModel
from . import kinematics as kin
from .layout import motion_axes
from .plan import StaticLU, plan_static_lu
from .sparse_lu import gather, lu_solve, numeric_lu

_IDENTITY_JOINT = np.array([0.0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0])   # axis, E_T = 1, r_T = 0


class SparseForwardDynamics:
    """``q̈ = FwdD(model, q, q̇, τ, f^x)`` by a planned sparse LU of eq. (15).

    ``q``, ``dq``, ``tau`` and the result follow pinocchio's layout (see :class:`RobotModel`);
    ``f_ext`` maps a link or frame to the wrench ``[fx, fy, fz, tx, ty, tz]`` in that frame.
    """

    def __init__(self, model: RobotModel, seed: int = 0):
        self.model = m = model
        NB = m.NB
        self._col, n = {}, 0
        for i in range(NB):
            for kind, size in (("a", 6), ("f", 6), ("qdd", int(m.joint_dofs[i]))):
                self._col[(kind, i)] = n
                n += size
        self.n = n
        o = 1
        self._r_c, o = o, o + 6 * NB
        self._r_nu, o = o, o + 6 * NB
        self._r_xa0, o = o, o + 6 * NB
        self._r_tau, o = o, o + m.nv
        self._r_fx, o = o, o + 6 * NB
        self._r_g0, o = o, o + 6
        self.n_rsrc = o
        trip, rhs = self._system()
        self._S = motion_axes(m)
        self._S_free = S_FREE
        self._E, self._r = np.zeros((NB, 3, 3)), np.zeros((NB, 3))
        self._X = np.zeros((NB, 6, 6))
        self._work = np.zeros(51)
        self._fx = np.zeros((NB, 6))
        self._offsets = np.array([self._r_c, self._r_nu, self._r_xa0, self._r_tau, self._r_fx, self._r_g0],
                                 dtype=np.int64)
        self._v, self._c, self._nu, self._Xa0 = (np.zeros((NB, 6)) for _ in range(4))
        self._a0 = np.concatenate([np.zeros(3), -m.gravity])
        self._src, self._rsrc = np.zeros(1 + 36 * NB), np.zeros(self.n_rsrc)
        self._src[0] = self._rsrc[0] = 1.0
        rng = np.random.default_rng(seed)
        q = m.random_configuration(rng, scale=np.pi)
        self._kinematics(q, rng.normal(size=m.nv))
        self.lu: StaticLU = plan_static_lu(trip, n, len(self._src), self._src.copy())
        r, c, v = zip(*rhs)
        self._GR = self.lu.permute_rows(sp.csr_matrix((v, (r, c)), shape=(n, self.n_rsrc)))
        rows = [self._col[("qdd", i)] + k for i in range(NB) for k in range(m.joint_dofs[i])]
        outs = [m.v_idx[i] + k for i in range(NB) for k in range(m.joint_dofs[i])]
        self._GO = self.lu.permute_cols(sp.csr_matrix((np.ones(len(rows)), (outs, rows)), shape=(m.nv, n)))
        self._Ax = np.zeros(self.lu.nnz)
        self._Lx, self._Ux = np.zeros(len(self.lu.Li)), np.zeros(len(self.lu.Ui))
        self._w, self._x, self._out = np.zeros(n), np.zeros(n), np.zeros(m.nv)

    def _system(self):
        """Triplets ``(row, col, src, coef)`` of eq. (15) and the right-hand-side map."""
        m, col = self.model, self._col
        trip, rhs, row = [], [], 0
        S_all = motion_axes(m)
        for i in range(m.NB):
            p = m.parents[i]
            S = S_FREE if m.joint_types[i] == FREE else S_all[i][:, None][:, :m.joint_dofs[i]]
            # (3a_i): a_i - X_i a_λ - S_i q̈_i = c_i + X_i a_0 (root) or ⁰X_w a_w (free base)
            for a in range(6):
                trip.append((row + a, col[("a", i)] + a, 0, 1.0))
                for k in range(S.shape[1]):
                    if S[a, k]:
                        trip.append((row + a, col[("qdd", i)] + k, 0, -float(S[a, k])))
                if p >= 0:
                    for b in range(6):
                        if not (a < 3 <= b):          # the upper-right block of ⁱX_λ is zero
                            trip.append((row + a, col[("a", p)] + b, 1 + 36 * i + 6 * a + b, -1.0))
                rhs.append((row + a, self._r_c + 6 * i + a, 1.0))
                rhs.append((row + a, (self._r_g0 if m.joint_types[i] == FREE else self._r_xa0 + 6 * i) + a, 1.0))
            row += 6
            # (3f_i): I_i a_i - f_i + Σ_j X_jᵀ f_j = -ν_i + f_i^x
            for a in range(6):
                for b in range(6):
                    if m.inertias[i][a, b]:
                        trip.append((row + a, col[("a", i)] + b, 0, float(m.inertias[i][a, b])))
                trip.append((row + a, col[("f", i)] + a, 0, -1.0))
                rhs.append((row + a, self._r_nu + 6 * i + a, -1.0))
                rhs.append((row + a, self._r_fx + 6 * i + a, 1.0))
            for j in np.flatnonzero(m.parents == i):
                for a in range(6):
                    for b in range(6):
                        if not (b < 3 <= a):
                            trip.append((row + a, col[("f", j)] + b, 1 + 36 * j + 6 * b + a, 1.0))
            row += 6
            # (14τ_i): S_iᵀ f_i = τ_i ; a kept fixed joint has no row
            for k in range(S.shape[1]):
                for a in range(6):
                    if S[a, k]:
                        trip.append((row + k, col[("f", i)] + a, 0, float(S[a, k])))
                rhs.append((row + k, self._r_tau + m.v_idx[i] + k, 1.0))
            row += S.shape[1]
        assert row == self.n
        return trip, rhs

    def _kinematics(self, q, dq):
        """Transforms, velocities and bias terms of ``(q, q̇)`` into the sources (for the plan)."""
        ei, ef = np.zeros(1, dtype=np.int64), np.zeros(1)
        m = self.model
        _forward_kernel(m.joint_types, m.axes, m.E_tree, m.r_tree, m.q_idx, m.parents, self._S, m.v_idx, m.inertias,
                        m.floating_base, np.asarray(q, dtype=float), np.asarray(dq, dtype=float), np.zeros(m.nv),
                        self._fx, self._a0, self._E, self._r, self._X, self._work, self._v, self._c, self._nu,
                        self._Xa0, self._src, self._rsrc, self._offsets, False,
                        *(ei, ei, ef) * 3, ei, ei, ef, ei, ei, ef, ei, ei, ef, ef, ef, ef)

    def compute(self, q, dq, tau, f_ext=None) -> np.ndarray:
        """Joint (and base) accelerations ``q̈`` (nv,), rad/s² or m/s². Returns a new array.

        One compiled call (kinematics, sources, right-hand side, numeric LU and solve) that
        allocates nothing; ``f_ext`` is mapped to body forces beforehand."""
        m = self.model
        q, dq, tau = (_vector(x, n, name) for x, n, name in ((q, m.nq, "q"), (dq, m.nv, "dq"), (tau, m.nv, "tau")))
        external_forces(m, f_ext, out=self._fx)
        _forward_kernel(m.joint_types, m.axes, m.E_tree, m.r_tree, m.q_idx, m.parents, self._S, m.v_idx, m.inertias,
                        m.floating_base, q, dq, tau, self._fx, self._a0, self._E, self._r, self._X, self._work,
                        self._v, self._c, self._nu, self._Xa0, self._src, self._rsrc, self._offsets, True,
                        *self._solve_args())
        return self._out.copy()

    def _solve_args(self):
        lu = self.lu
        return (*lu.G, *self._GR, *self._GO, lu.Ap, lu.Ai, self._Ax, lu.Lp, lu.Li, self._Lx, lu.Up, lu.Ui, self._Ux,
                self._w, self._x, self._out)


def _vector(x, n: int, name: str) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"SparseForwardDynamics.compute: {name} has shape {x.shape}, expected ({n},)")
    return x


@njit
def _forward_kernel(jtype, axes, E_tree, r_tree, q_idx, parents, S, v_idx, inertias, floating, q, dq, tau, fx, a0,
                    E, r, X, work, v, c, nu, Xa0, src, rsrc, off, solve,
                    Gp, Gi, Gx, Rp, Ri, Rx, Op, Oi, Ox, Ap, Ai, Ax, Lp, Li, Lx, Up, Ui, Ux, w, x, out):
    """Eq. (15) for ``(q, q̇, τ, f^x)``: ``X_i`` into the matrix sources ``src``, ``c_i``, ``ν_i``,
    ``X_i a_0``, ``τ``, ``f^x`` and ``⁰X_w a_w`` into the right-hand-side sources ``rsrc``; with
    ``solve``, the matrix values, the numeric LU, the solve and the gather of ``q̈`` into ``out``.
    ``off``: offsets of c, ν, X a_0, τ, f^x and ⁰X_w a_w in ``rsrc``."""
    NB = parents.shape[0]
    kin.joint_transforms(jtype, axes, E_tree, r_tree, q_idx, q, E, r, work[:9].reshape((3, 3)))
    for i in range(NB):
        kin.plux_into(E[i], r[i], X[i])
        for k in range(36):
            src[1 + 36 * i + k] = X[i, k // 6, k % 6]
    v0 = work[21:27]
    v0[:] = 0.0
    if floating:                                                    # S_FREE q̇_base: [ω; v_lin]
        v0[:3] = dq[3:6]
        v0[3:] = dq[:3]
    kin.velocity_pass(parents, jtype, S, v_idx, X, dq, v0, a0, v, c, nu, Xa0, inertias, work[9:15], work[15:21])
    for i in range(NB):
        for k in range(6):
            rsrc[off[0] + 6 * i + k] = c[i, k]
            rsrc[off[1] + 6 * i + k] = nu[i, k]
            rsrc[off[2] + 6 * i + k] = Xa0[i, k]
            rsrc[off[4] + 6 * i + k] = fx[i, k]
    for k in range(tau.shape[0]):
        rsrc[off[3] + k] = tau[k]
    if floating:                                                    # ⁰X_w a_w: gravity in base coordinates
        work[36:51] = _IDENTITY_JOINT                               # X_T = 1: E_b = R(quat)ᵀ
        joint_transform(FREE, work, 36, q, 0, work, 24)
        for a in range(3):
            rsrc[off[5] + 3 + a] = work[24 + 3 * a] * a0[3] + work[25 + 3 * a] * a0[4] + work[26 + 3 * a] * a0[5]
    if solve:
        gather(Gp, Gi, Gx, src, Ax)
        gather(Rp, Ri, Rx, rsrc, x)
        numeric_lu(Ap, Ai, Ax, Lp, Li, Lx, Up, Ui, Ux, w)
        lu_solve(Lp, Li, Lx, Up, Ui, Ux, x)
        gather(Op, Oi, Ox, x, out)
