"""The rules a committed metadata log must satisfy, one function per kind of change.

Where spec/PartitionReplication.tla names the rule (an invariant, or a condition of its ``Build``
and ``AlterPartitionError``), the rule carries the spec's name; the others are named for what they
protect. :data:`INVARIANTS` gives each rule's meaning and the Kafka code that enforces it
(apache/kafka at 1eb7644349cb); docs/audit-metadata.md explains them for a user.

Every function returns a list of ``(invariant, message)``: empty when the change is sound.
"""

from __future__ import annotations

from typing import Any

from .image import NO_LEADER, RECOVERED, RECOVERING, Image, Partition

INVARIANTS: dict[str, tuple[str, str]] = {
    "LeaderInIsr": (
        "a partition's leader is in its ISR",
        "PartitionChangeBuilder.isValidNewLeader/tryElection; "
        "ReplicationControlManager.validateAlterPartitionData (the leader must stay in the new ISR)"),
    "TypeOK": (
        "ISR, ELR and last known ELR are sets of replicas, the leader is a replica or -1, the "
        "leader recovery state is RECOVERED or RECOVERING, a broker change sets values its record defines",
        "PartitionChangeBuilder (targets are drawn from the replicas); LeaderRecoveryState.of; "
        "BrokerRegistrationFencingChange/BrokerRegistrationInControlledShutdownChange.fromValue"),
    "ValidLeaderRecoveryState": (
        "RECOVERING only with an ISR of at most the leader, and entered only by an unclean election",
        "PartitionChangeBuilder.tryElection; ReplicationControlManager.validateAlterPartitionData (KIP-704)"),
    "CleanElection": (
        "a new leader comes from the ISR, or from the ELR when the ISR is empty; any other leader "
        "is an unclean election, which sets ISR = [leader] and RECOVERING",
        "PartitionChangeBuilder.electAnyLeader/isValidNewLeader/tryElection (KIP-966, KIP-704)"),
    "UncleanElectionAllowed": (
        "a leader from outside the ISR and ELR is elected only where unclean.leader.election.enable "
        "is true for the topic (its config, else the cluster default, else the static config: "
        "false unless --unclean-allowed)",
        "ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic; "
        "ReplicationControlManager.generateLeaderAndIsrUpdates/maybeTriggerUncleanLeaderElectionForLeaderlessPartitions"),
    "EligibleLeader": (
        "a broker that is fenced, in controlled shutdown or not registered is never made leader",
        "PartitionChangeBuilder isAcceptableLeader = ClusterControlManager.isActive"),
    "EligibleIsr": (
        "a broker that is fenced, in controlled shutdown or not registered is never added to the ISR",
        "ReplicationControlManager.validateAlterPartitionData/ineligibleReplicasForIsr "
        "(INELIGIBLE_REPLICA, KIP-841); createTopic keeps only active brokers in a new ISR"),
    "ElrDisjointFromIsr": (
        "no broker is in both the ISR and the ELR",
        "PartitionChangeBuilder.maybePopulateTargetElr (KIP-966)"),
    "ElrOnlyUnderMinIsr": (
        "the ELR is empty whenever the ISR has at least min.insync.replicas members",
        "PartitionChangeBuilder.maybePopulateTargetElr; ReplicationControlManager.getTopicEffectiveMinIsr (KIP-966)"),
    "LeaderEpochMonotonic": (
        "the leader epoch never goes back, and goes up with every leader change and every removal of a replica",
        "PartitionRegistration.merge; PartitionChangeBuilder.triggerLeaderEpochBumpForReplicaReassignmentIfNeeded"),
    "PartitionEpochMonotonic": (
        "the partition epoch goes up with every change of the partition",
        "PartitionRegistration.merge"),
    "BrokerEpochMonotonic": (
        "a broker's registrations carry epochs that never go back, and a new incarnation a higher one",
        "ClusterControlManager.registerBroker (new epoch for a new incarnation, the same one when amended)"),
    "BrokerEpochMatches": (
        "a fence, unfence, registration change or unregistration names the broker's current epoch",
        "ClusterDelta.getBrokerOrThrow; ClusterControlManager.replay(UnregisterBrokerRecord)"),
    "KnownBroker": (
        "records name registered brokers (broker changes, new leaders, new replicas)",
        "ClusterDelta.getBrokerOrThrow; ReplicationControlManager.validateManualPartitionAssignment"),
    "KnownTopic": (
        "partition records name an existing topic and partition; a topic name is used by one topic at a time",
        "TopicsDelta.replay/TopicDelta.replay; ReplicationControlManager.replay(TopicRecord)"),
}

