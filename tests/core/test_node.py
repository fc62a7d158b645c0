"""The kit's node base class (kraft.core.node) on a toy protocol: dispatch by message type, timer
and trigger; refusal of an action that is not enabled; what a handler's return value means; the
spec step recorded with the action's declared arguments; the hand-stepped World over it."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from kraft.core.declaration import Action, Protocol
from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.node import NO_STEP, Node, Refused, requires
from kraft.core.step import TICK, Ready, SpecStep, Trigger
from kraft.core.world import World


@attrs.frozen
class Ping:
    source: int
    dest: int
    n: int


TOY = Protocol("toy", "Toy", (
    Action("Serve", args=("v",)),
    Action("HandlePing", Ping, ("m",)),
    Action("Beat"),
    Action("Park", args=("k",)),
    Action("Decline"),
    Action("Lose", args=("m",), actor="network", handled=False),
), (), ())


class ToyNode(Node, declaration=TOY):
    def __init__(self, node_id: int) -> None:
        self.id = node_id
        self.up = True
        self.count = 0
        self.beat_due = False
        self.parked: list[int] = []

    def due(self, now: int) -> Any:
        return (type(self).beat, {}) if self.beat_due else None

    @requires(lambda n: n.up, "down")
    def serve(self, v: int, now: int, extra: str = "") -> int:
        """Spec action Serve."""
        self.count += v
        return self.count

    def handle_ping(self, m: Ping, now: int) -> None:
        """Spec action HandlePing."""
        if m.n > 0:
            self.send(Ping(self.id, m.source, m.n - 1))

    def beat(self, now: int) -> None:
        """Spec action Beat."""
        self.beat_due = False
        self.took(ToyNode.beat)
        self.took(ToyNode.serve, v=0)   # a composite: Beat, then Serve

    def park(self, k: int, now: int) -> Any:
        """Spec action Park."""
        self.parked.append(k)
        return NO_STEP

    def decline(self, now: int) -> bool:
        """Spec action Decline."""
        self.count = -1
        self.send(Ping(self.id, self.id, 0))
        return False


def test_a_message_is_dispatched_by_its_type() -> None:
    r = ToyNode(1).step(Ping(2, 1, 1), now=0)
    assert r.steps == (SpecStep("HandlePing", 1, {"m": Ping(2, 1, 1)}),)
    assert r.messages == (Ping(1, 2, 0),)


def test_a_trigger_records_only_the_declared_arguments_and_replies() -> None:
    node = ToyNode(1)
    r = node.step(Trigger(ToyNode.serve, {"v": 3, "extra": "x"}), now=0)
    assert r.steps == (SpecStep("Serve", 1, {"v": 3}),) and r.reply == 3


def test_a_trigger_of_an_action_not_enabled_is_refused_without_a_step() -> None:
    node = ToyNode(1)
    node.up = False
    r = node.step(Trigger(ToyNode.serve, {"v": 3}), now=0)
    assert not r.steps and isinstance(r.reply, Refused)
    assert (r.reply.action, r.reply.node, r.reply.why) == ("Serve", 1, "down")
    assert node.count == 0   # the handler did not run


def test_a_tick_takes_the_due_action_and_a_handler_may_record_a_composite() -> None:
    node = ToyNode(1)
    assert node.step(TICK, now=0) == Ready()
    node.beat_due = True
    r = node.step(TICK, now=5)
    assert [s.action for s in r.steps] == ["Beat", "Serve"]


def test_no_step_keeps_the_effects_and_false_discards_everything() -> None:
    node = ToyNode(1)
    r = node.step(Trigger(ToyNode.park, {"k": 7}), now=0)
    assert r == Ready() and node.parked == [7]
    r = node.step(Trigger(ToyNode.decline), now=0)
    assert r == Ready()   # not taken: its message is not sent


class ToyWorld(World):
    def __init__(self) -> None:
        super().__init__()
        self.nodes = {1: ToyNode(1), 2: ToyNode(2)}
        self.limit = 100

    def node_ids(self) -> list[int]:
        return [1, 2]

    def node(self, node_id: int) -> ToyNode:
        return self.nodes[node_id]

    def violations(self) -> list[Violation]:
        return [Violation("Bounded", f"count {n.count}") for n in self.nodes.values() if n.count > self.limit]


def test_the_world_delivers_drops_duplicates_and_cuts_links() -> None:
    w = ToyWorld()
    w.step(1, Ping(2, 1, 3))          # 1 takes a ping from 2 and answers on the queue
    assert w.pending == [Ping(1, 2, 2)]
    w.duplicate(0)
    assert w.pending == [Ping(1, 2, 2), Ping(1, 2, 2)]
    w.deliver(0)
    assert w.pending == [Ping(1, 2, 2), Ping(2, 1, 1)]
    w.drop(0)
    w.isolate(1)
    assert w.deliver(0) is None and w.pending == []   # lost on the cut link
    w.heal()
    assert w.trigger(1, ToyNode.serve, v=5).reply == 5


def test_the_world_check_names_the_broken_invariant() -> None:
    w = ToyWorld()
    w.trigger(1, ToyNode.serve, v=101)
    with pytest.raises(InvariantViolation, match="invariant Bounded violated after event 1: count 101"):
        w.check()
