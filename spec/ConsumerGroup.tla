--------------------------- MODULE ConsumerGroup ---------------------------
(***************************************************************************)
(* Kafka's classic consumer-group protocol (JoinGroup / SyncGroup /        *)
(* Heartbeat / LeaveGroup / OffsetCommit), coordinator and clients, with   *)
(* the eager and the cooperative (KIP-429) rebalance protocols, static     *)
(* membership (KIP-345) and MEMBER_ID_REQUIRED (KIP-394).                  *)
(*                                                                         *)
(* Facts taken from Apache Kafka (cited, not copied):                      *)
(*  - group states and their valid previous states: GroupMetadata.scala    *)
(*    (validPreviousStates) / ClassicGroupState.java: Dead <- any,         *)
(*    CompletingRebalance <- PreparingRebalance, Stable <-                 *)
(*    CompletingRebalance, PreparingRebalance <- Stable,                   *)
(*    CompletingRebalance, Empty; Empty <- PreparingRebalance.             *)
(*  - the generation is bumped when the join phase completes, also when    *)
(*    no member is left (the group then goes to Empty): initNextGeneration.*)
(*  - JoinGroup requests are parked in PreparingRebalance until every      *)
(*    member rejoined or the rebalance timeout fires; members that did not *)
(*    rejoin are removed; the leader gets every member's metadata.         *)
(*  - followers' SyncGroup requests are parked in CompletingRebalance      *)
(*    until the leader's SyncGroup (with the assignment) arrives.          *)
(*  - Heartbeat: PreparingRebalance -> REBALANCE_IN_PROGRESS; unknown      *)
(*    member -> UNKNOWN_MEMBER_ID; other generation -> ILLEGAL_GENERATION. *)
(*  - OffsetCommit: generation must match; CompletingRebalance ->          *)
(*    REBALANCE_IN_PROGRESS; PreparingRebalance still accepts commits of   *)
(*    the current generation.                                              *)
(*  - eager clients revoke every owned partition before rejoining          *)
(*    (ConsumerCoordinator.onJoinPrepare); cooperative clients keep them,  *)
(*    report them as ownedPartitions, revoke after SyncGroup only what is  *)
(*    no longer assigned, and rejoin if they revoked anything              *)
(*    (onJoinComplete, KIP-429). The cooperative assignor never gives a    *)
(*    partition to a new owner in the rebalance in which its previous      *)
(*    owner still holds it (CooperativeStickyAssignor).                    *)
(*  - KIP-394: a dynamic member joining with an unknown member id gets     *)
(*    MEMBER_ID_REQUIRED with a fresh id and must rejoin with it.          *)
(*  - KIP-345: a static member (group.instance.id) rejoining with an       *)
(*    unknown member id replaces its old member id (which is fenced:       *)
(*    FENCED_INSTANCE_ID) and, in Stable, keeps its assignment without a   *)
(*    rebalance; static members send no LeaveGroup on close.               *)
(*                                                                         *)
(* Timing (the lease argument). Session and rebalance timeouts are         *)
(* nondeterministic expiry, constrained by one assumption: the coordinator *)
(* may drop a member only after the consumer holding that member id has    *)
(* itself stopped owning partitions (its own session / poll timer fired    *)
(* first: it measures from the send time of its last acknowledged          *)
(* heartbeat, the coordinator from the receive time, so with equal clock   *)
(* rates the client fires first). ClientSessionTimeout is that client-side *)
(* step. Without the assumption no protocol of this shape can keep         *)
(* NoDoubleOwnership; Kafka itself then relies on commit fencing, which    *)
(* CommitFencing checks.                                                   *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, TLC

CONSTANTS
    Consumers,          \* client processes
    Static,             \* consumers with a group.instance.id (the id is the consumer's name)
    Partitions,         \* partitions of the one subscribed topic
    Modes,              \* subset of {"eager", "cooperative"}: the protocol is chosen in Init
    Nil,
    MaxGeneration,      \* state constraint
    MaxMemberId,        \* state constraint on fresh member ids
    MaxFaults,          \* budget of fault steps (crash, leave, timeouts, drops)
    AnyAssignment,      \* TRUE: the leader may pick any valid assignment; FALSE: a deterministic
                        \* one (partition p to the (p mod n)-th member by id), which converges
    \* bug variants (FALSE in every cfg)
    CooperativeAssignWithoutRevoke,
    EagerNoRevokeBeforeJoin,
    AcceptStaleGeneration

VARIABLES
    \* --- coordinator ---
    groupState,      \* "Empty" | "PreparingRebalance" | "CompletingRebalance" | "Stable" | "Dead"
    generation,      \* group generation id
    leader,          \* leader member id or Nil
    members,         \* set of member ids
    staticMembers,   \* [Static -> member id or Nil]   (KIP-345 instance id -> member id)
    pending,         \* member ids handed out with MEMBER_ID_REQUIRED, not yet joined (KIP-394)
    awaitingJoin,    \* parked JoinGroup callbacks: [member id -> [client, conn]]
    reportedOwned,   \* [members -> SUBSET Partitions]  ownedPartitions from the last JoinGroup
    assignment,      \* [members -> SUBSET Partitions]  the current generation's assignment
    nextMemberId,    \* fresh member ids (Kafka: clientId-UUID)
    \* --- consumers ---
    up,              \* [Consumers -> BOOLEAN]
    phase,           \* [Consumers -> {"Down","Idle","Joining","Syncing","Stable"}]
    memberId,        \* [Consumers -> member id or Nil]
    consumerGeneration, \* [Consumers -> Nat]   0 = no generation
    owned,           \* [Consumers -> SUBSET Partitions]  what the consumer believes it owns
    conn,            \* [Consumers -> Nat]   connection incarnation (responses to a closed one are lost)
    \* --- environment ---
    protocol,        \* "eager" | "cooperative" (all members use the same assignor)
    msgs,            \* network: set of messages, any order, may be dropped
    faults,          \* fault steps taken
    fencingBreaches  \* ghost: accepted commits of a partition another live consumer owned

coordVars == <<groupState, generation, leader, members, staticMembers, pending, awaitingJoin,
               reportedOwned, assignment, nextMemberId>>
clientVars == <<up, phase, memberId, consumerGeneration, owned, conn>>
vars == <<coordVars, clientVars, protocol, msgs, faults, fencingBreaches>>

GroupStates == {"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

\* GroupMetadata.validPreviousStates, as pairs <<from, to>>
ValidTransition ==
    {<<s, "Dead">> : s \in GroupStates}
    \cup {<<"PreparingRebalance", "CompletingRebalance">>,
          <<"CompletingRebalance", "Stable">>,
          <<"Stable", "PreparingRebalance">>, <<"CompletingRebalance", "PreparingRebalance">>,
          <<"Empty", "PreparingRebalance">>,
          <<"PreparingRebalance", "Empty">>}

Instance(c) == IF c \in Static THEN c ELSE Nil

NoFunction == [x \in {} |-> {}]

Update(f, k, v) == [x \in DOMAIN f \cup {k} |-> IF x = k THEN v ELSE f[x]]
Remove(f, k) == [x \in DOMAIN f \ {k} |-> f[x]]

\* ---------------------------------------------------------------- helpers

\* The static-member fencing check (GroupMetadata.isStaticMemberFenced)
Fenced(req) == /\ req.minstance # Nil
               /\ staticMembers[req.minstance] # Nil
               /\ staticMembers[req.minstance] # req.mmember

StaleOk(req) == AcceptStaleGeneration /\ req.mgeneration < generation

\* Responses go back on the connection the request came on; a closed one loses them.
Open(c, k) == up[c] /\ conn[c] = k

Respond(req, resp) ==
    msgs' = (msgs \ {req}) \cup (IF Open(req.msource, req.mconn) THEN {resp} ELSE {})

\* The lease: no consumer that holds member id x still owns partitions, and no SyncGroup
\* response granting x partitions is in flight (a client discards a response that arrives after
\* its lease, measured from the request's send time, ran out).
LeaseExpired(x) ==
    /\ \A c \in Consumers : memberId[c] = x => owned[c] = {}
    /\ ~\E r \in msgs : r.mtype = "SyncGroupResponse" /\ r.mmember = x /\ r.massigned # {}

\* Member x is still held by a live consumer: the consumer knows it as its member id, or a
\* successful JoinGroup response naming it is on its way, or its JoinGroup is parked on an open
\* connection. Dropping a held member is a fault (a slow consumer); an orphan's drop is not.
Held(x) ==
    \/ \E c \in Consumers : memberId[c] = x
    \/ \E r \in msgs : r.mtype = "JoinGroupResponse" /\ r.mmember = x /\ r.merror = "NONE"
    \/ x \in DOMAIN awaitingJoin /\ Open(awaitingJoin[x].client, awaitingJoin[x].conn)

\* Remove a member (LeaveGroup, session expiry); Stable/CompletingRebalance start a rebalance.
RemoveMember(x) ==
    /\ members' = members \ {x}
    /\ reportedOwned' = Remove(reportedOwned, x)
    /\ assignment' = Remove(assignment, x)
    /\ staticMembers' = [i \in Static |-> IF staticMembers[i] = x THEN Nil ELSE staticMembers[i]]
    /\ leader' = IF leader = x THEN Nil ELSE leader
    /\ IF groupState \in {"Stable", "CompletingRebalance"}
         THEN /\ groupState' = "PreparingRebalance"
              /\ awaitingJoin' = [y \in {} |-> Nil]
         ELSE /\ awaitingJoin' = Remove(awaitingJoin, x)
              /\ UNCHANGED groupState

\* ---------------------------------------------------------------- Init

Init ==
    /\ groupState = "Empty"
    /\ generation = 0
    /\ leader = Nil
    /\ members = {}
    /\ staticMembers = [i \in Static |-> Nil]
    /\ pending = {}
    /\ awaitingJoin = [x \in {} |-> Nil]
    /\ reportedOwned = NoFunction
    /\ assignment = NoFunction
    /\ nextMemberId = 1
    /\ up = [c \in Consumers |-> TRUE]
    /\ phase = [c \in Consumers |-> "Idle"]
    /\ memberId = [c \in Consumers |-> Nil]
    /\ consumerGeneration = [c \in Consumers |-> 0]
    /\ owned = [c \in Consumers |-> {}]
    /\ conn = [c \in Consumers |-> 1]
    /\ protocol \in Modes
    /\ msgs = {}
    /\ faults = 0
    /\ fencingBreaches = {}

\* ================================================================ consumer actions

JoinRequest(c, mid, ownedNow) ==
    [mtype |-> "JoinGroup", msource |-> c, mconn |-> conn[c], mmember |-> mid,
     minstance |-> Instance(c),
     mowned |-> IF protocol = "cooperative" THEN ownedNow ELSE {}]

\* onJoinPrepare: eager revokes everything first; cooperative keeps what it owns.
SendJoinGroup(c) ==
    /\ up[c] /\ phase[c] = "Idle"
    /\ LET keep == IF protocol = "eager" /\ ~EagerNoRevokeBeforeJoin THEN {} ELSE owned[c]
       IN /\ owned' = [owned EXCEPT ![c] = keep]
          /\ msgs' = msgs \cup {JoinRequest(c, memberId[c], keep)}
    /\ phase' = [phase EXCEPT ![c] = "Joining"]
    /\ UNCHANGED <<coordVars, up, memberId, consumerGeneration, conn, protocol, faults, fencingBreaches>>

\* The leader's assignment: any valid assignment f (every partition to one member), then the
\* cooperative rule: a partition another member still reports owning is withheld this round.
Assign(f, mm) ==
    [x \in DOMAIN mm |->
        {p \in Partitions :
            /\ f[p] = x
            /\ \/ protocol = "eager"
               \/ CooperativeAssignWithoutRevoke
               \/ ~\E y \in DOMAIN mm : y # x /\ p \in mm[y]}]

\* The target assignments the leader may compute for member set S (a function Partitions -> S).
Rank(x, S) == Cardinality({y \in S : y < x})
Deterministic(S) ==
    [p \in Partitions |-> CHOOSE x \in S : Rank(x, S) = Rank(p, Partitions) % Cardinality(S)]
Targets(S) == IF AnyAssignment THEN [Partitions -> S] ELSE {Deterministic(S)}

LoseAll(c) ==   \* onPartitionsLost + resetGeneration: forget member id and generation
    /\ owned' = [owned EXCEPT ![c] = {}]
    /\ memberId' = [memberId EXCEPT ![c] = Nil]
    /\ consumerGeneration' = [consumerGeneration EXCEPT ![c] = 0]
    /\ phase' = [phase EXCEPT ![c] = "Idle"]

Fatal(c, r) ==  \* FENCED_INSTANCE_ID is fatal: the consumer shuts down, its connection closes
    /\ up' = [up EXCEPT ![c] = FALSE]
    /\ msgs' = {m \in msgs \ {r} : ~(("msource" \in DOMAIN m /\ m.msource = c) \/
                                    ("mdest" \in DOMAIN m /\ m.mdest = c))}
    /\ owned' = [owned EXCEPT ![c] = {}]
    /\ memberId' = [memberId EXCEPT ![c] = Nil]
    /\ consumerGeneration' = [consumerGeneration EXCEPT ![c] = 0]
    /\ phase' = [phase EXCEPT ![c] = "Down"]

ForMe(c, r) == r.mdest = c /\ r.mconn = conn[c] /\ up[c]

HandleJoinGroupResponseMsg(c, r) ==
    /\ r.mtype = "JoinGroupResponse" /\ ForMe(c, r) /\ phase[c] = "Joining"
    /\ CASE r.merror = "MEMBER_ID_REQUIRED" ->
              /\ memberId' = [memberId EXCEPT ![c] = r.mmember]
              /\ msgs' = (msgs \ {r}) \cup {JoinRequest(c, r.mmember, owned[c])}
              /\ UNCHANGED <<up, phase, consumerGeneration, owned>>
         [] r.merror = "NONE" ->
              /\ memberId' = [memberId EXCEPT ![c] = r.mmember]
              /\ consumerGeneration' = [consumerGeneration EXCEPT ![c] = r.mgeneration]
              /\ phase' = [phase EXCEPT ![c] = "Syncing"]
              /\ \E f \in Targets(IF DOMAIN r.mmembers = {} THEN {r.mmember} ELSE DOMAIN r.mmembers) :
                    msgs' = (msgs \ {r}) \cup
                        {[mtype |-> "SyncGroup", msource |-> c, mconn |-> conn[c],
                          mmember |-> r.mmember, minstance |-> Instance(c),
                          mgeneration |-> r.mgeneration,
                          massignment |-> IF r.mleader = r.mmember /\ DOMAIN r.mmembers # {}
                                          THEN Assign(f, r.mmembers) ELSE NoFunction]}
              /\ UNCHANGED <<up, owned>>
         [] r.merror = "FENCED_INSTANCE_ID" ->
              /\ Fatal(c, r)
         [] r.merror = "COORDINATOR_NOT_AVAILABLE" ->
              /\ phase' = [phase EXCEPT ![c] = "Idle"] /\ msgs' = msgs \ {r}
              /\ UNCHANGED <<up, memberId, consumerGeneration, owned>>
         [] OTHER ->        \* UNKNOWN_MEMBER_ID
              /\ LoseAll(c) /\ msgs' = msgs \ {r} /\ UNCHANGED up
    /\ UNCHANGED <<coordVars, conn, protocol, faults, fencingBreaches>>

HandleSyncGroupResponseMsg(c, r) ==
    /\ r.mtype = "SyncGroupResponse" /\ ForMe(c, r) /\ phase[c] = "Syncing"
    /\ CASE r.merror = "NONE" ->
              \* cooperative: revoke owned \ assigned, take the new ones, rejoin if anything was revoked
              /\ owned' = [owned EXCEPT ![c] = r.massigned]
              /\ phase' = [phase EXCEPT ![c] =
                    IF protocol = "cooperative" /\ owned[c] \ r.massigned # {} THEN "Idle" ELSE "Stable"]
              /\ msgs' = msgs \ {r}
              /\ UNCHANGED <<up, memberId, consumerGeneration>>
         [] r.merror \in {"REBALANCE_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"} ->
              /\ phase' = [phase EXCEPT ![c] = "Idle"]
              /\ msgs' = msgs \ {r}
              /\ UNCHANGED <<up, memberId, consumerGeneration, owned>>
         [] r.merror = "FENCED_INSTANCE_ID" -> Fatal(c, r)
         [] OTHER -> LoseAll(c) /\ msgs' = msgs \ {r} /\ UNCHANGED up
    /\ UNCHANGED <<coordVars, conn, protocol, faults, fencingBreaches>>

SendHeartbeat(c) ==
    /\ up[c] /\ phase[c] = "Stable"
    /\ ~\E m \in msgs : m.mtype \in {"Heartbeat", "HeartbeatResponse"}
                        /\ (m.mtype = "Heartbeat" => m.msource = c)
                        /\ (m.mtype = "HeartbeatResponse" => m.mdest = c)
    /\ msgs' = msgs \cup {[mtype |-> "Heartbeat", msource |-> c, mconn |-> conn[c],
                           mmember |-> memberId[c], minstance |-> Instance(c),
                           mgeneration |-> consumerGeneration[c]]}
    /\ UNCHANGED <<coordVars, clientVars, protocol, faults, fencingBreaches>>

HandleHeartbeatResponseMsg(c, r) ==
    /\ r.mtype = "HeartbeatResponse" /\ ForMe(c, r)
    /\ IF phase[c] = "Stable" /\ r.mgeneration = consumerGeneration[c] /\ r.mmember = memberId[c]
         THEN CASE r.merror = "NONE" ->
                     /\ msgs' = msgs \ {r}
                     /\ UNCHANGED <<up, phase, memberId, consumerGeneration, owned>>
                [] r.merror \in {"REBALANCE_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"} ->
                     /\ msgs' = msgs \ {r}
                     /\ phase' = [phase EXCEPT ![c] = "Idle"]
                     /\ UNCHANGED <<up, memberId, consumerGeneration, owned>>
                [] r.merror = "FENCED_INSTANCE_ID" -> Fatal(c, r)
                [] OTHER -> LoseAll(c) /\ msgs' = msgs \ {r} /\ UNCHANGED up
         ELSE /\ msgs' = msgs \ {r}                \* stale: ignored
              /\ UNCHANGED <<up, phase, memberId, consumerGeneration, owned>>
    /\ UNCHANGED <<coordVars, conn, protocol, faults, fencingBreaches>>

\* commitSync of the owned partitions with the consumer's generation (one in flight), from a
\* consumer that is consuming (Stable; the poll loop's auto-commit)
SendOffsetCommit(c) ==
    /\ up[c] /\ phase[c] = "Stable" /\ owned[c] # {} /\ memberId[c] # Nil
    /\ ~\E m \in msgs : m.mtype = "OffsetCommit" /\ m.msource = c
    /\ msgs' = msgs \cup {[mtype |-> "OffsetCommit", msource |-> c, mconn |-> conn[c],
                           mmember |-> memberId[c], minstance |-> Instance(c),
                           mgeneration |-> consumerGeneration[c], mparts |-> owned[c]]}
    /\ UNCHANGED <<coordVars, clientVars, protocol, faults, fencingBreaches>>

\* ---------------------------------------------------------------- consumer faults

CloseConnection(c) ==
    msgs' = {m \in msgs : ~(("msource" \in DOMAIN m /\ m.msource = c) \/
                            ("mdest" \in DOMAIN m /\ m.mdest = c))}

Crash(c) ==
    /\ up[c] /\ faults < MaxFaults
    /\ up' = [up EXCEPT ![c] = FALSE]
    /\ phase' = [phase EXCEPT ![c] = "Down"]
    /\ owned' = [owned EXCEPT ![c] = {}]
    /\ memberId' = [memberId EXCEPT ![c] = Nil]
    /\ consumerGeneration' = [consumerGeneration EXCEPT ![c] = 0]
    /\ CloseConnection(c)
    /\ faults' = faults + 1
    /\ UNCHANGED <<coordVars, conn, protocol, fencingBreaches>>

\* graceful close: revoke everything; a dynamic member sends LeaveGroup (static ones do not, KIP-345)
Leave(c) ==
    /\ up[c] /\ faults < MaxFaults
    /\ up' = [up EXCEPT ![c] = FALSE]
    /\ phase' = [phase EXCEPT ![c] = "Down"]
    /\ owned' = [owned EXCEPT ![c] = {}]
    /\ memberId' = [memberId EXCEPT ![c] = Nil]
    /\ consumerGeneration' = [consumerGeneration EXCEPT ![c] = 0]
    /\ LET rest == {m \in msgs : ~(("msource" \in DOMAIN m /\ m.msource = c) \/
                                   ("mdest" \in DOMAIN m /\ m.mdest = c))}
       IN msgs' = IF c \notin Static /\ memberId[c] # Nil
                    THEN rest \cup {[mtype |-> "LeaveGroup", msource |-> c, mconn |-> conn[c],
                                     mmember |-> memberId[c], minstance |-> Nil]}
                    ELSE rest
    /\ faults' = faults + 1
    /\ UNCHANGED <<coordVars, conn, protocol, fencingBreaches>>

Restart(c) ==
    /\ ~up[c]
    /\ up' = [up EXCEPT ![c] = TRUE]
    /\ phase' = [phase EXCEPT ![c] = "Idle"]
    /\ conn' = [conn EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<coordVars, memberId, consumerGeneration, owned, protocol, msgs, faults, fencingBreaches>>

\* The client's own session/poll timer fires (slow consumer, lost coordinator): partitions lost,
\* member id and generation reset, connection closed, rejoin.
ClientSessionTimeout(c) ==
    /\ up[c] /\ memberId[c] # Nil /\ faults < MaxFaults
    /\ LoseAll(c)
    /\ conn' = [conn EXCEPT ![c] = @ + 1]
    /\ CloseConnection(c)
    /\ faults' = faults + 1
    /\ UNCHANGED <<coordVars, up, protocol, fencingBreaches>>

\* The client's request timeout: its JoinGroup/SyncGroup went unanswered; it goes back to rejoin.
\* Kafka's NetworkClient disconnects on a request timeout ("Disconnecting from node ... due to
\* request timeout"), so the connection closes: what else was in flight on it (a heartbeat, a
\* commit or their responses) is lost, and the rejoin goes out on a new connection. When the
\* request (or its response) was lost, the timeout only recovers from that fault and is free.
\* When the request is still in flight or held by the coordinator (a JoinGroup parked in
\* awaitingJoin, a follower's SyncGroup waiting for the leader's) the coordinator is slow or
\* unavailable (Kafka: a coordinator failover; the client rejoins after rediscovering it): the
\* timeout is a fault, and the held request's answer goes to a closed connection.
Outstanding(c) ==
    \/ \E m \in msgs : /\ m.mtype \in {"JoinGroup", "SyncGroup", "JoinGroupResponse", "SyncGroupResponse"}
                     /\ ("msource" \in DOMAIN m => m.msource = c)
                     /\ ("mdest" \in DOMAIN m => m.mdest = c)
    \/ \E x \in DOMAIN awaitingJoin : awaitingJoin[x] = [client |-> c, conn |-> conn[c]]

RequestTimeout(c) ==
    /\ up[c] /\ phase[c] \in {"Joining", "Syncing"}
    /\ Outstanding(c) => faults < MaxFaults
    /\ faults' = IF Outstanding(c) THEN faults + 1 ELSE faults
    /\ phase' = [phase EXCEPT ![c] = "Idle"]
    /\ conn' = [conn EXCEPT ![c] = @ + 1]
    /\ CloseConnection(c)
    /\ UNCHANGED <<coordVars, up, memberId, consumerGeneration, owned, protocol, fencingBreaches>>

DropMessageMsg(m) ==
    /\ m \in msgs /\ faults < MaxFaults
    /\ msgs' = msgs \ {m}
    /\ faults' = faults + 1
    /\ UNCHANGED <<coordVars, clientVars, protocol, fencingBreaches>>

\* ================================================================ coordinator actions

JoinResponse(req, err, mid, gen, lead, mm) ==
    [mtype |-> "JoinGroupResponse", mdest |-> req.msource, mconn |-> req.mconn, merror |-> err,
     mmember |-> mid, mgeneration |-> gen, mleader |-> lead, mmembers |-> mm]

\* a (new or known) member's JoinGroup is parked; Stable/CompletingRebalance start a rebalance
ParkJoin(req, mid) ==
    /\ awaitingJoin' = IF groupState = "PreparingRebalance"
                         THEN Update(awaitingJoin, mid, [client |-> req.msource, conn |-> req.mconn])
                         ELSE (mid :> [client |-> req.msource, conn |-> req.mconn])
    /\ groupState' = "PreparingRebalance"
    /\ msgs' = msgs \ {req}

HandleJoinGroupMsg(req) ==
    /\ req.mtype = "JoinGroup"
    /\ LET mid == req.mmember
           i == req.minstance
       IN
       IF groupState = "Dead" THEN
            /\ Respond(req, JoinResponse(req, "COORDINATOR_NOT_AVAILABLE", mid, 0, Nil, NoFunction))
            /\ UNCHANGED coordVars
       ELSE IF mid = Nil /\ i = Nil THEN         \* KIP-394
            /\ Respond(req, JoinResponse(req, "MEMBER_ID_REQUIRED", nextMemberId, 0, Nil, NoFunction))
            /\ pending' = pending \cup {nextMemberId}
            /\ nextMemberId' = nextMemberId + 1
            /\ UNCHANGED <<groupState, generation, leader, members, staticMembers, awaitingJoin,
                           reportedOwned, assignment>>
       ELSE IF mid = Nil /\ staticMembers[i] = Nil THEN   \* new static member: joins at once
            LET new == nextMemberId IN
            /\ nextMemberId' = nextMemberId + 1
            /\ members' = members \cup {new}
            /\ staticMembers' = [staticMembers EXCEPT ![i] = new]
            /\ reportedOwned' = Update(reportedOwned, new, req.mowned)
            /\ assignment' = Update(assignment, new, {})
            /\ leader' = IF leader = Nil THEN new ELSE leader
            /\ ParkJoin(req, new)
            /\ UNCHANGED <<generation, pending>>
       ELSE IF mid = Nil THEN                     \* static member rejoins: replace the old member id
            LET old == staticMembers[i]
                new == nextMemberId
            IN
            /\ nextMemberId' = nextMemberId + 1
            /\ members' = (members \ {old}) \cup {new}
            /\ staticMembers' = [staticMembers EXCEPT ![i] = new]
            /\ reportedOwned' = Update(Remove(reportedOwned, old), new, req.mowned)
            /\ assignment' = Update(Remove(assignment, old), new, assignment[old])
            /\ leader' = IF leader = old THEN new ELSE leader
            /\ UNCHANGED <<generation, pending>>
            /\ IF groupState = "Stable" /\ req.mowned = reportedOwned[old]
                 THEN \* no rebalance: the member gets the current generation and syncs.
                      \* (Departure, see docs/groups.md: when the new incarnation reports other
                      \* ownedPartitions than its predecessor we rebalance, else a partition
                      \* withheld for the dead incarnation's revocation stays unowned.)
                      /\ Respond(req, JoinResponse(req, "NONE", new, generation,
                                                   IF leader = old THEN new ELSE leader, NoFunction))
                      /\ UNCHANGED <<groupState, awaitingJoin>>
                 ELSE IF groupState = "PreparingRebalance"
                 THEN /\ awaitingJoin' = Update(Remove(awaitingJoin, old), new,
                                                [client |-> req.msource, conn |-> req.mconn])
                      /\ msgs' = msgs \ {req}
                      /\ UNCHANGED groupState
                 ELSE ParkJoin(req, new)
       ELSE IF Fenced(req) THEN
            /\ Respond(req, JoinResponse(req, "FENCED_INSTANCE_ID", mid, 0, Nil, NoFunction))
            /\ UNCHANGED coordVars
       ELSE IF mid \in pending THEN               \* second JoinGroup of a new dynamic member
            /\ pending' = pending \ {mid}
            /\ members' = members \cup {mid}
            /\ reportedOwned' = Update(reportedOwned, mid, req.mowned)
            /\ assignment' = Update(assignment, mid, {})
            /\ leader' = IF leader = Nil THEN mid ELSE leader
            /\ ParkJoin(req, mid)
            /\ UNCHANGED <<generation, staticMembers, nextMemberId>>
       ELSE IF mid \notin members THEN
            /\ Respond(req, JoinResponse(req, "UNKNOWN_MEMBER_ID", mid, 0, Nil, NoFunction))
            /\ UNCHANGED coordVars
       ELSE                                        \* known member (re)joins
            /\ reportedOwned' = [reportedOwned EXCEPT ![mid] = req.mowned]
            /\ ParkJoin(req, mid)
            /\ UNCHANGED <<generation, leader, members, staticMembers, pending, assignment, nextMemberId>>
    /\ UNCHANGED <<clientVars, protocol, faults, fencingBreaches>>

\* The join phase ends: everyone rejoined, or the rebalance timeout removes the rest (lease).
CompleteJoin ==
    /\ groupState = "PreparingRebalance"
    /\ LET joined == DOMAIN awaitingJoin
           dropped == members \ joined
           \* dropping a member some live consumer still holds is a fault (a slow consumer);
           \* dropping an orphan (its consumer crashed or reset) is not
           heldDropped == {x \in dropped : Held(x)}
       IN
       /\ \A x \in dropped : LeaseExpired(x)
       /\ heldDropped # {} => faults < MaxFaults
       /\ faults' = IF heldDropped # {} THEN faults + 1 ELSE faults
       /\ generation' = generation + 1
       /\ members' = joined
       /\ reportedOwned' = [x \in joined |-> reportedOwned[x]]
       /\ assignment' = [x \in joined |-> {}]
       /\ staticMembers' = [i \in Static |-> IF staticMembers[i] \in dropped THEN Nil ELSE staticMembers[i]]
       /\ awaitingJoin' = [x \in {} |-> Nil]
       /\ IF joined = {}
            THEN /\ groupState' = "Empty" /\ leader' = Nil /\ UNCHANGED msgs
            ELSE \E l \in joined :
                   /\ (leader \in joined => l = leader)
                   /\ groupState' = "CompletingRebalance"
                   /\ leader' = l
                   /\ msgs' = msgs \cup
                        {[mtype |-> "JoinGroupResponse", mdest |-> awaitingJoin[x].client,
                          mconn |-> awaitingJoin[x].conn, merror |-> "NONE", mmember |-> x,
                          mgeneration |-> generation + 1, mleader |-> l,
                          mmembers |-> IF x = l THEN [y \in joined |-> reportedOwned[y]]
                                       ELSE NoFunction] :
                         x \in {y \in joined : Open(awaitingJoin[y].client, awaitingJoin[y].conn)}}
    /\ UNCHANGED <<pending, nextMemberId, clientVars, protocol, fencingBreaches>>

SyncResponse(req, err, a) ==
    [mtype |-> "SyncGroupResponse", mdest |-> req.msource, mconn |-> req.mconn, merror |-> err,
     mmember |-> req.mmember, mgeneration |-> req.mgeneration, massigned |-> a]

HandleSyncGroupMsg(req) ==
    /\ req.mtype = "SyncGroup"
    /\ LET mid == req.mmember IN
       \* the order of checks is Kafka's (GroupCoordinator.doSyncGroup)
       IF groupState = "Dead" THEN
            /\ Respond(req, SyncResponse(req, "COORDINATOR_NOT_AVAILABLE", {}))
            /\ UNCHANGED coordVars
       ELSE IF Fenced(req) THEN
            /\ Respond(req, SyncResponse(req, "FENCED_INSTANCE_ID", {}))
            /\ UNCHANGED coordVars
       ELSE IF mid \notin members THEN
            /\ Respond(req, SyncResponse(req, "UNKNOWN_MEMBER_ID", {}))
            /\ UNCHANGED coordVars
       ELSE IF req.mgeneration # generation /\ ~StaleOk(req) THEN
            /\ Respond(req, SyncResponse(req, "ILLEGAL_GENERATION", {}))
            /\ UNCHANGED coordVars
       ELSE IF groupState = "PreparingRebalance" THEN
            /\ Respond(req, SyncResponse(req, "REBALANCE_IN_PROGRESS", {}))
            /\ UNCHANGED coordVars
       ELSE IF groupState = "CompletingRebalance" THEN
            \* followers stay parked (the request stays in the network) until the leader syncs
            /\ mid = leader
            /\ LET a == [x \in members |-> IF x \in DOMAIN req.massignment
                                            THEN req.massignment[x] ELSE {}]
               IN /\ assignment' = a
                  /\ groupState' = "Stable"
                  /\ Respond(req, SyncResponse(req, "NONE", a[mid]))
            /\ UNCHANGED <<generation, leader, members, staticMembers, pending, awaitingJoin,
                           reportedOwned, nextMemberId>>
       ELSE  \* Stable: the current assignment
            /\ Respond(req, SyncResponse(req, "NONE", assignment[mid]))
            /\ UNCHANGED coordVars
    /\ UNCHANGED <<clientVars, protocol, faults, fencingBreaches>>

HandleHeartbeatMsg(req) ==
    /\ req.mtype = "Heartbeat"
    /\ LET err == IF groupState = "Dead" THEN "COORDINATOR_NOT_AVAILABLE"
                  ELSE IF Fenced(req) THEN "FENCED_INSTANCE_ID"
                  ELSE IF req.mmember \notin members THEN "UNKNOWN_MEMBER_ID"
                  ELSE IF req.mgeneration # generation THEN "ILLEGAL_GENERATION"
                  ELSE IF groupState = "PreparingRebalance" THEN "REBALANCE_IN_PROGRESS"
                  ELSE "NONE"
       IN Respond(req, [mtype |-> "HeartbeatResponse", mdest |-> req.msource, mconn |-> req.mconn,
                        merror |-> err, mmember |-> req.mmember, mgeneration |-> req.mgeneration])
    /\ UNCHANGED <<coordVars, clientVars, protocol, faults, fencingBreaches>>

HandleLeaveGroupMsg(req) ==
    /\ req.mtype = "LeaveGroup"
    /\ IF groupState # "Dead" /\ req.mmember \in members
         THEN RemoveMember(req.mmember) /\ UNCHANGED <<generation, pending, nextMemberId>>
         ELSE UNCHANGED coordVars
    /\ msgs' = msgs \ {req}    \* the response carries nothing the closed client uses
    /\ UNCHANGED <<clientVars, protocol, faults, fencingBreaches>>

\* The commit response is not modelled (the client does not act on it); what matters is
\* which commits the offset store accepts.
HandleOffsetCommitMsg(req) ==
    /\ req.mtype = "OffsetCommit"
    /\ msgs' = msgs \ {req}
    /\ LET accept == /\ groupState \notin {"Dead", "CompletingRebalance"}
                     /\ ~Fenced(req)
                     /\ req.mmember \in members
                     /\ (req.mgeneration = generation \/ StaleOk(req))
           c == req.msource
       IN fencingBreaches' =
            IF accept
              THEN fencingBreaches \cup
                   UNION {{[partition |-> p, committer |-> c, owner |-> o] :
                              o \in {o2 \in Consumers \ {c} : p \in owned[o2]}} : p \in req.mparts}
              ELSE fencingBreaches
    /\ UNCHANGED <<coordVars, clientVars, protocol, faults>>

\* Session timeout at the coordinator (lease: its holder no longer owns anything). Expiring a
\* member some live consumer still holds is a fault (a slow consumer); an orphan is not.
ExpireMember(x) ==
    /\ x \in members /\ groupState # "Dead"
    /\ LeaseExpired(x)
    /\ Held(x) => faults < MaxFaults
    /\ faults' = IF Held(x) THEN faults + 1 ELSE faults
    /\ RemoveMember(x)
    /\ UNCHANGED <<generation, pending, nextMemberId, clientVars, protocol, msgs, fencingBreaches>>

\* A member id handed out with MEMBER_ID_REQUIRED (KIP-394) whose JoinGroup never came expires
\* after the session timeout (GroupCoordinator.onExpireHeartbeat -> removePendingMemberAndUpdateGroup).
\* Expiring an id that a live consumer still holds (its JoinGroup or the response naming it still
\* on its way: a slow consumer) is a fault; an orphan's expiry is not.
HeldPending(x) ==
    \/ \E c \in Consumers : memberId[c] = x
    \/ \E r \in msgs : r.mtype \in {"JoinGroup", "JoinGroupResponse"} /\ r.mmember = x
ExpirePending(x) ==
    /\ x \in pending
    /\ HeldPending(x) => faults < MaxFaults
    /\ faults' = IF HeldPending(x) THEN faults + 1 ELSE faults
    /\ pending' = pending \ {x}
    /\ UNCHANGED <<groupState, generation, leader, members, staticMembers, awaitingJoin, reportedOwned,
                   assignment, nextMemberId, clientVars, protocol, msgs, fencingBreaches>>

\* Empty group removed (offsets expired / partition emigration): Dead is final.
DeleteGroup ==
    /\ groupState = "Empty" /\ faults < MaxFaults
    /\ groupState' = "Dead"
    /\ faults' = faults + 1
    /\ UNCHANGED <<generation, leader, members, staticMembers, pending, awaitingJoin, reportedOwned,
                   assignment, nextMemberId, clientVars, protocol, msgs, fencingBreaches>>

\* ================================================================ spec

\* Next is one flat disjunction so TLC names each step by its action.
\* One operator per action (message-consuming ones quantify over the network) so that TLC names
\* every step of a counterexample by its action.
HandleJoinGroupResponse == \E c \in Consumers, r \in msgs : HandleJoinGroupResponseMsg(c, r)
HandleSyncGroupResponse == \E c \in Consumers, r \in msgs : HandleSyncGroupResponseMsg(c, r)
HandleHeartbeatResponse == \E c \in Consumers, r \in msgs : HandleHeartbeatResponseMsg(c, r)
HandleJoinGroup == \E m \in msgs : HandleJoinGroupMsg(m)
HandleSyncGroup == \E m \in msgs : HandleSyncGroupMsg(m)
HandleHeartbeat == \E m \in msgs : HandleHeartbeatMsg(m)
HandleLeaveGroup == \E m \in msgs : HandleLeaveGroupMsg(m)
HandleOffsetCommit == \E m \in msgs : HandleOffsetCommitMsg(m)
DropMessage == \E m \in msgs : DropMessageMsg(m)

Next ==
    \/ \E c \in Consumers : SendJoinGroup(c)
    \/ \E c \in Consumers : SendHeartbeat(c)
    \/ \E c \in Consumers : SendOffsetCommit(c)
    \/ \E c \in Consumers : Restart(c)
    \/ \E c \in Consumers : RequestTimeout(c)
    \/ HandleJoinGroupResponse
    \/ HandleSyncGroupResponse
    \/ HandleHeartbeatResponse
    \/ HandleJoinGroup
    \/ HandleSyncGroup
    \/ HandleHeartbeat
    \/ HandleLeaveGroup
    \/ HandleOffsetCommit
    \/ CompleteJoin
    \/ \E x \in members : ExpireMember(x)
    \/ \E x \in pending : ExpirePending(x)
    \/ \E c \in Consumers : Crash(c)
    \/ \E c \in Consumers : Leave(c)
    \/ \E c \in Consumers : ClientSessionTimeout(c)
    \/ DropMessage
    \/ DeleteGroup

Spec == Init /\ [][Next]_vars

\* Fairness for the liveness config: every protocol step that stays enabled is taken; faults are not.
Fairness ==
    /\ \A c \in Consumers :
         /\ WF_vars(SendJoinGroup(c)) /\ WF_vars(Restart(c))
         /\ WF_vars(RequestTimeout(c) /\ ~Outstanding(c))   \* a lost request; not the fault
         /\ WF_vars(SendHeartbeat(c))
    /\ WF_vars(HandleJoinGroupResponse) /\ WF_vars(HandleSyncGroupResponse)
    /\ WF_vars(HandleHeartbeatResponse)
    /\ WF_vars(HandleJoinGroup) /\ WF_vars(HandleSyncGroup) /\ WF_vars(HandleHeartbeat)
    /\ WF_vars(HandleLeaveGroup) /\ WF_vars(HandleOffsetCommit)
    /\ WF_vars(CompleteJoin)
    /\ WF_vars(\E x \in members : ExpireMember(x) /\ ~Held(x))

LiveSpec == Spec /\ Fairness

\* ================================================================ invariants

TypeOK ==
    /\ groupState \in GroupStates
    /\ generation \in Nat
    /\ members \subseteq Nat
    /\ leader \in members \cup {Nil}
    /\ DOMAIN assignment = members /\ DOMAIN reportedOwned = members
    /\ DOMAIN awaitingJoin \subseteq members
    /\ \A c \in Consumers : owned[c] \subseteq Partitions
    /\ \A c \in Consumers : ~up[c] => owned[c] = {}

\* At no instant do two live consumers both believe they own a partition.
NoDoubleOwnership ==
    \A p \in Partitions : \A c1, c2 \in Consumers :
        (c1 # c2 /\ up[c1] /\ up[c2]) => ~(p \in owned[c1] /\ p \in owned[c2])

\* In Stable every partition is the current generation's: assigned to exactly one member, or
\* (cooperative) withheld because a member reported owning it and will revoke it and rejoin.
StableMeansAssigned ==
    groupState = "Stable" =>
        \A p \in Partitions :
            /\ Cardinality({x \in members : p \in assignment[x]}) <= 1
            /\ \E x \in members : p \in assignment[x] \/ p \in reportedOwned[x]

\* A member that believes it is in the coordinator's current generation and is Stable owns
\* only partitions the coordinator assigned it (or, cooperative, still reported owned).
OwnedWithinAssignment ==
    \A c \in Consumers :
        (up[c] /\ phase[c] = "Stable" /\ groupState = "Stable" /\ memberId[c] \in members
         /\ consumerGeneration[c] = generation)
        => owned[c] \subseteq assignment[memberId[c]]

\* The offset store never accepted a commit for a partition while another consumer owned it.
CommitFencing == fencingBreaches = {}

LeaderIsMember == groupState \in {"CompletingRebalance", "Stable"} => leader \in members

\* Action properties (checked by TLC as [][A]_vars)
GenerationMonotonic == [][generation' >= generation]_vars
ValidTransitions == [][groupState' # groupState => <<groupState, groupState'>> \in ValidTransition]_vars

\* Liveness: once the faults stop, the group settles in Stable with every live consumer synced
\* (unless the group was deleted).
AllStable == /\ groupState = "Stable"
             /\ \A c \in Consumers : up[c] => phase[c] = "Stable"
EventuallyStable == <>[](AllStable \/ groupState = "Dead")

\* Sanity (expected to FAIL): "the group never reaches Stable with every partition owned by a
\* live consumer". TLC must refute it, showing the model gets somewhere.
SanityNeverStableAndOwned ==
    ~(/\ groupState = "Stable"
      /\ \A p \in Partitions : \E c \in Consumers : up[c] /\ p \in owned[c]
      /\ \E c1, c2 \in Consumers : c1 # c2 /\ owned[c1] # {} /\ owned[c2] # {})

\* State constraint for the safety configs
Bounds == generation <= MaxGeneration /\ nextMemberId <= MaxMemberId

=============================================================================
