"""The Hypothesis rule-based state machine over a hand-stepped KRaft cluster.

Rules are the spec's nondeterminism (deliver / duplicate / drop any in-flight message, fire a timer,
crash-restart, partition and heal, client appends, snapshots and moving the log start; with
observers, voter changes and an observer's fetch from any voter) plus three macros that make long scenarios cheap
for the search (``deliver_all``, ``tick`` and ``far_behind``).  Every invariant of ``kraft.quorum.invariants`` is an
``@invariant``; the teardown heals the network, runs to quiescence and checks that all voters hold
the same committed log (a replica that never catches up, a voter removed while away included, is
reported as FollowersCatchUp).  ``make_machine(config)``
builds the class for a config (bug variants too).
"""

from __future__ import annotations

import copy
import itertools

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kraft.core.invariants import InvariantViolation, Violation
from kraft.quorum.config import QuorumConfig, Role
from kraft.quorum.invariants import logs_agree
from kraft.quorum.messages import VoteRequest, VoteResponse
from kraft.quorum.node import QuorumNode
from kraft.quorum.world import QuorumWorld

INDEX = st.integers(min_value=0, max_value=63)


def make_machine(config: QuorumConfig | None = None, voters: int = 3, *, liveness: bool = True,
                 weights: dict[str, int] | None = None, warm_start: bool = False, observers: int = 0,
                 disk_losses: bool = False, every_step: bool = False,
                 endpoint_moves: bool = False) -> type[RuleBasedStateMachine]:
    """``liveness=False`` skips the convergence check of the teardown (a bug variant may legitimately
    livelock; the variant tests look for safety violations only).  ``weights`` biases the search:
    rule ``r`` is registered ``weights[r]`` times (Hypothesis picks among rules uniformly; 0 switches
    it off), the rules themselves stay the same.  ``warm_start`` begins every example from an elected
    leader with committed records (3 s of fault-free running), as most of Kafka's
    RaftEventSimulationTest scenarios do.  ``observers`` replicas join the bootstrap voters, and
    the voter-change rules exist only then (so the searches without observers take the steps they
    took before those rules existed); likewise the disk-loss rule exists only with ``disk_losses``.
    ``every_step`` checks the invariants after every step a node takes, not only after each rule
    (a rule may take several: a delivery and the timers it makes due), as TLC checks every state.
    ``endpoint_moves`` adds the macro of the simulator's ``reendpoint`` fault (a restart on a new
    port, then long enough for UpdateRaftVoter), a rule of its own so the other searches keep
    their steps."""
    cfg = config or QuorumConfig()
    node_ids = st.integers(min_value=1, max_value=voters + observers)

    started: list[QuorumWorld] = []

    def first_world() -> QuorumWorld:
        """The world every example starts from, warm or cold and checked (with ``every_step``, at
        every step of the warm start too).  The nodes are seeded, so it is the same world each
        time: it is built once and each example gets a deep copy of it."""
        if not started:
            w = QuorumWorld(voters, cfg, observers=observers)
            if every_step:
                w.observer = lambda _node, _ready: w.check()
            if warm_start:
                w.run(3000)
            w.check()
            started.append(w)
        return copy.deepcopy(started[0])

    class KRaftMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.c = first_world()
            if every_step:
                self.c.observer = lambda _node, _ready: self.c.check()

        @initialize()
        def start(self) -> None:
            self.c.check()

        @precondition(lambda self: self.c.pending)
        @rule(i=INDEX)
        def deliver(self, i: int) -> None:
            self.c.deliver(i)

        @precondition(lambda self: self.c.pending)
        @rule()
        def deliver_oldest(self) -> None:
            self.c.deliver(0)

        @precondition(lambda self: self.c.pending)
        @rule(n=node_ids)
        def deliver_to(self, n: int) -> None:
            """Deliver the oldest message in flight to ``n``."""
            idx = next((k for k, m in enumerate(self.c.pending) if m.dest == n), None)
            if idx is not None:
                self.c.deliver(idx)

        @precondition(lambda self: self.c.pending)
        @rule(i=INDEX)
        def deliver_duplicate(self, i: int) -> None:
            self.c.deliver(i, keep_copy=True)

        @precondition(lambda self: self.c.pending)
        @rule(i=INDEX)
        def drop(self, i: int) -> None:
            self.c.drop(i)

        @rule()
        def deliver_all(self) -> None:
            self.c.deliver_all()

        @rule(n=node_ids)
        def timeout(self, n: int) -> None:
            self.c.timeout(n)

        @rule(ms=st.sampled_from([10, 100, 600, 2500]))
        def tick(self, ms: int) -> None:
            self.c.advance(ms)

        @rule(ms=st.sampled_from([50, 500, 5000]))
        def run(self, ms: int) -> None:
            self.c.run(ms)

        @rule(n=node_ids)
        def flush(self, n: int) -> None:
            self.c.flush(n)

        @rule(n=node_ids)
        def restart(self, n: int) -> None:
            self.c.restart(n)

        @rule(n=node_ids)
        def crash_after_vote(self, n: int) -> None:
            """Arm a fault point: ``n`` crashes and restarts right after its next granted vote."""
            self.c.crash_after_vote.add(n)

        @rule(n=node_ids)
        def isolate(self, n: int) -> None:
            self.c.isolate(n)

        @rule()
        def heal(self) -> None:
            self.c.heal()

        @precondition(lambda self: any(n.role is Role.LEADER for n in self.c.nodes.values()))
        @rule(n=node_ids)
        def resign(self, n: int) -> None:
            if self.c.nodes[n].role is Role.LEADER:
                self.c.resign(n)

        @rule(n=node_ids)
        def client_append(self, n: int) -> None:
            self.c.append(n)

        @rule(n=node_ids, ahead=st.integers(min_value=0, max_value=2))
        def take_snapshot(self, n: int, ahead: int) -> None:
            """TakeSnapshot at ``n``'s high watermark (+ ``ahead``: refused unless a bug allows it)."""
            self.c.trigger(n, QuorumNode.take_snapshot, k=self.c.nodes[n].high_watermark + ahead)

        @rule(n=node_ids, back=st.integers(min_value=0, max_value=2))
        def delete_before_snapshot(self, n: int, back: int) -> None:
            """DeleteBeforeSnapshot at ``n``: to its latest snapshot (``back`` 0), else ``back``
            below its high watermark (refused unless a snapshot ends there or a bug allows it)."""
            node = self.c.nodes[n]
            latest = node.storage.latest_snapshot
            o = (latest.end if latest is not None else 0) if back == 0 else node.high_watermark - back
            self.c.trigger(n, QuorumNode.delete_before_snapshot, o=o)

        @rule(n=node_ids)
        def far_behind(self, n: int) -> None:
            """Macro: cut ``n`` off for a second of client appends, then the leader (if another
            node) snapshots its committed prefix and moves its log start there."""
            self.c.isolate(n)
            self.c.run(1000)
            lid = self.c.leader()
            if lid is not None and lid != n:
                ld = self.c.nodes[lid]
                self.c.trigger(lid, QuorumNode.take_snapshot, k=ld.high_watermark)
                self.c.trigger(lid, QuorumNode.delete_before_snapshot, o=ld.high_watermark)

        @invariant()
        def spec_invariants(self) -> None:
            self.c.check()

        def teardown(self) -> None:
            if not liveness:
                return
            if not self.c.settle(max_ms=30_000):
                raise InvariantViolation(Violation("FollowersCatchUp", "no convergence within 30s of "
                                                   "healed network"), summary=self.c.describe())
            logs = {i: ([(e.epoch, e.value) for e in n.storage.entries], n.storage.log_start_offset)
                    for i, n in self.c.nodes.items()}
            first = logs[self.c.leader()]
            assert all(logs_agree(*log, *first) for log in logs.values()), f"logs differ after healing: {logs}"

    _add_optional_rules(KRaftMachine, node_ids, weights or {})
    if observers:
        _add_voter_change_rules(KRaftMachine, node_ids)
    if disk_losses:
        _add_disk_loss_rule(KRaftMachine, node_ids, weights or {})
    if endpoint_moves:
        _add_endpoint_move_rule(KRaftMachine, node_ids)
    for name, weight in (weights or {}).items():
        original = getattr(KRaftMachine, name)
        if weight == 0:
            setattr(KRaftMachine, name, None)  # rule switched off for this search
        for k in range(1, weight):
            setattr(KRaftMachine, f"{name}_{k}", original)
    KRaftMachine.__name__ = "KRaftMachine" + "".join(cfg.variant_names())
    return KRaftMachine


