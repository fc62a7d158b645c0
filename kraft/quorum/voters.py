"""Voter sets and their history in the log (KIP-853), as Kafka's raft module keeps them.

- :class:`ReplicaKey` is ``org.apache.kafka.raft.ReplicaKey``: a replica id and its directory id
  (a Kafka ``Uuid`` in its ``toString`` form; ``ZERO_UUID`` means "none", as ``ReplicaKey.of``
  turns ``Uuid.ZERO_UUID`` into an empty directory id).
- :class:`VoterSet` is ``org.apache.kafka.raft.VoterSet``: voters by id, each a
  :class:`VoterNode` (key, endpoints, supported ``kraft.version`` range), with ``isVoter``,
  ``hasOverlappingMajority``, ``addVoter``/``removeVoter``/``updateVoter`` and the conversion to
  and from a ``VotersRecord`` value (``toVotersRecord``/``fromVotersRecord``).
- :class:`LogHistory` is ``internals.TreeMapLogHistory``: values by log offset, ``addAt`` only
  above the last offset (-1 allowed: the bootstrap checkpoint ``0-0`` holds records "at" -1),
  ``valueAtOrBefore``, ``truncateNewEntries`` (drops offsets >= the new end), and
  ``truncateOldEntries`` (keeps only the last entry at or below the new start).
- :class:`ControlRecordHistory` is ``internals.KRaftControlRecordStateMachine`` together with
  ``internals.VoterSetHistory``: fed by the KRaftVersion (type 5) and Voters (type 6) control
  records as batches are appended (a voter set takes effect on append, not on commit), undone by
  truncation, trimmed below the log start, seeded from the snapshot at the log start (whose
  records all count at its last contained offset, ``end - 1``), and falling back to the static
  voters (``controller.quorum.voters``) and ``kraft.version`` 0 while no record says otherwise.
  ``VoterSetHistory.addAt`` refuses a voter set from the log whose majority does not overlap the
  previous one's.

Where this differs from Kafka: ``truncate_new_entries`` also lowers the next offset to read, so
entries appended again after a truncation are read (Kafka's state machine leaves its
``nextOffset`` and reads again only past it). A ``VotersRecord`` lists its voters by ascending id;
Kafka writes them in ``HashMap`` order, which is ascending for ids below the map's capacity.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from typing import Any, Generic, TypeVar

import attrs

from kraft.log import ControlType, RecordBatch, control_batch, decode_control
from kraft.log.schema import ZERO_UUID, uuid_to_str
from kraft.log.snapshot import Snapshot

__all__ = [
    "ControlRecordHistory",
    "Endpoint",
    "KRAFT_VERSION_0",
    "KRAFT_VERSION_1",
    "LogHistory",
    "ReplicaKey",
    "VoterNode",
    "VoterSet",
    "default_voter_node",
    "kraft_version_batch",
    "voters_batch",
]

KRAFT_VERSION_0 = 0  # static voters (controller.quorum.voters)
KRAFT_VERSION_1 = 1  # KIP-853: voters in the log
CONTROLLER_LISTENER = "CONTROLLER"  # controller.listener.names' first entry (the default listener)
CONTROLLER_PORT = 9093
T = TypeVar("T")


@attrs.frozen(order=True)
class ReplicaKey:
    """A replica: its id and the directory id of its metadata log (``ZERO_UUID``: none)."""

    id: int
    directory_id: str = ZERO_UUID

    @property
    def has_directory_id(self) -> bool:
        return self.directory_id != ZERO_UUID


@attrs.frozen(order=True)
class Endpoint:
    """One listener of a voter: ``VotersRecord.Endpoint`` (name, host, port)."""

    name: str
    host: str
    port: int


@attrs.frozen
class VoterNode:
    """``VoterSet.VoterNode``: the key, the listeners and the supported kraft.version range."""

    key: ReplicaKey
    endpoints: tuple[Endpoint, ...] = ()
    min_kraft_version: int = 0
    max_kraft_version: int = 0

    def is_voter(self, key: ReplicaKey) -> bool:
        """``VoterNode.isVoter``: same id, and same directory id unless this voter has none."""
        if self.key.id != key.id:
            return False
        return not self.key.has_directory_id or self.key.directory_id == key.directory_id


@attrs.frozen
class VoterSet:
    """Voters by id (``VoterSet``); ``nodes`` is kept in ascending id order."""

    nodes: tuple[VoterNode, ...] = attrs.field(converter=lambda ns: tuple(sorted(ns, key=lambda n: n.key.id)))

    def __attrs_post_init__(self) -> None:
        ids = [n.key.id for n in self.nodes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"a voter set with a repeated voter id: {ids}")

    @classmethod
    def static(cls, ids: Iterable[int]) -> "VoterSet":
        """``VoterSet.fromInetSocketAddresses``: the static voters, no directory ids, each
        supporting kraft.version 0 only (addresses are left out)."""
        return cls(tuple(VoterNode(ReplicaKey(i)) for i in ids))

    def _node(self, voter_id: int) -> VoterNode | None:
        return next((n for n in self.nodes if n.key.id == voter_id), None)

    @property
    def voter_ids(self) -> frozenset[int]:
        return frozenset(n.key.id for n in self.nodes)

    @property
    def voter_keys(self) -> frozenset[ReplicaKey]:
        return frozenset(n.key for n in self.nodes)

    def is_voter(self, key: ReplicaKey) -> bool:
        node = self._node(key.id)
        return node is not None and node.is_voter(key)

    def is_only_voter(self, key: ReplicaKey) -> bool:
        return len(self.nodes) == 1 and self.is_voter(key)

    def has_overlapping_majority(self, other: "VoterSet") -> bool:
        """``hasOverlappingMajority``: the replica keys differ by at most one added and at most
        one removed (the one-change-at-a-time rule)."""
        mine, theirs = self.voter_keys, other.voter_keys
        return len(mine - theirs) <= 1 and len(theirs - mine) <= 1

    def add_voter(self, node: VoterNode) -> "VoterSet | None":
        """``addVoter``: None when the id is a voter already."""
        return None if self._node(node.key.id) is not None else VoterSet(self.nodes + (node,))

    def remove_voter(self, key: ReplicaKey) -> "VoterSet | None":
        """``removeVoter``: None unless ``key`` is exactly a voter's key and others remain."""
        node = self._node(key.id)
        if node is None or node.key != key or len(self.nodes) == 1:
            return None
        return VoterSet(tuple(n for n in self.nodes if n.key.id != key.id))

    def update_voter(self, node: VoterNode) -> "VoterSet | None":
        """``updateVoter``: replaces the voter ``node.key`` matches (``isVoter``), else None."""
        old = self._node(node.key.id)
        if old is None or not old.is_voter(node.key):
            return None
        return VoterSet(tuple(node if n.key.id == node.key.id else n for n in self.nodes))

    def to_voters_record(self) -> dict[str, Any]:
        """The value fields of a ``VotersRecord`` version 0 (``toVotersRecord``)."""
        return {"version": 0, "voters": [voter_fields(n) for n in self.nodes]}

    @classmethod
    def from_voters_record(cls, fields: Mapping[str, Any]) -> "VoterSet":
        """``fromVotersRecord``: a later voter with the same id replaces an earlier one."""
        by_id = {v["voterId"]: voter_node(v) for v in fields["voters"]}
        return cls(tuple(by_id.values()))


