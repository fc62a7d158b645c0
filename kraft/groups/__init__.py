"""kraft.groups: consumer groups (docs/groups.md, docs/assignors.md).

Coordinator lookup (``coordinator_lookup``, ``find_coordinator``) and Kafka's client assignors
(``assignors``), re-exported here; the classic group protocol: its declaration (``protocol``), the
coordinator and the consumer (``coordinator``, ``consumer``), messages, offsets, invariants and
projections, the world that steps them (``world``), the simulator plug-in (``sim``) and the story
commands (``story``)."""

from .assignors import (
    ASSIGNORS,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from .coordinator_lookup import coordinator_partition, transaction_coordinator_partition

__all__ = [
    "ASSIGNORS",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartition",
    "coordinator_partition",
    "transaction_coordinator_partition",
]
