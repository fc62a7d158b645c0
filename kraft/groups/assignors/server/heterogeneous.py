"""Kafka's ``UniformHeterogeneousAssignmentBuilder``: the uniform assignor when subscriptions differ.

Members are numbered in ``memberIds()`` order and every tie is broken by that number, so the
result depends on the group's member order and on nothing else Java iterates:

1. ``maybeRevokePartitions``: each member keeps its partitions of topics it still subscribes to;
2. ``assignRemainingPartitions``: topics sorted by partitions per subscriber (descending), then
   subscriber count (ascending), then topic id (``Uuid.compareTo``); each topic's free partitions,
   ascending, go one by one to its least loaded subscriber (fewest partitions, then lowest number),
   through :class:`_Balancer`, which fills the lowest level of members before the next;
3. ``balance``: over the topics with two or more subscribers, in the same topic order, move
   partitions from the most to the least loaded subscribers until their counts differ by one
   at most; loop over the topics until a whole round moves nothing (at most 16 rounds).
"""

from __future__ import annotations

from .spec import GroupAssignment, GroupSpec, PartitionAssignorError, TopicDescriber, Uuid, topic_subscribers

# ``UniformHeterogeneousAssignmentBuilder.MAX_ITERATION_COUNT``
MAX_ITERATION_COUNT = 16


