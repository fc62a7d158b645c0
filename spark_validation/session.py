"""One SparkSession per process, bound to loopback, quiet, with a clear error when java is absent.

``local[*]`` by default; ``--master spark://host:port`` (or any master URL) for a cluster.
Everything the driver opens (RPC, block manager) listens on 127.0.0.1 and the web UI is off, so
an audit never exposes a port beyond the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

_SESSION: "SparkSession | None" = None
_MASTER: str | None = None


class SparkUnavailable(RuntimeError):
    """Java is missing or Spark could not start; the message says which and what to do."""


def java_problem() -> str | None:
    """None if a usable java is on JAVA_HOME or PATH, else a message naming what is missing."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        where = f"JAVA_HOME={home}" if home else "PATH"
        return f"java not found on {where}: Spark needs Java 17 (install a JDK 17 or use --no-spark)"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"could not run {java}: {exc}"
    if out.returncode != 0:
        return f"{java} -version failed: {out.stderr.strip()[:200]}"
    return None


def get_session(master: str | None = None, *, shuffle_partitions: int | None = None,
                app_name: str = "kraft-audit", executor_cores: int | None = None,
                light_jvm: bool = False) -> "SparkSession":
    """The process's SparkSession, created on first use.

    ``master`` None means ``local[*]``. Asking for a different master than the live session's
    stops the old one first (a process audits against one cluster at a time).

    ``light_jvm``: the caller's work runs in the Python workers and the JVM only schedules tasks
    and carries their results (the audit of history files, conformance). A local driver JVM then
    starts with the client JIT compiler only (``-XX:TieredStopAtLevel=1``) and the serial
    collector: on two cores the optimising compiler's threads compete with the start itself
    (the session took 11 s instead of 6-7 s with one core busy, 2026-11-26), and its code would
    only pay off in long JVM work (the DataFrame engine, Parquet tables), which keeps the default.
    ``KRAFT_SPARK_JIT=full`` turns this off.
    """
    global _SESSION, _MASTER
    master = master or "local[*]"
    if _SESSION is not None:
        if _MASTER == master:
            if shuffle_partitions:
                _SESSION.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
            return _SESSION
        stop_session()
    problem = java_problem()
    if problem:
        raise SparkUnavailable(problem)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON") or _python())
    from pyspark.sql import SparkSession

    log_conf = _quiet_log4j()
    parts = shuffle_partitions or (4 if master.startswith("local") else 8)
    b = (SparkSession.builder.master(master).appName(app_name)
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", str(parts))
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.ansi.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.driver.memory", os.environ.get("KRAFT_SPARK_DRIVER_MEMORY", "2g"))
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_conf}" + (
             " -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
             if light_jvm and master.startswith("local") and os.environ.get("KRAFT_SPARK_JIT") != "full" else ""))
         .config("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_conf}"))
    if executor_cores:
        b = b.config("spark.executor.cores", str(executor_cores)).config("spark.cores.max", str(executor_cores))
    if not master.startswith("local"):
        b = b.config("spark.executor.memory", os.environ.get("KRAFT_SPARK_EXECUTOR_MEMORY", "1g"))
    try:
        spark = b.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - Py4J/JVM start errors come in many types
        raise SparkUnavailable(f"Spark could not start with master {master}: {exc}") from exc
    spark.sparkContext.setLogLevel("ERROR")
    _SESSION, _MASTER = spark, master
    return spark


_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{1}: %m%n
"""


def _quiet_log4j() -> str:
    """A log4j2 config that keeps Spark to errors (written once per process to a temp file)."""
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"kraft-audit-log4j2-{os.getpid()}.properties")
    if not os.path.exists(path):
        with open(path, "w") as fh:
            fh.write(_LOG4J)
    return path


def _python() -> str:
    import sys

    return sys.executable


def stop_session() -> None:
    """Stop the process's session (tests switching master; the CLI never needs it)."""
    global _SESSION, _MASTER
    if _SESSION is not None:
        _SESSION.stop()
    _SESSION, _MASTER = None, None
