"""The World: a protocol's cluster, stepped explicitly.

One ``World`` per protocol serves every driver.  The Hypothesis machines and the datadriven
stories step it by hand: every delivery, loss, duplicate, timer, crash and restart is a call, over
the in-flight messages of a ``Queue``.  The simulator steps the same world over its own timed
network, choosing what happens from a seed.

A protocol's world provides its nodes, how a node's ``Ready`` is finished (``route``: the halves
of a composite spec action, ghost bookkeeping), what a crash and a restart do to its nodes and
their disks, its invariants (``violations``) and its projection.  The base class gives the rest:
``process`` (a node takes one input and the protocol finishes it: what the simulator calls), and
the hand-stepped operations, which also put the messages produced on the queue and check every
invariant after each step.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Iterable, Sequence

from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.node import Node
from kraft.core.step import TICK, Ready, Trigger


class Queue:
    """The hand-stepped network: messages in flight in sending order, and the links that are cut
    (a message sent over a cut link is lost when its delivery is attempted)."""

    def __init__(self) -> None:
        self.pending: list[Any] = []
        self.blocked: set[tuple[Any, Any]] = set()

    def send(self, messages: Iterable[Any]) -> None:
        self.pending.extend(messages)

    def in_flight(self) -> list[Any]:
        return list(self.pending)

    def discard(self, lost: Callable[[Any], bool]) -> list[Any]:
        """Forget every message for which ``lost(message)`` holds; return them."""
        gone = [m for m in self.pending if lost(m)]
        self.pending = [m for m in self.pending if not lost(m)]
        return gone

    def cut(self, link: tuple[Any, Any]) -> bool:
        return link in self.blocked

    def __len__(self) -> int:
        return len(self.pending)


class World(ABC):
    """A protocol's nodes at one virtual time ``now`` (see the module docstring)."""

    def __init__(self) -> None:
        self.now = 0
        self.net = Queue()
        self.steps = 0                       # invariant checks so far (the event count of a violation)
        self.restarted: set[Any] = set()     # nodes restarted since the last check
        # called with (node id, Ready) after every step a node takes by hand (a story prints there)
        self.observer: Callable[[Any, Ready], None] | None = None

    @property
    def pending(self) -> list[Any]:
        """The messages in flight on the hand-stepped queue, oldest first."""
        return self.net.pending

    @property
    def blocked(self) -> set[tuple[Any, Any]]:
        """The cut links (source, destination)."""
        return self.net.blocked

    # ------------------------------------------------------------------ what a protocol provides
    @abstractmethod
    def node_ids(self) -> Sequence[Any]: ...

    @abstractmethod
    def node(self, node_id: Any) -> Node: ...

    def route(self, node_id: Any, ready: Ready) -> Ready:
        """Finish a node's step (the protocol's composite actions, ghosts); default: unchanged."""
        return ready

    @abstractmethod
    def violations(self) -> list[Violation]:
        """Every invariant over the current state (``self.restarted`` names the nodes restarted
        since the last check, whose volatile state may have gone back)."""

    def describe(self) -> str:
        return "\n".join(str(getattr(self.node(i), "describe", lambda: i)()) for i in self.node_ids())

    def next_deadline(self, node_id: Any) -> int | None:
        return self.node(node_id).next_deadline()

    def source(self, message: Any) -> Any:
        return message.source

    def dest(self, message: Any) -> Any:
        return message.dest

    # ------------------------------------------------------------------ stepping
    def process(self, node_id: Any, inp: Any) -> Ready:
        """Node ``node_id`` takes ``inp`` at ``now``; the protocol finishes the step.  Nothing is
        sent: the caller's network takes ``Ready.messages``."""
        return self.route(node_id, self.node(node_id).step(inp, self.now))

    def step(self, node_id: Any, inp: Any) -> Ready:
        """``process``, then the messages go on the queue and the observer sees the step."""
        ready = self.process(node_id, inp)
        self.net.send(ready.messages)
        if self.observer is not None and ready:
            self.observer(node_id, ready)
        return ready

    def trigger(self, node_id: Any, handler: Callable[..., Any], **args: Any) -> Ready:
        """Force one action at a node (refused, with no step, when it is not enabled there)."""
        return self.step(node_id, Trigger(handler, args))

    def fire_timers(self, node_id: Any, limit: int = 64) -> list[str]:
        """Every internal or timer action of ``node_id`` enabled at ``now``, one ``Tick`` at a time;
        the spec actions taken."""
        fired: list[str] = []
        for _ in range(limit):
            ready = self.step(node_id, TICK)
            if not ready.steps:
                break
            fired.append(ready.steps[0].action)
        return fired

    def check(self) -> None:
        """Every invariant; raises ``InvariantViolation`` naming the first broken one."""
        self.steps += 1
        found = self.violations()
        self.restarted = set()
        if found:
            raise InvariantViolation(found[0], self.steps, self.describe(), found)

    # ------------------------------------------------------------------ the hand-stepped network
    def deliver(self, index: int, keep_copy: bool = False) -> Any | None:
        """Deliver the ``index``-th message in flight (modulo their number) and let its receiver
        take what became enabled; ``keep_copy``: a copy stays in flight (a duplicate).  A message
        on a cut link is lost instead.  Returns the message, or None."""
        pending = self.net.pending
        if not pending:
            return None
        index %= len(pending)
        msg = pending[index] if keep_copy else pending.pop(index)
        if self.net.cut((self.source(msg), self.dest(msg))):
            if keep_copy:
                pending.pop(index)
            return None
        self.step(self.dest(msg), msg)
        self.fire_timers(self.dest(msg))
        return msg

    def deliver_all(self) -> None:
        """One round of a fair network: deliver everything in flight now (what is sent meanwhile
        waits for the next round; a message on a cut link is lost), then every node takes the
        actions that became enabled."""
        batch, self.net.pending = self.net.pending, []
        for msg in batch:
            if not self.net.cut((self.source(msg), self.dest(msg))):
                self.step(self.dest(msg), msg)
        for n in self.node_ids():
            self.fire_timers(n)

    def advance(self, ms: int) -> None:
        """Move the clock by ``ms``; every node takes the timer actions that came due."""
        self.now += ms
        for n in self.node_ids():
            self.fire_timers(n)

    def drop(self, index: int) -> Any | None:
        """The network loses the ``index``-th message in flight."""
        pending = self.net.pending
        return pending.pop(index % len(pending)) if pending else None

    def duplicate(self, index: int) -> Any | None:
        """A second copy of the ``index``-th message in flight, delivered later."""
        pending = self.net.pending
        if not pending:
            return None
        msg = pending[index % len(pending)]
        pending.append(msg)
        return msg

    def delay(self, index: int) -> Any | None:
        """The ``index``-th message in flight goes to the back of the queue."""
        pending = self.net.pending
        if not pending:
            return None
        msg = pending.pop(index % len(pending))
        pending.append(msg)
        return msg

    def partition(self, group: Iterable[Any]) -> None:
        """Cut every link between ``group`` and the other nodes (both directions)."""
        g = set(group)
        ids = self.node_ids()
        self.net.blocked |= {(a, b) for a in ids for b in ids if (a in g) != (b in g)}

    def isolate(self, node_id: Any) -> None:
        """Cut ``node_id`` off from every other node, replacing any other cut."""
        self.net.blocked.clear()
        self.partition({node_id})

    def heal(self) -> None:
        self.net.blocked.clear()
