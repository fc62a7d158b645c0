"""RangeAssignorTest and RoundRobinAssignorTest scenarios from Kafka, ported (inputs and expected
lists are Kafka's; where Kafka compares lists, so do we, order included)."""

from __future__ import annotations

import pytest

from kraft.groups.assignors import RangeAssignor, RoundRobinAssignor

from .helpers import S, tp

t1, t2 = "topic1", "topic2"
c1, c2, c3, c4, c5 = "consumer1", "consumer2", "consumer3", "consumer4", "consumer5"
i1, i2, i3 = "instance1", "instance2", "instance3"

ALL = [RangeAssignor, RoundRobinAssignor]


@pytest.mark.parametrize("cls", ALL)
def test_one_consumer_no_topic(cls):
    assert cls().assign({}, {c1: S([])}) == {c1: []}


@pytest.mark.parametrize("cls", ALL)
def test_one_consumer_nonexistent_topic(cls):
    assert cls().assign({}, {c1: S([t1])}) == {c1: []}


@pytest.mark.parametrize("cls", ALL)
def test_one_consumer_one_topic_and_only_subscribed_topics(cls):
    assert cls().assign({t1: 3}, {c1: S([t1])}) == {c1: [tp(t1, 0), tp(t1, 1), tp(t1, 2)]}
    assert cls().assign({t1: 3, "other": 3}, {c1: S([t1])}) == {c1: [tp(t1, 0), tp(t1, 1), tp(t1, 2)]}


@pytest.mark.parametrize("cls", ALL)
def test_one_consumer_multiple_topics(cls):
    assert cls().assign({t1: 1, t2: 2}, {c1: S([t1, t2])}) == {c1: [tp(t1, 0), tp(t2, 0), tp(t2, 1)]}


@pytest.mark.parametrize("cls", ALL)
def test_two_consumers_one_topic(cls):
    assert cls().assign({t1: 1}, {c1: S([t1]), c2: S([t1])}) == {c1: [tp(t1, 0)], c2: []}
    assert cls().assign({t1: 2}, {c1: S([t1]), c2: S([t1])}) == {c1: [tp(t1, 0)], c2: [tp(t1, 1)]}


@pytest.mark.parametrize("cls", ALL)
def test_multiple_consumers_mixed_topics(cls):
    r = cls().assign({t1: 3, t2: 2}, {c1: S([t1]), c2: S([t1, t2]), c3: S([t1])})
    assert r == {c1: [tp(t1, 0)], c2: [tp(t1, 1), tp(t2, 0), tp(t2, 1)], c3: [tp(t1, 2)]}


def test_range_two_consumers_two_topics_six_partitions():
    r = RangeAssignor().assign({t1: 3, t2: 3}, {c1: S([t1, t2]), c2: S([t1, t2])})
    assert r == {c1: [tp(t1, 0), tp(t1, 1), tp(t2, 0), tp(t2, 1)], c2: [tp(t1, 2), tp(t2, 2)]}


def test_roundrobin_two_consumers_two_topics_six_partitions():
    r = RoundRobinAssignor().assign({t1: 3, t2: 3}, {c1: S([t1, t2]), c2: S([t1, t2])})
    assert r == {c1: [tp(t1, 0), tp(t1, 2), tp(t2, 1)], c2: [tp(t1, 1), tp(t2, 0), tp(t2, 2)]}


def test_two_static_consumers_order_by_instance_id_not_member_id():
    subs = {"consumer-b": S([t1, t2], group_instance_id=i1), "consumer-a": S([t1, t2], group_instance_id=i2)}
    r = RangeAssignor().assign({t1: 3, t2: 3}, subs)
    assert r == {"consumer-b": [tp(t1, 0), tp(t1, 1), tp(t2, 0), tp(t2, 1)], "consumer-a": [tp(t1, 2), tp(t2, 2)]}
    r = RoundRobinAssignor().assign({t1: 3, t2: 3}, subs)
    assert r == {"consumer-b": [tp(t1, 0), tp(t1, 2), tp(t2, 1)], "consumer-a": [tp(t1, 1), tp(t2, 0), tp(t2, 2)]}


def test_static_member_sorts_before_dynamic_member():
    subs = {"consumer-b": S([t1, t2], group_instance_id=i1), "consumer-a": S([t1, t2])}
    r = RangeAssignor().assign({t1: 3, t2: 3}, subs)
    assert r == {"consumer-b": [tp(t1, 0), tp(t1, 1), tp(t2, 0), tp(t2, 1)], "consumer-a": [tp(t1, 2), tp(t2, 2)]}
    r = RoundRobinAssignor().assign({t1: 3, t2: 3}, subs)
    assert r == {"consumer-b": [tp(t1, 0), tp(t1, 2), tp(t2, 1)], "consumer-a": [tp(t1, 1), tp(t2, 0), tp(t2, 2)]}


