"""The estimator: plan once (Nori §IV-D), then estimate joint torques and contact wrenches every tick.

``Estimator(model, config)`` builds Nori's system for the sensor set (:mod:`.layout`), checks that
it is well posed and fixes permutations and the symbolic factorisation (:mod:`.plan`).
``estimate()`` then runs one compiled function: kinematics, gather of the matrix and right-hand
side, numeric LU with the planned pivots, substitution and outputs — in preallocated buffers,
with no interpreted loop over bodies and no allocation.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..errors import ConfigError
from ..model.forward_kinematics import K_WRP, KinematicTree
from ..model.robot_model import RobotModel
from . import kinematics as kin
from . import structured
from .config import SensorConfig, nominal_positions
from .actuators import ActuatorModel
from .layout import SystemLayout
from .plan import (PlanReport, StaticLU, check_well_posed, costs_of, numeric_A, plan_static_lu, prune_to_worst_case,
                   random_states, system_triplets)
from .interface import EstimatorInterface
from .sparse_lu import gather
from .estimate import Estimate, EstimatorData
from .measurements import ImuSample, Measurements, vector
from .generic_tick import chi2, generic_covariance, generic_tick
from .nominal import nominal_check, nominal_inputs, nominal_stance
from ..spatial import R_to_quat


class Estimator(EstimatorInterface):
    """Joint-torque and contact-wrench estimator for one robot and one sensor set.

    The contacts are fixed (``contact.<name>.mode: always``; switchable contacts are a
    :class:`~.contacts.SwitchingEstimator` of these, :func:`~.contacts.make_estimator` picks).
    ``model`` must have been built with the sensor joints kept (:func:`~.loops.estimator_for`
    does it). Raises :class:`ConfigError` for a configuration that does not fit the model and
    :class:`IllPosedError` when the sensors do not determine the unknowns.
    """

    def __init__(self, model: RobotModel, config: SensorConfig, seed: int = 0, solver: str = "auto"):
        if config.switchable_contacts:
            raise ConfigError(f"contacts {', '.join(config.switchable_contacts)} switch (contact.<name>.mode): plan "
                              f"them with make_estimator(model, config), which gives one estimator per subset")
        if model.floating_base and config.imu is None:
            raise ConfigError("a floating-base estimate needs an IMU (parameter 'imu.frame'): it gives the base's "
                              "angular velocity and acceleration")
        self.model, self.config = model, config
        nominal_positions(config, model.joint_names)     # nominal_pose's joints checked first (ConfigError)
        self._layout = lay = SystemLayout(model, config)
        self._actuators = ActuatorModel.of(config, model.joint_names, lay.y_offsets)   # applied in both ticks
        self._init_kinematics()
        rng = np.random.default_rng(seed)
        states = list(random_states(lay, rng, 3))
        t = np.array(lay.triplets)
        A_states = [numeric_A(lay, self._sources(*s), t) for s in states]
        t = prune_to_worst_case(lay, A_states, t)
        pattern = abs(A_states[0]) + abs(A_states[1]) + abs(A_states[2])
        measured = lay.m_hard + lay.m_sensor          # the rank test leaves the prior out (Nori eq. 16 alone)
        check_well_posed(lay, pattern.tocsr()[:measured], [A[:measured] for A in A_states[:2]])
        self._plan_factorisation(t)
        self._allocate()
        self._structured = None
        self._structured = structured.build(self._tree_problem(), solver)  # 'auto' | 'generic' | 'structured'
        if self._structured is not None:
            self._report = replace(self._report, solver="structured")
        else:                                         # the generic tick runs every tick: its pivots must hold
            self._plan_pivots_for_the_nominal_stance(t, seed)
        self.weak = self.nominal_check()
        self._planned = self.data.checkpoint()        # the data as planning leaves it (:meth:`reset`)

    def reset(self) -> None:
        """:meth:`EstimatorInterface.reset`: the data's arrays as planning left them, the counters zero."""
        self.data.restore(self._planned)
        if self._structured is not None:
            self._structured.conversions = 0

    def nominal_check(self) -> tuple[str, ...]:
        """:func:`.nominal.nominal_check` of this estimator (the components the prior determines at
        the nominal stance; planning warns about each)."""
        return nominal_check(self)

    def _static_pivots_hold_at(self, q, dq, ddq, y) -> bool:
        """True when the generic tick at this state keeps its planned pivots (no SuperLU fallback)
        and solves the system as SuperLU's partial pivoting does (to 1e-9 of the solution's size)."""
        d = self.data
        before = d.pivot_fallbacks
        try:
            self._generic(q, dq, ddq, y)
            if d.pivot_fallbacks > before:
                return False
            rhs = np.zeros_like(d.x)
            gather(*self._GR, d.rsrc, rhs)
            return self._lu.solves_as_superlu(d.Ax, rhs, d.x)
        except (FloatingPointError, ValueError, RuntimeError):   # noqa: PERF203 - plan time
            return False
        finally:
            d.pivot_fallbacks = before

    def _plan_pivots_for_the_nominal_stance(self, t: np.ndarray, seed: int) -> None:
        """The static pivots are planned at a random state (:attr:`_plan_src`); one can vanish at
        the nominal stance (every shipped robot with its joints at zero), where the generic tick
        would then fall back to SuperLU (allocating). Then plan them at the nominal pose (random
        velocities) instead, and keep that plan if it holds there and at random states (a stance
        where the sensors leave a direction to the prior, the loadcell humanoid's, makes pivots
        that are poor elsewhere: the random state's plan stays). Run for an estimator whose ticks
        take the generic path only (the structured solver holds views of the plan's buffers)."""
        if self._static_pivots_hold_at(*nominal_inputs(self)):
            return
        rng = np.random.default_rng(seed + 1)
        (_, dq, w_imu), *others = random_states(self._layout, rng, 3)
        self._plan_factorisation(t, self._sources(nominal_inputs(self)[0], dq, w_imu)[0])
        self._allocate()
        nominal = nominal_inputs(self)
        y = nominal[3]
        if not (self._static_pivots_hold_at(*nominal)
                and all(self._static_pivots_hold_at(q, v, v, y) for q, v, _ in others)):
            self._plan_factorisation(t)                 # no better: the random state's plan
            self._allocate()

    def nominal_stance(self) -> str:
        """The nominal stance in words (:func:`.nominal.nominal_stance`)."""
        return nominal_stance(self.config)

    def _tree_problem(self) -> structured.TreeProblem:
        """What the structured solver is built from (its docstring), with the hooks into this
        estimator's buffers: the state buffer, the input conversion and the generic path."""
        o = self.state_offsets()
        return structured.TreeProblem(
            model=self.model, config=self.config, layout=self._layout, joint_of_body=self._jofb,
            imu=(self._imu_body, self._imu_E, self._imu_r), sol_col=self._sol_col, n_out=self.data.out.size,
            redundant=self._report.redundant, offsets=o, imu_y=self._imu_y, n_imu=self._n_imu,
            actuators=self._actuators, install=self.data.install, convert=self._pack,
            reference=lambda q, dq, ddq, y: self._generic(q, dq, ddq, y).copy())

    # ------------------------------------------------------------------ names
    @property
    def kept_joints(self) -> tuple[str, ...]:
        return tuple(self._layout.kept_joints)

    @property
    def report(self) -> PlanReport:
        return self._report

    @property
    def layout(self) -> SystemLayout:
        """The layout of Nori's system for this sensor set (unknowns, rows, sources): part of the plan."""
        return self._layout

    @property
    def factorisation(self) -> StaticLU:
        """The planned sparse LU of the generic path (patterns, pivots, the map from sources to
        values): what :attr:`report`'s ``nnz``, ``fill_in`` and ``flops`` describe."""
        return self._lu

    @property
    def measurements(self) -> Measurements:
        return self.data.measurements

    @property
    def result(self) -> Estimate:
        """The last estimate (views into :attr:`data`)."""
        return self.data.result

    @property
    def residual_dof(self) -> int:
        """Degrees of freedom of the whitened residual (:attr:`.layout.SystemLayout.residual_dof`)."""
        return self._residual_dof

    @property
    def pivot_fallbacks(self) -> int:
        return self.data.pivot_fallbacks

    def kernel(self) -> tuple | None:
        if self._structured is None:
            return None
        return self._structured.ip, self.data.state

    def weak_directions(self) -> dict:
        return {"+".join(self.contact_names) or "none": self.weak} if self.weak else {}

    # ------------------------------------------------------------------ plan
    def _init_kinematics(self):
        """The forward kinematics (a :class:`KinematicTree` whose 1-DoF joints read ``q``/``q̇`` in
        :attr:`joint_names` order, packed), the IMU frame, and the rotations and velocities."""
        m = self.model
        jidx = {name: k for k, name in enumerate(m.joint_names)}
        self._jofb = np.array([jidx.get(n, -1) if m.joint_dofs[i] == 1 else -1
                               for i, n in enumerate(m.body_joint_names)], dtype=np.int64)
        if self.config.imu is not None:
            f = self.config.imu.bind(m)
            self._imu_body, self._imu_E, self._imu_r = f.body, f.E.copy(), f.r.copy()
        else:
            self._imu_body, self._imu_E, self._imu_r = -1, np.eye(3), np.zeros(3)
        self._tree = KinematicTree(m, self._jofb, self._jofb, imu=(self._imu_body, self._imu_E, self._imu_r))
        self._kin = self._tree.packed()          # (ip, fp, w): w is the template of EstimatorData.kin_w

    def _kinematics_arguments(self) -> tuple:
        """The packed tree and the buffers of :func:`.kinematics.sources` (its arguments before ``q``)."""
        d = self.data
        return (self._kin[0], self._kin[1], d.kin_w, d.E.reshape(-1), d.V.reshape(-1))

    def _sources(self, q, dq, w_imu, layout=None):
        """``(src, rsrc)`` for a state (plan-time use; the tick fills the same in compiled code), in
        scratch buffers: the estimator's own (the last estimate's poses and velocities) are untouched."""
        lay = layout or self._layout
        src, rsrc = np.zeros(lay.n_src), np.zeros(lay.n_rsrc)
        src[0] = rsrc[0] = 1.0
        ip, fp, w = self._kin
        NB = self.model.NB
        kin.sources(ip, fp, w.copy(), np.zeros(9 * NB), np.zeros(6 * NB), q, dq, w_imu, src, rsrc, lay.r_c,
                    lay.r_nu, lay.r_xa0, lay.r_imu_wv)
        return src, rsrc

    def system_at(self, q, dq, ddq, y, layout=None) -> tuple[np.ndarray, np.ndarray]:
        """``(src, rsrc)``: the sources of Nori's system (eqs. 3–5, 16; see :mod:`.layout`) at the
        joint state ``(q, dq, ddq)`` (float64 vectors, :attr:`joint_names` order) with the
        measurement vector ``y`` of ``layout`` — this estimator's :attr:`layout` by default, or
        another over the same model and IMU (the calibration's, which adds a fixture contact).
        Allocates: for off-line use (calibration, checks); the estimator's buffers are untouched."""
        lay = layout or self._layout
        imu_y = lay.y_offsets[self.config.imu.name] if self.config.imu is not None else -1
        gyro = y[imu_y + 4:imu_y + 7] if imu_y >= 0 else np.zeros(3)
        src, rsrc = self._sources(q, dq, gyro, lay)
        rsrc[lay.r_qdd:lay.r_qdd + len(ddq)] = ddq
        rsrc[lay.r_y:lay.r_y + lay.n_y] = y
        return src, rsrc

    def _plan_factorisation(self, t: np.ndarray, src: np.ndarray | None = None):
        """The static LU of the system (its pivots planned on ``src``, the sources of one state:
        :attr:`_plan_src` by default), its right-hand side, outputs and covariance maps."""
        lay = self._layout
        trip, N, redundant, pivots = system_triplets(lay, t)
        lu = self._lu = plan_static_lu(trip, N, lay.n_src, self._plan_src if src is None else src, pivots=pivots)
        self._Ap, self._Ai, self._GK = lu.Ap, lu.Ai, lu.G
        self._Lp, self._Li, self._Up, self._Ui = lu.Lp, lu.Li, lu.Up, lu.Ui
        # right-hand side: rows of K are [0 (n); r (m)] for KKT, r for square
        R = lay.rhs_map()
        if redundant:
            R = sp.vstack([sp.csr_matrix((lay.n, lay.n_rsrc)), R])
        self._GR = lu.permute_rows(R)
        # outputs: τ, wrenches, and for KKT the whitened residuals e = λ_s
        O = lay.out_map
        self._residual_dof = lay.residual_dof
        measured_redundant = self._residual_dof > 0                 # the measurements alone over-determine
        if redundant:
            O = sp.hstack([O, sp.csr_matrix((O.shape[0], N - lay.n))])
            if measured_redundant:
                ms = lay.m_sensor
                e = sp.csr_matrix((np.ones(ms), (np.arange(ms), lay.n + lay.m_hard + np.arange(ms))), shape=(ms, N))
                O = sp.vstack([O, e])
        self._GO = lu.permute_cols(O)
        self._n_out = O.shape[0]
        self._res_at = lay.out_map.shape[0] if measured_redundant else self._n_out    # the residual's first output
        self._N = N
        self._plan_covariance(lu, redundant)
        self._sol_col = np.empty(N, np.int64)
        self._sol_col[lu.cols] = np.arange(N)     # unknown j of K sits at x[_sol_col[j]]
        rnea_ops, aba_ops = costs_of(lay)
        sizes = np.diff(lu.blocks)
        self._report = PlanReport(
            n_unknowns=lay.n, n_equations=lay.m, n_sensor_rows=lay.m_sensor, redundant=measured_redundant,
            system_size=N,
            nnz=lu.nnz, nnz_factors=lu.nnz + lu.fill_in, fill_in=lu.fill_in, n_blocks=len(sizes),
            largest_block=int(sizes.max()), flops=lu.flops, rnea_ops=rnea_ops, aba_ops=aba_ops)

    def _plan_covariance(self, lu, redundant: bool):
        """Where the generic covariance's unit right-hand sides go: the position in the permuted
        system of every soft row (measurements and prior), whose whitened noise is a unit normal."""
        lay = self._layout
        first = (lay.n if redundant else 0) + lay.m_hard
        rpos = np.empty(self._N, np.int64)
        rpos[lu.rows] = np.arange(self._N)
        self._soft_pos = rpos[first + np.arange(lay.m_soft)]

    def _allocate(self):
        imu = self.config.imu
        self._imu_y = self._layout.y_offsets[imu.name] if imu is not None else -1   # the IMU's slice of y
        self._n_imu = imu.size if imu is not None else 0
        self.data = EstimatorData(self, self._kin[2])

    def state_offsets(self) -> dict:
        """Offsets in the state buffer (:attr:`EstimatorData.state`) of ``x`` (SX), the IMU sample
        (SIMU), ``out`` (SOUT), ``info`` (SINFO, 4 values), the covariance (SCOV) and what follows
        (STAIL); ``E`` and
        ``V`` come first (``9·NB`` and ``6·NB`` values)."""
        sx = 15 * self.model.NB
        sinfo = sx + self._N + 13 + self._n_out
        ncov = self.model.n_joints + 36 * len(self._layout.contacts)
        return dict(SX=sx, SIMU=sx + self._N, SOUT=sx + self._N + 13, SINFO=sinfo, SCOV=sinfo + 4,
                    STAIL=sinfo + 4 + ncov)

    @property
    def _plan_src(self):
        rng = np.random.default_rng(12345)
        q, dq, w = next(random_states(self._layout, rng, 1))
        return self._sources(q, dq, w)[0]

    # ------------------------------------------------------------------ tick
    def estimate(self, q, dq, ddq, imu: ImuSample | None = None, ft=None, load_cells=None,
                 joint_torques=None, external_wrenches=None, contacts=None, *, y=None, readings=None,
                 **by_kind) -> Estimate:
        """Estimate from one set of readings; see :class:`Estimate` for the outputs.

        ``q``, ``dq``, ``ddq``: joint positions (rad, m), velocities and accelerations in
        :attr:`joint_names` order. The sensors' readings, either as the **measurement vector**
        ``y`` (float64, :attr:`measurements` says where each sensor's slice is: the fastest form),
        or per kind: ``imu``: :class:`ImuSample` (required when the configuration has an IMU);
        ``ft``: ``{sensor: [fx, fy, fz, tx, ty, tz]}`` or an ``(n_ft, 6)`` array in :attr:`ft_names`
        order, each in its sensor's frame and measure direction; ``load_cells``: ``{group:
        forces}`` or a sequence in configuration order (N); ``joint_torques``: array in
        ``config.joint_torque_sensors`` order or ``{joint: τ}``; ``external_wrenches``: the known
        wrenches of ``config.external_wrenches``, ``{name: [fx, fy, fz, tx, ty, tz]}`` or an
        ``(n, 6)`` array, each in its frame; ``readings``: ``{sensor name: reading}`` for any
        sensor (every kind, those without a keyword included); ``**by_kind``: the readings of
        any other registered kind by its keyword (``foot_forces=``, ``contact_forces=``). Raises ``ValueError`` naming the
        input when one is missing, has the wrong shape or is not finite; nothing is computed then.
        ``contacts``: the active contacts (names or a boolean mask over :attr:`contact_names`); with
        fixed contacts it may only say that all are active (switchable contacts: see
        :class:`~.contacts.SwitchingEstimator`).
        """
        if contacts is not None:
            self._check_all_active(contacts)
        d = self.data
        if y is None:
            y = (d.measurements.fill_kinds(imu, ft, load_cells, joint_torques, external_wrenches)
                 if not (readings or by_kind) else
                 d.measurements.fill(imu, ft, load_cells, joint_torques, external_wrenches, readings, **by_kind))
        structured = self._structured
        if structured is not None:              # arrays straight to the kernel, other forms converted first
            status = structured.estimate(q, dq, ddq, y)
            if status != 0:
                self._raise_input_error(status)
            return d.result
        self._generic(q, dq, ddq, y)
        return d.result

    def _generic(self, q, dq, ddq, y) -> np.ndarray:
        """The generic tick (the whole system by static sparse LU): the outputs, or the error."""
        q, dq, ddq, y = self._pack(q, dq, ddq, y)
        lay, d, act = self._layout, self.data, self._actuators
        status = generic_tick(
            *self._kinematics_arguments(), d.src, d.rsrc, lay.r_c, lay.r_nu, lay.r_xa0, lay.r_imu_wv,
            lay.r_qdd, lay.r_y, self._imu_y, self._n_imu, q, dq, ddq, y, d.imu, act.count, act.ints, act.floats,
            *self._GK, d.Ax, *self._GR, self._Ap, self._Ai, self._Lp, self._Li, d.Lx, self._Up, self._Ui,
            d.Ux, d.lu_w, d.x, *self._GO, d.out, d.info)
        if status == 2:
            status = self._robust_solve()          # with its own covariance
        elif status == 0 and self.config.covariance:
            status = generic_covariance(self._Lp, self._Li, d.Lx, self._Up, self._Ui, d.Ux, self._soft_pos, *self._GO,
                                 d.cov_x, d.cov_out, self.model.n_joints, len(lay.contacts), d.cov)
        chi2(d.out, self._res_at, d.info)
        if status != 0:
            self._raise_input_error(status)
        return d.out

    def _check_all_active(self, contacts) -> None:
        names = self.contact_names
        by_name = not len(contacts) or isinstance(next(iter(contacts)), str)
        listed = list(contacts) if by_name else [n for n, on in zip(names, contacts) if on]
        if sorted(listed) != sorted(names):
            raise ValueError(f"contacts: this estimator's contacts {names} are fixed (contact.<name>.mode: always); "
                             f"got {list(contacts)}")

    def _robust_solve(self) -> int:
        """A static pivot failed at this state (the planned pivot vanished): solve the same
        permuted system once with SuperLU's partial pivoting (allocates; counted in
        ``pivot_fallbacks``)."""
        d = self.data
        d.pivot_fallbacks += 1
        gather(*self._GR, d.rsrc, d.x)
        try:
            lu = self._lu.superlu(d.Ax)
            d.x[:] = lu.solve(d.x)
        except RuntimeError:
            return 2
        gather(*self._GO, d.x, d.out)
        if self.config.covariance:                 # generic_covariance with these factors: unit right-hand sides
            E = np.zeros((self._N, len(self._soft_pos)))
            E[self._soft_pos, np.arange(len(self._soft_pos))] = 1.0
            Op, Oi, Ox = self._GO
            Y = sp.csr_matrix((Ox, Oi, Op), shape=(self._n_out, self._N)) @ lu.solve(E)
            nj, nc = self.model.n_joints, len(self._layout.contacts)
            d.cov[:nj] = np.sum(Y[:nj] ** 2, axis=1)
            W = Y[nj:nj + 6 * nc].reshape(nc, 6, -1)
            d.cov[nj:] = np.einsum("cak,cbk->cab", W, W).ravel()
        return 0 if np.all(np.isfinite(d.out)) and np.all(np.isfinite(d.cov)) else 2

    def _pack(self, q, dq, ddq, y) -> tuple:
        """The inputs as float64 vectors of the right sizes (``ValueError`` naming the input): the
        joint state copied into :attr:`EstimatorData.joint_state`, ``y`` as it is when it is the
        estimator's own (filled from per-kind readings)."""
        d = self.data
        return (*d.joint_state.fill(q, dq, ddq), y if y is d.measurements.y else vector(y, self._layout.n_y, "y"))

    def _raise_input_error(self, status):
        info = self.data.info
        which, index = int(info[0]), int(info[1])
        if status == 1:
            if which <= 3:
                label, entry = ("q", "dq", "ddq")[which - 1], self.joint_names[index]
                raise ValueError(f"{label}[{index}] ({entry}) is not finite; the sample was rejected")
            raise ValueError(f"{self.data.measurements.describe(index)} is not finite; the sample was rejected")
        if status == 3:
            raise ValueError(f"y: expected {self._layout.n_y} values (the measurement vector), got another size")
        raise FloatingPointError(f"the estimate is not finite (pivot ratio {info[2]:.3g}): the state is "
                                 f"singular for this sensor set")

    # ------------------------------------------------------------------ floating base
    def base_acceleration(self, result: Estimate) -> np.ndarray:
        """The floating-base acceleration of an estimate (:attr:`Estimate.base_acceleration`)."""
        from ..dynamics.kinematics import S_FREE
        from ..spatial import quat_to_R
        m, lay = self.model, self._layout
        if not m.floating_base:
            return np.zeros(0)
        a0 = result.x[self._sol_col[lay.col("a", m.body_names[0]):lay.col("a", m.body_names[0]) + 6]]
        R_w0 = quat_to_R(result.imu[0:4]) @ self._E_F_to_base()
        a_rel = a0 - np.concatenate([np.zeros(3), R_w0.T @ (-m.gravity)])
        return S_FREE.T @ a_rel

    def _E_F_to_base(self):
        """Rotation from base coordinates to IMU-frame coordinates, ``E_F ᵇR_0``, with the pose
        ``ᵇR_0`` of the IMU's body from the last tick's forward kinematics (either tick's)."""
        ip, w = ((self._structured.ip, self._structured.w) if self._structured is not None
                 else (self._kin[0], self.data.kin_w))
        o = ip[K_WRP] + 9 * self._imu_body
        return self._imu_E @ w[o:o + 9].reshape(3, 3)

    def base_state(self, result: Estimate | None = None):
        """Pinocchio free-flyer ``(q_base (7), v_base (6), a_base (6))`` of the last estimate:
        position 0, orientation from the IMU, linear velocity 0 (Galilean choice), angular
        velocity from the IMU gyro, acceleration from the estimate."""
        from ..spatial import quat_to_R
        result = result or self.result
        R_w0 = quat_to_R(result.imu[0:4]) @ self._E_F_to_base()
        qb = np.zeros(7)
        qb[3:7] = R_to_quat(R_w0)
        vb = np.concatenate([np.zeros(3), self.data.V[0, :3]])
        return qb, vb, self.base_acceleration(result)
