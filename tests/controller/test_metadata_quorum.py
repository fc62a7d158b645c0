"""The replication simulator's metadata goes through a real KRaft quorum (kraft/replication/stacked.py).

Each test drives ``kraft simulate``'s replication plug-in (three controllers 3000-3002, brokers
1-3) with the simulator's own clock and network, forcing the faults it needs by hand, and checks
what the issue asks: committed records survive an active-controller change, brokers never apply
uncommitted records, and the leadership a broker acts on is always a committed one.
"""

from __future__ import annotations

import random
from typing import Any, Callable

import pytest

from kraft.controller import codec
from kraft.controller.image import MetadataImage
from kraft.replication.config import ReplicationConfig
from kraft.replication.stacked import CONTROLLER_IDS, MetadataQuorum
from kraft.controller.records import (
    TOPIC_ID,
    BrokerRegistrationChangeRecord,
    FenceBrokerRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from kraft.log import MemoryFS
from kraft.log.metadata import MetadataRecord, decode_metadata, encode_metadata, to_kafka_json
from kraft.core.invariants import InvariantViolation
from kraft.quorum import node as node_module
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.messages import Entry
from kraft.quorum.node import QuorumNode
from kraft.quorum.storage import QuorumStorage
from kraft.replication.broker import Broker
from kraft.replication.messages import AlterPartitionRequest, AlterPartitionResponse, FetchRequest, FetchResponse
from kraft.replication.sim import ReplicationPlugin
from kraft.replication.world import ReplicationWorld
from kraft.sim.core import Faults, Simulator


def make(seed: int = 1) -> tuple[Simulator, ReplicationPlugin]:
    p = ReplicationPlugin(3)
    return Simulator(p, seed, Faults()), p


def run_until(sim: Simulator, cond: Callable[[], bool], max_events: int = 20000) -> None:
    """Step (every invariant checked after each event) until ``cond`` holds."""
    for _ in range(max_events):
        if cond():
            return
        assert sim.step(), "event queue ran dry"
    raise AssertionError("condition not reached")


def active(p: ReplicationPlugin):
    node = p.mq.active()
    return None if node is None else node


def broker_images_committed(p: ReplicationPlugin) -> None:
    """Every broker's metadata image is the image of a prefix of the committed log."""
    committed = p.mq.view.records
    for b, br in p.brokers.items():
        n = br.image.applied
        assert p.world.fetchers[b].records[:n] == committed[:n], f"broker {b} replayed uncommitted metadata"
        ref = MetadataImage()
        for off, rec in enumerate(committed[:n]):
            ref.replay(off, rec)
        assert br.image.partition == ref.partition


# -- serialisation -------------------------------------------------------------------------------

def every_record() -> list[Any]:
    """One of each record the controller writes, with the values it puts in them."""
    return [TopicRecord(), RegisterBrokerRecord(1, 1, fenced=False), RegisterBrokerRecord(2, 9, incarnationId=2003),
            PartitionRecord(0, TOPIC_ID, (1, 2, 3), frozenset({1, 2, 3}), 1),
            PartitionChangeRecord(0, TOPIC_ID, leader=2, isr=frozenset({2, 3})),
            PartitionChangeRecord(0, TOPIC_ID, leader=-1, isr=frozenset(), eligibleLeaderReplicas=frozenset({1}),
                                  lastKnownElr=frozenset({3}), leaderRecoveryState="RECOVERING"),
            FenceBrokerRecord(1, 1), UnfenceBrokerRecord(2, 9), BrokerRegistrationChangeRecord(3, 3)]


def test_every_record_the_controller_writes_round_trips() -> None:
    recs = every_record()
    assert {type(r) for r in recs} == set(codec.RECORD_CLASSES)
    values = codec.encode_batch(recs)
    assert codec.decode_batch(values) == recs
    fs = MemoryFS()
    st = QuorumStorage.open(fs, "/m")
    st.append_value(1, values)
    st.append_value(1, 7)
    st.flush()
    again = QuorumStorage.open(fs, "/m")   # decoded from the record batches on disk
    assert [e.value for e in again.entries] == [*values, 7]
    assert codec.decode_batch([e.value for e in again.entries[:-1]]) == recs


def test_the_bytes_of_a_partition_change_hold_only_what_changed() -> None:
    """MetadataRecordSerde framing (frame version 1, api key 5, version 2), partitionId, topicId,
    then one tagged field: ISR (tag 0, 9 bytes: compact array of 2 int32).  The unchanged leader,
    ELR and recovery state keep their defaults and are not written (PartitionChangeBuilder)."""
    value = codec.encode(PartitionChangeRecord(0, TOPIC_ID, isr=frozenset({3, 2})))
    topic_id = bytes(15) + b"\x01"
    assert value == b"\x01\x05\x02" + bytes(4) + topic_id + b"\x01" + b"\x00\x09\x03" + bytes([0, 0, 0, 2, 0, 0, 0, 3])
    fields = decode_metadata(value).fields
    assert fields == {"partitionId": 0, "topicId": TOPIC_ID, "isr": [2, 3]}


def test_kafka_field_types_in_the_records_the_controller_writes() -> None:
    reg = to_kafka_json(decode_metadata(codec.encode(RegisterBrokerRecord(2, 9, fenced=True, incarnationId=2003))))
    assert reg["type"] == "REGISTER_BROKER_RECORD" and reg["version"] == 3
    data = reg["data"]
    assert data["incarnationId"] == "AAAAAAAAAAAAAAAAAAAH0w"   # Uuid(0, 2003)
    assert data["rack"] is None and data["logDirs"] == [codec.log_dir(2)] and data["endPoints"][0]["port"] == 9092
    assert data["features"] == [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 25}]
    part = decode_metadata(codec.encode(PartitionRecord(0, TOPIC_ID, (1, 2, 3), frozenset({1, 2}), 1,
                                                        leaderRecoveryState="RECOVERING"))).fields
    assert part["leaderRecoveryState"] == 1 and part["eligibleLeaderReplicas"] == []
    assert part["directories"] == [codec.log_dir(b) for b in (1, 2, 3)]


