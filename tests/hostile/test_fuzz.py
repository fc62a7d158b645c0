"""Property-based fuzzing of every reader that needs no Spark or TLC.

Each reader gets random bytes and mutated valid documents (tests/hostile/strategies.py). The
property is the project's bad-input rule: never a traceback; either the reader's own error type,
whose message names the file (and the line where it has one), or a result whose skipped/malformed
parts are counted with their line. Each test runs a few dozen examples in the default suite and
thousands under ``-m slow`` (HOSTILE_EXAMPLES sets how many).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from tests.hostile.strategies import FAST, LONG, hostile, wrong_typed_ops

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "spark_validation" / "fixtures"


def _read(*names: str) -> list[bytes]:
    return [(FIX / n).read_bytes() for n in names]


EDN_SEEDS = _read("cas_failed_valid.edn", "log_valid.edn", "kv_independent.edn", "bad_lines.edn",
                  "log_jepsen_txn.edn")
NDJSON_SEEDS = _read("cas_failed_valid.ndjson", "log_valid.ndjson", "set_valid.ndjson", "kv_keyfield.ndjson")
JSON_SEEDS = [("[" + ",\n".join(l for l in s.decode().splitlines()[1:]) + "]\n").encode() for s in NDJSON_SEEDS]


def _small_trace() -> bytes:
    lines = (ROOT / "tests" / "traces" / "fixtures" / "kraft_fetch_resent_while_outstanding.ndjson").read_bytes()
    return b"\n".join(lines.split(b"\n")[:6]) + b"\n"


TRACE_SEEDS = [_small_trace()]


def _batches() -> bytes:
    from kraft.log.records import Record, RecordBatch

    out = b""
    for base in (0, 3):
        out += RecordBatch(base, 1, [Record(i, i, b"k%d" % i, b"v" * i) for i in range(3)],
                           first_timestamp=1000, max_timestamp=1002).encode()
    return out


SEGMENT_SEEDS = [_batches()]
GROUP_SEEDS = [json.dumps({"partitions": {"orders": 6, "pay": 3}, "members": {
    "c1": {"topics": ["orders", "pay"], "owned": ["orders-0"], "generation": 2, "rack": "r1"},
    "c2": {"topics": ["orders"], "group_instance_id": "h"}}, "partition_racks": {"orders-0": ["r1"]}},
    indent=1).encode()]
CONSUMER_GROUP_SEEDS = [json.dumps({"topics": {
    "orders": {"id": "T1-A4s3VTwiI5CTbEp6POw", "partitions": 6, "racks": {"0": ["r1", "r2"]}},
    "pay": {"id": "T3-CU8fVTLCz5YMkLoDQsQ", "partitions": 3}}, "members": {
    "A": {"topics": ["orders", "pay"], "rack": "r1", "instance_id": "h", "assignment": {"orders": [0, 1]}},
    "B": {"topics": ["orders"]}}}, indent=1).encode()]
TOML_SEEDS = [p.read_bytes() for p in sorted((ROOT / "spec").glob("*.toml"))[:2]]
TLC_SEEDS = [(
    "@!@!@STARTMSG 2262:0 @!@!@\nTLC2 Version 2.15\n@!@!@ENDMSG 2262 @!@!@\n"
    "@!@!@STARTMSG 2110:1 @!@!@\nInvariant Safe is violated.\n@!@!@ENDMSG 2110 @!@!@\n"
    "@!@!@STARTMSG 2121:1 @!@!@\nThe behavior up to this point is:\n@!@!@ENDMSG 2121 @!@!@\n"
    "@!@!@STARTMSG 2217:4 @!@!@\n1: <Initial predicate>\n/\\ x = 0\n/\\ y = <<1, 2>>\n@!@!@ENDMSG 2217 @!@!@\n"
    "@!@!@STARTMSG 2217:4 @!@!@\n2: <Next line 12, col 5 to line 13, col 20 of module M>\n/\\ x = 1\n"
    "/\\ y = [a |-> {1}]\n@!@!@ENDMSG 2217 @!@!@\n"
    "@!@!@STARTMSG 2199:0 @!@!@\n12 states generated, 7 distinct states found, 0 states left on queue.\n"
    "@!@!@ENDMSG 2199 @!@!@\n").encode()]


def _names_file(msg: str, path: str) -> None:
    assert path in msg, f"error does not name the file: {msg!r}"


# -- histories (EDN, NDJSON, JSON) -----------------------------------------------------------


def _history(tmp: Path, data: bytes, suffix: str) -> None:
    from spark_validation.ingest.history import HistoryFormatError, read_history

    p = tmp / f"h{suffix}"
    p.write_bytes(data)
    try:
        h = read_history(str(p), default_model="register")
    except HistoryFormatError as exc:
        _names_file(str(exc), str(p))
        assert exc.line is None or exc.line >= 1
        return
    for m in h.malformed:
        assert m.line >= 1 and m.reason, m
    # and the checker takes what was read without a traceback
    from spark_validation.linearizability import check_history

    r = check_history(h.ops, "register", budget_seconds=0.5)
    assert r.valid in (True, False, "unknown")


@pytest.mark.parametrize("suffix,seeds", [(".edn", EDN_SEEDS), (".ndjson", NDJSON_SEEDS), (".json", JSON_SEEDS)])
@FAST
@given(data=st.data())
def test_history_reader(tmp_path_factory, suffix, seeds, data):
    _history(tmp_path_factory.mktemp("h"), data.draw(hostile(seeds)), suffix)


@pytest.mark.slow
@pytest.mark.parametrize("suffix,seeds", [(".edn", EDN_SEEDS), (".ndjson", NDJSON_SEEDS), (".json", JSON_SEEDS)])
@LONG
@given(data=st.data())
def test_history_reader_long(tmp_path_factory, suffix, seeds, data):
    _history(tmp_path_factory.mktemp("h"), data.draw(hostile(seeds)), suffix)


@FAST
@given(data=st.data())
def test_edn_loads(data):
    from spark_validation.ingest.edn import EdnError
    from tests.spark_validation.readers import loads_all

    text = data.draw(hostile(EDN_SEEDS)).decode("utf-8", "replace")
    try:
        list(loads_all(text, "x.edn"))
    except EdnError as exc:
        assert exc.line >= 1 and str(exc).startswith("x.edn")


# -- the audit CLI, in-process: a hostile file beside a good one ------------------------------


def _audit_beside_good(tmp: Path, data: bytes, suffix: str) -> None:
    from spark_validation.cli import audit

    d = tmp / "c"
    d.mkdir()
    (d / "good.ndjson").write_bytes(NDJSON_SEEDS[0])
    (d / f"bad{suffix}").write_bytes(data)
    (d / f"bad{suffix}.model").write_text("cas-register\n")
    out = tmp / "o"
    res = CliRunner().invoke(audit, [str(d), "--no-spark", "--out", str(out), "--budget", "1"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert res.exit_code in (0, 1, 3), res.output
    results = {r["history"]: r for r in json.loads((out / "results.json").read_text())}
    assert results[str(d / "good.ndjson")]["valid"] is True  # the good history is still checked
    malformed = json.loads((out / "malformed.json").read_text())
    lost = sum(1 for m in malformed if m["scope"] == "line" and m["path"] == str(d / f"bad{suffix}"))
    bad = results.get(str(d / f"bad{suffix}"))
    if bad is None:  # not a history: one counted skip, named
        assert any(m["scope"] == "file" and m["path"] == str(d / f"bad{suffix}") for m in malformed) or not data.strip()
    elif lost:
        assert bad.get("malformed_lines") == lost  # a history that lost lines says so


@pytest.mark.parametrize("suffix,seeds", [(".edn", EDN_SEEDS), (".ndjson", NDJSON_SEEDS)])
@FAST
@given(data=st.data())
def test_audit_cli(tmp_path_factory, suffix, seeds, data):
    _audit_beside_good(tmp_path_factory.mktemp("a"), data.draw(hostile(seeds)), suffix)


@FAST
@given(data=wrong_typed_ops())
def test_audit_cli_wrong_types_in_every_field(tmp_path_factory, data):
    _audit_beside_good(tmp_path_factory.mktemp("a"), data, ".ndjson")


@pytest.mark.slow
@pytest.mark.parametrize("suffix,seeds", [(".edn", EDN_SEEDS), (".ndjson", NDJSON_SEEDS)])
@LONG
@given(data=st.data())
def test_audit_cli_long(tmp_path_factory, suffix, seeds, data):
    _audit_beside_good(tmp_path_factory.mktemp("a"), data.draw(hostile(seeds)), suffix)


@pytest.mark.slow
@LONG
@given(data=wrong_typed_ops())
def test_audit_cli_wrong_types_long(tmp_path_factory, data):
    _audit_beside_good(tmp_path_factory.mktemp("a"), data, ".ndjson")


# -- traces ------------------------------------------------------------------------------------


def _trace(data: bytes) -> None:
    from traces.schema import parse_trace

    tr = parse_trace(data, "t.ndjson")  # documented: never raises for content problems
    if tr.problem is not None:
        assert tr.problem.line >= 0 and tr.problem.message.startswith("t.ndjson")


@FAST
@given(data=st.data())
def test_trace_reader(data):
    _trace(data.draw(hostile(TRACE_SEEDS)))


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_trace_reader_long(data):
    _trace(data.draw(hostile(TRACE_SEEDS)))


# -- record-batch segments (kraft/log) -----------------------------------------------------------


def _segment(tmp: Path, data: bytes) -> None:
    from kraft.log.cli import dump_log
    from kraft.log.records import CorruptBatchError, RecordBatch, UnsupportedBatchError

    pos = 0
    while pos < len(data):
        try:
            _, pos = RecordBatch.decode(data, pos)
        except (CorruptBatchError, UnsupportedBatchError):
            break
    p = tmp / "00000000000000000000.log"
    p.write_bytes(data)
    res = CliRunner().invoke(dump_log, [str(p), "--print-data"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.output
    assert res.exit_code in (0, 2)
    if res.exit_code == 2:
        assert str(p) in res.output and ("byte position" in res.output or "cannot read" in res.output)


@FAST
@given(data=st.data())
def test_segment_reader(tmp_path_factory, data):
    _segment(tmp_path_factory.mktemp("s"), data.draw(hostile(SEGMENT_SEEDS)))


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_segment_reader_long(tmp_path_factory, data):
    _segment(tmp_path_factory.mktemp("s"), data.draw(hostile(SEGMENT_SEEDS)))


# -- group JSON for kraft assign -----------------------------------------------------------------


def _group_file(tmp: Path, data: bytes, load: Any, size: Any, runs: list[list[str]]) -> None:
    """A group file either fails to load with an error naming it, or runs through ``kraft assign``
    (each of ``runs``) without a traceback and with one of the contract's exit codes."""
    from kraft.groups.assignors.cli import GroupFileError, assign

    p = tmp / "g.json"
    p.write_bytes(data)
    try:
        group = load(str(p))
    except GroupFileError as exc:
        _names_file(str(exc), str(p))
        return
    if size(group) > 10_000:  # a legal but huge group: the reader's job is done
        return
    for argv in runs:
        res = CliRunner().invoke(assign, [str(p), *argv])
        assert res.exception is None or isinstance(res.exception, SystemExit), res.output
        assert res.exit_code in (0, 1, 2), res.output


