"""The consumer-protocol world: one group's coordinator and consumers at one virtual time, with
the spec's network semantics, the commit-fencing ghost and a Jepsen Kafka-workload history.  The
Hypothesis machine and the stories step it by hand over its queue; the simulator plug-in
(:mod:`.sim`) steps the same world over its timed network.

Network semantics (spec/ConsumerGroupProtocol.tla):

- a response goes back on the connection its request came on; once the consumer has moved to a
  new connection (a request timeout, its lease running out, leaving) the responses still on the
  way to the old one are gone (the spec's ``DropResponsesTo``), and one arriving later is lost
  without a spec step;
- requests are never lost by a reconnect: a heartbeat sent on a connection since closed still
  reaches the coordinator (a zombie request), whose answer is lost;
- one consumer's heartbeats reach the coordinator in the order of their connections (the spec's
  ``FirstOf``): delivering one while an older connection's heartbeat of the same consumer is still
  on the way loses that older one first (a ``DropMessage``: the old connection's unread bytes die
  with it).

``process`` is one node step finished that way (what the simulator calls); the hand-stepped
operations (``deliver``, ``drop``, ``advance``, ...) also put what was sent on the queue and run
every invariant after each step, keeping the first violations found in ``found``.

A crashed consumer gives its partitions up at once (the spec's ``ClientSessionTimeout``: a dead
process owns nothing) and takes no step until it restarts; a restarted one subscribes again.
Kafka's new process would join under a new member id; here it rejoins under its client id with
epoch 0, which Kafka's coordinator also accepts (a member rejoining after a lost session).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

import attrs

from kraft.core.invariants import Violation
from kraft.core.step import TICK, Ready, SpecStep, Trigger
from kraft.core.world import World
from kraft.groups.assignors import TopicPartition
from kraft.groups.consumer_protocol import invariants, projection
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.consumer import Consumer, InNetwork
from kraft.groups.consumer_protocol.coordinator import GroupCoordinator
from kraft.groups.consumer_protocol.messages import (
    IN_GROUP,
    ClientState,
    Errors,
    Heartbeat,
    HeartbeatResponse,
    OffsetCommit,
    client_of,
    is_request,
)
from kraft.groups.consumer_protocol.protocol import COORDINATOR, PROTOCOL
from kraft.groups.history import ClientHistory
from kraft.groups.wire import OneCoordinator, Wire

EMPTY = Ready()
MESSAGES = (Heartbeat, HeartbeatResponse, OffsetCommit)


def payload(x: Any) -> Any:
    """A message, unwrapped from the simulator's envelope if it is in one."""
    return getattr(x, "payload", x)


