"""The JsonConverter form of a message: what Kafka's generated ``*JsonConverter.write``
(``generator/.../JsonConverterGenerator.java``) produces and kafka-dump-log prints.

Field keys are the schema names with a lower-case first letter; a field absent from the version is
left out, a tagged field too when it holds its default; bytes become base64 (Jackson's
``BinaryNode``), a Uuid its string form, structs nested objects. :func:`dumps_kafka_json` renders
the result as Jackson's ``JsonNode.toString`` does.
"""

from __future__ import annotations

import base64
import json
import math
from decimal import Decimal
from typing import Any

from .codec import is_default
from .schema import FieldType, Struct

__all__ = ["dumps_kafka_json", "json_data"]


def _json_value(t: FieldType, v: Any, version: int) -> Any:
    if v is None:
        return None
    if t.kind == "bytes":
        return base64.b64encode(v).decode("ascii")  # Jackson's BinaryNode: standard base64
    if t.kind == "struct":
        return json_data(t.struct, v, version)  # type: ignore[arg-type]
    if t.kind == "array":
        return [_json_value(t.element, item, version) for item in v]  # type: ignore[arg-type]
    return v


def json_data(s: Struct, fields: dict[str, Any], version: int) -> dict[str, Any]:
    """A struct as the generated ``*JsonConverter.write`` renders it: the fields present in
    ``version`` in schema order, a tagged one only when it is not its default."""
    out: dict[str, Any] = {}
    for f in s.fields:
        if version not in f.versions:
            continue
        v = fields.get(f.key, f.default)
        if version in f.tagged and is_default(f, v):
            continue
        out[f.key] = _json_value(f.type, v, version)
    return out


def _java_double(x: float) -> str:
    """Java's ``Double.toString`` (what Jackson's DoubleNode prints): plain decimal for
    10^-3 <= |x| < 10^7, else the shortest digits as ``d.dddE<n>``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0 or 1e-3 <= abs(x) < 1e7:
        return repr(x)
    sign, digits, exponent = Decimal(repr(x)).normalize().as_tuple()
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + int(exponent)}"


def dumps_kafka_json(obj: Any) -> str:
    """Render like Jackson's ``JsonNode.toString``: no spaces, non-ASCII kept, doubles as Java
    prints them."""
    if isinstance(obj, float):
        return _java_double(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dumps_kafka_json(v) for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(dumps_kafka_json(v) for v in obj) + "]"
    return json.dumps(obj, ensure_ascii=False)
