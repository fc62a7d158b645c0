"""Assignor timing for large groups: ``python bench/assignors.py [--quick] [--json FILE]``.

Scenarios per size (consumers x partitions over topics):
  fresh     every member subscribes to every topic, nothing owned (first rebalance)
  leave     the previous assignment is owned (generation 1) and one member left
  unequal   every 4th member subscribes to the first half of the topics, the rest to the
            second half (Kafka's testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout shape):
            the sticky assignors take their *general* path; nothing owned
  unequal2  the same group again, owning the result of "unequal" (generation 1), as in that
            Kafka test's second assign()
  racks     KIP-881: equal subscriptions, members on racks a/b/c, every partition replicated on
            2 of the 3 racks (rack-aware assignment on; range and the sticky assignors use it)
KAFKA-9987 is the 1,000 x 10,000 fresh/leave case that took Kafka's sticky assignor minutes
before the constrained path existed. The table goes to bench/results/assignors.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)
from kraft.groups.assignors import ASSIGNORS, Subscription, TopicPartition  # noqa: E402


def group(consumers: int, partitions: int, topics: int, unequal: bool):
    names = [f"topic-{i:04d}" for i in range(topics)]
    ppt = {t: partitions // topics + (1 if i < partitions % topics else 0) for i, t in enumerate(names)}
    subs = {}
    for i in range(consumers):
        if unequal:
            t = names[: topics // 2] if i % 4 == 0 else names[topics // 2:]
        else:
            t = names
        subs[f"consumer-{i:05d}-{(i * 7919) % 10007:05d}"] = Subscription(t)
    return ppt, subs


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run(sizes, assignors):
    rows = []
    for consumers, partitions, topics in sizes:
        for scenario in ("fresh", "leave", "unequal", "unequal2", "racks"):
            for name in assignors:
                cls = ASSIGNORS[name]
                ppt, subs = group(consumers, partitions, topics, scenario.startswith("unequal"))
                if scenario == "racks":
                    racks = "abc"
                    subs = {m: Subscription(s.topics, rack=racks[i % 3]) for i, (m, s) in enumerate(subs.items())}
                    pr = {TopicPartition(t, p): {racks[p % 3], racks[(p + 1) % 3]}
                          for t, n in ppt.items() for p in range(n)}
                    if name == "roundrobin":
                        first, secs = timed(lambda: cls().assign(ppt, subs))
                    else:
                        first, secs = timed(lambda: cls().assign(ppt, subs, pr))
                else:
                    first, secs = timed(lambda: cls().assign(ppt, subs))
                if scenario in ("leave", "unequal2"):
                    owned = {m: Subscription(s.topics, first[m], 1) for m, s in subs.items()}
                    if scenario == "leave":
                        owned.pop(next(iter(owned)))
                    _, secs = timed(lambda: cls().assign(ppt, owned))
                rows.append({"assignor": name, "consumers": consumers, "partitions": partitions,
                             "topics": topics, "scenario": scenario, "seconds": round(secs, 3)})
                r = rows[-1]
                print(f"{r['assignor']:<20}{r['consumers']:>10}{r['partitions']:>12}{r['topics']:>8}"
                      f"  {r['scenario']:<9}{r['seconds']:>10.3f}", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    ap.add_argument("--assignor", action="append", choices=sorted(ASSIGNORS), help="limit to these")
    args = ap.parse_args(argv)
    sizes = [(10, 100, 10), (100, 1_000, 10)] if args.quick else \
        [(10, 100, 10), (100, 1_000, 10), (500, 5_000, 50), (1_000, 10_000, 100)]
    print(f"{'assignor':<20}{'consumers':>10}{'partitions':>12}{'topics':>8}  {'scenario':<9}{'seconds':>10}")
    rows = run(sizes, args.assignor or list(ASSIGNORS))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(results.run("assignors", main))
