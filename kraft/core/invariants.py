"""Violations and the invariant runner, shared by every protocol, the simulator, the Hypothesis
machines and the trace checker.  An invariant is a named function of a projected state (the
spec's variables, in the spec's vocabulary) returning the violations it found."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import attrs


@attrs.frozen
class Violation:
    invariant: str
    message: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.message}"


@attrs.frozen
class Invariant:
    """``name`` as in the spec; ``check(state) -> list[Violation]`` for a state invariant, or
    ``check=None`` for a history invariant (one that needs earlier states: the protocol's monitor
    checks it, e.g. ``kraft.quorum.invariants.Monitor``); ``doc`` what it protects."""

    name: str
    check: Callable[[dict[str, Any]], list[Violation]] | None = None
    doc: str = ""

    @property
    def history(self) -> bool:
        return self.check is None


def check_invariants(invariants: Iterable[Invariant], state: dict[str, Any]) -> list[Violation]:
    """Run every invariant over one projected state; the violations in declaration order."""
    out: list[Violation] = []
    for inv in invariants:
        if inv.check is not None:
            out += inv.check(state)
    return out


class InvariantViolation(AssertionError):
    """Raised by drivers when an invariant fails; names the invariant, the event and the state."""

    def __init__(self, violation: Violation, event: int | None = None, summary: str = "",
                 violations: list[Violation] | None = None) -> None:
        self.violation = violation
        self.violations = violations or [violation]
        self.invariant = violation.invariant
        self.event = event
        self.summary = summary
        where = f" after event {event}" if event is not None else ""
        more = "".join(f"\nalso: {v}" for v in self.violations if v is not violation)
        super().__init__(f"invariant {violation.invariant} violated{where}: {violation.message}{more}\n{summary}")
