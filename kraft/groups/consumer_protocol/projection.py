"""One projection per spec variable of spec/ConsumerGroupProtocol.tla, from the implementation.

``project(coordinator, consumers, bad_commits)`` gives ``{spec variable: value}`` with partitions
as ``TopicPartition``, member records as :class:`.reconcile.MemberRecord` and states as their enums;
the invariants (:mod:`.invariants`) read that dict only.  ``spec_state`` and ``spec_message`` give
the same in the spec's own vocabulary for traces: a partition is ``[topic, partition]`` with the
topics numbered from 1 in name order (the spec's ``(1..NumTopics) \\X (0..PartitionsPerTopic-1)``),
a missing value is ``None`` (the model value ``Nil``).

The node classes are read through the views below, so this module imports none of them.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol

from kraft.groups.assignors import TopicPartition
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.messages import (
    ClientState,
    Heartbeat,
    HeartbeatResponse,
    OffsetCommit,
    Partitions,
    client_of_member,
    incarnation_of,
)
from kraft.groups.consumer_protocol.reconcile import MemberRecord


class CoordinatorView(Protocol):
    config: ProtocolConfig
    group_epoch: int
    assignment_epoch: int
    target: dict[str, Partitions]
    members: dict[str, MemberRecord]
    partition_epoch: dict[TopicPartition, int]


class Reconciliation(Protocol):
    target: Partitions
    step: str
    stale: bool


class ConsumerView(Protocol):
    state: ClientState
    epoch: int
    owned: Partitions
    target: Partitions | None
    recon: Reconciliation | None
    send_owned: bool
    inflight: bool
    conn: int
    incarnation: int
    subscription: tuple[str, ...]
    sub_sent: Any


State = dict[str, Any]


def project(co: CoordinatorView, consumers: Mapping[str, ConsumerView], bad_commits: Iterable[Any] = ()) -> State:
    """Every spec variable but ``msgs`` and ``faults``, in Python values; the coordinator's
    members by their client (the spec's member of ``c``, whatever member id its process chose)."""
    parts = co.config.all_partitions
    cs = sorted(consumers)
    mid = {client_of_member(x): x for x in co.members}
    return {
        "groupEpoch": co.group_epoch,
        "assignmentEpoch": co.assignment_epoch,
        "targetAssignment": {c: co.target.get(mid.get(c, c), frozenset()) for c in cs},
        "member": {c: co.members.get(mid.get(c, c)) for c in cs},
        "partitionEpoch": {p: co.partition_epoch.get(p, -1) for p in parts},
        "memberIncarnation": {c: incarnation_of(mid[c]) if c in mid else 0 for c in cs},
        "cstate": {c: consumers[c].state for c in cs},
        "cepoch": {c: consumers[c].epoch for c in cs},
        "owned": {c: consumers[c].owned for c in cs},
        "ctarget": {c: consumers[c].target for c in cs},
        "recon": {c: consumers[c].recon for c in cs},
        "sendOwned": {c: consumers[c].send_owned for c in cs},
        "inflight": {c: consumers[c].inflight for c in cs},
        "conn": {c: consumers[c].conn for c in cs},
        "incarnation": {c: consumers[c].incarnation for c in cs},
        "csub": {c: frozenset(consumers[c].subscription) for c in cs},
        "subSent": {c: consumers[c].sub_sent.value for c in cs},
        "badCommits": frozenset(bad_commits),
        "Partitions": parts,
    }


class SpecVocabulary:
    """Values in the spec's vocabulary for one config's topics."""

    def __init__(self, config: ProtocolConfig) -> None:
        self.topic_no = {t: i for i, t in enumerate(config.topic_names, start=1)}

    def topics(self, ts: Iterable[str] | None) -> list[int] | None:
        return None if ts is None else sorted(self.topic_no[t] for t in ts)

    def part(self, p: TopicPartition) -> list[int]:
        return [self.topic_no[p.topic], p.partition]

    def parts(self, ps: Partitions | None) -> list[list[int]] | None:
        return None if ps is None else sorted(self.part(p) for p in ps)

    def member(self, m: MemberRecord | None) -> dict[str, Any] | None:
        if m is None:
            return None
        return {"epoch": m.epoch, "prev": m.prev, "state": m.state.value, "assigned": self.parts(m.assigned),
                "pending": self.parts(m.pending), "tepoch": m.tepoch, "sub": self.topics(m.sub)}

    def recon(self, r: Reconciliation | None) -> dict[str, Any] | None:
        return None if r is None else {"target": self.parts(r.target), "step": r.step, "stale": r.stale}

    def message(self, m: Any) -> dict[str, Any] | None:
        """The spec's record of a message (None: it has none)."""
        if isinstance(m, Heartbeat):
            return {"type": "Heartbeat", "src": client_of_member(m.member_id), "inc": incarnation_of(m.member_id),
                    "conn": m.conn, "epoch": m.member_epoch, "owned": self.parts(m.topic_partitions),
                    "sub": self.topics(m.subscribed_topic_names)}
        if isinstance(m, HeartbeatResponse):
            return {"type": "HeartbeatResponse", "dst": client_of_member(m.member_id), "conn": m.conn,
                    "err": m.error.value, "epoch": m.member_epoch, "assignment": self.parts(m.assignment)}
        if isinstance(m, OffsetCommit):
            return {"type": "OffsetCommit", "src": client_of_member(m.member_id), "inc": incarnation_of(m.member_id),
                    "epoch": m.member_epoch, "parts": self.parts(m.partitions)}
        return None

    def state(self, s: State) -> State:
        """A ``project`` dict in the spec's vocabulary (``Partitions`` left out)."""
        parts = s["Partitions"]
        return {
            "groupEpoch": s["groupEpoch"],
            "assignmentEpoch": s["assignmentEpoch"],
            "targetAssignment": {c: self.parts(v) for c, v in s["targetAssignment"].items()},
            "member": {c: self.member(v) for c, v in s["member"].items()},
            "partitionEpoch": [[*self.part(p), s["partitionEpoch"][p]] for p in parts],
            "memberIncarnation": dict(s["memberIncarnation"]),
            "cstate": {c: v.value for c, v in s["cstate"].items()},
            "cepoch": dict(s["cepoch"]),
            "owned": {c: self.parts(v) for c, v in s["owned"].items()},
            "ctarget": {c: self.parts(v) for c, v in s["ctarget"].items()},
            "recon": {c: self.recon(v) for c, v in s["recon"].items()},
            "sendOwned": dict(s["sendOwned"]),
            "inflight": dict(s["inflight"]),
            "conn": dict(s["conn"]),
            "incarnation": dict(s["incarnation"]),
            "csub": {c: self.topics(v) for c, v in s["csub"].items()},
            "subSent": dict(s["subSent"]),
            "badCommits": sorted(({"partition": self.part(p), "committer": c, "epoch": e}
                                  for p, c, e in s["badCommits"]), key=lambda r: (r["partition"], r["committer"], r["epoch"])),
        }
