"""The datadriven command language for consumer-group stories (tests/groups/testdata/*.txt, run by
kraft.core.datadriven): one command is one step of the world (deliver one message, fire one
node's timers, crash, restart, join, commit), and its output is what the coordinator and the
consumers did, as the declaration names it: the spec actions taken, the state that changed and
the messages sent.  A JoinGroup -> SyncGroup -> rebalance exchange reads as a story.

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
    state                         the coordinator, the consumers, the messages in flight

An invariant broken by a step is reported under it as ``INVARIANT VIOLATED <name>: <why>``.
"""

from __future__ import annotations

from typing import Any

from kraft.core.datadriven import Case, DatadrivenError
from kraft.core.step import Ready
from kraft.groups.coordinator import COORDINATOR, GroupConfig
from kraft.groups.world import GroupWorld
from kraft.groups.messages import (
    Heartbeat,
    HeartbeatResponse,
    JoinGroup,
    JoinGroupResponse,
    LeaveGroup,
    OffsetCommit,
    OffsetCommitResponse,
    RebalanceProtocol,
    SyncGroup,
    SyncGroupResponse,
    is_request,
)
from kraft.groups.protocol import PROTOCOL

_TYPES = {t.__name__: t for t in (JoinGroup, JoinGroupResponse, SyncGroup, SyncGroupResponse, Heartbeat,
                                  HeartbeatResponse, LeaveGroup, OffsetCommit, OffsetCommitResponse)}


def _parts(ps: Any) -> str:
    return "[" + ",".join(sorted(map(str, ps))) + "]"


def _fun(pairs: Any) -> str:
    return "{" + ", ".join(f"{k}:{_parts(v)}" for k, v in sorted(pairs)) + "}"


def _or_none(x: Any) -> str:
    return "none" if x is None else str(x)


def msg_text(m: Any) -> str:
    """One message, as a reviewer reads it: direction, type, the fields that matter."""
    client = m.source if is_request(m) else m.dest
    head = f"{client}->{COORDINATOR}" if is_request(m) else f"{COORDINATOR}->{client}"
    kind = type(m).__name__
    if isinstance(m, JoinGroup):
        body = f"member={_or_none(m.member)} owned={_parts(m.owned)}"
    elif isinstance(m, JoinGroupResponse):
        body = f"{m.error.value} member={_or_none(m.member)}"
        if m.generation:
            body += f" generation={m.generation} leader={_or_none(m.leader)}"
        if m.members:
            body += f" members={_fun(m.members)}"
    elif isinstance(m, SyncGroup):
        body = f"member={m.member} generation={m.generation}"
        if m.assignment:
            body += f" assignment={_fun(m.assignment)}"
    elif isinstance(m, SyncGroupResponse):
        body = f"{m.error.value} member={m.member} generation={m.generation} assigned={_parts(m.assigned)}"
    elif isinstance(m, Heartbeat):
        body = f"member={m.member} generation={m.generation}"
    elif isinstance(m, (HeartbeatResponse,)):
        body = f"{m.error.value} member={m.member} generation={m.generation}"
    elif isinstance(m, LeaveGroup):
        body = f"member={m.member}"
    elif isinstance(m, OffsetCommit):
        body = f"member={m.member} generation={m.generation} offsets=" + \
            "{" + ", ".join(f"{p}:{o}" for p, o in m.offsets) + "}"
    else:
        body = f"{m.error.value}"
    inst = getattr(m, "instance", None)
    if inst is not None:
        body += f" instance={inst}"
    return f"{head} {kind} {body} conn={m.conn}"


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


def _views(w: GroupWorld) -> dict[str, dict[str, str]]:
    out = {COORDINATOR: _coordinator_view(w)}
    out.update({cid: _consumer_view(w, cid) for cid in w.consumers})
    return out


