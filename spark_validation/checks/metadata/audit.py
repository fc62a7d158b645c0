"""The audit of one ``__cluster_metadata-0`` directory (:func:`audit_directory`), and of a corpus
of them in this process or on Spark, one task per directory running the same function
(:func:`audit_corpus`).

A directory's result is a :class:`DirectoryAudit` whose ``verdict`` follows kraft/outcome.py:
``violation`` (some record breaks a rule), ``error`` (a file cannot be read: file and byte
position), ``inconclusive`` (nothing to check, or a log that does not start where its snapshot
ends), ``clean``. The command writes it as JSON (:func:`.cli.directory_json`).
"""

from __future__ import annotations

import os
from collections import Counter

import attrs

from kraft.outcome import Verdict, plural

from .image import Image
from .reader import Layout, Unreadable, batches, check_snapshot, layout, read_file, records
from .replay import INTERPRETED, Replayer, UncleanElection, Violation, Where


@attrs.frozen
class SnapshotRead:
    """The snapshot a directory's replay started from: its file, end offset and record count."""

    file: str
    end_offset: int
    records: int


@attrs.frozen
class FileError:
    """A file that could not be read: its name (or the directory), the byte position where
    known, and why."""

    file: str
    position: int | None
    why: str


@attrs.frozen
class ImageSize:
    """The metadata image after the replay: its brokers, topics and partitions."""

    brokers: int
    topics: int
    partitions: int


@attrs.frozen
class DirectoryAudit:
    """One metadata log directory audited: its verdict, what was read (snapshot, segments, files
    ignored, batches, records by type, control records, records not interpreted or in aborted
    transactions), the image replayed, the unclean elections and the violations (the first
    ``MAX_LISTED`` of each, all counted), and why a file could not be read (``error``) or nothing
    could be decided (``reason``)."""

    directory: str
    verdict: Verdict
    snapshot: SnapshotRead | None
    segments: tuple[str, ...]
    ignored_files: tuple[str, ...]
    batches: int
    records: int
    control_records: dict[str, int]
    record_types: dict[str, int]
    not_interpreted: dict[str, int]
    aborted_transaction_records: int
    image: ImageSize
    unclean_election_count: int
    unclean_elections: tuple[UncleanElection, ...]
    violation_count: int
    violations_by_invariant: dict[str, int]
    violations: tuple[Violation, ...]
    error: FileError | None
    reason: str | None


class _Gap(Exception):
    """The log does not continue the snapshot (or, without one, does not start at offset 0)."""


def _replay_snapshot(directory: str, lay: Layout, rep: Replayer, counts: Counter, controls: Counter) -> None:
    name = lay.snapshot
    assert name is not None
    data = read_file(directory, name)
    check_snapshot(directory, name)
    rep.in_snapshot = True
    last = Where(name, 0, 0)
    for batch, pos in batches(name, data):
        counts["batches"] += 1
        for record, offset in records(name, data, batch, pos, controls):
            counts["snapshot_records"] += 1
            last = Where(name, pos, offset)
            rep.replay(record, last)
    rep.in_snapshot = False
    rep.end_snapshot(last)


def _replay_segments(directory: str, lay: Layout, rep: Replayer, counts: Counter, controls: Counter) -> None:
    start = lay.snapshot_end
    if lay.segments and lay.segments[0][0] > start:
        what = f"the snapshot ends at offset {start}" if lay.snapshot else "there is no snapshot"
        raise _Gap(f"the log starts at offset {lay.segments[0][0]} but {what}: the records before it are missing")
    expected = None
    for _, name in lay.segments:
        data = read_file(directory, name)
        for batch, pos in batches(name, data):
            if expected is not None and batch.base_offset < expected:
                raise Unreadable(name, pos, f"batch base offset {batch.base_offset} goes back below {expected}")
            expected = batch.next_offset
            counts["batches"] += 1
            if batch.last_offset < start:
                continue
            for record, offset in records(name, data, batch, pos, controls):
                if offset >= start:
                    counts["log_records"] += 1
                    rep.replay(record, Where(name, pos, offset))


def _verdict(rep: Replayer, error: FileError | None, reason: str | None, checked: int) -> Verdict:
    parts = []
    if rep.violation_count:
        parts.append(Verdict.VIOLATION)
    if error:
        parts.append(Verdict.ERROR)
    if reason or not checked:
        parts.append(Verdict.INCONCLUSIVE)
    return Verdict.worst(parts, empty=Verdict.CLEAN)


