"""A seed is a run: fixed simulator runs of every protocol give byte-identical traces, histories and
summaries, held to digests in tests/sim/testdata/golden_runs.json.

A refactor that must not change behaviour keeps every digest; a deliberate change of behaviour
(a protocol fix, a new trace field) regenerates them with ``pytest --rewrite`` and says so in its
commit.  A digest differs for any byte of the files: the test names the run and the file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from kraft.sim.cli import run_once
from kraft.sim.core import Faults
from kraft.protocols import PROTOCOLS

GOLDEN = Path(__file__).parent / "testdata" / "golden_runs.json"

# protocol, seed, events, faults, variant, after-violation: each protocol under every random fault,
# one with a targeted fault, and a bug variant run on after its violation to the final phase
RUNS = (
    ("kraft", 1, 1500, "all", None, None),
    ("kraft", 2, 2000, "all", "VoteWithoutLogCheck", 1000),
    ("groups", 0, 1500, "all", None, None),
    ("groups", 1, 1500, "all", "CooperativeAssignWithoutRevoke", None),
    ("replication", 3, 1500, "all", None, None),
    ("replication", 10, 1000, "drop,dup,delay,reorder,partition,resign,isolate-leader:1000", "EpochLookupKip101", 2000),
)


def _name(run: tuple) -> str:
    protocol, seed, steps, faults, variant, after = run
    return f"{protocol}-seed{seed}-{steps}" + (f"-{variant}" if variant else "") + (f"-after{after}" if after else "")


def _digests(run: tuple, out: Path) -> dict[str, str]:
    protocol, seed, steps, faults, variant, after = run
    nemeses = PROTOCOLS[protocol].plugin(3, None).nemeses()
    run_once(protocol, seed, steps, Faults.parse(faults, nemeses), variant, 3, out, after_violation=after)
    summary = json.loads((out / "summary.json").read_text())
    for varying in ("seconds", "trace", "history"):   # wall time and where the files went
        summary.pop(varying, None)
    return {"trace.ndjson": hashlib.sha256((out / "trace.ndjson").read_bytes()).hexdigest(),
            "history.ndjson": hashlib.sha256((out / "history.ndjson").read_bytes()).hexdigest(),
            "summary": hashlib.sha256(json.dumps(summary, sort_keys=True).encode()).hexdigest()}


@pytest.mark.parametrize("run", RUNS, ids=_name)
def test_a_seed_gives_the_same_run(run: tuple, tmp_path: Path, rewrite: bool) -> None:
    got = _digests(run, tmp_path)
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if rewrite:
        golden[_name(run)] = got
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(dict(sorted(golden.items())), indent=1) + "\n")
        return
    want = golden.get(_name(run))
    assert want is not None, f"no digests for {_name(run)}: run pytest --rewrite once"
    changed = [f for f in want if want[f] != got[f]]
    assert not changed, f"{_name(run)}: {', '.join(changed)} changed (behaviour changed, or pytest --rewrite)"
