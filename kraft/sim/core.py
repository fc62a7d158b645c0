"""The generic deterministic simulator: virtual clock, event queue, faulty network, fault schedule.

Everything random comes from one ``random.Random(seed)``; the same seed, protocol and options give the
same run, event for event.  A protocol plugs in through ``Protocol`` (see docs/sim.md): it creates
the nodes, and every node is driven through the one step surface of ``kraft.core.step``
(``node.step(input, now) -> Ready``); the simulator delivers messages and fires timers the same way
for every protocol, and ``apply`` turns each ``Ready`` into sends, trace lines and dropped copies.
"""

from __future__ import annotations

import heapq
import random
from abc import ABC, abstractmethod
from typing import Any, Callable, Iterable

import attrs

from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.step import TICK, Ready

FAULT_NAMES: tuple[str, ...] = ("drop", "dup", "delay", "reorder", "partition", "crash", "disk-loss", "resign")
# Targeted faults (Jepsen's nemeses that pick their victim by role, e.g. ``:primaries``): named in
# ``--faults`` beside the random ones (``all,kill-leader``), never part of ``all``; a protocol
# implements the ones it lists in ``Protocol.nemeses`` (``Protocol.nemesis``). Each fires at
# exponential intervals of mean ``Faults.nemesis_every_ms`` from the run's one seeded RNG.
NEMESIS_NAMES: tuple[str, ...] = ("kill-leader", "isolate-leader", "isolate-followers", "isolate-follower",
                                  "isr-join-race", "isolate-on-isr-shrink", "stale-fetch")


class SimulationError(Exception):
    """Bad simulator input (unknown fault name, bad option)."""


@attrs.frozen
class Faults:
    """Which faults are on, and how often (per message probabilities, per virtual second rates)."""

    drop: bool = False
    dup: bool = False
    delay: bool = False
    reorder: bool = False
    partition: bool = False
    crash: bool = False
    disk_loss: bool = False
    resign: bool = False
    drop_p: float = 0.05
    dup_p: float = 0.05
    partition_every_ms: int = 3000
    crash_every_ms: int = 4000
    disk_loss_every_ms: int = 15000
    resign_every_ms: int = 8000
    nemesis: tuple[str, ...] = ()   # targeted faults (NEMESIS_NAMES), in the order given
    nemesis_every_ms: int = 2500

    @classmethod
    def parse(cls, text: str | None) -> "Faults":
        """``"all"``, ``"none"``/empty, or a comma list of FAULT_NAMES and NEMESIS_NAMES, where
        ``all`` stands for every FAULT_NAME (``all,kill-leader``: the random faults plus one
        targeted one)."""
        if not text or text == "none":
            return cls()
        tokens = [t.strip() for t in text.split(",") if t.strip()]
        names: list[str] = []
        for t in tokens:
            for n in (FAULT_NAMES if t == "all" else (t,)):
                if n not in names:
                    names.append(n)
        unknown = [n for n in names if n not in FAULT_NAMES and _nemesis_name(n) not in NEMESIS_NAMES]
        if unknown:
            raise SimulationError(f"unknown fault(s) {', '.join(unknown)}; choose from all, {', '.join(FAULT_NAMES)}, "
                                  f"or the targeted {', '.join(NEMESIS_NAMES)} (NAME:MS sets its mean interval)")
        return cls(**{n.replace("-", "_"): True for n in names if n in FAULT_NAMES},
                   nemesis=tuple(n for n in names if n not in FAULT_NAMES))

    def nemesis_schedule(self) -> list[tuple[str, int]]:
        """(targeted fault, mean interval in ms) for each entry of ``nemesis`` (``NAME`` or
        ``NAME:MS``)."""
        return [(_nemesis_name(n), int(n.split(":")[1]) if ":" in n else self.nemesis_every_ms) for n in self.nemesis]

    def enabled(self) -> list[str]:
        return [n for n in FAULT_NAMES if getattr(self, n.replace("-", "_"))] + list(self.nemesis)


