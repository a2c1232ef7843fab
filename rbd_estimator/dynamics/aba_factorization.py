"""Nori's Property 2 (§V-C, Appendix B): the ABA as a sparse factorisation ``Wᴸ D Wᴿ`` of eq. (15).

Forward dynamics is the linear system (15), ``D d + b = 0``, over the unknowns
``𝒟 = {fˣ_i, τ_i, f_i, a_i, q̈_i}`` and the constraints ``𝒞_fd = {(7fˣ_i), (14τ_i), (3a_i), (3f_i),
(3τ_i)}``: the Newton–Euler equations (3)–(4) plus the known external forces (7fˣ) and torques (14τ).
Property 2: a right factor ``Wᴿ`` (eq. 28, Step 1: ``f_i → p_iᴬ = f_i − I_iᴬ a_i``) and a left
factor ``Wᴸ = Wᴸ'⁴ Wᴸ'³ Wᴸ'² Wᴸ'¹`` (eqs. 29–32, Steps 2–5 of Appendix A) make ``Wᴸ D Wᴿ`` lower
triangular in the orderings (33)–(34); one forward substitution then *is* the ABA: the rows
(3f_N … 3f_1) are its backward pass (12p), the rows (3a_1 … 3a_N) and (3τ_1 … 3τ_N) its second
forward pass (13q̈). The articulated inertias ``I_iᴬ`` (12Iᴬ) are computed first, as the proof
assumes.

Three things the paper leaves implicit, stated here and checked by the tests:

* **The right-hand side is transformed too**: ``Wᴸ D Wᴿ d' = −Wᴸ b`` with ``d = Wᴿ d'`` (the
  statement of Property 2 writes ``b``; the left factor multiplies the whole equation).
* **Row labels of (34).** As printed, (34) pairs ``c(7fˣ_1)`` with ``c(3τ_{N_B})`` and ends with
  ``c(14q̈_i)``. Read literally the identity block of the known torque ``τ_1`` would sit above the
  diagonal. We read the first group as ``(7fˣ_i), (14τ_i)`` (the rows of the known values, each on
  its own unknown) and the last group as the transformed ``(3τ_i)`` rows, which after Step 3 are
  the equations (13q̈_i) for ``q̈_i``. With that reading the product is lower triangular (tested).
* **Multi-DoF joints** (the floating base) take ``D_i = S_iᵀ I_iᴬ S_i`` as an ``n_i × n_i`` matrix
  in (30); a 0-DoF body (a kept fixed joint) has no ``τ_i`` or ``q̈_i`` and Steps 2–4 skip it.

This is a reference (dense blocks, scipy.sparse products), not a fast path: it exists to show the
equivalence and to count the operations of the matrix form (Nori Fig. 1, third curve).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve_triangular

from ..model.robot_model import RobotModel
from ..spatial import crf, crm
from .kinematics import external_forces, gravity_acceleration, joint_transform, joint_values, motion_subspace

__all__ = ["ForwardSystem", "forward_system", "articulated_inertias", "property2_factors", "aba_matrix_form",
           "spgemm_flops", "matrix_form_flops", "aba_flops"]


# ------------------------------------------------------------------------------ the system (15)
@dataclass
class ForwardSystem:
    """``D d + b = 0`` of eq. (15) with rows in the order (34) and columns in the order (33).

    ``col[(kind, i)]`` / ``row[(kind, i)]`` are the slices of each block: columns ``'fx', 'tau',
    'f', 'a', 'qdd'``; rows ``'7fx', '14tau', '3f', '3a', '3tau'``. Body quantities in body
    coordinates (Featherstone: motion ``[ω; v]``, force ``[n; f]``), SI units.
    """
    D: sp.csr_matrix
    b: np.ndarray
    col: dict
    row: dict
    Xup: list          # ⁱX_λ(i)
    S: list            # S_i (6 × n_i)
    c: np.ndarray      # c_i = v_i × S_i q̇_i
    nu: np.ndarray     # ν_i = v_i ×* I_i v_i


def _orderings(model: RobotModel):
    """Slices of the columns (33) and of the rows (34) (see the module docstring for (34))."""
    NB, n = model.NB, [int(k) for k in model.joint_dofs]
    col, row = {}, {}

    def put(table, key, size, at):
        table[key] = slice(at, at + size)
        return at + size

    k = r = 0
    for i in range(NB):                                   # fˣ_1, τ_1, …, fˣ_N, τ_N   /   (7fˣ_i), (14τ_i)
        k, r = put(col, ("fx", i), 6, k), put(row, ("7fx", i), 6, r)
        k, r = put(col, ("tau", i), n[i], k), put(row, ("14tau", i), n[i], r)
    for i in reversed(range(NB)):                         # f_N … f_1   /   (3f_N) … (3f_1)
        k, r = put(col, ("f", i), 6, k), put(row, ("3f", i), 6, r)
    for i in range(NB):                                   # a_1 … a_N   /   (3a_1) … (3a_N)
        k, r = put(col, ("a", i), 6, k), put(row, ("3a", i), 6, r)
    for i in range(NB):                                   # q̈_1 … q̈_N   /   (3τ_1) … (3τ_N) ≡ (13q̈_i)
        k, r = put(col, ("qdd", i), n[i], k), put(row, ("3tau", i), n[i], r)
    return col, row, k


class _Blocks:
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


def forward_system(model: RobotModel, q, dq, tau, f_ext=None) -> ForwardSystem:
    """Eq. (15): the blocks (4a)–(4e), (8b) and (14τ), and ``b`` (§III-A), for ``(q, q̇, τ, fˣ)``.

    ``q``, ``dq``, ``tau`` in pinocchio's layout; ``f_ext`` as :func:`~.aba.aba` takes it."""
    if model.mimic_joints:
        raise ValueError(f"forward_system: mimic joints ({model.mimic_joints[0].joint}, …) are not "
                         "supported; Property 2 is stated for independent joints")
    q, dq, tau = (np.asarray(x, dtype=float) for x in (q, dq, tau))
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
    D, b = _Blocks(n, n), np.zeros(n)
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
            D.set(row[("14tau", i)], col[("tau", i)], np.eye(ni))            # (14τ)
            b[row[("14tau", i)]] = -joint_values(model, i, tau)
    return ForwardSystem(D.csr(), b, col, row, Xup, S, c, nu)


