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

from kraft.core.node import Node, Pick
from kraft.core.step import ReadyBuilder
from kraft.groups.assignment import leader_assignment
from kraft.groups.assignors import TopicPartition
from kraft.groups.coordinator import GroupConfig
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
from kraft.groups.protocol import PROTOCOL


@attrs.frozen
class RebalanceEvent:
    """One ConsumerRebalanceListener callback (the rebalance log)."""

    at: int
    client: str
    kind: str  # "assigned" | "revoked" | "lost"
    partitions: tuple[str, ...]
    generation: int


# not slotted: attrs then completes this class in place, so the class the declaration binds when
# it is created (Node.__init_subclass__) is the one used
@attrs.define(slots=False)
class GroupConsumer(Node, declaration=PROTOCOL, actor="consumer"):
    """Spec variables per consumer: up, phase, memberId, consumerGeneration, owned, conn.

    Its inputs: a response (dispatched by type through the declaration; an
    ``OffsetCommitResponse``, which the spec does not model, only retires the outstanding
    commit); a ``Tick``, which fires the timers due now in one step, in the order the client's
    poll loop checks them (lease expiry, request timeout, then the rejoin or heartbeat it owes);
    a ``Trigger`` of ``SendJoinGroup``, ``SendOffsetCommit``, ``Crash``, ``Leave``, ``Restart`` or
    of a client ``poll``, whose offsets read are the ``reply``.  A response the client discards
    (stale correlation id, wrong phase) is the spec's ``DropMessage``: for the spec it is a
    message that never arrived."""

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

    @property
    def id(self) -> str:
        return self.client_id

    def route(self, message: Any, now: int) -> Pick | None:
        if isinstance(message, OffsetCommitResponse):
            return GroupConsumer._commit_answered, {"m": message}
        return super().route(message, now)

    # ------------------------------------------------------------------ helpers
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
        self.took(GroupConsumer.send_join_group)
        if self.protocol == RebalanceProtocol.EAGER and not self.config.EagerNoRevokeBeforeJoin:
            self._event("revoked", self.owned, now)
            self._set_owned(frozenset(), now, {})
        self.phase = ConsumerPhase.JOINING
        self.send(self._join_request(now))

    def handle_join_group_response(self, m: JoinGroupResponse, now: int) -> None:
        """Spec HandleJoinGroupResponse (the leader computes the assignment here)."""
        if self.phase != ConsumerPhase.JOINING:
            return self.lost(m)
        sent_at = self._expects("join", m)
        if sent_at is None:
            return self.lost(m)
        self.took(GroupConsumer.handle_join_group_response, m=m)
        if m.error == Errors.MEMBER_ID_REQUIRED:
            self.member_id = m.member
            return self.send(self._join_request(now))
        if m.error == Errors.NONE:
            assert m.member is not None
            self.member_id = m.member
            self.generation = m.generation
            self._extend_lease(sent_at)
            self.phase = ConsumerPhase.SYNCING
            assignment: tuple[tuple[str, Partitions], ...] = ()
            if m.leader == m.member and m.members:
                a = leader_assignment(self.protocol, self.config.assignor,
                                      self.config.partitions_per_topic, dict(m.members), m.generation,
                                      without_revoke=self.config.CooperativeAssignWithoutRevoke)
                assignment = tuple(sorted(a.items()))
            return self.send(SyncGroup(self.client_id, self.conn, m.member, self.instance_id, m.generation,
                                       assignment, sent_at=now, corr=self._corr("sync", now)))
        if m.error == Errors.FENCED_INSTANCE_ID:
            self._fatal(now, "FENCED_INSTANCE_ID on JoinGroup")
        elif m.error == Errors.COORDINATOR_NOT_AVAILABLE:
            self.phase = ConsumerPhase.IDLE
        else:
            self._lose_all(now, m.error.value)
        return None

    def handle_sync_group_response(self, m: SyncGroupResponse, now: int) -> None:
        """Spec HandleSyncGroupResponse. The position of a new partition is its committed offset
        (OffsetFetch, through the ``committed_offsets`` port)."""
        if self.phase != ConsumerPhase.SYNCING:
            return self.lost(m)
        sent_at = self._expects("sync", m)
        if sent_at is None:
            return self.lost(m)
        if m.error == Errors.NONE:
            if now >= sent_at + self.config.session_timeout_ms:
                # the lease ran out while the response was in flight: the coordinator may have
                # dropped us already; do not take the partitions (spec: ClientSessionTimeout,
                # whose CloseConnection loses the response)
                return self.client_session_timeout(now)
        self.took(GroupConsumer.handle_sync_group_response, m=m)
        if m.error == Errors.NONE:
            self._extend_lease(sent_at)
            revoked = self.owned - m.assigned
            added = m.assigned - self.owned
            self._event("revoked", revoked, now)
            committed = self.committed_offsets() if self.committed_offsets is not None else {}
            self._set_owned(frozenset(m.assigned), now, committed)
            self._event("assigned", added, now)
            if self.protocol == RebalanceProtocol.COOPERATIVE and revoked:
                self.phase = ConsumerPhase.IDLE  # requestRejoin after revoking
            else:
                self.phase = ConsumerPhase.STABLE
        elif m.error in (Errors.REBALANCE_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE):
            self.phase = ConsumerPhase.IDLE
        elif m.error == Errors.FENCED_INSTANCE_ID:
            self._fatal(now, "FENCED_INSTANCE_ID on SyncGroup")
        else:
            self._lose_all(now, m.error.value)
        return None

    def send_heartbeat(self, now: int) -> None:
        """Spec SendHeartbeat."""
        assert self.up and self.phase == ConsumerPhase.STABLE and self.member_id is not None
        self.took(GroupConsumer.send_heartbeat)
        self.last_heartbeat_at = now
        self.send(Heartbeat(self.client_id, self.conn, self.member_id, self.instance_id, self.generation,
                            sent_at=now, corr=self._corr("heartbeat", now)))

    def handle_heartbeat_response(self, m: HeartbeatResponse, now: int) -> None:
        """Spec HandleHeartbeatResponse (responses of another generation are ignored)."""
        sent_at = self._expects("heartbeat", m)
        if sent_at is None or self.phase != ConsumerPhase.STABLE or m.generation != self.generation \
                or m.member != self.member_id:
            return self.lost(m)
        if m.error in (Errors.REBALANCE_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE):
            # onJoinPrepare with enable.auto.commit: commit the positions before rejoining (the
            # client waits for it up to a timeout; the request may still land later)
            if self.config.auto_commit:
                self.send_offset_commit(now)
            self.took(GroupConsumer.handle_heartbeat_response, m=m)
            self.phase = ConsumerPhase.IDLE
            return None
        self.took(GroupConsumer.handle_heartbeat_response, m=m)
        if m.error == Errors.NONE:
            self._extend_lease(sent_at)
        elif m.error == Errors.FENCED_INSTANCE_ID:
            self._fatal(now, "FENCED_INSTANCE_ID on Heartbeat")
        else:
            self._lose_all(now, m.error.value)
        return None

    def send_offset_commit(self, now: int) -> bool | None:
        """Spec SendOffsetCommit: commitSync of the positions of the owned partitions (not taken
        when it is not enabled: not Stable, nothing owned, a commit outstanding)."""
        if not (self.up and self.phase == ConsumerPhase.STABLE and self.owned
                and self.member_id is not None and "commit" not in self.waiting):
            return False
        self.took(GroupConsumer.send_offset_commit)
        offsets = tuple(sorted(((p, self.positions.get(p, 0)) for p in self.owned),
                               key=lambda x: (x[0].topic, x[0].partition)))
        self.send(OffsetCommit(self.client_id, self.conn, self.member_id, self.instance_id,
                               self.generation, offsets, corr=self._corr("commit", now)))

    def _commit_answered(self, m: OffsetCommitResponse, now: int) -> None:
        """A failed commit (CommitFailedException) changes nothing here; the heartbeat path
        discovers the rebalance or the lost membership."""
        self._expects("commit", m)

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
        # a process that is down has no open connection (the world loses what arrives for
        # it); the next incarnation opens a new one (spec Crash/Leave keep conn, Restart bumps it)
        self._set_owned(frozenset(), now, {})
        self.up = False
        self.phase = ConsumerPhase.DOWN
        self.member_id = None
        self.generation = 0
        self.waiting.clear()

    def crash(self, now: int) -> None:
        """Spec Crash."""
        self.took(GroupConsumer.crash)
        self._down(now)

    def leave(self, now: int) -> None:
        """Spec Leave: close(): revoke, and a dynamic member sends LeaveGroup."""
        self.took(GroupConsumer.leave)
        self._event("revoked", self.owned, now)
        if self.instance_id is None and self.member_id is not None:
            self.send(LeaveGroup(self.client_id, self.conn, self.member_id, None))
        self._down(now)

    def restart(self, now: int) -> None:
        """Spec Restart: a new process (same client id and instance id)."""
        assert not self.up
        self.took(GroupConsumer.restart)
        self.up = True
        self.phase = ConsumerPhase.IDLE
        self.fatal = None
        self.lease_until = 0
        self._close_connection()

    def client_session_timeout(self, now: int) -> None:
        """Spec ClientSessionTimeout: the ownership lease ran out."""
        self.took(GroupConsumer.client_session_timeout)
        self._lose_all(now, "session lease expired")
        self._close_connection()

    def request_timeout(self, now: int) -> None:
        """Spec RequestTimeout: a JoinGroup/SyncGroup went unanswered; reconnect and rejoin
        (Kafka's NetworkClient disconnects on a request timeout)."""
        self.took(GroupConsumer.request_timeout)
        self.phase = ConsumerPhase.IDLE
        self._close_connection()

    def next_deadline(self) -> int | None:
        """When a timer is next due: a request timeout, the ownership lease, the heartbeat it
        owes; an Idle consumer owes its JoinGroup at once (due since time 0)."""
        if not self.up:
            return None
        cfg = self.config
        ts = [sent + cfg.request_timeout_ms for _corr, sent in self.waiting.values()]
        if self.owned or self.phase == ConsumerPhase.STABLE:
            ts.append(self.lease_until)
        if self.phase == ConsumerPhase.IDLE:
            ts.append(0)
        if self.phase == ConsumerPhase.STABLE and "heartbeat" not in self.waiting:
            ts.append(self.last_heartbeat_at + cfg.heartbeat_interval_ms)
        return min(ts) if ts else None

    def due(self, now: int) -> Pick | None:
        deadline = self.next_deadline()
        return (GroupConsumer._fire_timers, {}) if deadline is not None and now >= deadline else None

    def _fire_timers(self, now: int) -> None:
        """Every timer due at ``now``, in the order the client's poll loop checks them: the lease,
        then the request timeouts, then the rejoin or the heartbeat it owes."""
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
