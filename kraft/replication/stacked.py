"""The metadata quorum under the replication simulator: three KRaft controllers and the brokers'
metadata fetchers, stacked for real (DESIGN.md: "in the simulator they run stacked").  The
world that holds them with the brokers is ``kraft.replication.world.StackedWorld``.

Controllers are the voters ``CONTROLLER_IDS`` = 3000, 3001, 3002 (Kafka's test kit numbers
controllers from 3000, ``TestKitNodes``), so they never clash with broker ids 1..N.  Each is a
``ControllerNode``: a ``kraft.quorum.QuorumNode`` (Raft as KRaft does it, log batches through
``kraft.log``) plus a ``Controller`` state machine in quorum mode.

* The active controller is the quorum leader once its own committed log reaches its epoch start
  (KafkaRaftClient fires ``handleLeaderChange`` to the leader's listener only after it read up to
  the epoch start offset; ``QuorumController.claim``).  It turns requests and session timeouts into
  records (``Controller``), one operation = one batch of Kafka's binary metadata records
  (``kraft.controller.codec``), appended with ``ClientAppend`` to ``__cluster_metadata``.
* Only committed entries are applied: every controller (active or standby) replays the entries its
  quorum node hands out in ``Ready.committed`` (``replay_committed``).  Losing leadership drops the
  uncommitted in-memory state (``revert``; ``QuorumController.renounce``): records the old leader
  appended but did not commit are lost as in Kafka unless the next leader commits them, and
  requests waiting on them get no answer (the broker's own timers / retries apply).
* An operation's effects become visible when its batch commits (as ``QuorumController`` completes a
  write event's future only when its offset is committed): its spec step (FenceBroker,
  UnfenceBroker, ControlledShutdown, HandleAlterPartitionRequest) is recorded then, and the
  AlterPartition answer leaves then, from the controller that appended it if it is still the leader
  of that epoch (else it is lost).  An AlterPartition rejected without records is answered once
  everything the controller appended before has committed (Kafka: ``deferredEventQueue``'s highest
  pending offset).  A committed registration starts its broker in the same step (the broker's
  RestartBroker: the registration response and the broker's start are one step here).
* Brokers are observers of the quorum: ``MetadataFetcher`` sends the quorum's own ``FetchRequest``
  to the controller it believes leads (an observer that does not know the leader tries the voters in
  turn: our quorum's fenced answer carries the epoch, not Kafka's ``currentLeader``), keeps the
  fetched entries, and turns those below the high watermark into the broker's metadata records, the
  list ``kraft.replication.broker.Broker`` replays.  Network faults apply to every one of these
  messages.  The broker sends its heartbeats and AlterPartition requests to that same controller.

Metadata offsets are the quorum log's: every node is formatted with the bootstrap (the topic, the
brokers' first registrations and the partition) as one batch in epoch 0 at offsets 0.., and one
operation of N records is one batch at N offsets, fetched, truncated, committed and applied
whole.  A broker epoch is the offset of its RegisterBrokerRecord, as in Kafka; LeaderChange
records take offsets too, so the spec's numbering of the same record (control records left out)
is ``MetadataQuorum.spec_position``, which the projection uses (docs/replication.md, "Metadata
quorum").
"""

from __future__ import annotations

import bisect
import random
from typing import Any, Callable, Iterable

import attrs

