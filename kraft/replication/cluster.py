"""A hand-stepped replication cluster: one controller, N brokers, every delivery, timer, produce,
crash and restart an explicit call, with every invariant checked after every step.

The Hypothesis state machine (tests/replication/machine.py) and the datadriven stories drive it;
``kraft.sim.replication_protocol`` is the timed, randomized counterpart.  Both route a node's
``Ready`` through ``route``: the halves of the spec's composite actions (RestartBroker's
registration, CleanShutdown's fencing) reach the controller at once, everything else goes on the
network.
"""

from __future__ import annotations

from typing import Any, Callable

from kraft.controller.controller import BrokerRegistrationRequest, Controller
from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.step import TICK, Ready, Trigger
from kraft.log import MemoryFS
from kraft.replication.broker import Broker, ProduceResult
from kraft.replication.config import ReplicationConfig
from kraft.replication.invariants import Ghost, check_all
from kraft.replication.messages import (
    CONTROLLER,
    NONE,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    FetchRequest,
    FetchResponse,
)
from kraft.replication.projection import View, project
from kraft.replication.protocol import PROTOCOL

CLEAN_SHUTDOWN = PROTOCOL.spec_name(Broker.clean_shutdown)
UNCLEAN_SHUTDOWN = PROTOCOL.spec_name(Broker.unclean_shutdown)
DISK_LOSS = PROTOCOL.spec_name(Broker.restart_broker_with_disk_loss)
COMPLETE_PRODUCE = PROTOCOL.spec_name(Broker.complete_produce)


def route(controller: Controller, node_id: int, ready: Ready, now: int, ghost: Ghost) -> Ready:
    """Finish a step: the controller half of a composite spec action is taken at once (its
    effects joined to ``ready``); the ghost learns acknowledged records and unclean shutdowns.
    Returns the combined Ready (its messages are what goes on the network)."""
    out = Ready(ready.steps, tuple(m for m in ready.messages if not isinstance(m, BrokerRegistrationRequest)),
                ready.writes, ready.synced, ready.committed, ready.reply, ready.note)
    for m in ready.messages:
        if isinstance(m, BrokerRegistrationRequest):
            out = out.then(controller.step(m, now))
    for s in ready.steps:
        if s.action == CLEAN_SHUTDOWN:
            out = out.then(controller.step(Trigger(Controller.broker_stopped, {"b": node_id}), now))
        elif s.action in (UNCLEAN_SHUTDOWN, DISK_LOSS):
            ghost.on_unclean(node_id)
    r = ready.reply
    if isinstance(r, ProduceResult) and r.acks == -1 and r.error == NONE and \
            any(s.action == COMPLETE_PRODUCE for s in ready.steps):
        ghost.on_acked(r.offset, r.leaderEpoch, r.value)
    return out


