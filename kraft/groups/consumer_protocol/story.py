"""Consumer-protocol stories with golden output (tests/groups/consumer_protocol/testdata/*.txt), on
the shared story driver ``kraft.core.datadriven.Story``: every step a node takes prints as it
happens (the spec action, what of the node changed, the messages it sent) and every invariant is
checked after it.  ``pytest --rewrite`` writes the produced output back (review the diff!).

Commands:

    cgroup consumers=c1,c2 [topics=t1:2,t2:2] [assignor=uniform|range] [listener=MS] [static=C,...]
           [variant=NAME]  (``listener``: each rebalance-listener stage takes MS on the application
                          thread; ``static``: the consumers with a ``group.instance.id``)
    join C / leave C / crash C / restart C / poll C
    newprocess C          C (left or failed) is closed and a new process of it subscribes under a
                          new member id
    deliver [TYPE] [C]    the oldest in-flight message of that type to/from C (and nothing else)
    drop [TYPE] [C]       the network loses it
    hold [TYPE] [C] / release [TYPE] [C]   take a message out of the network / put it back first
    advance MS            move the clock; every node takes what came due (consumers first)
    tick N                node N (a consumer or ``coordinator``) takes what is due now
    heartbeat C           C's heartbeat thread sends now, whatever reconciliation stage is pending
    stabilize             deliver in sending order, each receiver taking what became due, until
                          nothing is in flight
    state                 the coordinator, the consumers, the messages in flight (a view)

An invariant broken by a command is reported as ``VIOLATION <name>: <why>`` and ends the story.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from kraft.core.datadriven import Story, drop_message, find_message, hold_message, release_message
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.consumer import Consumer
from kraft.groups.consumer_protocol.messages import IN_GROUP, Errors, Heartbeat, HeartbeatResponse, OffsetCommit, client_of
from kraft.groups.consumer_protocol.protocol import COORDINATOR, PROTOCOL
from kraft.groups.consumer_protocol.world import ConsumerProtocolWorld

_TYPES = {t.__name__: t for t in (Heartbeat, HeartbeatResponse, OffsetCommit)}
_OPTIONS = {"consumers", "topics", "assignor", "listener", "static", "variant"}


def _parts(ps: Any) -> str:
    return "none" if ps is None else "[" + ",".join(sorted(map(str, ps))) + "]"


def msg_text(m: Any) -> str:
    """One message as a reviewer reads it: direction, type, the fields that matter."""
    who = client_of(m)
    if isinstance(m, Heartbeat):
        static = "" if m.instance_id is None else f" instance={m.instance_id} member={m.member_id}"
        # the subscription is shown when it changed (every join carries it)
        changed = m.subscribed_topic_names is not None and m.member_epoch != 0
        sub = f" sub={list(m.subscribed_topic_names or ())}" if changed else ""
        return (f"{who}->{COORDINATOR} Heartbeat epoch={m.member_epoch} owned={_parts(m.topic_partitions)} "
                f"conn={m.conn}{static}{sub}")
    if isinstance(m, HeartbeatResponse):
        return (f"{COORDINATOR}->{who} HeartbeatResponse {m.error.value} epoch={m.member_epoch} "
                f"assignment={_parts(m.assignment)} conn={m.conn}")
    offsets = ", ".join(f"{p}:{o}" for p, o in m.offsets)
    return f"{who}->{COORDINATOR} OffsetCommit epoch={m.member_epoch} offsets={{{offsets}}}"


def _config(opts: dict[str, str]) -> ProtocolConfig:
    topics = tuple((t, int(n)) for t, n in (x.split(":") for x in opts.get("topics", "t1:2,t2:2").split(",")))
    variant = opts.get("variant")
    if variant is not None and variant not in PROTOCOL.variant_names:
        raise ValueError(f"unknown variant {variant!r}")
    static = tuple(opts["static"].split(",")) if opts.get("static") else ()
    return ProtocolConfig(topics=topics, assignor=opts.get("assignor", "uniform"), static=static,
                          listener_ms=int(opts.get("listener", "0")), **({variant: True} if variant else {}))


class ConsumerProtocolStory(Story):
    """A consumer-protocol story: ``cgroup consumers=...`` begins it."""

    start = "cgroup"
    usage = ("cgroup consumers=C1,C2,... [topics=T:N,...] [assignor=uniform|range] [listener=MS] [static=C,...] "
             "[variant=NAME]")
    views = ("state",)
    world: ConsumerProtocolWorld

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Any] = []

    def begin(self, args: list[str]) -> ConsumerProtocolWorld:
        opts = dict(a.split("=", 1) for a in args if "=" in a)
        bad = [a for a in args if "=" not in a] + sorted(set(opts) - _OPTIONS)
        if bad or "consumers" not in opts:
            raise self.bad(f"cgroup needs consumers=...; unknown {bad}")
        try:
            config = _config(opts)
        except ValueError as exc:
            raise self.bad(f"bad cgroup option ({exc})") from None
        consumers = tuple(opts["consumers"].split(","))
        if set(config.static) - set(consumers):
            raise self.bad(f"static consumers {sorted(set(config.static) - set(consumers))} are not consumers")
        world = ConsumerProtocolWorld(config, consumers)
        self.held = []
        self.lines += _state(world, self.held)
        return world

    def snapshot(self, node_id: Any) -> dict[str, Any]:
        w = self.world
        if node_id == COORDINATOR:
            co = w.coordinator
            out: dict[str, Any] = {"group-epoch": co.group_epoch, "assignment-epoch": co.assignment_epoch}
            for x, m in sorted(co.members.items()):
                out[x] = f"{m.state.value}@{m.epoch} assigned={_parts(m.assigned)}" + \
                    (f" pending={_parts(m.pending)}" if m.pending else "")
            return out
        c = w.consumers[node_id]
        return {"state": c.state.value, "epoch": c.epoch, "owned": _parts(c.owned), "conn": c.conn}

    def message_text(self, message: Any) -> str:
        return msg_text(message)

    def effect_lines(self, node_id: Any, ready: Any) -> list[str]:
        """An offset commit's answer (the spec does not model commit responses)."""
        return [f"  answer {ready.reply.value}"] if isinstance(ready.reply, Errors) else []

    # ------------------------------------------------------------------ helpers for the commands
    def node(self, name: str, coordinator_ok: bool = False) -> str:
        if name in self.world.consumers or (coordinator_ok and name == COORDINATOR):
            return name
        raise self.bad(f"unknown consumer {name!r} (known: {', '.join(self.world.consumers)})")

    def find(self, pool: list[Any], args: list[str]) -> int:
        """The index of the oldest message in ``pool`` of the TYPE and consumer ``args`` name."""
        return find_message(self, pool, args, _TYPES, client_of)

    def deliver(self, i: int) -> None:
        m = self.world.pending[i]
        self.lines.append(f"deliver {msg_text(m)}")
        n = len(self.lines)
        lost = not self.world.is_open(m)
        self.world.deliver(i)
        if lost:
            self.lines.append("  lost: its connection is closed")
        elif len(self.lines) == n:
            self.lines.append("  (no spec step)")
        self.world.check()


