//! commitsched's compiled simulation core (model/engine.py calls it): the trackers and the
//! appliers' event loops of model/trackers.py, model/applier_mysql.py, model/applier_mariadb.py
//! and model/simcore.py, over the columnar trace of model/columnar.py, returning what
//! `metrics.RunMetrics` and the appliers return (and, on request, the per-transaction
//! schedule). The Python model stays the reference: tests/test_engine_*.py hold the two run
//! by run.

mod cols;
mod core;
mod database;
mod loader;
mod mariadb;
mod mysql;
mod profile;
mod trackers;

use pyo3::buffer::{Element, PyBuffer};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::cols::Cols;
use crate::core::{Record, SimError, Sink, CAUSE_NAMES, N_CAUSES};
use crate::profile::Profile;
use crate::trackers::{Kind, Tracker};

create_exception!(commitsched_simcore, TrackerUnfit, PyException);
create_exception!(commitsched_simcore, Deadlock, PyException);
create_exception!(commitsched_simcore, EngineError, PyException);

/// A column: a C-contiguous buffer of T (a numpy array), or None when absent.
fn column<T: Element>(d: &Bound<'_, PyDict>, name: &str) -> PyResult<Option<PyBuffer<T>>> {
    match d.get_item(name)? {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => {
            let b = PyBuffer::<T>::get_bound(&v)
                .map_err(|e| PyValueError::new_err(format!("column {}: {}", name, e)))?;
            if !b.is_c_contiguous() {
                return Err(PyValueError::new_err(format!("column {} is not contiguous", name)));
            }
            Ok(Some(b))
        }
    }
}

fn slice<'b, T: Element>(b: &'b Option<PyBuffer<T>>, len: usize, name: &str)
                         -> PyResult<Option<&'b [T]>> {
    match b {
        None => Ok(None),
        Some(b) => {
            if b.item_count() < len {
                return Err(PyValueError::new_err(format!("column {} is too short", name)));
            }
            // SAFETY: a contiguous buffer of item_count T, alive while `b` is (the call)
            Ok(Some(unsafe { std::slice::from_raw_parts(b.buf_ptr() as *const T, b.item_count()) }))
        }
    }
}

fn get_f64(d: &Bound<'_, PyDict>, k: &str) -> PyResult<f64> {
    match d.get_item(k)? {
        Some(v) => v.extract::<f64>(),
        None => Err(PyValueError::new_err(format!("profile has no {}", k))),
    }
}

/// A term that may be None (the profile's default), but must be there.
fn get_opt_f64(d: &Bound<'_, PyDict>, k: &str) -> PyResult<Option<f64>> {
    match d.get_item(k)? {
        Some(v) if v.is_none() => Ok(None),
        Some(v) => Ok(Some(v.extract::<f64>()?)),
        None => Err(PyValueError::new_err(format!("profile has no {}", k))),
    }
}

fn get_bool(d: &Bound<'_, PyDict>, k: &str) -> PyResult<bool> {
    match d.get_item(k)? {
        Some(v) => v.is_truthy(),
        None => Err(PyValueError::new_err(format!("profile has no {}", k))),
    }
}

fn read_profile(d: &Bound<'_, PyDict>) -> PyResult<Profile> {
    let cores = match d.get_item("cores")? {
        Some(v) if !v.is_none() => Some(v.extract::<usize>()?),
        _ => None,
    };
    Ok(Profile {
        exec_default: get_f64(d, "exec_default")?,
        commit_default: get_f64(d, "commit_default")?,
        sync: get_f64(d, "sync")?,
        dispatch: get_f64(d, "dispatch")?,
        retry: get_f64(d, "retry")?,
        cores,
        sync_cpu: get_f64(d, "sync_cpu")?,
        commit_cpu: get_f64(d, "commit_cpu")?,
        commit_grouped: get_bool(d, "commit_grouped")?,
        coordination: get_f64(d, "coordination")?,
        background_cpu: get_f64(d, "background_cpu")?,
        commit_serial: get_f64(d, "commit_serial")?,
        dispatch_event: get_f64(d, "dispatch_event")?,
        dispatch_thread: get_f64(d, "dispatch_thread")?,
        exec_event: get_f64(d, "exec_event")?,
        exec_row: get_f64(d, "exec_row")?,
        handoff_event: get_f64(d, "handoff_event")?,
        shared_disk: get_bool(d, "shared_disk")?,
        coordination_event: get_f64(d, "coordination_event")?,
        coordination_thread: get_f64(d, "coordination_thread")?,
        shared_lock_thread: get_f64(d, "shared_lock_thread")?,
        commit_byte: get_f64(d, "commit_byte")?,
        wakeup: get_f64(d, "wakeup")?,
        per_core_queues: get_bool(d, "per_core_queues")?,
        log_replica_updates: get_bool(d, "log_replica_updates")?,
        log_write: get_f64(d, "log_write")?,
        redo_write_shared: get_bool(d, "redo_write_shared")?,
        disk_hold: get_opt_f64(d, "disk_hold")?,
        disk_hold_share: get_opt_f64(d, "disk_hold_share")?,
        disk_write_iops: get_opt_f64(d, "disk_write_iops")?,
    })
}

