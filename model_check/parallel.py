"""Many independent TLC simulators with distinct seeds, run in waves, and their results combined.

TLC's random simulation is embarrassingly parallel: seeds share nothing. A run of ``seeds`` seeds
proceeds in waves; in each wave every seed runs one *round*: one TLC ``-simulate num=T -depth D
-seed S`` (one worker thread) over the spec files shipped with the task, killed when the run's
total time budget is spent. A round that finishes reports how many states it generated (TLC 2.15
prints simulation progress only once a minute, so a run killed before its end reports none; a
bounded round always ends with its count). Waves continue until a round finds a violation, a round
fails, or the budget is spent. Seed ``i``'s round ``r`` uses TLC seed ``base + i + r * seeds``, so
every round of a run has its own seed and a run is reproducible.

:func:`simulate` is independent of the engine that runs a wave: ``map_wave`` takes the wave's
tasks and returns their rows (``model_check.spark`` maps them over Spark executors). Rows are plain
JSON-able dicts; the transcript travels back only for a round that found a violation.

The driver keeps the shortest counterexample of the wave that found one, after replaying it
through TLC (``model_check.replay``); a counterexample that does not replay is not reported.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import attrs

from kraft.outcome import plural

from .replay import Replay, replay
from .specs import Manifest, ManifestError, only_expected_property, variant_cfg
from .tlc import TLCError, TLCResult, parse_tool_output, run_tlc

__all__ = ["ROUND_TRACES", "Task", "run_task", "simulate", "Parallel"]

ROUND_TRACES = 500  # behaviours per round: a few seconds of TLC on the medium sizes
MIN_ROUND_SECONDS = 1.0  # a wave is not started with less budget left than this


@attrs.frozen
class Task:
    """One round of one seed, with everything an executor needs (no shared file system)."""

    seed_index: int
    round: int
    tlc_seed: int
    files: dict[str, str]  # the spec directory's .tla files by name
    module: str
    cfg_name: str
    cfg_text: str
    depth: int
    traces: int
    check_deadlock: bool
    extra_args: tuple[str, ...]
    timeout: float


def run_task(task: Task) -> dict[str, Any]:
    """Executor side: write the spec files to a private directory and run the round's TLC."""
    work = Path(tempfile.mkdtemp(prefix=f"kraft-seed{task.seed_index}-"))
    row: dict[str, Any] = {"seed_index": task.seed_index, "round": task.round, "tlc_seed": task.tlc_seed}
    try:
        for name, text in task.files.items():
            (work / name).write_text(text)
        (work / task.cfg_name).write_text(task.cfg_text)
        r = run_tlc(work / f"{task.module}.tla", work / task.cfg_name, workers=1, timeout=task.timeout,
                    simulate=True, depth=task.depth, check_deadlock=task.check_deadlock, seed=task.tlc_seed,
                    traces=task.traces, cfg_text=task.cfg_text, extra_args=task.extra_args)
    except (TLCError, OSError) as exc:
        return {**row, "outcome": "error", "violated": None, "states": 0, "seconds": 0.0, "finished": False,
                "errors": [f"{type(exc).__name__}: {exc}"], "length": 0, "output": ""}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    killed = any("budget without finding a violation" in e for e in r.errors)
    return {**row, "outcome": r.outcome, "violated": r.violated, "states": r.states, "seconds": r.seconds,
            "finished": not killed and r.outcome != "error", "errors": list(r.errors),
            "length": len(r.counterexample), "output": r.output if r.violation else ""}


@attrs.define
class Parallel:
    """What a parallel simulation found: the combined TLCResult (states = the seeds' sum), one
    summary per seed, every round's row (without transcripts) and the replay of the reported
    counterexample."""

    result: TLCResult
    seeds: list[dict[str, Any]]
    rounds: list[dict[str, Any]]
    replay: Replay | None
    waves: int

    def to_json(self) -> dict[str, Any]:
        return {"seeds": self.seeds, "waves": self.waves,
                "rounds": [{k: v for k, v in r.items() if k != "output"} for r in self.rounds],
                "replay": None if self.replay is None else attrs.asdict(self.replay)}


def run_cfg_text(m: Manifest, size: str, variant: str | None) -> str:
    """The cfg a run uses: the size's, with the variant switched on (as ``run_spec`` does)."""
    cfg = m.directory / m.sizes[size].cfg
    if not cfg.is_file():
        raise ManifestError(f"{m.path}: [sizes.{size}] cfg {m.sizes[size].cfg!r} does not exist in {m.directory}")
    text = cfg.read_text()
    if variant is not None:
        text = only_expected_property(variant_cfg(text, variant, str(cfg)), m.variants[variant].violates)
    return text


