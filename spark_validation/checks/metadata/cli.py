"""``kraft audit-metadata DIR ...``: replay a cluster's ``__cluster_metadata`` log and check it.

Exit codes (kraft/outcome.py): 0 every directory clean; 1 a record breaks a rule (named with its
file, offset, record type and invariant); 2 a file cannot be read (torn or corrupt batch, a record
that does not decode: file and byte position), a missing path, or Spark cannot start; 3 nothing to
check (no metadata log found, no broker/topic/partition record, a log that does not continue its
snapshot). ``OUT/audit-metadata.json`` carries the shared header.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import attrs
import click

from kraft.cliutil import json_flag, set_document
from kraft.outcome import EXIT_ERROR, clear_documents, header, write_document
from spark_validation.unavailable import SparkUnavailable

from .audit import DirectoryAudit, audit_corpus, discover, summary
from .replay import UncleanElection

DOCUMENT = "audit-metadata.json"


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in d.items()) or "none"


def _unclean_json(u: UncleanElection) -> dict[str, Any]:
    return {"file": u.file, "offset": u.offset, "partition": u.partition, "from": u.before, "to": u.after,
            "leaderEpoch": u.leader_epoch}


def directory_json(r: DirectoryAudit) -> dict[str, Any]:
    """One directory's entry of ``audit-metadata.json``: the result's fields in order, the exit
    code after the verdict."""
    d = attrs.asdict(r, recurse=False)
    d.update(verdict=r.verdict.value, snapshot=r.snapshot and attrs.asdict(r.snapshot), segments=list(r.segments),
             ignored_files=list(r.ignored_files), image=attrs.asdict(r.image), error=r.error and attrs.asdict(r.error),
             unclean_elections=[_unclean_json(u) for u in r.unclean_elections],
             violations=[v.to_json() for v in r.violations])
    return {"directory": d.pop("directory"), "verdict": d.pop("verdict"), "exit_code": r.verdict.exit_code, **d}


def _print_directory(r: DirectoryAudit) -> None:
    snap = r.snapshot
    click.echo(f"{r.directory}: {r.verdict.value}")
    click.echo(f"  read           {'snapshot ' + snap.file + ' (' + str(snap.records) + ' records), ' if snap else ''}"
               f"{len(r.segments)} segment(s), {r.records} metadata records in {r.batches} batches")
    click.echo(f"  image          {r.image.brokers} brokers, {r.image.topics} topics, {r.image.partitions} partitions")
    click.echo(f"  control        {_counts(r.control_records)}")
    click.echo(f"  not checked    {_counts(r.not_interpreted)}"
               + (f"; {r.aborted_transaction_records} in aborted transactions" if r.aborted_transaction_records else ""))
    if r.unclean_election_count:
        first = r.unclean_elections[0]
        click.echo(f"  unclean        {r.unclean_election_count} election(s) of a leader from outside the ISR "
                   f"(lawful when unclean.leader.election.enable allowed it; records may be lost), first: "
                   f"{first.partition} {first.before} -> {first.after} at {first.file} offset {first.offset}")
    for v in r.violations[:10]:
        part = f" {v.partition}" if v.partition else ""
        at = v.where
        click.echo(f"  VIOLATION {v.invariant}: {at.file} offset {at.offset} (batch at byte {at.position}) "
                   f"{v.record_type}{part}: {v.message}")
    if r.violation_count > 10:
        click.echo(f"  ... {r.violation_count - 10} more violations in the JSON document")
    if r.error:
        e = r.error
        where = f" at byte position {e.position}" if e.position is not None else ""
        click.echo(f"  UNREADABLE {e.file}{where}: {e.why}")
    if r.reason:
        click.echo(f"  NOTHING CHECKED: {r.reason}")


@click.command(name="audit-metadata")
@click.argument("directories", nargs=-1, required=True)
@click.option("--min-isr", type=click.IntRange(min=1), default=1, show_default=True,
              help="min.insync.replicas where the log sets none (Kafka's default is 1)")
@click.option("--unclean-allowed", is_flag=True,
              help="unclean.leader.election.enable=true where the log sets none (the brokers' static "
                   "config), or an administrator ran unclean elections: do not report them")
@click.option("--master", default=None, help="Spark master URL: one task per directory (default: in this process)")
@click.option("--out", "out", default="results/audit-metadata", show_default=True, type=click.Path(file_okay=False))
@json_flag("audit-metadata")
def audit_metadata(directories: tuple[str, ...], min_isr: int, unclean_allowed: bool, master: str | None,
                   out: str) -> None:
    """Check a KRaft cluster's metadata log against the replication protocol's rules.

    DIRECTORY is a copy of a controller's __cluster_metadata-0 directory (its .checkpoint
    snapshots and .log segments), or a directory holding several. Exit 1 if a record breaks a
    rule, 2 if a file cannot be read, 3 if there was nothing to check.
    """
    out_dir = Path(out)
    try:
        dirs = discover(list(directories))
        out_dir.mkdir(parents=True, exist_ok=True)
        clear_documents(out_dir / DOCUMENT)
        results = audit_corpus(dirs, min_isr, master, unclean_allowed)
    except FileNotFoundError as exc:
        click.echo(f"kraft audit-metadata: no such directory: {exc.filename or exc.args[0]}", err=True)
        sys.exit(EXIT_ERROR)
    except NotADirectoryError as exc:
        click.echo(f"kraft audit-metadata: not a directory: {exc.args[0]} (give the directory that holds "
                   "the .log segments)", err=True)
        sys.exit(EXIT_ERROR)
    except OSError as exc:
        click.echo(f"kraft audit-metadata: {exc.filename or out}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)
    except SparkUnavailable as exc:
        click.echo(f"kraft audit-metadata: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    verdict, sentence = summary(results)
    doc = header("audit-metadata", verdict, sentence,
                 {"engine": f"spark {master}" if master else "in-process", "min_isr_default": min_isr,
                  "unclean_allowed_default": unclean_allowed,
                  "directories": [directory_json(r) for r in results]})
    try:
        write_document(out_dir / DOCUMENT, json.dumps(doc, indent=2) + "\n")
    except OSError as exc:
        click.echo(f"kraft audit-metadata: {exc.filename or out}: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_ERROR)
    set_document(doc)
    for r in results:
        _print_directory(r)
    click.echo(sentence)
    click.echo(f"results: {out_dir / DOCUMENT}")
    sys.exit(verdict.exit_code)
