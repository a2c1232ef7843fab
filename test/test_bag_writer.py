"""The replay's batch writer of rosbag2 MCAP bags (:mod:`rbd_estimator.replay.bag_writer`) against rosbags.

The same messages written by rosbags' ``Writer`` (one ``write`` per message) and by
:class:`McapBagWriter` (batches of random sizes mixed with single messages) must read back the same
through rosbags' ``Reader`` (messages, connections, ``metadata.yaml``), through the replay's own
chunk-by-chunk reader and its salvage reader, and through ``mcap``'s readers with CRC checks.
"""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
import yaml

pytest.importorskip("rosbags")
pytest.importorskip("mcap")

from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402

from rbd_estimator.replay import bag_writer  # noqa: E402
from rbd_estimator.replay.bag_writer import McapBagWriter  # noqa: E402
from test_bag_io import (KINDS, MCAP_ZSTD, T0, TOPICS, TS, as_batch, mcap_chunks, messages,  # noqa: E402
                         read_batched, read_reference, salvage, write_bag)

QOS = [Qos(QosHistory.KEEP_LAST, 10, QosReliability.RELIABLE, QosDurability.VOLATILE, QosTime(0, 0),
           QosTime(0, 0), QosLiveliness.AUTOMATIC, QosTime(0, 0), False)]


def write_ours(path, msgs, seed=0, compress=True, qos=()):
    """``msgs`` through :class:`McapBagWriter`: batches of random sizes and single messages."""
    rng = np.random.default_rng(seed)
    w = McapBagWriter(path, compress=compress)
    ids = [w.add_connection(topic, mt, TS.generate_msgdef(mt, ros_version=2)[0], TS.hash_rihs01(mt),
                            offered_qos_profiles=qos) for topic, mt in TOPICS]
    i = 0
    while i < len(msgs):
        if rng.random() < 0.2:
            for k, t, raw in msgs[i:i + 2]:
                w.write(ids[k], t, raw)
            i += 2
            continue
        n = int(rng.choice([1, 3, 100, 2000, 9000]))
        w.write_batch(as_batch(msgs[i:i + n]), ids)
        i += n
    w.close()
    return path


def info(path):
    return yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]


@pytest.mark.parametrize("compress", [True, False])
def test_reads_back_as_rosbags_writes_it(tmp_path, compress):
    msgs = messages(16000, seed=3)                                  # several chunks
    msgs[5] = (msgs[5][0], msgs[5][1], bytes(3 * bag_writer.CHUNK_SIZE))   # a message larger than a chunk
    ref = write_bag(tmp_path / "ref" / "bag", KINDS["mcap-zstd" if compress else "mcap"], msgs)
    ours = write_ours(tmp_path / "ours" / "bag", msgs, seed=1, compress=compress)
    expect = read_reference(ref)
    assert read_reference(ours) == expect
    assert read_batched(ours, max_messages=777) == expect          # the replay's chunk-by-chunk reader
    a, b = info(ref), info(ours)
    assert a == b                                                   # every key and value of metadata.yaml
    with Reader(ours) as r, Reader(ref) as q:
        assert [(c.topic, c.msgtype, c.msgdef, c.digest, c.msgcount, c.ext) for c in r.connections] == \
               [(c.topic, c.msgtype, c.msgdef, c.digest, c.msgcount, c.ext) for c in q.connections]
        assert (r.start_time, r.end_time, r.message_count) == (q.start_time, q.end_time, q.message_count)
    chunks = mcap_chunks(ours)
    assert len(chunks) > 3 and {c.compression for c in chunks} == {"zstd" if compress else ""}


