"""The KRaft plug-in of the simulator: the voters of a ``QuorumWorld`` plus clients.

Client model (history, Jepsen conventions, model ``append-log``, key ``"metadata"``):
  send  invoke at the node the client believes is leader; ``fail`` if that node is not leader;
        ``ok`` with ``value = [offset, v]`` once the leader that accepted it has committed it in the
        same epoch; ``info`` if that leader crashed, resigned or left the epoch first (outcome unknown).
  poll  reads a committed range from one node's state machine: ``ok`` with ``[[offset, v], ...]``
        (data records only; offsets of control records are skipped like a Kafka consumer does).
A process that saw ``info`` is retired and replaced by a fresh process id (Jepsen's rule).
Every run that does not stop at a violation ends with Jepsen's final phase (``Simulator.quiesce``:
heal, restart, no more writes, let the quorum settle), then the final reads: each reader and a
fresh one poll the leader's committed records to its end, so an acknowledged send that no read
returns is a real ``unseen`` for the audit, not a reader that had not caught up.

Snapshots (the ``snapshot`` fault): a random voter snapshots its committed prefix and, mostly,
moves its log start up to its latest snapshot; a follower cut off meanwhile comes back below the
leader's log start and catches up through FetchSnapshot.  The targeted fault ``far-behind`` cuts
one follower off for a long while, during which the snapshot events clean the leader's log.
The targeted fault ``change-after-election`` arms one admin voter change that the next leader
elected gets right after it wins, before anything of its epoch can have committed: the correct
leader refuses it (REQUEST_TIMED_OUT, no high watermark in its epoch yet), a leader with
``VoterChangeBeforeEpochCommit`` appends it.  The targeted fault ``reendpoint`` restarts a replica
on a new port: as a voter that follows a leader it sends UpdateRaftVoter once the update-voter
period expires, and the leader writes its new endpoints into the voter set.

Voter changes (KIP-853, with ``observers`` > 0): the replicas past the bootstrap voters start as
observers; one client operation in ten is then an admin request to the leader instead of a send:
add a caught-up observer as a voter (AddRaftVoter) or remove a voter (RemoveRaftVoter), each
refused as the leader refuses it.  The history does not record them (they are not sends or polls).
"""

from __future__ import annotations

import random
from typing import Any

import attrs

from kraft.core.invariants import Violation
from kraft.core.node import Refused
from kraft.core.plugin import Nemesis, Sim, SimPlugin
from kraft.core.step import Ready, Trigger
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.invariants import holds, is_quorum_of, last_voters, show_entry
from kraft.quorum.messages import LEADER_CHANGE, VOTERS, in_spec, to_spec
from kraft.quorum.node import QuorumNode
from kraft.quorum.protocol import PROTOCOL
from kraft.quorum.world import QuorumWorld

BECOME_LEADER = PROTOCOL.spec_name(QuorumNode.become_leader)
# the variants ``kraft simulate --variant`` takes: the declared ones, and PreVote (switched off)
VARIANTS = (*PROTOCOL.variant_names, "PreVote")

KEY = "metadata"
READERS = 2  # consumer processes 1000 and 1001


# control records (LeaderChangeMessage, VotersRecord): a Kafka consumer never returns them
CONTROL = (LEADER_CHANGE, VOTERS)


def _data_records(window: list[Any], start: int) -> list[list[Any]]:
    """``[offset, value]`` of the data records of ``window`` (which starts at offset ``start``)."""
    return [[off, r.value] for off, r in enumerate(window, start) if r.value not in CONTROL]


@attrs.define
class _PendingSend:
    process: int
    value: int
    node: int
    epoch: int
    offset: int


