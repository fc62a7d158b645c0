"""Durable state of one voter: the metadata log and the quorum-state file, through ``kraft.log``.

The log holds real record batches, one offset per record: one ``LeaderChange`` control batch
(control type 2) at each epoch start, one ``VotersRecord`` control batch (control type 6, KIP-853)
per voter change, one data batch per client value (value = the decimal bytes
of the client value) and, in the metadata quorum, one data batch per controller operation holding
one record per metadata record (value = the record's bytes, key null; Kafka's
``BatchAccumulator``); ``partition_leader_epoch`` = the entries' epoch.  The quorum-state file is Kafka's
``quorum-state`` JSON, version 0 (with ``currentVoters``) under kraft.version 0 and version 1 (with
``votedDirectoryId``) from kraft.version 1 on (:class:`ElectionState`), and is replaced
atomically (temp + fsync + rename) before a vote is answered or an epoch change takes effect.

Snapshots (KIP-630) are Kafka ``.checkpoint`` files in the same directory (``kraft.log.snapshot``):
one data record per data entry below the snapshot's end, value encoded as the log's data batches
encode it, key the record's log offset in decimal (what the append-log application keeps); the
header batch also holds a ``KRaftVersionRecord`` and the ``VotersRecord`` of the voter set at the
snapshot's end (``RecordsSnapshotWriter.Builder.build``).  A snapshot file without a VotersRecord
holds the bootstrap voter set.  The
log start offset is durable in ``log-start-offset-checkpoint`` in the format of Kafka's
``OffsetCheckpointFile`` (version 0, one entry ``__cluster_metadata 0 <offset>``), written
atomically before any segment or snapshot below it is deleted.  On open the segments wholly below
it are deleted, a log that ends below it starts empty at it, and snapshot files that are partial,
marked deleted or end below it are removed (``KafkaMetadataLog.recoverSnapshots``).

``entries`` is a volatile decoded mirror of the log from the log start offset on (rebuilt from the
log on open), so projections and invariant checks do not decode batches after every event:
``entries[i]`` is the entry at offset ``log_start_offset + i``.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import attrs

from kraft.quorum.messages import LEADER_CHANGE, VOTERS, Entry, QuorumSnapshot, SnapshotRecord, default_voter_nodes
from kraft.quorum.voters import VoterNode, VoterSet, voters_batch

from kraft.log import Log, MemoryFS, Record, RecordBatch, leader_change_batch, write_atomically
from kraft.log.control import ControlType, decode_control
from kraft.log.fs import join
from kraft.log.schema import ZERO_UUID, uuid_from_str, uuid_to_str
from kraft.log.snapshot import SnapshotId, parse_snapshot_path, read_snapshot, snapshot_batches, snapshot_filename
from kraft.log.snapshot import DELETE_SUFFIX, PARTIAL_SUFFIX, SUFFIX

QUORUM_STATE_FILE = "quorum-state"
LOG_START_FILE = "log-start-offset-checkpoint"
METADATA_TOPIC = "__cluster_metadata"
SNAPSHOT_BATCH_RECORDS = 100  # data records per snapshot batch
KRAFT_VERSION = 1  # the finalized kraft.version these logs are written with (dynamic voters)


def _read_file(fs: Any, path: str) -> bytes | None:
    if not fs.exists(path):
        return None
    return fs.read_bytes(path)


def _value(raw: bytes) -> int | bytes:
    """A record value: a client value is decimal text; anything else is a metadata record's
    bytes, kept as they are (its codec belongs to the controller)."""
    if raw.isdigit() or (raw[:1] == b"-" and raw[1:].isdigit()):
        return int(raw.decode())
    return raw


def _control_type(record: Any) -> int:
    """The type of a control record, from its key (version int16, type int16)."""
    return int.from_bytes((record.key or b"\0\0\0\0")[2:4], "big", signed=True)


def _voter_nodes(record: Any) -> tuple[VoterNode, ...]:
    """The voters of a VotersRecord control record (``VoterSet.fromVotersRecord``)."""
    _, _, fields = decode_control(record.key, record.value)
    return VoterSet.from_voters_record(fields).nodes


def _ids(nodes: tuple[VoterNode, ...]) -> tuple[int, ...]:
    return tuple(n.key.id for n in nodes)


def batch_to_entries(batch: Any) -> list[Entry]:
    """The entries of one batch, one per record (a control batch: its LeaderChange, or its
    VotersRecord with the voters it sets)."""
    if batch.is_control:
        epoch = batch.partition_leader_epoch
        out = []
        for r in batch.records:
            if _control_type(r) == ControlType.KRAFT_VOTERS:
                nodes = _voter_nodes(r)
                out.append(Entry(epoch, VOTERS, voters=_ids(nodes), nodes=nodes))
            else:
                out.append(Entry(epoch, LEADER_CHANGE))
        return out
    last = len(batch.records) - 1
    return [Entry(batch.partition_leader_epoch, _value(r.value or b""), i == last)
            for i, r in enumerate(batch.records)]


def _encode_value(v: int | bytes) -> bytes:
    return v if isinstance(v, bytes) else str(v).encode()


def voter_nodes_of(voters: tuple[int, ...], nodes: tuple[VoterNode, ...] = ()) -> tuple[VoterNode, ...]:
    """The voter set ``voters`` in full: ``nodes`` when given, else each voter as
    ``default_voter_node`` lists it."""
    if nodes:
        if sorted(_ids(nodes)) != sorted(voters):
            raise ValueError(f"voter nodes {sorted(_ids(nodes))} are not the voters {sorted(voters)}")
        return VoterSet(nodes).nodes
    return default_voter_nodes(voters)


def _voter_set(voters: tuple[int, ...], nodes: tuple[VoterNode, ...] = ()) -> VoterSet:
    """The voter set as these logs record it (``VoterSet.toVotersRecord``)."""
    return VoterSet(voter_nodes_of(voters, nodes))


def _data_batch(offset: int, epoch: int, values: tuple[int | bytes, ...], timestamp: int) -> RecordBatch:
    records = tuple(Record(i, 0, None, _encode_value(v)) for i, v in enumerate(values))
    return RecordBatch(offset, epoch, records, first_timestamp=timestamp, max_timestamp=timestamp)


class QuorumStorage:
    """The log plus the quorum-state file of one node, in ``directory`` of ``fs``."""

    def __init__(self, fs: Any, directory: str, log: Any, report: Any = None, *, start: int = 0,
                 snapshots: dict[int, QuorumSnapshot] | None = None) -> None:
        self.fs = fs
        self.directory = directory
        self.log = log
        self.recovery_report = report
        self.log_start_offset = start
        self.snapshots: dict[int, QuorumSnapshot] = dict(snapshots or {})   # by end offset
        self.entries: list[Entry] = [e for b in log.read(start) for e in batch_to_entries(b)]
        self._index_voters()

    def _index_voters(self) -> None:
        """Rebuild ``voter_offsets``: the offsets of the VotersRecord entries, in order."""
        self.voter_offsets: list[int] = [self.log_start_offset + i for i, e in enumerate(self.entries)
                                         if e.value == VOTERS]

    @classmethod
    def open(cls, fs: Any, directory: str, bootstrap_voters: tuple[int, ...] = ()) -> "QuorumStorage":
        opened = Log.open(fs, directory)
        log, report = opened if isinstance(opened, tuple) else (opened, None)
        start = _read_log_start(fs, directory)
        if log.start_offset > start:
            raise ValueError(f"{directory}: the log starts at {log.start_offset}, past the log start offset "
                             f"{start} of {LOG_START_FILE}")
        if log.end_offset < start:
            log.truncate_fully_and_start_at(start)
        log.delete_segments_before(start)
        snapshots = _recover_snapshots(fs, directory, start, tuple(sorted(bootstrap_voters)))
        return cls(fs, directory, log, report, start=start, snapshots=snapshots)

    # -- log -----------------------------------------------------------------------------------
    @property
    def end_offset(self) -> int:
        return self.log_start_offset + len(self.entries)

    @property
    def flushed_offset(self) -> int:
        """The durable end offset: what the log flushed, and at least the log start (what lies
        below it is in a durable snapshot)."""
        return max(self.log.flushed_offset, self.log_start_offset)

    @property
    def base_epoch(self) -> int:
        """The epoch of the record before the log start: that of the snapshot ending there; with
        none (only the bug ``RetentionDeletesPastSnapshot`` leaves none) the first entry's, as
        the leader-epoch cache's entry at the log start would say; 0 for a log from 0."""
        if self.log_start_offset == 0:
            return 0
        s = self.snapshots.get(self.log_start_offset)
        if s is not None:
            return s.epoch
        return self.entries[0].epoch if self.entries else 0

    @property
    def last_epoch(self) -> int:
        """``KafkaMetadataLog.lastFetchedEpoch``: the last entry's epoch, or with an empty log the
        epoch of the snapshot at the log start."""
        return self.entries[-1].epoch if self.entries else self.base_epoch

    def epoch_before(self, offset: int) -> int:
        """The epoch of the entry at ``offset - 1`` (the base epoch at the log start)."""
        return self.entries[offset - 1 - self.log_start_offset].epoch if offset > self.log_start_offset \
            else self.base_epoch

    def entry(self, offset: int) -> Entry:
        return self.entries[offset - self.log_start_offset]

    def entries_from(self, offset: int, stop: int | None = None) -> list[Entry]:
        """The entries at offsets ``offset`` .. ``stop - 1`` (to the end without ``stop``)."""
        base = self.log_start_offset
        return self.entries[offset - base:None if stop is None else stop - base]

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """``KafkaMetadataLog.endOffsetForEpoch`` over the log from its start: the largest epoch
        <= ``epoch`` among the entries and the offset one past its last entry; with no such entry
        (base epoch, log start offset)."""
        for i in range(len(self.entries) - 1, -1, -1):
            if self.entries[i].epoch <= epoch:
                return (self.entries[i].epoch, self.log_start_offset + i + 1)
        return (self.base_epoch, self.log_start_offset)

    def append_leader_change(self, epoch: int, leader_id: int, voters: tuple[int, ...], timestamp: int) -> int:
        offset = self.end_offset
        self.log.append(leader_change_batch(offset, epoch, leader_id, list(voters), timestamp))
        self.entries.append(Entry(epoch, LEADER_CHANGE))
        return offset

    def append_voters(self, epoch: int, voters: tuple[int, ...], timestamp: int = 0,
                      nodes: tuple[VoterNode, ...] = ()) -> int:
        """Append the VotersRecord of the voter set ``voters`` (in full: ``nodes``, else the
        default node of each voter); returns its offset."""
        offset = self.end_offset
        voter_set = _voter_set(voters, nodes)
        self.log.append(voters_batch(offset, epoch, voter_set, timestamp))
        self.entries.append(Entry(epoch, VOTERS, voters=_ids(voter_set.nodes), nodes=voter_set.nodes))
        self.voter_offsets.append(offset)
        return offset

    def voters_at(self, offset: int) -> tuple[int, ...] | None:
        """The voters of the last VotersRecord below ``offset`` in the log (None without one)."""
        entry = self.voters_entry_at(offset)
        return None if entry is None else entry.voters

    def voters_entry_at(self, offset: int) -> Entry | None:
        """The last VotersRecord entry below ``offset`` in the log (None without one)."""
        for o in reversed(self.voter_offsets):
            if o < offset:
                return self.entry(o)
        return None

    def append_value(self, epoch: int, value: int | tuple[bytes, ...], timestamp: int = 0) -> int:
        """Append one data batch: an int client value (one record), or a tuple of metadata record
        values, one record each at consecutive offsets (all or nothing).  Returns the offset of
        the batch's last record (Kafka's ``scheduleAtomicAppend``)."""
        values = value if isinstance(value, tuple) else (value,)
        if not values:
            raise ValueError("an empty batch")
        offset = self.end_offset
        self.log.append(_data_batch(offset, epoch, values, timestamp))
        last = len(values) - 1
        self.entries += [Entry(epoch, v, i == last) for i, v in enumerate(values)]
        return offset + last

    def append_entries(self, entries: Sequence[Entry], leader_id: int, voters: tuple[int, ...],
                       timestamp: int = 0) -> None:
        """Append fetched entries as the batches their ``last_in_batch`` flags delimit (the caller
        hands whole batches: ``whole_batches``)."""
        start = 0
        for k, entry in enumerate(entries):
            if not entry.last_in_batch and k + 1 < len(entries):
                continue
            if entry.value == LEADER_CHANGE:
                self.append_leader_change(entry.epoch, leader_id, voters, timestamp)
            elif entry.value == VOTERS:
                self.append_voters(entry.epoch, entry.voters, timestamp, entry.nodes)
            else:
                self._append_batch(entries[start:k + 1], timestamp)
            start = k + 1

    def _append_batch(self, batch: Sequence[Entry], timestamp: int) -> None:
        epoch = batch[0].epoch
        if any(e.epoch != epoch or not isinstance(e.value, (int, bytes)) for e in batch):
            raise ValueError(f"not one data batch: {list(batch)}")
        self.log.append(_data_batch(self.end_offset, epoch, tuple(e.value for e in batch), timestamp))
        self.entries += batch

    def truncate_to(self, offset: int) -> int:
        """Remove the entries from ``offset`` on (never below the log start); a batch straddling it
        goes whole (the log removes whole batches), so the new end offset can be lower.  Returns it."""
        offset = max(offset, self.log_start_offset)
        if offset < self.end_offset:
            self.log.truncate_to(offset)
            del self.entries[self.log.end_offset - self.log_start_offset:]
            self._index_voters()
        return self.end_offset

    def at_batch_boundary(self, offset: int) -> bool:
        """``offset`` is where a batch of the log starts or the log ends."""
        return offset == self.log_start_offset or (
            self.log_start_offset < offset <= self.end_offset and self.entry(offset - 1).last_in_batch)

    # -- snapshots and the log start offset ------------------------------------------------------
    @property
    def latest_snapshot(self) -> QuorumSnapshot | None:
        return self.snapshots[max(self.snapshots)] if self.snapshots else None

    @property
    def earliest_snapshot(self) -> QuorumSnapshot | None:
        return self.snapshots[min(self.snapshots)] if self.snapshots else None

    def snapshot_records(self, end: int) -> tuple[SnapshotRecord, ...]:
        """The data records below ``end``: those of the snapshot ending at the log start (none
        without one), then the log's data entries from the log start (the fold of the prefix)."""
        base = self.snapshots.get(self.log_start_offset)
        records = base.records if base is not None else ()
        tail = tuple(SnapshotRecord(o, e.value) for o, e in enumerate(self.entries_from(self.log_start_offset, end),
                                                                       self.log_start_offset)
                     if e.value not in (LEADER_CHANGE, VOTERS))
        return records + tail

    def add_snapshot(self, snapshot: QuorumSnapshot, timestamp: int = 0) -> str:
        """Write ``snapshot`` as a ``.checkpoint`` file (durable when this returns), as
        ``RecordsSnapshotWriter`` and ``FileRawSnapshotWriter.freeze`` do: the batches into the
        ``.part`` file, fsync, rename, fsync the directory."""
        sid = SnapshotId(snapshot.end, snapshot.epoch)
        data = b"".join(b.encode() for b in _snapshot_file_batches(snapshot, timestamp))
        final = join(self.directory, snapshot_filename(sid) + SUFFIX)
        part = join(self.directory, snapshot_filename(sid) + PARTIAL_SUFFIX)
        self.fs.makedirs(self.directory)
        self.fs.write_bytes(part, data)
        self.fs.fsync(part)
        self.fs.rename(part, final)
        self.fs.fsync_dir(self.directory)
        self.snapshots[snapshot.end] = snapshot
        return final

    def delete_before(self, offset: int) -> None:
        """Move the log start offset up to ``offset`` (``KafkaMetadataLog.deleteBeforeSnapshot``):
        the checkpoint first, then the segments wholly below it and the snapshots ending below it."""
        if offset <= self.log_start_offset:
            return
        _write_log_start(self.fs, self.directory, offset)
        self.log.delete_segments_before(offset)
        del self.entries[:offset - self.log_start_offset]
        self.log_start_offset = offset
        self._index_voters()
        self._forget_snapshots_before(offset)

    def install_snapshot(self, snapshot: QuorumSnapshot, *, keep_suffix: bool = False) -> None:
        """``KafkaMetadataLog.truncateToLatestSnapshot`` after a snapshot was fetched: the log is
        emptied and starts at the snapshot's end, the older snapshots go.  ``keep_suffix``: the
        entries from the snapshot's end on stay (the bug variant ``KeepSuffixAfterSnapshotInstall``)."""
        end = snapshot.end
        if keep_suffix and self.log_start_offset <= end < self.end_offset:
            self.delete_before(end)
        else:
            _write_log_start(self.fs, self.directory, end)
            self.log.truncate_fully_and_start_at(end)
            self.entries = []
            self.log_start_offset = end
            self._index_voters()
        self._forget_snapshots_except(snapshot)

    def _forget_snapshots_before(self, offset: int) -> None:
        """Snapshots ending below ``offset`` go (``KafkaMetadataLog.forgetSnapshotsBefore``)."""
        self._remove_snapshots([e for e in self.snapshots if e < offset])

    def _forget_snapshots_except(self, keep: QuorumSnapshot) -> None:
        """Every snapshot but ``keep`` goes (an installed snapshot replaces the others)."""
        self._remove_snapshots([e for e, s in self.snapshots.items() if s != keep])

    def _remove_snapshots(self, ends: list[int]) -> None:
        """Rename each ``.deleted``, then remove it (``KafkaMetadataLog.removeSnapshots``)."""
        for end in sorted(ends):
            path = join(self.directory, snapshot_filename(SnapshotId(end, self.snapshots.pop(end).epoch)))
            self.fs.rename(path + SUFFIX, path + DELETE_SUFFIX)
            self.fs.remove(path + DELETE_SUFFIX)
        self.fs.fsync_dir(self.directory)

    def flush(self) -> None:
        self.log.flush()

    # -- quorum state --------------------------------------------------------------------------
    def write_quorum_state(self, epoch: int, leader_id: int | None, voted_id: int | None,
                           voters: tuple[int, ...], awaiting_leader: bool = False, *,
                           kraft_version: int = 0, voted_directory_id: str = ZERO_UUID) -> None:
        """Replace the quorum-state file: ``QuorumStateData`` version 1 (the voted directory id,
        no voters) when ``kraft_version`` >= 1, else version 0 (``KRaftVersion
        .quorumStateVersion``, ``ElectionState.toQuorumStateData``)."""
        state = ElectionState(epoch, leader_id, voted_id, voted_directory_id, tuple(voters),
                              1 if kraft_version >= 1 else 0, awaiting_leader)
        write_atomically(self.fs, f"{self.directory}/{QUORUM_STATE_FILE}", state.to_json())

    def read_quorum_state(self) -> tuple[int, int | None, int | None]:
        """(epoch, leaderId, votedId) from the file; (0, None, None) when there is none yet."""
        epoch, leader, voted, _ = self.read_quorum_state_full()
        return (epoch, leader, voted)

    def read_quorum_state_full(self) -> tuple[int, int | None, int | None, bool]:
        """(epoch, leaderId, votedId, awaitingLeader); (0, None, None, False) when there is no file."""
        s = self.read_election_state()
        return (s.epoch, s.leader_id, s.voted_id, s.awaiting_leader)

    def read_election_state(self) -> "ElectionState":
        """The whole quorum-state file, either version; an empty state when there is no file."""
        path = f"{self.directory}/{QUORUM_STATE_FILE}"
        raw = _read_file(self.fs, path)
        return ElectionState() if raw is None else ElectionState.from_json(raw, path)


