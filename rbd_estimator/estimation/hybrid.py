"""Forward and hybrid dynamics as a split of the estimator's own system (Nori §III–V, eqs. 3–5, 7, 14–15).

Nori's system ``D d + b = 0`` is linear in ``d = {a_i, f_i, τ_i, q̈_i}``; inverse, forward and
hybrid dynamics (Featherstone §9.2) differ only in which of ``τ_k`` and ``q̈_k`` is known for each
degree of freedom ``k``. Here the system is the estimator's: the Newton–Euler rows (3a), (3f), (3τ)
of :class:`~.layout.SystemLayout` with the joint accelerations as unknowns (as with
``joint_acceleration_stddev > 0``), no sensors, and for a floating base its six degrees of freedom
made explicit: the unknowns ``q̈_0`` with rows ``(3a_0): a_0 − S_0 q̈_0 = ⁰X_w a_w`` and the base
wrench ``τ_0`` in (3f_0) through ``f_0 = S_0 τ_0``. Every known quantity is then *substituted*, as
the layout substitutes given accelerations: its column moves to the right-hand side, read from the
inputs (Nori's rows (7q̈) and (14τ)); the known external wrenches enter the right-hand side of
(3f) (eqs. 7–8). What remains is square, one unknown of each pair per DoF.

It is planned once by the generic path's plan (:func:`.plan.plan_static_lu`: worst-case pattern,
block triangular form, static pivots, symbolic LU) and solved every call by the estimator's
compiled generic tick (:func:`.generic_tick.generic_tick`: kinematics, sources, gathers, numeric LU, solve),
allocation-free. All accelerations unknown is forward dynamics (:class:`.forward.SparseForwardDynamics`),
all known inverse dynamics.

Inputs and outputs follow pinocchio's layout (:class:`~rbd_estimator.model.RobotModel`: ``q`` (nq),
velocity-sized ``q̇``, ``q̈``, ``τ``; a floating base's first six entries are the free flyer's,
``[v; ω]`` in base coordinates). Units SI.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..dynamics.kinematics import S_FREE, external_forces
from ..jit import njit
from ..model.forward_kinematics import K_WTMP, KinematicTree
from ..model.robot_model import RobotModel
from . import kinematics as kin
from .config import SensorConfig
from .generic_tick import generic_tick
from .layout import SystemLayout
from .plan import StaticLU, plan_static_lu
from .sparse_lu import gather

__all__ = ["HybridDynamics"]

#: random states on which the worst-case pattern is taken (the estimator's plan, Nori Remark 4)
PLAN_STATES = 3


class HybridDynamics:
    """``(q̈, τ) = HybridD(model, q, q̇, τ_U, q̈_K, f^x)``: the DoF ``K`` (``known_acceleration``)
    follow given accelerations and their torques are computed; the others ``U`` have given torques
    (a passive joint: zero) and their accelerations are computed.

    ``known_acceleration``: nv bools in pinocchio's velocity layout (default all false: forward
    dynamics). For a floating base entries 0–5 split the free flyer: false, the base wrench
    component is given (normally zero, a free-floating robot); true, the base acceleration is
    given and the wrench that produces it is computed.
    """

    def __init__(self, model: RobotModel, known_acceleration=None, seed: int = 0):
        if model.mimic_joints:
            raise ValueError(f"HybridDynamics: mimic joints ({model.mimic_joints[0].joint}, …) are not "
                             "supported; the system is stated for independent joints")
        self.model = m = model
        known = np.zeros(m.nv, bool) if known_acceleration is None else np.asarray(known_acceleration, bool)
        if known.shape != (m.nv,):
            raise ValueError(f"known_acceleration has shape {known.shape}, expected ({m.nv},): one flag per DoF")
        self.known_acceleration = known.copy()
        self.layout = lay = SystemLayout(m, SensorConfig(floating_base=m.floating_base,
                                                         joint_acceleration_stddev=1.0), prior=False)
        one_dof = m.joint_dofs == 1
        self._tree = KinematicTree(m, np.where(one_dof, m.q_idx, -1), np.where(one_dof, m.v_idx, -1))
        self._kin = self._tree.packed() + (np.zeros(9 * m.NB), np.zeros(6 * m.NB))   # ip, fp, w, E, V
        nv, NB = m.nv, m.NB
        # the inputs, the layout's measurement vector y: [τ (nv), q̈ (nv), f^x (6 NB), ⁰X_w a_w (6)]
        self._y_tau, self._y_ddq, self._y_fx, self._y_g0 = 0, nv, 2 * nv, 2 * nv + 6 * NB
        self._y = np.zeros(self._y_g0 + 6)
        self._src, self._rsrc = np.zeros(lay.n_src), np.zeros(lay.n_rsrc + len(self._y))
        self._src[0] = self._rsrc[0] = 1.0
        trip, rhs, pivots, out, N = _split_system(lay, known, lay.n_rsrc + np.array(
            [self._y_tau, self._y_ddq, self._y_fx, self._y_g0]))
        self.n = N
        r, c, v = zip(*rhs)
        self._system = (sp.csr_matrix((v, (r, c)), shape=(N, len(self._rsrc))), out, pivots)
        self._w, self._x = np.zeros(N), np.zeros(N)
        self._fx, self._out = np.zeros((NB, 6)), np.zeros(2 * nv)
        self._imu, self._info, self._no_ddq = np.zeros(13), np.zeros(4), np.zeros(0)
        self._a_w = self._tree.a_root if m.floating_base else np.zeros(6)      # a_w = −a_g, Featherstone's trick
        #: solves in which a planned pivot vanished and SuperLU's partial pivoting took over (allocating)
        self.pivot_fallbacks = 0
        rng = np.random.default_rng(seed)
        self._trip, states = self._worst_case(trip, rng)
        self._plan_factorisation(self._src.copy())
        self._plan_pivots_for_the_neutral_configuration(self._src.copy(), rng, states)

    def _plan_factorisation(self, src: np.ndarray) -> None:
        """The static LU planned on the numeric instance ``src`` and the buffers of its tick."""
        R, out, pivots = self._system
        self.lu: StaticLU = plan_static_lu(self._trip, self.n, self.layout.n_src, src, pivots=pivots)
        self._GR = self.lu.permute_rows(R)
        self._GO = self.lu.permute_cols(out)
        self._Ax = np.zeros(self.lu.nnz)
        self._Lx, self._Ux = np.zeros(len(self.lu.Li)), np.zeros(len(self.lu.Ui))

    def _plan_pivots_for_the_neutral_configuration(self, planned: np.ndarray, rng, states) -> None:
        """Pivots planned at a random state can vanish at the neutral configuration (an entry such as
        ``sin q_i`` of ``ⁱX_λ``, zero with every joint at zero: every shipped robot), where a solve
        would then take the allocating fallback. Then plan them there instead (random velocities),
        and keep that plan if it holds there and at the planning states (as the estimator does for
        its nominal stance, :meth:`.estimator.Estimator._plan_pivots_for_the_nominal_stance`);
        ``planned``: the numeric instance of the plan made, kept otherwise."""
        neutral = (self.model.neutral_configuration(), rng.normal(size=self.model.nv))
        if self._pivots_hold_at(*neutral):
            return
        self._sources(*neutral)
        self._plan_factorisation(self._src.copy())
        if not all(self._pivots_hold_at(q, dq) for q, dq in [neutral, *states]):
            self._plan_factorisation(planned)

    def _pivots_hold_at(self, q, dq) -> bool:
        """True when a solve at ``(q, q̇)`` (random inputs) keeps the planned pivots and agrees with
        SuperLU's partial pivoting to 1e-9 of the solution's size."""
        before, rng = self.pivot_fallbacks, np.random.default_rng(0)
        nv = self.model.nv
        try:
            self.solve(q, dq, rng.normal(size=nv), rng.normal(size=nv))
            if self.pivot_fallbacks > before:
                return False
            rhs = np.zeros_like(self._x)
            gather(*self._GR, self._rsrc, rhs)
            return self.lu.solves_as_superlu(self._Ax, rhs, self._x)
        except (FloatingPointError, RuntimeError):   # noqa: PERF203 - plan time
            return False
        finally:
            self.pivot_fallbacks = before

    def _worst_case(self, trip: np.ndarray, rng) -> tuple[np.ndarray, list]:
        """The triplets nonzero at some random state (the worst-case pattern, Nori Remark 4) and the
        states ``(q, q̇)``; the sources of the last state are left in ``_src`` as the plan's numeric
        instance."""
        hit, states = np.zeros(len(trip), bool), []
        for _ in range(PLAN_STATES):
            states.append((self.model.random_configuration(rng, scale=np.pi), rng.normal(size=self.model.nv)))
            self._sources(*states[-1])
            hit |= trip[:, 3] * self._src[trip[:, 2].astype(np.int64)] != 0.0
        return trip[hit], states

    def _sources(self, q, dq):
        """``src`` and the kinematic part of ``rsrc`` at ``(q, q̇)`` (plan time)."""
        ip, fp, w, E, V = self._kin
        if self.model.floating_base:
            w[ip[K_WTMP]:ip[K_WTMP] + 6] = S_FREE @ dq[:6]
        lay = self.layout
        kin.sources(ip, fp, w, E, V, q, dq, np.zeros(3), self._src, self._rsrc, lay.r_c, lay.r_nu, lay.r_xa0,
                    lay.r_imu_wv)

    def compute(self, q, dq, tau=None, ddq=None, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
        """``(q̈, τ)`` (nv each, new arrays): the given entries (``ddq`` where the acceleration is
        known, ``tau`` elsewhere; ``None`` is zero) completed by the computed ones. ``f_ext`` maps a
        link or frame to the wrench ``[fx, fy, fz, tx, ty, tz]`` in that frame."""
        self.solve(q, dq, tau, ddq, f_ext)
        nv = self.model.nv
        return self._out[:nv].copy(), self._out[nv:].copy()

    def solve(self, q, dq, tau=None, ddq=None, f_ext=None) -> np.ndarray:
        """As :meth:`compute`, into the object's buffer ``[q̈; τ]`` (2 nv, returned; overwritten by
        the next call): one compiled call that allocates nothing (but where a planned pivot vanishes:
        :meth:`_robust_solve`)."""
        m = self.model
        zero = self._y[:0]
        q = _vector(q, m.nq, "q")
        dq = _vector(dq, m.nv, "dq")
        tau = zero if tau is None else _vector(tau, m.nv, "tau")
        ddq = zero if ddq is None else _vector(ddq, m.nv, "ddq")
        external_forces(m, f_ext, out=self._fx)
        status = _hybrid_tick(*self._tick_arguments(), q, dq, tau, ddq)
        if status == 2:
            status = self._robust_solve()
        if status:
            what = "an input" if status == 1 else "the result"
            raise FloatingPointError(f"HybridDynamics: {what} is not finite (pivot ratio {self._info[2]:.3g})")
        return self._out

    def _robust_solve(self) -> int:
        """A planned pivot vanished at this state: the same permuted system solved once with
        SuperLU's partial pivoting (allocates; counted in :attr:`pivot_fallbacks`), the given
        halves of ``[q̈; τ]`` then set as the compiled tick sets them."""
        self.pivot_fallbacks += 1
        gather(*self._GR, self._rsrc, self._x)
        try:
            self._x[:] = self.lu.superlu(self._Ax).solve(self._x)
        except RuntimeError:
            return 2
        gather(*self._GO, self._x, self._out)
        nv, known = self.model.nv, self.known_acceleration
        self._out[:nv][known] = self._y[self._y_ddq:self._y_ddq + nv][known]
        self._out[nv:][~known] = self._y[self._y_tau:self._y_tau + nv][~known]
        return 0 if np.all(np.isfinite(self._out)) else 2

    def _tick_arguments(self) -> tuple:
        lay, lu = self.layout, self.lu
        return (*self._kin, self._src, self._rsrc, lay.r_c, lay.r_nu, lay.r_xa0, lay.r_imu_wv, lay.r_qdd,
                lay.r_y, self._imu, self._no_ddq, self._y, self.model.floating_base, self._a_w, self._fx,
                self.known_acceleration, *lu.G, self._Ax, *self._GR, lu.Ap, lu.Ai, lu.Lp, lu.Li, self._Lx, lu.Up,
                lu.Ui, self._Ux, self._w, self._x, *self._GO, self._out, self._info)


def _split_system(lay: SystemLayout, known: np.ndarray, y_at: np.ndarray):
    """The square system of a split: triplets ``(row, col, src, coef)`` (array), right-hand side
    ``(row, rsrc, coef)``, preferred pivots ``(col, row)``, the output map (2 nv × N: ``q̈`` then
    ``τ`` of the unknown DoF) and N. ``y_at``: the offsets in ``rsrc`` of τ, q̈, f^x, ⁰X_w a_w."""
    m = lay.model
    y_tau, y_ddq, y_fx, y_g0 = (int(o) for o in y_at)
    trip, rhs, qcol, tcol, n, rows = _newton_euler(lay, y_fx, y_g0)
    pivots = [(c, r) for r, c in enumerate(lay.row_pivot[:lay.m_hard]) if c >= 0]
    # substitute the known quantities (Nori's rows 7q̈ / 14τ): column → right-hand side
    given = np.full(n, -1, np.int64)
    given[qcol[known]] = y_ddq + np.flatnonzero(known)
    given[tcol[~known]] = y_tau + np.flatnonzero(~known)
    t = np.asarray(trip, dtype=float)
    sub = given[t[:, 1].astype(np.int64)] >= 0
    assert np.all(t[sub, 2] == 0), "a known quantity multiplies a state-dependent entry"
    rhs += [(int(r), int(given[int(c)]), -v) for r, c, _, v in t[sub]]
    new = np.cumsum(given < 0) - 1                                # renumber the unknowns left
    t = t[~sub]
    t[:, 1] = new[t[:, 1].astype(np.int64)]
    N = int(np.count_nonzero(given < 0))
    assert N == rows, f"the split system is {rows} × {N}"
    pivots = [(int(new[c]), r) for c, r in pivots if given[c] < 0]
    ucol = np.where(known, tcol, qcol)                            # the unknown of each DoF
    out = sp.csr_matrix((np.ones(m.nv), (np.where(known, m.nv, 0) + np.arange(m.nv), new[ucol])),
                        shape=(2 * m.nv, N))
    return t, rhs, pivots, out, N


def _newton_euler(lay: SystemLayout, y_fx: int, y_g0: int):
    """The layout's Newton–Euler rows (3a), (3f), (3τ) with every ``q̈`` and ``τ`` a column, the
    floating base's ``q̈_0``, ``τ_0`` and rows (3a_0) appended, and ``f^x`` on the right of (3f)
    (eqs. 7–8). Returns ``(triplets, rhs, qcol, tcol, n_columns, n_rows)``, ``qcol``/``tcol`` the
    columns of ``q̈``/``τ`` per DoF (pinocchio's velocity layout)."""
    m = lay.model
    trip = [t for t in lay.triplets if t[0] < lay.m_hard]          # no sensor row
    rhs = [t for t in lay.rhs if t[0] < lay.m_hard]
    qcol, tcol = np.zeros(m.nv, np.int64), np.zeros(m.nv, np.int64)
    for i in np.flatnonzero(m.joint_dofs == 1):
        j = m.body_joint_names[i]
        qcol[m.v_idx[i]], tcol[m.v_idx[i]] = lay.col("qdd", j), lay.col("tau", j)
    n, rows = lay.n, lay.m_hard
    if m.floating_base:
        a0 = lay.col("a", m.body_names[0])
        qcol[:6], tcol[:6] = n + np.arange(6), n + 6 + np.arange(6)
        for a in range(6):                                         # (3a_0): a_0 − S_0 q̈_0 = ⁰X_w a_w  (c_0 = 0)
            trip.append((rows + a, a0 + a, 0, 1.0))
            rhs.append((rows + a, y_g0 + a, 1.0))
            for k in np.flatnonzero(S_FREE[a]):                    # and −f_0 = −S_0 τ_0 in (3f_0)
                trip.append((rows + a, int(qcol[k]), 0, -S_FREE[a, k]))
                trip.append((lay.newton_euler_row(0) + a, int(tcol[k]), 0, -S_FREE[a, k]))
        n, rows = n + 12, rows + 6
    for i in range(m.NB):
        rhs.extend((lay.newton_euler_row(i) + a, y_fx + 6 * i + a, 1.0) for a in range(6))
    return trip, rhs, qcol, tcol, n, rows


def _vector(x, n: int, name: str) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=float)
    if x.shape != (n,):
        raise ValueError(f"HybridDynamics: {name} has shape {x.shape}, expected ({n},)")
    return x


