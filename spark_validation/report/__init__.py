"""The audit's report layer: what the engines collected, as the command's verdict
(:class:`AuditReport`) and its output files (:func:`write_outputs`). It imports the engine below
it and nothing above (an import-linter contract in pyproject.toml)."""

from spark_validation.report.outputs import DOCUMENTS, write_outputs
from spark_validation.report.report import AuditReport, mark_lost_lines

__all__ = ["AuditReport", "DOCUMENTS", "mark_lost_lines", "write_outputs"]
