"""murmur2 / toPositive / keyed partitioning vectors (Kafka's UtilsTest), the KIP-794 sticky
partitioner (BuiltInPartitionerTest scenarios, our code), and the coordinator lookup."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraft.client.partitioner import (
    StickyPartitioner,
    build_load_stats,
    java_abs,
    murmur2,
    partition,
    partition_for_key,
    to_positive,
)
from kraft.groups.coordinator_lookup import coordinator_partition
from tests import examples

# org.apache.kafka.common.utils.UtilsTest#testMurmur2
MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("data,expected", MURMUR2.items())
def test_murmur2_kafka_vectors(data, expected):
    assert murmur2(data) == expected


def test_murmur2_covers_every_tail_length_and_is_signed_32_bit():
    values = [murmur2(b"x" * n) for n in range(0, 9)]
    assert len(set(values)) == len(values)
    assert all(-(2**31) <= v < 2**31 for v in values)
    assert any(v < 0 for v in MURMUR2.values())


def test_to_positive_and_abs_differ_on_min_value():
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert java_abs(-(2**31)) == 0          # Utils.abs
    assert java_abs(-5) == 5 and to_positive(-5) == 2**31 - 5


def test_partition_for_key_vectors():
    for key, h in MURMUR2.items():
        assert partition_for_key(key, 7) == (h & 0x7FFFFFFF) % 7
    assert partition_for_key(b"foobar", 1) == 0
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)
    with pytest.raises(TypeError):
        murmur2("not bytes")  # type: ignore[arg-type]


@examples.PURE()
@given(st.binary(max_size=64), st.integers(1, 10_000))
def test_partition_for_key_is_in_range_and_stable(key, n):
    p = partition_for_key(key, n)
    assert 0 <= p < n and p == partition_for_key(key, n)


def seq():
    counter = itertools.count()
    return lambda: next(counter)


def test_sticky_switches_after_batch_size_bytes():
    """BuiltInPartitionerTest#testStickyPartitioning (sticky batch size 3, sequential random)."""
    sp = StickyPartitioner(batch_size=3, random_int=seq())
    avail = [0, 1, 2]
    first = sp.choose(avail, 3)
    for _ in range(3):
        assert sp.choose(avail, 3) == first
        sp.on_append(1, avail, 3)
    assert sp.choose(avail, 3) != first
    one = StickyPartitioner(batch_size=1, random_int=seq())
    for _ in range(10):  # a single partition keeps being chosen
        assert one.choose([0], 1) == 0
        one.on_append(1, [0], 1)


def test_sticky_uses_only_available_partitions_unless_none_is():
    """BuiltInPartitionerTest#unavailablePartitionsTest, with a seeded generator."""
    sp = StickyPartitioner(batch_size=1, seed=7)
    seen = set()
    for _ in range(100):
        p = sp.choose([0, 2], 3)
        assert p != 1
        seen.add(p)
        sp.on_append(1, [0, 2], 3)
    assert seen == {0, 2}
    only = StickyPartitioner(batch_size=1, seed=7)
    assert {only.choose([1], 2) for _ in range(3)} == {1}
    none = StickyPartitioner(batch_size=1, seed=7)
    assert none.choose([], 1) == 0   # no partition available: pick among all


def test_adaptive_frequencies_are_reciprocal_to_queue_sizes():
    """BuiltInPartitionerTest#adaptivePartitionsTest: queue sizes {5,0,3,0,1} -> weights 6 - size."""
    sp = StickyPartitioner(batch_size=1, random_int=seq())
    queue = [5, 0, 3, 0, 1]
    sp.update_load_stats(queue, list(range(5)))
    assert sp.load_stats.cumulative_frequency_table == (1, 7, 10, 16, 21)
    counts = [0] * 5
    for _ in range(21 * 2):
        counts[sp.choose(range(5), 5)] += 1
        sp.on_append(1, list(range(5)), 5)
    assert counts == [(6 - q) * 2 for q in queue]


def test_load_stats_none_when_uniform_or_tiny():
    assert build_load_stats([3, 3, 3], [0, 1, 2]) is None
    assert build_load_stats([4], [0]) is None
    assert build_load_stats([3, 3, 3], [0, 1, 2], length=2) is not None  # some excluded: still adaptive


def test_switch_disabled_until_twice_the_batch_size():
    sp = StickyPartitioner(batch_size=10, random_int=seq())
    p = sp.choose([0, 1], 2)
    sp.on_append(15, [0, 1], 2, enable_switch=False)
    assert sp.choose([0, 1], 2) == p
    sp.on_append(5, [0, 1], 2, enable_switch=False)
    assert sp.choose([0, 1], 2) != p


def test_seeded_partitioner_is_deterministic_and_uniform():
    def run(seed):
        sp = StickyPartitioner(batch_size=100, seed=seed)
        out = []
        for _ in range(4000):
            out.append(partition(None, 8, sp))
            sp.on_append(10, list(range(8)), 8)
        return out

    a = run(42)
    assert a == run(42) and a != run(43)
    counts = [a.count(i) for i in range(8)]
    assert min(counts) > 0.5 * 500 and max(counts) < 1.5 * 500   # 4000 records, 400 switches
    with pytest.raises(ValueError):
        StickyPartitioner(batch_size=0)


def test_keyed_records_ignore_the_sticky_partition():
    sp = StickyPartitioner(seed=1)
    assert partition(b"foobar", 10, sp) == partition_for_key(b"foobar", 10)


# ---- coordinator lookup (GroupMetadataManager.partitionFor) -------------------------------

def test_coordinator_partition_known_values():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0, where
    # Math.abs would stay negative and give a negative partition
    assert coordinator_partition("polygenelubricants") == 0
    assert coordinator_partition("") == 0
    # String.hashCode("hello") = 99162322; 99162322 % 50 = 22
    assert coordinator_partition("hello") == 22
    # a supplementary character hashes as two UTF-16 units: 0xD83D * 31 + 0xDE00 = 1772899
    assert coordinator_partition("\U0001F600", 1_000_000) == 772899
    assert coordinator_partition("hello", 1) == 0


@examples.PURE()
@given(st.text(max_size=30), st.integers(1, 500))
def test_coordinator_partition_in_range(group, n):
    assert 0 <= coordinator_partition(group, n) < n


def test_coordinator_partition_rejects_bad_input():
    with pytest.raises(ValueError):
        coordinator_partition("g", 0)
    with pytest.raises(TypeError):
        coordinator_partition(b"g")  # type: ignore[arg-type]
