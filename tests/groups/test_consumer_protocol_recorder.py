"""The consumer-protocol recorder (kraft/groups/consumer_protocol/sim.py, NetworkedWorld) and a
duplicated heartbeat: once one copy is delivered, the copy still on the wire is not in the spec's
network (the spec's ``msgs`` is a set and TCP never delivers twice), so no spec step may name it:
trace conformance would reject a step on a message the spec no longer has (docs/conformance.md,
"The consumer protocol")."""

from __future__ import annotations

from kraft.core.step import TICK
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.messages import Heartbeat, HeartbeatResponse
from kraft.groups.consumer_protocol.protocol import COORDINATOR
from kraft.groups.consumer_protocol.sim import NetworkedWorld


def _heartbeat_delivered_and_copied() -> NetworkedWorld:
    """c1 joins; its first heartbeat is duplicated and one copy delivered (the response and the
    other copy are in flight)."""
    w = NetworkedWorld(ProtocolConfig(), ("c1",))
    w.join("c1")
    w.step("c1", TICK)
    (hb,) = w.net.pending
    w.net.pending.append(hb)
    w.step(COORDINATOR, w.net.pending.pop(0))
    assert [type(e.payload) for e in w.net.pending] == [Heartbeat, HeartbeatResponse]
    return w


def test_a_delivered_heartbeats_copy_overtaken_by_a_newer_connection_is_no_spec_drop():
    w = _heartbeat_delivered_and_copied()
    w.crash("c1")   # ClientSessionTimeout: a new connection
    w.restart("c1")
    assert [s.action for s in w.step("c1", TICK).steps] == ["SendHeartbeat"]
    new = next(e for e in w.net.pending if isinstance(e.payload, Heartbeat) and e.payload.conn == 1)
    w.net.pending.remove(new)
    ready = w.step(COORDINATOR, new)
    assert [s.action for s in ready.steps] == ["HandleHeartbeat"]
    assert not any(isinstance(e.payload, Heartbeat) and e.payload.conn == 0 for e in w.net.pending)


def test_a_request_timeout_with_only_a_delivered_copy_on_the_wire_is_no_zombie():
    w = _heartbeat_delivered_and_copied()
    w.net.pending[:] = [e for e in w.net.pending if not isinstance(e.payload, HeartbeatResponse)]
    w.now += w.config.request_timeout_ms
    assert [s.action for s in w.step("c1", TICK).steps] == ["RequestTimeout"]


def test_two_copies_of_an_overtaken_heartbeat_are_one_spec_drop():
    """Neither copy delivered: the spec has the heartbeat once, so overtaking both copies is one
    DropMessage."""
    w = NetworkedWorld(ProtocolConfig(), ("c1",))
    w.join("c1")
    w.step("c1", TICK)
    (hb,) = w.net.pending
    w.net.pending.append(hb)
    w.crash("c1")   # ClientSessionTimeout: a new connection
    w.restart("c1")
    w.step("c1", TICK)
    new = next(e for e in w.net.pending if e.payload.conn == 1)
    w.net.pending.remove(new)
    ready = w.step(COORDINATOR, new)
    assert [s.action for s in ready.steps] == ["DropMessage", "HandleHeartbeat"]
    assert not any(e.payload.conn == 0 for e in w.net.pending)


def test_two_copies_of_a_response_lost_at_a_request_timeout_are_one_spec_drop():
    """The response is duplicated and neither copy delivered when the request times out: the
    spec has it once, so the timeout loses it once (DropMessage) before RequestTimeout."""
    w = NetworkedWorld(ProtocolConfig(), ("c1",))
    w.join("c1")
    w.step("c1", TICK)
    (hb,) = w.net.pending
    w.step(COORDINATOR, w.net.pending.pop(0))
    (resp,) = w.net.pending
    w.net.pending.append(resp)
    w.now += w.config.request_timeout_ms
    assert [s.action for s in w.step("c1", TICK).steps] == ["DropMessage", "RequestTimeout"]
