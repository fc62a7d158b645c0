"""Every invariant holds on a real state and fails on a deliberately broken copy of it."""

from __future__ import annotations

import copy

import pytest

from kraft.replication.invariants import STATE_INVARIANTS, Ghost
from kraft.replication.messages import Entry
from kraft.replication.protocol import PROTOCOL
from kraft.replication.world import ReplicationWorld


def produce_acked(c: ReplicationWorld, leader: int, *followers: int) -> None:
    """acks=all produce at ``leader``, replicated by ``followers`` (two fetch rounds), answered."""
    c.produce(leader, -1)
    for _ in range(2):
        for f in followers:
            c.fetch(f)
    c.complete()


@pytest.fixture(scope="module")
def good() -> dict:
    c = ReplicationWorld(3)
    produce_acked(c, 1, 2, 3)
    produce_acked(c, 1, 2, 3)
    s = c.state()
    assert len(s["acked"]) == 2 and len(s["exposed"]) == 2
    return s


def broken(s: dict, name: str) -> dict:
    b = copy.deepcopy(s)
    if name == "TypeOK":
        b["highWatermark"][2] = len(b["log"][2]) + 1
    elif name == "LeaderInIsr":
        b["isr"] = frozenset({2, 3})
    elif name == "StrongIsr":
        b["log"][3] = b["log"][3][:1]
    elif name == "NoCommittedRecordLost":
        b["log"][1] = (b["log"][1][0], Entry(0, 99))
        b["highWatermark"] = {k: 0 for k in b["highWatermark"]}  # keep StrongIsr out of the way
    elif name == "ConsistentRead":
        b["exposed"] = b["exposed"] | {(0, 7, 42)}
    elif name == "LogMatchingBelowHW":
        b["log"][2] = (Entry(0, 99),) + b["log"][2][1:]
    elif name == "ReplicationQuorumSuperset":
        b["log"][2] = ()
        b["highWatermark"][2] = 0
    elif name == "MinIsrRecoveryQuorum":
        b["log"][2] = ()
        b["log"][3] = ()
    elif name == "ValidLeaderRecoveryState":
        b["leaderRecoveryState"] = "RECOVERING"
    return b


def test_every_state_invariant_is_declared() -> None:
    declared = {i.name for i in PROTOCOL.invariants if not i.history}
    assert declared == set(STATE_INVARIANTS)


@pytest.mark.parametrize("name", sorted(STATE_INVARIANTS))
def test_invariant_holds_then_fails_on_broken_state(good: dict, name: str) -> None:
    check = STATE_INVARIANTS[name]
    assert check(good) == []
    violations = check(broken(good, name))
    assert violations and all(v.invariant == name for v in violations), violations


def test_high_watermark_monotonic_fails_when_a_leader_lowers_its_hw() -> None:
    c = ReplicationWorld(3)
    produce_acked(c, 1, 2, 3)
    g = Ghost()
    assert g.observe(c.brokers) == []
    c.brokers[1].high_watermark = 0  # deliberately broken: the leader forgets its HW
    [v] = g.observe(c.brokers)
    assert v.invariant == "HighWatermarkMonotonic"
