"""``kraft simulate``: run a protocol in the deterministic simulator, write trace + history.

Exit codes (kraft/outcome.py): 0 every run kept every invariant, 1 some run violated one, 2 usage
error. Each ``summary.json`` (one per run, and the overall one with ``--count``) starts with the
shared header (``command, verdict, summary, exit_code``); a run's own ``"ok"``/``"violation"`` is
the header's ``verdict`` (``clean``/``violation``) there.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import click

from kraft.cliutil import LiveLine, json_flag, set_document
from kraft.core.invariants import InvariantViolation
from kraft.outcome import EXIT_ERROR, Verdict, clear_documents, header, plural, write_document
from kraft.protocols import PROTOCOLS
from kraft.sim.core import Faults, SimulationError, Simulator
from kraft.sim.recorder import Recorder


# the logs a run can write out, by kind (SimPlugin.kept_logs): the flag is --<kind>-log, the
# directory under the run's --out <kind>-log/, the summary's list of directories <kind>_log
LOG_KINDS = ("metadata", "offsets")


def _log_dir(kind: str) -> str:
    return f"{kind}-log"


# the targeted faults of each protocol, for --help
_NEMESES = "; ".join(f"{name}: {', '.join(offered)}" for name, r in sorted(PROTOCOLS.items())
                     if (offered := tuple(r.plugin(3, None).nemeses())))


def run_once(protocol_name: str, seed: int, steps: int, faults: Faults, variant: str | None, voters: int,
             out: Path | None, *, states: bool = True, after_violation: int | None = None,
             logs: tuple[str, ...] = (), observers: int = 0) -> dict[str, Any]:
    """One simulation; returns the summary dict (also written as ``summary.json`` when ``out``).
    ``after_violation``: None stops at the first violation; N runs on N events after it, then
    ends with the final phase (heal, quiesce, final reads; :meth:`Simulator.quiesce`).
    ``logs``: the kinds of log (:data:`LOG_KINDS`) whose directories to write under ``out/<kind>-log``.
    ``observers``: replicas outside the voter set (a protocol whose registration takes them)."""
    extra = {"observers": observers} if observers else {}
    protocol = PROTOCOLS[protocol_name].plugin(voters, variant, **extra)
    if not protocol.snapshots:
        faults = attrs.evolve(faults, snapshot=False)  # ``all`` means every fault the protocol has
    recorder = None
    if out is not None:
        clear_documents(*(out / f for f in ("summary.json", "trace.ndjson", "history.ndjson")))
        for kind in logs:
            shutil.rmtree(out / _log_dir(kind), ignore_errors=True)
        recorder = Recorder(
            {"protocol": protocol_name, "spec": protocol.declaration.spec_module, "constants": protocol.constants(),
             "seed": seed, "variant": variant},
            {"model": protocol.declaration.history_model or protocol_name,
             "source": f"kraft simulate --protocol {protocol_name} --seed {seed} --steps {steps} "
                       f"--faults {','.join(faults.enabled()) or 'none'}"
                       + (f" --variant {variant}" if variant else "")
                       + (f" --after-violation {after_violation}" if after_violation is not None else "")},
            states=states)
    sim = Simulator(protocol, seed, faults, recorder=recorder, after_violation=after_violation)
    violation: InvariantViolation | None = None
    started = time.perf_counter()
    try:
        sim.run(steps)
    except InvariantViolation as exc:
        violation = exc
    try:
        sim.finish()
    except InvariantViolation as exc:  # broken during the final phase (heal, quiesce, final reads)
        violation = violation or exc
    violation = violation or sim.first_violation
    seconds = time.perf_counter() - started
    summary: dict[str, Any] = {
        "protocol": protocol_name, "seed": seed, "steps": steps, "variant": variant,
        "events": sim.events, "virtual_ms": sim.now, "seconds": round(seconds, 3),
        "faults_enabled": faults.enabled(), "faults_injected": dict(sorted(sim.fault_counts.items())),
        "network": dict(sim.network.stats),
        **protocol.summary(sim),
        "verdict": "violation" if violation else "ok",
    }
    if violation is not None:
        summary["violation"] = {"invariant": violation.invariant, "event": violation.event,
                                "message": violation.violation.message, "state": violation.summary}
    if after_violation is not None:
        # how long the run went on after the first violation, and the final phase (Jepsen's heal +
        # quiesce + final reads), so the client history shows what the violation did
        summary["after_violation"] = {
            "limit": after_violation,
            "events_after": (sim.events - violation.event) if violation is not None else None,
            "later_violations": dict(sorted(sim.later_violations.items())),
            **sim.final_phase}
    elif sim.final_phase:
        # a protocol whose runs always end with the final phase (Protocol.final_phase_always)
        summary["final_phase"] = dict(sim.final_phase)
    for kind in logs if out is not None else ():
        summary[f"{kind}_log"] = write_logs(protocol.logs(sim, kind), out / _log_dir(kind))
    if out is not None and recorder is not None:
        tpath, hpath = recorder.write(out)
        summary["trace"] = str(tpath)
        summary["history"] = str(hpath)
        summary["trace_steps"] = len(recorder.steps)
        summary["history_ops"] = len(recorder.ops)
        verdict, sentence = run_verdict(summary, protocol_name)
        doc = header("simulate", verdict, sentence, {k: v for k, v in summary.items() if k != "verdict"})
        write_document(out / "summary.json", json.dumps(doc, indent=2, default=str) + "\n")
    return summary


def write_logs(logs: dict[str, tuple[Any, str]], out: Path) -> list[str]:
    """Copy each log directory (every file in it, as the run left it: segments written by
    ``kraft.log``, a quorum-state file) from its file system to ``out/<name>``; the
    directories written."""
    written = []
    for name, (fs, directory) in sorted(logs.items()):
        target = out / name
        target.mkdir(parents=True, exist_ok=True)
        for f in sorted(fs.listdir(directory)):
            (target / f).write_bytes(fs.read_bytes(f"{directory}/{f}"))
        written.append(str(target))
    return written


def run_verdict(s: dict[str, Any], protocol_name: str) -> tuple[Verdict, str]:
    """One run's verdict and summary sentence (``s["protocol"]`` may be a plug-in's own detail,
    e.g. the groups' rebalance protocol, so the plug-in name is passed)."""
    what = f"{protocol_name} seed {s['seed']}" + (f" variant {s['variant']}" if s["variant"] else "")
    if s["verdict"] == "ok":
        return Verdict.CLEAN, f"{what}: every invariant held for {plural(s['events'], 'event')}"
    v = s["violation"]
    return Verdict.VIOLATION, f"{what}: {v['invariant']} violated at event {v['event']}"


