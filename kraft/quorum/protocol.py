"""The KRaft declaration: ``spec/KRaft.tla`` in Python, once.

Every spec action with the message it consumes and its parameters (``kraft.quorum.node.QuorumNode``
takes each with the method of its snake-case name); every spec variable with its projection
(``kraft.quorum.projection``); the bug variants with the invariant TLC must report; the invariants.
The node dispatches through it, the simulator names trace steps from it, the conformance glue
(``traces/protocols/kraft.py``) builds its templates from it, and tests/core/test_declarations.py
checks it against the ``.tla``.
"""

from __future__ import annotations

from kraft.core.declaration import Action, Protocol, SimRun, Variable, Variant
from kraft.core.invariants import Invariant
from kraft.quorum import invariants as inv
from kraft.quorum import projection as proj
from kraft.quorum.messages import (
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    VoteRequest,
    VoteResponse,
)

# the random faults of the pinned variant runs: every one but ``snapshot`` (their seeds were found
# without it, and with it the same seed is another run)
PINNED_FAULTS = "drop,dup,delay,reorder,partition,crash,disk-loss,resign"
# a follower cut off while the leader snapshots and cleans its log, and leaders that resign or are
# partitioned away, so the follower's log diverges before it catches up through a snapshot
SNAPSHOT_DIVERGE_FAULTS = "snapshot,far-behind:1500,resign,partition"

ACTIONS = (
    Action("Timeout", doc="election/fetch timer fires: Prospective (pre-vote) or Candidate; a Prospective "
                          "loses its round"),
    Action("BecomeCandidate", doc="a majority of pre-votes: Candidate in epoch+1"),
    Action("HandleVoteRequest", VoteRequest, ("m",)),
    Action("HandleVoteResponse", VoteResponse, ("m",)),
    Action("BecomeLeader", doc="a majority of votes: Leader, LeaderChange record"),
    Action("ResendVoteRequest", args=("d",),
           doc="a Candidate sends its VoteRequest again to a voter whose connection a disk loss reset"),
    Action("SendBeginQuorumEpoch", args=("d",)),
    Action("HandleBeginQuorumEpochRequest", BeginQuorumEpochRequest, ("m",)),
    Action("SendFetchRequest"),
    Action("HandleFetchRequest", FetchRequest, ("m",)),
    Action("HandleFetchResponse", FetchResponse, ("m",)),
    Action("HandleFetchSnapshotRequest", FetchSnapshotRequest, ("m",)),
    Action("HandleFetchSnapshotResponse", FetchSnapshotResponse, ("m",)),
    Action("TakeSnapshot", args=("k",), doc="write a snapshot of the committed prefix below k"),
    Action("DeleteBeforeSnapshot", args=("o",), doc="move the log start offset up to a snapshot's end"),
    Action("ClientAppend", args=("v",), doc="a client request at the leader"),
    Action("Flush"),
    Action("CheckQuorumResign"),
    Action("Resign"),
    Action("HandleEndQuorumEpochRequest", EndQuorumEpochRequest, ("m",)),
    Action("SendAnyVoterFetch", args=("d",),
           doc="an observer, or an Unattached voter, fetches from a voter to learn the leader"),
    Action("AddVoter", args=("x",), doc="AddRaftVoter at the leader: append the VotersRecord with x"),
    Action("RemoveVoter", args=("x",), doc="RemoveRaftVoter at the leader: append the VotersRecord without x"),
    Action("UpdateVoter", args=("x",),
           doc="UpdateRaftVoter at the leader: append the VotersRecord of an unchanged membership with x's "
               "new endpoints"),
    Action("ResignAfterRemoval", doc="a leader whose own removal is committed resigns"),
    Action("Restart", doc="crash and recover (the driver crashes the file system first)"),
    Action("RestartWithDiskLoss", doc="restart with an empty disk"),
    Action("DropMessage", args=("m",), actor="network", handled=False, doc="the network loses a message"),
)

VARIABLES = (
    *(Variable(name, fn) for name, fn in proj.PER_NODE.items()),
    Variable("messages", proj.messages, doc="the network (the simulator's in-flight messages)"),
    Variable("snapshotCount", spec_only=True, doc="model bound counter"),
    Variable("voterChanges", spec_only=True, doc="model bound counter"),
    Variable("committed", spec_only=True, doc="ghost: the longest prefix ever known committed (Monitor)"),
    Variable("elected", spec_only=True, doc="ghost: every <<epoch, leader>> elected (Monitor)"),
    Variable("coverage", spec_only=True, doc="ghost: events seen, for sanity checks"),
    Variable("restarts", spec_only=True, doc="model bound counter"),
    Variable("faults", spec_only=True, doc="model bound counter"),
    Variable("elections", spec_only=True, doc="model bound counter"),
    Variable("diskLosses", spec_only=True, doc="model bound counter"),
)

