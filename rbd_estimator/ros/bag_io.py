"""Whole batches of raw (CDR) messages between rosbags bags and numpy arrays (the offline replay).

rosbags' per-message API costs a few µs per message; the replay moves ~20 messages per millisecond
of recording. Measured on the demo recording (10 s, 110k messages, ~200 bytes each): reading
~2.7 µs per message with ``Reader.messages``, 0.3 µs (zstd chunks) or 0.12 µs (uncompressed) with
:func:`iter_batches`; writing (``close()`` included) ~4.5 µs with ``Writer.write``, 1.25 µs (zstd
chunks, of which ~0.9 µs is zstd itself) or 0.4 µs (uncompressed) with :func:`write_batch`; into
sqlite3 ~5.5 µs with ``Writer.write``, ~4.4 µs with :func:`write_batch` (sqlite's own insert).
This module keeps rosbags for everything about the container (opening, connections,
``metadata.yaml``, the MCAP summary and footer) and does only the per-message record work itself,
in compiled code or numpy:

* :func:`iter_batches` reads the messages ``reader.messages(connections)`` would yield, in the same
  order, as :class:`RawBatch` arrays;
* :func:`write_batch` writes a batch as ``writer.write`` would, message by message.

A :class:`RawBatch` of ``n`` messages is five arrays: ``conn`` (int32[n], index into the caller's
connection list), ``time`` (int64[n], log time in ns), ``data`` (uint8[m], the payloads
concatenated in message order), ``start`` and ``length`` (int64[n], byte range of each payload in
``data``; :func:`write_batch` reads them through ``start``/``length`` only, so any layout works).

MCAP records (https://mcap.dev/spec) are ``opcode u8, length u64, content``, little-endian. A
Message record (opcode 0x05) holds ``channel_id u16, sequence u32, log_time u64, publish_time u64``
(22 bytes) and then the payload, so a message of ``L`` payload bytes takes ``31 + L`` bytes.

Fast paths and their fallbacks (both give the same messages, order and files):

* reading an indexed MCAP bag: each chunk listed in rosbags' chunk index (``McapReader.chunks``) is
  read and decompressed (rosbags' ``decompress``: size and CRC checked), its records scanned here.
  rosbags sorts each chunk's messages stably by log time and merges the chunks with ``heapq.merge``
  over ``(log time, chunk offset)``; :class:`_Pool` reproduces that order exactly, overlapping
  chunks included. sqlite3, unindexed MCAP, per-message compression or rosbags internals that look
  different take ``reader.messages`` (correct, slower);
* writing to rosbags' MCAP storage: the Message records are built here and appended to the pending
  chunk, with the bookkeeping of rosbags 0.11's ``McapWriter.write`` and ``Writer.write`` (chunk and
  file time range, per-channel message index and counts, the chunk closed right after the record
  that takes it past 1 MiB). The chunk's message index stays in numpy arrays (the pending chunk
  becomes an ``IndexedChunk``, whose ``msgs`` attribute hands rosbags exactly the dict it would
  have built, see :func:`_indexed_chunk_type`), and :func:`_close_chunk` writes the chunk, its
  MessageIndex records and its ChunkIndex entry byte for byte as ``McapWriter.close_chunk`` does.
  A chunk rosbags closes itself (``Writer.close``, a single ``writer.write`` past 1 MiB) is closed
  by rosbags from that dict;
* writing to rosbags' sqlite3 storage: the rows ``Sqlite3Writer.write`` inserts, in one
  ``executemany`` (same rows, same ids), and ``Writer.write``'s counts and time range.

Whatever else (per-message compression, unknown connections, internals that look different)
calls ``writer.write`` per message. The internals are checked at every call; no version is pinned.
"""
from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict, deque
from dataclasses import dataclass
from io import BytesIO

import numpy as np

from ..jit import njit

__all__ = ["RawBatch", "iter_batches", "write_batch"]

_MSG_HEAD = 31                  # opcode 1 + record length 8 + channel 2 + sequence 4 + two times 16
_CHUNK_LIMIT = 2 ** 20          # rosbags' McapWriter closes a chunk once its records exceed this
_MAX_TIME = 2 ** 63 - 1


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


