"""Benchmark of the Elle-style cycle search (spark_validation/checks/elle/) on one long Kafka
transactional history, run end to end through ``kraft audit``'s engine.

    python bench/elle.py [--ops N] [--clients C] [--keys K] [--cores 2] [--edges default,all]
                         [--engines spark,local] [--seed S]

The history is Jepsen's Kafka workload in its ``txn`` form: C clients, each op a transaction of
one to four micro-ops (``[:send k v]`` or ``[:poll]``), executed one at a time against K partition
logs (offsets with occasional gaps, as transaction markers leave), every client assigned every key
and polling onward from its own position (so consumers lag behind the log). Executed serially,
the history has no dependency cycle over ww/wr edges; one G1c is injected (two transactions that
each poll the other's send, 40% of the history apart), so the search has one two-op cycle to
find among N history entries (N/2 transactions). 1% of ops crash (``info``, no results).

Rows, each in its own process (so its peak memory is its own):

* ``default``: Jepsen's Kafka checker's edges: wr, plus Elle's realtime graph (``kraft audit``'s
  default). Must find exactly the injected G1c.
* ``all``: every edge kind: ``--ww-deps --rw-deps --process-order`` and realtime. Finds the G1c
  and, because consumers lag, G-single-item cycles (a poll that read a key up to an older value
  than a write it had already seen the effects of, or that completed before).

Engines: ``spark`` (``local[cores]``; the history's NDJSON file is read by Spark, the Kafka
anomalies by the arrow kernel, the cycles by :func:`spark_validation.checks.elle.spark.check_spark`) and
``local`` (``kraft audit --no-spark``: the whole audit in this process, cycles by
:func:`spark_validation.checks.elle.fast.check_rows`). Each row prints the audit's stage times, the cycle
stage alone (``cycles``: for Spark the Spark stage, for in-process the same search timed inside
the Kafka stage), ops/s end to end, and peak memory: the driver's RSS, and for Spark also the
JVM's peak RSS and the largest sum of its Python workers' RSS (sampled every 0.2 s). The 1-minute
load average is printed before and after each row: on a shared machine a row measured under load
is pessimistic. The table goes to bench/results/elle.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)

CYCLE = ("G0", "G1c", "G-single-item", "G-nonadjacent-item", "G2-item", "cycle-search-timeout")


def generate(path: Path, n_ops: int, clients: int, keys: int, seed: int) -> None:
    """Write the history as NDJSON (header line first)."""
    rng = random.Random(seed)
    logs: dict[str, list[tuple[int, int]]] = {str(k): [] for k in range(keys)}
    next_off = {str(k): 0 for k in range(keys)}
    pos = {(p, str(k)): 0 for p in range(clients) for k in range(keys)}
    ops: list[dict] = []
    value = 0
    n_txn = n_ops // 2
    inject = (n_txn // 10, n_txn // 2)
    planted: dict[str, tuple] = {}
    for t in range(n_txn):
        p = t % clients
        inv, comp = [], []
        mops = rng.randint(1, 4)
        if t in inject:
            mops = 0
        for _ in range(mops):
            if rng.random() < 0.5:
                k = str(rng.randrange(keys))
                value += 1
                off = next_off[k]
                next_off[k] += 1 if rng.random() < 0.9 else 2
                logs[k].append((off, value))
                inv.append(["send", k, value])
                comp.append(["send", k, [off, value]])
            else:
                polled = {}
                for k in rng.sample(sorted(logs), min(keys, rng.randint(1, 2))):
                    i = pos[(p, k)]
                    got = logs[k][i:i + 3]
                    if got:
                        polled[k] = [[o, v] for o, v in got]
                        pos[(p, k)] = i + len(got)
                inv.append(["poll"])
                comp.append(["poll", polled])
        if t == inject[0]:  # T1 sends A on key "0"; later T2 sends B on "1" and polls A; T1 polls B
            value += 1
            a = (next_off["0"], value)
            next_off["0"] += 1
            logs["0"].append(a)
            inv, comp = [["send", "0", a[1]], ["poll"]], [["send", "0", list(a)], ["poll", {}]]
            planted["T1"] = (len(ops) + 1, a)
        if t == inject[1]:
            value += 1
            b = (next_off["1"], value)
            next_off["1"] += 1
            logs["1"].append(b)
            inv = [["send", "1", b[1]], ["poll"]]
            comp = [["send", "1", list(b)], ["poll", {"0": [list(planted["T1"][1])]}]]
            ops[planted["T1"][0]]["value"][1] = ["poll", {"1": [list(b)]}]
        typ = "info" if rng.random() < 0.01 and t not in inject else "ok"
        ops.append({"index": len(ops), "process": p, "type": "invoke", "f": "txn", "value": inv, "time": len(ops)})
        ops.append({"index": len(ops), "process": p, "type": typ, "f": "txn", "value": comp if typ == "ok" else inv,
                    "time": len(ops)})
    with path.open("w") as out:
        out.write(json.dumps({"v": 1, "kind": "history", "model": "kafka", "source": "bench/elle.py"}) + "\n")
        for o in ops:
            out.write(json.dumps(o) + "\n")


def _status_bytes(pid: int, field: str) -> int:
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


def _op_rows(path: str) -> list:
    """The history's op rows (as the audit's op table has them: values as JSON text)."""
    from spark_validation.ingest.records import OpRow

    rows = []
    with open(path) as f:
        next(f)  # header
        for line, text in enumerate(f, 2):
            o = json.loads(text)
            rows.append(OpRow(path, line, o["index"], str(o["process"]), o["type"], o["f"], None,
                              json.dumps(o["value"]), o.get("time"), "kafka"))
    return rows


def child(args: argparse.Namespace) -> None:
    """One row, in its own process: print ``RESULT {json}``.

    ``audit-spark`` / ``audit-local``: ``kraft audit``'s engine end to end (``audit.run`` with
    the Kafka check only). ``cycles-spark``: the cycle check alone on Spark,
    :func:`checks.elle.spark.check_spark` over the op table read from Parquet (one file, so one partition
    holds the whole history). ``cycles-local``: :func:`checks.elle.fast.check_rows` over the op rows in this
    process."""
    from spark_validation.checks.elle import fast, spark
    from spark_validation.checks.elle.reference import CycleOptions

    every = args.edges == "all"
    opts = CycleOptions(ww_deps=every, rw_deps=every, process=every, realtime=True)
    workers = {"peak": 0, "stop": False}
    jvm_pid = None
    if args.engine.endswith("spark"):
        from spark_validation.session import get_session

        spark = get_session(f"local[{args.cores}]")
        jvm_pid = spark.sparkContext._gateway.proc.pid

        def sample() -> None:
            while not workers["stop"]:
                workers["peak"] = max(workers["peak"], sum(_status_bytes(p, "VmRSS") for p in _descendants(jvm_pid)))
                time.sleep(0.2)

        threading.Thread(target=sample, daemon=True).start()
    stages: dict[str, float] = {}
    if args.engine.startswith("audit"):
        from spark_validation.audit import AuditOptions, run

        local = args.engine == "audit-local"
        t = time.perf_counter()
        rep = run(AuditOptions(paths=(args.history,), out=Path(args.out), no_spark=local,
                               master=None if local else f"local[{args.cores}]", checks=frozenset({"kafka"}),
                               ww_deps=every, rw_deps=every, process_order=every, realtime=True, allow_unseen=True),
                  progress=lambda m: None)
        total = time.perf_counter() - t
        anoms = [a for _, a in rep.anomalies]
        stages = dict(rep.stage_seconds)
        for k, v in (getattr(rep.kafka_engine, "task_seconds", None) or {}).items():
            stages[f"task:{k}"] = v
    else:
        t = time.perf_counter()
        rows = _op_rows(args.history)
        stages["read"] = time.perf_counter() - t
        if args.engine == "cycles-local":
            t = time.perf_counter()
            anoms = fast.check_rows(rows, opts)
            total = stages["cycles"] = time.perf_counter() - t
        else:
            import attrs
            import pyarrow as pa
            import pyarrow.parquet as pq

            from spark_validation.ingest.spark_schema import OPS_SCHEMA

            records = [attrs.asdict(r) for r in rows]  # the op table's records, as the audit writes them
            t = time.perf_counter()
            i64, st = pa.int64(), pa.string()
            schema = pa.schema([("history", st), ("line", i64), ("index", i64), ("process", st), ("type", st),
                                ("f", st), ("key", st), ("value", st), ("time", i64), ("model", st)])
            pq.write_table(pa.Table.from_pylist(records, schema=schema), Path(args.out + ".parquet"))
            del rows, records
            ops = spark.read.schema(OPS_SCHEMA).parquet(args.out + ".parquet")
            stages["write parquet"] = time.perf_counter() - t
            t = time.perf_counter()
            anoms, info = spark.collect(spark.cycle_input(ops), opts)
            total = stages["cycles"] = time.perf_counter() - t
            stages.update(histories=info.histories, clustered=info.clustered, shuffled=info.shuffled)
    workers["stop"] = True
    cyc = [a.to_json() for a in anoms if any(a.kind.startswith(k) for k in CYCLE)]
    kinds: dict[str, int] = {}
    for a in cyc:
        kinds[a["kind"]] = kinds.get(a["kind"], 0) + 1
    out = {"total": total, "stages": stages, "kinds": kinds,
           "g1c": [a["evidence"]["cycle"] for a in cyc if a["kind"] == "G1c"],
           # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would count the parent's
           # memory (the generated history) as this process's
           "driver_rss": _status_bytes(os.getpid(), "VmHWM"),
           "jvm_rss": _status_bytes(jvm_pid, "VmHWM") if jvm_pid else 0, "worker_rss": workers["peak"],
           "cycle_stats": [(a["kind"], a["evidence"].get("scc_size"), len(a["evidence"].get("steps", [])))
                           for a in cyc][:8]}
    print("RESULT " + json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=1_000_000, help="history entries (invocations + completions)")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--keys", type=int, default=8)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--edges", default="default,all", help="rows: default (wr + realtime), all (every edge kind)")
    ap.add_argument("--engines", default="cycles-spark,cycles-local,audit-spark,audit-local",
                    help="rows per edge set: cycles-spark, cycles-local (the cycle check alone), "
                         "audit-spark, audit-local (kraft audit end to end, Kafka check only)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--engine", help=argparse.SUPPRESS)
    ap.add_argument("--history", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "kafka-txn.ndjson"
        t0 = time.perf_counter()
        generate(f, args.ops, args.clients, args.keys, args.seed)
        print(f"history: {args.ops:,} entries ({args.ops // 2:,} txns), {args.clients} clients, {args.keys} keys, "
              f"{f.stat().st_size / 1e6:.0f} MB NDJSON (generated in {time.perf_counter() - t0:.0f}s)", flush=True)
        head = (f"{'edges':<8}{'what':<14}{'seconds':>8}{'ops/s':>10}{'driver MiB':>11}{'JVM MiB':>8}"
                f"{'workers MiB':>12}  cycle anomalies")
        print(head)
        print("-" * len(head), flush=True)
        for edges in args.edges.split(","):
            for engine in args.engines.split(","):
                load0 = os.getloadavg()
                p = subprocess.run([sys.executable, __file__, "--child", "--edges", edges, "--engine", engine,
                                    "--history", str(f), "--out", str(Path(d) / f"out-{edges}-{engine}"),
                                    "--cores", str(args.cores)], capture_output=True, text=True,
                                   env={**os.environ, "KRAFT_SPARK_MASTER": f"local[{args.cores}]"})
                line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
                if line is None:
                    print(f"{edges:<8}{engine:<14} failed:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}", flush=True)
                    continue
                r = json.loads(line[7:])
                mib = 2 ** 20
                kinds = ", ".join(f"{k} {n}" for k, n in sorted(r["kinds"].items()))
                print(f"{edges:<8}{engine:<14}{r['total']:>8.1f}{args.ops / r['total']:>10,.0f}"
                      f"{r['driver_rss'] / mib:>11.0f}{r['jvm_rss'] / mib:>8.0f}{r['worker_rss'] / mib:>12.0f}  {kinds}",
                      flush=True)
                st = ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in r["stages"].items())
                print(f"{'':<22}load {load0[0]:.1f} -> {os.getloadavg()[0]:.1f}; {st}; G1c {r['g1c']}; "
                      f"first cycles (kind, scc size, length) {r['cycle_stats']}", flush=True)
                if not r["g1c"]:
                    print("  the injected G1c was not found", flush=True)


if __name__ == "__main__":
    sys.exit(main() if "--child" in sys.argv else results.run("elle", main))
