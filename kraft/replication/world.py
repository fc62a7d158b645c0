"""The replication worlds: one partition replicated on brokers 1..N, its controller(s), the client
ghost (``kraft.replication.invariants.Ghost``) and every invariant of the declaration.

* ``ReplicationWorld`` keeps the spec's abstraction: one controller, node 0, whose committed
  metadata list the brokers read.  The Hypothesis machine (tests/replication/machine.py) and the
  stories (``kraft.replication.story``) step it by hand: every delivery, timer, produce, crash and
  restart is a call, and every invariant is checked after every step.  The simulator plug-in
  (``kraft.replication.sim``) can step it too (``metadata_quorum=False``).
* ``StackedWorld`` runs the controllers for real, the simulator's default: three KRaft voters
  (``kraft.replication.stacked``) whose committed ``__cluster_metadata`` the brokers fetch.

Two worlds, not one with a mode: they have different nodes (node 0 against the voters 3000-3002
and the brokers' channels to them) and finish a step differently (the spec's composite actions
are joined at once in one, travel as requests and commits in the other); what they share, the
brokers, the ghost, the invariants and the projection, is ``PartitionWorld``.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

import attrs

from kraft.controller.controller import Controller
from kraft.controller.image import FENCED_STATES
from kraft.replication.stacked import BrokerNode, ControllerNode, MetadataFetcher, MetadataQuorum
from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.step import TICK, Ready, Trigger
from kraft.core.world import World
from kraft.log import MemoryFS
from kraft.replication.broker import Broker, ProduceResult
from kraft.quorum.config import QuorumConfig
from kraft.replication.config import ReplicationConfig
from kraft.replication.invariants import Ghost, check_all, has_at
from kraft.replication.messages import (
    CONTROLLER,
    NONE,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    FetchRequest,
    FetchResponse,
)
from kraft.replication.projection import View, project, to_json_state
from kraft.replication.protocol import PROTOCOL

CLEAN_SHUTDOWN = PROTOCOL.spec_name(Broker.clean_shutdown)
UNCLEAN_SHUTDOWN = PROTOCOL.spec_name(Broker.unclean_shutdown)
DISK_LOSS = PROTOCOL.spec_name(Broker.restart_broker_with_disk_loss)
COMPLETE_PRODUCE = PROTOCOL.spec_name(Broker.complete_produce)
ACKED_READABLE = "AckedReadableFromLeader"


def log_text(entries: Any) -> str:
    """A log as ``[epoch:value ...]``."""
    return "[" + " ".join(f"{e.epoch}:{e.value}" for e in entries) + "]"


class AckedNotReadable(InvariantViolation):
    """End of a run: an acks=all-acknowledged record is not readable from the current leader."""


class PartitionWorld(World):
    """What both worlds share: brokers 1..N on their own file systems, the committed metadata the
    spec's controller variables are projected from (``controller``), the ghost and the checks."""

    controller: Controller
    brokers: dict[int, Broker]

    def __init__(self, brokers: int, config: ReplicationConfig) -> None:
        super().__init__()
        self.config = config
        self.ids = tuple(range(1, brokers + 1))
        self.fs = {b: MemoryFS() for b in self.ids}
        self.ghost = Ghost()
        # called with a broker that stops cleanly, within the step (the simulator closes its
        # connections there; the hand-stepped world loses what reaches it at delivery)
        self.on_clean_stop: Callable[[int], None] | None = None

    def route(self, node_id: Any, ready: Ready) -> Ready:
        """The ghost learns unclean shutdowns and acknowledged records; a clean stop is reported."""
        for s in ready.steps:
            if s.action in (UNCLEAN_SHUTDOWN, DISK_LOSS):
                self.ghost.on_unclean(s.node)
        r = ready.reply
        if isinstance(r, ProduceResult) and r.acks == -1 and r.error == NONE and \
                any(s.action == COMPLETE_PRODUCE for s in ready.steps):
            self.ghost.on_acked(r.offset, r.leaderEpoch, r.value)
        if self.on_clean_stop is not None:
            for s in ready.steps:
                if s.action == CLEAN_SHUTDOWN:
                    self.on_clean_stop(s.node)
        return ready

    def view(self, in_flight: Sequence[Any] = ()) -> View:
        return View(self.controller, self.brokers, list(in_flight), self.ghost, self.spec_epoch)

    def spec_epoch(self, epoch: int) -> int:
        """A broker epoch as the spec numbers it: here the offsets are the spec's positions."""
        return epoch

    def state(self) -> dict[str, Any]:
        """The spec variables the invariants read (no messages, no metadata log) and ``MinIsr``."""
        s = project(self.view(), with_messages=False, with_metadata=False)
        s["MinIsr"] = self.config.min_insync_replicas
        return s

    def violations(self) -> list[Violation]:
        return self.ghost.observe(self.brokers) + check_all(self.state())

    def project(self, in_flight: Sequence[Any]) -> dict[str, Any]:
        """Every spec variable in trace form, ``in_flight`` as the spec's ``messages``."""
        return to_json_state(project(self.view(in_flight)))

    def leader(self) -> int:
        """The partition leader the committed metadata names (-1: none)."""
        return self.controller.partition.leader