def _in_round_of(n: int, m: object) -> bool:
    """Is ``m`` a message of ``n``'s (pre-)vote round: its request or an answer to it?"""
    return (isinstance(m, VoteRequest) and m.source == n) or (isinstance(m, VoteResponse) and m.dest == n)


def _add_optional_rules(machine: type[RuleBasedStateMachine], node_ids: st.SearchStrategy[int],
                        weights: dict[str, int]) -> None:
    """Rules that exist only in the searches that weight them (the other searches, and the
    machines of the correct protocol, take the steps they took before these rules existed)."""

    @rule(n=node_ids)
    def vote_round(self: RuleBasedStateMachine, n: int) -> None:
        """Macro: ``n``'s (pre-)vote round runs while every other message waits: its requests in
        flight and the answers to it are delivered, oldest first (on a cut link they are lost)."""
        for _ in range(4 * len(self.c.ids)):
            idx = next((k for k, m in enumerate(self.c.pending) if _in_round_of(n, m)), None)
            if idx is None:
                return
            self.c.deliver(idx)

    @rule(n=node_ids, i=INDEX)
    def elect_and_remove(self: RuleBasedStateMachine, n: int, i: int) -> None:
        """Macro: ``n``'s election timer fires now and its vote round runs (``vote_round``), with
        the change-after-election fault armed for it: if ``n`` wins, it is asked at once for
        RemoveRaftVoter of the ``i``-th of its other voters (``QuorumWorld.change_after_election``)."""
        self.c.change_after_election.append(i)
        self.c.timeout(n)
        vote_round(self, n)
        self.c.change_after_election.clear()

    @rule()
    def run_briefly(self: RuleBasedStateMachine) -> None:
        """``run`` for its shortest time (50 ms): a few rounds of the fault-free network."""
        self.c.run(50)

    @rule(i=INDEX)
    def split(self: RuleBasedStateMachine, i: int) -> None:
        """A network partition of the bootstrap voters into two halves (the ``i``-th way, modulo
        their number; the other replicas stay with the second half), replacing any other cut."""
        halves = list(itertools.combinations(self.c.bootstrap, len(self.c.bootstrap) // 2))
        self.c.heal()
        self.c.partition(halves[i % len(halves)])

    _set_if_weighted(machine, weights, vote_round, elect_and_remove, split, run_briefly)


def _set_if_weighted(machine: type[RuleBasedStateMachine], weights: dict[str, int], *fns: object) -> None:
    """Give ``machine`` each of these rules that ``weights`` gives a positive weight."""
    for fn in fns:
        if weights.get(fn.__name__, 0) > 0:
            setattr(machine, fn.__name__, fn)


def _add_voter_change_rules(machine: type[RuleBasedStateMachine], node_ids: st.SearchStrategy[int]) -> None:
    """The KIP-853 rules: AddVoter / RemoveVoter requested at any node (refused unless it leads and
    the change is allowed), SendAnyVoterFetch and ResignAfterRemoval forced at any node (refused
    unless enabled); the timers take the latter two on their own as well."""

    @rule(n=node_ids, x=node_ids, add=st.booleans())
    def change_voters(self: RuleBasedStateMachine, n: int, x: int, add: bool) -> None:
        self.c.change_voters(n, x, add)

    @precondition(lambda self: self.c.leader() is not None)
    @rule(x=node_ids, add=st.booleans())
    def change_voters_at_leader(self: RuleBasedStateMachine, x: int, add: bool) -> None:
        """The operator's tool (``kafka-metadata-quorum add-controller`` / ``remove-controller``)
        sends AddRaftVoter / RemoveRaftVoter to the leader it finds."""
        self.c.change_voters(self.c.leader(), x, add)

    @rule(n=node_ids, d=node_ids)
    def send_any_voter_fetch(self: RuleBasedStateMachine, n: int, d: int) -> None:
        self.c.trigger(n, QuorumNode.send_any_voter_fetch, d=d)

    @rule(n=node_ids)
    def resign_after_removal(self: RuleBasedStateMachine, n: int) -> None:
        self.c.trigger(n, QuorumNode.resign_after_removal)

    for fn in (change_voters, change_voters_at_leader, send_any_voter_fetch, resign_after_removal):
        setattr(machine, fn.__name__, fn)


def _add_endpoint_move_rule(machine: type[RuleBasedStateMachine], node_ids: st.SearchStrategy[int]) -> None:
    """A replica restarts listening on a new port, then 6.5 s of fair running in 250 ms rounds
    (coarse, so the macro stays cheap): a voter that follows a leader meanwhile has its
    update-voter period expire and sends UpdateRaftVoter."""

    @rule(n=node_ids, port=st.integers(min_value=10000, max_value=10003))
    def restart_on_new_port(self: RuleBasedStateMachine, n: int, port: int) -> None:
        self.c.restart_with_new_port(n, port)
        self.c.run(6500, step_ms=250, append_every_ms=500)

    machine.restart_on_new_port = restart_on_new_port


def _add_disk_loss_rule(machine: type[RuleBasedStateMachine], node_ids: st.SearchStrategy[int],
                        weights: dict[str, int]) -> None:
    """RestartWithDiskLoss: a replica's disk is replaced (its connections reset), where the
    simulator's precondition allows it (``QuorumWorld.can_lose_disk``, the spec's DiskLossAllowed),
    while no other replica awaits a leader after its own disk loss: with a majority of voters
    awaiting one, no leader can be elected (nor in Kafka until they are re-added)."""

    @rule(n=node_ids)
    def lose_disk(self: RuleBasedStateMachine, n: int) -> None:
        if self.c.can_lose_disk(n) and not any(node.awaiting_leader for node in self.c.nodes.values()):
            self.c.restart(n, disk_lost=True)

    @rule(i=INDEX)
    def lose_voter_disk(self: RuleBasedStateMachine, i: int) -> None:
        """``lose_disk`` of the ``i``-th (modulo their number) voter that has granted its vote to
        another in its current epoch."""
        granted = [n.id for n in self.c.nodes.values() if n.voted_for not in (None, n.id)]
        if granted:
            lose_disk(self, granted[i % len(granted)])

    machine.lose_disk = lose_disk
    _set_if_weighted(machine, weights, lose_voter_disk)