@attrs.frozen
class ElectionState:
    """The quorum-state file: ``QuorumStateData`` (raft/src/main/resources/common/message/
    QuorumStateData.json) plus ``data_version``, as ``FileQuorumStateStore`` writes it: the
    version's fields in schema order as ``QuorumStateDataJsonConverter`` writes them (version 0:
    clusterId, leaderId, leaderEpoch, votedId, appliedOffset, currentVoters; version 1: leaderId,
    leaderEpoch, votedId, votedDirectoryId), then ``data_version``, as compact JSON on one line.
    ``awaitingLeader`` is not Kafka's: our stand-in for the new directory id of a replaced disk
    (docs/quorum.md, "Losing a disk"), written only when set, before ``data_version``."""

    epoch: int = 0
    leader_id: int | None = None
    voted_id: int | None = None
    voted_directory_id: str = ZERO_UUID
    voters: tuple[int, ...] = ()
    data_version: int = 0
    awaiting_leader: bool = False

    def to_json(self) -> bytes:
        doc: dict[str, Any] = {"clusterId": ""} if self.data_version == 0 else {}
        doc.update(leaderId=_or_minus_one(self.leader_id), leaderEpoch=self.epoch, votedId=_or_minus_one(self.voted_id))
        if self.data_version == 0:
            doc.update(appliedOffset=0, currentVoters=[{"voterId": v} for v in self.voters])
        else:
            doc["votedDirectoryId"] = self.voted_directory_id
        if self.awaiting_leader:
            doc["awaitingLeader"] = True
        doc["data_version"] = self.data_version
        return json.dumps(doc, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, raw: bytes, path: str) -> "ElectionState":
        """``FileQuorumStateStore.readStateFromFile``: ``data_version`` must be there and 0 or 1."""
        try:
            doc = json.loads(raw)
            version = int(doc["data_version"])
            if version not in (0, 1):
                raise ValueError(f"data_version ({version}) is not within the min (0) and max (1) supported version")
            leader, voted = int(doc["leaderId"]), int(doc["votedId"])
            return cls(int(doc["leaderEpoch"]), None if leader < 0 else leader, None if voted < 0 else voted,
                       _directory_id(doc, version), tuple(int(v["voterId"]) for v in doc.get("currentVoters") or ()),
                       version, bool(doc.get("awaitingLeader", False)))
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: corrupt quorum-state file: {exc}") from exc


