"""A Hypothesis ``RuleBasedStateMachine`` over :class:`kraft.groups.world.GroupWorld`.

Rules are the spec's environment: deliver any in-flight message, drop, duplicate, hold (delay
for as long as Hypothesis likes) and release, advance the clock (heartbeats, leases, session and
rebalance timeouts fire), crash / restart (same instance id) / leave a consumer, poll, commit,
and ``settle`` (deliver FIFO until the group is quiet). After every step the spec's invariants
run over the projections (:func:`GroupWorld.violations`).
"""

from __future__ import annotations

import random

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kraft.groups.coordinator import GroupConfig
from kraft.groups.world import GroupWorld

CLIENTS = ("c1", "c2", "c3")
clients = st.sampled_from(CLIENTS)
index = st.integers(min_value=0, max_value=7)
orders = st.sampled_from(["fifo", "lifo", "random"])


def make_machine(config: GroupConfig) -> type[RuleBasedStateMachine]:
    class GroupMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.world = GroupWorld(config)
            self.held: list = []

        @initialize(settle=st.booleans(), late=st.sampled_from([None, *CLIENTS]))
        def start(self, settle: bool, late: str | None) -> None:
            if late is not None:  # one consumer starts later
                self.world.crash(late)
            self.world.start()
            if settle:
                self.world.settle()

        @rule(i=index)
        def deliver(self, i: int) -> None:
            self.world.deliver(i)

        @rule(n=st.integers(min_value=1, max_value=12))
        def deliver_fifo(self, n: int) -> None:
            for _ in range(n):
                self.world.deliver(0)

        @rule(i=index)
        def drop(self, i: int) -> None:
            self.world.drop(i)

        @rule(i=index)
        def duplicate(self, i: int) -> None:
            self.world.duplicate(i)

        @precondition(lambda self: self.world.pending)
        @rule(i=index)
        def hold(self, i: int) -> None:
            """Delay a message indefinitely (until release)."""
            net = self.world.pending
            self.held.append(net.pop(i % len(net)))
            self.world.narrative.append(f"hold {type(self.held[-1]).__name__}")

        @precondition(lambda self: self.held)
        @rule()
        def release(self) -> None:
            self.world.pending[:0] = self.held
            self.world.narrative.append(f"release {len(self.held)}")
            self.held = []

        @rule(ms=st.sampled_from([1_000, 3_000, 10_000, 31_000]))
        def advance(self, ms: int) -> None:
            self.world.advance(ms)

        @rule(c=clients)
        def crash(self, c: str) -> None:
            self.world.crash(c)
            self.held = [m for m in self.held if not _of(m, c, self.world)]

        @rule(c=clients)
        def restart(self, c: str) -> None:
            self.world.restart(c)

        @rule(c=clients)
        def leave(self, c: str) -> None:
            self.world.leave(c)
            self.held = [m for m in self.held if not _of(m, c, self.world)]

        @rule(c=clients, hold=st.booleans())
        def commit(self, c: str, hold: bool) -> None:
            """commitSync; with ``hold`` the request is delayed until the next release."""
            n = len(self.world.pending)
            self.world.commit(c)
            if hold and len(self.world.pending) > n:
                self.held.append(self.world.pending.pop())
                self.world.narrative.append("hold OffsetCommit")

        @rule(order=orders, seed=st.integers(0, 2**16))
        def settle(self, order: str, seed: int) -> None:
            """Deliver until quiet: FIFO, newest first, or in a random order drawn from ``seed``."""
            self.world.settle(max_steps=200, rng=random.Random(seed), order=order)

        @rule(ms=st.sampled_from([6_000, 12_000, 35_000]), order=orders, seed=st.integers(0, 2**16))
        def run_for(self, ms: int, order: str, seed: int) -> None:
            """A healthy period: heartbeats flow, crashed members' sessions expire."""
            self.world.run_for(ms, rng=random.Random(seed), order=order)

        @invariant()
        def spec_invariants(self) -> None:
            v = self.world.violations()
            assert not v, "\n".join(map(str, v)) + "\nsteps:\n  " + "\n  ".join(_narrative(self.world.narrative))

    GroupMachine.__name__ = f"GroupMachine_{config.protocol.value}"
    return GroupMachine


def _narrative(steps: list[str], n: int = 40) -> list[str]:
    """The last ``n`` steps up to the one that broke an invariant (marked ``VIOLATION``): a rule
    may take many steps after it (settle, run_for)."""
    end = next((i + 1 for i, s in enumerate(steps) if s.startswith("VIOLATION")), len(steps))
    return steps[max(0, end - n):end]


def _of(m, c: str, world: GroupWorld) -> bool:
    """Held messages of a closed connection are lost like the in-flight ones."""
    dest = getattr(m, "source", None) or getattr(m, "dest", None)
    return dest == c and m.conn != world.consumers[c].conn
