//! The MySQL LOGICAL_CLOCK applier (model/applier_mysql.py `simulate_logical_clock`), one
//! handler per event kind, named as the specs' actions (docs/names.md): `dispatch`, `start`,
//! `exec_end`, `commit`. Transactions with `replica_locks` (commit-order deadlocks) and the
//! bugs `victim_wakeup_lost` / `ticket_overflow` are the reference engine's alone
//! (model/engine.py sends those runs there).

use std::collections::{BinaryHeap, VecDeque};
use std::cmp::Reverse;

use crate::cols::Cols;
use crate::core::*;
use crate::profile::Profile;
use crate::trackers::{ClockOrder, Tracker};

const READY: u8 = 1;

pub struct Bugs {
    pub off_by_one: bool,
    pub not_prefix: bool,
    pub rotation_ignored: bool,
}

/// rules.LowWaterMark
struct LowWaterMark {
    value: i64,
    not_prefix: bool,
    rotation_ignored: bool,
}

impl LowWaterMark {
    fn barrier_dispatched(&mut self) {
        if !self.rotation_ignored {
            self.value = 0;
        }
    }
    fn committed(&mut self, sn: i64) {
        if self.not_prefix {
            self.value = self.value.max(sn);
        }
    }
    fn released(&mut self, sn: i64) {
        if !self.not_prefix {
            self.value = sn;
        }
    }
}

pub struct Mysql<'a> {
    c: &'a Cols<'a>,
    p: &'a Profile,
    workers: usize,
    arrival: Option<&'a [f64]>,
    tracker: Tracker<'a>,
    sh: Shared,
    stage: CommitStage,
    free: BinaryHeap<Reverse<usize>>,
    gaq: VecDeque<Idx>,
    lwm: LowWaterMark,
    clock: ClockOrder,
    ordered: bool,
    checkpoint_group: usize,
    off_by_one: bool,
    coord_t: f64,
    cause: Option<usize>,
    since: f64,
    nxt: Option<Idx>,
    nxt_barrier: bool,
    committed: u64,
    dispatched: u64,
    pub sink: Sink,
}

