"""``kraft zoo --master``: the cluster's tasks (one chain per row, each Hypothesis and TLC run) fill
in every row's cells once, a task runs in a zoo of its own rows and its cells travel back to the
driver; on a standalone cluster of two workers the matrix equals the local run's (which keeps its
budget)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

from kraft.outcome import read_header
from kraft.protocols import by_name, declarations
from kraft.review.zoo.plan import CHAIN, HYPOTHESIS, ROW, TLC, Budget, Plan, cluster_tasks, rows, tasks
from kraft.review.zoo.remote import merge, payload, run_payload
from kraft.review.zoo.run import fill_unreached
from kraft.review.zoo.state import Zoo
from kraft.review.zoo.verdict import CAUGHT, CLEAN, ERROR, INCONCLUSIVE, UNOBSERVABLE
from tests.spark_cluster import client_env

ROOT = Path(__file__).resolve().parents[2]


def test_cluster_tasks_split_the_chain_per_row_and_keep_the_others():
    ps = declarations()
    ct = cluster_tasks(ps)
    all_rows = [(r.protocol, r.variant) for r in rows(ps)]
    assert [k for t in ct if t.job == ROW for k in t.keys()] == all_rows
    assert not [t for t in ct if t.job == CHAIN]
    local = [(t.job, t.name) for t in tasks(ps) if t.job != CHAIN]
    assert [(t.job, t.name) for t in ct if t.job != ROW] == local
    # every row's tlc cell comes from exactly one TLC task, its hypothesis cell from one Hypothesis task
    for job in (TLC, HYPOTHESIS):
        keys = [k for t in ct if t.job == job for k in t.keys()]
        assert sorted(keys, key=str) == sorted(all_rows, key=str), job


def test_a_zoo_of_some_rows_fills_in_only_those(tmp_path):
    p = by_name("groups")
    v = p.variants[0]
    z = Zoo([p], tmp_path, Budget(None), Plan(), keys=[(p.name, v.name)])
    assert [(r.protocol, r.variant) for r in z.rows] == [(p.name, v.name)]
    assert z.members(p) == [v]
    assert Zoo([p], tmp_path, Budget(None), Plan()).members(p) == [None, *p.variants]


def test_row_tasks_run_their_audits_and_conformance_in_directories_of_their_own(tmp_path):
    """A cluster runs the row tasks at once: two rows' audits must not share an output directory."""
    p = by_name("groups")
    whole = Zoo([p], tmp_path, Budget(None), Plan())
    a, b = (Zoo([p], tmp_path, Budget(None), Plan(), keys=[(p.name, v)]) for v in (None, p.variants[0].name))
    assert whole.run_dir("audit") == tmp_path / "audit"
    dirs = {z.run_dir("audit") for z in (whole, a, b)} | {z.run_dir("conform", p.name) for z in (whole, a, b)}
    assert len(dirs) == 6


def test_a_tlc_task_runs_in_its_own_zoo_and_its_cell_travels_back(tmp_path):
    """A reused check.json stands in for TLC (no JVM): the task's payload survives pickling, the
    executor's cell reaches the driver's zoo, and the cells no task filled in are errors."""
    p = by_name("groups")
    v = p.variant("EagerNoRevokeBeforeJoin")
    run = {"spec": p.spec_module, "size": "eager", "variant": v.name, "status": "ok",
           "violated": "NoDoubleOwnership", "seconds": 8.0, "counterexample": [{}] * 22}
    (tmp_path / "check.json").write_text(json.dumps({"command": "check", "runs": [run]}))
    plan = Plan(reuse_tlc=(tmp_path / "check.json",))
    index = next(i for i, t in enumerate(cluster_tasks([p])) if t.job == TLC and t.variant == v)
    task = pickle.loads(pickle.dumps(payload([p.name], index, tmp_path, plan, Budget(600))))
    result = run_payload(task)
    assert result["cells"] == [[p.name, v.name, result["cells"][0][2]]] and not result["errors"]
    driver = Zoo([p], tmp_path, Budget(None), plan)
    merge(driver, result)
    fill_unreached(driver)
    cell = driver.row(p.name, v.name).cells["tlc"]
    assert (cell.status, cell.size, cell.seconds) == (CAUGHT, 21, 8.0)
    assert driver.row(p.name, None).cells["tlc"].status == ERROR  # its task never ran


def test_a_task_past_the_deadline_reports_budget_cells(tmp_path):
    p = by_name("groups")
    index = next(i for i, t in enumerate(cluster_tasks([p])) if t.job == TLC and t.variant is None)
    task = payload([p.name], index, tmp_path, Plan(), Budget(1))
    task["deadline"] -= 10
    result = run_payload(task)
    assert result["exhausted"] and [c[2]["status"] for c in result["cells"]] == [INCONCLUSIVE]
    driver = Zoo([p], tmp_path, Budget(None), Plan())
    merge(driver, result)
    assert driver.budget.exhausted


