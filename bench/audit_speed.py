"""Benchmark of ``kraft audit``'s ingest and end-to-end speed, and of the linearizability search.

    python bench/audit_speed.py                                  # all rows, local[2]
    python bench/audit_speed.py --ops 1000000                    # a quicker run (one e2e size)
    KRAFT_PORCUPINE=/path/to/driver python bench/audit_speed.py --etcd DIR

The table goes to bench/results/audit_speed.md. Rows (every number is one run of this command;
the load average is printed beside each, and the first and last lines time one core on a fixed
Python loop, since a shared VM's host can slow every core with no load showing here):

* ``ingest: ndjson`` / ``ingest: edn``: history files to op rows (:func:`ingest.rows.read_rows`,
  what ``kraft audit`` runs first in its Spark tasks), on Spark ``local[N]``, files grouped into
  about three tasks per core; the workers are started by a first run and the second is timed.
  Corpus: Jepsen's Kafka workload in its micro-op form (``:send``/``:poll`` micro-ops, 4 keys,
  4 producers/consumers, a final poll), one history of ``--per-file`` ops per file, written
  once as NDJSON and as EDN (Clojure-printed op maps, one per line) under ``--dir``.
  Spark starts as ``kraft audit`` starts it for history files (a SparkContext on a light local
  driver JVM, ``session.get_context``). ``task CPU`` is the CPU time the tasks spent reading,
  per op, and what it comes to on idle cores: on a shared machine that is the number that does
  not depend on the neighbours.
* ``kraft audit DIR (N ops, ndjson)``: the command itself, end to end (Spark start included),
  ``kraft audit DIR --out OUT`` in a subprocess, on a corpus no audit has seen (no stored rows);
  its stage times from ``summary.json``. One row per size in ``--ops`` (default 1M and 10M). With
  ``--baseline-src DIR`` (an older checkout, e.g. ``git archive COMMIT | tar -x -C DIR``), that
  checkout's ``kraft audit`` runs on the same corpus right after, for a before/after ratio.
* ``lin: register histories``: :func:`check_history` on ``--lin-histories`` register histories
  of ``--lin-ops`` op rows (3 processes, 5 values; bench/audit.py's generator), one core.
* ``lin: etcd``: Porcupine's Jepsen etcd corpus (``test_data/jepsen/etcd_*.log`` of
  github.com/anishathalye/porcupine; point ``--etcd`` at that directory, nothing is copied or
  committed), read from Jepsen's log lines into ops (cas-register, ``nil`` = absent as in
  Porcupine's etcd model, i.e. ``nil_reads="strict"``; a timed-out read is an ``info`` read), each
  history checked ``--repeat`` times and the best time kept: median and total over the corpus.
  With Porcupine, ``--rounds`` (3) rounds of ours then Porcupine's, each history's best over all
  rounds kept on both sides, so that a host slowing the cores for a while slows both alike.
  ``ours`` is what ``check_history`` runs: the compiled search (spark_validation/_linkernel.c)
  where the install built it, and the row says which; a row above it times the Python search on
  the same histories (what runs without a C compiler). With ``KRAFT_PORCUPINE`` set, the same
  files are given to Porcupine in the same run and the ratios (ours / Porcupine's) printed;
  otherwise the Porcupine row reads "not run: Porcupine driver not found", and without the
  corpus the etcd rows read "not run: Porcupine's etcd logs not found".

``KRAFT_PORCUPINE`` names a command (split like a shell would) that the bench runs as
``CMD --repeat R FILE...`` on the etcd log files; it must print one JSON object per file and
line: ``{"file": PATH, "linearizable": true|false, "seconds": S}``, ``S`` being the best of ``R``
checks of that file (parsing excluded), e.g. a small Go program calling Porcupine's
``CheckEvents`` with the etcd model and log parser of Porcupine's own tests. The repository
carries no such driver and no Porcupine code: build it yourself where you are allowed to.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import results  # noqa: E402  (bench/results.py)


def load() -> str:
    return "load " + "/".join(f"{x:.1f}" for x in os.getloadavg())


def core_speed() -> str:
    """Seconds of one core for 10M additions in a Python loop: how fast this machine's cores are
    right now (a shared VM's host may slow them down without any load showing here). Compare
    runs only where it is about the same."""
    t = time.perf_counter()
    x = 0
    for i in range(10_000_000):
        x += i
    return f"core speed: 10M Python adds in {time.perf_counter() - t:.2f}s"


# ------------------------------------------------------------------------------------- corpora


def kafka_ops(n_ops: int, rng: random.Random, anomaly: str | None = None, n_keys: int = 4,
              procs: int = 4) -> list[dict]:
    """A Jepsen Kafka history in micro-op form: sends and polls, valid unless ``anomaly``."""
    logs: dict[int, list[int]] = {k: [] for k in range(n_keys)}
    pos: dict[tuple[int, int], int] = {}
    out: list[dict] = []
    nxt = t = 0
    bad_at = rng.randrange(n_ops // 4, n_ops // 2) if anomaly else -1

    def emit(o: dict) -> None:
        nonlocal t
        t += rng.randrange(1000, 50000)
        out.append({"index": len(out), "time": t, **o})

    while len(out) < n_ops - 2:
        p = rng.randrange(procs)
        if rng.random() < 0.45:
            k = rng.randrange(n_keys)
            nxt += 1
            emit({"type": "invoke", "process": p, "f": "send", "value": [["send", k, nxt]]})
            off = len(logs[k])
            logs[k].append(nxt)
            if anomaly == "inconsistent" and len(out) >= bad_at > 0 and off > 0:
                off, bad_at = off - 1, -1
            emit({"type": "ok", "process": p, "f": "send", "value": [["send", k, [off, nxt]]]})
        else:
            emit({"type": "invoke", "process": p, "f": "poll", "value": [["poll"]]})
            got = {}
            for k in rng.sample(range(n_keys), 2):
                s = pos.get((p, k), 0)
                e = min(len(logs[k]), s + rng.randint(0, 4))
                if anomaly == "skip" and len(out) >= bad_at > 0 and e - s >= 2:
                    s, bad_at = s + 1, -1
                if e > s:
                    got[str(k)] = [[o, logs[k][o]] for o in range(s, e)]
                    pos[(p, k)] = e
            emit({"type": "ok", "process": p, "f": "poll", "value": [["poll", got]]})
    emit({"type": "invoke", "process": 99, "f": "poll", "value": [["poll"]]})
    emit({"type": "ok", "process": 99, "f": "poll",
          "value": [["poll", {str(k): [[o, v] for o, v in enumerate(log)] for k, log in logs.items() if log}]]})
    return out


def _edn(v) -> str:
    if isinstance(v, list):
        if v and isinstance(v[0], str):
            return "[" + " ".join([":" + v[0]] + [_edn(x) for x in v[1:]]) + "]"
        return "[" + " ".join(_edn(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} {_edn(x)}" for k, x in v.items()) + "}"
    return str(v)


def edn_line(o: dict) -> str:
    parts = []
    for k, v in o.items():
        if k in ("type", "f"):
            parts.append(f":{k} :{v}")
        elif k == "value":
            parts.append(":value " + _edn(v))
        else:
            parts.append(f":{k} {v}")
    return "{" + ", ".join(parts) + "}"


def corpus(d: Path, n_ops: int, per_file: int, fmt: str) -> Path:
    """``n_ops`` ops in files of ``per_file`` ops (1 in 50 histories with an injected anomaly),
    generated once and cached."""
    root = d / f"{fmt}-{n_ops}-{per_file}"
    done = root / ".complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    rng = random.Random(7)
    t = time.time()
    for i in range(max(1, n_ops // per_file)):
        a = ("skip", "inconsistent")[(i // 50) % 2] if i % 50 == 7 else None
        h = kafka_ops(per_file, rng, a)
        if fmt == "ndjson":
            text = "".join(json.dumps(o, separators=(",", ":")) + "\n" for o in h)
        else:
            text = "".join(edn_line(o) + "\n" for o in h)
        (root / f"h{i:05d}.{fmt}").write_text(text)
    done.write_text("")
    print(f"  generated {root} ({time.time() - t:.0f}s)", file=sys.stderr)
    return root


# ------------------------------------------------------------------------------------- rows


def row(name: str, ops: int, secs: float, extra: str = "") -> None:
    print(f"{name:<44} {ops:>12,} {secs:>9.2f} {ops / secs:>12,.0f}  {extra}", flush=True)


def spark_ingest(sc, files: list[Path]) -> tuple[int, float, float]:
    """(ops, first seconds, second seconds) of reading ``files`` into op rows on Spark."""
    from spark_validation.engine.spark import units as _units

    units = _units(files, sc.defaultParallelism * 3)

    def read(it):
        from kraft.inputs import collector_paused
        from spark_validation.ingest.rows import read_rows

        for _, paths in it:
            for p in paths:
                c = time.process_time()
                # as engine.history.check_file reads a file: the collector stays off until its rows are
                # freed (re-enabled while they live, its first pass walks every one of them)
                with collector_paused():
                    n = len(read_rows(p)[0])
                yield n, time.process_time() - c

    times = []
    n = cpu = 0
    for _ in range(2):
        t = time.perf_counter()
        got = sc.parallelize(units, len(units)).mapPartitions(read).collect()
        times.append(time.perf_counter() - t)
        n, cpu = sum(x for x, _ in got), sum(c for _, c in got)
    return n, times[0], times[1], cpu


def e2e(root: Path, out: Path, cores: int, src: str | None = None) -> tuple[float, dict]:
    """``kraft audit ROOT --out OUT`` in a subprocess; ``src``: run the kraft of another checkout
    (its directory first on PYTHONPATH, e.g. a ``git worktree`` of an older commit)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "kraft.cli", "audit", str(root), "--out", str(out), "--master", f"local[{cores}]"]
    env = {**os.environ, "CI": "1"}
    if src:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(src).resolve()), env.get("PYTHONPATH", "")])
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=src or None)
    secs = time.perf_counter() - t
    if p.returncode not in (0, 1):
        print(p.stdout[-2000:], p.stderr[-2000:], file=sys.stderr)
        raise SystemExit(f"kraft audit failed with exit code {p.returncode}")
    return secs, json.loads((out / "summary.json").read_text())


