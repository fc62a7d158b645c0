"""KRaft stories with golden output (etcd raft's ``testdata/`` interaction tests), on the shared
story driver ``kraft.core.datadriven.Story``: each command is followed by ``----`` and what it
produced.  ``pytest --rewrite`` writes the produced output back (review the diff!).

Every step a node takes is printed as it happens (from tests/quorum/testdata/divergence.txt)::

    1 HandleBeginQuorumEpochRequest 2->1 BeginQuorumEpochRequest epoch=2
      role Leader->Follower, epoch 1->2, leader 1->2, voted 1->none
      persist epoch=2 leader=2 votedFor=none
    1 SendFetchRequest
      send 1->2 FetchRequest epoch=2 offset=3 lastEpoch=1

the acting node and the spec action (the name comes from the declaration, ``kraft.quorum.protocol``),
the message it consumed, then what changed in the node (role, epoch, leader, voted, end = log end
offset, flushed, hwm, awaiting = waiting for a leader after a disk loss, start = log start offset,
snapshots = the ids end@epoch of its snapshots), its quorum-state writes and the messages it sent.  Every invariant is checked after every step; a violation is printed as
``VIOLATION <Invariant>: ...`` and ends the story (only views may follow).

Commands (N, M: node ids; A->B: a link, ``*`` for any node):

  voters N [Variant ...] [prevote=off] [seed=S] [observers=K]
                         start a cluster (Variant: a declared bug variant; K observers N+1..N+K)
  deliver A->B [K|all]   deliver the oldest (K oldest, every) message in flight on A->B, each followed
                         by the receiver's internal actions enabled now
  drop A->B [K|all]      the network loses them (spec DropMessage)
  deliver-all            one round: deliver everything in flight, then every node's enabled actions
  stabilize              deliver-all until nothing is in flight (no time passes)
  tick MS                advance the clock; every node takes the timer actions that came due
  timeout N | flush N | resign N | restart N | lose-disk N      force that action at N
  restart N port=P       N restarts listening on port P (its voter set still lists the old one)
  append N VALUE         a client append at N
  add-voter N X | remove-voter N X    AddRaftVoter / RemoveRaftVoter of X at N (KIP-853)
  snapshot N [K]         N snapshots the prefix below K (default: its high watermark)
  clean N [O]            N moves its log start to O (default: its latest snapshot's end)
  isolate N [M ...]      cut N (and M ...) off from the others (replaces any partition); heal
  run MS                 coarse: MS of fair network and timers, a client append every 100 ms; prints
                         the net change of every node, not every step
  settle                 coarse: heal and run until one leader's log is committed everywhere
  status | raft-state | log [N]                                 views: network, nodes, logs
  voter-set [N]          each node's latest voter set, with the endpoints it lists
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from kraft.core.datadriven import Story, changes, show
from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.node import Refused
from kraft.core.step import Ready
from kraft.quorum.config import QuorumConfig
from kraft.quorum.messages import (
    FETCH_DIVERGING,
    FETCH_OK,
    FETCH_SNAPSHOT,
    LEADER_CHANGE,
    VOTERS,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    Message,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
)
from kraft.log.codec import decode
from kraft.quorum.node import ERROR_NAMES, QuorumNode
from kraft.quorum.voters import VoterNode
from kraft.quorum.protocol import PROTOCOL
from kraft.quorum.world import QuorumWorld

_LINK = re.compile(r"^(\d+|\*)->(\d+|\*)$")


def entry_text(e: Entry) -> str:
    """``epoch:value``; ``LC`` is the LeaderChange control record an epoch starts with, ``V{1,2}``
    a VotersRecord setting the voters 1 and 2."""
    if e.value == VOTERS:
        return f"{e.epoch}:V{{{','.join(map(str, e.voters))}}}"
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
        elif m.result == FETCH_SNAPSHOT:
            out += f" snapshot={m.snapshotEnd}@{m.snapshotEpoch} hwm={m.highWatermark}"
        return out
    if isinstance(m, (FetchSnapshotRequest, FetchSnapshotResponse)):
        return _fetch_snapshot_text(head, m)
    if isinstance(m, (UpdateRaftVoterRequest, UpdateRaftVoterResponse)):
        return _update_voter_text(head, m)
    return f"{head} epoch={m.epoch}"


def _update_voter_text(head: str, m: UpdateRaftVoterRequest | UpdateRaftVoterResponse) -> str:
    """The decoded UpdateRaftVoter request (epoch, voter, listeners) or response (error, leader)."""
    fields, _ = decode(m.mtype, 0, m.payload)
    if isinstance(m, UpdateRaftVoterResponse):
        leader = fields["currentLeader"]
        return f"{head} {ERROR_NAMES[fields['errorCode']]} leader={leader['leaderId']} epoch={leader['leaderEpoch']}"
    listeners = ",".join(f"{e['name']}://{e['host']}:{e['port']}" for e in fields["listeners"])
    return f"{head} epoch={fields['currentLeaderEpoch']} voter={fields['voterId']} listeners={listeners}"


def voter_node_text(v: VoterNode) -> str:
    """``id listener://host:port``: a voter as a voter set lists it."""
    return f"{v.key.id} " + ",".join(f"{e.name}://{e.host}:{e.port}" for e in v.endpoints)


