"""``kraft zoo --master``: the cluster's tasks (one chain per row, each Hypothesis and TLC run) fill
in every row's cells once, a task runs in a zoo of its own rows and its cells travel back to the
driver; on ``local[2]`` the matrix equals the local run's, and on a standalone cluster the zoo runs."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from kraft.protocols import by_name, declarations
from kraft.review.zoo.plan import CHAIN, HYPOTHESIS, ROW, TLC, Budget, Plan, cluster_tasks, rows, tasks
from kraft.review.zoo.remote import merge, payload, run_payload
from kraft.review.zoo.run import fill_unreached
from kraft.review.zoo.state import Zoo
from kraft.review.zoo.verdict import CAUGHT, CLEAN, ERROR, INCONCLUSIVE

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
