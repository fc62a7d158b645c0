"""Reading a group file for ``kraft assign``: JSON that names the file and line when it is bad.

Shared by the classic group file (:mod:`.cli`) and the consumer-protocol one
(:mod:`.server.groupfile`).
"""

from __future__ import annotations

import json
import re
from typing import Any


# A bound on the input, far above what one consumer group meets (KRaft clusters are sized in the
# hundreds of thousands of partitions, KIP-500) and small enough for the assignors' memory.
MAX_PARTITIONS = 1_000_000


class GroupFileError(ValueError):
    """The group file is unreadable or malformed; the message names the file and place."""


def key_line(text: str, key: str, nth: int) -> int | str:
    """Line of the ``nth`` occurrence of ``"key":`` in the JSON text (for error messages)."""
    found = list(re.finditer(re.escape(json.dumps(key)) + r"\s*:", text))
    if len(found) < nth:
        found = list(re.finditer(re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:", text))
    return text.count("\n", 0, found[nth - 1].start()) + 1 if len(found) >= nth else "?"


def read_json(path: str) -> tuple[str, Any]:
    """The text of ``path`` and its JSON value; duplicate keys are an error (JSON would keep
    the last one silently)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise GroupFileError(f"{path}: cannot read: {e.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise GroupFileError(f"{path}:{line}: not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    dups: list[tuple[str, ...]] = []

    def strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                dups.append((k,))
            seen.add(k)
        return dict(pairs)

    try:
        doc = json.loads(text, object_pairs_hook=strict_object)
    except json.JSONDecodeError as e:
        raise GroupFileError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise GroupFileError(f"{path}: invalid JSON: nested too deeply") from None
    if dups:  # json keeps the last of duplicate keys; a second member "a" would replace the first
        key = dups[0][0]
        raise GroupFileError(f"{path}:{key_line(text, key, 2)}: duplicate key {key!r} "
                             f"(first at line {key_line(text, key, 1)})")
    if not isinstance(doc, dict):
        raise GroupFileError(f"{path}: top level must be an object")
    return text, doc
