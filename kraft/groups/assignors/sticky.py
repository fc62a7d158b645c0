"""``StickyAssignor`` (``sticky``) and ``CooperativeStickyAssignor`` (``cooperative-sticky``).

A port of the *rules* of Kafka's ``AbstractStickyAssignor`` (clients, 3.5+ structure), written
from its documented behaviour and source reading; see docs/assignors.md for the derivation.

Two paths, chosen by ``all_subscriptions_equal`` (KAFKA-9987 made the common case fast):

* **constrained** (every member subscribes to the same topics): quotas
  ``min_quota = P // N``, ``max_quota = ceil(P / N)``, exactly ``P % N`` members get
  ``max_quota``. Each member keeps up to its quota of still-valid owned partitions (sorted by
  partition number, then topic), the rest are dealt round-robin to the members still under
  quota (sorted by member id), then to members at ``min_quota`` that may still take one more.
  Linear-ish time: 1,000 members x 10,000 partitions take well under a second.
* **general** (different subscriptions): keep valid owned partitions, give every unassigned
  partition to the least-loaded eligible member, then move partitions (topics with fewer
  potential members first) while some member has 2+ fewer partitions than another member
  that holds a partition it could take; a partition goes back to a previous owner of an
  older generation when that helps; moves that would undo an earlier move of the same topic
  are redirected (``PartitionMovements``) so no two members swap partitions; if the result is
  not better balanced than before the moves (``balance score``), it is reverted.

Ownership claims (``all_subscriptions_equal`` fills them for both paths):

* claims on topics that are not in the metadata are ignored;
* when two members claim a partition, the higher generation wins; with *equal* generations
  the claim is invalid for both and the partition is treated as unowned (KAFKA-14639:
  ``partitionsWithMultiplePreviousOwners``); in the constrained path such a partition is
  also removed from any later claimant and counts as transferring ownership.

The cooperative assignor then removes from the result every partition that changes owner
(it must be revoked first; the next rebalance hands it over), computing the set from the
owned partitions when the general path ran.

Rack awareness (KIP-881, as in current Kafka including KAFKA-15170): with member racks and
replica racks (``partition_racks``), and unless every partition lives on the same racks,
owned partitions on a foreign rack are given up (and count as transferring), unassigned
partitions go to rack-matching members first within the same quotas (constrained path:
round-robin over the under-quota members starting after the last one used; general path:
the least-loaded rack-matching member), and only then to anyone.

Where Kafka's result depends on Java ``HashMap``/``HashSet`` iteration order we model it
(kraft.client.java): members are visited in the ``HashMap<String, Subscription>`` order, and
the "actual partition to move" is the first element of a ``HashSet<TopicPartition>``.

Kafka quirk kept on purpose: ``maxGeneration`` lives on the assignor instance and is never
reset, so reusing one assignor object across rebalances remembers the highest generation seen
(Kafka's consumer keeps one assignor object for its lifetime; create a fresh one per
rebalance to get a memoryless assignor).

Departures (inputs on which Kafka itself misbehaves; documented, tested):

* owned partitions whose number is outside ``0..count-1`` are ignored (Kafka keeps them and
  its sorted-merge then double-assigns later partitions);
* in the general path the "give it back to the previous owner" rule is only applied when
  that owner is still a participating member subscribed to the topic (Kafka throws a
  ``NullPointerException`` or hands the partition to an unsubscribed member).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Iterable, Mapping

from kraft.client.java import JavaHashOrder, java_str_key

from .base import members_in_java_order
from .range import _use_rack_aware
from .types import Subscription, TopicPartition, validate_inputs

DEFAULT_GENERATION = -1


class AssignorError(RuntimeError):
    """Kafka's ``IllegalStateException`` from the constrained path (an algorithm error)."""


