"""Every invariant fails on a deliberately broken state (and holds on a good one)."""

from __future__ import annotations

import pytest

from kraft.groups import invariants as inv
from kraft.groups.assignors import tp
from kraft.groups.coordinator import GroupConfig, GroupCoordinator, InvalidTransition
from kraft.groups.protocol import PROTOCOL
from kraft.groups.world import GroupWorld
from kraft.groups.messages import Errors, GroupState, OffsetCommit, RebalanceProtocol

T0, T1 = tp("t", 0), tp("t", 1)


def good() -> dict:
    return {
        "groupState": "Stable", "generation": 2, "leader": "m1", "members": frozenset({"m1", "m2"}),
        "assignment": {"m1": frozenset({T0}), "m2": frozenset({T1})},
        "reportedOwned": {"m1": frozenset(), "m2": frozenset()},
        "up": {"c1": True, "c2": True}, "phase": {"c1": "Stable", "c2": "Stable"},
        "memberId": {"c1": "m1", "c2": "m2"}, "consumerGeneration": {"c1": 2, "c2": 2},
        "owned": {"c1": frozenset({T0}), "c2": frozenset({T1})},
        "fencingBreaches": frozenset(), "Partitions": frozenset({T0, T1}),
    }


def test_good_state_passes() -> None:
    assert inv.check_state(good()) == []


def test_state_invariants_are_the_declared_ones_in_order() -> None:
    """``check_state`` runs exactly the declaration's state invariants, in its order (the order
    violations are reported in)."""
    assert inv.STATE_INVARIANTS == tuple(i.check for i in PROTOCOL.invariants if i.check is not None)


@pytest.mark.parametrize("name,breakit", [
    ("NoDoubleOwnership", lambda s: s["owned"].update(c2=frozenset({T0, T1}))),
    ("StableMeansAssigned", lambda s: s["assignment"].update(m2=frozenset())),
    ("StableMeansAssigned", lambda s: s["assignment"].update(m2=frozenset({T0, T1}))),
    ("OwnedWithinAssignment", lambda s: s["owned"].update(c1=frozenset({T0, T1}), c2=frozenset())),
    ("CommitFencing", lambda s: s.update(fencingBreaches=frozenset({("t-0", "c2", "c1")}))),
    ("LeaderIsMember", lambda s: s.update(leader="m9")),
    ("TypeOK", lambda s: s["up"].update(c2=False)),
])
def test_each_invariant_fails_on_a_broken_state(name: str, breakit) -> None:
    s = good()
    breakit(s)
    found = inv.check_state(s)
    assert name in {v.invariant for v in found}, found


def test_action_properties_fail() -> None:
    a, b = good(), good()
    b["generation"] = 1
    assert inv.GenerationMonotonic(a, b)
    assert inv.ValidTransitions([(GroupState.EMPTY, GroupState.STABLE, 0)])
    assert not inv.ValidTransitions([(GroupState.EMPTY, GroupState.PREPARING_REBALANCE, 0)])


def test_coordinator_refuses_invalid_transition() -> None:
    c = GroupCoordinator("g", GroupConfig())
    with pytest.raises(InvalidTransition):
        c._transition(GroupState.STABLE, 0)


def test_offset_commit_checks() -> None:
    w = GroupWorld(GroupConfig(protocol=RebalanceProtocol.EAGER, topics=(("t", 2),)))
    w.start()
    w.settle()
    co = w.coordinator
    c1 = w.consumers["c1"]
    req = OffsetCommit("c1", c1.conn, c1.member_id, None, co.generation, ((T0, 5),))
    assert co.validate_offset_commit(req) == Errors.NONE
    stale = OffsetCommit("c1", c1.conn, c1.member_id, None, co.generation - 1, ((T0, 5),))
    assert co.validate_offset_commit(stale) == Errors.ILLEGAL_GENERATION
    unknown = OffsetCommit("c1", c1.conn, "nobody", None, co.generation, ((T0, 5),))
    assert co.validate_offset_commit(unknown) == Errors.UNKNOWN_MEMBER_ID
    # PreparingRebalance still accepts the current generation (the generation moves at CompleteJoin)
    co._prepare_rebalance(w.now, "test")
    assert co.validate_offset_commit(req) == Errors.NONE


def test_config_rejects_rebalance_timeout_below_session_timeout() -> None:
    with pytest.raises(ValueError, match="rebalance_timeout_ms"):
        GroupConfig(session_timeout_ms=10_000, rebalance_timeout_ms=5_000)
