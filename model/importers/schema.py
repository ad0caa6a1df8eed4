"""Table definitions for building row keys: which columns form PRIMARY, each UNIQUE index and
each foreign key, by position in the row image (`@1`, `@2`, ...).

Sources, in order of trust: `CREATE TABLE` statements (a `mysqldump --no-data` schema file, or
DDL met in the binlog itself), a small set of understood `ALTER TABLE` forms, and the
`binlog_row_metadata=FULL` table-map metadata (`# Columns(...)`, `# Primary Key(...)`), which
names columns and the primary key but not UNIQUE indexes. An `ALTER TABLE` we do not understand
makes the table *unknown*: its rows are then refused rather than given wrong keys.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass
class ForeignKey:
    columns: list[str]
    parent_db: str
    parent_table: str
    parent_columns: list[str]


@dataclass
class Table:
    db: str
    name: str
    columns: list[str]                                  # in row-image order
    unique: dict[str, list[str]] = field(default_factory=dict)  # index name -> columns; PRIMARY first
    fks: list[ForeignKey] = field(default_factory=list)
    unique_complete: bool = True    # False when only the table-map metadata was seen (PK only)
    origin: str = "schema"

    @property
    def has_pk(self) -> bool:
        return "PRIMARY" in self.unique

    def position(self, column: str) -> int:
        """1-based position of a column in the row image."""
        return self.columns_lower.index(column.lower()) + 1

    @property
    def columns_lower(self) -> list[str]:
        return [c.lower() for c in self.columns]


class SchemaError(ValueError):
    """A definition we cannot read; `line`: where its statement starts in a schema file."""

    def __init__(self, reason: str, line: int | None = None):
        super().__init__(reason)
        self.line = line


_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)"
_QNAME = re.compile(rf"\s*({_IDENT})(?:\s*\.\s*({_IDENT}))?")


def unquote(ident: str) -> str:
    ident = ident.strip()
    if ident.startswith("`") and ident.endswith("`"):
        return ident[1:-1].replace("``", "`")
    return ident


# The characters the two scanners below act on; everything between them is skipped in one step
# (a character loop in Python over a mysqldump schema was a fifth of a small import's time).
_SPLIT_CHARS = re.compile(r"[()'\"`\\,]")
_PAREN_CHARS = re.compile(r"[()'\"`\\]")


def _split_top(body: str) -> list[str]:
    """Split a parenthesised definition list at top-level commas (quotes respected)."""
    parts, depth, quote, last, skip = [], 0, None, 0, -1
    for m in _SPLIT_CHARS.finditer(body):
        i = m.start()
        if i <= skip:
            continue
        ch = body[i]
        if quote:
            if ch == "\\" and quote != "`":
                skip = i + 1                    # the escaped character
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[last:i].strip())
            last = i + 1
    if body[last:].strip():
        parts.append(body[last:].strip())
    return parts


def _matching_paren(text: str, start: int) -> int:
    depth, quote, skip = 0, None, -1
    for m in _PAREN_CHARS.finditer(text, start):
        i = m.start()
        if i <= skip:
            continue
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                skip = i + 1
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    raise SchemaError("unbalanced parentheses")


def _col_list(text: str) -> list[str]:
    """`(a, b(10), c DESC)` -> [a, b, c] (prefix lengths and order ignored)."""
    inner = text.strip()
    if not inner.startswith("("):
        raise SchemaError(f"expected a column list in parentheses, got {inner[:40]!r}")
    inner = inner[1:_matching_paren(inner, 0)]
    cols = []
    for part in _split_top(inner):
        m = re.match(_IDENT, part.strip())
        if not m:
            raise SchemaError(f"cannot read index column {part!r}")
        cols.append(unquote(m.group(0)))
    return cols


_KEYWORDS = ("PRIMARY", "UNIQUE", "KEY", "INDEX", "CONSTRAINT", "FOREIGN", "FULLTEXT", "SPATIAL",
             "CHECK", "PERIOD")


def _definition(defn: str, table: Table, default_db: str) -> None:
    """Apply one element of a CREATE TABLE body (a column or an index) to `table`. Text the
    patterns below do not foresee (a clause cut short, a missing list) is a `SchemaError`,
    whatever step trips on it: the one place malformed definitions are caught."""
    try:
        _read_definition(defn, table, default_db)
    except SchemaError:
        raise
    except (ValueError, IndexError, AttributeError) as e:
        raise SchemaError(f"cannot read {defn.strip()[:80]!r}: {e}") from None


def _read_definition(defn: str, table: Table, default_db: str) -> None:
    s = defn.strip()
    upper = s.upper()
    name = None
    m = re.match(rf"CONSTRAINT(?:\s+({_IDENT}))?\s+", s, re.I)
    if m:
        name = unquote(m.group(1)) if m.group(1) else None
        s = s[m.end():]
        upper = s.upper()
    if upper.startswith("PRIMARY KEY"):
        rest = s[len("PRIMARY KEY"):]
        rest = re.sub(r"^\s*USING\s+\w+", "", rest, flags=re.I)
        table.unique = {"PRIMARY": _col_list(rest[rest.index("("):]), **table.unique}
    elif upper.startswith("UNIQUE"):
        m = re.match(rf"UNIQUE(?:\s+(?:KEY|INDEX))?(?:\s+(?!USING\b)({_IDENT}))?\s*(?:USING\s+\w+\s*)?\(",
                     s, re.I)
        if not m:
            raise SchemaError(f"cannot read unique key {defn!r}")
        cols = _col_list(s[m.end() - 1:])
        iname = unquote(m.group(1)) if m.group(1) else (name or cols[0])
        table.unique[iname] = cols
    elif upper.startswith("FOREIGN KEY"):
        m = re.match(rf"FOREIGN\s+KEY(?:\s+({_IDENT}))?\s*\(", s, re.I)
        cols = _col_list(s[m.end() - 1:])
        r = re.search(rf"REFERENCES\s+({_IDENT})(?:\s*\.\s*({_IDENT}))?\s*\(", s, re.I)
        if not r:
            raise SchemaError(f"cannot read foreign key {defn!r}")
        pdb, ptab = (unquote(r.group(1)), unquote(r.group(2))) if r.group(2) else \
            (default_db, unquote(r.group(1)))
        table.fks.append(ForeignKey(cols, pdb, ptab, _col_list(s[r.end() - 1:])))
    elif upper.startswith(("KEY", "INDEX", "FULLTEXT", "SPATIAL", "CHECK", "PERIOD")):
        return  # non-unique indexes and checks add no row key
    else:
        m = re.match(_IDENT, s)
        if not m:
            raise SchemaError(f"cannot read column definition {defn!r}")
        col = unquote(m.group(0))
        table.columns.append(col)
        tail = s[m.end():].upper()
        tail = re.sub(r"'(?:[^'\\]|\\.)*'", "''", tail)  # defaults and comments may say KEY
        if re.search(r"\bPRIMARY\s+KEY\b", tail):
            table.unique = {"PRIMARY": [col], **table.unique}
        elif re.search(r"\bUNIQUE\b", tail):
            table.unique[col] = [col]
        r = re.search(rf"REFERENCES\s+({_IDENT})(?:\s*\.\s*({_IDENT}))?\s*\(", s, re.I)
        if r:
            pdb, ptab = (unquote(r.group(1)), unquote(r.group(2))) if r.group(2) else \
                (default_db, unquote(r.group(1)))
            table.fks.append(ForeignKey([col], pdb, ptab, _col_list(s[r.end() - 1:])))


_CREATE = re.compile(rf"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"
                     rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?\s*", re.I | re.S)


def parse_create_table(sql: str, default_db: str | None) -> Table | None:
    """A `Table` from a CREATE TABLE statement; None for `CREATE TABLE ... LIKE/SELECT`
    forms without an explicit column list (the caller treats those as unknown)."""
    m = _CREATE.match(sql)
    if not m:
        raise SchemaError("not a CREATE TABLE statement")
    db, name = (unquote(m.group(1)), unquote(m.group(2))) if m.group(2) else \
        (default_db, unquote(m.group(1)))
    if db is None:
        raise SchemaError(f"CREATE TABLE {name}: no database selected")
    rest = sql[m.end():]
    if not rest.startswith("("):
        return None
    body = rest[1:_matching_paren(rest, 0)]
    table = Table(db, name, [])
    for part in _split_top(body):
        _definition(part, table, db)
    if re.match(r"\s*SELECT\b|\s*AS\b", rest[_matching_paren(rest, 0) + 1:], re.I):
        return None  # CREATE ... SELECT may add columns from the query
    return table


def _strip_comments(sql: str) -> str:
    """Drop /* */ comments except MySQL's executable /*!NNNNN ... */ ones (kept as their text)."""
    out = re.sub(r"/\*!\d*\s?(.*?)\*/", r"\1", sql, flags=re.S)
    out = re.sub(r"/\*.*?\*/", " ", out, flags=re.S)
    return out


