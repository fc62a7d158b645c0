"""Shared pytest configuration.

Hypothesis profiles:
  ci   derandomized, no deadline: CI is deterministic (selected when CI is set, and by default)
  dev  random seeds, more examples: for local bug hunting (HYPOTHESIS_PROFILE=dev)
"""

import os

import pytest

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


def pytest_addoption(parser: "pytest.Parser") -> None:
    parser.addoption("--rewrite", action="store_true", default=False,
                     help="datadriven scenario files: write the produced output back as the golden output")


@pytest.fixture
def rewrite(request: "pytest.FixtureRequest") -> bool:
    """True under ``pytest --rewrite`` (kraft.core.datadriven regenerates the golden files)."""
    return bool(request.config.getoption("--rewrite"))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # one worker runs every Spark test (--dist loadgroup): one Spark JVM per run, not one per worker
    for item in items:
        if item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))
