"""Whole batches of raw (CDR) messages between rosbag2 bags and numpy arrays (the offline replay).

Everything goes through public APIs: rosbags' ``Reader`` and ``Writer`` (``rosbags.rosbag2``) and
the ``mcap`` package's summary and record readers (``mcap.reader``, ``mcap.stream_reader``). No
attribute of another library's objects that is not part of its documented interface is read or
written, so a new release of either can change its internals freely.

* :func:`iter_batches` reads the messages ``reader.messages(connections)`` would yield, in the same
  order, as :class:`RawBatch` arrays. An MCAP bag with a summary (what rosbag2 and rosbags write)
  is read chunk by chunk: the chunk index comes from ``mcap``'s ``SeekingReader.get_summary()``,
  each Chunk record from ``mcap``'s ``StreamReader``, and the records of the decompressed chunk
  are scanned here in compiled code (MCAP specification, https://mcap.dev/spec). Anything else
  (sqlite3 storage, per-message or per-file compression, a file without summary, a channel that
  does not map to exactly one connection, ``mcap`` not installed) is read through
  ``reader.messages``, ``block`` messages at a time.
* :func:`write_batch` writes a batch through rosbags' ``writer.write``, message by message (the
  replay's sqlite3 output; its MCAP output goes through
  :class:`~rbd_estimator.replay.bag_writer.McapBagWriter`, a batch at a time: ``docs/replay.md``).

Measured with ``benchmarks/bench_replay.py`` (the demo recording, 8 input messages read and 11
written per 1 ms tick; ``docs/replay.md``): reading chunk by chunk costs about a sixth of
``Reader.messages`` and a twentieth of ``mcap``'s ``iter_messages``; rosbags' ``Writer.write`` and
``mcap``'s ``Writer.add_message`` cost the same per message (~5 µs).

A :class:`RawBatch` of ``n`` messages is five arrays: ``conn`` (int32[n], index into the caller's
connection list), ``time`` (int64[n], log time in ns), ``data`` (uint8[m], the payloads
concatenated in message order), ``start`` and ``length`` (int64[n], byte range of each payload in
``data``; :func:`write_batch` reads them through ``start``/``length`` only, so any layout works).

MCAP records are ``opcode u8, length u64, content``, little-endian. A Message record (opcode 0x05)
holds ``channel_id u16, sequence u32, log_time u64, publish_time u64`` (22 bytes) and then the
payload, so a message of ``L`` payload bytes takes ``31 + L`` bytes.

Order: rosbags yields the messages of an MCAP file in log-time order, merging its chunks: chunks
are opened in ``(message_start_time, chunk offset)`` order, each chunk's messages sorted stably by
log time, ties between chunks broken by the chunk's offset. :class:`_Pool` gives exactly that
order, overlapping chunks included; the files of a bag directory come one after the other, as
rosbags reads them. ``test/test_bag_io.py`` checks the equivalence on bags rosbags writes.
"""
from __future__ import annotations

import zlib
from collections import deque
from dataclasses import dataclass
from pathlib import Path, PurePath

import numpy as np

from ..jit import njit

__all__ = ["BagReadError", "RawBatch", "iter_batches", "write_batch"]

_MSG_HEAD = 31                  # opcode 1 + record length 8 + channel 2 + sequence 4 + two times 16


class BagReadError(RuntimeError):
    """An MCAP chunk that cannot be read (truncated, corrupt, not a Chunk record)."""


class ChunkError(ValueError):
    """A chunk's records do not decompress to what its header states (:func:`decompress`)."""