class _Balancer:
    """``MemberAssignmentBalancer``: two ranges over the subscribers sorted by load, the least
    loaded growing to the right and the most loaded to the left."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.members: list[int] = []

    def initialize(self, members: list[int]) -> int:
        """Sort ``members`` by (load, number); return the spread of their loads."""
        if not members:
            raise ValueError("Cannot balance an empty subscriber list.")
        sizes = self.sizes
        # memberComparator: (load, number); ``members`` ascend by number and the sort is stable
        self.members = sorted(members, key=sizes.__getitem__)
        first, last = sizes[self.members[0]], sizes[self.members[-1]]
        self.least_end = 0
        self.least_count = first - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.members)
        self.most_count = last + 1
        self.next_most = len(self.members) - 1
        return last - first

    def next_least_loaded(self) -> int:
        """``nextLeastLoadedMember``: the member to give the next partition to."""
        if self.next_least >= self.least_end:
            self.least_count += 1
            members, sizes = self.members, self.sizes
            while self.least_end < len(members) and sizes[members[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        m = self.members[self.next_least]
        self.next_least += 1
        return m

    def next_most_loaded(self) -> int:
        """``nextMostLoadedMember``: the member to take a partition from, or -1."""
        members, sizes = self.members, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[members[self.most_start - 1]]
            else:
                self.most_count -= 1
            while self.most_start > 0 and sizes[members[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        m = members[self.next_most]
        self.next_most -= 1
        return m

    def exclude_most_loaded(self) -> None:
        """``excludeMostLoadedMember``: swap the last returned member to the end of the range
        and shrink the range."""
        members = self.members
        i = self.next_most + 1
        members[i], members[self.most_end - 1] = members[self.most_end - 1], members[i]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


class _Builder:
    """The builder's state: members by number, per-topic owner arrays, member loads."""

    def __init__(self, group: GroupSpec, topics: TopicDescriber) -> None:
        self.group = group
        self.topics = topics
        self.member_ids = list(group.members)
        self.sizes = [0] * len(self.member_ids)
        self.subscribers = topic_subscribers(group, self.member_ids)  # topicSubscribers
        for t in self.subscribers:
            if topics.num_partitions(t) == -1:
                raise PartitionAssignorError(f"Members are subscribed to topic {t} which doesn't exist in "
                                             f"the topic metadata.")
        self.owners = {t: [-1] * topics.num_partitions(t) for t in self.subscribers}
        self.target: GroupAssignment = {}

    def topic_order(self, topic_ids) -> list[Uuid]:
        """``sortTopicIds``: partitions per subscriber descending, subscribers ascending, id."""
        def key(t: Uuid) -> tuple[float, int, Uuid]:
            n, s = self.topics.num_partitions(t), len(self.subscribers[t])
            return (-(n / s), s, t)
        return sorted(topic_ids, key=key)

    def revoke_unsubscribed(self) -> None:
        """``maybeRevokePartitions``."""
        subscribed_sets: dict[int, frozenset[Uuid]] = {}
        for i, m in enumerate(self.member_ids):
            spec = self.group.members[m]
            kept: dict[Uuid, set[int]] = {}
            if spec.assignment:
                key = id(spec.subscribed_topic_ids)  # members often share one subscription tuple
                subscribed = subscribed_sets.get(key)
                if subscribed is None:
                    subscribed = subscribed_sets[key] = frozenset(spec.subscribed_topic_ids)
                for t, ps in spec.assignment.items():
                    if t in subscribed:
                        self.sizes[i] += len(ps)
                        owners = self.owners[t]
                        for p in ps:
                            owners[p] = i
                        kept[t] = set(ps)
            self.target[m] = kept

    def assign_remaining(self) -> None:
        """``computeUnassignedPartitions`` + ``assignRemainingPartitions``."""
        free = {}
        for t, owners in self.owners.items():
            ps = [p for p, o in enumerate(owners) if o == -1]
            if ps:
                free[t] = ps
        balancer = _Balancer(self.sizes)
        for t in self.topic_order(free):
            balancer.initialize(self.subscribers[t])
            for p in free[t]:
                self.assign(t, p, balancer.next_least_loaded())

    def balance(self) -> None:
        """``balance`` + ``balanceTopics``."""
        movable = [t for t in self.subscribers if len(self.subscribers[t]) >= 2]
        if not movable:
            return
        order = self.topic_order(movable)
        balancer = _Balancer(self.sizes)
        last = -1
        for _ in range(MAX_ITERATION_COUNT):
            for i, t in enumerate(order):
                if i == last:
                    return
                if self.balance_topic(t, balancer) > 0 or last == -1:
                    last = i

    def balance_topic(self, t: Uuid, balancer: _Balancer) -> int:
        """``balanceTopic``: partitions moved from the most to the least loaded subscribers."""
        loads = [self.sizes[i] for i in self.subscribers[t]]
        if max(loads) - min(loads) <= 1:  # what initialize() returns: balanced, nothing to do
            return 0
        balancer.initialize(self.subscribers[t])
        owners = self.owners[t]
        # the topic's partitions grouped by owner (owner, then partition): each member's slice
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        moved = 0
        while not balancer.is_balanced():
            giver = balancer.next_most_loaded()
            while giver != -1 and (giver not in end or end[giver] - start[giver] <= 0):
                balancer.exclude_most_loaded()
                giver = balancer.next_most_loaded()
            if giver == -1:
                break
            end[giver] -= 1
            p = partitions[end[giver]]
            taker = balancer.next_least_loaded()
            if balancer.is_balanced():
                break
            self.assign(t, p, taker)
            moved += 1
        return moved

    def assign(self, t: Uuid, p: int, member: int) -> None:
        """``assignPartition``: move ``t-p`` to ``member``, updating owners and loads."""
        owners = self.owners[t]
        old = owners[p]
        if old != -1:
            mine = self.target[self.member_ids[old]]
            ps = mine.get(t)
            if ps is not None:
                ps.discard(p)
                if not ps:
                    del mine[t]
            self.sizes[old] -= 1
        self.target[self.member_ids[member]].setdefault(t, set()).add(p)
        owners[p] = member
        self.sizes[member] += 1


def build_heterogeneous(group: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
    """``UniformHeterogeneousAssignmentBuilder.build``."""
    b = _Builder(group, topics)
    if not b.subscribers:
        return {}
    b.revoke_unsubscribed()
    b.assign_remaining()
    b.balance()
    return b.target
