"""The group file of ``kraft assign --protocol consumer``: a consumer-protocol group as the
coordinator sees it when it computes a target assignment::

    {"topics": {
        "orders":   {"id": "T1-A4s3VTwiI5CTbEp6POw", "partitions": 6,
                     "racks": {"0": ["r1", "r2"], "1": ["r2", "r3"]}},
        "payments": {"id": "T3-CU8fVTLCz5YMkLoDQsQ", "partitions": 3}},
     "members": {
        "A": {"topics": ["orders", "payments"], "rack": "r1", "instance_id": "host-a",
              "assignment": {"orders": [0, 1, 2]}},
        "B": {"topics": ["orders"]}}}

``topics``: each topic's id (``Uuid.toString``: 22 base64url characters; not the zero id, no two
topics alike), partition count and, optionally, the racks of each partition's replicas.
``members``: each member's subscribed topic names, rack, ``instance_id`` (static membership) and
current target assignment (topic -> partitions; a topic absent from ``topics``, e.g. deleted, is
named by its id). All but ``topics`` are optional.

The coordinator's iteration orders are rebuilt from the file (:func:`ConsumerGroupFile.group_spec`):
members in the order of ``TargetAssignmentBuilder.build``'s ``HashMap`` filled in file order; a
member's topic names as the ``HashSet`` of ``ConsumerGroupMember``, resolved to ids by ``TopicIds``
(a name absent from ``topics`` is skipped, as ``TopicIds`` skips a topic missing from the image,
but still counts for the subscription type); its assignment as ``Assignment.fromRecord`` reads the
record whose lists are the file's lists. A partition held by two members is refused: the
coordinator's target assignment never has one.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs

from kraft.client.java import JavaHashOrder, string_hash

from ..groupfile import MAX_PARTITIONS, GroupFileError, read_json
from .spec import ZERO_UUID, GroupSpec, MemberSpec, TopicDescriber, Uuid, hash_set_capacity, member_order, \
    record_assignment_order, subscription_type

MEMBER_FIELDS = ("assignment", "instance_id", "rack", "topics")
TOPIC_FIELDS = ("id", "partitions", "racks")


@attrs.frozen
class FileMember:
    topics: tuple[str, ...]
    assignment: dict[Uuid, list[int]]
    rack: str | None = None
    instance_id: str | None = None


@attrs.frozen
class ConsumerGroupFile:
    """A parsed group file: topics by name, members in file order."""

    ids: dict[str, Uuid]
    describer: TopicDescriber
    members: dict[str, FileMember]

    def name(self, topic_id: Uuid) -> str:
        """A topic's name, or its id when the file names none."""
        for n, t in self.ids.items():
            if t == topic_id:
                return n
        return str(topic_id)

    def group_spec(self) -> GroupSpec:
        """The ``GroupSpec`` the coordinator would hand its assignor."""
        specs = {}
        for m in member_order(self.members):
            fm = self.members[m]
            names = JavaHashOrder.of(fm.topics, string_hash, hash_set_capacity(len(fm.topics)))
            ids = [self.ids[n] for n in names if n in self.ids]
            specs[m] = MemberSpec(ids, record_assignment_order(fm.assignment), fm.rack, fm.instance_id)
        kind = subscription_type(specs, {m: fm.topics for m, fm in self.members.items()})
        return GroupSpec(specs, kind)


