"""Hand-labelled histories (tests/spark_validation/fixtures): exact verdicts and evidence.

Each ``<name>.edn`` (with its ``<name>.edn.model`` sidecar) has, unless it uses EDN-only
features, a twin ``<name>.ndjson`` (model in the header) holding the same events. ``expected.json``
gives, per name, the verdict and the evidence a person would check by hand: the indices of the
longest linearizable prefix found, the model state after it, the op that could not be linearized
and, for every op that could have come next, whether the model accepted it.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from spark_validation.ingest.history import iter_corpus, read_history
from spark_validation.linearizability import check_history

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())

CASES = [
    (name, ext)
    for name in sorted(EXPECTED)
    for ext in (".edn", ".ndjson")
    if (FIXTURES / f"{name}{ext}").exists()
]


def test_every_model_has_valid_and_invalid_fixtures() -> None:
    verdicts: dict[str, set] = {}
    for e in EXPECTED.values():
        verdicts.setdefault(e["model"], set()).add(e["valid"])
    for model in ("register", "cas-register", "kv", "set", "append-log"):
        assert {True, False} <= verdicts[model], model


@pytest.mark.parametrize("name,ext", CASES, ids=[f"{n}{e}" for n, e in CASES])
def test_fixture_verdict_and_evidence(name: str, ext: str) -> None:
    exp = EXPECTED[name]
    h = read_history(FIXTURES / f"{name}{ext}")
    assert h.model == exp["model"]
    assert h.initial == exp.get("initial")
    assert [e.reason for e in h.structure_errors] == exp.get("structure_errors", [])
    assert [[m.line, m.reason] for m in h.malformed] == exp.get("malformed", [])
    r = check_history(h)
    assert r.valid == exp["valid"], r
    assert r.ops == len(h.ops)
    json.dumps(r.to_dict())  # results are JSON-able
    got = [
        {
            "key": a["key"],
            "prefix": [p["index"] for p in a["evidence"]["linearized_prefix"]],
            "state": a["evidence"]["state"],
            "stuck": a["evidence"]["stuck_op"]["index"],
            "candidates": [[c["index"], c["accepted"]] for c in a["evidence"]["candidates"]],
        }
        for a in r.to_dict()["anomalies"]
    ]
    assert got == exp["anomalies"]
    for a in r.to_dict()["anomalies"]:
        assert a["kind"] == "nonlinearizable"
        assert a["evidence"]["prefix_length"] == len(a["evidence"]["linearized_prefix"])
        assert a["evidence"]["explanation"]
    if exp["valid"] == "unknown":
        assert r.info.error.startswith("malformed history")
        assert len(r.info.structure_errors) == len(exp["structure_errors"])


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if (FIXTURES / f"{n}.ndjson").exists()))
def test_edn_and_ndjson_twins_read_identically(name: str) -> None:
    a = read_history(FIXTURES / f"{name}.edn")
    b = read_history(FIXTURES / f"{name}.ndjson")
    # JSON has no sets: an EDN set reads as a frozenset, its JSON twin as a (sorted) tuple
    def unset(v: object) -> object:
        if isinstance(v, frozenset):
            return tuple(sorted(v))
        return v

    assert [attrs.evolve(op, value=unset(op.value)) for op in a.ops] == b.ops
    assert (a.model, a.initial) == (b.model, b.initial)


def test_reg_info_fixture_counts_nemesis_ops() -> None:
    h = read_history(FIXTURES / "reg_info_valid.edn")
    assert h.nemesis_ops == 2
    assert h.ops[2].extra == {"error": "timeout"}
    r = check_history(h)
    assert r.info.nemesis_ops == 2


def test_failed_cas_is_dropped_not_checked() -> None:
    r = check_history(read_history(FIXTURES / "cas_failed_valid.edn"))
    assert r.valid is True
    assert r.info.failed_ops_dropped == 1


def test_corpus_walk_reads_every_fixture_and_reports_the_rest() -> None:
    scan = iter_corpus(FIXTURES)
    ids = [h.id for h in scan]
    assert ids == sorted(ids)  # deterministic order
    n_files = len(list(FIXTURES.glob("*.edn"))) + len(list(FIXTURES.glob("*.ndjson")))
    assert scan.read == len(ids) == n_files
    # expected.json is JSON but not a history: counted as skipped, with the reason
    assert [Path(s.path).name for s in scan.skipped] == ["expected.json"]
    assert "not a history: one JSON object" in scan.skipped[0].reason
