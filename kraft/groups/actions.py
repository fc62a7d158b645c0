"""Spec action <-> implementation method, in one table (trace recorder and checkers use it)."""

from __future__ import annotations

# spec action -> (role, python method)
ACTIONS: dict[str, tuple[str, str]] = {
    "SendJoinGroup": ("consumer", "send_join_group"),
    "HandleJoinGroupResponse": ("consumer", "handle_join_group_response"),
    "HandleSyncGroupResponse": ("consumer", "handle_sync_group_response"),
    "SendHeartbeat": ("consumer", "send_heartbeat"),
    "HandleHeartbeatResponse": ("consumer", "handle_heartbeat_response"),
    "SendOffsetCommit": ("consumer", "send_offset_commit"),
    "Crash": ("consumer", "crash"),
    "Leave": ("consumer", "leave"),
    "Restart": ("consumer", "restart"),
    "ClientSessionTimeout": ("consumer", "client_session_timeout"),
    "RequestTimeout": ("consumer", "request_timeout"),
    "HandleJoinGroup": ("coordinator", "handle_join_group"),
    "HandleSyncGroup": ("coordinator", "handle_sync_group"),
    "HandleHeartbeat": ("coordinator", "handle_heartbeat"),
    "HandleLeaveGroup": ("coordinator", "handle_leave_group"),
    "HandleOffsetCommit": ("coordinator", "handle_offset_commit"),
    "CompleteJoin": ("coordinator", "complete_join"),
    "ExpireMember": ("coordinator", "expire_member"),
    "DeleteGroup": ("coordinator", "delete_group"),
    "DropMessage": ("network", "drop"),
}

PYTHON_TO_SPEC: dict[str, str] = {py: spec for spec, (_role, py) in ACTIONS.items()}

# spec variables, each with a projection of the same name in kraft.groups.projection
# (msgs and faults belong to the harness/simulator)
SPEC_VARIABLES: tuple[str, ...] = (
    "groupState", "generation", "leader", "members", "staticMembers", "pending", "awaitingJoin",
    "reportedOwned", "assignment", "nextMemberId", "up", "phase", "memberId", "consumerGeneration",
    "owned", "conn", "protocol", "msgs", "faults", "fencingBreaches",
)

VARIANTS: tuple[str, ...] = ("CooperativeAssignWithoutRevoke", "EagerNoRevokeBeforeJoin",
                             "AcceptStaleGeneration")
