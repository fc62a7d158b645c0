"""Control records through the schema table.

Key (``ControlRecordType.recordKey``/``parseTypeId``): version int16 (0; a higher one is read as
0, a negative one is an error), type int16. Values, each read and written at schema version 0
(``ControlRecordUtils.*_CURRENT_VERSION``):

=================  ====  =======================================================
kind               type  value
=================  ====  =======================================================
ABORT, COMMIT      0, 1  ``EndTransactionMarker``: version int16, coordinatorEpoch
                         int32; longer values are accepted (Kafka reads "at least"
                         6 bytes, ``EndTransactionMarker.deserializeValue``)
LEADER_CHANGE      2     ``LeaderChangeMessage``
SNAPSHOT_HEADER    3     ``SnapshotHeaderRecord``
SNAPSHOT_FOOTER    4     ``SnapshotFooterRecord``
KRAFT_VERSION      5     ``KRaftVersionRecord``
KRAFT_VOTERS       6     ``VotersRecord``
=================  ====  =======================================================

Any other type is Kafka's ``UNKNOWN``: :func:`decode_control` returns kind ``"UNKNOWN"`` and
``{"type": <id>}`` without reading the value, as kafka-dump-log prints ``controlType:
UNKNOWN(<id>)``.
"""

from __future__ import annotations

import enum
import struct
from typing import Any

from .codec import EncodeError, SchemaError, decode, encode

__all__ = ["ControlType", "CONTROL_SCHEMAS", "CONTROL_VALUE_VERSION", "control_key", "decode_control", "encode_control"]


class ControlType(enum.IntEnum):
    """Control record types (Kafka's ``ControlRecordType``)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2  # KIP-595
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5  # KIP-853
    KRAFT_VOTERS = 6  # KIP-853


CONTROL_SCHEMAS = {
    ControlType.ABORT: "EndTransactionMarker",
    ControlType.COMMIT: "EndTransactionMarker",
    ControlType.LEADER_CHANGE: "LeaderChangeMessage",
    ControlType.SNAPSHOT_HEADER: "SnapshotHeaderRecord",
    ControlType.SNAPSHOT_FOOTER: "SnapshotFooterRecord",
    ControlType.KRAFT_VERSION: "KRaftVersionRecord",
    ControlType.KRAFT_VOTERS: "VotersRecord",
}
CONTROL_VALUE_VERSION = 0
CONTROL_KEY_VERSION = 0
_KEY = struct.Struct(">hh")


def control_key(kind: ControlType) -> bytes:
    return _KEY.pack(CONTROL_KEY_VERSION, int(kind))


def _kind(kind: ControlType | str | int) -> ControlType:
    try:
        return ControlType[kind] if isinstance(kind, str) else ControlType(kind)
    except (KeyError, ValueError):
        raise EncodeError(f"unknown control record kind {kind!r}") from None


def encode_control(kind: ControlType | str | int, fields: dict[str, Any]) -> tuple[bytes, bytes]:
    """The key and value of a control record of ``kind`` (a :class:`ControlType`, its name or
    its number) with the value's ``fields``."""
    k = _kind(kind)
    return control_key(k), encode(CONTROL_SCHEMAS[k], fields, CONTROL_VALUE_VERSION)


def decode_control(key: bytes | None, value: bytes | None, base: int = 0, key_base: int = 0) -> tuple[str, int, dict[str, Any]]:
    """``(kind name, schema version, fields)`` of a control record. Errors are
    :class:`SchemaError`; positions in the value count from ``base``, in the key from
    ``key_base``."""
    if key is None or len(key) < _KEY.size:
        raise SchemaError(key_base, f"control record key of {0 if key is None else len(key)} byte(s), needs {_KEY.size}")
    key_version, type_id = _KEY.unpack_from(key)
    if key_version < 0:
        raise SchemaError(key_base, f"control record key version {key_version} is negative")
    try:
        kind = ControlType(type_id)
    except ValueError:
        return "UNKNOWN", CONTROL_VALUE_VERSION, {"type": type_id}
    data = value or b""
    fields, end = decode(CONTROL_SCHEMAS[kind], CONTROL_VALUE_VERSION, data, 0, base)
    if kind in (ControlType.ABORT, ControlType.COMMIT):
        if fields["version"] < 0:
            raise SchemaError(base, f"end transaction marker version {fields['version']} is negative")
    elif end != len(data):
        raise SchemaError(base + end, f"{len(data) - end} byte(s) left after {CONTROL_SCHEMAS[kind]}")
    return kind.name, CONTROL_VALUE_VERSION, fields
