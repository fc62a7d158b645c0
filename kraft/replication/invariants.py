"""The spec's invariants over projected states (``kraft.replication.projection``), and the ghost
state the spec keeps for them (``Ghost``: ``nextValue``, ``acked``, ``exposed``,
``uncleanBrokers``, and the history property ``HighWatermarkMonotonic``).

Definitions follow ``spec/PartitionReplication.tla`` (Safety section).  A projected state also
carries the constant ``MinIsr`` (key ``"MinIsr"``) for ``MinIsrRecoveryQuorum``.
"""

from __future__ import annotations

from typing import Any, Iterable

from kraft.core.invariants import Violation
from kraft.replication.messages import NO_LEADER, RECOVERED, RECOVERING

Rec = tuple[int, int, int]  # (offset, epoch, value)


def has_at(log: tuple[Any, ...], x: Rec) -> bool:
    """HasAt(l, x): the record x = (offset, epoch, value) is in log l at its offset."""
    off, epoch, value = x
    return off < len(log) and log[off].epoch == epoch and log[off].value == value


def entries(log: tuple[Any, ...], k: int) -> set[Rec]:
    return {(i, log[i].epoch, log[i].value) for i in range(min(k, len(log)))}


def _acting_leader(s: dict[str, Any], l: int) -> bool:
    return s["leader"] == l and s["running"][l] and s["localLeader"][l] == l \
        and s["localLeaderEpoch"][l] == s["leaderEpoch"]


def _fmt(log: tuple[Any, ...]) -> str:
    return "[" + ", ".join(f"{e.epoch}:{e.value}" for e in log) + "]"


def type_ok(s: dict[str, Any]) -> list[Violation]:
    out = []
    brokers = set(s["running"])
    if s["leader"] != NO_LEADER and s["leader"] not in brokers:
        out.append(Violation("TypeOK", f"leader {s['leader']} is not a broker"))
    for name in ("isr", "elr", "lastKnownElr"):
        if not set(s[name]) <= brokers:
            out.append(Violation("TypeOK", f"{name} {sorted(s[name])} holds a non-broker"))
    for b in brokers:
        if not 0 <= s["highWatermark"][b] <= len(s["log"][b]):
            out.append(Violation("TypeOK", f"broker {b}: high watermark {s['highWatermark'][b]} outside "
                                           f"0..{len(s['log'][b])}"))
    return out


def leader_in_isr(s: dict[str, Any]) -> list[Violation]:
    if s["leader"] != NO_LEADER and s["leader"] not in s["isr"]:
        return [Violation("LeaderInIsr", f"leader {s['leader']} not in ISR {sorted(s['isr'])}")]
    return []


def strong_isr(s: dict[str, Any]) -> list[Violation]:
    out = []
    for l in s["running"]:
        if not _acting_leader(s, l):
            continue
        below = s["log"][l][:s["highWatermark"][l]]
        for r in sorted(s["isr"]):
            if s["running"][r] and tuple(s["log"][r][:len(below)]) != tuple(below):
                out.append(Violation("StrongIsr", f"ISR member {r} log {_fmt(s['log'][r])} lacks leader {l}'s "
                                                  f"log below its HW {s['highWatermark'][l]}: {_fmt(below)}"))
    return out


def no_committed_record_lost(s: dict[str, Any]) -> list[Violation]:
    out = []
    for l in s["running"]:
        if not _acting_leader(s, l):
            continue
        for a in sorted(s["acked"]):
            if not has_at(s["log"][l], a):
                out.append(Violation("NoCommittedRecordLost",
                                     f"acked record (offset {a[0]}, epoch {a[1]}, value {a[2]}) is not in leader "
                                     f"{l}'s log {_fmt(s['log'][l])}"))
    return out


def consistent_read(s: dict[str, Any]) -> list[Violation]:
    seen: dict[int, Rec] = {}
    out = []
    for x in sorted(s["exposed"]):
        if x[0] in seen and seen[x[0]] != x:
            y = seen[x[0]]
            out.append(Violation("ConsistentRead", f"offset {x[0]} was readable as (epoch {y[1]}, value {y[2]}) "
                                                   f"and as (epoch {x[1]}, value {x[2]})"))
        seen.setdefault(x[0], x)
    return out


