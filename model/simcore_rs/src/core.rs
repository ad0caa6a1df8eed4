//! What every applier shares (model/simcore.py): the event heap, the run records, the CPU
//! cores, the disk, the group-commit stage, the commit chain and the redo-log flush. Each
//! type and method has the name of its Python twin and does the same steps in the same
//! order, pushing the same events: ties in time break by push order in both engines.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use crate::profile::Profile;

// ------------------------------------------------------------------ a fast hasher (FxHash)

#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl Hasher for Fx {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let mut last = 0u64;
        for (i, b) in chunks.remainder().iter().enumerate() {
            last |= (*b as u64) << (8 * i);
        }
        self.write_u64(last ^ (bytes.len() as u64) << 56);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_i64(&mut self, i: i64) {
        self.write_u64(i as u64)
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

// ------------------------------------------------------------------ causes (simcore.CAUSES)

pub const DEPENDENCY: usize = 0;
pub const BARRIER: usize = 1;
pub const WINDOW_FULL: usize = 2;
pub const NO_FREE_WORKER: usize = 3;
pub const GCO_WAIT: usize = 4;
pub const PRIOR_COMMIT_WAIT: usize = 5;
pub const LOCK_WAIT: usize = 6;
pub const COMMIT_ORDER: usize = 7;
pub const SYNC_WAIT: usize = 8;
pub const RETRY: usize = 9;
pub const N_CAUSES: usize = 10;
pub const CAUSE_NAMES: [&str; N_CAUSES] = [
    "dependency", "barrier", "window_full", "no_free_worker", "gco_wait", "prior_commit_wait",
    "lock_wait", "commit_order", "sync_wait", "retry",
];

// ------------------------------------------------------------------ errors

#[derive(Debug)]
pub enum SimError {
    Tracker(String),
    Deadlock(String),
    Internal(String),
}

pub type SimResult<T> = Result<T, SimError>;

// ------------------------------------------------------------------ run records

pub type Idx = usize; // a transaction's position in the trace

/// simcore.TxnRun: one transaction's life on the replica. NaN stands for Python's None.
#[derive(Clone, Debug)]
pub struct Run {
    pub idx: Idx,
    pub seq: i64,
    pub dep_a: i64, // last_committed, or group id
    pub dep_b: i64, // sequence_number
    pub flags: u8,  // GTID flags (groups)
    pub exec: f64,
    pub commit_cost: f64,
    pub arrival: f64,
    pub worker: usize,
    pub dispatch: f64,
    pub start: f64,
    pub exec_end: f64,
    pub ready: f64,
    pub commit: f64,
    pub retries: u32,
    pub wasted: f64,
    pub attempt: u32,
    pub phase: u8,
    pub gco_wait: i64,
    pub spec_wait: bool,
    pub marked: bool,
    pub wait_since: f64,
    pub wait_cause: Option<usize>,
    pub done: bool,
}

impl Run {
    pub fn new(idx: Idx, seq: i64, exec: f64, commit_cost: f64, arrival: f64) -> Run {
        Run {
            idx, seq, dep_a: 0, dep_b: 0, flags: 0, exec, commit_cost, arrival, worker: 0,
            dispatch: f64::NAN, start: f64::NAN, exec_end: f64::NAN, ready: f64::NAN,
            commit: f64::NAN, retries: 0, wasted: 0.0, attempt: 0, phase: 0, gco_wait: 0,
            spec_wait: false, marked: false, wait_since: 0.0, wait_cause: None, done: false,
        }
    }
}

/// The runs in flight, by position: a ring that grows when the window of runs alive does.
/// Only what is in flight is held, as the Python appliers hold only their in-flight TxnRuns.
pub struct Runs {
    slots: Vec<Option<Run>>,
    mask: usize,
}

impl Runs {
    pub fn new() -> Runs {
        Runs { slots: (0..64).map(|_| None).collect(), mask: 63 }
    }
    pub fn insert(&mut self, run: Run) {
        loop {
            let s = run.idx & self.mask;
            match &self.slots[s] {
                Some(other) if other.idx != run.idx => self.grow(),
                _ => {
                    self.slots[s] = Some(run);
                    return;
                }
            }
        }
    }
    fn grow(&mut self) {
        let cap = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, (0..cap).map(|_| None).collect());
        self.mask = cap - 1;
        for r in old.into_iter().flatten() {
            let s = r.idx & self.mask;
            self.slots[s] = Some(r);
        }
    }
    #[inline]
    pub fn alive(&self, idx: Idx) -> bool {
        matches!(&self.slots[idx & self.mask], Some(r) if r.idx == idx)
    }
    #[inline]
    pub fn get(&self, idx: Idx) -> &Run {
        match &self.slots[idx & self.mask] {
            Some(r) if r.idx == idx => r,
            _ => panic!("run {} is not in flight", idx),
        }
    }
    #[inline]
    pub fn get_mut(&mut self, idx: Idx) -> &mut Run {
        match &mut self.slots[idx & self.mask] {
            Some(r) if r.idx == idx => r,
            _ => panic!("run {} is not in flight", idx),
        }
    }
    pub fn retire(&mut self, idx: Idx) {
        let s = idx & self.mask;
        if matches!(&self.slots[s], Some(r) if r.idx == idx) {
            self.slots[s] = None;
        }
    }
}