class Catalog:
    """Known tables by (db, table), lowercase. Tables made unknown by an unreadable DDL are kept
    in `unknown` with the reason, so their rows are refused rather than keyed wrongly."""

    def __init__(self) -> None:
        self.tables: dict[tuple[str, str], Table] = {}
        self.unknown: dict[tuple[str, str], str] = {}
        # --schema-from: a live server asked for a table's definition the first time the
        # import needs one it has not got (schema_from.ServerSchema)
        self.server = None
        self._asked: set[tuple[str, str]] = set()

    @staticmethod
    def _k(db: str, name: str) -> tuple[str, str]:
        return db.lower(), name.lower()

    def get(self, db: str, name: str) -> Table | None:
        k = self._k(db, name)
        t = self.tables.get(k)
        if t is None and self.server is not None and k not in self.unknown and k not in self._asked:
            t = self._from_server(db, name)
        return t

    def _from_server(self, db: str, name: str) -> Table | None:
        """A table's definition from the server (--schema-from), once per table."""
        k = self._k(db, name)
        self._asked.add(k)
        sql = self.server.create_table(db, name)
        if sql is None:
            self.unknown[k] = f"not on the server {self.server.shown} (dropped since?)"
            return None
        try:
            t = parse_create_table(_strip_comments(sql), db)
        except SchemaError as e:
            t, why = None, f"the server's CREATE TABLE cannot be read: {e}"
        else:
            why = "the server's CREATE TABLE ... LIKE/SELECT names no columns"
        if t is None:
            self.unknown[k] = why
            return None
        t.origin = "server"
        self.add(t)
        return t

    def add(self, table: Table) -> None:
        self.tables[self._k(table.db, table.name)] = table
        self.unknown.pop(self._k(table.db, table.name), None)

    def forget(self, db: str, name: str, reason: str) -> None:
        self.tables.pop(self._k(db, name), None)
        self.unknown[self._k(db, name)] = reason

    def is_fk_parent(self, db: str, name: str) -> bool:
        k = self._k(db, name)
        return any(self._k(fk.parent_db, fk.parent_table) == k
                   for t in self.tables.values() for fk in t.fks)

    def load_sql_file(self, path: str) -> int:
        """Read the CREATE TABLE statements of a schema dump (`mysqldump --no-data`). Returns how
        many tables were read."""
        db = None
        n = 0
        with open(path, encoding="utf-8", errors="replace") as f:
            for line, stmt in _statements(f):
                s = _strip_comments(stmt).strip()
                m = re.match(rf"USE\s+({_IDENT})", s, re.I)
                if m:
                    db = unquote(m.group(1))
                    continue
                if _CREATE.match(s):
                    try:
                        t = parse_create_table(s, db)
                    except SchemaError as e:
                        raise SchemaError(str(e), line) from None
                    if t is not None:
                        self.add(t)
                        n += 1
        return n

    def apply_ddl(self, sql: str, default_db: str | None) -> None:
        """Follow a DDL statement met in the binlog: CREATE/DROP/RENAME/ALTER TABLE."""
        s = _strip_comments(sql).strip().rstrip(";")
        u = s.upper()
        if _CREATE.match(s):
            m = _CREATE.match(s)
            db, name = (unquote(m.group(1)), unquote(m.group(2))) if m.group(2) else \
                (default_db, unquote(m.group(1)))
            try:
                t = parse_create_table(s, default_db)
            except SchemaError as e:
                self.forget(db or "", name, f"unreadable CREATE TABLE: {e}")
                return
            if t is None:
                self.forget(db or "", name, "CREATE TABLE ... LIKE/SELECT: columns not known")
            else:
                self.add(t)
            return
        m = re.match(r"DROP\s+(?:TEMPORARY\s+)?TABLE\s+(?:IF\s+EXISTS\s+)?(.*)$", s, re.I | re.S)
        if m:
            for part in _split_top(re.sub(r"\s+(RESTRICT|CASCADE)\s*$", "", m.group(1), flags=re.I)):
                q = _QNAME.match(part.split("/*")[0])
                if q:
                    db, name = (unquote(q.group(1)), unquote(q.group(2))) if q.group(2) else \
                        (default_db, unquote(q.group(1)))
                    self.tables.pop(self._k(db or "", name), None)
            return
        m = re.match(r"RENAME\s+TABLE\s+(.*)$", s, re.I | re.S)
        if m:
            for pair in _split_top(m.group(1)):
                ab = re.split(r"\s+TO\s+", pair, maxsplit=1, flags=re.I)
                if len(ab) == 2:
                    self._rename(ab[0], ab[1], default_db)
            return
        m = re.match(rf"ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?TABLE\s+({_IDENT})(?:\s*\.\s*({_IDENT}))?\s*(.*)$",
                     s, re.I | re.S)
        if m:
            db, name = (unquote(m.group(1)), unquote(m.group(2))) if m.group(2) else \
                (default_db, unquote(m.group(1)))
            self._alter(db or "", name, m.group(3), default_db)
            return
        if u.startswith(("DROP DATABASE", "DROP SCHEMA")):
            q = re.match(rf"DROP\s+(?:DATABASE|SCHEMA)\s+(?:IF\s+EXISTS\s+)?({_IDENT})", s, re.I)
            if q:
                dbn = unquote(q.group(1)).lower()
                for k in [k for k in self.tables if k[0] == dbn]:
                    del self.tables[k]

    def _rename(self, a: str, b: str, default_db: str | None) -> None:
        qa, qb = _QNAME.match(a), _QNAME.match(b)
        if not qa or not qb:
            return
        da, na = (unquote(qa.group(1)), unquote(qa.group(2))) if qa.group(2) else (default_db or "", unquote(qa.group(1)))
        db_, nb = (unquote(qb.group(1)), unquote(qb.group(2))) if qb.group(2) else (default_db or "", unquote(qb.group(1)))
        t = self.tables.pop(self._k(da, na), None)
        if t is not None:
            t.db, t.name = db_, nb
            self.add(t)
        elif self._k(da, na) in self.unknown:
            self.forget(db_, nb, self.unknown.pop(self._k(da, na)))

    def _alter(self, db: str, name: str, spec: str, default_db: str | None) -> None:
        # not from the server: its definition is already the altered one
        t = self.tables.get(self._k(db, name))
        if t is None:
            return  # a table we never knew stays unknown
        for part in _split_top(spec):
            p = part.strip()
            pu = p.upper()
            if re.match(r"ADD\s+(?:(?:INDEX|KEY|FULLTEXT|SPATIAL)\b)", pu) or \
                    re.match(r"(?:ALGORITHM|LOCK|FORCE|ENGINE|COMMENT|ROW_FORMAT|AUTO_INCREMENT|"
                             r"DEFAULT\s+CHARSET|CHARACTER\s+SET|ANALYZE|OPTIMIZE)\b", pu):
                continue
            if re.match(r"ADD\s+(?:CONSTRAINT\b.*)?(?:PRIMARY|UNIQUE|FOREIGN)\b", pu):
                try:
                    _definition(p[3:].strip(), t, db)
                except (SchemaError, ValueError) as e:
                    self.forget(db, name, f"unreadable ALTER TABLE: {e}")
                    return
                continue
            m = re.match(rf"DROP\s+(?:INDEX|KEY)\s+(?:IF\s+EXISTS\s+)?({_IDENT})", p, re.I)
            if m:
                t.unique.pop(unquote(m.group(1)), None)
                continue
            if re.match(r"DROP\s+PRIMARY\s+KEY", pu):
                t.unique.pop("PRIMARY", None)
                continue
            if re.match(r"DROP\s+(?:FOREIGN\s+KEY|CONSTRAINT|CHECK)\b", pu):
                continue  # we do not track FK names; keeping a dropped FK only adds a key
            m = re.match(r"ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?(?!\()(.*)$", p, re.I | re.S)
            if m and not re.search(r"\b(FIRST|AFTER)\b", re.sub(r"'(?:[^'\\]|\\.)*'", "", m.group(1)), re.I):
                try:
                    _definition(m.group(1), t, db)  # appended at the end: positions unchanged
                except SchemaError as e:
                    self.forget(db, name, f"unreadable ALTER TABLE: {e}")
                    return
                continue
            self.forget(db, name, f"ALTER TABLE clause not followed: {p[:80]!r}")
            return


