"""A broker's replica of the one partition, as a sans-I/O node: the "broker" of the replication
declaration (``kraft.replication.protocol``), stepped by the kit's ``kraft.core.node.Node.step``.

Inputs: ``FetchRequest`` (as leader), ``FetchResponse`` (as follower), ``AlterPartitionResponse``
(a stopped broker takes none: the network lost it); ``Tick`` (replay newly committed metadata,
complete an acks=all produce, shrink the ISR of a lagging follower, flush, heartbeat, fetch;
nothing while stopped); ``Trigger`` of a handler (produce, controlled-shutdown request,
clean/unclean shutdown, restart), refused when its ``requires`` condition does not hold.

The partition log is a ``kraft.log.Log`` (real record batches, one record per entry, compressed
with ``config.compression_type``; the batch's partition leader epoch = the entry's epoch, so the
log's leader-epoch cache answers the epoch lookups) over the file system handed in; appends stay
unsynced until the periodic flush (``log.flush.interval.ms``), so an unclean shutdown
(``MemoryFS.crash``) loses the unflushed tail. The high watermark is checkpointed on every change
(Kafka: replication-offset-checkpoint), the clean-shutdown marker holds the broker epoch (KIP-966's
previous broker epoch).

Leadership is learnt only by replaying the committed metadata log (``metadata``: the list the
controller appends to) into a ``MetadataImage``: ``ReplayMetadata`` = ``Partition.makeLeader`` /
``makeFollower``.

Kafka: core/src/main/scala/kafka/cluster/Partition.scala (makeLeader, makeFollower,
maybeIncrementLeaderHW, isFollowerInSync, canAddReplicaToIsr, maybeShrinkIsr, fetchRecords,
appendRecordsToLeader, checkEnoughReplicasReachOffset, handleAlterPartitionUpdate/Error),
AbstractFetcherThread (truncateOnFetchResponse, getOffsetTruncationState), ReplicaManager.
Spec: ``spec/PartitionReplication.tla``; differences in docs/replication.md.
"""

from __future__ import annotations

from typing import Any, Sequence

import attrs

from kraft.controller.image import CONTROLLED_SHUTDOWN, FENCED_STATES, UNFENCED, MetadataImage
from kraft.core.node import Node, Pick, requires
from kraft.core.step import ReadyBuilder
from kraft.log import Log, Record, RecordBatch
from kraft.log.fs import join, write_atomically
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import (
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    NOT_LEADER_OR_FOLLOWER,
    RECOVERED,
    UNKNOWN_LEADER_EPOCH,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    Entry,
    FetchRequest,
    FetchResponse,
    IsrMember,
)
from kraft.replication.protocol import PROTOCOL

OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
HW_CHECKPOINT_FILE = "replication-offset-checkpoint"


@attrs.frozen
class ProduceResult:
    """The answer to a produce: ``offset`` (-1 unless appended), ``error`` (Kafka's Errors name)."""

    value: int
    acks: int
    offset: int = -1
    error: str = NONE
    leader: int = -1
    leaderEpoch: int = -1


@attrs.define
class PendingProduce:
    """A DelayedProduce waiting in the purgatory for the HW (spec: ``pendingProduce``)."""

    value: int
    offset: int
    leaderEpoch: int


def _running(b: "Broker") -> bool:
    return b.running


def _stopped(b: "Broker") -> bool:
    return not b.running


