"""Benchmark of the linearizability checker (spark_validation.linearizability).

    python bench/linearizability.py [--histories N] [--ops K] [--seed S]

Histories come from a seeded simulation of C clients against one linearizable object: every op is
invoked, takes effect atomically at a random instant, and completes later (random latencies), so the
unmutated history is linearizable by construction. About 2% of ops time out (``info``; half of
those took effect), failed cas ops complete ``fail``. A quarter of the histories get one mutation
(see :func:`mutate`); a non-linearizable history forces the checker to exhaust its search. The checker's verdict on unmutated
histories must be ``True``; the benchmark aborts otherwise.

Workloads: register (read/write, 5 values) with 5/10/20 clients, cas-register with 10 clients, and
kv (cas-register per key) with 10 keys and 10 clients. Prints one row per workload: median and p99
time per history, throughput in ops/s, and the verdict counts. Then the ingest of one history
as EDN and NDJSON, and long single-key histories. The tables go to bench/results/linearizability.md;
the comparison with Porcupine is bench/audit_speed.py's (Porcupine's own etcd corpus).
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)
from spark_validation.ingest.history import Op  # noqa: E402
from spark_validation.linearizability import check_history  # noqa: E402


def simulate(
    rng: random.Random, clients: int, n_ops: int, model: str, keys: int = 1, values: int = 5
) -> list[Op]:
    """A linearizable history of about ``n_ops`` events' worth of operations (n_ops ops)."""
    state: dict[Any, Any] = {}
    events: list[tuple[float, int, str, int, Any]] = []  # (time, seq, what, process, payload)
    seq = 0
    ops: list[Op] = []
    started = 0
    next_process = clients  # Jepsen: a process that crashed (info) is replaced by a new one
    procs = list(range(clients))

    def schedule(t: float, what: str, slot: int, payload: Any) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, what, slot, payload))

    for slot in range(clients):
        schedule(rng.random(), "invoke", slot, None)
    while events:
        t, _, what, slot, payload = heapq.heappop(events)
        process = procs[slot]
        if what == "invoke":
            if started >= n_ops:
                continue
            started += 1
            key = rng.randrange(keys) if keys > 1 else None
            if model == "register":
                f = rng.choice(("read", "write"))
            else:
                f = rng.choice(("read", "write", "cas"))
            if f == "write":
                arg: Any = rng.randrange(values)
            elif f == "cas":
                arg = (rng.randrange(values), rng.randrange(values))
            else:
                arg = None
            ops.append(Op(len(ops), process, "invoke", f, key, arg, int(t * 1e6)))
            info = rng.random() < 0.02
            effect = not info or rng.random() < 0.5
            schedule(t + rng.expovariate(1.0), "effect" if effect else "complete", slot, [f, key, arg, info, None])
        elif what == "effect":
            f, key, arg, info, _ = payload
            cur = state.get(key)
            if f == "read":
                payload[4] = ("ok", cur)
            elif f == "write":
                state[key] = arg
                payload[4] = ("ok", arg)
            else:
                if cur == arg[0]:
                    state[key] = arg[1]
                    payload[4] = ("ok", arg)
                else:
                    payload[4] = ("fail", arg)
            schedule(t + rng.expovariate(1.0), "complete", slot, payload)
        else:
            f, key, arg, info, result = payload
            if info:
                ops.append(Op(len(ops), process, "info", f, key, arg, int(t * 1e6)))
                procs[slot] = next_process
                next_process += 1
            else:
                typ, value = result
                ops.append(Op(len(ops), process, typ, f, key, value, int(t * 1e6)))
            schedule(t + rng.expovariate(4.0), "invoke", slot, None)
    return ops


def mutate(rng: random.Random, ops: list[Op], values: int = 5) -> list[Op]:
    """Change one ok read's value to another value that some op wrote (a stale or premature
    read). Concurrency may still explain it; when it does not, the checker must exhaust every
    order before it can say so, which is the expensive case. (Values nobody wrote are caught
    without search, so they would measure nothing.)"""
    reads = [i for i, op in enumerate(ops) if op.type == "ok" and op.f == "read"]
    if not reads:
        return ops
    i = rng.choice(reads)
    old = ops[i].value
    written = sorted(
        {op.value if op.f == "write" else op.value[1] for op in ops if op.type == "ok" and op.f in ("write", "cas")
         and (op.key == ops[i].key)}
        - {old},
        key=repr,
    )
    if not written:
        return ops
    new: Any = rng.choice(written)
    ops = list(ops)
    ops[i] = Op(ops[i].index, ops[i].process, "ok", "read", ops[i].key, new, ops[i].time)
    return ops


