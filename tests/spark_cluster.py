"""A Spark standalone cluster on loopback for a test: a Master and N Workers started from the pip
pyspark installation, each in its own process group on free ports (web UIs too), up once every
worker has registered, stopped (by those process groups only) when the ``with`` block ends."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator


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


def client_env() -> dict[str, str]:
    """The environment of a driver process talking to the cluster."""
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)


@contextlib.contextmanager
def standalone(tmp_path: Path, *, workers: int = 1, cores: int = 2) -> Iterator[str]:
    """Start the cluster and yield its master URL (``spark://127.0.0.1:PORT``)."""
    import pyspark

    home = Path(pyspark.__file__).parent
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_WORKER_DIR=str(tmp_path / "work"),
               SPARK_NO_DAEMONIZE="1")
    port, ui = free_port(), free_port()
    spark_class = str(home / "bin" / "spark-class")
    procs: list[subprocess.Popen] = []
    try:
        master = _start([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                         "--port", str(port), "--webui-port", str(ui)], env, tmp_path / "master.log")
        procs.append(master)
        for i in range(workers):
            procs.append(_start([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                 "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", str(cores),
                                 "--memory", "1g", "--work-dir", str(tmp_path / f"work{i}"),
                                 f"spark://127.0.0.1:{port}"], env, tmp_path / f"worker{i}.log"))
        deadline = time.time() + 120
        while _alive_workers(ui) < workers:
            for i, p in enumerate(procs):
                log = tmp_path / ("master.log" if i == 0 else f"worker{i - 1}.log")
                assert p.poll() is None, log.read_text()[-2000:]
            assert time.time() < deadline, f"{workers} workers did not register within 120 s"
            time.sleep(1)
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            _stop(p)