# ------------------------------------------------------------------------------ the factors
def articulated_inertias(model: RobotModel, sys: ForwardSystem) -> list:
    """``I_iᴬ`` by (12Iᵃ) and (12Iᴬ), i = N_B … 1 (the proof of Property 2 assumes them known)."""
    return _inertia_pass(model, sys, _Counter())[0]


def property2_factors(model: RobotModel, sys: ForwardSystem, IA: list):
    """``Wᴿ`` (28) and ``[Wᴸ'¹, Wᴸ'², Wᴸ'³, Wᴸ'⁴]`` (29)–(32), sparse, in the orderings (33)–(34)."""
    col, row, n = sys.col, sys.row, sys.D.shape[0]
    WR = _Blocks(n, n, identity=True)
    W1, W3, W4 = (_Blocks(n, n, identity=True) for _ in range(3))
    W2 = _Blocks(n, n)
    for i in range(model.NB):
        S, ni = sys.S[i], int(model.joint_dofs[i])
        WR.set(col[("f", i)], col[("a", i)], IA[i])                                   # (28)
        for key in ("7fx", "14tau", "3f", "3a"):                                      # (30): 1 elsewhere
            r = row[(key, i)]
            W2.set(r, r, np.eye(r.stop - r.start))
        if ni:
            W1.set(row[("3tau", i)], row[("3a", i)], S.T @ IA[i])                     # (29)
            W2.set(row[("3tau", i)], row[("3tau", i)], np.linalg.inv(S.T @ IA[i] @ S))  # (30)
            W3.set(row[("3a", i)], row[("3tau", i)], -S)                               # (31)
        for j in np.flatnonzero(model.parents == i):
            W4.set(row[("3f", i)], row[("3a", int(j))], sys.Xup[j].T @ IA[j])          # (32)
    return WR.csr(), [W.csr() for W in (W1, W2, W3, W4)]


