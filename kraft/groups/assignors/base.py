"""Shared pieces of the classic (client-side) assignors: member ordering and Java orders."""

from __future__ import annotations

from kraft.client.java import java_hashmap_order, java_str_key

from .types import Subscription


def member_sort_key(member_id: str, sub: Subscription) -> tuple[int, bytes]:
    """``AbstractPartitionAssignor.MemberInfo.compareTo``: static members (with a
    ``group.instance.id``) first, ordered by instance id; then dynamic members by member id.
    Both compare as Java strings."""
    if sub.group_instance_id is not None:
        return (0, java_str_key(sub.group_instance_id))
    return (1, java_str_key(member_id))


def members_in_java_order(subscriptions: dict[str, Subscription]) -> list[str]:
    """The order Kafka iterates ``Map<String, Subscription>``: the coordinator builds it as a
    ``HashMap`` (``ConsumerCoordinator.onLeaderElected``), so iteration follows bucket order
    of ``memberId.hashCode()``; the dict's own order stands for the order of ``put`` calls."""
    return java_hashmap_order(subscriptions.keys())


def sorted_members(subscriptions: dict[str, Subscription], member_ids: list[str] | None = None) -> list[str]:
    """Members sorted by :func:`member_sort_key`; Java's sort is stable, so ties keep the
    HashMap iteration order."""
    ids = members_in_java_order(subscriptions) if member_ids is None else member_ids
    return sorted(ids, key=lambda m: member_sort_key(m, subscriptions[m]))