class KRaftPlugin(SimPlugin):
    declaration = PROTOCOL
    final_phase_always = True  # the audit counts acknowledged sends no read returned (Jepsen's unseen)
    snapshots = True
    world: QuorumWorld

    def __init__(self, voters: int = 3, config: QuorumConfig | None = None, processes: int = 4,
                 observers: int = 0) -> None:
        if voters < 1:
            raise ValueError("need at least one voter")
        self.voter_ids = tuple(range(1, voters + 1))   # the bootstrap voters
        self.observer_ids = tuple(range(voters + 1, voters + observers + 1))
        self.config = config or QuorumConfig()
        self.n_processes = processes
        self.pending: dict[int, _PendingSend] = {}     # process -> open send
        self.free_processes = list(range(processes))
        self.next_process = processes
        self.next_value = 1
        self.elections = 0
        self.changes_armed = 0   # strikes of change-after-election not yet spent on an election
        self.stats = {"ok": 0, "fail": 0, "info": 0, "polls": 0, "skipped_writes": 0}
        if observers:
            self._count_voter_changes()
        self.read_positions: dict[int, int] = {}
        self.nodes: dict[int, QuorumNode] = {}   # the world's voters (set by build)

    # -- setup -------------------------------------------------------------------------------
    def build(self, sim: Sim) -> QuorumWorld:
        world = QuorumWorld(len(self.voter_ids), self.config, now=sim.now,
                            node_rng=lambda i: random.Random(sim.rng.randrange(2**32)),
                            observers=len(self.observer_ids))
        world.net = sim.network
        self.nodes = world.nodes
        return world

    def constants(self) -> dict[str, Any]:
        observers = {"Observers": list(self.observer_ids)} if self.observer_ids else {}
        return {"Voters": list(self.voter_ids), **observers, "PreVote": self.config.PreVote,
                **PROTOCOL.variant_constants(self.config)}

    def encode(self, value: Any) -> Any:
        if hasattr(value, "mtype"):
            return to_spec(value)
        return value

    # -- stepping ----------------------------------------------------------------------------
    def observe(self, sim: Sim, node_id: Any, ready: Ready) -> None:
        if any(s.action == BECOME_LEADER for s in ready.steps):
            self.elections += 1
            if self.changes_armed and node_id not in sim.down:
                self.changes_armed -= 1
                sim.count("change-after-election")
                self._change_voters(sim, node_id)

    # -- clients -----------------------------------------------------------------------------
    def believed_leader(self, sim: Sim) -> int | None:
        leaders = [n for n in self.nodes.values() if n.role is Role.LEADER and n.id not in sim.down]
        if not leaders:
            return None
        return max(leaders, key=lambda n: n.current_epoch).id

    def read(self, sim: Sim) -> None:
        """A consumer polls one voter's committed records onward from its position."""
        up = [i for i in self.voter_ids if i not in sim.down]
        if not up:
            return
        node = self.nodes[sim.rng.choice(up)]
        records = self.world.applied[node.id].records
        # drawn only so that a seed replays the same run as before readers kept positions
        sim.rng.randrange(len(records) + 1)
        # readers are consumers, as in Jepsen's Kafka workload: each has a position and polls
        # onward from it (from whichever node it asks), so a gap, a step back, or an
        # acknowledged write nobody reads past is a real anomaly, not an artifact
        process = 1000 + self.stats["polls"] % READERS
        position = self.read_positions.get(process, 0)
        start = min(position, len(records))  # a node behind the reader's position returns nothing
        window = records[start:start + 20]
        self.read_positions[process] = max(position, start + len(window))
        got = _data_records(window, start)
        self.stats["polls"] += 1
        if sim.recorder is not None:
            sim.recorder.op(process, "invoke", "poll", KEY, None, sim.now, node=node.id, offset=start)
            sim.recorder.op(process, "ok", "poll", KEY, got, sim.now, node=node.id, offset=start)

    def write(self, sim: Sim) -> None:
        """A producer sends one fresh value to the voter it believes leads (sometimes another); with
        observers, one time in ten an admin asks the leader for a voter change instead."""
        up = [i for i in self.voter_ids if i not in sim.down]
        if not up:
            return
        if self.observer_ids and sim.rng.random() < 0.1:
            self._change_voters(sim)
            return
        if not self.free_processes:
            self.stats["skipped_writes"] += 1
            return
        target = self.believed_leader(sim)
        if target is None or sim.rng.random() < 0.15:
            target = sim.rng.choice(up)
        process = self.free_processes.pop(0)
        value = self.next_value
        self.next_value += 1
        rec = sim.recorder
        if rec is not None:
            rec.op(process, "invoke", "send", KEY, value, sim.now, node=target)
        node = self.nodes[target]
        offset = sim.step_node(target, Trigger(QuorumNode.client_append, {"v": value})).reply
        if isinstance(offset, Refused):
            self.stats["fail"] += 1
            if rec is not None:
                rec.op(process, "fail", "send", KEY, value, sim.now, node=target, error="not-leader")
            self.free_processes.append(process)
            return
        self.pending[process] = _PendingSend(process, value, target, node.current_epoch, offset)
        sim.run_due(target)
        sim.reschedule(target)

    def _count_voter_changes(self) -> None:
        for key in ("voters_added", "voters_removed", "voter_changes_refused"):
            self.stats.setdefault(key, 0)

    def _change_voters(self, sim: Sim, lid: int | None = None) -> None:
        """AddRaftVoter of a random non-voter, or (when every replica votes, or one time in two)
        RemoveRaftVoter of a random voter, at leader ``lid`` (default: the believed leader); a
        refusal is counted."""
        lid = self.believed_leader(sim) if lid is None else lid
        if lid is None:
            return
        self._count_voter_changes()
        leader = self.nodes[lid]
        voters = leader.voters
        others = [i for i in self.world.ids if i not in voters]
        add = bool(others) and sim.rng.random() < 0.5
        x = sim.rng.choice(others if add else voters)
        if (leader.add_voter_refusal(x) if add else leader.remove_voter_refusal(x)) is not None:
            self.stats["voter_changes_refused"] += 1
            return
        self.stats["voters_added" if add else "voters_removed"] += 1
        sim.step_node(lid, Trigger(QuorumNode.add_voter if add else QuorumNode.remove_voter, {"x": x}))
        sim.run_due(lid)
        sim.reschedule(lid)

    def settle_clients(self, sim: Sim) -> None:
        for process in sorted(self.pending):
            p = self.pending[process]
            node = self.nodes[p.node]
            alive = p.node not in sim.down and node.role is Role.LEADER and node.current_epoch == p.epoch
            if alive and node.high_watermark > p.offset:
                self.stats["ok"] += 1
                if sim.recorder is not None:
                    sim.recorder.op(process, "ok", "send", KEY, [p.offset, p.value], sim.now, node=p.node,
                                    offset=p.offset)
                del self.pending[process]
                self.free_processes.append(process)
            elif not alive:
                self._info(sim, process, "leader-lost")

    def settled(self, sim: Sim) -> bool:
        """Final phase: every voter up, one leader that has committed its whole log, every voter
        holding that log and no send waiting for its commit."""
        if sim.down or self.pending:
            return False
        lid = self.believed_leader(sim)
        if lid is None:
            return False
        end = self.nodes[lid].storage.end_offset
        return self.nodes[lid].high_watermark == end and all(n.storage.end_offset == end for n in self.nodes.values())

    def liveness(self, sim: Sim) -> list[Violation]:
        """The spec's liveness properties, once faults stop and the quiet period is over
        (FollowersCatchUp, ReconfigurationNotStuck, LeaderAfterCrash, reported in that order)."""
        return self._followers_behind(sim) + self._voter_changes_stuck(sim) + self._no_leader(sim)

    def _followers_behind(self, sim: Sim) -> list[Violation]:
        """FollowersCatchUp: every voter's log reaches the end of the committed prefix (through a
        snapshot when it is behind a leader's log start)."""
        committed = len(self.world.monitor.committed)
        behind = {i: n.storage.end_offset for i, n in self.nodes.items() if n.storage.end_offset < committed}
        if not behind:
            return []
        return [Violation("FollowersCatchUp",
                          f"faults stopped {sim.now - sim.final_phase['calm_at_ms']}ms ago, and voters {behind} "
                          f"(log ends) are still behind the {committed} committed records")]

    def _voter_changes_stuck(self, sim: Sim) -> list[Violation]:
        """ReconfigurationNotStuck: no leader still holds a VotersRecord above its high watermark
        (the spec's ``VoterChangePending``): an accepted change is answered by its commit or by the
        leader stepping down."""
        stuck = {i: (n.storage.voter_offsets, n.high_watermark) for i, n in sorted(self.nodes.items())
                 if i not in sim.down and n.role is Role.LEADER and not n.voters_committed()}
        if not stuck:
            return []
        return [Violation("ReconfigurationNotStuck",
                          f"faults stopped {sim.now - sim.final_phase['calm_at_ms']}ms ago, and leaders "
                          f"{stuck} (VotersRecord offsets, high watermark) still have a voter change uncommitted")]

    def _no_leader(self, sim: Sim) -> list[Violation]:
        """LeaderAfterCrash: once the faults (crashes and restarts among them) have stopped, some
        replica that is up leads the newest epoch any replica knows."""
        epoch = max(n.current_epoch for n in self.nodes.values())
        if any(i not in sim.down and n.role is Role.LEADER and n.current_epoch == epoch
               for i, n in self.nodes.items()):
            return []
        roles = {i: (n.role.value, n.current_epoch) for i, n in sorted(self.nodes.items())}
        return [Violation("LeaderAfterCrash",
                          f"faults stopped {sim.now - sim.final_phase['calm_at_ms']}ms ago, and no replica "
                          f"leads epoch {epoch}: (role, epoch) {roles}")]

    def final_reads(self, sim: Sim) -> dict[str, Any]:
        """Jepsen's final reads: every reader process and a fresh one poll the leader from their
        position (the fresh one from 0) to its committed end, in the readers' usual windows."""
        lid = self.believed_leader(sim)
        readers = [1000 + i for i in range(READERS)] + [1000 + READERS]
        polls = 0
        if lid is not None:
            records = self.world.applied[lid].records
            for process in readers:
                while True:
                    start = self.read_positions.get(process, 0)
                    window = records[start:start + 20]
                    self.read_positions[process] = start + len(window)
                    got = _data_records(window, start)
                    polls += 1
                    self.stats["polls"] += 1
                    if sim.recorder is not None:
                        sim.recorder.op(process, "invoke", "poll", KEY, None, sim.now, node=lid, offset=start)
                        sim.recorder.op(process, "ok", "poll", KEY, got, sim.now, node=lid, offset=start)
                    if not window:
                        break
        return {"leader": lid, "high_watermark": self.nodes[lid].high_watermark if lid is not None else None,
                "readers": readers, "polls": polls}

    def _info(self, sim: Sim, process: int, why: str) -> None:
        p = self.pending.pop(process)
        self.stats["info"] += 1
        if sim.recorder is not None:
            sim.recorder.op(process, "info", "send", KEY, p.value, sim.now, node=p.node, error=why)
        self.free_processes.append(self.next_process)
        self.next_process += 1

    def finish(self, sim: Sim) -> None:
        self.settle_clients(sim)
        for process in sorted(self.pending):
            self._info(sim, process, "run-ended")

    # -- faults ------------------------------------------------------------------------------
    def restart(self, sim: Sim, node_id: int, disk_lost: bool) -> None:
        """The voter restarts with what its disk kept (``QuorumWorld.power_loss``)."""
        sim.step_node(node_id, self.world.power_loss(node_id, disk_lost))
        if disk_lost:  # its connections were reset: a Candidate asks the new disk again, before
            # anything the restarted voter sends can be in flight between the two (the spec's guard)
            for c in self.world.vote_resenders(node_id):
                if c not in sim.down:
                    sim.step_node(c, Trigger(QuorumNode.resend_vote_request, {"d": node_id}))
        sim.run_due(node_id)

    def can_lose_disk(self, sim: Sim, node_id: int) -> bool:
        """Safe to wipe this replica (``QuorumWorld.can_lose_disk``)."""
        return self.world.can_lose_disk(node_id)

    def snapshot(self, sim: Sim, rng: random.Random) -> None:
        """A voter, seven times in ten, snapshots its committed prefix (TakeSnapshot at its high
        watermark; with ``SnapshotBeyondHighWatermark`` sometimes at its log end) and, three times
        in four, moves its log start to its latest snapshot (DeleteBeforeSnapshot; with
        ``RetentionDeletesPastSnapshot`` sometimes past every snapshot)."""
        up = [i for i in self.voter_ids if i not in sim.down]
        if not up:
            return
        node = self.nodes[rng.choice(up)]
        st = node.storage
        # every draw is made whatever the config, so a bug variant's run takes the same choices as
        # the correct one until the bug acts (the conformance tests' oracle)
        snap, beyond, clean, anywhere = (rng.random() < 0.7, rng.random() < 0.5, rng.random() < 0.75,
                                         rng.random() < 0.5)
        anywhere_o = rng.randint(st.log_start_offset, max(st.log_start_offset, node.high_watermark))
        k = node.high_watermark
        if self.config.SnapshotBeyondHighWatermark and beyond and st.end_offset > k and node.may_snapshot(st.end_offset):
            k = st.end_offset  # only where the bug makes a difference
        if snap and node.may_snapshot(k):
            sim.count("snapshot")
            sim.step_node(node.id, Trigger(QuorumNode.take_snapshot, {"k": k}))
        latest = st.latest_snapshot
        o = latest.end if latest is not None else 0
        if self.config.RetentionDeletesPastSnapshot and anywhere and anywhere_o not in st.snapshots \
                and node.may_delete_before(anywhere_o):
            o = anywhere_o  # only where the bug makes a difference
        if clean and node.may_delete_before(o):
            sim.count("clean")
            sim.step_node(node.id, Trigger(QuorumNode.delete_before_snapshot, {"o": o}))
        sim.run_due(node.id)
        sim.reschedule(node.id)

    def nemeses(self) -> dict[str, Nemesis]:
        return {"far-behind": Nemesis(self._far_behind, "cut one follower off from every other voter for "
                                                        "4-8 s, while the leader goes on (with the "
                                                        "snapshot fault: snapshots and cleans its log)"),
                "change-after-election": Nemesis(self._arm_change, "the next leader elected gets an admin "
                                                                   "voter change (add or remove) right "
                                                                   "after it wins"),
                "reendpoint": Nemesis(self._reendpoint, "a replica crashes and comes back listening on a new "
                                                        "port, which its voter set lists only after "
                                                        "UpdateRaftVoter")}

    def _reendpoint(self, sim: Sim) -> None:
        """Crash a random replica that is up; it restarts 0.2-1 s later on a new port."""
        up = [i for i in self.world.ids if i not in sim.down]
        if not up:
            return
        victim = sim.rng.choice(up)
        port = sim.rng.randint(10000, 60000)
        sim.count("reendpoint")
        sim.crash(victim, sim.rng.randint(200, 1000))
        self.world.move_endpoints(victim, port)

    def _arm_change(self, sim: Sim) -> None:
        """Arm one voter change for the next election (``observe`` spends it); strikes add up."""
        self.changes_armed += 1

    def _far_behind(self, sim: Sim) -> None:
        lid = self.believed_leader(sim)
        followers = [i for i in self.voter_ids if i != lid and i not in sim.down]
        if lid is None or not followers:
            return
        victim = sim.rng.choice(followers)
        sim.count("far-behind")
        sim.isolate(victim, self.voter_ids, sim.rng.randint(4000, 8000))

    def resign(self, sim: Sim) -> None:
        """The leader resigns (EndQuorumEpoch to the other voters)."""
        lid = self.believed_leader(sim)
        if lid is None:
            return
        sim.count("resign")
        sim.step_node(lid, Trigger(QuorumNode.resign))
        sim.run_due(lid)
        sim.reschedule(lid)

    def drop_is_spec_step(self, sim: Sim, msg: Any) -> bool:
        """UpdateRaftVoter is not in the spec's network: its loss is no spec step."""
        return in_spec(msg)

    # -- checking ----------------------------------------------------------------------------
    def project(self, sim: Sim) -> dict[str, Any]:
        return self.world.project(sim.network)

    def check(self, sim: Sim) -> list[Violation]:
        self.settle_clients(sim)
        return self.world.violations()

    def describe(self, sim: Sim) -> str:
        lines = [("DOWN " if i in sim.down else "") + self.nodes[i].describe() for i in self.world.ids]
        if sim.network.blocked:
            lines.append(f"blocked links: {sorted(sim.network.blocked)}")
        c = self.world.monitor.committed
        lines.append(f"committed (ghost): {len(c)} records, last {[show_entry(e) for e in c[-3:]]}")
        return "\n".join(lines)

    def summary(self, sim: Sim) -> dict[str, Any]:
        hwm = max((n.high_watermark for n in self.nodes.values()), default=0)
        return {
            "voters": len(self.voter_ids),
            "elections": self.elections,
            "leader_per_epoch": {e: l for e, l in sorted(self.world.monitor.leader_of_epoch.items())},
            "committed_offset": len(self.world.monitor.committed),
            "max_high_watermark": hwm,
            "clients": dict(self.stats),
        }


def make(voters: int, variant: str | None, observers: int = 0) -> KRaftPlugin:
    """The plug-in ``kraft simulate --protocol kraft --voters N --variant V --observers K`` runs."""
    return KRaftPlugin(voters, QuorumConfig().with_variant(variant), observers=observers)
