"""The table-driven codec: bytes laid out by hand, the version rules, and hostile input."""

from __future__ import annotations

import pytest

from kraft.log.codec import EncodeError, SchemaError, decode, encode
from kraft.log.control import ControlType, decode_control, encode_control
from kraft.log.metadata import MetadataRecord, decode_metadata, dumps_kafka_json, encode_metadata, record_type_name, to_kafka_json
from kraft.log.offsets import decode_offsets_record, encode_offsets_record

TOPIC = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid 0x...01
TOPIC_BYTES = bytes(15) + b"\x01"

# PartitionChangeRecord v2 (metadata/.../PartitionChangeRecord.json), laid out from the schema:
PCR_HAND = bytes.fromhex(
    "01"  # frame version 1 (unsigned varint)
    "05"  # api key 5
    "02"  # version 2
    "00000007"  # PartitionId int32 = 7
) + TOPIC_BYTES + bytes.fromhex(  # TopicId uuid
    "04"  # 4 tagged fields, tags ascending:
    "00" "09" "03" "00000001" "00000002"  # tag 0 Isr: size 9, compact array of 2 (2+1), 1, 2
    "01" "04" "00000002"  # tag 1 Leader: size 4, int32 2
    "06" "09" "03" "00000002" "00000003"  # tag 6 EligibleLeaderReplicas: [2, 3]
    "07" "01" "01"  # tag 7 LastKnownElr: size 1, compact array of 0 (0+1)
)
PCR_FIELDS = {"partitionId": 7, "topicId": TOPIC, "isr": [1, 2], "leader": 2, "eligibleLeaderReplicas": [2, 3], "lastKnownElr": []}


def test_partition_change_record_with_elr_hand_bytes() -> None:
    record = MetadataRecord("PartitionChangeRecord", 2, PCR_FIELDS)
    assert encode_metadata(record) == PCR_HAND
    assert decode_metadata(PCR_HAND) == record
    assert record.api_key == 5 and record.type_name == "PARTITION_CHANGE_RECORD"
    assert to_kafka_json(record) == {"type": "PARTITION_CHANGE_RECORD", "version": 2, "data": PCR_FIELDS}
    assert dumps_kafka_json(to_kafka_json(record)).startswith('{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":7,')


def test_non_flexible_layout_by_hand() -> None:
    # OffsetCommitKey v1 (not flexible): int16-length strings; OffsetCommitValue v1: int64, string, int64, int64
    key, value = encode_offsets_record(1, {"group": "g", "topic": "t", "partition": 3}, {"offset": 5, "metadata": "m", "commitTimestamp": 6, "expireTimestamp": 7}, 1)
    assert key == bytes.fromhex("0001" "0001" "67" "0001" "74" "00000003")
    assert value == bytes.fromhex("0001" "0000000000000005" "0001" "6d" "0000000000000006" "0000000000000007")
    assert decode_offsets_record(key, value) == (
        {"type": "1", "data": {"group": "g", "topic": "t", "partition": 3}},
        {"version": "1", "data": {"offset": 5, "metadata": "m", "commitTimestamp": 6, "expireTimestamp": 7}},
    )
    assert decode_offsets_record(key, None)[1] == "<DELETE>"


def test_nullable_strings_and_structs() -> None:
    # ConfigRecord.Value is nullable: compact null is the varint 0
    assert encode("ConfigRecord", {"resourceType": 2, "resourceName": "t", "name": "k", "value": None}) == bytes.fromhex("02" "0274" "026b" "00" "00")
    # a nullable struct carries an int8 marker in the body (ConsumerGroupMemberMetadataValue's tagged
    # ClassicMemberMetadata uses a varint marker instead): null -> tag 0, size 1, varint 0
    body = encode("ConsumerGroupMemberMetadataValue", {"classicMemberMetadata": None}, 0)
    assert body.endswith(bytes.fromhex("01" "00" "01" "00"))
    fields, _ = decode("ConsumerGroupMemberMetadataValue", 0, body)
    assert fields["classicMemberMetadata"] is None
    # its default is the empty struct (a JSON null default is "" to Kafka's FieldSpec): not written
    assert encode("ConsumerGroupMemberMetadataValue", {"classicMemberMetadata": {"sessionTimeoutMs": 0, "supportedProtocols": []}}, 0).endswith(b"\x00")


