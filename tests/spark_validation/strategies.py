"""Hypothesis strategies: random small Kafka histories in both accepted encodings."""

from __future__ import annotations

from hypothesis import strategies as st

from spark_validation.ingest.records import OpRow, op_row

KEYS = ["x", "y"]
VALUES = st.integers(0, 6)
OFFSETS = st.one_of(st.none(), st.integers(0, 5))

# built once: a strategy built inside a draw is validated again on every draw, which costs far
# more than the draw itself
_LENGTH = st.integers(1, 14)
_PROCESS = st.integers(0, 2)
_TYPE = st.sampled_from(["ok", "ok", "ok", "info", "fail", "invoke"])
_FORM = st.sampled_from(["send", "poll", "txn", "assign"])
_KEY = st.sampled_from(KEYS)
_BOOL = st.booleans()
_POLL_PAIRS = st.lists(st.tuples(st.integers(0, 5), VALUES), max_size=4)
_TXN_LENGTH = st.integers(1, 3)
_TXN_POLLED = st.dictionaries(_KEY, st.lists(st.tuples(st.integers(0, 5), VALUES).map(list), max_size=3), max_size=2)
_TXN_F = st.sampled_from(["txn", "send", "poll"])
_ASSIGN_F = st.sampled_from(["assign", "subscribe"])
_ASSIGN_KEYS = st.lists(_KEY, max_size=2, unique=True)


def _txn_mops(draw) -> list:
    mops = []
    for _ in range(draw(_TXN_LENGTH)):
        if draw(_BOOL):
            mops.append(["send", draw(_KEY), [draw(OFFSETS), draw(VALUES)]])
        else:
            mops.append(["poll", draw(_TXN_POLLED)])
    return mops


@st.composite
def kafka_history(draw, hid: str) -> list[OpRow]:
    """Completions (and some invocations) with random offsets/values: most are anomalous."""
    rows = []
    n = draw(_LENGTH)
    for i in range(n):
        p = draw(_PROCESS)
        typ = draw(_TYPE)
        form = draw(_FORM)
        k = draw(_KEY)
        if form == "send":
            v = draw(VALUES)
            off = draw(OFFSETS)
            value = [off, v] if draw(_BOOL) else v
            row = dict(f="send", key=k, value=value)
        elif form == "poll":
            row = dict(f="poll", key=k, value=[list(x) for x in draw(_POLL_PAIRS)])
        elif form == "txn":
            mops = _txn_mops(draw)
            row = dict(f=draw(_TXN_F), key=None, value=mops)
        else:
            row = dict(f=draw(_ASSIGN_F), key=None, value=draw(_ASSIGN_KEYS))
        rows.append(op_row(hid, i + 1, index=i, process=p, type=typ, **row))
    return rows


@st.composite
def kafka_corpus(draw, min_size: int = 1, max_size: int = 30) -> list[OpRow]:
    n = draw(st.integers(min_size, max_size))
    out = []
    for j in range(n):
        out.extend(draw(kafka_history(f"h{j}")))
    return out
