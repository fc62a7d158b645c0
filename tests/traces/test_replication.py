"""Partition-replication traces from `kraft simulate --protocol replication` checked against
spec/PartitionReplication.tla (glue: traces/protocols/replication.py).

The oracle for "rejected at the step where the bug acts" is the one of tests/traces/test_kraft.py:
the simulator is deterministic per seed, so the correct and the buggy implementation take the same
steps until the bug first changes something observable; the first line where their traces differ
is where the bug acts, and the checker must reject the buggy trace exactly there (after accepting
the correct one past it).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kraft.replication.broker import Broker
from kraft.replication.protocol import PROTOCOL
from tests.traces.helpers import first_difference, simulator, write
from traces.check import Options, check_paths
from traces.cli import conform

pytestmark = pytest.mark.tlc
simulate = simulator("replication")
OPTS = Options(jobs=2)
DROP = PROTOCOL.drop_message


def test_all_fault_traces_are_accepted(tmp_path):
    """Every fault on (loss, duplication, partitions, crashes, disk loss, controlled shutdowns):
    the correct implementation's traces conform, and they exercise what the glue has to map.
    Seed 9 (500 events) has a broker replay a committed metadata prefix, not the whole committed
    log: the spec's ReplayMetadata takes any committed prefix (docs/replication-spec.md, "Metadata
    replay")."""
    paths, actions = [], set()
    for seed, steps in ((0, 400), (5, 400), (9, 500)):
        lines = simulate(tmp_path / f"s{seed}", seed, steps)
        actions |= {json.loads(x)["action"] for x in lines[1:]}
        paths.append(write(tmp_path / f"s{seed}.ndjson", lines))
    res = check_paths(paths, OPTS)
    assert [r.verdict for r in res] == ["accepted"] * 3, [r.message[:800] for r in res]
    assert all(r.events == r.checked > 60 for r in res)
    assert {DROP, PROTOCOL.spec_name(Broker.handle_fetch_response),
            PROTOCOL.spec_name(Broker.produce)} <= actions
    # a replay that stopped short of the committed log's end was checked
    replay = PROTOCOL.spec_name(Broker.replay_metadata)
    nine = [json.loads(x) for x in (tmp_path / "s9.ndjson").read_text().splitlines()[1:]]
    assert any(ev["action"] == replay and
               ev["state"]["replayedOffset"][str(ev["node"])] < len(ev["state"]["metadataLog"])
               for ev in nine)


# Seeds (1,000 events, every fault) that once showed an implementation or spec difference, each
# now fixed (docs/contracts.md 9.1): a registration committing while its broker is stopped
# (1, the spec's RegisterStopped), a crashed controller's AlterPartition answer (3), a pending
# produce of an earlier leader epoch (34), a request a non-active controller took (36), ISR
# eligibility on replay at the image being applied (42), an unfence committing after its broker
# stopped (57), a fetch a disk loss's non-spec event purged (20).
FIXED = {1: "RegisterStopped", 3: None, 20: None, 34: None, 36: None, 42: None, 57: None}
# a seed whose run (1,000 events) has that first situation today
REGISTER_STOPPED_SEED = 73


def test_a_registration_committing_while_its_broker_is_stopped_conforms(tmp_path):
    """A broker crashes after sending its registration and the record commits while it is down;
    the trace records the spec's RegisterStopped there and is accepted."""
    seed = REGISTER_STOPPED_SEED
    lines = simulate(tmp_path / f"s{seed}", seed, 1000)
    events = [json.loads(x) for x in lines[1:]]
    assert any(FIXED[1] in [ev["action"], *(t["action"] for t in ev["args"].get("then", []))] for ev in events)
    (r,) = check_paths([write(tmp_path / f"s{seed}.ndjson", lines)], OPTS)
    assert r.verdict == "accepted" and r.events == r.checked, r.message[:1500]


# a seed whose run (3,000 events) has a controlled shutdown committing after its broker crashed
CONTROLLED_SHUTDOWN_STOPPED_SEED = 39


