"""Hypothesis stateful suite: the implementation keeps the spec's invariants after every step,
and every bug variant is caught.

The default-suite variant tests stop at the first failing example (no shrinking: shrinking
these runs takes minutes); the failure message carries the world's step-by-step narrative.
The ``slow`` tests shrink, and the shrunk examples are kept as readable scenarios in
``test_group_scenarios.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from kraft.groups.protocol import PROTOCOL
from kraft.groups.coordinator import GroupConfig
from kraft.groups.messages import RebalanceProtocol

from tests import examples
from .machine import make_machine

EAGER = GroupConfig(protocol=RebalanceProtocol.EAGER, topics=(("t", 3),))
COOP = GroupConfig(protocol=RebalanceProtocol.COOPERATIVE, topics=(("t", 3),))
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
# the examples a variant's search may use: a ceiling, not a count (it stops at the first failure)
SEARCH_BUDGET = 1000


@pytest.mark.parametrize("config", [EAGER, COOP], ids=["eager", "cooperative"])
def test_invariants_hold(config: GroupConfig) -> None:
    run_state_machine_as_test(make_machine(config),
                              settings=examples.STATEFUL(stateful_step_count=20))


@pytest.mark.slow
@pytest.mark.parametrize("config", [EAGER, COOP], ids=["eager", "cooperative"])
def test_invariants_hold_long(config: GroupConfig) -> None:
    run_state_machine_as_test(make_machine(config),
                              settings=examples.STATEFUL.long(stateful_step_count=40))


# every declared variant, in the protocol of its TLC model size, with the invariant it must break
VARIANTS = [(v.name, RebalanceProtocol.COOPERATIVE if v.size == "cooperative" else RebalanceProtocol.EAGER,
             v.violates) for v in PROTOCOL.variants]


def _variant_config(variant: str, protocol: RebalanceProtocol) -> GroupConfig:
    return GroupConfig(protocol=protocol, topics=(("t", 3),), **{variant: True})


@pytest.mark.search
@pytest.mark.parametrize("variant,protocol,violates", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_variant_is_caught(variant: str, protocol: RebalanceProtocol, violates: str) -> None:
    with pytest.raises(AssertionError) as exc:
        run_state_machine_as_test(
            make_machine(_variant_config(variant, protocol)),
            settings=settings(max_examples=SEARCH_BUDGET, stateful_step_count=12, phases=NO_SHRINK,
                              database=None))
    assert violates in str(exc.value), str(exc.value)
    assert "VIOLATION" in str(exc.value)  # the narrative marks the step that broke it


@pytest.mark.slow
@pytest.mark.parametrize("variant,protocol,violates", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_variant_is_caught_and_shrunk(variant: str, protocol: RebalanceProtocol, violates: str) -> None:
    with pytest.raises(BaseException) as exc:  # noqa: PT011 - Hypothesis may group failures
        run_state_machine_as_test(
            make_machine(_variant_config(variant, protocol)),
            settings=settings(max_examples=SEARCH_BUDGET, stateful_step_count=12, database=None))
    assert violates in str(exc.value) or any(violates in str(e) for e in getattr(exc.value, "exceptions", ()))
