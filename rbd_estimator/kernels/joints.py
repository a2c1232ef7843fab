"""The compiled joint transform (RBDA §4.4, Table 4.1): the one ``ⁱX_λ(i) = X_J(q_i) X_T(i)`` of
every compiled kernel (:func:`joint_transforms`), and the one record its constants are packed in.
The readable counterpart is :func:`rbd_estimator.model.joints.joint_transform` (6 × 6 numpy).

A joint's constants are one record :data:`JOINT` of floats (:func:`joint_record` packs it): the
unit joint axis (joint coordinates), the tree transform ``X_T = plux(E_T, r_T)`` and, for a revolute
joint, ``(A, B, C)`` with ``R(axis, q)ᵀ E_T = cos q A + sin q B + C`` (Rodrigues), so that the
per-tick rotation costs nine multiply-adds once ``cos q`` and ``sin q`` are known. Joint types are
the codes :data:`FIXED`, :data:`REVOLUTE`, :data:`PRISMATIC`, :data:`FREE` (the model's).
"""
from __future__ import annotations

import numpy as np

from ..jit import fast_njit, uidx as _u
from .layout import Layout

__all__ = ["FIXED", "REVOLUTE", "PRISMATIC", "FREE", "JOINT", "J_SIZE", "joint_record", "revolute_abc",
           "joint_transforms"]

#: joint type codes (the model's :data:`~rbd_estimator.model.elements.FIXED` …)
FIXED, REVOLUTE, PRISMATIC, FREE = 0, 1, 2, 3

#: a joint's packed constants: axis (3), ``E_T`` (9, row-major), ``r_T`` (3, m), ``A, B, C`` (27)
JOINT = Layout([("AXIS", 3), ("ET", 9), ("RT", 3), ("ABC", 27)])
J_AXIS, J_ET, J_RT, J_ABC = JOINT.slots
J_SIZE = JOINT.size


def revolute_abc(axis: np.ndarray, E_tree: np.ndarray) -> np.ndarray:
    """``(A, B, C)`` (27 values) with ``R(axis, q)ᵀ E_tree = cos q A + sin q B + C`` (Rodrigues,
    unit ``axis``): ``A = (1 − a aᵀ) E_T``, ``B = −a× E_T``, ``C = a aᵀ E_T``."""
    a = np.asarray(axis, dtype=float)
    aa = np.outer(a, a)
    ax = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.concatenate([((np.eye(3) - aa) @ E_tree).ravel(), (-ax @ E_tree).ravel(), (aa @ E_tree).ravel()])


def joint_record(jtype: int, axis, E_tree, r_tree) -> np.ndarray:
    """The :data:`JOINT` record (``JOINT.size`` floats) of a joint of type ``jtype`` with unit
    ``axis``, tree rotation ``E_tree`` (3 × 3) and translation ``r_tree`` (m)."""
    E_tree = np.asarray(E_tree, dtype=float).reshape(3, 3)
    abc = revolute_abc(axis, E_tree) if jtype == REVOLUTE else np.zeros(27)
    return np.concatenate([np.asarray(axis, dtype=float).reshape(3), E_tree.ravel(),
                           np.asarray(r_tree, dtype=float).reshape(3), abc])


@fast_njit
def joint_transforms(lo, hi, ints, t0, k0, si, J, j0, js, q, E, e0, es, r, r0, rs, free_as_fixed):
    """``ⁱX_λ(i) = X_J(q_i) X_T(i) = plux(E_i, r_i)`` (RBDA Table 4.1) of the bodies ``lo ≤ i < hi``
    into ``E[e0 + es i:][:9]`` (row-major) and ``r[r0 + rs i:][:3]`` (m). Body i's joint type is
    ``ints[t0 + si i]``, the index of its position in ``q`` ``ints[k0 + si i]`` (unused for a fixed
    joint), its record (:data:`JOINT`) ``J[j0 + js i:]``. With ``X_J = plux(E_J, r_J)``:
    ``E = E_J E_T``, ``r = r_T + E_Tᵀ r_J``. Revolute ``E = cos q A + sin q B + C``, ``r = r_T``;
    prismatic ``E = E_T``, ``r = r_T + E_Tᵀ a q``; free ``E_J = R(quat)ᵀ``, ``r_J = p`` with
    ``q[k:k+7] = [p, x, y, z, w]`` (the quaternion normalised), or ``X_T`` alone with
    ``free_as_fixed`` (a floating base whose pose the caller handles); fixed ``X_T``.

    One compiled loop over the bodies rather than a primitive per body: a per-body call of a
    function that branches would count the arrays' references at every call."""
    for i in range(lo, hi):
        t, k = ints[_u(t0 + si * i)], ints[_u(k0 + si * i)]
        j, eo, ro = j0 + js * i, e0 + es * i, r0 + rs * i
        et, rt = j + J_ET, j + J_RT
        if t == REVOLUTE:
            qk = q[_u(k)]
            c, s = np.cos(qk), np.sin(qk)
            ao = j + J_ABC
            for a in range(9):
                E[_u(eo + a)] = c * J[_u(ao + a)] + s * J[_u(ao + 9 + a)] + J[_u(ao + 18 + a)]
            r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)] = J[_u(rt)], J[_u(rt + 1)], J[_u(rt + 2)]
        elif t == FREE and not free_as_fixed:
            n = np.sqrt(q[_u(k + 3)] ** 2 + q[_u(k + 4)] ** 2 + q[_u(k + 5)] ** 2 + q[_u(k + 6)] ** 2)
            x, y, z, w = q[_u(k + 3)] / n, q[_u(k + 4)] / n, q[_u(k + 5)] / n, q[_u(k + 6)] / n
            e00, e10, e20 = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)   # E_J = R(quat)ᵀ
            e01, e11, e21 = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
            e02, e12, e22 = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
            p0, p1, p2 = q[_u(k)], q[_u(k + 1)], q[_u(k + 2)]
            for b in range(3):
                a0, a1, a2 = J[_u(et + b)], J[_u(et + 3 + b)], J[_u(et + 6 + b)]
                E[_u(eo + b)] = e00 * a0 + e01 * a1 + e02 * a2
                E[_u(eo + 3 + b)] = e10 * a0 + e11 * a1 + e12 * a2
                E[_u(eo + 6 + b)] = e20 * a0 + e21 * a1 + e22 * a2
                r[_u(ro + b)] = J[_u(rt + b)] + a0 * p0 + a1 * p1 + a2 * p2
        else:                                                       # fixed, prismatic: E = E_T
            for a in range(9):
                E[_u(eo + a)] = J[_u(et + a)]
            if t == PRISMATIC:
                qk = q[_u(k)]
                x0, x1, x2 = J[_u(j + J_AXIS)] * qk, J[_u(j + J_AXIS + 1)] * qk, J[_u(j + J_AXIS + 2)] * qk
                for a in range(3):
                    r[_u(ro + a)] = J[_u(rt + a)] + (J[_u(et + a)] * x0 + J[_u(et + 3 + a)] * x1
                                                     + J[_u(et + 6 + a)] * x2)
            else:
                r[_u(ro)], r[_u(ro + 1)], r[_u(ro + 2)] = J[_u(rt)], J[_u(rt + 1)], J[_u(rt + 2)]
