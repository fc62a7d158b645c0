"""The server-side range assignor against Kafka's ``RangeAssignorTest``
(group-coordinator/src/test/java/org/apache/kafka/coordinator/group/assignor/), each expected
assignment as Kafka asserts it. Kafka draws its topic ids at random; the range assignor's result
does not depend on them, so fixed ids stand in."""

from __future__ import annotations

import pytest

from kraft.groups.assignors.server import GroupSpec, PartitionAssignorError, ServerRangeAssignor
from kraft.groups.assignors.server.check import problems

from .server_helpers import HETEROGENEOUS, HOMOGENEOUS, T1, T2, T3, member, mk_assignment, sets, topics, tree_group

A, B, C = "A", "B", "C"


def assert_kafka(members, kind, described, expected):
    group = tree_group(members, kind)
    result = ServerRangeAssignor().assign(group, described)
    assert sets(result) == sets(expected)
    assert problems("range", group, described, result) == []


def test_range_testOneMemberNoTopic():
    assert ServerRangeAssignor().assign(GroupSpec({A: member()}, HOMOGENEOUS), topics(topic1=3)) == {A: {}}


def test_range_testOneMemberSubscribedToNonExistentTopic():
    with pytest.raises(PartitionAssignorError):
        ServerRangeAssignor().assign(GroupSpec({A: member(T2)}, HOMOGENEOUS), topics(topic1=3))


def test_range_testFirstAssignmentTwoMembersTwoTopicsSameSubscriptions():
    assert_kafka({A: member(T1, T3), B: member(T1, T3)}, HOMOGENEOUS, topics(topic1=3, topic3=2),
                 {A: {T1: {0, 1}, T3: {0}}, B: {T1: {2}, T3: {1}}})


def test_range_testFirstAssignmentThreeMembersThreeTopicsDifferentSubscriptions():
    assert_kafka({A: member(T1, T2), B: member(T3), C: member(T2, T3)}, HETEROGENEOUS,
                 topics(topic1=3, topic2=3, topic3=2),
                 {A: {T1: {0, 1, 2}, T2: {0, 1}}, B: {T3: {0}}, C: {T2: {2}, T3: {1}}})


def test_range_testFirstAssignmentNumMembersGreaterThanNumPartitions():
    assert_kafka({A: member(T1, T3), B: member(T1, T3), C: member(T1, T3)}, HOMOGENEOUS, topics(topic1=3, topic3=2),
                 {A: {T1: {0}, T3: {0}}, B: {T1: {1}, T3: {1}}, C: {T1: {2}}})


def test_range_testStaticMembership():
    described = topics(topic1=3)
    members = {A: member(T1, instance="instanceA"), B: member(T1, instance="instanceB")}
    first = ServerRangeAssignor().assign(tree_group(members, HOMOGENEOUS), described)
    del members[A]
    members["memberA1"] = member(T1, instance="instanceA")
    second = ServerRangeAssignor().assign(tree_group(members, HOMOGENEOUS), described)
    assert second["memberA1"] == first[A] and second[B] == first[B]


def test_range_testMixedStaticMembership():
    described = topics(topic1=5)
    members = {A: member(T1, instance="instanceA"), C: member(T1, instance="instanceC"), B: member(T1)}
    first = ServerRangeAssignor().assign(tree_group(members, HOMOGENEOUS), described)
    del members[A]
    members["memberA1"] = member(T1, instance="instanceA")
    second = ServerRangeAssignor().assign(tree_group(members, HOMOGENEOUS), described)
    assert second["memberA1"] == first[A] and second[B] == first[B] and second[C] == first[C]


def test_range_testReassignmentNumMembersGreaterThanNumPartitionsWhenOneMemberAdded():
    assert_kafka({A: member(T1, T2, assignment=mk_assignment((T1, [0]), (T2, [0]))),
                  B: member(T1, T2, assignment=mk_assignment((T1, [1]), (T2, [1]))),
                  C: member(T1, T2)},
                 HOMOGENEOUS, topics(topic1=2, topic2=2),
                 {A: {T1: {0}, T2: {0}}, B: {T1: {1}, T2: {1}}, C: {}})


def test_range_testReassignmentWhenOnePartitionAddedForTwoMembersTwoTopics():
    assert_kafka({A: member(T1, T2, assignment=mk_assignment((T1, [0, 1]), (T2, [0, 1]))),
                  B: member(T1, T2, assignment=mk_assignment((T1, [2]), (T2, [2])))},
                 HOMOGENEOUS, topics(topic1=4, topic2=4),
                 {A: {T1: {0, 1}, T2: {0, 1}}, B: {T1: {2, 3}, T2: {2, 3}}})


def test_range_testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics():
    assert_kafka({A: member(T1, T2, assignment=mk_assignment((T1, [0, 1]), (T2, [0, 1]))),
                  B: member(T1, T2, assignment=mk_assignment((T1, [2]), (T2, [2]))),
                  C: member(T1, T2)},
                 HOMOGENEOUS, topics(topic1=3, topic2=3),
                 {A: {T1: {0}, T2: {0}}, B: {T1: {1}, T2: {1}}, C: {T1: {2}, T2: {2}}})


def test_range_testReassignmentWhenOneMemberAddedAndOnePartitionAfterInitialAssignmentWithTwoMembersTwoTopics():
    assert_kafka({A: member(T1, T2, assignment=mk_assignment((T1, [0, 1]), (T2, [0, 1]))),
                  B: member(T1, T2, assignment=mk_assignment((T1, [2]), (T2, [2]))),
                  C: member(T1)},
                 HETEROGENEOUS, topics(topic1=4, topic2=3),
                 {A: {T1: {0, 1}, T2: {0, 1}}, B: {T1: {2}, T2: {2}}, C: {T1: {3}}})


def test_range_testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithTwoMembersTwoTopics():
    assert_kafka({B: member(T1, T2, assignment=mk_assignment((T1, [2]), (T2, [2])))},
                 HOMOGENEOUS, topics(topic1=3, topic2=3),
                 {B: {T1: {0, 1, 2}, T2: {0, 1, 2}}})


def test_range_testReassignmentWhenMultipleSubscriptionsRemovedAfterInitialAssignmentWithThreeMembersTwoTopics():
    assert_kafka({A: member(T1, assignment=mk_assignment((T1, [0, 1, 2]), (T2, [0]))),
                  B: member(T1, T2, T3, assignment=mk_assignment((T2, [1]))),
                  C: member(T2, assignment=mk_assignment((T2, [2]), (T3, [0, 1])))},
                 HETEROGENEOUS, topics(topic1=3, topic2=3, topic3=2),
                 {A: {T1: {0, 1}}, B: {T1: {2}, T2: {0, 1}, T3: {0, 1}}, C: {T2: {2}}})


def test_range_static_members_sort_first():
    """``sortMemberIds`` javadoc: static members (by instance id) before dynamic ones (by member
    id); none of RangeAssignorTest's cases tells the two orders apart."""
    members = {A: member(T1), B: member(T1, instance="i2"), C: member(T1, instance="i1")}
    assert_kafka(members, HOMOGENEOUS, topics(topic1=3), {C: {T1: {0}}, B: {T1: {1}}, A: {T1: {2}}})
