"""Sustained throughput of a certification-based cluster (docs/certification.md): a
discrete-event simulation of writers, the group channel, every member's certifier, applier and
commits, flow control, the machine's cores and its disk, and the search for the highest writer
rate every member keeps up with.

One transaction's life (`Cluster`):
1. it arrives at its origin member's client at the offered rate (a Poisson process, as
   `sysbench --rate` draws it) and waits for one of `clients` client threads;
2. the client's CPU (`client_cpu`, half now, half when the commit returns) and the origin's
   execution of its statements (`origin_cpu` less the certification and commit parts) run on
   the machine's cores (`simcore.CpuPool`, one pool for every process of the machine);
3. it is replicated: it waits while flow control holds the group (Galera: STOPs outnumber CONTs
   delivered, each STOP and CONT a group message that takes `fc_rtt` to arrive, the writers going
   on while a STOP travels and paused while a CONT does; Group Replication: the period's quota
   is used up), then joins the next round of the group
   channel: a round takes `rtt` and carries every write-set that was waiting when it began
   (the group communication batches as a group commit does; `simcore.CommitStage`, unordered);
4. every member certifies it in the total order, one at a time (the local monitor / the
   certification pipeline; `certification.GaleraCertifier` / `GRCertifier`, `cert_share` of the
   member's CPU for it). On Galera a remote write-set is certified by the slave thread that took
   it from the receive queue (`wsrep_slave_threads`), and flow control counts that queue;
5. Galera: a remote write-set waits in the apply monitor until everything up to its
   depends_seqno has committed, applies (`apply_cpu`), and commits in seqno order (the commit
   monitor; a local one commits in that order too); Group Replication: the applier dispatches
   remote write-sets in relay-log order to `workers` workers once their last_committed has
   committed (`replica_preserve_commit_order`), a local one commits once certified;
6. a commit: `commit_share` of the member's CPU, in order, then (durable) the group's two
   flushes (InnoDB's prepare and the binlog sync, `2 x fsync` on the machine's one disk, with
   `fsync_cpu` of CPU each) shared by the commits that are ready together
   (`simcore.CommitStage`, ordered: a binlog group commit). On Galera an applied write-set
   commits in a group of its own: its slave thread leaves the commit monitor only after its
   commit (the measured remote binlog groups: 1.00-1.02 write-sets with 1-2 slave threads,
   1.4-1.5 with 4 durable), local transactions group (2-3 a group);
7. the origin holds its rows' InnoDB locks from the execution to the commit: a later local
   transaction that needs one waits, and (Group Replication) so does a remote write-set
   certified after it.
A write-set that fails certification is cancelled in its turn (Galera) or dropped (Group
Replication); its client counts an error.

`sustained(...)` searches the rate by bisection exactly as traces/record/galera_measure.py
measures it: a rate is kept up when the writers achieved 97% of it and no member's receive
queue ends above max(30, 2% of the offered transactions).

What the model leaves out (docs/certification.md): the group communication protocol itself
(a round costs `rtt`, its CPU is in the members' CPU per transaction), network limits, InnoDB
locks other than through certification, the client's own statements' round trips (folded into
the CPU terms), state transfers and view changes.
"""
from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import random
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Sequence

from .certification import (GR_FIRST_LAST_COMMITTED, GR_GC_PERIOD_S, GaleraCertifier,
                            GRCertifier, Snapshot)
from .flow_control import (GALERA_FC_FACTOR, GALERA_FC_LIMIT, GR_PERIOD_S, GR_THRESHOLD,
                           galera_cont, galera_limits, galera_stop, gr_quota)
from .profiles import txn_events
from .simcore import CommitStage, CpuPool, CpuTask, Disk

FLAVORS = ("galera", "group_replication")
CLUSTER_BUGS = frozenset({"cert_purge_past_safe", "failed_ws_commits_early", "fc_stop_mark_late"})
PURGE_EVERY = 128               # Galera reports its safe-to-discard seqno every 128 write-sets


class ClusterError(ValueError):
    """A cluster that cannot be simulated (bad option, empty workload); the message says why."""


