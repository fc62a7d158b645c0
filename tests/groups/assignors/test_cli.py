"""``kraft assign`` (kraft.groups.assignors.cli:assign), run through click's test runner."""

from __future__ import annotations

import json

from click.testing import CliRunner

from kraft.groups.assignors.cli import assign


def write(tmp_path, doc, name="group.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1))
    return str(p)


def test_assign_prints_kafka_result_and_writes_json(tmp_path):
    f = write(tmp_path, {"partitions": {"topic1": 3, "topic2": 3},
                         "members": {"consumer1": {"topics": ["topic1", "topic2"]},
                                     "consumer2": {"topics": ["topic1", "topic2"]}}})
    out = tmp_path / "out.json"
    r = CliRunner().invoke(assign, [f, "--assignor", "range", "--json", str(out), "--check"])
    assert r.exit_code == 0, r.output
    assert "consumer1: topic1-0, topic1-1, topic2-0, topic2-1" in r.output
    assert json.loads(out.read_text())["rounds"][0]["assignment"]["consumer2"] == ["topic1-2", "topic2-2"]


def test_settle_runs_cooperative_follow_ups(tmp_path):
    f = write(tmp_path, {"partitions": {"topic": 3},
                         "members": {"consumer1": {"topics": ["topic"], "owned": ["topic-0", "topic-1", "topic-2"],
                                                   "generation": 1},
                                     "consumer2": {"topics": ["topic"], "generation": 1}}})
    r = CliRunner().invoke(assign, [f, "--settle", "--check"])
    assert r.exit_code == 0, r.output
    assert "rebalance 1" in r.output and "revoked first: topic-2" in r.output
    assert "rebalance 2" in r.output and "consumer2: topic-2" in r.output


def test_check_catches_the_kafka_empty_subscription_bug(tmp_path):
    """With the bug switched on, Kafka's sticky assignor gives consumer2 (empty subscription,
    first in HashMap order) a partition of t0: --check exits 1. Without it: 0."""
    f = write(tmp_path, {"partitions": {"t0": 2},
                         "members": {"consumer1": {"topics": ["t0"]}, "consumer2": {"topics": []}}})
    r = CliRunner().invoke(assign, [f, "--assignor", "sticky", "--check", "--variant", "EmptySubscriptionCountsAsEqual"])
    assert r.exit_code == 1 and "t0-1 given to consumer2, not subscribed" in r.output
    r = CliRunner().invoke(assign, [f, "--assignor", "sticky", "--check"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(assign, [f, "--assignor", "range", "--variant", "EmptySubscriptionCountsAsEqual"])
    assert r.exit_code == 2


def test_bad_input_names_file_and_place(tmp_path):
    runner = CliRunner()
    bad_json = write(tmp_path, '{"partitions": {"t": 1},\n "members": {"c": {"topics": ["t"],}}}', "bad.json")
    r = runner.invoke(assign, [bad_json])
    assert r.exit_code == 2 and "bad.json:2:" in r.output and "invalid JSON" in r.output
    for doc, needle in [
        ({"partitions": {"t": -1}, "members": {"c": {"topics": ["t"]}}}, "partitions.t"),
        ({"partitions": {"t": 1}, "members": {"c": {"topics": "t"}}}, "members.c.topics"),
        ({"partitions": {"t": 1}, "members": {"c": {"topics": ["t"], "owned": ["t-x"]}}}, "members.c.owned[0]"),
        ({"partitions": {"t": 1}, "members": {"c": {"topic": ["t"]}}}, "unknown field"),
        ({"partitions": {"t": 1}, "members": {}}, "non-empty"),
    ]:
        r = runner.invoke(assign, [write(tmp_path, doc)])
        assert r.exit_code == 2 and needle in r.output and "Traceback" not in r.output, (doc, r.output)
    r = runner.invoke(assign, [str(tmp_path / "missing.json")])
    assert r.exit_code == 2 and "missing.json: cannot read" in r.output
