"""Every invariant checker fails on a deliberately broken state (and holds on a good one)."""

from __future__ import annotations

from typing import Any

from kraft.quorum.invariants import Monitor, check_state, election_safety, log_matching, \
    log_epochs_monotonic, majority_reached_high_watermark, snapshot_at_log_start, state_machine_safety

LC = "LeaderChange"


def state(logs: dict[int, list[tuple[int, Any]]], *, roles: dict[int, str] | None = None,
          epochs: dict[int, int] | None = None, hwm: dict[int, int] | None = None,
          flushed: dict[int, int] | None = None, starts: dict[int, int] | None = None,
          snapshots: dict[int, list[tuple[int, int, list[Any]]]] | None = None) -> dict[str, Any]:
    ids = sorted(logs)
    starts = starts or {i: 0 for i in ids}
    snaps = snapshots or {}
    return {
        "logStartOffset": starts,
        "snapshots": {i: [{"end": e, "epoch": p, "values": v} for e, p, v in snaps.get(i, [])] for i in ids},
        "log": {i: [{"epoch": e, "value": v} for e, v in logs[i]] for i in ids},
        "role": roles or {i: "Follower" for i in ids},
        "currentEpoch": epochs or {i: 1 for i in ids},
        "highWatermark": hwm or {i: 0 for i in ids},
        "flushedOffset": flushed or {i: starts[i] + len(logs[i]) for i in ids},
    }


GOOD = state({1: [(1, LC), (1, 10)], 2: [(1, LC), (1, 10)], 3: [(1, LC)]},
             roles={1: "Leader", 2: "Follower", 3: "Follower"}, hwm={1: 2, 2: 2, 3: 1})


def names(violations: list) -> set[str]:
    return {v.invariant for v in violations}


def test_good_state_has_no_violation() -> None:
    assert check_state(GOOD) == []
    assert Monitor().observe(GOOD) == []


def test_election_safety() -> None:
    s = state({1: [], 2: []}, roles={1: "Leader", 2: "Leader"}, epochs={1: 3, 2: 3})
    assert names(election_safety(s)) == {"ElectionSafety"}
    m = Monitor()
    assert m.observe(state({1: [], 2: []}, roles={1: "Leader", 2: "Follower"}, epochs={1: 3, 2: 3})) == []
    later = state({1: [], 2: []}, roles={1: "Follower", 2: "Leader"}, epochs={1: 3, 2: 3})
    assert "ElectionSafety" in names(m.observe(later))  # two leaders of epoch 3, at different times


def test_log_matching() -> None:
    s = state({1: [(1, LC), (1, 5), (2, LC)], 2: [(1, LC), (1, 6), (2, LC)]})
    assert names(log_matching(s)) == {"LogMatching"}
    ok = state({1: [(1, LC), (1, 5)], 2: [(1, LC), (2, LC)]})
    assert log_matching(ok) == []


def test_state_machine_safety() -> None:
    s = state({1: [(1, LC), (1, 5)], 2: [(1, LC), (2, LC)]}, hwm={1: 2, 2: 2})
    assert names(state_machine_safety(s)) == {"StateMachineSafety"}


def test_majority_reached_high_watermark() -> None:
    s = state({1: [(1, LC), (1, 5)], 2: [(1, LC)], 3: [(1, LC)]}, roles={1: "Leader", 2: "Follower", 3: "Follower"},
              hwm={1: 2, 2: 1, 3: 1})
    assert names(majority_reached_high_watermark(s)) == {"MajorityReachedHighWatermark"}


def test_leader_completeness_and_monotonic_high_watermark() -> None:
    m = Monitor()
    assert m.observe(GOOD) == []  # commits [(1, LC), (1, 10)]
    # node 3 leads epoch 2 without the committed record, with a high watermark below it
    bad = state({1: [(1, LC), (1, 10)], 2: [(1, LC), (1, 10)], 3: [(1, LC), (2, LC)]},
                roles={1: "Follower", 2: "Follower", 3: "Leader"}, epochs={1: 2, 2: 2, 3: 2},
                hwm={1: 2, 2: 2, 3: 1})
    found = names(m.observe(bad))
    assert {"LeaderCompleteness", "MonotonicHighWatermark"} <= found