# ============================================================================ compiled record work

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
def _put(out, p, value, nbytes):
    """Write ``value`` little-endian into ``out[p:p + nbytes]``."""
    for k in range(nbytes):
        out[p + k] = (value >> (8 * k)) & 0xFF


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


@njit(error_model="python")
def _message_records(cid, time, data, start, length, out, at):
    """Message records, one per message, written at ``out[at[i]:]``: opcode 0x05, record length
    u64 (22 + payload), channel id u16, sequence u32 = 0, log time u64, publish time u64 = log
    time, payload (exactly the bytes rosbags' ``McapWriter.write`` produces)."""
    for i in range(time.shape[0]):
        p = at[i]
        out[p] = 0x05
        _put(out, p + 1, length[i] + 22, 8)
        _put(out, p + 9, cid[i], 2)
        _put(out, p + 11, 0, 4)
        _put(out, p + 15, time[i], 8)
        _put(out, p + 23, time[i], 8)
        _copy(out[p + _MSG_HEAD:p + _MSG_HEAD + length[i]], data[start[i]:start[i] + length[i]])


@njit(error_model="python")
def _chunk_layout(pos0, rec_size, limit):
    """Where each record lands in rosbags' pending chunks: its offset in its chunk's buffer, and
    the indices after which a chunk closes (the chunk had ``pos0`` bytes; a chunk closes right
    after the record that takes it past ``limit`` bytes, the next starts empty)."""
    n = rec_size.shape[0]
    offset = np.empty(n, np.int64)
    closes = np.empty(n, np.int64)
    k = 0
    pos = pos0
    for i in range(n):
        offset[i] = pos
        pos += rec_size[i]
        if pos > limit:
            closes[k] = i + 1
            k += 1
            pos = 0
    return offset, closes[:k].copy()


# ============================================================================ reading

