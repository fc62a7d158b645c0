"""A Hypothesis ``RuleBasedStateMachine`` over :class:`kraft.groups.consumer_protocol.world.ConsumerProtocolWorld`.

Rules are the spec's environment: join, leave, crash and restart a consumer, poll, deliver any
message in flight (any order), drop one, delay one (to the back of the queue; nothing is
duplicated), hold an offset commit back across any number of steps and release it, advance the
clock in small and large steps (heartbeat intervals, request, session and rebalance timeouts),
one node taking one internal step (a reconciliation stage, a timer) without the clock moving, a
consumer's heartbeat thread sending while its application thread has a reconciliation stage
pending (the spec's ``SendHeartbeat`` is enabled whatever the reconciliation is doing; the
consumer's own poll loop runs the stage first), and ``run_for``, a fault-free stretch that gets
the group somewhere quickly.  Every invariant of the spec runs after every step (the world keeps
the first violation in ``found``; ``check()`` raises it).

Only offset commits are held: the spec's network delivers a consumer's heartbeats in the order of
their connections (its ``FirstOf``), which the world keeps for the messages in flight.

The teardown is the finishing phase, where the spec's liveness properties become bounded
invariants: the faults stop (every crashed consumer restarts, nothing is lost, the network
delivers everything in sending order) and then

- a consumer that is fenced gets back into the group (the spec's ``FencedMemberRejoins``:
  RECONCILING, ACKNOWLEDGING or STABLE with a positive member epoch) within ``REJOIN_WITHIN_MS``;
- the group converges (``world.quiet()``, the spec's ``Converged``, hence ``EventuallyConverges``)
  within ``CONVERGE_WITHIN_MS``.

The revocation machine (``make_revocation_machine``) adds ``move_target_before_ack``: the target
moves between a consumer's revocation and its acknowledgement (a membership change whose heartbeat
gets to the coordinator first), the window of KAFKA-16249.

The static machine (``make_static_machine``) makes ``STATIC`` consumers static members and adds a
static restart: a static consumer leaves with epoch -2 and a new process of it joins under a new
member id (the rule is the subclass's, so the other machines draw exactly as before).  A static
consumer may fail for good (FATAL: its instance id is not released, or is another member's); the
application then starts a new process of it, in the finishing phase too, which is what gets it
back into the group (a FATAL consumer is not a fenced one waiting to rejoin).

Both bounds are a few heartbeat intervals past the longest wait the correct protocol can have
(a request timeout, a session timeout for a member whose consumer left, the listener stages of
two reconciliations); both are below the machine's rebalance timeout, which is what turns a stuck
rebalance into a slow one.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kraft.core.step import TICK
from kraft.groups.consumer_protocol.config import ProtocolConfig
from kraft.groups.consumer_protocol.consumer import Consumer
from kraft.groups.consumer_protocol.messages import IN_GROUP, ClientState, Heartbeat, OffsetCommit, ServerState
from kraft.groups.consumer_protocol.protocol import COORDINATOR, PROTOCOL
from kraft.groups.consumer_protocol.world import ConsumerProtocolWorld
from kraft.groups.consumer_protocol.sim import topic_sets

CLIENTS = ("c1", "c2", "c3")
# the machine's timing: Kafka's ratios (the rebalance timeout, max.poll.interval.ms, is far longer
# than the session timeout), scaled down; the rebalance listener's stages take time on the
# application thread, so heartbeats, fences and lost leases come between them
CONFIG = dict(session_timeout_ms=1_000, rebalance_timeout_ms=10_000, heartbeat_interval_ms=300,
              request_timeout_ms=800, lease_ms=900, listener_ms=200)
HEARTBEAT = CONFIG["heartbeat_interval_ms"]
REJOIN_WITHIN_MS = 2 * HEARTBEAT
# a request timeout, a session timeout, two reconciliations of two listener stages each, and a
# heartbeat interval around each of those
CONVERGE_WITHIN_MS = CONFIG["request_timeout_ms"] + CONFIG["session_timeout_ms"] + 4 * CONFIG["listener_ms"] \
    + 4 * HEARTBEAT
FINISH_STEP_MS = 50

clients = st.sampled_from(CLIENTS)
index = st.integers(min_value=0, max_value=15)
nodes = st.sampled_from((*CLIENTS, COORDINATOR))
# small steps (within a heartbeat), a heartbeat interval, a request timeout, a session timeout,
# a rebalance timeout
clock_steps = st.sampled_from([10, 100, HEARTBEAT, CONFIG["request_timeout_ms"], CONFIG["session_timeout_ms"],
                               CONFIG["rebalance_timeout_ms"]])


def machine_config(**variant: bool) -> ProtocolConfig:
    return ProtocolConfig(**CONFIG, **variant)


class LivenessViolation(AssertionError):
    """A bounded liveness property of the finishing phase failed; the message names it as the spec does."""


def make_machine(config: ProtocolConfig) -> type[RuleBasedStateMachine]:
    class ConsumerProtocolMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.world = ConsumerProtocolWorld(config, CLIENTS)
            self.held: list[OffsetCommit] = []
            self.hold_next = False
            self.world.observer = self._observe

        @initialize(joined=st.sets(clients, min_size=1))
        def start(self, joined: set[str]) -> None:
            for c in sorted(joined):
                self.world.join(c)

        @rule(c=clients)
        def join(self, c: str) -> None:
            self.world.join(c)

        @rule(c=clients)
        def leave(self, c: str) -> None:
            self.world.leave(c)

        @rule(c=clients)
        def crash(self, c: str) -> None:
            self.world.crash(c)

        @rule(c=clients)
        def restart(self, c: str) -> None:
            self.world.restart(c)

        @rule(c=clients)
        def poll(self, c: str) -> None:
            self.world.poll(c)

        @precondition(lambda self: self.world.pending)
        @rule(i=index)
        def deliver(self, i: int) -> None:
            self.world.deliver(i)

        @precondition(lambda self: self.world.pending)
        @rule(n=st.integers(min_value=1, max_value=8))
        def deliver_oldest(self, n: int) -> None:
            for _ in range(n):
                self.world.deliver(0)

        @precondition(lambda self: self.world.pending)
        @rule(i=index)
        def drop(self, i: int) -> None:
            self.world.drop(i)

        @precondition(lambda self: self.world.pending)
        @rule(i=index)
        def delay(self, i: int) -> None:
            m = self.world.delay(i)
            self.world.narrative.append(f"delay {type(m).__name__} {m.member_id}")

        @precondition(lambda self: any(isinstance(m, OffsetCommit) for m in self.world.pending))
        @rule(i=index)
        def hold_commit(self, i: int) -> None:
            """Take an offset commit out of the network until ``release_commits``."""
            commits = [k for k, m in enumerate(self.world.pending) if isinstance(m, OffsetCommit)]
            self.held.append(self.world.pending.pop(commits[i % len(commits)]))
            self.world.narrative.append(f"hold OffsetCommit {self.held[-1].member_id}")

        @rule()
        def hold_next_commit(self) -> None:
            """The next offset commit anyone sends is held (the network stalls it), even inside
            ``run_for``."""
            self.hold_next = True

        def _observe(self, node: str, ready: Any) -> None:
            if not self.hold_next:
                return
            for m in ready.messages:
                if isinstance(m, OffsetCommit) and m in self.world.pending:
                    self.world.pending.remove(m)
                    self.held.append(m)
                    self.hold_next = False
                    self.world.narrative.append(f"hold OffsetCommit {m.member_id}")
                    return

        @precondition(lambda self: self.held)
        @rule()
        def release_commits(self) -> None:
            self.world.pending[:0] = self.held
            self.world.narrative.append(f"release {len(self.held)} OffsetCommit(s)")
            self.held = []

        @rule(c=clients)
        def send_heartbeat(self, c: str) -> None:
            """The heartbeat thread sends now, whatever the application thread has pending."""
            cons = self.world.consumers[c]
            if cons.up and cons.state in IN_GROUP and not cons.inflight:
                self.world.trigger(c, Consumer.send_heartbeat)
                self.world.narrative.append(f"{c} SendHeartbeat (heartbeat thread)")
                self.world.violations()

        @rule(ms=st.sampled_from([HEARTBEAT, 3 * HEARTBEAT, 10 * HEARTBEAT]))
        def run_for(self, ms: int) -> None:
            """A fault-free stretch: deliver in sending order, the clock moving ``FINISH_STEP_MS`` at a time."""
            run_fair(self.world, ms)

        @rule(ms=clock_steps)
        def advance(self, ms: int) -> None:
            self.world.advance(ms)

        @rule(n=nodes)
        def step(self, n: str) -> None:
            """One internal or timer action of one node at the current time (a reconciliation
            stage, a heartbeat, a timeout already due), so other steps can come between stages."""
            ready = self.world.step(n, TICK)
            if ready.steps:
                self.world.narrative.append(f"{n} {ready.steps[0].action}")
            self.world.violations()

        @invariant()
        def spec_invariants(self) -> None:
            self.world.check()

        def teardown(self) -> None:
            if not self.world.found:
                self.world.pending[:0] = self.held
                finish(self.world)

    ConsumerProtocolMachine.__name__ = "ConsumerProtocolMachine" + "".join(
        name for name in PROTOCOL.variant_names if getattr(config, name))
    return ConsumerProtocolMachine


STATIC = ("c1", "c2")
static_clients = st.sampled_from(STATIC)


def make_static_machine(config: ProtocolConfig) -> type[RuleBasedStateMachine]:
    """The machine with ``STATIC`` static consumers and the static restart rule."""
    base = make_machine(attrs.evolve(config, static=STATIC))

    class StaticConsumerProtocolMachine(base):  # type: ignore[misc, valid-type]
        @rule(c=static_clients)
        def static_restart(self, c: str) -> None:
            """close() with epoch -2 (when in the group), then a new process under a new member id."""
            w = self.world
            if w.consumers[c].state in IN_GROUP:
                w.leave(c)
                w.tick(c)
            w.new_process(c)

    StaticConsumerProtocolMachine.__name__ = "Static" + base.__name__
    return StaticConsumerProtocolMachine


def make_subscription_machine(config: ProtocolConfig) -> type[RuleBasedStateMachine]:
    """The machine with the subscription-change rule: a consumer in the group calls subscribe()
    with another non-empty set of the topics (spec ChangeSubscription)."""
    base = make_machine(config)
    subscriptions = st.sampled_from(topic_sets(config.topic_names))

    class SubscriptionConsumerProtocolMachine(base):  # type: ignore[misc, valid-type]
        @rule(c=clients, topics=subscriptions)
        def subscribe(self, c: str, topics: tuple[str, ...]) -> None:
            if tuple(sorted(topics)) != self.world.consumers[c].subscription:
                self.world.subscribe(c, topics)

    SubscriptionConsumerProtocolMachine.__name__ = "Subscription" + base.__name__
    return SubscriptionConsumerProtocolMachine


def make_revocation_machine(config: ProtocolConfig) -> type[RuleBasedStateMachine]:
    """The machine with the rule that moves the target while a revocation is pending (the
    situation of the spec's ``liveconverge`` counterexample)."""
    base = make_machine(config)

    class RevocationConsumerProtocolMachine(base):  # type: ignore[misc, valid-type]
        @rule(c=clients)
        def move_target_before_ack(self, c: str) -> None:
            """A fault-free stretch until another consumer has revoked what the coordinator holds
            pending revocation for it and is about to acknowledge; then ``c`` joins (or leaves,
            when in the group) and its heartbeat reaches the coordinator first, and the stretch
            goes on until the acknowledgement is answered."""
            w = self.world
            if run_fair(w, 3 * HEARTBEAT, until=lambda: _about_to_acknowledge(w, c) is not None):
                r = w.consumers[_about_to_acknowledge(w, c)]
                _change_membership(w, c)
                run_fair(w, HEARTBEAT, until=lambda: r.recon is None and not r.inflight)

    RevocationConsumerProtocolMachine.__name__ = "Revocation" + base.__name__
    return RevocationConsumerProtocolMachine


def finish(world: ConsumerProtocolWorld) -> int:
    """The finishing phase (module docstring): restart every crashed consumer, then deliver in
    sending order, advancing the clock ``FINISH_STEP_MS`` at a time, until the group converges.
    Returns the milliseconds it took; raises ``LivenessViolation`` (or an invariant's violation)."""
    start = world.now
    fenced: dict[str, int] = {}
    world.observer = lambda node, ready: _note_fenced(world, fenced, node)
    world.narrative.append("finishing phase: no more faults")
    for c in CLIENTS:
        world.restart(c)
    world.check()
    while True:
        for c in CLIENTS:   # the application replaces a consumer that failed for good
            if world.consumers[c].state is ClientState.FATAL:
                world.new_process(c)
        _deliver_all(world)
        world.check()
        _check_rejoined(world, fenced)
        if world.quiet() or _empty(world):
            return world.now - start
        if world.now - start >= CONVERGE_WITHIN_MS:
            raise LivenessViolation(f"EventuallyConverges: the group has not converged {world.now - start} ms "
                                    f"after the faults stopped\n{world.describe()}")
        world.advance(FINISH_STEP_MS)


def _empty(world: ConsumerProtocolWorld) -> bool:
    """Every consumer left and the coordinator knows it: the spec's ``Converged`` asks for a target
    assignment at the group epoch, which only a member's heartbeat computes, so an empty group
    counts as converged here."""
    return not world.pending and not world.coordinator.members and \
        all(c.state is ClientState.UNSUBSCRIBED for c in world.consumers.values())


def run_fair(world: ConsumerProtocolWorld, ms: int, until: Callable[[], bool] = lambda: False) -> bool:
    """``ms`` of a fault-free network: deliver in sending order, advance ``FINISH_STEP_MS``, repeat;
    stop early once ``until()`` holds after a delivery round (then True)."""
    end = world.now + ms
    while world.now < end and not world.found:
        _deliver_all(world)
        if until():
            return True
        world.advance(FINISH_STEP_MS)
    return False


def _about_to_acknowledge(world: ConsumerProtocolWorld, other_than: str) -> str | None:
    """Some consumer but ``other_than`` has revoked what the coordinator holds pending revocation
    for it and acknowledges within the next clock step, with no heartbeat of its own on the way."""
    for r, cons in world.consumers.items():
        mem = world.coordinator.members.get(cons.member_id)
        if r == other_than or mem is None or mem.state is not ServerState.UNREVOKED_PARTITIONS:
            continue
        recon = cons.recon
        if cons.up and recon is not None and recon.step == "assign" and recon.target == cons.target \
                and not cons.owned & mem.pending and not cons.inflight and cons.listener_at <= world.now + FINISH_STEP_MS:
            return r
    return None


def _change_membership(world: ConsumerProtocolWorld, c: str) -> None:
    """``c`` joins (or leaves, when in the group) and its heartbeat is delivered at once."""
    cons = world.consumers[c]
    if not cons.up or cons.state not in (ClientState.UNSUBSCRIBED, *IN_GROUP):
        return
    if cons.state is ClientState.UNSUBSCRIBED:
        world.join(c)
    else:
        world.leave(c)
    world.tick(c)
    mine = [k for k, m in enumerate(world.pending) if isinstance(m, Heartbeat) and m.member_id == cons.member_id]
    if mine:
        world.narrative.append(f"{c}'s heartbeat goes first")
        world.deliver(mine[-1])


def _deliver_all(world: ConsumerProtocolWorld, limit: int = 500) -> None:
    """Deliver in sending order until nothing is in flight, each receiver taking its internal steps."""
    for _ in range(limit):
        if not world.pending:
            return
        m = world.pending[0]
        world.deliver(0)
        world.tick(world.dest(m))


def _note_fenced(world: ConsumerProtocolWorld, fenced: dict[str, int], node: Any) -> None:
    c = world.consumers.get(node)
    if c is None:
        return
    if c.state is ClientState.FENCED:
        fenced.setdefault(node, world.now)
    elif c.state is ClientState.FATAL or (c.state in IN_GROUP and c.state is not ClientState.JOINING and c.epoch > 0):
        fenced.pop(node, None)


def _check_rejoined(world: ConsumerProtocolWorld, fenced: dict[str, int]) -> None:
    for c, since in sorted(fenced.items()):
        if world.now - since >= REJOIN_WITHIN_MS:
            raise LivenessViolation(f"FencedMemberRejoins: {c}, fenced at t={since} ms, is not back in the group "
                                    f"at t={world.now} ms\n{world.describe()}")
