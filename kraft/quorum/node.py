"""A KRaft voter as a sans-I/O state machine.

One entry point, ``step(input, now) -> Ready`` (the kit's ``kraft.core.node.Node``): the input is a
message, a ``Tick`` (take the one internal/timer action enabled at ``now``, if any) or a ``Trigger``
of a handler (client append, restart, resignation, a forced timeout or flush), refused when the
action is not enabled (``requires``).  The ``Ready`` holds the spec step taken, the messages to
send, the storage writes made, the records that became committed (the driver applies them to its
state machine) and the reply to a client request.  Randomness (election jitter) comes from the
``random.Random`` handed in; storage is the file system handed in (``kraft.log`` batches over
``MemoryFS`` or real files).

Every handler method is named after the spec action it implements (snake_case) in the one
declaration, ``kraft.quorum.protocol``.

Voters are dynamic (KIP-853): a node's voter set is that of the last VotersRecord of its log, else
that of the snapshot at its log start, else the bootstrap set it was created with
(``KRaftControlRecordStateMachine.lastVoterSet``); a node outside its own voter set is an
observer, which fetches but never campaigns.

Behaviour follows Kafka's ``org.apache.kafka.raft`` (KafkaRaftClient, QuorumState, LeaderState,
FollowerState, CandidateState, ProspectiveState, ResignedState, UnattachedState), KIP-595 and
KIP-996; simplifications are listed in docs/quorum.md.
"""

from __future__ import annotations

import random
from typing import Any

from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.messages import (
    FETCH_DIVERGING,
    FETCH_FENCED,
    FETCH_OK,
    FETCH_SNAPSHOT,
    LEADER_CHANGE,
    SNAPSHOT_NOT_FOUND,
    VOTERS,
    BeginQuorumEpochRequest,
    EndQuorumEpochRequest,
    Entry,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    QuorumSnapshot,
    UpdateRaftVoterRequest,
    UpdateRaftVoterResponse,
    VoteRequest,
    VoteResponse,
    whole_batches,
)
from kraft.core.majority import majority_value
from kraft.core.node import Node, Pick, requires
from kraft.core.step import ReadyBuilder
from kraft.log.codec import decode, encode
from kraft.quorum.protocol import PROTOCOL
from kraft.quorum.storage import QuorumStorage, voter_nodes_of
from kraft.quorum.update_voter import ERROR_CODES, LeaderView, needs_update, serve, update_voter_request
from kraft.quorum.voters import (
    CONTROLLER_LISTENER,
    KRAFT_VERSION_0,
    KRAFT_VERSION_1,
    Endpoint,
    ReplicaKey,
    VoterNode,
    VoterSet,
    default_voter_node,
    directory_id_of,
)

ERROR_NAMES = {code: name for name, code in ERROR_CODES.items()}


def _leads(node: "QuorumNode") -> bool:
    return node.role is Role.LEADER


def _may_time_out(node: "QuorumNode") -> bool:
    if node.role is Role.PROSPECTIVE and node._is_quorum(node.votes_granted):
        return False  # it becomes Candidate first (spec Timeout)
    return (node.role is not Role.LEADER and not node.awaiting_leader
            and (node.is_voter or node.role is Role.RESIGNED))


def _may_fetch_any_voter(node: "QuorumNode") -> bool:
    if node.role is Role.UNATTACHED and node.leader_id is None:
        return True
    return node.role is Role.FOLLOWER and not node.is_voter


def _learns_leader_from_fetch(node: "QuorumNode", m: FetchResponse) -> bool:
    """The spec's ``LearnsLeaderFromFetch(n, m)``."""
    if m.leader is None or m.leader == node.id:
        return False
    if node.is_voter:
        return node.role is Role.UNATTACHED and node.leader_id is None and m.epoch >= node.current_epoch
    return m.epoch > node.current_epoch or (m.epoch == node.current_epoch and node.leader_id is None)


def _resigns_after_removal(node: "QuorumNode") -> bool:
    return node.role is Role.LEADER and not node.is_voter and node.voters_committed()


