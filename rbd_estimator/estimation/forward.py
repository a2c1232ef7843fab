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
from ..jit import njit
from ..model.forward_kinematics import K_WTMP, KinematicTree, motion_axes
from ..model.robot_model import FREE, RobotModel
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
        self._fx = np.zeros((NB, 6))
        self._offsets = np.array([self._r_c, self._r_nu, self._r_xa0, self._r_tau, self._r_fx, self._r_g0],
                                 dtype=np.int64)
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
        """The sources of ``(q, q̇)`` (for the plan; the same kernel as :meth:`compute`, without the solve)."""
        m = self.model
        q, dq = (_vector(x, n, name) for x, n, name in ((q, m.nq, "q"), (dq, m.nv, "dq")))
        ei, ef = np.zeros(1, dtype=np.int64), np.zeros(1)          # no solve: placeholders of its arrays
        _forward_kernel(*self._kin, m.floating_base, q, dq, np.zeros(m.nv), self._fx, self._a0, self._src, self._rsrc,
                        self._offsets, False, *(ei, ei, ef) * 3, ei, ei, ef, ei, ei, ef, ei, ei, ef, ef, ef, ef)

    def compute(self, q, dq, tau, f_ext=None) -> np.ndarray:
        """Joint (and base) accelerations ``q̈`` (nv,), rad/s² or m/s². Returns a new array.

        One compiled call (kinematics, sources, right-hand side, numeric LU and solve) that
        allocates nothing; ``f_ext`` is mapped to body forces beforehand."""
        m = self.model
        q, dq, tau = (_vector(x, n, name) for x, n, name in ((q, m.nq, "q"), (dq, m.nv, "dq"), (tau, m.nv, "tau")))
        external_forces(m, f_ext, out=self._fx)
        _forward_kernel(*self._kin, m.floating_base, q, dq, tau, self._fx, self._a0, self._src, self._rsrc,
                        self._offsets, True, *self._solve_args())
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
def _forward_kernel(ip, fp, w, E, V, floating, q, dq, tau, fx, a0, src, rsrc, off, solve,
                    Gp, Gi, Gx, Rp, Ri, Rx, Op, Oi, Ox, Ap, Ai, Ax, Lp, Li, Lx, Up, Ui, Ux, wk, x, out):
    """Eq. (15) for ``(q, q̇, τ, f^x)``: the forward kinematics of the tick (transforms into the matrix
    sources ``src``; ``c_i``, ``ν_i``, ``X_i a_0`` into the right-hand-side sources ``rsrc``), ``τ``,
    ``f^x`` and ``⁰X_w a_w`` into ``rsrc``; with ``solve``, the matrix values, the numeric LU, the
    solve and the gather of ``q̈`` into ``out``. ``off``: offsets of c, ν, X a_0, τ, f^x and
    ``⁰X_w a_w`` in ``rsrc``."""
    k0 = ip[K_WTMP]
    for k in range(6):                      # v_0 of the free flyer, [ω; v] = S_FREE q̇_base
        w[k0 + k] = (dq[3 + k] if k < 3 else dq[k - 3]) if floating else 0.0
    kin.sources(ip, fp, w, E, V, q, dq, dq[:3], src, rsrc, off[0], off[1], off[2], 0)
    for k in range(tau.shape[0]):
        rsrc[off[3] + k] = tau[k]
    for i in range(fx.shape[0]):
        for k in range(6):
            rsrc[off[4] + 6 * i + k] = fx[i, k]
    if floating:                            # ⁰X_w a_w: gravity in base coordinates, R(quat)ᵀ a_w
        n = np.sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6])     # unit, as joint_transform's
        qx, qy, qz, qw = q[3] / n, q[4] / n, q[5] / n, q[6] / n
        R = ((1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)),
             (2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)),
             (2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)))
        for a in range(3):
            rsrc[off[5] + a] = 0.0
            rsrc[off[5] + 3 + a] = R[0][a] * a0[3] + R[1][a] * a0[4] + R[2][a] * a0[5]
    if solve:
        gather(Gp, Gi, Gx, src, Ax)
        gather(Rp, Ri, Rx, rsrc, x)
        numeric_lu(Ap, Ai, Ax, Lp, Li, Lx, Up, Ui, Ux, wk)
        lu_solve(Lp, Li, Lx, Up, Ui, Ux, x)
        gather(Op, Oi, Ox, x, out)
