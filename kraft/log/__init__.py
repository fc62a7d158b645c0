"""kraft.log: Kafka record batches (format v2, CRC-32C), segment files, recovery, dump tool.

Public API (docs/contracts.md section 3)::

    from kraft.log import Record, RecordBatch, ControlType, Log, MemoryFS, OsFS, RecoveryReport, CorruptBatchError
    from kraft.log.snapshot import SnapshotId, write_snapshot, read_snapshot
"""

from .fs import FileSystem, MemoryFS, OsFS, write_atomically
from .index import CorruptIndexError
from .log import DEFAULT_SEGMENT_BYTES, IndexRebuild, Log, RecoveryReport, segment_name
from .records import (
    ControlType,
    CorruptBatchError,
    Record,
    RecordBatch,
    TruncatedBatchError,
    UnsupportedBatchError,
    control_batch,
    crc32c,
    decode_control,
    decode_leader_change,
    encode_leader_change,
    leader_change_batch,
)

__all__ = [
    "ControlType",
    "CorruptBatchError",
    "CorruptIndexError",
    "DEFAULT_SEGMENT_BYTES",
    "FileSystem",
    "IndexRebuild",
    "Log",
    "MemoryFS",
    "OsFS",
    "Record",
    "RecordBatch",
    "RecoveryReport",
    "TruncatedBatchError",
    "UnsupportedBatchError",
    "control_batch",
    "crc32c",
    "decode_control",
    "decode_leader_change",
    "encode_leader_change",
    "leader_change_batch",
    "segment_name",
    "write_atomically",
]
