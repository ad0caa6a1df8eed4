//! The transaction being read (binlog_text._Open's fields) and its trace line, written here as
//! `json.dumps(Txn.to_json(), separators=(",", ":"))` writes it (model/trace.py), without the
//! leading `{"seq":N,`, which the importer puts in front once it numbers the transaction.

use std::collections::HashMap;
use std::fmt::Write;

/// Appends an integer's decimal digits: `itoa` skips core::fmt's machinery (padding, flags,
/// a dynamic writer): write! calls were about a fifth of a one-row import's CPU (perf).
pub fn int(o: &mut String, v: impl itoa::Integer) {
    o.push_str(itoa::Buffer::new().format(v));
}

pub const F_ALLOW_PARALLEL: u8 = 1;
pub const F_DDL: u8 = 2;
pub const F_TRANSACTIONAL: u8 = 4;
pub const F_WAITED: u8 = 8;
/// Trace spellings, in sorted order (to_json sorts the flags).
const FLAG_NAMES: [(u8, &str); 4] = [
    (F_ALLOW_PARALLEL, "allow_parallel"),
    (F_DDL, "ddl"),
    (F_TRANSACTIONAL, "transactional"),
    (F_WAITED, "waited"),
];

const BEFORE: u8 = 1;
/// Up to this many keys a transaction's keys are found by a scan, past it by a hash map.
const SCAN: usize = 16;
const AFTER: u8 = 2;

#[derive(Default)]
pub struct Open {
    pub line: u64,
    pub gtid: Option<String>,
    pub file: u64,
    pub last_committed: Option<u64>,
    pub sequence_number: Option<u64>,
    pub commit_id: Option<u64>,
    pub flags: u8,
    pub standalone: bool,
    pub in_body: bool,
    pub session: Option<u32>,
    pub timestamp: Option<f64>,
    /// row keys in first-written order, each with BEFORE / AFTER: which images gave it
    pub writes: Vec<(String, u8)>,
    index: HashMap<String, usize>,
    pub db: Vec<String>,
    pub ddl: bool,
    pub admin: bool,
    pub no_pk: bool,
    pub fk_parent: bool,
    pub hashes: u64,
    pub bad: Option<(u64, String)>,
    pub events: u64,
    pub start_pos: Option<u64>,
    pub end_pos: Option<u64>,
    pub length: Option<u64>,
    pub rows: u64,
    /// tables whose rows gave no keys (definition unknown), and whose images lacked some key's
    /// columns (binlog_row_image=MINIMAL): the trace's `keys_unknown` / `keys_partial`
    pub keys_unknown: Vec<String>,
    pub keys_partial: Vec<String>,
}

impl Open {
    pub fn new(line: u64, file: u64) -> Self {
        Open { line, file, standalone: true, ..Default::default() }
    }

    /// Records one row's keys: `before` of an UPDATE's before image, the rest as after keys.
    pub fn add_keys(&mut self, before: Vec<String>, after: Vec<String>) {
        self.hashes += (before.len() + after.len()) as u64;
        for (keys, bit) in [(before, BEFORE), (after, AFTER)] {
            for k in keys {
                // most transactions write a few keys: a scan beats hashing them
                let found = if self.writes.len() <= SCAN {
                    self.writes.iter().position(|(w, _)| *w == k)
                } else {
                    if self.index.is_empty() {
                        self.index = self.writes.iter().enumerate().map(|(i, (w, _))| (w.clone(), i)).collect();
                    }
                    self.index.get(&k).copied()
                };
                match found {
                    Some(i) => self.writes[i].1 |= bit,
                    None => {
                        if !self.index.is_empty() {
                            self.index.insert(k.clone(), self.writes.len());
                        }
                        self.writes.push((k, bit));
                    }
                }
            }
        }
    }

    /// Names a table among `keys_unknown` (unknown) or `keys_partial`, once.
    pub fn mark(&mut self, table: String, unknown: bool) {
        let list = if unknown { &mut self.keys_unknown } else { &mut self.keys_partial };
        if !list.contains(&table) {
            list.push(table);
        }
    }

    pub fn add_db(&mut self, d: String) {
        if !self.db.contains(&d) {
            self.db.push(d);
        }
    }

    fn size(&self) -> Option<u64> {
        if let Some(l) = self.length {
            if l > 0 {
                return Some(l);
            }
        }
        match (self.start_pos, self.end_pos) {
            (Some(s), Some(e)) if e > s => Some(e - s),
            _ => None,
        }
    }

