"""Labelled histories for the audit tests: small enough to check by hand, each with the exact
anomalies (kind, key, evidence) it must produce. Values and keys are text in evidence (the op
table keeps values as text); offsets and op indexes are integers.

Op indexes are assigned in order (0, 1, 2, ...) so the evidence can name them; every helper
emits an invocation and its completion.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spark_validation.checks.kafka.anomaly import KafkaAnomaly, sorted_anomalies
from spark_validation.ingest.records import OpRow, op_row


class H:
    """A history under construction: ``ops`` are Jepsen-convention dicts."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []

    def _op(self, **kw: Any) -> int:
        kw["index"] = len(self.ops)
        self.ops.append(kw)
        return kw["index"]

    # simulator flat form
    def send(self, p: int, k: Any, v: Any, offset: int | None, type: str = "ok") -> int:
        self._op(process=p, type="invoke", f="send", key=k, value=v)
        value = [offset, v] if type == "ok" else v
        return self._op(process=p, type=type, f="send", key=k, value=value)

    def poll(self, p: int, k: Any, pairs: list, type: str = "ok") -> int:
        self._op(process=p, type="invoke", f="poll", key=k, value=None)
        return self._op(process=p, type=type, f="poll", key=k, value=[list(x) for x in pairs])

    # Jepsen micro-op form
    def txn(self, p: int, invoke: list, complete: list, f: str = "txn", type: str = "ok") -> int:
        self._op(process=p, type="invoke", f=f, value=invoke)
        return self._op(process=p, type=type, f=f, value=complete)

    def assign(self, p: int, keys: list, f: str = "assign") -> int:
        self._op(process=p, type="invoke", f=f, value=keys)
        return self._op(process=p, type="ok", f=f, value=keys)

    def rows(self, hid: str) -> list[OpRow]:
        return [op_row(hid, i + 1, index=o["index"], process=o["process"], type=o["type"], f=o["f"],
                       key=o.get("key"), value=o.get("value")) for i, o in enumerate(self.ops)]

    def write_ndjson(self, path: Path, model: str | None = "kafka") -> Path:
        lines = []
        if model:
            lines.append(json.dumps({"v": 1, "kind": "history", "model": model, "source": "tests"}))
        lines.extend(json.dumps(o) for o in self.ops)
        path.write_text("\n".join(lines) + "\n")
        return path


def A(kind: str, key: str, **evidence: Any) -> tuple[str, str, dict]:
    return (kind, key, evidence)


