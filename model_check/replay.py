"""Re-check a simulation counterexample by making TLC replay it as the only behaviour of the spec.

A counterexample found by a TLC simulator elsewhere (a Spark executor) is not reported on the
word of that run: the driver writes a module that EXTENDS the spec and adds one variable,
``replayStep``, and whose behaviour is pinned to the counterexample's states::

    ReplayInit == Init /\\ replayStep = 1 /\\ ReplayState1
    ReplayNext == /\\ replayStep < n
                  /\\ Next
                  /\\ replayStep' = replayStep + 1
                  /\\ \\/ replayStep = 1 /\\ ReplayState2'  \\/ ...

``ReplayStateK`` is the K-th state exactly as TLC printed it (a conjunction ``/\\ var = value``),
so the spec's own ``Init`` and ``Next`` judge every step: a state the spec cannot reach from the
previous one ends the replay early. TLC then checks the replay module exhaustively (it has at most
n states) with only the violated invariant or action property; the replay confirms the
counterexample when TLC reports that same violation, at the counterexample's last state. A deadlock
is replayed as the invariant ``replayStep < n \\/ ENABLED Next``. A lasso (a liveness counterexample)
is not replayed this way and is reported as such.

Model values (``c1``, ``n2``) are introduced by the cfg, not by the module; the replay module
declares the ones the cfg assigns and the replay cfg sets each to the model value of its own name,
which TLC interns by name, so they equal the values in the spec's constants.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import attrs

from .tlc import EC, TLCResult, run_tlc, tool_messages

__all__ = ["Replay", "raw_states", "replay_module", "replay_cfg", "replay"]

REPLAY_MODULE = "KraftReplay"
_STATE_HEAD = re.compile(r"\A\s*(\d+): ")
_SPEC_DEF = re.compile(r"^Spec\s*==\s*(\w+)\s*/\\\s*\[\]\[(\w+)\]_", re.MULTILINE)
_CFG_SECTION = re.compile(r"^(CONSTANTS?|INIT|NEXT|SPECIFICATION|INVARIANTS?|PROPERTY|PROPERTIES|"
                          r"CONSTRAINTS?|ACTION_CONSTRAINTS?|SYMMETRY|VIEW|CHECK_DEADLOCK|ALIAS)\b")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class Replay:
    """``confirmed``: TLC found the same violation at the last state of the replayed behaviour.
    ``detail`` says what TLC found otherwise."""

    confirmed: bool
    detail: str
    states: int  # replay states TLC reached (the counterexample's length when confirmed)
    seconds: float


def raw_states(output: str) -> list[str]:
    """The counterexample's states as TLC printed them (without the ``N: <label>`` head line),
    from a ``-tool`` transcript: the last run of states numbered from 1."""
    states: list[str] = []
    for m in tool_messages(output):
        if m.code not in (EC.STATE_PRINT1, EC.STATE_PRINT2):
            continue
        head = _STATE_HEAD.match(m.text)
        if head is None:
            continue
        if int(head.group(1)) == 1:
            states = []
        states.append(m.text.split("\n", 1)[1] if "\n" in m.text else "")
    return states


def init_next(tla_text: str) -> tuple[str, str]:
    """The names of the initial predicate and next-state action of ``Spec == Init /\\ [][Next]_v``."""
    m = _SPEC_DEF.search(tla_text)
    return (m.group(1), m.group(2)) if m else ("Init", "Next")


def _constant_lines(cfg_text: str) -> list[str]:
    """The non-empty lines of a cfg's CONSTANT(S) sections, stripped, comments removed; what follows
    a section's keyword on its own line counts as a line."""
    out: list[str] = []
    section = None
    for line in re.sub(r"\\\*.*", "", cfg_text).splitlines():
        line = line.strip()
        head = _CFG_SECTION.match(line)
        if head:
            section = head.group(1)
            line = line[head.end():].strip()
        if section in ("CONSTANT", "CONSTANTS") and line:
            out.append(line)
    return out


def model_values(cfg_text: str) -> list[str]:
    """Identifiers on the right of a cfg's ``C = ...`` constant assignments that are not themselves
    assigned constants: the model values the cfg introduces."""
    assigned: set[str] = set()
    used: list[str] = []
    for line in _constant_lines(cfg_text):
        if "<-" in line or "=" not in line:
            continue
        name, _, value = line.partition("=")
        assigned.add(name.strip())
        value = re.sub(r'"(?:[^"\\]|\\.)*"', "", value)  # strings are not identifiers
        used += [v for v in _IDENT.findall(value) if v not in ("TRUE", "FALSE")]
    return sorted(set(used) - assigned)


