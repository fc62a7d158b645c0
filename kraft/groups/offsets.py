"""Committed offsets of one group, with Kafka's generation checks.

The coordinator validates an OffsetCommit before it reaches the store (GroupCoordinator
handleCommitOffsets / ClassicGroup.validateOffsetCommit): an unknown member gets
UNKNOWN_MEMBER_ID, a fenced static member FENCED_INSTANCE_ID, another generation
ILLEGAL_GENERATION, a group in CompletingRebalance REBALANCE_IN_PROGRESS. A group in
PreparingRebalance still accepts commits of its current generation (the generation only moves
when the join phase completes).
"""

from __future__ import annotations

import attrs

from kraft.groups.assignors import TopicPartition


@attrs.frozen
class OffsetAndMetadata:
    offset: int
    generation: int
    member: str
    committed_at: int


@attrs.frozen
class AcceptedCommit:
    """One accepted commit of one partition, for the history and the CommitFencing check."""

    partition: TopicPartition
    offset: int
    member: str
    committer: str  # the consumer (client) that sent it
    generation: int
    group_generation: int
    at: int


@attrs.define
class OffsetStore:
    committed: dict[TopicPartition, OffsetAndMetadata] = attrs.field(factory=dict)
    accepted: list[AcceptedCommit] = attrs.field(factory=list)

    def commit(self, offsets: dict[TopicPartition, int], *, member: str, committer: str,
               generation: int, group_generation: int, now: int) -> None:
        """Store already-validated offsets (spec HandleOffsetCommit, accepting branch)."""
        for tp, off in offsets.items():
            if off < 0:
                raise ValueError(f"offset for {tp} must be >= 0, got {off}")
            self.committed[tp] = OffsetAndMetadata(off, generation, member, now)
            self.accepted.append(AcceptedCommit(tp, off, member, committer, generation,
                                                group_generation, now))

    def fetch(self, tp: TopicPartition) -> int | None:
        """OffsetFetch: the committed offset, or None when nothing was committed."""
        om = self.committed.get(tp)
        return None if om is None else om.offset

    def clear(self) -> None:
        """The group is deleted (Dead): its offsets are gone."""
        self.committed.clear()
