"""The KRaft safety invariants, written once over projected states (``projection.project_cluster``).

State invariants (a function of one state; names as in ``spec/KRaft.tla``):
  ElectionSafety, LogMatching, StateMachineSafety, MajorityReachedHighWatermark, LogEpochsMonotonic,
  SnapshotAtLogStart
History invariants (need earlier states; ``Monitor`` keeps the spec's ghosts ``committed``/``elected``):
  ElectionSafety (at most one leader per epoch over the whole run), LeaderCompleteness,
  MonotonicHighWatermark, StateMachineSafety against the ghost, NoCommittedRecordLost (committed
  durability: every record ever known committed stays durable on a majority and is never changed),
  ConsistentCommittedData (snapshots hold committed data) and the action property
  HighWatermarkNeverDecreases.

Voter sets (KIP-853) are the spec's: a node's ``VoterSet`` is that of the last ``"Voters"`` entry of
its log, else of the snapshot at its log start, else the bootstrap set (``state["_voters"]``, which
the fast projection adds; without it every node of the state is a bootstrap voter).  Majorities
count the members of the voter set in effect only.

A node's ``log`` holds the entries from its ``logStartOffset`` on (0 when the state has no
``logStartOffset``); the comparisons of two logs, or of a log and the ghost, cover the offsets both
hold: what lies below a log start is in the node's snapshots, which ConsistentCommittedData checks
(and ``Holds``, the spec's, compares with the values of the snapshot at the log start).

How the ghost grows: the spec extends ``committed`` when a leader's high watermark passes it. The
Monitor observes after coarser steps than the spec's (a round of deliveries may raise a follower's
high watermark and then let its leader resign), so it extends the ghost from every node's high
watermark (a follower's was its leader's), and the world also calls ``leader_committed`` after
each step of a leader: a removed leader may commit its removal and resign, dropping its high
watermark, before any follower learns it. The ghost is then the spec's, and the spec's clause
``highWatermark[n] <= Len(committed)`` always holds here.

Used by the simulator after every event, by the Hypothesis state machines as ``@invariant``s and by
the trace checker on recorded post-states.
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Iterable

from kraft.core.invariants import InvariantViolation, Violation
from kraft.quorum.messages import LEADER_CHANGE, VOTERS

__all__ = ["InvariantViolation", "Monitor", "Violation", "check_state"]


def _entries(state: dict[str, Any], n: Any) -> list[tuple[int, Any, tuple[int, ...]]]:
    """Log of ``n`` as (epoch, value, voters) tuples (accepts the spec's dict entries or tuples)."""
    log = state["log"][n]
    if log and isinstance(log[0], dict):
        return [(e["epoch"], e["value"], tuple(sorted(e.get("voters", ())))) for e in log]
    return log


def _logs(state: dict[str, Any]) -> dict[Any, list[tuple[int, Any]]]:
    cache = state.get("_tuple_logs")
    if cache is None:
        cache = {n: _entries(state, n) for n in state["log"]}
        state["_tuple_logs"] = cache
    return cache


def _start(state: dict[str, Any], n: Any) -> int:
    return state.get("logStartOffset", {}).get(n, 0)


def _window(log: list, start: int, lo: int, hi: int) -> list:
    """The entries of a log starting at ``start`` at offsets ``lo`` .. ``hi - 1`` (those it holds)."""
    return log[max(lo - start, 0):max(hi - start, 0)]


def logs_agree(a: list, a_start: int, b: list, b_start: int) -> bool:
    """Two logs (from their starts) hold the same entries at every offset both hold."""
    lo, hi = max(a_start, b_start), min(a_start + len(a), b_start + len(b))
    return _window(a, a_start, lo, hi) == _window(b, b_start, lo, hi)


def _values(entries: list) -> list:
    """The spec's ``ValuesOf``: the values of the data entries (not LeaderChange, not Voters), in order."""
    return [e[1] for e in entries if e[1] not in (LEADER_CHANGE, VOTERS)]


def show_entry(entry: tuple) -> tuple:
    """An entry as violation messages print it: (epoch, value), and the voters of a Voters entry."""
    return tuple(entry) if len(entry) > 2 and entry[2] else tuple(entry[:2])


def _bootstrap(state: dict[str, Any]) -> tuple[Any, ...]:
    """The spec's constant ``Voters``: the bootstrap voter set."""
    voters = state.get("_voters")
    return tuple(voters) if voters is not None else tuple(sorted(state["role"]))


def last_voters(entries: list, base: tuple[Any, ...]) -> tuple[Any, ...]:
    """The spec's ``LastVoters(l, base)``: the voters of the last ``"Voters"`` entry, else ``base``."""
    for e in reversed(entries):
        if e[1] == VOTERS:
            return tuple(sorted(e[2]))
    return tuple(sorted(base))


def _base_voters(state: dict[str, Any], n: Any) -> tuple[Any, ...]:
    """The spec's ``BaseVoters(n)``: the voters of the snapshot at the log start, else the bootstrap set."""
    s = _base_snapshot(state, n)
    return _snapshot_voters(state, s) if s is not None else _bootstrap(state)


def _snapshot_voters(state: dict[str, Any], s: dict[str, Any]) -> tuple[Any, ...]:
    """A snapshot's voter set (a state written without one holds the bootstrap set)."""
    return tuple(sorted(s.get("voters", _bootstrap(state))))


def voter_set_at(state: dict[str, Any], n: Any, k: int) -> tuple[Any, ...]:
    """The spec's ``VoterSetAt(n, k)``: n's voter set in effect below offset ``k`` (what
    ``last_voters`` finds in the entries below ``k``, looked up in ``_voter_entries``)."""
    found = _voter_entries(state, n)
    below = bisect_left(found, (max(k - _start(state, n), 0),))
    return found[below - 1][1] if below else _base_voters(state, n)


def _voter_entries(state: dict[str, Any], n: Any) -> list[tuple[int, tuple[Any, ...]]]:
    """(index in the log, sorted voters) of each Voters entry of n's log, cached in the state."""
    cache = state.setdefault("_voter_entries", {})
    found = cache.get(n)
    if found is None:
        found = cache[n] = [(i, tuple(sorted(e[2]))) for i, e in enumerate(_logs(state)[n]) if e[1] == VOTERS]
    return found


def majorities_meet(a: set[Any], b: set[Any]) -> bool:
    """The spec's ``MajoritiesMeet(a, b)``: every majority of ``a`` meets every majority of ``b``
    (the members both sets share cannot be split between two disjoint majorities)."""
    ma, mb = len(a) // 2 + 1, len(b) // 2 + 1
    return max(0, ma - len(a - b)) + max(0, mb - len(b - a)) > len(a & b)


def is_quorum_of(ids: Iterable[Any], voters: Iterable[Any]) -> bool:
    """The spec's ``IsQuorumOf(S, vs)``: ``ids`` hold a majority of ``voters`` (only members count)."""
    vs = set(voters)
    return 2 * len(set(ids) & vs) > len(vs)


def _base_snapshot(state: dict[str, Any], n: Any) -> dict[str, Any] | None:
    start = _start(state, n)
    return next((s for s in state.get("snapshots", {}).get(n, ()) if s["end"] == start), None)


def _base_epoch(state: dict[str, Any], n: Any) -> int:
    """The spec's ``BaseEpoch(n)``: 0 for a log from 0, else the epoch of the snapshot ending at
    the log start, else the first entry's (0 for an empty log)."""
    if _start(state, n) == 0:
        return 0
    s = _base_snapshot(state, n)
    if s is not None:
        return s["epoch"]
    log = _logs(state)[n]
    return log[0][0] if log else 0


def holds(state: dict[str, Any], n: Any, prefix: list) -> bool:
    """The spec's ``Holds(n, p)``: n's log reaches the end of ``prefix``, agrees with it from the
    log start on, and the values below the log start are a prefix of those of n's snapshot there."""
    start, log = _start(state, n), _logs(state)[n]
    if not holds_prefix(log, start, prefix):
        return False
    below = _values(prefix[:min(start, len(prefix))])
    s = _base_snapshot(state, n)
    base = list(s["values"]) if s is not None else []
    return base[:len(below)] == below


def holds_prefix(log: list, start: int, prefix: list) -> bool:
    """The log (from ``start``) reaches the end of ``prefix`` and agrees with it where it holds it."""
    return start + len(log) >= len(prefix) and _window(log, start, start, len(prefix)) == prefix[start:]


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
            sa, sb = _start(state, a), _start(state, b)
            lo, hi = max(sa, sb), min(sa + len(logs[a]), sb + len(logs[b]))
            la, lb = _window(logs[a], sa, lo, hi), _window(logs[b], sb, lo, hi)
            if la == lb:
                continue
            first_diff = next(k for k in range(len(la)) if la[k] != lb[k])
            for k in range(first_diff, len(la)):
                if la[k][0] == lb[k][0]:
                    out.append(Violation(
                        "LogMatching",
                        f"nodes {a} and {b} both have epoch {la[k][0]} at offset {lo + k} but differ at offset "
                        f"{lo + first_diff}: {show_entry(la[first_diff])} vs {show_entry(lb[first_diff])}"))
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
            sa, sb = _start(state, a), _start(state, b)
            lo = max(sa, sb)
            la, lb = _window(logs[a], sa, lo, k), _window(logs[b], sb, lo, k)
            if la != lb:
                m = min(len(la), len(lb))
                off = next((j for j in range(m) if la[j] != lb[j]), None)
                if off is None:  # a node's log ends below its own high watermark
                    short = a if len(la) < len(lb) else b
                    out.append(Violation(
                        "StateMachineSafety",
                        f"node {short} lost committed records: its log ends at {lo + m}, below high watermark {k}"))
                    continue
                out.append(Violation(
                    "StateMachineSafety",
                    f"nodes {a} and {b} committed different records at offset {lo + off}: {show_entry(la[off])} vs {show_entry(lb[off])}"))
    return out


def majority_reached_high_watermark(state: dict[str, Any]) -> list[Violation]:
    """A leader's high watermark is covered by a majority of the voter set in effect at it
    (``VoterSetAt(n, HW)``) or of its latest voter set (``VoterSet(n)``: the one the HW was
    computed with while its VotersRecord is at or above the HW): replicas that flushed that far
    and hold the leader's prefix below it (where both hold it)."""
    out = []
    for n, r in state["role"].items():
        if r != "Leader":
            continue
        hwm = state["highWatermark"][n]
        logs = _logs(state)
        sn = _start(state, n)
        have = []
        for v in logs:
            sv = _start(state, v)
            lo = max(sn, sv)
            if state["flushedOffset"][v] >= hwm and sv + len(logs[v]) >= hwm and \
                    _window(logs[v], sv, lo, hwm) == _window(logs[n], sn, lo, hwm):
                have.append(v)
        latest = voter_set_at(state, n, sn + len(logs[n]))
        if not (is_quorum_of(have, voter_set_at(state, n, hwm)) or is_quorum_of(have, latest)):
            out.append(Violation(
                "MajorityReachedHighWatermark",
                f"leader {n} (epoch {state['currentEpoch'][n]}) has highWatermark {hwm} but only {have} hold that prefix"))
    return out


def log_epochs_monotonic(state: dict[str, Any]) -> list[Violation]:
    """Along each log the epochs never decrease, the first entry's not below the epoch of the
    record before the log start (LeaderEpochFileCache.assign only grows)."""
    out = []
    for n, log in _logs(state).items():
        prev = _base_epoch(state, n)
        epochs = [e[0] for e in log]
        if not epochs or (epochs[0] >= prev and epochs == sorted(epochs)):
            continue  # the common case, without a step per entry
        for i, epoch in enumerate(epochs):
            if epoch < prev:
                out.append(Violation("LogEpochsMonotonic",
                                     f"node {n} has epoch {epoch} at offset {_start(state, n) + i} after "
                                     f"epoch {prev}"))
                break
            prev = epoch
    return out


def snapshot_at_log_start(state: dict[str, Any]) -> list[Violation]:
    """Every snapshot of a node ends at or after its log start, and a log start above 0 is the end
    of one of its snapshots (RaftEventSimulationTest.SnapshotAtLogStart)."""
    out = []
    for n, snaps in state.get("snapshots", {}).items():
        start = _start(state, n)
        ends = sorted(s["end"] for s in snaps)
        below = [e for e in ends if e < start]
        if below:
            out.append(Violation("SnapshotAtLogStart",
                                 f"node {n} keeps snapshots ending at {below}, below its log start {start}"))
        if start > 0 and start not in ends:
            out.append(Violation("SnapshotAtLogStart",
                                 f"node {n} starts its log at {start} but has no snapshot ending there "
                                 f"(snapshots end at {ends})"))
    return out


# the state invariants, in the order the declaration lists them (and reports their violations)
STATE_INVARIANTS = (election_safety, log_matching, state_machine_safety, majority_reached_high_watermark,
                    log_epochs_monotonic, snapshot_at_log_start)


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
        self._last: tuple[dict[str, Any], list[Violation]] | None = None

    def leader_committed(self, entries: list, start: int, hwm: int) -> None:
        """CommitGhost at one leader's step: the ghost grows by the leader's records (from
        ``start``; log entries with ``as_tuple``) up to its high watermark ``hwm``."""
        n = len(self.committed)
        if start <= n < hwm:
            self.committed.extend(e.as_tuple for e in _window(entries, start, n, hwm))

    def observe(self, state: dict[str, Any], restarted: Iterable[Any] = ()) -> list[Violation]:
        restarted = set(restarted)
        if not restarted and self._last is not None and self._last[0] == state:
            return self._stutter()
        before = dict(state)  # the checks cache derived values in the state dict
        out = self._observe(state, restarted)
        self._last = (before, out)
        return out

    def _stutter(self) -> list[Violation]:
        """The verdict on a step that changed no variable (and restarted nothing): the state
        invariants and the ghost-based ones see what they saw last time (the ghosts grew from that
        very state, so they are where they were), and the action property holds trivially."""
        assert self._last is not None
        return [v for v in self._last[1] if v.invariant != "HighWatermarkNeverDecreases"]

    def _observe(self, state: dict[str, Any], restarted: set[Any]) -> list[Violation]:
        out = check_state(state)
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
            start = _start(state, n)
            entries = _window(logs[n], start, start, hwm)
            common = min(start + len(entries), len(self.committed))
            mine, ghost = entries[:max(common - start, 0)], self.committed[start:common]
            if mine != ghost:
                k = next(j for j in range(len(mine)) if mine[j] != ghost[j])
                out.append(Violation(
                    "StateMachineSafety",
                    f"node {n} has {show_entry(mine[k])} committed at offset {start + k}, but {show_entry(ghost[k])} was "
                    f"committed there before"))
            elif start <= len(self.committed) < start + len(entries):
                self.committed.extend(entries[len(self.committed) - start:])
        # NoCommittedRecordLost: the committed prefix stays durable on a majority of the committed
        # voter set, or of a replica's latest voter set (the uncommitted change it was committed with).
        if self.committed:
            c = len(self.committed)
            holders = [v for v in logs if state["flushedOffset"][v] >= c and holds(state, v, self.committed)]
            voters = last_voters(self.committed, _bootstrap(state))
            latest = [voter_set_at(state, n, _start(state, n) + len(logs[n])) for n in logs]
            if not (is_quorum_of(holders, voters) or any(is_quorum_of(holders, vs) for vs in latest)):
                out.append(Violation(
                    "NoCommittedRecordLost",
                    f"the {c} committed records are durable only on {holders or 'no node'}"))
        # LeaderCompleteness and MonotonicHighWatermark (both over CommittedBefore(epoch)), of the
        # newest leader only (NewestLeader): a deposed leader may lack records of earlier epochs
        # that a later leader committed.
        newest = max(self.leader_of_epoch, default=0)
        for n, r in state["role"].items():
            if r != "Leader" or state["currentEpoch"][n] < newest:
                continue
            e = state["currentEpoch"][n]
            before = committed_before(self.committed, e)
            start = _start(state, n)
            if not holds(state, n, before):
                k = next((j for j in range(start, len(before))
                          if j - start >= len(logs[n]) or logs[n][j - start] != before[j]), 0)
                out.append(Violation(
                    "LeaderCompleteness",
                    f"leader {n} of epoch {e} lacks {show_entry(before[k])} committed at offset {k}"))
            h = state["highWatermark"][n]
            if h > 0 and h < len(before):
                out.append(Violation(
                    "MonotonicHighWatermark",
                    f"leader {n} of epoch {e} exposes high watermark {h} below the {len(before)} records "
                    f"committed in earlier epochs"))
        out += self._consistent_committed_data(state)
        out += self._overlapping_majorities(state)
        return out

    def _overlapping_majorities(self, state: dict[str, Any]) -> list[Violation]:
        """OverlappingMajorities: every majority of the committed voter set meets every majority
        of the newest leader's latest voter set (one voter change at a time; a deposed leader of an
        older epoch may still hold an older set, and can commit nothing)."""
        committed = last_voters(self.committed, _bootstrap(state))
        newest = max(self.leader_of_epoch, default=0)
        logs = _logs(state)
        out = []
        for n, r in state["role"].items():
            if r != "Leader" or state["currentEpoch"][n] < newest:
                continue
            latest = voter_set_at(state, n, _start(state, n) + len(logs[n]))
            if not majorities_meet(set(committed), set(latest)):
                out.append(Violation("OverlappingMajorities",
                                     f"leader {n}'s voter set {list(latest)} has a majority disjoint from one of "
                                     f"the committed voter set {list(committed)}"))
        return out

    def _consistent_committed_data(self, state: dict[str, Any]) -> list[Violation]:
        """ConsistentCommittedData (RaftEventSimulationTest): every snapshot ends within the
        committed prefix, its values are that prefix's data values and its voters the voter set
        that prefix ends with."""
        out = []
        for n, snaps in state.get("snapshots", {}).items():
            for s in snaps:
                end = s["end"]
                if end > len(self.committed):
                    out.append(Violation("ConsistentCommittedData",
                                         f"node {n} has a snapshot ending at {end}, beyond the "
                                         f"{len(self.committed)} committed records"))
                    continue
                want = _values(self.committed[:end])
                if list(s["values"]) != want:
                    out.append(Violation("ConsistentCommittedData",
                                         f"node {n}'s snapshot ending at {end} holds {list(s['values'])[-5:]}... "
                                         f"(last 5), not the committed values {want[-5:]}"))
                voters = last_voters(self.committed[:end], _bootstrap(state))
                if _snapshot_voters(state, s) != voters:
                    out.append(Violation("ConsistentCommittedData",
                                         f"node {n}'s snapshot ending at {end} holds the voters "
                                         f"{list(_snapshot_voters(state, s))}, "
                                         f"not the committed voter set {list(voters)}"))
        return out
