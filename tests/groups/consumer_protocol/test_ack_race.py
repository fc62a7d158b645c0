"""The acknowledgement race in the implementation, as the Hypothesis machine found it
(docs/consumer-protocol-spec.md, "Owned partitions are held back"; the spec's counterpart is
``test_a_leave_and_a_rejoin_keep_one_owner_per_partition``).

c1 and c2 join; c2 is reconciling {t1-0, t1-1} when c1 leaves and c2 receives all four partitions
at epoch 3; c1 joins again.  With Kafka's rule c2 acknowledges {t1-0, t1-1} at epoch 3 and starts
installing all four; the coordinator, at the new target, takes t2-0 and t2-1 from c2 at once (c2
does not report them) and gives them to c1; c2 installs them afterwards, and its revocation commit
of them at epoch 4 is accepted while it does not hold them.  The consumer holds its owned
partitions back until the assignment it received is installed, so the run stays safe.
"""

from __future__ import annotations

import pytest

from kraft.groups.consumer_protocol.consumer import Consumer
from kraft.groups.consumer_protocol.messages import ClientState

from .machine import make_machine, machine_config


def _run() -> str | None:
    """The machine's steps of the found example; the first violation's first line, or None."""
    machine = make_machine(machine_config())()
    machine.start(joined={"c1", "c2"})
    machine.advance(ms=10)
    machine.advance(ms=800)
    machine.drop(i=0)
    machine.leave(c="c1")
    machine.run_for(ms=300)
    machine.join(c="c1")
    try:
        machine.teardown()
        machine.spec_invariants()
    except AssertionError as e:
        return str(e).splitlines()[0]
    return None


def test_a_leave_and_a_rejoin_keep_commit_fencing() -> None:
    assert _run() is None


def test_kafkas_owned_partitions_rule_has_the_race(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's rule (the local assignment sent whenever it changed, outside RECONCILING)."""
    monkeypatch.setattr(Consumer, "_report_owned",
                        lambda self: self.send_owned and self.state is not ClientState.RECONCILING)
    violation = _run()
    assert violation is not None and "CommitFencing" in violation, violation
