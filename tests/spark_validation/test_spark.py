"""The Spark Kafka check: the per-partition numpy kernel (spark_validation.checks.kafka.spark)
against the labelled cases and (Hypothesis) against the reference implementation, the kernel on
clustered and deliberately split layouts (verification and shuffle fallback), and the whole
audit agreeing with ``--no-spark`` on one corpus.

One SparkSession for the module (JVM start is the expensive part); each test batches many
histories into one Spark job.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given

from spark_validation.checks.anomaly import entry_json
from spark_validation.checks.elle.graph import graph_of_table
from spark_validation.checks.elle.reference import EDGE_COLUMNS, CycleOptions, edges_ref
from spark_validation.checks.elle.rows import rows_of_ops
from spark_validation.checks.elle.spark import cycle_input
from spark_validation.checks.kafka import rules
from spark_validation.checks.kafka import spark as kspark
from spark_validation.checks.kafka.anomaly import sorted_anomalies
from spark_validation.ingest.records import OpRow, discover
from spark_validation.engine.result import HistoryResult
from tests import examples
from tests.spark_validation.cases import case_rows, expected_anomalies
from tests.spark_validation.corpus import build, expected_verdicts
from tests.spark_validation.strategies import kafka_corpus

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark():
    from spark_validation.session import get_session, java_problem

    if java_problem():
        pytest.skip(java_problem())
    return get_session(None, shuffle_partitions=2)


def _ops_df(spark, rows: list[OpRow]):
    from spark_validation.ingest.spark_schema import OPS_SCHEMA

    return spark.createDataFrame([tuple(getattr(r, c) for c in OPS_SCHEMA.fieldNames()) for r in rows], OPS_SCHEMA)


def _decoded(anoms: list[dict]) -> list[dict]:
    return sorted_anomalies(anoms)


def arrow_anomalies(spark, rows: list[OpRow], layout=lambda df: df, chunk_rows: int | None = None):
    kw = {"chunk_rows": chunk_rows} if chunk_rows else {}
    got, info = kspark.collect(layout(_ops_df(spark, rows)), **kw)
    return _decoded(got), info


def test_labelled_cases_arrow_every_layout(spark) -> None:
    """Whole histories per partition (checked in place), histories scattered over partitions
    (round-robin: re-checked after a shuffle), and one partition cut into small chunks: the
    same anomalies and evidence, and the report says which path each history took."""
    exp = expected_anomalies()
    n = len({r.history for r in case_rows()})
    got, info = arrow_anomalies(spark, case_rows(), lambda df: df.repartition(2, "history").sortWithinPartitions("history", "line"))
    assert got == exp
    assert (info.clustered, info.shuffled, info.histories) == (n, 0, n)
    got, info = arrow_anomalies(spark, case_rows(), lambda df: df.repartition(3))
    assert got == exp
    assert info.shuffled > 0 and info.clustered + info.shuffled == n
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "5")
    try:  # one partition in batches of 5 rows, cut into chunks of at least 4 at history boundaries
        got, info = arrow_anomalies(spark, case_rows(), lambda df: df.coalesce(1), chunk_rows=4)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert got == exp
    assert info.chunks > 3 and info.shuffled == 0


@examples.SPARK()
@given(kafka_corpus(min_size=25, max_size=40))
def test_arrow_matches_reference(spark, rows: list[OpRow]) -> None:
    """Random corpora, as created (histories spread over partitions: in place or re-checked)."""
    got, info = arrow_anomalies(spark, rows, chunk_rows=50)
    assert got == rules.check_rows(rows)
    assert info.clustered + info.shuffled == info.histories


def test_arrow_stored_kernel_rows(spark, tmp_path) -> None:
    """Kernel rows stored at ingest (clustered by history) are checked file by file in the
    Python workers; a stored table that is not clustered gives the same anomalies through the
    fallback, and the report says so."""
    rows = case_rows()
    exp = expected_anomalies()
    df = _ops_df(spark, rows)
    kspark.store(df, str(tmp_path / "clustered"), 3)
    got, info = kspark.collect_stored(spark, str(tmp_path / "clustered"))
    assert _decoded(got) == exp
    assert info.engine == "arrow-files" and info.shuffled == 0 and info.clustered == info.histories
    kspark.kernel_input(df).repartition(3).write.parquet(str(tmp_path / "scattered"))
    got, info = kspark.collect_stored(spark, str(tmp_path / "scattered"))
    assert _decoded(got) == exp
    assert info.shuffled > 0


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
    s = run(AuditOptions(paths=(str(root),), out=s_out, write_ops=True), progress=lambda m: None)
    lo = run(AuditOptions(paths=(str(root),), out=l_out, no_spark=True), progress=lambda m: None)
    return s, lo, s_out


def _norm(results: list[HistoryResult]) -> dict:
    return {r.history: (r.model, r.valid, r.ops, json.dumps([entry_json(a) for a in r.anomalies], sort_keys=True))
            for r in results}


def test_spark_audit_equals_local(both_runs, corpus) -> None:
    root, _ = corpus
    s, lo, _ = both_runs
    assert {r.history: r.valid for r in s.results} == expected_verdicts(root)
    assert _norm(s.results) == _norm(lo.results)
    assert s.exit_code == lo.exit_code == 1
    assert s.kafka_engine.engine == "arrow"
    assert s.kafka_engine.clustered + s.kafka_engine.shuffled == s.kafka_engine.histories > 0


def test_spark_malformed_lines_by_file_and_line(both_runs, corpus) -> None:
    _, exp = corpus
    s, lo, _ = both_runs
    for rep in (s, lo):
        assert {(m.path, m.line) for m in rep.malformed if m.scope == "line"} == exp["malformed_lines"]
        assert [m.path for m in rep.malformed if m.scope == "history"] == [exp["unpaired"]]
        skipped = [m for m in rep.malformed if m.scope == "file"]
        assert [m.path for m in skipped] == exp["skipped"]
        assert skipped[0].line == 1 and skipped[0].reason.startswith("not a history: one JSON object")


def test_spark_parquet_round_trip(spark, both_runs, tmp_path) -> None:
    from spark_validation.audit import AuditOptions, run

    s, _, s_out = both_runs
    hs, tables, _ = discover([s_out / "ops.parquet"])
    assert tables == [s_out / "ops.parquet"]
    again = run(AuditOptions(paths=(str(s_out / "ops.parquet"),), out=tmp_path), progress=lambda m: None)
    first = {k: v for k, v in _norm(s.results).items() if v[0] != "kraft-metadata"}
    assert _norm(again.results) == first


def test_stored_kafka_rows_are_used_only_while_they_match(spark, both_runs, corpus, tmp_path) -> None:
    """``--store-kafka-rows`` writes the kernel rows beside ops.parquet; auditing that
    ops.parquet again checks Kafka anomalies from them (one task per file, no shuffle) with the
    same results; once the op table no longer matches the manifest they are not used."""
    from spark_validation.audit import AuditOptions, run

    root, _ = corpus
    s, _, _ = both_runs
    first_out = tmp_path / "first"
    first = run(AuditOptions(paths=(str(root),), out=first_out, store_kafka=True), progress=lambda m: None)
    assert (first_out / "kafka_rows.parquet").is_dir() and (first_out / "kafka_rows.json").is_file()
    assert _norm(first.results) == _norm(s.results)
    expect = {k: v for k, v in _norm(s.results).items() if v[0] != "kraft-metadata"}

    again = run(AuditOptions(paths=(str(first_out / "ops.parquet"),), out=tmp_path / "again"),
                progress=lambda m: None)
    assert again.kafka_engine.engine == "arrow-files"
    assert again.kafka_engine.stored == str(first_out / "kafka_rows.parquet")
    assert again.kafka_engine.shuffled == 0
    assert _norm(again.results) == expect

    # a rewritten op table (here: the manifest no longer names its files) is not trusted
    doc = json.loads((first_out / "kafka_rows.json").read_text())
    doc["ops_files"] = doc["ops_files"][1:]
    (first_out / "kafka_rows.json").write_text(json.dumps(doc))
    stale = run(AuditOptions(paths=(str(first_out / "ops.parquet"),), out=tmp_path / "stale"),
                progress=lambda m: None)
    assert stale.kafka_engine.engine == "arrow" and stale.kafka_engine.stored is None
    assert _norm(stale.results) == expect


# -- Elle-style cycles on Spark (spark_validation/checks/elle/) ----------------------------------------


EDGE_DDL = ("history string, src long, sp string, dst long, dp string, kind string, key string, "
            "value string, value2 string")


def edges_spark(ops, opts: CycleOptions):
    """The dependency edges of every history of the op table by the vectorised build, as a
    DataFrame with ``EDGE_COLUMNS`` (one executor task per history, after a shuffle by history)."""

    def per_history(t):
        t = rows_of_ops(t)
        tuples = graph_of_table(t, opts).tuples() if t.num_rows else []
        cols = list(zip(*tuples)) if tuples else [[] for _ in EDGE_COLUMNS]
        types = [pa.string(), pa.int64(), pa.string(), pa.int64(), pa.string(), pa.string(), pa.string(),
                 pa.string(), pa.string()]
        return pa.table({c: pa.array(list(x), ty) for c, x, ty in zip(EDGE_COLUMNS, cols, types)})

    return cycle_input(ops).groupBy("history").applyInArrow(per_history, EDGE_DDL)


@pytest.mark.slow
@examples.SPARK.long(deadline=None)
@given(kafka_corpus(min_size=20, max_size=30))
def test_elle_edges_spark_match_reference_long(spark, rows: list[OpRow]) -> None:
    ops = _ops_df(spark, rows).cache()
    for ww, rw in [(False, False), (True, False), (False, True), (True, True)]:
        opts = CycleOptions(ww, rw, process=rw, realtime=ww)
        assert sorted(tuple(r) for r in edges_spark(ops, opts).collect()) == sorted(edges_ref(rows, opts)), (ww, rw)
    ops.unpersist()


@examples.SPARK(deadline=None, derandomize=True)
@given(kafka_corpus(min_size=30, max_size=30))
def test_elle_edges_spark_match_reference(spark, rows: list[OpRow]) -> None:
    ops = _ops_df(spark, rows)
    opts = CycleOptions(True, True, process=True, realtime=True)  # every edge kind
    assert sorted(tuple(r) for r in edges_spark(ops, opts).collect()) == sorted(edges_ref(rows, opts))


def test_elle_cycles_on_spark_equal_reference(spark) -> None:
    from spark_validation.checks.elle import spark as elle
    from spark_validation.checks.elle.check import check_rows_ref
    from spark_validation.checks.elle.spark import check_spark
    from tests.spark_validation import test_elle as T

    rows = [r for name, h in (("g1c", T.g1c()), ("g0", T.g0()), ("gs", T.g_single()), ("g2", T.g2_item()),
                              ("gn", T.g_nonadjacent()), ("g1cp", T.g1c_process()), ("g1cr", T.g1c_realtime()),
                              ("stale", T.stale_read())) for r in h.rows(name)]
    ops = _ops_df(spark, rows).cache()
    for ww, rw in [(False, False), (True, True)]:
        opts = CycleOptions(ww, rw, process=ww, realtime=ww)
        key = lambda a: (a["history"], a["kind"], json.dumps(a["evidence"], sort_keys=True))  # noqa: E731
        want = sorted((a.to_json() for a in check_rows_ref(rows, opts)), key=key)
        assert sorted((a.to_json() for a in check_spark(ops, opts)), key=key) == want, (ww, rw)
        # histories spread over partitions: found split, checked again after a shuffle, same answer
        got, info = elle.collect(ops.repartition(3), opts)
        assert sorted((a.to_json() for a in got), key=key) == want and info.shuffled > 0, (ww, rw, info)
        assert {a["kind"] for a in want} >= ({"G1c"} | ({"G0", "G1c-process", "G1c-realtime", "G-single-item",
                                                         "G-nonadjacent-item", "G2-item", "G-single-item-realtime"}
                                                        if ww else set()))
    ops.unpersist()
