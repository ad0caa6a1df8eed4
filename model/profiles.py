"""Cost profiles (design §5): what a transaction costs on a replica when the trace does not say.

Times are in microseconds. A trace's own `exec` / `commit` costs always win over a profile's
defaults. Every profile carries its provenance: where its numbers come from. The `durable` and
`relaxed` defaults are assumptions; `durable-mariadb` and `relaxed-mariadb` are fitted on a real
MariaDB replica and loaded from `profiles_fitted.json` (docs/calibration.md). Each profile's
provenance says which, and `score` prints it, so no figure passes for measured when it is not.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import asdict, dataclass, field, replace

DURABILITIES = ("durable", "relaxed")
# What `score` and `report` predict for unless told otherwise: the one measured machine with room
# to scale (docs/calibration.md), never an assumed or unlimited one.
DEFAULT_PROFILE = "replica16"


def txn_events(txn) -> int:
    """Binlog events of a transaction: the trace's `events` when the importer counted them, else
    an estimate for synthetic traces (GTID + commit, and Annotate_rows + Table_map + one rows
    event per written row key, the shape of a one-row-per-statement transaction)."""
    events = txn.events
    if events is not None:
        return events
    return 2 + 3 * len(txn.writes)


def txn_rows(txn) -> int:
    """Rows a transaction changes: the trace's `rows` when the importer counted them, else one
    per written key (a synthetic transaction's writes are its rows)."""
    rows = txn.rows
    return rows if rows is not None else len(txn.writes)


def txn_bytes(txn) -> int:
    """Bytes of a transaction in the binlog: the trace's `bytes`, else an estimate (about 150
    bytes an event, the size of a small sysbench row event with its table map)."""
    size = txn.bytes
    return size if size is not None else 150 * txn_events(txn)


@dataclass(frozen=True)
class Profile:
    name: str
    exec_default: float     # execution cost of a transaction whose trace line has no `exec`
    commit_default: float   # its own commit step (prepare, engine commit) when no `commit`
    sync: float             # one durable sync per group of commits made together
    dispatch: float         # coordinator / driver time to read and hand out one transaction
    retry: float            # rollback and re-read cost of one retry (on top of re-executing)
    provenance: str
    cores: int | None = None  # replica CPU cores executing needs; None: one per worker
    # What the calibration found (docs/calibration.md), all inactive at their defaults. With
    # cores modelled: `sync_cpu` of each group sync and `commit_cpu` of each commit step run on
    # a core (the fsync path costs CPU); `dispatch` runs on a core (MariaDB driver).
    # `commit_grouped`: the commit step's sync is InnoDB's redo-log group flush, one at a time
    # covering every waiting request, not a private delay (MariaDB). `coordination`: CPU each
    # transaction costs its worker in parallel mode on top of `exec` (MariaDB: queueing, GCO
    # and wait_for_prior_commit hand-offs), never paid by the serial replay.
    sync_cpu: float = 0.0
    commit_cpu: float = 0.0
    commit_grouped: bool = False
    coordination: float = 0.0
    # CPU the server's other threads (purge, page cleaner, binlog background thread) spend per
    # committed transaction: with cores modelled it occupies a core after each commit (MariaDB).
    background_cpu: float = 0.0
    # Part of `exec` that a parallel MariaDB replica's group-commit leader does for each member
    # one after the other (writing its binlog events, committing it in order): in parallel mode
    # it moves out of the worker's `exec` into the leader's serial work (on a core with cores).
    commit_serial: float = 0.0
    # The apply pipeline's serial stages and their size dependence (docs/model.md, "The apply
    # pipeline"), all inactive at 0:
    # `dispatch_event`: the driver / coordinator's time per binlog event (read, parse, queue to
    # a worker), on top of `dispatch` per transaction; `dispatch_thread`: what each event costs
    # it more per worker thread beyond the first (the queue hand-offs contend with more threads).
    dispatch_event: float = 0.0
    dispatch_thread: float = 0.0
    # `exec_event`: execution per binlog event when the trace has no `exec` (so a transaction's
    # cost follows its size); `commit_byte`: the group-commit leader's serial work per byte of
    # each member (writing its binlog events); `wakeup`: the latency of waking a waiting thread
    # (a released GCO or prior-commit wait, the next group commit after the previous one).
    exec_event: float = 0.0
    # `exec_row`: execution per row changed when the trace has no `exec`: InnoDB's work is per
    # row (find it, change it, undo, lock), so a 200-row UPDATE in one statement costs what its
    # rows cost, not what its few binlog events would
    exec_row: float = 0.0
    # `handoff_event`: the time a MariaDB worker waits, off its core, per event of its
    # transaction for the driver to hand the event over (the queue's mutex and condition
    # variable): a latency on the worker's path that a 1-thread run shows as idle time
    handoff_event: float = 0.0
    # `shared_disk`: the binlog's group sync and the redo flush go to one device that flushes
    # one at a time (ext4's journal commits), so in parallel mode they queue behind each other
    shared_disk: bool = False
    # `disk_hold`: with `shared_disk`, how much of each flush (µs, from its start) keeps the next
    # flush waiting: the device's serial part (the cache flush a sync ends with, jbd2's commit),
    # after which the next flush's writes queue beside the rest. None: the whole flush, one
    # after the other (every profile before it was probed). Probed by `calibrate`
    # (calibrate_replica.disk_hold_us: an in-place O_DIRECT write + fdatasync against an
    # append + fdatasync, alone and at once; docs/calibration.md).
    disk_hold: float | None = None
    # `disk_hold_share`: the same serial part as a share (0-1) of each flush, which takes the
    # place of `disk_hold` when set. What `calibrate` fits: the overlap probe's syncs are not
    # the replica's (on the 2-core VM 1.5-2.5x the fitted ones, the ratio moving with the
    # disk's mood), and the share they hold stayed put (0.60-0.67 over three campaigns) where
    # the µs moved 144-205 (docs/lag-check/hold-as-share.md).
    disk_hold_share: float | None = None
    # `disk_write_iops`: the device's write rate limit, writes a second (a cgroup's blkio throttle,
    # a cloud disk's IOPS cap, a host disk's sustained rate): every flush the MariaDB applier
    # sends to the device (the syncs, the relaxed redo write) draws a token from a bucket that
    # holds one throttle slice's worth (simcore.WriteBucket, THROTTLE_SLICE_S); below the rate
    # no write waits. None: no limit. Fitted by `calibrate` from the redo log's sustained write
    # probe when it is slower than the single write (docs/lag.md).
    disk_write_iops: float | None = None
    # `coordination_event`: worker CPU per binlog event in parallel mode, on top of
    # `coordination` per transaction, on the worker's path; none on one core, where the driver
    # fills a worker's queue while it is off the core and no event is handed across cores
    # (registered and tested in traces/calibration/one_core_worker_cpu).
    # `coordination_thread`: CPU per event per worker thread beyond the first that the replica
    # burns while threads wait for each other (spinning on mutexes, futex wake-ups: what its CPU
    # counters show growing with the thread count), every configured thread, with a core or not,
    # on two cores and more: counting only those that can run at once (min(W, cores) - 1) took
    # the 2-core VM's held-out check from 8% to 27% (docs/lag-check/one-core-cpu.md). None on
    # one core: a thread waits there only for one that is not running (registered and tested in
    # traces/calibration/one_core_contention). It holds a core after the commit but lengthens no
    # transaction's path: it costs time only when the cores run out (MariaDB; with cores
    # modelled).
    coordination_event: float = 0.0
    coordination_thread: float = 0.0
    # `shared_lock_thread`: a worker's wait per transaction, on its path, per other worker
    # running at the same time (at most `cores`): every worker takes its replication domain's
    # one `LOCK_parallel_entry` (and the relay log's `data_lock`) several times a transaction
    # (rpl_parallel.cc: `do_gco_wait`, `mark_start_commit`, `finish_event_group`), so each
    # acquisition waits behind the others' (MariaDB; MySQL by analogy).
    shared_lock_thread: float = 0.0
    commit_byte: float = 0.0
    wakeup: float = 0.0
    # `log_write`: the device's latency of the redo log's write at commit (InnoDB's prepare),
    # off the core, when the log file bypasses the file system cache (MariaDB >= 10.8
    # `innodb_log_file_buffering=OFF`, the default unless the server started with
    # innodb_flush_log_at_trx_commit=2): a relaxed replica keeps it, grouped like the flush
    # (one write covers every waiting commit), where a buffered log costs only CPU. The commit
    # step never takes less (a durable commit writes, then syncs): its latency is the larger of
    # `commit_default` and this. 0: a buffered log (what the calibration rig's relaxed runs had).
    log_write: float = 0.0
    # `log_write_cpu`: the part of `log_write` on the committing thread's core (the kernel's
    # work for the O_DIRECT write and the wake-up after it, as a probe measures it): a relaxed
    # replica's `commit_cpu` (`with_durability`), where a durable one's is the write and its
    # sync. 0: the write costs no CPU (a buffered log, or not measured).
    log_write_cpu: float = 0.0
    # `redo_write_shared`: a relaxed replica's unbuffered redo log (`log_write` > 0) with its
    # binlog is written at prepare and again for the commit records after the binlog's group
    # commit (innodb_flush_log_at_trx_commit=2). InnoDB writes everything it has logged, so with
    # another worker's transaction in flight the next prepare's write covers the group's
    # records: the members wait for a write but none is issued for them (no device write, no
    # CPU). Measured on the 2-core VM (traces/record/redo_writes.py,
    # docs/lag-check/relaxed-redo-writes.md): 2.0 device writes a transaction serial, 1.0-1.04
    # at W=4 where the binlog groups alone would add 0.6-0.75. Set by `with_durability`; the
    # MariaDB applier uses it with more than one worker (applier_mariadb).
    redo_write_shared: bool = False
    # `per_core_queues`: with cores modelled, each core has its own run queue, as Linux keeps
    # them (simcore.CpuPool): a thread that finds every core busy waits on the core that woke it
    # even when another core frees first. Off: one shared first-come-first-served queue.
    per_core_queues: bool = False
    # Durability is a setting of the replica, not of the machine: the machine's sync costs
    # (`sync`, `sync_cpu`, `commit_default`, `commit_cpu`) are those of a durable replica
    # (sync_binlog=1, innodb_flush_log_at_trx_commit=1); `with_durability("relaxed")` drops them.
    durability: str = "durable"
    # Whether the replica writes what it applies to its own binlog (MariaDB `log_slave_updates`,
    # MySQL `log_replica_updates`): with it, commits go through the binlog's group commit and its
    # sync (`sync`); without it (MariaDB's default), one-phase commits handed on in order and the
    # redo flush only (simcore.CommitChain). A setting of the replica, like durability. MySQL's
    # applier keeps its commit-order groups either way (by analogy) and loses only the sync.
    log_replica_updates: bool = True
    # The machine the profile describes, and the calibration residuals of its predicted
    # speedups: measured / predicted at the given quantiles (the report's band).
    machine: str = ""
    band: tuple = ()
    # A profile calibrated at several durability settings: the band of each setting's residuals
    # ({"durable": [lo, hi], "relaxed": [lo, hi]}); `with_durability` takes that setting's.
    bands: dict = field(default_factory=dict)
    fitted_from: dict = field(default_factory=dict)
    # The replica settings its calibration measured, {"durability": [...], "cores": [...],
    # "log_replica_updates": [...]}: a prediction for another setting is the model's alone, and
    # says so (`unmeasured`). Empty: not said (an assumed profile, which claims no measurement).
    calibrated: dict = field(default_factory=dict)

    def exec_cost(self, txn) -> float:
        if txn.exec is not None:
            return txn.exec
        cost = self.exec_default
        if self.exec_event:
            cost += self.exec_event * txn_events(txn)
        if self.exec_row:
            cost += self.exec_row * txn_rows(txn)
        return cost

    def dispatch_cost(self, txn, workers: int) -> float:
        """The driver / coordinator's time to read and hand out `txn` to one of `workers`."""
        per_event = self.dispatch_event + self.dispatch_thread * max(0, workers - 1)
        if per_event == 0.0:
            return self.dispatch
        return self.dispatch + per_event * txn_events(txn)

    def parallel_exec(self, txn, exec_cost: float, workers: int) -> float:
        """A worker's time for `txn` in parallel mode: its serial execution, plus coordination
        (per event only with a second core), minus the part the group-commit leader does for
        it (`member_cost`)."""
        extra = self.coordination - self.member_cost(txn)
        if self.coordination_event and self.cores != 1:
            extra += self.coordination_event * txn_events(txn)
        if self.shared_lock_thread and workers > 1:
            extra += self.shared_lock_thread * (self.running_workers(workers) - 1)
        return max(0.0, exec_cost + extra)

    def running_workers(self, workers: int) -> int:
        """How many of `workers` threads can run at once: no more than the machine's cores."""
        return min(workers, self.cores) if self.cores else workers

    def event_handoff(self, txn) -> float:
        """What a worker waits for `txn`'s events to be handed over, off its core."""
        return self.handoff_event * txn_events(txn) if self.handoff_event else 0.0

    def contention_cpu(self, txn, workers: int) -> float:
        """CPU burnt off the transaction's path while `workers` threads wait for each other:
        none on one core, where no thread waits while the one it waits for runs elsewhere."""
        if not self.coordination_thread or workers <= 1 or self.cores == 1:
            return 0.0
        return self.coordination_thread * (workers - 1) * txn_events(txn)

    def member_cost(self, txn) -> float:
        """The group-commit leader's serial work for one member."""
        if self.commit_byte == 0.0:
            return self.commit_serial
        return self.commit_serial + self.commit_byte * txn_bytes(txn)

    def with_durability(self, durability: str | None) -> "Profile":
        """This machine's profile for a replica with the given durability settings."""
        if durability is None or durability == self.durability:
            return self
        if durability not in DURABILITIES:
            raise ProfileError(f"unknown durability {durability!r}; known: {', '.join(DURABILITIES)}")
        if durability == "durable":
            raise ProfileError(f"profile {self.name} describes a relaxed replica only: its sync "
                               "costs were not measured")
        # an unbuffered redo log is still written at every commit, one write for every commit
        # waiting (log_write), and that write's CPU stays on the core (log_write_cpu); a
        # buffered one costs no wait. With the replica's binlog (two-phase commit) it is written
        # twice: at prepare (the commit step) and for the commit record after the binlog's group
        # commit (innodb_flush_log_at_trx_commit=2 writes at both; a durable replica syncs at
        # prepare only). Campaign G's capped disk counted 2.0 device writes a relaxed serial
        # transaction, perf 2.0 serial and 1.0 at W=4 (docs/lag-check/relaxed-redo-writes.md):
        # with more than one worker the second rides on the next prepare's write
        # (`redo_write_shared`); `group_sync` drops it without a binlog.
        band = tuple(self.bands.get("relaxed", self.band))
        write_cpu = min(self.log_write_cpu, self.log_write)
        grouped = self.commit_grouped and self.log_write > 0
        return replace(self, sync=self.log_write, sync_cpu=write_cpu, commit_default=0.0,
                       commit_cpu=write_cpu, commit_grouped=grouped, redo_write_shared=grouped,
                       durability="relaxed", band=band)

    @property
    def group_sync(self) -> float:
        """The binlog's sync per group commit: none when the replica writes no binlog."""
        return self.sync if self.log_replica_updates else 0.0

    def with_log_replica_updates(self, on: bool | None) -> "Profile":
        """This machine's profile for a replica that does (True) or does not (False) write what
        it applies to its own binlog; None: as the profile was measured."""
        if on is None or on == self.log_replica_updates:
            return self
        return replace(self, log_replica_updates=on)

    def unmeasured(self) -> list[str]:
        """The settings of this prediction that the profile's calibration never measured on its
        machine, each as text ("a relaxed replica (measured: durable)")."""
        out = []
        durabilities = self.calibrated.get("durability")
        if durabilities and self.durability not in durabilities:
            out.append(f"a {self.durability} replica (measured: {', '.join(durabilities)})")
        cores = self.calibrated.get("cores")
        if cores and self.cores not in cores:
            have = f"{self.cores} cores" if self.cores else "a core per worker"
            out.append(f"{have} (measured: {', '.join(map(str, cores))})")
        binlogs = self.calibrated.get("log_replica_updates")
        if binlogs and self.log_replica_updates not in binlogs:
            on = {True: "on", False: "off"}
            out.append(f"log_replica_updates {on[self.log_replica_updates]} (measured: "
                       f"{', '.join(on[v] for v in binlogs)})")
        return out

    def commit_cost(self, txn) -> float:
        if txn.commit is not None:
            return txn.commit
        return max(self.commit_default, self.log_write)

    def to_json(self) -> dict:
        return asdict(self)


PROFILES: dict[str, Profile] = {
    p.name: p for p in (
        Profile("ideal", exec_default=1.0, commit_default=0.0, sync=0.0, dispatch=0.0, retry=0.0,
                provenance="by definition: only the trace's own exec/commit costs count (a "
                           "transaction without `exec` costs 1 unit); no sync, no dispatch cost; "
                           "for hand-checked examples"),
        Profile("durable", exec_default=200.0, commit_default=20.0, sync=1000.0, dispatch=5.0,
                retry=50.0,
                provenance="assumed defaults, NOT calibrated: sync_binlog=1 and "
                           "innodb_flush_log_at_trx_commit=1 modelled as one 1 ms sync per group "
                           "commit; replace by a profile fitted on a real replica"),
        Profile("relaxed", exec_default=200.0, commit_default=20.0, sync=20.0, dispatch=5.0,
                retry=50.0,
                provenance="assumed defaults, NOT calibrated: sync_binlog=0 and "
                           "innodb_flush_log_at_trx_commit=2 modelled as a 20 us group write "
                           "without fsync; replace by a profile fitted on a real replica"),
    )
}


FITTED_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles_fitted.json")


def load_fitted(path: str = FITTED_PATH) -> list[Profile]:
    """Profiles fitted on a real replica (traces/record/calibrate.py fit, docs/calibration.md);
    stored as data with their provenance. No file: none."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return []
    fields = {f.name for f in dataclasses.fields(Profile)}
    out = []
    for p in data["profiles"]:
        kw = {k: v for k, v in p.items() if k in fields}
        if "band" in kw:
            kw["band"] = tuple(kw["band"])
        out.append(Profile(**kw))
    return out


PROFILES.update((p.name, p) for p in load_fitted())


class ProfileError(ValueError):
    pass


def _profile_from_json(obj: object, path: str) -> Profile:
    """One profile object of a profile file, every term checked: an unknown term (a newer
    commitsched's, or a typo) is refused rather than silently ignored."""
    if not isinstance(obj, dict):
        raise ProfileError(f"{path}: a profile must be a JSON object, got {type(obj).__name__}")
    types = {f.name: f.type for f in dataclasses.fields(Profile)}
    unknown = sorted(set(obj) - set(types))
    if unknown:
        raise ProfileError(f"{path}: unknown profile term(s) {', '.join(unknown)} (written by a "
                           f"newer commitsched?)")
    for key in ("name", "exec_default", "commit_default", "sync", "dispatch", "retry",
                "provenance"):
        if key not in obj:
            raise ProfileError(f"{path}: the profile has no {key!r}")
    for key, value in obj.items():
        kind = types[key]
        ok = (isinstance(value, str) if kind == "str" else
              isinstance(value, bool) if kind == "bool" else
              isinstance(value, dict) if kind == "dict" else
              isinstance(value, list) if kind == "tuple" else
              value is None or (isinstance(value, int) and not isinstance(value, bool)
                                and value >= 1) if kind == "int | None" else
              value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                and math.isfinite(value) and value >= 0)
              if kind == "float | None" else
              isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value) and value >= 0)
        if not ok:
            raise ProfileError(f"{path}: profile term {key!r} has a bad value {value!r}")
    share = obj.get("disk_hold_share")
    if share is not None and share > 1:
        raise ProfileError(f"{path}: profile term 'disk_hold_share' must be at most 1 (the "
                           f"whole flush; null: disk_hold says)")
    if obj.get("disk_write_iops") == 0:
        raise ProfileError(f"{path}: profile term 'disk_write_iops' must be above 0 (null: no "
                           f"limit)")
    kw = dict(obj)
    if "band" in kw:
        kw["band"] = tuple(kw["band"])
    return Profile(**kw)


