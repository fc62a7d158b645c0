"""The Hypothesis rule-based state machine over the hand-stepped replication world
(``kraft.replication.world.ReplicationWorld``), speaking the command language of the golden stories
(``kraft.replication.story``).

Each rule is one story command, so a shrunk counterexample prints (``note``) as a script that reads
like tests/replication/testdata/*.txt: who led, who fetched what, who truncated, which acknowledged
record vanished.  The rules are the spec's nondeterminism: produce (acks -1/1/0) at the leader or
any broker, answer acks=all produces, whole fetches (the AlterPartition round trip may overtake the
answer), fetches whose answer stays in flight, requests that stay in flight, delivering or losing
any message, metadata replay, session timeouts (fencing) and unfencing, crashes (the unflushed tail
is lost), restarts with or without the disk, controlled shutdowns, a node's timers, the clock, and
coarse fair progress.  Every invariant is checked after every step (``ReplicationWorld.step``); the
teardown restarts every broker, runs to quiescence and checks that every acks=all-acknowledged
record is readable from the current leader (``settle``: AckedReadableFromLeader).
"""

from __future__ import annotations

import time
from typing import Any

from hypothesis import HealthCheck, Phase, note, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.internal.conjecture import engine
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule, run_state_machine_as_test

from kraft.controller.image import FENCED, FENCED_STATES
from kraft.core.invariants import InvariantViolation
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import CONTROLLER
from kraft.replication.protocol import PROTOCOL
from kraft.replication.story import ReplicationStory

INDEX = st.integers(min_value=0, max_value=15)
STORY_HEADER = "The run as a story (tests/replication/testdata format):\n\n"
ACKS = st.sampled_from([-1, -1, 1, 0])


# How many times each rule is registered (Hypothesis picks among the enabled rules uniformly, and
# swarm-tests by switching random subsets off per run): whole fetches and produces are what every
# story is made of; the coarse and disruptive rules are rarer.
DEFAULT_WEIGHTS = {"fetch": 4, "produce_to_leader": 2, "complete": 2, "replay": 2, "replay_all": 2}


# Per variant: the rules its scenario is made of, weighted up, and the ones that only dilute the
# search switched off (the search still has to find the order and the brokers by itself).
_QUIET = {"time": 0, "shutdown": 0, "drop": 0, "complete": 0, "produce": 0}
VARIANT_WEIGHTS: dict[str, dict[str, int]] = {
    # a follower that was down rejoins a new leader whose HW lags its epoch start (the scenario
    # needs about eight steps in order; 1839 examples at 40 steps when measured)
    "IsrJoinBeforeEpochStart": {**_QUIET, "send_fetch": 0, "deliver": 0, "fence": 0, "unfence": 0, "replay": 0,
                                "replay_all": 0, "fetch": 3, "produce_to_leader": 1, "fetch_answer_delayed": 2,
                                "fence_and_replay": 2, "unfence_and_replay": 2, "crash": 2, "restart": 2},
    # a fetch of a broker's previous incarnation arrives after it restarted with a shorter log
    # (545 examples when measured; a whole fetch or a delivery would use the request up first)
    "StaleAlterPartitionRejoin": {**_QUIET, "send_fetch": 3, "crash": 2, "restart": 2, "unfence_and_replay": 2,
                                  "fence": 0, "fence_and_replay": 0, "fetch_answer_delayed": 0,
                                  "produce_to_leader": 1, "fetch": 1, "deliver": 0, "replay": 1, "replay_all": 0,
                                  "unfence": 0},
}


def _link(m) -> str:
    return f"{'C' if m.source == CONTROLLER else m.source}->{'C' if m.dest == CONTROLLER else m.dest}"