fn opt<'py, T: FromPyObject<'py>>(d: &Bound<'py, PyDict>, k: &str, default: T) -> PyResult<T> {
    match d.get_item(k)? {
        Some(v) if !v.is_none() => v.extract::<T>(),
        _ => Ok(default),
    }
}

fn tracker_kind(name: &str, o: &Bound<'_, PyDict>, bugs: &[String]) -> PyResult<Kind> {
    Ok(match name {
        "serial" => Kind::Serial,
        "commit_order" => Kind::CommitOrder,
        "database" => Kind::Database,
        "writeset" | "writeset_session" => Kind::Writeset {
            session: name == "writeset_session" && !bugs.iter().any(|b| b == "session_order_dropped"),
            history_size: opt(o, "history_size", 25000i64)?,
            strict: opt(o, "ceiling", "none".to_string())? == "error",
            count_duplicates: opt(o, "write_set", "vector".to_string())? == "vector",
        },
        "commit_id" => Kind::CommitId { lookahead: opt(o, "lookahead", 10000usize)? },
        "slave_group_commit" => {
            let count: f64 = opt(o, "commit_wait_count", 8.0f64)?;
            Kind::SlaveGroupCommit {
                count: (count.trunc() as i64).max(1) as usize,
                usec: opt(o, "commit_wait_usec", 100000.0f64)?,
                exec_default: opt(o, "exec_default", 100.0f64)?,
                split_on_wait: !bugs.iter().any(|b| b == "group_not_split_on_wait"),
            }
        }
        _ => return Err(EngineError::new_err(format!("tracker {} is not in the compiled core", name))),
    })
}

/// What a run returns: RunMetrics' sums, the blocked time by cause, the schedule on request.
struct Outcome {
    sink: Sink,
    blocked: [f64; N_CAUSES],
}

fn serial(c: &Cols, p: &Profile, workers: usize, arrival: Option<&[f64]>, schedule: Record,
          watch: &[usize]) -> Outcome {
    let mut sink = Sink::new(workers, c.n, schedule);
    sink.set_watch(watch);
    let sync = p.group_sync();
    // schedulers.simulate_serial: the commit step's write and the sync each wait for a token
    let mut bucket = p.disk_write_iops.map(core::WriteBucket::new);
    let mut t = 0.0f64;
    for i in 0..c.n {
        let mut run = core::Run::new(i, c.seq(i), p.exec_cost(c, i), p.commit_cost(c, i), 0.0);
        run.worker = 0;
        if let Some(a) = arrival {
            run.arrival = a[i];
            if run.arrival > t {
                t = run.arrival;
            }
        }
        run.dispatch = t;
        t += p.dispatch_cost(c, i, 1);
        run.start = t;
        run.exec_end = t + run.exec;
        match bucket.as_mut() {
            None => {
                run.ready = run.exec_end + run.commit_cost;
                t = run.ready + sync;
            }
            Some(b) => {
                let issued = if run.commit_cost > 0.0 { b.take(run.exec_end) } else { run.exec_end };
                run.ready = issued + run.commit_cost;
                let synced = if sync > 0.0 { b.take(run.ready) } else { run.ready };
                t = synced + sync;
            }
        }
        run.commit = t;
        sink.take(&run);
    }
    Outcome { sink, blocked: [0.0; N_CAUSES] }
}

