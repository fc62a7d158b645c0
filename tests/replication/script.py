"""Partition-replication stories with golden output (etcd raft's ``testdata/`` interaction tests) on
the shared datadriven runner ``kraft.core.datadriven``: tests/replication/testdata/*.txt, each command
followed by ``----`` and what it produced.  ``pytest --rewrite`` writes the produced output back
(review the diff).  The Hypothesis machine (machine.py) speaks the same commands, so a shrunk
counterexample prints as a script that can be pasted here.

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
after every step; a violation is printed as ``VIOLATION <Invariant>: ...`` and ends the story (only
views may follow).

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

from kraft.controller.image import FENCED
from kraft.core.datadriven import Case, DatadrivenError, run_file
from kraft.core.invariants import InvariantViolation, Violation
from kraft.core.step import Ready
from kraft.replication.broker import ProduceResult
from kraft.replication.cluster import Cluster
from kraft.replication.config import ReplicationConfig
from kraft.replication.invariants import has_at
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

VIEWS = ("status", "log", "metadata")
ACKED_READABLE = "AckedReadableFromLeader"
_LINK = re.compile(r"^(\d+|\*|[cC])->(\d+|\*|[cC])$")


def _node(n: int) -> str:
    return "C" if n == CONTROLLER else str(n)


def _set(s: Any) -> str:
    return "[" + ",".join(map(str, sorted(s))) + "]"


def log_text(entries: Any) -> str:
    return "[" + " ".join(f"{e.epoch}:{e.value}" for e in entries) + "]"


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


def broker_snapshot(b: Any) -> dict[str, str]:
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


def controller_snapshot(c: Any) -> dict[str, str]:
    p = c.partition
    out = {"leader": str(p.leader), "epoch": str(p.leaderEpoch), "isr": _set(p.isr), "elr": _set(p.elr),
           "recovery": p.leaderRecoveryState}
    for b in c.brokers:
        out[f"broker {b}"] = f"{c.image.broker_state(b)}@{c.image.broker_epoch(b)}"
    return out


def _changes(before: dict[str, str], after: dict[str, str]) -> str:
    return ", ".join(f"{k} {before[k]}->{after[k]}" for k in after if before.get(k) != after[k])


def broker_text(b: Any) -> str:
    s = broker_snapshot(b)
    return f"{b.id} {s['role']} epoch={s['epoch']} isr={s['isr']} log={s['log']} hw={s['hw']} flushed={s['flushed']}"


def controller_text(c: Any) -> str:
    s = controller_snapshot(c)
    states = " ".join(f"{b}:{s[f'broker {b}']}" for b in c.brokers)
    return (f"C partition leader={s['leader']} epoch={s['epoch']} isr={s['isr']} elr={s['elr']} {s['recovery']}; "
            f"brokers {states}")


def violation_lines(violations: list[Violation]) -> list[str]:
    """One line per broken invariant (its first message; how many more there were)."""
    by_name: dict[str, list[str]] = {}
    for v in violations:
        by_name.setdefault(v.invariant, []).append(v.message)
    return [f"VIOLATION {name}: {msgs[0]}" + (f" (and {len(msgs) - 1} more)" if len(msgs) > 1 else "")
            for name, msgs in by_name.items()]


class AckedNotReadable(InvariantViolation):
    """End of a run: an acks=all-acknowledged record is not readable from the current leader."""


def check_acked_readable(c: Cluster) -> None:
    """Raise AckedNotReadable unless every acks=all-acknowledged record is in the current leader's
    log below its high watermark (no leader at all, every ISR/ELR member lost, is unavailability,
    which Kafka allows)."""
    lid = c.leader()
    if lid == -1:
        return
    br = c.brokers[lid]
    gone = [Violation(ACKED_READABLE, f"acked record (offset {a[0]}, epoch {a[1]}, value {a[2]}) is not readable "
                                      f"from leader {lid} (log {log_text(br.entries)}, hw {br.high_watermark})")
            for a in sorted(c.ghost.acked) if not (a[0] < br.high_watermark and has_at(tuple(br.entries), a))]
    if gone:
        raise AckedNotReadable(gone[0], c.steps, c.describe(), gone)


def converged(c: Cluster) -> bool:
    """Quiescent: a leader with every broker unfenced and in its ISR, every log equal to the
    leader's and fully committed, nothing waiting to be answered."""
    lid = c.leader()
    if lid == -1 or c.pending:
        return False
    ld = c.brokers[lid]
    return ld.is_leader() and set(ld.local_isr) == set(c.ids) and ld.high_watermark == ld.leo \
        and not ld.pending_produce and all(
            b.running and b.local_leader == lid and b.entries == ld.entries and b.high_watermark == ld.high_watermark
            and c.controller.image.broker_state(n) != FENCED for n, b in c.brokers.items())