class _RackInfo:
    """``AbstractStickyAssignor.RackInfo``: consumer racks and replica racks, used only when
    rack-aware assignment applies (some consumer has a rack, it meets some replica rack, and
    not every partition is on the same set of racks, unless ``prefer_rack_aware_logic``)."""

    def __init__(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription],
                 members: list[str], replica_racks: Mapping[TopicPartition, Iterable[str]] | None,
                 prefer: bool) -> None:
        consumers_by_rack: dict[str, int] = {}
        for m in members:
            rack = subscriptions[m].rack
            if rack:
                consumers_by_rack[rack] = consumers_by_rack.get(rack, 0) + 1
        racks_of: dict[TopicPartition, frozenset[str]] = {}
        all_partition_racks: set[str] = set()
        if consumers_by_rack:
            given = replica_racks or {}
            for t, n in partitions_per_topic.items():
                for i in range(n):
                    p = TopicPartition(t, i)
                    r = frozenset(x for x in given.get(p, ()) if x is not None)
                    racks_of[p] = r
                    all_partition_racks |= r
        if _use_rack_aware(set(consumers_by_rack), all_partition_racks, racks_of, prefer):
            self.consumer_racks = {m: subscriptions[m].rack for m in members if subscriptions[m].rack}
            self.partition_racks = racks_of
        else:
            self.consumer_racks = {}
            self.partition_racks = {}
        # Kafka computes this from the local replica-rack map, i.e. even when rack-aware
        # assignment ends up unused (it then only reorders partitions with equal counts)
        self.consumers_on_racks = {p: sum(consumers_by_rack.get(r, 0) for r in rs) for p, rs in racks_of.items()}

    def racks_mismatch(self, consumer: str, p: TopicPartition) -> bool:
        rack = self.consumer_racks.get(consumer)
        replicas = self.partition_racks.get(p)
        return rack is not None and (replicas is None or rack not in replicas)

    def sort_by_rack_consumers(self, parts: list[TopicPartition]) -> list[TopicPartition]:
        if not self.consumers_on_racks:
            return parts
        return sorted(parts, key=lambda p: self.consumers_on_racks.get(p, 0))  # stable, as List.sort

    def next_rack_consumer(self, p: TopicPartition, consumers: list[str], first: int) -> int:
        racks = self.partition_racks.get(p)
        if not racks:
            return -1
        n = len(consumers)
        for i in range(n):
            idx = (first + i) % n
            rack = self.consumer_racks.get(consumers[idx])
            if rack is not None and rack in racks:
                return idx
        return -1


class _SortedMembers:
    """``TreeSet<String>`` ordered by (assigned count, member id), as Kafka's
    ``SubscriptionComparator``. Keys are taken at insertion time; Kafka always removes a member
    before changing its count and re-adds it afterwards, and so do we."""

    def __init__(self, assignment: dict[str, list[TopicPartition]]) -> None:
        self._assignment = assignment
        self._keys: list[tuple[int, bytes, str]] = []
        self._key_of: dict[str, tuple[int, bytes, str]] = {}

    def add(self, member: str) -> None:
        if member in self._key_of:
            return
        key = (len(self._assignment[member]), java_str_key(member), member)
        self._key_of[member] = key
        bisect.insort(self._keys, key)

    def remove(self, member: str) -> None:
        key = self._key_of.pop(member, None)
        if key is not None:
            i = bisect.bisect_left(self._keys, key)
            del self._keys[i]

    def first(self) -> str:
        return self._keys[0][2]

    def last(self) -> str:
        return self._keys[-1][2]

    def __iter__(self):
        # live iteration: callers stop iterating as soon as they change the set (as Kafka's do)
        return (k[2] for k in self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class _PartitionMovements:
    """Kafka's ``PartitionMovements``: where each moved partition came from, per topic and
    (source, destination) pair, to avoid two members swapping partitions of one topic."""

    def __init__(self) -> None:
        self.movements: dict[TopicPartition, tuple[str, str]] = {}
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashOrder[TopicPartition]]] = {}

    def _remove_record(self, p: TopicPartition) -> tuple[str, str]:
        pair = self.movements.pop(p)
        per_topic = self.by_topic[p.topic]
        per_topic[pair].discard(p)
        if not len(per_topic[pair]):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[p.topic]
        return pair

    def _add_record(self, p: TopicPartition, pair: tuple[str, str]) -> None:
        self.movements[p] = pair
        per_topic = self.by_topic.setdefault(p.topic, {})
        if pair not in per_topic:
            per_topic[pair] = JavaHashOrder(TopicPartition.java_hash)  # new HashSet<>()
        per_topic[pair].add(p)

    def move(self, p: TopicPartition, old: str, new: str) -> None:
        if p in self.movements:
            src, _dst = self._remove_record(p)
            if src != new:
                self._add_record(p, (src, new))
        else:
            self._add_record(p, (old, new))

    def actual_partition_to_move(self, p: TopicPartition, old: str, new: str) -> TopicPartition:
        per_topic = self.by_topic.get(p.topic)
        if per_topic is None:
            return p
        if p in self.movements:
            old = self.movements[p][0]
        reverse = per_topic.get((new, old))
        if reverse is None:
            return p
        return reverse.first()  # HashSet.iterator().next()

    def is_sticky(self) -> bool:
        """No topic has partitions that moved both ways between one pair of members."""
        for per_topic in self.by_topic.values():
            pairs = set(per_topic)
            if any((b, a) in pairs for a, b in pairs):
                return False
        return True


