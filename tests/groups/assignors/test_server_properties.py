"""Property tests (Hypothesis) for the coordinator's assignors on random groups: validity and the
balance each promises (:mod:`kraft.groups.assignors.server.check`), stickiness (assigning again
with the result as the current assignment changes nothing) and the homogeneous quota rule (a
member keeps as many of its current partitions as its quota allows). Each check is also shown
failing on a deliberately broken assignor."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraft.groups.assignors.server import GroupSpec, MemberSpec, ServerRangeAssignor, TopicDescriber, \
    UniformAssignor, Uuid, heterogeneous, uniform
from kraft.groups.assignors.server.check import problems
from kraft.groups.assignors.server.spec import member_order, record_assignment_order, subscription_type

from tests import examples
from .server_helpers import HETEROGENEOUS, HOMOGENEOUS, sets

MEMBERS = ["A", "B", "C", "consumer-1", "consumer-2", "m10", "m9", "\u4e2d", "x\U00010400", "Aa", "BB"]
ASSIGNORS = {"uniform": UniformAssignor, "range": ServerRangeAssignor}
LONG = 2**63


@st.composite
def groups(draw, homogeneous: bool | None = None, current: bool = True):
    ids = draw(st.lists(st.builds(Uuid, st.integers(-LONG, LONG - 1), st.integers(-LONG, LONG - 1)),
                        min_size=1, max_size=5, unique=True))
    counts = {t: draw(st.integers(0, 9)) for t in ids}
    members = draw(st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=8, unique=True))
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(ids), unique=True))
    subs = {m: common if homogeneous else draw(st.lists(st.sampled_from(ids), unique=True)) for m in members}
    held: dict[str, dict[Uuid, list[int]]] = {m: {} for m in members}
    if current:  # each partition held by nobody or by one member, subscribed or not
        for t in ids:
            for p in range(counts[t]):
                owner = draw(st.none() | st.sampled_from(members))
                if owner is not None:
                    held[owner].setdefault(t, []).append(p)
    instances = draw(st.lists(st.none() | st.sampled_from(["i1", "i2", "i3"]), min_size=len(members),
                              max_size=len(members)))
    seen: set[str] = set()
    specs = {}
    for m, inst in zip(member_order(members), instances):
        inst = None if inst in seen else inst
        seen.add(inst)
        specs[m] = MemberSpec(subs[m], record_assignment_order(held[m]), None, inst)
    return GroupSpec(specs, subscription_type(specs)), TopicDescriber(counts)


def again(group: GroupSpec, result) -> GroupSpec:
    """The same group with ``result`` as every member's current assignment, read back as the
    coordinator reads its target-assignment records."""
    specs = {m: MemberSpec(s.subscribed_topic_ids, record_assignment_order(
        {t: sorted(ps) for t, ps in result.get(m, {}).items()}), s.rack_id, s.instance_id)
        for m, s in group.members.items()}
    return GroupSpec(specs, group.subscription_type)


def stickiness_problems(name: str, group: GroupSpec, topics: TopicDescriber) -> list[str]:
    first = ASSIGNORS[name]().assign(group, topics)
    second = ASSIGNORS[name]().assign(again(group, first), topics)
    norm = {m: a for m, a in sets(first).items() if a}
    return [] if norm == {m: a for m, a in sets(second).items() if a} else [f"{name}: second run moved partitions"]


def quota_problems(group: GroupSpec, topics: TopicDescriber) -> list[str]:
    """Homogeneous uniform: a member keeps ``min(its current subscribed partitions, P // N)``."""
    result = UniformAssignor().assign(group, topics)
    out = []
    subscribed = set(next(iter(group.members.values())).subscribed_topic_ids)
    total = sum(topics.num_partitions(t) for t in subscribed)
    for m, spec in group.members.items():
        mine = {(t, p) for t, ps in spec.assignment.items() if t in subscribed for p in ps}
        kept = {(t, p) for t, ps in result.get(m, {}).items() for p in ps} & mine
        if len(kept) < min(len(mine), total // len(group.members)):
            out.append(f"{m} kept {len(kept)} of {len(mine)}")
    return out


@examples.MODEL()
@given(groups())
def test_valid_and_balanced(group_and_topics):
    group, topics = group_and_topics
    for name, cls in ASSIGNORS.items():
        assert problems(name, group, topics, cls().assign(group, topics)) == [], name


@examples.MODEL()
@given(groups())
def test_sticky_on_a_second_run(group_and_topics):
    group, topics = group_and_topics
    for name in ASSIGNORS:
        assert stickiness_problems(name, group, topics) == []


@examples.MODEL()
@given(groups(homogeneous=True))
def test_homogeneous_keeps_current_partitions_up_to_quota(group_and_topics):
    assert quota_problems(*group_and_topics) == []


# ---- the checks fail on broken assignors ---------------------------------------------------

T = [Uuid(0, i) for i in range(1, 4)]


def spec(kind, **members):
    return GroupSpec({m: MemberSpec(*args) for m, args in members.items()}, kind)


def test_validity_check_fails_when_unsubscribed_topics_are_kept(monkeypatch):
    """Broken: the heterogeneous builder keeps partitions of topics a member left."""
    group = spec(HETEROGENEOUS, A=([T[0]], {T[1]: (0,)}), B=([T[1]],))
    topics = TopicDescriber({T[0]: 1, T[1]: 1})
    assert problems("uniform", group, topics, UniformAssignor().assign(group, topics)) == []

    def keep_all(self):
        for m, s in self.group.members.items():
            self.target[m] = {t: set(ps) for t, ps in s.assignment.items()}
            for t, ps in s.assignment.items():
                for p in ps:
                    self.owners[t][p] = self.member_ids.index(m)
    monkeypatch.setattr(heterogeneous._Builder, "revoke_unsubscribed", keep_all)
    assert "not subscribed" in " ".join(problems("uniform", group, topics, UniformAssignor().assign(group, topics)))


def test_balance_check_fails_without_the_balancing_phase(monkeypatch):
    group = spec(HETEROGENEOUS, A=([T[0], T[1]], {T[0]: (0, 1, 2, 3)}), B=([T[0]],))
    topics = TopicDescriber({T[0]: 4, T[1]: 0})
    assert problems("uniform", group, topics, UniformAssignor().assign(group, topics)) == []
    monkeypatch.setattr(heterogeneous._Builder, "balance", lambda self: None)
    assert "unbalanced" in " ".join(problems("uniform", group, topics, UniformAssignor().assign(group, topics)))


def test_stickiness_check_fails_when_balancing_moves_at_a_difference_of_one(monkeypatch):
    """Broken: a topic whose subscribers' counts are one apart still has a partition moved, so
    every run moves one."""
    group = spec(HETEROGENEOUS, A=([T[0], T[1]],), B=([T[0]],))
    topics = TopicDescriber({T[0]: 3, T[1]: 0})
    assert stickiness_problems("uniform", group, topics) == []
    monkeypatch.setattr(heterogeneous._Builder, "balance_topic", _eager_balance_topic)
    assert stickiness_problems("uniform", group, topics) != []


def _eager_balance_topic(self, t, balancer, real=heterogeneous._Builder.balance_topic):
    counts = [self.sizes[i] for i in self.subscribers[t]]
    if max(counts) - min(counts) == 1:  # move one partition from the most to the least loaded anyway
        most = max(self.subscribers[t], key=lambda i: (self.sizes[i], i))
        least = min(self.subscribers[t], key=lambda i: (self.sizes[i], i))
        p = next((p for p, o in enumerate(self.owners[t]) if o == most), None)
        if p is not None:
            self.assign(t, p, least)
            return 0
    return real(self, t, balancer)


def test_quota_check_fails_when_current_partitions_are_ignored(monkeypatch):
    group = spec(HOMOGENEOUS, A=([T[0]],), B=([T[0]], {T[0]: (0, 1)}))
    topics = TopicDescriber({T[0]: 4})
    assert quota_problems(group, topics) == []
    monkeypatch.setattr(uniform.GroupSpec, "is_partition_assigned", lambda self, t, p: False)
    real = uniform._revoke_over_quota
    monkeypatch.setattr(uniform, "_revoke_over_quota", lambda g, s, total, un: real(
        GroupSpec({m: MemberSpec(x.subscribed_topic_ids) for m, x in g.members.items()}, g.subscription_type),
        s, total, un))
    assert quota_problems(group, topics) != []


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_range_and_uniform_balance_checks_fail_on_a_lopsided_assignment(name):
    group = spec(HOMOGENEOUS, A=([T[0]],), B=([T[0]],))
    topics = TopicDescriber({T[0]: 4})
    lopsided = {"A": {T[0]: {0, 1, 2}}, "B": {T[0]: {3}}}
    assert "unbalanced" in " ".join(problems(name, group, topics, lopsided))
    assert "given to nobody" in " ".join(problems(name, group, topics, {"A": {T[0]: {0, 1, 2}}, "B": {}}))


def test_large_groups_take_seconds_not_minutes():
    """1,000 members x 10,000 partitions over 100 topics, subscriptions split as in
    bench/server_assignors.py; the bench times 10,000 x 100,000."""
    ids = [Uuid(1, i) for i in range(100)]
    halves = (tuple(ids[:50]), tuple(ids[50:]))
    group = GroupSpec({f"member-{i}": MemberSpec(halves[i % 4 == 0]) for i in range(1_000)}, HETEROGENEOUS)
    topics = TopicDescriber({t: 100 for t in ids})
    for name, cls in ASSIGNORS.items():
        t0 = time.perf_counter()
        result = cls().assign(group, topics)
        assert time.perf_counter() - t0 < 10
        assert problems(name, group, topics, result) == []
