#!/usr/bin/env python3
"""How close can any model come on the lag-check rig? Each campaign repeats two runs unchanged:
its three calibrating drains (`durable-serial-1@800x40+stop5:15+cal`, #2, #3) and the durable
serial run at the source's top speed (`durable-serial-1@0x30`, #2). Predicting one repeat
from another is what a perfect model of the configuration would do on this host: whatever
error that leaves is the host's, and no model fitted on other runs can be expected to score
below it (docs/lag-check.md, "The rig's noise floor").

    python traces/record/lag_noise_floor.py [CAMPAIGN_DIR ...]     # `make lag-noise-floor`

- drain: each repeat's measured drain from another's (the same 800/s and 15 s stop):
  |d_j / d_i - 1| over every ordered pair;
- max lag (the issue's bar counts runs with a measured max lag of 0.5 s or more): each repeat's
  from another's apply rate, a_i = w_i / (1 + L_i / T) (T the load's seconds; the last
  transaction's lag is T (w / a - 1)), and its own write rate: L_j' = T max(0, w_j / a_i - 1);
- keeps up: a_i > w_j against the measured verdict.

Reads each campaign's results.json (the measured figures `lag_check.py report` stored); default:
campaigns I to P (one rig, one rule). Markdown on stdout.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from itertools import permutations

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAMPAIGNS = [os.path.join(REPO, "traces", "calibration", f"lag_check_{c}") for c in "ijklmnop"]
DRAIN = "durable-serial-1_800x40_stop5_15"
TOP = "durable-serial-1_0x30"
MATERIAL = 0.5                 # the max-lag bar counts runs measured at >= 0.5 s


def _seconds(run: str) -> float:
    m = re.search(r"@?_?\d+x(\d+)", run)
    if not m:
        raise ValueError(f"run {run}: no load length in its name")
    return float(m.group(1))


def repeats(rows: list[dict], name: str) -> list[dict]:
    """The run `name` and its repeats (_r2, _r3) in one campaign."""
    return [r for r in rows if re.fullmatch(re.escape(name) + r"(_r\d+)?", r["run"])]


def floor(folder: str, drain: str = DRAIN, top: str = TOP) -> dict:
    """One campaign's repeats (`drain`: the calibrating drain's run name, `top`: the top-speed
    serial run's; campaign Q16's are shorter: durable-serial-1_800x30_stop5_12, _0x20)."""
    rows = json.load(open(os.path.join(folder, "results.json")))["rows"]
    drains = [r["measured"]["drain_s"] for r in repeats(rows, drain)
              if r["measured"].get("drain_s")]
    drain_errors = [abs(b / a - 1) for a, b in permutations(drains, 2)]
    tops = repeats(rows, top)
    lag_errors, verdicts = [], []
    for a, b in permutations(tops, 2):
        t = _seconds(a["run"])
        rate = a["write_rate"] / (1 + a["measured"]["max_lag_s"] / t)
        predicted = t * max(0.0, b["write_rate"] / rate - 1)
        if b["measured"]["max_lag_s"] >= MATERIAL:
            lag_errors.append(abs(predicted / b["measured"]["max_lag_s"] - 1))
        verdicts.append((rate > b["write_rate"]) == b["measured"]["keeps_up"])
    return {"campaign": os.path.basename(folder.rstrip("/")), "drains_s": drains,
            "drain_errors": drain_errors,
            "tops": [(r["write_rate"], r["measured"]["max_lag_s"]) for r in tops],
            "lag_errors": lag_errors, "verdicts": verdicts}


def _pct(values: list) -> str:
    return f"{100 * statistics.median(values):.0f}%" if values else "-"


def markdown(folders: list[str]) -> str:
    out = ["| campaign | calibrating drains (s) | drain from another repeat: median error | "
           "top-speed serial runs: write rate / max lag | max lag from the other's apply rate: "
           "error (measured >= 0.5 s) | keeps-up verdict right |", "|---|---|---|---|---|---|"]
    every = {"drain_errors": [], "lag_errors": [], "verdicts": []}
    for folder in folders:
        f = floor(folder)
        for k in every:
            every[k] += f[k]
        tops = ", ".join(f"{w:.0f}/s {lag:.2f} s" for w, lag in f["tops"])
        lags = ", ".join(f"{100 * e:.0f}%" for e in f["lag_errors"]) or "-"
        out.append(f"| {f['campaign']} | {', '.join(f'{d:.2f}' for d in f['drains_s'])} | "
                   f"{_pct(f['drain_errors'])} | {tops} | {lags} | "
                   f"{sum(f['verdicts'])} of {len(f['verdicts'])} |")
    out.append(f"| all | | {_pct(every['drain_errors'])} ({len(every['drain_errors'])} pairs) | "
               f"| {_pct(every['lag_errors'])} ({len(every['lag_errors'])} predictions) | "
               f"{sum(every['verdicts'])} of {len(every['verdicts'])} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("campaigns", nargs="*", default=CAMPAIGNS,
                   help="lag_check campaign folders with results.json (default: I to P)")
    a = p.parse_args(argv)
    try:
        sys.stdout.write(markdown(a.campaigns))
    except (OSError, KeyError, ValueError) as e:
        raise SystemExit(f"lag_noise_floor: {e}") from None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
