"""Every protocol of this build: its declaration and its simulator plug-in, by name.

The commands that serve every protocol (``kraft simulate``, ``kraft check --all-variants``, the zoo,
the review) find them here; a new protocol adds one entry."""

from __future__ import annotations

from typing import Callable, Iterable

import attrs

from kraft.core.declaration import Protocol
from kraft.core.plugin import SimPlugin
from kraft.groups import sim as groups_sim
from kraft.groups.consumer_protocol import sim as consumer_protocol_sim
from kraft.quorum import sim as quorum_sim
from kraft.replication import sim as replication_sim


@attrs.frozen
class Registered:
    """One protocol: its declaration; ``plugin(size, variant)`` builds its simulator plug-in (size:
    voters, brokers or consumers); ``variants``: what ``kraft simulate --variant`` accepts;
    ``observers``: the plug-in also takes ``observers=K`` (replicas outside the voter set)."""

    declaration: Protocol
    plugin: Callable[..., SimPlugin]
    variants: tuple[str, ...]
    observers: bool = False


PROTOCOLS: dict[str, Registered] = {
    r.declaration.name: r for r in (
        Registered(quorum_sim.PROTOCOL, quorum_sim.make, quorum_sim.VARIANTS, observers=True),
        Registered(groups_sim.PROTOCOL, groups_sim.make, groups_sim.VARIANTS),
        Registered(replication_sim.PROTOCOL, replication_sim.make, replication_sim.VARIANTS),
        Registered(consumer_protocol_sim.PROTOCOL, consumer_protocol_sim.make, consumer_protocol_sim.VARIANTS),
    )
}


def declarations() -> list[Protocol]:
    """Every protocol's declaration."""
    return [r.declaration for r in PROTOCOLS.values()]


def by_name(name: str, among: Iterable[Protocol] | None = None) -> Protocol:
    """A declaration by its protocol name or its spec module's name."""
    for p in among if among is not None else declarations():
        if p.name == name or p.spec_module == name:
            return p
    raise KeyError(name)