class ReplicationWorld(PartitionWorld):
    """The spec's abstraction: controller node 0 and brokers 1..``brokers`` reading its committed
    list.  ``route`` takes the controller half of a composite spec action at once (RestartBroker's
    registration, CleanShutdown's fencing), so the step records one spec step.

    Hand-stepped, it is the spec's world: a delivery lets only the receiver take the message (its
    timers fire on ``fire_timers``, the stories' ``tick``), the clock moves only when told
    (``now``), and every invariant is checked after every step, also one that changed nothing."""

    def __init__(self, brokers: int = 3, config: ReplicationConfig | None = None, *, now: int = 0) -> None:
        super().__init__(brokers, config or ReplicationConfig())
        self.now = now
        self.controller = Controller(self.ids, self.config, now=now)
        self.brokers = {b: Broker(b, self.ids, self.config, self.fs[b], self.controller.records, now=now)
                        for b in self.ids}
        self.check()

    # ------------------------------------------------------------------ the protocol's part
    def node_ids(self) -> Sequence[int]:
        return (CONTROLLER, *self.ids)

    def node(self, node_id: int) -> Controller | Broker:
        return self.controller if node_id == CONTROLLER else self.brokers[node_id]

    def route(self, node_id: int, ready: Ready) -> Ready:
        """The controller takes the broker's registration, and the fencing of a broker that stopped
        cleanly, in the same step (their effects joined to ``ready``)."""
        out = attrs.evolve(ready, messages=tuple(m for m in ready.messages
                                                 if not isinstance(m, BrokerRegistrationRequest)))
        for m in ready.messages:
            if isinstance(m, BrokerRegistrationRequest):
                out = out.then(self.controller.step(m, self.now))
        for s in ready.steps:
            if s.action == CLEAN_SHUTDOWN:
                out = out.then(self.controller.step(Trigger(Controller.broker_stopped, {"b": s.node}), self.now))
        return super().route(node_id, out)

    def describe(self) -> str:
        lines = [self.controller.describe()] + [self.brokers[b].describe() for b in self.ids]
        lines.append(f"in flight: {[type(m).__name__ + '->' + str(m.dest) for m in self.pending]}; t={self.now}ms")
        lines.append(f"acked: {sorted(self.ghost.acked)}")
        return "\n".join(lines)

    # ------------------------------------------------------------------ stepping by hand
    def step(self, node_id: Any, inp: Any) -> Ready:
        """``World.step``, then every invariant is checked."""
        ready = super().step(node_id, inp)
        self.check()
        return ready

    def fire_timers(self, node_id: Any, limit: int = 64) -> list[str]:
        """Every internal or timer action of ``node_id`` enabled now, also those with no spec
        counterpart (a flush, a heartbeat); their names."""
        fired: list[str] = []
        for _ in range(limit):
            ready = self.step(node_id, TICK)
            if ready.steps:
                fired.append(ready.steps[0].action)
            elif ready.note is not None:
                fired.append(ready.note.action)
            else:
                break
        return fired

    def deliver(self, index: int, keep_copy: bool = False) -> Any | None:
        """Deliver the ``index``-th message in flight; only the receiver takes it (no timers fire).
        A message to a stopped broker is lost (its connection is gone)."""
        pending = self.net.pending
        if not pending:
            return None
        index %= len(pending)
        msg = pending[index] if keep_copy else pending.pop(index)
        if msg.dest != CONTROLLER and not self.brokers[msg.dest].running:
            self.check()
            return msg
        self.step(msg.dest, msg)
        return msg

    def deliver_next(self, mtype: type, source: int | None = None, dest: int | None = None) -> Any:
        """Deliver the oldest message in flight of type ``mtype`` (and source/dest if given)."""
        for k, m in enumerate(self.pending):
            if isinstance(m, mtype) and (source is None or m.source == source) and (dest is None or m.dest == dest):
                return self.deliver(k)
        raise LookupError(f"no {mtype.__name__} {source}->{dest} in flight: {self.pending}")

    def drop(self, index: int) -> Any | None:
        """The network loses the ``index``-th message in flight (then every invariant is checked)."""
        msg = super().drop(index)
        if msg is not None:
            self.check()
        return msg

    def produce(self, b: int, acks: int) -> ProduceResult:
        """A client produce at ``b`` with the ghost's next value (used up if it was appended)."""
        ready = self.trigger(b, Broker.produce, acks=acks, value=self.ghost.next_value)
        if ready.steps:
            self.ghost.next_value += 1
        return ready.reply

    def crash(self, b: int, keep_unsynced: dict[str, int] | None = None) -> None:
        """Unclean shutdown: power loss (unsynced bytes lost), connections reset."""
        if not self.brokers[b].running:
            return
        self.fs[b].crash(keep_unsynced=keep_unsynced)
        self.net.discard(lambda m: m.dest == b or (isinstance(m, BrokerHeartbeatRequest) and m.source == b))
        self.step(b, Trigger(Broker.unclean_shutdown))

    def restart(self, b: int, disk_loss: bool = False) -> None:
        br = self.brokers[b]
        if br.running:
            return
        if disk_loss:
            self.fs[b].lose_disk(br.root)
            self.step(b, Trigger(Broker.restart_broker_with_disk_loss))
        else:
            self.step(b, Trigger(Broker.restart_broker))

    def shutdown(self, b: int) -> None:
        """Ask for a controlled shutdown; the broker stops cleanly once it leads nothing."""
        self.step(b, Trigger(Broker.request_shutdown))

    def fence(self, b: int) -> None:
        """Force a session timeout of ``b`` at the controller (the spec's nondeterministic FenceBroker)."""
        self.step(CONTROLLER, Trigger(Controller.fence_broker, {"b": b}))

    def run(self, rounds: int = 50, ms: int = 10) -> None:
        """Fair progress without faults: every running node's timers, every message, the clock."""
        for _ in range(rounds):
            for n in self.node_ids():
                if n == CONTROLLER or self.brokers[n].running:
                    self.fire_timers(n)
            while self.pending:
                self.deliver(0)
            self.now += ms

    # ------------------------------------------------------------------ composite moves (the stories' and
    # the Hypothesis machine's vocabulary)
    def can_send_fetch(self, f: int) -> bool:
        """``f`` runs, follows a running leader it knows, and has no fetch outstanding."""
        b = self.brokers[f]
        lid = b.local_leader
        return b.running and lid in self.brokers and lid != f and self.brokers[lid].running \
            and not any(isinstance(m, FetchRequest) and m.source == f for m in self.pending) \
            and not any(isinstance(m, FetchResponse) and m.dest == f for m in self.pending)

    def can_fetch(self, f: int) -> bool:
        """``can_send_fetch``, or a FetchRequest of ``f`` is in flight (and no answer to it yet)."""
        b = self.brokers[f]
        return self.can_send_fetch(f) or (
            b.running and any(isinstance(m, FetchRequest) and m.source == f for m in self.pending)
            and not any(isinstance(m, FetchResponse) and m.dest == f for m in self.pending))

    def send_fetch(self, f: int) -> bool:
        """``f`` sends a FetchRequest (the fetch interval passes first); False if it cannot."""
        if not self.can_send_fetch(f):
            return False
        b = self.brokers[f]
        self.now = max(self.now, b.next_fetch_at, b.fetch_in_flight or 0)
        return bool(self.trigger(f, Broker.send_fetch_request).steps)

    def fetch(self, f: int, *, alter_first: bool = False) -> bool:
        """One whole fetch of follower ``f``: the request (the one in flight, else a new one), the
        leader's answer, and any AlterPartition round trip it started (``alter_first``: that round
        trip completes before the answer reaches ``f``, a network ordering the spec allows).  False
        if ``f`` cannot fetch."""
        if not self.can_fetch(f):
            return False
        if not any(isinstance(m, FetchRequest) and m.source == f for m in self.pending):
            self.send_fetch(f)
        if not self.deliver_next(FetchRequest, source=f) or not self.brokers[f].running:
            return True
        if not any(isinstance(m, FetchResponse) and m.dest == f for m in self.pending):
            self.settle_alter_partition()
            return True  # the receiver was down: the request was lost
        if alter_first:
            self.settle_alter_partition()
        self.deliver_next(FetchResponse, dest=f)
        self.settle_alter_partition()
        return True

    def settle_alter_partition(self) -> None:
        """Deliver every AlterPartition request in flight and its answer."""
        while any(isinstance(m, AlterPartitionRequest) for m in self.pending):
            self.deliver_next(AlterPartitionRequest)
            self.deliver_next(AlterPartitionResponse)

    def replay(self, *brokers: int) -> list[int]:
        """Each running broker named replays the metadata committed since it last did (skipped if
        there is none); returns the brokers that replayed."""
        done = []
        for b in brokers:
            br = self.brokers[b]
            if br.running and br.image.applied < len(self.controller.records):
                self.trigger(b, Broker.replay_metadata)
                done.append(b)
        return done

    def unfence(self, b: int) -> bool:
        """Running, fenced ``b`` replays its registration and heartbeats: the controller unfences
        it (and elects it if the partition has no leader).  False if ``b`` is not running."""
        br = self.brokers[b]
        if not br.running:
            return False
        self.replay(b)
        if br.broker_epoch < 0:
            return False
        self.trigger(b, Broker.heartbeat)
        self.deliver_next(BrokerHeartbeatRequest, source=b)
        return True

    def complete(self) -> bool:
        """Every acting leader answers the acks=all produces its HW now covers (CompleteProduce)."""
        done = False
        for b, br in self.brokers.items():
            if not br.is_leader():
                continue
            for p in list(br.pending_produce):
                if br.high_watermark > p.offset and p.leaderEpoch == br.local_leader_epoch:
                    done |= bool(self.trigger(b, Broker.complete_produce, v=p.value).steps)
        return done

    # ------------------------------------------------------------------ the end of a run
    def converged(self) -> bool:
        """Quiescent: a leader with every broker unfenced and in its ISR, every log equal to the
        leader's and fully committed, nothing waiting to be answered."""
        lid = self.leader()
        if lid == -1 or self.pending:
            return False
        ld = self.brokers[lid]
        return ld.is_leader() and set(ld.local_isr) == set(self.ids) and ld.high_watermark == ld.leo \
            and not ld.pending_produce and all(
                b.running and b.local_leader == lid and b.entries == ld.entries
                and b.high_watermark == ld.high_watermark and self.controller.image.broker_state(n) not in FENCED_STATES
                for n, b in self.brokers.items())

    def settle(self, rounds: int = 150) -> None:
        """Restart every stopped broker, run fairly until ``converged`` (at most ``rounds`` rounds
        of 20 ms), and check every acknowledged record is readable from the leader."""
        for _ in range(rounds):
            for b in self.ids:
                self.restart(b)  # also a broker that finished a controlled shutdown meanwhile
            self.run(1, 20)
            p = self.controller.partition
            if self.converged() or (p.leader == -1 and not p.isr and not p.elr and not self.config.UncleanElection):
                break  # settled, or no broker may ever lead again (every ISR/ELR member was lost)
        self.check_acked_readable()

    def check_acked_readable(self) -> None:
        """Raise AckedNotReadable unless every acks=all-acknowledged record is in the current
        leader's log below its high watermark (no leader at all, every ISR/ELR member lost, is
        unavailability, which Kafka allows)."""
        lid = self.leader()
        if lid == -1:
            return
        br = self.brokers[lid]
        gone = [Violation(ACKED_READABLE, f"acked record (offset {a[0]}, epoch {a[1]}, value {a[2]}) is not "
                                          f"readable from leader {lid} (log {log_text(br.entries)}, hw "
                                          f"{br.high_watermark})")
                for a in sorted(self.ghost.acked) if not (a[0] < br.high_watermark and has_at(tuple(br.entries), a))]
        if gone:
            raise AckedNotReadable(gone[0], self.steps, self.describe(), gone)


