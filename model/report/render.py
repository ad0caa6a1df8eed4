"""A report's figures (SVG text by name) and its page, as HTML (figures inline: one file, readable
offline) or Markdown (figures as SVG files next to it)."""
from __future__ import annotations

from .analysis import Report
from .blame_section import blame_tables
from .depgraph import GraphvizMissing, dot_source, render_svg
from .figures import esc, fmt, grouped_bars, line_chart, stacked_bars
from .gantt import gantt_svg
from .stall import stall_svg
from ..replay import HEADROOM_LIMIT
from ..scoring import unmeasured_text
from ..simcore import CAUSES

CAUSE_LABELS = {
    "dependency": "coordinator: dependency", "barrier": "coordinator: barrier",
    "window_full": "coordinator: window full", "no_free_worker": "coordinator: no free worker",
    "gco_wait": "GCO wait", "prior_commit_wait": "prior commit wait", "lock_wait": "lock wait",
    "commit_order": "commit order", "sync_wait": "sync wait", "retry": "retry",
}


def _series_by_scheduler(results, key):
    names = list(dict.fromkeys(r["scheduler"] for r in results if r["scheduler"] != "serial"))
    out = []
    for n in names:
        rs = [r for r in results if r["scheduler"] == n and "error" not in r]
        series = {"name": n, "points": sorted((r["workers"], r.get(key)) for r in rs)}
        if key == "speedup" and all(r.get("speedup_band") for r in rs) and rs:
            series["band"] = sorted((r["workers"], *r["speedup_band"]) for r in rs)
        out.append(series)
    return out


def profile_text(prof: dict) -> str:
    """What a prediction is for: the machine profile, its cores, the replica's durability."""
    cores = f"{prof['cores']} cores" if prof.get("cores") else "a core per worker (no CPU limit)"
    band = prof.get("band") or ()
    unmeasured = unmeasured_text(prof["unmeasured"]) if prof.get("unmeasured") else ""
    return (f"Machine profile `{prof['name']}`: {prof.get('machine') or 'no measured machine'}; "
            f"{cores}; {prof.get('durability', 'durable')} replica, log_replica_updates "
            f"{'on' if prof.get('log_replica_updates', True) else 'off'}; "
            + (f"shaded band: measured / predicted {band[0]:.2f}-{band[1]:.2f} (10th-90th "
               f"percentile) on its calibration. " if band else "no calibration band. ")
            + (f"{unmeasured[0].upper()}{unmeasured[1:]}. " if unmeasured else "")
            + f"Provenance: {prof['provenance']}.")


