//! The trackers (model/trackers.py), streaming: `pull()` gives the next (position, dependency)
//! as the Python `annotate` generators yield them, reading only what they read.

use std::collections::{HashSet, VecDeque};

use crate::cols::{Cols, FLAG_WAITED};
use crate::core::{FxMap, SimError, SimResult};

#[derive(Clone, Copy, Debug, Default)]
pub struct Dep {
    pub a: i64, // last_committed, or the group id
    pub b: i64, // sequence_number
    pub file: i64,
    pub flags: u8,
}

pub enum Kind {
    Serial,
    CommitOrder,
    Writeset { session: bool, history_size: i64, strict: bool, count_duplicates: bool },
    CommitId { lookahead: usize },
    SlaveGroupCommit { count: usize, usec: f64, exec_default: f64, split_on_wait: bool },
    /// MySQL 5.6 DATABASE: `a` is 1 for "run isolated" (DDL, admin, over 16 schemas), else 0;
    /// the schemas themselves are the trace's (`Cols::schemas`)
    Database,
}

pub struct Tracker<'a> {
    c: &'a Cols<'a>,
    kind: Kind,
    pos: usize,
    out: VecDeque<(usize, Dep)>,
    // clock trackers
    cur_file: Option<i64>,
    prev_sn: i64,
    // writeset
    history: FxMap<u32, i64>,
    start: i64,
    blocking: i64,
    group_cid: i64,
    group_parent: i64,
    seen_commit_id: bool,
    sessions: FxMap<i64, i64>,
    // commit_id: the leading transactions held back (None once decided)
    held: Option<Vec<usize>>,
    held_lc: bool,
    // slave_group_commit
    group: Vec<(usize, bool)>,
    held_keys: HashSet<u32>,
    held_special: bool,
    deadline: f64,
    now: f64,
}

