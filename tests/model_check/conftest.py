from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture
def spec_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the fixture specs as KRAFT_SPEC_DIR (manifests can be added per test)."""
    d = tmp_path / "spec"
    shutil.copytree(FIXTURES, d)
    monkeypatch.setenv("KRAFT_SPEC_DIR", str(d))
    return d