def aba_matrix_form(model: RobotModel, q, dq, tau, f_ext=None, return_parts: bool = False):
    """``q̈`` by Property 2: ``Wᴸ D Wᴿ d' = −Wᴸ b`` by one forward substitution, ``d = Wᴿ d'``.

    Same arguments and result as :func:`~.aba.aba` (``q̈``, nv, pinocchio's layout). With
    ``return_parts``, also ``(sys, T, WR, WL)`` where ``T = Wᴸ D Wᴿ`` before its upper triangle is
    dropped (the tests check that triangle is rounding noise)."""
    sys = forward_system(model, q, dq, tau, f_ext)
    IA = articulated_inertias(model, sys)
    WR, Ws = property2_factors(model, sys, IA)
    WL = Ws[3] @ Ws[2] @ Ws[1] @ Ws[0]                                   # Wᴸ = Wᴸ'⁴ Wᴸ'³ Wᴸ'² Wᴸ'¹
    T = (WL @ sys.D @ WR).tocsr()
    d_prime = spsolve_triangular(sp.tril(T).tocsr(), -(WL @ sys.b), lower=True)
    d = WR @ d_prime                                                     # f_i = p_iᴬ + I_iᴬ a_i
    ddq = np.zeros(model.nv)
    for i in range(model.NB):
        k, ni = model.v_idx[i], int(model.joint_dofs[i])
        if ni:
            ddq[k:k + ni] = d[sys.col[("qdd", i)]]
    return (ddq, (sys, T, WR, WL)) if return_parts else ddq


# ------------------------------------------------------------------------------ operation counts
def spgemm_flops(A, B) -> int:
    """Flops of the sparse product ``A B`` on the patterns of ``A`` and ``B``: one multiplication
    per pair ``(A_ik, B_kj)`` of nonzeros, one addition per product beyond the first of each entry
    of the result, i.e. ``2 Σ_k nnz(A[:, k]) nnz(B[k, :]) − nnz(pattern of A B)``."""
    A, B = sp.csc_matrix(A), sp.csr_matrix(B)
    A.eliminate_zeros()
    B.eliminate_zeros()
    mults = int(np.dot(np.diff(A.indptr), np.diff(B.indptr)))
    P = (abs(A) != 0).astype(np.int64) @ (abs(B) != 0).astype(np.int64)
    return 2 * mults - int(P.nnz)


class _Counter:
    """Block arithmetic that counts its flops on the operands' nonzeros (:func:`spgemm_flops`
    for products; for sums one addition per entry where both operands are nonzero)."""

    def __init__(self):
        self.flops = 0

    def mm(self, A, B):
        self.flops += spgemm_flops(np.atleast_2d(A), np.atleast_2d(B).reshape(np.shape(A)[-1], -1))
        return A @ B

    def add(self, A, B):
        self.flops += int(np.count_nonzero((np.asarray(A) != 0) & (np.asarray(B) != 0)))
        return A + B

    def inv(self, A):
        """``n × n`` inverse by Gauss–Jordan: n³ multiply–adds, 2n³ flops (one division if n = 1)."""
        n = A.shape[0]
        self.flops += 1 if n == 1 else 2 * n ** 3
        return np.linalg.inv(A)


