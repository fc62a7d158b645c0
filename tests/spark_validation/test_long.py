"""Long single-key histories: the memo holds the linearized set compressed (a count of the
linearized prefix plus a bitset of the window of open ops), so its entries are as small as the
concurrency, not as long as the history.

The fast tests squeeze the memory budget (``CACHE_BYTES``) to a size where an n-bit set per memo
entry would give up (``unknown``, "cache limit ... reached") and show the verdict is still reached;
the slow ones decide 1,000,000-op histories (sequential, and 10 concurrent clients).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from spark_validation.checks.linearizable import search
from spark_validation.ingest.history import Op
from spark_validation.linearizability import check_history

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from linearizability import sequential, simulate  # noqa: E402  (bench/linearizability.py)


def test_long_sequential_history_fits_a_small_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    ops = sequential(random.Random(3), 30_000)
    # 16 MiB: ~60,000 entries of ~300 bytes; entries holding a 30,000-bit set (3.75 kB) would
    # allow ~3,700 and give up long before the 30,000 lifts the search needs
    monkeypatch.setattr(search, "CACHE_BYTES", 16 << 20)
    r = check_history(ops, "register", max_cache=10**9)
    assert r.valid is True, r.info
    assert r.info.calls == 30_000


def test_long_history_violation_found_with_its_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    ops = sequential(random.Random(4), 30_000)
    # the last read returns a value that was overwritten: stale
    last_read = max(i for i, o in enumerate(ops) if o.type == "ok" and o.f == "read")
    cur = ops[last_read].value
    wrong = next(v for v in range(5) if v != cur)
    ops[last_read] = Op(ops[last_read].index, 0, "ok", "read", None, wrong)
    monkeypatch.setattr(search, "CACHE_BYTES", 16 << 20)
    r = check_history(ops, "register", max_cache=10**9)
    assert r.valid is False
    ev = r.anomalies[0].to_json()["evidence"]
    assert ev["stuck_op"]["index"] == last_read - 1  # the invocation of the stale read
    assert ev["prefix_length"] >= (last_read - 1) // 2 - 1  # everything before it was linearized


def test_concurrent_history_with_info_ops_fits_a_small_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    ops = simulate(random.Random(5), 10, 20_000, "register")
    assert any(o.type == "info" for o in ops)
    monkeypatch.setattr(search, "CACHE_BYTES", 64 << 20)
    r = check_history(ops, "register", max_cache=10**9)
    assert r.valid is True, r.info


@pytest.mark.slow
@pytest.mark.parametrize("clients", [1, 10])
def test_million_op_history_decided(clients: int) -> None:
    rng = random.Random(6)
    ops = sequential(rng, 1_000_000) if clients == 1 else simulate(rng, clients, 1_000_000, "register")
    r = check_history(ops, "register")
    assert r.valid is True, r.info