def figures(report: Report) -> dict[str, tuple[str, str]]:
    """name -> (caption, svg text)."""
    d = report.data
    res = d["results"]
    ws = d["workers"]
    figs: dict[str, tuple[str, str]] = {}
    sp = _series_by_scheduler(res, "speedup")
    n_sched = len(sp)
    regimes = {r["bound"]["regime"] for r in res if "bound" in r}
    sp.append({"name": "bound (in-order commit)", "colour": "#000000", "style": "dashed",
               "points": [(w, d["bound_speedup"][str(w)]["in_order"]) for w in ws]})
    if "free" in regimes:
        sp.append({"name": "bound (any commit order)", "colour": "#555555", "style": "dotted",
                   "points": [(w, d["bound_speedup"][str(w)]["free"]) for w in ws]})
    sp.append({"name": "linear (speedup = W)", "colour": "#bbbbbb", "style": "dotted",
               "points": [(w, float(w)) for w in ws]})
    figs["speedup"] = ("Speedup over serial replay against worker count, for every scheduler, "
                       "with the lower-bound speedup (serial makespan / bound): no schedule can "
                       "be above the bound line of its commit regime. The bound counts one sync "
                       "for the whole trace, so with a sync cost it is far from reachable; a "
                       "line above the axis leaves through the top and its legend gives the "
                       "value.",
                       line_chart(sp, title="Speedup against workers", xlabel="workers",
                                  ylabel="speedup over serial", unit="x",
                                  y_max=1.3 * max([float(ws[-1])] + [y for x in sp[:n_sched]
                                                  for _, y in x["points"] if y])))
    tp = _series_by_scheduler(res, "throughput")
    figs["throughput"] = ("Throughput (transactions per second of simulated time) against "
                          "worker count.",
                          line_chart(tp, title="Throughput against workers", xlabel="workers",
                                     ylabel="transactions / s", unit=" txn/s"))
    wmax = ws[-1]
    at_max = [r for r in res if r["workers"] == wmax and "error" not in r
              and r["scheduler"] != "serial"]
    focus = [x["scheduler"] for x in d["diagnosis"]]
    pw_rows = [r for r in at_max if r["scheduler"] in focus]
    if pw_rows:
        cats = [f"w{i + 1}" for i in range(wmax)]
        figs["per_worker_count"] = (
            f"Transactions applied by each worker at {wmax} workers.",
            grouped_bars(cats, [{"name": r["scheduler"], "values": r["per_worker"]}
                                for r in pw_rows],
                         title=f"Transactions per worker (W={wmax})", unit="transactions"))
        figs["per_worker_busy"] = (
            f"Time each worker spent executing at {wmax} workers, against the makespan: "
            f"the rest of the makespan the worker was idle or waiting.",
            grouped_bars(cats, [{"name": f"{r['scheduler']} busy", "values":
                                 [b / r["makespan"] * 100 for b in r["per_worker_busy"]],
                                 "unit": "% of makespan"} for r in pw_rows],
                         title=f"Busy executing, % of makespan (W={wmax})",
                         unit="% of makespan"))
    rows = []
    for r in at_max:
        n = r["transactions"] or 1
        rows.append({"name": r["scheduler"], "values": {c: v / n for c, v in r["blocked"].items()}})
    figs["blocked"] = (
        f"Where time goes at {wmax} workers: time blocked by cause, per transaction "
        f"(coordinator causes: the coordinator's own stall divided by the transactions it "
        f"dispatched; the others: summed over transactions).",
        stacked_bars(rows, CAUSES, title=f"Blocked time by cause (W={wmax})",
                     unit="µs per transaction", part_labels=CAUSE_LABELS))
    for i, w in enumerate(report.windows, 1):
        title = (f"{w.scheduler}, {w.workers} workers: seq {w.runs[0].seq}..{w.runs[-1].seq}"
                 if w.runs else w.scheduler)
        stall = [x["seq"] for x in d["windows"][i - 1]["runs"] if x.get("stalls_later")]
        figs[f"gantt_{i}"] = (
            f"Schedule window ({w.role}): {title}. Red outlines: long transactions that held "
            f"back later ones.",
            gantt_svg(w.runs, w.workers, sync=w.sync, title=title, highlight=stall))
    if report.windows:
        w = report.windows[0]
        try:
            figs["depgraph"] = (
                "Dependency graph of the first window: solid edges are true conflicts (labelled "
                "with the shared row key), dotted edges the tracker's declared parent, dashed "
                "boxes commit groups; red nodes are long transactions that stall the pipeline.",
                render_svg(dot_source(w.runs, sync=w.sync,
                                      title=f"Dependencies, seq {w.runs[0].seq}..{w.runs[-1].seq}")))
        except GraphvizMissing as e:
            figs["depgraph"] = (f"Dependency graph not drawn: {e}.", "")
    b = d.get("blame") or {}
    if b.get("stall", {}).get("rows"):
        figs["blame_stall"] = (
            f"{b['headline_text']} The worst stall ({b['scheduler']}, {b['workers']} workers): "
            f"the most blamed transaction and those that waited for it longest, one row each "
            f"from its start to its commit; waits dotted. Blame follows each wait back to the "
            f"transaction whose own work it waited for (docs/blame.md).",
            stall_svg(b["stall"]))
    ku = d.get("keeping_up") or {}
    if ku.get("configs"):
        series = [{"name": f"{c['scheduler']} W={c['workers']}",
                   "points": [(t, v) for t, v in c["lag_over_time"]]}
                  for c in ku["configs"] if "error" not in c]
        if series:
            figs["lag_over_time"] = (
                "Lag over time, the trace replayed as it arrived: for each slice of the "
                "source's time, the largest lag (replica commit minus source commit) of the "
                "transactions committed on the source in it." + (
                    " The source's commit times are whole seconds, spread over each second."
                    if ku["timestamps"] != "µs" else ""),
                line_chart(series, title="Lag over time", xlabel="source time, s",
                           ylabel="lag, s", unit=" s", log2_x=False))
    if ku.get("headroom"):
        series = headroom_series(ku["headroom"])
        figs["headroom"] = (
            "Headroom against worker count: the largest factor the source's pace could be "
            "multiplied by with the replica still keeping up (bisected to 1%); below the dotted "
            "line it falls behind today. A hollow arrowhead is a bound, not a value: the "
            f"search stopped at its limit (≥ {HEADROOM_LIMIT:g}x, or < 1/{HEADROOM_LIMIT:g}x)."
            + (f" The profile was calibrated from {ku['calibration_windows']} windows: the "
               f"shaded band (with a bar at each worker count) runs from the headroom at the "
               f"slowest to the one at the fastest calibrated pace (each term at its slowest / "
               f"fastest window's fit), the host's drift, not the model's error."
               if any("range" in r for rows in ku["headroom"].values() for r in rows)
               else "")
            + (
                f" Bisected on the middle {ku['headroom_sample']['transactions']:,} "
                f"transactions." if ku.get("headroom_sample") else ""),
            line_chart(series, title="Headroom against workers", xlabel="workers",
                       ylabel="pace factor", unit="x"))
    wi = d.get("whatif")
    if wi:
        sample = wi.get("sample")
        # On a sample, every what-if figure says which transactions it ran on.
        on = (f" On a sample: the middle {sample['transactions']:,} of the trace's "
              f"{sample['of']:,} transactions (seq {sample['first_seq']}..{sample['last_seq']}),"
              f" serial baseline included; the scaling sweep used the whole trace."
              if sample else "")
        if wi["tracking"]:
            series = {}
            for r in wi["tracking"]:
                series.setdefault(r["tracker"], []).append((r["workers"], r["speedup"]))
            figs["whatif_tracking"] = (
                "What if the MySQL source tracked dependencies differently: speedup of the "
                "mysql applier with last_committed recomputed from the write sets."
                + (" From the scaling sweep: the whole trace." if sample else ""),
                line_chart([{"name": t, "points": sorted(p)} for t, p in series.items()],
                           title="Tracking mode (mysql applier)", xlabel="workers",
                           ylabel="speedup over serial", unit="x"))
        if wi["durability"]:
            series = {}
            for r in wi["durability"]:
                series.setdefault(f"{r['scheduler']} / {r['profile']}", []).append(
                    (r["workers"], r["speedup"]))
            figs["whatif_durability"] = (
                "What if durability were different: the same machine with a durable replica "
                "(sync_binlog=1, innodb_flush_log_at_trx_commit=1) and a relaxed one (0 / 2), "
                "each speedup over the serial replay under the same settings." + on,
                line_chart([{"name": n, "points": sorted(p), "style": "solid"}
                            for n, p in series.items()],
                           title="Durability profile", xlabel="workers",
                           ylabel="speedup over serial", unit="x"))
        cw = wi.get("commit_wait")
        if cw and cw["rows"]:
            series = {}
            for r in cw["rows"]:
                series.setdefault(f"W={r['workers']}", []).append(
                    (r["commit_wait_count"], r["speedup"]))
            figs["whatif_commit_wait"] = (
                "MariaDB: what if commits were grouped by an intermediate replica with "
                "binlog_commit_wait_count = N (slave group commit, conservative applier)."
                + on,
                line_chart([{"name": n, "points": sorted(p)} for n, p in series.items()],
                           title="Commit wait count (slave_group_commit+mariadb_conservative)",
                           xlabel="binlog_commit_wait_count", ylabel="speedup over serial",
                           unit="x"))
    return figs


