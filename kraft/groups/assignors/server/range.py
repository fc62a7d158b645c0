"""Kafka's server-side ``RangeAssignor`` (``range`` in ``group.consumer.assignors``).

Not the client ``RangeAssignor`` of :mod:`kraft.groups.assignors.range`: this one
(group-coordinator, ``org.apache.kafka.coordinator.group.assignor.RangeAssignor``) ignores the
current assignment and racks. Its stickiness comes from the member order alone
(``sortMemberIds``): static members first, by ``group.instance.id``, then the others by member
id, both as ``String.compareTo``; a static member that rejoins under a new member id keeps its
place and so its ranges.

Per topic, the subscribers in that order take contiguous ranges: each ``partitions // subscribers``
partitions, the first ``partitions % subscribers`` one more (``TopicMetadata.maybeComputeQuota``,
``addPartitionsToAssignment``). When all members subscribe to the same topics and the topics
have equal partition counts, a member gets the same partition numbers of every topic
(co-partitioning). Every member appears in the result, with an empty assignment if it gets
nothing. Topics are independent of each other, so the order Java iterates them in does not
change the result.
"""

from __future__ import annotations

from kraft.client.java import java_str_key

from .spec import GroupAssignment, GroupSpec, MemberSpec, PartitionAssignorError, SubscriptionType, TopicDescriber, \
    Uuid, topic_subscribers


class ServerRangeAssignor:
    """The coordinator's ``RangeAssignor``."""

    name = "range"

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        if not group.members:
            return {}
        members = sort_member_ids(group)
        if group.subscription_type is SubscriptionType.HOMOGENEOUS:
            subscribers = {t: members for t in group.members[members[0]].subscribed_topic_ids}
        else:
            subscribers = {t: [members[i] for i in ps] for t, ps in topic_subscribers(group, members).items()}
        result: GroupAssignment = {m: {} for m in members}
        for t, subs in subscribers.items():
            _assign_ranges(t, _num_partitions(topics, t), subs, result)
        return result


def _num_partitions(topics: TopicDescriber, t: Uuid) -> int:
    n = topics.num_partitions(t)
    if n == -1:
        raise PartitionAssignorError("Member is subscribed to a non-existent topic")
    return n


def _assign_ranges(t: Uuid, n: int, subscribers: list[str], result: GroupAssignment) -> None:
    """The ranges Kafka's walk over the subscribers (``nextRange`` advancing by each quota)
    produces, computed for the subscribers that get a non-empty one: the ``k``-th starts at
    ``k * quota + min(k, extra)``."""
    quota, extra = divmod(n, len(subscribers))
    for k in range(min(len(subscribers), n)):
        start = k * quota + min(k, extra)
        end = start + quota + (1 if k < extra else 0)
        result[subscribers[k]][t] = set(range(start, end))


def sort_member_ids(group: GroupSpec) -> list[str]:
    """``sortMemberIds``: static members (by instance id) before dynamic ones (by member id)."""
    def key(m: str) -> tuple[int, bytes]:
        spec: MemberSpec = group.members[m]
        if spec.instance_id is not None:
            return (0, java_str_key(spec.instance_id))
        return (1, java_str_key(m))
    return sorted(group.members, key=key)
