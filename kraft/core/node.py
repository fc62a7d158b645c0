"""The node base class: the one ``step(input, now) -> Ready`` dispatch every protocol node shares.

A node class names the protocol it implements and which of its actors it is::

    class QuorumNode(Node, declaration=PROTOCOL):           # actor "node"
    class GroupConsumer(Node, declaration=PROTOCOL, actor="consumer"):

and defines one method per action of that actor, named after the spec action in snake case
(``HandleFetchRequest`` -> ``handle_fetch_request``); the declaration checks that they all exist
when the class is defined.  ``step`` turns an input into one handler call:

* a message: the action that consumes its type (``route`` may refine that, or decline it);
* ``Tick()``: the internal or timer action ``due`` picks at ``now`` (none: nothing happens);
* ``Trigger(handler, args)``: that handler, if its enabling condition (``requires``) holds;
  otherwise nothing happens and the ``Ready``'s reply is a ``Refused``.

A handler is called as ``handler(self, now=now, **args)`` (a message is the argument ``m``).  What
it returns decides the step:

* ``False``: the action was not taken after all (its condition depends on the input): an empty
  ``Ready``, whatever the handler noted;
* ``NO_STEP``: it acted (state, messages) but took no spec step (a request parked for later);
* anything else is the reply (``None``: no reply).

The spec step is recorded for the handler's action with the action's declared arguments, unless
the handler recorded steps itself (``took``: an action that completes others at once, such as a
JoinGroup that completes the join phase) or a note of a step with no spec counterpart (``noted``).
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, TypeVar

from kraft.core.declaration import Protocol
from kraft.core.step import Ready, ReadyBuilder, SpecStep, Tick, Trigger

F = TypeVar("F", bound=Callable[..., Any])
Pick = tuple[Callable[..., Any], dict[str, Any]]

EMPTY = Ready()


class _NoStep:
    def __repr__(self) -> str:
        return "NO_STEP"


NO_STEP: Any = _NoStep()


class Refused(Exception):
    """The reply to a ``Trigger`` of an action that is not enabled at the node (it is a value in
    ``Ready.reply``, never raised by ``step``)."""

    def __init__(self, action: str, node: Any, why: str) -> None:
        super().__init__(f"{action} refused at {node}: {why}")
        self.action, self.node, self.why = action, node, why


def requires(condition: Callable[[Any], bool], why: str) -> Callable[[F], F]:
    """Declare a handler's enabling condition (a predicate of the node): a ``Trigger`` of the
    handler while it is false is refused, and no step is taken."""

    def mark(fn: F) -> F:
        fn.__kraft_requires__ = (condition, why)  # type: ignore[attr-defined]
        return fn

    return mark


def function_of(handler: Callable[..., Any]) -> Callable[..., Any]:
    """A bound method's function (a ``Trigger`` may name either)."""
    return getattr(handler, "__func__", handler)


class Node:
    """Base class of every protocol node (see the module docstring)."""

    declaration: ClassVar[Protocol]
    actor: ClassVar[str] = "node"
    id: Any
    _rb: ReadyBuilder

    def __init_subclass__(cls, *, declaration: Protocol | None = None, actor: str = "node",
                          **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if declaration is not None:
            cls.declaration = declaration
            cls.actor = actor
            declaration.bind(actor, cls)

    # ------------------------------------------------------------------ what a node provides
    def due(self, now: int) -> Pick | None:
        """The internal or timer action enabled at ``now`` (handler, arguments), if any."""
        return None

    def route(self, message: Any, now: int) -> Pick | None:
        """The handler of a delivered message (default: the action consuming its type); None: the
        node does not take it (anything noted meanwhile is kept)."""
        action = self.declaration.for_message(type(message))
        if action.actor != self.actor:
            raise TypeError(f"{type(self).__name__} cannot handle {type(message).__name__}")
        return self.declaration.handler(action), {"m": message}

    def next_deadline(self) -> int | None:
        """The earliest virtual time at which a ``Tick`` may take an action without other input."""
        return None

    # ------------------------------------------------------------------ the step surface
    def step(self, inp: Any, now: int) -> Ready:
        """Take one input at virtual time ``now``; return what it produced."""
        self._rb = ReadyBuilder()
        if isinstance(inp, Tick):
            pick = self.due(now)
        elif isinstance(inp, Trigger):
            pick = function_of(inp.handler), dict(inp.args)
            refusal = self.refusal(pick[0])
            if refusal is not None:
                return Ready(reply=refusal)
        else:
            pick = self.route(inp, now)
        if pick is None:
            return self._rb.build()
        return self._take(pick[0], pick[1], now)

    def refusal(self, handler: Callable[..., Any]) -> Refused | None:
        """Why a ``Trigger`` of ``handler`` is refused now, or None if it is enabled."""
        required = getattr(function_of(handler), "__kraft_requires__", None)
        if required is None or required[0](self):
            return None
        name = self.declaration.spec_name(handler) if self.declaration.takes(handler) else handler.__name__
        return Refused(name, self.id, required[1])

    def _take(self, handler: Callable[..., Any], args: dict[str, Any], now: int) -> Ready:
        reply = handler(self, now=now, **args)
        if reply is False:
            return EMPTY
        rb = self._rb
        if reply is NO_STEP:
            return rb.build()
        if not rb.steps and rb.note is None and self.declaration.takes(handler):
            action = self.declaration.for_handler(handler)
            given = {**args, **rb.args}
            rb.steps.append(SpecStep(action.spec, self.id, {k: v for k, v in given.items() if k in action.args}))
        return rb.build(reply)

    # ------------------------------------------------------------------ for handlers
    def took(self, handler: Callable[..., Any], **args: Any) -> None:
        """Record that this step took the spec action of ``handler`` (in order, after any other)."""
        self._rb.steps.append(SpecStep(self.declaration.spec_name(handler), self.id, args))

    def noted(self, name: str, **args: Any) -> None:
        """Record a step with no spec counterpart (a trace line with ``"spec": false``)."""
        self._rb.note = SpecStep(name, self.id, args)

    def lost(self, message: Any) -> None:
        """Record that, for the spec, the network lost ``message`` (the node discards it unseen:
        a stale response, a request nobody will answer)."""
        self._rb.steps.append(SpecStep(self.declaration.drop_message, None, {"m": message}))

    def send(self, *messages: Any) -> None:
        self._rb.messages.extend(messages)