class AbstractStickyAssignor:
    """The shared sticky algorithm. Subclasses decide how to post-process (cooperative)."""

    name = "abstract-sticky"

    def __init__(self, EmptySubscriptionCountsAsEqual: bool = False,  # noqa: N803
                 prefer_rack_aware_logic: bool = False) -> None:
        """``EmptySubscriptionCountsAsEqual`` switches on a Kafka bug (off by default, as every
        bug variant in this project): ``allSubscriptionsEqual`` takes the topic set from the
        first member whose set is *non-empty*, so when a member with an empty subscription
        (e.g. a pattern matching nothing) comes first in HashMap order, the group counts as
        equally subscribed and the constrained path hands that member partitions of topics it
        does not subscribe to. Found by our validity property test."""
        self.EmptySubscriptionCountsAsEqual = EmptySubscriptionCountsAsEqual
        # Kafka's test-only AbstractPartitionAssignor.preferRackAwareLogic
        self.prefer_rack_aware_logic = prefer_rack_aware_logic
        # Kafka keeps this on the instance across assign() calls (see module docstring).
        self.max_generation = DEFAULT_GENERATION
        self.partitions_transferring_ownership: dict[TopicPartition, str] | None = {}
        self.partition_movements: _PartitionMovements | None = None
        self.used_constrained_path: bool | None = None

    # ---- claims ---------------------------------------------------------------------
    def _all_subscriptions_equal(self, partitions_per_topic: dict[str, int],
                                 subscriptions: dict[str, Subscription], members: list[str],
                                 owned: dict[str, list[TopicPartition]],
                                 multiple_owners: set[TopicPartition]) -> bool:
        equal = True
        subscribed: set[str] = set()
        prev_owner: dict[TopicPartition, str] = {}
        first = True
        for c in members:
            sub = subscriptions[c]
            if first or (self.EmptySubscriptionCountsAsEqual and not subscribed):
                subscribed.update(sub.topics)
                first = False
            elif equal and not (len(sub.topics) == len(subscribed) and subscribed.issuperset(sub.topics)):
                equal = False
            gen = sub.generation
            self.max_generation = max(self.max_generation, gen)
            mine: list[TopicPartition] = []
            owned[c] = mine
            for p in sub.owned_partitions:
                count = partitions_per_topic.get(p.topic)
                if count is None or not (0 <= p.partition < count):
                    continue
                other = prev_owner.get(p)
                if other is None:
                    mine.append(p)
                    prev_owner[p] = c
                    continue
                other_gen = subscriptions[other].generation
                if gen == other_gen:
                    # KAFKA-14639: two claims in the same generation: neither is trusted
                    multiple_owners.add(p)
                    _remove_first(owned[other], p)
                    prev_owner[p] = c
                elif gen > other_gen:
                    mine.append(p)
                    _remove_first(owned[other], p)
                    prev_owner[p] = c
                # else: the other member's newer claim stands
        return equal

    # ---- entry point ----------------------------------------------------------------
    def assign(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription],
               partition_racks: Mapping[TopicPartition, Iterable[str]] | None = None,
               ) -> dict[str, list[TopicPartition]]:
        """``partition_racks`` maps partitions to their replicas' racks (KIP-881); with member
        racks it turns on rack-aware assignment as Kafka decides it."""
        validate_inputs(partitions_per_topic, subscriptions)
        # Kafka's AbstractPartitionAssignor.assign(Cluster, ...) passes only subscribed topics;
        # given others, the constrained path would hand them out, so drop them as Kafka's caller does
        subscribed = {t for s in subscriptions.values() for t in s.topics}
        partitions_per_topic = {t: n for t, n in partitions_per_topic.items() if t in subscribed}
        members = members_in_java_order(subscriptions)
        owned: dict[str, list[TopicPartition]] = {}
        multiple: set[TopicPartition] = set()
        if not members:
            self.partitions_transferring_ownership = {}
            return {}
        racks = _RackInfo(partitions_per_topic, subscriptions, members, partition_racks,
                          self.prefer_rack_aware_logic)
        if self._all_subscriptions_equal(partitions_per_topic, subscriptions, members, owned, multiple):
            self.used_constrained_path = True
            self.partitions_transferring_ownership = {}
            result = _Constrained(partitions_per_topic, members, owned, multiple,
                                  self.partitions_transferring_ownership, racks).build()
        else:
            self.used_constrained_path = False
            self.partitions_transferring_ownership = None
            self.partition_movements = _PartitionMovements()
            result = _General(partitions_per_topic, subscriptions, members, owned, self.max_generation,
                              self.partition_movements, racks).build()
        return {m: result[m] for m in subscriptions}

    def is_sticky(self) -> bool:
        """Kafka's ``isSticky()`` after a general-path assignment (True after the constrained path)."""
        return self.partition_movements is None or self.partition_movements.is_sticky()