#[allow(clippy::too_many_arguments)]
fn run_core(c: &Cols, p: &Profile, tracker: Option<Kind>, applier: &str, workers: usize,
            aopts: &AOpts, bugs: &[String], arrival: Option<&[f64]>, schedule: Record,
            watch: &[usize]) -> Result<Outcome, SimError> {
    let has = |b: &str| bugs.iter().any(|x| x == b);
    let kind_is = tracker.as_ref().map(|k| matches!(k, Kind::Database));
    let tracker = match tracker {
        None => return Ok(serial(c, p, workers, arrival, schedule, watch)),
        Some(k) => Tracker::new(c, k),
    };
    if applier == "mysql" && matches!(kind_is, Some(true)) {
        let mut sim = database::Database::new(c, p, tracker, workers, aopts.checkpoint_group,
                                              arrival, schedule);
        sim.sink.set_watch(watch);
        sim.run()?;
        let blocked = sim.blocked();
        return Ok(Outcome { sink: sim.sink, blocked });
    }
    if applier == "mysql" {
        let mut sim = mysql::Mysql::new(
            c, p, tracker, workers, aopts.preserve_commit_order, aopts.checkpoint_group,
            mysql::Bugs { off_by_one: has("lwm_off_by_one"), not_prefix: has("lwm_not_prefix"),
                          rotation_ignored: has("rotation_ignored") },
            has("commit_order_unenforced"), arrival, schedule);
        sim.sink.set_watch(watch);
        sim.run()?;
        let blocked = sim.blocked();
        return Ok(Outcome { sink: sim.sink, blocked });
    }
    let level = match applier {
        "mariadb_conservative" => 1,
        "mariadb_optimistic" => mariadb::OPTIMISTIC,
        "mariadb_aggressive" => mariadb::AGGRESSIVE,
        _ => return Err(SimError::Internal(format!("applier {} is not in the compiled core", applier))),
    };
    let mut sim = mariadb::Mariadb::new(c, p, tracker, workers, level, aopts.max_queued,
                                        has("gco_start_on_exec"), has("optimistic_no_kill"),
                                        arrival, schedule);
    sim.sink.set_watch(watch);
    sim.run()?;
    let blocked = sim.blocked();
    Ok(Outcome { sink: sim.sink, blocked })
}

struct AOpts {
    preserve_commit_order: bool,
    checkpoint_group: usize,
    max_queued: usize,
}

fn f64_bytes<'py>(py: Python<'py>, v: &[f64]) -> PyResult<Bound<'py, PyBytes>> {
    // written straight into the Python object: one copy of a schedule's column, not two (a
    // replay of a day's binlog holds tens of millions of them)
    PyBytes::new_bound_with(py, v.len() * 8, |out: &mut [u8]| {
        for (chunk, x) in out.chunks_exact_mut(8).zip(v) {
            chunk.copy_from_slice(&x.to_ne_bytes());
        }
        Ok(())
    })
}

/// `f64_bytes` of a column the run no longer needs, freed as soon as it is copied.
fn f64_bytes_taken<'py>(py: Python<'py>, v: &mut Vec<f64>) -> PyResult<Bound<'py, PyBytes>> {
    let out = f64_bytes(py, v)?;
    *v = Vec::new();
    Ok(out)
}

/// How the columns are read lap after lap (`Cols`): one lap of `base` transactions, the binlog
/// files and commit ids of lap k moved by k steps.
#[derive(Clone, Copy)]
struct Lap {
    base: usize,
    file_step: i64,
    cid_step: i64,
}

/// The columns' buffers, held while a call reads them.
struct Buffers {
    file: Option<PyBuffer<i64>>, lc: Option<PyBuffer<i64>>, sn: Option<PyBuffer<i64>>,
    cid: Option<PyBuffer<i64>>, flags: Option<PyBuffer<u8>>, bits: Option<PyBuffer<u8>>,
    session: Option<PyBuffer<i64>>, exec: Option<PyBuffer<f64>>, commit: Option<PyBuffer<f64>>,
    events: Option<PyBuffer<i64>>, bytes: Option<PyBuffer<i64>>, rows: Option<PyBuffer<i64>>,
    wss: Option<PyBuffer<i64>>, w_off: Option<PyBuffer<i64>>, w_keys: Option<PyBuffer<u32>>,
    s_off: Option<PyBuffer<i64>>, s_ids: Option<PyBuffer<u32>>,
}

