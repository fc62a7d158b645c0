"""KIP-881 rack-aware sticky assignment: the expected assignments of Kafka's
AbstractStickyAssignorTest rack tests (testRackAwareAssignmentWithUniformSubscription /
...WithNonEqualSubscription), replicas placed as Kafka's test helper places them."""

from __future__ import annotations

import pytest

from kraft.groups.assignors import CooperativeStickyAssignor, StickyAssignor, Subscription

from .helpers import parse
from .test_range_rack_aware_kafka_vectors import null_racks, partition_racks, racks

TOPICS = {"t1": 6, "t2": 7, "t3": 2}
ALL = ["t1", "t2", "t3"]


def verify(a, rf, broker_racks, consumer_racks, consumer_topics, owned, expected, mismatches):
    subs = {f"consumer{i}": Subscription(t, parse(owned[i]) if owned else [], -1, None, consumer_racks[i])
            for i, t in enumerate(consumer_topics)}
    pr = partition_racks(TOPICS, rf, broker_racks)
    r = a.assign(dict(TOPICS), subs, pr)
    got = [", ".join(sorted(str(p) for p in r[f"consumer{i}"])) for i in range(len(consumer_topics))]
    assert got == expected
    if mismatches >= 0:
        bad = [p for i, rack in enumerate(consumer_racks) if rack is not None
               for p in r[f"consumer{i}"] if rack not in pr[p]]
        assert len(bad) == mismatches, bad


def verify_twice(a, rf, br, cr, ct, expected, mismatches):
    """Kafka's verifyUniformSubscription/verifyNonEqualSubscription: fresh, then owning it."""
    verify(a, rf, br, cr, ct, None, expected, mismatches)
    verify(a, rf, br, cr, ct, expected, expected, mismatches)


UNIFORM = ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]
NON_EQUAL = ["t1-5, t2-0, t2-2, t2-4, t2-6", "t1-3, t2-1, t2-3, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-4, t3-1"]
OWNED = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]


@pytest.mark.parametrize("cls", [StickyAssignor, CooperativeStickyAssignor])
def test_rack_aware_uniform_subscription(cls):
    a = cls()
    ct = [ALL, ALL, ALL]
    verify_twice(a, 3, null_racks(3), racks(3), ct, UNIFORM, -1)
    verify_twice(a, 3, racks(3), null_racks(3), ct, UNIFORM, -1)
    a.prefer_rack_aware_logic = True
    verify_twice(a, 3, racks(3), racks(3), ct, UNIFORM, 0)
    verify_twice(a, 4, racks(4), racks(3), ct, UNIFORM, 0)
    a.prefer_rack_aware_logic = False
    verify_twice(a, 3, racks(3), racks(3), ct, UNIFORM, 0)
    verify_twice(a, 3, racks(3), ["d", "e", "f"], ct, UNIFORM, -1)
    verify_twice(a, 3, racks(3), [None, "e", "f"], ct, UNIFORM, -1)
    verify_twice(a, 1, racks(3), racks(3), ct, UNIFORM, 0)      # rack-aligned, replicas on one rack
    verify_twice(a, 2, racks(3), racks(3), ct, UNIFORM, 0)
    verify_twice(a, 3, racks(2), racks(3), ct, UNIFORM, 5)      # one consumer's rack has no replicas
    if cls is StickyAssignor:
        verify(a, 1, racks(3), racks(3), ct, OWNED, UNIFORM, 0)  # misaligned owners are moved
    else:
        # Kafka's test (written before KAFKA-15170) expects UNIFORM in one step from the
        # cooperative assignor too; since the fix, rack-misaligned owned partitions count as
        # transferring, so the cooperative assignor first keeps only what stays put and the
        # follow-up rebalance reaches the same UNIFORM result
        keep = [", ".join(sorted(set(UNIFORM[i].split(", ")) & set(OWNED[i].split(", ")))) for i in range(3)]
        assert keep == ["t1-0, t1-3", "t2-1", "t2-5, t3-1"]
        verify(a, 1, racks(3), racks(3), ct, OWNED, keep, 0)
        verify(a, 1, racks(3), racks(3), ct, keep, UNIFORM, 0)
    a.prefer_rack_aware_logic = True
    verify(a, 3, racks(3), racks(3), ct, UNIFORM, UNIFORM, 0)   # stickiness kept when racks match


@pytest.mark.parametrize("cls", [StickyAssignor, CooperativeStickyAssignor])
def test_rack_aware_non_equal_subscription(cls):
    a = cls()
    ct = [ALL, ALL, ["t1", "t3"]]
    verify_twice(a, 3, null_racks(3), racks(3), ct, NON_EQUAL, -1)
    verify_twice(a, 3, racks(3), null_racks(3), ct, NON_EQUAL, -1)
    a.prefer_rack_aware_logic = True
    verify_twice(a, 3, racks(3), racks(3), ct, NON_EQUAL, 0)
    verify_twice(a, 4, racks(4), racks(3), ct, NON_EQUAL, 0)
    a.prefer_rack_aware_logic = False
    verify_twice(a, 3, racks(3), racks(3), ct, NON_EQUAL, 0)
    verify_twice(a, 3, racks(3), ["d", "e", "f"], ct, NON_EQUAL, -1)
    verify_twice(a, 3, racks(3), [None, "e", "f"], ct, NON_EQUAL, -1)
    rf1 = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
    verify_twice(a, 1, racks(3), racks(3), ct, rf1, 4)
    verify_twice(a, 2, racks(3), racks(3), ct,
                 ["t1-3, t2-0, t2-2, t2-5, t2-6", "t1-0, t2-1, t2-3, t2-4, t3-0", "t1-1, t1-2, t1-4, t1-5, t3-1"], 0)
    verify_twice(a, 3, racks(2), racks(3), ct, NON_EQUAL, 5)


def test_rack_aware_non_equal_from_misaligned_owners_cooperative():
    a = CooperativeStickyAssignor()
    ct = [ALL, ALL, ["t1", "t3"]]
    intermediate = ["t1-3", "t2-1", "t3-1"]
    verify(a, 1, racks(3), racks(3), ct, OWNED, intermediate, 0)
    verify(a, 1, racks(3), racks(3), ct, intermediate,
           ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"], 4)


def test_uniform_subscription_transfer_ownership_list_is_right():
    """KAFKA-15170 (CooperativeStickyAssignorTest#testUniformSubscriptionTransferOwnershipListIsRight):
    replicas on racks a, b, a, b; c0 (rack a) owns t1-0, t1-1; c1 (rack b) owns t1-2, t1-3. The
    rack-misaligned t1-1 and t1-2 swap owners and both must be reported as transferring."""
    pr = {parse("t1-0")[0]: {"a"}, parse("t1-1")[0]: {"b"}, parse("t1-2")[0]: {"a"}, parse("t1-3")[0]: {"b"}}
    subs = {"c0": Subscription(["t1"], parse("t1-0, t1-1"), 1, None, "a"),
            "c1": Subscription(["t1"], parse("t1-2, t1-3"), 1, None, "b")}
    a = CooperativeStickyAssignor()
    r = a.assign({"t1": 4}, subs, pr)
    assert a.partitions_transferring_ownership == {parse("t1-2")[0]: "c0", parse("t1-1")[0]: "c1"}
    assert r == {"c0": parse("t1-0"), "c1": parse("t1-3")}   # held back until revoked