# ------------------------------------------------------------------------------------- etcd

_ETCD = re.compile(r"^INFO\s+jepsen\.util\s+-\s+(\d+)\s+:(invoke|ok|fail|info)\s+:(read|write|cas)\s+(.*?)\s*$")


def etcd_ops(path: Path) -> list:
    """A Jepsen etcd log (Porcupine's test data) as ops: ``nil`` reads, ``[a b]`` cas arguments;
    ``:timed-out`` completions are ``info`` (the op may or may not have happened)."""
    from spark_validation.ingest.history import Op

    ops = []
    for line in path.read_text().splitlines():
        m = _ETCD.match(line)
        if not m:
            continue
        proc, typ, f, rest = int(m[1]), m[2], m[3], m[4]
        if rest == ":timed-out":
            typ, value = "info", None
        elif rest == "nil":
            value = None
        elif rest.startswith("["):
            value = tuple(int(x) for x in rest[1:-1].split())
        else:
            value = int(rest)
        ops.append(Op(len(ops), proc, typ, f, None, value, None))
    return ops


def _time_histories(hs: list, repeat: int) -> dict[str, tuple[float, object]]:
    from spark_validation.checks.linearizable import check_history

    ours: dict[str, tuple[float, object]] = {}
    for f, ops in hs:
        best, verdict = float("inf"), None
        for _ in range(repeat):
            t = time.perf_counter()
            r = check_history(ops, "cas-register", nil_reads="strict", history_id=str(f))
            best = min(best, time.perf_counter() - t)
            verdict = r.valid
        ours[str(f)] = (best, verdict)
    return ours


