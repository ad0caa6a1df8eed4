//! Binary binlog events for commitsched's importer (model/importers/binlog_binary.py).
//!
//! `mysql_common`'s binlog module does the parsing (event framing, checksums, format description,
//! GTID / Query / Table_map / Rows / Xid / Rotate events, row images with their column bitmaps);
//! this crate only turns each event into a small Python tuple, in batches, and prints row values
//! the way `mysqlbinlog -vv` / `mariadb-binlog -vv` print them, so that row keys come out exactly
//! as the text importer makes them. MariaDB's GTID event (type 162), which mysql_common does not
//! know, is read from its 13-21 byte body here.
//!
//! Event tuples: (kind, pos, end_log_pos, timestamp, ...kind-specific fields); the kinds are the
//! K_* constants, mirrored in binlog_binary.py.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::panic::{catch_unwind, AssertUnwindSafe};

use mysql_common::binlog::consts::{BinlogVersion, EventType};
use mysql_common::binlog::events::{EventData, RowsEventData, TableMapEvent};
use mysql_common::binlog::row::BinlogRow;
use mysql_common::binlog::value::BinlogValue;
use mysql_common::binlog::EventStreamReader;
use mysql_common::constants::ColumnType;
use mysql_common::value::Value;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

const K_START: u8 = 0;
const K_GTID_MARIADB: u8 = 1;
const K_GTID_MYSQL: u8 = 2;
const K_QUERY: u8 = 3;
const K_TABLE_MAP: u8 = 4;
const K_ROWS: u8 = 5;
const K_XID: u8 = 6;
const K_ROTATE: u8 = 7;
const K_OTHER: u8 = 8;
const K_INCIDENT: u8 = 9;
const K_UNSUPPORTED: u8 = 10;

const MARIADB_GTID_EVENT: u8 = 162;
const MARIADB_ANNOTATE_ROWS_EVENT: u8 = 160;
const FL_GROUP_COMMIT_ID: u8 = 2;
/// A value the reader does not print yet (a NUL cannot come out of a printed string): the
/// importer refuses it only when a row key needs it.
const UNPRINTED: &str = "\u{0}?";

#[pyclass]
struct EventReader {
    stream: BufReader<File>,
    events: EventStreamReader,
    tables: HashMap<u64, TableMapEvent<'static>>,
    offset: u64,
    /// (db, table) -> the 0-based columns the importer needs (its key columns): row images of
    /// these tables carry only those, sparing the printing of every other value.
    wanted: HashMap<(String, String), Vec<usize>>,
}

fn uint_width(ty: ColumnType) -> Option<u32> {
    match ty {
        ColumnType::MYSQL_TYPE_TINY => Some(8),
        ColumnType::MYSQL_TYPE_SHORT | ColumnType::MYSQL_TYPE_YEAR => Some(16),
        ColumnType::MYSQL_TYPE_INT24 => Some(24),
        ColumnType::MYSQL_TYPE_LONG => Some(32),
        ColumnType::MYSQL_TYPE_LONGLONG => Some(64),
        _ => None,
    }
}

