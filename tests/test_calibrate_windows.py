"""`calibrate` from several windows (issue 27): each window fitted on its own, the profile each
term's median, the spread's ends; `lag` gives each answer's range from replaying at those ends
and says when the keeps-up verdict flips inside it. Bad sets of windows are refused in one line."""
import json
from dataclasses import replace

import pytest

from commitsched.calibrate_replica import (CalibrateError, Window, described_many, fit_many,
                                           read_windows, scaled_profile, windows_json)
from commitsched.cli import main
from commitsched.lag import keeps_up_words, spread_ends, with_ranges
from commitsched.profiles import get_profile
from commitsched.trace import write_trace
from test_calibrate_replica import BASE, BASE_FSYNC, recorded_window, with_cpu, workload

SCALES = (1.0, 1.6, 2.2)          # three windows of one replica whose host drifts


def truth(cpu):
    return scaled_profile(BASE, cpu, 1.0, cores=1, durability="durable",
                          log_replica_updates=False)


def windows_of(txns, scales=SCALES):
    out = []
    for i, cpu in enumerate(scales):
        w = with_cpu(recorded_window(txns, truth(cpu)), txns, truth(cpu))
        w.started_utc = f"2026-11-26T0{i}:00:00Z"
        w.fsync_ms = BASE_FSYNC
        out.append(w)
    return out


def test_each_window_is_fitted_and_the_profile_keeps_the_median_and_the_ends():
    txns = workload()
    ws = windows_of(txns)
    mf = fit_many(ws, [txns] * 3, BASE, labels=["a", "b", "c"], cores=1)
    assert [f.cpu_scale for f in mf.fits] == pytest.approx(SCALES, rel=0.02)
    assert mf.profile.exec_default == pytest.approx(1.6 * BASE.exec_default, rel=0.03)
    assert mf.slowest["exec_default"] == pytest.approx(2.2 * BASE.exec_default, rel=0.03)
    assert mf.fastest["exec_default"] == pytest.approx(1.0 * BASE.exec_default, rel=0.03)
    p = described_many(mf, BASE, "mine")
    assert [r["window"] for r in p.fitted_from["windows"]] == ["a", "b", "c"]
    assert p.fitted_from["windows"][2]["cpu_scale"] == pytest.approx(2.2, rel=0.02)
    assert set(p.fitted_from["spread"]) == {"durability", "slowest", "fastest"}
    assert "median" in p.provenance and "3 windows" in p.provenance
    ends = spread_ends(p)
    assert ends["slowest"].exec_default > p.exec_default > ends["fastest"].exec_default
    # the ends follow the prediction's durability as the profile does
    relaxed = spread_ends(p.with_durability("relaxed"))
    assert relaxed["slowest"].durability == "relaxed"
    assert relaxed["slowest"].sync == p.with_durability("relaxed").sync


def test_one_window_keeps_no_spread():
    txns = workload()
    w = windows_of(txns, (1.5,))
    p = described_many(fit_many(w, [txns], BASE, labels=["a"], cores=1), BASE, "one")
    assert "spread" not in p.fitted_from and len(p.fitted_from["windows"]) == 1
    assert spread_ends(p) is None


def test_windows_of_other_replicas_or_settings_are_refused():
    txns = workload()
    a, b = windows_of(txns, (1.0, 1.5))
    with pytest.raises(CalibrateError, match="b: a window of elsewhere.*one replica"):
        fit_many([a, replace(b, replica="elsewhere")], [txns] * 2, BASE, labels=["a", "b"])
    other = replace(b, settings={**b.settings, "durability": "relaxed"})
    with pytest.raises(CalibrateError, match="b: recorded at durability 'relaxed'"):
        fit_many([a, other], [txns] * 2, BASE, labels=["a", "b"])
    with pytest.raises(CalibrateError, match="b: the same window as a"):
        fit_many([a, a], [txns] * 2, BASE, labels=["a", "b"])


def test_a_file_of_several_windows_reads_back(tmp_path):
    ws = windows_of(workload(), (1.0, 1.5))
    ws[0].log_write_ms_rounds = [0.07, 0.08, 0.25]
    path = tmp_path / "ws.json"
    path.write_text(json.dumps(windows_json(ws)))
    back = read_windows(str(path))
    assert [w.started_utc for w in back] == [w.started_utc for w in ws]
    assert back[0].log_write_ms_rounds == [0.07, 0.08, 0.25]
    bad = windows_json(ws)
    bad["windows"][1]["log_write_ms_rounds"] = [0.1, -1]
    path.write_text(json.dumps(bad))
    with pytest.raises(CalibrateError, match="log_write_ms_rounds must be a list"):
        read_windows(str(path))
    with pytest.raises(CalibrateError, match="2 windows, where one was expected"):
        Window.from_file(_write(tmp_path / "two.json", windows_json(ws)))


def _write(path, obj):
    path.write_text(json.dumps(obj))
    return str(path)


def test_keeps_up_words_say_when_the_verdict_flips():
    def r(mid, slow, fast):
        return {"keeps_up": mid, "keeps_up_slowest": slow, "keeps_up_fastest": fast}
    assert keeps_up_words(r(True, False, True)) == \
        "keeps up (but not at the slowest calibrated pace)"
    assert keeps_up_words(r(False, False, True)) == \
        "does not keep up (but would at the fastest calibrated pace)"
    assert keeps_up_words(r(True, True, True)) == "keeps up (at every calibrated pace)"
    assert keeps_up_words(r(False, False, False)) == "does not keep up (at any calibrated pace)"
    assert keeps_up_words({"keeps_up": True}) == "keeps up"


