"""KIP-881 rack-aware range assignment: the expected assignments of Kafka's RangeAssignorTest
rack tests, with partition replicas placed exactly as Kafka's test helper places them
(AbstractPartitionAssignorTest.partitionInfos: broker i has rack brokerRacks[i]; partition p of
a topic whose first node index is k has replicas on brokers (p + j + k) % numBrokers, j < rf;
topics are laid out in the order given, each starting where the previous one ended)."""

from __future__ import annotations

import pytest

from kraft.groups.assignors import RangeAssignor, Subscription, TopicPartition

ALL_RACKS = ["a", "b", "c", "d", "e", "f", "g"]


def racks(n):
    return [ALL_RACKS[i % len(ALL_RACKS)] for i in range(n)]


def null_racks(n):
    return [None] * n


def partition_racks(topics: dict[str, int], rf: int, broker_racks: list[str | None]):
    out: dict[TopicPartition, set[str]] = {}
    nxt = 0
    n = len(broker_racks)
    for topic, count in topics.items():
        for p in range(count):
            out[TopicPartition(topic, p)] = {broker_racks[(p + j + nxt) % n] for j in range(rf)} - {None}
        nxt += count
    return out


def verify(topics, rf, broker_racks, consumer_racks, consumer_topics, expected, mismatches, prefer=False):
    subs = {f"consumer{i}": Subscription(t, rack=consumer_racks[i]) for i, t in enumerate(consumer_topics)}
    pr = partition_racks(topics, rf, broker_racks)
    r = RangeAssignor(prefer_rack_aware_logic=prefer).assign(dict(topics), subs, pr)
    got = [", ".join(sorted(str(p) for p in r[f"consumer{i}"])) for i in range(len(consumer_topics))]
    assert got == expected
    if mismatches >= 0:
        bad = [p for i, rack in enumerate(consumer_racks) if rack is not None
               for p in r[f"consumer{i}"] if rack not in pr[p]]
        assert len(bad) == mismatches, bad


def verify_non_rack_aware(topics, consumer_topics, expected):
    verify(topics, 3, null_racks(3), racks(3), consumer_topics, expected, -1)
    verify(topics, 3, racks(3), null_racks(3), consumer_topics, expected, -1)
    verify(topics, 3, racks(3), racks(3), consumer_topics, expected, 0)
    verify(topics, 4, racks(4), racks(3), consumer_topics, expected, 0)
    verify(topics, 3, racks(3), ["d", "e", "f"], consumer_topics, expected, -1)
    verify(topics, 3, racks(3), [None, "e", "f"], consumer_topics, expected, -1)
    verify(topics, 3, racks(3), racks(3), consumer_topics, expected, 0, prefer=True)


ALL3 = ["t1", "t2", "t3"]


def test_uniform_subscription():
    topics = {"t1": 6, "t2": 7, "t3": 2}
    ct = [ALL3, ALL3, ALL3]
    verify_non_rack_aware(topics, ct, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1",
                                       "t1-4, t1-5, t2-5, t2-6"])
    verify(topics, 1, racks(3), racks(3), ct,
           ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"], 0)
    verify(topics, 2, racks(3), racks(3), ct,
           ["t1-0, t1-2, t2-0, t2-2, t2-3, t3-1", "t1-1, t1-3, t2-1, t2-4, t3-0", "t1-4, t1-5, t2-5, t2-6"], 1)
    verify(topics, 3, racks(2), racks(3), ct,
           ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0", "t1-2, t1-3, t2-3, t2-4, t3-1", "t1-4, t1-5, t2-5, t2-6"], 4)


def test_non_equal_subscription():
    topics = {"t1": 6, "t2": 7, "t3": 2}
    ct = [ALL3, ALL3, ["t1", "t3"]]
    verify_non_rack_aware(topics, ct, ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0",
                                       "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"])
    verify(topics, 1, racks(3), racks(3), ct,
           ["t1-0, t1-3, t2-0, t2-2, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t2-5, t3-0", "t1-2, t1-5, t3-1"], 2)
    verify(topics, 2, racks(3), racks(3), ct,
           ["t1-0, t1-2, t2-0, t2-2, t2-3, t2-5, t3-1", "t1-1, t1-3, t2-1, t2-4, t2-6, t3-0", "t1-4, t1-5"], 0)
    verify(topics, 3, racks(2), racks(3), ct,
           ["t1-0, t1-1, t2-0, t2-1, t2-2, t2-3, t3-0", "t1-2, t1-3, t2-4, t2-5, t2-6, t3-1", "t1-4, t1-5"], 2)


def test_uniform_partitions_prioritise_co_partitioning():
    topics = {"t1": 5, "t2": 5, "t3": 5}
    ct = [ALL3, ALL3, ALL3]
    expected = ["t1-0, t1-1, t2-0, t2-1, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t2-4, t3-4"]
    verify_non_rack_aware(topics, ct, expected)
    verify(topics, 1, racks(3), racks(3), ct, expected, 10)
    verify(topics, 2, racks(3), racks(3), ct, expected, 5)
    verify(topics, 3, racks(2), racks(3), ct, expected, 3)


def test_uniform_partitions_non_equal_subscription():
    topics = {"t1": 5, "t2": 5, "t3": 5}
    ct = [ALL3, ALL3, ["t1", "t3"]]
    verify_non_rack_aware(topics, ct, ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1",
                                       "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"])
    verify(topics, 1, racks(3), racks(3), ct,
           ["t1-0, t1-1, t2-0, t2-1, t2-4, t3-0, t3-1", "t1-2, t1-3, t2-2, t2-3, t3-2, t3-3", "t1-4, t3-4"], 9)
    verify(topics, 2, racks(3), racks(3), ct,
           ["t1-2, t2-0, t2-1, t2-3, t3-2", "t1-0, t1-3, t2-2, t2-4, t3-0, t3-3", "t1-1, t1-4, t3-1, t3-4"], 0)
    verify(topics, 3, racks(2), racks(3), ct,
           ["t1-0, t1-1, t2-0, t2-1, t2-2, t3-0, t3-1", "t1-2, t1-3, t2-3, t2-4, t3-2, t3-3", "t1-4, t3-4"], 2)


