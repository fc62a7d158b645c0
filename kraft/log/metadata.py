"""``__cluster_metadata`` records: Kafka's ``MetadataRecordSerde`` framing around the schema table.

A record value is (``AbstractApiMessageSerde.write``/``read`` in server-common): the frame version
(1) as an unsigned varint, the api key as an unsigned varint, the record version as an unsigned
varint, then the message body (:mod:`kraft.log.codec`). Reading refuses frame version 0 and any
other frame version but 1, an unknown api key, a version outside the record's ``validVersions``
and bytes left after the body, each as a :class:`~kraft.log.codec.SchemaError` with its position.

``to_kafka_json`` is what ``kafka-dump-log --cluster-metadata-decoder`` prints for a record
(``ClusterMetadataLogMessageParser`` in ``core/src/main/scala/kafka/tools/DumpLogSegments.scala``):
``{"type": <MetadataRecordType>, "version": <version>, "data": <JsonConverter output>}``.
"""

from __future__ import annotations

from typing import Any

import attrs

from .codec import SchemaError, _Reader, decode, encode, write_uvarint
from .jsonform import dumps_kafka_json, json_data
from .schema import MESSAGES, Message, message

__all__ = [
    "FRAME_VERSION",
    "MetadataRecord",
    "decode_metadata",
    "dumps_kafka_json",
    "encode_metadata",
    "json_data",
    "record_type_name",
    "to_kafka_json",
]

FRAME_VERSION = 1
_BY_API_KEY: dict[int, Message] = {m.api_key: m for m in MESSAGES.values() if m.location == "md" and m.api_key is not None}


def record_type_name(name: str) -> str:
    """``MetadataRecordType``'s constant for a record: ``MessageGenerator.toSnakeCase``
    upper-cased (``PartitionChangeRecord`` -> ``PARTITION_CHANGE_RECORD``)."""
    out = []
    prev_upper = True
    for c in name:
        if c.isupper():
            if not prev_upper:
                out.append("_")
            out.append(c)
            prev_upper = True
        else:
            out.append(c.upper())
            prev_upper = False
    return "".join(out)


def _metadata_message(name: str) -> Message:
    m = message(name)
    if m.location != "md":
        raise KeyError(f"{name} is not a metadata record")
    return m


@attrs.frozen
class MetadataRecord:
    """One metadata record: ``name`` as in Kafka's schema, ``version``, ``fields`` as
    :func:`kraft.log.codec.decode` returns them (JsonConverter keys)."""

    name: str
    version: int
    fields: dict[str, Any] = attrs.field(factory=dict, eq=True, hash=False)

    @property
    def api_key(self) -> int:
        return _metadata_message(self.name).api_key  # type: ignore[return-value]

    @property
    def type_name(self) -> str:
        return record_type_name(self.name)


def encode_metadata(record: MetadataRecord) -> bytes:
    """The record value Kafka's ``MetadataRecordSerde.write`` produces."""
    m = _metadata_message(record.name)
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, m.api_key)  # type: ignore[arg-type]
    write_uvarint(out, record.version)
    out += encode(record.name, record.fields, record.version)
    return bytes(out)


def _frame_short(r: _Reader, what: str) -> int:
    start = r.pos
    v = r.uvarint(what)
    if v > 0x7FFF:
        raise r.fail(f"{what} {v} is too large", start)
    return v


def decode_metadata(value: bytes | bytearray | memoryview, base: int = 0) -> MetadataRecord:
    """Read one record value (``MetadataRecordSerde.read``); errors are :class:`SchemaError`
    with the byte position (``base`` + the offset in ``value``)."""
    r = _Reader(value, 0, len(value), base)
    frame = _frame_short(r, "frame version")
    if frame != FRAME_VERSION:
        raise r.fail(f"frame version {frame}, only {FRAME_VERSION} is supported", 0)
    key_at = r.pos
    api_key = _frame_short(r, "api key")
    m = _BY_API_KEY.get(api_key)
    if m is None:
        raise r.fail(f"unknown metadata record api key {api_key}", key_at)
    version_at = r.pos
    version = _frame_short(r, "record version")
    if version not in m.valid:
        raise r.fail(f"{m.name} version {version} is not a valid version ({m.valid})", version_at)
    fields, end = decode(m.name, version, value, r.pos, base)
    if end != len(value):
        raise SchemaError(base + end, f"{len(value) - end} byte(s) left after {m.name}")
    return MetadataRecord(m.name, version, fields)


def to_kafka_json(record: MetadataRecord) -> dict[str, Any]:
    """The JSON object kafka-dump-log prints for the record (as a dict)."""
    m = _metadata_message(record.name)
    return {"type": record.type_name, "version": record.version, "data": json_data(m.struct, record.fields, record.version)}