# ------------------------------------------------------------------ text

def _workers_text(n: int) -> str:
    return f"{n} worker" + ("" if n == 1 else "s")


def _answers(d: dict) -> list[tuple[str, list[str]]]:
    rec = d["recommendation"]
    thr = rec["threshold"]
    ws = d["workers"]
    out = []
    lines = []
    for name, p in rec["per_scheduler"].items():
        band = p.get("speedup_band")
        band_text = f", band {band[0]:.2f}-{band[1]:.2f}x" if band else ""
        if p["still_gaining"]:
            lines.append(f"`{name}`: still gains at least {thr:.0%} at every step up to "
                         f"{p['recommended_workers']} workers ({p['speedup']:.2f}x{band_text}), "
                         f"beyond the calibration band too; try more.")
        elif p.get("band_limited"):
            lines.append(f"`{name}`: {_workers_text(p['recommended_workers'])} "
                         f"({p['speedup']:.2f}x{band_text}): the model gains at least {thr:.0%} "
                         f"at every step, but the last step's gain is inside the calibration "
                         f"band, so more workers are not shown to help.")
        else:
            lines.append(f"`{name}`: {_workers_text(p['recommended_workers'])} ({p['speedup']:.2f}x"
                         f"{band_text}); the next step gains less than {thr:.0%}.")
    out.append((f"How many workers? (the smallest count past which the next step of "
                f"{', '.join(map(str, ws))} gains less than {thr:.0%} speedup)", lines))
    lines = []
    if rec.get("best"):
        b = rec["best"]
        lines.append(f"The most from this trace: `{b['scheduler']}`, {b['speedup']:.2f}x at "
                     f"{b['workers']} workers ({b['speedup_at_recommended']:.2f}x at its "
                     f"recommended {b['recommended_workers']}).")
        for fam, n in rec.get("best_per_applier_family", {}).items():
            p = rec["per_scheduler"][n]
            lines.append(f"Best with the {fam} applier: `{n}` ({p['max_speedup']:.2f}x at "
                         f"{p['max_speedup_workers']} workers).")
    for s in d.get("tracker_shapes", []):
        if s["kind"] == "clock":
            lines.append(f"`{s['tracker']}` declares a mean window of {s['mean_window']:.2f} "
                         f"earlier transactions that may overlap.")
        else:
            lines.append(f"`{s['tracker']}` makes commit groups of {s['mean_group_size']:.2f} "
                         f"transactions on average.")
    out.append(("Which dependency tracking / scheduler?", lines))
    lines = []
    for dg in d["diagnosis"]:
        lines.append(f"`{dg['scheduler']}` at {dg['workers']} workers: workers are busy "
                     f"executing {dg['utilisation']:.0%} of the time"
                     + (f"; {dg['idle_workers']} workers never get a transaction"
                        if dg["idle_workers"] else "") + ".")
        for c in dg["causes"][:3]:
            amount = (f"{c['share_of_makespan']:.0%} of the makespan" if c["coordinator"]
                      else f"{fmt(c['per_transaction'])} µs per transaction")
            lines.append(f"&nbsp;&nbsp;– {CAUSE_LABELS.get(c['cause'], c['cause'])} "
                         f"({amount}): {c['meaning']}; remedy: {c['remedy']}.")
    out.append(("Why is my replica not using its workers?", lines))
    b = d.get("blame") or {}
    if b.get("headline_text"):
        lines = [b["headline_text"]]
        split = b.get("split") or []
        best = min(split, key=lambda r: (r["makespan"], r["k"])) if split else None
        if best is not None and best["k"] > 0 and best["makespan_change"] < 0:
            lines.append(f"Splitting the top {best['k']} into up to {best['chunks']} chunks each is "
                         f"predicted to cut the makespan by {-best['makespan_change']:.1%} "
                         f"(speedup {split[0]['speedup']:.2f}x → {best['speedup']:.2f}x).")
        elif split:
            lines.append("Splitting the most blamed transactions is not predicted to help "
                         "(see the what-if table).")
        out.append(("Which transactions hold the replica back?", lines))
    elif b.get("skipped"):          # said, not silently left out (a long trace)
        out.append(("Which transactions hold the replica back?",
                    [f"Not answered in this report: {b['skipped']}."]))
    ku = d.get("keeping_up")
    if ku is not None:
        out.append(("Will the replica keep up with the source's pace?",
                    ku.get("answer") or [f"Not answered in this report: {ku['skipped']}."]))
    wi = d.get("whatif") or {}
    out.append(("Should I delay commits on the source?",
                wi.get("delay_advice") or ["(what-if sweeps not run)"]))
    return out


