"""Shared pytest configuration.

Hypothesis profiles (tests/examples.py holds their example counts), chosen by
``--hypothesis-profile NAME`` or ``HYPOTHESIS_PROFILE=NAME``:
  ci        derandomized, no deadline: what CI runs, and the default
  dev       fewer examples, random seeds: the fast tier (``./kraft.sh test --fast``)
  thorough  many more examples, random seeds: bug hunting

Plugins: tests/no_jvm.py (KRAFT_NO_JVM=1: a test that starts java fails the run),
tests/durations_file.py (``--durations-file=PATH``).
"""

import pytest

from tests import examples

pytest_plugins = ["tests.no_jvm", "tests.durations_file"]

examples.register_profiles()
examples.pin_constant_pool()


def pytest_addoption(parser: "pytest.Parser") -> None:
    parser.addoption("--rewrite", action="store_true", default=False,
                     help="datadriven scenario files: write the produced output back as the golden output")


@pytest.fixture
def rewrite(request: "pytest.FixtureRequest") -> bool:
    """True under ``pytest --rewrite`` (kraft.core.datadriven regenerates the golden files)."""
    return bool(request.config.getoption("--rewrite"))


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: "pytest.TempPathFactory"):
    """The master URL of one Spark standalone cluster (two workers of one core each) shared by the
    cluster tests of a run: they are Spark tests, so one pytest worker runs them all
    (tests/spark_cluster.py starts it; it stops when the run ends)."""
    from spark_validation.session import java_problem
    from tests.spark_cluster import standalone

    if java_problem():
        pytest.skip(java_problem())
    with standalone(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1) as url:
        yield url


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # one worker runs every Spark test (--dist loadgroup): one Spark JVM per run, not one per worker
    for item in items:
        if item.get_closest_marker("spark"):
            item.add_marker(pytest.mark.xdist_group("spark"))
