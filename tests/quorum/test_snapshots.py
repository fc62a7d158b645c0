"""Snapshots (KIP-630) in the quorum: ``.checkpoint`` files and the log start offset on disk, their
recovery after a crash, the leader's validation of a fetch, and a follower catching up through
FetchSnapshot with its state machine loaded from the snapshot."""

from __future__ import annotations

import random

from kraft.log import MemoryFS
from kraft.log.snapshot import read_snapshot
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.messages import FETCH_DIVERGING, FETCH_OK, FETCH_SNAPSHOT, LEADER_CHANGE, Entry, FetchRequest
from kraft.quorum.messages import FetchSnapshotResponse, QuorumSnapshot, SnapshotRecord
from kraft.quorum.node import QuorumNode
from kraft.quorum.storage import QuorumStorage
from kraft.quorum.world import QuorumWorld

DIR = "/kraft/node-1"


def _storage_with(values: list[int]) -> tuple[MemoryFS, QuorumStorage]:
    fs = MemoryFS()
    st = QuorumStorage.open(fs, DIR)
    st.append_leader_change(1, 1, (1,), 0)
    for v in values:
        st.append_value(1, v)
    st.flush()
    return fs, st


def _reopen(fs: MemoryFS) -> QuorumStorage:
    fs.crash()
    return QuorumStorage.open(fs, DIR)


def test_snapshot_file_and_log_start_survive_a_crash() -> None:
    fs, st = _storage_with([10, 11, 12, 13])
    snap = QuorumSnapshot(3, 1, st.snapshot_records(3), (1, 2, 3))
    path = st.add_snapshot(snap)
    assert path == f"{DIR}/00000000000000000003-0000000001.checkpoint"
    assert [(r.key, r.value) for r in read_snapshot(fs, path).records] == [(b"1", b"10"), (b"2", b"11")]
    st.delete_before(3)
    assert (st.log_start_offset, st.end_offset, st.entries) == (3, 5, [Entry(1, 12), Entry(1, 13)])
    assert fs.read_bytes(f"{DIR}/log-start-offset-checkpoint") == b"0\n1\n__cluster_metadata 0 3\n"
    again = _reopen(fs)
    assert (again.log_start_offset, again.end_offset, again.entries) == (3, 5, [Entry(1, 12), Entry(1, 13)])
    assert again.snapshots == {3: QuorumSnapshot(3, 1, (SnapshotRecord(1, 10), SnapshotRecord(2, 11)), (1, 2, 3))}
    assert again.last_epoch == 1 and again.end_offset_for_epoch(0) == (1, 3)


def test_moving_the_log_start_forgets_older_snapshots_and_a_later_one_builds_on_the_first() -> None:
    fs, st = _storage_with([10, 11, 12, 13])
    st.add_snapshot(QuorumSnapshot(2, 1, st.snapshot_records(2), (1, 2, 3)))
    st.delete_before(2)
    st.add_snapshot(QuorumSnapshot(4, 1, st.snapshot_records(4), (1, 2, 3)))
    assert st.snapshots[4].values == (10, 11, 12)
    st.delete_before(4)
    assert sorted(st.snapshots) == [4]
    assert [n for n in fs.listdir(DIR) if "checkpoint" in n and "offset" not in n] == \
        ["00000000000000000004-0000000001.checkpoint"]


def test_installing_a_snapshot_empties_the_log_and_appends_continue_after_it() -> None:
    fs, st = _storage_with([10])
    snap = QuorumSnapshot(7, 3, tuple(SnapshotRecord(o, 100 + o) for o in (1, 2, 4, 5, 6)), (1, 2, 3))
    st.add_snapshot(snap)
    st.install_snapshot(snap)
    assert (st.log_start_offset, st.end_offset, st.flushed_offset, st.last_epoch) == (7, 7, 7, 3)
    st.append_value(4, 99)
    st.flush()
    again = _reopen(fs)
    assert (again.log_start_offset, again.entries, again.epoch_before(7)) == (7, [Entry(4, 99)], 3)


def test_a_log_start_past_the_durable_log_starts_it_empty_there() -> None:
    fs, st = _storage_with([10, 11, 12])
    st.add_snapshot(QuorumSnapshot(3, 1, st.snapshot_records(3), (1, 2, 3)))
    st.append_value(1, 13)        # not flushed: lost in the crash
    st.delete_before(3)
    st.log.truncate_to(3)         # as if the crash had kept only what precedes the log start
    again = _reopen(fs)
    assert (again.log_start_offset, again.end_offset, again.entries) == (3, 3, [])


def _leader_with_snapshot() -> QuorumNode:
    """Leader of epoch 2 whose log starts at 3 (snapshot (3, 1)) and ends at 5."""
    fs = MemoryFS()
    node = QuorumNode(1, (1, 2, 3), QuorumConfig(), fs, rng=random.Random(0))
    st = node.storage
    st.append_leader_change(1, 1, node.voters, 0)
    st.append_value(1, 10)
    st.append_value(1, 11)
    st.append_leader_change(2, 1, node.voters, 0)
    st.append_value(2, 12)
    st.flush()
    node.role, node.current_epoch, node.leader_id, node.high_watermark = Role.LEADER, 2, 1, 5
    node.epoch_start_offset = 3
    st.add_snapshot(QuorumSnapshot(3, 1, st.snapshot_records(3), (1, 2, 3)))
    st.delete_before(3)
    return node