def matrix_form_flops(model: RobotModel, q, dq, tau) -> dict:
    """Operations of the matrix-form ABA, counted on the patterns of its sparse matrices.

    ``inertias``: (12Iᵃ), (12Iᴬ) as block products; ``factors``: forming ``Wᴸ D Wᴿ`` and ``Wᴸ b``
    by the sparse products of eqs. (28)–(32), right to left; ``solve``: the forward substitution
    (a multiply–add per strictly lower nonzero, a division per row) and ``d = Wᴿ d'``. Kinematics
    (``ⁱX_λ``, ``c_i``, ``ν_i``) are left out, as in :func:`aba_flops`."""
    sys, ops = forward_system(model, q, dq, tau), _Counter()
    IA, _, _ = _inertia_pass(model, sys, ops)
    inert = ops.flops
    WR, Ws = property2_factors(model, sys, IA)
    f, M = spgemm_flops(sys.D, WR), sys.D @ WR
    bvec = sp.csr_matrix(sys.b.reshape(-1, 1))
    for W in Ws:                                                      # Wᴸ'¹ first: T = W⁴(W³(W²(W¹ D Wᴿ)))
        f += spgemm_flops(W, M) + spgemm_flops(W, bvec)
        M, bvec = W @ M, W @ bvec
    L = sp.tril(M, -1)
    solve = 2 * int((L != 0).sum()) + M.shape[0] + spgemm_flops(WR, np.ones((M.shape[0], 1)))
    return {"inertias": inert, "factors": f, "solve": solve, "total": inert + f + solve}


def _inertia_pass(model, sys, ops: _Counter):
    """(12Iᵃ) and (12Iᴬ), i = N_B … 1, in counted block arithmetic; returns ``(I^A, U, D⁻¹)``."""
    IA = [np.array(I, dtype=float) for I in model.inertias]
    U, Dinv = [None] * model.NB, [None] * model.NB
    for i in range(model.NB - 1, -1, -1):
        Ia = IA[i]
        if model.joint_dofs[i]:
            U[i] = ops.mm(IA[i], sys.S[i])                                           # U_i = I_iᴬ S_i
            Dinv[i] = ops.inv(ops.mm(sys.S[i].T, U[i]))                             # (S_iᵀ I_iᴬ S_i)⁻¹
            Ia = ops.add(IA[i], -ops.mm(ops.mm(U[i], Dinv[i]), U[i].T))             # (12Iᵃ)
        p = model.parents[i]
        if p >= 0:
            IA[p] = ops.add(IA[p], ops.mm(ops.mm(sys.Xup[i].T, Ia), sys.Xup[i]))   # (12Iᴬ)
    return IA, U, Dinv


def aba_flops(model: RobotModel, q, dq, tau) -> int:
    """Operations of the ABA (Nori (12)–(13), :func:`~.aba.aba`) counted with the rule of
    :func:`matrix_form_flops`: each block product and sum on the nonzeros of its operands.
    Kinematics (``ⁱX_λ``, ``c_i``, ``ν_i``) are left out, as there."""
    tau = np.asarray(tau, dtype=float)
    sys, ops = forward_system(model, q, dq, tau), _Counter()
    IA, U, Dinv = _inertia_pass(model, sys, ops)
    fx = np.ones((model.NB, 6))                                                     # a general fˣ_i
    pA = [ops.add(sys.nu[i], -fx[i]) for i in range(model.NB)]                     # ν_i − fˣ_i
    u = [None] * model.NB
    for i in range(model.NB - 1, -1, -1):                                           # (12p)
        pa = pA[i]
        if model.joint_dofs[i]:
            u[i] = ops.add(joint_values(model, i, tau), -ops.mm(sys.S[i].T, pA[i]))   # τ_i − S_iᵀ p_iᴬ
            Ia = ops.add(IA[i], -ops.mm(ops.mm(U[i], Dinv[i]), U[i].T))
            pa = ops.add(ops.add(pA[i], ops.mm(Ia, sys.c[i])), ops.mm(U[i], ops.mm(Dinv[i], u[i])))
        p = model.parents[i]
        if p >= 0:
            pA[p] = ops.add(pA[p], ops.mm(sys.Xup[i].T, pa))
    a0 = gravity_acceleration(model)
    a = [None] * model.NB
    for i in range(model.NB):                                                       # (13q̈), (3a)
        p = model.parents[i]
        a[i] = ops.add(ops.mm(sys.Xup[i], a0 if p < 0 else a[p]), sys.c[i])
        if model.joint_dofs[i]:
            qdd = ops.mm(Dinv[i], ops.add(u[i], -ops.mm(U[i].T, a[i])))
            a[i] = ops.add(a[i], ops.mm(sys.S[i], qdd))
    return ops.flops
