"""The PartitionReplication declaration: ``spec/PartitionReplication.tla`` in Python, once.

Every spec action with the message it consumes, its parameters after the acting node and its actor
(``kraft.controller.controller.Controller`` is the "controller", ``kraft.replication.broker.Broker``
the "broker": each takes its actions with the methods of their snake-case names); every spec
variable with its projection (``kraft.replication.projection``); the bug variants with the
invariant TLC reports and the model size (spec/PartitionReplication.toml); the invariants
(``kraft.replication.invariants``).  It names no node class.
"""

from __future__ import annotations

from kraft.core.declaration import Action, Protocol, SimRun, Variable, Variant
from kraft.core.invariants import Invariant
from kraft.replication import invariants as inv
from kraft.replication import projection as proj
from kraft.replication.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    FetchRequest,
    FetchResponse,
)

ACTIONS = (
    Action("FenceBroker", args=("b",), actor="controller",
           doc="session timeout: PartitionChange without b (election), FenceBroker record"),
    Action("UnfenceBroker", args=("b",), actor="controller",
           doc="heartbeat of a registered broker that replayed its registration; election if leaderless"),
    Action("ControlledShutdown", args=("b",), actor="controller",
           doc="heartbeat with wantShutDown: b out of the ISR, leadership moved"),
    Action("HandleAlterPartitionRequest", AlterPartitionRequest, ("m",), actor="controller",
           doc="validate in Kafka's order, PartitionChangeBuilder, answer"),
    Action("CleanShutdown", actor="broker", doc="flush, clean-shutdown marker, stop; the controller fences b"),
    Action("UncleanShutdown", args=("k",), actor="broker", doc="crash: the log keeps its flushed prefix of k entries"),
    Action("RestartBroker", actor="broker",
           doc="recover, register fenced (new epoch); unclean: out of ISR and ELR (KIP-966)"),
    Action("RestartBrokerWithDiskLoss", actor="broker", doc="as RestartBroker with an empty disk"),
    Action("RegisterStopped", args=("b",), actor="controller", handled=False,
           doc="a registration commits while its broker is stopped (NetworkFaults only; no node takes it: "
               "the stacked world records it, kraft/replication/stacked.py BrokerNode.start)"),
    Action("ReplayMetadata", actor="broker", doc="makeLeader / makeFollower"),
    Action("SendFetchRequest", actor="broker"),
    Action("HandleFetchRequest", FetchRequest, ("m",), actor="broker"),
    Action("HandleFetchResponse", FetchResponse, ("m",), actor="broker"),
    Action("ShrinkIsr", args=("f",), actor="broker", doc="replica.lag.time.max.ms"),
    Action("HandleAlterPartitionResponse", AlterPartitionResponse, ("m",), actor="broker"),
    Action("Produce", args=("acks",), actor="broker", doc="client produce, acks -1/0/1"),
    Action("CompleteProduce", args=("v",), actor="broker", doc="an acks=all produce below the HW is answered"),
    Action("DropMessage", args=("m",), actor="network", handled=False,
           doc="the network loses a message (NetworkFaults: TRUE for trace conformance only)"),
)

VARIABLES = (
    *(Variable(name, fn) for name, fn in proj.CONTROLLER.items()),
    *(Variable(name, fn) for name, fn in proj.PER_BROKER.items()),
    Variable("messages", proj.messages, doc="the network: spec messages in flight"),
    *(Variable(name, fn) for name, fn in proj.GHOST.items()),
    Variable("metadataBatchEnds", spec_only=True, doc="ghost: the offsets where committed metadata batches end"),
    *(Variable(name, spec_only=True, doc="model bound counter")
      for name in ("restarts", "controlledShutdowns", "uncleanShutdowns", "diskLosses", "shrinks", "fences")),
)

