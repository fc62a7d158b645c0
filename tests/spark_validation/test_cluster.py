"""``kraft audit --master spark://...`` against a real standalone cluster on loopback.

Runs the audit in a subprocess against the run's cluster (the ``standalone_cluster`` fixture of
tests/conftest.py: a Master and two one-core Workers) and checks the results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark_cluster import client_env
from tests.spark_validation.cases import CASES

pytestmark = pytest.mark.spark


def test_audit_on_standalone_cluster(tmp_path, standalone_cluster: str) -> None:
    url = standalone_cluster
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("valid", "lost-write", "G1a", "poll-skip"):
        CASES[name][0].write_ndjson(corpus / f"{name}.ndjson")
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "kraft.cli", "audit", str(corpus), "--master", url,
         "--out", str(out), "--checks", "kafka"],
        env=client_env(),
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    assert json.loads((out / "summary.json").read_text())["engine"] == f"spark {url}"
    results = {Path(r["history"]).stem: r for r in json.loads((out / "results.json").read_text())}
    assert {k: r["valid"] for k, r in results.items()} == {
        "valid": True, "lost-write": False, "G1a": False, "poll-skip": False}
    g1a = results["G1a"]["anomalies"]
    assert g1a == [{"kind": "G1a", "key": "x", "evidence": {"value": "1", "offset": 0, "writer": 1, "reader": 3}}]
