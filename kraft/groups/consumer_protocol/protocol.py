"""The consumer-protocol declaration: ``spec/ConsumerGroupProtocol.tla`` in Python, once.

Every action of the spec's ``Next`` with the message it consumes, its parameters and which kind
of node takes it: the coordinator (:class:`.coordinator.GroupCoordinator`, actor
``"coordinator"``) or a consumer (:class:`.consumer.Consumer`, actor ``"consumer"``), each with
the method of its snake-case name; every spec variable; the five bug variants with the invariant
each breaks (as in ``spec/ConsumerGroupProtocol.toml``); the invariants.

Arguments (the keys of a trace step's ``args``): ``m`` a message (the spec's record), ``x`` a
member id.  A consumer action's node is the consumer (the spec's ``c``); a coordinator action's
node is ``"coordinator"``; ``DropMessage`` has node ``None``.
"""

from __future__ import annotations

from kraft.core.declaration import Action, Protocol, SimRun, Variable, Variant
from kraft.core.invariants import Invariant
from kraft.groups.consumer_protocol import invariants as inv
from kraft.groups.consumer_protocol.messages import Heartbeat, HeartbeatResponse, OffsetCommit

CONSUMER, COORDINATOR, NETWORK = "consumer", "coordinator", "network"

ACTIONS = (
    # --- consumer (the spec's c \in Clients) ---
    Action("Join", actor=CONSUMER, doc="subscribe(): UNSUBSCRIBED -> JOINING with member epoch 0"),
    Action("SendHeartbeat", actor=CONSUMER,
           doc="one ConsumerGroupHeartbeat in flight; ACKNOWLEDGING -> STABLE (or RECONCILING) once sent"),
    Action("HandleHeartbeatResponse", HeartbeatResponse, ("m",), CONSUMER,
           doc="onHeartbeatSuccess (epoch, new assignment: RECONCILING) or onHeartbeatFailure (FENCED)"),
    Action("RejoinAfterFence", actor=CONSUMER, doc="onPartitionsLost done: rejoin with epoch 0"),
    Action("ReconcileCommit", actor=CONSUMER,
           doc="a reconciliation starts: the auto-commit of the partitions to revoke goes out first"),
    Action("ReconcileRevoke", actor=CONSUMER, doc="onPartitionsRevoked (or the stale reconciliation aborts)"),
    Action("ReconcileAssign", actor=CONSUMER, doc="onPartitionsAssigned, then ACKNOWLEDGING"),
    Action("RequestTimeout", actor=CONSUMER,
           doc="the heartbeat or its response was lost: reconnect; the next heartbeat carries every field"),
    Action("RequestTimeoutEarly", actor=CONSUMER,
           doc="the heartbeat times out while still in the network (it may reach the coordinator later)"),
    Action("ClientSessionTimeout", actor=CONSUMER,
           doc="the consumer's lease ran out: it gives up its partitions and rejoins on a new connection"),
    Action("Leave", actor=CONSUMER, doc="unsubscribe()/close(): PREPARE_LEAVING commits first"),
    Action("LeaveRevoke", actor=CONSUMER, doc="PREPARE_LEAVING revokes everything: LEAVING"),
    Action("SendLeaveHeartbeat", actor=CONSUMER, doc="the heartbeat with epoch -1 (-2 static): UNSUBSCRIBED"),
    Action("ChangeSubscription", actor=CONSUMER,
           doc="subscribe() with another topic set while in the group: no rejoin; the next heartbeat "
               "carries it"),
    Action("NewProcess", actor=CONSUMER,
           doc="a static consumer that left or failed is closed and a new process of it starts: the next "
               "incarnation's member id, a new connection, UNSUBSCRIBED"),
    # --- coordinator ---
    Action("HandleHeartbeat", Heartbeat, ("m",), COORDINATOR,
           doc="GroupMetadataManager.consumerGroupHeartbeat"),
    Action("HandleOffsetCommit", OffsetCommit, ("m",), COORDINATOR,
           doc="accepted from a known member at its member epoch (STALE_MEMBER_EPOCH otherwise)"),
    Action("SessionTimeout", args=("x",), actor=COORDINATOR, doc="no heartbeat for the session timeout"),
    Action("RebalanceTimeout", args=("x",), actor=COORDINATOR,
           doc="a member in UNREVOKED_PARTITIONS for the rebalance timeout"),
    # --- environment ---
    Action("DropMessage", args=("m",), actor=NETWORK, handled=False,
           doc="the network loses a message; also a response the consumer never reads because its "
               "request timed out while the response was on the way"),
)

