"""Each variant's story (tests/replication/stories.py): the correct protocol keeps every invariant
along it, the variant breaks the invariant its declaration names."""

from __future__ import annotations

import pytest

from kraft.core.invariants import InvariantViolation
from kraft.replication.config import ReplicationConfig
from kraft.replication.protocol import PROTOCOL
from tests.replication.stories import STORIES


# where the story's first broken invariant differs from TLC's counterexample (a different schedule)
STORY_VIOLATES = {"TruncateToHighWatermark": "StrongIsr", "HwAdvanceUnderMinIsr": "ReplicationQuorumSuperset",
                  "LastReplicaStanding": "ReplicationQuorumSuperset", "IsrJoinBeforeEpochStart": "ReplicationQuorumSuperset"}


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
    # the step where the bug acts breaks the invariant TLC reports for the variant (possibly with
    # others, which the implementation checks in a different order)
    reported = {v.invariant for v in info.value.violations}
    expected = STORY_VIOLATES.get(variant, PROTOCOL.variant(variant).violates)
    assert expected in reported, str(info.value)
