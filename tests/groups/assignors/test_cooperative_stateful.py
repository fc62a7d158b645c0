"""A consumer group driven through many rebalances with the cooperative sticky assignor
(Hypothesis stateful test): members join, leave, change subscriptions, topics grow; every
rebalance must respect KIP-429 (a partition is never given to one member while another still
owns it) and follow-up rebalances must settle, within 4, on a valid, balanced assignment in
which every subscribed partition is owned. A second machine runs the same steps against an
assignor that does not hold back transferring partitions and must be caught."""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kraft.groups.assignors import CooperativeStickyAssignor, StickyAssignor, Subscription, TopicPartition

from tests import examples
from .helpers import problems

TOPICS = ["orders", "payments", "t\u00e9", "z"]
MEMBERS = [f"consumer-{i}" for i in range(8)] + ["\u4e2d-1", "A"]


class CooperativeGroup(RuleBasedStateMachine):
    assignor_cls: type = CooperativeStickyAssignor

    @initialize(counts=st.lists(st.integers(1, 6), min_size=len(TOPICS), max_size=len(TOPICS)))
    def setup(self, counts):
        self.ppt = dict(zip(TOPICS, counts))
        self.topics: dict[str, tuple[str, ...]] = {}
        self.owned: dict[str, list[TopicPartition]] = {}
        self.generation = 0
        self.settled = True

    def _rebalance_once(self) -> bool:
        """One JoinGroup/SyncGroup round. Returns True when something was revoked."""
        self.generation += 1
        subs = {m: Subscription(self.topics[m], self.owned[m], self.generation - 1) for m in self.topics}
        result = self.assignor_cls().assign(dict(self.ppt), subs)
        revoked_any = False
        for m, parts in result.items():
            for other, owned in self.owned.items():
                if other != m:
                    clash = set(parts) & set(owned)
                    assert not clash, f"gen {self.generation}: {sorted(map(str, clash))} given to {m} " \
                                      f"while {other} still owns them"
            revoked_any |= bool(set(self.owned[m]) - set(parts))
        self.owned = {m: list(result[m]) for m in result}
        return revoked_any

    def _rebalance(self):
        rounds = 0
        while self._rebalance_once():
            rounds += 1
            assert rounds <= 4, "no convergence within 4 follow-up rebalances"
        found = problems({m: Subscription(t) for m, t in self.topics.items()}, self.owned, self.ppt)
        assert not found, found

    @rule(member=st.sampled_from(MEMBERS), topics=st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
    def join(self, member, topics):
        if member not in self.topics:
            self.topics[member] = tuple(topics)
            self.owned[member] = []
            self._rebalance()

    @rule(data=st.data())
    def leave(self, data):
        if self.topics:
            m = data.draw(st.sampled_from(sorted(self.topics)))
            del self.topics[m]
            del self.owned[m]
            self._rebalance()

    @rule(data=st.data(), topics=st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
    def resubscribe(self, data, topics):
        if self.topics:
            m = data.draw(st.sampled_from(sorted(self.topics)))
            self.topics[m] = tuple(topics)
            # the member drops partitions of topics it left before rejoining (ConsumerCoordinator)
            self.owned[m] = [p for p in self.owned[m] if p.topic in topics]
            self._rebalance()

    @rule(topic=st.sampled_from(TOPICS), extra=st.integers(1, 3))
    def add_partitions(self, topic, extra):
        self.ppt[topic] += extra
        self._rebalance()

    @invariant()
    def every_partition_has_at_most_one_owner(self):
        if hasattr(self, "owned"):
            flat = [p for ps in self.owned.values() for p in ps]
            assert len(flat) == len(set(flat))


TestCooperativeGroup = CooperativeGroup.TestCase
TestCooperativeGroup.settings = examples.STATEFUL(stateful_step_count=12)


# the examples the search for the broken variant may use: a ceiling, not a count (it stops at the
# first failure)
SEARCH_BUDGET = 200


class EagerHandoverGroup(CooperativeGroup):
    """Broken variant: the sticky result handed out as-is under the cooperative protocol."""
    assignor_cls = StickyAssignor


def test_stateful_check_catches_handover_without_revocation():
    with pytest.raises(AssertionError, match="still owns"):
        from hypothesis.stateful import run_state_machine_as_test
        run_state_machine_as_test(EagerHandoverGroup, settings=settings(
            max_examples=SEARCH_BUDGET, stateful_step_count=12, database=None, phases=[Phase.generate]))