def _fetch_snapshot_text(head: str, m: FetchSnapshotRequest | FetchSnapshotResponse) -> str:
    """``snapshot=end@epoch``; a response adds its result and, when Ok, the snapshot's values."""
    sid = f"snapshot={m.snapshotEnd}@{m.snapshotEpoch}"
    if isinstance(m, FetchSnapshotRequest):
        return f"{head} epoch={m.epoch} {sid}"
    values = f" values=[{' '.join(str(r.value) for r in m.values)}]" if m.result == FETCH_OK else ""
    return f"{head} epoch={m.epoch} {m.result} {sid}{values}"


def _snapshot(node: QuorumNode) -> dict[str, Any]:
    return {"role": node.role.value, "epoch": node.current_epoch, "leader": node.leader_id,
            "voted": node.voted_for, "end": node.storage.end_offset, "flushed": node.storage.flushed_offset,
            "hwm": node.high_watermark, "awaiting": node.awaiting_leader,
            "start": node.storage.log_start_offset, "snapshots": _snapshot_ids(node)}


def _snapshot_ids(node: QuorumNode) -> str:
    return "[" + " ".join(f"{end}@{s.epoch}" for end, s in sorted(node.storage.snapshots.items())) + "]"


def node_text(node: QuorumNode, now: int) -> str:
    s = _snapshot(node)
    due = node.next_deadline()
    timer = "none" if due is None else f"{max(due, now)}ms"
    return (f"{node.id} {s['role']} epoch={s['epoch']} leader={show(s['leader'])} voted={show(s['voted'])} "
            f"end={s['end']} flushed={s['flushed']} hwm={s['hwm']} next-timer={timer}"
            + (f" start={s['start']} snapshots={s['snapshots']}" if s["start"] or s["snapshots"] != "[]" else "")
            + (" awaiting-leader" if s["awaiting"] else ""))


