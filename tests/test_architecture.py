"""The layering of DESIGN.md holds: the import-linter contracts in pyproject.toml pass (no import
cycles anywhere; protocol code never imports the checkers, the review, Spark or subprocess; the
kit knows no protocol; only kraft.cli imports kraft.review), and every import sits at module top
unless a comment says why it may not (an optional or a heavy module).  Each check is shown
failing on a deliberately broken copy."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
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
