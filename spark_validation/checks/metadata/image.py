"""The metadata image a replay of ``__cluster_metadata`` yields: brokers, topics, partitions, and
the configs the audit reads, changed record by record as Kafka's image classes change them.

Sources (apache/kafka at 1eb7644349cb, facts, not code):

* ``image/ClusterDelta.replay``: RegisterBrokerRecord replaces the registration
  (``BrokerRegistration.fromRecord``); FenceBroker/UnfenceBroker/BrokerRegistrationChange
  records change ``fenced`` / ``inControlledShutdown`` (``BrokerRegistration.cloneWith``) of the
  registration whose epoch they name (``getBrokerOrThrow``); UnregisterBrokerRecord removes it.
  BrokerRegistrationChangeRecord ``fenced``: -1 unfence, 0 no change, 1 fence
  (``BrokerRegistrationFencingChange``); ``inControlledShutdown``: 0 no change, 1 in shutdown.
* ``image/TopicsDelta.replay`` / ``TopicDelta.replay``: a TopicRecord creates the topic, a
  PartitionRecord (re)states a whole partition, a PartitionChangeRecord is merged into the
  partition (``metadata/PartitionRegistration.merge``): a null list or an absent field keeps the
  old value, ``leader`` -2 keeps the leader and the leader epoch, any other value sets the leader
  and bumps the leader epoch, the partition epoch always goes up by one, ``leaderRecoveryState``
  -1 keeps it (``LeaderRecoveryState.changeTo``). RemoveTopicRecord drops the topic.
* ``controller/ReplicationControlManager.getTopicEffectiveMinIsr``: min.insync.replicas is the
  topic's config, else the cluster default (a BROKER config with an empty resource name,
  ``ConfigurationControlManager.getTopicConfig``), else the static default, capped at the
  replication factor (the replica count of partition 0).

A record Kafka would refuse to replay (an unknown broker, topic or partition, a broker epoch that
does not match) raises :class:`Refused`; the image is then left as it was.
"""

from __future__ import annotations

from typing import Any

import attrs

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED = 0
RECOVERING = 1
LRS_NAMES = {RECOVERED: "RECOVERED", RECOVERING: "RECOVERING"}
CONFIG_TOPIC = 2  # org.apache.kafka.common.config.ConfigResource.Type
CONFIG_BROKER = 4
MIN_ISR_CONFIG = "min.insync.replicas"
UNCLEAN_CONFIG = "unclean.leader.election.enable"


class Refused(Exception):
    """Kafka's replay would throw on this record: ``invariant`` names the rule, ``why`` says how."""

    def __init__(self, invariant: str, why: str) -> None:
        super().__init__(why)
        self.invariant = invariant
        self.why = why


@attrs.frozen
class Broker:
    id: int
    epoch: int
    incarnation: str | None
    fenced: bool
    in_controlled_shutdown: bool

    @property
    def active(self) -> bool:
        """``ClusterControlManager.isActive``: unfenced and not in controlled shutdown."""
        return not self.fenced and not self.in_controlled_shutdown


@attrs.frozen
class Partition:
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int
    removing: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()

    def view(self) -> dict[str, Any]:
        """The registration in the spec's words (spec/PartitionReplication.tla ``Img``)."""
        return {"replicas": list(self.replicas), "isr": list(self.isr), "elr": list(self.elr),
                "lastKnownElr": list(self.last_known_elr), "leader": self.leader,
                "leaderEpoch": self.leader_epoch, "partitionEpoch": self.partition_epoch,
                "leaderRecoveryState": LRS_NAMES.get(self.leader_recovery_state, self.leader_recovery_state)}


@attrs.define
class Topic:
    id: str
    name: str
    partitions: dict[int, Partition] = attrs.Factory(dict)


def _ints(v: Any) -> tuple[int, ...]:
    return tuple(v or ())


def partition_from_record(f: dict[str, Any]) -> Partition:
    """``new PartitionRegistration(PartitionRecord)``."""
    return Partition(replicas=_ints(f.get("replicas")), isr=_ints(f.get("isr")),
                     elr=_ints(f.get("eligibleLeaderReplicas")), last_known_elr=_ints(f.get("lastKnownElr")),
                     leader=f.get("leader", NO_LEADER), leader_epoch=f.get("leaderEpoch", -1),
                     partition_epoch=f.get("partitionEpoch", -1),
                     leader_recovery_state=f.get("leaderRecoveryState", RECOVERED),
                     removing=_ints(f.get("removingReplicas")), adding=_ints(f.get("addingReplicas")))


def merge(p: Partition, f: dict[str, Any]) -> Partition:
    """``PartitionRegistration.merge(PartitionChangeRecord)``."""
    def keep(key: str, old: tuple[int, ...]) -> tuple[int, ...]:
        return old if f.get(key) is None else _ints(f[key])

    leader = f.get("leader", NO_LEADER_CHANGE)
    lrs = f.get("leaderRecoveryState", -1)
    return Partition(replicas=keep("replicas", p.replicas), isr=keep("isr", p.isr),
                     elr=keep("eligibleLeaderReplicas", p.elr),
                     last_known_elr=keep("lastKnownElr", p.last_known_elr),
                     leader=p.leader if leader == NO_LEADER_CHANGE else leader,
                     leader_epoch=p.leader_epoch if leader == NO_LEADER_CHANGE else p.leader_epoch + 1,
                     partition_epoch=p.partition_epoch + 1,
                     leader_recovery_state=p.leader_recovery_state if lrs == -1 else lrs,
                     removing=keep("removingReplicas", p.removing), adding=keep("addingReplicas", p.adding))


