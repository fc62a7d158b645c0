"""The Spark engine: DataFrame Kafka anomalies against the labelled cases and (Hypothesis) against
the reference implementation, and the whole audit agreeing with ``--no-spark`` on one corpus.

One SparkSession for the module (JVM start is the expensive part); each test batches many
histories into one Spark job.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from spark_validation import kafka_ref
from spark_validation.records import discover
from tests.audit.cases import case_rows, expected_anomalies
from tests.audit.corpus import build, expected_verdicts
from tests.audit.strategies import kafka_corpus

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    from spark_validation.session import get_session, java_problem

    if java_problem():
        pytest.skip(java_problem())
    return get_session(None, shuffle_partitions=2)


def spark_anomalies(spark, rows: list[dict]) -> list[dict]:
    from spark_validation import kafka_spark
    from spark_validation.ingest_schema import OPS_SCHEMA

    df = spark.createDataFrame([tuple(r[c] for c in OPS_SCHEMA.fieldNames()) for r in rows], OPS_SCHEMA)
    got = [{"history": r["history"], "kind": r["kind"], "key": r["key"], "evidence": json.loads(r["evidence"])}
           for r in kafka_spark.check(df).collect()]
    return kafka_ref.sort_anomalies(got)


def test_labelled_cases_dataframe(spark) -> None:
    assert spark_anomalies(spark, case_rows()) == expected_anomalies()


@settings(max_examples=3)
@given(kafka_corpus(min_size=25, max_size=40))
def test_dataframe_matches_reference(spark, rows: list[dict]) -> None:
    ref = kafka_ref.check_rows(rows)
    assert spark_anomalies(spark, rows) == ref


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    return root, build(root)


@pytest.fixture(scope="module")
def both_runs(spark, corpus, tmp_path_factory):
    from spark_validation.audit import AuditOptions, run

    root, _ = corpus
    s_out = tmp_path_factory.mktemp("spark_out")
    l_out = tmp_path_factory.mktemp("local_out")
    s = run(AuditOptions(paths=(str(root),), out=s_out), progress=lambda m: None)
    lo = run(AuditOptions(paths=(str(root),), out=l_out, no_spark=True), progress=lambda m: None)
    return s, lo, s_out


def _norm(results: list[dict]) -> dict:
    return {r["history"]: (r["model"], r["valid"], r["ops"], json.dumps(r["anomalies"], sort_keys=True))
            for r in results}


def test_spark_audit_equals_local(both_runs, corpus) -> None:
    root, _ = corpus
    s, lo, _ = both_runs
    assert {r["history"]: r["valid"] for r in s.results} == expected_verdicts(root)
    assert _norm(s.results) == _norm(lo.results)
    assert s.exit_code == lo.exit_code == 1


def test_spark_malformed_lines_by_file_and_line(both_runs, corpus) -> None:
    _, exp = corpus
    s, lo, _ = both_runs
    for rep in (s, lo):
        assert {(m["path"], m["line"]) for m in rep.malformed if m["scope"] == "line"} == exp["malformed_lines"]
        assert [m["path"] for m in rep.malformed if m["scope"] == "history"] == [exp["unpaired"]]


def test_spark_parquet_round_trip(spark, both_runs, tmp_path) -> None:
    from spark_validation.audit import AuditOptions, run

    s, _, s_out = both_runs
    hs, tables, _ = discover([s_out / "ops.parquet"])
    assert tables == [s_out / "ops.parquet"]
    again = run(AuditOptions(paths=(str(s_out / "ops.parquet"),), out=tmp_path), progress=lambda m: None)
    first = {k: v for k, v in _norm(s.results).items() if v[0] != "kraft-metadata"}
    assert _norm(again.results) == first


def test_stored_micro_ops_dataframe(spark, tmp_path) -> None:
    """The check over micro-ops stored at ingest (Parquet) finds what it finds from the op table."""
    from spark_validation import kafka_spark
    from spark_validation.ingest_schema import OPS_SCHEMA

    rows = case_rows()
    df = spark.createDataFrame([tuple(r[c] for c in OPS_SCHEMA.fieldNames()) for r in rows], OPS_SCHEMA)
    kafka_spark.micro_ops(df).write.parquet(str(tmp_path / "mops.parquet"))
    m = spark.read.parquet(str(tmp_path / "mops.parquet"))
    got = [{"history": r["history"], "kind": r["kind"], "key": r["key"], "evidence": json.loads(r["evidence"])}
           for r in kafka_spark.collect(df, m)]
    assert kafka_ref.sort_anomalies(got) == expected_anomalies()
