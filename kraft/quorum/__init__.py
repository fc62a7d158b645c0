"""kraft.quorum: the KRaft metadata-quorum voter as a sans-I/O state machine (docs/quorum.md)."""

from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.invariants import InvariantViolation, Monitor, Violation, check_state
from kraft.quorum.messages import Entry
from kraft.quorum.node import NotLeaderError, QuorumNode
from kraft.quorum.projection import project_cluster
from kraft.quorum.statemachine import MetadataStateMachine, RecordListStateMachine

__all__ = [
    "Entry", "InvariantViolation", "MetadataStateMachine", "Monitor", "NotLeaderError",
    "QuorumConfig", "QuorumNode", "RecordListStateMachine", "Role", "Violation", "check_state",
    "project_cluster",
]
