"""Issue 27's DBA gaps in `lag`/`report`/`score` (the calibration spread's ranges, binlog file
gaps, --tz) and a Dask sweep whose scattered input died with every worker holding it."""
from __future__ import annotations

import os

import pytest

from commitsched.distributed import ClusterError, cluster_map


# ------------------------------------------------------------------ distributed: lost input

def _dies_once(item, marker_dir):
    """Item 3 kills its worker process the first time it runs; on a one-worker cluster that
    worker held the only copy of the scattered input."""
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


def _always_dies(item, marker_dir):
    if item == 1:
        os._exit(1)
    return item


def test_an_input_lost_again_and_again_is_one_line(tmp_path, monkeypatch):
    import commitsched.distributed as d
    monkeypatch.setattr(d, "RESCATTERS", 1)
    with pytest.raises(ClusterError) as e:
        list(cluster_map(_always_dies, range(3), "local:1", shared=(str(tmp_path),)))
    assert "\n" not in str(e.value) and "--cluster local:1" in str(e.value)
