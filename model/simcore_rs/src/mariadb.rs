//! The MariaDB parallel replica (model/applier_mariadb.py `simulate_mariadb`), one handler per
//! event kind, named as the specs' actions (docs/names.md): `dispatch`, `start`, `exec_end`,
//! `commit` (group commit's sync end, or the chain's `finish`), `kill`, `retry` (a killed
//! transaction's `start` again, after its predecessor committed).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::cols::{Cols, FLAG_ALLOW_PARALLEL, FLAG_DDL, FLAG_TRANSACTIONAL, FLAG_WAITED};
use crate::core::*;
use crate::profile::Profile;
use crate::trackers::Tracker;

const EXEC_END: u8 = 0;
const READY: u8 = 1;
const RESUME: u8 = 3;
const DISPATCHED: u8 = 8;
const BACKGROUND_DONE: u8 = 9;
const EXEC_START: u8 = 10;
const FINISHED: u8 = 13;

const PHASE_GCO: u8 = 0;
const PHASE_PRIOR: u8 = 1;
const PHASE_LOCKS: u8 = 2;

const MULTI_BATCH: u8 = 1;
const FORCE_SWITCH: u8 = 2;
pub const OPTIMISTIC: u8 = 2;
pub const AGGRESSIVE: u8 = 3;

/// rules.gco_decision: (new GCO, the GCO's flags after it, speculation WAIT).
fn gco_decision(gco_flags: u8, last_commit_id: Option<i64>, group_id: i64, flags: u8,
                level: u8) -> (bool, u8, bool) {
    let ddl = flags & FLAG_DDL != 0;
    let mut f = gco_flags;
    if group_id == 0 || Some(group_id) != last_commit_id {
        f |= MULTI_BATCH;
    }
    if ddl {
        f |= FORCE_SWITCH;
    }
    let mut wait = false;
    let new_gco;
    if f & MULTI_BATCH == 0 {
        new_gco = false;
    } else if level >= OPTIMISTIC && f & FORCE_SWITCH == 0 {
        new_gco = false;
        wait = flags & FLAG_TRANSACTIONAL == 0
            || (level < AGGRESSIVE
                && (flags & FLAG_ALLOW_PARALLEL == 0 || flags & FLAG_WAITED != 0));
    } else {
        new_gco = true;
    }
    if new_gco {
        f = if ddl { FORCE_SWITCH } else { 0 };
    }
    (new_gco, f, wait)
}

pub struct Mariadb<'a> {
    c: &'a Cols<'a>,
    p: &'a Profile,
    workers: usize,
    level: u8,
    start_on_exec: bool,
    no_kill: bool,
    max_queued: usize,
    arrival: Option<&'a [f64]>,
    tracker: Tracker<'a>,
    sh: Shared,
    sync: f64,
    retry_cost: f64,
    queues: Vec<VecDeque<Idx>>,
    current: Vec<Option<Idx>>,
    stage: CommitStage,
    wakeup: f64,
    chain: Option<CommitChain>,
    flush: Option<LogFlush>,
    driver: Option<TaskId>,
    driver_busy: bool,
    background: f64,
    locks: FxMap<u32, Idx>,
    lock_waiters: FxMap<i64, Vec<Idx>>,
    prior_waiters: FxMap<i64, Idx>,
    gco_waiters: BinaryHeap<Reverse<(i64, i64, Idx)>>,
    count_committing: i64,
    count_started: i64,
    committed_upto: i64,
    driver_t: f64,
    cause: Option<usize>,
    since: f64,
    slot: usize,
    queued: u64,
    gco_wait_count: i64,
    gco_flags: u8,
    last_commit_id: Option<i64>,
    nxt: Option<Idx>,
    committed: u64,
    pub sink: Sink,
}