def run(
    name: str, model: str, clients: int, keys: int, histories: int, n_ops: int, seed: int, budget: float
) -> dict[str, Any]:
    rng = random.Random(f"{seed}-{name}")
    times: list[float] = []
    by_verdict: dict[Any, list[float]] = {True: [], False: [], "unknown": []}
    total_ops = 0
    verdicts = {True: 0, False: 0, "unknown": 0}
    mutated = 0
    for h in range(histories):
        ops = simulate(rng, clients, n_ops, model, keys)
        is_mutated = h % 4 == 3
        if is_mutated:
            ops = mutate(rng, ops)
            mutated += 1
        t0 = time.perf_counter()
        result = check_history(ops, model, budget_seconds=budget)
        times.append(time.perf_counter() - t0)
        by_verdict[result.valid].append(times[-1])
        total_ops += len([o for o in ops if o.type == "invoke"])
        verdicts[result.valid] += 1
        if not is_mutated and result.valid is False:
            raise SystemExit(f"{name}: unmutated (linearizable) history {h} judged not linearizable: checker bug")
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    return {
        "workload": name,
        "clients": clients,
        "histories": histories,
        "ops": total_ops / histories,
        "median_ms": statistics.median(times) * 1e3,
        "p99_ms": p99 * 1e3,
        "ops_per_s": total_ops / sum(times),
        "mutated": mutated,
        "verdicts": verdicts,
        "median_valid_ms": statistics.median(by_verdict[True]) * 1e3 if by_verdict[True] else float("nan"),
        "median_invalid_ms": statistics.median(by_verdict[False]) * 1e3 if by_verdict[False] else float("nan"),
    }


def _edn_value(v: Any) -> str:
    if v is None:
        return "nil"
    if isinstance(v, tuple):
        return "[" + " ".join(_edn_value(x) for x in v) + "]"
    return str(v)


def ingest(n_ops: int, seed: int) -> None:
    """Time read_history on one generated history written as Jepsen EDN and as NDJSON."""
    import json
    import tempfile

    from spark_validation.ingest.history import read_history

    ops = simulate(random.Random(seed), 10, n_ops, "cas-register")
    with tempfile.TemporaryDirectory() as d:
        edn = Path(d) / "history.edn"
        edn.write_text(
            "".join(
                f"{{:type :{o.type}, :f :{o.f}, :value {_edn_value(o.value)}, :process {o.process}, "
                f":time {o.time}, :index {o.index}}}\n"
                for o in ops
            )
        )
        nd = Path(d) / "history.ndjson"
        nd.write_text(
            json.dumps({"v": 1, "kind": "history", "model": "cas-register"})
            + "\n"
            + "".join(json.dumps(o.to_dict()) + "\n" for o in ops)
        )
        print(f"\ningest: one history of {len(ops)} events (10 clients, cas-register)")
        print(f"{'format':<8}{'MB':>7}{'seconds':>9}{'events/s':>10}{'check s':>9}")
        for path in (edn, nd):
            t0 = time.perf_counter()
            h = read_history(path, default_model="cas-register")
            dt = time.perf_counter() - t0
            assert len(h.ops) == len(ops) and not h.malformed
            t1 = time.perf_counter()
            r = check_history(h)
            ct = time.perf_counter() - t1
            assert r.valid is True, r
            mb = path.stat().st_size / 1e6
            print(f"{path.suffix[1:]:<8}{mb:>7.1f}{dt:>9.2f}{len(ops) / dt:>10.0f}{ct:>9.2f}")


