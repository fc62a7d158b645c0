"""The partition-replication plug-in of the simulator: three KRaft controllers (3000-3002; one
controller, node 0, with ``metadata_quorum=False``), brokers 1..N, producers (acks -1/1/0) and
consumers.  It builds the replication world (``kraft.replication.world``: ``StackedWorld``, or
``ReplicationWorld`` without the metadata quorum) over the simulator's network.

Faults: ``drop``/``dup``/``delay``/``reorder``/``partition`` act on every message (a partition
that cuts a broker off the controller gets it fenced: missed heartbeats); ``crash`` is an unclean
shutdown of a broker (power loss: the unflushed log tail and any torn write are lost; the broker
restarts later and registers as unclean; replica fetches it already sent still arrive) or of a
controller; ``disk-loss`` a broker restarting with an empty disk; ``resign`` a controlled shutdown
of a broker followed by a clean restart.  Targeted faults (``nemeses``, ``--faults
all,isolate-leader:1000``) strike the partition leader the committed metadata names: isolate it,
cut it off from its followers or from one of them, or crash it.

Client history (Jepsen's Kafka workload, flat form: key ``"kraft-test-0"``):
  send  invoke at the broker the client believes leads; acks=-1: ``ok`` with ``[offset, v]`` when
        the leader answers NONE (checkEnoughReplicasReachOffset), ``fail`` when nothing was
        appended (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS), ``info`` when it may have been
        (NOT_ENOUGH_REPLICAS_AFTER_APPEND, leader lost before answering).  acks=1 / acks=0 sends are
        not durable by Kafka's contract, so they complete ``info`` with the bare value (acks=1: its
        offset as an extra ``offset`` field the audit does not use).
  poll  a consumer reads from the leader it finds, from its position up to that broker's HW:
        ``ok`` with ``[[offset, v], ...]`` (an empty read when no leader answers). A position past
        that leader's log end is OFFSET_OUT_OF_RANGE: the consumer resets to offset 0
        (``auto.offset.reset=earliest``, as Jepsen configures it) and the op carries ``reset``.
  assign  each consumer process assigns itself the partition first; now and then a fresh consumer
        process starts from offset 0 (so records overwritten after a loss are read again).
A process that saw ``info`` is retired and replaced (Jepsen's rule).
Every run that does not stop at a violation (and every run with ``--after-violation``) ends with
Jepsen's final phase (``Simulator.quiesce``): heal, restart, no writes, settle (``settled``), then
every consumer and a fresh one poll the leader up to its HW (``final_reads``).
"""

from __future__ import annotations

from typing import Any, Mapping

import attrs

from kraft.controller.controller import Controller
from kraft.controller.image import UNFENCED
from kraft.replication.stacked import METADATA_DIR, MetadataQuorum, StartBroker
from kraft.core.invariants import Violation
from kraft.core.plugin import Nemesis, Sim, SimPlugin
from kraft.core.step import Ready, Trigger
from kraft.quorum.config import QuorumConfig
from kraft.quorum.node import QuorumNode
from kraft.replication.broker import Broker, ProduceResult
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import (
    CONTROLLER,
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_LEADER_OR_FOLLOWER,
    SPEC_MESSAGES,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    FetchRequest,
    to_spec,
)
from kraft.replication.protocol import PROTOCOL
from kraft.replication.world import PartitionWorld, ReplicationWorld, StackedWorld

# the variants ``kraft simulate --variant`` takes
VARIANTS = PROTOCOL.variant_names

KEY = "kraft-test-0"
CLEAN_SHUTDOWN = PROTOCOL.spec_name(Broker.clean_shutdown)
READERS = 2  # consumer processes 1000, 1001
POLL_RECORDS = 20  # records per poll (max.poll.records, small so positions lag)
FINAL_POLL_RECORDS = 200
ACKS_CHOICES = (-1, -1, -1, 1, 0)


@attrs.define
class _Pending:
    process: int
    value: int
    broker: int
    epoch: int
    offset: int


