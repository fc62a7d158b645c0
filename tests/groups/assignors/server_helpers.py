"""Kafka's test fixtures for the server-side assignors, in Python (``AssignmentTestUtil``)."""

from __future__ import annotations

from kraft.groups.assignors.server import GroupSpec, MemberSpec, SubscriptionType, TopicDescriber, Uuid
from kraft.groups.assignors.server.spec import java_int_set_order, record_assignment_order, sorted_member_order

HOMOGENEOUS = SubscriptionType.HOMOGENEOUS
HETEROGENEOUS = SubscriptionType.HETEROGENEOUS
# the topic ids of OptimizedUniformAssignmentBuilderTest and UniformHeterogeneousAssignmentBuilderTest
T1 = Uuid.from_string("T1-A4s3VTwiI5CTbEp6POw")
T2 = Uuid.from_string("T2-B4s3VTwiI5YHbPp6YUe")
T3 = Uuid.from_string("T3-CU8fVTLCz5YMkLoDQsa")
T4 = Uuid.from_string("T4-Tw9fVTLCz5HbPp6YQsa")


def mk_assignment(*topics: tuple[Uuid, list[int]]) -> dict[Uuid, tuple[int, ...]]:
    """``mkAssignment(mkTopicAssignment(...), ...)``: a ``HashMap`` of ``HashSet``\\ s."""
    return record_assignment_order(dict(topics))


def mk_ordered_assignment(*topics: tuple[Uuid, list[int]]) -> dict[Uuid, tuple[int, ...]]:
    """``mkOrderedAssignment``: a ``LinkedHashMap`` (the given topic order) of ``HashSet``\\ s."""
    return {t: java_int_set_order(ps) for t, ps in topics}


def member(*topics: Uuid, assignment: dict | None = None, instance: str | None = None) -> MemberSpec:
    """``new MemberSubscriptionAndAssignmentImpl(rack, instance id, topics, assignment)``."""
    return MemberSpec(topics, assignment or {}, None, instance)


def tree_group(members: dict[str, MemberSpec], kind: SubscriptionType) -> GroupSpec:
    """A ``GroupSpecImpl`` over a ``TreeMap`` of members (or ``TestGroupSpecImpl``'s sorted ids)."""
    return GroupSpec({m: members[m] for m in sorted_member_order(members)}, kind)


def topics(**counts: int) -> TopicDescriber:
    """``SubscribedTopicDescriberImpl`` over ``topic1=3, topic3=2`` (names of T1..T4)."""
    ids = {"topic1": T1, "topic2": T2, "topic3": T3, "topic4": T4}
    return TopicDescriber({ids[n]: c for n, c in counts.items()})


def sets(assignment) -> dict:
    """A computed or expected assignment with plain sets, for comparison."""
    return {m: {t: set(ps) for t, ps in a.items()} for m, a in assignment.items()}
