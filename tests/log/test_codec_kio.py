"""kraft's codec against kio, an independent implementation generated from Kafka's schemas.

Messages kio has (the control-record values, the consumer protocol): Hypothesis draws field values
from the schema table; kraft encodes, kio decodes and re-encodes, kraft decodes kio's bytes; both
must agree on bytes and values. Metadata records kio does not have: the bytes kraft writes must
equal the composition of kio's primitive writers (compact string, uuid, unsigned varint, compact
array, tagged field).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import typing
import uuid as uuidlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer
from kio.serial import writers as kw

from kraft.log.codec import decode, encode
from kraft.log.schema import ZERO_UUID, FieldType, Struct, message, uuid_to_str
from tests import examples

_INT = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
uuids = st.binary(min_size=16, max_size=16).map(uuid_to_str)


def values(t: FieldType, version: int, nullable: bool) -> st.SearchStrategy[Any]:
    if t.kind in _INT:
        base: st.SearchStrategy[Any] = st.integers(*_INT[t.kind])
    elif t.kind == "bool":
        base = st.booleans()
    elif t.kind == "uuid":
        base = uuids
    elif t.kind == "string":
        base = st.text(max_size=12)
    elif t.kind == "bytes":
        base = st.binary(max_size=12)
    elif t.kind == "array":
        base = st.lists(values(t.element, version, False), max_size=3)  # type: ignore[arg-type]
    else:
        base = struct_values(t.struct, version)  # type: ignore[arg-type]
    return st.none() | base if nullable else base


def struct_values(s: Struct, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Every field of ``version`` (these messages have no tagged fields)."""
    return st.fixed_dictionaries({f.key: values(f.type, version, version in f.nullable) for f in s.fields if version in f.versions})


# ------------------------------------------------------------------------------------ kio objects


def camel(snake: str) -> str:
    first, *rest = snake.split("_")
    return first + "".join(p[:1].upper() + p[1:] for p in rest)


def kio_key(name: str, hint: Any) -> str:
    """kraft's key of a kio field: kio types an ``...Ms`` field as a timedelta named without it."""
    return camel(name) + ("Ms" if isinstance(hint, type) and issubclass(hint, datetime.timedelta) else "")


