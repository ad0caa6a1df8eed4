"""A small writer of MySQL 8.0 binary binlog events, for the benchmark and the tests: the same
transactions written plain and as MySQL writes them with `binlog_transaction_compression=ON`
(the events after each DML transaction's GTID event in one zstd-compressed Transaction_payload
event), so that the reader's compressed path can be timed and checked against its plain one.
`compress_file` makes the compressed form of a real MySQL 8 binlog.

Layouts: MySQL's libbinlogevents (control_events.cpp: Format_description_event, Gtid_event,
Xid_event; statement_events.cpp: Query_event; rows_event.cpp: Table_map_event, Rows_event;
compression/payload_event: Transaction_payload_event's fields). Events inside a payload carry
no checksum and end position 0, as the server writes them (WL#3549).
"""
from __future__ import annotations

import struct
import zlib

HEADER = 19
# MySQL 8.0.32's post-header lengths by event type (type - 1), as its format description
# event states them: Query 13, Table_map 8, rows v2 10, GTID 42, Transaction_payload 40
POST_HEADERS = bytes([0, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8,
                      8, 2, 0, 0, 0, 10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40, 0])
FDE, QUERY, XID, TABLE_MAP, WRITE_ROWS, UPDATE_ROWS, GTID, ANONYMOUS_GTID, PAYLOAD = \
    15, 2, 16, 19, 30, 31, 33, 34, 40
LONG, STRING = 3, 254          # MYSQL_TYPE_LONG (INT), MYSQL_TYPE_STRING (CHAR)


def packed(n: int) -> bytes:
    """MySQL's packed (length-encoded) integer."""
    if n < 251:
        return bytes([n])
    if n < 1 << 16:
        return b"\xfc" + n.to_bytes(2, "little")
    if n < 1 << 24:
        return b"\xfd" + n.to_bytes(3, "little")
    return b"\xfe" + n.to_bytes(8, "little")


def event(typ: int, body: bytes, end: int, *, ts: int = 1_700_000_000, flags: int = 0,
          checksum: bool = True) -> bytes:
    """One event: header, body and (when `checksum`) its CRC32; `end`: its end position (0
    inside a payload, else where the next event starts)."""
    size = HEADER + len(body) + (4 if checksum else 0)
    head = struct.pack("<IBIIIH", ts, typ, 1, size, end, flags)
    ev = head + body
    return ev + zlib.crc32(ev).to_bytes(4, "little") if checksum else ev


def fde_body(server: str = "8.0.32") -> bytes:
    """A format description's body (its checksum algorithm, CRC32, last)."""
    return (struct.pack("<H", 4) + server.encode().ljust(50, b"\0") + struct.pack("<I", 0)
            + bytes([HEADER]) + POST_HEADERS + bytes([1]))


def gtid_body(lc: int, sn: int, ts_us: int, length: int) -> bytes:
    """An anonymous GTID event's body (Gtid_event::write_data_body, 8.0.32)."""
    return (bytes([1]) + bytes(16) + bytes(8) + bytes([2]) + struct.pack("<qq", lc, sn)
            + ts_us.to_bytes(7, "little") + packed(length) + struct.pack("<I", 80032))


def query_body(sql: str, db: str, thread: int = 9) -> bytes:
    return (struct.pack("<IIBHH", thread, 0, len(db), 0, 0) + db.encode() + b"\0"
            + sql.encode())


