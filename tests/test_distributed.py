"""A sweep on a Dask cluster (model/distributed.py, `score --cluster`): a local cluster of two
worker processes gives the same bytes as the local process pool, and a worker lost mid-sweep
has its task run again, not dropped."""
from __future__ import annotations

import os


from commitsched.cli import main
from commitsched.distributed import cluster_map

ROOT = os.path.join(os.path.dirname(__file__), "..")
TRACE = os.path.join(ROOT, "traces", "recorded", "oltp_read_write_t8.jsonl.gz")


def test_a_two_worker_cluster_gives_the_local_pools_bytes(tmp_path):
    args = [TRACE, "--workers", "1,2,4", "--json", "--quiet", "--z3-bound", "off"]
    local, cluster = tmp_path / "local.json", tmp_path / "cluster.json"
    assert main(["score", *args, "--jobs", "2", "-o", str(local)]) == 0
    assert main(["score", *args, "--cluster", "local:2", "-o", str(cluster)]) == 0
    assert local.read_bytes() == cluster.read_bytes()


def _dies_once(item, marker_dir):
    """Item 3 kills its worker process the first time it runs (a machine lost mid-sweep)."""
    if item == 3:
        marker = os.path.join(marker_dir, "died")
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
    return item * item


def test_scattered_input_lost_with_its_only_worker_is_sent_again(tmp_path):
    out = list(cluster_map(_dies_once, range(6), "local:1", shared=(str(tmp_path),)))
    assert out == [i * i for i in range(6)]
    assert (tmp_path / "died").exists()          # the only worker did die, with the input


def test_a_lost_worker_is_retried_not_dropped(tmp_path):
    out = list(cluster_map(_dies_once, range(8), "local:2", shared=(str(tmp_path),)))
    assert out == [i * i for i in range(8)]
    assert (tmp_path / "died").exists()          # the worker did die, once


def test_a_bad_cluster_address_is_one_line(capsys):
    assert main(["score", TRACE, "--quiet", "--cluster", "local:x"]) == 2
    assert "local:N" in capsys.readouterr().err
