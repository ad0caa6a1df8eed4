"""Binary binlog files read directly: no printer, no text in between (docs/import.md).

The events come from the `commitsched_binlog` extension (model/binlog_rs: Rust, the
`mysql_common` crate's binlog parser through PyO3), in batches of tuples, with row values
already printed as `mysqlbinlog -vv` prints them. This module turns them into transactions with
the text importer's rules (binlog_text.Reader: same catalog, same row keys, same size fields,
same refusals), so that both readers give identical traces for the same binlog.
"""
from __future__ import annotations

import re
from typing import Iterator

from ..trace import Txn
from .binlog_text import (_ADMIN_RE, _DDL_WORDS, _DML_RE, InputError, Reader, Skipped, _Open,
                          _ddl_schemas)

try:
    from commitsched_binlog import EventReader
except ImportError:                 # the extension is built by `make setup` (cargo + maturin)
    EventReader = None

# Event kinds, as model/binlog_rs/src/lib.rs numbers them.
K_START, K_GTID_MARIADB, K_GTID_MYSQL, K_QUERY, K_TABLE_MAP, K_ROWS, K_XID, K_ROTATE, K_OTHER, \
    K_INCIDENT, K_UNSUPPORTED = range(11)

# MariaDB GTID event flags2 bits (sql/log_event.h)
FL_STANDALONE, FL_ALLOW_PARALLEL, FL_WAITED, FL_DDL = 1, 8, 16, 32
FL_PREPARED_XA, FL_COMPLETED_XA = 64, 128
UNPRINTED = "\0?"                  # a value the extension does not print yet (see lib.rs)
_USE_RE = re.compile(r"^use `((?:[^`]|``)+)`$", re.I)
_BATCH = 4096


class BinaryInputError(InputError):
    """A problem at one event of a binary binlog: `line` holds its binlog position."""


def available() -> bool:
    return EventReader is not None


def read_binary(reader: Reader, path: str, new_file: bool = True,
                progress=None) -> Iterator[Txn]:
    """Yield the transactions of one binary binlog file, sharing `reader`'s state (catalog, file
    index, skipped transactions) so text and binary inputs can follow each other."""
    if EventReader is None:
        raise BinaryInputError(0, "the binary binlog reader (commitsched_binlog) is not built: "
                                  "run `make setup`")
    if reader._started and new_file and not reader._rotated:
        reader.file += 1
        reader._rotated = True
    reader._started = True
    try:
        events = EventReader(path)
    except ValueError as e:
        raise BinaryInputError(0, str(e).partition(": ")[2] or str(e)) from None
    state = _State(reader, events)
    while True:
        try:
            batch = events.next_batch(_BATCH)
        except ValueError as e:     # "binlog position N: why" from the extension
            where, _, why = str(e).partition(": ")
            state.problem(why, int(where.rpartition(" ")[2]) if where[-1:].isdigit() else 0)
            if state.cur is not None and state.cur.bad is not None:
                reader.skipped.append(Skipped(state.cur.bad[0], state.cur.gtid, state.cur.bad[1]))
            return
        if batch is None:
            break
        yield from state.events(batch)
        if progress is not None:
            progress(events.offset)
    if state.cur is not None:
        cur = state.cur
        state.problem(f"input ends inside transaction {cur.gtid or ''} begun at binlog position "
                      f"{cur.line}: truncated?", cur.line)
        if state.cur is not None and state.cur.bad is not None:
            reader.skipped.append(Skipped(state.cur.bad[0], state.cur.gtid, state.cur.bad[1]))


