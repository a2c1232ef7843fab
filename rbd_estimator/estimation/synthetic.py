"""Synthetic sensor readings from a known state: what a robot would measure (demo, node tests).

Computed with the package's own reference dynamics (:func:`rbd_estimator.dynamics.rnea.rnea_full`),
so this is not an independent oracle: the library's tests use pinocchio instead
(``test/groundtruth.py``). Conventions are those of the estimator's inputs.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..dynamics.crba import crba
from ..dynamics.kinematics import joint_transform
from ..dynamics.rnea import rnea, rnea_full
from ..sensors import ContactForce, FootForce, JointTorque
from ..spatial import R_to_quat
from .estimator import Estimator, ImuSample


class SensorReadings(NamedTuple):
    """Readings of every configured sensor plus the true joint torques (``estimator.joint_names``)."""
    imu: ImuSample | None
    ft: np.ndarray                  # (n_ft, 6) [fx, fy, fz, tx, ty, tz] per sensor frame and direction
    load_cells: list                # one array of cell forces (N) per load-cell group
    joint_torques: np.ndarray       # configured joint-torque sensors
    tau: np.ndarray                 # true joint torques
    readings: dict = {}             # the other sensors (foot and contact force sensors) by name


def contact_wrench_map(estimator: Estimator, wrenches) -> dict:
    """``{contact frame: wrench}`` for :func:`rnea`'s ``f_ext`` from ``(n_contacts, 6)`` wrenches."""
    out: dict = {}
    for frame, w in zip(estimator.contact_frames, np.asarray(wrenches, dtype=float).reshape(-1, 6)):
        out[frame] = out.get(frame, np.zeros(6)) + w
    return out


def consistent_base_acceleration(estimator: Estimator, q, v, a, wrenches) -> np.ndarray:
    """The free-flyer acceleration (pinocchio layout) for which the base's Newton–Euler equation
    holds under the joint accelerations ``a[6:]`` and the contact ``wrenches``: the base wrench of
    the RNEA is affine in it, ``H_bb a_b + c``."""
    m = estimator.model
    a0 = np.array(a, dtype=float)
    a0[:6] = 0.0
    c = rnea(m, q, v, a0, contact_wrench_map(estimator, wrenches))[:6]
    return np.linalg.solve(crba(m, q)[:6, :6], -c)


def measure(estimator: Estimator, q, v, a, wrenches, rng: np.random.Generator | None = None,
            noise: float = 0.0) -> SensorReadings:
    """Sensor readings of the robot in state ``(q, v, a)`` (pinocchio layout, model order) under
    the contact ``wrenches`` ((n_contacts, 6), contact frames). With ``noise > 0`` every reading gets
    Gaussian noise of ``noise ×`` its configured standard deviation."""
    m, cfg = estimator.model, estimator.config
    q, v, a = (np.asarray(x, dtype=float) for x in (q, v, a))
    wrenches = np.asarray(wrenches, dtype=float).reshape(-1, 6)
    tau_full, vb, ab, f = rnea_full(m, q, v, a, contact_wrench_map(estimator, wrenches))
    jv = m.joint_v_index
    tau = tau_full[jv]
    rng = rng or np.random.default_rng()
    gauss = (lambda s, n: rng.normal(0.0, noise * s, n)) if noise > 0 else (lambda s, n: np.zeros(n))
    imu = _imu(estimator, q, vb, ab, gauss) if cfg.imu is not None else None
    ft = np.zeros((len(cfg.ft_sensors), 6))
    for k, s in enumerate(cfg.ft_sensors):
        sensor = s.bind(m)
        R, sign = s.rotation(m, sensor)
        n, fo = f[sensor.body][:3], f[sensor.body][3:]
        ft[k] = sign * np.concatenate([R @ fo, R @ n])
        ft[k] += np.concatenate([gauss(s.force_stddev, 3), gauss(s.torque_stddev, 3)])
    cells = []
    for lc in cfg.load_cells:
        w = wrenches[estimator.contact_names.index(lc.contact)]
        x, y = lc.positions[:, 0], lc.positions[:, 1]
        C = np.vstack([np.ones_like(x), y, -x])
        forces = np.linalg.lstsq(C, np.array([w[2], w[3], w[4]]), rcond=None)[0]
        cells.append(forces + gauss(lc.stddev, len(x)))
    jv_of = {n: jv[k] for k, n in enumerate(m.joint_names)}
    jt = np.array([s.reading(tau[m.joint_names.index(s.name)] + gauss(s.stddev, 1)[0], v[jv_of[s.name]],
                             a[jv_of[s.name]]) for s in cfg.of_kind(JointTorque)])
    other = {}
    for s in cfg.of_kind(FootForce):        # the contact's normal force
        other[s.name] = wrenches[estimator.contact_names.index(s.contact)][2:3] + gauss(s.stddev, 1)
    for s in cfg.of_kind(ContactForce):     # the contact's force, contact frame
        other[s.name] = wrenches[estimator.contact_names.index(s.contact)][:3] + gauss(s.stddev, 3)
    return SensorReadings(imu, ft, cells, jt, tau, other)


def _imu(estimator, q, vb, ab, gauss) -> ImuSample:
    """IMU frame F on body b: orientation in the world, ``ω_F``, proper acceleration
    ``a_F,lin + ω_F × v_F,lin`` (``a`` contains ``-a_g``) and ``ω̇_F``. The gyro gets no noise: the
    estimator takes it as a kinematic input, like the joint velocities."""
    m, imu = estimator.model, estimator.config.imu
    frame = m.frame(imu.frame)
    b = frame.body
    E = np.eye(3)                                      # rotation world → body b
    chain = []
    while b >= 0:
        chain.append(b)
        b = m.parents[b]
    for i in reversed(chain):
        E = joint_transform(m, i, q)[:3, :3] @ E
    R_wF = (frame.E @ E).T
    X = frame.X
    vF, aF = X @ vb[frame.body], X @ ab[frame.body]
    acc = aF[3:] + np.cross(vF[:3], vF[3:])
    return ImuSample(R_to_quat(R_wF), vF[:3].copy(),            # the gyro is a kinematic input: noiseless
                     acc + gauss(imu.linear_acceleration_stddev, 3),
                     aF[:3] + gauss(imu.angular_acceleration_stddev, 3) if imu.use_angular_acceleration else None)
