"""A pytest plugin for ``kraft zoo``: select one protocol's Hypothesis variant tests and control
tests, and record what each found.

Loaded with ``-p kraft.review.zoo_pytest`` in a pytest subprocess (``kraft zoo`` starts it from the
repository root). It is driven by environment variables, so the test files need no change:

  KRAFT_ZOO_OUT           where to append one JSON line per finished test (required; without it
                          the plugin does nothing)
  KRAFT_ZOO_VARIANTS      comma list of the protocol's variant names
  KRAFT_ZOO_ONLY          comma list of variants to select (unset: all of KRAFT_ZOO_VARIANTS; empty: none)
  KRAFT_ZOO_CONTROL       "1": also select the control tests (no variant name in their id, not slow)
  KRAFT_ZOO_MAX_EXAMPLES  cap every Hypothesis run at this many examples (a budget)
  KRAFT_ZOO_NO_SHRINK     "1": report the first falsifying example unshrunk (a budget: shrinking
                          often takes longer than finding)

Selection (``pytest_collection_modifyitems``): for each variant, the tests whose id contains
``caught`` and the variant's name as a parameter; a test outside the ``slow`` mark is preferred, so
the cheapest search that catches it is run. Control tests: those whose id names no variant and
that are not marked ``slow``. Everything else is deselected.

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
import os
import re
from typing import Any

import pytest

_OUT = os.environ.get("KRAFT_ZOO_OUT")
_found: dict[str, dict[str, Any]] = {}   # nodeid -> what the wrapped run raised
_role: dict[str, tuple[str, str | None]] = {}  # nodeid -> (role, variant)
_current: list[str] = []
_capped: set[str] = set()
_ran: set[str] = set()  # tests that ran a state machine


def _env_list(name: str) -> list[str]:
    return [x for x in os.environ.get(name, "").split(",") if x]


_STEP = re.compile(r"^(?:[\w, ]+ = )?state\.(\w+)\(")


def _invariant_names(factory: Any) -> set[str]:
    """The machine's ``@invariant`` methods (Hypothesis prints their checks among the steps)."""
    from hypothesis.stateful import INVARIANT_MARKER

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


def _install_wrapper() -> None:
    import hypothesis.stateful as stateful

    original = stateful.run_state_machine_as_test
    if getattr(original, "_kraft_zoo", False):
        return
    cap = int(os.environ.get("KRAFT_ZOO_MAX_EXAMPLES", "0") or 0)
    no_shrink = os.environ.get("KRAFT_ZOO_NO_SHRINK") == "1"

    def run_state_machine_as_test(state_machine_factory, *, settings=None, _min_steps=0):  # noqa: ANN001
        from hypothesis import Phase
        from hypothesis import settings as Settings

        if cap:
            base = settings if settings is not None else Settings.default
            if base.max_examples > cap:
                settings = Settings(base, max_examples=cap)
                if _current:
                    _capped.add(_current[-1])
        if no_shrink:
            base = settings if settings is not None else Settings.default
            settings = Settings(base, phases=[ph for ph in base.phases if ph is not Phase.shrink])
        if _current:
            _ran.add(_current[-1])
        try:
            return original(state_machine_factory, settings=settings, _min_steps=_min_steps)
        except BaseException as exc:
            if _current and not isinstance(exc, (KeyboardInterrupt, SystemExit)):
                _found[_current[-1]] = {"steps": _steps(exc, _invariant_names(state_machine_factory)),
                                       "violation": _first_line(exc)}
            raise

    run_state_machine_as_test._kraft_zoo = True  # type: ignore[attr-defined]
    stateful.run_state_machine_as_test = run_state_machine_as_test


def pytest_configure(config: pytest.Config) -> None:
    if _OUT:
        _install_wrapper()


def _param_names(nodeid: str) -> list[str]:
    m = re.search(r"\[(.*)\]$", nodeid)
    return re.split(r"[-,]", m.group(1)) if m else []


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    if not _OUT:
        return
    variants = _env_list("KRAFT_ZOO_VARIANTS")
    raw = os.environ.get("KRAFT_ZOO_ONLY")
    only = variants if raw is None else [x for x in raw.split(",") if x]
    control = os.environ.get("KRAFT_ZOO_CONTROL") == "1"
    keep: list[pytest.Item] = []
    for v in only:
        cands = [it for it in items if "caught" in it.nodeid and v in _param_names(it.nodeid)]
        cands.sort(key=lambda it: it.get_closest_marker("slow") is not None)  # non-slow first
        if cands:
            keep.append(cands[0])
            _role[cands[0].nodeid] = ("variant", v)
        else:
            _write({"role": "variant", "variant": v, "test": None, "outcome": "absent"})
    if control:
        for it in items:
            if it.get_closest_marker("slow") is None and not any(v in it.nodeid for v in variants):
                keep.append(it)
                _role[it.nodeid] = ("control", None)
    kept = set(id(it) for it in keep)
    deselected = [it for it in items if id(it) not in kept]
    items[:] = [it for it in items if id(it) in kept]
    if deselected:
        config.hook.pytest_deselected(items=deselected)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):  # noqa: ANN201
    _current.append(item.nodeid)
    try:
        yield
    finally:
        _current.pop()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not _OUT or report.nodeid not in _role:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        role, variant = _role[report.nodeid]
        found = _found.get(report.nodeid)
        _write({"role": role, "variant": variant, "test": report.nodeid, "outcome": report.outcome,
                "seconds": round(report.duration, 3), "found": found is not None,
                "steps": found["steps"] if found else None,
                "violation": found["violation"] if found else None,
                "machine": report.nodeid in _ran,
                "capped": report.nodeid in _capped,
                "shrunk": os.environ.get("KRAFT_ZOO_NO_SHRINK") != "1",
                "longrepr": (str(report.longrepr).strip().splitlines() or [""])[-1][:300]
                if report.failed else ""})


def _write(rec: dict[str, Any]) -> None:
    assert _OUT is not None
    with open(_OUT, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