impl Buffers {
    fn of(cols: &Bound<'_, PyDict>) -> PyResult<Buffers> {
        Ok(Buffers {
            file: column(cols, "file")?, lc: column(cols, "last_committed")?,
            sn: column(cols, "sequence_number")?, cid: column(cols, "commit_id")?,
            flags: column(cols, "flags")?, bits: column(cols, "bits")?,
            session: column(cols, "session")?, exec: column(cols, "exec")?,
            commit: column(cols, "commit")?, events: column(cols, "events")?,
            bytes: column(cols, "bytes")?, rows: column(cols, "rows")?,
            wss: column(cols, "write_set_size")?, w_off: column(cols, "w_off")?,
            w_keys: column(cols, "w_keys")?, s_off: column(cols, "s_off")?,
            s_ids: column(cols, "s_ids")?,
        })
    }

    fn cols(&self, n: usize, seq0: i64) -> PyResult<Cols<'_>> {
        self.lapped(n, seq0, Lap { base: n, file_step: 0, cid_step: 0 })
    }

    /// The columns of `n` transactions read lap after lap from arrays of `lap.base` (`Cols`).
    fn lapped(&self, n: usize, seq0: i64, lap: Lap) -> PyResult<Cols<'_>> {
        let m = lap.base;
        if m == 0 && n > 0 || m > 0 && n % m != 0 {
            return Err(PyValueError::new_err("n is not a whole number of laps of the columns"));
        }
        let file = slice(&self.file, m, "file")?.ok_or_else(|| PyValueError::new_err("no file column"))?;
        let w_off = slice(&self.w_off, m + 1, "w_off")?.ok_or_else(|| PyValueError::new_err("no w_off"))?;
        let w_keys = slice(&self.w_keys, 0, "w_keys")?.unwrap_or(&[]);
        if w_off[m] as usize > w_keys.len() || w_off.iter().take(m + 1).any(|&o| o < 0) {
            return Err(PyValueError::new_err("w_off points past w_keys"));
        }
        let c = Cols {
            n, seq0, base: m, file_step: lap.file_step, cid_step: lap.cid_step, file,
            lc: slice(&self.lc, m, "last_committed")?,
            sn: slice(&self.sn, m, "sequence_number")?,
            cid: slice(&self.cid, m, "commit_id")?,
            flags: slice(&self.flags, m, "flags")?,
            bits: slice(&self.bits, m, "bits")?,
            session: slice(&self.session, m, "session")?,
            exec: slice(&self.exec, m, "exec")?,
            commit: slice(&self.commit, m, "commit")?,
            events: slice(&self.events, m, "events")?,
            bytes: slice(&self.bytes, m, "bytes")?,
            rows: slice(&self.rows, m, "rows")?,
            wss: slice(&self.wss, m, "write_set_size")?,
            w_off, w_keys,
            s_off: slice(&self.s_off, m + 1, "s_off")?,
            s_ids: slice(&self.s_ids, 0, "s_ids")?,
        };
        if let (Some(o), Some(ids)) = (c.s_off, c.s_ids) {
            if o[m] as usize > ids.len() || o.iter().take(m + 1).any(|&x| x < 0) {
                return Err(PyValueError::new_err("s_off points past s_ids"));
            }
        }
        Ok(c)
    }
}

/// Run one (tracker, applier, W) over the columnar trace `cols` (model/columnar.py's arrays
/// by name) of `n` transactions whose first seq is `seq0`. `tracker` None: the one-thread
/// serial replay. `arrival`: when each transaction reaches the relay log, by position (f64
/// array), or None. Returns a dict: count, busy, held, transactions, makespan, retries,
/// wasted, blocked (by cause), and with `schedule` the per-transaction arrays (bytes of f64:
/// dispatch, start, exec_end, commit; of i32: worker numbered from 1; of u32: retries).
/// `watch`: positions whose commit times come back as `watched` (NaN: never committed), without
/// the whole schedule. `keep` (with `times_only`): the times of positions below it only.
#[pyfunction]
#[pyo3(signature = (cols, n, seq0, tracker, tracker_options, applier, workers, profile,
                    applier_options, bugs, arrival=None, schedule=false, watch=Vec::new(),
                    lap_base=None, file_step=0, cid_step=0, times_only=false, keep=None))]