def _results_table(d: dict) -> tuple[list[str], list[list[str]]]:
    head = ["scheduler", "W", "makespan µs", "txn/s", "speedup", "efficiency", "bound µs",
            "vs bound", "retries", "per worker"]
    rows = []
    for r in d["results"]:
        if "error" in r:
            rows.append([r["scheduler"], str(r["workers"]), r["error"]] + [""] * 7)
            continue
        pw = " ".join(map(str, r["per_worker"][:16])) + (" …" if len(r["per_worker"]) > 16 else "")
        rows.append([r["scheduler"], str(r["workers"]), f"{r['makespan']:.0f}",
                     f"{r['throughput']:.1f}" if r["throughput"] else "-",
                     f"{r['speedup']:.2f}" if r["speedup"] else "-",
                     f"{r['efficiency']:.2f}" if r["efficiency"] else "-",
                     f"{r['bound']['bound']:.0f}" if "bound" in r else "-",
                     f"{r['efficiency_vs_bound']:.2f}" if r.get("efficiency_vs_bound") else "-",
                     str(r["retries"]), pw])
    return head, rows


ORDER = ("speedup", "throughput", "per_worker_count", "per_worker_busy", "blocked", "blame_stall",
         "lag_over_time", "headroom", "gantt_1", "gantt_2", "depgraph", "whatif_tracking",
         "whatif_durability", "whatif_commit_wait")
