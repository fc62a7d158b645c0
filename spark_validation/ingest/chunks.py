"""Arrow record batches regrouped into tables that each hold whole histories.

A Spark partition streams its rows as record batches; the checks that run per partition want
every history's rows in one table. ``history_chunks`` gathers batches until it holds at least
``chunk_rows`` rows, cuts before the first row of the last history it holds (rows of one history
are contiguous in a partition), and carries that history over to the next chunk.

Beside its anomaly rows, a task emits one count row per history and chunk (``kind`` null); from
them :func:`chunk_paths` tells the driver which histories one chunk saw whole and which were split
(checked again after a shuffle), as :class:`ChunkPaths`.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

import attrs
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


OUT_DDL = "history string, kind string, key string, evidence string, chunk bigint, n bigint"
"""A per-partition check's output rows: anomalies, and per chunk one count row per history."""
CHUNK_STRIDE = 1 << 24  # chunk id = partition (or file) * stride + chunk number within the task


def history_chunks(batches: Iterable[pa.RecordBatch], chunk_rows: int) -> Iterator[pa.Table]:
    """Tables of whole histories (by the ``history`` column), each cut once ``chunk_rows`` rows
    were gathered; every row once, in order; empty batches are skipped."""
    buf: list[pa.RecordBatch] = []
    nbuf = 0
    for b in batches:
        if b.num_rows == 0:
            continue
        buf.append(b)
        nbuf += b.num_rows
        if nbuf < chunk_rows:
            continue
        t = pa.Table.from_batches(buf)
        hist = t.column("history")
        other = np.flatnonzero(~pc.equal(hist, hist[-1]).to_numpy(zero_copy_only=False))
        if len(other) == 0:  # one history so far: keep gathering
            continue
        cut = int(other[-1]) + 1
        yield t.slice(0, cut)
        rest = t.slice(cut)
        buf, nbuf = rest.to_batches(), rest.num_rows
    if nbuf:
        yield pa.Table.from_batches(buf)


def out_batch(anoms: list[Any], evidence: list[str], t: pa.Table, chunk: int) -> pa.RecordBatch:
    """A chunk's output (:data:`OUT_DDL`): one row per anomaly (``history, kind, key`` and its
    ``evidence`` as JSON text), then one count row per history of the chunk's table ``t``
    (``kind`` null, ``n`` its rows)."""
    vc = pc.value_counts(t.column("history"))
    hists, counts = vc.field("values").to_pylist(), vc.field("counts").to_pylist()
    m, none = len(anoms), [None] * len(counts)
    return pa.RecordBatch.from_arrays(
        [pa.array([a.history for a in anoms] + hists, pa.string()),
         pa.array([a.kind for a in anoms] + none, pa.string()), pa.array([a.key for a in anoms] + none, pa.string()),
         pa.array(evidence + none, pa.string()), pa.array([chunk] * (m + len(counts)), pa.int64()),
         pa.array([None] * m + counts, pa.int64())],
        names=["history", "kind", "key", "evidence", "chunk", "n"])


@attrs.frozen
class ChunkPaths:
    """Which path the histories of a per-partition check took: the ``engine`` that ran, the
    histories and rows the tasks saw, how many histories one chunk saw whole (``clustered``:
    their results are kept) or several chunks saw in parts (``shuffled``: checked again after a
    shuffle), the chunks cut, and the stored rows read, if any."""

    engine: str
    histories: int
    rows: int
    clustered: int
    shuffled: int
    chunks: int
    stored: str | None = None


def chunk_paths(rows: list[Any], engine: str) -> tuple[list[str], ChunkPaths]:
    """The histories split over several chunks (sorted) and the paths taken, from the count rows
    (``kind`` null: ``history, chunk, n``) among a check's output ``rows``."""
    chunks_of: dict[str, set[int]] = {}
    total = 0
    for r in rows:
        if r["kind"] is None:
            chunks_of.setdefault(r["history"], set()).add(r["chunk"])
            total += r["n"]
    split = sorted(h for h, cs in chunks_of.items() if len(cs) > 1)
    n = len(chunks_of)
    chunks = len({c for cs in chunks_of.values() for c in cs})
    return split, ChunkPaths(engine, n, total, n - len(split), len(split), chunks)
