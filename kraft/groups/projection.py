"""One projection per spec variable: the spec's view of the implementation's state.

``project(coordinator, consumers, fencing_breaches)`` returns ``{spec variable: value}`` with
partitions as ``TopicPartition`` and member ids as the implementation's strings. The
invariants (:mod:`kraft.groups.invariants`) are written against this dict only, so the
Hypothesis suite, the simulator and a trace checker share them.

The projections read the coordinator and the consumers through the views below (what of them the
spec sees): the node classes are bound to the declaration that lists these projections, so this
module does not import them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kraft.groups import messages as M
from kraft.groups.assignors import TopicPartition


class ConfigView(Protocol):
    """A group's configuration (``kraft.groups.coordinator.GroupConfig``)."""

    @property
    def topics(self) -> tuple[tuple[str, int], ...]: ...

    @property
    def protocol(self) -> M.RebalanceProtocol: ...

    @property
    def all_partitions(self) -> frozenset[TopicPartition]: ...


class CoordinatorView(Protocol):
    """The coordinator (``kraft.groups.coordinator.GroupCoordinator``)."""

    state: M.GroupState
    generation: int
    leader: str | None
    members: dict[str, Any]  # member id -> MemberMetadata (reported_owned, assignment)
    static_members: dict[str, str]
    pending: dict[str, int]
    awaiting_join: dict[str, tuple[str, int, int]]
    next_member_seq: int

    @property
    def config(self) -> ConfigView: ...


class ConsumerView(Protocol):
    """A consumer (``kraft.groups.consumer.GroupConsumer``)."""

    up: bool
    phase: M.ConsumerPhase
    member_id: str | None
    generation: int
    owned: M.Partitions
    conn: int


def groupState(c: CoordinatorView) -> str:  # noqa: N802 - spec names
    return c.state.value


def generation(c: CoordinatorView) -> int:
    return c.generation


def leader(c: CoordinatorView) -> str | None:
    return c.leader


def members(c: CoordinatorView) -> frozenset[str]:
    return frozenset(c.members)


def staticMembers(c: CoordinatorView) -> dict[str, str]:  # noqa: N802
    return dict(c.static_members)


def pending(c: CoordinatorView) -> frozenset[str]:
    return frozenset(c.pending)


def awaitingJoin(c: CoordinatorView) -> dict[str, dict[str, Any]]:  # noqa: N802
    return {m: {"client": cl, "conn": cn} for m, (cl, cn, _corr) in c.awaiting_join.items()}


def reportedOwned(c: CoordinatorView) -> dict[str, frozenset]:  # noqa: N802
    return {m: md.reported_owned for m, md in c.members.items()}


def assignment(c: CoordinatorView) -> dict[str, frozenset]:
    return {m: md.assignment for m, md in c.members.items()}


def nextMemberId(c: CoordinatorView) -> int:  # noqa: N802
    """One counter for every fresh member id (the implementation's ``next_member_seq``)."""
    return c.next_member_seq


def protocol(c: CoordinatorView) -> str:
    return c.config.protocol.value


def up(cs: Mapping[str, ConsumerView]) -> dict[str, bool]:
    return {k: v.up for k, v in cs.items()}


def phase(cs: Mapping[str, ConsumerView]) -> dict[str, str]:
    return {k: v.phase.value for k, v in cs.items()}


def memberId(cs: Mapping[str, ConsumerView]) -> dict[str, str | None]:  # noqa: N802
    return {k: v.member_id for k, v in cs.items()}


def consumerGeneration(cs: Mapping[str, ConsumerView]) -> dict[str, int]:  # noqa: N802
    return {k: v.generation for k, v in cs.items()}


def owned(cs: Mapping[str, ConsumerView]) -> dict[str, frozenset]:
    return {k: v.owned for k, v in cs.items()}


def conn(cs: Mapping[str, ConsumerView]) -> dict[str, int]:
    return {k: v.conn for k, v in cs.items()}


COORDINATOR_VARS = {"groupState": groupState, "generation": generation, "leader": leader,
                    "members": members, "staticMembers": staticMembers, "pending": pending,
                    "awaitingJoin": awaitingJoin, "reportedOwned": reportedOwned,
                    "assignment": assignment}
CONSUMER_VARS = {"up": up, "phase": phase, "memberId": memberId,
                 "consumerGeneration": consumerGeneration, "owned": owned, "conn": conn}


def project(coordinator: CoordinatorView, consumers: Mapping[str, ConsumerView],
            fencing_breaches: frozenset = frozenset()) -> dict[str, Any]:
    """The spec variables (``msgs`` and ``faults`` belong to the world/simulator)."""
    state: dict[str, Any] = {k: f(coordinator) for k, f in COORDINATOR_VARS.items()}
    state.update({k: f(consumers) for k, f in CONSUMER_VARS.items()})
    state["protocol"] = coordinator.config.protocol.value
    state["fencingBreaches"] = frozenset(fencing_breaches)
    state["Partitions"] = coordinator.config.all_partitions  # the constant, for the invariants
    return state


# ---------------------------------------------------------------------------------------------
# The same projection in the spec's own vocabulary, as JSON (trace recorder, `kraft conform`).
#
# * a member id ``"<client>-<n>"`` is the spec's member id ``n`` (both come from one counter:
#   the coordinator's ``next_member_seq`` is the spec's ``nextMemberId``);
# * a partition is its index in the sorted partition set (with one topic: its number);
# * a message is the spec's record: the field names with the leading ``m``, correlation ids and
#   send times dropped (the spec matches a response to its request by connection and phase).

def member_no(mid: str | None) -> int | None:
    if mid is None:
        return None
    return int(mid.rsplit("-", 1)[1])