def settle(c: Cluster, rounds: int = 150) -> None:
    """Restart every stopped broker, run fairly until ``converged`` (at most ``rounds`` rounds of 20 ms), and
    check every acknowledged record is readable from the leader."""
    for _ in range(rounds):
        for b in c.ids:
            c.restart(b)  # also a broker that finished a controlled shutdown meanwhile
        c.run(1, 20)
        p = c.controller.partition
        if converged(c) or (p.leader == -1 and not p.isr and not p.elr and not c.config.UncleanElection):
            break  # settled, or no broker may ever lead again (every ISR/ELR member was lost)
    check_acked_readable(c)


class Story:
    """One scenario: the cluster and what the current command printed.  ``render=False`` keeps the
    steps and the checks but prints nothing (the Hypothesis machine renders only its final run)."""

    def __init__(self, render: bool = True) -> None:
        self.cluster: Cluster | None = None
        self.render = render
        self.lines: list[str] = []
        self.seen: dict[int, dict[str, str]] = {}
        self.quiet = False
        self.ended_at: int | None = None
        self.violation: InvariantViolation | None = None
        self.steps = 0

    # -- the observer: every step of every node ------------------------------------------------
    def _snapshots(self) -> dict[int, dict[str, str]]:
        c = self.cluster
        assert c is not None
        out = {CONTROLLER: controller_snapshot(c.controller)}
        out.update({b: broker_snapshot(c.brokers[b]) for b in c.ids})
        return out

    def _observe(self, nid: int, ready: Ready) -> None:
        self.steps += 1
        if not self.render or self.quiet:
            return
        for st in ready.steps + ((ready.note,) if ready.note else ()):
            args = dict(st.args)
            m = args.pop("m", None)
            what = (" " + message_text(m)) if m is not None else ""
            what += "".join(f" {k}={v}" for k, v in args.items())
            name = st.action if st in ready.steps else st.action[0].lower() + st.action[1:]
            self.lines.append(f"{_node(nid)} {name}{what}")
        now = self._snapshots()
        changed = []
        for n in (nid, *[k for k in now if k != nid]):
            d = _changes(self.seen[n], now[n])
            if d:
                changed.append(d if n == nid else f"{_node(n)}: {d}")
        if changed:
            self.lines.append("  " + "; ".join(changed))
        self.seen = now
        for m in ready.messages:
            self.lines.append("  send " + message_text(m))
        r = ready.reply
        if isinstance(r, ProduceResult):
            if r.error == NONE and r.acks == -1:
                self.lines.append(f"  acked offset={r.offset} epoch={r.leaderEpoch} value={r.value}")
            elif r.error == NONE or r.error == "PENDING":
                self.lines.append(f"  appended offset={r.offset} value={r.value} acks={r.acks}"
                                  + (" (waits for the HW)" if r.error == "PENDING" else ""))
            else:
                self.lines.append(f"  {r.error} value={r.value}")

    # -- the datadriven handler ----------------------------------------------------------------
    def handle(self, case: Case) -> str:
        return self.command(case.text, case.path, case.line)

    def command(self, text: str, path: str = "<machine>", line: int = 0) -> str:
        self.lines = []
        words = text.split()

        def bad(why: str) -> DatadrivenError:
            return DatadrivenError(path, line, f"`{text}`: {why}")

        if words[0] == "brokers":
            self._start(words[1:], bad)
            return "\n".join(self.lines)
        if self.cluster is None:
            raise bad("the first command must be `brokers N [Variant ...] [min-isr=K]`")
        if self.ended_at is not None and words[0] not in VIEWS:
            raise bad(f"the story ended in a violation at line {self.ended_at}; only views "
                      f"({', '.join(VIEWS)}) or a new `brokers` may follow")
        handler = _COMMANDS.get(words[0])
        if handler is None:
            raise bad(f"unknown command {words[0]!r}; known: brokers, {', '.join(sorted(_COMMANDS))}")
        try:
            handler(self, self.cluster, words[1:], bad)
        except InvariantViolation as exc:
            self.ended_at, self.violation = line, exc
            self.quiet = False
            self.lines += violation_lines(exc.violations)
        except (ValueError, IndexError, KeyError) as exc:
            raise bad(f"bad arguments ({exc})") from None
        finally:
            self.quiet = False
        return "\n".join(self.lines)

    def _start(self, w: list[str], bad: Callable[[str], DatadrivenError]) -> None:
        if not w or not w[0].isdigit() or int(w[0]) < 1:
            raise bad("expected `brokers N [Variant ...] [min-isr=K]`")
        cfg = ReplicationConfig()
        for word in w[1:]:
            if word.startswith("min-isr=") and word[8:].isdigit() and int(word[8:]) > 0:
                cfg = cfg.__class__(**{**_fields(cfg), "min_insync_replicas": int(word[8:])})
            elif word in PROTOCOL.variant_names:
                cfg = cfg.with_variant(word)
            else:
                raise bad(f"unknown option {word!r}; variants: {', '.join(PROTOCOL.variant_names)}")
        c = Cluster(int(w[0]), cfg, on_step=self._observe)
        self.cluster, self.ended_at, self.violation, self.steps = c, None, None, 0
        self.seen = self._snapshots()
        if self.render:
            self.lines += [controller_text(c.controller)] + [broker_text(c.brokers[b]) for b in c.ids]

    # -- helpers for the commands --------------------------------------------------------------
    def broker(self, word: str, bad: Callable[[str], DatadrivenError]) -> int:
        c = self.cluster
        assert c is not None
        if not word.isdigit() or int(word) not in c.brokers:
            raise bad(f"no broker {word!r} (brokers are {', '.join(map(str, c.ids))})")
        return int(word)

    def end(self, word: str, bad: Callable[[str], DatadrivenError]) -> int | None:
        if word == "*":
            return None
        if word in ("c", "C"):
            return CONTROLLER
        return self.broker(word, bad)

    def say(self, line: str) -> None:
        if self.render and not self.quiet:
            self.lines.append(line)


