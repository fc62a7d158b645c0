"""What only the tests take from the readers: every EDN form of a text (the fuzz targets and the
EDN reader's tests) and a :class:`History` of ops built in memory."""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from spark_validation.ingest.edn import Reader
from spark_validation.ingest.history import History, Op, pairing_of, structure_errors


def loads_all(text: str, source: str = "<string>") -> Iterator[Any]:
    """Parse every top-level EDN value in ``text`` in order."""
    reader = Reader(text, source)
    while not reader.at_end():
        yield reader.read()


def history_from_ops(ops: Iterable[Op], *, id: str = "<ops>", model: str | None = None, initial: Any = None) -> History:
    """Wrap ops built in memory as a History, with its structure checked as the readers check it."""
    ops = list(ops)
    pairing = pairing_of(ops)
    return History(id=id, ops=ops, model=model, structure_errors=structure_errors(ops, pairing), initial=initial,
                   pairing=pairing)