def test_fencing_is_a_registration_change_as_kafka_4_writes_it() -> None:
    """handleBrokerFenced/handleBrokerUnfenced at a metadata.version with
    BrokerRegistrationChangeRecord: version 0, brokerId, brokerEpoch, then the tagged fenced field
    (tag 0, 1 byte): 1 to fence, -1 to unfence. A FenceBrokerRecord or UnfenceBrokerRecord (an
    older metadata.version's log) reads the same."""
    fence = codec.encode(FenceBrokerRecord(2, 9))
    assert fence == b"\x01\x11\x00" + bytes([0, 0, 0, 2]) + bytes(7) + b"\x09" + b"\x01\x00\x01\x01"
    assert codec.encode(UnfenceBrokerRecord(2, 9))[-4:] == b"\x01\x00\x01\xff"
    assert codec.decode(fence) == FenceBrokerRecord(2, 9)
    older = encode_metadata(MetadataRecord("UnfenceBrokerRecord", 0, {"id": 2, "epoch": 9}))
    assert codec.decode(older) == UnfenceBrokerRecord(2, 9)
    both = encode_metadata(MetadataRecord("BrokerRegistrationChangeRecord", 1,
                                          {"brokerId": 2, "brokerEpoch": 9, "fenced": 1, "inControlledShutdown": 1}))
    with pytest.raises(codec.MetadataDecodeError, match="not a change the controller makes"):
        codec.decode(both)


def test_a_bad_metadata_record_is_a_clear_error() -> None:
    with pytest.raises(codec.MetadataDecodeError, match="at byte position 1: unknown metadata record api key 99"):
        codec.decode(b"\x01\x63\x00")
    other = encode_metadata(MetadataRecord("NoOpRecord", 0, {}))
    with pytest.raises(codec.MetadataDecodeError, match="NoOpRecord .*not one of the records the controller writes"):
        codec.decode(other)


# -- the stacked quorum --------------------------------------------------------------------------

def test_controllers_do_not_clash_with_brokers_and_one_becomes_active() -> None:
    sim, p = make()
    assert set(p.world.node_ids()) == {*CONTROLLER_IDS, 1, 2, 3}
    run_until(sim, lambda: active(p) is not None)
    a = active(p)
    assert a.qnode.role is Role.LEADER
    assert sum(n.active for n in p.mq.nodes.values()) == 1


