"""A hand-stepped cluster of voters: every message delivery, drop, timer and crash is an explicit call.

This is the spec's view of the world (any message in flight may be delivered, duplicated or dropped,
any timer may fire) in Python: the Hypothesis state machines and the text scenario scripts drive it,
and it checks every invariant after every step.  ``kraft.sim`` is the timed, randomized counterpart.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from kraft.core.step import TICK, Ready, Trigger
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.invariants import InvariantViolation, Monitor, Violation
from kraft.quorum.messages import Message
from kraft.quorum.node import NotLeaderError, QuorumNode
from kraft.quorum.projection import project_cluster
from kraft.quorum.storage import MemoryFS


class Cluster:
    def __init__(self, voters: int = 3, config: QuorumConfig | None = None, seed: int = 0) -> None:
        self.config = config or QuorumConfig()
        self.ids = tuple(range(1, voters + 1))
        self.rng = random.Random(seed)
        self.now = 0
        self.fs = {i: MemoryFS() for i in self.ids}
        self.nodes = {i: QuorumNode(i, self.ids, self.config, self.fs[i], rng=random.Random(seed * 100 + i))
                      for i in self.ids}
        self.pending: list[Message] = []
        self.blocked: set[tuple[int, int]] = set()
        self.monitor = Monitor()
        self.restarted: set[int] = set()
        self.next_value = 1
        self.steps = 0
        # fault point: these voters crash and restart right after their next granted (real) vote
        self.crash_after_vote: set[int] = set()
        # called with (node id, Ready) after every step any node takes (the scenario scripts print
        # and check there); None: nobody watches
        self.observer: Callable[[int, Ready], None] | None = None

    # -- plumbing ----------------------------------------------------------------------------
    def _collect(self, node: QuorumNode, ready: Ready) -> None:
        if self.observer is not None:
            self.observer(node.id, ready)
        out = ready.messages
        self.pending.extend(out)
        if node.id in self.crash_after_vote and any(
                getattr(m, "granted", False) and not m.preVote for m in out):
            self.crash_after_vote.discard(node.id)
            self.restart(node.id)

    def run_internal(self, n: int) -> list[str]:
        """Fire every action of ``n`` enabled at the current time (timers included)."""
        node, fired = self.nodes[n], []
        for _ in range(64):
            ready = node.step(TICK, self.now)
            if not ready.steps:
                break
            fired.append(ready.steps[0].action)
            self._collect(node, ready)
        return fired

    def check(self) -> None:
        self.steps += 1
        state = project_cluster(self.nodes, tuple_logs=True)
        violations = self.monitor.observe(state, self.restarted)
        self.restarted = set()
        if violations:
            raise InvariantViolation(violations[0], self.steps, self.describe(), violations)

    def describe(self) -> str:
        lines = [self.nodes[i].describe() for i in self.ids]
        lines.append(f"in flight: {len(self.pending)}; blocked: {sorted(self.blocked)}; t={self.now}ms")
        return "\n".join(lines)

    # -- steps -------------------------------------------------------------------------------
    def deliver(self, index: int, keep_copy: bool = False) -> Message | None:
        if not self.pending:
            return None
        index %= len(self.pending)
        msg = self.pending[index] if keep_copy else self.pending.pop(index)
        if (msg.source, msg.dest) in self.blocked:
            if keep_copy:
                self.pending.pop(index)
            return None
        node = self.nodes[msg.dest]
        self._collect(node, node.step(msg, self.now))
        self.run_internal(msg.dest)
        return msg

    def deliver_all(self, rounds: int = 1) -> None:
        for _ in range(rounds):
            batch, self.pending = self.pending, []
            for msg in batch:
                if (msg.source, msg.dest) in self.blocked:
                    continue
                node = self.nodes[msg.dest]
                self._collect(node, node.step(msg, self.now))
            for n in self.ids:
                self.run_internal(n)

    def run(self, ms: int, step_ms: int = 10, append_every_ms: int = 100) -> None:
        """Let the cluster run for ``ms``: every ``step_ms`` deliver everything in flight, then fire
        due timers (a fair, loss-free network; faults come from the other steps); a client appends
        to the leader every ``append_every_ms``.  Invariants are checked after every round."""
        for k in range(max(1, ms // step_ms)):
            self.deliver_all()
            if append_every_ms and (k * step_ms) % append_every_ms == 0:
                self.append()
            self.tick(step_ms)
            self.check()  # violations can be transient (a high watermark that later recovers)

    def drop(self, index: int) -> None:
        if self.pending:
            self.pending.pop(index % len(self.pending))

    def timeout(self, n: int) -> None:
        node = self.nodes[n]
        if node.role is not Role.LEADER:
            self._collect(node, node.step(Trigger(QuorumNode.timeout), self.now))
            self.run_internal(n)

    def tick(self, ms: int) -> None:
        self.now += ms
        for n in self.ids:
            self.run_internal(n)

    def flush(self, n: int) -> None:
        node = self.nodes[n]
        self._collect(node, node.step(Trigger(QuorumNode.flush), self.now))
        self.run_internal(n)

    def restart(self, n: int, disk_lost: bool = False) -> None:
        fs = self.fs[n]
        fs.crash()
        if disk_lost:
            fs.lose_disk(self.nodes[n].directory)
            self.pending = [m for m in self.pending if n not in (m.source, m.dest)]
        self.restarted.add(n)
        node = self.nodes[n]
        self._collect(node, node.step(Trigger(QuorumNode.restart_with_disk_loss if disk_lost else QuorumNode.restart),
                                      self.now))

    def resign(self, n: int) -> None:
        node = self.nodes[n]
        self._collect(node, node.step(Trigger(QuorumNode.resign), self.now))

    def append(self, n: int | None = None) -> int | None:
        """Client append at ``n`` (default: the leader of the highest epoch); the offset or None."""
        if n is None:
            n = self.leader()
            if n is None:
                return None
        return self.append_value(n, self.next_value)

    def append_value(self, n: int, value: int) -> int | None:
        """Client append of ``value`` at ``n``; the offset, or None if ``n`` is not the leader."""
        node = self.nodes[n]
        ready = node.step(Trigger(QuorumNode.client_append, {"v": value}), self.now)
        self._collect(node, ready)
        off = ready.reply
        if isinstance(off, NotLeaderError):
            return None
        self.next_value = max(self.next_value, value) + 1
        self.run_internal(n)
        return off

    def partition(self, group: set[int] | list[int]) -> None:
        g = set(group)
        self.blocked |= {(a, b) for a in self.ids for b in self.ids if (a in g) != (b in g)}

    def isolate(self, n: int) -> None:
        """Cut ``n`` off from every other voter (replacing any previous partition)."""
        self.blocked.clear()
        self.partition({n})

    def heal(self) -> None:
        self.blocked.clear()

    # -- queries -----------------------------------------------------------------------------
    def leader(self) -> int | None:
        leaders = [n for n in self.nodes.values() if n.role is Role.LEADER]
        return max(leaders, key=lambda n: n.current_epoch).id if leaders else None

    def converged(self) -> bool:
        lid = self.leader()
        if lid is None:
            return False
        ld = self.nodes[lid]
        if any(n.role is Role.LEADER and n.id != lid for n in self.nodes.values()):
            return False
        return all(n.current_epoch == ld.current_epoch and n.storage.entries == ld.storage.entries
                   and n.high_watermark == ld.storage.end_offset for n in self.nodes.values()) \
            and ld.high_watermark == ld.storage.end_offset

    def settle(self, max_ms: int = 30_000, step_ms: int = 100) -> bool:
        """Heal, then let timers and the network run until one leader has replicated and committed its
        whole log everywhere (checking invariants all along); False if ``max_ms`` is not enough."""
        self.heal()
        waited = 0
        while waited <= max_ms:
            self.deliver_all()
            self.check()
            if self.converged():
                return True
            self.tick(step_ms)
            waited += step_ms
        return False

    def violations(self) -> list[Violation]:
        return self.monitor.observe(project_cluster(self.nodes, tuple_logs=True), ())
