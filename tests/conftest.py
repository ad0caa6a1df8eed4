"""Shared test settings: hypothesis runs derandomized (the same examples on every machine) with
no per-example deadline (the machine is shared and noisy); `HYPOTHESIS_PROFILE=thorough` for a
larger budget."""
import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", derandomize=True, deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", derandomize=True, deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

# No column cache (model/column_cache.py) unless a test sets one up: every load is a real load,
# and nothing is written under the user's ~/.cache.
os.environ["COMMITSCHED_CACHE"] = "off"


@pytest.fixture
def runs_made(monkeypatch) -> list:
    """The (scheduler name, W) of every simulation `score_trace` makes while the test runs (a
    run shared with another is not made, so it is not listed)."""
    import commitsched.scoring as scoring
    made: list = []
    real = scoring._run_one

    def counting(trace_, sched, w, *rest):
        made.append((sched.name, w))
        return real(trace_, sched, w, *rest)

    monkeypatch.setattr(scoring, "_run_one", counting)
    return made
