"""Static members in consumer-protocol traces, checked against spec/ConsumerGroupProtocol.tla.

Fixture ``consumer_protocol_static_seed2.ndjson``: ``kraft simulate --protocol consumer-protocol
--seed 2 --steps 250 --faults all,static-restart:300`` (c1 static; its leaves with epoch -2, the
replacements of its member by new processes under new member ids, an UNRELEASED_INSTANCE_ID
that makes a process FATAL, the session timeout of a member left at -2).

* The recorded trace is accepted: every spec step matched, static ones included.
* A copy whose -2 leave drops the member's assignment (the coordinator must keep it until the
  replacement or the session timeout) is rejected at that line, naming ``member``.
* A copy whose new process keeps the old member id (no new incarnation) is rejected at that
  line, naming ``incarnation``.
* (slow) A corpus of longer static runs is accepted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraft.groups.consumer_protocol.sim import STATIC_RESTART
from tests.traces.helpers import edit_line, simulator, write
from traces.check import Options, check_paths

pytestmark = [pytest.mark.tlc, pytest.mark.xdist_group("consumer-protocol-static-traces")]
FIXTURE = Path(__file__).parent / "fixtures" / "consumer_protocol_static_seed2.ndjson"


def _steps(lines: list[str]) -> list[dict]:
    return [json.loads(x) for x in lines[1:]]


def _first(lines: list[str], pred) -> int:
    """Index (= physical line - 1) of the first step with pred(step)."""
    return next(k for k, d in enumerate(_steps(lines), 1) if d["spec"] and pred(d))


def _static_leave(d: dict) -> bool:
    m = d["args"].get("m") or {}
    return d["action"] == "HandleHeartbeat" and m.get("epoch") == -2 and bool(d["state"]["member"][m["src"]])


def _drop_assignment(d: dict) -> None:
    d["state"]["member"][d["args"]["m"]["src"]]["assigned"] = []


def _keep_member_id(d: dict) -> None:
    d["state"]["incarnation"][d["node"]] -= 1


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cps")
    lines = FIXTURE.read_text().splitlines()
    leave = _first(lines, _static_leave)
    assert json.loads(lines[leave])["state"]["member"]["c1"]["assigned"], "the fixture's -2 leave keeps partitions"
    new_process = _first(lines, lambda d: d["action"] == "NewProcess")
    files = [FIXTURE, write(base / "leave_drops_assignment.ndjson", edit_line(lines, leave, _drop_assignment)),
             write(base / "same_member_id.ndjson", edit_line(lines, new_process, _keep_member_id))]
    expect = {"leave_drops_assignment": leave + 1, "same_member_id": new_process + 1}
    return {Path(r.trace).stem: r for r in check_paths(files, Options(jobs=2))}, expect


def test_the_fixture_has_every_static_step():
    steps = _steps(FIXTURE.read_text().splitlines())
    assert json.loads(FIXTURE.read_text().splitlines()[0])["constants"]["StaticClients"] == ["c1"]
    answers = {d["args"]["m"]["err"] for d in steps if d["action"] == "HandleHeartbeatResponse"}
    assert "UNRELEASED_INSTANCE_ID" in answers
    assert any(d["state"]["cstate"]["c1"] == "FATAL" for d in steps)
    assert any(_static_leave(d) for d in steps)
    replaced = [b for a, b in zip(steps, steps[1:]) if (a["state"]["member"]["c1"] or {}).get("epoch") == -2
                and (b["state"]["member"]["c1"] or {}).get("epoch", -2) != -2]
    assert replaced and all(b["state"]["memberIncarnation"]["c1"] > 0 for b in replaced)


def test_the_recorded_static_trace_is_accepted(runs):
    results, _ = runs
    r = results[FIXTURE.stem]
    assert r.verdict == "accepted", r.message[:1000]
    assert r.events == r.checked > 100


@pytest.mark.parametrize("name,var", [("leave_drops_assignment", "member"), ("same_member_id", "incarnation")])
def test_a_tampered_static_step_is_rejected_at_its_line(runs, name, var):
    results, expect = runs
    r = results[name]
    assert r.verdict == "rejected" and r.kind == "state_mismatch", r.message[:1000]
    assert r.line == expect[name], (r.line, expect[name])
    assert r.disagree == [var], r.disagree


@pytest.mark.slow
def test_corpus_of_static_traces_is_accepted(tmp_path):
    """Seeds 1-6 x 3000 simulator events with every fault and the static-restart nemesis."""
    simulate = simulator("consumer-protocol")
    paths = [write(tmp_path / f"static-{seed}.ndjson",
                   simulate(tmp_path / f"s{seed}", seed, 3000, f"all,{STATIC_RESTART}:300"))
             for seed in range(1, 7)]
    res = check_paths(paths, Options(jobs=2, batch=3))
    bad = [(r.trace, r.line, r.message[:600]) for r in res if r.verdict != "accepted"]
    assert not bad, bad