@njit
def _hybrid_tick(kip, kfp, kw, E, V, src, rsrc, r_c, r_nu, r_xa0, r_imu_wv, r_qdd, r_y, imu, no_ddq, y,
                 floating, a_w, fx, known, GKp, GKi, GKx, Ax, GRp, GRi, GRx, Ap, Ai, Lp, Li, Lx, Up, Ui, Ux, w, x,
                 GOp, GOi, GOx, out, info, q, dq, tau, ddq):
    """The inputs into the measurement vector ``y`` (τ, q̈, f^x, ⁰X_w a_w) and the free flyer's
    ``v_0`` into the kinematics' buffer, then the estimator's generic tick, then the given entries
    into ``out = [q̈; τ]``. Returns the tick's status (0, 1: an input not finite, 2: the result)."""
    nv = dq.shape[0]
    for k in range(nv):
        y[k] = tau[k] if tau.shape[0] else 0.0
        y[nv + k] = ddq[k] if ddq.shape[0] else 0.0
    NB = fx.shape[0]
    for i in range(NB):
        for k in range(6):
            y[2 * nv + 6 * i + k] = fx[i, k]
    g0 = 2 * nv + 6 * NB
    for k in range(6):
        y[g0 + k] = 0.0
    if floating:
        v0 = kip[K_WTMP]
        for k in range(6):                                       # v_0 = S_0 q̇_0, [ω; v]
            kw[v0 + k] = dq[3 + k] if k < 3 else dq[k - 3]
        # ⁰X_w a_w = [0; R(quat)ᵀ a_w], the quaternion normalised as by joint_transform
        n = np.sqrt(q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6])
        qx, qy, qz, qw = q[3] / n, q[4] / n, q[5] / n, q[6] / n
        R = ((1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)),
             (2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)),
             (2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)))
        for a in range(3):
            y[g0 + 3 + a] = R[0][a] * a_w[3] + R[1][a] * a_w[4] + R[2][a] * a_w[5]
    status = generic_tick(kip, kfp, kw, E, V, src, rsrc, r_c, r_nu, r_xa0, r_imu_wv, r_qdd, r_y, -1, 0, q, dq, no_ddq,
                          y, imu, 0, kip[:0], kfp[:0], GKp, GKi, GKx, Ax, GRp, GRi, GRx, Ap, Ai, Lp, Li, Lx, Up, Ui, Ux, w, x, GOp, GOi, GOx,
                          out, info)
    for k in range(nv):                                          # the given halves of (q̈, τ)
        if known[k]:
            out[k] = y[nv + k]
        else:
            out[nv + k] = y[k]
    return status
