"""TLC decides traces of the toy Relay protocol: acceptance, rejection at the exact first divergent
line with the disagreeing variables, composed steps, corrupt input, batching and parallel runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.traces.helpers import lines_of, without_variable, write
from traces.check import Options, check_paths

pytestmark = pytest.mark.tlc
FAST = Options(batch=64, jobs=2)


def spec_line_numbers(lines: list[str]) -> list[int]:
    return [n for n, x in enumerate(lines, 1) if n > 1 and json.loads(x).get("spec", True)]


def first_bug_line(lines: list[str], variant: str) -> int:
    """Where the bug acts, computed from the logged pre-states (independently of TLC)."""
    prev = None
    for n, x in enumerate(lines, 1):
        if n == 1:
            continue
        r = json.loads(x)
        if variant == "BuggyMax" and r["action"] == "Receive":
            if prev["val"][str(r["node"])] > r["args"]["msg"]["v"]:
                return n
        if variant == "ForgetOnRestart" and r["action"] == "Restart":
            if prev["saved"][str(r["node"])] != 0:
                return n
        prev = r["state"]
    raise AssertionError("the bug never acted in this trace")


def test_correct_traces_all_seeds_and_faults_are_accepted(relay, tmp_path):
    paths = [write(tmp_path / f"s{s}.ndjson", lines_of(relay, s, 120, faults=bool(s % 3)))
             for s in range(12)]
    res = check_paths(paths, FAST)
    assert [r.verdict for r in res] == ["accepted"] * 12, [r.message for r in res]
    assert all(r.checked == r.events > 0 for r in res)
    assert sum(r.skipped for r in res) > 0  # Tick/Down steps were skipped, and counted
    assert all(r.tlc_runs == 1 for r in res)  # one batched run, nothing re-run


def test_partial_projection_is_explored(relay, tmp_path):
    """Without `net` in the logged state, TLC must explore the unlogged variable."""
    out = without_variable(lines_of(relay, 4, 100), "net")
    (r,) = check_paths([write(tmp_path / "p.ndjson", out)], FAST)
    assert r.verdict == "accepted", r.message


@pytest.mark.parametrize("variant", ["BuggyMax", pytest.param("ForgetOnRestart", marks=pytest.mark.slow)])
def test_bug_variants_rejected_where_the_bug_acts(relay, tmp_path, variant):
    paths, expected = [], []
    for seed in (1, 5):
        ls = lines_of(relay, seed, 400, variant=variant)
        paths.append(write(tmp_path / f"{variant}{seed}.ndjson", ls))
        expected.append(first_bug_line(ls, variant))
    res = check_paths(paths, FAST)
    for r, line in zip(res, expected):
        assert r.verdict == "rejected" and r.kind == "state_mismatch", r.message
        assert r.line == line, (r.line, line, r.message)
        assert r.disagree == ["val"]
        assert r.variant == variant
        assert r.action == ("Receive" if variant == "BuggyMax" else "Restart")
        assert f":{line}: " in r.message and "val" in r.message
        assert r.mismatches[0]["var"] == "val" and r.mismatches[0]["logged"] == json.loads(
            Path(r.trace).read_text().splitlines()[line - 1])["state"]["val"]


def _corrupt_cases(relay, tmp_path):
    base = lines_of(relay, 11, 150)
    spec = spec_line_numbers(base)
    cases = {}

    # 1. a wrong variable value at a spec step
    ls = list(base)
    n = spec[10]
    r = json.loads(ls[n - 1])
    r["state"]["saved"]["2"] += 7
    ls[n - 1] = json.dumps(r)
    cases["wrong_value"] = (ls, dict(line=n, kind="state_mismatch", disagree=["saved"]))

    # 2. a skipped step: delete a Send whose next line is a spec step of another kind
    for k, n in enumerate(spec[:-1]):
        r, nxt = json.loads(base[n - 1]), json.loads(base[n])
        if r["action"] == "Send" and nxt.get("spec") and nxt["action"] != "Send":
            break
    ls = base[: n - 1] + base[n:]
    cases["skipped_step"] = (ls, dict(line=n, kind="state_mismatch", disagree=["net"]))

    # 3. a reordered pair: a Bump and the next spec step (of another node) swapped
    for n in spec:
        r, nxt = json.loads(base[n - 1]), json.loads(base[n])
        if r["action"] == "Bump" and nxt.get("spec") and nxt["node"] != r["node"] and nxt["action"] in ("Save", "Bump"):
            break
    ls = list(base)
    ls[n - 1], ls[n] = ls[n], ls[n - 1]
    cases["reordered"] = (ls, dict(line=n, kind="state_mismatch"))

    # 4. an unknown action
    ls = list(base)
    n = spec[20]
    r = json.loads(ls[n - 1])
    r["action"] = "Teleport"
    ls[n - 1] = json.dumps(r)
    cases["unknown_action"] = (ls, dict(line=n, kind="unknown_action"))

    # 5. a receive of a message that was never sent: not enabled
    ls = list(base)
    n = spec[15]
    r = json.loads(ls[n - 1])
    r.update(action="Receive", args={"msg": {"src": 3, "dst": r["node"], "v": 999}})
    ls[n - 1] = json.dumps(r)
    cases["never_sent"] = (ls, dict(line=n, kind="not_enabled", guard=("message in net", "false")))

    # 6. a composed step whose second half cannot happen (send to itself)
    ls = list(base)
    n = spec[12]
    r = json.loads(ls[n - 1])
    r.update(action="BumpAndSend", args={"by": 1, "dst": r["node"]})
    ls[n - 1] = json.dumps(r)
    cases["composed_second_half"] = (ls, dict(line=n, kind="not_enabled", part="Send",
                                              guard=("destination is another node", "false")))

    # 7. malformed JSON in the middle, 8. truncated file
    ls = list(base)
    n = spec[30]
    ls[n - 1] = ls[n - 1][:-5] + ",,}"
    cases["malformed"] = (ls, dict(line=n, kind="malformed_json"))
    text = "".join(x + "\n" for x in base)
    cut = text.rfind("\n", 0, len(text) // 2) + 40
    cases["truncated"] = (text[:cut], dict(line=text[:cut].count("\n") + 1, kind="truncated"))
    # 9. an earlier divergence wins over a later unusable line
    ls = list(cases["wrong_value"][0])
    ls[spec[40] - 1] = "{not json"
    cases["earlier_divergence_first"] = (ls, dict(line=spec[10], kind="state_mismatch"))
    return cases


def test_corrupt_traces_are_rejected_precisely(relay, tmp_path):
    cases = _corrupt_cases(relay, tmp_path)
    paths = []
    for name, (content, _) in cases.items():
        p = tmp_path / f"{name}.ndjson"
        if isinstance(content, str):
            p.write_text(content)
        else:
            write(p, content)
        paths.append(p)
    res = check_paths(paths, FAST)
    for (name, (_, exp)), r in zip(cases.items(), res):
        assert r.verdict == "rejected", (name, r.message)
        assert r.kind == exp["kind"], (name, r.kind, r.message)
        assert r.line == exp["line"], (name, r.line, exp["line"], r.message)
        assert f":{exp['line']}" in r.message, (name, r.message)
        if "disagree" in exp:
            assert r.disagree == exp["disagree"], (name, r.disagree, r.message)
        if "part" in exp:
            assert r.part.startswith(exp["part"]) and "2 of 2" in r.part
        if "guard" in exp:
            assert r.guards[exp["guard"][0]] == exp["guard"][1], (name, r.guards)
    by = dict(zip(cases, res))
    assert "step index jumps" in " ".join(by["skipped_step"].warnings)
    assert by["unknown_action"].checked == len(
        [n for n in spec_line_numbers(cases["unknown_action"][0]) if n < by["unknown_action"].line])
    assert by["earlier_divergence_first"].warnings  # the later bad line is still reported


def test_init_mismatch_and_empty_trace(relay, tmp_path):
    hdr = json.loads(lines_of(relay, 1, 0)[0])
    bad = write(tmp_path / "init.ndjson", [json.dumps({**hdr, "init": {"val": {"1": 5, "2": 0, "3": 0}}})])
    good = write(tmp_path / "empty.ndjson", [json.dumps({**hdr, "init": {"val": {"1": 0, "2": 0, "3": 0}}})])
    r_bad, r_good = check_paths([bad, good], FAST)
    assert r_bad.verdict == "rejected" and r_bad.kind == "init_mismatch" and r_bad.line == 1
    assert r_good.verdict == "accepted" and r_good.events == 0


@pytest.mark.slow
def test_batch_single_parallel_and_witness_modes_agree(relay, tmp_path):
    paths = [write(tmp_path / f"g{s}.ndjson", lines_of(relay, s, 100)) for s in range(2)]
    bad = lines_of(relay, 2, 300, variant="BuggyMax")
    paths.append(write(tmp_path / "bad.ndjson", bad))
    want = [("accepted", None)] * 2 + [("rejected", first_bug_line(bad, "BuggyMax"))]
    for opts in (Options(batch=64), Options(batch=2, jobs=2), Options(batch=1, jobs=2, witness="invariant")):
        got = [(r.verdict, r.line) for r in check_paths(paths, opts)]
        assert got == want, opts


def test_a_wrong_value_in_a_composed_step_is_named(relay, tmp_path):
    """A composed step's post-state is checked as deltas of the previous logged state (snapshotted
    by its first part): a value it changed and a value it left alone, each logged wrong, are
    rejected at that line, in the composed step's last part, naming only that variable."""
    base = lines_of(relay, 11, 150)
    spec = spec_line_numbers(base)
    n = next(n for n in spec[1:] if json.loads(base[n - 1])["action"] == "BumpAndSend")
    paths = []
    for var in ("val", "saved"):
        ls = list(base)
        r = json.loads(ls[n - 1])
        r["state"][var][str(r["node"])] += 7
        ls[n - 1] = json.dumps(r)
        paths.append(write(tmp_path / f"{var}.ndjson", ls))
    res = check_paths(paths, FAST)
    for var, r in zip(("val", "saved"), res):
        assert r.verdict == "rejected" and r.kind == "state_mismatch" and r.line == n, (var, r.message)
        assert r.disagree == [var], (var, r.disagree, r.message)
        assert r.part.startswith("Send") and "2 of 2" in r.part, r.part
