"""The active controller's metadata state machine for one partition, as a sans-I/O node.

The "controller" of the replication declaration (``kraft.replication.protocol``), stepped by the
kit's ``kraft.core.node.Node.step``.  Inputs: ``BrokerHeartbeatRequest`` (liveness, unfencing,
controlled shutdown: ``route`` picks the action a heartbeat takes, if any),
``AlterPartitionRequest``, ``BrokerRegistrationRequest`` (the controller half of a broker restart),
``Tick`` (a broker session timed out: FenceBroker) and ``Trigger`` of a handler.  Every change is a
list of metadata records appended to ``__cluster_metadata`` (``self.records``, Kafka offsets from 0)
and replayed into ``self.image``; ``Ready.committed`` carries the new records.  By default (the
spec's abstraction, the hand-stepped ``kraft.replication.world.ReplicationWorld``) the log is an
in-memory committed sequence; brokers read it (``kraft.replication.broker.Broker`` gets the same
list) and learn leadership only by replaying it.

With ``quorum=True`` (the simulator, ``kraft.replication.stacked``) the controller is one of the KRaft
voters: ``image`` is its in-memory state (the committed log plus its own uncommitted records, as
``QuorumController``'s timeline data structures), a handler's records form one batch that the
driver takes (``take_batch``) and appends to ``__cluster_metadata`` through the quorum, and only
``replay_committed`` extends ``records``/``committed``/``spec_log``; ``revert`` drops the
uncommitted state when the controller loses leadership (``QuorumController.renounce``).

Kafka: metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java
(``alterPartition``, ``validateAlterPartitionData``, ``handleBrokerFenced``, ``handleBrokerUnfenced``,
``handleBrokerInControlledShutdown``, ``handleBrokerUncleanShutdown``), ClusterControlManager
(``registerBroker``), BrokerHeartbeatManager (session timeouts), PartitionChangeBuilder
(``kraft.controller.builder``).  Spec: ``spec/PartitionReplication.tla`` (FenceBroker,
UnfenceBroker, ControlledShutdown, HandleAlterPartitionRequest, Register).
"""

from __future__ import annotations

from typing import Any

from kraft.controller import builder
from kraft.controller.image import (
    CONTROLLED_SHUTDOWN, FENCED, FENCED_STATES, UNFENCED, MetadataImage, PartitionRegistration)
