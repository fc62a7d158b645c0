"""The consumer-group declaration: ``spec/ConsumerGroup.tla`` in Python, once.

Every action of the spec's ``Next`` with the message it consumes where dispatch is by type, its
parameters and which kind of node takes it (``kraft.groups.coordinator.GroupCoordinator``, the
actor ``"coordinator"``, and ``kraft.groups.consumer.GroupConsumer``, the actor ``"consumer"``,
take each with the method of its snake-case name); every spec variable with its projection
(:mod:`kraft.groups.projection`); the three bug variants with the invariant each breaks (as in
``spec/ConsumerGroup.toml``); the invariants.  The coordinator and the consumer dispatch and name
their spec steps through it, the simulator plug-in (``kraft/groups/sim.py``) records them, the
conformance glue (``traces/protocols/groups.py``) builds its templates from it.  Action names are
spelled in Python here and nowhere else.

Arguments (the keys of a trace step's ``args``): ``m`` a message (the spec's record), ``x`` a
member id.  A consumer action's node is the consumer (the spec's ``c``); a coordinator action's
node is ``"coordinator"``; ``DropMessage`` has node ``None``.
"""

from __future__ import annotations

from kraft.core.declaration import Action, Protocol, Variable, Variant
from kraft.core.invariants import Invariant
from kraft.groups import invariants as inv
from kraft.groups import projection as proj
from kraft.groups.messages import (
    Heartbeat,
    HeartbeatResponse,
    JoinGroup,
    JoinGroupResponse,
    LeaveGroup,
    OffsetCommit,
    SyncGroup,
    SyncGroupResponse,
)

CONSUMER, COORDINATOR, NETWORK = "consumer", "coordinator", "network"

ACTIONS = (
    # --- consumer (the spec's c \in Consumers) ---
    Action("SendJoinGroup", actor=CONSUMER,
           doc="an Idle consumer (re)joins; eager revokes everything first (onJoinPrepare)"),
    Action("SendHeartbeat", actor=CONSUMER),
    Action("SendOffsetCommit", actor=CONSUMER,
           doc="commitSync of the owned partitions' positions (a client operation, or auto-commit "
               "before rejoining)"),
    Action("Restart", actor=CONSUMER, doc="a new process, same client and instance id"),
    Action("RequestTimeout", actor=CONSUMER,
           doc="a JoinGroup/SyncGroup unanswered for request.timeout.ms: reconnect and rejoin"),
    Action("HandleJoinGroupResponse", JoinGroupResponse, ("m",), CONSUMER,
           doc="the leader computes the assignment here"),
    Action("HandleSyncGroupResponse", SyncGroupResponse, ("m",), CONSUMER),
    Action("HandleHeartbeatResponse", HeartbeatResponse, ("m",), CONSUMER),
    Action("Crash", actor=CONSUMER),
    Action("Leave", actor=CONSUMER, doc="close(): revoke; a dynamic member sends LeaveGroup"),
    Action("ClientSessionTimeout", actor=CONSUMER,
           doc="the consumer's ownership lease (session.timeout.ms from its last acknowledged send) ran out"),
    # --- coordinator ---
    Action("HandleJoinGroup", JoinGroup, ("m",), COORDINATOR),
    Action("HandleSyncGroup", SyncGroup, ("m",), COORDINATOR,
           doc="a follower's SyncGroup in CompletingRebalance is parked (no step) until the leader's"),
    Action("HandleHeartbeat", Heartbeat, ("m",), COORDINATOR),
    Action("HandleLeaveGroup", LeaveGroup, ("m",), COORDINATOR),
    Action("HandleOffsetCommit", OffsetCommit, ("m",), COORDINATOR),
    Action("CompleteJoin", actor=COORDINATOR,
           doc="everyone rejoined, or the rebalance timeout dropped the rest: next generation"),
    Action("ExpireMember", args=("x",), actor=COORDINATOR,
           doc="a member's session timed out at the coordinator"),
    Action("ExpirePending", args=("x",), actor=COORDINATOR,
           doc="a MEMBER_ID_REQUIRED member id was never used (KIP-394)"),
    Action("DeleteGroup", actor=COORDINATOR,
           doc="an Empty group is removed (offsets expired); Dead is final"),
    # --- environment ---
    Action("DropMessage", args=("m",), actor=NETWORK, handled=False,
           doc="the network loses a message. No node takes it: the simulator's network drops copies "
               "itself; the coordinator and the consumer also report it for a response the client "
               "discards (stale correlation id, wrong phase: for the spec it never arrived) and for a "
               "parked SyncGroup nobody will answer (Kafka drops the callback; the spec leaves the "
               "request in the network)"),
)