class ReplicationPlugin(SimPlugin):
    declaration = PROTOCOL
    # every run that keeps its invariants ends with Jepsen's final phase, so the audit's `unseen`
    # (acknowledged sends no poll read) means lost, not "not read yet"
    final_phase_always = True
    kept_logs = ("metadata",)
    world: PartitionWorld
    controller: Controller   # the committed metadata (the world's, set by build)

    def __init__(self, brokers: int = 3, config: ReplicationConfig | None = None, processes: int = 4,
                 metadata_quorum: bool = True, quorum_config: QuorumConfig | None = None) -> None:
        """``metadata_quorum``: the controllers are three KRaft voters and brokers fetch the
        committed metadata log from them (``StackedWorld``; ``quorum_config`` configures them);
        False: one controller whose committed log brokers read directly (the spec's abstraction,
        node 0: ``ReplicationWorld``)."""
        self.metadata_quorum = metadata_quorum
        self.quorum_config = quorum_config
        if brokers < 1:
            raise ValueError("need at least one broker")
        self.ids = tuple(range(1, brokers + 1))
        cfg = config or ReplicationConfig()
        if cfg.min_insync_replicas > brokers:
            cfg = attrs.evolve(cfg, min_insync_replicas=brokers)
        self.config = cfg
        self.n_processes = processes
        self.free_processes = list(range(processes))
        self.next_process = processes
        self.pending: dict[int, _Pending] = {}
        self.read_positions: dict[int, int] = {}
        self.assigned: set[int] = set()
        self.stats = {"ok": 0, "fail": 0, "info": 0, "polls": 0, "acks1": 0, "acks0": 0, "skipped_writes": 0,
                      "offset_resets": 0}
        self.leader_changes = 0
        self.next_client_value = 1
        self.next_reader = 2000
        self._last_leader = 1
        # isr-join-race: armed by its interval; then (leader, leader epoch, the committed partition
        # epoch, proposed ISR) of the expansion it struck, until a later partition epoch commits
        # it (or the leader changes)
        self._race_armed = False
        self._race_watch: tuple[int, int, int, frozenset[int]] | None = None
        # isolate-on-isr-shrink: armed by its interval; (leader, leader epoch, ISR) last seen
        self._shrink_armed = False
        self._shrink_seen: tuple[int, int, frozenset[int]] | None = None
        # stale-fetch: the network ids of the fetches it holds back (never held twice)
        self._held: set[int] = set()
        self.brokers: dict[int, Broker] = {}   # the world's brokers (set by build)

    # -- setup -------------------------------------------------------------------------------
    def build(self, sim: Sim) -> PartitionWorld:
        world: PartitionWorld
        if self.metadata_quorum:
            world = StackedWorld(len(self.ids), self.config, sim.rng, now=sim.now, qconfig=self.quorum_config)
        else:
            world = ReplicationWorld(len(self.ids), self.config, now=sim.now)
        world.net = sim.network
        world.on_clean_stop = lambda b: self._connections_closed(sim, b)
        self.brokers, self.controller = world.brokers, world.controller
        return world

    @property
    def mq(self) -> MetadataQuorum | None:
        """The metadata quorum (None without it)."""
        return self.world.mq if isinstance(self.world, StackedWorld) else None

    def _connections_closed(self, sim: Sim, b: int) -> None:
        """Broker ``b`` stopped cleanly (CleanShutdown, in the step being taken): its connections
        close.  What was in flight to it is lost, as the spec's stop drops every message to b
        (``DropTo``), and so are its heartbeats: Kafka's BrokerLifecycleManager sends one
        heartbeat at a time over its controller channel, the ones of a broker in controlled
        shutdown ask to shut down, and the channel closes with the process, so no heartbeat of a
        stopped broker reaches the controller afterwards (a delayed or duplicated one that did not
        ask to shut down would unfence it: BrokerHeartbeatManager.calculateNextBrokerState).  Its
        other requests may still arrive (the spec's stop may keep them, ``LostFrom``)."""
        sim.network.discard(lambda m: m.dest == b or (m.source == b and isinstance(m, BrokerHeartbeatRequest)))

    def constants(self) -> dict[str, Any]:
        return {"Brokers": list(self.ids), "MinIsr": self.config.min_insync_replicas,
                **PROTOCOL.variant_constants(self.config)}

    def encode(self, value: Any) -> Any:
        if isinstance(value, list):
            # ``then``: further spec steps of one Ready (several metadata operations can commit at
            # once), each a dict of arguments
            return [{k: self.encode(v) for k, v in x.items()} if isinstance(x, dict) else self.encode(x)
                    for x in value]
        if isinstance(value, SPEC_MESSAGES):
            return to_spec(value, self.world.spec_epoch)
        return to_spec(value) if hasattr(value, "mtype") else value

    def drop_is_spec_step(self, sim: Sim, msg: Any) -> bool:
        """A lost spec message is the spec's ``DropMessage`` (enabled by ``NetworkFaults``, which
        trace conformance sets; the model-checking sizes keep Kafka's TCP connections lossless);
        a lost heartbeat is not a spec message.  Under the metadata quorum, a lost AlterPartition
        request that the broker's channel still holds (and will resend), or that a controller
        took and answers at commit, stays in flight."""
        if self.mq is not None and isinstance(msg, AlterPartitionRequest):
            return not self.mq.alter_in_flight(msg)
        return isinstance(msg, SPEC_MESSAGES)

    # -- stepping ----------------------------------------------------------------------------
    def observe(self, sim: Sim, node: Any, ready: Ready) -> None:
        for s in ready.steps:
            if s.action == CLEAN_SHUTDOWN:
                # the broker stopped after its controlled shutdown: it is down until a clean
                # restart (under the metadata quorum it stops in a controller's step)
                sim.down.add(s.node)
                sim.restart_later(s.node, sim.now + sim.rng.randint(300, 2000))
        if self.mq is not None and node in self.mq.nodes:
            for b in self.ids:
                sim.reschedule(b)  # a committed registration may have started a broker
        if ready.committed:
            for b in self.ids:
                sim.reschedule(b)  # newly committed metadata: brokers replay it
            leader = self.controller.partition.leader
            if leader != self._last_leader:
                self.leader_changes += 1
                self._last_leader = leader
        if isinstance(ready.reply, ProduceResult) and ready.reply.acks == -1 and ready.reply.error != "PENDING":
            self._answer(sim, ready.reply)
        if self._race_armed or self._race_watch is not None:
            self._isr_join_race(sim, node)
        if self._shrink_armed:
            self._isolate_on_isr_shrink(sim, node)

    def _isolate_on_isr_shrink(self, sim: Sim, node: Any) -> None:
        """The ``isolate-on-isr-shrink`` nemesis after a step of ``node``: if it is the leader and
        its committed ISR just lost a member, isolate it."""
        br = self.brokers.get(node)
        if br is None or not br.is_leader() or sim.calm:
            return
        seen, self._shrink_seen = self._shrink_seen, (node, br.local_leader_epoch, br.local_isr)
        if seen is not None and seen[:2] == (node, br.local_leader_epoch) and br.local_isr < seen[2]:
            self._shrink_armed, self._shrink_seen = False, None
            sim.count("isolate-on-isr-shrink")
            sim.isolate(node, self.world.node_ids(), sim.rng.randint(1000, 3000))

    def _isr_join_race(self, sim: Sim, node: Any) -> None:
        """The ``isr-join-race`` nemesis after a step of ``node``: strike an ISR expansion the
        leader just proposed, then isolate the leader once the controller committed it."""
        if sim.calm:
            self._race_armed, self._race_watch = False, None
            return
        if self._race_watch is None:
            br = self.brokers.get(node)
            if br is None or not br.is_leader() or not br.alter_partition_in_flight:
                return
            joiners = sorted(br.pending_isr - br.local_isr)
            if not joiners:
                return  # a shrink
            self._race_armed = False
            sim.count("isr-join-race")
            # the fetch answer that let the joiner in is in flight: the cut drops it at delivery
            sim.isolate(node, joiners, sim.rng.randint(700, 3000))
            self._race_watch = (node, br.local_leader_epoch, self.controller.partition.partitionEpoch, br.pending_isr)
            return
        lid, epoch, partition_epoch, isr = self._race_watch
        p = self.controller.partition
        if p.leaderEpoch != epoch or p.leader != lid:
            self._race_watch = None
        elif p.partitionEpoch > partition_epoch and isr <= set(p.isr):
            self._race_watch = None
            sim.isolate(lid, self.world.node_ids(), sim.rng.randint(1000, 3000))
        elif not self.brokers[lid].alter_partition_in_flight:
            self._race_watch = None  # the controller refused it

    # -- clients -----------------------------------------------------------------------------
    def _leader_guess(self, sim: Sim) -> int | None:
        """The leader a client's metadata names: the view of the running broker with the newest
        leader epoch (a client asks any broker and, since KIP-320, never takes metadata with an
        older leader epoch than it has seen: ``Metadata.updateLatestMetadata``), if that leader
        is up and leads in that epoch. A deposed leader that has not heard of its successor (a
        zombie: partitioned from the controllers) is not used while a newer epoch is known."""
        up = [b for b in self.ids if b not in sim.down and self.brokers[b].running]
        if not up:
            return None
        epoch = max(self.brokers[b].local_leader_epoch for b in up)
        named = {self.brokers[b].local_leader for b in up if self.brokers[b].local_leader_epoch == epoch}
        leaders = [b for b in named if b in up and self.brokers[b].is_leader()
                   and self.brokers[b].local_leader_epoch == epoch]
        return leaders[0] if len(leaders) == 1 else None

    def read(self, sim: Sim) -> None:
        """A consumer polls the leader it finds (now and then a fresh consumer from offset 0)."""
        process = 1000 + self.stats["polls"] % READERS
        if sim.rng.random() < 0.15:
            # a fresh consumer reading from the beginning (Jepsen's workload also starts new
            # consumers): it re-reads old offsets, so an overwritten record shows up
            process = self.next_reader
            self.next_reader += 1
        self._assign(sim, process)
        self.stats["polls"] += 1
        self._poll(sim, process, self._leader_guess(sim), POLL_RECORDS)

    def write(self, sim: Sim) -> None:
        """A producer sends one fresh value (acks -1, 1 or 0) to the broker it believes leads
        (sometimes another)."""
        rec = sim.recorder
        if not self.free_processes:
            self.stats["skipped_writes"] += 1
            return
        up = [b for b in self.ids if b not in sim.down]
        if not up:
            return
        target = self._leader_guess(sim)
        if target is None or sim.rng.random() < 0.1:
            target = sim.rng.choice(up)
        acks = sim.rng.choice(ACKS_CHOICES)
        process = self.free_processes.pop(0)
        # every send carries a fresh value (a rejected send's value is never reused: the audit
        # must be able to tell sends apart); the spec's nextValue follows the appended ones
        value = self.next_client_value
        self.next_client_value += 1
        if rec is not None:
            rec.op(process, "invoke", "send", KEY, value, sim.now, node=target, acks=acks)
        ready = sim.step_node(target, Trigger(Broker.produce, {"acks": acks, "value": value}))
        r: ProduceResult = ready.reply
        if ready.steps:
            self.world.ghost.next_value = value + 1
        if r.error in (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS):
            self.stats["fail"] += 1
            if rec is not None:
                rec.op(process, "fail", "send", KEY, value, sim.now, node=target, error=r.error)
            self.free_processes.append(process)
        elif acks == -1:
            self.pending[process] = _Pending(process, value, target, r.leaderEpoch, r.offset)
        else:
            self.stats["acks1" if acks == 1 else "acks0"] += 1
            # an acks=1 answer carries an offset, but the record may still be truncated away
            # (Kafka's contract): an info send of the bare value, as Jepsen records a send whose
            # outcome is unknown; the offset stays beside it, for people, not for the audit
            self._info(sim, process, value, target, "acks=1: not durable" if acks == 1 else "acks=0: no answer",
                       offset=r.offset if acks == 1 else None)
        sim.run_due(target)
        sim.reschedule(target)

    def _assign(self, sim: Sim, process: int) -> None:
        if process not in self.assigned:
            self.assigned.add(process)
            if sim.recorder is not None:
                sim.recorder.op(process, "invoke", "assign", None, [KEY], sim.now)
                sim.recorder.op(process, "ok", "assign", None, [KEY], sim.now)

    def _poll(self, sim: Sim, process: int, lid: int | None, limit: int) -> int:
        """One poll of ``process`` from broker ``lid``: up to ``limit`` records from its position
        below the leader's HW; returns how many it read.

        A position past the leader's log end is OFFSET_OUT_OF_RANGE (Kafka's
        ``Partition.fetchRecords`` / ``Log.read``); the consumer then resets to the earliest
        offset, as Jepsen's Kafka client configures it (``auto.offset.reset=earliest``;
        ``Fetcher.handleOffsetOutOfRange`` / ``SubscriptionState.requestOffsetReset``) and reads
        from there in the same poll. With a correct replication protocol a consumer's position
        never passes the log end of a later leader; after a data loss it does."""
        position = self.read_positions.get(process, 0)
        asked = position
        got: list[list[int]] = []
        extra: dict[str, Any] = {}
        if lid is not None:
            br = self.brokers[lid]
            if position > br.leo:
                self.stats["offset_resets"] += 1
                extra = {"reset": {"from": position, "leo": br.leo}}
                position = 0
            window = br.entries[position:max(position, min(br.high_watermark, position + limit))]
            got = [[off, e.value] for off, e in enumerate(window, position)]
            self.read_positions[process] = position + len(window)
        if sim.recorder is not None:
            sim.recorder.op(process, "invoke", "poll", KEY, None, sim.now, node=lid, offset=asked)
            sim.recorder.op(process, "ok", "poll", KEY, got, sim.now, node=lid, offset=asked, **extra)
        return len(got)

    def settled(self, sim: Sim) -> bool:
        """The final phase may read: nothing down, every broker running and unfenced, in the ISR of
        the leader the committed metadata names (which leads in that epoch) with its whole log,
        and the leader's HW at its log end; no acks=all produce waiting (Jepsen waits a fixed
        time; stopping once this holds only saves events, the reads see the same records)."""
        if sim.down or self.mq is not None and any(n.registering is not None for n in self.world.broker_nodes.values()):
            return False
        p = self.controller.partition
        lid = p.leader
        if lid not in self.ids:
            return False
        lb = self.brokers[lid]
        if not lb.is_leader() or lb.local_leader_epoch != p.leaderEpoch or lb.high_watermark != lb.leo \
                or lb.pending_produce or lb.alter_partition_in_flight or set(lb.local_isr) != set(self.ids) \
                or set(p.isr) != set(self.ids):
            return False
        for b, br in self.brokers.items():
            if not br.running or br.want_shutdown or br.image.broker_state(b) != UNFENCED or br.entries != lb.entries:
                return False
        return not self.pending

    def final_reads(self, sim: Sim) -> dict[str, Any]:
        """Jepsen's final reads: after heal and quiesce, every consumer (the ones polling all run
        long, and a fresh one from offset 0) polls the leader until it reaches the leader's HW."""
        lid = self._leader_guess(sim)
        fresh = self.next_reader
        self.next_reader += 1
        readers = [*sorted(p for p in self.assigned if p < 2000), fresh]
        polls = 0
        for process in readers:
            self._assign(sim, process)
            while True:
                polls += 1
                n = self._poll(sim, process, lid, FINAL_POLL_RECORDS)
                if n == 0 or lid is None or self.read_positions.get(process, 0) >= self.brokers[lid].high_watermark:
                    break
        hw = self.brokers[lid].high_watermark if lid is not None else None
        out = {"leader": lid, "high_watermark": hw, "readers": readers, "polls": polls}
        p = self.controller.partition
        if lid is None and not p.isr and not p.elr:
            # PartitionChangeBuilder.electLeader: no ISR or ELR member left (each lost its unflushed
            # tail to a crash) and unclean election disabled: the partition stays offline
            out["offline"] = "no eligible leader: ISR and ELR are empty"
        return out

    def _answer(self, sim: Sim, r: ProduceResult) -> None:
        process = next((p for p, x in self.pending.items() if x.value == r.value), None)
        if process is None:
            return
        p = self.pending.pop(process)
        if r.error == NONE:
            self.stats["ok"] += 1
            if sim.recorder is not None:
                sim.recorder.op(process, "ok", "send", KEY, [r.offset, r.value], sim.now, node=p.broker,
                                offset=r.offset)
            self.free_processes.append(process)
        else:
            self._info(sim, process, r.value, p.broker, r.error)

    def _settle(self, sim: Sim) -> None:
        """acks=-1 produces whose leader crashed or lost leadership before answering: unknown."""
        for process in sorted(self.pending):
            p = self.pending[process]
            br = self.brokers[p.broker]
            alive = p.broker not in sim.down and br.running and any(x.value == p.value for x in br.pending_produce)
            if not alive:
                del self.pending[process]
                self._info(sim, process, p.value, p.broker, "leader-lost")

    def _info(self, sim: Sim, process: int, value: Any, broker: int, why: str,
              offset: int | None = None) -> None:
        self.stats["info"] += 1
        if sim.recorder is not None:
            extra = {} if offset is None else {"offset": offset}
            sim.recorder.op(process, "info", "send", KEY, value, sim.now, node=broker, error=why, **extra)
        self.free_processes.append(self.next_process)
        self.next_process += 1

    def finish(self, sim: Sim) -> None:
        self._settle(sim)
        for process in sorted(self.pending):
            p = self.pending.pop(process)
            self._info(sim, process, p.value, p.broker, "run-ended")

    # -- faults ------------------------------------------------------------------------------
    def crash(self, sim: Sim, node_id: int) -> None:
        mq = self.mq
        if mq is not None and node_id in self.ids:
            # a broker loses power: nothing can reach it any more, and its own connections die with
            # it, except replica fetches it already sent: a dead machine sends no RST, so the
            # leader still reads and handles a FetchRequest that was on the wire (KIP-903's stale
            # fetch of a previous incarnation; the spec's UncleanShutdown may keep any message
            # the broker sent, LostFrom)
            sim.network.discard(lambda m: m.dest == node_id or (m.source == node_id and not isinstance(m, FetchRequest)))
        elif mq is not None and node_id in mq.nodes:
            # a controller loses power: the same, and an AlterPartition answer it already sent
            # still arrives (the spec's messages keep it: only DropMessage loses a message)
            sim.network.discard(lambda m: m.dest == node_id
                                or (m.source == node_id and not isinstance(m, AlterPartitionResponse)))
        else:
            sim.network.purge(node_id)  # its connections are reset
        if node_id == CONTROLLER:
            return
        if mq is not None:
            if node_id in mq.nodes:
                return  # a controller's state is frozen until it restarts (then its disk is crashed)
            self.world.broker_nodes[node_id].crash(sim.now)
        self.world.fs[node_id].crash(rng=sim.rng)
        sim.step_node(node_id, Trigger(Broker.unclean_shutdown))

    def connections_reset(self, sim: Sim, node_id: int) -> None:
        """:meth:`crash` already emptied the network of what the crash loses (the spec's
        UncleanShutdown takes those losses in its own step): purging again here removed, in a
        non-spec step, a fetch it had kept on the wire."""

    def restart(self, sim: Sim, node_id: int, disk_lost: bool) -> None:
        if node_id == CONTROLLER:
            sim.step_node(node_id, Trigger(Controller.failover))
            return
        mq = self.mq
        if mq is not None and node_id in mq.nodes:
            sim.step_node(node_id, Trigger(QuorumNode.restart))
            sim.run_due(node_id)
            return
        br = self.brokers[node_id]
        if br.running:  # the broker stopped cleanly meanwhile? (not for crashes: they stop it)
            return
        if disk_lost:
            self.world.fs[node_id].lose_disk(br.root)
        if mq is not None:
            # the broker registers first; it starts when its registration commits
            sim.step_node(node_id, StartBroker(disk_lost))
            return
        sim.step_node(node_id, Trigger(Broker.restart_broker_with_disk_loss if disk_lost else Broker.restart_broker))
        sim.run_due(node_id)

    def can_lose_disk(self, sim: Sim, node_id: int) -> bool:
        return node_id != CONTROLLER and (self.mq is None or node_id not in self.mq.nodes)

    def resign(self, sim: Sim) -> None:
        """Controlled shutdown of a running broker; it stops once it leads nothing and comes back
        (clean restart) a little later."""
        up = [b for b in self.ids if b not in sim.down and self.brokers[b].running and not self.brokers[b].want_shutdown]
        if not up:
            return
        b = sim.rng.choice(up)
        sim.count("controlled-shutdown")
        sim.step_node(b, Trigger(Broker.request_shutdown))
        sim.run_due(b)
        sim.reschedule(b)

    # -- targeted faults (Jepsen's nemeses targeting ``:primaries``): the victim is the partition
    # leader the committed metadata names, if it is a running broker (no leader: no strike)
    def nemeses(self) -> Mapping[str, Nemesis]:
        return {
            "kill-leader": Nemesis(self._kill_leader, "crash the partition leader (power loss: its unflushed "
                                                      "tail is lost), down 0.2-3 s"),
            "isolate-leader": Nemesis(self._isolate_leader,
                                      "cut the partition leader off from every other node for 0.3-2 s"),
            "isolate-followers": Nemesis(self._isolate_followers,
                                         "cut the partition leader off from the other brokers (not from the "
                                         "controllers) for 0.7-3 s: the ISR shrinks to the leader"),
            "isolate-follower": Nemesis(self._isolate_follower, "cut one follower off from the partition leader "
                                                                "only for 0.7-3 s: it leaves the ISR"),
            "isr-join-race": Nemesis(self._arm_isr_join_race,
                                     "arm; the next time the partition leader asks to add a replica to the ISR, "
                                     "cut that replica off from it for 0.7-3 s (the fetch answer that let it join "
                                     "is lost), and once the controller commits the larger ISR, cut the leader off "
                                     "from every node for 1-3 s (it is fenced and the new member may be elected): "
                                     "KAFKA-7128's window"),
            "isolate-on-isr-shrink": Nemesis(self._arm_isolate_on_isr_shrink,
                                             "arm; the next time the partition leader applies a committed ISR "
                                             "shrink (its HW may jump and acknowledge waiting produces), cut it "
                                             "off from every node for 1-3 s before any follower learns that HW"),
            "stale-fetch": Nemesis(self._stale_fetch,
                                   "a follower's fetch on the wire to the partition leader is held back; the "
                                   "follower loses its disk, restarts empty at once and is cut off from the "
                                   "leader for 1-3 s; the held fetch of its previous incarnation arrives just "
                                   "after the cut heals (KIP-903)"),
        }

    def _target(self, sim: Sim) -> int | None:
        """The partition leader of the committed metadata, if it is a running broker."""
        lid = self.controller.partition.leader
        if lid not in self.ids or lid in sim.down or not self.brokers[lid].running:
            return None
        return lid

    def _kill_leader(self, sim: Sim) -> None:
        lid = self._target(sim)
        if lid is not None:
            sim.count("kill-leader")
            sim.crash(lid, sim.rng.randint(200, 3000))

    def _isolate_leader(self, sim: Sim) -> None:
        lid = self._target(sim)
        if lid is not None:
            sim.count("isolate-leader")
            sim.isolate(lid, self.world.node_ids(), sim.rng.randint(300, 2000))

    def _isolate_followers(self, sim: Sim) -> None:
        lid = self._target(sim)
        if lid is not None:
            sim.count("isolate-followers")
            sim.isolate(lid, self.ids, sim.rng.randint(700, 3000))

    def _isolate_follower(self, sim: Sim) -> None:
        lid = self._target(sim)
        if lid is not None:
            sim.count("isolate-follower")
            sim.isolate(lid, [sim.rng.choice([b for b in self.ids if b != lid])], sim.rng.randint(700, 3000))

    def _arm_isr_join_race(self, sim: Sim) -> None:
        """It strikes at the next expansion (``_isr_join_race``, from ``observe``)."""
        self._race_armed = self._race_watch is None

    def _arm_isolate_on_isr_shrink(self, sim: Sim) -> None:
        """It strikes at the next committed shrink (``_isolate_on_isr_shrink``, from ``observe``)."""
        self._shrink_armed = True

    def _stale_fetch(self, sim: Sim) -> None:
        """The ``stale-fetch`` nemesis: a fetch of a running follower on its way to the leader stays
        on the wire (``Network.defer``) while its sender loses its disk and is cut off from the
        leader; it arrives a few ms after the cut heals, from a broker epoch that is no more."""
        lid = self._target(sim)
        if lid is None:
            return
        pending = sim.network.pending
        held = sorted(k for k, m in pending.items() if isinstance(m, FetchRequest) and m.dest == lid
                      and m.source in self.ids and m.source not in sim.down and self.brokers[m.source].running
                      and k not in self._held)
        if not held:
            return
        sim.count("stale-fetch")
        mid = sim.rng.choice(held)
        f = pending[mid].source
        ms = sim.rng.randint(1000, 3000)
        self._held.add(sim.network.defer(mid, sim.now + ms + sim.rng.randint(1, 5)))
        sim.isolate(f, [lid], ms)
        sim.lose_disk(f)

    # -- checking ----------------------------------------------------------------------------
    def project(self, sim: Sim) -> dict[str, Any]:
        return self.world.project(sim.network.in_flight())

    def check(self, sim: Sim) -> list[Violation]:
        self._settle(sim)
        return self.world.violations()

    def describe(self, sim: Sim) -> str:
        lines = [self.controller.describe()] + [self.brokers[b].describe() for b in self.ids]
        if self.mq is not None:
            lines += [("DOWN " if i in sim.down else "") + n.describe() for i, n in self.mq.nodes.items()]
        if sim.network.blocked:
            lines.append(f"blocked links: {sorted(sim.network.blocked)}")
        lines.append(f"acked: {len(self.world.ghost.acked)} records")
        return "\n".join(lines)

    def summary(self, sim: Sim) -> dict[str, Any]:
        p = self.controller.partition
        return {
            "brokers": len(self.ids),
            "leader_changes": self.leader_changes,
            "leader_epoch": p.leaderEpoch,
            "committed_offset": max((b.high_watermark for b in self.brokers.values()), default=0),
            "acked": len(self.world.ghost.acked),
            "metadata_records": len(self.controller.records),
            "clients": dict(self.stats),
            **({"metadata_quorum": self.mq.summary()} if self.mq is not None else {}),
        }

    def logs(self, sim: Sim, kind: str) -> dict[str, tuple[Any, str]]:
        """Every controller's ``__cluster_metadata-0`` directory (the active one's and the
        standbys'), as ``controller-<id>/__cluster_metadata-0``."""
        if self.mq is None or kind != "metadata":
            return {}
        return {f"controller-{i}/{METADATA_DIR}": (n.fs, n.qnode.directory) for i, n in self.mq.nodes.items()}


def make(brokers: int, variant: str | None) -> ReplicationPlugin:
    """The plug-in ``kraft simulate --protocol replication --voters N --variant V`` runs (N brokers)."""
    return ReplicationPlugin(brokers, ReplicationConfig().with_variant(variant))