def simulate(m: Manifest, size: str, variant: str | None, *, seeds: int, budget: float,
             map_wave: Callable[[list[Task]], list[dict[str, Any]]], depth: int | None = None,
             base_seed: int | None = None, traces: int = ROUND_TRACES,
             on_wave: Callable[[int, list[dict[str, Any]]], None] | None = None) -> Parallel:
    """Run ``seeds`` simulators for at most ``budget`` seconds of wall time; see the module docstring."""
    sz = m.sizes[size]
    cfg_text = run_cfg_text(m, size, variant)
    files = {f.name: f.read_text() for f in sorted(m.directory.glob("*.tla"))}
    base = base_seed if base_seed is not None else (sz.seed or 0)
    extra = ("-lncheck", sz.lncheck) if sz.lncheck else ()
    started = time.monotonic()
    rows: list[dict[str, Any]] = []
    wave = 0
    while True:
        left = budget - (time.monotonic() - started)
        if left < MIN_ROUND_SECONDS and wave > 0:
            break
        tasks = [Task(i, wave, base + i + wave * seeds, files, m.module, Path(sz.cfg).name, cfg_text,
                      depth if depth is not None else (sz.depth or 100), traces, sz.check_deadlock, extra,
                      max(left, MIN_ROUND_SECONDS)) for i in range(seeds)]
        got = sorted(map_wave(tasks), key=lambda r: r["seed_index"])
        rows += got
        wave += 1
        if on_wave is not None:
            on_wave(wave, got)
        if any(r["outcome"] != "ok" or not r["finished"] for r in got):
            break
    return _combine(m, cfg_text, rows, seeds, wave, time.monotonic() - started, budget)


def _seed_summaries(rows: list[dict[str, Any]], seeds: int) -> list[dict[str, Any]]:
    out = []
    for i in range(seeds):
        mine = [r for r in rows if r["seed_index"] == i]
        last = mine[-1] if mine else None
        if last is None:
            outcome = "not run"
        elif any(r["outcome"] in ("error", "parse_error") for r in mine):
            outcome = "error"
        elif last["outcome"] in ("invariant", "property", "deadlock"):
            outcome = "violation"
        else:
            outcome = "ok" if last["finished"] else "budget"
        out.append({"seed_index": i, "tlc_seeds": [r["tlc_seed"] for r in mine], "rounds": len(mine),
                    "finished_rounds": sum(r["finished"] for r in mine),
                    "states": sum(r["states"] for r in mine), "seconds": round(sum(r["seconds"] for r in mine), 3),
                    "outcome": outcome, "violated": last["violated"] if last else None,
                    "length": last["length"] if last and outcome == "violation" else None,
                    "errors": [e for r in mine for e in r["errors"] if r["outcome"] in ("error", "parse_error")]})
    return out


def _combine(m: Manifest, cfg_text: str, rows: list[dict[str, Any]], seeds: int, waves: int,
             seconds: float, budget: float) -> Parallel:
    per_seed = _seed_summaries(rows, seeds)
    states = sum(s["states"] for s in per_seed)
    errors = [f"seed {s['seed_index']}: {e}" for s in per_seed for e in s["errors"]]
    notes = [f"{plural(seeds, 'seed')}, {plural(waves, 'wave')} of {plural(seeds, 'round')}; states = the sum "
             "of the rounds' (a round stopped by the budget reports none)"]
    hits = sorted((r for r in rows if r["outcome"] in ("invariant", "property", "deadlock")),
                  key=lambda r: (r["length"], r["seed_index"]))
    rep: Replay | None = None
    for hit in hits:
        found = parse_tool_output(hit["output"], cfg_text=cfg_text,
                                  file_for_module=lambda mod: str(m.directory / f"{mod}.tla"))
        rep = replay(m.tla, cfg_text, found)
        if rep.confirmed:
            found.states, found.seconds, found.depth = states, seconds, len(found.counterexample)
            found.errors = notes + errors + [f"shortest counterexample: seed {hit['seed_index']} "
                                             f"(TLC -seed {hit['tlc_seed']}); replay: {rep.detail}"]
            return Parallel(found, per_seed, rows, rep, waves)
        errors.append(f"seed {hit['seed_index']} (TLC -seed {hit['tlc_seed']}): counterexample of "
                      f"{hit['length']} states did not replay: {rep.detail}")
    if errors:
        outcome = "error"
    elif not any(r["finished"] for r in rows):
        outcome = "timeout"
        errors.append(f"no seed finished a round within the {budget:g}s budget")
    else:
        outcome = "ok"
        notes.append(f"no violation found by {seeds} seeds in {seconds:.0f}s")
    res = TLCResult(outcome=outcome, violated=None, states=states, distinct=0, depth=0, seconds=seconds,
                    errors=notes + errors)
    return Parallel(res, per_seed, rows, rep, waves)
