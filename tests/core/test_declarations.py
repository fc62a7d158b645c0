"""Spec and declaration agree, in both directions: every action of ``Next``, every
VARIABLE and every CONSTANT of each spec is declared once in ``kraft/<protocol>/protocol.py``, and
nothing is declared that the spec lacks.  The checker is shown failing on a renamed action, a
missing variable and a missing variant CONSTANT."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from kraft.core.declaration import SPEC_DIR, snake
from kraft.core.specparse import compare, compare_file
from kraft.protocols import declarations
from kraft.quorum.protocol import PROTOCOL as KRAFT

ROOT = Path(__file__).resolve().parents[2]
DECLS = declarations()


@pytest.mark.parametrize("decl", DECLS, ids=[d.name for d in DECLS])
def test_spec_and_declaration_agree(decl) -> None:
    assert compare_file(decl) == []


@pytest.mark.parametrize("decl", DECLS, ids=[d.name for d in DECLS])
def test_manifest_variants_are_the_declared_ones(decl) -> None:
    """spec/<Module>.toml (what `kraft check --all-variants` runs) names the same variants, each
    with the invariant and model size the declaration gives."""
    manifest = tomllib.loads((SPEC_DIR / f"{decl.spec_module}.toml").read_text())
    in_manifest = {name: (v["violates"], v.get("size", "small")) for name, v in manifest.get("variants", {}).items()}
    declared = {v.name: (v.violates, v.size) for v in decl.variants if not v.not_caught_by_tlc}
    assert in_manifest == declared


@pytest.mark.parametrize("decl", DECLS, ids=[d.name for d in DECLS])
def test_handlers_are_named_after_their_actions(decl) -> None:
    """Every handled action is bound to a node method of its snake-case name whose docstring
    cites the spec action."""
    for a in decl.actions:
        if a.handled:
            handler = decl.handler(a)
            assert handler.__name__ == snake(a.spec)
            assert f"{a.spec}" in (handler.__doc__ or ""), f"{handler.__qualname__}'s docstring cites {a.spec}"


# Specs that are model-checked before their implementation exists: `kraft check` runs them; the
# zoo, conformance and the simulator, which need a declaration, do not know them yet.
SPEC_ONLY: set[str] = set()


def test_every_spec_with_a_manifest_has_a_declaration() -> None:
    modules = {p.stem for p in SPEC_DIR.glob("*.toml")}
    assert modules - SPEC_ONLY == {d.spec_module for d in DECLS}
    assert not SPEC_ONLY & {d.spec_module for d in DECLS}, "a declared spec is no longer spec-only"


def _kraft_text() -> str:
    return (SPEC_DIR / "KRaft.tla").read_text()


def test_checker_catches_a_renamed_action() -> None:
    text = re.sub(r"\bHandleFetchResponse\b", "HandleFetchAnswer", _kraft_text())
    problems = compare(KRAFT, text)
    assert "spec/KRaft.tla: action HandleFetchAnswer is in the spec but not in the kraft declaration" in problems
    assert "spec/KRaft.tla: action HandleFetchResponse is declared by kraft but not in the spec" in problems


def test_checker_catches_a_missing_variable() -> None:
    text = _kraft_text().replace("    awaitingLeader,   ", "    ", 1)
    assert compare(KRAFT, text) == [
        "spec/KRaft.tla: variable awaitingLeader is declared by kraft but not in the spec"]


def test_checker_catches_a_missing_variant_constant() -> None:
    text = _kraft_text().replace("    NoTruncateOnDivergence,  ", "    ", 1)
    assert compare(KRAFT, text) == [
        "spec/KRaft.tla: constant NoTruncateOnDivergence is declared by kraft but not in the spec"]


def test_checker_catches_an_undeclared_spec_action() -> None:
    text = _kraft_text().replace("    \\/ \\E m \\in messages : DropMessage(m)",
                                 "    \\/ \\E m \\in messages : DropMessage(m)\n    \\/ Stutter", 1)
    text = text.replace("Next ==", "Stutter == UNCHANGED vars\n\nNext ==", 1)
    assert compare(KRAFT, text) == ["spec/KRaft.tla: action Stutter is in the spec but not in the kraft declaration"]


def test_each_action_name_is_spelled_once_in_python() -> None:
    """The five-places problem: outside the declarations, no Python file of the protocol packages,
    the simulator or the conformance glue spells an action name as a string or identifier."""
    names = sorted({a.spec for d in DECLS for a in d.actions})
    files = subprocess.run(["git", "ls-files", "kraft", "traces", "model_check"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    offenders = []
    for f in files:
        if not f.endswith(".py") or f.endswith("/protocol.py"):
            continue
        code = strip_docs((ROOT / f).read_text())
        for n in names:
            if re.search(rf"\b{n}\b", code):
                offenders.append(f"{f}: {n}")
    assert offenders == []


def strip_docs(code: str) -> str:
    """Python source without comments and docstrings (prose may name actions; code may not)."""
    import io
    import tokenize

    out, prev = [], None
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.COMMENT:
            continue
        if tok.type == tokenize.STRING and prev in (tokenize.INDENT, tokenize.NEWLINE, tokenize.NL, None):
            prev = tok.type
            continue  # a docstring or a bare string statement
        out.append(tok.string)
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev = tok.type
    return " ".join(out)


def test_a_node_class_missing_a_handler_is_refused_when_defined() -> None:
    """Binding a node class to a declaration checks that every action of its actor has a method."""
    from kraft.core.declaration import Action, Protocol
    from kraft.core.node import Node

    decl = Protocol("toy", "Toy", (Action("Ping"), Action("Pong")), (), ())
    with pytest.raises(TypeError, match="lacks pong"):
        class Half(Node, declaration=decl):  # noqa: F841
            def ping(self, now: int) -> None:
                """Spec action Ping."""
