"""The replication nodes on the kit's dispatch (kraft.core.node): a Trigger of a disabled action is
refused and takes no step, a stopped broker loses what reaches it (the spec's DropMessage) and
takes no timer action, a heartbeat takes the controller action the broker's state calls for, and
the steps with no spec counterpart are notes."""

from __future__ import annotations

from kraft.controller.controller import Controller
from kraft.core.node import Refused
from kraft.core.step import TICK, SpecStep, Trigger
from kraft.log import MemoryFS
from kraft.replication.broker import Broker
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import BrokerHeartbeatRequest, FetchResponse
from kraft.replication.protocol import PROTOCOL

CFG = ReplicationConfig()


def nodes() -> tuple[Controller, Broker]:
    c = Controller((1, 2, 3), CFG)
    return c, Broker(2, (1, 2, 3), CFG, MemoryFS(), c.records)


def test_a_disabled_action_is_refused_without_a_step() -> None:
    _, b = nodes()
    r = b.step(Trigger(Broker.restart_broker), 0)          # it runs: nothing to restart
    assert isinstance(r.reply, Refused) and r.reply.action == "RestartBroker" and not r.steps
    assert b.step(Trigger(Broker.unclean_shutdown), 0).steps[0] == SpecStep("UncleanShutdown", 2, {"k": 0})
    r = b.step(Trigger(Broker.restart_broker), 0)
    assert [s.action for s in r.steps] == ["RestartBroker"] and b.running


def test_a_stopped_broker_loses_messages_and_takes_no_timer_action() -> None:
    _, b = nodes()
    b.step(Trigger(Broker.unclean_shutdown), 0)
    m = FetchResponse(1, 2, "NONE", 0, 0, (), 0)
    r = b.step(m, 10)
    assert r.steps == (SpecStep(PROTOCOL.drop_message, None, {"m": m}),) and not b.entries
    assert not b.step(TICK, 10_000)


def test_a_heartbeat_takes_the_controller_action_its_broker_state_calls_for() -> None:
    c, _ = nodes()
    r = c.step(BrokerHeartbeatRequest(2, c.image.broker_epoch(2), 4), 0)
    assert not r.steps and r.note == SpecStep("BrokerHeartbeat", 0, {"b": 2})
    r = c.step(BrokerHeartbeatRequest(2, c.image.broker_epoch(2), 4, wantShutDown=True), 0)
    assert [s.action for s in r.steps] == ["ControlledShutdown"] and c.image.broker_state(2) == "ControlledShutdown"
    r = c.step(BrokerHeartbeatRequest(2, 99, 4), 0)
    assert not r.steps and r.note == SpecStep("BrokerHeartbeatStale", 0, {"b": 2})


def test_a_broker_fenced_in_its_controlled_shutdown_is_not_unfenced() -> None:
    """ClusterControlManager keeps inControlledShutdown through a FenceBrokerRecord, and
    BrokerHeartbeatManager.currentBrokerState puts CONTROLLED_SHUTDOWN before FENCED: a heartbeat
    that does not ask to shut down (one sent before the request, delivered late) unfences nothing,
    and the broker is no acceptable leader until it registers again."""
    c, _ = nodes()
    epoch = c.image.broker_epoch(2)
    c.step(BrokerHeartbeatRequest(2, epoch, 4, wantShutDown=True), 0)
    c.step(Trigger(Controller.fence_broker, {"b": 2}), 0)
    assert c.image.broker_state(2) == "FencedInShutdown" and 2 not in c.image.active()
    r = c.step(BrokerHeartbeatRequest(2, epoch, c.image.last_offset), 0)
    assert not r.steps and r.note == SpecStep("BrokerHeartbeat", 0, {"b": 2})
    assert not c.step(Trigger(Controller.unfence_broker, {"b": 2}), 0).steps
    assert c.image.broker_state(2) == "FencedInShutdown"


def test_steps_without_a_spec_action_are_notes() -> None:
    _, b = nodes()
    r = b.step(TICK, 0)
    assert not r.steps and r.note == SpecStep("heartbeat", 2, {}) and r.messages
    r = b.step(Trigger(Broker.request_shutdown), 0)
    assert r.note == SpecStep("request_shutdown", 2, {}) and b.want_shutdown
    assert isinstance(b.step(Trigger(Broker.request_shutdown), 0).reply, Refused)
