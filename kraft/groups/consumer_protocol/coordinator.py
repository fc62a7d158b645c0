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

Static members (``getOrMaybeSubscribeStaticConsumerGroupMember``): a heartbeat with an instance id
finds its member by that id.  Joining (epoch 0) under an instance id whose member exists replaces
that member by one under the request's member id, with its assignment and target, at epochs 0 / 0
(``replaceMember``), only if the old one left with epoch -2 (else UNRELEASED_INSTANCE_ID,
``throwIfInstanceIdIsUnreleased``); any other epoch with an unknown instance id is
UNKNOWN_MEMBER_ID (``throwIfStaticMemberIsUnknown``), with another member id than the instance's
FENCED_INSTANCE_ID (``throwIfInstanceIdIsFenced``).  Leaving with epoch -2
(``consumerGroupStaticMemberGroupLeave``) keeps the member at epoch -2 with its assignment and
nothing pending: no group-epoch bump; its session timeout still removes it.  A leave is never
answered: the consumer has moved on.

A member subscribes to the topics its heartbeats name (``subscribedTopicNames``, None: unchanged);
a changed set bumps the group epoch (``hasMemberSubscriptionChanged``) and the next target gives
each member partitions of its own topics only (a heterogeneous subscription for the assignor).  A
member id is its client's id (KIP-1082), with the
process's incarnation for a static consumer's later processes (:func:`.messages.member_id_of`).

The coordinator writes what it changes to its ``__consumer_offsets`` partition (:mod:`.records`),
one batch per write, the records of one write in the order ``consumerGroupHeartbeat`` and
``consumerGroupFenceMember`` add them; :meth:`GroupCoordinator.load` rebuilds a coordinator from
that partition (``GroupMetadataManager.replay`` of each record, then ``onLoaded``).
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

import attrs

from kraft.core.node import Node, Pick
from kraft.groups.assignors import TopicPartition
from kraft.groups.assignors.server import ASSIGNORS
from kraft.groups.assignors.server.spec import GroupSpec, MemberSpec, SubscriptionType, TopicDescriber, Uuid
from kraft.groups.consumer_protocol import records as rec
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.messages import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Errors,
    Heartbeat,
    HeartbeatResponse,
    OffsetCommit,
    Partitions,
    ServerState,
    client_of_member,
)
from kraft.groups.consumer_protocol.protocol import COORDINATOR, PROTOCOL
from kraft.groups.consumer_protocol.reconcile import NEW_MEMBER, MemberRecord, reconcile, update_partition_epochs
from kraft.groups.offsets import OffsetAndMetadata, OffsetStore
from kraft.groups.offsets_log import KeyValue, OffsetsLog, offset_commit_record
from kraft.log import MemoryFS

# what a replayed commit does not say (OffsetCommitValue has no member or epoch)
UNKNOWN_COMMITTER = ""
NO_EPOCH = -1


def topic_id(name: str) -> Uuid:
    """A topic's id, fixed by its name (the simulator creates its topics once)."""
    d = hashlib.sha256(name.encode()).digest()
    return Uuid(int.from_bytes(d[:8], "big", signed=True), int.from_bytes(d[8:16], "big", signed=True))


