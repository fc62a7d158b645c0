"""Read a TLA+ module's vocabulary (CONSTANTS, VARIABLES, the actions of ``Next``) from its text
and compare it with a protocol declaration, in both directions.  Plain text parsing (comments
dropped), enough for the project's own specs; used by tests/core/test_declarations.py."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from kraft.core.declaration import Protocol

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


@attrs.frozen
class SpecVocabulary:
    constants: tuple[str, ...]
    variables: tuple[str, ...]
    actions: tuple[str, ...]     # operators applied in the body of Next that the module defines


def strip_comments(text: str) -> str:
    text = re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S)
    return re.sub(r"\\\*[^\n]*", " ", text)


def _names(block: str) -> list[str]:
    out = []
    for part in block.split(","):
        toks = part.split()
        if toks:
            name = toks[0].split("(")[0]
            if re.fullmatch(_IDENT, name):
                out.append(name)
    return out


def vocabulary(text: str) -> SpecVocabulary:
    """The vocabulary of one module's source text."""
    t = strip_comments(text)
    stop = rf"(?=^\s*(?:CONSTANTS?|VARIABLES?|ASSUME|{_IDENT}\s*(?:\([^)]*\))?\s*==|-{{4,}}|={{4,}}))"
    consts: list[str] = []
    for m in re.finditer(rf"^\s*CONSTANTS?\b(.*?){stop}", t, flags=re.S | re.M):
        consts += _names(m.group(1))
    variables: list[str] = []
    for m in re.finditer(rf"^\s*VARIABLES?\b(.*?){stop}", t, flags=re.S | re.M):
        variables += _names(m.group(1))
    defined = set(re.findall(rf"^({_IDENT})\s*(?:\([^)]*\))?\s*==", t, flags=re.M))
    body = re.search(rf"^Next\s*==(.*?)(?=^{_IDENT}\s*(?:\([^)]*\))?\s*==|^-{{4,}}|^={{4,}})", t, flags=re.S | re.M)
    actions: list[str] = []
    if body:
        # the set a quantifier ranges over (``\E n \in Replicas``) is not an action
        steps = re.sub(rf"\\in\s+{_IDENT}", " ", body.group(1))
        for name in re.findall(rf"\b({_IDENT})\b", steps):
            if name in defined and name not in actions and name != "Next":
                actions.append(name)
    return SpecVocabulary(tuple(consts), tuple(variables), tuple(actions))


def compare(decl: Protocol, text: str, where: str | None = None) -> list[str]:
    """Every disagreement between the declaration and the spec text, as sentences (empty: agree)."""
    where = where or f"spec/{decl.spec_module}.tla"
    v = vocabulary(text)
    problems: list[str] = []

    def both(kind: str, spec: set[str], declared: set[str]) -> None:
        for name in sorted(spec - declared):
            problems.append(f"{where}: {kind} {name} is in the spec but not in the {decl.name} declaration")
        for name in sorted(declared - spec):
            problems.append(f"{where}: {kind} {name} is declared by {decl.name} but not in the spec")

    both("action", set(v.actions), {a.spec for a in decl.actions})
    both("variable", set(v.variables), set(decl.variable_names()))
    both("constant", set(v.constants), set(decl.constants) | set(decl.variant_names))
    return problems


def compare_file(decl: Protocol) -> list[str]:
    path = decl.spec_path
    try:
        text = Path(path).read_text()
    except OSError as exc:
        return [f"{path}: cannot read the spec of {decl.name}: {exc.strerror}"]
    return compare(decl, text)
