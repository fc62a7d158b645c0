"""Consumer-protocol stories with golden output (testdata/*.txt; the command language is in
kraft/groups/consumer_protocol/story.py).  ``pytest --rewrite`` regenerates the outputs: read the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.core.datadriven import DatadrivenError
from kraft.groups.consumer_protocol.protocol import PROTOCOL
from kraft.groups.consumer_protocol.story import run_script

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
