"""Kafka's server-side assignors (KIP-848): the group coordinator's ``uniform`` and ``range``.

With the consumer protocol the coordinator, not a group leader, computes each member's target
assignment with a ``ConsumerGroupPartitionAssignor``. ``ASSIGNORS[name]().assign(group, topics)``
takes a :class:`GroupSpec` and a :class:`TopicDescriber` and returns
``{member id: {topic id: set of partitions}}`` as Kafka does for the same input. See
docs/assignors.md and :mod:`.groupfile` for the ``kraft assign --protocol consumer`` file.
"""

from .range import ServerRangeAssignor
from .spec import GroupAssignment, GroupSpec, MemberSpec, PartitionAssignorError, SubscriptionType, TopicDescriber, \
    Uuid
from .uniform import UniformAssignor

# the names of ``group.consumer.assignors``; the first is the coordinator's default
ASSIGNORS = {"uniform": UniformAssignor, "range": ServerRangeAssignor}

__all__ = ["ASSIGNORS", "GroupAssignment", "GroupSpec", "MemberSpec", "PartitionAssignorError", "ServerRangeAssignor",
           "SubscriptionType", "TopicDescriber", "UniformAssignor", "Uuid"]