def log_matching_below_hw(s: dict[str, Any]) -> list[Violation]:
    out = []
    bs = sorted(s["running"])
    for i, a in enumerate(bs):
        for b in bs[i + 1:]:
            k = min(s["highWatermark"][a], s["highWatermark"][b])
            if tuple(s["log"][a][:k]) != tuple(s["log"][b][:k]):
                out.append(Violation("LogMatchingBelowHW", f"brokers {a} and {b} differ below offset {k}: "
                                                           f"{_fmt(s['log'][a])} vs {_fmt(s['log'][b])}"))
    return out


def replication_quorum_superset(s: dict[str, Any]) -> list[Violation]:
    out = []
    for r in sorted(set(s["isr"]) | set(s["elr"])):
        if not s["running"][r]:
            continue
        missing = [x for x in sorted(s["exposed"]) if not has_at(s["log"][r], x)]
        if missing:
            x = missing[0]
            out.append(Violation("ReplicationQuorumSuperset",
                                 f"ISR/ELR member {r} lacks readable record (offset {x[0]}, epoch {x[1]}, value "
                                 f"{x[2]}); its log {_fmt(s['log'][r])}"))
    return out


def min_isr_recovery_quorum(s: dict[str, Any]) -> list[Violation]:
    out = []
    unclean = set(s["uncleanBrokers"])
    for x in sorted(s["exposed"]):
        holders = {b for b in s["running"] if has_at(s["log"][b], x)}
        if len(holders | unclean) < s["MinIsr"]:
            out.append(Violation("MinIsrRecoveryQuorum",
                                 f"readable record (offset {x[0]}, epoch {x[1]}, value {x[2]}) is held by "
                                 f"{sorted(holders)} only (unclean: {sorted(unclean)}), fewer than min ISR {s['MinIsr']}"))
    return out


def valid_leader_recovery_state(s: dict[str, Any]) -> list[Violation]:
    lrs = s["leaderRecoveryState"]
    if lrs not in (RECOVERED, RECOVERING):
        return [Violation("ValidLeaderRecoveryState", f"unknown leader recovery state {lrs!r}")]
    if lrs == RECOVERING and len(s["isr"]) > 1:
        return [Violation("ValidLeaderRecoveryState", f"RECOVERING with ISR {sorted(s['isr'])}")]
    return []


class Ghost:
    """The spec's client and ghost variables, kept by the driver from what the nodes did."""

    def __init__(self) -> None:
        self.next_value = 1
        self.acked: set[Rec] = set()
        self.exposed: set[Rec] = set()
        self.unclean_brokers: set[int] = set()
        self._leader_hw: dict[int, tuple[int, int]] = {}   # broker -> (leader epoch, hw) while leader

    def on_acked(self, offset: int, epoch: int, value: int) -> None:
        self.acked.add((offset, epoch, value))

    def on_unclean(self, broker: int) -> None:
        self.unclean_brokers.add(broker)

    def observe(self, brokers: dict[int, Any]) -> list[Violation]:
        """After every step: records below a leader's HW become readable (Expose); and the
        action property HighWatermarkMonotonic (per leader epoch)."""
        out = []
        now: dict[int, tuple[int, int]] = {}
        for b, br in brokers.items():
            if br.running and br.local_leader == b:
                now[b] = (br.local_leader_epoch, br.high_watermark)
                self.exposed |= entries(tuple(br.entries), br.high_watermark)
                before = self._leader_hw.get(b)
                if before is not None and before[0] == br.local_leader_epoch and br.high_watermark < before[1]:
                    out.append(Violation("HighWatermarkMonotonic",
                                         f"leader {b} lowered its HW in epoch {before[0]}: {before[1]} -> "
                                         f"{br.high_watermark}"))
        self._leader_hw = now
        return out


STATE_INVARIANTS = {
    "TypeOK": type_ok,
    "LeaderInIsr": leader_in_isr,
    "StrongIsr": strong_isr,
    "NoCommittedRecordLost": no_committed_record_lost,
    "ConsistentRead": consistent_read,
    "LogMatchingBelowHW": log_matching_below_hw,
    "ReplicationQuorumSuperset": replication_quorum_superset,
    "MinIsrRecoveryQuorum": min_isr_recovery_quorum,
    "ValidLeaderRecoveryState": valid_leader_recovery_state,
}


def check_all(state: dict[str, Any], names: Iterable[str] | None = None) -> list[Violation]:
    out: list[Violation] = []
    for name, fn in STATE_INVARIANTS.items():
        if names is None or name in names:
            out += fn(state)
    return out