def _shutdowns_of_stopped_brokers(events: list[dict]) -> list[int]:
    """The trace lines (header = 1) of ControlledShutdown steps whose broker the previous logged
    state or an earlier part of the same line has stopped."""
    stop = {PROTOCOL.spec_name(Broker.unclean_shutdown), PROTOCOL.spec_name(Broker.clean_shutdown)}
    start = {PROTOCOL.spec_name(Broker.restart_broker), PROTOCOL.spec_name(Broker.restart_broker_with_disk_loss)}
    running: dict[str, bool] = {}
    out = []
    for n, ev in enumerate(events, 2):
        if not ev.get("spec", True):
            continue
        now = dict(running)
        for action, node, args in [(ev["action"], ev["node"], ev["args"]),
                                   *((t["action"], t.get("node"), t) for t in ev["args"].get("then", []))]:
            if action == "ControlledShutdown" and now.get(str(args["b"])) is False:
                out.append(n)
            if action in stop | start:
                now[str(node)] = action in start
        running = ev["state"].get("running", running)
    return out


def test_a_controlled_shutdown_committing_after_its_broker_crashed_conforms(tmp_path):
    """A broker asks for a controlled shutdown, the controller appends the record, the broker
    crashes, then the record commits: the spec's ControlledShutdown of a stopped broker
    (NetworkFaults), accepted; the spec without it rejected the trace there (not enabled)."""
    seed = CONTROLLED_SHUTDOWN_STOPPED_SEED
    lines = simulate(tmp_path / f"s{seed}", seed, 3000)
    assert _shutdowns_of_stopped_brokers([json.loads(x) for x in lines[1:]])
    (r,) = check_paths([write(tmp_path / f"s{seed}.ndjson", lines)], OPTS)
    assert r.verdict == "accepted" and r.events == r.checked, r.message[:1500]


@pytest.mark.slow
def test_all_fault_traces_of_many_seeds_are_accepted(tmp_path):
    """Seeds 0-19 and every seed that once showed a difference, 1,000 events, every fault on: each
    trace is accepted."""
    seeds = sorted(set(range(20)) | set(FIXED))
    paths = [write(tmp_path / f"s{seed}.ndjson", simulate(tmp_path / f"run{seed}", seed, 1000)) for seed in seeds]
    res = check_paths(paths, OPTS)
    bad = [f"seed {seed}: {r.verdict} {r.message[:1500]}" for seed, r in zip(seeds, res)
           if r.verdict != "accepted" or r.events != r.checked]
    assert not bad, bad


def test_a_changed_value_is_rejected_at_its_line(tmp_path):
    """The same accepted trace with one follower's fetched record altered: rejected at that line
    (the check is not vacuous: the log the spec computes is compared with the logged one)."""
    lines = simulate(tmp_path / "s", 0, 200)
    fetched = PROTOCOL.spec_name(Broker.handle_fetch_response)
    for n, text in enumerate(lines[1:], 2):
        ev = json.loads(text)
        if ev["action"] == fetched and ev["args"]["m"]["mentries"]:
            f = str(ev["node"])
            log = ev["state"]["log"][f]
            log[-1] = {"epoch": log[-1]["epoch"] + 1, "value": log[-1]["value"]}
            lines[n - 1] = json.dumps(ev)
            break
    else:
        pytest.fail("no fetch response with records in the first 200 events")
    r, = check_paths([write(tmp_path / "t.ndjson", lines[:n + 5])], OPTS)
    assert r.verdict == "rejected" and r.kind == "state_mismatch", r.message[:800]
    assert r.line == n and r.action == fetched and "log" in r.disagree


def _first_spec_difference(good: list[str], bad: list[str]) -> int | None:
    """The first line where the two traces differ, moved on to the next spec step of the buggy
    trace when that line is not one (a controller decides at append time, a non-spec event, and
    the spec step is recorded when the batch commits)."""
    line = first_difference(good, bad)
    while line is not None and line <= len(bad) and json.loads(bad[line - 1]).get("spec") is False:
        line += 1
    return line


