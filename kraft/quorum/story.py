"""KRaft scenario scripts with golden output (etcd raft's ``testdata/`` interaction tests), on the
shared datadriven runner ``kraft.core.datadriven``: each command is followed by ``----`` and what
it produced.  ``pytest --rewrite`` writes the produced output back (review the diff!).

Every step a node takes is printed as it happens (from tests/quorum/testdata/divergence.txt)::

    1 HandleBeginQuorumEpochRequest 2->1 BeginQuorumEpochRequest epoch=2
      role Leader->Follower, epoch 1->2, leader 1->2, voted 1->none
      persist epoch=2 leader=2 votedFor=none
    1 SendFetchRequest
      send 1->2 FetchRequest epoch=2 offset=3 lastEpoch=1

the acting node and the spec action (the name comes from the declaration, ``kraft.quorum.protocol``),
the message it consumed, then what changed in the node (role, epoch, leader, voted, end = log end
offset, flushed, hwm, awaiting = waiting for a leader after a disk loss), its quorum-state writes and
the messages it sent.  Every invariant is checked after every step; a violation is printed as
``VIOLATION <Invariant>: ...`` and ends the story (only views may follow).

Commands (N, M: node ids; A->B: a link, ``*`` for any node):

  voters N [Variant ...] [prevote=off] [seed=S]   start a cluster (Variant: a declared bug variant)
  deliver A->B [K|all]   deliver the oldest (K oldest, every) message in flight on A->B, each followed
                         by the receiver's internal actions enabled now
  drop A->B [K|all]      the network loses them (spec DropMessage)
  deliver-all            one round: deliver everything in flight, then every node's enabled actions
  stabilize              deliver-all until nothing is in flight (no time passes)
  tick MS                advance the clock; every node takes the timer actions that came due
  timeout N | flush N | resign N | restart N | lose-disk N      force that action at N
  append N VALUE         a client append at N
  isolate N [M ...]      cut N (and M ...) off from the others (replaces any partition); heal
  run MS                 coarse: MS of fair network and timers, a client append every 100 ms; prints
                         the net change of every node, not every step
  settle                 coarse: heal and run until one leader's log is committed everywhere
  status | raft-state | log [N]                                 views: network, nodes, logs
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kraft.core.datadriven import Case, DatadrivenError, run_file
from kraft.core.invariants import InvariantViolation
from kraft.core.step import Ready
from kraft.quorum.cluster import Cluster
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.messages import (
    FETCH_DIVERGING,
    FETCH_OK,
    LEADER_CHANGE,
    Entry,
    FetchRequest,
    FetchResponse,
    Message,
    VoteRequest,
    VoteResponse,
)
from kraft.quorum.protocol import PROTOCOL

VIEWS = ("status", "raft-state", "log")
_LINK = re.compile(r"^(\d+|\*)->(\d+|\*)$")


def _v(x: Any) -> str:
    return "none" if x is None else str(x).lower() if isinstance(x, bool) else str(x)


def entry_text(e: Entry) -> str:
    """``epoch:value``; ``LC`` is the LeaderChange control record an epoch starts with."""
    return f"{e.epoch}:{'LC' if e.value == LEADER_CHANGE else e.value}"


def message_text(m: Message) -> str:
    head = f"{m.source}->{m.dest} {m.mtype}"
    if isinstance(m, VoteRequest):
        return (f"{head}{' preVote' if m.preVote else ''} epoch={m.epoch} lastEpoch={m.lastEpoch} "
                f"lastOffset={m.lastOffset}")
    if isinstance(m, VoteResponse):
        return f"{head}{' preVote' if m.preVote else ''} epoch={m.epoch} {'granted' if m.granted else 'refused'}"
    if isinstance(m, FetchRequest):
        return f"{head} epoch={m.epoch} offset={m.fetchOffset} lastEpoch={m.lastFetchedEpoch}"
    if isinstance(m, FetchResponse):
        out = f"{head} epoch={m.epoch} {m.result} offset={m.fetchOffset}"
        if m.result == FETCH_OK:
            out += f" hwm={m.highWatermark} entries=[{' '.join(entry_text(e) for e in m.entries)}]"
        elif m.result == FETCH_DIVERGING:
            out += (f" divergingEpoch={m.divergingEpoch} divergingEndOffset={m.divergingEndOffset} "
                    f"hwm={m.highWatermark}")
        return out
    return f"{head} epoch={m.epoch}"


def _snapshot(node: Any) -> dict[str, Any]:
    return {"role": node.role.value, "epoch": node.current_epoch, "leader": node.leader_id,
            "voted": node.voted_for, "end": node.storage.end_offset, "flushed": node.storage.flushed_offset,
            "hwm": node.high_watermark, "awaiting": node.awaiting_leader}


def _changes(before: dict[str, Any], after: dict[str, Any]) -> str:
    return ", ".join(f"{k} {_v(before[k])}->{_v(after[k])}" for k in after if before[k] != after[k])


def node_text(node: Any, now: int) -> str:
    s = _snapshot(node)
    due = node.next_deadline()
    timer = "none" if due is None else f"{max(due, now)}ms"
    return (f"{node.id} {s['role']} epoch={s['epoch']} leader={_v(s['leader'])} voted={_v(s['voted'])} "
            f"end={s['end']} flushed={s['flushed']} hwm={s['hwm']} next-timer={timer}"
            + (" awaiting-leader" if s["awaiting"] else ""))


class _Stop(Exception):
    """A command cannot go on (an invariant broke); its output so far is kept."""


class Story:
    """The state of one scenario file: the cluster and what the current command printed."""

    def __init__(self) -> None:
        self.cluster: Cluster | None = None
        self.lines: list[str] = []
        self.seen: dict[int, dict[str, Any]] = {}
        self.quiet = False
        self.ended_at: int | None = None   # line of the command that ended in a violation
        self.steps = 0
        self._before: dict[int, dict[str, Any]] = {}   # node states when a coarse command began
        self._steps_before = 0

    # -- the observer: every step of every node --------------------------------------------------
    def _observe(self, nid: int, ready: Ready) -> None:
        c = self.cluster
        assert c is not None
        if not ready.steps:
            return
        self.steps += len(ready.steps)
        node = c.nodes[nid]
        after = _snapshot(node)
        if not self.quiet:
            for st in ready.steps:
                args = st.args
                if "m" in args:
                    what = " " + message_text(args["m"])
                else:
                    what = "".join(f" {k}={_v(v)}" for k, v in args.items())
                self.lines.append(f"{nid} {st.action}{what}")
            changed = _changes(self.seen[nid], after)
            if changed:
                self.lines.append("  " + changed)
            states = [w for w in ready.writes if w.kind == "state"]
            if states:  # the quorum-state file as the step left it (it is replaced atomically)
                d = states[-1].detail
                self.lines.append(f"  persist epoch={d['epoch']} leader={_v(d['leader'])} votedFor={_v(d['votedFor'])}"
                                  + (" awaitingLeader=true" if d.get("awaitingLeader") else ""))
            for m in ready.messages:
                self.lines.append("  send " + message_text(m))
        self.seen[nid] = after
        c.check()  # every invariant after every step; raises InvariantViolation

    # -- the datadriven handler ----------------------------------------------------------------
    def handle(self, case: Case) -> str:
        self.lines = []

        def bad(why: str) -> DatadrivenError:
            return DatadrivenError(case.path, case.line, f"`{case.text}`: {why}")

        if case.command == "voters":
            self._start(case, bad)
            return "\n".join(self.lines)
        if self.cluster is None:
            raise bad("the first command must be `voters N [Variant ...]`")
        if self.ended_at is not None and case.command not in VIEWS:
            raise bad(f"the story ended in a violation at line {self.ended_at}; only views "
                      f"({', '.join(VIEWS)}) or a new `voters` may follow")
        handler = _COMMANDS.get(case.command)
        if handler is None:
            raise bad(f"unknown command {case.command!r}; known: voters, {', '.join(sorted(_COMMANDS))}")
        try:
            handler(self, self.cluster, list(case.args), bad)
        except InvariantViolation as exc:
            self.ended_at = case.line
            if self.quiet:
                self._net_changes(self._before)
            self.lines += _violation_lines(exc.violations)
        except (ValueError, IndexError, KeyError) as exc:
            raise bad(f"bad arguments ({exc})") from None
        finally:
            self.quiet = False
        return "\n".join(self.lines)

    def _start(self, case: Case, bad: Any) -> None:
        w = case.args
        if not w or not w[0].isdigit() or int(w[0]) < 1:
            raise bad("expected `voters N [Variant ...] [prevote=off] [seed=S]`")
        cfg, seed = QuorumConfig(), 0
        for word in w[1:]:
            if word == "prevote=off":
                cfg = QuorumConfig(**{**_fields(cfg), "PreVote": False})
            elif word.startswith("seed=") and word[5:].isdigit():
                seed = int(word[5:])
            elif word in PROTOCOL.variant_names:
                cfg = cfg.with_variant(word)
            else:
                raise bad(f"unknown option {word!r}; variants: {', '.join(PROTOCOL.variant_names)}")
        c = Cluster(int(w[0]), cfg, seed=seed)
        c.observer = self._observe
        self.cluster, self.ended_at, self.steps = c, None, 0
        self.seen = {i: _snapshot(n) for i, n in c.nodes.items()}
        self.lines += [node_text(c.nodes[i], c.now) for i in c.ids]

    # -- helpers for the commands --------------------------------------------------------------
    def node(self, word: str, bad: Any) -> int:
        c = self.cluster
        assert c is not None
        if not word.isdigit() or int(word) not in c.nodes:
            raise bad(f"no node {word!r} (nodes are {', '.join(map(str, c.ids))})")
        return int(word)

    def matching(self, link: str, bad: Any) -> list[Message]:
        c = self.cluster
        assert c is not None
        mo = _LINK.match(link)
        if mo is None:
            raise bad(f"expected a link A->B (A, B a node or *), got {link!r}")
        src, dst = (None if g == "*" else self.node(g, bad) for g in mo.groups())
        return [m for m in c.pending if (src is None or m.source == src) and (dst is None or m.dest == dst)]

    def go_quiet(self) -> None:
        c = self.cluster
        assert c is not None
        self.quiet = True
        self._before = {i: _snapshot(n) for i, n in c.nodes.items()}
        self._steps_before = self.steps

    def _net_changes(self, before: dict[int, dict[str, Any]]) -> None:
        c = self.cluster
        assert c is not None
        self.lines.append(f"t={c.now}ms, {self.steps - self._steps_before} steps")
        for i in c.ids:
            changed = _changes(before[i], _snapshot(c.nodes[i]))
            if changed:
                self.lines.append(f"{i}: {changed}")

    def lose(self, msgs: list[Message]) -> None:
        self.lines += [f"lost {message_text(m)} (link cut)" for m in msgs]


def _violation_lines(violations: list[Any]) -> list[str]:
    """One line per broken invariant (its first message; how many more there were)."""
    by_name: dict[str, list[str]] = {}
    for v in violations:
        by_name.setdefault(v.invariant, []).append(v.message)
    return [f"VIOLATION {name}: {msgs[0]}" + (f" (and {len(msgs) - 1} more)" if len(msgs) > 1 else "")
            for name, msgs in by_name.items()]


def _fields(cfg: QuorumConfig) -> dict[str, Any]:
    import attrs

    return attrs.asdict(cfg, recurse=False)


def _count(args: list[str], bad: Any) -> int | None:
    """The optional K|all after a link: None means all."""
    if len(args) < 2:
        return 1
    if args[1] == "all":
        return None
    if args[1].isdigit() and int(args[1]) > 0:
        return int(args[1])
    raise bad(f"expected a count or `all`, got {args[1]!r}")


def _chosen(s: Story, args: list[str], bad: Any, verb: str) -> list[Any]:
    """The in-flight messages `VERB A->B [K|all]` names (the first K, or all of them)."""
    if not args:
        raise bad(f"expected `{verb} A->B [K|all]`")
    chosen = s.matching(args[0], bad)
    want = _count(args, bad)
    if not chosen:
        raise bad(f"nothing in flight on {args[0]}")
    if want is not None and want > len(chosen):
        raise bad(f"only {len(chosen)} message(s) in flight on {args[0]}")
    return chosen[:want]


def _deliver(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    for m in _chosen(s, args, bad, "deliver"):
        idx = next((k for k, p in enumerate(c.pending) if p is m), None)
        if idx is None:
            continue  # gone meanwhile (a restart of its sender or receiver dropped it)
        if (m.source, m.dest) in c.blocked:
            s.lose([m])
        c.deliver(idx)


def _drop(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    for m in _chosen(s, args, bad, "drop"):
        c.pending.pop(next(k for k, p in enumerate(c.pending) if p is m))
        s.lines.append(f"network {PROTOCOL.drop_message} {message_text(m)}")
    c.check()


def _deliver_all(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if not c.pending:
        s.lines.append("(nothing in flight)")
    s.lose([m for m in c.pending if (m.source, m.dest) in c.blocked])
    c.deliver_all()


def _stabilize(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if not c.pending:
        s.lines.append("(nothing in flight)")
    for _ in range(50):
        if not c.pending:
            return
        _deliver_all(s, c, args, bad)
    raise bad("still messages in flight after 50 rounds")


def _tick(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    ms = int(args[0])
    if ms <= 0:
        raise bad("tick needs a positive number of milliseconds")
    s.lines.append(f"t={c.now + ms}ms")
    c.tick(ms)


def _no_step(s: Story, n: int, c: Cluster) -> None:
    node = c.nodes[n]
    s.lines.append(f"(no step: {n} is {node.role.value}{' awaiting a leader' if node.awaiting_leader else ''})")


def _timeout(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    n = s.node(args[0], bad)
    if c.nodes[n].role is Role.LEADER or c.nodes[n].awaiting_leader:
        _no_step(s, n, c)
    else:
        c.timeout(n)


def _flush(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    n = s.node(args[0], bad)
    st = c.nodes[n].storage
    if st.flushed_offset == st.end_offset:
        s.lines.append(f"(nothing to flush at {n})")
    else:
        c.flush(n)


def _resign(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    n = s.node(args[0], bad)
    if c.nodes[n].role is not Role.LEADER:
        _no_step(s, n, c)
    else:
        c.resign(n)
        c.run_internal(n)


def _restart(s: Story, c: Cluster, args: list[str], bad: Any, disk_lost: bool = False) -> None:
    n = s.node(args[0], bad)
    if disk_lost:
        s.lines += [f"lost {message_text(m)} (connection gone)" for m in c.pending if n in (m.source, m.dest)]
    c.restart(n, disk_lost=disk_lost)
    c.run_internal(n)


def _append(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if len(args) != 2:
        raise bad("expected `append N VALUE`")
    n = s.node(args[0], bad)
    if c.append_value(n, int(args[1])) is None:
        node = c.nodes[n]
        s.lines.append(f"refused: {n} is {node.role.value} in epoch {node.current_epoch} (NotLeader)")


def _isolate(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if not args:
        raise bad("expected `isolate N [M ...]`")
    group = {s.node(a, bad) for a in args}
    c.blocked.clear()
    c.partition(group)
    rest = [i for i in c.ids if i not in group]
    s.lines.append(f"partition: {' '.join(map(str, sorted(group)))} | {' '.join(map(str, rest))}")


def _heal(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    c.heal()
    s.lines.append("all links open")


def _run(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    ms = int(args[0])
    if ms <= 0:
        raise bad("run needs a positive number of milliseconds")
    s.go_quiet()
    c.run(ms)
    s._net_changes(s._before)


def _settle(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    s.go_quiet()
    ok = c.settle()
    s._net_changes(s._before)
    lid = c.leader()
    if ok and lid is not None:
        ld = c.nodes[lid]
        s.lines.append(f"converged: leader {lid} in epoch {ld.current_epoch}, every log ends at "
                       f"{ld.storage.end_offset}, all committed")
    else:
        s.lines.append("NOT converged within 30000ms")


def _status(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    lid = c.leader()
    s.lines.append(f"t={c.now}ms leader={_v(lid)}"
                   + (f" epoch={c.nodes[lid].current_epoch}" if lid is not None else ""))
    cut = sorted((a, b) for a, b in c.blocked if a < b)
    if cut:
        s.lines.append("cut: " + " ".join(f"{a}<->{b}" for a, b in cut))
    s.lines.append(f"in flight: {len(c.pending)}")
    s.lines += ["  " + message_text(m) for m in c.pending]


def _raft_state(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    s.lines += [node_text(c.nodes[i], c.now) for i in c.ids]


def _log(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    ids = [s.node(a, bad) for a in args] or list(c.ids)
    for i in ids:
        st = c.nodes[i].storage
        s.lines.append(f"{i}: " + (" ".join(entry_text(e) for e in st.entries) or "(empty)"))


_COMMANDS = {
    "deliver": _deliver, "drop": _drop, "deliver-all": _deliver_all, "stabilize": _stabilize,
    "tick": _tick, "timeout": _timeout, "flush": _flush, "resign": _resign, "restart": _restart,
    "lose-disk": lambda s, c, a, bad: _restart(s, c, a, bad, disk_lost=True),
    "append": _append, "isolate": _isolate, "heal": _heal, "run": _run, "settle": _settle,
    "status": _status, "raft-state": _raft_state, "log": _log,
}


def run_script(path: str | Path, rewrite: bool = False) -> list[str]:
    """Run one scenario file; the outputs of its commands.  Raises ``DatadrivenMismatch`` when an
    output differs from the golden one (unless ``rewrite``), ``DatadrivenError`` (file:line) on a bad
    command."""
    story = Story()
    return run_file(path, story.handle, rewrite=rewrite)
