"""One story per bug variant: the shortest schedule we know that makes the variant break an
invariant, driven step by step on the hand-stepped cluster.  The same schedule keeps every
invariant with the correct protocol.  Each story returns the cluster (the caller checks it ran to
the end) and raises ``InvariantViolation`` where the bug acts."""

from __future__ import annotations

import attrs

from kraft.replication.broker import Broker
from kraft.replication.cluster import Cluster
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    FetchRequest,
    FetchResponse,
)


def fetch(c: Cluster, f: int) -> None:
    """Follower ``f`` fetches once: request, leader's answer, and any AlterPartition round trip."""
    c.advance(c.config.fetch_interval_ms)
    c.take(f, Broker.send_fetch_request)
    c.deliver_next(FetchRequest, source=f)
    c.deliver_next(FetchResponse, dest=f)
    settle_alter_partition(c)


def settle_alter_partition(c: Cluster) -> None:
    while any(isinstance(m, AlterPartitionRequest) for m in c.pending):
        c.deliver_next(AlterPartitionRequest)
        c.deliver_next(AlterPartitionResponse)


def replay(c: Cluster, *brokers: int) -> None:
    for b in brokers:
        if c.brokers[b].running and c.brokers[b].image.applied < len(c.controller.records):
            c.take(b, Broker.replay_metadata)


def unfence(c: Cluster, b: int) -> None:
    """``b`` replays its registration and heartbeats: the controller unfences it."""
    replay(c, b)
    c.take(b, Broker.heartbeat)
    c.deliver_next(BrokerHeartbeatRequest, source=b)


def produce_acked(c: Cluster, leader: int, *followers: int) -> None:
    """acks=all produce at ``leader``, replicated by ``followers`` (two fetch rounds), answered."""
    c.produce(leader, -1)
    for _ in range(2):
        for f in followers:
            fetch(c, f)
    c.tick(leader)


def truncate_to_high_watermark(cfg: ReplicationConfig) -> Cluster:
    """KAFKA-1211: broker 3's HW lags (its second fetch came first); leader 1 is fenced, 2 leads,
    3 becomes its follower and (bug) truncates to its HW; 2 is fenced, 3 leads without the acked
    record."""
    c = Cluster(3, cfg)
    c.produce(1, -1)
    fetch(c, 2), fetch(c, 3)        # both hold the record, HW 0
    fetch(c, 3), fetch(c, 2)        # 3 answered with HW 0, 2 with HW 1
    c.tick(1)                        # CompleteProduce: acked
    c.fence(1)
    replay(c, 2, 3)                  # 2 leads epoch 1; 3 follows (bug: truncates to HW 0)
    c.fence(2)
    replay(c, 2, 3)                  # 3 leads epoch 2
    return c


def epoch_lookup_kip101(cfg: ReplicationConfig) -> Cluster:
    """KAFKA-6361 (KIP-279): 2 leads epoch 1 and appends v3 alone; 3 leads epoch 2 with (0, v2) at
    offset 1; 2's fetch (last epoch 1, offset 2) finds epoch 0 ending at offset 2 on the leader:
    by end offset alone (bug) nothing diverges and 2 keeps (1, v3) where the leader has (0, v2)."""
    c = Cluster(3, cfg)
    produce_acked(c, 1, 2, 3)            # v1 everywhere
    c.produce(1, 1)                      # v2: only 3 fetches it
    fetch(c, 3)
    c.fence(1)
    replay(c, 1, 2, 3)                   # 2 leads epoch 1
    c.produce(2, 1)                      # v3 at 2 only
    c.fence(2)
    replay(c, 2, 3)                      # 3 leads epoch 2 ({3}, ELR {2})
    c.fence(2) if c.controller.image.broker_state(2) != "Fenced" else None
    unfence(c, 1)                        # 1 back: 3 remains leader
    unfence(c, 2)
    replay(c, 1, 2, 3)
    c.produce(3, 1)                      # v4 in epoch 2
    for _ in range(3):
        fetch(c, 2)
        fetch(c, 1)
    c.tick(3)
    return c


def kip320_first_try(cfg: ReplicationConfig) -> Cluster:
    """The first try at KIP-320: the same divergence, detected, but the leader records the
    diverged follower's fetch offset, adds it to the ISR and counts it for the HW."""
    return epoch_lookup_kip101(cfg)


