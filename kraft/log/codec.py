"""One reader and one writer that interpret the schema table (:mod:`kraft.log.schema`).

The semantics are those of the classes Kafka's ``MessageDataGenerator`` generates (their
``read``/``write``) over ``ByteBufferAccessor``:

- A version in a message's ``flexibleVersions`` writes strings, bytes and arrays compactly
  (unsigned varint of length + 1, 0 for null) and ends every struct with a tagged-field section:
  the count, then per field its tag, its size and its value, tags ascending. Other versions write
  an int16 (strings) or int32 (bytes, arrays) length, -1 for null.
- A tagged field is written only when it differs from its default (``FieldSpec.
  generateNonDefaultValueCheck``); its value uses the flexible encoding. A nullable struct carries
  a marker before it: int8 -1/1 in the body, unsigned varint 0/1 when tagged.
- A field absent from a version is not written and reads as its default. Writing a non-default
  value to such a field fails (Kafka's ``UnsupportedVersionException``) unless it is ``ignorable``,
  in which case it is dropped.

Decoded values: int, bool, float, str (a Uuid in its ``Uuid.toString`` form), bytes, None, list,
dict for a struct, keyed by the JsonConverter names (first letter lower-cased). A decoded dict
holds the fields of its version, the tagged ones only when they differ from their default, which
is what Kafka's ``*JsonConverter.write`` prints.

Where this reader is deliberately stricter than Kafka's, it says so in a :class:`SchemaError`:
an unknown tagged field is skipped (Kafka keeps it in ``unknownTaggedFields`` and writes it back;
here it is dropped, so re-encoding such input does not reproduce it); a known tagged field must
use exactly its declared size (Kafka reads the value and ignores the size); a version outside
``validVersions`` is refused; strings must be valid UTF-8 (Kafka substitutes U+FFFD).
"""

from __future__ import annotations

import binascii
import struct
from typing import Any

from .schema import Field, FieldType, Message, Struct, message, uuid_from_str, uuid_to_str

__all__ = ["EncodeError", "SchemaError", "decode", "encode", "full_fields", "write_uvarint"]

_FIXED = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
MAX_STRING_LENGTH = 0x7FFF


class SchemaError(ValueError):
    """Bytes that do not decode under the schema. ``position`` is the absolute byte position of
    the problem: its offset in the buffer handed in, plus the ``base`` the caller passed."""

    def __init__(self, position: int, why: str) -> None:
        self.position = position
        self.why = why
        super().__init__(f"at byte position {position}: {why}")


class EncodeError(ValueError):
    """Field values that cannot be written at the requested version."""


# ------------------------------------------------------------------------------------ writing


def write_uvarint(out: bytearray, n: int) -> None:
    """Kafka's ``ByteUtils.writeUnsignedVarint`` (7 bits a byte, low group first)."""
    if not 0 <= n < (1 << 32):
        raise EncodeError(f"unsigned varint out of range: {n}")
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _uuid_bytes(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise EncodeError(f"{where}: a Uuid is a 22-character string, got {value!r}")
    try:
        raw = uuid_from_str(value)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16 or uuid_to_str(raw) != value:
        raise EncodeError(f"{where}: not a Uuid string: {value!r}")
    return raw


def _write_length(out: bytearray, n: int | None, flexible: bool, short: bool) -> None:
    if flexible:
        write_uvarint(out, 0 if n is None else n + 1)
    else:
        out += struct.pack(">h" if short else ">i", -1 if n is None else n)


def _write_value(out: bytearray, t: FieldType, v: Any, version: int, flexible: bool, nullable: bool, tagged: bool, where: str) -> None:
    if v is None and t.kind in ("string", "bytes", "array", "struct"):
        if not nullable:
            raise EncodeError(f"{where}: null in a version where it is not nullable")
        if t.kind == "struct":
            if tagged:
                write_uvarint(out, 0)
            else:
                out += b"\xff"
        else:
            _write_length(out, None, flexible, t.kind == "string")
        return
    kind = t.kind
    if kind == "bool":
        if not isinstance(v, bool):
            raise EncodeError(f"{where}: expected a bool, got {v!r}")
        out.append(1 if v else 0)
    elif kind in _RANGES:
        lo, hi = _RANGES[kind]
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise EncodeError(f"{where}: expected an {kind}, got {v!r}")
        out += _FIXED[kind].pack(v)
    elif kind == "float64":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise EncodeError(f"{where}: expected a float64, got {v!r}")
        out += _FIXED[kind].pack(float(v))
    elif kind == "uuid":
        out += _uuid_bytes(v, where)
    elif kind == "string":
        if not isinstance(v, str):
            raise EncodeError(f"{where}: expected a string, got {v!r}")
        raw = v.encode("utf-8")
        if len(raw) > MAX_STRING_LENGTH:
            raise EncodeError(f"{where}: string of {len(raw)} bytes is longer than {MAX_STRING_LENGTH}")
        _write_length(out, len(raw), flexible, True)
        out += raw
    elif kind == "bytes":
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"{where}: expected bytes, got {v!r}")
        _write_length(out, len(v), flexible, False)
        out += v
    elif kind == "array":
        if not isinstance(v, (list, tuple)):
            raise EncodeError(f"{where}: expected a list, got {v!r}")
        _write_length(out, len(v), flexible, False)
        for i, item in enumerate(v):
            _write_value(out, t.element, item, version, flexible, False, False, f"{where}[{i}]")  # type: ignore[arg-type]
    else:
        if nullable:
            write_uvarint(out, 1) if tagged else out.append(1)
        _write_struct(out, t.struct, v, version, flexible, where)  # type: ignore[arg-type]


