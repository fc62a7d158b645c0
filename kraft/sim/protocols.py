"""Protocol plug-ins known to ``kraft simulate``: name -> factory(voters, variant) -> Protocol.

Another protocol registers itself by adding an entry here (see docs/sim.md)."""

from __future__ import annotations

from typing import Callable

from kraft.sim.core import Protocol


def _kraft(voters: int, variant: str | None) -> Protocol:
    from kraft.quorum.config import QuorumConfig
    from kraft.sim.kraft_protocol import KRaftProtocol

    return KRaftProtocol(voters, QuorumConfig().with_variant(variant))


def _kraft_variants() -> list[str]:
    from kraft.quorum.protocol import PROTOCOL

    return list(PROTOCOL.variant_names) + ["PreVote"]


def _groups(consumers: int, variant: str | None) -> Protocol:
    from kraft.groups.sim_plugin import make

    return make(consumers, variant)


def _groups_variants() -> list[str]:
    from kraft.groups.sim_plugin import variants

    return variants()


def _replication(brokers: int, variant: str | None) -> Protocol:
    from kraft.replication.config import ReplicationConfig
    from kraft.sim.replication_protocol import ReplicationProtocol

    return ReplicationProtocol(brokers, ReplicationConfig().with_variant(variant))


def _replication_variants() -> list[str]:
    from kraft.replication.protocol import PROTOCOL

    return list(PROTOCOL.variant_names)


PROTOCOLS: dict[str, Callable[[int, str | None], Protocol]] = {"kraft": _kraft, "groups": _groups,
                                                               "replication": _replication}
VARIANTS_OF: dict[str, Callable[[], list[str]]] = {"kraft": _kraft_variants, "groups": _groups_variants,
                                                   "replication": _replication_variants}
HISTORY_MODEL: dict[str, str] = {"kraft": "append-log", "groups": "consumer-group", "replication": "append-log"}
