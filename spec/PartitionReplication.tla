------------------------- MODULE PartitionReplication -------------------------
(***************************************************************************)
(* Partition replication in Apache Kafka with a KRaft controller: one      *)
(* partition, its replicas' logs, ISR / ELR, high watermark, acks, and     *)
(* leader elections, as Kafka trunk does them.                             *)
(*                                                                         *)
(* Sources (facts, not code), apache/kafka:                                *)
(*  core/src/main/scala/kafka/cluster/Partition.scala                      *)
(*    makeLeader       a new leader epoch records the leader-epoch start   *)
(*                     offset (LESO = LEO) and resets the followers' state;*)
(*                     a partition epoch older than the local one is       *)
(*                     skipped; the committed ISR replaces any pending one *)
(*    makeFollower     no truncation (truncation happens on fetch, below)  *)
(*    maybeIncrementLeaderHW  HW = min LEO over the maximal ISR, never     *)
(*                     lowered, not advanced while isUnderMinIsr (the      *)
(*                     committed ISR is below min.insync.replicas,         *)
(*                     KAFKA-15583)                                        *)
(*    isFollowerInSync follower LEO >= HW and >= LESO (KAFKA-7128)         *)
(*    canAddReplicaToIsr / isReplicaIsrEligible  no ISR change in flight,  *)
(*                     not in the ISR, broker not fenced, not shutting     *)
(*                     down, fetch broker epoch = metadata broker epoch    *)
(*                     (KIP-903)                                           *)
(*    maybeShrinkIsr   followers behind the leader's LEO for              *)
(*                     replica.lag.time.max.ms (here: a nondeterministic   *)
(*                     lag event) are proposed out                         *)
(*    fetchRecords / readRecords  current-leader-epoch fencing             *)
(*                     (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH,        *)
(*                     KIP-320), diverging epoch from lastFetchedEpoch;    *)
(*                     follower state is updated only when not diverging   *)
(*    appendRecordsToLeader  acks=all rejected with NOT_ENOUGH_REPLICAS    *)
(*                     when the committed ISR is below min ISR             *)
(*    checkEnoughReplicasReachOffset  acks=all answered once HW passes the *)
(*                     record: OK if ISR >= min ISR, else                  *)
(*                     NOT_ENOUGH_REPLICAS_AFTER_APPEND                    *)
(*    handleAlterPartitionUpdate / handleAlterPartitionError               *)
(*  core/src/main/scala/kafka/server/AbstractFetcherThread.scala           *)
(*    getOffsetTruncationState  truncate to min(leader end offset,         *)
(*                     own end offset of the largest epoch <= the leader's *)
(*                     diverging epoch) (KIP-279)                          *)
(*  metadata/src/main/java/org/apache/kafka/controller/                    *)
(*    ReplicationControlManager.alterPartition / validateAlterPartitionData*)
(*                     validation order: broker epoch, leader epoch,       *)
(*                     leader, partition epoch, ISR holds the leader,      *)
(*                     RECOVERING rules, ineligible replicas               *)
(*    ReplicationControlManager.handleBrokerFenced / handleBrokerUnfenced /*)
(*                     handleBrokerInControlledShutdown /                  *)
(*                     handleBrokerUncleanShutdown / generateLeaderAndIsr- *)
(*                     Updates (isAcceptableLeader)                        *)
(*    PartitionChangeBuilder.build / maybePopulateTargetElr / tryElection  *)
(*                     / electAnyLeader / isValidNewLeader  (KIP-966)      *)
(*  metadata/src/main/java/org/apache/kafka/image/loader/MetadataLoader    *)
(*    handleCommit     a broker applies the committed batches it fetched,  *)
(*                     so any committed prefix of the metadata log         *)
(*    stillNeedToCatchUp  nothing is published at start-up before the     *)
(*                     loader reached the quorum's high watermark          *)
(*                                                                         *)
(* Vocabulary shared with kraft/controller and kraft/replication:          *)
(* docs/contracts.md section 9. Decisions and numbers:                     *)
(* docs/replication-spec.md.                                               *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Brokers,          \* {1, ..., N}: every broker is a replica, in ascending order
    MinIsr,           \* min.insync.replicas
    MaxProduce,       \* client records (the n-th produced record has value n)
    MaxLeaderEpoch,   \* no election may move the leader epoch past this
    MaxRestarts,      \* broker restarts (RestartBroker) in a behaviour
    MaxControlledShutdowns,
    MaxUncleanShutdowns,
    MaxDiskLosses,    \* restarts with an empty disk
    MaxShrinks,       \* lag events (ShrinkIsr)
    MaxFences,        \* missed-heartbeat fencings (FenceBroker)
    ClientAcks,       \* the acks settings clients use: a subset of {-1, 0, 1}
    NetworkFaults,    \* the network may lose a message, or deliver one and keep a copy
                      \* (FALSE in every model-checking cfg; TRUE for trace conformance)
    ReplayEqualEpoch, \* makeLeader re-applies an EQUAL partition epoch, as Kafka does (FALSE in
                      \* every cfg and for trace conformance: see ReplayMetadata)
    NoOpFetches,      \* a fetch that would change nothing is sent too, as Kafka does (FALSE in
                      \* every model-checking cfg: a state-space reduction; TRUE for conformance)
    \* ---- historical bugs (all FALSE in every cfg) ----
    TruncateToHighWatermark,   \* KAFKA-1211: a new follower truncates to its HW (before KIP-101)
    EpochLookupKip101,         \* KAFKA-6361: divergence by end offset only (before KIP-279)
    Kip320FirstTry,            \* leader counts a diverged follower's fetch offset (truncation deferred to the fetch)
    IsrJoinBeforeEpochStart,   \* KAFKA-7128: ISR join without LEO >= LESO
    HwAdvanceUnderMinIsr,      \* before KAFKA-15583: HW advances with ISR < min ISR
    LastReplicaStanding,       \* before KIP-966: no ELR, the last ISR member stays, unclean shutdown ignored
    StaleAlterPartitionRejoin, \* before KIP-903: no broker epochs in AlterPartition / fetch eligibility
    UncleanElection            \* unclean.leader.election.enable=true

Variants == <<TruncateToHighWatermark, EpochLookupKip101, Kip320FirstTry, IsrJoinBeforeEpochStart,
              HwAdvanceUnderMinIsr, LastReplicaStanding, StaleAlterPartitionRejoin, UncleanElection>>

ASSUME /\ Brokers = 1..Cardinality(Brokers) /\ Cardinality(Brokers) >= 1
       /\ MinIsr \in 1..Cardinality(Brokers)
       /\ \A c \in {MaxProduce, MaxLeaderEpoch, MaxRestarts, MaxControlledShutdowns, MaxUncleanShutdowns, MaxDiskLosses,
                    MaxShrinks, MaxFences} : c \in Nat
       /\ ClientAcks \subseteq {-1, 0, 1}
       /\ NetworkFaults \in BOOLEAN /\ NoOpFetches \in BOOLEAN /\ ReplayEqualEpoch \in BOOLEAN
       /\ \A i \in 1..8 : Variants[i] \in BOOLEAN

NoLeader == -1
ElrEnabled == ~LastReplicaStanding
Acks == {-1, 0, 1}
\* cfg files cannot write negative numbers: `ClientAcks <- AcksAllOnly`.
AcksAllOnly == {-1}
AnyAcks == Acks
Recovered == "RECOVERED"
Recovering == "RECOVERING"
\* ClusterControlManager keeps a registration's fenced and inControlledShutdown
\* flags apart: replaying a FenceBrokerRecord (or UnfenceBrokerRecord) leaves
\* inControlledShutdown as it was, until the broker registers again. A broker
\* fenced during or after its controlled shutdown is "FencedInShutdown": never
\* unfenced (BrokerHeartbeatManager.currentBrokerState puts CONTROLLED_SHUTDOWN
\* before FENCED) nor acceptable (isActive).
BrokerStates == {"Unfenced", "Fenced", "ControlledShutdown", "FencedInShutdown"}
FencedStates == {"Fenced", "FencedInShutdown"}
ShutdownStates == {"ControlledShutdown", "FencedInShutdown"}

VARIABLES
    \* controller (kraft/controller): the committed metadata log and the image it yields
    metadataLog, metadataBatchEnds, leader, leaderEpoch, partitionEpoch, isr, elr, lastKnownElr,
    leaderRecoveryState, brokerEpoch, brokerState,
    \* brokers (kraft/replication)
    running, cleanShutdown, replayedOffset, log, highWatermark,
    localLeader, localLeaderEpoch, localPartitionEpoch, localIsr,
    alterPartitionInFlight, pendingIsr, leaderEpochStartOffset,
    followerEndOffset, followerBrokerEpoch,
    \* network
    messages,
    \* clients and ghosts
    nextValue, pendingProduce, acked, exposed, uncleanBrokers,
    \* bound counters (spec only)
    restarts, controlledShutdowns, uncleanShutdowns, diskLosses, shrinks, fences

ctlVars == <<metadataLog, metadataBatchEnds, leader, leaderEpoch, partitionEpoch, isr, elr, lastKnownElr,
             leaderRecoveryState, brokerEpoch, brokerState>>
partVars == <<leader, leaderEpoch, partitionEpoch, isr, elr, lastKnownElr, leaderRecoveryState>>
localVars == <<localLeader, localLeaderEpoch, localPartitionEpoch, localIsr,
               alterPartitionInFlight, pendingIsr, leaderEpochStartOffset,
               followerEndOffset, followerBrokerEpoch>>
clientVars == <<nextValue, pendingProduce, acked, exposed, uncleanBrokers>>
countVars == <<restarts, controlledShutdowns, uncleanShutdowns, diskLosses, shrinks, fences>>
vars == <<metadataLog, metadataBatchEnds, leader, leaderEpoch, partitionEpoch, isr, elr, lastKnownElr,
          leaderRecoveryState, brokerEpoch, brokerState,
          running, cleanShutdown, replayedOffset, log, highWatermark,
          localLeader, localLeaderEpoch, localPartitionEpoch, localIsr,
          alterPartitionInFlight, pendingIsr, leaderEpochStartOffset,
          followerEndOffset, followerBrokerEpoch,
          messages, nextValue, pendingProduce, acked, exposed, uncleanBrokers,
          restarts, controlledShutdowns, uncleanShutdowns, diskLosses, shrinks, fences>>

----------------------------------------------------------------------------
(* Helpers                                                                 *)

Min(a, b) == IF a < b THEN a ELSE b
Max(a, b) == IF a > b THEN a ELSE b
SetMin(S) == CHOOSE x \in S : \A y \in S : x <= y
SetMax(S) == CHOOSE x \in S : \A y \in S : x >= y
Prefix(l, k) == SubSeq(l, 1, Min(Max(k, 0), Len(l)))
IsPrefix(p, l) == Len(p) <= Len(l) /\ SubSeq(l, 1, Len(p)) = p
\* x = [offset, epoch, value] is in log l at its offset
HasAt(l, x) == x.offset < Len(l) /\ l[x.offset + 1] = [epoch |-> x.epoch, value |-> x.value]
Entries(l, k) == {[offset |-> i - 1, epoch |-> l[i].epoch, value |-> l[i].value] : i \in 1..Min(k, Len(l))}
LastEpoch(l) == IF Len(l) = 0 THEN -1 ELSE l[Len(l)].epoch
\* Leader epoch cache lookups, derived from the records' epochs (entries are
\* epoch-ordered): the end offset of the largest epoch <= e is the number of
\* entries with epoch <= e; that epoch is the epoch of the last of them.
EndOffsetForEpoch(l, e) == Cardinality({i \in DOMAIN l : l[i].epoch <= e})
LargestEpochAtMost(l, e) ==
    LET k == EndOffsetForEpoch(l, e) IN IF k = 0 THEN -1 ELSE l[k].epoch
NoBrokerInfo == [f \in Brokers |-> -1]

\* The controller's partition registration as a record ("image").
Img == [leader |-> leader, leaderEpoch |-> leaderEpoch, partitionEpoch |-> partitionEpoch,
        isr |-> isr, elr |-> elr, lastKnownElr |-> lastKnownElr,
        leaderRecoveryState |-> leaderRecoveryState]
PartitionRecord(p) == [type |-> "PartitionChange"] @@ p

\* ClusterControlManager.isActive: unfenced and not in controlled shutdown.
Active == {b \in Brokers : brokerState[b] = "Unfenced"}

(***************************************************************************)
(* PartitionChangeBuilder.build over image p: target ISR tIsr, leaders     *)
(* accepted `acceptable` (generateLeaderAndIsrUpdates' isAcceptableLeader),*)
(* brokers that shut down uncleanly `uncleanSet`, target leader recovery   *)
(* state tLrs. Returns the new image (partitionEpoch bumped iff it changed)*)
(***************************************************************************)
Build(p, tIsr, acceptable, uncleanSet, tLrs) ==
    LET \* maybePopulateTargetElr
        popElr == ElrEnabled /\ Cardinality(tIsr) < MinIsr
        cand == p.elr \cup p.isr
        tElr0 == IF ~ElrEnabled THEN p.elr
                 ELSE IF ~popElr THEN {} ELSE (cand \ tIsr) \ uncleanSet
        tLke == IF ~ElrEnabled THEN p.lastKnownElr
                ELSE IF ~popElr THEN {} ELSE ((cand \cup p.lastKnownElr) \ tIsr) \ tElr0
        \* electAnyLeader / isValidNewLeader
        valid(r) == (r \in tIsr \/ (tIsr = {} /\ r \in tElr0)) /\ r \in acceptable
        validSet == {r \in Brokers : valid(r)}
        clean == IF p.leader # NoLeader /\ valid(p.leader) THEN p.leader
                 ELSE IF validSet # {} THEN SetMin(validSet) ELSE NoLeader
        uncleanPick == UncleanElection /\ clean = NoLeader /\ (acceptable \cap Brokers) # {}
        newLeader == IF uncleanPick THEN SetMin(acceptable \cap Brokers) ELSE clean
        changed == newLeader # p.leader
        \* tryElection
        fromElr == changed /\ newLeader \in tElr0
        tIsr1 == IF fromElr THEN {newLeader} ELSE tIsr
        tElr1 == IF fromElr THEN tElr0 \ {newLeader} ELSE tElr0
        unclean == changed /\ uncleanPick
        newIsr == IF unclean THEN {newLeader}
                  ELSE IF tIsr1 # {} \/ ElrEnabled THEN tIsr1 ELSE p.isr
        newLrs == IF unclean THEN Recovering ELSE tLrs
        q == [leader |-> newLeader,
              leaderEpoch |-> IF changed THEN p.leaderEpoch + 1 ELSE p.leaderEpoch,
              partitionEpoch |-> p.partitionEpoch,
              isr |-> newIsr, elr |-> tElr1, lastKnownElr |-> tLke,
              leaderRecoveryState |-> newLrs]
    IN IF q = p THEN p ELSE [q EXCEPT !.partitionEpoch = p.partitionEpoch + 1]

SetImg(p) ==
    /\ leader' = p.leader /\ leaderEpoch' = p.leaderEpoch /\ partitionEpoch' = p.partitionEpoch
    /\ isr' = p.isr /\ elr' = p.elr /\ lastKnownElr' = p.lastKnownElr
    /\ leaderRecoveryState' = p.leaderRecoveryState

\* The PartitionChange record for p, if p differs from the current image.
ChangeRecords(p) == IF p = Img THEN <<>> ELSE <<PartitionRecord(p)>>

\* A controller action appends its records as one batch (QuorumController
\* writes an operation's records atomically); metadataBatchEnds (a ghost: spec
\* only, not projected) remembers where each batch ends, because a broker
\* applies only whole committed batches (ReplayTargets).
AppendMetadata(recs) ==
    /\ metadataLog' = metadataLog \o recs
    /\ metadataBatchEnds' = IF recs = <<>> THEN metadataBatchEnds
                            ELSE metadataBatchEnds \cup {Len(metadataLog) + Len(recs)}

ElectionBoundOk(p) == p.leaderEpoch <= MaxLeaderEpoch

\* A metadata view: the last record about f among the first k records of the
\* metadata log (the ...At forms); a broker's view is the one at what it has
\* replayed.
BrokerRecsAt(k, f) == {i \in 1..k :
                        metadataLog[i].type # "PartitionChange" /\ metadataLog[i].broker = f}
ViewBrokerEpochAt(k, f) ==
    LET S == {i \in BrokerRecsAt(k, f) : metadataLog[i].type = "RegisterBroker"}
    IN IF S = {} THEN -1 ELSE SetMax(S)
ViewBrokerEpoch(b, f) == ViewBrokerEpochAt(replayedOffset[b], f)
ViewBrokerStateAt(k, f) ==
    LET S == BrokerRecsAt(k, f)
    IN IF S = {} THEN "Fenced"
       ELSE LET r == metadataLog[SetMax(S)]
            IN CASE r.type = "RegisterBroker" -> IF r.fenced THEN "Fenced" ELSE "Unfenced"
                 [] r.type = "FenceBroker" -> "Fenced"
                 [] r.type = "UnfenceBroker" -> "Unfenced"
                 [] OTHER -> "ControlledShutdown"
ViewBrokerState(b, f) == ViewBrokerStateAt(replayedOffset[b], f)

IsLeader(b) == running[b] /\ localLeader[b] = b
MaximalIsr(b) == localIsr[b] \cup (IF alterPartitionInFlight[b] THEN pendingIsr[b] ELSE {})

\* Partition.maybeIncrementLeaderHW for leader b with LEO `leo`, follower
\* offsets fe and committed ISR ci: the candidate is the minimum LEO over the
\* maximal ISR (an unknown follower offset, -1, blocks it); never lowered; not
\* advanced while the committed ISR is below min ISR.
LeaderHw(b, leo, fe, ci, maxIsr) ==
    LET cand == SetMin({leo} \cup {fe[r] : r \in maxIsr \ {b}})
    IN IF (Cardinality(ci) < MinIsr /\ ~HwAdvanceUnderMinIsr) \/ cand <= highWatermark[b]
       THEN highWatermark[b] ELSE cand

\* Partition.isReplicaIsrEligible (KRaft): not fenced, not shutting down, and
\* the broker epoch of its fetch unknown (-1) or the one in the metadata
\* (KIP-903); StaleAlterPartitionRejoin: no broker-epoch comparison.
IsrEligibleAt(k, f, fetchEpoch) ==
    /\ ViewBrokerStateAt(k, f) = "Unfenced"
    /\ \/ StaleAlterPartitionRejoin
       \/ fetchEpoch = -1 \/ ViewBrokerEpochAt(k, f) = -1
       \/ fetchEpoch = ViewBrokerEpochAt(k, f)
IsrEligible(l, f, fetchEpoch) == IsrEligibleAt(replayedOffset[l], f, fetchEpoch)

\* maybeIncrementLeaderHW also waits for a follower outside the maximal ISR
\* that is caught up (isCaughtUp: its LEO reached the leader's within
\* replica.lag.time.max.ms) and ISR-eligible (shouldWaitForReplicaToJoinIsr),
\* so an ISR join in flight or dropped by a metadata update is never overtaken
\* by the HW. Time is not modelled: any subset of the eligible followers whose
\* LEO the leader knows may count (a lower HW; the caught-up ones the
\* implementation counts are one of them).
\* (At the metadata view of the first k records: makeLeader on a replay reads
\* the image being applied, BrokerMetadataPublisher publishes it to the
\* metadata cache before ReplicaManager.applyDelta.)
CaughtUpOutsideAt(k, b, fe, fbe, maxIsr) ==
    {r \in Brokers \ (maxIsr \cup {b}) : fe[r] # -1 /\ IsrEligibleAt(k, r, fbe[r])}
HwChoicesAt(k, b, leo, fe, fbe, ci, maxIsr) ==
    {LeaderHw(b, leo, fe, ci, maxIsr \cup W) : W \in SUBSET CaughtUpOutsideAt(k, b, fe, fbe, maxIsr)}
HwChoices(b, leo, fe, fbe, ci, maxIsr) == HwChoicesAt(replayedOffset[b], b, leo, fe, fbe, ci, maxIsr)

\* Ghost: records that become readable when leader b's HW moves to hw.
Expose(b, l, hw) == exposed' = exposed \cup Entries(l, hw)

\* Drop every message to b (its connections closed).
DropTo(b) == {m \in messages : m.mtype # "AlterPartitionRequest" /\ m.mdest = b}
\* With NetworkFaults, a stopping broker's connections may also lose any of
\* the requests and answers it sent that are still in flight.
LostFrom(b) ==
    IF NetworkFaults
    THEN SUBSET {m \in messages : m.mtype # "AlterPartitionResponse" /\ m.msource = b}
    ELSE {{}}

\* Delivering m together with the replies it causes: the network consumes m
\* or, with NetworkFaults, keeps a copy that can be delivered again (a
\* duplicate; the set `messages` cannot count copies).
Deliver(m, replies) ==
    \/ messages' = (messages \ {m}) \cup replies
    \/ NetworkFaults /\ messages' = messages \cup replies

ResetLocal(b) ==
    /\ localLeader' = [localLeader EXCEPT ![b] = -1]
    /\ localLeaderEpoch' = [localLeaderEpoch EXCEPT ![b] = -1]
    /\ localPartitionEpoch' = [localPartitionEpoch EXCEPT ![b] = -1]
    /\ localIsr' = [localIsr EXCEPT ![b] = {}]
    /\ alterPartitionInFlight' = [alterPartitionInFlight EXCEPT ![b] = FALSE]
    /\ pendingIsr' = [pendingIsr EXCEPT ![b] = {}]
    /\ leaderEpochStartOffset' = [leaderEpochStartOffset EXCEPT ![b] = -1]
    /\ followerEndOffset' = [followerEndOffset EXCEPT ![b] = NoBrokerInfo]
    /\ followerBrokerEpoch' = [followerBrokerEpoch EXCEPT ![b] = NoBrokerInfo]

----------------------------------------------------------------------------
Init ==
    LET N == Cardinality(Brokers)
        first == SetMin(Brokers)
        p0 == [leader |-> first, leaderEpoch |-> 0, partitionEpoch |-> 0, isr |-> Brokers,
               elr |-> {}, lastKnownElr |-> {}, leaderRecoveryState |-> Recovered]
    IN
    /\ metadataLog = [i \in 1..N |-> [type |-> "RegisterBroker", broker |-> i, fenced |-> FALSE]]
                     \o <<PartitionRecord(p0)>>
    /\ metadataBatchEnds = {N + 1}   \* the bootstrap records every node is formatted with
    /\ leader = first /\ leaderEpoch = 0 /\ partitionEpoch = 0 /\ isr = Brokers
    /\ elr = {} /\ lastKnownElr = {} /\ leaderRecoveryState = Recovered
    /\ brokerEpoch = [b \in Brokers |-> b]
    /\ brokerState = [b \in Brokers |-> "Unfenced"]
    /\ running = [b \in Brokers |-> TRUE]
    /\ cleanShutdown = [b \in Brokers |-> TRUE]
    /\ replayedOffset = [b \in Brokers |-> N + 1]
    /\ log = [b \in Brokers |-> <<>>]
    /\ highWatermark = [b \in Brokers |-> 0]
    /\ localLeader = [b \in Brokers |-> first]
    /\ localLeaderEpoch = [b \in Brokers |-> 0]
    /\ localPartitionEpoch = [b \in Brokers |-> 0]
    /\ localIsr = [b \in Brokers |-> IF b = first THEN Brokers ELSE {}]
    /\ alterPartitionInFlight = [b \in Brokers |-> FALSE]
    /\ pendingIsr = [b \in Brokers |-> {}]
    /\ leaderEpochStartOffset = [b \in Brokers |-> IF b = first THEN 0 ELSE -1]
    /\ followerEndOffset = [b \in Brokers |-> NoBrokerInfo]
    /\ followerBrokerEpoch = [b \in Brokers |-> NoBrokerInfo]
    /\ messages = {}
    /\ nextValue = 1 /\ pendingProduce = {} /\ acked = {} /\ exposed = {} /\ uncleanBrokers = {}
    /\ restarts = 0 /\ controlledShutdowns = 0 /\ uncleanShutdowns = 0 /\ diskLosses = 0 /\ shrinks = 0 /\ fences = 0

----------------------------------------------------------------------------
(* Controller actions (kraft/controller)                                   *)

\* the state a fencing leaves: the controlled-shutdown flag survives it
FencedState(b) == IF brokerState[b] \in ShutdownStates THEN "FencedInShutdown" ELSE "Fenced"

\* handleBrokerFenced: remove b from the ISR (b never an acceptable leader),
\* elect; then the fencing record.
FenceRecords(b) ==
    LET p == IF b \in isr THEN Build(Img, isr \ {b}, Active \ {b}, {}, leaderRecoveryState) ELSE Img
    IN <<p, ChangeRecords(p) \o <<[type |-> "FenceBroker", broker |-> b]>>>>

\* Session timeout (missed heartbeats), nondeterministic: a live broker can
\* miss its heartbeats too.
FenceBroker(b) ==
    /\ brokerState[b] \notin FencedStates
    \* fencing a stopped broker is the expected consequence; a running one, a fault
    /\ running[b] => fences < MaxFences
    /\ LET r == FenceRecords(b) IN
       /\ ElectionBoundOk(r[1])
       /\ AppendMetadata(r[2])
       /\ SetImg(r[1])
    /\ brokerState' = [brokerState EXCEPT ![b] = FencedState(b)]
    /\ fences' = IF running[b] THEN fences + 1 ELSE fences
    /\ UNCHANGED <<brokerEpoch, running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localVars, messages, clientVars, restarts, controlledShutdowns, uncleanShutdowns, diskLosses, shrinks>>

\* handleBrokerUnfenced: a running broker that registered and replayed the
\* metadata up to its registration heartbeats; then partitions without a
\* leader elect (b acceptable). With NetworkFaults the broker may have stopped
\* since: its heartbeat was delayed, or the record appended on it committed
\* only after the stop (the metadata quorum's commit latency, atomic in the
\* model-checking sizes); the controller fences it again when its session
\* expires (FenceBroker). A broker fenced in its controlled shutdown stays
\* fenced until it registers again.
UnfenceBroker(b) ==
    /\ running[b] \/ NetworkFaults
    /\ brokerState[b] = "Fenced"
    /\ replayedOffset[b] >= brokerEpoch[b]
    /\ LET p == IF leader = NoLeader THEN Build(Img, isr, Active \cup {b}, {}, leaderRecoveryState)
                ELSE Img
       IN /\ ElectionBoundOk(p)
          /\ AppendMetadata(<<[type |-> "UnfenceBroker", broker |-> b]>> \o ChangeRecords(p))
          /\ SetImg(p)
    /\ brokerState' = [brokerState EXCEPT ![b] = "Unfenced"]
    /\ UNCHANGED <<brokerEpoch, running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localVars, messages, clientVars, countVars>>

\* handleBrokerInControlledShutdown: the broker asks to shut down. With
\* NetworkFaults the broker may have stopped since (as for UnfenceBroker): the
\* record appended on its request committed only after it crashed.
ControlledShutdown(b) ==
    /\ running[b] \/ NetworkFaults
    /\ brokerState[b] = "Unfenced"
    /\ controlledShutdowns < MaxControlledShutdowns
    /\ LET p == IF b \in isr THEN Build(Img, isr \ {b}, Active \ {b}, {}, leaderRecoveryState) ELSE Img
       IN /\ ElectionBoundOk(p)
          /\ AppendMetadata(<<[type |-> "ControlledShutdown", broker |-> b]>> \o ChangeRecords(p))
          /\ SetImg(p)
    /\ brokerState' = [brokerState EXCEPT ![b] = "ControlledShutdown"]
    /\ controlledShutdowns' = controlledShutdowns + 1
    /\ UNCHANGED <<brokerEpoch, running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localVars, messages, clientVars, restarts, uncleanShutdowns, diskLosses, shrinks, fences>>

\* ReplicationControlManager.alterPartition: validation in Kafka's order.
AlterPartitionError(m) ==
    LET newIsr == {x.broker : x \in m.mnewIsrWithEpochs}
    IN CASE m.mbrokerEpoch # brokerEpoch[m.msource] -> "STALE_BROKER_EPOCH"
         [] m.mleaderEpoch > leaderEpoch -> "NOT_CONTROLLER"
         [] m.mpartitionEpoch > partitionEpoch -> "NOT_CONTROLLER"
         [] m.mleaderEpoch < leaderEpoch -> "FENCED_LEADER_EPOCH"
         [] m.msource # leader -> "INVALID_REQUEST"
         [] m.mpartitionEpoch < partitionEpoch -> "INVALID_UPDATE_VERSION"
         [] leader \notin newIsr -> "INVALID_REQUEST"
         [] m.mleaderRecoveryState = Recovering /\ Cardinality(newIsr) > 1 -> "INVALID_REQUEST"
         [] leaderRecoveryState = Recovered /\ m.mleaderRecoveryState = Recovering -> "INVALID_REQUEST"
         [] (\E x \in m.mnewIsrWithEpochs :
               \/ brokerState[x.broker] # "Unfenced"
               \/ x.brokerEpoch # -1 /\ x.brokerEpoch # brokerEpoch[x.broker]) -> "INELIGIBLE_REPLICA"
         [] OTHER -> "NONE"

HandleAlterPartitionRequest(m) ==
    /\ m.mtype = "AlterPartitionRequest"
    /\ LET err == AlterPartitionError(m)
           p == Build(Img, {x.broker : x \in m.mnewIsrWithEpochs}, Active, {}, m.mleaderRecoveryState)
           ok == err = "NONE"
           \* the response echoes the request's proposal (Kafka's callback is
           \* per request: a leader that moved on ignores it)
           echo == [mrequestIsr |-> {x.broker : x \in m.mnewIsrWithEpochs},
                    mrequestPartitionEpoch |-> m.mpartitionEpoch]
           resp == IF ok
                   THEN [mtype |-> "AlterPartitionResponse", mdest |-> m.msource, merror |-> "NONE",
                         mleader |-> p.leader, mleaderEpoch |-> p.leaderEpoch,
                         mpartitionEpoch |-> p.partitionEpoch, misr |-> p.isr,
                         mleaderRecoveryState |-> p.leaderRecoveryState] @@ echo
                   ELSE [mtype |-> "AlterPartitionResponse", mdest |-> m.msource, merror |-> err,
                         mleader |-> -1, mleaderEpoch |-> -1, mpartitionEpoch |-> -1, misr |-> {},
                         mleaderRecoveryState |-> Recovered] @@ echo
       IN /\ ok => ElectionBoundOk(p)
          /\ IF ok THEN /\ AppendMetadata(ChangeRecords(p))
                        /\ SetImg(p)
                   ELSE UNCHANGED <<metadataLog, metadataBatchEnds, partVars>>
          \* the response reaches a running broker (a stopped one lost the connection)
          /\ Deliver(m, IF running[m.msource] THEN {resp} ELSE {})
    /\ UNCHANGED <<brokerEpoch, brokerState, running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localVars, clientVars, countVars>>

----------------------------------------------------------------------------
(* Broker lifecycle                                                        *)

\* After its controlled shutdown (leading nothing), or when fenced, the
\* broker stops cleanly: everything is flushed, the clean-shutdown marker is
\* written, the controller fences it.
CleanShutdown(b) ==
    /\ running[b]
    /\ \/ brokerState[b] = "ControlledShutdown" /\ leader # b
       \/ brokerState[b] \in FencedStates
    /\ LET r == FenceRecords(b) IN
       IF brokerState[b] \in FencedStates
       THEN UNCHANGED <<metadataLog, metadataBatchEnds, partVars>>
       ELSE /\ ElectionBoundOk(r[1])
            /\ AppendMetadata(r[2])
            /\ SetImg(r[1])
    /\ brokerState' = [brokerState EXCEPT ![b] = FencedState(b)]
    /\ running' = [running EXCEPT ![b] = FALSE]
    /\ cleanShutdown' = [cleanShutdown EXCEPT ![b] = TRUE]
    /\ \E lost \in LostFrom(b) : messages' = messages \ (DropTo(b) \cup lost)
    /\ pendingProduce' = {x \in pendingProduce : x.leader # b}
    /\ UNCHANGED <<brokerEpoch, replayedOffset, log, highWatermark, localVars>>
    /\ UNCHANGED <<nextValue, acked, exposed, uncleanBrokers, countVars>>

\* A crash: the log keeps the first k entries (what had been flushed).
UncleanShutdown(b, k) ==
    /\ running[b]
    /\ uncleanShutdowns < MaxUncleanShutdowns
    /\ k \in 0..Len(log[b])
    /\ running' = [running EXCEPT ![b] = FALSE]
    /\ cleanShutdown' = [cleanShutdown EXCEPT ![b] = FALSE]
    /\ log' = [log EXCEPT ![b] = Prefix(@, k)]
    /\ highWatermark' = [highWatermark EXCEPT ![b] = Min(@, k)]
    /\ \E lost \in LostFrom(b) : messages' = messages \ (DropTo(b) \cup lost)
    /\ pendingProduce' = {x \in pendingProduce : x.leader # b}
    /\ uncleanBrokers' = uncleanBrokers \cup {b}
    /\ uncleanShutdowns' = uncleanShutdowns + 1
    /\ UNCHANGED <<ctlVars, replayedOffset, localVars, nextValue, acked, exposed>>
    /\ UNCHANGED <<restarts, controlledShutdowns, diskLosses, shrinks, fences>>

\* Start and register (fenced, new broker epoch = offset of the record). If
\* the last shutdown was unclean (no clean-shutdown marker), the controller
\* removes b from ISR and ELR (handleBrokerUncleanShutdown, KIP-966).
Register(b, unclean) ==
    LET reg == [type |-> "RegisterBroker", broker |-> b, fenced |-> TRUE]
        acc == Active \ {b}
        p1 == IF b \in isr THEN Build(Img, isr \ {b}, acc, {b}, leaderRecoveryState) ELSE Img
        p2 == IF b \in p1.elr THEN Build(p1, p1.isr, acc, {b}, p1.leaderRecoveryState) ELSE p1
        p == IF unclean /\ ElrEnabled THEN p2 ELSE Img
        recs == IF unclean /\ ElrEnabled
                THEN ChangeRecords(p1) \o (IF p2 = p1 THEN <<>> ELSE <<PartitionRecord(p2)>>)
                ELSE <<>>
    IN /\ ElectionBoundOk(p)
       /\ AppendMetadata(<<reg>> \o recs)
       /\ brokerEpoch' = [brokerEpoch EXCEPT ![b] = Len(metadataLog) + 1]
       /\ brokerState' = [brokerState EXCEPT ![b] = "Fenced"]
       /\ SetImg(p)

RestartBroker(b) ==
    /\ ~running[b]
    /\ restarts < MaxRestarts
    /\ Register(b, ~cleanShutdown[b])
    /\ running' = [running EXCEPT ![b] = TRUE]
    /\ cleanShutdown' = [cleanShutdown EXCEPT ![b] = FALSE]
    /\ replayedOffset' = [replayedOffset EXCEPT ![b] = 0]
    /\ ResetLocal(b)
    /\ restarts' = restarts + 1
    /\ UNCHANGED <<log, highWatermark, messages, clientVars>>
    /\ UNCHANGED <<controlledShutdowns, uncleanShutdowns, diskLosses, shrinks, fences>>

RestartBrokerWithDiskLoss(b) ==
    /\ ~running[b]
    /\ diskLosses < MaxDiskLosses
    /\ Register(b, TRUE)
    /\ running' = [running EXCEPT ![b] = TRUE]
    /\ cleanShutdown' = [cleanShutdown EXCEPT ![b] = FALSE]
    /\ replayedOffset' = [replayedOffset EXCEPT ![b] = 0]
    /\ log' = [log EXCEPT ![b] = <<>>]
    /\ highWatermark' = [highWatermark EXCEPT ![b] = 0]
    /\ ResetLocal(b)
    /\ uncleanBrokers' = uncleanBrokers \cup {b}
    /\ diskLosses' = diskLosses + 1
    /\ UNCHANGED <<messages, nextValue, pendingProduce, acked, exposed>>
    /\ UNCHANGED <<restarts, controlledShutdowns, uncleanShutdowns, shrinks, fences>>

\* With NetworkFaults, a registration can take effect while its broker is
\* stopped: the request was delayed, or the broker crashed between sending it
\* and the commit of its record (the metadata quorum's commit latency). The
\* controller registers the broker (new epoch, fenced; unclean: out of ISR and
\* ELR); it stays stopped and registers again when it next starts.
RegisterStopped(b) ==
    /\ NetworkFaults
    /\ ~running[b]
    /\ Register(b, ~cleanShutdown[b])
    /\ UNCHANGED <<running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localVars, messages, clientVars, countVars>>

----------------------------------------------------------------------------
(* Brokers: metadata replay (kraft/replication)                            *)

\* The partition registration after the first k metadata records: the last
\* PartitionChange record at or before offset k (a record holds the whole
\* image). Defined only when there is one.
ImgAt(k) ==
    LET r == metadataLog[SetMax({i \in 1..k : metadataLog[i].type = "PartitionChange"})]
    IN [leader |-> r.leader, leaderEpoch |-> r.leaderEpoch, partitionEpoch |-> r.partitionEpoch,
        isr |-> r.isr, elr |-> r.elr, lastKnownElr |-> r.lastKnownElr,
        leaderRecoveryState |-> r.leaderRecoveryState]

\* How far a replay may go. Brokers are observers of __cluster_metadata: a
\* broker applies the committed batches it has fetched so far, so it may stop
\* at the end of any committed batch beyond what it applied (KafkaRaftClient
\* hands the MetadataLoader committed batches as its fetches bring them;
\* MetadataLoader.handleCommit publishes the image after them), not
\* necessarily at the end of the committed log. Never inside a batch: an
\* operation's records are applied together. At start-up, a (re)started
\* broker's first replay reaches at least its own registration record
\* (offset brokerEpoch[b]; the batch it ends): the loader publishes nothing
\* before its first catch-up to the quorum's high watermark
\* (MetadataLoader.stillNeedToCatchUp), and BrokerServer.startup serves
\* nothing before the controller saw the broker's metadata offset reach its
\* registration (isCaughtUp in ReplicationControlManager.processBrokerHeartbeat).
ReplayTargets(b) ==
    {k \in Max(replayedOffset[b], brokerEpoch[b] - 1) + 1..Len(metadataLog) : k \in metadataBatchEnds}

\* Apply the committed metadata log up to offset k (any committed prefix
\* beyond what b applied). If the partition changed in the replayed range:
\* makeLeader / makeFollower with the image at k (a partition epoch older
\* than the local one is skipped).
ReplayMetadata(b) ==
    /\ running[b]
    /\ replayedOffset[b] < Len(metadataLog)
    /\ \E k \in ReplayTargets(b) :
       /\ replayedOffset' = [replayedOffset EXCEPT ![b] = k]
       /\ LET changed == \E i \in replayedOffset[b] + 1..k : metadataLog[i].type = "PartitionChange"
              p == ImgAt(k)
              newEpoch == p.leaderEpoch > localLeaderEpoch[b]
              \* Partition.makeLeader / makeFollower skip only an OLDER partition epoch:
              \* an equal one (already learnt from the AlterPartition response) is
              \* applied again, and resets a pending ISR change to the committed ISR
              \* ("Partition state changes are expected to have a partition epoch
              \* larger or equal to the current partition epoch"). With that rule
              \* (ReplayEqualEpoch) TLC finds a StrongIsr race: the replay drops a
              \* pending expansion the controller then applies, and the HW passes the
              \* new member's LEO before the leader learns of it. The spec and the
              \* implementation therefore skip a registration with the partition and
              \* leader epoch already known (docs/replication-spec.md, "Equal
              \* partition epoch on replay"); ReplayEqualEpoch is FALSE everywhere.
              known == /\ ~ReplayEqualEpoch
                       /\ p.partitionEpoch = localPartitionEpoch[b] /\ p.leaderEpoch = localLeaderEpoch[b]
          IN IF ~changed \/ p.partitionEpoch < localPartitionEpoch[b] \/ known
             THEN UNCHANGED <<localVars, log, highWatermark, pendingProduce, exposed>>
             ELSE IF p.leader = b
             THEN \* makeLeader
                  LET leso == IF newEpoch THEN Len(log[b]) ELSE leaderEpochStartOffset[b]
                      fe == IF newEpoch THEN NoBrokerInfo ELSE followerEndOffset[b]
                      fbe == IF newEpoch THEN NoBrokerInfo ELSE followerBrokerEpoch[b]
                  IN \E hw \in HwChoicesAt(k, b, Len(log[b]), fe, fbe, p.isr, p.isr) :
                     /\ localLeader' = [localLeader EXCEPT ![b] = b]
                     /\ localLeaderEpoch' = [localLeaderEpoch EXCEPT ![b] = p.leaderEpoch]
                     /\ localPartitionEpoch' = [localPartitionEpoch EXCEPT ![b] = p.partitionEpoch]
                     /\ localIsr' = [localIsr EXCEPT ![b] = p.isr]
                     /\ alterPartitionInFlight' = [alterPartitionInFlight EXCEPT ![b] = FALSE]
                     /\ pendingIsr' = [pendingIsr EXCEPT ![b] = {}]
                     /\ leaderEpochStartOffset' = [leaderEpochStartOffset EXCEPT ![b] = leso]
                     /\ followerEndOffset' = [followerEndOffset EXCEPT ![b] = fe]
                     /\ followerBrokerEpoch' = [followerBrokerEpoch EXCEPT ![b] = fbe]
                     /\ highWatermark' = [highWatermark EXCEPT ![b] = hw]
                     /\ Expose(b, log[b], hw)
                     /\ UNCHANGED <<log, pendingProduce>>
             ELSE \* makeFollower (TruncateToHighWatermark: pre-KIP-101 truncation to the HW)
                  /\ localLeader' = [localLeader EXCEPT ![b] = p.leader]
                  /\ localLeaderEpoch' = [localLeaderEpoch EXCEPT ![b] = p.leaderEpoch]
                  /\ localPartitionEpoch' = [localPartitionEpoch EXCEPT ![b] = p.partitionEpoch]
                  /\ localIsr' = [localIsr EXCEPT ![b] = {}]
                  /\ alterPartitionInFlight' = [alterPartitionInFlight EXCEPT ![b] = FALSE]
                  /\ pendingIsr' = [pendingIsr EXCEPT ![b] = {}]
                  /\ leaderEpochStartOffset' = [leaderEpochStartOffset EXCEPT ![b] = -1]
                  /\ followerEndOffset' = [followerEndOffset EXCEPT ![b] = NoBrokerInfo]
                  /\ followerBrokerEpoch' = [followerBrokerEpoch EXCEPT ![b] = NoBrokerInfo]
                  /\ IF TruncateToHighWatermark /\ newEpoch
                     THEN log' = [log EXCEPT ![b] = Prefix(@, highWatermark[b])]
                     ELSE UNCHANGED log
                  /\ pendingProduce' = {x \in pendingProduce : x.leader # b}
                  /\ UNCHANGED <<highWatermark, exposed>>
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, messages>>
    /\ UNCHANGED <<nextValue, acked, uncleanBrokers, countVars>>

----------------------------------------------------------------------------
(* Brokers: fetch                                                          *)

FetchOutstanding(f) ==
    \E m \in messages : \/ m.mtype = "FetchRequest" /\ m.msource = f
                        \/ m.mtype = "FetchResponse" /\ m.mdest = f

\* State-space reduction: a fetch whose round trip would change nothing is
\* not sent. That is the case when the follower is in the leader's committed
\* ISR with no ISR change pending, both are in the same leader epoch, and the
\* leader already knows the follower's LEO and broker epoch, which equal its
\* own LEO, with the follower's HW equal to the leader's. Kafka sends it (it
\* is also the liveness signal; lag is a nondeterministic event here).
FetchIsNoOp(f, l) ==
    /\ IsLeader(l) /\ localLeaderEpoch[l] = localLeaderEpoch[f]
    /\ f \in localIsr[l] /\ ~alterPartitionInFlight[l]
    /\ Len(log[f]) = Len(log[l]) /\ followerEndOffset[l][f] = Len(log[f])
    /\ followerBrokerEpoch[l][f] = brokerEpoch[f]
    /\ highWatermark[f] = highWatermark[l]

\* A follower fetches from the leader it knows (a stopped leader refuses the
\* connection: no request is sent to it).
SendFetchRequest(f) ==
    /\ running[f]
    /\ localLeader[f] \in Brokers \ {f}
    \* (with NetworkFaults the request may go to a stopped leader, and is lost)
    /\ NetworkFaults \/ running[localLeader[f]]
    \* one fetch at a time; on a faulty network the follower's request timeout
    \* (request.timeout.ms) re-sends while a delayed request or a duplicated
    \* answer is still in flight
    /\ NetworkFaults \/ ~FetchOutstanding(f)
    /\ NoOpFetches \/ ~FetchIsNoOp(f, localLeader[f])
    /\ messages' = messages \cup
         {[mtype |-> "FetchRequest", msource |-> f, mdest |-> localLeader[f],
           mcurrentLeaderEpoch |-> localLeaderEpoch[f], mfetchOffset |-> Len(log[f]),
           mlastFetchedEpoch |-> LastEpoch(log[f]), mbrokerEpoch |-> brokerEpoch[f]]}
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localVars, clientVars, countVars>>

FetchReply(m, err, entries, hw, divEpoch, divEnd) ==
    [mtype |-> "FetchResponse", msource |-> m.mdest, mdest |-> m.msource, merror |-> err,
     mcurrentLeaderEpoch |-> m.mcurrentLeaderEpoch, mfetchOffset |-> m.mfetchOffset,
     mentries |-> entries, mhighWatermark |-> hw,
     mdivergingEpoch |-> divEpoch, mdivergingEndOffset |-> divEnd]

\* Broker epochs sent in AlterPartition: the leader's own, and each
\* follower's from its last fetch (-1 unknown); none before KIP-903.
IsrWithEpochs(l, s, fbe) ==
    {[broker |-> r,
      brokerEpoch |-> IF StaleAlterPartitionRejoin THEN -1
                      ELSE IF r = l THEN brokerEpoch[l] ELSE fbe[r]] : r \in s}

AlterPartitionMsg(l, s, fbe) ==
    [mtype |-> "AlterPartitionRequest", msource |-> l, mbrokerEpoch |-> brokerEpoch[l],
     mleaderEpoch |-> localLeaderEpoch[l], mpartitionEpoch |-> localPartitionEpoch[l],
     mnewIsrWithEpochs |-> IsrWithEpochs(l, s, fbe), mleaderRecoveryState |-> Recovered]

HandleFetchRequest(l, m) ==
    /\ m.mtype = "FetchRequest"
    /\ m.mdest = l
    /\ running[l]
    /\ LET f == m.msource
           le == localLeaderEpoch[l]
           leo == Len(log[l])
           err == CASE m.mcurrentLeaderEpoch # -1 /\ m.mcurrentLeaderEpoch < le -> "FENCED_LEADER_EPOCH"
                    [] m.mcurrentLeaderEpoch # -1 /\ m.mcurrentLeaderEpoch > le -> "UNKNOWN_LEADER_EPOCH"
                    [] localLeader[l] # l -> "NOT_LEADER_OR_FOLLOWER"
                    [] OTHER -> "NONE"
           lfe == m.mlastFetchedEpoch
           \* lastOffsetForLeaderEpoch: the leader's own epoch answers with its LEO
           eEpoch == IF lfe >= le THEN le ELSE LargestEpochAtMost(log[l], lfe)
           eEnd == IF lfe >= le THEN leo ELSE EndOffsetForEpoch(log[l], lfe)
           undefined == lfe # -1 /\ eEpoch = -1
           diverging == /\ lfe # -1 /\ ~undefined
                        /\ IF EpochLookupKip101 THEN eEnd < m.mfetchOffset
                           ELSE eEpoch < lfe \/ eEnd < m.mfetchOffset
           \* readRecords: the diverging check comes before the read's range check
           outOfRange == undefined \/ (~diverging /\ m.mfetchOffset > leo)
           \* updateFollowerFetchState (Kip320FirstTry: also for a diverged follower)
           update == err = "NONE" /\ ~outOfRange /\ (~diverging \/ Kip320FirstTry)
           fe == [followerEndOffset[l] EXCEPT ![f] = m.mfetchOffset]
           fbe == [followerBrokerEpoch[l] EXCEPT ![f] = m.mbrokerEpoch]
           \* maybeExpandIsr: canAddReplicaToIsr /\ isFollowerInSync
           eligible == IsrEligible(l, f, m.mbrokerEpoch)
           inSync == /\ m.mfetchOffset >= highWatermark[l]
                     /\ (IsrJoinBeforeEpochStart \/ m.mfetchOffset >= leaderEpochStartOffset[l])
           expand == /\ update /\ ~alterPartitionInFlight[l] /\ f \notin localIsr[l]
                     /\ eligible /\ inSync
           maxIsr == localIsr[l] \cup (IF expand THEN {f}
                                       ELSE IF alterPartitionInFlight[l] THEN pendingIsr[l] ELSE {})
       IN \E hw \in IF update THEN HwChoices(l, leo, fe, fbe, localIsr[l], maxIsr) ELSE {highWatermark[l]} :
       LET reply == CASE err # "NONE" -> FetchReply(m, err, <<>>, -1, -1, -1)
                      [] outOfRange -> FetchReply(m, "OFFSET_OUT_OF_RANGE", <<>>, -1, -1, -1)
                      [] diverging -> FetchReply(m, "NONE", <<>>, hw, eEpoch, eEnd)
                      [] OTHER -> FetchReply(m, "NONE", SubSeq(log[l], m.mfetchOffset + 1, leo), hw, -1, -1)
       IN /\ IF update
             THEN /\ followerEndOffset' = [followerEndOffset EXCEPT ![l] = fe]
                  /\ followerBrokerEpoch' = [followerBrokerEpoch EXCEPT ![l] = fbe]
                  /\ highWatermark' = [highWatermark EXCEPT ![l] = hw]
                  /\ Expose(l, log[l], hw)
             ELSE UNCHANGED <<followerEndOffset, followerBrokerEpoch, highWatermark, exposed>>
          /\ IF expand
             THEN /\ alterPartitionInFlight' = [alterPartitionInFlight EXCEPT ![l] = TRUE]
                  /\ pendingIsr' = [pendingIsr EXCEPT ![l] = localIsr[l] \cup {f}]
                  /\ Deliver(m, {reply, AlterPartitionMsg(l, localIsr[l] \cup {f}, fbe)})
             ELSE /\ UNCHANGED <<alterPartitionInFlight, pendingIsr>>
                  /\ Deliver(m, {reply})
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, replayedOffset, log>>
    /\ UNCHANGED <<localLeader, localLeaderEpoch, localPartitionEpoch, localIsr, leaderEpochStartOffset>>
    /\ UNCHANGED <<nextValue, pendingProduce, acked, uncleanBrokers>>
    /\ UNCHANGED <<restarts, controlledShutdowns, uncleanShutdowns, diskLosses, shrinks, fences>>

\* Follower: only a response to its current fetch (same leader, same epoch,
\* fetch offset = its LEO) is used; anything else is discarded.
HandleFetchResponse(f, m) ==
    /\ m.mtype = "FetchResponse"
    /\ m.mdest = f
    /\ running[f]
    /\ Deliver(m, {})
    /\ LET current == /\ m.msource = localLeader[f]
                      /\ m.mcurrentLeaderEpoch = localLeaderEpoch[f]
                      /\ m.mfetchOffset = Len(log[f])
           leo == Len(log[f])
           \* getOffsetTruncationState (KIP-279); EpochLookupKip101: end offset only
           fEnd == EndOffsetForEpoch(log[f], m.mdivergingEpoch)
           fEpoch == LargestEpochAtMost(log[f], m.mdivergingEpoch)
           t == CASE EpochLookupKip101 -> Min(m.mdivergingEndOffset, leo)
                  [] fEpoch = -1 -> Min(m.mdivergingEndOffset, leo)
                  [] fEpoch # m.mdivergingEpoch -> Min(fEnd, leo)
                  [] OTHER -> Min(Min(fEnd, m.mdivergingEndOffset), leo)
       IN CASE ~current \/ m.merror \in {"FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "NOT_LEADER_OR_FOLLOWER"} ->
                 UNCHANGED <<log, highWatermark>>
            [] m.merror = "OFFSET_OUT_OF_RANGE" ->
                 /\ log' = [log EXCEPT ![f] = <<>>]
                 /\ highWatermark' = [highWatermark EXCEPT ![f] = 0]
            [] m.mdivergingEpoch # -1 ->
                 /\ log' = [log EXCEPT ![f] = Prefix(@, t)]
                 /\ highWatermark' = [highWatermark EXCEPT ![f] = Min(@, t)]
            [] OTHER ->
                 LET l2 == log[f] \o m.mentries IN
                 /\ log' = [log EXCEPT ![f] = l2]
                 /\ highWatermark' = [highWatermark EXCEPT ![f] = Min(m.mhighWatermark, Len(l2))]
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, replayedOffset, localVars, clientVars, countVars>>

----------------------------------------------------------------------------
(* Brokers: ISR changes through AlterPartition                             *)

\* Lag event: a follower in the ISR behind the leader's LEO for
\* replica.lag.time.max.ms is proposed out (maybeShrinkIsr).
ShrinkIsr(l, f) ==
    /\ IsLeader(l)
    /\ ~alterPartitionInFlight[l]
    /\ f \in localIsr[l] \ {l}
    /\ followerEndOffset[l][f] < Len(log[l])
    /\ shrinks < MaxShrinks
    /\ alterPartitionInFlight' = [alterPartitionInFlight EXCEPT ![l] = TRUE]
    /\ pendingIsr' = [pendingIsr EXCEPT ![l] = localIsr[l] \ {f}]
    /\ shrinks' = shrinks + 1
    /\ messages' = messages \cup {AlterPartitionMsg(l, localIsr[l] \ {f}, followerBrokerEpoch[l])}
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localLeader, localLeaderEpoch, localPartitionEpoch, localIsr,
                   leaderEpochStartOffset, followerEndOffset, followerBrokerEpoch>>
    /\ UNCHANGED <<clientVars, restarts, controlledShutdowns, uncleanShutdowns, diskLosses, fences>>

\* handleAlterPartitionUpdate / handleAlterPartitionError.
HandleAlterPartitionResponse(l, m) ==
    /\ m.mtype = "AlterPartitionResponse"
    /\ m.mdest = l
    /\ running[l]
    /\ Deliver(m, {})
    /\ LET mine == /\ alterPartitionInFlight[l] /\ pendingIsr[l] = m.mrequestIsr
                   /\ localPartitionEpoch[l] = m.mrequestPartitionEpoch
           commit == /\ mine /\ localLeader[l] = l
                     /\ m.merror = "NONE"
                     /\ m.mleaderEpoch = localLeaderEpoch[l]
                     /\ m.mpartitionEpoch >= localPartitionEpoch[l]
           revert == mine /\ m.merror = "INELIGIBLE_REPLICA"
       IN \E hw \in HwChoices(l, Len(log[l]), followerEndOffset[l], followerBrokerEpoch[l], m.misr, m.misr) :
          CASE commit ->
                 /\ localIsr' = [localIsr EXCEPT ![l] = m.misr]
                 /\ localPartitionEpoch' = [localPartitionEpoch EXCEPT ![l] = m.mpartitionEpoch]
                 /\ alterPartitionInFlight' = [alterPartitionInFlight EXCEPT ![l] = FALSE]
                 /\ pendingIsr' = [pendingIsr EXCEPT ![l] = {}]
                 /\ highWatermark' = [highWatermark EXCEPT ![l] = hw]
                 /\ Expose(l, log[l], hw)
            [] revert ->
                 /\ alterPartitionInFlight' = [alterPartitionInFlight EXCEPT ![l] = FALSE]
                 /\ pendingIsr' = [pendingIsr EXCEPT ![l] = {}]
                 /\ UNCHANGED <<localIsr, localPartitionEpoch, highWatermark, exposed>>
            [] OTHER ->
                 \* ignored, or left pending until new metadata arrives
                 UNCHANGED <<localIsr, localPartitionEpoch, alterPartitionInFlight, pendingIsr,
                             highWatermark, exposed>>
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, replayedOffset, log>>
    /\ UNCHANGED <<localLeader, localLeaderEpoch, leaderEpochStartOffset, followerEndOffset,
                   followerBrokerEpoch>>
    /\ UNCHANGED <<nextValue, pendingProduce, acked, uncleanBrokers, countVars>>

----------------------------------------------------------------------------
(* Clients: produce                                                        *)

\* appendRecordsToLeader. acks=-1 with the committed ISR below min ISR is
\* rejected (NOT_ENOUGH_REPLICAS) before the append: a step with no state
\* change, so it is not a separate action here.
Produce(l, acks) ==
    /\ IsLeader(l)
    /\ nextValue <= MaxProduce
    /\ acks \in Acks
    /\ acks = -1 => Cardinality(localIsr[l]) >= MinIsr
    /\ LET l2 == Append(log[l], [epoch |-> localLeaderEpoch[l], value |-> nextValue])
       IN \E hw \in HwChoices(l, Len(l2), followerEndOffset[l], followerBrokerEpoch[l], localIsr[l], MaximalIsr(l)) :
          /\ log' = [log EXCEPT ![l] = l2]
          /\ highWatermark' = [highWatermark EXCEPT ![l] = hw]
          /\ Expose(l, l2, hw)
    /\ nextValue' = nextValue + 1
    /\ pendingProduce' = IF acks = -1
                         THEN pendingProduce \cup {[value |-> nextValue, offset |-> Len(log[l]),
                                                    leader |-> l, leaderEpoch |-> localLeaderEpoch[l]]}
                         ELSE pendingProduce
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, replayedOffset, localVars, messages>>
    /\ UNCHANGED <<acked, uncleanBrokers, countVars>>

\* checkEnoughReplicasReachOffset: once the HW passes the record, acks=all is
\* answered OK if the committed ISR is still >= min ISR, else
\* NOT_ENOUGH_REPLICAS_AFTER_APPEND.
CompleteProduce(l, v) ==
    /\ IsLeader(l)
    /\ \E x \in pendingProduce :
          /\ x.value = v /\ x.leader = l /\ x.leaderEpoch = localLeaderEpoch[l]
          /\ highWatermark[l] > x.offset
          /\ pendingProduce' = pendingProduce \ {x}
          /\ acked' = IF Cardinality(localIsr[l]) >= MinIsr
                      THEN acked \cup {[offset |-> x.offset, epoch |-> x.leaderEpoch, value |-> v]}
                      ELSE acked
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localVars, messages, nextValue, exposed, uncleanBrokers, countVars>>

----------------------------------------------------------------------------
(* Network faults (NetworkFaults only)                                     *)

\* The network loses a message (Kafka: the connection breaks and the request
\* fails; the fetcher retries after request.timeout.ms). With several copies
\* of m in flight, losing one leaves m in flight.
DropMessage(m) ==
    /\ NetworkFaults
    /\ m \in messages
    /\ \/ messages' = messages \ {m}
       \/ UNCHANGED messages
    /\ UNCHANGED <<ctlVars, running, cleanShutdown, replayedOffset, log, highWatermark>>
    /\ UNCHANGED <<localVars, clientVars, countVars>>

----------------------------------------------------------------------------
Next ==
    \/ \E b \in Brokers :
          \/ FenceBroker(b) \/ UnfenceBroker(b) \/ ControlledShutdown(b)
          \/ CleanShutdown(b) \/ RestartBroker(b) \/ RestartBrokerWithDiskLoss(b)
          \/ RegisterStopped(b)
          \/ \E k \in 0..Len(log[b]) : UncleanShutdown(b, k)
          \/ ReplayMetadata(b) \/ SendFetchRequest(b)
          \/ \E f \in Brokers : ShrinkIsr(b, f)
          \/ \E a \in ClientAcks : Produce(b, a)
          \/ \E v \in 1..MaxProduce : CompleteProduce(b, v)
    \/ \E m \in messages : HandleAlterPartitionRequest(m)
    \/ \E m \in messages : HandleFetchRequest(m.mdest, m)
    \/ \E m \in messages : HandleFetchResponse(m.mdest, m)
    \/ \E m \in messages : HandleAlterPartitionResponse(m.mdest, m)
    \/ \E m \in messages : DropMessage(m)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
(* Liveness (PartitionReplication_liveness.cfg: no faults)                 *)

Fairness ==
    /\ WF_vars(\E b \in Brokers : ReplayMetadata(b))
    /\ WF_vars(\E b \in Brokers : SendFetchRequest(b))
    /\ WF_vars(\E b \in Brokers : UnfenceBroker(b))
    /\ WF_vars(\E b \in Brokers, v \in 1..MaxProduce : CompleteProduce(b, v))
    /\ WF_vars(\E m \in messages : m.mtype = "FetchRequest" /\ HandleFetchRequest(m.mdest, m))
    /\ WF_vars(\E m \in messages : m.mtype = "FetchResponse" /\ HandleFetchResponse(m.mdest, m))
    /\ WF_vars(\E m \in messages : HandleAlterPartitionRequest(m))
    /\ WF_vars(\E m \in messages : m.mtype = "AlterPartitionResponse" /\ HandleAlterPartitionResponse(m.mdest, m))

LiveSpec == Spec /\ Fairness

HasValue(l, v) == \E i \in DOMAIN l : l[i].value = v

\* An acknowledged (acks=all) write eventually reaches every replica's log.
AckedEventuallyReplicated ==
    \A v \in 1..MaxProduce :
        (\E a \in acked : a.value = v) ~> (\A b \in Brokers : HasValue(log[b], v))

----------------------------------------------------------------------------
(* Safety                                                                  *)

Offsets == -1..MaxProduce
TypeOK ==
    /\ leader \in Brokers \cup {NoLeader}
    /\ metadataBatchEnds \subseteq 1..Len(metadataLog) /\ Len(metadataLog) \in metadataBatchEnds
    /\ leaderEpoch \in 0..MaxLeaderEpoch
    /\ isr \subseteq Brokers /\ elr \subseteq Brokers /\ lastKnownElr \subseteq Brokers
    /\ leaderRecoveryState \in {Recovered, Recovering}
    /\ brokerState \in [Brokers -> BrokerStates]
    /\ running \in [Brokers -> BOOLEAN]
    /\ \A b \in Brokers :
          /\ Len(log[b]) <= MaxProduce
          /\ highWatermark[b] \in 0..Len(log[b])
          /\ replayedOffset[b] \in 0..Len(metadataLog)
          /\ localIsr[b] \subseteq Brokers /\ pendingIsr[b] \subseteq Brokers
          /\ followerEndOffset[b] \in [Brokers -> Offsets]
    /\ nextValue \in 1..MaxProduce + 1

\* The controller's leader is always in the ISR it records.
LeaderInIsr == leader # NoLeader => leader \in isr

\* The current leader, once it has applied its election.
ActingLeader(l) == /\ leader = l /\ IsLeader(l) /\ localLeaderEpoch[l] = leaderEpoch

\* Every running ISR member holds the leader's log below the leader's HW.
StrongIsr ==
    \A l \in Brokers : ActingLeader(l) =>
        \A r \in isr : running[r] => IsPrefix(Prefix(log[l], highWatermark[l]), log[r])

\* Every acks=all-acknowledged record is in the log of the current leader
\* (once it runs: a broker elected while down re-registers, and a lossy
\* restart takes it out of ISR and ELR first), at its offset. (Every election of the correct model is clean; with
\* UncleanElection the unclean leader is checked too: that is the loss.)
NoCommittedRecordLost ==
    leader # NoLeader /\ running[leader] => \A a \in acked : HasAt(log[leader], a)

\* A record read below a leader's HW never changes: at most one record was
\* ever readable at each offset.
ConsistentRead == \A x, y \in exposed : x.offset = y.offset => x = y

\* Any two replicas agree below the smaller of their high watermarks.
LogMatchingBelowHW ==
    \A a, b \in Brokers :
        LET k == Min(highWatermark[a], highWatermark[b])
        IN Prefix(log[a], k) = Prefix(log[b], k)

\* KIP-966: every running member of ISR \cup ELR holds every record that was
\* ever readable, so any of them can be elected without loss.
ReplicationQuorumSuperset ==
    \A r \in isr \cup elr : running[r] => \A x \in exposed : HasAt(log[r], x)

\* KIP-966 / KAFKA-15583: a record becomes readable only once min ISR
\* replicas hold it; it stays on that many unless some of them shut down
\* uncleanly (or lost their disk) since.
MinIsrRecoveryQuorum ==
    \A x \in exposed : Cardinality({b \in Brokers : HasAt(log[b], x)} \cup uncleanBrokers) >= MinIsr

\* KIP-704: RECOVERING only with an ISR of at most the leader.
ValidLeaderRecoveryState ==
    /\ leaderRecoveryState \in {Recovered, Recovering}
    /\ leaderRecoveryState = Recovering => Cardinality(isr) <= 1

\* A leader's HW never decreases within its leader epoch.
HighWatermarkMonotonic ==
    [][\A b \in Brokers :
          (IsLeader(b) /\ running'[b] /\ localLeader'[b] = b
           /\ localLeaderEpoch'[b] = localLeaderEpoch[b])
          => highWatermark'[b] >= highWatermark[b]]_vars


----------------------------------------------------------------------------
(* Sanity: deliberately false invariants; tests show small violates each,  *)
(* so the safety result is not about a model that never gets anywhere.     *)
NothingAcked == acked = {}
NoElection == leaderEpoch = 0
NoFollowerTruncation ==
    \A m \in messages : m.mtype = "FetchResponse" => m.mdivergingEpoch = -1

=============================================================================