def _nemesis_name(token: str) -> str:
    """``isolate-leader:800`` -> ``isolate-leader`` (an invalid interval yields an unknown name)."""
    name, _, ms = token.partition(":")
    return name if not ms or (ms.isdigit() and int(ms) > 0) else token


class _Event(tuple):
    """(time, seq, kind, data): a plain tuple so the heap compares in C."""

    __slots__ = ()

    def __new__(cls, time: int, seq: int, kind: str, data: Any = None) -> "_Event":
        return tuple.__new__(cls, (time, seq, kind, data))

    time = property(lambda self: self[0])
    seq = property(lambda self: self[1])
    kind = property(lambda self: self[2])
    data = property(lambda self: self[3])


class Clock:
    """Virtual milliseconds plus the event queue ordered by (time, insertion order)."""

    def __init__(self) -> None:
        self.now = 0
        self._queue: list[_Event] = []
        self._seq = 0

    def schedule(self, at: int, kind: str, data: Any = None) -> None:
        self._seq += 1
        heapq.heappush(self._queue, _Event(max(at, self.now), self._seq, kind, data))

    def pop(self) -> _Event | None:
        if not self._queue:
            return None
        ev = heapq.heappop(self._queue)
        self.now = ev.time
        return ev

    def __len__(self) -> int:
        return len(self._queue)


