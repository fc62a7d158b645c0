"""Kafka's AbstractStickyAssignorTest/StickyAssignorTest scenarios, ported (same inputs, same
expected assignments; our code). Member ids, topic names and generations are Kafka's, because
the results depend on Java HashMap iteration order of exactly those strings."""

from __future__ import annotations

import pytest

from kraft.groups.assignors import CooperativeStickyAssignor, StickyAssignor

from .helpers import S, assert_valid_and_balanced, is_fully_balanced, next_round, tp

GEN = 1
topic, topic1, topic2, topic3 = "topic", "topic1", "topic2", "topic3"
c, c1, c2, c3, c4 = "consumer", "consumer1", "consumer2", "consumer3", "consumer4"


@pytest.fixture(params=[StickyAssignor, CooperativeStickyAssignor], autouse=True)
def assignor_cls(request, monkeypatch):
    """Every scenario runs on both assignors, as Kafka runs AbstractStickyAssignorTest for both."""
    monkeypatch.setitem(globals(), "StickyAssignor", request.param)
    return request.param


def cooperative_follow_ups(a, ppt, subs, result, max_rebalances=4):
    """Kafka's CooperativeStickyAssignorTest.verifyValidityAndBalance: while partitions are being
    revoked, nothing may be added in the same rebalance; members then own what they got and
    rebalance again (mutating ``subs`` as Kafka's test mutates its HashMap); at most 4 times."""
    rebalances = 0
    while True:
        added, revoked = set(), set()
        for m, parts in result.items():
            owned = set(subs[m].owned_partitions)
            revoked |= owned - set(parts)
            added |= set(parts) - owned
        assert not (added & revoked), f"revoked and reassigned in one rebalance: {added & revoked}"
        if not revoked:
            return result
        for m in result:
            subs[m] = S(subs[m].topics, result[m], GEN)
        result = a.assign(ppt, subs)
        rebalances += 1
        assert rebalances <= max_rebalances


def run(ppt, subs, assignor=None):
    a = assignor or StickyAssignor()
    result = a.assign(ppt, subs)
    t = a.partitions_transferring_ownership
    a.first_transferring = None if t is None else dict(t)
    if isinstance(a, CooperativeStickyAssignor):
        result = cooperative_follow_ups(a, ppt, subs, result)
    assert_valid_and_balanced(subs, result, ppt)
    return a, result


def first(a):
    """partitionsTransferringOwnership as Kafka's tests read it: right after the first assign()."""
    return a.first_transferring


def test_one_consumer_no_topic():
    a, r = run({}, {c: S([])})
    assert r == {c: []} and first(a) == {}


def test_one_consumer_nonexistent_topic():
    a, r = run({topic: 0}, {c: S([topic])})
    assert r == {c: []} and first(a) == {}


def test_one_consumer_one_topic():
    _, r = run({topic: 3}, {c: S([topic])})
    assert r[c] == [tp(topic, 0), tp(topic, 1), tp(topic, 2)]


def test_only_assigns_partitions_from_subscribed_topics():
    subs = {c: S([topic], [tp(topic, 0), tp(topic, 1), tp("other", 0), tp("other", 1)], GEN)}
    a, r = run({topic: 2}, subs)
    assert r[c] == [tp(topic, 0), tp(topic, 1)] and first(a) == {}


def test_one_consumer_multiple_topics():
    _, r = run({topic1: 1, topic2: 2}, {c: S([topic1, topic2])})
    assert r[c] == [tp(topic1, 0), tp(topic2, 0), tp(topic2, 1)]


def test_two_consumers_one_topic_one_partition():
    _, r = run({topic: 1}, {c1: S([topic]), c2: S([topic])})
    assert is_fully_balanced(r)


def test_two_consumers_one_topic_two_partitions():
    _, r = run({topic: 2}, {c1: S([topic]), c2: S([topic])})
    assert r == {c1: [tp(topic, 0)], c2: [tp(topic, 1)]}


