"""UpdateRaftVoter: the voter's decision to send, the leader's checks one refusal at a time in
Kafka's order (``KafkaRaftClient.handleUpdateVoterRequest``, ``UpdateVoterHandler``), the
request/response through the codec, and both in the node: the voter's update-voter period and the
leader's one voter change at a time."""

from __future__ import annotations

import attrs
import pytest

from kraft.core.step import Ready
from kraft.log.codec import decode, encode
from kraft.quorum.config import Role
from kraft.quorum.messages import UpdateRaftVoterRequest, UpdateRaftVoterResponse
from kraft.quorum.node import ERROR_NAMES, QuorumNode
from kraft.quorum.update_voter import (
    ERROR_CODES,
    LeaderView,
    handle_update_voter,
    needs_update,
    serve,
    update_voter_request,
)
from kraft.quorum.voters import Endpoint, ReplicaKey, VoterNode, VoterSet
from kraft.quorum.world import QuorumWorld

DIR_1 = "AAAAAAAAAAAAAAAAAAAAAQ"
DIR_2 = "AAAAAAAAAAAAAAAAAAAAAg"
OTHER_DIR = "AAAAAAAAAAAAAAAAAAAAAw"
OLD = (Endpoint("CONTROLLER", "host2", 9093),)
NEW = (Endpoint("CONTROLLER", "host2-moved", 9094),)
V1 = VoterNode(ReplicaKey(1, DIR_1), (Endpoint("CONTROLLER", "host1", 9093),), 0, 1)
V2_OLD = VoterNode(ReplicaKey(2, DIR_2), OLD, 0, 1)
V2_NEW = VoterNode(ReplicaKey(2, DIR_2), NEW, 0, 1)
VOTERS = VoterSet((V1, V2_OLD))
LEADER = LeaderView(cluster_id="c", local_id=1, epoch=5, is_leader=True, listener="CONTROLLER",
                    high_watermark=10, kraft_version=1, last_voters_offset=3, voters=VOTERS)


def _request(node: VoterNode = V2_NEW, epoch: int = 5, **fields: object) -> dict:
    return {**update_voter_request("c", epoch, node), **fields}


def test_a_voter_whose_endpoints_moved_sends_and_the_leader_voter_set_follows() -> None:
    assert needs_update(VOTERS, V2_NEW, kraft_version=1)
    error, updated = handle_update_voter(LEADER, _request())
    assert error == "NONE"
    assert updated == VoterSet((V1, V2_NEW))
    assert not needs_update(updated, V2_NEW, kraft_version=1)  # nothing more to send


def test_no_update_sent_when_unchanged_unknown_or_kraft_version_0() -> None:
    assert not needs_update(VOTERS, V2_OLD, kraft_version=1)
    assert not needs_update(VOTERS, V2_NEW, kraft_version=0)
    assert not needs_update(VOTERS, VoterNode(ReplicaKey(3, DIR_2), NEW), kraft_version=1)
    assert not needs_update(VOTERS, VoterNode(ReplicaKey(2, OTHER_DIR), NEW, 0, 1), kraft_version=1)


def test_a_new_supported_range_alone_needs_an_update() -> None:
    assert needs_update(VOTERS, attrs.evolve(V2_OLD, max_kraft_version=2), kraft_version=1)