    /// Appends the trace line after `{"seq":N,`: the fields to_json writes, in its order.
    pub fn write_tail(&self, o: &mut String) {
        o.push_str("\"writes\":[");
        for (i, (k, _)) in self.writes.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            json_str(o, k);
        }
        o.push(']');
        // keys only an UPDATE's before image gave
        let mut first = true;
        for (k, bits) in &self.writes {
            if *bits == BEFORE {
                o.push_str(if first { ",\"before_images\":[" } else { "," });
                first = false;
                json_str(o, k);
            }
        }
        if !first {
            o.push(']');
        }
        if let Some(g) = &self.gtid {
            o.push_str(",\"gtid\":");
            json_str(o, g);
        }
        if self.file != 1 {
            o.push_str(",\"file\":");
            int(o, self.file);
        }
        for (name, v) in [
            (",\"last_committed\":", self.last_committed),
            (",\"sequence_number\":", self.sequence_number),
            (",\"commit_id\":", self.commit_id),
        ] {
            if let Some(v) = v {
                o.push_str(name);
                int(o, v);
            }
        }
        if self.flags != 0 {
            o.push_str(",\"flags\":[");
            let mut first = true;
            for (bit, name) in FLAG_NAMES {
                if self.flags & bit != 0 {
                    if !first {
                        o.push(',');
                    }
                    first = false;
                    o.push('"');
                    o.push_str(name);
                    o.push('"');
                }
            }
            o.push(']');
        }
        if let Some(s) = self.session {
            o.push_str(",\"session\":");
            int(o, s);
        }
        if (self.ddl || self.admin) && !self.db.is_empty() {
            o.push_str(",\"db\":[");
            for (i, d) in self.db.iter().enumerate() {
                if i > 0 {
                    o.push(',');
                }
                json_str(o, d);
            }
            o.push(']');
        }
        for (field, v) in [(",\"ddl\":true", self.ddl), (",\"admin\":true", self.admin),
                           (",\"no_pk\":true", self.no_pk), (",\"fk_parent\":true", self.fk_parent)] {
            if v {
                o.push_str(field);
            }
        }
        if let Some(t) = self.timestamp {
            o.push_str(",\"timestamp\":");
            py_float(o, t);
        }
        if self.events > 0 {
            o.push_str(",\"events\":");
            int(o, self.events);
        }
        if let Some(b) = self.size() {
            o.push_str(",\"bytes\":");
            int(o, b);
        }
        if self.events > 0 {
            o.push_str(",\"rows\":");
            int(o, self.rows);
        }
        if self.hashes > self.writes.len() as u64 {
            o.push_str(",\"write_set_size\":");
            int(o, self.hashes);
        }
        for (field, tables) in [(",\"keys_unknown\":[", &self.keys_unknown), (",\"keys_partial\":[", &self.keys_partial)] {
            if !tables.is_empty() {
                o.push_str(field);
                for (i, t) in tables.iter().enumerate() {
                    if i > 0 {
                        o.push(',');
                    }
                    json_str(o, t);
                }
                o.push(']');
            }
        }
        o.push('}');
    }
}

/// A JSON string as Python's json.dumps writes it (ensure_ascii): ASCII as is, `"` and `\`
/// escaped, control characters as \n, \t, ... or \u00XX, the rest as \uXXXX (UTF-16).
pub fn json_str(o: &mut String, s: &str) {
    o.push('"');
    // nearly every key and GTID is printable ASCII with nothing to escape: copied whole
    if s.bytes().all(|b| (b' '..0x7f).contains(&b) && b != b'"' && b != b'\\') {
        o.push_str(s);
        o.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\u{8}' => o.push_str("\\b"),
            '\u{c}' => o.push_str("\\f"),
            ' '..='~' => o.push(c),     // DEL and beyond escaped, as Python's json.dumps does
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(o, "\\u{:04x}", u);
                }
            }
        }
    }
    o.push('"');
}

/// A float as Python's repr writes it: the shortest digits that read back the same, in
/// positional form from 1e-4 up to 1e16, else as 1e-05 / 1.5e+16.
pub fn py_float(o: &mut String, x: f64) {
    // a whole number of seconds (MariaDB's timestamps): its digits, then ".0"
    if (1.0..1e16).contains(&x) && x.fract() == 0.0 {
        int(o, x as u64);
        o.push_str(".0");
        return;
    }
    let a = x.abs();
    if x.is_finite() && (a == 0.0 || (1e-4..1e16).contains(&a)) {
        let start = o.len();
        let _ = write!(o, "{}", x);
        if !o[start..].contains('.') {
            o.push_str(".0");
        }
        return;
    }
    let e = format!("{:e}", x); // shortest digits too: "1.5e16", "1e-5"
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let _ = write!(o, "{}e{}{:02}", mant, if exp < 0 { '-' } else { '+' }, exp.abs());
}
