"""The group coordinator of Kafka's classic protocol, as a sans-I/O state machine.

Every handler takes a request and the virtual time ``now`` (ms) and puts the responses into the
step's ``Ready``; ``TICK`` fires the session and rebalance timers. Nothing here reads a clock, sleeps or
touches a socket. The one entry point is ``step(input, now) -> Ready`` (kraft.core.step); the spec
actions are methods named after them in snake_case, declared with their spec names in
:mod:`kraft.groups.protocol`.

Kafka facts this follows (cited, not copied; see the spec's header for the list):
GroupMetadata/ClassicGroup (states, validPreviousStates, initNextGeneration bumping the
generation also when the group empties), GroupCoordinator.handleJoinGroup / handleSyncGroup /
handleHeartbeat / handleLeaveGroup / handleCommitOffsets (the error replies), KIP-394
(MEMBER_ID_REQUIRED), KIP-345 (static members, FENCED_INSTANCE_ID).
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

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
    Message,
    OffsetCommit,
    OffsetCommitResponse,
    Partitions,
    RebalanceProtocol,
    SyncGroup,
    SyncGroupResponse,
)
from kraft.core.step import Ready, ReadyBuilder, SpecStep, Tick, Trigger
from kraft.groups.offsets import OffsetStore

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


@attrs.define
class GroupCoordinator:
    """One group's coordinator (spec variables: groupState, generation, leader, members,
    staticMembers, pending, awaitingJoin, reportedOwned, assignment)."""

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
    # the scratch space of the step being taken (kraft.core.step.ReadyBuilder): the spec steps
    # taken and the responses sent, in order; reset by every ``step``
    _rb: ReadyBuilder = attrs.field(factory=ReadyBuilder, eq=False, repr=False, init=False)

    # ------------------------------------------------------------------ the step surface
    def step(self, inp: Any, now: int) -> Ready:
        """Take one input at virtual time ``now`` and return what it produced.

        * a request: dispatched by its type through the declaration (:mod:`kraft.groups.protocol`);
        * ``TICK``: the timers due now (pending-member expiry, session expiry, the rebalance
          timeout). Deliberately not one action per ``TICK``: the timers due at one instant fire
          in one step, composed in order (the first spec action, then the rest), as the
          coordinator's timer wheel fires them in one pass; a second ``TICK`` at the same instant
          finds nothing due;
        * ``Trigger(handler, args)``: the environment forces an action (``DeleteGroup``, or a test
          expiring a member now).

        The ``Ready`` holds the responses (each on the connection its request came on: the driver
        loses those whose connection has closed) and the spec steps taken, in order. A follower's
        SyncGroup parked in CompletingRebalance takes no spec step (the spec leaves it in the
        network until the leader's SyncGroup answers it)."""
        self._rb = ReadyBuilder()
        if isinstance(inp, Tick):
            self._tick(now)
        elif isinstance(inp, Trigger):
            getattr(inp.handler, "__func__", inp.handler)(self, now=now, **dict(inp.args))
        else:
            handler = _handler_for(inp, "coordinator")
            handler(self, inp, now)
        return self._rb.build()

    # ------------------------------------------------------------------ helpers
    def _did(self, handler: Any, **args: object) -> None:
        """Record a spec step, named by its handler function (the declaration knows the name)."""
        self._rb.steps.append(SpecStep(_decl().PROTOCOL.spec_name(handler), COORDINATOR, args))

    def _dropped(self, req: Message) -> None:
        """A parked request nobody will answer (Kafka drops the callback): for the spec, the
        network lost it (its environment action, node None)."""
        self._rb.steps.append(SpecStep(_decl().DROP_MESSAGE.spec, None, {"m": req}))

    def _send(self, *msgs: Message) -> None:
        self._rb.messages.extend(msgs)

    def _transition(self, to: GroupState, now: int) -> None:
        if (self.state, to) not in VALID_TRANSITIONS:
            raise InvalidTransition(f"group {self.group_id}: {self.state.value} -> {to.value}")
        self.transitions.append((self.state, to, self.generation))
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
            self._send(SyncGroupResponse(req.source, req.conn, Errors.REBALANCE_IN_PROGRESS, mid,
                                         req.generation, frozenset(), corr=req.corr))
        parked = [req for _mid, req in sorted(self.awaiting_sync.items())]
        self.awaiting_sync.clear()
        self.awaiting_join = {}
        self.prepare_started_at = now
        self._transition(GroupState.PREPARING_REBALANCE, now)
        # spec: the parked SyncGroups are still in the network and are answered in PreparingRebalance
        for req in parked:
            self._did(cls.handle_sync_group, m=req)
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
            self._dropped(gone)
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

    # ------------------------------------------------------------------ spec actions
    def handle_join_group(self, req: JoinGroup, now: int) -> None:
        """Spec HandleJoinGroup."""
        self._did(GroupCoordinator.handle_join_group, m=req)

        def reply(err: Errors, member: str | None, gen: int = 0, leader: str | None = None) -> None:
            self._send(JoinGroupResponse(req.source, req.conn, err, member, gen, leader, (), corr=req.corr))

        mid, inst = req.member, req.instance
        if self.state == GroupState.DEAD:
            return reply(Errors.COORDINATOR_NOT_AVAILABLE, mid)
        if mid is None and inst is None:  # KIP-394
            new = self._fresh_id(req.source)
            self.pending[new] = now
            return reply(Errors.MEMBER_ID_REQUIRED, new)
        if mid is None and inst is not None and inst not in self.static_members:
            new = self._fresh_id(inst)
            self._add_member(new, req, now)
            return self._park_join(new, req, now, f"new static member {new}")
        if mid is None and inst is not None:  # KIP-345: replace the old member id
            old = self.static_members[inst]
            new = self._fresh_id(inst)
            prev = self.members.pop(old)
            self.members[new] = MemberMetadata(new, inst, req.source, req.conn, frozenset(req.owned),
                                               prev.assignment, now)
            self.static_members[inst] = new
            if self.leader == old:
                self.leader = new
            gone = self.awaiting_sync.pop(old, None)
            if gone is not None:
                self._dropped(gone)
            self.log.append({"at": now, "event": "replace_static_member", "old": old, "new": new})
            if self.state == GroupState.STABLE and frozenset(req.owned) == prev.reported_owned:
                return reply(Errors.NONE, new, self.generation, self.leader)
            if self.state == GroupState.PREPARING_REBALANCE:
                self.awaiting_join.pop(old, None)
                self.awaiting_join[new] = (req.source, req.conn, req.corr)
                return self._maybe_complete_join(now)
            return self._park_join(new, req, now, f"static member {new} rejoined")
        assert mid is not None
        if self._fenced(mid, inst):
            return reply(Errors.FENCED_INSTANCE_ID, mid)
        if mid in self.pending:
            del self.pending[mid]
            self._add_member(mid, req, now)
            return self._park_join(mid, req, now, f"new member {mid}")
        if mid not in self.members:
            return reply(Errors.UNKNOWN_MEMBER_ID, mid)
        m = self.members[mid]
        m.reported_owned = frozenset(req.owned)
        m.client, m.conn, m.last_heard = req.source, req.conn, now
        return self._park_join(mid, req, now, f"member {mid} rejoined")

    def complete_join(self, now: int) -> None:
        """Spec CompleteJoin: everyone rejoined, or the rebalance timeout dropped the rest."""
        assert self.state == GroupState.PREPARING_REBALANCE
        self._did(GroupCoordinator.complete_join)
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
        self._send(*(JoinGroupResponse(client, conn, Errors.NONE, mid, self.generation, self.leader,
                                       view if mid == self.leader else (), corr=corr)
                     for mid, (client, conn, corr) in sorted(joined.items())))

    def handle_sync_group(self, req: SyncGroup, now: int) -> None:
        """Spec HandleSyncGroup (followers are parked in CompletingRebalance)."""
        me = GroupCoordinator.handle_sync_group

        def reply(err: Errors, assigned: Partitions = frozenset()) -> None:
            self._send(SyncGroupResponse(req.source, req.conn, err, req.member, req.generation,
                                         assigned, corr=req.corr))

        mid = req.member  # the order of checks is Kafka's (GroupCoordinator.doSyncGroup)
        if not (self.state == GroupState.COMPLETING_REBALANCE and mid in self.members
                and not self._fenced(mid, req.instance)
                and (req.generation == self.generation or self._stale_ok(req.generation))):
            self._did(me, m=req)
        if self.state == GroupState.DEAD:
            return reply(Errors.COORDINATOR_NOT_AVAILABLE)
        if self._fenced(mid, req.instance):
            return reply(Errors.FENCED_INSTANCE_ID)
        if mid not in self.members:
            return reply(Errors.UNKNOWN_MEMBER_ID)
        if req.generation != self.generation and not self._stale_ok(req.generation):
            return reply(Errors.ILLEGAL_GENERATION)
        self.members[mid].last_heard = now
        if self.state == GroupState.PREPARING_REBALANCE:
            return reply(Errors.REBALANCE_IN_PROGRESS)
        if self.state == GroupState.COMPLETING_REBALANCE:
            if mid != self.leader:
                # parked: no spec step yet (the spec leaves the request in the network until the
                # leader's SyncGroup lets HandleSyncGroup answer it)
                self.awaiting_sync[mid] = req
                return None
            self._did(me, m=req)
            given = dict(req.assignment)
            for x, m in self.members.items():
                m.assignment = frozenset(given.get(x, frozenset()))
            self._transition(GroupState.STABLE, now)
            self.log.append({"at": now, "event": "stable", "generation": self.generation,
                             "assignment": {x: sorted(map(str, m.assignment))
                                            for x, m in sorted(self.members.items())}})
            reply(Errors.NONE, self.members[mid].assignment)
            for x, parked in sorted(self.awaiting_sync.items()):
                self._did(me, m=parked)
                # the session timer restarts when the assignment goes out
                # (GroupCoordinator.propagateAssignment: completeAndScheduleNextHeartbeatExpiration),
                # so a member cannot expire while its assignment is still on the way
                self.members[x].last_heard = now
                self._send(SyncGroupResponse(parked.source, parked.conn, Errors.NONE, x,
                                             parked.generation, self.members[x].assignment,
                                             corr=parked.corr))
            self.awaiting_sync.clear()
            return None
        return reply(Errors.NONE, self.members[mid].assignment)

    def handle_heartbeat(self, req: Heartbeat, now: int) -> None:
        """Spec HandleHeartbeat."""
        self._did(GroupCoordinator.handle_heartbeat, m=req)
        if self.state == GroupState.DEAD:
            err = Errors.COORDINATOR_NOT_AVAILABLE
        elif self._fenced(req.member, req.instance):
            err = Errors.FENCED_INSTANCE_ID
        elif req.member not in self.members:
            err = Errors.UNKNOWN_MEMBER_ID
        elif req.generation != self.generation:
            err = Errors.ILLEGAL_GENERATION
        elif self.state == GroupState.PREPARING_REBALANCE:
            err = Errors.REBALANCE_IN_PROGRESS
        else:
            err = Errors.NONE
        if req.member in self.members and err != Errors.FENCED_INSTANCE_ID:
            self.members[req.member].last_heard = now
        self._send(HeartbeatResponse(req.source, req.conn, err, req.member, req.generation, corr=req.corr))

    def handle_leave_group(self, req: LeaveGroup, now: int) -> None:
        """Spec HandleLeaveGroup (the response carries nothing the closed client uses)."""
        self._did(GroupCoordinator.handle_leave_group, m=req)
        if self.state != GroupState.DEAD and req.member in self.members \
                and not self._fenced(req.member, req.instance):
            self._remove_member(req.member, now, "leave")

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

    def handle_offset_commit(self, req: OffsetCommit, now: int) -> None:
        """Spec HandleOffsetCommit."""
        self._did(GroupCoordinator.handle_offset_commit, m=req)
        err = self.validate_offset_commit(req)
        if err == Errors.NONE:
            self.offsets.commit(dict(req.offsets), member=req.member, committer=req.source,
                                generation=req.generation, group_generation=self.generation, now=now)
        self._send(OffsetCommitResponse(req.source, req.conn, err, req.offsets, corr=req.corr))

    def expire_member(self, x: str, now: int) -> None:
        """Spec ExpireMember: the member's session timed out at the coordinator."""
        self._did(GroupCoordinator.expire_member, x=x)
        self._remove_member(x, now, "session timeout")

    def expire_pending(self, x: str, now: int) -> None:
        """Spec ExpirePending: a member id handed out with MEMBER_ID_REQUIRED was never used
        (GroupCoordinator.onExpireHeartbeat of a pending member, KIP-394)."""
        del self.pending[x]
        self._did(GroupCoordinator.expire_pending, x=x)

    def delete_group(self, now: int) -> None:
        """Spec DeleteGroup: an Empty group is removed (offsets expired); Dead is final."""
        if self.state != GroupState.EMPTY:
            raise ValueError(f"only an Empty group can be deleted, not {self.state.value}")
        self._did(GroupCoordinator.delete_group)
        self._transition(GroupState.DEAD, now)
        self.offsets.clear()

    def _tick(self, now: int) -> None:
        """Fire timers: pending-member expiry, session expiry (strictly after the timeout, so a
        client measuring from its send time always fires first), the rebalance timeout."""
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


def _decl() -> Any:
    """The declaration module (imported lazily: it imports this module)."""
    from kraft.groups import protocol

    return protocol


def _handler_for(msg: Any, actor: str) -> Any:
    """The handler the declaration names for a message of this type at this kind of node."""
    try:
        action = _decl().PROTOCOL.for_message(type(msg))
    except KeyError:
        action = None
    if action is None or action.actor != actor:
        raise TypeError(f"{actor} cannot handle {type(msg).__name__}")
    return action.handler
