"""FindCoordinator: which broker coordinates a group.

Kafka (``KafkaApis.handleFindCoordinatorRequest`` / ``GroupCoordinator.partitionFor``): the
group's ``__consumer_offsets`` partition is ``abs(groupId.hashCode) % offsets.topic.num.partitions``
(:func:`kraft.groups.coordinator_lookup.coordinator_partition`), and the coordinator is that
partition's leader; with no leader the answer is COORDINATOR_NOT_AVAILABLE and the client retries.

Where the leader comes from is behind one function, :func:`partition_leader`: today a plain
leader map (``{partition: broker id or None}``, or any object with
``leader_of(topic, partition)``), later the controller's metadata log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import attrs

from kraft.groups.coordinator_lookup import DEFAULT_OFFSETS_TOPIC_PARTITIONS, coordinator_partition
from kraft.groups.messages import Errors

OFFSETS_TOPIC = "__consumer_offsets"


@runtime_checkable
class LeaderView(Protocol):
    def leader_of(self, topic: str, partition: int) -> int | None: ...


@attrs.frozen
class FindCoordinatorResult:
    error: Errors
    partition: int
    node_id: int | None


def partition_leader(metadata: LeaderView | Mapping[int, int | None], partition: int) -> int | None:
    """The leader of ``__consumer_offsets-<partition>`` as the cluster metadata knows it."""
    if isinstance(metadata, LeaderView):
        return metadata.leader_of(OFFSETS_TOPIC, partition)
    if isinstance(metadata, Mapping):
        return metadata.get(partition)
    raise TypeError(f"metadata must be a leader map or have leader_of(), got {type(metadata).__name__}")


def find_coordinator(group_id: str, metadata: LeaderView | Mapping[int, int | None],
                     num_partitions: int = DEFAULT_OFFSETS_TOPIC_PARTITIONS) -> FindCoordinatorResult:
    p = coordinator_partition(group_id, num_partitions)
    leader = partition_leader(metadata, p)
    if leader is None or leader < 0:
        return FindCoordinatorResult(Errors.COORDINATOR_NOT_AVAILABLE, p, None)
    return FindCoordinatorResult(Errors.NONE, p, leader)