class ConsumerProtocolWorld(OneCoordinator, World):
    """``clients``: the consumers' ids (each its member id)."""

    def __init__(self, config: ProtocolConfig, clients: Sequence[str] = ("c1", "c2", "c3"),
                 group_id: str = "g", now: int = 0) -> None:
        super().__init__()
        self.now = now
        self.config = config
        self.coordinator = GroupCoordinator(group_id, config)
        self.consumers = {c: Consumer(c, config) for c in clients}
        self.bad_commits: set[tuple[TopicPartition, str, int]] = set()
        self.found: list[Violation] = []
        self.narrative: list[str] = []
        self.hist = ClientHistory(lambda: self.now)
        self.wire = Wire(client_of, is_request)
        self.history = self.hist.ops
        for c in self.consumers.values():
            c.committed_offsets = self._committed
            c.in_network = self._in_network_of(c.id)
        # how the client operations step a node: by hand here, the simulator's step in the plug-in
        self.stepper: Callable[[str, Any], Ready] = self.step
        self._prev: dict[str, Any] | None = None
        self._prev = self.state()

    # ------------------------------------------------------------------ the protocol's part
    def is_open(self, m: Any) -> bool:
        """A response is read only on its consumer's current connection; requests always arrive."""
        if not isinstance(m, HeartbeatResponse):
            return True
        c = self.consumers.get(client_of(m))
        return c is not None and c.up and c.conn == m.conn

    def in_flight(self) -> list[Any]:
        """The messages on the way, unwrapped."""
        return [payload(x) for x in self.net.in_flight()]

    def spec_in_flight(self, m: Any) -> bool:
        """Does the spec see in-flight message ``m``?  (The simulator's world also leaves out a
        copy of a message already delivered.)"""
        return self.is_open(payload(m))

    def _in_network_of(self, cid: str) -> Callable[[int], InNetwork]:
        def seen(conn: int) -> InNetwork:
            msgs = [payload(x) for x in self.net.in_flight() if self.spec_in_flight(x)]
            request = any(isinstance(m, Heartbeat) and client_of(m) == cid and m.conn == conn for m in msgs)
            # the network's duplicates of one response share its payload: one message for the spec
            responses = tuple({id(m): m for m in msgs if isinstance(m, HeartbeatResponse) and client_of(m) == cid
                               and m.conn == conn}.values())
            return InNetwork(request, responses)
        return seen

    def _at_coordinator(self, inp: Any) -> Ready:
        lost = self._overtaken(inp) if isinstance(inp, Heartbeat) else ()
        before = dict(self.coordinator.members)
        ready = self.coordinator.step(inp, self.now)
        if isinstance(inp, OffsetCommit) and ready:
            self._commit_landed(inp, ready.reply, before)
        kept = tuple(m for m in ready.messages if self.is_open(m))
        drops = tuple(SpecStep(PROTOCOL.drop_message, None, {"m": m}) for m in lost)
        if not drops and len(kept) == len(ready.messages):
            return ready
        return attrs.evolve(ready, steps=drops + ready.steps, messages=kept)

    def _overtaken(self, hb: Heartbeat) -> list[Any]:
        """The same consumer's heartbeats of older connections still on the way: lost first (a
        spec step for those the spec sees)."""
        older = lambda m: isinstance(payload(m), Heartbeat) and client_of(payload(m)) == client_of(hb) \
            and payload(m).conn < hb.conn  # noqa: E731
        gone = self.net.discard(older)
        if gone:
            self.narrative.append(f"  ({len(gone)} older heartbeat(s) of {client_of(hb)} lost)")
        lost: list[Any] = []   # one spec step per message: the network's duplicates are one
        for m in gone:
            if self.spec_in_flight(m) and all(payload(m) is not x for x in lost):
                lost.append(payload(m))
        return lost

    def _commit_landed(self, req: OffsetCommit, error: Errors, members: dict[str, Any]) -> None:
        """The fencing ghost: an accepted commit of a partition its committer did not hold or
        another consumer owned; the client's commit completes in the history."""
        cid = client_of(req)
        if error is Errors.NONE:
            held = members[req.member_id].held
            for p in req.partitions:
                if p not in held or any(p in c.owned for x, c in self.consumers.items() if x != cid):
                    self.bad_commits.add((p, cid, req.member_epoch))
        self.hist.op(cid, "ok" if error is Errors.NONE else "fail", "commit",
                     {str(p): o for p, o in req.offsets})

    def _at_consumer(self, cid: str, inp: Any) -> Ready:
        c = self.consumers[cid]
        if not c.up and not isinstance(inp, MESSAGES):
            return EMPTY
        before, conn = c.owned, c.conn
        ready = c.step(inp, self.now)
        if c.owned != before:
            self.hist.assigned(cid, sorted(map(str, c.owned)))
        for m in ready.messages:
            if isinstance(m, OffsetCommit):
                self.hist.op(cid, "invoke", "commit", {str(p): o for p, o in m.offsets})
        if c.conn != conn:   # the old connection's responses are gone (spec DropResponsesTo)
            self.net.discard(lambda m: isinstance(payload(m), HeartbeatResponse)
                             and client_of(payload(m)) == cid and payload(m).conn == conn)
        return ready

    def violations(self) -> list[Violation]:
        self._record_violations()
        return list(self.found)

    def describe(self) -> str:
        lines = [self.coordinator.describe(), *(c.describe() for c in self.consumers.values()),
                 "recent steps:", *("  " + s for s in self.narrative[-15:])]
        return "\n".join(lines)

    # ------------------------------------------------------------------ invariants
    def state(self) -> dict[str, Any]:
        return projection.project(self.coordinator, self.consumers, self.bad_commits)

    def _record_violations(self) -> None:
        cur = self.state()
        if cur == self._prev:  # a step that changed nothing: the invariants' verdict stands
            return
        out = invariants.check_step(self._prev, cur)
        self._prev = cur
        if out and not self.found:
            self.found = out
            self.narrative.append("VIOLATION: " + "; ".join(map(str, out)))

    def _committed(self) -> dict[TopicPartition, int]:
        return {p: o for p in self.config.all_partitions if (o := self.coordinator.offsets.fetch(p)) is not None}

    # ------------------------------------------------------------------ hand-stepped operations
    def drop(self, index: int) -> Any | None:
        msg = super().drop(index)
        if msg is not None:
            self.narrative.append(f"drop {type(msg).__name__} {client_of(msg)}")
        self._record_violations()
        return msg

    def advance(self, ms: int) -> Ready:
        """Move the clock; every node fires what came due, consumers before the coordinator (the
        lease)."""
        self.now += ms
        self.narrative.append(f"advance {ms}ms -> t={self.now}")
        out = EMPTY
        for n in [*self.consumers, COORDINATOR]:
            out = out.then(self._fire(n))
        return self._checked(out)

    def _fire(self, node_id: str, limit: int = 64) -> Ready:
        out = EMPTY
        for _ in range(limit):
            ready = self.step(node_id, TICK)
            if not ready.steps and not ready.messages and ready.note is None:
                break
            self._record_violations()
            out = out.then(ready)
        return out

    def tick(self, node_id: str) -> Ready:
        """Fire what is due at one node now, without moving the clock."""
        return self._checked(self._fire(node_id))

    def join(self, cid: str) -> Ready:
        """subscribe(): the consumer joins (nothing if it is already subscribed)."""
        c = self.consumers[cid]
        if c.state is not ClientState.UNSUBSCRIBED or not c.up:
            return EMPTY
        self._subscribe_op(cid, c.subscription)
        return self._checked(self.stepper(cid, Trigger(Consumer.join)))

    def _subscribe_op(self, cid: str, topics: tuple[str, ...]) -> None:
        """The application's subscribe() call in the client history (an op that completes at once)."""
        self.hist.op(cid, "invoke", "subscribe", list(topics))
        self.hist.op(cid, "ok", "subscribe", list(topics))

    def leave(self, cid: str) -> Ready:
        """unsubscribe(): nothing if the consumer is not in the group."""
        return self._checked(self.stepper(cid, Trigger(Consumer.leave)))

    def subscribe(self, cid: str, topics: tuple[str, ...]) -> Ready:
        """subscribe() with another topic set while in the group (nothing if the consumer is down
        or not in the group); ValueError if it is not another non-empty set of the topics."""
        c = self.consumers[cid]
        if not c.up or c.state not in IN_GROUP:
            return EMPTY
        self._subscribe_op(cid, tuple(sorted(set(topics))))
        out = self._checked(self.stepper(cid, Trigger(Consumer.change_subscription, {"topics": topics})))
        self.narrative.append(f"subscribe {cid} {list(c.subscription)}")
        return out

    def crash(self, cid: str) -> Ready:
        """The consumer's process dies: it owns nothing from now on (a leave under way finishes
        its revocation first) and takes no step until it restarts."""
        c = self.consumers[cid]
        if not c.up:
            return EMPTY
        out = EMPTY
        if c.state is ClientState.PREPARE_LEAVING:
            out = self.stepper(cid, Trigger(Consumer.leave_revoke))
        elif c.state in IN_GROUP or c.state is ClientState.FENCED:
            out = self.stepper(cid, Trigger(Consumer.client_session_timeout))
        c.up = False
        self.hist.abandon(cid)
        self.narrative.append(f"crash {cid}")
        return self._checked(out)

    def restart(self, cid: str) -> Ready:
        """A new process of a crashed consumer; it subscribes again if it had left."""
        c = self.consumers[cid]
        if c.up:
            return EMPTY
        c.up = True
        self.narrative.append(f"restart {cid}")
        return self.join(cid) if c.state is ClientState.UNSUBSCRIBED else self._checked(EMPTY)

    def new_process(self, cid: str) -> Ready:
        """The application closes a static consumer that has left (or failed) and starts a new
        process of it, which subscribes under a new member id and comes back under its instance
        id (nothing for a dynamic consumer: the spec has no new process of one)."""
        c = self.consumers[cid]
        if not c.up or c.instance_id is None or c.state not in (ClientState.UNSUBSCRIBED, ClientState.FATAL):
            return EMPTY
        out = self.stepper(cid, Trigger(Consumer.new_process))
        self.narrative.append(f"new process {cid} ({c.member_id})")
        return out.then(self.join(cid))

    def failover(self) -> None:
        """The group moves to a new coordinator, the next leader of its ``__consumer_offsets``
        partition, built from what the old one wrote there (:meth:`GroupCoordinator.load`).  The
        requests on the way reach the new one; the accepted-commit history (the checks' record,
        not the coordinator's state) carries over.  The spec has no failover: every spec variable
        must be what it was (``FailoverKeepsState``), and so must the committed offsets."""
        old = self.coordinator
        before = self.state(), self._committed()
        self.coordinator = GroupCoordinator.load(old.group_id, self.config, old.offsets_log.next_leader(), self.now)
        self.coordinator.offsets.accepted = old.offsets.accepted
        self.narrative.append(f"coordinator failover (leader epoch {self.coordinator.offsets_log.leader_epoch})")
        if (self.state(), self._committed()) != before and not self.found:
            self.found = [Violation("FailoverKeepsState", "the coordinator loaded from __consumer_offsets differs "
                                    "from the one that wrote it:\n" + old.describe() + "\n" + self.coordinator.describe())]
        self._checked(EMPTY)

    def poll(self, cid: str) -> dict[TopicPartition, int]:
        """The application reads one record of every partition it owns (Jepsen's ``poll``)."""
        c = self.consumers[cid]
        if not c.up or not c.owned:
            return {}
        read = c.poll()
        self.narrative.append(f"poll {cid}")
        self.hist.op(cid, "invoke", "poll", None)
        self.hist.op(cid, "ok", "poll", {str(p): [[o, o]] for p, o in read.items()})
        return read

    def _checked(self, ready: Ready) -> Ready:
        self._record_violations()
        return ready

    def quiet(self) -> bool:
        """Nothing in flight, the group converged (the spec's ``Converged``)."""
        co = self.coordinator
        if self.pending or co.assignment_epoch != co.group_epoch:
            return False
        for cid, c in self.consumers.items():
            x = co.member_of_client(cid)
            m = None if x is None else co.members[x]
            if c.state in (ClientState.UNSUBSCRIBED, ClientState.FATAL) and m is None:
                continue
            if c.state is not ClientState.STABLE or m is None or m.epoch != co.assignment_epoch \
                    or c.owned != co.target.get(x, frozenset()) or c.recon is not None:
                return False
        return True

    def settle(self, max_steps: int = 2000, rng: random.Random | None = None) -> None:
        """Deliver (FIFO, or in ``rng``'s order), advancing the clock by a heartbeat interval when
        nothing is in flight, until the group converged."""
        for _ in range(max_steps):
            if self.quiet():
                return
            if self.pending:
                self.deliver(rng.randrange(len(self.pending)) if rng else 0)
            else:
                self.advance(self.config.heartbeat_interval_ms)