def test_absent_fields_and_defaults() -> None:
    # LeaderRecoveryState is tagged with default -1: written only when it differs
    assert encode("PartitionChangeRecord", {"partitionId": 1, "topicId": TOPIC, "leaderRecoveryState": -1}, 0)[-1:] == b"\x00"
    assert decode("PartitionChangeRecord", 0, encode("PartitionChangeRecord", {"topicId": TOPIC}, 0))[0] == {"partitionId": -1, "topicId": TOPIC}
    # a non-default value for a field the version lacks is refused; an ignorable one is dropped
    with pytest.raises(EncodeError, match="eligibleLeaderReplicas"):
        encode("PartitionChangeRecord", {"topicId": TOPIC, "eligibleLeaderReplicas": [1]}, 1)
    assert encode("OffsetCommitValue", {"offset": 1, "metadata": "", "commitTimestamp": 2, "expireTimestamp": 9}, 3) == encode("OffsetCommitValue", {"offset": 1, "metadata": "", "commitTimestamp": 2}, 3)
    with pytest.raises(EncodeError, match="no field 'bogus'"):
        encode("TopicRecord", {"name": "t", "topicId": TOPIC, "bogus": 1})
    with pytest.raises(EncodeError, match="no version 3"):
        encode("PartitionChangeRecord", {}, 3)
    with pytest.raises(EncodeError, match="int8"):
        encode("ConfigRecord", {"resourceType": 300})


def test_unknown_tagged_field_is_skipped() -> None:
    plain = encode("TopicRecord", {"name": "t", "topicId": TOPIC})
    with_unknown = plain[:-1] + bytes.fromhex("01" "1f" "02" "abcd")  # one field, tag 31, 2 bytes
    assert decode("TopicRecord", 0, with_unknown) == decode("TopicRecord", 0, plain)[:1] + (len(with_unknown),)


def test_known_tag_in_a_version_that_lacks_it() -> None:
    # EligibleLeaderReplicas (tag 6) exists from version 2: at version 1 Kafka throws "Tag 6 is not valid"
    raw = encode("PartitionChangeRecord", {"topicId": TOPIC}, 1)[:-1] + bytes.fromhex("01" "06" "01" "01")
    with pytest.raises(SchemaError, match="tag 6 .EligibleLeaderReplicas. is not valid for version 1") as e:
        decode("PartitionChangeRecord", 1, raw)
    assert e.value.position == 21


