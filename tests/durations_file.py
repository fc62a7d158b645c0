"""``--durations-file=PATH``: write the ``--durations`` table (the slowest tests, as pytest prints
them) to PATH as well, relative to the rootdir. ``./kraft.sh test`` writes
.ci/artifacts/durations.txt. Give it with ``=``: as a separate argument, pytest takes PATH for a
test path before it knows the option, and looks for conftest files beside it."""

from __future__ import annotations

import pytest
from _pytest import runner


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--durations-file", default=None, metavar="PATH",
                     help="also write the --durations table to PATH (relative to the rootdir)")


class _FileReporter:
    """What pytest's --durations table needs of a terminal reporter, collecting lines instead."""

    def __init__(self, tr: pytest.TerminalReporter) -> None:
        self.config, self.stats, self.lines = tr.config, tr.stats, []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(f"{sep * 3} {title} {sep * 3}")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    path = config.getoption("--durations-file")
    if not path or config.option.durations is None:
        return
    out = _FileReporter(terminalreporter)
    runner.pytest_terminal_summary(out)  # type: ignore[arg-type]  # pytest's own table, same rows
    target = config.rootpath / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(out.lines) + "\n")
    terminalreporter.write_line(f"durations written to {path}")