def _fields(cfg: ReplicationConfig) -> dict[str, Any]:
    import attrs

    return attrs.asdict(cfg, recurse=False)


def _one(args: list[str], bad: Callable[[str], DatadrivenError], usage: str) -> str:
    if len(args) != 1:
        raise bad(f"expected `{usage}`")
    return args[0]


def _chosen(s: Story, c: Cluster, args: list[str], bad: Callable[[str], DatadrivenError], verb: str) -> list[Any]:
    if not args or len(args) > 2:
        raise bad(f"expected `{verb} A->B [K|all]`")
    mo = _LINK.match(args[0])
    if mo is None:
        raise bad(f"expected a link A->B (A, B a broker, C or *), got {args[0]!r}")
    src, dst = (s.end(g, bad) for g in mo.groups())
    chosen = [m for m in c.pending if (src is None or m.source == src) and (dst is None or m.dest == dst)]
    if not chosen:
        raise bad(f"nothing in flight on {args[0]}")
    if len(args) == 1:
        return chosen[:1]
    if args[1] == "all":
        return chosen
    if not args[1].isdigit() or int(args[1]) < 1:
        raise bad(f"expected a count or `all`, got {args[1]!r}")
    if int(args[1]) > len(chosen):
        raise bad(f"only {len(chosen)} message(s) in flight on {args[0]}")
    return chosen[:int(args[1])]