class QuorumStory(Story):
    """A KRaft story: ``voters N [Variant ...] [prevote=off] [seed=S]`` begins it."""

    start = "voters"
    usage = "voters N [Variant ...] [prevote=off] [seed=S] [observers=K]"
    views = ("status", "raft-state", "log", "voter-set")
    world: QuorumWorld

    def begin(self, args: list[str]) -> QuorumWorld:
        if not args or not args[0].isdigit() or int(args[0]) < 1:
            raise self.bad(f"expected `{self.usage}`")
        cfg, seed, observers = QuorumConfig(), 0, 0
        for word in args[1:]:
            if word == "prevote=off":
                cfg = attrs.evolve(cfg, PreVote=False)
            elif word.startswith("seed=") and word[5:].isdigit():
                seed = int(word[5:])
            elif word.startswith("observers=") and word[10:].isdigit():
                observers = int(word[10:])
            elif word in PROTOCOL.variant_names:
                cfg = cfg.with_variant(word)
            else:
                raise self.bad(f"unknown option {word!r}; variants: {', '.join(PROTOCOL.variant_names)}")
        world = QuorumWorld(int(args[0]), cfg, seed=seed, observers=observers)
        self.lines += [node_text(world.nodes[i], world.now) for i in world.ids]
        return world

    def snapshot(self, node_id: Any) -> dict[str, Any]:
        return _snapshot(self.world.nodes[node_id])

    def message_text(self, message: Any) -> str:
        return message_text(message)

    def observe(self, node_id: Any, ready: Ready) -> None:
        """A step with no spec counterpart (UpdateRaftVoter sent, refused, answered) prints as
        ``N Name args (no spec step)`` with what it sent; every other step as the driver does."""
        note = ready.note
        if ready.steps or note is None or self.quiet:
            super().observe(node_id, ready)
            return
        self.lines.append(f"{note.node} {note.action}" + "".join(f" {k}={show(v)}" for k, v in note.args.items())
                          + " (no spec step)")
        self.lines += ["  send " + self.message_text(m) for m in ready.messages]

    def effect_lines(self, node_id: Any, ready: Ready) -> list[str]:
        states = [w for w in ready.writes if w.kind == "state"]
        if not states:
            return []
        d = states[-1].detail  # the quorum-state file as the step left it (it is replaced atomically)
        return [f"  persist epoch={d['epoch']} leader={show(d['leader'])} votedFor={show(d['votedFor'])}"
                + (" awaitingLeader=true" if d.get("awaitingLeader") else "")]

    # ------------------------------------------------------------------ helpers for the commands
    def node(self, word: str) -> int:
        if not word.isdigit() or int(word) not in self.world.nodes:
            raise self.bad(f"no node {word!r} (nodes are {', '.join(map(str, self.world.ids))})")
        return int(word)

    def matching(self, link: str) -> list[Message]:
        mo = _LINK.match(link)
        if mo is None:
            raise self.bad(f"expected a link A->B (A, B a node or *), got {link!r}")
        src, dst = (None if g == "*" else self.node(g) for g in mo.groups())
        return [m for m in self.world.pending if (src is None or m.source == src) and (dst is None or m.dest == dst)]

    def chosen(self, args: list[str], verb: str) -> list[Message]:
        """The in-flight messages `VERB A->B [K|all]` names (the first K, or all of them)."""
        if not args:
            raise self.bad(f"expected `{verb} A->B [K|all]`")
        chosen = self.matching(args[0])
        want = self.count(args)
        if not chosen:
            raise self.bad(f"nothing in flight on {args[0]}")
        if want is not None and want > len(chosen):
            raise self.bad(f"only {len(chosen)} message(s) in flight on {args[0]}")
        return chosen[:want]

    def count(self, args: list[str]) -> int | None:
        """The optional K|all after a link: None means all."""
        if len(args) < 2:
            return 1
        if args[1] == "all":
            return None
        if args[1].isdigit() and int(args[1]) > 0:
            return int(args[1])
        raise self.bad(f"expected a count or `all`, got {args[1]!r}")

    def coarse(self, run: Any) -> None:
        """Run a coarse command quietly, then print the net change of every node."""
        w = self.world
        before = {i: _snapshot(n) for i, n in w.nodes.items()}
        steps = self.steps
        self.quiet = True
        try:
            run()
        finally:
            self.lines.append(f"t={w.now}ms, {self.steps - steps} steps")
            for i in w.ids:
                changed = changes(before[i], _snapshot(w.nodes[i]))
                if changed:
                    self.lines.append(f"{i}: {changed}")

    def lose(self, msgs: list[Message]) -> None:
        self.lines += [f"lost {message_text(m)} (link cut)" for m in msgs]

    def no_step(self, n: int) -> None:
        node = self.world.nodes[n]
        self.lines.append(f"(no step: {n} is {node.role.value}{' awaiting a leader' if node.awaiting_leader else ''})")


def _deliver(s: QuorumStory, args: list[str]) -> None:
    w = s.world
    for m in s.chosen(args, "deliver"):
        idx = next((k for k, p in enumerate(w.pending) if p is m), None)
        if idx is None:
            continue  # gone meanwhile (a restart of its sender or receiver dropped it)
        if (m.source, m.dest) in w.blocked:
            s.lose([m])
        w.deliver(idx)


def _drop(s: QuorumStory, args: list[str]) -> None:
    w = s.world
    for m in s.chosen(args, "drop"):
        w.drop(next(k for k, p in enumerate(w.pending) if p is m))
        s.lines.append(f"network {PROTOCOL.drop_message} {message_text(m)}")
    w.check()


def _deliver_all(s: QuorumStory, args: list[str]) -> None:
    w = s.world
    if not w.pending:
        s.lines.append("(nothing in flight)")
    s.lose([m for m in w.pending if (m.source, m.dest) in w.blocked])
    w.deliver_all()