/// `my_b_write_quoted`: bytes below 0x20 as \xNN, the rest as they are, between quotes.
fn quoted(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() + 2);
    out.push(b'\'');
    for &b in bytes {
        if b < 0x20 {
            out.extend_from_slice(format!("\\x{:02x}", b).as_bytes());
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
    String::from_utf8_lossy(&out).into_owned()
}

/// A column value as the printer shows it after `@N=` (without the -vv type comment).
fn printed(value: &BinlogValue, ty: ColumnType) -> (String, bool) {
    match value {
        BinlogValue::Value(Value::NULL) => ("NULL".to_string(), true),
        BinlogValue::Value(Value::Int(i)) => {
            // the printer shows a negative value with its unsigned reading: -1 (4294967295)
            if *i < 0 {
                if let Some(bits) = uint_width(ty) {
                    let u = if bits == 64 { *i as u64 } else { (*i as u64) & ((1u64 << bits) - 1) };
                    return (format!("{} ({})", i, u), false);
                }
            }
            (i.to_string(), false)
        }
        BinlogValue::Value(Value::UInt(u)) => {
            if let Some(bits) = uint_width(ty) {
                let top = if bits == 64 { 1u64 << 63 } else { 1u64 << (bits - 1) };
                if *u >= top {
                    let signed = if bits == 64 { *u as i64 } else { (*u as i64) - (1i64 << bits) };
                    return (format!("{} ({})", signed, u), false);
                }
            }
            (u.to_string(), false)
        }
        BinlogValue::Value(Value::Bytes(b)) => match ty {
            ColumnType::MYSQL_TYPE_VARCHAR
            | ColumnType::MYSQL_TYPE_VAR_STRING
            | ColumnType::MYSQL_TYPE_STRING
            | ColumnType::MYSQL_TYPE_BLOB
            | ColumnType::MYSQL_TYPE_TINY_BLOB
            | ColumnType::MYSQL_TYPE_MEDIUM_BLOB
            | ColumnType::MYSQL_TYPE_LONG_BLOB => (quoted(b), false),
            ColumnType::MYSQL_TYPE_NEWDECIMAL => (String::from_utf8_lossy(b).into_owned(), false),
            _ => (format!("{}{:?}", UNPRINTED, ty), false),
        },
        _ => (format!("{}{:?}", UNPRINTED, ty), false),
    }
}

/// One row image as {column position (1-based, as `@N`): (text, is_null)}, only the `wanted`
/// columns when given.
fn image<'py>(
    py: Python<'py>,
    row: &BinlogRow,
    present: &[usize],
    tme: &TableMapEvent,
    wanted: Option<&Vec<usize>>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new_bound(py);
    for (k, &col) in present.iter().enumerate() {
        if let Some(w) = wanted {
            if !w.contains(&col) {
                continue;
            }
        }
        if let Some(v) = row.as_ref(k) {
            let ty = tme
                .get_column_type(col)
                .ok()
                .flatten()
                .unwrap_or(ColumnType::MYSQL_TYPE_NULL);
            let (text, null) = printed(v, ty);
            out.set_item(col + 1, (text, null))?;
        }
    }
    Ok(out)
}

fn bad(offset: u64, msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("binlog position {}: {}", offset, msg))
}

