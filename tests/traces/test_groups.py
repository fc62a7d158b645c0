"""Consumer-group traces from `kraft simulate --protocol groups` checked against
spec/ConsumerGroup.tla (glue: traces/protocols/groups.py).

* Traces of the correct implementation, eager (even seeds) and cooperative (odd seeds), with every
  fault kind, are accepted: every spec step matched, the non-spec steps counted.
* For each bug variant, the trace of the buggy implementation is rejected at the line where the
  bug acts. The oracle does not look at the checker: the simulator is deterministic per seed and
  a variant only fixes the protocol the seed's parity would pick anyway (cooperative for
  CooperativeAssignWithoutRevoke: odd seeds; eager for the others: even seeds), so the correct and
  the buggy runs take the same steps until the bug first changes something; the first line where
  their traces differ is where it acts. The correct trace is accepted past that line.
* Hand-corrupted copies of a recorded trace (fixture ``groups_eager_seed2.ndjson``: seed 2, 250
  events, ``--faults all``) are rejected precisely: a wrong variable value names only that
  variable, a skipped step or a dropped part of a composed step is reported at its line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from traces.check import Options, check_paths

pytestmark = pytest.mark.tlc
OPTS = Options(jobs=1)
FIXTURE = Path(__file__).parent / "fixtures" / "groups_eager_seed2.ndjson"


def simulate(out: Path, seed: int, steps: int, faults: str = "all", variant: str | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "kraft.cli", "simulate", "--protocol", "groups", "--seed", str(seed),
           "--steps", str(steps), "--faults", faults, "--out", str(out)]
    if variant:
        cmd += ["--variant", variant]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: the buggy run broke an invariant
    return (out / "trace.ndjson").read_text().splitlines()


def first_difference(a: list[str], b: list[str]) -> int | None:
    for n, (x, y) in enumerate(zip(a[1:], b[1:]), 2):
        if x != y:
            return n
    return None


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines))
    return path


def spec_lines(lines: list[str]) -> list[int]:
    """Physical line numbers (header = 1) of the spec steps."""
    return [n for n, x in enumerate(lines[1:], 2) if json.loads(x)["spec"]]


# ------------------------------------------------------------------ correct traces are accepted

@pytest.mark.parametrize("faults", ["all"])
def test_correct_traces_are_accepted(tmp_path, faults):
    """Seeds 1-4 (cooperative, eager, cooperative, eager), 1500 simulator events each."""
    paths = [write(tmp_path / f"s{seed}.ndjson", simulate(tmp_path / f"s{seed}", seed, 1500, faults))
             for seed in (1, 2, 3, 4)]
    res = check_paths(paths, OPTS)
    assert [r.verdict for r in res] == ["accepted"] * 4, [r.message[:800] for r in res]
    assert all(r.events == r.checked > 200 and r.skipped > 0 for r in res)
    protos = [json.loads(Path(p).read_text().splitlines()[1])["state"]["protocol"] for p in paths]
    assert protos == ["cooperative", "eager", "cooperative", "eager"]


def test_fixture_trace_is_accepted():
    (r,) = check_paths([FIXTURE], OPTS)
    assert r.verdict == "accepted", r.message[:800]
    assert r.events == r.checked == len(spec_lines(FIXTURE.read_text().splitlines()))


@pytest.mark.slow
def test_corpus_of_correct_traces_is_accepted(tmp_path):
    """40 seeds x 3000 simulator events with every fault kind (about 36,000 spec steps)."""
    paths = [write(tmp_path / f"s{seed}.ndjson", simulate(tmp_path / f"s{seed}", seed, 3000))
             for seed in range(1, 41)]
    res = check_paths(paths, Options(jobs=1))
    bad = [(r.trace, r.line, r.message[:600]) for r in res if r.verdict != "accepted"]
    assert not bad, bad


# ------------------------------------------------------------------ bug variants are rejected where they act

VARIANT_CASES = [
    # variant, seed, the logged action of the line where the bug acts, its failing part, a disagreeing variable
    ("CooperativeAssignWithoutRevoke", 1, "HandleJoinGroupResponse", None, "msgs"),
    ("EagerNoRevokeBeforeJoin", 2, "SendOffsetCommit", "SendJoinGroup", "owned"),
    ("AcceptStaleGeneration", 10, "HandleOffsetCommit", None, "fencingBreaches"),
]


@pytest.mark.parametrize("variant,seed,action,part,var", VARIANT_CASES)
def test_variant_rejected_where_the_bug_acts(tmp_path, variant, seed, action, part, var):
    good = simulate(tmp_path / "good", seed, 2000)
    bad = simulate(tmp_path / "bad", seed, 2000, variant=variant)
    line = first_difference(good, bad)
    assert line is not None, "the bug never acted in this run"
    g = write(tmp_path / "good.ndjson", good[: line + 20])
    b = write(tmp_path / "bad.ndjson", bad[: line + 20])
    rg, rb = check_paths([g, b], OPTS)
    assert rg.verdict == "accepted", rg.message[:1000]
    assert rb.verdict == "rejected" and rb.kind == "state_mismatch", rb.message[:1000]
    assert rb.line == line and rb.action == action, (rb.line, line, rb.action)
    if part is not None:
        assert rb.part is not None and rb.part.startswith(part), rb.part
    assert var in rb.disagree and f"bad.ndjson:{line}:" in rb.message
    assert rb.variant == variant


# ------------------------------------------------------------------ hand-corrupted traces

def _fixture() -> list[str]:
    return FIXTURE.read_text().splitlines()


def _find(lines: list[str], pred) -> int:
    """Index (0-based, = physical line - 1) of the first spec step satisfying pred."""
    for k, x in enumerate(lines[1:], 1):
        d = json.loads(x)
        if d["spec"] and pred(d):
            return k
    raise AssertionError("no such step in the fixture")


def test_wrong_variable_value_is_rejected_naming_only_it(tmp_path):
    lines = _fixture()
    k = _find(lines, lambda d: any(p["action"] == "CompleteJoin" for p in d["args"].get("then", [])))
    d = json.loads(lines[k])
    d["state"]["generation"] += 1
    lines[k] = json.dumps(d, separators=(",", ":"))
    (r,) = check_paths([write(tmp_path / "wrong.ndjson", lines)], OPTS)
    assert r.verdict == "rejected" and r.kind == "state_mismatch", r.message[:800]
    assert r.line == k + 1 and r.action == "HandleJoinGroup"
    assert r.disagree == ["generation"]


def test_wrong_owner_is_rejected(tmp_path):
    lines = _fixture()
    k = _find(lines, lambda d: d["action"] == "HandleSyncGroupResponse"
              and d["args"]["m"]["merror"] == "NONE" and d["args"]["m"]["massigned"])
    d = json.loads(lines[k])
    c = d["node"]
    d["state"]["owned"][c] = sorted(set(d["state"]["owned"][c]) ^ {0})
    lines[k] = json.dumps(d, separators=(",", ":"))
    (r,) = check_paths([write(tmp_path / "owner.ndjson", lines)], OPTS)
    assert r.verdict == "rejected" and r.line == k + 1, r.message[:800]
    assert r.disagree == ["owned"] and f'{{"{c}"}}' in r.message


def test_skipped_step_is_rejected_at_the_next_line(tmp_path):
    lines = _fixture()
    k = _find(lines, lambda d: d["action"] == "SendHeartbeat")
    del lines[k]  # the heartbeat is never sent, but the next lines' network still holds it
    (r,) = check_paths([write(tmp_path / "skip.ndjson", lines)], OPTS)
    assert r.verdict == "rejected" and r.line == k + 1, r.message[:800]
    assert "msgs" in r.disagree


def test_dropped_part_of_a_composed_step_is_rejected(tmp_path):
    lines = _fixture()
    k = _find(lines, lambda d: any(p["action"] == "CompleteJoin" for p in d["args"].get("then", [])))
    d = json.loads(lines[k])
    d["args"]["then"] = [p for p in d["args"]["then"] if p["action"] != "CompleteJoin"]
    if not d["args"]["then"]:
        del d["args"]["then"]
    lines[k] = json.dumps(d, separators=(",", ":"))
    (r,) = check_paths([write(tmp_path / "part.ndjson", lines)], OPTS)
    assert r.verdict == "rejected" and r.line == k + 1, r.message[:800]
    assert "generation" in r.disagree and "groupState" in r.disagree


def test_unknown_action_and_bad_message_are_reported(tmp_path):
    lines = _fixture()
    k = _find(lines, lambda d: d["action"] == "SendHeartbeat")
    d = json.loads(lines[k])
    d["action"] = "SendHeartbeats"
    lines[k] = json.dumps(d, separators=(",", ":"))
    (r,) = check_paths([write(tmp_path / "unknown.ndjson", lines)], OPTS)
    assert r.verdict == "rejected" and r.kind == "unknown_action" and r.line == k + 1, r.message[:800]

    lines = _fixture()
    k = _find(lines, lambda d: d["action"] == "HandleHeartbeat")
    d = json.loads(lines[k])
    d["args"]["m"]["mcorr"] = 7  # a field the spec's messages do not have
    lines[k] = json.dumps(d, separators=(",", ":"))
    (r,) = check_paths([write(tmp_path / "field.ndjson", lines)], OPTS)
    assert r.verdict in ("rejected", "error") and r.line == k + 1, r.message[:800]
    assert "mcorr" in r.message


def test_receive_of_a_message_never_sent_is_not_enabled(tmp_path):
    lines = _fixture()
    k = _find(lines, lambda d: d["action"] == "HandleHeartbeat")
    d = json.loads(lines[k])
    d["args"]["m"]["mgeneration"] += 5  # no such heartbeat was ever sent
    lines[k] = json.dumps(d, separators=(",", ":"))
    (r,) = check_paths([write(tmp_path / "ghost.ndjson", lines)], OPTS)
    assert r.verdict == "rejected" and r.kind == "not_enabled" and r.line == k + 1, r.message[:800]
    assert "message in network is false" in r.message