@attrs.define
class Image:
    """What the replay has built so far. ``epochs_seen`` keeps each broker id's highest epoch
    across unregistrations (a broker epoch never goes back)."""

    default_min_isr: int = 1
    unclean_allowed: bool = False
    brokers: dict[int, Broker] = attrs.Factory(dict)
    epochs_seen: dict[int, int] = attrs.Factory(dict)
    topics: dict[str, Topic] = attrs.Factory(dict)
    names: dict[str, str] = attrs.Factory(dict)
    topic_configs: dict[str, dict[str, str]] = attrs.Factory(dict)
    cluster_configs: dict[str, str] = attrs.Factory(dict)

    # ---------------------------------------------------------------- lookups
    def broker(self, broker_id: int, epoch: int, what: str) -> Broker:
        """``ClusterDelta.getBrokerOrThrow``."""
        b = self.brokers.get(broker_id)
        if b is None:
            raise Refused("KnownBroker", f"{what} of broker {broker_id}, which is not registered")
        if b.epoch != epoch:
            raise Refused("BrokerEpochMatches",
                          f"{what} of broker {broker_id} names epoch {epoch}; its registration has epoch {b.epoch}")
        return b

    def topic(self, topic_id: str, what: str) -> Topic:
        t = self.topics.get(topic_id)
        if t is None:
            raise Refused("KnownTopic", f"{what} names topic id {topic_id}, which does not exist")
        return t

    def partition(self, topic_id: str, partition_id: int, what: str) -> Partition:
        p = self.topic(topic_id, what).partitions.get(partition_id)
        if p is None:
            raise Refused("KnownTopic", f"{what} names partition {self.topics[topic_id].name}-{partition_id}, "
                                        "which does not exist")
        return p

    def min_isr(self, topic_id: str) -> int:
        """``getTopicEffectiveMinIsr``: the configured value capped at the replication factor."""
        t = self.topics[topic_id]
        text = (self.topic_configs.get(t.name, {}).get(MIN_ISR_CONFIG)
                or self.cluster_configs.get(MIN_ISR_CONFIG))
        try:
            configured = int(text) if text is not None else self.default_min_isr
        except ValueError:
            configured = self.default_min_isr
        first = t.partitions.get(0) or next(iter(t.partitions.values()), None)
        return min(configured, len(first.replicas)) if first is not None and first.replicas else configured

    def unclean_enabled(self, topic_id: str) -> bool:
        """``ConfigurationControlManager.uncleanLeaderElectionEnabledForTopic``: the topic's
        config, else the cluster default, else the static config (not in the log: false, Kafka's
        default, unless the audit is told otherwise)."""
        t = self.topics[topic_id]
        text = self.topic_configs.get(t.name, {}).get(UNCLEAN_CONFIG) or self.cluster_configs.get(UNCLEAN_CONFIG)
        return self.unclean_allowed if text is None else text.strip().lower() == "true"

    # ---------------------------------------------------------------- changes
    def set_config(self, f: dict[str, Any]) -> None:
        if f.get("resourceType") == CONFIG_TOPIC:
            store = self.topic_configs.setdefault(f.get("resourceName", ""), {})
        elif f.get("resourceType") == CONFIG_BROKER and not f.get("resourceName"):
            store = self.cluster_configs
        else:
            return
        if f.get("value") is None:
            store.pop(f.get("name", ""), None)
        else:
            store[f.get("name", "")] = f["value"]

    def register(self, f: dict[str, Any]) -> Broker:
        b = Broker(id=f["brokerId"], epoch=f["brokerEpoch"], incarnation=f.get("incarnationId"),
                   fenced=bool(f.get("fenced", True)), in_controlled_shutdown=bool(f.get("inControlledShutdown", False)))
        self.brokers[b.id] = b
        self.epochs_seen[b.id] = max(b.epoch, self.epochs_seen.get(b.id, b.epoch))
        return b

    def change_broker(self, broker_id: int, epoch: int, fenced: bool | None, shutdown: bool | None, what: str) -> None:
        """``BrokerRegistration.cloneWith``: None keeps the current value."""
        b = self.broker(broker_id, epoch, what)
        self.brokers[broker_id] = attrs.evolve(
            b, fenced=b.fenced if fenced is None else fenced,
            in_controlled_shutdown=b.in_controlled_shutdown if shutdown is None else shutdown)

    def add_topic(self, topic_id: str, name: str) -> None:
        self.topics[topic_id] = Topic(topic_id, name)
        self.names[name] = topic_id

    def remove_topic(self, topic_id: str) -> Topic:
        t = self.topic(topic_id, "RemoveTopicRecord")
        del self.topics[topic_id]
        if self.names.get(t.name) == topic_id:
            del self.names[t.name]
        return t
