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
the line of the command, with both outputs.

``Story`` is the one driver of every protocol's stories: a story begins with the protocol's
``start`` command (which builds its ``World``), then each command steps the world, and every step a
node takes is printed as it happens (the acting node and spec action, what changed, the messages
sent).  Every invariant is checked after every step; a violation is printed as ``VIOLATION
<Invariant>: ...`` and ends the story (only the protocol's views may follow).  A protocol adds its
command table and how it shows its nodes and messages, nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping

import attrs

from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.step import Ready
from kraft.core.world import World


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


Command = Callable[["Story", list[str]], None]


class Story:
    """One story file being run: its world, and the lines the current command printed.

    A protocol's story class sets ``start`` (the command that begins a story) and its ``usage``, ``views`` (commands
    that only show state, allowed after a violation) and ``commands`` (name -> function of the
    story and the command's words), and defines ``begin`` (build the world from the start
    command's words), ``snapshot`` (what of a node a step may change, as printable fields) and
    ``message_text``.  A command reports bad input with ``raise story.bad(why)``."""

    start: ClassVar[str]
    usage: ClassVar[str] = ""            # the start command's form, for error messages
    views: ClassVar[tuple[str, ...]] = ()
    commands: ClassVar[Mapping[str, Command]] = {}

    def __init__(self) -> None:
        self.world: Any = None
        self.lines: list[str] = []
        self.case: Case | None = None
        self.ended_at: int | None = None   # line of the command that ended in a violation
        self.quiet = False                 # a coarse command prints only its net changes
        self.violation: InvariantViolation | None = None   # the one that ended the story
        self.steps = 0
        self._seen: dict[Any, dict[str, Any]] = {}

    # ------------------------------------------------------------------ what a protocol provides
    def begin(self, args: list[str]) -> World:
        """The world the start command's words describe (its output goes to ``self.lines``)."""
        raise NotImplementedError

    def snapshot(self, node_id: Any) -> dict[str, Any]:
        """The node's fields a step's ``changes`` line compares (empty: none printed)."""
        return {}

    def message_text(self, message: Any) -> str:
        return repr(message)

    def step_lines(self, node_id: Any, ready: Ready) -> list[str]:
        """The lines one step prints: each spec step, then the state changes and messages."""
        out = []
        for st in ready.steps:
            args = st.args
            what = (" " + self.message_text(args["m"]) if "m" in args
                    else "".join(f" {k}={show(v)}" for k, v in args.items()))
            out.append(f"{node_id if st.node is None else st.node} {st.action}{what}")
        changed = changes(self._seen.get(node_id, {}), self.snapshot(node_id))
        if changed:
            out.append("  " + changed)
        out += self.effect_lines(node_id, ready)
        out += ["  send " + self.message_text(m) for m in ready.messages]
        return out

    def effect_lines(self, node_id: Any, ready: Ready) -> list[str]:
        """Lines a step prints between its state changes and its messages (e.g. what it persisted)."""
        return []

    # ------------------------------------------------------------------ running a story
    def handle(self, case: Case) -> str:
        """Run one command; its output."""
        self.case, self.lines = case, []
        if case.command == self.start:
            self._begin(list(case.args))
            return "\n".join(self.lines)
        if self.world is None:
            raise self.bad(f"the first command must be `{self.usage or self.start + ' ...'}`")
        if self.ended_at is not None and case.command not in self.views:
            raise self.bad(f"the story ended in a violation at line {self.ended_at}; only views "
                           f"({', '.join(self.views)}) or a new `{self.start}` may follow")
        command = self.commands.get(case.command)
        if command is None:
            raise self.bad(f"unknown command {case.command!r}; known: {self.start}, "
                           f"{', '.join(sorted(self.commands))}")
        try:
            command(self, list(case.args))
        except InvariantViolation as exc:
            self.ended_at, self.violation = case.line, exc
            self.lines += violation_lines(exc.violations)
        except (ValueError, IndexError, KeyError) as exc:
            raise self.bad(f"bad arguments ({exc})") from None
        finally:
            self.quiet = False
        return "\n".join(self.lines)

    def _begin(self, args: list[str]) -> None:
        self.world, self.ended_at, self.violation, self.steps = None, None, None, 0
        world = self.begin(args)
        world.observer = self.observe
        self.world = world
        self._seen = {n: self.snapshot(n) for n in world.node_ids()}

    def observe(self, node_id: Any, ready: Ready) -> None:
        """Print a step as it happens (unless quiet), then check every invariant."""
        if not ready.steps:
            return
        self.steps += len(ready.steps)
        if not self.quiet:
            self.lines += self.step_lines(node_id, ready)
        self._seen[node_id] = self.snapshot(node_id)
        self.world.check()

    def bad(self, why: str) -> DatadrivenError:
        case = self.case
        assert case is not None
        return DatadrivenError(case.path, case.line, f"`{case.text}`: {why}")

    def run(self, path: str | Path, rewrite: bool = False) -> list[str]:
        """Run one story file against its golden output (``rewrite``: write it back instead)."""
        return run_file(path, self.handle, rewrite=rewrite)


def show(x: Any) -> str:
    """A value as stories print it: ``none``, ``true``/``false``, else ``str``."""
    return "none" if x is None else str(x).lower() if isinstance(x, bool) else str(x)


def changes(before: dict[str, Any], after: dict[str, Any]) -> str:
    """``field old->new`` for every field that changed, in ``after``'s order."""
    return ", ".join(f"{k} {show(before.get(k))}->{show(v)}" for k, v in after.items() if before.get(k) != v)


def violation_lines(violations: list[Violation]) -> list[str]:
    """One line per broken invariant (its first message; how many more there were)."""
    by_name: dict[str, list[str]] = {}
    for v in violations:
        by_name.setdefault(v.invariant, []).append(v.message)
    return [f"VIOLATION {name}: {msgs[0]}" + (f" (and {len(msgs) - 1} more)" if len(msgs) > 1 else "")
            for name, msgs in by_name.items()]


# ---------------------------------------------------------------------- network commands
# A story whose network is the world's queue (``world.pending``) and that keeps the messages it
# took out in ``story.held``: the commands that pick a message by type and consumer, and hold,
# release or drop it.

def find_message(story: Story, pool: list[Any], args: list[str], types: Mapping[str, type],
                 party: Callable[[Any], str]) -> int:
    """The index of the oldest message in ``pool`` of the type (a key of ``types``) and the party
    (``party(message)``, checked by ``story.node``) that ``args`` name; either may be left out."""
    kind = who = None
    for a in args:
        if a in types:
            kind = types[a]
        else:
            who = story.node(a)  # type: ignore[attr-defined]
    for i, m in enumerate(pool):
        if (kind is None or isinstance(m, kind)) and (who is None or party(m) == who):
            return i
    raise story.bad(f"no message matching {' '.join(args) or 'anything'} (in flight: {len(pool)})")


def hold_message(story: Story, index: int) -> None:
    """Take the ``index``-th message out of the network (``story.held``)."""
    m = story.world.pending.pop(index)
    story.held.append(m)  # type: ignore[attr-defined]
    story.lines.append(f"held {story.message_text(m)}")


def release_message(story: Story, index: int) -> None:
    """Put the ``index``-th held message back, first in line."""
    m = story.held.pop(index)  # type: ignore[attr-defined]
    story.world.pending.insert(0, m)
    story.lines.append(f"released {story.message_text(m)}")


def drop_message(story: Story, index: int) -> None:
    """The network loses the ``index``-th message in flight."""
    story.lines.append(f"dropped {story.message_text(story.world.pending[index])}")
    story.world.drop(index)
