"""Kafka's message schemas as one table of the project's own, and the model the codec interprets.

The facts (field names, types, versions, tags, defaults, ignorable) are read from Kafka's JSON
schema files at commit 1eb7644349cb07139d6a3c1ad1986979647cac99:

- ``md``: ``metadata/src/main/resources/common/metadata/*.json`` (the ``__cluster_metadata`` records),
- ``cl``: ``clients/src/main/resources/common/message/`` (control-record values, consumer protocol,
  the KRaft requests that carry voter keys: Vote, BeginQuorumEpoch, Add/Remove/UpdateRaftVoter),
- ``gc``: ``group-coordinator/src/main/resources/common/message/`` (``__consumer_offsets``).

One entry has no JSON file: ``EndTransactionMarker`` (location ``java``), the value of ABORT and
COMMIT control records, whose schema ``END_TXN_MARKER_SCHEMA_VERSION_V0`` is written out in
``clients/src/main/java/org/apache/kafka/common/record/EndTransactionMarker.java``.

One entry per message: ``_m(location, Name, apiKey, validVersions, flexibleVersions, fields,
structs=commonStructs)``. One string per field::

    "Name type versions [n=nullableVersions] [t=tag@taggedVersions] [d=default] [ign]"

A field whose type is a struct or an array of structs carries its own fields: ``("Name []T 0+",
[...])``; a type named in ``structs`` is a common struct. Versions are spelled as in Kafka
(``0+``, ``1-3``, ``2``, ``none``). A missing ``d=`` is Kafka's empty default (0, false, "",
empty array, zero Uuid, the empty struct), as ``FieldSpec.fieldDefault`` defines it;
``d=null`` is null. ``tests/log/test_schema_table.py`` compares the table with the JSON files
when ``KAFKA_SRC`` names a Kafka checkout.
"""

from __future__ import annotations

import base64
from typing import Any

import attrs

__all__ = ["KAFKA_COMMIT", "MESSAGES", "Field", "FieldType", "Message", "Struct", "Versions", "message", "uuid_from_str",
           "uuid_to_str", "ZERO_UUID"]