def make_machine(config: ReplicationConfig | None = None, brokers: int = 3, *, settle: bool = True,
                 weights: dict[str, int] | None = None) -> type[RuleBasedStateMachine]:
    """``settle=False`` skips the end-of-run check; ``weights[r]`` registers rule ``r`` that many
    times (0 switches it off) to bias the search toward a variant's scenario."""
    cfg = config or ReplicationConfig()
    variants = [n for n in PROTOCOL.variant_names if getattr(cfg, n)]
    start = " ".join([f"brokers {brokers}", *variants]
                     + ([f"min-isr={cfg.min_insync_replicas}"] if cfg.min_insync_replicas != 2 else []))

    class ReplicationMachine(RuleBasedStateMachine):
        on_failure: Any = None   # called when a run breaks an invariant (search() times the first)

        def __init__(self) -> None:
            super().__init__()
            self.story = ReplicationStory(render=current_build_context().is_final)
            self.transcript: list[str] = []
            self.do(start)
            self.c = self.story.world
            assert self.c is not None and self.c.config == cfg, "the machine's config must be a story option"

        def do(self, *commands: str) -> None:
            """Run story commands; note their output (final run only); raise the violation."""
            for text in commands:
                out = self.story.command(text)
                if self.story.render:
                    self.transcript.append(f"{text}\n----\n{out}" if out else f"{text}\n----")
                if self.story.violation is not None:
                    if self.on_failure is not None:
                        self.on_failure()
                    note(STORY_HEADER + "\n\n".join(self.transcript) + "\n")
                    raise self.story.violation

        def _leader(self) -> int | None:
            lid = self.c.leader()
            return lid if lid != -1 and self.c.brokers[lid].running else None

        def _pick(self, data: st.DataObject, ns: list[int]) -> int:
            return ns[0] if len(ns) == 1 else data.draw(st.sampled_from(ns))

        def _running(self) -> list[int]:
            return [n for n, b in self.c.brokers.items() if b.running]

        def _fetchers(self) -> list[int]:
            return [n for n in self.c.ids if self.c.can_fetch(n)]

        def _senders(self) -> list[int]:
            return [n for n in self.c.ids if self.c.can_send_fetch(n)]

        def _replayers(self) -> list[int]:
            end = len(self.c.controller.records)
            return [n for n, b in self.c.brokers.items() if b.running and b.image.applied < end]

        def _fenced(self) -> list[int]:
            return [n for n in self._running() if self.c.controller.image.broker_state(n) == FENCED]

        def _unfenced(self) -> list[int]:
            return [n for n in self.c.ids if self.c.controller.image.broker_state(n) not in FENCED_STATES]

        @initialize(k=st.integers(min_value=0, max_value=2))
        def warm_up(self, k: int) -> None:
            """``k`` acks=all records replicated to every broker first (a common log prefix)."""
            for _ in range(k):
                self.do(f"produce {self.c.leader()}", *(f"fetch {f}" for f in self.c.ids if f != self.c.leader()),
                        *(f"fetch {f}" for f in self.c.ids if f != self.c.leader()), "complete")

        # -- clients ------------------------------------------------------------------------
        @precondition(lambda self: self._leader() is not None)
        @rule(acks=ACKS)
        def produce_to_leader(self, acks: int) -> None:
            self.do(f"produce {self._leader()} acks={acks}")

        @precondition(lambda self: any(b.is_leader() for b in self.c.brokers.values()))
        @rule(data=st.data(), acks=ACKS)
        def produce(self, data: st.DataObject, acks: int) -> None:
            """At any broker that believes it leads (a deposed leader takes writes until it learns)."""
            n = self._pick(data, [n for n, b in self.c.brokers.items() if b.is_leader()])
            self.do(f"produce {n} acks={acks}")

        @precondition(lambda self: any(b.is_leader() and any(
            p.offset < b.high_watermark and p.leaderEpoch == b.local_leader_epoch for p in b.pending_produce)
            for b in self.c.brokers.values()))
        @rule()
        def complete(self) -> None:
            self.do("complete")

        # -- replication ---------------------------------------------------------------------
        @precondition(lambda self: self._fetchers())
        @rule(data=st.data(), alter_first=st.booleans())
        def fetch(self, data: st.DataObject, alter_first: bool) -> None:
            f = self._pick(data, self._fetchers())
            self.do(f"fetch {f}" + (" alter-first" if alter_first else ""))

        @precondition(lambda self: self._senders())
        @rule(data=st.data())
        def fetch_answer_delayed(self, data: st.DataObject) -> None:
            """The leader handles f's fetch; its answer stays in flight."""
            f = self._pick(data, self._senders())
            self.do(f"send-fetch {f}", f"deliver {f}->{self.c.brokers[f].local_leader}")

        @precondition(lambda self: self._senders())
        @rule(data=st.data())
        def send_fetch(self, data: st.DataObject) -> None:
            self.do(f"send-fetch {self._pick(data, self._senders())}")

        @precondition(lambda self: self.c.pending)
        @rule(i=INDEX)
        def deliver(self, i: int) -> None:
            self.do(f"deliver {_link(self.c.pending[i % len(self.c.pending)])}")

        @precondition(lambda self: self.c.pending)
        @rule(i=INDEX)
        def drop(self, i: int) -> None:
            self.do(f"drop {_link(self.c.pending[i % len(self.c.pending)])}")

        # -- metadata and membership ---------------------------------------------------------
        @precondition(lambda self: self._replayers())
        @rule(data=st.data())
        def replay(self, data: st.DataObject) -> None:
            self.do(f"replay {self._pick(data, self._replayers())}")

        @precondition(lambda self: len(self._replayers()) > 1)
        @rule()
        def replay_all(self) -> None:
            self.do("replay " + " ".join(map(str, self._replayers())))

        @precondition(lambda self: self._unfenced())
        @rule(data=st.data())
        def fence(self, data: st.DataObject) -> None:
            self.do(f"fence {self._pick(data, self._unfenced())}")

        def _replay_all(self) -> tuple[str, ...]:
            return ("replay " + " ".join(map(str, self._replayers())),) if self._replayers() else ()

        @precondition(lambda self: self._fenced())
        @rule(data=st.data())
        def unfence(self, data: st.DataObject) -> None:
            self.do(f"unfence {self._pick(data, self._fenced())}")

        @precondition(lambda self: self._unfenced())
        @rule(data=st.data())
        def fence_and_replay(self, data: st.DataObject) -> None:
            """A session timeout every running broker then learns of (a fail-over when n led)."""
            n = self._pick(data, self._unfenced())
            self.do(f"fence {n}")
            self.do(*self._replay_all())

        @precondition(lambda self: self._fenced())
        @rule(data=st.data())
        def unfence_and_replay(self, data: st.DataObject) -> None:
            """n comes back (after a restart or a fencing) and every running broker learns of it."""
            n = self._pick(data, self._fenced())
            self.do(f"unfence {n}")
            self.do(*self._replay_all())

        # -- faults ---------------------------------------------------------------------------
        @precondition(lambda self: self._running())
        @rule(data=st.data())
        def crash(self, data: st.DataObject) -> None:
            self.do(f"crash {self._pick(data, self._running())}")

        @precondition(lambda self: len(self._running()) < brokers)
        @rule(data=st.data(), disk_loss=st.booleans())
        def restart(self, data: st.DataObject, disk_loss: bool) -> None:
            n = self._pick(data, [n for n in self.c.ids if not self.c.brokers[n].running])
            self.do(f"restart {n}" + (" disk-loss" if disk_loss else ""))

        @precondition(lambda self: any(b.running and not b.want_shutdown for b in self.c.brokers.values()))
        @rule(data=st.data())
        def shutdown(self, data: st.DataObject) -> None:
            n = self._pick(data, [n for n, b in self.c.brokers.items() if b.running and not b.want_shutdown])
            self.do(f"shutdown {n}")

        # -- time (one rule, so the always-enabled clock does not crowd out the rest) -----------
        @rule(what=st.sampled_from(["advance 10", "advance 100", "advance 700", "advance 1000", "tick C",
                                    *(f"tick {n}" for n in range(1, brokers + 1)),
                                    "run 20", "run 100", "run 400"]))
        def time(self, what: str) -> None:
            if what.startswith("tick") and what != "tick C" and not self.c.brokers[int(what[5:])].running:
                return
            self.do(what)

        def teardown(self) -> None:
            if settle and self.story.violation is None and self.story.world is not None:
                self.do("settle")

    for name, weight in {**DEFAULT_WEIGHTS, **(weights or {})}.items():
        original = getattr(ReplicationMachine, name)
        if weight == 0:
            setattr(ReplicationMachine, name, None)
        for k in range(1, weight):
            setattr(ReplicationMachine, f"{name}_{k}", original)
    ReplicationMachine.__name__ = "ReplicationMachine" + "".join(variants)
    return ReplicationMachine


