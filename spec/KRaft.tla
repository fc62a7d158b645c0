------------------------------- MODULE KRaft -------------------------------
(***************************************************************************)
(* KRaft: Raft as Apache Kafka's metadata quorum does it.                  *)
(*                                                                         *)
(* Sources (facts, not code):                                              *)
(*  - KIP-595 "A Raft Protocol for the Metadata Quorum": pull-based        *)
(*    replication (followers Fetch with fetchOffset and lastFetchedEpoch,  *)
(*    the leader answers with a diverging epoch/end offset when the        *)
(*    follower's log has diverged), Vote, BeginQuorumEpoch,                *)
(*    EndQuorumEpoch, the LeaderChange control record written at the      *)
(*    start of every epoch, and the quorum-state file holding epoch,       *)
(*    voted-for and leader.                                                *)
(*  - KIP-996 "Pre-Vote": a Prospective voter first asks for non-binding   *)
(*    pre-votes for epoch+1 without bumping its own epoch; the switch is   *)
(*    the CONSTANT PreVote.                                                *)
(*  - apache/kafka raft/src/main/java/org/apache/kafka/raft/:              *)
(*      QuorumState.initialize   a node whose stored election names itself *)
(*                               leader restarts as Resigned in that epoch *)
(*                               (so it can neither vote nor lead again in *)
(*                               it: records stay unique by epoch/offset). *)
(*      QuorumState.transitionToLeader  a new leader does not keep the     *)
(*                               high watermark it knew before.            *)
(*      LeaderState.maybeUpdateHighWatermark  HW = the fetch offset at     *)
(*                               index |voters|/2 of the offsets sorted    *)
(*                               descending (leader counts its flushed end *)
(*                               offset), accepted only if it is greater   *)
(*                               than epochStartOffset, never lowered.     *)
(*      LeaderState (check quorum)  a leader that has not received fetches *)
(*                               from a majority within 1.5 x fetch timeout*)
(*                               resigns.                                  *)
(*      KafkaRaftClient.pollLeader/pollResigned  every resignation (check  *)
(*                               quorum, shutdown, requested) goes through *)
(*                               transitionToResigned; the Resigned node   *)
(*                               sends EndQuorumEpoch to the other voters. *)
(*      UnattachedState/ProspectiveState.canGrantVote  real vote: only if  *)
(*                               not voted for another in the epoch, no    *)
(*                               known leader, and the candidate's log is  *)
(*                               up to date (last epoch, then end offset); *)
(*                               pre-vote: log check only.                 *)
(*      LeaderState/ResignedState.canGrantVote  never grant.               *)
(*      FollowerState  grants a pre-vote only if it has not fetched        *)
(*                     successfully from its leader (hasFetchedFromLeader);*)
(*                     never grants a real vote in its epoch.              *)
(*      ReplicatedLog.validateOffsetAndEpoch  the diverging check.         *)
(*                                                                         *)
(* Vocabulary (variables, actions, message fields, role names) is shared   *)
(* with the Python implementation kraft/quorum: see docs/contracts.md §2.  *)
(* Design decisions and TLC numbers: docs/kraft-spec.md.                   *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Voters,          \* the bootstrap voter set (controller.quorum.voters, or the
                     \* VotersRecord `kafka-storage format` writes into the bootstrap checkpoint)
    Observers,       \* the other replicas: they fetch as observers and may be added as voters
    Values,          \* client values a leader may append
    Nil,             \* "none"
    MaxEpoch,        \* no election may move past this epoch
    MaxLogLen,       \* no log grows past this many records
    MaxRestarts,     \* total crash/restarts in a behaviour
    MaxDiskLosses,   \* total disk losses (RestartWithDiskLoss) in a behaviour
    MaxElections,    \* total election rounds started (Unbounded: no bound)
    MaxInFlight,     \* a send that would put more messages in flight is not taken
    MaxFaults,       \* at most this many drops/duplicates/resignations (Unbounded: no bound)
    CalmTimeouts,    \* liveness only: spurious or concurrent election timeouts are faults
    PreVote,         \* KIP-996 pre-vote on/off
    Duplication,     \* the network may deliver a message and keep a copy
    MaxSnapshots,    \* total snapshots taken (TakeSnapshot) in a behaviour
    MaxVoterChanges, \* total voter changes (AddVoter, RemoveVoter, UpdateVoter) in a behaviour
    UpdateVoters,    \* voters may move their endpoints (UpdateVoter) within MaxVoterChanges
    KRaftVersion,    \* the finalized kraft.version: 0 static voters, 1 dynamic (KIP-853)
    \* ---- historical / classic bugs (all FALSE in every cfg) ----
    VoteWithoutLogCheck,     \* grant (pre-)votes without the last epoch/offset check
    HwmFromAnyEpoch,         \* ignore the epochStartOffset condition of the HW rule
    NoTruncateOnDivergence,  \* follower does not truncate a diverged suffix
    ForgetVoteOnRestart,     \* votedFor not persisted: a restart forgets the vote
    SnapshotBeyondHighWatermark,     \* a snapshot may hold records past the HW
    KeepSuffixAfterSnapshotInstall,  \* installing a snapshot keeps the log past it
    RetentionDeletesPastSnapshot,    \* the log start may pass the latest snapshot
    NoSnapshotRedirectBelowLogStart, \* a fetch below the log start gets no snapshot
    VoterChangeBeforeEpochCommit,    \* a new leader changes the voters before committing in its epoch
    ConcurrentVoterChange,           \* a voter change while another is uncommitted
    LeaderCountsSelfWhenRemoved,     \* a removed leader counts itself toward the high watermark
    ObserverSkipsFsync,              \* a follower that is not a voter does not flush its appends
    IgnoreDirectoryIdInVote          \* a replica with a new disk answers (pre-)votes as the old one

ASSUME /\ MaxEpoch \in Nat /\ MaxLogLen \in Nat /\ MaxRestarts \in Nat /\ MaxDiskLosses \in Nat /\ MaxElections \in Int
       /\ MaxInFlight \in Nat /\ MaxFaults \in Int /\ MaxSnapshots \in Nat
       /\ MaxVoterChanges \in Nat /\ KRaftVersion \in {0, 1}
       /\ \A b \in {PreVote, Duplication, CalmTimeouts, UpdateVoters, VoteWithoutLogCheck, HwmFromAnyEpoch,
                    NoTruncateOnDivergence, ForgetVoteOnRestart, SnapshotBeyondHighWatermark,
                    KeepSuffixAfterSnapshotInstall, RetentionDeletesPastSnapshot,
                    NoSnapshotRedirectBelowLogStart, VoterChangeBeforeEpochCommit,
                    ConcurrentVoterChange, LeaderCountsSelfWhenRemoved,
                    ObserverSkipsFsync, IgnoreDirectoryIdInVote} : b \in BOOLEAN
       /\ Voters # {} /\ Voters \cap Observers = {}
       /\ Nil \notin Voters \cup Observers

\* cfg files cannot write negative numbers: `MaxFaults <- Unbounded`.
Unbounded == -1

Replicas == Voters \cup Observers

Roles == {"Unattached", "Prospective", "Candidate", "Leader", "Follower", "Resigned"}
\* The value of a control record; a data record's value is one of Values.
LeaderChange == "LeaderChange"    \* LeaderChangeMessage, written at every epoch start
VotersChange == "Voters"          \* VotersRecord (KIP-853): `voters` is the new voter set
MessageTypes == {"VoteRequest", "VoteResponse", "BeginQuorumEpochRequest",
                 "EndQuorumEpochRequest", "FetchRequest", "FetchResponse",
                 "FetchSnapshotRequest", "FetchSnapshotResponse"}

VARIABLES
    currentEpoch,     \* persisted (quorum-state file)
    votedFor,         \* persisted
    leader,           \* persisted
    role,             \* volatile, derived on restart
    log,              \* Seq([epoch, value, voters]) from the log start: entry i is at offset logStartOffset + i - 1
    logStartOffset,   \* persisted: the first offset the log holds (0, or the end of a snapshot)
    snapshots,        \* persisted: set of [end, epoch, values, voters]: the node's snapshots
    flushedOffset,    \* durable end offset (absolute): a crash keeps the log up to it
    highWatermark,    \* number of committed entries the node knows (volatile)
    endOffsets,       \* leader: voter -> last fetch offset it reported
    epochStartOffset, \* leader: offset of its LeaderChange record
    votesGranted,     \* Prospective/Candidate: voters that granted this round
    messages,         \* the network: a set of messages
    committed,        \* ghost: longest log prefix ever known committed
    elected,          \* ghost: set of <<epoch, leader>> ever elected
    coverage,         \* ghost: names of interesting events seen (sanity checks only)
    restarts,         \* number of restarts so far
    faults,           \* number of counted faults so far
    elections,        \* number of election rounds started so far
    awaitingLeader,   \* persisted: came back from a disk loss, has not yet heard from a leader
    diskLosses,       \* number of disk losses so far
    snapshotCount,    \* number of snapshots taken so far
    voterChanges      \* number of voter changes appended so far

quorumVars    == <<currentEpoch, votedFor, leader, role>>
logVars       == <<log, flushedOffset, highWatermark, logStartOffset, snapshots>>
leaderVars    == <<endOffsets, epochStartOffset>>
ghostVars     == <<committed, elected, coverage>>
diskVars      == <<awaitingLeader, diskLosses, snapshotCount, voterChanges>>   \* bounds and disk bookkeeping
vars == <<currentEpoch, votedFor, leader, role, log, logStartOffset, snapshots, flushedOffset,
          highWatermark, endOffsets, epochStartOffset, votesGranted, messages, committed, elected,
          coverage, restarts, faults, elections, awaitingLeader, diskLosses, snapshotCount, voterChanges>>

\* The VIEW used by the safety cfgs: every variable except the `coverage`
\* ghost. Sound because no guard reads `coverage` and no property checked
\* in those cfgs reads it (it exists only for the sanity-check cfgs).
View == <<currentEpoch, votedFor, leader, role, log, logStartOffset, snapshots, flushedOffset,
          highWatermark, endOffsets, epochStartOffset, votesGranted, messages, committed, elected,
          restarts, faults, elections, awaitingLeader, diskLosses, snapshotCount, voterChanges>>

\* Voters are interchangeable, and so are observers (not one with the other).
Symmetry == IF Observers = {} THEN Permutations(Voters)
            ELSE Permutations(Voters) \cup Permutations(Observers)

----------------------------------------------------------------------------
(* Helpers                                                                 *)

Min(a, b) == IF a < b THEN a ELSE b
Max(a, b) == IF a > b THEN a ELSE b
\* S holds a majority of the voter set vs (only members count).
IsQuorumOf(S, vs) == 2 * Cardinality(S \cap vs) > Cardinality(vs)
Range(f) == {f[i] : i \in DOMAIN f}
IsPrefix(p, l) == Len(p) <= Len(l) /\ SubSeq(l, 1, Len(p)) = p
ZeroOffsets == [v \in Replicas |-> 0]
\* A data or control record of epoch e (only a VotersRecord has voters).
Rec(e, v) == [epoch |-> e, value |-> v, voters |-> {}]

\* ---- a node's log: snapshots, then the entries from the log start ----
\* (KIP-630; core/src/main/scala/kafka/raft/KafkaMetadataLog.scala)

EndOffset(n) == logStartOffset[n] + Len(log[n])
\* The entry at absolute offset o, logStartOffset[n] <= o < EndOffset(n).
EntryAt(n, o) == log[n][o - logStartOffset[n] + 1]
Earliest(n) == CHOOSE s \in snapshots[n] : \A x \in snapshots[n] : s.end <= x.end
Latest(n) == CHOOSE s \in snapshots[n] : \A x \in snapshots[n] : s.end >= x.end
\* The epoch of the record before the log start: that of the snapshot ending
\* there (KafkaMetadataLog.lastFetchedEpoch on an empty log). Without such a
\* snapshot (only RetentionDeletesPastSnapshot leaves none) the leader epoch
\* cache's entry at the log start stands in: the first entry's epoch.
BaseEpoch(n) ==
    IF logStartOffset[n] = 0 THEN 0
    ELSE IF \E s \in snapshots[n] : s.end = logStartOffset[n]
         THEN (CHOOSE s \in snapshots[n] : s.end = logStartOffset[n]).epoch
         ELSE IF Len(log[n]) > 0 THEN log[n][1].epoch ELSE 0
\* The epoch of the record at offset o - 1, for logStartOffset[n] <= o <= EndOffset(n).
EpochBefore(n, o) == IF o <= logStartOffset[n] THEN BaseEpoch(n) ELSE EntryAt(n, o - 1).epoch
LastLogEpoch(n) == EpochBefore(n, EndOffset(n))

\* ReplicatedLog.endOffsetForEpoch: the largest epoch <= e and its end offset.
\* Entries are epoch-ordered, so the end offset is the log start plus the
\* number of entries with epoch <= e; with none, the record before the log
\* start stands for it (KafkaMetadataLog.endOffsetForEpoch returns the
\* snapshot id at the log start; epoch 0 / offset 0 on a log from 0).
EntriesUpTo(n, e) == Cardinality({i \in DOMAIN log[n] : log[n][i].epoch <= e})
EndOffsetForEpoch(n, e) == logStartOffset[n] + EntriesUpTo(n, e)
LargestEpochAtMost(n, e) ==
    LET k == EntriesUpTo(n, e) IN IF k = 0 THEN BaseEpoch(n) ELSE log[n][k].epoch

\* A snapshot's contents: the state machine's fold of the records below its
\* end, which for a log of client values is the sequence of values (control
\* records are not applied; the voter set is kept apart, `voters`).
RECURSIVE ValuesOf(_)
ValuesOf(l) == IF l = <<>> THEN <<>>
               ELSE LET rest == ValuesOf(Tail(l))
                    IN IF Head(l).value \in {LeaderChange, VotersChange} THEN rest ELSE <<Head(l).value>> \o rest
\* The values applied below the log start (the snapshot at the log start).
BaseValues(n) ==
    IF \E s \in snapshots[n] : s.end = logStartOffset[n]
    THEN (CHOOSE s \in snapshots[n] : s.end = logStartOffset[n]).values
    ELSE <<>>
\* ---- the voter set (KIP-853) ----
\* A voter set takes effect when its VotersRecord is appended and is undone
\* when a truncation removes it (KRaftControlRecordStateMachine,
\* VoterSetHistory.lastValue / truncateNewEntries): the set of the last
\* VotersRecord of the entries l, else `base`.
LastVoters(l, base) ==
    LET idx == {i \in DOMAIN l : l[i].value = VotersChange}
    IN IF idx = {} THEN base ELSE l[CHOOSE i \in idx : \A j \in idx : j <= i].voters
\* Below the log start: the voter set of the snapshot there (a snapshot's
\* header carries the Voters record, RecordsSnapshotWriter), else the
\* bootstrap set.
BaseVoters(n) ==
    IF \E s \in snapshots[n] : s.end = logStartOffset[n]
    THEN (CHOOSE s \in snapshots[n] : s.end = logStartOffset[n]).voters
    ELSE Voters
\* n's latest voter set (KRaftControlRecordStateMachine.lastVoterSet), and
\* the one in effect below offset k (voterSetAtOffset).
VoterSet(n) == LastVoters(log[n], BaseVoters(n))
VoterSetAt(n, k) == LastVoters(SubSeq(log[n], 1, k - logStartOffset[n]), BaseVoters(n))
\* Is n a voter by its own log (QuorumState.isVoter)? Else it is an observer.
IsVoter(n) == n \in VoterSet(n)
\* The other voters n knows of: those it asks for votes, tells of its epoch.
Others(n) == VoterSet(n) \ {n}
\* Every VotersRecord in n's log is below its high watermark (committed).
VotersCommitted(n) ==
    \A i \in DOMAIN log[n] :
       log[n][i].value = VotersChange => logStartOffset[n] + i - 1 < highWatermark[n]
\* The voter set of the committed prefix: the one every majority must meet.
CommittedVoters == LastVoters(committed, Voters)

\* The snapshot n would write ending at k (logStartOffset[n] <= k <= EndOffset(n)).
SnapshotOf(n, k) ==
    [end |-> k, epoch |-> EpochBefore(n, k),
     values |-> BaseValues(n) \o ValuesOf(SubSeq(log[n], 1, k - logStartOffset[n])),
     voters |-> VoterSetAt(n, k)]

\* n's entries agree with the sequence p (a history from offset 0) at every
\* offset both hold, below k.
AgreesUpTo(n, p, k) ==
    \A o \in logStartOffset[n]..(Min(Min(k, Len(p)), EndOffset(n)) - 1) : EntryAt(n, o) = p[o + 1]
\* n holds p whole: its log reaches Len(p), agrees with p from its log start
\* on, and the values below the log start are p's.
Holds(n, p) ==
    /\ EndOffset(n) >= Len(p)
    /\ AgreesUpTo(n, p, Len(p))
    /\ LET below == ValuesOf(SubSeq(p, 1, Min(logStartOffset[n], Len(p))))
       IN IsPrefix(below, BaseValues(n))

\* Vote log check: the candidate's (last epoch, end offset) is at least ours.
LogUpToDate(n, lastEpoch, lastOffset) ==
    \/ VoteWithoutLogCheck
    \/ lastEpoch > LastLogEpoch(n)
    \/ /\ lastEpoch = LastLogEpoch(n)
       /\ lastOffset >= EndOffset(n)

\* Largest offset o that a majority of the voters vs has reached (f[v]).
MajorityOffset(f, vs) ==
    LET cands == {f[v] : v \in vs} \cup {0}
        ok(o) == IsQuorumOf({v \in vs : f[v] >= o}, vs)
    IN CHOOSE o \in cands : ok(o) /\ \A o2 \in cands : ok(o2) => o2 <= o

\* Committed entries of epochs strictly below e (a prefix of `committed`).
CommittedBefore(e) ==
    SubSeq(committed, 1, Cardinality({i \in DOMAIN committed : committed[i].epoch < e}))

\* The leader's HW after its view of the voters' offsets changes
\* (LeaderState.maybeUpdateHighWatermark): the majority offset of its latest
\* voter set, counting the leader's own flushed offset only if it is a voter
\* (LeaderState.voterStates holds the voters of lastVoterSet), accepted only
\* past epochStartOffset (i.e. once the LeaderChange record of this epoch is
\* committed) and never lowered. Observers' offsets do not count.
HwVoters(n) == IF LeaderCountsSelfWhenRemoved THEN VoterSet(n) \cup {n} ELSE VoterSet(n)
NewHighWatermark(n, ends, flushed) ==
    LET cand == MajorityOffset([v \in Replicas |-> IF v = n THEN flushed ELSE ends[v]], HwVoters(n))
    IN IF /\ cand > highWatermark[n]
          /\ (cand > epochStartOffset[n] \/ HwmFromAnyEpoch)
       THEN cand ELSE highWatermark[n]

\* Ghost: extend `committed` with the leader's records when its HW passes it
\* (a leader's log start never passes the committed prefix: it moves only up
\* to the node's HW).
CommitGhost(n, hw) ==
    IF hw > Len(committed)
    THEN committed \o [i \in 1..(hw - Len(committed)) |-> EntryAt(n, Len(committed) + i - 1)]
    ELSE committed

\* Fault accounting: counted only when MaxFaults is a bound (>= 0).
FaultAllowed == MaxFaults < 0 \/ faults < MaxFaults
CountFault == IF MaxFaults < 0 THEN UNCHANGED faults ELSE faults' = faults + 1

Note(e) == coverage' = coverage \cup {e}
\* The liveness cfg substitutes `Note <- NoNote`: `coverage` is read by no guard
\* and no checked property, so not recording it only merges states that
\* differ in that ghost alone (TLC's VIEW would do the same for safety, but is
\* not used with liveness).
NoNote(e) == UNCHANGED coverage

\* Sending: a send that is not a direct reply must fit in the network bound.
Fits(newMsgs) == Cardinality(messages \cup newMsgs) <= MaxInFlight
Send(newMsgs) == messages' = messages \cup newMsgs

\* Delivering m together with the replies it causes. The network either
\* consumes m, or (Duplication) keeps a copy that can be delivered again.
Deliver(m, replies) ==
    \/ /\ messages' = (messages \ {m}) \cup replies
       /\ UNCHANGED faults
    \/ /\ Duplication
       /\ FaultAllowed
       /\ messages' = messages \cup replies
       /\ CountFault

\* Moving to a higher epoch without knowing its leader (Unattached; persisted).
\* The high watermark is kept (QuorumState.transitionToUnattached keeps it).
BecomeUnattachedIn(n, e) ==
    /\ currentEpoch' = [currentEpoch EXCEPT ![n] = e]
    /\ votedFor' = [votedFor EXCEPT ![n] = Nil]
    /\ leader' = [leader EXCEPT ![n] = Nil]
    /\ role' = [role EXCEPT ![n] = "Unattached"]
    /\ votesGranted' = [votesGranted EXCEPT ![n] = {}]
    /\ endOffsets' = [endOffsets EXCEPT ![n] = ZeroOffsets]
    /\ epochStartOffset' = [epochStartOffset EXCEPT ![n] = 0]

\* Following leader l in epoch e (persisted; a vote of that epoch is kept).
BecomeFollowerOf(n, l, e) ==
    /\ currentEpoch' = [currentEpoch EXCEPT ![n] = e]
    /\ votedFor' = [votedFor EXCEPT ![n] = IF e > currentEpoch[n] THEN Nil ELSE @]
    /\ leader' = [leader EXCEPT ![n] = l]
    /\ role' = [role EXCEPT ![n] = "Follower"]
    /\ votesGranted' = [votesGranted EXCEPT ![n] = {}]
    /\ endOffsets' = [endOffsets EXCEPT ![n] = ZeroOffsets]
    /\ epochStartOffset' = [epochStartOffset EXCEPT ![n] = 0]

VoteRequestsFrom(n, e, lastEpoch, lastOffset, pre) ==
    {[mtype |-> "VoteRequest", msource |-> n, mdest |-> d, mepoch |-> e,
      mlastEpoch |-> lastEpoch, mlastOffset |-> lastOffset, mpreVote |-> pre] : d \in Others(n)}

ElectionFits(n, rest) ==
    Cardinality(rest \cup VoteRequestsFrom(n, currentEpoch[n] + 1, LastLogEpoch(n),
                                            EndOffset(n), PreVote)) <= MaxInFlight

\* Start an election (election timeout, or EndQuorumEpoch from our leader).
\* With pre-vote: become Prospective in the same epoch and ask for pre-votes
\* for epoch+1 (ProspectiveState; nothing persisted). Without: become
\* Candidate in epoch+1, voting for ourselves (persisted).
\* `rest` is the network without the message being handled, if any.
StartElection(n, rest) ==
    /\ currentEpoch[n] < MaxEpoch
    /\ MaxElections < 0 \/ elections < MaxElections
    /\ elections' = IF MaxElections < 0 THEN elections ELSE elections + 1
    /\ LET e == currentEpoch[n] + 1
           reqs == VoteRequestsFrom(n, e, LastLogEpoch(n), EndOffset(n), PreVote)
       IN /\ Cardinality(rest \cup reqs) <= MaxInFlight
          /\ messages' = rest \cup reqs
          /\ IF PreVote
             THEN /\ role' = [role EXCEPT ![n] = "Prospective"]
                  /\ UNCHANGED <<currentEpoch, votedFor, leader>>
             ELSE /\ currentEpoch' = [currentEpoch EXCEPT ![n] = e]
                  /\ votedFor' = [votedFor EXCEPT ![n] = n]
                  /\ leader' = [leader EXCEPT ![n] = Nil]
                  /\ role' = [role EXCEPT ![n] = "Candidate"]
    /\ votesGranted' = [votesGranted EXCEPT ![n] = {n}]
    /\ endOffsets' = [endOffsets EXCEPT ![n] = ZeroOffsets]
    /\ epochStartOffset' = [epochStartOffset EXCEPT ![n] = 0]
    /\ Note(IF PreVote THEN "preVote" ELSE "election")

\* Does n follow a leader that is still leading in n's epoch? (spec-level
\* knowledge used only to classify a timeout as needed or spurious.)
LeaderAlive(n) ==
    /\ leader[n] \in Replicas
    /\ leader[n] # n
    /\ role[leader[n]] = "Leader"
    /\ currentEpoch[leader[n]] = currentEpoch[n]

----------------------------------------------------------------------------
(* Initial state: every voter Unattached in epoch 0 with an empty log.     *)

Init ==
    /\ currentEpoch = [n \in Replicas |-> 0]
    /\ votedFor = [n \in Replicas |-> Nil]
    /\ leader = [n \in Replicas |-> Nil]
    /\ role = [n \in Replicas |-> "Unattached"]
    /\ log = [n \in Replicas |-> <<>>]
    /\ logStartOffset = [n \in Replicas |-> 0]
    /\ snapshots = [n \in Replicas |-> {}]
    /\ flushedOffset = [n \in Replicas |-> 0]
    /\ highWatermark = [n \in Replicas |-> 0]
    /\ endOffsets = [n \in Replicas |-> ZeroOffsets]
    /\ epochStartOffset = [n \in Replicas |-> 0]
    /\ votesGranted = [n \in Replicas |-> {}]
    /\ messages = {}
    /\ committed = <<>>
    /\ elected = {}
    /\ coverage = {}
    /\ restarts = 0
    /\ faults = 0
    /\ elections = 0
    /\ awaitingLeader = [n \in Replicas |-> FALSE]
    /\ diskLosses = 0
    /\ snapshotCount = 0
    /\ voterChanges = 0

----------------------------------------------------------------------------
(* Timers. Time is not modelled: a timer may fire whenever its role has    *)
(* one. A fetch timeout while the follower's leader is alive and leading   *)
(* its epoch (a partition, a GC pause) is a counted fault. With            *)
(* CalmTimeouts (liveness cfg) an election timeout while a round is still  *)
(* in progress is a fault too: once the budget is spent, election timers   *)
(* fire one round at a time (the abstraction of randomized election        *)
(* timeouts). MaxElections bounds the number of rounds started.            *)

\* A voter whose (pre-)vote round is still in progress.
Campaigning(o) ==
    /\ role[o] \in {"Prospective", "Candidate"}
    /\ \E m \in messages : m.msource = o \/ m.mdest = o

\* A timeout that is a fault: a fetch timeout while the leader is alive;
\* with CalmTimeouts also an election timeout while a round (another's or
\* our own) is still in progress: a timer shorter than a round trip.
TimeoutIsFault(n) ==
    \/ role[n] = "Follower" /\ LeaderAlive(n)
    \/ CalmTimeouts /\ \E o \in Replicas : Campaigning(o)

\* A Prospective whose pre-vote round is lost (or whose election timer fires
\* first: Kafka treats both alike) does not start another round at once
\* (KIP-996, KafkaRaftClient.maybeHandleElectionLoss and pollProspective ->
\* prospectiveTransitionAfterElectionLoss): it goes back to Follower of the
\* leader it knew in its epoch, else to Unattached in its epoch, keeping a vote
\* it cast in that epoch (QuorumState.transitionToUnattached(epoch, leaderId)).
\* A resigned leader that campaigned knows itself as leader: it goes back to
\* Unattached and keeps knowing it, so a restart still brings it back
\* Resigned in that epoch (QuorumState.initialize), never Candidate.
ProspectiveLoses(n) ==
    IF leader[n] \in Replicas /\ leader[n] # n
    THEN BecomeFollowerOf(n, leader[n], currentEpoch[n])
    ELSE /\ role' = [role EXCEPT ![n] = "Unattached"]
         /\ votesGranted' = [votesGranted EXCEPT ![n] = {}]
         /\ UNCHANGED <<currentEpoch, votedFor, leader, endOffsets, epochStartOffset>>

\* Only a voter campaigns. A replica that is not a voter in its own log times
\* out of Resigned only (a leader that removed itself): it becomes
\* Unattached in the next epoch, so that no fetch answer names it the leader
\* of its epoch again (KafkaRaftClient.pollResigned); an observer otherwise
\* fetches from the voters (SendAnyVoterFetch). A Prospective voter's timer
\* ends its round (ProspectiveLoses); the other roles' timers start one.
Timeout(n) ==
    /\ role[n] \in {"Unattached", "Follower", "Resigned", "Candidate", "Prospective"}
    /\ ~awaitingLeader[n]      \* a voter with a new disk does not campaign
    /\ IF IsVoter(n)
       THEN /\ IF TimeoutIsFault(n)
               THEN FaultAllowed /\ CountFault
               ELSE UNCHANGED faults
            /\ IF role[n] = "Prospective"
               THEN \* a majority of pre-votes makes it Candidate as the last one is
                    \* handled (KafkaRaftClient.handleVoteResponse), before any timer
                    /\ ~IsQuorumOf(votesGranted[n], VoterSet(n))
                    /\ ProspectiveLoses(n)
                    /\ UNCHANGED <<messages, coverage, elections>>
               ELSE StartElection(n, messages)
            /\ UNCHANGED <<logVars, committed, elected, restarts, diskVars>>
       ELSE /\ role[n] = "Resigned"
            /\ currentEpoch[n] < MaxEpoch
            /\ BecomeUnattachedIn(n, currentEpoch[n] + 1)
            /\ UNCHANGED <<logVars, messages, ghostVars, restarts, diskVars, faults, elections>>

----------------------------------------------------------------------------
(* Vote (KIP-595 Vote RPC; KIP-996 pre-vote when mpreVote = TRUE)          *)

\* Prospective with a majority of pre-votes -> Candidate in epoch+1.
BecomeCandidate(n) ==
    /\ role[n] = "Prospective"
    /\ IsQuorumOf(votesGranted[n], VoterSet(n))
    /\ currentEpoch[n] < MaxEpoch
    /\ LET e == currentEpoch[n] + 1
           reqs == VoteRequestsFrom(n, e, LastLogEpoch(n), EndOffset(n), FALSE)
       IN /\ Fits(reqs)
          /\ Send(reqs)
          /\ currentEpoch' = [currentEpoch EXCEPT ![n] = e]
    /\ votedFor' = [votedFor EXCEPT ![n] = n]
    /\ leader' = [leader EXCEPT ![n] = Nil]
    /\ role' = [role EXCEPT ![n] = "Candidate"]
    /\ votesGranted' = [votesGranted EXCEPT ![n] = {n}]
    /\ UNCHANGED <<logVars, leaderVars, ghostVars, restarts, diskVars, faults, elections>>

\* A Candidate sends its VoteRequest again to a voter whose connection a
\* disk loss reset before it answered. Kafka's candidate keeps sending to
\* every voter it has no answer from (KafkaRaftClient.pollCandidate ->
\* maybeSendVoteRequests over CandidateState.unrecordedVoters, paced by the
\* RequestManager's backoff after a failed request). The spec sends a round
\* once: a request or answer lost to a DropMessage fault and then sent again
\* is a delay the network already has, so only the loss that a disk loss
\* forces is followed by a re-send: d is awaitingLeader, has not reached n's
\* epoch (it never handled this round's request on its new disk), its grant
\* is not recorded and nothing between n and d is in flight. The spec keeps
\* no refusals, so a voter whose refusal arrived before its disk was lost is
\* asked again too (the correct spec refuses again).
ResendVoteRequest(n, d) ==
    /\ role[n] = "Candidate"
    /\ d \in VoterSet(n) \ ({n} \cup votesGranted[n])
    /\ awaitingLeader[d]
    /\ currentEpoch[d] < currentEpoch[n]
    /\ \A m \in messages : {m.msource, m.mdest} # {n, d}
    /\ LET reqs == {r \in VoteRequestsFrom(n, currentEpoch[n], LastLogEpoch(n), EndOffset(n), FALSE) :
                      r.mdest = d}
       IN /\ Fits(reqs)
          /\ Send(reqs)
    /\ UNCHANGED <<quorumVars, logVars, leaderVars, votesGranted, ghostVars, restarts, diskVars, faults,
                   elections>>

\* Does a (pre-)vote request reach the replica it was meant for? A
\* VoteRequest names the voter key (id, directory id) the candidate has for
\* the receiver (KIP-853); KafkaRaftClient.handleVoteRequest, after moving to
\* a higher epoch, answers INVALID_VOTER_KEY, not granted, when it is not the
\* local key (isValidVoterKey). A replica with a new disk has a new directory
\* id, so it is awaitingLeader here and never matches until a leader makes it
\* a follower. IgnoreDirectoryIdInVote is the code without that check (and
\* kraft.version 0, whose requests carry no directory id): the new disk
\* answers as if it were the voter, with an empty quorum state, so it can vote
\* a second time in an epoch its old disk voted in.
VoterKeyMatches(n) == IgnoreDirectoryIdInVote \/ ~awaitingLeader[n]

\* A voter answers a (pre-)vote request. A real vote request of a higher
\* epoch first moves the voter to Unattached in that epoch; a pre-vote never
\* changes the voter's state. A granted real vote is persisted (votedFor)
\* before the response is sent.
HandleVoteRequest(n, m) ==
    /\ m.mtype = "VoteRequest"
    /\ m.mdest = n
    /\ LET c == m.msource
           logOk == LogUpToDate(n, m.mlastEpoch, m.mlastOffset)
       IN IF m.mpreVote
          THEN \* pre-vote: grant iff not fenced, log ok, and the role allows
               \* it. Only a Follower may refuse an acceptable pre-vote:
               \* Kafka's FollowerState.canGrantVote refuses once it has
               \* fetched successfully from its leader (hasFetchedFromLeader)
               \* and keeps refusing until its fetch timer fires, even if that
               \* leader has resigned or crashed meanwhile. When the timer
               \* fires is a timing fact the spec does not model, so a
               \* Follower may refuse or grant (refusing is always safe).
               LET acceptable == /\ m.mepoch >= currentEpoch[n]
                                 /\ VoterKeyMatches(n)
                                 /\ logOk
                                 /\ role[n] \notin {"Leader", "Resigned"}
                   choices == IF ~acceptable THEN {FALSE}
                              ELSE IF role[n] = "Follower"
                                   THEN BOOLEAN ELSE {TRUE}
               IN \E grant \in choices :
                  /\ Deliver(m, {[mtype |-> "VoteResponse", msource |-> n, mdest |-> c,
                                  mepoch |-> currentEpoch[n], mgranted |-> grant,
                                  mpreVote |-> TRUE]})
                  /\ UNCHANGED <<quorumVars, votesGranted, leaderVars>>
          ELSE LET higher == m.mepoch > currentEpoch[n]
                   e == Max(m.mepoch, currentEpoch[n])
                   vf == IF higher THEN Nil ELSE votedFor[n]
                   ld == IF higher THEN Nil ELSE leader[n]
                   rl == IF higher THEN "Unattached" ELSE role[n]
                   grant == /\ m.mepoch = e
                            /\ VoterKeyMatches(n)
                            /\ rl \in {"Unattached", "Prospective"}
                            /\ \/ vf = c
                               \/ vf = Nil /\ ld = Nil /\ logOk
               IN /\ currentEpoch' = [currentEpoch EXCEPT ![n] = e]
                  /\ votedFor' = [votedFor EXCEPT ![n] = IF grant THEN c ELSE vf]
                  /\ leader' = [leader EXCEPT ![n] = ld]
                  /\ role' = [role EXCEPT ![n] = IF higher THEN "Unattached" ELSE role[n]]
                  /\ IF higher
                     THEN /\ votesGranted' = [votesGranted EXCEPT ![n] = {}]
                          /\ endOffsets' = [endOffsets EXCEPT ![n] = ZeroOffsets]
                          /\ epochStartOffset' = [epochStartOffset EXCEPT ![n] = 0]
                     ELSE UNCHANGED <<votesGranted, leaderVars>>
                  /\ Deliver(m, {[mtype |-> "VoteResponse", msource |-> n, mdest |-> c,
                                  mepoch |-> e, mgranted |-> grant, mpreVote |-> FALSE]})
    /\ UNCHANGED <<logVars, committed, elected, coverage, restarts, diskVars, elections>>

\* A Prospective/Candidate counts grants; a response of a higher epoch makes
\* the receiver Unattached in that epoch (KafkaRaftClient's common response
\* handling). Stale or unexpected responses are ignored.
HandleVoteResponse(n, m) ==
    /\ m.mtype = "VoteResponse"
    /\ m.mdest = n
    /\ IF m.mepoch > currentEpoch[n]
       THEN BecomeUnattachedIn(n, m.mepoch)
       ELSE /\ UNCHANGED <<quorumVars, leaderVars>>
            /\ IF \/ role[n] = "Prospective" /\ m.mpreVote
                  \/ role[n] = "Candidate" /\ ~m.mpreVote /\ m.mepoch = currentEpoch[n]
               THEN votesGranted' = [votesGranted EXCEPT ![n] =
                        IF m.mgranted THEN @ \cup {m.msource} ELSE @]
               ELSE UNCHANGED votesGranted
    /\ Deliver(m, {})
    /\ UNCHANGED <<logVars, committed, elected, coverage, restarts, diskVars, elections>>

\* Candidate with a majority -> Leader: write the LeaderChange control record
\* at epochStartOffset (unflushed), persist leader = self. The HW starts
\* unknown (0) and every follower's end offset unknown (0).
BecomeLeader(n) ==
    /\ role[n] = "Candidate"
    /\ IsQuorumOf(votesGranted[n], VoterSet(n))
    /\ EndOffset(n) < MaxLogLen
    /\ role' = [role EXCEPT ![n] = "Leader"]
    /\ leader' = [leader EXCEPT ![n] = n]
    /\ log' = [log EXCEPT ![n] = Append(@, Rec(currentEpoch[n], LeaderChange))]
    /\ epochStartOffset' = [epochStartOffset EXCEPT ![n] = EndOffset(n)]
    /\ endOffsets' = [endOffsets EXCEPT ![n] = ZeroOffsets]
    /\ highWatermark' = [highWatermark EXCEPT ![n] = 0]
    /\ votesGranted' = [votesGranted EXCEPT ![n] = {}]
    /\ elected' = elected \cup {<<currentEpoch[n], n>>}
    /\ UNCHANGED <<currentEpoch, votedFor, flushedOffset, logStartOffset, snapshots, messages, committed,
                   coverage, restarts, diskVars, faults, elections>>

----------------------------------------------------------------------------
(* BeginQuorumEpoch                                                        *)

\* The leader (re)sends BeginQuorumEpoch to another voter. Kafka re-sends it
\* on a timer for as long as it leads: Kafka 3.8-4.0 to every voter each
\* fetchTimeout/2 (LeaderState.beginQuorumEpochTimer), later versions to each
\* voter that has not fetched within fetchTimeout/2
\* (LeaderState.needToSendBeginQuorumRequests). The re-send is what lets a
\* voter that timed out while this leader is alive (a Prospective whose
\* pre-votes are all refused) find the leader again. Time is not modelled:
\* a send is free when d is not in a later epoch and does not follow n (it
\* has not heard of n yet, or it lost track of n and stopped fetching, so
\* the timer fires for it); a send to a voter that follows n (it will fetch
\* before the timer fires, in normal timing) or that has moved past n's
\* epoch (it will ignore it) is a timing event and counts as a fault, which
\* keeps the bounded models small and keeps a fault-free leader from
\* flooding its followers with BeginQuorumEpoch in the liveness model.
\* Re-sending a copy already in flight changes nothing (the network is a set).
BQEFree(n, d) ==
    /\ currentEpoch[d] <= currentEpoch[n]
    /\ ~(role[d] = "Follower" /\ leader[d] = n /\ currentEpoch[d] = currentEpoch[n])

SendBeginQuorumEpoch(n, d) ==
    /\ role[n] = "Leader"
    /\ d \in Others(n)
    /\ IF BQEFree(n, d) THEN UNCHANGED faults ELSE FaultAllowed /\ CountFault
    /\ LET msg == [mtype |-> "BeginQuorumEpochRequest", msource |-> n, mdest |-> d,
                   mepoch |-> currentEpoch[n]]
       IN /\ Fits({msg})
          /\ Send({msg})
    /\ UNCHANGED <<quorumVars, logVars, leaderVars, votesGranted, ghostVars, restarts, diskVars, elections>>

\* Become a Follower of the sender in its epoch (persisted), unless fenced
\* or already following it.
HandleBeginQuorumEpochRequest(n, m) ==
    /\ m.mtype = "BeginQuorumEpochRequest"
    /\ m.mdest = n
    /\ IF \/ m.mepoch > currentEpoch[n]
          \/ m.mepoch = currentEpoch[n] /\ role[n] \in {"Unattached", "Prospective", "Candidate"}
       THEN /\ BecomeFollowerOf(n, m.msource, m.mepoch)
            /\ awaitingLeader' = [awaitingLeader EXCEPT ![n] = FALSE]
       ELSE UNCHANGED <<quorumVars, votesGranted, leaderVars, awaitingLeader>>
    /\ Deliver(m, {})
    /\ UNCHANGED <<logVars, ghostVars, restarts, diskLosses, snapshotCount, voterChanges, elections>>

----------------------------------------------------------------------------
(* EndQuorumEpoch (resignation)                                            *)

\* EndQuorumEpoch requests from n to the voters in ds.
EndQuorumEpochs(n, ds) ==
    {[mtype |-> "EndQuorumEpochRequest", msource |-> n, mdest |-> d,
      mepoch |-> currentEpoch[n]] : d \in ds}

\* n leaves leadership and becomes Resigned in its epoch (ResignedState keeps
\* no high watermark and no replica state).
BecomeResigned(n) ==
    /\ role' = [role EXCEPT ![n] = "Resigned"]
    /\ highWatermark' = [highWatermark EXCEPT ![n] = 0]
    /\ endOffsets' = [endOffsets EXCEPT ![n] = ZeroOffsets]
    /\ epochStartOffset' = [epochStartOffset EXCEPT ![n] = 0]
    /\ UNCHANGED <<currentEpoch, votedFor, leader, log, logStartOffset, snapshots, flushedOffset, votesGranted,
                   ghostVars, restarts, diskVars, elections>>

\* Graceful: the leader resigns and tells the other voters.
Resign(n) ==
    /\ role[n] = "Leader"
    /\ FaultAllowed
    /\ LET reqs == EndQuorumEpochs(n, Others(n))
       IN /\ Fits(reqs)
          /\ Send(reqs)
    /\ BecomeResigned(n)
    /\ CountFault

\* A follower of that leader in that epoch starts an election right away.
HandleEndQuorumEpochRequest(n, m) ==
    /\ m.mtype = "EndQuorumEpochRequest"
    /\ m.mdest = n
    /\ IF /\ m.mepoch = currentEpoch[n]
          /\ role[n] = "Follower"
          /\ leader[n] = m.msource
          /\ IsVoter(n)
          /\ currentEpoch[n] < MaxEpoch
          /\ ElectionFits(n, messages \ {m})
       THEN \/ /\ StartElection(n, messages \ {m})
               /\ UNCHANGED faults
            \/ /\ Duplication     \* delivered while a copy stays (as in Deliver)
               /\ FaultAllowed
               /\ StartElection(n, messages)
               /\ CountFault
       ELSE /\ Deliver(m, {})
            /\ UNCHANGED <<quorumVars, votesGranted, leaderVars, coverage, elections>>
    /\ UNCHANGED <<logVars, committed, elected, restarts, diskVars>>

----------------------------------------------------------------------------
(* Fetch (pull replication, KIP-595)                                       *)

\* A follower sends Fetch(fetchOffset = its log end offset, lastFetchedEpoch)
\* to its leader. Kafka's RequestManager keeps one fetch outstanding per
\* connection, but retries once the request has timed out
\* (ConnectionState.hasRequestTimedOut) while the old request or its answer
\* may still be in the network (delayed, not lost). Such a re-send depends
\* on time, which is not modelled: it counts as a fault, like a spurious
\* fetch timeout.
FetchOutstanding(n) ==
    \E m \in messages :
        \/ m.mtype \in {"FetchRequest", "FetchSnapshotRequest"} /\ m.msource = n
        \/ m.mtype \in {"FetchResponse", "FetchSnapshotResponse"} /\ m.mdest = n

FetchRequestTo(n, d) ==
    [mtype |-> "FetchRequest", msource |-> n, mdest |-> d, mepoch |-> currentEpoch[n],
     mfetchOffset |-> EndOffset(n), mlastFetchedEpoch |-> LastLogEpoch(n)]

SendFetchRequest(n) ==
    /\ role[n] = "Follower"
    /\ leader[n] \in Replicas
    /\ IF FetchOutstanding(n) THEN FaultAllowed /\ CountFault ELSE UNCHANGED faults
    /\ Fits({FetchRequestTo(n, leader[n])})
    /\ Send({FetchRequestTo(n, leader[n])})
    /\ UNCHANGED <<quorumVars, logVars, leaderVars, votesGranted, ghostVars, restarts, diskVars, elections>>

\* An observer that knows no leader fetches from any voter it knows of
\* (KafkaRaftClient.pollUnattachedAsObserver, maybeSendAnyVoterFetch); the
\* answer names the leader that voter knows (FetchResponse CurrentLeader),
\* which the observer then follows (HandleFetchResponse). An observer
\* following a leader does the same once its fetch timer expires
\* (pollFollowerAsObserver): while its leader is alive that is a counted
\* fault, as a voter's spurious fetch timeout is.
\* An Unattached voter that knows no leader fetches from the bootstrap
\* servers too while its election timer runs (KafkaRaftClient.
\* pollUnattachedAsVoter -> pollUnattachedCommon -> maybeSendFetchToAnyBootstrap),
\* and follows the leader an answer names (LearnsLeaderFromFetch): that is
\* how a voter the leader removed while it was away finds the leader, which
\* sends it no BeginQuorumEpoch. A voter back from a disk loss fetches the
\* same way: in Kafka its new directory id makes it an observer, which
\* fetches from the bootstrap servers (KIP-853), and a leader that removed
\* it sends it no BeginQuorumEpoch either. Time is not modelled: such a fetch is free
\* only while the voter is stranded (a leader of its epoch or a later one
\* does not count it a voter); otherwise BeginQuorumEpoch or its own election
\* comes first in normal timing, and the fetch is a counted timing fault.
Stranded(n) ==
    \E l \in Replicas : /\ role[l] = "Leader"
                       /\ currentEpoch[l] >= currentEpoch[n]
                       /\ n \notin VoterSet(l)

SpuriousAnyVoterFetch(n) ==
    IF IsVoter(n) THEN ~Stranded(n)
    ELSE FetchOutstanding(n) \/ (role[n] = "Follower" /\ LeaderAlive(n))

SendAnyVoterFetch(n, d) ==
    /\ d \in Others(n)
    /\ IF IsVoter(n)
       THEN role[n] = "Unattached" /\ leader[n] = Nil
       ELSE \/ role[n] = "Unattached" /\ leader[n] = Nil
            \/ role[n] = "Follower" /\ d # leader[n]
    /\ IF SpuriousAnyVoterFetch(n) THEN FaultAllowed /\ CountFault ELSE UNCHANGED faults
    /\ Fits({FetchRequestTo(n, d)})
    /\ Send({FetchRequestTo(n, d)})
    /\ UNCHANGED <<quorumVars, logVars, leaderVars, votesGranted, ghostVars, restarts, diskVars, elections>>

\* The answer echoes the request's position (fetch offset and last fetched
\* epoch), so the follower can tell an answer to its current position from a
\* stale or duplicated one (Kafka pairs them by correlation id:
\* KafkaRaftClient.handleResponse, RequestManager.isResponseExpected).
FetchResponse(n, m, result, entries, hw, divEpoch, divEnd) ==
    [mtype |-> "FetchResponse", msource |-> n, mdest |-> m.msource,
     mepoch |-> currentEpoch[n], mresult |-> result, mentries |-> entries,
     mhighWatermark |-> hw, mdivergingEpoch |-> divEpoch,
     mdivergingEndOffset |-> divEnd, mfetchOffset |-> m.mfetchOffset,
     mlastFetchedEpoch |-> m.mlastFetchedEpoch, msnapshotEnd |-> 0, msnapshotEpoch |-> 0,
     mleader |-> leader[n]]

\* The answer that sends the follower to the leader's latest snapshot
\* (FetchResponse.SnapshotId; KafkaRaftClient.tryCompleteFetchRequest).
SnapshotFetchResponse(n, m) ==
    [FetchResponse(n, m, "Snapshot", <<>>, highWatermark[n], 0, 0) EXCEPT
        !.msnapshotEnd = Latest(n).end, !.msnapshotEpoch = Latest(n).epoch]

\* ReplicatedLog.validateOffsetAndEpoch, its snapshot branch: the leader has a
\* snapshot and the fetch position is below its log start, at the log start
\* in another epoch than the earliest snapshot's, or in an epoch older than
\* that snapshot's (a log from 0 fetched at 0 is always valid).
NeedsSnapshot(n, m) ==
    /\ snapshots[n] # {}
    /\ ~(logStartOffset[n] = 0 /\ m.mfetchOffset = 0)
    /\ \/ m.mfetchOffset < logStartOffset[n]
       \/ m.mfetchOffset = logStartOffset[n] /\ m.mlastFetchedEpoch # Earliest(n).epoch
       \/ m.mlastFetchedEpoch < Earliest(n).epoch

\* The leader validates (fetchOffset, lastFetchedEpoch) against its log
\* (ReplicatedLog.validateOffsetAndEpoch): if the follower's last fetched
\* epoch ends earlier in the leader's log, or is not an epoch of it, the
\* answer is Diverging with the leader's end offset of the largest epoch
\* <= lastFetchedEpoch. Otherwise the leader records the follower's fetch
\* offset, recomputes the HW and returns all records from fetchOffset.
\* A fetch that is not for this leader's epoch is answered FencedEpoch
\* carrying the receiver's epoch.
HandleFetchRequest(n, m) ==
    /\ m.mtype = "FetchRequest"
    /\ m.mdest = n
    /\ IF role[n] = "Leader" /\ m.mepoch = currentEpoch[n]
       THEN LET divEpoch == LargestEpochAtMost(n, m.mlastFetchedEpoch)
                divEnd == EndOffsetForEpoch(n, m.mlastFetchedEpoch)
                valid == /\ divEpoch = m.mlastFetchedEpoch
                         /\ m.mfetchOffset <= divEnd
            IN IF NeedsSnapshot(n, m) /\ ~NoSnapshotRedirectBelowLogStart
               THEN /\ Deliver(m, {SnapshotFetchResponse(n, m)})
                    /\ UNCHANGED <<endOffsets, highWatermark, committed>>
            ELSE IF NoSnapshotRedirectBelowLogStart /\ m.mfetchOffset < logStartOffset[n]
               THEN \* BUG: the records are gone and no snapshot is offered: the
                    \* position is answered as diverging at the log start.
                    /\ Deliver(m, {FetchResponse(n, m, "Diverging", <<>>, highWatermark[n],
                                                 BaseEpoch(n), logStartOffset[n])})
                    /\ UNCHANGED <<endOffsets, highWatermark, committed>>
            ELSE IF valid
               THEN LET ends == [endOffsets[n] EXCEPT ![m.msource] = m.mfetchOffset]
                        hw == NewHighWatermark(n, ends, flushedOffset[n])
                        entries == SubSeq(log[n], m.mfetchOffset - logStartOffset[n] + 1, Len(log[n]))
                    IN /\ endOffsets' = [endOffsets EXCEPT ![n] = ends]
                       /\ highWatermark' = [highWatermark EXCEPT ![n] = hw]
                       /\ committed' = CommitGhost(n, hw)
                       /\ Deliver(m, {FetchResponse(n, m, "Ok", entries, hw, 0, 0)})
               ELSE /\ Deliver(m, {FetchResponse(n, m, "Diverging", <<>>, highWatermark[n],
                                                 divEpoch, divEnd)})
                    /\ UNCHANGED <<endOffsets, highWatermark, committed>>
       ELSE /\ Deliver(m, {FetchResponse(n, m, "FencedEpoch", <<>>, 0, 0, 0)})
            /\ UNCHANGED <<endOffsets, highWatermark, committed>>
    /\ UNCHANGED <<quorumVars, log, logStartOffset, snapshots, flushedOffset, epochStartOffset, votesGranted,
                   elected, coverage, restarts, diskVars, elections>>

\* The follower handles the answer to its outstanding fetch (the response
\* echoes mfetchOffset and mlastFetchedEpoch; one for another log position is
\* stale: ignored).
\*  - Ok: append the records (at the fetch offset = log end), flush, and take
\*    min(leader HW, log end) as its HW (a lower value is ignored: the HW of
\*    a follower never goes back, FollowerState.updateHighWatermark).
\*    A controller flushes every follower append, voter or not
\*    (KafkaRaftClient.appendAsFollower with followersAlwaysFlush, which
\*    KafkaRaftManager sets for the controller role): the leader counts a
\*    fetch offset as durable, and an observer may already be a voter in the
\*    leader's log. ObserverSkipsFsync is the code before that fix
\*    (KAFKA-17332): only a replica that is a voter in its log before the
\*    append (QuorumState.isVoter, read before the appended records update
\*    the voter set) flushes.
\*  - Diverging: truncate to min(diverging end offset, own end offset of the
\*    largest epoch <= diverging epoch) and fetch again later.
\*  - FencedEpoch with a higher epoch: Unattached in that epoch.
\* An observer follows the leader an answer names, when it is of a later
\* epoch, or of its own epoch while it knows no leader
\* (KafkaRaftClient.maybeHandleCommonResponse). So does an Unattached voter
\* that knows no leader, for an answer of its epoch or a later one
\* (KAFKA-17030: the bootstrap fetch of an Unattached voter). A voter back
\* from a disk loss does too, as Kafka's replica with a new directory id
\* follows the leader a bootstrap server names, but it stays awaiting until
\* the leader itself answers it (HeardFromLeader here, or any answer of the
\* leader it follows below), which ends its wait as BeginQuorumEpoch does.
\* That is safe for the same reason: every epoch its old disk voted in is at
\* most the leader's (DiskLossAllowed), and it votes in no epoch whose leader
\* it knows. Any other voter learns of a new leader from BeginQuorumEpoch only.
HeardFromLeader(m) == m.msource = m.mleader

LearnsLeaderFromFetch(n, m) ==
    /\ m.mleader \notin {Nil, n}
    /\ IF IsVoter(n)
       THEN /\ role[n] = "Unattached" /\ leader[n] = Nil
            /\ m.mepoch >= currentEpoch[n]
       ELSE \/ m.mepoch > currentEpoch[n]
            \/ m.mepoch = currentEpoch[n] /\ leader[n] = Nil

HandleFetchResponse(n, m) ==
    /\ m.mtype = "FetchResponse"
    /\ m.mdest = n
    /\ IF LearnsLeaderFromFetch(n, m)
       THEN /\ BecomeFollowerOf(n, m.mleader, m.mepoch)
            /\ awaitingLeader' = [awaitingLeader EXCEPT ![n] = @ /\ ~HeardFromLeader(m)]
            /\ Deliver(m, {})
            /\ UNCHANGED <<logVars, coverage>>
       ELSE IF m.mepoch > currentEpoch[n]
       THEN /\ BecomeUnattachedIn(n, m.mepoch)
            /\ Deliver(m, {})
            /\ UNCHANGED <<logVars, coverage, awaitingLeader>>
       ELSE IF ~(role[n] = "Follower" /\ leader[n] = m.msource /\ m.mepoch = currentEpoch[n])
            THEN /\ Deliver(m, {})
                 /\ UNCHANGED <<quorumVars, votesGranted, leaderVars, logVars, coverage, awaitingLeader>>
            ELSE /\ UNCHANGED <<quorumVars, votesGranted, leaderVars>>
                 /\ awaitingLeader' = [awaitingLeader EXCEPT ![n] = FALSE]
                 \* an answer to a fetch from the log n holds now: its offset and the
                 \* epoch of the record before it (after a truncation and a re-fetch the
                 \* log can end at the same offset in another epoch; a duplicated
                 \* Diverging answer of the old position must not truncate it again)
                 /\ CASE m.mresult = "Ok" /\ m.mfetchOffset = EndOffset(n)
                                          /\ m.mlastFetchedEpoch = LastLogEpoch(n) ->
                           LET l2 == log[n] \o m.mentries
                               end == logStartOffset[n] + Len(l2)
                           IN /\ log' = [log EXCEPT ![n] = l2]
                              /\ flushedOffset' = [flushedOffset EXCEPT ![n] =
                                     IF ObserverSkipsFsync /\ ~IsVoter(n)
                                     THEN @    \* BUG: an observer's append stays unflushed
                                     ELSE end]
                              /\ highWatermark' = [highWatermark EXCEPT ![n] =
                                     Max(@, Min(m.mhighWatermark, end))]
                              /\ Deliver(m, {})
                              /\ UNCHANGED <<logStartOffset, snapshots, coverage>>
                      [] m.mresult = "Ok" /\ NoTruncateOnDivergence
                                          /\ logStartOffset[n] <= m.mfetchOffset
                                          /\ m.mfetchOffset < EndOffset(n)
                                          /\ m.mlastFetchedEpoch = EpochBefore(n, m.mfetchOffset) ->
                           \* BUG: the fetcher rewound its position after a
                           \* Diverging answer without truncating; the records
                           \* are appended after the stale suffix.
                           LET l2 == log[n] \o m.mentries
                               end == logStartOffset[n] + Len(l2)
                           IN /\ end <= MaxLogLen
                              /\ log' = [log EXCEPT ![n] = l2]
                              /\ flushedOffset' = [flushedOffset EXCEPT ![n] = end]
                              /\ highWatermark' = [highWatermark EXCEPT ![n] =
                                     Max(@, Min(m.mhighWatermark, end))]
                              /\ Deliver(m, {})
                              /\ UNCHANGED <<logStartOffset, snapshots>>
                              /\ Note("buggyAppend")
                      [] m.mresult = "Diverging" /\ m.mfetchOffset = EndOffset(n)
                                                 /\ m.mlastFetchedEpoch = LastLogEpoch(n) ->
                           \* never below the log start: the records below it are
                           \* in the snapshot (KafkaMetadataLog.truncateTo refuses
                           \* to truncate below the high watermark, which is at
                           \* least the log start)
                           LET t == Max(logStartOffset[n],
                                        Min(m.mdivergingEndOffset,
                                            EndOffsetForEpoch(n, m.mdivergingEpoch)))
                           IN IF NoTruncateOnDivergence
                              THEN \* BUG: no truncation; fetch again from t.
                                   LET req == [mtype |-> "FetchRequest", msource |-> n,
                                               mdest |-> m.msource, mepoch |-> currentEpoch[n],
                                               mfetchOffset |-> t,
                                               mlastFetchedEpoch |-> EpochBefore(n, t)]
                                   IN /\ Deliver(m, {req})
                                      /\ UNCHANGED <<logVars, coverage>>
                              ELSE /\ log' = [log EXCEPT ![n] = SubSeq(@, 1, t - logStartOffset[n])]
                                   /\ flushedOffset' = [flushedOffset EXCEPT ![n] = Min(@, t)]
                                   /\ UNCHANGED <<highWatermark, logStartOffset, snapshots>>
                                   /\ Deliver(m, {})
                                   /\ Note("truncate")
                      [] m.mresult = "Snapshot" /\ m.mfetchOffset = EndOffset(n)
                                                /\ m.mlastFetchedEpoch = LastLogEpoch(n) ->
                           \* fetch the snapshot the leader named
                           \* (KafkaRaftClient.handleFetchResponse, SnapshotId)
                           /\ Deliver(m, {[mtype |-> "FetchSnapshotRequest", msource |-> n,
                                           mdest |-> m.msource, mepoch |-> currentEpoch[n],
                                           msnapshotEnd |-> m.msnapshotEnd,
                                           msnapshotEpoch |-> m.msnapshotEpoch]})
                           /\ UNCHANGED <<logVars, coverage>>
                      [] OTHER ->
                           /\ Deliver(m, {})
                           /\ UNCHANGED <<logVars, coverage>>
    /\ UNCHANGED <<committed, elected, restarts, diskLosses, snapshotCount, voterChanges, elections>>

----------------------------------------------------------------------------
(* Snapshots (KIP-630)                                                     *)

\* Any replica writes a snapshot of its state machine at an offset k it knows
\* committed (KafkaMetadataLog.createNewSnapshot refuses an id past the high
\* watermark and below the log start), newer than its snapshots. The snapshot
\* is durable once written (FileRawSnapshotWriter.freeze).
TakeSnapshot(n, k) ==
    /\ snapshotCount < MaxSnapshots
    /\ logStartOffset[n] < k
    /\ k <= IF SnapshotBeyondHighWatermark THEN EndOffset(n) ELSE highWatermark[n]
    /\ k <= EndOffset(n)
    /\ \A s \in snapshots[n] : s.end < k
    /\ snapshots' = [snapshots EXCEPT ![n] = @ \cup {SnapshotOf(n, k)}]
    /\ snapshotCount' = snapshotCount + 1
    /\ Note("snapshot")
    /\ UNCHANGED <<quorumVars, log, logStartOffset, flushedOffset, highWatermark, leaderVars,
                   votesGranted, messages, committed, elected, restarts, faults, elections,
                   awaitingLeader, diskLosses, voterChanges>>

\* The log start moves up to one of n's snapshots: the records below it and
\* the older snapshots go (KafkaMetadataLog.deleteBeforeSnapshot; the log
\* start never passes the high watermark, UnifiedLog
\* .maybeIncrementLogStartOffset). Everything below the new log start is in
\* a durable snapshot, so it counts as flushed.
CanDeleteBefore(n, o) ==
    /\ logStartOffset[n] < o
    /\ o <= highWatermark[n]
    /\ o <= EndOffset(n)
    /\ \/ \E s \in snapshots[n] : s.end = o
       \/ RetentionDeletesPastSnapshot /\ \A s \in snapshots[n] : s.end < o

DeleteBeforeSnapshot(n, o) ==
    /\ CanDeleteBefore(n, o)
    /\ log' = [log EXCEPT ![n] = SubSeq(@, o - logStartOffset[n] + 1, Len(@))]
    /\ logStartOffset' = [logStartOffset EXCEPT ![n] = o]
    /\ snapshots' = [snapshots EXCEPT ![n] = {s \in @ : s.end >= o}]
    /\ flushedOffset' = [flushedOffset EXCEPT ![n] = Max(@, o)]
    /\ Note("deleteBeforeSnapshot")
    /\ UNCHANGED <<quorumVars, highWatermark, leaderVars, votesGranted, messages, committed, elected,
                   restarts, diskVars, faults, elections>>

\* The leader answers a FetchSnapshot with the whole snapshot (Kafka sends it
\* in chunks, each a FetchSnapshot round trip; one round trip stands for them
\* all) or SnapshotNotFound once it no longer has it; a fetch that is not
\* for this leader's epoch is answered FencedEpoch with the receiver's epoch
\* (KafkaRaftClient.handleFetchSnapshotRequest).
HandleFetchSnapshotRequest(n, m) ==
    /\ m.mtype = "FetchSnapshotRequest"
    /\ m.mdest = n
    /\ LET mine == {s \in snapshots[n] : s.end = m.msnapshotEnd /\ s.epoch = m.msnapshotEpoch}
           ok == role[n] = "Leader" /\ m.mepoch = currentEpoch[n]
           result == IF ~ok THEN "FencedEpoch" ELSE IF mine = {} THEN "SnapshotNotFound" ELSE "Ok"
       IN Deliver(m, {[mtype |-> "FetchSnapshotResponse", msource |-> n, mdest |-> m.msource,
                       mepoch |-> currentEpoch[n], mresult |-> result,
                       msnapshotEnd |-> m.msnapshotEnd, msnapshotEpoch |-> m.msnapshotEpoch,
                       mvalues |-> IF result = "Ok" THEN (CHOOSE s \in mine : TRUE).values
                                   ELSE <<>>,
                       mvoters |-> IF result = "Ok" THEN (CHOOSE s \in mine : TRUE).voters
                                   ELSE {}]})
    /\ UNCHANGED <<quorumVars, logVars, leaderVars, votesGranted, ghostVars, restarts,
                   diskVars, elections>>

\* Installing the snapshot s (KafkaRaftClient.handleFetchSnapshotResponse on
\* the last chunk, then KafkaMetadataLog.truncateToLatestSnapshot): the log
\* is replaced when s is newer than it, by epoch, then end offset. A snapshot
\* that is not newer is dropped: Kafka's follower fetches nothing else while
\* it fetches a snapshot (FollowerState.fetchingSnapshot), so its log cannot
\* have moved past it; here an overtaken response can arrive after the log
\* did (and keeping it would leave a snapshot below the log start).
Install(n, s) ==
    IF s.epoch > LastLogEpoch(n) \/ (s.epoch = LastLogEpoch(n) /\ s.end > EndOffset(n))
    THEN /\ log' = [log EXCEPT ![n] =
                IF KeepSuffixAfterSnapshotInstall /\ EndOffset(n) > s.end
                THEN \* BUG: the records past the snapshot stay
                     SubSeq(@, s.end - logStartOffset[n] + 1, Len(@))
                ELSE <<>>]
         /\ logStartOffset' = [logStartOffset EXCEPT ![n] = s.end]
         /\ snapshots' = [snapshots EXCEPT ![n] = {s}]
         /\ flushedOffset' = [flushedOffset EXCEPT ![n] =
                IF KeepSuffixAfterSnapshotInstall THEN Max(@, s.end) ELSE s.end]
         /\ highWatermark' = [highWatermark EXCEPT ![n] = Max(@, s.end)]
         /\ Note("installSnapshot")
    ELSE UNCHANGED <<logVars, coverage>>

HandleFetchSnapshotResponse(n, m) ==
    /\ m.mtype = "FetchSnapshotResponse"
    /\ m.mdest = n
    /\ IF m.mepoch > currentEpoch[n]
       THEN /\ BecomeUnattachedIn(n, m.mepoch)
            /\ UNCHANGED <<logVars, coverage>>
       ELSE /\ UNCHANGED <<quorumVars, votesGranted, leaderVars>>
            /\ IF /\ role[n] = "Follower" /\ leader[n] = m.msource /\ m.mepoch = currentEpoch[n]
                  /\ m.mresult = "Ok"
               THEN Install(n, [end |-> m.msnapshotEnd, epoch |-> m.msnapshotEpoch,
                                values |-> m.mvalues, voters |-> m.mvoters])
               ELSE UNCHANGED <<logVars, coverage>>
    /\ Deliver(m, {})
    /\ UNCHANGED <<committed, elected, restarts, diskVars, elections>>

----------------------------------------------------------------------------
(* Voter changes (KIP-853)                                                 *)

\* The leader's checks before a voter change, in Kafka's order
\* (AddVoterHandler.handleAddVoterRequest, RemoveVoterHandler
\* .handleRemoveVoterRequest); a request failing one is refused
\* (REQUEST_TIMED_OUT, UNSUPPORTED_VERSION) and changes nothing, so only
\* accepted requests are actions. The reply to the admin client (sent once
\* the new VotersRecord is committed) is not modelled.
\*  1. the HW is known in this epoch: the leader has committed a record of
\*     its own epoch, so a voter change a former leader left uncommitted is
\*     either committed or gone (the fix of the single-server-change bug in
\*     the Raft dissertation, raft-dev 2015);
\*  2. kraft.version supports reconfiguration (>= 1);
\*  3. the last VotersRecord is committed: one change at a time.
VoterChangeAllowed(n) ==
    /\ role[n] = "Leader"
    /\ voterChanges < MaxVoterChanges
    /\ EndOffset(n) < MaxLogLen
    /\ highWatermark[n] > epochStartOffset[n] \/ VoterChangeBeforeEpochCommit
    /\ KRaftVersion >= 1
    /\ VotersCommitted(n) \/ ConcurrentVoterChange

\* The leader appends the VotersRecord of the new set (unflushed); it takes
\* effect at once (LeaderState.appendVotersRecord).
AppendVoters(n, vs) ==
    /\ log' = [log EXCEPT ![n] = Append(@, [epoch |-> currentEpoch[n], value |-> VotersChange,
                                            voters |-> vs])]
    /\ voterChanges' = voterChanges + 1
    /\ Note("voterChange")
    /\ UNCHANGED <<quorumVars, flushedOffset, highWatermark, logStartOffset, snapshots, leaderVars,
                   votesGranted, messages, committed, elected, restarts, faults, elections,
                   awaitingLeader, diskLosses, snapshotCount>>