def _or_minus_one(value: int | None) -> int:
    return -1 if value is None else value


def _directory_id(doc: dict[str, Any], version: int) -> str:
    """The voted directory id of a version-1 file, checked to be a 16-byte Uuid."""
    if version == 0:
        return ZERO_UUID
    text = doc["votedDirectoryId"]
    if not isinstance(text, str) or len(uuid_from_str(text)) != 16:
        raise ValueError(f"votedDirectoryId {text!r} is not a Uuid")
    return uuid_to_str(uuid_from_str(text))


def _read_log_start(fs: Any, directory: str) -> int:
    """The log start offset of ``log-start-offset-checkpoint`` (0 without the file)."""
    path = f"{directory}/{LOG_START_FILE}"
    raw = _read_file(fs, path)
    if raw is None:
        return 0
    lines = raw.decode(errors="replace").splitlines()
    try:
        if lines[0] != "0" or int(lines[1]) != 1:
            raise ValueError("expected version 0 and one entry")
        topic, partition, offset = lines[2].split()
        if topic != METADATA_TOPIC or partition != "0" or int(offset) < 0:
            raise ValueError(f"unexpected entry {lines[2]!r}")
        return int(offset)
    except (IndexError, ValueError) as exc:
        raise ValueError(f"{path}: corrupt log start offset checkpoint: {exc}") from None


