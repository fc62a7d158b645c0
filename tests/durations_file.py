"""``--durations-file=PATH``: write pytest's durations table to PATH as well, relative to the
rootdir, with every test phase of at least 0.1 s (the terminal keeps ``--durations=N``), followed by
the seconds spent per test directory, which is what a suite's time budget is planned with.
``./kraft.sh test`` writes .ci/artifacts/durations.txt. Give it with ``=``: as a separate argument,
pytest takes PATH for a test path before it knows the option, and looks for conftest files
beside it."""

from __future__ import annotations

import pytest
from collections import Counter

from _pytest import runner

FILE_MIN_SECONDS = 0.1


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
    shown = config.option.durations, config.option.durations_min
    config.option.durations, config.option.durations_min = 0, FILE_MIN_SECONDS
    try:
        runner.pytest_terminal_summary(out)  # type: ignore[arg-type]  # pytest's own table, every row
    finally:
        config.option.durations, config.option.durations_min = shown
    out.lines += _per_directory(terminalreporter)
    target = config.rootpath / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(out.lines) + "\n")
    terminalreporter.write_line(f"durations written to {path}")


def _per_directory(tr: pytest.TerminalReporter) -> list[str]:
    """Seconds of every phase of every test, summed per test file's directory, largest first."""
    seconds: Counter[str] = Counter()
    for reports in tr.stats.values():
        for r in reports:
            if isinstance(r, pytest.TestReport):
                seconds[r.nodeid.split("::")[0].rsplit("/", 1)[0]] += r.duration
    lines = ["=== seconds per test directory ==="]
    lines += [f"{s:9.2f}  {d}" for d, s in seconds.most_common()]
    return lines + [f"{sum(seconds.values()):9.2f}  total (all workers)"]
