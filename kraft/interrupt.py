"""How a ``kraft`` command stops when it is interrupted: its exit code, its message, its children.

Signals. Inside :func:`guard` (``kraft`` wraps every subcommand in it, and so do the packages'
``python -m`` entry points) SIGINT and SIGTERM end the command with ``EXIT_INTERRUPTED`` (130) or
``EXIT_TERMINATED`` (143) from kraft/outcome.py, and one line on stderr (``kraft check:
interrupted``), never a traceback. The first signal asks every child process this module tracks to
stop (each with its own signal: SIGTERM for a JVM or a ``kraft`` child, SIGINT for pytest), refuses
to start new ones, and raises :class:`Interrupted` in the main thread; the guard then waits up to a
grace period for the children and kills what is left. A second signal kills the children at once.
Whatever else is raised while the interrupt unwinds (a cleanup that talks to a stopped JVM) ends
the command the same way.

Children. :func:`run` starts a command in its own session (so stopping its process group reaches
everything it started) and waits for it; :func:`tracked` registers a process started elsewhere
(TLC, which sets its own session up); :func:`adopt` registers one that lives as long as this
process (the Spark gateway JVM, which is not in a group of its own: only it is signalled, after
its jobs were cancelled, so that its shutdown reports no failed task).
:func:`deferred` holds a signal back while such a process is being started, until it can be
tracked.

Documents. A command's JSON documents are removed when its work starts and written whole once its
verdict is known (kraft/outcome.py: ``clear_documents``, ``write_document``), so an interrupted run
leaves none.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from typing import Any, Callable, Iterator, Sequence

from kraft.outcome import EXIT_INTERRUPTED, EXIT_TERMINATED

__all__ = ["Interrupted", "guard", "run", "tracked", "adopt", "release", "stop", "deferred", "exit_code_of"]

GRACE = 5.0  # seconds a child gets to stop on its own before it is killed

_EXIT_OF = {signal.SIGINT: EXIT_INTERRUPTED, signal.SIGTERM: EXIT_TERMINATED}
_WORD_OF = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived (``signum`` says which). A KeyboardInterrupt, so libraries that
    clean up after Ctrl-C do so for SIGTERM too (py4j closes the connection of a call it cut
    short; without that the next call waits for the cut one to finish)."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_code_of(signum: int) -> int:
    """130 for SIGINT, 143 for SIGTERM (the shell's 128 + signal number)."""
    return _EXIT_OF.get(signum, 128 + signum)


class _Child:
    def __init__(self, proc: subprocess.Popen, signum: int, group: bool, grace: float,
                 wind_down: Callable[[], Any] | None = None) -> None:
        self.proc, self.signum, self.group, self.grace = proc, signum, group, grace
        self.wind_down = wind_down
        self.asked = False  # it was sent its stop signal (once is enough: pytest takes a second SIGINT badly)

    def ask(self) -> None:
        """Send the stop signal, once."""
        if not self.asked:
            self.asked = True
            self.send(self.signum)

    def send(self, signum: int) -> None:
        if self.proc.returncode is not None:
            return
        try:
            if self.group:
                os.killpg(self.proc.pid, signum)
            else:
                os.kill(self.proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


_children: dict[int, _Child] = {}  # by pid; changed only by single dict operations (signal-safe)
_stopping = 0  # the signal that started the stop, 0 while running
_raised = False  # Interrupted was raised in the main thread for it
_defer = 0  # depth of deferred() in the main thread
_armed = False  # our handlers are installed (inside guard)


def _signal_children(signum: int | None = None) -> None:
    """Send each child its stop signal (one with a wind-down waits for :func:`_finish`), or
    ``signum`` to all."""
    for child in list(_children.values()):
        if signum:
            child.send(signum)
        elif child.wind_down is None:
            child.ask()


def _begin(signum: int) -> None:
    """The interrupt has come: nothing more is logged or warned (libraries report what it cuts
    short: py4j logs the calls and connections it broke with their tracebacks, pyspark warns of a
    JVM it could not stop cleanly), and the children are asked to stop."""
    global _stopping
    _stopping = signum
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    _signal_children()


def _on_signal(signum: int, frame: Any) -> None:
    global _raised
    if _stopping:  # a second signal: no more grace
        _signal_children(signal.SIGKILL)
        if not _raised:
            _raised = True
            raise Interrupted(_stopping)
        return
    _begin(signum)
    if _defer:
        return
    _raised = True
    raise Interrupted(signum)


def _arm() -> None:
    global _armed
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    _armed = True


def _quiet_threads(previous: Callable[[threading.ExceptHookArgs], Any]) -> Callable[[threading.ExceptHookArgs], Any]:
    """A thread that ends because the process is being interrupted (it tried to start a child) says
    nothing; any other thread's exception is reported as before."""

    def hook(args: threading.ExceptHookArgs) -> None:
        if _stopping and args.exc_type is not None and issubclass(args.exc_type, KeyboardInterrupt):
            return
        previous(args)

    return hook


@contextlib.contextmanager
def guard(name: str | Callable[[], str]) -> Iterator[None]:
    """Run a command's body so that SIGINT/SIGTERM end it with 130/143 and ``NAME: interrupted``
    (or ``terminated``) on stderr, after its children have stopped. ``name`` may be a callable,
    read when the signal has come (``kraft`` knows the subcommand only once it has parsed it)."""
    _arm()
    threading.excepthook = _quiet_threads(threading.excepthook)
    try:
        yield
    except Interrupted as exc:
        signum = exc.signum
    except KeyboardInterrupt:  # raised by a handler other than ours (pyspark's, while it starts)
        signum = _stopping or signal.SIGINT
    except BaseException:
        if not _stopping:  # the command's own exit or failure
            raise
        # raised while the interrupt unwound (a cleanup talking to a JVM that was just stopped,
        # an exit code computed from a killed child): a consequence of the interrupt
        signum = _stopping
    else:
        if not _stopping:
            return
        signum = _stopping
    _finish(signum)
    label = name() if callable(name) else name
    prefix = "\r\x1b[K" if _isatty(sys.stderr) else ""  # over a live progress line
    sys.stderr.write(f"{prefix}{label}: {_WORD_OF.get(signum, f'stopped by signal {signum}')}\n")
    sys.stderr.flush()
    sys.exit(exit_code_of(signum))


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _finish(signum: int) -> None:
    """Stop every tracked child: its stop signal (already sent by the handler, unless the
    interrupt came another way), the grace, then SIGKILL."""
    global _raised
    _raised = True  # from here on a second signal only hurries the children
    if not _stopping:
        _begin(signum)
    children = list(_children.values())
    for child in children:
        if child.wind_down is not None:
            _wind_down(child)
    deadline = time.monotonic() + max((c.grace for c in children), default=0.0)
    for child in children:
        _wait(child.proc, deadline - time.monotonic())
    for child in children:
        child.send(signal.SIGKILL)
        _wait(child.proc, 5.0)


def _wind_down(child: _Child) -> None:
    """Let the child end its work its own way (within its grace), then send its stop signal."""
    worker = threading.Thread(target=_quietly, args=(child.wind_down,), daemon=True)
    worker.start()
    worker.join(child.grace)
    child.ask()


def _quietly(fn: Callable[[], Any]) -> None:
    with contextlib.suppress(Exception):
        fn()


def _wait(proc: subprocess.Popen, seconds: float) -> bool:
    try:
        proc.wait(timeout=max(0.0, seconds))
        return True
    except subprocess.TimeoutExpired:
        return False


def _refuse_if_stopping() -> None:
    if _stopping:
        raise Interrupted(_stopping)


def _track(proc: subprocess.Popen, signum: int, group: bool, grace: float) -> None:
    _children[proc.pid] = _Child(proc, signum, group, grace)
    if _stopping:  # the signal came while it was being started
        _children[proc.pid].ask()
        raise Interrupted(_stopping)


def release(proc: subprocess.Popen) -> None:
    """Stop tracking ``proc`` (it has exited, or it was stopped)."""
    _children.pop(proc.pid, None)


def stop(proc: subprocess.Popen, signum: int = signal.SIGTERM, grace: float = GRACE,
         group: bool = True) -> None:
    """Stop ``proc`` (its whole process group unless ``group`` is false): ``signum``, up to
    ``grace`` seconds, then SIGKILL. Returns once it has exited."""
    child = _children.get(proc.pid) or _Child(proc, signum, group, grace)
    child.ask()
    if not _wait(proc, child.grace):
        child.send(signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def tracked(proc: subprocess.Popen, signum: int = signal.SIGTERM, grace: float = GRACE,
            group: bool = True) -> Iterator[subprocess.Popen]:
    """Track ``proc`` (already started, in its own process group unless ``group`` is false) for
    the duration of the block; if the block raises (an interrupt), stop it before going on."""
    try:
        _track(proc, signum, group, grace)
    except BaseException:
        stop(proc)
        release(proc)
        raise
    try:
        yield proc
    except BaseException:
        stop(proc)
        raise
    finally:
        release(proc)


def run(argv: Sequence[str], *, timeout: float | None = None, signum: int = signal.SIGTERM,
        grace: float = GRACE, **popen_kwargs: Any) -> int | None:
    """Run ``argv`` in a session of its own and return its exit code, or None if ``timeout``
    seconds passed first (it is then stopped: ``signum`` to its process group, ``grace``, SIGKILL).
    An interrupt of this process stops it the same way. ``popen_kwargs`` go to Popen."""
    _refuse_if_stopping()
    proc = subprocess.Popen(list(argv), start_new_session=True, **popen_kwargs)
    with tracked(proc, signum, grace):
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(proc)
            return None


def adopt(proc: subprocess.Popen, signum: int = signal.SIGTERM, grace: float = GRACE,
          wind_down: Callable[[], Any] | None = None) -> None:
    """Track ``proc`` until :func:`release`: it is signalled alone (it shares this process's group).
    ``wind_down``, if given, is called first (in a thread, within the grace) once the interrupt
    has unwound: a way to end its work that says less than a signal. Also takes SIGINT back from
    whoever replaced the handler while starting it (pyspark does)."""
    _children[proc.pid] = _Child(proc, signum, False, grace, wind_down)
    if _stopping and wind_down is None:  # the signal came while it was starting (deferred() raises it)
        _children[proc.pid].ask()
    elif _armed:
        _arm()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold a signal back while a process is started that cannot be tracked before it is up (its
    Popen happens inside a library); the interrupt is raised when the block ends. A second signal
    does not wait."""
    global _defer, _raised
    main = threading.current_thread() is threading.main_thread()
    if main:
        _defer += 1
    try:
        yield
    finally:
        if main:
            _defer -= 1
    if _stopping and not _raised and (not main or _defer == 0):
        _raised = True
        raise Interrupted(_stopping)
