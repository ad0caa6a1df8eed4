//! MySQL's compressed transactions (`binlog_transaction_compression=ON`, 8.0.20+): one
//! Transaction_payload event (40) holding the transaction's events after its GTID, compressed
//! with zstd; `mysql_common` parses the event and uncompresses it (through the `zstd` crate,
//! bindings to the reference library, which the crate's binlog feature already builds). The
//! events inside carry no checksum (WL#3549): the payload event's own covers them.
//!
//! MariaDB's compressed events (`log_bin_compress=ON`): Query_compressed (165) and the
//! compressed rows events (166-168 v1, 169-171 v2), which `mysql_common` does not know. Each is
//! rebuilt as the plain event it compresses (Query 2, rows 23-25 / 30-32) and read as that.
//!
//! The compressed part (MariaDB sql/log_event.cc, binlog_buf_uncompress): one byte 0x80 |
//! algorithm << 4 | n, then the uncompressed length in n (1-4) bytes, high byte first, then a
//! zlib stream (algorithm 0, the only one). A query event compresses its statement text; a rows
//! event its rows, after the column count and bitmaps, which stay as they are.

use std::io::Read;

use std::panic::{catch_unwind, AssertUnwindSafe};

use flate2::read::ZlibDecoder;
use mysql_common::binlog::consts::TransactionPayloadCompressionType;
use mysql_common::binlog::events::{Event, FormatDescriptionEvent, TransactionPayloadEvent};
use zstd::bulk::Decompressor;

const HEADER_LEN: usize = 19;
const QUERY_COMPRESSED: u8 = 165;

/// The plain event type a compressed one stands for.
pub fn plain_type(raw: u8) -> Option<u8> {
    match raw {
        165 => Some(2),
        166..=168 => Some(raw - 166 + 23),
        169..=171 => Some(raw - 169 + 30),
        _ => None,
    }
}

