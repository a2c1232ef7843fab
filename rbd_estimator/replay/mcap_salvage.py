"""Read what can be read of a truncated MCAP file (no footer, no summary): a sequential scan.

``rosbags`` opens an MCAP file through its footer and summary section, so a recording cut short
(a crashed recorder, a copy that stopped) cannot be opened at all. MCAP records are
self-delimiting (opcode, length, content), so this scanner reads the file from the start and
yields every complete message record, inside chunks or not, until the first incomplete or
undecodable record; then it raises :class:`SalvageError` saying where. Records follow the MCAP
specification (https://mcap.dev/spec): Schema 0x03, Channel 0x04, Message 0x05, Chunk 0x06 (zstd,
lz4 or uncompressed). No ROS import.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

MAGIC = b"\x89MCAP0\r\n"
_OP_LEN = struct.Struct("<BQ")
_MSG = struct.Struct("<HIQQ")
_CHUNK = struct.Struct("<QQQI")


class SalvageError(RuntimeError):
    """The file ends (or is corrupt) at a given offset; everything before was yielded."""


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


def _string(b, o):
    (n,) = struct.unpack_from("<I", b, o)
    o += 4
    if o + n > len(b):
        raise SalvageError("string past the end of its record")
    return bytes(b[o:o + n]).decode("utf-8"), o + n


def decompress(data, compression: str, size: int, crc: int = 0) -> bytes:
    """The records of a Chunk record: ``data`` decompressed (``compression``: ``""``, ``zstd`` or
    ``lz4``, as the MCAP specification names them), checked against the chunk's uncompressed
    ``size`` (bytes) and, when not 0, its CRC-32 ``crc``. Raises :class:`SalvageError` otherwise."""
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
        raise SalvageError(f"unsupported chunk compression '{compression}'")
    if len(raw) != size:
        raise SalvageError(f"a chunk decompresses to {len(raw)} bytes, its header says {size}")
    if crc and zlib.crc32(raw) != crc:
        raise SalvageError(f"a chunk's CRC-32 is {zlib.crc32(raw):#010x}, its header says {crc:#010x}")
    return raw


class McapSalvageReader:
    """``connections`` and ``messages()`` of a (possibly truncated) MCAP file, read in file order."""

    def __init__(self, path: str):
        self.path = path
        with open(path, "rb") as fh:
            self._data = memoryview(fh.read())
        if bytes(self._data[:8]) != MAGIC:
            raise SalvageError(f"'{path}' is not an MCAP file (bad magic)")
        self.schemas: dict = {}
        self.channels: dict = {}
        self.error = ""
        self.message_count = 0
        for kind, *_ in self._records(scan=True):       # first pass: channels, schemas, count
            if kind == "msg":
                self.message_count += 1
        self.connections = list(self.channels.values())

    def _records(self, scan: bool):
        d = self._data
        o = 8
        end = len(d)
        while True:
            if o == end:
                return
            if o + 9 > end:
                self._fail(o, "the file ends inside a record header")
                return
            op, n = _OP_LEN.unpack_from(d, o)
            body = o + 9
            if body + n > end:
                self._fail(o, f"the file ends inside a record (opcode 0x{op:02x}, {n} bytes)")
                return
            rec = d[body:body + n]
            try:
                if op == 0x06:
                    _, _, usize, crc = _CHUNK.unpack_from(rec, 0)
                    comp, p = _string(rec, 28)
                    (clen,) = struct.unpack_from("<Q", rec, p)
                    raw = decompress(rec[p + 8:p + 8 + clen], comp, usize, crc)
                    yield from self._inner(memoryview(raw), scan)
                elif op == 0x02:            # footer: the end
                    return
                else:
                    yield from self._one(op, rec, scan)
            except SalvageError as exc:
                self._fail(o, str(exc))
                return
            except Exception as exc:  # noqa: BLE001 - corrupt bytes: stop here
                self._fail(o, f"{type(exc).__name__}: {exc}")
                return
            o = body + n

    def _inner(self, d, scan):
        o, end = 0, len(d)
        msgs = []
        while o < end:
            if o + 9 > end:
                raise SalvageError("a chunk ends inside a record")
            op, n = _OP_LEN.unpack_from(d, o)
            if o + 9 + n > end:
                raise SalvageError("a chunk ends inside a record")
            for r in self._one(op, d[o + 9:o + 9 + n], scan):
                msgs.append(r)
            o += 9 + n
        msgs.sort(key=lambda r: r[2])      # time order within a chunk (stable)
        yield from msgs

    def _one(self, op, rec, scan):
        if op == 0x03:
            (sid,) = struct.unpack_from("<H", rec, 0)
            name, p = _string(rec, 2)
            enc, p = _string(rec, p)
            (n,) = struct.unpack_from("<I", rec, p)
            self.schemas[sid] = (name, enc, bytes(rec[p + 4:p + 4 + n]).decode("utf-8", "replace"))
        elif op == 0x04:
            cid, sid = struct.unpack_from("<HH", rec, 0)
            topic, p = _string(rec, 4)
            if cid not in self.channels:
                name = self.schemas.get(sid, ("", "", ""))[0]
                self.channels[cid] = SalvagedConnection(cid, topic, name, None, "", 0, _Ext())
        elif op == 0x05:
            cid, _, log_time, _ = _MSG.unpack_from(rec, 0)
            conn = self.channels.get(cid)
            if conn is None:
                raise SalvageError(f"message on unknown channel {cid}")
            if scan:
                conn.msgcount += 1
                yield ("msg", conn, log_time, None)
            else:
                yield ("msg", conn, log_time, bytes(rec[_MSG.size:]))

    def _fail(self, offset, why):
        if not self.error:
            self.error = f"at byte {offset} of {len(self._data)}: {why}"

    def messages(self, connections=None):
        """``(connection, log_time, raw)`` in file order; raises :class:`SalvageError` at the first
        incomplete or corrupt record (after yielding everything before it)."""
        ids = None if connections is None else {c.id for c in connections}
        self.error = ""
        for _, conn, t, raw in self._records(scan=False):
            if ids is None or conn.id in ids:
                yield conn, t, raw
        if self.error:
            raise SalvageError(f"{self.path}: {self.error}")

    def close(self) -> None:
        self._data = memoryview(b"")
