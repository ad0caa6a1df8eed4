//! Binary binlog files read into commitsched transactions (model/importers/binlog_binary.py).
//!
//! `mysql_common`'s binlog module does the parsing (event framing, format description, GTID /
//! Query / Table_map / Rows / Xid / Rotate events, column values); this crate applies the text
//! importer's rules event by event (binlog_text.Reader: the same transactions, row keys, flags,
//! clocks, size fields, refusals) and writes each finished transaction as its trace line, so
//! that Python handles one string per transaction instead of every event and row. What is
//! rare and needs the table catalog stays in Python, called back through `hooks`: a table's
//! key plan (once per table and DDL), statements other than BEGIN / COMMIT (DDL changes the
//! catalog), and the row keys of tables with foreign keys or problems (their messages).
//! MariaDB's GTID event (type 162), which mysql_common does not know, is read from its 13-21
//! byte body here.

// pyo3 0.22's create_exception! checks a cfg this crate does not declare
#![allow(unexpected_cfgs)]
// pyo3 0.22's #[pymethods] expansion converts each method's PyErr into itself, which newer
// clippy flags on the method's signature; nothing in this crate's own code does
#![allow(clippy::useless_conversion)]

mod blocks;
mod compressed;
mod frame;
mod txn;
mod values;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use mysql_common::binlog::consts::{BinlogChecksumAlg, BinlogVersion, EventType};
use mysql_common::binlog::events::{
    AnonymousGtidEvent, DeleteRowsEvent, DeleteRowsEventV1, Event, EventData, FormatDescriptionEvent, GtidEvent,
    PartialUpdateRowsEvent, QueryEvent, RowsEventData, TableMapEvent, TransactionPayloadEvent, UpdateRowsEvent,
    UpdateRowsEventV1, WriteRowsEvent, WriteRowsEventV1, XidEvent,
};
use mysql_common::io::ParseBuf;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use frame::Ev;
use txn::{Open, F_ALLOW_PARALLEL, F_DDL, F_TRANSACTIONAL, F_WAITED};
use values::{image_of_row, read_image, Columns, Image, UNPRINTED};

/// What the catalog's `plan(db, table)` hook returns: the key steps (index name, column
/// positions) or None, whether the table is known, has a primary key, is a foreign-key parent,
/// and its column count.
type KeyPlan = (Option<Vec<(String, Vec<usize>)>>, bool, bool, bool, usize);
/// One row of a rows event: its before and after images (an INSERT has no before, a DELETE no
/// after).
type RowImages = (Option<Image>, Option<Image>);

// A problem at one event, in strict mode: args (binlog position, reason with its position).
create_exception!(commitsched_binlog, BinlogProblem, PyValueError);

const MARIADB_GTID_EVENT: u8 = 162;
const MARIADB_ANNOTATE_ROWS_EVENT: u8 = 160;
// MariaDB GTID event flags2 bits (sql/log_event.h)
const FL_STANDALONE: u8 = 1;
const FL_GROUP_COMMIT_ID: u8 = 2;
const FL_ALLOW_PARALLEL: u8 = 8;
const FL_WAITED: u8 = 16;
const FL_DDL: u8 = 32;
const FL_PREPARED_XA: u8 = 64;
const FL_COMPLETED_XA: u8 = 128;

/// An event the server may skip by its length when it does not know the type (log_event.h);
/// MySQL sets it on Previous_gtids and Rows_query too, which this reader knows.
const LOG_EVENT_IGNORABLE_F: u16 = 0x80;
const TRANSACTION_PAYLOAD_EVENT: u8 = 40;
/// MySQL 8.3+: a GTID with a tag, in its own serialization
const GTID_TAGGED_LOG_EVENT: u8 = 42;

/// Whether the event type is one MySQL (0-42) or MariaDB (160-171) writes, so that this
/// reader knows what it does (even when that is nothing).
fn known_type(raw: u8) -> bool {
    raw <= GTID_TAGGED_LOG_EVENT || (MARIADB_ANNOTATE_ROWS_EVENT..=171).contains(&raw)
}

/// (major, minor) of a server version string ("8.0.32", "5.7.44-log", "10.11.6-MariaDB-log").
fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

// What hooks.statement() tells the reader to do (mirrored in binlog_binary.py).
const A_IGNORE: u8 = 0;
const A_PROBLEM: u8 = 1;
const A_BEGIN: u8 = 2;
const A_FINISH: u8 = 3;
const A_DDL: u8 = 4;
const A_PROBLEM_THEN: u8 = 5;
const A_THEN: u8 = 6;

/// How to make a table's row keys (binlog_binary._Hooks.plan): per unique index its key
/// prefix and column positions (1-based), or None when Python makes them (foreign keys,
/// unknown table or column).
struct Plan {
    db: String,
    name: String,
    known: bool,
    steps: Option<Vec<(String, Vec<usize>)>>,
    has_pk: bool,
    fk_parent: bool,
    ncols: usize,
    /// 0-based columns the steps need: only these are printed
    wanted: Option<Vec<bool>>,
}

struct Table {
    raw: Vec<u8>,
    tme: TableMapEvent<'static>,
    db: String,
    name: String,
    cols: Columns,
    plan: Option<(u64, Arc<Plan>)>,
}

enum Halt {
    /// the file cannot be read on: (binlog position, why)
    Fatal(u64, String),
    Py(PyErr),
}

impl From<PyErr> for Halt {
    fn from(e: PyErr) -> Self {
        Halt::Py(e)
    }
}

type Step = Result<(), Halt>;

