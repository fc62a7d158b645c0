"""Consumer-group stories with golden output (tests/groups/testdata/*.txt), on the shared story
driver ``kraft.core.datadriven.Story``: one command is one operation of the world (deliver one
message, fire one node's timers, crash, restart, join, commit), and its output is what the
coordinator and the consumers did, as the declaration names it: the spec actions taken, the state
that changed and the messages sent.  A JoinGroup -> SyncGroup -> rebalance exchange reads as a
story.  ``pytest --rewrite`` writes the produced output back (review the diff!).

An operation of the world may take several node steps (a response that sends its consumer back to
Idle also takes its SendJoinGroup), so a command prints one report for all of them, after it:
the spec steps, then the state changes of every node, then the messages sent.

Commands:

    group consumers=c1,c2 [static=c2] [protocol=eager|cooperative] [partitions=N] [variant=NAME]
          [session=MS] [rebalance=MS] [heartbeat=MS]
    join C                        C (Idle) sends its JoinGroup
    deliver [TYPE] [C]            the oldest in-flight message of that type to/from C
    stabilize                     deliver everything in flight, oldest first, until none is left
    hold TYPE C / release TYPE C  take a message out of the network / put it back, oldest first
    drop TYPE C                   the network loses a message
    advance MS                    move the clock (no timer fires)
    tick C|coordinator            fire the timers of one node that are due now
    crash C / restart C / leave C / commit C / poll C
    state                         the coordinator, the consumers, the messages in flight (a view)

An invariant broken by a command is reported under it as ``VIOLATION <name>: <why>`` and ends the
story (only ``state`` may follow).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from kraft.core.datadriven import Story, drop_message, find_message, hold_message, release_message
from kraft.core.step import Ready
from kraft.groups import messages as M
from kraft.groups.coordinator import COORDINATOR, GroupConfig
from kraft.groups.protocol import PROTOCOL
from kraft.groups.world import GroupWorld, client

_TYPES = {t.__name__: t for t in (M.JoinGroup, M.JoinGroupResponse, M.SyncGroup, M.SyncGroupResponse,
                                  M.Heartbeat, M.HeartbeatResponse, M.LeaveGroup, M.OffsetCommit,
                                  M.OffsetCommitResponse)}
_OPTIONS = {"consumers", "static", "protocol", "partitions", "variant", "session", "rebalance", "heartbeat"}
Views = dict[str, dict[str, str]]


def _parts(ps: Any) -> str:
    return "[" + ",".join(sorted(map(str, ps))) + "]"


def _fun(pairs: Any) -> str:
    return "{" + ", ".join(f"{k}:{_parts(v)}" for k, v in sorted(pairs)) + "}"


def _or_none(x: Any) -> str:
    return "none" if x is None else str(x)


def _body(m: Any) -> str:
    """The fields of a message that matter, by type."""
    if isinstance(m, M.JoinGroup):
        return f"member={_or_none(m.member)} owned={_parts(m.owned)}"
    if isinstance(m, M.JoinGroupResponse):
        body = f"{m.error.value} member={_or_none(m.member)}"
        if m.generation:
            body += f" generation={m.generation} leader={_or_none(m.leader)}"
        return body + (f" members={_fun(m.members)}" if m.members else "")
    if isinstance(m, M.SyncGroup):
        body = f"member={m.member} generation={m.generation}"
        return body + (f" assignment={_fun(m.assignment)}" if m.assignment else "")
    if isinstance(m, M.SyncGroupResponse):
        return f"{m.error.value} member={m.member} generation={m.generation} assigned={_parts(m.assigned)}"
    if isinstance(m, M.Heartbeat):
        return f"member={m.member} generation={m.generation}"
    if isinstance(m, M.HeartbeatResponse):
        return f"{m.error.value} member={m.member} generation={m.generation}"
    if isinstance(m, M.LeaveGroup):
        return f"member={m.member}"
    if isinstance(m, M.OffsetCommit):
        return f"member={m.member} generation={m.generation} offsets=" + \
            "{" + ", ".join(f"{p}:{o}" for p, o in m.offsets) + "}"
    return f"{m.error.value}"


def msg_text(m: Any) -> str:
    """One message, as a reviewer reads it: direction, type, the fields that matter."""
    head = f"{client(m)}->{COORDINATOR}" if M.is_request(m) else f"{COORDINATOR}->{client(m)}"
    body = _body(m)
    inst = getattr(m, "instance", None)
    if inst is not None:
        body += f" instance={inst}"
    return f"{head} {type(m).__name__} {body} conn={m.conn}"


def _coordinator_view(w: GroupWorld) -> dict[str, str]:
    co = w.coordinator
    view = {"state": co.state.value, "generation": str(co.generation), "leader": _or_none(co.leader),
            "members": "{" + ", ".join(sorted(co.members)) + "}"}
    if co.pending:
        view["pending"] = "{" + ", ".join(sorted(co.pending)) + "}"
    if co.awaiting_join:
        view["awaiting-join"] = "{" + ", ".join(sorted(co.awaiting_join)) + "}"
    if co.awaiting_sync:
        view["parked-sync"] = "{" + ", ".join(sorted(co.awaiting_sync)) + "}"
    if any(m.assignment for m in co.members.values()):
        view["assignment"] = _fun((mid, m.assignment) for mid, m in co.members.items())
    return view


def _consumer_view(w: GroupWorld, cid: str) -> dict[str, str]:
    c = w.consumers[cid]
    return {"phase": c.phase.value, "member": _or_none(c.member_id), "generation": str(c.generation),
            "owned": _parts(c.owned), "conn": str(c.conn)}


def _views(w: GroupWorld) -> Views:
    out = {COORDINATOR: _coordinator_view(w)}
    out.update({cid: _consumer_view(w, cid) for cid in w.consumers})
    return out


def _changes(before: Views, after: Views) -> list[str]:
    lines = []
    for node, now in after.items():
        was = before.get(node, {})
        # the optional entries (pending, awaiting-join, parked-sync, assignment) are sets and maps
        diff = [f"{k} {was.get(k, '{}')}->{v}" for k, v in now.items() if was.get(k) != v]
        diff += [f"{k} {v}->{{}}" for k, v in was.items() if k not in now]
        if diff:
            lines.append(f"  {node}: " + ", ".join(diff))
    return lines


class GroupStory(Story):
    """A consumer-group story: ``group consumers=...`` begins it."""

    start = "group"
    usage = "group consumers=C1,C2,... [static=..] [protocol=eager|cooperative] [partitions=N] [variant=NAME] " \
            "[session=MS] [rebalance=MS] [heartbeat=MS]"
    views = ("state",)
    world: GroupWorld

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Any] = []   # messages taken out of the network

    def begin(self, args: list[str]) -> GroupWorld:
        opts = dict(a.split("=", 1) for a in args if "=" in a)
        bad = [a for a in args if "=" not in a] + sorted(set(opts) - _OPTIONS)
        if bad or "consumers" not in opts:
            raise self.bad(f"group needs consumers=...; unknown {bad}")
        variant = opts.get("variant")
        if variant is not None and variant not in PROTOCOL.variant_names:
            raise self.bad(f"unknown variant {variant!r}")
        static = set(opts.get("static", "").split(",")) - {""}
        try:
            config = GroupConfig(topics=(("t", int(opts.get("partitions", "2"))),),
                                 protocol=M.RebalanceProtocol(opts.get("protocol", "eager")),
                                 session_timeout_ms=int(opts.get("session", "10000")),
                                 rebalance_timeout_ms=int(opts.get("rebalance", "30000")),
                                 heartbeat_interval_ms=int(opts.get("heartbeat", "3000")),
                                 **({variant: True} if variant else {}))
        except ValueError as exc:
            raise self.bad(f"bad group option ({exc})") from None
        world = GroupWorld(config, tuple((c, c if c in static else None) for c in opts["consumers"].split(",")))
        self.held = []
        self.lines += _state(world, self.held)
        return world

    def observe(self, node_id: Any, ready: Ready) -> None:
        """Nothing as it happens: a command reports all its node steps at once, after it."""

    # ------------------------------------------------------------------ helpers for the commands
    def node(self, name: str, coordinator_ok: bool = False) -> str:
        if name in self.world.consumers or (coordinator_ok and name == COORDINATOR):
            return name
        raise self.bad(f"unknown consumer {name!r} (known: {', '.join(self.world.consumers)})")

    def find(self, pool: list[Any], args: list[str]) -> int:
        """The index of the oldest message in ``pool`` of the TYPE and to/from the consumer
        ``args`` name (either may be left out)."""
        return find_message(self, pool, args, _TYPES, client)

    def message_text(self, message: Any) -> str:
        return msg_text(message)

    def report(self, ready: Ready, before: Views, delivered: Any = None) -> list[str]:
        """The spec steps of ``ready`` (node and action; a message argument shown when it is not
        the delivered one), what was read, the state changes, the messages sent."""
        lines = []
        for s in ready.steps:
            extra = []
            if "m" in s.args and s.args["m"] is not delivered:
                extra.append(f"m=({msg_text(s.args['m'])})")
            if "x" in s.args:
                extra.append(f"x={s.args['x']}")
            lines.append(f"{'network' if s.node is None else s.node} {s.action}" + (" " + " ".join(extra) if extra else ""))
        if ready.reply:
            lines.append("  read " + ", ".join(f"{p}@{o}" for p, o in sorted(ready.reply.items(), key=str)))
        lines += _changes(before, _views(self.world))
        lines += [f"  send {msg_text(m)}" for m in ready.messages]
        return lines

    def deliver(self, i: int) -> None:
        """Deliver the ``i``-th message in flight and print what it did; then the invariants."""
        w = self.world
        m = w.pending[i]
        before = _views(w)
        lost = not w.is_open(m)
        ready = w.deliver(i)
        self.lines.append(f"deliver {msg_text(m)}")
        if lost:
            self.lines.append("  lost: its connection is closed")
            return
        body = self.report(ready, before, delivered=m)
        if not ready.steps and isinstance(m, M.SyncGroup):
            body.insert(0, "  parked until the leader's SyncGroup (no spec step yet)")
        if not body and isinstance(m, M.OffsetCommitResponse):
            body = ["  (no spec step: the spec does not model commit responses)"]
        self.lines += body or ["  (no spec step)"]
        w.check()


def _state(w: GroupWorld, held: list[Any]) -> list[str]:
    lines = [f"t={w.now}ms {w.config.protocol.value}"]
    for node, view in _views(w).items():
        lines.append(f"{node}: " + " ".join(f"{k}={v}" for k, v in view.items()))
    lines += [f"  in flight: {msg_text(m)}" for m in w.pending]
    lines += [f"  held: {msg_text(m)}" for m in held]
    return lines


def _operation(op: Callable[[GroupWorld, str], Ready], coordinator_ok: bool = False) -> Any:
    """A command running one world operation on node N: its report, then the invariants."""
    def command(s: GroupStory, args: list[str]) -> None:
        before = _views(s.world)
        s.lines += s.report(op(s.world, s.node(args[0], coordinator_ok)), before) or ["(nothing)"]
        s.world.check()
    return command


def _deliver(s: GroupStory, args: list[str]) -> None:
    s.deliver(s.find(s.world.pending, args))


def _stabilize(s: GroupStory, args: list[str]) -> None:
    for _ in range(200):
        if not s.world.pending:
            if not s.lines:
                s.lines.append("(nothing in flight)")
            return
        s.deliver(0)
    raise s.bad("stabilize: still busy after 200 deliveries")


def _hold(s: GroupStory, args: list[str]) -> None:
    hold_message(s, s.find(s.world.pending, args))


def _release(s: GroupStory, args: list[str]) -> None:
    release_message(s, s.find(s.held, args))


def _drop(s: GroupStory, args: list[str]) -> None:
    drop_message(s, s.find(s.world.pending, args))


def _advance(s: GroupStory, args: list[str]) -> None:
    s.world.now += int(args[0])
    s.lines.append(f"t={s.world.now}ms")


GroupStory.commands = {
    "join": _operation(GroupWorld.join), "crash": _operation(GroupWorld.crash),
    "restart": _operation(GroupWorld.restart), "leave": _operation(GroupWorld.leave),
    "commit": _operation(GroupWorld.commit), "poll": _operation(GroupWorld.poll),
    "tick": _operation(GroupWorld.tick, coordinator_ok=True),
    "deliver": _deliver, "stabilize": _stabilize, "hold": _hold, "release": _release, "drop": _drop,
    "advance": _advance, "state": lambda s, args: s.lines.extend(_state(s.world, s.held)),
}


def run_script(path: str | Path, rewrite: bool = False) -> list[str]:
    """Run one story file; the outputs of its commands.  Raises ``DatadrivenMismatch`` when an
    output differs from the golden one (unless ``rewrite``), ``DatadrivenError`` (file:line) on a bad
    command."""
    return GroupStory().run(path, rewrite=rewrite)