def _static(ids):
    return {m: S([t1, t2], group_instance_id=i) for m, i in ids}


def test_range_static_member_assignment_persistent():
    subs = _static([(c1, i1), (c2, i2), (c3, i3)])
    subs[c4] = S([t1, t2])
    expected = {c1: [tp(t1, 0), tp(t1, 1), tp(t2, 0)], c2: [tp(t1, 2), tp(t2, 1)],
                c3: [tp(t1, 3), tp(t2, 2)], c4: [tp(t1, 4), tp(t2, 3)]}
    assert RangeAssignor().assign({t1: 5, t2: 4}, subs) == expected
    del subs[c4]
    subs[c5] = S([t1, t2])
    expected[c5] = expected.pop(c4)
    assert RangeAssignor().assign({t1: 5, t2: 4}, subs) == expected


def test_roundrobin_static_member_assignment_persistent():
    subs = _static([(c1, i1), (c2, i2), (c3, i3)])
    subs[c4] = S([t1, t2])
    expected = {c1: [tp(t1, 0), tp(t2, 1)], c2: [tp(t1, 1), tp(t2, 2)], c3: [tp(t1, 2)], c4: [tp(t2, 0)]}
    assert RoundRobinAssignor().assign({t1: 3, t2: 3}, subs) == expected
    del subs[c4]
    subs[c5] = S([t1, t2])
    expected[c5] = expected.pop(c4)
    assert RoundRobinAssignor().assign({t1: 3, t2: 3}, subs) == expected


def _by_instance(assignor, ppt, subs):
    r = assignor.assign(ppt, subs)
    return {s.group_instance_id: r[m] for m, s in subs.items() if s.group_instance_id}


@pytest.mark.parametrize("cls,expected", [
    (RangeAssignor, {i1: [tp(t1, 0), tp(t1, 1), tp(t2, 0), tp(t2, 1)],
                     i2: [tp(t1, 2), tp(t1, 3), tp(t2, 2), tp(t2, 3)], i3: [tp(t1, 4), tp(t2, 4)]}),
    (RoundRobinAssignor, {i1: [tp(t1, 0), tp(t1, 3), tp(t2, 1), tp(t2, 4)],
                          i2: [tp(t1, 1), tp(t1, 4), tp(t2, 2)], i3: [tp(t1, 2), tp(t2, 0), tp(t2, 3)]}),
])
def test_static_assignment_survives_member_id_changes(cls, expected):
    subs = _static([(c1, i1), (c2, i2), (c3, i3)])
    before = _by_instance(cls(), {t1: 5, t2: 5}, subs)
    assert before == expected
    subs[c4] = subs.pop(c3)
    subs[c5] = subs.pop(c2)
    assert _by_instance(cls(), {t1: 5, t2: 5}, subs) == before


def test_roundrobin_javadoc_unequal_subscriptions_example():
    """RoundRobinAssignor javadoc: C0 on t0; C1 on t0,t1; C2 on t0,t1,t2 with 1,2,3 partitions."""
    subs = {"C0": S(["t0"]), "C1": S(["t0", "t1"]), "C2": S(["t0", "t1", "t2"])}
    r = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, subs)
    assert r == {"C0": [tp("t0", 0)], "C1": [tp("t1", 0)],
                 "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)]}


def test_range_topic_order_follows_java_hashmap_not_insertion():
    """A member's list concatenates topics in Java HashMap order. "b" hashes to bucket 2 and
    "a" to bucket 1, so Kafka lists a's partitions first even when b was put first."""
    r = RangeAssignor().assign({"b": 1, "a": 1}, {c1: S(["b", "a"])})
    assert r == {c1: [tp("a", 0), tp("b", 0)]}


def test_bad_input_is_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match="topic 't'"):
        RangeAssignor().assign({"t": -1}, {c1: S(["t"])})
    with pytest.raises(TypeError, match="member 'x'"):
        RoundRobinAssignor().assign({"t": 1}, {"x": ["t"]})


def test_javadoc_examples():
    """RangeAssignor and RoundRobinAssignor javadocs: C0, C1 on t0, t1 with 3 partitions each."""
    subs = {"C0": S(["t0", "t1"]), "C1": S(["t0", "t1"])}
    assert RangeAssignor().assign({"t0": 3, "t1": 3}, subs) == {
        "C0": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)], "C1": [tp("t0", 2), tp("t1", 2)]}
    assert RoundRobinAssignor().assign({"t0": 3, "t1": 3}, subs) == {
        "C0": [tp("t0", 0), tp("t0", 2), tp("t1", 1)], "C1": [tp("t0", 1), tp("t1", 0), tp("t1", 2)]}