def iter_batches(reader, connections, max_messages: int = 65536):
    """Yield :class:`RawBatch` objects holding exactly the messages, in exactly the order,
    ``reader.messages(connections=connections)`` yields.

    ``reader`` is an open ``rosbags.rosbag2.Reader``; ``batch.conn`` indexes ``connections`` (if it
    is empty, every connection of the bag, ``reader.connections``, as rosbags does). Every batch
    holds ``max_messages`` messages except the last. Indexed MCAP files are read chunk by chunk
    (module docstring); anything else through ``reader.messages``.
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
        for storage, want in plan:
            for src, rows in _mcap_runs(storage, want):
                out.add(src, rows)
                yield from out.batches()
    except Exception:
        yield from out.batches(final=True)      # a damaged bag: what was read before the damage, then the error
        raise
    yield from out.batches(final=True)


def _batches_from_reader(reader, connections, max_messages, block=512):
    """The fallback: ``reader.messages`` taken ``block`` messages at a time (holding few Python
    objects at once is cheaper than holding a whole batch of them), assembled into batches."""
    first = {}
    for i, c in enumerate(connections):
        first.setdefault(id(c), i)
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


def _mcap_plan(reader, connections):
    """``[(McapReader, want)]`` for every storage file of ``reader`` when all are indexed MCAP
    files with the rosbags internals this module reads, else None. ``want[channel_id]`` is the
    index in ``connections`` of the connection rosbags maps the channel to, or -1."""
    storage = getattr(reader, "storage", None)
    if not getattr(reader, "is_open", False) or storage is None:
        return None
    if _indexed_mcap(storage):          # Reader on a bare .mcap file: channels match by id
        first = {}
        for i, c in enumerate(connections):
            first.setdefault(id(c), i)
        want = np.full(65536, -1, np.int32)
        for c in connections:                       # the last connection with an id wins
            if not 0 <= c.id < 65536:
                return None
            want[c.id] = first[id(c)]
        return [(storage, want)]
    files = getattr(storage, "storages", None)
    mode = getattr(getattr(storage, "metadata", None), "compression_mode", "message")
    if files is None or mode == "message" or not all(_indexed_mcap(f) for f in files):
        return None
    return [(f, _directory_want(f, connections)) for f in files]


def _directory_want(storage, connections):
    """``want`` for one file of a bag directory: rosbags' ``DirectoryReader`` maps a channel to
    the first requested connection of the same topic, type and serialization/QoS, with equal
    type hashes when both have one."""
    want = np.full(65536, -1, np.int32)
    for x in storage.connections:
        for i, y in enumerate(connections):
            if (y.topic == x.topic and y.msgtype == x.msgtype and y.ext == x.ext
                    and (not x.digest or not y.digest or y.digest == x.digest)):
                want[x.id] = i
                break
    return want


_CHUNK_FIELDS = ("message_start_time", "message_end_time", "chunk_start_offset", "compression",
                 "compressed_size", "uncompressed_size", "channel_count")


def _indexed_mcap(storage) -> bool:
    """Whether ``storage`` is rosbags' open MCAP reader with a chunk index as this module reads it
    (rosbags reads files without one by a sequential scan: the fallback)."""
    try:
        from rosbags.rosbag2 import storage_mcap
    except ImportError:
        return False
    chunks = getattr(storage, "chunks", None)
    return (isinstance(storage, getattr(storage_mcap, "McapReader", ()))
            and callable(getattr(storage_mcap, "decompress", None))
            and getattr(storage, "bio", None) is not None
            and isinstance(chunks, list) and len(chunks) > 0
            and all(hasattr(storage, a) for a in ("connections", "messages"))
            and all(hasattr(c, f) for c in chunks for f in _CHUNK_FIELDS)
            and all(c.message_end_time <= _MAX_TIME and c.message_start_time >= 0 for c in chunks)
            and all(0 <= x.id < 65536 for x in storage.connections))


def _mcap_runs(storage, want):
    """``(source batch, row indices)`` runs of one MCAP file in rosbags' order.

    rosbags opens a chunk when the heap merge reaches its ``message_start_time``: chunks are taken
    in ``(message_start_time, offset)`` order, and a message is final once its log time is below
    the next chunk's start (a later chunk holds nothing earlier)."""
    ids = [int(i) for i in np.flatnonzero(want >= 0)]
    chunks = sorted((c for c in storage.chunks if any(c.channel_count.get(i, 0) for i in ids)),
                    key=lambda c: (c.message_start_time, c.chunk_start_offset))
    pool = _Pool()
    for k, chunk in enumerate(chunks):
        pool.add(_read_chunk(storage, chunk, want), chunk.chunk_start_offset)
        limit = chunks[k + 1].message_start_time if k + 1 < len(chunks) else None
        yield from pool.pop_before(limit)


def _read_chunk(storage, chunk, want) -> RawBatch:
    """The wanted messages of one chunk, sorted stably by log time; ``data`` is the whole
    decompressed chunk. Chunk record layout: opcode, length (9 bytes), start/end time and
    uncompressed size (24), CRC u32, compression string (u32 + bytes), records length u64, records."""
    from rosbags.rosbag2 import ReaderError
    from rosbags.rosbag2.storage_mcap import decompress
    at = chunk.chunk_start_offset + 9 + 24
    crc = int.from_bytes(_read_at(storage.bio, at, 4), "little")
    records = _read_at(storage.bio, at + 16 + len(chunk.compression.encode()), chunk.compressed_size)
    buf = np.frombuffer(decompress(records, chunk.compression, chunk.uncompressed_size, crc), np.uint8)
    err, where, conn, time, start, length = _scan_chunk(buf, want, chunk.message_start_time,
                                                        chunk.message_end_time)
    if err:
        what = "runs past the end of its chunk" if err == 1 else "is shorter than its header"
        raise ReaderError(f"MCAP record at offset {where} of the chunk at {chunk.chunk_start_offset} {what}.")
    if len(time) > 1 and np.any(time[1:] < time[:-1]):
        order = np.argsort(time, kind="stable")
        conn, time, start, length = conn[order], time[order], start[order], length[order]
    return RawBatch(conn, time, buf, start, length)


