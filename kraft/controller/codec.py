"""Serialising metadata records for ``__cluster_metadata`` on the KRaft quorum.

Each record becomes one Kafka record value: compact JSON in the shape ``kafka-dump-log.sh
--cluster-metadata-decoder`` prints (Kafka: ``MetadataRecordSerde`` + the generated
``*RecordJsonConverter``): ``{"type": "PARTITION_CHANGE_RECORD", "version": 0, "data": {...}}``,
with Kafka's record type names (``MetadataRecordType``) and field names.  A ``PartitionChangeRecord``
omits the fields it does not change (Kafka's tagged fields left at their defaults).  One controller
operation's records are appended atomically (``QuorumController`` appends a ``ControllerResult``
with ``RaftClient.scheduleAtomicAppend``): one record batch, one record and one offset per
metadata record (``kraft.quorum.storage``).
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from kraft.controller.records import (
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)

# MetadataRecordType names (metadata/src/main/resources/common/metadata/*.json "apiKey" order)
TYPE_NAMES: dict[type, str] = {
    RegisterBrokerRecord: "REGISTER_BROKER_RECORD",
    TopicRecord: "TOPIC_RECORD",
    PartitionRecord: "PARTITION_RECORD",
    FenceBrokerRecord: "FENCE_BROKER_RECORD",
    UnfenceBrokerRecord: "UNFENCE_BROKER_RECORD",
    PartitionChangeRecord: "PARTITION_CHANGE_RECORD",
    BrokerRegistrationChangeRecord: "BROKER_REGISTRATION_CHANGE_RECORD",
}
_BY_NAME = {v: k for k, v in TYPE_NAMES.items()}
# fields holding sets (Kafka: int32 arrays, written in ascending order)
_SETS = {"isr", "eligibleLeaderReplicas", "lastKnownElr"}


class MetadataDecodeError(ValueError):
    """A record text that is not one of the metadata records we write."""


def encode(record: Any) -> bytes:
    """One metadata record as a record value."""
    name = TYPE_NAMES.get(type(record))
    if name is None:
        raise TypeError(f"not a metadata record: {record!r}")
    data: dict[str, Any] = {}
    for f in attrs.fields(type(record)):
        v = getattr(record, f.name)
        if v is None:
            continue  # a PartitionChangeRecord field left unchanged
        if isinstance(v, (frozenset, set)):
            v = sorted(v)
        elif isinstance(v, tuple):
            v = list(v)
        data[f.name] = v
    doc = {"type": name, "version": 0, "data": data}
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def decode(value: bytes) -> Any:
    """The record a record value holds; ``MetadataDecodeError`` names what is wrong."""
    try:
        doc = json.loads(value)
        cls = _BY_NAME[doc["type"]]
        data = dict(doc["data"])
    except (ValueError, KeyError, TypeError) as exc:
        raise MetadataDecodeError(f"not a metadata record: {value[:80]!r} ({exc!r})") from exc
    for k, v in list(data.items()):
        if k in _SETS:
            data[k] = frozenset(v)
        elif k == "replicas":
            data[k] = tuple(v)
    try:
        return cls(**data)
    except TypeError as exc:
        raise MetadataDecodeError(f"{doc['type']}: {exc}") from exc


def encode_batch(records: list[Any]) -> tuple[bytes, ...]:
    """One operation's records: the values of one batch, in order."""
    return tuple(encode(r) for r in records)


def decode_batch(values: Any) -> list[Any]:
    """The records of one batch's values."""
    return [decode(v) for v in values]