class Cluster:
    def __init__(self, brokers: int = 3, config: ReplicationConfig | None = None,
                 on_step: Callable[[int, Ready], None] | None = None) -> None:
        self.config = config or ReplicationConfig()
        self.ids = tuple(range(1, brokers + 1))
        self.now = 0
        self.controller = Controller(self.ids, self.config)
        self.fs = {b: MemoryFS() for b in self.ids}
        self.brokers = {b: Broker(b, self.ids, self.config, self.fs[b], self.controller.records) for b in self.ids}
        self.pending: list[Any] = []
        self.ghost = Ghost()
        self.steps = 0
        self.on_step = on_step
        self.replies: list[ProduceResult] = []
        self.check()

    def node(self, n: int) -> Any:
        return self.controller if n == CONTROLLER else self.brokers[n]

    # -- plumbing ----------------------------------------------------------------------------
    def _apply(self, n: int, ready: Ready) -> Ready:
        ready = route(self.controller, n, ready, self.now, self.ghost)
        self.pending.extend(ready.messages)
        if isinstance(ready.reply, ProduceResult):
            self.replies.append(ready.reply)
        if self.on_step is not None and (ready.steps or ready.note):
            self.on_step(n, ready)
        return ready

    def view(self) -> View:
        return View(self.controller, self.brokers, self.pending, self.ghost)

    def state(self) -> dict[str, Any]:
        s = project(self.view(), with_messages=False, with_metadata=False)
        s["MinIsr"] = self.config.min_insync_replicas
        return s

    def check(self) -> None:
        self.steps += 1
        violations = self.ghost.observe(self.brokers) + check_all(self.state())
        if violations:
            raise InvariantViolation(violations[0], self.steps, self.describe(), violations)

    def describe(self) -> str:
        lines = [self.controller.describe()] + [self.brokers[b].describe() for b in self.ids]
        lines.append(f"in flight: {[type(m).__name__ + '->' + str(m.dest) for m in self.pending]}; t={self.now}ms")
        lines.append(f"acked: {sorted(self.ghost.acked)}")
        return "\n".join(lines)

    # -- steps (each checks every invariant) -----------------------------------------------------
    def step(self, n: int, inp: Any) -> Ready:
        ready = self._apply(n, self.node(n).step(inp, self.now))
        self.check()
        return ready

    def tick(self, n: int) -> list[str]:
        """Take every internal/timer action of node ``n`` enabled now."""
        fired = []
        for _ in range(64):
            ready = self.step(n, TICK)
            if not (ready.steps or ready.note):
                break
            fired.append(ready.steps[0].action if ready.steps else ready.note.action)
        return fired

    def deliver(self, index: int) -> Any:
        if not self.pending:
            return None
        msg = self.pending.pop(index % len(self.pending))
        if msg.dest != CONTROLLER and not self.brokers[msg.dest].running:
            self.check()
            return msg  # the connection is gone: dropped
        self.step(msg.dest, msg)
        return msg

    def deliver_next(self, mtype: type, source: int | None = None, dest: int | None = None) -> Any:
        """Deliver the oldest message in flight of type ``mtype`` (and source/dest if given)."""
        for k, m in enumerate(self.pending):
            if isinstance(m, mtype) and (source is None or m.source == source) and (dest is None or m.dest == dest):
                return self.deliver(k)
        raise LookupError(f"no {mtype.__name__} {source}->{dest} in flight: {self.pending}")

    def take(self, n: int, handler: Callable[..., Any], **args: Any) -> Ready:
        """Force one action of node ``n`` (a handler of the declaration, or a helper such as
        ``Broker.heartbeat``)."""
        return self.step(n, Trigger(handler, args))

    def drop(self, index: int) -> Any:
        if not self.pending:
            return None
        msg = self.pending.pop(index % len(self.pending))
        self.check()
        return msg

    def advance(self, ms: int) -> None:
        self.now += ms

    def produce(self, b: int, acks: int) -> ProduceResult:
        ready = self.step(b, Trigger(Broker.produce, {"acks": acks, "value": self.ghost.next_value}))
        if ready.steps:
            self.ghost.next_value += 1
        return ready.reply

    def crash(self, b: int, keep_unsynced: dict[str, int] | None = None) -> None:
        """Unclean shutdown: power loss (unsynced bytes lost), connections reset."""
        br = self.brokers[b]
        if not br.running:
            return
        self.fs[b].crash(keep_unsynced=keep_unsynced)
        self.pending = [m for m in self.pending if m.dest != b and not
                        (isinstance(m, BrokerHeartbeatRequest) and m.source == b)]
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
        """Fair progress without faults: tick every node, deliver everything, advance the clock."""
        for _ in range(rounds):
            for n in (CONTROLLER, *self.ids):
                if n == CONTROLLER or self.brokers[n].running:
                    self.tick(n)
            while self.pending:
                self.deliver(0)
            self.advance(ms)

    def leader(self) -> int:
        return self.controller.partition.leader

    # -- composite moves (the stories' and the Hypothesis machine's vocabulary) -----------------
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
        return bool(self.take(f, Broker.send_fetch_request).steps)

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
                self.take(b, Broker.replay_metadata)
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
        self.take(b, Broker.heartbeat)
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
                    done |= bool(self.take(b, Broker.complete_produce, v=p.value).steps)
        return done