def replay_module(spec_module: str, tla_text: str, states: list[str], mvs: list[str], deadlock: bool) -> str:
    init, nxt = init_next(tla_text)
    n = len(states)
    lines = [f"---- MODULE {REPLAY_MODULE} ----", f"EXTENDS {spec_module}, TLC, Naturals"]
    if mvs:
        lines.append("CONSTANTS " + ", ".join(mvs))
    lines.append("VARIABLE replayStep")
    for i, body in enumerate(states, 1):
        conj = "\n".join("    " + ln for ln in body.strip().splitlines())
        lines.append(f"ReplayState{i} ==\n{conj}\n")
    lines.append(f"ReplayInit == {init} /\\ replayStep = 1 /\\ ReplayState1")
    steps = "\n".join(f"       \\/ replayStep = {i} /\\ ReplayState{i + 1}'" for i in range(1, n))
    lines.append(f"ReplayNext ==\n    /\\ replayStep < {n}\n    /\\ {nxt}\n    /\\ replayStep' = replayStep + 1\n"
                 f"    /\\ {steps.lstrip() if n > 1 else 'FALSE'}")
    if deadlock:
        lines.append(f"ReplayNotDeadlocked == replayStep < {n} \\/ ENABLED {nxt}")
    lines.append("====")
    return "\n".join(lines) + "\n"


def replay_cfg(cfg_text: str, mvs: list[str], violated: str, kind: str) -> str:
    """The run's CONSTANTS, the model values as constants, the replay spec and the one check."""
    consts = ["    " + line for line in _constant_lines(cfg_text)]
    consts += [f"    {v} = {v}" for v in mvs]
    check = {"invariant": f"INVARIANT {violated}", "property": f"PROPERTY {violated}",
             "deadlock": "INVARIANT ReplayNotDeadlocked"}[kind]
    return "\n".join(["CONSTANTS", *consts, "INIT ReplayInit", "NEXT ReplayNext", check]) + "\n"


def replay(tla: Path, cfg_text: str, result: TLCResult, *, timeout: float = 300) -> Replay:
    """Replay ``result``'s counterexample (from a simulate run of module ``tla`` with ``cfg_text``)
    through TLC; see the module docstring."""
    states = raw_states(result.output)
    if result.outcome not in ("invariant", "property", "deadlock") or not states:
        return Replay(False, f"nothing to replay (outcome {result.outcome}, {len(states)} states)", 0, 0.0)
    if any(s.back_to is not None or s.action == "Stuttering" for s in result.counterexample):
        return Replay(False, "a lasso (liveness counterexample) is not replayed", 0, 0.0)
    if result.outcome != "deadlock" and not result.violated:
        return Replay(False, "TLC did not name the violated property", 0, 0.0)
    mvs = model_values(cfg_text)
    module = replay_module(tla.stem, tla.read_text(), states, mvs, result.outcome == "deadlock")
    violated = "ReplayNotDeadlocked" if result.outcome == "deadlock" else str(result.violated)
    cfg = replay_cfg(cfg_text, mvs, violated, result.outcome)
    return _run_replay(tla, module, cfg, violated, len(states), timeout)


def _run_replay(tla: Path, module: str, cfg: str, violated: str, n: int, timeout: float) -> Replay:
    work = Path(tempfile.mkdtemp(prefix="kraft-replay-"))
    try:
        for f in tla.parent.glob("*.tla"):
            shutil.copy2(f, work / f.name)
        (work / f"{REPLAY_MODULE}.tla").write_text(module)
        (work / f"{REPLAY_MODULE}.cfg").write_text(cfg)
        r = run_tlc(work / f"{REPLAY_MODULE}.tla", work / f"{REPLAY_MODULE}.cfg", timeout=timeout,
                    check_deadlock=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    reached = max(r.distinct, len(r.counterexample))
    if r.violation and (r.violated == violated or r.outcome == "property") and len(r.counterexample) == n:
        return Replay(True, f"TLC replayed all {n} states and found {violated} violated at the last",
                      n, r.seconds)
    if r.violation:
        what = f"{r.violated or r.outcome} violated at replay state {len(r.counterexample)} of {n}"
    elif r.outcome == "ok":
        what = f"no violation; the spec reached {r.distinct} of the {n} states"
    else:
        what = f"replay run ended {r.outcome}: {'; '.join(r.errors)[:500]}"
    return Replay(False, what, reached, r.seconds)
