"""Configuration of the partition-replication implementation (``kraft.controller`` + ``kraft.replication``).

The bug-variant flags are named exactly like the boolean CONSTANTS of
``spec/PartitionReplication.tla`` (contract section 9); which invariant each breaks is in the
declaration, ``kraft.replication.protocol``.  The default is always the correct protocol.
Timeouts are virtual milliseconds; the Kafka configuration each mirrors is named beside it.
"""

from __future__ import annotations

import attrs

from kraft.log.compression import known_codec
from kraft.replication.protocol import PROTOCOL


def _positive(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value <= 0:
        raise ValueError(f"{attribute.name} must be > 0, got {value}")


@attrs.frozen
class ReplicationConfig:
    # min.insync.replicas (topic config; Kafka's default is 1, a durable setup uses RF-1)
    min_insync_replicas: int = attrs.field(default=2, validator=_positive)
    # replica.lag.time.max.ms (Kafka default 30000; scaled down for the simulator)
    replica_lag_time_max_ms: int = attrs.field(default=600, validator=_positive)
    # broker.session.timeout.ms (Kafka default 9000) and broker.heartbeat.interval.ms (2000)
    broker_session_timeout_ms: int = attrs.field(default=900, validator=_positive)
    broker_heartbeat_interval_ms: int = attrs.field(default=200, validator=_positive)
    # replica.fetch.backoff.ms / the follower's fetch loop interval
    fetch_interval_ms: int = attrs.field(default=30, validator=_positive)
    # log.flush.interval.ms (Kafka default: never, the OS flushes; here the broker flushes on a timer)
    flush_interval_ms: int = attrs.field(default=100, validator=_positive)
    # metadata propagation delay: a broker replays the committed metadata log this often
    metadata_replay_ms: int = attrs.field(default=20, validator=_positive)
    # the producer's compression.type (Kafka default none): the codec of the record batches the
    # brokers write for client data; with the topic's compression.type=producer (Kafka's default)
    # the leader keeps the producer's codec and followers copy the leader's batches
    compression_type: str = attrs.field(default="none", validator=known_codec)
    # (replica.fetch.max.bytes is not modelled: a fetch response carries every entry from the
    # fetch offset to the leader's log end, as the spec's HandleFetchRequest sends them)
    # --- bug variants (spec CONSTANTS, default FALSE) ---
    TruncateToHighWatermark: bool = False
    EpochLookupKip101: bool = False
    Kip320FirstTry: bool = False
    IsrJoinBeforeEpochStart: bool = False
    HwAdvanceUnderMinIsr: bool = False
    LastReplicaStanding: bool = False
    StaleAlterPartitionRejoin: bool = False
    # unclean.leader.election.enable=true
    UncleanElection: bool = False

    @property
    def unclean_leader_election_enable(self) -> bool:
        """Kafka's ``unclean.leader.election.enable`` (the ``UncleanElection`` variant)."""
        return self.UncleanElection

    def with_variant(self, name: str | None) -> "ReplicationConfig":
        """A copy with the named variant switched on (``None``: unchanged)."""
        if name is None:
            return self
        if name not in PROTOCOL.variant_names:
            raise ValueError(f"unknown variant {name!r}; known: {', '.join(PROTOCOL.variant_names)}")
        return attrs.evolve(self, **{name: True})