// ------------------------------------------------------------------ events

pub type BatchId = usize;
pub type TaskId = u64;
/// Who holds a core: a run (by position) or a CpuTask.
pub type Holder = u64;
pub const TASK_BIT: u64 = 1 << 62;

#[derive(Clone, Copy, Debug)]
pub enum Payload {
    None,
    Run(Idx),
    RunAttempt(Idx, u32),
    Batch(BatchId),
    TaskBatch(TaskId, BatchId),
    FlushCpu(TaskId, BatchId, f64),
    ChainDone(Option<TaskId>, Idx, u32),
    Task(TaskId),
}

pub struct Event {
    pub t: f64,
    pub c: u64,
    pub kind: u8,
    pub payload: Payload,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.c == o.c
    }
}
impl Eq for Event {}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Event {
    // reversed: BinaryHeap is a max-heap, the Python heap pops the smallest (t, counter)
    fn cmp(&self, o: &Self) -> Ordering {
        match o.t.partial_cmp(&self.t) {
            Some(Ordering::Equal) | None => o.c.cmp(&self.c),
            Some(ord) => ord,
        }
    }
}

/// The heap and its counter (`heapq` + `itertools.count()`).
pub struct Queue {
    heap: BinaryHeap<Event>,
    counter: u64,
    pub batches: Vec<Vec<(Idx, u32)>>,
    free_batches: Vec<BatchId>,
    tasks: u64,
}

impl Queue {
    pub fn new() -> Queue {
        Queue { heap: BinaryHeap::new(), counter: 0, batches: Vec::new(), free_batches: Vec::new(), tasks: 0 }
    }
    #[inline]
    pub fn push(&mut self, t: f64, kind: u8, payload: Payload) {
        let c = self.counter;
        self.counter += 1;
        self.heap.push(Event { t, c, kind, payload });
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        self.heap.pop()
    }
    #[inline]
    pub fn top_time(&self) -> Option<f64> {
        self.heap.peek().map(|e| e.t)
    }
    pub fn new_batch(&mut self, items: Vec<(Idx, u32)>) -> BatchId {
        if let Some(b) = self.free_batches.pop() {
            self.batches[b] = items;
            b
        } else {
            self.batches.push(items);
            self.batches.len() - 1
        }
    }
    pub fn take_batch(&mut self, b: BatchId) -> Vec<(Idx, u32)> {
        self.free_batches.push(b);
        std::mem::take(&mut self.batches[b])
    }
    pub fn new_task(&mut self) -> TaskId {
        self.tasks += 1;
        TASK_BIT | self.tasks
    }
}

// ------------------------------------------------------------------ Disk

/// simcore.THROTTLE_SLICE_S: the rate limit's bucket holds what it allows in one slice of cgroup
/// v1's blkio throttle (100 ms).
pub const THROTTLE_SLICE_S: f64 = 0.1;

/// simcore.WriteBucket: the device's write rate limit (`disk_write_iops`), a token bucket full
/// at the start; a write with no token waits for the next, later writes behind it.
pub struct WriteBucket {
    pub interval: f64,
    pub capacity: f64,
    pub tokens: f64,
    pub at: f64,
}

impl WriteBucket {
    pub fn new(iops: f64) -> WriteBucket {
        let capacity = 1.0f64.max(iops * THROTTLE_SLICE_S);
        WriteBucket { interval: 1e6 / iops, capacity, tokens: capacity, at: 0.0 }
    }

