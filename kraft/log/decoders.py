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

import struct

from .dump import Skipped
from .records import Record, RecordBatch

from .metadata import decode_metadata, dumps_kafka_json, to_kafka_json
from .offsets import RECORD_TYPES, decode_offsets_record

__all__ = ["cluster_metadata_parser", "offsets_parser"]


def cluster_metadata_parser(batch: RecordBatch, rec: Record) -> tuple[str | None, str | None]:
    offset = batch.base_offset + rec.offset_delta
    try:
        if rec.value is None:
            raise ValueError("the record has no value")
        return None, dumps_kafka_json(to_kafka_json(decode_metadata(rec.value)))
    except ValueError as exc:
        return None, Skipped(f"Error at {offset}, skipping. {exc}")


def offsets_parser(batch: RecordBatch, rec: Record) -> tuple[str | None, str | None]:
    offset = batch.base_offset + rec.offset_delta
    if rec.key is None:
        return Skipped(f"Error at offset {offset}, skipping. the record has no key"), None
    if len(rec.key) >= 2:
        (kind,) = struct.unpack_from(">h", rec.key)
        if kind not in RECORD_TYPES:
            return Skipped(f"Unknown record type {kind} at offset {offset}, skipping."), None
    try:
        key, value = decode_offsets_record(rec.key, rec.value)
    except ValueError as exc:
        return Skipped(f"Error at offset {offset}, skipping. {exc}"), None
    return dumps_kafka_json(key), value if isinstance(value, str) else dumps_kafka_json(value)
