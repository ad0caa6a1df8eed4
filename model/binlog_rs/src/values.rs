//! Row images: the column values a row key needs, printed the way `mysqlbinlog -vv` /
//! `mariadb-binlog -vv` print them after `@N=` (without the -vv type comment), so that row keys
//! come out exactly as the text importer makes them.
//!
//! The walk over an image (column bitmap, NULL bitmap, one value after another) is the row
//! format's own; each value is decoded by `mysql_common` (`BinlogValue`). Values of columns no
//! key needs are stepped over by their size where the type gives it (`skip_value`), else decoded
//! but not printed.

use std::io;

use bitvec::slice::BitSlice;
use mysql_common::binlog::events::TableMapEvent;
use mysql_common::binlog::row::BinlogRow;
use mysql_common::binlog::value::BinlogValue;
use mysql_common::constants::ColumnType;
use mysql_common::io::ParseBuf;
use mysql_common::value::Value;

/// A value the reader does not print yet (a NUL cannot come out of a printed string): the
/// importer refuses it only when a row key needs it.
pub const UNPRINTED: &str = "\u{0}?";

/// One row image: the highest column position it holds (1-based, as `@N`) and the printed
/// values (position, text, is NULL) of the columns asked for.
#[derive(Default)]
pub struct Image {
    pub top: usize,
    pub vals: Vec<(usize, String, bool)>,
}

impl Image {
    pub fn get(&self, pos: usize) -> Option<&(usize, String, bool)> {
        self.vals.iter().find(|v| v.0 == pos)
    }
}

/// What the walk needs of a table map, computed once per map: each column's type and metadata.
pub struct Columns {
    pub types: Vec<Option<ColumnType>>,
    pub meta: Vec<Vec<u8>>,
}

impl Columns {
    pub fn of(tme: &TableMapEvent) -> Self {
        let n = tme.columns_count() as usize;
        Columns {
            types: (0..n).map(|i| tme.get_column_type(i).ok().flatten()).collect(),
            meta: (0..n).map(|i| tme.get_column_metadata(i).unwrap_or(&[]).to_vec()).collect(),
        }
    }
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
fn quoted(out: &mut String, bytes: &[u8]) {
    out.push('\'');
    if bytes.iter().all(|&b| b >= 0x20) {
        if let Ok(s) = std::str::from_utf8(bytes) {
            out.push_str(s);
            out.push('\'');
            return;
        }
    }
    let mut raw = Vec::with_capacity(bytes.len() + 8);
    for &b in bytes {
        if b < 0x20 {
            raw.extend_from_slice(format!("\\x{:02x}", b).as_bytes());
        } else {
            raw.push(b);
        }
    }
    out.push_str(&String::from_utf8_lossy(&raw));
    out.push('\'');
}

/// Appends a column value as the printer shows it; returns whether it is NULL.
pub fn print_value(out: &mut String, value: &BinlogValue, ty: ColumnType) -> bool {
    use std::fmt::Write;
    match value {
        BinlogValue::Value(Value::NULL) => {
            out.push_str("NULL");
            return true;
        }
        BinlogValue::Value(Value::Int(i)) => {
            // the printer shows a negative value with its unsigned reading: -1 (4294967295)
            if *i < 0 {
                if let Some(bits) = uint_width(ty) {
                    let u = if bits == 64 { *i as u64 } else { (*i as u64) & ((1u64 << bits) - 1) };
                    let _ = write!(out, "{} ({})", i, u);
                    return false;
                }
            }
            crate::txn::int(out, *i);
        }
        BinlogValue::Value(Value::UInt(u)) => {
            if let Some(bits) = uint_width(ty) {
                let top = if bits == 64 { 1u64 << 63 } else { 1u64 << (bits - 1) };
                if *u >= top {
                    let signed = if bits == 64 { *u as i64 } else { (*u as i64) - (1i64 << bits) };
                    let _ = write!(out, "{} ({})", signed, u);
                    return false;
                }
            }
            crate::txn::int(out, *u);
        }
        BinlogValue::Value(Value::Bytes(b)) => match ty {
            ColumnType::MYSQL_TYPE_VARCHAR
            | ColumnType::MYSQL_TYPE_VAR_STRING
            | ColumnType::MYSQL_TYPE_STRING
            | ColumnType::MYSQL_TYPE_BLOB
            | ColumnType::MYSQL_TYPE_TINY_BLOB
            | ColumnType::MYSQL_TYPE_MEDIUM_BLOB
            | ColumnType::MYSQL_TYPE_LONG_BLOB => quoted(out, b),
            ColumnType::MYSQL_TYPE_NEWDECIMAL => out.push_str(&String::from_utf8_lossy(b)),
            _ => {
                let _ = write!(out, "{}{:?}", UNPRINTED, ty);
            }
        },
        _ => {
            let _ = write!(out, "{}{:?}", UNPRINTED, ty);
        }
    }
    false
}

/// The bytes after a value of a type whose size the metadata and a length prefix give, or None
/// to have `mysql_common` decode it (other types, too little metadata, too few bytes: its
/// decoder then gives the error). A key needs few columns: stepping over the others' values
/// this way saves decoding them into owned values (an allocation and a copy each). The sizes
/// are the decoder's own (mysql_common binlog/value.rs, BinlogValue::deserialize).
fn skip_value<'a>(buf: &'a [u8], ty: ColumnType, meta: &[u8]) -> Option<&'a [u8]> {
    use ColumnType::*;
    let le = |n: usize| -> Option<usize> {
        Some(buf.get(..n)?.iter().rev().fold(0usize, |a, &b| (a << 8) | b as usize))
    };
    let (prefix, len) = match ty {
        MYSQL_TYPE_TINY | MYSQL_TYPE_YEAR => (0, 1),
        MYSQL_TYPE_SHORT => (0, 2),
        MYSQL_TYPE_INT24 | MYSQL_TYPE_TIME | MYSQL_TYPE_NEWDATE => (0, 3),
        MYSQL_TYPE_LONG | MYSQL_TYPE_FLOAT | MYSQL_TYPE_TIMESTAMP => (0, 4),
        MYSQL_TYPE_LONGLONG | MYSQL_TYPE_DOUBLE | MYSQL_TYPE_DATETIME => (0, 8),
        MYSQL_TYPE_VARCHAR | MYSQL_TYPE_VAR_STRING => {
            let type_len = *meta.first()? as usize | (*meta.get(1)? as usize) << 8;
            let n = if type_len < 256 { 1 } else { 2 };
            (n, le(n)?)
        }
        MYSQL_TYPE_STRING => {
            let (b0, b1) = (*meta.first()? as usize, *meta.get(1)? as usize);
            let length = if b0 == 0 {
                b0 | b1 << 8
            } else if (b0 & 0x30) != 0x30 {
                b1 | (((b0 & 0x30) ^ 0x30) << 4) // a long CHAR()
            } else {
                b1
            };
            let n = if length < 256 { 1 } else { 2 };
            (n, le(n)?)
        }
        MYSQL_TYPE_TINY_BLOB | MYSQL_TYPE_MEDIUM_BLOB | MYSQL_TYPE_LONG_BLOB | MYSQL_TYPE_BLOB => {
            let n = *meta.first()? as usize;
            if !(1..=4).contains(&n) {
                return None;
            }
            (n, le(n)?)
        }
        _ => return None,
    };
    buf.get(prefix + len..)
}

