"""``RoundRobinAssignor`` (``roundrobin``).

All partitions of all subscribed topics, topics in name order and partitions ascending, are
dealt one by one to the members in sorted order (static members by ``group.instance.id``
first, then dynamic members by member id), cycling; a member not subscribed to the
partition's topic is skipped (``CircularIterator`` + ``peek``). With unequal subscriptions the
result can be unbalanced, exactly as in Kafka.
"""

from __future__ import annotations

from kraft.client.java import java_str_key

from .base import sorted_members
from .types import Subscription, TopicPartition, validate_inputs


class RoundRobinAssignor:
    """Kafka's ``RoundRobinAssignor``; ``assign`` is pure."""

    name = "roundrobin"

    def assign(self, partitions_per_topic: dict[str, int],
               subscriptions: dict[str, Subscription]) -> dict[str, list[TopicPartition]]:
        validate_inputs(partitions_per_topic, subscriptions)
        assignment: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        order = sorted_members(subscriptions)
        if not order:
            return assignment
        topic_sets = {m: frozenset(subscriptions[m].topics) for m in order}
        topics = sorted({t for m in order for t in subscriptions[m].topics}, key=java_str_key)
        i = 0
        n = len(order)
        for topic in topics:
            count = partitions_per_topic.get(topic)
            if count is None:
                continue
            for p in range(count):
                # some member subscribes to `topic` (topics come from subscriptions): this ends
                while topic not in topic_sets[order[i]]:
                    i = (i + 1) % n
                assignment[order[i]].append(TopicPartition(topic, p))
                i = (i + 1) % n
        return assignment
