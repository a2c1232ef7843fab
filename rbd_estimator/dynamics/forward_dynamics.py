"""Forward dynamics by the inertia-matrix method (Featherstone 2005, eq. 1): CRBA + RNEA + LTDL.

``H q̈ = τ − C`` with ``H`` from :func:`crba`, ``C`` the RNEA's ``τ`` at ``q̈ = 0`` (gravity,
Coriolis, centrifugal and external forces) and the sparse ``H = LᵀDL`` of App. A, solved as
``q̈ = L⁻¹ D⁻¹ L⁻ᵀ (τ − C)`` with the expanded parent array.
"""
from __future__ import annotations

import numpy as np

from ..model.robot_model import RobotModel
from .crba import crba
from .ltl import ltdl_inplace, solve_L, solve_Lt
from .rnea import rnea


def forward_dynamics_ltdl(model: RobotModel, q, dq, tau, f_ext=None) -> np.ndarray:
    """``q̈`` (nv,) from ``H q̈ = τ − C`` (Featherstone eq. 1); same inputs, units and result as
    :func:`aba` (``f_ext``: link or frame name → ``[fx, fy, fz, tx, ty, tz]`` in that frame)."""
    lam = model.expanded_parents
    C = rnea(model, q, dq, np.zeros(model.nv), f_ext)               # C = InvD(q, q̇, 0, f^x)
    A = ltdl_inplace(crba(model, q), lam)                           # H = LᵀDL, packed in A
    x = solve_Lt(A, lam, np.asarray(tau, dtype=float) - C, unit=True)   # L⁻ᵀ (τ − C)
    x /= np.diag(A)                                                 # D⁻¹
    return solve_L(A, lam, x, unit=True)                            # L⁻¹