def directory_id_of(node_id: int) -> str:
    """The directory id of replica ``node_id``'s metadata log: a fixed Uuid per id, never
    ``ZERO_UUID`` (a replica that loses its disk keeps it here: docs/quorum.md)."""
    return uuid_to_str((0x6B72616674 << 64 | node_id).to_bytes(16, "big"))


def default_voter_node(node_id: int, port: int = CONTROLLER_PORT) -> VoterNode:
    """Replica ``node_id`` as a voter set lists it: its directory id, one endpoint on the controller
    listener (host ``controller-<id>``) and kraft.version 0 to 1 supported (what
    ``kafka-storage format --initial-controllers`` and AddRaftVoter write for it)."""
    return VoterNode(ReplicaKey(node_id, directory_id_of(node_id)),
                     (Endpoint(CONTROLLER_LISTENER, f"controller-{node_id}", port),), KRAFT_VERSION_0, KRAFT_VERSION_1)


def voter_fields(node: VoterNode, endpoints: str = "endpoints") -> dict[str, Any]:
    """A voter as the schemas write it: VotersRecord's ``Voters`` entry (``endpoints``), or the
    same fields of UpdateRaftVoterRequest, whose endpoints are its ``listeners``."""
    return {
        "voterId": node.key.id,
        "voterDirectoryId": node.key.directory_id,
        endpoints: [{"name": e.name, "host": e.host, "port": e.port} for e in node.endpoints],
        "kRaftVersionFeature": {"minSupportedVersion": node.min_kraft_version,
                                "maxSupportedVersion": node.max_kraft_version},
    }


