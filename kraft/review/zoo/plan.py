"""What a zoo run does: the protocols, the rows (the control and each declared variant), the tasks
that fill them, the sizes the budget allows (``Plan``) and the one deadline (``Budget``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterable

import attrs

from kraft.core.declaration import Protocol, Variant
from kraft.protocols import declarations
from kraft.review.zoo.verdict import Row

# The Hypothesis stateful test file of each protocol, which the zoo's Hypothesis cell runs (the
# test layout, not the protocol's vocabulary: when a test file moves, this is the line to change).
HYPOTHESIS_FILES = {
    "kraft": "tests/quorum/test_stateful.py",
    "groups": "tests/groups/test_group_stateful.py",
    "replication": "tests/replication/test_stateful.py",
    "consumer-protocol": "tests/groups/consumer_protocol/test_stateful.py",
}

# the jobs of a task (ROW: the chain of one row, as a cluster runs it)
CHAIN, ROW, HYPOTHESIS, TLC = "chain", "row", "hypothesis", "tlc"


class Budget:
    """One deadline shared by every task (``None``: no limit)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.deadline = None if seconds is None else self.start + seconds
        self.exhausted = False

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def out(self, reserve: float = 1.0) -> bool:
        r = self.remaining()
        if r is not None and r < reserve:
            self.exhausted = True
            return True
        return False

    def elapsed(self) -> float:
        return time.monotonic() - self.start


@attrs.define
class Plan:
    """What one zoo run does (derived from the budget)."""

    seeds: int = 2
    steps: int = 800
    after_violation: int = 200
    max_examples: int | None = None  # cap on Hypothesis examples (None: the tests' own budgets)
    shrink: bool = True              # False: report Hypothesis's first falsifying example unshrunk
    spark: bool = True
    # check.json documents of earlier `kraft check` runs whose runs stand in for the zoo's own TLC
    # runs (a run of variant V: V's cell; a run of a spec's ``small`` size without variant: its control)
    reuse_tlc: tuple[Path, ...] = ()
    workers: int = 2
    # seconds of linearizability search per history in the zoo's audit: a variant's history that
    # the search cannot refute quickly (an append-log with divergent offsets: minutes) is decided
    # by its Kafka anomalies, and the control's valid histories are decided in milliseconds
    lin_budget: float = 20.0

    @classmethod
    def for_budget(cls, budget: float | None, **kw: Any) -> "Plan":
        # measured on the shared 2-core machine: conformance costs about as much per trace event
        # as everything else together, so seeds and steps shrink first
        if budget is None:
            return cls(**kw)
        if budget >= 900:
            return cls(max_examples=1000, **kw)
        if budget >= 300:
            # 600 examples: StaleAlterPartitionRejoin's search needs about 550
            return cls(seeds=1, max_examples=600, shrink=False, **kw)
        return cls(seeds=1, steps=500, after_violation=100, max_examples=100, shrink=False, **kw)

    def to_json(self) -> dict[str, Any]:
        """The sizes zoo.json records (not where outputs go nor how many workers ran)."""
        return {"seeds": self.seeds, "steps": self.steps, "after_violation": self.after_violation,
                "lin_budget": self.lin_budget, "max_examples": self.max_examples, "shrink": self.shrink,
                "spark": self.spark}


@attrs.define
class Task:
    """One unit of work: ``chain`` (simulate every row, then audit and conform), ``row`` (the same
    chain for the one row of ``variant``, or of the control without one), ``hypothesis`` (one
    protocol's pytest run) or ``tlc`` (one TLC run: of ``variant``, or the control without one)."""

    name: str
    job: str
    protocol: Protocol | None = None
    variant: Variant | None = None

    def keys(self) -> list[tuple[str, str | None]] | None:
        """The rows whose cells this task fills in (None: every row)."""
        if self.job == CHAIN:
            return None
        assert self.protocol is not None
        if self.job == HYPOTHESIS:
            return [(self.protocol.name, None)] + [(self.protocol.name, v.name) for v in self.protocol.variants]
        return [(self.protocol.name, self.variant.name if self.variant is not None else None)]


def select_protocols(names: Iterable[str]) -> list[Protocol]:
    """The declared protocols named (by name or spec module; none named: all). ValueError names an
    unknown one."""
    all_ = declarations()
    names = list(names)
    if not names:
        return all_
    out = []
    for n in names:
        match = [p for p in all_ if n in (p.name, p.spec_module)]
        if not match:
            raise ValueError(f"unknown protocol {n!r} (known: {', '.join(p.name for p in all_)})")
        out.extend(m for m in match if m not in out)
    return out


def rows(protocols: list[Protocol]) -> list[Row]:
    """The matrix's rows, empty: each protocol's control row, then one per declared variant."""
    out = []
    for p in protocols:
        out.append(Row(p.name, p.spec_module, None, doc="the correct protocol (control)"))
        out.extend(Row(p.name, p.spec_module, v.name, v.violates, v.doc) for v in p.variants)
    return out


def tasks(protocols: list[Protocol]) -> list[Task]:
    """Every unit of work, most cells per second first: the simulate -> conform -> audit chain
    (two checks of every row), the Hypothesis runs (one per protocol, seconds each when not
    shrinking), the TLC variants, the TLC controls last. The workers take them in this order."""
    out = [Task("simulate, conform, audit", CHAIN)]
    out += [Task(f"hypothesis {p.name}", HYPOTHESIS, p) for p in protocols]
    out += [Task(f"tlc {v.name}", TLC, p, v) for p in protocols for v in p.variants]
    out += [Task(f"tlc control {p.spec_module}", TLC, p) for p in protocols]
    return out


def cluster_tasks(protocols: list[Protocol]) -> list[Task]:
    """The tasks of a zoo on a cluster, each a Spark task: the chain split into one task per row
    (a row's simulate -> audit -> conform needs no other row), then the Hypothesis and TLC tasks
    as locally."""
    out = [Task(f"simulate, audit, conform {p.name} {v.name if v else 'control'}", ROW, p, v)
           for p in protocols for v in (None, *p.variants)]
    return out + [t for t in tasks(protocols) if t.job != CHAIN]


def declared_unobservable(v: Variant | None, check: str) -> str:
    """Why ``check`` cannot see variant ``v`` by construction ("" if it can, or for the control)."""
    if v is None:
        return ""
    return str(v.unobservable.get(check, ""))
