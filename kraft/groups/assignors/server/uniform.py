"""Kafka's ``UniformAssignor`` (server-side, ``uniform``) and its homogeneous builder.

``UniformAssignor.assign`` returns nothing for an empty group and otherwise hands the group to
``UniformHomogeneousAssignmentBuilder`` when every member subscribes to the same topics and to
``UniformHeterogeneousAssignmentBuilder`` (:mod:`.heterogeneous`) otherwise. Both keep the
members' current partitions where balance allows (balance first, then stickiness).

The homogeneous builder (``UniformHomogeneousAssignmentBuilder.build``):

1. the unassigned partitions: for each subscribed topic, in the order of the ``HashSet<Uuid>``
   copied from the first member's subscription, the partitions no member holds, ascending;
2. quotas: ``total // members`` each, one more for the first ``total % members`` members in
   ``memberIds()`` order, whatever they hold;
3. ``maybeRevokePartitions``: each member, in ``memberIds()`` order, keeps its partitions of
   subscribed topics up to its quota, walking its assignment in its map's and sets' order;
   partitions beyond the quota are appended to the unassigned list; topics no longer subscribed
   are dropped; a member left under quota queues up with what it still needs;
4. ``assignRemainingPartitions``: the queued members, in order, each take their remaining quota
   from the front of the unassigned list.
"""

from __future__ import annotations

from .heterogeneous import build_heterogeneous
from .spec import GroupAssignment, GroupSpec, PartitionAssignorError, SubscriptionType, TopicDescriber, Uuid, \
    java_hash_set_order


class UniformAssignor:
    """``UniformAssignor``: the coordinator's default assignor (``group.consumer.assignors``)."""

    name = "uniform"

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
        if not group.members:
            return {}
        if group.subscription_type is SubscriptionType.HOMOGENEOUS:
            return build_homogeneous(group, topics)
        return build_heterogeneous(group, topics)


def build_homogeneous(group: GroupSpec, topics: TopicDescriber) -> GroupAssignment:
    """``UniformHomogeneousAssignmentBuilder.build``."""
    first = group.members[next(iter(group.members))]
    subscribed = java_hash_set_order(first.subscribed_topic_ids)  # the builder's HashSet<Uuid>
    if not subscribed:
        return {}
    unassigned, total = _unassigned_partitions(group, topics, subscribed)
    target, unfilled = _revoke_over_quota(group, set(subscribed), total, unassigned)
    _fill(target, unfilled, unassigned)
    return target


def _unassigned_partitions(group: GroupSpec, topics: TopicDescriber, subscribed: list[Uuid]
                           ) -> tuple[list[tuple[Uuid, int]], int]:
    unassigned: list[tuple[Uuid, int]] = []
    total = 0
    for t in subscribed:
        n = topics.num_partitions(t)
        if n == -1:
            raise PartitionAssignorError(f"Members are subscribed to topic {t} which doesn't exist in the "
                                         f"topic metadata.")
        unassigned.extend((t, p) for p in range(n) if not group.is_partition_assigned(t, p))
        total += n
    return unassigned, total


def _revoke_over_quota(group: GroupSpec, subscribed: set[Uuid], total: int, unassigned: list[tuple[Uuid, int]]
                       ) -> tuple[GroupAssignment, list[tuple[str, int]]]:
    """``maybeRevokePartitions``: the kept assignments and the members still under quota."""
    min_quota, extra = divmod(total, len(group.members))
    target: GroupAssignment = {}
    unfilled: list[tuple[str, int]] = []
    for m, spec in group.members.items():
        quota = min_quota
        if extra > 0:
            quota += 1
            extra -= 1
        kept: dict[Uuid, set[int]] = {}
        for t, ps in spec.assignment.items():
            if t not in subscribed:
                continue
            if len(ps) <= quota:
                quota -= len(ps)
                kept[t] = set(ps)
                continue
            keep = ps[:quota]
            unassigned.extend((t, p) for p in ps[quota:])
            quota = 0
            if keep:
                kept[t] = set(keep)
        if quota > 0:
            unfilled.append((m, quota))
        target[m] = kept
    return target, unfilled


def _fill(target: GroupAssignment, unfilled: list[tuple[str, int]], unassigned: list[tuple[Uuid, int]]) -> None:
    """``assignRemainingPartitions``."""
    i = 0
    for m, quota in unfilled:
        mine = target[m]
        for t, p in unassigned[i:i + quota]:
            mine.setdefault(t, set()).add(p)
        i = min(i + quota, len(unassigned))
    if i < len(unassigned):
        raise PartitionAssignorError("Partitions were left unassigned")