def _answer(node: QuorumNode, offset: int, epoch: int):
    ready = node.step(FetchRequest(2, 1, 2, offset, epoch), 0)
    (resp,) = ready.messages
    return resp


def test_leader_validates_a_fetch_as_validateOffsetAndEpoch_does() -> None:
    node = _leader_with_snapshot()
    below = _answer(node, 1, 1)
    assert (below.result, below.snapshotEnd, below.snapshotEpoch, below.entries) == (FETCH_SNAPSHOT, 3, 1, ())
    assert _answer(node, 3, 0).result == FETCH_SNAPSHOT   # at the log start in another epoch
    assert _answer(node, 4, 0).result == FETCH_SNAPSHOT   # an epoch older than the earliest snapshot
    ok = _answer(node, 3, 1)
    assert (ok.result, ok.entries) == (FETCH_OK, (Entry(2, LEADER_CHANGE), Entry(2, 12)))
    diverging = _answer(node, 5, 1)
    assert (diverging.result, diverging.divergingEpoch, diverging.divergingEndOffset) == (FETCH_DIVERGING, 1, 3)


def test_without_the_snapshot_redirect_a_fetch_below_the_log_start_diverges_at_it() -> None:
    node = _leader_with_snapshot()
    node.config = QuorumConfig(NoSnapshotRedirectBelowLogStart=True)
    resp = _answer(node, 1, 1)
    assert (resp.result, resp.divergingEpoch, resp.divergingEndOffset) == (FETCH_DIVERGING, 1, 3)


def _far_behind_world() -> QuorumWorld:
    """Three voters; voter 3 is cut off while the leader commits, snapshots and cleans its log."""
    w = QuorumWorld(3, seed=1)
    assert w.settle()
    w.isolate(3)
    for _ in range(8):
        w.append()
        w.run(200, append_every_ms=0)
    lid = w.leader()
    ld = w.nodes[lid]
    hwm = ld.high_watermark
    assert w.trigger(lid, QuorumNode.take_snapshot, k=hwm).steps
    assert w.trigger(lid, QuorumNode.delete_before_snapshot, o=hwm).steps
    assert ld.storage.log_start_offset == hwm > w.nodes[3].storage.end_offset
    return w


def test_a_far_behind_follower_catches_up_through_a_snapshot() -> None:
    w = _far_behind_world()
    lid = w.leader()
    assert w.settle()
    follower, leader = w.nodes[3], w.nodes[lid]
    assert follower.storage.log_start_offset == leader.storage.log_start_offset
    assert follower.storage.snapshots == leader.storage.snapshots
    assert follower.storage.entries == leader.storage.entries
    # its state machine was loaded from the snapshot, then replayed the log
    assert w.applied[3].values() == w.applied[lid].values()


def test_a_restarted_voter_loads_its_snapshot_then_replays_its_log() -> None:
    w = _far_behind_world()
    lid = w.leader()
    assert w.settle()
    before = w.applied[lid].values()
    w.restart(lid)
    assert w.settle()
    assert w.applied[lid].values()[:len(before)] == before


def test_snapshot_and_clean_are_refused_outside_their_bounds() -> None:
    w = QuorumWorld(3, seed=1)
    assert w.settle()
    lid = w.leader()
    hwm = w.nodes[lid].high_watermark
    assert not w.trigger(lid, QuorumNode.take_snapshot, k=hwm + 1).steps        # beyond the HW
    assert not w.trigger(lid, QuorumNode.delete_before_snapshot, o=hwm).steps   # no snapshot there
    assert w.trigger(lid, QuorumNode.take_snapshot, k=hwm).steps
    assert not w.trigger(lid, QuorumNode.take_snapshot, k=hwm).steps            # not past the latest


def test_a_late_snapshot_below_the_log_start_is_ignored() -> None:
    """Two FetchSnapshot answers arrive out of order: the newer one is installed, the older one,
    ending below the new log start, must not be added (SnapshotAtLogStart)."""
    node = QuorumNode(2, (1, 2, 3), QuorumConfig(), MemoryFS(), rng=random.Random(0))
    node.role, node.current_epoch, node.leader_id = Role.FOLLOWER, 1, 1
    newer = FetchSnapshotResponse(1, 2, 1, FETCH_OK, 9, 1, (SnapshotRecord(1, 7),))
    older = FetchSnapshotResponse(1, 2, 1, FETCH_OK, 5, 1, (SnapshotRecord(1, 7),))
    node.step(newer, 0)
    node.step(older, 0)
    assert (node.storage.log_start_offset, sorted(node.storage.snapshots)) == (9, [9])