def load_profile_file(path: str) -> Profile:
    """The one profile of a file written by `commitsched calibrate` (or `{"profiles": [one]}`,
    the format of profiles_fitted.json); ProfileError naming the file if it is not one."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        data = json.loads(text)
    except OSError as e:
        raise ProfileError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{path}: not a JSON profile file (not text)") from None
    except (ValueError, RecursionError) as e:
        first = _first_json_line(text)
        if isinstance(first, dict) and first.get("format") == "commitsched-trace":
            raise ProfileError(f"{path}: a trace, not a profile (--profile takes a profile "
                               f"name or a file written by `commitsched calibrate -o`)") from None
        raise ProfileError(f"{path}: not a JSON profile file ({str(e)[:80]})") from None
    if isinstance(data, dict) and data.get("format") == "commitsched-replica-window":
        raise ProfileError(f"{path}: a window recorded by `commitsched calibrate --record`, not "
                           f"a profile: fit one from it with `commitsched calibrate --samples "
                           f"{path} --binlog FILES -o PROFILE.json`")
    if isinstance(data, dict) and "profiles" in data:
        data = data["profiles"]
        if not isinstance(data, list) or len(data) != 1:
            raise ProfileError(f"{path}: expected exactly one profile in \"profiles\", found "
                               f"{len(data) if isinstance(data, list) else 'none'} (a bundled "
                               f"profile is named instead: --profile replica16)")
        data = data[0]
    if isinstance(data, dict) and CLUSTER_PROFILE_TERMS & set(data):
        raise ProfileError(f"{path}: a cluster profile (Galera / Group Replication: `commitsched "
                           f"cluster --profile`, `lag --system galera --cluster-profile`), not a "
                           f"replica's machine profile")
    return _profile_from_json(data, path)


# Terms only a cluster profile has (model/cluster_profiles.json): a file of one is refused as
# what it is, not as a profile with unknown terms.
CLUSTER_PROFILE_TERMS = frozenset({"apply_cpu", "cert_share", "fc_rtt", "origin_cpu"})


def _first_json_line(text: str):
    try:
        return json.loads(text.split("\n", 1)[0])
    except (ValueError, RecursionError):
        return None


def get_profile(name: str, *, cores: int | None = None, durability: str | None = None,
                log_replica_updates: bool | None = None) -> Profile:
    """A named profile, or the one of a profile file (a path: `commitsched calibrate`'s
    output), with its `cores`, durability and binlog setting replaced when given."""
    try:
        profile = PROFILES[name]
    except KeyError:
        if not (os.sep in name or name.endswith(".json") or os.path.isfile(name)):
            raise ProfileError(f"unknown profile {name!r}; known: {', '.join(PROFILES)}, or a "
                               f"profile file (`commitsched calibrate -o FILE`)") from None
        profile = load_profile_file(name)
    profile = profile.with_durability(durability).with_log_replica_updates(log_replica_updates)
    if cores is not None:
        if cores < 1:
            raise ProfileError("cores must be at least 1")
        profile = replace(profile, cores=cores)
    return profile
