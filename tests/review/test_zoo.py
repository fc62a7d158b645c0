"""``kraft zoo``: the verdict logic on fake cells (control fires -> 1, a variant missed by every
check -> 1, not observable is not a miss, budget -> 3, tool error -> 2), the cells built from each
check's real output shapes, the pytest plug-in and its config on a throwaway state machine, and one
real small run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kraft.protocols import by_name, declarations
from kraft.outcome import Verdict
from kraft.review.zoo import audit, conform, stateful, tlc
from kraft.review.zoo.config import PluginConfig
from kraft.review.zoo.plan import Budget, Plan
from kraft.review.zoo.state import Zoo
from kraft.review.zoo.verdict import (CAUGHT, CHECKS, CLEAN, ERROR, FIRED, INCONCLUSIVE, MISSED, UNAVAILABLE,
                                      UNOBSERVABLE, Cell, Row, zoo_verdict)

ROOT = Path(__file__).resolve().parents[2]


def row(variant: str | None, **statuses: str) -> Row:
    r = Row("groups", "ConsumerGroup", variant, "NoDoubleOwnership" if variant else None)
    for check in CHECKS:
        r.cells[check] = Cell(check, statuses.get(check, CAUGHT if variant else CLEAN))
    return r


def test_all_caught_and_control_clean_is_clean():
    v, s = zoo_verdict([row(None), row("A"), row("B", audit=MISSED, conform=UNAVAILABLE)], False)
    assert v is Verdict.CLEAN and v.exit_code == 0
    assert s.startswith("2 variants, all caught (2 by two or more checks)") and "control clean" in s


def test_control_cell_firing_is_a_violation():
    v, s = zoo_verdict([row(None, conform=FIRED), row("A")], False)
    assert v.exit_code == 1 and "control FIRED: groups conform" in s


def test_variant_missed_by_every_check_is_a_violation():
    rows = [row(None), row("A"), row("B", tlc=MISSED, hypothesis=MISSED, conform=MISSED, audit=MISSED)]
    v, s = zoo_verdict(rows, False)
    assert v.exit_code == 1 and "1 missed by every check (B)" in s


def test_not_observable_and_not_available_are_not_misses():
    # caught by one check, the others cannot see it: caught
    r = row("A", tlc=CAUGHT, hypothesis=UNOBSERVABLE, conform=UNAVAILABLE, audit=UNOBSERVABLE)
    assert r.outcome == CAUGHT and zoo_verdict([row(None), r], False)[0] is Verdict.CLEAN
    # every check that could see it missed it: still a miss (the unobservable cells do not excuse it)
    r = row("B", tlc=MISSED, hypothesis=MISSED, conform=UNOBSERVABLE, audit=UNAVAILABLE)
    assert r.outcome == MISSED and zoo_verdict([row(None), r], False)[0] is Verdict.VIOLATION
    # no check could observe it at all: nothing was decided, not a miss
    r = row("C", tlc=UNOBSERVABLE, hypothesis=UNAVAILABLE, conform=UNOBSERVABLE, audit=UNAVAILABLE)
    assert r.outcome == "undecided" and zoo_verdict([row(None), r], False)[0] is Verdict.INCONCLUSIVE


def test_budget_running_out_is_inconclusive():
    assert zoo_verdict([row(None), row("A")], True)[0].exit_code == 3
    # a variant left with only misses and a cell the budget did not reach is undecided, not missed
    r = row("A", tlc=MISSED, hypothesis=MISSED, conform=INCONCLUSIVE, audit=MISSED)
    v, s = zoo_verdict([row(None), r], True)
    assert r.outcome == "undecided" and v.exit_code == 3 and "budget ran out" in s
    # a control cell the budget did not reach leaves the control row undecided
    v, s = zoo_verdict([row(None, tlc=INCONCLUSIVE), row("A")], False)
    assert v.exit_code == 3 and "control not fired but not all decided (undecided: groups tlc)" in s


def test_tool_error_is_2_and_a_violation_outranks_it():
    assert zoo_verdict([row(None), row("A", audit=ERROR)], False)[0].exit_code == 2
    assert zoo_verdict([row(None, tlc=FIRED), row("A", audit=ERROR)], False)[0].exit_code == 1


def test_tlc_cells_from_check_json_shapes():
    run = {"spec": "ConsumerGroup", "size": "eager", "status": "ok", "violated": "NoDoubleOwnership",
           "expected": "NoDoubleOwnership", "seconds": 9.5, "counterexample": [{}] * 22, "verdict": "caught"}
    c = tlc.judge({"runs": [run]}, Path("x/check.json"), variant=True, seconds=10.0)
    assert (c.status, c.size, c.unit, c.seconds) == (CAUGHT, 21, "steps", 9.5)
    c = tlc.judge({"runs": [{**run, "status": "missed", "violated": None, "counterexample": []}]},
                         Path("x"), variant=True, seconds=3.0)
    assert c.status == MISSED
    c = tlc.judge({"runs": [{**run, "status": "violation"}]}, Path("x"), variant=False, seconds=1.0)
    assert c.status == FIRED
    c = tlc.judge({"runs": [{**run, "status": "inconclusive", "verdict": "TIMEOUT"}]}, Path("x"),
                         variant=True, seconds=1.0)
    assert c.status == INCONCLUSIVE


def test_hypothesis_cells_from_plugin_records():
    found = {"role": "variant", "outcome": "passed", "found": True, "steps": 7, "seconds": 1.5,
             "violation": "NoDoubleOwnership: c1 and c2 both own t-0", "test": "t::x[A]"}
    c = stateful.variant_cell(found, None)
    assert (c.status, c.size, c.evidence) == (CAUGHT, 7, "t::x[A]")
    not_found = {**found, "outcome": "failed", "found": False, "steps": None, "longrepr": "DID NOT RAISE"}
    assert stateful.variant_cell(not_found, None).status == MISSED
    # failing only because the budget capped the examples is inconclusive, not a miss
    assert stateful.variant_cell({**not_found, "capped": True}, 150).status == INCONCLUSIVE
    assert stateful.variant_cell({"outcome": "absent"}, None).status == UNAVAILABLE
    ctrl = [{"role": "control", "outcome": "passed", "seconds": 2.0}]
    assert stateful.control_cell(ctrl, 0, "log").status == CLEAN
    assert stateful.control_cell(ctrl + [{"outcome": "failed", "test": "t"}], 1, "log").status == FIRED
    assert stateful.control_cell([], None, "log").status == INCONCLUSIVE


def test_conform_and_audit_cells():
    p = declarations()[0]
    v = p.variants[0]
    rejected = [{"trace": "a", "verdict": "accepted", "seconds": 1},
                {"trace": "b", "verdict": "rejected", "line": 40, "action": "X", "kind": "state_mismatch", "seconds": 2},
                {"trace": "c", "verdict": "rejected", "line": 12, "action": "Y", "kind": "disabled", "seconds": 3}]
    c = conform.cell(v, rejected)
    assert (c.status, c.size, c.evidence) == (CAUGHT, 12, "c:12")
    assert conform.cell(None, rejected).status == FIRED
    assert conform.cell(v, rejected[:1]).status == MISSED
    assert conform.cell(None, rejected[:1]).status == CLEAN
    hist = [{"history": "h1", "valid": False, "ops": 300, "anomalies": [{"kind": "lost-write"}], "checks": ["kafka"]},
            {"history": "h2", "valid": False, "ops": 90, "anomalies": [{"kind": "unseen"}], "checks": ["kafka"]},
            {"history": "h3", "valid": True, "ops": 50, "anomalies": [], "checks": ["kafka"]}]
    c = audit.cell(p, v, hist, {"unseen"}, 0.5)
    assert (c.status, c.size, c.evidence) == (CAUGHT, 300, "h1")  # "unseen" informational (--allow-unseen)
    assert audit.cell(p, v, hist[1:], {"unseen"}, 0.5).status == MISSED
    assert audit.cell(p, None, hist[1:], {"unseen"}, 0.5).status == CLEAN
    assert audit.cell(p, v, [{"history": "h", "valid": "unknown", "malformed": "x", "checks": []}], set(),
                      0.5).status == INCONCLUSIVE
    # read, but no check applies (no Kafka ops, a model the audit does not know): not available
    unchecked = [{"history": "h", "valid": "unknown", "ops": 5, "anomalies": [], "checks": [],
                  "info": {"error": "no check applies"}}]
    assert audit.cell(p, v, unchecked, set(), 0.5).status == UNAVAILABLE
    assert audit.cell(p, None, unchecked, set(), 0.5).status == UNAVAILABLE


def test_declared_unobservable_reasons_are_sentences():
    for p in declarations():
        for v in p.variants:
            for check, why in v.unobservable.items():
                assert check in CHECKS, f"{p.name} {v.name}: unknown check {check!r}"
                assert len(why.split()) >= 5, f"{p.name} {v.name} {check}: say why, not just that"


FAKE_MACHINE = textwrap.dedent("""
    import pytest
    from hypothesis import settings
    from hypothesis.stateful import RuleBasedStateMachine, rule, invariant, run_state_machine_as_test

    class Counter(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.n = 0
        @rule()
        def inc(self):
            self.n += 1
        @invariant()
        def small(self):
            assert self.n < 3, "Bounded: n reached 3"

    @pytest.mark.parametrize("variant", ["Buggy"])
    def test_variant_is_caught(variant):
        with pytest.raises(AssertionError):
            run_state_machine_as_test(Counter, settings=settings(max_examples=50, database=None))

    @pytest.mark.parametrize("variant", ["Hidden"])
    def test_variant_is_caught_never(variant):
        run_state_machine_as_test(Counter, settings=settings(max_examples=5, stateful_step_count=2,
                                                             database=None))

    def test_control():
        pass
""")


def run_plugin(tmp_path: Path, *options: str) -> subprocess.CompletedProcess:
    """pytest with the zoo's plug-in over a throwaway state machine's tests."""
    test_file = tmp_path / "test_fake_machine.py"
    test_file.write_text(FAKE_MACHINE)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "kraft.review.zoo.pytest_plugin", *options,
                           "-p", "no:cacheprovider", "-q", "-m", "", "--rootdir", str(tmp_path), str(test_file)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def plugin_records(tmp_path: Path, **config: object) -> dict[str, dict]:
    """The plug-in's records of a run with ``config`` (the fake machine's variants, all selected)."""
    out = tmp_path / "rec.jsonl"
    fields = {"records": str(out), "variants": ("Buggy", "Hidden", "Absent"),
              "selected": ("Buggy", "Hidden", "Absent"), **config}
    PluginConfig(**fields).write(tmp_path / "zoo-config.json")
    proc = run_plugin(tmp_path, "--zoo-config", str(tmp_path / "zoo-config.json"))
    assert out.exists(), proc.stdout + proc.stderr
    return {r.get("variant") or r["test"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_pytest_plugin_records_the_falsifying_example(tmp_path):
    recs = plugin_records(tmp_path)
    assert recs["Buggy"]["found"] and recs["Buggy"]["steps"] == 3 and recs["Buggy"]["outcome"] == "passed", recs
    assert "Bounded" in recs["Buggy"]["violation"] and recs["Buggy"]["shrunk"]
    assert recs["Hidden"]["outcome"] == "passed" and not recs["Hidden"]["found"] and not recs["Hidden"]["capped"]
    assert recs["Absent"]["outcome"] == "absent"
    control = [r for r in recs.values() if r.get("role") == "control"]
    assert [r["test"].rsplit("::", 1)[1] for r in control] == ["test_control"] and not control[0]["machine"]
    assert recs["Buggy"]["machine"]


def test_pytest_plugin_runs_what_its_config_selects_within_its_cap(tmp_path):
    recs = plugin_records(tmp_path, selected=("Hidden",), control=False, max_examples=2, shrink=False)
    assert set(recs) == {"Hidden"}
    assert recs["Hidden"]["capped"] and recs["Hidden"]["shrunk"] is False


def test_pytest_plugin_without_its_option_does_nothing(tmp_path):
    proc = run_plugin(tmp_path)
    assert proc.returncode == 0 and "3 passed" in proc.stdout, proc.stdout + proc.stderr


def test_pytest_plugin_names_a_bad_config(tmp_path):
    bad = tmp_path / "zoo-config.json"
    bad.write_text('{"records": "r.jsonl",\n "variants": [}')
    proc = run_plugin(tmp_path, "--zoo-config", str(bad))
    assert proc.returncode == 4 and f"{bad}: line 2" in proc.stderr, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "r.jsonl").exists()


def test_plugin_config_round_trip_and_errors(tmp_path):
    path = tmp_path / "c.json"
    config = PluginConfig(records="r.jsonl", variants=("A", "B"), selected=("B",), max_examples=7, shrink=False)
    config.write(path)
    assert PluginConfig.read(path) == config
    for text, says in [("[1]", "a JSON object"), ('{"records": "r", "variants": [], "selected": [], "x": 1}',
                                                    "unknown field(s) x"),
                       ('{"records": "r", "variants": "AB", "selected": []}', "variants"),
                       ('{"records": "r", "variants": []}', "selected")]:
        path.write_text(text)
        with pytest.raises(ValueError, match=re.escape(says)) as err:
            PluginConfig.read(path)
        assert str(err.value).startswith(f"{path}: ")
    with pytest.raises(ValueError, match="cannot read"):
        PluginConfig.read(tmp_path / "absent.json")


@pytest.mark.parametrize("name", ["nope"])
def test_unknown_protocol_is_a_usage_error(name, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "kraft.cli", "zoo", "--protocol", name, "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "unknown protocol 'nope'" in proc.stderr and "Traceback" not in proc.stderr


def test_reused_tlc_runs_stand_in_for_the_zoos_own(tmp_path):
    runs = [{"spec": "ConsumerGroup", "size": "eager", "variant": "EagerNoRevokeBeforeJoin", "status": "ok",
             "violated": "NoDoubleOwnership", "seconds": 8.0, "counterexample": [{}] * 22},
            {"spec": "ConsumerGroup", "size": "cooperative", "variant": "CooperativeAssignWithoutRevoke",
             "status": "skipped"},
            {"spec": "ConsumerGroup", "size": "small", "variant": None, "status": "ok", "distinct": 192539,
             "seconds": 8.1}]
    (tmp_path / "check.json").write_text(json.dumps({"command": "check", "runs": runs}))
    (tmp_path / "broken.json").write_text("{not json")
    reused = tlc.reused_runs([tmp_path / "check.json", tmp_path / "broken.json", tmp_path / "absent.json"])
    assert set(reused) == {("ConsumerGroup", "EagerNoRevokeBeforeJoin"), ("ConsumerGroup", None)}
    p = by_name("groups")
    z = Zoo([p], tmp_path, Budget(None), Plan())
    z.reused = reused
    c = tlc.variant_cell(z, p, p.variant("EagerNoRevokeBeforeJoin"))
    assert (c.status, c.size, c.seconds) == (CAUGHT, 21, 8.0)
    assert tlc.control_cell(z, p).status == CLEAN


def test_review_audits_the_metadata_logs_of_the_protocols_that_keep_them(tmp_path):
    from kraft.review import pipeline

    stages = {s.name: s for s in pipeline._stages(tmp_path, 2, 100, ("groups", "replication"))}
    assert "--metadata-log" in stages["simulate-replication"].argv
    assert "--metadata-log" not in stages["simulate-groups"].argv
    argv = stages["audit-metadata"].argv
    assert argv == ("audit-metadata", str(tmp_path / "sim" / "replication"), "--min-isr", "2",
                    "--out", str(tmp_path / "audit-metadata"))
    assert "audit-metadata" not in {s.name for s in pipeline._stages(tmp_path, 2, 100, ("groups",))}


def test_review_runs_the_zoo_with_its_budget_and_model_check_results(tmp_path):
    from kraft.review import pipeline

    stages = {s.name: s for s in pipeline._stages(tmp_path, 1, 100, ("groups",), zoo_budget=123)}
    assert "variants" not in stages
    argv = stages["zoo"].argv
    assert argv[:3] == ("zoo", "--budget", "123") and stages["zoo"].output == "zoo/zoo.json"
    reuse = [argv[i + 1] for i, a in enumerate(argv) if a == "--reuse-tlc"]
    assert str(tmp_path / "check" / "ConsumerGroup" / "small" / "check.json") in reuse
