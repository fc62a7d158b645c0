"""Every safety invariant of spec/ConsumerGroupProtocol.tla fails on a deliberately broken spec.

The bug variants (test_consumer_group_protocol_tlc.py) show TLC catching ValidPartitionEpochs,
CommitFencing and the two liveness properties; the invariants no variant breaks are shown failing
here, each on a copy of the module with one protocol rule broken in a small, named way (a text
mutation of a copy in tmp_path, as tests/replication/spec/test_invariants_fail.py does it). Each
mutation must match the spec text exactly once, so a change that moves the rule fails loudly.
Each run checks TypeOK and the target only, with one worker, so the counterexample is the
shortest and reproducible.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from model_check import load_manifests, run_tlc, spec_dir

pytestmark = pytest.mark.tlc

SPEC = "ConsumerGroupProtocol"
PROPERTIES = {"MemberEpochMonotonic"}

# invariant -> (what is broken, (spec text, replacement))
MUTATIONS: dict[str, tuple[str, tuple[str, str]]] = {
    "NoDoubleOwnership": (
        "computeNextAssignment hands out target partitions another member still holds (no UNRELEASED_PARTITIONS)",
        ("unreleased == {p \\in wanted : partitionEpoch[p] # -1 /\\ p \\notin m.pending}",
         "unreleased == {}")),
    "ValidTargetAssignment": (
        "the new target assignment is computed without the member that is joining",
        ("        mems == Members \\cup {c}\n", "        mems == Members\n")),
    "MemberEpochMonotonic": (
        "a member entering UNREVOKED_PARTITIONS falls back to its previous epoch",
        ("THEN [m EXCEPT !.epoch = epochIfRevoking, !.prev = m.epoch,",
         "THEN [m EXCEPT !.epoch = m.prev, !.prev = m.epoch,")),
}


# the static members' rules, broken on the static size: invariant -> (what is broken, edit)
STATIC_MUTATIONS: dict[str, tuple[str, tuple[str, str]]] = {
    "ValidPartitionEpochs": (
        "consumerGroupStaticMemberGroupLeave releases the partitions of the member it keeps at -2",
        ("       /\\ partitionEpoch' = UpdatePartitionEpochs(partitionEpoch, member[x], new)\n",
         "       /\\ partitionEpoch' = UpdatePartitionEpochs(partitionEpoch, member[x], Nil)\n")),
}


# the subscription rules, broken on the subscribe size: name -> (what is broken, edit); each
# must break ValidTargetAssignment's "only subscribed topics" clause
SUBSCRIBE_MUTATIONS: dict[str, tuple[str, tuple[str, str]]] = {
    "assignor ignores subscriptions": (
        "the assignor gives a partition to any member, subscribed to its topic or not",
        ("g[p] \\in OwnerChoices(p, S, subs)}}", "g[p] \\in S}}")),
    "no epoch bump on a subscription change": (
        "hasMemberSubscriptionChanged is not consulted: a changed subscription keeps the old target",
        ("ge == IF old = Nil \\/ SubscriptionChanged(old, base) THEN", "ge == IF old = Nil THEN")),
}


def _mutated(tmp: Path, edit: tuple[str, str]) -> Path:
    text = (spec_dir() / f"{SPEC}.tla").read_text()
    old, new = edit
    assert text.count(old) == 1, f"the mutation no longer matches the spec exactly once: {old!r}"
    out = tmp / f"{SPEC}.tla"
    out.write_text(text.replace(old, new))
    return out


def _cfg(target: str, size: str = "nofault") -> str:
    """The size's cfg with only TypeOK and the target checked."""
    text = (spec_dir() / load_manifests()[SPEC].sizes[size].cfg).read_text()
    text = re.sub(r"^(INVARIANTS?|PROPERTY|PROPERTIES)\b.*$", "", text, flags=re.M)
    return text + "INVARIANT TypeOK\n" + (f"PROPERTY {target}\n" if target in PROPERTIES else f"INVARIANT {target}\n")


def test_every_invariant_has_a_failing_mutation_or_a_variant() -> None:
    cfg = (spec_dir() / load_manifests()[SPEC].sizes["nofault"].cfg).read_text()
    safety = set(re.findall(r"^(?:INVARIANT|PROPERTY) (\w+)$", cfg, re.M)) - {"TypeOK"}
    by_variant = {v.violates for v in load_manifests()[SPEC].variants.values()}
    assert safety <= by_variant | set(MUTATIONS), safety - by_variant - set(MUTATIONS)


@pytest.mark.parametrize("invariant", sorted(MUTATIONS))
def test_broken_spec_violates(tmp_path: Path, invariant: str) -> None:
    what, edit = MUTATIONS[invariant]
    tla = _mutated(tmp_path, edit)
    cfg = tmp_path / f"{SPEC}_broken.cfg"
    cfg.write_text(_cfg(invariant))
    r = run_tlc(tla, cfg, workers=1, timeout=300, check_deadlock=False)
    want = "property" if invariant in PROPERTIES else "invariant"
    assert r.outcome == want, (what, r.outcome, r.violated, r.errors, r.output[-2000:])
    assert r.violated == invariant, (what, r.violated)
    assert len(r.counterexample) > 2, what


@pytest.mark.parametrize("invariant", sorted(STATIC_MUTATIONS))
def test_broken_static_rule_violates(tmp_path: Path, invariant: str) -> None:
    what, edit = STATIC_MUTATIONS[invariant]
    tla = _mutated(tmp_path, edit)
    cfg = tmp_path / f"{SPEC}_broken.cfg"
    cfg.write_text(_cfg(invariant, "static"))
    r = run_tlc(tla, cfg, workers=1, timeout=300, check_deadlock=False)
    want = "property" if invariant in PROPERTIES else "invariant"
    assert r.outcome == want, (what, r.outcome, r.violated, r.errors, r.output[-2000:])
    assert r.violated == invariant, (what, r.violated)
    assert any(s.action == "SendLeaveHeartbeat" for s in r.counterexample), what


@pytest.mark.parametrize("name", sorted(SUBSCRIBE_MUTATIONS))
def test_broken_subscription_rule_violates(tmp_path: Path, name: str) -> None:
    what, edit = SUBSCRIBE_MUTATIONS[name]
    tla = _mutated(tmp_path, edit)
    cfg = tmp_path / f"{SPEC}_broken.cfg"
    cfg.write_text(_cfg("ValidTargetAssignment", "subscribe"))
    r = run_tlc(tla, cfg, workers=1, timeout=300, check_deadlock=False)
    assert r.outcome == "invariant", (what, r.outcome, r.violated, r.errors, r.output[-2000:])
    assert r.violated == "ValidTargetAssignment", (what, r.violated)
    assert any(s.action == "ChangeSubscription" for s in r.counterexample), what