def partition_no(coordinator: CoordinatorView, p: Any) -> int:
    return _partition_index(coordinator.config)[p]


_PIDX: dict[tuple, dict] = {}


def _partition_index(config: ConfigView) -> dict:
    """Each partition's index in the sorted partition set (by topic, then number)."""
    if config.topics not in _PIDX:
        parts = sorted(config.all_partitions, key=lambda p: (p.topic, p.partition))
        _PIDX[config.topics] = {p: i for i, p in enumerate(parts)}
    return _PIDX[config.topics]


def spec_message(coordinator: CoordinatorView, msg: Any) -> dict[str, Any] | None:
    """The spec record of an implementation message (None: no spec counterpart, i.e. an
    OffsetCommitResponse: the spec does not model commit responses)."""
    idx = _partition_index(coordinator.config)

    def parts(ps: Any) -> list[int]:
        return sorted(idx[p] for p in ps)

    def fun(pairs: Any) -> list[list[Any]]:
        return sorted([member_no(k), parts(v)] for k, v in pairs)

    if isinstance(msg, M.JoinGroup):
        return {"mtype": "JoinGroup", "msource": msg.source, "mconn": msg.conn,
                "mmember": member_no(msg.member), "minstance": msg.instance, "mowned": parts(msg.owned)}
    if isinstance(msg, M.JoinGroupResponse):
        return {"mtype": "JoinGroupResponse", "mdest": msg.dest, "mconn": msg.conn,
                "merror": msg.error.value, "mmember": member_no(msg.member),
                "mgeneration": msg.generation, "mleader": member_no(msg.leader),
                "mmembers": fun(msg.members)}
    if isinstance(msg, M.SyncGroup):
        return {"mtype": "SyncGroup", "msource": msg.source, "mconn": msg.conn,
                "mmember": member_no(msg.member), "minstance": msg.instance,
                "mgeneration": msg.generation, "massignment": fun(msg.assignment)}
    if isinstance(msg, M.SyncGroupResponse):
        return {"mtype": "SyncGroupResponse", "mdest": msg.dest, "mconn": msg.conn,
                "merror": msg.error.value, "mmember": member_no(msg.member),
                "mgeneration": msg.generation, "massigned": parts(msg.assigned)}
    if isinstance(msg, M.Heartbeat):
        return {"mtype": "Heartbeat", "msource": msg.source, "mconn": msg.conn,
                "mmember": member_no(msg.member), "minstance": msg.instance,
                "mgeneration": msg.generation}
    if isinstance(msg, M.HeartbeatResponse):
        return {"mtype": "HeartbeatResponse", "mdest": msg.dest, "mconn": msg.conn,
                "merror": msg.error.value, "mmember": member_no(msg.member),
                "mgeneration": msg.generation}
    if isinstance(msg, M.LeaveGroup):
        return {"mtype": "LeaveGroup", "msource": msg.source, "mconn": msg.conn,
                "mmember": member_no(msg.member), "minstance": msg.instance}
    if isinstance(msg, M.OffsetCommit):
        return {"mtype": "OffsetCommit", "msource": msg.source, "mconn": msg.conn,
                "mmember": member_no(msg.member), "minstance": msg.instance,
                "mgeneration": msg.generation, "mparts": parts(p for p, _o in msg.offsets)}
    return None


def spec_state(coordinator: CoordinatorView, consumers: Mapping[str, ConsumerView],
               fencing_breaches: Any, static: list[str]) -> dict[str, Any]:
    """Every projectable spec variable except ``msgs`` (the network is the caller's), as JSON in
    the spec's vocabulary. Not projected: ``faults`` (the spec's fault budget)."""
    idx = _partition_index(coordinator.config)

    def parts(ps: Any) -> list[int]:
        return sorted(idx[p] for p in ps)

    def fun(d: Mapping[str, Any], f: Any) -> list[list[Any]]:
        return sorted([member_no(k), f(v)] for k, v in d.items())

    co = coordinator
    return {
        "groupState": co.state.value,
        "generation": co.generation,
        "leader": member_no(co.leader),
        "members": sorted(member_no(m) for m in co.members),
        "staticMembers": {i: member_no(co.static_members.get(i)) for i in static},
        "pending": sorted(member_no(m) for m in co.pending),
        "awaitingJoin": fun(co.awaiting_join, lambda v: {"client": v[0], "conn": v[1]}),
        "reportedOwned": fun(co.members, lambda m: parts(m.reported_owned)),
        "assignment": fun(co.members, lambda m: parts(m.assignment)),
        "nextMemberId": co.next_member_seq,
        "up": {k: c.up for k, c in consumers.items()},
        "phase": {k: c.phase.value for k, c in consumers.items()},
        "memberId": {k: member_no(c.member_id) for k, c in consumers.items()},
        "consumerGeneration": {k: c.generation for k, c in consumers.items()},
        "owned": {k: parts(c.owned) for k, c in consumers.items()},
        "conn": {k: c.conn for k, c in consumers.items()},
        "protocol": co.config.protocol.value,
        "fencingBreaches": sorted(({"partition": idx_of(idx, p), "committer": cm, "owner": ow}
                                   for p, cm, ow in fencing_breaches),
                                  key=lambda r: (r["partition"], r["committer"], r["owner"])),
    }


def idx_of(idx: dict, p: Any) -> int:
    """A fencing breach names its partition as ``str(TopicPartition)`` (``"t-0"``)."""
    if not isinstance(p, str):
        return idx[p]
    for tp, i in idx.items():
        if str(tp) == p:
            return i
    raise KeyError(p)