def _state(w: ConsumerProtocolWorld, held: list[Any]) -> list[str]:
    co = w.coordinator
    lines = [f"t={w.now}ms coordinator: group-epoch={co.group_epoch} assignment-epoch={co.assignment_epoch}"]
    for x, m in sorted(co.members.items()):
        lines.append(f"  member {x}: {m.state.value} epoch={m.epoch} prev={m.prev} assigned={_parts(m.assigned)} "
                     f"pending={_parts(m.pending)} target={_parts(co.target.get(x, frozenset()))}")
    for cid, c in w.consumers.items():
        static = "" if c.instance_id is None else f" member={c.member_id}"
        lines.append(f"{cid}: {'up' if c.up else 'down'} {c.state.value} epoch={c.epoch} owned={_parts(c.owned)} "
                     f"conn={c.conn}{static}")
    lines += [f"  in flight: {msg_text(m)}" for m in w.pending]
    lines += [f"  held: {msg_text(m)}" for m in held]
    return lines


def _operation(op: Callable[[ConsumerProtocolWorld, str], Any], coordinator_ok: bool = False) -> Any:
    """A command running one world operation on node N; the steps print as they happen."""
    def command(s: ConsumerProtocolStory, args: list[str]) -> None:
        op(s.world, s.node(args[0], coordinator_ok))
        s.world.check()
        if not s.lines:
            s.lines.append("(nothing)")
    return command


