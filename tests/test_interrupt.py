"""Interrupts keep the exit-code contract (kraft/interrupt.py): a real ``kraft`` process, signalled
once its work has started, exits 130 (SIGINT) or 143 (SIGTERM) with one line on stderr and no
traceback, leaves no process it started behind (TLC's java, Spark's JVM and Python workers, pytest,
``kraft`` children), and leaves no JSON document a reader could take for a finished run: a stale one
from an earlier run is planted in OUT before each run and must be gone."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from kraft.outcome import EXIT_INTERRUPTED, EXIT_TERMINATED, Verdict, header
from kraft.sim.cli import run_once
from kraft.sim.core import Faults

ROOT = Path(__file__).resolve().parents[1]
WORD = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}
CODE = {signal.SIGINT: EXIT_INTERRUPTED, signal.SIGTERM: EXIT_TERMINATED}


# ------------------------------------------------------------------------------ the process tree

def _stat(pid: int) -> tuple[int, str, str] | None:
    """(ppid, state, start time) of a process, None if there is none."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(rest[1]), rest[0], rest[19]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _descendants(root: int) -> dict[int, tuple[str, str]]:
    """Every process below ``root`` (by parent pid, through /proc): pid -> (start time, cmdline)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit() and (st := _stat(int(d))) is not None:
            children.setdefault(st[0], []).append(int(d))
    out: dict[int, tuple[str, str]] = {}
    todo = [root]
    while todo:
        for c in children.get(todo.pop(), []):
            st = _stat(c)
            if st is not None:
                out[c] = (st[2], _cmdline(c))
                todo.append(c)
    return out


def _alive(pid: int, start: str) -> bool:
    """The same process (same start time) still exists and is not a zombie waiting to be reaped."""
    st = _stat(pid)
    return st is not None and st[2] == start and st[1] != "Z"


class Run:
    """A ``kraft`` (or ``python -m``) process started for a test; records every process it starts."""

    def __init__(self, args: list[str], cwd: Path, module: str = "kraft.cli") -> None:
        self.cwd = cwd
        self.seen: dict[int, tuple[str, str]] = {}
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               "PYTHONUNBUFFERED": "1"}
        env.pop("CI", None)
        self.out, self.err = open(cwd / "stdout.txt", "w"), open(cwd / "stderr.txt", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", module, *map(str, args)], cwd=cwd, env=env,
                                     stdout=self.out, stderr=self.err, start_new_session=True)

    def look(self) -> dict[int, tuple[str, str]]:
        now = _descendants(self.proc.pid)
        self.seen.update(now)
        return now

    def having(self, *needles: str) -> list[int]:
        """The live descendants whose command line contains every needle."""
        return [p for p, (_, cmd) in self.look().items() if all(n in cmd for n in needles)]

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            assert self.proc.poll() is None, f"ended ({self.proc.returncode}) before {what}: {self.stderr()}"
            assert time.monotonic() < deadline, f"no {what} after {timeout:.0f}s: {self.stderr()}"
            time.sleep(0.1)

    def signal(self, sig: int, timeout: float = 30) -> int:
        self.look()
        self.proc.send_signal(sig)  # to the process only, as `kill` or a CI runner sends it
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.out.close()
            self.err.close()

    def stderr(self) -> str:
        return (self.cwd / "stderr.txt").read_text(errors="replace")

    def survivors(self, settle: float = 3.0) -> list[str]:
        """What it started and is still running ``settle`` seconds after it exited (a JVM's own
        children need a moment to see their parent go)."""
        deadline = time.monotonic() + settle
        while True:
            left = [f"{p}: {cmd[:120]}" for p, (start, cmd) in self.seen.items() if _alive(p, start)]
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.1)

    def clean_up(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        for p, (start, _) in self.seen.items():
            if _alive(p, start):
                os.kill(p, signal.SIGKILL)


@pytest.fixture
def started(tmp_path):
    runs: list[Run] = []

    def start(args: list[str], module: str = "kraft.cli") -> Run:
        runs.append(Run(args, tmp_path, module))
        return runs[-1]

    yield start
    for r in runs:
        r.clean_up()


def assert_stopped(run: Run, sig: int, name: str, *, java: bool = False) -> None:
    """Exit 130/143, the one line, no traceback, nothing left running (a JVM not even a moment)."""
    code = run.signal(sig)
    err = run.stderr()
    assert code == CODE[sig], f"exit {code}: {err}"
    assert err.strip().splitlines()[-1:] == [f"{name}: {WORD[sig]}"], err
    assert "Traceback" not in err and "Aborted!" not in err, err
    if java:
        jvms = [f"{p}: {cmd[:120]}" for p, (start, cmd) in run.seen.items() if "java" in cmd and _alive(p, start)]
        assert not jvms, f"JVMs left running: {jvms}"
    assert not run.survivors(), f"left running: {run.survivors(0)}"


def stale(path: Path, command: str) -> Path:
    """A finished-looking document, as an earlier run would have left it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(header(command, Verdict.CLEAN, "an earlier run, all fine")) + "\n")
    return path


