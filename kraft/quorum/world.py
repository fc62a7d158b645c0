"""The KRaft world: a cluster of voters, each with its own file system and application state
machine, checked by the ``Monitor`` after every step.

The Hypothesis machines and the stories step it by hand (``kraft.core.world``: deliver, drop,
duplicate, fire timers, crash and restart, partitions); the simulator plug-in
(``kraft.quorum.sim``) steps the same world over its timed network.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Sequence

import attrs

from kraft.core.invariants import Violation
from kraft.core.node import Refused
from kraft.core.step import Ready, Trigger
from kraft.core.world import World
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.invariants import Monitor, holds, is_quorum_of, last_voters, logs_agree
from kraft.quorum.node import QuorumNode
from kraft.quorum.projection import project_cluster
from kraft.quorum.protocol import PROTOCOL
from kraft.quorum.statemachine import RecordListStateMachine, replay
from kraft.quorum.storage import MemoryFS

_RESTARTS = (PROTOCOL.spec_name(QuorumNode.restart), PROTOCOL.spec_name(QuorumNode.restart_with_disk_loss))
_BECOME_LEADER = PROTOCOL.spec_name(QuorumNode.become_leader)


class QuorumWorld(World):
    """``voters`` bootstrap voters 1..N and ``observers`` more replicas N+1..N+K (KIP-853: they
    fetch, and may be added as voters).  ``node_rng(i)`` gives replica ``i`` its randomness
    (default: seeded from ``seed`` and ``i``)."""

    def __init__(self, voters: int = 3, config: QuorumConfig | None = None, *, seed: int = 0,
                 node_rng: Callable[[int], random.Random] | None = None, now: int = 0,
                 observers: int = 0) -> None:
        super().__init__()
        self.now = now
        self.config = config or QuorumConfig()
        self.bootstrap = tuple(range(1, voters + 1))
        self.ids = tuple(range(1, voters + observers + 1))
        rng = node_rng or (lambda i: random.Random(seed * 100 + i))
        self.fs: dict[int, MemoryFS] = {}
        self.nodes: dict[int, QuorumNode] = {}
        # each voter's application state machine, fed Ready.committed (rebuilt from offset 0 after
        # a restart as the node re-learns its high watermark, as Kafka's controller replays its log)
        self.applied: dict[int, RecordListStateMachine] = {}
        for i in self.ids:
            self.fs[i] = MemoryFS()
            self.nodes[i] = QuorumNode(i, self.bootstrap, self.config, self.fs[i], rng=rng(i), now_ms=now,
                                       observers=self.ids[voters:])
            self.applied[i] = RecordListStateMachine()
        self.monitor = Monitor()
        self.next_value = 1
        # fault point: these voters crash and restart right after their next granted (real) vote
        self.crash_after_vote: set[int] = set()
        # fault point: the next leaders elected each get RemoveRaftVoter of one of their other
        # voters (the index for ``remove_other_voter``) right after they win, as the simulator's
        # change-after-election fault (an AddRaftVoter then is refused whatever the protocol: no
        # fetch offset of the new voter is known to a leader this young)
        self.change_after_election: list[int] = []

    # ------------------------------------------------------------------ the protocol's part
    def node_ids(self) -> Sequence[int]:
        return self.ids

    def node(self, node_id: int) -> QuorumNode:
        return self.nodes[node_id]

    def route(self, node_id: int, ready: Ready) -> Ready:
        """The voter's application state machine replays what became committed (a fresh one after
        a restart), and a leader's high watermark grows the ghost at once (the spec's
        CommitGhost): the invariants run after whole events, and a removed leader may commit its
        removal and resign, dropping its high watermark, within one."""
        if ready.steps and ready.steps[0].action in _RESTARTS:
            self.applied[node_id] = RecordListStateMachine()
        replay(self.applied[node_id], ready.committed)
        node = self.nodes[node_id]
        if ready.steps and node.role is Role.LEADER:
            self.monitor.leader_committed(node.storage.entries, node.storage.log_start_offset, node.high_watermark)
        return ready

    def violations(self) -> list[Violation]:
        return self.monitor.observe(self.project_fast(), self.restarted)

    def project_fast(self) -> dict[str, Any]:
        """The spec variables but the network, logs as (epoch, value) tuples (the invariants' input)."""
        return project_cluster(self.nodes, tuple_logs=True)

    def project(self, in_flight: Any = None) -> dict[str, Any]:
        """The spec variables; ``in_flight``: anything with ``in_flight()`` (the messages)."""
        return project_cluster(self.nodes, in_flight)

    def describe(self) -> str:
        lines = [self.nodes[i].describe() for i in self.ids]
        lines.append(f"in flight: {len(self.pending)}; blocked: {sorted(self.blocked)}; t={self.now}ms")
        return "\n".join(lines)

    def power_loss(self, node_id: int, disk_lost: bool = False) -> Trigger:
        """The voter's machine lost power: its file system keeps only what was synced (nothing with
        ``disk_lost``).  Returns the input that restarts the voter from what is left."""
        fs = self.fs[node_id]
        fs.crash()
        if disk_lost:
            fs.lose_disk(self.nodes[node_id].directory)
        return Trigger(QuorumNode.restart_with_disk_loss if disk_lost else QuorumNode.restart)

    def can_lose_disk(self, node_id: int) -> bool:
        """Safe to wipe this replica (see docs/quorum.md, "Losing a disk"; the spec's
        DiskLossAllowed): it is not a leader, no replica is in a lower epoch, the committed prefix
        is durable on a majority of the committed voter set without it, and no leader counts a
        fetch offset for it that a majority of its voter set without it has not reached."""
        node = self.nodes[node_id]
        if node.role is Role.LEADER:
            return False
        # no voter in an epoch below this one: the wiped voter voted at most in epochs up to its
        # own, and only a leader of a lower epoch could make it follow in an epoch where it might
        # vote a second time (found by TLC on spec/KRaft.tla, RestartWithDiskLoss/DiskLossAllowed)
        if any(other.current_epoch < node.current_epoch for other in self.nodes.values()):
            return False
        committed = self.monitor.committed
        state = self.project_fast()
        holders = [i for i, other in self.nodes.items()
                   if i != node_id and other.storage.flushed_offset >= len(committed)
                   and holds(state, i, committed)]
        if not is_quorum_of(holders, last_voters(committed, self.bootstrap)):
            return False
        for ld in self.nodes.values():
            if ld.role is not Role.LEADER:
                continue
            # the leader keeps counting the wiped voter's old fetch offset until it fetches again:
            # only safe if a majority of its voters without it already reached that offset
            reached = [v for v in self.ids if v != node_id
                       and (ld.storage.flushed_offset if v == ld.id else ld.end_offsets[v])
                       >= ld.end_offsets.get(node_id, 0)]
            if not is_quorum_of(reached, ld.voters):
                return False
        return True

    def vote_resenders(self, d: int) -> list[int]:
        """The Candidates still waiting for ``d``'s vote: after ``d``'s connections reset they send
        their VoteRequest again (the spec's ResendVoteRequest)."""
        return [c for c in self.ids if c != d and self.nodes[c].awaits_vote_from(d)]

    # ------------------------------------------------------------------ hand-stepped operations
    def step(self, node_id: Any, inp: Any) -> Ready:
        ready = super().step(node_id, inp)
        if node_id in self.crash_after_vote and any(
                getattr(m, "granted", False) and not m.preVote for m in ready.messages):
            self.crash_after_vote.discard(node_id)
            self.restart(node_id)
        if self.change_after_election and any(s.action == _BECOME_LEADER for s in ready.steps):
            self.remove_other_voter(node_id, self.change_after_election.pop(0))
        return ready

    def restart(self, n: int, disk_lost: bool = False) -> Ready:
        """Crash and restart ``n`` (a lost disk also resets its connections: what is in flight
        from or to it is gone)."""
        if disk_lost:
            self.net.discard(lambda m: n in (m.source, m.dest))
        self.restarted.add(n)
        ready = self.step(n, self.power_loss(n, disk_lost))
        if disk_lost:
            for c in self.vote_resenders(n):
                self.trigger(c, QuorumNode.resend_vote_request, d=n)
        return ready

    def restart_with_new_port(self, n: int, port: int) -> Ready:
        """Crash ``n`` and restart it listening on ``port`` (``move_endpoints``)."""
        self.move_endpoints(n, port)
        return self.restart(n)

    def move_endpoints(self, n: int, port: int) -> None:
        """``n``'s listeners move to ``port`` from its next start on: endpoints are configuration,
        so a voter set still lists the old ones until UpdateRaftVoter replaces them."""
        node = self.nodes[n]
        node.endpoints = tuple(attrs.evolve(e, port=port) for e in node.endpoints)

    def timeout(self, n: int) -> None:
        """Fire ``n``'s election timer now (nothing if it may not campaign)."""
        if not isinstance(self.trigger(n, QuorumNode.timeout).reply, Refused):
            self.fire_timers(n)

    def flush(self, n: int) -> None:
        self.trigger(n, QuorumNode.flush)
        self.fire_timers(n)

    def resign(self, n: int) -> None:
        self.trigger(n, QuorumNode.resign)

    def change_voters(self, n: int, x: int, add: bool) -> str | None:
        """AddRaftVoter (``add``) or RemoveRaftVoter of ``x`` at ``n``: None when the VotersRecord
        was appended, else the error the leader answers."""
        node = self.nodes[n]
        refusal = node.add_voter_refusal(x) if add else node.remove_voter_refusal(x)
        if refusal is not None:
            return refusal
        self.trigger(n, QuorumNode.add_voter if add else QuorumNode.remove_voter, x=x)
        self.fire_timers(n)
        return None

    def remove_other_voter(self, n: int, i: int) -> str | None:
        """RemoveRaftVoter at ``n`` of the ``i``-th (modulo their number) voter of its set other
        than itself; None when appended, else the error (VOTER_NOT_FOUND when it is alone)."""
        others = [v for v in sorted(self.nodes[n].voters) if v != n]
        return self.change_voters(n, others[i % len(others)], False) if others else "VOTER_NOT_FOUND"

    def append(self, n: int | None = None) -> int | None:
        """Client append at ``n`` (default: the leader of the highest epoch); the offset or None."""
        if n is None:
            n = self.leader()
            if n is None:
                return None
        return self.append_value(n, self.next_value)

    def append_value(self, n: int, value: int) -> int | None:
        """Client append of ``value`` at ``n``; the offset, or None if ``n`` is not the leader."""
        off = self.trigger(n, QuorumNode.client_append, v=value).reply
        if isinstance(off, Refused):
            return None
        self.next_value = max(self.next_value, value) + 1
        self.fire_timers(n)
        return off

    def run(self, ms: int, step_ms: int = 10, append_every_ms: int = 100) -> None:
        """Let the cluster run for ``ms``: every ``step_ms`` deliver everything in flight, then fire
        due timers (a fair, loss-free network; faults come from the other steps); a client appends
        to the leader every ``append_every_ms``.  Invariants are checked after every round."""
        for k in range(max(1, ms // step_ms)):
            self.deliver_all()
            if append_every_ms and (k * step_ms) % append_every_ms == 0:
                self.append()
            self.advance(step_ms)
            self.check()  # violations can be transient (a high watermark that later recovers)

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
            self.advance(step_ms)
            waited += step_ms
        return False

    # ------------------------------------------------------------------ queries
    def leader(self) -> int | None:
        leaders = [n for n in self.nodes.values() if n.role is Role.LEADER]
        return max(leaders, key=lambda n: n.current_epoch).id if leaders else None

    def converged(self, ignore: frozenset[int] = frozenset()) -> bool:
        """One leader has replicated and committed its whole log on every node but ``ignore``."""
        lid = self.leader()
        if lid is None:
            return False
        ld = self.nodes[lid]
        if any(n.role is Role.LEADER and n.id != lid for n in self.nodes.values()):
            return False
        end = ld.storage.end_offset
        led = [(e.epoch, e.value) for e in ld.storage.entries]
        return all(n.current_epoch == ld.current_epoch and n.storage.end_offset == end and n.high_watermark == end
                   and logs_agree(led, ld.storage.log_start_offset,
                                  [(e.epoch, e.value) for e in n.storage.entries], n.storage.log_start_offset)
                   for n in self.nodes.values() if n.id not in ignore) and ld.high_watermark == end

    def stranded(self) -> frozenset[int]:
        """Voters removed while away that have not learnt it yet: each still counts itself a voter,
        but the leader's voter set lacks it, so no BeginQuorumEpoch reaches it.  A diagnostic: such
        a voter rejoins through a lost pre-vote round (``ProspectiveLoses``) or its bootstrap fetch
        as an Unattached voter (``SendAnyVoterFetch``, KAFKA-17030)."""
        lid = self.leader()
        if lid is None:
            return frozenset()
        led = self.nodes[lid].voters
        return frozenset(n.id for n in self.nodes.values() if n.is_voter and n.id not in led)
