"""The step surface of the coordinator and the consumer (kraft.core.step): dispatch by message type
through the declaration, spec steps named by their handlers, the composed TICK, Trigger."""

from __future__ import annotations

import pytest

from kraft.core.step import TICK, Trigger
from kraft.groups.consumer import GroupConsumer
from kraft.groups.coordinator import COORDINATOR, GroupConfig, GroupCoordinator
from kraft.groups.messages import ConsumerPhase, Errors, JoinGroup, JoinGroupResponse
from kraft.groups.protocol import PROTOCOL
from kraft.groups.world import GroupWorld


def names(ready) -> list[str]:
    return [s.action for s in ready.steps]


def test_message_dispatch_and_step_names_come_from_the_declaration() -> None:
    co = GroupCoordinator("g", GroupConfig())
    r = co.step(JoinGroup("c1", 1, None, None, frozenset()), 0)
    assert names(r) == [PROTOCOL.spec_name(GroupCoordinator.handle_join_group)]
    assert r.steps[0].node == COORDINATOR
    (resp,) = r.messages
    assert resp.error == Errors.MEMBER_ID_REQUIRED
    r = co.step(JoinGroup("c1", 1, resp.member, None, frozenset()), 0)  # completes the join at once
    assert names(r) == [PROTOCOL.spec_name(GroupCoordinator.handle_join_group),
                        PROTOCOL.spec_name(GroupCoordinator.complete_join)]


def test_the_declaration_binds_the_node_classes_themselves() -> None:
    """attrs completes the node classes in place (not slotted), so the classes the declaration
    bound when they were created are the ones in use, and their methods are its handlers."""
    assert PROTOCOL._actors == {"coordinator": GroupCoordinator, "consumer": GroupConsumer}
    assert PROTOCOL.handler("CompleteJoin") is GroupCoordinator.complete_join
    assert PROTOCOL.for_handler(GroupConsumer.handle_sync_group_response).spec == "HandleSyncGroupResponse"


def test_a_message_for_the_other_side_is_refused_clearly() -> None:
    co = GroupCoordinator("g", GroupConfig())
    with pytest.raises(TypeError, match="GroupCoordinator cannot handle JoinGroupResponse"):
        co.step(JoinGroupResponse("c1", 1, Errors.NONE, "c1-1", 1, "c1-1", ()), 0)
    c = GroupConsumer("c1", GroupConfig())
    with pytest.raises(TypeError, match="GroupConsumer cannot handle JoinGroup"):
        c.step(JoinGroup("c1", 1, None, None, frozenset()), 0)


def test_tick_takes_the_timers_due_now_in_one_composed_step() -> None:
    """An owning consumer whose lease ran out loses its partitions and rejoins in one step; a
    second TICK at the same instant finds nothing due."""
    w = GroupWorld(GroupConfig(topics=(("t", 2),)), (("c1", None),))
    w.start()
    w.settle()
    c = w.consumers["c1"]
    assert c.phase == ConsumerPhase.STABLE and c.owned
    late = c.lease_until
    r = c.step(TICK, late)
    assert names(r) == [PROTOCOL.spec_name(GroupConsumer.client_session_timeout),
                        PROTOCOL.spec_name(GroupConsumer.send_join_group)]
    assert not c.owned and len(r.messages) == 1
    assert not c.step(TICK, late)


def test_trigger_forces_an_action_and_returns_its_reply() -> None:
    w = GroupWorld(GroupConfig(topics=(("t", 2),)), (("c1", None),))
    w.start()
    w.settle()
    c = w.consumers["c1"]
    r = c.step(Trigger(GroupConsumer.poll), w.now)
    assert not r.steps and sorted(map(str, r.reply)) == ["t-0", "t-1"]
    r = c.step(Trigger(GroupConsumer.crash), w.now)
    assert names(r) == [PROTOCOL.spec_name(GroupConsumer.crash)] and not c.up
    co = w.coordinator
    with pytest.raises(ValueError, match="only an Empty group can be deleted"):
        co.step(Trigger(GroupCoordinator.delete_group), w.now)
