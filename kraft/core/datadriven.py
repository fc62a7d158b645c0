"""Datadriven scenario files with golden output (etcd raft's ``testdata/`` style, after
cockroachdb/datadriven): a file is a sequence of cases, each

    # comments (kept as they are)
    command arg arg ...
    ----
    the output the command produced
    (a blank line ends the case)

``run_file(path, handler, rewrite=False)`` runs every case in order through ``handler(case) -> str``
and compares the output; with ``rewrite=True`` (``pytest --rewrite``) it writes the produced
output back into the file instead.  A mismatch raises ``DatadrivenMismatch`` naming the file and
the line of the command, with both outputs.  The protocol-specific part is only the handler.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import attrs


@attrs.frozen
class Case:
    path: str
    line: int              # 1-based line of the command
    command: str           # first word
    args: tuple[str, ...]  # the other words
    text: str              # the whole command line
    expected: str          # the golden output ("" if none yet)
    comments: tuple[str, ...] = ()


class DatadrivenError(Exception):
    """A malformed file or a command the handler rejects; names the file and line."""

    def __init__(self, path: str, line: int, why: str) -> None:
        super().__init__(f"{path}:{line}: {why}")
        self.path, self.line, self.why = path, line, why


class DatadrivenMismatch(AssertionError):
    def __init__(self, case: Case, got: str) -> None:
        super().__init__(f"{case.path}:{case.line}: output of `{case.text}` differs (run pytest with --rewrite "
                         f"to accept it)\n--- expected\n{case.expected}\n--- got\n{got}")
        self.case, self.got = case, got


def parse(path: str | Path) -> list[Case]:
    p = str(path)
    lines = Path(path).read_text().splitlines()
    cases: list[Case] = []
    i, comments = 0, []
    while i < len(lines):
        raw = lines[i]
        if not raw.strip():
            i += 1
            continue
        if raw.lstrip().startswith("#"):
            comments.append(raw)
            i += 1
            continue
        line_no, text = i + 1, raw.strip()
        i += 1
        if i >= len(lines) or lines[i].strip() != "----":
            raise DatadrivenError(p, line_no, f"command `{text}` is not followed by a `----` line")
        i += 1
        out: list[str] = []
        while i < len(lines) and lines[i].strip():
            out.append(lines[i])
            i += 1
        words = text.split()
        cases.append(Case(p, line_no, words[0], tuple(words[1:]), text, "\n".join(out), tuple(comments)))
        comments = []
    return cases


def render(cases: list[Case], outputs: list[str]) -> str:
    parts = []
    for case, out in zip(cases, outputs):
        block = list(case.comments) + [case.text, "----"]
        if out:
            block.append(out)
        parts.append("\n".join(block))
    return "\n\n".join(parts) + "\n"


def run_file(path: str | Path, handler: Callable[[Case], str], rewrite: bool = False) -> list[str]:
    """Run every case; return the outputs.  ``handler`` may raise DatadrivenError for a bad command."""
    cases = parse(path)
    outputs: list[str] = []
    for case in cases:
        got = handler(case).rstrip("\n")
        if any(not ln.strip() for ln in got.splitlines()):
            got = "\n".join(ln if ln.strip() else "." for ln in got.splitlines())  # a blank line would end the case
        outputs.append(got)
        if not rewrite and got != case.expected:
            raise DatadrivenMismatch(case, got)
    if rewrite:
        Path(path).write_text(render(cases, outputs))
    return outputs