/// What the transactions finished in one batch add to the import's counts (importers/
/// __init__.py: `_Tally`): their trace lines, numbered on from `seq`, and how many commit
/// groups (a run of transactions with one commit id), standalone DDL and files they make.
#[derive(Default)]
struct Batch {
    text: String,
    seq: u64,
    count: u64,
    groups: u64,
    last_commit_id: Option<u64>,
    ddl: u64,
    last_file: u64,
}

#[pyclass]
struct TxnReader {
    /// taken out while a batch is read (`run`): events are framed in its buffer
    stream: Option<BufReader<File>>,
    /// shared with the rows event being read (whose parse borrows it) while `self` changes
    fde: Arc<FormatDescriptionEvent<'static>>,
    offset: u64,
    done: bool,
    strict: bool,
    hooks: PyObject,
    tables: HashMap<u64, Table>,
    plans: HashMap<(String, String), Arc<Plan>>,
    generation: u64,
    cur: Option<Open>,
    query_db: Option<String>,
    // binlog_text.Reader's state, shared with text inputs: given at the start, read back after
    #[pyo3(get)]
    file: u64,
    #[pyo3(get)]
    rotated: bool,
    #[pyo3(get)]
    start_file: Option<u64>,
    #[pyo3(get)]
    server_version: Option<String>,
    #[pyo3(get)]
    mariadb_gtids: u64,
    #[pyo3(get)]
    mysql_gtids: u64,
    skipped: Vec<(u64, Option<String>, String, bool)>,
    batch: Batch,
    /// tables whose row images lacked some key's columns (binlog_row_image=MINIMAL)
    #[pyo3(get)]
    keys_partial_tables: HashSet<String>,
    /// events of types this reader does not know that carry LOG_EVENT_IGNORABLE_F: skipped
    #[pyo3(get)]
    ignorable_skipped: u64,
    /// (file, sequence_number) of the last transaction written: the clock must go up in a file
    last_clock: Option<(u64, u64)>,
    /// compressed transactions: one zstd context for all, and the file's format description
    /// without checksums (the events inside carry none) with the one it was made from
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    inner_fde: Option<(Arc<FormatDescriptionEvent<'static>>, Arc<FormatDescriptionEvent<'static>>)>,
}

fn fatal_decode(pos: u64, raw: u8) -> impl Fn(io::Error) -> Halt {
    move |e| Halt::Fatal(pos, format!("cannot decode event type {}: {}", raw, e))
}

impl TxnReader {
    fn problem(&mut self, reason: impl Into<String>, pos: u64) -> Step {
        let full = format!("{} (binlog position {})", reason.into(), pos);
        if self.strict {
            return Err(Halt::Py(BinlogProblem::new_err((pos, full))));
        }
        match self.cur.as_mut() {
            Some(c) => {
                if c.bad.is_none() {
                    c.bad = Some((pos, full));
                }
            }
            None => self.skipped.push((pos, None, full, true)),
        }
        Ok(())
    }

    /// Drops the open transaction, recording it as skipped if it went bad.
    fn drop_open(&mut self) {
        if let Some(cur) = self.cur.take() {
            if let Some((line, why)) = cur.bad {
                self.skipped.push((line, cur.gtid, why, false));
            }
        }
    }

    fn finish(&mut self) -> Step {
        if let Some(done) = self.cur.take() {
            if let Some((line, why)) = done.bad {
                self.skipped.push((line, done.gtid, why, false));
                return Ok(());
            }
            if let Some(sn) = done.sequence_number {
                // the trace's loader refuses a clock that goes back within a file: a GTID
                // event out of place (or damaged) is this transaction's problem, not a trace
                // written that cannot be read
                if let Some((file, prev)) = self.last_clock {
                    if file == done.file && sn <= prev {
                        let why = format!(
                            "sequence_number {} is not above the previous transaction's {} in the same binlog file (binlog position {})",
                            sn, prev, done.line
                        );
                        if self.strict {
                            return Err(Halt::Py(BinlogProblem::new_err((done.line, why))));
                        }
                        self.skipped.push((done.line, done.gtid, why, false));
                        return Ok(());
                    }
                }
                self.last_clock = Some((done.file, sn));
            }
            let b = &mut self.batch;
            b.seq += 1;
            b.count += 1;
            b.text.push_str("{\"seq\":");
            txn::int(&mut b.text, b.seq);
            b.text.push(',');
            done.write_tail(&mut b.text);
            b.text.push('\n');
            if done.commit_id.is_none() || done.commit_id != b.last_commit_id {
                b.groups += 1;
            }
            b.last_commit_id = done.commit_id;
            b.ddl += (done.ddl && done.flags & F_TRANSACTIONAL == 0 && done.commit_id.is_none()) as u64;
            b.last_file = b.last_file.max(done.file);
        }
        Ok(())
    }

    fn start(&mut self, open: Open) -> Step {
        if let Some(cur) = &self.cur {
            let (gtid, line) = (cur.gtid.clone().unwrap_or_default(), cur.line);
            self.problem(
                format!("transaction {} (binlog position {}) has no COMMIT before the next GTID event", gtid, line),
                line,
            )?;
            self.drop_open();
        }
        self.cur = Some(open);
        self.rotated = false;
        Ok(())
    }

    fn fatal(&mut self, pos: u64, why: String) -> PyResult<()> {
        self.done = true;
        if let Err(Halt::Py(e)) = self.problem(why, pos) {
            return Err(e);
        }
        self.drop_open();
        Ok(())
    }

