"""The types of a protocol declaration (``kraft/<protocol>/protocol.py``).

A declaration is the one place that spells a protocol's spec vocabulary in Python: its TLA+
module, its actions (spec name, the handler function, what input it consumes, its arguments),
its spec variables with their projections, its bug variants with the invariant each must break,
and its invariants.  The node's dispatch, the simulator's recorder, the conformance glue
(``traces/protocols``), ``kraft check --all-variants`` and the review read it; a test
(tests/core/test_declarations.py) parses the ``.tla`` and fails when spec and declaration disagree.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from kraft.core.invariants import Invariant

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"


def snake(name: str) -> str:
    """``HandleFetchRequest`` -> ``handle_fetch_request`` (the handler naming rule)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@attrs.frozen
class Action:
    """One spec action.

    ``handler``: the implementation function taking it (``None`` for an action of the environment,
    e.g. the network losing a message); its ``__name__`` is ``snake(spec)``.  ``consumes``: the
    message class it handles (dispatch by type), if any.  ``args``: the spec's parameters after the
    acting node, which are also the keys of a trace step's ``args``.  ``actor``: which kind of node
    takes it (a protocol with several kinds of node, e.g. ``coordinator``/``consumer``)."""

    spec: str
    handler: Callable[..., Any] | None = None
    consumes: type | None = None
    args: tuple[str, ...] = ()
    actor: str = "node"
    doc: str = ""

    @property
    def trace(self) -> str:
        """The name a trace line gives this action: the spec name (one vocabulary)."""
        return self.spec


@attrs.frozen
class Variable:
    """A spec variable; ``project`` (if any) computes it from the implementation.  ``spec_only``
    variables (ghosts, model bounds, the network when the driver owns it) have no projection here."""

    name: str
    project: Callable[..., Any] | None = None
    spec_only: bool = False
    doc: str = ""


@attrs.frozen
class SimRun:
    """One pinned simulator run of a bug variant whose client history shows the bug to the audit:
    ``kraft simulate --protocol P --variant V --seed SEED --steps STEPS --faults FAULTS
    --after-violation AFTER`` (``argv``), deterministic per seed.  ``faults`` may name targeted
    faults (``all,kill-leader``, kraft/sim/core.py ``NEMESIS_NAMES``) where the random schedule
    alone rarely reaches the bug.  ``anomalies``: the Kafka anomaly kinds ``kraft audit --checks
    kafka`` reports for its history (tests/replication/test_audit.py asserts them); ``note``: what
    happens in the run, for people."""

    seed: int
    steps: int = 2000
    faults: str = "all"
    after_violation: int = 1000
    anomalies: tuple[str, ...] = ()
    note: str = ""

    def argv(self) -> tuple[str, ...]:
        """The ``kraft simulate`` options of this run (add ``--protocol``, ``--variant``, ``--out``)."""
        return ("--seed", str(self.seed), "--steps", str(self.steps), "--faults", self.faults,
                "--after-violation", str(self.after_violation))


@attrs.frozen
class Variant:
    """A historical bug as a switch: a boolean CONSTANT of the spec and a same-named field of the
    implementation's config; ``violates`` is the invariant or property TLC must report."""

    name: str
    violates: str
    doc: str = ""
    size: str = "small"
    # why TLC does not catch it yet (empty: it does, and the spec's manifest lists it); a known gap
    # is declared, not hidden, so the spec/declaration check still covers its CONSTANT
    not_caught_by_tlc: str = ""
    # checks that cannot see this bug by construction, each with why (check -> reason; checks:
    # "tlc", "hypothesis", "conform", "audit"); `kraft zoo` shows "not observable" there, not "missed"
    unobservable: dict[str, str] = attrs.field(factory=dict, hash=False)
    # simulator runs whose client histories the audit flags for this variant (empty: none pinned;
    # a variant the audit cannot see says why in ``unobservable["audit"]`` instead)
    sim: tuple[SimRun, ...] = ()


@attrs.define
class Protocol:
    name: str                        # the simulator's / trace header's protocol name
    spec_module: str                 # spec/<spec_module>.tla
    actions: tuple[Action, ...]
    variables: tuple[Variable, ...]
    variants: tuple[Variant, ...]
    invariants: tuple[Invariant, ...] = ()
    constants: tuple[str, ...] = ()  # CONSTANTS of the spec besides the variants
    history_model: str | None = None  # the audit model of its client histories
    _by_spec: dict[str, Action] = attrs.field(init=False, factory=dict)
    _by_handler: dict[Any, Action] = attrs.field(init=False, factory=dict)
    _by_message: dict[type, Action] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        for a in self.actions:
            if a.spec in self._by_spec:
                raise ValueError(f"{self.name}: action {a.spec} declared twice")
            self._by_spec[a.spec] = a
            if a.handler is not None:
                if a.handler.__name__ != snake(a.spec):
                    raise ValueError(f"{self.name}: handler {a.handler.__qualname__} of {a.spec} must be "
                                     f"named {snake(a.spec)}")
                self._by_handler[a.handler] = a
            if a.consumes is not None:
                self._by_message[a.consumes] = a

    @property
    def spec_path(self) -> Path:
        return SPEC_DIR / f"{self.spec_module}.tla"

    def action(self, spec: str) -> Action:
        return self._by_spec[spec]

    def has_action(self, spec: str) -> bool:
        return spec in self._by_spec

    def for_handler(self, handler: Callable[..., Any]) -> Action:
        """The action a handler function takes (bound methods are resolved to their function)."""
        return self._by_handler[getattr(handler, "__func__", handler)]

    def for_message(self, message_type: type) -> Action:
        return self._by_message[message_type]

    def spec_name(self, handler: Callable[..., Any]) -> str:
        return self.for_handler(handler).spec

    @property
    def variant_names(self) -> tuple[str, ...]:
        return tuple(v.name for v in self.variants)

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def variable_names(self, projectable_only: bool = False) -> tuple[str, ...]:
        return tuple(v.name for v in self.variables if not (projectable_only and v.spec_only))

    def invariant_names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.invariants)

    @property
    def drop_message(self) -> str:
        """The spec action of the network losing a message (the network action taking ``m``)."""
        for a in self.actions:
            if a.actor == "network" and a.args == ("m",):
                return a.spec
        raise KeyError(f"{self.name} declares no network action losing a message")


def declarations() -> list[Protocol]:
    """Every protocol declared in this build (imported lazily: protocol packages import this)."""
    import importlib

    out = []
    for mod in ("kraft.quorum.protocol", "kraft.groups.protocol", "kraft.replication.protocol"):
        try:
            out.append(importlib.import_module(mod).PROTOCOL)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise
    return out


def by_name(name: str, among: Iterable[Protocol] | None = None) -> Protocol:
    for p in among if among is not None else declarations():
        if p.name == name or p.spec_module == name:
            return p
    raise KeyError(name)