Finding = tuple[str, str]


def _ids(xs: Any) -> str:
    return "[" + ",".join(str(x) for x in xs) + "]"


def partition_state(p: Partition) -> list[Finding]:
    """What holds of every partition registration (spec: LeaderInIsr, TypeOK, ValidLeaderRecoveryState;
    KIP-966: ELR disjoint from the ISR)."""
    out: list[Finding] = []
    replicas = set(p.replicas)
    if p.leader != NO_LEADER and p.leader not in p.isr:
        out.append(("LeaderInIsr", f"leader {p.leader} is not in ISR {_ids(p.isr)}"))
    for name, xs in (("ISR", p.isr), ("ELR", p.elr), ("last known ELR", p.last_known_elr)):
        if not set(xs) <= replicas:
            out.append(("TypeOK", f"{name} {_ids(xs)} is not within replicas {_ids(p.replicas)}"))
    if p.leader != NO_LEADER and p.leader not in replicas:
        out.append(("TypeOK", f"leader {p.leader} is not a replica {_ids(p.replicas)}"))
    if p.leader_recovery_state not in (RECOVERED, RECOVERING):
        out.append(("TypeOK", f"leader recovery state {p.leader_recovery_state} is neither 0 nor 1"))
    if p.leader_recovery_state == RECOVERING and len(p.isr) > 1:
        out.append(("ValidLeaderRecoveryState", f"RECOVERING with ISR {_ids(p.isr)} of more than one broker"))
    both = set(p.isr) & set(p.elr)
    if both:
        out.append(("ElrDisjointFromIsr", f"{_ids(sorted(both))} in both ISR {_ids(p.isr)} and ELR {_ids(p.elr)}"))
    return out


def elr_under_min_isr(p: Partition, min_isr: int) -> list[Finding]:
    """Checked where Kafka recomputes the ELR (every partition record), with the min ISR then in force."""
    if p.elr and len(p.isr) >= min_isr:
        return [("ElrOnlyUnderMinIsr",
                 f"ELR {_ids(p.elr)} with ISR {_ids(p.isr)} of {len(p.isr)} >= min.insync.replicas {min_isr}")]
    return []


def _eligible(image: Image, b: int) -> str | None:
    """Why broker ``b`` is not an acceptable leader or ISR member, or None if it is."""
    reg = image.brokers.get(b)
    if reg is None:
        return "not registered"
    if reg.fenced:
        return "fenced"
    if reg.in_controlled_shutdown:
        return "in controlled shutdown"
    return None


def created(p: Partition, image: Image) -> list[Finding]:
    """A new partition (ReplicationControlManager.createTopic): registered replicas, an active
    leader and ISR."""
    out: list[Finding] = []
    unknown = [r for r in p.replicas if r not in image.brokers]
    if unknown:
        out.append(("KnownBroker", f"replicas {_ids(unknown)} are not registered"))
    for b in p.isr:
        why = _eligible(image, b)
        if why and b in image.brokers:
            out.append(("EligibleIsr", f"new partition has broker {b} in its ISR, which is {why}"))
    if p.leader != NO_LEADER:
        why = _eligible(image, p.leader)
        if why:
            out.append(("EligibleLeader", f"new partition has leader {p.leader}, which is {why}"))
    return out


def restated(before: Partition, after: Partition) -> list[Finding]:
    """A PartitionRecord for a partition that exists: it may not move its epochs back."""
    out: list[Finding] = []
    if after.leader_epoch < before.leader_epoch or (after.leader != before.leader
                                                   and after.leader_epoch == before.leader_epoch):
        out.append(("LeaderEpochMonotonic", f"leader {before.leader} epoch {before.leader_epoch} restated as "
                                            f"leader {after.leader} epoch {after.leader_epoch}"))
    if after.partition_epoch <= before.partition_epoch and after != before:
        out.append(("PartitionEpochMonotonic", f"partition epoch {before.partition_epoch} restated as "
                                               f"{after.partition_epoch} with a changed registration"))
    return out


def changed(before: Partition, after: Partition, fields: dict[str, Any], image: Image) -> list[Finding]:
    """A PartitionChangeRecord from ``before`` to ``after`` (the merge), with the brokers as they
    are when it is applied."""
    return (_election(before, after, image) + _isr_growth(before, after, image)
            + _replica_changes(before, after, fields, image) + _recovery(before, after))


