"""history_chunks: whole histories per table, every row once, in order."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from spark_validation.ingest.chunks import history_chunks
from tests import examples


def _batches(sizes: list[int], cuts: list[int]) -> list[pa.RecordBatch]:
    """Histories h0, h1, ... of ``sizes`` rows each, as batches cut at ``cuts`` (empty ones too)."""
    hist = [f"h{i}" for i, n in enumerate(sizes) for _ in range(n)]
    t = pa.table({"history": hist, "i": list(range(len(hist)))})
    bounds = [0, *sorted(min(c, len(hist)) for c in cuts), len(hist)]
    return [pa.record_batch([t.column("history").combine_chunks()[a:b], t.column("i").combine_chunks()[a:b]],
                            names=["history", "i"]) for a, b in zip(bounds, bounds[1:])]


@examples.PURE()
@given(st.lists(st.integers(1, 6), min_size=1, max_size=8), st.lists(st.integers(0, 48), max_size=6),
       st.integers(1, 10))
def test_chunks_hold_whole_histories(sizes: list[int], cuts: list[int], chunk_rows: int) -> None:
    tables = list(history_chunks(_batches(sizes, cuts), chunk_rows))
    rows = [r for t in tables for r in t.column("i").to_pylist()]
    assert rows == list(range(sum(sizes)))
    seen: set[str] = set()
    for t in tables:
        hs = set(t.column("history").to_pylist())
        assert not hs & seen, "a history split across two chunks"
        seen |= hs
    if chunk_rows > sum(sizes):
        assert len(tables) == 1