def _write_log_start(fs: Any, directory: str, offset: int) -> None:
    write_atomically(fs, f"{directory}/{LOG_START_FILE}", f"0\n1\n{METADATA_TOPIC} 0 {offset}\n".encode())


def _snapshot_file_batches(snapshot: QuorumSnapshot, timestamp: int) -> list[RecordBatch]:
    """The batches of a snapshot file: the header batch holds the SnapshotHeaderRecord, a
    KRaftVersionRecord and the VotersRecord of ``snapshot.voters``; the data batches follow, the
    footer last (``RecordsSnapshotWriter.Builder.build``)."""
    chunks = [snapshot.records[i:i + SNAPSHOT_BATCH_RECORDS]
              for i in range(0, len(snapshot.records), SNAPSHOT_BATCH_RECORDS)]
    data = [[Record(k, 0, str(r.offset).encode(), _encode_value(r.value)) for k, r in enumerate(chunk)]
            for chunk in chunks]
    header = [(ControlType.KRAFT_VERSION, {"kRaftVersion": KRAFT_VERSION}),
              (ControlType.KRAFT_VOTERS, _voter_set(snapshot.voters, snapshot.nodes).to_voters_record())]
    return snapshot_batches(SnapshotId(snapshot.end, snapshot.epoch), data, timestamp=timestamp,
                            header_records=header)


