//! JSON lines straight into the columnar trace (model/columnar.py `load_columns` calls it): the
//! loader fills the arrays from the lines without making a Python object per transaction.
//!
//! It accepts only what the Python loader accepts, with the same values: the fields and types
//! of the trace format (model/trace.py `Txn`), `_settle`'s checks across lines (seq counts on,
//! files never go back, last_committed/sequence_number together with lc < sn and sn increasing
//! in a file, before_images within writes, write_set_size at least the writes), the row-key
//! form, a key repeated in `writes` once. Anything else, or anything it is unsure of (a null
//! where the fast decoder wants a value, a blank line, an integer beyond 64 bits), it refuses,
//! and the Python loader reads the file instead, with its exact error messages.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;

/// trace.MAX_LINE_BYTES: a longer line is the Python loader's to refuse
const MAX_LINE_BYTES: usize = 64 << 20;

/// A session: an integer or a string (an untagged enum would buffer every value first).
enum Session<'a> {
    Int(i64),
    Str(Cow<'a, str>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Session<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Session<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Session::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                i64::try_from(v).map(Session::Int).map_err(|_| E::custom("past 64 bits"))
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Session::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Session::Str(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line<'a> {
    seq: i64,
    #[serde(borrow)]
    writes: Vec<Cow<'a, str>>,
    #[serde(default, borrow)]
    before_images: Vec<Cow<'a, str>>,
    #[serde(default, borrow)]
    #[allow(dead_code)]        // a string or null: checked, not kept
    gtid: Option<Cow<'a, str>>,
    #[serde(default)]
    file: Option<i64>,
    #[serde(default)]
    last_committed: Option<i64>,
    #[serde(default)]
    sequence_number: Option<i64>,
    #[serde(default)]
    commit_id: Option<i64>,
    #[serde(default, borrow)]
    flags: Vec<Cow<'a, str>>,
    #[serde(default, borrow)]
    session: Option<Session<'a>>,
    #[serde(default, borrow)]
    db: Option<Vec<Cow<'a, str>>>,
    #[serde(default)]
    ddl: bool,
    #[serde(default)]
    admin: bool,
    #[serde(default)]
    no_pk: bool,
    #[serde(default)]
    fk_parent: bool,
    #[serde(default)]
    exec: Option<f64>,
    #[serde(default)]
    commit: Option<f64>,
    #[serde(default)]
    timestamp: Option<f64>,
    #[serde(default)]
    events: Option<i64>,
    #[serde(default)]
    bytes: Option<i64>,
    #[serde(default)]
    rows: Option<i64>,
    #[serde(default)]
    write_set_size: Option<i64>,
    #[serde(default, borrow)]
    replica_locks: Vec<Cow<'a, str>>,
    // trace format version 2: tables whose keys the import could not make (db.table)
    #[serde(default, borrow)]
    keys_unknown: Option<Vec<Cow<'a, str>>>,
    #[serde(default, borrow)]
    keys_partial: Option<Vec<Cow<'a, str>>>,
}

#[derive(Default)]
pub struct Loader {
    pub refused: Option<String>,
    pub n: usize,
    // columns
    pub file: Vec<i64>,
    pub ints: [Vec<i64>; 7], // last_committed, sequence_number, commit_id, events, bytes, rows, write_set_size
    pub present: [bool; 12], // the 7 ints, exec, commit, flags, bits, session
    pub exec: Vec<f64>,
    pub commit: Vec<f64>,
    pub flags: Vec<u8>,
    pub bits: Vec<u8>,
    pub session: Vec<i64>,
    pub w_off: Vec<i64>,
    pub w_keys: Vec<u32>,
    pub s_off: Vec<i64>,
    pub s_ids: Vec<u32>,
    pub replica_locks: bool,
    /// whether a transaction names tables whose keys are unknown (model/keys.py): a run that
    /// needs keys is then the reference's, whose guard names them
    pub keys_unknown: bool,
    /// whether a transaction has a non-empty keys_unknown or keys_partial: version 2's fields,
    /// which a version 1 header refuses (model/trace.py `_OrderCheck`; the Python loader says so)
    pub marked: bool,
    pub keys: Vec<String>,
    key_ids: crate::core::FxMap<String, u32>,
    key_schema: Vec<u32>,
    pub schema_ids: HashMap<String, u32>,
    session_ids: HashMap<(bool, String), i64>,
    // across lines
    prev_seq: i64,
    prev_file: i64,
    prev_sn: Option<i64>,
}

fn key_form_ok(k: &str) -> bool {
    let b = k.as_bytes();
    match b.iter().position(|&c| c == b'/') {
        None => false,
        Some(slash) => b[..slash].contains(&b'.') && b[slash..].contains(&b'='),
    }
}

impl Loader {
    pub fn new() -> Loader {
        Loader { w_off: vec![0], s_off: vec![0], ..Default::default() }
    }

    fn schema_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.schema_ids.get(name) {
            return id;
        }
        let id = self.schema_ids.len() as u32;
        self.schema_ids.insert(name.to_string(), id);
        id
    }

    /// Whole lines (each ending in a newline, the last one may not); false once refused.
    pub fn feed(&mut self, data: &[u8]) -> bool {
        if self.refused.is_some() {
            return false;
        }
        let data = data.strip_suffix(b"\n").unwrap_or(data);
        if data.is_empty() {
            return true;
        }
        for line in data.split(|&c| c == b'\n') {
            if line.len() > MAX_LINE_BYTES {
                self.refused = Some("a line over the limit".into());
                return false;
            }
            if let Err(why) = self.line(line) {
                self.refused = Some(why);
                return false;
            }
        }
        true
    }

    fn line(&mut self, raw: &[u8]) -> Result<(), String> {
        let t: Line = serde_json::from_slice(raw).map_err(|e| e.to_string())?;
        if t.seq != self.prev_seq + 1 {
            return Err("seq".into());
        }
        self.prev_seq = t.seq;
        let file = t.file.unwrap_or(1);
        if file < 1 || file < self.prev_file {
            return Err("file".into());
        }
        if file != self.prev_file {
            self.prev_file = file;
            self.prev_sn = None;
        }
        match (t.last_committed, t.sequence_number) {
            (None, None) => {}
            (Some(lc), Some(sn)) => {
                if lc < 0 || sn < 0 || lc >= sn || self.prev_sn.is_some_and(|p| sn <= p) {
                    return Err("clock".into());
                }
                self.prev_sn = Some(sn);
            }
            _ => return Err("clock".into()),
        }
        if let Some(ts) = t.timestamp {
            if !ts.is_finite() {
                return Err("timestamp".into());
            }
        }
        for v in [t.commit_id, t.events, t.bytes, t.rows, t.write_set_size].iter().flatten() {
            if *v < 0 {
                return Err("negative".into());
            }
        }
        for v in [t.exec, t.commit].iter().flatten() {
            if !(v.is_finite() && *v >= 0.0) {
                return Err("cost".into());
            }
        }
        // writes: the form, a key repeated once (the first)
        let mut writes: Vec<&str> = Vec::with_capacity(t.writes.len());
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        let big = t.writes.len() > 16;          // a set beyond a few keys, a scan below
        for k in &t.writes {
            if !key_form_ok(k) {
                return Err("key form".into());
            }
            let new = if big { seen.insert(k.as_ref()) } else { !writes.contains(&k.as_ref()) };
            if new {
                writes.push(k.as_ref());
            }
        }
        let within = |b: &str| if big { seen.contains(b) } else { writes.contains(&b) };
        if t.before_images.iter().any(|b| !within(b.as_ref())) {
            return Err("before_images".into());
        }
        if let Some(w) = t.write_set_size {
            if (w as usize) < writes.len() {
                return Err("write_set_size".into());
            }
        }
        for tables in [&t.keys_unknown, &t.keys_partial].into_iter().flatten() {
            if tables.iter().any(|x| !x.contains('.')) {
                return Err("table name".into());
            }
        }
        let mut mask = 0u8;
        for f in &t.flags {
            mask |= match f.as_ref() {
                "ddl" => 1,
                "waited" => 2,
                "transactional" => 4,
                "allow_parallel" => 8,
                _ => return Err("flag".into()),
            };
        }
        // columns
        self.file.push(file);
        let ints = [t.last_committed, t.sequence_number, t.commit_id, t.events, t.bytes, t.rows,
                    t.write_set_size];
        for (j, v) in ints.iter().enumerate() {
            self.ints[j].push(v.unwrap_or(-1));
            self.present[j] |= v.is_some();
        }
        self.exec.push(t.exec.unwrap_or(f64::NAN));
        self.commit.push(t.commit.unwrap_or(f64::NAN));
        self.present[7] |= t.exec.is_some();
        self.present[8] |= t.commit.is_some();
        self.flags.push(mask);
        self.present[9] |= mask != 0;
        let bits = t.ddl as u8 | (t.admin as u8) << 1 | (t.no_pk as u8) << 2 | (t.fk_parent as u8) << 3;
        self.bits.push(bits);
        self.present[10] |= bits != 0;
        let sid = match &t.session {
            None => -1,
            Some(s) => {
                let key = match s {
                    Session::Int(i) => (false, i.to_string()),
                    Session::Str(x) => (true, x.to_string()),
                };
                let next = self.session_ids.len() as i64;
                *self.session_ids.entry(key).or_insert(next)
            }
        };
        self.session.push(sid);
        self.present[11] |= sid >= 0;
        let first_key = self.w_keys.len();
        for k in &writes {
            let id = match self.key_ids.get(*k) {
                Some(&id) => id,
                None => {
                    let id = self.keys.len() as u32;
                    self.keys.push(k.to_string());
                    self.key_ids.insert(k.to_string(), id);
                    let schema = k.split('.').next().unwrap_or("");
                    let s = self.schema_id(schema);
                    self.key_schema.push(s);
                    id
                }
            };
            self.w_keys.push(id);
        }
        self.w_off.push(self.w_keys.len() as i64);
        match &t.db {
            Some(db) => {
                for d in db {
                    let s = self.schema_id(d);
                    self.s_ids.push(s);
                }
            }
            None => {
                let start = self.s_ids.len();
                for j in first_key..self.w_keys.len() {
                    let s = self.key_schema[self.w_keys[j] as usize];
                    if !self.s_ids[start..].contains(&s) {
                        self.s_ids.push(s);
                    }
                }
                // the schemas of the tables whose keys are unknown are the transaction's too
                // (Txn.schemas)
                for table in t.keys_unknown.iter().flatten() {
                    let s = self.schema_id(table.split('.').next().unwrap_or(""));
                    if !self.s_ids[start..].contains(&s) {
                        self.s_ids.push(s);
                    }
                }
            }
        }
        self.keys_unknown |= t.keys_unknown.as_ref().is_some_and(|x| !x.is_empty());
        self.marked |= self.keys_unknown || t.keys_partial.as_ref().is_some_and(|x| !x.is_empty());
        self.s_off.push(self.s_ids.len() as i64);
        self.replica_locks |= !t.replica_locks.is_empty();
        self.n += 1;
        Ok(())
    }
}
