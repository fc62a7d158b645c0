"""A consumer's side of the classic group protocol, as a sans-I/O state machine.

Follows Kafka's ``AbstractCoordinator`` / ``ConsumerCoordinator`` (cited, not copied):

* eager: ``onJoinPrepare`` revokes every owned partition before the JoinGroup;
* cooperative (KIP-429): the JoinGroup reports the owned partitions; after SyncGroup the
  consumer revokes only ``owned - assigned``, adds ``assigned - owned`` and rejoins when it
  revoked anything (``onJoinComplete``);
* errors: UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION reset the generation and member id and the
  partitions are *lost* (``onPartitionsLost``); FENCED_INSTANCE_ID is fatal; responses of an
  older request (correlation id) are ignored;
* static membership (KIP-345): ``instance_id`` is sent with every request; a static consumer sends
  no LeaveGroup on close.

The ownership lease (docs/groups.md): the consumer stops owning its partitions once
``session_timeout_ms`` has passed since the *send* time of its last acknowledged request
(heartbeat, join or sync), and it discards a SyncGroup assignment that arrives after that. The
coordinator measures the same timeout from the *receive* time, so the consumer lets go first.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from kraft.groups.assignment import leader_assignment
from kraft.groups.assignors import TopicPartition
from kraft.core.step import Ready, ReadyBuilder, SpecStep, Tick, Trigger
from kraft.groups.coordinator import GroupConfig, _decl, _handler_for
from kraft.groups.messages import (
    ConsumerPhase,
    Errors,
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


@attrs.frozen
class RebalanceEvent:
    """One ConsumerRebalanceListener callback (the rebalance log)."""

    at: int
    client: str
    kind: str  # "assigned" | "revoked" | "lost"
    partitions: tuple[str, ...]
    generation: int


@attrs.define
class GroupConsumer:
    """Spec variables per consumer: up, phase, memberId, consumerGeneration, owned, conn."""

    client_id: str
    config: GroupConfig
    instance_id: str | None = None
    up: bool = True
    phase: ConsumerPhase = ConsumerPhase.IDLE
    member_id: str | None = None
    generation: int = 0
    owned: Partitions = frozenset()
    conn: int = 1
    lease_until: int = 0
    next_corr: int = 1
    waiting: dict[str, tuple[int, int]] = attrs.field(factory=dict)  # kind -> (corr, sent_at)
    last_heartbeat_at: int = -(10**12)
    positions: dict[TopicPartition, int] = attrs.field(factory=dict)
    events: list[RebalanceEvent] = attrs.field(factory=list)
    fatal: str | None = None
    # the storage port for OffsetFetch: the committed offsets of the group (read-only; the driver
    # hands the coordinator's offset store over). New partitions start at their committed offset.
    committed_offsets: Callable[[], dict[TopicPartition, int]] | None = attrs.field(
        default=None, eq=False, repr=False)
    # the scratch space of the step being taken (kraft.core.step.ReadyBuilder); reset by ``step``
    _rb: ReadyBuilder = attrs.field(factory=ReadyBuilder, eq=False, repr=False, init=False)

    # ------------------------------------------------------------------ the step surface
    def step(self, inp: Any, now: int) -> Ready:
        """Take one input at virtual time ``now`` and return what it produced.

        * a response: dispatched by its type through the declaration (:mod:`kraft.groups.protocol`);
          an ``OffsetCommitResponse`` (no spec counterpart: the spec does not model commit
          responses) only retires the outstanding commit;
        * ``TICK``: this consumer's timers due now, in the order the client's poll loop checks them
          (lease expiry, request timeout, then the rejoin or heartbeat it owes), composed into one
          step like the coordinator's (see ``GroupCoordinator.step``);
        * ``Trigger(handler, args)``: the environment forces an action (``SendJoinGroup``,
          ``SendOffsetCommit``, ``Crash``, ``Leave``, ``Restart``, or a client ``poll``, whose
          offsets read are the ``reply``).

        A response the client discards (stale correlation id, wrong phase) is the spec's
        ``DropMessage``: for the spec it is a message that never arrived."""
        self._rb = ReadyBuilder()
        reply: Any = None
        if isinstance(inp, Tick):
            self._tick(now)
        elif isinstance(inp, Trigger):
            reply = getattr(inp.handler, "__func__", inp.handler)(self, now=now, **dict(inp.args))
        elif isinstance(inp, OffsetCommitResponse):
            self._commit_answered(inp)
        else:
            _handler_for(inp, "consumer")(self, inp, now)
        return self._rb.build(reply)

    # ------------------------------------------------------------------ helpers
    def _did(self, handler: Any, **args: object) -> None:
        """Record a spec step, named by its handler function (the declaration knows the name)."""
        self._rb.steps.append(SpecStep(_decl().PROTOCOL.spec_name(handler), self.client_id, args))

    def _dropped(self, r: Message) -> None:
        self._rb.steps.append(SpecStep(_decl().DROP_MESSAGE.spec, None, {"m": r}))

    def _send(self, *msgs: Message) -> None:
        self._rb.messages.extend(msgs)

    @property
    def protocol(self) -> RebalanceProtocol:
        return self.config.protocol

    def _corr(self, kind: str, now: int) -> int:
        c = self.next_corr
        self.next_corr += 1
        self.waiting[kind] = (c, now)
        return c

    def _expects(self, kind: str, msg: Message) -> int | None:
        """The send time of the outstanding request this response answers, else None."""
        w = self.waiting.get(kind)
        if w is None or w[0] != msg.corr or msg.conn != self.conn or not self.up:
            return None
        del self.waiting[kind]
        return w[1]

    def _event(self, kind: str, parts: frozenset[TopicPartition], now: int) -> None:
        if parts:
            self.events.append(RebalanceEvent(now, self.client_id, kind,
                                              tuple(sorted(map(str, parts))), self.generation))

    def _set_owned(self, new: Partitions, now: int, positions_from: dict[TopicPartition, int]) -> None:
        for p in new - self.owned:
            self.positions[p] = positions_from.get(p, 0)
        for p in self.owned - new:
            self.positions.pop(p, None)
        self.owned = frozenset(new)

    def _lose_all(self, now: int, why: str) -> None:
        """onPartitionsLost + resetGeneration."""
        self._event("lost", self.owned, now)
        self._set_owned(frozenset(), now, {})
        self.member_id = None
        self.generation = 0
        self.phase = ConsumerPhase.IDLE
        self.waiting.clear()

    def _close_connection(self) -> None:
        self.conn += 1
        self.waiting.clear()

    def _fatal(self, now: int, why: str) -> None:
        # the process shuts down: being down closes its connection (spec Fatal: up' = FALSE,
        # conn unchanged; the next Restart opens a new one)
        self._event("lost", self.owned, now)
        self._set_owned(frozenset(), now, {})
        self.up = False
        self.phase = ConsumerPhase.DOWN
        self.member_id = None
        self.generation = 0
        self.fatal = why
        self.waiting.clear()

    def _extend_lease(self, sent_at: int) -> None:
        self.lease_until = max(self.lease_until, sent_at + self.config.session_timeout_ms)

    def _join_request(self, now: int) -> JoinGroup:
        owned = self.owned if self.protocol == RebalanceProtocol.COOPERATIVE else frozenset()
        return JoinGroup(self.client_id, self.conn, self.member_id, self.instance_id, owned,
                         sent_at=now, corr=self._corr("join", now))

    # ------------------------------------------------------------------ spec actions
    def send_join_group(self, now: int) -> None:
        """Spec SendJoinGroup: eager revokes everything first (onJoinPrepare)."""
        assert self.up and self.phase == ConsumerPhase.IDLE
        self._did(GroupConsumer.send_join_group)
        if self.protocol == RebalanceProtocol.EAGER and not self.config.EagerNoRevokeBeforeJoin:
            self._event("revoked", self.owned, now)
            self._set_owned(frozenset(), now, {})
        self.phase = ConsumerPhase.JOINING
        self._send(self._join_request(now))

    def handle_join_group_response(self, r: JoinGroupResponse, now: int) -> None:
        """Spec HandleJoinGroupResponse (the leader computes the assignment here)."""
        if self.phase != ConsumerPhase.JOINING:
            return self._dropped(r)
        sent_at = self._expects("join", r)
        if sent_at is None:
            return self._dropped(r)
        self._did(GroupConsumer.handle_join_group_response, m=r)
        if r.error == Errors.MEMBER_ID_REQUIRED:
            self.member_id = r.member
            return self._send(self._join_request(now))
        if r.error == Errors.NONE:
            assert r.member is not None
            self.member_id = r.member
            self.generation = r.generation
            self._extend_lease(sent_at)
            self.phase = ConsumerPhase.SYNCING
            assignment: tuple[tuple[str, Partitions], ...] = ()
            if r.leader == r.member and r.members:
                a = leader_assignment(self.protocol, self.config.assignor,
                                      self.config.partitions_per_topic, dict(r.members), r.generation,
                                      without_revoke=self.config.CooperativeAssignWithoutRevoke)
                assignment = tuple(sorted(a.items()))
            return self._send(SyncGroup(self.client_id, self.conn, r.member, self.instance_id, r.generation,
                                        assignment, sent_at=now, corr=self._corr("sync", now)))
        if r.error == Errors.FENCED_INSTANCE_ID:
            self._fatal(now, "FENCED_INSTANCE_ID on JoinGroup")
        elif r.error == Errors.COORDINATOR_NOT_AVAILABLE:
            self.phase = ConsumerPhase.IDLE
        else:
            self._lose_all(now, r.error.value)
        return None

    def handle_sync_group_response(self, r: SyncGroupResponse, now: int) -> None:
        """Spec HandleSyncGroupResponse. The position of a new partition is its committed offset
        (OffsetFetch, through the ``committed_offsets`` port)."""
        if self.phase != ConsumerPhase.SYNCING:
            return self._dropped(r)
        sent_at = self._expects("sync", r)
        if sent_at is None:
            return self._dropped(r)
        if r.error == Errors.NONE:
            if now >= sent_at + self.config.session_timeout_ms:
                # the lease ran out while the response was in flight: the coordinator may have
                # dropped us already; do not take the partitions (spec: ClientSessionTimeout,
                # whose CloseConnection loses the response)
                return self.client_session_timeout(now)
        self._did(GroupConsumer.handle_sync_group_response, m=r)
        if r.error == Errors.NONE:
            self._extend_lease(sent_at)
            revoked = self.owned - r.assigned
            added = r.assigned - self.owned
            self._event("revoked", revoked, now)
            committed = self.committed_offsets() if self.committed_offsets is not None else {}
            self._set_owned(frozenset(r.assigned), now, committed)
            self._event("assigned", added, now)
            if self.protocol == RebalanceProtocol.COOPERATIVE and revoked:
                self.phase = ConsumerPhase.IDLE  # requestRejoin after revoking
            else:
                self.phase = ConsumerPhase.STABLE
        elif r.error in (Errors.REBALANCE_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE):
            self.phase = ConsumerPhase.IDLE
        elif r.error == Errors.FENCED_INSTANCE_ID:
            self._fatal(now, "FENCED_INSTANCE_ID on SyncGroup")
        else:
            self._lose_all(now, r.error.value)
        return None

    def send_heartbeat(self, now: int) -> None:
        """Spec SendHeartbeat."""
        assert self.up and self.phase == ConsumerPhase.STABLE and self.member_id is not None
        self._did(GroupConsumer.send_heartbeat)
        self.last_heartbeat_at = now
        self._send(Heartbeat(self.client_id, self.conn, self.member_id, self.instance_id, self.generation,
                             sent_at=now, corr=self._corr("heartbeat", now)))

    def handle_heartbeat_response(self, r: HeartbeatResponse, now: int) -> None:
        """Spec HandleHeartbeatResponse (responses of another generation are ignored)."""
        sent_at = self._expects("heartbeat", r)
        if sent_at is None or self.phase != ConsumerPhase.STABLE or r.generation != self.generation \
                or r.member != self.member_id:
            return self._dropped(r)
        if r.error in (Errors.REBALANCE_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE):
            # onJoinPrepare with enable.auto.commit: commit the positions before rejoining (the
            # client waits for it up to a timeout; the request may still land later)
            if self.config.auto_commit:
                self.send_offset_commit(now)
            self._did(GroupConsumer.handle_heartbeat_response, m=r)
            self.phase = ConsumerPhase.IDLE
            return None
        self._did(GroupConsumer.handle_heartbeat_response, m=r)
        if r.error == Errors.NONE:
            self._extend_lease(sent_at)
        elif r.error == Errors.FENCED_INSTANCE_ID:
            self._fatal(now, "FENCED_INSTANCE_ID on Heartbeat")
        else:
            self._lose_all(now, r.error.value)
        return None

    def send_offset_commit(self, now: int) -> None:
        """Spec SendOffsetCommit: commitSync of the positions of the owned partitions (nothing
        happens when it is not enabled: not Stable, nothing owned, a commit outstanding)."""
        if not (self.up and self.phase == ConsumerPhase.STABLE and self.owned
                and self.member_id is not None and "commit" not in self.waiting):
            return
        self._did(GroupConsumer.send_offset_commit)
        offsets = tuple(sorted(((p, self.positions.get(p, 0)) for p in self.owned),
                               key=lambda x: (x[0].topic, x[0].partition)))
        self._send(OffsetCommit(self.client_id, self.conn, self.member_id, self.instance_id,
                                self.generation, offsets, corr=self._corr("commit", now)))

    def _commit_answered(self, r: OffsetCommitResponse) -> None:
        """A failed commit (CommitFailedException) changes nothing here; the heartbeat path
        discovers the rebalance or the lost membership."""
        self._expects("commit", r)

    def poll(self, now: int) -> dict[TopicPartition, int]:
        """Client operation (no spec action): consume one record from every owned partition;
        returns the offsets read (``Ready.reply`` of a ``Trigger``)."""
        if not self.up or self.phase == ConsumerPhase.DOWN:
            return {}
        read = {}
        for p in sorted(self.owned, key=lambda p: (p.topic, p.partition)):
            read[p] = self.positions.get(p, 0)
            self.positions[p] = read[p] + 1
        return read

    # ------------------------------------------------------------------ faults and timers
    def _down(self, now: int) -> None:
        # a process that is down has no open connection (the harness loses what arrives for
        # it); the next incarnation opens a new one (spec Crash/Leave keep conn, Restart bumps it)
        self._set_owned(frozenset(), now, {})
        self.up = False
        self.phase = ConsumerPhase.DOWN
        self.member_id = None
        self.generation = 0
        self.waiting.clear()

    def crash(self, now: int) -> None:
        """Spec Crash."""
        self._did(GroupConsumer.crash)
        self._down(now)

    def leave(self, now: int) -> None:
        """Spec Leave: close(): revoke, and a dynamic member sends LeaveGroup."""
        self._did(GroupConsumer.leave)
        self._event("revoked", self.owned, now)
        if self.instance_id is None and self.member_id is not None:
            self._send(LeaveGroup(self.client_id, self.conn, self.member_id, None))
        self._down(now)

    def restart(self, now: int) -> None:
        """Spec Restart: a new process (same client id and instance id)."""
        assert not self.up
        self._did(GroupConsumer.restart)
        self.up = True
        self.phase = ConsumerPhase.IDLE
        self.fatal = None
        self.lease_until = 0
        self._close_connection()

    def client_session_timeout(self, now: int) -> None:
        """Spec ClientSessionTimeout: the ownership lease ran out."""
        self._did(GroupConsumer.client_session_timeout)
        self._lose_all(now, "session lease expired")
        self._close_connection()

    def request_timeout(self, now: int) -> None:
        """Spec RequestTimeout: a JoinGroup/SyncGroup went unanswered; reconnect and rejoin
        (Kafka's NetworkClient disconnects on a request timeout)."""
        self._did(GroupConsumer.request_timeout)
        self.phase = ConsumerPhase.IDLE
        self._close_connection()

    def _tick(self, now: int) -> None:
        """Fire this consumer's timers (lease first, then request timeout, heartbeat, rejoin)."""
        if not self.up:
            return
        if (self.owned or self.phase == ConsumerPhase.STABLE) and self.member_id is not None \
                and now >= self.lease_until:
            self.client_session_timeout(now)
        for kind, (_corr, sent_at) in list(self.waiting.items()):
            if now >= sent_at + self.config.request_timeout_ms:
                if kind in ("join", "sync"):
                    self.request_timeout(now)
                else:  # a lost heartbeat/commit: give up on it (the lease covers ownership)
                    self.waiting.pop(kind, None)
        if self.phase == ConsumerPhase.IDLE:
            self.send_join_group(now)
        elif self.phase == ConsumerPhase.STABLE and "heartbeat" not in self.waiting \
                and now >= self.last_heartbeat_at + self.config.heartbeat_interval_ms:
            self.send_heartbeat(now)