VARIABLES = (
    *(Variable(name, doc="coordinator: projection.project") for name in
      ("groupEpoch", "assignmentEpoch", "targetAssignment", "member", "partitionEpoch", "memberIncarnation")),
    *(Variable(name, doc="consumers: projection.project") for name in
      ("cstate", "cepoch", "owned", "ctarget", "recon", "sendOwned", "inflight", "conn", "incarnation",
       "csub", "subSent")),
    Variable("subChanges", spec_only=True, doc="model bound: the spec's budget of subscription changes"),
    Variable("msgs", spec_only=True, doc="the network: the driver's in-flight messages"),
    Variable("faults", spec_only=True, doc="model bound: the spec's fault budget (not tracked)"),
    Variable("badCommits", spec_only=True,
             doc="ghost: accepted commits of partitions the committer did not hold or another consumer "
                 "owned (the world records them when it delivers an OffsetCommit)"),
)

_DOUBLE_READ = ("two owners of one partition both poll it, and Jepsen's Kafka rules allow that for "
                "subscribed consumers (jepsen.tests.kafka allowed-error-types: rebalances move partitions), "
                "so no anomaly of the audit describes double ownership; the group's own state shows it")
_STALE_COMMIT = ("a stale commit moves the group's committed offset back, so the next owner reads some records "
                 "again; consumption is at-least-once, and no Jepsen Kafka rule flags a new owner re-reading")
_LIVENESS = ("a liveness bug: the group never converges, which a finite client history cannot show to be "
             "permanent")

VARIANTS = (
    Variant("PartitionEpochLostOnReassign", "ValidPartitionEpochs",
            "KAFKA-16147: a partition pending revocation put back into the same member's target loses its "
            "partition epoch and can go to a second member", size="nofault",
            unobservable={"audit": _DOUBLE_READ}),
    Variant("StaleReconcileAfterRejoin", "CommitFencing",
            "KAFKA-16375: a reconciliation in flight when the consumer is fenced and rejoins installs the old "
            "assignment", size="rejoin", unobservable={"audit": _STALE_COMMIT},
            sim=(SimRun(0, steps=2000, faults="all,poll-timeout:500", after_violation=200,
                        note="a consumer leaves and rejoins in the middle of a reconciliation (poll-timeout); "
                             "the stale listener stages install the old assignment"),)),
    Variant("RevocationAckIgnoredOnNewTarget", "EventuallyConverges",
            "KAFKA-16249: a new target recomputes a revoking member from what it held, its acknowledgement is "
            "lost and the rebalance never completes", size="liveconverge",
            unobservable={"audit": _LIVENESS},
            sim=(SimRun(5, steps=2000, note="a member revoking a partition gets a new target: the coordinator "
                                            "recomputes it from what it held (conformance rejects that step)"),)),
    Variant("CommitWithoutEpochCheck", "CommitFencing",
            "an offset commit from a member whose epoch is stale is accepted: a zombie moves the group's position",
            size="nofault", unobservable={"audit": _STALE_COMMIT},
            sim=(SimRun(6, steps=2000, note="a revocation's auto-commit arrives after the member moved on and is "
                                            "accepted at a stale epoch"),)),
    Variant("RejoinEpochZeroRejected", "FencedMemberRejoins",
            "KAFKA-19233: a known member rejoining with epoch 0 is fenced again and never gets back in",
            size="liverejoin",
            unobservable={"audit": _LIVENESS}),
)

INVARIANTS = (  # the order violations are reported in
    Invariant("TypeOK", inv.TypeOK, "states known; an unsubscribed consumer owns nothing"),
    Invariant("NoDoubleOwnership", inv.NoDoubleOwnership, "no two consumers own one partition"),
    Invariant("CommitFencing", inv.CommitFencing,
              "no commit accepted from a member not holding the partition at its epoch"),
    Invariant("ValidPartitionEpochs", inv.ValidPartitionEpochs,
              "a partition is held by one member at most, at that member's epoch"),
    Invariant("ValidTargetAssignment", inv.ValidTargetAssignment, "the target assignment is a valid one"),
    Invariant("MemberEpochMonotonic", None, "member epochs never go back (an action property)"),
)

PROTOCOL = Protocol(
    name="consumer-protocol",
    spec_module="ConsumerGroupProtocol",
    actions=ACTIONS,
    variables=VARIABLES,
    variants=VARIANTS,
    invariants=INVARIANTS,
    # AcceptAnyOlderEpoch is a bug switch of the spec and the config that no check catches reliably
    # enough for the zoo (docs/consumer-protocol.md, "What the checks see"): not a declared variant
    constants=("Clients", "StaticClients", "NumTopics", "PartitionsPerTopic", "Nil", "MaxGroupEpoch", "MaxFaults",
               "FaultKinds", "MaxSubscriptionChanges",
               "AnyAssignment", "SendNoOpHeartbeats", "AcceptAnyOlderEpoch"),
    history_model="consumer-group",
)
