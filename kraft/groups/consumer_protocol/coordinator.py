"""The group coordinator of the consumer protocol: one group, its ConsumerGroupHeartbeat path,
target assignment, per-member reconciliation, fencing, timers and offset commits with member
epochs (spec/ConsumerGroupProtocol.tla, coordinator actions; docs/consumer-protocol.md).

Kafka: ``GroupMetadataManager.consumerGroupHeartbeat`` (join with epoch 0, leave with -1, an
unknown member with another epoch gets UNKNOWN_MEMBER_ID), ``throwIfConsumerGroupMemberEpochIsInvalid``
(an epoch above the member's is fenced; a lower one is accepted only if it is the previous epoch
and the reported owned partitions are a subset of the assigned ones), ``updateTargetAssignment``
(a new target when the group epoch exceeds the assignment epoch, computed by the server-side
assignor), ``CurrentAssignmentBuilder`` (:mod:`.reconcile`), the session and rebalance timeouts
(``scheduleConsumerGroupSessionTimeout``, ``scheduleConsumerGroupRebalanceTimeout``,
``consumerGroupFenceMember``) and ``ConsumerGroup.validateOffsetCommit``.

Every member subscribes to every topic of the config (one subscription: only membership moves the
group epoch), as the spec abstracts it.  The member id is the client's id (KIP-1082).
"""

from __future__ import annotations

import hashlib
from typing import Any

from kraft.core.node import Node, Pick
from kraft.groups.assignors import TopicPartition
from kraft.groups.assignors.server import ASSIGNORS
from kraft.groups.assignors.server.spec import GroupSpec, MemberSpec, SubscriptionType, TopicDescriber, Uuid
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.messages import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    Errors,
    Heartbeat,
    HeartbeatResponse,
    OffsetCommit,
    Partitions,
    ServerState,
)
from kraft.groups.consumer_protocol.protocol import COORDINATOR, PROTOCOL
from kraft.groups.consumer_protocol.reconcile import NEW_MEMBER, MemberRecord, reconcile, update_partition_epochs
from kraft.groups.offsets import OffsetStore


def topic_id(name: str) -> Uuid:
    """A topic's id, fixed by its name (the simulator creates its topics once)."""
    d = hashlib.sha256(name.encode()).digest()
    return Uuid(int.from_bytes(d[:8], "big", signed=True), int.from_bytes(d[8:16], "big", signed=True))


