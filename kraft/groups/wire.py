"""A group protocol's messages on the simulator's network: the envelope the network needs
(``source``/``dest``) and the numbering of sends, shared by both group protocols' plug-ins.

A group has one coordinator and its consumers; a request travels from the consumer at its end to
the coordinator, a response back.  Each send gets its own ``seq``; the network's duplicate of a
message shares it, which is how a plug-in discards a copy of a message already delivered (TCP
never delivers twice).
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

from kraft.core.plugin import Sim
from kraft.core.step import Ready, Tick, Trigger

COORDINATOR = "coordinator"


@attrs.frozen
class Envelope:
    """A message on the simulator's network: its ends, and one ``seq`` per send."""

    source: str
    dest: str
    payload: Any
    seq: int = 0


class Wire:
    """The ends of a group protocol's messages: ``client(m)`` is the consumer end of a message,
    ``is_request(m)`` whether it travels to the coordinator."""

    def __init__(self, client: Callable[[Any], str], is_request: Callable[[Any], bool]) -> None:
        self.client = client
        self.is_request = is_request
        self._seq = 0

    def source(self, m: Any) -> str:
        return self.client(m) if self.is_request(m) else COORDINATOR

    def dest(self, m: Any) -> str:
        return COORDINATOR if self.is_request(m) else self.client(m)

    def wrap(self, m: Any) -> Envelope:
        """``m`` in a new envelope (the next ``seq``)."""
        self._seq += 1
        return Envelope(self.source(m), self.dest(m), m, self._seq)


class OneCoordinator:
    """The node half of a group world (a ``kraft.core.world.World`` mixed in after this class): its
    ``coordinator``, its ``consumers`` by id, and its ``wire``; ``process`` narrates a delivery,
    loses a message on a closed connection (``is_open``) and hands the input to the world's
    ``_at_coordinator`` or ``_at_consumer``."""

    coordinator: Any
    consumers: dict[str, Any]
    wire: Wire
    net: Any
    narrative: list[str]

    def is_open(self, message: Any) -> bool:
        raise NotImplementedError

    def _at_coordinator(self, inp: Any) -> Ready:
        raise NotImplementedError

    def _at_consumer(self, cid: str, inp: Any) -> Ready:
        raise NotImplementedError

    def _checked(self, ready: Ready) -> Ready:
        raise NotImplementedError

    def deliver(self, index: int, keep_copy: bool = False) -> Ready:
        """Deliver the ``index``-th message in flight (modulo their number; any order: the caller
        picks); ``keep_copy``: a copy stays in flight.  What its receiver did."""
        pending = self.net.pending
        if not pending:
            return Ready()
        index %= len(pending)
        msg = pending[index] if keep_copy else pending.pop(index)
        return self._checked(self.step(self.dest(msg), msg))  # type: ignore[attr-defined]

    def process(self, node_id: str, inp: Any) -> Ready:
        """Node ``node_id`` takes ``inp`` at ``now``, finished as the protocol needs; nothing is
        sent."""
        if not isinstance(inp, (Tick, Trigger)):
            way = "from" if self.wire.is_request(inp) else "to"
            self.narrative.append(f"deliver {type(inp).__name__} {way} {self.wire.client(inp)}")
            if not self.is_open(inp):
                self.narrative.append("  (connection closed: lost)")
                return Ready()
        if node_id == COORDINATOR:
            return self._at_coordinator(inp)
        return self._at_consumer(node_id, inp)

    def node_ids(self) -> list[str]:
        return [COORDINATOR, *self.consumers]

    def node(self, node_id: str) -> Any:
        return self.coordinator if node_id == COORDINATOR else self.consumers[node_id]

    def source(self, message: Any) -> str:
        return self.wire.source(message)

    def dest(self, message: Any) -> str:
        return self.wire.dest(message)


class GroupClients:
    """The client half of a group plug-in (a ``kraft.core.plugin.SimPlugin`` mixed in after this
    class): a poll by a consumer that owns partitions, and the world's client history copied to the
    simulator's recorder."""

    world: Any
    _mirrored: int = 0

    def _owner(self, sim: Sim) -> str | None:
        """A random live consumer that owns something (None: there is none)."""
        self.world.now = sim.now
        live = sorted(c for c, x in self.world.consumers.items() if x.up and x.owned)
        return sim.rng.choice(live) if live else None

    def write(self, sim: Sim) -> None:
        """A consumer polls one record of every partition it owns."""
        c = self._owner(sim)
        if c is not None:
            self.world.poll(c)
            self._mirror_history(sim)

    def _mirror_history(self, sim: Sim) -> None:
        """Copy the world's new history operations (subscribe, assign, poll, commit) to the
        recorder, wherever they came from (a delivery, a timer, a client operation)."""
        start, self._mirrored = self._mirrored, len(self.world.history)
        if sim.recorder is None:
            return
        for op in self.world.history[start:]:
            sim.recorder.op(op["process"], op["type"], op["f"], None, op["value"], op["time"] // 1_000_000)
