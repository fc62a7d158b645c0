"""Checks shared by the assignor tests (the intent of Kafka's ``verifyValidityAndBalance``)."""

from __future__ import annotations

from kraft.groups.assignors import Subscription, TopicPartition

S = Subscription


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def parse(spec: str) -> list[TopicPartition]:
    """``"t1-0, t2-3"`` -> partitions (topic names may not contain '-')."""
    out = []
    for item in spec.split(","):
        item = item.strip()
        if item:
            topic, _, p = item.rpartition("-")
            out.append(TopicPartition(topic, int(p)))
    return out


def problems(subscriptions: dict[str, Subscription], assignment: dict[str, list[TopicPartition]],
             partitions_per_topic: dict[str, int]) -> list[str]:
    """Every violation of validity and Kafka's balance rule, as readable strings.

    Validity: each member is subscribed to the topic of each of its partitions, partitions
    exist, no partition is given twice, every member appears. Balance: whenever two members'
    counts differ by 2 or more, the more loaded one holds no partition of a topic the less
    loaded one subscribes to (otherwise that partition could move; this is the sticky
    assignor's ``isBalanced`` criterion, and stronger than Kafka's test helper, which only
    compares topics both members hold). Completeness: every partition of a topic someone
    subscribes to is assigned.
    """
    out: list[str] = []
    if set(assignment) != set(subscriptions):
        out.append(f"members differ: {sorted(assignment)} vs {sorted(subscriptions)}")
    owner: dict[TopicPartition, str] = {}
    for m, parts in assignment.items():
        sub = subscriptions.get(m)
        for p in parts:
            if sub is not None and p.topic not in sub.topics:
                out.append(f"{p} assigned to {m} which is not subscribed to {p.topic}")
            if not (0 <= p.partition < partitions_per_topic.get(p.topic, 0)):
                out.append(f"{p} does not exist but is assigned to {m}")
            if p in owner:
                out.append(f"{p} assigned to both {owner[p]} and {m}")
            owner[p] = m
    wanted = {t for s in subscriptions.values() for t in s.topics if t in partitions_per_topic}
    for t in wanted:
        for i in range(partitions_per_topic[t]):
            if TopicPartition(t, i) not in owner:
                out.append(f"{t}-{i} is not assigned")
    members = sorted(m for m in assignment if m in subscriptions)
    topics_of = {m: {p.topic for p in assignment[m]} for m in members}
    for a in members:
        for b in members:
            if len(assignment[a]) - len(assignment[b]) > 1:
                movable = topics_of[a] & set(subscriptions[b].topics)
                if movable:
                    out.append(f"{a} has {len(assignment[a])} and {b} has {len(assignment[b])} partitions; "
                               f"{b} could take one of common topics {sorted(movable)}")
    return out


def assert_valid_and_balanced(subscriptions, assignment, partitions_per_topic) -> None:
    found = problems(subscriptions, assignment, partitions_per_topic)
    assert not found, "\n".join(found)


def is_fully_balanced(assignment: dict[str, list[TopicPartition]]) -> bool:
    sizes = [len(v) for v in assignment.values()]
    return not sizes or max(sizes) - min(sizes) <= 1


def next_round(subscriptions: dict[str, Subscription], assignment: dict[str, list[TopicPartition]],
               generation: int) -> dict[str, Subscription]:
    """Every member now owns what it was given, in ``generation``."""
    return {m: Subscription(s.topics, assignment.get(m, ()), generation, s.group_instance_id, s.rack)
            for m, s in subscriptions.items()}
