"""The spec's invariants, written once against the projections (:mod:`kraft.groups.projection`).

Each function takes the projected state dict and returns a list of human-readable violations
(empty when it holds). Names are the spec's. The two action properties take the previous and the
next state (and the coordinator's transition log for ValidTransitions, since one
implementation step may pass through several group states).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kraft.groups.messages import VALID_TRANSITIONS, GroupState

State = dict[str, Any]


def NoDoubleOwnership(s: State) -> list[str]:  # noqa: N802 - spec names
    """At no instant do two live consumers both believe they own a partition."""
    out = []
    live = sorted(c for c, u in s["up"].items() if u)
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            both = s["owned"][a] & s["owned"][b]
            if both:
                out.append(f"NoDoubleOwnership: {a} and {b} both own {sorted(map(str, both))}")
    return out


def StableMeansAssigned(s: State) -> list[str]:  # noqa: N802
    """In Stable every partition is assigned to exactly one member of the generation, or
    (cooperative) withheld because a member still reports owning it (it revokes and rejoins)."""
    if s["groupState"] != GroupState.STABLE.value:
        return []
    out = []
    for p in sorted(s["Partitions"], key=str):
        holders = [m for m in s["members"] if p in s["assignment"][m]]
        if len(holders) > 1:
            out.append(f"StableMeansAssigned: {p} assigned to {sorted(holders)}")
        if not holders and not any(p in s["reportedOwned"][m] for m in s["members"]):
            out.append(f"StableMeansAssigned: {p} is owned by no member in Stable generation "
                       f"{s['generation']}")
    return out


def OwnedWithinAssignment(s: State) -> list[str]:  # noqa: N802
    """A consumer synced to the coordinator's current Stable generation owns only what the
    coordinator assigned its member id."""
    if s["groupState"] != GroupState.STABLE.value:
        return []
    out = []
    for c, ph in s["phase"].items():
        m = s["memberId"][c]
        if s["up"][c] and ph == "Stable" and m in s["members"] \
                and s["consumerGeneration"][c] == s["generation"]:
            extra = s["owned"][c] - s["assignment"][m]
            if extra:
                out.append(f"OwnedWithinAssignment: {c} ({m}) owns {sorted(map(str, extra))} "
                           f"outside its assignment")
    return out


def CommitFencing(s: State) -> list[str]:  # noqa: N802
    """The offset store never accepted a commit of a partition another consumer owned.
    ``fencingBreaches`` holds (partition, committer, owner) triples (the spec's records)."""
    return [f"CommitFencing: commit of {p} by {committer} accepted while {owner} owned it"
            for p, committer, owner in sorted(s["fencingBreaches"], key=str)]


def LeaderIsMember(s: State) -> list[str]:  # noqa: N802
    if s["groupState"] in ("CompletingRebalance", "Stable") and s["leader"] not in s["members"]:
        return [f"LeaderIsMember: leader {s['leader']} not in {sorted(s['members'])}"]
    return []


def TypeOK(s: State) -> list[str]:  # noqa: N802
    out = []
    if s["groupState"] not in {g.value for g in GroupState}:
        out.append(f"TypeOK: groupState {s['groupState']!r}")
    for c, u in s["up"].items():
        if not u and s["owned"][c]:
            out.append(f"TypeOK: down consumer {c} owns {sorted(map(str, s['owned'][c]))}")
        if not s["owned"][c] <= s["Partitions"]:
            out.append(f"TypeOK: {c} owns unknown partitions")
    return out


STATE_INVARIANTS: dict[str, Callable[[State], list[str]]] = {
    "TypeOK": TypeOK,
    "NoDoubleOwnership": NoDoubleOwnership,
    "StableMeansAssigned": StableMeansAssigned,
    "OwnedWithinAssignment": OwnedWithinAssignment,
    "CommitFencing": CommitFencing,
    "LeaderIsMember": LeaderIsMember,
}


def GenerationMonotonic(prev: State, cur: State) -> list[str]:  # noqa: N802
    if cur["generation"] < prev["generation"]:
        return [f"GenerationMonotonic: {prev['generation']} -> {cur['generation']}"]
    return []


def ValidTransitions(transitions: Iterable[tuple[GroupState, GroupState, int]]) -> list[str]:  # noqa: N802
    return [f"ValidTransitions: {a.value} -> {b.value} (generation {g})"
            for a, b, g in transitions if (a, b) not in VALID_TRANSITIONS]


def check_state(s: State) -> list[str]:
    out: list[str] = []
    for f in STATE_INVARIANTS.values():
        out += f(s)
    return out


def check_step(prev: State, cur: State, new_transitions: Iterable[tuple[GroupState, GroupState, int]]) -> list[str]:
    return check_state(cur) + GenerationMonotonic(prev, cur) + ValidTransitions(new_transitions)
