"""A rosbag2 bag with MCAP storage, written a batch of messages at a time (the replay's writer).

rosbags' ``Writer.write`` builds every Message record in Python, about 5 µs a message: at the 3–6
estimate messages of a 1 ms tick that was two thirds of a fleet task (docs/fleet.md).
:class:`McapBagWriter` writes the same bag a whole :class:`~rbd_estimator.replay.bag_io.RawBatch`
at a time: the Message records (``opcode 0x05, length u64, channel u16, sequence u32, log time u64,
publish time u64, payload``; MCAP specification, https://mcap.dev/spec) are laid into the chunk's
buffer in compiled code and each chunk's Message Index records are built from arrays; every other
record (Header, Schema, Channel, Chunk, Chunk Index, Metadata, Statistics, Summary Offset, Footer)
is the ``mcap`` package's own (``mcap.records``, serialized by ``mcap.data_stream.RecordBuilder``).

The bag is what rosbags' ``Writer`` (version 9, MCAP storage) writes: a folder with
``metadata.yaml`` (rosbag2's ``rosbag2_bagfile_information``, the same keys and values, QoS profiles
dumped by rosbags' own ``dump_qos_v9``) and ``<folder name>.mcap`` with the ``ros2`` profile:
one schema per message type (``ros2msg``/``ros2idl``), one channel per connection with its
``offered_qos_profiles``, chunks of about 1 MiB (with ``compress``, zstd at its fast level -3: on the
humanoid's estimates 7 % larger than rosbags' level 3 at 3.3 times its speed, the fleet's per-core
budget; docs/fleet.md), each followed by its message indexes,
the ``rosbag2`` metadata record, and a summary (schemas, channels, statistics, chunk indexes,
metadata index, summary offsets). Like rosbags, it writes no CRC (0: "not computed"; a CRC-32 of
the chunks would cost about 1 µs per 1 ms tick of the humanoid's estimates). Schemas and channels
are written ahead of the first chunk, so a sequential reader (``mcap``'s ``StreamReader``, the
replay's salvage reader) knows them before any message.

``test/test_bag_writer.py`` reads its bags back through rosbags' ``Reader``, ``mcap``'s readers and
the replay's own, against rosbags' ``Writer`` writing the same messages.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

from ..jit import njit

__all__ = ["McapBagWriter", "RosbagsBagWriter", "open_writer", "CHUNK_SIZE", "ZSTD_LEVEL"]

CHUNK_SIZE = 1 << 20           # a chunk is closed once its records pass this size (bytes), as rosbags does
ZSTD_LEVEL = -3
_MSG_HEAD = 31                 # opcode 1 + record length 8 + channel 2 + sequence 4 + two times 16
_INDEX_HEAD = np.dtype([("op", "u1"), ("length", "<u8"), ("channel", "<u2"), ("size", "<u4")])   # 15 bytes


@njit(error_model="python")
def _put_u64(buf, p, v):
    for k in range(8):
        buf[p + k] = (v >> (8 * k)) & 0xFF


@njit(error_model="python")
def _put_messages(buf, pos, limit, channel, time, data, start, length, i, ix_time, ix_pos, ix_channel, k):
    """Message records of messages ``i, i + 1, …`` from ``buf[pos]`` on, while ``pos <= limit`` and
    the next record fits in ``buf``; message ``j``'s channel id is ``channel[j]``, its log (and
    publish) time ``time[j]``, its payload ``data[start[j]:start[j] + length[j]]``. Each record's
    (time, offset in the chunk, channel) goes to the index arrays at ``k, k + 1, …``. Returns the
    next message, position and index row."""
    n = time.shape[0]
    while i < n and pos <= limit:
        size = length[i]
        if pos + _MSG_HEAD + size > buf.shape[0]:
            break
        c, t, a = channel[i], time[i], start[i]
        buf[pos] = 0x05
        _put_u64(buf, pos + 1, size + 22)
        buf[pos + 9] = c & 0xFF
        buf[pos + 10] = c >> 8
        for q in range(11, 15):                     # sequence 0
            buf[pos + q] = 0
        _put_u64(buf, pos + 15, t)
        _put_u64(buf, pos + 23, t)
        p = pos + _MSG_HEAD
        buf[p:p + size] = data[a:a + size]
        ix_time[k], ix_pos[k], ix_channel[k] = t, pos, c
        k += 1
        pos = p + size
        i += 1
    return i, pos, k


class McapBagWriter:
    """A new rosbag2 bag at ``path`` (a folder that must not exist) with one MCAP file (module
    docstring); ``compress``: zstd chunks. Connections are added with :meth:`add_connection` before
    their messages; messages go in with :meth:`write_batch` or :meth:`write`; :meth:`close` writes
    the summary and ``metadata.yaml`` (until then the bag is incomplete)."""

    def __init__(self, path, compress: bool = True):
        from mcap.records import Header
        self.path = Path(path)
        self.path.mkdir(parents=True)               # FileExistsError for an existing folder
        self.file = self.path / f"{self.path.name}.mcap"
        self.fh = open(self.file, "xb")
        self.compress = compress
        self.schemas, self.channels, self.topics = {}, [], []     # msgtype → Schema; Channel; metadata.yaml's
        self.chunk_indexes = []
        self.pos = self.k = 0
        self.single = []                            # (id, time, bytes) of single messages not yet written
        self.buf = np.empty(0, np.uint8)
        self._grow(CHUNK_SIZE + (CHUNK_SIZE >> 2))
        self.counts = np.zeros(1, np.int64)         # messages per channel id
        self.t_min, self.t_max = 2 ** 63 - 1, 0
        self.fh.write(b"\x89MCAP0\r\n")
        self._write_records([Header(profile="ros2", library="rbd_estimator")])

    def _grow(self, size: int) -> None:
        """A chunk buffer of ``size`` bytes and index arrays for as many records as can fit in it
        (a record takes at least ``_MSG_HEAD`` bytes), keeping what the chunk holds so far."""
        buf, cap = np.empty(size, np.uint8), size // _MSG_HEAD + 1
        buf[:self.pos] = self.buf[:self.pos]
        ix = [np.empty(cap, np.int64) for _ in range(3)]
        if self.k:
            for new, old in zip(ix, (self.ix_time, self.ix_pos, self.ix_channel)):
                new[:self.k] = old[:self.k]
        self.buf, (self.ix_time, self.ix_pos, self.ix_channel) = buf, ix

    def _write_records(self, records) -> None:
        from mcap.data_stream import RecordBuilder
        rb = RecordBuilder()
        for r in records:
            r.write(rb)
        self.fh.write(rb.end())

    # ------------------------------------------------------------------ connections
    def add_connection(self, topic: str, msgtype: str, msgdef: str, rihs01: str, offered_qos_profiles=(),
                       serialization_format: str = "cdr") -> int:
        """A connection (MCAP channel) for ``topic`` of ROS 2 type ``msgtype`` (``pkg/msg/Name``) with
        its message definition ``msgdef`` (rosbags' ``Typestore.generate_msgdef`` gives it) and type
        hash ``rihs01``; ``offered_qos_profiles``: rosbags ``Qos`` objects. Returns its id (1, 2, …),
        what :meth:`write_batch` and :meth:`write` take."""
        from mcap.records import Channel, Schema
        from rosbags.rosbag2.metadata import dump_qos_v9
        if any(t["topic_metadata"]["name"] == topic and t["topic_metadata"]["type"] == msgtype
               and t["topic_metadata"]["serialization_format"] == serialization_format for t in self.topics):
            raise ValueError(f"the bag has a connection for '{topic}' ({msgtype}) already")
        if self.k or self.chunk_indexes or self.single:
            raise ValueError(f"connection '{topic}' added after the first message: add every connection first")
        qos = dump_qos_v9(list(offered_qos_profiles))
        records = []
        if msgtype not in self.schemas:
            fmt = "ros2idl" if msgdef.startswith("=" * 80 + "\nIDL: ") else "ros2msg"
            self.schemas[msgtype] = Schema(id=len(self.schemas) + 1, name=msgtype, encoding=fmt, data=msgdef.encode())
            records.append(self.schemas[msgtype])
        cid = len(self.channels) + 1
        self.channels.append(Channel(id=cid, topic=topic, message_encoding=serialization_format,
                                     schema_id=self.schemas[msgtype].id,
                                     metadata={"offered_qos_profiles": _yaml(qos).strip()}))
        records.append(self.channels[-1])
        self._write_records(records)
        self.topics.append({"topic_metadata": {"name": topic, "type": msgtype,
                                               "serialization_format": serialization_format,
                                               "offered_qos_profiles": qos, "type_description_hash": rihs01},
                            "message_count": 0})
        self.counts = np.zeros(cid + 1, np.int64)
        return cid

    # ------------------------------------------------------------------ messages
    def write_batch(self, batch, ids) -> None:
        """Every message of ``batch`` (a :class:`~rbd_estimator.replay.bag_io.RawBatch`) in order,
        message ``i`` on the connection ``ids[batch.conn[i]]`` (ids from :meth:`add_connection`; None
        for a connection index the batch does not use)."""
        n = len(batch)
        if self.single:
            self._write_single()
        if not n:
            return
        channel = np.array([0 if c is None else c for c in ids], np.int64)[batch.conn]
        if channel.min() < 1 or channel.max() >= len(self.counts):
            raise ValueError(f"unknown connection id {int(channel[(channel < 1) | (channel >= len(self.counts))][0])}")
        if batch.time.min() < 0:
            raise ValueError(f"a log time is negative ({int(batch.time.min())} ns): MCAP times are uint64")
        self.counts += np.bincount(channel, minlength=len(self.counts))
        self.t_min, self.t_max = min(self.t_min, int(batch.time.min())), max(self.t_max, int(batch.time.max()))
        i = 0
        while i < n:
            i, self.pos, self.k = _put_messages(self.buf, self.pos, CHUNK_SIZE, channel, batch.time, batch.data,
                                                batch.start, batch.length, i, self.ix_time, self.ix_pos,
                                                self.ix_channel, self.k)
            if self.pos > CHUNK_SIZE:
                self._close_chunk()
            elif i < n:                              # message i is larger than the room left: a larger buffer
                self._grow(max(2 * self.buf.shape[0], self.pos + _MSG_HEAD + int(batch.length[i])))

    def write(self, cid: int, time: int, data) -> None:
        """One message on connection ``cid`` at log time ``time`` (ns); single messages are gathered
        and written as a batch before the next batch, every 1024 messages, and at :meth:`close`."""
        if not 1 <= cid < len(self.counts):
            raise ValueError(f"unknown connection id {cid}")
        if time < 0:
            raise ValueError(f"a log time is negative ({time} ns): MCAP times are uint64")
        self.single.append((cid, time, bytes(data)))
        if len(self.single) >= 1024:
            self._write_single()

    def _write_single(self) -> None:
        from .bag_io import RawBatch
        if self.single:
            cid, time, data = zip(*self.single)
            self.single = []
            self.write_batch(RawBatch.from_messages(cid, time, data), np.arange(len(self.counts)))

    def _close_chunk(self) -> None:
        """The chunk's records (compressed), then its message indexes; its index for the summary."""
        from mcap.data_stream import RecordBuilder
        from mcap.records import Chunk, ChunkIndex
        if not self.k:
            return
        raw = memoryview(self.buf)[:self.pos]
        data = _zstd().compress(raw, level=ZSTD_LEVEL) if self.compress else bytes(raw)
        t = self.ix_time[:self.k]
        chunk = Chunk(compression="zstd" if self.compress else "", data=data, message_start_time=int(t.min()),
                      message_end_time=int(t.max()), uncompressed_crc=0, uncompressed_size=self.pos)
        rb = RecordBuilder()
        chunk.write(rb)
        start = self.fh.tell()
        self.fh.write(rb.end())
        length = self.fh.tell() - start
        offsets, index = self._message_indexes(self.fh.tell())
        self.fh.write(index)
        self.chunk_indexes.append(ChunkIndex(
            message_start_time=chunk.message_start_time, message_end_time=chunk.message_end_time,
            chunk_start_offset=start, chunk_length=length, message_index_offsets=offsets,
            message_index_length=len(index), compression=chunk.compression, compressed_size=len(data),
            uncompressed_size=self.pos))
        self.pos = self.k = 0

    def _message_indexes(self, at: int):
        """The chunk's Message Index records, one per channel in id order, each listing its messages'
        (log time, offset in the chunk) in record order; ``({channel: file offset}, bytes)`` for
        records starting at file offset ``at``."""
        ch = self.ix_channel[:self.k]
        order = np.argsort(ch, kind="stable")
        ids, first, count = np.unique(ch[order], return_index=True, return_counts=True)
        pairs = np.empty((self.k, 2), "<u8")
        pairs[:, 0], pairs[:, 1] = self.ix_time[:self.k][order], self.ix_pos[:self.k][order]
        parts, offsets = [], {}
        for c, a, m in zip(ids.tolist(), first.tolist(), count.tolist()):
            offsets[c] = at
            head = np.array([(0x07, 6 + 16 * m, c, 16 * m)], _INDEX_HEAD).tobytes()
            parts += [head, pairs[a:a + m].tobytes()]
            at += len(head) + 16 * m
        return offsets, b"".join(parts)

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """The last chunk, the ``rosbag2`` metadata record, the summary, and ``metadata.yaml``."""
        from mcap.records import DataEnd, Metadata, MetadataIndex
        self._write_single()
        self._close_chunk()
        info = self._bag_info()
        meta_start = self.fh.tell()
        self._write_records([Metadata(name="rosbag2", metadata={
            "serialized_metadata": _yaml(info).strip()})])
        meta = MetadataIndex(offset=meta_start, length=self.fh.tell() - meta_start, name="rosbag2")
        self._write_records([DataEnd(data_section_crc=0)])
        self._summary(meta)
        self.fh.close()
        tmp = self.path / "metadata.yaml.tmp"
        tmp.write_text(_yaml({"rosbag2_bagfile_information": info}), "utf8")
        tmp.replace(self.path / "metadata.yaml")

    def _bag_info(self) -> dict:
        """``rosbag2_bagfile_information`` as rosbags' ``Writer`` (version 9) writes it."""
        count = int(self.counts.sum())
        duration, start = max(0, self.t_max - self.t_min), self.t_min
        for cid, t in enumerate(self.topics, 1):
            t["message_count"] = int(self.counts[cid])
        return {"version": 9, "storage_identifier": "mcap", "relative_file_paths": [self.file.name],
                "duration": {"nanoseconds": duration}, "starting_time": {"nanoseconds_since_epoch": start},
                "message_count": count, "topics_with_message_count": self.topics, "compression_format": "",
                "compression_mode": "", "files": [{"path": self.file.name, "starting_time": {
                    "nanoseconds_since_epoch": start}, "duration": {"nanoseconds": duration}, "message_count": count}],
                "custom_data": None, "ros_distro": "rosbags"}

    def _summary(self, meta) -> None:
        """Schemas, channels, statistics, chunk indexes, the metadata index, the summary offsets and
        the footer (the layout of ``mcap``'s ``Writer.finish``)."""
        from mcap.data_stream import RecordBuilder
        from mcap.opcode import Opcode
        from mcap.records import Footer, Statistics, SummaryOffset
        start = self.fh.tell()
        stats = Statistics(message_count=int(self.counts.sum()), schema_count=len(self.schemas),
                           channel_count=len(self.channels), attachment_count=0, metadata_count=1,
                           chunk_count=len(self.chunk_indexes),
                           message_start_time=self.t_min if self.counts.sum() else 0,
                           message_end_time=self.t_max,
                           channel_message_counts={c.id: int(self.counts[c.id]) for c in self.channels})
        rb, offsets = RecordBuilder(), []
        for opcode, group in ((Opcode.SCHEMA, list(self.schemas.values())), (Opcode.CHANNEL, self.channels),
                              (Opcode.STATISTICS, [stats]), (Opcode.CHUNK_INDEX, self.chunk_indexes),
                              (Opcode.METADATA_INDEX, [meta])):
            a = rb.count
            for r in group:
                r.write(rb)
            if rb.count > a:
                offsets.append(SummaryOffset(group_opcode=opcode, group_start=start + a, group_length=rb.count - a))
        offset_start = start + rb.count
        for r in offsets:
            r.write(rb)
        summary = rb.end()
        crc = zlib.crc32(struct.pack("<BQQQ", Opcode.FOOTER, 20, start, offset_start), zlib.crc32(summary))
        self.fh.write(summary)
        self._write_records([Footer(summary_start=start, summary_offset_start=offset_start, summary_crc=crc)])
        self.fh.write(b"\x89MCAP0\r\n")

    def abort(self) -> None:
        """Close the file without summary nor ``metadata.yaml`` (an incomplete bag)."""
        self.fh.close()


def _yaml(doc) -> str:
    """``doc`` as block-style YAML (libyaml's emitter when PyYAML has it)."""
    import yaml
    return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), default_flow_style=False)