def overall_verdict(protocol: str, results: list[dict[str, Any]], steps: int) -> tuple[Verdict, str]:
    """The verdict and summary sentence of several runs (``--count``)."""
    bad = [r for r in results if r["verdict"] != "ok"]
    runs = f"{plural(len(results), 'run')} of {protocol} ({steps} steps each)"
    if not bad:
        return Verdict.CLEAN, f"{runs}: every invariant held"
    first = bad[0]["violation"]
    return Verdict.VIOLATION, (f"{len(bad)} of {runs} violated an invariant (first: {first['invariant']} "
                               f"in seed {bad[0]['seed']} at event {first['event']})")


def _print_summary(s: dict[str, Any]) -> None:
    click.echo(f"{s['protocol']} seed={s['seed']}{' variant=' + s['variant'] if s['variant'] else ''}: "
               f"{s['events']} events, {s['virtual_ms']} virtual ms, {s['seconds']}s")
    if "elections" in s:
        leaders = ", ".join(f"{e}:{l}" for e, l in s["leader_per_epoch"].items()) or "none"
        click.echo(f"  elections {s['elections']}; leader per epoch {leaders}")
        click.echo(f"  committed offset {s['committed_offset']}; clients {s['clients']}")
    mq = s.get("metadata_quorum")
    if mq:
        click.echo(f"  metadata quorum {mq['controllers']}: {mq['active_controller_changes']} active-controller "
                   f"changes (quorum epoch {mq['quorum_epoch']}), {mq['committed_batches']} batches / "
                   f"{mq['committed_records']} records committed ({mq['metadata_records']} with the bootstrap), "
                   f"{mq['lost_operations']} operations and {mq['lost_answers']} answers lost to a leader change")
    faults = ", ".join(f"{k} {v}" for k, v in s["faults_injected"].items()) or "none"
    net = s["network"]
    click.echo(f"  faults injected: {faults}; network sent {net['sent']} delivered {net['delivered']} "
               f"dropped {net['dropped']} duplicated {net['duplicated']}")
    fin = s.get("after_violation") or s.get("final_phase")
    if fin:
        after = (f"ran {fin['events_after']} events after the violation; " if fin.get("events_after") is not None
                 else "")
        reads = fin.get("final_reads") or {}
        click.echo(f"  final phase: {after}calm from event {fin.get('calm_at_event')}, quiesce "
                   f"{fin.get('quiesce_events', 0)} events, final reads {reads.get('polls', 0)} polls "
                   f"from leader {reads.get('leader')}"
                   + (f" ({reads['offline']})" if reads.get("offline") else ""))
    if s["verdict"] == "ok":
        click.echo("  invariants: all held")
    else:
        v = s["violation"]
        click.echo(f"  INVARIANT VIOLATED: {v['invariant']} at event {v['event']}: {v['message']}")
        click.echo("  " + v["state"].replace("\n", "\n  "))
    if "trace" in s:
        click.echo(f"  wrote {s['trace']} ({s['trace_steps']} steps), {s['history']} ({s['history_ops']} ops)")
    for kind in LOG_KINDS:
        for d in s.get(f"{kind}_log", ()):
            click.echo(f"  wrote the {kind} log {d}")


