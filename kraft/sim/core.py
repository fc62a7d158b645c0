"""The generic deterministic simulator: virtual clock, event queue, faulty network, fault schedule.

Everything random comes from one ``random.Random(seed)``; the same seed, protocol and options give the
same run, event for event.  A protocol plugs in through its ``kraft.core.plugin.SimPlugin`` (see
docs/sim.md): it builds the protocol's ``World``, whose nodes are driven through the one step surface
(``World.process``); the simulator delivers messages and fires timers the same way for every
protocol, and ``apply`` turns each ``Ready`` into sends, trace lines and dropped copies.  Nothing
here knows a protocol.
"""

from __future__ import annotations

import heapq
import random
from typing import Any, Callable, Iterable

import attrs

from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.plugin import SimPlugin
from kraft.core.step import TICK, Ready

FAULT_NAMES: tuple[str, ...] = ("drop", "dup", "delay", "reorder", "partition", "crash", "disk-loss", "resign",
                                 "snapshot")
# ``snapshot``: a node snapshots its committed prefix and moves its log start (only for a protocol
# whose plug-in offers it, ``SimPlugin.snapshots``; elsewhere it is never scheduled).  Its times and
# choices come from an RNG of their own, so switching it on leaves the run's other draws as they were.
# Targeted faults (Jepsen's nemeses that pick their victim by role, e.g. ``:primaries``) are named
# in ``--faults`` beside the random ones (``all,kill-leader``), never part of ``all``; each protocol
# offers its own (``SimPlugin.nemeses``). Each fires at exponential intervals of mean
# ``Faults.nemesis_every_ms`` from the run's one seeded RNG.


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
    snapshot: bool = False
    drop_p: float = 0.05
    dup_p: float = 0.05
    partition_every_ms: int = 3000
    crash_every_ms: int = 4000
    disk_loss_every_ms: int = 15000
    resign_every_ms: int = 8000
    snapshot_every_ms: int = 1500
    nemesis: tuple[str, ...] = ()   # targeted faults (the protocol's nemeses), in the order given
    nemesis_every_ms: int = 2500

    @classmethod
    def parse(cls, text: str | None, nemeses: Iterable[str] = ()) -> "Faults":
        """``"all"``, ``"none"``/empty, or a comma list of FAULT_NAMES and of ``nemeses`` (the
        targeted faults the protocol offers, each as ``NAME`` or ``NAME:MS``), where ``all``
        stands for every FAULT_NAME (``all,kill-leader``: the random faults plus one targeted one)."""
        if not text or text == "none":
            return cls()
        offered = tuple(nemeses)
        tokens = [t.strip() for t in text.split(",") if t.strip()]
        names: list[str] = []
        for t in tokens:
            for n in (FAULT_NAMES if t == "all" else (t,)):
                if n not in names:
                    names.append(n)
        unknown = [n for n in names if n not in FAULT_NAMES and _nemesis_name(n) not in offered]
        if unknown:
            targeted = f"the targeted {', '.join(offered)} (NAME:MS sets its mean interval)" if offered \
                else "no targeted fault (this protocol offers none)"
            raise SimulationError(f"unknown fault(s) {', '.join(unknown)}; choose from all, "
                                  f"{', '.join(FAULT_NAMES)}, or {targeted}")
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

    def discard(self, lost: Callable[[Any], bool]) -> list[Any]:
        """Forget every message in flight for which ``lost(message)`` holds (the connections it
        travelled on closed); return them."""
        gone = [k for k, m in self.pending.items() if lost(m)]
        return [self.pending.pop(k) for k in gone]

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