@dataclass(frozen=True)
class ClusterProfile:
    """What a transaction costs on a machine, per role (µs). Measured, not fitted, where the
    provenance says so (docs/certification.md, "The cluster profile")."""
    name: str
    cores: int | None
    client_cpu: float            # the client (sysbench) per transaction
    origin_cpu: float            # the member that executes it, everything included
    apply_cpu: float             # a member that applies it, everything included
    cert_share: float = 0.05     # of a member's CPU per write-set: certification (serial)
    commit_share: float = 0.20   # of a member's CPU per write-set: its commit (serial, in order)
    rtt: float = 150.0           # a round of the group channel
    # A flow-control message's trip through the group (gcs_send_fc_event: an ordinary group
    # message, total-ordered); None: `rtt`. Measured as the mean wsrep_evs_repl_latency of the
    # members that send nothing but flow control and their own reports (docs/certification.md).
    fc_rtt: float | None = None
    fsync: float = 0.0           # device time of one flush
    fsync_cpu: float = 0.0       # CPU of one flush
    machine: str = ""
    provenance: str = ""
    fitted_from: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ClusterConfig:
    """The cluster's settings (docs/certification.md, "commitsched cluster")."""
    flavor: str = "galera"
    members: int = 3
    writers: tuple = (0,)              # which members run clients
    clients: int = 32                  # client threads in all (split over the writers)
    workers: int = 1                   # wsrep_slave_threads / replica_parallel_workers
    durable: bool = True
    fc_limit: float = GALERA_FC_LIMIT  # gcs.fc_limit
    fc_factor: float = GALERA_FC_FACTOR
    gr_threshold: int = GR_THRESHOLD   # group_replication_flow_control_applier_threshold
    bugs: frozenset = frozenset()

    def check(self) -> None:
        if self.flavor not in FLAVORS:
            raise ClusterError(f"flavor must be one of {', '.join(FLAVORS)}, not {self.flavor!r}")
        if self.members < 1 or self.workers < 1 or self.clients < 1:
            raise ClusterError("members, workers and clients must be at least 1")
        if not self.writers or any(not 0 <= w < self.members for w in self.writers):
            raise ClusterError(f"writers must be members 0..{self.members - 1}")
        unknown = set(self.bugs) - CLUSTER_BUGS
        if unknown:
            raise ClusterError(f"unknown bug {', '.join(sorted(unknown))}")


# ---------------------------------------------------------------- the simulation

ARRIVE, CPU_DONE, ROUND_END, FC_MSG, TICK = range(30, 35)


class _Stage(CommitStage):
    """A CommitStage with event kinds of its own, so that several share one event heap. Its
    runs' `txn` is the commit's CPU cost (µs), which `member_cost` returns as it is. `skip`:
    places in the order that finished without it (bug failed_ws_commits_early)."""

    def __init__(self, kinds: tuple[int, int, int], *args, remote_alone: bool = False,
                 **kwargs):
        super().__init__(*args, member_cost=lambda cost: cost, **kwargs)
        self.SYNC_END, self.GROUP_START, self.SYNC_CPU = kinds
        self.skip: set[int] = set()
        # Galera: an applied (remote) write-set commits in a binlog group of its own. Its slave
        # thread leaves the commit monitor only after its commit, so the next one cannot join
        # its group (the remote members' binlog_commits / binlog_group_commits: 1.0-1.02 with
        # 1-2 slave threads in the measurements); local transactions do group (2-3 a group).
        self.remote_alone = remote_alone

    def _start_group(self, now: float) -> None:
        while self.ordered and self.next_seq in self.skip:
            self.skip.discard(self.next_seq)
            self.next_seq += 1
        held = {}
        if self.remote_alone and self.ordered and self.next_seq in self.waiting:
            # hide what may not join this group from CommitStage's batch: after a remote
            # write-set, or a remote one after local ones
            seq, first = self.next_seq, self.waiting[self.next_seq]
            seq += 1
            if first.local:
                while seq in self.waiting and self.waiting[seq].local:
                    seq += 1
            for k in [k for k in self.waiting if k >= seq]:
                held[k] = self.waiting.pop(k)
        super()._start_group(now)
        self.waiting.update(held)


class _Ws:
    """One transaction / write-set: its origin, its place in the total order (`pos`, from 1)
    and the snapshot it was certified against."""
    __slots__ = ("id", "txn", "origin", "scale", "arrive", "pos", "last_seen", "snapshot",
                 "keys", "toi")

    def __init__(self, i, txn, origin, scale, arrive):
        self.id, self.txn, self.origin, self.scale, self.arrive = i, txn, origin, scale, arrive
        self.pos = 0
        self.last_seen = 0
        self.snapshot = None
        self.keys = txn.writes
        self.toi = bool(txn.ddl or txn.admin)


class _Seq:
    """A write-set's life on one member: the run record `CommitStage` orders by `seq` (its
    position); `txn` is its commit's CPU (see _Stage)."""
    __slots__ = ("seq", "pos", "ws", "txn", "ready", "commit", "ok", "dep", "sn", "lc", "local")

    def __init__(self, ws: _Ws, local: bool, commit_cpu: float):
        self.pos, self.ws, self.txn, self.local = ws.pos, ws, commit_cpu, local
        self.seq = ws.pos          # Group Replication's remote ones: their relay-log place
        self.ready = self.commit = None
        self.ok = True
        self.dep = 0
        self.sn = self.lc = None


