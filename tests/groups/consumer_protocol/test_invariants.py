"""Each invariant of kraft/groups/consumer_protocol/invariants.py holds on a converged group and
fails on a copy of its projected state broken the way the invariant guards against."""

from __future__ import annotations

from typing import Any, Callable

import attrs
import pytest

from kraft.groups.consumer_protocol import invariants as inv
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.messages import ClientState
from kraft.groups.consumer_protocol.world import ConsumerProtocolWorld


@pytest.fixture(scope="module")
def converged() -> dict[str, Any]:
    w = ConsumerProtocolWorld(ProtocolConfig())
    for c in w.consumers:
        w.join(c)
    w.settle()
    assert w.quiet() and not w.found
    return w.state()


def _copy(s: dict[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, dict) else v for k, v in s.items()}


def _double_owner(s: dict[str, Any]) -> None:
    s["owned"]["c2"] = s["owned"]["c2"] | s["owned"]["c1"]


def _bad_commit(s: dict[str, Any]) -> None:
    s["badCommits"] = frozenset({(next(iter(s["owned"]["c1"])), "c2", 1)})


def _epoch_of_free(s: dict[str, Any]) -> None:
    s["member"]["c1"] = attrs.evolve(s["member"]["c1"], assigned=frozenset())


def _target_to_two(s: dict[str, Any]) -> None:
    s["targetAssignment"]["c2"] = s["targetAssignment"]["c2"] | s["targetAssignment"]["c1"]


def _unsubscribed_owner(s: dict[str, Any]) -> None:
    s["cstate"]["c1"] = ClientState.UNSUBSCRIBED


BROKEN: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("NoDoubleOwnership", _double_owner), ("CommitFencing", _bad_commit),
    ("ValidPartitionEpochs", _epoch_of_free), ("ValidTargetAssignment", _target_to_two),
    ("TypeOK", _unsubscribed_owner)]


def test_every_invariant_holds_on_a_converged_group(converged) -> None:
    assert inv.check_step(converged, converged) == []


@pytest.mark.parametrize("name,breaks", BROKEN, ids=[n for n, _ in BROKEN])
def test_each_state_invariant_fails_on_its_broken_state(converged, name, breaks) -> None:
    s = _copy(converged)
    breaks(s)
    assert {v.invariant for v in getattr(inv, name)(s)} == {name}


def test_member_epochs_going_back_break_monotonicity(converged) -> None:
    later = _copy(converged)
    later["member"]["c1"] = attrs.evolve(later["member"]["c1"], epoch=later["member"]["c1"].epoch - 1)
    later["cepoch"]["c2"] = later["cepoch"]["c2"] - 1
    found = inv.MemberEpochMonotonic(converged, later)
    assert [v.invariant for v in found] == ["MemberEpochMonotonic"] * 2
