"""The uniform assignor against Kafka's own tests (group-coordinator/src/test/java/org/apache/
kafka/coordinator/group/assignor/): ``OptimizedUniformAssignmentBuilderTest`` (homogeneous) and
``UniformHeterogeneousAssignmentBuilderTest``, each expected assignment as Kafka asserts it.
Kafka's homogeneous tests also run ``checkValidityAndBalance``; here :func:`problems` does it."""

from __future__ import annotations

import random

import pytest

from kraft.groups.assignors.server import GroupSpec, PartitionAssignorError, TopicDescriber, UniformAssignor, Uuid
from kraft.groups.assignors.server.check import problems

from .server_helpers import HETEROGENEOUS, HOMOGENEOUS, T1, T2, T3, T4, member, mk_assignment, mk_ordered_assignment, \
    sets, topics, tree_group

A, B, C = "A", "B", "C"


def run(members, kind, described):
    group = tree_group(members, kind)
    result = UniformAssignor().assign(group, described)
    return group, result


def assert_kafka(members, kind, described, expected, check=True):
    group, result = run(members, kind, described)
    assert sets(result) == sets(expected)
    if check:  # checkValidityAndBalance
        assert problems("uniform", group, described, result) == []


# OptimizedUniformAssignmentBuilderTest

def test_homogeneous_testOneMemberNoTopicSubscription():
    group = GroupSpec({A: member()}, HOMOGENEOUS)
    assert UniformAssignor().assign(group, topics(topic1=3)) == {}


def test_homogeneous_testOneMemberSubscribedToNonexistentTopic():
    group = GroupSpec({A: member(T2)}, HOMOGENEOUS)
    with pytest.raises(PartitionAssignorError):
        UniformAssignor().assign(group, topics(topic1=3))


def test_homogeneous_testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks():
    assert_kafka({A: member(T1, T3), B: member(T1, T3)}, HOMOGENEOUS, topics(topic1=3, topic3=2),
                 {A: {T1: {0}, T3: {0, 1}}, B: {T1: {1, 2}}})


def test_homogeneous_testFirstAssignmentNumMembersGreaterThanTotalNumPartitions():
    assert_kafka({A: member(T3), B: member(T3), C: member(T3)}, HOMOGENEOUS, topics(topic3=2),
                 {A: {T3: {0}}, B: {T3: {1}}, C: {}})


def test_homogeneous_testValidityAndBalanceForLargeSampleSet():
    """Kafka asserts only validity and balance here (random topic ids)."""
    rng = random.Random(848)
    ids = [Uuid(rng.getrandbits(63), rng.getrandbits(63)) for _ in range(1, 100)]
    described = TopicDescriber({t: 3 for t in ids})
    members = {f"member{i}": member(*ids) for i in range(1, 50)}
    group, result = run(members, HOMOGENEOUS, described)
    assert problems("uniform", group, described, result) == []


def test_homogeneous_testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment():
    assert_kafka({A: member(T1, T2, assignment=mk_ordered_assignment((T1, [0, 1]), (T2, [0, 1]))),
                  B: member(T1, T2, assignment=mk_ordered_assignment((T1, [2]), (T2, [2])))},
                 HOMOGENEOUS, topics(topic1=3, topic2=3),
                 {A: {T1: {0, 1}, T2: {0}}, B: {T1: {2}, T2: {1, 2}}})


def test_homogeneous_testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics():
    assert_kafka({A: member(T1, T2, assignment=mk_ordered_assignment((T1, [0, 2]), (T2, [0]))),
                  B: member(T1, T2, assignment=mk_ordered_assignment((T1, [1]), (T2, [1, 2])))},
                 HOMOGENEOUS, topics(topic1=6, topic2=5),
                 {A: {T1: {0, 2, 3}, T2: {0, 3, 4}}, B: {T1: {1, 4, 5}, T2: {1, 2}}})


def test_homogeneous_testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics():
    assert_kafka({A: member(T1, T2, assignment=mk_ordered_assignment((T1, [0, 2]), (T2, [0]))),
                  B: member(T1, T2, assignment=mk_ordered_assignment((T1, [1]), (T2, [1, 2]))),
                  C: member(T1, T2)},
                 HOMOGENEOUS, topics(topic1=3, topic2=3),
                 {A: {T1: {0, 2}}, B: {T1: {1}, T2: {1}}, C: {T2: {0, 2}}})


def test_homogeneous_testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics():
    assert_kafka({A: member(T1, T2, assignment=mk_assignment((T1, [0]), (T2, [0]))),
                  B: member(T1, T2, assignment=mk_assignment((T1, [1]), (T2, [1])))},
                 HOMOGENEOUS, topics(topic1=3, topic2=3),
                 {A: {T1: {0}, T2: {0, 2}}, B: {T1: {1, 2}, T2: {1}}})


def test_homogeneous_testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics():
    assert_kafka({A: member(T2, assignment=mk_assignment((T1, [0]), (T2, [0]))),
                  B: member(T2, assignment=mk_assignment((T1, [1]), (T2, [1])))},
                 HOMOGENEOUS, topics(topic1=2, topic2=2),
                 {A: {T2: {0}}, B: {T2: {1}}})


