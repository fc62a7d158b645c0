"""Java semantics that Kafka's client-side results depend on, modelled exactly.

Kafka's partitioner, coordinator lookup and assignors are Java code, and a few of their
results depend on Java-specific arithmetic or on the iteration order of ``java.util.HashMap``
and ``HashSet``. To reproduce Kafka's results bit for bit we model:

* 32-bit two's-complement ``int`` arithmetic (:func:`to_int32`);
* ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 *code units*, so a
  character outside the BMP contributes its two surrogates (:func:`string_hash`);
* ``String.compareTo``: lexicographic over UTF-16 code units, which differs from Python's
  code-point order when supplementary characters meet BMP characters above U+E000
  (:func:`java_str_key`);
* ``TopicPartition.hashCode()`` = ``31 * (31 + partition) + topic.hashCode()``
  (org.apache.kafka.common.TopicPartition);
* the iteration order of ``java.util.HashMap`` (and ``HashSet``, which is a HashMap):
  bucket index ``(h ^ (h >>> 16)) & (capacity - 1)``, buckets in index order, entries of one
  bucket in insertion order (a resize splits a bucket preserving relative order); capacity
  starts at 16 (or ``tableSizeFor`` of an explicit initial capacity) and doubles when the size
  exceeds ``0.75 * capacity``; removals never shrink the table (:class:`JavaHashOrder`).
  (``new HashMap<>(n)`` starts at ``tableSizeFor(n)``: pass ``initial_capacity``.)

Limitation, documented in docs/assignors.md: a bucket holding 8 or more colliding keys in a
table of at least 64 buckets is turned into a red-black tree by Java, whose iteration order is
not insertion order. That needs adversarial keys and is not modelled.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

INT_MIN = -(2**31)
INT_MAX = 2**31 - 1

K = TypeVar("K", bound=Hashable)


def to_int32(n: int) -> int:
    """Wrap an integer to Java's signed 32-bit ``int``."""
    n &= 0xFFFFFFFF
    return n - 0x1_0000_0000 if n & 0x8000_0000 else n


def utf16_units(s: str) -> bytes:
    """The UTF-16 code units of a Java string (big-endian pairs of bytes)."""
    return s.encode("utf-16-be", "surrogatepass")


def string_hash(s: str) -> int:
    """Java ``String.hashCode()`` (signed 32-bit)."""
    units = utf16_units(s)
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return to_int32(h)


def java_str_key(s: str) -> bytes:
    """Sort key with the order of Java ``String.compareTo`` (UTF-16 code units)."""
    return utf16_units(s)


def topic_partition_hash(topic: str, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode()``."""
    return to_int32(31 * (31 + partition) + string_hash(topic))


def spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` on the unsigned 32-bit pattern."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= cap (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return n


class JavaHashOrder(Generic[K]):
    """Tracks the iteration order a ``java.util.HashMap``/``HashSet`` would have.

    Only the keys matter: values live elsewhere. ``add`` mirrors ``put`` of a new key
    (a key already present keeps its position), ``discard`` mirrors ``remove``.
    Iteration yields keys in Java's order.
    """

    __slots__ = ("_hash", "_cap", "_seq", "_keys", "_explicit")

    def __init__(self, hash_fn: Callable[[K], int], initial_capacity: int | None = None) -> None:
        self._hash = hash_fn
        self._explicit = initial_capacity is not None
        self._cap = table_size_for(initial_capacity) if initial_capacity else 16
        self._seq = 0
        self._keys: dict[K, tuple[int, int]] = {}  # key -> (spread hash, insertion seq)

    @classmethod
    def of(cls, keys: Iterable[K], hash_fn: Callable[[K], int],
           initial_capacity: int | None = None) -> "JavaHashOrder[K]":
        order = cls(hash_fn, initial_capacity)
        for k in keys:
            order.add(k)
        return order

    def add(self, key: K) -> None:
        if key in self._keys:
            return
        self._keys[key] = (spread(self._hash(key)), self._seq)
        self._seq += 1
        while len(self._keys) > self._cap * 3 // 4:
            self._cap <<= 1

    def discard(self, key: K) -> None:
        self._keys.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    @property
    def capacity(self) -> int:
        return self._cap

    def _sort_key(self, item: tuple[K, tuple[int, int]]) -> tuple[int, int]:
        h, seq = item[1]
        return (h & (self._cap - 1), seq)

    def __iter__(self):
        return iter([k for k, _ in sorted(self._keys.items(), key=self._sort_key)])

    def first(self) -> K:
        """``iterator().next()``."""
        return min(self._keys.items(), key=self._sort_key)[0]


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a default ``HashMap<String, ?>`` filled with ``keys`` in that order."""
    return list(JavaHashOrder.of(keys, string_hash))
