"""A sweep's (scheduler, W) runs in several processes give the same results, in the same order."""
import json
import subprocess
import sys

from commitsched.generate import generate
from commitsched.profiles import get_profile
from commitsched.scoring import score_trace
from commitsched.trace import write_trace

from commitsched.cli import TraceSource


def test_parallel_sweep_equals_serial_sweep(tmp_path):
    path = str(tmp_path / "t.jsonl.gz")
    write_trace(path, generate(400, workload="oltp_read_write", clients=8, tables=2, seed=3))
    trace = TraceSource(path)
    profile = get_profile("durable")
    kw = dict(schedulers=None, workers=[1, 2, 4], profile=profile, z3_bound="off")
    one = score_trace(trace, jobs=1, **kw)
    two = score_trace(trace, jobs=2, **kw)
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    assert len(one) > 3


def test_score_cli_jobs_flag_changes_nothing(tmp_path):
    path = str(tmp_path / "t.jsonl")
    write_trace(path, generate(200, workload="oltp_read_write", clients=4, tables=2, seed=5))
    outs = []
    for jobs in ("1", "2"):
        r = subprocess.run([sys.executable, "-m", "commitsched", "score", path, "--workers", "1,4",
                            "--json", "--quiet", "--z3-bound", "off", "--jobs", jobs],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
    assert outs[0] == outs[1]