def from_kio(obj: Any) -> Any:
    """A kio value in kraft's form: dataclass -> dict, tuple -> list, UUID -> Uuid string,
    timedelta -> milliseconds."""
    if dataclasses.is_dataclass(obj):
        hints = typing.get_type_hints(type(obj))
        return {kio_key(f.name, hints[f.name]): from_kio(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple):
        return [from_kio(v) for v in obj]
    if isinstance(obj, uuidlib.UUID):
        return uuid_to_str(obj.bytes)
    if isinstance(obj, datetime.timedelta):
        return obj // datetime.timedelta(milliseconds=1)
    return obj


def normal(value: Any) -> Any:
    """kio reads the zero Uuid as None; kraft keeps Kafka's Uuid.ZERO_UUID string."""
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return None if value == ZERO_UUID else value


def kio_class(module: str, name: str, version: int) -> Any:
    mod = __import__(f"kio.schema.{module}.v{version}", fromlist=[name])
    return getattr(mod, name)


KIO = [
    ("leader_change_message", "LeaderChangeMessage", 0),
    ("leader_change_message", "LeaderChangeMessage", 1),
    ("snapshot_header_record", "SnapshotHeaderRecord", 0),
    ("snapshot_footer_record", "SnapshotFooterRecord", 0),
    ("k_raft_version_record", "KRaftVersionRecord", 0),
    ("voters_record", "VotersRecord", 0),
    # kio follows a later Kafka whose VoteRequest renames CandidateId/CandidateEpoch, and types a
    # response's ErrorCode as an enum that refuses codes it does not know: those stay out
    *[("begin_quorum_epoch", "BeginQuorumEpochRequest", v) for v in range(2)],
    ("add_raft_voter", "AddRaftVoterRequest", 0),
    ("remove_raft_voter", "RemoveRaftVoterRequest", 0),
    ("update_raft_voter", "UpdateRaftVoterRequest", 0),
    *[("consumer_protocol_subscription", "ConsumerProtocolSubscription", v) for v in range(4)],
    *[("consumer_protocol_assignment", "ConsumerProtocolAssignment", v) for v in range(4)],
]


@pytest.mark.parametrize("module,name,version", KIO, ids=[f"{n}-v{v}" for _, n, v in KIO])
def test_round_trip_with_kio(module: str, name: str, version: int) -> None:
    cls = kio_class(module, name, version)
    read, write = entity_reader(cls), entity_writer(cls)

    @examples.PURE()
    @given(struct_values(message(name).struct, version))
    def check(fields: dict[str, Any]) -> None:
        ours = encode(name, fields, version)
        obj, size = read(ours, 0)
        assert size == len(ours)
        assert from_kio(obj) == normal(fields)
        buf = io.BytesIO()
        write(buf, obj)
        theirs = buf.getvalue()
        assert theirs == ours
        assert normal(decode(name, version, theirs)[0]) == normal(fields)

    check()


def test_kio_field_sets_match_the_table() -> None:
    for module, name, version in KIO:
        cls = kio_class(module, name, version)
        hints = typing.get_type_hints(cls)
        ours = [f.key for f in message(name).struct.fields if version in f.versions]
        assert [kio_key(n, h) for n, h in hints.items() if not n.startswith("__")] == ours, (name, version)


# ------------------------------------------------------------------------------------ primitives


def kio_bytes(*steps: tuple[Any, ...]) -> bytes:
    """Apply kio writers in order: each step is ``(writer, *arguments after the buffer)``."""
    buf = io.BytesIO()
    for writer, *args in steps:
        writer(buf, *args)
    return buf.getvalue()


def kio_uuid(text: str) -> uuidlib.UUID | None:
    raw = encode("TopicRecord", {"topicId": text})[1:17]
    return None if text == ZERO_UUID else uuidlib.UUID(bytes=raw)


@examples.PURE()
@given(st.text(max_size=20), uuids)
def test_topic_record_is_kio_primitives(name: str, topic_id: str) -> None:
    ours = encode("TopicRecord", {"name": name, "topicId": topic_id}, 0)
    assert ours == kio_bytes((kw.write_compact_string, name), (kw.write_uuid, kio_uuid(topic_id)), (kw.write_empty_tagged_fields,))


int32s = st.integers(-(1 << 31), (1 << 31) - 1)


@examples.PURE()
@given(int32s, uuids, st.none() | st.lists(int32s, max_size=4), st.none() | st.lists(int32s, max_size=4), st.none() | int32s)
def test_partition_change_tagged_fields_are_kio_primitives(partition: int, topic_id: str, isr: list[int] | None, elr: list[int] | None, leader: int | None) -> None:
    fields: dict[str, Any] = {"partitionId": partition, "topicId": topic_id, "isr": isr, "eligibleLeaderReplicas": elr}
    if leader is not None:
        fields["leader"] = leader
    ours = encode("PartitionChangeRecord", fields, 2)
    array = kw.compact_array_writer(kw.write_int32)
    tagged = [(0, array, isr), (1, kw.write_int32, leader if leader != -2 else None), (6, array, elr)]
    present = [(tag, w, v) for tag, w, v in tagged if v is not None]
    expected = kio_bytes(
        (kw.write_int32, partition),
        (kw.write_uuid, kio_uuid(topic_id)),
        (kw.write_unsigned_varint, len(present)),
        *[(kw.write_tagged_field, tag, w, v) for tag, w, v in present],
    )
    assert ours == expected
    assert decode("PartitionChangeRecord", 2, ours)[0] == {k: v for k, v in fields.items() if v is not None and not (k == "leader" and v == -2)}


@examples.PURE()
@given(st.integers(-128, 127), st.text(max_size=10), st.text(max_size=10), st.none() | st.text(max_size=10))
def test_config_record_is_kio_primitives(rtype: int, rname: str, name: str, value: str | None) -> None:
    ours = encode("ConfigRecord", {"resourceType": rtype, "resourceName": rname, "name": name, "value": value}, 0)
    expected = kio_bytes(
        (kw.write_int8, rtype),
        (kw.write_compact_string, rname),
        (kw.write_compact_string, name),
        (kw.write_nullable_compact_string, value),
        (kw.write_empty_tagged_fields,),
    )
    assert ours == expected