def test_ranges_span_the_three_replays():
    res = [{"scheduler": "serial", "workers": 1, "keeps_up": True, "headroom": 1.1,
            "max_lag_s": 0.5, "drain_s": 8.0}]
    slow = [{"scheduler": "serial", "workers": 1, "keeps_up": False, "headroom": 0.9,
             "max_lag_s": 3.0, "drain_s": None}]
    fast = [{"scheduler": "serial", "workers": 1, "keeps_up": True, "headroom": 1.4,
             "max_lag_s": 0.2, "drain_s": 5.0}]
    with_ranges(res, {"slowest": slow, "fastest": fast})
    r = res[0]
    assert r["headroom_range"] == [0.9, 1.4] and r["max_lag_s_range"] == [0.2, 3.0]
    assert r["drain_s_range"] == [5.0, None]          # at the slowest pace it never drains
    assert r["keeps_up_words"] == "keeps up (but not at the slowest calibrated pace)"


def test_calibrate_and_lag_from_several_windows(tmp_path, capsys):
    txns = workload()
    files = []
    for i, w in enumerate(windows_of(txns)):
        files.append(_write(tmp_path / f"w{i}.json", w.to_json()))
    binlog = tmp_path / "binlog.jsonl"
    write_trace(str(binlog), txns)
    out = tmp_path / "mine.json"
    assert main(["calibrate", "--samples", *files, "--binlog", str(binlog), "--cores", "1",
                 "-o", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "from 3 windows" in text and "slowest" in text
    assert "one window:" not in text
    args = ["lag", str(binlog), "--profile", str(out), "--scheduler", "serial",
            "--workers", "1", "--backlog", "2s", "--quiet", "--jobs", "1"]
    assert main(args + ["--json"]) == 0
    first = capsys.readouterr().out
    r = json.loads(first)[0]
    lo, hi = r["max_lag_s_range"]
    assert lo <= r["max_lag_s"] <= hi and lo < hi
    dlo, dhi = r["drain_s_range"]
    assert dlo < r["drain_s"] < dhi
    assert r["keeps_up_words"].startswith("keeps up" if r["keeps_up"] else "does not")
    assert main(args + ["--json"]) == 0
    assert capsys.readouterr().out == first              # deterministic
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "ranges: the profile was calibrated from 3 windows" in text
    assert "serial W=1: keeps up" in text and "drain" in text


def test_several_window_errors_are_one_line(tmp_path, capsys):
    txns = workload()
    a, b = windows_of(txns, (1.0, 1.5))
    fa = _write(tmp_path / "a.json", a.to_json())
    fb = _write(tmp_path / "b.json", replace(b, settings={**b.settings, "workers": 4,
                                                             "scheduler": "commit_id"}).to_json())
    binlog = tmp_path / "binlog.jsonl"
    write_trace(str(binlog), txns)
    out = tmp_path / "p.json"
    assert main(["calibrate", "--samples", fa, fb, "--binlog", str(binlog), "-o", str(out),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "b.json: recorded at scheduler" in err
    assert not out.exists()
    assert main(["calibrate", "--replica", "mysql://x@127.0.0.1:1", "--every", "10min",
                 "--record", str(tmp_path / "r.json")]) == 2
    assert "--every spaces the windows of --repeat" in capsys.readouterr().err


def test_a_profile_with_a_malformed_spread_is_refused_in_one_line(tmp_path, capsys):
    txns = workload()
    p = described_many(fit_many(windows_of(txns, (1.0, 2.0)), [txns] * 2, BASE,
                                labels=["a", "b"], cores=1), BASE, "bad")
    obj = p.to_json()
    obj["fitted_from"]["spread"]["slowest"]["exec_default"] = -3
    prof = _write(tmp_path / "bad.json", {"profiles": [obj]})
    binlog = tmp_path / "binlog.jsonl"
    write_trace(str(binlog), txns)
    assert main(["lag", str(binlog), "--profile", prof, "--scheduler", "serial",
                 "--workers", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'slowest' end is malformed" in err
    assert get_profile(prof).name == "bad"


def test_repeat_records_several_windows_in_one_file(tmp_path, monkeypatch, capsys):
    import commitsched.calibrate_replica as cr
    made = iter(windows_of(workload(), (1.0, 1.5, 2.0)))
    calls = []

    def fake_record(address, **kw):
        calls.append(kw)
        return next(made)
    monkeypatch.setattr(cr, "record", fake_record)
    import commitsched.calibrate_cli as cc
    monkeypatch.setattr(cc, "_check_probe_privileges", lambda address: None)
    path = tmp_path / "ws.json"
    assert main(["calibrate", "--replica", "mysql://dba@127.0.0.1:1", "--repeat", "3",
                 "--window", "10s", "--probe", "2s", "--probe-at", "1s", "--every", "0",
                 "--record", str(path), "--quiet"]) == 0
    assert "recorded 3 windows" in capsys.readouterr().err
    assert len(calls) == 3 and all(c["probe"] == 2.0 for c in calls)
    assert [w.started_utc for w in read_windows(str(path))] == [
        "2026-11-26T00:00:00Z", "2026-11-26T01:00:00Z", "2026-11-26T02:00:00Z"]


def test_one_windows_summary_shows_its_probe_rounds(tmp_path, capsys):
    txns = workload()
    w = windows_of(txns, (1.5,))[0]
    w.fsync_ms_rounds = [0.86, 0.13, 0.43, 0.13, 0.14]
    binlog = tmp_path / "binlog.jsonl"
    write_trace(str(binlog), txns)
    assert main(["calibrate", "--samples", _write(tmp_path / "w.json", w.to_json()),
                 "--binlog", str(binlog), "--cores", "1", "-o", str(tmp_path / "p.json"),
                 "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "the fsync probe: 5 rounds, 0.130 to 0.860 ms, median 0.140 ms" in text
    assert "one window: the profile is this window's minute; --repeat 3" in text
