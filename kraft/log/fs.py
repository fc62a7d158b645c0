"""File systems for the log: real files (:class:`OsFS`) and a crashable in-memory one
(:class:`MemoryFS`) that models what a power loss keeps.

Paths are ``/``-joined strings. The model of durability (both implementations honour it; only
MemoryFS can demonstrate it):

- ``append``/``write_bytes``/``truncate`` change the file's *volatile* content (the page cache);
- ``fsync(path)`` makes the file's current content durable, including its directory entry;
- ``truncate_durably`` changes the size durably without syncing earlier unsynced bytes;
- ``rename`` and ``remove`` are durable when they return (journaled metadata; ``write_atomically``
  still fsyncs the directory, as one must on a real file system);
- ``MemoryFS.crash()`` replaces every file by its durable content, optionally keeping a prefix of
  the not-yet-synced bytes (a torn write); files never fsynced disappear.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Protocol

__all__ = ["FileSystem", "OsFS", "MemoryFS", "write_atomically", "join"]


def join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}" if directory else name


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


class FileSystem(Protocol):
    def makedirs(self, directory: str) -> None: ...
    def listdir(self, directory: str) -> list[str]: ...
    def exists(self, path: str) -> bool: ...
    def size(self, path: str) -> int: ...
    def read_bytes(self, path: str) -> bytes: ...
    def read_at(self, path: str, position: int, size: int) -> bytes: ...
    def write_bytes(self, path: str, data: bytes) -> None: ...
    def append(self, path: str, data: bytes) -> None: ...
    def truncate(self, path: str, size: int) -> None: ...
    def truncate_durably(self, path: str, size: int) -> None: ...
    def fsync(self, path: str) -> None: ...
    def fsync_dir(self, directory: str) -> None: ...
    def remove(self, path: str) -> None: ...
    def rename(self, src: str, dst: str) -> None: ...


class OsFS:
    """The real file system. ``fsync`` is ``os.fsync`` on the file (and the directory for
    ``fsync_dir``)."""

    def makedirs(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)

    def listdir(self, directory: str) -> list[str]:
        try:
            return sorted(os.listdir(directory))
        except FileNotFoundError:
            return []

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def read_bytes(self, path: str) -> bytes:
        return Path(path).read_bytes()

    def read_at(self, path: str, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position`` (fewer at the end of the file)."""
        with open(path, "rb") as f:
            f.seek(position)
            return f.read(size)

    def write_bytes(self, path: str, data: bytes) -> None:
        with open(path, "wb") as f:
            f.write(data)

    def append(self, path: str, data: bytes) -> None:
        with open(path, "ab") as f:
            f.write(data)

    def truncate(self, path: str, size: int) -> None:
        os.truncate(path, size)

    def truncate_durably(self, path: str, size: int) -> None:
        """Truncate and make the truncation durable (on a real disk this also syncs the
        bytes before ``size``: more durable than asked, never less)."""
        os.truncate(path, size)
        self.fsync(path)

    def fsync(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def fsync_dir(self, directory: str) -> None:
        fd = os.open(directory or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def remove(self, path: str) -> None:
        os.remove(path)

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)


class _MemFile:
    __slots__ = ("data", "durable", "synced", "dirty_seq")

    def __init__(self) -> None:
        self.data = bytearray()  # volatile content
        self.durable: bytearray | None = None  # None: the file does not exist on "disk" yet
        self.synced = 0  # data[:synced] == durable[:synced]
        self.dirty_seq: int | None = None  # when it got its oldest unsynced byte (writeback order)


class MemoryFS:
    """In-memory files with a volatile/durable split, for the simulator and crash tests.

    ``fsync`` costs only the bytes written since the last one, so a simulator can flush after
    every append."""

    def __init__(self) -> None:
        self._files: dict[str, _MemFile] = {}
        self._dirs: set[str] = set()
        self.fsyncs = 0
        self._seq = 0

    def _touch(self, f: _MemFile) -> None:
        if len(f.data) > f.synced:
            if f.dirty_seq is None:
                self._seq += 1
                f.dirty_seq = self._seq
        else:
            f.dirty_seq = None

    # -- FileSystem ------------------------------------------------------------------------
    def makedirs(self, directory: str) -> None:
        d = directory.rstrip("/")
        while d:
            self._dirs.add(d)
            d = _parent(d)

    def listdir(self, directory: str) -> list[str]:
        d = directory.rstrip("/")
        return sorted(p.rsplit("/", 1)[-1] for p in self._files if _parent(p) == d)

    def exists(self, path: str) -> bool:
        return path in self._files or path.rstrip("/") in self._dirs

    def size(self, path: str) -> int:
        return len(self._get(path).data)

    def _get(self, path: str) -> _MemFile:
        try:
            return self._files[path]
        except KeyError:
            raise FileNotFoundError(path) from None

    def read_bytes(self, path: str) -> bytes:
        return bytes(self._get(path).data)

    def read_at(self, path: str, position: int, size: int) -> bytes:
        return bytes(self._get(path).data[position : position + size])

    def write_bytes(self, path: str, data: bytes) -> None:
        f = self._files.get(path)
        if f is None:
            f = self._files[path] = _MemFile()
        f.data = bytearray(data)
        f.synced = 0
        self._touch(f)

    def append(self, path: str, data: bytes) -> None:
        f = self._files.get(path)
        if f is None:
            f = self._files[path] = _MemFile()
        f.data += data
        self._touch(f)

    def truncate(self, path: str, size: int) -> None:
        f = self._get(path)
        del f.data[size:]
        f.synced = min(f.synced, size)
        self._touch(f)

    def truncate_durably(self, path: str, size: int) -> None:
        """Truncate, durably, without syncing the unsynced bytes before ``size`` (a journaled
        size change): after a crash the file is at most ``size`` long."""
        f = self._get(path)
        self.fsyncs += 1
        del f.data[size:]
        f.synced = min(f.synced, size)
        if f.durable is not None:
            del f.durable[size:]
        self._touch(f)

    def fsync(self, path: str) -> None:
        f = self._get(path)
        self.fsyncs += 1
        if f.durable is None:
            f.durable = bytearray(f.data)
        else:
            del f.durable[f.synced :]
            f.durable += f.data[f.synced :]
        f.synced = len(f.data)
        f.dirty_seq = None

    def fsync_dir(self, directory: str) -> None:
        self.fsyncs += 1

    def remove(self, path: str) -> None:
        self._get(path)
        del self._files[path]

    def rename(self, src: str, dst: str) -> None:
        f = self._get(src)
        del self._files[src]
        self._files[dst] = f

    # -- faults ----------------------------------------------------------------------------
    def unsynced_bytes(self, path: str) -> int:
        """How many bytes of the file's volatile content are not durable yet."""
        f = self._get(path)
        return len(f.data) - f.synced

    def durable_bytes(self, path: str) -> bytes | None:
        f = self._files.get(path)
        return None if f is None or f.durable is None else bytes(f.durable)

    def crash(self, rng: random.Random | None = None, keep_unsynced: dict[str, int] | None = None) -> dict[str, int]:
        """Power loss: every file reverts to its durable content; never-synced files vanish.

        A torn write: ``keep_unsynced[path] = k`` keeps the first ``k`` unsynced bytes of that
        file, as if the disk had written part of the pending data. With ``rng``, a random number
        of pending bytes reaches the disk in writeback order: files in the order they became
        dirty, each file's pending bytes in order (so older pending data always lands before
        newer, e.g. a segment's tail before the next segment's head; reordering across that is
        not modelled). Returns ``{path: k}`` of what was kept.
        """
        kept: dict[str, int] = {}
        if rng is not None and keep_unsynced is None:
            dirty = sorted(
                ((f.dirty_seq or 0, p, len(f.data) - f.synced) for p, f in self._files.items() if len(f.data) > f.synced),
            )
            budget = rng.randint(0, sum(n for _, _, n in dirty))
            keep_unsynced = {}
            for _, p, n in dirty:
                keep_unsynced[p] = min(n, budget)
                budget -= keep_unsynced[p]
            rng = None
        for path in list(self._files):
            f = self._files[path]
            pending = len(f.data) - f.synced
            k = 0
            if keep_unsynced and path in keep_unsynced:
                k = max(0, min(keep_unsynced[path], pending))
            if f.durable is None and k == 0:
                del self._files[path]
                continue
            base = f.durable if f.durable is not None else bytearray()
            torn = f.data[f.synced : f.synced + k]
            new = bytearray(base[: f.synced]) + torn + base[f.synced + k :]
            f.data = new
            f.durable = bytearray(new)
            f.synced = len(new)
            f.dirty_seq = None
            if k:
                kept[path] = k
        return kept

    def lose_disk(self, directory: str) -> None:
        """The disk holding ``directory`` is replaced: everything under it is gone."""
        d = directory.rstrip("/")
        for path in [p for p in self._files if p == d or p.startswith(d + "/")]:
            del self._files[path]
        self._dirs = {x for x in self._dirs if not (x == d or x.startswith(d + "/"))}

    def corrupt(self, path: str, position: int, xor: int = 0xFF) -> None:
        """Flip bits of one byte, durably (bit rot; for tests)."""
        f = self._get(path)
        f.data[position] ^= xor
        if f.durable is not None and position < len(f.durable):
            f.durable[position] ^= xor


def write_atomically(fs: FileSystem, path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves either the old or the new content:
    write a temporary file, fsync it, rename it over ``path``, fsync the directory (how Kafka
    writes its ``quorum-state`` file, and what every careful writer does)."""
    tmp = path + ".tmp"
    fs.write_bytes(tmp, data)
    fs.fsync(tmp)
    fs.rename(tmp, path)
    fs.fsync_dir(_parent(path))
