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
    pub n: usize,
    pub seq0: i64,
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
    #[inline]
    pub fn seq(&self, i: usize) -> i64 {
        self.seq0 + i as i64
    }
    #[inline]
    pub fn file(&self, i: usize) -> i64 {
        self.file[i]
    }
    #[inline]
    pub fn lc(&self, i: usize) -> Option<i64> {
        opt_i(self.lc, i)
    }
    #[inline]
    pub fn sn(&self, i: usize) -> Option<i64> {
        opt_i(self.sn, i)
    }
    #[inline]
    pub fn cid(&self, i: usize) -> Option<i64> {
        opt_i(self.cid, i)
    }
    #[inline]
    pub fn session(&self, i: usize) -> Option<i64> {
        opt_i(self.session, i)
    }
    #[inline]
    pub fn exec(&self, i: usize) -> Option<f64> {
        opt_f(self.exec, i)
    }
    #[inline]
    pub fn commit(&self, i: usize) -> Option<f64> {
        opt_f(self.commit, i)
    }
    #[inline]
    pub fn events(&self, i: usize) -> Option<i64> {
        opt_i(self.events, i)
    }
    #[inline]
    pub fn bytes(&self, i: usize) -> Option<i64> {
        opt_i(self.bytes, i)
    }
    #[inline]
    pub fn rows(&self, i: usize) -> Option<i64> {
        opt_i(self.rows, i)
    }
    #[inline]
    pub fn wss(&self, i: usize) -> Option<i64> {
        opt_i(self.wss, i)
    }
    #[inline]
    pub fn flags_raw(&self, i: usize) -> u8 {
        self.flags.map_or(0, |f| f[i])
    }
    #[inline]
    pub fn bits(&self, i: usize) -> u8 {
        self.bits.map_or(0, |b| b[i])
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
        &self.w_keys[self.w_off[i] as usize..self.w_off[i + 1] as usize]
    }
    #[inline]
    pub fn schemas(&self, i: usize) -> &'a [u32] {
        match (self.s_off, self.s_ids) {
            (Some(o), Some(ids)) => &ids[o[i] as usize..o[i + 1] as usize],
            _ => &[],
        }
    }
    #[inline]
    pub fn n_writes(&self, i: usize) -> i64 {
        self.w_off[i + 1] - self.w_off[i]
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
