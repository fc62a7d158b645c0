"""The revocation machine's rule ``move_target_before_ack`` on its own: c1 and c2 join, c1 revokes
t2-0 and t2-1 for c2, and c3 joins just before c1 acknowledges.  With RevocationAckIgnoredOnNewTarget
the acknowledgement meets the new target, is ignored, and the group never converges (the
variant's datadriven story, variant_revocation_ack_ignored_on_new_target.txt); the correct
protocol converges."""

from __future__ import annotations

from kraft.groups.consumer_protocol.messages import ServerState

from .machine import make_revocation_machine, machine_config


def _run(**variant: bool) -> tuple[str | None, ServerState]:
    """The first violation's first line (or None) and c1's state at the coordinator before the
    finishing phase."""
    machine = make_revocation_machine(machine_config(**variant))()
    machine.start(joined={"c1", "c2"})
    machine.move_target_before_ack(c="c3")
    c1 = machine.world.coordinator.members["c1"].state
    try:
        machine.teardown()
        machine.spec_invariants()
    except AssertionError as e:
        return str(e).splitlines()[0], c1
    return None, c1


def test_the_correct_protocol_converges() -> None:
    violation, c1 = _run()
    assert violation is None
    assert c1 is ServerState.STABLE


def test_the_ignored_acknowledgement_never_converges() -> None:
    violation, c1 = _run(RevocationAckIgnoredOnNewTarget=True)
    assert violation is not None and violation.startswith("EventuallyConverges"), violation
    assert c1 is ServerState.UNREVOKED_PARTITIONS
