"""Every safety invariant of spec/PartitionReplication.tla fails on a deliberately broken spec.

The bug variants (test_replication_spec.py) show TLC catching StrongIsr, ReplicationQuorumSuperset
and MinIsrRecoveryQuorum; the invariants no variant breaks are shown failing here, each on a copy of
the module with one protocol rule broken in a small, named way (a text mutation of a copy in
tmp_path). Why mutations and not spec CONSTANTs: a switch used only by a test would be part of the
spec and of its declaration (kraft/replication/protocol.py, which test_declarations holds to the
spec), and would make the spec everyone reads longer for the sake of a test; a mutation touches only
the copy. Each mutation must match the spec text exactly once, so a change to the spec that moves
the rule makes the test fail loudly rather than test nothing.

Each run checks TypeOK and the target only (HighWatermarkMonotonic: TypeOK and the property): the
invariants overlap (a record lost by a broken rule usually breaks ReplicationQuorumSuperset or
StrongIsr in the same state), so the question asked is whether each one can fail at all, not which
fires first; TypeOK stays in so a mutation that merely produces ill-typed states is not counted.
One worker, so the (breadth-first, shortest) counterexample is reproducible.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

model_check = pytest.importorskip("model_check")
from model_check import run_tlc  # noqa: E402

pytestmark = pytest.mark.tlc

SPEC_DIR = Path(__file__).resolve().parents[3] / "spec"
TLA = SPEC_DIR / "PartitionReplication.tla"

# invariant -> (cfg it runs in, what is broken, [(spec text, replacement)], an action that must be
# in the counterexample: where the broken rule acts)
MUTATIONS: dict[str, tuple[str, str, list[tuple[str, str]], str]] = {
    "LeaderInIsr": (
        "PartitionReplication_small.cfg",
        "electAnyLeader keeps the current leader even when it leaves the target ISR",
        [("clean == IF p.leader # NoLeader /\\ valid(p.leader) THEN p.leader",
          "clean == IF p.leader # NoLeader THEN p.leader")],
        "FenceBroker",
    ),
    "NoCommittedRecordLost": (
        "PartitionReplication_small.cfg",
        "acks=all is answered once the leader has appended the record, without waiting for the HW",
        [("          /\\ highWatermark[l] > x.offset\n          /\\ pendingProduce' = pendingProduce \\ {x}",
          "          /\\ Len(log[l]) > x.offset\n          /\\ pendingProduce' = pendingProduce \\ {x}")],
        "CompleteProduce",
    ),
    "ConsistentRead": (
        "PartitionReplication_small.cfg",
        "the leader's HW candidate is its own LEO: it does not wait for the ISR",
        [("LET cand == SetMin({leo} \\cup {fe[r] : r \\in maxIsr \\ {b}})",
          "LET cand == leo")],
        "Produce",
    ),
    "LogMatchingBelowHW": (
        "PartitionReplication_small.cfg",
        "the leader skips the last-fetched-epoch check (no diverging epoch, no OFFSET_OUT_OF_RANGE for "
        "an epoch it does not know): a follower keeps records the leader never had, and its fetch "
        "offset counts as replicated",
        [("undefined == lfe # -1 /\\ eEpoch = -1", "undefined == FALSE"),
         ("diverging == /\\ lfe # -1 /\\ ~undefined", "diverging == FALSE /\\ lfe # -1 /\\ ~undefined")],
        "HandleFetchRequest",
    ),
    "ValidLeaderRecoveryState": (
        "PartitionReplication_small.cfg",
        "every leader change marks the partition RECOVERING, not only an unclean election",
        [("newLrs == IF unclean THEN Recovering ELSE tLrs", "newLrs == IF changed THEN Recovering ELSE tLrs")],
        "FenceBroker",
    ),
    "HighWatermarkMonotonic": (
        "PartitionReplication_liveness.cfg",
        "maybeIncrementLeaderHW without its never-lowered rule (only an unknown follower offset "
        "blocks it): the HW follows the candidate down when a lagging eligible follower is counted",
        [("IN IF (Cardinality(ci) < MinIsr /\\ ~HwAdvanceUnderMinIsr) \\/ cand <= highWatermark[b]",
          "IN IF (Cardinality(ci) < MinIsr /\\ ~HwAdvanceUnderMinIsr) \\/ cand < 0")],
        "HandleFetchRequest",
    ),
}
PROPERTIES = {"HighWatermarkMonotonic"}


def _mutated(tmp_path: Path, edits: list[tuple[str, str]]) -> Path:
    text = TLA.read_text()
    for old, new in edits:
        assert text.count(old) == 1, f"the mutation no longer matches the spec exactly once: {old!r}"
        text = text.replace(old, new)
    out = tmp_path / TLA.name
    out.write_text(text)
    return out


def _cfg(base: str, target: str) -> str:
    """The size's cfg with SPECIFICATION Spec and only TypeOK and the target checked."""
    text = (SPEC_DIR / base).read_text().replace("SPECIFICATION LiveSpec", "SPECIFICATION Spec")
    text = re.sub(r"^(INVARIANTS?|PROPERTIES?)\b.*\Z", "", text, flags=re.S | re.M)
    if target in PROPERTIES:
        return text + f"INVARIANT TypeOK\nPROPERTY {target}\n"
    return text + f"INVARIANTS\n    TypeOK\n    {target}\n"


def test_every_invariant_has_a_failing_mutation_or_a_variant():
    """Each safety invariant and action property of the spec is shown failing: by a bug variant of
    the manifest or by a mutation here."""
    from model_check import load_manifests

    tla = TLA.read_text()
    safety = set(re.findall(r"^INVARIANTS\n((?:    \w+\n)+)", (SPEC_DIR / "PartitionReplication_small.cfg").read_text(),
                            re.M)[0].split()) | {"HighWatermarkMonotonic"}
    safety.discard("TypeOK")
    by_variant = {v.violates for v in load_manifests(SPEC_DIR)["PartitionReplication"].variants.values()}
    assert safety <= by_variant | set(MUTATIONS), safety - by_variant - set(MUTATIONS)
    for name in MUTATIONS:
        assert re.search(rf"^{name} ==", tla, re.M), name


@pytest.mark.parametrize("invariant", sorted(MUTATIONS))
def test_broken_spec_violates(tmp_path, invariant):
    base, what, edits, step = MUTATIONS[invariant]
    tla = _mutated(tmp_path, edits)
    cfg = tmp_path / "PartitionReplication_broken.cfg"
    cfg.write_text(_cfg(base, invariant))
    r = run_tlc(tla, cfg, workers=1, timeout=300, check_deadlock=False)
    want = "property" if invariant in PROPERTIES else "invariant"
    assert r.outcome == want, (what, r.outcome, r.violated, r.errors, r.output[-2000:])
    assert r.violated == invariant, (what, r.violated)
    actions = [s.action for s in r.counterexample]
    assert any(a and step in a for a in actions), (what, actions)
