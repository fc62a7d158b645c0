"""Hypothesis stateful tests (tests/replication/machine.py): the correct protocol keeps every
invariant after every step and every acks=all-acknowledged record is readable from the current
leader at the end; each bug variant is found by the search (derandomized, so CI is stable), its
shrunk run prints as a story, and that story replayed without the flag is clean (the counterexample
hinges on the bug)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck

from kraft.core.datadriven import DatadrivenError, parse
from kraft.core.invariants import InvariantViolation
from kraft.replication.protocol import PROTOCOL
from kraft.replication.story import ReplicationStory as Story
from kraft.replication.world import ACKED_READABLE, AckedNotReadable
from tests import examples
from tests.replication.machine import STORY_HEADER, make_machine, search

TestReplication = make_machine().TestCase
TestReplication.settings = examples.HEAVY(stateful_step_count=40, deadline=None, derandomize=True,
                                          database=None, suppress_health_check=list(HealthCheck))

# The derandomized search's budget per variant.  What it generates depends on max_examples (and on
# the shrink phase: SHRINK_SECONDS), so the budget is a ceiling the first counterexample fits under
# (bench/replication.py runs the same search and reports the test cases each variant needs):
# 3000, except IsrJoinBeforeEpochStart, whose counterexample needs more than 1500 test cases.
# SLOW: IsrJoinBeforeEpochStart's search takes minutes.
BUDGET = {v: 3000 for v in PROTOCOL.variant_names} | {"IsrJoinBeforeEpochStart": 5000}
SLOW = {"IsrJoinBeforeEpochStart"}


def _story_commands(story: str) -> str:
    assert story.startswith(STORY_HEADER), story[:200]
    return story[len(STORY_HEADER):]


SHRINK_SECONDS = 5  # bounded shrink (a setting of the search: generation differs without the phase)


def _caught(variant: str, tmp_path: Path) -> None:
    found = search(variant, BUDGET[variant], shrink_seconds=SHRINK_SECONDS)
    exc = found["error"]
    assert isinstance(exc, InvariantViolation), f"{variant}: no counterexample in {BUDGET[variant]} examples ({exc!r})"
    story = _story_commands(found["story"])
    print(f"{variant}: {exc.invariant} after {found['examples']} examples, {found['seconds']:.1f} s\n{story}")
    script = tmp_path / "found.txt"
    script.write_text(story)
    cases = parse(script)
    assert cases[0].command == "brokers" and variant in cases[0].args
    assert f"VIOLATION {exc.invariant}:" in story
    # The counterexample replayed with the correct protocol: no violation (commands that need the
    # buggy state, e.g. a message that is never sent, end the replay).
    clean = Story()
    for case in cases:
        text = case.text if case is not cases[0] else f"brokers {case.args[0]}"
        try:
            clean.command(text, str(script), case.line)
        except DatadrivenError:
            break
    assert clean.violation is None, f"{variant}: the story also fails without the bug: {clean.violation}"


FAST = sorted(set(PROTOCOL.variant_names) - SLOW)


def test_every_variant_has_a_budget() -> None:
    assert sorted(BUDGET) == sorted(PROTOCOL.variant_names)


@pytest.mark.search
@pytest.mark.parametrize("variant", FAST)
def test_variant_is_caught(variant: str, tmp_path: Path) -> None:
    _caught(variant, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(SLOW))
def test_variant_is_caught_slow(variant: str, tmp_path: Path) -> None:
    _caught(variant, tmp_path)


def test_end_of_run_check_names_the_vanished_record() -> None:
    story = Story(render=False)
    for text in ("brokers 3", "produce 1", "fetch 2", "fetch 3", "fetch 2", "fetch 3", "complete"):
        story.command(text)
    w = story.world
    assert w is not None
    w.check_acked_readable()
    w.brokers[1].high_watermark = 0   # deliberately broken: the leader's HW no longer covers it
    with pytest.raises(AckedNotReadable) as info:
        w.check_acked_readable()
    assert info.value.invariant == ACKED_READABLE and "offset 0, epoch 0, value 1" in str(info.value)