    /// A write issued at `now`: when it gets its token and goes to the device.
    pub fn take(&mut self, now: f64) -> f64 {
        let mut t = if now >= self.at { now } else { self.at };
        let mut tokens = self.tokens + (t - self.at) / self.interval;
        if tokens > self.capacity {
            tokens = self.capacity;
        }
        if tokens < 1.0 {
            t += (1.0 - tokens) * self.interval;
            tokens = 1.0;
        }
        self.tokens = tokens - 1.0;
        self.at = t;
        t
    }
}

/// simcore.Disk: one flush at a time on the device (`shared`), each holding it for `hold` (the
/// profile's `disk_hold`, µs) from its start, or all of it when None or longer, or for `share`
/// of it (`disk_hold_share`) when set; every flush passes the `bucket` first (`disk_write_iops`).
pub struct Disk {
    pub free_at: f64,
    pub hold: Option<f64>,
    pub share: Option<f64>,
    pub shared: bool,
    pub bucket: Option<WriteBucket>,
}

impl Disk {
    /// simcore.device: shared, rate-limited, both, or None.
    pub fn for_profile(p: &Profile) -> Option<Disk> {
        if !p.shared_disk && p.disk_write_iops.is_none() {
            return None;
        }
        Some(Disk { free_at: 0.0, hold: p.disk_hold, share: p.disk_hold_share,
                    shared: p.shared_disk,
                    bucket: p.disk_write_iops.map(WriteBucket::new) })
    }

    pub fn flush(&mut self, now: f64, duration: f64) -> f64 {
        let now = match self.bucket.as_mut() {
            Some(b) => b.take(now),
            None => now,
        };
        if !self.shared {
            return now + duration;
        }
        let start = if now >= self.free_at { now } else { self.free_at };
        let hold = match self.share {
            Some(share) => Some(share * duration),
            None => self.hold,
        };
        match hold {
            Some(hold) if hold < duration => {
                self.free_at = start + hold;
                start + duration
            }
            _ => {
                self.free_at = start + duration;
                self.free_at
            }
        }
    }
}

#[inline]
pub fn flush_end(disk: &mut Option<Disk>, now: f64, duration: f64) -> f64 {
    match disk {
        Some(d) if duration > 0.0 => d.flush(now, duration),
        _ => now + duration,
    }
}

// ------------------------------------------------------------------ CpuPool

struct CpuEntry {
    holder: Holder,
    duration: f64,
    kind: u8,
    payload: Payload,
}

pub struct CpuPool {
    free: usize,
    queue: VecDeque<CpuEntry>,
    holders: FxMap<Holder, usize>,
    per_core: bool,
    idle: Vec<usize>,
    queues: Vec<VecDeque<CpuEntry>>,
    last: usize,
}

impl CpuPool {
    pub fn new(cores: usize, per_core: bool) -> CpuPool {
        CpuPool {
            free: cores,
            queue: VecDeque::new(),
            holders: FxMap::default(),
            per_core,
            idle: if per_core { (0..cores).collect() } else { Vec::new() },
            queues: if per_core { (0..cores).map(|_| VecDeque::new()).collect() } else { Vec::new() },
            last: 0,
        }
    }