def _zstd():
    try:
        from compression import zstd  # Python 3.14
    except ImportError:
        from backports import zstd
    return zstd


class RosbagsBagWriter:
    """:class:`McapBagWriter`'s interface over rosbags' ``Writer`` (one ``Writer.write`` per message,
    through :func:`~rbd_estimator.replay.bag_io.write_batch`): sqlite3 output, and MCAP output where
    the ``mcap`` package is not installed (zstd chunks with ``compress``)."""

    def __init__(self, path, storage: str = "sqlite3", compress: bool = True):
        from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer
        self.writer = Writer(path, version=9,
                             storage_plugin=StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3)
        if storage == "mcap" and compress:
            self.writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)
        self.writer.open()

    def add_connection(self, topic: str, msgtype: str, msgdef: str, rihs01: str, offered_qos_profiles=(),
                       serialization_format: str = "cdr"):
        return self.writer.add_connection(topic, msgtype, msgdef=msgdef, rihs01=rihs01,
                                          serialization_format=serialization_format,
                                          offered_qos_profiles=offered_qos_profiles)

    def write_batch(self, batch, ids) -> None:
        from .bag_io import write_batch
        write_batch(self.writer, ids, batch)

    def write(self, cid, time: int, data) -> None:
        self.writer.write(cid, time, data)

    def close(self) -> None:
        self.writer.close()

    def abort(self) -> None:
        self.writer.abort()


def open_writer(path, storage: str = "mcap", compress: bool = True):
    """A new bag at ``path``: :class:`McapBagWriter` for ``storage`` ``mcap`` (zstd chunks with
    ``compress``), :class:`RosbagsBagWriter` for ``sqlite3`` or when ``mcap`` is not installed."""
    if storage == "mcap":
        try:
            import mcap.records  # noqa: F401 - the records McapBagWriter writes
        except ImportError:
            return RosbagsBagWriter(path, storage, compress)
        return McapBagWriter(path, compress)
    return RosbagsBagWriter(path, storage, compress)
