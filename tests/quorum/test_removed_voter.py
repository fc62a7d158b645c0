"""A voter removed while it was cut off rejoins, as Kafka 4.0's does.

The leader removes voter ``x`` while ``x`` is isolated.  Once healed, ``x`` still counts itself a
voter; the other voters refuse its pre-votes and the leader, whose voter set lacks ``x``, sends it
no BeginQuorumEpoch.  Two mechanisms bring it back (spec ``KRaft.tla``): a lost pre-vote round goes
back to Follower of the leader it knew, else Unattached (KIP-996, ``ProspectiveLoses``,
``KafkaRaftClient.maybeHandleElectionLoss``), and an Unattached voter fetches from the bootstrap
servers and follows the leader an answer names (KAFKA-17030, ``SendAnyVoterFetch`` and
``LearnsLeaderFromFetch``, ``KafkaRaftClient.pollUnattachedAsVoter``).  The fetched VotersRecord
then makes it an observer.
"""

from __future__ import annotations

import random

from kraft.core.step import TICK, Trigger
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.messages import FETCH_FENCED, FETCH_OK, FetchRequest, FetchResponse, VoteRequest
from kraft.quorum.node import QuorumNode
from kraft.quorum.storage import MemoryFS
from kraft.quorum.world import QuorumWorld


def _removed_while_away(new_epoch: bool = False) -> tuple[QuorumWorld, int]:
    """``x`` cut off, then removed; with ``new_epoch`` the others first elect a leader of a later
    epoch, so ``x``'s old leader can only tell it that epoch."""
    w = QuorumWorld(3, QuorumConfig())
    w.run(3000)
    lid = w.leader()
    assert lid is not None
    x = next(i for i in w.ids if i != lid)
    w.isolate(x)
    w.run(500)
    if new_epoch:
        w.resign(lid)
        w.run(3000)
        assert w.nodes[w.leader()].current_epoch > w.nodes[x].current_epoch
        lid = w.leader()
    assert w.change_voters(lid, x, False) is None
    w.run(2000)
    assert x not in w.nodes[lid].voters and w.nodes[x].is_voter
    assert w.stranded() == {x}
    return w, x


def _rejoined(w: QuorumWorld, x: int) -> None:
    assert w.settle(30_000), w.describe()
    node = w.nodes[x]
    assert not node.is_voter and node.role is Role.FOLLOWER and node.leader_id == w.leader()
    assert w.stranded() == frozenset()


def test_a_voter_removed_while_away_rejoins_as_an_observer() -> None:
    w, x = _removed_while_away()
    _rejoined(w, x)


def test_a_voter_removed_in_a_later_epoch_rejoins_as_an_observer() -> None:
    w, x = _removed_while_away(new_epoch=True)
    _rejoined(w, x)


def test_nothing_is_stranded_in_a_healthy_quorum() -> None:
    w = QuorumWorld(3, QuorumConfig())
    assert w.settle(30_000)
    assert w.stranded() == frozenset()


def _node(**config: bool) -> QuorumNode:
    return QuorumNode(1, (1, 2, 3), QuorumConfig(**config), MemoryFS(), rng=random.Random(0))


def test_an_unattached_voter_fetches_from_a_bootstrap_server_and_follows_the_named_leader() -> None:
    node = _node()
    (req,) = node.step(TICK, 0).messages
    assert isinstance(req, FetchRequest) and req.dest in (2, 3) and node.role is Role.UNATTACHED
    node.step(FetchResponse(req.dest, 1, 4, FETCH_FENCED, (), 0, 0, 0, 0, 0, leader=3), 1)
    assert (node.role, node.leader_id, node.current_epoch) == (Role.FOLLOWER, 3, 4)


def test_a_voter_that_lost_its_disk_waits_for_the_leader_itself() -> None:
    """It fetches from a bootstrap voter like any Unattached one and follows the leader the answer
    names, but it does not vote or campaign until the leader itself answers it (the spec's
    LearnsLeaderFromFetch, then HandleFetchResponse from the leader it follows)."""
    node = QuorumNode(1, (1, 2, 3), QuorumConfig(), MemoryFS(), rng=random.Random(0), disk_lost=True)
    (req,) = node.step(TICK, 0).messages
    assert isinstance(req, FetchRequest) and req.dest in (2, 3) and node.election_deadline is None
    node.step(FetchResponse(2, 1, 4, FETCH_FENCED, (), 0, 0, 0, 0, 0, leader=3), 1)
    assert (node.role, node.leader_id, node.current_epoch, node.awaiting_leader) == (Role.FOLLOWER, 3, 4, True)
    node.step(TICK, 10**9)  # its fetch timer expires: no election while it awaits
    assert node.role is Role.FOLLOWER and not node.step(Trigger(QuorumNode.timeout), 10**9).messages
    node.step(FetchResponse(3, 1, 4, FETCH_OK, (), 0, 0, 0, 0, 0, leader=3), 10**9)
    assert (node.role, node.leader_id, node.awaiting_leader) == (Role.FOLLOWER, 3, False)


def test_a_lost_pre_vote_round_goes_back_to_unattached_keeping_the_vote() -> None:
    node = _node(PreVote=True)
    node.step(VoteRequest(2, 1, 1, 0, 0, False), 0)  # votes for 2 in epoch 1
    node.step(Trigger(QuorumNode.timeout), 1)
    assert node.role is Role.PROSPECTIVE
    node.step(Trigger(QuorumNode.timeout), 2)
    assert (node.role, node.current_epoch, node.voted_for, node.leader_id) == (Role.UNATTACHED, 1, 2, None)


def test_a_lost_pre_vote_round_goes_back_to_the_known_leader() -> None:
    node = _node(PreVote=True)
    node.step(FetchResponse(2, 1, 1, FETCH_FENCED, (), 0, 0, 0, 0, 0, leader=2), 0)
    assert node.role is Role.FOLLOWER
    node.step(Trigger(QuorumNode.timeout), 1)
    assert node.role is Role.PROSPECTIVE and node.leader_id == 2
    node.step(Trigger(QuorumNode.timeout), 2)
    assert (node.role, node.current_epoch, node.leader_id) == (Role.FOLLOWER, 1, 2)
