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

# the group protocol's state machines (sans-I/O) and their projections
from .consumer import GroupConsumer  # noqa: E402
from .coordinator import GroupConfig, GroupCoordinator  # noqa: E402
from .find_coordinator import find_coordinator  # noqa: E402
from .harness import GroupWorld  # noqa: E402
from .messages import Errors, GroupState, RebalanceProtocol  # noqa: E402
from .assignment import leader_assignment  # noqa: E402
from .projection import project  # noqa: E402

__all__ += ["Errors", "GroupConfig", "GroupConsumer", "GroupCoordinator", "GroupState", "GroupWorld",
            "RebalanceProtocol", "find_coordinator", "leader_assignment", "project"]