def _changes(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> list[str]:
    lines = []
    for node, now in after.items():
        was = before.get(node, {})
        # the optional entries (pending, awaiting-join, parked-sync, assignment) are sets and maps
        diff = [f"{k} {was.get(k, '{}')}->{v}" for k, v in now.items() if was.get(k) != v]
        diff += [f"{k} {v}->{{}}" for k, v in was.items() if k not in now]
        if diff:
            lines.append(f"  {node}: " + ", ".join(diff))
    return lines


class GroupStory:
    """The state of one scenario file: the world, held messages, what was reported already."""

    def __init__(self) -> None:
        self.w: GroupWorld | None = None
        self.held: list[Any] = []
        self.reported = 0

    # ----------------------------------------------------------------- helpers
    def world(self, case: Case) -> GroupWorld:
        if self.w is None:
            raise DatadrivenError(case.path, case.line, "no group yet: start the file with `group consumers=...`")
        return self.w

    def _node(self, case: Case, name: str, coordinator_ok: bool = False) -> str:
        w = self.world(case)
        if name in w.consumers or (coordinator_ok and name == COORDINATOR):
            return name
        raise DatadrivenError(case.path, case.line, f"unknown consumer {name!r} (known: {', '.join(w.consumers)})")

    def _find(self, case: Case, pool: list[Any], args: tuple[str, ...]) -> int:
        kind = client = None
        for a in args:
            if a in _TYPES:
                kind = _TYPES[a]
            else:
                client = self._node(case, a)
        for i, m in enumerate(pool):
            c = m.source if is_request(m) else m.dest
            if (kind is None or isinstance(m, kind)) and (client is None or c == client):
                return i
        raise DatadrivenError(case.path, case.line, f"no message matching {' '.join(args) or 'anything'} "
                                                    f"(in flight: {len(pool)})")

    def _report(self, ready: Ready, before: dict[str, dict[str, str]], delivered: Any = None) -> list[str]:
        """The spec steps of ``ready`` (node and action; a message argument shown when it is not
        the delivered one), the state changes, the messages sent, a newly broken invariant."""
        w = self.w
        assert w is not None
        lines = []
        for s in ready.steps:
            who = "network" if s.node is None else s.node
            extra = []
            if "m" in s.args and s.args["m"] is not delivered:
                extra.append(f"m=({msg_text(s.args['m'])})")
            if "x" in s.args:
                extra.append(f"x={s.args['x']}")
            lines.append(f"{who} {s.action}" + (" " + " ".join(extra) if extra else ""))
        if ready.reply:
            lines.append("  read " + ", ".join(f"{p}@{o}" for p, o in sorted(ready.reply.items(), key=str)))
        lines += _changes(before, _views(w))
        lines += [f"  send {msg_text(m)}" for m in ready.messages]
        found = w.violations()
        if len(found) > self.reported:
            lines += [f"INVARIANT VIOLATED {v}" for v in found[self.reported:]]
            self.reported = len(found)
        return lines

    # ----------------------------------------------------------------- commands
    def __call__(self, case: Case) -> str:
        handler = getattr(self, "cmd_" + case.command, None)
        if handler is None:
            raise DatadrivenError(case.path, case.line, f"unknown command {case.command!r}")
        return "\n".join(handler(case))

    def cmd_group(self, case: Case) -> list[str]:
        opts = dict(a.split("=", 1) for a in case.args if "=" in a)
        bad = [a for a in case.args if "=" not in a] + \
            sorted(set(opts) - {"consumers", "static", "protocol", "partitions", "variant", "session",
                                "rebalance", "heartbeat"})
        if bad or "consumers" not in opts:
            raise DatadrivenError(case.path, case.line, f"group needs consumers=...; unknown {bad}")
        variant = opts.get("variant")
        if variant is not None and variant not in PROTOCOL.variant_names:
            raise DatadrivenError(case.path, case.line, f"unknown variant {variant!r}")
        static = set(opts.get("static", "").split(",")) - {""}
        consumers = opts["consumers"].split(",")
        config = GroupConfig(topics=(("t", int(opts.get("partitions", "2"))),),
                             protocol=RebalanceProtocol(opts.get("protocol", "eager")),
                             session_timeout_ms=int(opts.get("session", "10000")),
                             rebalance_timeout_ms=int(opts.get("rebalance", "30000")),
                             heartbeat_interval_ms=int(opts.get("heartbeat", "3000")),
                             **({variant: True} if variant else {}))
        self.w = GroupWorld(config, tuple((c, c if c in static else None) for c in consumers))
        self.held, self.reported = [], 0
        return self.cmd_state(case)

    def cmd_state(self, case: Case) -> list[str]:
        w = self.world(case)
        lines = [f"t={w.now}ms {w.config.protocol.value}"]
        for node, view in _views(w).items():
            lines.append(f"{node}: " + " ".join(f"{k}={v}" for k, v in view.items()))
        lines += [f"  in flight: {msg_text(m)}" for m in w.pending]
        lines += [f"  held: {msg_text(m)}" for m in self.held]
        return lines

    def _do(self, case: Case, op: Any, *args: Any) -> list[str]:
        before = _views(self.world(case))
        return self._report(op(*args), before) or ["(nothing)"]

    def cmd_join(self, case: Case) -> list[str]:
        return self._do(case, self.world(case).join, self._node(case, case.args[0]))

    def cmd_crash(self, case: Case) -> list[str]:
        return self._do(case, self.world(case).crash, self._node(case, case.args[0]))

    def cmd_restart(self, case: Case) -> list[str]:
        return self._do(case, self.world(case).restart, self._node(case, case.args[0]))

    def cmd_leave(self, case: Case) -> list[str]:
        return self._do(case, self.world(case).leave, self._node(case, case.args[0]))

    def cmd_commit(self, case: Case) -> list[str]:
        return self._do(case, self.world(case).commit, self._node(case, case.args[0]))

    def cmd_poll(self, case: Case) -> list[str]:
        return self._do(case, self.world(case).poll, self._node(case, case.args[0]))

    def cmd_tick(self, case: Case) -> list[str]:
        return self._do(case, self.world(case).tick, self._node(case, case.args[0], coordinator_ok=True))

    def cmd_advance(self, case: Case) -> list[str]:
        w = self.world(case)
        w.now += int(case.args[0])
        return [f"t={w.now}ms"]

    def _deliver_one(self, w: GroupWorld, i: int) -> list[str]:
        m = w.pending[i]
        before = _views(w)
        conns = {cid: c.conn for cid, c in w.consumers.items()}
        client = m.source if is_request(m) else m.dest
        r = w.deliver(i)
        head = f"deliver {msg_text(m)}"
        if not isinstance(m, LeaveGroup) and (not w.consumers[client].up or conns[client] != m.conn):
            return [head, "  lost: its connection is closed"]
        body = self._report(r, before, delivered=m)
        if not r.steps and isinstance(m, SyncGroup):
            body.insert(0, "  parked until the leader's SyncGroup (no spec step yet)")
        if not body and isinstance(m, OffsetCommitResponse):
            body = ["  (no spec step: the spec does not model commit responses)"]
        return [head] + (body or ["  (no spec step)"])

    def cmd_deliver(self, case: Case) -> list[str]:
        w = self.world(case)
        return self._deliver_one(w, self._find(case, w.pending, case.args))

    def cmd_stabilize(self, case: Case) -> list[str]:
        w = self.world(case)
        out: list[str] = []
        for _ in range(200):
            if not w.pending:
                return out or ["(nothing in flight)"]
            out += self._deliver_one(w, 0)
        raise DatadrivenError(case.path, case.line, "stabilize: still busy after 200 deliveries")

    def cmd_hold(self, case: Case) -> list[str]:
        w = self.world(case)
        m = w.pending.pop(self._find(case, w.pending, case.args))
        self.held.append(m)
        return [f"held {msg_text(m)}"]

    def cmd_release(self, case: Case) -> list[str]:
        w = self.world(case)
        m = self.held.pop(self._find(case, self.held, case.args))
        w.pending.insert(0, m)
        return [f"released {msg_text(m)}"]

    def cmd_drop(self, case: Case) -> list[str]:
        w = self.world(case)
        i = self._find(case, w.pending, case.args)
        m = w.pending[i]
        w.drop(i)
        return [f"dropped {msg_text(m)}"]
