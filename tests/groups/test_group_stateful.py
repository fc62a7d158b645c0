"""Hypothesis stateful suite: the implementation keeps the spec's invariants, and every bug
variant is caught with a readable shrunk example."""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from kraft.groups.coordinator import GroupConfig
from kraft.groups.messages import RebalanceProtocol

from .machine import make_machine

EAGER = GroupConfig(protocol=RebalanceProtocol.EAGER, topics=(("t", 3),))
COOP = GroupConfig(protocol=RebalanceProtocol.COOPERATIVE, topics=(("t", 3),))


@pytest.mark.parametrize("config", [EAGER, COOP], ids=["eager", "cooperative"])
def test_invariants_hold(config: GroupConfig) -> None:
    run_state_machine_as_test(make_machine(config),
                              settings=settings(max_examples=150, stateful_step_count=40))


VARIANTS = [
    ("EagerNoRevokeBeforeJoin", RebalanceProtocol.EAGER, "NoDoubleOwnership"),
    ("CooperativeAssignWithoutRevoke", RebalanceProtocol.COOPERATIVE, "NoDoubleOwnership"),
    ("AcceptStaleGeneration", RebalanceProtocol.EAGER, "CommitFencing"),
]


@pytest.mark.parametrize("variant,protocol,violates", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_variant_is_caught(variant: str, protocol: RebalanceProtocol, violates: str) -> None:
    config = GroupConfig(protocol=protocol, topics=(("t", 3),), **{variant: True})
    with pytest.raises(AssertionError) as exc:
        run_state_machine_as_test(make_machine(config),
                                  settings=settings(max_examples=300, stateful_step_count=40))
    assert violates in str(exc.value), str(exc.value)
