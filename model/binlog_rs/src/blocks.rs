//! The events of `BINLOG '...'` statements: what `mysqlbinlog` / `mariadb-binlog` print
//! without `-v` (rows only in base64), decoded by the same parser as binary files, for the
//! text importer (binlog_text.py). Each statement holds whole events (the format description,
//! or a table map and its rows events); the table maps of one input are kept for its rows.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use mysql_common::binlog::consts::BinlogVersion;
use mysql_common::binlog::events::{Event, EventData, FormatDescriptionEvent, RowsEventData, TableMapEvent};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::decode_rows;
use crate::values::{Columns, Image};

const HEADER_LEN: usize = 19;

#[pyclass]
pub struct BlockDecoder {
    fde: FormatDescriptionEvent<'static>,
    tables: HashMap<u64, (TableMapEvent<'static>, Columns)>,
}

fn image_dict<'py>(py: Python<'py>, img: &Option<Image>) -> PyResult<PyObject> {
    Ok(match img {
        None => py.None(),
        Some(img) => {
            let d = PyDict::new_bound(py);
            for (p, text, null) in &img.vals {
                d.set_item(*p, (text, *null))?;
            }
            d.into_py(py)
        }
    })
}

#[pymethods]
impl BlockDecoder {
    #[new]
    fn new() -> Self {
        BlockDecoder { fde: FormatDescriptionEvent::new(BinlogVersion::Version4), tables: HashMap::new() }
    }

    /// The rows events of one statement's bytes, as [(kind "INSERT INTO" / "UPDATE" /
    /// "DELETE FROM", db, table, [(before, after)])], each image {position: (text, is NULL)} as
    /// `-vv` prints it; ValueError names what could not be decoded.
    fn feed(&mut self, py: Python<'_>, data: &[u8]) -> PyResult<PyObject> {
        let out = PyList::empty_bound(py);
        self.events(py, data, &out, false)?;
        Ok(out.into_py(py))
    }
}

impl BlockDecoder {
    /// Reads the events of `data` into `out`; `inner`: the events of a compressed transaction
    /// (Transaction_payload), which carry no checksum.
    fn events(&mut self, py: Python<'_>, data: &[u8], out: &Bound<'_, PyList>, inner: bool) -> PyResult<()> {
        let mut at = 0usize;
        while at < data.len() {
            if data.len() - at < HEADER_LEN {
                return Err(PyValueError::new_err(format!("event at byte {} of the statement is truncated", at)));
            }
            let size = u32::from_le_bytes(data[at + 9..at + 13].try_into().unwrap()) as usize;
            if size < HEADER_LEN || size > data.len() - at {
                return Err(PyValueError::new_err(format!("event at byte {} of the statement is truncated", at)));
            }
            let bytes = &data[at..at + size];
            at += size;
            let plain_fde;
            let fde = if inner {
                plain_fde = crate::compressed::without_checksums(&self.fde);
                &plain_fde
            } else {
                &self.fde
            };
            let ev = match catch_unwind(AssertUnwindSafe(|| Event::read(fde, bytes))) {
                Ok(Ok(ev)) => ev,
                Ok(Err(e)) => return Err(PyValueError::new_err(format!("corrupt event: {}", e))),
                Err(_) => return Err(PyValueError::new_err("corrupt event")),
            };
            if ev.header().event_type_raw() == 40 {
                if inner {
                    return Err(PyValueError::new_err("a compressed transaction inside another"));
                }
                let events = match ev.read_data() {
                    Ok(Some(EventData::TransactionPayloadEvent(t))) => crate::compressed::payload_events(&t, &mut None),
                    Ok(_) => Err("not a Transaction_payload event".to_string()),
                    Err(e) => Err(format!("cannot decode event type 40: {}", e)),
                }
                .map_err(|why| PyValueError::new_err(format!("compressed transaction: {}", why)))?;
                self.events(py, &events, out, true)?;
                continue;
            }
            let raw = ev.header().event_type_raw();
            let ev = match crate::compressed::plain_type(raw) {
                Some(_) => crate::compressed::uncompress(&ev, &self.fde)
                    .map_err(|why| PyValueError::new_err(format!("compressed event (type {}): {}", raw, why)))?,
                None => ev,
            };
            let decoded = catch_unwind(AssertUnwindSafe(|| -> Result<Option<PyObject>, String> {
                let data = ev.read_data().map_err(|e| format!("cannot decode event type {}: {}", raw, e))?;
                match data {
                    Some(EventData::FormatDescriptionEvent(f)) => {
                        self.fde = f.into_owned();
                        Ok(None)
                    }
                    Some(EventData::TableMapEvent(t)) => {
                        let t = t.into_owned();
                        let cols = Columns::of(&t);
                        self.tables.insert(t.table_id(), (t, cols));
                        Ok(None)
                    }
                    Some(EventData::RowsEvent(r)) => {
                        let kind = match &r {
                            RowsEventData::WriteRowsEventV1(_) | RowsEventData::WriteRowsEvent(_) => "INSERT INTO",
                            RowsEventData::DeleteRowsEventV1(_) | RowsEventData::DeleteRowsEvent(_) => "DELETE FROM",
                            _ => "UPDATE",
                        };
                        let (tme, cols) = self
                            .tables
                            .get(&r.table_id())
                            .ok_or_else(|| format!("rows event for table id {} with no Table_map", r.table_id()))?;
                        let rows = decode_rows(&r, tme, cols, None, ev.data().len() + 1)?;
                        let list = PyList::empty_bound(py);
                        for (b, a) in &rows {
                            let pair = (image_dict(py, b).map_err(|e| e.to_string())?,
                                        image_dict(py, a).map_err(|e| e.to_string())?);
                            list.append(pair).map_err(|e| e.to_string())?;
                        }
                        let item = (kind, tme.database_name().into_owned(), tme.table_name().into_owned(), list);
                        Ok(Some(item.into_py(py)))
                    }
                    _ => Ok(None),
                }
            }));
            match decoded {
                Ok(Ok(Some(item))) => out.append(item)?,
                Ok(Ok(None)) => {}
                Ok(Err(why)) => return Err(PyValueError::new_err(why)),
                Err(_) => return Err(PyValueError::new_err(format!("corrupt event of type {}", raw))),
            }
        }
        Ok(())
    }
}