class _Member:
    """One member: its certifier, its receive queue, its applier and its commits."""

    def __init__(self, cl: "Cluster", i: int):
        self.cl, self.i = cl, i
        cfg = cl.cfg
        self.galera = cfg.flavor == "galera"
        self.cert = GaleraCertifier() if self.galera else GRCertifier()
        self.incoming: deque[_Ws] = deque()      # delivered, not yet certified
        self.recv_q = 0                          # Galera: foreign write-sets not yet taken
        self.threads = cfg.workers               # idle slave threads (Galera) / workers (GR)
        self.cert_busy = False
        self.certified = 0
        self.purged = 0                          # Galera: the index purged up to here
        # Galera's monitors
        self.last_left = 0                       # every position up to it is done here
        self.finished: set[int] = set()
        self.apply_wait: list = []               # heap (depends_seqno, pos, _Seq)
        # Group Replication's applier
        self.relay: deque[_Seq] = deque()        # remote write-sets in relay-log order
        self.sn_done: set[int] = set()
        self.lwm = GR_FIRST_LAST_COMMITTED       # every sequence number up to it done
        self.relay_count = 0                     # remote write-sets queued to the relay log
        self.committed = Snapshot(0)             # what this member committed (gtid_executed)
        # flow control
        self.stop_sent = False
        self.pending_stop = False
        self.applied_in_period = 0
        self.stage = cl.new_stage(ordered=True, remote_alone=self.galera)
        self.stage.next_seq = 1
        self.local_stage = None if self.galera else cl.new_stage(ordered=False)

    @property
    def queue(self) -> int:
        """What flow control and the measurement count: Galera's receive queue
        (wsrep_local_recv_queue), GR's applier queue."""
        return self.recv_q if self.galera else len(self.relay)

    # -- receiving, in the total order
    def deliver(self, ws: _Ws, now: float) -> None:
        self.incoming.append(ws)
        if ws.origin != self.i and self.galera:
            self.recv_q += 1
            if self.recv_q > self.cl.queue_max:
                self.cl.queue_max = self.recv_q
            self.cl.fc_on_deliver(self, now)
        self.pump(now)

    def pump(self, now: float) -> None:
        """Certify the next delivered write-set when the local monitor is free (Galera: a
        remote one needs an idle slave thread, which takes it off the receive queue)."""
        while not self.cert_busy and self.incoming:
            ws = self.incoming[0]
            if self.galera and ws.origin != self.i:
                if self.threads == 0:
                    return
                self.threads -= 1
                self.recv_q -= 1
                self.cl.fc_on_dequeue(self, now)
            self.incoming.popleft()
            self.cert_busy = True
            self.cl.cpu(now, self.cl.member_cpu(ws, self.i) * self.cl.prof.cert_share,
                        self._certified, ws)

    def _certified(self, ws: _Ws, now: float) -> None:
        cl = self.cl
        self.cert_busy = False
        local = ws.origin == self.i
        s = _Seq(ws, local, cl.member_cpu(ws, self.i) * cl.prof.commit_share)
        if self.galera:
            r = self.cert.certify(ws.pos, ws.keys, ws.last_seen, ws.origin, toi=ws.toi,
                                  pa_unsafe=ws.txn.no_pk)
            s.ok, s.dep = r.ok, r.depends_seqno
        else:
            r = self.cert.certify(ws.pos, () if ws.toi else ws.keys, ws.snapshot, local=local)
            s.ok, s.lc, s.sn = r.ok, r.last_committed, r.sequence_number
            if s.ok and not local:                   # commit order: the relay log's
                self.relay_count += 1
                s.seq = self.relay_count
        cl.log("certify", self.i, ws.pos)
        self.certified += 1
        if self.galera and self.certified % cl.purge_every == 0:
            cl.purge(self)
        if self.galera:
            self._galera_enter(s, now)
        elif not s.ok:
            self._finish(s, now)                     # dropped
        elif local:
            s.ready = now
            self.local_stage.add(s, now)             # EVENTUAL: it commits once certified
        else:
            self.relay.append(s)
            self._gr_dispatch(now)
        self.pump(now)

    # -- Galera
    def _galera_enter(self, s: _Seq, now: float) -> None:
        if not s.ok:                                 # cancelled in its turn
            if "failed_ws_commits_early" in self.cl.cfg.bugs:
                self.stage.skip.add(s.seq)
                self._finish(s, now)
            else:
                s.ready, s.txn = now, 0.0
                self.stage.add(s, now)
        elif s.local:
            s.ready = now                            # applied already: the commit monitor
            self.stage.add(s, now)
        elif s.dep <= self.last_left:
            self._apply(s, now)
        else:
            heapq.heappush(self.apply_wait, (s.dep, s.seq, s))

    def _apply(self, s: _Seq, now: float) -> None:
        cl = self.cl
        cl.log("start", self.i, s.pos)
        share = 1 - cl.prof.cert_share - cl.prof.commit_share
        cl.cpu(now, cl.member_cpu(s.ws, self.i) * share, self._applied, s)

    def _applied(self, s: _Seq, now: float) -> None:
        s.ready = now              # Galera: the commit monitor; GR: the relay log's order
        self.stage.add(s, now)

    # -- Group Replication: dispatch in relay-log order, commit in relay-log order
    def _gr_dispatch(self, now: float) -> None:
        while self.relay and self.threads > 0 and self.relay[0].lc <= self.lwm:
            s = self.relay[0]
            locks = self.cl.locks[self.i]
            if any(0 < h.pos < s.pos for h in (locks.get(k) for k in s.ws.keys) if h):
                return                     # a local transaction certified earlier holds a row
            self.relay.popleft()
            self.threads -= 1
            self._apply(s, now)

    def committed_group(self, batch: list, now: float) -> None:
        for s in batch:
            s.commit = now
            self._finish(s, now)

    def _finish(self, s: _Seq, now: float) -> None:
        cl = self.cl
        if self.galera or s.ok:                      # GR drops a failed write-set silently
            cl.log("commit", self.i, s.pos)
        if cl.finish_log is not None:
            count, _ = cl.finish_log.get(s.pos, (0, 0.0))
            cl.finish_log[s.pos] = (count + 1, now)
        if self.galera:
            self.finished.add(s.pos)
            while self.last_left + 1 in self.finished:
                self.last_left += 1
                self.finished.discard(self.last_left)
            if not s.local:
                self.threads += 1
                self.applied_in_period += 1
            while self.apply_wait and self.apply_wait[0][0] <= self.last_left:
                self._apply(heapq.heappop(self.apply_wait)[2], now)
        elif s.ok:
            self.committed = Snapshot.normal(self.committed.prefix, self.committed.extra | {s.pos})
            if not s.local:
                self.threads += 1
                self.applied_in_period += 1
                self.sn_done.add(s.sn)
                while self.lwm + 1 in self.sn_done or self.lwm + 1 in cl.gr_gaps:
                    self.lwm += 1
                    self.sn_done.discard(self.lwm)
            self._gr_dispatch(now)
        if s.local:
            cl.client_done(s.ws, now, s.ok)
        self.pump(now)


