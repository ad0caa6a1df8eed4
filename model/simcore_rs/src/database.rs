//! MySQL 5.6 DATABASE submode (model/applier_mysql.py `simulate_database`): a schema in use is
//! pinned to its worker; a new schema goes to the worker holding the fewest; a transaction
//! whose schemas are pinned to different workers waits; isolated ones wait for every worker
//! and run alone. Workers queue several transactions; commit order is not preserved.

use std::collections::VecDeque;

use crate::cols::Cols;
use crate::core::*;
use crate::profile::Profile;
use crate::trackers::Tracker;

const READY: u8 = 1;

pub struct Database<'a> {
    c: &'a Cols<'a>,
    p: &'a Profile,
    workers: usize,
    checkpoint_group: usize,
    arrival: Option<&'a [f64]>,
    tracker: Tracker<'a>,
    sh: Shared,
    stage: CommitStage,
    pinned: FxMap<u32, (usize, i64)>,
    partitions: Vec<i64>,
    queues: Vec<VecDeque<Idx>>,
    busy: Vec<bool>,
    outstanding: usize,
    isolated: bool,
    coord_t: f64,
    cause: Option<usize>,
    since: f64,
    nxt: Option<Idx>,
    committed: u64,
    dispatched: u64,
    pub sink: Sink,
}

/// choose_worker's answer: a worker, or why the coordinator waits.
enum Choice {
    Worker(usize),
    Wait(usize),
}

impl<'a> Database<'a> {
    pub fn new(c: &'a Cols<'a>, p: &'a Profile, tracker: Tracker<'a>, workers: usize,
               checkpoint_group: usize, arrival: Option<&'a [f64]>, schedule: Record)
               -> Database<'a> {
        let cpus = p.cores.filter(|&k| k > 0).map(|k| CpuPool::new(k, p.per_core_queues));
        let member = if p.commit_serial != 0.0 || p.commit_byte != 0.0 {
            MemberCost::Sum
        } else {
            MemberCost::PerMember(0.0)
        };
        let stage = CommitStage::new(p.group_sync(), false, p.sync_cpu, cpus.is_some(), member,
                                     p.wakeup);
        Database {
            c, p, workers, checkpoint_group, arrival, tracker,
            sh: Shared { q: Queue::new(), runs: Runs::new(), cpus, disk: None,
                         blocked: [0.0; N_CAUSES] },
            stage, pinned: FxMap::default(), partitions: vec![0; workers],
            queues: (0..workers).map(|_| VecDeque::new()).collect(), busy: vec![false; workers],
            outstanding: 0, isolated: false, coord_t: 0.0, cause: None, since: 0.0, nxt: None,
            committed: 0, dispatched: 0, sink: Sink::new(workers, c.n, schedule),
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
            self.sh.runs.insert(run);
            self.nxt = Some(i);
        }
        Ok(())
    }

    fn choose_worker(&self) -> Choice {
        let idx = self.nxt.unwrap();
        if self.sh.runs.get(idx).dep_a != 0 || self.isolated {
            return if self.outstanding > 0 { Choice::Wait(BARRIER) } else { Choice::Worker(0) };
        }
        let mut owner: Option<usize> = None;
        for d in self.c.schemas(idx) {
            if let Some(&(w, _)) = self.pinned.get(d) {
                match owner {
                    Some(o) if o != w => return Choice::Wait(DEPENDENCY),
                    _ => owner = Some(w),
                }
            }
        }
        if self.outstanding >= self.checkpoint_group {
            return Choice::Wait(WINDOW_FULL);
        }
        if let Some(w) = owner {
            return Choice::Worker(w);
        }
        let mut best = 0;
        for w in 0..self.workers {
            if self.partitions[w] <= self.partitions[best] {
                best = w;
            }
        }
        Choice::Worker(best)
    }

    /// Start(t) of the head of worker w's queue, when the worker is free.
    fn start(&mut self, w: usize, now: f64) {
        if self.busy[w] {
            return;
        }
        let idx = match self.queues[w].front() {
            Some(&i) => i,
            None => return,
        };
        self.busy[w] = true;
        let run = self.sh.runs.get_mut(idx);
        run.start = now;
        if self.sh.cpus.is_none() {
            run.exec_end = now + run.exec;
            run.ready = run.exec_end + run.commit_cost;
            let ready = run.ready;
            self.sh.q.push(ready, READY, Payload::Run(idx));
        } else {
            let d = run.exec + run.commit_cost;
            self.sh.execute(idx as Holder, now, d, READY, Payload::Run(idx));
        }
    }