def test_co_partitioning():
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
    cr = ["a", "b", "b", "a"]
    ct = [["t1", "t2"], ["t1", "t2"], ["t3", "t4"], ["t3", "t4"]]
    non = ["t1-0, t1-1, t1-2, t2-0, t2-1, t2-2", "t1-3, t1-4, t1-5, t2-3, t2-4, t2-5", "t3-0, t4-0", "t3-1, t4-1"]
    verify(topics, 3, racks(2), cr, ct, non, -1)
    verify(topics, 2, racks(2), cr, ct, non, 0)
    verify(topics, 1, racks(2), cr, ct,
           ["t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1", "t3-0, t4-0"], 0)
    a4 = ["t1", "t2", "t3", "t4"]
    ct = [a4, a4, a4, a4]
    non = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0", "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1", "t1-4, t2-4", "t1-5, t2-5"]
    verify(topics, 3, racks(2), cr, ct, non, -1)
    verify(topics, 2, racks(2), cr, ct, non, 0)
    verify(topics, 1, racks(2), cr, ct,
           ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1", "t1-5, t2-5", "t1-4, t2-4"], 0)
    verify(topics, 1, racks(3), cr, ct,
           ["t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1", "t1-2, t2-2", "t1-5, t2-5"], 6)


def test_co_partitioned_assignment_with_same_subscription():
    topics = {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4}
    tl = ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"]
    ct = [tl, tl, tl]
    cr = ["a", "b", "c"]
    non = ["t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1",
           "t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2", "t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"]
    verify(topics, 3, null_racks(3), cr, ct, non, -1)
    verify(topics, 3, racks(3), cr, ct, non, 0, prefer=True)
    verify(topics, 2, racks(3), cr, ct,
           ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0, t5-1, t6-1", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1, t5-2, t6-2",
            "t1-4, t1-5, t2-4, t2-5, t5-0, t5-3, t6-0, t6-3"], 0, prefer=True)


def test_rack_aware_static_members_keep_assignment_after_member_id_changes():
    broker_racks = [ALL_RACKS[i % 3] for i in range(6)]   # 3 racks x replication factor 2 brokers
    pr = {}
    for topic in ("topic1", "topic2"):                    # both laid out from node index 0
        for p in range(5):
            pr[TopicPartition(topic, p)] = {broker_racks[(p + j) % 6] for j in range(2)}
    subs = {m: Subscription(["topic1", "topic2"], group_instance_id=i, rack=r)
            for m, i, r in [("consumer1", "instance1", "a"), ("consumer2", "instance2", "b"),
                            ("consumer3", "instance3", "c")]}

    def by_instance(s):
        r = RangeAssignor().assign({"topic1": 5, "topic2": 5}, s, pr)
        return {sub.group_instance_id: r[m] for m, sub in s.items()}

    tp = TopicPartition
    expected = {"instance1": [tp("topic1", 0), tp("topic1", 2), tp("topic2", 0), tp("topic2", 2)],
                "instance2": [tp("topic1", 1), tp("topic1", 3), tp("topic2", 1), tp("topic2", 3)],
                "instance3": [tp("topic1", 4), tp("topic2", 4)]}
    assert by_instance(subs) == expected
    subs["consumer4"] = subs.pop("consumer3")
    subs["consumer5"] = subs.pop("consumer2")
    assert by_instance(subs) == expected
