"""The layering of DESIGN.md holds: the import-linter contracts in pyproject.toml pass (no import
cycles anywhere; protocol code never imports the checkers, the review, Spark or subprocess; the
kit knows no protocol; only kraft.cli imports kraft.review), and every import sits at module top
unless a comment says why it may not (an optional or a heavy module).  Each check is shown
failing on a deliberately broken copy."""

from __future__ import annotations

import ast
import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kraft", "model_check", "traces", "spark_validation")
LINT = Path(sys.executable).parent / "lint-imports"
# the comments that let an import stay inside a function, with the reason after them: the module
# is not installed everywhere (pyspark), or it is heavy and a command's common path must not pay
# for it (``kraft --help``, ``kraft audit --no-spark``)
REASONS = ("# optional:", "# lazy:")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT), "--no-cache", "--no-logo"], cwd=root, capture_output=True, text=True,
                          timeout=300)


def _copy(tmp_path: Path) -> Path:
    for p in PACKAGES:
        shutil.copytree(ROOT / p, tmp_path / p, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_import_contracts_hold() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_forbidden_import_and_a_cycle_break_the_contracts(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    node = root / "kraft" / "core" / "majority.py"
    node.write_text(node.read_text() + "\nimport spark_validation.audit  # noqa\nimport kraft.quorum.node  # noqa\n")
    done = _lint(root)
    assert done.returncode == 1
    for broken in ("never import the checkers, the review, Spark or subprocess BROKEN",
                   "The kit (kraft.core) and the simulator engine import no protocol BROKEN",
                   "No import cycles, between packages or between the modules of one package BROKEN"):
        assert broken in " ".join(done.stdout.split()), done.stdout


def test_an_upward_import_breaks_the_audit_layers(tmp_path: Path) -> None:
    """ingest < checks < engine < report < audit < cli: an engine importing the report, the report
    importing the entry point, the trace agreement check importing an engine and a reader importing
    a check each break the layers; the Kafka check's own contract names its upward import too."""
    root = _copy(tmp_path)
    for module, upward in (("engine/result.py", "spark_validation.report"),
                           ("report/outputs.py", "spark_validation.audit"),
                           ("checks/agreement.py", "spark_validation.engine.local"),
                           ("ingest/pairing.py", "spark_validation.checks.elle"),
                           ("checks/kafka/anomaly.py", "spark_validation.engine.result")):
        path = root / "spark_validation" / module
        path.write_text(path.read_text() + f"\nimport {upward}  # noqa\n")
    done = _lint(root)
    assert done.returncode == 1
    text = " ".join(done.stdout.split())
    assert "The audit's layers: cli, audit, report, engine, checks, ingest; each imports only those below it BROKEN" in text
    for line in ("spark_validation.engine.result -> spark_validation.report",
                 "spark_validation.report.outputs -> spark_validation.audit",
                 "spark_validation.checks.agreement -> spark_validation.engine.local",
                 "spark_validation.ingest.pairing -> spark_validation.checks.elle"):
        assert line in text, done.stdout
    assert ("The Kafka check imports only the ingest layer below it (besides the standard library, attrs, "
            "numpy, pandas, pyarrow and pyspark) BROKEN") in text, done.stdout


def function_imports(path: Path) -> list[int]:
    """Lines of imports inside a function body that carry no reason (``REASONS``): on their own
    line or in the comments and imports right above them."""
    lines = path.read_text().splitlines()
    out = []
    for fn in ast.walk(ast.parse("\n".join(lines), str(path))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not _reasoned(lines, node.lineno - 1):
                out.append(node.lineno)
    return sorted(set(out))


def _reasoned(lines: list[str], i: int) -> bool:
    """Line ``i`` (0-based), or the block of comments, imports and blank lines just above it,
    gives a reason."""
    while i >= 0:
        text = lines[i].strip()
        if any(r in text for r in REASONS):
            return True
        if text and not text.startswith(("#", "import ", "from ")):
            return False
        i -= 1
    return False


def test_imports_are_at_module_top_unless_optional() -> None:
    found = {str(p.relative_to(ROOT)): lines for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))
             if (lines := function_imports(p))}
    assert not found, f"imports inside functions without a `# optional: why` or `# lazy: why` comment: {found}"


def test_the_function_import_check_fails_on_a_local_import(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n    import json\n    return json\n\n\ndef g():\n"
                 "    # optional: pyspark is not installed everywhere\n    import pyspark\n    import py4j\n"
                 "    x = 1\n    import re\n")
    assert function_imports(f) == [2, 11]


HISTORY = re.compile(r"\bissues? \d+\b|\(issue\b|\b20\d\d-\d\d-\d\d\b")


def history_lines(path: Path) -> list[int]:
    """Lines of a source file's comments and docstrings that name an issue number or a date (code
    says what it does; git keeps its history).  Strings that are data are not read."""
    text = path.read_text(errors="replace")
    out = [tok.start[0] for tok in tokenize.generate_tokens(io.StringIO(text).readline)
           if tok.type == tokenize.COMMENT and HISTORY.search(tok.string)]
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            out += [node.lineno + i for i, ln in enumerate(node.value.value.splitlines()) if HISTORY.search(ln)]
    return sorted(set(out))


def test_code_names_no_issue_numbers_or_dates() -> None:
    found = {str(p.relative_to(ROOT)): lines
             for d in (*PACKAGES, "tests", "bench") for p in sorted((ROOT / d).rglob("*.py"))
             if "fixtures" not in p.parts and (lines := history_lines(p))}
    assert not found, f"issue numbers or dates in comments or docstrings: {found}"


def test_the_history_check_fails_on_an_issue_number(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    number = "issue " + "15"   # built here so this file itself names no issue
    f.write_text(f'"""Readers ({number})."""\nx = "2024-01-01"  # test data\n# measured 2026-11-26\n')
    assert history_lines(f) == [1, 3]
