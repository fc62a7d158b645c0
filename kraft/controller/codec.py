"""Metadata records of ``__cluster_metadata`` in Kafka's binary form.

Each record the controller writes becomes one Kafka record value: ``MetadataRecordSerde``'s framing
around the record's schema (``kraft.log.metadata``: ``encode_metadata``/``decode_metadata``, derived
from the schema table).  This module converts between kraft's record classes
(``kraft.controller.records``) and ``MetadataRecord``s with Kafka's field types and the record
versions a controller at metadata.version 4.0-IV3 writes (``MetadataVersion``:
``registerBrokerRecordVersion`` 3, ``partitionRecordVersion`` and ``partitionChangeRecordVersion``
2, the versions that carry ELR; ``BrokerRegistrationChangeRecord`` 1 for a controlled shutdown,
``ReplicationControlManager.handleBrokerInControlledShutdown``, and 0 with ``fenced`` 1 or -1 for a
fencing or an unfencing, ``handleBrokerFenced``/``handleBrokerUnfenced`` once
``isBrokerRegistrationChangeRecordSupported``; a log of an older metadata.version holds
``FenceBrokerRecord``/``UnfenceBrokerRecord`` instead, which read the same).  One controller operation's records
are one record batch, one record and one offset each (``kraft.quorum.storage``).

Field values as Kafka writes them:

* Uuids (``topicId``, ``incarnationId``, ``logDirs``, ``directories``) in ``Uuid.toString`` form; an
  incarnation id ``n`` is the Uuid (0, n); broker ``b``'s one log directory is (b, 1).
* ``RegisterBrokerRecord`` (``ClusterControlManager.registerBroker``): one PLAINTEXT endpoint, the
  ``metadata.version`` feature range a broker supports (``BrokerFeatures.defaultSupportedFeatures``:
  1 to the latest level, 25), ``rack`` null, ``logDirs`` its one directory (required once
  directories are assigned).
* ``PartitionRecord``: ``leaderRecoveryState`` int8 (``LeaderRecoveryState``: RECOVERED 0,
  RECOVERING 1), ``directories`` the replicas' directories (``ClusterControlManager.defaultDir``),
  ELR and last-known ELR written even when empty (``PartitionRegistration.toRecord``).
* ``PartitionChangeRecord``: a field left unchanged keeps its default and is not written (leader
  -2, ISR/ELR null, recovery state -1: ``PartitionChangeBuilder``).
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from kraft.controller.records import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from kraft.log.codec import SchemaError
from kraft.log.metadata import MetadataRecord, decode_metadata, encode_metadata
from kraft.log.schema import uuid_from_str, uuid_to_str

METADATA_VERSION_LEVELS = (1, 25)   # MINIMUM_KRAFT_VERSION (3.0-IV1) .. latestTesting (4.0-IV3)
PORT = 9092
RECOVERY_STATES = {"RECOVERED": 0, "RECOVERING": 1}
_RECOVERY_NAMES = {v: k for k, v in RECOVERY_STATES.items()}
NO_LEADER_CHANGE = -2   # PartitionChangeRecord's default leader: unchanged
FENCE, UNFENCE = 1, -1  # BrokerRegistrationFencingChange values


class MetadataDecodeError(ValueError):
    """A record value that is not one of the metadata records the controller writes."""


def uuid(msb: int, lsb: int) -> str:
    """Kafka's ``new Uuid(msb, lsb).toString()``."""
    return uuid_to_str(struct.pack(">qq", msb, lsb))


def uuid_longs(text: str) -> tuple[int, int]:
    """The (most, least significant) longs of a Uuid string."""
    return struct.unpack(">qq", uuid_from_str(text))


def log_dir(broker: int) -> str:
    return uuid(broker, 1)


def _sorted(s: Any) -> list[int] | None:
    return None if s is None else sorted(s)


def _register(r: RegisterBrokerRecord) -> MetadataRecord:
    return MetadataRecord("RegisterBrokerRecord", 3, {
        "brokerId": r.brokerId, "incarnationId": uuid(0, r.incarnationId), "brokerEpoch": r.brokerEpoch,
        "endPoints": [{"name": "PLAINTEXT", "host": f"broker{r.brokerId}", "port": PORT, "securityProtocol": 0}],
        "features": [{"name": "metadata.version", "minSupportedVersion": METADATA_VERSION_LEVELS[0],
                      "maxSupportedVersion": METADATA_VERSION_LEVELS[1]}],
        "rack": None, "fenced": r.fenced, "logDirs": [log_dir(r.brokerId)]})


def _partition(r: PartitionRecord) -> MetadataRecord:
    return MetadataRecord("PartitionRecord", 2, {
        "partitionId": r.partitionId, "topicId": r.topicId, "replicas": list(r.replicas), "isr": sorted(r.isr),
        "leader": r.leader, "leaderRecoveryState": RECOVERY_STATES[r.leaderRecoveryState],
        "leaderEpoch": r.leaderEpoch, "partitionEpoch": r.partitionEpoch,
        "directories": [log_dir(b) for b in r.replicas],
        "eligibleLeaderReplicas": sorted(r.eligibleLeaderReplicas), "lastKnownElr": sorted(r.lastKnownElr)})


def _change(r: PartitionChangeRecord) -> MetadataRecord:
    fields: dict[str, Any] = {"partitionId": r.partitionId, "topicId": r.topicId}
    changed = {"leader": r.leader, "isr": _sorted(r.isr), "eligibleLeaderReplicas": _sorted(r.eligibleLeaderReplicas),
               "lastKnownElr": _sorted(r.lastKnownElr),
               "leaderRecoveryState": None if r.leaderRecoveryState is None else RECOVERY_STATES[r.leaderRecoveryState]}
    fields.update({k: v for k, v in changed.items() if v is not None})
    return MetadataRecord("PartitionChangeRecord", 2, fields)


