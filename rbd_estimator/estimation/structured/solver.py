"""The per-estimator object: constant blobs, work space, the Python entry of a tick (input forms
converted before the kernel) and the packed path."""
from __future__ import annotations

import numpy as np

from .tick import compiled_tick

def _as_float64(x) -> np.ndarray:
    """``x`` itself when it is a float64 array (any layout), else converted."""
    return x if type(x) is np.ndarray and x.dtype == np.float64 else np.asarray(x, dtype=np.float64)


class StructuredSolver:
    """The structured solver of one :class:`~.estimator.Estimator` (see the module docstring).

    ``ip``/``fp``: packed constant data; ``w``: work space; ``n_z`` unknowns are left after the
    tree elimination (``a_0`` and ``h``), ``n_h`` after the base equation; ``m_soft`` sensor rows
    (``m_ls`` after compression)."""

    def __init__(self, est, ip, fp, w, n_h, m_soft, m_ls, floating):
        self._est = est
        self.ip, self.fp, self.w = ip, fp, w
        self.n_h, self.m_soft, self.m_ls, self.floating = n_h, m_soft, m_ls, floating
        self.n_z = n_h + (6 if floating else 0)
        cfg = est.config
        self._fast = not cfg.load_cells
        self._has_imu = cfg.imu is not None
        self._alpha = bool(cfg.imu is not None and cfg.imu.use_angular_acceleration)
        self._n_ft, self._n_jt = len(cfg.ft_sensors), len(cfg.joint_torque_sensors)
        self._z4, self._z3 = np.zeros(4), np.zeros(3)
        self._ft0, self._z0 = np.zeros((0, 6)), np.zeros(0)
        self.fallbacks = 0
        self._converting = False
        self._ft_in = np.zeros((self._n_ft, 6))
        b = est._imu_buf
        self._imu_views, self._ft_matrix = (b[0:4], b[4:7], b[7:10], b[10:13]), est._ft_buf.reshape(-1, 6)
        self.kernel = compiled_tick()
        self.estimate = self._direct_call()

    def packed(self, q, dq, ddq, imu, ft, load_cells, joint_torques) -> int:
        """The inputs the kernel does not take as they are: converted (:meth:`_convert`: lists,
        other dtypes, strided arrays, dicts by sensor name, IMU tuples; a few µs) and solved by
        the kernel; load cells, or inputs that do not convert or have the wrong shape, go through
        ``Estimator._pack``, which raises ``ValueError`` naming the wrong input. Returns the status."""
        if self._fast and load_cells is None and not self._converting:
            converted = self._convert(q, dq, ddq, imu, ft, joint_torques)
            if converted is not None:
                self._converting = True
                try:
                    return self.estimate(*converted)
                finally:
                    self._converting = False
        if self._fast:
            self.fallbacks += 1
        self._est._pack(q, dq, ddq, imu, ft, load_cells, joint_torques)
        return self.tick()

    def _convert(self, q, dq, ddq, imu, ft, jt):
        """The inputs as the kernel's types (float64 arrays, ``ft`` C-contiguous ``(n, 6)``, an
        :class:`~.estimator.ImuSample`), copied into preallocated buffers where a copy is needed;
        None when an input does not convert (its error is then reported by ``Estimator._pack``)."""
        from ..estimator import ImuSample
        f = _as_float64
        try:
            q, dq, ddq = f(q), f(dq), f(ddq)
            if self._has_imu and type(imu) is not ImuSample and imu is not None:
                imu = ImuSample(*imu)
            if self._n_jt:
                cfg = self._est.config
                jt = f([jt[j] for j in cfg.joint_torque_sensors] if isinstance(jt, dict) else jt)
            if self._n_ft:
                if isinstance(ft, dict):
                    buf = self._ft_in
                    for k, name in enumerate(self._est.ft_names):
                        buf[k] = ft[name]
                    ft = buf
                else:
                    ft = np.ascontiguousarray(ft, dtype=np.float64)
        except (TypeError, ValueError, KeyError, IndexError):
            return None
        return q, dq, ddq, imu, ft, None, jt

    def arguments(self, q, dq, ddq, imu, ft, cells, joint_torques) -> tuple:
        """The kernel's arguments for these inputs (float64 arrays of the right shapes, ``ft``
        C-contiguous; ``imu`` an :class:`~.estimator.ImuSample` when the configuration has an IMU;
        ``ft``, ``cells``, ``joint_torques`` as the estimator's configuration orders them)."""
        e = self._est
        if self._has_imu:
            iq, iw, ia = imu[0], imu[1], imu[2]
            ial = imu[3] if self._alpha else self._z3
        else:
            iq, iw, ia, ial = self._z4, self._z3, self._z3, self._z3
        return (self.ip, e._state, q, dq, ddq, iq, iw, ia, ial,
                ft if self._n_ft else self._ft0, cells, joint_torques if self._n_jt else self._z0)

    def _direct_call(self):
        """``estimate(q, dq, ddq, imu, ft, load_cells, joint_torques) → status``, the per-tick
        entry (see :meth:`Estimator.estimate`): inputs the kernel takes as they are — float64
        arrays of any layout (``ft`` C-contiguous), an :class:`~.estimator.ImuSample` (whose
        fields are float64 arrays) — go straight to the kernel with its constant arguments bound
        once; anything else is converted first (:meth:`packed`). The test is a few type checks in
        Python, never a failed call (numba's failed dispatch costs ~300 µs)."""
        from ..estimator import ImuSample
        e, kernel, packed = self._est, self.kernel, self.packed
        ip, S = self.ip, e._state
        z0, z3, z4, ft0 = self._z0, self._z3, self._z4, self._ft0
        nd, f64 = np.ndarray, np.dtype(np.float64)
        fast, has_imu, alpha, has_ft, has_jt = self._fast, self._has_imu, self._alpha, self._n_ft > 0, self._n_jt > 0

        def estimate(q, dq, ddq, imu, ft, cells, jt):
            if (fast and cells is None and type(q) is nd and type(dq) is nd and type(ddq) is nd
                    and q.dtype is f64 and dq.dtype is f64 and ddq.dtype is f64
                    and (not has_imu or (type(imu) is ImuSample and (not alpha or imu[3] is not None)))
                    and (not has_jt or (type(jt) is nd and jt.dtype is f64))
                    and (not has_ft or (type(ft) is nd and ft.dtype is f64 and ft.flags.c_contiguous))):
                try:
                    if has_imu:
                        status = kernel(ip, S, q, dq, ddq, imu[0], imu[1], imu[2], imu[3] if alpha else z3,
                                        ft if has_ft else ft0, z0, jt if has_jt else z0)
                    else:
                        status = kernel(ip, S, q, dq, ddq, z4, z3, z3, z3, ft if has_ft else ft0, z0,
                                        jt if has_jt else z0)
                except TypeError:           # an array of the wrong dimension: packed() names it
                    status = 3
                if status != 3:
                    return status
            return packed(q, dq, ddq, imu, ft, cells, jt)
        return estimate

    def tick(self) -> int:
        """One estimate from the estimator's packed buffers (``_q, _dq, _ddq, _imu_buf, _ft_buf,
        _cells_buf, _jt_buf``) into ``_out``: 0, 1 (non-finite input), 2 (singular state)."""
        e = self._est
        b = self._imu_views                                   # (the kernel copies the sample onto itself)
        return self.kernel(self.ip, e._state, e._q, e._dq, e._ddq, b[0], b[1], b[2], b[3],
                           self._ft_matrix, e._cells_buf, e._jt_buf)

    def summary(self) -> str:
        return (f"structured solver: {self.n_z} unknowns after the tree elimination "
                f"({'a_0 (6) + ' if self.floating else ''}{self.n_h} contact components), "
                f"{6 if self.floating else 0} base rows, {self.m_soft} sensor rows ({self.m_ls} after compression)")
