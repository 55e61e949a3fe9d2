"""Content-addressed copies of file versions, the saved content that undo restores from.

Each version is stored once under its SHA-256 (`blobs/ab/abcd...`, 0600 in 0700 folders) with the one atomic write,
so a crash of the server leaves the whole copy or none. They are not fsynced one by one (that made the first walk
of 5,000 files take seconds): one a power cut damaged is caught by its hash when undo reads it, never restored.
Copies no manifest or record names any more are deleted by `prune`.
The store stays within a byte budget: a version that does not fit (after `make_room` has dropped what it may) is
not saved, and whoever asked records that it cannot be undone.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from hermitcrab.util.files import atomic_write_bytes

MAX_FILE_BYTES = 64 * 1024 * 1024  # read whole into memory to hash and copy; bigger files cannot be undone
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class DamagedCopy(OSError):
    """A saved copy no longer holds the content its name is the hash of."""


class Blobs:
    """The saved versions in `folder`, at most `budget` bytes of them."""

    def __init__(self, folder: Path, budget: int) -> None:
        self.folder = folder
        self.budget = budget
        self.make_room: Callable[[int], None] = lambda _needed: None  # set by the owner: drop old records
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._sizes: dict[str, int] = {}
        for shard in folder.iterdir():
            for blob in shard.iterdir():
                if blob.name.startswith("."):  # a temporary file a crash left behind
                    blob.unlink()
                else:
                    self._sizes[blob.name] = blob.stat().st_size
        self.total = sum(self._sizes.values())

    def save(self, dir_fd: int, name: str) -> tuple[os.stat_result, str | None] | None:
        """Copy the regular file `name` in `dir_fd` (never through a symlink): (its stat as read, its digest, or
        None when it is too big to save), or None when it cannot be read or is no longer a regular file."""
        try:
            fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)  # before reading: a write during the read changes ctime, so the next walk reads again
            if not stat.S_ISREG(info.st_mode):
                return None
            if info.st_size > MAX_FILE_BYTES:
                return info, None
            data = handle.read(MAX_FILE_BYTES + 1)
        digest = hashlib.sha256(data).hexdigest()
        if digest in self._sizes:
            return info, digest
        if len(data) > MAX_FILE_BYTES or not self._fits(len(data)):
            return info, None
        shard = self.folder / digest[:2]
        shard.mkdir(mode=0o700, exist_ok=True)
        atomic_write_bytes(shard / digest, data, durable=False)  # thousands at a first walk; `read` checks them
        self._sizes[digest] = len(data)
        self.total += len(data)
        return info, digest

    def read(self, digest: str) -> bytes:
        """The saved content; DamagedCopy when it is not what was saved (copies are not fsynced: a power cut)."""
        data = (self.folder / digest[:2] / digest).read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise DamagedCopy(errno.EIO, "its saved copy is damaged (lost in a crash of the machine?)")
        return data

    def prune(self, referenced: Iterable[str]) -> None:
        """Delete every copy not in `referenced`."""
        keep = set(referenced)
        for digest in [d for d in self._sizes if d not in keep]:
            (self.folder / digest[:2] / digest).unlink(missing_ok=True)
            self.total -= self._sizes.pop(digest)

    def _fits(self, size: int) -> bool:
        if self.total + size > self.budget:
            self.make_room(size)
        return self.total + size <= self.budget
