"""A metadata operation of N records is one batch at N offsets on every node of the quorum.

Kafka's ``QuorumController`` appends an operation's records with ``RaftClient.scheduleAtomicAppend``:
one record batch, one offset per record (``BatchAccumulator``); a Fetch returns whole batches, a
truncation removes a batch that straddles it (``LogSegment.truncateTo``).  The simulator-level
checks (a follower never holds part of a batch, a controller applies whole batches) are in
tests/controller/test_metadata_quorum.py.
"""

from __future__ import annotations

import random
import struct

from kraft.log import MemoryFS, RecordBatch
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.messages import (
    FETCH_OK,
    BeginQuorumEpochRequest,
    Entry,
    FetchRequest,
    FetchResponse,
    batch_boundary,
    whole_batches,
)
from kraft.quorum.node import QuorumNode
from kraft.quorum.storage import QuorumStorage
from kraft.quorum.world import QuorumWorld

VALUES = (b'{"a":1}', b'{"b":2}', b'{"c":3}')

# DefaultRecordBatch's header (clients/.../record/DefaultRecordBatch.java): baseOffset int64,
# batchLength int32, partitionLeaderEpoch int32, magic int8, crc uint32, attributes int16,
# lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64, producerId int64,
# producerEpoch int16, baseSequence int32, recordsCount int32
HEADER = struct.Struct(">qiibIhiqqqhii")


def test_an_operation_is_one_batch_of_n_records_at_n_offsets() -> None:
    fs = MemoryFS()
    st = QuorumStorage.open(fs, "/m")
    st.append_value(1, 7)
    last = st.append_value(1, VALUES, timestamp=5)
    st.flush()
    assert last == 3
    raw = fs.read_bytes(st.log.segments[0])
    first, end = RecordBatch.decode(raw, 0)
    base, length, epoch, magic, _crc, attributes, last_delta, *_, count = HEADER.unpack_from(raw, end)
    assert (base, epoch, magic, attributes, last_delta, count) == (1, 1, 2, 0, 2, 3)
    assert end + 12 + length == len(raw)   # the operation's batch is the segment's last bytes
    batch, _ = RecordBatch.decode(raw, end)
    assert [(r.offset_delta, r.key, r.value) for r in batch.records] == [(i, None, v) for i, v in enumerate(VALUES)]
    assert first.records[0].value == b"7"
    again = QuorumStorage.open(fs, "/m")   # the entries as read back from the segment
    assert again.entries == [Entry(1, 7), Entry(1, VALUES[0], False), Entry(1, VALUES[1], False), Entry(1, VALUES[2])]


def test_a_truncation_inside_a_batch_removes_the_whole_batch() -> None:
    st = QuorumStorage.open(MemoryFS(), "/m")
    st.append_value(1, 7)
    st.append_value(1, VALUES)
    assert st.truncate_to(2) == 1
    assert st.entries == [Entry(1, 7)] and st.log.end_offset == 1
    assert batch_boundary([Entry(1, 7), Entry(1, b"x", False), Entry(1, b"y")], 2) == 1


def test_a_fetch_response_ending_inside_a_batch_appends_only_whole_batches() -> None:
    cut = (Entry(1, 7), Entry(1, VALUES[0], False), Entry(1, VALUES[1], False))
    assert whole_batches(cut) == (Entry(1, 7),)
    follower = QuorumNode(2, (1, 2, 3), QuorumConfig(), MemoryFS(), rng=random.Random(0))
    follower.step(BeginQuorumEpochRequest(1, 2, 1), 0)
    assert follower.role is Role.FOLLOWER
    follower.step(FetchResponse(1, 2, 1, FETCH_OK, cut, 0, 0, 0, 0, 0), 0)
    assert follower.storage.entries == [Entry(1, 7)]


def test_a_batch_is_replicated_whole_past_the_fetch_entry_limit() -> None:
    w = QuorumWorld(3, QuorumConfig(max_fetch_entries=1))
    assert w.settle()
    lid = w.leader()
    assert lid is not None
    start = w.nodes[lid].storage.end_offset
    assert w.trigger(lid, QuorumNode.client_append, v=VALUES).reply == start + 2   # its last offset
    r = w.nodes[lid].step(FetchRequest(2 if lid != 2 else 3, lid, w.nodes[lid].current_epoch, start,
                                       w.nodes[lid].storage.last_epoch), w.now)
    (resp,) = r.messages
    assert [e.value for e in resp.entries] == list(VALUES)   # three entries past a limit of one
    assert w.settle()
    for n in w.nodes.values():
        assert [e.value for e in n.storage.entries[start:]] == list(VALUES)
        (batch,) = n.storage.log.read(start)
        assert (batch.base_offset, batch.last_offset_delta, len(batch.records)) == (start, 2, 3)
        assert n.high_watermark == start + 3
