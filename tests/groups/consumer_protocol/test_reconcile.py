"""The coordinator's reconciliation (:mod:`kraft.groups.consumer_protocol.reconcile`) and member
epoch validation on cases transcribed from Kafka's tests (apache/kafka, group-coordinator):

- ``modern/consumer/CurrentAssignmentBuilderTest`` (each test below names its method); Kafka's two
  topics become ``a`` and ``b``, its partition-epoch function a map over their partitions;
- ``GroupMetadataManagerTest.testConsumerGroupMemberEpochValidation`` for
  ``throwIfConsumerGroupMemberEpochIsInvalid``, through the coordinator's heartbeat path.

A member record is compared on the fields Kafka's ``ConsumerGroupMember`` has: state, member
epoch, previous epoch, assigned partitions and partitions pending revocation.
"""

from __future__ import annotations

import pytest

from kraft.groups.assignors import TopicPartition
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.coordinator import GroupCoordinator
from kraft.groups.consumer_protocol.messages import Errors, Heartbeat, Partitions, ServerState
from kraft.groups.consumer_protocol.reconcile import MemberRecord, reconcile

STABLE, UNREVOKED, UNRELEASED = (ServerState.STABLE, ServerState.UNREVOKED_PARTITIONS,
                                 ServerState.UNRELEASED_PARTITIONS)


def parts(a: tuple[int, ...] = (), b: tuple[int, ...] = ()) -> Partitions:
    return frozenset({TopicPartition("a", p) for p in a} | {TopicPartition("b", p) for p in b})


def epochs(value: int) -> dict[TopicPartition, int]:
    """Kafka's ``withCurrentPartitionEpoch((topicId, partitionId) -> value)``."""
    return {p: value for p in parts(tuple(range(8)), tuple(range(8)))}


def member(state: ServerState, epoch: int, prev: int, assigned: Partitions,
           pending: Partitions = frozenset()) -> MemberRecord:
    return MemberRecord(epoch, prev, state, assigned, pending, tepoch=epoch)


def kafka_view(m: MemberRecord) -> tuple[ServerState, int, int, Partitions, Partitions]:
    return m.state, m.epoch, m.prev, m.assigned, m.pending


def test_stable_to_stable() -> None:
    """testStableToStable"""
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    got = reconcile(m, None, parts((1, 2, 3), (4, 5, 6)), 11, epochs(10))
    assert kafka_view(got) == (STABLE, 11, 10, parts((1, 2, 3), (4, 5, 6)), frozenset())


def test_stable_to_stable_with_new_partitions() -> None:
    """testStableToStableWithNewPartitions"""
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    got = reconcile(m, None, parts((1, 2, 3, 4), (4, 5, 6, 7)), 11, epochs(-1))
    assert kafka_view(got) == (STABLE, 11, 10, parts((1, 2, 3, 4), (4, 5, 6, 7)), frozenset())


def test_stable_to_unrevoked_partitions() -> None:
    """testStableToUnrevokedPartitions: the epoch stays until the revocation is acknowledged."""
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    got = reconcile(m, None, parts((2, 3, 4), (5, 6, 7)), 11, epochs(-1))
    assert kafka_view(got) == (UNREVOKED, 10, 10, parts((2, 3), (5, 6)), parts((1,), (4,)))


def test_stable_to_unreleased_partitions() -> None:
    """testStableToUnreleasedPartitions: a partition another member still holds is withheld."""
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    got = reconcile(m, None, parts((1, 2, 3, 4), (4, 5, 6, 7)), 11, epochs(10))
    assert kafka_view(got) == (UNRELEASED, 11, 10, parts((1, 2, 3), (4, 5, 6)), frozenset())


def test_stable_to_unreleased_partitions_with_owned_partitions_not_having_revoked_partitions() -> None:
    """testStableToUnreleasedPartitionsWithOwnedPartitionsNotHavingRevokedPartitions: the request's
    owned list (empty) lacks the partition to revoke, so it is released at once instead of waiting
    for an acknowledgement the consumer has no reason to send (without this the rebalance stalls
    until the rebalance timeout)."""
    m = member(STABLE, 10, 10, parts((1, 2, 3), (4, 5, 6)))
    pe = {**epochs(-1), **{p: 10 for p in parts((), tuple(range(8)))}}
    got = reconcile(m, frozenset(), parts((1, 2, 3), (4, 5, 7)), 11, pe)
    assert kafka_view(got) == (UNRELEASED, 11, 10, parts((1, 2, 3), (4, 5)), frozenset())


def test_unrevoked_partitions_to_stable() -> None:
    """testUnrevokedPartitionsToStable: the owned list no longer has the revoked partitions."""
    m = member(UNREVOKED, 10, 10, parts((2, 3), (5, 6)), parts((1,), (4,)))
    got = reconcile(m, parts((2, 3), (5, 6)), parts((2, 3), (5, 6)), 11, epochs(-1))
    assert kafka_view(got) == (STABLE, 11, 10, parts((2, 3), (5, 6)), frozenset())


@pytest.mark.parametrize("owned", [None, parts((1, 2, 3), (5, 6)), parts((2, 3), (4, 5, 6))],
                         ids=["no-list", "owns-a1", "owns-b4"])
def test_remains_in_unrevoked_partitions(owned: Partitions | None) -> None:
    """testRemainsInUnrevokedPartitions: no list, or a list still holding a revoked partition."""
    m = member(UNREVOKED, 10, 10, parts((2, 3), (5, 6)), parts((1,), (4,)))
    assert reconcile(m, owned, parts((3,), (6,)), 12, epochs(-1)) == m