def audit_directory(directory: str, min_isr: int = 1, unclean_allowed: bool = False) -> DirectoryAudit:
    """Replay and check one metadata log directory (never changes it). ``min_isr`` and
    ``unclean_allowed`` stand for the static configuration, which the log does not hold."""
    rep = Replayer(Image(default_min_isr=min_isr, unclean_allowed=unclean_allowed))
    counts: Counter = Counter()
    controls: Counter = Counter()
    error: FileError | None = None
    reason: str | None = None
    lay = Layout(None, 0, (), ())
    try:
        lay = layout(directory)
        if lay.snapshot:
            _replay_snapshot(directory, lay, rep, counts, controls)
        _replay_segments(directory, lay, rep, counts, controls)
    except Unreadable as exc:
        error = FileError(exc.file, exc.position, exc.why)
    except _Gap as exc:
        reason = str(exc)
    except OSError as exc:
        error = FileError(directory, None, exc.strerror or str(exc))
    checked = sum(n for t, n in rep.record_types.items() if t in INTERPRETED)
    if not checked and not reason and not error:
        reason = "no broker, topic or partition record to check" if (lay.segments or lay.snapshot) \
            else "no segment (.log) or snapshot (.checkpoint) file"
    return _result(directory, lay, rep, counts, controls, error, reason, _verdict(rep, error, reason, checked))


def _result(directory: str, lay: Layout, rep: Replayer, counts: Counter, controls: Counter, error: FileError | None,
            reason: str | None, verdict: Verdict) -> DirectoryAudit:
    snap = SnapshotRead(lay.snapshot, lay.snapshot_end, counts["snapshot_records"]) if lay.snapshot else None
    image = ImageSize(len(rep.image.brokers), len(rep.image.topics),
                      sum(len(t.partitions) for t in rep.image.topics.values()))
    return DirectoryAudit(
        directory=directory, verdict=verdict, snapshot=snap, segments=tuple(n for _, n in lay.segments),
        ignored_files=tuple(lay.ignored), batches=counts["batches"],
        records=counts["snapshot_records"] + counts["log_records"], control_records=dict(sorted(controls.items())),
        record_types=dict(sorted(rep.record_types.items())), not_interpreted=dict(sorted(rep.not_interpreted.items())),
        aborted_transaction_records=rep.aborted_records, image=image, unclean_election_count=rep.unclean_elections,
        unclean_elections=tuple(rep.unclean), violation_count=rep.violation_count,
        violations_by_invariant=dict(sorted(rep.by_invariant.items())), violations=tuple(rep.violations),
        error=error, reason=reason)


def _audit_task(args: tuple[str, int, bool]) -> DirectoryAudit:
    return audit_directory(*args)


def audit_corpus(directories: list[str], min_isr: int, master: str | None = None,
                 unclean_allowed: bool = False) -> list[DirectoryAudit]:
    """Every directory's result, in the order given: in this process, or with ``master`` one Spark
    task per directory (paths must be readable at the same place on every executor)."""
    if master is None:
        return [audit_directory(d, min_isr, unclean_allowed) for d in directories]
    from spark_validation.session import get_context  # lazy: it imports pyspark; only --master needs it

    sc = get_context(master, light_jvm=True, app_name="kraft-audit-metadata")
    tasks = [(os.path.abspath(d), min_isr, unclean_allowed) for d in directories]
    results = sc.parallelize(tasks, max(1, len(tasks))).map(_audit_task).collect()
    return [attrs.evolve(r, directory=d) for d, r in zip(directories, results)]


def is_metadata_dir(path: str) -> bool:
    lay = layout(path)
    return bool(lay.segments or lay.snapshot)


def discover(paths: list[str]) -> list[str]:
    """The metadata log directories under ``paths``: a path that holds segments or snapshots is
    one; otherwise every directory below it that does. Raises FileNotFoundError / NotADirectoryError."""
    found: list[str] = []
    for p in paths:
        if not os.path.exists(p):
            raise FileNotFoundError(p)
        if not os.path.isdir(p):
            raise NotADirectoryError(p)
        if is_metadata_dir(p):
            found.append(p)
            continue
        for root, dirs, _ in os.walk(p):
            dirs.sort()
            found.extend(os.path.join(root, d) for d in dirs if is_metadata_dir(os.path.join(root, d)))
    return found


def summary(results: list[DirectoryAudit]) -> tuple[Verdict, str]:
    """The corpus verdict (worst of the directories; none is inconclusive) and its sentence."""
    verdict = Verdict.worst(r.verdict for r in results)
    by = Counter(r.verdict.value for r in results)
    if not results:
        return verdict, "no metadata log directory found: nothing checked"
    violations = sum(r.violation_count for r in results)
    parts = [f"{n} {v}" for v, n in sorted(by.items())]
    text = f"{plural(len(results), 'metadata log')}: {', '.join(parts)}"
    if violations:
        kinds = Counter()
        for r in results:
            kinds.update(r.violations_by_invariant)
        text += f"; {plural(violations, 'violation')} ({', '.join(sorted(kinds))})"
    return verdict, text