SECTIONS = {"speedup": "Scaling", "per_worker_count": "Per worker", "blocked": "Where time goes",
            "lag_over_time": "Keeping up",
            "blame_stall": "Which transactions hold the replica back",
            "gantt_1": "A schedule window", "depgraph": "Dependencies of the window",
            "whatif_tracking": "What if"}

CSS = """body{font-family:DejaVu Sans,Helvetica,Arial,sans-serif;max-width:1060px;margin:1.5em auto;
padding:0 1em;color:#222;line-height:1.45}h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;
padding-bottom:.2em;margin-top:1.6em}table{border-collapse:collapse;font-size:.82em;margin:.6em 0}
td,th{border:1px solid #ccc;padding:.2em .45em;text-align:right}td:first-child,th:first-child
{text-align:left}figure{margin:1em 0}figcaption{font-size:.88em;color:#444;max-width:1000px}
svg{max-width:100%;height:auto}code{background:#f3f3f3;padding:0 .2em}.note{color:#555;font-size:.9em}
nav a{margin-right:1em}"""


def _md_inline(text: str) -> str:
    """The answers use `code` spans; turn them into HTML."""
    import re
    parts = re.split(r"`([^`]*)`", text)
    return "".join(f"<code>{esc(p)}</code>" if i % 2 else p.replace("&nbsp;", "\0")
                   .replace("&", "&amp;").replace("<", "&lt;").replace("\0", "&nbsp;")
                   for i, p in enumerate(parts))