\* AddRaftVoter: x is not a voter (else DUPLICATE_VOTER) and has fetched up
\* to the leader's end offset (AddVoterHandler step 7, else REQUEST_TIMED_OUT).
AddVoter(n, x) ==
    /\ VoterChangeAllowed(n)
    /\ x \in Replicas \ VoterSet(n)
    /\ endOffsets[n][x] >= EndOffset(n)
    /\ AppendVoters(n, VoterSet(n) \cup {x})

\* RemoveRaftVoter: x is a voter (else VOTER_NOT_FOUND), not the last one.
RemoveVoter(n, x) ==
    /\ VoterChangeAllowed(n)
    /\ x \in VoterSet(n)
    /\ VoterSet(n) # {x}
    /\ AppendVoters(n, VoterSet(n) \ {x})

\* UpdateRaftVoter (KIP-853; KafkaRaftClient.pollFollowerAsVoter sends it,
\* KafkaRaftClient.handleUpdateVoterRequest and UpdateVoterHandler
\* .handleUpdateVoterRequest accept it): a follower x whose endpoints differ
\* from those its latest voter set lists asks the leader, which appends the
\* VotersRecord of VoterSet.updateVoter. The spec's voter set is membership
\* only, and no guard or invariant reads endpoints, so the record appended is
\* the unchanged membership: what the action adds is a VotersRecord that must
\* commit before any other voter change (UpdateVoterHandler checks, in order:
\* no operation pending, the HW known in this epoch, kraft.version >= 1, the
\* last VotersRecord committed; the request's own checks only refuse). The
\* RPC is abstracted: refusals change nothing, and the leader answers at once
\* without waiting for the commit, so the reply is not modelled either.
UpdateVoter(n, x) ==
    /\ UpdateVoters
    /\ VoterChangeAllowed(n)
    /\ x \in Others(n)
    /\ AppendVoters(n, VoterSet(n))

\* A leader whose own removal is committed resigns and tells the voters
\* (RemoveVoterHandler.highWatermarkUpdated, LeaderState.requestResign,
\* KafkaRaftClient.pollLeader).
ResignAfterRemoval(n) ==
    /\ role[n] = "Leader"
    /\ ~IsVoter(n)
    /\ VotersCommitted(n)
    /\ Fits(EndQuorumEpochs(n, Others(n)))
    /\ Send(EndQuorumEpochs(n, Others(n)))
    /\ BecomeResigned(n)
    /\ UNCHANGED faults

----------------------------------------------------------------------------
(* Leader-local actions                                                    *)

\* A client record appended by the leader (not yet flushed). A value is
\* appended at most once per log (a client retries only if it is missing).
ClientAppend(n, v) ==
    /\ role[n] = "Leader"
    /\ EndOffset(n) < MaxLogLen
    /\ \A i \in DOMAIN log[n] : log[n][i].value # v
    /\ \A s \in snapshots[n] : v \notin Range(s.values)
    /\ log' = [log EXCEPT ![n] = Append(@, Rec(currentEpoch[n], v))]
    /\ UNCHANGED <<quorumVars, flushedOffset, highWatermark, logStartOffset, snapshots, leaderVars, votesGranted,
                   messages, ghostVars, restarts, diskVars, faults, elections>>

\* fsync the whole log; a leader's own flushed offset counts toward its HW.
Flush(n) ==
    /\ flushedOffset[n] < EndOffset(n)
    /\ flushedOffset' = [flushedOffset EXCEPT ![n] = EndOffset(n)]
    /\ IF role[n] = "Leader"
       THEN LET hw == NewHighWatermark(n, endOffsets[n], EndOffset(n))
            IN /\ highWatermark' = [highWatermark EXCEPT ![n] = hw]
               /\ committed' = CommitGhost(n, hw)
       ELSE UNCHANGED <<highWatermark, committed>>
    /\ UNCHANGED <<quorumVars, log, logStartOffset, snapshots, leaderVars, votesGranted, messages, elected,
                   coverage, restarts, diskVars, faults, elections>>

\* Check quorum (LeaderState.timeUntilCheckQuorumExpires): a leader that has
\* not heard fetches from a majority in time resigns. Time is not modelled,
\* so the leader may do so at any moment (a counted fault). Kafka resigns
\* here exactly as on a requested resignation: KafkaRaftClient.pollLeader
\* calls transitionToResigned with the other voters as preferred successors,
\* and pollResigned sends each of them EndQuorumEpoch. The leader resigns
\* because it lost contact, so requests to voters it cannot reach are lost
\* with the same fault: it tells some subset of the others (none, some, all).
CheckQuorumResign(n) ==
    /\ role[n] = "Leader"
    /\ FaultAllowed
    /\ \E reached \in SUBSET Others(n) :
          LET reqs == EndQuorumEpochs(n, reached)
          IN /\ Fits(reqs)
             /\ Send(reqs)
    /\ BecomeResigned(n)
    /\ CountFault

----------------------------------------------------------------------------
(* Crashes                                                                 *)

\* Crash and recover: the unflushed log suffix is lost, volatile state is
\* gone, the quorum state is reloaded (QuorumState.initialize): leader =
\* self -> Resigned in that epoch; a known leader -> Follower; voted for
\* self -> Candidate; otherwise Unattached (with its vote, if any). Messages
\* in flight stay in the network. The log start and the snapshots are durable
\* (a snapshot is frozen with an fsync before it counts; the log start is
\* checkpointed before the segments below it are deleted), so the log comes
\* back from the log start to the flushed offset.
Restart(n) ==
    /\ restarts < MaxRestarts
    /\ restarts' = restarts + 1
    /\ LET vf == IF ForgetVoteOnRestart /\ votedFor[n] # n THEN Nil ELSE votedFor[n]
       IN /\ votedFor' = [votedFor EXCEPT ![n] = vf]
          /\ role' = [role EXCEPT ![n] =
                 IF leader[n] = n THEN "Resigned"
                 ELSE IF leader[n] # Nil THEN "Follower"
                 ELSE IF vf = n THEN "Candidate"
                 ELSE "Unattached"]
          /\ votesGranted' = [votesGranted EXCEPT ![n] =
                 IF leader[n] = Nil /\ vf = n THEN {n} ELSE {}]
    /\ log' = [log EXCEPT ![n] = SubSeq(@, 1, flushedOffset[n] - logStartOffset[n])]
    /\ highWatermark' = [highWatermark EXCEPT ![n] = 0]
    /\ endOffsets' = [endOffsets EXCEPT ![n] = ZeroOffsets]
    /\ epochStartOffset' = [epochStartOffset EXCEPT ![n] = 0]
    /\ Note(IF flushedOffset[n] < EndOffset(n) THEN "restartLoss" ELSE "restart")
    /\ UNCHANGED <<currentEpoch, leader, flushedOffset, logStartOffset, snapshots, messages, committed, elected, faults,
                   elections, diskVars>>