@click.command("simulate")
@click.option("--protocol", "protocol_name", default="kraft", show_default=True,
              help=f"protocol plug-in ({', '.join(sorted(PROTOCOLS))})")
@click.option("--seed", type=int, default=0, show_default=True, help="random seed (first seed with --count)")
@click.option("--steps", type=click.IntRange(min=1), default=2000, show_default=True,
              help="simulator events per run")
@click.option("--faults", default="none", show_default=True,
              help="all, none, or a comma list of drop,dup,delay,reorder,partition,crash,disk-loss,resign "
                   f"and the targeted faults a protocol offers ({_NEMESES}; NAME:MS sets the mean interval), "
                   "e.g. all,kill-leader")
@click.option("--variant", default=None, help="switch on one bug variant (e.g. VoteWithoutLogCheck)")
@click.option("--voters", type=click.IntRange(min=1, max=9), default=3, show_default=True)
@click.option("--observers", type=click.IntRange(min=0, max=9), default=0, show_default=True,
              help="replicas outside the bootstrap voter set, which may be added as voters, with "
                   "voter changes among the client operations (KIP-853; kraft only)")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("sim-out"),
              show_default=True, help="output directory (per run DIR/<protocol>-seed<N>/ with --count)")
@click.option("--count", type=click.IntRange(min=1), default=None, help="run seeds seed..seed+count-1")
@click.option("--no-states", is_flag=True, help="record trace steps without projected post-states")
@click.option("--after-violation", type=click.IntRange(min=0), default=None, metavar="N",
              help="do not stop at the first invariant violation: record it, calm the faults, run N "
                   "more events (past --steps if need be), then end as a Jepsen test does (heal, "
                   "restart, quiesce, final reads from offset 0) so the client history shows the "
                   "damage to `kraft audit`; every run then ends with that final phase "
                   "(a replication run that keeps its invariants always does) "
                   "[default: stop at the violation]")
@click.option("--metadata-log", is_flag=True,
              help="also write the metadata log as the run left it: every controller's "
                   "__cluster_metadata-0 directory (record batches as Kafka writes them, one record per "
                   "metadata record, one batch per controller operation) under "
                   "OUT/metadata-log/controller-<id>/, for `kraft dump-log` or `kraft audit-metadata` "
                   "(replication only)")