def _subscribe(s: ConsumerProtocolStory, args: list[str]) -> None:
    if len(args) != 2:
        raise s.bad("subscribe needs a consumer and its topics: subscribe C T1,T2")
    try:
        s.world.subscribe(s.node(args[0]), tuple(args[1].split(",")))
    except ValueError as exc:
        raise s.bad(str(exc)) from None
    s.world.check()
    if not s.lines:
        s.lines.append("(nothing)")


def _poll_command(s: ConsumerProtocolStory, args: list[str]) -> None:
    read = s.world.poll(s.node(args[0]))
    s.lines.append("read " + (", ".join(f"{p}@{o}" for p, o in sorted(read.items(), key=str)) or "nothing"))


def _heartbeat(s: ConsumerProtocolStory, args: list[str]) -> None:
    cid = s.node(args[0])
    c = s.world.consumers[cid]
    if not (c.up and c.state in IN_GROUP and not c.inflight):
        raise s.bad(f"{cid} cannot send a heartbeat now ({c.state.value}, "
                    f"{'a heartbeat in flight' if c.inflight else 'down' if not c.up else 'not in the group'})")
    s.world.trigger(cid, Consumer.send_heartbeat)
    s.world.check()


def _deliver(s: ConsumerProtocolStory, args: list[str]) -> None:
    s.deliver(s.find(s.world.pending, args))


def _stabilize(s: ConsumerProtocolStory, args: list[str]) -> None:
    for _ in range(200):
        if not s.world.pending:
            if not s.lines:
                s.lines.append("(nothing in flight)")
            return
        dest = s.world.dest(s.world.pending[0])
        s.deliver(0)
        s.world.tick(dest)
        s.world.check()
    raise s.bad("still busy after 200 deliveries")


def _hold(s: ConsumerProtocolStory, args: list[str]) -> None:
    hold_message(s, s.find(s.world.pending, args))


def _release(s: ConsumerProtocolStory, args: list[str]) -> None:
    release_message(s, s.find(s.held, args))


def _drop(s: ConsumerProtocolStory, args: list[str]) -> None:
    drop_message(s, s.find(s.world.pending, args))


def _advance(s: ConsumerProtocolStory, args: list[str]) -> None:
    s.lines.append(f"t={s.world.now + int(args[0])}ms")
    s.world.advance(int(args[0]))
    s.world.check()


ConsumerProtocolStory.commands = {
    "join": _operation(ConsumerProtocolWorld.join), "leave": _operation(ConsumerProtocolWorld.leave),
    "crash": _operation(ConsumerProtocolWorld.crash), "restart": _operation(ConsumerProtocolWorld.restart),
    "newprocess": _operation(ConsumerProtocolWorld.new_process), "subscribe": _subscribe,
    "tick": _operation(ConsumerProtocolWorld.tick, coordinator_ok=True),
    "poll": _poll_command, "heartbeat": _heartbeat, "deliver": _deliver, "stabilize": _stabilize,
    "hold": _hold, "release": _release, "drop": _drop, "advance": _advance,
    "state": lambda s, args: s.lines.extend(_state(s.world, s.held)),
}


def run_script(path: str | Path, rewrite: bool = False) -> list[str]:
    """Run one story file; the outputs of its commands (``DatadrivenMismatch`` on a difference
    unless ``rewrite``, ``DatadrivenError`` naming file and line on a bad command)."""
    return ConsumerProtocolStory().run(path, rewrite=rewrite)