_TO: dict[type, Callable[[Any], MetadataRecord]] = {
    TopicRecord: lambda r: MetadataRecord("TopicRecord", 0, {"name": r.name, "topicId": r.topicId}),
    RegisterBrokerRecord: _register,
    PartitionRecord: _partition,
    PartitionChangeRecord: _change,
    FenceBrokerRecord: lambda r: MetadataRecord(
        "BrokerRegistrationChangeRecord", 0, {"brokerId": r.id, "brokerEpoch": r.epoch, "fenced": FENCE}),
    UnfenceBrokerRecord: lambda r: MetadataRecord(
        "BrokerRegistrationChangeRecord", 0, {"brokerId": r.id, "brokerEpoch": r.epoch, "fenced": UNFENCE}),
    BrokerRegistrationChangeRecord: lambda r: MetadataRecord(
        "BrokerRegistrationChangeRecord", 1,
        {"brokerId": r.brokerId, "brokerEpoch": r.brokerEpoch, "inControlledShutdown": r.inControlledShutdown}),
}


def _optional_set(v: list[int] | None) -> frozenset[int] | None:
    return None if v is None else frozenset(v)


def _from_change(f: dict[str, Any]) -> PartitionChangeRecord:
    lrs = f.get("leaderRecoveryState", -1)
    leader = f.get("leader", NO_LEADER_CHANGE)
    return PartitionChangeRecord(
        f["partitionId"], f["topicId"], leader=None if leader == NO_LEADER_CHANGE else leader,
        isr=_optional_set(f.get("isr")), eligibleLeaderReplicas=_optional_set(f.get("eligibleLeaderReplicas")),
        lastKnownElr=_optional_set(f.get("lastKnownElr")), leaderRecoveryState=None if lrs == -1 else _RECOVERY_NAMES[lrs])


def _from_registration_change(f: dict[str, Any]) -> Any:
    """The one change a controller's BrokerRegistrationChangeRecord makes: a fencing, an
    unfencing, or the start of a controlled shutdown."""
    fenced, shutdown = f.get("fenced", 0), f.get("inControlledShutdown", 0)
    if fenced == FENCE and not shutdown:
        return FenceBrokerRecord(f["brokerId"], f["brokerEpoch"])
    if fenced == UNFENCE and not shutdown:
        return UnfenceBrokerRecord(f["brokerId"], f["brokerEpoch"])
    if shutdown == 1 and not fenced:
        return BrokerRegistrationChangeRecord(f["brokerId"], f["brokerEpoch"], shutdown)
    raise ValueError(f"fenced {fenced} with inControlledShutdown {shutdown} is not a change the controller makes")


_FROM: dict[str, Callable[[dict[str, Any]], Any]] = {
    "TopicRecord": lambda f: TopicRecord(f["name"], f["topicId"]),
    "RegisterBrokerRecord": lambda f: RegisterBrokerRecord(f["brokerId"], f["brokerEpoch"], f["fenced"],
                                                           uuid_longs(f["incarnationId"])[1]),
    "PartitionRecord": lambda f: PartitionRecord(
        f["partitionId"], f["topicId"], tuple(f["replicas"]), frozenset(f["isr"]), f["leader"], f["leaderEpoch"],
        f["partitionEpoch"], frozenset(f.get("eligibleLeaderReplicas") or ()), frozenset(f.get("lastKnownElr") or ()),
        _RECOVERY_NAMES[f.get("leaderRecoveryState", 0)]),
    "PartitionChangeRecord": _from_change,
    "FenceBrokerRecord": lambda f: FenceBrokerRecord(f["id"], f["epoch"]),
    "UnfenceBrokerRecord": lambda f: UnfenceBrokerRecord(f["id"], f["epoch"]),
    "BrokerRegistrationChangeRecord": lambda f: _from_registration_change(f),
}

# the records the controller writes, by class (for the round-trip tests)
RECORD_CLASSES = tuple(_TO)


def to_metadata(record: Any) -> MetadataRecord:
    convert = _TO.get(type(record))
    if convert is None:
        raise TypeError(f"not a metadata record: {record!r}")
    return convert(record)


def from_metadata(m: MetadataRecord) -> Any:
    convert = _FROM.get(m.name)
    if convert is None:
        raise MetadataDecodeError(f"a {m.name} (version {m.version}): not one of the records the controller writes")
    try:
        return convert(m.fields)
    except (KeyError, ValueError, struct.error) as exc:
        raise MetadataDecodeError(f"{m.name} version {m.version}: bad field {exc}") from exc


def encode(record: Any) -> bytes:
    """One metadata record as a record value (``MetadataRecordSerde.write``)."""
    return encode_metadata(to_metadata(record))


def decode(value: bytes) -> Any:
    """The record a record value holds; ``MetadataDecodeError`` names what is wrong and where."""
    try:
        m = decode_metadata(value)
    except SchemaError as exc:
        raise MetadataDecodeError(f"not a metadata record: {exc}") from exc
    return from_metadata(m)


def encode_batch(records: list[Any]) -> tuple[bytes, ...]:
    """One operation's records: the values of one batch, in order."""
    return tuple(encode(r) for r in records)


def decode_batch(values: Any) -> list[Any]:
    """The records of one batch's values."""
    return [decode(v) for v in values]