class QuorumNode(Node, declaration=PROTOCOL):
    """One replica.  Create with ``QuorumNode(node_id, voters, config, fs, rng=..., now_ms=...,
    observers=..., endpoints=...)``: ``voters`` is the bootstrap voter set, ``observers`` the other
    replicas, ``endpoints`` this replica's listeners (default: ``default_voter_node``'s)."""

    def __init__(
        self,
        node_id: int,
        voters: tuple[int, ...] | list[int],
        config: QuorumConfig,
        fs: Any,
        *,
        rng: random.Random,
        now_ms: int = 0,
        directory: str | None = None,
        disk_lost: bool = False,
        observers: tuple[int, ...] | list[int] = (),
        endpoints: tuple[Endpoint, ...] | None = None,
    ) -> None:
        self.id = node_id
        # its listeners (controller.listener.names / listeners): configuration, kept over restarts
        self.endpoints: tuple[Endpoint, ...] = default_voter_node(node_id).endpoints if endpoints is None \
            else tuple(endpoints)
        self.bootstrap_voters: tuple[int, ...] = tuple(sorted(voters))
        self.replicas: tuple[int, ...] = tuple(sorted(set(voters) | set(observers)))
        if node_id not in self.replicas:
            raise ValueError(f"node {node_id} is not one of the replicas {self.replicas}")
        self.config = config
        self.fs = fs
        self.rng = rng
        self.directory = directory or f"/kraft/node-{node_id}"
        self._rb = ReadyBuilder()
        self._recover(now_ms, disk_lost)

    # ------------------------------------------------------------------ recovery / bookkeeping
    def _recover(self, now: int, disk_lost: bool) -> None:
        self.storage = QuorumStorage.open(self.fs, self.directory, self.bootstrap_voters)
        epoch, leader, voted, awaiting = self.storage.read_quorum_state_full()
        self.current_epoch: int = epoch
        self.leader_id: int | None = leader
        self.voted_for: int | None = voted
        self.high_watermark = 0
        self.applied = 0  # committed records handed out in Ready.committed this incarnation
        self.votes_granted: set[int] = set()
        self.end_offsets: dict[int, int] = {v: 0 for v in self.replicas}
        self.epoch_start_offset = 0
        self.fetched_voters: set[int] = set()
        self.bqe_next: dict[int, int] = {}
        self.election_deadline: int | None = None
        self.fetch_deadline: int | None = None
        self.next_fetch_at: int | None = None
        self.check_quorum_deadline: int | None = None
        self.flush_deadline: int | None = None
        self.update_voter_at: int | None = None  # FollowerState.updateVoterPeriodTimer
        # bug ObserverSkipsFsync: the log holds an append left unflushed by a non-voter
        self.skipped_fsync = False
        self.has_fetched_from_leader = False
        # A voter that knows it lost its disk (KIP-853 gives it a new directory id) must not vote
        # or campaign before a leader has contacted it: see docs/quorum.md.  The flag is persisted
        # in the quorum-state file, so a later ordinary crash does not forget it.
        self.awaiting_leader = disk_lost or awaiting
        if disk_lost:
            self._persist()
        if leader == self.id:
            # QuorumState.initialize: a node that was leader comes back Resigned in that epoch.
            self.role = Role.RESIGNED
            self.election_deadline = now + self._random_election_timeout()
        elif leader is not None:
            self.role = Role.FOLLOWER
            self._reset_follower_timers(now)
        elif voted == self.id:
            # QuorumState.initialize: a node that voted for itself resumes its candidacy.
            self.role = Role.CANDIDATE
            self.votes_granted = {self.id}
            self.election_deadline = now + self._random_election_timeout()
        else:
            self.role = Role.UNATTACHED
            self._unattached_timers(now)

    def _unattached_timers(self, now: int) -> None:
        """A voter campaigns once its election timer fires (not while it awaits a leader after a
        disk loss: spec Timeout needs ~awaitingLeader[n]), and until then fetches from the
        bootstrap servers to learn the leader (``KafkaRaftClient.pollUnattachedAsVoter`` ->
        ``pollUnattachedCommon``); an observer only fetches (``pollUnattachedAsObserver``), and
        so does a voter back from a disk loss (its new directory id makes it an observer in Kafka)."""
        if self.is_voter:
            self.election_deadline = None if self.awaiting_leader else now + self._random_election_timeout()
            self.next_fetch_at = now
        else:
            self.election_deadline = None
            self.next_fetch_at = now

    def _random_election_timeout(self) -> int:
        # KafkaRaftClient.randomElectionTimeoutMs: timeout + uniform [0, timeout)
        return self.config.election_timeout_ms + self.rng.randrange(self.config.election_timeout_ms)

    # ------------------------------------------------------------------ the voter set
    def voter_set_at(self, offset: int | None = None) -> tuple[int, ...]:
        """The spec's ``VoterSetAt(n, offset)`` (``VoterSet(n)`` without ``offset``): the voters of
        the last VotersRecord below ``offset``, else of the snapshot at the log start, else the
        bootstrap set (``VoterSetHistory.valueAtOrBefore``)."""
        storage = self.storage
        found = storage.voters_at(storage.end_offset if offset is None else offset)
        if found is not None:
            return found
        base = storage.snapshots.get(storage.log_start_offset)
        return base.voters if base is not None else self.bootstrap_voters

    def voter_nodes_at(self, offset: int | None = None) -> tuple[VoterNode, ...]:
        """``voter_set_at`` in full: the voters' keys, endpoints and kraft.version ranges."""
        storage = self.storage
        entry = storage.voters_entry_at(storage.end_offset if offset is None else offset)
        if entry is not None:
            return voter_nodes_of(entry.voters, entry.nodes)
        base = storage.snapshots.get(storage.log_start_offset)
        if base is not None:
            return voter_nodes_of(base.voters, base.nodes)
        return voter_nodes_of(self.bootstrap_voters)

    @property
    def local_voter_node(self) -> VoterNode:
        """This replica as a voter set should list it (``QuorumState.localVoterNodeOrThrow``)."""
        return VoterNode(ReplicaKey(self.id, directory_id_of(self.id)), self.endpoints, KRAFT_VERSION_0,
                         KRAFT_VERSION_1)

    def needs_voter_update(self) -> bool:
        """``pollFollowerAsVoter``'s test: reconfiguration supported and the latest voter set lists
        this voter other than it is (``VoterSet.voterNodeNeedsUpdate``)."""
        return needs_update(VoterSet(self.voter_nodes_at()), self.local_voter_node, self.config.kraft_version)

    @property
    def voters(self) -> tuple[int, ...]:
        """The spec's ``VoterSet(n)``: the latest voter set of this node's log."""
        return self.voter_set_at()

    @property
    def is_voter(self) -> bool:
        """The spec's ``IsVoter(n)`` (``QuorumState.isVoter``)."""
        return self.id in self.voters

    def _others(self) -> list[int]:
        """The spec's ``Others(n)``: the voters but this node."""
        return [v for v in self.voters if v != self.id]

    def voters_committed(self) -> bool:
        """The spec's ``VotersCommitted(n)``: every VotersRecord of the log is below the HW."""
        return all(o < self.high_watermark for o in self.storage.voter_offsets)

    def _is_quorum(self, ids: set[int]) -> bool:
        """The spec's ``IsQuorumOf(ids, VoterSet(n))``: only members count."""
        voters = self.voters
        return 2 * len(ids & set(voters)) > len(voters)

    def _persist(self) -> None:
        # ForgetVoteOnRestart (bug): a vote for another voter is not written (a vote for self is,
        # as part of becoming candidate).
        voted = self.voted_for
        if self.config.ForgetVoteOnRestart and voted != self.id:
            voted = None
        self.storage.write_quorum_state(self.current_epoch, self.leader_id, voted, self.bootstrap_voters,
                                        awaiting_leader=self.awaiting_leader)
        self._rb.wrote("state", epoch=self.current_epoch, leader=self.leader_id, votedFor=voted,
                       awaitingLeader=self.awaiting_leader)


    def _reset_follower_timers(self, now: int) -> None:
        self.fetch_deadline = now + self.config.fetch_timeout_ms
        self.update_voter_at = now + self._update_voter_period()
        self.next_fetch_at = now
        self.election_deadline = None
        self.has_fetched_from_leader = False

    def _clear_leader_state(self) -> None:
        self.end_offsets = {v: 0 for v in self.replicas}
        self.epoch_start_offset = 0
        self.fetched_voters = set()
        self.bqe_next = {}
        self.check_quorum_deadline = None

    def _to_unattached(self, epoch: int, now: int) -> None:
        """Move to Unattached in a higher epoch (no vote, no leader); persisted first."""
        assert epoch > self.current_epoch
        self.current_epoch = epoch
        self.voted_for = None
        self.leader_id = None
        self.role = Role.UNATTACHED
        self.votes_granted = set()
        self._clear_leader_state()
        self.fetch_deadline = self.next_fetch_at = self.update_voter_at = None
        self._unattached_timers(now)
        self._persist()

    def _prospective_loses(self, now: int) -> None:
        """The spec's ``ProspectiveLoses`` (KIP-996, ``KafkaRaftClient.maybeHandleElectionLoss``,
        ``prospectiveTransitionAfterElectionLoss``): back to Follower of the leader known in this
        epoch, else Unattached in this epoch with the vote cast in it kept.  A resigned leader that
        campaigned keeps knowing itself as that epoch's leader, so a restart brings it back Resigned;
        nothing persisted changes."""
        if self.leader_id is not None and self.leader_id != self.id:
            self._to_follower(self.current_epoch, self.leader_id, now, heard_from_leader=False)
            return
        self.role = Role.UNATTACHED
        self.votes_granted = set()
        self._clear_leader_state()
        self.fetch_deadline = self.next_fetch_at = None
        self._unattached_timers(now)

    def _to_follower(self, epoch: int, leader: int, now: int, *, heard_from_leader: bool = True) -> None:
        """The spec's ``BecomeFollowerOf``; ``heard_from_leader``: the leader itself told this node
        (BeginQuorumEpoch), which ends a wait for a leader after a disk loss."""
        if epoch > self.current_epoch:
            self.voted_for = None
        self.current_epoch = epoch
        self.leader_id = leader
        self.role = Role.FOLLOWER
        self.votes_granted = set()
        if heard_from_leader:
            self.awaiting_leader = False
        self._clear_leader_state()
        self._reset_follower_timers(now)
        self._persist()

    def _last_epoch_and_offset(self) -> tuple[int, int]:
        return self.storage.last_epoch, self.storage.end_offset

    def _start_election_round(self, now: int) -> None:
        """Shared by Timeout and HandleEndQuorumEpochRequest: to Prospective (pre-vote) or Candidate."""
        if self.config.PreVote:
            self.role = Role.PROSPECTIVE
            self.votes_granted = {self.id}
            self.election_deadline = now + self._random_election_timeout()
            self.fetch_deadline = self.next_fetch_at = None
            self._clear_leader_state()
            last_epoch, last_offset = self._last_epoch_and_offset()
            for v in self._others():
                self.send(VoteRequest(self.id, v, self.current_epoch + 1, last_epoch, last_offset, True))
        else:
            self._become_candidate(now)

    def _become_candidate(self, now: int) -> None:
        self.current_epoch += 1
        self.voted_for = self.id
        self.leader_id = None
        self.role = Role.CANDIDATE
        self.votes_granted = {self.id}
        self._clear_leader_state()
        self.fetch_deadline = self.next_fetch_at = None
        self.election_deadline = now + self._random_election_timeout()
        self._persist()
        last_epoch, last_offset = self._last_epoch_and_offset()
        for v in self._others():
            self.send(VoteRequest(self.id, v, self.current_epoch, last_epoch, last_offset, False))

    def _apply_committed(self) -> None:
        """Hand out what became committed: the latest snapshot first when the next record to
        apply is below the log start (KafkaRaftClient.updateListenersProgress loads it through
        handleLoadSnapshot), then the committed records in offset order."""
        storage = self.storage
        if self.applied < storage.log_start_offset and self.applied < self.high_watermark:
            snapshot = storage.latest_snapshot
            if snapshot is not None:
                self._rb.committed.append((snapshot.end, snapshot))
                self.applied = snapshot.end
        self.applied = max(self.applied, storage.log_start_offset)
        while self.applied < self.high_watermark:
            self._rb.committed.append((self.applied, storage.entry(self.applied)))
            self.applied += 1

    def _maybe_advance_high_watermark(self) -> None:
        """LeaderState.maybeUpdateHighWatermark: the offset a majority of the latest voter set
        reached (the leader counts its flushed offset if it is a member; bug
        ``LeaderCountsSelfWhenRemoved``: always), only if > epochStartOffset, never lowered.
        Observers' fetch offsets do not count."""
        flushed = self.storage.flushed_offset
        counted = set(self.voters)
        if self.config.LeaderCountsSelfWhenRemoved:
            counted.add(self.id)
        candidate = majority_value(flushed if v == self.id else self.end_offsets[v] for v in sorted(counted))
        if (candidate > self.epoch_start_offset or self.config.HwmFromAnyEpoch) and candidate > self.high_watermark:
            self.high_watermark = candidate
            self._apply_committed()

    def _log_ok(self, last_epoch: int, last_offset: int) -> bool:
        if self.config.VoteWithoutLogCheck:
            return True
        my_epoch, my_offset = self._last_epoch_and_offset()
        return last_epoch > my_epoch or (last_epoch == my_epoch and last_offset >= my_offset)

    # ------------------------------------------------------------------ the step surface
    def due(self, now: int) -> Pick | None:
        """The internal/timer action enabled at ``now`` (handler, keyword args), if any.  Called
        only from ``step``: it also retires timers that came due with nothing to do."""
        cls = type(self)
        role = self.role
        if role is Role.PROSPECTIVE and self._is_quorum(self.votes_granted):
            return (cls.become_candidate, {})
        if role is Role.CANDIDATE and self._is_quorum(self.votes_granted):
            return (cls.become_leader, {})
        if role is Role.LEADER:
            if _resigns_after_removal(self):
                return (cls.resign_after_removal, {})
            others = self._others()
            for d in sorted(self.bqe_next):
                if d not in others:
                    del self.bqe_next[d]  # no longer a voter
                elif now >= self.bqe_next[d]:
                    return (cls.send_begin_quorum_epoch, {"d": d})
            if self.flush_deadline is not None and now >= self.flush_deadline:
                if self.storage.flushed_offset < self.storage.end_offset:
                    return (cls.flush, {})
                self.flush_deadline = None
            if self.check_quorum_deadline is not None and now >= self.check_quorum_deadline:
                if self._check_quorum_ok():
                    self.check_quorum_deadline = now + self.config.check_quorum_timeout_ms
                    self.fetched_voters = set()
                else:
                    return (cls.check_quorum_resign, {})
            return None
        if role is Role.FOLLOWER:
            if self.storage.flushed_offset < self.storage.end_offset and not self.skipped_fsync:
                return (cls.flush, {})  # a follower's fetch offset must be durable
            if self.fetch_deadline is not None and now >= self.fetch_deadline:
                if self.is_voter and _may_time_out(self):
                    return (cls.timeout, {})
                if self.is_voter:  # awaiting a leader after a disk loss: no election (spec Timeout)
                    self.fetch_deadline = None
                else:  # an observer asks another voter who leads (pollFollowerAsObserver)
                    self.fetch_deadline = now + self.config.fetch_timeout_ms
                    other = self._pick_voter(exclude=self.leader_id)
                    if other is not None:
                        return (cls.send_any_voter_fetch, {"d": other})
            if self._update_voter_due(now):
                return (cls.send_update_raft_voter, {})
            if self.next_fetch_at is not None and now >= self.next_fetch_at:
                return (cls.send_fetch_request, {})
            return None
        if self.election_deadline is not None and now >= self.election_deadline:
            if _may_time_out(self):
                return (cls.timeout, {})
            self.election_deadline = None  # an observer does not campaign
        if role is Role.UNATTACHED:
            return self._due_bootstrap_fetch(now)
        return None

    def _due_bootstrap_fetch(self, now: int) -> Pick | None:
        """An Unattached replica that knows no leader fetches from a bootstrap server
        (``pollUnattachedAsObserver``; a voter while its election timer runs, KAFKA-17030)."""
        if self.leader_id is None and self.next_fetch_at is not None and now >= self.next_fetch_at:
            other = self._pick_voter(exclude=None)
            if other is not None:
                return (type(self).send_any_voter_fetch, {"d": other})
            self.next_fetch_at = now + self.config.request_timeout_ms
        return None

    def _pick_voter(self, exclude: int | None) -> int | None:
        """A random voter other than this node and ``exclude`` to fetch from, as an observer
        picks one of the bootstrap servers (``RequestManager.findReadyBootstrapServer``)."""
        choices = [v for v in self._others() if v != exclude]
        return self.rng.choice(choices) if choices else None

    def next_deadline(self) -> int | None:
        """The earliest virtual time at which a ``Tick`` may take an action without other input."""
        times = [self.election_deadline, self.check_quorum_deadline, self.flush_deadline]
        if self.role is Role.FOLLOWER:
            times += [self.fetch_deadline, self.next_fetch_at]
            if self.is_voter and self.update_voter_at is not None and self.needs_voter_update():
                times.append(self.update_voter_at)
            if self.storage.flushed_offset < self.storage.end_offset and not self.skipped_fsync:
                return 0
        if self.role is Role.UNATTACHED and self.leader_id is None:
            times.append(self.next_fetch_at)
        if self.role is Role.LEADER:
            times += list(self.bqe_next.values())
            if _resigns_after_removal(self):
                return 0
        if self.role in (Role.PROSPECTIVE, Role.CANDIDATE) and self._is_quorum(self.votes_granted):
            return 0
        live = [t for t in times if t is not None]
        return min(live) if live else None

    def _check_quorum_ok(self) -> bool:
        return self._is_quorum(self.fetched_voters | {self.id})

    # ------------------------------------------------------------------ spec actions
    @requires(_may_time_out, "a leader, a voter awaiting a leader after a disk loss, a Prospective with "
                             "a majority of pre-votes, or an observer that is not Resigned does not time out")
    def timeout(self, now: int) -> None:
        """Spec action Timeout(n): election / fetch timer fired.  A Prospective voter's round is
        lost (``ProspectiveLoses``); any other voter becomes Prospective (pre-vote) or Candidate; an
        observer (a leader that removed itself) leaves Resigned for Unattached in the next epoch
        (``KafkaRaftClient.pollResigned``)."""
        if self.is_voter and self.role is Role.PROSPECTIVE:
            self._prospective_loses(now)
        elif self.is_voter:
            self._start_election_round(now)
        else:
            self._to_unattached(self.current_epoch + 1, now)

    @requires(lambda n: n.role is Role.PROSPECTIVE and n._is_quorum(n.votes_granted),
              "not Prospective with a majority of pre-votes")
    def become_candidate(self, now: int) -> None:
        """Spec action BecomeCandidate(n): Prospective with a majority of pre-votes -> Candidate."""
        self._become_candidate(now)

    def awaits_vote_from(self, d: int) -> bool:
        """A Candidate with no grant recorded from voter ``d`` (``CandidateState.unrecordedVoters``;
        refusals are not kept)."""
        return self.role is Role.CANDIDATE and d in self._others() and d not in self.votes_granted

    @requires(lambda n: n.role is Role.CANDIDATE, "not a Candidate")
    def resend_vote_request(self, d: int, now: int) -> bool | None:
        """Spec action ResendVoteRequest(n, d): the connection to ``d`` was reset (its disk was
        lost) before ``d`` answered; send this round's VoteRequest again (``KafkaRaftClient.
        pollCandidate`` -> ``maybeSendVoteRequests``).  No step (False) when ``d``'s grant is recorded."""
        if not self.awaits_vote_from(d):
            return False
        last_epoch, last_offset = self._last_epoch_and_offset()
        self.send(VoteRequest(self.id, d, self.current_epoch, last_epoch, last_offset, False))

    def _voter_key_matches(self) -> bool:
        """KafkaRaftClient.isValidVoterKey: a replica with a new disk (new directory id) is not the
        voter a request names (bug IgnoreDirectoryIdInVote: it answers as if it were)."""
        return self.config.IgnoreDirectoryIdInVote or not self.awaiting_leader

    def handle_vote_request(self, m: VoteRequest, now: int) -> None:
        """Spec action HandleVoteRequest(n, m).

        Pre-vote (KIP-996): never changes the voter's state; granted iff the request is not for an
        older epoch, the log check passes and the role allows it: a Leader or Resigned voter never
        grants, a Follower grants only while it has not fetched from its leader
        (FollowerState.hasFetchedFromLeader).  Real vote: a higher epoch first moves the voter to
        Unattached in it; granted iff Unattached/Prospective and (already voted for this candidate, or
        no vote and no known leader and the log check passes); persisted before the response."""
        if m.preVote:
            granted = (m.epoch >= self.current_epoch and self._voter_key_matches()
                       and self._log_ok(m.lastEpoch, m.lastOffset)
                       and self.role not in (Role.LEADER, Role.RESIGNED)
                       and not (self.role is Role.FOLLOWER and self.has_fetched_from_leader))
            self.send(VoteResponse(self.id, m.source, self.current_epoch, granted, True))
            return
        if m.epoch > self.current_epoch:
            self._to_unattached(m.epoch, now)
        granted = (m.epoch == self.current_epoch and self._voter_key_matches()
                   and self.role in (Role.UNATTACHED, Role.PROSPECTIVE)
                   and (self.voted_for == m.source
                        or (self.voted_for is None and self.leader_id is None
                            and self._log_ok(m.lastEpoch, m.lastOffset))))
        if granted and self.voted_for is None:
            self.voted_for = m.source
            self._persist()  # durable before the response leaves
            self.election_deadline = now + self._random_election_timeout()
        self.send(VoteResponse(self.id, m.source, self.current_epoch, granted, False))

    def handle_vote_response(self, m: VoteResponse, now: int) -> None:
        """Spec action HandleVoteResponse(n, m): count grants of the current round."""
        if m.epoch > self.current_epoch:
            self._to_unattached(m.epoch, now)
            return
        if not m.granted:
            return
        if m.preVote and self.role is Role.PROSPECTIVE:
            self.votes_granted.add(m.source)  # non-binding: counted whatever the responder's epoch
        elif not m.preVote and self.role is Role.CANDIDATE and m.epoch == self.current_epoch:
            self.votes_granted.add(m.source)

    @requires(lambda n: n.role is Role.CANDIDATE and n._is_quorum(n.votes_granted),
              "not a Candidate with a majority of votes")
    def become_leader(self, now: int) -> None:
        """Spec action BecomeLeader(n): Candidate with a majority -> Leader; LeaderChange at epoch start."""
        self.role = Role.LEADER
        self.leader_id = self.id
        self._persist()
        self._clear_leader_state()
        self.votes_granted = set()
        # QuorumState.transitionToLeader: the leader's high watermark starts unknown.
        self.high_watermark = 0
        self.election_deadline = None
        self.epoch_start_offset = self.storage.append_leader_change(self.current_epoch, self.id, self.voters, now)
        self._rb.wrote("append", offset=self.epoch_start_offset, epoch=self.current_epoch, value=LEADER_CHANGE)
        self.flush_deadline = now + self.config.flush_delay_ms
        self.check_quorum_deadline = now + self.config.check_quorum_timeout_ms if len(self.voters) > 1 else None
        self.bqe_next = {v: now for v in self._others()}

    @requires(_leads, "not the leader")
    def send_begin_quorum_epoch(self, d: int, now: int) -> bool | None:
        """Spec action SendBeginQuorumEpoch(n, d): (re)send BeginQuorumEpoch to a voter that has not
        fetched within ``begin_quorum_epoch_retry_ms`` (one of ``Others(n)``)."""
        if d not in self.bqe_next or d not in self._others():
            return False
        self.send(BeginQuorumEpochRequest(self.id, d, self.current_epoch))
        self.bqe_next[d] = now + self.config.begin_quorum_epoch_retry_ms

    def handle_begin_quorum_epoch_request(self, m: BeginQuorumEpochRequest, now: int) -> None:
        """Spec action HandleBeginQuorumEpochRequest(n, m): follow the sender in that epoch."""
        if m.epoch < self.current_epoch:
            return
        if m.epoch > self.current_epoch or self.role in (Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE):
            self._to_follower(m.epoch, m.source, now)
        elif self.role is Role.FOLLOWER and self.leader_id == m.source:
            self.fetch_deadline = now + self.config.fetch_timeout_ms

    def handle_end_quorum_epoch_request(self, m: EndQuorumEpochRequest, now: int) -> None:
        """Spec action HandleEndQuorumEpochRequest(n, m): the leader resigned; a voter starts an
        election (an observer does not campaign)."""
        if (m.epoch == self.current_epoch and self.leader_id == m.source and self.role is Role.FOLLOWER
                and self.is_voter):
            self._start_election_round(now)

    @requires(lambda n: n.role is Role.FOLLOWER and n.leader_id is not None, "not a Follower of a known leader")
    def send_fetch_request(self, now: int) -> None:
        """Spec action SendFetchRequest(n): Fetch(fetchOffset = log end, lastFetchedEpoch) to the leader."""
        self._send_fetch(self.leader_id, now)

    def _send_fetch(self, d: int, now: int) -> None:
        self.send(FetchRequest(self.id, d, self.current_epoch, self.storage.end_offset, self.storage.last_epoch))
        self.next_fetch_at = now + self.config.request_timeout_ms

    @requires(_may_fetch_any_voter, "not Unattached without a leader, nor an observer that is a Follower")
    def send_any_voter_fetch(self, d: int, now: int) -> bool | None:
        """Spec action SendAnyVoterFetch(n, d): fetch from voter ``d`` (not the leader followed) to
        learn who leads: an observer (``KafkaRaftClient.pollUnattachedAsObserver``,
        ``pollFollowerAsObserver``, ``maybeSendAnyVoterFetch``) or an Unattached voter
        (``pollUnattachedAsVoter`` -> ``maybeSendFetchToAnyBootstrap``, KAFKA-17030).  No step
        (False) when ``d`` is not another voter, or is the leader this node follows."""
        if d not in self._others() or (self.role is Role.FOLLOWER and d == self.leader_id):
            return False
        self._send_fetch(d, now)

    def handle_fetch_request(self, m: FetchRequest, now: int) -> None:
        """Spec action HandleFetchRequest(n, m): leader answers FencedEpoch, Diverging or Ok."""
        if m.epoch != self.current_epoch or self.role is not Role.LEADER:
            # not the leader of the fetcher's epoch: FencedEpoch carrying our epoch (a fetcher in a
            # higher epoch ignores it and retries, one in a lower epoch moves to ours)
            self.send(FetchResponse(self.id, m.source, self.current_epoch, FETCH_FENCED, (), 0, 0, 0,
                                     m.fetchOffset, m.lastFetchedEpoch, leader=self.leader_id))
            return
        if m.source in self.voters:
            self.fetched_voters.add(m.source)
            # a voter that stops fetching gets BeginQuorumEpoch again (it may have become
            # Prospective while this leader is alive and would otherwise never find it again)
            self.bqe_next[m.source] = now + self.config.begin_quorum_epoch_retry_ms
            if self._check_quorum_ok():
                self.check_quorum_deadline = now + self.config.check_quorum_timeout_ms
                self.fetched_voters = set()
        snapshot = self._snapshot_to_send(m.fetchOffset, m.lastFetchedEpoch)
        if snapshot is not None:
            self.send(FetchResponse(self.id, m.source, self.current_epoch, FETCH_SNAPSHOT, (),
                                     self.high_watermark, 0, 0, m.fetchOffset, m.lastFetchedEpoch,
                                     snapshot.end, snapshot.epoch, leader=self.id))
            return
        div_epoch, div_end = self._diverging(m.fetchOffset, m.lastFetchedEpoch)
        if div_epoch is not None:
            self.send(FetchResponse(self.id, m.source, self.current_epoch, FETCH_DIVERGING, (),
                                     self.high_watermark, div_epoch, div_end, m.fetchOffset, m.lastFetchedEpoch,
                                     leader=self.id))
            return
        if m.source in self.end_offsets:
            self.end_offsets[m.source] = m.fetchOffset
        self._maybe_advance_high_watermark()
        entries = self._fetch_entries(m.fetchOffset)
        self.send(FetchResponse(self.id, m.source, self.current_epoch, FETCH_OK, entries,
                                 self.high_watermark, 0, 0, m.fetchOffset, m.lastFetchedEpoch, leader=self.id))

    def _snapshot_to_send(self, offset: int, epoch: int) -> QuorumSnapshot | None:
        """The snapshot branch of ``ReplicatedLog.validateOffsetAndEpoch``: the latest snapshot
        when this leader has one and the fetch position lies below its log start, at its log start
        in another epoch, or in an epoch older than its earliest snapshot (``None`` otherwise, and
        always for a fetch from offset 0 of a log starting at 0)."""
        storage = self.storage
        start = storage.log_start_offset
        earliest = storage.earliest_snapshot
        if (start == 0 and offset == 0) or earliest is None or self.config.NoSnapshotRedirectBelowLogStart:
            return None
        if offset < start or (offset == start and epoch != earliest.epoch) or epoch < earliest.epoch:
            return storage.latest_snapshot
        return None

    def _diverging(self, offset: int, epoch: int) -> tuple[int | None, int]:
        """The diverging branch of ``validateOffsetAndEpoch``: (epoch, end offset) to answer, or
        ``(None, 0)`` when the position is valid.  Bug ``NoSnapshotRedirectBelowLogStart``: a
        position below the log start is answered with the log start as the divergence point."""
        storage = self.storage
        if storage.log_start_offset == 0 and offset == 0:
            return (None, 0)
        if offset < storage.log_start_offset:  # only reached with NoSnapshotRedirectBelowLogStart
            return (storage.base_epoch, storage.log_start_offset)
        div_epoch, div_end = storage.end_offset_for_epoch(epoch)
        if div_epoch != epoch or offset > div_end:
            return (div_epoch, div_end)
        return (None, 0)

    def _fetch_entries(self, start: int) -> tuple[Entry, ...]:
        """The entries a fetch from ``start`` returns: up to ``max_fetch_entries``, extended to the
        end of the batch it stops in (a fetch returns whole batches, and at least one even when it
        exceeds the limit: KIP-74)."""
        log = self.storage.entries_from(start)
        stop = len(log)
        if self.config.max_fetch_entries is not None and self.config.max_fetch_entries < stop:
            stop = self.config.max_fetch_entries
            while not log[stop - 1].last_in_batch:
                stop += 1
        return tuple(log[:stop])

    def handle_fetch_response(self, m: FetchResponse, now: int) -> None:
        """Spec action HandleFetchResponse(n, m): truncate on Diverging; append, flush, adopt the HWM on Ok.
        First ``LearnsLeaderFromFetch(n, m)``: an observer follows the leader an answer names when
        it is of a later epoch, or of its epoch while it knows no leader
        (``KafkaRaftClient.maybeHandleCommonResponse``); so does an Unattached voter that knows no
        leader, for an answer of its epoch or a later one (KAFKA-17030), a voter back from a disk
        loss included; its wait ends with the first answer of the leader itself (``HeardFromLeader``
        or an answer of the leader it follows)."""
        if _learns_leader_from_fetch(self, m):
            self._to_follower(m.epoch, m.leader, now, heard_from_leader=m.source == m.leader)
            return
        if m.epoch > self.current_epoch:
            self._to_unattached(m.epoch, now)
            return
        if m.epoch < self.current_epoch or self.role is not Role.FOLLOWER or m.source != self.leader_id:
            return
        if self.awaiting_leader:
            self.awaiting_leader = False  # the leader it follows answered
            self._persist()
        end = self.storage.end_offset
        at = m.fetchOffset
        if not self.storage.log_start_offset <= at <= end or m.lastFetchedEpoch != self.storage.epoch_before(at):
            # not an answer to a fetch from the log this follower holds now (stale or duplicated:
            # Kafka discards it by correlation id), e.g. a Diverging answer to an offset the log
            # has since reached again in a later epoch
            return
        if m.result == FETCH_OK and (m.fetchOffset == end or
                                     (self.config.NoTruncateOnDivergence and m.fetchOffset < end)):
            # (bug variant: a response for a rewound position is appended after the stale suffix)
            self.has_fetched_from_leader = True
            self.fetch_deadline = now + self.config.fetch_timeout_ms
            start = self.storage.end_offset
            entries = whole_batches(m.entries)
            for k, entry in enumerate(entries):
                self._rb.wrote("append", offset=start + k, epoch=entry.epoch, value=entry.value)
            # Kafka asks whether the node is a voter before the appended records update the voter set
            self.skipped_fsync = self.config.ObserverSkipsFsync and not self.is_voter
            self.storage.append_entries(entries, m.source, self.voters, now)
            if not self.skipped_fsync:
                # KafkaRaftClient.appendAsFollower: a controller flushes before its next fetch
                self.storage.flush()
                self._rb.wrote("flush", offset=self.storage.flushed_offset)
            hwm = min(m.highWatermark, self.storage.end_offset)
            if hwm > self.high_watermark:  # FollowerState.updateHighWatermark never goes back
                self.high_watermark = hwm
                self._apply_committed()
            self.next_fetch_at = now if m.entries else now + self.config.fetch_interval_ms
        elif m.result == FETCH_DIVERGING and m.fetchOffset == end:
            self.has_fetched_from_leader = True
            self.fetch_deadline = now + self.config.fetch_timeout_ms
            # truncate to min(diverging end offset, own end offset of the largest epoch <= it)
            target = min(m.divergingEndOffset, self.storage.end_offset_for_epoch(m.divergingEpoch)[1])
            if self.config.NoTruncateOnDivergence:
                # bug variant: keep the log, fetch again from the rewound position at once
                epoch = self.storage.epoch_before(target)
                self.send(FetchRequest(self.id, m.source, self.current_epoch, target, epoch))
                self.next_fetch_at = now + self.config.request_timeout_ms
            else:
                self._rb.wrote("truncate", offset=self.storage.truncate_to(target))
                self.next_fetch_at = now
        elif m.result == FETCH_SNAPSHOT and m.fetchOffset == end:
            # KafkaRaftClient.handleFetchResponse, the SnapshotId branch: fetch that snapshot
            self.has_fetched_from_leader = True
            self.fetch_deadline = now + self.config.fetch_timeout_ms
            self.send(FetchSnapshotRequest(self.id, m.source, self.current_epoch, m.snapshotEnd, m.snapshotEpoch))
            self.next_fetch_at = now + self.config.request_timeout_ms
        # anything else is stale (an answer for another fetch offset) and ignored

    def handle_fetch_snapshot_request(self, m: FetchSnapshotRequest, now: int) -> None:
        """Spec action HandleFetchSnapshotRequest(n, m) (KafkaRaftClient.handleFetchSnapshotRequest):
        the leader of the requester's epoch sends the whole snapshot, or SnapshotNotFound; anyone
        else answers FencedEpoch with its epoch."""
        if m.epoch != self.current_epoch or self.role is not Role.LEADER:
            self.send(FetchSnapshotResponse(self.id, m.source, self.current_epoch, FETCH_FENCED,
                                            m.snapshotEnd, m.snapshotEpoch, ()))
            return
        if m.source in self._others():
            self.fetched_voters.add(m.source)  # LeaderState.updateCheckQuorumForFollowingVoter
            self.bqe_next[m.source] = now + self.config.begin_quorum_epoch_retry_ms
        snapshot = self.storage.snapshots.get(m.snapshotEnd)
        if snapshot is None or snapshot.epoch != m.snapshotEpoch:
            self.send(FetchSnapshotResponse(self.id, m.source, self.current_epoch, SNAPSHOT_NOT_FOUND,
                                            m.snapshotEnd, m.snapshotEpoch, ()))
            return
        self.send(FetchSnapshotResponse(self.id, m.source, self.current_epoch, FETCH_OK,
                                        snapshot.end, snapshot.epoch, snapshot.records, snapshot.voters,
                                        snapshot.nodes))

    def handle_fetch_snapshot_response(self, m: FetchSnapshotResponse, now: int) -> None:
        """Spec action HandleFetchSnapshotResponse(n, m) (KafkaRaftClient.handleFetchSnapshotResponse):
        a snapshot newer than the log (by epoch, then end offset) is stored and replaces the log
        (``truncateToLatestSnapshot``); the high watermark reaches at least its end."""
        if m.epoch > self.current_epoch:
            self._to_unattached(m.epoch, now)
            return
        if m.epoch < self.current_epoch or self.role is not Role.FOLLOWER or m.source != self.leader_id:
            return
        self.next_fetch_at = now
        if m.result != FETCH_OK:
            return  # SnapshotNotFound: fetch again
        self.fetch_deadline = now + self.config.fetch_timeout_ms
        snapshot = QuorumSnapshot(m.snapshotEnd, m.snapshotEpoch, m.values, m.voters, m.nodes)
        storage = self.storage
        last_epoch = storage.last_epoch
        if not (snapshot.epoch > last_epoch or (snapshot.epoch == last_epoch and snapshot.end > storage.end_offset)):
            # not newer than the log: dropped.  Kafka fetches nothing else while it fetches a
            # snapshot (FollowerState.fetchingSnapshot), so this is an overtaken answer
            return
        storage.add_snapshot(snapshot, now)
        self._rb.wrote("snapshot", end=snapshot.end, epoch=snapshot.epoch)
        storage.install_snapshot(snapshot, keep_suffix=self.config.KeepSuffixAfterSnapshotInstall)
        self._rb.wrote("logStart", offset=storage.log_start_offset)
        if snapshot.end > self.high_watermark:
            self.high_watermark = snapshot.end
            self._apply_committed()

    def take_snapshot(self, k: int, now: int) -> bool | None:
        """Spec action TakeSnapshot(n, k): write a snapshot of the prefix below ``k``
        (``KafkaMetadataLog.createNewSnapshot``, which refuses an id above the high watermark;
        bug ``SnapshotBeyondHighWatermark``: any offset up to the log end).  No step (False) when
        ``k`` is not past the log start and every snapshot, not committed, or inside a batch."""
        if not self.may_snapshot(k):
            return False
        storage = self.storage
        snapshot = QuorumSnapshot(k, storage.epoch_before(k), storage.snapshot_records(k), self.voter_set_at(k),
                                  self.voter_nodes_at(k))
        storage.add_snapshot(snapshot, now)
        self._rb.wrote("snapshot", end=snapshot.end, epoch=snapshot.epoch)

    def may_snapshot(self, k: int) -> bool:
        storage = self.storage
        limit = storage.end_offset if self.config.SnapshotBeyondHighWatermark else self.high_watermark
        return (storage.log_start_offset < k <= min(limit, storage.end_offset)
                and all(end < k for end in storage.snapshots) and storage.at_batch_boundary(k))

    def delete_before_snapshot(self, o: int, now: int) -> bool | None:
        """Spec action DeleteBeforeSnapshot(n, o): move the log start offset to the end of one of
        the snapshots (``KafkaMetadataLog.deleteBeforeSnapshot``; UnifiedLog refuses a log start
        beyond the high watermark); the entries and the snapshots below it go.  Bug
        ``RetentionDeletesPastSnapshot``: also an offset past every snapshot (KAFKA-14238).  No
        step (False) when ``o`` is none of these."""
        if not self.may_delete_before(o):
            return False
        self.storage.delete_before(o)
        self._rb.wrote("logStart", offset=o)

    def may_delete_before(self, o: int) -> bool:
        storage = self.storage
        if not storage.log_start_offset < o <= min(self.high_watermark, storage.end_offset):
            return False
        if o in storage.snapshots:
            return True
        return (self.config.RetentionDeletesPastSnapshot and all(end < o for end in storage.snapshots)
                and storage.at_batch_boundary(o))

    @requires(_leads, "not the leader")
    def client_append(self, v: int, now: int) -> int:
        """Spec action ClientAppend(n, v): the leader appends a data record (not yet flushed).
        In the metadata quorum ``v`` is a tuple of record values, appended as one batch; the
        answer is then the offset of its last record."""
        offset = self.storage.append_value(self.current_epoch, v, now)
        self._rb.wrote("append", offset=offset, epoch=self.current_epoch, value=v)
        if self.flush_deadline is None:
            self.flush_deadline = now + self.config.flush_delay_ms
        return offset

    @requires(lambda n: n.storage.flushed_offset < n.storage.end_offset, "nothing to flush")
    def flush(self, now: int) -> None:
        """Spec action Flush(n): make the log durable; a leader's flushed offset counts toward the HWM."""
        self.storage.flush()
        self._rb.wrote("flush", offset=self.storage.flushed_offset)
        self.flush_deadline = None
        self.skipped_fsync = False
        if self.role is Role.LEADER:
            self.end_offsets[self.id] = self.storage.flushed_offset
            self._maybe_advance_high_watermark()

    @requires(_leads, "not the leader")
    def check_quorum_resign(self, now: int) -> None:
        """Spec action CheckQuorumResign(n): no fetches from a majority within the timeout ->
        Resigned, telling the other voters as a graceful resignation does (Kafka's pollLeader
        takes the same transitionToResigned path for both; the network loses what cannot arrive)."""
        self._resign(now)

    @requires(_leads, "not the leader")
    def resign(self, now: int) -> None:
        """Spec action Resign(n): graceful resignation, EndQuorumEpoch to every other voter."""
        self._resign(now)

    def _resign(self, now: int) -> None:
        for v in self._others():
            self.send(EndQuorumEpochRequest(self.id, v, self.current_epoch))
        self.role = Role.RESIGNED
        self.high_watermark = 0  # ResignedState keeps no high watermark
        self._clear_leader_state()
        self.flush_deadline = None
        self.election_deadline = now + self._random_election_timeout()

    # ------------------------------------------------------------------ voter changes (KIP-853)
    def voter_change_refusal(self) -> str | None:
        """The spec's ``VoterChangeAllowed(n)``: the error a voter change gets now, checked in
        Kafka's order (``AddVoterHandler.handleAddVoterRequest``,
        ``RemoveVoterHandler.handleRemoveVoterRequest``), or None if it may go ahead."""
        if self.role is not Role.LEADER:
            return "NOT_LEADER_OR_FOLLOWER"
        if self.high_watermark <= self.epoch_start_offset and not self.config.VoterChangeBeforeEpochCommit:
            return "REQUEST_TIMED_OUT"  # no high watermark known in this epoch yet
        if self.config.kraft_version < 1:
            return "UNSUPPORTED_VERSION"
        if not self.voters_committed() and not self.config.ConcurrentVoterChange:
            return "REQUEST_TIMED_OUT"  # a voter change is still uncommitted
        return None

    def add_voter_refusal(self, x: int) -> str | None:
        """``voter_change_refusal``, then: ``x`` must not be a voter (DUPLICATE_VOTER) and must
        have fetched up to this leader's end offset (REQUEST_TIMED_OUT)."""
        refusal = self.voter_change_refusal()
        if refusal is not None:
            return refusal
        if x in self.voters:
            return "DUPLICATE_VOTER"
        if self.end_offsets.get(x, 0) < self.storage.end_offset:
            return "REQUEST_TIMED_OUT"
        return None

    def remove_voter_refusal(self, x: int) -> str | None:
        """``voter_change_refusal``, then: ``x`` must be a voter (VOTER_NOT_FOUND) and not the
        last one."""
        refusal = self.voter_change_refusal()
        if refusal is not None:
            return refusal
        if x not in self.voters or self.voters == (x,):
            return "VOTER_NOT_FOUND"
        return None

    @requires(_leads, "not the leader")
    def add_voter(self, x: int, now: int) -> bool | None:
        """Spec action AddVoter(n, x) (AddRaftVoter, ``AddVoterHandler``): append the VotersRecord
        of the voter set with ``x``; it takes effect at once.  No step (False) when refused."""
        if self.add_voter_refusal(x) is not None:
            return False
        self._append_voters(self.voter_nodes_at() + (default_voter_node(x),), now)

    @requires(_leads, "not the leader")
    def remove_voter(self, x: int, now: int) -> bool | None:
        """Spec action RemoveVoter(n, x) (RemoveRaftVoter, ``RemoveVoterHandler``): append the
        VotersRecord of the voter set without ``x``.  No step (False) when refused."""
        if self.remove_voter_refusal(x) is not None:
            return False
        self._append_voters(tuple(n for n in self.voter_nodes_at() if n.key.id != x), now)

    def _append_voters(self, nodes: tuple[VoterNode, ...], now: int) -> None:
        """``LeaderState.appendVotersRecord``: unflushed, like a client append."""
        voters = tuple(sorted(n.key.id for n in nodes))
        offset = self.storage.append_voters(self.current_epoch, voters, now, nodes)
        self._rb.wrote("append", offset=offset, epoch=self.current_epoch, value=VOTERS, voters=list(voters))
        if self.flush_deadline is None:
            self.flush_deadline = now + self.config.flush_delay_ms

    # ------------------------------------------------------------------ UpdateRaftVoter (KIP-853)
    def _update_voter_period(self) -> int:
        """``FollowerState.updateVoterPeriodMs``: three fetch timeouts."""
        return 3 * self.config.fetch_timeout_ms

    def _update_voter_due(self, now: int) -> bool:
        """``pollFollowerAsVoter``: once the update-voter period has expired the timer restarts,
        and a voter the latest voter set lists other than it is sends UpdateRaftVoter in place of
        this poll's fetch."""
        if not self.is_voter or self.update_voter_at is None or now < self.update_voter_at:
            return False
        self.update_voter_at = now + self._update_voter_period()
        return self.needs_voter_update()

    @requires(lambda n: n.role is Role.FOLLOWER and n.leader_id is not None, "not a Follower of a known leader")
    def send_update_raft_voter(self, now: int) -> None:
        """``maybeSendUpdateVoterRequest`` / ``buildUpdateVoterRequest``: this voter's key,
        endpoints and kraft.version range to the leader (no spec step: the spec's ``UpdateVoter``
        is the leader's append)."""
        request = update_voter_request(None, self.current_epoch, self.local_voter_node)
        self.send(UpdateRaftVoterRequest(self.id, self.leader_id, encode("UpdateRaftVoterRequest", request, 0)))
        self.noted("SendUpdateRaftVoter", d=self.leader_id)

    def _leader_view(self) -> LeaderView:
        """What ``UpdateVoterHandler`` reads of this replica.  The high watermark is known once a
        record of this epoch is committed; the last VotersRecord is the log's (-1: the bootstrap
        or snapshot voter set, committed).  No AddRaftVoter/RemoveRaftVoter stays pending here (the
        reply to the admin is not modelled), so ``isOperationPending`` is an uncommitted VotersRecord
        (the same REQUEST_TIMED_OUT).  The bug variants of ``voter_change_refusal`` apply."""
        leads = self.role is Role.LEADER
        hwm_known = leads and (self.high_watermark > self.epoch_start_offset
                               or self.config.VoterChangeBeforeEpochCommit)
        offsets = self.storage.voter_offsets
        last = offsets[-1] if offsets and not self.config.ConcurrentVoterChange else -1
        return LeaderView(cluster_id="", local_id=self.id, epoch=self.current_epoch, is_leader=leads,
                          listener=CONTROLLER_LISTENER,
                          high_watermark=self.high_watermark if hwm_known else None,
                          kraft_version=self.config.kraft_version, voters=VoterSet(self.voter_nodes_at()),
                          last_voters_offset=last)

    def handle_update_raft_voter_request(self, m: UpdateRaftVoterRequest, now: int) -> None:
        """``KafkaRaftClient.handleUpdateVoterRequest`` then ``UpdateVoterHandler``: on success the
        leader takes the spec step ``UpdateVoter(n, x)``; the answer goes back at once."""
        response, updated = serve(self._leader_view(), m.payload)
        self.send(UpdateRaftVoterResponse(self.id, m.source, response))
        if updated is None:
            error, _ = decode("UpdateRaftVoterResponse", 0, response)
            self.noted("HandleUpdateRaftVoterRequest", source=m.source, error=ERROR_NAMES[error["errorCode"]])
            return
        self._append_voters(updated.nodes, now)
        self.took(QuorumNode.update_voter, x=m.source)

    @requires(_leads, "not the leader")
    def update_voter(self, x: int, now: int) -> bool | None:
        """Spec action UpdateVoter(n, x): the VotersRecord of an accepted UpdateRaftVoter request
        from voter ``x`` (``handle_update_raft_voter_request`` appends it).  Without a request there
        is nothing to write: no step (False)."""
        return False

    def handle_update_raft_voter_response(self, m: UpdateRaftVoterResponse, now: int) -> None:
        """``handleUpdateVoterResponse``: the answer changes nothing here; an unchanged voter set is
        asked again at the next period (the epoch changes it reports reach this voter by Fetch)."""
        response, _ = decode("UpdateRaftVoterResponse", 0, m.payload)
        self.noted("HandleUpdateRaftVoterResponse", source=m.source, error=ERROR_NAMES[response["errorCode"]])

    def route(self, message: Any, now: int) -> Pick | None:
        """UpdateRaftVoter has no spec message (the spec's ``UpdateVoter`` is the leader's
        append); the others go to the action consuming their type."""
        cls = type(self)
        if isinstance(message, UpdateRaftVoterRequest):
            return (cls.handle_update_raft_voter_request, {"m": message})
        if isinstance(message, UpdateRaftVoterResponse):
            return (cls.handle_update_raft_voter_response, {"m": message})
        return super().route(message, now)

    @requires(_resigns_after_removal, "not a leader whose own removal is committed")
    def resign_after_removal(self, now: int) -> None:
        """Spec action ResignAfterRemoval(n): a leader outside its committed voter set resigns and
        tells the voters (``RemoveVoterHandler.highWatermarkUpdated``, ``LeaderState.requestResign``,
        ``KafkaRaftClient.pollLeader``)."""
        self._resign(now)

    def restart(self, now: int) -> None:
        """Spec action Restart(n): volatile state lost, log cut to the durable prefix, quorum state
        reloaded (the caller must have applied the crash to the file system first)."""
        self._recover(now, disk_lost=False)

    def restart_with_disk_loss(self, now: int) -> None:
        """Spec action RestartWithDiskLoss(n): back with an empty disk (the caller wiped it), awaiting
        a leader before it votes or campaigns."""
        self._recover(now, disk_lost=True)

    def describe(self) -> str:
        return (f"node {self.id}: {self.role.value} epoch={self.current_epoch} leader={self.leader_id} "
                f"voted={self.voted_for} end={self.storage.end_offset} flushed={self.storage.flushed_offset} "
                f"hwm={self.high_watermark} {self._describe_snapshots()}log={_short_log(self.storage.entries)}")

    def _describe_snapshots(self) -> str:
        storage = self.storage
        if not storage.snapshots and storage.log_start_offset == 0:
            return ""
        ids = " ".join(f"{s.end}@{s.epoch}" for s in sorted(storage.snapshots.values(), key=lambda s: s.end))
        return f"start={storage.log_start_offset} snapshots=[{ids}] "


def _entry_text(e: Entry) -> str:
    """``epoch:value``; a metadata record's bytes by their size (``+`` joins the records of a batch)."""
    value = f"<{len(e.value)}B>" if isinstance(e.value, bytes) else e.value
    return f"{e.epoch}:{value}" + ("" if e.last_in_batch else "+")


def _short_log(entries: list[Entry], keep: int = 6) -> str:
    shown = [_entry_text(e) for e in entries]
    if len(shown) > 2 * keep:
        shown = shown[:keep] + [f"...({len(shown) - 2 * keep} more)..."] + shown[-keep:]
    return "[" + " ".join(shown) + "]"
