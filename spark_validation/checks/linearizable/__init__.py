"""Linearizability of client histories (Knossos's meaning, Porcupine's search).

* :mod:`.models` -- the sequential specifications (Porcupine's ``Model``; Knossos's models);
* :mod:`.search` -- the search of one partition (Wing & Gong, Lowe; Porcupine's ``checker.go``):
  the reference the compiled search follows;
* :mod:`.register` -- the register check of a whole history in the compiled search's form, and
  :mod:`.fast`, which exports the same function compiled (``_linkernel.c``) where it is built;
* :mod:`.evidence` -- what a failed check shows;
* :mod:`.info` -- :class:`LinInfo`, what the check of a history records besides its verdict;
* :mod:`.check` -- :func:`check_history`, one history to a :class:`LinResult`.

Nothing here imports the audit above it, only :mod:`spark_validation.ingest` (an import-linter
contract in pyproject.toml).
"""

from spark_validation.checks.linearizable.check import LinInfo, LinResult, Undecided, check_history, default_nil_reads

__all__ = ["LinInfo", "LinResult", "Undecided", "check_history", "default_nil_reads"]