    pub fn execute(&mut self, q: &mut Queue, holder: Holder, now: f64, duration: f64, kind: u8,
                   payload: Payload) {
        if self.per_core {
            if !self.idle.is_empty() {
                let core = if self.idle.contains(&self.last) { self.last } else { self.idle[0] };
                let pos = self.idle.iter().position(|&c| c == core).unwrap();
                self.idle.remove(pos);
                self.start(q, core, holder, now, duration, kind, payload);
            } else {
                self.queues[self.last].push_back(CpuEntry { holder, duration, kind, payload });
            }
            return;
        }
        if self.free > 0 {
            self.free -= 1;
            self.holders.insert(holder, 0);
            q.push(now + duration, kind, payload);
        } else {
            self.queue.push_back(CpuEntry { holder, duration, kind, payload });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn start(&mut self, q: &mut Queue, core: usize, holder: Holder, now: f64, duration: f64,
             kind: u8, payload: Payload) {
        self.holders.insert(holder, core);
        self.last = core;
        q.push(now + duration, kind, payload);
    }

    pub fn release(&mut self, q: &mut Queue, holder: Holder, now: f64) {
        let core = match self.holders.remove(&holder) {
            Some(c) => c,
            None => {
                if self.per_core {
                    for queue in self.queues.iter_mut() {
                        if let Some(i) = queue.iter().position(|e| e.holder == holder) {
                            queue.remove(i);
                            return;
                        }
                    }
                } else if let Some(i) = self.queue.iter().position(|e| e.holder == holder) {
                    self.queue.remove(i);
                }
                return;
            }
        };
        if self.per_core {
            self.last = core;
            if let Some(e) = self.queues[core].pop_front() {
                self.start(q, core, e.holder, now, e.duration, e.kind, e.payload);
            } else {
                self.idle.push(core);
            }
            return;
        }
        if let Some(e) = self.queue.pop_front() {
            self.holders.insert(e.holder, 0);
            q.push(now + e.duration, e.kind, e.payload);
        } else {
            self.free += 1;
        }
    }
}

// ------------------------------------------------------------------ CommitStage

pub const SYNC_END: u8 = 2;
pub const GROUP_START: u8 = 4;
pub const SYNC_CPU: u8 = 5;

/// How the leader's per-member work is priced (`member_cpu` x members, or the sum of
/// `member_cost` over them).
pub enum MemberCost {
    PerMember(f64),
    Sum,
}

pub struct CommitStage {
    pub sync: f64,
    pub ordered: bool,
    pub busy: bool,
    pub waiting: BTreeMap<i64, Idx>,
    pub next_seq: Option<i64>,
    pub pending: bool,
    pub sync_cpu: f64,
    pub member: MemberCost,
    pub wakeup: f64,
    /// the group's sync goes to the shared disk (`Shared::disk`) when there is one; false: a
    /// plain wait (simcore.CommitStage's `disk=None`: a relaxed group's records riding on the
    /// next prepare's write, applier_mariadb)
    pub on_disk: bool,
}

impl CommitStage {
    pub fn new(sync: f64, ordered: bool, sync_cpu: f64, cpus: bool, member: MemberCost,
               wakeup: f64) -> CommitStage {
        CommitStage {
            sync, ordered, busy: false, waiting: BTreeMap::new(), next_seq: None, pending: false,
            sync_cpu: if cpus { sync_cpu.min_py(sync) } else { 0.0 },
            member, wakeup, on_disk: true,
        }
    }
}

/// Python's min(a, b) / max(a, b) (the first unless the second is strictly better).
pub trait PyMinMax {
    fn min_py(self, b: f64) -> f64;
    fn max_py(self, b: f64) -> f64;
}
impl PyMinMax for f64 {
    #[inline]
    fn min_py(self, b: f64) -> f64 {
        if b < self { b } else { self }
    }
    #[inline]
    fn max_py(self, b: f64) -> f64 {
        if b > self { b } else { self }
    }
}

/// What the stage and the other shared pieces need from their applier: the run records, the
/// heap, the cores, the disk and a transaction's member cost.
pub struct Shared {
    pub q: Queue,
    pub runs: Runs,
    pub cpus: Option<CpuPool>,
    pub disk: Option<Disk>,
    pub blocked: [f64; N_CAUSES],
}

impl Shared {
    #[inline]
    pub fn execute(&mut self, holder: Holder, now: f64, duration: f64, kind: u8, payload: Payload) {
        self.cpus.as_mut().unwrap().execute(&mut self.q, holder, now, duration, kind, payload)
    }
    #[inline]
    pub fn release(&mut self, holder: Holder, now: f64) {
        self.cpus.as_mut().unwrap().release(&mut self.q, holder, now)
    }
}

impl CommitStage {
    /// `run` is ready to commit; the group forms after every event of this instant.
    pub fn add(&mut self, sh: &mut Shared, member_cost: &dyn Fn(Idx) -> f64, idx: Idx, seq: i64,
               now: f64) {
        self.waiting.insert(seq, idx);
        if !self.busy && !self.pending {
            match sh.q.top_time() {
                Some(t) if t <= now => {
                    self.pending = true;
                    sh.q.push(now, GROUP_START, Payload::None);
                }
                _ => self.start_group(sh, member_cost, now),
            }
        }
    }

    pub fn group_start(&mut self, sh: &mut Shared, member_cost: &dyn Fn(Idx) -> f64, now: f64) {
        self.pending = false;
        if !self.busy {
            self.start_group(sh, member_cost, now);
        }
    }

    pub fn withdraw(&mut self, seq: i64) {
        self.waiting.remove(&seq);
    }

    pub fn group_done(&mut self, sh: &mut Shared, member_cost: &dyn Fn(Idx) -> f64,
                      last_seq: i64, now: f64) {
        self.busy = false;
        if self.ordered {
            self.next_seq = Some(last_seq + 1);
        }
        if self.wakeup > 0.0 && !self.waiting.is_empty() {
            self.pending = true;
            sh.q.push(now + self.wakeup, GROUP_START, Payload::None);
            return;
        }
        self.start_group(sh, member_cost, now);
    }

    fn start_group(&mut self, sh: &mut Shared, member_cost: &dyn Fn(Idx) -> f64, now: f64) {
        if self.waiting.is_empty() {
            return;
        }
        let mut batch: Vec<(Idx, u32)> = Vec::new();
        if self.ordered {
            let mut seq = self.next_seq.unwrap_or(i64::MIN);
            while let Some(idx) = self.waiting.remove(&seq) {
                batch.push((idx, 0));
                seq += 1;
            }
            if batch.is_empty() {
                return;
            }
        } else {
            batch.extend(self.waiting.values().map(|&i| (i, 0)));
            self.waiting.clear();
        }
        self.busy = true;
        let members = match self.member {
            MemberCost::PerMember(c) => c * batch.len() as f64,
            MemberCost::Sum => {
                let mut s = 0.0;
                for &(i, _) in &batch {
                    s += member_cost(i);
                }
                s
            }
        };
        let b = sh.q.new_batch(batch);
        if sh.cpus.is_some() && self.sync_cpu + members > 0.0 {
            let task = sh.q.new_task();
            sh.execute(task, now, self.sync_cpu + members, SYNC_CPU, Payload::TaskBatch(task, b));
        } else {
            let end = if self.on_disk {
                flush_end(&mut sh.disk, now + members, self.sync)
            } else {
                now + members + self.sync
            };
            sh.q.push(end, SYNC_END, Payload::Batch(b));
        }
    }

    pub fn sync_cpu_done(&mut self, sh: &mut Shared, task: TaskId, b: BatchId, now: f64) {
        sh.release(task, now);
        let end = if self.on_disk {
            flush_end(&mut sh.disk, now, self.sync - self.sync_cpu)
        } else {
            now + (self.sync - self.sync_cpu)
        };
        sh.q.push(end, SYNC_END, Payload::Batch(b));
    }
}

/// simcore.account_commit_wait
#[inline]
pub fn account_commit_wait(run: &Run, sync: f64, ordered: bool, blocked: &mut [f64; N_CAUSES]) {
    let wait = run.commit - run.ready - sync;
    if wait > 1e-9 {
        blocked[if ordered { COMMIT_ORDER } else { SYNC_WAIT }] += wait;
    }
}

// ------------------------------------------------------------------ CommitChain

pub const CHAIN_START: u8 = 11;
pub const CHAIN_DONE: u8 = 12;

pub struct CommitChain {
    pub wakeup: f64,
    pub next_seq: Option<i64>,
    pub busy: bool,
    pub waiting: FxMap<i64, Idx>,
}

impl CommitChain {
    pub fn add(&mut self, sh: &mut Shared, member_cost: &dyn Fn(Idx) -> f64, idx: Idx, now: f64) {
        let seq = sh.runs.get(idx).seq;
        self.waiting.insert(seq, idx);
        if !self.busy && Some(seq) == self.next_seq {
            self.begin(sh, member_cost, idx, now);
        }
    }

    pub fn withdraw(&mut self, seq: i64) {
        self.waiting.remove(&seq);
    }

    pub fn start(&mut self, sh: &mut Shared, member_cost: &dyn Fn(Idx) -> f64, idx: Idx,
                 attempt: u32, now: f64) {
        let ok = sh.runs.alive(idx) && {
            let r = sh.runs.get(idx);
            attempt == r.attempt && self.waiting.get(&r.seq) == Some(&idx)
        };
        if ok {
            self.begin(sh, member_cost, idx, now);
        } else {
            self.busy = false;
        }
    }

    /// A member's in-order commit ended; returns it (None if killed meanwhile).
    pub fn done(&mut self, sh: &mut Shared, member_cost: &dyn Fn(Idx) -> f64, task: Option<TaskId>,
                idx: Idx, attempt: u32, now: f64) -> Option<Idx> {
        if let Some(t) = task {
            sh.release(t, now);
        }
        self.busy = false;
        let seq = sh.runs.get(idx).seq;
        self.next_seq = Some(seq + 1);
        if let Some(&succ) = self.waiting.get(&(seq + 1)) {
            self.busy = true;
            if self.wakeup > 0.0 {
                let a = sh.runs.get(succ).attempt;
                sh.q.push(now + self.wakeup, CHAIN_START, Payload::RunAttempt(succ, a));
            } else {
                self.begin(sh, member_cost, succ, now);
            }
        }
        if attempt == sh.runs.get(idx).attempt { Some(idx) } else { None }
    }

    fn begin(&mut self, sh: &mut Shared, member_cost: &dyn Fn(Idx) -> f64, idx: Idx, now: f64) {
        let (seq, ready, attempt) = {
            let r = sh.runs.get(idx);
            (r.seq, r.ready, r.attempt)
        };
        self.waiting.remove(&seq);
        self.busy = true;
        if now - ready > 1e-9 {
            sh.blocked[COMMIT_ORDER] += now - ready;
        }
        let cost = member_cost(idx);
        if sh.cpus.is_some() && cost > 0.0 {
            let task = sh.q.new_task();
            sh.execute(task, now, cost, CHAIN_DONE, Payload::ChainDone(Some(task), idx, attempt));
        } else {
            sh.q.push(now + cost, CHAIN_DONE, Payload::ChainDone(None, idx, attempt));
        }
    }
}

// ------------------------------------------------------------------ LogFlush

pub const FLUSH_CPU: u8 = 6;
pub const FLUSH_END: u8 = 7;

pub struct LogFlush {
    pub grouped: bool,
    pub cpu: f64,
    pub kind: u8,
    pub busy: bool,
    pub waiting: Vec<(Idx, u32, f64)>,
}

impl LogFlush {
    pub fn request(&mut self, sh: &mut Shared, idx: Idx, now: f64) {
        let (attempt, cost) = {
            let r = sh.runs.get(idx);
            (r.attempt, r.commit_cost)
        };
        if !self.grouped {
            self.flush(sh, vec![(idx, attempt, cost)], now);
        } else {
            self.waiting.push((idx, attempt, cost));
            if !self.busy {
                self.next(sh, now);
            }
        }
    }

    fn next(&mut self, sh: &mut Shared, now: f64) {
        if !self.waiting.is_empty() {
            let batch = std::mem::take(&mut self.waiting);
            self.busy = true;
            self.flush(sh, batch, now);
        }
    }

    fn flush(&mut self, sh: &mut Shared, batch: Vec<(Idx, u32, f64)>, now: f64) {
        // max(r.commit_cost for r in batch): each request's cost kept with it (a request may
        // outlive its run's attempt)
        let mut cost = f64::NAN;
        for &(_, _, c) in &batch {
            if cost.is_nan() || c > cost {
                cost = c;
            }
        }
        let cpu = self.cpu.min_py(cost);
        let b = sh.q.new_batch(batch.into_iter().map(|(i, a, _)| (i, a)).collect());
        if cpu > 0.0 {
            let task = sh.q.new_task();
            sh.execute(task, now, cpu, FLUSH_CPU, Payload::FlushCpu(task, b, cost - cpu));
        } else {
            let end = flush_end(&mut sh.disk, now, cost);
            sh.q.push(end, FLUSH_END, Payload::Batch(b));
        }
    }

    pub fn cpu_done(&mut self, sh: &mut Shared, task: TaskId, b: BatchId, rest: f64, now: f64) {
        sh.release(task, now);
        let end = flush_end(&mut sh.disk, now, rest);
        sh.q.push(end, FLUSH_END, Payload::Batch(b));
    }

    pub fn flush_end(&mut self, sh: &mut Shared, b: BatchId, now: f64) {
        let batch = sh.q.take_batch(b);
        for (i, a) in batch {
            sh.q.push(now, self.kind, Payload::RunAttempt(i, a));
        }
        if self.grouped {
            self.busy = false;
            self.next(sh, now);
        }
    }
}

// ------------------------------------------------------------------ the sink (RunMetrics)

/// metrics.RunMetrics, and the per-transaction schedule when asked for.
pub struct Sink {
    pub count: Vec<u64>,
    pub busy: Vec<f64>,
    pub held: Vec<f64>,
    pub transactions: u64,
    pub makespan: f64,
    pub retries: u64,
    pub wasted: f64,
    pub schedule: Option<Schedule>,
    /// Positions whose commit times are kept without the whole schedule (`watched`, NaN until
    /// committed): an open replay's keeps-up test reads two (model/replay.py).
    pub watch: Vec<usize>,
    pub watched: Vec<f64>,
}

/// What a run keeps of each transaction: nothing, its times (dispatch, execution, commit: what
/// a replay reads, model/replay.py) for the positions below the given one, or the whole schedule.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Nothing,
    Times(usize),
    Full,
}

pub struct Schedule {
    /// the whole schedule, or (Record::Times) only `exec`, `dispatch` and `commit`, the rest empty
    pub full: bool,
    pub dep_a: Vec<i64>,
    pub dep_b: Vec<i64>,
    pub flags: Vec<u8>,
    pub spec_wait: Vec<u8>,
    pub exec: Vec<f64>,
    pub ready: Vec<f64>,
    pub wasted: Vec<f64>,
    pub dispatch: Vec<f64>,
    pub start: Vec<f64>,
    pub exec_end: Vec<f64>,
    pub commit: Vec<f64>,
    pub worker: Vec<i32>,
    pub retries: Vec<u32>,
}

impl Sink {
    pub fn new(workers: usize, n: usize, record: Record) -> Sink {
        // the columns a times-only run leaves empty, and the positions whose times it keeps (an
        // open replay's first lap of two: model/lag.py reads no more of the second)
        let m = if record == Record::Full { n } else { 0 };
        let kept = match record {
            Record::Times(below) => below.min(n),
            _ => n,
        };
        Sink {
            count: vec![0; workers], busy: vec![0.0; workers], held: vec![0.0; workers],
            transactions: 0, makespan: 0.0, retries: 0, wasted: 0.0,
            schedule: if record == Record::Nothing {
                None
            } else {
                Some(Schedule {
                    full: record == Record::Full,
                    dep_a: vec![0; m], dep_b: vec![0; m], flags: vec![0; m],
                    spec_wait: vec![0; m],
                    exec: vec![f64::NAN; kept], ready: vec![f64::NAN; m], wasted: vec![0.0; m],
                    dispatch: vec![f64::NAN; kept], start: vec![f64::NAN; m],
                    exec_end: vec![f64::NAN; m], commit: vec![f64::NAN; kept], worker: vec![0; m],
                    retries: vec![0; m],
                })
            },
            watch: Vec::new(),
            watched: Vec::new(),
        }
    }

