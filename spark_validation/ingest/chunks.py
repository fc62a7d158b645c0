"""Arrow record batches regrouped into tables that each hold whole histories.

A Spark partition streams its rows as record batches; the checks that run per partition want
every history's rows in one table. ``history_chunks`` gathers batches until it holds at least
``chunk_rows`` rows, cuts before the first row of the last history it holds (rows of one history
are contiguous in a partition), and carries that history over to the next chunk.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


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