# ------------------------------------------------------------------------------ on Spark

BUDGET = 45


def _zoo(out: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    proc = subprocess.run([sys.executable, "-m", "kraft.cli", "zoo", "--protocol", "groups", "--budget", str(BUDGET),
                           "--no-spark", "--out", str(out), *extra], cwd=ROOT, capture_output=True,
                          text=True, timeout=240, env=env)
    assert proc.returncode in (0, 3), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads((out / "zoo.json").read_text())


@attrs.frozen
class LocalRun:
    proc: subprocess.CompletedProcess
    doc: dict
    seconds: float


# one local run serves the budget test and the cluster's comparison (the Spark worker runs both)
@pytest.fixture(scope="module")
def local_zoo(tmp_path_factory: pytest.TempPathFactory) -> LocalRun:
    start = time.monotonic()
    proc, doc = _zoo(tmp_path_factory.mktemp("local-zoo"))
    return LocalRun(proc, doc, time.monotonic() - start)


def _decided(doc: dict) -> dict[tuple, tuple]:
    """(variant, check) -> (status, size) of every cell the budget did not stop."""
    return {(r["variant"], c): (cell["status"], cell["size"]) for r in doc["rows"]
            for c, cell in r["cells"].items() if not cell["budget"]}


def _assert_sound(doc: dict) -> None:
    rows = doc["rows"]
    assert [r["variant"] for r in rows] == [None, *by_name("groups").variant_names]
    assert all(len(r["cells"]) == 4 for r in rows)
    statuses = {cell["status"] for r in rows for cell in r["cells"].values()}
    assert not statuses & {"missed", "fired", "error"}, statuses
    # the budget may stop a row's cells under load; what was decided is right
    assert {r["outcome"] for r in rows[1:]} <= {"caught", "undecided"}, doc["summary"]
    assert any(r["caught_by"] for r in rows[1:]), doc["summary"]


@pytest.mark.tlc
@pytest.mark.xdist_group("spark")
def test_real_groups_run_with_a_short_budget(local_zoo: LocalRun) -> None:
    """The whole chain on ConsumerGroup with a 45 s budget and the in-process audit: whatever the
    load, the run ends near its budget, writes zoo.json with the shared header, and the cells it
    decided are right (the variants caught, the control never fired)."""
    proc, doc = local_zoo.proc, local_zoo.doc
    _, verdict, summary, code = read_header(doc, "zoo.json")
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert (code == 3) == doc["budget_exhausted"] or code == 0
    assert local_zoo.seconds < BUDGET + 40, f"the budget was not kept: {local_zoo.seconds:.0f}s"
    _assert_sound(doc)
    rows = doc["rows"]
    # the audit reads the groups' Kafka-workload histories: the control clean, the variants declared
    # not observable (double ownership and stale commits leave no Jepsen Kafka anomaly)
    assert rows[0]["cells"]["audit"]["status"] in (CLEAN, INCONCLUSIVE), rows[0]["cells"]["audit"]
    assert all(r["cells"]["audit"]["status"] in (UNOBSERVABLE, INCONCLUSIVE) for r in rows[1:]), \
        [r["cells"]["audit"] for r in rows[1:]]
    assert "kraft zoo" in proc.stdout  # the matrix was printed


@pytest.mark.spark
@pytest.mark.tlc
def test_standalone_cluster_zoo_has_the_local_zoos_matrix(tmp_path: Path, standalone_cluster: str,
                                                          local_zoo: LocalRun) -> None:
    """The same plan locally and as tasks of a standalone cluster of two workers: every cell both
    runs decided is the same, with the same size (the simulations are seeded, Hypothesis runs with
    a fixed hash seed, TLC with one worker), and each run catches every variant."""
    proc, spark = _zoo(tmp_path / "zoo", "--master", standalone_cluster, env=client_env())
    _assert_sound(spark)
    assert spark["exit_code"] == proc.returncode
    local = local_zoo.doc
    both = _decided(local).keys() & _decided(spark).keys()
    # the Hypothesis run (second in line locally, seconds long) decides every row in both runs;
    # the budget may stop other cells in one run and not the other
    assert {(v, "hypothesis") for v in [None, *by_name("groups").variant_names]} <= both
    assert len(both) >= 8, sorted(both, key=str)
    assert {k: _decided(spark)[k] for k in both} == {k: _decided(local)[k] for k in both}


@pytest.mark.spark  # Spark's JVM starts before it rejects the master
def test_a_master_spark_cannot_reach_is_a_clear_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "kraft.cli", "zoo", "--protocol", "groups", "--budget", "5",
                           "--master", "nonsense://x", "--out", str(tmp_path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "kraft zoo:" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
