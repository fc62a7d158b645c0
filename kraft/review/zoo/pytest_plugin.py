"""A pytest plug-in for ``kraft zoo``: select one protocol's Hypothesis variant tests and control
tests, and record what each found.

Loaded with ``-p kraft.review.zoo.pytest_plugin`` in a pytest subprocess (``kraft zoo`` starts it
from the repository root) and configured by ``--zoo-config FILE``, a ``PluginConfig`` (config.py)
that the zoo writes; without that option the plug-in does nothing, so the test files need no change.

Selection (``pytest_collection_modifyitems``): for each selected variant, the tests whose id
contains ``caught`` and the variant's name as a parameter; a test outside the ``slow`` mark is
preferred, so the cheapest search that catches it is run. Control tests: those whose id names no
variant and that are not marked ``slow``. Everything else is deselected.

What is recorded: hypothesis.stateful.run_state_machine_as_test is wrapped (before the test modules
import it), so a falsifying example the test itself expects (``pytest.raises``) is still seen:
its size is the number of steps in Hypothesis's notes (``state.rule(...)`` lines, without the
teardown and the machine's ``@invariant`` checks, which Hypothesis prints among them).
Each record: the test id, its role (``variant`` or ``control``), the
variant, the outcome, the seconds of the call, whether a falsifying example was found, its steps,
the first line of the violation, whether it ran a state machine at all (a control test that
did not, e.g. a check of the test's own tables, is not counted) and whether the example cap was
applied.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import hypothesis.stateful as stateful
import pytest
from hypothesis import Phase
from hypothesis import settings as Settings
from hypothesis.stateful import INVARIANT_MARKER

from kraft.review.zoo.config import PluginConfig

_STEP = re.compile(r"^(?:[\w, ]+ = )?state\.(\w+)\(")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--zoo-config", metavar="FILE", default=None,
                     help="kraft zoo: select the variant and control tests and record what each found "
                          "(a JSON file kraft zoo writes)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("zoo_config")
    if path is None:
        return
    try:
        zoo_config = PluginConfig.read(Path(path))
    except ValueError as exc:
        raise pytest.UsageError(f"--zoo-config {exc}") from None
    recorder = Recorder(zoo_config)
    recorder.install()
    config.add_cleanup(recorder.uninstall)
    config.pluginmanager.register(recorder, "kraft-zoo-recorder")


class Recorder:
    """The plug-in's hooks for one configured run, and what the wrapped state machine runs saw."""

    def __init__(self, config: PluginConfig) -> None:
        self.config = config
        self.found: dict[str, dict[str, Any]] = {}        # nodeid -> what the wrapped run raised
        self.role: dict[str, tuple[str, str | None]] = {}  # nodeid -> (role, variant)
        self.current: list[str] = []                       # the test being called
        self.capped: set[str] = set()
        self.ran: set[str] = set()                         # tests that ran a state machine
        self.original: Callable[..., Any] | None = None

    # -- the wrapped run_state_machine_as_test
    def install(self) -> None:
        self.original = stateful.run_state_machine_as_test
        stateful.run_state_machine_as_test = self.run_state_machine_as_test

    def uninstall(self) -> None:
        if self.original is not None:
            stateful.run_state_machine_as_test = self.original

    def run_state_machine_as_test(self, state_machine_factory, *, settings=None, _min_steps=0):  # noqa: ANN001
        assert self.original is not None
        settings = self._settings(settings)
        if self.current:
            self.ran.add(self.current[-1])
        try:
            return self.original(state_machine_factory, settings=settings, _min_steps=_min_steps)
        except BaseException as exc:
            if self.current and not isinstance(exc, (KeyboardInterrupt, SystemExit)):
                self.found[self.current[-1]] = {"steps": _steps(exc, _invariant_names(state_machine_factory)),
                                                "violation": _first_line(exc)}
            raise

    def _settings(self, settings: Settings | None) -> Settings | None:
        """The test's settings with the config's example cap and, unless shrinking, no shrink phase."""
        cap = self.config.max_examples
        if cap:
            base = settings if settings is not None else Settings.default
            if base.max_examples > cap:
                settings = Settings(base, max_examples=cap)
                if self.current:
                    self.capped.add(self.current[-1])
        if not self.config.shrink:
            base = settings if settings is not None else Settings.default
            settings = Settings(base, phases=[ph for ph in base.phases if ph is not Phase.shrink])
        return settings

    # -- pytest hooks
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        keep = self._variant_tests(items)
        if self.config.control:
            keep += self._control_tests(items)
        kept = set(id(it) for it in keep)
        deselected = [it for it in items if id(it) not in kept]
        items[:] = [it for it in items if id(it) in kept]
        if deselected:
            config.hook.pytest_deselected(items=deselected)

    def _variant_tests(self, items: list[pytest.Item]) -> list[pytest.Item]:
        keep = []
        for v in self.config.selected:
            cands = [it for it in items if "caught" in it.nodeid and v in _param_names(it.nodeid)]
            cands.sort(key=lambda it: it.get_closest_marker("slow") is not None)  # non-slow first
            if cands:
                keep.append(cands[0])
                self.role[cands[0].nodeid] = ("variant", v)
            else:
                self._write({"role": "variant", "variant": v, "test": None, "outcome": "absent"})
        return keep

    def _control_tests(self, items: list[pytest.Item]) -> list[pytest.Item]:
        keep = [it for it in items if it.get_closest_marker("slow") is None
                and not any(v in it.nodeid for v in self.config.variants)]
        for it in keep:
            self.role[it.nodeid] = ("control", None)
        return keep

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):  # noqa: ANN201
        self.current.append(item.nodeid)
        try:
            yield
        finally:
            self.current.pop()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.nodeid not in self.role:
            return
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            role, variant = self.role[report.nodeid]
            found = self.found.get(report.nodeid)
            self._write({"role": role, "variant": variant, "test": report.nodeid, "outcome": report.outcome,
                         "seconds": round(report.duration, 3), "found": found is not None,
                         "steps": found["steps"] if found else None,
                         "violation": found["violation"] if found else None,
                         "machine": report.nodeid in self.ran,
                         "capped": report.nodeid in self.capped,
                         "shrunk": self.config.shrink,
                         "longrepr": (str(report.longrepr).strip().splitlines() or [""])[-1][:300]
                         if report.failed else ""})

    def _write(self, rec: dict[str, Any]) -> None:
        with open(self.config.records, "a") as f:
            f.write(json.dumps(rec) + "\n")
            f.flush()


def _param_names(nodeid: str) -> list[str]:
    m = re.search(r"\[(.*)\]$", nodeid)
    return re.split(r"[-,]", m.group(1)) if m else []


def _invariant_names(factory: Any) -> set[str]:
    """The machine's ``@invariant`` methods (Hypothesis prints their checks among the steps)."""
    names: set[str] = set()
    for klass in getattr(factory, "__mro__", ()):
        names |= {k for k, v in vars(klass).items() if hasattr(v, INVARIANT_MARKER)}
    return names


def _steps(exc: BaseException, invariants: set[str]) -> int | None:
    """Steps of a falsifying example: the rule calls in Hypothesis's notes (``state.<rule>(...)``,
    also as ``x = state.<rule>(...)``), without the teardown and the invariant checks."""
    for e in (exc, *getattr(exc, "exceptions", ())):
        lines = "\n".join(str(n) for n in getattr(e, "__notes__", [])).splitlines()
        names = [m.group(1) for m in map(_STEP.match, lines) if m]
        steps = [n for n in names if n != "teardown" and n not in invariants]
        if names:
            return len(steps)
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