def _write_struct(out: bytearray, s: Struct, value: Any, version: int, flexible: bool, where: str) -> None:
    if not isinstance(value, dict):
        raise EncodeError(f"{where}: expected a dict for {s.name}, got {value!r}")
    known = {f.key for f in s.fields}
    unknown = sorted(set(value) - known)
    if unknown:
        raise EncodeError(f"{where}: {s.name} has no field {unknown[0]!r}")
    tagged: list[tuple[int, Field, Any]] = []
    for f in s.fields:
        v = value.get(f.key, f.default)
        here = f"{where}.{f.key}" if where else f.key
        if version not in f.versions:
            if not f.ignorable and not is_default(f, v):
                raise EncodeError(f"{here}: a non-default value for a field absent from version {version}")
            continue
        if version in f.tagged:
            if not is_default(f, v):
                tagged.append((f.tag, f, v))  # type: ignore[arg-type]
            continue
        _write_value(out, f.type, v, version, flexible, version in f.nullable, False, here)
    if not flexible:
        return
    write_uvarint(out, len(tagged))
    for tag, f, v in sorted(tagged, key=lambda t: t[0]):
        body = bytearray()
        _write_value(body, f.type, v, version, True, version in f.nullable, True, f"{where}.{f.key}" if where else f.key)
        write_uvarint(out, tag)
        write_uvarint(out, len(body))
        out += body