impl<'a> Mysql<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(c: &'a Cols<'a>, p: &'a Profile, tracker: Tracker<'a>, workers: usize,
               preserve_commit_order: bool, checkpoint_group: usize, bugs: Bugs,
               unenforced: bool, arrival: Option<&'a [f64]>, schedule: Record) -> Mysql<'a> {
        let ordered = preserve_commit_order && !unenforced;
        let cpus = p.cores.filter(|&k| k > 0).map(|k| CpuPool::new(k, p.per_core_queues));
        let member = if p.commit_serial != 0.0 || p.commit_byte != 0.0 {
            MemberCost::Sum
        } else {
            MemberCost::PerMember(0.0)
        };
        let stage = CommitStage::new(p.group_sync(), ordered, p.sync_cpu, cpus.is_some(), member,
                                     p.wakeup);
        Mysql {
            c, p, workers, arrival, tracker,
            sh: Shared { q: Queue::new(), runs: Runs::new(), cpus, disk: None,
                         blocked: [0.0; N_CAUSES] },
            stage,
            free: (0..workers).map(Reverse).collect(),
            gaq: VecDeque::new(),
            lwm: LowWaterMark { value: 0, not_prefix: bugs.not_prefix,
                                rotation_ignored: bugs.rotation_ignored },
            clock: ClockOrder::new(bugs.rotation_ignored),
            ordered, checkpoint_group, off_by_one: bugs.off_by_one,
            coord_t: 0.0, cause: None, since: 0.0, nxt: None, nxt_barrier: false,
            committed: 0, dispatched: 0,
            sink: Sink::new(workers, c.n, schedule),
        }
    }

    pub fn blocked(&self) -> [f64; N_CAUSES] {
        self.sh.blocked
    }

    /// The next run off the tracker, with its barrier decision (`advance`).
    fn advance(&mut self) -> SimResult<()> {
        self.nxt = None;
        if let Some((i, dep)) = self.tracker.pull()? {
            let c = self.c;
            let exec = self.p.parallel_exec(c, i, self.p.exec_cost(c, i), self.workers);
            let arrival = self.arrival.map_or(0.0, |a| a[i]);
            let mut run = Run::new(i, c.seq(i), exec, self.p.commit_cost(c, i), arrival);
            run.dep_a = dep.a;
            run.dep_b = dep.b;
            self.nxt_barrier = self.clock.push(&dep);
            if self.stage.next_seq.is_none() {
                self.stage.next_seq = Some(run.seq);
            }
            self.sh.runs.insert(run);
            self.nxt = Some(i);
        }
        Ok(())
    }

    /// rules.coordinator_wait
    fn why_blocked(&self) -> Option<usize> {
        let outstanding = self.gaq.len();
        if outstanding >= self.checkpoint_group {
            return Some(WINDOW_FULL);
        }
        let nxt = self.sh.runs.get(self.nxt.unwrap());
        if outstanding > 0 {
            if self.nxt_barrier {
                return Some(BARRIER);
            }
            let lwm = if self.off_by_one { self.lwm.value + 1 } else { self.lwm.value };
            if nxt.dep_a > lwm {
                return Some(DEPENDENCY);
            }
        }
        if self.free.is_empty() {
            return Some(NO_FREE_WORKER);
        }
        None
    }

    fn member_cost(&self) -> impl Fn(Idx) -> f64 + 'a {
        let (c, p) = (self.c, self.p);
        move |i| p.member_cost(c, i)
    }

    /// Dispatch(t, w): the coordinator hands the next transaction to the lowest idle worker.
    fn dispatch(&mut self) -> SimResult<()> {
        let idx = self.nxt.unwrap();
        if self.nxt_barrier {
            self.lwm.barrier_dispatched();
        }
        let Reverse(w) = self.free.pop().unwrap();
        let cost = self.p.dispatch_cost(self.c, idx, self.workers);
        {
            let run = self.sh.runs.get_mut(idx);
            run.worker = w;
            run.dispatch = self.coord_t;
        }
        self.coord_t += cost;
        self.start(idx, self.coord_t);
        self.gaq.push_back(idx);
        self.dispatched += 1;
        self.advance()
    }

    /// Start(t): it executes, then its own commit step, on its worker (`launch`).
    fn start(&mut self, idx: Idx, now: f64) {
        let run = self.sh.runs.get_mut(idx);
        run.phase = 1;
        run.start = now;
        let attempt = run.attempt;
        if self.sh.cpus.is_none() {
            run.exec_end = now + run.exec;
            run.ready = run.exec_end + run.commit_cost;
            let ready = run.ready;
            self.sh.q.push(ready, READY, Payload::RunAttempt(idx, attempt));
        } else {
            let d = run.exec + run.commit_cost;
            self.sh.execute(idx as Holder, now, d, READY, Payload::RunAttempt(idx, attempt));
        }
    }

    /// ExecEnd(t): ready to commit; it joins the group commit.
    fn exec_end(&mut self, idx: Idx, attempt: u32, t: f64) {
        if attempt != self.sh.runs.get(idx).attempt {
            return;
        }
        if self.sh.cpus.is_some() {
            self.sh.release(idx as Holder, t);
            let run = self.sh.runs.get_mut(idx);
            run.ready = t;
            run.exec_end = t - run.commit_cost;
        }
        let run = self.sh.runs.get_mut(idx);
        run.phase = 2;
        let seq = run.seq;
        let mc = self.member_cost();
        self.stage.add(&mut self.sh, &mc, idx, seq, t);
    }

    /// Commit(t): a group's sync ended; its members commit, the GAQ's committed head goes.
    fn commit(&mut self, b: BatchId, t: f64) {
        let batch = self.sh.q.take_batch(b);
        let sync = self.stage.sync;
        let mut last_seq = 0;
        for &(idx, _) in &batch {
            let run = self.sh.runs.get_mut(idx);
            run.commit = t;
            run.done = true;
            account_commit_wait(run, sync, self.ordered, &mut self.sh.blocked);
            self.free.push(Reverse(run.worker));
            self.committed += 1;
            self.lwm.committed(run.dep_b);
            last_seq = run.seq;
            self.sink.take(run);
        }
        while let Some(&head) = self.gaq.front() {
            if !self.sh.runs.get(head).done {
                break;
            }
            self.gaq.pop_front();
            let sn = self.sh.runs.get(head).dep_b;
            self.lwm.released(sn);
            self.sh.runs.retire(head);
        }
        let mc = self.member_cost();
        self.stage.group_done(&mut self.sh, &mc, last_seq, t);
    }

    pub fn run(&mut self) -> SimResult<()> {
        self.advance()?;
        loop {
            if let (Some(nxt), None) = (self.nxt, self.cause) {
                let arrival = self.sh.runs.get(nxt).arrival;
                let at = if self.coord_t >= arrival { self.coord_t } else { arrival };
                let go = match self.sh.q.top_time() {
                    None => true,
                    Some(t) => t > at,
                };
                if go {
                    if arrival > self.coord_t {
                        self.coord_t = arrival;
                    }
                    self.cause = self.why_blocked();
                    if self.cause.is_some() {
                        self.since = self.coord_t;
                        continue;
                    }
                    self.dispatch()?;
                    continue;
                }
            }
            let ev = match self.sh.q.pop() {
                Some(e) => e,
                None => {
                    if let Some(nxt) = self.nxt {
                        return Err(SimError::Deadlock(format!(
                            "coordinator blocked ({}) before seq {} with nothing in flight",
                            self.cause.map_or("None", |c| CAUSE_NAMES[c]),
                            self.sh.runs.get(nxt).seq)));
                    }
                    break;
                }
            };
            let t = ev.t;
            match (ev.kind, ev.payload) {
                (READY, Payload::RunAttempt(idx, a)) => self.exec_end(idx, a, t),
                (GROUP_START, _) => {
                    let mc = self.member_cost();
                    self.stage.group_start(&mut self.sh, &mc, t);
                }
                (SYNC_CPU, Payload::TaskBatch(task, b)) => self.stage.sync_cpu_done(&mut self.sh, task, b, t),
                (SYNC_END, Payload::Batch(b)) => self.commit(b, t),
                _ => return Err(SimError::Internal(format!("unexpected event kind {}", ev.kind))),
            }
            if let Some(cause) = self.cause {
                let now_cause = self.why_blocked();
                if now_cause != Some(cause) {
                    self.sh.blocked[cause] += t - self.since;
                    self.since = t;
                    self.cause = now_cause;
                    if self.cause.is_none() {
                        self.coord_t = self.coord_t.max_py(t);
                    }
                }
            }
        }
        if self.committed != self.dispatched {
            return Err(SimError::Deadlock(format!(
                "{} dispatched transactions never committed", self.dispatched - self.committed)));
        }
        Ok(())
    }
}
