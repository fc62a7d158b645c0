"""Consumer groups: coordinator lookup, Kafka's client assignors, and the group protocol state machines."""

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
