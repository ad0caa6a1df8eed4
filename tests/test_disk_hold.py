"""The shared device held for part of each flush (`disk_hold` in µs, `disk_hold_share` as a
share of each flush; model/simcore.Disk and its Rust twin) and the probe that reads it
(model/disk_overlap.py): the default keeps the whole flush, a shorter hold lets two flushes
overlap as computed by hand, both engines agree, and the probe's arithmetic on fake
timings."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from commitsched import disk_overlap
from commitsched.profiles import Profile, ProfileError, get_profile, load_profile_file
from commitsched.schedulers import collect
from commitsched.simcore import Disk
from commitsched.trace import trace_from_dicts

from engine_diff import columns_of, compare

IDEAL = get_profile("ideal")
SCHED = "commit_id+mariadb_optimistic"


def two_in_one_group(n: int = 2):
    """T1 and T2 (exec 1, one source group), each a redo flush of 2 at prepare (`n` of them,
    two a source group)."""
    rows = [{"seq": i, "writes": [f"d.t/PRIMARY={i}"], "exec": 1.0, "commit": 2.0,
             "commit_id": 9 + (i - 1) // 2, "flags": ["transactional", "allow_parallel"]}
            for i in range(1, n + 1)]
    return trace_from_dicts(rows).txns


def commits(profile) -> list:
    runs, _ = collect(SCHED, two_in_one_group(), 2, profile)
    return [r.commit for r in sorted(runs, key=lambda r: r.seq)]


def test_disk_holds_the_whole_flush_by_default():
    d = Disk()
    assert (d.flush(0.0, 2.0), d.flush(1.0, 3.0), d.flush(10.0, 1.0)) == (2.0, 5.0, 11.0)
    assert Profile("p", 1, 1, 1, 0, 0, "t").disk_hold is None


def test_a_hold_shorter_than_the_flush_frees_the_device_early():
    d = Disk(0.5)
    assert d.flush(1.0, 2.0) == 3.0 and d.free_at == 1.5
    assert d.flush(1.0, 2.0) == 3.5 and d.free_at == 2.0      # waited for the first's hold
    assert d.flush(5.0, 0.25) == 5.25 and d.free_at == 5.25   # shorter than the hold: all of it


def test_a_share_holds_that_part_of_each_flush_and_takes_the_holds_place():
    d = Disk(100.0, share=0.25)                                # the share wins over the µs
    assert d.flush(1.0, 2.0) == 3.0 and d.free_at == 1.5
    assert d.flush(1.0, 4.0) == 5.5 and d.free_at == 2.5      # waited to 1.5, held 1 of 4
    whole = Disk(share=1.0)
    assert (whole.flush(0.0, 2.0), whole.flush(1.0, 3.0)) == (2.0, 5.0)   # as Disk()
    none = Disk(share=0.0)
    assert (none.flush(0.0, 2.0), none.flush(1.0, 3.0)) == (2.0, 4.0)    # no queue at all


def test_default_and_a_hold_as_long_as_every_flush_keep_todays_schedule():
    """test_appliers.test_shared_disk_flushes_one_at_a_time's example: [8, 11] with one disk."""
    prof = replace(IDEAL, sync=3.0, commit_grouped=False, shared_disk=True)
    assert commits(prof) == [8.0, 11.0]
    assert commits(replace(prof, disk_hold=3.0)) == [8.0, 11.0]


def test_a_short_hold_lets_the_redo_flushes_and_the_sync_overlap():
    """disk_hold 0.5: T1's redo flush 1-3 holds the device 1-1.5; T2's waits for that, 1.5-3.5
    (held to 2). T1 is ready at 3 and leads a group: its sync 3-6 (the device free since 2).
    T2, ready at 3.5 while that sync runs, leads the next group at 6: 6-9. Whole flushes gave
    [8, 11], no shared disk [6, 6]."""
    prof = replace(IDEAL, sync=3.0, commit_grouped=False, shared_disk=True, disk_hold=0.5)
    assert commits(prof) == [6.0, 9.0]
    assert commits(replace(prof, shared_disk=False)) == [6.0, 6.0]    # no shared disk: no hold
    # the same hold as a share of each flush (0.25 of the redo flush's 2): the same schedule
    # (the sync's 3 holds 0.75, longer than 0.5, but nothing queues behind it here)
    assert commits(replace(prof, disk_hold=None, disk_hold_share=0.25)) == [6.0, 9.0]
    assert commits(replace(prof, disk_hold=None, disk_hold_share=1.0)) == [8.0, 11.0]