VARIABLES = (
    *(Variable(name, fn, doc="coordinator: project(coordinator)")
      for name, fn in proj.COORDINATOR_VARS.items()),
    Variable("nextMemberId", proj.nextMemberId, doc="coordinator: project(coordinator)"),
    *(Variable(name, fn, doc="consumers: project({client id: consumer})")
      for name, fn in proj.CONSUMER_VARS.items()),
    Variable("protocol", proj.protocol, doc="project(coordinator): the configured rebalance protocol"),
    Variable("msgs", spec_only=True,
             doc="the network: the driver's (GroupWorld.pending, the simulator's in-flight messages)"),
    Variable("faults", spec_only=True, doc="model bound: the spec's fault budget (not tracked)"),
    Variable("fencingBreaches", spec_only=True,
             doc="ghost: accepted commits of a partition another live consumer owned (the driver "
                 "records them when it delivers an OffsetCommit: GroupWorld.fencing_breaches)"),
)

# each breaks the invariant TLC reports (spec/ConsumerGroup.toml [variants.*]); the same-named
# boolean fields of GroupConfig switch them on in the implementation
# why a client history cannot show two consumers owning one partition
_DOUBLE_READ = ("two owners of one partition both poll it, and Jepsen's Kafka rules allow that for "
                "subscribed consumers (jepsen.tests.kafka allowed-error-types: rebalances move partitions), "
                "so no anomaly of the audit describes double ownership; the group's own state shows it")

VARIANTS = (
    Variant("CooperativeAssignWithoutRevoke", "NoDoubleOwnership",
            "the cooperative leader hands a partition to its new owner in the same rebalance in which "
            "its old owner revokes it (no withholding: KIP-429's rule broken)", size="cooperative",
            unobservable={"audit": _DOUBLE_READ}),
    Variant("EagerNoRevokeBeforeJoin", "NoDoubleOwnership",
            "an eager consumer rejoins without revoking its partitions first "
            "(ConsumerCoordinator.onJoinPrepare skipped)", size="eager",
            unobservable={"audit": _DOUBLE_READ}),
    Variant("AcceptStaleGeneration", "CommitFencing",
            "the coordinator accepts a SyncGroup or OffsetCommit of an older generation (no "
            "ILLEGAL_GENERATION): a zombie's commit lands while the new owner holds the partition",
            size="eager",
            unobservable={"audit": "a stale commit moves the group's committed offset back, so the next owner "
                                   "reads some records again; consumption is at-least-once, and no Jepsen Kafka "
                                   "rule (poll-skip, nonmonotonic-poll, ...) flags a new owner re-reading"}),
)

INVARIANTS = (  # the order is the order violations are reported in
    Invariant("TypeOK", inv.TypeOK, "group states known; a down consumer owns nothing"),
    Invariant("NoDoubleOwnership", inv.NoDoubleOwnership, "no two live consumers own one partition"),
    Invariant("StableMeansAssigned", inv.StableMeansAssigned,
              "in Stable every partition has one member, or is withheld for a cooperative revoke"),
    Invariant("OwnedWithinAssignment", inv.OwnedWithinAssignment,
              "a consumer synced to the current generation owns only its assignment"),
    Invariant("CommitFencing", inv.CommitFencing, "no commit accepted of a partition another consumer owned"),
    Invariant("LeaderIsMember", inv.LeaderIsMember, "in CompletingRebalance/Stable the leader is a member"),
    # action properties: need the previous state (GroupWorld checks them with invariants.check_step)
    Invariant("GenerationMonotonic", None, "the generation never decreases"),
    Invariant("ValidTransitions", None, "group state changes follow Kafka's validPreviousStates"),
)

PROTOCOL = Protocol(
    name="groups",
    spec_module="ConsumerGroup",
    actions=ACTIONS,
    variables=VARIABLES,
    variants=VARIANTS,
    invariants=INVARIANTS,
    constants=("Consumers", "Static", "Partitions", "Modes", "Nil", "MaxGeneration", "MaxMemberId",
               "MaxFaults", "AnyAssignment"),
    history_model="consumer-group",  # a Kafka-workload history (subscribe, poll): the audit's Kafka rules
)
