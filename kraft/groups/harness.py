"""A small deterministic world for one group: a coordinator, some consumers, a network queue
under the caller's control, and a virtual clock. The Hypothesis suite and the simulator plug-in
drive it step by step; after every step :meth:`GroupWorld.violations` evaluates the spec's
invariants over the projections.

Network semantics follow the spec: a response goes back on the connection its request came on
and is lost if that connection was closed (crash, leave, lease expiry, request timeout close it
and drop its messages in both directions: spec ``CloseConnection``). Beyond the spec the
queue can also duplicate and delay (reorder) messages.

The world drives the coordinator and the consumers through their one entry point,
``step(input, now) -> Ready`` (kraft.core.step): a message, ``TICK`` or a ``Trigger`` of a declared
handler (:mod:`kraft.groups.protocol`). Each of its operations returns the ``Ready`` of what it
made them do (the spec steps, in order, and the messages sent, less those lost on a closed
connection), so a driver (the simulator plug-in, the datadriven scenario tests) can show or record it.

The world also records a Jepsen-style client history (``subscribe``, ``assign``, ``poll``,
``commit``) and the rebalance log (coordinator events and listener callbacks).
"""

from __future__ import annotations

import random
from typing import Any

import attrs

from kraft.core.invariants import Violation
from kraft.core.step import TICK, Ready, Trigger
from kraft.groups import invariants, projection
from kraft.groups.assignors import TopicPartition
from kraft.groups.consumer import GroupConsumer
from kraft.groups.coordinator import COORDINATOR, GroupConfig, GroupCoordinator
from kraft.groups.messages import ConsumerPhase, Errors, LeaveGroup, Message, OffsetCommit, is_request

_EMPTY = Ready()


def _dest(msg: Message) -> str:
    return msg.source if is_request(msg) else msg.dest  # type: ignore[union-attr]