def assert_no_document(out: Path, *names: str) -> None:
    left = [n for n in names if (out / n).exists()]
    temps = [p.name for p in out.rglob("*.tmp")]
    assert not left and not temps, f"left in {out}: {left + temps}"


# ------------------------------------------------------------------------------------ commands

@pytest.mark.tlc
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_check_stops_tlc_and_leaves_no_check_json(started, tmp_path, sig):
    out = tmp_path / "out"
    stale(out / "check.json", "check")
    run = started(["check", "KRaft", "--size", "medium", "--out", out])  # a 600 s simulation
    run.wait_for(lambda: run.having("tlc2.TLC"), "TLC process")
    assert_stopped(run, sig, "kraft check", java=True)
    assert_no_document(out, "check.json")


def _traces(d: Path, n: int) -> None:
    for seed in range(n):
        run_once("kraft", seed, 400, Faults.parse("all"), None, 3, d / f"kraft-seed{seed}")


@pytest.mark.tlc
def test_conform_stops_the_tlc_runs_of_its_worker_threads(started, tmp_path):
    _traces(tmp_path / "traces", 6)
    out = tmp_path / "out"
    stale(out / "conform.json", "conform")
    run = started(["conform", tmp_path / "traces", "--jobs", "2", "--batch", "1", "--out", out])
    run.wait_for(lambda: len(run.having("tlc2.TLC")) == 2, "two TLC processes")
    assert_stopped(run, signal.SIGINT, "kraft conform", java=True)
    assert_no_document(out, "conform.json")


def _register_histories(d: Path, n: int, ops: int) -> None:
    """Register histories of six clients with overlapping operations: seconds of linearizability
    search each (whatever the verdict; the run is interrupted long before)."""
    rng = random.Random(7)
    d.mkdir(parents=True)
    for h in range(n):
        lines = [json.dumps({"v": 1, "kind": "history", "model": "register"})]
        value, pending, left = 0, {}, ops
        while left or pending:
            p = rng.randrange(6)
            if p in pending:
                f, v = pending.pop(p)
                value = v if f == "write" else value
                lines.append(json.dumps({"process": p, "type": "ok", "f": f, "value": value if f == "read" else v}))
            elif left:
                f = rng.choice(("read", "write"))
                pending[p] = (f, rng.randrange(5) if f == "write" else None)
                lines.append(json.dumps({"process": p, "type": "invoke", "f": f, "value": pending[p][1]}))
                left -= 1
        (d / f"reg-{h:02d}.ndjson").write_text("\n".join(lines) + "\n")


@pytest.mark.spark
def test_audit_stops_the_spark_jvm_and_its_workers(started, tmp_path):
    _register_histories(tmp_path / "h", 12, 3000)
    out = tmp_path / "out"
    for name in ("summary.json", "results.json", "malformed.json"):
        stale(out / name, "audit")
    run = started(["audit", tmp_path / "h", "--out", out])
    run.wait_for(lambda: run.having("pyspark.daemon"), "Spark Python worker (the job running)")
    assert_stopped(run, signal.SIGINT, "kraft audit", java=True)
    assert_no_document(out, "summary.json", "results.json", "malformed.json")