def full_fields(s: Struct, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with every field of ``s`` present (defaults filled in), recursively."""
    return {f.key: _full(f.type, value.get(f.key, f.default)) for f in s.fields}


def _full(t: FieldType, v: Any) -> Any:
    if v is None:
        return None
    if t.kind == "struct" and isinstance(v, dict):
        return full_fields(t.struct, v)  # type: ignore[arg-type]
    if t.kind == "array" and t.element.kind == "struct" and isinstance(v, (list, tuple)):  # type: ignore[union-attr]
        return [_full(t.element, item) for item in v]  # type: ignore[arg-type]
    if t.kind == "array" and isinstance(v, tuple):
        return list(v)
    if t.kind == "bytes" and isinstance(v, bytearray):
        return bytes(v)
    return v


def is_default(f: Field, v: Any) -> bool:
    """Kafka's non-default check, negated (structs compare field by field, defaults filled in)."""
    return _full(f.type, v) == _full(f.type, f.default)


def encode(name: str, fields: dict[str, Any], version: int | None = None) -> bytes:
    """The body of message ``name`` at ``version`` (its highest valid version by default)."""
    m = message(name)
    if version is None:
        version = m.max_version
    if version not in m.valid:
        raise EncodeError(f"{name} has no version {version} (valid versions {m.valid})")
    out = bytearray()
    _write_struct(out, m.struct, fields, version, version in m.flexible, "")
    return bytes(out)


# ------------------------------------------------------------------------------------ reading


class _Reader:
    """Bounds-checked reads of ``buf[pos:end]``; errors carry ``base + pos``."""

    __slots__ = ("buf", "pos", "end", "base")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int, end: int, base: int) -> None:
        self.buf = buf
        self.pos = pos
        self.end = end
        self.base = base

    def fail(self, why: str, at: int | None = None) -> SchemaError:
        return SchemaError(self.base + (self.pos if at is None else at), why)

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > self.end:
            raise self.fail(f"{what}: needs {n} byte(s), {self.end - self.pos} left")
        v = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return v

    def uvarint(self, what: str) -> int:
        start = self.pos
        result = shift = 0
        for _ in range(5):
            if self.pos >= self.end:
                raise self.fail(f"{what}: unsigned varint runs past the end", start)
            b = self.buf[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                if result >> 32:
                    raise self.fail(f"{what}: unsigned varint overflows 32 bits", start)
                return result
            shift += 7
        raise self.fail(f"{what}: unsigned varint longer than 5 bytes", start)

    def fixed(self, kind: str, what: str) -> Any:
        codec = _FIXED[kind]
        return codec.unpack(self.take(codec.size, what))[0]


def _read_length(r: _Reader, flexible: bool, short: bool, what: str) -> int:
    """The length of a string/bytes/array; -1 for null."""
    start = r.pos
    if flexible:
        n = r.uvarint(what) - 1
        if n > 0x7FFFFFFE:
            raise r.fail(f"{what}: compact length {n + 1} overflows int32", start)
        return n
    return r.fixed("int16" if short else "int32", what)


def _read_value(r: _Reader, t: FieldType, version: int, flexible: bool, nullable: bool, tagged: bool, what: str) -> Any:
    kind = t.kind
    start = r.pos
    if kind == "bool":
        return r.take(1, what)[0] != 0
    if kind in _FIXED:
        return r.fixed(kind, what)
    if kind == "uuid":
        return uuid_to_str(r.take(16, what))
    if kind == "struct":
        if nullable:
            # ``generateStructReader``: a varint marker when tagged, else an int8
            is_null = r.uvarint(what) == 0 if tagged else r.fixed("int8", what) < 0
            if is_null:
                return None
        return _read_struct(r, t.struct, version, flexible, what)  # type: ignore[arg-type]
    n = _read_length(r, flexible, kind == "string", what)
    if n < 0:
        if not nullable:
            raise r.fail(f"{what}: null in a field that is not nullable", start)
        return None
    if kind == "string":
        if n > MAX_STRING_LENGTH:
            raise r.fail(f"{what}: string length {n} is over {MAX_STRING_LENGTH}", start)
        raw = r.take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise r.fail(f"{what}: string is not UTF-8 (Kafka would substitute U+FFFD)", start) from None
    if kind == "bytes":
        return r.take(n, what)
    if n > r.end - r.pos:
        raise r.fail(f"{what}: array of {n} elements, only {r.end - r.pos} byte(s) left", start)
    return [_read_value(r, t.element, version, flexible, False, False, f"{what}[{i}]") for i in range(n)]  # type: ignore[arg-type]


_TAGS: dict[int, dict[int, Field]] = {}


def _tags_of(s: Struct) -> dict[int, Field]:
    tags = _TAGS.get(id(s))
    if tags is None:
        tags = _TAGS[id(s)] = {f.tag: f for f in s.fields if f.tag is not None and not f.tagged.empty}
    return tags


def _read_tagged(r: _Reader, s: Struct, version: int, out: dict[str, Any], what: str) -> None:
    by_tag = _tags_of(s)
    count = r.uvarint(f"{what} tagged field count")
    for _ in range(count):
        start = r.pos
        tag = r.uvarint(f"{what} tag")
        size = r.uvarint(f"{what} tag {tag} size")
        if size > r.end - r.pos:
            raise r.fail(f"{what} tag {tag}: size {size} runs past the end ({r.end - r.pos} byte(s) left)", start)
        f = by_tag.get(tag)
        if f is None:
            r.pos += size  # unknown tagged field: skipped
            continue
        if not f.tagged_in(version):
            raise r.fail(f"{what} tag {tag} ({f.name}) is not valid for version {version}", start)
        outer_end, r.end = r.end, r.pos + size
        here = f"{what}.{f.key}" if what else f.key
        v = _read_value(r, f.type, version, True, version in f.nullable, True, here)
        if r.pos != r.end:
            raise r.fail(f"{here}: tagged field declares {size} byte(s) but its value ends {r.end - r.pos} before", start)
        r.end = outer_end
        if not is_default(f, v):
            out[f.key] = v
        else:
            out.pop(f.key, None)


def _read_struct(r: _Reader, s: Struct, version: int, flexible: bool, what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in s.fields:
        if version not in f.versions or version in f.tagged:
            continue
        out[f.key] = _read_value(r, f.type, version, flexible, version in f.nullable, False, f"{what}.{f.key}" if what else f.key)
    if flexible:
        _read_tagged(r, s, version, out, what or s.name)
    return {f.key: out[f.key] for f in s.fields if f.key in out}


def _check_version(m: Message, version: int, r: _Reader) -> None:
    if version not in m.valid:
        raise r.fail(f"{m.name} version {version} is not a valid version ({m.valid})")


def decode(name: str, version: int, data: bytes | bytearray | memoryview, pos: int = 0, base: int = 0) -> tuple[dict[str, Any], int]:
    """Read message ``name`` at ``version`` from ``data[pos:]``; return its fields and the position
    after it. Errors are :class:`SchemaError` at ``base`` + the offset in ``data``."""
    m = message(name)
    r = _Reader(data, pos, len(data), base)
    _check_version(m, version, r)
    fields = _read_struct(r, m.struct, version, version in m.flexible, "")
    return fields, r.pos
