"""Structured solver of Nori's estimation problem: the tree eliminates all unknowns but a few.

The generic tick (:mod:`.estimator`) factorises the whole system ``D d + b = 0`` with the whitened
sensor rows (Nori eq. 16) — the KKT system of the weighted least-squares problem when the sensors
are redundant — with a static sparse LU. This module solves the *same* problem (minimise the sum
of squared whitened sensor residuals subject to the Newton–Euler rows (3a), (3f), (3τ)) the way
the RNEA solves inverse dynamics (Nori §IV-A), by exploiting the tree:

* rows (3a), (3f), (3τ) are triangular once ``z = (a_0, h)`` is fixed — ``a_0`` the floating
  base's acceleration (6; a fixed base has ``a_0 = -a_g`` known and no such unknown) and ``h`` the
  free contact components. Every other unknown is affine in ``z``:

  - forward (3a): ``a_i = a⁰_i + ⁱX_0 a_0``, ``a⁰`` the RNEA forward pass with ``a_0 = 0``;
  - backward (3f): ``f_i = f⁰_i + I^c_i ⁱX_0 a_0 − Σ_{c below i} ⁱX*_{F_c} B_c h_c``, ``I^c`` the
    composite-rigid-body inertias (CRBA), ``f⁰`` the RNEA backward pass without contacts;
  - (3τ): ``τ_i = S_iᵀ f_i``;

* what is left are the floating base's Newton–Euler rows ``f_0 = 0`` (6, hard) and the sensor rows
  (soft), all affine in ``z``. ``I^c_0`` is positive definite, so the hard rows give
  ``a_0 = a⁰⁰ + P h`` with ``P = (I^c_0)⁻¹ [⁰X*_{F_c} B_c]_c`` and ``a⁰⁰ = −(I^c_0)⁻¹ f⁰_0`` (the
  null-space method with an explicit basis), and the rest is an unconstrained linear least-squares
  problem ``min |J_h h + J_a (a⁰⁰ + P h) − r|²`` in ``h`` alone (an exact solve when square);
* its normal equations are assembled block-wise, ``N = N_hh + Pᵀ N_ah + N_ahᵀ P + Pᵀ N_aa P``,
  using the sparsity of ``J_h`` (a sensor sees only the contacts below it), and solved by Cholesky;
  an ill-conditioned instance (a Cholesky pivot ``L_kk² / N_kk`` below 1e-6) is re-solved by
  Householder QR of ``J``;
* the outputs come from one more pass: ``α_i = ⁱX_0 a_0`` forward, the contact wrenches
  ``g_i`` backward along the paths from the contacts to the root, ``f_i = f⁰_i + I^c_i α_i − g_i``,
  ``τ_i = S_iᵀ f_i``; the residual is the whitened sensor residual in the layout's row order.

The sensor rows are not re-derived: their coefficients and right-hand sides are read from the
:class:`~.layout.SystemLayout` (whitening, FT rotations and signs, load-cell combinations), the
single definition of the conventions; joint-torque rows ``τ_j`` become ``S_jᵀ f_j``. Rows that
share unknowns are compressed off-line by a QR factorisation (``|G u − r|² = |R u − Qᵀ r|² +
const``), which turns an FT sensor's six rotated rows into six diagonal ones. Only the
Newton–Euler recursions live here, and :func:`build` checks them: it solves random, noisy
instances with both paths and keeps the generic one if they disagree.

The estimate is the maximum a posteriori one (docs/probabilistic_model.md): the prior's rows on
``h`` add their information to ``N``'s diagonal (:func:`.solve._add_prior`), and with the joint
accelerations as a measurement the least squares is in ``x = (δ, h)``, ``δ = q̈ − q̈ᵐ``
(:mod:`.accelerations`; on a fixed base too, where ``x`` has no base equation and the observations'
``D_a`` only make the ``δ`` columns). Its posterior covariance comes from the same factor
(:mod:`.covariance`).

The package has one module per step: :mod:`.layout` (the packed layout and the kernel
decorator), :mod:`.build` (plan time: packing and the self-check), :mod:`.reduction` (RNEA passes
without contacts, observations, base equation), :mod:`.solve` (normal equations, Cholesky, QR),
:mod:`.outputs` (estimates and residual), :mod:`.accelerations` (the ``δ`` columns),
:mod:`.covariance`, :mod:`.tick` (the compiled tick chaining them) and
:mod:`.solver` (the per-estimator object and its input handling). The forward kinematics (joint
transforms, poses, base velocity, velocities and bias terms) is the package's one pass,
:mod:`rbd_estimator.model.forward_kinematics`, which the generic tick runs too; the spatial
arithmetic is :mod:`rbd_estimator.kernels.spatial`.

The tick is one compiled function (numba) with no allocation: constant integers and floats are
packed into one ``int64`` and one ``float64`` array, all work space into one ``float64`` array, the
inputs are taken as the caller's arrays (checked for shape and finiteness in compiled code).
Transforms use Featherstone's rotation + translation arithmetic (RBDA §2.8), inertias the
10-number rigid-body form, revolute joint rotations the precomputed ``E = cos q A + sin q B + C``.
"""
from .build import TreeProblem, build
from .layout import H_SCOV, H_SINFO, H_SOUT, H_STAIL, H_WH
from .solve import _qr_solve
from .solver import StructuredSolver
from .tick import _SIGNATURE, compiled_tick, structured_tick

__all__ = ["StructuredSolver", "TreeProblem", "build", "compiled_tick", "structured_tick", "H_SCOV", "H_SINFO",
           "H_SOUT", "H_STAIL", "H_WH", "_SIGNATURE", "_qr_solve"]
