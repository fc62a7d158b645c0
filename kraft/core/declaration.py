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
from typing import Any, Callable

import attrs

from kraft.core.invariants import Invariant

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"


def snake(name: str) -> str:
    """``HandleFetchRequest`` -> ``handle_fetch_request`` (the handler naming rule)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@attrs.frozen
class Action:
    """One spec action.

    ``consumes``: the message class it handles (dispatch by type), if any.  ``args``: the spec's
    parameters after the acting node, which are also the keys of a trace step's ``args``.
    ``actor``: which kind of node takes it (a protocol with several kinds of node, e.g.
    ``coordinator``/``consumer``); the node class that declares itself that actor of the protocol
    (``kraft.core.node.Node``) implements it with the method named ``snake(spec)``.  ``handled``:
    False for an action of the environment that no node takes (the network losing a message)."""

    spec: str
    consumes: type | None = None
    args: tuple[str, ...] = ()
    actor: str = "node"
    doc: str = ""
    handled: bool = True

    @property
    def handler_name(self) -> str:
        """The name of the node method taking this action (the handler naming rule)."""
        return snake(self.spec)

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
    --after-violation AFTER [--observers K]`` (``argv``), deterministic per seed.  ``faults`` may
    name targeted faults (``all,kill-leader``, kraft/sim/core.py ``NEMESIS_NAMES``) where the random
    schedule alone rarely reaches the bug; ``observers``: replicas outside the bootstrap voter set,
    for a bug that needs voter changes (KRaft's KIP-853 variants).  ``anomalies``: the Kafka anomaly
    kinds ``kraft audit --checks kafka`` reports for its history (tests/replication/test_audit.py and
    tests/quorum/test_audit.py assert them); ``note``: what happens in the run, for people."""

    seed: int
    steps: int = 2000
    faults: str = "all"
    after_violation: int = 1000
    anomalies: tuple[str, ...] = ()
    note: str = ""
    observers: int = 0

    def argv(self) -> tuple[str, ...]:
        """The ``kraft simulate`` options of this run (add ``--protocol``, ``--variant``, ``--out``)."""
        observers = ("--observers", str(self.observers)) if self.observers else ()
        return ("--seed", str(self.seed), "--steps", str(self.steps), "--faults", self.faults,
                "--after-violation", str(self.after_violation), *observers)


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


class UnboundAction(LookupError):
    """A handler was asked for before the node class implementing its actor was defined."""


@attrs.define
class Protocol:
    """A protocol's vocabulary: its spec module, actions, variables, variants and invariants.

    It names no implementation: each node class binds to it (``bind``, called by
    ``kraft.core.node.Node`` when the class is defined), which ties every action of its actor to
    the method of the same name in snake case, so dispatch goes by function objects."""

    name: str                        # the simulator's / trace header's protocol name
    spec_module: str                 # spec/<spec_module>.tla
    actions: tuple[Action, ...]
    variables: tuple[Variable, ...]
    variants: tuple[Variant, ...]
    invariants: tuple[Invariant, ...] = ()
    constants: tuple[str, ...] = ()  # CONSTANTS of the spec besides the variants
    history_model: str | None = None  # the audit model of its client histories
    _by_spec: dict[str, Action] = attrs.field(init=False, factory=dict)
    _handlers: dict[str, Callable[..., Any]] = attrs.field(init=False, factory=dict)
    _by_handler: dict[Any, Action] = attrs.field(init=False, factory=dict)
    _by_message: dict[type, Action] = attrs.field(init=False, factory=dict)
    _actors: dict[str, type] = attrs.field(init=False, factory=dict)

    def __attrs_post_init__(self) -> None:
        for a in self.actions:
            if a.spec in self._by_spec:
                raise ValueError(f"{self.name}: action {a.spec} declared twice")
            self._by_spec[a.spec] = a
            if a.consumes is not None:
                if a.consumes in self._by_message:
                    raise ValueError(f"{self.name}: two actions consume {a.consumes.__name__}")
                self._by_message[a.consumes] = a

    def bind(self, actor: str, node_class: type) -> None:
        """Tie every handled action of ``actor`` to ``node_class``'s method of its snake-case name."""
        mine = [a for a in self.actions if a.actor == actor and a.handled]
        if not mine:
            raise ValueError(f"{self.name} declares no action of a {actor!r}")
        missing = [a.handler_name for a in mine if not callable(getattr(node_class, a.handler_name, None))]
        if missing:
            raise TypeError(f"{node_class.__qualname__} implements the {actor} of {self.name} but lacks "
                            f"{', '.join(missing)}")
        self._actors[actor] = node_class
        for a in mine:
            fn = getattr(node_class, a.handler_name)
            self._handlers[a.spec] = fn
            self._by_handler[fn] = a

    @property
    def spec_path(self) -> Path:
        return SPEC_DIR / f"{self.spec_module}.tla"

    def action(self, spec: str) -> Action:
        return self._by_spec[spec]

    def has_action(self, spec: str) -> bool:
        return spec in self._by_spec

    def handler(self, action: Action | str) -> Callable[..., Any]:
        """The node method taking ``action`` (its node class must be defined: imported)."""
        spec = action if isinstance(action, str) else action.spec
        try:
            return self._handlers[spec]
        except KeyError:
            a = self._by_spec[spec]
            raise UnboundAction(f"{self.name}: no node class implements the {a.actor} action {spec} "
                                f"(import the module defining it)") from None

    def for_handler(self, handler: Callable[..., Any]) -> Action:
        """The action a handler function takes (bound methods are resolved to their function)."""
        return self._by_handler[getattr(handler, "__func__", handler)]

    def takes(self, handler: Callable[..., Any]) -> bool:
        """Is ``handler`` the handler of a declared action (not a helper outside the spec)?"""
        return getattr(handler, "__func__", handler) in self._by_handler

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

    def variant_constants(self, config: Any) -> dict[str, bool]:
        """Each variant's CONSTANT as ``config`` sets it (its same-named flag)."""
        return {v: getattr(config, v) for v in self.variant_names}

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
