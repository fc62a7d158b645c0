"""Timing of the coordinator's assignors (KIP-848) on large groups:
``python bench/server_assignors.py [--quick] [--assignor uniform|range]``.

Scenarios per size (members x partitions over topics):
  homogeneous    every member subscribes to every topic, nothing assigned (a new group)
  homogeneous-1  the previous result is the current assignment and one member left
  heterogeneous  every 4th member subscribes to the first half of the topics, the others to
                 the second half; nothing assigned
  heterogeneous-1  the same, with the previous result as the current assignment and one member
                 gone
Only ``assign(group, topics)`` is timed, as Kafka's ServerSideAssignorBenchmark times it; building
the GroupSpec (which the coordinator keeps up to date as members come and go) is not. The table
goes to bench/results/server_assignors.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import results  # noqa: E402  (bench/results.py)
from kraft.groups.assignors.server import ASSIGNORS, GroupSpec, MemberSpec, TopicDescriber, Uuid  # noqa: E402
from kraft.groups.assignors.server.spec import member_order, record_assignment_order, \
    subscription_type  # noqa: E402

SCENARIOS = ("homogeneous", "homogeneous-1", "heterogeneous", "heterogeneous-1")


def group(members: int, partitions: int, topics: int, heterogeneous: bool) -> tuple[GroupSpec, TopicDescriber]:
    ids = [Uuid(0x5EED_0000 + i, i * 0x9E37_79B9_7F4A_7C15 % 2**63) for i in range(topics)]
    counts = {t: partitions // topics + (1 if i < partitions % topics else 0) for i, t in enumerate(ids)}
    first, second, everything = tuple(ids[: topics // 2]), tuple(ids[topics // 2:]), tuple(ids)
    names = member_order(f"member-{i:05d}-{(i * 7919) % 10007:05d}" for i in range(members))
    specs = {}
    for i, m in enumerate(names):
        subs = (first if i % 4 == 0 else second) if heterogeneous else everything
        specs[m] = MemberSpec(subs)
    return GroupSpec(specs, subscription_type(specs)), TopicDescriber(counts)


def after(group_: GroupSpec, result) -> GroupSpec:
    """The group with ``result`` as its current assignment, less its first member."""
    specs = {m: MemberSpec(s.subscribed_topic_ids, record_assignment_order(
        {t: sorted(ps) for t, ps in result.get(m, {}).items()})) for m, s in list(group_.members.items())[1:]}
    return GroupSpec(specs, subscription_type(specs))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run(sizes, names) -> None:
    for members, partitions, topics in sizes:
        for scenario in SCENARIOS:
            for name in names:
                g, described = group(members, partitions, topics, scenario.startswith("heterogeneous"))
                result, secs = timed(lambda: ASSIGNORS[name]().assign(g, described))
                if scenario.endswith("-1"):
                    g = after(g, result)
                    _, secs = timed(lambda: ASSIGNORS[name]().assign(g, described))
                print(f"{name:<10}{members:>10}{partitions:>12}{topics:>8}  {scenario:<16}"
                      f"{g.subscription_type.value.lower():<15}{secs:>9.3f}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    ap.add_argument("--assignor", action="append", choices=sorted(ASSIGNORS), help="limit to these")
    args = ap.parse_args(argv)
    sizes = [(100, 1_000, 10)] if args.quick else [(1_000, 10_000, 100), (10_000, 100_000, 100),
                                                  (10_000, 100_000, 1_000)]
    print(f"{'assignor':<10}{'members':>10}{'partitions':>12}{'topics':>8}  {'scenario':<16}{'group':<15}"
          f"{'seconds':>9}")
    run(sizes, args.assignor or list(ASSIGNORS))
    return 0


if __name__ == "__main__":
    sys.exit(results.run("server_assignors", main))