def _read_at(bio, offset, size) -> bytes:
    """Exactly ``size`` bytes of ``bio`` at ``offset``."""
    from rosbags.rosbag2 import ReaderError
    bio.seek(offset)
    data = bio.read(size)
    if len(data) != size:
        raise ReaderError(f"Truncated record at offset {offset}: expected {size} bytes, got {len(data)}.")
    return data


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
    batch.time[i], batch.payload(i))`` for ``i`` in order would (same files, same errors).

    ``writer`` is an open ``rosbags.rosbag2.Writer`` and ``connections`` a list of the Connection
    objects its ``add_connection`` returned. Single ``writer.write`` calls may be mixed freely with
    batch writes. Anything the fast paths (MCAP, sqlite3; module docstring) do not cover
    (per-message compression, unknown connections, negative times into MCAP, rosbags internals
    that look different) goes through ``writer.write``, message by message, so errors are
    rosbags' own.
    """
    conns = [connections[i] for i in np.unique(batch.conn).tolist()] if len(batch) else []
    if len(batch) and int(batch.time.min()) >= 0 and _fast_mcap_writer(writer, conns):
        _mcap_write(writer, np.array([c.id for c in connections], np.int64)[batch.conn], batch)
        return
    if len(batch) and _fast_sqlite_writer(writer, conns):
        _sqlite_write(writer, [c.id for c in connections], batch)
        return
    data, write = memoryview(batch.data), writer.write
    for c, t, a, n in zip(batch.conn.tolist(), batch.time.tolist(), batch.start.tolist(), batch.length.tolist()):
        write(connections[c], t, data[a:a + n])


_SQLITE_INSERT = "INSERT INTO messages (topic_id, timestamp, data) VALUES(?, ?, ?)"   # rosbags' Sqlite3Writer.write
_SQLITE_COLUMNS = [("id", "INTEGER"), ("topic_id", "INTEGER"), ("timestamp", "INTEGER"), ("data", "BLOB")]


def _fast_sqlite_writer(writer, conns) -> bool:
    """Whether ``writer`` is open on rosbags' sqlite3 storage, without per-message compression,
    with the ``messages`` table rosbags creates and the ``Writer`` bookkeeping :func:`_sqlite_write`
    updates, and every connection in ``conns`` belongs to it."""
    try:
        from rosbags.rosbag2 import CompressionMode
        from rosbags.rosbag2.storage_sqlite3 import Sqlite3Writer
    except ImportError:
        return False
    storage = getattr(writer, "storage", None)
    cursor = getattr(storage, "cursor", None)
    if not (isinstance(storage, Sqlite3Writer) and callable(getattr(cursor, "executemany", None))
            and getattr(writer, "compression_mode", CompressionMode.MESSAGE) != CompressionMode.MESSAGE
            and all(isinstance(getattr(writer, a, None), int) for a in ("min_timestamp", "max_timestamp"))
            and isinstance(getattr(writer, "counts", None), dict)
            and all(c in writer.connections and c.id in writer.counts for c in conns)):
        return False
    try:
        columns = [(r[1], r[2]) for r in cursor.connection.execute("PRAGMA table_info(messages)")]
    except Exception:                   # noqa: BLE001 - a closed database: writer.write raises rosbags' error
        return False
    return columns == _SQLITE_COLUMNS


def _sqlite_write(writer, ids, batch) -> None:
    """Insert ``batch``'s rows with rosbags 0.11's ``Sqlite3Writer.write`` statement in one
    ``executemany`` (``ids[c]``: the topic id of connection index ``c``), then update the
    ``Writer``'s counts and time range as ``Writer.write`` does. Rows are inserted in batch order,
    so they get the ids the per-message writes would."""
    data = memoryview(batch.data)
    rows = zip([ids[c] for c in batch.conn.tolist()], batch.time.tolist(),
               [data[a:a + n] for a, n in zip(batch.start.tolist(), batch.length.tolist())])
    writer.storage.cursor.executemany(_SQLITE_INSERT, rows)
    writer.min_timestamp = min(int(batch.time.min()), writer.min_timestamp)
    writer.max_timestamp = max(int(batch.time.max()), writer.max_timestamp)
    count = np.bincount(batch.conn)
    for c in np.flatnonzero(count).tolist():
        writer.counts[ids[c]] += int(count[c])


_CHUNK_ATTRS = ("message_start_time", "message_end_time", "bio", "msgs")     # rosbags' PendingChunk fields


def _fast_mcap_writer(writer, conns) -> bool:
    """Whether ``writer`` is open on rosbags' MCAP storage, without per-message compression, with
    the bookkeeping attributes :func:`_mcap_write` and :func:`_close_chunk` use, and every
    connection in ``conns`` belongs to it (otherwise ``writer.write`` raises the errors)."""
    try:
        from rosbags.rosbag2 import CompressionMode
        from rosbags.rosbag2.storage_mcap import McapWriter, PendingChunk
    except ImportError:
        return False
    storage = getattr(writer, "storage", None)
    if not (isinstance(storage, McapWriter) and dataclasses.is_dataclass(PendingChunk)
            and tuple(f.name for f in dataclasses.fields(PendingChunk)) == _CHUNK_ATTRS):
        return False
    chunk = storage.chunk
    if type(chunk) is _indexed_chunk_type(PendingChunk):
        msgs = chunk._msgs                      # (reading chunk.msgs would move the pending index into it)
    elif type(chunk) is PendingChunk:
        msgs = chunk.msgs
    else:
        return False
    return (getattr(writer, "compression_mode", CompressionMode.MESSAGE) != CompressionMode.MESSAGE
            and all(isinstance(getattr(writer, a, None), int) for a in ("min_timestamp", "max_timestamp"))
            and isinstance(getattr(writer, "counts", None), dict)
            and all(isinstance(getattr(storage, a, None), int) for a in ("message_start_time", "message_end_time"))
            and isinstance(getattr(storage, "channel_stats", None), dict)
            and isinstance(getattr(storage, "chunks", None), list)
            and isinstance(getattr(storage, "compression", None), str)
            and callable(getattr(storage, "compressor", None))
            and callable(getattr(storage, "close_chunk", None))
            and all(callable(getattr(getattr(storage, "bio", None), a, None)) for a in ("write", "tell"))
            and all(isinstance(getattr(chunk, a, None), int) for a in ("message_start_time", "message_end_time"))
            and isinstance(msgs, dict)
            and callable(getattr(getattr(chunk, "bio", None), "tell", None))
            and all(c in writer.connections and 0 <= c.id < 65536 and c.id in writer.counts
                    and c.id in storage.channel_stats for c in conns))


def _mcap_write(writer, cid, batch) -> None:
    """Append ``batch``'s Message records (channel ids ``cid``) to rosbags' pending chunks, closing
    each where ``McapWriter.write`` would, and update the counts and time ranges of the storage
    and the ``Writer`` as rosbags 0.11's ``McapWriter.write`` and ``Writer.write`` do."""
    from rosbags.rosbag2.storage_mcap import PendingChunk
    indexed = _indexed_chunk_type(PendingChunk)
    storage = writer.storage
    rec_size = batch.length + _MSG_HEAD
    at = np.zeros(len(batch), np.int64)
    np.cumsum(rec_size[:-1], out=at[1:])
    records = np.empty(int(at[-1] + rec_size[-1]), np.uint8)
    _message_records(cid, batch.time, batch.data, batch.start, batch.length, records, at)
    offset, closes = _chunk_layout(storage.chunk.bio.tell(), rec_size, _CHUNK_LIMIT)
    a = 0
    for b in closes.tolist() + ([len(batch)] if not len(closes) or closes[-1] < len(batch) else []):
        chunk = storage.chunk
        if type(chunk) is not indexed:          # a PendingChunk as rosbags made it: same state, as an IndexedChunk
            chunk = storage.chunk = indexed(chunk.message_start_time, chunk.message_end_time, chunk.bio, chunk.msgs)
        chunk.bio.write(memoryview(records)[int(at[a]):int(at[b - 1] + rec_size[b - 1])])
        time = batch.time[a:b]
        chunk.message_start_time = min(int(time.min()), chunk.message_start_time)
        chunk.message_end_time = max(int(time.max()), chunk.message_end_time)
        chunk.add_to_index(cid[a:b], time.copy(), offset[a:b])     # a copy: the caller may reuse its arrays
        if int(offset[b - 1] + rec_size[b - 1]) > _CHUNK_LIMIT:
            _close_chunk(storage)
        a = b
    tmin, tmax = int(batch.time.min()), int(batch.time.max())
    storage.message_start_time = min(tmin, storage.message_start_time)
    storage.message_end_time = max(tmax, storage.message_end_time)
    writer.min_timestamp = min(tmin, writer.min_timestamp)
    writer.max_timestamp = max(tmax, writer.max_timestamp)
    count = np.bincount(cid)
    for c in np.flatnonzero(count).tolist():
        storage.channel_stats[c] += int(count[c])
        writer.counts[c] += int(count[c])


