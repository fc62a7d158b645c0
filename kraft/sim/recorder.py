"""Trace and client-history recording (contract section 5), NDJSON with a versioned header line."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from kraft.outcome import writing


def _jsonable(value: Any) -> Any:
    """Dict keys become strings in JSON; sets become sorted lists; bytes (a metadata record in a
    quorum message) become base64 text, as Kafka's JSON converters write a bytes field."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_jsonable(v) for v in value)
    return value


class Recorder:
    """Collects trace steps and history operations in memory; ``write(dir)`` saves both files.

    ``states=False`` records steps without the projected post-state (cheaper; not replayable).
    A ``"spec": false`` step that changed nothing projected holds the previous step's state
    object in memory and is written with ``"state": null`` (contract 5: its post-state is the
    previous line's): such steps are most of a long run, and writing the whole state on each made
    the file grow with steps x state size."""

    def __init__(self, trace_header: dict[str, Any], history_header: dict[str, Any], *, states: bool = True,
                 trace: bool = True) -> None:
        self.trace_header = {"v": 1, "kind": "trace", **trace_header}
        self.history_header = {"v": 1, "kind": "history", **history_header}
        self.states = states
        self.enabled = trace
        self.steps: list[dict[str, Any]] = []
        self._last_state: dict[str, Any] | None = None
        self.ops: list[dict[str, Any]] = []

    def step(self, action: str, node: Any, args: dict[str, Any], spec: bool, state: dict[str, Any] | None) -> None:
        if not self.enabled:
            return
        line: dict[str, Any] = {"i": len(self.steps), "action": action, "node": node, "spec": spec, "args": args}
        if state is not None:
            if not spec and state == self._last_state:
                state = self._last_state  # unchanged: the same object, written once (see write)
            line["state"] = self._last_state = state
        self.steps.append(line)

    def op(self, process: int, type_: str, f: str, key: Any, value: Any, time_ms: int, **extra: Any) -> None:
        op = {"process": process, "type": type_, "f": f, "key": key, "value": value,
              "time": time_ms * 1_000_000, "index": len(self.ops)}
        op.update(extra)
        self.ops.append(op)

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        tpath, hpath = d / "trace.ndjson", d / "history.ndjson"
        with writing(tpath) as fh:  # whole files only: a reader never takes a cut trace for a run
            fh.write(json.dumps(_jsonable(self.trace_header)) + "\n")
            previous = None
            for s in self.steps:
                state = s.get("state")
                if state is not None and state is previous and not s["spec"]:
                    s = {**s, "state": None}
                fh.write(json.dumps(_jsonable(s), separators=(",", ":")) + "\n")
                previous = state
        with writing(hpath) as fh:
            fh.write(json.dumps(_jsonable(self.history_header)) + "\n")
            for o in self.ops:
                fh.write(json.dumps(_jsonable(o), separators=(",", ":")) + "\n")
        return tpath, hpath