\* A voter loses its disk and comes back empty (docs/quorum.md, "Losing a
\* disk"). Kafka's answer is KIP-853: the new disk has a new directory id, so
\* the replica is not that voter until it is re-added. The model: the voter
\* comes back in epoch 0 with an empty log and no quorum state, its
\* connections reset (every message from or to it is gone), and it is
\* awaitingLeader (persisted with the new quorum state): it grants no
\* (pre-)vote and starts no election until a leader's BeginQuorumEpoch makes
\* it a Follower. The precondition is the simulator's
\* (KRaftProtocol.can_lose_disk), and it is what makes this safe:
\*  - not a leader;
\*  - the committed prefix is durable on a majority of the *other* voters;
\*  - no leader counts a fetch offset for n that a majority of the other
\*    voters has not reached (the leader keeps n's old offset until n
\*    fetches again);
\*  - no voter is in an epoch below n's: n voted at most in epochs up to
\*    its own, and only a leader of a lower epoch could make it follow in an
\*    epoch it might vote in again (ElectionSafety).
\* These preconditions do not make the directory-id check redundant: n may
\* have voted in its epoch e while another Candidate of e still waits for
\* n's answer. The disk loss resets that connection, the Candidate sends
\* its request again (ResendVoteRequest), and only VoterKeyMatches keeps the
\* new disk from granting it: with IgnoreDirectoryIdInVote two Candidates of
\* e both win a majority (ElectionSafety).
DiskLossAllowed(n) ==
    /\ role[n] # "Leader"
    /\ IsQuorumOf({v \in Replicas \ {n} : /\ flushedOffset[v] >= Len(committed)
                                           /\ Holds(v, committed)}, CommittedVoters)
    /\ \A l \in Replicas :
          role[l] = "Leader" =>
             IsQuorumOf({v \in Replicas \ {n} :
                           (IF v = l THEN flushedOffset[l] ELSE endOffsets[l][v]) >= endOffsets[l][n]},
                        VoterSet(l))
    /\ \A v \in Replicas : currentEpoch[v] >= currentEpoch[n]

RestartWithDiskLoss(n) ==
    /\ diskLosses < MaxDiskLosses
    /\ DiskLossAllowed(n)
    /\ diskLosses' = diskLosses + 1
    /\ awaitingLeader' = [awaitingLeader EXCEPT ![n] = TRUE]
    /\ currentEpoch' = [currentEpoch EXCEPT ![n] = 0]
    /\ votedFor' = [votedFor EXCEPT ![n] = Nil]
    /\ leader' = [leader EXCEPT ![n] = Nil]
    /\ role' = [role EXCEPT ![n] = "Unattached"]
    /\ log' = [log EXCEPT ![n] = <<>>]
    /\ logStartOffset' = [logStartOffset EXCEPT ![n] = 0]
    /\ snapshots' = [snapshots EXCEPT ![n] = {}]
    /\ flushedOffset' = [flushedOffset EXCEPT ![n] = 0]
    /\ highWatermark' = [highWatermark EXCEPT ![n] = 0]
    /\ endOffsets' = [endOffsets EXCEPT ![n] = ZeroOffsets]
    /\ epochStartOffset' = [epochStartOffset EXCEPT ![n] = 0]
    /\ votesGranted' = [votesGranted EXCEPT ![n] = {}]
    /\ messages' = {m \in messages : m.msource # n /\ m.mdest # n}
    /\ Note("diskLoss")
    /\ UNCHANGED <<committed, elected, restarts, faults, elections, snapshotCount, voterChanges>>

\* The network loses a message. With Duplication the network may hold several
\* copies of m (a duplicate, or an identical re-send while m was in flight),
\* which the set `messages` cannot count: losing one of them leaves m in
\* flight.
DropMessage(m) ==
    /\ m \in messages
    /\ FaultAllowed
    /\ \/ messages' = messages \ {m}
       \/ Duplication /\ UNCHANGED messages
    /\ CountFault
    /\ UNCHANGED <<quorumVars, logVars, leaderVars, votesGranted, ghostVars, restarts, diskVars, elections>>

----------------------------------------------------------------------------
(* Next state                                                              *)

Receive(m) ==
    \/ HandleVoteRequest(m.mdest, m)
    \/ HandleVoteResponse(m.mdest, m)
    \/ HandleBeginQuorumEpochRequest(m.mdest, m)
    \/ HandleEndQuorumEpochRequest(m.mdest, m)
    \/ HandleFetchRequest(m.mdest, m)
    \/ HandleFetchResponse(m.mdest, m)
    \/ HandleFetchSnapshotRequest(m.mdest, m)
    \/ HandleFetchSnapshotResponse(m.mdest, m)

\* (Receive is spelled out in Next, one handler per disjunct, so that each step
\* of a TLC trace can be named after its handler.)
Next ==
    \/ \E n \in Replicas :
          \/ Timeout(n)
          \/ BecomeCandidate(n)
          \/ BecomeLeader(n)
          \/ SendFetchRequest(n)
          \/ Flush(n)
          \/ CheckQuorumResign(n)
          \/ Resign(n)
          \/ Restart(n)
          \/ RestartWithDiskLoss(n)
          \/ \E d \in Replicas : SendBeginQuorumEpoch(n, d)
          \/ \E d \in Replicas : ResendVoteRequest(n, d)
          \/ \E v \in Values : ClientAppend(n, v)
          \/ \E k \in 1..MaxLogLen : TakeSnapshot(n, k)
          \/ \E o \in 1..MaxLogLen : DeleteBeforeSnapshot(n, o)
          \/ \E x \in Replicas : AddVoter(n, x)
          \/ \E x \in Replicas : RemoveVoter(n, x)
          \/ \E x \in Replicas : UpdateVoter(n, x)
          \/ ResignAfterRemoval(n)
          \/ \E d \in Replicas : SendAnyVoterFetch(n, d)
    \/ \E m \in messages : HandleVoteRequest(m.mdest, m)
    \/ \E m \in messages : HandleVoteResponse(m.mdest, m)
    \/ \E m \in messages : HandleBeginQuorumEpochRequest(m.mdest, m)
    \/ \E m \in messages : HandleEndQuorumEpochRequest(m.mdest, m)
    \/ \E m \in messages : HandleFetchRequest(m.mdest, m)
    \/ \E m \in messages : HandleFetchResponse(m.mdest, m)
    \/ \E m \in messages : HandleFetchSnapshotRequest(m.mdest, m)
    \/ \E m \in messages : HandleFetchSnapshotResponse(m.mdest, m)
    \/ \E m \in messages : DropMessage(m)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
(* Liveness (KRaft_liveness.cfg). Healing actions are fair; faults         *)
(* are bounded by MaxFaults/MaxRestarts, so they happen finitely often.    *)

NeededTimeout(n) == ~TimeoutIsFault(n) /\ Timeout(n)

\* Fairness is stated per action class and per message type, not per voter
\* or per (source, destination): "while some voter can time out (fetch,
\* flush, ...), some voter eventually does", "while some message of type t
\* can be received, some message of type t eventually is". A scheduler may
\* starve one voter or one message as long as it keeps doing that kind of
\* work elsewhere; the properties hold anyway (a majority suffices). The
\* coarse form is also what keeps TLC's temporal check cheap: each conjunct
\* is one more predicate (with ENABLED) evaluated on every edge of the
\* behaviour graph; per (source, destination, type) the check of the same
\* 55k-state graph took 5 min, this way 2 s (docs/kraft-spec.md).
\*
\* BeginQuorumEpoch is how followers find a new leader (KafkaRaftClient: a
\* Kafka leader pushes nothing else), so its fairness is kept apart: without
\* it a leader is elected but nothing is ever committed (LiveSpecNoBQE, the
\* broken spec tests/quorum/spec shows failing EventuallyCommitted).
BQEFairness ==
    WF_vars(\E n, d \in Replicas : BQEFree(n, d) /\ SendBeginQuorumEpoch(n, d))

