"""Benchmark of the Elle-style cycle search (spark_validation/elle.py) on one long Kafka
transactional history.

    python bench/elle.py [--ops N] [--clients C] [--keys K] [--cores 2] [--no-local] [--ww-deps] [--rw-deps]

The history is Jepsen's Kafka workload in its ``txn`` form: C clients, each op a transaction of
one to four micro-ops (``[:send k v]`` or ``[:poll]``), executed one at a time against K partition
logs (offsets with occasional gaps, as transaction markers leave), every client assigned every key
and polling onward from its own position. Executed serially, the history has no dependency cycle;
one G1c is injected (two transactions that each poll the other's send), so the search has one
two-op cycle to find among N history entries (N/2 transactions). 1% of ops crash (``info``, no
results). Written as NDJSON and run through ``kraft audit`` (``spark_validation.audit.run``) on
``local[cores]``; the row gives the audit's stage times (the cycle search is ``cycles``: micro-ops,
edges as DataFrame joins, then each history's edges grouped into one executor task for Tarjan's
components and the BFS for the shortest cycle). ``--no-local`` skips the in-process reference run
(Python edges + the same component search) on the same history.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def generate(n_ops: int, clients: int, keys: int, seed: int) -> list[dict]:
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
    return ops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=1_000_000, help="history entries (invocations + completions)")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--keys", type=int, default=8)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ww-deps", action="store_true")
    ap.add_argument("--rw-deps", action="store_true")
    ap.add_argument("--no-local", action="store_true", help="skip the in-process reference run")
    args = ap.parse_args()

    from spark_validation.audit import AuditOptions, run

    t0 = time.perf_counter()
    ops = generate(args.ops, args.clients, args.keys, args.seed)
    gen = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "kafka-txn.ndjson"
        with f.open("w") as out:
            out.write(json.dumps({"v": 1, "kind": "history", "model": "kafka", "source": "bench/elle.py"}) + "\n")
            for o in ops:
                out.write(json.dumps(o) + "\n")
        del ops
        mb = f.stat().st_size / 1e6
        print(f"history: {args.ops} entries ({args.ops // 2} txns), {args.clients} clients, {args.keys} keys, "
              f"{mb:.0f} MB NDJSON (generated in {gen:.1f}s); ww-deps={args.ww_deps} rw-deps={args.rw_deps}")
        header = f"{'engine':<26}{'total s':>9}{'cycles s':>10}{'kafka s':>9}{'cycle anomalies':>17}  first cycle"
        print(header)
        print("-" * len(header))
        modes = [("spark local[%d]" % args.cores, False)] + ([] if args.no_local else [("in-process (--no-spark)", True)])
        for name, local in modes:
            import os

            os.environ["KRAFT_SPARK_MASTER"] = f"local[{args.cores}]"
            t = time.perf_counter()
            rep = run(AuditOptions(paths=(str(f),), out=Path(d) / ("out-local" if local else "out-spark"),
                                   no_spark=local, master=None if local else f"local[{args.cores}]",
                                   checks=frozenset({"kafka"}), ww_deps=args.ww_deps, rw_deps=args.rw_deps),
                      progress=lambda m: None)
            total = time.perf_counter() - t
            cyc = [a for a in rep.anomalies if a["kind"] in ("G0", "G1c", "G-single", "G2-item")]
            first = cyc[0]["evidence"]["cycle"] if cyc else None
            st = rep.stage_seconds
            print(f"{name:<26}{total:>9.1f}{st.get('cycles', float('nan')):>10.1f}{st.get('kafka', 0):>9.1f}"
                  f"{len(cyc):>17}  {cyc[0]['kind'] + ' ' + str(first) if cyc else '-'}", flush=True)
            if not any(a["kind"] == "G1c" for a in cyc):
                raise SystemExit("the injected G1c was not found")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"driver peak RSS {rss} MiB. cycles s: Spark stage 'cycles' (micro-ops, edges, components); the "
          f"in-process row times edges_ref + find_cycles inside the Kafka stage ('kafka s').")


if __name__ == "__main__":
    main()
