"""What a protocol gives the simulator: its plug-in (``kraft/<protocol>/sim.py``).

The simulator (``kraft.sim``) owns the clock, the timed faulty network, the fault schedule and the
trace and history recorders; it knows no protocol.  A plug-in builds the protocol's ``World`` over
the simulator's network and adds what only the protocol knows: its client workload, what a crash,
a restart and a lost disk do to its nodes, and its targeted faults.  Every method takes the
running simulator (``Sim`` below: the services a plug-in may use).

Only ``build``, ``write`` and ``read`` must be written; every other method has a default that suits
a protocol without that feature.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from typing import Any, Callable, ClassVar, Iterable, Mapping, Protocol as Interface

import attrs

from kraft.core.declaration import Protocol
from kraft.core.invariants import Violation
from kraft.core.step import Ready
from kraft.core.world import World


class Sim(Interface):
    """The simulator's services a plug-in uses (``kraft.sim.Simulator``)."""

    seed: int
    rng: random.Random
    network: Any
    recorder: Any
    down: set[Any]
    calm: bool

    @property
    def now(self) -> int: ...

    def step_node(self, node: Any, inp: Any) -> Ready: ...

    def run_due(self, node: Any, limit: int = 64) -> None: ...

    def reschedule(self, node: Any) -> None: ...

    def count(self, fault: str) -> None: ...

    def crash(self, node: Any, downtime_ms: int | None, disk_lost: bool = False) -> None: ...

    def lose_disk(self, node: Any) -> None: ...

    def isolate(self, node: Any, others: Iterable[Any], ms: int) -> None: ...

    def restart_later(self, node: Any, at: int) -> None: ...

    def record(self, action: str, node: Any, args: dict[str, Any], spec: bool = True) -> None: ...


@attrs.frozen
class Nemesis:
    """A targeted fault (Jepsen's nemeses that pick their victim by role): ``strike`` runs one
    strike of it; ``doc`` says what it does (``kraft simulate --help`` lists it)."""

    strike: Callable[[Sim], None]
    doc: str


class SimPlugin(ABC):
    """A protocol in the simulator (see the module docstring)."""

    declaration: ClassVar[Protocol]
    # take a node's enabled internal actions right after it handles a message (a vote that
    # completes a majority makes it leader at once), rather than at its next wake-up
    internal_after_delivery: ClassVar[bool] = True
    # end every run that did not stop at a violation with Jepsen's final phase (heal, quiesce,
    # final reads): a protocol whose history audit needs final reads sets it
    final_phase_always: ClassVar[bool] = False
    # the kinds of log ``logs`` returns directories of ("metadata": ``kraft simulate
    # --metadata-log`` is allowed, "offsets": ``--offsets-log``)
    kept_logs: ClassVar[tuple[str, ...]] = ()
    world: World

    # ------------------------------------------------------------------ required
    @abstractmethod
    def build(self, sim: Sim) -> World:
        """Create the protocol's world over ``sim.network`` (``sim.now``/``sim.rng`` available)."""

    @abstractmethod
    def write(self, sim: Sim) -> None:
        """One client write, recorded in the history."""

    @abstractmethod
    def read(self, sim: Sim) -> None:
        """One client read, recorded in the history."""

    def start(self, sim: Sim) -> None:
        """The run's first steps (``sim.step_node``), before any scheduled event; the simulator
        schedules the nodes' wake-ups once this returns."""

    # ------------------------------------------------------------------ faults
    def nemeses(self) -> Mapping[str, Nemesis]:
        """The targeted faults this protocol offers, by the name ``--faults`` gives them."""
        return {}

    def crash(self, sim: Sim, node: Any) -> None:
        """The machine of ``node`` stops (power loss)."""

    def restart(self, sim: Sim, node: Any, disk_lost: bool) -> None:
        """``node`` comes back (with an empty disk if ``disk_lost``)."""

    def can_lose_disk(self, sim: Sim, node: Any) -> bool:
        return False

    def connections_reset(self, sim: Sim, node: Any) -> None:
        """A disk loss restarts the machine at once (after ``crash``): its connections reset."""
        sim.network.purge(node)

    # the plug-in snapshots and cleans node logs when the ``snapshot`` fault is on (``snapshot``)
    snapshots: ClassVar[bool] = False

    def snapshot(self, sim: Sim, rng: Any) -> None:
        """One ``snapshot`` event: some node snapshots and/or moves its log start; ``rng`` is the
        event's own random source."""

    def resign(self, sim: Sim) -> None:
        """The protocol's graceful fault (a leader resigning, a controlled shutdown)."""

    # ------------------------------------------------------------------ stepping and checking
    def observe(self, sim: Sim, node: Any, ready: Ready) -> None:
        """After every applied ``Ready``: client bookkeeping, extra wake-ups."""

    def check(self, sim: Sim) -> list[Violation]:
        """Every invariant after an event (``self.world.restarted``: nodes restarted since)."""
        return self.world.violations()

    def project(self, sim: Sim) -> dict[str, Any]:
        """The spec variables a trace line carries (the network's messages included)."""
        return {}

    def constants(self) -> dict[str, Any]:
        """The spec CONSTANTS of this run (the trace header)."""
        return {}

    def encode(self, value: Any) -> Any:
        """JSON form of a trace argument (e.g. a message as the spec's record)."""
        return value

    def drop_is_spec_step(self, sim: Sim, message: Any) -> bool:
        """Is the network losing ``message`` a spec step (DropMessage)?"""
        return True

    def describe(self, sim: Sim) -> str:
        return self.world.describe()

    # ------------------------------------------------------------------ the end of a run
    def liveness(self, sim: Sim) -> list[Violation]:
        """After the final phase's quiet period: the progress properties that did not hold (a
        liveness property checked once faults stopped and the cluster had time to recover)."""
        return []

    def settled(self, sim: Sim) -> bool:
        """During the final phase: may the final reads start before the quiesce time is up?"""
        return False

    def final_reads(self, sim: Sim) -> dict[str, Any]:
        """The final phase's reads (after heal and quiesce); what to put in the summary."""
        return {}

    def finish(self, sim: Sim) -> None:
        """End of run: close open client operations."""

    def summary(self, sim: Sim) -> dict[str, Any]:
        return {}

    def logs(self, sim: Sim, kind: str) -> dict[str, tuple[Any, str]]:
        """The log directories of ``kind`` (one of ``kept_logs``) this protocol keeps, for
        ``kraft simulate --<kind>-log``: a relative output path -> (the file system holding it,
        its directory there).  Empty: the protocol keeps none."""
        return {}
