"""The controller: PartitionChangeBuilder elections (ISR order, KIP-966 ELR, unclean), AlterPartition
validation in ReplicationControlManager's order, fencing/unfencing records, and replay of deltas."""

from __future__ import annotations

import pytest

from kraft.controller.builder import build, change_record
from kraft.controller.controller import Controller
from kraft.controller.image import PartitionRegistration
from kraft.core.step import TICK, Trigger
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import AlterPartitionRequest, BrokerRegistrationRequest, IsrMember

P = PartitionRegistration((1, 2, 3), 1, 0, 0, frozenset({1, 2, 3}))


def b(p, isr, acceptable, unclean=(), *, elr=True, unclean_election=False):
    return build(p, isr, acceptable, unclean, p.leaderRecoveryState, min_isr=2, elr_enabled=elr,
                 unclean_election=unclean_election)


def test_leader_kept_if_valid_else_first_in_replica_order() -> None:
    assert b(P, {1, 2, 3}, {1, 2, 3}) is P
    q = b(P, {2, 3}, {2, 3})
    assert (q.leader, q.leaderEpoch, q.partitionEpoch, q.isr) == (2, 1, 1, {2, 3})


def test_elr_keeps_isr_leavers_below_min_isr_and_elects_from_it() -> None:
    q = b(P, {3}, {3})                      # ISR below min ISR 2: 1 and 2 go to the ELR
    assert (q.leader, q.isr, q.elr) == (3, {3}, {1, 2})
    r = b(q, set(), set())                  # 3 fenced: no leader, ELR {1, 2, 3}
    assert (r.leader, r.isr, r.elr) == (-1, frozenset(), {1, 2, 3})
    s = b(r, set(), {2})                    # 2 comes back: elected from the ELR, becomes the ISR
    assert (s.leader, s.isr, s.elr, s.leaderEpoch) == (2, {2}, {1, 3}, r.leaderEpoch + 1)


def test_unclean_shutdown_removes_from_elr() -> None:
    r = b(b(P, {3}, {3}), set(), set())
    s = b(r, set(), set(), unclean={1})
    assert 1 not in s.elr and 1 in s.lastKnownElr


def test_without_elr_the_last_replica_stays_in_the_isr() -> None:
    q = b(b(P, {3}, {3}, elr=False), set(), set(), elr=False)
    assert (q.leader, q.isr, q.elr) == (-1, {3}, frozenset())


def test_unclean_election_only_when_enabled() -> None:
    r = b(P, set(), set(), elr=False)            # leaderless, ISR kept {1,2,3}
    r = PartitionRegistration((1, 2, 3), -1, 1, 1, frozenset({1}))
    assert b(r, {1}, {3}).leader == -1
    q = b(r, {1}, {3}, unclean_election=True)
    assert (q.leader, q.isr, q.leaderRecoveryState) == (3, {3}, "RECOVERING")


def test_change_record_replays_to_the_built_image() -> None:
    q = b(P, {3}, {3})
    rec = change_record(P, q)
    assert rec is not None and P.merge(rec) == q
    assert change_record(P, P) is None


def _req(c: Controller, **kw) -> AlterPartitionRequest:
    p = c.partition
    base = dict(source=p.leader, brokerEpoch=c.image.broker_epoch(p.leader), leaderEpoch=p.leaderEpoch,
                partitionEpoch=p.partitionEpoch,
                newIsrWithEpochs=frozenset(IsrMember(x, c.image.broker_epoch(x)) for x in (1, 2)))
    base.update(kw)
    return AlterPartitionRequest(**base)


@pytest.mark.parametrize("kw, error", [
    (dict(brokerEpoch=99), "STALE_BROKER_EPOCH"),
    (dict(leaderEpoch=5), "NOT_CONTROLLER"),
    (dict(leaderEpoch=-1), "FENCED_LEADER_EPOCH"),
    (dict(source=2, brokerEpoch=2), "INVALID_REQUEST"),
    (dict(partitionEpoch=-1), "INVALID_UPDATE_VERSION"),
    (dict(newIsrWithEpochs=frozenset({IsrMember(2, 2), IsrMember(3, 3)})), "INVALID_REQUEST"),
    (dict(newIsrWithEpochs=frozenset({IsrMember(1, 1), IsrMember(2, 77)})), "INELIGIBLE_REPLICA"),
    (dict(leaderEpoch=-1, partitionEpoch=-1), "FENCED_LEADER_EPOCH"),   # order: leader epoch first
    (dict(brokerEpoch=99, leaderEpoch=-1), "STALE_BROKER_EPOCH"),      # broker epoch before all
])
def test_alter_partition_validation_order(kw: dict, error: str) -> None:
    c = Controller((1, 2, 3), ReplicationConfig())
    [resp] = c.step(_req(c, **kw), 0).messages
    assert resp.error == error and resp.leader == -1


def test_alter_partition_accepted_shrinks_isr() -> None:
    c = Controller((1, 2, 3), ReplicationConfig())
    ready = c.step(_req(c), 0)
    [resp] = ready.messages
    assert (resp.error, resp.isr, resp.partitionEpoch) == ("NONE", {1, 2}, 1)
    assert [s.action for s in ready.steps] == ["HandleAlterPartitionRequest"] and ready.committed


def test_session_timeout_fences_and_unclean_registration_leaves_isr() -> None:
    cfg = ReplicationConfig()
    c = Controller((1, 2, 3), cfg)
    r = c.step(Trigger(Controller.fence_broker, {"b": 1}), 0)
    assert c.partition.leader == 2 and c.image.broker_state(1) == "Fenced" and r.steps[0].action == "FenceBroker"
    c.step(BrokerRegistrationRequest(3, -1), 0)       # 3 restarted after an unclean shutdown
    assert 3 not in c.partition.isr and c.image.broker_epoch(3) == len(c.records) - 2
    tick = c.step(TICK, cfg.broker_session_timeout_ms)
    assert tick.steps and tick.steps[0].action == "FenceBroker"
