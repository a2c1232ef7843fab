"""Read what can be read of a truncated MCAP file (no footer, no summary), through mcap's ``StreamReader``.

``rosbags`` opens an MCAP file through its footer and summary section, so a recording cut short
(a crashed recorder, a copy that stopped) cannot be opened at all. The ``mcap`` package's
``StreamReader`` reads the records from the start of the file, one after the other, chunks
decompressed (zstd, lz4 or none) and their CRC checked where the chunk states one. It stops with an
exception at the first record it cannot read; :class:`McapSalvageReader` keeps every message read
before it, then raises :class:`SalvageError` saying where. No ROS import.

The file is read through :class:`_WholeReads`, which refuses a short read: the stream reader takes
what a read returns, so a record cut by the end of the file would otherwise come out shortened
(a message with part of its payload) instead of stopping the reading.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from mcap.exceptions import InvalidMagic
from mcap.records import Channel, Message, Schema
from mcap.stream_reader import StreamReader


class SalvageError(RuntimeError):
    """The file ends (or is corrupt) at a given offset; everything before was yielded."""


class _Truncated(EOFError):
    """A read asked for more bytes than the file has left."""


@dataclass
class SalvagedConnection:
    """What the replay needs of a channel (rosbags ``Connection``-like)."""
    id: int
    topic: str
    msgtype: str
    msgdef: object = None
    digest: str = ""
    msgcount: int = 0
    ext: object = field(default=None)


class _Ext:
    offered_qos_profiles: list = []


class _WholeReads:
    """A binary file whose ``read(n)`` returns exactly ``n`` bytes or raises :class:`_Truncated`."""

    def __init__(self, fh):
        self.fh = fh

    def read(self, n: int = -1) -> bytes:
        data = self.fh.read(n)
        if n > 0 and len(data) < n:
            raise _Truncated(f"the file ends {n - len(data)} bytes short of a read of {n}")
        return data

    def tell(self) -> int:
        return self.fh.tell()


class McapSalvageReader:
    """``connections`` and ``messages()`` of a (possibly truncated) MCAP file, read in file order
    (the messages of one chunk in log-time order, as rosbags yields them)."""

    def __init__(self, path: str):
        self.path = path
        self.size = os.path.getsize(path)
        self.schemas: dict = {}                 # schema id → mcap Schema
        self.channels: dict = {}                # channel id → SalvagedConnection
        self.error = ""
        self.message_count = 0
        for conn, _, _ in self._messages():     # first pass: channels, schemas, counts
            conn.msgcount += 1
            self.message_count += 1
        self.connections = list(self.channels.values())

    def _messages(self):
        """``(connection, log_time, data)`` of every complete message; sets :attr:`error` where the
        reading stopped. The records of a chunk come out of the stream reader while the file stays
        at the chunk's end, so the messages read at one file position are one chunk (or one message
        outside chunks): they are yielded together, sorted stably by log time."""
        self.error = ""
        with open(self.path, "rb") as fh:
            src = _WholeReads(fh)
            records = StreamReader(src, validate_crcs=True, record_size_limit=self.size).records
            start = end = None          # file offsets: start and end of the last records read
            group = []
            while True:
                try:
                    record = next(records)
                except StopIteration:
                    break
                except Exception as exc:  # noqa: BLE001 - mcap, zstd, lz4 and struct raise their own types
                    yield from _in_time_order(group)
                    self._stopped(fh, end, exc)
                    return
                at = src.tell()
                if at != end:
                    yield from _in_time_order(group)
                    group, start, end = [], end, at
                try:
                    self._take(record, group)
                except SalvageError as exc:
                    self._fail(8 if start is None else start, str(exc))
                    return
        yield from _in_time_order(group)

    def _take(self, record, group) -> None:
        if isinstance(record, Schema):
            self.schemas[record.id] = record
        elif isinstance(record, Channel):
            if record.id not in self.channels:
                schema = self.schemas.get(record.schema_id)
                self.channels[record.id] = SalvagedConnection(
                    record.id, record.topic, schema.name if schema is not None else "", None, "", 0, _Ext())
        elif isinstance(record, Message):
            conn = self.channels.get(record.channel_id)
            if conn is None:
                raise SalvageError(f"message on unknown channel {record.channel_id}")
            group.append((conn, record.log_time, record.data))

    def _stopped(self, fh, end, exc) -> None:
        """The stream reader raised ``exc`` reading the record after file offset ``end`` (None:
        the magic). Nothing more at a record boundary is the end of a file cut between records."""
        if end is None and isinstance(exc, (InvalidMagic, _Truncated)):
            raise SalvageError(f"'{self.path}' is not an MCAP file (bad magic)") from None
        if isinstance(exc, _Truncated) and end == self.size:
            return
        why = (f"the file ends inside a record ({exc})" if isinstance(exc, _Truncated)
               else f"{type(exc).__name__}: {exc}")
        self._fail(end, why)

    def _fail(self, offset, why) -> None:
        if not self.error:
            self.error = f"at byte {offset} of {self.size}: {why}"

    def messages(self, connections=None):
        """``(connection, log_time, raw)`` in file order; raises :class:`SalvageError` at the first
        incomplete or corrupt record (after yielding everything before it)."""
        ids = None if connections is None else {c.id for c in connections}
        for conn, t, raw in self._messages():
            if ids is None or conn.id in ids:
                yield conn, t, raw
        if self.error:
            raise SalvageError(f"{self.path}: {self.error}")

    def close(self) -> None:
        """Nothing to release: every reading opens and closes the file."""


def _in_time_order(group):
    return sorted(group, key=lambda m: m[1])
