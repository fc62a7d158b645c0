"""Partition-replication messages (contract section 9).

Field names are the spec's message-record fields without the leading ``m``
(``mcurrentLeaderEpoch`` <-> ``currentLeaderEpoch``); ``to_spec()`` gives the record as
``spec/PartitionReplication.tla`` writes it.  The controller's node id is ``CONTROLLER`` (0);
brokers are 1..N.  Broker heartbeats and registrations are real messages of the implementation
with no spec counterpart (the spec folds them into its actions), so ``SPEC_MESSAGES`` lists the
ones the spec's ``messages`` variable holds.  Every message between brokers and controllers is
here, so both sides import this module and not each other.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

CONTROLLER = 0
NO_LEADER = -1  # Kafka's LeaderAndIsr.NO_LEADER

# Errors (org.apache.kafka.common.protocol.Errors names)
NONE = "NONE"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
NOT_CONTROLLER = "NOT_CONTROLLER"
INVALID_REQUEST = "INVALID_REQUEST"
INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
INELIGIBLE_REPLICA = "INELIGIBLE_REPLICA"
NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
NOT_ENOUGH_REPLICAS_AFTER_APPEND = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"

RECOVERED = "RECOVERED"
RECOVERING = "RECOVERING"


@attrs.frozen
class Entry:
    """One log entry ``[epoch |-> e, value |-> v]`` (a one-record batch on disk)."""

    epoch: int
    value: int

    def to_spec(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "value": self.value}


@attrs.frozen
class FetchRequest:
    source: int
    dest: int
    currentLeaderEpoch: int
    fetchOffset: int
    lastFetchedEpoch: int
    brokerEpoch: int
    mtype = "FetchRequest"


@attrs.frozen
class FetchResponse:
    source: int
    dest: int
    error: str
    currentLeaderEpoch: int
    fetchOffset: int
    entries: tuple[Entry, ...]
    highWatermark: int
    divergingEpoch: int = -1
    divergingEndOffset: int = -1
    mtype = "FetchResponse"


@attrs.frozen
class IsrMember:
    """``[broker |-> b, brokerEpoch |-> e]`` of AlterPartition's ``newIsrWithEpochs`` (KIP-903)."""

    broker: int
    brokerEpoch: int


@attrs.frozen
class AlterPartitionRequest:
    source: int
    brokerEpoch: int
    leaderEpoch: int
    partitionEpoch: int
    newIsrWithEpochs: frozenset[IsrMember]
    leaderRecoveryState: str = RECOVERED
    dest: int = CONTROLLER
    mtype = "AlterPartitionRequest"


@attrs.frozen
class AlterPartitionResponse:
    dest: int
    error: str
    leader: int = -1
    leaderEpoch: int = -1
    partitionEpoch: int = -1
    isr: frozenset[int] = frozenset()
    leaderRecoveryState: str = RECOVERED
    # the proposal answered (Kafka ties the answer to its request: the callback of
    # Partition.submitAlterPartition compares the proposed state with the pending one)
    requestIsr: frozenset[int] = frozenset()
    requestPartitionEpoch: int = -1
    source: int = CONTROLLER
    mtype = "AlterPartitionResponse"


@attrs.frozen
class BrokerHeartbeatRequest:
    """Not a spec message (BrokerHeartbeatRequest): liveness, metadata offset, controlled shutdown."""

    source: int
    brokerEpoch: int
    currentMetadataOffset: int
    wantShutDown: bool = False
    dest: int = CONTROLLER
    mtype = "BrokerHeartbeatRequest"


@attrs.frozen
class BrokerRegistrationRequest:
    """BrokerRegistrationRequest (not a spec message: the spec's RestartBroker registers at once).
    ``previousBrokerEpoch`` is the epoch stored in the clean-shutdown marker, -1 after an unclean
    shutdown or a disk loss (KIP-966: that is how the controller learns of it)."""

    source: int
    previousBrokerEpoch: int
    dest: int = CONTROLLER
    # one id per start of the broker process: a retried registration of the same start is not
    # registered twice (ClusterControlManager.registerBroker compares incarnation ids)
    incarnationId: int = 0
    mtype = "BrokerRegistrationRequest"


# the spec's AlterPartition records have no destination / source (there is one controller)
_NOT_IN_SPEC: dict[type, tuple[str, ...]] = {AlterPartitionRequest: ("dest",), AlterPartitionResponse: ("source",)}

SPEC_MESSAGES = (FetchRequest, FetchResponse, AlterPartitionRequest, AlterPartitionResponse)


def to_spec(m: Any, spec_epoch: Callable[[int], int] | None = None) -> dict[str, Any]:
    """The spec's message record for ``m``; ``spec_epoch`` maps its broker epochs (log offsets)
    to the spec's numbering (default: they are the same)."""
    out: dict[str, Any] = {"mtype": m.mtype}
    skip = _NOT_IN_SPEC.get(type(m), ())
    epoch = spec_epoch or (lambda e: e)
    for f in attrs.fields(type(m)):
        if f.name in skip:
            continue
        v = getattr(m, f.name)
        if f.name == "entries":
            v = [e.to_spec() for e in v]
        elif f.name == "brokerEpoch":
            v = epoch(v)
        elif f.name == "newIsrWithEpochs":
            v = sorted(({"broker": x.broker, "brokerEpoch": epoch(x.brokerEpoch)} for x in v),
                       key=lambda d: (d["broker"], d["brokerEpoch"]))
        elif isinstance(v, frozenset):
            v = sorted(v)
        out["m" + f.name] = v
    return out