def isr_join_before_epoch_start(cfg: ReplicationConfig) -> Cluster:
    """KAFKA-7128: 2 is fenced; leader 1 commits v1, v2 with 3 (whose HW answer is lost); 1 is
    fenced and 3 leads with a stale HW 0 and LESO 2; 2 comes back and fetches from offset 0: past
    the HW, not past the LESO, and (bug) joins the ISR without the readable records."""
    c = Cluster(3, cfg)
    c.fence(2)
    replay(c, 1, 3)
    c.produce(1, -1)
    c.produce(1, -1)
    fetch(c, 3)                          # 3 holds v1, v2; HW answer 0
    c.take(3, Broker.send_fetch_request)
    c.deliver_next(FetchRequest, source=3)   # leader HW 2: v1, v2 readable
    c.drop(next(i for i, m in enumerate(c.pending) if isinstance(m, FetchResponse)))
    c.fence(1)
    replay(c, 3)                         # 3 leads with HW 0, LESO 2
    unfence(c, 2)
    replay(c, 2, 3)
    c.advance(c.config.fetch_interval_ms)
    c.take(2, Broker.send_fetch_request)
    c.deliver_next(FetchRequest, source=2)   # offset 0 >= HW 0 (bug: joins, LESO is 2)
    settle_alter_partition(c)                # the ISR holds 2 before its fetch answer arrives
    c.deliver_next(FetchResponse, dest=2)
    return c


def stale_alter_partition_rejoin(cfg: ReplicationConfig) -> Cluster:
    """KIP-903: 2 had fetched up to offset 2; a fetch of that incarnation is still in flight when
    2 crashes (losing its unflushed log), restarts and is unfenced; the stale fetch reaches leader
    1, which (bug: no broker epochs) proposes 2 back into the ISR, and the controller accepts."""
    c = Cluster(3, cfg)
    produce_acked(c, 1, 2, 3)
    c.advance(c.config.fetch_interval_ms)
    c.take(2, Broker.send_fetch_request)     # fetch offset 1, old incarnation: stays in flight
    c.crash(2)
    c.restart(2)                             # unclean: out of the ISR (KIP-966)
    replay(c, 1)
    unfence(c, 2)
    replay(c, 1, 2)
    c.deliver_next(FetchRequest, source=2)
    settle_alter_partition(c)
    replay(c, 1)
    return c


def hw_advance_under_min_isr(cfg: ReplicationConfig) -> Cluster:
    """Before KAFKA-15583: 2 and 3 are fenced, leader 1 alone (ISR {1} < min ISR 2) advances its
    HW over an acks=1 record: readable on one replica only."""
    c = Cluster(3, cfg)
    c.fence(2)
    c.fence(3)
    replay(c, 1)
    c.produce(1, 1)
    return c


def last_replica_standing(cfg: ReplicationConfig) -> Cluster:
    """Before KIP-966: 2 and 3 are fenced (1 stays the last ISR member); v1 is acked by... 1 alone
    cannot ack under min ISR, so: v1 acked with 2 and 3, then 3 and 2 fenced, leader 1 crashes
    uncleanly losing v1 (unflushed), restarts; without ELR the controller keeps it in the ISR and
    re-elects it.  (Nothing is flushed in this story: log.flush.interval.ms is long.)"""
    c = Cluster(3, attrs.evolve(cfg, flush_interval_ms=10**6))
    produce_acked(c, 1, 2, 3)
    c.fence(3)
    c.fence(2)
    c.crash(1)
    c.fence(1)
    c.restart(1)
    unfence(c, 1)
    replay(c, 1)
    return c


def unclean_election(cfg: ReplicationConfig) -> Cluster:
    """unclean.leader.election.enable: 3 is fenced while v1 is acked by 1 and 2; 1 and 2 are
    fenced; 3 comes back and is elected uncleanly, without v1."""
    c = Cluster(3, cfg)
    c.fence(3)
    replay(c, 1)
    produce_acked(c, 1, 2)
    c.fence(1)
    c.fence(2)
    unfence(c, 3)
    replay(c, 3)
    return c


STORIES = {
    "TruncateToHighWatermark": truncate_to_high_watermark,
    "EpochLookupKip101": epoch_lookup_kip101,
    "Kip320FirstTry": kip320_first_try,
    "IsrJoinBeforeEpochStart": isr_join_before_epoch_start,
    "HwAdvanceUnderMinIsr": hw_advance_under_min_isr,
    "LastReplicaStanding": last_replica_standing,
    "StaleAlterPartitionRejoin": stale_alter_partition_rejoin,
    "UncleanElection": unclean_election,
}
