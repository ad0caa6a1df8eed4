"""traces/record/ktrace.py: a drain's kernel timeline read from `perf script` text (no perf and
no root needed here: a hand-made timeline with known pieces, and 400 lines recorded from a
conservative W=4 drain, tests/fixtures/ktrace/)."""
from __future__ import annotations

import json
import os

import pytest

from record_scripts import import_record_scripts

(ktrace,) = import_record_scripts("ktrace")
HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "fixtures", "ktrace")

# A worker (101) syncs the binlog (fd 5): it enters at 1.000000, sleeps at 1.000010; the core
# idles (perf drops the idle task's events, so the idle slice ends at the next thread's first
# event), worker 102 runs from 1.000050; 101 is woken at 1.000200 by an interrupt on CPU 0,
# waits for the core until 102 is preempted at 1.000300, and returns at 1.000310.
HAND = """\
 mariadbd  1/101  [001]     1.000000:  syscalls:sys_enter_fdatasync: fd: 0x00000005
 mariadbd  1/101  [001]     1.000010:  sched:sched_switch: prev_comm=mariadbd prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
 mariadbd  1/102  [001]     1.000050:  syscalls:sys_exit_pwrite64: 0x2000
 kworker/0:1  7/7  [000]     1.000150:  block:block_rq_issue: 254,0 FF 0 () 0 + 0 0x2,0,4 [kworker/0:1]
 swapper  0/0     [000]     1.000190:  block:block_rq_complete: 254,0 FF () 0 + 0 0x2,0,4 [0]
 swapper  0/0     [000]     1.000200:  sched:sched_wakeup: comm=mariadbd pid=101 prio=120 target_cpu=001
 mariadbd  1/102  [001]     1.000300:  sched:sched_switch: prev_comm=mariadbd prev_pid=102 prev_prio=120 prev_state=R ==> next_comm=mariadbd next_pid=101 next_prio=120
 mariadbd  1/101  [001]     1.000310:  syscalls:sys_exit_fdatasync: 0x0
 mariadbd  1/101  [001]     1.000400:  sched:sched_switch: prev_comm=mariadbd prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
"""
HAND_THREADS = {"101": "thread/sql/rpl_parallel_thread", "102": "thread/sql/rpl_parallel_thread",
                "100": "thread/sql/slave_sql"}
HAND_FDS = {"5": "/data/binlog.000003", "6": "/data/ib_logfile0"}


def test_a_sync_is_split_into_core_sleep_and_waiting_for_the_core():
    tl = ktrace.parse_perf_script(HAND.splitlines())
    (call,) = ktrace.blocking_calls(tl, {101, 102}, 0.0, 2.0)[:1]
    tid, name, fd, t0, t1, cpu, sleep, runq, sleeps = call
    assert (tid, name, fd) == (101, "fdatasync", 5)
    assert t1 - t0 == pytest.approx(310e-6)
    assert cpu == pytest.approx(20e-6)          # 1.000000-010 and 1.000300-310
    assert runq == pytest.approx(100e-6)        # woken at .000200, on the core at .000300
    assert sleep == pytest.approx(190e-6)
    assert sleeps == [pytest.approx((1.000010, 1.000200))]
    # the idle slice ends at the next thread's first event on that core
    assert tl.slices[0] == [(1, pytest.approx(1.000010), pytest.approx(1.000050), "R")]
    assert tl.slices[102] == [(1, pytest.approx(1.000050), pytest.approx(1.000300), "R")]
    assert tl.blocks == [(pytest.approx(1.000150), pytest.approx(1.000190), "FF", 0)]


def test_the_summary_counts_the_core_and_the_preemption():
    tl = ktrace.parse_perf_script(HAND.splitlines())
    s = ktrace.summarize(tl, HAND_THREADS, HAND_FDS, 1.0, 1.0004, txns=1)
    share = s["core_share"]
    assert share["worker"] == pytest.approx((10 + 250 + 100) / 400)
    assert share["idle"] == pytest.approx(40 / 400)
    assert sum(share.values()) == pytest.approx(1.0)
    sync = s["syscalls"]["fdatasync binlog by worker"]
    assert sync["n"] == 1 and sync["mean_us"] == pytest.approx(310)
    # while 101 was in its sync the core ran 102 (250 µs) and idled (40 µs) of 310
    assert sync["core_meanwhile"]["worker"] == pytest.approx(250 / 310)
    g = ktrace.group_timeline(tl, HAND_THREADS, HAND_FDS, 1.0, 1.0004, [1])
    # 102 lost the core to 101, woken inside its fdatasync
    assert g["preemptions"] == {"by a thread in fdatasync": 1}
    assert g["binlog fdatasync"]["waiting for the core"]["mean_us"] == pytest.approx(100)