class GroupCoordinator(Node, declaration=PROTOCOL, actor=COORDINATOR):
    """One consumer group at its coordinator.  ``offsets_log``: the ``__consumer_offsets``
    partition it writes (by default a fresh one on a ``MemoryFS``)."""

    def __init__(self, group_id: str, config: ProtocolConfig, offsets_log: OffsetsLog | None = None) -> None:
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
        self.static_members: dict[str, str] = {}    # instance id -> member id (ConsumerGroup.staticMembers)
        self.offsets_log = OffsetsLog.for_group(MemoryFS(), group_id) if offsets_log is None else offsets_log
        self._batch: list[KeyValue] = []
        self._ids = {t: topic_id(t) for t in config.topic_names}
        self._names = {v: k for k, v in self._ids.items()}

    # ------------------------------------------------------------------ heartbeats
    def handle_heartbeat(self, now: int, m: Heartbeat) -> HeartbeatResponse | None:
        """Spec HandleHeartbeat: leave, unknown member, fenced epoch, or accept and reconcile."""
        resp = self._heartbeat(now, m)
        self._write(now)
        return resp

    def _heartbeat(self, now: int, m: Heartbeat) -> HeartbeatResponse | None:
        if m.instance_id is not None:
            return self._static_heartbeat(now, m, m.instance_id)
        c, mem = m.member_id, self.members.get(m.member_id)
        if m.member_epoch == LEAVE_EPOCH:
            if mem is not None:
                self._remove(c)
            return None
        if mem is None and m.member_epoch != JOIN_EPOCH:
            return self._respond(m, Errors.UNKNOWN_MEMBER_ID, 0, None)
        rejoin = m.member_epoch == JOIN_EPOCH and not self.config.RejoinEpochZeroRejected
        if mem is not None and not rejoin and not self._epoch_valid(mem, m.member_epoch, m.topic_partitions):
            return self._respond(m, Errors.FENCED_MEMBER_EPOCH, 0, None)
        return self._accept(now, m, mem)

    def _static_heartbeat(self, now: int, m: Heartbeat, instance: str) -> HeartbeatResponse | None:
        """``getOrMaybeSubscribeStaticConsumerGroupMember`` and ``consumerGroupLeave`` of a static
        member."""
        x = self.static_members.get(instance)
        if m.member_epoch == JOIN_EPOCH:
            if x is None:
                return self._accept(now, m, None)
            if self.members[x].epoch != STATIC_LEAVE_EPOCH:
                return self._respond(m, Errors.UNRELEASED_INSTANCE_ID, 0, None)
            return self._accept(now, m, self._replace(x, m.member_id, instance))
        if m.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            if x == m.member_id and m.member_epoch == STATIC_LEAVE_EPOCH:
                self._static_leave(now, x)
            elif x == m.member_id:
                self._remove(x)
            return None
        if x is None:
            return self._respond(m, Errors.UNKNOWN_MEMBER_ID, 0, None)
        if x != m.member_id:
            return self._respond(m, Errors.FENCED_INSTANCE_ID, 0, None)
        if not self._epoch_valid(self.members[x], m.member_epoch, m.topic_partitions):
            return self._respond(m, Errors.FENCED_MEMBER_EPOCH, 0, None)
        return self._accept(now, m, self.members[x])

    def _static_leave(self, now: int, x: str) -> None:
        """``consumerGroupStaticMemberGroupLeave``: epoch -2, the assignment kept, nothing pending."""
        old = self.members[x]
        self._set_member(now, x, old, attrs.evolve(old, epoch=STATIC_LEAVE_EPOCH, pending=frozenset()))

    def _replace(self, old_id: str, new_id: str, instance: str) -> MemberRecord:
        """``replaceMember``: the old member's tombstones, then the new member's subscription,
        target and current assignment (epochs 0 / 0, the old one's assignment and state)."""
        old = self.members.pop(old_id)
        target = self.target.pop(old_id, frozenset())
        seen = self.last_heartbeat.pop(old_id, None)
        self.revoking_since.pop(old_id, None)
        self._batch.extend(rec.member_tombstones(self.group_id, old_id))
        self.static_members[instance] = new_id
        self._batch.append(rec.member_subscription(self.group_id, new_id, old.sub,
                                                   self.config.rebalance_timeout_ms, instance))
        self.target[new_id] = target
        self._batch.append(rec.target_member(self.group_id, new_id, target, self._ids))
        new = attrs.evolve(old, epoch=JOIN_EPOCH, prev=JOIN_EPOCH)
        self.members[new_id] = new
        update_partition_epochs(self.partition_epoch, old, new, self.config.PartitionEpochLostOnReassign)
        if seen is not None:
            self.last_heartbeat[new_id] = seen
        self._batch.append(rec.current_assignment(self.group_id, new_id, new, self._ids))
        return new

    def _epoch_valid(self, mem: MemberRecord, epoch: int, owned: Partitions | None) -> bool:
        """``throwIfConsumerGroupMemberEpochIsInvalid`` (AcceptAnyOlderEpoch: any lower epoch)."""
        if epoch == mem.epoch:
            return True
        if epoch < mem.epoch and self.config.AcceptAnyOlderEpoch:
            return True
        return epoch < mem.epoch and epoch == mem.prev and owned is not None and owned <= mem.assigned

    def _accept(self, now: int, m: Heartbeat, old: MemberRecord | None) -> HeartbeatResponse:
        c = m.member_id
        sent = m.subscribed_topic_names
        base = old or NEW_MEMBER
        if sent is not None:
            base = attrs.evolve(base, sub=frozenset(sent))
        if old is None or base.sub != old.sub:    # hasMemberSubscriptionChanged
            self._subscribe(c, m.instance_id, base.sub)
        if self.group_epoch > self.assignment_epoch:
            subs = {x: mem.sub for x, mem in self.members.items()} | {c: base.sub}
            self._new_target(self._compute_target(subs))
        new = reconcile(base, m.topic_partitions, self.target.get(c, frozenset()), self.assignment_epoch,
                        self.partition_epoch, self.config.RevocationAckIgnoredOnNewTarget)
        self._set_member(now, c, old, new)
        self.last_heartbeat[c] = now
        changed = old is None or new.assigned != base.assigned
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
            self._batch.append(rec.current_assignment(self.group_id, c, new, self._ids))

    def _subscribe(self, c: str, instance: str | None, sub: frozenset[str]) -> None:
        """A new member or a changed subscription: the member's subscription record, the group's
        subscribed topics when they change, the group epoch bumped."""
        if instance is not None:
            self.static_members[instance] = c
        self._batch.append(rec.member_subscription(self.group_id, c, sub, self.config.rebalance_timeout_ms, instance))
        before = self._subscribed_topics(self.members)
        after = self._subscribed_topics({**self.members, c: attrs.evolve(self.members.get(c, NEW_MEMBER), sub=sub)})
        if after != before:
            self._batch.append(rec.partition_metadata(self.group_id, after, self._ids))
        self.group_epoch += 1
        self._batch.append(rec.group_epoch(self.group_id, self.group_epoch))

    def _new_target(self, target: dict[str, Partitions]) -> None:
        """``TargetAssignmentBuilder.build``: a record for each member whose target changed, then
        the assignment epoch."""
        for x in sorted(target):
            if self.target.get(x) != target[x]:
                self._batch.append(rec.target_member(self.group_id, x, target[x], self._ids))
        self.target = target
        self.assignment_epoch = self.group_epoch
        self._batch.append(rec.target_epoch(self.group_id, self.assignment_epoch))

    def _respond(self, m: Heartbeat, error: Errors, epoch: int, assignment: Partitions | None) -> HeartbeatResponse:
        resp = HeartbeatResponse(m.member_id, m.conn, error, epoch, assignment, self.config.heartbeat_interval_ms)
        self.send(resp)
        return resp

    def _subscribed_topics(self, members: dict[str, MemberRecord]) -> tuple[tuple[str, int], ...]:
        """(name, partitions) of every topic some member subscribes to (the subscription metadata)."""
        names = set().union(*(m.sub for m in members.values()))
        return tuple((t, n) for t, n in sorted(self.config.topics) if t in names)

    def _compute_target(self, subs: dict[str, frozenset[str]]) -> dict[str, Partitions]:
        """The server-side assignor over every member with its subscribed topics (homogeneous when
        they all subscribe to one set), each with its current target as the stickiness input."""
        order = sorted(subs)
        specs = {x: MemberSpec(tuple(self._ids[t] for t in sorted(subs[x])),
                               self._by_topic(self.target.get(x, frozenset()))) for x in order}
        topics = TopicDescriber({self._ids[t]: n for t, n in self.config.topics})
        kind = SubscriptionType.HOMOGENEOUS if len(set(subs.values())) <= 1 else SubscriptionType.HETEROGENEOUS
        result = ASSIGNORS[self.config.assignor]().assign(GroupSpec(specs, kind), topics)
        return {x: frozenset(TopicPartition(self._names[t], p) for t, ps in result.get(x, {}).items() for p in ps)
                for x in order}

    def _by_topic(self, ps: Partitions) -> dict[Uuid, list[int]]:
        out: dict[Uuid, list[int]] = {}
        for p in sorted(ps, key=lambda q: (q.topic, q.partition)):
            out.setdefault(self._ids[p.topic], []).append(p.partition)
        return out

    def member_of_client(self, client: str) -> str | None:
        """The member id of ``client``'s member, if it has one (a client has one member at most:
        a static consumer's instance id belongs to one member)."""
        return next((x for x in self.members if client_of_member(x) == client), None)

    # ------------------------------------------------------------------ removal and timers
    def _remove(self, x: str) -> None:
        """``consumerGroupFenceMember``: tombstones for the member's records (and an empty
        subscription if it was the last member); its partitions are free; the group epoch moves."""
        old = self.members.pop(x)
        update_partition_epochs(self.partition_epoch, old, None, self.config.PartitionEpochLostOnReassign)
        self.target.pop(x, None)
        self._forget_instance(x)
        self.group_epoch += 1
        self.last_heartbeat.pop(x, None)
        self.revoking_since.pop(x, None)
        self._batch.extend(rec.member_tombstones(self.group_id, x))
        if self._subscribed_topics(self.members) != self._subscribed_topics({**self.members, x: old}):
            self._batch.append(rec.partition_metadata(self.group_id, self._subscribed_topics(self.members), self._ids))
        self._batch.append(rec.group_epoch(self.group_id, self.group_epoch))

    def _forget_instance(self, x: str) -> None:
        for instance in [i for i, y in self.static_members.items() if y == x]:
            del self.static_members[instance]

    def session_timeout(self, now: int, x: str) -> None:
        """Spec SessionTimeout: no heartbeat from member ``x`` for the session timeout."""
        self._remove(x)
        self._write(now)

    def rebalance_timeout(self, now: int, x: str) -> None:
        """Spec RebalanceTimeout: member ``x`` did not revoke within the rebalance timeout."""
        self._remove(x)
        self._write(now)

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
        self._batch.extend(offset_commit_record(self.group_id, p, o, now) for p, o in m.offsets)
        self._write(now)
        return Errors.NONE

    # ------------------------------------------------------------------ __consumer_offsets
    def _write(self, now: int) -> None:
        """One batch of what this write changed (nothing when it changed nothing)."""
        if self._batch:
            self.offsets_log.append(self._batch, now)
            self._batch = []

    @classmethod
    def load(cls, group_id: str, config: ProtocolConfig, offsets_log: OffsetsLog, now: int) -> "GroupCoordinator":
        """A coordinator rebuilt from ``offsets_log`` at ``now``: every record replayed, then
        ``onLoaded``: every member's session timeout starts over, and the rebalance timeout of
        every member revoking partitions."""
        co = cls(group_id, config, offsets_log)
        for batch in offsets_log.batches():
            for r in batch.records:
                co.replay(r.key, r.value)
        for x, mem in co.members.items():
            co.last_heartbeat[x] = now
            if mem.state is ServerState.UNREVOKED_PARTITIONS:
                co.revoking_since[x] = now
        return co

    def replay(self, key: bytes | None, value: bytes | None) -> None:
        """``GroupMetadataManager.replay`` (``OffsetMetadataManager.replay`` for a commit) of one
        record of this group; a record of another group is not this coordinator's."""
        if key is None:
            raise ValueError("a __consumer_offsets record without a key")
        record_type, k, v = rec.decode(key, value)
        if k.get("groupId", k.get("group")) != self.group_id:
            return
        replay = self._REPLAY.get(record_type)
        if replay is None:
            raise ValueError(f"record type {record_type}: not a record of a consumer-protocol group")
        replay(self, k, v)

    def _replay_group_epoch(self, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        if v is None:
            raise ValueError(f"group {self.group_id} deleted: the coordinator never deletes its group")
        self.group_epoch = v["epoch"]

    def _replay_partition_metadata(self, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        """The subscribed topics' metadata: the coordinator reads its topics from its config."""

    def _replay_member(self, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        """Subscription: a new member (epoch 0, nothing assigned); a tombstone removes it."""
        x = k["memberId"]
        if v is not None:
            self.members[x] = attrs.evolve(self.members.get(x, NEW_MEMBER), sub=frozenset(v["subscribedTopicNames"]))
            if v["instanceId"] is not None:
                self.static_members[v["instanceId"]] = x
        elif x in self.members:
            self.members.pop(x)
            self._forget_instance(x)

    def _replay_target_member(self, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        if v is None:
            self.target.pop(k["memberId"], None)
        else:
            self.target[k["memberId"]] = rec.partitions_of(v["topicPartitions"], self._names)

    def _replay_target_epoch(self, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        if v is None:
            raise ValueError(f"group {self.group_id}: the coordinator never deletes its target assignment")
        self.assignment_epoch = v["assignmentEpoch"]

    def _replay_current(self, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        """``ConsumerGroup.updateMember``: the member's new record, its partitions' epochs with it;
        a tombstone leaves it at epoch -1 holding nothing until its subscription goes."""
        x = k["memberId"]
        old = self.members.get(x, NEW_MEMBER)
        new = attrs.evolve(rec.LEFT if v is None else rec.member_of(v, self._names, self.assignment_epoch), sub=old.sub)
        update_partition_epochs(self.partition_epoch, old, new, self.config.PartitionEpochLostOnReassign)
        self.members[x] = new

    def _replay_offset(self, k: dict[str, Any], v: dict[str, Any] | None) -> None:
        tp = TopicPartition(k["topic"], k["partition"])
        if v is None:
            self.offsets.committed.pop(tp, None)
        else:
            self.offsets.committed[tp] = OffsetAndMetadata(v["offset"], NO_EPOCH, UNKNOWN_COMMITTER,
                                                           v["commitTimestamp"])

    _REPLAY: dict[int, Callable[["GroupCoordinator", dict[str, Any], dict[str, Any] | None], None]] = {
        rec.OFFSET_COMMIT: _replay_offset,
        rec.GROUP_EPOCH: _replay_group_epoch,
        rec.PARTITION_METADATA: _replay_partition_metadata,
        rec.MEMBER_METADATA: _replay_member,
        rec.TARGET_MEMBER: _replay_target_member,
        rec.TARGET_EPOCH: _replay_target_epoch,
        rec.CURRENT_ASSIGNMENT: _replay_current,
    }

    def describe(self) -> str:
        lines = [f"coordinator group epoch {self.group_epoch} assignment epoch {self.assignment_epoch}"]
        for x, mem in sorted(self.members.items()):
            lines.append(f"  {x}: epoch {mem.epoch} (prev {mem.prev}) {mem.state.value} "
                         f"assigned {sorted(map(str, mem.assigned))} pending {sorted(map(str, mem.pending))} "
                         f"target {sorted(map(str, self.target.get(x, ())))}")
        return "\n".join(lines)
