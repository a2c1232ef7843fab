"""Batch reading and writing of raw messages (:mod:`rbd_estimator.ros.bag_io`) against rosbags itself.

Every bag here is written by rosbags' ``Writer`` and read by rosbags' ``Reader``; the batch
functions must give exactly what the per-message API gives: the same (topic, log time, bytes)
sequence in the same order when reading, the same message sequence (and, for MCAP, the same file
bytes) when writing, on the fast paths and on the fallbacks.
"""
from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np
import pytest

pytest.importorskip("rosbags")

from rosbags.rosbag2 import (  # noqa: E402
    CompressionFormat,
    CompressionMode,
    Reader,
    StoragePlugin,
    Writer,
    WriterError,
)
from rosbags.rosbag2 import storage_mcap  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402

from rbd_estimator.ros import bag_io  # noqa: E402
from rbd_estimator.ros.bag_io import RawBatch, iter_batches, write_batch  # noqa: E402

TS = get_typestore(Stores.ROS2_HUMBLE)
TOPICS = [("/imu", "sensor_msgs/msg/Imu"), ("/ft/left", "geometry_msgs/msg/WrenchStamped"),
          ("/ft/right", "geometry_msgs/msg/WrenchStamped"), ("/joint_states", "sensor_msgs/msg/JointState")]
T0 = 1_700_000_000_000_000_000

# (storage plugin, compression mode) of the bags written in the tests
MCAP_ZSTD = (StoragePlugin.MCAP, CompressionMode.STORAGE)
MCAP_PLAIN = (StoragePlugin.MCAP, CompressionMode.NONE)
MCAP_FILE = (StoragePlugin.MCAP, CompressionMode.FILE)
MCAP_MESSAGE = (StoragePlugin.MCAP, CompressionMode.MESSAGE)
SQLITE = (StoragePlugin.SQLITE3, CompressionMode.NONE)
KINDS = {"mcap-zstd": MCAP_ZSTD, "mcap": MCAP_PLAIN, "mcap-file-zstd": MCAP_FILE,
         "mcap-message-zstd": MCAP_MESSAGE, "sqlite3": SQLITE}