def _cases() -> dict[str, tuple[H, list[tuple[str, str, dict]]]]:
    c: dict[str, tuple[H, list]] = {}

    h = H()  # everything sent is read, in order, by two consumers
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.poll(1, "x", [(0, 1), (1, 2)])
    h.poll(2, "x", [(0, 1)])
    h.poll(2, "x", [(1, 2)])
    c["valid"] = (h, [])

    h = H()  # two acknowledged sends both claim offset 0
    h.send(0, "x", 1, 0)
    h.send(1, "x", 2, 0)
    h.poll(2, "x", [(0, 1)])
    h.poll(3, "x", [(0, 2)])
    c["inconsistent-offsets"] = (h, [A("inconsistent-offsets", "x", offset=0, values=["1", "2"], ops=[1, 3, 5, 7])])

    h = H()  # value 1 appears at offsets 0 and 2
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.poll(1, "x", [(0, 1), (1, 2), (2, 1)])
    c["duplicate"] = (h, [A("duplicate", "x", value="1", offsets=[0, 2])])

    h = H()  # a failed send is read
    h.send(0, "x", 1, None, type="fail")
    h.poll(1, "x", [(0, 1)])
    c["G1a"] = (h, [A("G1a", "x", value="1", offset=0, writer=1, reader=3)])

    h = H()  # offset 1 was read, offset 0 (acknowledged) never was
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.poll(1, "x", [(1, 2)])
    c["lost-write"] = (h, [
        A("lost-write", "x", value="1", offset=0, writer=1, max_read={"value": "2", "offset": 1, "op": 5}),
        A("unseen", "x", count=1, values=["1"]),
    ])

    h = H()  # process 1 polls offset 0 then offset 2: skipped offset 1 (which process 2 read)
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.send(0, "x", 3, 2)
    h.poll(1, "x", [(0, 1)])
    h.poll(1, "x", [(2, 3)])
    h.poll(2, "x", [(0, 1), (1, 2), (2, 3)])
    c["poll-skip"] = (h, [A("poll-skip", "x", process="1", values=["1", "3"], offsets=[0, 2], delta=2, ops=[7, 9])])

    h = H()  # the same, but an assign not naming x in between resets the consumer's position
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.send(0, "x", 3, 2)
    h.poll(1, "x", [(0, 1)])
    h.assign(1, ["y"])
    h.poll(1, "x", [(2, 3)])
    h.poll(2, "x", [(0, 1), (1, 2), (2, 3)])
    c["poll-skip-after-reassign"] = (h, [])

    h = H()  # an assign that keeps x does not reset: still a skip
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.send(0, "x", 3, 2)
    h.poll(1, "x", [(0, 1)])
    h.assign(1, ["x", "y"])
    h.poll(1, "x", [(2, 3)])
    h.poll(2, "x", [(0, 1), (1, 2), (2, 3)])
    c["poll-skip-assign-keeps-key"] = (h, [A("poll-skip", "x", process="1", values=["1", "3"], offsets=[0, 2],
                                             delta=2, ops=[7, 11])])

    h = H()  # process 1 goes back from offset 1 to offset 0
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.poll(1, "x", [(0, 1), (1, 2)])
    h.poll(1, "x", [(0, 1)])
    c["nonmonotonic-poll"] = (h, [A("nonmonotonic-poll", "x", process="1", values=["2", "1"], offsets=[1, 0],
                                    delta=-1, ops=[5, 7])])

    h = H()  # one poll jumps from offset 0 to 2 inside the op
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.send(0, "x", 3, 2)
    h.poll(1, "x", [(0, 1), (2, 3)])
    h.poll(2, "x", [(0, 1), (1, 2), (2, 3)])
    c["int-poll-skip"] = (h, [A("int-poll-skip", "x", values=["1", "3"], offsets=[0, 2], delta=2, op=7)])

    h = H()  # one poll returns offset 1 then offset 0
    h.send(0, "x", 1, 0)
    h.send(0, "x", 2, 1)
    h.poll(1, "x", [(1, 2), (0, 1)])
    c["int-nonmonotonic-poll"] = (h, [A("int-nonmonotonic-poll", "x", values=["2", "1"], offsets=[1, 0],
                                        delta=-1, op=5)])

    h = H()  # a two-send transaction lands at offsets 0 and 2 with another send between
    h.txn(0, [["send", "x", 1], ["send", "x", 2]], [["send", "x", [0, 1]], ["send", "x", [2, 2]]], f="send")
    h.send(1, "x", 3, 1)
    h.poll(2, "x", [(0, 1), (1, 3), (2, 2)])
    c["int-send-skip"] = (h, [A("int-send-skip", "x", values=["1", "2"], offsets=[0, 2], delta=2, op=1)])

    h = H()  # a two-send transaction whose second send got the lower offset
    h.txn(0, [["send", "x", 1], ["send", "x", 2]], [["send", "x", [1, 1]], ["send", "x", [0, 2]]], f="send")
    h.poll(1, "x", [(0, 2), (1, 1)])
    c["int-nonmonotonic-send"] = (h, [A("int-nonmonotonic-send", "x", values=["1", "2"], offsets=[1, 0],
                                        delta=-1, op=1)])

    h = H()  # process 0's second send got a lower offset than its first
    h.send(0, "x", 1, 1)
    h.send(0, "x", 2, 0)
    h.poll(1, "x", [(0, 2), (1, 1)])
    c["nonmonotonic-send"] = (h, [A("nonmonotonic-send", "x", process="0", values=["1", "2"], offsets=[1, 0],
                                    delta=-1, ops=[1, 3])])

    h = H()  # a transaction reads its own uncommitted send (Jepsen micro-ops with a poll map)
    h.txn(0, [["send", "x", 1], ["poll"]], [["send", "x", [0, 1]], ["poll", {"x": [[0, 1]]}]])
    c["precommitted-read"] = (h, [A("precommitted-read", "x", values=["1"], op=1)])

    h = H()  # acknowledged but never polled: Jepsen's :unseen (a violation unless --allow-unseen)
    h.send(0, "x", 1, 0)
    c["unseen-only"] = (h, [A("unseen", "x", count=1, values=["1"])])

    h = H()  # Jepsen micro-op form, valid, two keys, an info send proven by a read
    h.txn(0, [["send", 1, 10], ["send", 2, 20]], [["send", 1, [0, 10]], ["send", 2, [0, 20]]], f="send")
    h.txn(1, [["send", 1, 11]], [["send", 1, 11]], f="send", type="info")
    h.txn(2, [["poll"]], [["poll", {"1": [[0, 10], [1, 11]], "2": [[0, 20]]}]], f="poll")
    c["valid-jepsen-form"] = (h, [])

    # -- jepsen.tests.kafka rules, each written from the rule's text ---------------------------

    h = H()  # poll-skip+nonmonotonic-cases-per-process compares every op's polls with the last ok
    h.send(0, "x", 1, 0)  # poll: a poll inside an info (crashed) txn can still be a poll skip
    h.send(0, "x", 2, 1)
    h.send(0, "x", 3, 2)
    h.poll(1, "x", [(0, 1)])
    h.txn(1, [["poll"]], [["poll", {"x": [[2, 3]]}]], f="poll", type="info")
    h.poll(2, "x", [(0, 1), (1, 2), (2, 3)])
    c["jepsen-poll-skip-in-info-op"] = (h, [A("poll-skip", "x", process="1", values=["1", "3"], offsets=[0, 2],
                                              delta=2, ops=[7, 9])])

    h = H()  # ... or a nonmonotonic poll; and since only ok ops move the position, the next ok
    h.send(0, "x", 1, 0)  # poll is compared with the ok poll before the info one
    h.send(0, "x", 2, 1)
    h.poll(1, "x", [(0, 1), (1, 2)])
    h.txn(1, [["poll"]], [["poll", {"x": [[0, 1]]}]], f="poll", type="info")
    h.poll(1, "x", [(1, 2)])
    c["jepsen-nonmonotonic-poll-in-info-op"] = (h, [
        A("nonmonotonic-poll", "x", process="1", values=["2", "1"], offsets=[1, 0], delta=-1, ops=[5, 7]),
        A("nonmonotonic-poll", "x", process="1", values=["2", "2"], offsets=[1, 1], delta=0, ops=[5, 9]),
    ])

    h = H()  # int-send-skip+nonmonotonic-cases looks sends up by value in the version order: a
    # send whose completion has no offset takes it from where reads saw the value, so the skip
    # of a two-send txn that got no offsets is proven by a poll
    h.txn(0, [["send", "x", 1], ["send", "x", 2]], [["send", "x", [None, 1]], ["send", "x", [None, 2]]], f="send")
    h.send(1, "x", 3, 1)
    h.poll(2, "x", [(0, 1), (1, 3), (2, 2)])
    c["jepsen-int-send-skip-from-reads"] = (h, [A("int-send-skip", "x", values=["1", "2"], offsets=[None, None],
                                                  delta=2, op=1)])

    h = H()  # nonmonotonic-send-cases, same lookup: process 0's second send (no offset) was read
    h.send(0, "x", 1, 1)  # below its first
    h.txn(0, [["send", "x", 2]], [["send", "x", [None, 2]]], f="send")
    h.poll(1, "x", [(0, 2), (1, 1)])
    c["jepsen-nonmonotonic-send-from-reads"] = (h, [A("nonmonotonic-send", "x", process="0", values=["1", "2"],
                                                      offsets=[1, None], delta=-1, ops=[1, 3])])
    return c


CASES = _cases()


def case_rows() -> list[OpRow]:
    return [r for name, (h, _) in CASES.items() for r in h.rows(name)]


def expected_anomalies() -> list[KafkaAnomaly]:
    """Every labelled case's anomalies, typed, in the report's order."""
    return sorted_anomalies(KafkaAnomaly.from_json({"history": name, "kind": k, "key": key, "evidence": ev})
                            for name, (_, exp) in CASES.items() for k, key, ev in exp)
