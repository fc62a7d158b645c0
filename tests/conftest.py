"""Shared pytest configuration.

Hypothesis profiles:
  ci   derandomized, no deadline: CI is deterministic (selected when CI is set, and by default)
  dev  random seeds, more examples: for local bug hunting (HYPOTHESIS_PROFILE=dev)
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    deadline=None,
    max_examples=500,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