@dataclass(frozen=True, eq=False)
class RawBatch:
    """``n`` raw messages in log-time order (see the module docstring for the layout).

    ``conn[i]`` indexes the connection list given to :func:`iter_batches` / :func:`write_batch`,
    ``time[i]`` is the log time in ns, ``data[start[i]:start[i] + length[i]]`` the CDR payload.
    """

    conn: np.ndarray
    time: np.ndarray
    data: np.ndarray
    start: np.ndarray
    length: np.ndarray

    def __len__(self) -> int:
        return len(self.time)

    def select(self, keep: np.ndarray) -> "RawBatch":
        """The messages where the boolean ``keep`` is true, in order (the payload bytes are shared)."""
        return RawBatch(self.conn[keep], self.time[keep], self.data, self.start[keep], self.length[keep])

    def payload(self, i: int) -> memoryview:
        """The payload of message ``i`` (no copy)."""
        a = int(self.start[i])
        return memoryview(self.data)[a:a + int(self.length[i])]

    @classmethod
    def from_messages(cls, conn, time, payloads) -> RawBatch:
        """A batch from Python sequences: connection indices, log times (ns), bytes-like payloads."""
        length = np.fromiter(map(len, payloads), np.int64, len(payloads))
        start = np.zeros(len(length), np.int64)
        np.cumsum(length[:-1], out=start[1:])
        data = np.frombuffer(b"".join(payloads), np.uint8)
        return cls(np.asarray(conn, np.int32), np.asarray(time, np.int64), data, start, length)


# ============================================================================ compiled record scan

@njit(error_model="python")
def _u64(buf, p):
    """The little-endian uint64 at ``buf[p:p + 8]`` as int64; -1 when it is ≥ 2**63."""
    if buf[p + 7] >= 128:
        return -1
    v = 0
    for k in range(8):
        v |= np.int64(buf[p + k]) << (8 * k)
    return v


@njit(error_model="python")
def _scan_error(code, where):
    """The ``_scan_chunk`` result for an error ``code`` at offset ``where``."""
    e = np.empty(0, np.int64)
    return code, where, np.empty(0, np.int32), e, e.copy(), e.copy()


@njit(error_model="python")
def _scan_chunk(buf, want, t_lo, t_hi):
    """The Message records of an uncompressed chunk whose channel is wanted and log time in
    ``[t_lo, t_hi]`` ns, in record order.

    ``want[channel_id]`` is the connection index or -1. Returns ``(error, where, conn, time,
    start, length)``: ``error`` 0, or 1 for a record running past the chunk, 2 for a Message
    record shorter than its 22-byte header, with ``where`` its offset; ``start``/``length`` give
    each payload's byte range in ``buf``.
    """
    size = buf.shape[0]
    cap = size // _MSG_HEAD + 1
    conn = np.empty(cap, np.int32)
    time = np.empty(cap, np.int64)
    start = np.empty(cap, np.int64)
    length = np.empty(cap, np.int64)
    n = 0
    p = 0
    while p < size:
        if size - p < 9:
            return _scan_error(1, p)
        rec = _u64(buf, p + 1)
        if rec < 0 or rec > size - p - 9:
            return _scan_error(1, p)
        if buf[p] == 0x05:
            if rec < 22:
                return _scan_error(2, p)
            c = want[np.int64(buf[p + 9]) | (np.int64(buf[p + 10]) << 8)]
            t = _u64(buf, p + 15)
            if c >= 0 and t_lo <= t <= t_hi:       # t == -1 (≥ 2**63) is never in range
                conn[n] = c
                time[n] = t
                start[n] = p + _MSG_HEAD
                length[n] = rec - 22
                n += 1
        p += 9 + rec
    return 0, 0, conn[:n].copy(), time[:n].copy(), start[:n].copy(), length[:n].copy()


@njit(error_model="python")
def _copy(dst, src):
    """``dst[:] = src`` as a loop LLVM vectorises (numba's slice assignment is ~4x slower here)."""
    for k in range(src.shape[0]):
        dst[k] = src[k]


@njit(error_model="python")
def _gather(src, src_start, length, out, out_start):
    """Copy payload ``i`` from ``src[src_start[i]:...]`` to ``out[out_start[i]:...]``."""
    for i in range(length.shape[0]):
        a = src_start[i]
        b = out_start[i]
        _copy(out[b:b + length[i]], src[a:a + length[i]])


# ============================================================================ reading

