"""``kraft simulate --protocol consumer-protocol``: one consumer group under Kafka's consumer
protocol (KIP-848) in the shared simulator.

Nodes are ``"coordinator"`` and the consumers ``c1..cN``.  The group lives in a
:class:`.world.ConsumerProtocolWorld` over the simulator's network, which carries the messages in
:class:`Envelope`\\ s and injects drops, duplicates, delays (a heartbeat that outlives its request
timeout reaches the coordinator as a zombie request), reordering, partitions and crashes.  After
every event the spec's invariants run over the projections.

Client operations: a ``write`` is a ``poll`` of a random consumer that owns partitions; a
``read`` changes membership now and then (a consumer leaves, or one that left subscribes
again), and otherwise polls; the ``subscription-change`` nemesis makes a consumer in the group
subscribe to another topic set.  With the ``subscribe``/``assign``/``commit`` records of the world
that is Jepsen's Kafka-workload vocabulary.

Trace recording (docs/conformance.md, "The consumer protocol"): one trace line per simulator event,
the first spec step with its node and arguments and the others under ``args.then``, and the
post-state of every projectable spec variable in the spec's vocabulary
(:class:`.projection.SpecVocabulary`) plus ``msgs``, the network as the spec sees it.  A duplicated
copy of a message already delivered is discarded (TCP never delivers twice: ``"spec": false``), and
so is a response that arrives on a closed connection.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from kraft.core.plugin import Nemesis, Sim, SimPlugin
from kraft.core.step import Ready, SpecStep
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.messages import IN_GROUP, ClientState, client_of, client_of_member
from kraft.groups.consumer_protocol.projection import SpecVocabulary
from kraft.groups.consumer_protocol.protocol import COORDINATOR, PROTOCOL
from kraft.groups.consumer_protocol.world import ConsumerProtocolWorld
from kraft.groups.wire import Envelope, GroupClients

VARIANTS = PROTOCOL.variant_names
LISTENER_MS = 40  # each rebalance-listener stage on the application thread
STATIC_RESTART = "static-restart"
SUBSCRIPTION_CHANGE = "subscription-change"
STATIC = ("c1",)  # the static consumers when the static-restart nemesis runs




class NetworkedWorld(ConsumerProtocolWorld):
    """The group over the simulator's network: what its nodes send leaves in ``Envelope``\\ s, a
    copy of a message already delivered is discarded, and every ``Ready`` comes back in the
    trace's vocabulary (``m`` the spec's record)."""

    def __init__(self, config: ProtocolConfig, clients: tuple[str, ...], now: int = 0) -> None:
        super().__init__(config, clients, now=now)
        self.vocab = SpecVocabulary(config)
        self.delivered: set[int] = set()

    def process(self, node_id: str, inp: Any) -> Ready:
        if isinstance(inp, Envelope):
            return self._arrive(inp)
        return self._on_the_wire(super().process(node_id, inp))

    def _arrive(self, env: Envelope) -> Ready:
        if env.seq in self.delivered:
            return Ready(note=SpecStep("DuplicateDiscarded", env.dest, {"m": env}))
        self.delivered.add(env.seq)
        if not self.is_open(env.payload):
            super().process(env.dest, env.payload)
            return Ready(note=SpecStep("LostOnClosedConnection", env.dest, {"m": env}))
        ready = super().process(env.dest, env.payload)
        return self._on_the_wire(ready, SpecStep("Deliver" + type(env.payload).__name__, env.dest, {"m": env}))

    def _on_the_wire(self, ready: Ready, note: SpecStep | None = None) -> Ready:
        steps = tuple(self._spec_step(s) for s in ready.steps)
        return Ready(steps=steps, messages=tuple(map(self.wire.wrap, ready.messages)), reply=ready.reply,
                     note=None if steps else note)

    def _spec_step(self, step: SpecStep) -> SpecStep:
        args = dict(step.args)
        if "m" in args:
            args["m"] = self.vocab.message(args["m"].payload if isinstance(args["m"], Envelope) else args["m"])
        node = None if step.action == PROTOCOL.drop_message else step.node
        return SpecStep(step.action, node, args)

    def spec_in_flight(self, env: Envelope) -> bool:
        """Does the spec see ``env`` in flight (not delivered before, on an open connection)?"""
        return env.seq not in self.delivered and self.is_open(env.payload)

    def project(self) -> dict[str, Any]:
        """Every projectable spec variable, and ``msgs``: the messages the spec sees in flight."""
        s = self.vocab.state(self.state())
        seen: dict[str, Any] = {}
        for e in self.net.in_flight():
            if isinstance(e, Envelope) and self.spec_in_flight(e):
                rec = self.vocab.message(e.payload)
                seen[json.dumps(rec, sort_keys=True)] = rec
        s["msgs"] = [seen[k] for k in sorted(seen)]
        return s


class ConsumerProtocolPlugin(GroupClients, SimPlugin):
    declaration = PROTOCOL
    internal_after_delivery = False
    kept_logs = ("offsets",)
    world: NetworkedWorld

    def __init__(self, consumers: int = 3, variant: str | None = None) -> None:
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        if consumers < 1:
            raise ValueError("need at least one consumer")
        self.n = consumers
        self.variant = variant
        self._mirrored = 0

    def build(self, sim: Sim) -> NetworkedWorld:
        flags = {self.variant: True} if self.variant else {}
        assignor = "range" if sim.seed % 2 else "uniform"
        static = STATIC if any(n == STATIC_RESTART for n, _ in sim.faults.nemesis_schedule()) else ()
        config = ProtocolConfig(assignor=assignor, listener_ms=LISTENER_MS, static=static, **flags)
        world = self.world = NetworkedWorld(config, tuple(f"c{i}" for i in range(1, self.n + 1)), now=sim.now)
        world.net = sim.network
        world.stepper = sim.step_node
        return world

    def start(self, sim: Sim) -> None:
        for cid in self.world.consumers:
            self._join(sim, cid)

    def _join(self, sim: Sim, cid: str) -> None:
        self.world.now = sim.now
        self.world.join(cid)
        self._mirror_history(sim)

    def constants(self) -> dict[str, Any]:
        cfg = self.world.config if hasattr(self, "world") else ProtocolConfig()
        counts = {n for _, n in cfg.topics}
        return {"Clients": [f"c{i}" for i in range(1, self.n + 1)], "StaticClients": list(cfg.static),
                "NumTopics": len(cfg.topics),
                "PartitionsPerTopic": max(counts), "variant": self.variant}

    # -- stepping --------------------------------------------------------------------------------
    def observe(self, sim: Sim, node: Any, ready: Ready) -> None:
        self._mirror_history(sim)
        for n in {COORDINATOR, node, *(client_of(m.payload) for m in ready.messages)}:
            sim.reschedule(n)

    def drop_is_spec_step(self, sim: Sim, message: Any) -> bool:
        if not isinstance(message, Envelope) or not self.world.spec_in_flight(message):
            return False
        return not any(isinstance(m, Envelope) and m.seq == message.seq for m in sim.network.pending.values())

    # -- clients -------------------------------------------------------------------------------
    def read(self, sim: Sim) -> None:
        """Now and then a consumer leaves or subscribes again; otherwise a poll."""
        if sim.rng.random() >= 0.1:
            self.write(sim)
            return
        self.world.now = sim.now
        cid = sim.rng.choice(sorted(self.world.consumers))
        c = self.world.consumers[cid]
        if not c.up:
            return
        if c.state is ClientState.UNSUBSCRIBED:
            self._join(sim, cid)
        else:
            self.world.leave(cid)
            self._mirror_history(sim)

    # -- faults --------------------------------------------------------------------------------
    def nemeses(self) -> Mapping[str, Nemesis]:
        return {"poll-timeout": Nemesis(self._poll_timeout,
                                        "a consumer's application misses max.poll.interval.ms (a slow rebalance "
                                        "listener): the consumer leaves the group and, when the application polls "
                                        "again, subscribes anew; one in the middle of a reconciliation is struck "
                                        "first (KAFKA-16375's window)"),
                STATIC_RESTART: Nemesis(
                    self._static_restart, f"{', '.join(STATIC)} static members (group.instance.id): one closes "
                                          "with epoch -2 and a new process of it joins under a new member id "
                                          "(a failed one is replaced the same way)"),
                SUBSCRIPTION_CHANGE: Nemesis(
                    self._change_subscription, "a consumer's application calls subscribe() with another "
                                               "non-empty set of the topics while in the group (no rejoin; "
                                               "AbstractMembershipManager.onSubscriptionUpdated)"),
                "coordinator-failover": Nemesis(
                    self._failover, "the group moves to a new coordinator rebuilt from its __consumer_offsets "
                                    "partition (its timers start over; requests on the way reach the new one)")}

    def _poll_timeout(self, sim: Sim) -> None:
        self.world.now = sim.now
        live = sorted(c for c, x in self.world.consumers.items() if x.up and x.state in IN_GROUP)
        busy = [c for c in live if self.world.consumers[c].recon is not None]
        if not live:
            return
        cid = sim.rng.choice(busy or live)
        sim.count("poll-timeout")
        self.world.leave(cid)
        sim.run_due(cid)
        self._join(sim, cid)

    def _change_subscription(self, sim: Sim) -> None:
        self.world.now = sim.now
        live = sorted(c for c, x in self.world.consumers.items() if x.up and x.state in IN_GROUP)
        if not live:
            return
        c = self.world.consumers[sim.rng.choice(live)]
        names = self.world.config.topic_names
        others = [s for s in topic_sets(names) if s != c.subscription]
        sim.count(SUBSCRIPTION_CHANGE)
        self.world.subscribe(c.id, sim.rng.choice(others))
        self._mirror_history(sim)

    def _static_restart(self, sim: Sim) -> None:
        self.world.now = sim.now
        cid = sim.rng.choice(STATIC)
        c = self.world.consumers[cid]
        if not c.up:
            return
        sim.count(STATIC_RESTART)
        if c.state in IN_GROUP:
            self.world.leave(cid)
            sim.run_due(cid)
        self.world.new_process(cid)
        self._mirror_history(sim)

    def crash(self, sim: Sim, node: Any) -> None:
        """A consumer's process dies (the coordinator only becomes unreachable)."""
        if node != COORDINATOR:
            self.world.now = sim.now
            self.world.crash(node)
            self._mirror_history(sim)

    def restart(self, sim: Sim, node: Any, disk_lost: bool) -> None:
        """A new process of the consumer; it subscribes again."""
        if node != COORDINATOR:
            self.world.now = sim.now
            self.world.restart(node)
            self._mirror_history(sim)

    def _failover(self, sim: Sim) -> None:
        """The ``coordinator-failover`` nemesis, when the coordinator is up: no spec step (the
        spec state stays as it was), a trace line of its own."""
        if COORDINATOR in sim.down:
            return
        sim.count("coordinator-failover")
        self.world.now = sim.now
        self.world.failover()
        sim.record("CoordinatorFailover", COORDINATOR,
                   {"leader_epoch": self.world.coordinator.offsets_log.leader_epoch}, spec=False)
        sim.reschedule(COORDINATOR)

    # -- checking ------------------------------------------------------------------------------
    def project(self, sim: Sim) -> dict[str, Any]:
        return self.world.project()

    def encode(self, value: Any) -> Any:
        if isinstance(value, Envelope):
            rec = self.world.vocab.message(value.payload)
            return rec if rec is not None else {"type": type(value.payload).__name__}
        if isinstance(value, str):   # a member id (the timeouts' x): the spec names its client's member
            return client_of_member(value)
        return value

    def settled(self, sim: Sim) -> bool:
        return self.world.quiet()

    def summary(self, sim: Sim) -> dict[str, Any]:
        co = self.world.coordinator
        return {"assignor": self.world.config.assignor, "group_epoch": co.group_epoch,
                "assignment_epoch": co.assignment_epoch, "members": sorted(co.members),
                "commits_accepted": len(co.offsets.accepted)}

    def logs(self, sim: Sim, kind: str) -> dict[str, tuple[Any, str]]:
        """The coordinator's ``__consumer_offsets-<N>`` directory, under its own name."""
        if kind != "offsets":
            return {}
        log = self.world.coordinator.offsets_log
        return {log.directory: (log.fs, log.directory)}


def topic_sets(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every non-empty subset of ``names``, each sorted as a consumer's subscription is."""
    return [tuple(sorted(t for k, t in enumerate(names) if mask >> k & 1)) for mask in range(1, 1 << len(names))]


def make(consumers: int, variant: str | None) -> ConsumerProtocolPlugin:
    """The plug-in ``kraft simulate --protocol consumer-protocol --voters N --variant V`` runs."""
    return ConsumerProtocolPlugin(consumers, variant)
