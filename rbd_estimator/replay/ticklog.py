"""Every tick of a replay as a row (``replay_bag(..., collect=True)``): what the estimate bag holds,
plus what a bag has no topic for (the residual's χ², the condition estimate, why a tick has no
estimate, the contact subset, the sensors the plan does without and the tracked sensor offsets).

Rows arrive in order from both of the replay's paths: a block at a time from the compiled batch
loop (:meth:`TickLog.add_block`: all sensors fresh, main plan, every contact in contact) and one at
a time from the per-message path (:meth:`TickLog.add_tick`). They are kept in memory, or handed in
chunks of about ``chunk`` rows to ``flush(columns, joint_names, contact_names, offset_names)`` (the
fleet writes each chunk as a Parquet row group: :mod:`rbd_estimator.fleet.tables`). A chunk's columns
(``n`` rows, ``nj`` joints, ``nc`` contacts, ``no`` tracked offset entries, named as ``~/sensor_offsets``
names them, ``<sensor> <axis>``; units SI, wrenches ``[fx, fy, fz, tx, ty, tz]`` in each contact frame):

=================  ====================  ==========================================================
``time_ns``        int64 (n)             log time of the tick (the joint state's receive time), ns
``stamp_ns``       int64 (n)             header stamp of the joint state (what the bag's estimates carry)
``estimated``      bool (n)              an estimate was published this tick
``reason``         str (n)               why not ("" when estimated)
``tau``            float64 (n, nj)       joint torques, N·m (N for prismatic joints); NaN without estimate
``wrench``         float64 (n, nc, 6)    contact wrenches; NaN without estimate
``tau_var``        float64 (n, nj)       posterior variance of each torque; NaN with ``covariance: false``
``wrench_var``     float64 (n, nc, 6)    diagonal of each contact wrench's covariance; NaN likewise
``chi2``           float64 (n)           whitened residual's squared norm (0 without redundancy)
``dof``            int64 (n)             its degrees of freedom (-1 without estimate)
``condition``      float64 (n)           the factorisation's condition estimate
``active``         bool (n, nc)          contact state (in contact) at the tick
``subset``         str (n)               its label, e.g. ``l_foot+r_foot``
``plan_missing``   str (n)               sensors the plan in use does without (", "-separated; "" full set)
``excluded``       str (n)               sensors the fault monitor excluded as inconsistent
``offset``         float64 (n, no)       tracked offsets (reading = true + offset; N, N·m) as published on
                                         ``~/sensor_offsets`` with the tick's estimate; NaN without estimate
``offset_var``     float64 (n, no)       their posterior variances (the message's ``effort``); NaN likewise
=================  ====================  ==========================================================

``no`` is 0 (columns of width 0) when no offset is tracked (docs/offsets.md).
"""
from __future__ import annotations

import numpy as np

#: the columns of a chunk, in order
COLUMNS = ("time_ns", "stamp_ns", "estimated", "reason", "tau", "wrench", "tau_var", "wrench_var", "chi2", "dof",
           "condition", "active", "subset", "plan_missing", "excluded", "offset", "offset_var")


