"""Kafka's classic client-side partition assignors, reproduced bit for bit.

``RangeAssignor``, ``RoundRobinAssignor``, ``StickyAssignor`` and
``CooperativeStickyAssignor`` each have ``assign(partitions_per_topic, subscriptions)``
returning ``{member_id: [TopicPartition, ...]}`` with every list in the order Kafka returns
it. See docs/assignors.md.
"""

from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import AbstractStickyAssignor, AssignorError, CooperativeStickyAssignor, StickyAssignor
from .types import Subscription, TopicPartition, tp

ASSIGNORS = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}

__all__ = [
    "ASSIGNORS",
    "AbstractStickyAssignor",
    "AssignorError",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartition",
    "tp",
]