def test_records_survive_an_active_controller_change() -> None:
    sim, p = make(seed=3)
    run_until(sim, lambda: active(p) is not None)
    # a broker crash: its session times out and the active controller fences it (committed)
    sim.crash(2, None)
    run_until(sim, lambda: any(r == FenceBrokerRecord(2, 2) for r in p.mq.view.records))
    old = active(p)
    before = list(p.mq.view.records)
    assert old.controller.records == before
    sim.crash(old.id, None)               # the active controller's machine stops
    run_until(sim, lambda: active(p) is not None and active(p) is not old)
    new = active(p)
    assert new.controller.records[:len(before)] == before       # replayed from the committed log
    assert new.controller.image.broker_state(2) == "Fenced"
    # the new active controller carries on: broker 2 comes back, registers and is unfenced
    sim.restart(2)
    run_until(sim, lambda: p.brokers[2].running and p.mq.view.image.broker_state(2) == "Unfenced")
    assert p.mq.view.records[:len(before)] == before
    assert p.mq.stats["active_controller_changes"] >= 2
    broker_images_committed(p)


def test_uncommitted_records_are_not_applied_by_brokers() -> None:
    sim, p = make(seed=5)
    run_until(sim, lambda: active(p) is not None and all(f.leader == active(p).id for f in p.world.fetchers.values()))
    old = active(p)
    others = [c for c in CONTROLLER_IDS if c != old.id]
    # cut the active controller off the other controllers only: it cannot commit, brokers still
    # reach it
    sim.network.partition({(old.id, o) for o in others} | {(o, old.id) for o in others})
    committed_before = len(p.mq.view.records)
    sim.crash(3, None)                     # broker 3 stops heartbeating: a fence will be appended
    # the session times out: the fence is in the active controller's memory, not committed
    run_until(sim, lambda: old.controller.image.broker_state(3) == "Fenced", max_events=5000)
    assert old.active and old.controller.uncommitted > 0
    assert p.mq.view.image.broker_state(3) == "Unfenced"
    seen_uncommitted = False
    for _ in range(400):                    # brokers keep fetching from it meanwhile
        sim.step()
        if old.controller.uncommitted > 0 and old.active:
            seen_uncommitted = True
            for b in (1, 2):
                assert p.brokers[b].image.broker_state(3) == "Unfenced"
                assert len(p.world.fetchers[b].records) <= committed_before
        broker_images_committed(p)
    assert seen_uncommitted
    # the other two controllers elect a leader; the old one resigns (check quorum) and reverts
    sim.network.heal()
    run_until(sim, lambda: active(p) is not None and active(p) is not old)
    run_until(sim, lambda: p.mq.view.image.broker_state(3) == "Fenced")
    # once the old leader learns of the new epoch it renounces: its uncommitted records are gone
    run_until(sim, lambda: not old.active)
    assert old.controller.uncommitted == 0
    assert old.controller.records == p.mq.view.records[:len(old.controller.records)]
    broker_images_committed(p)


def test_brokers_only_act_on_committed_leadership_under_faults() -> None:
    p = ReplicationPlugin(3)
    sim = Simulator(p, 11, Faults.parse("all"))
    for _ in range(1500):
        sim.step()                           # every invariant, including BrokerMetadataCommitted
        broker_images_committed(p)
        for b, br in p.brokers.items():
            if br.running and br.local_leader == b:
                # a broker leads only in a leader epoch the committed log gave it
                eps = {r.leaderEpoch for r in [p.mq.view.partition]}
                assert br.local_leader_epoch <= max(eps)
    s = p.mq.summary()
    assert s["committed_batches"] > 0 and s["metadata_records"] == len(p.mq.view.records)


def test_the_check_catches_a_broker_fed_uncommitted_metadata() -> None:
    sim, p = make()
    run_until(sim, lambda: active(p) is not None)
    assert p.mq.check(set(), p.world.fetchers) == []
    p.world.fetchers[1].records.append(FenceBrokerRecord(1, 1))   # never committed
    names = {v.invariant for v in p.mq.check(set(), p.world.fetchers)}
    assert "BrokerMetadataCommitted" in names