def voter_node(v: Mapping[str, Any], endpoints: str = "endpoints") -> VoterNode:
    """The inverse of :func:`voter_fields`."""
    feature = v["kRaftVersionFeature"]
    return VoterNode(
        ReplicaKey(v["voterId"], v["voterDirectoryId"]),
        tuple(Endpoint(e["name"], e["host"], e["port"]) for e in v[endpoints]),
        feature["minSupportedVersion"],
        feature["maxSupportedVersion"],
    )


def voters_batch(base_offset: int, epoch: int, voters: VoterSet, timestamp: int) -> RecordBatch:
    """The control batch ``BatchAccumulator.appendVotersRecord`` appends for
    ``LeaderState.appendVotersRecord``: one ``VotersRecord`` (``MemoryRecords.withVotersRecord``)."""
    return control_batch(base_offset, epoch, [(ControlType.KRAFT_VOTERS, voters.to_voters_record())], timestamp)


def kraft_version_batch(base_offset: int, epoch: int, kraft_version: int, timestamp: int) -> RecordBatch:
    """A control batch holding one ``KRaftVersionRecord`` (``MemoryRecords.withKRaftVersionRecord``)."""
    return control_batch(base_offset, epoch, [(ControlType.KRAFT_VERSION, {"kRaftVersion": kraft_version})], timestamp)


@attrs.define
class LogHistory(Generic[T]):
    """``TreeMapLogHistory``: values at strictly increasing offsets (>= -1)."""

    offsets: list[int] = attrs.field(factory=list)
    values: list[T] = attrs.field(factory=list)

    def add_at(self, offset: int, value: T) -> None:
        if offset < -1:
            raise ValueError(f"offset {offset} is below -1")
        if self.offsets and offset <= self.offsets[-1]:
            raise ValueError(f"offset {offset} is not above the last offset {self.offsets[-1]}")
        self.offsets.append(offset)
        self.values.append(value)

    def value_at_or_before(self, offset: int) -> T | None:
        i = bisect.bisect_right(self.offsets, offset)
        return self.values[i - 1] if i else None

    def last_entry(self) -> tuple[int, T] | None:
        return (self.offsets[-1], self.values[-1]) if self.offsets else None

    def truncate_new_entries(self, end_offset: int) -> None:
        """Drop the entries at offsets >= ``end_offset``."""
        i = bisect.bisect_left(self.offsets, end_offset)
        del self.offsets[i:], self.values[i:]

    def truncate_old_entries(self, start_offset: int) -> None:
        """Drop the entries at offsets <= ``start_offset`` but the last of them."""
        i = bisect.bisect_right(self.offsets, start_offset)
        del self.offsets[:max(i - 1, 0)], self.values[:max(i - 1, 0)]

    def clear(self) -> None:
        self.offsets.clear()
        self.values.clear()


