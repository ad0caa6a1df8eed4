"""Shared test settings: hypothesis runs derandomized (the same examples on every machine) with
no per-example deadline (the machine is shared and noisy); `HYPOTHESIS_PROFILE=thorough` for a
larger budget."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", derandomize=True, deadline=None, max_examples=100,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", derandomize=True, deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