    /// Dispatch(t, w): pinned schemas follow their worker; a new one the least loaded.
    fn dispatch(&mut self, w: usize) -> SimResult<()> {
        let idx = self.nxt.unwrap();
        let cost = self.p.dispatch_cost(self.c, idx, self.workers);
        let isolated = {
            let run = self.sh.runs.get_mut(idx);
            run.worker = w;
            run.dispatch = self.coord_t;
            run.dep_a != 0
        };
        self.coord_t += cost;
        if !isolated {
            for d in self.c.schemas(idx) {
                match self.pinned.get_mut(d) {
                    None => {
                        self.pinned.insert(*d, (w, 1));
                        self.partitions[w] += 1;
                    }
                    Some(e) => e.1 += 1,
                }
            }
        }
        self.queues[w].push_back(idx);
        self.outstanding += 1;
        self.isolated = isolated;
        self.dispatched += 1;
        self.start(w, self.coord_t);
        self.advance()
    }

    /// ExecEnd(t): ready; it joins the (unordered) group commit.
    fn exec_end(&mut self, idx: Idx, t: f64) {
        if self.sh.cpus.is_some() {
            self.sh.release(idx as Holder, t);
            let run = self.sh.runs.get_mut(idx);
            run.ready = t;
            run.exec_end = t - run.commit_cost;
        }
        let seq = self.sh.runs.get(idx).seq;
        let mc = self.member_cost();
        self.stage.add(&mut self.sh, &mc, idx, seq, t);
    }

    /// Commit(t): the group's members commit, unpin their schemas, free their workers.
    fn commit(&mut self, b: BatchId, t: f64) {
        let batch = self.sh.q.take_batch(b);
        let sync = self.stage.sync;
        let mut last_seq = 0;
        for &(idx, _) in &batch {
            let (w, isolated) = {
                let run = self.sh.runs.get_mut(idx);
                run.commit = t;
                account_commit_wait(run, sync, false, &mut self.sh.blocked);
                last_seq = run.seq;
                (run.worker, run.dep_a != 0)
            };
            self.queues[w].pop_front();
            self.busy[w] = false;
            self.outstanding -= 1;
            if isolated {
                self.isolated = false;
            }
            self.committed += 1;
            if !isolated {
                for d in self.c.schemas(idx) {
                    let gone = {
                        let e = self.pinned.get_mut(d).unwrap();
                        e.1 -= 1;
                        e.1 == 0
                    };
                    if gone {
                        self.pinned.remove(d);
                        self.partitions[w] -= 1;
                    }
                }
            }
            self.sink.take(self.sh.runs.get(idx));
            self.sh.runs.retire(idx);
            self.start(w, t);
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
                    match self.choose_worker() {
                        Choice::Wait(cause) => {
                            self.cause = Some(cause);
                            self.since = self.coord_t;
                            continue;
                        }
                        Choice::Worker(w) => {
                            self.dispatch(w)?;
                            continue;
                        }
                    }
                }
            }
            let ev = match self.sh.q.pop() {
                Some(e) => e,
                None => {
                    if let Some(nxt) = self.nxt {
                        return Err(SimError::Deadlock(format!(
                            "coordinator blocked ({}) before seq {}",
                            self.cause.map_or("None", |c| CAUSE_NAMES[c]),
                            self.sh.runs.get(nxt).seq)));
                    }
                    break;
                }
            };
            let t = ev.t;
            match (ev.kind, ev.payload) {
                (READY, Payload::Run(idx)) => self.exec_end(idx, t),
                (GROUP_START, _) => {
                    let mc = self.member_cost();
                    self.stage.group_start(&mut self.sh, &mc, t);
                }
                (SYNC_CPU, Payload::TaskBatch(task, b)) => self.stage.sync_cpu_done(&mut self.sh, task, b, t),
                (SYNC_END, Payload::Batch(b)) => self.commit(b, t),
                _ => return Err(SimError::Internal(format!("unexpected event kind {}", ev.kind))),
            }
            if let Some(cause) = self.cause {
                let now_cause = match self.choose_worker() {
                    Choice::Wait(c) => Some(c),
                    Choice::Worker(_) => None,
                };
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
