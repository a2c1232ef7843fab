"""The fleet's tables (Apache Parquet through ``pyarrow``): one per recording, a row per tick
(:class:`TickTable`), and the fleet's summary, a row per recording (:func:`write_summary`).

Per-recording table ``<output>/<recording>/ticks.parquet`` (schema version 1; the replay's tick log,
:mod:`rbd_estimator.replay.ticklog`, one column per joint and wrench component; SI units, wrenches
in each contact frame, ``[fx, fy, fz, tx, ty, tz]``):

============================  ==================  ======================================================
column                        type                meaning
============================  ==================  ======================================================
``time_ns``                   int64               log (receive) time of the tick, ns
``stamp_ns``                  int64               joint-state header stamp (the bag's estimates'), ns
``estimated``                 bool                an estimate was published this tick
``reason``                    dictionary<string>  why not ("" when estimated)
``tau/<joint>``               float64             joint torque, N·m (N: prismatic); NaN without estimate
``wrench/<contact>/<c>``      float64             wrench component ``c`` (fx fy fz tx ty tz)
``tau_var/<joint>``           float64             posterior variance of the torque; NaN: covariance off
``wrench_var/<contact>/<c>``  float64             diagonal of the wrench's covariance; likewise
``chi2``                      float64             whitened residual's squared norm
``dof``                       int32               its degrees of freedom (-1 without estimate)
``condition``                 float64             the factorisation's condition estimate
``in_contact/<contact>``      bool                contact state
``subset``                    dictionary<string>  contact subset label (``l_foot+r_foot``)
``plan_missing``              dictionary<string>  sensors the plan in use does without
``excluded``                  dictionary<string>  sensors excluded as inconsistent (fault monitor)
``offset/<entry>``            float64             tracked sensor offset (reading = true + offset; N, N·m),
                                                  as ``~/sensor_offsets`` publishes it with the estimate
``offset_var/<entry>``        float64             its posterior variance (the message's ``effort``)
============================  ==================  ======================================================

``<entry>`` is a tracked offset entry named as ``~/sensor_offsets`` names it, ``<sensor> <axis>``
(e.g. ``l_foot_force fz``, ``l_leg_ft_sensor tx``); the offset columns are absent when the
parameters track no offset, and NaN on ticks without estimate (no message then).
The file's key-value metadata ``rbd_estimator`` holds JSON: schema version, recording, robot,
joint, contact and tracked offset entry names (``offset_names``, ``[]`` when none).
"""
from __future__ import annotations

import json

import numpy as np

SCHEMA_VERSION = 1
AXES = ("fx", "fy", "fz", "tx", "ty", "tz")


def tick_schema(joint_names, contact_names, offset_names, meta: dict):
    """The ``pyarrow`` schema of a recording's table (module docstring)."""
    import pyarrow as pa
    text = pa.dictionary(pa.int32(), pa.string())
    f = [pa.field("time_ns", pa.int64()), pa.field("stamp_ns", pa.int64()), pa.field("estimated", pa.bool_()),
         pa.field("reason", text)]
    f += [pa.field(f"tau/{j}", pa.float64()) for j in joint_names]
    f += [pa.field(f"wrench/{c}/{a}", pa.float64()) for c in contact_names for a in AXES]
    f += [pa.field(f"tau_var/{j}", pa.float64()) for j in joint_names]
    f += [pa.field(f"wrench_var/{c}/{a}", pa.float64()) for c in contact_names for a in AXES]
    f += [pa.field("chi2", pa.float64()), pa.field("dof", pa.int32()), pa.field("condition", pa.float64())]
    f += [pa.field(f"in_contact/{c}", pa.bool_()) for c in contact_names]
    f += [pa.field(n, text) for n in ("subset", "plan_missing", "excluded")]
    f += [pa.field(f"{k}/{e}", pa.float64()) for k in ("offset", "offset_var") for e in offset_names]
    meta = dict(meta, schema_version=SCHEMA_VERSION, joint_names=list(joint_names), contact_names=list(contact_names),
                offset_names=list(offset_names))
    return pa.schema(f, metadata={"rbd_estimator": json.dumps(meta)})


