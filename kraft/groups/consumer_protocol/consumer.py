"""The consumer's membership manager under the consumer protocol (spec/ConsumerGroupProtocol.tla,
consumer actions; docs/consumer-protocol.md).

Kafka: ``AbstractMembershipManager`` / ``ConsumerMembershipManager`` (states JOINING, RECONCILING,
ACKNOWLEDGING, STABLE, FENCED, PREPARE_LEAVING, LEAVING, UNSUBSCRIBED; ``maybeReconcile`` runs one
reconciliation at a time: auto-commit, ``onPartitionsRevoked``, ``onPartitionsAssigned``, then
ACKNOWLEDGING; ``maybeAbortReconciliation`` drops one the member left or rejoined during) and
``ConsumerHeartbeatRequestManager`` (one request in flight, sent on the interval or at once when
joining or acknowledging; the owned partitions only when they must be: joining, after a new local
assignment, after a failure, and held back while an assignment received is not installed: a
departure from Kafka, docs/consumer-protocol-spec.md).

The lease (docs/consumer-protocol.md): the consumer keeps its partitions for ``lease_ms`` after the
send time of its last heartbeat that succeeded.  The coordinator removes a member no earlier than
the session timeout after its last heartbeat arrived, or the rebalance timeout after it started
revoking, both no shorter than the lease, so a live consumer has given its partitions up
(``client_session_timeout``) before the coordinator can hand them on.

``in_network(conn)``: a port the driver gives (what the network still carries for this consumer
on connection ``conn``: its heartbeat, and the responses to it); it only decides which of the
spec's two timeouts a request timeout is.

A static consumer (``group.instance.id`` set, :attr:`.config.ProtocolConfig.static`) sends its
instance id on every heartbeat and leaves with epoch -2 (``ConsumerMembershipManager.leaveGroupEpoch``);
UNRELEASED_INSTANCE_ID and FENCED_INSTANCE_ID are fatal to it
(``ConsumerHeartbeatRequestManager.handleSpecificFailure``): FATAL, its partitions lost
(``AbstractMembershipManager.transitionToFatal``), no more heartbeats.  Each new process of it
chooses a new member id (:meth:`Consumer.new_process`).

Subscriptions: the consumer subscribes to every topic of the config at first;
:meth:`Consumer.change_subscription` is ``subscribe()`` with another topic set while in the group
(``AbstractMembershipManager.onSubscriptionUpdated``: no rejoin).  A heartbeat carries the
subscription when joining or when it is not yet sent since it changed
(``HeartbeatState.buildRequestData``); ``sub_sent`` tracks that, and a failure sends it again
unless a response confirmed it (spec ``subSent``; Kafka's ``SentFields.reset`` sends it after
every failure, which the coordinator ignores when unchanged).  The partitions of a dropped topic
stay owned until the coordinator's new assignment revokes them.
"""

from __future__ import annotations

import enum
from typing import Any, Callable

import attrs

from kraft.core.node import Node, Pick, requires
from kraft.groups.assignors import TopicPartition
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.messages import (
    FATAL_ERRORS,
    IN_GROUP,
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ClientState,
    Errors,
    Heartbeat,
    HeartbeatResponse,
    OffsetCommit,
    Partitions,
    member_id_of,
)
from kraft.groups.consumer_protocol.protocol import CONSUMER, PROTOCOL

S = ClientState
EMPTY: Partitions = frozenset()


@attrs.frozen
class Reconciliation:
    """A reconciliation in progress: its target, the next stage (``revoke`` or ``assign``), and
    whether the member rejoined or was fenced since it started (``stale``: it must abort)."""

    target: Partitions
    step: str = "revoke"
    stale: bool = False


@attrs.frozen
class InNetwork:
    """What the network carries for one consumer's connection: its heartbeat still on the way,
    and the responses to it not yet read."""

    request: bool = False
    responses: tuple[Any, ...] = ()


class SubSent(enum.Enum):
    """Where the consumer's subscription stands (spec ``subSent``)."""

    ACKED = "ACKED"     # a successful response confirmed it
    UNSENT = "UNSENT"   # changed (or the request carrying it failed): the next heartbeat carries it
    SENT = "SENT"       # carried by the heartbeat in flight


