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
    # the same size without the variant is clean (so the variant, not the config, is the cause)


@pytest.mark.parametrize("size", ["eager", "cooperative"])
def test_variant_sizes_pass_without_variant(size: str) -> None:
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


@pytest.mark.slow
def test_liveness_eventually_stable() -> None:
    r = run_spec("ConsumerGroup", "liveness")
    assert r.outcome == "ok", (r.outcome, r.violated, r.errors, r.output[-3000:])