#[allow(clippy::too_many_arguments)]
fn simulate<'py>(py: Python<'py>, cols: &Bound<'py, PyDict>, n: usize, seq0: i64,
                 tracker: Option<&str>, tracker_options: &Bound<'py, PyDict>, applier: &str,
                 workers: usize, profile: &Bound<'py, PyDict>, applier_options: &Bound<'py, PyDict>,
                 bugs: Vec<String>, arrival: Option<&Bound<'py, PyAny>>, schedule: bool,
                 watch: Vec<usize>, lap_base: Option<usize>, file_step: i64, cid_step: i64,
                 times_only: bool, keep: Option<usize>) -> PyResult<Bound<'py, PyDict>> {
    if workers < 1 {
        return Err(PyValueError::new_err("workers must be at least 1"));
    }
    if watch.iter().any(|&i| i >= n) {
        return Err(PyValueError::new_err("a watched position is past the trace"));
    }
    let buffers = Buffers::of(cols)?;
    let c = buffers.lapped(n, seq0, Lap { base: lap_base.unwrap_or(n), file_step, cid_step })?;
    let b_arrival = match arrival {
        Some(a) if !a.is_none() => Some(PyBuffer::<f64>::get_bound(a)?),
        _ => None,
    };
    let arrival_s = slice(&b_arrival, n, "arrival")?;
    let p = read_profile(profile)?;
    let kind = match tracker {
        None => None,
        Some(t) => Some(tracker_kind(t, tracker_options, &bugs)?),
    };
    let record = match (schedule, times_only) {
        (false, _) => Record::Nothing,
        (true, true) => Record::Times(keep.unwrap_or(n)),
        (true, false) => Record::Full,
    };
    let aopts = AOpts {
        preserve_commit_order: opt(applier_options, "preserve_commit_order", true)?,
        checkpoint_group: opt(applier_options, "checkpoint_group", 512usize)?,
        max_queued: opt(applier_options, "max_queued", 64usize)?,
    };
    let result = py.allow_threads(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_core(&c, &p, kind, applier, workers, &aopts, &bugs, arrival_s, record, &watch)
        }))
    });
    let mut out = match result {
        Err(_) => return Err(EngineError::new_err("the compiled core failed (a panic): a bug in it")),
        Ok(Err(SimError::Tracker(m))) => return Err(TrackerUnfit::new_err(m)),
        Ok(Err(SimError::Deadlock(m))) => return Err(Deadlock::new_err(m)),
        Ok(Err(SimError::Internal(m))) => return Err(EngineError::new_err(m)),
        Ok(Ok(o)) => o,
    };
    let d = PyDict::new_bound(py);
    let s = &out.sink;
    d.set_item("count", PyList::new_bound(py, &s.count))?;
    d.set_item("busy", PyList::new_bound(py, &s.busy))?;
    d.set_item("held", PyList::new_bound(py, &s.held))?;
    d.set_item("transactions", s.transactions)?;
    d.set_item("makespan", s.makespan)?;
    d.set_item("retries", s.retries)?;
    d.set_item("wasted", s.wasted)?;
    let blocked = PyDict::new_bound(py);
    for (k, v) in CAUSE_NAMES.iter().zip(out.blocked.iter()) {
        blocked.set_item(*k, *v)?;
    }
    d.set_item("blocked", blocked)?;
    d.set_item("watched", PyList::new_bound(py, &s.watched))?;
    if let Some(sc) = out.sink.schedule.as_mut().filter(|sc| !sc.full) {
        d.set_item("exec", f64_bytes_taken(py, &mut sc.exec)?)?;
        d.set_item("dispatch", f64_bytes_taken(py, &mut sc.dispatch)?)?;
        d.set_item("commit", f64_bytes_taken(py, &mut sc.commit)?)?;
    }
    let s = &out.sink;
    if let Some(sc) = s.schedule.as_ref().filter(|sc| sc.full) {
        d.set_item("dep_a", bytes_of(py, &sc.dep_a))?;
        d.set_item("dep_b", bytes_of(py, &sc.dep_b))?;
        d.set_item("dep_flags", bytes_of(py, &sc.flags))?;
        d.set_item("spec_wait", bytes_of(py, &sc.spec_wait))?;
        d.set_item("exec", f64_bytes(py, &sc.exec)?)?;
        d.set_item("ready", f64_bytes(py, &sc.ready)?)?;
        d.set_item("wasted_each", f64_bytes(py, &sc.wasted)?)?;
        d.set_item("dispatch", f64_bytes(py, &sc.dispatch)?)?;
        d.set_item("start", f64_bytes(py, &sc.start)?)?;
        d.set_item("exec_end", f64_bytes(py, &sc.exec_end)?)?;
        d.set_item("commit", f64_bytes(py, &sc.commit)?)?;
        let w: Vec<u8> = sc.worker.iter().flat_map(|x| x.to_ne_bytes()).collect();
        d.set_item("worker", PyBytes::new_bound(py, &w))?;
        let r: Vec<u8> = sc.retries.iter().flat_map(|x| x.to_ne_bytes()).collect();
        d.set_item("retries_each", PyBytes::new_bound(py, &r))?;
    }
    Ok(d)
}


