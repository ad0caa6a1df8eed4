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


def test_fork_map_keeps_order_and_raises_as_one_job_would():
    from commitsched.scoring import fork_map
    from commitsched.trace import TraceError
    seen = {"offset": 10}                       # a closure: inherited by the fork, not pickled

    def f(x):
        if x == 5:
            raise TraceError("t.jsonl", 7, "bad")   # does not pickle: rerun in the parent
        return x + seen["offset"]
    assert list(fork_map(f, range(5), 2)) == [10, 11, 12, 13, 14]
    assert list(fork_map(f, range(5), 1)) == [10, 11, 12, 13, 14]
    for jobs in (1, 2):
        try:
            list(fork_map(f, range(8), jobs))
        except TraceError as e:
            assert str(e) == "t.jsonl:7: bad"
        else:
            raise AssertionError("no TraceError")
