"""``kraft assign --protocol consumer``: the coordinator's assignors on a group file."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kraft.groups.assignors import server
from kraft.groups.assignors.cli import assign

T1, T3 = "T1-A4s3VTwiI5CTbEp6POw", "T3-CU8fVTLCz5YMkLoDQsQ"


def write(tmp_path, doc, name="group.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=1))
    return str(p)


def group(**members):
    return {"topics": {"topic1": {"id": T1, "partitions": 3}, "topic3": {"id": T3, "partitions": 2}},
            "members": members}


def test_uniform_prints_kafka_result_and_writes_json(tmp_path):
    """OptimizedUniformAssignmentBuilderTest.testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks."""
    f = write(tmp_path, group(A={"topics": ["topic1", "topic3"]}, B={"topics": ["topic1", "topic3"]}))
    out = tmp_path / "out.json"
    r = CliRunner().invoke(assign, [f, "--assignor", "uniform", "--check", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "assignment (uniform, homogeneous):\n  A: topic1-0, topic3-0, topic3-1\n  B: topic1-1, topic1-2\n" \
        in r.output and "check: ok" in r.output
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "clean" and doc["protocol"] == "consumer" and doc["topic_ids"]["topic3"] == T3
    assert doc["rounds"][0]["assignment"]["B"] == ["topic1-1", "topic1-2"]


def test_server_range_needs_the_protocol_and_client_range_is_unchanged(tmp_path):
    f = write(tmp_path, group(A={"topics": ["topic1"], "instance_id": "i2"}, B={"topics": ["topic1"],
                                                                                "instance_id": "i1"}))
    r = CliRunner().invoke(assign, [f, "--protocol", "consumer", "--assignor", "range", "--check"])
    assert r.exit_code == 0, r.output
    assert "  A: topic1-2\n  B: topic1-0, topic1-1\n" in r.output  # static members sort by instance id
    r = CliRunner().invoke(assign, [f, "--assignor", "range"])
    assert r.exit_code == 2 and "--protocol consumer" in r.output


def test_moved_partitions_are_revoked_first(tmp_path):
    f = write(tmp_path, group(A={"topics": ["topic1"], "assignment": {"topic1": [0, 1, 2]}}, B={"topics": ["topic1"]}))
    r = CliRunner().invoke(assign, [f, "--protocol", "consumer"])
    assert r.exit_code == 0 and "revoked first: topic1-2" in r.output and "not checked" not in r.output


def test_check_exits_1_on_an_assignor_that_breaks_its_promise(tmp_path, monkeypatch):
    class GivesEverythingToTheFirst:
        def assign(self, spec, topics):
            first = next(iter(spec.members))
            return {first: {t: set(range(topics.num_partitions(t))) for t in spec.members[first].subscribed_topic_ids}}
    monkeypatch.setitem(server.ASSIGNORS, "uniform", GivesEverythingToTheFirst)
    f = write(tmp_path, group(A={"topics": ["topic1"]}, B={"topics": ["topic1"]}))
    r = CliRunner().invoke(assign, [f, "--assignor", "uniform", "--check"])
    assert r.exit_code == 1 and "unbalanced: A has 3 partitions, B has 0" in r.output


@pytest.mark.parametrize("members,topics,needle", [
    ({"A": {"topics": "topic1"}}, None, ":10: members.A.topics: must be a list"),
    ({"A": {"topic": ["topic1"]}}, None, "members.A: unknown field(s) ['topic']"),
    ({"A": {"assignment": {"nope": [0]}}}, None, "'nope' is neither a topic"),
    ({"A": {"assignment": {"topic1": [3]}}}, None, "members.A.assignment.topic1: partition 3 does not exist"),
    ({"A": {"assignment": {"topic1": [0]}}, "B": {"assignment": {"topic1": [0]}}}, None, "also assigned to A"),
    ({"A": {"instance_id": "i"}, "B": {"instance_id": "i"}}, None, "members.B.instance_id: 'i' is also"),
    ({"A": {"rack": 1}}, None, "members.A.rack: must be a string or null"),
    ({}, None, "members: must be a non-empty object"),
    ({"A": {}}, {"t": {"id": "not-a-uuid", "partitions": 1}}, "topics.t.id: not a Uuid"),
    ({"A": {}}, {"t": {"id": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": 1}}, "topics.t.id: the zero id"),
    ({"A": {}}, {"t": {"id": T1, "partitions": 1}, "u": {"id": T1, "partitions": 1}}, "id of another topic"),
    ({"A": {}}, {"t": {"id": T1, "partitions": -1}}, "topics.t.partitions: must be an integer >= 0"),
    ({"A": {}}, {"t": {"id": T1, "partitions": 1, "racks": {"1": ["r"]}}}, "'1' is not a partition"),
    ({"A": {}}, {"t": {"id": T1, "partitions": 10 ** 7}}, "more than this command assigns"),
])
def test_bad_input_names_file_line_and_field(tmp_path, members, topics, needle):
    doc = {"topics": topics or {"topic1": {"id": T1, "partitions": 3}}, "members": members}
    text = json.dumps(doc, indent=1) if members else json.dumps(doc)
    r = CliRunner().invoke(assign, [write(tmp_path, text, "bad.json"), "--protocol", "consumer"])
    assert r.exit_code == 2 and "bad.json:" in r.output and needle in r.output, r.output
    assert "Traceback" not in r.output


def test_usage_errors(tmp_path):
    f = write(tmp_path, group(A={"topics": ["topic1"]}))
    for args, needle in [(["--protocol", "consumer", "--assignor", "sticky"], "not sticky"),
                         (["--assignor", "uniform", "--settle"], "--settle applies to the classic protocol"),
                         (["--protocol", "consumer", "--variant", "EmptySubscriptionCountsAsEqual"], "--variant"),
                         ([], "a consumer-protocol group file takes --protocol consumer")]:
        r = CliRunner().invoke(assign, [f, *args])
        assert r.exit_code == 2 and needle in r.output, (args, r.output)