/// A tracker's annotation of the whole trace (scoring.same_stream and tracker_unfit ask it):
/// bytes of i64 `a` (last_committed / group id), i64 `b` (sequence_number), i64 `file`, u8
/// `flags` by position; TrackerUnfit when the tracker cannot feed the trace.
#[pyfunction]
#[pyo3(signature = (cols, n, seq0, tracker, tracker_options, bugs))]
fn annotate<'py>(py: Python<'py>, cols: &Bound<'py, PyDict>, n: usize, seq0: i64, tracker: &str,
                 tracker_options: &Bound<'py, PyDict>, bugs: Vec<String>)
                 -> PyResult<Bound<'py, PyDict>> {
    let buffers = Buffers::of(cols)?;
    let c = buffers.cols(n, seq0)?;
    let kind = tracker_kind(tracker, tracker_options, &bugs)?;
    let result = py.allow_threads(|| {
        let mut t = Tracker::new(&c, kind);
        let (mut a, mut b, mut f, mut fl) = (vec![0i64; n], vec![0i64; n], vec![0i64; n], vec![0u8; n]);
        while let Some((i, d)) = t.pull()? {
            a[i] = d.a;
            b[i] = d.b;
            f[i] = d.file;
            fl[i] = d.flags;
        }
        Ok::<_, SimError>((a, b, f, fl))
    });
    let (a, b, f, fl) = match result {
        Err(SimError::Tracker(m)) => return Err(TrackerUnfit::new_err(m)),
        Err(SimError::Deadlock(m)) | Err(SimError::Internal(m)) => return Err(EngineError::new_err(m)),
        Ok(v) => v,
    };
    let d = PyDict::new_bound(py);
    d.set_item("a", bytes_of(py, &a))?;
    d.set_item("b", bytes_of(py, &b))?;
    d.set_item("file", bytes_of(py, &f))?;
    d.set_item("flags", bytes_of(py, &fl))?;
    Ok(d)
}


/// metrics.heuristic_bounds_for's one pass: (work, span in order, span free), the same sums in
/// the same order.
#[pyfunction]
fn bounds<'py>(py: Python<'py>, cols: &Bound<'py, PyDict>, n: usize, seq0: i64,
               profile: &Bound<'py, PyDict>) -> PyResult<(f64, f64, f64)> {
    let buffers = Buffers::of(cols)?;
    let c = buffers.cols(n, seq0)?;
    let p = read_profile(profile)?;
    Ok(py.allow_threads(|| {
        use crate::core::{FxMap, PyMinMax};
        let sync = p.group_sync();
        let (mut work, mut ordered_prev, mut free_all) = (0.0f64, 0.0f64, 0.0f64);
        let mut ordered_key: FxMap<u32, f64> = FxMap::default();
        let mut free_key: FxMap<u32, f64> = FxMap::default();
        for i in 0..n {
            let cost = p.exec_cost(&c, i) + p.commit_cost(&c, i) + sync;
            work += cost;
            let writes = c.writes(i);
            let (o_start, f_start) = if c.ddl(i) || c.admin(i) {
                (ordered_prev, free_all)
            } else {
                let (mut o, mut f) = (0.0f64, 0.0f64);
                for k in writes {
                    if let Some(&v) = ordered_key.get(k) {
                        if v > o {
                            o = v;
                        }
                    }
                    if let Some(&v) = free_key.get(k) {
                        if v > f {
                            f = v;
                        }
                    }
                }
                (o, f)
            };
            let o_commit = (o_start + cost).max_py(ordered_prev);
            let f_commit = f_start + cost;
            for k in writes {
                ordered_key.insert(*k, o_commit);
                free_key.insert(*k, f_commit);
            }
            ordered_prev = o_commit;
            if f_commit > free_all {
                free_all = f_commit;
            }
        }
        (work, ordered_prev, free_all)
    }))
}