def test_multiple_consumers_mixed_topic_subscriptions():
    subs = {c1: S([topic1]), c2: S([topic1, topic2]), c3: S([topic1])}
    a, r = run({topic1: 3, topic2: 2}, subs)
    assert r == {c1: [tp(topic1, 0), tp(topic1, 2)], c2: [tp(topic2, 0), tp(topic2, 1)], c3: [tp(topic1, 1)]}
    assert first(a) is None  # the general path ran


def test_two_consumers_two_topics_six_partitions():
    subs = {c1: S([topic1, topic2]), c2: S([topic1, topic2])}
    _, r = run({topic1: 3, topic2: 3}, subs)
    assert r == {c1: [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1)],
                 c2: [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]}


def test_consumer_owning_min_quota_expected_max_quota():
    t = [topic1, topic2]
    subs = {c1: S(t, [tp(topic1, 0), tp(topic2, 1)], GEN), c2: S(t, [tp(topic1, 1), tp(topic2, 2)], GEN)}
    a, r = run({topic1: 2, topic2: 3}, subs)
    assert r == {c1: [tp(topic1, 0), tp(topic2, 1), tp(topic2, 0)], c2: [tp(topic1, 1), tp(topic2, 2)]}
    assert first(a) == {}


def test_max_quota_consumers_more_than_expected_max_capacity_members():
    t = [topic1, topic2]
    subs = {c1: S(t, [tp(topic1, 0), tp(topic2, 0)], GEN), c2: S(t, [tp(topic1, 1), tp(topic2, 1)], GEN),
            c3: S(t, [], GEN)}
    a, r = run({topic1: 2, topic2: 2}, subs)
    assert first(a) == {tp(topic2, 0): c3}
    assert r == {c1: [tp(topic1, 0)], c2: [tp(topic1, 1), tp(topic2, 1)], c3: [tp(topic2, 0)]}


def test_all_consumers_are_under_min_quota():
    t = [topic1, topic2]
    subs = {c1: S(t, [tp(topic1, 0)], GEN), c2: S(t, [tp(topic1, 1)], GEN), c3: S(t, [], GEN)}
    a, r = run({topic1: 2, topic2: 3}, subs)
    assert first(a) == {}
    assert r == {c1: [tp(topic1, 0), tp(topic2, 1)], c2: [tp(topic1, 1), tp(topic2, 2)], c3: [tp(topic2, 0)]}


def test_add_remove_consumer_one_topic():
    a = StickyAssignor()
    ppt = {topic: 3}
    _, r = run(ppt, {c1: S([topic])}, a)
    assert r[c1] == [tp(topic, 0), tp(topic, 1), tp(topic, 2)]
    subs = {c1: S([topic], r[c1], GEN), c2: S([topic], [], GEN)}
    _, r = run(ppt, subs, a)
    assert first(a) == {tp(topic, 2): c2}
    assert r == {c1: [tp(topic, 0), tp(topic, 1)], c2: [tp(topic, 2)]}
    _, r = run(ppt, {c2: S([topic], r[c2], GEN)}, a)
    assert set(r[c2]) == {tp(topic, 0), tp(topic, 1), tp(topic, 2)}
    assert first(a) == {}


def test_topic_balance_after_reassignment():
    a = StickyAssignor()
    t = [topic1, topic2]
    ppt = {topic1: 12, topic2: 12}

    def per_topic(r, n):
        for parts in r.values():
            assert sum(p.topic == topic1 for p in parts) == n and sum(p.topic == topic2 for p in parts) == n

    _, r = run(ppt, {c1: S(t)}, a)
    per_topic(r, 12)
    _, r = run(ppt, {c1: S(t, r[c1], GEN), c2: S(t, [], GEN)}, a)
    per_topic(r, 6)
    subs = {c1: S(t, r[c1], GEN), c2: S(t, r[c2], GEN), c3: S(t, [], GEN), c4: S(t, [], GEN)}
    _, r = run(ppt, subs, a)
    per_topic(r, 3)
    _, r = run(ppt, {c3: S(t, r[c3], GEN), c4: S(t, r[c4], GEN)}, a)
    per_topic(r, 6)
    assert first(a) == {}


