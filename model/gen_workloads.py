"""The workload shapes of the simulated source (`gen_source`): which transaction a client
runs next, and each transaction's body, as sysbench's scripts shape them: the statements' costs
and the row keys they lock, in order. A body is a generator of steps `(_RUN, µs)` or
`(_LOCK, key, role)`; it draws rows when the statement runs and reads the server's state only
under the row lock that makes it stable."""
from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .gen_source import _Attempt

WORKLOADS = ("oltp_read_write", "oltp_update_index", "oltp_insert", "mixed")
SCHEMA = "sbtest"

# Median execution cost per workload, µs (an 18-statement sysbench transaction vs. one statement).
DEFAULT_EXEC_US = {"oltp_read_write": 1500.0, "oltp_update_index": 150.0,
                   "oltp_insert": 150.0, "mixed": 1500.0}


# ------------------------------------------------------------------ keys

def _pk(table: str, row: int) -> str:
    return f"{SCHEMA}.{table}/PRIMARY={row}"


def _uk(table: str, value: int) -> str:
    return f"{SCHEMA}.{table}/uk={value}"


UNIQUE_TABLE = "usbtest1"      # PRIMARY KEY (id), UNIQUE KEY uk (u); u starts equal to id
NOPK_TABLE = "nopk1"           # no primary key, no unique key
PARENT_TABLE = "parent"        # referenced by child.parent_id
CHILD_TABLE = "child"          # PRIMARY KEY (id) AUTO_INCREMENT, FOREIGN KEY (parent_id)
_NOPK_LOCK = f"~table-scan:{SCHEMA}.{NOPK_TABLE}"   # internal lock, never written to a trace

# Body steps: ("run", µs) | ("lock", key, role). Roles: a written key, a key only an UPDATE's
# before image contributes, an internal lock (not a row key).
_RUN, _LOCK = 0, 1
_W, _B, _I = 0, 1, 2


def _row_chooser(rng: random.Random, size: int, skew: float) -> Callable[[], int]:
    rand = rng.random
    if skew == 0.0:
        return lambda: int(rand() * size) + 1
    a = 1.0 - skew
    top = (size + 1) ** a - 1.0
    inv = 1.0 / a

    def pick() -> int:  # inverse CDF of density ∝ x^-skew on [1, size+1)
        r = int((1.0 + rand() * top) ** inv)
        return r if r <= size else size
    return pick


