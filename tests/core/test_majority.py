"""Quorum arithmetic (kraft.core.majority) against its definitions, for every small cluster."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraft.core.majority import has_majority, majority, majority_value


@given(st.integers(min_value=0, max_value=50))
def test_majority_is_the_smallest_strict_majority(n: int) -> None:
    m = majority(n)
    assert 2 * m > n and 2 * (m - 1) <= n


@given(st.lists(st.integers(min_value=0, max_value=100), min_size=1, max_size=9))
def test_majority_value_is_the_largest_value_a_majority_reached(values: list[int]) -> None:
    v = majority_value(values)
    n = len(values)
    assert sum(1 for x in values if x >= v) >= majority(n)
    # nothing larger is reached by a majority
    assert all(sum(1 for x in values if x >= w) < majority(n) for w in set(values) if w > v)


def test_has_majority_every_subset_of_five() -> None:
    voters = [1, 2, 3, 4, 5]
    for k in range(6):
        for granted in itertools.combinations(voters, k):
            assert has_majority(set(granted) | {9}, voters) == (k >= 3)  # 9 is no voter: never counts


def test_majority_value_counts_missing_voters_as_zero() -> None:
    assert majority_value([5, 7], voters=5) == 0
    assert majority_value([5, 7, 6], voters=5) == 5
    with pytest.raises(ValueError):
        majority_value([], voters=0)
