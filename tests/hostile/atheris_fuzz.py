"""Coverage-guided fuzzing of the EDN/history reader and the trace reader with atheris.

Not part of pytest (atheris is not a project dependency). Run, e.g.:

    pip install --target /tmp/atheris atheris
    PYTHONPATH=/tmp/atheris:. .venv/bin/python tests/hostile/atheris_fuzz.py edn -max_total_time=90
    PYTHONPATH=/tmp/atheris:. .venv/bin/python tests/hostile/atheris_fuzz.py trace -max_total_time=90

The property is the one of tests/hostile/test_fuzz.py: the reader raises only its own error type
(naming the file), never anything else.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports():
    from spark_validation.ingest.edn import EdnError
    from tests.spark_validation.readers import loads_all
    from spark_validation.ingest.history import HistoryFormatError, parse_history_text
    from traces.schema import parse_trace


def fuzz_edn(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        list(loads_all(text, "x.edn"))
    except EdnError as exc:
        assert str(exc).startswith("x.edn")
    for fmt in ("edn", "ndjson", "json", None):
        try:
            ops, bad, _ = parse_history_text(text, "x.h", fmt)
        except HistoryFormatError as exc:
            assert str(exc).startswith("x.h")
        else:
            assert all(m.line >= 1 for m in bad)


def fuzz_trace(data: bytes) -> None:
    tr = parse_trace(data, "t.ndjson")
    if tr.problem is not None:
        assert tr.problem.message.startswith("t.ndjson")


if __name__ == "__main__":
    target = {"edn": fuzz_edn, "trace": fuzz_trace}[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()