class ControlRecordHistory:
    """The voter sets and kraft.versions of one replica's log, by offset."""

    def __init__(self, static_voters: VoterSet) -> None:
        self.static_voters = static_voters
        self.voters: LogHistory[VoterSet] = LogHistory()
        self.kraft_versions: LogHistory[int] = LogHistory()
        self.next_offset = 0

    # -- feeding -------------------------------------------------------------------------------
    def load_snapshot(self, snapshot: Snapshot) -> None:
        """Start over from ``snapshot`` (``maybeLoadSnapshot``): its control records count at its
        last contained offset, and reading resumes at its end."""
        self.voters.clear()
        self.kraft_versions.clear()
        last = snapshot.snapshot_id.end_offset - 1
        for batch in snapshot.batches:
            self._handle_batch(batch, last)
        self.next_offset = last + 1

    def append_batch(self, batch: RecordBatch) -> None:
        """A batch appended to the log (``maybeLoadLog``/``handleBatch``); it must start at the
        next offset."""
        if batch.base_offset != self.next_offset:
            raise ValueError(f"batch at offset {batch.base_offset}, expected {self.next_offset}")
        self._handle_batch(batch, None)
        self.next_offset = batch.next_offset

    def _handle_batch(self, batch: RecordBatch, override_offset: int | None) -> None:
        if not batch.is_control:
            return
        for record in batch.records:
            offset = batch.base_offset + record.offset_delta if override_offset is None else override_offset
            kind, fields = decode_control(record)
            if kind == ControlType.KRAFT_VOTERS:
                self._add_voter_set(offset, VoterSet.from_voters_record(fields))
            elif kind == ControlType.KRAFT_VERSION:
                self.kraft_versions.add_at(offset, fields["kRaftVersion"])

    def _add_voter_set(self, offset: int, voters: VoterSet) -> None:
        """``VoterSetHistory.addAt``: a voter set following one from the log must overlap it."""
        last = self.voters.last_entry()
        if last is not None and last[0] >= 0 and not last[1].has_overlapping_majority(voters):
            raise ValueError(f"offset {offset}: voter set {sorted(voters.voter_keys)} does not have an overlapping "
                             f"majority with {sorted(last[1].voter_keys)}")
        self.voters.add_at(offset, voters)

    def truncate_new_entries(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: what it said from there on is undone."""
        self.voters.truncate_new_entries(end_offset)
        self.kraft_versions.truncate_new_entries(end_offset)
        self.next_offset = min(self.next_offset, end_offset)

    def truncate_old_entries(self, start_offset: int) -> None:
        """The log start moved to ``start_offset``: keep only the last value at or below it."""
        self.voters.truncate_old_entries(start_offset)
        self.kraft_versions.truncate_old_entries(start_offset)

    # -- reading -------------------------------------------------------------------------------
    def last_voter_set(self) -> VoterSet:
        """``lastVoterSet``: the latest voter set, the static voters without one."""
        last = self.voters.last_entry()
        return self.static_voters if last is None else last[1]

    def last_voter_set_offset(self) -> int | None:
        last = self.voters.last_entry()
        return None if last is None else last[0]

    def voter_set_at(self, offset: int) -> VoterSet | None:
        """``voterSetAtOffset``: the voter set in force at ``offset`` (None before any record)."""
        self._check_offset(offset)
        return self.voters.value_at_or_before(offset)

    def kraft_version(self) -> int:
        """``lastKraftVersion``: 0 without a KRaftVersionRecord."""
        last = self.kraft_versions.last_entry()
        return KRAFT_VERSION_0 if last is None else last[1]

    def kraft_version_at(self, offset: int) -> int:
        self._check_offset(offset)
        value = self.kraft_versions.value_at_or_before(offset)
        return KRAFT_VERSION_0 if value is None else value

    def _check_offset(self, offset: int) -> None:
        if offset >= self.next_offset:
            raise ValueError(f"offset {offset} is at or past the next offset to read {self.next_offset}")