class _State:
    """The transaction being read and the rules for each event (binlog_text.Reader.read's,
    event by event instead of line by line)."""

    def __init__(self, reader: Reader, events=None):
        self.r = reader
        self.source = events            # the EventReader: told which columns keys need
        self.cur: _Open | None = None
        self.query_db: str | None = None
        self.tables: dict[int, tuple[str, str]] = {}
        # (db, table) -> (key plan, Table, fk_parent); emptied by every DDL (the catalog changes)
        self.plans: dict[tuple[str, str], tuple] = {}

    def plan(self, db: str, name: str) -> tuple:
        """How to build a row's keys fast: [(key prefix, column positions)] per unique index,
        or None when `_row_keys` must do it (foreign keys, unknown table or column)."""
        r = self.r
        t = r.catalog.get(db, name)
        steps = None
        if t is not None and not t.fks:
            try:
                steps = [(f"{t.db}.{t.name}/{index}=", tuple(t.position(c) for c in cols))
                         for index, cols in t.unique.items()]
            except ValueError:
                steps = None
        out = (steps, t, r._fk_parent(t) if t is not None else False,
               len(t.columns) if t is not None else 0)
        self.plans[(db, name)] = out
        if steps is not None and self.source is not None:
            # only key columns in the next batches' row images of this table
            self.source.want(db, name, sorted({p for _, ps in steps for p in ps}))
        return out

    def keys(self, db: str, name: str, image: dict, top: int) -> list[str]:
        """binlog_text.Reader._row_keys, through the cached plan when there is one. `top`: the
        image's highest column position (the image itself may hold only key columns)."""
        plan = self.plans.get((db, name)) or self.plan(db, name)
        steps = plan[0]
        if steps is None or not image or top > plan[3]:
            return self.r._row_keys(db, name, image if top <= plan[3] else {top: ("", True)})
        out = []
        for prefix, positions in steps:
            try:
                vals = [image[p] for p in positions]
            except KeyError:
                return self.r._row_keys(db, name, image)    # its message names the column
            if any(null for _, null in vals):
                continue
            out.append(prefix + ",".join(v for v, _ in vals))
        return out

    def problem(self, reason: str, pos: int) -> None:
        where = f" (binlog position {pos})"
        if self.r.strict:
            raise BinaryInputError(pos, reason + where)
        if self.cur is not None:
            if self.cur.bad is None:
                self.cur.bad = (pos, reason + where)
        else:
            self.r.skipped.append(Skipped(pos, None, reason + where, outside=True))

    def finish(self) -> Txn | None:
        done, self.cur = self.cur, None
        if done is None:
            return None
        if done.bad is not None:
            self.r.skipped.append(Skipped(done.bad[0], done.gtid, done.bad[1]))
            return None
        return done.to_txn(0)

    def start(self, fields: dict, pos: int) -> None:
        cur = self.cur
        if cur is not None:
            self.problem(f"transaction {cur.gtid or ''} (binlog position {cur.line}) has no "
                         "COMMIT before the next GTID event", cur.line)
            if self.cur is not None and self.cur.bad is not None:
                self.r.skipped.append(Skipped(cur.bad[0], cur.gtid, cur.bad[1]))
        self.cur = _Open(line=pos, file=self.r.file, **fields)
        self.r._rotated = False

    def events(self, batch: list) -> Iterator[Txn]:
        r = self.r
        for ev in batch:
            kind, pos, end, ts = ev[0], ev[1], ev[2], ev[3]
            cur = self.cur
            if cur is not None:
                cur.events += 1
                cur.end_pos = end
            if kind == K_ROWS:
                self.rows(ev, pos)
            elif kind == K_TABLE_MAP:
                self.tables[ev[4]] = (ev[5], ev[6])
                if cur is None:
                    self.problem("Table_map event outside any transaction", pos)
            elif kind == K_GTID_MARIADB:
                r.dialects["mariadb"] += 1
                gtid, commit_id, bits = ev[4], ev[5], ev[6]
                flags = set()
                standalone = bool(bits & FL_STANDALONE)
                if not standalone:
                    flags.add("transactional")
                if bits & FL_WAITED:
                    flags.add("waited")
                if bits & FL_DDL:
                    flags.add("ddl")
                if bits & FL_ALLOW_PARALLEL:
                    flags.add("allow_parallel")
                if bits & (FL_PREPARED_XA | FL_COMPLETED_XA):
                    standalone = False
                self.start({"gtid": gtid, "commit_id": commit_id, "flags": flags,
                            "standalone": standalone, "timestamp": float(ts),
                            "ddl": "ddl" in flags, "events": 1, "start_pos": pos,
                            "end_pos": end}, pos)
            elif kind == K_GTID_MYSQL:
                r.dialects["mysql"] += 1
                gtid, lc, sn, length, oct_us, ict_us = ev[4:10]
                if lc >= sn:
                    self.problem(f"last_committed {lc} is not below sequence_number {sn}", pos)
                    if self.cur is None:
                        self.cur = _Open(line=pos, file=r.file, bad=(pos, "bad GTID event"))
                    continue
                t_us = oct_us or ict_us
                self.start({"gtid": gtid, "last_committed": lc, "sequence_number": sn,
                            "timestamp": t_us / 1e6 if t_us else float(ts), "length": length,
                            "events": 1, "start_pos": pos, "end_pos": end}, pos)
            elif kind == K_QUERY:
                if cur is not None and cur.session is None:
                    cur.session = ev[4]
                if ev[5]:
                    self.query_db = ev[5]
                t = self.statement(ev[6], pos)
                if t is not None:
                    yield t
            elif kind == K_XID:
                if cur is None:
                    self.problem("COMMIT outside any transaction", pos)
                    continue
                t = self.finish()
                if t is not None:
                    yield t
            elif kind == K_ROTATE:
                if cur is not None:
                    self.problem("Rotate event inside a transaction", pos)
                r.file += 1
                r._rotated = True
            elif kind == K_START:
                if r._rotated:
                    r._rotated = False
                elif r._start_file == r.file:
                    r.file += 1
                r._start_file = r.file
                version = ev[4].split()[0] if ev[4].strip() else None
                if version and r.server_version is None:
                    r.server_version = version         # as the printer's "server v X"
            elif kind == K_INCIDENT:
                self.problem("Incident event: the source marked a gap in its binlog", pos)
            elif kind == K_UNSUPPORTED:
                self.problem(f"event type {ev[4]} (a compressed transaction or event) is not "
                             "read yet by the binary reader", pos)

    def rows(self, ev: tuple, pos: int) -> None:
        cur = self.cur
        table_id, kind, rows, mapped, trimmed, top = ev[4], ev[5], ev[6], ev[7], ev[8], ev[9]
        if not mapped or table_id not in self.tables:
            self.problem(f"rows event for table id {table_id} with no Table_map", pos)
            return
        if cur is None:
            self.problem("rows event outside any transaction", pos)
            return
        db, name = self.tables[table_id]
        r = self.r
        for before, after in rows:
            cur.rows += 1
            if cur.bad is not None:
                continue
            try:
                if kind == "U":
                    bk = self.keys(db, name, before, top if trimmed else max(before, default=0))
                    ak = self.keys(db, name, after, top if trimmed else max(after, default=0))
                    cur.before_keys.update(bk)
                    cur.after_keys.update(ak)
                    keys = bk + ak
                else:
                    img = after if kind == "I" else before
                    keys = self.keys(db, name, img, top if trimmed else max(img, default=0))
                    cur.after_keys.update(keys)
                for k in keys:
                    if UNPRINTED in k:
                        raise ValueError(f"a key column of {db}.{name} has a type whose values "
                                         "the binary reader does not print yet "
                                         f"({k.partition(UNPRINTED)[2].split(',')[0]})")
            except ValueError as e:
                self.problem(str(e), pos)
                continue
            _, t, fk_parent, _ = self.plans.get((db, name)) or self.plan(db, name)
            if not t.has_pk:
                cur.no_pk = True
            if fk_parent:
                cur.fk_parent = True
            for k in keys:
                cur.writes[k] = None
            cur.hashes += len(keys)         # MySQL 8's write-set vector counts repeats

    def statement(self, text: str, pos: int) -> Txn | None:
        """A Query event's statement: binlog_text.Reader.read's `statement`, same rules."""
        cur = self.cur
        s = text.strip()
        u = s.upper()
        if u.startswith("SET ") or s.startswith("/*"):
            return None
        m = _USE_RE.match(s)
        if m:
            self.query_db = m.group(1).replace("``", "`")
            return None
        if cur is None:
            if s:
                self.problem(f"statement outside any transaction: {s[:60]!r}", pos)
            return None
        if u in ("BEGIN", "START TRANSACTION") or u.startswith("XA START"):
            cur.standalone = False
            cur.in_body = True
            return None
        if u in ("COMMIT", "ROLLBACK") or u.startswith(("XA END", "XA PREPARE", "XA COMMIT",
                                                        "XA ROLLBACK")):
            if u.startswith("XA END"):
                return None
            return self.finish()
        if u.startswith(("SAVEPOINT", "ROLLBACK TO", "RELEASE SAVEPOINT")):
            return None
        r = self.r
        if _DML_RE.match(s):
            self.problem("statement-based DML: row keys unknown (record with binlog_format=ROW):"
                         f" {s[:60]!r}", pos)
        else:
            if _ADMIN_RE.match(s):
                cur.admin = True
            if u.startswith(_DDL_WORDS) or _ADMIN_RE.match(s) or "ddl" in cur.flags:
                cur.ddl = cur.ddl or not u.startswith(("ANALYZE", "OPTIMIZE", "REPAIR", "CHECK"))
                for d in _ddl_schemas(s) or ([self.query_db] if self.query_db else []):
                    cur.db[d] = None
                r.catalog.apply_ddl(s, self.query_db)
                r._fk_parent_cache.clear()
                self.plans.clear()
                if self.source is not None:
                    self.source.want_all()
            elif cur.bad is None:
                self.problem(f"unrecognised statement {s[:60]!r}", pos)
        if cur.standalone:
            return self.finish()
        return None
