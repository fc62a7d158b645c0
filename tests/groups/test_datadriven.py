"""Consumer-group stories with golden output (tests/groups/testdata/*.txt; the command language is
in kraft/groups/story.py).  ``pytest --rewrite`` regenerates the outputs: read the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.core.datadriven import DatadrivenError
from kraft.groups.protocol import PROTOCOL
from kraft.groups.story import run_script

TESTDATA = Path(__file__).parent / "testdata"
FILES = sorted(TESTDATA.glob("*.txt"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_story(path: Path, rewrite: bool) -> None:
    run_script(path, rewrite=rewrite)


def test_every_variant_has_a_story_ending_in_its_invariant() -> None:
    """Each declared variant has a story that switches it on and ends in the invariant TLC reports."""
    for v in PROTOCOL.variants:
        stories = [p for p in FILES if f"variant={v.name}" in p.read_text()]
        assert stories, f"no story for {v.name}"
        for p in stories:
            assert f"VIOLATION {v.violates}:" in p.read_text(), f"{p.name} never breaks {v.violates}"


def test_bad_command_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.txt"
    f.write_text("group consumers=c1\n----\n\ndeliver JoinGroup c9\n----\n")
    with pytest.raises(DatadrivenError, match=r"bad.txt:4: `deliver JoinGroup c9`: unknown consumer 'c9'"):
        run_script(f, rewrite=True)


@pytest.mark.parametrize("variant", PROTOCOL.variant_names)
def test_variant_story_holds_without_the_variant(variant: str, tmp_path: Path) -> None:
    """The same steps with the bug switched off keep every invariant: the story's violation is the
    variant's doing, not the schedule's."""
    (story,) = [p for p in FILES if f"variant={variant}" in p.read_text()]
    fixed = tmp_path / story.name
    fixed.write_text(story.read_text().replace(f" variant={variant}", ""))
    outputs = run_script(fixed, rewrite=True)
    assert not any("VIOLATION" in out for out in outputs), fixed.read_text()
