"""The group coordinator of Kafka's classic protocol, as a sans-I/O state machine.

Every handler takes a request and the virtual time ``now`` (ms) and puts the responses into the
step's ``Ready``; a ``Tick`` fires the session and rebalance timers that are due. Nothing here reads
a clock, sleeps or touches a socket. The one entry point is the kit's ``step(input, now) -> Ready``
(``kraft.core.node.Node``, the actor ``"coordinator"`` of :mod:`kraft.groups.protocol`); the spec
actions are methods named after them in snake_case.

Kafka facts this follows (cited, not copied; see the spec's header for the list):
GroupMetadata/ClassicGroup (states, validPreviousStates, initNextGeneration bumping the
generation also when the group empties), GroupCoordinator.handleJoinGroup / handleSyncGroup /
handleHeartbeat / handleLeaveGroup / handleCommitOffsets (the error replies), KIP-394
(MEMBER_ID_REQUIRED), KIP-345 (static members, FENCED_INSTANCE_ID).
"""

from __future__ import annotations

import functools

import attrs

from kraft.core.node import NO_STEP, Node, Pick
from kraft.core.step import ReadyBuilder
from kraft.groups.assignors import TopicPartition
from kraft.groups.messages import (
    VALID_TRANSITIONS,
    Errors,
    GroupState,
    Heartbeat,
    HeartbeatResponse,
    JoinGroup,
    JoinGroupResponse,
    LeaveGroup,
    OffsetCommit,
    OffsetCommitResponse,
    Partitions,
    RebalanceProtocol,
    SyncGroup,
    SyncGroupResponse,
)
from kraft.groups.offsets import OffsetStore
from kraft.groups.offsets_log import (
    CONSUMER_PROTOCOL_TYPE,
    EMPTY_ASSIGNMENT,
    GroupRecord,
    KeyValue,
    MemberRecord,
    OffsetsLog,
    assignment_bytes,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
    subscription_bytes,
)
from kraft.groups.protocol import PROTOCOL

COORDINATOR = "coordinator"  # the coordinator's node id in spec steps, traces and the simulator


def _positive(_inst: object, attr: attrs.Attribute, value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attr.name} must be > 0, got {value}")


@attrs.frozen
class GroupConfig:
    """Group and client settings, plus the spec's bug variants as same-named flags."""

    topics: tuple[tuple[str, int], ...] = (("t", 2),)
    protocol: RebalanceProtocol = RebalanceProtocol.EAGER
    session_timeout_ms: int = attrs.field(default=10_000, validator=_positive)
    rebalance_timeout_ms: int = attrs.field(default=30_000, validator=_positive)
    heartbeat_interval_ms: int = attrs.field(default=3_000, validator=_positive)
    request_timeout_ms: int = attrs.field(default=35_000, validator=_positive)
    assignor: str | None = None  # None: "range" for eager, "cooperative-sticky" for cooperative
    auto_commit: bool = True  # enable.auto.commit: commit positions before rejoining
    # bug variants (spec CONSTANTS of the same names; FALSE = Kafka's protocol)
    CooperativeAssignWithoutRevoke: bool = False  # noqa: N815
    EagerNoRevokeBeforeJoin: bool = False  # noqa: N815
    AcceptStaleGeneration: bool = False  # noqa: N815

    def __attrs_post_init__(self) -> None:
        # The lease argument (docs/groups.md): a member that has not rejoined is dropped at the
        # rebalance timeout, which must not come before its own session lease runs out.
        if self.rebalance_timeout_ms < self.session_timeout_ms:
            raise ValueError("rebalance_timeout_ms must be >= session_timeout_ms "
                             f"({self.rebalance_timeout_ms} < {self.session_timeout_ms})")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be < session_timeout_ms")
        for t, n in self.topics:
            if not isinstance(t, str) or not isinstance(n, int) or n < 0:
                raise ValueError(f"bad topic entry {(t, n)!r}")

    @property
    def partitions_per_topic(self) -> dict[str, int]:
        return dict(self.topics)

    @property
    def all_partitions(self) -> frozenset[TopicPartition]:
        return _partitions(self.topics)

    @property
    def protocol_name(self) -> str:
        """The assignor the group runs: ``assignor``, or the default of the rebalance protocol."""
        if self.assignor is not None:
            return self.assignor
        return "range" if self.protocol == RebalanceProtocol.EAGER else "cooperative-sticky"


