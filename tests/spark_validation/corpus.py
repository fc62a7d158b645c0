"""A small on-disk corpus exercising every input path of ``kraft audit`` (shared by the
in-process and the Spark tests, which must agree on it)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.spark_validation.cases import CASES, H

E = lambda epoch, value: {"epoch": epoch, "value": value}  # noqa: E731


def trace_lines(diverge: bool) -> list[str]:
    """Three nodes; node 3 commits a different entry at offset 1 when ``diverge``."""
    header = {"v": 1, "kind": "trace", "protocol": "kraft", "spec": "KRaft", "constants": {}, "seed": 1,
              "variant": None}
    lc = E(1, "LeaderChange")
    a, b = E(1, "a"), E(1, "b")
    steps = [
        {"1": [lc], "2": [lc], "3": [lc]}, {"1": 1, "2": 1, "3": 1},
        {"1": [lc, a], "2": [lc, a], "3": [lc, (b if diverge else a)]}, {"1": 2, "2": 1, "3": 1},
        {"1": [lc, a], "2": [lc, a], "3": [lc, (b if diverge else a)]}, {"1": 2, "2": 2, "3": 2},
    ]
    out = [json.dumps(header)]
    for i in range(0, len(steps), 2):
        out.append(json.dumps({"i": i // 2 + 1, "action": "HandleFetchResponse", "node": 2, "spec": True,
                               "args": {}, "state": {"log": steps[i], "highWatermark": steps[i + 1]}}))
    if not diverge:  # a non-spec step that changed nothing: "state": null (contract 5)
        out.insert(2, json.dumps({"i": 2, "action": "heartbeat", "node": 1, "spec": False, "args": {},
                                  "state": None}))
    return out


def register_history(valid: bool) -> H:
    h = H()
    h._op(process=0, type="invoke", f="write", value=1)
    h._op(process=0, type="ok", f="write", value=1)
    h._op(process=1, type="invoke", f="read", value=None)
    h._op(process=1, type="ok", f="read", value=1 if valid else 2)
    return h


EDN_VALID = """{:process 0, :type :invoke, :f :send, :value [[:send 1 7]], :index 0}
{:process 0, :type :ok, :f :send, :value [[:send 1 [0 7]]], :index 1}
{:process 1, :type :invoke, :f :poll, :value [[:poll]], :index 2}
{:process 1, :type :ok, :f :poll, :value [[:poll {1 [[0 7]]}]], :index 3}
"""

EDN_G1A = """[{:process 0, :type :invoke, :f :send, :value [[:send 1 7]], :index 0}
 {:process 0, :type :fail, :f :send, :value [[:send 1 7]], :index 1}
 {:process 1, :type :invoke, :f :poll, :value [[:poll]], :index 2}
 {:process 1, :type :ok, :f :poll, :value [[:poll {1 [[0 7]]}]], :index 3}]
"""


def build(root: Path) -> dict[str, object]:
    """Write the corpus; return what the tests expect of it."""
    kafka = root / "kafka"
    kafka.mkdir(parents=True)
    for name, (h, _) in CASES.items():
        h.write_ndjson(kafka / f"{name}.ndjson")
    (root / "jepsen").mkdir()
    (root / "jepsen" / "valid.edn").write_text(EDN_VALID)
    (root / "jepsen" / "g1a.edn").write_text(EDN_G1A)
    reg = root / "register"
    reg.mkdir()
    register_history(True).write_ndjson(reg / "ok.ndjson", model="register")
    register_history(False).write_ndjson(reg / "bad.ndjson", model="register")
    # malformed lines in an otherwise fine history: line 3 is not JSON, line 5 has no type
    mal = root / "malformed"
    mal.mkdir()
    lines = CASES["valid"][0].write_ndjson(mal / "x.ndjson").read_text().splitlines()
    lines.insert(2, "this is not json")
    lines.insert(4, json.dumps({"process": 0, "f": "send", "key": "x", "value": 1}))
    (mal / "lines.ndjson").write_text("\n".join(lines) + "\n")
    (mal / "x.ndjson").unlink()
    # a history whose ops do not pair up: a completion with no invocation
    h = H()
    h._op(process=0, type="ok", f="send", key="x", value=[0, 1])
    h.write_ndjson(mal / "unpaired.ndjson")
    tr = root / "traces"
    (tr / "agree").mkdir(parents=True)
    (tr / "diverge").mkdir(parents=True)
    (tr / "agree" / "trace.ndjson").write_text("\n".join(trace_lines(False)) + "\n")
    (tr / "diverge" / "trace.ndjson").write_text("\n".join(trace_lines(True)) + "\n")
    # a simulator's summary next to its trace: JSON, but not a history (a skipped file, with why)
    (tr / "agree" / "summary.json").write_text(json.dumps({"protocol": "kraft", "seed": 1}, indent=2) + "\n")
    return {
        "skipped": [str(tr / "agree" / "summary.json")],
        "malformed_lines": {(str(mal / "lines.ndjson"), 3), (str(mal / "lines.ndjson"), 5)},
        "unpaired": str(mal / "unpaired.ndjson"),
        "diverge": str(tr / "diverge" / "trace.ndjson"),
        "agree": str(tr / "agree" / "trace.ndjson"),
    }


def expected_verdicts(root: Path) -> dict[str, object]:
    """history id -> valid, for every history of the corpus."""
    out: dict[str, object] = {}
    for name, (_, exp) in CASES.items():
        out[str(root / "kafka" / f"{name}.ndjson")] = not exp
    out[str(root / "jepsen" / "valid.edn")] = True
    out[str(root / "jepsen" / "g1a.edn")] = False
    out[str(root / "register" / "ok.ndjson")] = True
    out[str(root / "register" / "bad.ndjson")] = False
    out[str(root / "malformed" / "lines.ndjson")] = True
    out[str(root / "malformed" / "unpaired.ndjson")] = "unknown"
    out[str(root / "traces" / "agree" / "trace.ndjson")] = True
    out[str(root / "traces" / "diverge" / "trace.ndjson")] = False
    return out