@pytest.mark.parametrize("view, request_fields, error", [
    ({}, {"clusterId": "other"}, "INCONSISTENT_CLUSTER_ID"),
    ({}, {"currentLeaderEpoch": 4}, "FENCED_LEADER_EPOCH"),
    ({}, {"currentLeaderEpoch": 6}, "UNKNOWN_LEADER_EPOCH"),
    ({"is_leader": False}, {}, "NOT_LEADER_OR_FOLLOWER"),
    ({}, {"voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"}, "INVALID_REQUEST"),
    ({}, {"listeners": [{"name": "OTHER", "host": "h", "port": 1}]}, "INVALID_REQUEST"),
    ({}, {"kRaftVersionFeature": {"minSupportedVersion": 1, "maxSupportedVersion": 0}}, "INVALID_REQUEST"),
    ({"operation_pending": True}, {}, "REQUEST_TIMED_OUT"),
    ({"high_watermark": None}, {}, "REQUEST_TIMED_OUT"),
    ({"kraft_version": 0}, {}, "UNSUPPORTED_VERSION"),
    ({"last_voters_offset": 10}, {}, "REQUEST_TIMED_OUT"),  # a voter change still uncommitted
    ({"last_voters_offset": None}, {}, "REQUEST_TIMED_OUT"),
    ({}, {"kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 0}}, "INVALID_REQUEST"),
    ({}, {"voterDirectoryId": OTHER_DIR}, "VOTER_NOT_FOUND"),
    ({}, {"voterId": 3}, "VOTER_NOT_FOUND"),
])
def test_each_refusal(view: dict, request_fields: dict, error: str) -> None:
    assert handle_update_voter(attrs.evolve(LEADER, **view), _request(**request_fields)) == (error, None)


def test_checks_run_in_kafkas_order() -> None:
    """The request checks come before the leader's; a pending operation before kraft.version;
    the supported range before the voter lookup."""
    not_leader_pending = attrs.evolve(LEADER, is_leader=False, operation_pending=True)
    assert handle_update_voter(not_leader_pending, _request())[0] == "NOT_LEADER_OR_FOLLOWER"
    assert handle_update_voter(attrs.evolve(LEADER, operation_pending=True, kraft_version=0),
                               _request())[0] == "REQUEST_TIMED_OUT"
    bad_range_unknown = _request(voterId=3, kRaftVersionFeature={"minSupportedVersion": 0, "maxSupportedVersion": 0})
    assert handle_update_voter(LEADER, bad_range_unknown)[0] == "INVALID_REQUEST"


def test_a_second_change_is_refused_while_the_first_is_uncommitted() -> None:
    """The first update is appended at the end offset; until the high watermark passes it, the
    next update (here the other voter's) times out; once committed it goes ahead."""
    _, first = handle_update_voter(LEADER, _request())
    appended_at = 12
    pending = attrs.evolve(LEADER, voters=first, last_voters_offset=appended_at)
    v1_moved = attrs.evolve(V1, endpoints=(Endpoint("CONTROLLER", "host1-moved", 9093),))
    assert handle_update_voter(pending, _request(v1_moved)) == ("REQUEST_TIMED_OUT", None)
    committed = attrs.evolve(pending, high_watermark=appended_at + 1)
    assert handle_update_voter(committed, _request(v1_moved)) == ("NONE", VoterSet((v1_moved, V2_NEW)))


def test_request_and_response_go_through_the_codec() -> None:
    raw = encode("UpdateRaftVoterRequest", _request(), 0)
    response, updated = serve(LEADER, raw)
    fields, _ = decode("UpdateRaftVoterResponse", 0, response)
    assert fields["errorCode"] == ERROR_CODES["NONE"]
    assert fields["currentLeader"]["leaderId"] == 1 and fields["currentLeader"]["leaderEpoch"] == 5
    assert updated == VoterSet((V1, V2_NEW))
    refused, none = serve(attrs.evolve(LEADER, is_leader=False), raw)
    assert decode("UpdateRaftVoterResponse", 0, refused)[0]["errorCode"] == ERROR_CODES["NOT_LEADER_OR_FOLLOWER"]
    assert none is None


def test_the_updated_voter_set_round_trips_through_the_voters_record() -> None:
    _, updated = handle_update_voter(LEADER, _request())
    assert VoterSet.from_voters_record(updated.to_voters_record()) == updated


# --- in the node: the voter's period, the leader's one change at a time ----------------------------

def _elected_world_with_2_moved() -> QuorumWorld:
    """Leader 1 of voters 1-3 with committed records; 2 restarted on port 19093 and following."""
    w = QuorumWorld(3)
    w.trigger(1, QuorumNode.timeout)
    w.run(1000)
    assert w.leader() == 1
    w.restart_with_new_port(2, 19093)
    w.run(200)
    assert w.nodes[2].role is Role.FOLLOWER and w.nodes[2].needs_voter_update()
    return w


def _update_steps(w: QuorumWorld, ms: int) -> list[tuple[str, int, dict]]:
    """Run ``ms``; the UpdateRaftVoter steps taken (spec or not), in order."""
    seen: list[tuple[str, int, dict]] = []
    w.observer = lambda node, ready: seen.extend(
        (s.action, s.node, dict(s.args)) for s in (*ready.steps, *([ready.note] if ready.note else ()))
        if "Update" in s.action)
    w.run(ms)
    return seen


def test_a_moved_voter_asks_once_its_period_expires_and_the_leader_appends() -> None:
    w = _elected_world_with_2_moved()
    period = 3 * w.config.fetch_timeout_ms
    assert _update_steps(w, period - 400) == []  # the period runs from the restart on
    seen = _update_steps(w, 600)
    assert seen[:2] == [("SendUpdateRaftVoter", 2, {"d": 1}), ("UpdateVoter", 1, {"x": 2})], seen
    w.run(200)
    assert all(n.voter_nodes_at() == w.nodes[2].voter_nodes_at() for n in w.nodes.values())
    assert not w.nodes[2].needs_voter_update()
    assert _update_steps(w, period + 200) == []  # nothing more to ask


def _ask(w: QuorumWorld) -> tuple[str, Ready]:
    """Voter 2's UpdateRaftVoter request, handed to leader 1 directly: the error it answers and
    the leader's step."""
    node = w.nodes[2]
    request = encode("UpdateRaftVoterRequest", update_voter_request(None, node.current_epoch, node.local_voter_node), 0)
    ready = w.step(1, UpdateRaftVoterRequest(2, 1, request))
    [response] = [m for m in ready.messages if isinstance(m, UpdateRaftVoterResponse)]
    fields, _ = decode("UpdateRaftVoterResponse", 0, response.payload)
    return ERROR_NAMES[fields["errorCode"]], ready


def test_the_leader_refuses_an_update_while_a_voter_change_is_uncommitted() -> None:
    """One voter change at a time, whatever its kind: with the removal of 3 appended and not yet
    committed, the update is REQUEST_TIMED_OUT and appends nothing; once it is committed, the same
    request is the spec step UpdateVoter and a VotersRecord of the same voters with 2's new port."""
    w = _elected_world_with_2_moved()
    leader = w.nodes[1]
    w.trigger(1, QuorumNode.remove_voter, x=3)
    end = leader.storage.end_offset
    error, ready = _ask(w)
    assert (error, ready.steps, leader.storage.end_offset) == ("REQUEST_TIMED_OUT", (), end)
    w.run(300)
    assert leader.voters_committed() and leader.voters == (1, 2)
    error, ready = _ask(w)
    assert error == "NONE" and [(s.action, dict(s.args)) for s in ready.steps] == [("UpdateVoter", {"x": 2})]
    assert [(n.key.id, n.endpoints[0].port) for n in leader.voter_nodes_at()] == [(1, 9093), (2, 19093)]
