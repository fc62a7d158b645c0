"""TLC checks of spec/PartitionReplication.tla (docs/replication-spec.md).

- the manifest names exactly the spec's bug-variant CONSTANTS, every cfg sets each to FALSE, and
  each variant's invariant is defined in the spec;
- the small model is exhaustively free of violations and not vacuous (state-count floor, and
  deliberately false "sanity" invariants show it reaches an acknowledged write, an election and a
  follower truncation);
- every bug variant is caught by TLC on the invariant the manifest names, through its own step;
- the liveness property holds under fairness and fails without it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

model_check = pytest.importorskip("model_check")
from model_check import load_manifests, run_spec, run_tlc  # noqa: E402

pytestmark = pytest.mark.tlc

SPEC_DIR = Path(__file__).resolve().parents[3] / "spec"
TLA = SPEC_DIR / "PartitionReplication.tla"

# every bug-variant CONSTANT of the spec is in the manifest (--all-variants runs them all)
NOT_IN_MANIFEST: set[str] = set()
VARIANTS = {
    "TruncateToHighWatermark",
    "EpochLookupKip101",
    "Kip320FirstTry",
    "IsrJoinBeforeEpochStart",
    "HwAdvanceUnderMinIsr",
    "LastReplicaStanding",
    "StaleAlterPartitionRejoin",
    "UncleanElection",
}

# The small model has 43,356 distinct states (docs/replication-spec.md); a spec that became
# vacuous (a guard that can never hold) falls far below.
SMALL_DISTINCT_FLOOR = 30_000


@pytest.fixture(scope="module")
def manifest():
    return load_manifests(SPEC_DIR)["PartitionReplication"]


def test_manifest_names_every_variant_constant(manifest):
    tla = TLA.read_text()
    assert set(manifest.variants) == VARIANTS
    constants = tla.split("CONSTANTS", 1)[1].split("ASSUME", 1)[0]
    cfgs = sorted(SPEC_DIR.glob("PartitionReplication_*.cfg"))
    assert len(cfgs) >= 4
    for name in NOT_IN_MANIFEST:
        assert re.search(rf"\b{name}\b", constants), name
        for cfg in cfgs:
            assert re.search(rf"^\s*{name}\s*=\s*FALSE\s*$", cfg.read_text(), re.M), (cfg.name, name)
    for name, v in manifest.variants.items():
        assert re.search(rf"\b{name}\b", constants), name
        assert v.doc and v.violates
        assert re.search(rf"^{v.violates}\s*==", tla, re.M), v.violates
        for cfg in cfgs:
            assert re.search(rf"^\s*{name}\s*=\s*FALSE\s*$", cfg.read_text(), re.M), (cfg.name, name)


def test_small_is_safe_and_not_vacuous():
    r = run_spec("PartitionReplication", "small", timeout=900)
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors, r.output[-3000:])
    assert r.distinct > SMALL_DISTINCT_FLOOR, r.distinct
    assert r.depth >= 20, r.depth


def _one_invariant_cfg(base: str, invariant: str) -> str:
    text = (SPEC_DIR / base).read_text()
    text = re.sub(r"^INVARIANTS?\b.*?(?=^PROPERTIES|\Z)", f"INVARIANT {invariant}\n", text, flags=re.S | re.M)
    return re.sub(r"^PROPERTIES?\b.*\Z", "", text, flags=re.S | re.M)


# Sanity: deliberately false invariants, each must be violated in small.
SANITY = {
    "NothingAcked": "an acks=all write is acknowledged",
    "NoElection": "a second leader is elected",
    "NoFollowerTruncation": "a leader answers a fetch with a diverging epoch",
}


@pytest.mark.parametrize("invariant", sorted(SANITY))
def test_small_reaches_interesting_states(tmp_path, invariant):
    cfg = tmp_path / "PartitionReplication_sanity.cfg"
    cfg.write_text(_one_invariant_cfg("PartitionReplication_small.cfg", invariant))
    r = run_tlc(TLA, cfg, workers=2, timeout=600, check_deadlock=False)
    assert r.outcome == "invariant", (SANITY[invariant], r.outcome, r.errors, r.output[-2000:])
    assert r.violated == invariant
    assert len(r.counterexample) >= 2


# variant -> an action that must occur in the counterexample (the bug's own step)
BUG_STEP = {
    "TruncateToHighWatermark": "ReplayMetadata",
    "EpochLookupKip101": "HandleFetchRequest",
    "Kip320FirstTry": "HandleFetchRequest",
    "IsrJoinBeforeEpochStart": "HandleFetchRequest",
    "HwAdvanceUnderMinIsr": "Produce",
    "LastReplicaStanding": "RestartBroker",
    "StaleAlterPartitionRejoin": "HandleAlterPartitionRequest",
    "UncleanElection": "FenceBroker",
}

# variants that run with -m slow, so the default-suite part of tests/replication/spec stays under
# about a minute (each run's time: docs/replication-spec.md, "Numbers")
SLOW_VARIANTS = {"Kip320FirstTry", "LastReplicaStanding", "StaleAlterPartitionRejoin", "IsrJoinBeforeEpochStart",
                 "UncleanElection"}


def _variant_params():
    for name in sorted(VARIANTS):
        marks = [pytest.mark.slow] if name in SLOW_VARIANTS else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("variant", list(_variant_params()))
def test_variant_is_caught(manifest, variant):
    v = manifest.variants[variant]
    # one worker: BFS order, hence the first violated invariant, is deterministic
    r = run_spec("PartitionReplication", v.size, variant=variant, workers=1, timeout=1200)
    assert r.outcome in ("invariant", "property"), (r.outcome, r.errors, r.output[-3000:])
    assert r.violated == v.violates, (r.violated, v.violates)
    actions = [s.action for s in r.counterexample]
    assert len(actions) >= 3
    assert any(a and BUG_STEP[variant] in a for a in actions), actions


@pytest.mark.slow
def test_liveness_holds_under_fairness():
    r = run_spec("PartitionReplication", "liveness", timeout=900)
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors, r.output[-3000:])


@pytest.mark.slow
def test_liveness_fails_without_fairness(tmp_path):
    text = (SPEC_DIR / "PartitionReplication_liveness.cfg").read_text()
    assert "SPECIFICATION LiveSpec" in text
    cfg = tmp_path / "PartitionReplication_nofair.cfg"
    cfg.write_text(text.replace("SPECIFICATION LiveSpec", "SPECIFICATION Spec"))
    r = run_tlc(TLA, cfg, workers=2, timeout=900, check_deadlock=False)
    assert r.outcome == "property", (r.outcome, r.violated, r.errors, r.output[-2000:])
    assert r.violated == "AckedEventuallyReplicated"
