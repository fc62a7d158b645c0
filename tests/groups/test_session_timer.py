"""The coordinator restarts a member's session timer when it answers the member's JoinGroup
(GroupCoordinator.onCompleteJoin) and when it sends the member's assignment
(GroupCoordinator.propagateAssignment), both via completeAndScheduleNextHeartbeatExpiration: a
member whose JoinGroup or SyncGroup waited at the coordinator is not expired while the answer is
still on its way."""

from __future__ import annotations

from kraft.core.step import TICK
from kraft.groups.coordinator import GroupConfig, GroupCoordinator
from kraft.groups.messages import (Errors, GroupState, JoinGroup, JoinGroupResponse, SyncGroup,
                                   SyncGroupResponse)

SESSION = 10_000


def join(co: GroupCoordinator, client: str, now: int, member: str | None = None) -> list:
    return list(co.step(JoinGroup(client, 1, member, None, frozenset()), now).messages)


def member_id(co: GroupCoordinator, client: str, now: int) -> str:
    (r,) = join(co, client, now)
    assert r.error == Errors.MEMBER_ID_REQUIRED
    return r.member


def stable_pair(co: GroupCoordinator) -> tuple[str, str]:
    """c1 and c2 in generation 1, Stable, at t=0."""
    a, b = member_id(co, "c1", 0), member_id(co, "c2", 0)
    join(co, "c1", 0, a)  # c1 alone completes generation 1
    assert co.generation == 1
    join(co, "c2", 0, b)  # a new member: rebalance
    out = join(co, "c1", 0, a)
    assert co.generation == 2 and co.state == GroupState.COMPLETING_REBALANCE and len(out) == 2
    sync(co, co.leader, 0, {a: frozenset(), b: frozenset()})
    follower = b if co.leader == a else a
    sync(co, follower, 0)
    assert co.state == GroupState.STABLE
    return co.leader, follower


def sync(co: GroupCoordinator, mid: str, now: int, assignment: dict | None = None) -> list:
    client = co.members[mid].client
    return list(co.step(SyncGroup(client, 1, mid, None, co.generation,
                                  tuple(sorted((assignment or {}).items()))), now).messages)


def test_join_response_restarts_the_session_timer() -> None:
    co = GroupCoordinator("g", GroupConfig(session_timeout_ms=SESSION))
    leader, follower = stable_pair(co)
    join(co, co.members[follower].client, 100, follower)  # rebalance; the follower waits
    out = join(co, co.members[leader].client, 9_000, leader)  # the leader rejoins late
    assert [type(m) for m in out] == [JoinGroupResponse, JoinGroupResponse]
    assert co.members[follower].last_heard == 9_000
    assert not co.step(TICK, 100 + SESSION + 1) and follower in co.members  # not expired


def test_assignment_restarts_the_session_timer_of_parked_followers() -> None:
    co = GroupCoordinator("g", GroupConfig(session_timeout_ms=SESSION))
    leader, follower = stable_pair(co)
    join(co, co.members[follower].client, 100, follower)
    join(co, co.members[leader].client, 100, leader)
    assert co.state == GroupState.COMPLETING_REBALANCE
    assert sync(co, follower, 500) == []  # parked
    out = sync(co, leader, 10_400, {leader: frozenset(), follower: frozenset()})
    assert [type(m) for m in out] == [SyncGroupResponse, SyncGroupResponse]
    assert co.members[follower].last_heard == 10_400
    assert not co.step(TICK, 500 + SESSION + 1) and follower in co.members  # not expired
    assert co.state == GroupState.STABLE
