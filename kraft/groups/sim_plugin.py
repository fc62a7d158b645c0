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
"""

from __future__ import annotations

from typing import Any

import attrs

from kraft.groups.actions import VARIANTS
from kraft.groups.coordinator import GroupConfig
from kraft.groups.harness import GroupWorld
from kraft.groups.messages import ConsumerPhase, Message, RebalanceProtocol, is_request
from kraft.quorum.invariants import Violation
from kraft.sim.core import Protocol, Simulator

COORDINATOR = "coordinator"

# spec action of each message kind when it is delivered
_ACTION = {"JoinGroup": "HandleJoinGroup", "SyncGroup": "HandleSyncGroup", "Heartbeat": "HandleHeartbeat",
           "LeaveGroup": "HandleLeaveGroup", "OffsetCommit": "HandleOffsetCommit",
           "JoinGroupResponse": "HandleJoinGroupResponse", "SyncGroupResponse": "HandleSyncGroupResponse",
           "HeartbeatResponse": "HandleHeartbeatResponse", "OffsetCommitResponse": "HandleOffsetCommitResponse"}


@attrs.frozen
class Envelope:
    source: str
    dest: str
    payload: Any


def wrap(msg: Message) -> Envelope:
    if is_request(msg):
        return Envelope(msg.source, COORDINATOR, msg)  # type: ignore[union-attr]
    return Envelope(COORDINATOR, msg.dest, msg)  # type: ignore[union-attr]


def variants() -> list[str]:
    return list(VARIANTS)


class GroupsProtocol(Protocol):
    name = "groups"
    spec = "ConsumerGroup"

    def __init__(self, consumers: int = 3, variant: str | None = None, partitions: int = 4) -> None:
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        if consumers < 1:
            raise ValueError("need at least one consumer")
        self.n = consumers
        self.variant = variant
        self.partitions = partitions
        self.world: GroupWorld | None = None

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
        self._send(sim, [m for c in self.world.consumers.values() for m in c.send_join_group(sim.now)])

    @property
    def w(self) -> GroupWorld:
        assert self.world is not None
        return self.world

    def node_ids(self) -> list[Any]:
        return [COORDINATOR, *self.w.consumers]

    def _send(self, sim: Simulator, msgs: list[Message]) -> None:
        sim.drop_doomed(sim.send_all(wrap(m) for m in msgs))
        for n in {wrap(m).dest for m in msgs} | {wrap(m).source for m in msgs}:
            sim.reschedule(n)

    # -- events --------------------------------------------------------------------------------
    def deliver(self, sim: Simulator, msg: Any) -> None:
        self.w.now = sim.now
        payload = msg.payload
        out = self.w.process(payload)
        node = msg.dest
        sim.record(_ACTION.get(type(payload).__name__, type(payload).__name__), node, {"m": payload},
                   spec=not type(payload).__name__.startswith("OffsetCommitResponse"))
        self._send(sim, out)

    def wake(self, sim: Simulator, node: Any) -> None:
        self.w.now = sim.now
        if node == COORDINATOR:
            out = self.w.coordinator.tick(sim.now)
            out = [r for r in out if self.w._open(r.dest, r.conn)]
            if out:
                sim.record("CompleteJoin", node, {}, spec=True)
        else:
            c = self.w.consumers[node]
            old_conn = c.conn
            before = c.owned
            out = c.tick(sim.now)
            self.w._closed_if_changed(node, old_conn)
            self.w._note_assignment(node, before)
            if out:
                sim.record({"JoinGroup": "SendJoinGroup", "Heartbeat": "SendHeartbeat"}.get(
                    type(out[0]).__name__, "Tick"), node, {}, spec=True)
        self._send(sim, out)

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
            self.w.commit(c)
            sent = self.w.network[before:]
            del self.w.network[before:]
            if sent:
                sim.record("SendOffsetCommit", c, {}, spec=True)
            self._send(sim, sent)
        self._mirror_history(sim, n)

    def _mirror_history(self, sim: Simulator, start: int) -> None:
        if sim.recorder is None:
            return
        for op in self.w.history[start:]:
            sim.recorder.op(op["process"], op["type"], op["f"], None, op["value"], op["time"] // 1_000_000)

    def crash(self, sim: Simulator, node: Any) -> None:
        self.w.now = sim.now
        if node != COORDINATOR:
            n = len(self.w.history)
            self.w.crash(node)
            self._mirror_history(sim, n)

    def restart(self, sim: Simulator, node: Any, disk_lost: bool) -> None:
        self.w.now = sim.now
        if node != COORDINATOR:
            c = self.w.consumers[node]
            c.restart(sim.now)
            sim.record("Restart", node, {}, spec=True)
            self._send(sim, c.send_join_group(sim.now))

    # -- checking ------------------------------------------------------------------------------
    def check(self, sim: Simulator, restarted: set[Any]) -> list[Violation]:
        out = []
        for v in self.w.violations():
            name, _, msg = v.partition(": ")
            out.append(Violation(name, msg))
        return out

    def project(self, sim: Simulator) -> dict[str, Any]:
        s = self.w.state()
        s.pop("Partitions", None)
        return _jsonable(s)

    def constants(self) -> dict[str, Any]:
        return {"Consumers": [f"c{i}" for i in range(1, self.n + 1)],
                "Static": [f"c{self.n}"] if self.n > 1 else [],
                "Partitions": list(range(self.partitions)), "variant": self.variant}

    def encode_arg(self, value: Any) -> Any:
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
