"""The consumer-group world: one group's coordinator and consumers at one virtual time, with the
network semantics of the spec, the fencing ghost, a Jepsen-style client history and the rebalance
log.  The Hypothesis machine (tests/groups/machine.py), the scenarios and the stories
(``kraft.groups.story``) step it by hand over its queue; the simulator plug-in
(``kraft.groups.sim``) steps the same world over its timed network (``NetworkedGroupWorld``: the
messages in envelopes, the steps in the trace's vocabulary).

Network semantics follow the spec: a response goes back on the connection its request came on
and is lost if that connection was closed (crash, leave, lease expiry, request timeout close it
and drop its messages in both directions: spec ``CloseConnection``).  Beyond the spec the queue
can also duplicate and delay (reorder) messages.

``process`` is one node step finished as the protocol needs (what the simulator calls): a message
on a closed connection is lost; the coordinator's responses to a closed connection are lost; a
delivered OffsetCommit updates the fencing ghost and ends the client's commit in the history; a
consumer whose assignment changed records an ``assign``; a consumer left Idle by a response or a
restart rejoins at once (SendJoinGroup, in the same step); the client operations (``poll``,
``SendOffsetCommit``, ``Crash``, ``Leave``) keep the history and the step narrative.  The
hand-stepped operations (``deliver``, ``drop``, ``advance``, ``crash`` ...) also put what was sent
on the queue and check the invariants after every step: the first violations seen are kept in
``found`` (one broken in the middle of a long operation such as ``settle`` is not missed), which
``violations()`` returns and ``check()`` raises.

The history holds Jepsen's Kafka-workload operations (``subscribe``, ``assign``, ``poll``,
``commit``); the rebalance log merges the coordinator's events and the listeners' callbacks.
"""

from __future__ import annotations

import random
from typing import Any, Sequence

import attrs

from kraft.core.invariants import Violation
from kraft.core.node import function_of
from kraft.core.step import TICK, Ready, Tick, Trigger
from kraft.core.world import World
from kraft.groups import invariants, projection
from kraft.groups.assignors import TopicPartition
from kraft.groups.consumer import GroupConsumer
from kraft.groups.coordinator import COORDINATOR, GroupConfig, GroupCoordinator
from kraft.groups.history import ClientHistory
from kraft.groups.wire import OneCoordinator, Wire
from kraft.groups.messages import ConsumerPhase, Errors, LeaveGroup, Message, OffsetCommit, is_request
from kraft.groups.offsets_log import OffsetsLog
from kraft.log import FileSystem, MemoryFS

EMPTY = Ready()
CONSUMERS = (("c1", None), ("c2", None), ("c3", "c3"))  # (client id, instance id): c3 is static


def client(msg: Message) -> str:
    """The consumer end of a message's connection (the sender of a request, the receiver of a
    response)."""
    return msg.source if is_request(msg) else msg.dest  # type: ignore[union-attr]


