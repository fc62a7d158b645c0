"""The golden-output scenario runner (kraft.core.datadriven): parse, compare, rewrite, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraft.core.datadriven import Case, DatadrivenError, DatadrivenMismatch, parse, run_file


def _echo(case: Case) -> str:
    if case.command == "boom":
        raise DatadrivenError(case.path, case.line, "no such command")
    return " ".join(reversed(case.args))


def test_matching_file_passes_and_comments_survive_rewrite(tmp_path: Path) -> None:
    f = tmp_path / "t.txt"
    f.write_text("# a story\nsay a b\n----\nb a\n\nsay c\n----\nc\n")
    assert run_file(f, _echo) == ["b a", "c"]
    f.write_text("# a story\nsay a b\n----\nwrong\n\nsay c\n----\n")
    with pytest.raises(DatadrivenMismatch, match=r"t.txt:2: output of `say a b` differs"):
        run_file(f, _echo)
    run_file(f, _echo, rewrite=True)
    assert f.read_text() == "# a story\nsay a b\n----\nb a\n\nsay c\n----\nc\n"


def test_missing_separator_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.txt"
    f.write_text("say a\n----\na\n\nsay b\nsay c\n")
    with pytest.raises(DatadrivenError, match=r"bad.txt:5: command `say b` is not followed by a `----` line"):
        parse(f)


def test_blank_output_lines_cannot_end_a_case_early(tmp_path: Path) -> None:
    f = tmp_path / "t.txt"
    f.write_text("say x\n----\n")
    run_file(f, lambda c: "one\n\ntwo", rewrite=True)
    assert parse(f)[0].expected == "one\n.\ntwo"
    assert run_file(f, lambda c: "one\n\ntwo") == ["one\n.\ntwo"]
