"""Voter sets and their history in the log (kraft/quorum/voters.py) against Kafka's meaning
(``VoterSet``, ``TreeMapLogHistory``, ``VoterSetHistory``, ``KRaftControlRecordStateMachine``) and
against a plain replay model: the voter set at an offset is the last VotersRecord at or before it
among the records appended and not truncated."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraft.log import MemoryFS, Record, RecordBatch, decode_control
from kraft.log.snapshot import SnapshotId, read_snapshot, write_snapshot
from kraft.log.control import ControlType
from kraft.quorum.voters import (
    ControlRecordHistory,
    Endpoint,
    LogHistory,
    ReplicaKey,
    VoterNode,
    VoterSet,
    kraft_version_batch,
    voters_batch,
)
from tests import examples

DIR_A = "AAAAAAAAAAAAAAAAAAAAAQ"
DIR_B = "AAAAAAAAAAAAAAAAAAAAAg"


def _set(*keys: ReplicaKey) -> VoterSet:
    return VoterSet(tuple(VoterNode(k, (Endpoint("CONTROLLER", f"h{k.id}", 9093),), 0, 1) for k in keys))


# -- VoterSet ------------------------------------------------------------------------------------
def test_is_voter_matches_id_and_directory_id() -> None:
    voters = _set(ReplicaKey(1, DIR_A), ReplicaKey(2))
    assert voters.is_voter(ReplicaKey(1, DIR_A))
    assert not voters.is_voter(ReplicaKey(1, DIR_B))  # a replaced disk is not the voter
    assert not voters.is_voter(ReplicaKey(1))
    assert voters.is_voter(ReplicaKey(2, DIR_B))  # a voter without a directory id matches any
    assert not voters.is_voter(ReplicaKey(3))
    assert voters.voter_ids == {1, 2}


def test_overlapping_majority_allows_one_change_at_a_time() -> None:
    a, b, c, d = (ReplicaKey(i, DIR_A) for i in range(1, 5))
    base = _set(a, b, c)
    assert base.has_overlapping_majority(_set(a, b, c, d))
    assert base.has_overlapping_majority(_set(a, b))
    assert base.has_overlapping_majority(_set(a, b, d))  # one out, one in
    assert not base.has_overlapping_majority(_set(a))  # two out
    assert not base.has_overlapping_majority(_set(a, b, c, d, ReplicaKey(5)))  # two in
    assert not base.has_overlapping_majority(_set(a, b, ReplicaKey(3, DIR_B), ReplicaKey(4)))


def test_add_remove_update_follow_kafka() -> None:
    a, b = ReplicaKey(1, DIR_A), ReplicaKey(2, DIR_A)
    voters = _set(a)
    assert voters.add_voter(VoterNode(ReplicaKey(1, DIR_B))) is None  # the id is a voter
    two = voters.add_voter(VoterNode(b))
    assert two is not None and two.voter_keys == {a, b}
    assert two.remove_voter(ReplicaKey(2, DIR_B)) is None  # not exactly the voter's key
    assert voters.remove_voter(a) is None  # the last voter stays
    assert two.remove_voter(b) == VoterSet((voters.nodes[0],))
    moved = VoterNode(a, (Endpoint("CONTROLLER", "new", 1),), 0, 1)
    assert two.update_voter(moved).nodes[0] == moved
    assert two.update_voter(VoterNode(ReplicaKey(1, DIR_B))) is None


def test_repeated_id_is_refused() -> None:
    with pytest.raises(ValueError, match="repeated voter id"):
        VoterSet((VoterNode(ReplicaKey(1)), VoterNode(ReplicaKey(1, DIR_A))))


def test_voters_record_round_trip_and_static_set() -> None:
    voters = _set(ReplicaKey(2, DIR_B), ReplicaKey(1, DIR_A))
    record = voters.to_voters_record()
    assert [v["voterId"] for v in record["voters"]] == [1, 2]
    assert VoterSet.from_voters_record(record) == voters
    static = VoterSet.static([3, 1])
    assert [n.key for n in static.nodes] == [ReplicaKey(1), ReplicaKey(3)]
    assert all((n.min_kraft_version, n.max_kraft_version) == (0, 0) for n in static.nodes)


# -- LogHistory (TreeMapLogHistory) ---------------------------------------------------------------
def test_log_history_offsets_and_truncation() -> None:
    h: LogHistory[str] = LogHistory()
    with pytest.raises(ValueError):
        h.add_at(-2, "x")
    h.add_at(-1, "boot")
    for o, v in ((3, "a"), (7, "b"), (9, "c")):
        h.add_at(o, v)
    with pytest.raises(ValueError, match="not above"):
        h.add_at(9, "d")
    assert h.value_at_or_before(-1) == "boot" and h.value_at_or_before(6) == "a"
    h.truncate_new_entries(9)
    assert h.last_entry() == (7, "b")
    h.truncate_old_entries(5)  # keeps the last entry at or below 5
    assert h.offsets == [3, 7] and h.value_at_or_before(100) == "b"
    h.truncate_old_entries(2)  # nothing at or below 2: nothing goes
    assert h.offsets == [3, 7]


# -- ControlRecordHistory ---------------------------------------------------------------------------
def _data_batch(offset: int, epoch: int, n: int) -> RecordBatch:
    return RecordBatch(offset, epoch, tuple(Record(i, 0, None, b"1") for i in range(n)))


def test_static_voters_until_a_voters_record() -> None:
    history = ControlRecordHistory(VoterSet.static([1, 2, 3]))
    history.append_batch(_data_batch(0, 1, 2))
    assert history.last_voter_set() == VoterSet.static([1, 2, 3])
    assert history.last_voter_set_offset() is None and history.kraft_version() == 0
    assert history.voter_set_at(1) is None
    with pytest.raises(ValueError, match="next offset"):
        history.voter_set_at(2)


def test_voter_set_takes_effect_on_append_and_is_undone_by_truncation() -> None:
    a, b, c = (ReplicaKey(i, DIR_A) for i in (1, 2, 3))
    history = ControlRecordHistory(VoterSet.static([1]))
    history.append_batch(kraft_version_batch(0, 1, 1, 0))
    history.append_batch(voters_batch(1, 1, _set(a, b), 0))
    history.append_batch(voters_batch(2, 1, _set(a, b, c), 0))
    assert history.last_voter_set() == _set(a, b, c) and history.last_voter_set_offset() == 2
    assert history.voter_set_at(1) == _set(a, b) and history.kraft_version() == 1
    history.truncate_new_entries(2)
    assert history.last_voter_set() == _set(a, b) and history.next_offset == 2
    history.append_batch(_data_batch(2, 2, 1))
    assert history.voter_set_at(2) == _set(a, b)


def test_non_overlapping_voter_set_from_the_log_is_refused() -> None:
    a, b, c = (ReplicaKey(i, DIR_A) for i in (1, 2, 3))
    history = ControlRecordHistory(VoterSet.static([1]))
    history.append_batch(voters_batch(0, 1, _set(a), 0))
    with pytest.raises(ValueError, match="overlapping majority"):
        history.append_batch(voters_batch(1, 1, _set(a, b, c), 0))


def test_seeded_from_the_snapshot_at_its_last_contained_offset() -> None:
    a, b = ReplicaKey(1, DIR_A), ReplicaKey(2, DIR_B)
    fs = MemoryFS()
    header = [(ControlType.KRAFT_VERSION, {"kRaftVersion": 1}), (ControlType.KRAFT_VOTERS, _set(a, b).to_voters_record())]
    path = write_snapshot(fs, "d", SnapshotId(10, 2), [], header_records=header)
    history = ControlRecordHistory(VoterSet.static([7]))
    history.append_batch(voters_batch(0, 1, _set(a), 0))
    history.load_snapshot(read_snapshot(fs, path))
    assert history.last_voter_set_offset() == 9 and history.voter_set_at(9) == _set(a, b)
    assert history.kraft_version_at(9) == 1 and history.next_offset == 10


# -- against a replay model ------------------------------------------------------------------------
KEYS = [ReplicaKey(i, d) for i in (1, 2, 3, 4) for d in (DIR_A, DIR_B)]


_OPS = st.lists(st.one_of(
    st.tuples(st.just("data"), st.integers(1, 3)),
    st.tuples(st.just("version"), st.integers(0, 1)),
    st.tuples(st.just("voters"), st.sampled_from(KEYS)),
    st.tuples(st.sampled_from(["truncate", "trim"]), st.floats(0, 1)),
), min_size=1, max_size=25)


class _Model:
    """The log's control records as a list of (offset, kind, value): appending adds, truncation
    drops those at or past the new end, trimming to a start drops those at or below it but the
    last of each kind (what stays in force there)."""

    def __init__(self) -> None:
        self.records: list[tuple[int, str, object]] = []
        self.start = 0
        self.end = 0

    def last(self, kind: str, at: int | None = None) -> tuple[int, object] | None:
        found = [(o, v) for o, k, v in self.records if k == kind and (at is None or o <= at)]
        return found[-1] if found else None

    def trim(self, start: int) -> None:
        keep = {self.last(kind, start) for kind in ("voters", "version")}
        self.records = [r for r in self.records if r[0] > start or (r[0], r[2]) in keep]
        self.start = start

    def toggled(self, key: ReplicaKey) -> frozenset[ReplicaKey] | None:
        """The last voter set with ``key`` added or removed: one change; None if that leaves no
        voter or two keys of one id."""
        last = self.last("voters")
        current = frozenset([KEYS[0]]) if last is None else last[1]
        changed = current - {key} if key in current else current | {key}
        ids = [k.id for k in changed]
        return changed if changed and len(set(ids)) == len(ids) else None  # type: ignore[return-value]


def _append(kind: str, arg: object, model: _Model) -> RecordBatch | None:
    if kind == "data":
        return _data_batch(model.end, 1, arg)  # type: ignore[arg-type]
    if kind == "version":
        model.records.append((model.end, "version", arg))
        return kraft_version_batch(model.end, 1, arg, 0)  # type: ignore[arg-type]
    voters = model.toggled(arg)  # type: ignore[arg-type]
    if voters is None:
        return None
    model.records.append((model.end, "voters", voters))
    return voters_batch(model.end, 1, _set(*voters), 0)


def _apply(op: tuple, history: ControlRecordHistory, model: _Model) -> None:
    kind, arg = op
    if kind == "truncate":
        to = model.start + int(arg * (model.end - model.start))
        history.truncate_new_entries(to)
        model.records = [r for r in model.records if r[0] < to]
        model.end = to
    elif kind == "trim":
        start = model.start + int(arg * (model.end - model.start))
        history.truncate_old_entries(start)
        model.trim(start)
    else:
        batch = _append(kind, arg, model)
        if batch is not None:
            history.append_batch(batch)
            model.end = batch.next_offset


def _check(history: ControlRecordHistory, model: _Model) -> None:
    last = model.last("voters")
    assert history.last_voter_set_offset() == (None if last is None else last[0])
    assert history.last_voter_set().voter_keys == (frozenset([ReplicaKey(9)]) if last is None else last[1])
    version = model.last("version")
    assert history.kraft_version() == (0 if version is None else version[1])
    for offset in range(model.start, model.end):
        expected = model.last("voters", offset)
        got = history.voter_set_at(offset)
        assert (None if got is None else got.voter_keys) == (None if expected is None else expected[1]), offset


@examples.MODEL()
@given(_OPS)
def test_history_matches_replay_model(ops: list[tuple]) -> None:
    """After every operation the history answers what a replay of the surviving records gives,
    at every offset from the log start to the end."""
    history, model = ControlRecordHistory(VoterSet.static([9])), _Model()
    for op in ops:
        _apply(op, history, model)
        _check(history, model)


def test_voters_batch_is_one_control_record_of_type_6() -> None:
    batch = voters_batch(5, 3, _set(ReplicaKey(1, DIR_A)), 1234)
    assert batch.is_control and batch.base_offset == 5 and batch.partition_leader_epoch == 3
    assert (batch.first_timestamp, batch.max_timestamp, batch.producer_id) == (1234, 1234, -1)
    (record,) = batch.records
    kind, fields = decode_control(record)
    assert kind == ControlType.KRAFT_VOTERS and fields == _set(ReplicaKey(1, DIR_A)).to_voters_record()


def test_a_voter_set_after_the_bootstrap_checkpoint_need_not_overlap_it() -> None:
    """``VoterSetHistory.addAt`` checks the overlap only against a voter set from the log
    (offset >= 0), not against the bootstrap checkpoint's (offset -1)."""
    a, b, c = (ReplicaKey(i, DIR_A) for i in (1, 2, 3))
    fs = MemoryFS()
    path = write_snapshot(fs, "d", SnapshotId(0, 0), [],
                          header_records=[(ControlType.KRAFT_VOTERS, _set(a).to_voters_record())])
    history = ControlRecordHistory(VoterSet.static([1]))
    history.load_snapshot(read_snapshot(fs, path))
    assert history.last_voter_set_offset() == -1
    history.append_batch(voters_batch(0, 1, _set(b, c), 0))
    assert history.last_voter_set() == _set(b, c)