class GroupWorld(OneCoordinator, World):
    """``consumer_specs``: (client id, instance id or None) of each consumer; ``fs``: the
    coordinator's disk, where it writes its ``__consumer_offsets`` partition (a fresh
    ``MemoryFS`` by default)."""

    def __init__(self, config: GroupConfig, consumer_specs: Sequence[tuple[str, str | None]] = CONSUMERS,
                 group_id: str = "g", now: int = 0, fs: FileSystem | None = None) -> None:
        super().__init__()
        self.now = now
        self.config = config
        self.fs = MemoryFS() if fs is None else fs
        self.coordinator = GroupCoordinator(group_id, config, offsets_log=OffsetsLog.for_group(self.fs, group_id))
        self.consumers = {cid: GroupConsumer(cid, config, inst) for cid, inst in consumer_specs}
        self.fencing_breaches: set[tuple[str, str, str]] = set()
        self.found: list[Violation] = []
        self.hist = ClientHistory(lambda: self.now)
        self.wire = Wire(client, is_request)
        self.history: list[dict[str, Any]] = self.hist.ops
        self.narrative: list[str] = []   # what happened, one line per operation (failure messages)
        self.faults = 0
        self._seen_transitions = 0
        topics = sorted(t for t, _ in config.topics)
        for c in self.consumers.values():  # OffsetFetch reads the coordinator's offset store
            c.committed_offsets = self._committed
            self._hist(c.client_id, "invoke", "subscribe", topics)
            self._hist(c.client_id, "ok", "subscribe", topics)
        self._prev = self.state()

    # ------------------------------------------------------------------ the protocol's part
    def is_open(self, msg: Message) -> bool:
        """Is ``msg`` on an open connection?  (A LeaveGroup is written just before close() closes
        it and still arrives: spec Leave.)"""
        if isinstance(msg, LeaveGroup):
            return True
        c = self.consumers.get(client(msg))
        return c is not None and c.up and c.conn == msg.conn

    def _at_coordinator(self, inp: Any) -> Ready:
        accepted = len(self.coordinator.offsets.accepted)
        ready = self.coordinator.step(inp, self.now)
        if isinstance(inp, OffsetCommit):
            self._commit_landed(inp, ready, accepted)
        kept = tuple(m for m in ready.messages if self.is_open(m))
        return ready if len(kept) == len(ready.messages) else attrs.evolve(ready, messages=kept)

    def _commit_landed(self, req: OffsetCommit, ready: Ready, accepted: int) -> None:
        """The fencing ghost: an accepted commit of a partition another live consumer owns; the
        client's commit completes in the history."""
        for acc in self.coordinator.offsets.accepted[accepted:]:
            for other, oc in self.consumers.items():
                if other != acc.committer and oc.up and acc.partition in oc.owned:
                    self.fencing_breaches.add((str(acc.partition), acc.committer, other))
        ok = bool(ready.messages) and ready.messages[0].error == Errors.NONE
        self._hist(req.source, "ok" if ok else "fail", "commit", {str(p): o for p, o in req.offsets})

    def _at_consumer(self, cid: str, inp: Any) -> Ready:
        c = self.consumers[cid]
        handler = function_of(inp.handler) if isinstance(inp, Trigger) else None
        if handler in (GroupConsumer.crash, GroupConsumer.leave) and not c.up \
                or handler is GroupConsumer.restart and c.up:
            return EMPTY   # stopping a stopped consumer, restarting a running one: nothing happens
        self._client_op(cid, handler)
        ready = self._consumer_step(c, inp)
        self._client_op_done(cid, handler, ready)
        message = not isinstance(inp, (Tick, Trigger))
        if (message or handler is GroupConsumer.restart) and c.up and c.phase == ConsumerPhase.IDLE:
            ready = ready.then(self._consumer_step(c, Trigger(GroupConsumer.send_join_group)))
        return ready

    def _consumer_step(self, c: GroupConsumer, inp: Any) -> Ready:
        before = c.owned
        ready = c.step(inp, self.now)
        self._note_assignment(c.client_id, before)
        return ready

    def _client_op(self, cid: str, handler: Any) -> None:
        """A crash or a close() counts as a fault and is narrated; a crashed client stops waiting
        for its open operation."""
        if handler not in (GroupConsumer.crash, GroupConsumer.leave):
            return
        self.faults += 1
        self.narrative.append(f"{'crash' if handler is GroupConsumer.crash else 'leave'} {cid}")
        if handler is GroupConsumer.crash:
            self._abandon(cid)   # the client died waiting: its open op's outcome is unknown

    def _client_op_done(self, cid: str, handler: Any, ready: Ready) -> None:
        """A poll that read something and a commit that went out enter the history."""
        if handler is GroupConsumer.poll and ready.reply:
            self.narrative.append(f"poll {cid}")
            self._hist(cid, "invoke", "poll", None)
            # Jepsen's poll shape {key: [[offset, value], ...]}: the world's topics are
            # append-only and never truncated, the record at offset o holding the value o
            self._hist(cid, "ok", "poll", {str(p): [[o, o]] for p, o in ready.reply.items()})
        elif handler is GroupConsumer.send_offset_commit and ready.messages:
            self.narrative.append(f"commit {cid} generation {self.consumers[cid].generation}")
            self._hist(cid, "invoke", "commit", {str(p): o for p, o in ready.messages[0].offsets})

    def violations(self) -> list[Violation]:
        """The first invariant violations seen after any step so far (empty: none)."""
        self._record_violations()
        return list(self.found)

    def describe(self) -> str:
        co = self.coordinator
        lines = [f"group {co.state.value} generation {co.generation} leader {co.leader}"]
        for mid, m in sorted(co.members.items()):
            lines.append(f"  member {mid} ({m.client}) assigned {sorted(map(str, m.assignment))}")
        for cid, c in self.consumers.items():
            lines.append(f"  {cid}: {'up' if c.up else 'DOWN'} {c.phase.value} {c.member_id} "
                         f"gen {c.generation} owns {sorted(map(str, c.owned))}")
        lines += ["recent steps:", *("  " + s for s in self.narrative[-15:])]
        return "\n".join(lines)

    # ------------------------------------------------------------------ invariants
    def state(self) -> dict[str, Any]:
        return projection.project(self.coordinator, self.consumers, frozenset(self.fencing_breaches))

    def _record_violations(self) -> None:
        """The spec's invariants after a step (and the action properties since the previous
        one); the first violations found are kept in ``found``."""
        cur = self.state()
        new_transitions = self.coordinator.transitions[self._seen_transitions:]
        self._seen_transitions = len(self.coordinator.transitions)
        out = invariants.check_step(self._prev, cur, new_transitions)
        self._prev = cur
        if out and not self.found:
            self.found = out
            self.narrative.append("VIOLATION: " + "; ".join(map(str, out)))

    # ------------------------------------------------------------------ history
    def _hist(self, process: str, typ: str, f: str, value: Any) -> None:
        self.hist.op(process, typ, f, value)

    def _abandon(self, process: str) -> bool:
        return self.hist.abandon(process)

    def _note_assignment(self, cid: str, before: frozenset[TopicPartition]) -> None:
        """The consumer's assignment changed (its rebalance listener ran): an ``assign`` op, as
        Jepsen's Kafka workload records one."""
        after = self.consumers[cid].owned
        if after != before:
            self.hist.assigned(cid, sorted(map(str, after)))

    def _committed(self) -> dict[TopicPartition, int]:
        """OffsetFetch: the committed offset of every partition that has one."""
        return {p: o for p in self.config.all_partitions
                if (o := self.coordinator.offsets.fetch(p)) is not None}

    def rebalance_log(self) -> list[dict[str, Any]]:
        ev = [dict(e) for e in self.coordinator.log]
        ev += [{"at": e.at, "event": e.kind, "client": e.client, "partitions": list(e.partitions),
                "generation": e.generation} for c in self.consumers.values() for e in c.events]
        return sorted(ev, key=lambda e: e["at"])

    # ------------------------------------------------------------------ hand-stepped operations
    def step(self, node_id: str, inp: Any) -> Ready:
        """``process``, the messages onto the queue; a connection the consumer closed loses what
        is in flight on it, both ways (spec CloseConnection)."""
        c = self.consumers.get(node_id)
        old_conn = c.conn if c is not None else None
        ready = super().step(node_id, inp)
        if c is not None and c.conn != old_conn:
            self.net.discard(lambda m: client(m) == node_id and m.conn == old_conn)
        return ready

    def drop(self, index: int) -> Message | None:
        pending = self.net.pending
        msg = pending.pop(index % len(pending)) if pending else None
        if msg is not None:
            self.faults += 1
            self.narrative.append(f"drop {type(msg).__name__} {client(msg)}")
        self._record_violations()
        return msg

    def duplicate(self, index: int) -> Message | None:
        pending = self.net.pending
        msg = pending[index % len(pending)] if pending else None
        if msg is not None:
            pending.append(msg)
            self.narrative.append(f"duplicate {type(msg).__name__} {client(msg)}")
        self._record_violations()
        return msg

    def delay(self, index: int) -> Message | None:
        """Move the ``index``-th message to the back of the queue."""
        pending = self.net.pending
        msg = pending.pop(index % len(pending)) if pending else None
        if msg is not None:
            pending.append(msg)
            self.narrative.append(f"delay {type(msg).__name__} {client(msg)}")
        self._record_violations()
        return msg

    def advance(self, ms: int) -> Ready:
        """Move the clock; each node fires the timers due now, consumers before the coordinator
        (the lease)."""
        self.now += ms
        self.narrative.append(f"advance {ms}ms -> t={self.now}")
        out = EMPTY
        for n in [*self.consumers, COORDINATOR]:
            out = out.then(self.step(n, TICK))
        return self._checked(out)

    def tick(self, node_id: str) -> Ready:
        """Fire the timers of one consumer or of the coordinator that are due at ``now``, without
        moving the clock (``advance`` moves it and ticks everyone)."""
        return self._checked(self.step(node_id, TICK))

    def crash(self, cid: str) -> Ready:
        return self._checked(self.step(cid, Trigger(GroupConsumer.crash)))

    def leave(self, cid: str) -> Ready:
        """close(): the LeaveGroup goes out on the connection just before it closes."""
        return self._checked(self.step(cid, Trigger(GroupConsumer.leave)))

    def restart(self, cid: str) -> Ready:
        """A new process of a stopped consumer; it rejoins at once."""
        ready = self.step(cid, Trigger(GroupConsumer.restart))
        if ready:
            self.narrative.append(f"restart {cid}")
        return self._checked(ready)

    def poll(self, cid: str) -> Ready:
        """The client reads one record of every partition it owns (``Ready.reply``: the offsets;
        nothing is sent, so the simulator's plug-in polls through it too)."""
        return self._checked(self.process(cid, Trigger(GroupConsumer.poll)))

    def commit(self, cid: str) -> Ready:
        """commitSync of the consumer's positions (nothing if it may not commit now)."""
        return self._checked(self.step(cid, Trigger(GroupConsumer.send_offset_commit)))

    def start(self) -> Ready:
        """Every consumer that is up and Idle sends its first JoinGroup."""
        out = EMPTY
        for cid, c in self.consumers.items():
            if c.up and c.phase == ConsumerPhase.IDLE:
                out = out.then(self.step(cid, Trigger(GroupConsumer.send_join_group)))
        return out

    def join(self, cid: str) -> Ready:
        """One Idle consumer sends its JoinGroup now (nothing if it is not up and Idle)."""
        c = self.consumers[cid]
        idle = c.up and c.phase == ConsumerPhase.IDLE
        return self._checked(self.step(cid, Trigger(GroupConsumer.send_join_group)) if idle else EMPTY)

    def _checked(self, ready: Ready) -> Ready:
        """``ready``, once the invariants have run over the state it left."""
        self._record_violations()
        return ready

    def _pick(self, order: str, rng: random.Random | None) -> int:
        if order == "lifo":
            return len(self.pending) - 1
        if order == "random" and rng is not None:
            return rng.randrange(len(self.pending))
        return 0

    def settle(self, max_steps: int = 500, rng: random.Random | None = None, order: str | None = None) -> None:
        """Deliver (``order``: "fifo", "lifo" = newest first, or "random" from ``rng``), advancing
        the clock by a heartbeat interval when the network is empty, until the group and every
        live consumer is Stable."""
        order = order or ("random" if rng else "fifo")
        for _ in range(max_steps):
            if self.pending:
                self.deliver(self._pick(order, rng))
            elif self.quiet():
                return
            else:
                self.advance(self.config.heartbeat_interval_ms)

    def run_for(self, ms: int, rng: random.Random | None = None, order: str | None = None) -> None:
        """A healthy period: deliver everything in flight (FIFO or ``rng`` order), then advance
        by a heartbeat interval, until ``ms`` have passed (heartbeats keep leases alive; crashed
        members' sessions expire)."""
        end = self.now + ms
        order = order or ("random" if rng else "fifo")
        while self.now < end:
            for _ in range(200):
                if not self.pending:
                    break
                self.deliver(self._pick(order, rng))
            self.advance(min(self.config.heartbeat_interval_ms, end - self.now))

    def quiet(self) -> bool:
        return (not self.pending and self.coordinator.state.value == "Stable"
                and all(c.phase == ConsumerPhase.STABLE for c in self.consumers.values() if c.up))
