"""Each rule of audit-metadata shown failing on one crafted record, and holding on its lawful twin.

Every log is the bootstrap of :mod:`.logs` (brokers 1, 2, 3 with epochs 1, 2, 3; topic ``t``,
partition 0 on all three, leader 1, ISR all) plus the operations named in the case.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.log.metadata import MetadataRecord
from spark_validation.checks.metadata.audit import audit_directory as audit_typed
from spark_validation.checks.metadata.cli import directory_json
from spark_validation.checks.metadata.invariants import INVARIANTS

from .logs import (OTHER_TOPIC_ID, Cluster, change, config, fence, noop, partition, register, shutting_down,
                   topic, unfence)

MIN_ISR_3 = config("min.insync.replicas", "3")
UNCLEAN_ON = config("unclean.leader.election.enable", "true")
# the ISR shrinks to [1, 2], then broker 3 is elected from outside it, marked as unclean
UNCLEAN = [[change(isr=[1, 2])], [change(leader=3, isr=[3], leaderRecoveryState=1)]]


def audit_directory(directory: str, **static) -> dict:
    """The directory's entry of ``audit-metadata.json``: the audit's result as the command writes it."""
    return directory_json(audit_typed(directory, **static))

# invariant -> (operations that break it with their last record, the lawful twin of those operations)
CASES: dict[str, tuple[list[list[MetadataRecord]], list[list[MetadataRecord]]]] = {
    "LeaderInIsr": ([[change(isr=[2, 3])]], [[change(isr=[1, 3])]]),
    "TypeOK": ([[change(leaderRecoveryState=5)]], [[change(leaderRecoveryState=0)]]),
    "ValidLeaderRecoveryState": ([[change(leaderRecoveryState=1)]], [[UNCLEAN_ON], *UNCLEAN]),
    "CleanElection": ([[UNCLEAN_ON], [change(isr=[1, 2])], [change(leader=3, isr=[3])]], [[UNCLEAN_ON], *UNCLEAN]),
    "UncleanElectionAllowed": (UNCLEAN, [[UNCLEAN_ON], *UNCLEAN]),
    "EligibleLeader": ([[fence(3, 3)], [change(leader=3)]], [[fence(2, 2)], [change(leader=3)]]),
    "EligibleIsr": ([[change(isr=[1, 2]), fence(3, 3)], [change(isr=[1, 2, 3])]],
                    [[change(isr=[1, 2]), fence(3, 3)], [change(isr=[1])]]),
    "ElrDisjointFromIsr": ([[MIN_ISR_3], [change(isr=[1, 2], eligibleLeaderReplicas=[2, 3])]],
                           [[MIN_ISR_3], [change(isr=[1, 2], eligibleLeaderReplicas=[3])]]),
    "ElrOnlyUnderMinIsr": ([[change(isr=[1, 2], eligibleLeaderReplicas=[3])]],
                           [[MIN_ISR_3], [change(isr=[1, 2], eligibleLeaderReplicas=[3])]]),
    "LeaderEpochMonotonic": ([[change(replicas=[1, 2], isr=[1, 2])]], [[change(replicas=[1, 2], isr=[1, 2], leader=1)]]),
    "PartitionEpochMonotonic": ([[partition(isr=[1, 2])]], [[partition(isr=[1, 2], partition_epoch=1)]]),
    "BrokerEpochMonotonic": ([[register(2, 1, incarnation=9)]], [[register(2, 9, incarnation=9)]]),
    "BrokerEpochMatches": ([[fence(3, 7)]], [[fence(3, 3)]]),
    "KnownBroker": ([[fence(9, 9)]], [[register(9, 9), fence(9, 9)]]),
    "KnownTopic": ([[change(topic_id=OTHER_TOPIC_ID, isr=[1])]],
                   [[topic("u", OTHER_TOPIC_ID), partition(topic_id=OTHER_TOPIC_ID)], [change(topic_id=OTHER_TOPIC_ID, isr=[1])]]),
}


def _audit(tmp_path: Path, ops: list[list[MetadataRecord]], name: str = "log", **static: bool) -> dict:
    c = Cluster()
    for batch in ops:
        c.then(*batch)
    return audit_directory(str(c.write(tmp_path / name)), **static)


def test_every_rule_has_a_case() -> None:
    assert set(CASES) == set(INVARIANTS)


def test_clean_log(tmp_path: Path) -> None:
    r = _audit(tmp_path, [[change(isr=[1, 2]), fence(3, 3)], [change(leader=2, isr=[2])],
                          [register(3, 20, fenced=True)], [unfence(3, 20)],
                          [change(isr=[2, 3])], [shutting_down(2, 2), change(leader=3, isr=[3])], [noop()]])
    assert (r["verdict"], r["exit_code"], r["violation_count"]) == ("clean", 0, 0), r["violations"]
    assert r["records"] == 14 and r["control_records"] == {"LEADER_CHANGE": 1}
    assert r["not_interpreted"] == {"NoOpRecord": 1}
    assert r["image"] == {"brokers": 3, "topics": 1, "partitions": 1}


@pytest.mark.parametrize("invariant", sorted(CASES))
def test_rule_fails_on_its_record_and_holds_on_the_twin(tmp_path: Path, invariant: str) -> None:
    bad, good = CASES[invariant]
    r = _audit(tmp_path, bad, "bad")
    assert r["verdict"] == "violation" and r["exit_code"] == 1
    found = {v["invariant"] for v in r["violations"]}
    assert found == {invariant}, r["violations"]
    v = r["violations"][0]
    last = bad[-1][-1]
    assert v["record_type"] == last.name and v["file"] == "00000000000000000000.log"
    # bootstrap: LeaderChange at 0, five records at 1..5; the case's records follow
    assert v["offset"] == 5 + sum(len(b) for b in bad)
    assert v["kafka"] == INVARIANTS[invariant][1]
    ok = _audit(tmp_path, good, "good")
    assert (ok["verdict"], ok["violations"]) == ("clean", []), ok["violations"]


def test_allowed_unclean_elections_are_counted_not_violations(tmp_path: Path) -> None:
    bad, good = CASES["CleanElection"]
    r = _audit(tmp_path, good, "unclean")
    assert r["verdict"] == "clean" and r["unclean_election_count"] == 1
    assert r["unclean_elections"] == [{"file": "00000000000000000000.log", "offset": 8, "partition": "t-0",
                                       "from": 1, "to": 3, "leaderEpoch": 1}]
    assert _audit(tmp_path, bad, "unmarked")["unclean_election_count"] == 1
    assert _audit(tmp_path, [[change(isr=[1, 2])], [change(leader=2)]], "clean")["unclean_election_count"] == 0


@pytest.mark.parametrize("configs,static,verdict", [
    ([config("unclean.leader.election.enable", "true", resource="", resource_type=4)], False, "clean"),
    ([config("unclean.leader.election.enable", "true", resource="", resource_type=4),
      config("unclean.leader.election.enable", "false")], False, "violation"),
    ([], True, "clean"),
    ([config("unclean.leader.election.enable", "false")], True, "violation"),
    ([UNCLEAN_ON, config("unclean.leader.election.enable", None)], False, "violation"),
], ids=["cluster-default", "topic-overrides-cluster", "static", "topic-overrides-static", "config-deleted"])
def test_unclean_election_follows_the_effective_config(tmp_path: Path, configs: list, static: bool,
                                                       verdict: str) -> None:
    """uncleanLeaderElectionEnabledForTopic: topic config, else cluster default, else static."""
    r = _audit(tmp_path, [configs, *UNCLEAN] if configs else UNCLEAN, "u", unclean_allowed=static)
    assert r["verdict"] == verdict, r["violations"]
    assert {v["invariant"] for v in r["violations"]} == ({"UncleanElectionAllowed"} if verdict == "violation" else set())


def test_aborted_transaction_is_not_replayed(tmp_path: Path) -> None:
    begin, end, abort = (MetadataRecord(n, 0, {}) for n in
                         ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"))
    r = _audit(tmp_path, [[begin], [change(isr=[2, 3])], [abort]], "aborted")
    assert r["verdict"] == "clean" and r["aborted_transaction_records"] == 1
    r = _audit(tmp_path, [[begin], [change(isr=[2, 3])], [end]], "committed")
    assert [v["invariant"] for v in r["violations"]] == ["LeaderInIsr"]


def test_min_isr_default_option(tmp_path: Path) -> None:
    c = Cluster().then(change(isr=[1, 2], eligibleLeaderReplicas=[3]))
    d = str(c.write(tmp_path / "elr"))
    assert audit_directory(d, min_isr=1)["violations_by_invariant"] == {"ElrOnlyUnderMinIsr": 1}
    assert audit_directory(d, min_isr=2)["violations_by_invariant"] == {"ElrOnlyUnderMinIsr": 1}  # ISR of exactly min
    assert audit_directory(d, min_isr=3)["verdict"] == "clean"


def test_cluster_default_min_isr_and_topic_override(tmp_path: Path) -> None:
    cluster_default = config("min.insync.replicas", "3", resource="", resource_type=4)
    elr = change(isr=[1, 2], eligibleLeaderReplicas=[3])
    assert _audit(tmp_path, [[cluster_default], [elr]], "a")["verdict"] == "clean"
    topic_two = config("min.insync.replicas", "2")
    assert _audit(tmp_path, [[cluster_default, topic_two], [elr]], "b")["violations_by_invariant"] == {
        "ElrOnlyUnderMinIsr": 1}


def test_elr_election_in_the_record_that_empties_the_isr(tmp_path: Path) -> None:
    """One PartitionChangeRecord may take the leader out of the ISR and elect an ELR member
    (isValidNewLeader tests the target ISR): clean. An ELR member elected while another ISR
    member remains is not."""
    shrunk = [[MIN_ISR_3], [change(isr=[1], eligibleLeaderReplicas=[2, 3])]]
    good = _audit(tmp_path, shrunk + [[change(leader=2, isr=[2], eligibleLeaderReplicas=[1, 3])]], "elr")
    assert good["verdict"] == "clean", good["violations"]
    bad = _audit(tmp_path, shrunk + [[change(leader=2, isr=[1, 2], eligibleLeaderReplicas=[3])]], "mixed")
    assert [v["invariant"] for v in bad["violations"]] == ["CleanElection"]