def test_deposed_leader_may_lack_records_a_later_leader_committed() -> None:
    """TLC's counterexample to a LeaderCompleteness over every leader (3 voters, 3 epochs, correct
    spec): node 2 leads epoch 2 with its LeaderChange only; node 1, leader of epoch 3 elected with
    node 3, commits epoch 1's LeaderChange; node 2 has not heard of epoch 3 and still leads. Only
    the newest leader must hold what earlier epochs committed (the check of the newest one is
    test_leader_completeness_and_monotonic_high_watermark)."""
    m = Monitor()
    leaders = {1: "Leader", 2: "Leader", 3: "Follower"}
    assert m.observe(state({1: [(1, LC)], 2: [(2, LC)], 3: []}, roles=leaders, epochs={1: 1, 2: 2, 3: 2})) == []
    committed = state({1: [(1, LC), (3, LC)], 2: [(2, LC)], 3: [(1, LC), (3, LC)]}, roles=leaders,
                      epochs={1: 3, 2: 2, 3: 3}, hwm={1: 2, 2: 0, 3: 0})
    assert m.observe(committed) == []
    assert len(m.committed) == 2


def test_no_committed_record_lost() -> None:
    m = Monitor()
    m.observe(GOOD)
    lost = state({1: [(1, LC), (1, 10)], 2: [(1, LC), (1, 10)], 3: [(1, LC)]},
                 roles={1: "Leader", 2: "Follower", 3: "Follower"}, hwm={1: 2, 2: 2, 3: 1},
                 flushed={1: 2, 2: 1, 3: 1})  # only node 1 has the committed record durably
    assert "NoCommittedRecordLost" in names(m.observe(lost))


def test_committed_record_changed_is_caught() -> None:
    m = Monitor()
    m.observe(GOOD)
    changed = state({1: [(1, LC), (1, 11)], 2: [(1, LC), (1, 11)], 3: [(1, LC), (1, 11)]},
                    roles={1: "Leader", 2: "Follower", 3: "Follower"}, hwm={1: 2, 2: 2, 3: 2})
    assert "StateMachineSafety" in names(m.observe(changed))


def test_high_watermark_never_decreases() -> None:
    m = Monitor()
    m.observe(GOOD)
    down = state({1: [(1, LC), (1, 10)], 2: [(1, LC), (1, 10)], 3: [(1, LC)]},
                 roles={1: "Leader", 2: "Follower", 3: "Follower"}, hwm={1: 2, 2: 1, 3: 1})
    assert "HighWatermarkNeverDecreases" in names(m.observe(down))
    m2 = Monitor()
    m2.observe(GOOD)
    assert "HighWatermarkNeverDecreases" not in names(m2.observe(down, restarted={2}))  # a restart resets it


# with snapshots: logs start at logStartOffset; node 2 below holds offsets 2.. only
SNAP = state({1: [(1, LC), (1, 10), (1, 11)], 2: [(1, 11)], 3: [(1, LC), (1, 10), (1, 11)]},
             roles={1: "Leader", 2: "Follower", 3: "Follower"}, hwm={1: 3, 2: 3, 3: 3},
             starts={1: 0, 2: 2, 3: 0}, snapshots={2: [(2, 1, [10])]})


def test_rebased_logs_are_compared_where_both_hold_them() -> None:
    assert check_state(SNAP) == []
    assert Monitor().observe(SNAP) == []
    # node 2 holds a different record at offset 2, in the same epoch as the others
    bad = state({1: [(1, LC), (1, 10), (1, 11), (1, 12)], 2: [(1, 99), (1, 12)], 3: [(1, LC)]},
                starts={1: 0, 2: 2, 3: 0}, snapshots={2: [(2, 1, [10])]})
    assert names(log_matching(bad)) == {"LogMatching"}


