"""The profiles' terms are read from the same place by both engines (issue 29): every field of
`Profile` is either read by the compiled core (its `PROFILE_READS`, model/simcore_rs/src/
profile.rs) or declared descriptive (`engine.DESCRIPTIVE_PROFILE_FIELDS`: names, provenance,
bands, which change no simulation). A fitted term added to the profile later fails here until
the core reads it too, and then the differential suite's every-term profile
(tests/engine_diff.every_term) runs it in both engines."""
from __future__ import annotations

import dataclasses

import pytest

from commitsched import engine
from commitsched.profiles import PROFILES, Profile

import commitsched_simcore


def test_every_profile_field_is_read_by_the_core_or_descriptive():
    fields = {f.name for f in dataclasses.fields(Profile)}
    reads = set(commitsched_simcore.PROFILE_READS)
    missing = fields - reads - engine.DESCRIPTIVE_PROFILE_FIELDS - engine.SETTING_PROFILE_TERMS
    assert not missing, (f"Profile field(s) {sorted(missing)} are not read by the compiled core "
                         "(model/simcore_rs/src/profile.rs READS and the code using them)")
    assert not reads & engine.DESCRIPTIVE_PROFILE_FIELDS
    assert reads <= fields, f"the core reads fields the profile no longer has: {reads - fields}"


def test_descriptive_fields_are_not_terms():
    """What is declared descriptive holds text, tuples or dicts, never a number a simulation
    could use (a term hidden there would escape the test above)."""
    for p in PROFILES.values():
        for name in engine.DESCRIPTIVE_PROFILE_FIELDS:
            v = getattr(p, name)
            assert isinstance(v, (str, tuple, dict)), f"{p.name}.{name} = {v!r}"


def test_the_core_refuses_a_profile_without_a_term_it_reads():
    """The core takes the terms by name: one missing is an error, never a silent default."""
    from commitsched.columnar import from_txns
    from commitsched.trace import Txn
    cols = from_txns([Txn(1, ("d.t/PRIMARY=1",))])
    terms = engine.profile_terms(PROFILES["durable"])
    del terms["wakeup"]
    with pytest.raises(ValueError, match="wakeup"):
        commitsched_simcore.simulate(cols.arrays, cols.n, cols.seq0, "commit_order", {},
                                     "mysql", 1, terms, {}, [])


def test_setting_terms_are_read_before_the_engines():
    """A term that `with_durability` turns into the engines' terms (log_write_cpu: a relaxed
    replica's commit_cpu) is read by neither engine: the core does not list it, and the
    relaxed profile carries its value in the term both engines read."""
    assert not set(commitsched_simcore.PROFILE_READS) & engine.SETTING_PROFILE_TERMS
    p = dataclasses.replace(PROFILES["durable"], log_write=50.0, log_write_cpu=12.0)
    assert p.with_durability("relaxed").commit_cpu == 12.0
