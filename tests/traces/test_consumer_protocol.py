"""Consumer-protocol (KIP-848) traces from `kraft simulate --protocol consumer-protocol` checked
against spec/ConsumerGroupProtocol.tla by TLC (glue: traces/protocols/consumer_protocol.py).

* Traces of the correct implementation with every fault are accepted: every spec step matched.
* Tampered copies of a recorded trace are rejected at the tampered line: a changed member epoch
  names only ``member``; a heartbeat handled before it was sent (the two lines swapped) is not
  enabled, its message not in the network.
* For a bug variant, the buggy run's trace is rejected at the first line where it differs from the
  correct run of the same seed (the simulator is deterministic per seed, so that line is where
  the bug first acts), naming the variable the bug changes; the correct trace is accepted past it.

All traces go through one ``check_paths`` call: one batched TLC run, then one localising run per
rejected trace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.traces.helpers import edit_line, simulator, variant_pair, write
from traces.check import Options, check_paths

# one worker builds the module's traces and checks them once (its fixture is module-scoped)
pytestmark = [pytest.mark.tlc, pytest.mark.xdist_group("consumer-protocol-traces")]
simulate = simulator("consumer-protocol")
SEEDS = (1, 2, 3)
EVENTS = 800

# variant, seed, the action of the line where the bug acts, a variable the report names there
VARIANT_CASES = [
    ("PartitionEpochLostOnReassign", 2, "HandleHeartbeat", "partitionEpoch"),
    ("CommitWithoutEpochCheck", 6, "HandleOffsetCommit", "badCommits"),
    ("RejoinEpochZeroRejected", 2, "HandleHeartbeat", "msgs"),
    ("RevocationAckIgnoredOnNewTarget", 5, "HandleHeartbeat", "member"),
]


def _find(lines: list[str], pred) -> int:
    """Index (= physical line - 1) of the first spec step k (not the last line) with pred(k, step)."""
    return next(k for k, x in enumerate(lines[:-1]) if k and json.loads(x)["spec"] and pred(k, json.loads(x)))


def _tampered(lines: list[str]) -> dict[str, tuple[list[str], int]]:
    """name -> (lines, the physical line where the tampering is)."""
    out = {}
    k = _find(lines, lambda _, d: d["action"] == "HandleHeartbeat" and d["state"]["member"][d["args"]["m"]["src"]])

    def bump(d: dict) -> None:
        d["state"]["member"][d["args"]["m"]["src"]]["epoch"] += 1
    out["member_epoch"] = (edit_line(lines, k, bump), k + 1)

    def answered_next(k: int, d: dict) -> bool:
        nxt = json.loads(lines[k + 1])
        return d["action"] == "SendHeartbeat" and nxt["action"] == "HandleHeartbeat" \
            and nxt["args"]["m"]["src"] == d["node"]
    k = _find(lines, answered_next)
    out["swapped"] = (lines[:k] + [lines[k + 1], lines[k]] + lines[k + 2:], k + 1)
    return out


SUBSCRIBE_SEED = 3


def _unchanged_topics(lines: list[str], k: int) -> list[str]:
    """Line ``k`` (a ChangeSubscription) recording the consumer's old topic set as its new one."""
    node = json.loads(lines[k])["node"]
    old = json.loads(lines[k - 1])["state"]["csub"][node]

    def keep(d: dict) -> None:
        d["state"]["csub"][node] = old
    return edit_line(lines, k, keep)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cp")
    files, expect = [], {}
    for seed in SEEDS:
        lines = simulate(base / f"s{seed}", seed, EVENTS)
        files.append(write(base / f"good-{seed}.ndjson", lines))
    for name, (lines, line) in _tampered(lines).items():
        files.append(write(base / f"{name}.ndjson", lines))
        expect[name] = line
    for variant, seed, *_ in VARIANT_CASES:
        pair, expect[variant] = variant_pair(simulate, base, variant, seed)
        files += pair
    lines = simulate(base / "sub", SUBSCRIBE_SEED, EVENTS, "all,subscription-change")
    files.append(write(base / "subscribe.ndjson", lines))
    k = _find(lines, lambda _, d: d["action"] == "ChangeSubscription")
    files.append(write(base / "subscribe_other.ndjson", _unchanged_topics(lines, k)))
    expect["subscribe_other"], expect["changes"] = k + 1, sum('"ChangeSubscription"' in x for x in lines)
    return {Path(r.trace).stem: r for r in check_paths(files, Options(jobs=2))}, expect