impl EventReader {
    fn event_tuple(&mut self, py: Python<'_>, ev: &mysql_common::binlog::events::Event) -> PyResult<PyObject> {
        let h = ev.header();
        let end = h.log_pos() as u64;
        let size = h.event_size() as u64;
        let pos = self.offset;
        self.offset += size;
        let ts = h.timestamp();
        let raw = h.event_type_raw();
        if raw == MARIADB_GTID_EVENT {
            let d = ev.data();
            if d.len() < 13 {
                return Err(bad(pos, "MariaDB GTID event shorter than 13 bytes"));
            }
            let seq = u64::from_le_bytes(d[0..8].try_into().unwrap());
            let domain = u32::from_le_bytes(d[8..12].try_into().unwrap());
            let flags = d[12];
            let cid = if flags & FL_GROUP_COMMIT_ID != 0 {
                if d.len() < 21 {
                    return Err(bad(pos, "MariaDB GTID event with a commit id flag but no commit id"));
                }
                Some(u64::from_le_bytes(d[13..21].try_into().unwrap()))
            } else {
                None
            };
            let gtid = format!("{}-{}-{}", domain, h.server_id(), seq);
            return Ok((K_GTID_MARIADB, pos, end, ts, gtid, cid, flags).into_py(py));
        }
        if raw == MARIADB_ANNOTATE_ROWS_EVENT {
            return Ok((K_OTHER, pos, end, ts, raw).into_py(py));
        }
        if (163..=171).contains(&raw) && raw >= 165 {
            // MariaDB compressed Query / Rows events
            return Ok((K_UNSUPPORTED, pos, end, ts, raw).into_py(py));
        }
        let data = match ev.read_data() {
            Ok(d) => d,
            Err(e) => return Err(bad(pos, format!("cannot decode event type {}: {}", raw, e))),
        };
        Ok(match data {
            Some(EventData::FormatDescriptionEvent(f)) => {
                let v = f.server_version().trim_end_matches('\0').to_string();
                (K_START, pos, end, ts, v).into_py(py)
            }
            Some(EventData::GtidEvent(g)) | Some(EventData::AnonymousGtidEvent(mysql_common::binlog::events::AnonymousGtidEvent(g))) => {
                let gtid: Option<String> = if raw == EventType::ANONYMOUS_GTID_EVENT as u8 {
                    None
                } else {
                    let s = g.sid();
                    let hex: String = s.iter().map(|b| format!("{:02x}", b)).collect();
                    Some(format!(
                        "{}-{}-{}-{}-{}:{}",
                        &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32], g.gno()
                    ))
                };
                let opt = |v: u64| if v == 0 { None } else { Some(v) };
                (
                    K_GTID_MYSQL,
                    pos,
                    end,
                    ts,
                    gtid,
                    g.last_committed(),
                    g.sequence_number(),
                    opt(g.tx_length()),
                    opt(g.original_commit_timestamp()),
                    opt(g.immediate_commit_timestamp()),
                )
                    .into_py(py)
            }
            Some(EventData::QueryEvent(q)) => (
                K_QUERY,
                pos,
                end,
                ts,
                q.thread_id(),
                q.schema().into_owned(),
                q.query().into_owned(),
            )
                .into_py(py),
            Some(EventData::TableMapEvent(t)) => {
                let t = t.into_owned();
                let out = (
                    K_TABLE_MAP,
                    pos,
                    end,
                    ts,
                    t.table_id(),
                    t.database_name().into_owned(),
                    t.table_name().into_owned(),
                )
                    .into_py(py);
                self.tables.insert(t.table_id(), t);
                out
            }
            Some(EventData::RowsEvent(r)) => {
                let kind = match &r {
                    RowsEventData::WriteRowsEventV1(_) | RowsEventData::WriteRowsEvent(_) => "I",
                    RowsEventData::DeleteRowsEventV1(_) | RowsEventData::DeleteRowsEvent(_) => "D",
                    _ => "U",
                };
                let tid = r.table_id();
                let tme = match self.tables.get(&tid) {
                    Some(t) => t,
                    None => {
                        return Ok((K_ROWS, pos, end, ts, tid, kind, PyList::empty_bound(py), false, false, 0usize).into_py(py))
                    }
                };
                let present = |bits: &bitvec::slice::BitSlice<u8>| -> Vec<usize> { bits.iter_ones().collect() };
                let (before_cols, after_cols) = match &r {
                    RowsEventData::WriteRowsEventV1(e) => (vec![], present(e.columns_after_image())),
                    RowsEventData::WriteRowsEvent(e) => (vec![], present(e.columns_after_image())),
                    RowsEventData::DeleteRowsEventV1(e) => (present(e.columns_before_image()), vec![]),
                    RowsEventData::DeleteRowsEvent(e) => (present(e.columns_before_image()), vec![]),
                    RowsEventData::UpdateRowsEventV1(e) => (present(e.columns_before_image()), present(e.columns_after_image())),
                    RowsEventData::UpdateRowsEvent(e) => (present(e.columns_before_image()), present(e.columns_after_image())),
                    RowsEventData::PartialUpdateRowsEvent(e) => (present(e.columns_before_image()), present(e.columns_after_image())),
                };
                let wanted = self
                    .wanted
                    .get(&(tme.database_name().into_owned(), tme.table_name().into_owned()));
                // the highest column position in the images: the importer checks it against
                // the table's definition even when only key columns come back
                let top = before_cols.iter().chain(after_cols.iter()).max().map_or(0, |c| c + 1);
                let rows = PyList::empty_bound(py);
                // every real row takes at least a byte: more rows than bytes is a damaged event
                // whose rows take none (the iterator would never end)
                let most = ev.data().len() + 1;
                for (k, row) in r.rows(tme).enumerate() {
                    if k > most {
                        return Err(bad(pos, "corrupt rows event (rows of no bytes)"));
                    }
                    let (b, a) = row.map_err(|e| bad(pos, format!("cannot decode a row: {}", e)))?;
                    let b = match b {
                        Some(b) => image(py, &b, &before_cols, tme, wanted)?.into_py(py),
                        None => py.None(),
                    };
                    let a = match a {
                        Some(a) => image(py, &a, &after_cols, tme, wanted)?.into_py(py),
                        None => py.None(),
                    };
                    rows.append((b, a))?;
                }
                (K_ROWS, pos, end, ts, tid, kind, rows, true, wanted.is_some(), top).into_py(py)
            }
            Some(EventData::XidEvent(_)) => (K_XID, pos, end, ts).into_py(py),
            Some(EventData::RotateEvent(r)) => (K_ROTATE, pos, end, ts, r.name().into_owned()).into_py(py),
            Some(EventData::IncidentEvent(_)) => (K_INCIDENT, pos, end, ts).into_py(py),
            Some(EventData::TransactionPayloadEvent(_)) => (K_UNSUPPORTED, pos, end, ts, raw).into_py(py),
            _ => (K_OTHER, pos, end, ts, raw).into_py(py),
        })
    }
}

