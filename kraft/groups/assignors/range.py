"""``RangeAssignor`` (``range``): per topic, contiguous ranges over the sorted members.

For each topic, the members subscribed to it are sorted (static members by
``group.instance.id`` first, then dynamic members by member id) and partition ``0..n-1`` are
cut into ranges: every member gets ``n // m`` partitions and the first ``n % m`` members one
more. Topics are processed in the iteration order of Kafka's ``HashMap`` of topics, so a
member's list is the concatenation of its ranges in that order (this is what Kafka returns,
e.g. ``[t1-0, t1-1, t2-0, t2-1]``).

Rack-aware assignment (KIP-881) needs replica racks per partition; pass them as
``partition_racks`` (``{TopicPartition: set of racks}``) and give members a ``rack``. Without
them the assignment is the classic one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kraft.client.java import java_hashmap_order

from .base import member_sort_key, members_in_java_order
from .types import Subscription, TopicPartition, tp_key, validate_inputs


class _TopicState:
    """One topic's progress (``RangeAssignor.TopicAssignmentState``)."""

    def __init__(self, topic: str, num_partitions: int, members: list[str],
                 consumer_racks: dict[str, str], partition_racks: Mapping[TopicPartition, frozenset[str]] | None,
                 prefer_rack_aware: bool) -> None:
        self.topic = topic
        self.consumers: dict[str, str | None] = {}
        for m in members:  # LinkedHashMap, duplicates keep the first
            self.consumers.setdefault(m, consumer_racks.get(m))
        self.unassigned: dict[TopicPartition, None] = {TopicPartition(topic, i): None for i in range(num_partitions)}
        self.assigned_count = {c: 0 for c in self.consumers}
        n = len(self.consumers)
        self.per_consumer = num_partitions // n if n else 0
        self.remaining_extra = num_partitions % n if n else 0
        all_consumer_racks = {consumer_racks[m] for m in members if m in consumer_racks}
        self.partition_racks: dict[TopicPartition, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if all_consumer_racks:
            for p in self.unassigned:
                racks = frozenset((partition_racks or {}).get(p, frozenset()))
                self.partition_racks[p] = racks
                all_partition_racks |= racks
        self.needs_rack_aware = _use_rack_aware(all_consumer_racks, all_partition_racks,
                                                self.partition_racks, prefer_rack_aware)

    def racks_match(self, consumer: str, p: TopicPartition) -> bool:
        rack = self.consumers.get(consumer)
        replicas = self.partition_racks.get(p)
        return rack is None or (replicas is not None and rack in replicas)

    def max_assignable(self, consumer: str) -> int:
        return max(0, self.per_consumer + (1 if self.remaining_extra > 0 else 0) - self.assigned_count[consumer])

    def on_assigned(self, consumer: str, parts: list[TopicPartition]) -> None:
        self.assigned_count[consumer] += len(parts)
        if self.assigned_count[consumer] > self.per_consumer:
            self.remaining_extra -= 1
        for p in parts:
            self.unassigned.pop(p, None)


def _use_rack_aware(consumer_racks: set[str], partition_racks: set[str],
                    racks_per_partition: Mapping[TopicPartition, frozenset[str]], prefer: bool) -> bool:
    """``AbstractPartitionAssignor.useRackAwareAssignment``."""
    if not consumer_racks or consumer_racks.isdisjoint(partition_racks):
        return False
    if prefer:
        return True
    return not all(r == partition_racks for r in racks_per_partition.values())


class RangeAssignor:
    """Kafka's ``RangeAssignor``; ``assign`` is pure (no state kept between calls)."""

    name = "range"

    def __init__(self, prefer_rack_aware_logic: bool = False) -> None:
        self.prefer_rack_aware_logic = prefer_rack_aware_logic

    def assign(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription],
               partition_racks: Mapping[TopicPartition, frozenset[str] | set[str]] | None = None,
               ) -> dict[str, list[TopicPartition]]:
        validate_inputs(partitions_per_topic, subscriptions)
        members = members_in_java_order(subscriptions)
        consumers_per_topic: dict[str, list[str]] = {}
        for m in members:
            for t in subscriptions[m].topics:
                consumers_per_topic.setdefault(t, []).append(m)
        consumer_racks = {m: subscriptions[m].rack for m in members if subscriptions[m].rack}
        racks = {p: frozenset(r) for p, r in (partition_racks or {}).items()}
        states: list[_TopicState] = []
        sort_key = {m: member_sort_key(m, subscriptions[m]) for m in members}
        for topic in java_hashmap_order(partitions_per_topic.keys()):
            n = partitions_per_topic[topic]
            if n == 0:
                continue
            ms = sorted(consumers_per_topic.get(topic, []), key=sort_key.__getitem__)
            states.append(_TopicState(topic, n, ms, consumer_racks, racks, self.prefer_rack_aware_logic))

        assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        use_rack_aware = any(s.needs_rack_aware for s in states)
        if use_rack_aware:
            self._assign_with_rack_matching(states, assignment)
        for s in states:
            self._assign_ranges(s, lambda c, p: True, assignment)
        if use_rack_aware:
            for lst in assignment.values():
                lst.sort(key=tp_key)
        return assignment

    @staticmethod
    def _give(consumer: str, parts: list[TopicPartition], state: _TopicState,
              assignment: dict[str, list[TopicPartition]]) -> None:
        assignment[consumer].extend(parts)
        state.on_assigned(consumer, parts)

    def _assign_ranges(self, state: _TopicState, may_assign: Callable[[str, TopicPartition], bool],
                       assignment: dict[str, list[TopicPartition]]) -> None:
        for consumer in state.consumers:
            if not state.unassigned:
                break
            limit = state.max_assignable(consumer)
            parts: list[TopicPartition] = []
            if limit > 0:
                for p in state.unassigned:
                    if may_assign(consumer, p):
                        parts.append(p)
                        if len(parts) >= limit:
                            break
            if parts:
                self._give(consumer, parts, state, assignment)

    def _assign_with_rack_matching(self, states: list[_TopicState],
                                   assignment: dict[str, list[TopicPartition]]) -> None:
        # Kafka groups topics by their (ordered) consumer map, then by partition count, using
        # HashMaps whose iteration order only changes which group is handled first; groups are
        # disjoint in topics, and a consumer's per-topic quota is per topic, so the order of
        # groups does not change the result except through the final sort (done by the caller).
        groups: dict[tuple[tuple[str, str | None], ...], list[_TopicState]] = {}
        for s in states:
            groups.setdefault(tuple(s.consumers.items()), []).append(s)
        for consumers_key, group in groups.items():
            by_count: dict[int, list[_TopicState]] = {}
            for s in group:
                by_count.setdefault(len(s.partition_racks), []).append(s)
            for num_partitions, co in by_count.items():
                if len(co) > 1:
                    self._assign_co_partitioned(tuple(c for c, _ in consumers_key), num_partitions, co, assignment)
                else:
                    s = co[0]
                    if s.needs_rack_aware:
                        self._assign_ranges(s, s.racks_match, assignment)

    def _assign_co_partitioned(self, consumers: tuple[str, ...], num_partitions: int,
                               states: list[_TopicState], assignment: dict[str, list[TopicPartition]]) -> None:
        remaining = list(consumers)
        for i in range(num_partitions):
            match = next((c for c in remaining
                          if all(s.racks_match(c, TopicPartition(s.topic, i)) and s.max_assignable(c) > 0
                                 for s in states)), None)
            if match is not None:
                for s in states:
                    self._give(match, [TopicPartition(s.topic, i)], s, assignment)
                if not any(s.max_assignable(match) > 0 for s in states):
                    remaining.remove(match)
                    if not remaining:
                        break