    fn end_of_file(&mut self) -> PyResult<()> {
        self.done = true;
        if let Some(cur) = &self.cur {
            let (gtid, line) = (cur.gtid.clone().unwrap_or_default(), cur.line);
            let why = format!("input ends inside transaction {} begun at binlog position {}: truncated?", gtid, line);
            if let Err(Halt::Py(e)) = self.problem(why, line) {
                return Err(e);
            }
            self.drop_open();
        }
        Ok(())
    }

    fn event(&mut self, py: Python<'_>, ev: &Ev) -> Step {
        let h = ev.h;
        let end = h.log_pos() as u64;
        let pos = self.offset;
        self.offset += h.event_size() as u64;
        let ts = h.timestamp();
        let raw = h.event_type_raw();
        if let Some(c) = self.cur.as_mut() {
            c.events += 1;
            c.end_pos = Some(end);
        }
        if !known_type(raw) {
            // as the server reads it (Log_event::read_log_event): skipped by its length when
            // marked ignorable, else the replica stops
            if h.flags_raw() & LOG_EVENT_IGNORABLE_F != 0 {
                self.ignorable_skipped += 1;
                return Ok(());
            }
            return self.problem(
                format!(
                    "unknown event type {}: not one MySQL or MariaDB writes, and not marked ignorable \
                     (LOG_EVENT_IGNORABLE_F), so a replica would stop here too",
                    raw
                ),
                pos,
            );
        }
        if raw == TRANSACTION_PAYLOAD_EVENT {
            return self.payload(py, ev, pos, end, ts);
        }
        if compressed::plain_type(raw).is_some() {
            // MariaDB's compressed Query / rows events: read as the plain event they hold
            let full = ev.event(&self.fde).map_err(fatal_decode(pos, raw))?;
            return match compressed::uncompress(&full, &self.fde) {
                Ok(plain) => self.dispatch(py, &Ev::of(&plain), pos, end, ts),
                Err(why) => self.problem(format!("compressed event (type {}): {}", raw, why), pos),
            };
        }
        self.dispatch(py, ev, pos, end, ts)
    }

    /// A MySQL compressed transaction (Transaction_payload, 8.0.20+): its events, compressed by
    /// the source, uncompressed (`compressed::payload_events`) and read as plain ones, each
    /// counted as an event of the transaction. Its problems are at the payload's position.
    fn payload(&mut self, py: Python<'_>, ev: &Ev, pos: u64, end: u64, ts: u32) -> Step {
        let tpe = frame::parse::<TransactionPayloadEvent>(&self.fde, ev.data)
            .map_err(fatal_decode(pos, TRANSACTION_PAYLOAD_EVENT))?;
        let data = match compressed::payload_events(&tpe, &mut self.zstd) {
            Ok(d) => d,
            Err(why) => return self.problem(format!("compressed transaction: {}", why), pos),
        };
        if self.inner_fde.as_ref().is_none_or(|(of, _)| !Arc::ptr_eq(of, &self.fde)) {
            self.inner_fde = Some((self.fde.clone(), Arc::new(compressed::without_checksums(&self.fde))));
        }
        let inner_fde = self.inner_fde.as_ref().expect("made above").1.clone();
        let inner_fde = &*inner_fde;
        let mut at = 0;
        while at < data.len() {
            let owned;
            // in place: the event types `dispatch` parses from their bytes alone; the others
            // are read whole, with the format description that has no checksum
            let fast = data.get(at + 4).is_some_and(|&t| matches!(t, 16 | 19 | 23 | 24 | 25 | 30 | 31 | 32 | 39));
            let inner = match frame::frame(&data[at..], inner_fde).filter(|_| fast) {
                Some((ev, size)) => {
                    at += size;
                    ev
                }
                None => {
                    owned = match compressed::inner_event(inner_fde, &data, at) {
                        Ok(e) => e,
                        Err(why) => return self.problem(format!("compressed transaction: {}", why), pos),
                    };
                    at += owned.header().event_size() as usize;
                    Ev::of(&owned)
                }
            };
            let h = inner.h;
            let raw = h.event_type_raw();
            if let Some(c) = self.cur.as_mut() {
                c.events += 1;
            }
            if raw == TRANSACTION_PAYLOAD_EVENT || raw == EventType::FORMAT_DESCRIPTION_EVENT as u8 {
                return self.problem(format!("compressed transaction: an event of type {} inside it", raw), pos);
            }
            if !known_type(raw) {
                if h.flags_raw() & LOG_EVENT_IGNORABLE_F != 0 {
                    self.ignorable_skipped += 1;
                    continue;
                }
                return self.problem(
                    format!("compressed transaction: unknown event type {} inside it, not marked ignorable", raw),
                    pos,
                );
            }
            self.dispatch(py, &inner, pos, end, ts)?;
        }
        Ok(())
    }