#[pymethods]
impl EventReader {
    #[new]
    fn new(path: &str) -> PyResult<Self> {
        let file = File::open(path).map_err(|e| PyOSError::new_err(e.to_string()))?;
        let mut stream = BufReader::with_capacity(1 << 20, file);
        let mut magic = [0u8; 4];
        stream
            .read_exact(&mut magic)
            .map_err(|_| PyValueError::new_err("binlog position 0: shorter than the 4-byte magic"))?;
        if magic != [0xfe, b'b', b'i', b'n'] {
            return Err(PyValueError::new_err("binlog position 0: not a binary binlog (no \\xfebin magic)"));
        }
        Ok(EventReader {
            stream,
            events: EventStreamReader::new(BinlogVersion::Version4),
            tables: HashMap::new(),
            offset: 4,
            wanted: HashMap::new(),
        })
    }

    /// From now on, row images of `db`.`table` carry only these columns (1-based positions).
    fn want(&mut self, db: String, table: String, positions: Vec<usize>) {
        self.wanted.insert((db, table), positions.iter().map(|p| p.saturating_sub(1)).collect());
    }

    /// Full row images again for every table (the table definitions changed).
    fn want_all(&mut self) {
        self.wanted.clear();
    }

    /// Up to `n` event tuples, or None at the end of the file.
    fn next_batch(&mut self, py: Python<'_>, n: usize) -> PyResult<Option<PyObject>> {
        let out = PyList::empty_bound(py);
        for _ in 0..n {
            // mysql_common may panic on some damaged input: that is a corrupt event, not a crash
            let at = self.offset;
            let read = catch_unwind(AssertUnwindSafe(|| self.events.read(&mut self.stream)));
            let ev = match read {
                Ok(Ok(Some(ev))) => ev,
                Ok(Ok(None)) => break,
                Ok(Err(e)) => return Err(bad(at, format!("truncated or corrupt event: {}", e))),
                Err(_) => return Err(bad(at, "truncated or corrupt event")),
            };
            let t = match catch_unwind(AssertUnwindSafe(|| self.event_tuple(py, &ev))) {
                Ok(t) => t?,
                Err(_) => return Err(bad(at, "corrupt event (the parser gave up on it)")),
            };
            out.append(t)?;
        }
        if out.is_empty() {
            return Ok(None);
        }
        Ok(Some(out.into_py(py)))
    }

    /// Bytes read so far (for progress).
    #[getter]
    fn offset(&self) -> u64 {
        self.offset
    }
}

#[pymodule]
fn commitsched_binlog(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Panics are caught and turned into ValueError above: keep their text off stderr.
    std::panic::set_hook(Box::new(|_| {}));
    m.add_class::<EventReader>()?;
    Ok(())
}
