"""Forward dynamics through Nori's sparse machinery (§V-B, §V-D, eq. 15): the split of
:class:`.hybrid.HybridDynamics` with every acceleration unknown.

The unknowns are ``a_i``, ``f_i`` and ``q̈_i``; the known torques enter through the rows
``(3τ_i): S_iᵀ f_i = τ_i`` and the known external wrenches through the right-hand side of (3f).
Unlike inverse dynamics the matrix is not triangularisable (Nori §V-C: the ABA is more than a
permutation), so the plan yields irreducible blocks that are factorised with static pivots. The
system is the estimator's layout, planned by its plan and solved by its compiled tick.
"""
from __future__ import annotations

import numpy as np

from ..model.robot_model import RobotModel
from .hybrid import HybridDynamics


class SparseForwardDynamics(HybridDynamics):
    """``q̈ = FwdD(model, q, q̇, τ, f^x)`` by a planned sparse LU of eq. (15).

    ``q``, ``dq``, ``tau`` and the result follow pinocchio's layout (see :class:`RobotModel`);
    ``f_ext`` maps a link or frame to the wrench ``[fx, fy, fz, tx, ty, tz]`` in that frame.
    """

    def __init__(self, model: RobotModel, seed: int = 0):
        super().__init__(model, known_acceleration=None, seed=seed)

    def compute(self, q, dq, tau, f_ext=None) -> np.ndarray:
        """Joint (and base) accelerations ``q̈`` (nv,), rad/s² or m/s². Returns a new array.

        One compiled call (kinematics, sources, right-hand side, numeric LU and solve) that
        allocates nothing; ``f_ext`` is mapped to body forces beforehand."""
        return self.solve(q, dq, tau, None, f_ext)[:self.model.nv].copy()
