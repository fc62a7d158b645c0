"""The KRaft quorum benchmark in one command: TLC per config, then simulator and Hypothesis speed.

    python bench/kraft.py [--sizes crash,small,disk,medium,liveness] [--variants] [--workers N]
                          [--events N] [--examples M] [--skip-tlc] [--skip-sim]

First table (bench/check.py): for each KRaft config named in spec/KRaft.toml, states generated,
distinct states, depth, seconds and verdict (simulate-mode configs have no distinct count: TLC's
simulator does not deduplicate). With ``--variants`` every bug variant is run at its size too and
must be caught. Second table (bench/kraft_sim.py): simulator events per second (3 and 5 voters,
without and with faults, with and without trace recording) and Hypothesis stateful examples per
second. Both tables go to bench/results/kraft.md. Exit code: the TLC table's (0 all as expected,
1 a violation or missed variant, 2 tool error, 3 nothing model-checked).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here.parent))
sys.path.insert(0, str(here))

import check as check_bench  # noqa: E402  (bench/check.py)
import kraft_sim as sim_bench  # noqa: E402  (bench/kraft_sim.py)
import results  # noqa: E402  (bench/results.py)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="crash,small,disk,medium,liveness",
                    help="KRaft configs to model-check (default: crash,small,disk,medium,liveness)")
    ap.add_argument("--variants", action="store_true", help="also run every KRaft bug variant")
    ap.add_argument("--workers", type=int, default=None, help="TLC workers (default: the manifest's)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per TLC run (default: the manifest's)")
    ap.add_argument("--events", type=int, default=3000, help="simulator events per seed (default 3000)")
    ap.add_argument("--examples", type=int, default=40, help="Hypothesis examples (default 40)")
    ap.add_argument("--skip-tlc", action="store_true")
    ap.add_argument("--skip-sim", action="store_true")
    args = ap.parse_args(argv)

    rc = 0
    if not args.skip_tlc:
        print("== TLC: spec/KRaft.tla, one row per config ==", flush=True)
        check_args = ["KRaft", "--sizes", args.sizes]
        if args.variants:
            check_args.append("--variants")
        if args.workers is not None:
            check_args += ["--workers", str(args.workers)]
        if args.timeout is not None:
            check_args += ["--timeout", str(args.timeout)]
        rc = check_bench.main(check_args)
        print(flush=True)
    if not args.skip_sim:
        print("== implementation: simulator and Hypothesis throughput ==", flush=True)
        sim_bench.main(["--events", str(args.events), "--examples", str(args.examples)])
    return rc


if __name__ == "__main__":
    sys.exit(results.run("kraft", main))
