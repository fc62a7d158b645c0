"""Quorum arithmetic in one place (as etcd raft's ``quorum`` package), with property tests in
tests/core/test_majority.py.  Used by the KRaft node (votes, high watermark), its invariants and
the simulator's disk-loss guard."""

from __future__ import annotations

from typing import Iterable


def majority(voters: int) -> int:
    """Smallest number of voters that forms a majority of ``voters`` (``voters // 2 + 1``)."""
    if voters < 0:
        raise ValueError(f"negative voter count {voters}")
    return voters // 2 + 1


def has_majority(granted: Iterable[object], voters: Iterable[object]) -> bool:
    """Do the ``granted`` voters (only those in ``voters`` count) form a majority of ``voters``?"""
    vs = set(voters)
    return len(vs & set(granted)) >= majority(len(vs))


def majority_value(values: Iterable[int], voters: int | None = None) -> int:
    """The largest value that at least a majority of the voters have reached.

    ``values`` holds one value per voter (missing voters, when ``voters`` says there are more,
    count as 0).  This is the KRaft leader's high-watermark candidate
    (LeaderState.maybeUpdateHighWatermark: the median of the voters' end offsets)."""
    vs = sorted(values, reverse=True)
    n = len(vs) if voters is None else voters
    if n < len(vs):
        raise ValueError(f"{len(vs)} values for {n} voters")
    if n == 0:
        raise ValueError("no voters")
    vs += [0] * (n - len(vs))
    return vs[majority(n) - 1]