def test_correct_traces_with_every_fault_are_accepted(runs):
    results, _ = runs
    for seed in SEEDS:
        r = results[f"good-{seed}"]
        assert r.verdict == "accepted", r.message[:1000]
        assert r.events == r.checked > 200 and r.skipped > 0


def test_a_changed_member_epoch_is_rejected_naming_member(runs):
    results, expect = runs
    r = results["member_epoch"]
    assert r.verdict == "rejected" and r.kind == "state_mismatch", r.message[:1000]
    assert r.line == expect["member_epoch"] and r.action == "HandleHeartbeat"
    assert r.disagree == ["member"]


def test_a_heartbeat_handled_before_it_was_sent_is_not_enabled(runs):
    results, expect = runs
    r = results["swapped"]
    assert r.verdict == "rejected" and r.kind == "not_enabled", r.message[:1000]
    assert r.line == expect["swapped"] and r.action == "HandleHeartbeat"
    assert r.guards["message in network"] == "false"
    assert f"swapped.ndjson:{r.line}:" in r.message


def test_subscription_changes_are_accepted_and_an_unchanged_set_rejected(runs):
    """The subscription-change nemesis: consumers call subscribe() with another topic set while
    in the group; each change is a ChangeSubscription step, and a recorded set the consumer did
    not change (the old set recorded as the new one) is a state mismatch naming csub."""
    results, expect = runs
    r = results["subscribe"]
    assert expect["changes"] >= 3 and r.verdict == "accepted", r.message[:1000]
    bad = results["subscribe_other"]
    assert bad.verdict == "rejected" and bad.kind == "state_mismatch", bad.message[:1000]
    assert bad.line == expect["subscribe_other"] and bad.action == "ChangeSubscription"
    assert bad.disagree == ["csub"]


@pytest.mark.parametrize("variant,seed,action,var", VARIANT_CASES)
def test_variant_rejected_where_the_bug_acts(runs, variant, seed, action, var):
    results, expect = runs
    rg, rb = results[f"{variant}-good"], results[f"{variant}-bad"]
    assert rg.verdict == "accepted", rg.message[:1000]
    assert rb.verdict == "rejected" and rb.kind == "state_mismatch", rb.message[:1000]
    assert rb.line == expect[variant] and rb.action == action, (rb.line, expect[variant], rb.action)
    assert var in rb.disagree and rb.variant == variant


@pytest.mark.slow
def test_corpus_of_correct_traces_is_accepted(tmp_path):
    """Seeds 1-10 x 3000 simulator events, with every fault and with none (about 22,000 spec
    steps); batches of 4 keep TLC within its heap."""
    paths = [write(tmp_path / f"{faults}-{seed}.ndjson", simulate(tmp_path / f"{faults}{seed}", seed, 3000, faults))
             for faults in ("all", "none") for seed in range(1, 11)]
    res = check_paths(paths, Options(jobs=2, batch=4))
    bad = [(r.trace, r.line, r.message[:600]) for r in res if r.verdict != "accepted"]
    assert not bad, bad


# the seeds of 1-8 where the variant's run differs from the correct one (3000 events, all faults)
ACTS_IN = {"PartitionEpochLostOnReassign": (1, 2, 3, 4, 5), "CommitWithoutEpochCheck": (2, 4, 6, 8),
           "RejoinEpochZeroRejected": (1, 2, 3, 4, 5), "RevocationAckIgnoredOnNewTarget": (4, 5, 6, 8)}
VARIANT_SWEEP = [(v, s) for v, seeds in ACTS_IN.items() for s in seeds]


@pytest.mark.slow
def test_variants_rejected_where_they_act_over_seeds(tmp_path):
    """Each buggy trace rejected at the oracle line, each correct twin accepted past it."""
    files, lines = [], {}
    for variant, seed in VARIANT_SWEEP:
        base = tmp_path / f"s{seed}"
        base.mkdir(exist_ok=True)
        pair, lines[f"s{seed}/{variant}"] = variant_pair(simulate, base, variant, seed, steps=3000)
        files += pair
    for r in check_paths(files, Options(jobs=2, batch=4)):
        name = f"{Path(r.trace).parent.name}/{Path(r.trace).stem.rsplit('-', 1)[0]}"
        if r.trace.endswith("-good.ndjson"):
            assert r.verdict == "accepted", (name, r.message[:800])
        else:
            assert r.verdict == "rejected" and r.line == lines[name], (name, r.line, lines[name], r.message[:800])