@functools.cache
def _indexed_chunk_type(pending_chunk):
    """rosbags' ``PendingChunk`` class → its subclass ``IndexedChunk``, which holds the message
    index entries :func:`_mcap_write` adds as numpy arrays.

    rosbags' ``msgs`` (``{channel id: [(log time, offset in the chunk)]}`` in write order, channels
    in order of first message) is a property here: reading ``chunk.msgs`` first moves the pending
    entries into the dict, in write order, exactly as ``McapWriter.write`` would have appended
    them. rosbags reaches the index only through that attribute (``McapWriter.write`` appends to
    ``self.chunk.msgs[id]``, ``close_chunk`` iterates over ``self.chunk.msgs``), so what it reads
    is always what it would have written itself; pending entries always come after the dict's
    (any read of the attribute empties them). :func:`_close_chunk` reads both without moving.
    """

    class IndexedChunk(pending_chunk):
        """A ``PendingChunk`` whose index entries written by :func:`write_batch` are kept as arrays
        until something reads ``msgs``."""

        def __init__(self, message_start_time, message_end_time, bio, msgs):
            self.pending = []                   # [(channel ids, log times, offsets)] int64 arrays, in write order
            super().__init__(message_start_time, message_end_time, bio, msgs)

        @property
        def msgs(self):
            if self.pending:
                _flush_index(self)
            return self._msgs

        @msgs.setter
        def msgs(self, value):
            self.pending = []
            self._msgs = value

        def add_to_index(self, cid, time, offset) -> None:
            """Index entries for messages just appended to ``bio`` (``offset``: where each starts)."""
            self.pending.append((cid, time, offset))

    return IndexedChunk


