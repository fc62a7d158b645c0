"""The schema table says what Kafka's JSON schema files say.

Runs when ``KAFKA_SRC`` names a Kafka checkout (or an extract of its ``*/src/main/resources``);
skipped otherwise. The table's entries are compared field by field, and every metadata and
group-coordinator JSON file must have an entry.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kraft.log.schema import MESSAGES, Field, Struct, Versions

DIRS = {
    "md": "metadata/src/main/resources/common/metadata",
    "cl": "clients/src/main/resources/common/message",
    "gc": "group-coordinator/src/main/resources/common/message",
}
KAFKA_SRC = os.environ.get("KAFKA_SRC")
pytestmark = pytest.mark.skipif(not KAFKA_SRC, reason="KAFKA_SRC is not set to a Kafka checkout; the table cannot be compared with Kafka's JSON")


def without_comments(text: str) -> str:
    """Kafka's schema files are JSON with // comments; drop them outside strings."""
    out, i, in_string = [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def schemas(location: str) -> dict[str, dict[str, Any]]:
    """Kafka's schemas in one directory by message name (a file's name need not be its message's:
    ZkMigrationRecord.json holds ZkMigrationStateRecord)."""
    out = {}
    for path in sorted((Path(KAFKA_SRC) / DIRS[location]).glob("*.json")):  # type: ignore[arg-type]
        j = json.loads(without_comments(path.read_text()))
        out[j["name"]] = j
    return out


def load(location: str, name: str) -> dict[str, Any]:
    return schemas(location)[name]


def versions(text: str | None) -> str:
    return str(Versions.parse(text or "none"))


def compare_field(f: Field, j: dict[str, Any], path: str) -> list[str]:
    tagged = j.get("taggedVersions")
    default = j.get("default")
    expect = {
        "type": j["type"],
        "versions": versions(j.get("versions", tagged)),
        "nullable": versions(j.get("nullableVersions")),
        "tagged": versions(tagged),
        "tag": None if j.get("tag") is None else int(j["tag"]),  # Jackson reads "2" as 2
        "default": "" if default is None else str(default),  # FieldSpec: a JSON null default is ""
        "ignorable": bool(j.get("ignorable", False)),
    }
    have = {
        "type": f.type.text,
        "versions": str(f.versions),
        "nullable": str(f.nullable),
        "tagged": str(f.tagged),
        "tag": f.tag,
        "default": f.default_text or "",
        "ignorable": f.ignorable,
    }
    diffs = [f"{path}.{f.name}: {k} is {have[k]!r} in the table, {expect[k]!r} in Kafka" for k in expect if have[k] != expect[k]]
    inline = j.get("fields")
    if inline is not None:
        element = f.type.element if f.type.kind == "array" else f.type
        diffs += compare_struct(element.struct, inline, f"{path}.{f.name}")  # type: ignore[union-attr]
    return diffs


def compare_struct(s: Struct, fields: list[dict[str, Any]], path: str) -> list[str]:
    names = [f.name for f in s.fields]
    if names != [j["name"] for j in fields]:
        return [f"{path}: fields {names} in the table, {[j['name'] for j in fields]} in Kafka"]
    return [d for f, j in zip(s.fields, fields) for d in compare_field(f, j, path)]


def common_structs(name: str) -> dict[str, Struct]:
    """The table's common structs of a message, found through the fields that use them."""
    found: dict[str, Struct] = {}

    def walk(s: Struct) -> None:
        for f in s.fields:
            t = f.type.element if f.type.kind == "array" else f.type
            if t is not None and t.struct is not None:
                found.setdefault(t.struct.name, t.struct)
                walk(t.struct)

    walk(MESSAGES[name].struct)
    return found


@pytest.mark.parametrize("name", sorted(n for n, m in MESSAGES.items() if m.location in DIRS))
def test_table_matches_kafka_json(name: str) -> None:
    m = MESSAGES[name]
    j = load(m.location, name)
    diffs = []
    for key, have, expect in (
        ("apiKey", m.api_key, j.get("apiKey")),
        ("validVersions", str(m.valid), versions(j["validVersions"])),
        ("flexibleVersions", str(m.flexible), versions(j.get("flexibleVersions"))),
    ):
        if have != expect:
            diffs.append(f"{name}: {key} is {have!r} in the table, {expect!r} in Kafka")
    diffs += compare_struct(m.struct, j["fields"], name)
    structs = common_structs(name)
    for cs in j.get("commonStructs", []):
        s = structs.get(cs["name"])
        if s is None:
            diffs.append(f"{name}: common struct {cs['name']} is not used by the table")
            continue
        if str(s.versions) != versions(cs["versions"]):
            diffs.append(f"{name}.{cs['name']}: versions {s.versions} in the table, {cs['versions']} in Kafka")
        diffs += compare_struct(s, cs["fields"], f"{name}.{cs['name']}")
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("location", ["md", "gc"])
def test_every_schema_file_has_an_entry(location: str) -> None:
    files = set(schemas(location))
    table = {n for n, m in MESSAGES.items() if m.location == location}
    assert files == table, f"only in Kafka: {sorted(files - table)}; only in the table: {sorted(table - files)}"
