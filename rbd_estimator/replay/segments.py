"""The output of a block of the compiled loop's ticks as one batch: the input messages the loop took
in (when the bag copies them), each followed by the estimate messages of the tick it triggered.

Every estimate message is the node's template for its topic (a
:class:`~rbd_estimator.runtime.cdr.MessageTemplate`: serialized once by rosbags' CDR serializer)
with the header stamp and the block of float64 values written in place. :class:`EstimateSegments`
does it for a whole block of ticks at once: one row of bytes per tick (every output's template,
end to end) copied by broadcasting, then one strided assignment per stamp and per block of values.
"""
from __future__ import annotations

import numpy as np

from .bag_io import RawBatch

#: where a template's values come from: the tick's torques, wrenches or covariance buffer
TAU, WRENCH, COV = 0, 1, 2


class EstimateSegments:
    """The estimate outputs of a replay, in their connection order: ``(template, source, column)``
    each, ``source`` one of :data:`TAU`, :data:`WRENCH`, :data:`COV` and ``column`` the first of the
    template's (single) block of values in a row of that array."""

    def __init__(self, outputs):
        bufs = [bytes(t.buf) for t, _, _ in outputs]
        self.row = np.frombuffer(b"".join(bufs), np.uint8)          # one tick's messages, end to end
        self.length = np.array([len(b) for b in bufs], np.int64)
        self.start = np.concatenate(([0], np.cumsum(self.length)[:-1])).astype(np.int64)
        self.stamps = [int(a + t.stamp_offset) for a, (t, _, _) in zip(self.start, outputs) if t.stamp_offset >= 0]
        self.values = [(int(a + t.offsets[0]), s, c, t.sizes[0]) for a, (t, s, c) in zip(self.start, outputs)]

    def __len__(self) -> int:
        return len(self.length)

    def encode(self, tau, wrench, cov, stamps) -> np.ndarray:
        """The estimate messages of ``len(stamps)`` ticks, a row of bytes per tick (``self.start`` and
        ``self.length`` give each message's range): header ``stamps`` (ns) and the values of ``tau``
        (ticks × joints), ``wrench`` (ticks × 6 contacts), ``cov`` (the covariance buffer) written in."""
        nt = len(stamps)
        out = np.empty((nt, len(self.row)), np.uint8)
        out[:] = self.row
        sec, nsec = np.divmod(stamps, 1_000_000_000)
        stamp = np.empty((nt, 2), "<i4")
        stamp[:, 0] = sec
        stamp[:, 1] = nsec.astype("<u4").view("<i4")
        for at in self.stamps:
            out[:, at:at + 8] = stamp.view(np.uint8)
        source = (tau, wrench, cov)
        for at, s, c, n in self.values:
            out[:, at:at + 8 * n] = np.ascontiguousarray(source[s][:, c:c + n], "<f8").view(np.uint8)
        return out

    def segment(self, batch: RawBatch, n_in: int, a: int, b: int, tau, wrench, cov, times, stamps, msg,
                copy_inputs: bool = True) -> RawBatch:
        """Input messages ``a…b`` of ``batch`` (if ``copy_inputs``) and the estimates of ``len(times)``
        ticks (values as :meth:`encode` takes them; log ``times``; ``msg``: the input that triggered
        each, in order), each tick's right after its input, on connections ``n_in, n_in + 1, …``."""
        per, nt = len(self), len(times)
        ni = b - a + 1 if copy_inputs else 0
        src_start, src_len = batch.start[a:a + ni], batch.length[a:a + ni]
        d0 = int(src_start.min()) if ni else 0
        d1 = int((src_start + src_len).max()) if ni else 0
        # input i after the estimates of the ticks of earlier inputs; tick j's after its input msg[j]
        pos_in = np.arange(ni) + per * np.searchsorted(msg, np.arange(a, a + ni), side="left")
        before = (msg - a + 1) if ni else np.zeros(nt, np.int64)
        pos_est = before[:, None] + per * np.arange(nt)[:, None] + np.arange(per)[None, :]
        m = ni + nt * per
        conn, time = np.empty(m, np.int32), np.empty(m, np.int64)
        start, length = np.empty(m, np.int64), np.empty(m, np.int64)
        conn[pos_in], time[pos_in] = batch.conn[a:a + ni], batch.time[a:a + ni]
        start[pos_in], length[pos_in] = src_start - d0, src_len
        conn[pos_est] = n_in + np.arange(per, dtype=np.int32)[None, :]
        time[pos_est] = np.asarray(times)[:, None]
        start[pos_est] = (d1 - d0) + len(self.row) * np.arange(nt)[:, None] + self.start[None, :]
        length[pos_est] = self.length[None, :]
        est = self.encode(tau, wrench, cov, stamps).ravel()
        data = np.concatenate([batch.data[d0:d1], est]) if ni else est
        return RawBatch(conn, time, data, start, length)