def html_page(report: Report, figs: dict, *, title: str | None = None, nav: str = "") -> str:
    d = report.data
    t = d["trace"]
    prof = d["profile"]
    title = title or f"commitsched report: {t['path']}"
    src = ", ".join(f"{k}: {v}" for k, v in t["source"].items())
    out = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(title)}"
           f"</title><style>{CSS}</style></head><body>", nav,
           f"<h1>{esc(title)}</h1>",
           f"<p>{t['transactions']} transactions ({'MariaDB' if t['mariadb'] else 'MySQL'} "
           f"source). {esc(src)}</p>",
           f"<p class=\"note\">{_md_inline(profile_text(prof))} "
           f"Times are µs of simulated replica time. Worker counts: "
           f"{esc(', '.join(map(str, d['workers'])))}.</p>",
           "<h2>Answers</h2>"]
    if d.get("mysql"):
        out.insert(-1, f"<p class=\"note\">{esc(d['mysql']['text'])} (version from "
                       f"{esc(d['mysql']['origin'])})</p>")
    if d.get("keys"):
        out.insert(-1, f"<p class=\"note\">{esc(d['keys']['text'])}.</p>")
    if d.get("skipped"):
        out.insert(-1, "<p class=\"note\">Not run (the trace cannot feed them): " + "; ".join(
            f"<code>{esc(n)}</code>: {esc(why)}" for n, why in d["skipped"].items()) + "</p>")
    if (d.get("whatif") or {}).get("sample"):
        out.insert(-1, f"<p class=\"note\">{_md_inline(d['whatif']['sample']['text'])}</p>")
    for q, lines in _answers(d):
        items: list[list[str]] = []
        for l in lines:     # "&nbsp;&nbsp;– " lines belong under the line before
            if l.startswith("&nbsp;") and items:
                items[-1].append(l[len("&nbsp;&nbsp;– "):])
            else:
                items.append([l])
        out.append(f"<h3>{esc(q)}</h3><ul>" + "".join(
            f"<li>{_md_inline(it[0])}" + ("<ul>" + "".join(f"<li>{_md_inline(x)}</li>"
                                                           for x in it[1:]) + "</ul>"
                                          if len(it) > 1 else "") + "</li>"
            for it in items) + "</ul>")
    for name in ORDER:
        if name not in figs:
            continue
        if name in SECTIONS:
            out.append(f"<h2>{SECTIONS[name]}</h2>")
        cap, svg = figs[name]
        out.append(f"<figure id=\"{name}\">{svg}<figcaption>{esc(cap)}</figcaption></figure>")
        if name == "blame_stall":
            for cap, head, rows in blame_tables(d["blame"]):
                out.append(f"<p>{esc(cap)}</p><table><tr>" +
                           "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>" +
                           "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) +
                                   "</tr>" for row in rows) + "</table>")
        if name == "speedup":
            head, rows = _results_table(d)
            out.append("<details><summary>All results</summary><table><tr>" +
                       "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>" +
                       "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                               for row in rows) + "</table></details>")
    if d.get("cluster"):
        from .cluster_section import MEMBER_TEXT, cluster_table, member_table
        out.append("<h2>On a certification-based cluster</h2>")
        tables = []
        if d["cluster"].get("member_scores"):
            tables.append((MEMBER_TEXT, member_table(d["cluster"])))
        if d["cluster"].get("rows"):
            tables.append((d["cluster"]["text"], cluster_table(d["cluster"])))
        elif d["cluster"].get("skipped"):
            out.append(f"<p class=\"note\">Sustained throughput not computed: "
                       f"{esc(d['cluster']['skipped'])}</p>")
        for text, (head, rows) in tables:
            out.append(f"<p>{esc(text)}</p><table><tr>" +
                       "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>" +
                       "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>"
                               for row in rows) + "</table>")
    out.append("<p class=\"note\">Generated by <code>commitsched report</code>; the numbers "
               "behind every figure: <code>commitsched report TRACE --json</code>.</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def markdown_page(report: Report, figs: dict) -> str:
    d = report.data
    t = d["trace"]
    prof = d["profile"]
    out = [f"# commitsched report: {t['path']}", "",
           f"{t['transactions']} transactions ({'MariaDB' if t['mariadb'] else 'MySQL'} source). "
           + ", ".join(f"{k}: {v}" for k, v in t["source"].items()), "",
           f"{profile_text(prof)} Times are µs of simulated replica time.", ""]
    if d.get("mysql"):
        out += [f"{d['mysql']['text']} (version from {d['mysql']['origin']})", ""]
    if d.get("keys"):
        out += [d["keys"]["text"] + ".", ""]
    if d.get("skipped"):
        out += ["Not run (the trace cannot feed them): " + "; ".join(
            f"`{n}`: {why}" for n, why in d["skipped"].items()), ""]
    if (d.get("whatif") or {}).get("sample"):
        out += [d["whatif"]["sample"]["text"], ""]
    out += ["## Answers", ""]
    for q, lines in _answers(d):
        out += [f"### {q}", ""] + [f"  - {l[len('&nbsp;&nbsp;– '):]}" if l.startswith("&nbsp;")
                                   else f"- {l}" for l in lines] + [""]
    for name in ORDER:
        if name not in figs:
            continue
        if name in SECTIONS:
            out += [f"## {SECTIONS[name]}", ""]
        cap, svg = figs[name]
        if svg:
            out += [f"![{name}]({name}.svg)", ""]
        out += [f"*{cap}*", ""]
        if name == "blame_stall":
            for cap, head, rows in blame_tables(d["blame"]):
                out += [f"{cap}:", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                        for row in rows]
                out.append("")
        if name == "speedup":
            head, rows = _results_table(d)
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "---|" * len(head))
            out += ["| " + " | ".join(row) + " |" for row in rows]
            out.append("")
    if d.get("cluster"):
        from .cluster_section import MEMBER_TEXT, cluster_table, member_table
        out += ["## On a certification-based cluster", ""]
        tables = []
        if d["cluster"].get("member_scores"):
            tables.append((MEMBER_TEXT, member_table(d["cluster"])))
        if d["cluster"].get("rows"):
            tables.append((d["cluster"]["text"], cluster_table(d["cluster"])))
        elif d["cluster"].get("skipped"):
            out += [f"Sustained throughput not computed: {d['cluster']['skipped']}", ""]
        for text, (head, rows) in tables:
            out += [text, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            out += ["| " + " | ".join(row) + " |" for row in rows] + [""]
    return "\n".join(out) + "\n"


def headroom_series(headroom: dict) -> list[dict]:
    """The headroom figure's lines (keeping_up's `headroom` rows by scheduler). A bisection that
    reached its limit gives a bound (≥ 1000x, < 1/1000x), not a value: drawn as one, off the
    line and out of the y range (figures.line_chart); then today's pace, dotted."""
    series = [{"name": name,
               "points": [(r["workers"], r["headroom"]) for r in rows
                          if "headroom" in r and not r.get("is_bound")],
               "bounds": [(r["workers"], r["headroom"], "≥" if r["headroom"] >= 1 else "<")
                          for r in rows if "headroom" in r and r.get("is_bound")],
               # a profile calibrated from several windows: the headroom at the slowest and
               # the fastest calibrated pace, shaded (and its y range drawn), bounds left out
               "band": [(r["workers"], *r["range"]) for r in rows
                        if "range" in r and not r.get("range_is_bound")],
               "band_label": "slowest to fastest calibrated pace",
               "band_in_range": True}
              for name, rows in headroom.items()]
    ws = ([w for s in series for w, _ in s["points"]]
          + [w for s in series for w, _, _ in s["bounds"]]) or [1]
    series.append({"name": "today's pace (1x)", "colour": "#bbbbbb", "style": "dotted",
                   "points": [(min(ws), 1.0), (max(ws), 1.0)]})
    return series
