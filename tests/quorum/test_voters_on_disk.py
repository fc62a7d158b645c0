"""Dynamic voters (KIP-853) on disk: a VotersRecord is a control batch of type 6 that reads back as
the voter set it sets, a truncation undoes it, and a snapshot keeps the voter set at its end in its
header batch (a snapshot file without one holds the bootstrap voters); both keep each voter's
endpoints."""

from __future__ import annotations

import attrs

from kraft.log import MemoryFS
from kraft.log.control import ControlType, decode_control
from kraft.log.snapshot import SnapshotId, write_snapshot
from kraft.quorum.messages import VOTERS, QuorumSnapshot
from kraft.quorum.storage import QuorumStorage, voter_nodes_of
from kraft.quorum.voters import VoterNode

DIR = "/kraft/node-1"
BOOTSTRAP = (1, 2, 3)


def _reopen(fs: MemoryFS) -> QuorumStorage:
    fs.crash()
    return QuorumStorage.open(fs, DIR, BOOTSTRAP)


def _log_adding_4() -> tuple[MemoryFS, QuorumStorage]:
    """LeaderChange, the VotersRecord {1,2,3,4}, the value 7; flushed."""
    fs = MemoryFS()
    st = QuorumStorage.open(fs, DIR, BOOTSTRAP)
    st.append_leader_change(1, 1, BOOTSTRAP, 0)
    st.append_voters(1, (4, 1, 2, 3))
    st.append_value(1, 7)
    st.flush()
    return fs, st


def test_a_voters_record_is_a_type_6_control_batch_read_back_as_its_voters() -> None:
    fs, st = _log_adding_4()
    batch = list(st.log.read(1))[0]
    record = batch.records[0]
    kind, _, fields = decode_control(record.key, record.value)
    assert batch.is_control and kind == ControlType.KRAFT_VOTERS.name
    assert [v["voterId"] for v in fields["voters"]] == [1, 2, 3, 4]
    again = _reopen(fs)
    assert [(e.value, e.voters) for e in again.entries] == [("LeaderChange", ()), (VOTERS, (1, 2, 3, 4)), (7, ())]
    assert again.voter_offsets == [1] and again.voters_at(2) == (1, 2, 3, 4) and again.voters_at(1) is None


def test_a_truncation_undoes_a_voter_change() -> None:
    fs = MemoryFS()
    st = QuorumStorage.open(fs, DIR, BOOTSTRAP)
    st.append_leader_change(1, 1, BOOTSTRAP, 0)
    st.append_voters(1, (1, 2))
    st.truncate_to(1)
    assert st.voter_offsets == [] and st.voters_at(st.end_offset) is None


def test_a_snapshot_keeps_its_voters_and_one_without_holds_the_bootstrap_set() -> None:
    fs, st = _log_adding_4()
    st.add_snapshot(QuorumSnapshot(3, 1, st.snapshot_records(3), (1, 2, 3, 4)))
    write_snapshot(fs, DIR, SnapshotId(2, 1), [])  # as a kraft.version 0 writer: no VotersRecord
    again = _reopen(fs)
    assert again.snapshots[3].voters == (1, 2, 3, 4)
    assert again.snapshots[3].values == (7,)
    assert again.snapshots[2].voters == BOOTSTRAP


def _moved(port: int) -> tuple[VoterNode, ...]:
    """The default nodes of the bootstrap voters, voter 2 listening on ``port``."""
    return tuple(attrs.evolve(n, endpoints=(attrs.evolve(n.endpoints[0], port=port),)) if n.key.id == 2 else n
                 for n in voter_nodes_of(BOOTSTRAP))


def test_a_voters_record_and_a_snapshot_keep_each_voters_endpoints() -> None:
    fs = MemoryFS()
    st = QuorumStorage.open(fs, DIR, BOOTSTRAP)
    st.append_leader_change(1, 1, BOOTSTRAP, 0)
    st.append_voters(1, BOOTSTRAP, 0, _moved(19093))
    st.append_value(1, 7)
    st.flush()
    st.add_snapshot(QuorumSnapshot(3, 1, st.snapshot_records(3), BOOTSTRAP, _moved(19093)))
    again = _reopen(fs)
    assert again.entry(1).nodes == _moved(19093) and again.entry(1).voters == BOOTSTRAP
    assert again.snapshots[3].nodes == _moved(19093)
    assert _moved(19093) != voter_nodes_of(BOOTSTRAP)  # the port is what differs