    fn dispatch(&mut self, py: Python<'_>, ev: &Ev, pos: u64, end: u64, ts: u32) -> Step {
        let raw = ev.h.event_type_raw();
        match raw {
            MARIADB_GTID_EVENT => return self.mariadb_gtid(ev, pos, end, ts),
            MARIADB_ANNOTATE_ROWS_EVENT => return Ok(()),
            r if r == EventType::TABLE_MAP_EVENT as u8 => return self.table_map(ev, pos),
            23 | 24 | 25 | 30 | 31 | 32 | 39 => return self.rows(py, ev, pos),
            r if r == EventType::XID_EVENT as u8 => {
                frame::parse::<XidEvent>(&self.fde, ev.data).map_err(fatal_decode(pos, raw))?;
                return self.xid(pos);
            }
            _ => {}
        }
        let full = ev.event(&self.fde).map_err(fatal_decode(pos, raw))?;
        let data = full.read_data().map_err(fatal_decode(pos, raw))?;
        match data {
            Some(EventData::FormatDescriptionEvent(f)) => {
                let version = f.server_version().trim_end_matches('\0').to_string();
                if let Some((major, minor)) = major_minor(&version) {
                    if !version.to_ascii_lowercase().contains("mariadb") && (major, minor) < (5, 7) {
                        return Err(Halt::Fatal(
                            pos,
                            format!(
                                "a MySQL {} binlog: MySQL before 5.7 writes no logical clock \
                                 (last_committed / sequence_number), which this reader needs; it \
                                 reads MySQL 5.7, 8.x, 9.x and MariaDB 10+ binlogs",
                                version
                            ),
                        ));
                    }
                }
                self.fde = Arc::new(f.into_owned());
                if self.rotated {
                    self.rotated = false;
                } else if self.start_file == Some(self.file) {
                    self.file += 1;
                }
                self.start_file = Some(self.file);
                if self.server_version.is_none() {
                    self.server_version = version.split_whitespace().next().map(str::to_string);
                }
                Ok(())
            }
            Some(EventData::GtidEvent(g)) => self.mysql_gtid(&g, false, pos, end, ts),
            Some(EventData::AnonymousGtidEvent(AnonymousGtidEvent(g))) => self.mysql_gtid(&g, true, pos, end, ts),
            Some(EventData::QueryEvent(q)) => self.query(py, &q, pos),
            Some(EventData::XidEvent(_)) => self.xid(pos),
            Some(EventData::RotateEvent(_)) => {
                if self.cur.is_some() {
                    self.problem("Rotate event inside a transaction", pos)?;
                }
                self.file += 1;
                self.rotated = true;
                Ok(())
            }
            Some(EventData::IncidentEvent(_)) => {
                self.problem("Incident event: the source marked a gap in its binlog", pos)
            }
            Some(EventData::TransactionPayloadEvent(_)) => {
                self.problem("a compressed transaction (Transaction_payload) inside another", pos)
            }
            None if raw == GTID_TAGGED_LOG_EVENT => self.problem(
                "a tagged GTID event (type 42, MySQL 8.3+ `GTID_NEXT='AUTOMATIC:tag'`) is not read \
                 yet: its transaction's clock is in it",
                pos,
            ),
            _ => Ok(()),
        }
    }

    fn xid(&mut self, pos: u64) -> Step {
        if self.cur.is_none() {
            return self.problem("COMMIT outside any transaction", pos);
        }
        self.finish()?;
        Ok(())
    }

    fn mariadb_gtid(&mut self, ev: &Ev, pos: u64, end: u64, ts: u32) -> Step {
        let d = ev.data;
        if d.len() < 13 {
            return Err(Halt::Fatal(pos, "MariaDB GTID event shorter than 13 bytes".into()));
        }
        let seq = u64::from_le_bytes(d[0..8].try_into().unwrap());
        let domain = u32::from_le_bytes(d[8..12].try_into().unwrap());
        let bits = d[12];
        let commit_id = if bits & FL_GROUP_COMMIT_ID != 0 {
            if d.len() < 21 {
                return Err(Halt::Fatal(pos, "MariaDB GTID event with a commit id flag but no commit id".into()));
            }
            Some(u64::from_le_bytes(d[13..21].try_into().unwrap()))
        } else {
            None
        };
        self.mariadb_gtids += 1;
        let mut standalone = bits & FL_STANDALONE != 0;
        let mut flags = 0;
        if !standalone {
            flags |= F_TRANSACTIONAL;
        }
        if bits & FL_WAITED != 0 {
            flags |= F_WAITED;
        }
        if bits & FL_DDL != 0 {
            flags |= F_DDL;
        }
        if bits & FL_ALLOW_PARALLEL != 0 {
            flags |= F_ALLOW_PARALLEL;
        }
        if bits & (FL_PREPARED_XA | FL_COMPLETED_XA) != 0 {
            standalone = false;
        }
        let mut o = Open::new(pos, self.file);
        let mut gtid = String::with_capacity(32);
        for (i, part) in [domain as u64, ev.h.server_id() as u64, seq].into_iter().enumerate() {
            if i > 0 {
                gtid.push('-');
            }
            txn::int(&mut gtid, part);
        }
        o.gtid = Some(gtid);
        o.commit_id = commit_id;
        o.flags = flags;
        o.standalone = standalone;
        o.timestamp = Some(ts as f64);
        o.ddl = flags & F_DDL != 0;
        o.events = 1;
        o.start_pos = Some(pos);
        o.end_pos = Some(end);
        self.start(o)
    }