@click.option("--offsets-log", is_flag=True,
              help="also write the group coordinator's __consumer_offsets-<N> partition as the run "
                   "left it (N: the group id's hash; one batch per accepted offset commit with an "
                   "OffsetCommit record per partition, one GroupMetadata record per completed "
                   "generation) under OUT/offsets-log/, for `kraft dump-log --offsets-decoder` "
                   "(groups only)")
@json_flag("simulate")
def simulate(protocol_name: str, seed: int, steps: int, faults: str, variant: str | None, voters: int,
             observers: int, out: Path, count: int | None, no_states: bool, after_violation: int | None,
             metadata_log: bool, offsets_log: bool) -> None:
    """Run the implementation in the seeded simulator; check invariants after every event."""
    if protocol_name not in PROTOCOLS:
        raise click.BadParameter(f"unknown protocol {protocol_name!r}; known: {', '.join(sorted(PROTOCOLS))}",
                                 param_hint="--protocol")
    registered = PROTOCOLS[protocol_name]
    if observers and not registered.observers:
        raise click.BadParameter(f"protocol {protocol_name} has no observers", param_hint="--observers")
    try:
        fault_set = Faults.parse(faults, registered.plugin(voters, None).nemeses())
    except SimulationError as exc:
        raise click.BadParameter(str(exc), param_hint="--faults") from None
    if "snapshot" in (faults or "").split(",") and not registered.plugin(voters, None).snapshots:
        raise click.BadParameter(f"protocol {protocol_name} takes no snapshots", param_hint="--faults")
    logs = tuple(kind for kind, wanted in zip(LOG_KINDS, (metadata_log, offsets_log)) if wanted)
    for kind in logs:
        if kind not in registered.plugin(voters, None).kept_logs:
            raise click.BadParameter(f"protocol {protocol_name} keeps no {kind} log", param_hint=f"--{kind}-log")
    known = registered.variants
    if variant is not None and variant not in known:
        raise click.BadParameter(f"unknown variant {variant!r} for {protocol_name}; known: {', '.join(known)}",
                                 param_hint="--variant")
    try:  # fail before simulating, not with a traceback after (--out under a regular file, ...)
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        click.echo(f"kraft simulate: cannot create --out {exc.filename or out}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)
    clear_documents(out / "summary.json")  # written again after the last run
    seeds = [seed] if count is None else list(range(seed, seed + count))
    violations = 0
    results = []
    line = LiveLine()  # "run k/N" on a terminal (not under CI); the per-run summaries are on stdout
    for k, s in enumerate(seeds, 1):
        run_dir = out if count is None else out / f"{protocol_name}-seed{s}"
        if count is not None:
            line.update(f"run {k}/{count} (seed {s}), {violations} with a violation so far", force=True)
        summary = run_once(protocol_name, s, steps, fault_set, variant, voters, run_dir, states=not no_states,
                           after_violation=after_violation, logs=logs, observers=observers)
        results.append(summary)
        line.done()
        _print_summary(summary)
        violations += summary["verdict"] != "ok"
    verdict, sentence = overall_verdict(protocol_name, results, steps) if count is not None else run_verdict(results[0], protocol_name)
    if count is None:  # the single run's document, as run_once wrote it
        set_document(json.loads((out / "summary.json").read_text()))
    if count is not None:
        out.mkdir(parents=True, exist_ok=True)
        doc = header("simulate", verdict, sentence, {
            "runs": len(results), "violations": violations,
            "results": [{k: r[k] for k in ("seed", "verdict", "events", "committed_offset") if k in r}
                        for r in results]})
        write_document(out / "summary.json", json.dumps(doc, indent=2) + "\n")
        set_document(doc)
        click.echo(f"{len(results)} runs, {violations} with an invariant violation")
    click.echo(sentence)
    sys.exit(verdict.exit_code)