class TickLog:
    """The rows of one replay (module docstring) for ``joint_names``, ``contact_names`` and the
    tracked offset entries ``offset_names``."""

    def __init__(self, joint_names, contact_names, flush=None, chunk: int = 65536, offset_names=()):
        self.joint_names, self.contact_names = list(joint_names), list(contact_names)
        self.offset_names = list(offset_names)
        self.flush, self.chunk = flush, chunk
        self._chunks: list = []          # completed column dicts (kept when there is no flush)
        self._pending: list = []         # column dicts not yet merged into a chunk
        self._rows: list = []            # per-message rows not yet made a column dict
        self._n_pending = 0
        self.rows = 0

    @property
    def count(self) -> int:
        """The rows logged so far (:attr:`rows`: those already made a column dict)."""
        return self.rows + len(self._rows)

    # ------------------------------------------------------------------ adding rows
    def add_block(self, time_ns, stamp_ns, tau, wrench, cov, info, dof: int, subset: str) -> None:
        """``n`` estimates of the compiled loop (main plan, every contact in contact, nothing
        excluded): torques ``(n, nj)``, wrenches ``(n, 6 nc)``, the covariance buffer ``(n, nj + 36 nc)``
        (or ``(n, 0)`` when not computed), ``info`` ``(n, 2)``: condition estimate and χ²."""
        n, nj, nc = len(time_ns), len(self.joint_names), len(self.contact_names)
        if not n:
            return
        self._rows_to_block()
        if cov.shape[1]:
            tau_var = cov[:, :nj]
            wrench_var = cov[:, nj:].reshape(n, nc, 6, 6).diagonal(axis1=2, axis2=3)
        else:
            tau_var, wrench_var = np.full((n, nj), np.nan), np.full((n, nc, 6), np.nan)
        blank, no_offsets = np.full(n, "", dtype=object), np.full((n, len(self.offset_names)), np.nan)
        self._push(dict(time_ns=np.array(time_ns, np.int64), stamp_ns=np.array(stamp_ns, np.int64),
                        estimated=np.ones(n, bool), reason=blank, tau=np.array(tau, float),
                        wrench=np.array(wrench, float).reshape(n, nc, 6), tau_var=np.array(tau_var, float),
                        wrench_var=np.array(wrench_var, float), chi2=np.array(info[:, 1], float),
                        dof=np.full(n, dof, np.int64), condition=np.array(info[:, 0], float),
                        active=np.ones((n, nc), bool), subset=np.full(n, subset, dtype=object),
                        plan_missing=blank, excluded=blank, offset=no_offsets, offset_var=no_offsets.copy()))

    def add_tick(self, now: int, stamp: int, r, reason: str, active, subset: str, missing, excluded,
                 offsets=None) -> None:
        """One tick of the per-message path: ``r`` its estimate (``Estimate`` or ``SwitchingEstimate``)
        or None (``reason`` says why), ``active`` the contact state, ``missing`` the sensors the plan
        in use does without, ``excluded`` those the fault monitor excluded, ``offsets`` the tracked
        ``(offsets, variances)`` published with the estimate (``offset_names`` order; None: NaN)."""
        nj, nc = len(self.joint_names), len(self.contact_names)
        if r is None:
            row = (now, stamp, False, reason, np.full(nj, np.nan), np.full((nc, 6), np.nan), np.full(nj, np.nan),
                   np.full((nc, 6), np.nan), np.nan, -1, np.nan)
        else:
            var = r.tau_variance is not None
            row = (now, stamp, True, "", np.array(r.tau, float), np.array(r.contact_wrenches, float),
                   np.array(r.tau_variance, float) if var else np.full(nj, np.nan),
                   np.array(r.contact_covariance.diagonal(axis1=1, axis2=2), float) if var
                   else np.full((nc, 6), np.nan), r.chi2, r.dof, r.condition)
        if offsets is None:
            offsets = (np.full(len(self.offset_names), np.nan),) * 2
        self._rows.append(row + (np.array(active, bool), subset, ", ".join(sorted(missing)),
                                 ", ".join(sorted(excluded)), np.array(offsets[0], float), np.array(offsets[1], float)))
        if len(self._rows) >= self.chunk:
            self._rows_to_block()

    # ------------------------------------------------------------------ chunks
    def _rows_to_block(self) -> None:
        if not self._rows:
            return
        cols = list(zip(*self._rows))
        self._rows = []
        block = {}
        for name, values in zip(COLUMNS, cols):
            if name in ("reason", "subset", "plan_missing", "excluded"):
                block[name] = np.array(values, dtype=object)
            else:
                block[name] = np.array(values)
        block["dof"] = block["dof"].astype(np.int64)
        for k in ("offset", "offset_var"):                 # (n, 0) without tracked offsets
            block[k] = block[k].reshape(len(block["dof"]), len(self.offset_names))
        self._push(block)

    def _push(self, block: dict) -> None:
        self._pending.append(block)
        self._n_pending += len(block["time_ns"])
        self.rows += len(block["time_ns"])
        if self._n_pending >= self.chunk:
            self._emit()

    def _emit(self) -> None:
        if not self._pending:
            return
        block = concat(self._pending)
        self._pending, self._n_pending = [], 0
        if self.flush is not None:
            self.flush(block, self.joint_names, self.contact_names, self.offset_names)
        else:
            self._chunks.append(block)

    def close(self) -> None:
        """Hand the last rows to ``flush`` (or keep them)."""
        self._rows_to_block()
        self._emit()

    def columns(self) -> dict:
        """Every row kept (no ``flush``), as one column dict."""
        self.close()
        if not self._chunks:
            return empty(len(self.joint_names), len(self.contact_names), len(self.offset_names))
        self._chunks = [concat(self._chunks)]
        return self._chunks[0]


def concat(blocks: list) -> dict:
    """The rows of ``blocks`` (column dicts) in order, as one column dict."""
    if len(blocks) == 1:
        return blocks[0]
    return {k: np.concatenate([b[k] for b in blocks]) for k in COLUMNS}


def empty(nj: int, nc: int, no: int = 0) -> dict:
    """A column dict without rows."""
    o = np.zeros(0, dtype=object)
    return dict(time_ns=np.zeros(0, np.int64), stamp_ns=np.zeros(0, np.int64), estimated=np.zeros(0, bool), reason=o,
                tau=np.zeros((0, nj)), wrench=np.zeros((0, nc, 6)), tau_var=np.zeros((0, nj)),
                wrench_var=np.zeros((0, nc, 6)), chi2=np.zeros(0), dof=np.zeros(0, np.int64), condition=np.zeros(0),
                active=np.zeros((0, nc), bool), subset=o, plan_missing=o, excluded=o, offset=np.zeros((0, no)),
                offset_var=np.zeros((0, no)))
