"""The what-ifs on a sample of a long trace (`report --whatif-sample N`): above N transactions
the durability and commit wait what-ifs simulate the middle N, and say so; at or below N the
report is what it was."""
import json

import pytest

from commitsched.cli import TraceSource, main
from commitsched.metrics import RunMetrics
from commitsched.profiles import get_profile
from commitsched.report.analysis import build_report, tracker_shape
from commitsched.report.whatif import REGROUPED, SAMPLE_DEFAULT, WAIT_COUNTS, sample_window
from commitsched.schedulers import run_scheduler

RW8 = "traces/recorded/oltp_read_write_t8.jsonl.gz"       # MariaDB: both what-ifs
MYSQL = "traces/examples/oltp_rw_8clients.jsonl.gz"         # MySQL: durability only
WS = [1, 2, 4]


def _makespan(name, txns, w, profile, **opts):
    m = RunMetrics(w)
    blocked = run_scheduler(name, txns, w, profile, m, **opts)
    return m, blocked


class _Trace:
    """A list of transactions as a report's trace."""

    def __init__(self, txns, source):
        self._txns, self.count, self.source = txns, len(txns), source

    def txns(self):
        return iter(self._txns)


def test_the_window_is_the_middle_and_deterministic():
    trace = TraceSource(RW8)
    assert sample_window(trace, 0) is None and sample_window(trace, None) is None
    assert sample_window(trace, trace.count) is None            # at the threshold: whole
    w = sample_window(trace, trace.count - 1)
    assert (w.start, w.count) == (0, trace.count - 1)           # one left out, after
    w = sample_window(trace, 601)
    assert (w.start, w.count) == ((3000 - 601) // 2, 601)
    seqs = [t.seq for t in w.txns()]
    assert seqs == [t.seq for t in list(trace.txns())[w.start:w.start + 601]]
    assert (w.first_seq, w.last_seq) == (seqs[0], seqs[-1])
    assert [t.seq for t in w.txns()] == seqs                   # every run gets the same slice


@pytest.mark.parametrize("path", [RW8, MYSQL])
def test_sampled_whatifs_run_exactly_the_window_they_state(path):
    """Every what-if figure of a sampled report is a run on the stated transactions: made
    afresh on that slice (as its own trace), each gives the same numbers."""
    trace = TraceSource(path)
    profile, relaxed = get_profile("replica16"), get_profile("replica16").with_durability(
        "relaxed")
    d = build_report(trace, path="t", profile=profile, workers=WS, whatif_sample=700).data
    s = d["whatif"]["sample"]
    assert (s["rule"], s["transactions"], s["of"]) == ("middle", 700, trace.count)
    whole = list(trace.txns())
    part = whole[s["first_position"] - 1:s["last_position"]]
    assert len(part) == 700 and (part[0].seq, part[-1].seq) == (s["first_seq"], s["last_seq"])
    assert s["first_position"] - 1 == (trace.count - 700) // 2
    # the sweep is the whole trace's
    assert d["trace"]["transactions"] == trace.count
    assert all(r["transactions"] == trace.count for r in d["results"] if "error" not in r)
    serial = {p.name + f" ({p.durability})": round(_makespan("serial", part, 1, p)[0].makespan, 6)
              for p in (profile, relaxed)}
    rows = d["whatif"]["durability"]
    assert {r["profile"] for r in rows} == set(serial)
    for row in rows:
        prof = profile if row["profile"] == "replica16 (durable)" else relaxed
        m, _ = _makespan(row["scheduler"], part, row["workers"], prof)
        assert row["makespan"] == round(m.makespan, 6)
        assert row["serial_makespan"] == serial[row["profile"]]
        assert row["serial_makespan"] != d["serial_makespan"]        # not the sweep's baseline
    if not d["trace"]["mariadb"]:
        assert "commit_wait" not in d["whatif"]
        return
    rows = {(r["commit_wait_count"], r["workers"]): r for r in d["whatif"]["commit_wait"]["rows"]}
    assert set(rows) == {(c, w) for c in WAIT_COUNTS for w in WS}
    for (count, w), row in rows.items():
        m, blocked = _makespan(REGROUPED, part, w, profile,
                               tracker_options={"commit_wait_count": count})
        r = m.result(scheduler=REGROUPED, profile=profile.name, blocked=blocked,
                     serial_makespan=serial["replica16 (durable)"], bound=None)
        assert (row["speedup"], row["throughput"]) == (r["speedup"], r["throughput"])
        # the group sizes are the window's
        assert row["mean_group_size"] == tracker_shape(
            _Trace(part, trace.source), "slave_group_commit",
            {"commit_wait_count": count})["mean_group_size"]
    # the advice compares with the conservative applier on the window, and names it
    cons = d["whatif"]["durability"]
    cons = next(r for r in cons if r["scheduler"] == "commit_id+mariadb_conservative"
                and r["workers"] == WS[-1] and r["profile"] == "replica16 (durable)")
    advice = d["whatif"]["delay_advice"][-1]
    assert advice.startswith(f"On the sample (the middle 700 of {trace.count:,} transactions, "
                             f"seq {s['first_seq']}..{s['last_seq']}), MariaDB conservative: "
                             f"the source's own groups give {cons['speedup']:.2f}x at {WS[-1]} "
                             f"workers;")


def test_a_trace_at_or_below_the_threshold_is_untouched():
    """No sample at or below N: the same report as with the what-ifs on the whole trace."""
    trace = TraceSource(RW8)
    profile = get_profile("replica16")
    whole = build_report(trace, path="t", profile=profile, workers=WS, whatif_sample=0).data
    assert trace.count < SAMPLE_DEFAULT
    d = build_report(trace, path="t", profile=profile, workers=WS,
                     whatif_sample=trace.count).data
    assert d == whole
    assert "sample" not in whole["whatif"]


def test_cli_sample_is_stated_in_the_page_and_the_json(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["report", MYSQL, "-o", str(out), "--workers", "1,2", "--whatif-sample", "500",
                 "--quiet", "--jobs", "1"]) == 0
    data = json.loads((out / "report.json").read_text())
    s = data["whatif"]["sample"]
    assert (s["transactions"], s["of"]) == (500, 2000)
    html = (out / "index.html").read_text()
    assert f"the middle 500 of its 2,000 transactions (positions 751-1,250, seq " \
           f"{s['first_seq']}..{s['last_seq']})" in html
    assert "The scaling sweep, the recommendation, the diagnosis and the tracking what-if " \
           "used the whole trace" in html
    assert html.count("On a sample: the middle 500 of the trace's 2,000 transactions") == 1
    # the default on a small trace: no sample, the bytes of --whatif-sample 0
    pages = {}
    for extra in ([], ["--whatif-sample", "0"], ["--whatif-sample", "2000"]):
        o = tmp_path / f"d{len(pages)}"
        assert main(["report", MYSQL, "-o", str(o), "--workers", "1,2", "--quiet",
                     "--jobs", "1", *extra]) == 0
        pages[len(pages)] = ((o / "index.html").read_bytes(), (o / "report.json").read_bytes())
    assert pages[0] == pages[1] == pages[2]
    assert b"sample" not in pages[0][1]


@pytest.mark.parametrize("value", ["x", "-1", "1.5", "", "1e5"])
def test_bad_whatif_sample_is_one_line(capsys, value):
    code = main(["report", MYSQL, "--json", "--whatif-sample", value])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "--whatif-sample must be a number of transactions, 0 or more" in err


def test_whatif_sample_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--whatif-sample N" in text and "the middle N" in text and "default 200000" in text