def iter_batches(reader, connections, max_messages: int = 65536):
    """Yield :class:`RawBatch` objects holding exactly the messages, in exactly the order,
    ``reader.messages(connections=connections)`` yields.

    ``reader`` is an open ``rosbags.rosbag2.Reader`` (or any object with ``connections`` and
    ``messages``, read through them); ``batch.conn`` indexes ``connections`` (if it is empty, every
    connection of the bag, ``reader.connections``, as rosbags does). Every batch holds
    ``max_messages`` messages except the last. MCAP files with a summary are read chunk by chunk
    (module docstring); anything else through ``reader.messages``. A damaged file yields what was
    read before the damage, then raises.
    """
    if max_messages < 1:
        raise ValueError(f"max_messages must be at least 1, got {max_messages}")
    connections = list(connections) or list(reader.connections)
    plan = _mcap_plan(reader, connections)
    if plan is None:
        yield from _batches_from_reader(reader, connections, max_messages)
        return
    out = _Assembler(max_messages)
    try:
        for path, chunk_indexes, want in plan:
            with open(path, "rb") as fh:
                for src, rows in _mcap_runs(fh, chunk_indexes, want):
                    out.add(src, rows)
                    yield from out.batches()
    except Exception:
        yield from out.batches(final=True)      # a damaged bag: what was read before the damage, then the error
        raise
    yield from out.batches(final=True)


def _batches_from_reader(reader, connections, max_messages, block=512):
    """The fallback: ``reader.messages`` taken ``block`` messages at a time (holding few Python
    objects at once is cheaper than holding a whole batch of them), assembled into batches."""
    first = _first_index(connections)
    out = _Assembler(max_messages)

    def add(part):
        if not part:
            return
        conns, times, payloads = zip(*part)
        try:
            index = [first[id(c)] for c in conns]
        except KeyError:                    # a connection equal to, not the same as, a given one
            index = [first[id(c)] if id(c) in first else connections.index(c) for c in conns]
        piece = RawBatch.from_messages(index, times, payloads)
        out.add(piece, np.arange(len(piece)))

    part = []
    try:
        for message in reader.messages(connections=connections):
            part.append(message)
            if len(part) == block:
                add(part)
                part = []
                yield from out.batches()
    except Exception:
        add(part)                           # a damaged bag: what was read before the damage, then the error
        yield from out.batches(final=True)
        raise
    add(part)
    yield from out.batches(final=True)


def _first_index(connections) -> dict:
    """``{id(connection): its first index in connections}`` (Connection objects compare by value;
    rosbags yields the very objects it lists)."""
    first = {}
    for i, c in enumerate(connections):
        first.setdefault(id(c), i)
    return first


def _mcap_plan(reader, connections):
    """``[(MCAP file, chunk indexes, want)]`` for every storage file of ``reader`` when the bag is
    MCAP without per-message or per-file compression, every file has a summary with a chunk index,
    and every channel maps to exactly one connection of the bag; else None (``reader.messages``).
    ``want[channel_id]`` is the index in ``connections`` of the channel's connection, or -1."""
    try:
        from mcap.reader import make_reader
        from rosbags.rosbag2 import Reader
    except ImportError:
        return None
    if not isinstance(reader, Reader) or reader.compression_mode:       # (raises when not open)
        return None
    plan = []
    for path in _storage_files(Path(reader.path)) or ():
        with open(path, "rb") as fh:
            try:
                summary = make_reader(fh).get_summary()
            except Exception:  # noqa: BLE001 - no footer or summary: rosbags reads the file its own way
                return None
        want = _channel_want(summary, reader.connections, connections) if summary else None
        if want is None or not summary.chunk_indexes:
            return None
        plan.append((path, summary.chunk_indexes, want))
    return plan or None


def _storage_files(path: Path):
    """The MCAP files of a bag, in rosbags' order: ``path`` itself when it is an ``.mcap`` file;
    for a bag directory, ``relative_file_paths`` of its ``metadata.yaml`` when its
    ``storage_identifier`` is ``mcap`` (rosbag2's metadata format); else None."""
    if path.is_file():
        return [path] if path.suffix == ".mcap" else None
    import yaml
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)         # libyaml's parser when PyYAML has it
        info = yaml.load((path / "metadata.yaml").read_text(), Loader=loader)["rosbag2_bagfile_information"]
        if info["storage_identifier"] != "mcap":
            return None
        return [path / PurePath(name).name for name in info["relative_file_paths"]]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None