VARIANTS = (
    Variant("VoteWithoutLogCheck", "LeaderCompleteness",
            "grant (pre-)votes without comparing the candidate's last epoch/end offset (Raft 5.4.1 election "
            "restriction; KIP-595 Vote): a voter lacking committed records can win",
            sim=(SimRun(21, 2000, PINNED_FAULTS, 1000, ("inconsistent-offsets", "int-poll-skip", "nonmonotonic-send"),
                        "a voter without the committed tail is elected; its log overwrites acknowledged sends, "
                        "which clients read at offsets that later hold other values"),)),
    Variant("HwmFromAnyEpoch", "MajorityReachedHighWatermark",
            "advance the high watermark without waiting for a record of the leader's own epoch (ignore "
            "epochStartOffset, LeaderState.maybeUpdateHighWatermark; Raft figure 8)"),
    Variant("NoTruncateOnDivergence", "LogMatching",
            "on a Diverging fetch answer the follower rewinds its fetch position but keeps the diverged "
            "suffix; fetched records land after it (KIP-595 divergence handling)",
            sim=(SimRun(12, 2000, PINNED_FAULTS, 1000, ("duplicate", "inconsistent-offsets", "lost-write", "unseen"),
                        "a follower keeps its diverged suffix and later leads: records sit at two offsets, "
                        "and acknowledged sends vanish from the final reads"),)),
    Variant("ForgetVoteOnRestart", "ElectionSafety",
            "votedFor is not persisted before the VoteResponse is sent, so a restart forgets the vote and "
            "the voter can vote twice in one epoch", size="crash"),
    Variant("SnapshotBeyondHighWatermark", "ConsistentCommittedData",
            "a snapshot may end anywhere up to the log end, not only within the high watermark "
            "(KafkaMetadataLog.createNewSnapshot refuses that): it can hold an uncommitted suffix that "
            "is later truncated", size="snapshot"),
    Variant("KeepSuffixAfterSnapshotInstall", "LogEpochsMonotonic",
            "a follower that installs a fetched snapshot keeps its own entries past the snapshot's end, "
            "of an older epoch than the snapshot's, instead of emptying its log "
            "(KafkaMetadataLog.truncateToLatestSnapshot truncates fully)", size="snapstale",
            sim=(SimRun(26, 600, SNAPSHOT_DIVERGE_FAULTS, 200, (),
                        "a follower installs the leader's snapshot and keeps its older-epoch records past "
                        "the snapshot's end (conformance rejects that FetchSnapshot response); the history "
                        "audits clean"),)),
    Variant("RetentionDeletesPastSnapshot", "SnapshotAtLogStart",
            "the log start offset moves past the latest snapshot, to an offset no snapshot covers "
            "(KAFKA-14238: size/time retention deleted metadata segments no snapshot covered)", size="snapshot"),
    Variant("NoSnapshotRedirectBelowLogStart", "FollowersCatchUp",
            "a fetch below the leader's log start is answered Diverging at the log start instead of with "
            "the latest snapshot (ReplicatedLog.validateOffsetAndEpoch): the follower never catches up",
            size="snapliveness"),
    Variant("VoterChangeBeforeEpochCommit", "OverlappingMajorities",
            "a new leader appends a voter change before it has committed a record of its own epoch, so a "
            "change a former leader left uncommitted can still win: two single-voter changes of one set whose "
            "majorities miss each other (AddVoterHandler/RemoveVoterHandler wait for the high watermark in "
            "the leader's epoch; Ongaro, raft-dev 2015)", size="epochchange",
            sim=(SimRun(1, 600, "resign,change-after-election", 200, (),
                        "a new leader removes a voter right after its election, before anything of its "
                        "epoch has committed (conformance rejects that RemoveVoter); with three voters "
                        "the two sets still overlap, no split brain follows and the history audits "
                        "clean"),)),
    Variant("ConcurrentVoterChange", "OverlappingMajorities",
            "a leader appends a voter change while its last VotersRecord is uncommitted, so two changes stack "
            "and a majority of the new voter set can miss every majority of the committed one "
            "(AddVoterHandler/RemoveVoterHandler refuse it: one change at a time)", size="removal",
            sim=(SimRun(1, 400, "all", 300, ("inconsistent-offsets", "int-poll-skip", "lost-write",
                                             "nonmonotonic-send", "poll-skip", "unseen"),
                        "a second removal while the first is uncommitted leaves the leader a one-voter set "
                        "whose majority misses the committed set's; acknowledged sends are later lost",
                        observers=1),)),
    Variant("LeaderCountsSelfWhenRemoved", "MajorityReachedHighWatermark",
            "a leader that removed itself still counts its own offset toward the high watermark, committing "
            "a record without a majority of the new voter set (KAFKA-16530)", size="removal",
            unobservable={"audit": "the record the removed leader commits with itself and one of the two "
                                   "remaining voters is flushed on that voter, whose vote every later "
                                   "leader of the new set needs and grants only to a log holding the "
                                   "record, so no client read misses it; only that voter's lost disk "
                                   "would lose it, and the disk-loss fault never wipes the last durable "
                                   "copy of a committed record (the spec's DiskLossAllowed)"},
            sim=(SimRun(28, 300, "all", 200, (),
                        "a leader that removed itself counts its own offset toward its high watermark "
                        "(conformance rejects the fetch that moves it); the history audits clean",
                        observers=1),)),
    Variant("ObserverSkipsFsync", "MajorityReachedHighWatermark",
            "a follower that is not a voter does not flush its appends; once the leader has added it, its "
            "unflushed fetch offset counts toward the high watermark (KAFKA-17332)", size="observer",
            sim=(SimRun(8, 300, "all", 200, (),
                        "an observer appends fetched records without flushing them (conformance rejects that "
                        "fetch response); the history audits clean",
                        observers=1),)),
    Variant("IgnoreDirectoryIdInVote", "ElectionSafety",
            "a replica whose disk was replaced answers (pre-)votes as the voter it replaces, with an empty "
            "quorum state: a Candidate's VoteRequest sent again after the reset wins a second vote in an "
            "epoch the old disk voted in (KIP-853: KafkaRaftClient.handleVoteRequest answers "
            "INVALID_VOTER_KEY, isValidVoterKey)", size="disk",
            sim=(SimRun(11, 2000, PINNED_FAULTS, 1000, (),
                        "a replica back from a disk loss grants a pre-vote its new disk may not give "
                        "(conformance rejects that vote request's answer); no second vote in one epoch "
                        "follows in this run, and the history audits clean"),)),
)