def _stabilize(s: QuorumStory, args: list[str]) -> None:
    if not s.world.pending:
        s.lines.append("(nothing in flight)")
    for _ in range(50):
        if not s.world.pending:
            return
        _deliver_all(s, args)
    raise s.bad("still messages in flight after 50 rounds")


def _tick(s: QuorumStory, args: list[str]) -> None:
    ms = int(args[0])
    if ms <= 0:
        raise s.bad("tick needs a positive number of milliseconds")
    s.lines.append(f"t={s.world.now + ms}ms")
    s.world.advance(ms)


def _forced(handler: Any) -> Any:
    """A command forcing one action at node N; a refused action prints why no step was taken."""
    def command(s: QuorumStory, args: list[str]) -> None:
        n = s.node(args[0])
        ready = s.world.trigger(n, handler)
        if isinstance(ready.reply, Refused):
            if handler is QuorumNode.flush:
                s.lines.append(f"(nothing to flush at {n})")
            else:
                s.no_step(n)
            return
        s.world.fire_timers(n)
    return command


def _restart(s: QuorumStory, args: list[str], disk_lost: bool = False) -> None:
    """``restart N [port=P]`` (back listening on port P) / ``lose-disk N``."""
    n = s.node(args[0])
    w = s.world
    for a in args[1:]:
        if disk_lost or not re.fullmatch(r"port=\d+", a):
            raise s.bad(f"unexpected argument {a!r}: expected `restart N [port=P]` or `lose-disk N`")
        w.move_endpoints(n, int(a.split("=")[1]))
    if disk_lost:
        s.lines += [f"lost {message_text(m)} (connection gone)" for m in w.pending if n in (m.source, m.dest)]
    w.restart(n, disk_lost=disk_lost)
    w.fire_timers(n)


def _append(s: QuorumStory, args: list[str]) -> None:
    if len(args) != 2:
        raise s.bad("expected `append N VALUE`")
    n = s.node(args[0])
    if s.world.append_value(n, int(args[1])) is None:
        node = s.world.nodes[n]
        s.lines.append(f"refused: {n} is {node.role.value} in epoch {node.current_epoch} (NotLeader)")


def _change_voters(add: bool) -> Any:
    """``add-voter N X`` / ``remove-voter N X``: a voter change requested at N."""
    def command(s: QuorumStory, args: list[str]) -> None:
        if len(args) != 2:
            raise s.bad(f"expected `{'add' if add else 'remove'}-voter N X`")
        n, x = s.node(args[0]), s.node(args[1])
        refusal = s.world.change_voters(n, x, add)
        if refusal is not None:
            s.lines.append(f"refused: {refusal}")
    return command


def _snapshot_command(s: QuorumStory, args: list[str]) -> None:
    """``snapshot N [K]``: TakeSnapshot(N, K), K defaulting to N's high watermark."""
    if len(args) not in (1, 2) or (len(args) == 2 and not args[1].isdigit()):
        raise s.bad("expected `snapshot N [K]`")
    n = s.node(args[0])
    node = s.world.nodes[n]
    k = int(args[1]) if len(args) == 2 else node.high_watermark
    if not s.world.trigger(n, QuorumNode.take_snapshot, k=k).steps:
        s.lines.append(f"refused: {n} cannot snapshot below {k} (log start {node.storage.log_start_offset}, "
                       f"hwm {node.high_watermark}, snapshots {_snapshot_ids(node)})")


def _clean(s: QuorumStory, args: list[str]) -> None:
    """``clean N [O]``: DeleteBeforeSnapshot(N, O), O defaulting to N's latest snapshot's end."""
    if len(args) not in (1, 2) or (len(args) == 2 and not args[1].isdigit()):
        raise s.bad("expected `clean N [O]`")
    n = s.node(args[0])
    node = s.world.nodes[n]
    latest = node.storage.latest_snapshot
    o = int(args[1]) if len(args) == 2 else (latest.end if latest is not None else 0)
    if not s.world.trigger(n, QuorumNode.delete_before_snapshot, o=o).steps:
        s.lines.append(f"refused: {n} cannot move its log start to {o} (log start {node.storage.log_start_offset}, "
                       f"hwm {node.high_watermark}, snapshots {_snapshot_ids(node)})")


