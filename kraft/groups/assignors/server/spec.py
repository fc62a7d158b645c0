"""What a server-side assignor is given and returns, in Kafka's shapes.

Mirrors the group coordinator's assignor API (``group-coordinator-api``,
``org.apache.kafka.coordinator.group.api.assignor``): ``GroupSpec`` (member ids, subscription
type, ``isPartitionAssigned``), ``MemberSubscription`` (rack, instance id, subscribed topic ids),
``MemberAssignment`` (topic id -> partitions), ``SubscribedTopicDescriber`` (partition counts and
partition racks) and ``SubscriptionType``. Topic ids are :class:`Uuid` values
(``org.apache.kafka.common.Uuid``).

Kafka's assignors iterate Java collections, so their tie-breaking depends on iteration order. Here
every collection an assignor iterates is an ordered Python value whose order *is* the Java one:
``GroupSpec.members`` in the order of ``GroupSpec.memberIds()``, a subscription's topic ids in the
order of its ``Set<Uuid>``, a member's assignment in the order of its ``Map<Uuid, Set<Integer>>``
and of each set. :func:`java_group_spec` builds those orders the way the coordinator does
(``TargetAssignmentBuilder.build``: a ``HashMap`` of members; ``Assignment.fromRecord``: a
``HashMap`` of ``HashSet``\\ s; ``ConsumerGroupMember``: a ``HashSet`` of topic names resolved by
``TopicIds``); Kafka's tests, which use ``TreeMap`` and ``LinkedHashMap``, pass their orders as
they are.
"""

from __future__ import annotations

import enum
import re
import struct
from collections.abc import Iterable, Mapping
from typing import NamedTuple

import attrs

from kraft.client.java import JavaHashOrder, java_str_key, string_hash, table_size_for, to_int32
from kraft.log.schema import uuid_from_str, uuid_to_str


class PartitionAssignorError(Exception):
    """``PartitionAssignorException``: the assignor cannot compute an assignment."""


_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(==)?")


class Uuid(NamedTuple):
    """``org.apache.kafka.common.Uuid``: two signed longs. A tuple, so that hashing, equality and
    order run at C speed; tuple order is ``Uuid.compareTo`` (most significant long first, each
    compared signed). ``hash()`` is Python's; :meth:`java_hash` is Kafka's."""

    msb: int
    lsb: int

    @classmethod
    def from_string(cls, text: str) -> "Uuid":
        """``Uuid.fromString``: base64url of 16 bytes, padding optional. Like Java's decoder,
        unused low bits of the last character are ignored. ValueError otherwise."""
        if not isinstance(text, str) or not _UUID_TEXT.fullmatch(text):
            raise ValueError(f"not a Uuid (22 base64url characters): {text!r}")
        msb, lsb = struct.unpack(">qq", uuid_from_str(text[:22]))
        return cls(msb, lsb)

    def java_hash(self) -> int:
        """``Uuid.hashCode``: the two halves of ``msb ^ lsb`` xor-ed, as an int."""
        x = (self.msb ^ self.lsb) & 0xFFFF_FFFF_FFFF_FFFF
        return to_int32((x >> 32) ^ x)

    def __str__(self) -> str:
        return uuid_to_str(struct.pack(">qq", self.msb, self.lsb))

    __repr__ = __str__


ZERO_UUID = Uuid(0, 0)


class SubscriptionType(enum.Enum):
    """``SubscriptionType``; the coordinator computes it (``ModernGroup.subscriptionType``)."""

    HOMOGENEOUS = "Homogeneous"
    HETEROGENEOUS = "Heterogeneous"


def _topic_ids(xs: Iterable[Uuid]) -> tuple[Uuid, ...]:
    ids = tuple(dict.fromkeys(xs))
    return xs if isinstance(xs, tuple) and len(ids) == len(xs) else ids  # members may share one tuple


def _assignment(xs: Mapping[Uuid, Iterable[int]]) -> dict[Uuid, tuple[int, ...]]:
    return {t: tuple(dict.fromkeys(ps)) for t, ps in xs.items() if ps}


@attrs.frozen
class MemberSpec:
    """``MemberSubscriptionAndAssignmentImpl``: one member's subscription and current target
    assignment, each in its Java iteration order."""

    subscribed_topic_ids: tuple[Uuid, ...] = attrs.field(converter=_topic_ids)
    assignment: dict[Uuid, tuple[int, ...]] = attrs.field(factory=dict, converter=_assignment)
    rack_id: str | None = None
    instance_id: str | None = None


def subscription_type(members: Mapping[str, MemberSpec], topic_names: Mapping[str, Iterable[str]] | None = None
                      ) -> SubscriptionType:
    """``ModernGroup.subscriptionType``: homogeneous iff every subscribed topic has every member
    as subscriber. The coordinator counts topic *names* (``topic_names``: member -> names),
    existing or not; without them the topic ids are counted."""
    subs = topic_names if topic_names is not None else {m: s.subscribed_topic_ids for m, s in members.items()}
    counts: dict[object, int] = {}
    for topics in subs.values():
        for t in set(topics):
            counts[t] = counts.get(t, 0) + 1
    n = len(subs)
    return SubscriptionType.HOMOGENEOUS if all(c == n for c in counts.values()) else SubscriptionType.HETEROGENEOUS