@attrs.define
class GroupWorld:
    config: GroupConfig
    consumer_specs: tuple[tuple[str, str | None], ...] = (("c1", None), ("c2", None), ("c3", "c3"))
    group_id: str = "g"
    now: int = 0
    network: list[Message] = attrs.field(factory=list)
    coordinator: GroupCoordinator = attrs.field(init=False)
    consumers: dict[str, GroupConsumer] = attrs.field(init=False)
    fencing_breaches: set[Any] = attrs.field(factory=set)
    found: list[Violation] = attrs.field(factory=list)
    history: list[dict[str, Any]] = attrs.field(factory=list)
    steps: list[str] = attrs.field(factory=list)
    faults: int = 0
    _prev: dict[str, Any] | None = attrs.field(default=None, init=False)
    # the history keeps Jepsen's shape (one open op per process, every completion after its
    # invocation): a process's open invocation, and assignment changes waiting for it to complete
    _open_op: dict[str, dict[str, Any]] = attrs.field(factory=dict, init=False)
    _held_assign: dict[str, list[Any]] = attrs.field(factory=dict, init=False)
    _seen_transitions: int = attrs.field(default=0, init=False)

    def __attrs_post_init__(self) -> None:
        self.coordinator = GroupCoordinator(self.group_id, self.config)
        self.consumers = {cid: GroupConsumer(cid, self.config, inst) for cid, inst in self.consumer_specs}
        for c in self.consumers.values():  # OffsetFetch reads the coordinator's offset store
            c.committed_offsets = self._committed
        for cid in self.consumers:
            self._hist(cid, "invoke", "subscribe", sorted(t for t, _ in self.config.topics))
            self._hist(cid, "ok", "subscribe", sorted(t for t, _ in self.config.topics))
        self._prev = self.state()

    # ------------------------------------------------------------------ history
    def _hist(self, process: str, typ: str, f: str, value: Any) -> None:
        """Append one op, keeping the history well formed as Jepsen writes one: an invocation
        while the process still waits on an asynchronous commit ends that commit as ``info`` (the
        client stopped waiting: its outcome is unknown), and a completion that answers no open
        invocation of that op (the answer to an abandoned or duplicated commit) is not written."""
        if typ == "invoke":
            if self._abandon(process):
                self._release_assignments(process)
            self._open_op[process] = {"f": f, "value": value}
        else:
            held = self._open_op.get(process)
            if held is None or held["f"] != f or (f == "commit" and held["value"] != value):
                return   # (a commit's answer names its offsets: an older commit's is not this one's)
            del self._open_op[process]
        self._append(process, typ, f, value)
        if typ != "invoke":
            self._release_assignments(process)

    def _abandon(self, process: str) -> bool:
        """The process stops waiting for its open op (a new invocation, a crash): it ends as
        ``info``, its outcome unknown.  False if none was open."""
        held = self._open_op.pop(process, None)
        if held is not None:
            self._append(process, "info", held["f"], held["value"])
        return held is not None

    def _append(self, process: str, typ: str, f: str, value: Any) -> None:
        self.history.append({"process": process, "type": typ, "f": f, "value": value,
                             "time": self.now * 1_000_000, "index": len(self.history)})

    def _note_assignment(self, cid: str, before: frozenset[TopicPartition]) -> None:
        """The consumer's assignment changed (its rebalance listener ran): an ``assign`` op, as
        Jepsen's Kafka workload records one, once no op of the process is open."""
        after = self.consumers[cid].owned
        if after != before:
            self._held_assign.setdefault(cid, []).append(sorted(map(str, after)))
            if cid not in self._open_op:
                self._release_assignments(cid)

    def _release_assignments(self, cid: str) -> None:
        for value in self._held_assign.pop(cid, []):
            self._append(cid, "invoke", "assign", value)
            self._append(cid, "ok", "assign", value)

    # ------------------------------------------------------------------ plumbing
    def _send(self, msgs: Any) -> None:
        self.network.extend(msgs)

    def _committed(self) -> dict[TopicPartition, int]:
        """OffsetFetch: the committed offset of every partition that has one."""
        return {p: o for p in self.config.all_partitions
                if (o := self.coordinator.offsets.fetch(p)) is not None}

    def _only_open(self, r: Ready) -> Ready:
        """The coordinator's responses to a closed connection are lost (spec Respond / Open)."""
        kept = tuple(m for m in r.messages if self._open(m.dest, m.conn))
        return r if len(kept) == len(r.messages) else attrs.evolve(r, messages=kept)

    def state(self) -> dict[str, Any]:
        return projection.project(self.coordinator, self.consumers, frozenset(self.fencing_breaches))

    def _check(self) -> None:
        """The spec's invariants after every single step (and the action properties since the
        previous step); the first violations found are kept in ``found``."""
        cur = self.state()
        new_tr = self.coordinator.transitions[self._seen_transitions:]
        self._seen_transitions = len(self.coordinator.transitions)
        out = invariants.check_step(self._prev or cur, cur, new_tr)
        self._prev = cur
        if out and not self.found:
            self.found = out
            self.steps.append("VIOLATION: " + "; ".join(map(str, out)))

    def violations(self) -> list[Violation]:
        """The first invariant violations seen after any step so far (empty: none)."""
        self._check()
        return list(self.found)

    # ------------------------------------------------------------------ steps
    def deliver(self, i: int) -> Ready:
        """Deliver the i-th in-flight message (any order: the caller picks)."""
        if not self.network:
            return _EMPTY
        msg = self.network.pop(i % len(self.network))
        r = self.process(msg)
        self._send(r.messages)
        self._check()
        return r

    def process(self, msg: Message) -> Ready:
        """Hand ``msg`` to its receiver; returns what it did, its messages for the caller to route
        (a simulator routes them). A message of a closed connection is lost (spec CloseConnection
        / Respond). A consumer left Idle by the response rejoins at once (SendJoinGroup)."""
        self.steps.append(f"deliver {type(msg).__name__} {'from' if is_request(msg) else 'to'} {_dest(msg)}")
        # (a LeaveGroup is written before close() closes the connection: spec Leave)
        if not isinstance(msg, LeaveGroup) and not self._open(_dest(msg), msg.conn):
            self.steps.append("  (connection closed: lost)")
            return _EMPTY
        if is_request(msg):
            n_before = len(self.coordinator.offsets.accepted)
            r = self.coordinator.step(msg, self.now)
            resp = r.messages
            if isinstance(msg, OffsetCommit):
                for acc in self.coordinator.offsets.accepted[n_before:]:
                    for other, oc in self.consumers.items():
                        if other != acc.committer and oc.up and acc.partition in oc.owned:
                            self.fencing_breaches.add((str(acc.partition), acc.committer, other))
                ok = bool(resp) and resp[0].error == Errors.NONE
                self._hist(msg.source, "ok" if ok else "fail", "commit",
                           {str(p): o for p, o in msg.offsets})
            return self._only_open(r)
        c = self.consumers[msg.dest]  # type: ignore[union-attr]
        before_owned, old_conn = c.owned, c.conn
        r = c.step(msg, self.now)
        self._closed_if_changed(c.client_id, old_conn)
        self._note_assignment(c.client_id, before_owned)
        if c.phase == ConsumerPhase.IDLE and c.up:
            before_owned = c.owned
            r = r.then(c.step(Trigger(GroupConsumer.send_join_group), self.now))
            self._note_assignment(c.client_id, before_owned)
        return r

    def _open(self, cid: str, conn: int) -> bool:
        c = self.consumers.get(cid)
        return c is not None and c.up and c.conn == conn

    def drop(self, i: int) -> None:
        if self.network:
            msg = self.network.pop(i % len(self.network))
            self.faults += 1
            self.steps.append(f"drop {type(msg).__name__} {_dest(msg)}")
        self._check()

    def duplicate(self, i: int) -> None:
        if self.network:
            msg = self.network[i % len(self.network)]
            self.network.append(msg)
            self.steps.append(f"duplicate {type(msg).__name__} {_dest(msg)}")
        self._check()

    def delay(self, i: int) -> None:
        """Move the i-th message to the back of the queue."""
        if self.network:
            msg = self.network.pop(i % len(self.network))
            self.network.append(msg)
            self.steps.append(f"delay {type(msg).__name__} {_dest(msg)}")
        self._check()

    def advance(self, ms: int) -> Ready:
        """Move the clock; consumers' timers fire before the coordinator's (the lease)."""
        self.now += ms
        self.steps.append(f"advance {ms}ms -> t={self.now}")
        out = _EMPTY
        for cid in self.consumers:
            r = self.tick_consumer(cid)
            self._send(r.messages)
            out = out.then(r)
        r = self.tick_coordinator()
        self._send(r.messages)
        self._check()
        return out.then(r)

    def tick_consumer(self, cid: str) -> Ready:
        """``TICK`` one consumer at ``now`` (its messages are the caller's to send)."""
        c = self.consumers[cid]
        before, old_conn = c.owned, c.conn
        r = c.step(TICK, self.now)
        self._closed_if_changed(cid, old_conn)
        self._note_assignment(cid, before)
        return r

    def tick_coordinator(self) -> Ready:
        """``TICK`` the coordinator at ``now`` (responses to closed connections lost)."""
        return self._only_open(self.coordinator.step(TICK, self.now))

    def _closed_if_changed(self, cid: str, old_conn: int) -> None:
        """A closed connection loses its messages in both directions (spec CloseConnection)."""
        if self.consumers[cid].conn != old_conn:
            self.network = [m for m in self.network if not (_dest(m) == cid and m.conn == old_conn)]

    def crash(self, cid: str) -> Ready:
        c = self.consumers[cid]
        r = _EMPTY
        if c.up:
            before, old_conn = c.owned, c.conn
            r = c.step(Trigger(GroupConsumer.crash), self.now)
            self.faults += 1
            self.steps.append(f"crash {cid}")
            self._abandon(cid)   # the client died waiting: its open op's outcome is unknown
            self._note_assignment(cid, before)
            self._closed_if_changed(cid, old_conn)
        self._check()
        return r

    def leave(self, cid: str) -> Ready:
        c = self.consumers[cid]
        r = _EMPTY
        if c.up:
            before, old_conn = c.owned, c.conn
            r = c.step(Trigger(GroupConsumer.leave), self.now)
            self.faults += 1
            self.steps.append(f"leave {cid}")
            self._note_assignment(cid, before)
            self._closed_if_changed(cid, old_conn)
            # LeaveGroup goes out on the old connection just before it closes
            self.network.extend(r.messages)
        self._check()
        return r

    def restart(self, cid: str) -> Ready:
        c = self.consumers[cid]
        r = _EMPTY
        if not c.up:
            old_conn = c.conn
            r = c.step(Trigger(GroupConsumer.restart), self.now)
            self._closed_if_changed(cid, old_conn)
            self.steps.append(f"restart {cid}")
            r = r.then(c.step(Trigger(GroupConsumer.send_join_group), self.now))
            self._send(r.messages)
        self._check()
        return r

    def poll(self, cid: str) -> Ready:
        c = self.consumers[cid]
        r = c.step(Trigger(GroupConsumer.poll), self.now)
        read = r.reply
        if read:
            self.steps.append(f"poll {cid}")
            self._hist(cid, "invoke", "poll", None)
            # Jepsen's poll shape {key: [[offset, value], ...]}: the world's topics are
            # append-only and never truncated, the record at offset o holding the value o
            self._hist(cid, "ok", "poll", {str(p): [[o, o]] for p, o in read.items()})
        self._check()
        return r

    def commit(self, cid: str) -> Ready:
        c = self.consumers[cid]
        r = c.step(Trigger(GroupConsumer.send_offset_commit), self.now)
        if r.messages:
            self.steps.append(f"commit {cid} generation {c.generation}")
            self._hist(cid, "invoke", "commit", {str(p): o for p, o in r.messages[0].offsets})
            self._send(r.messages)
        self._check()
        return r

    def start(self) -> Ready:
        """Every consumer sends its first JoinGroup."""
        out = _EMPTY
        for c in self.consumers.values():
            if c.up and c.phase == ConsumerPhase.IDLE:
                r = c.step(Trigger(GroupConsumer.send_join_group), self.now)
                self._send(r.messages)
                out = out.then(r)
        return out

    def join(self, cid: str) -> Ready:
        """One Idle consumer sends its JoinGroup now (nothing if it is not up and Idle)."""
        c = self.consumers[cid]
        r = _EMPTY
        if c.up and c.phase == ConsumerPhase.IDLE:
            before = c.owned
            r = c.step(Trigger(GroupConsumer.send_join_group), self.now)
            self._note_assignment(cid, before)
            self._send(r.messages)
        self._check()
        return r

    def tick(self, node: str) -> Ready:
        """Fire the timers of one consumer or of the coordinator (``"coordinator"``) at ``now``,
        without moving the clock (``advance`` moves it and ticks everyone)."""
        r = self.tick_coordinator() if node == COORDINATOR else self.tick_consumer(node)
        self._send(r.messages)
        self._check()
        return r

    def _pick(self, order: str, rng: random.Random | None) -> int:
        if order == "lifo":
            return len(self.network) - 1
        if order == "random" and rng is not None:
            return rng.randrange(len(self.network))
        return 0

    def settle(self, max_steps: int = 500, rng: random.Random | None = None, order: str | None = None) -> None:
        """Deliver (``order``: "fifo", "lifo" = newest first, or "random" from ``rng``), advancing
        the clock by a heartbeat interval when the network is empty, until the group and every
        live consumer is Stable."""
        order = order or ("random" if rng else "fifo")
        for _ in range(max_steps):
            if self.network:
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
                if not self.network:
                    break
                self.deliver(self._pick(order, rng))
            self.advance(min(self.config.heartbeat_interval_ms, end - self.now))

    def quiet(self) -> bool:
        return (not self.network and self.coordinator.state.value == "Stable"
                and all(c.phase == ConsumerPhase.STABLE for c in self.consumers.values() if c.up))

    def rebalance_log(self) -> list[dict[str, Any]]:
        ev = [dict(e) for e in self.coordinator.log]
        ev += [{"at": e.at, "event": e.kind, "client": e.client, "partitions": list(e.partitions),
                "generation": e.generation} for c in self.consumers.values() for e in c.events]
        return sorted(ev, key=lambda e: e["at"])