def test_add_remove_two_consumers_two_topics():
    a = StickyAssignor()
    t = [topic1, topic2]
    ppt = {topic1: 3, topic2: 4}
    _, r = run(ppt, {c1: S(t), c2: S(t)}, a)
    assert r == {c1: [tp(topic1, 0), tp(topic1, 2), tp(topic2, 1), tp(topic2, 3)],
                 c2: [tp(topic1, 1), tp(topic2, 0), tp(topic2, 2)]}
    subs = {c1: S(t, r[c1], GEN), c2: S(t, r[c2], GEN), c3: S(t, [], GEN), c4: S(t, [], GEN)}
    _, r = run(ppt, subs, a)
    assert first(a) == {tp(topic1, 2): c3, tp(topic2, 3): c3, tp(topic2, 2): c4}
    assert r == {c1: [tp(topic1, 0), tp(topic2, 1)], c2: [tp(topic2, 0), tp(topic1, 1)],
                 c3: [tp(topic1, 2), tp(topic2, 3)], c4: [tp(topic2, 2)]}
    _, r = run(ppt, {c3: S(t, r[c3], GEN), c4: S(t, r[c4], GEN)}, a)
    assert r == {c3: [tp(topic1, 2), tp(topic2, 3), tp(topic1, 0), tp(topic2, 1)],
                 c4: [tp(topic2, 2), tp(topic1, 1), tp(topic2, 0)]}
    assert first(a) == {}


def test_poor_round_robin_assignment_scenario():
    ppt = {f"topic{i}": (i % 2) + 1 for i in range(1, 6)}
    subs = {"consumer1": S(["topic1", "topic2", "topic3", "topic4", "topic5"]),
            "consumer2": S(["topic1", "topic3", "topic5"]),
            "consumer3": S(["topic1", "topic3", "topic5"]),
            "consumer4": S(["topic1", "topic2", "topic3", "topic4", "topic5"])}
    run(ppt, subs)


def test_add_remove_topic_two_consumers():
    a = StickyAssignor()
    ppt = {topic: 3}
    _, r1 = run(ppt, {c1: S([topic]), c2: S([topic])}, a)
    assert sorted(map(len, r1.values())) == [1, 2]
    ppt = {topic: 3, topic2: 3}
    t = [topic, topic2]
    _, r2 = run(ppt, {c1: S(t, r1[c1], GEN), c2: S(t, r1[c2], GEN)}, a)
    assert len(r2[c1]) == 3 and len(r2[c2]) == 3
    assert set(r1[c1]) <= set(r2[c1]) and set(r1[c2]) <= set(r2[c2])
    ppt = {topic2: 3}
    _, r3 = run(ppt, {c1: S([topic2], r2[c1], GEN), c2: S([topic2], r2[c2], GEN)}, a)
    assert sorted(map(len, r3.values())) == [1, 2]
    assert set(r3[c1]) <= set(r2[c1]) and set(r3[c2]) <= set(r2[c2])


def name(prefix: str, i: int, max_num: int) -> str:
    """Kafka's getCanonicalName: zero-padded to the width of max_num."""
    return prefix + str(i).zfill(len(str(max_num)))


def test_reassignment_after_one_consumer_leaves():
    a = StickyAssignor()
    ppt = {name("t", i, 20): i for i in range(1, 20)}
    subs = {name("c", i, 20): S([name("t", j, 20) for j in range(1, i + 1)]) for i in range(1, 20)}
    _, r = run(ppt, subs, a)
    subs = next_round(subs, r, GEN)
    del subs["c10"]
    _, r = run(ppt, subs, a)
    assert a.is_sticky()


def test_reassignment_after_one_consumer_added():
    a = StickyAssignor()
    ppt = {"topic": 20}
    subs = {name("c", i, 10): S(["topic"]) for i in range(1, 10)}
    _, r = run(ppt, subs, a)
    assert first(a) == {}
    subs[name("c", 10, 10)] = S(["topic"])
    _, r = run(ppt, subs, a)
    assert first(a) == {}


def test_same_subscriptions():
    a = StickyAssignor()
    ppt = {name("t", i, 15): i for i in range(1, 15)}
    topics = [name("t", j, 15) for j in range(1, len(ppt) + 1)]
    subs = {name("c", i, 9): S(topics) for i in range(1, 9)}
    _, r = run(ppt, subs, a)
    subs = next_round(subs, r, GEN)
    del subs[name("c", 5, 9)]
    _, r = run(ppt, subs, a)
    assert first(a) == {}


