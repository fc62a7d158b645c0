"""The KRaft safety invariants, written once over projected states (``projection.project_cluster``).

State invariants (a function of one state; names as in ``spec/KRaft.tla``):
  ElectionSafety, LogMatching, StateMachineSafety, MajorityReachedHighWatermark
History invariants (need earlier states; ``Monitor`` keeps the spec's ghosts ``committed``/``elected``):
  ElectionSafety (at most one leader per epoch over the whole run), LeaderCompleteness,
  MonotonicHighWatermark, StateMachineSafety against the ghost, NoCommittedRecordLost (committed
  durability: every record ever known committed stays durable on a majority and is never changed)
  and the action property HighWatermarkNeverDecreases.

Used by the simulator after every event, by the Hypothesis state machines as ``@invariant``s and by
the trace checker on recorded post-states.
"""

from __future__ import annotations

from typing import Any, Iterable

from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.majority import majority

__all__ = ["InvariantViolation", "Monitor", "Violation", "check_state"]


def _entries(state: dict[str, Any], n: Any) -> list[tuple[int, Any]]:
    """Log of ``n`` as (epoch, value) tuples (accepts the spec's dict entries or tuples)."""
    log = state["log"][n]
    if log and isinstance(log[0], dict):
        return [(e["epoch"], e["value"]) for e in log]
    return log


def _logs(state: dict[str, Any]) -> dict[Any, list[tuple[int, Any]]]:
    cache = state.get("_tuple_logs")
    if cache is None:
        cache = {n: _entries(state, n) for n in state["log"]}
        state["_tuple_logs"] = cache
    return cache


def _majority(state: dict[str, Any]) -> int:
    return majority(len(state["role"]))


def election_safety(state: dict[str, Any]) -> list[Violation]:
    seen: dict[int, Any] = {}
    out = []
    for n, r in state["role"].items():
        if r == "Leader":
            e = state["currentEpoch"][n]
            if e in seen:
                out.append(Violation("ElectionSafety", f"nodes {seen[e]} and {n} are both leader in epoch {e}"))
            seen[e] = n
    return out


def log_matching(state: dict[str, Any]) -> list[Violation]:
    """If two logs hold an entry with the same offset and epoch, they agree on everything before it."""
    nodes = sorted(state["log"])
    logs = _logs(state)
    out = []
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            la, lb = logs[a], logs[b]
            m = min(len(la), len(lb))
            if la[:m] == lb[:m]:
                continue
            first_diff = next(k for k in range(m) if la[k] != lb[k])
            for k in range(first_diff, m):
                if la[k][0] == lb[k][0]:
                    out.append(Violation(
                        "LogMatching",
                        f"nodes {a} and {b} both have epoch {la[k][0]} at offset {k} but differ at offset "
                        f"{first_diff}: {la[first_diff]} vs {lb[first_diff]}"))
                    break
    return out


def state_machine_safety(state: dict[str, Any]) -> list[Violation]:
    """No two nodes consider different records committed at the same offset."""
    nodes = sorted(state["log"])
    logs = _logs(state)
    out = []
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            k = min(state["highWatermark"][a], state["highWatermark"][b])
            la, lb = logs[a][:k], logs[b][:k]
            if la != lb:
                m = min(len(la), len(lb))
                off = next((j for j in range(m) if la[j] != lb[j]), None)
                if off is None:  # a node's log ends below its own high watermark
                    short = a if len(la) < k else b
                    out.append(Violation(
                        "StateMachineSafety",
                        f"node {short} lost committed records: its log ends at {m}, below high watermark {k}"))
                    continue
                out.append(Violation(
                    "StateMachineSafety",
                    f"nodes {a} and {b} committed different records at offset {off}: {la[off]} vs {lb[off]}"))
    return out


def majority_reached_high_watermark(state: dict[str, Any]) -> list[Violation]:
    """A leader's high watermark is covered by a majority of voters holding the same prefix."""
    out = []
    for n, r in state["role"].items():
        if r != "Leader":
            continue
        hwm = state["highWatermark"][n]
        logs = _logs(state)
        prefix = logs[n][:hwm]
        have = [v for v in logs if len(logs[v]) >= hwm and logs[v][:hwm] == prefix]
        if len(have) < _majority(state):
            out.append(Violation(
                "MajorityReachedHighWatermark",
                f"leader {n} (epoch {state['currentEpoch'][n]}) has highWatermark {hwm} but only {have} hold that prefix"))
    return out


