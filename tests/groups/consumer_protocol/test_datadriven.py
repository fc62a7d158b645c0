"""Consumer-protocol stories with golden output (testdata/*.txt; the command language is in
kraft/groups/consumer_protocol/story.py).  ``pytest --rewrite`` regenerates the outputs: read the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.core.datadriven import DatadrivenError
from kraft.groups.consumer_protocol.protocol import PROTOCOL
from kraft.groups.consumer_protocol.story import ConsumerProtocolStory, run_script

TESTDATA = Path(__file__).parent / "testdata"
FILES = sorted(TESTDATA.glob("*.txt"))
VARIANT_STORIES = {v.name: [p for p in FILES if f"variant={v.name}" in p.read_text()] for v in PROTOCOL.variants}


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_story(path: Path, rewrite: bool) -> None:
    run_script(path, rewrite=rewrite)


@pytest.mark.parametrize("variant", sorted(n for n, ps in VARIANT_STORIES.items() if ps))
def test_variant_story_holds_without_the_variant(variant: str, tmp_path: Path) -> None:
    """The same steps with the bug switched off keep every invariant: the story's violation is the
    variant's doing, not the schedule's."""
    (story,) = VARIANT_STORIES[variant]
    fixed = tmp_path / story.name
    fixed.write_text(story.read_text().replace(f" variant={variant}", ""))
    outputs = run_script(fixed, rewrite=True)
    assert not any("VIOLATION" in out for out in outputs), fixed.read_text()


def test_bad_command_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.txt"
    f.write_text("cgroup consumers=c1\n----\n\njoin c9\n----\n")
    with pytest.raises(DatadrivenError, match=r"bad.txt:4: `join c9`: unknown consumer 'c9'"):
        run_script(f, rewrite=True)


def test_bad_variant_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.txt"
    f.write_text("cgroup consumers=c1 variant=Nope\n----\n")
    with pytest.raises(DatadrivenError, match=r"bad.txt:1: .*unknown variant 'Nope'"):
        run_script(f, rewrite=True)


LIVENESS = sorted(v.name for v in PROTOCOL.variants if v.violates in ("EventuallyConverges", "FencedMemberRejoins"))


def _converges_after(path: Path, rounds: int = 2) -> bool:
    """Run the story, then ``rounds`` heartbeat intervals of a fault-free network: converged?"""
    story = ConsumerProtocolStory()
    story.run(path, rewrite=True)
    w = story.world
    for _ in range(rounds):
        for _ in range(100):   # a fenced consumer may go round and round
            if not w.pending:
                break
            dest = w.dest(w.pending[0])
            w.deliver(0)
            w.tick(dest)
        if w.quiet():
            return True
        w.advance(w.config.heartbeat_interval_ms)
    return False


@pytest.mark.parametrize("variant", LIVENESS)
def test_liveness_story_is_stuck_only_with_the_variant(variant: str, tmp_path: Path) -> None:
    """A liveness variant's story ends with the group not converging for the next heartbeat
    rounds; without the variant the same steps converge in them."""
    (story,) = VARIANT_STORIES[variant]
    stuck = tmp_path / "stuck.txt"
    stuck.write_text(story.read_text())
    fixed = tmp_path / "fixed.txt"
    fixed.write_text(story.read_text().replace(f" variant={variant}", ""))
    assert not _converges_after(stuck)
    assert _converges_after(fixed)
