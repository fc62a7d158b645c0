"""Protocol glue: how a logged trace step becomes spec actions and TLA+ values.

A :class:`Glue` says, for one protocol,

* which spec module checks it and where that module lives;
* which spec variables a trace may log and the type of each (``traces.tla`` type language);
* for each logged action name, the spec action(s) it stands for: one :class:`SpecStep` normally,
  two or more when the implementation takes in one step what the spec splits (they are composed
  in the trace spec: the intermediate state is existentially chosen by TLC, the logged post-state
  is checked after the last one);
* the TLA+ operator each spec step calls (``templates``: an expression over the parameter tuple
  ``p``), and optional named guards evaluated only for diagnostics ("message in network");
* the CONSTANTS of a run from the trace header;
* optionally, how to derive spec variables the trace does not log (``ghosts``) from the logged
  steps before a cut (``traces.segment``): a derived value is only a claim, which TLC checks
  against the spec's own value at the last step before the cut.

The registry maps the header's ``protocol`` field to a glue. Built-in glues are imported lazily.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import attrs

from traces.schema import Event
from traces.tla import RenderError, T, tla_string


@attrs.frozen
class SpecStep:
    """One spec action invocation: ``op`` is a key of ``Glue.templates``; ``params`` are TLA+
    expressions (already rendered) bound to ``p[1]``, ``p[2]``, ... in the template."""

    op: str
    params: tuple[str, ...] = ()


class UnknownAction(Exception):
    """The logged action has no spec counterpart in this glue (and was not marked spec: false)."""


class GlueError(Exception):
    """The step cannot be translated (bad args for the action); message says which field."""


Derive = Callable[[Sequence[Event], Sequence[Sequence[str]], Sequence[int]], list[Any]]


@attrs.define
class Glue:
    protocol: str
    module: str
    spec_dir: Path
    variables: dict[str, T]  # spec variables a trace may log, with their JSON->TLA+ type
    templates: dict[str, str]  # op -> TLA+ action expression over the parameter tuple p
    translate: Callable[[Event], list[SpecStep]]  # raises UnknownAction / GlueError
    constants: Callable[[dict[str, Any]], dict[str, str]]  # header -> {CONSTANT: cfg value text}
    guards: dict[str, dict[str, str]] = attrs.field(factory=dict)  # op -> {label: TLA+ expr over p}
    extra_modules: tuple[str, ...] = ()  # modules the generated module must EXTEND besides `module`
    variants: tuple[str, ...] = ()  # bug-variant CONSTANT names (always FALSE when checking)
    # unlogged spec variable -> (its type, its value after the first k logged steps for each k of
    # ``ends``: derive(events, ops, ends), ``ops[i]`` the spec operators of ``events[i]``)
    ghosts: dict[str, tuple[T, Derive]] = attrs.field(factory=dict)

    def render_state(self, state: dict[str, Any], where: str) -> dict[str, str]:
        """Render the logged variables this glue knows; unknown names raise GlueError."""
        out = {}
        for k, v in state.items():
            t = self.variables.get(k)
            if t is None:
                raise GlueError(f"{where}: {k!r} is not a variable of spec {self.module} "
                                f"(known: {', '.join(sorted(self.variables))})")
            out[k] = t.render(v, f"{where}.{k}")
        return out


class Tagged(T):
    """A record whose field ``tag`` names its kind; each kind has exactly its own fields (a field
    missing or extra would silently make it another TLA+ value, so none is allowed)."""

    def __init__(self, tag: str, kinds: dict[str, dict[str, T]], what: str = "a message") -> None:
        self.tag, self.kinds, self.what = tag, kinds, what

    def render(self, v: Any, where: str) -> str:
        if not isinstance(v, dict) or v.get(self.tag) not in self.kinds:
            raise RenderError(f"{where}: {self.what} must be an object whose {self.tag!r} is one of "
                              f"{', '.join(self.kinds)}")
        fields = self.kinds[v[self.tag]]
        want = set(fields) | {self.tag}
        if set(v) != want:
            raise RenderError(f"{where}: a {v[self.tag]} has fields {sorted(want)}, got {sorted(v)}")
        parts = [f"{k} |-> {fields[k].render(v[k], f'{where}.{k}')}" for k in fields]
        parts.append(f"{self.tag} |-> {tla_string(v[self.tag])}")
        return "[" + ", ".join(sorted(parts)) + "]"


Translate = Callable[[str, Any, dict[str, Any], str], SpecStep]


def declared_step(declaration: Any, actor: str, node_type: T, arg_types: dict[str, T]) -> Translate:
    """Translate one action of a protocol declaration (``kraft.core.declaration.Protocol``): the
    node first when the action is ``actor``'s, then the declared args, each rendered by its type."""

    def one(action: str, node: Any, args: dict[str, Any], where: str) -> SpecStep:
        if not declaration.has_action(action):
            raise UnknownAction(action)
        a = declaration.action(action)
        params: list[str] = []
        if a.actor == actor:
            try:
                params.append(node_type.render(node, f"{where} node"))
            except RenderError as exc:
                raise GlueError(f"{where}: action {action} needs a {actor} as node: {exc}") from None
        for name in a.args:
            if name not in args:
                raise GlueError(f"{where}: action {action} needs args.{name}")
            params.append(arg_types[name].render(args[name], f"{where} args.{name}"))
        return SpecStep(action, tuple(params))

    return one