def _remove_first(lst: list[TopicPartition], p: TopicPartition) -> None:
    try:
        lst.remove(p)
    except ValueError:
        pass


def _sorted_topics(partitions_per_topic: dict[str, int]) -> list[str]:
    return sorted(partitions_per_topic, key=java_str_key)


class _Constrained:
    """``ConstrainedAssignmentBuilder`` without racks."""

    def __init__(self, partitions_per_topic: dict[str, int], members: list[str],
                 owned: dict[str, list[TopicPartition]], multiple: set[TopicPartition],
                 transferring: dict[TopicPartition, str], racks: _RackInfo) -> None:
        self.racks = racks
        self.ppt = partitions_per_topic
        self.members = members
        self.owned = owned
        self.multiple = multiple
        self.transferring = transferring
        self.total = sum(partitions_per_topic.values())
        n = len(owned)
        self.min_quota = self.total // n
        self.max_quota = math.ceil(self.total / n) if self.total else 0
        self.expected_over = self.total % n
        self.current_over = 0
        # owned partitions given up (over quota, or on another rack than their owner) -> owner
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.under: list[str] = []
        self.exact: deque[str] = deque()
        self.assignment: dict[str, list[TopicPartition]] = {c: [] for c in owned}
        self.assigned: set[TopicPartition] = set()

    def build(self) -> dict[str, list[TopicPartition]]:
        self._assign_owned()
        unassigned = [TopicPartition(t, i) for t in _sorted_topics(self.ppt) for i in range(self.ppt[t])
                      if TopicPartition(t, i) not in self.assigned]
        self.under.sort(key=java_str_key)
        self.exact = deque(sorted(self.exact, key=java_str_key))
        unassigned = self.racks.sort_by_rack_consumers(unassigned)
        unassigned = self._assign_rack_aware_round_robin(unassigned)
        self._assign_round_robin(unassigned)
        self._verify_unfilled()
        return self.assignment

    def _assign_owned(self) -> None:
        for c in self.members:  # consumerToOwnedPartitions is a HashMap filled in member order
            mine = []
            for p in self.owned[c]:
                if self.racks.racks_mismatch(c, p):
                    self.maybe_revoked[p] = c   # KAFKA-15170: it moves, so it transfers ownership
                else:
                    mine.append(p)
            mine.sort(key=lambda p: (p.partition, java_str_key(p.topic)))
            if self.multiple:
                mine = [p for p in mine if p not in self.multiple]
            target = self.assignment[c]
            if len(mine) < self.min_quota:
                target.extend(mine)
                self.assigned.update(mine)
                self.under.append(c)
            elif len(mine) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    self.exact.clear()
                target.extend(mine[:self.max_quota])
                self.assigned.update(mine[:self.max_quota])
                for p in mine[self.max_quota:]:
                    self.maybe_revoked[p] = c
            else:
                target.extend(mine[:self.min_quota])
                self.assigned.update(mine[:self.min_quota])
                for p in mine[self.min_quota:]:
                    self.maybe_revoked[p] = c
                if self.current_over < self.expected_over:
                    self.exact.append(c)

    def _give(self, p: TopicPartition, c: str) -> int:
        lst = self.assignment[c]
        lst.append(p)
        # handing a given-up partition back to its own owner is not a transfer
        if (p in self.maybe_revoked and self.maybe_revoked[p] != c) or p in self.multiple:
            self.transferring[p] = c
        return len(lst)

    def _assign_rack_aware_round_robin(self, unassigned: list[TopicPartition]) -> list[TopicPartition]:
        """Kafka's ``assignRackAwareRoundRobin``: rack-matching members first (under
        ``minQuota``, round-robin from where the last one stopped; then members at ``minQuota``
        that may take one more). Returns the partitions it could not place."""
        racks = self.racks
        if not racks.consumer_racks:
            return unassigned
        under = self.under
        exact = self.exact
        left: list[TopicPartition] = []
        next_idx = 0
        for p in unassigned:
            consumer = None
            idx = racks.next_rack_consumer(p, under, next_idx)
            if idx >= 0:
                consumer = under[idx]
                count = len(self.assignment[consumer]) + 1
                if count >= self.min_quota:
                    under.remove(consumer)
                    if count < self.max_quota and self.current_over < self.expected_over:
                        exact.append(consumer)
                else:
                    idx += 1
                next_idx = 0 if not under else idx % len(under)
            elif exact:
                exact_list = list(exact)
                first = racks.next_rack_consumer(p, exact_list, 0)
                if first >= 0:
                    consumer = exact_list[first]
                    if len(self.assignment[consumer]) + 1 == self.max_quota:
                        del exact[first]
                        self.current_over += 1
                        if self.current_over == self.expected_over:
                            exact.clear()
            if consumer is not None:
                self._give(p, consumer)
            else:
                left.append(p)
        return left

    def _assign_round_robin(self, unassigned: list[TopicPartition]) -> None:
        under = self.under
        idx = 0  # a LinkedList iterator over `under` that supports remove()
        for p in unassigned:
            if idx < len(under):
                c = under[idx]
                idx += 1
            elif not under and not self.exact:
                raise AssignorError("No more unfilled consumers to be assigned.")
            elif not under:
                c = self.exact.popleft()
            else:
                idx = 0
                c = under[idx]
                idx += 1
            count = self._give(p, c)
            if count == self.min_quota:
                # Kafka removes through the iterator: the member most recently returned by it
                if idx > 0 and idx <= len(under) and under[idx - 1] == c:
                    del under[idx - 1]
                    idx -= 1
                self.exact.append(c)
            elif count == self.max_quota:
                self.current_over += 1

    def _verify_unfilled(self) -> None:
        if not self.under:
            return
        if self.current_over != self.expected_over:
            raise AssignorError("We haven't reached the expected number of members with more than the "
                                "minQuota partitions, but no more partitions to be assigned")
        for c in self.under:
            if len(self.assignment[c]) != self.min_quota:
                raise AssignorError(f"Consumer: [{c}] doesn't reach minQuota partitions, and no more "
                                    "partitions to be assigned")


