"""One SparkContext (and, when asked for, one SparkSession over it) per process, bound to
loopback, quiet, with a clear error when java is absent.

``local[*]`` by default; ``--master spark://host:port`` (or any master URL) for a cluster.
Everything the driver opens (RPC, block manager) listens on 127.0.0.1 and the web UI is off, so
an audit never exposes a port beyond the machine.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from kraft import interrupt
from spark_validation.unavailable import SparkUnavailable

__all__ = ["SparkUnavailable", "get_context", "get_session", "java_problem", "stop_session"]

_SC: "SparkContext | None" = None
_JAVA_VERSION: str | None = None  # the java binary and its -version text (java_problem)
_SESSION: "SparkSession | None" = None
_MASTER: str | None = None


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
    global _JAVA_VERSION
    _JAVA_VERSION = f"{os.path.realpath(java)}\n{out.stderr.strip()}"
    return None


def cds_archive() -> str:
    """Where this Python environment keeps the class-data-sharing archive of the local driver
    JVM (JDK 13+ dynamic AppCDS, ``-XX:SharedArchiveFile``): one per java and pyspark version,
    written by :func:`train_cds` (``./kraft.sh`` runs it once after installing). Loading Spark's
    classes from it instead of from the jars shortens a light local start. Absent or stale:
    Spark starts without it."""
    if _JAVA_VERSION is None:
        java_problem()
    key = hashlib.sha256(f"{_JAVA_VERSION}\n{pyspark.__version__}".encode()).hexdigest()[:16]
    return os.path.join(sys.prefix, "share", "kraft", f"spark-driver-{key}.jsa")


def train_cds() -> str | None:
    """Write :func:`cds_archive`: start a light local context with ``-XX:ArchiveClassesAtExit``,
    run a small job of Python tasks (the classes an audit's start loads), stop; the JVM writes
    the archive as it exits. Returns its path, or None (and says why on stderr) if it could not
    be written; nothing depends on it."""
    problem = java_problem()
    path = cds_archive()
    if problem:
        print(f"kraft: no Spark class archive: {problem}", file=sys.stderr)
        return None
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    code = ("from spark_validation import session\n"
            "sc = session.get_context('local[2]', light_jvm=True, app_name='kraft-cds')\n"
            "sc.parallelize(range(6), 6).mapPartitions(lambda it: [sum(1 for _ in it)]).collect()\n"
            "session.stop_session()\n")
    env = {**os.environ, "KRAFT_SPARK_CDS_TRAIN": tmp}
    try:  # its own session: an interrupt stops it and the JVM it starts
        exit_code = interrupt.run([sys.executable, "-c", code], env=env, timeout=600,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as exc:
        print(f"kraft: no Spark class archive: {exc}", file=sys.stderr)
        return None
    if exit_code is None:
        print("kraft: no Spark class archive: the training run took more than 600 s", file=sys.stderr)
        return None
    size = -1
    for _ in range(100):  # the JVM may still be writing it as the Python side returns
        now = os.path.getsize(tmp) if os.path.exists(tmp) else -1
        if now > 0 and now == size:
            break
        size = now
        time.sleep(0.3)
    if size <= 0:
        print("kraft: no Spark class archive: the training JVM wrote none", file=sys.stderr)
        return None
    os.replace(tmp, path)
    return path


def _cds_options() -> str:
    """The driver JVM's class-data-sharing options: write the archive (training), use it, or none."""
    train = os.environ.get("KRAFT_SPARK_CDS_TRAIN")
    if train:
        return f" -XX:ArchiveClassesAtExit={train} -Xlog:cds=off -Xlog:cds+dynamic=off"
    if os.environ.get("KRAFT_SPARK_CDS") == "off":
        return ""
    path = cds_archive()
    return f" -XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off" if os.path.exists(path) else ""


def get_session(master: str | None = None, *, shuffle_partitions: int | None = None,
                app_name: str = "kraft-audit", executor_cores: int | None = None,
                light_jvm: bool = False) -> "SparkSession":
    """The process's SparkSession, created on first use over the process's SparkContext
    (:func:`get_context`, which takes the same options).

    ``master`` None means ``local[*]``. Asking for a different master than the live session's
    stops the old one first (a process audits against one cluster at a time)."""
    global _SESSION
    master = master or "local[*]"
    if _SESSION is not None and _MASTER == master:
        if shuffle_partitions:
            _SESSION.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
        return _SESSION
    get_context(master, shuffle_partitions=shuffle_partitions, app_name=app_name,
                executor_cores=executor_cores, light_jvm=light_jvm)
    try:
        # wraps the live context; its spark.sql.* settings become the session's
        spark = SparkSession.builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - Py4J/JVM errors come in many types
        raise SparkUnavailable(f"Spark could not start a session with master {master}: {exc}") from exc
    if shuffle_partitions:
        spark.conf.set("spark.sql.shuffle.partitions", str(shuffle_partitions))
    _SESSION = spark
    return spark


def get_context(master: str | None = None, *, shuffle_partitions: int | None = None,
                app_name: str = "kraft-audit", executor_cores: int | None = None,
                light_jvm: bool = False) -> "SparkContext":
    """The process's SparkContext, created on first use: enough for work that runs in the Python
    workers (the audit of history files), which then does not pay for starting Spark SQL's
    session; :func:`get_session` adds it when needed.

    ``light_jvm``: the caller's work runs in the Python workers and the JVM only schedules tasks
    and carries their results (the audit of history files, conformance). A local driver JVM then
    starts with the client JIT compiler only (``-XX:TieredStopAtLevel=1``) and the serial
    collector: on few cores the optimising compiler's threads compete with the start itself
    and slow it down, and its code would
    only pay off in long JVM work (the DataFrame engine, Parquet tables), which keeps the default.
    ``KRAFT_SPARK_JIT=full`` turns this off. A light local JVM also loads its classes from the
    class-data-sharing archive where one was written (:func:`cds_archive`; ``KRAFT_SPARK_CDS=off``
    does without). The options count only when the context starts.
    """
    global _SC, _MASTER
    master = master or "local[*]"
    if _SC is not None:
        if _MASTER == master:
            return _SC
        stop_session()
    problem = java_problem()
    if problem:
        raise SparkUnavailable(problem)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON") or _python())
    log_conf = _quiet_log4j()
    parts = shuffle_partitions or (4 if master.startswith("local") else 8)
    conf = (SparkConf().setMaster(master).setAppName(app_name)
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.driver.bindAddress", "127.0.0.1")
            .set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false")
            .set("spark.sql.shuffle.partitions", str(parts))
            .set("spark.sql.adaptive.enabled", "true")
            .set("spark.sql.ansi.enabled", "false")
            .set("spark.sql.session.timeZone", "UTC")
            .set("spark.driver.memory", os.environ.get("KRAFT_SPARK_DRIVER_MEMORY", "2g"))
            .set("spark.sql.execution.arrow.pyspark.enabled", "true")
            .set("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_conf}" + (
                " -XX:TieredStopAtLevel=1 -XX:+UseSerialGC" + _cds_options()
                if light_jvm and master.startswith("local") and os.environ.get("KRAFT_SPARK_JIT") != "full" else ""))
            .set("spark.executor.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_conf}"))
    if executor_cores:
        conf = conf.set("spark.executor.cores", str(executor_cores)).set("spark.cores.max", str(executor_cores))
    if not master.startswith("local"):
        conf = conf.set("spark.executor.memory", os.environ.get("KRAFT_SPARK_EXECUTOR_MEMORY", "1g"))
    try:
        with interrupt.deferred():  # an interrupt waits until the JVM is up and can be stopped
            sc = SparkContext.getOrCreate(conf)
            _adopt_gateway(SparkContext)
    except Exception as exc:  # noqa: BLE001 - Py4J/JVM start errors come in many types
        raise SparkUnavailable(f"Spark could not start with master {master}: {exc}") from exc
    sc.setLogLevel("ERROR")
    _SC, _MASTER = sc, master
    return sc


def _adopt_gateway(context_class: type) -> None:
    """Stop the driver's JVM (pyspark's gateway process, which ignores SIGINT) when this process is
    interrupted; Spark's shutdown hooks then stop its Python workers."""
    proc = getattr(getattr(context_class, "_gateway", None), "proc", None)
    if proc is not None:
        interrupt.adopt(proc, grace=10.0, wind_down=_cancel_jobs)  # a stop takes seconds on a busy machine


def _cancel_jobs() -> None:
    """End the context's jobs as a cancelled job ends (its tasks and their Python workers are
    killed without an error report), then stop the context, so that the JVM's shutdown finds
    nothing running (a shutdown under running tasks logs each as a crash)."""
    sc = _SC
    if sc is None:
        return
    sc.cancelAllJobs()
    deadline = time.monotonic() + 3.0
    while sc.statusTracker().getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.1)
    stop_session()


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
    path = os.path.join(tempfile.gettempdir(), f"kraft-audit-log4j2-{os.getpid()}.properties")
    if not os.path.exists(path):
        with open(path, "w") as fh:
            fh.write(_LOG4J)
    return path


def _python() -> str:
    return sys.executable


def stop_session() -> None:
    """Stop the process's session and context (tests switching master; the CLI never needs it)."""
    global _SC, _SESSION, _MASTER
    if _SESSION is not None:
        _SESSION.stop()
    elif _SC is not None:
        _SC.stop()
    _SC, _SESSION, _MASTER = None, None, None


def _main(argv: list[str]) -> int:
    """``python -m spark_validation.session --train-cds`` (./kraft.sh, after installing): 0 with
    the archive written, 2 if not (train_cds said why) or on a usage error."""
    if argv != ["--train-cds"]:
        print("usage: python -m spark_validation.session --train-cds", file=sys.stderr)
        return 2
    written = train_cds()
    if written:
        print(f"kraft: Spark class archive {written}", file=sys.stderr)
    return 0 if written else 2


if __name__ == "__main__":
    with interrupt.guard("python -m spark_validation.session"):
        sys.exit(_main(sys.argv[1:]))