# Fault mixes of the pinned simulator runs (``Variant.sim``; docs/replication.md, "Seeing a
# data-loss variant from the clients").  ``all``: every random fault.  The zombie-leader mix keeps
# the network faults and controlled shutdowns but no power loss (a crash is an unclean shutdown,
# and KIP-966 elects no replica that shut down uncleanly, so crashes of every ISR member leave the
# partition offline and the final reads empty), and isolates the partition leader every ~1 s:
# it is fenced, a new leader takes over, and the old one comes back as a follower with whatever
# it appended meanwhile (the divergence KIP-101, KIP-279 and KIP-320 are about).  The min-ISR mix
# also cuts the leader off from its followers every ~2 s, so the ISR shrinks to the leader alone.
# The two race mixes aim reactive nemeses at the windows KAFKA-7128 and KIP-903 lost data in,
# which no random schedule opened in over 700 runs (docs/replication.md, "Races"): the ISR-join
# race cuts a follower off its leader, isolates the leader the moment its ISR shrink commits (its
# HW has just jumped, acknowledging records no follower knows are committed) and, when the next
# leader takes a replica into the ISR, cuts the two apart and isolates that leader as the ISR
# commits; the stale-fetch mix holds a follower's fetch on the wire while it loses its disk (the
# held fetch can rejoin it only while the HW has not passed it: with the other follower cut off,
# so the ISR is the leader alone and its HW waits).
ALL = "all"
ZOMBIE_LEADER = "drop,dup,delay,reorder,partition,resign,isolate-leader:1000"
MIN_ISR = "drop,dup,delay,reorder,partition,resign,isolate-followers:2000,isolate-leader:3000"
ISR_JOIN_RACE = "delay,isolate-follower:1000,isolate-on-isr-shrink:1500,isr-join-race:1500"
STALE_FETCH = "delay,isolate-follower:800,stale-fetch:800,isr-join-race:800"

