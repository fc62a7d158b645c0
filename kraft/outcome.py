"""Exit codes and the JSON header shared by every ``kraft`` command.

This module is the one place that defines them (README "The commands", docs/contracts.md
section 9). It imports nothing from the project, so protocol packages and checkers alike can use
it without pulling in a checker.

  exit code  verdict        meaning
  0          clean          ran, checked something, found nothing wrong
  1          violation      ran and found a violation (counterexample, rejected trace, anomaly,
                            a bug variant that was not caught)
  2          error          usage error, bad input, or a tool failure (missing java, TLA+ parse
                            error, unreadable file)
  3          inconclusive   ran but cannot say: an ``unknown`` verdict, a time or memory budget
                            reached, nothing checkable found
  130        (none)         interrupted (SIGINT, Ctrl-C): stopped before it could decide
  143        (none)         terminated (SIGTERM): the same, for a signal from outside

130 and 143 (the shell's 128 + signal number) are not verdicts: a command stopped by a signal
writes no document (kraft/interrupt.py says how it stops, its children with it, and why no JSON it
leaves can be read as a finished run).

Every JSON document a command writes starts with the same four fields, in this order, then the
command's own fields::

    {"command": "conform", "verdict": "clean", "summary": "4 traces, all accepted",
     "exit_code": 0, ...}

A command removes its documents from OUT when its work starts (:func:`clear_documents`) and writes
them whole once its verdict is known (:func:`write_document`: a temporary file in the same
directory, then ``os.replace``), the header document last. A document in OUT therefore always
belongs to a run that finished; an interrupted, killed or crashed run leaves none (the audit's
``results.json`` and ``malformed.json``, read beside its ``summary.json``, follow the same rule, as
do the simulator's per-run trace and history files; docs/contracts.md section 10.1).
"""

from __future__ import annotations

import contextlib
import enum
import os
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping

__all__ = [
    "EXIT_OK",
    "EXIT_VIOLATION",
    "EXIT_ERROR",
    "EXIT_INCONCLUSIVE",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "HEADER_FIELDS",
    "Verdict",
    "header",
    "read_header",
    "HeaderError",
    "worst_status",
    "plural",
    "writing",
    "write_document",
    "clear_documents",
]

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_ERROR = 2
EXIT_INCONCLUSIVE = 3
EXIT_INTERRUPTED = 130  # SIGINT
EXIT_TERMINATED = 143  # SIGTERM

HEADER_FIELDS = ("command", "verdict", "summary", "exit_code")


class Verdict(enum.Enum):
    """What a command concluded; its value is the word written to JSON."""

    CLEAN = "clean"
    VIOLATION = "violation"
    ERROR = "error"
    INCONCLUSIVE = "inconclusive"

    @property
    def exit_code(self) -> int:
        return _EXIT[self]

    @classmethod
    def from_exit_code(cls, code: int) -> "Verdict":
        for v, c in _EXIT.items():
            if c == code:
                return v
        raise ValueError(f"exit code {code} is not one of kraft's (0, 1, 2, 3)")

    @classmethod
    def worst(cls, verdicts: Iterable["Verdict"], *, empty: "Verdict | None" = None) -> "Verdict":
        """Combine the verdicts of several parts: a violation outranks an error, an error outranks
        an inconclusive part, and all clean is clean. ``empty`` is the verdict when there are no
        parts (default: inconclusive, since nothing was checked)."""
        vs = list(verdicts)
        if not vs:
            return empty if empty is not None else cls.INCONCLUSIVE
        return min(vs, key=_RANK.__getitem__)


_EXIT = {Verdict.CLEAN: EXIT_OK, Verdict.VIOLATION: EXIT_VIOLATION, Verdict.ERROR: EXIT_ERROR,
         Verdict.INCONCLUSIVE: EXIT_INCONCLUSIVE}
_RANK = {Verdict.VIOLATION: 0, Verdict.ERROR: 1, Verdict.INCONCLUSIVE: 2, Verdict.CLEAN: 3}


def header(command: str, verdict: Verdict, summary: str, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The JSON document of a command: the shared header, then the command's own ``fields``.

    ``summary`` is one short sentence in the user's words ("4 traces, all accepted"). A field of
    the command may not reuse a header name (that would silently replace the header)."""
    if not isinstance(verdict, Verdict):
        raise TypeError(f"verdict must be a Verdict, not {verdict!r}")
    doc: dict[str, Any] = {"command": command, "verdict": verdict.value, "summary": summary,
                           "exit_code": verdict.exit_code}
    for key, value in (fields or {}).items():
        if key in doc:
            raise ValueError(f"field {key!r} of `kraft {command}` collides with the shared JSON header")
        doc[key] = value
    return doc


class HeaderError(ValueError):
    """A JSON document does not start with a valid shared header."""


def read_header(doc: Any, where: str = "JSON") -> tuple[str, Verdict, str, int]:
    """Validate the header of a document written by :func:`header`; return
    ``(command, verdict, summary, exit_code)``. Raises :class:`HeaderError` naming ``where``."""
    if not isinstance(doc, dict):
        raise HeaderError(f"{where}: top level is a {type(doc).__name__}, not an object with the kraft header")
    missing = [k for k in HEADER_FIELDS if k not in doc]
    if missing:
        raise HeaderError(f"{where}: no kraft header (missing {', '.join(missing)})")
    if list(doc)[: len(HEADER_FIELDS)] != list(HEADER_FIELDS):
        raise HeaderError(f"{where}: the header fields are not first, in the order {', '.join(HEADER_FIELDS)}")
    try:
        verdict = Verdict(doc["verdict"])
    except ValueError:
        raise HeaderError(f"{where}: unknown verdict {doc['verdict']!r}") from None
    if doc["exit_code"] != verdict.exit_code:
        raise HeaderError(f"{where}: exit_code {doc['exit_code']!r} does not match verdict {verdict.value!r}")
    if not isinstance(doc["summary"], str):
        raise HeaderError(f"{where}: summary is not a sentence")
    return str(doc["command"]), verdict, doc["summary"], doc["exit_code"]


def worst_status(statuses: Iterable[str], verdict_of: Mapping[str, Verdict],
                 skipped: str = "skipped") -> tuple[Verdict, int, int, str]:
    """Combine the statuses of a command's parts (runs, stages): ``(verdict, ran, skipped, tail)``
    where ``verdict`` is the worst of the parts that ran (inconclusive if none ran), and ``tail``
    is ``"; N skipped"`` (or ``""``) for the summary sentence."""
    statuses = list(statuses)
    ran = [s for s in statuses if s != skipped]
    n_skipped = len(statuses) - len(ran)
    return (Verdict.worst(verdict_of[s] for s in ran), len(ran), n_skipped,
            f"; {n_skipped} skipped" if n_skipped else "")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``plural(1, "trace") == "1 trace"``, ``plural(4, "trace") == "4 traces"``."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


@contextlib.contextmanager
def writing(path: str | os.PathLike) -> Iterator[IO[str]]:
    """A text file to write ``path`` through, whole or not at all: it is a temporary file beside
    ``path``, renamed over it when the block ends and removed if the block fails or is interrupted."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_document(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (:func:`writing`)."""
    with writing(path) as fh:
        fh.write(text)


def clear_documents(*paths: str | os.PathLike) -> None:
    """Remove the documents an earlier run left where this run will write its own, so none is
    taken for this run's result before this run has written it. A document that cannot be removed
    cannot be replaced either: the command's own write reports that."""
    for p in paths:
        with contextlib.suppress(OSError):
            Path(p).unlink()
