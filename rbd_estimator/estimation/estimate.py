"""The result of one estimate and the per-tick buffers of an :class:`~.estimator.Estimator`.

:class:`EstimatorData` is to the estimator what pinocchio's ``Data`` is to its ``Model``: every
buffer a tick writes, preallocated; :class:`Estimate` views its outputs.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .measurements import JointState, Measurements

if TYPE_CHECKING:
    from .estimator import Estimator

__all__ = ["Estimate", "EstimatorData"]


class Estimate:
    """Result of :meth:`.estimator.Estimator.estimate`. Arrays are views into buffers that the next call
    overwrites: copy what you keep.

    * ``tau``: joint torques (N·m or N), in ``estimator.joint_names`` order;
    * ``contact_wrenches``: ``(n_contacts, 6)`` ``[fx, fy, fz, tx, ty, tz]`` that the environment
      applies to the robot, in each contact frame, torque about its origin;
    * ``joint_wrenches``: ``(n_kept, 6)`` wrench the parent applies to the child at every kept fixed
      joint (``estimator.kept_joints``), child frame, torque about the joint origin;
    * ``residual``: whitened measurement residuals (dimensionless, one per sensor row, then one per
      joint acceleration when they are measured) when the measurements are redundant, else ``None``;
    * ``tau_variance``: the posterior variance of every joint torque ((N·m)² or N²), and
      ``contact_covariance``: ``(n_contacts, 6, 6)`` the posterior covariance of every contact
      wrench (``[fx, fy, fz, tx, ty, tz]``, contact frame) — under the configured noise of every
      measurement and the prior, the state ``q``, ``q̇`` and the IMU orientation and gyro taken as
      exact (docs/probabilistic_model.md). A direction the sensors do not determine at this pose
      shows as the prior's variance (``contact_prior_stddev``), not as an error. Both ``None``
      with ``covariance: false`` (the mean alone, a faster tick);
    * ``x``, ``imu``: the tick's solution of the planned system and its IMU sample (views of
      :class:`EstimatorData`'s), from which :meth:`~.estimator.Estimator.base_state` reads the base.
    """

    def __init__(self, est: "Estimator", out: np.ndarray, sol: np.ndarray, imu: np.ndarray, cov: np.ndarray):
        lay = est.layout
        nj, nc, nk = est.model.n_joints, len(lay.contacts), len(lay.kept_joints)
        self._est = est
        self.tau = out[:nj]
        self.contact_wrenches = out[nj:nj + 6 * nc].reshape(nc, 6)
        self.joint_wrenches = out[nj + 6 * nc:nj + 6 * nc + 6 * nk].reshape(nk, 6)
        self.residual = out[nj + 6 * (nc + nk):] if est.report.redundant else None
        on = est.config.covariance
        self.tau_variance = cov[:nj] if on else None
        self.contact_covariance = cov[nj:].reshape(nc, 6, 6) if on else None
        self.x = sol                      # the generic solution (:attr:`EstimatorData.x`)
        self.imu = imu                    # the last tick's IMU sample (both ticks copy it there)

    def contact(self, name: str) -> np.ndarray:
        """The wrench of one contact by name."""
        return self.contact_wrenches[self._est.contact_names.index(name)]

    @property
    def chi2(self) -> float:
        """``|residual|²``, the whitened residual's squared norm: χ²-distributed with :attr:`dof`
        degrees of freedom when every measurement follows its noise model (0 without redundancy)."""
        return float(self._est.data.info[3])

    @property
    def dof(self) -> int:
        """The residual's degrees of freedom: measurement rows minus the unknowns they determine."""
        return self._est.residual_dof

    @property
    def condition(self) -> float:
        """The tick's condition estimate: the smallest pivot ratio of its factorisation (structured:
        ``min L_kk² / N_kk`` of the least squares' Cholesky — with measured accelerations by limbs,
        the smallest over the limb blocks and the base's two 6 × 6 factors (docs/probabilistic_model.md,
        P4) — or ``(min |R_kk| / max |R_kk|)²`` of its QR;
        generic: ``min |U_kk| / max |U_kk|`` of the LU). Near 0: a direction the sensors barely
        determine at this state (its variance shows which)."""
        return float(self._est.data.info[2])

    def joint_acceleration(self, ddq: np.ndarray) -> np.ndarray:
        """The joint accelerations (rad/s², m/s², ``estimator.joint_names`` order) this estimate is
        consistent with, given the ``ddq`` it was computed from: ``ddq`` itself when they are exact
        inputs; when they are measured (``joint_acceleration_stddev`` σ_a > 0) the estimated
        ``q̈ = q̈ᵐ + σ_a e_a``, ``e_a`` the whitened residuals of the acceleration rows (the last
        ``n_joints`` residuals; none without redundancy, where the estimate keeps ``q̈ᵐ``)."""
        ddq = np.asarray(ddq, dtype=float)
        if not self._est.layout.measured_acceleration or self.residual is None:
            return ddq.copy()
        nj = self.tau.size
        return ddq + self._est.config.joint_acceleration_stddev * self.residual[-nj:]

    @property
    def base_acceleration(self) -> np.ndarray:
        """Floating-base acceleration in pinocchio's free-flyer layout ``[a_lin; ω̇]`` (base frame,
        with the base's linear velocity taken as zero, see :mod:`.kinematics`)."""
        return self._est.base_acceleration(self)


