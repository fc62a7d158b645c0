"""A voter removed while it was cut off: the gap the model still has, pinned both ways.

The leader removes voter ``x`` while ``x`` is isolated.  Once healed, ``x`` still counts itself a
voter and campaigns; the other voters reject its pre-votes and the leader, whose voter set lacks
``x``, never sends it BeginQuorumEpoch.  Kafka 4.0 gets it back: an Unattached voter fetches from
the bootstrap servers and follows the leader their answer names (KAFKA-17030,
``KafkaRaftClient.pollUnattached``), and a lost pre-vote round falls back to Unattached or
Follower (KIP-996, ``KafkaRaftClient.maybeHandleElectionLoss``).  This model has neither yet: the
strict xfail turns into a failure the day it does, and ``QuorumWorld.stranded`` names exactly the
voters the Hypothesis teardown may leave behind for that reason.
"""

from __future__ import annotations

import pytest

from kraft.quorum.config import QuorumConfig
from kraft.quorum.node import Role
from kraft.quorum.world import QuorumWorld


def _removed_while_away() -> tuple[QuorumWorld, int]:
    w = QuorumWorld(3, QuorumConfig())
    w.run(3000)
    lid = w.leader()
    assert lid is not None
    x = next(i for i in w.ids if i != lid)
    w.isolate(x)
    w.run(500)
    assert w.change_voters(lid, x, False) is None
    w.run(2000)
    assert x not in w.nodes[lid].voters and w.nodes[x].is_voter
    return w, x


@pytest.mark.xfail(strict=True, reason="KAFKA-17030 and KIP-996's lost pre-vote are not modelled")
def test_a_voter_removed_while_away_rejoins_as_an_observer() -> None:
    w, x = _removed_while_away()
    assert w.settle(30_000), w.describe()


def test_stranded_names_only_the_removed_voter() -> None:
    w, x = _removed_while_away()
    assert not w.settle(30_000)
    assert w.stranded() == {x}
    assert w.nodes[x].role is Role.PROSPECTIVE
    assert not w.converged()
    assert w.converged(ignore=w.stranded())


def test_nothing_is_stranded_in_a_healthy_quorum() -> None:
    w = QuorumWorld(3, QuorumConfig())
    assert w.settle(30_000)
    assert w.stranded() == frozenset()
