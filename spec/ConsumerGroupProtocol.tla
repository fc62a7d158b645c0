----------------------- MODULE ConsumerGroupProtocol -----------------------
(***************************************************************************)
(* Kafka's consumer group protocol (KIP-848): the group coordinator        *)
(* computes a target assignment, and each member reconciles towards it     *)
(* through ConsumerGroupHeartbeat, under group, assignment, member and     *)
(* partition epochs. Coordinator and consumers, offset commits with member *)
(* epochs, lost and delayed messages.                                      *)
(*                                                                         *)
(* Facts taken from Apache Kafka (cited next to each rule, not copied):    *)
(*  - GroupMetadataManager.consumerGroupHeartbeat: epoch 0 joins (creates  *)
(*    the member), -1 leaves; an unknown member with another epoch gets    *)
(*    UNKNOWN_MEMBER_ID (ConsumerGroup.getOrMaybeCreateMember); a new      *)
(*    member or a subscription change bumps the group epoch; when the      *)
(*    group epoch exceeds the assignment epoch a new target assignment is  *)
(*    computed (updateTargetAssignment) and the assignment epoch takes the *)
(*    group epoch; then maybeReconcile runs CurrentAssignmentBuilder.      *)
(*  - GroupMetadataManager.throwIfConsumerGroupMemberEpochIsInvalid: an    *)
(*    epoch above the member's is fenced (FENCED_MEMBER_EPOCH); a lower    *)
(*    one is accepted only if it is the previous epoch and the reported    *)
(*    owned partitions are a subset of the assigned ones (isSubset: a      *)
(*    request without owned partitions is not a subset).                  *)
(*  - CurrentAssignmentBuilder.build / computeNextAssignment: STABLE at    *)
(*    an old epoch, or UNRELEASED_PARTITIONS, reconciles; UNREVOKED_-      *)
(*    PARTITIONS waits until the reported owned partitions no longer hold  *)
(*    a partition pending revocation (ownsRevokedPartitions: an absent     *)
(*    list counts as owning), then reconciles. assigned := assigned ∩      *)
(*    target; pending revocation := assigned − target; a target partition  *)
(*    whose partition epoch is not -1 is withheld (unreleased). Pending    *)
(*    revocation: state UNREVOKED, the epoch stays; otherwise the member   *)
(*    takes the target epoch, STABLE or UNRELEASED. Every transition sets  *)
(*    the previous epoch to the old one (ConsumerGroupMember.Builder.      *)
(*    updateMemberEpoch).                                                  *)
(*  - Trunk (KAFKA-19449): a target partition that is pending revocation   *)
(*    by the same member is not withheld from it.                          *)
(*  - ConsumerGroup.maybeUpdatePartitionEpoch: the old member's assigned   *)
(*    and pending partitions lose their epochs, the new member's take the  *)
(*    new member epoch (the form KAFKA-16147 introduced).                  *)
(*  - Session timeout and rebalance timeout (a member stuck in             *)
(*    UNREVOKED_PARTITIONS) remove the member and bump the group epoch     *)
(*    (GroupMetadataManager.scheduleConsumerGroupSessionTimeout,           *)
(*    scheduleConsumerGroupRebalanceTimeout, consumerGroupFenceMember).    *)
(*  - Rejoin with epoch 0 of a known member is accepted (KAFKA-19233: the  *)
(*    member keeps its record and is reconciled from its empty owned set). *)
(*  - Static members (group.instance.id, the client for StaticClients):    *)
(*    GroupMetadataManager.getOrMaybeSubscribeStaticConsumerGroupMember    *)
(*    finds the member by its instance id. Epoch 0 with no member joins;   *)
(*    with a member that left with -2 it replaces it (replaceMember: the   *)
(*    new member id takes its assignment and target at epochs 0/0, no      *)
(*    group-epoch bump); with any other member UNRELEASED_INSTANCE_ID      *)
(*    (throwIfInstanceIdIsUnreleased). Another epoch: no member is         *)
(*    UNKNOWN_MEMBER_ID (throwIfStaticMemberIsUnknown), another member id  *)
(*    FENCED_INSTANCE_ID (throwIfInstanceIdIsFenced). Epoch -2             *)
(*    (consumerGroupStaticMemberGroupLeave) keeps the member at -2 with    *)
(*    its assignment and nothing pending, until its session timeout or     *)
(*    its replacement. The consumer leaves with -2 (ConsumerMembership-    *)
(*    Manager.leaveGroupEpoch); the two instance-id errors are fatal       *)
(*    (ConsumerHeartbeatRequestManager.handleSpecificFailure, MemberState. *)
(*    FATAL: partitions lost, no more heartbeats).                         *)
(*  - Offset commits carry the member epoch; ConsumerGroup.                *)
(*    validateOffsetCommit / validateMemberEpoch reject any other epoch    *)
(*    with STALE_MEMBER_EPOCH and an unknown member with                   *)
(*    UNKNOWN_MEMBER_ID.                                                   *)
(*  - Consumer (AbstractMembershipManager, ConsumerMembershipManager,      *)
(*    ConsumerHeartbeatRequestManager): the member epoch is taken from     *)
(*    every successful response; an assignment different from the         *)
(*    current one starts RECONCILING; maybeReconcile runs one             *)
(*    reconciliation at a time: auto-commit (signalReconciliationStarted), *)
(*    revoke (onPartitionsRevoked), assign (onPartitionsAssigned), then    *)
(*    ACKNOWLEDGING; a reconciliation is aborted when the member left      *)
(*    RECONCILING or rejoined while it ran (maybeAbortReconciliation,      *)
(*    rejoinedWhileReconciliationInProgress, KAFKA-16375). Owned           *)
(*    partitions are sent when joining, after a new local assignment and   *)
(*    after a failure (HeartbeatState.sentFields). FENCED_MEMBER_EPOCH or  *)
(*    UNKNOWN_MEMBER_ID: transitionToFenced resets the epoch to 0, the     *)
(*    partitions are lost (onPartitionsLost) and the member rejoins.       *)
(*    Leaving: PREPARE_LEAVING (commit, revoke), LEAVING (a heartbeat      *)
(*    with epoch -1), UNSUBSCRIBED.                                        *)
(*                                                                         *)
(*  - Subscriptions: a consumer subscribes to a set of topics (all of them *)
(*    at first); subscribe() with another set while in the group goes on   *)
(*    with the membership (AbstractMembershipManager.onSubscriptionUpdated *)
(*    does not rejoin), and the next heartbeat carries the new set         *)
(*    (HeartbeatState.buildRequestData: subscribedTopicNames when joining  *)
(*    or changed since the last sent, SentFields.reset after a failure).   *)
(*    The coordinator bumps the group epoch when the set differs from the  *)
(*    member's (hasMemberSubscriptionChanged) and the new target gives a   *)
(*    member partitions of its subscribed topics only; a partition of a    *)
(*    dropped topic stays owned until that target revokes it.              *)
(*                                                                         *)
(* Abstractions. The subscription is sent on joining, after a change, and  *)
(* again after a failure only while no response confirmed it (Kafka sends  *)
(* it in every request after a failure, which the coordinator ignores when *)
(* unchanged). The assignor                                                *)
(* is any valid assignment (AnyAssignment) or a deterministic round robin  *)
(* by rank. The member id is the client (KIP-1082: the client chooses it   *)
(* and keeps it across rejoins); a static client's new process chooses a  *)
(* new member id, the client's next incarnation. Regex subscriptions are   *)
(* not modelled. A heartbeat response carries the                          *)
(* assignment when the request had epoch 0 or owned partitions, or the     *)
(* assignment changed (Kafka: a full request, or a change). Offset commit  *)
(* responses are not modelled: what matters is which commits the offset    *)
(* store accepts.                                                          *)
(*                                                                         *)
(* Timing (the lease argument of spec/ConsumerGroup.tla): the coordinator  *)
(* may remove a member (session or rebalance timeout) only after the       *)
(* consumer holding that member id stopped owning partitions, has no       *)
(* reconciliation that could still install some, and no response to it is *)
(* in flight (ClientSessionTimeout is that client-side step). Removing a   *)
(* member its consumer still holds is a fault (a slow consumer).           *)
(*                                                                         *)
(* Network: a set of messages, each may be lost (a fault) or delayed. One  *)
(* heartbeat in flight per consumer (HeartbeatRequestManager); a request   *)
(* timeout closes the connection, so a response to an earlier connection   *)
(* is dropped, but the request itself may still reach the coordinator     *)
(* late (a zombie request). Offset commits are not ordered with            *)
(* heartbeats.                                                             *)
(*                                                                         *)
(* Compared with Vanlightly/kafka-tlaplus groupprotocol (v2, work in       *)
(* progress): partitions per topic > 1, offset commits and their fencing,  *)
(* zombie requests, the lease for timeouts, the client's staged            *)
(* reconciliation (commit, revoke, assign) with its abort rule, standard   *)
(* modules only (no CommunityModules), and the historical bugs as          *)
(* switches.                                                               *)
(***************************************************************************)
EXTENDS Naturals, Integers, FiniteSets, TLC

CONSTANTS
    Clients,            \* consumers; each is also its member id (with its process's incarnation)
    StaticClients,      \* the consumers with a group.instance.id (their client id), a subset of Clients
    NumTopics,          \* topics; each consumer subscribes to a non-empty set of them, all at first
    PartitionsPerTopic, \* partitions of each topic
    Nil,
    MaxGroupEpoch,      \* state constraint
    MaxFaults,          \* budget of fault steps
    FaultKinds,         \* the faults a config allows, a subset of {"loss", "zombie", "session",
                        \* "leave", "expire", "restart"}: message loss, a request timing out while
                        \* still in flight, the consumer's own session timeout, leaving the group,
                        \* the coordinator expiring a member its consumer still holds, a new process
                        \* of a static consumer
    AnyAssignment,      \* TRUE: any valid target assignment; FALSE: a deterministic one
    MaxSubscriptionChanges, \* budget of subscription changes (subscribe() with another topic set)
    SendNoOpHeartbeats, \* TRUE: a consumer also sends the heartbeats that can change nothing, as
                        \* Kafka's does (trace validation); FALSE: they are left out (model checking)
    \* bug variants (FALSE in every cfg)
    PartitionEpochLostOnReassign,
    AcceptAnyOlderEpoch,
    StaleReconcileAfterRejoin,
    RevocationAckIgnoredOnNewTarget,
    CommitWithoutEpochCheck,
    RejoinEpochZeroRejected

VARIABLES
    \* --- coordinator ---
    groupEpoch,       \* group epoch
    assignmentEpoch,  \* epoch of the target assignment
    targetAssignment, \* [Clients -> SUBSET Partitions]  (empty for non-members)
    member,           \* [Clients -> member record or Nil]
    partitionEpoch,   \* [Partitions -> Int]  -1: free
    memberIncarnation, \* [Clients -> Nat]  the incarnation in the member id of member[c] (0 if none)
    \* --- consumers ---
    cstate,           \* [Clients -> client MemberState]
    cepoch,           \* [Clients -> Int]  the member epoch the consumer uses
    owned,            \* [Clients -> SUBSET Partitions]  what the consumer owns (consumes)
    ctarget,          \* [Clients -> SUBSET Partitions or Nil]  latest assignment received
    recon,            \* [Clients -> reconciliation in progress or Nil]
    sendOwned,        \* [Clients -> BOOLEAN]  the next heartbeat carries the owned partitions
    inflight,         \* [Clients -> BOOLEAN]  a heartbeat is outstanding
    conn,             \* [Clients -> Nat]  connection incarnation
    incarnation,      \* [Clients -> Nat]  the process: its member id is <<c, incarnation[c]>>
    csub,             \* [Clients -> SUBSET Topics]  the consumer's subscription
    subSent,          \* [Clients -> {"ACKED", "UNSENT", "SENT"}]  its subscription is confirmed by a
                      \* response, not sent since it changed (or the request carrying it failed), sent
    \* --- environment ---
    subChanges,       \* subscription changes taken
    msgs,             \* network: set of messages
    faults,           \* fault steps taken
    badCommits        \* ghost: accepted commits of partitions the committer did not own

coordVars == <<groupEpoch, assignmentEpoch, targetAssignment, member, partitionEpoch, memberIncarnation>>
clientVars == <<cstate, cepoch, owned, ctarget, recon, sendOwned, inflight, conn, incarnation>>
subVars == <<csub, subSent, subChanges>>
vars == <<coordVars, clientVars, subVars, msgs, faults, badCommits>>

Topics == 1..NumTopics
Partitions == Topics \X (0..PartitionsPerTopic - 1)
NPart == NumTopics * PartitionsPerTopic
PRank(p) == (p[1] - 1) * PartitionsPerTopic + p[2]

\* client MemberState (clients/.../internals/MemberState.java)
InGroup == {"JOINING", "RECONCILING", "ACKNOWLEDGING", "STABLE"}
ClientStates == InGroup \cup {"UNSUBSCRIBED", "FENCED", "PREPARE_LEAVING", "LEAVING", "FATAL"}
\* coordinator MemberState (group-coordinator/.../modern/MemberState.java)
ServerStates == {"STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS"}

\* A fixed order of the clients (for the deterministic assignor)
ClientOrder == CHOOSE f \in [1..Cardinality(Clients) -> Clients] :
                   \A i, j \in DOMAIN f : i # j => f[i] # f[j]

Members == {c \in Clients : member[c] # Nil}

\* ConsumerGroupHeartbeatRequest's member epochs: LEAVE_GROUP_MEMBER_EPOCH and
\* LEAVE_GROUP_STATIC_MEMBER_EPOCH
LeaveEpoch == -1
StaticLeaveEpoch == -2

NewMember == [epoch |-> 0, prev |-> -1, state |-> "STABLE", assigned |-> {}, pending |-> {},
              tepoch |-> 0, sub |-> {}]

\* ---------------------------------------------------------------- assignor

\* Valid assignments of every partition to one of the members S subscribed to its topic (subs:
\* each member's subscription), as per-member sets; a partition of a topic no member of S
\* subscribes to goes to nobody (Nil).
AsSets(f, S) == [c \in Clients |-> IF c \in S THEN {p \in Partitions : f[p] = c} ELSE {}]
CRankOf(c) == CHOOSE i \in DOMAIN ClientOrder : ClientOrder[i] = c
RankIn(c, S) == Cardinality({d \in S : CRankOf(d) < CRankOf(c)})
Eligible(p, S, subs) == {c \in S : p[1] \in subs[c]}
OwnerChoices(p, S, subs) == IF Eligible(p, S, subs) = {} THEN {Nil} ELSE Eligible(p, S, subs)
RoundRobin(S, subs) ==
    [p \in Partitions |-> LET E == Eligible(p, S, subs)
                          IN IF E = {} THEN Nil
                             ELSE CHOOSE c \in E : RankIn(c, E) = (PRank(p) % Cardinality(E))]
Targets(S, subs) ==
    IF S = {} THEN {[c \in Clients |-> {}]}
    ELSE IF AnyAssignment
      THEN {AsSets(f, S) : f \in {g \in [Partitions -> S \cup {Nil}] :
                                     \A p \in Partitions : g[p] \in OwnerChoices(p, S, subs)}}
    ELSE {AsSets(RoundRobin(S, subs), S)}

\* ---------------------------------------------------------------- coordinator helpers

\* ownsRevokedPartitions: Nil (no list in the request) counts as owning.
OwnsRevoked(O, pend) == O = Nil \/ O \cap pend # {}

\* CurrentAssignmentBuilder.computeNextAssignment for member m towards target t at epoch te.
\* currentPartitionEpoch comes from partitionEpoch; a partition pending revocation by m itself
\* is not unreleased for m (KAFKA-19449).
NextAssignment(m, epochIfRevoking, assignedNow, O, t, te) ==
    LET kept == assignedNow \cap t
        revoking == assignedNow \ kept
        wanted == t \ kept
        unreleased == {p \in wanted : partitionEpoch[p] # -1 /\ p \notin m.pending}
        adding == wanted \ unreleased
    IN IF revoking # {} /\ OwnsRevoked(O, revoking)
         THEN [m EXCEPT !.epoch = epochIfRevoking, !.prev = m.epoch, !.state = "UNREVOKED_PARTITIONS",
                        !.assigned = kept, !.pending = revoking, !.tepoch = te]
         ELSE [m EXCEPT !.epoch = te, !.prev = m.epoch,
                        !.state = IF unreleased # {} THEN "UNRELEASED_PARTITIONS" ELSE "STABLE",
                        !.assigned = kept \cup adding, !.pending = {}, !.tepoch = te]

\* CurrentAssignmentBuilder.build
Build(m, O, t, te) ==
    CASE m.state = "STABLE" ->
            IF m.epoch # te THEN NextAssignment(m, m.epoch, m.assigned, O, t, te) ELSE m
      [] m.state = "UNREVOKED_PARTITIONS" ->
            IF RevocationAckIgnoredOnNewTarget /\ te # m.tepoch
              \* before KAFKA-16249: a new target recomputes the member from what it holds,
              \* without looking at the owned partitions the request reported
              THEN NextAssignment(m, m.epoch, m.assigned \cup m.pending, Nil, t, te)
            ELSE IF OwnsRevoked(O, m.pending) THEN m
            ELSE NextAssignment(m, m.epoch + 1, m.assigned, O, t, te)
      [] m.state = "UNRELEASED_PARTITIONS" ->
            NextAssignment(m, m.epoch, m.assigned, O, t, te)

\* maybeReconcile: nothing to do when STABLE at the target epoch (isReconciledTo)
Reconcile(m, O, t, te) ==
    IF m.state = "STABLE" /\ m.epoch = te THEN m ELSE Build(m, O, t, te)

Held(m) == m.assigned \cup m.pending

\* ConsumerGroup.maybeUpdatePartitionEpoch (old = Nil: a new member; new = Nil: removed)
UpdatePartitionEpochs(pe, old, new) ==
    LET oldHeld == IF old = Nil THEN {} ELSE Held(old)
        newHeld == IF new = Nil THEN {} ELSE Held(new)
    IN IF PartitionEpochLostOnReassign /\ old # Nil /\ new # Nil
         \* before KAFKA-16147: assigned and pending were updated separately, so a partition
         \* that moves from pending revocation back to assigned loses its epoch
         THEN LET pe1 == IF old.assigned # new.assigned
                           THEN [p \in Partitions |-> IF p \in new.assigned THEN new.epoch
                                                      ELSE IF p \in old.assigned THEN -1 ELSE pe[p]]
                           ELSE pe
                  pe2 == IF old.pending # new.pending
                           THEN [p \in Partitions |-> IF p \in new.pending THEN new.epoch
                                                      ELSE IF p \in old.pending THEN -1 ELSE pe1[p]]
                           ELSE pe1
              IN pe2
         ELSE [p \in Partitions |-> IF p \in newHeld THEN new.epoch
                                    ELSE IF p \in oldHeld THEN -1 ELSE pe[p]]

\* Responses go back on the connection the request came on; a closed one loses them.
Respond(req, resp) ==
    msgs' = (msgs \ {req}) \cup (IF conn[req.src] = req.conn THEN {resp} ELSE {})

HbResponse(req, err, epoch, a) ==
    [type |-> "HeartbeatResponse", dst |-> req.src, conn |-> req.conn, err |-> err,
     epoch |-> epoch, assignment |-> a]

\* throwIfConsumerGroupMemberEpochIsInvalid
EpochValid(m, e, O) ==
    \/ e = m.epoch
    \/ e < m.epoch /\ AcceptAnyOlderEpoch
    \/ e < m.epoch /\ e = m.prev /\ O # Nil /\ O \subseteq m.assigned

\* Remove member x (leave, session or rebalance timeout): tombstones for its records, its
\* partitions are free, the group epoch is bumped.
RemoveMember(x) ==
    /\ member' = [member EXCEPT ![x] = Nil]
    /\ partitionEpoch' = UpdatePartitionEpochs(partitionEpoch, member[x], Nil)
    /\ targetAssignment' = [targetAssignment EXCEPT ![x] = {}]
    /\ groupEpoch' = groupEpoch + 1
    /\ memberIncarnation' = [memberIncarnation EXCEPT ![x] = 0]

\* consumerGroupStaticMemberGroupLeave: epoch -2, the assignment kept, nothing pending
StaticLeave(x) ==
    LET new == [member[x] EXCEPT !.epoch = StaticLeaveEpoch, !.pending = {}]
    IN /\ member' = [member EXCEPT ![x] = new]
       /\ partitionEpoch' = UpdatePartitionEpochs(partitionEpoch, member[x], new)
       /\ UNCHANGED <<groupEpoch, assignmentEpoch, targetAssignment, memberIncarnation>>

\* ================================================================ consumer actions

\* subscribe(): UNSUBSCRIBED -> JOINING (member epoch 0)
Join(c) ==
    /\ cstate[c] = "UNSUBSCRIBED"
    /\ cstate' = [cstate EXCEPT ![c] = "JOINING"]
    /\ cepoch' = [cepoch EXCEPT ![c] = 0]
    /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
    /\ UNCHANGED <<coordVars, owned, ctarget, recon, inflight, conn, incarnation, subVars, msgs, faults,
                   badCommits>>

\* ConsumerHeartbeatRequestManager: one request in flight; once the acknowledgement is sent,
\* ACKNOWLEDGING -> STABLE, or RECONCILING when a newer assignment arrived meanwhile
\* (onHeartbeatRequestGenerated).
\* Departure (docs/consumer-protocol-spec.md): while an assignment the consumer received is not
\* installed (RECONCILING, or acknowledging an older one), the owned partitions are held back
\* until the acknowledgement of that assignment. Kafka sends its local assignment whenever it
\* changed, also after a failure; the coordinator can then take it as a revocation and release
\* a partition that the pending reconciliation installs a moment later (TLC finds that double
\* ownership, see the doc).
ReportOwned(c) == sendOwned[c] /\ cstate[c] # "RECONCILING" /\ (ctarget[c] # Nil => ctarget[c] = owned[c])

\* A heartbeat that can change nothing is left out of model checking (like the replication
\* spec's no-op fetches) unless SendNoOpHeartbeats: a STABLE consumer with nothing to report,
\* whose member is STABLE at the current epochs, stays quiet. Sending it later is the same
\* behaviour; a converged group is quiet. Traces of the implementation, which heartbeats on its
\* interval, are checked with SendNoOpHeartbeats = TRUE.
NoOpHeartbeat(c) ==
    /\ cstate[c] = "STABLE" /\ ~sendOwned[c]
    /\ member[c] # Nil /\ member[c].state = "STABLE"
    /\ cepoch[c] = member[c].epoch /\ member[c].epoch = assignmentEpoch
    /\ assignmentEpoch = groupEpoch

\* HeartbeatState.buildRequestData: subscribedTopicNames when joining or not sent since changed
SendsSub(c) == cepoch[c] = 0 \/ subSent[c] = "UNSENT"

SendHeartbeat(c) ==
    /\ cstate[c] \in InGroup /\ ~inflight[c] /\ (SendNoOpHeartbeats \/ ~NoOpHeartbeat(c))
    /\ msgs' = msgs \cup {[type |-> "Heartbeat", src |-> c, inc |-> incarnation[c], conn |-> conn[c],
                           epoch |-> cepoch[c], owned |-> IF ReportOwned(c) THEN owned[c] ELSE Nil,
                           sub |-> IF SendsSub(c) THEN csub[c] ELSE Nil]}
    /\ inflight' = [inflight EXCEPT ![c] = TRUE]
    /\ subSent' = [subSent EXCEPT ![c] = IF @ = "UNSENT" THEN "SENT" ELSE @]
    /\ sendOwned' = [sendOwned EXCEPT ![c] = ~ReportOwned(c) /\ @]
    /\ cstate' = [cstate EXCEPT ![c] = IF @ # "ACKNOWLEDGING" THEN @
                                        ELSE IF ctarget[c] = owned[c] THEN "STABLE" ELSE "RECONCILING"]
    /\ UNCHANGED <<coordVars, cepoch, owned, ctarget, recon, conn, incarnation, csub, subChanges, faults,
                   badCommits>>

\* Closing consumer c's connection loses the responses on their way to it.
DropResponsesTo(c) == {m \in msgs : ~(m.type = "HeartbeatResponse" /\ m.dst = c)}

\* A reconciliation marked stale (the member rejoined or was fenced while it ran)
MarkStale(c) == [recon EXCEPT ![c] = IF @ = Nil THEN Nil ELSE [@ EXCEPT !.stale = TRUE]]

\* SentFields.reset after a failure: a subscription the failed request carried is sent again
ResetSub(c) == [subSent EXCEPT ![c] = IF @ = "SENT" THEN "UNSENT" ELSE @]

\* the errors a static consumer cannot recover from (ConsumerHeartbeatRequestManager.
\* handleSpecificFailure)
FatalErrors == {"UNRELEASED_INSTANCE_ID", "FENCED_INSTANCE_ID"}

\* onHeartbeatSuccess / onHeartbeatFailure
HandleHeartbeatResponseMsg(c, m) ==
    /\ m.type = "HeartbeatResponse" /\ m.dst = c /\ m.conn = conn[c] /\ inflight[c]
    /\ msgs' = msgs \ {m}
    /\ inflight' = [inflight EXCEPT ![c] = FALSE]
    /\ IF cstate[c] \notin InGroup
         THEN UNCHANGED <<cstate, cepoch, owned, ctarget, recon, sendOwned, subSent>>   \* ignored
       ELSE IF m.err = "NONE" THEN
            /\ cepoch' = [cepoch EXCEPT ![c] = m.epoch]
            /\ subSent' = [subSent EXCEPT ![c] = IF @ = "SENT" THEN "ACKED" ELSE @]
            /\ IF m.assignment = Nil
                 THEN UNCHANGED <<cstate, ctarget>>
                 ELSE /\ ctarget' = [ctarget EXCEPT ![c] = m.assignment]
                      /\ cstate' = [cstate EXCEPT ![c] =
                            IF m.assignment # owned[c] \/ recon[c] # Nil THEN "RECONCILING"
                            ELSE IF @ = "JOINING" THEN "STABLE" ELSE @]
            /\ UNCHANGED <<owned, recon, sendOwned>>
       ELSE IF m.err \in FatalErrors THEN   \* transitionToFatal: the partitions are lost
            /\ cstate' = [cstate EXCEPT ![c] = "FATAL"]
            /\ owned' = [owned EXCEPT ![c] = {}]
            /\ ctarget' = [ctarget EXCEPT ![c] = Nil]
            /\ recon' = MarkStale(c)
            /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
            /\ UNCHANGED <<cepoch, subSent>>
       ELSE \* FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: transitionToFenced
            /\ cstate' = [cstate EXCEPT ![c] = "FENCED"]
            /\ cepoch' = [cepoch EXCEPT ![c] = 0]
            /\ recon' = MarkStale(c)
            /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
            /\ subSent' = ResetSub(c)
            /\ UNCHANGED <<owned, ctarget>>
    /\ UNCHANGED <<coordVars, conn, incarnation, csub, subChanges, faults, badCommits>>

\* onPartitionsLost completed: clear the assignment and rejoin with epoch 0
RejoinAfterFence(c) ==
    /\ cstate[c] = "FENCED"
    /\ cstate' = [cstate EXCEPT ![c] = "JOINING"]
    /\ owned' = [owned EXCEPT ![c] = {}]
    /\ ctarget' = [ctarget EXCEPT ![c] = Nil]
    /\ recon' = MarkStale(c)
    /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
    /\ UNCHANGED <<coordVars, cepoch, inflight, conn, incarnation, subVars, msgs, faults, badCommits>>

\* maybeReconcile: start a reconciliation; the auto-commit of the partitions to revoke goes out
\* first (signalReconciliationStarted), with the current member epoch.
ReconcileCommit(c) ==
    /\ cstate[c] = "RECONCILING" /\ recon[c] = Nil /\ ctarget[c] # Nil
    /\ IF ctarget[c] = owned[c]
         THEN /\ cstate' = [cstate EXCEPT ![c] = "ACKNOWLEDGING"]   \* nothing to do but acknowledge
              /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
              /\ UNCHANGED <<recon, msgs>>
         ELSE /\ recon' = [recon EXCEPT ![c] = [target |-> ctarget[c], step |-> "revoke", stale |-> FALSE]]
              /\ LET revoked == owned[c] \ ctarget[c] IN
                 msgs' = IF revoked = {} THEN msgs
                         ELSE msgs \cup {[type |-> "OffsetCommit", src |-> c, inc |-> incarnation[c],
                                          epoch |-> cepoch[c], parts |-> revoked]}
              /\ UNCHANGED <<cstate, sendOwned>>
    /\ UNCHANGED <<coordVars, cepoch, owned, ctarget, inflight, conn, incarnation, subVars, faults, badCommits>>

\* maybeAbortReconciliation: the member left RECONCILING, or rejoined while the reconciliation ran
Abort(c) == cstate[c] # "RECONCILING" \/ (recon[c].stale /\ ~StaleReconcileAfterRejoin)

\* onPartitionsRevoked
ReconcileRevoke(c) ==
    /\ recon[c] # Nil /\ recon[c].step = "revoke"
    /\ IF Abort(c)
         THEN /\ recon' = [recon EXCEPT ![c] = Nil] /\ UNCHANGED owned
         ELSE /\ owned' = [owned EXCEPT ![c] = @ \cap recon[c].target]
              /\ recon' = [recon EXCEPT ![c].step = "assign"]
    /\ UNCHANGED <<coordVars, cstate, cepoch, ctarget, sendOwned, inflight, conn, incarnation, subVars, msgs,
                   faults, badCommits>>

\* onPartitionsAssigned, then ACKNOWLEDGING with the new local assignment
ReconcileAssign(c) ==
    /\ recon[c] # Nil /\ recon[c].step = "assign"
    /\ recon' = [recon EXCEPT ![c] = Nil]
    /\ IF Abort(c)
         THEN UNCHANGED <<owned, cstate, sendOwned>>
         ELSE /\ owned' = [owned EXCEPT ![c] = recon[c].target]
              /\ cstate' = [cstate EXCEPT ![c] = "ACKNOWLEDGING"]
              /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
    /\ UNCHANGED <<coordVars, cepoch, ctarget, inflight, conn, incarnation, subVars, msgs, faults, badCommits>>

\* The response (or the request) was lost: the request times out, the connection closes, and
\* the next heartbeat carries every field.
RequestTimeout(c) ==
    /\ inflight[c]
    /\ ~\E m \in msgs : \/ m.type = "Heartbeat" /\ m.src = c /\ m.conn = conn[c]
                        \/ m.type = "HeartbeatResponse" /\ m.dst = c /\ m.conn = conn[c]
    /\ inflight' = [inflight EXCEPT ![c] = FALSE]
    /\ conn' = [conn EXCEPT ![c] = @ + 1]
    /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
    /\ msgs' = DropResponsesTo(c)
    /\ subSent' = ResetSub(c)
    /\ UNCHANGED <<coordVars, cstate, cepoch, owned, ctarget, recon, incarnation, csub, subChanges, faults,
                   badCommits>>

\* ---------------------------------------------------------------- consumer faults

\* A slow coordinator: the request times out while still in the network, so it may reach the
\* coordinator later (a zombie request); its response will be dropped.
RequestTimeoutEarly(c) ==
    /\ "zombie" \in FaultKinds /\ inflight[c] /\ faults < MaxFaults
    /\ \E m \in msgs : m.type = "Heartbeat" /\ m.src = c /\ m.conn = conn[c]
    /\ inflight' = [inflight EXCEPT ![c] = FALSE]
    /\ conn' = [conn EXCEPT ![c] = @ + 1]
    /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
    /\ faults' = faults + 1
    /\ msgs' = DropResponsesTo(c)
    /\ subSent' = ResetSub(c)
    /\ UNCHANGED <<coordVars, cstate, cepoch, owned, ctarget, recon, incarnation, csub, subChanges, badCommits>>

\* The consumer's own timer (session / poll timeout): it gives up its partitions and rejoins
\* with epoch 0 on a new connection (the client half of the lease).
ClientSessionTimeout(c) ==
    /\ "session" \in FaultKinds /\ cstate[c] \in InGroup \cup {"FENCED"} /\ faults < MaxFaults
    /\ cstate' = [cstate EXCEPT ![c] = "JOINING"]
    /\ cepoch' = [cepoch EXCEPT ![c] = 0]
    /\ owned' = [owned EXCEPT ![c] = {}]
    /\ ctarget' = [ctarget EXCEPT ![c] = Nil]
    /\ recon' = MarkStale(c)
    /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
    /\ inflight' = [inflight EXCEPT ![c] = FALSE]
    /\ conn' = [conn EXCEPT ![c] = @ + 1]
    /\ faults' = faults + 1
    /\ msgs' = DropResponsesTo(c)
    /\ subSent' = ResetSub(c)
    /\ UNCHANGED <<coordVars, incarnation, csub, subChanges, badCommits>>

\* unsubscribe()/close(): PREPARE_LEAVING commits and revokes everything (a membership change,
\* counted in the fault budget so that membership eventually stops changing)
Leave(c) ==
    /\ "leave" \in FaultKinds /\ cstate[c] \in InGroup /\ faults < MaxFaults
    /\ cstate' = [cstate EXCEPT ![c] = "PREPARE_LEAVING"]
    /\ recon' = MarkStale(c)
    /\ msgs' = IF owned[c] = {} THEN msgs
               ELSE msgs \cup {[type |-> "OffsetCommit", src |-> c, inc |-> incarnation[c], epoch |-> cepoch[c],
                                 parts |-> owned[c]]}
    /\ faults' = faults + 1
    /\ UNCHANGED <<coordVars, cepoch, owned, ctarget, sendOwned, inflight, conn, incarnation, subVars, badCommits>>

LeaveRevoke(c) ==
    /\ cstate[c] = "PREPARE_LEAVING"
    /\ cstate' = [cstate EXCEPT ![c] = "LEAVING"]
    /\ owned' = [owned EXCEPT ![c] = {}]
    /\ ctarget' = [ctarget EXCEPT ![c] = Nil]
    /\ UNCHANGED <<coordVars, cepoch, recon, sendOwned, inflight, conn, incarnation, subVars, msgs, faults,
                   badCommits>>

\* The leave heartbeat (epoch -1; -2 for a static consumer: ConsumerMembershipManager.
\* leaveGroupEpoch) is sent without waiting for an outstanding one.
LeaveEpochOf(c) == IF c \in StaticClients THEN StaticLeaveEpoch ELSE LeaveEpoch

SendLeaveHeartbeat(c) ==
    /\ cstate[c] = "LEAVING"
    /\ msgs' = DropResponsesTo(c) \cup
               {[type |-> "Heartbeat", src |-> c, inc |-> incarnation[c], conn |-> conn[c],
                 epoch |-> LeaveEpochOf(c), owned |-> Nil, sub |-> Nil]}
    /\ cstate' = [cstate EXCEPT ![c] = "UNSUBSCRIBED"]
    /\ cepoch' = [cepoch EXCEPT ![c] = LeaveEpochOf(c)]
    /\ inflight' = [inflight EXCEPT ![c] = FALSE]
    /\ conn' = [conn EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<coordVars, owned, ctarget, recon, sendOwned, incarnation, subVars, faults, badCommits>>

\* subscribe() with another non-empty topic set while in the group (AsyncKafkaConsumer.subscribe,
\* AbstractMembershipManager.onSubscriptionUpdated): no rejoin; the next heartbeat carries the set.
\* The partitions it owns stay owned until the coordinator's new assignment revokes them.
ChangeSubscription(c) ==
    /\ subChanges < MaxSubscriptionChanges /\ cstate[c] \in InGroup
    /\ \E s \in (SUBSET Topics) \ {{}, csub[c]} : csub' = [csub EXCEPT ![c] = s]
    /\ subSent' = [subSent EXCEPT ![c] = "UNSENT"]
    /\ subChanges' = subChanges + 1
    /\ UNCHANGED <<coordVars, clientVars, msgs, faults, badCommits>>

\* The application closes a static consumer that left or failed and starts a new process of it
\* (the same group.instance.id): a new member id, the next incarnation, on a new connection,
\* unsubscribed (a restart, counted in the fault budget).
NewProcess(c) ==
    /\ "restart" \in FaultKinds /\ c \in StaticClients /\ faults < MaxFaults
    /\ cstate[c] \in {"UNSUBSCRIBED", "FATAL"}
    /\ incarnation' = [incarnation EXCEPT ![c] = @ + 1]
    /\ cstate' = [cstate EXCEPT ![c] = "UNSUBSCRIBED"]
    /\ cepoch' = [cepoch EXCEPT ![c] = LeaveEpoch]
    /\ owned' = [owned EXCEPT ![c] = {}]
    /\ ctarget' = [ctarget EXCEPT ![c] = Nil]
    /\ recon' = [recon EXCEPT ![c] = Nil]
    /\ sendOwned' = [sendOwned EXCEPT ![c] = TRUE]
    /\ inflight' = [inflight EXCEPT ![c] = FALSE]
    /\ conn' = [conn EXCEPT ![c] = @ + 1]
    /\ faults' = faults + 1
    /\ msgs' = DropResponsesTo(c)
    /\ UNCHANGED <<coordVars, subVars, badCommits>>

\* ================================================================ coordinator actions

\* hasMemberSubscriptionChanged: the request's topic set differs from the member's
SubscriptionChanged(old, new) == old.sub # new.sub

\* consumerGroupHeartbeat for an accepted request of member c (old = its record or Nil); the
\* member reconciled is base (old, or the static member that replaces it), under the request's
\* member id.
AcceptAs(req, c, old, replaced) ==
    LET base0 == IF replaced = Nil THEN NewMember ELSE replaced
        base == IF req.sub = Nil THEN base0 ELSE [base0 EXCEPT !.sub = req.sub]
        ge == IF old = Nil \/ SubscriptionChanged(old, base) THEN groupEpoch + 1 ELSE groupEpoch
        mems == Members \cup {c}
        subs == [x \in Clients |-> IF x = c THEN base.sub ELSE IF member[x] # Nil THEN member[x].sub ELSE {}]
    IN \E t \in (IF ge > assignmentEpoch THEN Targets(mems, subs) ELSE {targetAssignment}) :
         LET te == IF ge > assignmentEpoch THEN ge ELSE assignmentEpoch
             new == Reconcile(base, req.owned, t[c], te)
         IN /\ groupEpoch' = ge
            /\ assignmentEpoch' = te
            /\ targetAssignment' = t
            /\ member' = [member EXCEPT ![c] = new]
            /\ partitionEpoch' = UpdatePartitionEpochs(partitionEpoch, old, new)
            /\ memberIncarnation' = [memberIncarnation EXCEPT ![c] = req.inc]
            /\ Respond(req, HbResponse(req, "NONE", new.epoch,
                           IF req.epoch = 0 \/ req.owned # Nil \/ old = Nil \/ new.assigned # base.assigned
                             THEN new.assigned ELSE Nil))

AcceptHeartbeat(req, c, old) == AcceptAs(req, c, old, old)

\* Requests of one consumer reach the coordinator in the order it sent them (one connection at
\* a time, and the coordinator's event queue is sequential): a request that timed out (a zombie)
\* is still processed before any later one. Without this order (docs/consumer-protocol-spec.md)
\* the correct protocol would lose NoDoubleOwnership to a late acknowledgement at the
\* member's current epoch.
FirstOf(req) == ~\E m \in msgs : m.type = "Heartbeat" /\ m.src = req.src /\ m.conn < req.conn

\* getOrMaybeSubscribeStaticConsumerGroupMember and the leave of a static member: its instance id
\* is its client c, member[c] the instance's member, memberIncarnation[c] that member's id.
StaticHeartbeat(req) ==
    LET c == req.src
        m == member[c]
        same == m # Nil /\ memberIncarnation[c] = req.inc
    IN IF req.epoch = 0 THEN
         IF m = Nil THEN AcceptHeartbeat(req, c, Nil)
         ELSE IF m.epoch # StaticLeaveEpoch THEN     \* throwIfInstanceIdIsUnreleased
           /\ Respond(req, HbResponse(req, "UNRELEASED_INSTANCE_ID", 0, Nil))
           /\ UNCHANGED coordVars
         ELSE AcceptAs(req, c, m, [m EXCEPT !.epoch = 0, !.prev = 0])   \* replaceMember
       ELSE IF req.epoch \in {LeaveEpoch, StaticLeaveEpoch} THEN
         /\ msgs' = msgs \ {req}
         /\ IF ~same THEN UNCHANGED coordVars
            ELSE IF req.epoch = StaticLeaveEpoch THEN StaticLeave(c)
            ELSE RemoveMember(c) /\ UNCHANGED assignmentEpoch
       ELSE IF m = Nil THEN                          \* throwIfStaticMemberIsUnknown
         /\ Respond(req, HbResponse(req, "UNKNOWN_MEMBER_ID", 0, Nil))
         /\ UNCHANGED coordVars
       ELSE IF ~same THEN                            \* throwIfInstanceIdIsFenced
         /\ Respond(req, HbResponse(req, "FENCED_INSTANCE_ID", 0, Nil))
         /\ UNCHANGED coordVars
       ELSE IF ~EpochValid(m, req.epoch, req.owned) THEN
         /\ Respond(req, HbResponse(req, "FENCED_MEMBER_EPOCH", 0, Nil))
         /\ UNCHANGED coordVars
       ELSE AcceptHeartbeat(req, c, m)

HandleHeartbeatMsg(req) ==
    /\ req.type = "Heartbeat" /\ FirstOf(req)
    /\ LET c == req.src
           m == member[c]
       IN IF c \in StaticClients THEN StaticHeartbeat(req)
          ELSE IF req.epoch = LeaveEpoch THEN          \* leave
            /\ IF m # Nil THEN RemoveMember(c) /\ UNCHANGED assignmentEpoch
                          ELSE UNCHANGED coordVars
            /\ msgs' = msgs \ {req}
          ELSE IF m = Nil /\ req.epoch # 0 THEN
            /\ Respond(req, HbResponse(req, "UNKNOWN_MEMBER_ID", 0, Nil))
            /\ UNCHANGED coordVars
          ELSE IF m # Nil /\ ~(req.epoch = 0 /\ ~RejoinEpochZeroRejected)
                  /\ ~EpochValid(m, req.epoch, req.owned) THEN
            /\ Respond(req, HbResponse(req, "FENCED_MEMBER_EPOCH", 0, Nil))
            /\ UNCHANGED coordVars
          ELSE AcceptHeartbeat(req, c, m)
    /\ UNCHANGED <<clientVars, subVars, faults, badCommits>>

\* OffsetCommit: accepted from a known member at its current member epoch
HandleOffsetCommitMsg(req) ==
    /\ req.type = "OffsetCommit"
    /\ msgs' = msgs \ {req}
    /\ LET c == req.src
           m == member[c]
           accept == m # Nil /\ memberIncarnation[c] = req.inc /\ (req.epoch = m.epoch \/ CommitWithoutEpochCheck)
       IN badCommits' =
            IF accept
              THEN badCommits \cup
                   {[partition |-> p, committer |-> c, epoch |-> req.epoch] :
                      p \in {q \in req.parts : q \notin Held(m) \/ \E d \in Clients \ {c} : q \in owned[d]}}
              ELSE badCommits
    /\ UNCHANGED <<coordVars, clientVars, subVars, faults>>

\* member[x]'s member id is the consumer's current process's (an older process of a static
\* consumer has stopped: it left or failed, owning nothing)
OfProcess(x) == memberIncarnation[x] = incarnation[x]

\* The lease: the consumer holding member id x owns nothing, holds no received assignment and
\* no reconciliation that could still install partitions, and no response to it is in flight.
LeaseExpired(x) ==
    \/ ~OfProcess(x)
    \/ /\ owned[x] = {}
       /\ ctarget[x] \in {Nil, {}}
       /\ IF recon[x] = Nil THEN TRUE ELSE recon[x].stale
       /\ ~\E r \in msgs : r.type = "HeartbeatResponse" /\ r.dst = x

\* a live consumer still uses member id x
HeldBy(x) == OfProcess(x) /\ cstate[x] \in InGroup \cup {"FENCED"}

SessionTimeout(x) ==
    /\ member[x] # Nil
    /\ LeaseExpired(x)
    /\ HeldBy(x) => "expire" \in FaultKinds /\ faults < MaxFaults
    /\ faults' = IF HeldBy(x) THEN faults + 1 ELSE faults
    /\ RemoveMember(x)
    /\ UNCHANGED <<assignmentEpoch, clientVars, subVars, msgs, badCommits>>

RebalanceTimeout(x) ==
    /\ member[x] # Nil /\ member[x].state = "UNREVOKED_PARTITIONS"
    /\ LeaseExpired(x)
    /\ HeldBy(x) => "expire" \in FaultKinds /\ faults < MaxFaults
    /\ faults' = IF HeldBy(x) THEN faults + 1 ELSE faults
    /\ RemoveMember(x)
    /\ UNCHANGED <<assignmentEpoch, clientVars, subVars, msgs, badCommits>>

DropMessageMsg(m) ==
    /\ "loss" \in FaultKinds /\ faults < MaxFaults
    /\ msgs' = msgs \ {m}
    /\ faults' = faults + 1
    /\ UNCHANGED <<coordVars, clientVars, subVars, badCommits>>

\* ================================================================ spec

Init ==
    /\ groupEpoch = 0
    /\ assignmentEpoch = 0
    /\ targetAssignment = [c \in Clients |-> {}]
    /\ member = [c \in Clients |-> Nil]
    /\ partitionEpoch = [p \in Partitions |-> -1]
    /\ memberIncarnation = [c \in Clients |-> 0]
    /\ cstate = [c \in Clients |-> "UNSUBSCRIBED"]
    /\ cepoch = [c \in Clients |-> -1]
    /\ owned = [c \in Clients |-> {}]
    /\ ctarget = [c \in Clients |-> Nil]
    /\ recon = [c \in Clients |-> Nil]
    /\ sendOwned = [c \in Clients |-> TRUE]
    /\ inflight = [c \in Clients |-> FALSE]
    /\ conn = [c \in Clients |-> 0]
    /\ incarnation = [c \in Clients |-> 0]
    /\ csub = [c \in Clients |-> Topics]
    /\ subSent = [c \in Clients |-> "ACKED"]
    /\ subChanges = 0
    /\ msgs = {}
    /\ faults = 0
    /\ badCommits = {}

\* One operator per action (message-consuming ones quantify over the network), so that TLC
\* names every step of a counterexample by its action.
HandleHeartbeatResponse == \E c \in Clients, r \in msgs : HandleHeartbeatResponseMsg(c, r)
HandleHeartbeat == \E m \in msgs : HandleHeartbeatMsg(m)
HandleOffsetCommit == \E m \in msgs : HandleOffsetCommitMsg(m)
DropMessage == \E m \in msgs : DropMessageMsg(m)

Next ==
    \/ \E c \in Clients : Join(c)
    \/ \E c \in Clients : SendHeartbeat(c)
    \/ HandleHeartbeatResponse
    \/ \E c \in Clients : RejoinAfterFence(c)
    \/ \E c \in Clients : ReconcileCommit(c)
    \/ \E c \in Clients : ReconcileRevoke(c)
    \/ \E c \in Clients : ReconcileAssign(c)
    \/ \E c \in Clients : RequestTimeout(c)
    \/ \E c \in Clients : RequestTimeoutEarly(c)
    \/ \E c \in Clients : ClientSessionTimeout(c)
    \/ \E c \in Clients : Leave(c)
    \/ \E c \in Clients : LeaveRevoke(c)
    \/ \E c \in Clients : SendLeaveHeartbeat(c)
    \/ \E c \in Clients : NewProcess(c)
    \/ \E c \in Clients : ChangeSubscription(c)
    \/ HandleHeartbeat
    \/ HandleOffsetCommit
    \/ \E x \in Clients : SessionTimeout(x)
    \/ \E x \in Clients : RebalanceTimeout(x)
    \/ DropMessage

Spec == Init /\ [][Next]_vars

\* Fairness for the liveness configs: every protocol step that stays enabled is taken; faults
\* (losses, early timeouts, leaves, expiry of a member a consumer still holds) are not.
Fairness ==
    /\ \A c \in Clients :
         /\ WF_vars(Join(c)) /\ WF_vars(SendHeartbeat(c)) /\ WF_vars(RejoinAfterFence(c))
         /\ WF_vars(ReconcileCommit(c)) /\ WF_vars(ReconcileRevoke(c)) /\ WF_vars(ReconcileAssign(c))
         /\ WF_vars(RequestTimeout(c))
         /\ WF_vars(LeaveRevoke(c)) /\ WF_vars(SendLeaveHeartbeat(c))
         /\ WF_vars(\E r \in msgs : HandleHeartbeatResponseMsg(c, r))
    /\ \A c \in Clients :
         /\ WF_vars(\E m \in msgs : m.type = "Heartbeat" /\ m.src = c /\ HandleHeartbeatMsg(m))
         /\ WF_vars(\E m \in msgs : m.type = "OffsetCommit" /\ m.src = c /\ HandleOffsetCommitMsg(m))
    /\ \A x \in Clients : WF_vars(SessionTimeout(x) /\ ~HeldBy(x))

LiveSpec == Spec /\ Fairness

\* ================================================================ invariants

MemberRecords ==
    [epoch : Nat \cup {StaticLeaveEpoch}, prev : Int, state : ServerStates, assigned : SUBSET Partitions,
     pending : SUBSET Partitions, tepoch : Nat, sub : SUBSET Topics]

TypeOK ==
    /\ groupEpoch \in Nat /\ assignmentEpoch \in Nat
    /\ targetAssignment \in [Clients -> SUBSET Partitions]
    /\ \A c \in Clients : member[c] = Nil \/ member[c] \in MemberRecords
    /\ partitionEpoch \in [Partitions -> Int]
    /\ cstate \in [Clients -> ClientStates]
    /\ cepoch \in [Clients -> Int]
    /\ owned \in [Clients -> SUBSET Partitions]
    /\ \A c \in Clients : ctarget[c] = Nil \/ ctarget[c] \subseteq Partitions
    /\ sendOwned \in [Clients -> BOOLEAN] /\ inflight \in [Clients -> BOOLEAN]
    /\ conn \in [Clients -> Nat]
    /\ StaticClients \subseteq Clients
    /\ incarnation \in [Clients -> Nat] /\ memberIncarnation \in [Clients -> Nat]
    /\ \A c \in Clients \ StaticClients : incarnation[c] = 0 /\ memberIncarnation[c] = 0
    /\ \A c \in Clients : member[c] # Nil /\ member[c].epoch = StaticLeaveEpoch => c \in StaticClients
    /\ csub \in [Clients -> (SUBSET Topics) \ {{}}]
    /\ subSent \in [Clients -> {"ACKED", "UNSENT", "SENT"}]
    /\ subChanges \in 0..MaxSubscriptionChanges
    /\ faults \in 0..MaxFaults

\* At no instant do two consumers both own (consume) a partition.
NoDoubleOwnership ==
    \A p \in Partitions : \A c1, c2 \in Clients : c1 # c2 => ~(p \in owned[c1] /\ p \in owned[c2])

\* The offset store accepted commits only from the member that held the partition (assigned or
\* pending revocation) at the commit's epoch, while no other consumer owned it.
CommitFencing == badCommits = {}

\* A partition is held by at most one member; its epoch is that member's epoch, -1 when free.
ValidPartitionEpochs ==
    \A p \in Partitions :
        LET holders == {x \in Members : p \in Held(member[x])}
        IN /\ Cardinality(holders) <= 1
           /\ holders = {} => partitionEpoch[p] = -1
           /\ \A x \in holders : partitionEpoch[p] = member[x].epoch

\* The target assignment gives each partition to at most one member, only to members, only
\* partitions of topics the member subscribes to, and every partition of a subscribed topic
\* once it is computed for the current group epoch.
ValidTargetAssignment ==
    /\ assignmentEpoch <= groupEpoch
    /\ \A c \in Clients \ Members : targetAssignment[c] = {}
    /\ \A c1, c2 \in Clients : c1 # c2 => targetAssignment[c1] \cap targetAssignment[c2] = {}
    /\ \A c \in Members : \A p \in targetAssignment[c] : p[1] \in member[c].sub
    /\ assignmentEpoch = groupEpoch =>
          \A p \in Partitions : (\E c \in Members : p[1] \in member[c].sub) =>
                                  \E c \in Members : p \in targetAssignment[c]
    /\ \A c \in Members : member[c].epoch <= assignmentEpoch

\* Member epochs never decrease: at the coordinator while the member exists, except a static
\* member's leave to -2; at the consumer except the reset to 0 when fenced or rejoining and to
\* -1 (-2 static) when leaving.
MemberEpochMonotonic ==
    [][/\ \A c \in Clients : (member[c] # Nil /\ member'[c] # Nil) =>
             \/ member'[c].epoch >= member[c].epoch
             \/ c \in StaticClients /\ member'[c].epoch = StaticLeaveEpoch
       /\ \A c \in Clients : cepoch'[c] < cepoch[c] =>
             \/ cepoch'[c] = 0 /\ cstate'[c] \in {"FENCED", "JOINING"}
             \/ cepoch'[c] = LeaveEpochOf(c) /\ cstate'[c] = "UNSUBSCRIBED"
             \/ cepoch'[c] = LeaveEpoch /\ cstate'[c] = "UNSUBSCRIBED" /\ incarnation'[c] > incarnation[c]]_vars

\* ================================================================ liveness

\* Every consumer in the group owns its target, at the current epochs, fully reconciled.
Converged ==
    /\ assignmentEpoch = groupEpoch
    /\ \A c \in Clients : cstate[c] \in {"STABLE", "UNSUBSCRIBED"}
    /\ \A c \in Clients : cstate[c] = "STABLE" =>
          /\ member[c] # Nil
          /\ member[c].state = "STABLE" /\ member[c].epoch = assignmentEpoch
          /\ owned[c] = targetAssignment[c] /\ cepoch[c] = member[c].epoch
          /\ recon[c] = Nil
    /\ \A x \in Members : cstate[x] = "STABLE"

EventuallyConverges == <>[]Converged

\* A fenced consumer gets back into the group (a successful join).
FencedMemberRejoins ==
    \A c \in Clients : cstate[c] = "FENCED" ~> (cstate[c] \in {"RECONCILING", "ACKNOWLEDGING", "STABLE"} /\ cepoch[c] > 0)

\* Sanity (expected to FAIL): "two consumers never own partitions at the same time". TLC must
\* refute it, showing the model gets somewhere.
SanityNeverTwoOwners == ~\E c1, c2 \in Clients : c1 # c2 /\ owned[c1] # {} /\ owned[c2] # {}

\* Sanity for the static size (expected to FAIL): a member at epoch -2 is never replaced (it
\* only stays or goes), and no consumer goes FATAL. TLC must refute both.
SanityNoReplacement ==
    [][\A c \in StaticClients : member[c] # Nil /\ member[c].epoch = StaticLeaveEpoch =>
          member'[c] = Nil \/ member'[c].epoch = StaticLeaveEpoch]_vars
SanityNeverFatal == \A c \in Clients : cstate[c] # "FATAL"

\* Sanity for the subscribe size (expected to FAIL): members never subscribe to different
\* topic sets. TLC must refute it, showing a change reaches the coordinator.
SanitySameSubscriptions == \A c1, c2 \in Members : member[c1].sub = member[c2].sub

\* State constraint for the safety configs
Bounds == groupEpoch <= MaxGroupEpoch

\* The three-consumer size also bounds the messages in flight at once (a bound like the group
\* epoch's: behaviours beyond it are not explored)
BoundsInFlight == Bounds /\ Cardinality(msgs) <= 2

=============================================================================