class Network:
    """In-flight messages with drop, duplication, delay, reordering and (one-way) partitions.

    A message needs ``source`` and ``dest`` attributes.  ``in_flight()`` is the spec's ``messages``."""

    def __init__(self, rng: random.Random, faults: Faults, clock: Clock) -> None:
        self.rng = rng
        self.faults = faults
        self.clock = clock
        self._next_id = 0
        self.pending: dict[int, Any] = {}
        self.blocked: set[tuple[Any, Any]] = set()
        self._link_last: dict[tuple[Any, Any], int] = {}
        self.stats = {"sent": 0, "delivered": 0, "dropped": 0, "duplicated": 0}

    def in_flight(self) -> list[Any]:
        return [self.pending[k] for k in sorted(self.pending)]

    def _latency(self) -> int:
        if self.faults.delay:
            return self.rng.randint(1, 30) if self.rng.random() < 0.9 else self.rng.randint(100, 600)
        return self.rng.randint(1, 5)

    def _schedule(self, msg: Any) -> int:
        self._next_id += 1
        mid = self._next_id
        self.pending[mid] = msg
        link = (msg.source, msg.dest)
        at = self.clock.now + self._latency()
        if not self.faults.reorder:
            at = max(at, self._link_last.get(link, 0))  # FIFO per link
            self._link_last[link] = at
        self.clock.schedule(at, "deliver", mid)
        return mid

    def send(self, msg: Any) -> list[int]:
        """Put ``msg`` in flight; returns the ids the network decided to lose (caller drops them)."""
        self.stats["sent"] += 1
        mid = self._schedule(msg)
        doomed = []
        if (msg.source, msg.dest) in self.blocked or (self.faults.drop and self.rng.random() < self.faults.drop_p):
            doomed.append(mid)
        elif self.faults.dup and self.rng.random() < self.faults.dup_p:
            self.stats["duplicated"] += 1
            self._schedule(msg)
        return doomed

    def take(self, mid: int) -> Any | None:
        return self.pending.pop(mid, None)

    def drop(self, mid: int) -> Any | None:
        msg = self.pending.pop(mid, None)
        if msg is not None:
            self.stats["dropped"] += 1
        return msg

    def defer(self, mid: int, at: int) -> int:
        """Keep in-flight message ``mid`` on the wire until ``at`` (a nemesis holding it back, as a
        connection whose retransmission outlives a partition); it stays in ``pending`` (the spec
        sees it in flight) under a new id, delivered at ``at``.  Returns the new id."""
        msg = self.pending.pop(mid)
        self._next_id += 1
        self.pending[self._next_id] = msg
        self.clock.schedule(at, "deliver", self._next_id)
        return self._next_id

    def purge(self, node: Any) -> list[Any]:
        """Forget every in-flight message from or to ``node`` (its connections were reset)."""
        gone = [k for k, m in self.pending.items() if m.source == node or m.dest == node]
        return [self.pending.pop(k) for k in gone]

    def partition(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        self.blocked |= set(pairs)

    def heal(self) -> None:
        self.blocked.clear()

    def is_blocked(self, src: Any, dst: Any) -> bool:
        return (src, dst) in self.blocked


class Protocol(ABC):
    """What a protocol provides to the simulator.  See docs/sim.md for the contract of each method."""

    name: str = "protocol"
    spec: str | None = None
    declaration: Any = None  # the protocol's kraft.core.declaration.Protocol
    # take a node's enabled internal actions right after it handles a message (KRaft: a vote that
    # completes a majority makes it leader at once), rather than at its next wake-up
    internal_after_delivery: bool = True
    # end every run that did not stop at a violation with Jepsen's final phase (heal, quiesce,
    # final reads: Simulator.quiesce), not only runs with ``after_violation``; a protocol whose
    # history audit needs final reads (acknowledged sends no poll read are ``unseen``) sets it
    final_phase_always: bool = False
    # the targeted faults (NEMESIS_NAMES) this protocol implements in ``nemesis``: name -> what it does
    nemeses: dict[str, str] = {}

    @abstractmethod
    def setup(self, sim: "Simulator") -> None:
        """Create the nodes (``sim.now``/``sim.rng`` available) and schedule their first wake-ups."""

    @abstractmethod
    def node_ids(self) -> list[Any]: ...

    @abstractmethod
    def node(self, node_id: Any) -> Any:
        """The steppable node: ``.step(input, now) -> Ready`` (messages, ``Tick()``, ``Trigger``)."""

    @abstractmethod
    def next_wakeup(self, node: Any) -> int | None: ...

    def after(self, sim: "Simulator", node: Any, ready: Ready) -> None:
        """Called after every applied ``Ready`` (client bookkeeping, extra reschedules)."""

    @property
    def drop_action(self) -> str:
        """The spec action the network losing a message is recorded as (from the declaration)."""
        return self.declaration.drop_message

    @abstractmethod
    def client_op(self, sim: "Simulator", kind: str) -> None:
        """Run one client operation (``kind`` is ``"write"`` or ``"read"``) and record its history."""

    @abstractmethod
    def crash(self, sim: "Simulator", node: Any) -> None: ...

    @abstractmethod
    def restart(self, sim: "Simulator", node: Any, disk_lost: bool) -> None: ...

    def can_lose_disk(self, sim: "Simulator", node: Any) -> bool:
        return False

    def connections_reset(self, sim: "Simulator", node: Any) -> None:
        """A disk loss restarts ``node``'s machine at once (after :meth:`crash`): its connections
        reset.  A protocol whose ``crash`` already decides what the network keeps overrides this."""
        sim.network.purge(node)

    def resign(self, sim: "Simulator", node: Any) -> None:  # optional fault
        return None

    def nemesis(self, sim: "Simulator", name: str) -> None:
        """One strike of the targeted fault ``name`` (one of ``nemeses``)."""
        raise SimulationError(f"{self.name} has no targeted fault {name!r}")

    @abstractmethod
    def check(self, sim: "Simulator", restarted: set[Any]) -> list[Violation]: ...

    @abstractmethod
    def project(self, sim: "Simulator") -> dict[str, Any]: ...

    def constants(self) -> dict[str, Any]:
        return {}

    def encode_arg(self, value: Any) -> Any:
        """JSON form of a trace argument (e.g. a message as the spec's record)."""
        return value

    def drop_is_spec_step(self, sim: "Simulator", msg: Any) -> bool:
        """Is the network losing ``msg`` a spec step (DropMessage)? A protocol whose transport
        hides some copies from the spec (e.g. duplicates) says no for those."""
        return True

    def describe(self, sim: "Simulator") -> str:
        return ""

    def finish(self, sim: "Simulator") -> None:
        """End of run: close open client operations."""

    def settled(self, sim: "Simulator") -> bool:
        """During the final phase: has the cluster settled, so the final reads may start before
        ``quiesce_ms`` has passed? (False: always wait the whole ``quiesce_ms``.)"""
        return False

    def final_reads(self, sim: "Simulator") -> dict[str, Any]:
        """The final phase's reads (after heal and quiesce): fresh consumers read everything there
        is, so what was lost shows in the history. Returns what to put in the summary."""
        return {}

    def summary(self, sim: "Simulator") -> dict[str, Any]:
        return {}


class Simulator:
    """Seeded discrete-event simulation of one protocol cluster."""

    def __init__(self, protocol: Protocol, seed: int, faults: Faults | None = None, *,
                 recorder: Any = None, client_every_ms: int = 40, read_every_ms: int = 150,
                 check_every_event: bool = True, after_violation: int | None = None,
                 quiesce_ms: int = 5000) -> None:
        self.protocol = protocol
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = faults or Faults()
        self.clock = Clock()
        self.network = Network(self.rng, self.faults, self.clock)
        self.recorder = recorder
        self.client_every_ms = client_every_ms
        self.read_every_ms = read_every_ms
        self.check_every_event = check_every_event
        # None: the first invariant violation stops the run (raises InvariantViolation). A number N:
        # it is recorded (first_violation) and the run goes on, faults and clients as before (a
        # Jepsen test knows nothing of invariants), for N more events; it then ends as a Jepsen test
        # does (heal, restart, quiesce, final reads): see finish(). Calming the faults at the
        # violation instead hides most losses: the broken state (an ISR member missing records)
        # turns into lost records only at a later leader change.
        self.after_violation = after_violation
        self.quiesce_ms = quiesce_ms
        self.first_violation: InvariantViolation | None = None
        self.later_violations: dict[str, int] = {}  # invariant -> checks that failed after the first
        self.calm = False
        self.writes_stopped = False
        self.final_phase: dict[str, Any] = {}
        self.down: set[Any] = set()
        self.events = 0
        self.fault_counts: dict[str, int] = {}
        self._wake_at: dict[Any, int] = {}
        self._restarted: set[Any] = set()
        unsupported = [n for n, _ in self.faults.nemesis_schedule() if n not in protocol.nemeses]
        if unsupported:
            raise SimulationError(f"protocol {protocol.name} has no targeted fault {', '.join(unsupported)}"
                                  + (f" (it has {', '.join(protocol.nemeses)})" if protocol.nemeses else ""))
        self.stopped_at_violation = False
        protocol.setup(self)
        for kind, every in self._periodic():
            self.clock.schedule(self._exp(every), kind)
        for name, every in self.faults.nemesis_schedule():
            self.clock.schedule(self._exp(every), "nemesis", (name, every))
        for n in protocol.node_ids():
            self.reschedule(n)

    @property
    def now(self) -> int:
        return self.clock.now

    def _exp(self, mean_ms: int) -> int:
        return self.now + max(1, int(self.rng.expovariate(1.0 / mean_ms)))

    def _periodic(self) -> list[tuple[str, int]]:
        f = self.faults
        out = [("client_write", self.client_every_ms), ("client_read", self.read_every_ms)]
        if f.partition:
            out.append(("partition", f.partition_every_ms))
        if f.crash:
            out.append(("crash", f.crash_every_ms))
        if f.disk_loss:
            out.append(("disk_loss", f.disk_loss_every_ms))
        if f.resign:
            out.append(("resign", f.resign_every_ms))
        return out

    # -- services for protocols --------------------------------------------------------------------
    def step_node(self, node: Any, inp: Any) -> Ready:
        """Step one node with one input and apply what it produced."""
        ready = self.protocol.node(node).step(inp, self.now)
        self.apply(node, ready)
        return ready

    def run_due(self, node: Any, limit: int = 64) -> None:
        """Take every internal/timer action of ``node`` enabled now, one ``Tick`` at a time."""
        for _ in range(limit):
            if not self.step_node(node, TICK).steps:
                return

    def apply(self, node: Any, ready: Ready) -> None:
        """Put the messages in flight, record one trace line for the step (its spec actions composed:
        the first, the others under ``args.then``; a step with no spec counterpart as ``"spec":
        false``), then let the network lose what it decided to lose."""
        if not ready:
            self.protocol.after(self, node, ready)
            return
        doomed = self.send_all(ready.messages)
        if ready.steps:
            first, rest = ready.steps[0], ready.steps[1:]
            args = dict(first.args)
            if rest:
                args["then"] = [{"action": s.action, "node": s.node, **s.args} for s in rest]
            self.record(first.action, first.node, args)
        elif ready.note is not None:
            self.record(ready.note.action, ready.note.node, dict(ready.note.args), spec=False)
        self.drop_doomed(doomed)
        self.protocol.after(self, node, ready)

    def record(self, action: str, node: Any, args: dict[str, Any], spec: bool = True) -> None:
        if self.recorder is not None:
            args = {k: self.protocol.encode_arg(v) for k, v in args.items()}
            self.recorder.step(action, node, args, spec, self.protocol.project(self) if self.recorder.states else None)

    def send_all(self, msgs: Iterable[Any]) -> list[int]:
        doomed: list[int] = []
        for m in msgs:
            doomed += self.network.send(m)
        return doomed

    def reschedule(self, node: Any) -> None:
        if node in self.down:
            return
        t = self.protocol.next_wakeup(node)
        if t is None:
            return
        t = max(t, self.now)
        cur = self._wake_at.get(node)
        if cur is None or t < cur or cur < self.now:
            self._wake_at[node] = t
            self.clock.schedule(t, "wake", node)

    def mark_restarted(self, node: Any) -> None:
        self._restarted.add(node)

    def _count(self, fault: str) -> None:
        self.fault_counts[fault] = self.fault_counts.get(fault, 0) + 1

    # -- main loop ---------------------------------------------------------------------------------
    def step(self) -> bool:
        """Process one event; False when the queue is empty."""
        ev = self.clock.pop()
        if ev is None:
            return False
        self.events += 1
        handler: Callable[[_Event], None] = getattr(self, "_on_" + ev.kind)
        handler(ev)
        if self.check_every_event:
            self.check()
        return True

    def check(self) -> None:
        """Check every invariant; nodes restarted since the last check may have reset volatile state.
        The first violation raises, unless ``after_violation`` is set: then it is kept in
        ``first_violation`` and later violations are only counted."""
        violations = self.protocol.check(self, self._restarted)
        self._restarted = set()
        if not violations:
            return
        if self.first_violation is not None:
            for v in {v.invariant for v in violations}:
                self.later_violations[v] = self.later_violations.get(v, 0) + 1
            return
        exc = InvariantViolation(violations[0], self.events, f"t={self.now}ms\n" + self.protocol.describe(self),
                                 violations)
        if self.after_violation is None:
            self.stopped_at_violation = True
            raise exc
        self.first_violation = exc

    def run(self, steps: int) -> None:
        """Process up to ``steps`` events; with ``after_violation`` N, a violation moves the end to N
        events after it (fewer or more than ``steps``)."""
        while True:
            v = self.first_violation
            end = steps if v is None else v.event + self.after_violation
            if self.events >= end or not self.step():
                break

    # -- the final phase of a Jepsen test: heal, quiesce, final reads -------------------------------
    def calm_down(self, why: str) -> None:
        """No new faults from now on: heal every partition, stop losing/duplicating/delaying
        messages, and restart every stopped node (Jepsen's final ``nemesis :stop``/heal)."""
        if self.calm:
            return
        self.calm = True
        self.final_phase = {"calm_at_event": self.events, "calm_at_ms": self.now, "why": why}
        self.faults = Faults()
        self.network.faults = self.faults
        if self.network.blocked:
            self.network.heal()
            self.record("Heal", None, {}, spec=False)
        for node in sorted(self.down, key=repr):
            self.restart(node)

    def quiesce(self) -> None:
        """Stop client writes, let the cluster settle for ``quiesce_ms`` of virtual time (reads go
        on; nodes catch up), then the protocol's final reads (``Protocol.final_reads``)."""
        self.calm_down("end of run")
        self.writes_stopped = True
        start_events, start_ms = self.events, self.now
        self.run_until(self.now + self.quiesce_ms, until=lambda: self.protocol.settled(self))
        self.final_phase["quiesce_events"] = self.events - start_events
        self.final_phase["quiesce_ms"] = self.now - start_ms
        self.final_phase["final_reads"] = self.protocol.final_reads(self)

    def run_until(self, t_ms: int, max_events: int = 10**7, until: Callable[[], bool] | None = None) -> None:
        """Process every event due by ``t_ms`` (the clock then reads ``t_ms``), or stop early once
        ``until()`` holds after an event (the clock stays at that event)."""
        n = 0
        while self.clock._queue and self.clock._queue[0].time <= t_ms and n < max_events:
            self.step()
            n += 1
            if until is not None and until():
                return
        self.clock.now = max(self.clock.now, t_ms)

    def _on_deliver(self, ev: _Event) -> None:
        msg = self.network.pending.get(ev.data)
        if msg is None:
            return  # already dropped
        if msg.dest in self.down or self.network.is_blocked(msg.source, msg.dest):
            self.network.drop(ev.data)
            self.record(self.protocol.drop_action, None, {"m": msg}, spec=self.protocol.drop_is_spec_step(self, msg))
            return
        self.network.take(ev.data)
        self.network.stats["delivered"] += 1
        self.step_node(msg.dest, msg)
        if self.protocol.internal_after_delivery:
            self.run_due(msg.dest)
        self.reschedule(msg.dest)

    def drop_doomed(self, doomed: list[int]) -> None:
        for mid in doomed:
            msg = self.network.drop(mid)
            if msg is not None:
                self.record(self.protocol.drop_action, None, {"m": msg}, spec=self.protocol.drop_is_spec_step(self, msg))

    def _on_wake(self, ev: _Event) -> None:
        node = ev.data
        if self._wake_at.get(node) == ev.time:
            del self._wake_at[node]
        if node in self.down:
            return
        self.run_due(node)
        self.reschedule(node)

    def _on_client_write(self, ev: _Event) -> None:
        if not self.writes_stopped:
            self.protocol.client_op(self, "write")
        self.clock.schedule(self._exp(self.client_every_ms), "client_write")

    def _on_client_read(self, ev: _Event) -> None:
        self.protocol.client_op(self, "read")
        self.clock.schedule(self._exp(self.read_every_ms), "client_read")

    def _on_partition(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        nodes = self.protocol.node_ids()
        if self.network.blocked:
            self.network.heal()
            self.record("Heal", None, {}, spec=False)
        else:
            kind = self.rng.choice(["isolate", "split", "one-way"])
            pairs: set[tuple[Any, Any]] = set()
            if kind == "isolate":
                victim = self.rng.choice(nodes)
                pairs = {(victim, o) for o in nodes if o != victim} | {(o, victim) for o in nodes if o != victim}
            elif kind == "split":
                shuffled = nodes[:]
                self.rng.shuffle(shuffled)
                side = set(shuffled[: len(nodes) // 2])
                pairs = {(a, b) for a in nodes for b in nodes if (a in side) != (b in side)}
            else:
                a, b = self.rng.sample(nodes, 2)
                pairs = {(a, b)}
            self.network.partition(pairs)
            self._count("partition")
            self.record("Partition", None, {"kind": kind, "blocked": sorted(map(list, pairs))}, spec=False)
        self.clock.schedule(self._exp(self.faults.partition_every_ms), "partition")

    def _on_crash(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        up = [n for n in self.protocol.node_ids() if n not in self.down]
        # keep a majority up most of the time, but sometimes take everyone down
        if up and (len(self.down) < len(self.protocol.node_ids()) // 2 or self.rng.random() < 0.1):
            victim = self.rng.choice(up)
            self.crash(victim, self.rng.randint(200, 3000))
        self.clock.schedule(self._exp(self.faults.crash_every_ms), "crash")

    def crash(self, node: Any, downtime_ms: int | None, disk_lost: bool = False) -> None:
        self.down.add(node)
        self._count("disk-loss" if disk_lost else "crash")
        self.protocol.crash(self, node)
        self.record("NodeDown", node, {"disk_lost": disk_lost}, spec=False)
        if downtime_ms is not None:
            self.clock.schedule(self.now + downtime_ms, "restart", (node, disk_lost))

    def _on_restart(self, ev: _Event) -> None:
        node, disk_lost = ev.data
        self.restart(node, disk_lost)

    def restart(self, node: Any, disk_lost: bool = False) -> None:
        if node not in self.down:
            return
        self.down.discard(node)
        self._wake_at.pop(node, None)
        self.protocol.restart(self, node, disk_lost)
        self._restarted.add(node)
        self.reschedule(node)

    def _on_disk_loss(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        up = [n for n in self.protocol.node_ids() if n not in self.down]
        cands = [n for n in up if self.protocol.can_lose_disk(self, n)]
        if cands:
            self.lose_disk(self.rng.choice(cands))
        self.clock.schedule(self._exp(self.faults.disk_loss_every_ms), "disk_loss")

    def lose_disk(self, node: Any) -> None:
        """The node's machine dies and comes back at once with an empty disk; its connections reset."""
        self.down.add(node)
        self._count("disk-loss")
        self.protocol.crash(self, node)
        self.protocol.connections_reset(self, node)
        self.record("NodeDown", node, {"disk_lost": True}, spec=False)
        self.restart(node, disk_lost=True)

    def _on_nemesis(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        name, every = ev.data
        self.protocol.nemesis(self, name)  # it counts a strike (_count) when it finds a victim
        self.clock.schedule(self._exp(every), "nemesis", ev.data)

    def isolate(self, node: Any, others: Iterable[Any], ms: int) -> None:
        """Cut ``node`` off from ``others`` (both directions) for ``ms``; only those links heal
        then (a random ``partition`` fault in between may heal them earlier)."""
        pairs = sorted({(node, o) for o in others if o != node} | {(o, node) for o in others if o != node}, key=repr)
        if not pairs:
            return
        self.network.partition(pairs)
        self.record("Partition", None, {"kind": "isolate", "blocked": [list(p) for p in pairs]}, spec=False)
        self.clock.schedule(self.now + ms, "unblock", tuple(pairs))

    def _on_unblock(self, ev: _Event) -> None:
        pairs = set(ev.data) & self.network.blocked
        if pairs:
            self.network.blocked -= pairs
            self.record("Heal", None, {"links": [list(p) for p in sorted(pairs, key=repr)]}, spec=False)

    def _on_resign(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        self.protocol.resign(self, None)
        self.clock.schedule(self._exp(self.faults.resign_every_ms), "resign")

    def finish(self) -> None:
        """End of run: with ``after_violation`` set, or for a protocol with ``final_phase_always``
        whose run did not stop at a violation, first the final phase (:meth:`quiesce`); then the
        protocol closes open client operations."""
        try:
            if self.after_violation is not None or (self.protocol.final_phase_always and not self.stopped_at_violation):
                self.quiesce()  # a violation in the final phase of a run without after_violation raises
        finally:
            self.protocol.finish(self)
