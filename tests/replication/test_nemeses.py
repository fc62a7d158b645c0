"""The reactive targeted faults of the replication simulator (``isolate-on-isr-shrink``,
``isr-join-race``, ``stale-fetch``) and ``Network.defer``: each strikes what it says, when it says,
and the correct implementation keeps every invariant under them (the runs raise otherwise)."""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest

from kraft.replication.messages import FetchRequest
from kraft.replication.sim import make
from kraft.replication.world import StackedWorld
from kraft.sim.core import Clock, Faults, Network, Simulator


BEFORE: dict[Any, Any] = {}  # broker -> (leader epoch, committed ISR) before the step being taken


def _run(faults: str, seed: int, steps: int, monkeypatch: pytest.MonkeyPatch) -> tuple[Simulator, list[dict[str, Any]]]:
    """The correct implementation under ``faults``; every ``Simulator.isolate`` call with its
    caller and what the cluster looked like at that moment."""
    calls: list[dict[str, Any]] = []
    real = Simulator.isolate

    def isolate(sim: Simulator, node: Any, others: Any, ms: int) -> None:
        p = sim.plugin
        others = [o for o in others if o != node]
        br = p.brokers.get(node)
        calls.append({"by": sys._getframe(1).f_code.co_name, "t": sim.now, "node": node, "others": others,
                      "all": len(others) == len(p.world.node_ids()) - 1,
                      "ctrl_isr": frozenset(p.controller.partition.isr),
                      "ctrl_epoch": p.controller.partition.partitionEpoch,
                      "leader": p.controller.partition.leader,
                      "local_isr": br.local_isr if br else None, "leads": bool(br and br.is_leader()),
                      "before": BEFORE.get(node),
                      "pending": br.pending_isr if br and br.alter_partition_in_flight else frozenset(),
                      "held": [m for m in sim.network.pending.values() if isinstance(m, FetchRequest)]})
        real(sim, node, others, ms)

    monkeypatch.setattr(Simulator, "isolate", isolate)
    real_process = StackedWorld.process

    def process(world: StackedWorld, node_id: Any, inp: Any) -> Any:
        br = world.brokers.get(node_id)
        BEFORE[node_id] = None if br is None else (br.local_leader_epoch, br.local_isr)
        return real_process(world, node_id, inp)

    monkeypatch.setattr(StackedWorld, "process", process)
    BEFORE.clear()
    plugin = make(3, None)
    sim = Simulator(plugin, seed, Faults.parse(faults, plugin.nemeses()))
    sim.run(steps)  # raises on any invariant violation
    return sim, calls


def test_isr_join_race_cuts_the_joiner_then_isolates_the_leader_once_the_isr_commits(monkeypatch) -> None:
    sim, calls = _run("isolate-follower:800,isr-join-race:400", 0, 3000, monkeypatch)
    strikes = sim.fault_counts.get("isr-join-race", 0)
    assert strikes >= 3
    mine = [c for c in calls if c["by"] == "_isr_join_race"]
    joins = [c for c in mine if not c["all"]]
    assert len(joins) == strikes
    for c in joins:
        # the cut is between a leader (by its own metadata) and exactly the replicas it proposes
        assert c["leads"] and c["others"] and set(c["others"]) == c["pending"] - c["local_isr"]
    leader_cuts = [c for c in mine if c["all"]]
    assert leader_cuts
    for c in leader_cuts:
        # the leader is isolated only once the controller committed an ISR holding the joiner,
        # in a later partition epoch than when it proposed it
        before = max((j for j in joins if j["t"] <= c["t"] and j["node"] == c["node"]), key=lambda j: j["t"])
        assert before["pending"] <= c["ctrl_isr"] and c["ctrl_epoch"] > before["ctrl_epoch"]


def test_isolate_on_isr_shrink_isolates_the_leader_as_its_shrink_commits(monkeypatch) -> None:
    sim, calls = _run("isolate-follower:600,isolate-on-isr-shrink:500", 1, 3000, monkeypatch)
    strikes = sim.fault_counts.get("isolate-on-isr-shrink", 0)
    assert strikes >= 2
    cuts = [c for c in calls if c["by"] == "_isolate_on_isr_shrink"]
    assert len(cuts) == strikes
    for c in cuts:
        # a leader whose committed ISR lost a member in the step just taken (same leader epoch)
        epoch, isr = c["before"]
        assert c["all"] and c["leads"] and c["local_isr"] < isr
        assert sim.plugin.brokers[c["node"]].local_leader_epoch >= epoch


def test_stale_fetch_delivers_a_fetch_of_the_previous_incarnation_after_the_cut(monkeypatch) -> None:
    handled: list[tuple[int, int, int]] = []
    real_take = Network.take
    sims: list[Simulator] = []

    def take(net: Network, mid: int) -> Any:
        m = real_take(net, mid)
        if isinstance(m, FetchRequest) and sims:
            leader = sims[0].plugin.brokers[m.dest]
            handled.append((m.source, m.brokerEpoch, leader.image.broker_epoch(m.source)))
        return m

    monkeypatch.setattr(Network, "take", take)
    real_init = Simulator.__init__

    def init(sim: Simulator, *a: Any, **k: Any) -> None:
        real_init(sim, *a, **k)
        sims.append(sim)

    monkeypatch.setattr(Simulator, "__init__", init)
    sim, calls = _run("delay,stale-fetch:700", 0, 3000, monkeypatch)
    strikes = sim.fault_counts.get("stale-fetch", 0)
    assert strikes >= 2 and sim.fault_counts.get("disk-loss", 0) == strikes
    cuts = [c for c in calls if c["by"] == "_stale_fetch"]
    assert len(cuts) == strikes
    for c in cuts:
        # the cut is between the follower and the leader; its held fetch was still in flight
        # (the spec's messages) when the cut began
        assert len(c["others"]) == 1 and any(m.source == c["node"] for m in c["held"])
    # fetches of a broker epoch that is no more reached a leader (the controller had registered
    # the restarted broker under a new epoch by then)
    stale = [h for h in handled if h[1] != -1 and h[2] != -1 and h[1] < h[2]]
    assert stale, (sim.now, handled[-3:])


def test_network_defer_keeps_the_message_in_flight_until_its_new_time() -> None:
    clock = Clock()
    net = Network(random.Random(0), Faults(), clock)

    class M:
        source, dest = 1, 2

    m = M()
    net.send(m)
    (mid,) = net.pending
    new = net.defer(mid, 500)
    assert net.pending == {new: m} and new != mid
    events = []
    while (ev := clock.pop()) is not None:
        events.append((ev.time, ev.data, ev.data in net.pending))
    # the first delivery event finds nothing (the id is gone); the deferred one finds it at 500
    assert events[0][1] == mid and not events[0][2]
    assert events[-1] == (500, new, True)
