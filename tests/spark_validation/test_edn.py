"""The safe EDN reader: every literal kind, nesting, comments, discard, and located errors."""

from __future__ import annotations

from decimal import Decimal

import pytest

from spark_validation.ingest.edn import (
    Char,
    EdnError,
    EdnList,
    FrozenMap,
    Keyword,
    Symbol,
    Tagged,
    loads,
)
from tests.spark_validation.readers import loads_all


@pytest.mark.parametrize(
    "text,expected",
    [
        ("nil", None),
        ("true", True),
        ("false", False),
        ("0", 0),
        ("-17", -17),
        ("+5", 5),
        ("123456789012345678901234567890N", 123456789012345678901234567890),
        ("42N", 42),
        ("0x1F", 31),
        ("1.5", 1.5),
        ("-2.5e3", -2500.0),
        ("1E2", 100.0),
        ("2.50M", Decimal("2.50")),
        ('"plain"', "plain"),
        ('"tab\\tnl\\nq\\"bs\\\\u\\u00e9"', 'tab\tnl\nq"bs\\u\u00e9'),
        ('"multi\nline"', "multi\nline"),
        ("\\a", Char("a")),
        ("\\newline", Char("\n")),
        ("\\space", Char(" ")),
        ("\\tab", Char("\t")),
        ("\\u0041", Char("A")),
        ("\\(", Char("(")),
        (":invoke", Keyword("invoke")),
        (":jepsen.history/op", Keyword("op", "jepsen.history")),
        ("foo", Symbol("foo")),
        ("my.ns/bar", Symbol("bar", "my.ns")),
        ("-", Symbol("-")),
        ("/", Symbol("/")),
        ("[1 2 [3]]", (1, 2, (3,))),
        ("(1 2)", EdnList((1, 2))),
        ("#{1 2}", frozenset({1, 2})),
        ("{:a 1, :b [2]}", {Keyword("a"): 1, Keyword("b"): (2,)}),
        ("[]", ()),
        ("{}", {}),
        ("#{}", frozenset()),
        ('#inst "2024-01-01T00:00:00.000-00:00"', Tagged("inst", "2024-01-01T00:00:00.000-00:00")),
        ('#uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"', Tagged("uuid", "f81d4fae-7dec-11d0-a765-00a0c91e6bf6")),
        ("#jepsen/thing {:x 1}", Tagged("jepsen/thing", {Keyword("x"): 1})),
        ("##Inf", float("inf")),
        ("##-Inf", float("-inf")),
    ],
)
def test_literals(text: str, expected: object) -> None:
    value = loads(text)
    assert value == expected
    assert type(value) is type(expected)


def test_characters_are_chars() -> None:
    assert isinstance(loads("\\x"), Char)


def test_nested_structures_and_hashable_collections() -> None:
    v = loads('{[1 2] #{:a {:b 1}}, {:k 1} (nil true "s")}')
    assert v[(1, 2)] == frozenset({Keyword("a"), FrozenMap({Keyword("b"): 1})})
    assert v[FrozenMap({Keyword("k"): 1})] == EdnList((None, True, "s"))
    with pytest.raises(TypeError):
        FrozenMap({1: 2})[3] = 4  # type: ignore[index]


def test_comments_discard_and_commas() -> None:
    text = """
    ; a comment line
    [1, 2 ; trailing comment
     #_ 3 #_ #_ 4 5 6   ; discards nest: #_ #_ 4 5 drops both
     #_{:dropped [x y]} 7]
    """
    assert loads(text) == (1, 2, 6, 7)


def test_loads_all_reads_top_level_values() -> None:
    assert list(loads_all("1 :a\n[2] ; c\n{:x nil}")) == [1, Keyword("a"), (2,), {Keyword("x"): None}]


def test_keyword_str() -> None:
    assert str(Keyword("op", "ns")) == ":ns/op"
    assert Keyword("op", "ns").qualified == "ns/op"


@pytest.mark.parametrize(
    "text,line,column,reason",
    [
        ("[1 2", 1, 1, "'[' opened at line 1, column 1 is not closed"),
        ("{:a 1\n :b [1\n 2}", 3, 3, "unexpected '}', expected ']'"),
        ("{:a 1\n :b}", 1, 1, "odd number of forms"),
        ('[1\n  "abc', 2, 3, "unterminated string"),
        ('"bad \\q escape"', 1, 6, "bad string escape"),
        ("[1 2}", 1, 5, "unexpected '}'"),
        (")", 1, 1, "unexpected ')'"),
        ("1.2.3", 1, 1, "bad number"),
        ("{:a 1 :a 2}", 1, 1, "duplicate map key"),
        ("#{1 1}", 1, 1, "duplicate element in set"),
        ("#=(+ 1 2)", 1, 1, "bad dispatch"),
        ("\n\n  #foo", 3, 7, "end of input"),
        ("[\\bogus]", 1, 2, "bad character literal"),
        (": x", 1, 1, "bad keyword"),
        ("##Foo", 1, 1, "unknown symbolic value"),
        ("1 2", 1, 3, "unexpected data after the value"),
        ("", 1, 1, "end of input"),
    ],
)
def test_errors_carry_line_and_column(text: str, line: int, column: int, reason: str) -> None:
    with pytest.raises(EdnError) as exc:
        loads(text, source="h.edn")
    assert (exc.value.line, exc.value.column) == (line, column), str(exc.value)
    assert reason in exc.value.reason
    assert str(exc.value).startswith(f"h.edn:{line}:{column}: ")


def test_no_evaluation_of_reader_eval_or_tags() -> None:
    # a tag is data, never a function call
    v = loads('#clojure.java.shell/sh "rm -rf /"')
    assert v == Tagged("clojure.java.shell/sh", "rm -rf /")
