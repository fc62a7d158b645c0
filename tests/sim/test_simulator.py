"""The generic simulator: determinism, network faults, CLI contract (files, headers, exit codes)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from kraft.sim.cli import run_once, simulate
from kraft.sim.core import Clock, Faults, Network, SimulationError, Simulator
from kraft.quorum.sim import KRaftPlugin
from kraft.sim.recorder import Recorder


@attrs.frozen
class Msg:
    source: int
    dest: int
    n: int


def test_faults_parse() -> None:
    assert Faults.parse("all").enabled() == ["drop", "dup", "delay", "reorder", "partition", "crash",
                                             "disk-loss", "resign", "snapshot"]
    assert Faults.parse("drop,crash").enabled() == ["drop", "crash"]
    assert Faults.parse("none").enabled() == []
    with pytest.raises(SimulationError, match="bogus"):
        Faults.parse("drop,bogus")


def test_network_fifo_without_reorder_and_partition_drops() -> None:
    clock = Clock()
    net = Network(random.Random(1), Faults(delay=True), clock)
    for k in range(50):
        assert net.send(Msg(1, 2, k)) == []
    order = []
    while (ev := clock.pop()) is not None:
        order.append(net.take(ev.data).n)
    assert order == list(range(50))  # delayed but FIFO per link
    net.partition({(1, 2)})
    assert net.send(Msg(1, 2, 99)) != []  # doomed by the one-way partition
    assert net.send(Msg(2, 1, 100)) == []  # the other direction still works


def test_network_reorders_when_asked() -> None:
    clock = Clock()
    net = Network(random.Random(1), Faults(delay=True, reorder=True), clock)
    for k in range(50):
        net.send(Msg(1, 2, k))
    order = []
    while (ev := clock.pop()) is not None:
        order.append(net.take(ev.data).n)
    assert sorted(order) == list(range(50)) and order != list(range(50))


def _run(seed: int) -> tuple[dict, list, list]:
    p = KRaftPlugin(3)
    rec = Recorder({"protocol": "kraft"}, {"model": "append-log"}, states=True)
    sim = Simulator(p, seed, Faults.parse("all"), recorder=rec)
    sim.run(1500)
    sim.finish()
    return p.summary(sim), rec.steps, rec.ops


def test_same_seed_same_run() -> None:
    a, b = _run(7), _run(7)
    assert a == b
    assert _run(8)[1] != a[1]


def test_cli_writes_trace_and_history(tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate, ["--seed", "2", "--steps", "800", "--faults", "all",
                                           "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "invariants: all held" in result.output and "elections" in result.output
    trace = [json.loads(line) for line in (tmp_path / "trace.ndjson").read_text().splitlines()]
    assert trace[0] == {"v": 1, "kind": "trace", "protocol": "kraft", "spec": "KRaft",
                        "constants": trace[0]["constants"], "seed": 2, "variant": None}
    assert trace[0]["constants"]["Voters"] == [1, 2, 3] and trace[0]["constants"]["PreVote"] is True
    steps = trace[1:]
    assert [s["i"] for s in steps] == list(range(len(steps)))
    spec_actions = {s["action"] for s in steps if s["spec"]}
    assert {"Timeout", "BecomeCandidate", "BecomeLeader", "HandleFetchRequest", "ClientAppend", "Flush"} <= spec_actions
    fetch = next(s for s in steps if s["action"] == "HandleFetchRequest")
    assert fetch["args"]["m"]["mtype"] == "FetchRequest" and "mlastFetchedEpoch" in fetch["args"]["m"]
    assert set(fetch["state"]) >= {"currentEpoch", "votedFor", "leader", "role", "log", "flushedOffset",
                                   "highWatermark", "endOffsets", "epochStartOffset", "votesGranted", "messages"}
    history = [json.loads(line) for line in (tmp_path / "history.ndjson").read_text().splitlines()]
    assert history[0]["kind"] == "history" and history[0]["model"] == "append-log"
    ops = history[1:]
    assert [o["index"] for o in ops] == list(range(len(ops)))
    assert {o["type"] for o in ops} >= {"invoke", "ok"} and {o["f"] for o in ops} == {"send", "poll"}
    ok_sends = [o for o in ops if o["f"] == "send" and o["type"] == "ok"]
    assert ok_sends and all(o["value"][0] == o["offset"] for o in ok_sends)
    # Jepsen's final phase after the 800 events: every acknowledged send is read by some ok poll
    read = {v for o in ops if o["f"] == "poll" and o["type"] == "ok" for _, v in o["value"]}
    assert {o["value"][1] for o in ok_sends} <= read
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["verdict"] == "clean" and summary["events"] >= 800
    assert summary["final_phase"]["calm_at_event"] == 800 and summary["final_phase"]["final_reads"]["polls"] >= 3


def test_cli_count_and_violation_exit_code(tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate, ["--seed", "0", "--count", "3", "--steps", "1500", "--faults", "all",
                                           "--variant", "NoTruncateOnDivergence", "--no-states",
                                           "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "INVARIANT VIOLATED" in result.output
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["kraft-seed0", "kraft-seed1", "kraft-seed2"]
    overall = json.loads((tmp_path / "summary.json").read_text())
    assert overall["violations"] >= 1


@pytest.mark.parametrize("args,needle", [
    (["--faults", "bogus"], "unknown fault"),
    (["--variant", "Nope"], "unknown variant"),
    (["--protocol", "paxos"], "unknown protocol"),
])
def test_cli_usage_errors(args: list[str], needle: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(simulate, args + ["--out", str(tmp_path)])
    assert result.exit_code == 2 and needle in result.output


def test_a_violation_in_the_final_phase_is_the_runs_violation(tmp_path: Path) -> None:
    """UncleanElection seed 256 keeps every invariant for 600 events and breaks one while the final
    phase settles the cluster: exit 1 with the trace, history and summary written, no traceback (it
    used to escape from Simulator.finish)."""
    result = CliRunner().invoke(simulate, ["--protocol", "replication", "--variant", "UncleanElection", "--seed", "256",
                                           "--steps", "600", "--faults", "all", "--out", str(tmp_path)])
    assert result.exit_code == 1 and (result.exception is None or isinstance(result.exception, SystemExit)), result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["verdict"] == "violation" and summary["violation"]["event"] > 600
    assert summary["final_phase"]["calm_at_event"] == 600
    assert (tmp_path / "trace.ndjson").exists() and (tmp_path / "history.ndjson").exists()


def test_the_snapshot_fault_is_for_protocols_that_snapshot(tmp_path) -> None:
    """``all`` includes ``snapshot`` only where the plug-in offers it; naming it for another
    protocol is a usage error."""
    summary = run_once("replication", 3, 100, Faults.parse("all"), None, 3, None)
    assert "snapshot" not in summary["faults_enabled"]
    summary = run_once("kraft", 3, 400, Faults.parse("all"), None, 3, None)
    assert "snapshot" in summary["faults_enabled"] and summary["faults_injected"].get("snapshot", 0) > 0
    result = CliRunner().invoke(simulate, ["--protocol", "replication", "--faults", "drop,snapshot",
                                           "--steps", "10", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "takes no snapshots" in result.output