@attrs.frozen
class TopicDescriber:
    """``SubscribedTopicDescriber`` over ``SubscribedTopicDescriberImpl``'s map of topic
    metadata: ``num_partitions`` is -1 for a topic it does not know. Kafka's implementation
    answers every ``racksForPartition`` with the empty set, and neither assignor asks;
    ``partition_racks`` keeps what the group file says for a rack-aware assignor to read."""

    partitions: Mapping[Uuid, int]
    partition_racks: Mapping[tuple[Uuid, int], frozenset[str]] = attrs.field(factory=dict)

    def num_partitions(self, topic_id: Uuid) -> int:
        return self.partitions.get(topic_id, -1)

    def racks_for_partition(self, topic_id: Uuid, partition: int) -> frozenset[str]:
        return self.partition_racks.get((topic_id, partition), frozenset())


class GroupSpec:
    """``GroupSpecImpl``: ``members`` in the iteration order of ``memberIds()``; the inverted
    target assignment of ``isPartitionAssigned`` is built from the members' assignments, as
    Kafka's ``AssignmentTestUtil.invertedTargetAssignment`` builds it."""

    __slots__ = ("members", "subscription_type", "_assigned")

    def __init__(self, members: Mapping[str, MemberSpec], subscription_type: SubscriptionType) -> None:
        self.members = dict(members)
        self.subscription_type = subscription_type
        self._assigned: dict[Uuid, set[int]] = {}
        for spec in self.members.values():
            for t, ps in spec.assignment.items():
                self._assigned.setdefault(t, set()).update(ps)

    def member_ids(self) -> list[str]:
        return list(self.members)

    def is_partition_assigned(self, topic_id: Uuid, partition: int) -> bool:
        ps = self._assigned.get(topic_id)
        return ps is not None and partition in ps


def topic_subscribers(group: GroupSpec, order: list[str]) -> dict[Uuid, list[int]]:
    """Each subscribed topic's subscribers, as ascending positions in ``order``; topics in the
    order a walk over the members' subscriptions (in ``order``) first meets them. Members holding
    the same subscription value are taken together, which gives the same lists as the walk."""
    groups: dict[tuple[Uuid, ...], list[int]] = {}
    for i, m in enumerate(order):
        subs = group.members[m].subscribed_topic_ids
        positions = groups.get(subs)
        if positions is None:
            groups[subs] = [i]
        else:
            positions.append(i)
    parts: dict[Uuid, list[list[int]]] = {}
    for subs, positions in groups.items():
        for t in subs:
            parts.setdefault(t, []).append(positions)
    return {t: ls[0] if len(ls) == 1 else sorted(p for ps in ls for p in ps) for t, ls in parts.items()}


# ``GroupAssignment.members()``: member id -> topic id -> partitions (a ``Set<Integer>``).
GroupAssignment = dict[str, dict[Uuid, set[int]]]


def hash_set_capacity(size: int) -> int:
    """The initial capacity ``new HashSet<>(collection)`` and ``new HashMap<>(map)`` give the
    table: ``max(size / .75f + 1, 16)``."""
    return max(int(size / 0.75) + 1, 16)


def java_hash_set_order(ids: Iterable[Uuid]) -> list[Uuid]:
    """Iteration order of ``new HashSet<>(ids)`` (``ids`` in the source's order)."""
    ids = list(ids)
    return list(JavaHashOrder.of(ids, Uuid.java_hash, hash_set_capacity(len(ids))))


def java_int_set_order(partitions: Iterable[int]) -> tuple[int, ...]:
    """Iteration order of ``new HashSet<>(list)`` of distinct Integers (``Integer.hashCode`` is
    the value); the table is big enough from the start, so it never resizes."""
    ps = list(partitions)
    cap = table_size_for(hash_set_capacity(len(ps)))
    if all(0 <= p < 65536 for p in ps):  # below 2**16 the spread hash is the value itself
        return tuple(sorted(ps, key=lambda p: p & (cap - 1)))
    return tuple(JavaHashOrder.of(ps, lambda p: p, hash_set_capacity(len(ps))))


def record_assignment_order(assignment: Mapping[Uuid, Iterable[int]]) -> dict[Uuid, tuple[int, ...]]:
    """``Assignment.fromRecord``: ``Collectors.toMap`` (a default ``HashMap``, puts in record
    order) of ``new HashSet<>(partitions)``."""
    order = JavaHashOrder.of(assignment, Uuid.java_hash)
    return {t: java_int_set_order(assignment[t]) for t in order}


def member_order(member_ids: Iterable[str]) -> list[str]:
    """Iteration order of ``TargetAssignmentBuilder.build``'s ``HashMap`` of member specs."""
    return list(JavaHashOrder.of(member_ids, string_hash))


def sorted_member_order(member_ids: Iterable[str]) -> list[str]:
    """Iteration order of a ``TreeMap<String, ?>`` (Kafka's tests): ``String.compareTo``."""
    return sorted(member_ids, key=java_str_key)