    fn mysql_gtid(&mut self, g: &GtidEvent, anonymous: bool, pos: u64, end: u64, ts: u32) -> Step {
        self.mysql_gtids += 1;
        let (lc, sn) = (g.last_committed(), g.sequence_number());
        let bad = if g.lc_typecode().is_none() {
            // MySQL 5.6's layout (and 5.7 before 5.7.6): the event ends after the GTID
            Some(format!(
                "GTID event without a logical clock (last_committed / sequence_number: MySQL 5.7.6+), \
                 written by MySQL {}",
                self.server_version.as_deref().unwrap_or("before 5.7.6")
            ))
        } else if lc >= sn {
            Some(format!("last_committed {} is not below sequence_number {}", lc, sn))
        } else {
            None
        };
        if let Some(why) = bad {
            self.problem(why, pos)?;
            if self.cur.is_none() {
                let mut o = Open::new(pos, self.file);
                o.bad = Some((pos, "bad GTID event".into()));
                self.cur = Some(o);
            }
            return Ok(());
        }
        let gtid = if anonymous {
            None
        } else {
            let hex: String = g.sid().iter().map(|b| format!("{:02x}", b)).collect();
            Some(format!(
                "{}-{}-{}-{}-{}:{}",
                &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32], g.gno()
            ))
        };
        let t_us = match g.original_commit_timestamp() {
            0 => g.immediate_commit_timestamp(),
            t => t,
        };
        let mut o = Open::new(pos, self.file);
        o.gtid = gtid;
        o.last_committed = Some(lc);
        o.sequence_number = Some(sn);
        o.timestamp = Some(if t_us != 0 { t_us as f64 / 1e6 } else { ts as f64 });
        o.length = Some(g.tx_length()).filter(|&l| l != 0);
        o.events = 1;
        o.start_pos = Some(pos);
        o.end_pos = Some(end);
        self.start(o)
    }

    fn query(&mut self, py: Python<'_>, q: &QueryEvent, pos: u64) -> Step {
        if let Some(c) = self.cur.as_mut() {
            if c.session.is_none() {
                c.session = Some(q.thread_id());
            }
        }
        let schema = q.schema();
        if !schema.is_empty() {
            self.query_db = Some(schema.into_owned());
        }
        let text = q.query();
        if let Some(c) = self.cur.as_mut() {
            // what every transaction has: the rest follows the importer's rules in Python
            if text == "BEGIN" {
                c.standalone = false;
                c.in_body = true;
                return Ok(());
            }
            if text == "COMMIT" {
                self.finish()?;
                return Ok(());
            }
        }
        let (in_txn, ddl_flag, cur_ddl, has_bad) = match &self.cur {
            Some(c) => (true, c.flags & F_DDL != 0, c.ddl, c.bad.is_some()),
            None => (false, false, false, false),
        };
        let r = self.hooks.call_method1(
            py,
            "statement",
            (text.as_ref(), self.query_db.as_deref(), in_txn, ddl_flag, cur_ddl, has_bad),
        )?;
        let (action, query_db, msg, admin, ddl, dbs): (u8, Option<String>, String, bool, bool, Vec<String>) =
            r.extract(py)?;
        self.query_db = query_db;
        match action {
            A_IGNORE => return Ok(()),
            A_PROBLEM => return self.problem(msg, pos),
            A_BEGIN => {
                if let Some(c) = self.cur.as_mut() {
                    c.standalone = false;
                    c.in_body = true;
                }
                return Ok(());
            }
            A_FINISH => {
                self.finish()?;
                return Ok(());
            }
            A_DDL => {
                if let Some(c) = self.cur.as_mut() {
                    c.admin |= admin;
                    c.ddl = ddl;
                    for d in dbs {
                        c.add_db(d);
                    }
                }
                // the catalog changed: key plans are made again
                self.plans.clear();
                self.generation += 1;
            }
            A_PROBLEM_THEN => self.problem(msg, pos)?,
            A_THEN => {}
            _ => return Err(Halt::Py(PyValueError::new_err(format!("unknown statement action {}", action)))),
        }
        if self.cur.as_ref().is_some_and(|c| c.standalone) {
            self.finish()?;
        }
        Ok(())
    }

    fn table_map(&mut self, ev: &Ev, pos: u64) -> Step {
        let d = ev.data;
        // each transaction maps its tables again, nearly always as before: parse only changes
        // (the table id leads the event: 6 bytes, or 4 in a post-header of 6)
        let id_len = if self.fde.get_event_type_header_length(EventType::TABLE_MAP_EVENT) == 6 { 4 } else { 6 };
        let id = (d.len() >= id_len).then(|| d[..id_len].iter().rev().fold(0u64, |a, &b| (a << 8) | b as u64));
        let known = id.is_some_and(|id| self.tables.get(&id).is_some_and(|t| t.raw == d));
        if !known {
            let tme = frame::parse::<TableMapEvent>(&self.fde, d)
                .map_err(fatal_decode(pos, EventType::TABLE_MAP_EVENT as u8))?
                .into_owned();
            let cols = Columns::of(&tme);
            let id = tme.table_id();
            let table = Table {
                raw: d.to_vec(),
                db: tme.database_name().into_owned(),
                name: tme.table_name().into_owned(),
                tme,
                cols,
                plan: None,
            };
            self.tables.insert(id, table);
        }
        if self.cur.is_none() {
            self.problem("Table_map event outside any transaction", pos)?;
        }
        Ok(())
    }

    fn plan(&mut self, py: Python<'_>, id: u64) -> PyResult<Arc<Plan>> {
        let table = self.tables.get_mut(&id).expect("a mapped table");
        if let Some((g, p)) = &table.plan {
            if *g == self.generation {
                return Ok(p.clone());
            }
        }
        let k = (table.db.clone(), table.name.clone());
        let mapped = table.tme.columns_count();
        let plan = match self.plans.get(&k) {
            Some(p) => p.clone(),
            None => {
                let r = self.hooks.call_method1(py, "plan", (&k.0, &k.1, mapped))?;
                let (steps, known, has_pk, fk_parent, ncols): KeyPlan =
                    r.extract(py)?;
                let wanted = steps.as_ref().map(|s| {
                    let top = s.iter().flat_map(|(_, ps)| ps.iter().copied()).max().unwrap_or(0);
                    let mut w = vec![false; top];
                    for p in s.iter().flat_map(|(_, ps)| ps.iter().copied()) {
                        if p >= 1 {
                            w[p - 1] = true;
                        }
                    }
                    w
                });
                // a table without a definition has no key columns: none of its values printed
                let wanted = if known { wanted } else { Some(vec![]) };
                let p = Arc::new(Plan { db: k.0.clone(), name: k.1.clone(), known, steps, has_pk, fk_parent, ncols, wanted });
                self.plans.insert(k, p.clone());
                p
            }
        };
        table.plan = Some((self.generation, plan.clone()));
        Ok(plan)
    }

    fn rows(&mut self, py: Python<'_>, ev: &Ev, pos: u64) -> Step {
        let raw = ev.h.event_type_raw();
        let fde = self.fde.clone();
        let (fde, d) = (&*fde, ev.data);
        // the rows event types Event::read_data reads, parsed as it parses them
        let r = match raw {
            23 => frame::parse::<WriteRowsEventV1>(fde, d).map(RowsEventData::WriteRowsEventV1),
            24 => frame::parse::<UpdateRowsEventV1>(fde, d).map(RowsEventData::UpdateRowsEventV1),
            25 => frame::parse::<DeleteRowsEventV1>(fde, d).map(RowsEventData::DeleteRowsEventV1),
            30 => frame::parse::<WriteRowsEvent>(fde, d).map(RowsEventData::WriteRowsEvent),
            31 => frame::parse::<UpdateRowsEvent>(fde, d).map(RowsEventData::UpdateRowsEvent),
            32 => frame::parse::<DeleteRowsEvent>(fde, d).map(RowsEventData::DeleteRowsEvent),
            _ => frame::parse::<PartialUpdateRowsEvent>(fde, d).map(RowsEventData::PartialUpdateRowsEvent),
        }
        .map_err(fatal_decode(pos, raw))?;
        let id = r.table_id();
        if !self.tables.contains_key(&id) {
            return self.problem(format!("rows event for table id {} with no Table_map", id), pos);
        }
        if self.cur.is_none() {
            return self.problem("rows event outside any transaction", pos);
        }
        let kind = match &r {
            RowsEventData::WriteRowsEventV1(_) | RowsEventData::WriteRowsEvent(_) => b'I',
            RowsEventData::DeleteRowsEventV1(_) | RowsEventData::DeleteRowsEvent(_) => b'D',
            _ => b'U',
        };
        let plan = self.plan(py, id)?;
        let table = &self.tables[&id];
        let images = decode_rows(&r, &table.tme, &table.cols, plan.wanted.as_deref(), ev.data.len() + 1)
            .map_err(|why| Halt::Fatal(pos, why))?;
        let table_name = || format!("{}.{}", plan.db, plan.name);
        for (b, a) in images {
            let cur = self.cur.as_mut().expect("an open transaction");
            cur.rows += 1;
            if cur.bad.is_some() {
                continue;
            }
            if !plan.known {
                // no definition: the trace names the table instead of its keys
                cur.mark(table_name(), true);
                continue;
            }
            let made = match kind {
                b'U' => match (self.keys(py, &plan, b.as_ref(), None)?, self.keys(py, &plan, a.as_ref(), b.as_ref())?) {
                    (Ok(bk), Ok(ak)) => Ok((bk.0, ak.0, [bk.1, ak.1].concat(), bk.2 || ak.2)),
                    (Err(e), _) | (_, Err(e)) => Err(e),
                },
                b'I' => self.keys(py, &plan, a.as_ref(), None)?.map(|k| (vec![], k.0, k.1, k.2)),
                _ => self.keys(py, &plan, b.as_ref(), None)?.map(|k| (vec![], k.0, k.1, k.2)),
            };
            let (bk, ak, unknown, partial) = match made.and_then(|(bk, ak, unknown, partial)| {
                match bk.iter().chain(ak.iter()).find(|k| k.contains(UNPRINTED)) {
                    Some(k) => {
                        let ty = k.split_once(UNPRINTED).map_or("", |x| x.1).split(',').next().unwrap_or("");
                        Err(format!(
                            "a key column of {}.{} has a type whose values the binary reader does not print yet ({})",
                            plan.db, plan.name, ty
                        ))
                    }
                    None => Ok((bk, ak, unknown, partial)),
                }
            }) {
                Ok(k) => k,
                Err(why) => {
                    self.problem(why, pos)?;
                    continue;
                }
            };
            let cur = self.cur.as_mut().expect("an open transaction");
            if !plan.has_pk {
                cur.no_pk = true;
            }
            if plan.fk_parent {
                cur.fk_parent = true;
            }
            for t in unknown {
                cur.mark(t, true);
            }
            if partial {
                let t = table_name();
                self.keys_partial_tables.insert(t.clone());
                cur.mark(t, false);
            }
            cur.add_keys(bk, ak);
        }
        Ok(())
    }

    /// One row image's keys (binlog_text.Reader._row_keys): (keys, tables whose keys are
    /// unknown, whether some key's columns were missing), or the reason there are none (its
    /// ValueError's text). `before`: an UPDATE's before image, for its after image's columns
    /// that a MINIMAL image leaves out.
    #[allow(clippy::type_complexity)]
    fn keys(
        &self,
        py: Python<'_>,
        plan: &Plan,
        img: Option<&Image>,
        before: Option<&Image>,
    ) -> PyResult<Result<(Vec<String>, Vec<String>, bool), String>> {
        let img = match img {
            Some(i) => i,
            None => return Ok(Err(format!("rows event of {}.{} without its row image", plan.db, plan.name))),
        };
        if let (true, Some(steps)) = (plan.known, &plan.steps) {
            if !img.vals.is_empty() && img.top <= plan.ncols {
                let mut out = Vec::with_capacity(steps.len());
                let mut complete = true;
                'steps: for (prefix, positions) in steps {
                    let mut key = String::with_capacity(prefix.len() + 16);
                    key.push_str(prefix);
                    let mut null = false;
                    for (j, p) in positions.iter().enumerate() {
                        match img.get(*p) {
                            Some((_, text, is_null)) => {
                                null |= *is_null;
                                if j > 0 {
                                    key.push(',');
                                }
                                key.push_str(text);
                            }
                            None => {
                                complete = false; // a MINIMAL image: Python's rules decide
                                break 'steps;
                            }
                        }
                    }
                    if !null {
                        out.push(key);
                    }
                }
                if complete {
                    return Ok(Ok((out, vec![], false)));
                }
            }
        }
        // the importer's own code: foreign keys, MINIMAL images, unknown columns, their messages
        let as_dict = |img: &Image| -> PyResult<Bound<'_, PyDict>> {
            let image = PyDict::new_bound(py);
            if img.top > plan.ncols {
                image.set_item(img.top, ("", true))?;
            } else {
                for (p, text, null) in &img.vals {
                    image.set_item(*p, (text, *null))?;
                }
            }
            Ok(image)
        };
        let image = as_dict(img)?;
        let before = before.map(as_dict).transpose()?;
        match self.hooks.call_method1(py, "row_keys", (&plan.db, &plan.name, image, before)) {
            Ok(keys) => Ok(Ok(keys.extract(py)?)),
            Err(e) if e.is_instance_of::<PyValueError>(py) => Ok(Err(e.value_bound(py).str()?.to_string())),
            Err(e) => Err(e),
        }
    }
}