@pytest.mark.parametrize("gens", [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)])
def test_subscription_not_equal_and_same_partition_with_3_generations(gens):
    ppt = {topic: 6, topic1: 1}
    subs = {c1: S([topic], [tp(topic, 0), tp(topic, 2)], gens[0]),
            c2: S([topic], [tp(topic, 1), tp(topic, 2), tp(topic, 3)], gens[1]),
            c3: S([topic], [tp(topic, 2), tp(topic, 4), tp(topic, 5)], gens[2]),
            c4: S([topic1], [tp(topic1, 0)], 2)}
    _, r = run(ppt, subs)
    flat = [p for ps in r.values() for p in ps]
    assert len(flat) == len(set(flat))
    assert all(1 <= len(ps) <= 2 for ps in r.values())


def test_new_subscription():
    a = StickyAssignor()
    ppt = {name("t", i, 5): 1 for i in range(1, 5)}
    subs = {name("c", i, 3): S([name("t", j, 5) for j in range(i, 3 * i - 1)]) for i in range(3)}
    _, r = run(ppt, subs, a)
    subs[name("c", 0, 3)] = S(list(subs[name("c", 0, 3)].topics) + [name("t", 1, 5)])
    _, r = run(ppt, subs, a)
    assert a.is_sticky()


def test_move_existing_assignments():
    ppt = {f"topic{i}": 1 for i in range(1, 7)}
    subs = {c1: S([topic1, topic2], [tp(topic1, 0)], GEN),
            c2: S([topic1, topic2, topic3, "topic4"], [tp(topic2, 0), tp(topic3, 0)], GEN),
            c3: S([topic2, topic3, "topic4", "topic5", "topic6"],
                  [tp("topic4", 0), tp("topic5", 0), tp("topic6", 0)], GEN)}
    a, _ = run(ppt, subs)
    assert first(a) is None


def test_stickiness():
    a = StickyAssignor()
    ppt = {topic1: 3}
    subs = {m: S([topic1]) for m in (c1, c2, c3, c4)}
    _, r = run(ppt, subs, a)
    assert all(len(v) <= 1 for v in r.values())
    before = {m: v[0] for m, v in r.items() if v}
    subs = {m: S([topic1], r[m], GEN) for m in (c2, c3, c4)}
    _, r = run(ppt, subs, a)
    for m, v in r.items():
        assert len(v) == 1
        assert m not in before or before[m] in v


def test_assignment_updated_for_deleted_topic():
    a, r = run({topic1: 1, topic3: 100}, {c: S([topic1, topic2, topic3])})
    assert sum(map(len, r.values())) == 101 and first(a) == {}


def test_no_exception_when_only_subscribed_topic_deleted():
    a = StickyAssignor()
    _, r = run({topic: 3}, {c: S([topic])}, a)
    r = a.assign({}, {c: S([topic], r[c], GEN)})
    assert r == {c: []} and a.partitions_transferring_ownership == {}


def test_all_consumers_reach_expected_quota_and_are_considered_filled():
    subs = {c1: S([topic], [tp(topic, 0), tp(topic, 1)], GEN), c2: S([topic], [tp(topic, 2)], GEN),
            c3: S([topic], [], GEN)}
    a, r = run({topic: 4}, subs)
    assert r == {c1: [tp(topic, 0), tp(topic, 1)], c2: [tp(topic, 2)], c3: [tp(topic, 3)]}
    assert first(a) == {}


@pytest.mark.parametrize("older", [9, -1], ids=["stale-generation", "no-generation"])
def test_owned_partitions_invalidated_for_older_generation(older):
    t = [topic, topic2]
    owned = [tp(topic, 0), tp(topic, 2), tp(topic2, 1)]
    a, r = run({topic: 3, topic2: 3}, {c1: S(t, owned, 10), c2: S(t, owned, older)})
    assert set(r[c1]) == set(owned)
    assert set(r[c2]) == {tp(topic, 1), tp(topic2, 0), tp(topic2, 2)}
    assert first(a) == {}