def _snapshot_voters(batches: Any, bootstrap: tuple[int, ...]) -> tuple[VoterNode, ...]:
    """The voters of the VotersRecord in a snapshot's header batch, else ``bootstrap``'s."""
    for r in batches[0].records:
        if _control_type(r) == ControlType.KRAFT_VOTERS:
            return _voter_nodes(r)
    return voter_nodes_of(bootstrap)


def _recover_snapshots(fs: Any, directory: str, start: int, bootstrap: tuple[int, ...]) -> dict[int, QuorumSnapshot]:
    """The snapshots of ``directory``; partial ones, ones marked deleted and ones ending below the
    log start are deleted (``KafkaMetadataLog.recoverSnapshots``)."""
    out: dict[int, QuorumSnapshot] = {}
    for name in fs.listdir(directory):
        parsed = parse_snapshot_path(name)
        if parsed is None:
            continue
        path = join(directory, name)
        sid = parsed.snapshot_id
        if parsed.partial or parsed.deleted or sid.end_offset < start:
            fs.remove(path)
            continue
        snap = read_snapshot(fs, path)
        records = tuple(SnapshotRecord(int((r.key or b"0").decode()), _value(r.value or b""))
                        for r in snap.records)
        nodes = _snapshot_voters(snap.batches, bootstrap)
        out[sid.end_offset] = QuorumSnapshot(sid.end_offset, sid.epoch, records, _ids(nodes), nodes)
    return out


__all__ = ["ElectionState", "QuorumStorage", "MemoryFS", "batch_to_entries"]
