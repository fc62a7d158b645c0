"""A group's client history in Jepsen's Kafka-workload shape, as both group protocols record it.

One open operation per process, every completion after its invocation (Jepsen's history rules):
an invocation while the process still waits on an earlier one ends that one as ``info`` (the
client stopped waiting: its outcome is unknown); a completion that answers no open invocation
(the answer to an abandoned or duplicated commit) is not written; an assignment change (the
rebalance listener ran) is an ``assign`` operation, written once no operation of the process is
open.  Times are the virtual clock's milliseconds in nanoseconds.
"""

from __future__ import annotations

from typing import Any, Callable


class ClientHistory:
    """``clock()``: the virtual time in ms; ``ops``: the history so far."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.ops: list[dict[str, Any]] = []
        self._open: dict[str, dict[str, Any]] = {}
        self._held_assign: dict[str, list[Any]] = {}

    def op(self, process: str, typ: str, f: str, value: Any) -> None:
        """Append one operation, keeping the history well formed (see the module docstring)."""
        if typ == "invoke":
            if self.abandon(process):
                self._release(process)
            self._open[process] = {"f": f, "value": value}
        else:
            held = self._open.get(process)
            if held is None or held["f"] != f or (f == "commit" and held["value"] != value):
                return   # (a commit's answer names its offsets: an older commit's is not this one's)
            del self._open[process]
        self._append(process, typ, f, value)
        if typ != "invoke":
            self._release(process)

    def abandon(self, process: str) -> bool:
        """The process stops waiting for its open op (a new invocation, a crash): it ends as
        ``info``, its outcome unknown.  False if none was open."""
        held = self._open.pop(process, None)
        if held is not None:
            self._append(process, "info", held["f"], held["value"])
        return held is not None

    def assigned(self, process: str, value: Any) -> None:
        """The process's assignment is now ``value``: an ``assign`` once no op of it is open."""
        self._held_assign.setdefault(process, []).append(value)
        if process not in self._open:
            self._release(process)

    def _release(self, process: str) -> None:
        for value in self._held_assign.pop(process, []):
            self._append(process, "invoke", "assign", value)
            self._append(process, "ok", "assign", value)

    def _append(self, process: str, typ: str, f: str, value: Any) -> None:
        self.ops.append({"process": process, "type": typ, "f": f, "value": value,
                         "time": self.clock() * 1_000_000, "index": len(self.ops)})