def _channel_want(summary, bag_connections, connections):
    """``want`` for one MCAP file: a channel maps to the one connection of the bag with its topic,
    message type (schema name) and serialization format (message encoding); None when a channel
    matches none or several (rosbags then decides how to map it)."""
    first = _first_index(connections)
    want = np.full(65536, -1, np.int32)
    for channel in summary.channels.values():
        schema = summary.schemas.get(channel.schema_id)
        match = [c for c in bag_connections
                 if c.topic == channel.topic and schema is not None and c.msgtype == schema.name
                 and getattr(c.ext, "serialization_format", None) == channel.message_encoding]
        if len(match) != 1:
            return None
        want[channel.id] = first.get(id(match[0]), -1)
    return want


def _mcap_runs(fh, chunk_indexes, want):
    """``(source batch, row indices)`` runs of one MCAP file in rosbags' order.

    Chunks are taken in ``(message_start_time, offset)`` order, and a message is final once its
    log time is below the next chunk's start (a later chunk holds nothing earlier). Chunks whose
    message index lists no wanted channel are skipped."""
    ids = set(np.flatnonzero(want >= 0).tolist())
    chunks = sorted((c for c in chunk_indexes if ids.intersection(c.message_index_offsets)),
                    key=lambda c: (c.message_start_time, c.chunk_start_offset))
    pool = _Pool()
    for k, chunk in enumerate(chunks):
        pool.add(_read_chunk(fh, chunk, want), chunk.chunk_start_offset)
        limit = chunks[k + 1].message_start_time if k + 1 < len(chunks) else None
        yield from pool.pop_before(limit)


def _read_chunk(fh, index, want) -> RawBatch:
    """The wanted messages of the chunk ``index`` (an ``mcap`` ChunkIndex) points at, sorted stably
    by log time; ``data`` is the whole decompressed chunk."""
    from mcap.records import Chunk
    from mcap.stream_reader import StreamReader
    where = f"the MCAP chunk at byte {index.chunk_start_offset}"
    fh.seek(index.chunk_start_offset)
    try:
        chunk = next(iter(StreamReader(fh, skip_magic=True, emit_chunks=True).records))
        if not isinstance(chunk, Chunk):
            raise BagReadError(f"{where}: a {type(chunk).__name__} record, not a Chunk")
        raw = decompress(chunk.data, chunk.compression, chunk.uncompressed_size, chunk.uncompressed_crc)
    except BagReadError:
        raise
    except Exception as exc:  # noqa: BLE001 - mcap, zstd and lz4 raise their own types for damaged bytes
        raise BagReadError(f"{where} cannot be read: {type(exc).__name__}: {exc}") from exc
    buf = np.frombuffer(raw, np.uint8)
    err, at, conn, time, start, length = _scan_chunk(buf, want, chunk.message_start_time, chunk.message_end_time)
    if err:
        what = "runs past the end of its chunk" if err == 1 else "is shorter than its header"
        raise BagReadError(f"{where}: the record at offset {at} of the chunk {what}")
    if len(time) > 1 and np.any(time[1:] < time[:-1]):
        order = np.argsort(time, kind="stable")
        conn, time, start, length = conn[order], time[order], start[order], length[order]
    return RawBatch(conn, time, buf, start, length)


def decompress(data, compression: str, size: int, crc: int = 0) -> bytes:
    """The records of a Chunk record: ``data`` decompressed (``compression``: ``""``, ``zstd`` or
    ``lz4``, as the MCAP specification names them), checked against the chunk's uncompressed
    ``size`` (bytes) and, when not 0, its CRC-32 ``crc``. Raises :class:`ChunkError` otherwise."""
    if compression == "":
        raw = bytes(data)
    elif compression == "zstd":
        try:
            from compression import zstd  # Python 3.14
        except ImportError:
            from backports import zstd
        raw = zstd.decompress(bytes(data))
    elif compression == "lz4":
        import lz4.frame
        raw = lz4.frame.decompress(bytes(data))
    else:
        raise ChunkError(f"unsupported chunk compression '{compression}'")
    if len(raw) != size:
        raise ChunkError(f"a chunk decompresses to {len(raw)} bytes, its header says {size}")
    if crc and zlib.crc32(raw) != crc:
        raise ChunkError(f"a chunk's CRC-32 is {zlib.crc32(raw):#010x}, its header says {crc:#010x}")
    return raw


