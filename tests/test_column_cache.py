"""The column cache (model/column_cache.py): a trace loaded again, unchanged, is read back with
the very columns of a fresh load; a changed file, other code, a damaged entry or the cache
turned off all mean a fresh load."""
import os

import numpy as np
import pytest

from commitsched import column_cache, columnar
from commitsched.generate import generate, generate_source_header
from commitsched.trace import write_trace


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMITSCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(column_cache, "MIN_BYTES", 0)
    return tmp_path / "cache"


def _write(path, n=500, seed=3):
    params = dict(workload="oltp_read_write", clients=8, tables=4, seed=seed)
    write_trace(str(path), generate(n, **params), generate_source_header(n, **params))


def _same(a, b):
    (sa, ca), (sb, cb) = a, b
    assert sa == sb
    assert (ca.n, ca.seq0, ca.keys, ca.schemas, ca.replica_locks, ca.keys_unknown) == \
        (cb.n, cb.seq0, cb.keys, cb.schemas, cb.replica_locks, cb.keys_unknown)
    assert ca.arrays.keys() == cb.arrays.keys()
    for name, x in ca.arrays.items():
        y = cb.arrays[name]
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), name


def _fresh(path):
    old = os.environ.get("COMMITSCHED_CACHE")
    os.environ["COMMITSCHED_CACHE"] = "off"
    try:
        return columnar.load_columns(str(path))
    finally:
        os.environ["COMMITSCHED_CACHE"] = old


def _reads(monkeypatch) -> list:
    """Paths `load_columns` really loads (not from the cache)."""
    seen = []
    real = columnar._load_compiled

    def spy(path):
        seen.append(path)
        return real(path)

    monkeypatch.setattr(columnar, "_load_compiled", spy)
    return seen


@pytest.mark.parametrize("name", ["t.jsonl.gz", "t.jsonl"])
def test_a_second_load_is_read_back_with_the_same_columns(tmp_path, cache, monkeypatch, name):
    path = tmp_path / name
    _write(path)
    reads = _reads(monkeypatch)
    first = columnar.load_columns(str(path))
    second = columnar.load_columns(str(path))
    assert reads == [str(path)]                  # the second came from the cache
    _same(first, second)
    _same(second, _fresh(path))


def test_a_changed_file_is_loaded_again_even_with_its_size_and_time(tmp_path, cache, monkeypatch):
    path, other = tmp_path / "t.jsonl", tmp_path / "u.jsonl"
    _write(path, seed=3)
    _write(other, seed=4)
    st = os.stat(path)
    columnar.load_columns(str(path))
    data = bytearray(path.read_bytes())
    i = data.index(b'"session":') + len('"session":')
    data[i] = ord("9") if data[i] != ord("9") else ord("8")      # same size, other content
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    reads = _reads(monkeypatch)
    got = columnar.load_columns(str(path))
    assert reads == [str(path)]
    _same(got, _fresh(path))


def test_a_damaged_entry_or_other_code_is_a_fresh_load(tmp_path, cache, monkeypatch):
    path = tmp_path / "t.jsonl.gz"
    _write(path)
    columnar.load_columns(str(path))
    (entry,) = list(cache.iterdir())
    entry.write_bytes(entry.read_bytes()[:100])
    fresh = _fresh(path)
    reads = _reads(monkeypatch)
    _same(columnar.load_columns(str(path)), fresh)          # damaged: loaded, entry made again
    _same(columnar.load_columns(str(path)), fresh)          # from the new entry
    monkeypatch.setattr(column_cache, "FORMAT", column_cache.FORMAT + 1)
    _same(columnar.load_columns(str(path)), fresh)          # other code: loaded again
    assert len(reads) == 2


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMITSCHED_CACHE", "off")
    monkeypatch.setattr(column_cache, "MIN_BYTES", 0)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "t.jsonl"
    _write(path)
    columnar.load_columns(str(path))
    assert not (tmp_path / "xdg").exists()


def test_a_trace_imported_on_the_fly_is_not_cached(tmp_path, cache, monkeypatch):
    import tempfile

    from commitsched.inputs import IMPORT_DIR_PREFIX
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tmp = tempfile.mkdtemp(prefix=IMPORT_DIR_PREFIX)
    path = os.path.join(tmp, "binlog.000001.jsonl.gz")
    _write(path)
    columnar.load_columns(path)
    assert not cache.exists()


def _entries(cache) -> set:
    return {n for n in os.listdir(cache) if n.endswith(".cols")}


def test_over_the_limit_the_least_recently_used_entry_goes_first(tmp_path, cache, monkeypatch):
    paths = {name: tmp_path / f"{name}.jsonl" for name in "abc"}
    for i, path in enumerate(paths.values()):
        _write(path, seed=i)
    columnar.load_columns(str(paths["a"]))
    columnar.load_columns(str(paths["b"]))
    entry = {name: column_cache._entry(str(p), str(cache)) for name, p in paths.items()}
    past = os.path.getmtime(entry["a"]) - 100
    os.utime(entry["a"], (past - 10, past - 10))        # a written first ...
    os.utime(entry["b"], (past, past))
    reads = _reads(monkeypatch)
    columnar.load_columns(str(paths["a"]))                 # ... but read back since: used
    assert reads == []
    columnar.load_columns(str(paths["c"]))
    everything = sum(os.path.getsize(e) for e in entry.values())
    monkeypatch.setattr(column_cache, "max_bytes", lambda: everything - 1)
    os.utime(entry["c"])
    column_cache.prune(str(cache))                         # one of the three must go
    assert _entries(cache) == {os.path.basename(entry[n]) for n in "ac"}


def test_the_entry_just_written_stays_even_over_the_limit(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("COMMITSCHED_CACHE_MAX_MB", "0")
    for i in range(2):
        _write(tmp_path / f"{i}.jsonl", seed=i)
        columnar.load_columns(str(tmp_path / f"{i}.jsonl"))
    assert _entries(cache) == {os.path.basename(column_cache._entry(str(tmp_path / "1.jsonl"),
                                                                    str(cache)))}


def test_a_crashed_writers_old_temporary_file_is_removed(tmp_path, cache):
    cache.mkdir()
    old, new = cache / ".tmp-old.cols", cache / ".tmp-new.cols"
    old.write_bytes(b"x")
    new.write_bytes(b"x")
    past = os.path.getmtime(old) - 2 * column_cache._STALE_TEMPORARY_S
    os.utime(old, (past, past))
    assert column_cache.prune(str(cache)) == [".tmp-old.cols"]
    assert new.exists()                                    # maybe a writer at work


def test_the_size_limit_is_read_in_megabytes_and_a_bad_one_is_said(monkeypatch, capsys):
    monkeypatch.setenv("COMMITSCHED_CACHE_MAX_MB", "12")
    assert column_cache.max_bytes() == 12 << 20
    monkeypatch.delenv("COMMITSCHED_CACHE_MAX_MB")
    assert column_cache.max_bytes() == column_cache.DEFAULT_MAX_MB << 20
    monkeypatch.setenv("COMMITSCHED_CACHE_MAX_MB", "lots")
    assert column_cache.max_bytes() == column_cache.DEFAULT_MAX_MB << 20
    assert "COMMITSCHED_CACHE_MAX_MB='lots'" in capsys.readouterr().err
    assert column_cache.max_bytes() == column_cache.DEFAULT_MAX_MB << 20
    assert capsys.readouterr().err == ""                   # said once