fn inflate(body: &[u8]) -> Result<Vec<u8>, String> {
    let first = *body.first().ok_or("empty compressed body")?;
    let n = (first & 0x07) as usize;
    if first & 0x80 == 0 || (first & 0x70) != 0 || !(1..=4).contains(&n) || body.len() < 1 + n {
        return Err(format!("unknown compressed body header 0x{:02x}", first));
    }
    let len = body[1..1 + n].iter().fold(0usize, |a, &b| (a << 8) | b as usize);
    let mut out = Vec::with_capacity(len.min(1 << 26));
    ZlibDecoder::new(&body[1 + n..])
        .take(len as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot uncompress: {}", e))?;
    if out.len() != len {
        return Err(format!("uncompressed {} bytes where the event says {}", out.len(), len));
    }
    Ok(out)
}

/// A packed integer (MySQL's length-encoded int) at `d[at..]`: (value, bytes it takes).
fn packed(d: &[u8], at: usize) -> Option<(u64, usize)> {
    let b = *d.get(at)?;
    let (n, skip) = match b {
        0..=250 => return Some((b as u64, 1)),
        252 => (2, 1),
        253 => (3, 1),
        254 => (8, 1),
        _ => return None,
    };
    let bytes = d.get(at + skip..at + skip + n)?;
    Some((bytes.iter().rev().fold(0u64, |a, &x| (a << 8) | x as u64), skip + n))
}

/// The plain event that compressed event `ev` stands for.
pub fn uncompress(ev: &Event, fde: &FormatDescriptionEvent) -> Result<Event, String> {
    let h = ev.header();
    let raw = h.event_type_raw();
    let plain = plain_type(raw).ok_or("not a compressed event")?;
    let d = ev.data();
    let post = *fde.event_type_header_lengths().get(raw as usize - 1).ok_or("no post-header length for the event")? as usize;
    let short = || "compressed event shorter than its header".to_string();
    // the part kept as it is, then the compressed part
    let keep = if raw == QUERY_COMPRESSED {
        let db_len = *d.get(8).ok_or_else(short)? as usize;
        let status_len = u16::from_le_bytes(d.get(11..13).ok_or_else(short)?.try_into().unwrap()) as usize;
        post + status_len + db_len + 1
    } else {
        let mut at = post;
        if raw >= 169 {
            // v2: the extra data's length (itself included) ends the post-header
            let extra = u16::from_le_bytes(d.get(post - 2..post).ok_or_else(short)?.try_into().unwrap()) as usize;
            at += extra.saturating_sub(2);
        }
        let (width, skip) = packed(d, at).ok_or_else(short)?;
        let bitmap = (width as usize).div_ceil(8);
        at + skip + bitmap * if matches!(raw, 167 | 170) { 2 } else { 1 }
    };
    if keep > d.len() {
        return Err(short());
    }
    let body = inflate(&d[keep..])?;
    let checksum = ev.checksum();
    let size = HEADER_LEN + keep + body.len() + checksum.map_or(0, |c| c.len());
    let mut bytes = Vec::with_capacity(size);
    bytes.extend_from_slice(&h.timestamp().to_le_bytes());
    bytes.push(plain);
    bytes.extend_from_slice(&h.server_id().to_le_bytes());
    bytes.extend_from_slice(&(size as u32).to_le_bytes());
    bytes.extend_from_slice(&h.log_pos().to_le_bytes());
    bytes.extend_from_slice(&h.flags_raw().to_le_bytes());
    bytes.extend_from_slice(&d[..keep]);
    bytes.extend_from_slice(&body);
    if let Some(c) = checksum {
        bytes.extend_from_slice(&c); // not checked: what the plain event would hold
    }
    Event::read(fde, &bytes[..]).map_err(|e| format!("cannot read the uncompressed event: {}", e))
}

/// No transaction payload is larger than the largest event a server writes or reads
/// (max_allowed_packet's ceiling, 1 GiB): a bigger claimed size is damage, not allocated.
const MOST_UNCOMPRESSED: u64 = 1 << 30;
/// Payloads up to this size are uncompressed in one call into a buffer of the size stated.
const BULK_MOST: u64 = 64 << 20;

/// The events a Transaction_payload event holds, uncompressed, checked against the size it
/// states. `dctx`: a zstd decompression context kept from one transaction to the next (a new
/// one per transaction, as `TransactionPayloadEvent::decompressed` makes, allocates and sets up
/// its tables every time).
pub fn payload_events(tpe: &TransactionPayloadEvent, dctx: &mut Option<Decompressor<'static>>) -> Result<Vec<u8>, String> {
    let want = tpe.uncompressed_size();
    if want > MOST_UNCOMPRESSED {
        return Err(format!("says it uncompresses to {} bytes, over 1 GiB", want));
    }
    if tpe.algorithm() == TransactionPayloadCompressionType::NONE {
        return Ok(tpe.payload_raw().to_vec());
    }
    if want == 0 || want > BULK_MOST {
        // no size stated, or a large one (a damaged field must not reserve a gigabyte before a
        // byte is read): the stream as it comes, up to the ceiling
        let mut out = Vec::new();
        let reader = tpe.decompressed().map_err(|e| format!("cannot uncompress: {}", e))?;
        let cap = if want == 0 { MOST_UNCOMPRESSED } else { want };
        reader.take(cap + 1).read_to_end(&mut out).map_err(|e| format!("cannot uncompress: {}", e))?;
        if want != 0 && out.len() as u64 != want {
            return Err(format!("uncompressed {} bytes where the event says {}", out.len(), want));
        }
        return Ok(out);
    }
    if dctx.is_none() {
        *dctx = Some(Decompressor::new().map_err(|e| format!("cannot uncompress: {}", e))?);
    }
    let d = dctx.as_mut().expect("made above");
    let mut out = Vec::with_capacity(want as usize);
    let got = d
        .decompress_to_buffer(tpe.payload_raw(), &mut out)
        .map_err(|e| format!("cannot uncompress ({} bytes stated): {}", want, e))?;
    if got as u64 != want {
        return Err(format!("uncompressed {} bytes where the event says {}", got, want));
    }
    Ok(out)
}

/// The format description of the events inside a payload: the file's, without checksums.
pub fn without_checksums(fde: &FormatDescriptionEvent<'static>) -> FormatDescriptionEvent<'static> {
    let mut footer = fde.footer();
    footer.set_checksum_enabled(false);
    fde.clone().with_footer(footer)
}

/// The event at byte `at` of a payload's uncompressed events (`fde`: `without_checksums`).
pub fn inner_event(fde: &FormatDescriptionEvent<'static>, data: &[u8], at: usize) -> Result<Event, String> {
    let rest = &data[at..];
    let cut = || format!("its event at byte {} of {} is cut short", at, data.len());
    if rest.len() < HEADER_LEN {
        return Err(cut());
    }
    let size = u32::from_le_bytes(rest[9..13].try_into().expect("4 bytes")) as usize;
    if size < HEADER_LEN || size > rest.len() {
        return Err(cut());
    }
    match catch_unwind(AssertUnwindSafe(|| Event::read(fde, &rest[..size]))) {
        Ok(Ok(ev)) => Ok(ev),
        Ok(Err(e)) => Err(format!("cannot read its event at byte {}: {}", at, e)),
        Err(_) => Err(format!("cannot read its event at byte {}", at)),
    }
}

/// zstd-compresses `data` at `level` (importers/mysql_writer.py: compressed binlogs for the
/// benchmark and the tests, as a server with binlog_transaction_compression=ON writes them).
#[pyo3::pyfunction]
pub fn zstd_compress(py: pyo3::Python<'_>, data: &[u8], level: i32) -> pyo3::PyResult<pyo3::PyObject> {
    let out = zstd::bulk::compress(data, level).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(pyo3::types::PyBytes::new_bound(py, &out).into())
}
