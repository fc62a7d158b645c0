"""The Hypothesis rule-based state machine over a hand-stepped replication cluster
(``kraft.replication.cluster.Cluster``).

Rules are the spec's nondeterminism: deliver or drop any message in flight, take a node's enabled
internal actions (replay, fetch, shrink, complete, flush, heartbeat, session timeout), advance the
virtual clock, produce with acks -1/0/1, crash (unclean shutdown losing the unflushed tail),
restart (with or without the disk), controlled shutdown, a forced session timeout (fencing).  Every
invariant is checked after every step (``Cluster.check``); the teardown restarts every broker, runs
to quiescence and checks that every acks=all-acknowledged record is readable from the current
leader (in its log below its high watermark).
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kraft.replication.cluster import Cluster
from kraft.replication.config import ReplicationConfig
from kraft.replication.invariants import has_at
from kraft.replication.messages import CONTROLLER
from kraft.replication.protocol import PROTOCOL
from tests.replication import stories

INDEX = st.integers(min_value=0, max_value=63)


class AckedNotReadable(AssertionError):
    """End of run: an acks=all-acknowledged record is not readable from the current leader."""

    invariant = "AckedReadableFromLeader"


def check_acked_readable(c: Cluster) -> None:
    lid = c.leader()
    if lid == -1:
        return  # no leader (every ISR/ELR member lost): unavailable, which Kafka allows
    br = c.brokers[lid]
    for a in sorted(c.ghost.acked):
        if not (a[0] < br.high_watermark and has_at(tuple(br.entries), a)):
            raise AckedNotReadable(f"acked record (offset {a[0]}, epoch {a[1]}, value {a[2]}) not readable from "
                                   f"leader {lid}:\n{c.describe()}")


def make_machine(config: ReplicationConfig | None = None, brokers: int = 3, *, settle: bool = True,
                 weights: dict[str, int] | None = None) -> type[RuleBasedStateMachine]:
    """``settle=False`` skips the end-of-run check; ``weights[r]`` registers rule ``r`` that many
    times (0 switches it off) to bias the search for a variant."""
    cfg = config or ReplicationConfig()
    broker_ids = st.integers(min_value=1, max_value=brokers)
    node_ids = st.integers(min_value=0, max_value=brokers)

    class ReplicationMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.c = Cluster(brokers, cfg)

        @initialize()
        def start(self) -> None:
            self.c.check()

        @precondition(lambda self: self.c.pending)
        @rule(i=INDEX)
        def deliver(self, i: int) -> None:
            self.c.deliver(i)

        @precondition(lambda self: self.c.pending)
        @rule()
        def deliver_oldest(self) -> None:
            self.c.deliver(0)

        @precondition(lambda self: self.c.pending)
        @rule(i=INDEX)
        def drop(self, i: int) -> None:
            self.c.drop(i)

        @rule(f=broker_ids)
        def fetch_once(self, f: int) -> None:
            """One whole fetch of ``f`` (request, answer, any AlterPartition round trip)."""
            b = self.c.brokers[f]
            if b.running and b.local_leader in self.c.brokers and b.local_leader != f \
                    and self.c.brokers[b.local_leader].running:
                try:
                    stories.fetch(self.c, f)
                except LookupError:
                    pass  # nothing to fetch now (e.g. a fetch already outstanding)

        @rule(n=broker_ids)
        def replay(self, n: int) -> None:
            stories.replay(self.c, n)

        @rule(n=broker_ids)
        def unfence(self, n: int) -> None:
            if self.c.brokers[n].running and self.c.brokers[n].broker_epoch >= 0:
                stories.unfence(self.c, n)

        @rule(n=node_ids)
        def tick(self, n: int) -> None:
            self.c.tick(n)

        @rule(ms=st.sampled_from([10, 100, 700, 1000]))
        def advance(self, ms: int) -> None:
            self.c.advance(ms)

        @rule(rounds=st.sampled_from([1, 5, 20]))
        def run(self, rounds: int) -> None:
            self.c.run(rounds, 20)

        @rule(n=broker_ids, acks=st.sampled_from([-1, -1, 1, 0]))
        def produce(self, n: int, acks: int) -> None:
            self.c.produce(n, acks)

        @rule(acks=st.sampled_from([-1, 1]))
        def produce_to_leader(self, acks: int) -> None:
            lid = self.c.leader()
            if lid != -1:
                self.c.produce(lid, acks)

        @rule(n=broker_ids)
        def crash(self, n: int) -> None:
            self.c.crash(n)

        @rule()
        def crash_leader(self) -> None:
            lid = self.c.leader()
            if lid != -1:
                self.c.crash(lid)

        @rule(n=broker_ids, disk_loss=st.booleans())
        def restart(self, n: int, disk_loss: bool) -> None:
            self.c.restart(n, disk_loss)

        @rule(n=broker_ids)
        def shutdown(self, n: int) -> None:
            if self.c.brokers[n].running:
                self.c.shutdown(n)

        @rule(n=broker_ids)
        def fence(self, n: int) -> None:
            self.c.fence(n)

        @invariant()
        def spec_invariants(self) -> None:
            self.c.check()

        def teardown(self) -> None:
            if not settle:
                return
            for b in self.c.ids:
                self.c.restart(b)
            self.c.run(150, 20)
            check_acked_readable(self.c)

    for name, weight in (weights or {}).items():
        original = getattr(ReplicationMachine, name)
        if weight == 0:
            setattr(ReplicationMachine, name, None)
        for k in range(1, weight):
            setattr(ReplicationMachine, f"{name}_{k}", original)
    ReplicationMachine.__name__ = "ReplicationMachine" + "".join(n for n in PROTOCOL.variant_names if getattr(cfg, n))
    return ReplicationMachine


__all__ = ["make_machine", "check_acked_readable", "AckedNotReadable", "CONTROLLER"]