@pytest.mark.parametrize("term", [{"disk_hold": h} for h in (None, 0.0, 0.5, 1.0, 2.5, 3.0)]
                         + [{"disk_hold_share": s} for s in (0.0, 0.2, 0.5, 0.9, 1.0)])
@pytest.mark.parametrize("cores", [None, 1, 2])
def test_both_engines_agree_on_the_hand_example(term, cores):
    txns = two_in_one_group(6)
    prof = replace(IDEAL, name="held", sync=3.0, sync_cpu=0.5, commit_cpu=0.25,
                   commit_grouped=False, shared_disk=True, cores=cores, **term)
    for sched in (SCHED, "commit_id+mariadb_conservative"):
        assert compare(sched, txns, columns_of(txns), 2, prof) is None


def test_a_profile_file_takes_a_hold_or_none(tmp_path):
    base = {"name": "m", "exec_default": 1, "commit_default": 1, "sync": 1, "dispatch": 0,
            "retry": 0, "provenance": "t"}
    for value, expect in ((40.5, 40.5), (None, None)):
        path = tmp_path / "p.json"
        path.write_text(json.dumps({**base, "disk_hold": value}))
        assert load_profile_file(str(path)).disk_hold == expect
    path.write_text(json.dumps({**base, "disk_hold": -1}))
    with pytest.raises(ProfileError, match="disk_hold"):
        load_profile_file(str(path))
    for value in (0.0, 0.6, 1, None):
        path.write_text(json.dumps({**base, "disk_hold_share": value}))
        assert load_profile_file(str(path)).disk_hold_share == value
    for bad in (1.5, -0.1, "half"):
        path.write_text(json.dumps({**base, "disk_hold_share": bad}))
        with pytest.raises(ProfileError, match="disk_hold_share"):
            load_profile_file(str(path))


def fake_round(alone: tuple, at_once: tuple, gaps=(2.0, 2.0)) -> dict:
    def stats(mean, gap):
        return {"n": 1000, "median_us": mean, "mean_us": mean, "gap_us": gap}
    return {"alone": {k: stats(m, 1.0) for k, m in zip(disk_overlap.KINDS, alone)},
            "at once": {k: stats(m, g) for k, m, g in zip(disk_overlap.KINDS, at_once, gaps)}}


def test_the_probe_reads_no_slowdown_as_no_hold_and_taking_turns_as_the_whole_sync():
    hold, slowed, whole = disk_overlap.hold_from(fake_round((100.0, 200.0), (100.0, 200.0)))
    assert (hold, slowed) == (0.0, 0.0) and whole > 200
    # each waiting for all of the other (taking turns): 100 + 200 each
    hold, slowed, whole = disk_overlap.hold_from(fake_round((100.0, 200.0), (300.0, 300.0)))
    assert hold is None and slowed == 300.0


def test_the_probed_hold_reproduces_the_slowdown_through_the_disk():
    """The hold read from a round makes simcore.Disk slow the two simulated loops by what was
    measured, and a bigger slowdown reads a longer hold."""
    r = fake_round((100.0, 200.0), (160.0, 240.0))
    hold, slowed, whole = disk_overlap.hold_from(r)
    assert slowed == 100.0 and 0 < hold < 300 and whole > slowed
    waits = disk_overlap.simulated_waits((100.0, 200.0), (2.0, 2.0), hold)
    assert sum(waits) == pytest.approx(100.0, abs=3.0)
    more, _, _ = disk_overlap.hold_from(fake_round((100.0, 200.0), (200.0, 260.0)))
    assert more > hold


