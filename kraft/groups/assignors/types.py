"""Values the assignors exchange: topic partitions and member subscriptions.

These mirror ``org.apache.kafka.common.TopicPartition`` and
``ConsumerPartitionAssignor.Subscription`` (topics, owned partitions, generation id,
``group.instance.id``, rack id).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kraft.client.java import java_str_key, topic_partition_hash


@attrs.frozen(order=False, slots=True, repr=False)
class TopicPartition:
    """A partition of a topic. ``str()`` is Kafka's ``topic-partition`` form."""

    topic: str
    partition: int

    def java_hash(self) -> int:
        """``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()``."""
        return topic_partition_hash(self.topic, self.partition)

    def __repr__(self) -> str:
        return f"{self.topic}-{self.partition}"

    __str__ = __repr__


def tp(topic: str, partition: int) -> TopicPartition:
    """Shorthand constructor."""
    return TopicPartition(topic, partition)


def tp_key(p: TopicPartition) -> tuple[bytes, int]:
    """Kafka's usual partition order: topic (``String.compareTo``), then partition."""
    return (java_str_key(p.topic), p.partition)


def _to_tp(x: Any) -> TopicPartition:
    if isinstance(x, TopicPartition):
        return x
    if isinstance(x, (tuple, list)) and len(x) == 2 and isinstance(x[0], str) and isinstance(x[1], int):
        return TopicPartition(x[0], x[1])
    raise TypeError(f"owned partition must be a TopicPartition or (topic, partition), got {x!r}")


def _topics(xs: Iterable[str]) -> tuple[str, ...]:
    if isinstance(xs, str):
        raise TypeError("topics must be a collection of topic names, not a single string")
    out: list[str] = []
    seen: set[str] = set()
    for t in xs:
        if not isinstance(t, str):
            raise TypeError(f"topic names must be str, got {t!r}")
        if t not in seen:  # a consumer's subscription is a set; its wire form lists each once
            seen.add(t)
            out.append(t)
    return tuple(out)


def _owned(xs: Iterable[Any]) -> tuple[TopicPartition, ...]:
    return tuple(_to_tp(x) for x in xs)


@attrs.frozen
class Subscription:
    """One member's JoinGroup metadata as the leader's assignor sees it.

    ``generation = -1`` means "unknown" (Kafka's ``DEFAULT_GENERATION``/``Optional.empty``).
    ``owned_partitions`` keeps the member's order (Kafka's list order matters to the sticky
    assignors' tie-breaking); duplicate topic names in ``topics`` are dropped.
    """

    topics: tuple[str, ...] = attrs.field(converter=_topics)
    owned_partitions: tuple[TopicPartition, ...] = attrs.field(default=(), converter=_owned)
    generation: int = -1
    group_instance_id: str | None = None
    rack: str | None = None


def validate_inputs(partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription]) -> None:
    """Reject malformed input with a message naming the offending topic or member."""
    if not isinstance(partitions_per_topic, dict):
        raise TypeError("partitions_per_topic must be a dict[str, int]")
    if not isinstance(subscriptions, dict):
        raise TypeError("subscriptions must be a dict[str, Subscription]")
    for topic, n in partitions_per_topic.items():
        if not isinstance(topic, str):
            raise TypeError(f"topic name {topic!r} is not a str")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"topic {topic!r}: partition count must be an int >= 0, got {n!r}")
    for member, sub in subscriptions.items():
        if not isinstance(member, str):
            raise TypeError(f"member id {member!r} is not a str")
        if not isinstance(sub, Subscription):
            raise TypeError(f"member {member!r}: expected a Subscription, got {type(sub).__name__}")
