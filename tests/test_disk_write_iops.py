"""The device's write rate limit (`disk_write_iops`, model/simcore.WriteBucket and its Rust
twin): below the rate no write waits, a burst longer than the bucket runs at the rate, both
engines agree on generated traces with it on, a profile file takes it, and calibrate fits it
from the sustained write probe only when that one is slower than the single write."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commitsched.profiles import Profile, ProfileError, get_profile, load_profile_file
from commitsched.schedulers import collect
from commitsched.simcore import THROTTLE_SLICE_S, WriteBucket
from commitsched.trace import trace_from_dicts

from engine_diff import SCHEDULERS, columns_of, compare, every_term
from test_engine_diff import wild_traces

IDEAL = get_profile("ideal")


def test_the_bucket_holds_one_slice_and_is_full_at_the_start():
    """50 writes a second: a token every 20 ms, 5 of them (100 ms' worth) at once."""
    b = WriteBucket(50.0)
    assert THROTTLE_SLICE_S == 0.1 and b.capacity == 5.0
    assert [b.take(0.0) for _ in range(8)] == [0.0] * 5 + [20000.0, 40000.0, 60000.0]
    # a write issued while others wait goes after them
    assert b.take(10.0) == 80000.0


def test_below_the_rate_no_write_waits():
    b = WriteBucket(50.0)
    times = [i * 20000.0 for i in range(20)] + [400000.0 + i * 25000.0 for i in range(20)]
    assert [b.take(t) for t in times] == times


def test_the_bucket_refills_no_further_than_its_size():
    b = WriteBucket(50.0)
    assert [b.take(0.0) for _ in range(5)] == [0.0] * 5
    # a second idle refills 50 tokens' worth, but the bucket keeps 5: the 6th waits 20 ms
    assert [b.take(1e6) for _ in range(6)] == [1e6] * 5 + [1e6 + 20000.0]


def test_a_slow_rate_still_lets_one_write_through():
    b = WriteBucket(4.0)                         # 0.4 a slice: the bucket holds one write
    assert b.capacity == 1.0
    assert [b.take(0.0), b.take(0.0)] == [0.0, 250000.0]


def serial_trace(n: int, exec_us: float) -> list:
    """n transactions one after the other (one source group each), each executing `exec_us`,
    its redo flush 2 µs at prepare, then its group's sync (the profile's, 3 µs)."""
    rows = [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": exec_us, "commit": 2.0,
             "commit_id": i, "flags": ["transactional", "allow_parallel"]}
            for i in range(1, n + 1)]
    return trace_from_dicts(rows).txns


PROF = replace(IDEAL, sync=3.0, commit_grouped=True, name="two-writes")


def commits(sched: str, txns, profile, workers: int = 1) -> list:
    runs, _ = collect(sched, txns, workers, profile)
    return [r.commit for r in sorted(runs, key=lambda r: r.seq)]


@pytest.mark.parametrize("sched", ["serial", "commit_id+mariadb_conservative"])
def test_below_the_rate_the_schedule_is_the_unlimited_one(sched):
    """20 writes a second, a bucket of 2; each transaction writes twice in 200 ms (10 a second):
    not one write waits, so every commit is where it is without the limit."""
    txns = serial_trace(10, 200000.0)
    free = commits(sched, txns, PROF)
    assert free[-1] == 10 * 200005.0
    assert commits(sched, txns, replace(PROF, disk_write_iops=20.0)) == free


@pytest.mark.parametrize("sched", ["serial", "commit_id+mariadb_conservative"])
def test_a_burst_longer_than_the_bucket_runs_at_the_rate(sched):
    """100 writes a second (a token every 10 ms, a bucket of 10) against 40 transactions of 6 µs
    writing twice each: the first 10 writes go at once; the full bucket refills from the first
    (at 1 µs), so the 11th gets its token at 1 µs + 10 ms less the 26 µs refilled meanwhile, and
    from there one write every 10 ms: the 80th, the last transaction's sync, at 1 µs + 70 x 10
    ms, and it ends 3 µs later."""
    txns = serial_trace(40, 1.0)
    assert commits(sched, txns, PROF)[-1] == 240.0
    limited = commits(sched, txns, replace(PROF, disk_write_iops=100.0))
    assert limited[-1] == pytest.approx(700004.0, abs=1e-6)
    # the 5th transaction's writes are the 9th and 10th: the last of the bucket's, no wait
    assert limited[:5] == [6.0, 12.0, 18.0, 24.0, 30.0]
    # the 6th's flush (the 11th write) at 31 µs + 9970 µs to 10003; its sync's token 10 ms
    # after the 11th's: 20001 + 3
    assert limited[5] == pytest.approx(20004.0, abs=1e-6)
    gaps = [b - a for a, b in zip(limited[5:], limited[6:])]
    assert all(g == pytest.approx(20000.0, abs=1e-6) for g in gaps)