# the state invariants, in the order the declaration lists them (and reports their violations)
STATE_INVARIANTS = (election_safety, log_matching, state_machine_safety, majority_reached_high_watermark)


def check_state(state: dict[str, Any]) -> list[Violation]:
    """All state invariants of one projected state."""
    out: list[Violation] = []
    for check in STATE_INVARIANTS:
        out += check(state)
    return out


def committed_before(committed: list[tuple[int, Any]], epoch: int) -> list[tuple[int, Any]]:
    """The spec's ``CommittedBefore(e)``: the committed records of epochs strictly below ``epoch``."""
    k = 0
    while k < len(committed) and committed[k][0] < epoch:
        k += 1
    return committed[:k]


class Monitor:
    """Ghost state across a run (the spec's ghosts ``committed`` and ``elected``) and the invariants
    that need it.

    ``observe(state, restarted)`` after every step (or every simulator event); ``restarted`` holds the
    nodes that restarted since the previous observation (their volatile state was reset)."""

    def __init__(self) -> None:
        self.committed: list[tuple[int, Any]] = []
        self.leader_of_epoch: dict[int, Any] = {}
        self.prev: dict[Any, tuple[str, int, int]] = {}   # node -> (role, epoch, hwm)

    def observe(self, state: dict[str, Any], restarted: Iterable[Any] = ()) -> list[Violation]:
        out = check_state(state)
        restarted = set(restarted)
        logs = _logs(state)
        # ElectionSafety over the whole run (ghost `elected`).
        for n, r in state["role"].items():
            if r == "Leader":
                e = state["currentEpoch"][n]
                prev = self.leader_of_epoch.setdefault(e, n)
                if prev != n:
                    out.append(Violation("ElectionSafety", f"epoch {e} had leader {prev} and now leader {n}"))
        # HighWatermarkNeverDecreases (the spec's action property): same role (Leader/Follower), same
        # epoch, no restart -> the high watermark does not go down.
        for n, h in state["highWatermark"].items():
            r, e = state["role"][n], state["currentEpoch"][n]
            before = self.prev.get(n)
            if before is not None and n not in restarted and r in ("Leader", "Follower") \
                    and before[0] == r and before[1] == e and h < before[2]:
                out.append(Violation("HighWatermarkNeverDecreases",
                                     f"{r} {n} in epoch {e}: high watermark went from {before[2]} to {h}"))
            self.prev[n] = (r, e, h)
        # StateMachineSafety against the ghost, and extend the ghost (CommitGhost).
        for n in sorted(state["log"]):
            hwm = state["highWatermark"][n]
            entries = logs[n][:hwm]
            common = min(len(entries), len(self.committed))
            if entries[:common] != self.committed[:common]:
                k = next(j for j in range(common) if entries[j] != self.committed[j])
                out.append(Violation(
                    "StateMachineSafety",
                    f"node {n} has {entries[k]} committed at offset {k}, but {self.committed[k]} was "
                    f"committed there before"))
            elif len(entries) > len(self.committed):
                self.committed.extend(entries[len(self.committed):])
        # NoCommittedRecordLost: the committed prefix stays durable on a majority.
        if self.committed:
            c = len(self.committed)
            holders = [v for v in logs if state["flushedOffset"][v] >= c and logs[v][:c] == self.committed]
            if len(holders) < _majority(state):
                out.append(Violation(
                    "NoCommittedRecordLost",
                    f"the {c} committed records are durable only on {holders or 'no node'}"))
        # LeaderCompleteness and MonotonicHighWatermark (both over CommittedBefore(epoch)).
        for n, r in state["role"].items():
            if r != "Leader":
                continue
            e = state["currentEpoch"][n]
            before = committed_before(self.committed, e)
            if logs[n][:len(before)] != before:
                k = next((j for j in range(len(before)) if j >= len(logs[n]) or logs[n][j] != before[j]), 0)
                out.append(Violation(
                    "LeaderCompleteness",
                    f"leader {n} of epoch {e} lacks {before[k]} committed at offset {k}"))
            h = state["highWatermark"][n]
            if h > 0 and h < len(before):
                out.append(Violation(
                    "MonotonicHighWatermark",
                    f"leader {n} of epoch {e} exposes high watermark {h} below the {len(before)} records "
                    f"committed in earlier epochs"))
        return out
