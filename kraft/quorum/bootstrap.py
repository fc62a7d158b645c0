"""Formatting a metadata directory for a dynamic quorum (KIP-853), as ``kafka-storage format``
does with ``--standalone`` or ``--initial-controllers``.

- The voters: ``--initial-controllers`` is a comma-separated list of ``id@host:port:directoryId``
  (``org.apache.kafka.raft.DynamicVoter.parse``, ``DynamicVoters.parse``: empty items are
  skipped, an id may appear once, a bracketed host is an IPv6 address); ``--standalone`` is the
  one voter ``nodeId@host:port:<a random directory id>`` (``StorageTool
  .createStandaloneDynamicVoters``). Each voter supports kraft.version 0 to 1 and has one endpoint
  named after the controller listener, upper-cased (``DynamicVoter.toVoterNode``,
  ``ListenerName.normalised``).
- ``meta.properties`` in the directory (``Formatter.doFormat``, ``MetaProperties.toProperties``):
  ``version=1``, ``cluster.id``, ``node.id`` and ``directory.id``: the node's own directory id
  from the voters, or a random one when the node is not among them. Written as Java's
  ``Properties.store`` writes it (``PropertiesUtils.writePropertiesFile``): a ``#`` line, a ``#``
  date line, then the entries in the iteration order of the ``ConcurrentHashMap`` a
  ``Properties`` holds.
- The bootstrap checkpoint ``__cluster_metadata-0/00000000000000000000-0000000000.checkpoint``
  (``Formatter.writeDynamicQuorumSnapshot``, ``Snapshots.BOOTSTRAP_SNAPSHOT_ID`` = offset 0,
  epoch 0): one control batch with the SnapshotHeaderRecord, the KRaftVersionRecord
  (kraft.version 1) and the VotersRecord, then the footer batch; every timestamp is the format
  time (``RecordsSnapshotWriter.Builder.build``).

Not written: ``bootstrap.checkpoint`` (the metadata.version and feature records, which belong to
the controller's metadata, not to the quorum).
"""

from __future__ import annotations

import datetime
import os
import re
import uuid as uuidlib

import attrs

from kraft.log import ControlType, FileSystem, write_atomically
from kraft.log.fs import join
from kraft.log.schema import ZERO_UUID, uuid_from_str, uuid_to_str
from kraft.log.snapshot import SnapshotId, write_snapshot
from kraft.quorum.voters import KRAFT_VERSION_1, Endpoint, ReplicaKey, VoterNode, VoterSet

__all__ = ["BOOTSTRAP_SNAPSHOT_ID", "DynamicVoter", "FormatError", "format_directory", "meta_properties_text",
           "parse_dynamic_voter", "parse_dynamic_voters", "parse_uuid", "random_uuid"]

BOOTSTRAP_SNAPSHOT_ID = SnapshotId(0, 0)
METADATA_PARTITION_DIR = "__cluster_metadata-0"
META_PROPERTIES = "meta.properties"
_RESERVED_UUIDS = (ZERO_UUID, "AAAAAAAAAAAAAAAAAAAAAQ")  # Uuid.RESERVED: ZERO_UUID, ONE_UUID
_UUID_TEXT = re.compile(r"^[A-Za-z0-9_-]{22}(==)?$")
_DESCRIPTIONS = {True: "dynamic metadata voter directory", False: "dynamic metadata directory"}


class FormatError(ValueError):
    """Bad input to the format command; the message says what and where."""


@attrs.frozen
class DynamicVoter:
    node_id: int
    host: str
    port: int
    directory_id: str

    def to_voter_node(self, listener_name: str) -> VoterNode:
        """``DynamicVoter.toVoterNode``: kraft.version 0 to 1, one endpoint."""
        return VoterNode(ReplicaKey(self.node_id, self.directory_id),
                         (Endpoint(listener_name.upper(), self.host, self.port),), 0, 1)


def parse_uuid(text: str) -> str:
    """``Uuid.fromString``: URL-safe base64 of 16 bytes; returns the canonical text."""
    if len(text) > 24:
        raise FormatError(f"{text[:24]}...: too long to be a base64 UUID")
    if not _UUID_TEXT.match(text):
        raise FormatError(f"{text!r} is not a base64 UUID (22 characters of A-Z a-z 0-9 - _)")
    return uuid_to_str(uuid_from_str(text.rstrip("=")))


def random_uuid() -> str:
    """``Uuid.randomUuid``: a type-4 UUID, never a reserved one nor one whose text starts with '-'."""
    while True:
        text = uuid_to_str(uuidlib.uuid4().bytes)
        if text not in _RESERVED_UUIDS and not text.startswith("-"):
            return text