def messages(n, seed=0, max_size=400, monotonic=True):
    """``n`` messages ``(topic index, log time ns, payload)``: random sizes (0 included), runs of
    equal log times; ``monotonic=False`` shuffles the times so that chunks overlap."""
    rng = np.random.default_rng(seed)
    steps = rng.choice([0, 0, 0, 1_000_000, 250_000, 1], size=n)
    times = T0 + np.cumsum(steps)
    if not monotonic:
        times = times[rng.permutation(n)]
    sizes = rng.integers(0, max_size, size=n)
    sizes[rng.integers(0, n, size=max(1, n // 50))] = 0
    return [(int(rng.integers(len(TOPICS))), int(t), rng.bytes(int(s))) for t, s in zip(times, sizes)]


def open_writer(path, kind):
    """An open rosbags Writer and its connections (one per entry of ``TOPICS``)."""
    plugin, mode = kind
    w = Writer(path, version=9, storage_plugin=plugin)
    if mode != CompressionMode.NONE:
        w.set_compression(mode, CompressionFormat.ZSTD)
    w.open()
    return w, [w.add_connection(topic, mt, typestore=TS) for topic, mt in TOPICS]


def write_bag(path, kind, msgs):
    """A bag written the per-message way."""
    w, conns = open_writer(path, kind)
    for k, t, raw in msgs:
        w.write(conns[k], t, raw)
    w.close()
    return path


def as_batch(msgs) -> RawBatch:
    return RawBatch.from_messages([k for k, _, _ in msgs], [t for _, t, _ in msgs], [raw for _, _, raw in msgs])


def read_reference(path, topics=None):
    """(topic, time, bytes) as ``Reader.messages`` yields them."""
    with Reader(path) as r:
        conns = [c for c in r.connections if topics is None or c.topic in topics]
        return [(c.topic, t, bytes(raw)) for c, t, raw in r.messages(connections=conns)]


def read_batched(path, topics=None, max_messages=100):
    """(topic, time, bytes) as :func:`iter_batches` gives them; checks batch sizes and that the
    connection indices point at the connections ``Reader.messages`` yields."""
    out = []
    with Reader(path) as r:
        conns = [c for c in r.connections if topics is None or c.topic in topics]
        expected = [c for c, _, _ in r.messages(connections=conns)]
        batches = list(iter_batches(r, conns, max_messages))
    assert all(len(b) == max_messages for b in batches[:-1]) and all(len(b) for b in batches)
    for b in batches:
        assert b.conn.dtype == np.int32 and b.time.dtype == np.int64 and b.data.dtype == np.uint8
        assert np.array_equal(b.start[1:], b.start[:-1] + b.length[:-1])
        out += [(conns[c], int(t), bytes(b.payload(i))) for i, (c, t) in enumerate(zip(b.conn, b.time))]
    assert all(c is e for (c, _, _), e in zip(out, expected))
    return [(c.topic, t, raw) for c, t, raw in out]


def mcap_chunks(path):
    with Reader(path) as r:
        return list(r.storage.storages[0].chunks)


# ============================================================================ reading

@pytest.mark.parametrize("kind", list(KINDS))
def test_read_matches_rosbags(tmp_path, kind):
    bag = write_bag(tmp_path / "bag", KINDS[kind], messages(3000, seed=1))
    ref = read_reference(bag)
    assert len(ref) == 3000
    for max_messages in (1, 7, 256, 65536):
        assert read_batched(bag, max_messages=max_messages) == ref
    subset = {"/imu", "/joint_states"}
    assert read_batched(bag, subset, 33) == read_reference(bag, subset)


@pytest.mark.parametrize("kind", ["mcap-zstd", "mcap", "sqlite3"])
def test_read_several_chunks(tmp_path, kind):
    """> 1 MiB: several MCAP chunks, equal log times across chunk boundaries."""
    msgs = messages(14000, seed=2)
    bag = write_bag(tmp_path / "bag", KINDS[kind], msgs)
    if kind != "sqlite3":
        chunks = mcap_chunks(bag)
        assert len(chunks) >= 3
        assert all(a.message_end_time <= b.message_start_time for a, b in zip(chunks, chunks[1:]))
    ref = read_reference(bag)
    assert read_batched(bag, max_messages=1000) == ref
    assert read_batched(bag, {"/ft/left"}, 100) == read_reference(bag, {"/ft/left"})


def test_read_boundary_ties(tmp_path):
    """Equal log times on both sides of every chunk boundary: rosbags orders them by chunk offset."""
    msgs = [(k % 4, T0 + (k // 500) * 1000, bytes([k % 256]) * 997) for k in range(6000)]
    bag = write_bag(tmp_path / "bag", MCAP_PLAIN, msgs)
    chunks = mcap_chunks(bag)
    assert any(a.message_end_time == b.message_start_time for a, b in zip(chunks, chunks[1:]))
    assert read_batched(bag, max_messages=333) == read_reference(bag)


@pytest.mark.parametrize("kind", ["mcap-zstd", "mcap"])
def test_read_overlapping_chunks(tmp_path, kind):
    """Messages written out of time order: chunks overlap in time; rosbags merges them."""
    msgs = messages(12000, seed=3, monotonic=False)
    msgs += [(0, T0 + 5_000_000, b"late")] * 3 + messages(4000, seed=4)
    bag = write_bag(tmp_path / "bag", KINDS[kind], msgs)
    chunks = mcap_chunks(bag)
    assert any(a.message_end_time > b.message_start_time for a, b in zip(chunks, chunks[1:]))
    ref = read_reference(bag)
    assert read_batched(bag, max_messages=999) == ref
    assert read_batched(bag, {"/imu"}, 50) == read_reference(bag, {"/imu"})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_read_many_small_overlapping_chunks(tmp_path, seed):
    """Large payloads (a few messages per chunk), log times from a handful of values, partly
    shuffled: many chunks overlapping and tying with each other in every way."""
    rng = np.random.default_rng(seed)
    times = T0 + 1000 * np.sort(rng.integers(0, 12, 400))
    swap = rng.integers(0, 400, size=(60, 2))
    times[swap[:, 0]], times[swap[:, 1]] = times[swap[:, 1]], times[swap[:, 0]]
    msgs = [(int(rng.integers(4)), int(t), rng.bytes(int(rng.integers(0, 90_000)))) for t in times]
    bag = write_bag(tmp_path / "bag", MCAP_PLAIN, msgs)
    assert len(mcap_chunks(bag)) > 10
    assert read_batched(bag, max_messages=37) == read_reference(bag)
    assert read_batched(bag, {"/ft/right", "/imu"}, 5) == read_reference(bag, {"/ft/right", "/imu"})


def test_read_bare_mcap_file_and_all_connections(tmp_path):
    """A Reader on the .mcap file itself (channels matched by id); empty connections = all."""
    bag = write_bag(tmp_path / "bag", MCAP_ZSTD, messages(9000, seed=5, max_size=300))
    mcap = next(bag.glob("*.mcap"))
    assert read_batched(mcap, max_messages=500) == read_reference(mcap)
    with Reader(mcap) as r:
        assert bag_io._mcap_plan(r, list(r.connections)) is not None
        got = [(r.connections[c].topic, int(t)) for b in iter_batches(r, []) for c, t in zip(b.conn, b.time)]
        assert got == [(c.topic, t) for c, t, _ in r.messages()]


def test_fast_path_taken_only_where_expected(tmp_path):
    for name, expect in (("mcap-zstd", True), ("mcap", True), ("mcap-file-zstd", True),
                         ("mcap-message-zstd", False), ("sqlite3", False)):
        bag = write_bag(tmp_path / name, KINDS[name], messages(50))
        with Reader(bag) as r:
            assert (bag_io._mcap_plan(r, list(r.connections)) is not None) == expect, name


def test_read_fallback_when_internals_differ(tmp_path, monkeypatch):
    """rosbags internals that look different (another reader class, a chunk index without a field
    this module reads) → ``reader.messages``, same result."""
    bag = write_bag(tmp_path / "bag", MCAP_ZSTD, messages(8000, seed=6))
    ref = read_reference(bag)

    def no_fast_read(*_):
        raise AssertionError("fast path taken")

    monkeypatch.setattr(bag_io, "_read_chunk", no_fast_read)
    monkeypatch.setattr(bag_io, "_CHUNK_FIELDS", bag_io._CHUNK_FIELDS + ("no_such_field",))
    assert read_batched(bag, max_messages=700) == ref
    monkeypatch.undo()
    monkeypatch.setattr(bag_io, "_read_chunk", no_fast_read)
    monkeypatch.setattr(storage_mcap, "McapReader", type("OtherMcapReader", (), {}))
    assert read_batched(bag, max_messages=700) == ref


def test_raw_batch_helpers():
    b = RawBatch.from_messages([2, 0, 1], [5, 6, 6], [b"ab", b"", b"cde"])
    assert len(b) == 3 and list(b.start) == [0, 2, 2] and list(b.length) == [2, 0, 3]
    assert [bytes(b.payload(i)) for i in range(3)] == [b"ab", b"", b"cde"]
    assert isinstance(b.payload(2), memoryview)
    with pytest.raises(ValueError, match="max_messages"):
        next(iter_batches(None, [], 0))


# ============================================================================ writing

def write_batched(path, kind, msgs, seed=0, singles=True):
    """The same messages through :func:`write_batch` in random-sized batches, mixed (if
    ``singles``) with per-message ``writer.write`` calls."""
    rng = np.random.default_rng(seed)
    w, conns = open_writer(path, kind)
    i = 0
    while i < len(msgs):
        if singles and rng.random() < 0.3:
            for k, t, raw in msgs[i:i + 3]:
                w.write(conns[k], t, raw)
            i += 3
            continue
        n = int(rng.choice([1, 2, 50, 700, 5000]))
        write_batch(w, conns, as_batch(msgs[i:i + n]))
        i += n
    w.close()
    return path


def assert_same_bags(a, b, kind):
    """Same messages and ``metadata.yaml``; for MCAP the same files (the bag's name is in them: same
    name, other folder), for sqlite3 the same rows in the messages table."""
    assert a.name == b.name
    assert read_reference(a) == read_reference(b)
    assert (a / "metadata.yaml").read_bytes() == (b / "metadata.yaml").read_bytes()
    if kind[0] == StoragePlugin.MCAP:
        (fa,), (fb,) = list(a.glob("*.mcap*")), list(b.glob("*.mcap*"))
        assert fa.read_bytes() == fb.read_bytes()
    elif kind[1] != CompressionMode.FILE:
        (fa,), (fb,) = list(a.glob("*.db3")), list(b.glob("*.db3"))
        rows = [sqlite3.connect(f).execute("SELECT * FROM messages ORDER BY id").fetchall() for f in (fa, fb)]
        assert rows[0] == rows[1]


@pytest.mark.parametrize("kind", list(KINDS))
def test_write_matches_rosbags(tmp_path, kind):
    msgs = messages(16000, seed=7)                     # several chunks
    ref = write_bag(tmp_path / "ref" / "bag", KINDS[kind], msgs)
    assert_same_bags(ref, write_batched(tmp_path / "mixed" / "bag", KINDS[kind], msgs, seed=1), KINDS[kind])
    assert_same_bags(ref, write_batched(tmp_path / "batches" / "bag", KINDS[kind], msgs, seed=2, singles=False),
                     KINDS[kind])


@pytest.mark.parametrize("kind", ["mcap-zstd", "mcap"])
def test_write_chunk_splits(tmp_path, kind):
    """Out-of-order times, payloads larger than a chunk, one batch spanning many chunks."""
    limit = 2 ** 20
    msgs = messages(3000, seed=8, monotonic=False)
    msgs += [(1, T0 + 7, bytes(3 * limit // 2)), (2, T0 + 3, b"x" * 10), (0, T0, bytes(limit))]
    msgs += messages(9000, seed=9, max_size=600)
    ref = write_bag(tmp_path / "ref" / "bag", KINDS[kind], msgs)
    for seed in (3, 4):
        assert_same_bags(ref, write_batched(tmp_path / f"b{seed}" / "bag", KINDS[kind], msgs, seed=seed),
                         KINDS[kind])
    w, conns = open_writer(tmp_path / "one" / "bag", KINDS[kind])
    write_batch(w, conns, as_batch(msgs))
    w.close()
    assert_same_bags(ref, tmp_path / "one" / "bag", KINDS[kind])


def test_write_chunk_closes_only_past_the_limit(tmp_path):
    """A pending chunk of exactly 2**20 bytes stays open; the next record closes it."""
    limit = 2 ** 20
    for name in ("ref", "batched"):
        w, conns = open_writer(tmp_path / name / "bag", MCAP_PLAIN)
        msgs = [(0, T0, bytes(limit - w.storage.chunk.bio.tell() - 31)), (1, T0, b""), (2, T0 + 1, b"y")]
        if name == "ref":
            for k, t, raw in msgs:
                w.write(conns[k], t, raw)
        else:
            write_batch(w, conns, as_batch(msgs[:1]))
            assert w.storage.chunk.bio.tell() == limit and not w.storage.chunks
            write_batch(w, conns, as_batch(msgs[1:]))
            assert len(w.storage.chunks) == 1 and w.storage.chunk.bio.tell() == 32
        w.close()
    assert_same_bags(tmp_path / "ref" / "bag", tmp_path / "batched" / "bag", MCAP_PLAIN)


def test_write_fallback_when_internals_differ(tmp_path, monkeypatch):
    msgs = messages(6000, seed=10)
    ref = write_bag(tmp_path / "ref" / "bag", MCAP_ZSTD, msgs)

    def no_fast_write(*_):
        raise AssertionError("fast path taken")

    monkeypatch.setattr(bag_io, "_mcap_write", no_fast_write)
    monkeypatch.setattr(storage_mcap, "McapWriter", type("OtherMcapWriter", (), {}))
    assert_same_bags(ref, write_batched(tmp_path / "other" / "bag", MCAP_ZSTD, msgs), MCAP_ZSTD)
    monkeypatch.undo()
    monkeypatch.setattr(bag_io, "_mcap_write", no_fast_write)   # a PendingChunk with other fields
    other = dataclasses.make_dataclass("OtherChunk", [("extra", int, 0)], bases=(storage_mcap.PendingChunk,))
    monkeypatch.setattr(storage_mcap, "PendingChunk", other)
    assert_same_bags(ref, write_batched(tmp_path / "chunk" / "bag", MCAP_ZSTD, msgs), MCAP_ZSTD)
    monkeypatch.undo()
    ref = write_bag(tmp_path / "sqlite" / "bag", SQLITE, msgs)
    monkeypatch.setattr(bag_io, "_sqlite_write", no_fast_write)  # a messages table that looks different
    monkeypatch.setattr(bag_io, "_SQLITE_COLUMNS", bag_io._SQLITE_COLUMNS + [("extra", "INTEGER")])
    assert_same_bags(ref, write_batched(tmp_path / "sqlite-other" / "bag", SQLITE, msgs), SQLITE)
    monkeypatch.undo()
    monkeypatch.setattr(bag_io, "_mcap_write", no_fast_write)
    w, conns = open_writer(tmp_path / "nostats", MCAP_ZSTD)
    monkeypatch.setattr(w, "counts", None)             # a bookkeeping attribute it does not know
    with pytest.raises(TypeError):
        write_batch(w, conns, as_batch(msgs[:10]))     # → writer.write, which needs it
    w.abort()


def test_write_errors_as_rosbags(tmp_path):
    w, conns = open_writer(tmp_path / "a", MCAP_ZSTD)
    other, other_conns = open_writer(tmp_path / "b", MCAP_ZSTD)
    write_batch(w, conns, as_batch([]))                # nothing
    with pytest.raises(WriterError, match="unknown connection"):
        write_batch(w, other_conns[:1] + conns[1:], as_batch([(1, T0, b"a"), (0, T0, b"b")]))
    w.close()
    other.close()
    assert read_reference(tmp_path / "a") == [("/ft/left", T0, b"a")]     # written before the bad one
    w, conns = open_writer(tmp_path / "d", MCAP_ZSTD)
    with pytest.raises(OverflowError):                 # as writer.write: a log time must fit a uint64
        write_batch(w, conns, as_batch([(0, T0, b"a"), (0, -1, b"b")]))
    w.abort()
    with pytest.raises(WriterError, match="not opened"):
        write_batch(Writer(tmp_path / "c", version=9), conns, as_batch([(0, T0, b"")]))


def test_write_fast_paths_taken(tmp_path, monkeypatch):
    """MCAP (storage compression or none) and sqlite3 write batches without ``writer.write``."""
    def no_single_write(*_):
        raise AssertionError("writer.write called")

    for name in ("mcap-zstd", "mcap", "mcap-file-zstd", "sqlite3"):
        w, conns = open_writer(tmp_path / name, KINDS[name])
        monkeypatch.setattr(w, "write", no_single_write)
        write_batch(w, conns, as_batch(messages(9000, seed=11)))
        monkeypatch.undo()
        w.close()
    assert_same_bags(write_bag(tmp_path / "ref" / "sqlite3", SQLITE, messages(9000, seed=11)),
                     tmp_path / "sqlite3", SQLITE)


@pytest.mark.parametrize("kind", ["mcap-zstd", "mcap"])
def test_write_chunks_closed_by_rosbags(tmp_path, monkeypatch, kind):
    """A pending chunk with index entries from batches, closed by rosbags: by ``close()``, by a
    single ``writer.write`` that takes it past 1 MiB; and a chunk with entries from single writes
    (two channels) first, then a batch (all four) that closes it."""
    limit = 2 ** 20
    head = messages(3000, seed=12)                       # ~0.6 MiB: one open chunk
    w, _ = open_writer(tmp_path / "empty", KINDS[kind])
    used = w.storage.chunk.bio.tell() + sum(31 + len(raw) for _, _, raw in head)    # schemas, channels, head
    w.abort()
    fill = [(3, T0 + 2_000_000_000, bytes(limit - used - 31 - 100))]                # 100 bytes short of 1 MiB
    cases = {
        "close": [("batch", head)],
        "single write": [("batch", head), ("batch", fill), ("single", [(2, T0 + 2_000_000_001, b"z" * 9000)]),
                         ("batch", messages(500, seed=13))],
        "batch after singles": [("single", [(1 + k % 2, T0 - 1000 + k, bytes(k)) for k in range(40)]),
                                ("batch", head + fill + messages(700, seed=14))],     # new channels in the batch
    }
    for name, steps in cases.items():
        msgs = [m for _, part in steps for m in part]
        ref = write_bag(tmp_path / "ref" / name / "bag", KINDS[kind], msgs)
        w, conns = open_writer(tmp_path / "got" / name / "bag", KINDS[kind])
        for how, part in steps:
            chunk = w.storage.chunk
            if how == "single" and name == "single write":
                assert chunk.pending and chunk.bio.tell() + 31 + len(part[0][2]) > limit
                w.write(conns[part[0][0]], part[0][1], part[0][2])
                assert len(w.storage.chunks) == 1 and not w.storage.chunk.msgs
            elif how == "single":
                for k, t, raw in part:
                    w.write(conns[k], t, raw)
            else:
                rosbags_closes = []
                monkeypatch.setattr(w.storage, "close_chunk", lambda: rosbags_closes.append(1))
                write_batch(w, conns, as_batch(part))
                monkeypatch.undo()
                assert not rosbags_closes                # chunks closed by the batch: our close
        if name == "batch after singles":
            assert len(w.storage.chunks) == 1
        if name == "close":
            assert w.storage.chunk.pending and not w.storage.chunks
        w.close()
        assert_same_bags(ref, tmp_path / "got" / name / "bag", KINDS[kind])


def test_pending_index_reads_as_rosbags(tmp_path):
    """At any point, ``writer.storage.chunk.msgs`` after batch writes equals (keys, key order, entries)
    what per-message writes leave there."""
    msgs = messages(20000, seed=15)
    ref, ref_conns = open_writer(tmp_path / "ref" / "bag", MCAP_PLAIN)
    got, conns = open_writer(tmp_path / "got" / "bag", MCAP_PLAIN)
    rng = np.random.default_rng(16)
    i = 0
    while i < len(msgs):
        n = int(rng.choice([1, 3, 400, 2500]))
        for k, t, raw in msgs[i:i + n]:
            ref.write(ref_conns[k], t, raw)
        if rng.random() < 0.2:
            for k, t, raw in msgs[i:i + n]:
                got.write(conns[k], t, raw)
        else:
            write_batch(got, conns, as_batch(msgs[i:i + n]))
        i += n
        if rng.random() < 0.5:
            assert len(got.storage.chunks) == len(ref.storage.chunks)
            assert list(got.storage.chunk.msgs.items()) == list(ref.storage.chunk.msgs.items())
    ref.close()
    got.close()
    assert_same_bags(tmp_path / "ref" / "bag", tmp_path / "got" / "bag", MCAP_PLAIN)


def test_close_chunk_defers_to_rosbags(tmp_path, monkeypatch):
    """An index rosbags could not have written itself (here a channel id outside uint16) is
    closed by rosbags' own ``close_chunk``."""
    w, conns = open_writer(tmp_path / "bag", MCAP_PLAIN)
    write_batch(w, conns, as_batch(messages(100, seed=17)))
    calls = []
    monkeypatch.setattr(w.storage, "close_chunk", lambda: calls.append(dict(w.storage.chunk.msgs)))
    bag_io._close_chunk(w.storage)
    assert not calls and len(w.storage.chunks) == 1
    write_batch(w, conns, as_batch(messages(100, seed=18)))
    w.storage.chunk._msgs[70000] = []
    bag_io._close_chunk(w.storage)
    assert len(calls) == 1 and 70000 in calls[0] and sum(map(len, calls[0].values())) == 100
    w.abort()


def test_failed_single_write_then_batches(tmp_path):
    """A ``writer.write`` that fails (log time < 0) leaves an entry in rosbags' index and a negative
    start time in the chunk; closing that chunk then fails as rosbags' ``close_chunk`` does."""
    msgs = messages(9000, seed=19)

    def write(w, conns, part, batched):
        if batched:
            write_batch(w, conns, as_batch(part))
        else:
            for k, t, raw in part:
                w.write(conns[k], t, raw)

    for name in ("ref", "batched"):
        w, conns = open_writer(tmp_path / name / "bag", MCAP_PLAIN)
        write(w, conns, msgs[:1000], name == "batched")
        with pytest.raises(OverflowError):
            w.write(conns[0], -5, b"bad")
        with pytest.raises(OverflowError):             # the chunk closes past 1 MiB
            write(w, conns, msgs[1000:], name == "batched")
        assert not w.storage.chunks
        w.abort()
    ref, got = (tmp_path / name / "bag" / "bag.mcap" for name in ("ref", "batched"))
    assert ref.read_bytes() == got.read_bytes()