class Simulator:
    """Seeded discrete-event simulation of one protocol cluster."""

    def __init__(self, plugin: SimPlugin, seed: int, faults: Faults | None = None, *,
                 recorder: Any = None, client_every_ms: int = 40, read_every_ms: int = 150,
                 check_every_event: bool = True, after_violation: int | None = None,
                 quiesce_ms: int = 5000) -> None:
        self.plugin = plugin
        self.seed = seed
        self.rng = random.Random(seed)
        self.snapshot_rng = random.Random(f"{seed}/snapshot")
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
        offered = plugin.nemeses()
        unsupported = [n for n, _ in self.faults.nemesis_schedule() if n not in offered]
        if unsupported:
            raise SimulationError(f"protocol {plugin.declaration.name} has no targeted fault "
                                  f"{', '.join(unsupported)}" + (f" (it has {', '.join(offered)})" if offered else ""))
        self.stopped_at_violation = False
        self.world = plugin.world = plugin.build(self)
        if self.recorder is not None:   # the constants of the world as built (faults may shape it)
            self.recorder.trace_header["constants"] = plugin.constants()
        self._starting = True   # wake-ups are scheduled below, after the periodic events
        plugin.start(self)
        self._starting = False
        for kind, every in self._periodic():
            self.clock.schedule(self._exp(every), kind)
        if self.faults.snapshot and plugin.snapshots:
            self._schedule_snapshot()
        for name, every in self.faults.nemesis_schedule():
            self.clock.schedule(self._exp(every), "nemesis", (offered[name], every))
        for n in self.world.node_ids():
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

    # -- services for plug-ins ---------------------------------------------------------------------
    def step_node(self, node: Any, inp: Any) -> Ready:
        """Step one node with one input and apply what it produced."""
        self.world.now = self.now
        ready = self.world.process(node, inp)
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
            self.plugin.observe(self, node, ready)
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
        self.plugin.observe(self, node, ready)

    def record(self, action: str, node: Any, args: dict[str, Any], spec: bool = True) -> None:
        if self.recorder is not None:
            args = {k: self.plugin.encode(v) for k, v in args.items()}
            self.recorder.step(action, node, args, spec, self.plugin.project(self) if self.recorder.states else None)

    def send_all(self, msgs: Iterable[Any]) -> list[int]:
        doomed: list[int] = []
        for m in msgs:
            doomed += self.network.send(m)
        return doomed

    def reschedule(self, node: Any) -> None:
        if node in self.down or self._starting:
            return
        self.world.now = self.now
        t = self.world.next_deadline(node)
        if t is None:
            return
        t = max(t, self.now)
        cur = self._wake_at.get(node)
        if cur is None or t < cur or cur < self.now:
            self._wake_at[node] = t
            self.clock.schedule(t, "wake", node)

    def count(self, fault: str) -> None:
        """One more strike of ``fault`` (the summary's ``faults_injected``)."""
        self.fault_counts[fault] = self.fault_counts.get(fault, 0) + 1

    def restart_later(self, node: Any, at: int) -> None:
        """Restart ``node`` (cleanly, its disk intact) at virtual time ``at``."""
        self.clock.schedule(at, "restart", (node, False))

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
        violations = self.plugin.check(self)
        self.world.restarted = set()
        self._report(violations)

    def _report(self, violations: list[Violation]) -> None:
        """Keep or raise the first violation (see ``check``); count later ones."""
        if not violations:
            return
        if self.first_violation is not None:
            for v in {v.invariant for v in violations}:
                self.later_violations[v] = self.later_violations.get(v, 0) + 1
            return
        exc = InvariantViolation(violations[0], self.events, f"t={self.now}ms\n" + self.plugin.describe(self),
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
        on; nodes catch up), then the protocol's final reads (``SimPlugin.final_reads``)."""
        self.calm_down("end of run")
        self.writes_stopped = True
        start_events, start_ms = self.events, self.now
        self.run_until(self.now + self.quiesce_ms, until=lambda: self.plugin.settled(self))
        self.final_phase["quiesce_events"] = self.events - start_events
        self.final_phase["quiesce_ms"] = self.now - start_ms
        self._report(self.plugin.liveness(self))
        self.final_phase["final_reads"] = self.plugin.final_reads(self)

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
            self.record_drop(msg)
            return
        self.network.take(ev.data)
        self.network.stats["delivered"] += 1
        self.step_node(msg.dest, msg)
        if self.plugin.internal_after_delivery:
            self.run_due(msg.dest)
        self.reschedule(msg.dest)

    def drop_doomed(self, doomed: list[int]) -> None:
        for mid in doomed:
            msg = self.network.drop(mid)
            if msg is not None:
                self.record_drop(msg)

    def record_drop(self, msg: Any) -> None:
        """The trace line of the network losing ``msg`` (a spec step unless the plug-in says no)."""
        self.record(self.plugin.declaration.drop_message, None, {"m": msg},
                    spec=self.plugin.drop_is_spec_step(self, msg))

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
            self.plugin.write(self)
        self.clock.schedule(self._exp(self.client_every_ms), "client_write")

    def _on_client_read(self, ev: _Event) -> None:
        self.plugin.read(self)
        self.clock.schedule(self._exp(self.read_every_ms), "client_read")

    def _on_partition(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        nodes = list(self.world.node_ids())
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
            self.count("partition")
            self.record("Partition", None, {"kind": kind, "blocked": sorted(map(list, pairs))}, spec=False)
        self.clock.schedule(self._exp(self.faults.partition_every_ms), "partition")

    def _on_crash(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        up = [n for n in self.world.node_ids() if n not in self.down]
        # keep a majority up most of the time, but sometimes take everyone down
        if up and (len(self.down) < len(self.world.node_ids()) // 2 or self.rng.random() < 0.1):
            victim = self.rng.choice(up)
            self.crash(victim, self.rng.randint(200, 3000))
        self.clock.schedule(self._exp(self.faults.crash_every_ms), "crash")

    def crash(self, node: Any, downtime_ms: int | None, disk_lost: bool = False) -> None:
        self.down.add(node)
        self.count("disk-loss" if disk_lost else "crash")
        self.plugin.crash(self, node)
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
        self.plugin.restart(self, node, disk_lost)
        self.world.restarted.add(node)
        self.reschedule(node)

    def _on_disk_loss(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        up = [n for n in self.world.node_ids() if n not in self.down]
        cands = [n for n in up if self.plugin.can_lose_disk(self, n)]
        if cands:
            self.lose_disk(self.rng.choice(cands))
        self.clock.schedule(self._exp(self.faults.disk_loss_every_ms), "disk_loss")

    def lose_disk(self, node: Any) -> None:
        """The node's machine dies and comes back at once with an empty disk; its connections reset."""
        self.down.add(node)
        self.count("disk-loss")
        self.plugin.crash(self, node)
        self.plugin.connections_reset(self, node)
        self.record("NodeDown", node, {"disk_lost": True}, spec=False)
        self.restart(node, disk_lost=True)

    def _on_nemesis(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        nemesis, every = ev.data
        nemesis.strike(self)  # it counts a strike (count) when it finds a victim
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

    def _schedule_snapshot(self) -> None:
        wait = max(1, int(self.snapshot_rng.expovariate(1.0 / self.faults.snapshot_every_ms)))
        self.clock.schedule(self.now + wait, "snapshot")

    def _on_snapshot(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        self.plugin.snapshot(self, self.snapshot_rng)
        self._schedule_snapshot()

    def _on_resign(self, ev: _Event) -> None:
        if self.calm:
            return  # the final phase: no new faults (and none scheduled)
        self.plugin.resign(self)
        self.clock.schedule(self._exp(self.faults.resign_every_ms), "resign")

    def finish(self) -> None:
        """End of run: with ``after_violation`` set, or for a protocol with ``final_phase_always``
        whose run did not stop at a violation, first the final phase (:meth:`quiesce`); then the
        protocol closes open client operations."""
        try:
            if self.after_violation is not None or (self.plugin.final_phase_always and not self.stopped_at_violation):
                self.quiesce()  # a violation in the final phase of a run without after_violation raises
        finally:
            self.plugin.finish(self)