def _arrays(cols: dict, nj: int, nc: int) -> list:
    """The columns of a tick-log chunk in :func:`tick_schema`'s order."""
    import pyarrow as pa
    n = len(cols["time_ns"])

    def text(a):
        return pa.array(a, pa.string()).dictionary_encode()
    out = [pa.array(cols["time_ns"]), pa.array(cols["stamp_ns"]), pa.array(cols["estimated"]), text(cols["reason"])]
    out += [pa.array(cols["tau"][:, j]) for j in range(nj)]
    w = cols["wrench"].reshape(n, 6 * nc)
    out += [pa.array(w[:, k]) for k in range(6 * nc)]
    out += [pa.array(cols["tau_var"][:, j]) for j in range(nj)]
    wv = cols["wrench_var"].reshape(n, 6 * nc)
    out += [pa.array(wv[:, k]) for k in range(6 * nc)]
    out += [pa.array(cols["chi2"]), pa.array(cols["dof"].astype(np.int32)), pa.array(cols["condition"])]
    out += [pa.array(cols["active"][:, c]) for c in range(nc)]
    out += [text(cols[k]) for k in ("subset", "plan_missing", "excluded")]
    return out + [pa.array(cols[k][:, e]) for k in ("offset", "offset_var") for e in range(cols[k].shape[1])]


class TickTable:
    """Writes a recording's tick log to ``path`` a chunk (row group) at a time (``flush``, the
    :class:`~rbd_estimator.replay.ticklog.TickLog`'s callback) and keeps its statistics
    (:class:`RecordingStats`). The schema is made at the first chunk, or by :meth:`close` for a
    recording without ticks."""

    def __init__(self, path: str, meta: dict):
        self.path, self.meta = path, meta
        self.writer = self.schema = None
        self.stats = None
        self.names = None                   # (joint, contact, tracked offset entry names), set by start()

    def start(self, joint_names, contact_names, offset_names=()) -> None:
        if self.names is None:
            self.names = (list(joint_names), list(contact_names), list(offset_names))
            self.stats = RecordingStats(joint_names, offset_names)

    def flush(self, cols: dict, joint_names, contact_names, offset_names=()) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        self.start(joint_names, contact_names, offset_names)
        nj, nc = len(self.names[0]), len(self.names[1])
        if self.writer is None:
            self.schema = tick_schema(*self.names, self.meta)
            self.writer = pq.ParquetWriter(self.path, self.schema, **_encoding(self.schema))
        self.writer.write_table(pa.Table.from_arrays(_arrays(cols, nj, nc), schema=self.schema))
        self.stats.add(cols)

    def close(self) -> None:
        """Finish the file (an empty table when no tick was logged)."""
        import pyarrow.parquet as pq
        if self.writer is None and self.names is not None:
            self.schema = tick_schema(*self.names, self.meta)
            pq.write_table(self.schema.empty_table(), self.path, **_encoding(self.schema))
        elif self.writer is not None:
            self.writer.close()
        self.writer = None


def _encoding(schema) -> dict:
    """Parquet encodings: dictionaries for the text columns only (trying them on the floats costs
    more than the rest of the write), byte-stream split and zstd for the floats (about 15 % smaller
    than zstd alone on the humanoid's torques and wrenches; ~1.5 µs per row in all)."""
    import pyarrow as pa
    return dict(compression="zstd", use_dictionary=[f.name for f in schema if pa.types.is_dictionary(f.type)],
                use_byte_stream_split=[f.name for f in schema if pa.types.is_floating(f.type)])


