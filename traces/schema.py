"""Reading contract-5 trace files (NDJSON, header line first).

A trace file is read completely and never raises on bad content: every problem becomes a
:class:`Problem` naming the file, the line (the header is line 1) and, for JSON errors, the column.
Reading stops at the first line that cannot be used (malformed JSON, a missing field, a truncated
last line) and keeps the events before it, so the checker can still verify the good prefix and
then report the bad line as the first divergent step.

Header: ``{"v": 1, "kind": "trace", "protocol": P, "spec": M, "constants": {...}, "seed": N,
"variant": null | "Name"}`` with an optional ``"init": {var: value}`` (the projected initial state;
an extension of contract 5, checked against the spec's ``Init`` when present).

Step: ``{"i": k, "action": A, "node": n, "spec": true|false, "args": {...}, "state": {var: v}}``.
Steps with ``"spec": false`` have no spec counterpart; they are counted and skipped, never dropped
silently.  Such a step whose ``state`` is null (or absent) left the state as it was: it gets the
previous line's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from kraft.inputs import MAX_DEPTH, collector_paused, text_nesting

SUPPORTED_VERSIONS = (1,)


@attrs.frozen
class Problem:
    """Something wrong with the file itself (not a conformance verdict)."""

    kind: str  # "malformed_json" | "truncated" | "bad_header" | "bad_step" | "empty" | "io"
    line: int  # 1-based physical line (header = 1); 0 when the whole file is concerned
    message: str


@attrs.frozen
class Event:
    """One step line of a trace."""

    line: int
    i: int | None
    action: str
    node: Any
    spec: bool
    args: dict[str, Any]
    state: dict[str, Any]
    raw: str


@attrs.frozen
class Trace:
    path: str
    header: dict[str, Any]
    events: tuple[Event, ...]  # all step lines read (spec and non-spec), up to the first problem
    problem: Problem | None  # the first problem; events after it were not read
    warnings: tuple[str, ...] = ()

    @property
    def protocol(self) -> str | None:
        p = self.header.get("protocol")
        return p if isinstance(p, str) else None

    @property
    def spec_module(self) -> str | None:
        s = self.header.get("spec")
        return s if isinstance(s, str) else None

    @property
    def spec_events(self) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.spec)

    @property
    def skipped(self) -> int:
        return sum(1 for e in self.events if not e.spec)





def read_trace(path: str | Path) -> Trace:
    """Read a trace file. Never raises for content problems (see module doc); raises ``OSError``
    only if the file cannot be opened."""
    p = Path(path)
    data = p.read_bytes()
    return parse_trace(data, str(p))


def parse_trace(data: bytes, name: str = "<trace>") -> Trace:
    with collector_paused():
        return _parse_trace(data, name)


def _parse_trace(data: bytes, name: str) -> Trace:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return Trace(name, {}, (), Problem("malformed_json", line,
                                           f"{name}:{line}: not UTF-8 (byte {exc.start})"))
    if not text.strip():
        return Trace(name, {}, (), Problem("empty", 0, f"{name}: empty file, no header line"))
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    if ends_with_newline:
        lines = lines[:-1]
    header: dict[str, Any] = {}
    events: list[Event] = []
    warnings: list[str] = []
    last_i: int | None = None
    for idx, raw in enumerate(lines):
        lineno = idx + 1
        is_last = idx == len(lines) - 1
        if not raw.strip():
            if lineno == 1:
                return Trace(name, {}, (), Problem("bad_header", 1, f"{name}:1: blank line where the header should be"))
            warnings.append(f"{name}:{lineno}: blank line ignored")
            continue
        try:
            obj = json.loads(raw)
            if raw.count("[") + raw.count("{") > MAX_DEPTH and text_nesting(raw) > MAX_DEPTH:
                raise RecursionError
        except RecursionError:  # hostile input: deeper than any trace value (and than the stack)
            return Trace(name, header, tuple(events),
                         Problem("malformed_json", lineno, f"{name}:{lineno}: JSON value nested deeper than "
                                                           f"{MAX_DEPTH} levels"), tuple(warnings))
        except json.JSONDecodeError as exc:
            if is_last and not ends_with_newline:
                prob = Problem("truncated", lineno,
                               f"{name}:{lineno}: truncated file: the last line is incomplete JSON "
                               f"({exc.msg} at column {exc.colno}) and has no final newline")
            else:
                prob = Problem("malformed_json", lineno,
                               f"{name}:{lineno}:{exc.colno}: malformed JSON: {exc.msg}")
            return Trace(name, header, tuple(events), prob, tuple(warnings))
        if lineno == 1:
            err = _check_header(obj)
            if err:
                return Trace(name, obj if isinstance(obj, dict) else {}, (),
                             Problem("bad_header", 1, f"{name}:1: {err}"))
            header = obj
            continue
        ev, err = _to_event(obj, lineno, raw)
        if err or ev is None:
            return Trace(name, header, tuple(events), Problem("bad_step", lineno, f"{name}:{lineno}: {err}"),
                         tuple(warnings))
        if not ev.spec and obj.get("state") is None and events:  # unchanged: the previous line's state
            ev = attrs.evolve(ev, state=events[-1].state)
        if ev.i is not None:
            if last_i is not None and ev.i != last_i + 1:
                warnings.append(f"{name}:{lineno}: step index jumps from {last_i} to {ev.i}")
            last_i = ev.i
        events.append(ev)
    return Trace(name, header, tuple(events), None, tuple(warnings))


def _check_header(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return "the header must be a JSON object"
    if obj.get("kind") != "trace":
        return f"not a trace header (kind = {obj.get('kind')!r}, expected 'trace')"
    if obj.get("v") not in SUPPORTED_VERSIONS:
        return f"unsupported trace version v = {obj.get('v')!r} (supported: {SUPPORTED_VERSIONS})"
    for key in ("protocol", "spec"):
        if not isinstance(obj.get(key), str):
            return f"header field {key!r} missing or not a string"
    if not isinstance(obj.get("constants", {}), dict):
        return "header field 'constants' must be an object"
    if "init" in obj and not isinstance(obj["init"], dict):
        return "header field 'init' must be an object (variable -> value)"
    return None


def _to_event(obj: Any, lineno: int, raw: str) -> tuple[Event | None, str | None]:
    if not isinstance(obj, dict):
        return None, "a step must be a JSON object"
    action = obj.get("action")
    if not isinstance(action, str) or not action:
        return None, "step without an 'action' string"
    spec = obj.get("spec", True)
    if not isinstance(spec, bool):
        return None, f"'spec' must be true or false, got {spec!r}"
    args = obj.get("args", {})
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return None, f"'args' must be an object, got {type(args).__name__}"
    state = obj.get("state", {})
    if state is None:
        state = {}
    if not isinstance(state, dict):
        return None, f"'state' must be an object, got {type(state).__name__}"
    i = obj.get("i")
    if i is not None and (not isinstance(i, int) or isinstance(i, bool)):
        return None, f"'i' must be an integer, got {i!r}"
    return Event(lineno, i, action, obj.get("node"), spec, args, state, raw), None
