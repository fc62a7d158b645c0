"""What every judging ``kraft`` command shares at the terminal: ``--json`` and the live line.

``--json`` (:func:`json_flag`): the command runs as usual (writes its files, keeps its exit code)
but its human output is switched off and stdout carries exactly one thing, the command's JSON
document (the one with the kraft/outcome.py header it writes under ``--out``). The command hands
that document over with :func:`set_document` when it has built it. A command that stops before it
has a document (a usage or input error, exit 2) prints a header-only document instead, so stdout
is always one JSON object; the error message itself stays on stderr. An interrupted command
(exit 130 or 143, kraft/interrupt.py) has no verdict and prints nothing on stdout.

The live line (:class:`LiveLine`): progress of a long run as one line on stderr, rewritten in
place, shown only on a terminal and never under ``CI``: piped or logged output gets the summary
and nothing else.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import os
import sys
import time
from typing import IO, Any, Callable

import click

from kraft.outcome import Verdict, header

__all__ = ["json_flag", "set_document", "live_enabled", "LiveLine"]

_document: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar("kraft_json_document",
                                                                                      default=None)


def set_document(doc: dict[str, Any]) -> None:
    """Hand the command's JSON document to ``--json`` (a no-op without the flag)."""
    slot = _document.get()
    if slot is not None:
        slot[:] = [doc]


def json_flag(command: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator (place it right above ``def``, under the click options) adding ``--json``."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @click.option("--json", "as_json", is_flag=True,
                      help=f"Print the command's JSON document ({command}'s header and fields) to stdout "
                           "instead of the human output; the exit code is unchanged.")
        @functools.wraps(f)
        def wrapper(*args: Any, as_json: bool, **kwargs: Any) -> Any:
            if not as_json:
                return f(*args, **kwargs)
            slot: list[dict[str, Any]] = []
            token = _document.set(slot)
            code: int = 0
            failure: BaseException | None = None
            message = ""
            said = _Tee(sys.stderr)  # stderr still shows everything; its last line names a failure
            try:
                with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), \
                        contextlib.redirect_stderr(said):
                    f(*args, **kwargs)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            except click.ClickException as exc:  # a usage error raised by the command itself
                code, failure, message = exc.exit_code, exc, exc.format_message()
            finally:
                _document.reset(token)
            if slot:
                doc = slot[0]
            else:
                verdict = Verdict.from_exit_code(code) if code in (0, 1, 2, 3) else Verdict.ERROR
                last = said.last_line()
                doc = header(command, verdict, message or last or "stopped before producing a result (see stderr)")
            click.echo(json.dumps(doc, indent=2, default=str))
            if failure is not None:
                raise failure  # click prints the usage error on stderr and exits with its code
            sys.exit(code)

        return wrapper

    return decorate


class _Tee:
    """A stderr that also keeps what was written (for the summary of a header-only document)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._text: list[str] = []

    def write(self, text: str | bytes) -> int:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        self._text.append(text)
        if sum(map(len, self._text)) > 100_000:
            self._text = ["".join(self._text)[-20_000:]]
        return self._stream.write(text)

    def last_line(self) -> str:
        lines = [ln.strip() for ln in "".join(self._text).replace("\r", "\n").splitlines() if ln.strip()]
        return lines[-1] if lines else ""

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        if name == "buffer":  # writers must come through write() to be kept
            raise AttributeError(name)
        return getattr(self._stream, name)


def live_enabled(stream: IO[str] | None = None) -> bool:
    """Whether a live progress line may be drawn: ``stream`` (default stderr) is a terminal and
    ``CI`` is not set."""
    stream = stream if stream is not None else sys.stderr
    if os.environ.get("CI"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class LiveLine:
    """One status line on stderr, rewritten with ``\\r`` (at most every ``interval`` seconds);
    silent unless :func:`live_enabled`. ``done()`` clears it so the summary starts on a clean line."""

    def __init__(self, interval: float = 0.1, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = live_enabled(self.stream)
        self.interval = interval
        self._last = 0.0
        self._width = 0

    def update(self, text: str, *, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        text = text.replace("\n", " ")
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def done(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
