"""``kraft audit --master spark://...`` against a real standalone cluster on loopback.

Starts a Master and a Worker (2 cores) from the pip pyspark installation, each by its own pid,
on free ports with the web UIs on free ports too, waits until the worker has registered, runs the
audit in a subprocess, checks the results, and stops both processes in ``finally``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.spark_validation.cases import CASES

pytestmark = pytest.mark.spark


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd: list[str], env: dict, log: Path) -> subprocess.Popen:
    fh = open(log, "wb")
    return subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(p: subprocess.Popen | None) -> None:
    if p is None or p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGTERM)  # the group started for this process only
    except ProcessLookupError:
        return
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=10)


def _alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as r:
            data = json.load(r)
    except OSError:
        return 0
    return sum(1 for w in data.get("workers", []) if w.get("state") == "ALIVE")


def test_audit_on_standalone_cluster(tmp_path) -> None:
    from spark_validation.session import java_problem

    if java_problem():
        pytest.skip(java_problem())
    import pyspark

    home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_WORKER_DIR=str(tmp_path / "work"),
               SPARK_NO_DAEMONIZE="1")
    port, ui, wport, wui = free_port(), free_port(), free_port(), free_port()
    spark_class = str(home / "bin" / "spark-class")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("valid", "lost-write", "G1a", "poll-skip"):
        CASES[name][0].write_ndjson(corpus / f"{name}.ndjson")
    master = worker = None
    try:
        master = _start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", str(port), "--webui-port", str(ui)], env, tmp_path / "master.log")
        worker = _start([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--port", str(wport), "--webui-port", str(wui), "--cores", "2", "--memory", "1g",
                         f"spark://127.0.0.1:{port}"], env, tmp_path / "worker.log")
        deadline = time.time() + 120
        while _alive_workers(ui) < 1:
            assert master.poll() is None, (tmp_path / "master.log").read_text()[-2000:]
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-2000:]
            assert time.time() < deadline, "worker did not register within 120 s"
            time.sleep(1)
        out = tmp_path / "out"
        run = subprocess.run(
            [sys.executable, "-m", "kraft.cli", "audit", str(corpus), "--master", f"spark://127.0.0.1:{port}",
             "--out", str(out), "--checks", "kafka"],
            env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable),
            capture_output=True, text=True, timeout=600)
        assert run.returncode == 1, run.stdout + run.stderr[-3000:]
        assert json.loads((out / "summary.json").read_text())["engine"] == f"spark spark://127.0.0.1:{port}"
        results = {Path(r["history"]).stem: r for r in json.loads((out / "results.json").read_text())}
        assert {k: r["valid"] for k, r in results.items()} == {
            "valid": True, "lost-write": False, "G1a": False, "poll-skip": False}
        g1a = results["G1a"]["anomalies"]
        assert g1a == [{"kind": "G1a", "key": "x", "evidence": {"value": "1", "offset": 0, "writer": 1, "reader": 3}}]
    finally:
        _stop(worker)
        _stop(master)