@functools.lru_cache(maxsize=64)
def _partitions(topics: tuple[tuple[str, int], ...]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t, p) for t, n in topics for p in range(n))


class InvalidTransition(AssertionError):
    """The coordinator tried a state change Kafka's validPreviousStates forbids."""


@attrs.define
class MemberMetadata:
    member_id: str
    instance: str | None
    client: str
    conn: int
    reported_owned: Partitions = frozenset()
    assignment: Partitions = frozenset()
    last_heard: int = 0


# not slotted: attrs then completes this class in place, so the class the declaration binds when
# it is created (Node.__init_subclass__) is the one used
@attrs.define(slots=False)
class GroupCoordinator(Node, declaration=PROTOCOL, actor="coordinator"):
    """One group's coordinator (spec variables: groupState, generation, leader, members,
    staticMembers, pending, awaitingJoin, reportedOwned, assignment).

    A ``Tick`` fires the timers due at its instant in one step (pending-member expiry, session
    expiry, the rebalance timeout), composed in order as the coordinator's timer wheel fires them
    in one pass; a second ``Tick`` at the same instant finds nothing due.  The ``Ready`` holds the
    responses (each on the connection its request came on: the world loses those whose connection
    has closed) and the spec steps taken, in order.  A follower's SyncGroup parked in
    CompletingRebalance takes no spec step (the spec leaves it in the network until the leader's
    SyncGroup answers it)."""

    group_id: str
    config: GroupConfig
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    leader: str | None = None
    members: dict[str, MemberMetadata] = attrs.field(factory=dict)
    static_members: dict[str, str] = attrs.field(factory=dict)
    pending: dict[str, int] = attrs.field(factory=dict)  # member id -> created at
    awaiting_join: dict[str, tuple[str, int, int]] = attrs.field(factory=dict)  # id -> (client, conn, corr)
    awaiting_sync: dict[str, SyncGroup] = attrs.field(factory=dict)
    next_member_seq: int = 1
    prepare_started_at: int = 0
    offsets: OffsetStore = attrs.field(factory=OffsetStore)
    transitions: list[tuple[GroupState, GroupState, int]] = attrs.field(factory=list)
    log: list[dict] = attrs.field(factory=list)  # rebalance log
    # the __consumer_offsets partition the coordinator writes its records to (None: it keeps
    # its state in memory only)
    offsets_log: OffsetsLog | None = attrs.field(default=None, eq=False, repr=False)
    _state_at: int | None = attrs.field(default=None, eq=False, repr=False, init=False)
    # the scratch space of the step being taken (kraft.core.step.ReadyBuilder): the spec steps
    # taken and the responses sent, in order; reset by every ``step``
    _rb: ReadyBuilder = attrs.field(factory=ReadyBuilder, eq=False, repr=False, init=False)

    @property
    def id(self) -> str:
        return COORDINATOR

    # ------------------------------------------------------------------ timers
    def next_deadline(self) -> int | None:
        """When a timer is next due: a member's session (strictly after the timeout, so a client
        measuring from its send time always lets go first), a pending member id, the rebalance
        timeout."""
        t = self.config.session_timeout_ms
        ts = [m.last_heard + t + 1 for mid, m in self.members.items() if mid not in self.awaiting_join]
        ts += [created + t + 1 for created in self.pending.values()]
        if self.state == GroupState.PREPARING_REBALANCE:
            ts.append(self.prepare_started_at + self.config.rebalance_timeout_ms + 1)
        return min(ts) if ts else None

    def due(self, now: int) -> Pick | None:
        deadline = self.next_deadline()
        return (GroupCoordinator._fire_timers, {}) if deadline is not None and now >= deadline else None

    # ------------------------------------------------------------------ helpers
    def _transition(self, to: GroupState, now: int) -> None:
        if (self.state, to) not in VALID_TRANSITIONS:
            raise InvalidTransition(f"group {self.group_id}: {self.state.value} -> {to.value}")
        self.transitions.append((self.state, to, self.generation))
        self._state_at = now
        self.log.append({"at": now, "event": "state", "from": self.state.value, "to": to.value,
                         "generation": self.generation})
        self.state = to

    def _fresh_id(self, prefix: str) -> str:
        mid = f"{prefix}-{self.next_member_seq}"
        self.next_member_seq += 1
        return mid

    def _fenced(self, member: str | None, instance: str | None) -> bool:
        """GroupMetadata.isStaticMemberFenced."""
        if instance is None:
            return False
        cur = self.static_members.get(instance)
        return cur is not None and cur != member

    def _stale_ok(self, generation: int) -> bool:
        return self.config.AcceptStaleGeneration and generation < self.generation

    def _prepare_rebalance(self, now: int, reason: str) -> None:
        """Stable/CompletingRebalance/Empty -> PreparingRebalance; parked syncs fail."""
        cls = type(self)
        for mid, req in sorted(self.awaiting_sync.items()):
            self.send(SyncGroupResponse(req.source, req.conn, Errors.REBALANCE_IN_PROGRESS, mid,
                                        req.generation, frozenset(), corr=req.corr))
        parked = [req for _mid, req in sorted(self.awaiting_sync.items())]
        self.awaiting_sync.clear()
        self.awaiting_join = {}
        self.prepare_started_at = now
        self._transition(GroupState.PREPARING_REBALANCE, now)
        # spec: the parked SyncGroups are still in the network and are answered in PreparingRebalance
        for req in parked:
            self.took(cls.handle_sync_group, m=req)
        self.log.append({"at": now, "event": "prepare_rebalance", "reason": reason,
                         "generation": self.generation})

    def _remove_member(self, mid: str, now: int, reason: str) -> None:
        """Spec RemoveMember."""
        m = self.members.pop(mid)
        if m.instance is not None and self.static_members.get(m.instance) == mid:
            del self.static_members[m.instance]
        if self.leader == mid:
            self.leader = None
        gone = self.awaiting_sync.pop(mid, None)
        if gone is not None:  # its parked SyncGroup is never answered (Kafka drops the callback)
            self.lost(gone)
        self.log.append({"at": now, "event": "remove_member", "member": mid, "reason": reason})
        if self.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(now, f"{reason} {mid}")
            return
        self.awaiting_join.pop(mid, None)
        self._maybe_complete_join(now)

    def _park_join(self, mid: str, req: JoinGroup, now: int, reason: str) -> None:
        if self.state != GroupState.PREPARING_REBALANCE:
            self._prepare_rebalance(now, reason)
        self.awaiting_join[mid] = (req.source, req.conn, req.corr)
        self._maybe_complete_join(now)

    def _maybe_complete_join(self, now: int) -> None:
        if self.state == GroupState.PREPARING_REBALANCE and set(self.members) <= set(self.awaiting_join):
            self.complete_join(now)

    def _add_member(self, mid: str, req: JoinGroup, now: int) -> None:
        self.members[mid] = MemberMetadata(mid, req.instance, req.source, req.conn,
                                           frozenset(req.owned), frozenset(), now)
        if req.instance is not None:
            self.static_members[req.instance] = mid
        if self.leader is None:
            self.leader = mid

    # ------------------------------------------------------------------ __consumer_offsets
    def _append(self, records: list[KeyValue], now: int) -> None:
        """One batch of records to the offsets log, if the coordinator has one."""
        if self.offsets_log is None:
            return
        base = self.offsets_log.append(records, now)
        self._rb.wrote("append", offset=base, count=len(records))

    def _store_group(self, now: int, assignment: dict[str, bytes]) -> None:
        """``newGroupMetadataRecord`` of the group as it is now (every member with its assignment
        bytes; no protocol once it has no members)."""
        cfg = self.config
        topics = [t for t, _ in cfg.topics]
        members = [MemberRecord(mid, m.instance, m.client, cfg.rebalance_timeout_ms, cfg.session_timeout_ms,
                                subscription_bytes(topics, m.reported_owned), assignment[mid])
                   for mid, m in sorted(self.members.items())]
        record = GroupRecord(self.group_id, CONSUMER_PROTOCOL_TYPE, self.generation,
                             cfg.protocol_name if members else None, self.leader,
                             now if self._state_at is None else self._state_at, members)
        self._append([record.encode()], now)

    def _store_new_group(self, now: int) -> None:
        """``newEmptyGroupMetadataRecord``: the first JoinGroup creates the group, which Kafka
        records empty when that join writes nothing else (``GroupMetadataManager.classicGroupJoin``;
        a first join never completes a generation, so it never does)."""
        self._state_at = now
        self._append([GroupRecord(self.group_id, "", 0, None, None, now).encode()], now)

    def _assignment_bytes(self) -> dict[str, bytes]:
        return {mid: assignment_bytes(m.assignment) for mid, m in self.members.items()}

    # ------------------------------------------------------------------ spec actions
    def handle_join_group(self, m: JoinGroup, now: int) -> None:
        """Spec HandleJoinGroup."""
        self.took(GroupCoordinator.handle_join_group, m=m)
        if self._state_at is None and self.state == GroupState.EMPTY:
            self._store_new_group(now)

        def reply(err: Errors, member: str | None, gen: int = 0, leader: str | None = None) -> None:
            self.send(JoinGroupResponse(m.source, m.conn, err, member, gen, leader, (), corr=m.corr))

        mid, inst = m.member, m.instance
        if self.state == GroupState.DEAD:
            return reply(Errors.COORDINATOR_NOT_AVAILABLE, mid)
        if mid is None and inst is None:  # KIP-394
            new = self._fresh_id(m.source)
            self.pending[new] = now
            return reply(Errors.MEMBER_ID_REQUIRED, new)
        if mid is None and inst is not None and inst not in self.static_members:
            new = self._fresh_id(inst)
            self._add_member(new, m, now)
            return self._park_join(new, m, now, f"new static member {new}")
        if mid is None and inst is not None:  # KIP-345: replace the old member id
            old = self.static_members[inst]
            new = self._fresh_id(inst)
            prev = self.members.pop(old)
            self.members[new] = MemberMetadata(new, inst, m.source, m.conn, frozenset(m.owned),
                                               prev.assignment, now)
            self.static_members[inst] = new
            if self.leader == old:
                self.leader = new
            gone = self.awaiting_sync.pop(old, None)
            if gone is not None:
                self.lost(gone)
            self.log.append({"at": now, "event": "replace_static_member", "old": old, "new": new})
            if self.state == GroupState.STABLE and frozenset(m.owned) == prev.reported_owned:
                self._store_group(now, self._assignment_bytes())
                return reply(Errors.NONE, new, self.generation, self.leader)
            if self.state == GroupState.PREPARING_REBALANCE:
                self.awaiting_join.pop(old, None)
                self.awaiting_join[new] = (m.source, m.conn, m.corr)
                return self._maybe_complete_join(now)
            return self._park_join(new, m, now, f"static member {new} rejoined")
        assert mid is not None
        if self._fenced(mid, inst):
            return reply(Errors.FENCED_INSTANCE_ID, mid)
        if mid in self.pending:
            del self.pending[mid]
            self._add_member(mid, m, now)
            return self._park_join(mid, m, now, f"new member {mid}")
        if mid not in self.members:
            return reply(Errors.UNKNOWN_MEMBER_ID, mid)
        member = self.members[mid]
        member.reported_owned = frozenset(m.owned)
        member.client, member.conn, member.last_heard = m.source, m.conn, now
        return self._park_join(mid, m, now, f"member {mid} rejoined")

    def complete_join(self, now: int) -> None:
        """Spec CompleteJoin: everyone rejoined, or the rebalance timeout dropped the rest."""
        assert self.state == GroupState.PREPARING_REBALANCE
        self.took(GroupCoordinator.complete_join)
        for mid in sorted(set(self.members) - set(self.awaiting_join)):
            m = self.members.pop(mid)
            if m.instance is not None and self.static_members.get(m.instance) == mid:
                del self.static_members[m.instance]
            self.log.append({"at": now, "event": "remove_member", "member": mid,
                             "reason": "rebalance timeout"})
        for m in self.members.values():
            m.assignment = frozenset()
        self.generation += 1
        joined = dict(self.awaiting_join)
        self.awaiting_join = {}
        if not joined:
            self.leader = None
            self._transition(GroupState.EMPTY, now)
            self._store_group(now, {})
            return
        if self.leader not in joined:
            self.leader = sorted(joined)[0]
        self._transition(GroupState.COMPLETING_REBALANCE, now)
        self.log.append({"at": now, "event": "complete_join", "generation": self.generation,
                         "leader": self.leader, "members": sorted(joined)})
        view = tuple(sorted((mid, self.members[mid].reported_owned) for mid in joined))
        # the session timer restarts when the JoinGroup is answered (GroupCoordinator.onCompleteJoin:
        # completeAndScheduleNextHeartbeatExpiration for every member)
        for mid in joined:
            self.members[mid].last_heard = now
        self.send(*(JoinGroupResponse(client, conn, Errors.NONE, mid, self.generation, self.leader,
                                      view if mid == self.leader else (), corr=corr)
                    for mid, (client, conn, corr) in sorted(joined.items())))

    def handle_sync_group(self, m: SyncGroup, now: int) -> None:
        """Spec HandleSyncGroup (followers are parked in CompletingRebalance)."""
        me = GroupCoordinator.handle_sync_group

        def reply(err: Errors, assigned: Partitions = frozenset()) -> None:
            self.send(SyncGroupResponse(m.source, m.conn, err, m.member, m.generation,
                                        assigned, corr=m.corr))

        mid = m.member  # the order of checks is Kafka's (GroupCoordinator.doSyncGroup)
        if not (self.state == GroupState.COMPLETING_REBALANCE and mid in self.members
                and not self._fenced(mid, m.instance)
                and (m.generation == self.generation or self._stale_ok(m.generation))):
            self.took(me, m=m)
        if self.state == GroupState.DEAD:
            return reply(Errors.COORDINATOR_NOT_AVAILABLE)
        if self._fenced(mid, m.instance):
            return reply(Errors.FENCED_INSTANCE_ID)
        if mid not in self.members:
            return reply(Errors.UNKNOWN_MEMBER_ID)
        if m.generation != self.generation and not self._stale_ok(m.generation):
            return reply(Errors.ILLEGAL_GENERATION)
        self.members[mid].last_heard = now
        if self.state == GroupState.PREPARING_REBALANCE:
            return reply(Errors.REBALANCE_IN_PROGRESS)
        if self.state == GroupState.COMPLETING_REBALANCE:
            if mid != self.leader:
                # parked: no spec step yet (the spec leaves the request in the network until the
                # leader's SyncGroup lets HandleSyncGroup answer it)
                self.awaiting_sync[mid] = m
                return NO_STEP
            self.took(me, m=m)
            given = dict(m.assignment)
            self._store_group(now, {x: assignment_bytes(given[x]) if x in given else EMPTY_ASSIGNMENT
                                    for x in self.members})
            for x, md in self.members.items():
                md.assignment = frozenset(given.get(x, frozenset()))
            self._transition(GroupState.STABLE, now)
            self.log.append({"at": now, "event": "stable", "generation": self.generation,
                             "assignment": {x: sorted(map(str, md.assignment))
                                            for x, md in sorted(self.members.items())}})
            reply(Errors.NONE, self.members[mid].assignment)
            for x, parked in sorted(self.awaiting_sync.items()):
                self.took(me, m=parked)
                # the session timer restarts when the assignment goes out
                # (GroupCoordinator.propagateAssignment: completeAndScheduleNextHeartbeatExpiration),
                # so a member cannot expire while its assignment is still on the way
                self.members[x].last_heard = now
                self.send(SyncGroupResponse(parked.source, parked.conn, Errors.NONE, x,
                                            parked.generation, self.members[x].assignment,
                                            corr=parked.corr))
            self.awaiting_sync.clear()
            return None
        return reply(Errors.NONE, self.members[mid].assignment)

    def handle_heartbeat(self, m: Heartbeat, now: int) -> None:
        """Spec HandleHeartbeat."""
        self.took(GroupCoordinator.handle_heartbeat, m=m)
        if self.state == GroupState.DEAD:
            err = Errors.COORDINATOR_NOT_AVAILABLE
        elif self._fenced(m.member, m.instance):
            err = Errors.FENCED_INSTANCE_ID
        elif m.member not in self.members:
            err = Errors.UNKNOWN_MEMBER_ID
        elif m.generation != self.generation:
            err = Errors.ILLEGAL_GENERATION
        elif self.state == GroupState.PREPARING_REBALANCE:
            err = Errors.REBALANCE_IN_PROGRESS
        else:
            err = Errors.NONE
        if m.member in self.members and err != Errors.FENCED_INSTANCE_ID:
            self.members[m.member].last_heard = now
        self.send(HeartbeatResponse(m.source, m.conn, err, m.member, m.generation, corr=m.corr))

    def handle_leave_group(self, m: LeaveGroup, now: int) -> None:
        """Spec HandleLeaveGroup (the response carries nothing the closed client uses)."""
        self.took(GroupCoordinator.handle_leave_group, m=m)
        if self.state != GroupState.DEAD and m.member in self.members \
                and not self._fenced(m.member, m.instance):
            self._remove_member(m.member, now, "leave")

    def validate_offset_commit(self, req: OffsetCommit) -> Errors:
        """ClassicGroup.validateOffsetCommit, and the state check of handleCommitOffsets."""
        if self.state == GroupState.DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if self._fenced(req.member, req.instance):
            return Errors.FENCED_INSTANCE_ID
        if req.member not in self.members:
            return Errors.UNKNOWN_MEMBER_ID
        if req.generation != self.generation and not self._stale_ok(req.generation):
            return Errors.ILLEGAL_GENERATION
        if self.state == GroupState.COMPLETING_REBALANCE:
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    def handle_offset_commit(self, m: OffsetCommit, now: int) -> None:
        """Spec HandleOffsetCommit."""
        self.took(GroupCoordinator.handle_offset_commit, m=m)
        err = self.validate_offset_commit(m)
        if err == Errors.NONE:
            self.offsets.commit(dict(m.offsets), member=m.member, committer=m.source,
                                generation=m.generation, group_generation=self.generation, now=now)
            self._append([offset_commit_record(self.group_id, tp, off, now) for tp, off in m.offsets], now)
        self.send(OffsetCommitResponse(m.source, m.conn, err, m.offsets, corr=m.corr))

    def expire_member(self, x: str, now: int) -> None:
        """Spec ExpireMember: the member's session timed out at the coordinator."""
        self.took(GroupCoordinator.expire_member, x=x)
        self._remove_member(x, now, "session timeout")

    def expire_pending(self, x: str, now: int) -> None:
        """Spec ExpirePending: a member id handed out with MEMBER_ID_REQUIRED was never used
        (GroupCoordinator.onExpireHeartbeat of a pending member, KIP-394)."""
        del self.pending[x]
        self.took(GroupCoordinator.expire_pending, x=x)

    def delete_group(self, now: int) -> None:
        """Spec DeleteGroup: an Empty group is removed (offsets expired); Dead is final."""
        if self.state != GroupState.EMPTY:
            raise ValueError(f"only an Empty group can be deleted, not {self.state.value}")
        self.took(GroupCoordinator.delete_group)
        self._transition(GroupState.DEAD, now)
        gone = sorted(self.offsets.committed, key=lambda tp: (tp.topic, tp.partition))
        self._append([*(offset_tombstone(self.group_id, tp) for tp in gone), group_tombstone(self.group_id)], now)
        self.offsets.clear()

    def _fire_timers(self, now: int) -> None:
        """Every timer due at ``now``, in one pass: pending-member expiry, session expiry
        (strictly after the timeout, so a client measuring from its send time always fires first),
        the rebalance timeout (each a spec step of its own)."""
        t = self.config.session_timeout_ms
        for mid, created in sorted(self.pending.items()):
            if now > created + t:
                self.expire_pending(mid, now)
        if self.state == GroupState.DEAD:
            return
        for mid in sorted(self.members):
            m = self.members.get(mid)
            if m is None or mid in self.awaiting_join:
                continue
            if now > m.last_heard + t:
                self.expire_member(mid, now)
        if self.state == GroupState.PREPARING_REBALANCE and \
                now > self.prepare_started_at + self.config.rebalance_timeout_ms:
            self.complete_join(now)