/// Every row of a rows event as (before image, after image), only the `wanted` columns
/// printed; `most`: more rows than this is a damaged event whose rows take no bytes.
pub(crate) fn decode_rows(
    r: &RowsEventData,
    tme: &TableMapEvent,
    cols: &Columns,
    wanted: Option<&[bool]>,
    most: usize,
) -> Result<Vec<RowImages>, String> {
    let row_err = |e: io::Error| format!("cannot decode a row: {}", e);
    let mut out = Vec::new();
    if let RowsEventData::PartialUpdateRowsEvent(_) = r {
        // partial JSON updates: mysql_common decodes their shared image
        let present = |bits: Option<&bitvec::slice::BitSlice<u8>>| -> Vec<usize> {
            bits.map(|b| b.iter_ones().collect()).unwrap_or_default()
        };
        let (bc, ac) = (present(r.columns_before_image()), present(r.columns_after_image()));
        for (k, row) in r.rows(tme).enumerate() {
            if k > most {
                return Err("corrupt rows event (rows of no bytes)".into());
            }
            let (b, a) = row.map_err(row_err)?;
            out.push((
                b.map(|b| image_of_row(&b, &bc, cols, wanted)),
                a.map(|a| image_of_row(&a, &ac, cols, wanted)),
            ));
        }
        return Ok(out);
    }
    let n = r.num_columns() as usize;
    let (bc, ac) = (r.columns_before_image(), r.columns_after_image());
    let mut buf = ParseBuf(r.rows_data());
    let mut k = 0;
    while !buf.0.is_empty() {
        if k > most {
            return Err("corrupt rows event (rows of no bytes)".into());
        }
        k += 1;
        let b = bc.map(|bits| read_image(&mut buf, cols, bits, n, wanted)).transpose().map_err(row_err)?;
        let a = ac.map(|bits| read_image(&mut buf, cols, bits, n, wanted)).transpose().map_err(row_err)?;
        out.push((b, a));
    }
    Ok(out)
}