def test_simulate_leaves_no_summary_and_no_cut_trace(started, tmp_path):
    out = tmp_path / "out"
    planted = [stale(out / "summary.json", "simulate"), stale(out / "kraft-seed0" / "summary.json", "simulate")]
    (out / "kraft-seed0" / "trace.ndjson").write_text('{"v": 1, "kind": "trace"}\n')
    run = started(["simulate", "--protocol", "kraft", "--faults", "all", "--steps", "100000000", "--count", "2",
                   "--out", out])
    # the work has started when the run has cleared its directory (or, on a build that does not, soon)
    deadline = time.monotonic() + 8
    run.wait_for(lambda: not any(p.exists() for p in planted) or time.monotonic() > deadline, "simulation")
    time.sleep(1)
    assert_stopped(run, signal.SIGINT, "kraft simulate")
    assert_no_document(out, "summary.json", "kraft-seed0/summary.json", "kraft-seed0/trace.ndjson",
                       "kraft-seed0/history.ndjson")


def test_zoo_stops_its_kraft_and_pytest_children(started, tmp_path):
    out = tmp_path / "zoo"
    stale(out / "zoo.json", "zoo")
    run = started(["zoo", "--protocol", "groups", "--no-spark", "--out", out])
    run.wait_for(lambda: run.having("kraft.cli", "simulate") and run.having("pytest"), "simulate and pytest children")
    assert_stopped(run, signal.SIGINT, "kraft zoo")
    assert_no_document(out, "zoo.json")


@pytest.mark.tlc
def test_review_stops_its_stage_and_the_stages_tlc(started, tmp_path):
    out = tmp_path / "results"
    stale(out / "summary.json", "review")
    run = started(["review", "--protocol", "groups", "--out", out])
    run.wait_for(lambda: run.having("tlc2.TLC"), "the model-check stage's TLC")
    assert_stopped(run, signal.SIGTERM, "kraft review", java=True)
    assert_no_document(out, "summary.json")
    stopped = [p for p in (out / "logs").glob("*.log") if p.read_text().strip().endswith("kraft check: terminated")]
    assert stopped, "no stage log ends with the stage's own stop"


def test_kraft_test_forwards_the_interrupt_to_pytest_once(started, tmp_path):
    marker = tmp_path / "in-the-test"
    (tmp_path / "test_slow.py").write_text(f"import pathlib, time\n\ndef test_slow():\n"
                                           f"    pathlib.Path({str(marker)!r}).touch()\n    time.sleep(60)\n")
    run = started(["test", str(tmp_path / "test_slow.py"), "-p", "no:cacheprovider", "-q"])
    run.wait_for(marker.exists, "pytest running the test")
    assert_stopped(run, signal.SIGINT, "kraft test")
    assert "KeyboardInterrupt" in (tmp_path / "stdout.txt").read_text()  # pytest's own report of it


def test_module_entry_point_exits_130(started, tmp_path):
    _register_histories(tmp_path / "h", 12, 3000)
    run = started([tmp_path / "h"], module="spark_validation.linearizability")
    run.wait_for(lambda: "reg-00" in (tmp_path / "stdout.txt").read_text(), "the first history's report")
    assert_stopped(run, signal.SIGINT, "python -m spark_validation.linearizability")


# ---------------------------------------------------------------------------- the mechanism itself

STUBBORN = """
import signal, subprocess, sys, time
from kraft import interrupt
child = ("import signal, subprocess, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
         "subprocess.Popen(['sleep', '60']); print('ready', flush=True); time.sleep(60)")
with interrupt.guard("demo"):
    interrupt.run([sys.executable, "-c", child], grace=1)
"""


def test_a_child_that_ignores_sigterm_is_killed_with_its_group(started, tmp_path):
    """A child that ignores its stop signal is killed after the grace, and the process it started
    (in its group) with it."""
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    run = started([], module="stubborn")  # python -m from tmp_path, where stubborn.py is
    run.wait_for(lambda: "ready" in (tmp_path / "stdout.txt").read_text() and run.having("sleep 60"),
                 "the child and its sleep")
    t = time.monotonic()
    assert_stopped(run, signal.SIGTERM, "demo")
    assert time.monotonic() - t < 10


def test_a_document_cut_short_leaves_nothing(tmp_path):
    """write_document's temporary file goes when the write is interrupted, and the old document
    was removed by clear_documents before: nothing in the directory could be read as a result."""
    from kraft.outcome import clear_documents, writing

    doc = stale(tmp_path / "check.json", "check")
    clear_documents(doc)
    with pytest.raises(KeyboardInterrupt):
        with writing(doc) as fh:
            fh.write('{"command": "check", "verdict": "clean"')
            raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []
