"""Which compiled extensions the audit uses: the one place ``KRAFT_COMPILED`` is read.

setup.py builds two optional extensions (``spark_validation/_rowkernel.c``, the per-op loops, and
``spark_validation/_linkernel.c``, the register search). Each sits behind a module exporting
exactly the functions of the Python reference it speeds up, with the same signatures; the module
that offers the check picks the one or the other once, at import, with :func:`extension`.
``KRAFT_COMPILED=off`` (or ``0``, ``no``) makes every pick the reference.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["EXTENSIONS", "built", "compiled_off", "extension"]

EXTENSIONS = ("_rowkernel", "_linkernel")


def compiled_off() -> bool:
    """Whether ``KRAFT_COMPILED`` switches the fast paths off (read when a module picks)."""
    return os.environ.get("KRAFT_COMPILED", "").lower() in ("off", "0", "no")


def built(name: str) -> ModuleType | None:
    """The compiled extension ``spark_validation.<name>`` (one of :data:`EXTENSIONS`) where the
    install built it, else None, whatever ``KRAFT_COMPILED`` says (the differential tests hold
    it to its reference either way)."""
    if name not in EXTENSIONS:
        raise ValueError(f"unknown compiled extension {name!r}; known: {', '.join(EXTENSIONS)}")
    try:
        return importlib.import_module(f"spark_validation.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"spark_validation.{name}":
            raise
        return None


def extension(name: str) -> ModuleType | None:
    """The compiled extension ``name`` in use: :func:`built`'s, or None where
    :func:`compiled_off`. A module offering a check picks with it once, at import."""
    return None if compiled_off() else built(name)
