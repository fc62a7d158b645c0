"""The consumer protocol's configuration: topics, timeouts, the server-side assignor and the
bug-variant flags (named like the spec's CONSTANTS, spec/ConsumerGroupProtocol.tla)."""

from __future__ import annotations

import attrs

from kraft.groups.assignors import TopicPartition


@attrs.frozen
class ProtocolConfig:
    """``topics``: (name, partitions).  Timeouts follow Kafka's names: ``session_timeout_ms``
    (``group.consumer.session.timeout.ms``), ``rebalance_timeout_ms`` (the consumer's
    ``max.poll.interval.ms``), ``heartbeat_interval_ms`` (``group.consumer.heartbeat.interval.ms``),
    ``request_timeout_ms``.  ``listener_ms``: how long each of the rebalance listener's stages
    (revoke, assign) takes on the application thread; heartbeats go on meanwhile.  ``lease_ms``: how long the consumer keeps its partitions after the
    send time of its last acknowledged heartbeat (docs/consumer-protocol.md, "The lease"); it must
    not exceed the session or the rebalance timeout.  ``assignor``: ``uniform`` or ``range``
    (``group.consumer.assignors``).  ``static``: the consumers that set ``group.instance.id`` (each
    its client id): static members."""

    topics: tuple[tuple[str, int], ...] = (("t1", 2), ("t2", 2))
    session_timeout_ms: int = 1_000
    rebalance_timeout_ms: int = 3_000
    heartbeat_interval_ms: int = 300
    request_timeout_ms: int = 500
    lease_ms: int = 900
    listener_ms: int = 0
    assignor: str = "uniform"
    static: tuple[str, ...] = ()
    PartitionEpochLostOnReassign: bool = False
    AcceptAnyOlderEpoch: bool = False
    StaleReconcileAfterRejoin: bool = False
    RevocationAckIgnoredOnNewTarget: bool = False
    CommitWithoutEpochCheck: bool = False
    RejoinEpochZeroRejected: bool = False

    def __attrs_post_init__(self) -> None:
        if self.lease_ms > min(self.session_timeout_ms, self.rebalance_timeout_ms):
            raise ValueError("lease_ms must not exceed the session or the rebalance timeout")
        if self.assignor not in ("uniform", "range"):
            raise ValueError(f"unknown assignor {self.assignor!r}: uniform or range")

    @property
    def topic_names(self) -> tuple[str, ...]:
        return tuple(sorted(t for t, _ in self.topics))

    @property
    def all_partitions(self) -> tuple[TopicPartition, ...]:
        return tuple(TopicPartition(t, p) for t, n in sorted(self.topics) for p in range(n))
