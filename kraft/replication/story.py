"""Partition-replication stories with golden output (etcd raft's ``testdata/`` interaction tests) on
the shared story driver ``kraft.core.datadriven.Story``: tests/replication/testdata/*.txt, each
command followed by ``----`` and what it produced.  ``pytest --rewrite`` writes the produced output
back (review the diff).  The Hypothesis machine (tests/replication/machine.py) speaks the same
commands, so a shrunk counterexample prints as a story that can be pasted there.

Every step a node takes is printed as it happens::

    2 HandleFetchResponse 1->2 FetchResponse epoch=0 offset=0 hw=1 entries=[0:1]
      log []->[0:1], hw 0->1
    C FenceBroker b=1
      partition leader 1->2, epoch 0->1, isr [1,2,3]->[2,3]; broker 1 Unfenced->Fenced

the acting node (``C`` is the controller) and the spec action (named by the declaration,
``kraft.replication.protocol``; steps with no spec counterpart, such as a heartbeat, are in
lower case), the message it consumed, then what changed: a broker's role, leader epoch, ISR
(as the leader knows it), log (``epoch:value`` entries), high watermark and flushed offset; the
controller's partition registration (leader, epoch, ISR, ELR, recovery state) and broker states;
the messages sent; ``acked`` when an acks=all produce is answered.  Every invariant is checked
after every step (``kraft.replication.world.ReplicationWorld``); a violation is printed as
``VIOLATION <Invariant>: ...`` and ends the story (only views may follow).

Commands (N: a broker 1..; C: the controller; A->B: a link, ``*`` for any end):

  brokers N [Variant ...] [min-isr=K]   start: N brokers, broker 1 leads epoch 0 with every broker in the ISR
  produce N [acks=-1|0|1]     a client produce at N (default acks=-1); a new value each time
  complete                    every leader answers the acks=all produces its HW covers (CompleteProduce)
  fetch N [alter-first]       one whole fetch of N: request, answer, any AlterPartition round trip
                              (alter-first: the round trip completes before the answer reaches N)
  send-fetch N                N sends a FetchRequest (delivered later by `deliver`)
  deliver A->B [K|all]        deliver the oldest (K oldest, every) message in flight on A->B
  drop A->B [K|all]           the network loses them
  stabilize                   deliver everything in flight, and what that sends, until nothing is left
  replay N [M ...]            N replays the metadata committed since it last did (makeLeader/makeFollower)
  unfence N                   N replays its registration and heartbeats: the controller unfences it
  fence N                     N's session times out at the controller (FenceBroker)
  crash N                     unclean shutdown: the unflushed log tail is lost, connections reset
  restart N [disk-loss]       N starts again (recovering its log, or with an empty disk) and registers
  shutdown N                  controlled shutdown (the broker stops once it leads nothing: `tick N`)
  tick N|C                    every internal or timer action of N (of the controller) enabled now
  advance MS                  move the virtual clock (no timer fires)
  run MS                      coarse: MS of fair progress (every node's timers, every message); net changes
  settle                      restart every broker, run to quiescence, then check that every acks=all-
                              acknowledged record is readable from the leader (AckedReadableFromLeader)
  status | log | metadata     views: nodes and network, logs, the metadata log
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import attrs

from kraft.controller.controller import Controller
from kraft.controller.image import FENCED_STATES
from kraft.core.datadriven import Case, Story, changes
from kraft.core.step import Ready
from kraft.replication.broker import Broker, ProduceResult
from kraft.replication.config import ReplicationConfig
from kraft.replication.messages import (
    CONTROLLER,
    NONE,
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    FetchRequest,
    FetchResponse,
)
from kraft.replication.protocol import PROTOCOL
from kraft.replication.world import ReplicationWorld, log_text

_LINK = re.compile(r"^(\d+|\*|[cC])->(\d+|\*|[cC])$")


def _node(n: int) -> str:
    return "C" if n == CONTROLLER else str(n)


def _set(s: Any) -> str:
    return "[" + ",".join(map(str, sorted(s))) + "]"


def message_text(m: Any) -> str:
    head = f"{_node(m.source)}->{_node(m.dest)} {m.mtype}"
    if isinstance(m, FetchRequest):
        return (f"{head} epoch={m.currentLeaderEpoch} offset={m.fetchOffset} lastEpoch={m.lastFetchedEpoch} "
                f"brokerEpoch={m.brokerEpoch}")
    if isinstance(m, FetchResponse):
        out = f"{head} epoch={m.currentLeaderEpoch} offset={m.fetchOffset}"
        if m.error != NONE:
            return f"{out} error={m.error}"
        if m.divergingEpoch != -1:
            return f"{out} hw={m.highWatermark} diverging epoch={m.divergingEpoch} endOffset={m.divergingEndOffset}"
        return f"{out} hw={m.highWatermark} entries={log_text(m.entries)}"
    if isinstance(m, AlterPartitionRequest):
        isr = ",".join(f"{x.broker}@{x.brokerEpoch}" for x in sorted(m.newIsrWithEpochs, key=lambda x: x.broker))
        return (f"{head} leaderEpoch={m.leaderEpoch} partitionEpoch={m.partitionEpoch} isr=[{isr}]"
                + (f" {m.leaderRecoveryState}" if m.leaderRecoveryState != "RECOVERED" else ""))
    if isinstance(m, AlterPartitionResponse):
        if m.error != NONE:
            return f"{head} error={m.error}"
        return f"{head} leaderEpoch={m.leaderEpoch} partitionEpoch={m.partitionEpoch} isr={_set(m.isr)}"
    if isinstance(m, BrokerHeartbeatRequest):
        return (f"{head} brokerEpoch={m.brokerEpoch} metadataOffset={m.currentMetadataOffset}"
                + (" wantShutDown" if m.wantShutDown else ""))
    return head


def broker_snapshot(b: Broker) -> dict[str, str]:
    if not b.running:
        role = "down"
    elif b.local_leader == b.id:
        role = "leader"
    elif b.local_leader == -1:
        role = "unattached"
    else:
        role = f"follower-of-{b.local_leader}"
    return {"role": role, "epoch": str(b.local_leader_epoch),
            "isr": _set(b.local_isr) if b.local_leader == b.id and b.running else "none",
            "log": log_text(b.entries), "hw": str(b.high_watermark), "flushed": str(b.log.flushed_offset)}


def controller_snapshot(c: Controller) -> dict[str, str]:
    p = c.partition
    out = {"leader": str(p.leader), "epoch": str(p.leaderEpoch), "isr": _set(p.isr), "elr": _set(p.elr),
           "recovery": p.leaderRecoveryState}
    for b in c.brokers:
        out[f"broker {b}"] = f"{c.image.broker_state(b)}@{c.image.broker_epoch(b)}"
    return out


def broker_text(b: Broker) -> str:
    s = broker_snapshot(b)
    return f"{b.id} {s['role']} epoch={s['epoch']} isr={s['isr']} log={s['log']} hw={s['hw']} flushed={s['flushed']}"


def controller_text(c: Controller) -> str:
    s = controller_snapshot(c)
    states = " ".join(f"{b}:{s[f'broker {b}']}" for b in c.brokers)
    return (f"C partition leader={s['leader']} epoch={s['epoch']} isr={s['isr']} elr={s['elr']} {s['recovery']}; "
            f"brokers {states}")


class ReplicationStory(Story):
    """A replication story: ``brokers N [Variant ...] [min-isr=K]`` begins it.  ``render=False``
    keeps the steps and the checks but prints nothing but views (the Hypothesis machine renders
    only its final run)."""

    start = "brokers"
    usage = "brokers N [Variant ...] [min-isr=K]"
    views = ("status", "log", "metadata")
    world: ReplicationWorld

    def __init__(self, render: bool = True) -> None:
        super().__init__()
        self.render = render

    def begin(self, args: list[str]) -> ReplicationWorld:
        if not args or not args[0].isdigit() or int(args[0]) < 1:
            raise self.bad(f"expected `{self.usage}`")
        cfg = ReplicationConfig()
        for word in args[1:]:
            if word.startswith("min-isr=") and word[8:].isdigit() and int(word[8:]) > 0:
                cfg = attrs.evolve(cfg, min_insync_replicas=int(word[8:]))
            elif word in PROTOCOL.variant_names:
                cfg = cfg.with_variant(word)
            else:
                raise self.bad(f"unknown option {word!r}; variants: {', '.join(PROTOCOL.variant_names)}")
        world = ReplicationWorld(int(args[0]), cfg)
        if self.render:
            self.lines += [controller_text(world.controller)] + [broker_text(world.brokers[b]) for b in world.ids]
        return world

    def command(self, text: str, path: str = "<machine>", line: int = 0) -> str:
        """Run one command given as text (the Hypothesis machine's way in); its output."""
        words = text.split()
        return self.handle(Case(path, line, words[0], tuple(words[1:]), text, ""))

    def snapshot(self, node_id: Any) -> dict[str, Any]:
        w = self.world
        return controller_snapshot(w.controller) if node_id == CONTROLLER else broker_snapshot(w.brokers[node_id])

    def message_text(self, message: Any) -> str:
        return message_text(message)

    def snapshots(self) -> dict[Any, dict[str, Any]]:
        return {n: self.snapshot(n) for n in self.world.node_ids()}

    def observe(self, node_id: Any, ready: Ready) -> None:
        """Print a step (a spec step or a note) as it happens, unless quiet; the world checks the
        invariants itself after every step."""
        if not (ready.steps or ready.note):
            return
        self.steps += 1
        if not self.render or self.quiet:
            return
        for st in ready.steps + ((ready.note,) if ready.note else ()):
            args = dict(st.args)
            m = args.pop("m", None)
            what = (" " + message_text(m)) if m is not None else ""
            what += "".join(f" {k}={v}" for k, v in args.items())
            name = st.action if st in ready.steps else st.action[0].lower() + st.action[1:]
            self.lines.append(f"{_node(node_id)} {name}{what}")
        now = self.snapshots()
        changed = []
        for n in (node_id, *[k for k in now if k != node_id]):
            d = changes(self._seen[n], now[n])
            if d:
                changed.append(d if n == node_id else f"{_node(n)}: {d}")
        if changed:
            self.lines.append("  " + "; ".join(changed))
        self._seen = now
        self.lines += ["  send " + message_text(m) for m in ready.messages]
        self.lines += _reply_lines(ready.reply)

    # ------------------------------------------------------------------ helpers for the commands
    def broker(self, word: str) -> int:
        if not word.isdigit() or int(word) not in self.world.brokers:
            raise self.bad(f"no broker {word!r} (brokers are {', '.join(map(str, self.world.ids))})")
        return int(word)

    def end(self, word: str) -> int | None:
        if word == "*":
            return None
        if word in ("c", "C"):
            return CONTROLLER
        return self.broker(word)

    def say(self, line: str) -> None:
        if self.render and not self.quiet:
            self.lines.append(line)

    def coarse(self, go: Callable[[], None]) -> None:
        """Run a coarse command quietly, then print the net change of every node."""
        before, steps = (self.snapshots(), self.steps) if self.render else ({}, 0)
        self.quiet = True
        try:
            go()
        finally:
            self.quiet = False
            if self.render:
                self.lines.append(f"t={self.world.now}ms, {self.steps - steps} steps")
                now = self.snapshots()
                for n in now:
                    d = changes(before[n], now[n])
                    if d:
                        self.lines.append(f"{_node(n)}: {d}")
                self._seen = now


def _reply_lines(r: Any) -> list[str]:
    """What a produce's answer prints."""
    if not isinstance(r, ProduceResult):
        return []
    if r.error == NONE and r.acks == -1:
        return [f"  acked offset={r.offset} epoch={r.leaderEpoch} value={r.value}"]
    if r.error == NONE or r.error == "PENDING":
        return [f"  appended offset={r.offset} value={r.value} acks={r.acks}"
                + (" (waits for the HW)" if r.error == "PENDING" else "")]
    return [f"  {r.error} value={r.value}"]


def _one(s: ReplicationStory, args: list[str], usage: str) -> str:
    if len(args) != 1:
        raise s.bad(f"expected `{usage}`")
    return args[0]


def _chosen(s: ReplicationStory, args: list[str], verb: str) -> list[Any]:
    if not args or len(args) > 2:
        raise s.bad(f"expected `{verb} A->B [K|all]`")
    mo = _LINK.match(args[0])
    if mo is None:
        raise s.bad(f"expected a link A->B (A, B a broker, C or *), got {args[0]!r}")
    src, dst = (s.end(g) for g in mo.groups())
    chosen = [m for m in s.world.pending if (src is None or m.source == src) and (dst is None or m.dest == dst)]
    if not chosen:
        raise s.bad(f"nothing in flight on {args[0]}")
    if len(args) == 1:
        return chosen[:1]
    if args[1] == "all":
        return chosen
    if not args[1].isdigit() or int(args[1]) < 1:
        raise s.bad(f"expected a count or `all`, got {args[1]!r}")
    if int(args[1]) > len(chosen):
        raise s.bad(f"only {len(chosen)} message(s) in flight on {args[0]}")
    return chosen[:int(args[1])]


def _index(w: ReplicationWorld, m: Any) -> int | None:
    return next((k for k, p in enumerate(w.pending) if p is m), None)


def _deliver_one(s: ReplicationStory, m: Any) -> None:
    w = s.world
    k = _index(w, m)
    if k is None:
        return  # gone meanwhile (a crash reset the connection)
    if m.dest != CONTROLLER and not w.brokers[m.dest].running:
        s.say(f"lost {message_text(m)} (broker {m.dest} is down)")
    w.deliver(k)


def _deliver(s: ReplicationStory, args: list[str]) -> None:
    for m in _chosen(s, args, "deliver"):
        _deliver_one(s, m)


def _drop(s: ReplicationStory, args: list[str]) -> None:
    for m in _chosen(s, args, "drop"):
        k = _index(s.world, m)
        if k is not None:
            s.say(f"network loses {message_text(m)}")
            s.world.drop(k)


def _stabilize(s: ReplicationStory, args: list[str]) -> None:
    w = s.world
    if not w.pending:
        s.say("(nothing in flight)")
    for _ in range(200):
        if not w.pending:
            return
        _deliver_one(s, w.pending[0])
    raise s.bad("still messages in flight after 200 deliveries")


def _produce(s: ReplicationStory, args: list[str]) -> None:
    if not 1 <= len(args) <= 2:
        raise s.bad("expected `produce N [acks=-1|0|1]`")
    n = s.broker(args[0])
    acks = -1
    if len(args) == 2:
        if args[1] not in ("acks=-1", "acks=0", "acks=1", "acks=all"):
            raise s.bad(f"expected acks=-1|0|1, got {args[1]!r}")
        acks = -1 if args[1] == "acks=all" else int(args[1][5:])
    if not s.world.brokers[n].running:
        s.say(f"(broker {n} is down: the client gets no answer)")
        return
    s.world.produce(n, acks)


def _complete(s: ReplicationStory, args: list[str]) -> None:
    if args:
        raise s.bad("expected `complete`")
    if not s.world.complete():
        s.say("(nothing to complete)")


def _fetch(s: ReplicationStory, args: list[str]) -> None:
    if not args or len(args) > 2 or (len(args) == 2 and args[1] != "alter-first"):
        raise s.bad("expected `fetch N [alter-first]`")
    n = s.broker(args[0])
    if not s.world.fetch(n, alter_first=len(args) == 2):
        s.say(_why_no_fetch(s.world, n))


def _send_fetch(s: ReplicationStory, args: list[str]) -> None:
    n = s.broker(_one(s, args, "send-fetch N"))
    if not s.world.send_fetch(n):
        s.say(_why_no_fetch(s.world, n))


def _why_no_fetch(w: ReplicationWorld, n: int) -> str:
    b = w.brokers[n]
    if not b.running:
        return f"(no fetch: broker {n} is down)"
    if b.local_leader == n:
        return f"(no fetch: broker {n} leads)"
    if b.local_leader not in w.brokers:
        return f"(no fetch: broker {n} knows no leader)"
    if not w.brokers[b.local_leader].running:
        return f"(no fetch: its leader {b.local_leader} is down)"
    return f"(no fetch: broker {n} has a fetch in flight)"


def _replay(s: ReplicationStory, args: list[str]) -> None:
    if not args:
        raise s.bad("expected `replay N [M ...]`")
    for n in [s.broker(a) for a in args]:
        if not s.world.replay(n):
            s.say(f"(broker {n}: nothing to replay)" if s.world.brokers[n].running else f"(broker {n} is down)")


def _unfence(s: ReplicationStory, args: list[str]) -> None:
    n = s.broker(_one(s, args, "unfence N"))
    if not s.world.unfence(n):
        s.say(f"(broker {n} is down)")


def _fence(s: ReplicationStory, args: list[str]) -> None:
    n = s.broker(_one(s, args, "fence N"))
    if s.world.controller.image.broker_state(n) in FENCED_STATES:
        s.say(f"(broker {n} is fenced already)")
    else:
        s.world.fence(n)


def _crash(s: ReplicationStory, args: list[str]) -> None:
    n = s.broker(_one(s, args, "crash N"))
    w = s.world
    if not w.brokers[n].running:
        s.say(f"(broker {n} is down)")
        return
    for m in w.pending:
        if m.dest == n or (isinstance(m, BrokerHeartbeatRequest) and m.source == n):
            s.say(f"lost {message_text(m)} (connection reset)")
    w.crash(n)


def _restart(s: ReplicationStory, args: list[str]) -> None:
    if not args or len(args) > 2 or (len(args) == 2 and args[1] != "disk-loss"):
        raise s.bad("expected `restart N [disk-loss]`")
    n = s.broker(args[0])
    if s.world.brokers[n].running:
        s.say(f"(broker {n} is running)")
    else:
        s.world.restart(n, disk_loss=len(args) == 2)


def _shutdown(s: ReplicationStory, args: list[str]) -> None:
    n = s.broker(_one(s, args, "shutdown N"))
    b = s.world.brokers[n]
    if not b.running or b.want_shutdown:
        s.say(f"(broker {n} is down or shutting down)")
    else:
        s.world.shutdown(n)


def _tick(s: ReplicationStory, args: list[str]) -> None:
    w = _one(s, args, "tick N|C")
    n = CONTROLLER if w in ("c", "C") else s.broker(w)
    if not s.world.fire_timers(n):
        s.say("(nothing due)")


def _advance(s: ReplicationStory, args: list[str]) -> None:
    ms = int(_one(s, args, "advance MS"))
    if ms <= 0:
        raise s.bad("advance needs a positive number of milliseconds")
    s.world.now += ms
    s.say(f"t={s.world.now}ms")


def _run(s: ReplicationStory, args: list[str]) -> None:
    ms = int(_one(s, args, "run MS"))
    if ms <= 0 or ms % 10:
        raise s.bad("run needs a positive multiple of 10 milliseconds")
    s.coarse(lambda: s.world.run(ms // 10, 10))


def _settle(s: ReplicationStory, args: list[str]) -> None:
    if args:
        raise s.bad("expected `settle`")
    w = s.world
    s.coarse(w.settle)
    lid = w.leader()
    s.say(f"every acknowledged record ({len(w.ghost.acked)}) is readable from leader {lid}" if lid != -1
          else "no leader (unavailable)")


def _status(s: ReplicationStory, args: list[str]) -> None:
    w = s.world
    s.lines.append(f"t={w.now}ms " + controller_text(w.controller))
    s.lines += [broker_text(w.brokers[b]) for b in w.ids]
    s.lines.append(f"acked: {' '.join(f'{o}:{e}:{v}' for o, e, v in sorted(w.ghost.acked)) or '-'}")
    s.lines.append(f"in flight: {len(w.pending)}")
    s.lines += ["  " + message_text(m) for m in w.pending]


def _log(s: ReplicationStory, args: list[str]) -> None:
    for b in [s.broker(a) for a in args] or list(s.world.ids):
        br = s.world.brokers[b]
        s.lines.append(f"{b}: {log_text(br.entries)} hw={br.high_watermark} flushed={br.log.flushed_offset}")


def _metadata(s: ReplicationStory, args: list[str]) -> None:
    for off, rec in enumerate(s.world.controller.records):
        s.lines.append(f"{off} {rec!r}")


ReplicationStory.commands = {
    "produce": _produce, "complete": _complete, "fetch": _fetch, "send-fetch": _send_fetch,
    "deliver": _deliver, "drop": _drop, "stabilize": _stabilize, "replay": _replay, "unfence": _unfence,
    "fence": _fence, "crash": _crash, "restart": _restart, "shutdown": _shutdown, "tick": _tick,
    "advance": _advance, "run": _run, "settle": _settle, "status": _status, "log": _log, "metadata": _metadata,
}


def run_script(path: str | Path, rewrite: bool = False) -> list[str]:
    """Run one story file; the outputs of its commands (``DatadrivenMismatch`` if one differs
    from the golden output, unless ``rewrite``; ``DatadrivenError`` naming file and line on a bad
    command)."""
    return ReplicationStory().run(path, rewrite=rewrite)
