"""Orchestration: the review pipeline (``kraft review``), its HTML page (``kraft report``) and
``kraft test``. It imports the checkers; no protocol package imports it (DESIGN.md, Layout)."""

from .pipeline import Stage, StageResult, review, run_stage
from .page import report, write_report
from .suite import test

__all__ = ["Stage", "StageResult", "report", "review", "run_stage", "test", "write_report"]