def _group(tmp: Path, data: bytes) -> None:
    from kraft.groups.assignors.cli import load_group

    _group_file(tmp, data, load_group, lambda g: sum(g[0].values()), [["--check"]])


def _consumer_group(tmp: Path, data: bytes) -> None:
    from kraft.groups.assignors.server.groupfile import load_consumer_group

    _group_file(tmp, data, load_consumer_group, lambda g: sum(g.describer.partitions.values()),
                [["--protocol", "consumer", "--assignor", a, "--check"] for a in ("uniform", "range")])


# each group file kind: its reader, and the seeds the mutations start from
GROUP_FILES = {"classic": (_group, GROUP_SEEDS), "consumer": (_consumer_group, CONSUMER_GROUP_SEEDS)}


@FAST
@pytest.mark.parametrize("kind", sorted(GROUP_FILES))
@given(data=st.data())
def test_group_reader(tmp_path_factory, kind, data):
    read, seeds = GROUP_FILES[kind]
    read(tmp_path_factory.mktemp("g"), data.draw(hostile(seeds)))


@pytest.mark.slow
@LONG
@pytest.mark.parametrize("kind", sorted(GROUP_FILES))
@given(data=st.data())
def test_group_reader_long(tmp_path_factory, kind, data):
    read, seeds = GROUP_FILES[kind]
    read(tmp_path_factory.mktemp("g"), data.draw(hostile(seeds)))


