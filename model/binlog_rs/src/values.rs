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

/// Appends a column value as the printer shows it; returns whether it is NULL. `meta`: the
/// column's table-map metadata (the fractional digits of temporal types).
pub fn print_value(out: &mut String, value: &BinlogValue, ty: ColumnType, meta: &[u8]) -> bool {
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
            // ENUM: its index, as the printer shows it
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
            // decimal2string's digits; YEAR's four digits (1900 + the stored byte)
            ColumnType::MYSQL_TYPE_NEWDECIMAL | ColumnType::MYSQL_TYPE_YEAR => {
                out.push_str(&String::from_utf8_lossy(b))
            }
            // my_b_write_bit: every bit of the stored bytes, in their order, high bit first;
            // BIT(n) without the unused high bits of its first byte
            ColumnType::MYSQL_TYPE_BIT | ColumnType::MYSQL_TYPE_SET => {
                let nbits = if ty == ColumnType::MYSQL_TYPE_BIT {
                    (*meta.get(1).unwrap_or(&0) as usize) * 8 + *meta.first().unwrap_or(&0) as usize
                } else {
                    b.len() * 8
                };
                let skip = (b.len() * 8).saturating_sub(nbits);
                out.push_str("b'");
                for bit in skip..b.len() * 8 {
                    out.push(if (b[bit / 8] >> (7 - bit % 8)) & 1 == 1 { '1' } else { '0' });
                }
                out.push('\'');
            }
            // seconds since the epoch (my_timeval_to_str): TIMESTAMP(n) with n digits
            ColumnType::MYSQL_TYPE_TIMESTAMP2 => {
                let text = String::from_utf8_lossy(b);
                let (sec, usec) = text.split_once('.').unwrap_or((&text, "0"));
                out.push_str(sec);
                let usec: u32 = usec.parse().unwrap_or(0);
                fraction(out, usec, meta.first().copied().unwrap_or(0));
            }
            _ => {
                let _ = write!(out, "{}{:?}", UNPRINTED, ty);
            }
        },
        BinlogValue::Value(Value::Date(y, mo, d, h, mi, sec, us)) => {
            if ty == ColumnType::MYSQL_TYPE_NEWDATE {
                // sic: the printers separate a DATE's parts with colons
                let _ = write!(out, "'{:04}:{:02}:{:02}'", y, mo, d);
            } else {
                let _ = write!(out, "'{:04}-{:02}-{:02} {:02}:{:02}:{:02}", y, mo, d, h, mi, sec);
                if ty == ColumnType::MYSQL_TYPE_DATETIME2 {
                    fraction(out, *us, meta.first().copied().unwrap_or(0));
                }
                out.push('\'');
            }
        }
        BinlogValue::Value(Value::Time(neg, days, h, mi, sec, us)) => {
            let hours = *days * 24 + *h as u32;
            let _ = write!(out, "'{}{:02}:{:02}:{:02}", if *neg { "-" } else { "" }, hours, mi, sec);
            if ty == ColumnType::MYSQL_TYPE_TIME2 {
                fraction(out, *us, meta.first().copied().unwrap_or(0));
            }
            out.push('\'');
        }
        // FLOAT as printf's "%-20g" of its double, DOUBLE as "%-.20g" (the padding is the
        // printer's column alignment: the text importer drops it)
        BinlogValue::Value(Value::Float(f)) => c_g(out, *f as f64, 6),
        BinlogValue::Value(Value::Double(f)) => c_g(out, *f, 20),
        _ => {
            let _ = write!(out, "{}{:?}", UNPRINTED, ty);
        }
    }
    false
}

