"""Benchmark of ``kraft audit``'s Spark engine: Kafka anomaly checks and distributed linearizability.

    python bench/audit.py                      # 10M-op Kafka corpus, lin slice, local[1] and local[2]
    python bench/audit.py --cores 2,1 --from-ops  # also the check from the op table
    python bench/audit.py --ops 2000000 --cores 2 --lin-histories 100

The corpus is generated once and cached (``--dir``, default /tmp/kraft-audit-bench) as a Parquet
op table in the shape ``kraft audit`` writes (``ops.parquet``), plus an NDJSON slice for the ingest
measurement. Kafka histories follow the simulator's flat send/poll form: 2 producers and 2
consumers per history, 2 keys; 1 in 50 histories has an injected anomaly (a consumer skips an
offset, or a send is acknowledged at an offset that holds another value). Register histories for
linearizability are a smaller slice (stated in the table).

Rows per configuration:

* arrow (``spark_validation.checks.kafka.spark``): the check from kernel rows stored at
  ingest clustered by history, read file by file by the Python workers (``stored, files``) and
  read by Spark and handed over with ``mapInArrow`` (``stored, mapInArrow``); with ``--from-ops``
  the check from the op table as ``kraft audit`` runs it (extraction inside); ingest (kernel rows
  clustered and written as Parquet). The bench asserts that every arrow row finds exactly the
  anomalies and evidence of the first one.

Then the NDJSON slice into Spark the way ``kraft audit`` gets history files there (``ingest: ndjson
-> op table``): each file read in a Spark task by the engine's per-file function, which writes the
op table (``ops.parquet``, as ``--store-kafka-rows`` has it written), then that table read by Spark
as ``kraft audit OUT/ops.parquet`` reads it, and materialised. Then a lower bound (a scan of every
column of the op table) and linearizability. Per-history times for the Kafka checks come from
in-process rows over 50 histories of 5,000 op rows: the reference and the arrow kernel (micro-ops
extracted beforehand, so the row times the kernel alone).

Each configuration runs in a fresh subprocess (its own JVM) so peak memory is per run: driver =
peak RSS of the Python driver, JVM = peak RSS (VmHWM) of the Spark JVM (driver + executors in
local mode), py workers = the largest sum of the RSS of the JVM's Python worker processes,
sampled every 0.2 s (where the arrow kernel runs). The table goes to bench/results/audit.md.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import attrs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import results  # noqa: E402  (bench/results.py)

OPS_PER_HISTORY = 5000


# ------------------------------------------------------------------------------------- corpus


def kafka_history(hid: str, n_ops: int, rng: random.Random, anomaly: str | None) -> list[tuple]:
    """Op rows ``(history, line, index, process, type, f, key, value, time, model)``."""
    rows: list[tuple] = []
    logs: dict[str, list[int]] = {"0": [], "1": []}
    pos = {(p, k): 0 for p in ("2", "3") for k in logs}
    line = 0
    nxt = 0

    def emit(p: str, typ: str, f: str, k: str, v: str | None) -> None:
        nonlocal line
        line += 1
        rows.append((hid, line, line - 1, p, typ, f, k, v, line * 1000, "kafka"))

    skip_at = rng.randrange(n_ops // 4, n_ops // 2) if anomaly else -1
    while line < n_ops:
        k = rng.choice(("0", "1"))
        if rng.random() < 0.5:
            p = rng.choice(("0", "1"))
            nxt += 1
            off = len(logs[k])
            logs[k].append(nxt)
            emit(p, "invoke", "send", k, str(nxt))
            claimed = off - 1 if anomaly == "inconsistent" and line >= skip_at > 0 and off > 0 else off
            if claimed != off:
                skip_at = -1
            emit(p, "ok", "send", k, f"[{claimed},{nxt}]")
        else:
            p = rng.choice(("2", "3"))
            start = pos[(p, k)]
            end = min(len(logs[k]), start + rng.randint(1, 5))
            if anomaly == "skip" and line >= skip_at > 0 and end - start >= 2:
                start += 1  # skip one offset
                skip_at = -1
            pairs = ",".join(f"[{o},{logs[k][o]}]" for o in range(start, end))
            pos[(p, k)] = end
            emit(p, "invoke", "poll", k, None)
            emit(p, "ok", "poll", k, f"[{pairs}]")
    return rows


def register_history(hid: str, n_ops: int, rng: random.Random) -> list[tuple]:
    """A linearizable register history: 3 processes, overlapping writes and reads."""
    rows: list[tuple] = []
    value: int | None = None  # the model's default initial value
    line = 0
    pending: dict[str, tuple[str, int]] = {}
    while line < n_ops:
        p = rng.choice(("0", "1", "2"))
        line += 1
        if p in pending:
            f, v = pending.pop(p)
            out = v if f == "write" else value
            if f == "write":
                value = v
            rows.append((hid, line, line - 1, p, "ok", f, None, None if out is None else str(out), line,
                         "register"))
        else:
            f = rng.choice(("read", "write"))
            v = rng.randrange(5)
            pending[p] = (f, v)
            rows.append((hid, line, line - 1, p, "invoke", f, None, str(v) if f == "write" else None, line,
                         "register"))
    return rows


def ensure_corpus(d: Path, n_ops: int, lin_histories: int, lin_ops: int) -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta_file = d / "meta.json"
    want = {"ops": n_ops, "lin_histories": lin_histories, "lin_ops": lin_ops, "v": 3}
    if meta_file.exists() and json.loads(meta_file.read_text()).get("want") == want:
        return json.loads(meta_file.read_text())
    d.mkdir(parents=True, exist_ok=True)
    import shutil

    for sub in ("kafka.parquet", "register.parquet", "ndjson"):
        shutil.rmtree(d / sub, ignore_errors=True)
    names = ["history", "line", "index", "process", "type", "f", "key", "value", "time", "model"]
    schema = pa.schema([("history", pa.string()), ("line", pa.int64()), ("index", pa.int64()),
                        ("process", pa.string()), ("type", pa.string()), ("f", pa.string()), ("key", pa.string()),
                        ("value", pa.string()), ("time", pa.int64()), ("model", pa.string())])
    rng = random.Random(42)
    n_hist = max(1, n_ops // OPS_PER_HISTORY)
    (d / "kafka.parquet").mkdir()
    (d / "ndjson").mkdir()
    injected = 0
    batch: list[tuple] = []
    part = 0
    t0 = time.time()
    for h in range(n_hist):
        anomaly = ("skip", "inconsistent")[h % 2] if h % 50 == 7 else None
        injected += anomaly is not None
        rows = kafka_history(f"kafka-{h:05d}", OPS_PER_HISTORY, rng, anomaly)
        if h < max(1, n_hist // 10):  # an NDJSON slice (10%) for the ingest measurement
            with open(d / "ndjson" / f"kafka-{h:05d}.ndjson", "w") as fh:
                fh.write(json.dumps({"v": 1, "kind": "history", "model": "kafka"}) + "\n")
                for r in rows:
                    o = {"process": int(r[3]), "type": r[4], "f": r[5], "key": int(r[6]), "index": r[2]}
                    o["value"] = json.loads(r[7]) if r[7] is not None else None
                    fh.write(json.dumps(o) + "\n")
        batch.extend(rows)
        if len(batch) >= 1_000_000 or h == n_hist - 1:
            cols = list(zip(*batch))
            tbl = pa.table({n: pa.array(c, type=schema.field(n).type) for n, c in zip(names, cols)})
            pq.write_table(tbl, d / "kafka.parquet" / f"part-{part:04d}.parquet")
            part += 1
            batch = []
            print(f"  generated {h + 1}/{n_hist} kafka histories ({time.time() - t0:.0f}s)", file=sys.stderr)
    reg = [r for h in range(lin_histories) for r in register_history(f"reg-{h:04d}", lin_ops, rng)]
    cols = list(zip(*reg))
    (d / "register.parquet").mkdir()
    pq.write_table(pa.table({n: pa.array(c, type=schema.field(n).type) for n, c in zip(names, cols)}),
                   d / "register.parquet" / "part-0000.parquet")
    meta = {"want": want, "kafka_ops": n_hist * OPS_PER_HISTORY, "kafka_histories": n_hist,
            "injected": injected, "lin_ops": len(reg), "ndjson_ops": max(1, n_hist // 10) * OPS_PER_HISTORY}
    meta_file.write_text(json.dumps(meta))
    return meta


# ------------------------------------------------------------------------------------- one run


def _status_bytes(pid: int, field: str) -> int:
    """A memory field of /proc/PID/status (``VmHWM``: peak RSS, ``VmRSS``: current) in bytes."""
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out



class WorkerMemory:
    """Samples the summed RSS of the Python workers under the JVM (a daemon thread)."""

    def __init__(self, jvm_pid: int) -> None:
        import threading

        self.jvm_pid, self.peak, self.stop = jvm_pid, 0, False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stop:
            self.peak = max(self.peak, sum(_status_bytes(p, "VmRSS") for p in _descendants(self.jvm_pid)))
            time.sleep(0.2)


def _anom_key(anoms) -> list:
    """Typed Kafka anomalies as comparable tuples."""
    return sorted(a.sort_key() for a in anoms)


def ndjson_ingest(spark, d: Path, table: Path) -> tuple[int, float]:
    """(ops, seconds) of getting the NDJSON slice into Spark as ``kraft audit`` does: each file read
    in a Spark task by the engine's own per-file function (:func:`engine.history.check_file` with no
    check selected: the fast row reader, the pairing check) writing its op rows into the op table
    ``table``, files grouped as the engine groups them (:func:`engine.spark.units`); then that table
    read by Spark (:func:`ingest.spark.load`) and materialised as the audit of a table does."""
    import shutil

    from spark_validation.engine.history import check_file
    from spark_validation.engine.spark import units
    from spark_validation.ingest import spark as ingest
    from spark_validation.options import AuditOptions

    paths = sorted((d / "ndjson").glob("*.ndjson"))
    shutil.rmtree(table, ignore_errors=True)
    opts, sc = AuditOptions(paths=(), checks=frozenset()), spark.sparkContext
    groups = units(paths, sc.defaultParallelism * 3)

    def run_unit(it):
        for u, files in it:
            for f in files:
                yield check_file(f, opts, "kernel", str(table), None, u).ops

    t = time.perf_counter()
    read = sum(sc.parallelize(groups, len(groups)).mapPartitions(run_unit).collect())
    n = ingest.load(spark, [table], None).localCheckpoint().count()
    secs = time.perf_counter() - t
    assert n == read, f"the op table holds {n} ops, the tasks read {read}"
    return n, secs


def child(args: argparse.Namespace) -> None:
    """Run in a subprocess: one master configuration, print one JSON line."""
    from pyspark.sql import functions as F

    from spark_validation.checks.kafka import spark as kafka_spark
    from spark_validation.engine.tables import lin_udf as _lin_udf
    from spark_validation.checks.linearizable.models import MODELS
    from spark_validation.session import get_session

    d = Path(args.dir)
    meta = json.loads((d / "meta.json").read_text())
    spark = get_session(f"local[{args.child}]", shuffle_partitions=2 * args.child)
    jvm_pid = spark.sparkContext._gateway.proc.pid
    workers = WorkerMemory(jvm_pid)
    engines = args.engines.split(",")
    out: dict = {"cores": args.child, "load_start": os.getloadavg()}

    def noop(df) -> None:
        df.write.format("noop").mode("overwrite").save()

    ops = spark.read.parquet(str(d / "kafka.parquet"))
    out["kafka_ops"] = meta["kafka_ops"]
    # lower bounds: a bare scan of every column of the op table, then of the micro-op table, and
    # one shuffle + sort of the micro-op table (``count()`` would only read Parquet footers)
    t = time.perf_counter()
    noop(ops)
    out["scan_s"] = time.perf_counter() - t

    found: list = []  # the anomalies of the first Kafka check; every other check must agree

    def agree(rows, what: str) -> None:
        key = _anom_key(rows)
        if found:
            assert key == found[0], f"{what} disagrees with the first Kafka check"
        else:
            found.append(key)
            out["kafka_anomalies"] = len([a for a in key if a[1] != "unseen"])
            out["kafka_bad_histories"] = len({a[0] for a in key if a[1] != "unseen"})

    if "arrow" in engines:
        # ingest, Kafka part: kernel rows clustered by history (one shuffle, once), as Parquet
        kp = d / f"krows-{args.child}.parquet"
        t = time.perf_counter()
        kafka_spark.store(ops, str(kp), 8)
        out["a_store_s"] = time.perf_counter() - t
        for i in range(2):  # the first run also starts the Python workers; the second is kept
            t = time.perf_counter()
            an, info = kafka_spark.collect_stored(spark, str(kp))
            out["a_files_s"] = time.perf_counter() - t
            out["a_files_first_s"] = out.get("a_files_first_s", out["a_files_s"])
        out["a_info"] = attrs.asdict(info)
        agree(an, "arrow (files)")
        t = time.perf_counter()
        an, info = kafka_spark.collect(m=spark.read.parquet(str(kp)))
        out["a_map_s"] = time.perf_counter() - t
        agree(an, "arrow (mapInArrow)")
        if args.from_ops:
            t = time.perf_counter()
            an, info = kafka_spark.collect(ops)
            out["a_ops_s"] = time.perf_counter() - t
            out["a_ops_info"] = attrs.asdict(info)
            agree(an, "arrow (from ops)")

    out["ingest_ops"], out["ingest_s"] = ndjson_ingest(spark, d, d / f"ndjson-ops-{args.child}.parquet")

    # Linearizability, one history per task group, per-history times measured in the executors
    t = time.perf_counter()
    lops = spark.read.parquet(str(d / "register.parquet"))
    rows = (lops.repartition(max(2, 4 * args.child), "history").groupBy("history")
            .applyInPandas(_lin_udf(frozenset(MODELS), None, args.budget),
                           "history string, valid string, ops long, seconds double, anomalies string, info string")
            .collect())
    out["lin_s"] = time.perf_counter() - t
    out["lin_ops"] = sum(r["ops"] for r in rows)
    out["lin_per_history"] = sorted(r["seconds"] for r in rows)
    out["lin_valid"] = sum(1 for r in rows if r["valid"] == "true")
    out["driver_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["jvm_rss"] = _status_bytes(jvm_pid, "VmHWM")
    workers.stop = True
    out["worker_rss"] = workers.peak
    out["load_end"] = os.getloadavg()
    print("RESULT " + json.dumps(out), flush=True)


def kafka_per_history(d: Path, sample: int) -> tuple[list[float], list[float]]:
    """Per-history Kafka check times in this process (a sample): the reference engine, and the
    arrow kernel on the history's kernel rows (extracted beforehand). They must agree."""
    import pyarrow.parquet as pq

    from spark_validation.checks.kafka import kernel, rules
    from spark_validation.checks.kafka.anomaly import sorted_anomalies
    from spark_validation.ingest.records import OpRow

    files = sorted((d / "kafka.parquet").glob("*.parquet"))
    by: dict[str, list[OpRow]] = {}
    for r in pq.read_table(files[0]).to_pylist():
        by.setdefault(r["history"], []).append(OpRow.of_mapping(r))
    ref, arrow = [], []
    for hid in sorted(by)[:sample]:
        t = time.perf_counter()
        a = rules.check_rows(by[hid])
        ref.append(time.perf_counter() - t)
        kt = kernel.input_table(by[hid])
        t = time.perf_counter()
        b = kernel.check_table(kt)
        arrow.append(time.perf_counter() - t)
        assert sorted_anomalies(b) == a, hid
    return sorted(ref), sorted(arrow)


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", type=int, default=10_000_000, help="Kafka corpus size in op rows")
    ap.add_argument("--lin-histories", type=int, default=200)
    ap.add_argument("--lin-ops", type=int, default=500, help="op rows per register history")
    ap.add_argument("--cores", default="1,2", help="local[N] configurations to run")
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--dir", default="/tmp/kraft-audit-bench")
    ap.add_argument("--from-ops", action="store_true",
                    help="also time the check from the op table (micro-op extraction inside, as kraft audit runs it)")
    ap.add_argument("--engines", default="arrow", help="Kafka engines to time: arrow (the only one)")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    d = Path(args.dir)
    t = time.time()
    meta = ensure_corpus(d, args.ops, args.lin_histories, args.lin_ops)
    print(f"corpus: {meta['kafka_ops']:,} Kafka op rows in {meta['kafka_histories']} histories "
          f"({meta['injected']} with an injected anomaly); {meta['lin_ops']:,} register op rows in "
          f"{args.lin_histories} histories; NDJSON slice {meta['ndjson_ops']:,} ops  [{time.time() - t:.0f}s]")
    ref_times, arrow_times = kafka_per_history(d, 50)
    runs = []
    for c in [int(x) for x in args.cores.split(",")]:
        cmd = [sys.executable, __file__, "--child", str(c), "--dir", str(d), "--budget", str(args.budget),
               "--engines", args.engines]
        p = subprocess.run(cmd + (["--from-ops"] if args.from_ops else []),
                           capture_output=True, text=True)
        line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
        if line is None:
            print(p.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"run with local[{c}] failed")
        runs.append(json.loads(line[7:]))
    print()
    hdr = (f"{'cores':>5} {'checker':<34} {'ops':>12} {'seconds':>9} {'ops/s':>12} {'per-history median/p99/max (s)':>32} "
           f"{'driver MiB':>10} {'JVM MiB':>8} {'py workers MiB':>14}")
    print(hdr)
    print("-" * len(hdr))
    for r in runs:
        mem = f"{r['driver_rss'] / 2**20:>10.0f} {r['jvm_rss'] / 2**20:>8.0f} {r['worker_rss'] / 2**20:>14.0f}"
        lin = r["lin_per_history"]
        K = r["kafka_ops"]

        def row(name: str, n: int, secs: float, extra: str = "") -> None:
            print(f"{r['cores']:>5} {name:<34} {n:>12,} {secs:>9.1f} {n / secs:>12,.0f} {extra:>32} {mem}")

        if "a_files_s" in r:
            i = r["a_info"]
            row("kafka check (arrow, stored, files)", K, r["a_files_s"], "(see arrow kernel row)")
            row("kafka check (arrow, mapInArrow)", K, r["a_map_s"], "(stored rows read by Spark)")
            if "a_ops_s" in r:
                row("kafka extract+check (arrow)", K, r["a_ops_s"], "(as kraft audit runs it)")
            row("ingest: kernel rows, clustered", K, r["a_store_s"], f"({i['rows']:,} kernel rows)")
        row("bound: scan op table", K, r["scan_s"])
        print(f"{r['cores']:>5} {'ingest: ndjson -> op table':<34} {r['ingest_ops']:>12,} {r['ingest_s']:>9.1f} "
              f"{r['ingest_ops'] / r['ingest_s']:>12,.0f} {'':>32} {mem}")
        print(f"{r['cores']:>5} {'linearizability':<34} {r['lin_ops']:>12,} {r['lin_s']:>9.1f} "
              f"{r['lin_ops'] / r['lin_s']:>12,.0f} "
              f"{f'{statistics.median(lin):.4f}/{pct(lin, 0.99):.4f}/{lin[-1]:.4f}':>32} {mem}")
        print(f"{'':>5} load average at start {[round(x, 2) for x in r['load_start']]}, "
              f"at end {[round(x, 2) for x in r['load_end']]}")
        if "a_info" in r:
            i = r["a_info"]
            print(f"{'':>5} arrow (files): {i['histories']} histories, {i['clustered']} checked in place, "
                  f"{i['shuffled']} after a shuffle, {i['chunks']} chunks; first run (workers starting) "
                  f"{r['a_files_first_s']:.1f}s")
        if "a_ops_info" in r:
            i = r["a_ops_info"]
            print(f"{'':>5} arrow (from ops): {i['clustered']} histories checked in place, {i['shuffled']} after a shuffle")
        print(f"{'':>5} kafka anomalies found: {r['kafka_anomalies']} in {r['kafka_bad_histories']} histories "
              f"(injected: {meta['injected']}); every Kafka row found the same; lin valid {r['lin_valid']}/{len(lin)}")
    for name, ts in (("kafka (reference, 1 py)", ref_times), ("kafka (arrow kernel, 1 py)", arrow_times)):
        print(f"{'1':>5} {name:<34} {OPS_PER_HISTORY * len(ts):>12,} {sum(ts):>9.1f} "
              f"{OPS_PER_HISTORY * len(ts) / sum(ts):>12,.0f} "
              f"{f'{statistics.median(ts):.4f}/{pct(ts, 0.99):.4f}/{ts[-1]:.4f}':>32}")


if __name__ == "__main__":
    sys.exit(main() if "--child" in sys.argv else results.run("audit", main))
