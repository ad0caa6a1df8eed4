//! Events framed in place, in the read buffer: `mysql_common`'s `Event::read` copies each event
//! into a new zeroed Vec and clones the format description (two more allocations) for every
//! event, which was about as much CPU as reading a one-row transaction's keys. Here an event
//! that lies whole in the buffer is its header and a borrowed body, and the event types every
//! transaction has (GTID, Annotate_rows, Table_map, rows, Xid) are parsed from that body by
//! the same `mysql_common` parsers `Event::read_data` calls, with its checks and messages.
//! Anything else (and any event the fast framing does not take: cut by the buffer's end, too
//! short, a format description) goes through `Event::read` as before, so what a damaged file
//! gives is unchanged.

use std::any::type_name;
use std::borrow::Cow;
use std::io;

use mysql_common::binlog::consts::{BinlogChecksumAlg, EventType};
use mysql_common::binlog::events::{BinlogEventHeader, Event, FormatDescriptionEvent};
use mysql_common::binlog::{BinlogCtx, BinlogEvent};
use mysql_common::io::ParseBuf;
use mysql_common::proto::MyDeserialize;

const HEADER_LEN: usize = BinlogEventHeader::LEN;
const CHECKSUM_LEN: usize = 4;

/// One event: its header, its body without the checksum, and where the library's `Event` for
/// it comes from when one is needed.
pub struct Ev<'a> {
    pub h: BinlogEventHeader,
    pub data: &'a [u8],
    src: Src<'a>,
}

enum Src<'a> {
    /// the whole event (header, body, checksum), framed in place
    Bytes(&'a [u8]),
    /// read by `Event::read` (the slow path) or rebuilt (a compressed event's plain one)
    Event(&'a Event),
}

impl<'a> Ev<'a> {
    pub fn of(ev: &'a Event) -> Self {
        Ev { h: ev.header(), data: ev.data(), src: Src::Event(ev) }
    }

    /// The library's event, for `read_data` and the compressed events: read from the framed
    /// bytes (whole, of a checked size: `Event::read` reads them as it would from the file).
    pub fn event(&self, fde: &FormatDescriptionEvent<'_>) -> io::Result<Cow<'a, Event>> {
        match self.src {
            Src::Event(e) => Ok(Cow::Borrowed(e)),
            Src::Bytes(b) => Event::read(fde, b).map(Cow::Owned),
        }
    }
}

/// Whether events under `fde` end with a checksum (`Event::read`'s rule for all but a format
/// description).
pub fn has_checksum(fde: &FormatDescriptionEvent<'_>) -> bool {
    let footer = fde.footer();
    let alg = footer.get_checksum_alg();
    footer.get_checksum_enabled() && !matches!(alg, Ok(None) | Ok(Some(BinlogChecksumAlg::BINLOG_CHECKSUM_ALG_OFF)))
}

/// Whether an event's stored CRC32 (its last 4 bytes, little-endian) is that of the bytes before
/// it; Err with both when not. A damaged event is refused as the replica's SQL thread refuses it
/// (`slave_sql_verify_checksum`, on by default), rather than decoded into wrong keys. Not for a
/// format description: its checksum skips a flag the server clears on close, and it says which
/// checksum the others have.
pub fn check_crc(whole: &[u8]) -> Result<(), String> {
    let Some(cut) = whole.len().checked_sub(CHECKSUM_LEN) else { return Ok(()) };
    let stored = u32::from_le_bytes(whole[cut..].try_into().expect("4 bytes"));
    let computed = crc32fast::hash(&whole[..cut]);
    if stored == computed {
        return Ok(());
    }
    Err(crc_mismatch(stored, computed))
}

/// What a damaged event is called, whichever way it was read.
pub fn crc_mismatch(stored: u32, computed: u32) -> String {
    format!("event checksum mismatch (CRC32 in the file {:#010x}, of its bytes {:#010x}): the file \
             is damaged at this event", stored, computed)
}

impl<'a> Ev<'a> {
    /// The whole event's bytes when it was framed in place (header, body, checksum).
    pub fn bytes(&self) -> Option<&'a [u8]> {
        match self.src {
            Src::Bytes(b) => Some(b),
            Src::Event(_) => None,
        }
    }
}

/// The event at the start of `buf` and its size, when it lies whole there, is not a format
/// description and is long enough for its checksum; else None (read it with `Event::read`).
pub fn frame<'a>(buf: &'a [u8], fde: &FormatDescriptionEvent<'_>) -> Option<(Ev<'a>, usize)> {
    let head = buf.get(..HEADER_LEN)?;
    let h = BinlogEventHeader::deserialize((), &mut ParseBuf(head)).ok()?;
    let size = h.event_size() as usize;
    let tail = if has_checksum(fde) { CHECKSUM_LEN } else { 0 };
    if h.event_type_raw() == EventType::FORMAT_DESCRIPTION_EVENT as u8 || size < HEADER_LEN + tail || size > buf.len() {
        return None;
    }
    let whole = &buf[..size];
    Some((Ev { h, data: &whole[HEADER_LEN..size - tail], src: Src::Bytes(whole) }, size))
}

/// One event body parsed as `Event::read_event` parses it: the same parser, the same error
/// when bytes are left over.
pub fn parse<'a, T: BinlogEvent<'a>>(fde: &'a FormatDescriptionEvent<'a>, data: &'a [u8]) -> io::Result<T> {
    let mut buf = ParseBuf(data);
    let event: T = buf.parse(BinlogCtx::new(HEADER_LEN + data.len(), fde))?;
    if !buf.is_empty() {
        return Err(io::Error::other(format!("bytes remaining on stream while reading {}", type_name::<T>())));
    }
    Ok(event)
}
