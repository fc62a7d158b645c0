"""PartitionChangeBuilder (metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java):
from a partition registration and a target ISR, the next registration, with the election.

``build`` follows ``spec/PartitionReplication.tla``'s ``Build`` operator step by step:

1. ``maybePopulateTargetElr`` (KIP-966): when the target ISR is below min ISR, the replicas leaving
   ISR or ELR and not shut down uncleanly form the ELR; the rest of the ISR/ELR/last-known ELR that
   are not in the target ISR or the ELR form ``lastKnownElr``; at or above min ISR both are empty.
   Without ELR (the ``LastReplicaStanding`` variant, Kafka before KIP-966) ELR and last-known ELR
   stay as they are.
2. ``electAnyLeader`` / ``isValidNewLeader``: keep the current leader if it is still valid (in the
   target ISR, or in the ELR when the target ISR is empty, and acceptable: active and not excluded
   by the caller); else the first valid replica in replica order (= smallest id); else, with
   ``unclean.leader.election.enable``, the first acceptable replica (an unclean election: ISR =
   {leader}, leader recovery state RECOVERING, KIP-704); else NO_LEADER.
3. ``tryElection``: a leader elected from the ELR becomes the ISR and leaves the ELR.  Without ELR
   an empty target ISR keeps the old ISR (the last replica standing stays in the ISR).
4. The partition epoch grows iff anything changed; the leader epoch iff the leader changed.
"""

from __future__ import annotations

from typing import AbstractSet

import attrs

from kraft.controller.image import PartitionRegistration
from kraft.controller.records import PARTITION, TOPIC_ID, PartitionChangeRecord
from kraft.replication.messages import NO_LEADER, RECOVERING


def build(p: PartitionRegistration, target_isr: AbstractSet[int], acceptable: AbstractSet[int],
          unclean_set: AbstractSet[int], target_lrs: str, *, min_isr: int, elr_enabled: bool,
          unclean_election: bool) -> PartitionRegistration:
    t_isr = frozenset(target_isr)
    brokers = frozenset(p.replicas)
    # maybePopulateTargetElr
    pop_elr = elr_enabled and len(t_isr) < min_isr
    cand = p.elr | p.isr
    if not elr_enabled:
        t_elr0, t_lke = p.elr, p.lastKnownElr
    elif not pop_elr:
        t_elr0, t_lke = frozenset(), frozenset()
    else:
        t_elr0 = (cand - t_isr) - frozenset(unclean_set)
        t_lke = ((cand | p.lastKnownElr) - t_isr) - t_elr0

    # electAnyLeader / isValidNewLeader
    def valid(r: int) -> bool:
        return (r in t_isr or (not t_isr and r in t_elr0)) and r in acceptable

    valid_set = [r for r in sorted(brokers) if valid(r)]
    if p.leader != NO_LEADER and valid(p.leader):
        clean = p.leader
    else:
        clean = valid_set[0] if valid_set else NO_LEADER
    acceptable_replicas = sorted(brokers & frozenset(acceptable))
    unclean_pick = unclean_election and clean == NO_LEADER and bool(acceptable_replicas)
    new_leader = acceptable_replicas[0] if unclean_pick else clean
    changed = new_leader != p.leader
    # tryElection
    from_elr = changed and new_leader in t_elr0
    t_isr1 = frozenset({new_leader}) if from_elr else t_isr
    t_elr1 = t_elr0 - {new_leader} if from_elr else t_elr0
    unclean = changed and unclean_pick
    if unclean:
        new_isr = frozenset({new_leader})
    elif t_isr1 or elr_enabled:
        new_isr = t_isr1
    else:
        new_isr = p.isr
    q = PartitionRegistration(p.replicas, new_leader, p.leaderEpoch + 1 if changed else p.leaderEpoch,
                              p.partitionEpoch, new_isr, t_elr1, t_lke,
                              RECOVERING if unclean else target_lrs)
    if q == p:
        return p
    return attrs.evolve(q, partitionEpoch=p.partitionEpoch + 1)


def change_record(old: PartitionRegistration, new: PartitionRegistration) -> PartitionChangeRecord | None:
    """The delta record turning ``old`` into ``new`` (None if equal); replaying it on ``old``
    yields ``new`` (checked)."""
    if new == old:
        return None
    rec = PartitionChangeRecord(
        PARTITION, TOPIC_ID,
        leader=new.leader if new.leader != old.leader else None,
        isr=new.isr if new.isr != old.isr else None,
        eligibleLeaderReplicas=new.elr if new.elr != old.elr else None,
        lastKnownElr=new.lastKnownElr if new.lastKnownElr != old.lastKnownElr else None,
        leaderRecoveryState=new.leaderRecoveryState if new.leaderRecoveryState != old.leaderRecoveryState else None)
    if old.merge(rec) != new:  # the builder and merge disagree on the epochs: a bug here
        raise AssertionError(f"PartitionChangeRecord {rec} does not turn {old} into {new}")
    return rec