impl TxnReader {
    /// Reads up to `n` events from `stream` (taken out of `self` so that an event framed in
    /// its buffer can be read while `self` changes).
    fn run(&mut self, py: Python<'_>, stream: &mut BufReader<File>, n: usize) -> PyResult<()> {
        for _ in 0..n {
            if self.done {
                break;
            }
            let at = self.offset;
            let buf = match stream.fill_buf() {
                Ok([]) => {
                    self.end_of_file()?;
                    break;
                }
                Ok(buf) => buf,
                Err(e) => {
                    self.fatal(at, format!("truncated or corrupt event: {}", e))?;
                    break;
                }
            };
            // mysql_common may panic on some damaged input: that is a corrupt event, not a crash
            if let Some((ev, size)) = frame::frame(buf, &self.fde) {
                if frame::has_checksum(&self.fde) {
                    if let Err(why) = frame::check_crc(ev.bytes().expect("framed in place")) {
                        self.fatal(at, why)?;
                        break;
                    }
                }
                let done = catch_unwind(AssertUnwindSafe(|| self.event(py, &ev)));
                stream.consume(size);
                if !self.outcome(done, at)? {
                    break;
                }
                continue;
            }
            // an event larger than the buffer: its header's size is read first, and one that
            // ends past the file's end is damage, not a buffer to allocate (mysql_common's
            // `Event::read` reserves the size it is told: gigabytes for a damaged field, and a
            // failed allocation aborts the process)
            if let Some(claimed) = buf.get(9..13).map(|b| u32::from_le_bytes(b.try_into().unwrap()) as u64) {
                let file_len = stream.get_ref().metadata().map_or(u64::MAX, |m| m.len());
                if at.saturating_add(claimed) > file_len {
                    self.fatal(
                        at,
                        format!(
                            "truncated or corrupt event: its header says {} bytes, past the file's end at {}",
                            claimed, file_len
                        ),
                    )?;
                    break;
                }
            }
            let ev = match catch_unwind(AssertUnwindSafe(|| Event::read(&self.fde, &mut *stream))) {
                Ok(Ok(ev)) => ev,
                Ok(Err(e)) => {
                    self.fatal(at, format!("truncated or corrupt event: {}", e))?;
                    break;
                }
                Err(_) => {
                    self.fatal(at, "truncated or corrupt event".into())?;
                    break;
                }
            };
            if let (Some(stored), Ok(Some(alg))) = (ev.checksum(), self.fde.footer().get_checksum_alg()) {
                let is_fde = ev.header().event_type_raw() == EventType::FORMAT_DESCRIPTION_EVENT as u8;
                if !is_fde && alg != BinlogChecksumAlg::BINLOG_CHECKSUM_ALG_OFF {
                    let computed = ev.calc_checksum(alg);
                    if u32::from_le_bytes(stored) != computed {
                        self.fatal(at, frame::crc_mismatch(u32::from_le_bytes(stored), computed))?;
                        break;
                    }
                }
            }
            let done = catch_unwind(AssertUnwindSafe(|| self.event(py, &Ev::of(&ev))));
            if !self.outcome(done, at)? {
                break;
            }
        }
        Ok(())
    }