def test_the_probed_share_reproduces_the_slowdown_and_is_the_same_for_scaled_syncs():
    """The share read from a round makes simcore.Disk slow the two simulated loops by what was
    measured; none and taking turns read 0 and 1; and a round whose every duration is twice
    another's reads the same share (where the µs hold doubles): the share is the part of a
    sync, whatever the sync's length."""
    assert disk_overlap.share_from(fake_round((100.0, 200.0), (100.0, 200.0)))[0] == 0.0
    assert disk_overlap.share_from(fake_round((100.0, 200.0), (300.0, 300.0)))[0] == 1.0
    r = fake_round((100.0, 200.0), (160.0, 240.0))
    share, slowed, whole = disk_overlap.share_from(r)
    assert slowed == 100.0 and 0 < share < 1
    waits = disk_overlap.simulated_waits((100.0, 200.0), (2.0, 2.0), None, share=share)
    assert sum(waits) == pytest.approx(100.0, abs=3.0)
    double = disk_overlap.share_from(fake_round((200.0, 400.0), (320.0, 480.0), (4.0, 4.0)))
    assert double[0] == pytest.approx(share, abs=1e-3)
    hold = disk_overlap.hold_from(r)[0]
    assert disk_overlap.hold_from(fake_round((200.0, 400.0), (320.0, 480.0), (4.0, 4.0)))[0] \
        == pytest.approx(2 * hold, rel=1e-3)
    more, _, _ = disk_overlap.share_from(fake_round((100.0, 200.0), (200.0, 260.0)))
    assert more > share
    rounds = [fake_round((100.0, 200.0), at) for at in
              ((100.0, 200.0), (160.0, 240.0), (300.0, 300.0))]
    assert disk_overlap.share_of(rounds)[0] == share


def test_the_rounds_figure_is_the_median_hold_and_the_whole_sync_counts_longest():
    none, short, long_ = (fake_round((100.0, 200.0), at) for at in
                          ((100.0, 200.0), (160.0, 240.0), (300.0, 300.0)))
    assert disk_overlap.hold_of([none, short, long_])[0] == round(
        disk_overlap.hold_from(short)[0], 1)
    assert disk_overlap.hold_of([short, long_, long_])[0] is None
    assert disk_overlap.hold_of([none, none, short])[0] == 0.0


def test_the_median_round_takes_each_figure_median():
    rounds = [fake_round((100.0, 200.0), (m, 240.0)) for m in (150.0, 170.0, 400.0)]
    assert disk_overlap.median_round(rounds)["at once"]["in place"]["mean_us"] == 170.0
    assert disk_overlap.median_round(rounds)["alone"]["append"]["mean_us"] == 200.0


def test_the_probe_runs_and_names_a_refusal_in_one_line(tmp_path, monkeypatch):
    try:
        r = disk_overlap.probe(str(tmp_path), 0.05)
    except disk_overlap.ProbeError as e:
        assert "refuses O_DIRECT" in str(e)
        pytest.skip("this file system refuses O_DIRECT")
    assert set(r) == set(disk_overlap.SETTINGS)
    assert all(r[s][k]["n"] >= 2 for s in disk_overlap.SETTINGS for k in disk_overlap.KINDS)
    assert list(tmp_path.iterdir()) == []                       # nothing left behind
    from commitsched import calibrate_replica
    monkeypatch.setattr(calibrate_replica, "preallocated_direct", lambda path: None)
    with pytest.raises(disk_overlap.ProbeError, match="refuses O_DIRECT") as e:
        disk_overlap.probe(str(tmp_path), 0.05)
    assert "\n" not in str(e.value)
    with pytest.raises(OSError):
        disk_overlap.probe(str(tmp_path / "missing"), 0.05)


