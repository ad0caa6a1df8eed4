"""device16_w3 (traces/record/new_workloads16.py, traces/calibration/device16_w3/): the report's
arithmetic on a tiny synthetic run (speedups against the same round's serial apply, replica16's
constant and same-configuration baselines from its own CSVs, the half-the-constant rule), the
doc section's place, the rig's file helpers, and bad input as one line."""
from __future__ import annotations

import csv
import json
import os
import shutil
import statistics
import tarfile

import pytest

from record_scripts import import_record_scripts

w3, d16, rig = import_record_scripts("new_workloads16", "device16", "new_workloads16_rig")

FIELDS = ["workload", "durability", "mode", "threads", "round", "seconds", "tps", "retried_txns",
          "fsync_ms", "cpu_busy_cores", "cpu_iowait_pct", "cpu_steal_pct", "server_cpu_s", "utc"]
# (workload, mode, threads) -> seconds in rounds 1 and 2, per durability
TIMES = {"durable": {("a", "serial", 0): (2.0, 2.2), ("a", "optimistic", 4): (1.0, 1.0),
                     ("b", "serial", 0): (1.0, 1.2), ("b", "conservative", 2): (0.8, 0.6)},
         "relaxed": {("a", "serial", 0): (1.0, 1.0), ("a", "optimistic", 4): (0.8, 1.0),
                     ("b", "serial", 0): (0.6, 0.6), ("b", "conservative", 2): (0.5, 0.6)}}


def _write_run(folder) -> None:
    for d, name in (("durable", "timings.csv"), ("relaxed", "timings_relaxed.csv")):
        with open(os.path.join(folder, name), "w", newline="") as f:
            w = csv.DictWriter(f, FIELDS)
            w.writeheader()
            for (wl, mode, n), secs in TIMES[d].items():
                for rnd, s in enumerate(secs, 1):
                    w.writerow({"workload": wl, "durability": d, "mode": mode, "threads": n,
                                "round": rnd, "seconds": s, "tps": 1, "retried_txns": 0,
                                "fsync_ms": 0.07, "cpu_busy_cores": 1.0, "cpu_iowait_pct": 1.0,
                                "cpu_steal_pct": 0.0, "server_cpu_s": 0.5, "utc": "x"})
    for wl in ("a", "b"):
        os.makedirs(os.path.join(folder, wl))
        with open(os.path.join(folder, wl, "meta.json"), "w") as f:
            json.dump({"sysbench_test": f"oltp_{wl}", "threads": 8,
                       "transaction_count_gtid_events": 100,
                       "status_delta": {"Binlog_group_commits": 10}}, f)


def _pred(model: float) -> dict:
    """Stored predictions: the model says `model` for every configuration."""
    configs = {d16._key(d, wl, m, n): {"model": model, "calibrated": None}
               for d in TIMES for (wl, m, n) in TIMES[d] if m != "serial"}
    return {"configs": configs, "calibrated_profile": None,
            "calibrated_terms": {"error": "synthetic"},
            "trace": {wl: {"transactions": 100, "mean_events": 5.0, "mean_rows": 1.0}
                      for wl in ("a", "b")}}


@pytest.fixture
def run(tmp_path):
    _write_run(tmp_path)
    return str(tmp_path)


def _r16_medians(durability: str) -> dict[tuple, float]:
    """replica16's median speedup per configuration, from its CSV by hand."""
    name = {"durable": "timings.csv", "relaxed": "timings_relaxed.csv"}[durability]
    with open(os.path.join(w3.r16.FOLDER, name), newline="") as f:
        rows = list(csv.DictReader(f))
    serial = {(r["workload"], r["round"]): float(r["seconds"]) for r in rows
              if r["mode"] == "serial"}
    by: dict[tuple, list] = {}
    for r in rows:
        if r["mode"] != "serial":
            by.setdefault((r["workload"], r["mode"], int(r["threads"])), []).append(
                serial[(r["workload"], r["round"])] / float(r["seconds"]))
    return {k: statistics.median(v) for k, v in by.items()}