def test_a_recorded_sample_parses_and_its_pieces_add_up():
    path = os.path.join(FIX, "perf_script_sample.txt")
    with open(path) as f:
        lines = f.readlines()
    tl = ktrace.parse_perf_script(lines, path)
    with open(os.path.join(FIX, "threads.json")) as f:
        threads = json.load(f)
    with open(os.path.join(FIX, "fds.json")) as f:
        fds = json.load(f)
    # counted independently of the parser: syscall exits whose entry is in the sample
    enters = {}
    pairs = 0
    for line in lines:
        tid = line.split()[1].split("/")[1]
        for kind in ("enter", "exit"):
            for name in ktrace.SYSCALLS:
                if f"syscalls:sys_{kind}_{name}:" in line:
                    if kind == "enter":
                        enters[(tid, name)] = True
                    elif enters.pop((tid, name), None):
                        pairs += 1
    assert len(tl.calls) == pairs > 10
    assert len(tl.wakeups) == sum("sched:sched_wakeup" in x for x in lines)
    role = ktrace.roles(threads)
    calls = ktrace.blocking_calls(tl, set(role), tl.first, tl.last)
    assert calls
    for c in calls:
        assert c[5] + c[6] + c[7] == pytest.approx(c[4] - c[3], abs=1e-9)
        assert min(c[5], c[6], c[7]) >= 0
    kinds = {ktrace.file_kind(fds[str(c[2])]) for c in calls if str(c[2]) in fds}
    assert {"binlog", "redo"} <= kinds
    s = ktrace.summarize(tl, threads, fds, tl.first + 0.0005, tl.last - 0.0005)
    assert sum(s["core_share"].values()) == pytest.approx(1.0)
    assert s["core_share"]["worker"] > 0.3


def test_a_line_that_is_not_perf_script_is_named():
    bad = HAND.splitlines()
    bad.insert(3, "this is not a perf line")
    with pytest.raises(ktrace.ParseError, match=r"sample:4: not a perf script event line"):
        ktrace.parse_perf_script(bad, "sample")


def test_binlog_groups_are_runs_of_one_commit_id():
    rows = [(1, None), (2, 7), (3, 7), (4, 9), (5, None), (6, None), (7, 9)]
    assert ktrace.group_sizes(rows) == [1, 2, 1, 1, 1, 1]
    line = "#251127 12:31:40 server id 1  end_log_pos 419 CRC32 0x1  GTID 0-1-57 cid=412 trans"
    assert ktrace.CID.search(line).groups() == ("0", "1", "57", "412")


def test_run_names():
    assert ktrace.parse_name("durable-conservative-4+noperf") == {
        "name": "durable-conservative-4_noperf", "durability": "durable",
        "mode": "conservative", "threads": 4, "perf": False, "sample": False}
    with pytest.raises(SystemExit, match="bad run"):
        ktrace.parse_name("durable-fast-4")


def test_a_sampled_drain_is_summed_per_transaction_by_role_library_and_function(monkeypatch):
    """`+sample` runs: perf script's `tid ip sym dso` lines counted at SAMPLE_HZ, each sample
    1e6 / SAMPLE_HZ µs of the core, over the drain's transactions."""
    lines = "\n".join([
        "   101 55d0a1 [unknown] (/usr/sbin/mariadbd)",
        "   101 ffffffff81 iowrite16 ([kernel.kallsyms])",
        "   102 7f00 malloc (/usr/lib/x86_64-linux-gnu/libc.so.6)",
        "   102 7f01 _int_free (/usr/lib/x86_64-linux-gnu/libc.so.6)",
        "   103 ffffffff82 handle_softirqs ([kernel.kallsyms])",
        "   999 ffffffff83 do_syscall_64 ([kernel.kallsyms])",
        "perf: a line that is not a sample"])

    class Done:
        returncode, stdout, stderr = 0, lines, ""
    monkeypatch.setattr(ktrace.subprocess, "run", lambda *a, **k: Done())
    threads = {101: "thread/sql/slave_sql", 102: "thread/sql/rpl_parallel_thread",
               103: "thread/innodb/page_cleaner_thread"}
    s = ktrace.sample_summary("perf.data", threads, transactions=2)
    one = 1e6 / ktrace.SAMPLE_HZ / 2               # one sample over two transactions, µs
    assert s["samples"] == 6
    assert s["us_per_txn_by_role"] == {"driver": round(2 * one, 2), "worker": round(2 * one, 2),
                                       "other": round(one, 2),
                                       "outside the server": round(one, 2)}
    assert s["us_per_txn_by_dso"]["server: libc.so.6"] == round(2 * one, 2)
    assert s["us_per_txn_by_dso"]["other: [kernel.kallsyms]"] == round(one, 2)
    assert s["us_per_txn_top_symbols"]["[kernel.kallsyms]: iowrite16"] == round(one, 2)


def test_a_run_may_ask_for_samples_and_nothing_else():
    assert ktrace.parse_name("relaxed-optimistic-4+sample")["sample"] is True
    assert ktrace.parse_name("relaxed-optimistic-4")["sample"] is False
    with pytest.raises(SystemExit, match="only \\+noperf or \\+sample"):
        ktrace.parse_name("relaxed-optimistic-4+trace")


def test_a_drain_that_does_not_end_says_what_the_threads_were_doing(tmp_path):
    class Server:
        def slave_status(self):
            return {"Slave_SQL_Running": "Yes", "Slave_SQL_Running_State":
                    "Waiting for room in worker thread event queue", "Last_SQL_Error": ""}

        def sql(self, query):
            return [["7", "system user", "Slave_worker", "301",
                     "Waiting for prior transaction to commit", "NULL"],
                    ["8", "system user", "Slave_worker", "301",
                     "Waiting for prior transaction to commit", "NULL"],
                    ["9", "system user", "Slave_SQL", "301", "", "NULL"]]
    said = ktrace.stuck(Server(), str(tmp_path), "0-1-500", 900)
    assert said.startswith("applied 0-1-500 of ...-900; SQL thread Yes (Waiting for room")
    assert "states: Waiting for prior transaction to commit (all in" in said
    kept = json.loads((tmp_path / "stuck.json").read_text())
    assert kept["target"] == 900 and len(kept["system_threads"]) == 3