impl<'a> Mariadb<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(c: &'a Cols<'a>, p: &'a Profile, tracker: Tracker<'a>, workers: usize, level: u8,
               max_queued: usize, start_on_exec: bool, no_kill: bool,
               arrival: Option<&'a [f64]>, schedule: Record) -> Mariadb<'a> {
        let cpus = p.cores.filter(|&k| k > 0).map(|k| CpuPool::new(k, p.per_core_queues));
        let has_cpus = cpus.is_some();
        let sync = p.group_sync();
        let disk = Disk::for_profile(p);
        let member = if p.commit_byte != 0.0 {
            MemberCost::Sum
        } else {
            MemberCost::PerMember(p.commit_serial)
        };
        // applier_mariadb: a relaxed group's commit records ride on the next prepare's write
        let rides = p.redo_write_shared && workers > 1;
        let mut stage = CommitStage::new(sync, true, if rides { 0.0 } else { p.sync_cpu }, has_cpus,
                                         member, p.wakeup);
        stage.on_disk = !rides;
        let chain = if p.log_replica_updates {
            None
        } else {
            Some(CommitChain { wakeup: p.wakeup, next_seq: None, busy: false,
                               waiting: FxMap::default() })
        };
        let flush = if p.commit_grouped || disk.is_some() || (has_cpus && p.commit_cpu > 0.0) {
            Some(LogFlush { grouped: p.commit_grouped,
                            cpu: if has_cpus { p.commit_cpu } else { 0.0 },
                            kind: if chain.is_none() { READY } else { FINISHED },
                            busy: false, waiting: Vec::new() })
        } else {
            None
        };
        let mut q = Queue::new();
        let driver = if has_cpus && (p.dispatch > 0.0 || p.dispatch_event > 0.0) {
            Some(q.new_task())
        } else {
            None
        };
        Mariadb {
            c, p, workers, level, start_on_exec, no_kill, max_queued, arrival, tracker,
            sh: Shared { q, runs: Runs::new(), cpus, disk, blocked: [0.0; N_CAUSES] },
            sync, retry_cost: p.retry,
            queues: (0..workers).map(|_| VecDeque::new()).collect(),
            current: vec![None; workers],
            stage, wakeup: p.wakeup, chain, flush, driver, driver_busy: false,
            background: if has_cpus { p.background_cpu } else { 0.0 },
            locks: FxMap::default(), lock_waiters: FxMap::default(),
            prior_waiters: FxMap::default(), gco_waiters: BinaryHeap::new(),
            count_committing: 0, count_started: 0, committed_upto: 0,
            driver_t: 0.0, cause: None, since: 0.0, slot: 0, queued: 0, gco_wait_count: 0,
            gco_flags: 0, last_commit_id: None, nxt: None, committed: 0,
            sink: Sink::new(workers, c.n, schedule),
        }
    }

    pub fn blocked(&self) -> [f64; N_CAUSES] {
        self.sh.blocked
    }

    fn member_cost(&self) -> impl Fn(Idx) -> f64 + 'a {
        let (c, p) = (self.c, self.p);
        move |i| p.member_cost(c, i)
    }

    fn advance(&mut self) -> SimResult<()> {
        self.nxt = None;
        if let Some((i, dep)) = self.tracker.pull()? {
            let c = self.c;
            let exec = self.p.parallel_exec(c, i, self.p.exec_cost(c, i), self.workers);
            let arrival = self.arrival.map_or(0.0, |a| a[i]);
            let mut run = Run::new(i, c.seq(i), exec, self.p.commit_cost(c, i), arrival);
            run.dep_a = dep.a;
            run.flags = dep.flags;
            if self.stage.next_seq.is_none() {
                self.stage.next_seq = Some(run.seq);
                if let Some(ch) = &mut self.chain {
                    ch.next_seq = Some(run.seq);
                }
                self.committed_upto = run.seq - 1;
            }
            self.sh.runs.insert(run);
            self.nxt = Some(i);
        }
        Ok(())
    }

    /// `rpl_parallel::do_event`: the GCO this transaction joins and its speculation.
    fn classify(&mut self, idx: Idx) {
        let (group_id, flags) = {
            let r = self.sh.runs.get(idx);
            (r.dep_a, r.flags)
        };
        let (new_gco, f, wait) = gco_decision(self.gco_flags, self.last_commit_id, group_id,
                                              flags, self.level);
        self.gco_flags = f;
        self.last_commit_id = Some(group_id);
        if new_gco {
            self.gco_wait_count = self.queued as i64;
        }
        let r = self.sh.runs.get_mut(idx);
        r.spec_wait = wait;
        r.gco_wait = self.gco_wait_count;
    }

    #[inline]
    fn wait(&mut self, idx: Idx, why: usize, now: f64) {
        let r = self.sh.runs.get_mut(idx);
        r.wait_cause = Some(why);
        r.wait_since = now;
    }

    #[inline]
    fn resume(&mut self, idx: Idx, now: f64) {
        let r = self.sh.runs.get_mut(idx);
        if let Some(cause) = r.wait_cause.take() {
            self.sh.blocked[cause] += now - r.wait_since;
        }
    }

    /// Start(t) (and a killed transaction's Retry(t)): past its GCO, its prior commit when it
    /// must wait for it, a DDL's metadata lock and its row locks, it executes.
    fn start(&mut self, idx: Idx, now: f64) {
        self.resume(idx, now);
        let (phase, gco_wait, spec_wait, retries, seq, flags) = {
            let r = self.sh.runs.get(idx);
            (r.phase, r.gco_wait, r.spec_wait, r.retries, r.seq, r.flags)
        };
        let mut phase = phase;
        if phase == PHASE_GCO {
            let count = if self.start_on_exec { self.count_started } else { self.count_committing };
            if count < gco_wait {
                self.gco_waiters.push(Reverse((gco_wait, seq, idx)));
                self.wait(idx, GCO_WAIT, now);
                return;
            }
            phase = PHASE_PRIOR;
            self.sh.runs.get_mut(idx).phase = phase;
        }
        if phase == PHASE_PRIOR {
            if (spec_wait || retries > 0) && self.committed_upto < seq - 1 {
                self.prior_waiters.insert(seq - 1, idx);
                self.wait(idx, PRIOR_COMMIT_WAIT, now);
                return;
            }
            self.sh.runs.get_mut(idx).phase = PHASE_LOCKS;
        }
        if flags & FLAG_DDL != 0 && self.committed_upto < seq - 1 {
            self.prior_waiters.insert(seq - 1, idx);
            self.wait(idx, LOCK_WAIT, now);
            return;
        }
        let writes = self.c.writes(idx);
        for key in writes {
            let holder = match self.locks.get(key) {
                None => continue,
                Some(&h) if h == idx => continue,
                Some(&h) => h,
            };
            let holder_seq = self.sh.runs.get(holder).seq;
            if holder_seq < seq || self.no_kill {
                self.lock_waiters.entry(holder_seq).or_default().push(idx);
                self.wait(idx, LOCK_WAIT, now);
                return;
            }
            self.kill(holder, now);
        }
        for key in writes {
            self.locks.insert(*key, idx);
        }
        let attempt = {
            let r = self.sh.runs.get_mut(idx);
            r.start = now;
            r.attempt
        };
        if attempt == 0 {
            self.count_started += 1;
        }
        let handoff = self.p.event_handoff(self.c, idx);
        if handoff > 0.0 {
            self.sh.q.push(now + handoff, EXEC_START, Payload::RunAttempt(idx, attempt));
        } else {
            self.begin_exec(idx, now);
        }
    }

    fn begin_exec(&mut self, idx: Idx, now: f64) {
        let (exec, attempt) = {
            let r = self.sh.runs.get(idx);
            (r.exec, r.attempt)
        };
        if self.sh.cpus.is_none() {
            self.sh.q.push(now + exec, EXEC_END, Payload::RunAttempt(idx, attempt));
        } else {
            self.sh.execute(idx as Holder, now, exec, EXEC_END, Payload::RunAttempt(idx, attempt));
        }
    }

    fn release_locks(&mut self, idx: Idx, now: f64) {
        for key in self.c.writes(idx) {
            if self.locks.get(key) == Some(&idx) {
                self.locks.remove(key);
            }
        }
        let seq = self.sh.runs.get(idx).seq;
        if let Some(waiters) = self.lock_waiters.remove(&seq) {
            for w in waiters {
                self.sh.q.push(now, RESUME, Payload::Run(w));
            }
        }
    }

    /// Kill(t): the later lock holder rolls back and will retry after its predecessor commits.
    fn kill(&mut self, victim: Idx, now: f64) {
        let (exec_end_none, seq, marked) = {
            let r = self.sh.runs.get_mut(victim);
            r.retries += 1;
            r.wasted += now - r.start;
            let lost = now - r.start;
            self.sh.blocked[RETRY] += lost;
            r.attempt += 1;
            (r.exec_end.is_nan(), r.seq, r.marked)
        };
        if self.sh.cpus.is_some() && exec_end_none {
            self.sh.release(victim as Holder, now);
        }
        self.stage.withdraw(seq);
        if let Some(ch) = &mut self.chain {
            ch.withdraw(seq);
        }
        if marked {
            self.sh.runs.get_mut(victim).marked = false;
            self.count_committing -= 1;
        }
        {
            let r = self.sh.runs.get_mut(victim);
            r.start = f64::NAN;
            r.exec_end = f64::NAN;
            r.ready = f64::NAN;
            r.phase = PHASE_PRIOR;
            r.wait_cause = None;
        }
        self.release_locks(victim, now);
        self.start(victim, now);
    }

    fn mark_start_commit(&mut self, idx: Idx, now: f64) {
        self.sh.runs.get_mut(idx).marked = true;
        self.count_committing += 1;
        while let Some(&Reverse((w, _, waiter))) = self.gco_waiters.peek() {
            if w > self.count_committing {
                break;
            }
            self.gco_waiters.pop();
            self.wake(waiter, now);
        }
    }

    fn wake(&mut self, idx: Idx, now: f64) {
        if self.wakeup > 0.0 {
            self.sh.q.push(now + self.wakeup, RESUME, Payload::Run(idx));
        } else {
            self.start(idx, now);
        }
    }

    fn take_next(&mut self, w: usize, now: f64) {
        if self.current[w].is_none() {
            if let Some(idx) = self.queues[w].pop_front() {
                self.current[w] = Some(idx);
                self.start(idx, now);
                if let Some(cause) = self.cause {
                    if w == self.slot {
                        self.sh.blocked[cause] += now - self.since;
                        self.cause = None;
                        self.driver_t = self.driver_t.max_py(now);
                    }
                }
            }
        }
    }

    fn hand_off(&mut self, idx: Idx) -> SimResult<()> {
        self.queues[self.slot].push_back(idx);
        self.queued += 1;
        self.take_next(self.slot, self.driver_t);
        self.slot = (self.slot + 1) % self.workers;
        self.advance()
    }

    fn wake_prior_waiter(&mut self, seq: i64, now: f64) {
        let waiter = match self.prior_waiters.remove(&seq) {
            None => return,
            Some(w) => w,
        };
        let (retries, cause) = {
            let r = self.sh.runs.get(waiter);
            (r.retries, r.wait_cause)
        };
        if retries > 0 && cause == Some(PRIOR_COMMIT_WAIT) {
            self.resume(waiter, now);
            self.sh.blocked[RETRY] += self.retry_cost;
            self.sh.q.push(now + self.retry_cost + self.wakeup, RESUME, Payload::Run(waiter));
        } else {
            self.wake(waiter, now);
        }
    }

    fn free_thread(&mut self, idx: Idx, now: f64) {
        let w = self.sh.runs.get(idx).worker;
        self.current[w] = None;
        if self.sh.cpus.is_some() {
            let off_path = self.background + self.p.contention_cpu(self.c, idx, self.workers);
            if off_path > 0.0 {
                let task = self.sh.q.new_task();
                self.sh.execute(task, now, off_path, BACKGROUND_DONE, Payload::Task(task));
            }
        }
        self.sink.take(self.sh.runs.get(idx));
    }

    /// Without the replica's binlog: the in-order commit ended, its changes are visible.
    fn visible(&mut self, idx: Idx, now: f64) {
        let (seq, flags) = {
            let r = self.sh.runs.get(idx);
            (r.seq, r.flags)
        };
        self.committed_upto = seq;
        if flags & FLAG_DDL != 0 {
            self.mark_start_commit(idx, now);
        }
        self.release_locks(idx, now);
        self.wake_prior_waiter(seq, now);
    }

    /// Commit(t) without the replica's binlog: the redo flush ended, the thread goes on.
    fn finish(&mut self, idx: Idx, now: f64) {
        self.sh.runs.get_mut(idx).commit = now;
        self.committed += 1;
        self.free_thread(idx, now);
        let w = self.sh.runs.get(idx).worker;
        self.take_next(w, now);
        self.sh.runs.retire(idx);
    }

    /// Dispatch(t, w): the driver queues the next transaction to its thread round-robin.
    fn dispatch(&mut self, idx: Idx) -> SimResult<()> {
        self.classify(idx);
        let cost = self.p.dispatch_cost(self.c, idx, self.workers);
        {
            let r = self.sh.runs.get_mut(idx);
            r.worker = self.slot;
            r.dispatch = self.driver_t;
        }
        if let Some(driver) = self.driver {
            self.driver_busy = true;
            self.sh.execute(driver, self.driver_t, cost, DISPATCHED, Payload::Run(idx));
            return Ok(());
        }
        self.driver_t += cost;
        self.hand_off(idx)
    }

    /// ExecEnd(t): it reached its XID: mark_start_commit, then its commit turn (chain), its
    /// own commit step, or the redo flush.
    fn exec_end(&mut self, idx: Idx, attempt: u32, t: f64) {
        if !self.sh.runs.alive(idx) || attempt != self.sh.runs.get(idx).attempt {
            return;
        }
        self.sh.runs.get_mut(idx).exec_end = t;
        if self.sh.cpus.is_some() {
            self.sh.release(idx as Holder, t);
        }
        let flags = self.sh.runs.get(idx).flags;
        if flags & FLAG_DDL == 0 {
            self.mark_start_commit(idx, t);
        }
        if self.chain.is_some() {
            self.sh.runs.get_mut(idx).ready = t;
            let mc = self.member_cost();
            self.chain.as_mut().unwrap().add(&mut self.sh, &mc, idx, t);
        } else if self.flush.is_none() {
            let ready = {
                let r = self.sh.runs.get_mut(idx);
                r.ready = t + r.commit_cost;
                r.ready
            };
            self.sh.q.push(ready, READY, Payload::RunAttempt(idx, attempt));
        } else {
            self.flush.as_mut().unwrap().request(&mut self.sh, idx, t);
        }
    }

    /// Commit(t) with the replica's binlog: the group's sync ended; its members commit.
    fn commit(&mut self, b: BatchId, t: f64) {
        let batch = self.sh.q.take_batch(b);
        let mut last_seq = 0;
        for &(idx, _) in &batch {
            let (seq, flags) = {
                let r = self.sh.runs.get_mut(idx);
                r.commit = t;
                account_commit_wait(r, self.sync, true, &mut self.sh.blocked);
                (r.seq, r.flags)
            };
            self.committed_upto = seq;
            self.committed += 1;
            last_seq = seq;
            if flags & FLAG_DDL != 0 {
                self.mark_start_commit(idx, t);
            }
            self.release_locks(idx, t);
            self.free_thread(idx, t);
        }
        let mc = self.member_cost();
        self.stage.group_done(&mut self.sh, &mc, last_seq, t);
        for &(idx, _) in &batch {
            let (seq, w) = {
                let r = self.sh.runs.get(idx);
                (r.seq, r.worker)
            };
            self.wake_prior_waiter(seq, t);
            self.take_next(w, t);
        }
        for &(idx, _) in &batch {
            self.sh.runs.retire(idx);
        }
    }

    pub fn run(&mut self) -> SimResult<()> {
        self.advance()?;
        loop {
            if let (Some(nxt), None, false) = (self.nxt, self.cause, self.driver_busy) {
                let arrival = self.sh.runs.get(nxt).arrival;
                let at = if self.driver_t >= arrival { self.driver_t } else { arrival };
                let go = match self.sh.q.top_time() {
                    None => true,
                    Some(t) => t > at,
                };
                if go {
                    if arrival > self.driver_t {
                        self.driver_t = arrival;
                    }
                    let s = self.slot;
                    let n = self.queues[s].len() + self.current[s].is_some() as usize;
                    if n > self.max_queued {
                        self.cause = Some(NO_FREE_WORKER);
                        self.since = self.driver_t;
                        continue;
                    }
                    self.dispatch(nxt)?;
                    continue;
                }
            }
            let ev = match self.sh.q.pop() {
                Some(e) => e,
                None => break,
            };
            let t = ev.t;
            match (ev.kind, ev.payload) {
                (DISPATCHED, Payload::Run(idx)) => {
                    let driver = self.driver.unwrap();
                    self.sh.release(driver, t);
                    self.driver_busy = false;
                    self.driver_t = t;
                    self.hand_off(idx)?;
                    continue;
                }
                (EXEC_END, Payload::RunAttempt(idx, a)) => self.exec_end(idx, a, t),
                (READY, Payload::RunAttempt(idx, a)) => {
                    if self.sh.runs.alive(idx) && a == self.sh.runs.get(idx).attempt {
                        let seq = {
                            let r = self.sh.runs.get_mut(idx);
                            r.ready = t;
                            r.seq
                        };
                        let mc = self.member_cost();
                        self.stage.add(&mut self.sh, &mc, idx, seq, t);
                    }
                }
                (FLUSH_CPU, Payload::FlushCpu(task, b, rest)) => {
                    self.flush.as_mut().unwrap().cpu_done(&mut self.sh, task, b, rest, t)
                }
                (FLUSH_END, Payload::Batch(b)) => {
                    self.flush.as_mut().unwrap().flush_end(&mut self.sh, b, t)
                }
                (SYNC_CPU, Payload::TaskBatch(task, b)) => {
                    self.stage.sync_cpu_done(&mut self.sh, task, b, t)
                }
                (BACKGROUND_DONE, Payload::Task(task)) => self.sh.release(task, t),
                (RESUME, Payload::Run(idx)) => {
                    if !self.sh.runs.alive(idx) {
                        return Err(SimError::Internal(format!(
                            "a wake-up for seq {} after it committed", self.c.seq(idx))));
                    }
                    self.start(idx, t)
                }
                (EXEC_START, Payload::RunAttempt(idx, a)) => {
                    if self.sh.runs.alive(idx) && a == self.sh.runs.get(idx).attempt {
                        self.begin_exec(idx, t);
                    }
                }
                (CHAIN_DONE, Payload::ChainDone(task, idx, a)) => {
                    let mc = self.member_cost();
                    let done = self.chain.as_mut().unwrap().done(&mut self.sh, &mc, task, idx, a, t);
                    if let Some(idx) = done {
                        self.visible(idx, t);
                        let cc = self.sh.runs.get(idx).commit_cost;
                        if self.flush.is_some() {
                            self.flush.as_mut().unwrap().request(&mut self.sh, idx, t);
                        } else if cc > 0.0 {
                            let attempt = self.sh.runs.get(idx).attempt;
                            self.sh.q.push(t + cc, FINISHED, Payload::RunAttempt(idx, attempt));
                        } else {
                            self.finish(idx, t);
                        }
                    }
                }
                (CHAIN_START, Payload::RunAttempt(idx, a)) => {
                    let mc = self.member_cost();
                    self.chain.as_mut().unwrap().start(&mut self.sh, &mc, idx, a, t)
                }
                (FINISHED, Payload::RunAttempt(idx, a)) => {
                    if self.sh.runs.alive(idx) && a == self.sh.runs.get(idx).attempt {
                        self.finish(idx, t);
                    }
                }
                (GROUP_START, _) => {
                    let mc = self.member_cost();
                    self.stage.group_start(&mut self.sh, &mc, t)
                }
                (SYNC_END, Payload::Batch(b)) => self.commit(b, t),
                _ => return Err(SimError::Internal(format!("unexpected event kind {}", ev.kind))),
            }
        }
        if self.nxt.is_some() || self.committed != self.queued {
            let mut stuck: Vec<i64> = self.current.iter().flatten()
                .map(|&i| self.sh.runs.get(i).seq).collect();
            stuck.sort();
            stuck.truncate(8);
            let list = stuck.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ");
            return Err(SimError::Deadlock(format!(
                "no event can fire while {} queued transactions have not committed (running on \
                 threads: seq [{}]); `NoDeadlock` violated", self.queued as i64 - self.committed as i64,
                list)));
        }
        Ok(())
    }
}