def test_unrevoked_partitions_to_unrevoked_partitions() -> None:
    """testUnrevokedPartitionsToUnrevokedPartitions: acknowledged, then the next target revokes more."""
    m = member(UNREVOKED, 10, 10, parts((2, 3), (5, 6)), parts((1,), (4,)))
    got = reconcile(m, parts((2, 3), (5, 6)), parts((3,), (6,)), 12, epochs(-1))
    assert kafka_view(got) == (UNREVOKED, 11, 10, parts((3,), (6,)), parts((2,), (5,)))


def test_unrevoked_partitions_to_unreleased_partitions() -> None:
    """testUnrevokedPartitionsToUnreleasedPartitions"""
    m = member(UNREVOKED, 11, 10, parts((2, 3), (5, 6)))
    got = reconcile(m, parts((2, 3), (5, 6)), parts((2, 3, 4), (5, 6, 7)), 11, epochs(10))
    assert kafka_view(got) == (UNRELEASED, 11, 11, parts((2, 3), (5, 6)), frozenset())


def test_unreleased_partitions_to_stable() -> None:
    """testUnreleasedPartitionsToStable"""
    m = member(UNRELEASED, 11, 11, parts((2, 3), (5, 6)))
    got = reconcile(m, None, parts((2, 3), (5, 6)), 12, epochs(10))
    assert kafka_view(got) == (STABLE, 12, 11, parts((2, 3), (5, 6)), frozenset())


def test_unreleased_partitions_to_stable_with_new_partitions() -> None:
    """testUnreleasedPartitionsToStableWithNewPartitions: the withheld partitions were released."""
    m = member(UNRELEASED, 11, 11, parts((2, 3), (5, 6)))
    got = reconcile(m, None, parts((2, 3, 4), (5, 6, 7)), 11, epochs(-1))
    assert kafka_view(got) == (STABLE, 11, 11, parts((2, 3, 4), (5, 6, 7)), frozenset())


def test_unreleased_partitions_to_unreleased_partitions() -> None:
    """testUnreleasedPartitionsToUnreleasedPartitions"""
    m = member(UNRELEASED, 11, 11, parts((2, 3), (5, 6)))
    got = reconcile(m, None, parts((2, 3, 4), (5, 6, 7)), 11, epochs(10))
    assert kafka_view(got) == kafka_view(m)


def test_unreleased_partitions_to_unrevoked_partitions() -> None:
    """testUnreleasedPartitionsToUnrevokedPartitions"""
    m = member(UNRELEASED, 11, 11, parts((2, 3), (5, 6)))
    got = reconcile(m, None, parts((3,), (6,)), 12, epochs(10))
    assert kafka_view(got) == (UNREVOKED, 11, 11, parts((3,), (6,)), parts((2,), (5,)))


# ---------------------------------------------------------------- member epoch validation

FOO = (("foo", 4),)


def foo(*ps: int) -> Partitions:
    return frozenset(TopicPartition("foo", p) for p in ps)


def coordinator(**variant: bool) -> GroupCoordinator:
    """GroupMetadataManagerTest.testConsumerGroupMemberEpochValidation's group: one member STABLE at
    epoch 100 (previous 99) holding foo-1..3, group and assignment epoch 100."""
    co = GroupCoordinator("fooup", ProtocolConfig(topics=FOO, **variant))
    co.group_epoch = co.assignment_epoch = 100
    co.target = {"m": foo(1, 2, 3)}
    co.members = {"m": MemberRecord(100, 99, STABLE, foo(1, 2, 3), frozenset(), 100, frozenset({"foo"}))}
    co.partition_epoch = {p: 100 for p in foo(1, 2, 3)}
    return co


def heartbeat(co: GroupCoordinator, epoch: int, owned: Partitions | None) -> tuple[Errors, int]:
    (resp,) = co.step(Heartbeat("m", 0, epoch, owned, ("foo",)), 0).messages
    return resp.error, resp.member_epoch


@pytest.mark.parametrize("epoch,owned,expected", [
    (200, None, (Errors.FENCED_MEMBER_EPOCH, 0)),     # greater than the member's epoch
    (50, None, (Errors.FENCED_MEMBER_EPOCH, 0)),      # smaller, not the previous one
    (99, None, (Errors.FENCED_MEMBER_EPOCH, 0)),      # the previous epoch without its partitions
    (99, foo(1, 2), (Errors.NONE, 100)),              # the previous epoch with a subset: the lost response
    (99, foo(1, 2, 3, 0), (Errors.FENCED_MEMBER_EPOCH, 0)),   # the previous epoch, not a subset
], ids=["greater", "smaller", "previous-without-partitions", "previous-with-subset", "previous-not-subset"])
def test_member_epoch_validation(epoch: int, owned: Partitions | None, expected: tuple[Errors, int]) -> None:
    """testConsumerGroupMemberEpochValidation (its four cases, and a list that is not a subset)."""
    assert heartbeat(coordinator(), epoch, owned) == expected


def test_any_older_epoch_is_accepted_with_the_variant() -> None:
    assert heartbeat(coordinator(AcceptAnyOlderEpoch=True), 50, None) == (Errors.NONE, 100)


def test_a_known_member_rejoins_with_epoch_zero() -> None:
    """Epoch 0 from a known member is a rejoin (its partitions are kept); RejoinEpochZeroRejected
    fences it instead, 0 not being its previous epoch."""
    assert heartbeat(coordinator(), 0, frozenset()) == (Errors.NONE, 100)
    assert heartbeat(coordinator(RejoinEpochZeroRejected=True), 0, frozenset()) == (Errors.FENCED_MEMBER_EPOCH, 0)
