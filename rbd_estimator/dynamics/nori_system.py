"""Nori's one system for inverse, forward and hybrid dynamics (§III–V, eqs. 3–5, 7, 14–15).

The Newton–Euler equations of a tree are linear in ``d = {fˣ_i, τ_i, f_i, a_i, q̈_i}``; a dynamics
problem is a choice of what is known. Here every external force ``fˣ_i`` is known (rows (7fˣ_i),
eq. 8b) and, per degree of freedom, either the torque (row (14τ), forward dynamics) or the
acceleration (row (7q̈), inverse dynamics, eq. 8a) — any mix is *hybrid dynamics* (Featherstone
§9.2): a robot with some joints following a trajectory and others torque-controlled or passive.
One square sparse system, one sparse LU; nothing recursive. This is the readable reference (the
tests' oracle, and the system of Property 2 in :mod:`.aba_factorization`), not a fast path.

Rows and columns come in the orderings (33)–(34) of Nori's Appendix B (see
:mod:`.aba_factorization` for how (34) is read): columns ``fˣ_1, τ_1, …, fˣ_N, τ_N, f_N … f_1,
a_1 … a_N, q̈_1 … q̈_N``; rows ``(7fˣ_1), (known_1), …, (3f_N) … (3f_1), (3a_1) … (3a_N),
(3τ_1) … (3τ_N)``, where ``(known_i)`` holds, per DoF of joint i, row (14τ) or row (7q̈).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from ..model.robot_model import RobotModel
from ..spatial import crf, crm
from .kinematics import external_forces, gravity_acceleration, joint_transform, joint_values, motion_subspace

__all__ = ["NoriSystem", "nori_system", "hybrid_dynamics"]


@dataclass
class NoriSystem:
    """``D d + b = 0`` (eq. 5 with the rows of the known quantities), rows and columns as above.

    ``col[(kind, i)]`` / ``row[(kind, i)]`` are the slices of each block: columns ``'fx', 'tau',
    'f', 'a', 'qdd'``; rows ``'7fx', 'known', '3f', '3a', '3tau'``. ``known_acceleration`` (nv,
    bool) says which DoF have row (7q̈) rather than (14τ). Body quantities in body coordinates
    (Featherstone: motion ``[ω; v]``, force ``[n; f]``), SI units.
    """
    D: sp.csr_matrix
    b: np.ndarray
    col: dict
    row: dict
    known_acceleration: np.ndarray
    Xup: list          # ⁱX_λ(i)
    S: list            # S_i (6 × n_i)
    c: np.ndarray      # c_i = v_i × S_i q̇_i
    nu: np.ndarray     # ν_i = v_i ×* I_i v_i


def _orderings(model: RobotModel):
    """Slices of the columns (33) and of the rows (34)."""
    NB, n = model.NB, [int(k) for k in model.joint_dofs]
    col, row = {}, {}

    def put(table, key, size, at):
        table[key] = slice(at, at + size)
        return at + size

    k = r = 0
    for i in range(NB):                                   # fˣ_1, τ_1, …, fˣ_N, τ_N   /   (7fˣ_i), (14τ_i | 7q̈_i)
        k, r = put(col, ("fx", i), 6, k), put(row, ("7fx", i), 6, r)
        k, r = put(col, ("tau", i), n[i], k), put(row, ("known", i), n[i], r)
    for i in reversed(range(NB)):                         # f_N … f_1   /   (3f_N) … (3f_1)
        k, r = put(col, ("f", i), 6, k), put(row, ("3f", i), 6, r)
    for i in range(NB):                                   # a_1 … a_N   /   (3a_1) … (3a_N)
        k, r = put(col, ("a", i), 6, k), put(row, ("3a", i), 6, r)
    for i in range(NB):                                   # q̈_1 … q̈_N   /   (3τ_1) … (3τ_N)
        k, r = put(col, ("qdd", i), n[i], k), put(row, ("3tau", i), n[i], r)
    return col, row, k


class Blocks:
    """Assemble a sparse matrix from dense blocks addressed by (row slice, column slice)."""

    def __init__(self, n_rows, n_cols, identity=False):
        self.shape, self.r, self.c, self.v = (n_rows, n_cols), [], [], []
        if identity:
            self.set(slice(0, n_rows), slice(0, n_cols), np.eye(n_rows))

    def set(self, rows: slice, cols: slice, block):
        block = np.atleast_2d(np.asarray(block, dtype=float))
        rr, cc = np.nonzero(block)
        self.r.append(rows.start + rr)
        self.c.append(cols.start + cc)
        self.v.append(block[rr, cc])

    def csr(self) -> sp.csr_matrix:
        r, c, v = (np.concatenate(x) if x else np.zeros(0) for x in (self.r, self.c, self.v))
        return sp.csr_matrix((v, (r.astype(int), c.astype(int))), shape=self.shape)   # duplicates summed


def nori_system(model: RobotModel, q, dq, tau, f_ext=None, ddq=None, known_acceleration=None) -> NoriSystem:
    """The blocks (4a)–(4e), (8a), (8b), (14τ) and ``b`` (§III-A) for ``(q, q̇)`` and the knowns.

    ``q``, ``dq`` and the velocity-sized ``tau``, ``ddq`` in pinocchio's layout; ``f_ext`` as
    :func:`~.aba.aba` takes it. ``known_acceleration`` (nv bools, default none: forward dynamics)
    marks the DoF whose acceleration ``ddq`` is given; the others have their torque ``tau`` given
    (for a floating base, ``tau[:6]`` is the base wrench, normally zero)."""
    if model.mimic_joints:
        raise ValueError(f"nori_system: mimic joints ({model.mimic_joints[0].joint}, …) are not "
                         "supported; the system is stated for independent joints")
    q, dq, tau = (np.asarray(x, dtype=float) for x in (q, dq, tau))
    known = np.zeros(model.nv, bool) if known_acceleration is None else np.asarray(known_acceleration, bool)
    if known.shape != (model.nv,):
        raise ValueError(f"known_acceleration has shape {known.shape}, expected ({model.nv},): one flag per DoF")
    ddq = np.zeros(model.nv) if ddq is None else np.asarray(ddq, dtype=float)
    fx = external_forces(model, f_ext)
    NB = model.NB
    col, row, n = _orderings(model)
    Xup = [joint_transform(model, i, q) for i in range(NB)]
    S = [motion_subspace(model, i) for i in range(NB)]
    v, c, nu = np.zeros((NB, 6)), np.zeros((NB, 6)), np.zeros((NB, 6))
    for i in range(NB):
        vJ = S[i] @ joint_values(model, i, dq)
        p = model.parents[i]
        v[i] = Xup[i] @ (v[p] if p >= 0 else np.zeros(6)) + vJ       # (2)
        c[i] = crm(v[i]) @ vJ                                         # c_i = v_i × S_i q̇_i
        nu[i] = crf(v[i]) @ model.inertias[i] @ v[i]                  # ν_i = v_i ×* I_i v_i
    D, b = Blocks(n, n), np.zeros(n)
    a0 = gravity_acceleration(model)
    for i in range(NB):
        p, ni = model.parents[i], int(model.joint_dofs[i])
        D.set(row[("7fx", i)], col[("fx", i)], np.eye(6))                    # (8b)
        b[row[("7fx", i)]] = -fx[i]
        D.set(row[("3a", i)], col[("a", i)], -np.eye(6))                     # (4a)
        if p >= 0:
            D.set(row[("3a", i)], col[("a", p)], Xup[i])
        b[row[("3a", i)]] = c[i] + (Xup[i] @ a0 if p < 0 else 0.0)          # b_(3a_i)
        D.set(row[("3f", i)], col[("f", i)], -np.eye(6))                     # (4c)
        D.set(row[("3f", i)], col[("a", i)], model.inertias[i])
        D.set(row[("3f", i)], col[("fx", i)], -np.eye(6))                    # (4d)
        for j in np.flatnonzero(model.parents == i):
            D.set(row[("3f", i)], col[("f", int(j))], Xup[j].T)              # ⁱX*_j = (ʲX_i)ᵀ
        b[row[("3f", i)]] = nu[i]                                             # b_(3f_i)
        if ni:
            D.set(row[("3a", i)], col[("qdd", i)], S[i])                     # (4b)
            D.set(row[("3tau", i)], col[("tau", i)], -np.eye(ni))            # (4e)
            D.set(row[("3tau", i)], col[("f", i)], S[i].T)
            acc = joint_values(model, i, known)
            D.set(row[("known", i)], col[("tau", i)], np.diag(~acc))         # (14τ)
            D.set(row[("known", i)], col[("qdd", i)], np.diag(acc))          # (7q̈), eq. (8a)
            b[row[("known", i)]] = -np.where(acc, joint_values(model, i, ddq), joint_values(model, i, tau))
    return NoriSystem(D.csr(), b, col, row, known, Xup, S, c, nu)


def hybrid_dynamics(model: RobotModel, q, dq, tau, ddq, known_acceleration, f_ext=None):
    """Hybrid dynamics by one sparse LU of Nori's system: returns ``(q̈, τ)`` (nv each), the given
    accelerations and torques completed by the unknown ones.

    ``known_acceleration[k]`` true: DoF k follows ``ddq[k]`` and its torque is computed; false:
    its torque is ``tau[k]`` and its acceleration is computed. All false is forward dynamics
    (:func:`~.aba.aba`), all true inverse dynamics (:func:`~.rnea.rnea`)."""
    sys = nori_system(model, q, dq, tau, f_ext, ddq, known_acceleration)
    d = spsolve(sys.D.tocsc(), -sys.b)
    out_ddq, out_tau = np.zeros(model.nv), np.zeros(model.nv)
    for i in range(model.NB):
        k, ni = model.v_idx[i], int(model.joint_dofs[i])
        if ni:
            out_ddq[k:k + ni] = d[sys.col[("qdd", i)]]
            out_tau[k:k + ni] = d[sys.col[("tau", i)]]
    return out_ddq, out_tau