class RecordingStats:
    """What the fleet summary keeps of a recording's ticks, accumulated chunk by chunk."""

    def __init__(self, joint_names, offset_names=()):
        self.joint_names, self.offset_names = list(joint_names), list(offset_names)
        no = len(self.offset_names)
        self.offset_final, self.offset_final_var = np.full(no, np.nan), np.full(no, np.nan)
        self.offset_peak = np.full(no, np.nan)
        self.ticks = self.estimates = self.excluded_ticks = self.degraded_ticks = 0
        self.peak = np.zeros(len(self.joint_names))
        self.no_estimate: dict = {}
        self.time_in_subset: dict = {}
        self._last = None                    # (time, subset) of the previous chunk's last tick

    def add(self, cols: dict) -> None:
        n = len(cols["time_ns"])
        if not n:
            return
        est = cols["estimated"]
        self.ticks += n
        self.estimates += int(est.sum())
        if est.any():
            self.peak = np.maximum(self.peak, np.abs(cols["tau"][est]).max(axis=0))
        for r in cols["reason"][~est]:
            self.no_estimate[r] = self.no_estimate.get(r, 0) + 1
        self.excluded_ticks += int(np.count_nonzero(cols["excluded"] != ""))
        self.degraded_ticks += int(np.count_nonzero(cols["plan_missing"] != ""))
        if self.offset_names and est.any():
            self._add_offsets(cols["offset"][est], cols["offset_var"][est])
        t, subset = cols["time_ns"], cols["subset"]
        if self._last is not None:            # the previous chunk's last tick lasts until this one's first
            self._credit(self._last[1], (t[0] - self._last[0]) * 1e-9)
        dt = np.diff(t) * 1e-9                # a tick's contact state lasts until the next tick
        for label in np.unique(subset[:-1]) if n > 1 else ():
            self._credit(label, float(dt[subset[:-1] == label].sum()))
        self._last = (int(t[-1]), subset[-1])

    def _add_offsets(self, o, var) -> None:
        """The published offsets (estimated ticks): the last and the largest magnitude of each entry."""
        self.offset_final, self.offset_final_var = o[-1].copy(), var[-1].copy()
        self.offset_peak = np.fmax(self.offset_peak, np.abs(o).max(axis=0))

    def _credit(self, label: str, seconds: float) -> None:
        self.time_in_subset[label] = self.time_in_subset.get(label, 0.0) + seconds

    def row(self) -> dict:
        return dict(ticks=self.ticks, estimates=self.estimates, ticks_without_estimate=self.ticks - self.estimates,
                    no_estimate=dict(self.no_estimate), ticks_with_exclusion=self.excluded_ticks,
                    ticks_degraded=self.degraded_ticks,
                    peak_abs_tau={j: float(p) for j, p in zip(self.joint_names, self.peak)},
                    time_in_subset=dict(self.time_in_subset), **self._offset_row())

    def _offset_row(self) -> dict:
        """Per tracked entry: the final offset, its standard deviation, the largest |offset| (empty
        maps when nothing is tracked; NaN for an entry never published)."""
        def per_entry(v):
            return {e: float(x) for e, x in zip(self.offset_names, v)}
        return dict(offset_final=per_entry(self.offset_final),
                    offset_final_stddev=per_entry(np.sqrt(np.maximum(self.offset_final_var, 0.0))),
                    offset_peak_abs=per_entry(self.offset_peak))


def summary_schema():
    """The fleet summary's columns (docs/fleet.md): a row per recording, maps for the per-joint,
    per-reason, per-subset and per-tracked-offset-entry figures."""
    import pyarrow as pa
    counts, floats = pa.map_(pa.string(), pa.int64()), pa.map_(pa.string(), pa.float64())
    return pa.schema([("recording", pa.string()), ("input", pa.string()), ("robot", pa.string()),
                      ("model", pa.string()), ("status", pa.string()), ("reason", pa.string()),
                      ("attempts", pa.int32()), ("duration_s", pa.float64()), ("ticks", pa.int64()),
                      ("estimates", pa.int64()), ("ticks_without_estimate", pa.int64()), ("no_estimate", counts),
                      ("stale_timer_ticks", pa.int64()), ("peak_abs_tau", floats), ("fault_alarms", pa.int64()),
                      ("fault_exclusions", pa.int64()), ("fault_returns", pa.int64()),
                      ("fault_unexplained", pa.int64()), ("ticks_with_exclusion", pa.int64()),
                      ("ticks_degraded", pa.int64()), ("time_in_subset", floats), ("offset_final", floats),
                      ("offset_final_stddev", floats), ("offset_peak_abs", floats), ("wall_s", pa.float64()),
                      ("speed", pa.float64())])


def write_summary(rows: list, path: str) -> None:
    """The fleet summary (one row per recording, :func:`summary_schema`) to ``path`` (Parquet)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    schema = summary_schema()
    cols = {}
    for f in schema:
        values = [r.get(f.name) for r in rows]
        if pa.types.is_map(f.type):
            values = [list(v.items()) if v is not None else None for v in values]
        cols[f.name] = pa.array(values, f.type)
    pq.write_table(pa.table(cols, schema=schema), path)