def test_majority_reached_high_watermark_needs_the_flushed_offset() -> None:
    s = state({1: [(1, LC), (1, 5)], 2: [(1, LC), (1, 5)], 3: [(1, LC)]},
              roles={1: "Leader", 2: "Follower", 3: "Follower"}, hwm={1: 2, 2: 2, 3: 1},
              flushed={1: 1, 2: 2, 3: 1})  # the leader's second record is not durable yet
    assert names(majority_reached_high_watermark(s)) == {"MajorityReachedHighWatermark"}


def test_snapshot_at_log_start() -> None:
    no_snapshot = state({1: [(1, 11)]}, starts={1: 2})
    assert names(snapshot_at_log_start(no_snapshot)) == {"SnapshotAtLogStart"}
    stale = state({1: [(1, 11)]}, starts={1: 2}, snapshots={1: [(1, 1, []), (2, 1, [10])]})
    assert names(snapshot_at_log_start(stale)) == {"SnapshotAtLogStart"}
    assert snapshot_at_log_start(SNAP) == []


def test_consistent_committed_data() -> None:
    m = Monitor()
    assert m.observe(SNAP) == []  # commits [LC, 10, 11]
    beyond = state({1: [(1, LC), (1, 10), (1, 11), (1, 12)]}, hwm={1: 3}, snapshots={1: [(4, 1, [10, 11, 12])]})
    assert names(m.observe(beyond)) == {"ConsistentCommittedData"}
    wrong = state({1: [(1, LC), (1, 10), (1, 11)]}, hwm={1: 3}, snapshots={1: [(3, 1, [10, 12])]})
    assert names(Monitor().observe(wrong)) == {"ConsistentCommittedData"}


def test_log_epochs_monotonic() -> None:
    assert log_epochs_monotonic(SNAP) == []
    older = state({1: [(1, LC), (2, LC), (1, 5)]})
    assert names(log_epochs_monotonic(older)) == {"LogEpochsMonotonic"}
    # the first entry after a snapshot is older than the snapshot's epoch
    kept = state({1: [(1, 5)]}, starts={1: 2}, snapshots={1: [(2, 2, [4])]})
    assert names(log_epochs_monotonic(kept)) == {"LogEpochsMonotonic"}


def test_holding_the_committed_prefix_includes_the_snapshot_values() -> None:
    def with_base(values: list[int]) -> dict[str, Any]:
        # nodes 1 and 2 flushed the 3 committed records; 2 holds 10 only in its snapshot
        return state({1: [(1, LC), (1, 10), (1, 11)], 2: [(1, 11)], 3: [(1, LC), (1, 10), (1, 11)]},
                     roles={1: "Leader", 2: "Follower", 3: "Follower"}, hwm={1: 3, 2: 3, 3: 3},
                     starts={1: 0, 2: 2, 3: 0}, snapshots={2: [(2, 1, values)]}, flushed={1: 3, 2: 3, 3: 2})
    m = Monitor()
    assert m.observe(with_base([10])) == []
    assert "NoCommittedRecordLost" in names(m.observe(with_base([99])))


def test_a_step_that_changed_nothing_keeps_the_verdict() -> None:
    """The monitor's stutter (each state built afresh, as the world projects it): the same state
    again repeats every violation of a state, and the high watermark's action property (between
    two equal states) holds."""
    def down() -> dict[str, Any]:
        return state({1: [(1, LC), (1, 10)], 2: [(1, LC), (1, 10)], 3: [(1, LC)]},
                     roles={1: "Leader", 2: "Follower", 3: "Follower"}, hwm={1: 2, 2: 1, 3: 1})

    def two_leaders() -> dict[str, Any]:
        return state({1: [(1, LC)], 2: [(1, LC)], 3: [(1, LC)]},
                     roles={1: "Leader", 2: "Leader", 3: "Follower"}, hwm={1: 0, 2: 0, 3: 0})

    m = Monitor()
    m.observe(GOOD)
    first = m.observe(down())
    assert "HighWatermarkNeverDecreases" in names(first)
    assert m.observe(down()) == [v for v in first if v.invariant != "HighWatermarkNeverDecreases"]
    assert "ElectionSafety" in names(m.observe(two_leaders()))
    assert "ElectionSafety" in names(m.observe(two_leaders()))