# bucket sizes under 1 (clamped), fractional, and a few writes, so that the limit binds on
# hypothesis' short traces (times in µs: 15 writes a second is one every 66.7 ms)
LIMITED = [
    every_term(get_profile("durable"), cores=2, disk_write_iops=15.0),
    every_term(get_profile("durable"), disk_write_iops=35.0),
    every_term(get_profile("durable"), cores=2, disk_hold=0.3, disk_write_iops=25.0),
    every_term(get_profile("durable"), cores=2, per_core_queues=False, commit_grouped=False,
               shared_disk=False, disk_write_iops=8.0),
    every_term(get_profile("durable"), cores=2, log_write=30.0, shared_disk=False,
               disk_write_iops=12.0).with_durability("relaxed"),
    every_term(get_profile("durable"), log_write=30.0, disk_write_iops=45.0)
    .with_durability("relaxed"),
    replace(get_profile("durable", cores=2), commit_grouped=True, shared_disk=True,
            disk_write_iops=30.0, name="durable-grouped-30iops"),
    replace(get_profile("durable"), disk_write_iops=20.0, name="durable-20iops"),
]


@settings(max_examples=60, deadline=None)
@given(wild_traces(), st.sampled_from((1, 2, 3, 4, 8)), st.sampled_from(LIMITED))
def test_both_engines_agree_with_the_limit_on(trace, workers, profile):
    txns = trace.txns
    columns = columns_of(txns)
    bad = []
    for sched in SCHEDULERS:
        d = compare(sched, txns, columns, 1 if sched == "serial" else workers, profile)
        if d is not None:
            bad.append(d)
    assert not bad, bad[:3]


def test_the_limit_binds_in_the_parity_profiles():
    """The parity test above compares schedules the limit changed, not only unlimited ones."""
    txns = serial_trace(30, 1.0)
    changed = [i for i, p in enumerate(LIMITED)
               if commits("commit_id+mariadb_optimistic", txns, p, 2)
               != commits("commit_id+mariadb_optimistic", txns,
                          replace(p, disk_write_iops=None), 2)]
    assert changed == list(range(len(LIMITED)))


def test_every_shipped_profile_has_no_limit():
    from commitsched.profiles import PROFILES
    assert all(p.disk_write_iops is None for p in PROFILES.values())
    assert Profile("p", 1, 1, 1, 0, 0, "t").disk_write_iops is None


def test_a_profile_file_takes_a_rate_or_none_and_refuses_zero(tmp_path):
    base = {"name": "m", "exec_default": 1, "commit_default": 1, "sync": 1, "dispatch": 0,
            "retry": 0, "provenance": "t"}
    path = tmp_path / "p.json"
    for value, want in ((9500.5, 9500.5), (None, None)):
        path.write_text(json.dumps({**base, "disk_write_iops": value}))
        assert load_profile_file(str(path)).disk_write_iops == want
    for bad in (0, -3, "fast"):
        path.write_text(json.dumps({**base, "disk_write_iops": bad}))
        with pytest.raises(ProfileError, match="disk_write_iops"):
            load_profile_file(str(path))


def test_calibrate_says_the_rate_and_from_what():
    from commitsched.calibrate_replica import described, fit
    from test_calibrate_replica import BASE, BASE_FSYNC, machine, recorded_window, workload
    txns = workload()
    window = recorded_window(txns, machine(1.0))
    window.settings["log_file_buffered"] = False
    window.log_write_ms, window.write_sustained_ms = 0.064, 0.095
    result = fit(window, txns, BASE, cores=1, fsync=BASE_FSYNC)
    p = described(result, window, BASE, "m")
    assert p.log_write == pytest.approx(64.0)
    assert p.disk_write_iops == pytest.approx(1e6 / 95.0)
    assert p.fitted_from["disk_write_iops"] == ("10526: 1e6 / the sustained write probe's 95.0 "
                                                "µs (slower than the single write's 64.0 µs)")
    assert "the disk's writes limited to 10526 a second" in p.provenance
    # the single write as slow as the sustained ones: no limit, nothing said of one
    window.write_sustained_ms = 0.064
    bare = described(fit(window, txns, BASE, cores=1, fsync=BASE_FSYNC), window, BASE, "m")
    assert bare.disk_write_iops is None and "disk_write_iops" not in bare.fitted_from
    assert "limited to" not in bare.provenance


def test_several_windows_keep_the_median_write_time_and_no_limit_is_the_fastest():
    from commitsched.calibrate_replica import described_many, fit_many
    from test_calibrate_replica import BASE, BASE_FSYNC, machine, recorded_window, workload
    txns = workload()
    windows = []
    for i, sustained in enumerate((0.080, 0.100, None)):
        w = recorded_window(txns, machine(1.0))
        w.started_utc = f"2026-11-27T0{i}:00:00Z"
        w.settings["log_file_buffered"] = False
        w.log_write_ms, w.write_sustained_ms = 0.060, sustained
        windows.append(w)
    mf = fit_many(windows, [txns] * 3, BASE, labels=["a", "b", "c"], cores=1, fsync=BASE_FSYNC)
    # as µs a write: 80, 100 and 0 (no limit): the median 80 µs, 12500 a second
    assert mf.profile.disk_write_iops == pytest.approx(12500.0)
    assert mf.slowest["disk_write_iops"] == pytest.approx(10000.0)
    assert mf.fastest["disk_write_iops"] is None
    p = described_many(mf, BASE, "m")
    assert p.fitted_from["disk_write_iops"].startswith("12500: the median")
    from commitsched.spread import spread_ends
    ends = spread_ends(p)
    assert ends["slowest"].disk_write_iops == pytest.approx(10000.0)
    assert ends["fastest"].disk_write_iops is None