def _pending_index(chunk):
    """The pending entries of an ``IndexedChunk`` as three arrays (channel id, log time, offset),
    in write order, and their channels in order of first appearance."""
    cid, time, offset = (np.concatenate(x) for x in zip(*chunk.pending)) if chunk.pending else (
        np.empty(0, np.int64),) * 3
    channels, first = np.unique(cid, return_index=True)
    return cid, time, offset, channels[np.argsort(first)].tolist()


def _flush_index(chunk) -> None:
    """Move the pending entries into ``chunk._msgs`` as ``McapWriter.write`` appends them:
    channels new to the chunk added in order of first message, each channel's entries in write
    order after those already there."""
    cid, time, offset, channels = _pending_index(chunk)
    chunk.pending = []
    if len(channels) == 1:
        chunk._msgs.setdefault(channels[0], []).extend(zip(time.tolist(), offset.tolist()))
        return
    order = np.argsort(cid, kind="stable")
    time, offset = time[order].tolist(), offset[order].tolist()
    by_id = sorted(channels)
    bounds = np.searchsorted(cid[order], by_id + [65536]).tolist()
    where = dict(zip(by_id, zip(bounds[:-1], bounds[1:])))
    for c in channels:
        a, b = where[c]
        chunk._msgs.setdefault(c, []).extend(zip(time[a:b], offset[a:b]))


def _chunk_index(chunk):
    """The whole message index of an ``IndexedChunk`` (the dict's entries, then the pending ones)
    as ``(channels, slot, time, offset)``: ``channels`` in rosbags' order, entry ``i`` belongs to
    ``channels[slot[i]]``, entries of a channel in its order. None when the dict holds anything
    rosbags could not have written itself (a channel id outside uint16, an entry not two ints
    within uint64: what a failed ``writer.write`` leaves behind); rosbags' ``close_chunk`` then
    does what it does with it."""
    cid, time, offset, new = _pending_index(chunk)
    channels = list(chunk._msgs)
    if not all(type(c) is int and 0 <= c < 65536 and all(map(_is_entry, chunk._msgs[c])) for c in channels):
        return None
    try:
        prefix = [np.array(chunk._msgs[c], np.uint64).reshape(-1, 2) for c in channels]
    except OverflowError:               # an int outside uint64
        return None
    old = set(channels)
    channels += [c for c in new if c not in old]
    slot_of = np.zeros(65536, np.int64)
    slot_of[channels] = np.arange(len(channels))
    slot = np.concatenate([np.full(len(p), k, np.int64) for k, p in enumerate(prefix)] + [slot_of[cid]])
    time = np.concatenate([p[:, 0] for p in prefix] + [time.astype(np.uint64)])
    offset = np.concatenate([p[:, 1] for p in prefix] + [offset.astype(np.uint64)])
    return channels, slot, time, offset