VARIANTS = (
    Variant("TruncateToHighWatermark", "ReplicationQuorumSuperset",
            "KAFKA-1211, before KIP-101: a broker that becomes follower in a new epoch truncates its log to "
            "its high watermark; a committed record above a follower's stale HW is lost when that follower "
            "is elected next", size="small",
            sim=(SimRun(27, 3000, ALL, 1000, ("inconsistent-offsets", "lost-write", "unseen"),
                        "a new follower cuts its log to its HW; elected next, it lacks acknowledged records"),)),
    Variant("EpochLookupKip101", "StrongIsr",
            "KAFKA-6361, before KIP-279: divergence judged by end offset only (the leader ignores a "
            "mismatching epoch; the follower truncates to the leader's end offset), so logs that differ "
            "in an earlier epoch stay different", size="deep",
            sim=(SimRun(5, 4000, ZOMBIE_LEADER, 1000, ("inconsistent-offsets",),
                        "a deposed leader's acks=1 tail survives the end-offset-only divergence check, so one "
                        "offset is read with two values from two leaders"),)),
    Variant("Kip320FirstTry", "StrongIsr",
            "the leader records a diverged follower's fetch offset (truncation deferred to the fetch), "
            "so the HW and the ISR count records the follower does not hold", size="deep",
            sim=(SimRun(34, 4000, ZOMBIE_LEADER, 1000, ("inconsistent-offsets", "nonmonotonic-poll"),
                        "the HW counts a diverged follower's fetch offset; it is elected with other records "
                        "at offsets consumers had read"),)),
    Variant("IsrJoinBeforeEpochStart", "ReplicationQuorumSuperset",
            "KAFKA-7128: a follower joins the ISR once past the HW without reaching the leader-epoch "
            "start offset", size="epochstart",
            sim=(SimRun(3, 3000, ISR_JOIN_RACE, 1000, ("inconsistent-offsets", "nonmonotonic-poll"),
                        "the leader is isolated as its ISR shrink commits and acknowledges records its "
                        "successor holds but does not know are committed; the successor takes back a follower "
                        "that is past its stale HW but short of those records, and is isolated as that ISR "
                        "commits: the follower is elected without them"),
                 SimRun(23, 3000, ISR_JOIN_RACE, 1000, ("inconsistent-offsets",)),
                 SimRun(24, 3000, ISR_JOIN_RACE, 1000, ("inconsistent-offsets", "nonmonotonic-poll")))),
    Variant("HwAdvanceUnderMinIsr", "MinIsrRecoveryQuorum",
            "before KAFKA-15583: the HW advances while the committed ISR is below min.insync.replicas", size="minisr",
            sim=(SimRun(63, 1000, MIN_ISR, 500, ("inconsistent-offsets", "nonmonotonic-poll"),
                        "records the leader alone held were read; an ELR member without them is elected and "
                        "writes other records at those offsets"),
                 SimRun(2, 2000, MIN_ISR, 3000, ("inconsistent-offsets", "nonmonotonic-poll")),
                 SimRun(7, 2000, ALL, 1000, ("inconsistent-offsets", "nonmonotonic-poll"),
                        "the random faults alone: one seed in 15"))),
    Variant("LastReplicaStanding", "ReplicationQuorumSuperset",
            "before KIP-966: no ELR, the last ISR member stays in the ISR and an unclean shutdown is "
            "ignored, so it is re-elected with a log that lost acknowledged records", size="deep",
            sim=(SimRun(47, 2000, ALL, 1000, ("inconsistent-offsets", "nonmonotonic-poll"),
                        "the last ISR member crashes, loses its unflushed tail and is elected again"),
                 SimRun(52, 2000, ALL, 1000, ("nonmonotonic-poll",)))),
    Variant("StaleAlterPartitionRejoin", "StrongIsr",
            "before KIP-903: AlterPartition carries no broker epochs, so a replica that restarted with "
            "a shorter log is added to the ISR on a stale fetch", size="rejoin",
            sim=(SimRun(3, 3000, STALE_FETCH, 1000, ("inconsistent-offsets", "nonmonotonic-poll"),
                        "a follower's fetch stays on the wire while it loses its disk; it arrives after the "
                        "follower restarted empty and was unfenced, the leader takes it back into the ISR, "
                        "and is isolated as that commits: the empty replica is elected"),
                 SimRun(4, 3000, STALE_FETCH, 1000, ("inconsistent-offsets", "nonmonotonic-poll")),
                 SimRun(27, 3000, STALE_FETCH, 1000, ("inconsistent-offsets", "nonmonotonic-poll")))),
    Variant("UncleanElection", "ReplicationQuorumSuperset",
            "unclean.leader.election.enable=true: an out-of-sync replica is elected when no ISR/ELR "
            "member is available", size="deep",
            sim=(SimRun(28, 2000, ALL, 1000, ("inconsistent-offsets", "nonmonotonic-poll"),
                        "an out-of-sync replica is elected; consumers past its log end reset to offset 0 and "
                        "read other records there"),
                 SimRun(47, 2000, ALL, 1000, ("inconsistent-offsets", "nonmonotonic-poll")),
                 SimRun(48, 2000, ALL, 1000, ("inconsistent-offsets", "nonmonotonic-poll")))),
)

# the one action no node takes besides the network's: a registration committing while its broker
# is stopped (recorded by kraft/replication/stacked.py BrokerNode.start)
REGISTER_STOPPED = "RegisterStopped"

INVARIANTS = (
    *(Invariant(name, fn) for name, fn in inv.STATE_INVARIANTS.items()),
    Invariant("HighWatermarkMonotonic", None, "a leader's HW never decreases within its leader epoch (Ghost)"),
)

PROTOCOL = Protocol(
    name="replication",
    spec_module="PartitionReplication",
    actions=ACTIONS,
    variables=VARIABLES,
    variants=VARIANTS,
    invariants=INVARIANTS,
    constants=("Brokers", "MinIsr", "MaxProduce", "MaxLeaderEpoch", "MaxRestarts", "MaxControlledShutdowns",
               "MaxUncleanShutdowns", "MaxDiskLosses", "MaxShrinks", "MaxFences", "ClientAcks", "NetworkFaults",
               "NoOpFetches", "ReplayEqualEpoch"),
    history_model="append-log",
)

