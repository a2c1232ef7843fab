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
from ..model.forward_kinematics import K_WTMP, KinematicTree, motion_axes
from ..model.robot_model import FREE, RobotModel
from ..spatial import quat_to_R
from . import kinematics as kin
from .plan import StaticLU, plan_static_lu
from .sparse_lu import gather, lu_solve, numeric_lu


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
        one_dof = m.joint_dofs == 1
        self._tree = KinematicTree(m, np.where(one_dof, m.q_idx, -1), np.where(one_dof, m.v_idx, -1))
        self._kin = self._tree.packed() + (np.zeros(9 * NB), np.zeros(6 * NB))   # ip, fp, w, E, V
        self._a0 = self._tree.a_root
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
        """``src`` and the kinematic part of ``rsrc`` (:func:`.kinematics.sources`) for ``(q, q̇)``."""
        m, (ip, fp, w, E, V) = self.model, self._kin
        w[ip[K_WTMP]:ip[K_WTMP] + 6] = S_FREE @ dq[:6] if m.floating_base else 0.0   # v_0 of the free flyer
        kin.sources(ip, fp, w, E, V, q, dq, dq[:3], self._src, self._rsrc, self._r_c, self._r_nu, self._r_xa0, 0)
        if m.floating_base:     # ⁰X_w a_w: gravity in base coordinates
            self._rsrc[self._r_g0 + 3:self._r_g0 + 6] = quat_to_R(q[3:7]).T @ self._a0[3:]

    def compute(self, q, dq, tau, f_ext=None) -> np.ndarray:
        """Joint (and base) accelerations ``q̈`` (nv,). Returns a new array."""
        m = self.model
        q, dq, tau = (np.asarray(x, dtype=float) for x in (q, dq, tau))
        self._kinematics(q, dq)
        NB = m.NB
        rs = self._rsrc
        rs[self._r_tau:self._r_tau + m.nv] = tau
        rs[self._r_fx:self._r_fx + 6 * NB] = external_forces(m, f_ext).reshape(-1)
        lu = self.lu
        gather(*lu.G, self._src, self._Ax)
        gather(*self._GR, rs, self._x)
        numeric_lu(lu.Ap, lu.Ai, self._Ax, lu.Lp, lu.Li, self._Lx, lu.Up, lu.Ui, self._Ux, self._w)
        lu_solve(lu.Lp, lu.Li, self._Lx, lu.Up, lu.Ui, self._Ux, self._x)
        gather(*self._GO, self._x, self._out)
        return self._out.copy()
