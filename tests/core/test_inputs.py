"""kraft.inputs.text_nesting reads the same nesting depth from a JSON line's text as nesting() from
its decoded value."""

from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from kraft.inputs import MAX_DEPTH, nesting, text_nesting

# strings full of the characters the text reader must not count: brackets, quotes, backslashes
_tricky = st.text(alphabet='[]{}"\\,:ab\u00e9', max_size=8)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _tricky,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_tricky, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_json, st.booleans())
def test_text_nesting_equals_nesting_of_the_decoded_value(value, ascii_only) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert text_nesting(text) == nesting(json.loads(text))


def test_text_nesting_stops_just_past_the_limit() -> None:
    deep = "[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50)
    assert text_nesting(deep) == MAX_DEPTH + 1
    assert text_nesting("[" * MAX_DEPTH + "]" * MAX_DEPTH) == MAX_DEPTH
    assert text_nesting('{"a": "[[[[", "b": [{"c": "\\\\\\"]]"}]}') == 3