def test_partition_claimed_by_two_members_of_one_generation_is_transferring():
    """KAFKA-14639: equal-generation double claims are invalidated."""
    subs = {c1: S([topic], [tp(topic, 0), tp(topic, 1)], GEN), c2: S([topic], [tp(topic, 0), tp(topic, 2)], GEN),
            c3: S([topic], [], GEN)}
    a, r = run({topic: 3}, subs)
    assert first(a) == {tp(topic, 0): c3}
    assert r == {c1: [tp(topic, 1)], c2: [tp(topic, 2)], c3: [tp(topic, 0)]}


def test_partitions_go_to_highest_generation():
    t = [topic, topic2, topic3]
    subs = {c1: S(t, [tp(topic, 0), tp(topic2, 0), tp(topic3, 0)], 10),
            c2: S(t, [tp(topic, 1), tp(topic2, 1), tp(topic3, 1)], 9),
            c3: S(t, [tp(topic2, 1), tp(topic3, 0), tp(topic3, 2)], 8)}
    a, r = run({topic: 3, topic2: 3, topic3: 3}, subs)
    assert set(r[c1]) == {tp(topic, 0), tp(topic2, 0), tp(topic3, 0)}
    assert set(r[c2]) == {tp(topic, 1), tp(topic2, 1), tp(topic3, 1)}
    assert set(r[c3]) == {tp(topic, 2), tp(topic2, 2), tp(topic3, 2)}
    assert first(a) == {}


def test_no_reassignment_on_current_members():
    t = [topic, topic2, topic3, topic1]
    subs = {c1: S(t, [], -1),
            c2: S(t, [tp(topic, 0), tp(topic2, 0), tp(topic1, 0)], 9),
            c3: S(t, [tp(topic3, 2), tp(topic2, 2), tp(topic1, 1)], 8),
            c4: S(t, [tp(topic3, 1), tp(topic, 1), tp(topic, 2)], 7)}
    a, r = run({topic: 3, topic1: 3, topic2: 3, topic3: 3}, subs)
    assert set(r[c1]) == {tp(topic1, 2), tp(topic2, 1), tp(topic3, 0)}
    assert first(a) == {}


def test_owned_partitions_invalidated_for_member_with_multiple_generations():
    t = [topic, topic2]
    subs = {c1: S(t, [tp(topic, 0), tp(topic2, 1), tp(topic, 1)], 10),
            c2: S(t, [tp(topic, 0), tp(topic2, 1), tp(topic2, 2)], 8)}
    a, r = run({topic: 3, topic2: 3}, subs)
    assert set(r[c1]) == {tp(topic, 0), tp(topic2, 1), tp(topic, 1)}
    assert set(r[c2]) == {tp(topic, 2), tp(topic2, 2), tp(topic2, 0)}
    assert first(a) == {}


# ---- CooperativeStickyAssignorTest-only scenarios -------------------------------------------

@pytest.mark.parametrize("n,expected_c1", [(3, [tp(topic, 1)]), (4, [tp(topic, 1), tp(topic, 3)])],
                         ids=["equal-partitions-per-consumer", "unequal-partitions-per-consumer"])
def test_cooperative_double_claimed_partition_is_held_back(n, expected_c1):
    """KAFKA-14639: topic-0, claimed by two members of one generation, counts as owned and is
    handed out only after both revoked it."""
    subs = {c1: S([topic], [tp(topic, 0), tp(topic, 1)], GEN), c2: S([topic], [tp(topic, 0), tp(topic, 2)], GEN),
            c3: S([topic], [], GEN)}
    r = CooperativeStickyAssignor().assign({topic: n}, subs)
    assert r == {c1: expected_c1, c2: [tp(topic, 2)], c3: []}


def test_cooperative_with_old_version_subscriptions():
    t = [topic1]
    subs = {c1: S(t, [tp(topic1, 0)], GEN), c2: S(t, [tp(topic1, 1)], GEN), c3: S(t, [], GEN)}
    a, r = run({topic1: 3}, subs, CooperativeStickyAssignor())
    assert r == {c1: [tp(topic1, 0)], c2: [tp(topic1, 1)], c3: [tp(topic1, 2)]}