def test_mcap_readers_validate_it(tmp_path):
    """``mcap``'s seeking reader (CRCs checked) and stream reader, and the salvage reader of a file cut
    after two chunks: the messages in order, channels and schemas known before their messages."""
    from mcap.reader import make_reader
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import StreamReader
    msgs = messages(12000, seed=4)
    ours = write_ours(tmp_path / "bag", msgs, seed=2, qos=QOS)
    (f,) = ours.glob("*.mcap")
    expect = read_reference(ours)
    with open(f, "rb") as fh:
        reader = make_reader(fh, validate_crcs=True)
        got = [(ch.topic, m.log_time, m.data) for _, ch, m in reader.iter_messages(log_time_order=True)]
        summary = reader.get_summary()
        assert summary.statistics.message_count == len(msgs)
        assert sorted(summary.statistics.channel_message_counts.values()) == \
            sorted(np.bincount([k for k, _, _ in msgs]).tolist())
        assert reader.get_header().profile == "ros2"
        assert yaml.safe_load(summary.channels[1].metadata["offered_qos_profiles"])[0]["depth"] == 10
        (meta,) = list(reader.iter_metadata())
        assert yaml.safe_load(meta.metadata["serialized_metadata"]) == info(ours)
    assert sorted(got, key=lambda m: m[1]) == sorted(expect, key=lambda m: m[1])
    seen, order = set(), []
    with open(f, "rb") as fh:
        for rec in StreamReader(fh).records:
            if isinstance(rec, (Schema, Channel)):
                seen.add((type(rec), rec.id))
            elif isinstance(rec, Message):
                assert (Channel, rec.channel_id) in seen
                order.append(rec.log_time)
    assert len(order) == len(msgs)
    chunks = mcap_chunks(ours)
    part = tmp_path / "cut.mcap"
    part.write_bytes(f.read_bytes()[:chunks[2].chunk_start_offset])
    r, got, error = salvage(part)
    assert error is None and got == expect[:len(got)] and len(got) > 0


def test_bad_input_is_refused(tmp_path):
    w = McapBagWriter(tmp_path / "a")
    ids = [w.add_connection(t, mt, TS.generate_msgdef(mt, ros_version=2)[0], TS.hash_rihs01(mt)) for t, mt in TOPICS]
    with pytest.raises(ValueError, match="already"):
        w.add_connection(*TOPICS[0], "", "")
    w.write_batch(as_batch([]), ids)
    with pytest.raises(ValueError, match="unknown connection id 9"):
        w.write_batch(as_batch([(0, T0, b"a")]), [9])
    with pytest.raises(ValueError, match="negative"):
        w.write_batch(as_batch([(0, T0, b"a"), (1, -1, b"b")]), ids)
    w.write(ids[1], T0, b"ok")
    with pytest.raises(ValueError, match="after the first message"):
        w.add_connection("/late", TOPICS[0][1], "", "")
    w.close()
    assert read_reference(tmp_path / "a") == [(TOPICS[1][0], T0, b"ok")]
    with pytest.raises(FileExistsError):
        McapBagWriter(tmp_path / "a")


def test_without_mcap_rosbags_writes_the_mcap_bag(tmp_path, monkeypatch):
    """Where the ``mcap`` package is missing, MCAP output goes through rosbags' ``Writer`` (zstd chunks),
    the same messages."""
    import sys
    from rbd_estimator.replay.bag_writer import RosbagsBagWriter, open_writer
    msgs = messages(3000, seed=5)
    monkeypatch.setitem(sys.modules, "mcap.records", None)          # `import mcap.records` raises ImportError
    w = open_writer(tmp_path / "bag", "mcap")
    assert isinstance(w, RosbagsBagWriter)
    ids = [w.add_connection(t, mt, TS.generate_msgdef(mt, ros_version=2)[0], TS.hash_rihs01(mt)) for t, mt in TOPICS]
    w.write_batch(as_batch(msgs[:1000]), ids)
    for k, t, raw in msgs[1000:]:
        w.write(ids[k], t, raw)
    w.close()
    assert read_reference(tmp_path / "bag") == read_reference(write_bag(tmp_path / "ref" / "bag", MCAP_ZSTD, msgs))
    assert {c.compression for c in mcap_chunks(tmp_path / "bag")} == {"zstd"}
