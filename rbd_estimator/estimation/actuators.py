"""The actuator model of current-sensed joints, applied inside the compiled ticks.

A joint-torque sensor that reads a motor current (``joint_torque.<j>.*``,
:class:`~rbd_estimator.sensors.JointTorque`) sees the motor torque ``τ_m = k_t N i`` (torque constant
× gear ratio × reading). The joint — the torque ``τ_j`` of Nori's eq. (3τ) that the link feels — gets

    τ_j = τ_m − τ_f(q̇_j) − I_a q̈_j,      τ_f(q̇) = f_c tanh(q̇ / v_s) + b q̇

(Coulomb friction ``f_c`` smoothed over ``v_s``, viscous ``b``, the rotor's reflected inertia
``I_a``: MuJoCo's ``frictionloss``, ``damping`` and ``armature``). The sensor's row is
``τ_j / σ = k_t N y' / σ`` (its ``rows``), and the reading ``y_j`` enters the right-hand side as

    y'_j = y_j − (τ_f(q̇_j) + I_a q̈_j) / (k_t N)

with the ``q̇`` and ``q̈`` of the same estimate: the velocities and the accelerations it is given
(with ``joint_acceleration_stddev > 0`` that is the acceleration *measurement* q̈ᵐ, not the
estimated q̈: the row's variance then gains ``(I_a σ_a)²``). Done on the readings' copy in the
tick's sources rather than as right-hand-side terms of the rows, the model keeps the structured
solver (whose sensor rows read ``y`` alone).

:func:`subtract_actuator_terms` does it in both compiled ticks (the generic tick on its sources
``rsrc``, the structured tick on its sensor sources), after the inputs' finiteness check: the
caller's ``y`` is not changed, and nothing runs in Python per tick. Its parameters are packed
records (:mod:`rbd_estimator.kernels.layout`): :data:`ACT_INTS` in the integer blob,
:data:`ACT_FLOATS` in the float blob. Docs: docs/actuator_model.md.
"""
from __future__ import annotations

import numpy as np

from ..jit import njit
from ..kernels.layout import Layout
from ..sensors.joint_torque import JointTorque

#: one actuator's integers: the entry of ``y`` its reading is, its joint (index in ``q``)
ACT_INTS = Layout("Y J")
A_Y, A_J = ACT_INTS.slots
ACT_INTS.check(globals(), "A_")
#: one actuator's floats, all in reading units: f_c / (k_t N), b / (k_t N), v_s (rad/s), I_a / (k_t N)
ACT_FLOATS = Layout("FC B VS IA")
A_FC, A_B, A_VS, A_IA = ACT_FLOATS.slots
ACT_FLOATS.check(globals(), "A_")
N_INTS, N_FLOATS = ACT_INTS.size, ACT_FLOATS.size


class ActuatorModel:
    """The packed parameters of every joint-torque sensor with friction or armature (see the module
    docstring): ``ints`` (int64, :data:`ACT_INTS` records) and ``floats`` (float64,
    :data:`ACT_FLOATS` records), one record per sensor; :attr:`count` records."""

    def __init__(self, records: list):
        """``records``: ``(y index, joint index, f_c/(k_t N), b/(k_t N), v_s, I_a/(k_t N))`` per sensor."""
        self.count = len(records)
        self.ints = np.array([r[:N_INTS] for r in records], dtype=np.int64).reshape(-1)
        self.floats = np.array([r[N_INTS:] for r in records], dtype=np.float64).reshape(-1)

    @classmethod
    def of(cls, config, joint_names, y_offsets: dict) -> "ActuatorModel":
        """The model of ``config``'s joint-torque sensors (:attr:`count` 0 when none has friction
        or armature)."""
        names = list(joint_names)
        return cls([(y_offsets[s.name], names.index(s.name), s.coulomb_friction / s.scale,
                     s.viscous_friction / s.scale, s.friction_velocity, s.armature / s.scale)
                    for s in config.sensors if isinstance(s, JointTorque) and s.has_actuator_model])


@njit
def subtract_actuator_terms(n, ip, io, fp, fo, dq, ddq, m, mo):
    """``m[mo + y_s] −= (τ_f(q̇_j) + I_a q̈_j) / (k_t N)`` for the ``n`` actuators ``s`` whose records
    start at ``ip[io]`` (:data:`ACT_INTS`) and ``fp[fo]`` (:data:`ACT_FLOATS`): the readings, copied
    to ``m`` from ``mo`` on, become ``y'`` (module docstring). Allocates nothing."""
    for s in range(n):
        i, f = io + N_INTS * s, fo + N_FLOATS * s
        j = ip[i + A_J]
        v = dq[j]
        m[mo + ip[i + A_Y]] -= fp[f + A_FC] * np.tanh(v / fp[f + A_VS]) + fp[f + A_B] * v + fp[f + A_IA] * ddq[j]
