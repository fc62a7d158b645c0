"""The leader's assignment, behind one function (spec ``Assign``).

The target comes from Kafka's assignors (``kraft.groups.assignors``): ``range`` for eager
groups by default, the sticky assignor's target for cooperative ones. The cooperative rule of
KIP-429 is then applied here, once, whatever the assignor: a partition that another member
reported in its ownedPartitions is withheld from its new owner in this rebalance (its owner
revokes it and rejoins; the follow-up rebalance hands it over). Kafka's
``CooperativeStickyAssignor`` does the same by removing ``partitionsTransferringOwnership``.
The ``CooperativeAssignWithoutRevoke`` variant skips the withholding.
"""

from __future__ import annotations

from kraft.groups.assignors import ASSIGNORS, Subscription, TopicPartition
from kraft.groups.messages import Partitions, RebalanceProtocol


def target_assignment(assignor: str, partitions_per_topic: dict[str, int],
                      members: dict[str, Partitions], generation: int) -> dict[str, set[TopicPartition]]:
    """Every member's target partitions (every partition to exactly one member)."""
    try:
        cls = ASSIGNORS[assignor]
    except KeyError:
        raise ValueError(f"unknown assignor {assignor!r}; known: {sorted(ASSIGNORS)}") from None
    topics = tuple(sorted(partitions_per_topic))
    subs = {m: Subscription(topics, tuple(sorted(owned, key=lambda p: (p.topic, p.partition))),
                            generation)
            for m, owned in members.items()}
    result = cls().assign(dict(partitions_per_topic), subs)
    return {m: set(result.get(m, [])) for m in members}


def leader_assignment(protocol: RebalanceProtocol, assignor: str | None,
                      partitions_per_topic: dict[str, int], members: dict[str, Partitions],
                      generation: int, *, without_revoke: bool = False) -> dict[str, Partitions]:
    """Spec ``Assign``: the assignment the leader sends in its SyncGroup."""
    if protocol == RebalanceProtocol.EAGER:
        target = target_assignment(assignor or "range", partitions_per_topic, members, generation)
        return {m: frozenset(ps) for m, ps in target.items()}
    # cooperative: the sticky target (without Kafka's own withholding), then withhold here
    target = target_assignment("sticky" if assignor in (None, "cooperative-sticky") else assignor,
                               partitions_per_topic, members, generation)
    if without_revoke:
        return {m: frozenset(ps) for m, ps in target.items()}
    out: dict[str, Partitions] = {}
    for m, ps in target.items():
        out[m] = frozenset(p for p in ps
                           if not any(p in owned for other, owned in members.items() if other != m))
    return out
