"""Readable scenario scripts (etcd-raft ``testdata`` style) over a hand-stepped ``Cluster``.

One command per line, ``#`` comments; invariants are checked after every command.  Commands:

  voters N [Variant ...]      start a cluster (first command; "PreVote" switches pre-vote off)
  run MS | tick MS | deliver-all | settle
  timeout N | restart N | lose-disk N | resign N | flush N | isolate N | heal | append [N]
  let NAME = leader           remember the current leader as $NAME (also: let NAME = follower)
  expect leader [N]           some leader exists (and it is N)
  expect role N ROLE          expect not-leader N       expect epoch N E         expect leader-of N M
  expect committed >= K       expect hwm N >= K         expect converged
  expect log N E:V E:V ...    (exact log of node N)     expect violation INVARIANT (of the next command)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kraft.quorum.cluster import Cluster
from kraft.quorum.config import QuorumConfig
from kraft.core.invariants import InvariantViolation


class ScriptError(Exception):
    """A script line failed: names the file and line."""

    def __init__(self, path: str, line: int, text: str, why: str) -> None:
        super().__init__(f"{path}:{line}: {why}\n    {text}")
        self.path, self.line, self.why = path, line, why


def run_script(path: str | Path) -> list[str]:
    """Run a script; returns a transcript (one line per command); raises ScriptError on failure."""
    p = Path(path)
    cluster: Cluster | None = None
    names: dict[str, int] = {}
    expect_violation: str | None = None
    transcript: list[str] = []
    for lineno, raw in enumerate(p.read_text().splitlines(), 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        words = [str(names[w[1:]]) if w.startswith("$") and w[1:] in names else w for w in text.split()]

        def fail(why: str) -> None:
            raise ScriptError(str(p), lineno, raw.strip(), why)

        if words[0] == "voters":
            cfg = QuorumConfig()
            for v in words[2:]:
                cfg = cfg.with_variant(v)
            cluster = Cluster(int(words[1]), cfg)
            transcript.append(text)
            continue
        if cluster is None:
            fail("the first command must be 'voters N'")
        c = cluster
        try:
            if words[0] == "expect":
                _expect(c, words[1:], fail)
                if words[1] == "violation":
                    expect_violation = words[2]
            else:
                _command(c, words, names, fail)
                c.check()
                if expect_violation is not None:
                    fail(f"expected a {expect_violation} violation, none happened")
        except InvariantViolation as exc:
            if expect_violation in {v.invariant for v in exc.violations}:
                transcript.append(f"{text}  -> {exc.invariant} (expected)")
                return transcript
            fail(f"invariant violated: {exc}")
        except (ValueError, IndexError, KeyError) as exc:
            fail(f"bad command: {exc!r}")
        transcript.append(text)
    if expect_violation is not None:
        raise ScriptError(str(p), 0, "", f"expected a {expect_violation} violation, none happened")
    return transcript


def _command(c: Cluster, w: list[str], names: dict[str, int], fail: Any) -> None:
    cmd = w[0]
    if cmd == "run":
        c.run(int(w[1]))
    elif cmd == "tick":
        c.tick(int(w[1]))
    elif cmd == "deliver-all":
        c.deliver_all()
    elif cmd == "settle":
        if not c.settle():
            fail("no convergence within 30s\n" + c.describe())
    elif cmd in ("timeout", "restart", "resign", "flush", "isolate"):
        getattr(c, cmd)(int(w[1]))
    elif cmd == "lose-disk":
        c.restart(int(w[1]), disk_lost=True)
    elif cmd == "heal":
        c.heal()
    elif cmd == "append":
        off = c.append(int(w[1]) if len(w) > 1 else None)
        if off is None:
            fail("append refused: no leader there")
    elif cmd == "let":
        if w[3] == "leader":
            lid = c.leader()
            if lid is None:
                fail("no leader to remember")
            names[w[1]] = lid
        elif w[3] == "follower":
            lid = c.leader()
            names[w[1]] = next(i for i in c.ids if i != lid)
        else:
            fail(f"unknown value {w[3]!r}")
    else:
        fail(f"unknown command {cmd!r}")


def _expect(c: Cluster, w: list[str], fail: Any) -> None:
    what = w[0]
    if what == "leader":
        lid = c.leader()
        if lid is None or (len(w) > 1 and lid != int(w[1])):
            fail(f"leader is {lid}\n" + c.describe())
    elif what == "role":
        got = c.nodes[int(w[1])].role.value
        if got != w[2]:
            fail(f"node {w[1]} is {got}\n" + c.describe())
    elif what == "not-leader":
        if c.nodes[int(w[1])].role.value == "Leader":
            fail(f"node {w[1]} is still leader")
    elif what == "epoch":
        got = c.nodes[int(w[1])].current_epoch
        if got != int(w[2]):
            fail(f"node {w[1]} is in epoch {got}")
    elif what == "leader-of":
        got = c.nodes[int(w[1])].leader_id
        if got != int(w[2]):
            fail(f"node {w[1]} follows {got}")
    elif what == "committed":
        if not len(c.monitor.committed) >= int(w[2]):
            fail(f"only {len(c.monitor.committed)} records committed")
    elif what == "hwm":
        got = c.nodes[int(w[1])].high_watermark
        if not got >= int(w[3]):
            fail(f"node {w[1]} high watermark is {got}")
    elif what == "converged":
        if not c.converged():
            fail("not converged\n" + c.describe())
    elif what == "log":
        got = [f"{e.epoch}:{e.value}" for e in c.nodes[int(w[1])].storage.entries]
        if got != w[2:]:
            fail(f"node {w[1]} log is {' '.join(got)}")
    elif what == "violation":
        pass
    else:
        fail(f"unknown expectation {what!r}")
