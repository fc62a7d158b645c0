"""One projection per spec variable: the spec's view of the implementation's state.

``project(coordinator, consumers, fencing_breaches)`` returns ``{spec variable: value}`` with
partitions as ``TopicPartition`` and member ids as the implementation's strings. The
invariants (:mod:`kraft.groups.invariants`) are written against this dict only, so the
Hypothesis suite, the simulator and a trace checker share them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraft.groups.consumer import GroupConsumer
from kraft.groups.coordinator import GroupCoordinator


def groupState(c: GroupCoordinator) -> str:  # noqa: N802 - spec names
    return c.state.value


def generation(c: GroupCoordinator) -> int:
    return c.generation


def leader(c: GroupCoordinator) -> str | None:
    return c.leader


def members(c: GroupCoordinator) -> frozenset[str]:
    return frozenset(c.members)


def staticMembers(c: GroupCoordinator) -> dict[str, str]:  # noqa: N802
    return dict(c.static_members)


def pending(c: GroupCoordinator) -> frozenset[str]:
    return frozenset(c.pending)


def awaitingJoin(c: GroupCoordinator) -> dict[str, dict[str, Any]]:  # noqa: N802
    return {m: {"client": cl, "conn": cn} for m, (cl, cn, _corr) in c.awaiting_join.items()}


def reportedOwned(c: GroupCoordinator) -> dict[str, frozenset]:  # noqa: N802
    return {m: md.reported_owned for m, md in c.members.items()}


def assignment(c: GroupCoordinator) -> dict[str, frozenset]:
    return {m: md.assignment for m, md in c.members.items()}


def up(cs: Mapping[str, GroupConsumer]) -> dict[str, bool]:
    return {k: v.up for k, v in cs.items()}


def phase(cs: Mapping[str, GroupConsumer]) -> dict[str, str]:
    return {k: v.phase.value for k, v in cs.items()}


def memberId(cs: Mapping[str, GroupConsumer]) -> dict[str, str | None]:  # noqa: N802
    return {k: v.member_id for k, v in cs.items()}


def consumerGeneration(cs: Mapping[str, GroupConsumer]) -> dict[str, int]:  # noqa: N802
    return {k: v.generation for k, v in cs.items()}


def owned(cs: Mapping[str, GroupConsumer]) -> dict[str, frozenset]:
    return {k: v.owned for k, v in cs.items()}


def conn(cs: Mapping[str, GroupConsumer]) -> dict[str, int]:
    return {k: v.conn for k, v in cs.items()}


COORDINATOR_VARS = {"groupState": groupState, "generation": generation, "leader": leader,
                    "members": members, "staticMembers": staticMembers, "pending": pending,
                    "awaitingJoin": awaitingJoin, "reportedOwned": reportedOwned,
                    "assignment": assignment}
CONSUMER_VARS = {"up": up, "phase": phase, "memberId": memberId,
                 "consumerGeneration": consumerGeneration, "owned": owned, "conn": conn}


def project(coordinator: GroupCoordinator, consumers: Mapping[str, GroupConsumer],
            fencing_breaches: frozenset = frozenset()) -> dict[str, Any]:
    """The spec variables (``msgs`` and ``faults`` belong to the harness/simulator)."""
    state: dict[str, Any] = {k: f(coordinator) for k, f in COORDINATOR_VARS.items()}
    state.update({k: f(consumers) for k, f in CONSUMER_VARS.items()})
    state["protocol"] = coordinator.config.protocol.value
    state["fencingBreaches"] = frozenset(fencing_breaches)
    state["Partitions"] = coordinator.config.all_partitions  # the constant, for the invariants
    return state
