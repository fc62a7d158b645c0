"""Spark and ``--no-spark`` on one corpus of every bad-input class: results.json,
malformed.json and the exit code must be equal, modulo timings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spark_validation.audit import AuditOptions, run

pytestmark = [pytest.mark.spark, pytest.mark.slow]  # two audits of the corpus, one on Spark: minutes, not seconds

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "spark_validation" / "fixtures"
TRACE = ROOT / "tests" / "traces" / "fixtures" / "kraft_fetch_resent_while_outstanding.ndjson"


def build(root: Path) -> None:
    good = (FIX / "reg_valid_concurrent.ndjson").read_text()
    (root / "good.ndjson").write_text(good)
    (root / "good.edn").write_bytes((FIX / "cas_failed_valid.edn").read_bytes())
    (root / "good.edn.model").write_text("cas-register\n")
    (root / "bad.parquet").write_bytes(b"this is not parquet" * 4)
    (root / "trunc.parquet").write_bytes(b"PAR1" + b"\x00" * 30 + b"PAR1")
    lines = good.splitlines()
    (root / "deep.ndjson").write_text("\n".join(lines[:2] + ['{"index": 90, "process": 7, "type": "invoke", '
                                                             '"f": "write", "value": ' + "[" * 5000 + "]" * 5000 + "}"]
                                                 + lines[2:]) + "\n")
    (root / "deep.edn").write_text("{:type :invoke, :f :write, :value 1, :process 0}\n"
                                   "{:type :ok, :f :write, :value 1, :process 0}\n"
                                   "{:type :invoke, :f :write, :value " + "[" * 5000 + "]" * 5000 + ", :process 1}\n")
    (root / "deep.edn.model").write_text("register\n")
    (root / "empty.ndjson").write_text("")
    (root / "empty.edn").write_text("\n")
    (root / "junk.ndjson").write_bytes(bytes(range(256)))
    (root / "v2.ndjson").write_text('{"v": 2, "kind": "history"}\n' + "\n".join(lines[1:]) + "\n")
    (root / "latin1.ndjson").write_bytes(good.encode().replace(b'"write"', b'"\xe9crire"', 1))
    (root / "structure.ndjson").write_text(lines[0] + '\n{"index": 0, "process": 0, "type": "ok", "f": "write", "value": 1}\n')
    (root / "lost.ndjson").write_text(good + '{"index": 99, "process": 0, "type": "invoke"\n')
    (root / "header_only.ndjson").write_text('{"v": 1, "kind": "history", "model": "register"}\n\n')
    # U+2028 inside a JSON string, and a form feed: line breaks for str.splitlines, not for Spark
    (root / "separators.ndjson").write_text(lines[0] + '\n' + lines[1].replace('"write"', '"wr\u2028\x0cite"')
                                            + '\n' + "\n".join(lines[2:]) + "\n")
    (root / "crlf.ndjson").write_bytes(good.replace("\n", "\r\n").encode())
    (root / "run1.ndjson").write_text("\n".join(TRACE.read_text().splitlines()[:20]) + "\n")


def _strip(results: list[dict]) -> list[dict]:
    out = []
    for r in results:
        r = dict(r)
        r.pop("seconds", None)
        r.pop("info", None)  # engine-specific search statistics (explored, cache, ...)
        out.append(r)
    return sorted(out, key=lambda r: r["history"])


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    from spark_validation.session import java_problem

    if java_problem():
        pytest.skip(java_problem())
    root = tmp_path_factory.mktemp("hostile")
    build(root)
    runs = {}
    for name, no_spark in (("local", True), ("spark", False)):
        out = tmp_path_factory.mktemp(name)
        rep = run(AuditOptions(paths=(str(root),), out=out, no_spark=no_spark), progress=lambda m: None)
        runs[name] = (rep.exit_code, json.loads((out / "results.json").read_text()),
                      json.loads((out / "malformed.json").read_text()))
    return root, runs


def test_exit_codes_agree(both):
    _, runs = both
    assert runs["local"][0] == runs["spark"][0]


def test_results_agree(both):
    _, runs = both
    assert _strip(runs["local"][1]) == _strip(runs["spark"][1])


def test_malformed_agree(both):
    _, runs = both

    def norm(rows):
        # both engines read a file with the same in-process reader: malformed lines, skipped files
        # and malformed histories agree word for word
        return sorted(({"scope": m["scope"], "path": m["path"], "line": m.get("line"), "reason": m["reason"]}
                       for m in rows),
                      key=lambda m: (m["path"], m["line"] or 0, m["reason"] or ""))

    assert norm(runs["local"][2]) == norm(runs["spark"][2])