class Consumer(Node, declaration=PROTOCOL, actor=CONSUMER):
    """One consumer of the group (its first process's member id is its client id)."""

    def __init__(self, client_id: str, config: ProtocolConfig) -> None:
        self.id = client_id
        self.config = config
        self.instance_id = client_id if client_id in config.static else None
        self.incarnation = 0
        self.member_id = client_id
        self.state = S.UNSUBSCRIBED
        self.epoch = LEAVE_EPOCH
        self.owned: Partitions = EMPTY
        self.target: Partitions | None = None
        self.recon: Reconciliation | None = None
        self.send_owned = True
        self.inflight = False
        self.conn = 0
        self.subscription: tuple[str, ...] = config.topic_names
        self.sub_sent = SubSent.ACKED
        self.up = True
        self.sent_at = 0
        self.next_heartbeat_at = 0
        self.lease_until: int | None = None
        self.listener_at = 0    # when the application thread runs the listener's next stage
        self.positions: dict[TopicPartition, int] = {}
        # ports the driver gives: the group's committed offsets (OffsetFetch), the network's view
        self.committed_offsets: Callable[[], dict[TopicPartition, int]] = dict
        self.in_network: Callable[[int], InNetwork] = lambda conn: InNetwork()

    # ------------------------------------------------------------------ joining and heartbeats
    @requires(lambda c: c.state is S.UNSUBSCRIBED, "the consumer is already subscribed")
    def join(self, now: int) -> None:
        """Spec Join: subscribe()."""
        self.state, self.epoch, self.send_owned = S.JOINING, JOIN_EPOCH, True
        self.next_heartbeat_at = now

    def _report_owned(self) -> bool:
        """The owned partitions go out only once every assignment received is installed (spec
        ReportOwned: a departure from Kafka, docs/consumer-protocol-spec.md)."""
        return self.send_owned and self.state is not S.RECONCILING and (self.target is None or self.target == self.owned)

    def send_heartbeat(self, now: int) -> None:
        """Spec SendHeartbeat: one request in flight; ACKNOWLEDGING -> STABLE once it is sent (or
        RECONCILING when a newer assignment arrived meanwhile)."""
        report = self._report_owned()
        sub = self.epoch == JOIN_EPOCH or self.sub_sent is SubSent.UNSENT
        self.send(Heartbeat(self.member_id, self.conn, self.epoch, self.owned if report else None,
                            self.subscription if sub else None, self.instance_id))
        if self.sub_sent is SubSent.UNSENT:
            self.sub_sent = SubSent.SENT
        self.inflight, self.sent_at = True, now
        self.next_heartbeat_at = now + self.config.heartbeat_interval_ms
        if report:
            self.send_owned = False
        if self.state is S.ACKNOWLEDGING:
            self.state = S.STABLE if self.target == self.owned else S.RECONCILING

    def handle_heartbeat_response(self, now: int, m: HeartbeatResponse) -> None:
        """Spec HandleHeartbeatResponse: onHeartbeatSuccess or onHeartbeatFailure."""
        self.inflight = False
        if self.state not in IN_GROUP:
            return
        if m.error is Errors.NONE:
            self.epoch = m.member_epoch
            if self.sub_sent is SubSent.SENT:
                self.sub_sent = SubSent.ACKED
            self.lease_until = max(self.lease_until or 0, self.sent_at + self.config.lease_ms)
            if m.assignment is not None:
                self.target = m.assignment
                if m.assignment != self.owned or self.recon is not None:
                    self.state = S.RECONCILING
                elif self.state is S.JOINING:
                    self.state = S.STABLE
            return
        if m.error in FATAL_ERRORS:
            self._lose(S.FATAL)
            return
        self.state, self.epoch, self.send_owned = S.FENCED, JOIN_EPOCH, True
        self._reset_sub()
        self._mark_stale()

    def _reset_sub(self) -> None:
        """``SentFields.reset`` after a failure: a subscription the failed request carried goes
        out again (spec ResetSub)."""
        if self.sub_sent is SubSent.SENT:
            self.sub_sent = SubSent.UNSENT

    def _mark_stale(self) -> None:
        if self.recon is not None:
            self.recon = attrs.evolve(self.recon, stale=True)

    def rejoin_after_fence(self, now: int) -> None:
        """Spec RejoinAfterFence: onPartitionsLost, then rejoin with epoch 0."""
        self._lose(S.JOINING)

    def _lose(self, state: ClientState) -> None:
        self.state, self.owned, self.target, self.send_owned = state, EMPTY, None, True
        self._mark_stale()
        self.lease_until = None

    # ------------------------------------------------------------------ reconciliation
    def reconcile_commit(self, now: int) -> None:
        """Spec ReconcileCommit: start reconciling; auto-commit the partitions to revoke first."""
        assert self.target is not None
        if self.target == self.owned:
            self.state, self.send_owned = S.ACKNOWLEDGING, True
            return
        self.recon = Reconciliation(self.target)
        self.listener_at = now + self.config.listener_ms
        revoked = self.owned - self.target
        if revoked:
            self.send(self._commit(revoked))

    def _commit(self, parts: Partitions) -> OffsetCommit:
        offsets = tuple(sorted(((p, self.positions.get(p, 0)) for p in parts), key=lambda x: (x[0].topic, x[0].partition)))
        return OffsetCommit(self.member_id, self.epoch, offsets)

    def _aborts(self) -> bool:
        assert self.recon is not None
        return self.state is not S.RECONCILING or (self.recon.stale and not self.config.StaleReconcileAfterRejoin)

    def reconcile_revoke(self, now: int) -> None:
        """Spec ReconcileRevoke: onPartitionsRevoked, or the reconciliation aborts."""
        assert self.recon is not None
        if self._aborts():
            self.recon = None
            return
        self._set_owned(self.owned & self.recon.target)
        self.recon = attrs.evolve(self.recon, step="assign")
        self.listener_at = now + self.config.listener_ms

    def reconcile_assign(self, now: int) -> None:
        """Spec ReconcileAssign: onPartitionsAssigned, then ACKNOWLEDGING."""
        assert self.recon is not None
        recon, self.recon = self.recon, None
        if self.state is not S.RECONCILING or (recon.stale and not self.config.StaleReconcileAfterRejoin):
            return
        self._set_owned(recon.target)
        self.state, self.send_owned = S.ACKNOWLEDGING, True

    def _set_owned(self, parts: Partitions) -> None:
        """The new local assignment; a newly owned partition starts at its committed offset."""
        committed = self.committed_offsets()
        for p in parts - self.owned:
            self.positions[p] = committed.get(p, 0)
        self.owned = parts

    # ------------------------------------------------------------------ timeouts
    def request_timeout(self, now: int) -> None:
        """Spec RequestTimeout: the heartbeat or its response was lost; reconnect.  The spec sees
        a response still on its way as lost first, and a heartbeat still on its way as a zombie
        request (RequestTimeoutEarly); the driver's ``in_network`` tells which."""
        seen = self.in_network(self.conn)
        for r in seen.responses:
            self.lost(r)
        if seen.request:
            self.took(Consumer.request_timeout_early)
        elif seen.responses:
            self.took(Consumer.request_timeout)
        self._reconnect()

    def request_timeout_early(self, now: int) -> None:
        """Spec RequestTimeoutEarly: the heartbeat is still in the network (a zombie request)."""
        self._reconnect()

    def _reconnect(self) -> None:
        self.inflight, self.send_owned = False, True
        self._reset_sub()
        self.conn += 1

    def client_session_timeout(self, now: int) -> None:
        """Spec ClientSessionTimeout: the lease ran out; give everything up and rejoin with epoch 0
        on a new connection."""
        self._lose(S.JOINING)
        self.epoch, self.inflight = JOIN_EPOCH, False
        self._reset_sub()
        self.conn += 1
        self.next_heartbeat_at = now

    # ------------------------------------------------------------------ subscription
    @requires(lambda c: c.state in IN_GROUP, "the consumer is not in the group")
    def change_subscription(self, now: int, topics: tuple[str, ...]) -> None:
        """Spec ChangeSubscription: subscribe() with another non-empty topic set of the config's
        topics while in the group; the next heartbeat carries it at once."""
        new = tuple(sorted(set(topics)))
        if not new or not set(new) <= set(self.config.topic_names) or new == self.subscription:
            raise ValueError(f"{self.id}: {list(topics)} is not another non-empty set of the topics "
                             f"{list(self.config.topic_names)}")
        self.subscription, self.sub_sent = new, SubSent.UNSENT
        self.next_heartbeat_at = now

    # ------------------------------------------------------------------ leaving
    @requires(lambda c: c.state in IN_GROUP, "the consumer is not in the group")
    def leave(self, now: int) -> None:
        """Spec Leave: unsubscribe(); PREPARE_LEAVING commits what it owns first."""
        self.state = S.PREPARE_LEAVING
        self._mark_stale()
        if self.owned:
            self.send(self._commit(self.owned))

    def leave_revoke(self, now: int) -> None:
        """Spec LeaveRevoke: PREPARE_LEAVING revokes everything."""
        self.state, self.owned, self.target = S.LEAVING, EMPTY, None

    def send_leave_heartbeat(self, now: int) -> None:
        """Spec SendLeaveHeartbeat: the heartbeat with epoch -1 (-2 for a static member), without
        waiting for an outstanding one; UNSUBSCRIBED."""
        epoch = LEAVE_EPOCH if self.instance_id is None else STATIC_LEAVE_EPOCH
        self.send(Heartbeat(self.member_id, self.conn, epoch, None, None, self.instance_id))
        self.state, self.epoch, self.inflight = S.UNSUBSCRIBED, epoch, False
        self.conn += 1
        self.lease_until = None

    @requires(lambda c: c.instance_id is not None, "the consumer is not static")
    @requires(lambda c: c.state in (S.UNSUBSCRIBED, S.FATAL), "a process still in the group")
    def new_process(self, now: int) -> None:
        """Spec NewProcess: the application closed this static consumer and started a new process
        with the same config: a fresh member id (KIP-1082), nothing owned, unsubscribed."""
        self.incarnation += 1
        self.member_id = member_id_of(self.id, self.incarnation)
        self.state, self.epoch, self.owned, self.target, self.recon = S.UNSUBSCRIBED, LEAVE_EPOCH, EMPTY, None, None
        self.inflight, self.send_owned, self.lease_until, self.positions = False, True, None, {}
        self.conn += 1

    # ------------------------------------------------------------------ timers
    def due(self, now: int) -> Pick | None:
        """The action the client's poll loop takes next: the lease, a request timeout, the
        membership manager's pending transition, then a heartbeat when one is owed."""
        if not self.up:
            return None
        held = self.state in IN_GROUP or self.state is S.FENCED
        if held and self.lease_until is not None and now >= self.lease_until:
            return Consumer.client_session_timeout, {}
        if self.inflight and now >= self.sent_at + self.config.request_timeout_ms:
            return Consumer.request_timeout, {}
        internal = self._internal(now)
        if internal is not None:
            return internal, {}
        if self.state in IN_GROUP and not self.inflight and now >= self._heartbeat_due():
            return Consumer.send_heartbeat, {}
        return None

    def _internal(self, now: int) -> Callable[..., Any] | None:
        """The membership manager's next transition; a listener stage once the application
        thread gets to it (``listener_at``)."""
        if self.state is S.FENCED:
            return Consumer.rejoin_after_fence
        if self.state is S.PREPARE_LEAVING:
            return Consumer.leave_revoke
        if self.state is S.LEAVING:
            return Consumer.send_leave_heartbeat
        if self.recon is not None:
            if now < self.listener_at:
                return None
            return Consumer.reconcile_revoke if self.recon.step == "revoke" else Consumer.reconcile_assign
        if self.state is S.RECONCILING and self.target is not None:
            return Consumer.reconcile_commit
        return None

    def _heartbeat_due(self) -> int:
        urgent = self.state in (S.JOINING, S.ACKNOWLEDGING) or (self.send_owned and self.state is not S.RECONCILING)
        return self.sent_at if urgent else self.next_heartbeat_at

    def next_deadline(self) -> int | None:
        if not self.up:
            return None
        ts: list[int] = []
        if self.lease_until is not None and (self.state in IN_GROUP or self.state is S.FENCED):
            ts.append(self.lease_until)
        if self.inflight:
            ts.append(self.sent_at + self.config.request_timeout_ms)
        elif self.state in IN_GROUP:
            ts.append(self._heartbeat_due())
        if self.recon is not None:
            ts.append(self.listener_at)
        elif self._internal(self.listener_at) is not None:
            ts.append(0)
        return min(ts) if ts else None

    # ------------------------------------------------------------------ the client's operations
    def poll(self) -> dict[TopicPartition, int]:
        """The application reads one record of every partition it owns: their offsets."""
        read = {p: self.positions.get(p, 0) for p in sorted(self.owned, key=lambda q: (q.topic, q.partition))}
        for p in read:
            self.positions[p] = read[p] + 1
        return read

    def describe(self) -> str:
        return (f"{self.id}: {'up' if self.up else 'DOWN'} {self.state.value} epoch {self.epoch} conn {self.conn} "
                f"owns {sorted(map(str, self.owned))} target "
                f"{None if self.target is None else sorted(map(str, self.target))} "
                f"recon {self.recon} inflight {self.inflight}")