def _isolate(s: QuorumStory, args: list[str]) -> None:
    if not args:
        raise s.bad("expected `isolate N [M ...]`")
    w = s.world
    group = {s.node(a) for a in args}
    w.blocked.clear()
    w.partition(group)
    rest = [i for i in w.ids if i not in group]
    s.lines.append(f"partition: {' '.join(map(str, sorted(group)))} | {' '.join(map(str, rest))}")


def _heal(s: QuorumStory, args: list[str]) -> None:
    s.world.heal()
    s.lines.append("all links open")


def _run(s: QuorumStory, args: list[str]) -> None:
    ms = int(args[0])
    if ms <= 0:
        raise s.bad("run needs a positive number of milliseconds")
    s.coarse(lambda: s.world.run(ms))


def _settle(s: QuorumStory, args: list[str]) -> None:
    w = s.world
    result: list[bool] = []
    s.coarse(lambda: result.append(w.settle()))
    lid = w.leader()
    if result[0] and lid is not None:
        ld = w.nodes[lid]
        s.lines.append(f"converged: leader {lid} in epoch {ld.current_epoch}, every log ends at "
                       f"{ld.storage.end_offset}, all committed")
    else:
        s.lines.append("NOT converged within 30000ms")
        behind = _not_caught_up(w)
        if behind:
            raise InvariantViolation(Violation("FollowersCatchUp", behind))


def _not_caught_up(w: QuorumWorld) -> str:
    """The voters whose log does not reach the end of the committed prefix once the network
    healed (the liveness FollowersCatchUp), or "" if every voter's does."""
    committed = len(w.monitor.committed)
    behind = [f"{i} (log {n.storage.log_start_offset}..{n.storage.end_offset})" for i, n in w.nodes.items()
              if n.storage.end_offset < committed]
    return f"voters {', '.join(behind)} never reach the {committed} committed records" if behind else ""


def _status(s: QuorumStory, args: list[str]) -> None:
    w = s.world
    lid = w.leader()
    s.lines.append(f"t={w.now}ms leader={show(lid)}" + (f" epoch={w.nodes[lid].current_epoch}" if lid is not None else ""))
    cut = sorted((a, b) for a, b in w.blocked if a < b)
    if cut:
        s.lines.append("cut: " + " ".join(f"{a}<->{b}" for a, b in cut))
    s.lines.append(f"in flight: {len(w.pending)}")
    s.lines += ["  " + message_text(m) for m in w.pending]


def _voter_set(s: QuorumStory, args: list[str]) -> None:
    """``voter-set [N ...]``: each node's latest voter set with the endpoints it lists."""
    for i in [s.node(a) for a in args] or list(s.world.ids):
        s.lines.append(f"{i}: " + "; ".join(voter_node_text(v) for v in s.world.nodes[i].voter_nodes_at()))


def _raft_state(s: QuorumStory, args: list[str]) -> None:
    s.lines += [node_text(s.world.nodes[i], s.world.now) for i in s.world.ids]


def _log(s: QuorumStory, args: list[str]) -> None:
    ids = [s.node(a) for a in args] or list(s.world.ids)
    for i in ids:
        st = s.world.nodes[i].storage
        start = f"(from {st.log_start_offset}) " if st.log_start_offset else ""
        s.lines.append(f"{i}: {start}" + (" ".join(entry_text(e) for e in st.entries) or "(empty)"))


QuorumStory.commands = {
    "deliver": _deliver, "drop": _drop, "deliver-all": _deliver_all, "stabilize": _stabilize,
    "tick": _tick, "timeout": _forced(QuorumNode.timeout), "flush": _forced(QuorumNode.flush),
    "resign": _forced(QuorumNode.resign), "restart": _restart,
    "lose-disk": lambda s, a: _restart(s, a, disk_lost=True),
    "append": _append, "add-voter": _change_voters(True), "remove-voter": _change_voters(False),
    "snapshot": _snapshot_command, "clean": _clean, "isolate": _isolate, "heal": _heal, "run": _run, "settle": _settle,
    "status": _status, "raft-state": _raft_state, "log": _log, "voter-set": _voter_set,
}


def run_script(path: str | Path, rewrite: bool = False) -> list[str]:
    """Run one story file; the outputs of its commands.  Raises ``DatadrivenMismatch`` when an
    output differs from the golden one (unless ``rewrite``), ``DatadrivenError`` (file:line) on a bad
    command."""
    return QuorumStory().run(path, rewrite=rewrite)
