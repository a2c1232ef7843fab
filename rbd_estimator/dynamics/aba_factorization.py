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

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve_triangular

from ..model.robot_model import RobotModel
from .kinematics import gravity_acceleration, joint_values
from .nori_system import Blocks, NoriSystem, nori_system

__all__ = ["forward_system", "articulated_inertias", "property2_factors", "aba_matrix_form",
           "spgemm_flops", "matrix_form_flops", "aba_flops"]


# ------------------------------------------------------------------------------ the system (15)
def forward_system(model: RobotModel, q, dq, tau, f_ext=None) -> NoriSystem:
    """Eq. (15): Nori's system with every torque known (rows (14τ_i)), in the orderings (33)–(34)."""
    return nori_system(model, q, dq, tau, f_ext)


# ------------------------------------------------------------------------------ the factors
def articulated_inertias(model: RobotModel, sys: NoriSystem) -> list:
    """``I_iᴬ`` by (12Iᵃ) and (12Iᴬ), i = N_B … 1 (the proof of Property 2 assumes them known)."""
    return _inertia_pass(model, sys, _Counter())[0]


def property2_factors(model: RobotModel, sys: NoriSystem, IA: list):
    """``Wᴿ`` (28) and ``[Wᴸ'¹, Wᴸ'², Wᴸ'³, Wᴸ'⁴]`` (29)–(32), sparse, in the orderings (33)–(34)."""
    col, row, n = sys.col, sys.row, sys.D.shape[0]
    WR = Blocks(n, n, identity=True)
    W1, W3, W4 = (Blocks(n, n, identity=True) for _ in range(3))
    W2 = Blocks(n, n)
    for i in range(model.NB):
        S, ni = sys.S[i], int(model.joint_dofs[i])
        WR.set(col[("f", i)], col[("a", i)], IA[i])                                   # (28)
        for key in ("7fx", "known", "3f", "3a"):                                      # (30): 1 elsewhere
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
    IA = _inertia_pass(model, sys, ops)[0]
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
    """(12Iᵃ) and (12Iᴬ), i = N_B … 1, in counted block arithmetic; returns ``(I^A, U, D⁻¹, I^a)``."""
    IA = [np.array(I, dtype=float) for I in model.inertias]
    U, Dinv, Ia_of = [None] * model.NB, [None] * model.NB, [None] * model.NB
    for i in range(model.NB - 1, -1, -1):
        Ia = IA[i]
        if model.joint_dofs[i]:
            U[i] = ops.mm(IA[i], sys.S[i])                                           # U_i = I_iᴬ S_i
            Dinv[i] = ops.inv(ops.mm(sys.S[i].T, U[i]))                             # (S_iᵀ I_iᴬ S_i)⁻¹
            Ia = ops.add(IA[i], -ops.mm(ops.mm(U[i], Dinv[i]), U[i].T))             # (12Iᵃ)
        p = model.parents[i]
        if p >= 0:
            IA[p] = ops.add(IA[p], ops.mm(ops.mm(sys.Xup[i].T, Ia), sys.Xup[i]))   # (12Iᴬ)
        Ia_of[i] = Ia
    return IA, U, Dinv, Ia_of


def aba_flops(model: RobotModel, q, dq, tau) -> int:
    """Operations of the ABA (Nori (12)–(13), :func:`~.aba.aba`) counted with the rule of
    :func:`matrix_form_flops`: each block product and sum on the nonzeros of its operands.
    Kinematics (``ⁱX_λ``, ``c_i``, ``ν_i``) are left out, as there."""
    tau = np.asarray(tau, dtype=float)
    sys, ops = forward_system(model, q, dq, tau), _Counter()
    IA, U, Dinv, Ia_of = _inertia_pass(model, sys, ops)                               # (12Iᵃ) counted once
    fx = np.ones((model.NB, 6))                                                     # a general fˣ_i
    pA = [ops.add(sys.nu[i], -fx[i]) for i in range(model.NB)]                     # ν_i − fˣ_i
    u = [None] * model.NB
    for i in range(model.NB - 1, -1, -1):                                           # (12p)
        pa = pA[i]
        if model.joint_dofs[i]:
            u[i] = ops.add(joint_values(model, i, tau), -ops.mm(sys.S[i].T, pA[i]))   # τ_i − S_iᵀ p_iᴬ
            pa = ops.add(ops.add(pA[i], ops.mm(Ia_of[i], sys.c[i])), ops.mm(U[i], ops.mm(Dinv[i], u[i])))
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
