"""``__consumer_offsets`` records: keys and values through the schema table.

Framing (``CoordinatorRecordSerde`` in coordinator-common, ``MessageUtil.toVersionPrefixedBytes``):
key = int16 record type + the key message read at that version; value = int16 value version +
the value message, or no value at all for a tombstone. The record type selects both schemas
(``GroupCoordinatorRecordSerde.apiMessageKeyFor``/``apiMessageValueFor``): 0 and 1
``OffsetCommit``, 2 ``GroupMetadata``, 3..8 the consumer-group records, 9..15 the share-group
records.

:func:`decode_offsets_record` gives what ``kafka-dump-log --offsets-decoder`` prints
(``OffsetsMessageParser`` in ``core/src/main/scala/kafka/tools/DumpLogSegments.scala``): the key as
``{"type": "<record type>", "data": {...}}``, the value as ``{"version": "<version>", "data":
{...}}`` or ``"<DELETE>"`` for a tombstone; a ``GroupMetadataValue`` of protocol type
``consumer`` has each member's subscription and assignment bytes replaced by the decoded
``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment`` when they decode (they are left as
bytes otherwise, as Kafka does).
"""

from __future__ import annotations

import struct
from typing import Any

from .codec import EncodeError, SchemaError, _Reader, decode, encode
from .jsonform import json_data
from .schema import message

__all__ = ["RECORD_TYPES", "decode_offsets_key", "decode_offsets_record", "decode_offsets_value", "encode_offsets_record"]

RECORD_TYPES = {
    0: "OffsetCommit",
    1: "OffsetCommit",
    2: "GroupMetadata",
    3: "ConsumerGroupMetadata",
    4: "ConsumerGroupPartitionMetadata",
    5: "ConsumerGroupMemberMetadata",
    6: "ConsumerGroupTargetAssignmentMetadata",
    7: "ConsumerGroupTargetAssignmentMember",
    8: "ConsumerGroupCurrentMemberAssignment",
    9: "ShareGroupPartitionMetadata",
    10: "ShareGroupMemberMetadata",
    11: "ShareGroupMetadata",
    12: "ShareGroupTargetAssignmentMetadata",
    13: "ShareGroupTargetAssignmentMember",
    14: "ShareGroupCurrentMemberAssignment",
    15: "ShareGroupStatePartitionMetadata",
}
_INT16 = struct.Struct(">h")


def _record_type(t: int, r: _Reader) -> str:
    try:
        return RECORD_TYPES[t]
    except KeyError:
        raise r.fail(f"unknown __consumer_offsets record type {t}", 0) from None


def _message_at(data: bytes, base: int, schema_of: Any, what: str) -> tuple[str, int, dict[str, Any]]:
    r = _Reader(data, 0, len(data), base)
    version = r.fixed("int16", f"{what} version")
    name = schema_of(version, r)
    fields, end = decode(name, version, data, r.pos, base)
    if end != len(data):
        raise SchemaError(base + end, f"{len(data) - end} byte(s) left after {name}")
    return name, version, fields


def decode_offsets_key(key: bytes, base: int = 0) -> tuple[int, str, dict[str, Any]]:
    """``(record type, key schema name, fields)``; the key is read at its record type."""
    name, version, fields = _message_at(key, base, lambda v, r: _record_type(v, r) + "Key", "key")
    return version, name, fields


def decode_offsets_value(record_type: int, value: bytes, base: int = 0) -> tuple[int, str, dict[str, Any]]:
    """``(value version, value schema name, fields)`` for a key of ``record_type``."""
    r = _Reader(value, 0, len(value), base)
    name = _record_type(record_type, r) + "Value"
    _, version, fields = _message_at(value, base, lambda v, r: name, "value")
    return version, name, fields


def encode_offsets_record(record_type: int, key: dict[str, Any], value: dict[str, Any] | None, value_version: int | None = None) -> tuple[bytes, bytes | None]:
    """Key and value bytes (None: a tombstone) of a record of ``record_type``."""
    if record_type not in RECORD_TYPES:
        raise EncodeError(f"unknown __consumer_offsets record type {record_type}")
    base = RECORD_TYPES[record_type]
    key_bytes = _INT16.pack(record_type) + encode(base + "Key", key, record_type)
    if value is None:
        return key_bytes, None
    vm = message(base + "Value")
    version = vm.max_version if value_version is None else value_version
    return key_bytes, _INT16.pack(version) + encode(vm.name, value, version)


def _embedded(name: str, raw: bytes) -> dict[str, Any] | None:
    """A version-prefixed consumer protocol message as JSON, or None if it does not decode."""
    r = _Reader(raw, 0, len(raw), 0)
    try:
        version = r.fixed("int16", "version")
        fields, _ = decode(name, version, raw, r.pos)
    except SchemaError:
        return None
    return json_data(message(name).struct, fields, version)


def _group_metadata_json(fields: dict[str, Any], version: int) -> dict[str, Any]:
    out = json_data(message("GroupMetadataValue").struct, fields, version)
    if out.get("protocolType") != "consumer":
        return out
    for member, raw in zip(out.get("members") or [], fields.get("members") or []):
        for key, name in (("subscription", "ConsumerProtocolSubscription"), ("assignment", "ConsumerProtocolAssignment")):
            decoded = _embedded(name, raw[key]) if raw.get(key) is not None else None
            if decoded is not None:
                member[key] = decoded
    return out


def decode_offsets_record(key: bytes | None, value: bytes | None, key_base: int = 0, value_base: int = 0) -> tuple[dict[str, Any], dict[str, Any] | str]:
    """The key and the value as kafka-dump-log ``--offsets-decoder`` prints them (as dicts; the
    value is ``"<DELETE>"`` for a tombstone). Errors are :class:`SchemaError`."""
    if key is None:
        raise SchemaError(key_base, "__consumer_offsets record without a key")
    record_type, key_name, key_fields = decode_offsets_key(key, key_base)
    key_json = {"type": str(record_type), "data": json_data(message(key_name).struct, key_fields, record_type)}
    if value is None:
        return key_json, "<DELETE>"
    version, name, fields = decode_offsets_value(record_type, value, value_base)
    if name == "GroupMetadataValue":
        data = _group_metadata_json(fields, version)
    else:
        data = json_data(message(name).struct, fields, version)
    return key_json, {"version": str(version), "data": data}