class Cluster:
    """One simulation: `Cluster(txns, config, profile).run(rate, seconds, warmup)`."""

    def __init__(self, txns: Sequence, cfg: ClusterConfig, prof: ClusterProfile, *,
                 seed: int = 1, log: Callable | None = None, purge_every: int = PURGE_EVERY):
        cfg.check()
        self.purge_every = purge_every
        if not txns:
            raise ClusterError("the workload has no transaction")
        self.txns, self.cfg, self.prof, self.seed = list(txns), cfg, prof, seed
        self._log = log
        mean_events = sum(txn_events(t) for t in self.txns) / len(self.txns)
        self.scales = [txn_events(t) / mean_events if mean_events else 1.0 for t in self.txns]
        self.now = 0.0

    # ---- what members use
    def log(self, event: str, member: int, pos: int) -> None:
        if self._log is not None:
            self._log(event, member, pos, self.now)

    def member_cpu(self, ws: _Ws, member: int) -> float:
        per = self.prof.origin_cpu if ws.origin == member else self.prof.apply_cpu
        return per * ws.scale

    def cpu(self, now: float, cost: float, then: Callable, arg) -> None:
        """`cost` µs of CPU, on a core when cores are modelled; then `then(arg, time)`."""
        if cost <= 0:
            then(arg, now)
        elif self.cpus is None:
            heapq.heappush(self.heap, (now + cost, next(self.counter), CPU_DONE, (None, then, arg)))
        else:
            task = CpuTask()
            self.cpus.execute(task, now, cost, CPU_DONE, (task, then, arg))

    def new_stage(self, ordered: bool, remote_alone: bool = False) -> _Stage:
        base = 100 + 3 * len(self.stages)
        stage = _Stage((base, base + 1, base + 2), self.sync, ordered, self.heap, self.counter,
                       sync_cpu=self.sync_cpu, cpus=self.cpus, disk=self.disk,
                       remote_alone=remote_alone)
        member = len(self.members)
        for k, what in zip((base, base + 1, base + 2), ("end", "start", "cpu")):
            self.stage_kinds[k] = (stage, what, member)
        self.stages.append(stage)
        return stage

    # ---- a run
    def run(self, rate: float | None, seconds: float, warmup: float = 1.0) -> dict:
        """Offered `rate` transactions/s (None: every client as fast as it can) for `warmup +
        seconds` simulated seconds; the figures of the last `seconds`."""
        cfg = self.cfg
        lo, hi = warmup * 1e6, (warmup + seconds) * 1e6
        self._reset((lo, hi), closed=rate is None)
        if self.closed:
            for w in cfg.writers:
                for _ in range(self.free_clients[w]):
                    self._arrival(w, 0.0)
        else:
            rng = random.Random(self.seed)
            t = 0.0
            k = 0
            while True:
                t += rng.expovariate(rate) * 1e6
                if t > hi:
                    break
                heapq.heappush(self.heap, (t, next(self.counter), ARRIVE,
                                           cfg.writers[k % len(cfg.writers)]))
                k += 1
        self._loop(hi)
        if self.paused_since is not None:
            self.paused_total += hi - self.paused_since
        return {"rate": rate, "tps": self.done_in_window / seconds,
                "offered_tps": None if rate is None else self.arrived_in_window / seconds,
                "queues_end": [m.queue for m in self.members], "errors": self.errors,
                "fc_paused": self.paused_total / hi if hi else 0.0,
                "fc_stops": self.fc_sent[1], "queue_max": self.queue_max,
                "latency_avg_ms": (self.latency_sum / self.done_in_window / 1000
                                   if self.done_in_window else None)}

    def run_batch(self, origins: Sequence[int], gap_us: float = 0.0,
                  limit_us: float = 60e6) -> dict:
        """Transaction i of the workload arrives at member `origins[i]` at `i x gap_us`, once;
        run until nothing is left to happen (trace validation's small runs). `done`: whether
        every write-set finished on every member."""
        self._reset((0.0, limit_us), closed=False)
        for i, member in enumerate(origins):
            if member not in self.free_clients:
                raise ClusterError(f"transaction {i + 1}'s origin {member} is not a writer")
            heapq.heappush(self.heap, (i * gap_us, next(self.counter), ARRIVE, member))
        self._loop(limit_us)
        n = len(origins)
        done = self.next_pos - 1 == n and all(
            (m.last_left == n) if m.galera else m.certified == n and not m.relay
            and not m.stage.waiting and not m.local_stage.waiting for m in self.members)
        return {"done": done, "errors": self.errors, "sent": self.next_pos - 1}

    def run_times(self, times: Sequence[float], limit_us: float) -> dict:
        """Transaction i of the workload arrives at the first writer at `times[i]` (µs); run
        until everything finished or `limit_us`. Returns when each one finished on every
        member (`done_at`: the last member's commit, None if it did not), and flow control's
        pause."""
        self._reset((0.0, limit_us), closed=False)
        self.finish_log = {}
        w = self.cfg.writers[0]
        for t in times:
            heapq.heappush(self.heap, (t, next(self.counter), ARRIVE, w))
        self._loop(limit_us)
        n = len(times)
        members = len(self.members)
        done_at = [None] * n
        for pos, (count, last) in self.finish_log.items():
            if count == members and pos <= n:
                done_at[pos - 1] = last
        end = self.now
        if self.paused_since is not None:
            self.paused_total += end - self.paused_since
        # positions follow sending order, which is arrival order for one writer
        return {"done_at": done_at, "fc_paused": self.paused_total / end if end else 0.0}

    def _reset(self, window: tuple[float, float], closed: bool) -> None:
        cfg, prof = self.cfg, self.prof
        self.heap: list = []
        self.counter = itertools.count()
        self.cpus = CpuPool(prof.cores, self.heap, self.counter) if prof.cores else None
        self.disk = Disk()
        self.sync = 2 * prof.fsync if cfg.durable else 0.0
        self.sync_cpu = 2 * prof.fsync_cpu if cfg.durable else 0.0
        self.stages: list = []
        self.stage_kinds: dict = {}
        self.members: list[_Member] = []
        for i in range(cfg.members):                   # (a member's stages know its index)
            self.members.append(_Member(self, i))
        self.round_waiting: list[_Ws] = []
        self.round_busy = False
        self.next_pos = 1
        self.sent_txns: dict = {}                      # position -> txn (when logging)
        self.gr_gaps: set[int] = set()
        self.last_gc = 0.0
        self.stop_count = 0
        self.fc_lower, self.fc_upper = galera_limits(cfg.fc_limit, cfg.fc_factor, cfg.members)
        self.quota = self.quota_used = 0
        self.paused_since, self.paused_total = None, 0.0
        self.fc_sent = [0, 0]                          # CONTs, STOPs sent
        self.queue_max = 0
        self.blocked: deque[_Ws] = deque()
        self.locks: list[dict] = [{} for _ in range(cfg.members)]   # per member: key -> holder
        self.lock_waiters: dict[int, list] = {}
        self.errors = 0
        self.window = window
        self.done_in_window = 0
        self.arrived_in_window = 0
        self.latency_sum = 0.0
        per_writer = max(1, cfg.clients // len(cfg.writers))
        self.free_clients = {w: per_writer for w in cfg.writers}
        self.client_queue = {w: deque() for w in cfg.writers}
        self.closed = closed
        self.next_id = 0
        self.finish_log = None                         # run_times: pos -> (members done, last)
        if cfg.flavor == "group_replication":
            heapq.heappush(self.heap, (GR_PERIOD_S * 1e6, next(self.counter), TICK, None))

    def _loop(self, end: float) -> None:
        heap, pop = self.heap, heapq.heappop
        kinds = self.stage_kinds
        while heap:
            t, _, kind, payload = pop(heap)
            if t > end:
                break
            self.now = t
            if kind == CPU_DONE:
                task, then, arg = payload
                if task is not None:
                    self.cpus.release(task, t)
                then(arg, t)
            elif kind == ARRIVE:
                self._arrival(payload, t)
            elif kind == ROUND_END:
                self._round_end(payload, t)
            elif kind == FC_MSG:
                self._fc_delivered(payload, t)
            elif kind == TICK:
                self._tick(t)
            else:
                stage, what, member = kinds[kind]
                if what == "end":
                    stage.group_done(payload, t)
                    self.members[member].committed_group(payload, t)
                elif what == "start":
                    stage.group_start(t)
                else:
                    stage.sync_cpu_done(payload, t)

    # ---- clients and the origin's execution
    def _arrival(self, writer: int, now: float) -> None:
        if self.window[0] <= now <= self.window[1]:
            self.arrived_in_window += 1
        i = self.next_id
        self.next_id += 1
        k = i % len(self.txns)
        ws = _Ws(i, self.txns[k], writer, self.scales[k], now)
        if self.free_clients[writer] > 0:
            self._client_start(ws, now)
        else:
            self.client_queue[writer].append(ws)

    def _client_start(self, ws: _Ws, now: float) -> None:
        self.free_clients[ws.origin] -= 1
        self.cpu(now, self.prof.client_cpu * ws.scale / 2, self._execute, ws)

    def _execute(self, ws: _Ws, now: float) -> None:
        """The origin executes the statements, holding the rows' InnoDB locks until the
        transaction commits or rolls back (a later transaction that needs one waits)."""
        locks = self.locks[ws.origin]
        for k in ws.keys:
            holder = locks.get(k)
            if holder is not None and holder is not ws:
                self.lock_waiters.setdefault(holder.id, []).append(ws)
                return
        for k in ws.keys:
            locks[k] = ws
        share = 1 - self.prof.cert_share - self.prof.commit_share
        self.cpu(now, self.member_cpu(ws, ws.origin) * share, self._send, ws)

    def _unlock(self, ws: _Ws, now: float) -> None:
        locks = self.locks[ws.origin]
        for k in ws.keys:
            if locks.get(k) is ws:
                del locks[k]
        for waiter in self.lock_waiters.pop(ws.id, ()):
            self._execute(waiter, now)
        member = self.members[ws.origin]
        if not member.galera:
            member._gr_dispatch(now)

    def client_done(self, ws: _Ws, now: float, ok: bool) -> None:
        self._unlock(ws, now)
        self.cpu(now, self.prof.client_cpu * ws.scale / 2, self._client_free, (ws, ok))

    def _client_free(self, arg, now: float) -> None:
        ws, ok = arg
        if not ok:
            self.errors += 1
        lo, hi = self.window
        if lo <= now <= hi:
            self.done_in_window += 1
            self.latency_sum += now - ws.arrive
        w = ws.origin
        self.free_clients[w] += 1
        if self.client_queue[w]:
            self._client_start(self.client_queue[w].popleft(), now)
        elif self.closed:
            self._arrival(w, now)

    # ---- replication: the group channel's rounds
    def _send(self, ws: _Ws, now: float) -> None:
        if self._paused():
            self.blocked.append(ws)
            return
        if self.cfg.flavor == "group_replication":
            self.quota_used += 1
        origin = self.members[ws.origin]
        ws.last_seen = origin.last_left                # its snapshot, taken as it is sent
        ws.snapshot = origin.committed
        ws.pos = self.next_pos                         # its place in the total order: rounds
        self.next_pos += 1                             # deliver in the order of sending
        if self._log is not None:
            self.sent_txns[ws.pos] = ws.txn
        self.log("send", ws.origin, ws.pos)
        self.round_waiting.append(ws)
        if not self.round_busy:
            self._start_round(now)

    def _start_round(self, now: float) -> None:
        batch, self.round_waiting = self.round_waiting, []
        self.round_busy = True
        heapq.heappush(self.heap, (now + self.prof.rtt, next(self.counter), ROUND_END, batch))

    def _round_end(self, batch: list, now: float) -> None:
        self.round_busy = False
        for ws in batch:
            for m in self.members:
                m.deliver(ws, now)
        if self.round_waiting:
            self._start_round(now)

    # ---- flow control
    def _paused(self) -> bool:
        if self.cfg.flavor == "galera":
            return self.stop_count > 0
        return self.quota != 0 and self.quota_used >= self.quota

    def fc_on_deliver(self, m: _Member, now: float) -> None:
        if galera_stop(self.stop_count, m.stop_sent or m.pending_stop, m.recv_q, self.fc_upper):
            if "fc_stop_mark_late" in self.cfg.bugs:
                # bug: the decision is taken now, stop_sent is marked when the STOP goes out
                m.pending_stop = True
                heapq.heappush(self.heap, (now + 1.0, next(self.counter), FC_MSG, m))
            else:
                m.stop_sent = True
                self._fc_send(+1, now)

    def fc_on_dequeue(self, m: _Member, now: float) -> None:
        if galera_cont(m.stop_sent, m.recv_q, self.fc_lower):
            m.stop_sent = False
            self._fc_send(-1, now)

    def _fc_send(self, delta: int, now: float) -> None:
        """A STOP (+1) or CONT (-1) goes through the group as any message does: every member
        counts it when it is delivered, a trip of `fc_rtt` after it was sent; meanwhile the
        writers go on (a STOP) or stay paused (a CONT)."""
        self.fc_sent[delta > 0] += 1
        trip = self.prof.rtt if self.prof.fc_rtt is None else self.prof.fc_rtt
        heapq.heappush(self.heap, (now + trip, next(self.counter), FC_MSG, delta))

    def _fc_delivered(self, payload, now: float) -> None:
        if isinstance(payload, _Member):             # bug fc_stop_mark_late: marked now
            payload.pending_stop = False
            payload.stop_sent = True
            self._fc_send(+1, now)
            return
        was = self._paused()
        self.stop_count += payload
        self._pause_edge(was, now)

    def _pause_edge(self, was: bool, now: float) -> None:
        if self._paused() and not was:
            self.paused_since = now
        elif was and not self._paused():
            self.paused_total += now - self.paused_since
            self.paused_since = None
            while self.blocked and not self._paused():
                self._send(self.blocked.popleft(), now)

    def _tick(self, now: float) -> None:
        """Group Replication's flow_control_step (each period) and, each GC period, the
        certification info's garbage collection."""
        was = self._paused()
        lagging = [m.applied_in_period for m in self.members if m.queue > self.cfg.gr_threshold]
        self.quota = gr_quota(self.quota, lagging, len(self.cfg.writers),
                              threshold=self.cfg.gr_threshold)
        self.quota_used = 0
        for m in self.members:
            m.applied_in_period = 0
        self._pause_edge(was, now)
        if now - self.last_gc >= GR_GC_PERIOD_S * 1e6:
            self.last_gc = now
            stable = Snapshot(min(m.committed.prefix for m in self.members))
            for m in self.members:
                before = m.cert.sequence_number
                m.cert.garbage_collect(stable)
                self.gr_gaps.add(before)             # the sequence number GC skips
        heapq.heappush(self.heap, (now + GR_PERIOD_S * 1e6, next(self.counter), TICK, None))

    # ---- Galera's index purge
    def purge(self, m: _Member) -> None:
        """Up to the commit cut, and no further than what a write-set still to be certified
        here has seen (bug cert_purge_past_safe: this member's own last_left)."""
        if "cert_purge_past_safe" in self.cfg.bugs:
            bound = m.last_left
        else:
            bound = min(x.last_left for x in self.members)
            for ws in itertools.chain(m.incoming, self.round_waiting, self.blocked):
                bound = min(bound, ws.last_seen)
        if bound > m.purged:
            m.purged = bound
            m.cert.purge(bound)
            self.log("purge", m.i, bound)


# ---------------------------------------------------------------- sustained throughput

KEPT_UP_SHARE = 0.97            # the writers achieved at least this share of the offered rate
QUEUE_SLACK = (30, 0.02)        # and no queue ends above max(30, 2% of the offered write-sets)


def kept_up(result: dict, seconds: float) -> bool:
    """traces/record/galera_measure.py's test, on a simulated run. The writers' share is taken
    of what actually arrived in the window (`offered_tps`): a short simulated run's Poisson
    arrivals stray from the nominal rate by more than the 3% the test allows (30 s of sysbench,
    about 1%)."""
    offered_tps = result.get("offered_tps") or result["rate"]
    offered = offered_tps * seconds
    return (result["tps"] >= KEPT_UP_SHARE * offered_tps
            and max(result["queues_end"]) <= max(QUEUE_SLACK[0], QUEUE_SLACK[1] * offered))


@dataclass
class Sustained:
    sustained: float               # the highest rate kept up
    next_rate: float               # the lowest rate tried that was not (the resolution)
    unthrottled: float             # what the writers achieve as fast as they can
    steps: list                    # every run, in order

    def to_json(self) -> dict:
        return {"sustained": round(self.sustained, 1), "next_rate": round(self.next_rate, 1),
                "unthrottled": round(self.unthrottled, 1), "steps": self.steps}


def sustained(txns: Sequence, cfg: ClusterConfig, prof: ClusterProfile, *,
              seconds: float = 10.0, warmup: float = 2.0, steps: int = 7, seed: int = 1,
              progress: Callable[[str], None] = lambda s: None) -> Sustained:
    """The highest offered rate every member keeps up with, flow control included, found as
    the measurement finds it: the writers unthrottled first, then a bisection on the rate
    between 0 and 1.2 x that (each run `warmup + seconds` simulated seconds)."""
    cluster = Cluster(txns, cfg, prof, seed=seed)
    probe = cluster.run(None, seconds, warmup)
    progress(f"unthrottled: {probe['tps']:.0f} tps")
    lo, hi = 0.0, 1.2 * probe["tps"]
    runs = [dict(probe, kind="probe")]
    for _ in range(steps):
        rate = (lo + hi) / 2
        r = cluster.run(rate, seconds, warmup)
        r["kept_up"] = kept_up(r, seconds)
        runs.append(dict(r, kind="bisect"))
        progress(f"rate {rate:.0f}: {r['tps']:.0f} tps, queues {r['queues_end']}"
                 f"{'' if r['kept_up'] else ' (not kept up)'}")
        if r["kept_up"]:
            lo = rate
        else:
            hi = rate
    return Sustained(lo, hi, probe["tps"], runs)


# ---------------------------------------------------------------- the open replay (lag --system)

def cluster_keeps_up(txns: Sequence, times: Sequence[float], cfg: ClusterConfig,
                     prof: ClusterProfile, speed: float = 1.0) -> dict:
    """The trace replayed as it arrived (docs/lag.md) on a cluster: each transaction reaches
    the writer at its source commit time divided by `speed`, twice in a row (two laps, as
    model/replay.py reads a trace: one period of a pace that repeats). The cluster keeps up when
    the second lap ends no more behind than the first (lag: the last member's commit minus the
    source time; flow control holds the writer instead of letting members lag, so this lag is
    the writer's and the members' together)."""
    n = len(times)
    base = [t / speed for t in times]
    span = (base[-1] - base[0]) if n > 1 else 0.0
    gap = (span / (n - 1)) if n > 1 else 1000.0
    laps = base + [t + span + gap for t in base]
    cluster = Cluster(list(txns) * 2, cfg, prof)
    limit = laps[-1] + max(60e6, 10 * (span + gap))
    r = cluster.run_times(laps, limit)
    done = r["done_at"]
    if done[-1] is None or done[n - 1] is None:
        return {"keeps_up": False, "lap_lag_s": None, "fc_paused": r["fc_paused"]}
    lag1, lag2 = done[n - 1] - laps[n - 1], done[-1] - laps[-1]
    lags = sorted(d - t for d, t in zip(done[n:], laps[n:]) if d is not None)
    return {"keeps_up": lag2 <= lag1 * 1.05 + 1000.0, "lap_lag_s": (lag1 / 1e6, lag2 / 1e6),
            "p99_lag_s": lags[int(0.99 * (len(lags) - 1))] / 1e6,
            "max_lag_s": lags[-1] / 1e6, "fc_paused": r["fc_paused"]}


def cluster_headroom(txns: Sequence, times: Sequence[float], cfg: ClusterConfig,
                     prof: ClusterProfile, precision: float = 1.02) -> float:
    """The largest factor the source's pace can be multiplied by with the cluster keeping up
    (bisection on a log scale between 1/1000 and 1000)."""
    lo, hi = 1e-3, 1e3
    if cluster_keeps_up(txns, times, cfg, prof, hi)["keeps_up"]:
        return hi
    if not cluster_keeps_up(txns, times, cfg, prof, lo)["keeps_up"]:
        return lo
    while hi / lo > precision:
        mid = math.sqrt(lo * hi)
        if cluster_keeps_up(txns, times, cfg, prof, mid)["keeps_up"]:
            lo = mid
        else:
            hi = mid
    return lo


# ---------------------------------------------------------------- profiles

PROFILES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             "cluster_profiles.json")


def load_profiles(path: str = PROFILES_PATH) -> dict[str, ClusterProfile]:
    """The cluster profiles measured by traces/record/galera_fit.py (docs/certification.md)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    names = {f for f in ClusterProfile.__dataclass_fields__}
    return {p["name"]: ClusterProfile(**{k: v for k, v in p.items() if k in names})
            for p in data["profiles"]}


def get_profile(name: str) -> ClusterProfile:
    profiles = load_profiles()
    if name not in profiles:
        raise ClusterError(f"unknown cluster profile {name!r}; known: "
                           f"{', '.join(profiles) or 'none (run make galera-fit)'}")
    return profiles[name]


__all__ = ["ClusterProfile", "ClusterConfig", "Cluster", "ClusterError", "FLAVORS", "sustained",
           "Sustained", "kept_up", "load_profiles", "get_profile", "cluster_keeps_up",
           "cluster_headroom"]