def _statements(lines):
    """Split SQL text into statements at `;` ending a line (enough for mysqldump output):
    (line number where the statement starts, its text)."""
    buf: list[str] = []
    start = 0
    for n, line in enumerate(lines, 1):
        if line.startswith("--") or not line.strip():
            continue
        if not buf:
            start = n
        buf.append(line)
        if line.rstrip().endswith(";"):
            yield start, "".join(buf).rstrip().rstrip(";")
            buf = []
    if buf:
        yield start, "".join(buf)


_META_COL = re.compile(r"`((?:[^`]|``)+)`")


def table_from_metadata(db: str, name: str, columns_text: str, pk_text: str | None) -> Table:
    """A table from `binlog_row_metadata=FULL` as printed by `--print-table-metadata`:
    `# Columns(`id` INT NOT NULL, ...)` and `# Primary Key(id)`. Only the primary key is in
    the metadata, so UNIQUE indexes are marked unknown (`unique_complete=False`)."""
    cols = []
    for part in _split_top(columns_text):
        m = _META_COL.match(part.strip())
        if m:
            cols.append(m.group(1).replace("``", "`"))
        else:
            w = part.strip().split()
            if w:
                cols.append(w[0])
    t = Table(db, name, cols, unique_complete=False, origin="table-map metadata")
    if pk_text:
        pk = [c.strip().strip("`") for c in pk_text.split(",") if c.strip()]
        # MySQL prints prefix lengths as col(10)
        t.unique["PRIMARY"] = [re.sub(r"\(\d+\)$", "", c) for c in pk]
    return t