INVARIANTS = (
    Invariant("ElectionSafety", inv.election_safety, "at most one leader per epoch"),
    Invariant("LogMatching", inv.log_matching, "same offset and epoch: same prefix"),
    Invariant("StateMachineSafety", inv.state_machine_safety, "no two nodes commit different records at one offset"),
    Invariant("MajorityReachedHighWatermark", inv.majority_reached_high_watermark,
              "a leader's high watermark is held by a majority"),
    Invariant("LogEpochsMonotonic", inv.log_epochs_monotonic,
              "epochs never decrease along a log, from the record before its start on"),
    Invariant("SnapshotAtLogStart", inv.snapshot_at_log_start,
              "snapshots end at or after the log start, and a log start > 0 is a snapshot's end"),
    # history invariants (need the Monitor's ghosts); checked by Monitor.observe
    Invariant("LeaderCompleteness", None, "the newest leader holds every record committed before its epoch"),
    Invariant("MonotonicHighWatermark", None, "the newest leader never exposes less than what was committed"),
    Invariant("NoCommittedRecordLost", None, "committed records stay durable on a majority"),
    Invariant("HighWatermarkNeverDecreases", None, "per role and epoch, the HW only grows"),
    Invariant("ConsistentCommittedData", None,
              "every snapshot ends within the committed prefix and holds its values"),
    Invariant("OverlappingMajorities", None,
              "every majority of the committed voter set meets every majority of a leader's latest set"),
    # a liveness property: the simulator checks it after its final phase (SimPlugin.liveness), the
    # Hypothesis teardown and the stories' settle when the healed cluster does not converge
    Invariant("FollowersCatchUp", None, "once faults stop, every voter's log reaches the committed end"),
)

PROTOCOL = Protocol(
    name="kraft",
    spec_module="KRaft",
    actions=ACTIONS,
    variables=VARIABLES,
    variants=VARIANTS,
    invariants=INVARIANTS,
    constants=("Voters", "Values", "Nil", "MaxEpoch", "MaxLogLen", "MaxRestarts", "MaxDiskLosses",
               "MaxElections", "MaxInFlight", "MaxFaults", "CalmTimeouts", "PreVote", "Duplication",
               "MaxSnapshots", "Observers", "MaxVoterChanges", "UpdateVoters", "KRaftVersion"),
    history_model="append-log",
)
