"""Spark schemas of the audit's tables (kept apart so importing them does not start a JVM)."""

from __future__ import annotations

from pyspark.sql.types import LongType, StringType, StructField, StructType

OPS_SCHEMA = StructType([
    StructField("history", StringType(), False),
    StructField("line", LongType(), False),
    StructField("index", LongType(), True),
    StructField("process", StringType(), True),
    StructField("type", StringType(), True),
    StructField("f", StringType(), True),
    StructField("key", StringType(), True),
    StructField("value", StringType(), True),
    StructField("time", LongType(), True),
    StructField("model", StringType(), True),
])