# UniformHeterogeneousAssignmentBuilderTest (its TestGroupSpecImpl sorts the member ids, as
# tree_group does); Kafka asserts the exact assignments and no separate balance check.

def test_heterogeneous_testTwoMembersNoTopicSubscription():
    group = tree_group({A: member(), B: member()}, HETEROGENEOUS)
    assert UniformAssignor().assign(group, topics(topic1=3)) == {}


def test_heterogeneous_testTwoMembersSubscribedToNonexistentTopics():
    group = tree_group({A: member(T3), B: member(T2)}, HETEROGENEOUS)
    with pytest.raises(PartitionAssignorError):
        UniformAssignor().assign(group, topics(topic1=3))


def test_heterogeneous_testFirstAssignmentTwoMembersTwoTopics():
    assert_kafka({A: member(T1, T3), B: member(T3)}, HETEROGENEOUS, topics(topic1=3, topic3=6),
                 {A: {T1: {0, 1, 2}, T3: {4}}, B: {T3: {0, 1, 2, 3, 5}}}, check=False)


def test_heterogeneous_testFirstAssignmentNumMembersGreaterThanTotalNumPartitions():
    assert_kafka({A: member(T3), B: member(T3), C: member(T1)}, HETEROGENEOUS, topics(topic3=1, topic1=2),
                 {A: {T3: {0}}, B: {}, C: {T1: {0, 1}}}, check=False)


def test_heterogeneous_testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment():
    assert_kafka({A: member(T1, assignment=mk_assignment((T1, [0, 1, 2]))),
                  B: member(T1, T2, assignment=mk_assignment((T1, [3]), (T2, [0]))),
                  C: member(T1, T2, T3, assignment=mk_assignment((T1, [4, 5]), (T2, [1, 2, 3]), (T3, [0, 1, 2, 3])))},
                 HETEROGENEOUS, topics(topic1=6, topic2=4, topic3=4),
                 {A: {T1: {0, 1, 2, 5}}, B: {T1: {3}, T2: {0, 1, 2, 3}}, C: {T1: {4}, T3: {0, 1, 2, 3}}},
                 check=False)


def test_heterogeneous_testReassignmentWhenPartitionsAreAddedForTwoMembers():
    described = TopicDescriber({T1: 6, T2: 5, T3: 3, T4: 3})
    assert_kafka({A: member(T1, T3, assignment=mk_assignment((T1, [0, 1, 2, 3]), (T3, [0, 1]))),
                  B: member(T1, T2, T3, T4, assignment=mk_assignment((T2, [0, 1, 2]), (T4, [0, 1, 2])))},
                 HETEROGENEOUS, described,
                 {A: {T1: {0, 1, 2, 3, 4, 5}, T3: {0, 1, 2}}, B: {T2: {0, 1, 2, 3, 4}, T4: {0, 1, 2}}}, check=False)


def test_heterogeneous_testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics():
    assert_kafka({A: member(T1, assignment=mk_assignment((T1, [0, 2]), (T2, [0]))),
                  B: member(T1, T2, assignment=mk_assignment((T1, [1]), (T2, [1, 2]))),
                  C: member(T1, T2)},
                 HETEROGENEOUS, topics(topic1=6, topic2=7),
                 {A: {T1: {0, 2, 3, 4, 5}}, B: {T1: {1}, T2: {1, 2, 6}}, C: {T2: {0, 3, 4, 5}}}, check=False)


def test_heterogeneous_testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics():
    assert_kafka({A: member(T1, T3, assignment=mk_assignment((T1, [0, 1, 2]), (T3, [0, 1]))),
                  B: member(T2, assignment=mk_assignment((T2, [3, 4, 5, 6])))},
                 HETEROGENEOUS, topics(topic1=3, topic2=8, topic3=3),
                 {A: {T1: {0, 1, 2}, T3: {0, 1, 2}}, B: {T2: set(range(8))}}, check=False)


def test_heterogeneous_testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics():
    assert_kafka({A: member(T1, assignment=mk_assignment((T1, [0, 2]), (T2, [1, 3]))),
                  B: member(T1, T2, assignment=mk_assignment((T1, [1]), (T2, [0, 2, 4])))},
                 HETEROGENEOUS, topics(topic1=3, topic2=5),
                 {A: {T1: {0, 1, 2}}, B: {T2: {0, 1, 2, 3, 4}}}, check=False)


def test_heterogeneous_testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions():
    assert_kafka({A: member(T1, T2, T3, assignment=mk_assignment((T1, [0, 1]), (T2, [0, 1]), (T3, [0, 1]))),
                  B: member(T1, T2, T3)},
                 HETEROGENEOUS, topics(topic1=2, topic2=2, topic3=2),
                 {A: {T2: {0}, T3: {0, 1}}, B: {T1: {0, 1}, T2: {1}}}, check=False)


def test_heterogeneous_testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions():
    assert_kafka({A: member(T1), B: member()}, HETEROGENEOUS, topics(topic1=3),
                 {A: {T1: {0, 1, 2}}, B: {}}, check=False)