def _index(c: Cluster, m: Any) -> int | None:
    return next((k for k, p in enumerate(c.pending) if p is m), None)


def _deliver_one(s: Story, c: Cluster, m: Any) -> None:
    k = _index(c, m)
    if k is None:
        return  # gone meanwhile (a crash reset the connection)
    if m.dest != CONTROLLER and not c.brokers[m.dest].running:
        s.say(f"lost {message_text(m)} (broker {m.dest} is down)")
    c.deliver(k)


def _deliver(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    for m in _chosen(s, c, args, bad, "deliver"):
        _deliver_one(s, c, m)


def _drop(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    for m in _chosen(s, c, args, bad, "drop"):
        k = _index(c, m)
        if k is not None:
            s.say(f"network loses {message_text(m)}")
            c.drop(k)


def _stabilize(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if not c.pending:
        s.say("(nothing in flight)")
    for _ in range(200):
        if not c.pending:
            return
        _deliver_one(s, c, c.pending[0])
    raise bad("still messages in flight after 200 deliveries")


def _produce(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if not 1 <= len(args) <= 2:
        raise bad("expected `produce N [acks=-1|0|1]`")
    n = s.broker(args[0], bad)
    acks = -1
    if len(args) == 2:
        if args[1] not in ("acks=-1", "acks=0", "acks=1", "acks=all"):
            raise bad(f"expected acks=-1|0|1, got {args[1]!r}")
        acks = -1 if args[1] == "acks=all" else int(args[1][5:])
    if not c.brokers[n].running:
        s.say(f"(broker {n} is down: the client gets no answer)")
        return
    c.produce(n, acks)


def _complete(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if args:
        raise bad("expected `complete`")
    if not c.complete():
        s.say("(nothing to complete)")


def _fetch(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if not args or len(args) > 2 or (len(args) == 2 and args[1] != "alter-first"):
        raise bad("expected `fetch N [alter-first]`")
    n = s.broker(args[0], bad)
    if not c.fetch(n, alter_first=len(args) == 2):
        s.say(_why_no_fetch(c, n))


def _send_fetch(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    n = s.broker(_one(args, bad, "send-fetch N"), bad)
    if not c.send_fetch(n):
        s.say(_why_no_fetch(c, n))


def _why_no_fetch(c: Cluster, n: int) -> str:
    b = c.brokers[n]
    if not b.running:
        return f"(no fetch: broker {n} is down)"
    if b.local_leader == n:
        return f"(no fetch: broker {n} leads)"
    if b.local_leader not in c.brokers:
        return f"(no fetch: broker {n} knows no leader)"
    if not c.brokers[b.local_leader].running:
        return f"(no fetch: its leader {b.local_leader} is down)"
    return f"(no fetch: broker {n} has a fetch in flight)"


def _replay(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if not args:
        raise bad("expected `replay N [M ...]`")
    ns = [s.broker(a, bad) for a in args]
    for n in ns:
        if not c.replay(n):
            s.say(f"(broker {n}: nothing to replay)" if c.brokers[n].running else f"(broker {n} is down)")


def _unfence(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    n = s.broker(_one(args, bad, "unfence N"), bad)
    if not c.unfence(n):
        s.say(f"(broker {n} is down)")


def _fence(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    n = s.broker(_one(args, bad, "fence N"), bad)
    if c.controller.image.broker_state(n) == FENCED:
        s.say(f"(broker {n} is fenced already)")
    else:
        c.fence(n)


def _crash(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    n = s.broker(_one(args, bad, "crash N"), bad)
    if not c.brokers[n].running:
        s.say(f"(broker {n} is down)")
        return
    for m in c.pending:
        if m.dest == n or (isinstance(m, BrokerHeartbeatRequest) and m.source == n):
            s.say(f"lost {message_text(m)} (connection reset)")
    c.crash(n)


def _restart(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if not args or len(args) > 2 or (len(args) == 2 and args[1] != "disk-loss"):
        raise bad("expected `restart N [disk-loss]`")
    n = s.broker(args[0], bad)
    if c.brokers[n].running:
        s.say(f"(broker {n} is running)")
    else:
        c.restart(n, disk_loss=len(args) == 2)


def _shutdown(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    n = s.broker(_one(args, bad, "shutdown N"), bad)
    if not c.brokers[n].running or c.brokers[n].want_shutdown:
        s.say(f"(broker {n} is down or shutting down)")
    else:
        c.shutdown(n)


def _tick(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    w = _one(args, bad, "tick N|C")
    n = CONTROLLER if w in ("c", "C") else s.broker(w, bad)
    if not c.tick(n):
        s.say("(nothing due)")


def _advance(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    ms = int(_one(args, bad, "advance MS"))
    if ms <= 0:
        raise bad("advance needs a positive number of milliseconds")
    c.advance(ms)
    s.say(f"t={c.now}ms")


def _run(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    ms = int(_one(args, bad, "run MS"))
    if ms <= 0 or ms % 10:
        raise bad("run needs a positive multiple of 10 milliseconds")
    _coarse(s, c, lambda: c.run(ms // 10, 10))


def _coarse(s: Story, c: Cluster, go: Callable[[], None]) -> None:
    before, steps = (s._snapshots(), s.steps) if s.render else ({}, 0)
    s.quiet = True
    try:
        go()
    finally:
        s.quiet = False
        if s.render:
            s.lines.append(f"t={c.now}ms, {s.steps - steps} steps")
            now = s._snapshots()
            for n in now:
                d = _changes(before[n], now[n])
                if d:
                    s.lines.append(f"{_node(n)}: {d}")
            s.seen = now


def _settle(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    if args:
        raise bad("expected `settle`")
    _coarse(s, c, lambda: settle(c))
    lid = c.leader()
    s.say(f"every acknowledged record ({len(c.ghost.acked)}) is readable from leader {lid}" if lid != -1
          else "no leader (unavailable)")


def _status(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    s.lines.append(f"t={c.now}ms " + controller_text(c.controller))
    s.lines += [broker_text(c.brokers[b]) for b in c.ids]
    s.lines.append(f"acked: {' '.join(f'{o}:{e}:{v}' for o, e, v in sorted(c.ghost.acked)) or '-'}")
    s.lines.append(f"in flight: {len(c.pending)}")
    s.lines += ["  " + message_text(m) for m in c.pending]


def _log(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    for b in [s.broker(a, bad) for a in args] or list(c.ids):
        br = c.brokers[b]
        s.lines.append(f"{b}: {log_text(br.entries)} hw={br.high_watermark} flushed={br.log.flushed_offset}")


def _metadata(s: Story, c: Cluster, args: list[str], bad: Any) -> None:
    for off, rec in enumerate(c.controller.records):
        s.lines.append(f"{off} {rec!r}")


_COMMANDS: dict[str, Callable[[Story, Cluster, list[str], Any], None]] = {
    "produce": _produce, "complete": _complete, "fetch": _fetch, "send-fetch": _send_fetch,
    "deliver": _deliver, "drop": _drop, "stabilize": _stabilize, "replay": _replay, "unfence": _unfence,
    "fence": _fence, "crash": _crash, "restart": _restart, "shutdown": _shutdown, "tick": _tick,
    "advance": _advance, "run": _run, "settle": _settle, "status": _status, "log": _log, "metadata": _metadata,
}


def run_script(path: str | Path, rewrite: bool = False) -> list[str]:
    """Run one scenario file; the outputs of its commands (``DatadrivenMismatch`` if one differs
    from the golden output, unless ``rewrite``; ``DatadrivenError`` naming file and line on a bad
    command)."""
    return run_file(path, Story().handle, rewrite=rewrite)