def test_a_broker_epoch_is_the_offset_of_its_registration() -> None:
    """Kafka's rule (QuorumController.registerBroker: the epoch is ``nextWriteOffset``) on the real
    quorum offsets, where LeaderChange records take offsets too; the spec numbers the same
    records without them (``spec_position``)."""
    p = ReplicationPlugin(3)
    sim = Simulator(p, 9, Faults.parse("all"))   # four quorum epochs, three re-registrations
    sim.run(1500)
    view, entries = p.mq.view, p.mq.entries
    registrations = [(off, r) for off, r in zip(view.offsets, view.records) if isinstance(r, RegisterBrokerRecord)]
    assert len(registrations) > 3                   # re-registrations after crashes, not only the bootstrap
    assert any(e.value == "LeaderChange" for e in entries[p.mq.bootstrap_end:registrations[-1][0]])
    for off, r in registrations:
        assert r.brokerEpoch == off and codec.decode(entries[off].value) == r
        assert p.mq.spec_position(off) == view.records.index(r)
    for b in p.brokers:
        assert p.world.project([])["brokerEpoch"][b] == p.mq.spec_position(view.image.broker_epoch(b))


def batched_run(seed: int, events: int = 1500) -> tuple[Simulator, ReplicationPlugin]:
    """A run whose fetches carry one entry unless a batch is longer (every batch longer than
    one record must then be sent past the limit, whole)."""
    p = ReplicationPlugin(3, quorum_config=QuorumConfig(max_fetch_entries=1))
    sim = Simulator(p, seed, Faults.parse("all"))
    sim.run(events)
    return sim, p


@pytest.mark.parametrize("seed", [3, 11])
def test_an_operation_is_replicated_committed_and_applied_as_one_batch(seed: int) -> None:
    sim, p = batched_run(seed)                       # MetadataWholeBatches after every event
    s = p.mq.summary()
    assert s["committed_records"] > s["committed_batches"] > 0
    for node in p.mq.nodes.values():
        log = node.qnode.storage.log
        for batch in log.read(p.mq.bootstrap_end):
            if not batch.is_control:   # the operation's records, in one batch of the segment
                values = [r.value for r in batch.records]
                assert p.mq.entries[batch.base_offset:batch.next_offset] == \
                    [Entry(batch.partition_leader_epoch, v, i == len(values) - 1) for i, v in enumerate(values)] \
                    or batch.base_offset >= node.qnode.high_watermark


def test_a_controller_applies_a_committed_batch_only_whole() -> None:
    """RaftClient.Listener.handleCommit hands the controller whole batches: the first record of an
    operation committed alone (a high watermark inside the batch) changes nothing."""
    mq = MetadataQuorum((1, 2, 3), ReplicationConfig(), random.Random(0), 0)
    node = mq.nodes[CONTROLLER_IDS[0]]
    ops = [PartitionChangeRecord(0, TOPIC_ID, isr=frozenset({1, 3})), FenceBrokerRecord(2, 2)]
    entries = [*mq.bootstrap_entries, Entry(1, "LeaderChange"),
               *(Entry(1, v, i == 1) for i, v in enumerate(codec.encode_batch(ops)))]
    for off, e in enumerate(entries[:-1]):
        node._commit(off, e, 0)
    assert node.controller.records == list(mq.view.bootstrap) and mq.view.records == list(mq.view.bootstrap)
    node._commit(len(entries) - 1, entries[-1], 0)
    b = mq.bootstrap_end
    assert node.controller.records[b:] == ops and node.controller.offsets[b:] == [b + 1, b + 2]
    assert mq.view.records[b:] == ops and node.controller.image.broker_state(2) == "Fenced"


