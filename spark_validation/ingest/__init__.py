"""The audit's ingest layer: history files and op tables in, one op table out.

* :mod:`.edn` -- the safe EDN reader (Jepsen's ``history.edn``);
* :mod:`.history` -- the typed ops (:class:`~.history.Op`, :class:`~.history.History`) read
  from EDN, NDJSON and JSON files, with every malformed line named;
* :mod:`.rows` -- the same files, and Parquet op tables, read straight into op rows as columns
  (:class:`~.rows.Rows`): the audit's fast readers, tested equal to the history reader;
* :mod:`.records` -- the op-row vocabulary shared by both (``OP_COLUMNS``, value texts), the
  typed op row every reference check reads (:class:`~.records.OpRow`; ``Rows.ops()`` gives the
  columns' rows as such) and the discovery of a corpus's files;
* :mod:`.pairing` -- Jepsen's invoke/complete pairing rule, the one place it is written: every
  reader, the checks and the Spark path pair through it;
* :mod:`.spark` -- Parquet op tables read by Spark, and the pairing rule as a Spark job.

Nothing here imports the checks, the engines or the report above it (an import-linter contract
in pyproject.toml).
"""