def test_speedups_baselines_and_rule_from_the_files(run):
    t = w3.tables(_pred(2.0), run)
    rows = {(r["durability"], r["workload"], r["mode"], r["threads"]): r for r in t["rows"]}
    assert len(rows) == 4
    r = rows[("durable", "a", "optimistic", 4)]          # rounds: 2.0/1.0, 2.2/1.0
    assert (r["median"], r["min"], r["max"], r["rounds"]) == (pytest.approx(2.1), 2.0, 2.2, 2)
    r = rows[("relaxed", "b", "conservative", 2)]        # 0.6/0.5, 0.6/0.6
    assert r["median"] == pytest.approx(1.1)
    for d in ("durable", "relaxed"):
        med = _r16_medians(d)
        assert t["constant"][d] == pytest.approx(statistics.median(med.values()))
        for key, row in rows.items():
            if key[0] == d:
                same = [med[(w, key[2], key[3])] for w in ("oltp_rw_64", "update_index_48")]
                assert row["replica16_same"] == pytest.approx(sum(same) / 2)
    errs = sorted(abs(2.0 / r["median"] - 1) for r in t["rows"])
    assert t["summary"]["model"]["all"]["median_abs_error"] == pytest.approx(
        statistics.median(errs))
    c = t["summary"]["constant"]["all"]["median_abs_error"]
    assert t["rule"]["all"]["model"]["met"] == (statistics.median(errs) <= c / 2)


def test_the_rule_can_go_either_way(run):
    meas = {(r["durability"], r["workload"], r["mode"]): r["median"]
            for r in w3.tables(_pred(1.0), run)["rows"]}
    exact = {"configs": {d16._key(d, w, m, n): {"model": meas[(d, w, m)], "calibrated": None}
                         for d in TIMES for (w, m, n) in TIMES[d] if m != "serial"}}
    good = w3.tables({**_pred(1.0), **exact}, run)
    assert good["rule"]["all"]["model"]["met"] and good["rule"]["all"]["model"]["error"] == 0
    bad = w3.tables(_pred(50.0), run)
    assert not bad["rule"]["all"]["model"]["met"]


def test_markdown_is_deterministic_and_names_the_verdict(run):
    t = w3.tables(_pred(2.0), run)
    md = w3.markdown(t, _pred(2.0), run)
    assert md == w3.markdown(w3.tables(_pred(2.0), run), _pred(2.0), run)
    assert "**Verdict (the registered rule): " in md
    assert "The secondary model is absent: synthetic." in md


def test_the_doc_section_follows_device16s_and_is_replaced(tmp_path):
    doc = tmp_path / "calibration.md"
    doc.write_text(f"# x\n\n{d16.DOC_TITLE}\n\n{d16.BEGIN}\nbody\n{d16.END}\n\n## later\n")
    w3.update_doc(str(doc), "# t\n\nfirst\n")
    w3.update_doc(str(doc), "# t\n\nsecond\n")
    text = doc.read_text()
    assert text.count(w3.DOC_TITLE) == 1 and "first" not in text and "second" in text
    assert text.index(d16.END) < text.index(w3.DOC_TITLE) < text.index("## later")


def test_rig_splits_the_timings_and_reads_sysbench(tmp_path, run):
    both = tmp_path / "all.csv"
    with open(os.path.join(run, "timings.csv")) as a, \
            open(os.path.join(run, "timings_relaxed.csv")) as b:
        both.write_text(a.read() + "".join(b.readlines()[1:]))
    out = tmp_path / "res"
    out.mkdir()
    rig.split_timings(both, out)
    for name in ("timings.csv", "timings_relaxed.csv"):
        assert (out / name).read_text() == open(os.path.join(run, name)).read()
    text = ("SQL statistics:\n    transactions:                        15998  (3540.11 per sec.)\n"
            "    ignored errors:                      2      (0.44 per sec.)\n"
            "    total time:                          4.5180s\n")
    assert rig.sysbench_figure(text, "transactions") == 15998
    assert rig.sysbench_figure(text, "ignored errors") == 2
    assert rig.sysbench_figure(text, "total time") == pytest.approx(4.518)


