"""The record parsers of ``kraft dump-log``'s decoder options, printing what Kafka's parsers in
``DumpLogSegments`` print:

- ``--cluster-metadata-decoder`` (``ClusterMetadataLogMessageParser``): no key; the value is
  ``{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{...}}``, or
  ``Error at OFFSET, skipping. WHY`` when it does not decode.
- ``--offsets-decoder`` (``OffsetsMessageParser`` over ``GroupCoordinatorRecordSerde``): the key
  is a record type int16 then the key message of that version, printed as
  ``{"type":"T","data":{...}}``; the value a version int16 then the value message, printed as
  ``{"version":"V","data":{...}}``, or ``<DELETE>`` for a tombstone. An unknown record type prints
  ``Unknown record type T at offset O, skipping.``; any other failure
  ``Error at offset O, skipping. WHY``.

Both decode through the schema table (``kraft.log.metadata``, ``kraft.log.codec``).
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

from .records import Record, RecordBatch

try:
    from .codec import decode as decode_message
    from .metadata import decode_metadata, to_kafka_json
except ImportError:  # the schema table is optional for every other use of dump-log
    decode_message = decode_metadata = to_kafka_json = None  # type: ignore[assignment]

__all__ = ["cluster_metadata_parser", "offsets_parser", "SCHEMA_AVAILABLE"]

SCHEMA_AVAILABLE = decode_message is not None

# GroupCoordinatorRecordSerde.apiMessageKeyFor / apiMessageValueFor: record type -> message stem
GROUP_RECORD_TYPES = {
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


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _jsonable(v: Any) -> Any:
    """Kafka's JSON converters print bytes fields as base64 (Jackson's BinaryNode)."""
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    return v


def _require_schema() -> None:
    if not SCHEMA_AVAILABLE:
        raise RuntimeError("the schema table (kraft.log.codec, kraft.log.metadata) is not installed")


def cluster_metadata_parser(batch: RecordBatch, rec: Record) -> tuple[str | None, str | None]:
    offset = batch.base_offset + rec.offset_delta
    try:
        _require_schema()
        if rec.value is None:
            raise ValueError("the record has no value")
        return None, _compact(to_kafka_json(decode_metadata(rec.value)))
    except (ValueError, RuntimeError) as exc:
        return None, f"Error at {offset}, skipping. {exc}"


def _versioned(data: bytes, what: str) -> tuple[int, bytes]:
    if len(data) < 2:
        raise ValueError(f"the {what} is {len(data)} byte(s), shorter than its int16 version")
    return struct.unpack(">h", data[:2])[0], data[2:]


def offsets_parser(batch: RecordBatch, rec: Record) -> tuple[str | None, str | None]:
    offset = batch.base_offset + rec.offset_delta
    if rec.key is None:
        return f"Error at offset {offset}, skipping. the record has no key", None
    try:
        kind, body = _versioned(rec.key, "key")
        stem = GROUP_RECORD_TYPES.get(kind)
        if stem is None:
            return f"Unknown record type {kind} at offset {offset}, skipping.", None
        _require_schema()
        key_fields, _ = decode_message(stem + "Key", kind, body)
        key = _compact({"type": str(kind), "data": _jsonable(key_fields)})
        if rec.value is None:
            return key, "<DELETE>"
        version, vbody = _versioned(rec.value, "value")
        value_fields, _ = decode_message(stem + "Value", version, vbody)
        return key, _compact({"version": str(version), "data": _jsonable(value_fields)})
    except (ValueError, KeyError, RuntimeError) as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