class _General:
    """``GeneralAssignmentBuilder`` without racks."""

    def __init__(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription],
                 members: list[str], owned: dict[str, list[TopicPartition]], max_generation: int,
                 movements: _PartitionMovements, racks: _RackInfo) -> None:
        self.racks = racks
        self.ppt = partitions_per_topic
        self.subs = subscriptions
        self.members = members
        self.max_generation = max_generation
        self.movements = movements
        self.total = sum(partitions_per_topic.values())
        self.topic2consumers: dict[str, list[str]] = {t: [] for t in partitions_per_topic}
        self.consumer2topics: dict[str, list[str]] = {}
        self.consumer2topicset: dict[str, frozenset[str]] = {}
        for c in members:
            topics = [t for t in subscriptions[c].topics if t in partitions_per_topic]
            self.consumer2topics[c] = topics
            self.consumer2topicset[c] = frozenset(topics)
            for t in topics:
                self.topic2consumers[t].append(c)
        self.current: dict[str, list[TopicPartition]] = owned
        for c in members:
            self.current.setdefault(c, [])
        self.partition_consumer: dict[TopicPartition, str] = {}
        for c in members:
            for p in self.current[c]:
                self.partition_consumer[p] = c
        sorted_topics = sorted(self.topic2consumers,
                               key=lambda t: (len(self.topic2consumers[t]), java_str_key(t)))
        self.sorted_all_partitions = [TopicPartition(t, i) for t in sorted_topics for i in range(self.ppt[t])]
        self.sorted_members = _SortedMembers(self.current)
        self.revocation_required = False

    # ---- setup ----------------------------------------------------------------------
    def build(self) -> dict[str, list[TopicPartition]]:
        prev = self._prepopulate()
        assigned = self._assign_owned()
        unassigned = self._unassigned(assigned)
        for c in self.members:
            self.sorted_members.add(c)
        self._balance(prev, unassigned)
        return self.current

    def _prepopulate(self) -> dict[TopicPartition, tuple[str, int]]:
        prev: dict[TopicPartition, tuple[str, int]] = {}
        for c in self.members:
            sub = self.subs[c]
            gen = sub.generation
            if gen < self.max_generation:  # covers "no generation" (-1) when max > -1
                for p in sub.owned_partitions:
                    old = prev.get(p)
                    if old is None or gen > old[1]:
                        prev[p] = (c, gen)
        return prev

    def _assign_owned(self) -> list[TopicPartition]:
        assigned: list[TopicPartition] = []
        for c in self.members:
            subscribed = self.consumer2topicset[c]
            keep: list[TopicPartition] = []
            for p in self.current[c]:
                if p.topic not in self.topic2consumers:
                    self.partition_consumer.pop(p, None)
                elif p.topic not in subscribed or self.racks.racks_mismatch(c, p):
                    # Kafka leaves the stale currentPartitionConsumer entry: so do we
                    self.revocation_required = True
                else:
                    keep.append(p)
                    assigned.append(p)
            self.current[c][:] = keep
        return assigned

    def _unassigned(self, assigned: list[TopicPartition]) -> list[TopicPartition]:
        if not assigned:
            return self.sorted_all_partitions  # Kafka returns the same list object
        taken = set(assigned)
        return [p for p in self.sorted_all_partitions if p not in taken]

    # ---- balance --------------------------------------------------------------------
    def _max_assignment_size(self, c: str) -> int:
        topics = self.consumer2topics[c]
        if len(topics) == len(self.ppt):
            return self.total
        return sum(self.ppt[t] for t in topics)

    def _is_balanced(self) -> bool:
        """Kafka's ``isBalanced``: counts differ by at most one, or no member could take a
        partition from a member holding 2+ more. Kafka checks every (member, subscribed
        partition) pair; we compute the same boolean per topic: a member with ``n`` partitions
        is unbalanced iff some partition of one of its topics is held by a member with more
        than ``n + 1`` (its own partitions never qualify, since ``n > n + 1`` is false)."""
        cur = self.current
        lo = len(cur[self.sorted_members.first()])
        hi = len(cur[self.sorted_members.last()])
        if lo >= hi - 1:
            return True
        heaviest: dict[str, int] = {}
        for ps in cur.values():
            n = len(ps)
            for p in ps:
                if heaviest.get(p.topic, -1) < n:
                    heaviest[p.topic] = n
        for c in self.sorted_members:
            n = len(cur[c])
            if n == self._max_assignment_size(c):
                continue
            for t in self.consumer2topics[c]:
                if heaviest.get(t, -1) > n + 1:
                    return False
        return True

    @staticmethod
    def _balance_score(assignment: dict[str, list[TopicPartition]]) -> int:
        sizes = sorted(len(v) for v in assignment.values())
        # sum over pairs of |a - b|, computed in O(n log n)
        score = 0
        prefix = 0
        for i, s in enumerate(sizes):
            score += s * i - prefix
            prefix += s
        return score

    def _maybe_assign(self, unassigned: list[TopicPartition], rack_aware: bool = False) -> list[TopicPartition]:
        """Give each partition to the least-loaded eligible member (with ``rack_aware``, only
        to a member on one of its replicas' racks); returns the partitions not placed."""
        left: list[TopicPartition] = []
        for p in unassigned:
            if not self.topic2consumers[p.topic]:
                left.append(p)
                continue
            for c in self.sorted_members:
                if p.topic in self.consumer2topicset[c] and not (rack_aware and self.racks.racks_mismatch(c, p)):
                    self.sorted_members.remove(c)
                    self.current[c].append(p)
                    self.partition_consumer[p] = c
                    self.sorted_members.add(c)
                    break
            else:
                left.append(p)
        return left

    def _topic_can_move(self, t: str) -> bool:
        return len(self.topic2consumers[t]) >= 2

    def _consumer_can_move(self, c: str) -> bool:
        mine = self.current[c]
        if len(mine) < self._max_assignment_size(c):
            return True
        return any(self._topic_can_move(p.topic) for p in mine)

    def _balance(self, prev: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self.sorted_members.last()]
        to_assign = unassigned
        if self.racks.consumer_racks:
            to_assign = self._maybe_assign(unassigned, rack_aware=True)
        self._maybe_assign(to_assign)
        # (Kafka's rack branch in performReassignments only decides *whether* to move a
        # partition to the least-loaded eligible member, which the plain branch decides the
        # same way, so it does not change the result and is folded into it.)

        fixed_topics = {t for t in self.topic2consumers if not self._topic_can_move(t)}
        if fixed_topics:
            aliased = unassigned is self.sorted_all_partitions
            self.sorted_all_partitions[:] = [p for p in self.sorted_all_partitions if p.topic not in fixed_topics]
            if not aliased:
                unassigned[:] = [p for p in unassigned if p.topic not in fixed_topics]

        fixed: dict[str, list[TopicPartition]] = {}
        for c in self.members:
            if not self._consumer_can_move(c):
                self.sorted_members.remove(c)
                fixed[c] = self.current.pop(c)

        pre_balance = {c: list(ps) for c, ps in self.current.items()}
        pre_partition_consumer = dict(self.partition_consumer)

        if not self.revocation_required:
            self._perform_reassignments(unassigned, prev)
        performed = self._perform_reassignments(self.sorted_all_partitions, prev)

        if not initializing and performed and \
                self._balance_score(self.current) >= self._balance_score(pre_balance):
            self.current.clear()
            self.current.update({c: list(ps) for c, ps in pre_balance.items()})
            self.partition_consumer = pre_partition_consumer

        for c, ps in fixed.items():
            self.current[c] = ps
            self.sorted_members.add(c)

    def _perform_reassignments(self, partitions: list[TopicPartition],
                               prev: dict[TopicPartition, tuple[str, int]]) -> bool:
        performed = False
        while True:
            modified = False
            for p in partitions:
                if self._is_balanced():
                    break
                consumer = self.partition_consumer.get(p)
                if consumer is None or consumer not in self.current:
                    continue  # Kafka logs an error here
                size = len(self.current[consumer])
                old = prev.get(p)
                if old is not None:
                    prev_consumer = old[0]
                    # departure: Kafka would NPE / assign to an unsubscribed member otherwise
                    if prev_consumer in self.current and p.topic in self.consumer2topicset[prev_consumer] \
                            and size > len(self.current[prev_consumer]) + 1:
                        self._reassign(p, prev_consumer)
                        performed = modified = True
                        continue
                for other in self.topic2consumers[p.topic]:
                    other_list = self.current.get(other)
                    if other_list is not None and size > len(other_list) + 1:
                        self._reassign_to_least_loaded(p)
                        performed = modified = True
                        break
            if not modified:
                return performed

    def _reassign_to_least_loaded(self, p: TopicPartition) -> None:
        for c in self.sorted_members:
            if p.topic in self.consumer2topicset[c]:
                self._reassign(p, c)
                return

    def _reassign(self, p: TopicPartition, new: str) -> None:
        consumer = self.partition_consumer[p]
        moving = self.movements.actual_partition_to_move(p, consumer, new)
        self._process_movement(moving, new)

    def _process_movement(self, p: TopicPartition, new: str) -> None:
        old = self.partition_consumer[p]
        self.sorted_members.remove(old)
        self.sorted_members.remove(new)
        self.movements.move(p, old, new)
        _remove_first(self.current[old], p)
        self.current[new].append(p)
        self.partition_consumer[p] = new
        self.sorted_members.add(new)
        self.sorted_members.add(old)


