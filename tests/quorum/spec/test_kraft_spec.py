"""TLC checks of spec/KRaft.tla (docs/kraft-spec.md).

- the small model is exhaustively free of violations and not vacuous (state-count floor);
- every bug variant of spec/KRaft.toml is caught, on the invariant the manifest names,
  with a real counterexample (the bug's own step appears in it);
- sanity "false invariants" ARE violated: the model reaches a leader, a commit, a truncation,
  a lossy restart, a pre-vote, a resignation and a second epoch, so the safety result is not
  about a model that never gets anywhere.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

model_check = pytest.importorskip("model_check")
from model_check import load_manifests, run_spec, run_tlc  # noqa: E402

pytestmark = pytest.mark.tlc

SPEC_DIR = Path(__file__).resolve().parents[3] / "spec"

# The small model has well over this many distinct states (see docs/kraft-spec.md); a spec
# that became vacuous (e.g. a guard that can never be true) falls far below it.
SMALL_DISTINCT_FLOOR = 20_000


@pytest.fixture(scope="module")
def manifest():
    return load_manifests(SPEC_DIR)["KRaft"]


def test_manifest_names_every_variant_constant(manifest):
    tla = (SPEC_DIR / "KRaft.tla").read_text()
    assert set(manifest.variants) == {
        "VoteWithoutLogCheck",
        "HwmFromAnyEpoch",
        "NoTruncateOnDivergence",
        "ForgetVoteOnRestart",
        "SnapshotBeyondHighWatermark",
        "KeepSuffixAfterSnapshotInstall",
        "RetentionDeletesPastSnapshot",
        "NoSnapshotRedirectBelowLogStart",
        "VoterChangeBeforeEpochCommit",
        "ConcurrentVoterChange",
        "LeaderCountsSelfWhenRemoved",
        "ObserverSkipsFsync",
        "IgnoreDirectoryIdInVote",
    }
    for name, v in manifest.variants.items():
        assert re.search(rf"\b{name}\b", tla), name
        assert v.doc and v.violates
        # every cfg sets every variant to FALSE
        for cfg in SPEC_DIR.glob("KRaft*.cfg"):
            text = cfg.read_text()
            assert re.search(rf"^\s*{name}\s*=\s*FALSE\s*$", text, re.M), (cfg.name, name)
        assert re.search(rf"^{v.violates}\s*==", tla, re.M), f"{v.violates} is not defined in KRaft.tla"
    for cfg in SPEC_DIR.glob("KRaft*.cfg"):
        prevote = "FALSE" if cfg.name in WITHOUT_PREVOTE else "TRUE"
        assert re.search(rf"^\s*PreVote\s*=\s*{prevote}\s*$", cfg.read_text(), re.M), cfg.name


# the models without pre-vote: epochchange is KIP-853 as Kafka 3.9 ran it (before KIP-996, 4.0), where
# the single-server-change counterexample is short enough for a seeded simulation to reach;
# snapstale leaves pre-vote out, with the faults, to be small enough to exhaust
WITHOUT_PREVOTE = {"KRaft_epochchange.cfg", "KRaft_snapstale.cfg"}


@pytest.mark.parametrize(
    "size",
    [
        # small is exhaustive (3,012,551 states, 882,825 distinct): 74 s with 2 workers on a
        # quiet 2-core machine; behind -m slow to make room for PartitionReplication in the
        # default suite (`kraft review`, the main job, model-checks it every time)
        pytest.param("small", marks=pytest.mark.slow),
        "crash",
        # two epochs with one disk loss: the simulator's disk-loss precondition keeps every
        # invariant (239,365 distinct states, about 3 minutes at one worker on a loaded machine);
        # slow for the same reason, and in `kraft review` too
        pytest.param("disk", marks=pytest.mark.slow),
        # one epoch, one snapshot, the log start moved and FetchSnapshot: minutes of TLC, so
        # slow to keep the suite in its budget; `kraft review` checks it every time
        pytest.param("snapshot", marks=pytest.mark.slow),
        # two epochs and one snapshot, no faults: where a failed epoch's records meet a newer
        # snapshot; slow for the same reason, and in `kraft review` too
        pytest.param("snapstale", marks=pytest.mark.slow),
        # voter changes (KIP-853): an observer added and a voter removed in one epoch; voters
        # removed over two epochs. Minutes of TLC each: `kraft review` checks them every time
        pytest.param("reconfig", marks=pytest.mark.slow),
        pytest.param("removal", marks=pytest.mark.slow),
        # UpdateRaftVoter and an add or removal, one at a time: half a minute; the two sanity
        # checks of the size run in the default tier, `kraft review` checks the size every time
        pytest.param("update", marks=pytest.mark.slow),
    ],
)
def test_ci_model_is_safe_and_not_vacuous(size):
    r = run_spec("KRaft", size, timeout=1200)
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors, r.output[-3000:])
    assert r.distinct > SMALL_DISTINCT_FLOOR, r.distinct
    assert r.depth >= 15, r.depth


# variant -> an action that must occur in the counterexample (the bug's own step)
BUG_STEP = {
    "VoteWithoutLogCheck": "HandleVoteRequest",
    "HwmFromAnyEpoch": "HandleFetchRequest",
    "NoTruncateOnDivergence": "HandleFetchResponse",
    "ForgetVoteOnRestart": "Restart",
    "SnapshotBeyondHighWatermark": "TakeSnapshot",
    "KeepSuffixAfterSnapshotInstall": "HandleFetchSnapshotResponse",
    "RetentionDeletesPastSnapshot": "DeleteBeforeSnapshot",
    "NoSnapshotRedirectBelowLogStart": "DeleteBeforeSnapshot",
    "VoterChangeBeforeEpochCommit": "RemoveVoter",
    "ConcurrentVoterChange": "RemoveVoter",
    "LeaderCountsSelfWhenRemoved": "RemoveVoter",
    "ObserverSkipsFsync": "AddVoter",
    "IgnoreDirectoryIdInVote": "ResendVoteRequest",
}


def _assert_bug_step(variant, trace) -> None:
    actions = [s.action for s in trace]
    assert any(a and BUG_STEP[variant] in a for a in actions), actions
    # the counterexample reaches the violation through a leader election
    assert any(a and "BecomeLeader" in a for a in actions), actions


# the liveness variant's model is checked for a temporal property over the whole graph (minutes);
# the two variants of the small model take a breadth-first search of most of it at one worker.
# `kraft review` runs every variant (the zoo's TLC column).
SLOW_VARIANTS = {"NoSnapshotRedirectBelowLogStart", "HwmFromAnyEpoch", "VoteWithoutLogCheck"}


@pytest.mark.parametrize("variant", [pytest.param(v, marks=pytest.mark.slow) if v in SLOW_VARIANTS else v
                                     for v in sorted(BUG_STEP)])
def test_variant_is_caught(manifest, variant):
    v = manifest.variants[variant]
    # one worker: BFS order, hence the first violated invariant, is then deterministic; a
    # variant of a temporal property is checked against that property alone (run_spec)
    r = run_spec("KRaft", v.size, variant=variant, workers=1, timeout=1200)
    assert r.outcome in ("invariant", "property"), (r.outcome, r.errors, r.output[-3000:])
    if r.outcome == "invariant":
        assert r.violated == v.violates, (r.violated, v.violates)
    else:  # TLC does not name the temporal property; the lasso ends stuttering or looping
        last = r.counterexample[-1]
        assert last.action == "Stuttering" or last.back_to is not None, last
    assert len(r.counterexample) >= 2
    _assert_bug_step(variant, r.counterexample)


def _sanity_cfg(invariant: str, cfg: str) -> str:
    """A CI cfg, checking one deliberately false invariant, without the VIEW that
    hides the `coverage` ghost (the sanity invariants read it)."""
    text = (SPEC_DIR / cfg).read_text()
    text = re.sub(r"^VIEW .*$", "", text, flags=re.M)
    text = re.sub(r"INVARIANTS?\b.*?(?=^PROPERTIES|\Z)", f"INVARIANT {invariant}\n", text, flags=re.S | re.M)
    text = re.sub(r"^PROPERTIES?\b.*\Z", "", text, flags=re.S | re.M)
    return text


# sanity invariant -> (cfg, what its violation proves the model reaches)
SANITY = {
    "NoLeaderEver": ("KRaft_small.cfg", "a leader is elected"),
    "NoValueCommitted": ("KRaft_small.cfg", "a client value is committed"),
    "NoTruncation": ("KRaft_small.cfg", "a follower truncates a diverged suffix"),
    "NoPreVote": ("KRaft_small.cfg", "a pre-vote round happens"),
    "NoResignedLeader": ("KRaft_small.cfg", "a leader resigns"),
    "NoSecondEpochLeader": ("KRaft_small.cfg", "a second epoch gets a leader"),
    "NoRestartLoss": ("KRaft_crash.cfg", "a restart loses an unflushed suffix"),
    "NoDiskLoss": ("KRaft_disk.cfg", "a voter loses its disk (RestartWithDiskLoss is enabled)"),
    "NoLogStartMoved": ("KRaft_snapshot.cfg", "a log start moves up to a snapshot"),
    "NoSnapshotInstalled": ("KRaft_snapshot.cfg", "a follower installs a snapshot it fetched"),
    "NoObserverAdded": ("KRaft_reconfig.cfg", "an observer finds the leader, catches up and is added"),
    "NoVoterRemoved": ("KRaft_reconfig.cfg", "a voter is removed"),
    "NoRemovedLeaderResigned": ("KRaft_removal.cfg", "a leader removes itself and resigns"),
    "NoLeaderAfterRemoval": ("KRaft_removal.cfg", "the remaining voters elect a leader after a removal"),
    "NoVoterUpdated": ("KRaft_update.cfg", "a leader accepts an UpdateRaftVoter and appends its VotersRecord"),
    "NoChangeAfterVoterUpdate": ("KRaft_update.cfg", "a voter is added or removed after an update"),
}


# the removal size's sanity checks are half a minute of TLC each; its variants already show the
# model removing voters, so these two run in the slow tier (`kraft review` model-checks the size)
SLOW_SANITY = {"NoRemovedLeaderResigned", "NoLeaderAfterRemoval"}


@pytest.mark.parametrize("invariant", [pytest.param(i, marks=pytest.mark.slow) if i in SLOW_SANITY else i
                                       for i in sorted(SANITY)])
def test_model_reaches_interesting_states(tmp_path, invariant):
    base, what = SANITY[invariant]
    cfg = tmp_path / "KRaft_sanity.cfg"
    cfg.write_text(_sanity_cfg(invariant, base))
    r = run_tlc(SPEC_DIR / "KRaft.tla", cfg, workers=2, timeout=1200, check_deadlock=False)
    assert r.outcome == "invariant", (what, r.outcome, r.errors, r.output[-2000:])
    assert r.violated == invariant
    assert len(r.counterexample) >= 2


@pytest.mark.slow
@pytest.mark.parametrize("size", ["medium", "snapdiverge", "epochchange"])
def test_simulated_model(size):
    r = run_spec("KRaft", size)
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors)


@pytest.mark.slow
@pytest.mark.parametrize("size,floor", [("liveness", 50_000), ("snapliveness", 20_000),
                                        ("reconfigliveness", 25_000), ("crashliveness", 60_000)])
def test_liveness_model(size, floor):
    """The liveness properties hold under their fairness (slow here; model-checked by every
    `kraft review`)."""
    r = run_spec("KRaft", size)
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors, r.output[-3000:])
    assert r.distinct >= floor, r.distinct


def _liveness_cfg(spec: str, prop: str, base: str) -> str:
    text = (SPEC_DIR / base).read_text()
    text = re.sub(r"^SPECIFICATION \S+", f"SPECIFICATION {spec}", text, flags=re.M)
    return re.sub(r"^PROPERTIES?\b.*\Z", f"PROPERTY {prop}\n", text, flags=re.S | re.M)


# Each liveness property fails on a deliberately broken fairness assumption, so the passing
# run above is not vacuous: with no fairness at all nothing need ever happen; without
# fairness on BeginQuorumEpoch a leader is elected but its followers never learn of it, so
# nothing is committed. (Without -lncheck final TLC finds these in a few seconds.)
@pytest.mark.parametrize("spec,prop,base", [
    ("Spec", "EventuallyLeader", "KRaft_liveness.cfg"),
    ("LiveSpecNoBQE", "EventuallyCommitted", "KRaft_liveness.cfg"),
    # without per-voter fetch fairness one follower's stale answer can stay in flight forever
    # (slow, like the snapliveness model it shows is not vacuous)
    pytest.param("LiveSpec", "FollowersCatchUp", "KRaft_snapliveness.cfg", marks=pytest.mark.slow),
    # without it a removed voter keeps fetching while the voter the new set needs never does
    pytest.param("ReconfigLiveSpecCoarse", "ReconfigurationNotStuck", "KRaft_reconfigliveness.cfg",
                 marks=pytest.mark.slow),
    # without per-voter election timeouts the followers refuse the crashed leader's pre-votes and
    # never campaign themselves
    pytest.param("CrashLiveSpecCoarse", "LeaderAfterCrash", "KRaft_crashliveness.cfg",
                 marks=pytest.mark.slow),
])
def test_liveness_fails_without_fairness(tmp_path, spec, prop, base):
    cfg = tmp_path / "KRaft_broken_liveness.cfg"
    cfg.write_text(_liveness_cfg(spec, prop, base))
    r = run_tlc(SPEC_DIR / "KRaft.tla", cfg, workers=2, timeout=1200, check_deadlock=False)
    assert r.outcome == "property", (r.outcome, r.errors, r.output[-2000:])
    assert r.violated == prop
    last = r.counterexample[-1]  # a lasso: ends stuttering or loops back to an earlier state
    assert last.action == "Stuttering" or last.back_to is not None, last


# Invariants that the manifest's variants do not name are shown to fail too: the variant's cfg
# checking only that invariant. Slow (each explores most of the small model).
OTHER_CATCHES = [
    ("HwmFromAnyEpoch", "NoCommittedRecordLost"),
    ("HwmFromAnyEpoch", "MonotonicHighWatermark"),
    ("VoteWithoutLogCheck", "StateMachineSafety"),
]


@pytest.mark.slow
@pytest.mark.parametrize("variant,invariant", OTHER_CATCHES)
def test_other_invariants_catch_variants(tmp_path, manifest, variant, invariant):
    size = manifest.sizes[manifest.variants[variant].size]
    from model_check import variant_cfg

    text = variant_cfg((SPEC_DIR / size.cfg).read_text(), variant)
    text = re.sub(r"INVARIANTS?\b.*?(?=^PROPERTIES|\Z)", f"INVARIANT {invariant}\n", text, flags=re.S | re.M)
    text = re.sub(r"^PROPERTIES?\b.*\Z", "", text, flags=re.S | re.M)
    cfg = tmp_path / "KRaft_other.cfg"
    cfg.write_text(text)
    r = run_tlc(SPEC_DIR / "KRaft.tla", cfg, workers=1, check_deadlock=False)
    assert r.outcome == "invariant" and r.violated == invariant, (r.outcome, r.violated, r.errors)
