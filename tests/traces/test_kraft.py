"""KRaft traces from `kraft simulate` checked against spec/KRaft.tla.

The oracle for "rejected at the step where the bug acts": the simulator is deterministic per seed,
so the correct and the buggy implementation take the same steps until the bug first changes
something observable; the first line where their traces differ is where the bug acts, and the
checker must reject the buggy trace exactly there (after accepting the correct one past it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.quorum.protocol import PROTOCOL
from tests.traces.helpers import first_difference, simulator, write
from traces.check import Options, check_paths

pytestmark = pytest.mark.tlc
simulate = simulator("kraft")
OPTS = Options(jobs=2)








def test_simulator_traces_are_accepted(tmp_path):
    paths = []
    for seed in (1, 2, 3):
        lines = simulate(tmp_path / f"s{seed}", seed, 300, "none")
        paths.append(write(tmp_path / f"s{seed}.ndjson", lines))
    res = check_paths(paths, OPTS)
    assert [r.verdict for r in res] == ["accepted"] * 3, [r.message[:500] for r in res]
    assert all(r.events == r.checked > 100 for r in res)
    assert all(json.loads(Path(r.trace).read_text().splitlines()[0])["protocol"] == "kraft" for r in res)


@pytest.mark.parametrize("variant,seed,faults,action,var", [
    ("NoTruncateOnDivergence", 1, "resign", "HandleFetchResponse", "log"),
    pytest.param("HwmFromAnyEpoch", 1, "crash", "HandleFetchRequest", "highWatermark", marks=pytest.mark.slow),
    pytest.param("VoteWithoutLogCheck", 1, "resign", "HandleVoteRequest", "votedFor", marks=pytest.mark.slow),
    pytest.param("ForgetVoteOnRestart", 2, "crash", "Restart", "votedFor", marks=pytest.mark.slow),
])
def test_variant_rejected_where_the_bug_acts(tmp_path, variant, seed, faults, action, var):
    line, rb = _rejected_where_the_bug_acts(tmp_path, variant, seed, 2000, faults)
    assert rb.kind == "state_mismatch", rb.message[:1000]
    assert rb.line == line and rb.action == action
    assert var in rb.disagree and f"bad.ndjson:{line}:" in rb.message


def _rejected_where_the_bug_acts(tmp_path: Path, variant: str, seed: int, steps: int, faults: str,
                                 observers: int = 0):
    """The correct and the buggy run of one seed, cut 20 lines past their first difference: the
    correct one accepted, the buggy one rejected.  Returns (that line, the buggy one's result)."""
    good = simulate(tmp_path / "good", seed, steps, faults, observers=observers)
    bad = simulate(tmp_path / "bad", seed, steps, faults, variant, observers=observers)
    line = first_difference(good, bad)
    assert line is not None, "the bug never acted in this run"
    g = write(tmp_path / "good.ndjson", good[: line + 20])
    b = write(tmp_path / "bad.ndjson", bad[: line + 20])
    rg, rb = check_paths([g, b], OPTS)
    assert rg.verdict == "accepted", rg.message[:1000]
    assert rb.verdict == "rejected" and rb.variant == variant, rb.message[:1000]
    return line, rb


def test_observer_skips_fsync_rejected_where_the_bug_acts(tmp_path):
    """An observer's follower append that leaves the log unflushed: the spec's observer flushes."""
    line, rb = _rejected_where_the_bug_acts(tmp_path, "ObserverSkipsFsync", 7, 1000, "all", observers=1)
    assert rb.kind == "state_mismatch", rb.message[:1000]
    assert rb.line == line and rb.action == "HandleFetchResponse"
    assert "flushedOffset" in rb.disagree and f"bad.ndjson:{line}:" in rb.message


# --- UpdateRaftVoter (KIP-853) -----------------------------------------------------------------

def _endpoint_update_run(tmp_path: Path) -> tuple[list[str], int]:
    """A run where voters restart on new ports (the ``reendpoint`` fault) and one has its new
    endpoint written into the voter set; its lines and the index of that UpdateVoter step."""
    lines = simulate(tmp_path / "run", 1, 1700, "reendpoint:6000")
    at = next((i for i, line in enumerate(lines) if json.loads(line).get("action") == "UpdateVoter"), None)
    assert at is not None, "no UpdateVoter step in this run"
    return lines, at


def test_endpoint_update_run_is_accepted(tmp_path):
    """The run, cut 20 lines past its UpdateVoter step (the leader's append of the VotersRecord a
    voter's UpdateRaftVoter request asked for), conforms."""
    lines, at = _endpoint_update_run(tmp_path)
    [res] = check_paths([write(tmp_path / "good.ndjson", lines[: at + 20])], OPTS)
    assert res.verdict == "accepted" and res.events == res.checked, res.message[:1000]


@pytest.mark.slow
def test_endpoint_update_from_the_leader_itself_is_rejected(tmp_path):
    """The same prefix with the update credited to the leader's own request is rejected at that
    line: the spec's ``x \\in Others(n)`` (a leader never sends UpdateRaftVoter)."""
    lines, at = _endpoint_update_run(tmp_path)
    step = json.loads(lines[at])
    step["args"]["x"] = step["node"]
    bad = write(tmp_path / "bad.ndjson", lines[:at] + [json.dumps(step)] + lines[at + 1: at + 20])
    [res] = check_paths([bad], OPTS)
    assert res.verdict == "rejected" and res.action == "UpdateVoter" and res.line == at + 1, res.message[:1000]


# --- snapshots (KIP-630) ----------------------------------------------------------------------

SNAPSHOT_FAULTS = "snapshot,far-behind:1500"


def test_snapshot_runs_are_accepted(tmp_path):
    """Runs where a follower cut off while the leader snapshots and cleans catches up through
    FetchSnapshot conform."""
    paths = []
    for seed in (1, 2):
        lines = simulate(tmp_path / f"s{seed}", seed, 800, SNAPSHOT_FAULTS)
        assert any('"action":"HandleFetchSnapshotResponse"' in ln for ln in lines), f"seed {seed}: no snapshot fetched"
        assert any('"action":"DeleteBeforeSnapshot"' in ln for ln in lines)
        paths.append(write(tmp_path / f"s{seed}.ndjson", lines))
    res = check_paths(paths, OPTS)
    assert [r.verdict for r in res] == ["accepted"] * 2, [r.message[:800] for r in res]


@pytest.mark.parametrize("variant,seed,steps,faults,action,kind", [
    ("SnapshotBeyondHighWatermark", 6, 600, "all", "TakeSnapshot", "not_enabled"),
    ("RetentionDeletesPastSnapshot", 9, 1500, SNAPSHOT_FAULTS, "DeleteBeforeSnapshot", "not_enabled"),
    ("NoSnapshotRedirectBelowLogStart", 1, 600, SNAPSHOT_FAULTS, "HandleFetchRequest", "state_mismatch"),
])
def test_snapshot_variant_rejected_where_the_bug_acts(tmp_path, variant, seed, steps, faults, action, kind):
    line, rb = _rejected_where_the_bug_acts(tmp_path, variant, seed, steps, faults)
    assert (rb.kind, rb.line, rb.action) == (kind, line, action), rb.message[:1000]


# --- the runs the zoo simulates for the voter-change and snapshot-install variants ---------------

PINNED_STEP = {  # variant -> (trace action, kind of rejection, a variable that disagrees or None)
    "KeepSuffixAfterSnapshotInstall": ("HandleFetchSnapshotResponse", "state_mismatch", "log"),
    "ConcurrentVoterChange": ("RemoveVoter", "not_enabled", None),  # the spec refuses the change
    "LeaderCountsSelfWhenRemoved": ("HandleFetchRequest", "state_mismatch", "highWatermark"),
    "ObserverSkipsFsync": ("HandleFetchResponse", "state_mismatch", "flushedOffset"),
    "VoterChangeBeforeEpochCommit": ("RemoveVoter", "not_enabled", None),  # no HW in its epoch yet
    "IgnoreDirectoryIdInVote": ("HandleVoteRequest", "state_mismatch", "messages"),
}


@pytest.mark.parametrize("variant", sorted(PINNED_STEP))
def test_pinned_run_rejected_where_the_bug_acts(tmp_path, variant):
    """The zoo's conformance cell of these variants checks their pinned run (``Variant.sim``):
    its trace is rejected at the line where the bug first acts, and the correct run of the same
    seed is accepted past it."""
    pin = PROTOCOL.variant(variant).sim[0]
    line, rb = _rejected_where_the_bug_acts(tmp_path, variant, pin.seed, pin.steps, pin.faults,
                                            observers=pin.observers)
    action, kind, var = PINNED_STEP[variant]
    assert (rb.line, rb.action, rb.kind) == (line, action, kind), rb.message[:1000]
    assert var is None or var in rb.disagree, rb.message[:1000]


# --- all-fault traces of the correct implementation -------------------------------------------
#
# Checked-in prefixes of `kraft simulate --faults all` runs, each cut a few steps after a situation
# where spec/KRaft.tla and the implementation used to disagree (docs/conformance.md, "Findings").
# Each test also asserts the situation is really in the fixture (found from the logged states).

FIXTURES = Path(__file__).parent / "fixtures"


def _steps(path: Path):
    prev = None
    for ln, text in enumerate(path.read_text().splitlines()[1:], 2):
        ev = json.loads(text)
        st = ev.get("state") or {}
        if prev is not None and ev.get("spec", True):
            yield ln, ev, prev, st
        if st:
            prev = st


def _prevote_refused_after_leader_gone(path: Path) -> bool:
    for _, ev, pre, post in _steps(path):
        n = str(ev["node"])
        if ev["action"] != "HandleVoteRequest" or not ev["args"]["m"]["mpreVote"] or pre["role"][n] != "Follower":
            continue
        ld = pre["leader"][n]
        alive = ld is not None and pre["role"][str(ld)] == "Leader" and pre["currentEpoch"][str(ld)] == pre["currentEpoch"][n]
        refused = any(m["mtype"] == "VoteResponse" and m["msource"] == int(n) and not m["mgranted"]
                      for m in post["messages"])
        if not alive and refused:
            return True
    return False


def _fetch_resent_while_outstanding(path: Path) -> bool:
    return any(ev["action"] == "SendFetchRequest" and any(
        (m["mtype"] == "FetchRequest" and m["msource"] == ev["node"])
        or (m["mtype"] == "FetchResponse" and m["mdest"] == ev["node"]) for m in pre["messages"])
        for _, ev, pre, _ in _steps(path))


def _bqe_resent_after_ack(path: Path) -> bool:
    return any(ev["action"] == "SendBeginQuorumEpoch"
               and pre["endOffsets"][str(ev["node"])][str(ev["args"]["d"])] > pre["epochStartOffset"][str(ev["node"])]
               for _, ev, pre, _ in _steps(path))


def _disk_loss_then_follow(path: Path) -> bool:
    lost = None
    for _, ev, pre, post in _steps(path):
        n = str(ev["node"])
        if ev["action"] == "RestartWithDiskLoss" and pre["currentEpoch"][n] >= 1:
            lost = n
        elif lost is not None and post.get("awaitingLeader", {}).get(lost) is False:
            return post["role"][lost] == "Follower"
    return False


SITUATIONS = {
    "kraft_prevote_refused_after_leader_gone.ndjson": _prevote_refused_after_leader_gone,
    "kraft_fetch_resent_while_outstanding.ndjson": _fetch_resent_while_outstanding,
    "kraft_bqe_resent_after_ack.ndjson": _bqe_resent_after_ack,
    "kraft_disk_loss_then_follow.ndjson": _disk_loss_then_follow,
}


def test_all_fault_fixtures_are_accepted():
    paths = [FIXTURES / name for name in SITUATIONS]
    for p in paths:
        assert SITUATIONS[p.name](p), f"{p.name} no longer contains its situation"
    res = check_paths(paths, OPTS)
    assert [r.verdict for r in res] == ["accepted"] * len(paths), [r.message[:800] for r in res]
    assert all(r.events == r.checked for r in res)


def _simulate_all_faults(out: Path, first_seed: int, count: int, steps: int, observers: int = 0,
                         violations_allowed: bool = False) -> list[Path]:
    cmd = [sys.executable, "-m", "kraft.cli", "simulate", "--protocol", "kraft", "--seed", str(first_seed),
           "--steps", str(steps), "--faults", "all", "--count", str(count), "--out", str(out),
           "--observers", str(observers)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode in ((0, 1) if violations_allowed else (0,)), proc.stdout[-2000:] + proc.stderr[-2000:]
    return sorted(out.glob("*/trace.ndjson"))


def test_all_fault_runs_are_accepted(tmp_path):
    """A few seeded `--faults all` runs (crashes, disk losses, partitions, resignations, drops,
    duplicates, delays) of the correct implementation conform."""
    paths = _simulate_all_faults(tmp_path, 1, 4, 400)
    res = check_paths(paths, OPTS)
    assert [r.verdict for r in res] == ["accepted"] * len(paths), [r.message[:800] for r in res]


def test_voter_change_runs_are_accepted(tmp_path):
    """All-fault runs with an observer, where the leader adds and removes voters (KIP-853), conform;
    the runs really change the voter set.  (Seed 1 ends with a replica behind: docs/quorum.md,
    "Known gaps".)"""
    paths = _simulate_all_faults(tmp_path, 1, 3, 1000, observers=1, violations_allowed=True)
    changes = [json.loads((p.parent / "summary.json").read_text())["clients"] for p in paths]
    assert sum(c["voters_added"] + c["voters_removed"] for c in changes) > 0, changes
    res = check_paths(paths, OPTS)
    assert [r.verdict for r in res] == ["accepted"] * len(paths), [r.message[:800] for r in res]


def test_voter_change_runs_keep_the_invariants(tmp_path):
    """FollowersCatchUp over every replica, with voter changes, disk losses and every other fault:
    a voter removed while away finds the leader (a lost pre-vote round, a bootstrap fetch), and so
    does one back from a disk loss (its fetch answered by the leader itself)."""
    _simulate_all_faults(tmp_path, 2, 2, 1000, observers=1)


@pytest.mark.slow
def test_all_fault_corpus_is_accepted(tmp_path):
    """The corpus of the acceptance criterion: 40 seeds x 1500 simulator steps, all faults."""
    paths = _simulate_all_faults(tmp_path, 101, 40, 1500)
    res = check_paths(paths, OPTS)
    bad = [(r.trace, r.message[:800]) for r in res if r.verdict != "accepted"]
    assert not bad, bad


# ----------------------------------------------------------------- hand-made corrupt KRaft traces

CORRUPT_BASE = Path(__file__).parent / "fixtures" / "kraft_fetch_resent_while_outstanding.ndjson"


def _line_of(lines: list[str], pred) -> int:
    """1-based line number of the first trace line (after the header) satisfying pred."""
    return next(n for n, x in enumerate(lines[1:], 2) if pred(json.loads(x)))


def _edited(lines: list[str], n: int, edit) -> list[str]:
    d = json.loads(lines[n - 1])
    edit(d)
    return lines[: n - 1] + [json.dumps(d)] + lines[n:]


def _kraft_corruptions() -> dict[str, tuple[object, dict]]:
    base = CORRUPT_BASE.read_text().splitlines()
    cases: dict[str, tuple[object, dict]] = {"original": (base, {})}

    n = _line_of(base, lambda d: d["action"] == "HandleFetchResponse")
    cases["wrong_value"] = (_edited(base, n, lambda d: d["state"]["highWatermark"].update({str(d["node"]): 7})),
                            dict(line=n, kind="state_mismatch", disagree=["highWatermark"]))

    # without BecomeCandidate the next line receives a vote request that was never sent
    n = _line_of(base, lambda d: d["action"] == "BecomeCandidate")
    cases["skipped_step"] = (base[: n - 1] + base[n:], dict(line=n, kind="not_enabled", why="message in network is false"))

    # the fetch request and its handling swapped: the leader handles a request not yet sent
    n = _line_of(base, lambda d: d["action"] == "SendFetchRequest")
    swapped = list(base)
    swapped[n - 1], swapped[n] = swapped[n], swapped[n - 1]
    cases["reordered"] = (swapped, dict(line=n, kind="not_enabled", why="message in network is false"))

    n = _line_of(base, lambda d: d["action"] == "BecomeLeader")
    cases["unknown_action"] = (_edited(base, n, lambda d: d.update(action="BecomeKing")),
                               dict(line=n, kind="unknown_action"))

    n = _line_of(base, lambda d: d["action"] == "Flush")
    bad = list(base)
    bad[n - 1] = bad[n - 1][:-5] + ",,}"
    cases["malformed"] = (bad, dict(line=n, kind="malformed_json"))

    text = "".join(x + "\n" for x in base)
    cut = text.rfind("\n", 0, len(text) // 2) + 40
    cases["truncated"] = (text[:cut], dict(line=text[:cut].count("\n") + 1, kind="truncated"))
    return cases


def test_corrupt_kraft_traces_are_rejected_precisely(tmp_path):
    cases = _kraft_corruptions()
    paths = []
    for name, (content, _) in cases.items():
        p = tmp_path / f"{name}.ndjson"
        p.write_text(content if isinstance(content, str) else "".join(x + "\n" for x in content))
        paths.append(p)
    res = {Path(r.trace).stem: r for r in check_paths(paths, OPTS)}
    assert res["original"].verdict == "accepted", res["original"].message[:800]
    for name, (_, exp) in cases.items():
        if name == "original":
            continue
        r = res[name]
        assert r.verdict == "rejected", (name, r.verdict, r.message[:800])
        assert (r.kind, r.line) == (exp["kind"], exp["line"]), (name, r.kind, r.line, r.message[:800])
        assert f":{exp['line']}" in r.message, (name, r.message[:800])
        if "disagree" in exp:
            assert r.disagree == exp["disagree"], (name, r.disagree)
        if "why" in exp:
            assert exp["why"] in r.message, (name, r.message[:800])
    assert "step index jumps" in " ".join(res["skipped_step"].warnings)


def test_a_rejection_states_the_message_in_full(tmp_path):
    """The module names each message once (traces.tla.Named); the report of a rejected step
    still writes the message itself."""
    base = CORRUPT_BASE.read_text().splitlines()
    n = _line_of(base, lambda d: d["action"] == "SendFetchRequest")
    swapped = list(base)
    swapped[n - 1], swapped[n] = swapped[n], swapped[n - 1]
    (r,) = check_paths([write(tmp_path / "swapped.ndjson", swapped)], OPTS)
    assert (r.verdict, r.kind, r.line) == ("rejected", "not_enabled", n), r.message[:800]
    assert 'mtype |-> "FetchRequest"' in r.message and "TrM_" not in r.message, r.message[:800]
