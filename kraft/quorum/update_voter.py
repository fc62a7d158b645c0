"""UpdateRaftVoter (KIP-853, API key 82): a voter tells the leader its endpoints and supported
kraft.version range, and the leader writes them into the voter set.

- the voter side is ``KafkaRaftClient.pollFollowerAsVoter``: when the update-voter period has
  expired, kraft.version supports reconfiguration and ``VoterSet.voterNodeNeedsUpdate`` says the
  latest voter set differs from the local voter node, it sends ``buildUpdateVoterRequest``;
- the leader side is ``KafkaRaftClient.handleUpdateVoterRequest`` (cluster id, leader epoch,
  request shape) followed by ``UpdateVoterHandler.handleUpdateVoterRequest`` (the leader's state),
  checked in that order; on success the leader appends the VotersRecord of
  ``VoterSet.updateVoter`` and answers at once, without waiting for the record to commit.

Requests and responses are the field dicts of ``kraft.log.schema`` and go through
``kraft.log.codec``, like the other KRaft RPCs.
"""

from __future__ import annotations

from typing import Any

import attrs

from kraft.log.codec import decode, encode
from kraft.quorum.voters import KRAFT_VERSION_1, VoterNode, VoterSet, voter_fields, voter_node

# org.apache.kafka.common.protocol.Errors
ERROR_CODES = {
    "NONE": 0,
    "NOT_LEADER_OR_FOLLOWER": 6,
    "REQUEST_TIMED_OUT": 7,
    "UNSUPPORTED_VERSION": 35,
    "INVALID_REQUEST": 42,
    "FENCED_LEADER_EPOCH": 74,
    "UNKNOWN_LEADER_EPOCH": 75,
    "INCONSISTENT_CLUSTER_ID": 104,
    "VOTER_NOT_FOUND": 127,
}


@attrs.frozen
class LeaderView:
    """What the UpdateRaftVoter checks read of the receiving replica (``QuorumState``,
    ``LeaderState``, ``KRaftControlRecordStateMachine``)."""

    cluster_id: str
    local_id: int
    epoch: int
    is_leader: bool
    listener: str  # the listener the request came in on (``channel.listenerName``)
    high_watermark: int | None = None  # None: not yet known in this epoch
    kraft_version: int = KRAFT_VERSION_1
    operation_pending: bool = False  # ``LeaderState.isOperationPending``
    last_voters_offset: int | None = None  # offset of the last VotersRecord
    voters: VoterSet = VoterSet(())


def needs_update(voters: VoterSet, local: VoterNode, kraft_version: int) -> bool:
    """``pollFollowerAsVoter``: reconfiguration supported and ``voterNodeNeedsUpdate`` (the local
    key is a voter of the latest set and its node there differs from ``local``)."""
    if kraft_version < KRAFT_VERSION_1:
        return False
    node = next((n for n in voters.nodes if n.key.id == local.key.id), None)
    return node is not None and node.is_voter(local.key) and node != local


def update_voter_request(cluster_id: str, epoch: int, local: VoterNode) -> dict[str, Any]:
    """``buildUpdateVoterRequest`` (``RaftUtil.updateVoterRequest``)."""
    return {"clusterId": cluster_id, "currentLeaderEpoch": epoch, **voter_fields(local, endpoints="listeners")}


def _request_error(view: LeaderView, req: dict[str, Any], node: VoterNode) -> str | None:
    """``KafkaRaftClient.handleUpdateVoterRequest``'s checks, then ``validateLeaderOnlyRequest``'s."""
    if req["clusterId"] is not None and req["clusterId"] != view.cluster_id:
        return "INCONSISTENT_CLUSTER_ID"
    if req["currentLeaderEpoch"] < view.epoch:
        return "FENCED_LEADER_EPOCH"
    if req["currentLeaderEpoch"] > view.epoch:
        return "UNKNOWN_LEADER_EPOCH"
    if not view.is_leader:
        return "NOT_LEADER_OR_FOLLOWER"
    if not node.key.has_directory_id:
        return "INVALID_REQUEST"
    if not any(e.name == view.listener for e in node.endpoints):
        return "INVALID_REQUEST"
    if node.min_kraft_version < 0 or node.max_kraft_version < node.min_kraft_version:
        return "INVALID_REQUEST"
    return None


def _leader_error(view: LeaderView) -> str | None:
    """``UpdateVoterHandler.handleUpdateVoterRequest``'s checks of the leader's state, in order."""
    if view.operation_pending or view.high_watermark is None:
        return "REQUEST_TIMED_OUT"
    if view.kraft_version < KRAFT_VERSION_1:
        return "UNSUPPORTED_VERSION"
    if view.last_voters_offset is None or view.last_voters_offset >= view.high_watermark:
        return "REQUEST_TIMED_OUT"  # the last VotersRecord is not committed
    return None


def handle_update_voter(view: LeaderView, req: dict[str, Any]) -> tuple[str, VoterSet | None]:
    """The error the request gets and, on ``NONE``, the voter set the leader appends as a
    VotersRecord (``LeaderState.appendVotersRecord``) before it answers."""
    node = voter_node(req, endpoints="listeners")
    error = _request_error(view, req, node) or _leader_error(view)
    if error is not None:
        return error, None
    if not node.min_kraft_version <= view.kraft_version <= node.max_kraft_version:
        return "INVALID_REQUEST", None
    updated = view.voters.update_voter(node)
    if updated is None:
        return "VOTER_NOT_FOUND", None
    return "NONE", updated


def update_voter_response(view: LeaderView, error: str) -> dict[str, Any]:
    """``RaftUtil.updateVoterResponse``: the error and the current leader and epoch (the leader's
    host and port are left empty: endpoints of the receiving replica are not modelled)."""
    leader = view.local_id if view.is_leader else -1
    return {"throttleTimeMs": 0, "errorCode": ERROR_CODES[error],
            "currentLeader": {"leaderId": leader, "leaderEpoch": view.epoch, "host": "", "port": 0}}


def serve(view: LeaderView, request: bytes) -> tuple[bytes, VoterSet | None]:
    """Decode an UpdateRaftVoterRequest v0, handle it, and encode the response v0."""
    req, _ = decode("UpdateRaftVoterRequest", 0, request)
    error, updated = handle_update_voter(view, req)
    return encode("UpdateRaftVoterResponse", update_voter_response(view, error), 0), updated