    /// What reading the event at `at` came to: whether to read on.
    fn outcome(&mut self, done: std::thread::Result<Step>, at: u64) -> PyResult<bool> {
        match done {
            Ok(Ok(())) => Ok(true),
            Ok(Err(Halt::Py(e))) => Err(e),
            Ok(Err(Halt::Fatal(p, why))) => {
                self.fatal(p, why)?;
                Ok(false)
            }
            Err(_) => {
                self.fatal(at, "corrupt event (the parser gave up on it)".into())?;
                Ok(false)
            }
        }
    }
}

#[pymethods]
impl TxnReader {
    /// `hooks`: binlog_binary._Hooks; `file`, `rotated`, `start_file`: binlog_text.Reader's.
    #[new]
    #[pyo3(signature = (path, hooks, strict, file, rotated, start_file))]
    fn new(path: &str, hooks: PyObject, strict: bool, file: u64, rotated: bool, start_file: Option<u64>) -> PyResult<Self> {
        let f = File::open(path).map_err(|e| PyOSError::new_err(e.to_string()))?;
        let mut stream = BufReader::with_capacity(1 << 20, f);
        let mut magic = [0u8; 4];
        stream
            .read_exact(&mut magic)
            .map_err(|_| PyValueError::new_err("binlog position 0: shorter than the 4-byte magic"))?;
        if magic != [0xfe, b'b', b'i', b'n'] {
            return Err(PyValueError::new_err("binlog position 0: not a binary binlog (no \\xfebin magic)"));
        }
        Ok(TxnReader {
            stream: Some(stream),
            fde: Arc::new(FormatDescriptionEvent::new(BinlogVersion::Version4)),
            offset: 4,
            done: false,
            strict,
            hooks,
            tables: HashMap::new(),
            plans: HashMap::new(),
            generation: 0,
            cur: None,
            query_db: None,
            file,
            rotated,
            start_file,
            server_version: None,
            mariadb_gtids: 0,
            mysql_gtids: 0,
            skipped: Vec::new(),
            batch: Batch::default(),
            keys_partial_tables: HashSet::new(),
            ignorable_skipped: 0,
            last_clock: None,
            zstd: None,
            inner_fde: None,
        })
    }

    /// The transactions finished in the next `n` events, numbered from `seq` + 1, with the
    /// previous transaction's commit id: (their trace lines, how many, commit groups begun,
    /// the last commit id, standalone DDL, the highest file index); None after the end.
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (n, seq, last_commit_id))]
    fn next_batch(
        &mut self,
        py: Python<'_>,
        n: usize,
        seq: u64,
        last_commit_id: Option<u64>,
    ) -> PyResult<Option<(String, u64, u64, Option<u64>, u64, u64)>> {
        if self.done {
            return Ok(None);
        }
        self.batch = Batch { seq, last_commit_id, ..Default::default() };
        let mut stream = self.stream.take().expect("the stream, put back after each batch");
        let read = self.run(py, &mut stream, n);
        self.stream = Some(stream);
        read?;
        let b = std::mem::take(&mut self.batch);
        Ok(Some((b.text, b.count, b.groups, b.last_commit_id, b.ddl, b.last_file)))
    }

    /// Transactions left out (not strict): (binlog position, gtid, reason, outside any).
    fn take_skipped(&mut self) -> Vec<(u64, Option<String>, String, bool)> {
        std::mem::take(&mut self.skipped)
    }

    /// Bytes read so far (for progress).
    #[getter]
    fn offset(&self) -> u64 {
        self.offset
    }
}

#[pymodule]
fn commitsched_binlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Panics are caught and turned into problems above: keep their text off stderr.
    std::panic::set_hook(Box::new(|_| {}));
    m.add_class::<TxnReader>()?;
    m.add_class::<blocks::BlockDecoder>()?;
    m.add_function(wrap_pyfunction!(compressed::zstd_compress, m)?)?;
    m.add("BinlogProblem", m.py().get_type_bound::<BinlogProblem>())?;
    Ok(())
}

// See Cargo.toml: the allocator of every value the reader builds.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