def _is_entry(entry) -> bool:
    """Whether ``entry`` is an index entry as rosbags appends them: a tuple of two ints."""
    return type(entry) is tuple and len(entry) == 2 and type(entry[0]) is int and type(entry[1]) is int


def _le(value: int, nbytes: int) -> bytes:
    """``value`` as a little-endian unsigned integer (OverflowError as rosbags' ``write_uint*``)."""
    return value.to_bytes(nbytes, "little")


def _close_chunk(storage) -> None:
    """``storage.close_chunk()`` of rosbags 0.11, byte for byte, with the MessageIndex records built
    from arrays: the Chunk record (0x06: time range, uncompressed size, CRC 0, compression,
    ``storage.compressor`` of the records), one MessageIndex record (0x07: channel id, then
    ``(log time, offset)`` u64 pairs) per channel in the index's order, the ChunkIndex record's
    content appended to ``storage.chunks`` (a BytesIO, as rosbags' ``close`` writes it), a fresh
    ``PendingChunk``. An index rosbags would not have written itself → rosbags' ``close_chunk``."""
    from rosbags.rosbag2.storage_mcap import PendingChunk
    chunk = storage.chunk
    index = _chunk_index(chunk)
    if index is None:
        storage.close_chunk()
        return
    channels, slot, time, offset = index
    t0, t1, size = chunk.message_start_time, chunk.message_end_time, chunk.bio.tell()
    head = _le(t0, 8) + _le(t1, 8) + _le(size, 8) + _le(0, 4)
    compressed = storage.compressor(chunk.bio.getvalue())
    name = storage.compression.encode()
    head += _le(len(name), 4) + name + _le(len(compressed), 8)
    bio = storage.bio
    chunk_start = bio.tell()
    bio.write(b"\x06" + _le(len(head) + len(compressed), 8) + head)
    bio.write(compressed)
    chunk_end = bio.tell()
    records, starts = _message_index(channels, slot, time, offset, chunk_end)
    bio.write(records)
    summary = BytesIO()
    summary.write(_le(t0, 8) + _le(t1, 8) + _le(chunk_start, 8) + _le(chunk_end - chunk_start, 8)
                  + _le(10 * len(channels), 4) + b"".join(_le(c, 2) + _le(p, 8) for c, p in zip(channels, starts))
                  + _le(len(records), 8) + _le(len(name), 4) + name + _le(len(compressed), 8) + _le(size, 8))
    storage.chunks.append(summary)
    storage.chunk = PendingChunk(_MAX_TIME, 0, BytesIO(), defaultdict(list))


def _message_index(channels, slot, time, offset, base):
    """MessageIndex records (opcode 0x07, record length u64, channel id u16, entries length u32,
    ``(log time, offset)`` u64 pairs), one per channel in ``channels``' order, as one bytes object
    that starts at file offset ``base``; and each record's file offset."""
    order = np.argsort(slot, kind="stable")
    count = np.bincount(slot, minlength=len(channels)).tolist()
    pairs = np.empty((len(slot), 2), "<u8")
    pairs[:, 0] = time[order]
    pairs[:, 1] = offset[order]
    parts, starts, a, pos = [], [], 0, base
    for c, n in zip(channels, count):
        head = b"\x07" + _le(6 + 16 * n, 8) + _le(c, 2) + _le(16 * n, 4)
        parts += [head, pairs[a:a + n].tobytes()]
        starts.append(pos)
        a += n
        pos += 15 + 16 * n
    return b"".join(parts), starts