def test_the_check_catches_a_follower_holding_part_of_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken: the leader cuts a fetch at its entry limit inside a batch and the follower
    appends what arrived."""
    monkeypatch.setattr(QuorumNode, "_fetch_entries",
                        lambda self, start: tuple(self.storage.entries[start:start + 1]))
    monkeypatch.setattr(node_module, "whole_batches", tuple)
    with pytest.raises(InvariantViolation, match="MetadataWholeBatches"):
        batched_run(3)


def test_a_restarting_broker_applies_no_metadata_before_its_registration() -> None:
    """After a disk loss the broker's metadata is the bootstrap, where broker 1 leads in epoch 0:
    it must not act on it (Kafka's initial catch-up) until it fetched its own registration."""
    sim, p = make(seed=7)
    run_until(sim, lambda: active(p) is not None)
    sim.lose_disk(1)
    f = p.world.fetchers[1]
    assert f.hold is not None and len(p.brokers[1].metadata) == 0
    saw_hold_while_running = False
    for _ in range(3000):
        sim.step()
        br = p.brokers[1]
        if f.hold is not None and br.running:
            assert br.image.applied == 0 and br.local_leader == -1
            saw_hold_while_running = True
        if br.running and f.hold is None and br.image.broker_state(1) == "Unfenced":
            break
    else:
        raise AssertionError("broker 1 never caught up and was unfenced")
    assert saw_hold_while_running      # it started (registration committed) before it caught up
    broker_images_committed(p)


# ---------------------------------------------------------------------------------------------
# StrongIsr: a replayed partition epoch the leader already knows must not drop its pending change
# (kraft/replication/broker.py, Broker._replay; spec ReplayMetadata with ReplayEqualEpoch = FALSE)


def test_seed_55_all_faults_keeps_every_invariant() -> None:
    """Seed 55 of ``kraft simulate --protocol replication --faults all --steps 2000`` broke
    StrongIsr at event 1131 while the leader re-applied the partition epoch it had learnt from an
    AlterPartition answer: the replay dropped its pending expansion of broker 2, which the
    controller then committed after the HW had passed broker 2's log."""
    sim = Simulator(ReplicationPlugin(3), 55, Faults.parse("all"))
    sim.run(2000)                             # raises InvariantViolation on the first violation
    assert sim.events == 2000


def test_replaying_a_known_partition_epoch_keeps_the_pending_expansion() -> None:
    """The race by hand, no faults, one AlterPartition in flight at a time (so Kafka's limit of
    one request per partition would not prevent it).  Leader 1 learns partition epoch 1 (ISR
    {1,2}) from the AlterPartition answer, proposes adding 3, then replays the epoch-1 record.
    If that replay reset the pending expansion, the HW would move over {1,2} past broker 3's log
    and the controller's later expansion would put 3 in the ISR without the records below the HW
    (StrongIsr, checked by the world after every step)."""
    c = ReplicationWorld(3)
    leader = c.brokers[1]

    def fetch_once(f: int) -> None:        # one fetch round trip; AlterPartition stays in flight
        assert c.send_fetch(f)
        c.deliver_next(FetchRequest, source=f)
        c.deliver_next(FetchResponse, dest=f)

    c.produce(1, acks=1)                      # offset 0
    fetch_once(2)
    fetch_once(2)
    c.now += 700                              # 3 lags past replica.lag.time.max.ms
    c.trigger(1, Broker.shrink_isr, f=3)
    c.settle_alter_partition()                # answer: partition epoch 1, ISR {1,2}
    assert leader.local_partition_epoch == 1 and leader.image.partition.partitionEpoch == 0

    fetch_once(3)                             # 3 gets offset 0
    fetch_once(3)                             # 3 is in sync: the leader proposes {1,2,3}
    assert leader.alter_partition_in_flight and leader.pending_isr == {1, 2, 3}
    assert any(isinstance(m, AlterPartitionRequest) for m in c.pending)

    assert c.replay(1) == [1]                 # the epoch-1 record the leader already knows
    assert leader.image.partition.partitionEpoch == 1

    c.now += 700                              # 3 is no longer "caught up" for the HW
    c.produce(1, acks=1)                      # offset 1, which 3 does not have
    fetch_once(2)
    fetch_once(2)
    # the controller applies {1,2,3}; with the pending change dropped by the replay, this step
    # raises InvariantViolation (StrongIsr: ISR member 3 log [0:1] lacks the leader's HW 2)
    c.deliver_next(AlterPartitionRequest)
    assert c.controller.partition.isr == {1, 2, 3}
    assert leader.alter_partition_in_flight and leader.pending_isr == {1, 2, 3}
    assert leader.high_watermark == 1         # it waited for 3, a member of the maximal ISR
    c.deliver_next(AlterPartitionResponse)
    assert leader.local_isr == {1, 2, 3} and not leader.alter_partition_in_flight
    fetch_once(3)
    fetch_once(3)
    assert leader.high_watermark == 2