class GroupCoordinator(Node, declaration=PROTOCOL, actor=COORDINATOR):
    """One consumer group at its coordinator.  ``records``: what the coordinator wrote, in order,
    as (kind, fields) pairs (:mod:`.records` turns them into ``__consumer_offsets`` records)."""

    def __init__(self, group_id: str, config: ProtocolConfig) -> None:
        self.id = COORDINATOR
        self.group_id = group_id
        self.config = config
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.target: dict[str, Partitions] = {}
        self.members: dict[str, MemberRecord] = {}
        self.partition_epoch: dict[TopicPartition, int] = {}
        self.offsets = OffsetStore()
        self.last_heartbeat: dict[str, int] = {}
        self.revoking_since: dict[str, int] = {}
        self.records: list[tuple[str, dict[str, Any]]] = []
        self._ids = {t: topic_id(t) for t in config.topic_names}
        self._names = {v: k for k, v in self._ids.items()}

    # ------------------------------------------------------------------ heartbeats
    def handle_heartbeat(self, now: int, m: Heartbeat) -> HeartbeatResponse | None:
        """Spec HandleHeartbeat: leave, unknown member, fenced epoch, or accept and reconcile."""
        c, mem = m.member_id, self.members.get(m.member_id)
        if m.member_epoch == LEAVE_EPOCH:
            if mem is not None:
                self._remove(c, "leave")
            return None
        if mem is None and m.member_epoch != JOIN_EPOCH:
            return self._respond(m, Errors.UNKNOWN_MEMBER_ID, 0, None)
        rejoin = m.member_epoch == JOIN_EPOCH and not self.config.RejoinEpochZeroRejected
        if mem is not None and not rejoin and not self._epoch_valid(mem, m.member_epoch, m.topic_partitions):
            return self._respond(m, Errors.FENCED_MEMBER_EPOCH, 0, None)
        return self._accept(now, m, mem)

    def _epoch_valid(self, mem: MemberRecord, epoch: int, owned: Partitions | None) -> bool:
        """``throwIfConsumerGroupMemberEpochIsInvalid`` (AcceptAnyOlderEpoch: any lower epoch)."""
        if epoch == mem.epoch:
            return True
        if epoch < mem.epoch and self.config.AcceptAnyOlderEpoch:
            return True
        return epoch < mem.epoch and epoch == mem.prev and owned is not None and owned <= mem.assigned

    def _accept(self, now: int, m: Heartbeat, old: MemberRecord | None) -> HeartbeatResponse:
        c = m.member_id
        if old is None:
            self.group_epoch += 1
            self.records.append(("member", {"member": c, "topics": self.config.topic_names}))
            self.records.append(("group_epoch", {"epoch": self.group_epoch}))
        if self.group_epoch > self.assignment_epoch:
            self.target = self._compute_target({*self.members, c})
            self.assignment_epoch = self.group_epoch
            self.records.append(("target", {"epoch": self.assignment_epoch,
                                            "members": {x: sorted(ps, key=str) for x, ps in self.target.items()}}))
        new = reconcile(old or NEW_MEMBER, m.topic_partitions, self.target.get(c, frozenset()), self.assignment_epoch,
                        self.partition_epoch, self.config.RevocationAckIgnoredOnNewTarget)
        self._set_member(now, c, old, new)
        self.last_heartbeat[c] = now
        changed = old is None or new.assigned != old.assigned
        full = m.member_epoch == JOIN_EPOCH or m.topic_partitions is not None
        return self._respond(m, Errors.NONE, new.epoch, new.assigned if changed or full else None)

    def _set_member(self, now: int, c: str, old: MemberRecord | None, new: MemberRecord) -> None:
        self.members[c] = new
        update_partition_epochs(self.partition_epoch, old, new, self.config.PartitionEpochLostOnReassign)
        if new.state is ServerState.UNREVOKED_PARTITIONS:
            self.revoking_since.setdefault(c, now)
        else:
            self.revoking_since.pop(c, None)
        if new != old:
            self.records.append(("current", {"member": c, "epoch": new.epoch, "prev": new.prev,
                                             "state": new.state.value, "assigned": sorted(new.assigned, key=str),
                                             "pending": sorted(new.pending, key=str)}))

    def _respond(self, m: Heartbeat, error: Errors, epoch: int, assignment: Partitions | None) -> HeartbeatResponse:
        resp = HeartbeatResponse(m.member_id, m.conn, error, epoch, assignment, self.config.heartbeat_interval_ms)
        self.send(resp)
        return resp

    def _compute_target(self, members: set[str]) -> dict[str, Partitions]:
        """The server-side assignor over every member (all subscribed to every topic), each with
        its current target as the assignor's stickiness input."""
        order = sorted(members)
        ids = tuple(self._ids[t] for t in self.config.topic_names)
        specs = {x: MemberSpec(ids, self._by_topic(self.target.get(x, frozenset()))) for x in order}
        topics = TopicDescriber({self._ids[t]: n for t, n in self.config.topics})
        result = ASSIGNORS[self.config.assignor]().assign(GroupSpec(specs, SubscriptionType.HOMOGENEOUS), topics)
        return {x: frozenset(TopicPartition(self._names[t], p) for t, ps in result.get(x, {}).items() for p in ps)
                for x in order}

    def _by_topic(self, ps: Partitions) -> dict[Uuid, list[int]]:
        out: dict[Uuid, list[int]] = {}
        for p in sorted(ps, key=lambda q: (q.topic, q.partition)):
            out.setdefault(self._ids[p.topic], []).append(p.partition)
        return out

    # ------------------------------------------------------------------ removal and timers
    def _remove(self, x: str, why: str) -> None:
        """Tombstones for the member's records; its partitions are free; the group epoch moves."""
        old = self.members.pop(x)
        update_partition_epochs(self.partition_epoch, old, None, self.config.PartitionEpochLostOnReassign)
        self.target.pop(x, None)
        self.group_epoch += 1
        self.last_heartbeat.pop(x, None)
        self.revoking_since.pop(x, None)
        self.records.append(("remove", {"member": x, "why": why}))
        self.records.append(("group_epoch", {"epoch": self.group_epoch}))

    def session_timeout(self, now: int, x: str) -> None:
        """Spec SessionTimeout: no heartbeat from member ``x`` for the session timeout."""
        self._remove(x, "session timeout")

    def rebalance_timeout(self, now: int, x: str) -> None:
        """Spec RebalanceTimeout: member ``x`` did not revoke within the rebalance timeout."""
        self._remove(x, "rebalance timeout")

    def _deadlines(self) -> list[tuple[int, Any, str]]:
        out: list[tuple[int, Any, str]] = []
        for x, since in self.revoking_since.items():
            out.append((since + self.config.rebalance_timeout_ms, GroupCoordinator.rebalance_timeout, x))
        for x, seen in self.last_heartbeat.items():
            out.append((seen + self.config.session_timeout_ms, GroupCoordinator.session_timeout, x))
        return sorted(out, key=lambda d: (d[0], d[2]))

    def next_deadline(self) -> int | None:
        ds = self._deadlines()
        return ds[0][0] if ds else None

    def due(self, now: int) -> Pick | None:
        for at, handler, x in self._deadlines():
            if at <= now:
                return handler, {"x": x}
        return None

    # ------------------------------------------------------------------ offset commits
    def handle_offset_commit(self, now: int, m: OffsetCommit) -> Errors:
        """Spec HandleOffsetCommit: accepted from a known member at its current member epoch
        (``ConsumerGroup.validateOffsetCommit``: an unknown member is UNKNOWN_MEMBER_ID, any other
        epoch STALE_MEMBER_EPOCH; CommitWithoutEpochCheck: any epoch)."""
        mem = self.members.get(m.member_id)
        if mem is None:
            return Errors.UNKNOWN_MEMBER_ID
        if m.member_epoch != mem.epoch and not self.config.CommitWithoutEpochCheck:
            return Errors.STALE_MEMBER_EPOCH
        self.offsets.commit(dict(m.offsets), member=m.member_id, committer=m.member_id,
                            generation=m.member_epoch, group_generation=self.group_epoch, now=now)
        for p, o in m.offsets:
            self.records.append(("offset", {"partition": p, "offset": o}))
        return Errors.NONE

    def describe(self) -> str:
        lines = [f"coordinator group epoch {self.group_epoch} assignment epoch {self.assignment_epoch}"]
        for x, mem in sorted(self.members.items()):
            lines.append(f"  {x}: epoch {mem.epoch} (prev {mem.prev}) {mem.state.value} "
                         f"assigned {sorted(map(str, mem.assigned))} pending {sorted(map(str, mem.pending))} "
                         f"target {sorted(map(str, self.target.get(x, ())))}")
        return "\n".join(lines)
