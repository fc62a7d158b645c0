"""``audit-metadata --master``: one Spark task per directory, the same answers as in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from spark_validation.checks.metadata.audit import audit_corpus, discover

from .logs import Cluster, change, fence

pytestmark = pytest.mark.spark


def test_spark_gives_the_in_process_answers(tmp_path: Path) -> None:
    Cluster().then(change(isr=[1, 2])).write(tmp_path / "a" / "m")
    Cluster().then(change(isr=[2, 3])).then(fence(3, 3)).then(change(leader=3)).write(tmp_path / "b" / "m")
    torn = Cluster().write(tmp_path / "c" / "m") / "00000000000000000000.log"
    torn.write_bytes(torn.read_bytes()[:-4])
    (tmp_path / "d" / "m").mkdir(parents=True)
    (tmp_path / "d" / "m" / "00000000000000000000.log").write_bytes(b"")
    dirs = discover([str(tmp_path)])
    assert len(dirs) == 4
    local = audit_corpus(dirs, 2)
    spark = audit_corpus(dirs, 2, master="local[2]")
    assert spark == local
    assert [r.verdict.value for r in local] == ["clean", "violation", "error", "inconclusive"]
