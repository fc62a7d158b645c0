"""Unit tests of one voter: persistence order, restart roles, crash loss, fetch validation."""

from __future__ import annotations

import json
import random

from kraft.log import Log
from kraft.quorum.world import QuorumWorld
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.messages import (FETCH_DIVERGING, EndQuorumEpochRequest, FetchRequest, FetchResponse, VoteRequest,
                                   VoteResponse)
from kraft.core.step import TICK, Trigger
from kraft.quorum.node import QuorumNode
from kraft.quorum.storage import MemoryFS


def _elected(voters: int = 3) -> QuorumWorld:
    c = QuorumWorld(voters)
    assert c.settle()
    return c


def test_vote_is_durable_before_the_response() -> None:
    fs = MemoryFS()
    node = QuorumNode(2, (1, 2, 3), QuorumConfig(), fs, rng=random.Random(0))
    (resp,) = node.step(VoteRequest(1, 2, 1, 0, 0, False), 0).messages
    assert isinstance(resp, VoteResponse) and resp.granted
    fs.crash()  # power loss right after the response left
    doc = json.loads(fs.read_bytes("/kraft/node-2/quorum-state"))
    assert doc["leaderEpoch"] == 1 and doc["votedId"] == 1
    node.step(Trigger(QuorumNode.restart), 0)
    assert node.voted_for == 1 and node.current_epoch == 1
    assert not node.step(VoteRequest(3, 2, 1, 0, 0, False), 0).messages[0].granted  # no second vote in epoch 1


def test_forget_vote_variant_loses_it() -> None:
    fs = MemoryFS()
    node = QuorumNode(2, (1, 2, 3), QuorumConfig(ForgetVoteOnRestart=True), fs, rng=random.Random(0))
    node.step(VoteRequest(1, 2, 1, 0, 0, False), 0)
    fs.crash()
    node.step(Trigger(QuorumNode.restart), 0)
    assert node.step(VoteRequest(3, 2, 1, 0, 0, False), 0).messages[0].granted


def test_log_is_real_record_batches_with_leader_change_first() -> None:
    c = _elected()
    for _ in range(3):
        c.append()
    assert c.settle()
    lid = c.leader()
    log, _ = Log.open(c.fs[lid], c.nodes[lid].directory)
    batches = log.read(0)
    assert batches[0].is_control and batches[0].partition_leader_epoch == c.nodes[lid].current_epoch
    assert [b.records[0].value for b in batches[1:4]] == [b"1", b"2", b"3"]


def test_restarted_leader_comes_back_resigned_and_unflushed_data_is_lost() -> None:
    c = _elected()
    lid = c.leader()
    node = c.nodes[lid]
    flushed = node.storage.flushed_offset
    assert node.step(Trigger(QuorumNode.client_append, {"v": 99}), c.now).reply == flushed  # not flushed yet
    assert node.storage.end_offset == flushed + 1
    c.restart(lid)
    assert node.role is Role.RESIGNED and node.storage.end_offset == flushed
    c.check()
    assert c.settle()


def test_diverging_fetch_truncates_the_follower() -> None:
    c = _elected()
    lid = c.leader()
    leader = c.nodes[lid]
    epoch = leader.current_epoch
    # a stale entry of an older epoch the leader never had
    fid = next(i for i in c.ids if i != lid)
    follower = c.nodes[fid]
    (resp,) = leader.step(FetchRequest(fid, lid, epoch, follower.storage.end_offset + 3, epoch), c.now).messages
    assert isinstance(resp, FetchResponse) and resp.result == FETCH_DIVERGING
    assert resp.divergingEpoch == epoch and resp.divergingEndOffset == leader.storage.end_offset


def test_check_quorum_resign_when_followers_are_gone() -> None:
    c = _elected()
    lid = c.leader()
    c.isolate(lid)
    c.advance(c.config.check_quorum_timeout_ms + 10)
    c.advance(10)
    assert c.nodes[lid].role is Role.RESIGNED


def test_check_quorum_resignation_tells_the_other_voters() -> None:
    """Kafka's pollLeader resigns on an expired check-quorum timer through the same
    transitionToResigned(preferred successors) as a requested resignation, so the Resigned node
    sends EndQuorumEpoch to every other voter (what the partition lets through arrives)."""
    c = _elected()
    lid = c.leader()
    node = c.nodes[lid]
    sent = node.step(Trigger(QuorumNode.check_quorum_resign), c.now).messages
    assert node.role is Role.RESIGNED
    assert sorted((m.dest, m.epoch) for m in sent if isinstance(m, EndQuorumEpochRequest)) == \
        sorted((v, node.current_epoch) for v in c.nodes if v != lid)


def test_disk_lost_voter_does_not_campaign_and_remembers_it_across_a_crash() -> None:
    """A voter back from a disk loss neither votes nor starts an election, also after a vote
    request moved it to a higher epoch, and an ordinary crash before it found a leader does not make
    it forget (spec: awaitingLeader is persisted; Timeout needs ~awaitingLeader[n]). It only
    fetches from the bootstrap voters (SendAnyVoterFetch)."""
    fs = MemoryFS()
    node = QuorumNode(2, (1, 2, 3), QuorumConfig(), fs, rng=random.Random(0), disk_lost=True)
    assert node.awaiting_leader and node.election_deadline is None
    (resp,) = node.step(VoteRequest(1, 2, 3, 0, 0, False), 0).messages  # moves it to epoch 3, refused
    assert node.current_epoch == 3 and not resp.granted
    sent = node.step(TICK, 10**9).messages  # no election timer: a bootstrap fetch only
    assert sent and all(isinstance(m, FetchRequest) for m in sent) and node.election_deadline is None
    assert not node.step(Trigger(QuorumNode.timeout), 0).messages
    assert node.role is Role.UNATTACHED
    fs.crash()
    node.step(Trigger(QuorumNode.restart), 0)  # an ordinary crash: the flag is in the quorum-state file
    assert node.awaiting_leader and node.current_epoch == 3 and node.election_deadline is None
    assert not node.step(VoteRequest(3, 2, 3, 0, 0, True), 0).messages[0].granted
    from kraft.quorum.messages import BeginQuorumEpochRequest
    node.step(BeginQuorumEpochRequest(1, 2, 3), 0)
    assert node.role is Role.FOLLOWER and not node.awaiting_leader
    fs.crash()
    node.step(Trigger(QuorumNode.restart), 0)
    assert not node.awaiting_leader and node.role is Role.FOLLOWER