/// JSON lines into columns (model/columnar.py `load_columns`): `feed` whole lines, then
/// `finish` for the columns (bytes by name, None for a column absent from every line) and the
/// keys; `refused` says why it gave up (the Python loader then reads the file).
#[pyclass]
struct ColumnLoader {
    inner: loader::Loader,
}

fn bytes_of<T: Copy>(py: Python<'_>, v: &[T]) -> PyObject {
    // SAFETY: plain numbers, read as bytes
    let b = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) };
    PyBytes::new_bound(py, b).into_py(py)
}

#[pymethods]
impl ColumnLoader {
    #[new]
    fn new() -> Self {
        ColumnLoader { inner: loader::Loader::new() }
    }

    fn feed(&mut self, py: Python<'_>, data: &[u8]) -> bool {
        py.allow_threads(|| self.inner.feed(data))
    }

    #[getter]
    fn refused(&self) -> Option<String> {
        self.inner.refused.clone()
    }

    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        // each column copied into its bytes and freed at once: the peak is the columns and one
        let mut l = std::mem::take(&mut self.inner);
        let d = PyDict::new_bound(py);
        d.set_item("n", l.n)?;
        d.set_item("file", bytes_of(py, &std::mem::take(&mut l.file)))?;
        let names = ["last_committed", "sequence_number", "commit_id", "events", "bytes", "rows",
                     "write_set_size"];
        for (j, name) in names.iter().enumerate() {
            if l.present[j] {
                d.set_item(*name, bytes_of(py, &std::mem::take(&mut l.ints[j])))?;
            } else {
                d.set_item(*name, py.None())?;
                l.ints[j] = Vec::new();
            }
        }
        let opt = |present: bool, b: PyObject| if present { b } else { py.None() };
        d.set_item("exec", opt(l.present[7], bytes_of(py, &std::mem::take(&mut l.exec))))?;
        d.set_item("commit", opt(l.present[8], bytes_of(py, &std::mem::take(&mut l.commit))))?;
        d.set_item("flags", opt(l.present[9], bytes_of(py, &std::mem::take(&mut l.flags))))?;
        d.set_item("bits", opt(l.present[10], bytes_of(py, &std::mem::take(&mut l.bits))))?;
        d.set_item("session", opt(l.present[11], bytes_of(py, &std::mem::take(&mut l.session))))?;
        d.set_item("w_off", bytes_of(py, &std::mem::take(&mut l.w_off)))?;
        d.set_item("w_keys", bytes_of(py, &std::mem::take(&mut l.w_keys)))?;
        d.set_item("s_off", bytes_of(py, &std::mem::take(&mut l.s_off)))?;
        d.set_item("s_ids", bytes_of(py, &std::mem::take(&mut l.s_ids)))?;
        d.set_item("replica_locks", l.replica_locks)?;
        d.set_item("keys_unknown", l.keys_unknown)?;
        d.set_item("marked", l.marked)?;
        d.set_item("keys", PyList::new_bound(py, &l.keys))?;
        let mut schemas = vec![String::new(); l.schema_ids.len()];
        for (name, &id) in &l.schema_ids {
            schemas[id as usize] = name.clone();
        }
        d.set_item("schemas", PyList::new_bound(py, &schemas))?;
        Ok(d)
    }
}

#[pymodule]
fn commitsched_simcore(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(annotate, m)?)?;
    m.add_function(wrap_pyfunction!(bounds, m)?)?;
    m.add_class::<ColumnLoader>()?;
    m.add("PROFILE_READS", profile::READS.to_vec())?;
    m.add("TrackerUnfit", m.py().get_type_bound::<TrackerUnfit>())?;
    m.add("Deadlock", m.py().get_type_bound::<Deadlock>())?;
    m.add("EngineError", m.py().get_type_bound::<EngineError>())?;
    Ok(())
}