from kraft.controller.records import (
    PARTITION,
    TOPIC_ID,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    to_spec,
)
from kraft.core.node import Node, Pick
from kraft.core.step import ReadyBuilder
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import (
    CONTROLLER,
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_REQUEST,
    INVALID_UPDATE_VERSION,
    NONE,
    NOT_CONTROLLER,
    RECOVERED,
    RECOVERING,
    STALE_BROKER_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from kraft.replication.protocol import PROTOCOL

# the note of a heartbeat answered SHUTDOWN_NOW (the stacked quorum stops the broker on it)
SHUTDOWN_NOW = "shutdown_now"


class Controller(Node, declaration=PROTOCOL, actor="controller"):
    """The (single, always active) controller of one topic partition replicated on every broker."""

    def __init__(self, brokers: tuple[int, ...] | list[int], config: ReplicationConfig, *, now: int = 0,
                 quorum: bool = False) -> None:
        self.id = CONTROLLER
        self.brokers = tuple(sorted(brokers))
        self.config = config
        self.quorum = quorum
        self.records: list[Any] = []     # __cluster_metadata, committed, in offset order
        self.offsets: list[int] = []     # the log offset of each record (quorum mode: not its index)
        # quorum mode: the offset the next record takes (the quorum's log end offset; the driver
        # sets it before each step, as OffsetControlManager.nextWriteOffset)
        self.write_offset = 0
        self.spec_log: list[dict[str, Any]] = []   # the same records as the spec writes them
        self.image = MetadataImage()
        self.committed = self.image      # quorum mode: the image of ``records`` alone
        self.last_heartbeat: dict[int, int] = {b: now for b in self.brokers}
        self._rb = ReadyBuilder()
        self._batch: list[Any] = []
        self.shutdown_offset: dict[int, int] = {}   # metadata offset of each controlled shutdown
        # bootstrap: the topic, every broker registered unfenced (epoch = offset), the partition.
        # In quorum mode these are the bootstrap checkpoint every node is formatted with
        # (``kafka-storage format``), committed by definition; the quorum log holds what follows.
        quorum, self.quorum = self.quorum, False
        self._append([TopicRecord()])
        self._append([RegisterBrokerRecord(b, self.next_offset + i, fenced=False)
                      for i, b in enumerate(self.brokers)])
        self._append([PartitionRecord(PARTITION, TOPIC_ID, self.brokers, frozenset(self.brokers), self.brokers[0])])
        self.quorum = quorum
        self.bootstrap = tuple(self.records)
        if quorum:
            self.committed = MetadataImage()
            for off, rec in enumerate(self.records):
                self.committed.replay(off, rec)
            self.write_offset = len(self.records)
        self._rb = ReadyBuilder()

    # ------------------------------------------------------------------ records
    @property
    def partition(self) -> PartitionRegistration:
        assert self.image.partition is not None
        return self.image.partition

    def _append(self, records: list[Any]) -> None:
        """Append records to the committed metadata log and replay them (atomically, one batch).
        Quorum mode: replay them into the in-memory image only and add them to this operation's
        batch (``take_batch``); they reach ``records`` once the quorum commits them."""
        if self.quorum:
            for rec in records:
                self.image.replay(self.image.applied, rec, self.write_offset)
                self.write_offset += 1
                self._batch.append(rec)
            return
        for rec in records:
            offset = len(self.records)
            self.records.append(rec)
            self.offsets.append(offset)
            self.image.replay(offset, rec)
            spec = to_spec(rec, self.image.partition)
            if spec is not None:
                self.spec_log.append(spec)
            self._rb.committed.append((offset, rec))

    @property
    def next_offset(self) -> int:
        """The log offset the next record takes: a registration's broker epoch
        (QuorumController.registerBroker passes ``offsetControl.nextWriteOffset()``)."""
        return self.write_offset if self.quorum else len(self.records)

    # ------------------------------------------------------------------ quorum mode
    def take_batch(self) -> list[Any]:
        """The records the last step produced (one atomic batch for the quorum), then forget them."""
        batch, self._batch = self._batch, []
        return batch

    @property
    def uncommitted(self) -> int:
        """Records in the in-memory image that are not committed yet."""
        return self.image.applied - self.committed.applied

    def replay_committed(self, records: list[Any], offsets: list[int]) -> None:
        """Quorum mode: records committed by the quorum at ``offsets``, in offset order.  The
        in-memory image follows when it holds nothing uncommitted (a standby controller); an
        active controller replayed its own records when it appended them (the driver checks they
        are the same quorum entries, else it calls ``revert``)."""
        for rec, offset in zip(records, offsets, strict=True):
            index = len(self.records)
            follow = self.image.applied == self.committed.applied
            self.records.append(rec)
            self.offsets.append(offset)
            self.committed.replay(index, rec, offset)
            if follow:
                self.image.replay(index, rec, offset)
            spec = to_spec(rec, self.committed.partition)
            if spec is not None:
                self.spec_log.append(spec)

    def revert(self) -> None:
        """Drop the uncommitted state: the image is the committed log again (renounce)."""
        self._batch = []
        if self.image.applied == self.committed.applied:
            return
        self.image = MetadataImage()
        for index, (rec, offset) in enumerate(zip(self.records, self.offsets)):
            self.image.replay(index, rec, offset)

    def _change(self, new: PartitionRegistration) -> list[Any]:
        rec = builder.change_record(self.partition, new)
        return [] if rec is None else [rec]

    def _build(self, p: PartitionRegistration, target_isr: Any, acceptable: Any, unclean: Any,
               lrs: str) -> PartitionRegistration:
        c = self.config
        return builder.build(p, target_isr, acceptable, unclean, lrs, min_isr=c.min_insync_replicas,
                             elr_enabled=not c.LastReplicaStanding, unclean_election=c.UncleanElection)

    def _fence_records(self, b: int) -> list[Any]:
        """handleBrokerFenced: b out of the ISR (never an acceptable leader), elect; then the
        FenceBrokerRecord."""
        p = self.partition
        out: list[Any] = []
        if b in p.isr:
            out += self._change(self._build(p, p.isr - {b}, self.image.active() - {b}, (), p.leaderRecoveryState))
        return out + [FenceBrokerRecord(b, self.image.broker_epoch(b))]

    # ------------------------------------------------------------------ the step surface
    def route(self, message: Any, now: int) -> Pick | None:
        """A heartbeat takes the action its broker's state calls for (or none: a note); a
        registration is the controller half of a broker restart; anything else by its type."""
        if isinstance(message, BrokerHeartbeatRequest):
            return self._heartbeat(message, now)
        if isinstance(message, BrokerRegistrationRequest):
            return type(self).register_broker, {"m": message}
        return super().route(message, now)

    def due(self, now: int) -> Pick | None:
        """BrokerHeartbeatManager: a broker whose session expired is fenced."""
        for b in self.brokers:
            if self.image.broker_state(b) not in FENCED_STATES \
                    and now >= self.last_heartbeat[b] + self.config.broker_session_timeout_ms:
                return (type(self).fence_broker, {"b": b})
        return None

    def next_deadline(self) -> int | None:
        live = [self.last_heartbeat[b] + self.config.broker_session_timeout_ms for b in self.brokers
                if self.image.broker_state(b) not in FENCED_STATES]
        return min(live) if live else None

    # ------------------------------------------------------------------ spec actions
    def fence_broker(self, b: int, now: int) -> bool | None:
        """Spec action FenceBroker(b): the session expired (handleBrokerFenced)."""
        if self.image.broker_state(b) in FENCED_STATES:
            return False
        self._append(self._fence_records(b))
        return None

    def unfence_broker(self, b: int, now: int) -> bool | None:
        """Spec action UnfenceBroker(b): a fenced broker heartbeats having replayed its registration
        (BrokerHeartbeatManager: currentMetadataOffset >= registration offset); then a partition
        without a leader elects (handleBrokerUnfenced).  A broker fenced in its controlled
        shutdown is not unfenced: its heartbeat state stays CONTROLLED_SHUTDOWN
        (BrokerHeartbeatManager.currentBrokerState) until it registers again."""
        if self.image.broker_state(b) != FENCED:
            return False
        self._append([UnfenceBrokerRecord(b, self.image.broker_epoch(b))])
        p = self.partition
        if p.leader == -1:
            self._append(self._change(self._build(p, p.isr, self.image.active() | {b}, (), p.leaderRecoveryState)))
        return None

    def controlled_shutdown(self, b: int, now: int) -> bool | None:
        """Spec action ControlledShutdown(b): heartbeat with wantShutDown
        (handleBrokerInControlledShutdown): b out of the ISR, leadership moved."""
        if self.image.broker_state(b) != UNFENCED:
            return False
        self._append([BrokerRegistrationChangeRecord(b, self.image.broker_epoch(b))])
        p = self.partition
        if b in p.isr:
            self._append(self._change(self._build(p, p.isr - {b}, self.image.active() - {b}, (), p.leaderRecoveryState)))
        self.shutdown_offset[b] = self.image.last_offset
        return None

    def _alter_partition_error(self, m: AlterPartitionRequest) -> str:
        """ReplicationControlManager.alterPartition + validateAlterPartitionData, in Kafka's order."""
        p = self.partition
        new_isr = {x.broker for x in m.newIsrWithEpochs}
        if m.brokerEpoch != self.image.broker_epoch(m.source):
            return STALE_BROKER_EPOCH
        if m.leaderEpoch > p.leaderEpoch or m.partitionEpoch > p.partitionEpoch:
            return NOT_CONTROLLER  # a request from the future: this controller is behind
        if m.leaderEpoch < p.leaderEpoch:
            return FENCED_LEADER_EPOCH
        if m.source != p.leader:
            return INVALID_REQUEST
        if m.partitionEpoch < p.partitionEpoch:
            return INVALID_UPDATE_VERSION
        if p.leader not in new_isr:
            return INVALID_REQUEST
        if m.leaderRecoveryState == RECOVERING and len(new_isr) > 1:
            return INVALID_REQUEST
        if p.leaderRecoveryState == RECOVERED and m.leaderRecoveryState == RECOVERING:
            return INVALID_REQUEST
        for x in m.newIsrWithEpochs:
            # ineligibleReplicasForIsr: fenced, shutting down, or a stale broker epoch (KIP-903)
            if self.image.broker_state(x.broker) != UNFENCED:
                return INELIGIBLE_REPLICA
            if x.brokerEpoch != -1 and x.brokerEpoch != self.image.broker_epoch(x.broker):
                return INELIGIBLE_REPLICA
        return NONE

    def handle_alter_partition_request(self, m: AlterPartitionRequest, now: int) -> None:
        """Spec action HandleAlterPartitionRequest(m)."""
        err = self._alter_partition_error(m)
        echo = {"requestIsr": frozenset(x.broker for x in m.newIsrWithEpochs),
                "requestPartitionEpoch": m.partitionEpoch}
        if err != NONE:
            self.send(AlterPartitionResponse(m.source, err, **echo))
            return
        p = self.partition
        new = self._build(p, {x.broker for x in m.newIsrWithEpochs}, self.image.active(), (), m.leaderRecoveryState)
        self._append(self._change(new))
        q = self.partition
        self.send(AlterPartitionResponse(m.source, NONE, q.leader, q.leaderEpoch, q.partitionEpoch, q.isr,
                                         q.leaderRecoveryState, **echo))

    # ------------------------------------------------------------------ not spec actions
    def _heartbeat(self, m: BrokerHeartbeatRequest, now: int) -> Pick | None:
        """BrokerHeartbeatRequest (QuorumController.processBrokerHeartbeat): a heartbeat of the
        current registration renews the session; it may unfence the broker or start its controlled
        shutdown (those are spec actions: returned for ``step`` to take)."""
        b = m.source
        if m.brokerEpoch != self.image.broker_epoch(b):
            self.noted("BrokerHeartbeatStale", b=b)
            return None
        self.last_heartbeat[b] = now
        state = self.image.broker_state(b)
        if m.wantShutDown and state == UNFENCED:
            return (type(self).controlled_shutdown, {"b": b})
        if self.quorum and m.wantShutDown and state == CONTROLLED_SHUTDOWN and self.partition.leader != b \
                and m.currentMetadataOffset >= self.shutdown_offset.get(b, 0):
            # BrokerHeartbeatManager.calculateNextBrokerState: SHUTDOWN_NOW once the broker leads
            # nothing and has replayed its controlled shutdown
            return (type(self).shutdown_now, {"b": b})
        if self.quorum and m.wantShutDown and state in FENCED_STATES \
                and m.currentMetadataOffset >= self.image.last_offset:
            # calculateNextBrokerState: a fenced broker asking to shut down is granted SHUTDOWN_NOW
            # at once ("has requested and been granted an immediate shutdown"), once it has
            # replayed everything (its own fencing included); otherwise it stayed fenced, waiting
            # forever, and kept a partition whose last ELR member it was offline
            return (type(self).shutdown_now, {"b": b})
        if not m.wantShutDown and state == FENCED and m.currentMetadataOffset >= self.image.broker_epoch(b):
            return (type(self).unfence_broker, {"b": b})
        self.noted("BrokerHeartbeat", b=b)
        return None

    def register_broker(self, m: BrokerRegistrationRequest, now: int) -> bool | None:
        """The controller half of RestartBroker / RestartBrokerWithDiskLoss: registerBroker appends
        a fenced RegisterBrokerRecord (new epoch = its offset); after an unclean shutdown
        (previousBrokerEpoch differs) handleBrokerUncleanShutdown takes b out of ISR and ELR
        (KIP-966; not before it, the LastReplicaStanding variant)."""
        b = m.source
        if m.incarnationId and self.image.broker_incarnation(b) == m.incarnationId:
            return False  # a retry of a registration already made
        old_epoch = self.image.broker_epoch(b)
        unclean = m.previousBrokerEpoch == -1 or m.previousBrokerEpoch != old_epoch
        # the broker epoch is the record's offset (the next write offset)
        self._append([RegisterBrokerRecord(b, self.next_offset, fenced=True, incarnationId=m.incarnationId)])
        self.last_heartbeat[b] = now
        if unclean and not self.config.LastReplicaStanding:
            acc = self.image.active() - {b}
            p = self.partition
            p1 = self._build(p, p.isr - {b}, acc, {b}, p.leaderRecoveryState) if b in p.isr else p
            p2 = self._build(p1, p1.isr, acc, {b}, p1.leaderRecoveryState) if b in p1.elr else p1
            self._append(self._change(p1))
            if p2 != p1:
                self._append(self._change(p2))
        self.noted("BrokerRegistration", b=b, unclean=unclean)
        return None

    def broker_stopped(self, b: int, now: int) -> None:
        """The controller half of CleanShutdown: the broker that finished its controlled shutdown
        is fenced (its session ends); nothing if it is fenced already."""
        if self.image.broker_state(b) not in FENCED_STATES:
            self._append(self._fence_records(b))
        self.noted("broker_stopped", b=b)

    def shutdown_now(self, b: int, now: int) -> bool | None:
        """Quorum mode: ReplicationControlManager.handleBrokerShutdown: the broker that finished
        its controlled shutdown is fenced; once that commits, the heartbeat reply tells it to stop
        (the driver then takes the broker's CleanShutdown in the same step).  A broker already
        fenced stops at once (BrokerHeartbeatManager.calculateNextBrokerState, FENCED with
        wantShutDown: SHUTDOWN_NOW)."""
        state = self.image.broker_state(b)
        if state not in (*FENCED_STATES, CONTROLLED_SHUTDOWN):
            return False
        if state == CONTROLLED_SHUTDOWN:   # (already fenced: no records, the broker stops at once)
            self._append(self._fence_records(b))
        self.noted(SHUTDOWN_NOW, b=b)
        return None

    def failover(self, now: int) -> None:
        """A new active controller takes over (the old one crashed): its state is the committed
        metadata log (already replayed into ``image``); every broker gets a fresh session, as
        BrokerHeartbeatManager starts over on a new active controller."""
        self.last_heartbeat = {b: now for b in self.brokers}
        self.noted("failover")

    # ------------------------------------------------------------------ views
    def describe(self) -> str:
        p = self.partition
        states = ", ".join(f"{b}:{self.image.broker_state(b)}@{self.image.broker_epoch(b)}" for b in self.brokers)
        return (f"controller: leader {p.leader} epoch {p.leaderEpoch} partitionEpoch {p.partitionEpoch} "
                f"isr {sorted(p.isr)} elr {sorted(p.elr)} lke {sorted(p.lastKnownElr)} {p.leaderRecoveryState}; "
                f"brokers {states}; metadata log {len(self.records)} records")