def _porcupine(cmd: str, repeat: int, files: list) -> dict[str, tuple[float, object]] | str:
    """Porcupine's best of ``repeat`` per file (the ``KRAFT_PORCUPINE`` command), or what went wrong."""
    p = subprocess.run([*shlex.split(cmd), "--repeat", str(repeat), *[str(f) for f in files]],
                       capture_output=True, text=True)
    theirs = {}
    for line in p.stdout.splitlines():
        try:
            o = json.loads(line)
            theirs[str(Path(o["file"]))] = (float(o["seconds"]), o["linearizable"])
        except (ValueError, KeyError):
            continue
    if len(theirs) != len(files):
        return f"the command gave {len(theirs)} of {len(files)} results (exit {p.returncode}): {p.stderr[-300:]}"
    return theirs


def etcd_rows(etcd: Path, repeat: int, rounds: int = 3) -> None:
    from spark_validation.checks.linearizable import fast, register

    files = sorted(etcd.glob("etcd_*.log"))
    hs = [(f, etcd_ops(f)) for f in files]
    hs = [(f, ops) for f, ops in hs if ops]  # etcd_095.log is empty (the cluster did not start)
    n_ops = sum(len(ops) for _, ops in hs)
    compiled = fast.check_register_ops
    if fast.COMPILED is not None:  # the Python search too, for reference (what runs without a C compiler)
        fast.check_register_ops = register.check_register_ops
        try:
            py = _time_histories(hs, repeat)
        finally:
            fast.check_register_ops = compiled
        pts = sorted(t for t, _ in py.values())
        print(f"{'lin: etcd corpus, ours, Python search (median)':<44} {len(hs):>12,} "
              f"{statistics.median(pts) * 1e3:>8.3f}ms  {'':>12}  total {sum(pts):.3f} s")
    cmd = os.environ.get("KRAFT_PORCUPINE")
    # rounds of ours then Porcupine's, each history's best time over all rounds kept on both
    # sides: a host that slows this VM's cores for a while then slows both alike
    ours: dict[str, tuple[float, object]] = {}
    theirs: dict[str, tuple[float, object]] = {}
    failed = None
    for _ in range(rounds):
        for k, (t, v) in _time_histories(hs, repeat).items():
            ours[k] = (min(t, ours[k][0]) if k in ours else t, v)
        if not cmd or failed:
            continue
        got = _porcupine(cmd, repeat, [f for f, _ in hs])
        if isinstance(got, str):
            failed = got
            continue
        for k, (t, v) in got.items():
            theirs[k] = (min(t, theirs[k][0]) if k in theirs else t, v)
    ts = sorted(t for t, _ in ours.values())
    med, total = statistics.median(ts), sum(ts)
    search = "compiled search" if fast.COMPILED is not None else "Python search (the compiled one is not built)"
    print(f"{'lin: etcd corpus, ours (median history)':<44} {len(hs):>12,} {med * 1e3:>8.3f}ms  "
          f"{'':>12}  {search}; best of {rounds} x {repeat}; {load()}")
    row("lin: etcd corpus, ours (total)", n_ops, total,
        f"valid {sum(v is True for _, v in ours.values())}/{len(hs)}, max {ts[-1] * 1e3:.1f} ms; {load()}")
    if not cmd:
        print(f"{'lin: etcd corpus, Porcupine':<44} "
              + results.not_run("Porcupine driver not found (set KRAFT_PORCUPINE; see the docstring)"))
        return
    if failed:
        print(f"{'lin: etcd corpus, Porcupine':<44} " + results.not_run(failed))
        return
    pt = sorted(t for t, _ in theirs.values())
    pmed, ptotal = statistics.median(pt), sum(pt)
    agree = sum(theirs[k][1] == ours[k][1] for k in ours)
    print(f"{'lin: etcd corpus, Porcupine (median history)':<44} {len(hs):>12,} {pmed * 1e3:>8.3f}ms  "
          f"{'':>12}  {load()}")
    row("lin: etcd corpus, Porcupine (total)", n_ops, ptotal, f"max {pt[-1] * 1e3:.1f} ms")
    print(f"{'ratio ours/Porcupine, median history':<44} {med / pmed:>12.2f}x")
    print(f"{'ratio ours/Porcupine, total corpus':<44} {total / ptotal:>12.3f}x   "
          f"verdicts agree on {agree}/{len(hs)} histories")
    faster = sum(ours[k][0] <= theirs[k][0] for k in ours)
    print(f"{'':<44} ours faster on {faster}/{len(hs)} histories")