def test_control_records_round_trip() -> None:
    cases = {
        "SNAPSHOT_HEADER": {"version": 0, "lastContainedLogTimestamp": 5},
        "SNAPSHOT_FOOTER": {"version": 0},
        "KRAFT_VERSION": {"version": 0, "kRaftVersion": 1},
        "COMMIT": {"version": 0, "coordinatorEpoch": 7},
        "KRAFT_VOTERS": {"version": 0, "voters": [{"voterId": 1, "voterDirectoryId": TOPIC, "endpoints": [{"name": "CONTROLLER", "host": "h", "port": 9093}], "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]},
    }
    for kind, fields in cases.items():
        key, value = encode_control(kind, fields)
        assert key == bytes([0, 0, 0, ControlType[kind]])
        assert decode_control(key, value) == (kind, 0, fields)
    assert encode_control("SNAPSHOT_HEADER", cases["SNAPSHOT_HEADER"])[1] == bytes.fromhex("0000" "0000000000000005" "00")
    assert decode_control(b"\x00\x00\x00\x09", b"") == ("UNKNOWN", 0, {"type": 9})


def test_update_raft_voter_response_tagged_current_leader_by_hand() -> None:
    """UpdateRaftVoterResponse v0 (flexible): ThrottleTimeMs int32, ErrorCode int16, then the
    tagged section: CurrentLeader (tag 0) only when it differs from its default (-1, -1, "", 0):
    count, tag, size, then LeaderId int32, LeaderEpoch int32, Host compact string, Port int32,
    the struct's own empty tag section."""
    leader = {"leaderId": 2, "leaderEpoch": 5, "host": "h", "port": 9093}
    fields = {"throttleTimeMs": 0, "errorCode": 6, "currentLeader": leader}
    raw = bytes.fromhex("00000000" "0006" "01" "00" "0f" "00000002" "00000005" "0268" "00002385" "00")
    assert encode("UpdateRaftVoterResponse", fields, 0) == raw
    assert decode("UpdateRaftVoterResponse", 0, raw)[0] == fields
    no_leader = {"throttleTimeMs": 0, "errorCode": 0}
    assert encode("UpdateRaftVoterResponse", no_leader, 0) == bytes.fromhex("00000000" "0000" "00")


def test_begin_quorum_epoch_v0_is_not_flexible_by_hand() -> None:
    """BeginQuorumEpochRequest v0 (flexible only from 1): ClusterId int16-length nullable string
    (-1 for null), Topics int32-length array of {TopicName int16-length string, Partitions
    int32-length array of {PartitionIndex, LeaderId, LeaderEpoch int32}}, no tag sections."""
    fields = {"clusterId": None, "topics": [{"topicName": "t", "partitions": [
        {"partitionIndex": 0, "leaderId": 1, "leaderEpoch": 3}]}]}
    raw = bytes.fromhex("ffff" "00000001" "0001" "74" "00000001" "00000000" "00000001" "00000003")
    assert encode("BeginQuorumEpochRequest", fields, 0) == raw


def test_record_type_names() -> None:
    assert record_type_name("ZkMigrationStateRecord") == "ZK_MIGRATION_STATE_RECORD"
    assert record_type_name("RegisterBrokerRecord") == "REGISTER_BROKER_RECORD"


def test_float64_renders_as_java_does() -> None:
    record = MetadataRecord("ClientQuotaRecord", 0, {"entity": [{"entityType": "user", "entityName": None}], "key": "k", "value": 1e7, "remove": False})
    assert decode_metadata(encode_metadata(record)) == record
    assert dumps_kafka_json(to_kafka_json(record)["data"]) == '{"entity":[{"entityType":"user","entityName":null}],"key":"k","value":1.0E7,"remove":false}'


# ------------------------------------------------------------------------------------ hostile


def error_at(data: bytes, base: int = 0) -> SchemaError:
    with pytest.raises(SchemaError) as e:
        decode_metadata(data, base)
    return e.value


def test_truncated_body() -> None:
    for cut in range(len(PCR_HAND)):
        e = error_at(PCR_HAND[:cut], base=1000)
        assert 1000 <= e.position <= 1000 + cut
    e = error_at(PCR_HAND[:10])  # inside TopicId, which starts at byte 7
    assert e.position == 7 and "needs 16 byte(s), 3 left" in e.why


def test_version_above_the_maximum() -> None:
    e = error_at(bytes.fromhex("01" "05" "03") + PCR_HAND[3:])
    assert e.position == 2 and "PartitionChangeRecord version 3 is not a valid version (0-2)" in e.why


def test_unknown_api_key_and_frame_version() -> None:
    e = error_at(bytes.fromhex("01" "63" "00"))
    assert e.position == 1 and "unknown metadata record api key 99" in e.why
    assert error_at(bytes.fromhex("00" "05" "00")).position == 0
    assert error_at(bytes.fromhex("02" "05" "00")).position == 0


def test_truncated_tagged_field() -> None:
    # the Isr tag (at byte 24) declares 9 bytes; cut the buffer after its first 3
    e = error_at(PCR_HAND[:29], base=4096)
    assert e.position == 4096 + 24 and "tag 0: size 9 runs past the end (3 byte(s) left)" in e.why
    # a size that disagrees with the value inside it
    bad = bytearray(PCR_HAND)
    bad[25] = 10  # Isr's size byte
    assert "declares 10 byte(s)" in error_at(bytes(bad)).why


def test_compact_length_overflow() -> None:
    # TopicRecord: Name compact string; a 5-byte varint of 2^32-1 and one whose 5th byte continues
    e = error_at(bytes.fromhex("01" "02" "00" "ffffffff0f"))
    assert e.position == 3 and "overflows int32" in e.why
    e = error_at(bytes.fromhex("01" "02" "00" "ffffffffff"))
    assert e.position == 3 and "longer than 5 bytes" in e.why
    e = error_at(bytes.fromhex("01" "02" "00" "ff7f"))  # a string length past the buffer
    assert e.position == 5


def test_trailing_bytes() -> None:
    e = error_at(PCR_HAND + b"\x00\x00", base=10)
    assert e.position == 10 + len(PCR_HAND) and "2 byte(s) left after PartitionChangeRecord" in e.why


def test_hostile_control_and_offsets_input() -> None:
    with pytest.raises(SchemaError, match="key of 2 byte"):
        decode_control(b"\x00\x00", b"")
    with pytest.raises(SchemaError) as e:
        decode_control(b"\x00\x00\x00\x02", bytes.fromhex("0000" "00000001" "05" "00000001"), base=300)
    assert e.value.position == 300 + 11
    with pytest.raises(SchemaError, match="unknown __consumer_offsets record type 99"):
        decode_offsets_record(b"\x00\x63", None)


def test_group_metadata_value_embeds_the_consumer_protocol() -> None:
    subscription = b"\x00\x01" + encode("ConsumerProtocolSubscription", {"topics": ["t"], "ownedPartitions": []}, 1)
    member = {"memberId": "m", "clientId": "c", "clientHost": "h", "sessionTimeout": 10, "subscription": subscription, "assignment": b"\x00"}
    key, value = encode_offsets_record(2, {"group": "g"}, {"protocolType": "consumer", "generation": 1, "protocol": "range", "leader": "m", "members": [member]}, 3)
    key_json, value_json = decode_offsets_record(key, value)
    assert key_json == {"type": "2", "data": {"group": "g"}}
    (m,) = value_json["data"]["members"]
    # the subscription decodes (ConsumerProtocolSubscription v1); the 1-byte assignment does not and stays base64
    assert m["subscription"] == {"topics": ["t"], "userData": None, "ownedPartitions": []}
    assert m["assignment"] == "AA==" and m["groupInstanceId"] is None and m["rebalanceTimeout"] == -1
