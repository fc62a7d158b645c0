"""What a server-side assignment must satisfy: validity, and the balance its assignor promises.

Validity: every partition given out exists and goes to a subscriber of its topic; no partition
goes to two members; every partition of a topic someone subscribes to is given out.

Balance, as each assignor promises it:

* ``uniform``, homogeneous group: the members' partition counts differ by one at most
  (``UniformHomogeneousAssignmentBuilder``; Kafka's ``OptimizedUniformAssignmentBuilderTest``
  checks the same);
* ``uniform``, heterogeneous group: no member holds a partition of a topic while another
  subscriber of that topic has two or more partitions fewer. ``balanceTopics`` reaches this once a
  whole round over the topics moves nothing; it stops after 16 rounds, so a group whose
  overlapping subscriptions need more rounds can fail it;
* ``range``: per topic, the subscribers' shares differ by one at most and are contiguous, the
  larger shares first in ``sortMemberIds`` order; with a homogeneous group and equal partition
  counts, each member has the same partition numbers of every topic (co-partitioning).
"""

from __future__ import annotations

from collections.abc import Callable

from .range import sort_member_ids
from .spec import GroupAssignment, GroupSpec, SubscriptionType, TopicDescriber, Uuid


def problems(assignor: str, group: GroupSpec, topics: TopicDescriber, result: GroupAssignment,
             name: Callable[[Uuid], str] = str) -> list[str]:
    """Every violation, as readable sentences (``name`` spells a topic id)."""
    out = _validity(group, topics, result, name)
    if assignor == "range":
        out += _range_balance(group, topics, result, name)
    elif group.subscription_type is SubscriptionType.HOMOGENEOUS:
        counts = {m: _count(result, m) for m in group.members}
        if counts and max(counts.values()) - min(counts.values()) > 1:
            hi, lo = max(counts, key=counts.__getitem__), min(counts, key=counts.__getitem__)
            out.append(f"unbalanced: {hi} has {counts[hi]} partitions, {lo} has {counts[lo]}")
    else:
        out += _subscriber_balance(group, result, name)
    return out


def _count(result: GroupAssignment, m: str) -> int:
    return sum(len(ps) for ps in result.get(m, {}).values())


def _validity(group: GroupSpec, topics: TopicDescriber, result: GroupAssignment,
              name: Callable[[Uuid], str]) -> list[str]:
    out = []
    owner: dict[tuple[Uuid, int], str] = {}
    for m, assignment in result.items():
        if m not in group.members:
            out.append(f"{m} is given partitions but is not a member")
            continue
        subscribed = set(group.members[m].subscribed_topic_ids)
        for t, ps in assignment.items():
            if t not in subscribed:
                out.append(f"{name(t)} given to {m}, not subscribed")
            for p in sorted(ps):
                if not 0 <= p < topics.num_partitions(t):
                    out.append(f"{name(t)}-{p} given to {m} does not exist")
                if (t, p) in owner:
                    out.append(f"{name(t)}-{p} given to {owner[t, p]} and {m}")
                owner[t, p] = m
    wanted = {t for spec in group.members.values() for t in spec.subscribed_topic_ids}
    for t in sorted(wanted):
        missing = [p for p in range(max(topics.num_partitions(t), 0)) if (t, p) not in owner]
        if missing:
            out.append(f"{name(t)}: {len(missing)} partition(s) given to nobody, first {name(t)}-{missing[0]}")
    return out


def _subscribers(group: GroupSpec, order: list[str]) -> dict[Uuid, list[str]]:
    subs: dict[Uuid, list[str]] = {}
    for m in order:
        for t in group.members[m].subscribed_topic_ids:
            subs.setdefault(t, []).append(m)
    return subs


def _subscriber_balance(group: GroupSpec, result: GroupAssignment, name: Callable[[Uuid], str]) -> list[str]:
    counts = {m: _count(result, m) for m in group.members}
    out = []
    for t, subs in _subscribers(group, list(group.members)).items():
        least = min(subs, key=counts.__getitem__)
        holders = [m for m in subs if result.get(m, {}).get(t)]
        if holders:
            most = max(holders, key=counts.__getitem__)
            if counts[most] - counts[least] > 1:
                out.append(f"unbalanced: {most} has {counts[most]} partitions and holds {name(t)}, "
                           f"{least} subscribes to it and has {counts[least]}")
    return out


def _range_balance(group: GroupSpec, topics: TopicDescriber, result: GroupAssignment,
                   name: Callable[[Uuid], str]) -> list[str]:
    order = sort_member_ids(group)
    out = []
    numbers: dict[str, set[frozenset[int]]] = {m: set() for m in order}
    for t, subs in _subscribers(group, order).items():
        shares = [sorted(result.get(m, {}).get(t, ())) for m in subs]
        sizes = [len(s) for s in shares]
        if max(sizes) - min(sizes) > 1 or sizes != sorted(sizes, reverse=True):
            out.append(f"unbalanced topic {name(t)}: shares {dict(zip(subs, sizes))} in member order")
        flat = [p for s in shares for p in s]
        if flat != list(range(len(flat))):
            out.append(f"topic {name(t)}: shares are not consecutive ranges in member order")
        for m, s in zip(subs, shares):
            numbers[m].add(frozenset(s))
    counts = {topics.num_partitions(t) for spec in group.members.values() for t in spec.subscribed_topic_ids}
    if group.subscription_type is SubscriptionType.HOMOGENEOUS and len(counts) == 1:
        split = [m for m in order if len(numbers[m]) > 1]
        if split:
            out.append(f"not co-partitioned: {split[0]} has different partition numbers in different topics")
    return out