def test_calibrate_reads_the_hold_from_the_windows_rounds_and_says_from_what(tmp_path):
    from commitsched.calibrate_replica import CalibrateError, Window, described, fit
    from test_calibrate_replica import BASE, BASE_FSYNC, machine, recorded_window, workload
    txns = workload()
    window = recorded_window(txns, machine(1.0))
    window.overlap_rounds = [fake_round((100.0, 200.0), (m, 240.0)) for m in (150.0, 160.0,
                                                                              170.0)]
    result = fit(window, txns, BASE, cores=1, fsync=BASE_FSYNC)
    expect, slowed, _ = disk_overlap.share_of(window.overlap_rounds)
    assert slowed == 100.0 and result.profile.disk_hold_share == expect
    assert result.profile.disk_hold is None                  # the share, not the µs
    assert expect == disk_overlap.share_from(window.overlap_rounds[1])[0]
    p = described(result, window, BASE, "m")
    assert p.fitted_from["disk_hold_share"].startswith(f"{expect:.3f}: the overlap probe")
    assert "3 rounds" in p.fitted_from["disk_hold_share"]
    # a window without the probe keeps the whole sync and says nothing of it
    window.overlap_rounds = None
    bare = fit(window, txns, BASE, cores=1, fsync=BASE_FSYNC)
    assert bare.profile.disk_hold_share is None and bare.profile.disk_hold is None
    assert "disk_hold_share" not in described(bare, window, BASE, "m").fitted_from
    # a malformed round is refused in one line
    obj = window.to_json()
    obj["overlap_rounds"] = [{"alone": {}}]
    path = tmp_path / "w.json"
    path.write_text(json.dumps(obj))
    with pytest.raises(CalibrateError, match="overlap_rounds must be"):
        Window.from_file(str(path))


def test_the_calibrate_command_says_the_hold_and_writes_it(tmp_path, capsys):
    from commitsched.cli import main
    from commitsched.trace import write_trace
    from test_calibrate_replica import BASE_FSYNC, machine, recorded_window, workload
    txns = workload()
    window = recorded_window(txns, machine(1.0))
    window.overlap_rounds = [fake_round((100.0, 200.0), (160.0, 240.0))]
    w = tmp_path / "window.json"
    w.write_text(json.dumps(window.to_json()))
    binlog = tmp_path / "binlog.jsonl"
    write_trace(str(binlog), txns)
    out = tmp_path / "mine.json"
    assert main(["calibrate", "--samples", str(w), "--binlog", str(binlog), "--cores", "1",
                 "--fsync-ms", str(BASE_FSYNC), "-o", str(out), "--quiet"]) == 0
    expect = disk_overlap.share_from(window.overlap_rounds[0])[0]
    assert f"disk_hold_share {expect:.3f} of each sync" in capsys.readouterr().out
    assert get_profile(str(out)).disk_hold_share == expect


def test_several_windows_keep_the_median_hold_and_say_so():
    from commitsched.calibrate_replica import described_many, fit_many
    from test_calibrate_replica import BASE, BASE_FSYNC, machine, recorded_window, workload
    txns = workload()
    windows = []
    for i, at_once in enumerate(((150.0, 230.0), (160.0, 240.0), (300.0, 300.0))):
        w = recorded_window(txns, machine(1.0))
        w.started_utc = f"2026-11-26T0{i}:00:00Z"
        w.overlap_rounds = [fake_round((100.0, 200.0), at_once)]
        windows.append(w)
    mf = fit_many(windows, [txns] * 3, BASE, labels=["a", "b", "c"], cores=1, fsync=BASE_FSYNC)
    middle = disk_overlap.share_from(windows[1].overlap_rounds[0])[0]
    assert mf.profile.disk_hold_share == middle
    assert mf.slowest["disk_hold_share"] == 1.0              # the whole sync: the slowest end
    assert mf.fastest["disk_hold_share"] == disk_overlap.share_from(
        windows[0].overlap_rounds[0])[0]
    p = described_many(mf, BASE, "m")
    assert p.fitted_from["disk_hold_share"].startswith(f"{middle:.3f}: the median")
    from commitsched.spread import spread_ends
    assert spread_ends(p)["slowest"].disk_hold_share == 1.0
    # a window without the probe counts as the whole sync; none probed: no share at all
    windows[2].overlap_rounds = None
    mixed = fit_many(windows, [txns] * 3, BASE, labels=["a", "b", "c"], cores=1,
                     fsync=BASE_FSYNC)
    assert mixed.slowest["disk_hold_share"] == 1.0
    for w in windows:
        w.overlap_rounds = None
    bare = fit_many(windows, [txns] * 3, BASE, labels=["a", "b", "c"], cores=1,
                    fsync=BASE_FSYNC)
    assert bare.profile.disk_hold_share is None and bare.slowest["disk_hold_share"] is None