/// A TIME(n) value (MYSQL_TYPE_TIME2) as the printers show it: '[-]HH:MM:SS[.fff]' (MySQL's
/// my_time_packed_from_binary, TIME_from_longlong_time_packed and my_time_to_str).
fn time2(buf: &mut ParseBuf<'_>, dec: u8) -> io::Result<String> {
    const TIMEF_INT_OFS: i64 = 0x80_0000;
    const TIMEF_OFS: i64 = 0x8000_0000_0000;
    let frac_len = match dec {
        1 | 2 => 1,
        3 | 4 => 2,
        5 | 6 => 3,
        _ => 0,
    };
    let bytes: &[u8] = buf.parse(3 + frac_len)?;
    let be = |b: &[u8]| b.iter().fold(0i64, |a, &x| (a << 8) | x as i64);
    let make = |int: i64, frac: i64| ((int as u64) << 24) as i64 + frac;
    let packed = match frac_len {
        0 => make(be(&bytes[..3]) - TIMEF_INT_OFS, 0),
        3 => be(bytes) - TIMEF_OFS,
        n => {
            let (mut int, mut frac) = (be(&bytes[..3]) - TIMEF_INT_OFS, be(&bytes[3..]));
            if int < 0 && frac != 0 {
                int += 1; // the fraction borrows from the next whole second
                frac -= 1 << (8 * n);
            }
            make(int, frac * if n == 1 { 10_000 } else { 100 })
        }
    };
    let (neg, t) = if packed < 0 { (true, -packed) } else { (false, packed) };
    let hms = t >> 24;
    let mut out = format!(
        "'{}{:02}:{:02}:{:02}",
        if neg { "-" } else { "" },
        (hms >> 12) % (1 << 10),
        (hms >> 6) % (1 << 6),
        hms % (1 << 6)
    );
    fraction(&mut out, (t % (1 << 24)) as u32, dec);
    out.push('\'');
    Ok(out)
}

/// ".ddd": the first `digits` (0-6) of a value's microseconds, as the printers write a
/// temporal value with fractional seconds; nothing for none.
fn fraction(out: &mut String, usec: u32, digits: u8) {
    use std::fmt::Write;
    if (1..=6).contains(&digits) {
        let d = digits as u32;
        let _ = write!(out, ".{:0width$}", usec / 10u32.pow(6 - d), width = d as usize);
    }
}

/// C's printf("%.{precision}g", x): `precision` significant digits, trailing zeros dropped,
/// exponent form (e+NN) when the exponent is below -4 or not below the precision.
pub fn c_g(out: &mut String, x: f64, precision: usize) {
    use std::fmt::Write;
    if !x.is_finite() {
        out.push_str(if x.is_nan() { "nan" } else if x > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    // the digits rounded to the precision, and the exponent they give (it may move: 9.99 -> 10)
    let e = format!("{:.*e}", precision - 1, x);
    let (mant, exp) = e.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |m: &str| -> String {
        if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            m.to_string()
        }
    };
    if exp < -4 || exp >= precision as i32 {
        let _ = write!(out, "{}e{}{:02}", trim(mant), if exp < 0 { '-' } else { '+' }, exp.abs());
    } else {
        let decimals = (precision as i32 - 1 - exp).max(0) as usize;
        out.push_str(&trim(&format!("{:.*}", decimals, x)));
    }
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
        // 3 bytes and (digits + 1) / 2 of fraction; 5 (4) and the same
        MYSQL_TYPE_TIME2 => (0, 3 + (*meta.first()? as usize).div_ceil(2)),
        MYSQL_TYPE_DATETIME2 => (0, 5 + (*meta.first()? as usize).div_ceil(2)),
        MYSQL_TYPE_TIMESTAMP2 => (0, 4 + (*meta.first()? as usize).div_ceil(2)),
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
        if ty == ColumnType::MYSQL_TYPE_TIME2 {
            // read here: mysql_common 0.35 misreads a negative TIME(1|2) with a fraction
            let text = time2(buf, meta.first().copied().unwrap_or(0))?;
            if want {
                image.vals.push((i + 1, text, false));
            }
            continue;
        }
        if ty == ColumnType::MYSQL_TYPE_NEWDECIMAL {
            // mysql_common sizes the value from precision - scale: a damaged table map with the
            // scale above the precision would wrap that around and ask for exabytes, which
            // aborts the process (an allocation failure is no panic to catch)
            let (precision, scale) = (meta.first().copied().unwrap_or(0), meta.get(1).copied().unwrap_or(0));
            if scale > precision || precision > 65 {
                return Err(bad_data(&format!(
                    "DECIMAL({},{}) in the table map: no server writes that column type",
                    precision, scale
                )));
            }
        }
        // unsigned or not, the printer shows a negative reading with its unsigned one, so
        // the signed reading is all that is needed (and MEDIUMINT prints as the printer's)
        let value: BinlogValue<'_> = buf.parse((ty, meta, false, false))?;
        if want {
            let mut text = String::new();
            let null = print_value(&mut text, &value, ty, meta);
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
            let meta: &[u8] = cols.meta.get(col).map_or(&[], |m| &m[..]);
            let mut text = String::new();
            let null = print_value(&mut text, v, ty, meta);
            image.vals.push((col + 1, text, null));
        }
    }
    image
}
