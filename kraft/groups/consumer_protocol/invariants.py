r"""The invariants of spec/ConsumerGroupProtocol.tla, written once against the projections
(:func:`.projection.project`).  Each state invariant takes the projected state and returns the
``Violation``\ s it found; ``MemberEpochMonotonic`` is an action property over two states
(:func:`check_step` runs everything)."""

from __future__ import annotations

from typing import Any

from kraft.core.invariants import Violation
from kraft.groups.consumer_protocol.messages import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ClientState

State = dict[str, Any]


def _names(ps: Any) -> list[str]:
    return sorted(map(str, ps))


def NoDoubleOwnership(s: State) -> list[Violation]:  # noqa: N802 - spec names
    """At no instant do two consumers both own (consume) a partition."""
    out, cs = [], sorted(s["owned"])
    for i, a in enumerate(cs):
        for b in cs[i + 1:]:
            both = s["owned"][a] & s["owned"][b]
            if both:
                out.append(Violation("NoDoubleOwnership", f"{a} and {b} both own {_names(both)}"))
    return out


def CommitFencing(s: State) -> list[Violation]:  # noqa: N802
    """The offset store accepted commits only from the member holding the partition at the
    commit's epoch while no other consumer owned it."""
    return [Violation("CommitFencing", f"a commit of {p} by {c} at member epoch {e} was accepted while "
                                       f"{c} did not hold it or another consumer owned it")
            for p, c, e in sorted(s["badCommits"], key=str)]


def ValidPartitionEpochs(s: State) -> list[Violation]:  # noqa: N802
    """A partition is held by at most one member; its epoch is that member's, -1 when free."""
    out = []
    members = {c: m for c, m in s["member"].items() if m is not None}
    for p in s["Partitions"]:
        holders = sorted(c for c, m in members.items() if p in m.held)
        pe = s["partitionEpoch"][p]
        if len(holders) > 1:
            out.append(Violation("ValidPartitionEpochs", f"{p} is held by {holders}"))
        elif not holders and pe != -1:
            out.append(Violation("ValidPartitionEpochs", f"{p} is held by no member but has epoch {pe}"))
        elif holders and pe != members[holders[0]].epoch:
            out.append(Violation("ValidPartitionEpochs", f"{p} held by {holders[0]} at epoch "
                                                         f"{members[holders[0]].epoch} has partition epoch {pe}"))
    return out


def ValidTargetAssignment(s: State) -> list[Violation]:  # noqa: N802
    """The target gives each partition to at most one member, only to members, only partitions of
    topics the member subscribes to, every partition of a subscribed topic once computed for the
    current group epoch; no member is ahead of the assignment epoch."""
    out = []
    ta, members = s["targetAssignment"], {c for c, m in s["member"].items() if m is not None}
    if s["assignmentEpoch"] > s["groupEpoch"]:
        out.append(Violation("ValidTargetAssignment", f"assignment epoch {s['assignmentEpoch']} is above "
                                                      f"group epoch {s['groupEpoch']}"))
    for c, ps in sorted(ta.items()):
        if c not in members and ps:
            out.append(Violation("ValidTargetAssignment", f"non-member {c} has target {_names(ps)}"))
    cs = sorted(ta)
    for i, a in enumerate(cs):
        for b in cs[i + 1:]:
            if ta[a] & ta[b]:
                out.append(Violation("ValidTargetAssignment", f"{_names(ta[a] & ta[b])} targeted to {a} and {b}"))
    for c in sorted(members):
        foreign = [p for p in ta[c] if p.topic not in s["member"][c].sub]
        if foreign:
            out.append(Violation("ValidTargetAssignment", f"member {c} is targeted {_names(foreign)} of topics "
                                                          f"it does not subscribe to"))
    if s["assignmentEpoch"] == s["groupEpoch"]:
        subscribed = set().union(*(s["member"][c].sub for c in members))
        lost = [p for p in s["Partitions"] if p.topic in subscribed and not any(p in ta[c] for c in members)]
        if lost:
            out.append(Violation("ValidTargetAssignment", f"{_names(lost)} have no member in the target "
                                                          f"of epoch {s['assignmentEpoch']}"))
    for c in sorted(members):
        if s["member"][c].epoch > s["assignmentEpoch"]:
            out.append(Violation("ValidTargetAssignment", f"member {c} is at epoch {s['member'][c].epoch} "
                                                          f"above the assignment epoch {s['assignmentEpoch']}"))
    return out


def TypeOK(s: State) -> list[Violation]:  # noqa: N802
    """States known; a consumer outside the group owns nothing once it has left; a subscription is
    a non-empty set of the topics."""
    out = []
    for c, st in s["cstate"].items():
        if st is ClientState.UNSUBSCRIBED and s["owned"][c]:
            out.append(Violation("TypeOK", f"{c} is UNSUBSCRIBED but owns {_names(s['owned'][c])}"))
    topics = {p.topic for p in s["Partitions"]}
    for c, sub in s["csub"].items():
        if not sub or not sub <= topics:
            out.append(Violation("TypeOK", f"{c} subscribes to {sorted(sub)}, not a non-empty set of {sorted(topics)}"))
    return out


def MemberEpochMonotonic(prev: State, cur: State) -> list[Violation]:  # noqa: N802
    """Member epochs never decrease: at the coordinator while the member exists, except a static
    member's leave to -2 and its replacement from -2 to 0; at the consumer except the reset to 0
    when fenced or rejoining and to -1 (-2 static) when leaving."""
    out = []
    for c, m in cur["member"].items():
        old = prev["member"].get(c)
        static = m is not None and old is not None and \
            (m.epoch == STATIC_LEAVE_EPOCH or (old.epoch == STATIC_LEAVE_EPOCH and m.epoch == JOIN_EPOCH))
        if m is not None and old is not None and m.epoch < old.epoch and not static:
            out.append(Violation("MemberEpochMonotonic", f"member {c} went from epoch {old.epoch} to {m.epoch}"))
    for c, e in cur["cepoch"].items():
        before = prev["cepoch"].get(c, e)
        st = cur["cstate"][c]
        reset = (e == 0 and st in (ClientState.FENCED, ClientState.JOINING)) or \
                (e in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH) and st is ClientState.UNSUBSCRIBED)
        if e < before and not reset:
            out.append(Violation("MemberEpochMonotonic", f"consumer {c} went from epoch {before} to {e} "
                                                         f"in {st.value}"))
    return out


STATE_INVARIANTS = (TypeOK, NoDoubleOwnership, CommitFencing, ValidPartitionEpochs, ValidTargetAssignment)


def check_step(prev: State | None, cur: State) -> list[Violation]:
    """Every state invariant over ``cur`` and the action property from ``prev``."""
    out: list[Violation] = []
    for inv in STATE_INVARIANTS:
        out += inv(cur)
    if prev is not None:
        out += MemberEpochMonotonic(prev, cur)
    return out