class StickyAssignor(AbstractStickyAssignor):
    """Kafka's eager ``StickyAssignor``: owned partitions come from the member's previous
    assignment (Kafka: the assignor's user data), ``generation`` from the same place."""

    name = "sticky"


class CooperativeStickyAssignor(AbstractStickyAssignor):
    """Kafka's ``CooperativeStickyAssignor``: the sticky result minus every partition that
    changes owner (KIP-429): such a partition is first revoked by its owner, and assigned in
    the follow-up rebalance."""

    name = "cooperative-sticky"

    def assign(self, partitions_per_topic: dict[str, int], subscriptions: dict[str, Subscription],
               partition_racks: Mapping[TopicPartition, Iterable[str]] | None = None,
               ) -> dict[str, list[TopicPartition]]:
        result = super().assign(partitions_per_topic, subscriptions, partition_racks)
        transferring = self.partitions_transferring_ownership
        if transferring is None:
            transferring = self._compute_transferring(subscriptions, result)
        for p, c in transferring.items():
            _remove_first(result[c], p)
        return result

    @staticmethod
    def _compute_transferring(subscriptions: dict[str, Subscription],
                              assignment: dict[str, list[TopicPartition]]) -> dict[TopicPartition, str]:
        added: dict[TopicPartition, str] = {}
        revoked: set[TopicPartition] = set()
        for c, assigned in assignment.items():
            owned = subscriptions[c].owned_partitions
            owned_set = set(owned)
            for p in assigned:
                if p not in owned_set:
                    added[p] = c
            assigned_set = set(assigned)
            for p in owned:
                if p not in assigned_set:
                    revoked.add(p)
        return {p: c for p, c in added.items() if p in revoked}