\* aliveOnly: only a fetch to a leader still leading is fair (the crash model,
\* CrashLiveSpec below); otherwise every fetch is.
FairnessNoBQEWith(aliveOnly) ==
    \* strong fairness where a re-timeout can disable the step again
    /\ SF_vars(\E n \in Replicas : NeededTimeout(n))
    /\ SF_vars(\E n \in Replicas : BecomeCandidate(n))
    /\ SF_vars(\E n \in Replicas : BecomeLeader(n))
    /\ SF_vars(\E n \in Replicas, v \in Values : ClientAppend(n, v))
    \* fair only where no fault is needed (a fault budget is never forced)
    /\ WF_vars(\E n \in Replicas : (~aliveOnly \/ LeaderAlive(n)) /\ ~FetchOutstanding(n) /\ SendFetchRequest(n))
    /\ WF_vars(\E n \in Replicas : Flush(n))
    \* delivery: a message type whose messages can keep being received is
    \* eventually received (which message of that type is not promised)
    /\ \A t \in MessageTypes :
          WF_vars(\E m \in messages : /\ m.mtype = t
                                     /\ Receive(m) /\ m \notin messages')

FairnessNoBQE == FairnessNoBQEWith(FALSE)
Fairness == FairnessNoBQE /\ BQEFairness

LiveSpec == Spec /\ Fairness

\* For FollowersCatchUp, a property of every voter rather than of a majority,
\* fetching is fair per voter: each follower that can fetch eventually does,
\* and its fetch traffic (Fetch and FetchSnapshot, both ways) is eventually
\* received. The coarse per-type fairness above lets one follower's stale
\* answer sit in the network forever while the others' are delivered.
FetchTypes == {"FetchRequest", "FetchResponse", "FetchSnapshotRequest", "FetchSnapshotResponse"}
CatchUpFairness ==
    \A n \in Replicas :
       /\ WF_vars(~FetchOutstanding(n) /\ SendFetchRequest(n))
       /\ WF_vars(\E m \in messages : /\ m.mtype \in FetchTypes
                                      /\ n \in {m.msource, m.mdest}
                                      /\ Receive(m) /\ m \notin messages')
CatchUpLiveSpec == LiveSpec /\ CatchUpFairness

\* The states right after the first election of the liveness models (one
\* round, MaxElections = 1): the voter `FirstLeader` has just become Leader
\* of epoch 1 (its LeaderChange record appended, unflushed) with a majority
\* of the voters' votes; every vote response has been delivered; a voter that
\* has not voted yet has the leader's VoteRequest in flight (fault-free: it
\* is not lost). Every such state is reachable from Init, so every behaviour
\* from it is the suffix of a behaviour of Spec. The voters are
\* interchangeable, so which one leads does not matter. A voter change
\* needs a leader that has committed in its epoch (VoterChangeAllowed), so
\* starting here drops only the election, which EventuallyLeader covers from
\* Init (KRaft_liveness.cfg); the election's interleavings are most of that
\* model's state space.
FirstLeader == CHOOSE l \in Voters : TRUE
ElectedInit ==
    \E voted \in SUBSET (Voters \ {FirstLeader}) :
       LET inEpoch == voted \cup {FirstLeader}
       IN /\ IsQuorumOf(inEpoch, Voters)
          /\ currentEpoch = [n \in Replicas |-> IF n \in inEpoch THEN 1 ELSE 0]
          /\ votedFor = [n \in Replicas |-> IF n \in inEpoch THEN FirstLeader ELSE Nil]
          /\ leader = [n \in Replicas |-> IF n = FirstLeader THEN FirstLeader ELSE Nil]
          /\ role = [n \in Replicas |-> IF n = FirstLeader THEN "Leader" ELSE "Unattached"]
          /\ log = [n \in Replicas |-> IF n = FirstLeader THEN <<Rec(1, LeaderChange)>> ELSE <<>>]
          /\ logStartOffset = [n \in Replicas |-> 0]
          /\ snapshots = [n \in Replicas |-> {}]
          /\ flushedOffset = [n \in Replicas |-> 0]
          /\ highWatermark = [n \in Replicas |-> 0]
          /\ endOffsets = [n \in Replicas |-> ZeroOffsets]
          /\ epochStartOffset = [n \in Replicas |-> 0]
          /\ votesGranted = [n \in Replicas |-> {}]
          /\ messages = {r \in VoteRequestsFrom(FirstLeader, 1, 0, 0, FALSE) : r.mdest \notin inEpoch}
          /\ committed = <<>>
          /\ elected = {<<1, FirstLeader>>}
          /\ coverage = {}
          /\ restarts = 0
          /\ faults = 0
          /\ elections = IF MaxElections < 0 THEN 0 ELSE 1   \* unbounded: not counted
          /\ awaitingLeader = [n \in Replicas |-> FALSE]
          /\ diskLosses = 0
          /\ snapshotCount = 0
          /\ voterChanges = 0

\* ReconfigurationNotStuck is checked from the end of the first election,
\* under the fairness of FollowersCatchUp: the new voter set's majority is
\* particular voters, each of which must fetch. A voter change itself is not
\* fair (it is the admin client's request).
ReconfigLiveSpec == ElectedInit /\ [][Next]_vars /\ Fairness /\ CatchUpFairness
\* The same without per-voter fetch fairness: a removed voter can keep
\* fetching while a voter of the new set never does (the broken spec that
\* tests/quorum/spec shows failing ReconfigurationNotStuck).
ReconfigLiveSpecCoarse == ElectedInit /\ [][Next]_vars /\ Fairness
LiveSpecNoBQE == Spec /\ FairnessNoBQE

\* ---- Failover: a leader is elected again after its leader crashed ----
\* (KRaft_crashliveness.cfg). Checked from ElectedInit (every state of it
\* reachable from Init, above), with one crash of a leader (Restart: Kafka
\* restarts it Resigned in its epoch, QuorumState.initialize) and no other
\* fault. The crash comes once the leader has committed in its epoch (so the
\* survivors must elect a voter holding its LeaderChange record) and only
\* while a spare epoch exists (SpareEpoch), so the failover never meets the
\* epoch bound; election rounds are not bounded (MaxElections = Unbounded: a
\* pre-vote round bumps no epoch, so the state space stays finite). Every
\* behaviour of CrashLiveSpec is a suffix of one of Spec: every CrashNext step
\* is a Next step (a LeaderCrash step is a Restart step).
\*
\* SpareEpoch(n): the epoch above the leader's is still free: no voter has reached it and
\* no round toward it is under way (a Prospective whose pre-votes predate
\* the crash may hold a majority won on logs that the leader's fetches have
\* since overtaken: as a Candidate of the last epoch it is refused and
\* nothing can follow it, an artifact of the epoch bound).
SpareEpoch(n) ==
    /\ currentEpoch[n] < MaxEpoch
    /\ \A v \in Replicas : currentEpoch[v] <= currentEpoch[n]
                         /\ role[v] \notin {"Prospective", "Candidate"}
LeaderCrash(n) ==
    /\ role[n] = "Leader"
    /\ highWatermark[n] > 0
    /\ SpareEpoch(n)
    /\ Restart(n)
\* A crash here is instantaneous: the leader is back at once, Resigned, and
\* answers its followers' fetches with an error that changes nothing
\* (HandleFetchResponse). In Kafka the follower's fetch timer runs on
\* regardless and fires after finitely many such fetches (FollowerState
\* hasFetchTimeoutExpired, reset only by a successful fetch). In the model
\* time is not modelled and the network holds MaxInFlight messages: two
\* followers fetching from the crashed leader in turn keep one fetch always
\* in flight, so the vote requests of an election never fit and no timer can
\* fire (the lasso docs/kraft-spec.md describes). A fetch to a leader that is
\* not leading any more is therefore not sent in this model (it is down: the
\* connection fails and nothing enters the network), and it is not fair
\* (CrashFairness).
FetchToDeadLeader ==
    \E m \in messages' \ messages : /\ m.mtype = "FetchRequest"
                                   /\ role[m.msource] = "Follower"
                                   /\ ~LeaderAlive(m.msource)
CrashNext ==
    \/ Next /\ UNCHANGED restarts /\ ~FetchToDeadLeader
    \/ \E n \in Replicas : LeaderCrash(n)

\* After the crash, the survivors' election timers fire (Kafka: a Follower's
\* fetch timer, KafkaRaftClient.pollFollowerAsVoter, then an Unattached or
\* Resigned voter's election timer, pollUnattached/pollResigned; with pre-vote
\* QuorumState.transitionToProspective, then transitionToCandidate on a
\* majority of pre-votes). The coarse Fairness lets the crashed leader
\* campaign forever while the followers refuse its pre-votes (a Follower may:
\* FollowerState.canGrantVote, hasFetchedFromLeader) and never time out
\* themselves. Kafka randomizes each voter's election timeout
\* (QuorumState.randomElectionTimeoutMs: election.timeout.ms plus a random
\* jitter), so each voter's timer eventually fires first: a needed timeout is
\* strongly fair per voter. That is enough: a voter with the most up-to-date
\* log eventually campaigns, and no fairness on a Follower's pre-vote answer is
\* needed (with it and the coarse timeouts, TLC still finds the starvation).
ElectionFairness == \A n \in Replicas : SF_vars(NeededTimeout(n))

CrashFairness == FairnessNoBQEWith(TRUE) /\ BQEFairness
CrashLiveSpec == ElectedInit /\ [][CrashNext]_vars /\ CrashFairness /\ ElectionFairness
\* The same without ElectionFairness (the broken spec that tests/quorum/spec
\* shows failing LeaderAfterCrash).
CrashLiveSpecCoarse == ElectedInit /\ [][CrashNext]_vars /\ CrashFairness

\* Some leader is eventually elected.
EventuallyLeader == <>(\E n \in Replicas : role[n] = "Leader")

\* A leader that crashed is followed by a leader of a later epoch. A crashed
\* leader restarts Resigned and keeps itself as the leader of its epoch
\* (leader[n] = n, role not Leader) until it hears of a later epoch; e is that
\* epoch. Not vacuous: from every start state a behaviour reaches a
\* LeaderCrash, and CrashLiveSpecCoarse fails it.
CrashedLeaderIn(e) == \E n \in Replicas : leader[n] = n /\ role[n] # "Leader" /\ currentEpoch[n] = e
LeaderAfterCrash ==
    \A e \in 1..MaxEpoch :
       CrashedLeaderIn(e) ~> \E l \in Replicas : role[l] = "Leader" /\ currentEpoch[l] > e

\* Every client value is eventually committed (clients retry to the leader).
EventuallyCommitted ==
    \A v \in Values : <>(\E i \in DOMAIN committed : committed[i].value = v)

\* Every voter eventually holds everything committed and keeps holding it,
\* however far behind the leader's log start it was (through a snapshot).
FollowersCatchUp ==
    <>[](\A n \in Replicas : EndOffset(n) >= Len(committed))

\* A voter change the leader accepted is eventually answered (the property of
\* the KIP-853 spec, Vanlightly/kafka-tlaplus kraft/kip_853
\* kraft_kip_853_properties.tla, ReconfigurationNotStuck). A refused
\* AddRaftVoter/RemoveRaftVoter changes nothing (VoterChangeAllowed), so the
\* requests to follow are the accepted ones: a leader holding a VotersRecord
\* above its high watermark. Kafka answers once its high watermark passes the
\* record, i.e. the new voter set committed it (AddVoterHandler and
\* RemoveVoterHandler.highWatermarkUpdated), or fails the request when the
\* leader stops leading (LeaderState.close: NOT_LEADER_OR_FOLLOWER). The
\* REQUEST_TIMED_OUT answer of an operation that outlives its timer
\* (LeaderState.maybeExpirePendingOperation) is not progress here: the
\* record stays in the leader's log, and it must still be committed.
VoterChangePending(n) == role[n] = "Leader" /\ ~VotersCommitted(n)
ReconfigurationNotStuck ==
    \A n \in Replicas : VoterChangePending(n) ~> ~VoterChangePending(n)

----------------------------------------------------------------------------
(* Safety properties                                                       *)

TypeOK ==
    /\ currentEpoch \in [Replicas -> 0..MaxEpoch]
    /\ votedFor \in [Replicas -> Replicas \cup {Nil}]
    /\ leader \in [Replicas -> Replicas \cup {Nil}]
    /\ role \in [Replicas -> Roles]
    /\ \A n \in Replicas :
          /\ log[n] \in Seq([epoch : 0..MaxEpoch, value : Values \cup {LeaderChange, VotersChange},
                             voters : SUBSET Replicas])
          /\ logStartOffset[n] \in 0..MaxLogLen
          /\ flushedOffset[n] \in logStartOffset[n]..EndOffset(n)
          /\ \A s \in snapshots[n] : /\ s.end \in 1..MaxLogLen /\ s.epoch \in 0..MaxEpoch
                                     /\ s.voters \subseteq Replicas /\ s.voters # {}
                                     /\ s.values \in Seq(Values)
          /\ highWatermark[n] \in 0..MaxLogLen
          /\ endOffsets[n] \in [Replicas -> 0..MaxLogLen]
          /\ epochStartOffset[n] \in 0..MaxLogLen
          /\ votesGranted[n] \subseteq Replicas
    /\ \A m \in messages :
          /\ m.mtype \in MessageTypes
          /\ m.msource \in Replicas /\ m.mdest \in Replicas /\ m.msource # m.mdest
          /\ m.mepoch \in 0..MaxEpoch
          /\ m.mtype = "FetchResponse" => m.mresult \in {"Ok", "Diverging", "FencedEpoch", "Snapshot"}
          /\ m.mtype = "FetchSnapshotResponse" => m.mresult \in {"Ok", "SnapshotNotFound", "FencedEpoch"}
    /\ restarts \in 0..MaxRestarts
    /\ awaitingLeader \in [Replicas -> BOOLEAN]
    /\ diskLosses \in 0..MaxDiskLosses
    /\ snapshotCount \in 0..MaxSnapshots

\* At most one leader per epoch, over the whole history (ghost `elected`).
ElectionSafety ==
    \A x, y \in elected : x[1] = y[1] => x[2] = y[2]

\* Two logs holding a record with the same offset and epoch agree on every
\* record up to and including it.
\* (Offsets below either log start are in snapshots: ConsistentCommittedData.)
LogMatching ==
    \A a, b \in Replicas :
       LET lo == Max(logStartOffset[a], logStartOffset[b])
       IN \A o \in lo..(Min(EndOffset(a), EndOffset(b)) - 1) :
             EntryAt(a, o).epoch = EntryAt(b, o).epoch =>
                \A p \in lo..o : EntryAt(a, p) = EntryAt(b, p)

\* n leads the newest epoch any leader was elected in. A deposed leader that
\* has not heard of a later epoch still has the Leader role; a later leader
\* may commit records of epochs before the deposed one's, which it never had
\* (Raft's Leader Completeness is over leaders of epochs after the commit).
NewestLeader(n) == role[n] = "Leader" /\ \A x \in elected : x[1] <= currentEpoch[n]

\* The newest leader's log holds every record committed in an earlier epoch.
LeaderCompleteness ==
    \A n \in Replicas :
       NewestLeader(n) => Holds(n, CommittedBefore(currentEpoch[n]))

\* The committed prefixes (up to each node's HW, and the ghost) agree.
\* (Every node's HW is within the committed prefix, which only grows, so two
\* nodes agreeing with it agree with each other.)
StateMachineSafety ==
    \A n \in Replicas :
       /\ highWatermark[n] <= Len(committed)
       /\ AgreesUpTo(n, committed, highWatermark[n])

\* The HW the newest leader exposes is never below what earlier epochs committed:
\* the global HW does not go backwards across leader changes (the reason
\* for the epochStartOffset condition, QuorumState.transitionToLeader).
MonotonicHighWatermark ==
    \A n \in Replicas :
       NewestLeader(n) /\ highWatermark[n] > 0
          => highWatermark[n] >= Len(CommittedBefore(currentEpoch[n]))

\* Every offset below a leader's HW is durably held by a majority of the
\* voter set the HW was computed with. That is the set in effect at the HW,
\* or, while the leader's latest VotersRecord is at or above the HW, its
\* latest set (one change at a time: no VotersRecord is appended after an
\* uncommitted one). Not simply the set at the HW: a majority of the new set
\* need not be one of the old (4 voters -> 3: 2 of the 3 are not 3 of the
\* 4); Raft's safety needs only that every majority of one meets every
\* majority of the other (Ongaro's dissertation, 4.1).
HolderSet(n, k) ==
    {v \in Replicas : /\ flushedOffset[v] >= k
                      /\ EndOffset(v) >= k
                      /\ \A o \in Max(logStartOffset[n], logStartOffset[v])..(k - 1) :
                            EntryAt(v, o) = EntryAt(n, o)}
MajorityReachedHighWatermark ==
    \A n \in Replicas :
       role[n] = "Leader" =>
          \/ IsQuorumOf(HolderSet(n, highWatermark[n]), VoterSetAt(n, highWatermark[n]))
          \/ IsQuorumOf(HolderSet(n, highWatermark[n]), VoterSet(n))

\* Durability: no committed record is ever lost: the ghost `committed` is a
\* prefix of the durable log of a majority of the committed voter set, or
\* of a voter set some replica holds past it (the uncommitted change it was
\* committed with; see MajorityReachedHighWatermark); by LeaderCompleteness,
\* every later leader's log holds it.
NoCommittedRecordLost ==
    LET holders == {v \in Replicas : flushedOffset[v] >= Len(committed) /\ Holds(v, committed)}
    IN \/ IsQuorumOf(holders, CommittedVoters)
       \/ \E n \in Replicas : IsQuorumOf(holders, VoterSet(n))

\* Every majority of the committed voter set meets every majority of the
\* newest leader's latest set, so no two leaders can be elected, nor two
\* records committed, by disjoint majorities. Why Kafka changes one voter at
\* a time and appends a change only when the last one is committed (Ongaro's
\* dissertation, 4.1): the newest leader's log holds at most one
\* VotersRecord past the committed prefix. (A deposed leader of an older
\* epoch may still hold an older set; it can commit nothing.)
MajoritiesMeet(a, b) ==
    LET ma == Cardinality(a) \div 2 + 1
        mb == Cardinality(b) \div 2 + 1
    IN Max(0, ma - Cardinality(a \ b)) + Max(0, mb - Cardinality(b \ a)) > Cardinality(a \cap b)
OverlappingMajorities ==
    \A n \in Replicas :
       NewestLeader(n) => MajoritiesMeet(CommittedVoters, VoterSet(n))

\* Epochs never decrease along a node's history: each entry's epoch is at
\* least that of the record before it, the first one's at least that of the
\* record before the log start (a leader epoch cache only grows:
\* LeaderEpochFileCache.assign).
LogEpochsMonotonic ==
    \A n \in Replicas : \A i \in DOMAIN log[n] :
       log[n][i].epoch >= IF i = 1 THEN BaseEpoch(n) ELSE log[n][i - 1].epoch

\* RaftEventSimulationTest.SnapshotAtLogStart: no snapshot ends below the log
\* start, and a log start past 0 is the end of a snapshot (the records below
\* it are somewhere).
SnapshotAtLogStart ==
    \A n \in Replicas :
       /\ \A s \in snapshots[n] : s.end >= logStartOffset[n]
       /\ logStartOffset[n] > 0 => \E s \in snapshots[n] : s.end = logStartOffset[n]

\* RaftEventSimulationTest.ConsistentCommittedData, for snapshots: every
\* snapshot ends within what is committed and holds exactly the values of
\* that prefix.
ConsistentCommittedData ==
    \A n \in Replicas : \A s \in snapshots[n] :
       /\ s.end <= Len(committed)
       /\ s.values = ValuesOf(SubSeq(committed, 1, s.end))
       /\ s.voters = LastVoters(SubSeq(committed, 1, s.end), Voters)

\* Per node, the HW never decreases while it stays Leader/Follower in an
\* epoch without restarting (action property).
HighWatermarkNeverDecreases ==
    [][\A n \in Replicas :
         (/\ role[n] \in {"Leader", "Follower"}
          /\ role'[n] = role[n]
          /\ currentEpoch'[n] = currentEpoch[n]
          /\ restarts' = restarts)
         => highWatermark'[n] >= highWatermark[n]]_vars

----------------------------------------------------------------------------
(* Sanity checks: each of these is FALSE somewhere in the small model; a   *)
(* test checks each as an invariant and expects a violation, proving the   *)
(* model reaches the interesting states.                                   *)

NoLeaderEver == \A n \in Replicas : role[n] # "Leader"
NothingCommitted == Len(committed) = 0
NoValueCommitted == \A i \in DOMAIN committed : committed[i].value = LeaderChange
NoTruncation == "truncate" \notin coverage
NoRestartLoss == "restartLoss" \notin coverage
NoDiskLoss == "diskLoss" \notin coverage
NoPreVote == "preVote" \notin coverage
NoResignedLeader == \A n \in Replicas : role[n] # "Resigned"
NoSecondEpochLeader == \A x \in elected : x[1] < 2
NoSnapshotInstalled == "installSnapshot" \notin coverage
NoLogStartMoved == \A n \in Replicas : logStartOffset[n] = 0
NoObserverAdded == \A n \in Replicas : VoterSet(n) \cap Observers = {}
NoVoterRemoved == \A n \in Replicas : Voters \subseteq VoterSet(n)
NoRemovedLeaderResigned == \A n \in Replicas : ~(role[n] = "Resigned" /\ ~IsVoter(n))
NoLeaderAfterRemoval == \A n \in Replicas : role[n] = "Leader" /\ currentEpoch[n] > 1 => Voters \subseteq VoterSet(n)
\* an UpdateVoter record: a VotersRecord that keeps the membership before it
UpdatedAt(n, i) == /\ log[n][i].value = VotersChange
                   /\ log[n][i].voters = LastVoters(SubSeq(log[n], 1, i - 1), BaseVoters(n))
NoVoterUpdated == \A n \in Replicas : \A i \in DOMAIN log[n] : ~UpdatedAt(n, i)
NoChangeAfterVoterUpdate == \A n \in Replicas : \A i, j \in DOMAIN log[n] :
    ~(i < j /\ UpdatedAt(n, i) /\ log[n][j].value = VotersChange /\ ~UpdatedAt(n, j))
=============================================================================
