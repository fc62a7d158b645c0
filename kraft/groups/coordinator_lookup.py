"""Which ``__consumer_offsets`` partition (and so which broker) coordinates a group.

Kafka: ``GroupMetadataManager.partitionFor(groupId) = Utils.abs(groupId.hashCode) %
groupMetadataTopicPartitionCount`` (and ``TransactionStateManager.partitionFor`` does the same
for transactional ids over ``__transaction_state``). ``hashCode`` is Java's ``String.hashCode``
over UTF-16 code units; ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0 where ``Math.abs`` would
stay negative. ``offsets.topic.num.partitions`` and ``transaction.state.log.num.partitions``
both default to 50.
"""

from __future__ import annotations

from kraft.client.java import string_hash
from kraft.client.partitioner import java_abs

DEFAULT_OFFSETS_TOPIC_PARTITIONS = 50


def coordinator_partition(group_id: str, num_partitions: int = DEFAULT_OFFSETS_TOPIC_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (also for transactional ids)."""
    if not isinstance(group_id, str):
        raise TypeError(f"group_id must be a str, got {type(group_id).__name__}")
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return java_abs(string_hash(group_id)) % num_partitions


transaction_coordinator_partition = coordinator_partition