def _parse_int(text: str, what: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise FormatError(f"failed to parse the {what} {text!r}")
    return int(text)


def _split_host(rest: str) -> tuple[str, str]:
    """The host and what follows it (from the port's colon on)."""
    if rest.startswith("["):
        end = rest.find("]")
        if end < 0:
            raise FormatError("the host begins with '[' but has no ']'")
        return rest[1:end], rest[end + 1:]
    colon = rest.find(":")
    if colon < 0:
        raise FormatError("no ':' after the host")
    return rest[:colon], rest[colon:]


def parse_dynamic_voter(text: str) -> DynamicVoter:
    """``DynamicVoter.parse`` of ``id@host:port:directoryId``."""
    text = text.strip()
    at = text.find("@")
    if at <= 0:
        raise FormatError("no node id before '@'" if at == 0 else "no '@' in the voter")
    node_id = _parse_int(text[:at], "node id")
    if node_id < 0:
        raise FormatError(f"negative node id {node_id}")
    if not text[at + 1:]:
        raise FormatError("no host after the node id")
    host, rest = _split_host(text[at + 1:])
    if not rest.startswith(":"):
        raise FormatError("the port must follow the host after ':'")
    port_text, colon, directory = rest[1:].partition(":")
    if not colon:
        raise FormatError("no ':' after the port")
    port = _parse_int(port_text, "port")
    if not 0 <= port <= 65535:
        raise FormatError(f"port {port} is out of range 0-65535")
    return DynamicVoter(node_id, host, port, parse_uuid(directory))


def parse_dynamic_voters(text: str) -> list[DynamicVoter]:
    """``DynamicVoters.parse``: the voters of a comma-separated list, by ascending id."""
    voters: dict[int, DynamicVoter] = {}
    for item in text.strip().split(","):
        if not item:
            continue
        try:
            voter = parse_dynamic_voter(item)
        except FormatError as exc:
            raise FormatError(f"voter {item.strip()!r}: {exc}") from None
        if voter.node_id in voters:
            raise FormatError(f"node id {voter.node_id} is given more than once")
        voters[voter.node_id] = voter
    if not voters:
        raise FormatError("no voters given")
    return [voters[i] for i in sorted(voters)]


def _java_hash(text: str) -> int:
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h


def _properties_order(keys: list[str], table_size: int = 16) -> list[str]:
    """The order a fresh ``Properties`` (a ``ConcurrentHashMap`` of 16 bins) iterates ``keys``
    inserted in this order: by bin (``spread(hashCode) & 15``), then insertion order."""
    def bin_of(key: str) -> int:
        h = _java_hash(key)
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (table_size - 1)
    return sorted(keys, key=lambda k: (bin_of(k), keys.index(k)))


def _escape(text: str, is_key: bool) -> str:
    """``Properties.saveConvert`` for a Writer: backslash before ``\\ = : # !``, named escapes
    for tab, newline, return and form feed, a leading space (every space in a key) escaped."""
    out = []
    for i, ch in enumerate(text):
        if ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(ch)])
        elif ch == " " and (is_key or i == 0):
            out.append("\\ ")
        else:
            out.append(ch)
    return "".join(out)


def _java_date(now: datetime.datetime) -> str:
    """``java.util.Date.toString`` in UTC: ``EEE MMM dd HH:mm:ss zzz yyyy``, English names
    whatever the locale."""
    day = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")[now.weekday()]
    month = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")[now.month - 1]
    return f"{day} {month} {now:%d %H:%M:%S} UTC {now.year}"


def meta_properties_text(props: dict[str, str], now: datetime.datetime) -> str:
    """``meta.properties`` as ``Properties.store(writer, "")`` writes ``props`` (``now`` in UTC)."""
    lines = ["#", "#" + _java_date(now)]
    lines += [f"{_escape(k, True)}={_escape(props[k], False)}" for k in _properties_order(list(props))]
    return "\n".join(lines) + "\n"


def _check_unformatted(fs: FileSystem, directory: str) -> None:
    if fs.exists(join(directory, META_PROPERTIES)):
        raise FormatError(f"log directory {directory} is already formatted ({META_PROPERTIES} exists)")
    checkpoint = join(join(directory, METADATA_PARTITION_DIR), "00000000000000000000-0000000000.checkpoint")
    if fs.exists(checkpoint):
        raise FormatError(f"{checkpoint} exists already")


def format_directory(fs: FileSystem, directory: str, *, cluster_id: str, node_id: int, voters: list[DynamicVoter],
                     listener_name: str, now_ms: int) -> tuple[str, str]:
    """Write ``meta.properties`` and the bootstrap checkpoint into ``directory``. Returns the
    line Kafka prints and the checkpoint's path."""
    if not cluster_id:
        raise FormatError("the cluster id is empty")
    _check_unformatted(fs, directory)
    own = next((v for v in voters if v.node_id == node_id), None)
    props = {"version": "1", "cluster.id": cluster_id, "node.id": str(node_id),
             "directory.id": own.directory_id if own else random_uuid()}
    now = datetime.datetime.fromtimestamp(now_ms / 1000, datetime.timezone.utc)
    voter_set = VoterSet(tuple(v.to_voter_node(listener_name) for v in voters))
    header = [(ControlType.KRAFT_VERSION, {"kRaftVersion": KRAFT_VERSION_1}),
              (ControlType.KRAFT_VOTERS, voter_set.to_voters_record())]
    # the checkpoint first, meta.properties last (MetaPropertiesEnsemble.Copier runs the
    # pre-write handler that writes the checkpoint before it writes meta.properties)
    path = write_snapshot(fs, join(directory, METADATA_PARTITION_DIR), BOOTSTRAP_SNAPSHOT_ID, [],
                          last_contained_log_timestamp=now_ms, timestamp=now_ms, header_records=header)
    write_atomically(fs, join(directory, META_PROPERTIES), meta_properties_text(props, now).encode())
    return f"Formatting {_DESCRIPTIONS[own is not None]} {os.path.normpath(directory)} with kraft.version 1.", path
