"""``kraft simulate --protocol groups``: one consumer group in the shared simulator.

Nodes are ``"coordinator"`` and the consumers ``c1..cN`` (the last one static, instance id = its
name).  The group lives in a :class:`kraft.groups.world.GroupWorld` (coordinator, consumers,
offsets, history, rebalance log, invariants) over the simulator's network, which carries the
messages in :class:`Envelope`\\ s (it needs ``source``/``dest``) and injects drops, duplicates,
delays, reordering, partitions and crashes.  After every event the spec's invariants run over the
projections.

Client operations: a ``write`` is a ``poll`` of a random live consumer (one record per owned
partition), a ``read`` is a ``commit`` (OffsetCommit of its positions); with the
``subscribe``/``assign`` records of the world that is Jepsen's Kafka-workload vocabulary.

The coordinator writes its offset and group records to its ``__consumer_offsets`` partition on
a ``MemoryFS`` (:mod:`kraft.groups.offsets_log`; ``kraft simulate --offsets-log`` copies it out).
A crashed coordinator keeps its state (as if reloaded from ``__consumer_offsets``) and is simply
unreachable while down.  The rebalance protocol is eager for even seeds and cooperative for odd
ones, unless a variant fixes it.

Trace recording (docs/conformance.md, "Consumer groups").  The ``Ready`` of one simulator event
carries the spec steps taken, in order (named by the declaration, :mod:`kraft.groups.protocol`),
and the simulator records one trace line: the first spec action with its node and arguments, the
others (in order) under ``args.then`` (the glue composes them: the implementation takes at once
what the spec splits, e.g. a JoinGroup that completes the join phase is ``HandleJoinGroup`` then
``CompleteJoin``), and the post-state of every projectable spec variable in the spec's vocabulary
(:func:`kraft.groups.projection.spec_state`, plus ``msgs``, the network).  Kafka runs the protocol
over TCP, which never delivers a segment twice: the world discards a duplicated copy of a message
that was already delivered (recorded with ``"spec": false``), so a ``dup`` fault exercises exactly
that.  A message that arrives on a closed connection is lost (``"spec": false``: the spec's
``CloseConnection`` already removed it), and so is a commit response (the spec does not model
commit responses).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import attrs

from kraft.core.plugin import Sim, SimPlugin
from kraft.core.step import Ready, SpecStep, Trigger
from kraft.groups import projection
from kraft.groups.consumer import GroupConsumer
from kraft.groups.coordinator import COORDINATOR, GroupConfig
from kraft.groups.messages import RebalanceProtocol, SyncGroup
from kraft.groups.protocol import PROTOCOL
from kraft.groups.wire import Envelope, GroupClients
from kraft.groups.world import GroupWorld, client

VARIANTS = PROTOCOL.variant_names




def _note_name(payload: Any) -> str:
    """The name of a delivery that took no spec step (recorded with ``"spec": false``): the
    handler's spec name for a message the declaration dispatches, else ``Handle<type>`` (an
    OffsetCommitResponse: the spec does not model commit responses)."""
    try:
        return PROTOCOL.for_message(type(payload)).spec
    except KeyError:
        return f"Handle{type(payload).__name__}"


class NetworkedGroupWorld(GroupWorld):
    """The group over the simulator's network: what its nodes send leaves in ``Envelope``\\ s, a
    copy of a message already delivered is discarded (TCP), and every ``Ready`` comes back in the
    trace's vocabulary (``m`` the spec's record, ``x`` the spec's member number) with, when it
    took no spec step, a note of what happened instead."""

    def __init__(self, config: GroupConfig, consumer_specs: Sequence[tuple[str, str | None]],
                 now: int = 0) -> None:
        super().__init__(config, consumer_specs, now=now)
        self.delivered: set[int] = set()   # the seq of every message delivered once

    def process(self, node_id: str, inp: Any) -> Ready:
        if isinstance(inp, Envelope):
            return self._arrive(inp)
        return self._on_the_wire(super().process(node_id, inp))

    def _arrive(self, env: Envelope) -> Ready:
        payload = env.payload
        if env.seq in self.delivered:  # TCP never delivers a segment twice
            return Ready(note=SpecStep("DuplicateDiscarded", env.dest, {"m": env}))
        self.delivered.add(env.seq)
        if not self.is_open(payload):  # lost: the connection is closed (the world narrates it)
            super().process(env.dest, payload)
            return Ready(note=SpecStep("LostOnClosedConnection", env.dest, {"m": env}))
        ready = super().process(env.dest, payload)
        name = _note_name(payload)
        if isinstance(payload, SyncGroup) and not ready.messages:
            name = "ParkSyncGroup"  # a follower waits for the leader's SyncGroup: no spec step
        return self._on_the_wire(ready, SpecStep(name, env.dest, {"m": env}))

    def _on_the_wire(self, ready: Ready, note: SpecStep | None = None) -> Ready:
        """``ready`` for the simulator: the messages in envelopes, the spec steps in the trace's
        vocabulary, or, when there are none, ``note``."""
        steps = tuple(s for s in map(self._spec_step, ready.steps) if s is not None)
        return Ready(steps=steps, messages=tuple(map(self.wire.wrap, ready.messages)), reply=ready.reply,
                     note=None if steps else note)

    def _spec_step(self, step: SpecStep) -> SpecStep | None:
        """A node's spec step in the trace's vocabulary, or None for a message on a connection that
        has closed since (the spec's CloseConnection already removed it)."""
        args: dict[str, Any] = {}
        if "m" in step.args:
            if not self.is_open(step.args["m"]):
                return None
            args["m"] = projection.spec_message(self.coordinator, step.args["m"])
        if "x" in step.args:
            args["x"] = projection.member_no(step.args["x"])
        node = None if step.action == PROTOCOL.drop_message else step.node
        return SpecStep(step.action, node, args)

    def spec_in_flight(self, env: Envelope) -> bool:
        """Does the spec see ``env`` in flight: its message has a spec counterpart, on an open
        connection, and no copy of it was delivered?"""
        return (env.seq not in self.delivered and projection.spec_message(self.coordinator, env.payload) is not None
                and self.is_open(env.payload))

    def project(self) -> dict[str, Any]:
        """Every projectable variable of spec/ConsumerGroup.tla in its vocabulary; ``msgs`` is the
        network as the spec sees it: the messages in flight on open connections (a copy of a
        message already delivered excluded) plus the SyncGroups the coordinator parked (the spec
        leaves those in the network)."""
        co = self.coordinator
        static = [cid for cid, c in self.consumers.items() if c.instance_id is not None]
        s = projection.spec_state(co, self.consumers, self.fencing_breaches, static)
        seen: dict[str, Any] = {}
        inflight = [e.payload for e in self.net.pending.values()
                    if isinstance(e, Envelope) and e.seq not in self.delivered]
        for m in inflight + list(co.awaiting_sync.values()):
            rec = projection.spec_message(co, m)
            if rec is not None and self.is_open(m):
                seen[json.dumps(rec, sort_keys=True)] = rec
        s["msgs"] = [seen[k] for k in sorted(seen)]
        return s


class GroupsPlugin(GroupClients, SimPlugin):
    declaration = PROTOCOL
    kept_logs = ("offsets",)
    # a consumer's or the coordinator's timers fire on their own wake-ups (the client's poll loop,
    # the coordinator's timer wheel), not right after a delivery
    internal_after_delivery = False
    world: NetworkedGroupWorld

    def __init__(self, consumers: int = 3, variant: str | None = None, partitions: int = 4) -> None:
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        if consumers < 1:
            raise ValueError("need at least one consumer")
        self.n = consumers
        self.variant = variant
        self.partitions = partitions
        self._mirrored = 0

    # -- setup -------------------------------------------------------------------------------
    def build(self, sim: Sim) -> NetworkedGroupWorld:
        """The group: a coordinator and the consumers (the last one static)."""
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
        world = self.world = NetworkedGroupWorld(config, specs, now=sim.now)
        world.net = sim.network
        return world

    def start(self, sim: Sim) -> None:
        """Every consumer sends its first JoinGroup."""
        for cid in self.world.consumers:
            sim.step_node(cid, Trigger(GroupConsumer.send_join_group))

    def constants(self) -> dict[str, Any]:
        # both modes: the spec picks the protocol in Init and the first logged state pins it
        return {"Consumers": [f"c{i}" for i in range(1, self.n + 1)],
                "Static": [f"c{self.n}"] if self.n > 1 else [],
                "Partitions": list(range(self.partitions)),
                "Modes": ["eager", "cooperative"],
                "variant": self.variant}

    # -- stepping --------------------------------------------------------------------------------
    def observe(self, sim: Sim, node: Any, ready: Ready) -> None:
        self._mirror_history(sim)
        for n in {COORDINATOR, *(client(m.payload) for m in ready.messages)}:
            sim.reschedule(n)

    def drop_is_spec_step(self, sim: Sim, message: Any) -> bool:
        """A copy the network drops is a spec DropMessage only if the spec still has that message
        in flight and no other copy of it is (a duplicate's twin, a message already delivered or
        on a closed connection, a commit response: nothing for the spec)."""
        if not isinstance(message, Envelope) or not self.world.spec_in_flight(message):
            return False
        return not any(m is message or (isinstance(m, Envelope) and m.seq == message.seq)
                       for m in sim.network.pending.values())

    # -- clients -------------------------------------------------------------------------------
    def read(self, sim: Sim) -> None:
        """A consumer commits its positions (commitSync)."""
        c = self._owner(sim)
        if c is not None:
            sim.step_node(c, Trigger(GroupConsumer.send_offset_commit))
            self._mirror_history(sim)

    # -- faults --------------------------------------------------------------------------------
    def crash(self, sim: Sim, node: Any) -> None:
        """A consumer's process dies (the coordinator only becomes unreachable)."""
        if node != COORDINATOR:
            sim.step_node(node, Trigger(GroupConsumer.crash))
            self._mirror_history(sim)

    def restart(self, sim: Sim, node: Any, disk_lost: bool) -> None:
        """A new process of the consumer; it rejoins at once."""
        if node != COORDINATOR:
            sim.step_node(node, Trigger(GroupConsumer.restart))

    # -- checking ------------------------------------------------------------------------------
    def project(self, sim: Sim) -> dict[str, Any]:
        return self.world.project()

    def encode(self, value: Any) -> Any:
        if isinstance(value, Envelope):
            rec = projection.spec_message(self.world.coordinator, value.payload)
            return rec if rec is not None else {"type": type(value.payload).__name__}
        if attrs.has(type(value)):
            return {"type": type(value).__name__, **_jsonable(attrs.asdict(value, recurse=False))}
        return _jsonable(value)

    def summary(self, sim: Sim) -> dict[str, Any]:
        co = self.world.coordinator
        return {"protocol": self.world.config.protocol.value, "generation": co.generation,
                "state": co.state.value, "rebalances": sum(1 for e in co.log if e["event"] == "stable"),
                "commits_accepted": len(co.offsets.accepted),
                "rebalance_log": self.world.rebalance_log()[-50:]}

    def logs(self, sim: Sim, kind: str) -> dict[str, tuple[Any, str]]:
        """The coordinator's ``__consumer_offsets-<N>`` directory, under its own name."""
        if kind != "offsets":
            return {}
        log = self.world.coordinator.offsets_log
        return {} if log is None else {log.directory: (log.fs, log.directory)}


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


def make(consumers: int, variant: str | None) -> GroupsPlugin:
    """The plug-in ``kraft simulate --protocol groups --voters N --variant V`` runs (N consumers)."""
    return GroupsPlugin(consumers, variant)