def _first_run_where_the_bug_acts(tmp_path, variant, seeds, steps):
    """The first seed whose run with ``variant`` differs from the correct run: both traces and the
    first differing spec line (the simulator, not the test, decides which seeds reach a bug)."""
    for seed in seeds:
        good = simulate(tmp_path / f"good{seed}", seed, steps)
        bad = simulate(tmp_path / f"bad{seed}", seed, steps, variant=variant)
        line = _first_spec_difference(good, bad)
        if line is not None:
            return good, bad, line
    pytest.fail(f"{variant}: the bug never acted in seeds {list(seeds)} ({steps} events)")


# variant, seeds tried, events: runs in which the simulator reaches the bug (the simulator, not the
# test, decides which seeds do; a change to the simulator's draws moves them, and the seeds are then
# found again by comparing the correct and the buggy run of seeds 0-23). LastReplicaStanding: seed 7
# reaches it after a broker replayed a committed metadata prefix, which the spec takes since
# ReplayMetadata replays any committed prefix; UncleanElection: the controller's unclean choice is a
# MetadataAppend and the spec step (UnfenceBroker) is recorded when it commits.
@pytest.mark.parametrize("variant,seeds,steps", [
    ("LastReplicaStanding", (6, 2, 8, 7), 500),
    pytest.param("StaleAlterPartitionRejoin", (0, 3, 2), 250, marks=pytest.mark.slow),
    pytest.param("TruncateToHighWatermark", (1, 7), 400, marks=pytest.mark.slow),
    pytest.param("HwAdvanceUnderMinIsr", (14, 23, 1), 600, marks=pytest.mark.slow),
    pytest.param("Kip320FirstTry", (8, 1, 7), 600, marks=pytest.mark.slow),
    pytest.param("UncleanElection", (11, 12, 14), 1200, marks=pytest.mark.slow),
    pytest.param("IsrJoinBeforeEpochStart", (13, 1, 9), 1200, marks=pytest.mark.slow),
])
def test_variant_rejected_where_the_bug_acts(tmp_path, variant, seeds, steps):
    good, bad, line = _first_run_where_the_bug_acts(tmp_path, variant, seeds, steps)
    g = write(tmp_path / "good.ndjson", good[: line + 10])
    b = write(tmp_path / "bad.ndjson", bad[: line + 10])
    rg, rb = check_paths([g, b], OPTS)
    assert rg.verdict == "accepted", rg.message[:1000]
    assert rb.verdict == "rejected" and rb.kind in ("state_mismatch", "not_enabled"), rb.message[:1000]
    assert rb.line == line and f"bad.ndjson:{line}:" in rb.message
    assert rb.action == json.loads(bad[line - 1])["action"]
    assert rb.variant == variant


@pytest.mark.parametrize("cut", ["truncated", "corrupt"])
def test_a_damaged_trace_names_file_and_line(tmp_path, cut):
    """A trace cut mid-line (no final newline) or with a corrupt line: rejected with its kind, the
    file and the line, the steps before it checked, no traceback (docs/conformance.md: a trace is
    the output under test, so a damaged one is rejected, exit 1)."""
    lines = simulate(tmp_path / "s", 2, 60)
    n = 20
    if cut == "truncated":
        text = "".join(x + "\n" for x in lines[: n - 1]) + lines[n - 1][: len(lines[n - 1]) // 2]
        kind = "truncated"
    else:
        text = "".join(x + "\n" for x in lines[: n - 1]) + lines[n - 1].replace('"state":', '"state"', 1) + "\n"
        text += "".join(x + "\n" for x in lines[n:])
        kind = "malformed_json"
    p = tmp_path / "t.ndjson"
    p.write_text(text)
    out = tmp_path / "o"
    r = CliRunner().invoke(conform, [str(p), "--out", str(out)])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and f"t.ndjson:{n}" in r.output.replace("\n", "")
    res = json.loads((out / "conform.json").read_text())["results"][0]
    assert (res["verdict"], res["kind"], res["line"]) == ("rejected", kind, n)
    assert res["checked"] > 0
