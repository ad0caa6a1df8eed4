//! The columnar trace as the core reads it (model/columnar.py builds it): one array per field,
//! by position (seq = seq0 + position), `None` for a column absent from the whole trace, and
//! sentinels for a value absent from one transaction (-1 for integers, NaN for costs).

pub const FLAG_DDL: u8 = 1;
pub const FLAG_WAITED: u8 = 2;
pub const FLAG_TRANSACTIONAL: u8 = 4;
pub const FLAG_ALLOW_PARALLEL: u8 = 8;

pub const BIT_DDL: u8 = 1;
pub const BIT_ADMIN: u8 = 2;
pub const BIT_NO_PK: u8 = 4;
pub const BIT_FK_PARENT: u8 = 8;

pub struct Cols<'a> {
    /// transactions, all laps: positions 0 .. n
    pub n: usize,
    pub seq0: i64,
    /// The trace replayed lap after lap without copying it (model/columnar.py, `Columns.lapped`):
    /// the arrays hold one lap of `base` transactions; position i reads row i % base, its binlog
    /// file moved past the last lap's by `file_step` a lap and its commit id by `cid_step`.
    /// One lap: `base == n` and both steps 0.
    pub base: usize,
    pub file_step: i64,
    pub cid_step: i64,
    pub file: &'a [i64],
    pub lc: Option<&'a [i64]>,
    pub sn: Option<&'a [i64]>,
    pub cid: Option<&'a [i64]>,
    pub flags: Option<&'a [u8]>,
    pub bits: Option<&'a [u8]>,
    pub session: Option<&'a [i64]>,
    pub exec: Option<&'a [f64]>,
    pub commit: Option<&'a [f64]>,
    pub events: Option<&'a [i64]>,
    pub bytes: Option<&'a [i64]>,
    pub rows: Option<&'a [i64]>,
    pub wss: Option<&'a [i64]>,
    pub w_off: &'a [i64],
    pub w_keys: &'a [u32],
    /// the schemas a transaction touches (`Txn.schemas`), for the database tracker
    pub s_off: Option<&'a [i64]>,
    pub s_ids: Option<&'a [u32]>,
}

#[inline]
fn opt_i(col: Option<&[i64]>, i: usize) -> Option<i64> {
    match col {
        Some(c) if c[i] >= 0 => Some(c[i]),
        _ => None,
    }
}

#[inline]
fn opt_f(col: Option<&[f64]>, i: usize) -> Option<f64> {
    match col {
        Some(c) if !c[i].is_nan() => Some(c[i]),
        _ => None,
    }
}

impl<'a> Cols<'a> {
    /// The row position i reads (its lap's copy of it).
    #[inline]
    fn row(&self, i: usize) -> usize {
        if i < self.base {
            i
        } else {
            i % self.base
        }
    }
    /// The lap position i is in (0 for the first).
    #[inline]
    fn lap(&self, i: usize) -> i64 {
        if i < self.base {
            0
        } else {
            (i / self.base) as i64
        }
    }
    #[inline]
    pub fn seq(&self, i: usize) -> i64 {
        self.seq0 + i as i64
    }
    #[inline]
    pub fn file(&self, i: usize) -> i64 {
        self.file[self.row(i)] + self.lap(i) * self.file_step
    }
    #[inline]
    pub fn lc(&self, i: usize) -> Option<i64> {
        opt_i(self.lc, self.row(i))
    }
    #[inline]
    pub fn sn(&self, i: usize) -> Option<i64> {
        opt_i(self.sn, self.row(i))
    }
    #[inline]
    pub fn cid(&self, i: usize) -> Option<i64> {
        opt_i(self.cid, self.row(i)).map(|c| c + self.lap(i) * self.cid_step)
    }
    #[inline]
    pub fn session(&self, i: usize) -> Option<i64> {
        opt_i(self.session, self.row(i))
    }
    #[inline]
    pub fn exec(&self, i: usize) -> Option<f64> {
        opt_f(self.exec, self.row(i))
    }
    #[inline]
    pub fn commit(&self, i: usize) -> Option<f64> {
        opt_f(self.commit, self.row(i))
    }
    #[inline]
    pub fn events(&self, i: usize) -> Option<i64> {
        opt_i(self.events, self.row(i))
    }
    #[inline]
    pub fn bytes(&self, i: usize) -> Option<i64> {
        opt_i(self.bytes, self.row(i))
    }
    #[inline]
    pub fn rows(&self, i: usize) -> Option<i64> {
        opt_i(self.rows, self.row(i))
    }
    #[inline]
    pub fn wss(&self, i: usize) -> Option<i64> {
        opt_i(self.wss, self.row(i))
    }
    #[inline]
    pub fn flags_raw(&self, i: usize) -> u8 {
        self.flags.map_or(0, |f| f[self.row(i)])
    }
    #[inline]
    pub fn bits(&self, i: usize) -> u8 {
        self.bits.map_or(0, |b| b[self.row(i)])
    }
    #[inline]
    pub fn ddl(&self, i: usize) -> bool {
        self.bits(i) & BIT_DDL != 0
    }
    #[inline]
    pub fn admin(&self, i: usize) -> bool {
        self.bits(i) & BIT_ADMIN != 0
    }
    #[inline]
    pub fn writes(&self, i: usize) -> &'a [u32] {
        let r = self.row(i);
        &self.w_keys[self.w_off[r] as usize..self.w_off[r + 1] as usize]
    }
    #[inline]
    pub fn schemas(&self, i: usize) -> &'a [u32] {
        let r = self.row(i);
        match (self.s_off, self.s_ids) {
            (Some(o), Some(ids)) => &ids[o[r] as usize..o[r + 1] as usize],
            _ => &[],
        }
    }
    #[inline]
    pub fn n_writes(&self, i: usize) -> i64 {
        let r = self.row(i);
        self.w_off[r + 1] - self.w_off[r]
    }
    /// trackers._flags: the trace's GTID flags, else the defaults by kind.
    #[inline]
    pub fn gtid_flags(&self, i: usize) -> u8 {
        let f = self.flags_raw(i);
        if f != 0 {
            f
        } else if self.bits(i) & (BIT_DDL | BIT_ADMIN) != 0 {
            FLAG_DDL | FLAG_ALLOW_PARALLEL
        } else {
            FLAG_TRANSACTIONAL | FLAG_ALLOW_PARALLEL
        }
    }
}