from kraft.controller.codec import MetadataDecodeError, decode_batch, encode_batch
from kraft.controller.controller import SHUTDOWN_NOW, Controller
from kraft.controller.records import RegisterBrokerRecord
from kraft.core.invariants import Violation
from kraft.core.node import function_of
from kraft.core.step import TICK, Ready, SpecStep, Tick, Trigger
from kraft.log import MemoryFS
from kraft.log.fs import join
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.invariants import Monitor
from kraft.quorum.messages import (
    FETCH_DIVERGING,
    FETCH_FENCED,
    FETCH_OK,
    LEADER_CHANGE,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    Entry,
    FetchRequest,
    FetchResponse,
    VoteRequest,
    VoteResponse,
    batch_boundary,
    whole_batches,
)
from kraft.quorum.node import QuorumNode
from kraft.quorum.storage import QuorumStorage
from kraft.quorum.projection import project_cluster
from kraft.replication.broker import CLEAN_SHUTDOWN_FILE, Broker
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import (
    CONTROLLER,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from kraft.replication.protocol import PROTOCOL, REGISTER_STOPPED

CONTROLLER_IDS = (3000, 3001, 3002)
METADATA_DIR = "__cluster_metadata-0"   # the log directory of Kafka's metadata topic partition
STOP = -1   # in MetadataQuorum.starts: (broker, STOP) = the broker's fencing committed, it stops
QUORUM_MESSAGES = (VoteRequest, VoteResponse, BeginQuorumEpochRequest, EndQuorumEpochRequest, FetchRequest,
                   FetchResponse)
TO_CONTROLLER = (AlterPartitionRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest)


@attrs.define
class _Op:
    """One controller operation waiting for its batch to commit."""

    node: int                  # the controller that appended it
    epoch: int                 # its quorum epoch then
    steps: tuple[SpecStep, ...]
    messages: tuple[Any, ...]  # answers to send once committed
    start: tuple[int, int] | None = None  # (broker, incarnation) whose registration this is
    request: Any = None        # the AlterPartitionRequest it answers (still "in flight" for the spec)
    stop: int | None = None    # the broker told to shut down (its fencing: handleBrokerShutdown)


class ControllerNode:
    """One KRaft controller: quorum voter + metadata state machine (``step(input, now) -> Ready``).

    A composite of two nodes, so it dispatches itself: quorum messages and the quorum's timers go to
    the ``QuorumNode``, controller requests and session timeouts to the ``Controller`` (each
    dispatching through ``kraft.core.node.Node.step``), and this class joins their effects."""

    def __init__(self, mq: "MetadataQuorum", node_id: int, rng: random.Random, now: int) -> None:
        self.mq = mq
        self.id = node_id
        self.fs = MemoryFS()
        directory = f"/kraft/controller-{node_id}/{METADATA_DIR}"
        mq.format(self.fs, directory)
        self.qnode = QuorumNode(node_id, mq.ids, mq.qconfig, self.fs, rng=rng, now_ms=now, directory=directory)
        self._fresh(now)

    def _fresh(self, now: int) -> None:
        """The controller process starts: the bootstrap checkpoint, nothing replayed from the log."""
        self.controller = Controller(self.mq.brokers, self.mq.config, now=now, quorum=True)
        self.applied_entries = 0            # quorum entries (offsets) committed this incarnation
        self.partial: list[Entry] = []      # committed entries of a batch not yet committed whole
        self.pending: list[tuple[int, int]] = []   # (epoch, last offset) of own uncommitted batches
        self.active = False
        self.active_epoch = -1

    # ------------------------------------------------------------------ the step surface
    def step(self, inp: Any, now: int) -> Ready:
        if isinstance(inp, Tick):
            return self._tick(now)
        if isinstance(inp, QUORUM_MESSAGES):
            return self._absorb(self.qnode.step(inp, now), now)
        if isinstance(inp, Trigger) and function_of(inp.handler) is QuorumNode.restart:
            return self._restart(inp, now)
        if isinstance(inp, TO_CONTROLLER):
            return self._run(inp, now) if self.active else self._not_controller(inp)
        raise TypeError(f"controller {self.id}: unexpected input {inp!r}")

    def _restart(self, inp: Trigger, now: int) -> Ready:
        """The controller process restarts after a crash: unflushed log bytes are gone, the state
        machine starts from the bootstrap and replays what the quorum hands out again."""
        self.fs.crash()
        r = self.qnode.step(inp, now)
        self._fresh(now)
        return Ready(writes=r.writes, note=SpecStep("ControllerRestart", self.id, {}))

    def _not_controller(self, inp: Any) -> Ready:
        """Not the active controller: Kafka answers NOT_CONTROLLER and the sender's
        NodeToControllerChannelManager retries at the active one; here it is dropped (an
        AlterPartition request stays in flight for the spec while the broker's channel holds it,
        BrokerNode.held; one no channel holds any more and of which no other copy is on its way is
        lost for the spec here: DropMessage)."""
        drops = self.mq.lost_from_flight([inp]) if isinstance(inp, AlterPartitionRequest) else ()
        return Ready(steps=drops, note=SpecStep("NotController", self.id, {"m": inp}))

    def _tick(self, now: int) -> Ready:
        """Every quorum timer due now, then the controller's session timeouts (one Ready)."""
        out = Ready()
        for _ in range(64):
            r = self.qnode.step(TICK, now)
            if not r.steps:
                break
            out = out.then(self._absorb(r, now))
        for _ in range(16):
            if not self.active:
                break
            r = self._run(TICK, now)
            if not r:
                break
            out = out.then(r)
        return out

    def next_deadline(self) -> int | None:
        times = [self.qnode.next_deadline()]
        if self.active:
            times.append(self.controller.next_deadline())
        live = [t for t in times if t is not None]
        return min(live) if live else None

    # ------------------------------------------------------------------ the controller
    def _run(self, inp: Any, now: int) -> Ready:
        """Let the active controller take ``inp``; its records become one quorum batch."""
        self.controller.write_offset = self.qnode.storage.end_offset
        r = self.controller.step(inp, now)
        batch = self.controller.take_batch()
        start = (inp.source, inp.incarnationId) if isinstance(inp, BrokerRegistrationRequest) else None
        request = inp if isinstance(inp, AlterPartitionRequest) else None
        msgs = tuple(attrs.evolve(m, source=self.id) if isinstance(m, AlterPartitionResponse) else m
                     for m in r.messages)
        if batch:
            a = self.qnode.step(Trigger(QuorumNode.client_append, {"v": encode_batch(batch)}), now)
            offset = a.reply   # of the batch's last record
            if offset != self.controller.write_offset - 1:
                raise AssertionError(f"controller {self.id}: batch ends at {offset}, its records were "
                                     f"numbered up to {self.controller.write_offset - 1}")
            key = (self.qnode.current_epoch, offset)
            self.pending.append(key)
            stop = inp.source if r.note is not None and r.note.action == SHUTDOWN_NOW else None
            self.mq.register(key, _Op(self.id, key[0], r.steps, msgs, start, request, stop))
            what = r.steps[0].action if r.steps else (r.note.action if r.note else "?")
            return Ready(writes=a.writes, synced=a.synced, messages=a.messages,
                         note=SpecStep("MetadataAppend", self.id, {"offset": offset - len(batch) + 1,
                                                                 "records": len(batch), "for": what}))
        if r.steps and self.pending:
            # answered without records, after what this controller appended before commits
            self.mq.register(self.pending[-1], _Op(self.id, self.qnode.current_epoch, r.steps, msgs,
                                                   None, request))
            return Ready(note=SpecStep("AnswerDeferred", self.id, {"until": self.pending[-1][1]}))
        if r.note is not None and r.note.action == SHUTDOWN_NOW:
            # SHUTDOWN_NOW for a broker that was already fenced: nothing to commit, it stops now
            return Ready(messages=msgs, note=r.note).then(self.mq.broker_half(inp.source, STOP, now))
        return Ready(steps=r.steps, messages=msgs, note=r.note)

    # ------------------------------------------------------------------ the quorum's output
    def _absorb(self, r: Ready, now: int) -> Ready:
        """A quorum step's Ready without its KRaft spec steps (not PartitionReplication actions);
        committed entries replayed; leadership claimed or renounced; committed operations' spec
        steps and answers added."""
        out = Ready(messages=r.messages, writes=r.writes, synced=r.synced)
        for off, entry in r.committed:
            out = out.then(self._commit(off, entry, now))
        q = self.qnode
        if self.active and not (q.role is Role.LEADER and q.current_epoch == self.active_epoch):
            self.controller.revert()          # renounce
            self.pending = []
            self.active = False
        if not self.active and q.role is Role.LEADER and self.applied_entries > q.epoch_start_offset:
            self.active = True                # claim
            self.active_epoch = q.current_epoch
            self.controller.revert()
            self.controller.failover(now)
            self.mq.stats["active_controller_changes"] += 1
            self.mq.active_log.append((now, self.id, q.current_epoch))
        return out

    def _commit(self, off: int, entry: Entry, now: int) -> Ready:
        """Quorum entry ``off`` is committed; a batch takes effect when its last record is (a
        controller applies whole batches only: RaftClient.Listener.handleCommit)."""
        if off != self.applied_entries:
            raise AssertionError(f"controller {self.id}: commit of offset {off}, expected {self.applied_entries}")
        self.applied_entries += 1
        self.partial.append(entry)
        if not entry.last_in_batch:
            return Ready()
        batch, self.partial = self.partial, []
        first = off - len(batch) + 1
        committed: list[tuple[int, Any]] = []
        if first >= self.mq.bootstrap_end and entry.value != LEADER_CHANGE:
            key = (entry.epoch, off)
            if self.pending and self.pending[0] == key:
                self.pending.pop(0)
            elif self.pending:
                self.controller.revert()
                self.pending = []
            records = decode_batch([e.value for e in batch])
            start = len(self.controller.records)
            self.controller.replay_committed(records, list(range(first, off + 1)))
            committed = list(enumerate(records, start))
        effects = self.mq.on_commit(self, first, batch, now)
        return Ready(committed=tuple(committed)).then(effects)

    def describe(self) -> str:
        role = "ACTIVE " if self.active else ""
        c = self.controller
        return (f"controller {self.id}: {role}{self.qnode.describe()}; replayed {len(c.records)} records, "
                f"{c.uncommitted} uncommitted")


class _Visible:
    """The metadata records a ``Broker`` replays: the fetched committed records, or none while the
    broker (re)starts and has not caught up to its own registration (Kafka's BrokerServer applies
    metadata to its partitions only after the initial catch-up, ``lifecycleManager
    .initialCatchUpFuture``; without it a broker that lost its disk replays the bootstrap and leads
    in epoch 0 again)."""

    def __init__(self, fetcher: "MetadataFetcher") -> None:
        self.f = fetcher

    def __len__(self) -> int:
        return 0 if self.f.hold is not None else len(self.f.records)

    def __getitem__(self, i: int) -> Any:
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.f.records[i]


class MetadataFetcher:
    """A broker as an observer of the metadata quorum (KafkaRaftClient without a vote): formatted
    with the bootstrap batch, it fetches whole batches and applies committed ones whole."""

    def __init__(self, broker_id: int, voters: tuple[int, ...], bootstrap: Iterable[Any],
                 bootstrap_entries: Iterable[Entry], qconfig: QuorumConfig, now: int) -> None:
        self.id = broker_id
        self.voters = voters
        self.qconfig = qconfig
        self.bootstrap = tuple(bootstrap)
        self.bootstrap_entries = tuple(bootstrap_entries)
        self.records: list[Any] = list(self.bootstrap)   # fetched committed records
        self.offsets: list[int] = list(range(len(self.bootstrap)))   # their log offsets
        self.hold: int | None = None   # a start's incarnation: records hidden until it is registered
        self.visible = _Visible(self)  # what the broker replays
        self._clear(now)

    def _clear(self, now: int) -> None:
        self.log: list[Entry] = list(self.bootstrap_entries)
        self.high_watermark = len(self.log)
        self.applied = len(self.log)   # entries applied: always the end of a batch
        self.epoch = 0
        self.leader: int | None = None
        self.target = 0
        self.next_fetch_at = now
        self.in_flight_until: int | None = None

    def lose_disk(self, now: int) -> None:
        """The broker's metadata log is gone: back to the bootstrap (the lists the broker holds
        stay the same objects)."""
        del self.records[len(self.bootstrap):]
        del self.offsets[len(self.bootstrap):]
        self._clear(now)

    def crash(self, now: int) -> None:
        """Unflushed fetched entries above the high watermark are not kept."""
        del self.log[self.applied:]
        self.in_flight_until = None
        self.next_fetch_at = now
        self.leader = None

    def controller(self) -> int:
        """Where the broker sends controller requests: the leader it fetches from, else a guess."""
        return self.leader if self.leader is not None else self.voters[self.target % len(self.voters)]

    def due(self, now: int) -> bool:
        if self.in_flight_until is not None:
            if now < self.in_flight_until:
                return False
            self._next_target()      # request.timeout.ms: try another controller
        return now >= self.next_fetch_at

    def next_deadline(self) -> int:
        return self.in_flight_until if self.in_flight_until is not None else self.next_fetch_at

    def _next_target(self) -> None:
        self.leader = None
        self.target += 1
        self.in_flight_until = None

    def fetch(self, now: int) -> FetchRequest:
        dest = self.controller()
        self.in_flight_until = now + self.qconfig.request_timeout_ms
        last = self.log[-1].epoch if self.log else 0
        return FetchRequest(self.id, dest, self.epoch, len(self.log), last)

    def handle(self, m: FetchResponse, now: int) -> tuple[bool, str | None]:
        """Take a fetch response; returns (new committed records?, a problem to report or None)."""
        if m.source != self.controller():
            return False, None       # an answer from a controller we gave up on
        self.in_flight_until = None
        if m.result == FETCH_FENCED or m.epoch != self.epoch:
            if m.epoch > self.epoch:
                self.epoch = m.epoch
            self._next_target()
            self.next_fetch_at = now + self.qconfig.fetch_interval_ms
            return False, None
        if m.fetchOffset != len(self.log) or m.lastFetchedEpoch != (self.log[-1].epoch if self.log else 0):
            return False, None       # stale: not an answer to a fetch from this log (kraft.quorum.messages)
        self.leader = m.source
        if m.result == FETCH_DIVERGING:
            return False, self._diverged(m, now)
        if m.result != FETCH_OK:
            return False, None
        self.log.extend(whole_batches(m.entries))
        self.high_watermark = max(self.high_watermark, min(m.highWatermark, len(self.log)))
        self.next_fetch_at = now if m.entries else now + self.qconfig.fetch_interval_ms
        return self._apply()

    def _diverged(self, m: FetchResponse, now: int) -> str | None:
        """Truncate to where the leader's log and this one agree, never inside a batch."""
        end = 0
        for i in range(len(self.log) - 1, -1, -1):
            if self.log[i].epoch <= m.divergingEpoch:
                end = i + 1
                break
        target = batch_boundary(self.log, min(m.divergingEndOffset, end))
        problem = None
        if target < self.applied:
            problem = f"broker {self.id}: the leader truncates committed metadata entries {target}..{self.applied}"
            target = self.applied
        del self.log[target:]
        self.next_fetch_at = now
        return problem

    def _apply(self) -> tuple[bool, str | None]:
        """Apply every whole batch below the high watermark (MetadataLoader.handleCommit)."""
        grew = False
        problem = None
        while True:
            end = self.applied
            while end < self.high_watermark and not self.log[end].last_in_batch:
                end += 1
            if end >= self.high_watermark:
                return grew, problem
            batch, first = self.log[self.applied:end + 1], self.applied
            self.applied = end + 1
            if batch[0].value == LEADER_CHANGE:
                continue
            try:
                recs = decode_batch([e.value for e in batch])
            except MetadataDecodeError as exc:
                problem = f"broker {self.id}: {exc}"
                continue
            self.records.extend(recs)
            self.offsets.extend(range(first, first + len(recs)))
            if self.hold is not None and any(isinstance(r, RegisterBrokerRecord) and r.brokerId == self.id
                                             and r.incarnationId == self.hold for r in recs):
                self.hold = None    # caught up to its own registration
            grew = True


class MetadataQuorum:
    """The controllers, the ghost of the committed metadata log (``view``: a ``Controller`` that
    only replays what the quorum committed, the spec's ``metadataLog`` and image), and the
    operations waiting for their batch to commit."""

    def __init__(self, brokers: tuple[int, ...], config: ReplicationConfig, rng: random.Random, now: int,
                 qconfig: QuorumConfig | None = None, ids: tuple[int, ...] = CONTROLLER_IDS) -> None:
        if set(ids) & set(brokers):
            raise ValueError(f"controller ids {ids} clash with broker ids {brokers}")
        self.ids = tuple(ids)
        self.brokers = tuple(brokers)
        self.config = config
        self.qconfig = qconfig or QuorumConfig()
        self.view = Controller(brokers, config, now=now, quorum=True)
        # the bootstrap every node is formatted with: one batch in epoch 0 at offsets 0.. (the
        # broker epochs 1..N it registers are those offsets)
        values = encode_batch(list(self.view.bootstrap))
        self.bootstrap_entries = tuple(Entry(0, v, i == len(values) - 1) for i, v in enumerate(values))
        self.bootstrap_end = len(values)
        self.entries: list[Entry] = []           # committed quorum entries, offsets from 0
        self.ops: dict[tuple[int, int], list[_Op]] = {}
        self.problems: list[Violation] = []
        # the brokers' controller channels (BrokerNode registers itself), and the driver's test
        # whether a copy of an AlterPartition request is on its network: together with the
        # requests awaiting a commit, what keeps a request in the spec's ``messages``
        self.channels: dict[int, "BrokerNode"] = {}
        self.on_network: Callable[[Any], bool] = lambda key: False
        self.monitor = Monitor()
        self.active_log: list[tuple[int, int, int]] = []   # (time, controller, epoch) of each claim
        self.stats = {"active_controller_changes": 0, "committed_batches": 0, "committed_records": 0,
                      "lost_operations": 0, "lost_answers": 0}
        self.nodes = {i: ControllerNode(self, i, random.Random(rng.randrange(2**32)), now) for i in self.ids}

    def fetcher(self, broker: int, now: int) -> MetadataFetcher:
        return MetadataFetcher(broker, self.ids, self.view.bootstrap, self.bootstrap_entries, self.qconfig, now)

    def format(self, fs: Any, directory: str) -> None:
        """Write the bootstrap batch into a new controller's metadata log (``kafka-storage
        format``; Kafka keeps it in a bootstrap checkpoint that the first active controller
        appends to the log, ``ActivationRecordsGenerator``)."""
        storage = QuorumStorage.open(fs, directory)
        storage.append_value(0, tuple(e.value for e in self.bootstrap_entries))
        storage.flush()

    def spec_position(self, offset: int) -> int:
        """The spec's number of the committed metadata record at log ``offset``: its position in
        the committed metadata records, TopicRecord at 0 (the spec numbers from 1 without it).  A
        broker epoch is such an offset; -1 (none) stays -1."""
        if offset < 0:
            return offset
        offsets = self.view.offsets
        i = bisect.bisect_left(offsets, offset)
        if i == len(offsets) or offsets[i] != offset:
            raise AssertionError(f"no committed metadata record at offset {offset}")
        return i

    # ------------------------------------------------------------------ operations and commits
    def register(self, key: tuple[int, int], op: _Op) -> None:
        self.ops.setdefault(key, []).append(op)

    def awaiting_requests(self) -> list[Any]:
        """AlterPartition requests taken by a controller whose answer waits for a commit (the spec
        still has them in ``messages``)."""
        return [op.request for key in sorted(self.ops) for op in self.ops[key] if op.request is not None]

    def alter_in_flight(self, m: AlterPartitionRequest) -> bool:
        """Is AlterPartition request ``m`` (whatever controller it went to) in the spec's
        ``messages``: held by its broker's channel, taken by a controller and awaiting a commit,
        or a copy on the network?  The spec's messages form a set: any one copy keeps it there."""
        key = attrs.evolve(m, dest=CONTROLLER)
        channel = self.channels.get(m.source)
        return (channel is not None and any(attrs.evolve(h, dest=CONTROLLER) == key for h in channel.held())) \
            or any(attrs.evolve(r, dest=CONTROLLER) == key for r in self.awaiting_requests()) \
            or self.on_network(key)

    def lost_from_flight(self, requests: Iterable[AlterPartitionRequest]) -> tuple[SpecStep, ...]:
        """The spec's ``DropMessage`` of each request that left every place keeping it in flight
        without a controller handling it (a channel gave it up, its operation was lost)."""
        out: list[SpecStep] = []
        for m in requests:
            if not self.alter_in_flight(m) and all(s.args["m"] != m for s in out):
                out.append(SpecStep(PROTOCOL.drop_message, None, {"m": attrs.evolve(m, dest=CONTROLLER)}))
        return tuple(out)

    def on_commit(self, node: ControllerNode, first: int, batch: list[Entry], now: int) -> Ready:
        """Controller ``node`` learnt that the batch at ``first`` is committed (whole).  The first
        time any controller does, the metadata log grows and the operations the batch completes
        take effect."""
        end = first + len(batch)
        if first < len(self.entries):
            if self.entries[first:end] != batch:
                self.problems.append(Violation(
                    "MetadataLogAgreement",
                    f"controller {node.id} commits {batch} at offsets {first}..{end - 1}, "
                    f"{self.entries[first:end]} was committed there"))
            return Ready()
        if first > len(self.entries):
            self.problems.append(Violation("MetadataLogAgreement",
                                           f"controller {node.id} commits offset {first} before {len(self.entries)}"))
            return Ready()
        self.entries += batch
        off, last = end - 1, batch[-1]
        if first >= self.bootstrap_end and last.value != LEADER_CHANGE:
            records = decode_batch([e.value for e in batch])
            self.view.replay_committed(records, list(range(first, end)))
            self.stats["committed_batches"] += 1
            self.stats["committed_records"] += len(records)
        # operations appended at this offset in another epoch were truncated: lost; an
        # AlterPartition request no channel holds any more is lost for the spec with them (the
        # drops come first: a copy handled in this step is then consumed by the handling)
        lost: list[Any] = []
        for key in [k for k in self.ops if k[1] <= off and k != (last.epoch, off)]:
            ops = self.ops.pop(key)
            self.stats["lost_operations"] += len(ops)
            lost += [op.request for op in ops if op.request is not None]
        done = self.ops.pop((last.epoch, off), [])
        handled = {attrs.evolve(op.request, dest=CONTROLLER) for op in done if op.request is not None}
        out = Ready(steps=self.lost_from_flight(m for m in lost if attrs.evolve(m, dest=CONTROLLER) not in handled))
        for op in done:
            msgs: tuple[Any, ...] = ()
            if op.messages:
                if self.nodes[op.node] is node and node.active and node.active_epoch == op.epoch:
                    msgs = op.messages
                else:
                    self.stats["lost_answers"] += len(op.messages)
            out = out.then(Ready(steps=op.steps, messages=msgs))
            # the broker half of a composite spec action, in commit order
            if op.start is not None:
                out = out.then(self.broker_half(op.start[0], op.start[1], now))
            if op.stop is not None:
                out = out.then(self.broker_half(op.stop, STOP, now))
        return out

    def broker_half(self, b: int, incarnation: int, now: int) -> Ready:
        """The broker half of a controller operation that just committed (joined to the committing
        controller's Ready): a registration (``incarnation``) starts its broker (RestartBroker),
        a fencing after a controlled shutdown (``STOP``) stops it (CleanShutdown)."""
        channel = self.channels.get(b)
        if channel is None:
            return Ready()
        return channel.stop(now) if incarnation == STOP else channel.start(incarnation, now)

    # ------------------------------------------------------------------ checking and views
    def check(self, restarted: Iterable[Any], brokers: dict[int, MetadataFetcher]) -> list[Violation]:
        """KRaft's invariants on the three controllers, committed-log agreement, and every broker's
        metadata a prefix of the committed log (brokers never see uncommitted records)."""
        out = list(self.problems)
        self.problems = []
        state = project_cluster({i: n.qnode for i, n in self.nodes.items()}, None, tuple_logs=True)
        out += self.monitor.observe(state, [n for n in restarted if n in self.nodes])
        committed = self.view.records
        for b, f in brokers.items():
            n = len(f.records)
            if n > len(committed) or f.records != committed[:n]:
                out.append(Violation("BrokerMetadataCommitted",
                                     f"broker {b} has {n} metadata records that are not a prefix of the "
                                     f"{len(committed)} committed"))
        for i, node in self.nodes.items():
            c = node.controller
            n = len(c.records)
            if c.records != committed[:n]:
                out.append(Violation("ControllerReplaysCommitted",
                                     f"controller {i} replayed records that differ from the committed log"))
        return out + self._whole_batches(brokers)

    def _whole_batches(self, brokers: dict[int, MetadataFetcher]) -> list[Violation]:
        """``MetadataWholeBatches``: every metadata log, a controller's or a broker's, ends at the
        end of a batch, and what is committed and applied ends at one too (a batch is appended,
        replicated, committed and applied whole: scheduleAtomicAppend)."""
        logs: list[tuple[str, list[Entry], int]] = []
        for i, node in self.nodes.items():
            entries = node.qnode.storage.entries
            logs.append((f"controller {i}", entries, node.qnode.high_watermark))
            logs.append((f"controller {i}", entries, node.controller.committed.last_offset + 1))
        for b, f in brokers.items():
            logs.append((f"broker {b}", f.log, f.applied))
        out = []
        for who, log, committed in logs:
            if batch_boundary(log, len(log)) != len(log):
                out.append(Violation("MetadataWholeBatches", f"{who}'s metadata log ends inside a batch "
                                     f"(at offset {len(log)})"))
            elif committed <= len(log) and batch_boundary(log, committed) != committed:
                out.append(Violation("MetadataWholeBatches", f"{who} commits or applies up to offset {committed}, "
                                     f"inside a batch"))
        return out

    def active(self) -> ControllerNode | None:
        act = [n for n in self.nodes.values() if n.active]
        return max(act, key=lambda n: n.active_epoch) if act else None

    def summary(self) -> dict[str, Any]:
        return {"controllers": list(self.ids), **self.stats,
                "quorum_epoch": max(n.qnode.current_epoch for n in self.nodes.values()),
                "committed_entries": len(self.entries), "metadata_records": len(self.view.records)}


@attrs.frozen
class StartBroker:
    """Input of a ``BrokerNode``: the broker process starts (after a crash, a clean stop or with a
    new disk) and registers with the active controller (BrokerLifecycleManager)."""

    disk_lost: bool = False


REGISTRATION_RETRY_MS = 1000
# an AlterPartition with no answer is sent again (to the controller the broker now believes
# active): Kafka's AlterPartitionManager keeps the item until it is answered (whatever the
# partition did meanwhile) and its NodeToControllerChannelManager re-sends after a disconnect, a
# timeout or NOT_CONTROLLER.  For the spec the request stays in flight all that time (``held``).
ALTER_PARTITION_RETRY_MS = 1000


class BrokerNode:
    """A broker as the simulator steps it under the metadata quorum: the replication ``Broker``,
    its ``MetadataFetcher`` and its registration with the active controller.

    A composite of the ``Broker`` (which dispatches through ``kraft.core.node.Node.step``) and the
    broker's two channels to the controllers (the metadata fetch, the registration and AlterPartition
    requests), so it dispatches itself: what is for a channel stays here, the rest goes to the
    ``Broker``, and the controller requests it sends are addressed to the controller it believes
    active."""

    def __init__(self, broker: Broker, fetcher: MetadataFetcher, mq: MetadataQuorum) -> None:
        self.broker = broker
        self.fetcher = fetcher
        self.mq = mq
        self.id = broker.id
        self.registering: BrokerRegistrationRequest | None = None
        # the start being registered follows a disk loss: kept until a registration commits (a
        # crash that cuts the registration short does not give the broker its disk back)
        self.register_disk_lost = False
        self.retry_at = 0
        self.incarnations = 0
        self.alters: list[AlterPartitionRequest] = []   # the channel: the request sent, not answered
        self.alter_retry_at = 0
        self._now = 0
        mq.channels[self.id] = self

    def step(self, inp: Any, now: int) -> Ready:
        self._now = now
        if isinstance(inp, FetchResponse):
            return self._fetched(inp, now)
        if isinstance(inp, StartBroker):
            return self._register(inp.disk_lost, now)
        if isinstance(inp, Tick):
            return self._tick(now)
        if isinstance(inp, AlterPartitionResponse) and self.broker.running:
            return self._answered(inp, now)
        return self._out(self.broker.step(inp, now))

    def _fetched(self, m: FetchResponse, now: int) -> Ready:
        """A metadata fetch answered (the quorum's FetchResponse)."""
        grew, problem = self.fetcher.handle(m, now)
        if problem is not None:
            self.mq.problems.append(Violation("BrokerMetadataCommitted", problem))
        return Ready()

    def _answered(self, m: AlterPartitionResponse, now: int) -> Ready:
        """The channel forgets the request this answers (Kafka's per-request callback); the spec's
        messages lose it now unless a copy is still on its way somewhere."""
        answered = [a for a in self.alters if a.partitionEpoch == m.requestPartitionEpoch
                    and frozenset(x.broker for x in a.newIsrWithEpochs) == m.requestIsr]
        self.alters = [a for a in self.alters if a not in answered]
        r = self._out(self.broker.step(m, now))
        drops = self.mq.lost_from_flight(answered)
        return attrs.evolve(r, steps=r.steps + drops) if drops else r

    def _tick(self, now: int) -> Ready:
        """The broker's own timer action if one is due; else the channels' retries, or a metadata
        fetch."""
        r = self.broker.step(TICK, now)
        if r.steps or r.note:
            return self._out(r)
        msgs: list[Any] = []
        if self.registering is not None and now >= self.retry_at:
            msgs.append(attrs.evolve(self.registering, dest=self.fetcher.controller()))
            self.retry_at = now + REGISTRATION_RETRY_MS
        if self.alters and not self.broker.running:
            self.alters = []   # the process stopped: its channel is gone
        if self.alters and not self._wanted(self.alters[0]):
            # the partition no longer waits for it (a metadata update reset it): the channel
            # gives up; unless a copy is still on its way, the spec's network loses it now
            drops = self._give_up()
            if drops:
                return Ready(steps=drops)
        if self.alters and now >= self.alter_retry_at:
            dest = self.fetcher.controller()
            self.alters = [attrs.evolve(a, dest=dest) for a in self.alters]
            self.alter_retry_at = now + ALTER_PARTITION_RETRY_MS
            return Ready(messages=tuple(self.alters),
                         note=SpecStep("AlterPartitionRetry", self.id, {"m": self.alters[0]}))
        if self.fetcher.due(now):
            msgs.append(self.fetcher.fetch(now))
        return Ready(messages=tuple(msgs))

    def _out(self, r: Ready) -> Ready:
        """Controller requests go to the controller the broker fetches metadata from."""
        if not any(isinstance(m, TO_CONTROLLER) for m in r.messages):
            return r
        dest = self.fetcher.controller()
        msgs = tuple(attrs.evolve(m, dest=dest) if isinstance(m, TO_CONTROLLER) else m for m in r.messages)
        for m in msgs:
            if isinstance(m, AlterPartitionRequest):
                # one in flight per partition: the newest replaces the one held (the same request
                # sent again stays in flight)
                old, self.alters = self.alters, [m]
                self.alter_retry_at = self._now + ALTER_PARTITION_RETRY_MS
                drops = self.mq.lost_from_flight(old)
                if drops:
                    r = attrs.evolve(r, steps=r.steps + drops)
        return attrs.evolve(r, messages=msgs)

    def _register(self, disk_lost: bool, now: int) -> Ready:
        b = self.broker
        if disk_lost:
            self.fetcher.lose_disk(now)
        previous = -1
        marker = join(b.root, CLEAN_SHUTDOWN_FILE)
        if b.fs.exists(marker):  # read now, deleted by the broker when it starts (Broker._start)
            previous = int(b.fs.read_bytes(marker).decode() or "-1")
        self.incarnations += 1
        self.registering = BrokerRegistrationRequest(self.id, previous, self.fetcher.controller(),
                                                     incarnationId=self.id * 1000 + self.incarnations)
        # a start whose registration a crash cut short may have lost the disk before: the spec
        # saw no start in between, so the start that registers is still one with an empty disk
        self.register_disk_lost = self.register_disk_lost or disk_lost
        self.retry_at = now + REGISTRATION_RETRY_MS
        self.fetcher.hold = self.registering.incarnationId
        return Ready(messages=(self.registering,),
                     note=SpecStep("BrokerRegistrationRequest", self.id,
                                   {"previousBrokerEpoch": previous, "incarnationId": self.registering.incarnationId}))

    def stop(self, now: int) -> Ready:
        """Its fencing after a controlled shutdown committed: the broker stops (CleanShutdown).  A
        broker that crashed meanwhile does not; the fencing is then the spec's FenceBroker of a
        stopped broker."""
        r = self.broker.step(Trigger(Broker.clean_shutdown), now)
        if r.steps:
            self.alters = []
            return r
        return Ready(steps=(SpecStep(PROTOCOL.spec_name(Controller.fence_broker), CONTROLLER, {"b": self.id}),))

    def start(self, incarnation: int, now: int) -> Ready:
        """The registration of this start committed: the broker starts (RestartBroker /
        RestartBrokerWithDiskLoss), its own registration message dropped (already registered)."""
        if self.registering is None or self.registering.incarnationId != incarnation or self.broker.running:
            if not self.broker.running:
                # the broker crashed after sending this registration (and may be registering
                # again): it is registered, stopped and fenced (the spec's RegisterStopped)
                return Ready(steps=(SpecStep(REGISTER_STOPPED, CONTROLLER, {"b": self.id}),))
            return Ready()
        handler = Broker.restart_broker_with_disk_loss if self.register_disk_lost else Broker.restart_broker
        self.registering = None
        self.register_disk_lost = False
        r = self.broker.step(Trigger(handler), now)
        return attrs.evolve(r, messages=tuple(m for m in r.messages if not isinstance(m, BrokerRegistrationRequest)))

    def crash(self, now: int) -> None:
        self.registering = None
        self.alters = []
        self.fetcher.crash(now)

    def held(self) -> list[AlterPartitionRequest]:
        """The AlterPartition request the broker's channel holds until answered: for the spec in
        flight all that time (the channel may send it again, also after a controller handled it
        and the answer was lost: the spec's delivery that keeps a copy)."""
        return list(self.alters) if self.broker.running else []

    def _give_up(self) -> tuple[SpecStep, ...]:
        """The channel forgets its request; unless a copy is still on its way (or awaits a
        commit), the spec's network loses it now."""
        gone, self.alters = self.alters, []
        return self.mq.lost_from_flight(gone)

    def _wanted(self, a: AlterPartitionRequest) -> bool:
        """The partition still waits for exactly this change (AlterPartitionManager retries only
        the item the Partition's pending state is waiting for: Kafka holds one per partition)."""
        br = self.broker
        return br.running and br.alter_partition_in_flight and br.local_partition_epoch == a.partitionEpoch \
            and br.pending_isr == frozenset(x.broker for x in a.newIsrWithEpochs)

    def next_deadline(self) -> int | None:
        times = [self.broker.next_deadline(), self.fetcher.next_deadline(),
                 self.retry_at if self.registering is not None else None,
                 self.alter_retry_at if self.alters else None]
        live = [t for t in times if t is not None]
        return min(live) if live else None
