"""Hostile bytes for the readers: random bytes, and mutations of a valid document (truncation at
any position, byte flips, deep nesting, a huge line, invalid UTF-8, wrong types in a field)."""

from __future__ import annotations

import json
import os

from hypothesis import settings
from hypothesis import strategies as st

from tests import examples

# The default suite runs the HEAVY count; -m slow runs the long version, HOSTILE_EXAMPLES examples
# if set (the long run reported in docs/audit.md used it), else HEAVY's thorough count.
FAST = examples.HEAVY(deadline=None)
LONG = settings(max_examples=int(os.environ.get("HOSTILE_EXAMPLES", examples.HEAVY.thorough)), deadline=None)

INVALID_UTF8 = [b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]


def _deep(kind: str, n: int) -> bytes:
    if kind == "json-array":
        return b"[" * n + b"]" * n
    if kind == "json-object":
        return b'{"a":' * n + b"1" + b"}" * n
    if kind == "edn-list":
        return b"(" * n + b")" * n
    if kind == "edn-map":
        return b"{:a " * n + b"1" + b"}" * n
    if kind == "edn-tag":
        return b"#a " * n + b"1"
    return b"#_ " * n + b"1"


@st.composite
def mutated(draw, seeds: list[bytes]) -> bytes:
    """One valid seed document, then one to three hostile mutations."""
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["truncate", "flip", "deep", "huge", "utf8", "splice", "delete-line",
                                    "dup-line"]))
        pos = draw(st.integers(0, len(data)))
        if how == "truncate":
            del data[pos:]
        elif how == "flip" and data:
            i = min(pos, len(data) - 1)
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif how == "deep":
            kind = draw(st.sampled_from(["json-array", "json-object", "edn-list", "edn-map", "edn-tag", "edn-discard"]))
            data[pos:pos] = _deep(kind, draw(st.sampled_from([50, 101, 999, 5000, 50_000])))
        elif how == "huge":
            data[pos:pos] = b'"' + b"x" * draw(st.sampled_from([10_000, 1_000_000])) + b'"'
        elif how == "utf8":
            data[pos:pos] = draw(st.sampled_from(INVALID_UTF8))
        elif how == "splice":
            data[pos:pos] = draw(st.binary(max_size=40))
        elif how == "delete-line":
            lines = bytes(data).split(b"\n")
            if len(lines) > 1:
                del lines[draw(st.integers(0, len(lines) - 1))]
            data = bytearray(b"\n".join(lines))
        else:
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
    return bytes(data)


def hostile(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=300), mutated(seeds))


# JSON values of every type, for "wrong type in every field"
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)

OP_FIELDS = ("index", "process", "type", "f", "key", "value", "time")


@st.composite
def wrong_typed_ops(draw) -> bytes:
    """An NDJSON history whose ops have a random JSON value in one or more fields."""
    lines = [json.dumps({"v": 1, "kind": "history", "model": draw(st.sampled_from(["register", "cas-register", "set",
                                                                                      "kv", "append-log", None]))})]
    for i in range(draw(st.integers(1, 8))):
        op = {"index": i, "process": i % 2, "type": ["invoke", "ok"][i % 2], "f": "write", "value": i}
        for field in draw(st.lists(st.sampled_from(OP_FIELDS), max_size=3)):
            op[field] = draw(json_values)
        lines.append(json.dumps(op))
    return ("\n".join(lines) + "\n").encode()
