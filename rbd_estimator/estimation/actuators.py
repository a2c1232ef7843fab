"""The actuator model of current-sensed joints, applied to their readings before every estimate.

A joint-torque sensor that reads a motor current (``joint_torque.<j>.*``,
:class:`~rbd_estimator.sensors.JointTorque`) sees the motor torque ``τ_m = k_t N i`` (torque constant
× gear ratio × reading). The joint — the torque ``τ_j`` of Nori's eq. (3τ) that the link feels — gets

    τ_j = τ_m − τ_f(q̇_j) − I_a q̈_j,      τ_f(q̇) = f_c tanh(q̇ / v_s) + b q̇

(Coulomb friction ``f_c`` smoothed over ``v_s``, viscous ``b``, the rotor's reflected inertia
``I_a``: MuJoCo's ``frictionloss``, ``damping`` and ``armature``). The sensor's row is
``τ_j / σ = k_t N y' / σ`` (its ``rows``), and before every estimate the reading ``y_j`` becomes

    y'_j = y_j − (τ_f(q̇_j) + I_a q̈_j) / (k_t N)

(this class, compiled, no allocation per tick) with the ``q̇`` and ``q̈`` of the
same estimate: the velocities and the accelerations it is given (with ``joint_acceleration_stddev >
0`` that is the acceleration *measurement* q̈ᵐ, not the estimated q̈: the row's variance then gains
``(I_a σ_a)²``). Done on the readings rather than as right-hand-side terms of the rows, the model
keeps the structured solver (whose sensor rows read ``y`` alone). Docs: docs/actuator_model.md.
"""
from __future__ import annotations

import numpy as np

from ..jit import njit
from ..sensors.joint_torque import JointTorque


class ActuatorModel:
    """``(τ_f(q̇) + I_a q̈) / (k_t N)`` of every joint-torque sensor with friction or armature, in
    reading units (see the module docstring)."""

    def __init__(self, y_index, joint_index, coulomb, viscous, velocity, armature, n_y: int, n_joints: int):
        self.y_index = np.asarray(y_index, dtype=np.int64)       # entries of y
        self.joint_index = np.asarray(joint_index, dtype=np.int64)
        self.coulomb = np.asarray(coulomb, dtype=np.float64)     # f_c / (k_t N)
        self.viscous = np.asarray(viscous, dtype=np.float64)     # b / (k_t N)
        self.velocity = np.asarray(velocity, dtype=np.float64)   # v_s
        self.armature = np.asarray(armature, dtype=np.float64)   # I_a / (k_t N)
        self.n_y, self.n_joints = n_y, n_joints

    @classmethod
    def of(cls, config, joint_names, y_offsets: dict, n_y: int) -> "ActuatorModel | None":
        """The model of ``config``'s joint-torque sensors (None when none has friction or armature)."""
        rows = [(y_offsets[s.name], list(joint_names).index(s.name), s.coulomb_friction / s.scale,
                 s.viscous_friction / s.scale, s.friction_velocity, s.armature / s.scale)
                for s in config.sensors if isinstance(s, JointTorque) and s.has_actuator_model]
        return cls(*zip(*rows), n_y=n_y, n_joints=len(joint_names)) if rows else None

    def workspace(self) -> np.ndarray:
        """The buffer of one estimator's data (:meth:`corrected` writes it)."""
        return np.zeros(self.n_y)

    def corrected(self, y, dq, ddq, out) -> np.ndarray:
        """``y'`` (module docstring) into ``out`` (``y`` is not changed). Inputs of another shape are
        returned as they are (the estimate then reports them)."""
        y, dq, ddq = (np.asarray(a, dtype=np.float64) for a in (y, dq, ddq))
        if y.shape != out.shape or dq.shape != (self.n_joints,) or ddq.shape != (self.n_joints,):
            return y
        _correct(y, dq, ddq, out, self.y_index, self.joint_index, self.coulomb, self.viscous, self.velocity,
                 self.armature)
        return out


@njit
def _correct(y, dq, ddq, out, yi, ji, fc, b, vs, ia):
    for k in range(y.shape[0]):
        out[k] = y[k]
    for s in range(yi.shape[0]):
        v = dq[ji[s]]
        out[yi[s]] -= fc[s] * np.tanh(v / vs[s]) + b[s] * v + ia[s] * ddq[ji[s]]