def sequential(rng: random.Random, n_ops: int, values: int = 5) -> list[Op]:
    """A strictly sequential (one client), valid register history of ``n_ops`` ops: half writes,
    half reads of the current value (the register starts at nil)."""
    ops: list[Op] = []
    cur: Any = None
    for _ in range(n_ops):
        if rng.random() < 0.5:
            w = rng.randrange(values)
            ops.append(Op(len(ops), 0, "invoke", "write", None, w))
            ops.append(Op(len(ops), 0, "ok", "write", None, w))
            cur = w
        else:
            ops.append(Op(len(ops), 0, "invoke", "read", None, None))
            ops.append(Op(len(ops), 0, "ok", "read", None, cur))
    return ops


def long_histories(sizes: list[int], seed: int) -> None:
    """One long register history per row, each checked on one key with the default budget and
    cache: strictly sequential ones, and for sizes of 1M and more also histories of that many ops
    from 10 concurrent clients (2% info ops). Peak RSS is the process's so far (it only grows)."""
    import gc
    import resource

    print("\nlong single-key register histories (one history per row; default budget and cache)")
    header = f"{'history':<28}{'ops':>9}{'verdict':>9}{'seconds':>9}{'search steps':>14}{'calls':>10}{'peak RSS MiB':>14}"
    print(header)
    print("-" * len(header))
    rows = [(f"sequential", n, 1) for n in sizes] + [("10 clients", n, 10) for n in sizes if n >= 1_000_000]
    for name, n, clients in rows:
        rng = random.Random(f"{seed}-long-{name}-{n}")
        ops = sequential(rng, n) if clients == 1 else simulate(rng, clients, n, "register")
        gc.collect()
        t0 = time.perf_counter()
        r = check_history(ops, "register")
        dt = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        steps = r.info.explored or 0
        print(f"{name:<28}{n:>9}{str(r.valid):>9}{dt:>9.1f}{steps:>14}{r.info.calls or 0:>10}{rss:>14}", flush=True)
        if r.valid is not True:
            raise SystemExit(f"{name} {n}: a valid history judged {r.valid}: {[u.to_json() for u in r.info.unknown_partitions] or None}")
        del ops, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--histories", type=int, default=200, help="histories per workload (0: skip)")
    ap.add_argument("--ops", type=int, default=100, help="operations per history")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=float, default=10.0, help="seconds per history before 'unknown'")
    ap.add_argument("--ingest-ops", type=int, default=20000, help="ops of the ingest benchmark (0: skip)")
    ap.add_argument("--long", default="150000,200000,1000000",
                    help="sizes of the long single-key histories, comma-separated ('' or 0: skip)")
    args = ap.parse_args()
    workloads = [
        ("register", "register", 5, 1),
        ("register", "register", 10, 1),
        ("register", "register", 20, 1),
        ("cas-register", "cas-register", 10, 1),
        ("kv (10 keys)", "kv", 10, 10),
    ]
    rows = []
    print(
        f"{args.histories} histories of {args.ops} ops per workload, seed {args.seed}; 1 in 4 mutated; "
        f"budget {args.budget:g} s per history"
    )
    header = (
        f"{'workload':<14}{'clients':>8}{'ops/hist':>9}{'median ms':>11}{'p99 ms':>10}{'ops/s':>9}"
        f"{'med valid':>11}{'med invalid':>13}   valid/invalid/unknown"
    )
    print(header)
    print("-" * len(header))
    for name, model, clients, keys in workloads if args.histories > 0 else []:
        r = run(name, model, clients, keys, args.histories, args.ops, args.seed, args.budget)
        rows.append(r)
        v = r["verdicts"]
        print(
            f"{r['workload']:<14}{r['clients']:>8}{r['ops']:>9.0f}{r['median_ms']:>11.2f}{r['p99_ms']:>10.2f}"
            f"{r['ops_per_s']:>9.0f}{r['median_valid_ms']:>11.2f}{r['median_invalid_ms']:>13.2f}"
            f"   {v[True]}/{v[False]}/{v['unknown']}",
            flush=True,
        )
    print(
        "\nms = milliseconds per history (wall clock, one core); ops/s = operations checked per second "
        "over all histories of the row (dominated by the slowest histories)."
    )
    if args.ingest_ops:
        ingest(args.ingest_ops, args.seed)
    sizes = [int(x) for x in args.long.split(",") if x.strip() and int(x)]
    if sizes:
        long_histories(sizes, args.seed)


if __name__ == "__main__":
    sys.exit(results.run("linearizability", main))
