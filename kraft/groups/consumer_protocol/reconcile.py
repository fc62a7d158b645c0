"""The coordinator's per-member reconciliation: Kafka's ``CurrentAssignmentBuilder`` and
``ConsumerGroup.maybeUpdatePartitionEpoch``, as pure functions of the member record (the spec's
``NextAssignment``, ``Build``, ``Reconcile`` and ``UpdatePartitionEpochs``,
spec/ConsumerGroupProtocol.tla).

A member record is ``ConsumerGroupMember``'s part that decides ownership: its member epoch and
previous epoch, its state, the partitions assigned to it, the partitions pending revocation, the
epoch of the target it reconciles towards (``tepoch``) and the topics it subscribes to (``sub``,
``subscribedTopicNames``).
"""

from __future__ import annotations

from typing import Mapping

import attrs

from kraft.groups.assignors import TopicPartition
from kraft.groups.consumer_protocol.messages import NO_PARTITION_EPOCH, Partitions, ServerState

EMPTY: Partitions = frozenset()


@attrs.frozen
class MemberRecord:
    epoch: int = 0
    prev: int = -1
    state: ServerState = ServerState.STABLE
    assigned: Partitions = EMPTY
    pending: Partitions = EMPTY
    tepoch: int = 0
    sub: frozenset[str] = frozenset()

    @property
    def held(self) -> Partitions:
        """Assigned or pending revocation: what the member may still own."""
        return self.assigned | self.pending


NEW_MEMBER = MemberRecord()


def owns_revoked(owned: Partitions | None, pending: Partitions) -> bool:
    """``ownsRevokedPartitions``: a request without owned partitions counts as still owning."""
    return owned is None or bool(owned & pending)


def next_assignment(m: MemberRecord, epoch_if_revoking: int, assigned_now: Partitions, owned: Partitions | None,
                    target: Partitions, target_epoch: int,
                    partition_epoch: Mapping[TopicPartition, int]) -> MemberRecord:
    """``CurrentAssignmentBuilder.computeNextAssignment``: keep what stays, put the rest into
    pending revocation (UNREVOKED_PARTITIONS, epoch unchanged) unless the request's ``owned``
    partitions show the member owns none of it any more, withhold a target partition another
    member still holds (UNRELEASED_PARTITIONS); a partition this member is itself revoking is not
    withheld from it."""
    kept = assigned_now & target
    revoking = assigned_now - kept
    wanted = target - kept
    unreleased = frozenset(p for p in wanted
                           if partition_epoch.get(p, NO_PARTITION_EPOCH) != NO_PARTITION_EPOCH and p not in m.pending)
    if revoking and owns_revoked(owned, revoking):
        return MemberRecord(epoch_if_revoking, m.epoch, ServerState.UNREVOKED_PARTITIONS, kept, revoking, target_epoch,
                            m.sub)
    state = ServerState.UNRELEASED_PARTITIONS if unreleased else ServerState.STABLE
    return MemberRecord(target_epoch, m.epoch, state, kept | (wanted - unreleased), EMPTY, target_epoch, m.sub)


def build(m: MemberRecord, owned: Partitions | None, target: Partitions, target_epoch: int,
          partition_epoch: Mapping[TopicPartition, int], revocation_ack_ignored: bool = False) -> MemberRecord:
    """``CurrentAssignmentBuilder.build``.  ``revocation_ack_ignored``: the variant
    RevocationAckIgnoredOnNewTarget (a new target recomputes a revoking member from all it held)."""
    if m.state is ServerState.STABLE:
        if m.epoch != target_epoch:
            return next_assignment(m, m.epoch, m.assigned, owned, target, target_epoch, partition_epoch)
        return m
    if m.state is ServerState.UNREVOKED_PARTITIONS:
        if revocation_ack_ignored and target_epoch != m.tepoch:
            return next_assignment(m, m.epoch, m.held, None, target, target_epoch, partition_epoch)
        if owns_revoked(owned, m.pending):
            return m
        return next_assignment(m, m.epoch + 1, m.assigned, owned, target, target_epoch, partition_epoch)
    return next_assignment(m, m.epoch, m.assigned, owned, target, target_epoch, partition_epoch)


def reconcile(m: MemberRecord, owned: Partitions | None, target: Partitions, target_epoch: int,
              partition_epoch: Mapping[TopicPartition, int], revocation_ack_ignored: bool = False) -> MemberRecord:
    """``maybeReconcile``: nothing to do for a member STABLE at the target epoch."""
    if m.state is ServerState.STABLE and m.epoch == target_epoch:
        return m
    return build(m, owned, target, target_epoch, partition_epoch, revocation_ack_ignored)


def update_partition_epochs(pe: dict[TopicPartition, int], old: MemberRecord | None, new: MemberRecord | None,
                            epoch_lost_on_reassign: bool = False) -> None:
    """``ConsumerGroup.maybeUpdatePartitionEpoch`` in place (``old`` None: a new member; ``new``
    None: a removed one): the old member's partitions lose their epoch, the new member's take its
    epoch.  ``epoch_lost_on_reassign``: the variant PartitionEpochLostOnReassign (assigned and
    pending updated separately, so a partition moving between them loses its epoch)."""
    if epoch_lost_on_reassign and old is not None and new is not None:
        for before, after in ((old.assigned, new.assigned), (old.pending, new.pending)):
            if before != after:
                for p in before:
                    pe[p] = NO_PARTITION_EPOCH
                for p in after:
                    pe[p] = new.epoch
        return
    for p in (old.held if old is not None else EMPTY):
        pe[p] = NO_PARTITION_EPOCH
    for p in (new.held if new is not None else EMPTY):
        pe[p] = new.epoch  # type: ignore[union-attr]