    pub fn set_watch(&mut self, watch: &[usize]) {
        self.watch = watch.to_vec();
        self.watched = vec![f64::NAN; watch.len()];
    }

    #[inline]
    pub fn take(&mut self, run: &Run) {
        let w = run.worker;
        self.count[w] += 1;
        self.busy[w] += run.exec;
        self.held[w] += run.commit - run.start;
        self.transactions += 1;
        if run.commit > self.makespan {
            self.makespan = run.commit;
        }
        if run.retries > 0 {
            self.retries += run.retries as u64;
            self.wasted += run.wasted;
        }
        for (j, &i) in self.watch.iter().enumerate() {
            if i == run.idx {
                self.watched[j] = run.commit;
            }
        }
        if let Some(s) = &mut self.schedule {
            let i = run.idx;
            if i >= s.commit.len() {
                return;          // past the positions a times-only run keeps
            }
            s.exec[i] = run.exec;
            s.dispatch[i] = run.dispatch;
            s.commit[i] = run.commit;
            if s.full {
                s.dep_a[i] = run.dep_a;
                s.dep_b[i] = run.dep_b;
                s.flags[i] = run.flags;
                s.spec_wait[i] = run.spec_wait as u8;
                s.ready[i] = run.ready;
                s.wasted[i] = run.wasted;
                s.start[i] = run.start;
                s.exec_end[i] = run.exec_end;
                s.worker[i] = w as i32 + 1;
                s.retries[i] = run.retries;
            }
        }
    }
}