def is_election(before: Partition, after: Partition) -> bool:
    return after.leader != before.leader and after.leader != NO_LEADER


def is_clean_election(before: Partition, after: Partition) -> bool:
    """The new leader comes from the ISR, or from the ELR when the ISR the election saw is empty
    (``PartitionChangeBuilder.isValidNewLeader`` tests the *target* ISR: one record can remove the
    fenced leader from the ISR and elect an ELR member, whom ``electLeader`` then makes the ISR)."""
    target_isr = set(after.isr) - {after.leader}
    return after.leader in before.isr or (after.leader in before.elr and not target_isr)


def is_marked_unclean(after: Partition) -> bool:
    """What tryElection writes for an unclean election: ISR = [leader], RECOVERING."""
    return after.leader_recovery_state == RECOVERING and after.isr == (after.leader,)


def _election(before: Partition, after: Partition, image: Image) -> list[Finding]:
    if not is_election(before, after):
        return []
    out: list[Finding] = []
    why = _eligible(image, after.leader)
    if why:
        out.append(("EligibleLeader" if why != "not registered" else "KnownBroker",
                    f"broker {after.leader}, which is {why}, made leader"))
    if not is_clean_election(before, after) and not is_marked_unclean(after):
        out.append(("CleanElection",
                    f"leader {before.leader} -> {after.leader}: not in ISR {_ids(before.isr)}"
                    + (f" nor ELR {_ids(before.elr)}" if not before.isr else "")
                    + f", yet not an unclean election (ISR {_ids(after.isr)}, "
                      f"{'RECOVERING' if after.leader_recovery_state == RECOVERING else 'RECOVERED'})"))
    return out


def unclean_allowed(before: Partition, after: Partition, enabled: bool) -> list[Finding]:
    """An unclean election where the topic's effective config forbids it (the spec's
    ``UncleanElection`` switch off). An administrator's ElectLeaders of type UNCLEAN
    (``kafka-leader-election --election-type unclean``) is allowed whatever the config and looks
    the same in the log: audit such a cluster with ``--unclean-allowed``."""
    if enabled:
        return []
    return [("UncleanElectionAllowed",
             f"leader {before.leader} -> {after.leader} from outside ISR {_ids(before.isr)} and ELR "
             f"{_ids(before.elr)} while unclean.leader.election.enable is false for the topic")]


def _isr_growth(before: Partition, after: Partition, image: Image) -> list[Finding]:
    out: list[Finding] = []
    for b in after.isr:
        if b in before.isr:
            continue
        why = _eligible(image, b)
        if why:
            out.append(("EligibleIsr", f"broker {b}, which is {why}, added to ISR {_ids(before.isr)} -> {_ids(after.isr)}"))
    return out


def _replica_changes(before: Partition, after: Partition, fields: dict[str, Any], image: Image) -> list[Finding]:
    out: list[Finding] = []
    added = [r for r in after.replicas if r not in before.replicas]
    unknown = [r for r in added if r not in image.brokers]
    if unknown:
        out.append(("KnownBroker", f"replicas {_ids(unknown)} added, which are not registered"))
    removed = [r for r in before.replicas if r not in after.replicas]
    if removed and after.leader_epoch == before.leader_epoch:
        out.append(("LeaderEpochMonotonic",
                    f"replicas {_ids(removed)} removed without a leader epoch bump (epoch {before.leader_epoch})"))
    return out


def _recovery(before: Partition, after: Partition) -> list[Finding]:
    if before.leader_recovery_state == RECOVERED and after.leader_recovery_state == RECOVERING \
            and after.leader == before.leader:
        return [("ValidLeaderRecoveryState", f"RECOVERED -> RECOVERING without a new leader (leader {after.leader})")]
    return []


def registration(image: Image, fields: dict[str, Any]) -> list[Finding]:
    """A RegisterBrokerRecord against what the log said of that broker before."""
    b, epoch = fields["brokerId"], fields["brokerEpoch"]
    seen = image.epochs_seen.get(b)
    if seen is None or epoch > seen:
        return []
    prev = image.brokers.get(b)
    same_incarnation = prev is not None and prev.incarnation == fields.get("incarnationId")
    if epoch == seen and same_incarnation:
        return []
    what = "the same epoch for a new incarnation" if epoch == seen else "a lower epoch"
    return [("BrokerEpochMonotonic", f"broker {b} registered with epoch {epoch} after epoch {seen}: {what}")]
