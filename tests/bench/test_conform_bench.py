"""bench/conform.py's trace generator: each trace holds exactly the spec steps asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench import load_bench


@pytest.mark.parametrize("protocol", ["kraft", "groups"])
def test_sim_trace_has_exactly_the_spec_steps_asked_for(protocol: str) -> None:
    # more spec steps than the first simulator run gives: the generator must run the simulator on
    bench = load_bench("conform")
    n = 300
    lines = bench.sim_trace(protocol, 1, n)
    records = [json.loads(x) for x in lines]
    assert records[0].get("kind") == "trace"
    assert sum(1 for r in records[1:] if r.get("spec", True)) == n
    assert records[-1].get("spec", True)


@pytest.mark.tlc
def test_breakdown_splits_a_check_into_phases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the phases of checking one accepted all-fault trace, each timed
    bench = load_bench("conform")
    monkeypatch.setattr(bench, "FAULTS", "all")
    path = tmp_path / "t.ndjson"
    path.write_text("\n".join(bench.sim_trace("groups", 1, 50)) + "\n")
    ph = bench.breakdown_one(path)
    assert ph["accepted"] == 1.0 and ph["events"] == 50
    assert all(ph[x] >= 0 for x in bench.PHASES)
    assert ph["jvm"] > 0 and ph["parse"] > 0 and ph["search"] > 0