def _line(text: str, *keys: str) -> int:
    """Line of the last of ``keys``, each looked up as ``"key":`` after the one before (the
    line of the last one found when a key is absent)."""
    pos = 0
    for key in keys:
        found = re.compile(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:").search(text, pos)
        if found is None:
            found = re.compile(re.escape(json.dumps(key)) + r"\s*:").search(text, pos)
        if found is None:
            break
        pos = found.start()
    return text.count("\n", 0, pos) + 1


class _Reader:
    """Validation with errors that name the file, the line and the field."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, keys: tuple[str, ...], message: str) -> GroupFileError:
        return GroupFileError(f"{self.path}:{_line(self.text, *keys)}: {'.'.join(keys)}: {message}")

    def unknown(self, keys: tuple[str, ...], value: dict, known: tuple[str, ...]) -> None:
        extra = sorted(set(value) - set(known))
        if extra:
            raise GroupFileError(f"{self.path}:{_line(self.text, *keys, extra[0])}: {'.'.join(keys) or 'top level'}: "
                                 f"unknown field(s) {extra} (known: {', '.join(known)})")

    def optional_str(self, keys: tuple[str, ...], value: Any) -> str | None:
        if value is not None and not isinstance(value, str):
            raise self.fail(keys, f"must be a string or null, got {value!r}")
        return value


def _count(r: _Reader, keys: tuple[str, ...], n: Any) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise r.fail(keys, f"must be an integer >= 0, got {n!r}")
    return n


def _topics(r: _Reader, doc: dict) -> tuple[dict[str, Uuid], dict[Uuid, int], dict[tuple[Uuid, int], frozenset[str]]]:
    topics = doc.get("topics")
    if not isinstance(topics, dict):
        raise r.fail(("topics",), "must be an object of topic name -> {\"id\", \"partitions\"}")
    ids: dict[str, Uuid] = {}
    counts: dict[Uuid, int] = {}
    racks: dict[tuple[Uuid, int], frozenset[str]] = {}
    for name, spec in topics.items():
        keys = ("topics", name)
        if not isinstance(spec, dict):
            raise r.fail(keys, "must be an object with \"id\" and \"partitions\"")
        r.unknown(keys, spec, TOPIC_FIELDS)
        try:
            t = Uuid.from_string(spec.get("id"))
        except ValueError as e:
            raise r.fail(keys + ("id",), str(e)) from None
        if t == ZERO_UUID or t in counts:
            raise r.fail(keys + ("id",), "the zero id" if t == ZERO_UUID else f"{t} is the id of another topic too")
        ids[name], counts[t] = t, _count(r, keys + ("partitions",), spec.get("partitions"))
        racks.update(_racks(r, keys, spec.get("racks", {}), t, counts[t]))
    if sum(counts.values()) > MAX_PARTITIONS:
        raise r.fail(("topics",), f"{sum(counts.values()):,} partitions in total, more than this command assigns "
                                  f"({MAX_PARTITIONS:,})")
    return ids, counts, racks


def _racks(r: _Reader, keys: tuple[str, ...], racks: Any, t: Uuid, n: int) -> dict[tuple[Uuid, int], frozenset[str]]:
    keys = keys + ("racks",)
    if not isinstance(racks, dict):
        raise r.fail(keys, "must be an object of partition number -> list of rack ids")
    out = {}
    for p, names in racks.items():
        if not p.isdigit() or int(p) >= n:
            raise r.fail(keys, f"{p!r} is not a partition of the topic (0..{n - 1})")
        if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
            raise r.fail(keys, f"partition {p}: must be a list of rack ids")
        out[t, int(p)] = frozenset(names)
    return out


def _assignment(r: _Reader, keys: tuple[str, ...], value: Any, ids: dict[str, Uuid], counts: dict[Uuid, int],
                owners: dict[tuple[Uuid, int], str]) -> dict[Uuid, list[int]]:
    if not isinstance(value, dict):
        raise r.fail(keys, "must be an object of topic -> list of partitions")
    member = keys[1]
    out: dict[Uuid, list[int]] = {}
    for topic, ps in value.items():
        if topic in ids:
            t = ids[topic]
        else:
            try:
                t = Uuid.from_string(topic)
            except ValueError:
                raise r.fail(keys, f"{topic!r} is neither a topic of \"topics\" nor a topic id") from None
        n = counts.get(t)
        if not isinstance(ps, list) or not all(isinstance(p, int) and not isinstance(p, bool) for p in ps):
            raise r.fail(keys + (topic,), "must be a list of partition numbers")
        for p in ps:
            if p < 0 or (n is not None and p >= n):
                raise r.fail(keys + (topic,), f"partition {p} does not exist"
                                              + (f" (the topic has {n})" if n is not None else ""))
            if (t, p) in owners:
                raise r.fail(keys + (topic,), f"partition {p} is also assigned to {owners[t, p]}")
            owners[t, p] = member
        if t in out:
            raise r.fail(keys + (topic,), "topic listed twice (by name and by id)")
        out[t] = ps
    return out


def _member(r: _Reader, m: str, spec: Any, ids: dict[str, Uuid], counts: dict[Uuid, int],
            owners: dict[tuple[Uuid, int], str]) -> FileMember:
    keys = ("members", m)
    if not isinstance(spec, dict):
        raise r.fail(keys, "must be an object")
    r.unknown(keys, spec, MEMBER_FIELDS)
    topics = spec.get("topics", [])
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise r.fail(keys + ("topics",), "must be a list of topic names")
    assignment = _assignment(r, keys + ("assignment",), spec.get("assignment", {}), ids, counts, owners)
    return FileMember(tuple(topics), assignment, r.optional_str(keys + ("rack",), spec.get("rack")),
                      r.optional_str(keys + ("instance_id",), spec.get("instance_id")))


def load_consumer_group(path: str) -> ConsumerGroupFile:
    """Parse a consumer-protocol group file; errors name the file, line and field."""
    text, doc = read_json(path)
    r = _Reader(path, text)
    r.unknown((), doc, ("members", "topics"))
    ids, counts, racks = _topics(r, doc)
    members = doc.get("members")
    if not isinstance(members, dict) or not members:
        raise r.fail(("members",), "must be a non-empty object of member id -> subscription")
    owners: dict[tuple[Uuid, int], str] = {}
    loaded = {m: _member(r, m, spec, ids, counts, owners) for m, spec in members.items()}
    instances: dict[str, str] = {}
    for m, fm in loaded.items():
        if fm.instance_id is not None:
            if fm.instance_id in instances:
                raise r.fail(("members", m, "instance_id"), f"{fm.instance_id!r} is also the instance id of "
                                                            f"{instances[fm.instance_id]}")
            instances[fm.instance_id] = m
    return ConsumerGroupFile(ids, TopicDescriber(counts, racks), loaded)
