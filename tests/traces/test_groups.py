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
* Regression fixtures for the disagreements conformance found (docs/conformance.md, "Consumer
  groups"): ``groups_eager_seed2.ndjson`` has a pending member id expiring (``ExpirePending``) and
  free request timeouts; ``groups_coop_seed181_timeout.ndjson`` (seed 181, cooperative, ``--faults
  all``, first 39 steps) a request timeout while the coordinator is down and the JoinGroup's
  response still in flight (a counted fault in the spec), then consumer crash and restart. A
  request timeout closes the connection: a copy that keeps it open is rejected naming ``conn``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.traces.helpers import first_difference, simulator, write
from traces.check import Options, check_paths

# one worker builds the module's traces and checks them once (its fixture is module-scoped)
pytestmark = [pytest.mark.tlc, pytest.mark.xdist_group("group-traces")]
simulate = simulator("groups")
OPTS = Options(jobs=1)
FIXTURE = Path(__file__).parent / "fixtures" / "groups_eager_seed2.ndjson"
TIMEOUT_FIXTURE = Path(__file__).parent / "fixtures" / "groups_coop_seed181_timeout.ndjson"








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


@pytest.mark.slow
def test_corpus_of_correct_traces_is_accepted(tmp_path):
    """40 seeds x 3000 simulator events with every fault kind (about 36,000 spec steps)."""
    paths = [write(tmp_path / f"s{seed}.ndjson", simulate(tmp_path / f"s{seed}", seed, 3000))
             for seed in range(1, 41)]
    res = check_paths(paths, Options(jobs=1, batch=8))  # large batches of long traces thrash a 1 GB heap
    bad = [(r.trace, r.line, r.message[:600]) for r in res if r.verdict != "accepted"]
    assert not bad, bad


# ------------------------------------------------------------------ bug variants are rejected where they act

VARIANT_CASES = [
    # variant, seed, the logged action of the line where the bug acts, its failing part, a disagreeing variable
    ("CooperativeAssignWithoutRevoke", 1, "HandleJoinGroupResponse", None, "msgs"),
    ("EagerNoRevokeBeforeJoin", 2, "SendOffsetCommit", "SendJoinGroup", "owned"),
    ("AcceptStaleGeneration", 10, "HandleOffsetCommit", None, "fencingBreaches"),
]


@pytest.fixture(scope="module")
def variant_runs(tmp_path_factory):
    """Every case's correct and buggy trace (cut 20 lines past the oracle line), checked in one
    call: one batched TLC run, then one localising run per rejected trace."""
    base = tmp_path_factory.mktemp("variants")
    files, lines = [], {}
    for variant, seed, *_ in VARIANT_CASES:
        good = simulate(base / f"{variant}-good", seed, 2000)
        bad = simulate(base / f"{variant}-bad", seed, 2000, variant=variant)
        line = first_difference(good, bad)
        assert line is not None, f"{variant}: the bug never acted in seed {seed}"
        lines[variant] = line
        files += [write(base / f"{variant}-good.ndjson", good[: line + 20]),
                  write(base / f"{variant}-bad.ndjson", bad[: line + 20])]
    res = check_paths(files, OPTS)
    return {Path(r.trace).name: r for r in res}, lines


@pytest.mark.parametrize("variant,seed,action,part,var", VARIANT_CASES)
def test_variant_rejected_where_the_bug_acts(variant_runs, variant, seed, action, part, var):
    results, lines = variant_runs
    line = lines[variant]
    rg, rb = results[f"{variant}-good.ndjson"], results[f"{variant}-bad.ndjson"]
    assert rg.verdict == "accepted", rg.message[:1000]
    assert rb.verdict == "rejected" and rb.kind == "state_mismatch", rb.message[:1000]
    assert rb.line == line and rb.action == action, (rb.line, line, rb.action)
    if part is not None:
        assert rb.part is not None and rb.part.startswith(part), rb.part
    assert var in rb.disagree and f"{variant}-bad.ndjson:{line}:" in rb.message
    assert rb.variant == variant


VARIANT_SWEEP = [("CooperativeAssignWithoutRevoke", s) for s in (1, 3, 5, 7, 9)] + \
    [("EagerNoRevokeBeforeJoin", s) for s in (2, 4, 6, 8, 10)] + \
    [("AcceptStaleGeneration", s) for s in (2, 10, 30, 38)]  # the even seeds 0-40 where it acts


@pytest.mark.slow
def test_variants_rejected_where_they_act_over_seeds(tmp_path):
    """Each variant over several seeds (the oracle as above): every buggy trace rejected at the
    oracle line, every correct trace accepted past it."""
    files, lines = [], {}
    for variant, seed in VARIANT_SWEEP:
        good = simulate(tmp_path / f"{variant}-{seed}-good", seed, 2000)
        bad = simulate(tmp_path / f"{variant}-{seed}-bad", seed, 2000, variant=variant)
        line = first_difference(good, bad)
        assert line is not None, f"{variant}: the bug never acted in seed {seed}"
        lines[f"{variant}-{seed}-bad.ndjson"] = line
        files += [write(tmp_path / f"{variant}-{seed}-good.ndjson", good[: line + 20]),
                  write(tmp_path / f"{variant}-{seed}-bad.ndjson", bad[: line + 20])]
    for r in check_paths(files, OPTS):
        name = Path(r.trace).name
        if name.endswith("-good.ndjson"):
            assert r.verdict == "accepted", (name, r.message[:800])
        else:
            assert r.verdict == "rejected" and r.line == lines[name], (name, r.line, lines[name], r.message[:800])


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


def _edit(lines: list[str], k: int, f) -> list[str]:
    out = list(lines)
    d = json.loads(out[k])
    f(d)
    out[k] = json.dumps(d, separators=(",", ":"))
    return out


def _completes(d: dict) -> bool:
    return any(p["action"] == "CompleteJoin" for p in d["args"].get("then", []))


def _corruptions() -> dict[str, tuple[list[str], int]]:
    """name -> (corrupted lines, the line (header = 1) where the corruption is)."""
    lines = _fixture()
    out = {}

    k = _find(lines, _completes)
    out["wrong_generation"] = (_edit(lines, k, lambda d: d["state"].update(generation=d["state"]["generation"] + 1)), k + 1)

    k = _find(lines, lambda d: d["action"] == "HandleSyncGroupResponse"
              and d["args"]["m"]["merror"] == "NONE" and d["args"]["m"]["massigned"])

    def flip(d: dict) -> None:
        c = d["node"]
        d["state"]["owned"][c] = sorted(set(d["state"]["owned"][c]) ^ {0})
    out["wrong_owner"] = (_edit(lines, k, flip), k + 1)

    k = _find(lines, lambda d: d["action"] == "SendHeartbeat")
    out["skipped_step"] = (lines[:k] + lines[k + 1:], k + 1)  # the next lines' network still holds it

    k = _find(lines, _completes)

    def no_complete(d: dict) -> None:
        d["args"]["then"] = [p for p in d["args"]["then"] if p["action"] != "CompleteJoin"]
        if not d["args"]["then"]:
            del d["args"]["then"]
    out["dropped_part"] = (_edit(lines, k, no_complete), k + 1)

    k = _find(lines, lambda d: d["action"] == "SendHeartbeat")
    out["unknown_action"] = (_edit(lines, k, lambda d: d.update(action="SendHeartbeats")), k + 1)

    k = _find(lines, lambda d: d["action"] == "HandleHeartbeat")
    out["extra_field"] = (_edit(lines, k, lambda d: d["args"]["m"].update(mcorr=7)), k + 1)
    out["never_sent"] = (_edit(lines, k, lambda d: d["args"]["m"].update(mgeneration=d["args"]["m"]["mgeneration"] + 5)),
                         k + 1)

    lines = TIMEOUT_FIXTURE.read_text().splitlines()
    k = _find(lines, lambda d: d["action"] == "RequestTimeout")

    def keep_conn(d: dict) -> None:  # the rejoin still goes out on a new connection
        c = d["node"]
        d["state"]["conn"][c] -= 1
    out["timeout_keeps_conn"] = (_edit(lines, k, keep_conn), k + 1)
    return out


_REQUESTS = {"JoinGroup", "SyncGroup", "JoinGroupResponse", "SyncGroupResponse"}


def _situations(lines: list[str]) -> set[str]:
    """What a fixture exercises, read off its lines (the spec's Outstanding(c) for a timeout)."""
    found, prev = set(), None
    for x in lines[1:]:
        d = json.loads(x)
        acts = [d["action"]] + [p["action"] for p in d["args"].get("then", [])]
        if d["spec"] and "ExpirePending" in acts:
            found.add("ExpirePending")
        if d["spec"] and d["action"] == "RequestTimeout":
            c = d["node"]
            held = any(m["mtype"] in _REQUESTS and m.get("msource", c) == c and m.get("mdest", c) == c
                       for m in prev["msgs"]) or prev["memberId"][c] in dict(prev["awaitingJoin"])
            found.add("RequestTimeout outstanding" if held else "RequestTimeout free")
        if d["spec"] and d["action"] in ("Crash", "Restart"):
            found.add(d["action"])
        if not d["spec"] and d["action"] in ("NodeDown", "Crash") and d["node"] == "coordinator":
            found.add("coordinator down")
        prev = d["state"]
    return found


@pytest.fixture(scope="module")
def corrupt_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("corrupt")
    cases = _corruptions()
    cases["original"] = (_fixture(), 0)
    cases["timeout"] = (TIMEOUT_FIXTURE.read_text().splitlines(), 0)
    files = [write(base / f"{name}.ndjson", lines) for name, (lines, _line) in cases.items()]
    res = check_paths(files, OPTS)  # one batched run, then one localising run per rejection
    return {Path(r.trace).stem: (r, cases[Path(r.trace).stem][1]) for r in res}


def test_fixture_trace_is_accepted(corrupt_runs):
    r, _ = corrupt_runs["original"]
    assert r.verdict == "accepted", r.message[:800]
    assert r.events == r.checked == len(spec_lines(_fixture())) and r.skipped > 0


def test_wrong_variable_value_is_rejected_naming_only_it(corrupt_runs):
    r, line = corrupt_runs["wrong_generation"]
    assert r.verdict == "rejected" and r.kind == "state_mismatch", r.message[:800]
    assert r.line == line and r.action == "HandleJoinGroup"
    assert r.disagree == ["generation"]


def test_wrong_owner_is_rejected(corrupt_runs):
    r, line = corrupt_runs["wrong_owner"]
    assert r.verdict == "rejected" and r.line == line, r.message[:800]
    assert r.disagree == ["owned"] and r.action == "HandleSyncGroupResponse"


def test_skipped_step_is_rejected_at_the_next_line(corrupt_runs):
    r, line = corrupt_runs["skipped_step"]
    assert r.verdict == "rejected" and r.line == line, r.message[:800]
    assert "msgs" in r.disagree


def test_dropped_part_of_a_composed_step_is_rejected(corrupt_runs):
    r, line = corrupt_runs["dropped_part"]
    assert r.verdict == "rejected" and r.line == line, r.message[:800]
    assert "generation" in r.disagree and "groupState" in r.disagree


def test_unknown_action_and_unknown_message_field_are_reported(corrupt_runs):
    r, line = corrupt_runs["unknown_action"]
    assert r.verdict == "rejected" and r.kind == "unknown_action" and r.line == line, r.message[:800]
    r, line = corrupt_runs["extra_field"]
    assert r.verdict in ("rejected", "error") and r.line == line, r.message[:800]
    assert "mcorr" in r.message


def test_receive_of_a_message_never_sent_is_not_enabled(corrupt_runs):
    r, line = corrupt_runs["never_sent"]
    assert r.verdict == "rejected" and r.kind == "not_enabled" and r.line == line, r.message[:800]
    assert "message in network is false" in r.message


# ------------------------------------------------------------------ regression fixtures

def test_regression_fixtures_are_accepted(corrupt_runs):
    for name, path in (("original", FIXTURE), ("timeout", TIMEOUT_FIXTURE)):
        r, _ = corrupt_runs[name]
        lines = path.read_text().splitlines()
        assert r.verdict == "accepted", (name, r.message[:800])
        assert r.events == r.checked == len(spec_lines(lines))
    assert {"ExpirePending", "RequestTimeout free", "Crash", "Restart"} <= _situations(_fixture())
    assert {"coordinator down", "RequestTimeout outstanding", "RequestTimeout free", "Crash",
            "Restart"} <= _situations(TIMEOUT_FIXTURE.read_text().splitlines())


def test_request_timeout_that_keeps_the_connection_is_rejected(corrupt_runs):
    r, line = corrupt_runs["timeout_keeps_conn"]
    assert r.verdict == "rejected" and r.kind == "state_mismatch" and r.line == line, r.message[:800]
    assert r.action == "RequestTimeout" and r.disagree == ["conn"]
