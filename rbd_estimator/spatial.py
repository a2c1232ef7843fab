"""6-D spatial algebra in Featherstone's notation (Rigid Body Dynamics Algorithms, ch. 2).

Conventions, used everywhere inside the library:

* motion vectors are ``[ω; v]`` (angular first), force vectors ``[n; f]`` (moment first);
* ``plux(E, r)`` is the Plücker transform ``ᴮX_A`` from A to B coordinates, where ``E`` is the
  rotation from A to B coordinates (``x_B = E x_A`` for a free 3-D vector) and ``r`` is the
  position of B's origin expressed in A coordinates (metres);
* the force transform is ``ᴮX*_A = ᴮX_A⁻ᵀ``;
* at every public boundary a wrench is ``[fx, fy, fz, tx, ty, tz]`` (``geometry_msgs/Wrench``);
  :func:`wrench_to_force` and :func:`force_to_wrench` convert.

All functions take and return numpy arrays; SI units.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "skew", "crm", "crf", "rot", "xlt", "plux", "force_X",
    "mcI", "inertia_from_mcI", "rpy_to_E", "quat_to_R", "R_to_quat", "axis_angle_to_R",
    "wrench_to_force", "force_to_wrench",
]


def skew(p: np.ndarray) -> np.ndarray:
    """3×3 matrix ``p×`` with ``(p×) x = p × x``."""
    return np.array([[0.0, -p[2], p[1]],
                     [p[2], 0.0, -p[0]],
                     [-p[1], p[0], 0.0]])


def crm(v: np.ndarray) -> np.ndarray:
    """Motion cross product matrix ``v×`` (Featherstone eq. 2.31)."""
    w, u = skew(v[:3]), skew(v[3:])
    out = np.zeros((6, 6))
    out[:3, :3] = w
    out[3:, :3] = u
    out[3:, 3:] = w
    return out


def crf(v: np.ndarray) -> np.ndarray:
    """Force cross product matrix ``v×* = -(v×)ᵀ`` (Featherstone eq. 2.32)."""
    return -crm(v).T


def rot(E: np.ndarray) -> np.ndarray:
    """Plücker rotation: ``[[E, 0], [0, E]]``."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    return X


def xlt(r: np.ndarray) -> np.ndarray:
    """Plücker translation to a frame whose origin is at ``r``: ``[[1, 0], [-r×, 1]]``."""
    X = np.eye(6)
    X[3:, :3] = -skew(r)
    return X


def plux(E: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Plücker motion transform ``ᴮX_A = rot(E) xlt(r)`` (Featherstone eq. 2.24)."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -E @ skew(r)
    return X


def force_X(X: np.ndarray) -> np.ndarray:
    """Force transform ``X* = X⁻ᵀ`` of a Plücker motion transform."""
    E = X[:3, :3]
    Xf = X.copy()
    Xf[:3, 3:] = X[3:, :3]
    Xf[3:, :3] = 0.0
    Xf[:3, :3] = E
    Xf[3:, 3:] = E
    return Xf


def mcI(m: float, c: np.ndarray, Ic: np.ndarray) -> np.ndarray:
    """Rigid-body spatial inertia from mass ``m`` (kg), centre of mass ``c`` (m, body coordinates)
    and rotational inertia ``Ic`` about the centre of mass (kg·m², body axes) (Featherstone eq. 2.63)."""
    C = skew(c)
    out = np.zeros((6, 6))
    out[:3, :3] = Ic + m * C @ C.T
    out[:3, 3:] = m * C
    out[3:, :3] = m * C.T
    out[3:, 3:] = m * np.eye(3)
    return out


def inertia_from_mcI(I: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Inverse of :func:`mcI`: ``(m, c, Ic)``; ``c`` is zero for a massless body."""
    m = float(I[3, 3])
    if m <= 0.0:
        return 0.0, np.zeros(3), I[:3, :3].copy()
    C = I[:3, 3:] / m
    c = np.array([C[2, 1], C[0, 2], C[1, 0]])
    Ic = I[:3, :3] - m * C @ C.T
    return m, c, Ic


def rpy_to_E(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw (fixed axes x, y, z) → rotation matrix ``R = Rz(y) Ry(p) Rx(r)``
    mapping child coordinates to parent coordinates."""
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def quat_to_R(qxyzw) -> np.ndarray:
    """Unit quaternion ``[x, y, z, w]`` (ROS/pinocchio order) → rotation matrix (normalises)."""
    x, y, z, w = np.asarray(qxyzw, dtype=float) / np.linalg.norm(qxyzw)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def axis_angle_to_R(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' formula: rotation by ``angle`` (rad) about unit ``axis``."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * K @ K


def wrench_to_force(w) -> np.ndarray:
    """Boundary wrench ``[fx, fy, fz, tx, ty, tz]`` → spatial force ``[n; f]``."""
    w = np.asarray(w, dtype=float)
    return np.concatenate([w[3:6], w[0:3]])


def force_to_wrench(f) -> np.ndarray:
    """Spatial force ``[n; f]`` → boundary wrench ``[fx, fy, fz, tx, ty, tz]``."""
    f = np.asarray(f, dtype=float)
    return np.concatenate([f[3:6], f[0:3]])


def R_to_quat(R) -> np.ndarray:
    """Rotation matrix → unit quaternion ``[x, y, z, w]`` (the inverse of :func:`quat_to_R`)."""
    w = np.sqrt(max(0.0, 1.0 + R[0, 0] + R[1, 1] + R[2, 2])) / 2.0
    x = np.copysign(np.sqrt(max(0.0, 1.0 + R[0, 0] - R[1, 1] - R[2, 2])) / 2.0, R[2, 1] - R[1, 2])
    y = np.copysign(np.sqrt(max(0.0, 1.0 - R[0, 0] + R[1, 1] - R[2, 2])) / 2.0, R[0, 2] - R[2, 0])
    z = np.copysign(np.sqrt(max(0.0, 1.0 - R[0, 0] - R[1, 1] + R[2, 2])) / 2.0, R[1, 0] - R[0, 1])
    return np.array([x, y, z, w])