class Broker(Node, declaration=PROTOCOL, actor="broker"):
    def __init__(self, broker_id: int, brokers: Sequence[int], config: ReplicationConfig, fs: Any,
                 metadata: Sequence[Any], *, now: int = 0, directory: str | None = None,
                 metadata_offsets: Sequence[int] | None = None) -> None:
        self.id = broker_id
        self.brokers = tuple(sorted(brokers))
        self.config = config
        self.fs = fs
        self.metadata = metadata
        # the log offset of each metadata record (default: its position, the spec's numbering)
        self.metadata_offsets = metadata_offsets
        self.root = directory or f"/kafka/broker-{broker_id}"
        self.directory = join(self.root, "kraft-test-0")
        self._rb = ReadyBuilder()
        self.log, _ = Log.open(fs, self.directory)
        self._entries: list[Entry] = []
        self._reload_entries()
        self.running = True
        self.clean_shutdown = True          # spec cleanShutdown: TRUE at Init
        self.high_watermark = 0
        self.want_shutdown = False
        # after its controlled shutdown the broker stops by itself (the spec's CleanShutdown, the
        # controller's fencing joined by the driver); under the metadata quorum it waits for the
        # controller's word instead (kraft.replication.stacked: Kafka's shouldShutDown heartbeat reply)
        self.stops_on_its_own = True
        self._reset_local(now)
        # start-up: the broker replays the metadata log committed so far (Init's replayedOffset)
        self._replay(now)

    # ------------------------------------------------------------------ storage helpers
    def _reload_entries(self) -> None:
        self._entries = [Entry(b.partition_leader_epoch, int(r.value.decode()))
                         for b in self.log.read(0) for r in b.records]

    @property
    def leo(self) -> int:
        return self.log.end_offset

    @property
    def entries(self) -> list[Entry]:
        return self._entries

    def _append_entries(self, entries: Sequence[Entry]) -> None:
        for e in entries:
            off = self.log.end_offset
            record = Record(0, 0, None, str(e.value).encode())
            self.log.append(RecordBatch(off, e.epoch, (record,), compression=self.config.compression_type))
            self._entries.append(e)
        if entries:
            self._rb.wrote("append", first=self.leo - len(entries), count=len(entries))

    def _truncate(self, offset: int) -> None:
        if offset < self.leo:
            self.log.truncate_to(offset)
            del self._entries[offset:]
            self._rb.wrote("truncate", offset=offset)


    def _set_hw(self, hw: int) -> None:
        if hw != self.high_watermark:
            self.high_watermark = hw
            write_atomically(self.fs, join(self.root, HW_CHECKPOINT_FILE), str(hw).encode())
            self._rb.wrote("state", highWatermark=hw)

    def _last_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else -1

    def _epoch_lookup(self, epoch: int) -> tuple[int, int]:
        """(largest epoch <= ``epoch`` in the log, its end offset) from the log's leader-epoch cache
        (LeaderEpochFileCache.endOffsetFor); (-1, 0) when there is none (the spec's
        LargestEpochAtMost / EndOffsetForEpoch)."""
        e, end = self.log.epoch_end_offset(epoch)
        return (-1, 0) if e == -1 else (e, end)

    # ------------------------------------------------------------------ local state
    def _reset_local(self, now: int) -> None:
        """ResetLocal: what the Partition object knows before any metadata is replayed."""
        self.image = MetadataImage()
        self.local_leader = -1
        self.local_leader_epoch = -1
        self.local_partition_epoch = -1
        self.local_isr: frozenset[int] = frozenset()
        self.alter_partition_in_flight = False
        self.pending_isr: frozenset[int] = frozenset()
        self.leader_epoch_start_offset = -1
        self.follower_end_offset = {f: -1 for f in self.brokers}
        self.follower_broker_epoch = {f: -1 for f in self.brokers}
        self.last_caught_up = {f: now for f in self.brokers}
        self.pending_produce: list[PendingProduce] = []
        self.fetch_in_flight: int | None = None   # deadline of the outstanding fetch
        self.next_fetch_at = now
        self.next_heartbeat_at = now
        self.next_flush_at = now + self.config.flush_interval_ms
        self.next_replay_at = now

    @property
    def replayed_offset(self) -> int:
        """Spec ``replayedOffset``: metadata records applied, not counting the TopicRecord at
        offset 0 (docs/replication.md, "Metadata offsets")."""
        return max(0, self.image.applied - 1)

    @property
    def broker_epoch(self) -> int:
        return self.image.broker_epoch(self.id)

    def is_leader(self) -> bool:
        return self.running and self.local_leader == self.id

    def maximal_isr(self) -> frozenset[int]:
        return self.local_isr | (self.pending_isr if self.alter_partition_in_flight else frozenset())

    def _isr_eligible(self, f: int, fetch_epoch: int) -> bool:
        """Partition.isReplicaIsrEligible (KRaft): not fenced, not shutting down, and the broker
        epoch of its fetch unknown (-1) or the one in the metadata (isBrokerEpochIsrEligible,
        KIP-903; the StaleAlterPartitionRejoin variant compares no broker epochs)."""
        view_epoch = self.image.broker_epoch(f)
        return self.image.broker_state(f) == UNFENCED and (
            self.config.StaleAlterPartitionRejoin or fetch_epoch == -1 or view_epoch == -1
            or fetch_epoch == view_epoch)

    def _leader_hw(self, now: int, leo: int, fe: dict[int, int], committed_isr: frozenset[int],
                   max_isr: frozenset[int], fbe: dict[int, int] | None = None) -> int:
        """Partition.maybeIncrementLeaderHW: min LEO over the maximal ISR (an unknown follower
        offset, -1, blocks it); never lowered; not advanced while the committed ISR is below
        min.insync.replicas (KAFKA-15583; the HwAdvanceUnderMinIsr variant advances anyway)."""
        # Kafka also counts followers outside the ISR that caught up within replica.lag.time.max.ms
        # and are ISR-eligible (shouldWaitForReplicaToJoinIsr: isCaughtUp && isReplicaIsrEligible):
        # a follower whose ISR join is in flight, or whose pending join a metadata replay dropped,
        # is never overtaken by the HW.  The spec lets any subset of the eligible followers whose
        # LEO the leader knows count (it has no clock): HwChoices in spec/PartitionReplication.tla.
        fbe = self.follower_broker_epoch if fbe is None else fbe
        caught_up = {r for r in self.brokers if r != self.id and fe[r] >= 0
                     and now - self.last_caught_up[r] <= self.config.replica_lag_time_max_ms
                     and self._isr_eligible(r, fbe[r])}
        cand = min([leo] + [fe[r] for r in (max_isr | caught_up) if r != self.id])
        under = len(committed_isr) < self.config.min_insync_replicas and not self.config.HwAdvanceUnderMinIsr
        if under or cand <= self.high_watermark:
            return self.high_watermark
        return cand

    # ------------------------------------------------------------------ the step surface
    def route(self, message: Any, now: int) -> Pick | None:
        """A stopped broker, or one still registering (Kafka's BrokerServer serves requests only
        once started), takes no message, and the connection an answer was meant for died with the
        process that sent the request: the network lost it (DropMessage)."""
        if not self.running:
            self.lost(message)
            return None
        return super().route(message, now)

    def due(self, now: int) -> Pick | None:
        """The internal or timer action enabled at ``now`` (none while stopped)."""
        if not self.running:
            return None
        cls = type(self)
        if self.image.applied < len(self.metadata) and now >= self.next_replay_at:
            return (cls.replay_metadata, {})
        if self.is_leader():
            for p in self.pending_produce:
                if self.high_watermark > p.offset and p.leaderEpoch == self.local_leader_epoch:
                    return (cls.complete_produce, {"v": p.value})
            if not self.alter_partition_in_flight:
                for f in sorted(self.local_isr - {self.id}):
                    if self.follower_end_offset[f] < self.leo and \
                            now - self.last_caught_up[f] > self.config.replica_lag_time_max_ms:
                        return (cls.shrink_isr, {"f": f})
        if self.want_shutdown and self.stops_on_its_own and self._may_stop():
            return (cls.clean_shutdown, {})
        if self.log.flushed_offset < self.leo and now >= self.next_flush_at:
            return (cls.flush, {})
        if self.broker_epoch >= 0 and now >= self.next_heartbeat_at:
            return (cls.heartbeat, {})
        if self._may_fetch(now):
            return (cls.send_fetch_request, {})
        return None

    def next_deadline(self) -> int | None:
        """The earliest virtual time a ``Tick`` may act without other input."""
        if not self.running:
            return None
        times = [self.next_heartbeat_at if self.broker_epoch >= 0 else None]
        if self.image.applied < len(self.metadata):
            times.append(self.next_replay_at)
        if self.log.flushed_offset < self.leo:
            times.append(self.next_flush_at)
        if self.is_leader():
            if any(self.high_watermark > p.offset and p.leaderEpoch == self.local_leader_epoch
                   for p in self.pending_produce):
                return 0
            if not self.alter_partition_in_flight:
                for f in self.local_isr - {self.id}:
                    if self.follower_end_offset[f] < self.leo:
                        times.append(self.last_caught_up[f] + self.config.replica_lag_time_max_ms + 1)
        elif self.local_leader in self.brokers:
            times.append(self.fetch_in_flight if self.fetch_in_flight is not None else self.next_fetch_at)
        if self.want_shutdown and self.stops_on_its_own and self._may_stop():
            return 0
        live = [t for t in times if t is not None]
        return min(live) if live else None

    def _follows(self) -> bool:
        """It knows a leader that is another broker."""
        return self.local_leader in self.brokers and self.local_leader != self.id

    def _may_fetch(self, now: int) -> bool:
        if not self._follows():
            return False
        if self.fetch_in_flight is not None and now < self.fetch_in_flight:
            return False  # one fetch outstanding (a lost one times out: request.timeout.ms)
        return now >= self.next_fetch_at

    def _may_stop(self) -> bool:
        state = self.image.broker_state(self.id)
        p = self.image.partition
        return state in (CONTROLLED_SHUTDOWN, *FENCED_STATES) and self.image.applied > 0 and \
            (p is None or p.leader != self.id) and self.local_leader != self.id

    # ------------------------------------------------------------------ spec actions: lifecycle
    @requires(lambda b: b.running and b._may_stop(), "not a running broker done with its controlled shutdown")
    def clean_shutdown(self, now: int) -> None:
        """Spec action CleanShutdown(b) (broker half): after its controlled shutdown, leading
        nothing, the broker flushes its log, writes the clean-shutdown marker (holding its broker
        epoch) and stops; the world then tells the controller (``Controller.broker_stopped``)."""
        self.log.flush()
        self._rb.wrote("flush", offset=self.leo)
        write_atomically(self.fs, join(self.root, CLEAN_SHUTDOWN_FILE), str(self.broker_epoch).encode())
        self._rb.wrote("state", cleanShutdown=True)
        self.clean_shutdown = True
        self.running = False
        self.pending_produce = []

    @requires(_running, "not running")
    def unclean_shutdown(self, now: int) -> None:
        """Spec action UncleanShutdown(b, k): a crash.  The driver has already crashed the file
        system (``MemoryFS.crash``); recovery of the log (``Log.open``) shows how much survived:
        ``k`` = the entries that had been flushed.  HW = min(HW, k)."""
        self.log, report = Log.open(self.fs, self.directory)
        self._reload_entries()
        self.high_watermark = min(self.high_watermark, self.leo)
        self.running = False
        self.clean_shutdown = False
        self.pending_produce = []
        self._rb.args["k"] = self.leo

    def _start(self, now: int) -> None:
        marker = join(self.root, CLEAN_SHUTDOWN_FILE)
        previous_epoch = -1
        if self.fs.exists(marker):
            previous_epoch = int(self.fs.read_bytes(marker).decode() or "-1")
            self.fs.remove(marker)  # Kafka deletes the marker at start-up
        self.log, _ = Log.open(self.fs, self.directory)
        self._reload_entries()
        hw_file = join(self.root, HW_CHECKPOINT_FILE)
        hw = int(self.fs.read_bytes(hw_file).decode()) if self.fs.exists(hw_file) else 0
        self.high_watermark = min(hw, self.leo)
        self.running = True
        self.clean_shutdown = False
        self.want_shutdown = False
        self._reset_local(now)
        self.send(BrokerRegistrationRequest(self.id, previous_epoch))

    @requires(_stopped, "running")
    def restart_broker(self, now: int) -> None:
        """Spec action RestartBroker(b) (broker half): recover the log, read and delete the
        clean-shutdown marker, register (the BrokerRegistrationRequest in the Ready goes to the
        controller at once: ``Controller.register_broker``)."""
        self._start(now)

    @requires(_stopped, "running")
    def restart_broker_with_disk_loss(self, now: int) -> None:
        """Spec action RestartBrokerWithDiskLoss(b): as RestartBroker; the driver has wiped the
        disk (``MemoryFS.lose_disk``), so the log is empty and there is no marker."""
        self._start(now)

    # ------------------------------------------------------------------ spec actions: metadata
    def _replay(self, now: int) -> None:
        """Apply the committed metadata log to its end; makeLeader / makeFollower if the partition
        changed in that range (a partition epoch older than the local one is skipped)."""
        start = self.image.applied
        offsets = self.metadata_offsets
        for i in range(start, len(self.metadata)):
            self.image.replay(i, self.metadata[i], i if offsets is None else offsets[i])
        self.next_replay_at = now + self.config.metadata_replay_ms
        p = self.image.partition
        # A registration this broker already knows is not applied again: the same partition and
        # leader epoch, learnt first from the AlterPartition answer.  This is a deliberate
        # difference from Kafka.  In Kafka, ReplicaManager.applyLocalLeadersDelta calls makeLeader
        # for every partition TopicDelta.localChanges lists, that is every partition whose epoch
        # differs from the previous metadata image, even when Partition.handleAlterPartitionUpdate
        # already set partitionEpoch.  Partition.makeLeader skips only an OLDER epoch; with an
        # equal one, updateAssignmentAndIsr sets partitionState = CommittedPartitionState(isr) and
        # drops a PendingExpandIsr whose AlterPartition is still in flight.  The controller may
        # still apply that expansion.  Meanwhile the HW (maybeIncrementLeaderHW over maximalIsr)
        # no longer waits for the new member and can pass its LEO.  The new member then joins the
        # ISR without records below the HW (StrongIsr, seed 55 of --faults all).  Kafka's limit of
        # one AlterPartition per partition (AlterPartitionManager.submit fails with
        # OPERATION_NOT_ATTEMPTED) does not close this: it blocks only a second request, not the
        # HW.  Keeping the pending change closes it, and it is what the model-checked spec does
        # (ReplayEqualEpoch = FALSE in spec/PartitionReplication.tla, ReplayMetadata).
        known = p is not None and p.partitionEpoch == self.local_partition_epoch \
            and p.leaderEpoch == self.local_leader_epoch
        if p is None or self.image.last_partition_index < start or p.partitionEpoch < self.local_partition_epoch \
                or known:
            return
        new_epoch = p.leaderEpoch > self.local_leader_epoch
        if p.leader == self.id:
            # Partition.makeLeader
            if new_epoch:
                # produces waiting from an earlier epoch of this leader stay parked and are never
                # answered (CompleteProduce needs the same epoch): they time out for the client.
                # The spec's makeLeader keeps pendingProduce too (dropping them here was rejected
                # by conformance, seed 34 of 1000 events).  Kafka's DelayedProduce would still
                # answer them (checkEnoughReplicasReachOffset does not compare leader epochs): a
                # documented difference (docs/replication.md)
                self.leader_epoch_start_offset = self.leo
                self.follower_end_offset = {f: -1 for f in self.brokers}
                self.follower_broker_epoch = {f: -1 for f in self.brokers}
                # Kafka resets lastCaughtUpTimeMs: now for ISR members, never for the others
                self.last_caught_up = {f: now if f in p.isr else -10**12 for f in self.brokers}
            self.local_leader, self.local_leader_epoch = self.id, p.leaderEpoch
            self.local_partition_epoch = p.partitionEpoch
            self.local_isr = p.isr
            self.alter_partition_in_flight, self.pending_isr = False, frozenset()
            self._set_hw(self._leader_hw(now, self.leo, self.follower_end_offset, p.isr, p.isr))
        else:
            # Partition.makeFollower (no truncation here: it happens on fetch, KIP-595 style)
            self.local_leader, self.local_leader_epoch = p.leader, p.leaderEpoch
            self.local_partition_epoch = p.partitionEpoch
            self.local_isr = frozenset()
            self.alter_partition_in_flight, self.pending_isr = False, frozenset()
            self.leader_epoch_start_offset = -1
            self.follower_end_offset = {f: -1 for f in self.brokers}
            self.follower_broker_epoch = {f: -1 for f in self.brokers}
            if self.config.TruncateToHighWatermark and new_epoch:
                self._truncate(self.high_watermark)  # before KIP-101 (KAFKA-1211)
            self.pending_produce = []
            self.fetch_in_flight = None
            self.next_fetch_at = now

    @requires(lambda b: b.running and b.image.applied < len(b.metadata), "not running, or nothing to replay")
    def replay_metadata(self, now: int) -> None:
        """Spec action ReplayMetadata(b)."""
        self._replay(now)

    # ------------------------------------------------------------------ spec actions: fetch
    @requires(lambda b: b.running and b._follows(), "not a running follower of another broker")
    def send_fetch_request(self, now: int) -> bool | None:
        """Spec action SendFetchRequest(f): fetch from the leader this broker knows (not before
        the fetch interval, nor while a fetch is outstanding: conditions of ``now``)."""
        if not self._may_fetch(now):
            return False
        self.send(FetchRequest(self.id, self.local_leader, self.local_leader_epoch, self.leo, self._last_epoch(),
                               self.broker_epoch))
        self.fetch_in_flight = now + 10 * self.config.fetch_interval_ms + 200

    def handle_fetch_request(self, m: FetchRequest, now: int) -> None:
        """Spec action HandleFetchRequest(l, m): Partition.fetchRecords as the leader."""
        f, le, leo = m.source, self.local_leader_epoch, self.leo
        if m.currentLeaderEpoch != -1 and m.currentLeaderEpoch < le:
            err = FENCED_LEADER_EPOCH
        elif m.currentLeaderEpoch != -1 and m.currentLeaderEpoch > le:
            err = UNKNOWN_LEADER_EPOCH
        elif self.local_leader != self.id:
            err = NOT_LEADER_OR_FOLLOWER
        else:
            err = NONE
        lfe = m.lastFetchedEpoch
        # lastOffsetForLeaderEpoch: the leader's own epoch answers with its LEO
        e_epoch, e_end = (le, leo) if lfe >= le else self._epoch_lookup(lfe)
        undefined = lfe != -1 and e_epoch == -1
        if self.config.EpochLookupKip101:
            diverging = lfe != -1 and not undefined and e_end < m.fetchOffset
        else:
            diverging = lfe != -1 and not undefined and (e_epoch < lfe or e_end < m.fetchOffset)
        # Kafka's order (Partition.readRecords): an undefined epoch is out of range, then the
        # divergence check, and only then the read, whose offset may be past the LEO (the spec's
        # order too: a follower whose longer log merely diverges is told to truncate, not to
        # empty its log).
        out_of_range = undefined or (not diverging and m.fetchOffset > leo)
        update = err == NONE and not out_of_range and (not diverging or self.config.Kip320FirstTry)
        fe = dict(self.follower_end_offset)
        fbe = dict(self.follower_broker_epoch)
        fe[f] = m.fetchOffset
        fbe[f] = m.brokerEpoch
        eligible = self._isr_eligible(f, m.brokerEpoch)
        in_sync = m.fetchOffset >= self.high_watermark and (
            self.config.IsrJoinBeforeEpochStart or m.fetchOffset >= self.leader_epoch_start_offset)
        expand = update and not self.alter_partition_in_flight and f not in self.local_isr and eligible and in_sync
        if expand:
            max_isr = self.local_isr | {f}
        else:
            max_isr = self.local_isr | (self.pending_isr if self.alter_partition_in_flight else frozenset())
        hw = self._leader_hw(now, leo, fe, self.local_isr, max_isr, fbe) if update else self.high_watermark
        if err != NONE:
            reply = FetchResponse(self.id, f, err, m.currentLeaderEpoch, m.fetchOffset, (), -1)
        elif out_of_range:
            reply = FetchResponse(self.id, f, OFFSET_OUT_OF_RANGE, m.currentLeaderEpoch, m.fetchOffset, (), -1)
        elif diverging:
            reply = FetchResponse(self.id, f, NONE, m.currentLeaderEpoch, m.fetchOffset, (), hw, e_epoch, e_end)
        else:
            reply = FetchResponse(self.id, f, NONE, m.currentLeaderEpoch, m.fetchOffset,
                                  tuple(self._entries[m.fetchOffset:leo]), hw)
        if update:
            self.follower_end_offset, self.follower_broker_epoch = fe, fbe
            if m.fetchOffset >= leo:
                self.last_caught_up[f] = now  # Kafka: lastCaughtUpTimeMs
            self._set_hw(hw)
        self.send(reply)
        if expand:
            self.alter_partition_in_flight = True
            self.pending_isr = self.local_isr | {f}
            self.send(self._alter_partition(self.pending_isr, fbe))

    def handle_fetch_response(self, m: FetchResponse, now: int) -> None:
        """Spec action HandleFetchResponse(f, m): only the answer to the current fetch (same
        leader, same epoch, fetch offset = LEO) is used; the truncation on a diverging epoch is
        AbstractFetcherThread.getOffsetTruncationState (KIP-279)."""
        leo = self.leo
        current = m.source == self.local_leader and m.currentLeaderEpoch == self.local_leader_epoch \
            and m.fetchOffset == leo
        if current:
            self.fetch_in_flight = None
            self.next_fetch_at = now + (0 if m.entries else self.config.fetch_interval_ms)
        if not current or m.error in (FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER):
            return
        if m.error == OFFSET_OUT_OF_RANGE:
            self._truncate(0)
            self._set_hw(0)
        elif m.divergingEpoch != -1:
            f_epoch, f_end = self._epoch_lookup(m.divergingEpoch)
            if self.config.EpochLookupKip101 or f_epoch == -1:
                t = min(m.divergingEndOffset, leo)
            elif f_epoch != m.divergingEpoch:
                t = min(f_end, leo)
            else:
                t = min(f_end, m.divergingEndOffset, leo)
            self._truncate(t)
            self._set_hw(min(self.high_watermark, t))
        else:
            self._append_entries(m.entries)
            self._set_hw(min(m.highWatermark, self.leo))

    # ------------------------------------------------------------------ spec actions: ISR
    def _alter_partition(self, isr: frozenset[int], fbe: dict[int, int]) -> AlterPartitionRequest:
        """AlterPartition with each member's broker epoch: the leader's own, a follower's from its
        last fetch (KIP-903); none (-1) with the StaleAlterPartitionRejoin variant."""
        def epoch(r: int) -> int:
            if self.config.StaleAlterPartitionRejoin:
                return -1
            return self.broker_epoch if r == self.id else fbe[r]

        return AlterPartitionRequest(self.id, self.broker_epoch, self.local_leader_epoch, self.local_partition_epoch,
                                     frozenset(IsrMember(r, epoch(r)) for r in isr), RECOVERED)

    @requires(lambda b: b.is_leader() and not b.alter_partition_in_flight, "not a leader free to change its ISR")
    def shrink_isr(self, f: int, now: int) -> bool | None:
        """Spec action ShrinkIsr(l, f): Partition.maybeShrinkIsr, f behind the LEO for
        replica.lag.time.max.ms (not taken for a follower ``f`` outside the ISR or caught up)."""
        if f not in self.local_isr - {self.id} or self.follower_end_offset[f] >= self.leo:
            return False
        self.alter_partition_in_flight = True
        self.pending_isr = self.local_isr - {f}
        self.send(self._alter_partition(self.pending_isr, self.follower_broker_epoch))
        return None

    def handle_alter_partition_response(self, m: AlterPartitionResponse, now: int) -> None:
        """Spec action HandleAlterPartitionResponse(l, m): handleAlterPartitionUpdate /
        handleAlterPartitionError."""
        # Kafka ties the answer to the request it answers: the callback of
        # Partition.submitAlterPartition ignores it unless the proposed state is still the pending
        # one (`partitionState != proposedIsrState`); the answer echoes the proposal (ISR and the
        # partition epoch it was made from), so a delayed or duplicated answer to an earlier request
        # is ignored.  handleAlterPartitionUpdate then ignores a stale leader epoch or an older
        # partition epoch (an equal one means the controller had nothing to change).
        mine = self.alter_partition_in_flight and self.pending_isr == m.requestIsr \
            and self.local_partition_epoch == m.requestPartitionEpoch
        commit = mine and self.local_leader == self.id and m.error == NONE \
            and m.leaderEpoch == self.local_leader_epoch and m.partitionEpoch >= self.local_partition_epoch
        if commit:
            hw = self._leader_hw(now, self.leo, self.follower_end_offset, m.isr, m.isr)
            self.local_isr = m.isr
            self.local_partition_epoch = m.partitionEpoch
            self.alter_partition_in_flight, self.pending_isr = False, frozenset()
            self._set_hw(hw)
        elif mine and m.error == INELIGIBLE_REPLICA:  # handleAlterPartitionError: back to committed
            self.alter_partition_in_flight, self.pending_isr = False, frozenset()

    # ------------------------------------------------------------------ spec actions: clients
    def produce(self, acks: int, value: int, now: int) -> Any:
        """Spec action Produce(l, acks): Partition.appendRecordsToLeader.  Not the leader: answer
        NOT_LEADER_OR_FOLLOWER; acks=-1 with the committed ISR below min.insync.replicas: answer
        NOT_ENOUGH_REPLICAS without appending (no spec step in either case)."""
        if not self.is_leader():
            self.noted("ProduceRejected", acks=acks, error=NOT_LEADER_OR_FOLLOWER)
            return ProduceResult(value, acks, error=NOT_LEADER_OR_FOLLOWER)
        if acks == -1 and len(self.local_isr) < self.config.min_insync_replicas:
            self.noted("ProduceRejected", acks=acks, error=NOT_ENOUGH_REPLICAS)
            return ProduceResult(value, acks, error=NOT_ENOUGH_REPLICAS)
        offset = self.leo
        self._append_entries([Entry(self.local_leader_epoch, value)])
        self._set_hw(self._leader_hw(now, self.leo, self.follower_end_offset, self.local_isr, self.maximal_isr()))
        if acks == -1:
            self.pending_produce.append(PendingProduce(value, offset, self.local_leader_epoch))
            return ProduceResult(value, acks, offset, "PENDING", self.id, self.local_leader_epoch)
        return ProduceResult(value, acks, offset, NONE, self.id, self.local_leader_epoch)

    def complete_produce(self, v: int, now: int) -> Any:
        """Spec action CompleteProduce(l, v): checkEnoughReplicasReachOffset."""
        for p in self.pending_produce:
            if p.value == v and self.is_leader() and p.leaderEpoch == self.local_leader_epoch \
                    and self.high_watermark > p.offset:
                self.pending_produce.remove(p)
                ok = len(self.local_isr) >= self.config.min_insync_replicas
                return ProduceResult(v, -1, p.offset, NONE if ok else NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                     self.id, p.leaderEpoch)
        return False

    # ------------------------------------------------------------------ not spec actions
    def flush(self, now: int) -> None:
        """log.flush.interval.ms: make the appended entries durable."""
        self.log.flush()
        self._rb.wrote("flush", offset=self.leo)
        self.next_flush_at = now + self.config.flush_interval_ms
        self.noted("flush")

    def heartbeat(self, now: int) -> None:
        """BrokerLifecycleManager: a heartbeat with the replayed metadata offset."""
        self.send(BrokerHeartbeatRequest(self.id, self.broker_epoch, self.image.last_offset, self.want_shutdown))
        self.next_heartbeat_at = now + self.config.broker_heartbeat_interval_ms
        self.noted("heartbeat")

    @requires(lambda b: b.running and not b.want_shutdown, "not running, or shutting down already")
    def request_shutdown(self, now: int) -> None:
        """The operator stops the broker: controlled shutdown first (a heartbeat asking for it)."""
        self.want_shutdown = True
        self.next_heartbeat_at = now
        self.noted("request_shutdown")

    # ------------------------------------------------------------------ views
    def describe(self) -> str:
        if not self.running:
            return f"broker {self.id}: DOWN log {[(e.epoch, e.value) for e in self._entries]} hw {self.high_watermark}"
        role = "leader" if self.local_leader == self.id else f"follower of {self.local_leader}"
        return (f"broker {self.id}: {role} epoch {self.local_leader_epoch} pe {self.local_partition_epoch} "
                f"isr {sorted(self.local_isr)} pending {sorted(self.pending_isr) if self.alter_partition_in_flight else '-'} "
                f"log {[(e.epoch, e.value) for e in self._entries]} hw {self.high_watermark} "
                f"flushed {self.log.flushed_offset} leso {self.leader_epoch_start_offset} "
                f"fe {self.follower_end_offset} replayed {self.replayed_offset}")