fn bad_data(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

/// Reads one row image from `buf` (v1/v2 rows events, not the shared image of a partial JSON
/// update): `present` are the image's columns, `wanted` (0-based) the ones to print, or all.
pub fn read_image<'a>(
    buf: &mut ParseBuf<'a>,
    cols: &'a Columns,
    present: &BitSlice<u8>,
    num_columns: usize,
    wanted: Option<&[bool]>,
) -> io::Result<Image> {
    let num_bits = present.count_ones();
    let nulls: &[u8] = buf.parse(num_bits.div_ceil(8))?;
    let nulls = BitSlice::<u8>::from_slice(nulls);
    let mut image = Image::default();
    let mut k = 0;
    for i in 0..num_columns {
        if !present.get(i).as_deref().copied().unwrap_or(false) {
            continue;
        }
        let ty = match cols.types.get(i).copied().flatten() {
            Some(t) => t,
            None => return Err(bad_data("No column type")),
        };
        image.top = i + 1;
        let want = wanted.is_none_or(|w| w.get(i).copied().unwrap_or(false));
        let null = nulls.get(k).as_deref().copied().unwrap_or(true);
        k += 1;
        if null {
            if want {
                image.vals.push((i + 1, "NULL".to_string(), true));
            }
            continue;
        }
        let meta: &[u8] = cols.meta.get(i).map_or(&[], |m| &m[..]);
        if !want {
            if let Some(rest) = skip_value(buf.0, ty, meta) {
                buf.0 = rest;
                continue;
            }
        }
        // unsigned or not, the printer shows a negative reading with its unsigned one, so
        // the signed reading is all that is needed (and MEDIUMINT prints as the printer's)
        let value: BinlogValue<'_> = buf.parse((ty, meta, false, false))?;
        if want {
            let mut text = String::new();
            let null = print_value(&mut text, &value, ty);
            image.vals.push((i + 1, text, null));
        }
    }
    Ok(image)
}

/// The same image from a row `mysql_common` decoded whole (partial JSON updates).
pub fn image_of_row(row: &BinlogRow, present: &[usize], cols: &Columns, wanted: Option<&[bool]>) -> Image {
    let mut image = Image::default();
    for (k, &col) in present.iter().enumerate() {
        image.top = col + 1;
        if !wanted.is_none_or(|w| w.get(col).copied().unwrap_or(false)) {
            continue;
        }
        if let Some(v) = row.as_ref(k) {
            let ty = cols.types.get(col).copied().flatten().unwrap_or(ColumnType::MYSQL_TYPE_NULL);
            let mut text = String::new();
            let null = print_value(&mut text, v, ty);
            image.vals.push((col + 1, text, null));
        }
    }
    image
}