def composed(ev: Event, one: Translate) -> list[SpecStep]:
    """The spec steps of one trace line: its own action, then each part of ``args.then`` in order
    (``one(action, node, args, where)`` translates one of them)."""
    steps = [one(ev.action, ev.node, ev.args, f"line {ev.line}")]
    then = ev.args.get("then", [])
    if not isinstance(then, list):
        raise GlueError(f"line {ev.line}: args.then must be a list of {{action, node, ...}}")
    for k, part in enumerate(then):
        if not isinstance(part, dict) or not isinstance(part.get("action"), str):
            raise GlueError(f"line {ev.line}: args.then[{k}] must be an object with an 'action'")
        steps.append(one(part["action"], part.get("node"), part, f"line {ev.line} then[{k}]"))
    return steps


_BUILTIN = {
    "kraft": "traces.protocols.kraft:GLUE",
    "groups": "traces.protocols.groups:GLUE",
    "replication": "traces.protocols.replication:GLUE",
    "consumer-protocol": "traces.protocols.consumer_protocol:GLUE",
}
_REGISTRY: dict[str, Glue] = {}


def register(glue: Glue) -> None:
    _REGISTRY[glue.protocol] = glue


def get_glue(protocol: str) -> Glue | None:
    if protocol in _REGISTRY:
        return _REGISTRY[protocol]
    target = _BUILTIN.get(protocol)
    if target is None:
        return None
    mod, attr = target.split(":")
    glue = getattr(importlib.import_module(mod), attr)
    _REGISTRY[protocol] = glue
    return glue


def load_glue(target: str) -> Glue:
    """Load and register a glue given as ``module:attribute`` or ``path/to/file.py:attribute``."""
    mod, _, attr = target.rpartition(":")
    if mod.endswith(".py"):
        spec = importlib.util.spec_from_file_location(Path(mod).stem, mod)
        if spec is None or spec.loader is None:
            raise GlueError(f"cannot load glue file {mod}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(mod)
    glue = getattr(module, attr or "GLUE")
    register(glue)
    return glue


def known_protocols() -> list[str]:
    return sorted(set(_BUILTIN) | set(_REGISTRY))


_DECLARED: dict[Path, tuple[str, ...]] = {}
_TEXT: dict[Path, str] = {}


def spec_text(glue: Glue) -> str:
    """The spec module's source with its comments replaced by blanks."""
    path = glue.spec_dir / f"{glue.module}.tla"
    if path not in _TEXT:
        try:
            text = path.read_text()
        except OSError as exc:
            raise GlueError(f"cannot read spec {path}: {exc}") from exc
        text = re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S)
        _TEXT[path] = re.sub(r"\\\*[^\n]*", " ", text)
    return _TEXT[path]


def declared_variables(glue: Glue) -> tuple[str, ...]:
    """The VARIABLES the spec module declares (parsed from its source, comments dropped)."""
    text = spec_text(glue)
    names: list[str] = []
    for m in re.finditer(r"^VARIABLES?\b(.*?)(?=^\S)", text, flags=re.S | re.M):
        names += [w.strip() for w in m.group(1).split(",") if re.fullmatch(r"\s*[A-Za-z_]\w*\s*", w)]
    return tuple(names)


def declared_constants(glue: Glue) -> tuple[str, ...]:
    """The CONSTANTS the spec module declares (parsed from its source, comments dropped)."""
    path = glue.spec_dir / f"{glue.module}.tla"
    if path not in _DECLARED:
        text = spec_text(glue)
        names: list[str] = []
        for m in re.finditer(r"\bCONSTANTS?\b(.*?)(?=\bVARIABLES?\b|\bASSUME\b|^\S.*==|^-{4,})", text, flags=re.S | re.M):
            for part in m.group(1).split(","):
                toks = part.split()
                w = toks[0].split("(")[0] if toks else ""
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", w):
                    names.append(w)
        _DECLARED[path] = tuple(names)
    return _DECLARED[path]


def complete_constants(glue: Glue, consts: dict[str, str], big: int = 1_000_000) -> dict[str, str]:
    """Give every declared constant the glue did not set a value, so a spec that grows a new
    bound keeps working: ``Max*`` bounds get ``big`` (a trace must never be cut by a model-size
    bound); anything else is taken from ``<Module>_small.cfg``; otherwise a GlueError names it."""
    missing = [c for c in declared_constants(glue) if c not in consts]
    if not missing:
        return consts
    out = dict(consts)
    cfg: dict[str, str] = {}
    small = glue.spec_dir / f"{glue.module}_small.cfg"
    if small.exists():
        for line in small.read_text().splitlines():
            m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=|<-)\s*(.+?)\s*$", line)
            if m:
                cfg[m.group(1)] = m.group(3) if m.group(2) == "=" else "<- " + m.group(3)
    for c in missing:
        if c.startswith("Max"):
            out[c] = str(big)
        elif c in cfg:
            out[c] = cfg[c]
        else:
            raise GlueError(f"spec {glue.module} declares CONSTANT {c}, which the {glue.protocol!r} glue "
                            f"does not set and {small.name} does not define")
    return out
