"""``kraft audit-metadata``: exit codes, the printed summary and the JSON document."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft.cli import COMMANDS
from kraft.outcome import Verdict, read_header
from spark_validation.checks.metadata.cli import audit_metadata

from .logs import Cluster, change

SEGMENT = "00000000000000000000.log"


def _run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(audit_metadata, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    Cluster().then(change(isr=[1, 2])).write(root / "clean" / "__cluster_metadata-0")
    Cluster().then(change(isr=[2, 3])).write(root / "bad" / "__cluster_metadata-0")
    return root


def test_registered_as_a_kraft_command() -> None:
    module, attr = COMMANDS["audit-metadata"].split(":")
    assert getattr(importlib.import_module(module), attr) is audit_metadata


def test_clean_directory_exit_0(corpus: Path, tmp_path: Path) -> None:
    code, out, _ = _run(str(corpus / "clean" / "__cluster_metadata-0"), "--out", str(tmp_path / "o"))
    assert code == 0, out
    assert "1 metadata log: 1 clean" in out and "not checked    none" in out
    doc = json.loads((tmp_path / "o" / "audit-metadata.json").read_text())
    assert read_header(doc)[:2] == ("audit-metadata", Verdict.CLEAN)


def test_violation_exit_1_names_file_offset_type_and_invariant(corpus: Path, tmp_path: Path) -> None:
    code, out, _ = _run(str(corpus), "--out", str(tmp_path / "o"))
    assert code == 1
    assert (f"VIOLATION LeaderInIsr: {SEGMENT} offset 6 (batch at byte" in out
            and "PartitionChangeRecord t-0: leader 1 is not in ISR [2,3]" in out)
    doc = json.loads((tmp_path / "o" / "audit-metadata.json").read_text())
    assert read_header(doc)[3] == 1
    assert [Path(d["directory"]).parent.name for d in doc["directories"]] == ["bad", "clean"]


def test_json_flag_prints_the_document(corpus: Path, tmp_path: Path) -> None:
    code, out, _ = _run(str(corpus), "--out", str(tmp_path / "o"), "--json")
    doc = json.loads(out)
    assert code == 1 and doc["exit_code"] == 1 and doc["directories"][0]["violations"][0]["invariant"] == "LeaderInIsr"


def test_corrupt_file_exit_2_with_position(corpus: Path, tmp_path: Path) -> None:
    seg = corpus / "clean" / "__cluster_metadata-0" / SEGMENT
    seg.write_bytes(seg.read_bytes()[:-5])
    code, out, _ = _run(str(corpus / "clean"), "--out", str(tmp_path / "o"))
    assert code == 2
    assert f"UNREADABLE {SEGMENT} at byte position" in out and "Traceback" not in out


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    code, _, err = _run(str(tmp_path / "missing"), "--out", str(tmp_path / "o"))
    assert code == 2 and "no such directory" in err
    (tmp_path / "f.log").write_bytes(b"")
    code, _, err = _run(str(tmp_path / "f.log"), "--out", str(tmp_path / "o"))
    assert code == 2 and "not a directory" in err
    code, _, err = _run(str(tmp_path), "--min-isr", "0")
    assert code == 2


def test_nothing_to_check_exit_3(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, out, _ = _run(str(tmp_path / "empty"), "--out", str(tmp_path / "o"))
    assert code == 3 and "no metadata log directory found" in out