# -- TOML manifests and TLC output -----------------------------------------------------------------


def _manifest(tmp: Path, data: bytes) -> None:
    from model_check.specs import ManifestError, load_manifest

    p = tmp / "M.toml"
    p.write_bytes(data)
    try:
        load_manifest(p)
    except ManifestError as exc:
        _names_file(str(exc), str(p))


@FAST
@given(data=st.data())
def test_manifest_reader(tmp_path_factory, data):
    _manifest(tmp_path_factory.mktemp("m"), data.draw(hostile(TOML_SEEDS)))


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_manifest_reader_long(tmp_path_factory, data):
    _manifest(tmp_path_factory.mktemp("m"), data.draw(hostile(TOML_SEEDS)))


def _tlc(data: bytes) -> None:
    from model_check.tlc import parse_tool_output

    r = parse_tool_output(data.decode("utf-8", "replace"), exit_code=12, cfg_text="INVARIANT Safe\n")
    assert r is not None


@FAST
@given(data=st.data())
def test_tlc_output_parser(data):
    _tlc(data.draw(hostile(TLC_SEEDS)))


@pytest.mark.slow
@LONG
@given(data=st.data())
def test_tlc_output_parser_long(data):
    _tlc(data.draw(hostile(TLC_SEEDS)))


def test_strategies_reach_the_hostile_cases():
    """The mutations do produce what the issue lists (so the properties above are exercised)."""
    from hypothesis import find

    from tests.hostile.strategies import mutated

    find(mutated(NDJSON_SEEDS), lambda b: b"[" * 999 in b)
    find(mutated(NDJSON_SEEDS), lambda b: re.search(rb"\xff|\xc3|\x80", b) is not None)
    find(mutated(EDN_SEEDS), lambda b: len(b) < 20)
