r"""The spec's invariants, written once against the projections (:mod:`kraft.groups.projection`).

Each function takes the projected state dict and returns the ``Violation``\ s it found (empty
when it holds); :mod:`kraft.groups.protocol` declares them as ``Invariant``\ s under the spec's
names. The two action properties (history invariants of the declaration) take the previous and the
next state (and the coordinator's transition log for ValidTransitions, since one implementation
step may pass through several group states); :func:`check_step` runs everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kraft.core.invariants import Violation
from kraft.groups.messages import VALID_TRANSITIONS, GroupState

State = dict[str, Any]


def NoDoubleOwnership(s: State) -> list[Violation]:  # noqa: N802 - spec names
    """At no instant do two live consumers both believe they own a partition."""
    out = []
    live = sorted(c for c, u in s["up"].items() if u)
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            both = s["owned"][a] & s["owned"][b]
            if both:
                out.append(Violation("NoDoubleOwnership", f"{a} and {b} both own {sorted(map(str, both))}"))
    return out


def StableMeansAssigned(s: State) -> list[Violation]:  # noqa: N802
    """In Stable every partition is assigned to exactly one member of the generation, or
    (cooperative) withheld because a member still reports owning it (it revokes and rejoins)."""
    if s["groupState"] != GroupState.STABLE.value:
        return []
    out = []
    for p in sorted(s["Partitions"], key=str):
        holders = [m for m in s["members"] if p in s["assignment"][m]]
        if len(holders) > 1:
            out.append(Violation("StableMeansAssigned", f"{p} assigned to {sorted(holders)}"))
        if not holders and not any(p in s["reportedOwned"][m] for m in s["members"]):
            out.append(Violation("StableMeansAssigned", f"{p} is owned by no member in Stable generation "
                                                         f"{s['generation']}"))
    return out


def OwnedWithinAssignment(s: State) -> list[Violation]:  # noqa: N802
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
                out.append(Violation("OwnedWithinAssignment", f"{c} ({m}) owns {sorted(map(str, extra))} "
                                                           f"outside its assignment"))
    return out


def CommitFencing(s: State) -> list[Violation]:  # noqa: N802
    """The offset store never accepted a commit of a partition another consumer owned.
    ``fencingBreaches`` holds (partition, committer, owner) triples (the spec's records)."""
    return [Violation("CommitFencing", f"commit of {p} by {committer} accepted while {owner} owned it")
            for p, committer, owner in sorted(s["fencingBreaches"], key=str)]


def LeaderIsMember(s: State) -> list[Violation]:  # noqa: N802
    if s["groupState"] in ("CompletingRebalance", "Stable") and s["leader"] not in s["members"]:
        return [Violation("LeaderIsMember", f"leader {s['leader']} not in {sorted(s['members'])}")]
    return []


def TypeOK(s: State) -> list[Violation]:  # noqa: N802
    out = []
    if s["groupState"] not in {g.value for g in GroupState}:
        out.append(Violation("TypeOK", f"groupState {s['groupState']!r}"))
    for c, u in s["up"].items():
        if not u and s["owned"][c]:
            out.append(Violation("TypeOK", f"down consumer {c} owns {sorted(map(str, s['owned'][c]))}"))
        if not s["owned"][c] <= s["Partitions"]:
            out.append(Violation("TypeOK", f"{c} owns unknown partitions"))
    return out


def GenerationMonotonic(prev: State, cur: State) -> list[Violation]:  # noqa: N802
    if cur["generation"] < prev["generation"]:
        return [Violation("GenerationMonotonic", f"{prev['generation']} -> {cur['generation']}")]
    return []


def ValidTransitions(transitions: Iterable[tuple[GroupState, GroupState, int]]) -> list[Violation]:  # noqa: N802
    return [Violation("ValidTransitions", f"{a.value} -> {b.value} (generation {g})")
            for a, b, g in transitions if (a, b) not in VALID_TRANSITIONS]


# the state invariants, in the order the declaration lists them (and reports their violations)
STATE_INVARIANTS = (TypeOK, NoDoubleOwnership, StableMeansAssigned, OwnedWithinAssignment, CommitFencing,
                    LeaderIsMember)


def check_state(s: State) -> list[Violation]:
    """Every state invariant, in the declaration's order."""
    out: list[Violation] = []
    for check in STATE_INVARIANTS:
        out += check(s)
    return out


def check_step(prev: State, cur: State,
               new_transitions: Iterable[tuple[GroupState, GroupState, int]]) -> list[Violation]:
    """The state invariants of ``cur`` and the two action properties of the step ``prev -> cur``."""
    return check_state(cur) + GenerationMonotonic(prev, cur) + ValidTransitions(new_transitions)