class StackedWorld(PartitionWorld):
    """The controllers on the KRaft quorum (``kraft.replication.stacked``): voters 3000-3002, each a
    ``ControllerNode``, and brokers 1..``brokers``, each a ``BrokerNode`` fetching the committed
    metadata.  The spec's controller variables are projected from the quorum's committed log
    (``mq.view``).  ``rng`` seeds the voters' election jitter."""

    def __init__(self, brokers: int, config: ReplicationConfig, rng: random.Random, *, now: int = 0,
                 qconfig: QuorumConfig | None = None) -> None:
        super().__init__(brokers, config)
        self.now = now
        self.mq = MetadataQuorum(self.ids, config, rng, now, qconfig)
        self.controller = self.mq.view
        self.fetchers: dict[int, MetadataFetcher] = {b: self.mq.fetcher(b, now) for b in self.ids}
        self.brokers = {b: Broker(b, self.ids, config, self.fs[b], self.fetchers[b].visible, now=now,
                                  metadata_offsets=self.fetchers[b].offsets)
                        for b in self.ids}
        self.broker_nodes = {b: BrokerNode(self.brokers[b], self.fetchers[b], self.mq) for b in self.ids}
        for br in self.brokers.values():
            br.stops_on_its_own = False   # it stops when the controller's fencing commits
        self.mq.on_network = self._on_network

    def spec_epoch(self, epoch: int) -> int:
        """A broker epoch (the log offset of a committed RegisterBrokerRecord) as the spec numbers
        it: the record's position among the committed metadata records (LeaderChange control
        records take log offsets, not spec positions)."""
        return self.mq.spec_position(epoch)

    def _on_network(self, key: AlterPartitionRequest) -> bool:
        """Is a copy of AlterPartition request ``key`` (addressed to ``CONTROLLER``) in flight?"""
        return any(isinstance(m, AlterPartitionRequest) and attrs.evolve(m, dest=CONTROLLER) == key
                   for m in self.net.in_flight())

    def node_ids(self) -> Sequence[int]:
        return (*self.mq.ids, *self.ids)

    def node(self, node_id: int) -> ControllerNode | BrokerNode:  # type: ignore[override]
        return self.mq.nodes[node_id] if node_id in self.mq.nodes else self.broker_nodes[node_id]

    def route(self, node_id: int, ready: Ready) -> Ready:
        """A controller's AlterPartition answer to a stopped broker goes back on the request's
        connection, which is gone (the spec answers only a running broker)."""
        if node_id in self.mq.nodes and any(self._answer_lost(m) for m in ready.messages):
            ready = attrs.evolve(ready, messages=tuple(m for m in ready.messages if not self._answer_lost(m)))
        return super().route(node_id, ready)

    def _answer_lost(self, m: Any) -> bool:
        return isinstance(m, AlterPartitionResponse) and not self.brokers[m.dest].running

    def violations(self) -> list[Violation]:
        """Also KRaft's invariants on the controllers and the brokers' metadata a committed prefix."""
        return super().violations() + self.mq.check(self.restarted, self.fetchers)

    def project(self, in_flight: Sequence[Any]) -> dict[str, Any]:
        """AlterPartition requests a controller took and answers at commit, and those a broker's
        channel holds until answered, are in flight for the spec too."""
        held = [m for n in self.broker_nodes.values() for m in n.held()]
        return super().project([*in_flight, *self.mq.awaiting_requests(), *held])
