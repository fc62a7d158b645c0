"""``kraft simulate --protocol groups``: one consumer group in the shared simulator.

Nodes are ``"coordinator"`` and the consumers ``c1..cN`` (the last one static, instance id = its
name). The group state lives in a :class:`kraft.groups.harness.GroupWorld` (coordinator,
consumers, offsets, history, rebalance log, invariants); the simulator's network carries the
messages in :class:`Envelope`\\ s (it needs ``source``/``dest``) and injects drops, duplicates,
delays, reordering, partitions and crashes. After every event the spec's invariants run over the
projections.

Client operations: a ``write`` is a ``poll`` of a random live consumer (one record per owned
partition), a ``read`` is a ``commit`` (OffsetCommit of its positions); with the
``subscribe``/``assign`` records of the harness that is Jepsen's Kafka-workload vocabulary.

A crashed coordinator keeps its state (as if reloaded from ``__consumer_offsets``) and is simply
unreachable while down. The rebalance protocol is eager for even seeds and cooperative for odd
ones, unless a variant fixes it.

Trace recording (docs/conformance.md, "Consumer groups"). The coordinator and the consumers are
stepped through ``step(input, now) -> Ready`` (via the world); the ``Ready`` of one simulator event
carries the spec steps taken, in order (named by the declaration, :mod:`kraft.groups.protocol`),
and the plug-in records one trace line: the first spec action with its node and arguments, the others
(in order) under ``args.then`` (the glue composes them: the implementation takes at once what
the spec splits, e.g. a JoinGroup that completes the join phase is ``HandleJoinGroup`` then
``CompleteJoin``), and the post-state of every projectable spec variable in the spec's
vocabulary (:func:`kraft.groups.projection.spec_state`, plus ``msgs``, the network). Kafka runs
the protocol over TCP, which never delivers a segment twice: the plug-in's transport discards a
duplicated copy of a message that was already delivered (recorded with ``"spec": false``), so a
``dup`` fault exercises exactly that. A message that arrives on a closed connection is lost
(``"spec": false``: the spec's ``CloseConnection`` already removed it), and so is a commit
response (the spec does not model commit responses).
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from kraft.core.invariants import Violation
from kraft.core.step import Ready, SpecStep, Tick, Trigger
from kraft.groups import projection
from kraft.groups.consumer import GroupConsumer
from kraft.groups.coordinator import COORDINATOR, GroupConfig
from kraft.groups.harness import GroupWorld
from kraft.groups.messages import ConsumerPhase, LeaveGroup, Message, RebalanceProtocol, SyncGroup, is_request
from kraft.groups.protocol import DROP_MESSAGE, PROTOCOL
from kraft.sim.core import Protocol, Simulator

VARIANTS = PROTOCOL.variant_names


def _note_name(payload: Any) -> str:
    """The name of a delivery that took no spec step (recorded with ``"spec": false``): the
    handler's spec name for a message the declaration dispatches, else ``Handle<type>`` (an
    OffsetCommitResponse: the spec does not model commit responses)."""
    try:
        return PROTOCOL.for_message(type(payload)).spec
    except KeyError:
        return f"Handle{type(payload).__name__}"


@attrs.frozen
class Envelope:
    source: str
    dest: str
    payload: Any
    seq: int = 0  # one per send: the network's duplicates share it


def wrap(msg: Message, seq: int = 0) -> Envelope:
    if is_request(msg):
        return Envelope(msg.source, COORDINATOR, msg, seq)  # type: ignore[union-attr]
    return Envelope(COORDINATOR, msg.dest, msg, seq)  # type: ignore[union-attr]


def variants() -> list[str]:
    return list(VARIANTS)


class GroupNode:
    """The coordinator or one consumer of the group as the simulator's node: a delivered
    ``Envelope`` goes to the world (which steps the receiver), ``TICK`` to the node's own
    ``step``; the ``Ready`` that comes back is the node's, its messages wrapped for the network
    and its spec steps in the trace's vocabulary."""

    def __init__(self, plugin: "GroupsProtocol", node_id: Any) -> None:
        self.plugin = plugin
        self.id = node_id

    def step(self, inp: Any, now: int) -> Ready:
        p = self.plugin
        p.w.now = now
        if isinstance(inp, Tick):
            return p._tick(self.id, now)
        return p._deliver(inp)