def test_bad_input_is_one_line(tmp_path, run, capsys):
    assert w3.main(["--folder", str(tmp_path / "none"), "tables"]) == 1
    assert w3.main(["--folder", str(tmp_path), "unpack", str(tmp_path / "none")]) == 1
    os.remove(os.path.join(run, "timings_relaxed.csv"))
    with pytest.raises(w3.DataError, match="timings_relaxed.csv: missing"):
        w3.tables(_pred(2.0), run)
    bad = tmp_path / "src"
    bad.mkdir()
    with tarfile.open(bad / "results.tar.gz", "w:gz") as t:
        info = tarfile.TarInfo("../escape")
        t.addfile(info)
    assert w3.main(["--folder", str(tmp_path / "f"), "unpack", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith("new_workloads16: ") for e in err)
    assert "unexpected member" in err[-1]


def test_registration_files():
    with open(os.path.join(w3.FOLDER, "preregistered.json")) as f:
        reg = json.load(f)
    assert {"model", "baselines", "rule", "metrics", "registered_utc"} <= set(reg)
    prof = w3.registered_profile()
    with open(os.path.join(w3.FOLDER, "registered_profile.json")) as f:
        assert json.load(f)["profile"]["name"] == prof.name == "replica16"
    assert shutil.which("bash")  # the device script is bash
    with open(os.path.join(w3.FOLDER, "sbtest_schema.sql")) as f:
        assert f.read().count("CREATE TABLE `sbtest`.`sbtest") == 8


def test_stored_report_is_recomputed_from_the_files():
    """Once the device run is in: report.json's tables follow from its CSVs and predictions."""
    path = os.path.join(w3.FOLDER, "report.json")
    if not os.path.exists(path):
        pytest.skip("no device run yet (traces/calibration/device16_w3/report.json)")
    with open(path) as f:
        stored = json.load(f)
    t = w3.d16._jsonable(w3.tables(stored["predictions"]))
    assert json.loads(json.dumps(t)) == stored["tables"]
    with open(os.path.join(w3.FOLDER, "report.md")) as f:
        assert f.read() == w3.markdown(w3.tables(stored["predictions"]), stored["predictions"])


# ---------------------------------------------------------------- the second registration

rt, = import_record_scripts("new_workloads16_runtime")
# relaxed at run time and from start-up, two rounds; rounds' serial first
RT_TIMES = {"relaxed_runtime": {("a", "serial", 0): (3.0, 3.3), ("a", "optimistic", 4): (1.5, 1.1),
                                ("b", "serial", 0): (2.0, 2.0)},
            "relaxed": {("a", "serial", 0): (1.0, 1.0), ("a", "optimistic", 4): (0.8, 1.0)}}


def _write_rt(folder, direct="direct wall us/op 31.5\n") -> None:
    os.makedirs(folder, exist_ok=True)
    for s, times in RT_TIMES.items():
        with open(os.path.join(folder, d16.FILES[s]), "w", newline="") as f:
            w = csv.DictWriter(f, FIELDS)
            w.writeheader()
            for (wl, mode, n), secs in times.items():
                for rnd, sec in enumerate(secs, 1):
                    w.writerow({"workload": wl, "durability": s, "mode": mode, "threads": n,
                                "round": rnd, "seconds": sec, "tps": 1, "retried_txns": 0,
                                "fsync_ms": 0.07, "cpu_busy_cores": 1.0,
                                "cpu_iowait_pct": 1.0, "cpu_steal_pct": 0.0,
                                "server_cpu_s": 0.5, "utc": "x"})
    with open(os.path.join(folder, "machine.txt"), "w") as f:
        f.write("fdatasync 512 B append median ms 0.080\n" + direct)


def test_runtime_tables_baselines_and_rule(tmp_path, run):
    folder = str(tmp_path / "runtime")
    _write_rt(folder)
    assert rt.log_write_us(folder) == 31.5
    pred = {"configs": {d16._key("relaxed_runtime", "a", "optimistic", 4): {
        "model": 2.5, "model_without_log_write": 1.2}},
        "serial_ratio": {"a": {"model": 2.0}, "b": {"model": 1.5}}}
    t = rt.tables(pred, folder, run)
    (r,) = t["rows"]                              # b has no parallel run: not scored
    assert (r["median"], r["min"], r["max"], r["rounds"]) == (
        pytest.approx(2.5), 2.0, pytest.approx(3.0), 2)
    assert r["relaxed_from_startup"] == pytest.approx(1.125)   # 1/0.8, 1/1.0
    assert r["durable"] == pytest.approx(2.1)                  # the first run's (`run`)
    assert r["constant"] == pytest.approx(statistics.median(_r16_medians("relaxed").values()))
    assert t["rule"]["model"]["error"] == 0 and t["rule"]["model"]["met"]
    assert not t["rule"]["relaxed_from_startup"]["met"]
    (a,) = t["serial_ratio"]                     # b: no serial from start-up
    assert a["measured"] == pytest.approx(3.15) and a["error"] == pytest.approx(2.0 / 3.15 - 1)
    md = rt.markdown(t, {**pred, "log_write_us": 31.5})
    assert "**Verdict (the registered rule): met**" in md and "31.5 µs" in md


def test_runtime_doc_part_after_device16_w3s_tables_and_kept(tmp_path):
    doc = tmp_path / "calibration.md"
    doc.write_text(f"# x\n\n{d16.DOC_TITLE}\n\n{d16.BEGIN}\nb\n{d16.END}\n\n## later\n")
    w3.update_doc(str(doc), "# t\n\nfirst\n")
    rt.update_doc(str(doc), "# r\n\nrt one\n")
    rt.update_doc(str(doc), "# r\n\nrt two\n")
    w3.update_doc(str(doc), "# t\n\nsecond\n")      # the first run's report keeps this part
    text = doc.read_text()
    assert text.count(rt.HEADING) == 1 and "rt one" not in text and "rt two" in text
    assert text.index(w3.END) < text.index(rt.BEGIN) < text.index("## later")
    assert "second" in text and "first" not in text


def test_runtime_bad_input_is_one_line(tmp_path, capsys):
    folder = str(tmp_path / "runtime")
    _write_rt(folder, direct="")
    with pytest.raises(rt.DataError, match="no 'direct wall us/op' line"):
        rt.log_write_us(folder)
    assert rt.main(["--folder", folder, "tables"]) == 1
    assert rt.main(["--folder", folder, "unpack", str(tmp_path / "none")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(e.startswith("new_workloads16_runtime: ") for e in err)


def test_rig_splits_relaxed_runtime_and_refuses_unknown_settings(tmp_path, capsys):
    both = tmp_path / "all.csv"
    with open(both, "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for d in ("relaxed_runtime", "relaxed", "relaxed_runtime"):
            w.writerow({k: 1 for k in FIELDS} | {"durability": d})
    rig.split_timings(both, tmp_path, ("relaxed_runtime", "relaxed"))
    assert len((tmp_path / "timings_relaxed_runtime.csv").read_text().splitlines()) == 3
    assert len((tmp_path / "timings_relaxed.csv").read_text().splitlines()) == 2
    assert not (tmp_path / "timings.csv").exists()
    for bad, says in ((["--durabilities", "relaxed,fast"], "fast: known durable"),
                      (["--run-margin-s", "100"], "--run-margin-s <= --block-margin-s")):
        with pytest.raises(SystemExit) as e:
            rig.main(["--bundle", "b", "--work", str(tmp_path), "--out", str(tmp_path)] + bad)
        assert e.value.code == 2
        assert says in capsys.readouterr().err.strip().splitlines()[-1]


def test_second_registration_names_its_model_baselines_and_rule():
    with open(os.path.join(w3.FOLDER, "preregistered_runtime.json")) as f:
        reg = json.load(f)
    assert {"registered_utc", "model", "baselines", "rule", "metrics", "procedure"} <= set(reg)
    assert set(reg["baselines"]) == {"constant", "relaxed_from_startup", "durable"}
    assert "--durabilities relaxed_runtime,relaxed" in reg["procedure"]


def test_stored_runtime_report_is_recomputed_from_the_files():
    path = os.path.join(rt.FOLDER, "report.json")
    if not os.path.exists(path):
        pytest.skip("no second run yet (traces/calibration/device16_w3/runtime/report.json)")
    with open(path) as f:
        stored = json.load(f)
    t = rt.tables(stored["predictions"])
    assert json.loads(json.dumps(w3.d16._jsonable(t))) == stored["tables"]
    with open(os.path.join(rt.FOLDER, "report.md")) as f:
        assert f.read() == rt.markdown(t, stored["predictions"])


# ---------------------------------------------------------------- the reading (not a rule)

rd, = import_record_scripts("new_workloads16_reading")


def test_all_three_doc_parts_keep_their_places(tmp_path):
    doc = tmp_path / "calibration.md"
    doc.write_text(f"# x\n\n{d16.DOC_TITLE}\n\n{d16.BEGIN}\nb\n{d16.END}\n\n## later\n")
    w3.update_doc(str(doc), "# t\n\nfirst\n")
    rd.update_doc(str(doc), "reading one\n")
    rt.update_doc(str(doc), "# r\n\nrt one\n")
    rd.update_doc(str(doc), "reading two\n")
    w3.update_doc(str(doc), "# t\n\nsecond\n")
    text = doc.read_text()
    assert text.count(rd.HEADING) == 1 and "reading one" not in text and "reading two" in text
    assert text.count(rt.HEADING) == 1 and "rt one" in text
    assert text.index(w3.END) < text.index(rt.BEGIN) < text.index(rd.BEGIN) < text.index("## la")


def test_stored_reading_is_the_scripts_text():
    """reading.md's figures are the script's (simulated, a few seconds), not typed."""
    path = os.path.join(w3.FOLDER, "reading.md")
    if not os.path.exists(path):
        pytest.skip("no reading yet (make device16-w3-reading)")
    r = rd.reading()
    assert r["a"]["ablation"]["shared_lock_thread"][16] > r["a"]["ablation"]["none"][16]
    with open(path) as f:
        assert f.read().endswith(rd.text(r))