KAFKA_COMMIT = "1eb7644349cb07139d6a3c1ad1986979647cac99"
MAX_VERSION = 0x7FFF
PRIMITIVES = ("bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes")
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def uuid_to_str(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> bytes:
    """The bytes of a ``Uuid.toString`` text (padding optional); ``binascii.Error`` on bad
    base64. The caller checks the length (16) and, where it must, the exact form."""
    return base64.urlsafe_b64decode(text + "==")


@attrs.frozen
class Versions:
    """An inclusive version range (Kafka's ``Versions``); empty when ``lo > hi``."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str) -> "Versions":
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        lo, _, hi = text.partition("-")
        return cls(int(lo), int(hi or lo))

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return f"{self.lo}" if self.lo == self.hi else f"{self.lo}-{self.hi}"


@attrs.frozen
class FieldType:
    """``kind`` is a primitive name, ``"struct"`` or ``"array"``; an array has ``element``."""

    kind: str
    element: "FieldType | None" = None
    struct: "Struct | None" = None

    @property
    def text(self) -> str:
        if self.kind == "array":
            return "[]" + self.element.text  # type: ignore[union-attr]
        return self.struct.name if self.struct is not None else self.kind


@attrs.frozen
class Field:
    name: str
    type: FieldType
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default_text: str | None  # as written in the table: None when absent
    ignorable: bool
    key: str = attrs.field(init=False)
    default: Any = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "key", self.name[0].lower() + self.name[1:])
        object.__setattr__(self, "default", _default(self.type, self.default_text or ""))

    def tagged_in(self, version: int) -> bool:
        return version in self.tagged and version in self.versions


@attrs.frozen
class Struct:
    name: str
    versions: Versions
    fields: tuple[Field, ...]

    def default(self) -> dict[str, Any]:
        return {f.key: f.default for f in self.fields}


@attrs.frozen
class Message:
    location: str
    name: str
    api_key: int | None
    valid: Versions
    flexible: Versions
    struct: Struct

    @property
    def max_version(self) -> int:
        return self.valid.hi


def _default(t: FieldType, text: str) -> Any:
    """The Python value of a field's default (``FieldSpec.fieldDefault``)."""
    if text == "null":
        return None
    if t.kind == "bool":
        return text.lower() == "true"
    if t.kind in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        if not text:
            return 0
        return int(text[2:], 16) if text.startswith("0x") else int(text)
    if t.kind == "float64":
        return float(text) if text else 0.0
    if t.kind == "uuid":
        return text or ZERO_UUID
    if t.kind == "string":
        return text
    if t.kind == "bytes":
        return b""
    if t.kind == "array":
        return []
    return t.struct.default()  # type: ignore[union-attr]


def _parse_type(text: str, children: list | None, structs: dict[str, Struct], versions: Versions, name: str) -> FieldType:
    if text.startswith("[]"):
        inner = text[2:]
        if inner in PRIMITIVES:
            return FieldType("array", FieldType(inner))
        return FieldType("array", _parse_type(inner, children, structs, versions, name))
    if text in PRIMITIVES:
        return FieldType(text)
    if children is not None:
        return FieldType("struct", struct=Struct(text, versions, tuple(_parse_field(c, structs) for c in children)))
    if text not in structs:
        raise ValueError(f"schema table: field {name} has unknown type {text}")
    return FieldType("struct", struct=structs[text])


def _parse_field(spec: str | tuple[str, list], structs: dict[str, Struct]) -> Field:
    head, children = (spec, None) if isinstance(spec, str) else spec
    name, type_text, versions, *options = head.split(" ")
    nullable, tagged, tag, default, ignorable = "none", "none", None, None, False
    for opt in options:
        if opt.startswith("n="):
            nullable = opt[2:]
        elif opt.startswith("t="):
            tag_text, _, tagged = opt[2:].partition("@")
            tag = int(tag_text)
        elif opt.startswith("d="):
            default = opt[2:]
        elif opt == "ign":
            ignorable = True
        else:
            raise ValueError(f"schema table: field {name}: unknown option {opt}")
    v = Versions.parse(versions)
    return Field(name, _parse_type(type_text, children, structs, v, name), v, Versions.parse(nullable), Versions.parse(tagged), tag, default, ignorable)


MESSAGES: dict[str, Message] = {}


def _m(location: str, name: str, api_key: int | None, valid: str, flexible: str, fields: list, structs: list = ()) -> None:
    common: dict[str, Struct] = {}
    for sname, sversions, sfields in structs:
        common[sname] = Struct(sname, Versions.parse(sversions), tuple(_parse_field(f, common) for f in sfields))
    v = Versions.parse(valid)
    struct = Struct(name, v, tuple(_parse_field(f, common) for f in fields))
    MESSAGES[name] = Message(location, name, api_key, v, Versions.parse(flexible), struct)


def message(name: str) -> Message:
    try:
        return MESSAGES[name]
    except KeyError:
        raise KeyError(f"no schema named {name!r}") from None


# fmt: off
_m('md', 'AbortTransactionRecord', 25, '0', '0+', [
    'Reason string 0+ n=0+ t=0@0+ d=null',
])
_m('md', 'AccessControlEntryRecord', 18, '0', '0+', [
    'Id uuid 0+',
    'ResourceType int8 0+',
    'ResourceName string 0+',
    'PatternType int8 0+',
    'Principal string 0+',
    'Host string 0+',
    'Operation int8 0+',
    'PermissionType int8 0+',
])
_m('md', 'BeginTransactionRecord', 23, '0', '0+', [
    'Name string 0+ n=0+ t=0@0+ d=null',
])
_m('md', 'BrokerRegistrationChangeRecord', 17, '0-2', '0+', [
    'BrokerId int32 0+',
    'BrokerEpoch int64 0+',
    'Fenced int8 0+ t=0@0+',
    'InControlledShutdown int8 1+ t=1@1+',
    'LogDirs []uuid 2+ t=2@2+',
])
_m('md', 'ClientQuotaRecord', 14, '0', '0+', [
    ('Entity []EntityData 0+', [
        'EntityType string 0+',
        'EntityName string 0+ n=0+',
    ]),
    'Key string 0+',
    'Value float64 0+',
    'Remove bool 0+',
])
_m('md', 'ConfigRecord', 4, '0', '0+', [
    'ResourceType int8 0+',
    'ResourceName string 0+',
    'Name string 0+',
    'Value string 0+ n=0+',
])
_m('md', 'DelegationTokenRecord', 10, '0', '0+', [
    'Owner string 0+',
    'Requester string 0+',
    'Renewers []string 0+',
    'IssueTimestamp int64 0+',
    'MaxTimestamp int64 0+',
    'ExpirationTimestamp int64 0+',
    'TokenId string 0+',
])
_m('md', 'EndTransactionRecord', 24, '0', '0+', [
])
_m('md', 'FeatureLevelRecord', 12, '0', '0+', [
    'Name string 0+',
    'FeatureLevel int16 0+',
])
_m('md', 'FenceBrokerRecord', 7, '0', '0+', [
    'Id int32 0+',
    'Epoch int64 0+',
])
_m('md', 'NoOpRecord', 20, '0', '0+', [
])
_m('md', 'PartitionChangeRecord', 5, '0-2', '0+', [
    'PartitionId int32 0+ d=-1',
    'TopicId uuid 0+',
    'Isr []int32 0+ n=0+ t=0@0+ d=null',
    'Leader int32 0+ t=1@0+ d=-2',
    'Replicas []int32 0+ n=0+ t=2@0+ d=null',
    'RemovingReplicas []int32 0+ n=0+ t=3@0+ d=null',
    'AddingReplicas []int32 0+ n=0+ t=4@0+ d=null',
    'LeaderRecoveryState int8 0+ t=5@0+ d=-1',
    'Directories []uuid 1+ n=1+ t=8@1+ d=null',
    'EligibleLeaderReplicas []int32 2+ n=2+ t=6@2+ d=null',
    'LastKnownElr []int32 2+ n=2+ t=7@2+ d=null',
])
_m('md', 'PartitionRecord', 3, '0-2', '0+', [
    'PartitionId int32 0+ d=-1',
    'TopicId uuid 0+',
    'Replicas []int32 0+',
    'Isr []int32 0+',
    'RemovingReplicas []int32 0+',
    'AddingReplicas []int32 0+',
    'Leader int32 0+ d=-1',
    'LeaderRecoveryState int8 0+ t=0@0+ d=0',
    'LeaderEpoch int32 0+ d=-1',
    'PartitionEpoch int32 0+ d=-1',
    'Directories []uuid 1+',
    'EligibleLeaderReplicas []int32 2+ n=2+ t=1@2+ d=null',
    'LastKnownElr []int32 2+ n=2+ t=2@2+ d=null',
])
_m('md', 'ProducerIdsRecord', 15, '0', '0+', [
    'BrokerId int32 0+',
    'BrokerEpoch int64 0+ d=-1',
    'NextProducerId int64 0+',
])
_m('md', 'RegisterBrokerRecord', 0, '0-3', '0+', [
    'BrokerId int32 0+',
    'IsMigratingZkBroker bool 2+ d=false',
    'IncarnationId uuid 0+',
    'BrokerEpoch int64 0+',
    ('EndPoints []BrokerEndpoint 0+', [
        'Name string 0+',
        'Host string 0+',
        'Port uint16 0+',
        'SecurityProtocol int16 0+',
    ]),
    ('Features []BrokerFeature 0+', [
        'Name string 0+',
        'MinSupportedVersion int16 0+',
        'MaxSupportedVersion int16 0+',
    ]),
    'Rack string 0+ n=0+',
    'Fenced bool 0+ d=true',
    'InControlledShutdown bool 1+ d=false',
    'LogDirs []uuid 3+ t=0@3+',
])
_m('md', 'RegisterControllerRecord', 27, '0', '0+', [
    'ControllerId int32 0+',
    'IncarnationId uuid 0+',
    'ZkMigrationReady bool 0+',
    ('EndPoints []ControllerEndpoint 0+', [
        'Name string 0+',
        'Host string 0+',
        'Port uint16 0+',
        'SecurityProtocol int16 0+',
    ]),
    ('Features []ControllerFeature 0+', [
        'Name string 0+',
        'MinSupportedVersion int16 0+',
        'MaxSupportedVersion int16 0+',
    ]),
])
_m('md', 'RemoveAccessControlEntryRecord', 19, '0', '0+', [
    'Id uuid 0+',
])
_m('md', 'RemoveDelegationTokenRecord', 26, '0', '0+', [
    'TokenId string 0+',
])
_m('md', 'RemoveTopicRecord', 9, '0', '0+', [
    'TopicId uuid 0+',
])
_m('md', 'RemoveUserScramCredentialRecord', 22, '0', '0+', [
    'Name string 0+',
    'Mechanism int8 0+',
])
_m('md', 'TopicRecord', 2, '0', '0+', [
    'Name string 0+',
    'TopicId uuid 0+',
])
_m('md', 'UnfenceBrokerRecord', 8, '0', '0+', [
    'Id int32 0+',
    'Epoch int64 0+',
])
_m('md', 'UnregisterBrokerRecord', 1, '0', '0+', [
    'BrokerId int32 0+',
    'BrokerEpoch int64 0+',
])
_m('md', 'UserScramCredentialRecord', 11, '0', '0+', [
    'Name string 0+',
    'Mechanism int8 0+',
    'Salt bytes 0+',
    'StoredKey bytes 0+',
    'ServerKey bytes 0+',
    'Iterations int32 0+',
])
_m('md', 'ZkMigrationStateRecord', 21, '0', '0+', [
    'ZkMigrationState int8 0+',
])
_m('cl', 'LeaderChangeMessage', None, '0-1', '0+', [
    'Version int16 0+',
    'LeaderId int32 0+',
    'Voters []Voter 0+',
    'GrantingVoters []Voter 0+',
], structs=[
    ('Voter', '0+', [
        'VoterId int32 0+',
        'VoterDirectoryId uuid 1+',
    ]),
])
_m('cl', 'SnapshotHeaderRecord', None, '0', '0+', [
    'Version int16 0+',
    'LastContainedLogTimestamp int64 0+',
])
_m('cl', 'SnapshotFooterRecord', None, '0', '0+', [
    'Version int16 0+',
])
_m('cl', 'KRaftVersionRecord', None, '0', '0+', [
    'Version int16 0+',
    'KRaftVersion int16 0+',
])
_m('cl', 'VotersRecord', None, '0', '0+', [
    'Version int16 0+',
    ('Voters []Voter 0+', [
        'VoterId int32 0+',
        'VoterDirectoryId uuid 0+',
        ('Endpoints []Endpoint 0+', [
            'Name string 0+',
            'Host string 0+',
            'Port uint16 0+',
        ]),
        ('KRaftVersionFeature KRaftVersionFeature 0+', [
            'MinSupportedVersion int16 0+',
            'MaxSupportedVersion int16 0+',
        ]),
    ]),
])
# AddRaftVoterRequest and UpdateRaftVoterRequest declare the same Listeners, AddRaftVoterResponse
# and RemoveRaftVoterResponse the same fields
_RAFT_VOTER_LISTENERS = ('Listeners []Listener 0+', [
    'Name string 0+',
    'Host string 0+',
    'Port uint16 0+',
])
_RAFT_VOTER_CHANGE_RESPONSE = [
    'ThrottleTimeMs int32 0+',
    'ErrorCode int16 0+',
    'ErrorMessage string 0+ n=0+ ign',
]


def _raft_partitions_request(partition_fields: list) -> list:
    """The frame VoteRequest and BeginQuorumEpochRequest share: ClusterId, VoterId, then Topics
    of Partitions, each starting with PartitionIndex."""
    return [
        'ClusterId string 0+ n=0+ d=null',
        'VoterId int32 1+ d=-1 ign',
        ('Topics []TopicData 0+', [
            'TopicName string 0+',
            ('Partitions []PartitionData 0+', ['PartitionIndex int32 0+', *partition_fields]),
        ]),
    ]


_m('cl', 'VoteRequest', 52, '0-1', '0+', _raft_partitions_request([
    'CandidateEpoch int32 0+',
    'CandidateId int32 0+',
    'CandidateDirectoryId uuid 1+ ign',
    'VoterDirectoryId uuid 1+ ign',
    'LastOffsetEpoch int32 0+',
    'LastOffset int64 0+',
]))
_m('cl', 'BeginQuorumEpochRequest', 53, '0-1', '1+', [
    *_raft_partitions_request([
        'VoterDirectoryId uuid 1+ ign',
        'LeaderId int32 0+',
        'LeaderEpoch int32 0+',
    ]),
    ('LeaderEndpoints []LeaderEndpoint 1+ ign', [
        'Name string 1+',
        'Host string 1+',
        'Port uint16 1+',
    ]),
])
_m('cl', 'AddRaftVoterRequest', 80, '0', '0+', [
    'ClusterId string 0+ n=0+',
    'TimeoutMs int32 0+',
    'VoterId int32 0+',
    'VoterDirectoryId uuid 0+',
    _RAFT_VOTER_LISTENERS,
])
_m('cl', 'AddRaftVoterResponse', 80, '0', '0+', _RAFT_VOTER_CHANGE_RESPONSE)
_m('cl', 'RemoveRaftVoterRequest', 81, '0', '0+', [
    'ClusterId string 0+ n=0+',
    'VoterId int32 0+',
    'VoterDirectoryId uuid 0+',
])
_m('cl', 'RemoveRaftVoterResponse', 81, '0', '0+', _RAFT_VOTER_CHANGE_RESPONSE)
_m('cl', 'UpdateRaftVoterRequest', 82, '0', '0+', [
    'ClusterId string 0+ n=0+',
    'CurrentLeaderEpoch int32 0+',
    'VoterId int32 0+',
    'VoterDirectoryId uuid 0+',
    _RAFT_VOTER_LISTENERS,
    ('KRaftVersionFeature KRaftVersionFeature 0+', [
        'MinSupportedVersion int16 0+',
        'MaxSupportedVersion int16 0+',
    ]),
])
_m('cl', 'UpdateRaftVoterResponse', 82, '0', '0+', [
    'ThrottleTimeMs int32 0+',
    'ErrorCode int16 0+',
    ('CurrentLeader CurrentLeader 0+ t=0@0+', [
        'LeaderId int32 0+ d=-1',
        'LeaderEpoch int32 0+ d=-1',
        'Host string 0+',
        'Port int32 0+',
    ]),
])
_m('cl', 'ConsumerProtocolSubscription', None, '0-3', 'none', [
    'Topics []string 0+',
    'UserData bytes 0+ n=0+ d=null',
    ('OwnedPartitions []TopicPartition 1+ ign', [
        'Topic string 1+',
        'Partitions []int32 1+',
    ]),
    'GenerationId int32 2+ d=-1 ign',
    'RackId string 3+ n=3+ d=null ign',
])
_m('cl', 'ConsumerProtocolAssignment', None, '0-3', 'none', [
    ('AssignedPartitions []TopicPartition 0+', [
        'Topic string 0+',
        'Partitions []int32 0+',
    ]),
    'UserData bytes 0+ n=0+ d=null',
])
_m('gc', 'ConsumerGroupCurrentMemberAssignmentKey', None, '8', 'none', [
    'GroupId string 8',
    'MemberId string 8',
])
_m('gc', 'ConsumerGroupCurrentMemberAssignmentValue', None, '0', '0+', [
    'MemberEpoch int32 0+',
    'PreviousMemberEpoch int32 0+',
    'State int8 0+',
    'AssignedPartitions []TopicPartitions 0+',
    'PartitionsPendingRevocation []TopicPartitions 0+',
], structs=[
    ('TopicPartitions', '0+', [
        'TopicId uuid 0+',
        'Partitions []int32 0+',
    ]),
])
_m('gc', 'ConsumerGroupMemberMetadataKey', None, '5', 'none', [
    'GroupId string 5',
    'MemberId string 5',
])
_m('gc', 'ConsumerGroupMemberMetadataValue', None, '0', '0+', [
    'InstanceId string 0+ n=0+',
    'RackId string 0+ n=0+',
    'ClientId string 0+',
    'ClientHost string 0+',
    'SubscribedTopicNames []string 0+',
    'SubscribedTopicRegex string 0+ n=0+',
    'RebalanceTimeoutMs int32 0+ d=-1',
    'ServerAssignor string 0+ n=0+',
    ('ClassicMemberMetadata ClassicMemberMetadata 0+ n=0+ t=0@0+', [
        'SessionTimeoutMs int32 0+',
        ('SupportedProtocols []ClassicProtocol 0+', [
            'Name string 0+',
            'Metadata bytes 0+',
        ]),
    ]),
])
_m('gc', 'ConsumerGroupMetadataKey', None, '3', 'none', [
    'GroupId string 3',
])
_m('gc', 'ConsumerGroupMetadataValue', None, '0', '0+', [
    'Epoch int32 0+',
])
_m('gc', 'ConsumerGroupPartitionMetadataKey', None, '4', 'none', [
    'GroupId string 4',
])
_m('gc', 'ConsumerGroupPartitionMetadataValue', None, '0', '0+', [
    ('Topics []TopicMetadata 0+', [
        'TopicId uuid 0+',
        'TopicName string 0+',
        'NumPartitions int32 0+',
        ('PartitionMetadata []PartitionMetadata 0+', [
            'Partition int32 0+',
            'Racks []string 0+',
        ]),
    ]),
])
_m('gc', 'ConsumerGroupTargetAssignmentMemberKey', None, '7', 'none', [
    'GroupId string 7',
    'MemberId string 7',
])
_m('gc', 'ConsumerGroupTargetAssignmentMemberValue', None, '0', '0+', [
    ('TopicPartitions []TopicPartition 0+', [
        'TopicId uuid 0+',
        'Partitions []int32 0+',
    ]),
])
_m('gc', 'ConsumerGroupTargetAssignmentMetadataKey', None, '6', 'none', [
    'GroupId string 6',
])
_m('gc', 'ConsumerGroupTargetAssignmentMetadataValue', None, '0', '0+', [
    'AssignmentEpoch int32 0+',
])
_m('gc', 'GroupMetadataKey', None, '2', 'none', [
    'group string 2',
])
_m('gc', 'GroupMetadataValue', None, '0-4', '4+', [
    'protocolType string 0+',
    'generation int32 0+',
    'protocol string 0+ n=0+',
    'leader string 0+ n=0+',
    'currentStateTimestamp int64 2+ d=-1 ign',
    'members []MemberMetadata 0+',
], structs=[
    ('MemberMetadata', '0+', [
        'memberId string 0+',
        'groupInstanceId string 3+ n=3+ d=null ign',
        'clientId string 0+',
        'clientHost string 0+',
        'rebalanceTimeout int32 1+ d=-1 ign',
        'sessionTimeout int32 0+',
        'subscription bytes 0+',
        'assignment bytes 0+',
    ]),
])
_m('gc', 'OffsetCommitKey', None, '0-1', 'none', [
    'group string 0-1',
    'topic string 0-1',
    'partition int32 0-1',
])
_m('gc', 'OffsetCommitValue', None, '0-4', '4+', [
    'offset int64 0+',
    'leaderEpoch int32 3+ d=-1 ign',
    'metadata string 0+',
    'commitTimestamp int64 0+',
    'expireTimestamp int64 1 d=-1 ign',
])
_m('gc', 'ShareGroupCurrentMemberAssignmentKey', None, '14', 'none', [
    'GroupId string 14',
    'MemberId string 14',
])
_m('gc', 'ShareGroupCurrentMemberAssignmentValue', None, '0', '0+', [
    'MemberEpoch int32 0+',
    'PreviousMemberEpoch int32 0+',
    'State int8 0+',
    'AssignedPartitions []TopicPartitions 0+',
], structs=[
    ('TopicPartitions', '0+', [
        'TopicId uuid 0+',
        'Partitions []int32 0+',
    ]),
])
_m('gc', 'ShareGroupMemberMetadataKey', None, '10', 'none', [
    'GroupId string 10',
    'MemberId string 10',
])
_m('gc', 'ShareGroupMemberMetadataValue', None, '0', '0+', [
    'RackId string 0+ n=0+',
    'ClientId string 0+',
    'ClientHost string 0+',
    'SubscribedTopicNames []string 0+',
])
_m('gc', 'ShareGroupMetadataKey', None, '11', 'none', [
    'GroupId string 11',
])
_m('gc', 'ShareGroupMetadataValue', None, '0', '0+', [
    'Epoch int32 0+',
])
_m('gc', 'ShareGroupPartitionMetadataKey', None, '9', 'none', [
    'GroupId string 9',
])
_m('gc', 'ShareGroupPartitionMetadataValue', None, '0', '0+', [
    ('Topics []TopicMetadata 0+', [
        'TopicId uuid 0+',
        'TopicName string 0+',
        'NumPartitions int32 0+',
        ('PartitionMetadata []PartitionMetadata 0+', [
            'Partition int32 0+',
            'Racks []string 0+',
        ]),
    ]),
])
_m('gc', 'ShareGroupStatePartitionMetadataKey', None, '15', 'none', [
    'GroupId string 15',
])
_m('gc', 'ShareGroupStatePartitionMetadataValue', None, '0', '0+', [
    'InitializedTopics []TopicPartitionsInfo 0+',
    'DeletingTopics []TopicInfo 0+',
], structs=[
    ('TopicPartitionsInfo', '0+', [
        'TopicId uuid 0+',
        'TopicName string 0+',
        'Partitions []int32 0+',
    ]),
    ('TopicInfo', '0+', [
        'TopicId uuid 0+',
        'TopicName string 0+',
    ]),
])
_m('gc', 'ShareGroupTargetAssignmentMemberKey', None, '13', 'none', [
    'GroupId string 13',
    'MemberId string 13',
])
_m('gc', 'ShareGroupTargetAssignmentMemberValue', None, '0', '0+', [
    ('TopicPartitions []TopicPartition 0+', [
        'TopicId uuid 0+',
        'Partitions []int32 0+',
    ]),
])
_m('gc', 'ShareGroupTargetAssignmentMetadataKey', None, '12', 'none', [
    'GroupId string 12',
])
_m('gc', 'ShareGroupTargetAssignmentMetadataValue', None, '0', '0+', [
    'AssignmentEpoch int32 0+',
])
_m('java', 'EndTransactionMarker', None, '0', 'none', [
    'Version int16 0+',
    'CoordinatorEpoch int32 0+',
])
# fmt: on
