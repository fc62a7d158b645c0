from __future__ import annotations

import pytest

from kraft.groups.coordinator_lookup import coordinator_partition
from kraft.groups.find_coordinator import OFFSETS_TOPIC, find_coordinator
from kraft.groups.messages import Errors


def test_leader_of_the_groups_offsets_partition() -> None:
    p = coordinator_partition("my-group")
    leaders = {i: 100 + i for i in range(50)}
    r = find_coordinator("my-group", leaders)
    assert r.error == Errors.NONE and r.partition == p and r.node_id == 100 + p


def test_no_leader_is_coordinator_not_available() -> None:
    r = find_coordinator("my-group", {})
    assert r.error == Errors.COORDINATOR_NOT_AVAILABLE and r.node_id is None


def test_metadata_view_object() -> None:
    class View:
        def leader_of(self, topic: str, partition: int) -> int | None:
            assert topic == OFFSETS_TOPIC
            return 7

    assert find_coordinator("g", View(), num_partitions=3).node_id == 7


def test_bad_metadata() -> None:
    with pytest.raises(TypeError, match="leader map"):
        find_coordinator("g", 42)  # type: ignore[arg-type]