def lin_register(n: int, ops_per: int) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_audit", HERE / "audit.py")  # its generator
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    register_history = mod.register_history
    from spark_validation.checks.linearizable import check_history
    from spark_validation.ingest.records import OpRow, rows_to_ops

    rng = random.Random(3)
    hs = []
    for h in range(n):
        rows = [OpRow(*r) for r in register_history(f"reg-{h}", ops_per, rng)]
        hs.append(rows_to_ops(rows))
    t = time.perf_counter()
    per = []
    for ops in hs:
        t1 = time.perf_counter()
        r = check_history(ops, "register", nil_reads="strict")
        per.append(time.perf_counter() - t1)
        assert r.valid is True
    secs = time.perf_counter() - t
    per.sort()
    row(f"lin: {ops_per}-op register histories (1 core)", n * ops_per, secs,
        f"median {statistics.median(per) * 1e3:.2f} ms, max {per[-1] * 1e3:.1f} ms; {load()}")


# ------------------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ops", default="1000000,10000000", help="corpus sizes for the end-to-end rows")
    ap.add_argument("--ingest-ops", type=int, default=1_000_000, help="ops of the ingest rows")
    ap.add_argument("--per-file", type=int, default=10_000, help="ops per history file")
    ap.add_argument("--cores", type=int, default=2, help="Spark local[N]")
    ap.add_argument("--dir", default="/tmp/kraft-audit-speed", help="where corpora are generated and kept")
    ap.add_argument("--etcd", default=os.environ.get("KRAFT_ETCD_LOGS"),
                    help="directory of Porcupine's Jepsen etcd logs (test_data/jepsen)")
    ap.add_argument("--repeat", type=int, default=5, help="checks per etcd history (the best is kept)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of ours then Porcupine's on the etcd corpus (the best of all is kept)")
    ap.add_argument("--lin-histories", type=int, default=200)
    ap.add_argument("--lin-ops", type=int, default=500)
    ap.add_argument("--skip", default="", help="comma-separated: ingest, e2e, lin, etcd")
    ap.add_argument("--baseline-src", default=None,
                    help="a checkout of an earlier kraft (e.g. `git worktree add /tmp/before COMMIT`): its "
                         "`kraft audit` runs on the same corpora in the same run, for before/after ratios")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    sizes = [int(x) for x in args.ops.split(",") if x]
    print(f"start: local[{args.cores}]; {core_speed()}")
    hdr = f"{'row':<44} {'ops':>12} {'seconds':>9} {'ops/s':>12}  notes"
    print(hdr)
    print("-" * (len(hdr) + 30))
    if "ingest" not in skip:
        nd = corpus(d, args.ingest_ops, args.per_file, "ndjson")
        ed = corpus(d, args.ingest_ops, args.per_file, "edn")
        from spark_validation.session import get_context, stop_session

        # the Spark start `kraft audit` makes for history files: a context, a light driver JVM
        master = f"local[{args.cores}]"
        sc = get_context(master, app_name="kraft-bench-ingest", light_jvm=True)
        for name, root, fmt in (("ingest: ndjson (Jepsen Kafka micro-ops)", nd, "ndjson"),
                                ("ingest: edn (Jepsen op maps)", ed, "edn")):
            files = sorted(root.glob(f"*.{fmt}"))
            mb = sum(f.stat().st_size for f in files) / 2**20
            n, first, second, cpu = spark_ingest(sc, files)
            row(name, n, second, f"{mb / second:.0f} MB/s; first run (workers starting) {first:.1f}s; "
                f"task CPU {cpu * 1e6 / n:.2f} us/op = {n / cpu * args.cores:,.0f} ops/s on {args.cores} idle cores; "
                f"{load()}")
        stop_session()
    if "e2e" not in skip:
        for n_ops in sizes:
            root = corpus(d, n_ops, args.per_file, "ndjson")
            secs, doc = e2e(root, d / f"out-{n_ops}", args.cores)
            st = doc.get("stage_seconds", {})
            ts = doc.get("kafka_engine", {}).get("task_seconds", {})
            assert doc["ops"] == n_ops, doc["ops"]
            cpu = ts.get("cpu", 0.0)
            row(f"kraft audit DIR ({n_ops / 1e6:g}M ops, ndjson, fresh)", n_ops, secs,
                f"session {st.get('session', 0):.1f}s, files {st.get('files', 0):.1f}s (task s: "
                + ", ".join(f"{k} {v:.1f}" for k, v in ts.items())
                + (f"; task CPU {cpu * 1e6 / n_ops:.2f} us/op" if cpu else "") + f"); {doc['summary']}; {load()}")
            if args.baseline_src:
                secs0, doc0 = e2e(root, d / f"out-before-{n_ops}", args.cores, args.baseline_src)
                st0 = doc0.get("stage_seconds", {})
                row(f"  the same, {Path(args.baseline_src).name} (before)", n_ops, secs0,
                    f"{secs / secs0:.3f}x the time; stages " + ", ".join(f"{k} {v:.1f}" for k, v in st0.items())
                    + f"; {load()}")
    if "lin" not in skip:
        lin_register(args.lin_histories, args.lin_ops)
    if "etcd" not in skip:
        if args.etcd and Path(args.etcd).is_dir():
            etcd_rows(Path(args.etcd), args.repeat, args.rounds)
        else:
            why = results.not_run("Porcupine's etcd logs not found (--etcd DIR: its test_data/jepsen)")
            for name in ("lin: etcd corpus, ours", "lin: etcd corpus, Porcupine"):
                print(f"{name:<44} {why}")
    print(f"end: {core_speed()}")


if __name__ == "__main__":
    sys.exit(results.run("audit_speed", main))