def test_cooperative_uniform_subscription_transfer_list():
    subs = {"c0": S([topic1], [tp(topic1, 0), tp(topic1, 1)], GEN), "c1": S([topic1], [tp(topic1, 2), tp(topic1, 3)], GEN)}
    a = CooperativeStickyAssignor()
    a.assign({topic1: 4}, subs)
    # no racks here, so nothing has to move (Kafka's version of this test moves 2 for rack alignment)
    assert a.partitions_transferring_ownership == {}


def test_cooperative_removes_exactly_the_partitions_changing_owner():
    """First rebalance after a member joins: the newcomer gets nothing that someone still owns."""
    subs = {c1: S([topic], [tp(topic, 0), tp(topic, 1), tp(topic, 2)], GEN), c2: S([topic], [], GEN)}
    a = CooperativeStickyAssignor()
    r = a.assign({topic: 3}, subs)
    assert r == {c1: [tp(topic, 0), tp(topic, 1)], c2: []}
    r2 = a.assign({topic: 3}, {c1: S([topic], r[c1], GEN + 1), c2: S([topic], r[c2], GEN + 1)})
    assert r2 == {c1: [tp(topic, 0), tp(topic, 1)], c2: [tp(topic, 2)]}


# ---- StickyAssignorTest-only scenarios (eager assignor) -----------------------------------

def test_sticky_double_claim_unequal_partitions_per_consumer():
    subs = {c1: S([topic], [tp(topic, 0), tp(topic, 1)], GEN), c2: S([topic], [tp(topic, 0), tp(topic, 2)], GEN),
            c3: S([topic], [], GEN)}
    a, r = run({topic: 4}, subs, _eager())
    assert r == {c1: [tp(topic, 1), tp(topic, 3)], c2: [tp(topic, 2)], c3: [tp(topic, 0)]}


def _eager():
    from kraft.groups.assignors import StickyAssignor as Eager
    return Eager()


@pytest.mark.parametrize("equal", [True, False], ids=["equal", "unequal"])
def test_sticky_assignment_with_multiple_generations_1(equal):
    a = _eager()
    all_t = [topic, topic2]
    c2_topics = all_t if equal else [topic]
    ppt = {topic: 6, topic2: 6}
    _, r1 = run(ppt, {c1: S(all_t), c2: S(c2_topics), c3: S(all_t)}, a)
    assert [len(r1[m]) for m in (c1, c2, c3)] == [4, 4, 4]
    _, r2 = run(ppt, {c1: S(all_t, r1[c1], GEN), c2: S(c2_topics, r1[c2], GEN)}, a)
    assert len(r2[c1]) == 6 and len(r2[c2]) == 6
    if equal:
        assert set(r1[c1]) <= set(r2[c1])
    assert set(r1[c2]) <= set(r2[c2])
    assert set(r2[c2]) & set(r1[c3])
    _, r3 = run(ppt, {c2: S(c2_topics, r2[c2], 2), c3: S(all_t, r1[c3], 1)}, a)
    assert len(r3[c2]) == 6 and len(r3[c3]) == 6 and not set(r3[c2]) & set(r3[c3])


@pytest.mark.parametrize("equal", [True, False], ids=["equal", "unequal"])
def test_sticky_assignment_with_multiple_generations_2(equal):
    a = _eager()
    all_t = [topic, topic2, topic3]
    t1 = all_t if equal else [topic]
    t3 = all_t if equal else [topic, topic2]
    ppt = {topic: 4, topic2: 4, topic3: 4}
    _, r1 = run(ppt, {c1: S(t1), c2: S(all_t), c3: S(t3)}, a)
    assert [len(r1[m]) for m in (c1, c2, c3)] == [4, 4, 4]
    _, r2 = run(ppt, {c2: S(all_t, r1[c2], 1)}, a)
    assert len(r2[c2]) == 12 and set(r1[c2]) <= set(r2[c2])
    _, r3 = run(ppt, {c1: S(t1, r1[c1], 1), c2: S(all_t, r2[c2], 2), c3: S(t3, r1[c3], 1)}, a)
    assert [len(r3[m]) for m in (c1, c2, c3)] == [4, 4, 4]