class EstimatorData:
    """The per-tick buffers of one :class:`Estimator` (what pinocchio's ``Data`` is to its
    ``Model``): the estimator itself holds only its plan, made at construction and not changed by
    a tick. All float64, preallocated, overwritten by every estimate:

    * ``state``: one array that the structured tick takes as one argument — the rotations ``E``
      (NB × 3 × 3, body ← parent) and velocities ``V`` (NB × 6, ``[ω; v]``, body coordinates) of the
      forward kinematics, the generic solution ``x``, the IMU sample ``imu`` (13: orientation
      ``[x, y, z, w]``, rad/s, m/s², rad/s²), the outputs ``out`` (what :class:`Estimate` views) and
      ``info`` (4: the failing input and index, the pivot ratio), ``cov`` (the joint-torque
      variances, then the 6 × 6 covariance of every contact wrench), then the structured tick's
      constants and work space (:meth:`install`); ``E``, ``V``, ``x``, ``imu``, ``out``, ``info``,
      ``cov`` are views of it;
    * ``src``, ``rsrc``, ``Ax``, ``Lx``, ``Ux``, ``lu_w``: the generic tick's sources and numeric LU;
      ``kin_w``: its kinematics' work space;
    * ``measurements``: the measurement vector ``y`` and its filling from per-kind readings;
    * ``joint_state``: :class:`~.measurements.JointState`, ``q``, ``dq``, ``ddq`` converted to
      float64 when they come in another form (lists, float32, …);
    * ``result``: the :class:`Estimate` of the last tick; ``pivot_fallbacks``: generic ticks that
      fell back to partial pivoting.
    """

    def __init__(self, est: "Estimator", kin_w: np.ndarray):
        """The buffers of ``est`` (its plan made: :attr:`~.estimator.Estimator.factorisation`,
        :meth:`~.estimator.Estimator.state_offsets`), ``kin_w`` the template of the kinematics' work
        space."""
        lay, lu = est.layout, est.factorisation
        self._est, self._offsets = est, est.state_offsets()
        o = self._offsets
        N, n_out = o["SIMU"] - o["SX"], o["SINFO"] - o["SOUT"]
        self.src, self.rsrc = np.zeros(lay.n_src), np.zeros(lay.n_rsrc)
        self.src[0] = self.rsrc[0] = 1.0
        self.cov_x, self.cov_out = np.zeros(N), np.zeros(n_out)     # the generic covariance's
        self.Ax = np.zeros(len(lu.Ai))
        self.Lx, self.Ux = np.zeros(len(lu.Li)), np.zeros(len(lu.Ui))
        self.lu_w = np.zeros(N)
        self.kin_w = kin_w.copy()
        self.measurements = Measurements(est.config)
        self.joint_state = JointState(est.model.n_joints)
        self.pivot_fallbacks = 0
        self.install(None)

    def checkpoint(self) -> np.ndarray:
        """A copy of :attr:`state` (for :meth:`restore`): the one buffer whose work space a tick may
        read before writing; a tick writes the others (the generic tick's sources and LU, the
        kinematics' work space, the measurement vector) whole before reading them."""
        return self.state.copy()

    def restore(self, saved: np.ndarray) -> None:
        """:attr:`state` back to the :meth:`checkpoint` ``saved``, the counter to zero."""
        np.copyto(self.state, saved)
        self.pivot_fallbacks = 0

    def install(self, tail: np.ndarray | None) -> np.ndarray:
        """Make :attr:`state` with a copy of ``tail`` after the views (the structured tick's
        constants and work space: each array argument of a compiled call costs an allocation and
        two atomic reference counts); returns :attr:`state`."""
        NB, o = self._est.model.NB, self._offsets
        self.state = S = np.zeros(o["STAIL"] + (0 if tail is None else tail.size))
        self.E, self.V = S[:9 * NB].reshape(NB, 3, 3), S[9 * NB:15 * NB].reshape(NB, 6)
        self.x, self.imu = S[o["SX"]:o["SIMU"]], S[o["SIMU"]:o["SOUT"]]
        self.out, self.info, self.cov = S[o["SOUT"]:o["SINFO"]], S[o["SINFO"]:o["SCOV"]], S[o["SCOV"]:o["STAIL"]]
        if tail is not None:
            S[o["STAIL"]:] = tail
        self.result = Estimate(self._est, self.out, self.x, self.imu, self.cov)
        return S
