"""The producer's default partitioning, as Kafka does it.

* Keyed records: ``toPositive(murmur2(key)) % numPartitions``
  (``org.apache.kafka.common.utils.Utils.murmur2``/``toPositive``; the producer's
  ``BuiltInPartitioner.partitionForKey``). The hash is over *all* partitions of the topic,
  available or not, so a key's partition never moves while the partition count is unchanged.
* Records without a key: the "uniform sticky" partitioner of KIP-794
  (``BuiltInPartitioner``): stay on one partition until ``batch.size`` bytes were produced to
  it (or twice that when the caller disallows the switch because the batch is not ready), then
  pick the next partition uniformly at random among the *available* partitions (those with a
  leader), or among all partitions if none is available. With load statistics
  (``partitioner.adaptive.partitioning.enable``), the next partition is drawn with weights
  inversely related to queue sizes, through the same cumulative frequency table Kafka builds.

Randomness is an input: :class:`StickyPartitioner` takes a seed (or a ``random_int`` callable,
like Kafka's test hook ``mockRandom``), so a run is reproducible.
"""

from __future__ import annotations

import bisect
import random as _random
from collections.abc import Callable, Sequence

import attrs

from .java import INT_MIN, to_int32

_M = 0x5BD1E995
_SEED = 0x9747B28C


def murmur2(data: bytes) -> int:
    """Kafka's 32-bit murmur2 (seed ``0x9747b28c``), returned as Java's signed ``int``.

    Follows ``Utils.murmur2``: little-endian 4-byte blocks, the tail bytes mixed in by the
    switch fall-through (each masked to an unsigned byte), then the final avalanche with
    *unsigned* shifts (``>>>``).
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"murmur2 needs bytes, got {type(data).__name__}")
    data = bytes(data)
    length = len(data)
    h = (_SEED ^ length) & 0xFFFFFFFF
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * _M) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * _M) & 0xFFFFFFFF
        h = (h * _M) & 0xFFFFFFFF
        h ^= k
    tail = length % 4
    base = length & ~3

    # Kafka masks each tail byte with 0xff; Python bytes are already unsigned.
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h ^= data[base]
        h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 15
    return to_int32(h)


def to_positive(n: int) -> int:
    """``Utils.toPositive``: ``n & 0x7fffffff`` (not ``abs``: ``MIN_VALUE`` maps to 0)."""
    return n & 0x7FFFFFFF


def java_abs(n: int) -> int:
    """``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0."""
    n = to_int32(n)
    return 0 if n == INT_MIN else abs(n)


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """Partition of a keyed record: ``toPositive(murmur2(key)) % num_partitions``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


@attrs.frozen
class PartitionLoadStats:
    """Kafka's cumulative frequency table over the partitions that have a leader."""

    cumulative_frequency_table: tuple[int, ...]
    partition_ids: tuple[int, ...]


def build_load_stats(queue_sizes: Sequence[int], partition_ids: Sequence[int],
                     length: int | None = None) -> PartitionLoadStats | None:
    """``BuiltInPartitioner.updatePartitionLoadStats``: None means "uniform" (no adaptivity).

    ``queue_sizes[i]`` is the number of batches queued for ``partition_ids[i]``; ``length`` the
    number of leading entries still eligible (partitions excluded for latency are cut off).
    """
    if len(queue_sizes) != len(partition_ids):
        raise ValueError("queue_sizes and partition_ids differ in length")
    length = len(queue_sizes) if length is None else length
    if length < 1 or len(queue_sizes) < 2:
        return None
    max_plus_1 = queue_sizes[0]
    all_equal = True
    for i in range(1, length):
        if queue_sizes[i] != max_plus_1:
            all_equal = False
        if queue_sizes[i] > max_plus_1:
            max_plus_1 = queue_sizes[i]
    max_plus_1 += 1
    if all_equal and length == len(queue_sizes):
        return None
    cft = [max_plus_1 - queue_sizes[0]]
    for i in range(1, length):
        cft.append(max_plus_1 - queue_sizes[i] + cft[i - 1])
    return PartitionLoadStats(tuple(cft), tuple(partition_ids[:length]))


class StickyPartitioner:
    """KIP-794 uniform sticky partitioning of records without a key, for one topic.

    ``choose(available, num_partitions)`` returns the current sticky partition (picking one if
    none is chosen yet); ``on_append(nbytes, ...)`` accounts the bytes appended to it and
    switches after ``batch_size`` bytes (``2 * batch_size`` when ``enable_switch`` is False),
    mirroring ``peekCurrentPartitionInfo``/``updatePartitionInfo``.
    """

    def __init__(self, batch_size: int = 16384, *, seed: int | None = 0,
                 random_int: Callable[[], int] | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1 but got {batch_size}")
        self.batch_size = batch_size
        rng = _random.Random(seed)
        # Kafka: Utils.toPositive(ThreadLocalRandom.current().nextInt())
        self._random_int = random_int or (lambda: to_positive(rng.getrandbits(32)))
        self.load_stats: PartitionLoadStats | None = None
        self.current: int | None = None
        self.produced_bytes = 0
        self.switches = 0

    def update_load_stats(self, queue_sizes: Sequence[int] | None, partition_ids: Sequence[int] = (),
                          length: int | None = None) -> None:
        self.load_stats = None if queue_sizes is None else build_load_stats(queue_sizes, partition_ids, length)

    def _next_partition(self, available: Sequence[int], num_partitions: int) -> int:
        r = self._random_int()
        stats = self.load_stats
        if stats is None:
            if available:
                return available[r % len(available)]
            if num_partitions <= 0:
                raise ValueError("topic has no partitions")
            return r % num_partitions
        cft = stats.cumulative_frequency_table
        weighted = r % cft[-1]
        # first index whose value is strictly greater than `weighted`
        return stats.partition_ids[bisect.bisect_right(cft, weighted)]

    def choose(self, available: Sequence[int], num_partitions: int) -> int:
        """The partition the next unkeyed record goes to (``peekCurrentPartitionInfo``)."""
        if self.current is None:
            self.current = self._next_partition(available, num_partitions)
            self.produced_bytes = 0
        return self.current

    def on_append(self, appended_bytes: int, available: Sequence[int], num_partitions: int,
                  enable_switch: bool = True) -> None:
        """``updatePartitionInfo``: count bytes and maybe switch to a new sticky partition."""
        if self.current is None:
            return
        self.produced_bytes += appended_bytes
        if (self.produced_bytes >= self.batch_size and enable_switch) or \
                self.produced_bytes >= 2 * self.batch_size:
            self.current = self._next_partition(available, num_partitions)
            self.produced_bytes = 0
            self.switches += 1


def partition(key: bytes | None, num_partitions: int, sticky: StickyPartitioner,
              available: Sequence[int] | None = None) -> int:
    """The producer's choice for one record: keyed -> murmur2, unkeyed -> sticky."""
    if key is not None:
        return partition_for_key(key, num_partitions)
    avail = list(range(num_partitions)) if available is None else list(available)
    return sticky.choose(avail, num_partitions)
