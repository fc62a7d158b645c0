"""The Spark driver's start options (spark_validation/session.py): the class-data-sharing archive is
used where it was written, written only when training, and never needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_validation import session


def test_the_archive_is_used_only_where_it_exists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "spark-driver-x.jsa"
    monkeypatch.setattr(session, "cds_archive", lambda: str(archive))
    monkeypatch.delenv("KRAFT_SPARK_CDS_TRAIN", raising=False)
    monkeypatch.delenv("KRAFT_SPARK_CDS", raising=False)
    assert session._cds_options() == ""
    archive.write_bytes(b"x")
    assert f"-XX:SharedArchiveFile={archive}" in session._cds_options()
    monkeypatch.setenv("KRAFT_SPARK_CDS", "off")
    assert session._cds_options() == ""
    monkeypatch.setenv("KRAFT_SPARK_CDS_TRAIN", str(tmp_path / "t.jsa"))
    opts = session._cds_options()
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 't.jsa'}" in opts and "SharedArchiveFile" not in opts


@pytest.mark.jvm
def test_the_archive_is_keyed_by_java_and_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    if session.java_problem():
        pytest.skip("no java")
    a = session.cds_archive()
    assert a.startswith(os.path.join(sys.prefix, "share", "kraft")) and a.endswith(".jsa")
    monkeypatch.setattr(session, "_JAVA_VERSION", "another java")
    assert session.cds_archive() != a


@pytest.mark.jvm
def test_a_damaged_archive_does_not_stop_the_jvm(tmp_path: Path) -> None:
    """A truncated or foreign archive is ignored by the JVM, with the warnings the options silence."""
    if session.java_problem():
        pytest.skip("no java")
    bad = tmp_path / "bad.jsa"
    bad.write_bytes(os.urandom(4096))
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    opts = f"-XX:SharedArchiveFile={bad} -Xlog:cds=off -Xlog:cds+dynamic=off".split()
    out = subprocess.run([java, *opts, "-version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "version" in out.stderr and "cds" not in (out.stdout + out.stderr).lower()


@pytest.mark.slow
def test_training_writes_an_archive_a_later_start_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m spark_validation.session --train-cds`` (what ./kraft.sh runs after installing)
    writes the archive; a light local context then starts with it and runs Python tasks."""
    if session.java_problem():
        pytest.skip("no java")
    target = tmp_path / "share" / "a.jsa"
    monkeypatch.setattr(session, "cds_archive", lambda: str(target))
    assert session.train_cds() == str(target) and target.stat().st_size > 1_000_000
    code = ("from spark_validation import session\n"
            f"session.cds_archive = lambda: {str(target)!r}\n"
            "sc = session.get_context('local[2]', light_jvm=True)\n"
            "assert 'SharedArchiveFile' in sc.getConf().get('spark.driver.extraJavaOptions')\n"
            "print(sc.parallelize(range(4), 2).map(lambda x: x * 2).sum())\n"
            "session.stop_session()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("12"), out.stderr[-2000:]


def test_the_training_command_keeps_the_exit_code_contract(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Usage error: 2; no archive written (train_cds said why): 2; written: 0."""
    assert session._main(["--bogus"]) == 2 and "usage" in capsys.readouterr().err
    monkeypatch.setattr(session, "train_cds", lambda: None)
    assert session._main(["--train-cds"]) == 2
    monkeypatch.setattr(session, "train_cds", lambda: "/x/a.jsa")
    assert session._main(["--train-cds"]) == 0 and "/x/a.jsa" in capsys.readouterr().err
