"""How many examples each Hypothesis test runs, by settings profile, in one place.

A test names its cost class instead of a number: ``@examples.PURE(deadline=None)`` is
``@settings(max_examples=<PURE's count in the loaded profile>, deadline=None)``, and
``examples.STATEFUL.count`` is the number itself. The classes differ in what one example costs;
the profiles in how hard they look:

  dev       a quick local run (the fast tier), random seeds: about a tenth of ci
  ci        what CI runs, derandomized
  thorough  many times ci, random seeds: bug hunting; the long twin of a test (marked ``slow``)
            runs its class's thorough count in every profile

A bug search's budget (the examples a search for a known bug may use before the test fails) is
not a count to scale: the search stops at the bug, so it stays the same in every profile and
lives with the search.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Any

import attrs
from hypothesis import HealthCheck, settings

PROFILES = ("dev", "ci", "thorough")
DEFAULT_PROFILE = "ci"


@attrs.frozen
class Cost:
    """A cost class: its example count in each profile."""

    dev: int
    ci: int
    thorough: int

    @property
    def count(self) -> int:
        """The count in the loaded profile (``ci`` under a profile that is not one of PROFILES)."""
        name = settings.get_current_profile_name().split("-with-")[0]  # the plugin's derived names
        return getattr(self, name if name in PROFILES else DEFAULT_PROFILE)

    def __call__(self, parent: settings | None = None, **kwargs: Any) -> settings:
        """Settings with this class's count, on top of ``parent`` (or the profile) and ``kwargs``."""
        return settings(parent, max_examples=self.count, **kwargs)

    def long(self, parent: settings | None = None, **kwargs: Any) -> settings:
        """Settings for the long twin of a test (marked ``slow``): the thorough count in any profile."""
        return settings(parent, max_examples=self.thorough, **kwargs)


# a test that names no class: Hypothesis's own default count in ci
DEFAULT = Cost(dev=10, ci=100, thorough=1000)
# a function of a small value (a codec, a parser, a compiled loop against its Python twin): about a
# millisecond an example
PURE = Cost(dev=50, ci=500, thorough=5000)
# a small model per example (an assignment, a checker against its brute-force oracle, a graph search,
# a log with crashes): a few milliseconds
MODEL = Cost(dev=30, ci=300, thorough=5000)
# a state machine run of tens of steps (a three-node quorum, a group, cooperative rebalances)
STATEFUL = Cost(dev=10, ci=120, thorough=1500)
# a document or a corpus through a whole reader or pipeline, a replicated partition's machine, a
# quorum without pre-vote: tens to hundreds of milliseconds
HEAVY = Cost(dev=5, ci=60, thorough=2000)
# a corpus of up to thirty histories through a checker and its reference: about a second an example
CORPUS = Cost(dev=5, ci=150, thorough=1500)
# a five-node cluster, a warm-started biased machine, a corpus through two cycle checkers: up to a
# second an example
LARGE = Cost(dev=3, ci=25, thorough=500)
# a Spark job per example: seconds
SPARK = Cost(dev=1, ci=3, thorough=10)


def register_profiles() -> None:
    """Register dev, ci and thorough and load the one HYPOTHESIS_PROFILE names (``ci`` if unset);
    ``--hypothesis-profile`` loads another after this."""
    common: dict[str, Any] = {"deadline": None, "print_blob": True}
    slow_ok = [HealthCheck.too_slow, HealthCheck.data_too_large]
    for name in PROFILES:
        settings.register_profile(name, max_examples=getattr(DEFAULT, name), derandomize=name == "ci",
                                  suppress_health_check=slow_ok, **common)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", DEFAULT_PROFILE))


# the project's packages (pyproject.toml, [tool.importlinter] root_packages)
PROJECT_PACKAGES = ("kraft", "model_check", "traces", "spark_validation")


def pin_constant_pool() -> None:
    """Import every module of the project, once per test process.

    Hypothesis draws some values from a pool of the constants written in the local modules loaded
    so far (``hypothesis.internal.conjecture.providers._get_local_constants``), and grows the pool
    whenever a new one is imported.  Without this, a derandomized search generates different
    examples depending on which tests ran before it in the same worker; with every module loaded
    up front, the pool is the project's whole set from the first example on."""
    for root in PROJECT_PACKAGES:
        package = importlib.import_module(root)
        for module in pkgutil.walk_packages(package.__path__, root + "."):
            importlib.import_module(module.name)

