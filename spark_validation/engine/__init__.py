"""The audit's engines: the same per-history function (:mod:`.history`) run in this process
(:mod:`.local`, ``--no-spark``) or in Spark tasks (:mod:`.spark`; Parquet op tables as DataFrame
jobs in :mod:`.tables`), each handing the report a :class:`.collected.Collected`. Nothing here
imports the report or the command line above it (an import-linter contract in pyproject.toml).
"""