@pytest.mark.parametrize("equal", [True, False], ids=["equal", "unequal"])
def test_sticky_assignment_with_conflicting_previous_generations(equal):
    all_t = [topic, topic2, topic3]
    ppt = {topic: 4, topic2: 4, topic3: 4}
    T = lambda name, i: tp(name, i)  # noqa: E731
    c1p0 = ([T(topic, 0), T(topic, 1), T(topic, 2), T(topic2, 2), T(topic2, 3), T(topic3, 0)] if equal
            else [T(topic, i) for i in range(4)])
    c2p0 = [T(topic, 0), T(topic, 1), T(topic2, 0), T(topic2, 1), T(topic2, 2), T(topic2, 3)]
    c3p0 = [T(topic, 2), T(topic, 3), T(topic3, 0), T(topic3, 1), T(topic3, 2), T(topic3, 3)]
    subs = {c1: S(all_t if equal else [topic], c1p0, 1), c2: S(all_t if equal else [topic, topic2], c2p0, 2),
            c3: S(all_t, c3p0, 2)}
    _, r = run(ppt, subs, _eager())
    assert [len(r[m]) for m in (c1, c2, c3)] == [4, 4, 4]
    assert set(r[c2]) <= set(c2p0) and set(r[c3]) <= set(c3p0)


def test_sticky_schema_backward_compatibility():
    """consumer2 uses the old user-data schema without a generation (-1 here)."""
    subs = {c1: S([topic], [tp(topic, 0), tp(topic, 2)], 1), c2: S([topic], [tp(topic, 1)], -1), c3: S([topic])}
    _, r = run({topic: 3}, subs, _eager())
    assert [len(r[m]) for m in (c1, c2, c3)] == [1, 1, 1]
    assert set(r[c1]) <= {tp(topic, 0), tp(topic, 2)} and r[c2] == [tp(topic, 1)]


def test_sticky_javadoc_examples():
    """StickyAssignor's javadoc. Example 1 (three members, four topics of 2): the first
    assignment is the javadoc's exactly. After C1 leaves, the javadoc (written for the original
    algorithm, before KAFKA-9987's constrained path) lists C0 +t2p0 and C2 +t0p1 +t3p1; the
    current constrained path keeps the owned partitions sorted by partition and deals
    t0-1, t2-0, t3-1 round-robin, so C0 gets t0-1: equally sticky (all 5 kept), as Kafka's
    current code does. Example 2 (1, 2, 3 partitions; nested subscriptions) matches exactly."""
    a = _eager()
    t = ["t0", "t1", "t2", "t3"]
    ppt = {x: 2 for x in t}
    r = a.assign(ppt, {"C0": S(t), "C1": S(t), "C2": S(t)})
    assert r == {"C0": [tp("t0", 0), tp("t1", 1), tp("t3", 0)], "C1": [tp("t0", 1), tp("t2", 0), tp("t3", 1)],
                 "C2": [tp("t1", 0), tp("t2", 1)]}
    r2 = _eager().assign(ppt, {"C0": S(t, r["C0"], 1), "C2": S(t, r["C2"], 1)})
    assert r2 == {"C0": [tp("t0", 0), tp("t3", 0), tp("t1", 1), tp("t0", 1)],
                  "C2": [tp("t1", 0), tp("t2", 1), tp("t2", 0), tp("t3", 1)]}
    ppt = {"t0": 1, "t1": 2, "t2": 3}
    subs = {"C0": S(["t0"]), "C1": S(["t0", "t1"]), "C2": S(["t0", "t1", "t2"])}
    r = _eager().assign(ppt, subs)
    assert r == {"C0": [tp("t0", 0)], "C1": [tp("t1", 0), tp("t1", 1)], "C2": [tp("t2", 0), tp("t2", 1), tp("t2", 2)]}
    r2 = _eager().assign(ppt, {"C1": S(["t0", "t1"], r["C1"], 1), "C2": S(["t0", "t1", "t2"], r["C2"], 1)})
    assert r2 == {"C1": [tp("t1", 0), tp("t1", 1), tp("t0", 0)], "C2": [tp("t2", 0), tp("t2", 1), tp("t2", 2)]}
