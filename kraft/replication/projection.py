"""Projections of the implementation onto the spec's variables (contract section 9).

A projection reads a ``View``: the controller, the brokers, the messages in flight and the client
ghost (``kraft.replication.invariants.Ghost``: ``nextValue``, ``pendingProduce`` comes from the
brokers' purgatories, ``acked``, ``exposed``, ``uncleanBrokers``).  Values are the spec's: sets are
frozensets, functions of a broker are dicts keyed by broker id, logs are tuples of
``{"epoch", "value"}`` dicts (hashable ``Entry`` values with ``tuple_logs=True``).
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from kraft.replication.invariants import entries
from kraft.replication.messages import SPEC_MESSAGES, to_spec


def _same(epoch: int) -> int:
    return epoch


@attrs.define
class View:
    """``spec_epoch`` maps a broker epoch (a log offset) to the spec's numbering."""

    controller: Any
    brokers: dict[int, Any]
    messages: list[Any] = attrs.field(factory=list)
    ghost: Any = None
    spec_epoch: Callable[[int], int] = _same


def _per_broker(fn: Callable[[Any], Any]) -> Callable[[View], dict[int, Any]]:
    def project(v: View) -> dict[int, Any]:
        return {b: fn(br) for b, br in sorted(v.brokers.items())}
    return project


def _partition(field: str) -> Callable[[View], Any]:
    def project(v: View) -> Any:
        return v.controller.partition.to_spec()[field]
    return project


def metadata_log(v: View) -> list[dict[str, Any]]:
    return list(v.controller.spec_log)


def broker_epoch(v: View) -> dict[int, int]:
    return {b: v.spec_epoch(v.controller.image.broker_epoch(b)) for b in v.controller.brokers}


def follower_broker_epoch(v: View) -> dict[int, dict[int, int]]:
    return {b: {f: v.spec_epoch(e) for f, e in br.follower_broker_epoch.items()}
            for b, br in sorted(v.brokers.items())}


def broker_state(v: View) -> dict[int, str]:
    return {b: v.controller.image.broker_state(b) for b in v.controller.brokers}


def messages(v: View) -> list[dict[str, Any]]:
    return [to_spec(m, v.spec_epoch) for m in v.messages if isinstance(m, SPEC_MESSAGES)]


def exposed(v: View) -> frozenset[Any]:
    """The spec's ``exposed`` after the step: what the ghost saw readable so far, and what every
    acting leader's HW makes readable now (the spec's Expose is part of the step; the ghost
    catches up only when the driver next observes, after the step was recorded)."""
    now = set(v.ghost.exposed)
    for b, br in v.brokers.items():
        if br.running and br.local_leader == b:
            now |= entries(tuple(br.entries), br.high_watermark)
    return frozenset(now)


def pending_produce(v: View) -> set[tuple[int, int, int, int]]:
    """``[value, offset, leader, leaderEpoch]`` of every waiting acks=all produce (as tuples)."""
    return {(p.value, p.offset, b, p.leaderEpoch) for b, br in v.brokers.items() if br.running
            for p in br.pending_produce}


PER_BROKER: dict[str, Callable[[View], Any]] = {
    "running": _per_broker(lambda br: br.running),
    "cleanShutdown": _per_broker(lambda br: br.clean_shutdown),
    "replayedOffset": _per_broker(lambda br: br.replayed_offset),
    "log": _per_broker(lambda br: tuple(br.entries)),
    "highWatermark": _per_broker(lambda br: br.high_watermark),
    "localLeader": _per_broker(lambda br: br.local_leader),
    "localLeaderEpoch": _per_broker(lambda br: br.local_leader_epoch),
    "localPartitionEpoch": _per_broker(lambda br: br.local_partition_epoch),
    "localIsr": _per_broker(lambda br: br.local_isr),
    "alterPartitionInFlight": _per_broker(lambda br: br.alter_partition_in_flight),
    "pendingIsr": _per_broker(lambda br: br.pending_isr),
    "leaderEpochStartOffset": _per_broker(lambda br: br.leader_epoch_start_offset),
    "followerEndOffset": _per_broker(lambda br: dict(br.follower_end_offset)),
    "followerBrokerEpoch": follower_broker_epoch,
}

CONTROLLER: dict[str, Callable[[View], Any]] = {
    "metadataLog": metadata_log,
    "leader": _partition("leader"),
    "leaderEpoch": _partition("leaderEpoch"),
    "partitionEpoch": _partition("partitionEpoch"),
    "isr": lambda v: v.controller.partition.isr,
    "elr": lambda v: v.controller.partition.elr,
    "lastKnownElr": lambda v: v.controller.partition.lastKnownElr,
    "leaderRecoveryState": _partition("leaderRecoveryState"),
    "brokerEpoch": broker_epoch,
    "brokerState": broker_state,
}

GHOST: dict[str, Callable[[View], Any]] = {
    "nextValue": lambda v: v.ghost.next_value,
    "pendingProduce": pending_produce,
    "acked": lambda v: frozenset(v.ghost.acked),
    "exposed": exposed,
    "uncleanBrokers": lambda v: frozenset(v.ghost.unclean_brokers),
}


def project(v: View, *, with_messages: bool = True, with_metadata: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for table in (CONTROLLER, PER_BROKER, GHOST):
        for name, fn in table.items():
            if name == "metadataLog" and not with_metadata:
                continue
            out[name] = fn(v)
    if with_messages:
        out["messages"] = messages(v)
    return out


def to_json_state(state: dict[str, Any]) -> dict[str, Any]:
    """A projected state in trace form (logs as lists of records, acked/exposed as records)."""
    out = dict(state)
    out["log"] = {b: [e.to_spec() for e in l] for b, l in state["log"].items()}
    out["acked"] = sorted(({"offset": o, "epoch": e, "value": v} for o, e, v in state["acked"]),
                          key=lambda d: d["offset"])
    out["exposed"] = sorted(({"offset": o, "epoch": e, "value": v} for o, e, v in state["exposed"]),
                            key=lambda d: (d["offset"], d["epoch"], d["value"]))
    out["pendingProduce"] = sorted(({"value": v, "offset": o, "leader": l, "leaderEpoch": e}
                                    for v, o, l, e in state["pendingProduce"]), key=lambda d: d["value"])
    return out
