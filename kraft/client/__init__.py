"""Client-side functions that must match Kafka bit for bit: the producer's partitioner
(murmur2, KIP-794 sticky partitioning) and the Java semantics Kafka's results depend on.
See docs/assignors.md."""

from .java import JavaHashOrder, java_hashmap_order, java_str_key, string_hash, to_int32, topic_partition_hash
from .partitioner import (
    StickyPartitioner,
    build_load_stats,
    java_abs,
    murmur2,
    partition,
    partition_for_key,
    to_positive,
)

__all__ = [
    "JavaHashOrder",
    "StickyPartitioner",
    "build_load_stats",
    "java_abs",
    "java_hashmap_order",
    "java_str_key",
    "murmur2",
    "partition",
    "partition_for_key",
    "string_hash",
    "to_int32",
    "to_positive",
    "topic_partition_hash",
]
