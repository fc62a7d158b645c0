"""TLC on spec/ConsumerGroup.tla: the small model passes, every bug variant yields the
counterexample its manifest names, and a deliberately false invariant is refuted (the model
does reach Stable with partitions owned by two consumers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from model_check import load_manifests, run_spec, run_tlc, spec_dir

pytestmark = pytest.mark.tlc

MANIFEST = load_manifests()["ConsumerGroup"]


def test_small_passes() -> None:
    r = run_spec("ConsumerGroup", "small")
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors, r.output[-3000:])
    assert r.distinct > 100_000  # the whole bounded space, not a trivial one


@pytest.mark.parametrize("variant", sorted(MANIFEST.variants))
def test_variant_yields_counterexample(variant: str) -> None:
    v = MANIFEST.variants[variant]
    r = run_spec("ConsumerGroup", v.size, variant)
    assert r.outcome in ("invariant", "property"), (r.outcome, r.errors, r.output[-3000:])
    assert r.violated == v.violates
    assert len(r.counterexample) > 3
    assert r.counterexample[-1].action is not None


@pytest.mark.slow  # implied by test_small_passes: small's behaviours include these fault-free ones
@pytest.mark.parametrize("size", ["eager", "cooperative"])
def test_variant_sizes_pass_without_variant(size: str) -> None:
    """The same size without the variant is clean: the variant, not the config, is the cause."""
    r = run_spec("ConsumerGroup", size)
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors)


def test_sanity_false_invariant_is_refuted(tmp_path: Path) -> None:
    cfg = (spec_dir() / "ConsumerGroup_cooperative.cfg").read_text()
    cfg = re.sub(r"^INVARIANT .*$", "", cfg, flags=re.M) + "\nINVARIANT SanityNeverStableAndOwned\n"
    r = run_tlc(spec_dir() / "ConsumerGroup.tla", spec_dir() / "ConsumerGroup_cooperative.cfg",
                workers=2, timeout=300, cfg_text=cfg)
    assert r.outcome == "invariant" and r.violated == "SanityNeverStableAndOwned", (r.outcome, r.errors)
    last = r.counterexample[-1].variables
    assert last["groupState"] == "Stable"
    owners = [c for c, ps in last["owned"].items() if ps]
    assert len(owners) >= 2


def _liveness_cfg(**subst: str) -> str:
    cfg = (spec_dir() / "ConsumerGroup_liveness.cfg").read_text()
    for k, v in subst.items():
        cfg = re.sub(rf"^(\s*{k}\s*=\s*).*$", rf"\g<1>{v}", cfg, flags=re.M)
    return cfg


def test_liveness_fault_free() -> None:
    """From the initial state, under fairness, the group settles in Stable."""
    r = run_tlc(spec_dir() / "ConsumerGroup.tla", spec_dir() / "ConsumerGroup_liveness.cfg",
                workers=2, timeout=300, cfg_text=_liveness_cfg(MaxFaults="0"))
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors, r.output[-3000:])


def test_liveness_fails_without_fairness() -> None:
    """EventuallyStable is not vacuous: without the fairness conditions TLC refutes it."""
    cfg = _liveness_cfg(MaxFaults="0", SPECIFICATION="Spec")
    cfg = cfg.replace("SPECIFICATION LiveSpec", "SPECIFICATION Spec")
    r = run_tlc(spec_dir() / "ConsumerGroup.tla", spec_dir() / "ConsumerGroup_liveness.cfg",
                workers=2, timeout=300, cfg_text=cfg)
    assert r.outcome == "property", (r.outcome, r.violated, r.errors)


@pytest.mark.slow
def test_liveness_eventually_stable() -> None:
    """The manifest's liveness size (one fault, then none)."""
    r = run_spec("ConsumerGroup", "liveness")
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors, r.output[-3000:])
