"""Hypothesis strategies: random small Kafka histories in both accepted encodings."""

from __future__ import annotations

from hypothesis import strategies as st

from spark_validation.ingest.records import op_row

KEYS = ["x", "y"]
VALUES = st.integers(0, 6)
OFFSETS = st.one_of(st.none(), st.integers(0, 5))


@st.composite
def kafka_history(draw, hid: str) -> list[dict]:
    """Completions (and some invocations) with random offsets/values: most are anomalous."""
    rows = []
    n = draw(st.integers(1, 14))
    for i in range(n):
        p = draw(st.integers(0, 2))
        typ = draw(st.sampled_from(["ok", "ok", "ok", "info", "fail", "invoke"]))
        form = draw(st.sampled_from(["send", "poll", "txn", "assign"]))
        k = draw(st.sampled_from(KEYS))
        if form == "send":
            v = draw(VALUES)
            off = draw(OFFSETS)
            value = [off, v] if draw(st.booleans()) else v
            row = dict(f="send", key=k, value=value)
        elif form == "poll":
            pairs = draw(st.lists(st.tuples(st.integers(0, 5), VALUES), max_size=4))
            row = dict(f="poll", key=k, value=[list(x) for x in pairs])
        elif form == "txn":
            mops = []
            for _ in range(draw(st.integers(1, 3))):
                if draw(st.booleans()):
                    mops.append(["send", draw(st.sampled_from(KEYS)), [draw(OFFSETS), draw(VALUES)]])
                else:
                    polled = draw(st.dictionaries(st.sampled_from(KEYS),
                                                  st.lists(st.tuples(st.integers(0, 5), VALUES).map(list), max_size=3),
                                                  max_size=2))
                    mops.append(["poll", polled])
            row = dict(f=draw(st.sampled_from(["txn", "send", "poll"])), key=None, value=mops)
        else:
            row = dict(f=draw(st.sampled_from(["assign", "subscribe"])), key=None,
                       value=draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True)))
        rows.append(op_row(hid, i + 1, index=i, process=p, type=typ, **row))
    return rows


@st.composite
def kafka_corpus(draw, min_size: int = 1, max_size: int = 30) -> list[dict]:
    n = draw(st.integers(min_size, max_size))
    out = []
    for j in range(n):
        out.extend(draw(kafka_history(f"h{j}")))
    return out