class GroupsProtocol(Protocol):
    name = "groups"
    spec = "ConsumerGroup"
    # a consumer's or the coordinator's timers fire on their own wake-ups (the client's poll loop,
    # the coordinator's timer wheel), not right after a delivery
    internal_after_delivery = False
    declaration = PROTOCOL

    def __init__(self, consumers: int = 3, variant: str | None = None, partitions: int = 4) -> None:
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        if consumers < 1:
            raise ValueError("need at least one consumer")
        self.n = consumers
        self.variant = variant
        self.partitions = partitions
        self.world: GroupWorld | None = None
        self._seq = 0
        self._delivered: set[int] = set()
        self._mirrored = 0

    # -- setup -------------------------------------------------------------------------------
    def setup(self, sim: Simulator) -> None:
        if self.variant == "CooperativeAssignWithoutRevoke":
            proto = RebalanceProtocol.COOPERATIVE
        elif self.variant is not None:
            proto = RebalanceProtocol.EAGER
        else:
            proto = RebalanceProtocol.COOPERATIVE if sim.seed % 2 else RebalanceProtocol.EAGER
        flags = {self.variant: True} if self.variant else {}
        config = GroupConfig(protocol=proto, topics=(("t", self.partitions),), session_timeout_ms=1_000,
                             rebalance_timeout_ms=3_000, heartbeat_interval_ms=300,
                             request_timeout_ms=3_500, **flags)
        specs = tuple((f"c{i}", f"c{i}" if i == self.n and self.n > 1 else None) for i in range(1, self.n + 1))
        self.world = GroupWorld(config, specs)
        self.world.now = sim.now
        for c in self.world.consumers.values():  # one trace step per consumer's first JoinGroup
            sim.apply(c.client_id, self._ready(c.step(Trigger(GroupConsumer.send_join_group), sim.now)))

    @property
    def w(self) -> GroupWorld:
        assert self.world is not None
        return self.world

    def node_ids(self) -> list[Any]:
        return [COORDINATOR, *self.w.consumers]

    def node(self, node_id: Any) -> GroupNode:
        return GroupNode(self, node_id)

    def _wrap(self, m: Message) -> Envelope:
        self._seq += 1
        return wrap(m, self._seq)

    # -- the spec's view: actions taken, messages in flight --------------------------------------
    def _open(self, msg: Any) -> bool:
        """Is ``msg`` still on an open connection? (A LeaveGroup is written just before close()
        closes it and still arrives: spec Leave.)"""
        if isinstance(msg, LeaveGroup):
            return True
        return self.w._open(msg.source if is_request(msg) else msg.dest, msg.conn)

    def _spec_step(self, step: SpecStep) -> SpecStep | None:
        """A node's spec step in the trace's vocabulary (``m`` the spec's record, ``x`` the spec's
        member number), or None for a message on a connection that has closed since (the spec's
        CloseConnection already removed it)."""
        args: dict[str, Any] = {}
        if "m" in step.args:
            if not self._open(step.args["m"]):
                return None
            args["m"] = projection.spec_message(self.w.coordinator, step.args["m"])
        if "x" in step.args:
            args["x"] = projection.member_no(step.args["x"])
        node = None if step.action == DROP_MESSAGE.spec else step.node
        return SpecStep(step.action, node, args)

    def _ready(self, r: Ready, note: str | None = None, node: Any = None,
               extra: dict[str, Any] | None = None, spec: bool = True) -> Ready:
        """The ``Ready`` for the simulator: the messages wrapped for the network, the spec steps
        in the trace's vocabulary (none when ``spec`` is false), or, when there are none, the
        non-spec ``note`` (with ``extra`` as its args) if one is given."""
        steps = tuple(s for s in map(self._spec_step, r.steps) if s is not None) if spec else ()
        step_note = SpecStep(note, node, extra) if not steps and note is not None else None
        return Ready(steps=steps, messages=tuple(self._wrap(m) for m in r.messages), note=step_note)

    def after(self, sim: Simulator, node: Any, ready: Ready) -> None:
        self._mirror_history(sim)
        for n in {COORDINATOR, *(m.source if is_request(m.payload) else m.dest for m in ready.messages)}:
            sim.reschedule(n)

    def drop_is_spec_step(self, sim: Simulator, msg: Any) -> bool:
        """A copy the network drops is a spec DropMessage only if the spec still has that message
        in flight and no other copy of it is (a duplicate's twin, a message already delivered or
        on a closed connection, a commit response: nothing for the spec)."""
        if not isinstance(msg, Envelope) or msg.seq in self._delivered:
            return False
        if projection.spec_message(self.w.coordinator, msg.payload) is None or not self._open(msg.payload):
            return False
        return not any(m is msg or (isinstance(m, Envelope) and m.seq == msg.seq)
                       for m in sim.network.pending.values())

    # -- events --------------------------------------------------------------------------------
    def _deliver(self, msg: Envelope) -> Ready:
        payload = msg.payload
        if msg.seq in self._delivered:  # TCP never delivers a segment twice
            return self._ready(Ready(), "DuplicateDiscarded", msg.dest, {"m": msg}, spec=False)
        self._delivered.add(msg.seq)
        if not self._open(payload):  # lost: the connection is closed (the world says so too)
            return self._ready(self.w.process(payload), "LostOnClosedConnection", msg.dest, {"m": msg},
                               spec=False)
        r = self.w.process(payload)
        name = _note_name(payload)
        if isinstance(payload, SyncGroup) and not r.messages:
            name = "ParkSyncGroup"  # a follower waits for the leader's SyncGroup: no spec step
        return self._ready(r, name, msg.dest, {"m": msg})

    def _tick(self, node: Any, now: int) -> Ready:
        if node == COORDINATOR:
            return self._ready(self.w.tick_coordinator())
        return self._ready(self.w.tick_consumer(node))

    def next_wakeup(self, node: Any) -> int | None:
        cfg = self.w.config
        if node == COORDINATOR:
            co = self.w.coordinator
            ts = [m.last_heard + cfg.session_timeout_ms + 1 for mid, m in co.members.items()
                  if mid not in co.awaiting_join]
            ts += [t + cfg.session_timeout_ms + 1 for t in co.pending.values()]
            if co.state.value == "PreparingRebalance":
                ts.append(co.prepare_started_at + cfg.rebalance_timeout_ms + 1)
            return min(ts) if ts else None
        c = self.w.consumers[node]
        if not c.up:
            return None
        ts = [sent + cfg.request_timeout_ms for _corr, sent in c.waiting.values()]
        if c.owned or c.phase == ConsumerPhase.STABLE:
            ts.append(c.lease_until)
        if c.phase == ConsumerPhase.IDLE:
            ts.append(self.w.now)
        if c.phase == ConsumerPhase.STABLE and "heartbeat" not in c.waiting:
            ts.append(c.last_heartbeat_at + cfg.heartbeat_interval_ms)
        return min(ts) if ts else None

    def client_op(self, sim: Simulator, kind: str) -> None:
        self.w.now = sim.now
        live = [c for c, x in self.w.consumers.items() if x.up and x.owned]
        if not live:
            return
        c = sim.rng.choice(sorted(live))
        n = len(self.w.history)
        if kind == "write":
            self.w.poll(c)
        else:
            before = len(self.w.network)
            r = self.w.commit(c)
            del self.w.network[before:]  # the simulator's network carries it
            sim.apply(c, self._ready(r))
        self._mirror_history(sim, n)

    def _mirror_history(self, sim: Simulator, start: int | None = None) -> None:
        """Copy the world's new history operations (subscribe, assign, poll, commit) to the
        recorder, wherever they came from (a delivery, a timer, a client operation)."""
        start = self._mirrored
        self._mirrored = len(self.w.history)
        if sim.recorder is None:
            return
        for op in self.w.history[start:]:
            sim.recorder.op(op["process"], op["type"], op["f"], None, op["value"], op["time"] // 1_000_000)

    def crash(self, sim: Simulator, node: Any) -> None:
        self.w.now = sim.now
        if node != COORDINATOR:
            n = len(self.w.history)
            sim.apply(node, self._ready(self.w.crash(node)))
            self._mirror_history(sim, n)

    def restart(self, sim: Simulator, node: Any, disk_lost: bool) -> None:
        self.w.now = sim.now
        if node != COORDINATOR:
            c = self.w.consumers[node]
            r = c.step(Trigger(GroupConsumer.restart), sim.now)
            sim.apply(node, self._ready(r.then(c.step(Trigger(GroupConsumer.send_join_group), sim.now))))

    # -- checking ------------------------------------------------------------------------------
    def check(self, sim: Simulator, restarted: set[Any]) -> list[Violation]:
        return self.w.violations()

    def project(self, sim: Simulator) -> dict[str, Any]:
        """Every projectable variable of spec/ConsumerGroup.tla in its vocabulary; ``msgs`` is
        the network as the spec sees it: the messages in flight on open connections (a copy of a
        message already delivered excluded) plus the SyncGroups the coordinator parked (the spec
        leaves those in the network)."""
        co = self.w.coordinator
        s = projection.spec_state(co, self.w.consumers, self.w.fencing_breaches, self._static())
        seen: dict[str, Any] = {}
        inflight = [e.payload for e in sim.network.pending.values()
                    if isinstance(e, Envelope) and e.seq not in self._delivered]
        for m in inflight + list(co.awaiting_sync.values()):
            rec = projection.spec_message(co, m)
            if rec is not None and self._open(m):
                seen[json.dumps(rec, sort_keys=True)] = rec
        s["msgs"] = [seen[k] for k in sorted(seen)]
        return s

    def _static(self) -> list[str]:
        return [f"c{self.n}"] if self.n > 1 else []

    def constants(self) -> dict[str, Any]:
        # both modes: the spec picks the protocol in Init and the first logged state pins it
        return {"Consumers": [f"c{i}" for i in range(1, self.n + 1)],
                "Static": self._static(),
                "Partitions": list(range(self.partitions)),
                "Modes": ["eager", "cooperative"],
                "variant": self.variant}

    def encode_arg(self, value: Any) -> Any:
        if isinstance(value, Envelope):
            rec = projection.spec_message(self.w.coordinator, value.payload)
            return rec if rec is not None else {"type": type(value.payload).__name__}
        if attrs.has(type(value)):
            return {"type": type(value).__name__, **_jsonable(attrs.asdict(value, recurse=False))}
        return _jsonable(value)

    def describe(self, sim: Simulator) -> str:
        co = self.w.coordinator
        lines = [f"group {co.state.value} generation {co.generation} leader {co.leader}"]
        for mid, m in sorted(co.members.items()):
            lines.append(f"  member {mid} ({m.client}) assigned {sorted(map(str, m.assignment))}")
        for cid, c in self.w.consumers.items():
            lines.append(f"  {cid}: {'up' if c.up else 'DOWN'} {c.phase.value} {c.member_id} "
                         f"gen {c.generation} owns {sorted(map(str, c.owned))}")
        lines += ["recent steps:", *("  " + s for s in self.w.steps[-15:])]
        return "\n".join(lines)

    def finish(self, sim: Simulator) -> None:
        return None

    def summary(self, sim: Simulator) -> dict[str, Any]:
        co = self.w.coordinator
        return {"protocol": self.w.config.protocol.value, "generation": co.generation,
                "state": co.state.value, "rebalances": sum(1 for e in co.log if e["event"] == "stable"),
                "commits_accepted": len(co.offsets.accepted),
                "rebalance_log": self.w.rebalance_log()[-50:]}


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (set, frozenset)):
        return sorted((_jsonable(v) for v in x), key=str)
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "value") and not isinstance(x, (int, str)):
        return x.value
    if attrs.has(type(x)):
        return str(x)
    return x


def make(consumers: int, variant: str | None) -> Protocol:
    """Factory for ``kraft.sim.protocols.PROTOCOLS["groups"]`` (``--voters`` = consumers)."""
    return GroupsProtocol(consumers, variant)
