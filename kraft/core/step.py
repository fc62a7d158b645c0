"""The one step surface every protocol node offers (in the spirit of etcd raft's ``Step``/``Ready``).

``node.step(input, now) -> Ready``.  An input is one of

* a protocol message (delivered by the network);
* ``Tick()``: the virtual clock reached ``now``; the node takes the one internal or timer action
  that is enabled, if any (call again until a ``Ready`` with no steps comes back);
* ``Trigger(handler, args)``: the environment forces one action, named by the handler *function*
  of the protocol declaration (a client request, a crash-restart, an operator's resignation, a
  timer the test wants to fire now).  No string dispatch: the handler is the function object.

A ``Ready`` holds everything the step produced: the spec steps taken (for the trace recorder and the
conformance checker), the messages to send, the writes the node made to its storage (and whether they
were made durable before the messages may leave), the records that became committed, and the reply
to a client request.  Nodes keep no outbox, call no callbacks and have no state-changing queries.

Storage is a port handed to the node at construction (``kraft.log`` over a ``MemoryFS`` or real
files), so a crash loses exactly the unsynced bytes; ``Ready.writes`` reports what the step wrote
rather than asking the driver to write it (a deliberate difference from etcd: the durability
points are part of the protocol we check, so the node makes them itself and the driver can see them).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import attrs


@attrs.frozen
class Tick:
    """Fire the internal/timer action enabled at the step's ``now``, if any."""


TICK = Tick()


@attrs.frozen
class Trigger:
    """Force one action: ``handler`` is the function named in the protocol declaration."""

    handler: Callable[..., Any]
    args: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class SpecStep:
    """One spec action taken: the TLA+ action name, the acting node, the action's arguments."""

    action: str
    node: Any
    args: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Write:
    """One write to the node's storage: ``kind`` is ``"state"`` (quorum/election state), ``"append"``,
    ``"truncate"`` or ``"flush"``; ``detail`` what was written (offsets, values)."""

    kind: str
    detail: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Ready:
    """What one ``step`` produced.  Falsy when nothing happened at all."""

    steps: tuple[SpecStep, ...] = ()
    messages: tuple[Any, ...] = ()
    writes: tuple[Write, ...] = ()
    synced: bool = True          # every write above was durable before ``messages`` were handed out
    committed: tuple[tuple[int, Any], ...] = ()   # (offset, record) that became committed, in order
    reply: Any = None            # answer to a Trigger of a client request (offset, error, ...)
    note: SpecStep | None = None  # a step with no spec counterpart (recorded with "spec": false)

    def __bool__(self) -> bool:
        return bool(self.steps or self.messages or self.writes or self.committed or self.note
                    or self.reply is not None)

    def then(self, other: "Ready") -> "Ready":
        """Both steps' effects, in order (``reply``/``note`` of the later one win when set)."""
        return Ready(self.steps + other.steps, self.messages + other.messages, self.writes + other.writes,
                     self.synced and other.synced, self.committed + other.committed,
                     other.reply if other.reply is not None else self.reply, other.note or self.note)


class ReadyBuilder:
    """A node's scratch space while it takes one step (reset at every ``step``)."""

    __slots__ = ("steps", "messages", "writes", "committed", "synced", "note", "args")

    def __init__(self) -> None:
        self.steps: list[SpecStep] = []
        self.messages: list[Any] = []
        self.writes: list[Write] = []
        self.committed: list[tuple[int, Any]] = []
        self.synced = True
        self.note: SpecStep | None = None
        # arguments of the step that the handler learnt while taking it (added to the recorded
        # spec step when they are among the action's declared arguments)
        self.args: dict[str, Any] = {}

    def wrote(self, kind: str, **detail: Any) -> None:
        """Report a storage write (appends stay unsynced until a flush in the same step)."""
        self.writes.append(Write(kind, detail))
        if kind == "append":
            self.synced = False
        elif kind == "flush":
            self.synced = True

    def build(self, reply: Any = None) -> Ready:
        return Ready(tuple(self.steps), tuple(self.messages), tuple(self.writes), self.synced,
                     tuple(self.committed), reply, self.note)