class WorkloadShapes:
    """Mixed into the simulated source: uses its `p` (GenParams), `rng`, `mu`, `pick_row`,
    `pick_parent`, `logical` and the mixed workload's per-table state."""

    def _draw_exec(self, median_log: float) -> float:
        return max(1.0, round(self.rng.lognormvariate(median_log, self.p.exec_sigma), 1))

    def _next_kind(self) -> str:
        p, rand = self.p, self.rng.random
        self.logical += 1
        if p.ddl_every and self.logical % p.ddl_every == 0:
            return "ddl"
        if p.bulk_every and self.logical % p.bulk_every == 0:
            return "bulk"
        if p.fk and rand() < 0.10:
            return "fk_child" if rand() < 0.7 else "fk_parent"
        if p.workload == "mixed":
            r = rand()
            if r < 0.60:
                return "oltp_read_write"
            if r < 0.75:
                return "unique_update"
            if r < 0.85:
                return "unique_delete_insert"
            return "nopk_update"
        return p.workload


    def _table(self) -> str:
        return f"sbtest{int(self.rng.random() * self.p.tables) + 1}"

    def _body_oltp_read_write(self, att: _Attempt):
        # sysbench oltp_read_write: 10 point selects + 4 range selects (consistent reads, no
        # locks), then index update (k is not unique: only PRIMARY counts), non-index update,
        # DELETE then INSERT of the same id; each statement picks its own table.
        att.exec = e = self._draw_exec(self.mu)
        s = e / 18
        rand, tables, pick = self.rng.random, self.p.tables, self.pick_row
        yield _RUN, 14 * s
        yield _LOCK, f"{SCHEMA}.sbtest{int(rand() * tables) + 1}/PRIMARY={pick()}", _W
        yield _RUN, s
        yield _LOCK, f"{SCHEMA}.sbtest{int(rand() * tables) + 1}/PRIMARY={pick()}", _W
        yield _RUN, s
        yield _LOCK, f"{SCHEMA}.sbtest{int(rand() * tables) + 1}/PRIMARY={pick()}", _W
        yield _RUN, 2 * s

    def _body_oltp_update_index(self, att: _Attempt):
        att.explicit = False            # autocommit: one UPDATE ... SET k=k+1 WHERE id=?
        att.exec = e = self._draw_exec(self.mu)
        yield _LOCK, _pk(self._table(), self.pick_row()), _W
        yield _RUN, e

    def _body_oltp_insert(self, att: _Attempt):
        att.explicit = False            # autocommit INSERT, AUTO_INCREMENT id: a fresh row
        att.exec = e = self._draw_exec(self.mu)
        t = int(self.rng.random() * self.p.tables) + 1
        row = self.auto_inc[t]
        self.auto_inc[t] += 1
        yield _LOCK, _pk(f"sbtest{t}", row), _W
        yield _RUN, e

    def _unique_value(self, att: _Attempt, row: int) -> int:
        for r, v in reversed(att.pending_u):
            if r == row:
                return v
        return self.u_of.get(row, row)

    def _new_unique_value(self, att: _Attempt) -> int:
        # Reuse a value a committed transaction freed (half the time), else a fresh one: reuse
        # is what makes the freeing transaction's before image matter.
        if self.u_pool and self.rng.random() < 0.5:
            v = self.u_pool.popleft()
            att.taken.append(v)
            return v
        v = self.u_next
        self.u_next += 1
        return v

    def _body_unique_update(self, att: _Attempt):
        # SELECT; UPDATE usbtest1 SET u=? WHERE id=?  (the UNIQUE value changes)
        att.exec = e = self._draw_exec(self.mu - math.log(4))
        s = e / 2
        yield _RUN, s
        row = self.pick_row()
        yield _LOCK, _pk(UNIQUE_TABLE, row), _W
        old = self._unique_value(att, row)
        new = self._new_unique_value(att)
        yield _LOCK, _uk(UNIQUE_TABLE, old), _B
        yield _LOCK, _uk(UNIQUE_TABLE, new), _W
        att.pending_u.append((row, new))
        att.freed.append(old)
        yield _RUN, s

    def _body_unique_delete_insert(self, att: _Attempt):
        # DELETE FROM usbtest1 WHERE id=?; INSERT the same id with another unique value.
        att.exec = e = self._draw_exec(self.mu - math.log(4))
        s = e / 2
        row = self.pick_row()
        yield _LOCK, _pk(UNIQUE_TABLE, row), _W
        old = self._unique_value(att, row)
        yield _LOCK, _uk(UNIQUE_TABLE, old), _W
        yield _RUN, s
        new = self._new_unique_value(att)
        yield _LOCK, _uk(UNIQUE_TABLE, new), _W
        att.pending_u.append((row, new))
        att.freed.append(old)
        yield _RUN, s

    def _body_nopk_update(self, att: _Attempt):
        # UPDATE nopk1 ... (a full scan locks every row), then an ordinary sbtest row update.
        att.exec = e = self._draw_exec(self.mu - math.log(3))
        att.no_pk = True
        s = e / 2
        yield _LOCK, _NOPK_LOCK, _I
        yield _RUN, s
        yield _LOCK, _pk(self._table(), self.pick_row()), _W
        yield _RUN, s

    def _body_fk_child(self, att: _Attempt):
        # INSERT INTO child (parent_id, ...): the FK adds the referenced parent key.
        att.exec = e = self._draw_exec(self.mu - math.log(4))
        row = self.child_next
        self.child_next += 1
        yield _LOCK, _pk(CHILD_TABLE, row), _W
        yield _LOCK, _pk(PARENT_TABLE, self.pick_parent()), _W
        yield _RUN, e

    def _body_fk_parent(self, att: _Attempt):
        # UPDATE parent SET c=? WHERE id=?: a write to a table other tables reference.
        att.exec = e = self._draw_exec(self.mu - math.log(4))
        att.fk_parent = True
        yield _LOCK, _pk(PARENT_TABLE, self.pick_parent()), _W
        yield _RUN, e

    def _body_bulk(self, att: _Attempt):
        # UPDATE sbtest.sbtestN SET c=? WHERE id BETWEEN a AND a+rows-1: rows locked in id order
        # as the range scan reaches them, the cost spread evenly over the rows.
        att.explicit = False            # autocommit: one range UPDATE
        rows = min(self.p.bulk_rows, self.p.table_size)
        att.exec = e = self._draw_exec(self.mu + math.log(rows / 10))
        table = self._table()
        first = int(self.rng.random() * (self.p.table_size - rows + 1)) + 1
        for row in range(first, first + rows):
            yield _LOCK, _pk(table, row), _W
            yield _RUN, e / rows

    def _body_ddl(self, att: _Attempt):
        # ALTER TABLE sbtest.sbtestN ...: no row events; runs alone.
        att.exec = self._draw_exec(math.log(self.p.ddl_exec_us))
        yield _RUN, att.exec