def search(variant: str | None, max_examples: int, *, weights: dict[str, int] | None = None,
           steps: int = 40, shrink_seconds: float = 20) -> dict[str, Any]:
    """Run the machine (``variant`` switched on) until it fails or ``max_examples`` pass.  Returns
    ``examples`` (test cases run until the first failure, or all of them), ``seconds`` to the first
    failure, ``error`` (the exception, after shrinking if ``shrink``), and ``story`` (the shrunk run
    as story commands with their output, from Hypothesis's notes)."""
    if weights is None:
        weights = VARIANT_WEIGHTS.get(variant or "", {})
    machine = make_machine(ReplicationConfig().with_variant(variant), weights=weights)
    count = {"n": 0, "first": None}
    t0 = time.perf_counter()
    original_init = machine.__init__

    def counting_init(self: Any) -> None:
        count["n"] += 1
        original_init(self)

    def first_failure() -> None:
        if count["first"] is None:
            count["first"] = (count["n"], time.perf_counter() - t0)

    machine.__init__ = counting_init  # type: ignore[method-assign]
    machine.on_failure = staticmethod(first_failure)
    phases = [Phase.generate] + ([Phase.shrink] if shrink_seconds > 0 else [])
    error: BaseException | None = None
    # Hypothesis shrinks for up to 300 s; a bounded shrink keeps the suite's budget (the run is
    # still a real counterexample, only possibly less minimal)
    saved = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = max(1, int(shrink_seconds))
    try:
        run_state_machine_as_test(machine, settings=settings(
            max_examples=max_examples, stateful_step_count=steps, deadline=None, derandomize=True,
            database=None, report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
            phases=phases))
    except (InvariantViolation, AssertionError) as exc:
        error = exc
    finally:
        engine.MAX_SHRINKING_SECONDS = saved
    examples, seconds = count["first"] or (count["n"], time.perf_counter() - t0)
    notes = [n for n in getattr(error, "__notes__", []) if n.startswith(STORY_HEADER)]
    return {"examples": examples, "seconds": seconds, "error": error, "story": notes[-1] if notes else "",
            "total_seconds": time.perf_counter() - t0}


__all__ = ["make_machine", "search", "STORY_HEADER"]
