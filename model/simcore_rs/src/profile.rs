//! A machine profile's terms (model/profiles.py `Profile`) and its cost functions, each the
//! same arithmetic in the same order as the Python methods of the same name, so that both
//! engines compute the same floats.

use crate::cols::Cols;

/// Every field of `Profile` this core reads. tests/test_engine_profile.py holds it against
/// `dataclasses.fields(Profile)`: a term added to the profile fails that test until it is
/// added here (and used), or declared descriptive there.
pub const READS: &[&str] = &[
    "exec_default", "commit_default", "sync", "dispatch", "retry", "cores", "sync_cpu",
    "commit_cpu", "commit_grouped", "coordination", "background_cpu", "commit_serial",
    "dispatch_event", "dispatch_thread", "exec_event", "exec_row", "handoff_event",
    "shared_disk", "coordination_event", "coordination_thread", "shared_lock_thread",
    "commit_byte", "wakeup", "per_core_queues", "log_replica_updates", "log_write",
    "redo_write_shared", "disk_hold", "disk_hold_share", "disk_write_iops",
];

#[derive(Clone, Debug, Default)]
pub struct Profile {
    pub exec_default: f64,
    pub commit_default: f64,
    pub sync: f64,
    pub dispatch: f64,
    pub retry: f64,
    pub cores: Option<usize>,
    pub sync_cpu: f64,
    pub commit_cpu: f64,
    pub commit_grouped: bool,
    pub coordination: f64,
    pub background_cpu: f64,
    pub commit_serial: f64,
    pub dispatch_event: f64,
    pub dispatch_thread: f64,
    pub exec_event: f64,
    pub exec_row: f64,
    pub handoff_event: f64,
    pub shared_disk: bool,
    pub coordination_event: f64,
    pub coordination_thread: f64,
    pub shared_lock_thread: f64,
    pub commit_byte: f64,
    pub wakeup: f64,
    pub per_core_queues: bool,
    pub log_replica_updates: bool,
    /// profiles.Profile.log_write: an unbuffered redo log's write, the commit step's least latency
    pub log_write: f64,
    /// profiles.Profile.redo_write_shared: a binlog group's redo write shares the prepares'
    pub redo_write_shared: bool,
    /// profiles.Profile.disk_hold: the part of each flush (µs) that holds the shared device;
    /// None: all of it
    pub disk_hold: Option<f64>,
    /// profiles.Profile.disk_hold_share: the same as a share of each flush; takes disk_hold's
    /// place when set
    pub disk_hold_share: Option<f64>,
    /// profiles.Profile.disk_write_iops: the device's write rate limit; None: none
    pub disk_write_iops: Option<f64>,
}

impl Profile {
    /// profiles.txn_events
    #[inline]
    pub fn txn_events(c: &Cols, i: usize) -> i64 {
        match c.events(i) {
            Some(e) => e,
            None => 2 + 3 * c.n_writes(i),
        }
    }
    #[inline]
    pub fn txn_rows(c: &Cols, i: usize) -> i64 {
        match c.rows(i) {
            Some(r) => r,
            None => c.n_writes(i),
        }
    }
    #[inline]
    pub fn txn_bytes(c: &Cols, i: usize) -> i64 {
        match c.bytes(i) {
            Some(b) => b,
            None => 150 * Self::txn_events(c, i),
        }
    }

    pub fn exec_cost(&self, c: &Cols, i: usize) -> f64 {
        if let Some(e) = c.exec(i) {
            return e;
        }
        let mut cost = self.exec_default;
        if self.exec_event != 0.0 {
            cost += self.exec_event * Self::txn_events(c, i) as f64;
        }
        if self.exec_row != 0.0 {
            cost += self.exec_row * Self::txn_rows(c, i) as f64;
        }
        cost
    }

    pub fn commit_cost(&self, c: &Cols, i: usize) -> f64 {
        match c.commit(i) {
            Some(v) => v,
            None => self.commit_default.max(self.log_write),
        }
    }

    pub fn dispatch_cost(&self, c: &Cols, i: usize, workers: usize) -> f64 {
        let extra = if workers > 1 { (workers - 1) as f64 } else { 0.0 };
        let per_event = self.dispatch_event + self.dispatch_thread * extra;
        if per_event == 0.0 {
            return self.dispatch;
        }
        self.dispatch + per_event * Self::txn_events(c, i) as f64
    }

    pub fn running_workers(&self, workers: usize) -> usize {
        match self.cores {
            Some(k) if k > 0 => workers.min(k),
            _ => workers,
        }
    }

    pub fn member_cost(&self, c: &Cols, i: usize) -> f64 {
        if self.commit_byte == 0.0 {
            return self.commit_serial;
        }
        self.commit_serial + self.commit_byte * Self::txn_bytes(c, i) as f64
    }

    pub fn parallel_exec(&self, c: &Cols, i: usize, exec_cost: f64, workers: usize) -> f64 {
        let mut extra = self.coordination - self.member_cost(c, i);
        // per event only with a second core: no cross-core hand-off on one
        if self.coordination_event != 0.0 && self.cores != Some(1) {
            extra += self.coordination_event * Self::txn_events(c, i) as f64;
        }
        if self.shared_lock_thread != 0.0 && workers > 1 {
            extra += self.shared_lock_thread * (self.running_workers(workers) - 1) as f64;
        }
        let v = exec_cost + extra;
        if v > 0.0 {
            v
        } else {
            0.0
        }
    }

    pub fn event_handoff(&self, c: &Cols, i: usize) -> f64 {
        if self.handoff_event != 0.0 {
            self.handoff_event * Self::txn_events(c, i) as f64
        } else {
            0.0
        }
    }

    pub fn contention_cpu(&self, c: &Cols, i: usize, workers: usize) -> f64 {
        // none on one core: no thread waits while the one it waits for runs elsewhere
        if self.coordination_thread == 0.0 || workers <= 1 || self.cores == Some(1) {
            return 0.0;
        }
        self.coordination_thread * (workers - 1) as f64 * Self::txn_events(c, i) as f64
    }

    pub fn group_sync(&self) -> f64 {
        if self.log_replica_updates {
            self.sync
        } else {
            0.0
        }
    }
}
