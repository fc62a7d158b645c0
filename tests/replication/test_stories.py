"""Each variant's story (tests/replication/stories.py): the correct protocol keeps every invariant
along it, the variant breaks the invariant its declaration names."""

from __future__ import annotations

import pytest

from kraft.core.invariants import InvariantViolation
from kraft.replication.config import ReplicationConfig
from kraft.replication.protocol import PROTOCOL
from tests.replication.stories import STORIES


def test_every_variant_has_a_story() -> None:
    assert sorted(STORIES) == sorted(PROTOCOL.variant_names)


@pytest.mark.parametrize("variant", PROTOCOL.variant_names)
def test_story_is_clean_without_the_bug(variant: str) -> None:
    c = STORIES[variant](ReplicationConfig())
    c.check()


@pytest.mark.parametrize("variant", PROTOCOL.variant_names)
def test_story_breaks_the_declared_invariant(variant: str) -> None:
    with pytest.raises(InvariantViolation) as info:
        STORIES[variant](ReplicationConfig().with_variant(variant))
    assert info.value.invariant == PROTOCOL.variant(variant).violates, str(info.value)
