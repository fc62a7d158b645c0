"""Real results for the report tests: what `kraft check`, `kraft audit` and `kraft conform` write,
produced once per session by running the commands on small inputs."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kraft import cli

FIXTURES = Path(__file__).resolve().parents[1] / "spark_validation" / "fixtures"

# a real trace header followed by a step without an action: conform rejects it at line 2
TRACE_HEADER = {"v": 1, "kind": "trace", "protocol": "kraft", "spec": "KRaft",
                "constants": {"Voters": [1, 2, 3], "PreVote": True, "VoteWithoutLogCheck": False,
                              "HwmFromAnyEpoch": False, "NoTruncateOnDivergence": False,
                              "ForgetVoteOnRestart": False}, "seed": 1, "variant": None}


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # real_results runs `kraft check` (TLC): a test that uses it starts a JVM
    for item in items:
        if "real_results" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.tlc)


def run(args: list[str]) -> int:
    res = CliRunner().invoke(cli.main, args)
    return res.exit_code


@pytest.fixture(scope="session")
def real_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("results")
    # TLC finds the eager-rebalance bug: a counterexample with messages between consumers and coordinator
    assert run(["check", "ConsumerGroup", "--variant", "EagerNoRevokeBeforeJoin", "--workers", "1",
                "--quiet-trace", "--out", str(root / "check")]) == 0
    # the audit of two invalid histories (a stale read; a duplicate in a Jepsen txn log) and a valid one
    assert run(["audit", "--no-spark", str(FIXTURES / "reg_stale_read.ndjson"),
                str(FIXTURES / "log_jepsen_txn_invalid.edn"), str(FIXTURES / "log_valid.ndjson"),
                "--out", str(root / "audit")]) == 1
    trace = root / "traces" / "bad.ndjson"
    trace.parent.mkdir()
    trace.write_text(json.dumps(TRACE_HEADER) + "\n" + json.dumps({"bogus": 1}) + "\n")
    assert run(["conform", str(trace), "--out", str(root / "conform")]) == 1
    return root