def table_map_body(table_id: int, db: str, table: str, types: list[int],
                   metas: list[bytes]) -> bytes:
    meta = b"".join(metas)
    nulls = bytes((len(types) + 7) // 8)
    return (table_id.to_bytes(6, "little") + struct.pack("<H", 1)
            + bytes([len(db)]) + db.encode() + b"\0" + bytes([len(table)]) + table.encode()
            + b"\0" + packed(len(types)) + bytes(types) + packed(len(meta)) + meta + nulls)


def rows_body(table_id: int, ncols: int, images: list[bytes], update: bool = False) -> bytes:
    """A v2 rows event's body; `images`: each row image (its NULL bitmap and values), both
    images of each row in turn for an UPDATE."""
    bitmap = bytes([0xFF] * ((ncols + 7) // 8))
    return (table_id.to_bytes(6, "little") + struct.pack("<HH", 1, 2) + packed(ncols) + bitmap
            + (bitmap if update else b"") + b"".join(images))


def payload_body(events: bytes, level: int = 3) -> bytes:
    """A Transaction_payload event's body: its fields (compression type 0 = ZSTD, the
    uncompressed and payload sizes, each type, length and value) and the zstd frame."""
    from commitsched_binlog import zstd_compress
    data = zstd_compress(events, level)

    def field(kind: int, value: int) -> bytes:
        v = packed(value)
        return packed(kind) + packed(len(v)) + v
    return field(2, 0) + field(3, len(events)) + field(1, len(data)) + packed(0) + data


class Writer:
    """A binlog file in memory: `add(typ, body)` appends an event at the current position."""

    def __init__(self, server: str = "8.0.32"):
        self.data = bytearray(b"\xfebin")
        self.add(FDE, fde_body(server))

    def add(self, typ: int, body: bytes, ts: int = 1_700_000_000, flags: int = 0) -> None:
        end = len(self.data) + HEADER + len(body) + 4
        self.data += event(typ, body, end, ts=ts, flags=flags)

    def transaction(self, lc: int, sn: int, ts_us: int, events: list[tuple[int, bytes]],
                    compress: bool = False, level: int = 3) -> None:
        """A GTID event and the transaction's `events` ((type, body)...), or them in one
        compressed payload; the GTID event's transaction_length covers both (solved for its
        own size, which the length's encoding changes)."""
        if compress:
            inner = b"".join(event(t, b, 0, ts=ts_us // 1_000_000, checksum=False)
                             for t, b in events)
            events = [(PAYLOAD, payload_body(inner, level))]
        rest = sum(HEADER + len(b) + 4 for _, b in events)
        length = rest
        for _ in range(3):
            length = rest + HEADER + len(gtid_body(lc, sn, ts_us, length)) + 4
        self.add(ANONYMOUS_GTID, gtid_body(lc, sn, ts_us, length), ts=ts_us // 1_000_000)
        for t, b in events:
            self.add(t, b, ts=ts_us // 1_000_000)


def _events(data: bytes):
    at = 4
    while at + HEADER <= len(data):
        size = int.from_bytes(data[at + 9:at + 13], "little")
        yield data[at:at + size]
        at += size


def compress_file(data: bytes, level: int = 3) -> bytes:
    """The compressed form of a real MySQL 8 binlog (checksums on): each transaction whose
    events hold rows (MySQL compresses row-based DML transactions) rewritten as its GTID
    event and one Transaction_payload of the events that followed it, positions and
    transaction lengths made right; every other event as it was but for its end position."""
    events = list(_events(data))
    out = Writer.__new__(Writer)
    out.data = bytearray(b"\xfebin")
    i = 0
    while i < len(events):
        ev = events[i]
        typ = ev[4]
        if typ not in (GTID, ANONYMOUS_GTID):
            out.add(typ, ev[HEADER:-4], ts=int.from_bytes(ev[:4], "little"),
                    flags=int.from_bytes(ev[17:19], "little"))
            i += 1
            continue
        j = i + 1
        while j < len(events) and events[j][4] not in (GTID, ANONYMOUS_GTID, 4):
            j += 1
        body = events[i][HEADER:-4]
        rows = any(e[4] in (23, 24, 25, 30, 31, 32, 39) for e in events[i + 1:j])
        ts = int.from_bytes(ev[:4], "little")
        inner = [(e[4], e[HEADER:-4], int.from_bytes(e[:4], "little"),
                  int.from_bytes(e[17:19], "little")) for e in events[i + 1:j]]
        if rows:
            blob = b"".join(event(t, b, 0, ts=s, flags=f, checksum=False) for t, b, s, f in inner)
            inner = [(PAYLOAD, payload_body(blob, level), ts, 0)]
        # the GTID body up to its transaction_length, then the length, then what followed it
        head_len = 1 + 16 + 8 + 1 + 16 + 7 + (7 if body[42 + 6] & 0x80 else 0)
        old_first = body[head_len]
        skip = {252: 3, 253: 4, 254: 9}.get(old_first, 1)
        tail = body[head_len + skip:]
        rest = sum(HEADER + len(b) + 4 for _, b, _, _ in inner)
        length = rest
        for _ in range(3):
            length = rest + HEADER + head_len + len(packed(length)) + len(tail) + 4
        out.add(typ, body[:head_len] + packed(length) + tail, ts=ts,
                flags=int.from_bytes(ev[17:19], "little"))
        for t, b, s, f in inner:
            out.add(t, b, ts=s, flags=f)
        i = j
    return bytes(out.data)
