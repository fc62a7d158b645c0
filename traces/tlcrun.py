"""What conformance needs from a TLC run of a generated trace module.

TLC itself is run by the project's one runner, :func:`model_check.run_tlc` (private run directory
with its own ``-metadir`` and ``java.io.tmpdir``, process-group kill on timeout), with one worker and
``-deadlock`` (deadlock checking off: a trace spec stops when the trace ends). The ``-tool`` output
is read with model_check's parser (:func:`model_check.tool_messages`, named :class:`model_check.EC`
codes). This module only decides what a finished run means for a trace: did the witness invariant
fail, how deep did the search get (the first unmatched micro-step), how many states were there, what
did the module print with ``PrintT``, and which errors did TLC report.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from model_check import EC, TLCResult, run_tlc, strip_tool_messages, tool_messages
from model_check.tlc import INVARIANT_VIOLATED, MP_ERROR

__all__ = ["RunResult", "run_trace_module", "classify"]

_DEPTH = re.compile(r"is (\d+)")
_DISTINCT = re.compile(r"([\d,]+) distinct states found")


@attrs.frozen
class RunResult:
    outcome: str  # "ok" | "invariant" | "error" | "timeout"
    depth: int  # TLC's reported search depth (0 when it did not report one)
    states: int  # distinct states, -1 when TLC did not say
    seconds: float
    output: str
    errors: tuple[str, ...]

    @property
    def printed(self) -> str:
        """The output with TLC's own tool messages removed: what PrintT wrote (and parse notes)."""
        return strip_tool_messages(self.output)


JVM_ARGS = ("-Xss256m", "-XX:TieredStopAtLevel=1")  # see run_trace_module


def run_trace_module(run_dir: Path, module: str, cfg: str, *, timeout: float | None = None,
                     heap: str = "2g") -> RunResult:
    """Run TLC on ``run_dir/module.tla`` with ``run_dir/cfg`` (one worker, ``-deadlock``, a 256 MB
    thread stack: the trace literals nest deeply, and the specs recurse over logs, e.g. KRaft's
    ``ValuesOf`` over the records below a snapshot, as deep as a long trace's logs are long) and read the result for conformance.

    The JIT stops at its first tier (C1): a trace run evaluates each trace line once, so little
    code gets hot enough for the optimizing compiler to pay back the CPU its threads take."""
    res = run_tlc(run_dir / f"{module}.tla", run_dir / cfg, workers=1, timeout=timeout,
                  check_deadlock=False, heap=heap, jvm_args=JVM_ARGS)
    return classify(res)


def classify(res: TLCResult) -> RunResult:
    """A finished :class:`model_check.TLCResult` as conformance reads it.

    The witness invariant failing is ``"invariant"`` (the trace was consumed: accepted). TLC's
    outcome decides ``"timeout"`` and ``"error"``; any error-class message TLC printed (other than
    the header of a counterexample) also makes the run an error, as does a non-zero exit without a
    search depth or TLC's closing ``Finished in`` line."""
    depth, states = 0, -1
    invariant = False
    errors: list[str] = []
    for msg in tool_messages(res.output):
        if msg.code in INVARIANT_VIOLATED:
            invariant = True
        elif msg.code == EC.SEARCH_DEPTH:
            m = _DEPTH.search(msg.text)
            depth = int(m.group(1)) if m else depth
        elif msg.code == EC.STATS:
            m = _DISTINCT.search(msg.text)
            states = int(m.group(1).replace(",", "")) if m else states
        elif msg.severity == MP_ERROR and msg.code != EC.BEHAVIOR_UP_TO_THIS_POINT:
            errors.append(f"TLC {int(msg.code)}: {msg.text.strip()}")
    rc = res.exit_code or 0
    own_error = bool(errors) or (not invariant and rc != 0 and depth == 0 and "Finished in" not in res.output)
    if not errors and own_error:
        errors.append(f"TLC exited with {rc}: {res.output[-2000:]}")
    outcome = {"invariant": "invariant", "ok": "ok", "timeout": "timeout"}.get(res.outcome, "error")
    if outcome == "ok" and own_error:
        outcome = "error"
    found = tuple(errors) or tuple(res.errors)
    if outcome == "error" and not found:
        found = (f"TLC outcome {res.outcome}",)
    return RunResult(outcome, depth, states, res.seconds, res.output,
                     found if outcome in ("error", "timeout") else ())
