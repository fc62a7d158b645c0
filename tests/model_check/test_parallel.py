"""Parallel simulation (model_check.parallel), the replay of its counterexamples (model_check.replay)
and ``kraft check --simulate --master`` on Spark (model_check.spark).

The JVM-free tests build the replay module and combine hand-written round rows; the TLC tests
replay a real counterexample (and a tampered one, and one under the correct protocol) and run the
waves serially; the Spark tests run the CLI on ``local[2]`` and on a standalone cluster of two
workers. The variant is ConsumerGroup's EagerNoRevokeBeforeJoin at the ``medium`` size: its
counterexample is found in the first round of every seed tried.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from click.testing import CliRunner

from model_check import load_manifests, parse_tool_output
from model_check.cli import check
from model_check.parallel import Task, _combine, run_cfg_text, run_task, simulate
from model_check.replay import model_values, raw_states, replay, replay_cfg, replay_module
from model_check.specs import spec_dir
from tests.spark_cluster import client_env

SPEC, SIZE, VARIANT, INVARIANT = "ConsumerGroup", "medium", "EagerNoRevokeBeforeJoin", "NoDoubleOwnership"


def _manifest():
    return load_manifests(spec_dir())[SPEC]


# ------------------------------------------------------------------------------ no JVM


def test_model_values_are_the_cfgs_unassigned_identifiers() -> None:
    cfg = ("SPECIFICATION Spec\nCONSTANTS\n    Consumers = {c1, c2, c3}\n    Static = {c3}\n    Nil = Nil\n"
           "    Any = TRUE\n    Acks <- AnyAcks\nCONSTANT Modes = {\"eager\"}\nINVARIANT TypeOK\n")
    assert model_values(cfg) == ["c1", "c2", "c3"]


def test_replay_module_pins_every_state_and_keeps_the_one_check() -> None:
    tla = "Spec == MyInit /\\ [][MyNext]_vars\n"
    mod = replay_module("M", tla, ["/\\ x = 1\n/\\ y = c1", "/\\ x = 2\n/\\ y = c1"], ["c1"], deadlock=True)
    assert "EXTENDS M, TLC, Naturals" in mod and "CONSTANTS c1" in mod
    assert "ReplayInit == MyInit /\\ replayStep = 1 /\\ ReplayState1" in mod
    assert "/\\ MyNext" in mod and "replayStep = 1 /\\ ReplayState2'" in mod
    assert "ReplayNotDeadlocked == replayStep < 2 \\/ ENABLED MyNext" in mod
    cfg = replay_cfg("SPECIFICATION Spec\nCONSTANTS\n    N = {c1}\nCONSTRAINT Bounds\nINVARIANT A\nINVARIANT B\n",
                     ["c1"], "B", "invariant")
    assert cfg == "CONSTANTS\n    N = {c1}\n    c1 = c1\nINIT ReplayInit\nNEXT ReplayNext\nINVARIANT B\n"


def _row(i: int, r: int, outcome: str = "ok", states: int = 100, finished: bool = True, **kw) -> dict:
    return {"seed_index": i, "round": r, "tlc_seed": i + 2 * r, "outcome": outcome, "violated": None,
            "states": states, "seconds": 1.0, "finished": finished, "errors": [], "length": 0, "output": "", **kw}


def test_combine_sums_the_rounds_states_per_seed_and_in_total() -> None:
    rows = [_row(0, 0, states=10), _row(1, 0, states=20), _row(0, 1, states=30), _row(1, 1, states=0, finished=False)]
    par = _combine(_manifest(), "", rows, 2, 2, 5.0, 5.0)
    assert par.result.outcome == "ok"
    assert [s["states"] for s in par.seeds] == [40, 20]
    assert par.result.states == 60 == sum(s["states"] for s in par.seeds)
    assert [s["outcome"] for s in par.seeds] == ["ok", "budget"]
    assert par.seeds[0]["tlc_seeds"] == [0, 2]


def test_a_failed_seed_is_an_error_and_nothing_finished_is_inconclusive() -> None:
    failed = _combine(_manifest(), "", [_row(0, 0), _row(1, 0, "error", 0, False, errors=["TLCError: no"])], 2, 1, 1.0, 9.0)
    assert failed.result.outcome == "error" and failed.seeds[1]["outcome"] == "error"
    assert any("seed 1: TLCError: no" in e for e in failed.result.errors)
    unsure = _combine(_manifest(), "", [_row(0, 0, states=0, finished=False), _row(1, 0, states=0, finished=False)],
                      2, 1, 9.0, 9.0)
    assert unsure.result.outcome == "timeout"


# ------------------------------------------------------------------------------ TLC


def _found(m, cfg_text: str, tlc_seed: int = 3) -> dict:
    task = Task(0, 0, tlc_seed, {f.name: f.read_text() for f in m.directory.glob("*.tla")}, m.module,
                Path(m.sizes[SIZE].cfg).name, cfg_text, m.sizes[SIZE].depth or 100, 500,
                m.sizes[SIZE].check_deadlock, (), 60.0)
    return run_task(task)


@pytest.mark.tlc
def test_replay_confirms_a_counterexample_and_rejects_a_tampered_one() -> None:
    m = _manifest()
    cfg = run_cfg_text(m, SIZE, VARIANT)
    row = _found(m, cfg)
    assert row["outcome"] == "invariant" and row["violated"] == INVARIANT and row["finished"]
    result = parse_tool_output(row["output"], cfg_text=cfg)
    n = len(raw_states(result.output))
    assert n == len(result.counterexample) > 2
    ok = replay(m.tla, cfg, result)
    assert ok.confirmed and ok.states == n, ok
    # the same behaviour under the correct protocol: the buggy step is not a spec step
    correct = replay(m.tla, run_cfg_text(m, SIZE, None), result)
    assert not correct.confirmed and correct.states < n, correct
    # a state removed from the middle: the step over the gap is no step of the spec
    lines = result.output.split("@!@!@STARTMSG 2217:4 @!@!@")
    tampered = attrs.evolve(result, output="@!@!@STARTMSG 2217:4 @!@!@".join(lines[:2] + lines[3:]))
    bad = replay(m.tla, cfg, tampered)
    assert not bad.confirmed and bad.states < n - 1, bad


@pytest.mark.tlc
def test_serial_waves_aggregate_and_report_the_shortest_replayed_counterexample() -> None:
    m = _manifest()
    par = simulate(m, SIZE, VARIANT, seeds=2, budget=60, map_wave=lambda ts: [run_task(t) for t in ts])
    assert par.result.outcome == "invariant" and par.result.violated == INVARIANT
    assert par.result.states == sum(s["states"] for s in par.seeds) > 0
    lengths = [s["length"] for s in par.seeds if s["outcome"] == "violation"]
    assert len(par.result.counterexample) == min(lengths)
    assert par.replay is not None and par.replay.confirmed


# ------------------------------------------------------------------------------ Spark


def _check(tmp_path: Path, master: str, *extra: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "kraft.cli", "check", SPEC, "--size", SIZE, "--simulate",
                          "--master", master, "--timeout", "60", "--out", str(out), "--quiet-trace", *extra],
                         capture_output=True, text=True, timeout=300, env=env)
    doc = json.loads((out / "check.json").read_text()) if (out / "check.json").is_file() else {}
    return run, doc


def _assert_caught(run: subprocess.CompletedProcess, doc: dict, seeds: int) -> None:
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert doc["exit_code"] == 0 and doc["summary"] == "1 of 1 bug variant caught"
    r = doc["runs"][0]
    assert r["status"] == "ok" and r["violated"] == INVARIANT
    cl = r["cluster"]
    assert len(cl["seeds"]) == seeds
    assert r["states"] == sum(s["states"] for s in cl["seeds"]) > 0
    assert cl["replay"]["confirmed"] and cl["replay"]["states"] == len(r["counterexample"])
    shortest = min(s["length"] for s in cl["seeds"] if s["outcome"] == "violation")
    assert len(r["counterexample"]) == shortest


@pytest.mark.spark
@pytest.mark.tlc
def test_local_master_finds_and_replays_a_variant(tmp_path: Path) -> None:
    from spark_validation.session import java_problem

    if java_problem():
        pytest.skip(java_problem())
    run, doc = _check(tmp_path, "local[2]", "--variant", VARIANT)
    _assert_caught(run, doc, seeds=2)


@pytest.mark.spark
@pytest.mark.tlc
def test_a_seed_whose_tlc_fails_is_reported_and_exits_2(tmp_path: Path) -> None:
    from spark_validation.session import java_problem

    if java_problem():
        pytest.skip(java_problem())
    bad = tmp_path / "broken.jar"
    bad.write_text("not a jar")
    run, doc = _check(tmp_path, "local[2]", "--variant", VARIANT, env=dict(os.environ, KRAFT_TLA2TOOLS=str(bad)))
    assert run.returncode == 2, run.stdout[-2000:] + run.stderr[-2000:]
    r = doc["runs"][0]
    assert doc["exit_code"] == 2 and r["status"] == "error"
    assert [s["outcome"] for s in r["cluster"]["seeds"]] == ["error", "error"]
    assert all("TLC did not start" in s["errors"][0] for s in r["cluster"]["seeds"])


@pytest.mark.spark
@pytest.mark.tlc
def test_standalone_cluster_of_two_workers_finds_and_replays_a_variant(tmp_path: Path,
                                                                         standalone_cluster: str) -> None:
    url = standalone_cluster
    run, doc = _check(tmp_path, url, "--variant", VARIANT, env=client_env())
    _assert_caught(run, doc, seeds=2)
    assert doc["runs"][0]["cluster"]["master"] == url


# ------------------------------------------------------------------------------ CLI, no JVM


def _invoke(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(check, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.stdout, res.stderr


def test_seeds_without_master_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _invoke(SPEC, "--size", SIZE, "--seeds", "2", "--out", str(tmp_path))
    assert code == 2 and "--seeds needs --master" in err


def test_master_without_java_is_a_tool_error_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, err = _invoke(SPEC, "--size", SIZE, "--variant", VARIANT, "--master", "local[2]", "--out", str(tmp_path))
    assert code == 2 and "java not found" in err and "Traceback" not in out + err
    run = json.loads((tmp_path / "check.json").read_text())["runs"][0]
    assert run["verdict"] == "TOOL ERROR" and run["mode"] == "simulate"