class _Pool:
    """Messages read from opened chunks but not yet final, sorted by (log time ns, chunk offset),
    stably: the order of rosbags' heap merge. Each entry is a row of one source batch (a chunk)."""

    def __init__(self):
        self.sources = []
        self.time = np.empty(0, np.int64)
        self.coff = np.empty(0, np.int64)
        self.src = np.empty(0, np.int64)
        self.row = np.empty(0, np.int64)

    def add(self, batch: RawBatch, chunk_offset: int) -> None:
        """Merge the (time-sorted) messages of the chunk at file offset ``chunk_offset``."""
        n = len(batch)
        if n == 0:
            return
        in_order = not len(self.time) or (int(self.time[-1]), int(self.coff[-1])) < (int(batch.time[0]), chunk_offset)
        self.time = np.concatenate([self.time, batch.time])
        self.coff = np.concatenate([self.coff, np.full(n, chunk_offset, np.int64)])
        self.src = np.concatenate([self.src, np.full(n, len(self.sources), np.int64)])
        self.row = np.concatenate([self.row, np.arange(n, dtype=np.int64)])
        self.sources.append(batch)
        if not in_order:
            order = np.lexsort((self.coff, self.time))          # stable: rows of a chunk keep their order
            self.time, self.coff, self.src, self.row = (a[order] for a in (self.time, self.coff, self.src, self.row))

    def pop_before(self, limit):
        """Remove and yield, as ``(source, rows)`` runs, the messages with log time < ``limit``
        (all when ``limit`` is None)."""
        k = len(self.time) if limit is None else int(np.searchsorted(self.time, limit, "left"))
        src, row = self.src[:k], self.row[:k]
        self.time, self.coff, self.src, self.row = self.time[k:], self.coff[k:], self.src[k:], self.row[k:]
        cuts = np.flatnonzero(src[1:] != src[:-1]) + 1
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, k]):
            if b > a:
                yield self.sources[src[a]], row[a:b]
        keep = set(np.unique(self.src).tolist())
        for s in set(np.unique(src).tolist()) - keep:
            self.sources[s] = None


class _Assembler:
    """``(source batch, rows)`` runs in output order → compact batches of ``max_messages``."""

    def __init__(self, max_messages: int):
        self.max = max_messages
        self.runs = deque()
        self.count = 0

    def add(self, src: RawBatch, rows: np.ndarray) -> None:
        self.runs.append((src, rows))
        self.count += len(rows)

    def batches(self, final: bool = False):
        """Yield full batches (and, if ``final``, the remainder)."""
        while self.count >= self.max or (final and self.count):
            yield self._take(min(self.max, self.count))

    def _take(self, n: int) -> RawBatch:
        parts = []
        need = n
        while need:
            src, rows = self.runs.popleft()
            if len(rows) > need:
                self.runs.appendleft((src, rows[need:]))
                rows = rows[:need]
            parts.append((src, rows))
            need -= len(rows)
        self.count -= n
        return _compact(parts)


def _compact(parts) -> RawBatch:
    """One batch with its payloads copied, in order, into one array."""
    conn = np.concatenate([s.conn[r] for s, r in parts])
    time = np.concatenate([s.time[r] for s, r in parts])
    length = np.concatenate([s.length[r] for s, r in parts])
    start = np.zeros(len(length), np.int64)
    np.cumsum(length[:-1], out=start[1:])
    data = np.empty(int(start[-1] + length[-1]) if len(length) else 0, np.uint8)
    i = 0
    for s, r in parts:
        _gather(s.data, s.start[r], s.length[r], data, start[i:i + len(r)])
        i += len(r)
    return RawBatch(conn, time, data, start, length)


# ============================================================================ writing

def write_batch(writer, connections, batch: RawBatch) -> None:
    """Write every message of ``batch`` as ``writer.write(connections[batch.conn[i]],
    batch.time[i], batch.payload(i))``, ``i`` in order (so the files and errors are rosbags' own).

    ``writer`` is an open ``rosbags.rosbag2.Writer`` and ``connections`` a list of the Connection
    objects its ``add_connection`` returned. Single ``writer.write`` calls may be mixed freely with
    batch writes.
    """
    data, write = memoryview(batch.data), writer.write
    for c, t, a, n in zip(batch.conn.tolist(), batch.time.tolist(), batch.start.tolist(), batch.length.tolist()):
        write(connections[c], t, data[a:a + n])