impl<'a> Tracker<'a> {
    pub fn new(c: &'a Cols<'a>, kind: Kind) -> Tracker<'a> {
        Tracker {
            c, kind, pos: 0, out: VecDeque::new(), cur_file: None, prev_sn: 0,
            history: FxMap::default(), start: 1, blocking: 0, group_cid: 0, group_parent: 0,
            seen_commit_id: false, sessions: FxMap::default(), held: Some(Vec::new()),
            held_lc: false, group: Vec::new(), held_keys: HashSet::new(), held_special: false,
            deadline: 0.0, now: 0.0,
        }
    }

    /// The next (position, dependency), or None at the end.
    pub fn pull(&mut self) -> SimResult<Option<(usize, Dep)>> {
        while self.out.is_empty() {
            if self.pos >= self.c.n {
                self.finish()?;
                return Ok(self.out.pop_front());
            }
            let i = self.pos;
            self.pos += 1;
            self.step(i)?;
        }
        Ok(self.out.pop_front())
    }

    fn finish(&mut self) -> SimResult<()> {
        match self.kind {
            Kind::CommitId { .. } => {
                if let Some(held) = self.held.take() {
                    if !held.is_empty() {
                        return Err(SimError::Tracker(commit_id_mysql(&format!(
                            "all {} transactions", held.len()))));
                    }
                }
            }
            Kind::SlaveGroupCommit { .. } => {
                if !self.group.is_empty() {
                    self.emit_group();
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn step(&mut self, i: usize) -> SimResult<()> {
        let c = self.c;
        match self.kind {
            Kind::Serial => {
                let f = c.file(i);
                if Some(f) != self.cur_file {
                    self.cur_file = Some(f);
                    self.prev_sn = 0;
                }
                let sn = c.sn(i).unwrap_or(self.prev_sn + 1);
                self.out.push_back((i, Dep { a: self.prev_sn, b: sn, file: f, flags: 0 }));
                self.prev_sn = sn;
            }
            Kind::CommitOrder => {
                let lc = match c.lc(i) {
                    Some(v) => v,
                    None => {
                        return Err(SimError::Tracker(format!(
                            "commit_order needs last_committed/sequence_number in the trace \
                             (seq {} has none)", c.seq(i))))
                    }
                };
                let sn = c.sn(i).unwrap_or(-1);
                self.out.push_back((i, Dep { a: lc, b: sn, file: c.file(i), flags: 0 }));
            }
            Kind::Database => {
                let isolated = c.ddl(i) || c.admin(i) || c.schemas(i).len() > 16;
                self.out.push_back((i, Dep { a: isolated as i64, b: 0, file: 0, flags: 0 }));
            }
            Kind::Writeset { session, history_size, strict, count_duplicates } => {
                self.writeset(i, session, history_size, strict, count_duplicates)?;
            }
            Kind::CommitId { lookahead } => {
                let cid = c.cid(i);
                if let Some(held) = &mut self.held {
                    if cid.is_none() && (c.lc(i).is_some() || !held.is_empty()) {
                        held.push(i);
                        self.held_lc |= c.lc(i).is_some();
                        if held.len() >= lookahead && self.held_lc {
                            return Err(SimError::Tracker(commit_id_mysql(&format!(
                                "the first {} transactions", held.len()))));
                        }
                        return Ok(());
                    }
                    let held = self.held.take().unwrap();
                    for h in held {
                        self.out.push_back((h, Dep { a: 0, b: 0, file: 0, flags: c.gtid_flags(h) }));
                    }
                }
                self.out.push_back((i, Dep { a: cid.unwrap_or(0), b: 0, file: 0,
                                             flags: c.gtid_flags(i) }));
            }
            Kind::SlaveGroupCommit { count, usec, exec_default, split_on_wait } => {
                let cost = c.exec(i).unwrap_or(exec_default);
                let special = c.ddl(i) || c.admin(i);
                let mut waited = false;
                let writes = c.writes(i);
                if !self.group.is_empty() {
                    if split_on_wait && (self.held_special || special
                                         || writes.iter().any(|k| self.held_keys.contains(k))) {
                        waited = true;
                        self.emit_group();
                    } else if self.now + cost > self.deadline {
                        self.emit_group();
                    }
                }
                let end = self.now + cost;
                if self.group.is_empty() {
                    self.held_keys.clear();
                    self.held_keys.extend(writes.iter().copied());
                    self.held_special = special;
                    self.deadline = end + usec;
                } else {
                    self.held_keys.extend(writes.iter().copied());
                    self.held_special = self.held_special || special;
                }
                self.group.push((i, waited));
                self.now = end;
                if self.group.len() >= count {
                    self.emit_group();
                }
            }
        }
        Ok(())
    }

    fn emit_group(&mut self) {
        let c = self.c;
        let gid = if self.group.len() > 1 { c.seq(self.group[0].0) } else { 0 };
        for &(t, waited) in &self.group {
            let fl = c.gtid_flags(t);
            self.out.push_back((t, Dep { a: gid, b: 0, file: 0,
                                         flags: if waited { fl | FLAG_WAITED } else { fl } }));
        }
        self.group.clear();
    }

    fn writeset(&mut self, i: usize, session_rule: bool, history_size: i64, strict: bool,
                count_duplicates: bool) -> SimResult<()> {
        let c = self.c;
        let f = c.file(i);
        if Some(f) != self.cur_file {
            self.cur_file = Some(f);
            self.history.clear();
            self.start = 1;
            self.prev_sn = 0;
            self.blocking = 0;
            self.group_cid = 0;
        }
        let sn = c.sn(i).unwrap_or(self.prev_sn + 1);
        let mut co;
        match c.lc(i) {
            None => {
                let cid = c.cid(i);
                match cid {
                    Some(v) if v != 0 => {
                        self.seen_commit_id = true;
                        if v != self.group_cid {
                            self.group_cid = v;
                            self.group_parent = self.prev_sn;
                        }
                        co = self.group_parent;
                    }
                    _ => {
                        if cid.is_none() && strict && !self.seen_commit_id {
                            let name = if session_rule { "writeset_session" } else { "writeset" };
                            return Err(SimError::Tracker(format!(
                                "{} with ceiling='error' needs last_committed or commit_id in the \
                                 trace (seq {} has neither)", name, c.seq(i))));
                        }
                        self.group_cid = 0;
                        co = self.prev_sn;
                    }
                }
            }
            Some(lc) => {
                self.group_cid = 0;
                co = lc;
            }
        }
        if co != 0 && self.blocking > co {
            co = self.blocking;
        }
        if c.admin(i) {
            self.blocking = sn;
        }
        let keys = c.writes(i);
        let mut nk = keys.len() as i64;
        if count_duplicates {
            if let Some(w) = c.wss(i) {
                nk += w - keys.len() as i64;
            }
        }
        let bits = c.bits(i);
        let no_pk = bits & crate::cols::BIT_NO_PK != 0;
        let fk_parent = bits & crate::cols::BIT_FK_PARENT != 0;
        let can_use = (nk != 0 || no_pk) && !(c.ddl(i) || c.admin(i)) && !fk_parent
            && nk <= history_size;
        let mut overflow = false;
        if can_use {
            overflow = self.history.len() as i64 + nk > history_size;
            let mut p = self.start;
            if overflow {
                for k in keys {
                    if let Some(v) = self.history.get_mut(k) {
                        if p < *v && *v < sn {
                            p = *v;
                        }
                        *v = sn;
                    }
                }
            } else {
                for k in keys {
                    let e = self.history.entry(*k).or_insert(i64::MIN);
                    let v = *e;
                    if v != i64::MIN && p < v && v < sn {
                        p = v;
                    }
                    *e = sn;
                }
            }
            if !no_pk && p < co {
                co = p;
            }
        }
        if overflow || !can_use {
            self.start = sn;
            self.history.clear();
        }
        if session_rule {
            if let Some(s) = c.session(i) {
                if let Some(&ps) = self.sessions.get(&s) {
                    if ps != 0 && ps < sn && ps > co {
                        co = ps;
                    }
                }
                self.sessions.insert(s, sn);
            }
        }
        self.out.push_back((i, Dep { a: co, b: sn, file: f, flags: 0 }));
        self.prev_sn = sn;
        Ok(())
    }
}

fn commit_id_mysql(which: &str) -> String {
    format!("commit_id needs MariaDB commit ids, but {} carry MySQL last_committed/sequence_number \
             and none has a commit_id (a MySQL binlog: use commit_order)", which)
}

/// trackers.ClockOrder: which transactions are barriers.
pub struct ClockOrder {
    index: i64,
    prev_sn: i64,
    prev_file: Option<i64>,
    barrier: i64,
    rotation_ignored: bool,
}

impl ClockOrder {
    pub fn new(rotation_ignored: bool) -> ClockOrder {
        ClockOrder { index: -1, prev_sn: 0, prev_file: None, barrier: 0, rotation_ignored }
    }
    /// Whether this transaction (pushed in stream order) is a barrier.
    pub fn push(&mut self, d: &Dep) -> bool {
        let (lc, sn, f) = (d.a, d.b, d.file);
        self.index += 1;
        let i = self.index;
        let new_file = match self.prev_file {
            None => true,
            Some(p) => f != p && !self.rotation_ignored,
        };
        if new_file || lc == 0 || sn == 0 || sn <= lc || sn <= self.prev_sn || sn > self.prev_sn + 1 {
            self.barrier = i;
        }
        self.prev_sn = sn;
        self.prev_file = Some(f);
        self.barrier == i
    }
}
