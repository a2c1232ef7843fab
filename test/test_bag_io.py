"""Batch reading and writing of raw messages (:mod:`rbd_estimator.replay.bag_io`) against rosbags itself.

Every bag here is written by rosbags' ``Writer`` and read by rosbags' ``Reader``; the batch
functions must give exactly what the per-message API gives: the same (topic, log time, bytes)
sequence in the same order when reading (chunk by chunk through the ``mcap`` package's public
summary, or through ``Reader.messages``), the same files when writing. And the package reaches no
private attribute of another library's objects.
"""
from __future__ import annotations

import ast
import pathlib
import sqlite3
import sys

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
from rosbags.interfaces import (  # noqa: E402
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.typesys import Stores, get_typestore  # noqa: E402

from rbd_estimator.replay import bag_io  # noqa: E402
from rbd_estimator.replay.bag_io import BagReadError, RawBatch, iter_batches, write_batch  # noqa: E402

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
    """The chunk index of the bag's (single) MCAP file, in file order, through ``mcap``'s public API."""
    mcap_reader = pytest.importorskip("mcap.reader")
    (f,) = pathlib.Path(path).glob("*.mcap")
    with open(f, "rb") as fh:
        return sorted(mcap_reader.make_reader(fh).get_summary().chunk_indexes, key=lambda c: c.chunk_start_offset)


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


def test_chunked_path_taken_only_where_expected(tmp_path, monkeypatch):
    """MCAP with chunk compression or none: chunk by chunk, ``reader.messages`` never called;
    per-file or per-message compression and sqlite3: ``reader.messages``."""
    pytest.importorskip("mcap.reader")

    def no_messages(*_, **__):
        raise AssertionError("reader.messages called")

    for name, expect in (("mcap-zstd", True), ("mcap", True), ("mcap-file-zstd", False),
                         ("mcap-message-zstd", False), ("sqlite3", False)):
        bag = write_bag(tmp_path / name, KINDS[name], messages(3000, seed=20))
        ref = read_reference(bag)
        with Reader(bag) as r:
            assert (bag_io._mcap_plan(r, list(r.connections)) is not None) == expect, name
            if expect:
                monkeypatch.setattr(r, "messages", no_messages)
                got = [(r.connections[c].topic, int(t), bytes(b.payload(i)))
                       for b in iter_batches(r, [], 500) for i, (c, t) in enumerate(zip(b.conn, b.time))]
                monkeypatch.undo()
                assert got == ref, name


def test_read_falls_back_where_the_channel_map_is_ambiguous(tmp_path, monkeypatch):
    """Two connections of one topic and type (other QoS): the channel → connection map is
    rosbags' to make, so ``reader.messages`` reads; and without the ``mcap`` package too."""
    w, conns = open_writer(tmp_path / "bag", MCAP_ZSTD)
    t0 = QosTime(0, 0)
    qos = [Qos(QosHistory.KEEP_LAST, 1, QosReliability.BEST_EFFORT, QosDurability.VOLATILE, t0, t0,
               QosLiveliness.AUTOMATIC, t0, False)]
    twin = w.add_connection(TOPICS[0][0], TOPICS[0][1], typestore=TS, offered_qos_profiles=qos)
    for k, t, raw in messages(4000, seed=21):
        w.write(twin if k == 0 and t % 2 else conns[k], t, raw)
    w.close()
    ref = read_reference(tmp_path / "bag")
    with Reader(tmp_path / "bag") as r:
        assert bag_io._mcap_plan(r, list(r.connections)) is None
    assert read_batched(tmp_path / "bag", max_messages=333) == ref
    bag = write_bag(tmp_path / "plain", MCAP_PLAIN, messages(3000, seed=22))
    monkeypatch.setitem(sys.modules, "mcap.reader", None)          # not installed: import fails
    with Reader(bag) as r:
        assert bag_io._mcap_plan(r, list(r.connections)) is None
    assert read_batched(bag, max_messages=100) == read_reference(bag)


@pytest.mark.parametrize("kind", ["mcap-zstd", "mcap"])
def test_damaged_chunk_stops_after_the_messages_before_it(tmp_path, kind):
    """The third chunk's header states one byte more than its records decompress to: the messages
    rosbags' order puts before that chunk are yielded, then :class:`BagReadError` names the chunk."""
    msgs = messages(16000, seed=23)
    bag = write_bag(tmp_path / "bag", KINDS[kind], msgs)
    ref = read_reference(bag)
    chunks = mcap_chunks(bag)
    assert len(chunks) >= 4
    third = chunks[2]
    (f,) = bag.glob("*.mcap")
    raw = bytearray(f.read_bytes())
    at = third.chunk_start_offset + 9 + 16             # opcode, length; start and end time; uncompressed size
    raw[at:at + 8] = (third.uncompressed_size + 1).to_bytes(8, "little")
    f.write_bytes(bytes(raw))
    got = []
    with Reader(bag) as r, pytest.raises(BagReadError, match=f"chunk at byte {third.chunk_start_offset}"):
        for b in iter_batches(r, [], 1000):
            got += [(r.connections[c].topic, int(t), bytes(b.payload(i)))
                    for i, (c, t) in enumerate(zip(b.conn, b.time))]
    assert got and got == ref[:len(got)]
    assert all(t < third.message_start_time for _, t, _ in got)       # nothing from the damaged chunk on


def test_raw_batch_helpers():
    b = RawBatch.from_messages([2, 0, 1], [5, 6, 6], [b"ab", b"", b"cde"])
    assert len(b) == 3 and list(b.start) == [0, 2, 2] and list(b.length) == [2, 0, 3]
    assert [bytes(b.payload(i)) for i in range(3)] == [b"ab", b"", b"cde"]
    assert isinstance(b.payload(2), memoryview)
    with pytest.raises(ValueError, match="max_messages"):
        next(iter_batches(None, [], 0))


def test_chunk_decompression_checks_size_and_crc():
    """The chunk decompression of the chunk-by-chunk reader: zstd, lz4 and none; a
    wrong uncompressed size or CRC-32 (when the chunk states one) is refused, naming which."""
    import zlib

    import lz4.frame
    from rbd_estimator.replay.bag_io import ChunkError, decompress
    try:
        from compression import zstd
    except ImportError:
        from backports import zstd
    raw = bytes(range(256)) * 40
    crc = zlib.crc32(raw)
    for name, packed in (("zstd", zstd.compress(raw)), ("lz4", lz4.frame.compress(raw)), ("", raw)):
        assert decompress(packed, name, len(raw), crc) == raw
        assert decompress(packed, name, len(raw), 0) == raw          # CRC 0: not stated (rosbags writes 0)
        with pytest.raises(ChunkError, match="CRC-32"):
            decompress(packed, name, len(raw), crc ^ 1)
        with pytest.raises(ChunkError, match=f"decompresses to {len(raw)} bytes, its header says {len(raw) + 1}"):
            decompress(packed, name, len(raw) + 1, crc)
    with pytest.raises(ChunkError, match="unsupported chunk compression 'bz2'"):
        decompress(raw, "bz2", len(raw))


# ============================================================================ salvage (truncated MCAP)

def salvage(path, connections=None):
    """(topic, time, bytes) :class:`McapSalvageReader` yields, and the error it raised (or None)."""
    from rbd_estimator.replay.mcap_salvage import McapSalvageReader, SalvageError
    r = McapSalvageReader(str(path))
    got, error = [], None
    try:
        for c, t, raw in r.messages(connections):
            got.append((c.topic, t, bytes(raw)))
    except SalvageError as exc:
        error = str(exc)
    return r, got, error


@pytest.mark.parametrize("kind", ["mcap-zstd", "mcap"])
def test_salvage_reads_a_truncated_mcap_up_to_the_cut(tmp_path, kind):
    """A recording cut inside its third chunk: the salvage reader yields every message of the two
    complete chunks, in rosbags' order of the whole file, none of the cut chunk, no shortened
    payload; then raises naming the offset. Cut between records: everything before, no error. The
    whole file: what rosbags reads, with the counts per topic."""
    bag = write_bag(tmp_path / "bag", KINDS[kind], messages(16000, seed=31))
    ref = read_reference(bag)
    chunks = mcap_chunks(bag)
    assert len(chunks) >= 4
    (f,) = bag.glob("*.mcap")
    whole = f.read_bytes()

    r, got, error = salvage(f)
    assert got == ref and error is None and r.error == ""
    assert r.message_count == len(ref)
    assert {c.topic: c.msgcount for c in r.connections} == {t: sum(1 for m in ref if m[0] == t) for t, _ in TOPICS}
    imu = [c for c in r.connections if c.topic == "/imu"]
    assert imu[0].msgtype == "sensor_msgs/msg/Imu"
    assert salvage(f, imu)[1] == [m for m in ref if m[0] == "/imu"]

    third = chunks[2]
    for cut in (third.chunk_start_offset + 40, third.chunk_start_offset + third.chunk_length - 3):
        part = tmp_path / f"cut_{cut}.mcap"
        part.write_bytes(whole[:cut])
        r, got, error = salvage(part)
        assert error is not None and f"at byte {third.chunk_start_offset} of {cut}" in error
        assert "ends inside a record" in error
        assert got == ref[:len(got)]
        assert len(got) >= sum(1 for m in ref if m[1] < third.message_start_time)
        assert all(t <= chunks[1].message_end_time for _, t, _ in got)
        assert r.message_count == len(got)

    part = tmp_path / "between.mcap"                    # the end of the third chunk's records
    part.write_bytes(whole[:chunks[3].chunk_start_offset])
    r, got, error = salvage(part)
    assert error is None and r.error == ""
    assert got == ref[:len(got)] and all(t <= chunks[2].message_end_time for _, t, _ in got)
    assert len(got) >= sum(1 for m in ref if m[1] < chunks[3].message_start_time)


def test_salvage_refuses_a_file_that_is_not_mcap(tmp_path):
    from rbd_estimator.replay.mcap_salvage import McapSalvageReader, SalvageError
    for name, data in (("text.mcap", b"not an mcap file at all"), ("short.mcap", b"\x89MC")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SalvageError, match="not an MCAP file"):
            McapSalvageReader(str(tmp_path / name))


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


BAG_MODULES = ("replay/bag_io.py", "replay/mcap_salvage.py", "runtime/batch.py", "replay/replayer.py", "replay/bag.py",
               "replay/bag_writer.py")


def test_no_private_attribute_of_another_library():
    """Every ``x._name`` the replay's bag modules reach (``x`` not ``self``/``cls``) names something
    the package defines itself (a module-level name, or an attribute it sets on its own objects):
    nothing private of rosbags, mcap or any other library."""
    root = pathlib.Path(bag_io.__file__).parents[1]
    ours, reached, scanned = set(), [], set()
    for path in root.rglob("*.py"):
        scan = path.relative_to(root).as_posix() in BAG_MODULES
        if scan:
            scanned.add(path.relative_to(root).as_posix())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                ours.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                ours.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                ours.add(node.attr)
            elif isinstance(node, ast.alias) and node.asname:
                ours.add(node.asname)
            if (scan and isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__")
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                reached.append((path.name, node.lineno, node.attr))
    assert scanned == set(BAG_MODULES), f"modules not found: {set(BAG_MODULES) - scanned}"
    foreign = [r for r in reached if r[2] not in ours]
    assert not foreign, f"private attributes of other libraries: {foreign}"
